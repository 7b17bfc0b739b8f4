/*
 * The program interpreter of the fused automatic augmentation (api_autoaug.h): what one
 * thread of the sample's block does, in the common subset of C11 and CUDA C++. The
 * kernel (autoaug.cu) runs it with the block's threads (tid = threadIdx.x, nt =
 * blockDim.x, shared memory for `sh`); the C test tests/c/test_autoaug_interp.c runs the
 * very same code on the CPU with one thread (tid 0, nt 1: the barriers vanish, the
 * atomics become plain additions) and compares it with the CPU operator. Every loop is
 * strided by nt, so the one-thread run does all the work of the block. Images and masks
 * hold fewer than 2^31 elements (the entry point checks), so indices divide in 32 bits.
 */
#ifndef STOKER_CUDA_AUTOAUG_INTERP_H
#define STOKER_CUDA_AUTOAUG_INTERP_H

#include "../shared/autoaug_pixel.h"
#include "api_autoaug.h"

#if defined(__CUDA_ARCH__)
#define STK_AA_SYNC()        __syncthreads()
#define STK_AA_ADD_U32(p, v) atomicAdd((p), (v))
#define STK_AA_ADD_U64(p, v) atomicAdd((p), (v))
#else
#define STK_AA_SYNC()        ((void)0)
#define STK_AA_ADD_U32(p, v) (*(p) += (v))
#define STK_AA_ADD_U64(p, v) (*(p) += (v))
#endif

#define STK_AA_C STK_GPU_AA_MAX_CHANNELS

/* What the block shares: the reductions and the tables of the current step. */
typedef struct {
  unsigned int hist[STK_AA_C * 256];
  uint64_t hist64[STK_AA_C * 256];
  unsigned long long sums[STK_AA_C];
  uint8_t lut[STK_AA_C * 256];
} stk_aa_shared;

/* Whole 4-byte words of n bytes at in and out, when both are 4-byte aligned (else 0). */
STK_HD int64_t stk_aa_words(const uint8_t *in, const uint8_t *out, int64_t n) {
  return ((uintptr_t)in % 4 == 0 && (uintptr_t)out % 4 == 0) ? n / 4 : 0;
}

STK_HD void stk_aa_copy(const uint8_t *in, uint8_t *out, int64_t n, int tid, int nt) {
  int64_t words = stk_aa_words(in, out, n);
  for (int64_t i = tid; i < words; i += nt) ((uint32_t *)out)[i] = ((const uint32_t *)in)[i];
  for (int64_t i = words * 4 + tid; i < n; i += nt) out[i] = in[i];
}

/* Per-channel histograms of `in` into sh->hist64 (synchronised on return). */
STK_HD void stk_aa_histograms(const uint8_t *in, int64_t n, int c, stk_aa_shared *sh, int tid,
                              int nt) {
  for (int i = tid; i < c * 256; i += nt) sh->hist[i] = 0;
  STK_AA_SYNC();
  for (int64_t i = tid; i < n; i += nt)
    STK_AA_ADD_U32(&sh->hist[(int)((uint32_t)i % (uint32_t)c) * 256 + in[i]], 1u);
  STK_AA_SYNC();
  for (int i = tid; i < c * 256; i += nt) sh->hist64[i] = sh->hist[i];
  STK_AA_SYNC();
}

/* Channel sums of `in` (sh->sums[0..c)); with `pil_luma`, sums[0] is the sum of Pillow's
 * luma of each RGB pixel (of channel 0 when c != 3). Synchronised on return. */
STK_HD void stk_aa_sums(const uint8_t *in, int64_t px, int c, int pil_luma, stk_aa_shared *sh,
                        int tid, int nt) {
  for (int k = tid; k < STK_AA_C; k += nt) sh->sums[k] = 0;
  STK_AA_SYNC();
  unsigned long long part[STK_AA_C] = {0, 0, 0, 0};
  for (int64_t p = tid; p < px; p += nt) {
    const uint8_t *q = in + p * c;
    if (pil_luma) {
      part[0] += c == 3 ? stk_aa_pil_luma(q[0], q[1], q[2]) : q[0];
    } else {
      for (int k = 0; k < c; k++) part[k] += q[k];
    }
  }
  for (int k = 0; k < c; k++)
    if (part[k]) STK_AA_ADD_U64(&sh->sums[k], part[k]);
  STK_AA_SYNC();
}

/* The per-channel tables of a histogram operation (one thread per channel). */
STK_HD void stk_aa_hist_luts(int code, int c, stk_aa_shared *sh, int tid, int nt) {
  for (int k = tid; k < c; k += nt) {
    const uint64_t *h = sh->hist64 + k * 256;
    uint8_t *l = sh->lut + k * 256;
    switch (code) {
      case STK_GPU_AA_EQUALIZE_CV:
        stk_aa_cv_equalize_lut(h, l);
        break;
      case STK_GPU_AA_EQUALIZE_PIL:
        stk_aa_pil_equalize_lut(h, l);
        break;
      case STK_GPU_AA_AUTOCONTRAST_DALI:
        stk_aa_dali_autocontrast_lut(h, l);
        break;
      default:
        stk_aa_pil_autocontrast_lut(h, l);
        break;
    }
  }
  STK_AA_SYNC();
}

