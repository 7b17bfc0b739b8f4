/*
 * host_emul: runs the GPU resample's arithmetic on the CPU and checks it against the CPU
 * resampler (src/ops/resample.c) and the CPU crop_mirror_normalize, on the bundled photos
 * with random windows, sizes, filters and output types. No GPU needed (runs in CI): it
 * pins down what the kernels compute, so that the GPU parity run (gpu_tests) only has
 * the kernels' indexing left to disagree about.
 *
 * The emulation follows src/cuda/kernels.cu step by step: weights from gpu_common.h,
 * a horizontal pass over source rows [ylo, yhi] into a float temporary, a vertical pass,
 * and the same output stage (rounding, normalisation, mirror, layout, pad channels).
 */
#include "gpu_testutil.h"

#include "shared/gpu_common.h"

/* The output stage of src/cuda/kernels.cu (rs_store / the pad-channel fill). */
static void emu_store(const stk_gpu_resample_args *a, const stk_gpu_resample_sample *s,
                      const float *mul, const float *add, float v, int c, void *dst, size_t i) {
  int dt = a->out_dtype;
  bool src_u8 = a->in_dtype == STK_DTYPE_UINT8;
  if (c >= a->channels) {
    stk__store_double(dst, dt, i, a->fill[c]);
    return;
  }
  if (!a->normalize) {
    if (dt == STK_DTYPE_UINT8)
      ((uint8_t *)dst)[i] =
          (uint8_t)(src_u8 ? stk_gpu_u8_from_bounded(v) : stk_gpu_u8_from_float(v));
    else if (dt == STK_DTYPE_FLOAT32)
      ((float *)dst)[i] = v;
    else
      ((uint16_t *)dst)[i] = stk__f32_to_f16(v);
    return;
  }
  if (src_u8 && a->quantize) {
    int q = stk_gpu_u8_from_bounded(v);
    stk__store_double(dst, dt, i,
                      stk_gpu_normalize_u8(q, s->mean[c], s->stddev[c], a->scale, a->shift));
    return;
  }
  float r = stk_gpu_cmn_float(v, mul[c], add[c]);
  if (dt == STK_DTYPE_FLOAT32)
    ((float *)dst)[i] = r;
  else
    stk__store_double(dst, dt, i, (double)r);
}

static float emu_src(const stk_gpu_resample_args *a, const stk_gpu_resample_sample *s, int y, int x,
                     int c) {
  const char *row = (const char *)s->src + (size_t)y * s->src_pitch;
  size_t k = (size_t)x * a->channels + c;
  return a->in_dtype == STK_DTYPE_UINT8 ? (float)((const uint8_t *)row)[k]
                                        : ((const float *)row)[k];
}

