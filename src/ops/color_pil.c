/*
 * Operators defined by Pillow (the definitions AutoAugment, RandAugment and
 * TrivialAugment were written against) and the Pillow kernels behind the `pil` flags of
 * brightness / contrast / saturation:
 *   invert, posterize, solarize, solarize_add, equalize (+ experimental.equalize),
 *   auto_contrast, sharpness.
 *
 * Pillow's arithmetic is reproduced exactly: Image.blend computes a + alpha * (b - a) in
 * float32 and truncates; convert("L") is (19595 R + 38470 G + 7471 B + 2^15) >> 16; the
 * SMOOTH filter sums float32 products row by row starting from 0.5 and truncates; the
 * ImageOps tables use Pillow's integer formulas. DALI has no operator for most of these;
 * its equalize follows OpenCV, which is what equalize and experimental.equalize do here
 * by default (algorithm="pil" is Pillow's).
 */
#include <float.h>
#include <string.h>

#include "color.h"
#include "color_gpu.h"

/* ---------------------------------------------------------------------------------- */
/* Kernels                                                                            */
/* ---------------------------------------------------------------------------------- */

/* One element of Image.blend (color_math.h). */
#define blend1 stk_color_blend1

void stk__pil_blend(const uint8_t *a, const uint8_t *b, uint8_t *out, size_t n, float alpha) {
  for (size_t i = 0; i < n; i++) out[i] = blend1(a[i], b[i], alpha);
}

/* Blending with a constant is a function of the element value: use a table. */
static void blend_constant(const stk__image *src, const stk__image *dst, uint8_t degenerate,
                           float alpha) {
  uint8_t lut[256];
  for (int v = 0; v < 256; v++) lut[v] = blend1(degenerate, (uint8_t)v, alpha);
  const uint8_t *s = src->data;
  uint8_t *d = dst->data;
  for (size_t i = 0, n = (size_t)(src->h * src->w * src->c); i < n; i++) d[i] = lut[s[i]];
}

void stk__pil_brightness(const stk__image *src, const stk__image *dst, float factor) {
  blend_constant(src, dst, 0, factor);
}

int stk__pil_contrast_center(const stk__image *src) {
  const uint8_t *p = src->data;
  size_t n = (size_t)(src->h * src->w);
  uint64_t sum = 0;
  if (src->c == 3) {
    for (size_t i = 0; i < n; i++, p += 3) sum += stk__pil_luma(p[0], p[1], p[2]);
  } else {
    for (size_t i = 0; i < n; i++, p += src->c) sum += p[0];
  }
  double mean = n ? (double)sum / (double)n : 0.0;
  return (int)(mean + 0.5);
}

void stk__pil_contrast(const stk__image *src, const stk__image *dst, float factor) {
  blend_constant(src, dst, (uint8_t)stk__pil_contrast_center(src), factor);
}

void stk__pil_color(const stk__image *src, const stk__image *dst, float factor) {
  size_t n = (size_t)(src->h * src->w);
  if (src->c != 3) { /* a gray image is its own degenerate */
    memcpy(dst->data, src->data, n * (size_t)src->c);
    return;
  }
  const uint8_t *p = src->data;
  uint8_t *d = dst->data;
  for (size_t i = 0; i < n; i++, p += 3, d += 3) {
    uint8_t l = stk__pil_luma(p[0], p[1], p[2]);
    d[0] = blend1(l, p[0], factor), d[1] = blend1(l, p[1], factor), d[2] = blend1(l, p[2], factor);
  }
}

void stk__pil_sharpness(const stk__image *src, const stk__image *dst, float factor) {
  size_t c = (size_t)src->c, w = (size_t)src->w, rowb = w * c;
  memcpy(dst->data, src->data, (size_t)src->h * rowb); /* borders: the image itself */
  if (src->h < 3 || src->w < 3) return;
  for (int64_t y = 1; y + 1 < src->h; y++) {
    const uint8_t *s = (const uint8_t *)src->data + (size_t)y * rowb;
    uint8_t *d = (uint8_t *)dst->data + (size_t)y * rowb;
    for (size_t i = c; i < rowb - c; i++)
      d[i] = blend1(stk_color_smooth_at(s + i, (long)rowb, (long)c), s[i], factor);
  }
}

