/* GPU kernels of the audio operators (api_audio.h). The coefficients come from the host
 * (the CPU operators' own functions), so these kernels only index and sum, in float64 as
 * the CPU does; audio_resample and nonsilent_region run the CPU's per-element functions
 * (src/shared/audio_signal_math.h).
 *
 * Launch shape (as math.cu's): one upload holds the batch's descriptors, a table of each
 * sample's first block, and the host arrays (weights, windows, twiddles); one grid covers
 * the batch, a block finds its sample by binary search (launch.cuh), one thread computes
 * one output element. */
#include <stdlib.h>
#include <string.h>

#include "api_audio.h"
#include "gpu_kernels.h"
#include "gpu_internal.h"
#include "launch.cuh"
#include "../shared/audio_math.h"
#include "../shared/audio_signal_math.h"

#define THREADS 256

/* A host staging block: n descriptors of `dsize` bytes, first[0..n], then `aux` doubles. */
typedef struct {
  char *host;
  size_t off_first, off_aux, bytes;
  int *first;
  double *aux;
} staging;

static int staging_init(staging *st, int n, size_t dsize, size_t aux, char *err, size_t errlen) {
  st->off_first = (size_t)n * dsize;
  st->off_aux = (st->off_first + (size_t)(n + 1) * sizeof(int) + 7) & ~(size_t)7;
  st->bytes = st->off_aux + aux * sizeof(double);
  st->host = (char *)calloc(1, st->bytes ? st->bytes : 1);
  if (!st->host) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  st->first = (int *)(st->host + st->off_first);
  st->aux = (double *)(st->host + st->off_aux);
  return 0;
}

/* Fills first[] from per-sample output element counts. */
static int staging_blocks(staging *st, int n, const int64_t *elems, char *err, size_t errlen) {
  int64_t *nb = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!nb) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory");
  for (int i = 0; i < n; i++) nb[i] = stk_cdiv(elems[i], THREADS);
  int rc = stk_block_table(nb, n, st->first, err, errlen);
  free(nb);
  return rc;
}

/* ---- matrix (mel_filter_bank, mfcc) ---- */

typedef struct {
  stk_gpu_audio_matrix_sample s;
  int64_t w_off; /* the weights' offset in the aux doubles */
} matrix_desc;

__global__ void matrix_kernel(const matrix_desc *d, const int *first, int n, const double *aux) {
  int si = stk_find_sample(first, n, blockIdx.x);
  const stk_gpu_audio_matrix_sample *s = &d[si].s;
  int64_t e = (int64_t)(blockIdx.x - first[si]) * THREADS + threadIdx.x;
  int64_t total = s->outer * s->rows * s->inner;
  if (e >= total) return;
  int64_t i = e % s->inner, m = (e / s->inner) % s->rows, o = e / (s->inner * s->rows);
  const double *w = aux + d[si].w_off + m * s->len;
  const float *x = s->src + o * s->len * s->inner + i;
  double acc = 0.0;
  for (int64_t k = 0; k < s->len; k++) acc += w[k] * (double)x[k * s->inner];
  s->dst[e] = (float)acc;
}

static int audio_matrix(stk_gpu_ctx *ctx, int n, const stk_gpu_audio_matrix_sample *samples,
                        uintptr_t stream_h, char *err, size_t errlen) {
  if (n <= 0) return 0;
  size_t aux = 0;
  int64_t *elems = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
  if (!elems) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory");
  for (int i = 0; i < n; i++) {
    aux += (size_t)(samples[i].rows * samples[i].len);
    elems[i] = samples[i].outer * samples[i].rows * samples[i].inner;
  }
  staging st;
  int rc = staging_init(&st, n, sizeof(matrix_desc), aux, err, errlen);
  int64_t off = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_audio_matrix_sample *s = &samples[i];
    if (!s->src || !s->dst || !s->weights || s->len < 1 || s->rows < 1) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL pointer or empty matrix", i);
      break;
    }
    matrix_desc *d = (matrix_desc *)st.host + i;
    d->s = *s, d->w_off = off;
    memcpy(st.aux + off, s->weights, sizeof(double) * (size_t)(s->rows * s->len));
    off += s->rows * s->len;
  }
  if (rc == 0) rc = staging_blocks(&st, n, elems, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && st.first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "audio matrix", err, errlen, [&](const char *dp) {
          matrix_kernel<<<st.first[n], THREADS, 0, stream>>>((const matrix_desc *)dp,
                                                             (const int *)(dp + st.off_first), n,
                                                             (const double *)(dp + st.off_aux));
          return 0;
        });
  free(st.host);
  free(elems);
  return rc;
}

