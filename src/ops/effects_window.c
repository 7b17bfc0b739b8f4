/* Window effects: experimental.median_blur, experimental.dilate, experimental.erode,
 * experimental.debayer and clahe. The per-pixel maths is src/shared/effects_px.h;
 * effects_common.c runs it on either backend. */
#include <math.h>
#include <string.h>

#include "effects_common.h"

static const stk_port_schema win_in[] = {{"input", "HWC (or HW) image"}};
static const stk_port_schema win_out[] = {{"output", "the filtered image"}};

/* A pair argument: one value for both, or two (*a the first). The window and mask sizes
 * are [W, H], as CV-CUDA's Size2D which DALI's GPU operators take them into. */
static stk_status pair_arg(stk__node *node, stk__sample *s, int arg, const char *name, int64_t *a,
                           int64_t *b) {
  const int64_t *v;
  size_t n = stk__arg_ints(node, s, arg, &v);
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s' has %zu values; expected 1 or 2",
                      name, n);
  *a = v[0], *b = v[n - 1];
  return STK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* experimental.median_blur                                                           */
/* ---------------------------------------------------------------------------------- */

enum { MB_WINDOW, MB_COUNT_ };

static const stk_arg_schema median_args[] = {
    [MB_WINDOW] = {.name = "window_size",
                   .type = STK_ARG_INTS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .default_text = "[3, 3]",
                   .doc = "window extents [W, H] (one value: square), odd, at most 121 "
                          "elements in all"},
};
STK__CHECK_ARGS(median_args, MB_COUNT_);

static stk_status median_plan(stk__node *node, stk__sample *s, const stk__image *in,
                              const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)in, (void)extra, (void)n_extra;
  int64_t kh, kw;
  STK_TRY(pair_arg(node, s, MB_WINDOW, "window_size", &kw, &kh));
  if (kh < 1 || kw < 1 || kh % 2 == 0 || kw % 2 == 0 || kh * kw > STK_FX_MEDIAN_MAX)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "window_size [%lld, %lld]: extents must be odd and positive, with at "
                      "most %d elements",
                      (long long)kw, (long long)kh, STK_FX_MEDIAN_MAX);
  plan->p.op = STK_FX_OP_MEDIAN;
  plan->p.kh = (int)kh, plan->p.kw = (int)kw;
  return STK_OK;
}

static stk_status median_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, stk__fx_all_dtypes, 4, median_plan);
}
static stk_status median_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, stk__fx_all_dtypes, 4, median_plan);
}

