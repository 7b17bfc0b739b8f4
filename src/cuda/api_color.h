/* The GPU entry points for colour operators:
 * brightness, contrast, saturation, hue, hsv, color_twist, grayscale, invert, posterize,
 * solarize(_add), equalize, auto_contrast, sharpness, color_space_conversion.
 * Launched through gpu_api.h's launch() (ids and typed launchers in gpu_kernels.h); implemented in
 * src/cuda/color.cu. The same conventions as gpu_api.h: every function returns 0 or a stk_status
 * with the message in err, queues its work on `stream` and never synchronises unless it says so. */
#ifndef STOKER_CUDA_API_COLOR_H
#define STOKER_CUDA_API_COLOR_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every colour kernel takes HWC (or HW) samples of uint8, int16, int32, float16 or
 * float32 (the kernel says which) with at most 4 channels, one input and one output dtype
 * per batch, and writes a separate output (no aliasing). Arithmetic is that of
 * src/shared/color_math.h, shared with the CPU operators. */

/* lut: dst[p, k] = table_k[src[p, k]] for uint8 input; a sample's c tables of 256
 * out_dtype values lie at byte `lut_offset` of the host array `luts` (uploaded once). */
typedef struct {
  const uint8_t *src;
  void *dst;
  int64_t pixels; /* h * w */
  int c;
  size_t lut_offset;
} stk_gpu_clr_lut_sample;

/* point: an elementwise function computed in float64 on any input dtype (the same
 * function for every channel); integer outputs use stk__from_f64's rules. */
enum {
  STK_GPU_CLR_LINEAR = 0,      /* p[1] + p[0] * x */
  STK_GPU_CLR_INVERT = 1,      /* p[0] - x */
  STK_GPU_CLR_SOLARIZE = 2,    /* x >= p[0] ? p[1] - x : x */
  STK_GPU_CLR_SOLARIZE_ADD = 3 /* x >= p[0] ? x : clamp(x + p[1], 0, p[2]) */
};
typedef struct {
  const void *src;
  void *dst;
  int64_t count; /* elements */
  int op;        /* STK_GPU_CLR_LINEAR.. */
  double p[3];
} stk_gpu_clr_point_sample;

/* pixel: a function of whole pixels (cin -> cout channels, each 1 or 3). */
enum {
  STK_GPU_CLR_AFFINE = 0, /* out[o] = off[o] + sum_j m[o * cin + j] * in[j], float64; any dtypes */
  STK_GPU_CLR_PIL_GRAY = 1, /* uint8 RGB -> PIL's integer luma, replicated to cout channels */
  STK_GPU_CLR_PIL_COLOR = 2 /* uint8 RGB: Image.blend(luma, pixel, factor) (ImageEnhance.Color) */
};
typedef struct {
  const void *src;
  void *dst;
  int64_t pixels;
  int cin, cout;
  double m[9], off[3];
  float factor;
} stk_gpu_clr_pixel_sample;

/* stats: a per-sample, per-channel reduction (histograms or sums) followed by a table
 * built from it and applied (two launches). Input uint8 except for MEAN_CONTRAST. */
enum {
  STK_GPU_CLR_EQ_PIL = 0,       /* ImageOps.equalize */
  STK_GPU_CLR_EQ_CV = 1,        /* OpenCV's equalizeHist */
  STK_GPU_CLR_AUTOCONTRAST = 2, /* ImageOps.autocontrast, p[0] / p[1]: cutoff low / high % */
  STK_GPU_CLR_PIL_CONTRAST = 3, /* ImageEnhance.Contrast, p[0]: factor (float32) */
  STK_GPU_CLR_MEAN_CONTRAST = 4 /* contrast around the mean luma: p = {nb * c, nb,
                                   shift * full_range_out, c} (brightness_contrast's terms) */
};
typedef struct {
  const void *src;
  void *dst;
  int64_t pixels;
  int c;
  double p[4];
} stk_gpu_clr_stats_sample;

/* sharpness: ImageEnhance.Sharpness on uint8 (3x3 SMOOTH blended with the image,
 * borders copied). */
typedef struct {
  const uint8_t *src;
  uint8_t *dst;
  int h, w, c;
  float factor;
} stk_gpu_clr_sharpness_sample;

/* clr_lut's batch arguments: the samples' tables, packed in one host array of lut_bytes
 * (uploaded once), and the tables' element type. */
typedef struct {
  const void *luts;
  size_t lut_bytes;
  stk_dtype out_dtype;
} stk_gpu_clr_lut_args;
/* clr_pixel's and clr_stats's: the mode (STK_GPU_CLR_AFFINE.. / the stats kernel's modes)
 * and the element types. */
typedef struct {
  int mode;
  stk_dtype in_dtype, out_dtype;
} stk_gpu_clr_mode_args;

/* The kernels: clr_lut (per-sample tables), clr_point (an elementwise function),
 * clr_pixel (a function of whole pixels), clr_stats (per-sample statistics first:
 * equalize, auto_contrast, contrast about the mean), clr_sharpness (PIL's 3x3 smoothing
 * blend). */
#define STK_GPU_KERNELS_COLOR(X)                                           \
  X(CLR_LUT, clr_lut, stk_gpu_clr_lut_sample, stk_gpu_clr_lut_args)        \
  X(CLR_POINT, clr_point, stk_gpu_clr_point_sample, stk_gpu_io_args)       \
  X(CLR_PIXEL, clr_pixel, stk_gpu_clr_pixel_sample, stk_gpu_clr_mode_args) \
  X(CLR_STATS, clr_stats, stk_gpu_clr_stats_sample, stk_gpu_clr_mode_args) \
  X(CLR_SHARPNESS, clr_sharpness, stk_gpu_clr_sharpness_sample, stk_gpu_no_args)

#ifdef __cplusplus
}
#endif

#endif
