/* The displacement effects: water, sphere, jitter (DALI's), experimental.warp_perspective
 * and experimental.remap. Each describes, per sample, where output pixel (x, y) reads the
 * input (src/shared/effects_px.h); effects_common.c runs that on either backend. */
#include <math.h>
#include <string.h>

#include "effects_common.h"

#define INTERP_CHOICES "nearest|linear|cubic"
#define MASK_DOC                                                                      \
  "0: leave the sample unchanged; non-zero: apply the effect (per sample, e.g. from " \
  "random.coin_flip)"

static const stk_port_schema fx_in[] = {{"input", "HWC (or HW) image"}};
static const stk_port_schema fx_out[] = {{"output", "the transformed image"}};

/* The interp_type argument (the schema's choices guarantee a known name). */
static int interp_arg(const stk__node *node, int arg) {
  int i = stk__fx_interp_parse(stk__arg_string(node, arg));
  return i < 0 ? STK_FX_LINEAR : i;
}

/* A scalar fill for every channel. */
static void scalar_fill(stk_fx_params *p, double v) {
  p->nfill = 1;
  p->fill[0] = (float)v;
}

/* The arguments water, sphere and jitter share (DALI's), at their enum entries. */
#define FX_FILL_ARG                                                   \
  {                                                                   \
    .name = "fill_value", .type = STK_ARG_FLOAT, .default_text = "0", \
    .doc = "value of pixels read from outside the image"              \
  }
#define FX_INTERP_ARG                                                             \
  {                                                                               \
    .name = "interp_type", .type = STK_ARG_STRING, .default_text = "\"nearest\"", \
    .choices = INTERP_CHOICES, .doc = "nearest, linear or cubic"                  \
  }
#define FX_MASK_ARG                                                                         \
  {                                                                                         \
    .name = "mask", .type = STK_ARG_INT, .flags = STK_ARGF_PER_SAMPLE, .default_text = "1", \
    .doc = MASK_DOC                                                                         \
  }

/* What water, sphere and jitter plan alike: `op` where the sample's mask is set (else a
 * copy), the filter, a constant border of the scalar fill. */
static void displacement_plan(stk__node *node, stk__sample *s, int op, int mask_arg, int interp,
                              int fill_arg, stk_fx_params *p) {
  p->op = stk__arg_int(node, s, mask_arg) ? op : STK_FX_OP_COPY;
  p->interp = interp_arg(node, interp);
  p->border = STK_FX_BORDER_CONSTANT;
  scalar_fill(p, stk__arg_float(node, s, fill_arg));
}

/* ---------------------------------------------------------------------------------- */
/* water                                                                              */
/* ---------------------------------------------------------------------------------- */

enum {
  WA_AMPL_X,
  WA_AMPL_Y,
  WA_FREQ_X,
  WA_FREQ_Y,
  WA_PHASE_X,
  WA_PHASE_Y,
  WA_FILL,
  WA_INTERP,
  WA_MASK,
  WA_COUNT_
};

static const stk_arg_schema water_args[] = {
    [WA_AMPL_X] = {.name = "ampl_x",
                   .type = STK_ARG_FLOAT,
                   .default_text = "10",
                   .doc = "amplitude of the wave moving pixels along x"},
    [WA_AMPL_Y] = {.name = "ampl_y",
                   .type = STK_ARG_FLOAT,
                   .default_text = "10",
                   .doc = "amplitude of the wave moving pixels along y"},
    [WA_FREQ_X] = {.name = "freq_x",
                   .type = STK_ARG_FLOAT,
                   .default_text = "0.049087",
                   .doc = "frequency (radians per row) of the x displacement"},
    [WA_FREQ_Y] = {.name = "freq_y",
                   .type = STK_ARG_FLOAT,
                   .default_text = "0.049087",
                   .doc = "frequency (radians per column) of the y displacement"},
    [WA_PHASE_X] = {.name = "phase_x",
                    .type = STK_ARG_FLOAT,
                    .default_text = "0",
                    .doc = "phase of the x displacement"},
    [WA_PHASE_Y] = {.name = "phase_y",
                    .type = STK_ARG_FLOAT,
                    .default_text = "0",
                    .doc = "phase of the y displacement"},
    [WA_FILL] = FX_FILL_ARG,
    [WA_INTERP] = FX_INTERP_ARG,
    [WA_MASK] = FX_MASK_ARG,
};
STK__CHECK_ARGS(water_args, WA_COUNT_);