/* ---- preemphasis ---- */

__global__ void preemph_kernel(const stk_gpu_preemph_sample *d, const int *first, int n) {
  int si = stk_find_sample(first, n, blockIdx.x);
  const stk_gpu_preemph_sample *s = &d[si];
  int64_t t = (int64_t)(blockIdx.x - first[si]) * THREADS + threadIdx.x;
  if (t >= s->count) return;
  double prev;
  if (t > 0)
    prev = s->src[t - 1];
  else
    prev = s->border == 1 ? s->src[0] : s->border == 2 && s->count > 1 ? s->src[1] : 0.0;
  s->dst[t] = (float)((double)s->src[t] - s->coeff * prev);
}

static int audio_preemph(stk_gpu_ctx *ctx, int n, const stk_gpu_preemph_sample *samples,
                         uintptr_t stream_h, char *err, size_t errlen) {
  if (n <= 0) return 0;
  staging st;
  int64_t *elems = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
  if (!elems) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory");
  int rc = staging_init(&st, n, sizeof(stk_gpu_preemph_sample), 0, err, errlen);
  for (int i = 0; i < n && rc == 0; i++) {
    if ((!samples[i].src || !samples[i].dst) && samples[i].count > 0)
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL pointer", i);
    ((stk_gpu_preemph_sample *)st.host)[i] = samples[i];
    elems[i] = samples[i].count;
  }
  if (rc == 0) rc = staging_blocks(&st, n, elems, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && st.first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "preemphasis", err, errlen, [&](const char *dp) {
          preemph_kernel<<<st.first[n], THREADS, 0, stream>>>((const stk_gpu_preemph_sample *)dp,
                                                              (const int *)(dp + st.off_first), n);
          return 0;
        });
  free(st.host);
  free(elems);
  return rc;
}

/* ---- decibels: a block per sample finds the maximum, then one thread per element ---- */

__global__ void max_kernel(const stk_gpu_decibels_sample *d, double *refs) {
  const stk_gpu_decibels_sample *s = &d[blockIdx.x];
  __shared__ float part[THREADS];
  float m = 0.0f; /* the CPU starts from 0 too: a reference is never negative */
  for (int64_t i = threadIdx.x; i < s->count; i += THREADS) m = fmaxf(m, s->src[i]);
  part[threadIdx.x] = m;
  __syncthreads();
  for (int w = THREADS / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) refs[blockIdx.x] = s->ref > 0.0 ? s->ref : (double)part[0];
}

__global__ void decibels_kernel(const stk_gpu_decibels_sample *d, const int *first, int n,
                                const double *refs) {
  int si = stk_find_sample(first, n, blockIdx.x);
  const stk_gpu_decibels_sample *s = &d[si];
  int64_t e = (int64_t)(blockIdx.x - first[si]) * THREADS + threadIdx.x;
  if (e >= s->count) return;
  double ref = refs[si], inv = ref > 0.0 ? 1.0 / ref : 1.0;
  s->dst[e] = stk_to_db((double)s->src[e], inv, s->min_ratio, s->multiplier);
}