/* A warp step: the image (interp) and, when given, the mask (nearest, fill 0). */
STK_HD void stk_aa_warp_step(const stk_gpu_aa_sample *s, const double *m, const uint8_t *in,
                             uint8_t *out, const uint8_t *min, uint8_t *mout, int interp,
                             int constant, int tid, int nt) {
  int64_t px = (int64_t)s->h * s->w;
  int c = s->c;
  for (int64_t p = tid; p < px; p += nt) {
    int x = (int)((uint32_t)p % (uint32_t)s->w), y = (int)((uint32_t)p / (uint32_t)s->w);
    double sx, sy;
    stk_aa_warp_coords(m, x, y, &sx, &sy);
    uint8_t *o = out + p * c;
    if (interp == STK_GPU_INTERP_NEAREST) {
      int64_t q = stk_aa_warp_nearest(sx, sy, s->h, s->w, constant);
      for (int ch = 0; ch < c; ch++) o[ch] = q < 0 ? s->fill8[ch] : in[q * c + ch];
    } else if (interp == STK_GPU_INTERP_LINEAR) {
      for (int ch = 0; ch < c; ch++)
        o[ch] = stk_aa_u8_f32(stk_aa_warp_linear(in, s->h, s->w, c, sx, sy, ch, constant, s->fill));
    } else {
      for (int ch = 0; ch < c; ch++)
        o[ch] = stk_aa_u8_f32(stk_aa_warp_cubic(in, s->h, s->w, c, sx, sy, ch, constant, s->fill));
    }
    if (min) {
      int64_t q = stk_aa_warp_nearest(sx, sy, s->h, s->w, 1);
      for (int ch = 0; ch < s->mask_c; ch++)
        mout[p * s->mask_c + ch] = q < 0 ? (uint8_t)0 : min[q * s->mask_c + ch];
    }
  }
}

/* A table applied to every element: lut[(i % c) * 256 + in[i]] (per_channel) or lut[in[i]];
 * four elements per load where the buffers allow. */
STK_HD void stk_aa_apply_lut(const uint8_t *in, uint8_t *out, int64_t n, int c, int per_channel,
                             const uint8_t *lut, int tid, int nt) {
  int64_t words = stk_aa_words(in, out, n);
  for (int64_t i = tid; i < words; i += nt) {
    uint32_t v = ((const uint32_t *)in)[i], r = 0;
    int ch = per_channel ? (int)(((uint32_t)i * 4u) % (uint32_t)c) : 0;
    for (int j = 0; j < 4; j++) {
      r |= (uint32_t)lut[ch * 256 + (int)((v >> (8 * j)) & 255u)]
           << (8 * j); /* little-endian bytes */
      if (per_channel && ++ch == c) ch = 0;
    }
    ((uint32_t *)out)[i] = r;
  }
  for (int64_t i = words * 4 + tid; i < n; i += nt)
    out[i] = lut[(per_channel ? (int)((uint32_t)i % (uint32_t)c) * 256 : 0) + in[i]];
}