void stk__histograms_u8(const stk__image *src, uint64_t *hist) {
  size_t c = (size_t)src->c, n = (size_t)(src->h * src->w);
  memset(hist, 0, c * 256 * sizeof *hist);
  const uint8_t *p = src->data;
  if (c == 3) {
    for (size_t i = 0; i < n; i++, p += 3) hist[p[0]]++, hist[256 + p[1]]++, hist[512 + p[2]]++;
    return;
  }
  for (size_t i = 0; i < n; i++, p += c)
    for (size_t k = 0; k < c; k++) hist[k * 256 + p[k]]++;
}

void stk__pil_equalize_lut(const uint64_t *hist, uint8_t *lut) {
  stk_color_pil_equalize_lut(hist, lut);
}

void stk__cv_equalize_lut(const uint64_t *hist, uint8_t *lut) {
  stk_color_cv_equalize_lut(hist, lut);
}

void stk__pil_autocontrast_lut(const uint64_t *hist, double cutoff_lo, double cutoff_hi,
                               uint8_t *lut) {
  uint64_t h[256];
  memcpy(h, hist, sizeof h);
  stk_color_autocontrast_lut(h, cutoff_lo, cutoff_hi, lut);
}

/* ---------------------------------------------------------------------------------- */
/* Operator plumbing                                                                  */
/* ---------------------------------------------------------------------------------- */

static const stk_port_schema image_in[] = {{"input", "HWC image (or HW)"}};
static const stk_port_schema image_out[] = {{"output", "the processed image"}};
static const stk_dtype u8_only[] = {STK_DTYPE_UINT8};
static const stk_dtype u8_f32[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};

/* Opens the input (of `types`) and an output of the same type and shape. */
static stk_status open_same(stk__node *node, stk__sample *s, const stk_dtype *types, int ntypes,
                            stk__image *src, stk__image *dst) {
  STK_TRY(stk__image_input(node, s, 0, types, ntypes, src));
  *dst = *src;
  return stk__image_output(s, stk__input(s, 0)->ndim, dst);
}

/* Runs a point function on the image: a table for uint8, rows of doubles otherwise. */
static stk_status run_point(stk__node *node, stk__sample *s, const stk__image *src,
                            const stk__image *dst, stk__point_fn f, const void *ctx) {
  size_t bytes = stk__point_map_scratch(src, dst);
  void *scratch = stk__scratch(s, bytes);
  if (!scratch) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  return stk__sample_wrap(stk__point_map(src, dst, f, ctx, scratch, bytes), node, s);
}

typedef struct {
  double max, threshold, shift;
  uint8_t mask;
} point_ctx;

/* A point function for the GPU: uint8 input through the CPU's own table, float32 input
 * through the device's float64 map `op` with parameters a, b, c (op < 0: uint8 only). */
static stk_status point_plan(const stk__cg_in *in, stk__cg_plan *pl, stk__point_fn f,
                             const void *ctx, int op, double a, double b, double c) {
  if (in->dtype == STK_DTYPE_UINT8 || op < 0) {
    pl->kind = STK__CG_LUT;
    stk__point_lut(f, ctx, in->c, pl->out_dtype, pl->lut);
    return STK_OK;
  }
  pl->kind = STK__CG_POINT;
  pl->point_op = op;
  pl->p[0] = a, pl->p[1] = b, pl->p[2] = c;
  return STK_OK;
}

/* ---- invert ---- */

static double invert_fn(double x, int64_t c, const void *ctx) {
  return stk_color_invert(x, ((const point_ctx *)ctx)->max);
}

static stk_status invert_run(stk__node *node, stk__sample *s) {
  stk__image src, dst;
  STK_TRY(open_same(node, s, u8_f32, 2, &src, &dst));
  point_ctx k = {.max = stk__dtype_full_range(src.dtype)};
  return run_point(node, s, &src, &dst, invert_fn, &k);
}

static stk_status invert_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                              stk__cg_plan *pl) {
  point_ctx k = {.max = stk__dtype_full_range(in->dtype)};
  return point_plan(in, pl, invert_fn, &k, STK_GPU_CLR_INVERT, k.max, 0.0, 0.0);
}

static stk_status invert_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_f32, 2, invert_plan);
}