static int audio_decibels(stk_gpu_ctx *ctx, int n, const stk_gpu_decibels_sample *samples,
                          uintptr_t stream_h, char *err, size_t errlen) {
  if (n <= 0) return 0;
  staging st;
  int64_t *elems = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
  if (!elems) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory");
  int rc = staging_init(&st, n, sizeof(stk_gpu_decibels_sample), 0, err, errlen);
  for (int i = 0; i < n && rc == 0; i++) {
    if ((!samples[i].src || !samples[i].dst) && samples[i].count > 0)
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL pointer", i);
    ((stk_gpu_decibels_sample *)st.host)[i] = samples[i];
    elems[i] = samples[i].count;
  }
  if (rc == 0) rc = staging_blocks(&st, n, elems, err, errlen);
  double *refs = NULL;
  if (rc == 0)
    rc = stk_gpu_device_alloc(ctx, sizeof(double) * (size_t)n, stream_h, (void **)&refs, err,
                              errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "to_decibels", err, errlen, [&](const char *dp) {
          const stk_gpu_decibels_sample *d = (const stk_gpu_decibels_sample *)dp;
          max_kernel<<<n, THREADS, 0, stream>>>(d, refs);
          if (st.first[n] > 0)
            decibels_kernel<<<st.first[n], THREADS, 0, stream>>>(
                d, (const int *)(dp + st.off_first), n, refs);
          return 0;
        });
  if (refs) stk_gpu_device_free(ctx, refs, stream_h, NULL, 0);
  free(st.host);
  free(elems);
  return rc;
}

/* ---- spectrogram: one thread per (bin, frame), a direct DFT over the frame (transforms
 * the FFT kernel below does not take) ---- */

typedef struct {
  stk_gpu_spectrogram_sample s;
  int64_t win_off, cos_off, sin_off; /* offsets in the aux doubles */
} spec_desc;

__global__ void spectrogram_kernel(const spec_desc *d, const int *first, int n, const double *aux) {
  int si = stk_find_sample(first, n, blockIdx.x);
  const stk_gpu_spectrogram_sample *s = &d[si].s;
  int64_t bins = s->nfft / 2 + 1;
  int64_t e = (int64_t)(blockIdx.x - first[si]) * THREADS + threadIdx.x;
  if (e >= bins * s->frames) return;
  int64_t k = e / s->frames, f = e % s->frames; /* e in "ft" order */
  const double *w = aux + d[si].win_off, *ct = aux + d[si].cos_off, *st = aux + d[si].sin_off;
  double re = 0.0, im = 0.0;
  int64_t idx = 0;
  for (int64_t t = 0; t < s->wl; t++) {
    int64_t j = f * s->step + t - s->pad;
    double x = 0.0;
    if (j >= 0 && j < s->n)
      x = s->src[j];
    else if (s->reflect && s->n > 0)
      x = s->src[stk_reflect_index(j, s->n)];
    x *= w[t];
    re += x * ct[idx];
    im -= x * st[idx];
    idx += k;
    if (idx >= s->nfft) idx -= s->nfft;
  }
  double m2 = re * re + im * im;
  float v = (float)(s->power == 2 ? m2 : sqrt(m2));
  s->dst[s->tf ? f * bins + k : k * s->frames + f] = v;
}

/* ---- spectrogram by FFT: one block per frame ----
 * For power-of-two transforms up to SPEC_FFT_MAX points (both halves in shared memory):
 * the windowed, zero-padded frame loaded in bit-reversed order, then log2(nfft) radix-2
 * stages (decimation in time) with the direct DFT's cos/sin tables as twiddles, in
 * float64 as the CPU. O(n log n) a frame against the direct DFT's O(n^2): for the speech
 * settings (512 points) about 30 times less arithmetic. */
#define SPEC_FFT_MAX 2048

