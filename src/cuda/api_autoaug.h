/* The GPU entry points for the fused automatic-augmentation program (auto_augment.apply).
 * Launched through gpu_api.h's launch() (ids and typed launchers: gpu_kernels.h);
 * implemented in
 * src/cuda/autoaug.cu. The same conventions as gpu_api.h: every function returns 0 or a stk_status
 * with the message in err, queues its work on `stream` and never synchronises unless it says so.
 *
 * The host (src/ops/autoaug_op.c) draws each sample's decisions exactly as the CPU
 * operator does and encodes them as a small program: a list of steps (operation codes
 * below, with parameters computed on the host: warp matrices, 3x3 colour matrices,
 * sharpness kernels, tables for the point operations). One launch runs the batch, one
 * thread block per sample interpreting its program step by step, ping-ponging between
 * the sample's output and a scratch buffer. Reductions (histograms, channel sums) run in
 * the block's shared memory. */
#ifndef STOKER_CUDA_API_AUTOAUG_H
#define STOKER_CUDA_API_AUTOAUG_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Step codes. */
enum {
  STK_GPU_AA_COPY = 0,          /* identity */
  STK_GPU_AA_LUT,               /* out = lut[in]: table `lut` (256 bytes, all channels) */
  STK_GPU_AA_WARP,              /* affine warp, output -> input matrix p[0..5]; the mask too */
  STK_GPU_AA_CONTRAST_DALI,     /* DALI contrast, factor p[0], about the mean luma */
  STK_GPU_AA_CONTRAST_PIL,      /* ImageEnhance.Contrast, factor p[0] */
  STK_GPU_AA_COLOR_DALI,        /* YIQ saturation: 3x3 matrix p[0..8] (3 channels; else copy) */
  STK_GPU_AA_COLOR_PIL,         /* ImageEnhance.Color, factor p[0] (3 channels; else copy) */
  STK_GPU_AA_SHARP_DALI,        /* 3x3 filter p[0..8] (as float32), reflect-101 */
  STK_GPU_AA_SHARP_PIL,         /* ImageEnhance.Sharpness, factor p[0] */
  STK_GPU_AA_EQUALIZE_CV,       /* OpenCV equalizeHist per channel */
  STK_GPU_AA_EQUALIZE_PIL,      /* ImageOps.equalize per channel */
  STK_GPU_AA_AUTOCONTRAST_DALI, /* DALI auto_contrast per channel */
  STK_GPU_AA_AUTOCONTRAST_PIL,  /* ImageOps.autocontrast per channel */
  STK_GPU_AA_NUM_CODES
};

typedef struct {
  int code;    /* STK_GPU_AA_* */
  int lut;     /* STK_GPU_AA_LUT: index of the table in `luts` */
  double p[9]; /* the parameters named above */
} stk_gpu_aa_step;

/* Largest channel count of images and masks. */
#define STK_GPU_AA_MAX_CHANNELS 4

typedef struct {
  const uint8_t *src;      /* device HWC uint8 image, dense */
  uint8_t *dst;            /* device, h * w * c (must not overlap src) */
  uint8_t *scratch;        /* device, h * w * c: the other ping-pong buffer */
  int h, w, c;             /* c in 1..STK_GPU_AA_MAX_CHANNELS */
  const uint8_t *mask_src; /* NULL: no mask; else HW(C) uint8, the image's h x w */
  uint8_t *mask_dst, *mask_scratch;
  int mask_c;
  int first_step, num_steps;           /* this sample's steps in the step array (num_steps >= 1) */
  float fill[STK_GPU_AA_MAX_CHANNELS]; /* image fill of the linear warp */
  uint8_t fill8[STK_GPU_AA_MAX_CHANNELS]; /* image fill of the nearest warp (rounded) */
  /* float32 values copied from the float payload: decisions and moved boxes */
  float *dec_dst;
  int dec_off, dec_count;
  float *box_dst;
  int box_off, box_count;
} stk_gpu_aa_sample;

typedef struct {
  int interp;   /* STK_GPU_INTERP_NEAREST, _LINEAR or _CUBIC (of the image; masks: nearest) */
  int constant; /* outside pixels take the fill (else the edge repeats) */
  /* the batch's program: the samples' steps (num_steps in all), num_luts tables of 256
   * bytes, num_floats payload values, all host arrays (uploaded once) */
  int num_steps;
  const stk_gpu_aa_step *steps;
  int num_luts;
  const uint8_t *luts;
  int num_floats;
  const float *floats;
} stk_gpu_aa_args;

/* The kernel:
 * - autoaug: runs every sample's program (the steps, tables and payload of args). One
 *   upload, one launch.
 */
#define STK_GPU_KERNELS_AUTOAUG(X) X(AUTOAUG, autoaug, stk_gpu_aa_sample, stk_gpu_aa_args)

#ifdef __cplusplus
}
#endif

#endif