static const stk_op_schema invert_schema = {
    .name = "invert",
    .doc =
        "Inverts the image: 255 - x for uint8, 1 - x for float32 (a stoker operator, PIL's "
        "ImageOps.invert; DALI has none).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = 0,
    .args = NULL,
    .gpu_check = "return invert(IN, device=@)",
};
const stk__op_def stk__op_invert = {
    .schema = &invert_schema,
    .run_sample = invert_run,
    .run_gpu = invert_run_gpu,
};

/* ---- posterize ---- */

enum { P_BITS, POSTERIZE_ARGS_COUNT_ };
static const stk_arg_schema posterize_args[] = {
    [P_BITS] = {.name = "bits",
                .type = STK_ARG_INT,
                .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                .default_text = "4",
                .max = 8,
                .doc = "number of high bits kept per channel, 0..8 (8 keeps the image)"},
};
STK__CHECK_ARGS(posterize_args, POSTERIZE_ARGS_COUNT_);

static double posterize_fn(double x, int64_t c, const void *ctx) {
  return (double)((uint8_t)x & ((const point_ctx *)ctx)->mask);
}

static stk_status posterize_run(stk__node *node, stk__sample *s) {
  int64_t bits = stk__arg_int(node, s, P_BITS);
  if (bits < 0 || bits > 8)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "argument 'bits' = %lld is out of "
                      "range [0, 8]",
                      (long long)bits);
  stk__image src, dst;
  STK_TRY(open_same(node, s, u8_only, 1, &src, &dst));
  point_ctx k = {.mask = stk_color_posterize_mask((int)bits)};
  return run_point(node, s, &src, &dst, posterize_fn, &k);
}

static stk_status posterize_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                 stk__cg_plan *pl) {
  int64_t bits = stk__arg_int(node, s, P_BITS);
  if (bits < 0 || bits > 8)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "argument 'bits' = %lld is out of "
                      "range [0, 8]",
                      (long long)bits);
  point_ctx k = {.mask = stk_color_posterize_mask((int)bits)};
  return point_plan(in, pl, posterize_fn, &k, -1, 0.0, 0.0, 0.0);
}

static stk_status posterize_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_only, 1, posterize_plan);
}

static const stk_op_schema posterize_schema = {
    .name = "posterize",
    .doc =
        "Keeps the top `bits` bits of every uint8 channel value (PIL's ImageOps.posterize: x & "
        "~(2^(8 - bits) - 1)).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof posterize_args / sizeof posterize_args[0],
    .args = posterize_args,
    .gpu_check =
        "bits = random.uniform(values=[1, 3, 4, 8], dtype=\"int32\")\n"
        "return posterize(IN, bits=bits, device=@)",
};
const stk__op_def stk__op_posterize = {
    .schema = &posterize_schema,
    .run_sample = posterize_run,
    .run_gpu = posterize_run_gpu,
};

/* ---- solarize / solarize_add ---- */

/* The threshold argument: given, or 128 (uint8) / 0.5 (float32). */
static stk_status threshold_arg(stk__node *node, stk__sample *s, int arg, stk_dtype dtype,
                                double *out) {
  if (!stk__arg_given(node, arg)) {
    *out = stk__dtype_half_range(dtype);
    return STK_OK;
  }
  return stk__float_arg_in(node, s, arg, "threshold", -DBL_MAX, DBL_MAX, out);
}

enum { S_THRESHOLD, SOLARIZE_ARGS_COUNT_ };
static const stk_arg_schema solarize_args[] = {
    [S_THRESHOLD] =
        {.name = "threshold",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc = "values >= threshold are inverted; default 128 for uint8, 0.5 for float32"},
};
STK__CHECK_ARGS(solarize_args, SOLARIZE_ARGS_COUNT_);

static double solarize_fn(double x, int64_t c, const void *ctx) {
  const point_ctx *k = ctx;
  return stk_color_solarize(x, k->threshold, k->max);
}

static stk_status solarize_run(stk__node *node, stk__sample *s) {
  stk__image src, dst;
  STK_TRY(open_same(node, s, u8_f32, 2, &src, &dst));
  point_ctx k = {.max = stk__dtype_full_range(src.dtype)};
  STK_TRY(threshold_arg(node, s, S_THRESHOLD, src.dtype, &k.threshold));
  return run_point(node, s, &src, &dst, solarize_fn, &k);
}

static stk_status solarize_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                stk__cg_plan *pl) {
  point_ctx k = {.max = stk__dtype_full_range(in->dtype)};
  STK_TRY(threshold_arg(node, s, S_THRESHOLD, in->dtype, &k.threshold));
  return point_plan(in, pl, solarize_fn, &k, STK_GPU_CLR_SOLARIZE, k.threshold, k.max, 0.0);
}