static stk_status water_plan(stk__node *node, stk__sample *s, const stk__image *in,
                             const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)in, (void)extra, (void)n_extra;
  stk_fx_params *p = &plan->p;
  displacement_plan(node, s, STK_FX_OP_WATER, WA_MASK, WA_INTERP, WA_FILL, p);
  for (int k = 0; k < 6; k++) {
    double v = stk__arg_float(node, s, WA_AMPL_X + k);
    if (!isfinite(v) || fabs(v) > 1e6)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s' = %g is not a usable number",
                        water_args[WA_AMPL_X + k].name, v);
    p->wave[k] = (float)v;
  }
  return STK_OK;
}

static const stk_dtype u8_f32[2] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32};

static stk_status water_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, u8_f32, 2, water_plan);
}
static stk_status water_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, u8_f32, 2, water_plan);
}

static const stk_op_schema water_schema = {
    .name = "water",
    .doc =
        "Makes the image look as if seen through water (DALI's water): output pixel (x, y) "
        "(indices) reads the input at pixel-edge coordinates (x + ampl_x sin(freq_x y + "
        "phase_x), y + ampl_y cos(freq_y x + phase_y)), the formula DALI 2.4's CPU operator "
        "computes. uint8 or float32 input, any channel count; pixels read from outside "
        "take fill_value.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = fx_in,
    .num_outputs = 1,
    .outputs = fx_out,
    .num_args = WA_COUNT_,
    .args = water_args,
    .gpu_check =
        "# atol=1 mismatch=0.001\n"
        "m = random.coin_flip(probability=0.8)\n"
        "return water(IN, ampl_x=6, ampl_y=4, freq_x=0.07, phase_y=0.3, "
        "interp_type=\"linear\", mask=m, device=@)",
};
const stk__op_def stk__op_water = {
    .schema = &water_schema, .run_sample = water_run, .run_gpu = water_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* sphere                                                                             */
/* ---------------------------------------------------------------------------------- */

enum { SP_FILL, SP_INTERP, SP_MASK, SP_COUNT_ };

static const stk_arg_schema sphere_args[] = {
    [SP_FILL] = FX_FILL_ARG,
    [SP_INTERP] = FX_INTERP_ARG,
    [SP_MASK] = FX_MASK_ARG,
};
STK__CHECK_ARGS(sphere_args, SP_COUNT_);

static stk_status sphere_plan(stk__node *node, stk__sample *s, const stk__image *in,
                              const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)in, (void)extra, (void)n_extra;
  stk_fx_params *p = &plan->p;
  displacement_plan(node, s, STK_FX_OP_SPHERE, SP_MASK, SP_INTERP, SP_FILL, p);
  return STK_OK;
}

static stk_status sphere_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, u8_f32, 2, sphere_plan);
}
static stk_status sphere_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, u8_f32, 2, sphere_plan);
}