/* One non-geometric step from in to out (no aliasing). */
STK_HD void stk_aa_color_step(const stk_gpu_aa_sample *s, const stk_gpu_aa_step *st,
                              const uint8_t *luts, const uint8_t *in, uint8_t *out,
                              stk_aa_shared *sh, int tid, int nt) {
  int c = s->c;
  int64_t px = (int64_t)s->h * s->w, n = px * c;
  switch (st->code) {
    case STK_GPU_AA_LUT:
      for (int i = tid; i < 256; i += nt) sh->lut[i] = luts[(size_t)st->lut * 256 + (size_t)i];
      STK_AA_SYNC();
      stk_aa_apply_lut(in, out, n, c, 0, sh->lut, tid, nt);
      return;
    case STK_GPU_AA_CONTRAST_DALI:
    case STK_GPU_AA_CONTRAST_PIL: {
      int pil = st->code == STK_GPU_AA_CONTRAST_PIL;
      stk_aa_sums(in, px, c, pil, sh, tid, nt);
      uint64_t sums[STK_AA_C];
      for (int k = 0; k < STK_AA_C; k++) sums[k] = (uint64_t)sh->sums[k];
      double mean = px ? (double)sums[0] / (double)px : 0.0;
      double cc = stk_aa_mean_luma(sums, c, (double)px);
      for (int v = tid; v < 256; v += nt)
        sh->lut[v] = pil ? stk_aa_pil_blend((uint8_t)(int)(mean + 0.5), (uint8_t)v, (float)st->p[0])
                         : stk_aa_dali_linear(1.0, st->p[0], cc, v);
      STK_AA_SYNC();
      stk_aa_apply_lut(in, out, n, c, 0, sh->lut, tid, nt);
      return;
    }
    case STK_GPU_AA_COLOR_DALI:
    case STK_GPU_AA_COLOR_PIL:
      if (c != 3) {
        stk_aa_copy(in, out, n, tid, nt);
        return;
      }
      for (int64_t p = tid; p < px; p += nt) {
        const uint8_t *q = in + p * 3;
        uint8_t *o = out + p * 3;
        if (st->code == STK_GPU_AA_COLOR_DALI) {
          stk_aa_dali_color(st->p, q, o);
        } else {
          uint8_t l = stk_aa_pil_luma(q[0], q[1], q[2]);
          float f = (float)st->p[0];
          o[0] = stk_aa_pil_blend(l, q[0], f), o[1] = stk_aa_pil_blend(l, q[1], f);
          o[2] = stk_aa_pil_blend(l, q[2], f);
        }
      }
      return;
    case STK_GPU_AA_SHARP_DALI:
    case STK_GPU_AA_SHARP_PIL: {
      float k[9];
      for (int i = 0; i < 9; i++) k[i] = (float)st->p[i];
      for (int64_t i = tid; i < n; i += nt) {
        int ch = (int)((uint32_t)i % (uint32_t)c);
        uint32_t p = (uint32_t)i / (uint32_t)c;
        int x = (int)(p % (uint32_t)s->w), y = (int)(p / (uint32_t)s->w);
        out[i] = st->code == STK_GPU_AA_SHARP_DALI
                     ? stk_aa_dali_sharp(in, s->h, s->w, c, y, x, ch, k)
                     : stk_aa_pil_sharp(in, s->h, s->w, c, y, x, ch, k[0]);
      }
      return;
    }
    case STK_GPU_AA_EQUALIZE_CV:
    case STK_GPU_AA_EQUALIZE_PIL:
    case STK_GPU_AA_AUTOCONTRAST_DALI:
    case STK_GPU_AA_AUTOCONTRAST_PIL:
      stk_aa_histograms(in, n, c, sh, tid, nt);
      stk_aa_hist_luts(st->code, c, sh, tid, nt);
      stk_aa_apply_lut(in, out, n, c, 1, sh->lut, tid, nt);
      return;
    default:
      stk_aa_copy(in, out, n, tid, nt);
      return;
  }
}

/* Runs sample s's program (steps[s->first_step ...]) as thread tid of nt. The last step
 * lands in dst: step j of k writes dst when k - 1 - j is even, else scratch; the mask
 * ping-pongs the same way over the warp steps. */
STK_HD void stk_aa_run_sample(const stk_gpu_aa_sample *sample, const stk_gpu_aa_step *steps,
                              const uint8_t *luts, const float *floats, int interp, int constant,
                              stk_aa_shared *sh, int tid, int nt) {
  /* local copies of the descriptor and of each step: the byte stores of the pixel loops
   * may alias any global memory, so fields read through pointers would be reloaded for
   * every pixel; locals stay in registers */
  stk_gpu_aa_sample S = *sample;
  const stk_gpu_aa_sample *s = &S;
  for (int i = tid; i < s->dec_count; i += nt) s->dec_dst[i] = floats[s->dec_off + i];
  for (int i = tid; i < s->box_count; i += nt) s->box_dst[i] = floats[s->box_off + i];
  const stk_gpu_aa_step *prog = steps + s->first_step;
  int k = s->num_steps, warps = 0, done_warps = 0;
  for (int j = 0; j < k; j++) warps += prog[j].code == STK_GPU_AA_WARP;
  const uint8_t *cur = s->src, *mcur = s->mask_src;
  for (int j = 0; j < k; j++) {
    stk_gpu_aa_step st = prog[j];
    uint8_t *out = (k - 1 - j) % 2 == 0 ? s->dst : s->scratch;
    if (st.code == STK_GPU_AA_WARP) {
      uint8_t *mout = NULL;
      if (mcur) mout = (warps - 1 - done_warps) % 2 == 0 ? s->mask_dst : s->mask_scratch;
      stk_aa_warp_step(s, st.p, cur, out, mcur, mout, interp, constant, tid, nt);
      done_warps++;
      mcur = mout;
    } else {
      stk_aa_color_step(s, &st, luts, cur, out, sh, tid, nt);
    }
    STK_AA_SYNC();
    cur = out;
  }
  if (s->mask_src && warps == 0)
    stk_aa_copy(s->mask_src, s->mask_dst, (int64_t)s->h * s->w * s->mask_c, tid, nt);
}

#endif /* STOKER_CUDA_AUTOAUG_INTERP_H */
