/* The GPU entry points for box and point operators: bb_flip, coord_flip, coord_transform,
 * box_encoder. Reached
 * through stk_gpu_api.boxes (gpu_api.h); implemented in src/cuda/boxes.cu with the per-box
 * functions of src/shared/box_math.h, which the CPU operators (src/ops/boxes.c) run too.
 * The same conventions as gpu_api.h: 0 or a stk_status with the message in err, work
 * queued on `stream`, one launch per call for the whole batch. */
#ifndef STOKER_CUDA_API_BOXES_H
#define STOKER_CUDA_API_BOXES_H

#include "gpu_api.h"
#include "../shared/box_math.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const float *src; /* device: count boxes of 4 floats */
  float *dst;
  int64_t count;
  int ltrb, horizontal, vertical;
} stk_gpu_bb_flip_sample;

typedef struct {
  const float *src; /* device: count points of d floats */
  float *dst;
  int64_t count;
  int d;
  int axes[3]; /* the axis (0 x, 1 y, 2 z) of each coordinate */
  stk__coord_flip_spec spec;
} stk_gpu_coord_flip_sample;

typedef struct {
  const float *src; /* device: count points of d floats */
  float *dst;       /* count points of o floats */
  int64_t count;
  int o, d;
  float m[STK__CT_MAX_DIM * STK__CT_MAX_DIM]; /* o x d, row-major */
  float t[STK__CT_MAX_DIM];
} stk_gpu_coord_transform_sample;

typedef struct {
  const float *boxes;    /* device: n ltrb boxes */
  const int32_t *labels; /* device: n labels */
  int64_t n;
  float *out_boxes;    /* device: m x 4 (also scratch for the best IoU per anchor) */
  int32_t *out_labels; /* device: m (also scratch for the best box per anchor) */
} stk_gpu_box_encoder_sample;

typedef struct {
  const float *anchors; /* host: m x 4 ltrb (uploaded with the descriptors) */
  int64_t m;
  stk__box_encoding enc;
} stk_gpu_box_encoder_args;

/* The kernels:
 * - bb_flip, coord_flip, coord_transform: one thread per box or point;
 * - box_encoder: SSD matching, one thread block per sample (the CPU's rule: box_encoder.c).
 */
#define STK_GPU_KERNELS_BOXES(X)                                                       \
  X(BB_FLIP, bb_flip, stk_gpu_bb_flip_sample, stk_gpu_no_args)                         \
  X(COORD_FLIP, coord_flip, stk_gpu_coord_flip_sample, stk_gpu_no_args)                \
  X(COORD_TRANSFORM, coord_transform, stk_gpu_coord_transform_sample, stk_gpu_no_args) \
  X(BOX_ENCODER, box_encoder, stk_gpu_box_encoder_sample, stk_gpu_box_encoder_args)

#ifdef __cplusplus
}
#endif

#endif