static void emu_resample(const stk_gpu_resample_args *a, const stk_gpu_resample_sample *s,
                         void *out) {
  int C = a->channels, oc = a->out_channels ? a->out_channels : C;
  int W = s->dst_w, H = s->dst_h;
  stk_gpu_axis gx, gy;
  stk_gpu_axis_setup(&gx, s->src_w, W, s->x0, s->x1, a->interp, a->antialias);
  stk_gpu_axis_setup(&gy, s->src_h, H, s->y0, s->y1, a->interp, a->antialias);
  float mul[4] = {0}, add[4] = {0};
  for (int c = 0; c < C && a->normalize; c++)
    stk_gpu_cmn_muladd(s->mean[c], s->stddev[c], a->scale, a->shift, &mul[c], &add[c]);
  float *tmp = NULL, *wx = NULL, *wy = NULL;
  int *sx = NULL, *nx = NULL, ylo = 0, yhi = 0;
  bool nearest = a->interp == STK_GPU_INTERP_NEAREST;
  if (!nearest) {
    stk_gpu_axis_range(&gy, &ylo, &yhi);
    int rows = yhi - ylo + 1;
    wx = malloc((size_t)W * gx.k * sizeof(float));
    wy = malloc((size_t)gy.k * sizeof(float));
    sx = malloc((size_t)W * sizeof(int));
    nx = malloc((size_t)W * sizeof(int));
    tmp = malloc((size_t)rows * W * C * sizeof(float));
    for (int x = 0; x < W; x++)
      nx[x] = stk_gpu_axis_weights(&gx, a->interp, x, wx + (size_t)x * gx.k, 1, &sx[x]);
    for (int r = 0; r < rows; r++)
      for (int x = 0; x < W; x++)
        for (int c = 0; c < C; c++) {
          float acc = 0.0f;
          for (int k = 0; k < nx[x]; k++)
            acc += wx[(size_t)x * gx.k + k] * emu_src(a, s, ylo + r, sx[x] + k, c);
          tmp[((size_t)r * W + x) * C + c] = acc;
        }
  }
  size_t plane = (size_t)H * W;
  for (int y = 0; y < H; y++) {
    int s0 = 0, ny = 0;
    if (!nearest) ny = stk_gpu_axis_weights(&gy, a->interp, y, wy, 1, &s0);
    for (int x = 0; x < W; x++) {
      float v[4] = {0};
      for (int c = 0; c < C; c++) {
        if (nearest) {
          v[c] = emu_src(a, s, stk_gpu_nearest(&gy, y), stk_gpu_nearest(&gx, x), c);
        } else {
          float acc = 0.0f;
          for (int k = 0; k < ny; k++) acc += wy[k] * tmp[((size_t)(s0 + k - ylo) * W + x) * C + c];
          v[c] = acc;
        }
      }
      int ox = s->mirror ? W - 1 - x : x;
      for (int c = 0; c < oc; c++) {
        size_t i =
            a->planar ? (size_t)c * plane + (size_t)y * W + ox : ((size_t)y * W + ox) * oc + c;
        emu_store(a, s, mul, add, c < C ? v[c] : 0.0f, c, out, i);
      }
    }
  }
  free(tmp);
  free(wx);
  free(wy);
  free(sx);
  free(nx);
}

int main(void) {
  tu_photo *ph;
  int np = tu_load_photos(&ph);
  if (!np) {
    fprintf(stderr, "host_emul: cannot load data/photos\n");
    return 1;
  }
  int failed = 0;
  for (int kind = 0; kind < 3; kind++) {
    tu_stat st[STK_DTYPE_COUNT];
    memset(st, 0, sizeof st);
    for (int p = 0; p < np; p++)
      for (int r = 0; r < 12; r++) {
        tu_trial t;
        tu_make_trial(&t, &ph[p], kind);
        void *gpu = malloc(t.out_bytes), *cpu = malloc(t.out_bytes);
        emu_resample(&t.a, &t.s, gpu);
        if (tu_cpu_resample(&t, cpu) != 0) return 1;
        tu_check_trial(&t, gpu, cpu, st);
        free(gpu);
        free(cpu);
        free((void *)t.s.src);
      }
    failed |= tu_report("host_emul", tu_kind_name[kind], st);
  }
  /* the decoder's EOI test: whole files have it, truncated ones do not */
  for (int p = 0; p < np; p++) {
    if (!ph[p].is_jpeg) continue;
    int whole = stk_gpu_jpeg_has_eoi(ph[p].file, ph[p].file_size);
    int cut = stk_gpu_jpeg_has_eoi(ph[p].file, ph[p].file_size * 6 / 10);
    int cut2 = stk_gpu_jpeg_has_eoi(ph[p].file, ph[p].file_size - 2);
    if (!whole || cut || cut2) {
      printf("host_emul: EOI test wrong on %s (whole %d, 60%% %d, minus 2 bytes %d)\n", ph[p].name,
             whole, cut, cut2);
      failed = 1;
    }
  }
  uint8_t tiny[1] = {0xFF};
  failed |= stk_gpu_jpeg_has_eoi(tiny, 1) || stk_gpu_jpeg_has_eoi(tiny, 0);
  printf("host_emul: %s\n", failed ? "FAILED" : "ok");
  tu_free_photos(ph, np);
  return failed;
}