static const stk_op_schema median_schema = {
    .name = "experimental.median_blur",
    .doc =
        "Replaces each element by the median of its window, channel by channel (DALI's "
        "experimental.median_blur, which DALI has on the GPU only; OpenCV's medianBlur): "
        "edges replicate. uint8, uint16, int16 or float32, exact.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = win_in,
    .num_outputs = 1,
    .outputs = win_out,
    .num_args = MB_COUNT_,
    .args = median_args,
    .gpu_check =
        "w = random.uniform(values=[1, 3, 5, 7], dtype=\"int32\")\n"
        "return experimental.median_blur(IN, window_size=w, device=@)",
};
const stk__op_def stk__op_experimental_median_blur = {
    .schema = &median_schema, .run_sample = median_run, .run_gpu = median_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* experimental.dilate / experimental.erode                                           */
/* ---------------------------------------------------------------------------------- */

enum { MO_MASK, MO_ANCHOR, MO_ITER, MO_BORDER, MO_COUNT_ };

static const stk_arg_schema morph_args[] = {
    [MO_MASK] = {.name = "mask_size",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "[3, 3]",
                 .doc = "extents [W, H] of the rectangular structuring element (one value: "
                        "square)"},
    [MO_ANCHOR] = {.name = "anchor",
                   .type = STK_ARG_INTS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .default_text = "[-1, -1]",
                   .doc = "[x, y] of the element over the output pixel; -1: the centre"},
    [MO_ITER] = {.name = "iterations",
                 .type = STK_ARG_INT,
                 .flags = STK_ARGF_RANGE,
                 .default_text = "1",
                 .min = 1,
                 .max = 1000,
                 .doc = "applications; k runs equal one with the element grown by (k - 1) "
                        "(W - 1, H - 1)"},
    [MO_BORDER] = {.name = "border_mode",
                   .type = STK_ARG_STRING,
                   .default_text = "\"constant\"",
                   .choices = STK_FX_BORDER_CHOICES,
                   .doc = "outside pixels: constant (they never win, OpenCV's default for "
                          "morphology), replicate, reflect, reflect_101 or wrap"},
};
STK__CHECK_ARGS(morph_args, MO_COUNT_);

/* The largest structuring element (after growing it for the iterations), in elements. */
#define MORPH_MAX_AREA 65536

static stk_status morph_plan(stk__node *node, stk__sample *s, int op, stk__fx_plan *plan) {
  int64_t mw, mh, ax, ay;
  STK_TRY(pair_arg(node, s, MO_MASK, "mask_size", &mw, &mh));
  STK_TRY(pair_arg(node, s, MO_ANCHOR, "anchor", &ax, &ay));
  int64_t it = stk__arg_int(node, s, MO_ITER);
  if (mw < 1 || mh < 1 || mw > 1024 || mh > 1024)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "mask_size [%lld, %lld]: extents must lie in [1, 1024]", (long long)mw,
                      (long long)mh);
  if (ax < -1 || ay < -1 || ax >= mw || ay >= mh)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "anchor [%lld, %lld] lies outside the %lldx%lld element", (long long)ax,
                      (long long)ay, (long long)mw, (long long)mh);
  if (ax < 0) ax = mw / 2;
  if (ay < 0) ay = mh / 2;
  /* every output element reads the whole grown element: bound its area */
  int64_t kw = mw + (it - 1) * (mw - 1), kh = mh + (it - 1) * (mh - 1);
  if (kw * kh > MORPH_MAX_AREA)
    return STK__SFAIL(STK_ERR_LIMIT, node, s,
                      "mask_size [%lld, %lld] with %lld iterations reads %lldx%lld elements per "
                      "pixel; at most %d",
                      (long long)mw, (long long)mh, (long long)it, (long long)kw, (long long)kh,
                      MORPH_MAX_AREA);
  stk_fx_params *p = &plan->p;
  p->op = op;
  p->kw = (int)kw, p->kh = (int)kh;
  p->ax = (int)(ax * it), p->ay = (int)(ay * it);
  p->border = stk__fx_border_parse(stk__arg_string(node, MO_BORDER));
  return STK_OK;
}

static stk_status dilate_plan(stk__node *node, stk__sample *s, const stk__image *in,
                              const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)in, (void)extra, (void)n_extra;
  return morph_plan(node, s, STK_FX_OP_DILATE, plan);
}
static stk_status erode_plan(stk__node *node, stk__sample *s, const stk__image *in,
                             const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)in, (void)extra, (void)n_extra;
  return morph_plan(node, s, STK_FX_OP_ERODE, plan);
}

static stk_status dilate_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, stk__fx_all_dtypes, 4, dilate_plan);
}
static stk_status dilate_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, stk__fx_all_dtypes, 4, dilate_plan);
}
static stk_status erode_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, stk__fx_all_dtypes, 4, erode_plan);
}
static stk_status erode_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, stk__fx_all_dtypes, 4, erode_plan);
}

#define MORPH_DOC_TAIL                                                                     \
  " over a rectangular structuring element, channel by channel (OpenCV's semantics; DALI " \
  "has this operator on the GPU only). uint8, uint16, int16 or float32, exact."

