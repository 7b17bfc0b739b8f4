/* transforms.rotation / shear / translation / scale / combine: builders of 2D affine
 * matrices (DALI's transforms.*). Each sample's output is a float32 2x3 matrix
 * [[a, b, tx], [c, d, ty]] mapping a point (x, y) to (a x + b y + tx, c x + d y + ty);
 * warp_affine takes it as its matrix (with inverse_map=False when it describes where the
 * input goes, which is how these builders are meant). Only 2D transforms are built. */
#include <math.h>
#include <string.h>

#include "geometry.h"
#include "image_util.h"

#define PI 3.14159265358979323846

static const stk_port_schema tf_in[] = {
    {"input", "optional 2x3 matrix to which this transform is appended (float32)"}};
static const stk_port_schema tf_out[] = {{"output", "2x3 float32 matrix per sample"}};

#define REVERSE_DOC                                                                   \
  "false: the result is T * input (the input transform first, then this one); true: " \
  "input * T"
#define CENTER_DOC "[x, y] the transform keeps fixed (default: the origin)"

/* Reads an input or argument matrix of exactly 6 elements into m. */
static stk_status input_matrix(const stk__node *node, stk__sample *s, int index, double m[6]) {
  const stk__tensor *t = stk__input(s, index);
  size_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
  if (n != 6 || !stk__dtype_valid(t->dtype))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "input %d must be a 2x3 matrix (6 numbers); it has %zu elements", index, n);
  stk__convert(m, STK_DTYPE_FLOAT64, t->data, t->dtype, 6);
  return STK_OK;
}

/* A 2-vector argument (one value: both). */
static stk_status vec2_arg(const stk__node *node, stk__sample *s, int arg, const char *name,
                           double v[2]) {
  const double *a;
  size_t n = stk__arg_floats(node, s, arg, &a);
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s' has %zu values; a 2D transform needs 2", name, n);
  v[0] = a[0], v[1] = a[n - 1];
  if (!isfinite(v[0]) || !isfinite(v[1]))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s' is not finite", name);
  return STK_OK;
}

/* Makes the linear part of m act about `center`: t = c - L c. */
static stk_status apply_center(const stk__node *node, stk__sample *s, int arg, double m[6]) {
  if (!stk__arg_given(node, arg)) return STK_OK;
  double c[2];
  STK_TRY(vec2_arg(node, s, arg, "center", c));
  m[2] = c[0] - (m[0] * c[0] + m[1] * c[1]);
  m[5] = c[1] - (m[3] * c[0] + m[4] * c[1]);
  return STK_OK;
}

/* Composes m with the optional input matrix and writes the float32 2x3 output. */
static stk_status emit(stk__node *node, stk__sample *s, int reverse_arg, const double m[6]) {
  double r[6];
  memcpy(r, m, sizeof r);
  if (stk__node_num_inputs(node) > 0) {
    double in[6];
    STK_TRY(input_matrix(node, s, 0, in));
    if (stk__arg_bool(node, s, reverse_arg))
      stk__affine_mul(in, m, r);
    else
      stk__affine_mul(m, in, r);
  }
  int64_t shape[2] = {2, 3};
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, 2, shape, NULL, &out));
  for (int i = 0; i < 6; i++) ((float *)out->data)[i] = (float)r[i];
  return STK_OK;
}

/* ---- transforms.rotation ---- */
enum { RO_ANGLE, RO_CENTER, RO_REVERSE, ROTATION_ARGS_COUNT_ };
static const stk_arg_schema rotation_args[] = {
    [RO_ANGLE] =
        {.name = "angle",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
         .doc =
             "angle in degrees: the matrix is [[cos, -sin], [sin, cos]] (DALI's convention: with "
             "y pointing down it turns points clockwise on screen; rotate's angle, which maps the "
             "output to the input, turns the image counter-clockwise)"},
    [RO_CENTER] = {.name = "center",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = CENTER_DOC},
    [RO_REVERSE] = {.name = "reverse_order",
                    .type = STK_ARG_BOOL,
                    .default_text = "false",
                    .doc = REVERSE_DOC},
};
STK__CHECK_ARGS(rotation_args, ROTATION_ARGS_COUNT_);

