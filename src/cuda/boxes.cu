/* GPU kernels of bb_flip and coord_flip (api_boxes.h): one thread per box or point, the
 * arithmetic of src/shared/box_math.h (the CPU operators' own functions), so both
 * backends produce the same bits. Launch shape as the other kernel files: descriptors and
 * each sample's first block uploaded once, one grid for the batch (launch.cuh). */
#include <stdlib.h>
#include <string.h>

#include "api_boxes.h"
#include "gpu_kernels.h"
#include "gpu_internal.h"
#include "launch.cuh"

#define THREADS 256

/* Uploads n descriptors of type T with their block table and launches kernel(desc, first,
 * n) over the batch; `count(i)` is sample i's number of threads. */
template <class T, class Count, class Kernel>
static int launch_batch(stk_gpu_ctx *ctx, int n, const T *samples, uintptr_t stream_h,
                        const char *what, char *err, size_t errlen, Count count, Kernel kernel) {
  size_t bytes = (size_t)n * sizeof(T) + (size_t)(n + 1) * sizeof(int);
  char *host = (char *)malloc(bytes);
  int64_t *nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  int rc = 0;
  if (!host || !nb) rc = GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  int *first = (int *)(host + (size_t)n * sizeof(T));
  for (int i = 0; i < n && rc == 0; i++) {
    memcpy(host + (size_t)i * sizeof(T), &samples[i], sizeof(T));
    nb[i] = stk_cdiv(count(i), THREADS);
  }
  if (rc == 0) rc = stk_block_table(nb, n, first, err, errlen);
  if (rc == 0 && first[n] > 0)
    rc = stk_upload_and_launch(ctx, host, bytes, stream_h, what, err, errlen, [&](const char *dp) {
      kernel(first[n], (const T *)dp, (const int *)(dp + (size_t)n * sizeof(T)), n,
             (cudaStream_t)stream_h);
      return 0;
    });
  free(host);
  free(nb);
  return rc;
}

__global__ void __launch_bounds__(THREADS)
    bb_flip_kernel(const stk_gpu_bb_flip_sample *S, const int *first, int n) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_bb_flip_sample *s = &S[si];
  int64_t i = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  if (i >= s->count) return;
  float box[4];
  for (int k = 0; k < 4; k++) box[k] = s->src[4 * i + k];
  stk__bb_flip_one(box, s->ltrb != 0, s->horizontal != 0, s->vertical != 0);
  for (int k = 0; k < 4; k++) s->dst[4 * i + k] = box[k];
}

__global__ void __launch_bounds__(THREADS)
    coord_flip_kernel(const stk_gpu_coord_flip_sample *S, const int *first, int n) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_coord_flip_sample *s = &S[si];
  int64_t i = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  if (i >= s->count) return;
  float p[3];
  for (int k = 0; k < s->d; k++) p[k] = s->src[s->d * i + k];
  stk__coord_flip_one(p, s->d, s->axes, &s->spec);
  for (int k = 0; k < s->d; k++) s->dst[s->d * i + k] = p[k];
}

static int bb_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_bb_flip_sample *samples, uintptr_t stream,
                   char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  for (int i = 0; i < n; i++)
    if (samples[i].count < 0 || (samples[i].count > 0 && (!samples[i].src || !samples[i].dst)))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad boxes", i);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  return launch_batch(
      ctx, n, samples, stream, "bb_flip", err, errlen, [&](int i) { return samples[i].count; },
      [](int blocks, const stk_gpu_bb_flip_sample *d, const int *f, int m, cudaStream_t st) {
        bb_flip_kernel<<<blocks, THREADS, 0, st>>>(d, f, m);
      });
}

static int coord_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_coord_flip_sample *samples,
                      uintptr_t stream, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  for (int i = 0; i < n; i++) {
    const stk_gpu_coord_flip_sample *s = &samples[i];
    bool axes_ok = s->d >= 1 && s->d <= 3;
    for (int k = 0; axes_ok && k < s->d; k++) axes_ok = s->axes[k] >= 0 && s->axes[k] < 3;
    if (s->count < 0 || !axes_ok || (s->count > 0 && (!s->src || !s->dst)))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad points", i);
  }
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  return launch_batch(
      ctx, n, samples, stream, "coord_flip", err, errlen, [&](int i) { return samples[i].count; },
      [](int blocks, const stk_gpu_coord_flip_sample *d, const int *f, int m, cudaStream_t st) {
        coord_flip_kernel<<<blocks, THREADS, 0, st>>>(d, f, m);
      });
}

__global__ void __launch_bounds__(THREADS)
    coord_transform_kernel(const stk_gpu_coord_transform_sample *S, const int *first, int n) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const stk_gpu_coord_transform_sample *s = &S[si];
  int64_t i = (int64_t)(b - first[si]) * THREADS + threadIdx.x;
  if (i >= s->count) return;
  stk__coord_transform_one(s->m, s->t, s->o, s->d, s->src + (int64_t)s->d * i,
                           s->dst + (int64_t)s->o * i);
}

static int coord_transform(stk_gpu_ctx *ctx, int n, const stk_gpu_coord_transform_sample *samples,
                           uintptr_t stream, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  for (int i = 0; i < n; i++) {
    const stk_gpu_coord_transform_sample *s = &samples[i];
    if (s->count < 0 || s->o < 1 || s->d < 1 || s->o > STK__CT_MAX_DIM || s->d > STK__CT_MAX_DIM ||
        (s->count > 0 && (!s->src || !s->dst)))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad points", i);
  }
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  return launch_batch(
      ctx, n, samples, stream, "coord_transform", err, errlen,
      [&](int i) { return samples[i].count; },
      [](int blocks, const stk_gpu_coord_transform_sample *d, const int *f, int m,
         cudaStream_t st) { coord_transform_kernel<<<blocks, THREADS, 0, st>>>(d, f, m); });
}