static const stk_op_schema sphere_schema = {
    .name = "sphere",
    .doc =
        "Bulges the image as if wrapped on a sphere (DALI's sphere): with the centre c = "
        "(w / 2, h / 2) and d = max(floor(w / 2), floor(h / 2)), the pixel centre p reads "
        "the input at c + (p - c) |p - c| / d (pixel-edge coordinates; measured on DALI "
        "2.4's CPU operator). uint8 or float32 input; outside reads take fill_value.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = fx_in,
    .num_outputs = 1,
    .outputs = fx_out,
    .num_args = SP_COUNT_,
    .args = sphere_args,
    .gpu_check =
        "# atol=1 mismatch=0.001\n"
        "m = random.coin_flip(probability=0.8)\n"
        "return sphere(IN, interp_type=\"linear\", fill_value=20, mask=m, device=@)",
};
const stk__op_def stk__op_sphere = {
    .schema = &sphere_schema, .run_sample = sphere_run, .run_gpu = sphere_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* jitter                                                                             */
/* ---------------------------------------------------------------------------------- */

enum { JI_NDEGREE, JI_FILL, JI_INTERP, JI_MASK, JI_SEED, JI_COUNT_ };

static const stk_arg_schema jitter_args[] = {
    [JI_NDEGREE] = {.name = "nDegree",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_RANGE,
                    .default_text = "2",
                    .min = 0,
                    .max = 1 << 20,
                    .doc = "each pixel moves by a random amount in [-nDegree/2, nDegree/2) "
                           "along x and along y"},
    [JI_FILL] = FX_FILL_ARG,
    [JI_INTERP] = FX_INTERP_ARG,
    [JI_MASK] = FX_MASK_ARG,
    [JI_SEED] = {.name = "seed",
                 .type = STK_ARG_INT,
                 .default_text = "-1",
                 .doc = "random seed (-1: derived from the pipeline's seed)"},
};
STK__CHECK_ARGS(jitter_args, JI_COUNT_);

static stk_status jitter_plan(stk__node *node, stk__sample *s, const stk__image *in,
                              const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)in, (void)extra, (void)n_extra;
  stk_fx_params *p = &plan->p;
  displacement_plan(node, s, STK_FX_OP_JITTER, JI_MASK, JI_INTERP, JI_FILL, p);
  p->jitter_n = (int)stk__arg_int(node, s, JI_NDEGREE);
  stk__philox g;
  stk__sample_rng(node, s, &g);
  p->rng = (stk_noise_stream){{g.key[0], g.key[1]}, {g.counter[2], g.counter[3]}};
  return STK_OK;
}

static stk_status jitter_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, u8_f32, 2, jitter_plan);
}
static stk_status jitter_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, u8_f32, 2, jitter_plan);
}

static const stk_op_schema jitter_schema = {
    .name = "jitter",
    .doc =
        "Moves every pixel by a random offset (DALI's jitter, which DALI has on the GPU "
        "only): output pixel (x, y) reads the input at its centre plus (dx, dy), each "
        "uniform in [-nDegree/2, nDegree/2), drawn per pixel from the node's counter-based "
        "stream (Philox block y w + x of the sample), so the CPU and the GPU give the "
        "same image. DALI draws its offsets with its own generator: the values differ, "
        "the distribution is the documented one.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = fx_in,
    .num_outputs = 1,
    .outputs = fx_out,
    .num_args = JI_COUNT_,
    .args = jitter_args,
    .gpu_check = "return jitter(IN, nDegree=5, seed=7, device=@)",
};
const stk__op_def stk__op_jitter = {
    .schema = &jitter_schema, .run_sample = jitter_run, .run_gpu = jitter_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* experimental.warp_perspective                                                      */
/* ---------------------------------------------------------------------------------- */

enum { WP_MATRIX, WP_INVERSE, WP_SIZE, WP_FILL, WP_INTERP, WP_BORDER, WP_ORIGIN, WP_COUNT_ };

static const stk_arg_schema wp_args[] = {
    [WP_MATRIX] = {.name = "matrix",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "3x3 row-major perspective matrix mapping output to input "
                          "coordinates (with inverse_map); may instead come as input 1"},
    [WP_INVERSE] = {.name = "inverse_map",
                    .type = STK_ARG_BOOL,
                    .default_text = "true",
                    .doc = "true: the matrix maps output to input; false: input to output "
                           "(it is inverted; OpenCV's WARP_INVERSE_MAP flag)"},
    [WP_SIZE] = {.name = "size",
                 .type = STK_ARG_FLOATS,
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                 .min = 0,
                 .max = 1e9,
                 .doc = "output size [H, W] (rounded to nearest); the input's when absent"},
    [WP_FILL] = {.name = "fill_value",
                 .type = STK_ARG_FLOATS,
                 .default_text = "[]",
                 .doc = "constant border: one value, or one per channel; [] is 0"},
    [WP_INTERP] = {.name = "interp_type",
                   .type = STK_ARG_STRING,
                   .default_text = "\"linear\"",
                   .choices = INTERP_CHOICES,
                   .doc = "nearest, linear or cubic (OpenCV's a = -0.75)"},
    [WP_BORDER] = {.name = "border_mode",
                   .type = STK_ARG_STRING,
                   .default_text = "\"constant\"",
                   .choices = STK_FX_BORDER_CHOICES,
                   .doc = "how pixels outside the input are read (OpenCV's border modes)"},
    [WP_ORIGIN] = {.name = "pixel_origin",
                   .type = STK_ARG_STRING,
                   .default_text = "\"corner\"",
                   .choices = "corner|center",
                   .doc = "corner: (0, 0) is the top-left corner of the first pixel; center: "
                          "its centre (OpenCV's convention)"},
};
STK__CHECK_ARGS(wp_args, WP_COUNT_);

static const stk_port_schema wp_in[] = {{"input", "HWC (or HW) image"},
                                        {"matrix", "3x3 float matrix per sample"}};

static stk_status wp_init(stk__node *node) {
  bool has_input = stk__node_num_inputs(node) > 1, has_arg = stk__arg_given(node, WP_MATRIX);
  if (has_input == has_arg)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      has_arg ? "give the matrix either as the argument or as input 1, not both"
                              : "needs a matrix: the 'matrix' argument or a second input");
  return STK_OK;
}