static stk_status rotation_run(stk__node *node, stk__sample *s) {
  double a = stk__arg_float(node, s, RO_ANGLE);
  if (!isfinite(a))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "angle = %g is not finite", a);
  a *= PI / 180.0;
  double m[6] = {cos(a), -sin(a), 0.0, sin(a), cos(a), 0.0};
  STK_TRY(apply_center(node, s, RO_CENTER, m));
  return emit(node, s, RO_REVERSE, m);
}

static const stk_op_schema rotation_schema = {
    .name = "transforms.rotation",
    .doc =
        "Produces a 2D rotation matrix (2x3 float32), optionally about `center`, appended to "
        "an input matrix when one is given.",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = tf_in,
    .num_outputs = 1,
    .outputs = tf_out,
    .num_args = sizeof rotation_args / sizeof rotation_args[0],
    .args = rotation_args,
};
const stk__op_def stk__op_transforms_rotation = {.schema = &rotation_schema,
                                                 .run_sample = rotation_run};

/* ---- transforms.shear ---- */
enum { SH_SHEAR, SH_ANGLES, SH_CENTER, SH_REVERSE, SHEAR_ARGS_COUNT_ };
static const stk_arg_schema shear_args[] = {
    [SH_SHEAR] = {.name = "shear",
                  .type = STK_ARG_FLOATS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "[sx, sy]: the matrix [[1, sx], [sy, 1]] (x moves by sx per unit of y). "
                         "Exclusive with "
                         "angles"},
    [SH_ANGLES] =
        {.name = "angles",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc = "[ax, ay] in degrees within [-90, 90]: shear = tan(angle). Exclusive with shear"},
    [SH_CENTER] = {.name = "center",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = CENTER_DOC},
    [SH_REVERSE] = {.name = "reverse_order",
                    .type = STK_ARG_BOOL,
                    .default_text = "false",
                    .doc = REVERSE_DOC},
};
STK__CHECK_ARGS(shear_args, SHEAR_ARGS_COUNT_);

static stk_status shear_init(stk__node *node) {
  if (stk__arg_given(node, SH_SHEAR) == stk__arg_given(node, SH_ANGLES))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give exactly one of 'shear' and 'angles'");
  return STK_OK;
}

static stk_status shear_run(stk__node *node, stk__sample *s) {
  double k[2];
  if (stk__arg_given(node, SH_SHEAR)) {
    STK_TRY(vec2_arg(node, s, SH_SHEAR, "shear", k));
  } else {
    STK_TRY(vec2_arg(node, s, SH_ANGLES, "angles", k));
    for (int i = 0; i < 2; i++) {
      if (!(k[i] >= -90.0 && k[i] <= 90.0))
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "angles[%d] = %g is outside [-90, 90]",
                          i, k[i]);
      k[i] = tan(k[i] * (PI / 180.0));
    }
  }
  double m[6] = {1.0, k[0], 0.0, k[1], 1.0, 0.0};
  STK_TRY(apply_center(node, s, SH_CENTER, m));
  return emit(node, s, SH_REVERSE, m);
}

static const stk_op_schema shear_schema = {
    .name = "transforms.shear",
    .doc =
        "Produces a 2D shear matrix (2x3 float32) from shear factors or angles, optionally "
        "about `center`, appended to an input matrix when one is given.",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = tf_in,
    .num_outputs = 1,
    .outputs = tf_out,
    .num_args = sizeof shear_args / sizeof shear_args[0],
    .args = shear_args,
};
const stk__op_def stk__op_transforms_shear = {
    .schema = &shear_schema, .init = shear_init, .run_sample = shear_run};

/* ---- transforms.translation ---- */
enum { TR_OFFSET, TR_REVERSE, TRANSLATION_ARGS_COUNT_ };
static const stk_arg_schema translation_args[] = {
    [TR_OFFSET] = {.name = "offset",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                   .doc = "[tx, ty] added to every point"},
    [TR_REVERSE] = {.name = "reverse_order",
                    .type = STK_ARG_BOOL,
                    .default_text = "false",
                    .doc = REVERSE_DOC},
};
STK__CHECK_ARGS(translation_args, TRANSLATION_ARGS_COUNT_);

static stk_status translation_run(stk__node *node, stk__sample *s) {
  double t[2];
  STK_TRY(vec2_arg(node, s, TR_OFFSET, "offset", t));
  double m[6] = {1.0, 0.0, t[0], 0.0, 1.0, t[1]};
  return emit(node, s, TR_REVERSE, m);
}