static const stk_op_schema dilate_schema = {
    .name = "experimental.dilate",
    .doc = "Dilation: each element becomes the maximum" MORPH_DOC_TAIL,
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = win_in,
    .num_outputs = 1,
    .outputs = win_out,
    .num_args = MO_COUNT_,
    .args = morph_args,
    .gpu_check = "return experimental.dilate(IN, mask_size=[5, 3], iterations=2, device=@)",
};
const stk__op_def stk__op_experimental_dilate = {
    .schema = &dilate_schema, .run_sample = dilate_run, .run_gpu = dilate_run_gpu};

static const stk_op_schema erode_schema = {
    .name = "experimental.erode",
    .doc = "Erosion: each element becomes the minimum" MORPH_DOC_TAIL,
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = win_in,
    .num_outputs = 1,
    .outputs = win_out,
    .num_args = MO_COUNT_,
    .args = morph_args,
    .gpu_check =
        "return experimental.erode(IN, mask_size=3, anchor=[0, 2], "
        "border_mode=\"reflect_101\", device=@)",
};
const stk__op_def stk__op_experimental_erode = {
    .schema = &erode_schema, .run_sample = erode_run, .run_gpu = erode_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* experimental.debayer                                                               */
/* ---------------------------------------------------------------------------------- */

enum { DB_BLUE, DB_ALGO, DB_COUNT_ };

static const stk_arg_schema debayer_args[] = {
    [DB_BLUE] = {.name = "blue_position",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                 .doc = "[y, x] of the blue sensor in the 2x2 tile that starts at the second "
                        "row and column (OpenCV's naming): [0, 0] BG (BGGR), [0, 1] GB, "
                        "[1, 0] GR, [1, 1] RG"},
    [DB_ALGO] = {.name = "algorithm",
                 .type = STK_ARG_STRING,
                 .default_text = "\"bilinear_ocv\"",
                 .choices = "bilinear_ocv|default_npp",
                 .doc = "bilinear interpolation (both names run it; DALI's GPU default_npp "
                        "differs slightly)"},
};
STK__CHECK_ARGS(debayer_args, DB_COUNT_);

static const stk_dtype u8_u16[2] = {STK_DTYPE_UINT8, STK_DTYPE_UINT16};

static stk_status debayer_plan(stk__node *node, stk__sample *s, const stk__image *in,
                               const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)extra, (void)n_extra;
  if (in->c != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "expects a single-channel mosaic (HW or HWC with C = 1), got %lld "
                      "channels",
                      (long long)in->c);
  const int64_t *v;
  size_t n = stk__arg_ints(node, s, DB_BLUE, &v);
  if (n != 2 || (v[0] != 0 && v[0] != 1) || (v[1] != 0 && v[1] != 1))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "blue_position must be [y, x] with values 0 or 1");
  /* blue at (v + 1) mod 2 of the sensor grid, red on the other diagonal: at v */
  plan->p.op = STK_FX_OP_DEBAYER;
  plan->p.ry = (int)v[0], plan->p.rx = (int)v[1];
  plan->out_c = 3;
  return STK_OK;
}

static stk_status debayer_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, u8_u16, 2, debayer_plan);
}
static stk_status debayer_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, u8_u16, 2, debayer_plan);
}