static stk_status solarize_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_f32, 2, solarize_plan);
}

static const stk_op_schema solarize_schema = {
    .name = "solarize",
    .doc =
        "Inverts the values at or above `threshold` (PIL's ImageOps.solarize: x < threshold ? "
        "x : 255 - x; 1 - x for float32).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof solarize_args / sizeof solarize_args[0],
    .args = solarize_args,
    .gpu_check =
        "t = random.uniform(range=[0.0, 255.0])\n"
        "return solarize(IN, threshold=t, device=@)",
};
const stk__op_def stk__op_solarize = {
    .schema = &solarize_schema,
    .run_sample = solarize_run,
    .run_gpu = solarize_run_gpu,
};

enum { SA_SHIFT, SA_THRESHOLD, SOLARIZE_ADD_ARGS_COUNT_ };
static const stk_arg_schema solarize_add_args[] = {
    [SA_SHIFT] = {.name = "shift",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .default_text = "0.0",
                  .doc = "added to the values below threshold, then clamped to the type's range"},
    [SA_THRESHOLD] = {.name = "threshold",
                      .type = STK_ARG_FLOAT,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .doc = "values below it are shifted; default 128 for uint8, 0.5 for float32"},
};
STK__CHECK_ARGS(solarize_add_args, SOLARIZE_ADD_ARGS_COUNT_);

static double solarize_add_fn(double x, int64_t c, const void *ctx) {
  const point_ctx *k = ctx;
  return stk_color_solarize_add(x, k->threshold, k->shift, k->max);
}

static stk_status solarize_add_run(stk__node *node, stk__sample *s) {
  stk__image src, dst;
  STK_TRY(open_same(node, s, u8_f32, 2, &src, &dst));
  point_ctx k = {.max = stk__dtype_full_range(src.dtype)};
  STK_TRY(threshold_arg(node, s, SA_THRESHOLD, src.dtype, &k.threshold));
  STK_TRY(stk__float_arg_in(node, s, SA_SHIFT, "shift", -DBL_MAX, DBL_MAX, &k.shift));
  return run_point(node, s, &src, &dst, solarize_add_fn, &k);
}

static stk_status solarize_add_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                    stk__cg_plan *pl) {
  point_ctx k = {.max = stk__dtype_full_range(in->dtype)};
  STK_TRY(threshold_arg(node, s, SA_THRESHOLD, in->dtype, &k.threshold));
  STK_TRY(stk__float_arg_in(node, s, SA_SHIFT, "shift", -DBL_MAX, DBL_MAX, &k.shift));
  return point_plan(in, pl, solarize_add_fn, &k, STK_GPU_CLR_SOLARIZE_ADD, k.threshold, k.shift,
                    k.max);
}

static stk_status solarize_add_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_f32, 2, solarize_add_plan);
}

static const stk_op_schema solarize_add_schema = {
    .name = "solarize_add",
    .doc =
        "Adds `shift` to the values below `threshold` and clamps to the type's range (the "
        "SolarizeAdd of AutoAugment's reference code: x < threshold ? clip(x + shift) : x). "
        "A stoker operator.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof solarize_add_args / sizeof solarize_add_args[0],
    .args = solarize_add_args,
    .gpu_check =
        "s = random.uniform(range=[-100.0, 100.0])\n"
        "return solarize_add(IN, shift=s, threshold=128, device=@)",
};
const stk__op_def stk__op_solarize_add = {
    .schema = &solarize_add_schema,
    .run_sample = solarize_add_run,
    .run_gpu = solarize_add_run_gpu,
};

/* ---- equalize / experimental.equalize ---- */

enum { E_ALGORITHM, EQUALIZE_ARGS_COUNT_ };
#define EQ_ALGORITHM_DOC                                                                \
  "\"pil\": ImageOps.equalize (step = (pixels - count of the last used level) // 255, " \
  "table = (step // 2 + cumulative count below) // step); \"opencv\": equalizeHist "    \
  "(cumulative count minus the first used level's, scaled to 0..255 and rounded)"
/* equalize and experimental.equalize both default to DALI's (OpenCV's) algorithm, as
 * DALI's fn.equalize and fn.experimental.equalize do; algorithm="pil" is Pillow's. */