/* The 3x3 inverse of m (false when singular). */
static bool invert3(const double *m, double *r) {
  double a = m[4] * m[8] - m[5] * m[7], b = m[5] * m[6] - m[3] * m[8],
         c = m[3] * m[7] - m[4] * m[6];
  double det = m[0] * a + m[1] * b + m[2] * c;
  if (!(fabs(det) > 1e-300) || !isfinite(det)) return false;
  double k = 1.0 / det;
  r[0] = a * k, r[1] = (m[2] * m[7] - m[1] * m[8]) * k, r[2] = (m[1] * m[5] - m[2] * m[4]) * k;
  r[3] = b * k, r[4] = (m[0] * m[8] - m[2] * m[6]) * k, r[5] = (m[2] * m[3] - m[0] * m[5]) * k;
  r[6] = c * k, r[7] = (m[1] * m[6] - m[0] * m[7]) * k, r[8] = (m[0] * m[4] - m[1] * m[3]) * k;
  return true;
}

/* The matrix input (sample data in host memory on the CPU; a GPU producer's matrix is
 * copied back through the device's memcpy by the caller) as 9 doubles. */
static stk_status wp_matrix(stk__node *node, stk__sample *s, const stk__tensor *const *extra,
                            int n_extra, double v[9]) {
  const double *av;
  size_t n;
  if (n_extra > 0) {
    const stk__tensor *t = extra[0];
    n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    if (n == 9) {
      if (t->dtype != STK_DTYPE_FLOAT32 && t->dtype != STK_DTYPE_FLOAT64)
        return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "matrix input must be float32 or float64");
      stk__convert(v, STK_DTYPE_FLOAT64, t->data, t->dtype, 9);
    }
  } else {
    n = stk__arg_floats(node, s, WP_MATRIX, &av);
    if (n == 9) memcpy(v, av, sizeof(double) * 9);
  }
  if (n != 9)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "matrix has %zu elements; expected 9 (a 3x3 matrix)", n);
  for (int k = 0; k < 9; k++)
    if (!isfinite(v[k]))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "matrix element %d is not finite", k);
  return STK_OK;
}