__global__ void spectrogram_fft_kernel(const spec_desc *d, const int *first, int n,
                                       const double *aux) {
  extern __shared__ double spec_shared[];
  int si = stk_find_sample(first, n, blockIdx.x);
  const stk_gpu_spectrogram_sample *s = &d[si].s;
  int64_t f = blockIdx.x - first[si], nfft = s->nfft;
  int bits = __ffsll(nfft) - 1;
  double *re = spec_shared, *im = spec_shared + nfft;
  const double *w = aux + d[si].win_off, *ct = aux + d[si].cos_off, *st = aux + d[si].sin_off;
  for (int64_t t = threadIdx.x; t < nfft; t += blockDim.x) {
    double x = 0.0;
    if (t < s->wl) {
      int64_t j = f * s->step + t - s->pad;
      if (j >= 0 && j < s->n)
        x = s->src[j];
      else if (s->reflect && s->n > 0)
        x = s->src[stk_reflect_index(j, s->n)];
      x *= w[t];
    }
    int64_t r = (int64_t)(__brevll((unsigned long long)t) >> (64 - bits));
    re[r] = x;
    im[r] = 0.0;
  }
  __syncthreads();
  for (int64_t len = 2; len <= nfft; len <<= 1) {
    int64_t half = len >> 1, stride = nfft / len;
    for (int64_t b = threadIdx.x; b < nfft / 2; b += blockDim.x) {
      int64_t j = b % half, i0 = (b / half) * len + j, i1 = i0 + half;
      double c = ct[j * stride], sn = st[j * stride]; /* e^(-2 pi i j / len) = c - i sn */
      double xr = re[i1] * c + im[i1] * sn, xi = im[i1] * c - re[i1] * sn;
      re[i1] = re[i0] - xr, im[i1] = im[i0] - xi;
      re[i0] += xr, im[i0] += xi;
    }
    __syncthreads();
  }
  int64_t bins = nfft / 2 + 1;
  for (int64_t k = threadIdx.x; k < bins; k += blockDim.x) {
    double m2 = re[k] * re[k] + im[k] * im[k];
    float v = (float)(s->power == 2 ? m2 : sqrt(m2));
    s->dst[s->tf ? f * bins + k : k * s->frames + f] = v;
  }
}

/* Whether every sample's transform takes the FFT kernel. */
static bool spectrogram_by_fft(int n, const stk_gpu_spectrogram_sample *samples, int64_t *most) {
  *most = 0;
  for (int i = 0; i < n; i++) {
    int64_t m = samples[i].nfft;
    if (m < 2 || m > SPEC_FFT_MAX || (m & (m - 1)) != 0) return false;
    if (m > *most) *most = m;
  }
  return true;
}

static int audio_spectrogram(stk_gpu_ctx *ctx, int n, const stk_gpu_spectrogram_sample *samples,
                             uintptr_t stream_h, char *err, size_t errlen) {
  if (n <= 0) return 0;
  size_t aux = 0;
  int64_t most = 0;
  bool fft = spectrogram_by_fft(n, samples, &most);
  int64_t *elems = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
  if (!elems) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory");
  for (int i = 0; i < n; i++) {
    aux += (size_t)(samples[i].wl + 2 * samples[i].nfft);
    /* the FFT's blocks are frames; the direct DFT's threads are its outputs */
    elems[i] = fft ? samples[i].frames : (samples[i].nfft / 2 + 1) * samples[i].frames;
  }
  staging st;
  int rc = staging_init(&st, n, sizeof(spec_desc), aux, err, errlen);
  int64_t off = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_spectrogram_sample *s = &samples[i];
    if (!s->window || s->nfft < s->wl || s->wl < 1 || s->step < 1 ||
        ((!s->src || !s->dst) && s->frames > 0)) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad spectrogram geometry", i);
      break;
    }
    spec_desc *d = (spec_desc *)st.host + i;
    d->s = *s;
    d->win_off = off, d->cos_off = off + s->wl, d->sin_off = off + s->wl + s->nfft;
    memcpy(st.aux + off, s->window, sizeof(double) * (size_t)s->wl);
    for (int64_t j = 0; j < s->nfft; j++) { /* the CPU FFT plan's tables */
      double a = 2.0 * STK_AUDIO_PI * (double)j / (double)s->nfft;
      st.aux[d->cos_off + j] = cos(a);
      st.aux[d->sin_off + j] = sin(a);
    }
    off += s->wl + 2 * s->nfft;
  }
  if (rc == 0)
    rc = fft ? stk_block_table(elems, n, st.first, err, errlen)
             : staging_blocks(&st, n, elems, err, errlen);
  cudaStream_t stream = (cudaStream_t)stream_h;
  size_t shared = fft ? 2 * (size_t)most * sizeof(double) : 0;
  if (rc == 0 && st.first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "spectrogram", err, errlen, [&](const char *dp) {
          const spec_desc *dd = (const spec_desc *)dp;
          const int *first = (const int *)(dp + st.off_first);
          const double *ax = (const double *)(dp + st.off_aux);
          if (fft)
            spectrogram_fft_kernel<<<st.first[n], THREADS, shared, stream>>>(dd, first, n, ax);
          else
            spectrogram_kernel<<<st.first[n], THREADS, 0, stream>>>(dd, first, n, ax);
          return 0;
        });
  free(st.host);
  free(elems);
  return rc;
}