static const stk_arg_schema equalize_args[] = {
    [E_ALGORITHM] = {.name = "algorithm",
                     .type = STK_ARG_STRING,
                     .default_text = "\"opencv\"",
                     .choices = "pil|opencv",
                     .doc = EQ_ALGORITHM_DOC},
};
STK__CHECK_ARGS(equalize_args, EQUALIZE_ARGS_COUNT_);

/* Builds each channel's table from its histogram and applies it. */
static stk_status equalize_run(stk__node *node, stk__sample *s) {
  stk__image src, dst;
  STK_TRY(open_same(node, s, u8_only, 1, &src, &dst));
  bool pil = strcmp(stk__arg_string(node, E_ALGORITHM), "pil") == 0;
  size_t c = (size_t)src.c;
  uint64_t *hist = stk__scratch(s, c * 256 * sizeof(uint64_t));
  uint8_t *lut = stk__scratch(s, c * 256);
  if (!hist || !lut) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  stk__histograms_u8(&src, hist);
  for (size_t k = 0; k < c; k++)
    (pil ? stk__pil_equalize_lut : stk__cv_equalize_lut)(hist + k * 256, lut + k * 256);
  stk__apply_lut_u8(&src, &dst, lut);
  return STK_OK;
}

static stk_status equalize_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                stk__cg_plan *pl) {
  pl->kind = STK__CG_STATS;
  pl->mode = strcmp(stk__arg_string(node, E_ALGORITHM), "pil") == 0 ? STK_GPU_CLR_EQ_PIL
                                                                    : STK_GPU_CLR_EQ_CV;
  return STK_OK;
}

static stk_status equalize_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_only, 1, equalize_plan);
}

static const stk_op_schema equalize_schema = {
    .name = "equalize",
    .doc =
        "Equalizes the histogram of every channel of a uint8 image (DALI's equalize): by "
        "default as DALI, following OpenCV's equalizeHist; algorithm=\"pil\" gives Pillow's "
        "ImageOps.equalize (what AutoAugment's reference code uses), exactly.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof equalize_args / sizeof equalize_args[0],
    .args = equalize_args,
    .gpu_check = "return equalize(IN, device=@)",
};
const stk__op_def stk__op_equalize = {
    .schema = &equalize_schema,
    .run_sample = equalize_run,
    .run_gpu = equalize_run_gpu,
};

static const stk_op_schema x_equalize_schema = {
    .name = "experimental.equalize",
    .doc =
        "DALI's experimental.equalize: per-channel histogram equalization of uint8 images, "
        "following OpenCV's equalizeHist by default (algorithm=\"pil\" gives Pillow's).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof equalize_args / sizeof equalize_args[0],
    .args = equalize_args,
    .gpu_check = "return experimental.equalize(IN, device=@)",
};
const stk__op_def stk__op_experimental_equalize = {
    .schema = &x_equalize_schema,
    .run_sample = equalize_run,
    .run_gpu = equalize_run_gpu,
};

/* ---- auto_contrast ---- */

enum { AC_CUTOFF, AUTOCONTRAST_ARGS_COUNT_ };
static const stk_arg_schema autocontrast_args[] = {
    [AC_CUTOFF] =
        {.name = "cutoff",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_PER_SAMPLE,
         .default_text = "[0.0]",
         .doc =
             "percent of pixels cut from the dark and the bright end before stretching: one value "
             "for both or [low, high], each in [0, 100)"},
};
STK__CHECK_ARGS(autocontrast_args, AUTOCONTRAST_ARGS_COUNT_);

/* The low and high cutoffs of this sample, checked. */
static stk_status cutoff_args(stk__node *node, stk__sample *s, double *lo, double *hi) {
  const double *cut;
  size_t ncut = stk__arg_floats(node, s, AC_CUTOFF, &cut);
  if (ncut != 1 && ncut != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "argument 'cutoff' has %zu values; "
                      "expected 1 or 2",
                      ncut);
  *lo = cut[0], *hi = cut[ncut - 1];
  if (!(*lo >= 0 && *lo < 100 && *hi >= 0 && *hi < 100))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "argument 'cutoff' = [%g, %g] is out "
                      "of range [0, 100)",
                      *lo, *hi);
  return STK_OK;
}

