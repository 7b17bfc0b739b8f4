/*
 * Arithmetic of the convolutions (gaussian_blur, laplacian, filter) shared by the CPU
 * (src/ops/filters.c) and the CUDA kernels (src/cuda/filter.cu): the border rule and the
 * multiply-add of one tap. C11 and CUDA C++ (STK_HD).
 *
 * Parity: the CPU computes each output as float32 sums, tap after tap in kernel order,
 * starting from 0 and skipping zero weights (horizontal pass into a float32 temporary,
 * then vertical; laplacian adds its second pair's vertical taps onto the first pair's
 * sums). The GPU kernels follow the same order with the same products and sums, rounded
 * separately (stk_conv_tap: no fused multiply-add), so the float32 results are
 * bit-identical; only the final conversion of float32 to uint8 may differ by 1 on the
 * CPU's scalar tail (it rounds x.5 - 2^-25 differently from its vector body).
 *
 * The kernels' per-pixel bodies are here too (stk_conv_hpass_px, stk_conv_out_px),
 * so tests/c/test_filter_emul.c runs them on the host against the CPU convolutions.
 */
#ifndef STOKER_CUDA_FILTER_COMMON_H
#define STOKER_CUDA_FILTER_COMMON_H

#include <stdint.h>

#include "gpu_common.h"
#include "stoker/stoker.h" /* stk_dtype */

#ifdef __CUDACC__
#include <cuda_fp16.h>
#else
uint16_t stk__f32_to_f16(float f);
float stk__f16_to_f32(uint16_t h);
#endif

/* i mod n in [0, n). */
STK_HD int64_t stk_conv_wrap(int64_t i, int64_t n) {
  int64_t m = i % n;
  return m < 0 ? m + n : m;
}

/* Where coordinate i of an axis of n >= 1 pixels reads from: an index in [0, n), or -1
 * for the fill value. border: 0 reflect_101, 1 reflect_1001, 2 wrap, 3 clamp, 4 constant
 * (stk__border's values). Reflections and wraps repeat as often as needed. */