/* ---- audio_resample: one thread per output value (frame j, channel c) ---- */

__global__ void resample_audio_kernel(const stk_gpu_resample_audio_sample *d, const int *first,
                                      int n, const float *table, int lobes) {
  int si = stk_find_sample(first, n, blockIdx.x);
  const stk_gpu_resample_audio_sample *s = &d[si];
  int64_t e = (int64_t)(blockIdx.x - first[si]) * THREADS + threadIdx.x;
  if (e >= s->out_n * s->channels) return;
  int64_t j = e / s->channels, c = e % s->channels;
  stk_resample_geom g = stk_resample_geometry(s->in_rate, s->out_rate, lobes);
  int64_t lo, hi;
  stk_resample_range(&g, j, s->n, &lo, &hi);
  double acc = 0.0;
  for (int64_t i = lo; i <= hi; i++) {
    double w = stk_resample_weight(&g, table, lobes, j, i);
    if (w != 0.0) acc += w * (double)s->src[i * s->channels + c];
  }
  s->dst[e] = (float)acc;
}

static int resample_audio(stk_gpu_ctx *ctx, int n, const stk_gpu_resample_audio_sample *samples,
                          const stk_gpu_resample_audio_args *args, uintptr_t stream_h, char *err,
                          size_t errlen) {
  if (n <= 0) return 0;
  if (!args || !args->table || args->lobes < 1)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "audio_resample: no kernel table");
  int64_t tlen = stk_resample_table_len(args->lobes);
  int64_t *elems = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
  if (!elems) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory");
  staging st;
  int rc = staging_init(&st, n, sizeof(stk_gpu_resample_audio_sample), (size_t)stk_cdiv(tlen, 2),
                        err, errlen);
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_resample_audio_sample *s = &samples[i];
    elems[i] = s->out_n * s->channels;
    if (s->n < 0 || s->out_n < 0 || s->channels < 0 || !(s->in_rate > 0.0) ||
        !(s->out_rate > 0.0) || ((!s->src || !s->dst) && elems[i] > 0))
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad resampling geometry", i);
    ((stk_gpu_resample_audio_sample *)st.host)[i] = *s;
  }
  if (rc == 0) {
    memcpy(st.aux, args->table, sizeof(float) * (size_t)tlen);
    rc = staging_blocks(&st, n, elems, err, errlen);
  }
  cudaStream_t stream = (cudaStream_t)stream_h;
  if (rc == 0 && st.first[n] > 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "audio_resample", err, errlen, [&](const char *dp) {
          resample_audio_kernel<<<st.first[n], THREADS, 0, stream>>>(
              (const stk_gpu_resample_audio_sample *)dp, (const int *)(dp + st.off_first), n,
              (const float *)(dp + st.off_aux), args->lobes);
          return 0;
        });
  free(st.host);
  free(elems);
  return rc;
}

/* ---- nonsilent_region: one thread per reset segment; first[] counts segments ---- */

typedef struct {
  stk_gpu_nonsilent_sample s;
  int64_t seg_len;
} ns_desc;