static stk_status autocontrast_run(stk__node *node, stk__sample *s) {
  double lo, hi;
  STK_TRY(cutoff_args(node, s, &lo, &hi));
  stk__image src, dst;
  STK_TRY(open_same(node, s, u8_only, 1, &src, &dst));
  size_t c = (size_t)src.c;
  uint64_t *hist = stk__scratch(s, c * 256 * sizeof(uint64_t));
  uint8_t *lut = stk__scratch(s, c * 256);
  if (!hist || !lut) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  stk__histograms_u8(&src, hist);
  for (size_t k = 0; k < c; k++) stk__pil_autocontrast_lut(hist + k * 256, lo, hi, lut + k * 256);
  stk__apply_lut_u8(&src, &dst, lut);
  return STK_OK;
}

static stk_status autocontrast_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                    stk__cg_plan *pl) {
  double lo, hi;
  STK_TRY(cutoff_args(node, s, &lo, &hi));
  pl->kind = STK__CG_STATS;
  pl->mode = STK_GPU_CLR_AUTOCONTRAST;
  pl->p[0] = lo, pl->p[1] = hi;
  return STK_OK;
}

static stk_status autocontrast_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_only, 1, autocontrast_plan);
}

static const stk_op_schema autocontrast_schema = {
    .name = "auto_contrast",
    .doc =
        "Stretches every channel of a uint8 image so that its darkest value becomes 0 and its "
        "brightest 255 (Pillow's ImageOps.autocontrast, exactly: table int(x * 255 / (hi - lo) "
        "- lo * 255 / (hi - lo)), clamped; a channel with one value is kept). A stoker "
        "operator.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof autocontrast_args / sizeof autocontrast_args[0],
    .args = autocontrast_args,
    .gpu_check = "return auto_contrast(IN, cutoff=[2.0], device=@)",
};
const stk__op_def stk__op_auto_contrast = {
    .schema = &autocontrast_schema,
    .run_sample = autocontrast_run,
    .run_gpu = autocontrast_run_gpu,
};

/* ---- sharpness ---- */

enum { SH_SHARPNESS, SHARPNESS_ARGS_COUNT_ };
static const stk_arg_schema sharpness_args[] = {
    [SH_SHARPNESS] = {.name = "sharpness",
                      .type = STK_ARG_FLOAT,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .default_text = "1.0",
                      .doc =
                          "factor: 0 gives the smoothed image, 1 the original, 2 a sharpened one"},
};
STK__CHECK_ARGS(sharpness_args, SHARPNESS_ARGS_COUNT_);

static stk_status sharpness_run(stk__node *node, stk__sample *s) {
  double f;
  STK_TRY(stk__float_arg_in(node, s, SH_SHARPNESS, "sharpness", -DBL_MAX, DBL_MAX, &f));
  stk__image src, dst;
  STK_TRY(open_same(node, s, u8_only, 1, &src, &dst));
  stk__pil_sharpness(&src, &dst, (float)f);
  return STK_OK;
}

static stk_status sharpness_plan(stk__node *node, stk__sample *s, const stk__cg_in *in,
                                 stk__cg_plan *pl) {
  double f;
  STK_TRY(stk__float_arg_in(node, s, SH_SHARPNESS, "sharpness", -DBL_MAX, DBL_MAX, &f));
  pl->kind = STK__CG_SHARPNESS;
  pl->factor = (float)f;
  return STK_OK;
}

static stk_status sharpness_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__color_run_gpu(node, b, u8_only, 1, sharpness_plan);
}

static const stk_op_schema sharpness_schema = {
    .name = "sharpness",
    .doc =
        "Pillow's ImageEnhance.Sharpness on uint8 images, exactly: Image.blend(smoothed, image, "
        "sharpness) where smoothed is ImageFilter.SMOOTH ([[1, 1, 1], [1, 5, 1], [1, 1, 1]] / "
        "13) with the 1-pixel border kept from the image. A stoker operator (DALI's AutoAugment "
        "builds it from a 3x3 filter).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = image_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof sharpness_args / sizeof sharpness_args[0],
    .args = sharpness_args,
    .gpu_check =
        "s = random.uniform(range=[0.0, 2.0])\n"
        "return sharpness(IN, sharpness=s, device=@)",
};
const stk__op_def stk__op_sharpness = {
    .schema = &sharpness_schema,
    .run_sample = sharpness_run,
    .run_gpu = sharpness_run_gpu,
};