/* box_encoder: one block per sample. Phase 1: each anchor's best box (first maximum, boxes
 * in order), kept in the outputs as scratch. Phase 2: box by box, the block finds the
 * box's best anchor (largest IoU, lowest index on ties) and claims it (a later box wins,
 * as on the CPU). Phase 3: the threshold and the encoding. */
__global__ void __launch_bounds__(THREADS)
    box_encoder_kernel(const stk_gpu_box_encoder_sample *S, const float *anchors, int64_t m,
                       stk__box_encoding enc) {
  const stk_gpu_box_encoder_sample *s = &S[blockIdx.x];
  __shared__ float top_v[THREADS];
  __shared__ int64_t top_j[THREADS];
  for (int64_t j = threadIdx.x; j < m; j += THREADS) {
    float best = -1.0f;
    int32_t who = -1;
    for (int64_t i = 0; i < s->n; i++) {
      float v = stk__box_iou(s->boxes + 4 * i, anchors + 4 * j);
      if (v > best) best = v, who = (int32_t)i;
    }
    s->out_boxes[4 * j] = best, s->out_labels[j] = who;
  }
  __syncthreads();
  for (int64_t i = 0; i < s->n; i++) {
    float v = -1.0f;
    int64_t at = INT64_MAX;
    for (int64_t j = threadIdx.x; j < m; j += THREADS) {
      float x = stk__box_iou(s->boxes + 4 * i, anchors + 4 * j);
      if (x > v) v = x, at = j;
    }
    top_v[threadIdx.x] = v, top_j[threadIdx.x] = at;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        float ov = top_v[threadIdx.x + half];
        int64_t oj = top_j[threadIdx.x + half];
        if (ov > top_v[threadIdx.x] || (ov == top_v[threadIdx.x] && oj < top_j[threadIdx.x]))
          top_v[threadIdx.x] = ov, top_j[threadIdx.x] = oj;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0 && top_j[0] < m) {
      s->out_boxes[4 * top_j[0]] = 2.0f;
      s->out_labels[top_j[0]] = (int32_t)i;
    }
    __syncthreads();
  }
  for (int64_t j = threadIdx.x; j < m; j += THREADS) {
    int32_t who = s->out_labels[j];
    bool matched = who >= 0 && s->out_boxes[4 * j] > enc.criteria;
    stk__box_encode(&enc, matched ? s->boxes + 4 * who : anchors + 4 * j, anchors + 4 * j, matched,
                    s->out_boxes + 4 * j);
    s->out_labels[j] = matched ? s->labels[who] : 0;
  }
}

static int box_encoder(stk_gpu_ctx *ctx, int n, const stk_gpu_box_encoder_sample *samples,
                       const stk_gpu_box_encoder_args *args, uintptr_t stream, char *err,
                       size_t errlen) {
  if (n < 0 || (n > 0 && (!samples || !args || !args->anchors || args->m < 1)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  for (int i = 0; i < n; i++) {
    const stk_gpu_box_encoder_sample *s = &samples[i];
    if (s->n < 0 || s->n > INT32_MAX || !s->out_boxes || !s->out_labels ||
        (s->n > 0 && (!s->boxes || !s->labels)))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: bad boxes", i);
  }
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  size_t desc = (size_t)n * sizeof *samples, bytes = desc + (size_t)args->m * 4 * sizeof(float);
  char *host = (char *)malloc(bytes);
  if (!host) return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  memcpy(host, samples, desc);
  memcpy(host + desc, args->anchors, (size_t)args->m * 4 * sizeof(float));
  int64_t m = args->m;
  stk__box_encoding enc = args->enc;
  int rc = stk_upload_and_launch(
      ctx, host, bytes, stream, "box_encoder", err, errlen, [&](const char *dp) {
        box_encoder_kernel<<<n, THREADS, 0, (cudaStream_t)stream>>>(
            (const stk_gpu_box_encoder_sample *)dp, (const float *)(dp + desc), m, enc);
        return 0;
      });
  free(host);
  return rc;
}

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_bb_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_bb_flip_sample *samples,
                      const stk_gpu_no_args *args, uintptr_t stream, char *err, size_t errlen) {
  (void)args;
  return bb_flip(ctx, n, samples, stream, err, errlen);
}

int stk_gpu_k_coord_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_coord_flip_sample *samples,
                         const stk_gpu_no_args *args, uintptr_t stream, char *err, size_t errlen) {
  (void)args;
  return coord_flip(ctx, n, samples, stream, err, errlen);
}

int stk_gpu_k_coord_transform(stk_gpu_ctx *ctx, int n,
                              const stk_gpu_coord_transform_sample *samples,
                              const stk_gpu_no_args *args, uintptr_t stream, char *err,
                              size_t errlen) {
  (void)args;
  return coord_transform(ctx, n, samples, stream, err, errlen);
}

int stk_gpu_k_box_encoder(stk_gpu_ctx *ctx, int n, const stk_gpu_box_encoder_sample *samples,
                          const stk_gpu_box_encoder_args *args, uintptr_t stream, char *err,
                          size_t errlen) {
  return box_encoder(ctx, n, samples, args, stream, err, errlen);
}