/* The scratch of a batch: each segment's maximum, each sample's first and last samples
 * at or above its threshold (UINT64_MAX and -1 while none). */
typedef struct {
  double *seg_max;
  unsigned long long *hit_first;
  long long *hit_last;
} ns_scratch;

__global__ void ns_init_kernel(ns_scratch sc, int n) {
  int i = blockIdx.x * THREADS + threadIdx.x;
  if (i >= n) return;
  sc.hit_first[i] = ~0ull;
  sc.hit_last[i] = -1;
}

/* Segment g: its sample, its first sample and its end. */
static __device__ const ns_desc *ns_segment(const ns_desc *d, const int *first, int n, int g,
                                            int *si, int64_t *s0, int64_t *end) {
  *si = stk_find_sample(first, n, g);
  const ns_desc *nd = &d[*si];
  *s0 = (int64_t)(g - first[*si]) * nd->seg_len;
  *end = *s0 + nd->seg_len < nd->s.n ? *s0 + nd->seg_len : nd->s.n;
  return nd;
}

__global__ void ns_max_kernel(const ns_desc *d, const int *first, int n, ns_scratch sc) {
  int g = blockIdx.x * THREADS + threadIdx.x, si;
  if (g >= first[n]) return;
  int64_t s0, end;
  const ns_desc *nd = ns_segment(d, first, n, g, &si, &s0, &end);
  double sum = stk_mms_start(nd->s.src, NULL, s0, nd->s.window), m = 0.0;
  for (int64_t i = s0; i < end; i++) {
    double v = stk_mms_step(nd->s.src, NULL, i, s0, nd->s.window, &sum);
    m = v > m ? v : m;
  }
  sc.seg_max[g] = m;
}

__global__ void ns_find_kernel(const ns_desc *d, const int *first, int n, ns_scratch sc) {
  int g = blockIdx.x * THREADS + threadIdx.x, si;
  if (g >= first[n]) return;
  int64_t s0, end;
  const ns_desc *nd = ns_segment(d, first, n, g, &si, &s0, &end);
  double ref = nd->s.ref;
  if (ref == 0.0) /* the CPU's rule: the maximum, starting from 0 */
    for (int k = first[si]; k < first[si + 1]; k++) ref = sc.seg_max[k] > ref ? sc.seg_max[k] : ref;
  double thr = ref * nd->s.factor, sum = stk_mms_start(nd->s.src, NULL, s0, nd->s.window);
  long long lo = -1, hi = -1;
  for (int64_t i = s0; i < end; i++)
    if (stk_mms_step(nd->s.src, NULL, i, s0, nd->s.window, &sum) >= thr) {
      if (lo < 0) lo = i;
      hi = i;
    }
  if (lo < 0) return;
  atomicMin(&sc.hit_first[si], (unsigned long long)lo);
  atomicMax(&sc.hit_last[si], hi);
}

__global__ void ns_finish_kernel(const ns_desc *d, int n, ns_scratch sc) {
  int i = blockIdx.x * THREADS + threadIdx.x;
  if (i >= n) return;
  int64_t begin = 0, length = 0, w = d[i].s.window;
  if (sc.hit_last[i] >= 0) {
    int64_t f = (int64_t)sc.hit_first[i];
    begin = f - w + 1 > 0 ? f - w + 1 : 0;
    length = sc.hit_last[i] - begin + 1;
  }
  *d[i].s.begin = (int32_t)begin;
  *d[i].s.length = (int32_t)length;
}