static const stk_op_schema debayer_schema = {
    .name = "experimental.debayer",
    .doc =
        "Demosaics a single-channel Bayer image into RGB by bilinear interpolation "
        "(DALI's debayer / experimental.debayer; OpenCV's cvtColor COLOR_Bayer*2RGB): a missing "
        "colour is the mean of the 2 or 4 nearest sensors of that colour, rounded half "
        "up. Edges mirror the mosaic (OpenCV copies its inner neighbour). uint8 or "
        "uint16; the output is HWC with 3 channels.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = win_in,
    .num_outputs = 1,
    .outputs = win_out,
    .num_args = DB_COUNT_,
    .args = debayer_args,
    .gpu_check =
        "g = grayscale(IN)\n"
        "return experimental.debayer(g, blue_position=[1, 0], device=@)",
};
const stk__op_def stk__op_experimental_debayer = {
    .schema = &debayer_schema, .run_sample = debayer_run, .run_gpu = debayer_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* clahe                                                                              */
/* ---------------------------------------------------------------------------------- */

enum { CL_TILES_X, CL_TILES_Y, CL_CLIP, CL_BINS, CL_LUMA, CL_COUNT_ };

static const stk_arg_schema clahe_args[] = {
    [CL_TILES_X] = {.name = "tiles_x",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_REQUIRED | STK_ARGF_RANGE,
                    .min = 1,
                    .max = 256,
                    .doc = "tiles along the width"},
    [CL_TILES_Y] = {.name = "tiles_y",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_REQUIRED | STK_ARGF_RANGE,
                    .min = 1,
                    .max = 256,
                    .doc = "tiles along the height"},
    [CL_CLIP] = {.name = "clip_limit",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_REQUIRED,
                 .doc = "relative clip limit: a bin holds at most clip_limit * tile area / 256 "
                        "pixels (truncated, at least 1); <= 0: no clipping"},
    [CL_BINS] = {.name = "bins",
                 .type = STK_ARG_INT,
                 .flags = STK_ARGF_RANGE,
                 .default_text = "256",
                 .min = 256,
                 .max = 256,
                 .doc = "histogram bins (256 only: uint8 images)"},
    [CL_LUMA] = {.name = "luma_only",
                 .type = STK_ARG_BOOL,
                 .default_text = "true",
                 .doc = "RGB input: equalise the CIE Lab lightness and keep a and b (as DALI's "
                        "CPU operator); false: each channel on its own"},
};
STK__CHECK_ARGS(clahe_args, CL_COUNT_);

static const stk_dtype u8_only[1] = {STK_DTYPE_UINT8};

static stk_status clahe_plan(stk__node *node, stk__sample *s, const stk__image *in,
                             const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)extra, (void)n_extra;
  if (in->c != 1 && in->c != 3)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "takes 1 (grey) or 3 (RGB) channels, got %lld",
                      (long long)in->c);
  stk_fx_params *p = &plan->p;
  p->op = STK_FX_OP_CLAHE;
  p->tiles_x = (int)stk__arg_int(node, s, CL_TILES_X);
  p->tiles_y = (int)stk__arg_int(node, s, CL_TILES_Y);
  if (p->tiles_x > in->w || p->tiles_y > in->h)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "%dx%d tiles do not fit the %lldx%lld image", p->tiles_y, p->tiles_x,
                      (long long)in->h, (long long)in->w);
  p->luma = in->c == 3 && stk__arg_bool(node, s, CL_LUMA);
  plan->clahe_clip = stk__arg_float(node, s, CL_CLIP);
  if (!isfinite(plan->clahe_clip))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "clip_limit is not finite");
  stk__fx_clahe_tiles(plan, in->h, in->w);
  return STK_OK;
}

static stk_status clahe_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, u8_only, 1, clahe_plan);
}
static stk_status clahe_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, u8_only, 1, clahe_plan);
}

static const stk_op_schema clahe_schema = {
    .name = "clahe",
    .doc =
        "Contrast-limited adaptive histogram equalisation (DALI's clahe, OpenCV's "
        "createCLAHE): per-tile histograms of the image padded to whole tiles "
        "(mirrored), clipped and redistributed, turned into tables that are blended "
        "bilinearly between tile centres. uint8 grey (HW or HWC with 1 channel) or RGB. "
        "Grey and per-channel results equal OpenCV's; luma_only converts RGB to CIE Lab "
        "in floating point (OpenCV uses 8-bit tables: may differ by a few levels).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = win_in,
    .num_outputs = 1,
    .outputs = win_out,
    .num_args = CL_COUNT_,
    .args = clahe_args,
    .gpu_check =
        "# atol=1 mismatch=0.001\n"
        "return clahe(IN, tiles_x=4, tiles_y=3, clip_limit=2.5, device=@)",
};
const stk__op_def stk__op_clahe = {
    .schema = &clahe_schema, .run_sample = clahe_run, .run_gpu = clahe_run_gpu};