static const stk_op_schema translation_schema = {
    .name = "transforms.translation",
    .doc =
        "Produces a 2D translation matrix (2x3 float32), appended to an input matrix when one "
        "is given.",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = tf_in,
    .num_outputs = 1,
    .outputs = tf_out,
    .num_args = sizeof translation_args / sizeof translation_args[0],
    .args = translation_args,
};
const stk__op_def stk__op_transforms_translation = {.schema = &translation_schema,
                                                    .run_sample = translation_run};

/* ---- transforms.scale ---- */
enum { SC_SCALE, SC_CENTER, SC_REVERSE, SC_NDIM, SCALE_ARGS_COUNT_ };
static const stk_arg_schema scale_args[] = {
    [SC_SCALE] = {.name = "scale",
                  .type = STK_ARG_FLOATS,
                  .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                  .doc = "[sx, sy] scale factors (one value: both)"},
    [SC_CENTER] = {.name = "center",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = CENTER_DOC},
    [SC_REVERSE] = {.name = "reverse_order",
                    .type = STK_ARG_BOOL,
                    .default_text = "false",
                    .doc = REVERSE_DOC},
    [SC_NDIM] = {.name = "ndim",
                 .type = STK_ARG_INT,
                 .doc = "the transform's dimensions, for a scalar scale (DALI's); stoker's "
                        "transforms are 2D, so only 2 is taken"},
};
STK__CHECK_ARGS(scale_args, SCALE_ARGS_COUNT_);

static stk_status scale_init(stk__node *node) {
  if (stk__arg_given(node, SC_NDIM) && stk__arg_int(node, NULL, SC_NDIM) != 2)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "ndim=%lld: stoker's transforms are 2D (ndim=2 only)",
                      (long long)stk__arg_int(node, NULL, SC_NDIM));
  return STK_OK;
}

static stk_status scale_run(stk__node *node, stk__sample *s) {
  double k[2];
  STK_TRY(vec2_arg(node, s, SC_SCALE, "scale", k));
  double m[6] = {k[0], 0.0, 0.0, 0.0, k[1], 0.0};
  STK_TRY(apply_center(node, s, SC_CENTER, m));
  return emit(node, s, SC_REVERSE, m);
}

static const stk_op_schema scale_schema = {
    .name = "transforms.scale",
    .doc =
        "Produces a 2D scaling matrix (2x3 float32), optionally about `center`, appended to an "
        "input matrix when one is given.",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = tf_in,
    .num_outputs = 1,
    .outputs = tf_out,
    .num_args = sizeof scale_args / sizeof scale_args[0],
    .args = scale_args,
};
const stk__op_def stk__op_transforms_scale = {
    .schema = &scale_schema, .init = scale_init, .run_sample = scale_run};

/* ---- transforms.combine ---- */
enum { CO_REVERSE, COMBINE_ARGS_COUNT_ };
static const stk_arg_schema combine_args[] = {
    [CO_REVERSE] =
        {.name = "reverse_order",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc = "false: input 0 is applied first (result = T[n-1] * ... * T[0]); true: the last "
                "input is applied first"},
};
STK__CHECK_ARGS(combine_args, COMBINE_ARGS_COUNT_);
static const stk_port_schema combine_in[] = {
    {"T0", "2x3 matrix"}, {"T1", "2x3 matrix"}, {"T2", "2x3 matrix"}, {"T3", "2x3 matrix"},
    {"T4", "2x3 matrix"}, {"T5", "2x3 matrix"}, {"T6", "2x3 matrix"}, {"T7", "2x3 matrix"},
    {"T8", "2x3 matrix"}, {"T9", "2x3 matrix"}};

static stk_status combine_run(stk__node *node, stk__sample *s) {
  int n = stk__node_num_inputs(node);
  bool reverse = stk__arg_bool(node, s, CO_REVERSE);
  double r[6] = {1, 0, 0, 0, 1, 0};
  for (int i = 0; i < n; i++) {
    double m[6];
    STK_TRY(input_matrix(node, s, i, m));
    if (reverse)
      stk__affine_mul(r, m, r);
    else
      stk__affine_mul(m, r, r);
  }
  int64_t shape[2] = {2, 3};
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, 2, shape, NULL, &out));
  for (int i = 0; i < 6; i++) ((float *)out->data)[i] = (float)r[i];
  return STK_OK;
}