static int nonsilent(stk_gpu_ctx *ctx, int n, const stk_gpu_nonsilent_sample *samples,
                     uintptr_t stream_h, char *err, size_t errlen) {
  if (n <= 0) return 0;
  int64_t *segs = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
  if (!segs) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory");
  staging st{};
  int rc = staging_init(&st, n, sizeof(ns_desc), 0, err, errlen);
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_nonsilent_sample *s = &samples[i];
    if (s->n < 0 || s->window < 1 || !s->begin || !s->length || (!s->src && s->n > 0)) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad nonsilent_region geometry", i);
      break;
    }
    ns_desc *d = (ns_desc *)st.host + i;
    d->s = *s;
    d->seg_len = stk_mms_segment_len(s->n, s->reset);
    segs[i] = s->n > 0 ? stk_cdiv(s->n, d->seg_len) : 0;
  }
  if (rc == 0) rc = stk_block_table(segs, n, st.first, err, errlen);
  int total = rc == 0 ? st.first[n] : 0;
  void *scratch = NULL;
  if (rc == 0)
    rc = stk_gpu_device_alloc(ctx, sizeof(double) * (size_t)(total ? total : 1) + 16 * (size_t)n,
                              stream_h, &scratch, err, errlen);
  ns_scratch sc = {(double *)scratch, NULL, NULL};
  if (rc == 0) {
    sc.hit_first = (unsigned long long *)(sc.seg_max + (total ? total : 1));
    sc.hit_last = (long long *)(sc.hit_first + n);
  }
  cudaStream_t stream = (cudaStream_t)stream_h;
  int sample_blocks = (int)stk_cdiv(n, THREADS), seg_blocks = (int)stk_cdiv(total, THREADS);
  if (rc == 0)
    rc = stk_upload_and_launch(
        ctx, st.host, st.bytes, stream_h, "nonsilent_region", err, errlen, [&](const char *dp) {
          const ns_desc *d = (const ns_desc *)dp;
          const int *first = (const int *)(dp + st.off_first);
          ns_init_kernel<<<sample_blocks, THREADS, 0, stream>>>(sc, n);
          if (seg_blocks > 0) {
            ns_max_kernel<<<seg_blocks, THREADS, 0, stream>>>(d, first, n, sc);
            ns_find_kernel<<<seg_blocks, THREADS, 0, stream>>>(d, first, n, sc);
          }
          ns_finish_kernel<<<sample_blocks, THREADS, 0, stream>>>(d, n, sc);
          return 0;
        });
  if (scratch) stk_gpu_device_free(ctx, scratch, stream_h, NULL, 0);
  free(st.host);
  free(segs);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_audio_matrix(stk_gpu_ctx *ctx, int n, const stk_gpu_audio_matrix_sample *samples,
                           const stk_gpu_no_args *args, uintptr_t stream, char *err,
                           size_t errlen) {
  (void)args;
  return audio_matrix(ctx, n, samples, stream, err, errlen);
}

int stk_gpu_k_audio_preemph(stk_gpu_ctx *ctx, int n, const stk_gpu_preemph_sample *samples,
                            const stk_gpu_no_args *args, uintptr_t stream, char *err,
                            size_t errlen) {
  (void)args;
  return audio_preemph(ctx, n, samples, stream, err, errlen);
}

int stk_gpu_k_audio_decibels(stk_gpu_ctx *ctx, int n, const stk_gpu_decibels_sample *samples,
                             const stk_gpu_no_args *args, uintptr_t stream, char *err,
                             size_t errlen) {
  (void)args;
  return audio_decibels(ctx, n, samples, stream, err, errlen);
}

int stk_gpu_k_audio_spectrogram(stk_gpu_ctx *ctx, int n, const stk_gpu_spectrogram_sample *samples,
                                const stk_gpu_no_args *args, uintptr_t stream, char *err,
                                size_t errlen) {
  (void)args;
  return audio_spectrogram(ctx, n, samples, stream, err, errlen);
}

int stk_gpu_k_audio_resample(stk_gpu_ctx *ctx, int n, const stk_gpu_resample_audio_sample *samples,
                             const stk_gpu_resample_audio_args *args, uintptr_t stream, char *err,
                             size_t errlen) {
  return resample_audio(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_audio_nonsilent(stk_gpu_ctx *ctx, int n, const stk_gpu_nonsilent_sample *samples,
                              const stk_gpu_no_args *args, uintptr_t stream, char *err,
                              size_t errlen) {
  (void)args;
  return nonsilent(ctx, n, samples, stream, err, errlen);
}