STK_HD int64_t stk_conv_border(int64_t i, int64_t n, int border) {
  if (i >= 0 && i < n) return i;
  switch (border) {
    case 4:
      return -1;
    case 3:
      return i < 0 ? 0 : n - 1;
    case 2:
      return stk_conv_wrap(i, n);
    case 1: { /* period 2n: 0..n-1, n-1..0 */
      int64_t m = stk_conv_wrap(i, 2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    default: { /* reflect_101, period 2n - 2: 0..n-1, n-2..1 */
      if (n == 1) return 0;
      int64_t m = stk_conv_wrap(i, 2 * n - 2);
      return m < n ? m : 2 * n - 2 - m;
    }
  }
}

/* acc + w * x with both steps rounded to float32. */
STK_HD float stk_conv_tap(float acc, float w, float x) { return STK_FADD(acc, STK_FMUL(w, x)); }

/* One sample of a batched convolution as the kernels see it (stk_gpu_conv_sample's
 * fields, offsets into the batch's weight array and float32 temporary, work counts). */
typedef struct {
  const void *src;
  void *dst;
  int h, w, c, out_h, out_w, kh, kw, ay, ax, border, npairs;
  float fill;
  int64_t w_off;   /* first weight: npairs ? ky (kh), kx (kw) per pair : kh x kw */
  int64_t tmp_off; /* first float of the temporary (pair, padded row, x, channel) */
  int64_t h_count; /* temporary pixels: npairs * (out_h + kh - 1) * out_w (< 2^31) */
  int64_t v_count; /* output pixels: out_h * out_w (< 2^31) */
} stk_conv_job;

/* Element i of an input of type dt as float32 (stk__convert's values). */
STK_HD float stk_conv_load(const void *p, int dt, int64_t i) {
  switch (dt) {
    case STK_DTYPE_UINT8:
      return (float)((const uint8_t *)p)[i];
    case STK_DTYPE_INT8:
      return (float)((const int8_t *)p)[i];
    case STK_DTYPE_UINT16:
      return (float)((const uint16_t *)p)[i];
    case STK_DTYPE_INT16:
      return (float)((const int16_t *)p)[i];
    case STK_DTYPE_INT32:
      return (float)((const int32_t *)p)[i];
#ifdef __CUDACC__
    case STK_DTYPE_FLOAT16:
      return __half2float(((const __half *)p)[i]);
#else
    case STK_DTYPE_FLOAT16:
      return stk__f16_to_f32(((const uint16_t *)p)[i]);
#endif
    default:
      return ((const float *)p)[i];
  }
}

/* Rounded half away from zero and saturated to [lo, hi] (NaN -> 0), as stk__store_double. */
STK_HD double stk_conv_round_sat(float v, double lo, double hi) {
  double r = v != v ? 0.0 : round((double)v);
  return r <= lo ? lo : r >= hi ? hi : r;
}

/* Element i of dst = v as stk__convert from float32 writes it (uint8: the CPU's vector
 * body, + 0.5 and truncation). */
STK_HD void stk_conv_store(void *dst, int dt, int64_t i, float v) {
  switch (dt) {
    case STK_DTYPE_UINT8: {
      float f = v + 0.5f;
      f = f > 0.0f ? f : 0.0f;
      f = f < 255.0f ? f : 255.0f;
      ((uint8_t *)dst)[i] = (uint8_t)(int)f;
      return;
    }
    case STK_DTYPE_INT8:
      ((int8_t *)dst)[i] = (int8_t)stk_conv_round_sat(v, -128.0, 127.0);
      return;
    case STK_DTYPE_UINT16:
      ((uint16_t *)dst)[i] = (uint16_t)stk_conv_round_sat(v, 0.0, 65535.0);
      return;
    case STK_DTYPE_INT16:
      ((int16_t *)dst)[i] = (int16_t)stk_conv_round_sat(v, -32768.0, 32767.0);
      return;
    case STK_DTYPE_INT32:
      ((int32_t *)dst)[i] = (int32_t)stk_conv_round_sat(v, -2147483648.0, 2147483647.0);
      return;
    case STK_DTYPE_INT64: {
      double r = v != v ? 0.0 : round((double)v);
      ((long long *)dst)[i] = r <= -9223372036854775808.0  ? (-9223372036854775807ll - 1)
                              : r >= 9223372036854775807.0 ? 9223372036854775807ll
                                                           : (long long)r;
      return;
    }
#ifdef __CUDACC__
    case STK_DTYPE_FLOAT16:
      ((__half *)dst)[i] = __float2half_rn(v);
      return;
#else
    case STK_DTYPE_FLOAT16:
      ((uint16_t *)dst)[i] = stk__f32_to_f16(v);
      return;
#endif
    case STK_DTYPE_FLOAT64:
      ((double *)dst)[i] = (double)v;
      return;
    default:
      ((float *)dst)[i] = v;
      return;
  }
}

/* Input value at padded position (row sy, column sx) after the border rule (-1: fill). */
STK_HD float stk_conv_value(const stk_conv_job *d, int dt, int64_t sy, int64_t sx, int64_t ch) {
  if (sy < 0 || sx < 0) return d->fill;
  return stk_conv_load(d->src, dt, (sy * d->w + sx) * d->c + ch);
}

/* Temporary pixel px (pair, padded row r, column x), every channel: sum_j kx[j] *
 * in(border(r - ay), border(x + j - ax)), taps in j order, zero weights skipped: the
 * CPU's horizontal pass over its padded image. One thread per pixel, so the index
 * arithmetic (32-bit: counts < 2^31) is paid once for all channels. */
STK_HD void stk_conv_hpass_px(const stk_conv_job *d, int dt, const float *W, float *tmp,
                              int64_t px) {
  uint32_t ow = (uint32_t)d->out_w, ph = (uint32_t)(d->out_h + d->kh - 1);
  uint32_t pr = (uint32_t)px / ow, x = (uint32_t)px - pr * ow;
  uint32_t pair = pr / ph, r = pr - pair * ph;
  const float *kx = W + d->w_off + (int64_t)pair * (d->kh + d->kw) + d->kh;
  int64_t sy = stk_conv_border((int64_t)r - d->ay, d->h, d->border);
  float *out = tmp + d->tmp_off + px * d->c;
  for (int ch = 0; ch < d->c; ch++) {
    float acc = 0.0f;
    for (int j = 0; j < d->kw; j++) {
      float w = kx[j];
      if (w == 0.0f) continue;
      int64_t sx = stk_conv_border((int64_t)x + j - d->ax, d->w, d->border);
      acc = stk_conv_tap(acc, w, stk_conv_value(d, dt, sy, sx, ch));
    }
    out[ch] = acc;
  }
}

/* Output pixel px (y, x), every channel: the vertical taps over each pair's temporary
 * (pair 2 continues pair 1's sum, as the CPU's accumulate), or every tap of a full
 * kernel in row-major order; then the conversion to odt. */
STK_HD void stk_conv_out_px(const stk_conv_job *d, int dt, const float *W, const float *tmp,
                            int64_t px, int odt) {
  uint32_t ow = (uint32_t)d->out_w;
  uint32_t y = (uint32_t)px / ow, x = (uint32_t)px - y * ow;
  int64_t C = d->c, rowlen = (int64_t)ow * C;
  for (int ch = 0; ch < d->c; ch++) {
    float acc = 0.0f;
    if (d->npairs == 0) {
      const float *k = W + d->w_off;
      for (int i = 0; i < d->kh; i++) {
        int64_t sy = stk_conv_border((int64_t)y + i - d->ay, d->h, d->border);
        for (int j = 0; j < d->kw; j++) {
          float w = k[(int64_t)i * d->kw + j];
          if (w == 0.0f) continue;
          int64_t sx = stk_conv_border((int64_t)x + j - d->ax, d->w, d->border);
          acc = stk_conv_tap(acc, w, stk_conv_value(d, dt, sy, sx, ch));
        }
      }
    } else {
      int64_t ph = (int64_t)d->out_h + d->kh - 1;
      for (int p = 0; p < d->npairs; p++) {
        const float *ky = W + d->w_off + (int64_t)p * (d->kh + d->kw);
        const float *t = tmp + d->tmp_off + (int64_t)p * ph * rowlen + (int64_t)x * C + ch;
        for (int i = 0; i < d->kh; i++) {
          float w = ky[i];
          if (w != 0.0f) acc = stk_conv_tap(acc, w, t[((int64_t)y + i) * rowlen]);
        }
      }
    }
    stk_conv_store(d->dst, odt, px * C + ch, acc);
  }
}

#endif /* STOKER_CUDA_FILTER_COMMON_H */