static const stk_op_schema combine_schema = {
    .name = "transforms.combine",
    .doc =
        "Combines 2 to 10 affine matrices (2x3) into one: by default the first input is "
        "applied first.",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 2,
    .max_inputs = 10,
    .inputs = combine_in,
    .num_outputs = 1,
    .outputs = tf_out,
    .num_args = sizeof combine_args / sizeof combine_args[0],
    .args = combine_args,
};
const stk__op_def stk__op_transforms_combine = {.schema = &combine_schema,
                                                .run_sample = combine_run};

/* ---- transforms.crop ---- */
enum { CR_FROM_START, CR_FROM_END, CR_TO_START, CR_TO_END, CR_ABSOLUTE, CR_REVERSE, CR_COUNT_ };
static const stk_arg_schema crop_tf_args[] = {
    [CR_FROM_START] = {.name = "from_start",
                       .type = STK_ARG_FLOATS,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .default_text = "[0.0]",
                       .doc = "[x, y] lower corner of the source space (one value: both)"},
    [CR_FROM_END] = {.name = "from_end",
                     .type = STK_ARG_FLOATS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .default_text = "[1.0]",
                     .doc = "[x, y] upper corner of the source space"},
    [CR_TO_START] = {.name = "to_start",
                     .type = STK_ARG_FLOATS,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .default_text = "[0.0]",
                     .doc = "[x, y] where from_start goes"},
    [CR_TO_END] = {.name = "to_end",
                   .type = STK_ARG_FLOATS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .default_text = "[1.0]",
                   .doc = "[x, y] where from_end goes"},
    [CR_ABSOLUTE] = {.name = "absolute",
                     .type = STK_ARG_BOOL,
                     .default_text = "false",
                     .doc = "swap a start and an end given in the wrong order"},
    [CR_REVERSE] = {.name = "reverse_order",
                    .type = STK_ARG_BOOL,
                    .default_text = "false",
                    .doc = REVERSE_DOC},
};
STK__CHECK_ARGS(crop_tf_args, CR_COUNT_);

/* The scale and offset of one axis, in float32 as DALI computes them. */
static void crop_axis(double fs, double fe, double ts, double te, bool absolute, double *scale,
                      double *offset) {
  if (absolute && fs > fe) {
    double t = fs;
    fs = fe, fe = t;
  }
  if (absolute && ts > te) {
    double t = ts;
    ts = te, te = t;
  }
  float sc = (float)(((float)te - (float)ts) / ((float)fe - (float)fs));
  *scale = sc;
  *offset = (float)((float)ts - (float)fs * sc);
}

static stk_status crop_tf_run(stk__node *node, stk__sample *s) {
  double fs[2], fe[2], ts[2], te[2];
  STK_TRY(vec2_arg(node, s, CR_FROM_START, "from_start", fs));
  STK_TRY(vec2_arg(node, s, CR_FROM_END, "from_end", fe));
  STK_TRY(vec2_arg(node, s, CR_TO_START, "to_start", ts));
  STK_TRY(vec2_arg(node, s, CR_TO_END, "to_end", te));
  bool absolute = stk__arg_bool(node, NULL, CR_ABSOLUTE);
  double m[6] = {0};
  for (int a = 0; a < 2; a++) {
    if (fe[a] == fs[a])
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "from_start and from_end are equal on axis %d: nothing to map", a);
    crop_axis(fs[a], fe[a], ts[a], te[a], absolute, &m[a * 4], &m[a * 3 + 2]);
  }
  return emit(node, s, CR_REVERSE, m);
}

static const stk_op_schema crop_tf_schema = {
    .name = "transforms.crop",
    .doc =
        "Produces the 2D affine matrix (2x3 float32) mapping the box [from_start, from_end] "
        "onto [to_start, to_end] (DALI's transforms.crop): e.g. pixel coordinates of a "
        "crop window to relative coordinates of the crop; appended to an input matrix "
        "when one is given. 2D only.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 0,
    .max_inputs = 1,
    .inputs = tf_in,
    .num_outputs = 1,
    .outputs = tf_out,
    .num_args = CR_COUNT_,
    .args = crop_tf_args,
};
const stk__op_def stk__op_transforms_crop = {.schema = &crop_tf_schema, .run_sample = crop_tf_run};