/* Fill values for c channels: none (0), one, or c (at most STK_FX_MAX_FILL). */
static stk_status list_fill(stk__node *node, stk__sample *s, int arg, int64_t c, stk_fx_params *p) {
  const double *v;
  size_t n = stk__arg_floats(node, s, arg, &v);
  p->nfill = 1;
  p->fill[0] = 0.0f;
  if (n == 0) return STK_OK;
  if (n != 1 && (int64_t)n != c)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "fill_value has %zu values; expected 1 or %lld (one per channel)", n,
                      (long long)c);
  if (n > STK_FX_MAX_FILL)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "fill_value: at most %d channels",
                      STK_FX_MAX_FILL);
  for (size_t k = 0; k < n; k++) p->fill[k] = (float)v[k];
  p->nfill = (int)n;
  return STK_OK;
}

/* Output size [H, W] from `arg`, rounded; unchanged when the argument is absent. */
static stk_status size_arg(stk__node *node, stk__sample *s, int arg, int64_t *h, int64_t *w) {
  if (!stk__arg_given(node, arg)) return STK_OK;
  const double *v;
  size_t n = stk__arg_floats(node, s, arg, &v);
  if (n == 0) return STK_OK;
  if (n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "size has %zu values; expected [H, W]", n);
  *h = (int64_t)floor(v[0] + 0.5), *w = (int64_t)floor(v[1] + 0.5);
  if (*h < 1 || *w < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "size [%g, %g] is empty", v[0], v[1]);
  return STK_OK;
}

static stk_status wp_plan(stk__node *node, stk__sample *s, const stk__image *in,
                          const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  stk_fx_params *p = &plan->p;
  double v[9];
  STK_TRY(wp_matrix(node, s, extra, n_extra, v));
  if (stk__arg_bool(node, s, WP_INVERSE)) {
    memcpy(p->m, v, sizeof v);
  } else if (!invert3(v, p->m)) {
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "matrix cannot be inverted (inverse_map = false)");
  }
  p->op = STK_FX_OP_PERSPECTIVE;
  p->interp = interp_arg(node, WP_INTERP);
  p->border = stk__fx_border_parse(stk__arg_string(node, WP_BORDER));
  p->center = strcmp(stk__arg_string(node, WP_ORIGIN), "center") == 0;
  STK_TRY(list_fill(node, s, WP_FILL, in->c, p));
  return size_arg(node, s, WP_SIZE, &plan->out_h, &plan->out_w);
}

static stk_status wp_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, stk__fx_all_dtypes, 4, wp_plan);
}

/* On the GPU the matrix input is read on the host (stk__fx_run_gpu_inputs keeps a CPU
 * producer's list there and refuses a GPU producer's). */
static stk_status wp_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu_inputs(node, b, stk__fx_all_dtypes, 4, wp_plan, false);
}

static const stk_op_schema wp_schema = {
    .name = "experimental.warp_perspective",
    .doc =
        "Applies a perspective transformation (DALI's experimental.warp_perspective, "
        "which is OpenCV's warpPerspective): output point p reads the input at (M p)_xy / "
        "(M p)_z, with p the pixel's centre in pixel-edge coordinates (pixel_origin = "
        "\"corner\") or its index (\"center\", OpenCV). uint8, uint16, int16 or float32; "
        "sampling in float32 (OpenCV interpolates uint8 in fixed point: results may "
        "differ from it by 1).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = wp_in,
    .num_outputs = 1,
    .outputs = fx_out,
    .num_args = WP_COUNT_,
    .args = wp_args,
    .gpu_check =
        "# atol=1 mismatch=0.001\n"
        "return experimental.warp_perspective(IN, matrix=[0.9, 0.1, 3, -0.05, 1.1, -2, "
        "0.0005, -0.001, 1], border_mode=\"reflect_101\", size=[100, 120], device=@)",
};
const stk__op_def stk__op_experimental_warp_perspective = {
    .schema = &wp_schema, .init = wp_init, .run_sample = wp_run, .run_gpu = wp_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* experimental.remap                                                                 */
/* ---------------------------------------------------------------------------------- */

enum { RM_INTERP, RM_ORIGIN, RM_COUNT_ };

static const stk_arg_schema remap_args[] = {
    [RM_INTERP] = {.name = "interp",
                   .type = STK_ARG_STRING,
                   .default_text = "\"linear\"",
                   .choices = INTERP_CHOICES,
                   .doc = "nearest, linear or cubic"},
    [RM_ORIGIN] = {.name = "pixel_origin",
                   .type = STK_ARG_STRING,
                   .default_text = "\"corner\"",
                   .choices = "corner|center",
                   .doc = "corner: map value 0 is the left/top edge of the first pixel; center: "
                          "its centre (OpenCV's remap)"},
};
STK__CHECK_ARGS(remap_args, RM_COUNT_);

static const stk_port_schema remap_in[] = {
    {"input", "HWC (or HW) image"},
    {"mapx", "float32 H' x W' (or H' x W' x 1): the x coordinate each output pixel reads"},
    {"mapy", "float32, the shape of mapx: the y coordinate"}};

/* A map input's extents (H, W, or H, W, 1). */
static bool map_dims(const stk__tensor *t, int64_t *h, int64_t *w) {
  if (t->dtype != STK_DTYPE_FLOAT32) return false;
  if (t->ndim != 2 && !(t->ndim == 3 && t->shape[2] == 1)) return false;
  *h = t->shape[0], *w = t->shape[1];
  return true;
}

static stk_status remap_plan(stk__node *node, stk__sample *s, const stk__image *in,
                             const stk__tensor *const *extra, int n_extra, stk__fx_plan *plan) {
  (void)in;
  int64_t hx, wx, hy, wy;
  if (n_extra != 2 || !map_dims(extra[0], &hx, &wx) || !map_dims(extra[1], &hy, &wy))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "mapx and mapy must be float32 tensors of shape (H, W) or (H, W, 1)");
  if (hx != hy || wx != wy)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "mapx is %lldx%lld but mapy %lldx%lld: they must match", (long long)hx,
                      (long long)wx, (long long)hy, (long long)wy);
  if (hx < 1 || wx < 1) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "empty maps");
  stk_fx_params *p = &plan->p;
  p->op = STK_FX_OP_REMAP;
  p->interp = interp_arg(node, RM_INTERP);
  p->border = STK_FX_BORDER_CONSTANT;
  p->nfill = 1;
  p->center = strcmp(stk__arg_string(node, RM_ORIGIN), "center") == 0;
  p->mapx = extra[0]->data, p->mapy = extra[1]->data;
  plan->out_h = hx, plan->out_w = wx;
  return STK_OK;
}

static stk_status remap_run(stk__node *node, stk__sample *s) {
  return stk__fx_run_cpu(node, s, stk__fx_all_dtypes, 4, remap_plan);
}
static stk_status remap_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__fx_run_gpu(node, b, stk__fx_all_dtypes, 4, remap_plan);
}

static const stk_op_schema remap_schema = {
    .name = "experimental.remap",
    .doc =
        "Output pixel (x, y) takes the input at (mapx[y, x], mapy[y, x]) (DALI's "
        "experimental.remap; OpenCV's remap with pixel_origin = \"center\"): the maps are "
        "inputs 1 and 2, float32, one value per output pixel. Outside reads give 0 "
        "(DALI's only border). uint8, uint16, int16 or float32 images.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 3,
    .max_inputs = 3,
    .inputs = remap_in,
    .num_outputs = 1,
    .outputs = fx_out,
    .num_args = RM_COUNT_,
    .args = remap_args,
    /* maps from the photos themselves: grey levels 0..255 as coordinates */
    .gpu_check =
        "# atol=1 mismatch=0.001\n"
        "g = grayscale(IN)\n"
        "mx = cast(g, dtype=\"float32\")\n"
        "gf = flip(g, horizontal=0, vertical=1)\n"
        "my = cast(gf, dtype=\"float32\")\n"
        "return experimental.remap(IN, mx, my, device=@)",
};
const stk__op_def stk__op_experimental_remap = {
    .schema = &remap_schema, .run_sample = remap_run, .run_gpu = remap_run_gpu};
