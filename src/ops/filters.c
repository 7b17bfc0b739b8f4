/* gaussian_blur, laplacian and filter on the CPU, and the convolution kernels behind them
 * (see filters.h for the conventions). */
#include "filters.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/api_filter.h"
#include "../shared/filter_common.h"
#include "gpu_util.h"
#include "image_util.h"

#define MAX_KERNEL  4095                        /* taps per axis */
#define MAX_SCRATCH ((double)((size_t)1 << 34)) /* bytes */

/* ---------------------------------------------------------------------------------- */
/* Borders                                                                            */
/* ---------------------------------------------------------------------------------- */

bool stk__border_parse(const char *name, stk__border *out) {
  static const char *const names[] = {"reflect_101", "reflect_1001", "wrap", "clamp", "constant"};
  for (int i = 0; i < 5; i++)
    if (name && strcmp(name, names[i]) == 0) {
      *out = (stk__border)i;
      return true;
    }
  return false;
}

/* The rule lives in filter_common.h, shared with the GPU kernels. */
int64_t stk__border_index(int64_t i, int64_t n, stk__border border) {
  return stk_conv_border(i, n, (int)border);
}

/* ---------------------------------------------------------------------------------- */
/* Scratch and padding                                                                */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  int64_t ph, pw; /* padded extents */
  size_t c;
  float *pad; /* ph x pw x c */
  float *tmp; /* separable intermediate: ph x out_w x c */
  float *row; /* one source row as float */
} conv_mem;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t stk__conv_scratch_size(const stk__image *src, const stk__conv_geom *g) {
  if (src->h < 1 || src->w < 1 || src->c < 1 || g->out_h < 1 || g->out_w < 1 || g->kh < 1 ||
      g->kw < 1 || g->kh > MAX_KERNEL || g->kw > MAX_KERNEL)
    return 0;
  double ph = (double)g->out_h + g->kh - 1, pw = (double)g->out_w + g->kw - 1;
  double c = (double)src->c;
  double bytes = 4.0 * c * (ph * pw + ph * (double)g->out_w + (double)src->w) + 4 * 64.0;
  if (bytes > MAX_SCRATCH) return 0;
  size_t C = (size_t)src->c;
  return align64((size_t)ph * (size_t)pw * C * 4) + align64((size_t)ph * (size_t)g->out_w * C * 4) +
         align64((size_t)src->w * C * 4) + 64;
}

static stk_status carve(const stk__image *src, const stk__conv_geom *g, void *scratch,
                        size_t scratch_size, conv_mem *m) {
  size_t need = stk__conv_scratch_size(src, g);
  if (need == 0)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "bad convolution geometry: %lldx%lld image, %dx%d kernel, %lldx%lld output",
                    (long long)src->h, (long long)src->w, g->kh, g->kw, (long long)g->out_h,
                    (long long)g->out_w);
  if (g->ay < 0 || g->ay >= g->kh || g->ax < 0 || g->ax >= g->kw)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "anchor (%d, %d) outside the %dx%d kernel", g->ay,
                    g->ax, g->kh, g->kw);
  if (scratch_size < need)
    return STK_FAIL(STK_ERR_INTERNAL, "scratch of %zu bytes, %zu needed", scratch_size, need);
  char *p = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
  m->ph = g->out_h + g->kh - 1, m->pw = g->out_w + g->kw - 1, m->c = (size_t)src->c;
  m->pad = (float *)p, p += align64((size_t)(m->ph * m->pw) * m->c * 4);
  m->tmp = (float *)p, p += align64((size_t)m->ph * (size_t)g->out_w * m->c * 4);
  m->row = (float *)p;
  return STK_OK;
}

/* Fills the padded float image: pad[r][p] = in(border(r - ay), border(p - ax)). */
static void pad_image(const stk__image *src, const stk__conv_geom *g, conv_mem *m) {
  size_t c = m->c, esize = stk_dtype_size(src->dtype), in_row = (size_t)src->w * c;
  int64_t last = -2;
  for (int64_t r = 0; r < m->ph; r++) {
    float *out = m->pad + (size_t)(r * m->pw) * c;
    int64_t sy = stk__border_index(r - g->ay, src->h, g->border);
    if (sy < 0) {
      for (size_t k = 0; k < (size_t)m->pw * c; k++) out[k] = g->fill;
      continue;
    }
    if (sy != last)
      stk__convert(m->row, STK_DTYPE_FLOAT32, (const char *)src->data + (size_t)sy * in_row * esize,
                   src->dtype, in_row);
    last = sy;
    for (int64_t p = 0; p < m->pw; p++) {
      int64_t sx = p - g->ax;
      if (sx >= 0 && sx < src->w) { /* the inside run in one copy */
        int64_t n = src->w - sx < m->pw - p ? src->w - sx : m->pw - p;
        memcpy(out + (size_t)p * c, m->row + (size_t)sx * c, (size_t)n * c * sizeof(float));
        p += n - 1;
        continue;
      }
      sx = stk__border_index(sx, src->w, g->border);
      for (size_t k = 0; k < c; k++)
        out[(size_t)p * c + k] = sx < 0 ? g->fill : m->row[(size_t)sx * c + k];
    }
  }
}

/* acc[k] += w * x[k]; fixed 8-wide blocks so GCC's -O2 vectoriser takes them. */
static void axpy(float *restrict acc, const float *restrict x, float w, size_t n) {
  size_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; l++) acc[k + l] += w * x[k + l];
  for (; k < n; k++) acc[k] += w * x[k];
}

/* ---------------------------------------------------------------------------------- */
/* Convolutions                                                                       */
/* ---------------------------------------------------------------------------------- */

stk_status stk__conv2d(const stk__image *src, float *dst, const stk__conv_geom *g, const float *k,
                       bool accumulate, void *scratch, size_t scratch_size) {
  conv_mem m;
  STK_TRY(carve(src, g, scratch, scratch_size, &m));
  pad_image(src, g, &m);
  size_t n = (size_t)g->out_w * m.c;
  for (int64_t y = 0; y < g->out_h; y++) {
    float *acc = dst + (size_t)y * n;
    if (!accumulate) memset(acc, 0, n * sizeof(float));
    for (int i = 0; i < g->kh; i++)
      for (int j = 0; j < g->kw; j++) {
        float w = k[i * g->kw + j];
        if (w != 0.0f) axpy(acc, m.pad + ((size_t)((y + i) * m.pw) + (size_t)j) * m.c, w, n);
      }
  }
  return STK_OK;
}

stk_status stk__conv_sep(const stk__image *src, float *dst, const stk__conv_geom *g,
                         const float *ky, const float *kx, bool accumulate, void *scratch,
                         size_t scratch_size) {
  conv_mem m;
  STK_TRY(carve(src, g, scratch, scratch_size, &m));
  pad_image(src, g, &m);
  size_t n = (size_t)g->out_w * m.c;
  for (int64_t r = 0; r < m.ph; r++) { /* horizontal pass */
    float *t = m.tmp + (size_t)r * n;
    memset(t, 0, n * sizeof(float));
    for (int j = 0; j < g->kw; j++)
      if (kx[j] != 0.0f) axpy(t, m.pad + ((size_t)(r * m.pw) + (size_t)j) * m.c, kx[j], n);
  }
  for (int64_t y = 0; y < g->out_h; y++) { /* vertical pass */
    float *acc = dst + (size_t)y * n;
    if (!accumulate) memset(acc, 0, n * sizeof(float));
    for (int i = 0; i < g->kh; i++)
      if (ky[i] != 0.0f) axpy(acc, m.tmp + (size_t)(y + i) * n, ky[i], n);
  }
  return STK_OK;
}

bool stk__kernel_separable(const float *k, int kh, int kw, float *ky, float *kx) {
  int pi = 0, pj = 0;
  float best = 0.0f;
  for (int i = 0; i < kh; i++)
    for (int j = 0; j < kw; j++)
      if (fabsf(k[i * kw + j]) > best) best = fabsf(k[i * kw + j]), pi = i, pj = j;
  if (!(best > 0.0f) || !isfinite(best)) return false;
  double piv = k[pi * kw + pj];
  for (int i = 0; i < kh; i++)
    for (int j = 0; j < kw; j++) {
      double prod = (double)k[i * kw + pj] * (double)k[pi * kw + j] / piv;
      if (fabs(prod - (double)k[i * kw + j]) > 1e-6 * best) return false;
    }
  for (int i = 0; i < kh; i++) ky[i] = k[i * kw + pj];
  for (int j = 0; j < kw; j++) kx[j] = (float)((double)k[pi * kw + j] / piv);
  return true;
}

/* ---------------------------------------------------------------------------------- */
/* Windows                                                                            */
/* ---------------------------------------------------------------------------------- */

void stk__gaussian_window(float *w, int size, double sigma) {
  int r = size / 2;
  double sum = 0.0, k = -0.5 / (sigma * sigma);
  for (int i = 0; i < size; i++) sum += exp(k * (double)((i - r) * (i - r)));
  for (int i = 0; i < size; i++) w[i] = (float)(exp(k * (double)((i - r) * (i - r))) / sum);
}

int stk__gaussian_size(double sigma) { return 2 * (int)ceil(sigma * 3.0) + 1; }

double stk__gaussian_sigma(int window) { return ((window - 1) / 2 - 1) * 0.3 + 0.8; }

void stk__binomial_window(float *w, int size) {
  w[0] = 1.0f;
  for (int n = 1; n < size; n++) { /* Pascal's rule, in place from the right */
    w[n] = 1.0f;
    for (int k = n - 1; k > 0; k--) w[k] += w[k - 1];
  }
}

void stk__second_derivative_window(float *w, int size) {
  float s[32];
  stk__binomial_window(s, size - 2);
  for (int i = 0; i < size; i++) {
    float v = 0.0f;
    if (i < size - 2) v += s[i];
    if (i >= 1 && i - 1 < size - 2) v -= 2.0f * s[i - 1];
    if (i >= 2) v += s[i - 2];
    w[i] = v;
  }
}

/* ---------------------------------------------------------------------------------- */
/* Operator plumbing                                                                  */
/* ---------------------------------------------------------------------------------- */

#define FILTER_DTYPES "|uint8|int8|uint16|int16|uint32|int32|int64|float16|float32|float64|float"

/* The output type: the dtype argument, or the input's when "". */
static stk_status out_dtype(const stk__node *node, int arg, stk_dtype in, stk_dtype *out) {
  return stk__dtype_or_same(node, arg, "dtype", in, out);
}

/* Runs one (or, with `second`, a sum of two) separable convolutions of the sample's image
 * and writes output 0 in `odt`. */
typedef struct {
  const float *ky, *kx;
} sep_pair;

static stk_status run_separable(stk__node *node, stk__sample *s, const stk__image *in, int in_ndim,
                                stk__conv_geom *g, const sep_pair *pairs, int npairs,
                                stk_dtype odt) {
  size_t need = stk__conv_scratch_size(in, g);
  if (need == 0)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "image %lldx%lld with a %dx%d window is too large",
                      (long long)in->h, (long long)in->w, g->kh, g->kw);
  size_t n = (size_t)(g->out_h * g->out_w) * (size_t)in->c;
  void *scratch = stk__scratch(s, need);
  float *acc = stk__scratch(s, n * sizeof(float));
  if (!scratch || !acc) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  for (int i = 0; i < npairs; i++)
    STK_TRY(stk__sample_wrap(
        stk__conv_sep(in, acc, g, pairs[i].ky, pairs[i].kx, i > 0, scratch, need), node, s));
  int64_t shape[3] = {g->out_h, g->out_w, in->c};
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, odt, in_ndim, shape, in_ndim == 2 ? "HW" : "HWC", &out));
  stk__convert(out->data, odt, acc, STK_DTYPE_FLOAT32, n);
  return STK_OK;
}

/* A per-axis argument: one value for both axes or [H, W]. */
static stk_status axis_floats(const stk__node *node, stk__sample *s, int arg, const char *name,
                              double v[2]) {
  const double *a;
  size_t n = stk__arg_floats(node, s, arg, &a);
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s' has %zu values; expected 1 or 2 ([H, W])", name, n);
  v[0] = a[0], v[1] = a[n - 1];
  return STK_OK;
}

static stk_status axis_ints(const stk__node *node, stk__sample *s, int arg, const char *name,
                            int64_t v[2]) {
  const int64_t *a;
  size_t n = stk__arg_ints(node, s, arg, &a);
  if (n != 1 && n != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s' has %zu values; expected 1 or 2 ([H, W])", name, n);
  v[0] = a[0], v[1] = a[n - 1];
  return STK_OK;
}

static const stk_port_schema img_in[] = {{"input", "HWC or HW image, any numeric type"}};
static const stk_port_schema img_out[] = {{"output", "the filtered image"}};

/* ---------------------------------------------------------------------------------- */
/* gaussian_blur                                                                      */
/* ---------------------------------------------------------------------------------- */

enum { G_SIGMA, G_WINDOW, G_DTYPE, GAUSSIAN_ARGS_COUNT_ };
static const stk_arg_schema gaussian_args[] = {
    [G_SIGMA] = {.name = "sigma",
                 .type = STK_ARG_FLOATS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "[0.0]",
                 .doc = "standard deviation: one value or [H, W]; 0 derives it from window_size "
                        "((r - 1) * 0.3 + 0.8, r = (window_size - 1) / 2)"},
    [G_WINDOW] = {.name = "window_size",
                  .type = STK_ARG_INTS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .default_text = "[0]",
                  .doc = "odd kernel diameter: one value or [H, W]; 0 derives it from sigma (2 "
                         "ceil(3 sigma) + 1)"},
    [G_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"\"",
                 .choices = FILTER_DTYPES,
                 .doc = "output type; \"\" keeps the input's (rounded and saturated)"},
};
STK__CHECK_ARGS(gaussian_args, GAUSSIAN_ARGS_COUNT_);

/* Weight buffers of a plan: per-sample scratch on the CPU, malloc for the GPU path
 * (freed by the caller). */
static float *plan_alloc(stk__sample *s, size_t n, bool heap) {
  return heap ? malloc(n * sizeof(float)) : stk__scratch(s, n * sizeof(float));
}

/* One convolution as both backends run it: the geometry and the weights, laid out as
 * stk_gpu_conv_sample's (npairs 0: kh x kw kernel; else ky, kx per pair). */
typedef struct {
  stk__conv_geom g;
  int npairs;
  float *w;
} conv_plan;

/* This sample's window size for one axis (sigma updated when derived). */
static stk_status gaussian_axis(stk__node *node, stk__sample *s, double *sigma, int64_t size,
                                int axis, int *n) {
  if (!(*sigma >= 0.0) || size < 0 || (*sigma == 0.0 && size == 0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "axis %d: sigma = %g, window_size = %lld: need sigma > 0 or an odd "
                      "window_size > 0",
                      axis, *sigma, (long long)size);
  if (size == 0) {
    if (*sigma > MAX_KERNEL / 6.0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "sigma = %g is too large", *sigma);
    size = stk__gaussian_size(*sigma);
  }
  if (size % 2 == 0 || size > MAX_KERNEL)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "window_size = %lld must be odd and at most %d", (long long)size, MAX_KERNEL);
  if (*sigma == 0.0) *sigma = stk__gaussian_sigma((int)size);
  *n = (int)size;
  return STK_OK;
}

static stk_status gaussian_plan(stk__node *node, stk__sample *s, const stk__image *in, bool heap,
                                conv_plan *p) {
  double sigma[2];
  int64_t size[2];
  STK_TRY(axis_floats(node, s, G_SIGMA, "sigma", sigma));
  STK_TRY(axis_ints(node, s, G_WINDOW, "window_size", size));
  stk__conv_geom g = {in->h, in->w, 0, 0, 0, 0, STK__BORDER_REFLECT_101, 0.0f};
  STK_TRY(gaussian_axis(node, s, &sigma[0], size[0], 0, &g.kh));
  STK_TRY(gaussian_axis(node, s, &sigma[1], size[1], 1, &g.kw));
  g.ay = g.kh / 2, g.ax = g.kw / 2;
  if (!(p->w = plan_alloc(s, (size_t)(g.kh + g.kw), heap)))
    return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for the window");
  stk__gaussian_window(p->w, g.kh, sigma[0]);
  stk__gaussian_window(p->w + g.kh, g.kw, sigma[1]);
  p->g = g, p->npairs = 1;
  return STK_OK;
}

static stk_status gaussian_run(stk__node *node, stk__sample *s) {
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &in));
  stk_dtype odt;
  STK_TRY(out_dtype(node, G_DTYPE, in.dtype, &odt));
  conv_plan p;
  STK_TRY(gaussian_plan(node, s, &in, false, &p));
  sep_pair pair = {p.w, p.w + p.g.kh};
  return run_separable(node, s, &in, stk__input(s, 0)->ndim, &p.g, &pair, 1, odt);
}

static stk_status conv_run_gpu(stk__node *node, stk__gpu_batch *b, int dtype_arg,
                               stk_status (*plan)(stk__node *, stk__sample *, const stk__image *,
                                                  bool, conv_plan *));
static stk_status gaussian_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return conv_run_gpu(node, b, G_DTYPE, gaussian_plan);
}

static const stk_op_schema gaussian_schema = {
    .name = "gaussian_blur",
    .doc =
        "Blurs each image with a Gaussian kernel (DALI's gaussian_blur): separable, weights "
        "exp(-x^2 / (2 sigma^2)) normalised to sum 1, border reflect_101 (dcb|abcd|cba).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = img_in,
    .num_outputs = 1,
    .outputs = img_out,
    .num_args = sizeof gaussian_args / sizeof gaussian_args[0],
    .args = gaussian_args,
    .gpu_check =
        "# atol=1\n"
        "s = random.uniform(range=[0.3, 4.0])\n"
        "return gaussian_blur(IN, sigma=s, device=@)",
};
const stk__op_def stk__op_gaussian_blur = {
    .schema = &gaussian_schema, .run_sample = gaussian_run, .run_gpu = gaussian_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* laplacian                                                                          */
/* ---------------------------------------------------------------------------------- */

enum { L_WINDOW, L_SMOOTHING, L_NORMALIZED, L_SCALE, L_DTYPE, LAPLACIAN_ARGS_COUNT_ };
static const stk_arg_schema laplacian_args[] = {
    [L_WINDOW] =
        {.name = "window_size",
         .type = STK_ARG_INTS,
         .flags = STK_ARGF_PER_SAMPLE,
         .default_text = "[3]",
         .doc = "derivative window, odd in [3, 23]: one value or [H, W] (the d2/dy2 and d2/dx2 "
                "windows)"},
    [L_SMOOTHING] =
        {.name = "smoothing_size",
         .type = STK_ARG_INTS,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc =
             "smoothing window across the derivative, odd in [1, 23]: one value or [H, W] (the "
             "window used along that axis). When absent, each partial derivative smooths with its "
             "own window_size"},
    [L_NORMALIZED] =
        {.name = "normalized_kernel",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc =
             "scale each partial derivative by 2^-(s - 4), s being the sum of its two window sizes "
             "(exclusive with scale)"},
    [L_SCALE] = {.name = "scale",
                 .type = STK_ARG_FLOATS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "[1.0]",
                 .doc = "factors of the partial derivatives: one value or [d2/dy2, d2/dx2]"},
    [L_DTYPE] =
        {.name = "dtype",
         .type = STK_ARG_STRING,
         .default_text = "\"\"",
         .choices = FILTER_DTYPES,
         .doc = "output type; \"\" keeps the input's (rounded and saturated: negative values of "
                "unsigned inputs become 0)"},
};
STK__CHECK_ARGS(laplacian_args, LAPLACIAN_ARGS_COUNT_);

static stk_status laplacian_init(stk__node *node) {
  if (stk__arg_bool(node, NULL, L_NORMALIZED) && stk__arg_given(node, L_SCALE))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "scale cannot be given when normalized_kernel is true");
  return STK_OK;
}

static stk_status check_window(stk__node *node, stk__sample *s, const char *name, int64_t v,
                               int lo) {
  if (v < lo || v > 23 || v % 2 == 0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "%s = %lld must be an odd integer in [%d, 23]", name, (long long)v, lo);
  return STK_OK;
}

static stk_status laplacian_plan(stk__node *node, stk__sample *s, const stk__image *in, bool heap,
                                 conv_plan *p) {
  int64_t d[2], sm[2];
  STK_TRY(axis_ints(node, s, L_WINDOW, "window_size", d));
  bool smoothing = stk__arg_given(node, L_SMOOTHING);
  if (smoothing) STK_TRY(axis_ints(node, s, L_SMOOTHING, "smoothing_size", sm));
  double scale[2] = {1.0, 1.0};
  if (!stk__arg_bool(node, s, L_NORMALIZED)) STK_TRY(axis_floats(node, s, L_SCALE, "scale", scale));
  /* windows[i][j]: along axis j for the derivative along axis i */
  int win[2][2];
  for (int i = 0; i < 2; i++) {
    STK_TRY(check_window(node, s, "window_size", d[i], 3));
    if (smoothing) STK_TRY(check_window(node, s, "smoothing_size", sm[i], 1));
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) win[i][j] = (int)(i == j ? d[i] : smoothing ? sm[j] : d[i]);
  if (stk__arg_bool(node, s, L_NORMALIZED))
    for (int i = 0; i < 2; i++) scale[i] = ldexp(1.0, -(win[i][0] + win[i][1] - 4));
  enum { maxk = 23 };
  float k[4 * maxk];
  float *ky0 = k, *kx0 = k + maxk, *ky1 = k + 2 * maxk, *kx1 = k + 3 * maxk;
  stk__second_derivative_window(ky0, win[0][0]); /* d2/dy2 */
  stk__binomial_window(kx0, win[0][1]);
  stk__binomial_window(ky1, win[1][0]); /* d2/dx2 */
  stk__second_derivative_window(kx1, win[1][1]);
  for (int i = 0; i < win[0][0]; i++) ky0[i] *= (float)scale[0];
  for (int i = 0; i < win[1][0]; i++) ky1[i] *= (float)scale[1];
  /* Both passes share one geometry: the larger window per axis, the smaller one padded
   * with zeros around its centre. */
  int kh = win[0][0] > win[1][0] ? win[0][0] : win[1][0];
  int kw = win[0][1] > win[1][1] ? win[0][1] : win[1][1];
  /* the plan's layout: ky0 (kh), kx0 (kw), ky1 (kh), kx1 (kw) */
  float *pk = plan_alloc(s, 2 * (size_t)(kh + kw), heap);
  if (!pk) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for the windows");
  memset(pk, 0, 2 * (size_t)(kh + kw) * sizeof(float));
  memcpy(pk + (kh - win[0][0]) / 2, ky0, (size_t)win[0][0] * sizeof(float));
  memcpy(pk + kh + (kw - win[0][1]) / 2, kx0, (size_t)win[0][1] * sizeof(float));
  memcpy(pk + kh + kw + (kh - win[1][0]) / 2, ky1, (size_t)win[1][0] * sizeof(float));
  memcpy(pk + 2 * kh + kw + (kw - win[1][1]) / 2, kx1, (size_t)win[1][1] * sizeof(float));
  stk__conv_geom g = {in->h, in->w, kh, kw, kh / 2, kw / 2, STK__BORDER_REFLECT_101, 0.0f};
  p->g = g, p->npairs = 2, p->w = pk;
  return STK_OK;
}

static stk_status laplacian_run(stk__node *node, stk__sample *s) {
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &in));
  stk_dtype odt;
  STK_TRY(out_dtype(node, L_DTYPE, in.dtype, &odt));
  conv_plan p;
  STK_TRY(laplacian_plan(node, s, &in, false, &p));
  int kh = p.g.kh, kw = p.g.kw;
  sep_pair pairs[2] = {{p.w, p.w + kh}, {p.w + kh + kw, p.w + 2 * kh + kw}};
  return run_separable(node, s, &in, stk__input(s, 0)->ndim, &p.g, pairs, 2, odt);
}

static stk_status laplacian_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return conv_run_gpu(node, b, L_DTYPE, laplacian_plan);
}

static const stk_op_schema laplacian_schema = {
    .name = "laplacian",
    .doc =
        "Computes the Laplacian d2/dy2 + d2/dx2 of each image (DALI's laplacian, OpenCV's "
        "Sobel-based windows): each partial derivative is a separable convolution of a "
        "second-derivative window along its axis and a binomial smoothing window across it; "
        "float32 intermediate, border reflect_101.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = img_in,
    .num_outputs = 1,
    .outputs = img_out,
    .num_args = sizeof laplacian_args / sizeof laplacian_args[0],
    .args = laplacian_args,
    .gpu_check =
        "# atol=1\n"
        "return laplacian(IN, window_size=[5], dtype=\"int16\", device=@)",
};
const stk__op_def stk__op_laplacian = {.schema = &laplacian_schema,
                                       .init = laplacian_init,
                                       .run_sample = laplacian_run,
                                       .run_gpu = laplacian_run_gpu};

/* ---------------------------------------------------------------------------------- */
/* filter                                                                             */
/* ---------------------------------------------------------------------------------- */

enum { F_KERNEL, F_KERNEL_SHAPE, F_ANCHOR, F_BORDER, F_FILL, F_MODE, F_DTYPE, FILTER_ARGS_COUNT_ };
static const stk_arg_schema filter_args[] = {
    [F_KERNEL] =
        {.name = "kernel",
         .type = STK_ARG_FLOATS,
         .flags = STK_ARGF_PER_SAMPLE,
         .doc =
             "the filter, row-major, when not given as input 1 (kernel_shape gives its extents)"},
    [F_KERNEL_SHAPE] = {.name = "kernel_shape",
                        .type = STK_ARG_INTS,
                        .doc = "[rows, cols] of `kernel`; a square kernel when absent"},
    [F_ANCHOR] =
        {.name = "anchor",
         .type = STK_ARG_INTS,
         .flags = STK_ARGF_PER_SAMPLE,
         .default_text = "[-1]",
         .doc = "[row, col] of the filter element placed over the output pixel; -1: the middle "
                "(extent / 2, rounded down). Ignored in mode \"valid\""},
    [F_BORDER] = {.name = "border",
                  .type = STK_ARG_STRING,
                  .default_text = "\"reflect_101\"",
                  .choices = STK__BORDER_CHOICES,
                  .doc = "out-of-image positions: reflect_101 (dcb|abcd|cba), reflect_1001 "
                         "(cba|abcd|dcb), wrap "
                         "(bcd|abcd|abc), clamp (aaa|abcd|ddd) or constant (fill_value)"},
    [F_FILL] = {.name = "fill_value",
                .type = STK_ARG_FLOAT,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "0.0",
                .doc = "the value outside the image with border \"constant\""},
    [F_MODE] =
        {.name = "mode",
         .type = STK_ARG_STRING,
         .default_text = "\"same\"",
         .choices = "same|valid",
         .doc = "\"same\": output as large as the input; \"valid\": only positions where the whole "
                "filter lies inside (extent - filter extent + 1)"},
    [F_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"\"",
                 .choices = FILTER_DTYPES,
                 .doc = "output type; \"\" keeps the input's (rounded and saturated)"},
};
STK__CHECK_ARGS(filter_args, FILTER_ARGS_COUNT_);

static const stk_port_schema filter_in[] = {
    {"input", "HWC or HW image, any numeric type"},
    {"filter", "optional 2D filter [rows, cols] per sample (any numeric type, used as float32)"}};

typedef struct {
  stk__border border;
  bool valid;
} filter_state;

static stk_status filter_init(stk__node *node) {
  bool has_input = stk__node_num_inputs(node) > 1, has_arg = stk__arg_given(node, F_KERNEL);
  if (has_input == has_arg)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      has_arg ? "give the filter either as 'kernel' or as input 1, not both"
                              : "needs a filter: input 1 or the 'kernel' argument");
  if (stk__arg_given(node, F_KERNEL_SHAPE)) {
    const int64_t *ks;
    size_t n = stk__arg_ints(node, NULL, F_KERNEL_SHAPE, &ks);
    if (n != 2 || ks[0] < 1 || ks[1] < 1 || ks[0] > MAX_KERNEL || ks[1] > MAX_KERNEL)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "kernel_shape must be [rows, cols] with extents in [1, %d]", MAX_KERNEL);
  }
  filter_state *st = stk__malloc(sizeof *st, "filter state");
  if (!st) return STK_ERR_OUT_OF_MEMORY;
  stk__border_parse(stk__arg_string(node, F_BORDER), &st->border);
  st->valid = strcmp(stk__arg_string(node, F_MODE), "valid") == 0;
  *stk__node_state(node) = st;
  return STK_OK;
}

static void filter_destroy(stk__node *node) {
  free(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

/* This sample's filter as float32, with its extents. */
static stk_status filter_kernel(stk__node *node, stk__sample *s, bool heap, float **k, int *kh,
                                int *kw) {
  size_t n;
  int64_t rows, cols;
  if (stk__node_num_inputs(node) > 1) {
    if (heap) /* the GPU path: input 1 would be a device list */
      return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                        "on the GPU the filter must be given as the 'kernel' argument");
    const stk__tensor *t = stk__input(s, 1);
    if (t->ndim != 2 || !stk__dtype_valid(t->dtype))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "the filter (input 1) must be a 2D array; it has %d dimensions", t->ndim);
    rows = t->shape[0], cols = t->shape[1];
    if (rows < 1 || cols < 1 || rows > MAX_KERNEL || cols > MAX_KERNEL)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "filter extents %lldx%lld must lie in [1, %d]", (long long)rows,
                        (long long)cols, MAX_KERNEL);
    n = (size_t)(rows * cols);
    if (!(*k = stk__scratch(s, n * sizeof(float))))
      return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch for the filter");
    stk__convert(*k, STK_DTYPE_FLOAT32, t->data, t->dtype, n);
  } else {
    const double *v;
    n = stk__arg_floats(node, s, F_KERNEL, &v);
    if (stk__arg_given(node, F_KERNEL_SHAPE)) {
      const int64_t *ks;
      stk__arg_ints(node, s, F_KERNEL_SHAPE, &ks);
      rows = ks[0], cols = ks[1];
    } else {
      rows = cols = (int64_t)llround(sqrt((double)n));
    }
    if (n == 0 || (size_t)(rows * cols) != n)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "kernel has %zu values; expected %lldx%lld (set kernel_shape for a "
                        "non-square filter)",
                        n, (long long)rows, (long long)cols);
    if (!(*k = plan_alloc(s, n, heap)))
      return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for the filter");
    for (size_t i = 0; i < n; i++) (*k)[i] = (float)v[i];
  }
  *kh = (int)rows, *kw = (int)cols;
  return STK_OK;
}

/* The geometry for this sample: anchors, output size, border. */
static stk_status filter_geom(stk__node *node, stk__sample *s, const stk__image *in, int kh, int kw,
                              stk__conv_geom *g) {
  const filter_state *st = *stk__node_state(node);
  *g = (stk__conv_geom){in->h, in->w, kh,         kw,
                        0,     0,     st->border, (float)stk__arg_float(node, s, F_FILL)};
  if (st->valid) {
    g->out_h = in->h - kh + 1, g->out_w = in->w - kw + 1;
    if (g->out_h < 1 || g->out_w < 1)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "mode \"valid\": the %dx%d filter is larger than the %lldx%lld image", kh,
                        kw, (long long)in->h, (long long)in->w);
    return STK_OK;
  }
  int64_t a[2];
  STK_TRY(axis_ints(node, s, F_ANCHOR, "anchor", a));
  for (int i = 0; i < 2; i++) {
    int ext = i == 0 ? kh : kw;
    if (a[i] < -1 || a[i] >= ext)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "anchor [%lld, %lld] must lie within the %dx%d filter (or be -1)",
                        (long long)a[0], (long long)a[1], kh, kw);
  }
  g->ay = a[0] < 0 ? kh / 2 : (int)a[0];
  g->ax = a[1] < 0 ? kw / 2 : (int)a[1];
  return STK_OK;
}

/* The plan: a separable filter with fewer taps than the full kernel runs as one pair
 * (stk__kernel_separable's factors), others tap by tap. */
static stk_status filter_plan(stk__node *node, stk__sample *s, const stk__image *in, bool heap,
                              conv_plan *p) {
  float *k = NULL;
  int kh = 0, kw = 0;
  STK_TRY(filter_kernel(node, s, heap, &k, &kh, &kw));
  stk_status st = filter_geom(node, s, in, kh, kw, &p->g);
  float *ky = st == STK_OK ? plan_alloc(s, (size_t)(kh + kw), heap) : NULL;
  if (st == STK_OK && !ky)
    st = STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for the filter");
  if (st == STK_OK && kh + kw < kh * kw && stk__kernel_separable(k, kh, kw, ky, ky + kh)) {
    p->npairs = 1, p->w = ky;
    if (heap) free(k);
    return STK_OK;
  }
  if (heap) free(ky);
  if (st != STK_OK) {
    if (heap) free(k);
    return st;
  }
  p->npairs = 0, p->w = k;
  return STK_OK;
}

static stk_status filter_run(stk__node *node, stk__sample *s) {
  stk__image in;
  STK_TRY(stk__image_input(node, s, 0, NULL, 0, &in));
  stk_dtype odt;
  STK_TRY(out_dtype(node, F_DTYPE, in.dtype, &odt));
  conv_plan p;
  STK_TRY(filter_plan(node, s, &in, false, &p));
  stk__conv_geom g = p.g;
  int kh = g.kh, kw = g.kw;
  if (p.npairs == 1) {
    sep_pair pair = {p.w, p.w + kh};
    return run_separable(node, s, &in, stk__input(s, 0)->ndim, &g, &pair, 1, odt);
  }
  const float *k = p.w;
  size_t need = stk__conv_scratch_size(&in, &g);
  if (need == 0)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "image %lldx%lld with a %dx%d filter is too large",
                      (long long)in.h, (long long)in.w, kh, kw);
  size_t n = (size_t)(g.out_h * g.out_w) * (size_t)in.c;
  void *scratch = stk__scratch(s, need);
  float *acc = stk__scratch(s, n * sizeof(float));
  if (!scratch || !acc) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  STK_TRY(stk__sample_wrap(stk__conv2d(&in, acc, &g, k, false, scratch, need), node, s));
  int64_t shape[3] = {g.out_h, g.out_w, in.c};
  int nd = stk__input(s, 0)->ndim;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, odt, nd, shape, nd == 2 ? "HW" : "HWC", &out));
  stk__convert(out->data, odt, acc, STK_DTYPE_FLOAT32, n);
  return STK_OK;
}

static stk_status filter_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return conv_run_gpu(node, b, F_DTYPE, filter_plan);
}

/* ---------------------------------------------------------------------------------- */
/* The GPU path of the three operators                                                */
/* ---------------------------------------------------------------------------------- */

static bool conv_gpu_in_type(stk_dtype t) {
  return t == STK_DTYPE_UINT8 || t == STK_DTYPE_INT8 || t == STK_DTYPE_UINT16 ||
         t == STK_DTYPE_INT16 || t == STK_DTYPE_INT32 || t == STK_DTYPE_FLOAT16 ||
         t == STK_DTYPE_FLOAT32;
}

static bool conv_gpu_out_type(stk_dtype t) {
  return conv_gpu_in_type(t) || t == STK_DTYPE_INT64 || t == STK_DTYPE_FLOAT64;
}

/* Sample i of the input as an image (HWC or HW) and its descriptor, or an error. */
static stk_status conv_gpu_image(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                 size_t i, stk__image *img) {
  stk_tensor_desc d;
  stk_tensor_list_sample(in, i, &d);
  if (d.ndim != 2 && d.ndim != 3)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                      "expects an HWC or HW image; got %d dimensions", d.ndim);
  if (d.ndim == 3 && strcmp(d.layout, "") != 0 && strcmp(d.layout, "HWC") != 0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                      "expects layout HWC; got '%s'", d.layout);
  stk__image im = {d.data, d.dtype, d.shape[0], d.shape[1], d.ndim == 3 ? d.shape[2] : 1};
  if (im.h < 1 || im.w < 1 || im.c < 1 || im.h > INT32_MAX || im.w > INT32_MAX || im.c > 65535)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                      "image extents %lldx%lldx%lld are empty or too large for the GPU path",
                      (long long)im.h, (long long)im.w, (long long)im.c);
  *img = im;
  return STK_OK;
}

/* One API call for the batch: the same plan per sample as the CPU (weights computed on
 * the host by the same functions), the output type as the CPU chooses it. */
static stk_status conv_run_gpu(stk__node *node, stk__gpu_batch *b, int dtype_arg,
                               stk_status (*plan)(stk__node *, stk__sample *, const stk__image *,
                                                  bool, conv_plan *)) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_dtype idt = stk_tensor_list_dtype(in), odt = idt;
  stk_gpu_conv_sample *cs = stk__calloc(n ? n : 1, sizeof *cs, "a convolution plan");
  int64_t *shapes = stk__calloc((n ? n : 1) * 3, sizeof(int64_t), "shapes");
  stk_status st = cs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  if (st == STK_OK) st = out_dtype(node, dtype_arg, idt, &odt);
  if (st == STK_OK && (!conv_gpu_in_type(idt) || !conv_gpu_out_type(odt)))
    st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                    "the GPU path takes uint8, int8, uint16, int16, int32, float16 or float32 "
                    "inputs and outputs (also int64, float64); got %s -> %s",
                    stk_dtype_name(idt) ? stk_dtype_name(idt) : "?",
                    stk_dtype_name(odt) ? stk_dtype_name(odt) : "?");
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__image img;
    st = conv_gpu_image(node, b, in, i, &img);
    conv_plan p = {{0}, 0, NULL};
    if (st == STK_OK) st = plan(node, stk__gpu_sample(b, i), &img, true, &p);
    if (st != STK_OK) break;
    const stk__conv_geom *g = &p.g;
    cs[i].weights = p.w;
    cs[i].src = img.data;
    cs[i].h = (int)img.h, cs[i].w = (int)img.w, cs[i].c = (int)img.c;
    cs[i].out_h = (int)g->out_h, cs[i].out_w = (int)g->out_w;
    cs[i].kh = g->kh, cs[i].kw = g->kw, cs[i].ay = g->ay, cs[i].ax = g->ax;
    cs[i].border = (int)g->border, cs[i].fill = g->fill, cs[i].npairs = p.npairs;
    int64_t *sh = shapes + i * (size_t)ndim;
    sh[0] = g->out_h, sh[1] = g->out_w;
    if (ndim == 3) sh[2] = img.c;
  }
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, odt, ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      cs[i].dst = d.data;
    }
    stk__gpu *gpu = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(
        node,
        stk_gpu_run_conv(gpu->api, gpu->ctx, (int)n, cs, &(stk_gpu_io_args){idt, odt},
                         stk__gpu_stream(b), err, sizeof err),
        err);
  }
  if (cs)
    for (size_t i = 0; i < n; i++) free((void *)cs[i].weights);
  free(cs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

#define FILTER_DOC                                                                     \
  "Convolves each image with a 2D filter (DALI's experimental.filter). It computes a " \
  "correlation, as DALI and OpenCV's filter2D: the filter is not flipped. Separable "  \
  "filters run as two 1D passes; float32 accumulation."

static const stk_op_schema filter_schema = {
    .name = "filter",
    .doc = FILTER_DOC,
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = filter_in,
    .num_outputs = 1,
    .outputs = img_out,
    .num_args = sizeof filter_args / sizeof filter_args[0],
    .args = filter_args,
    .gpu_check =
        "# atol=1\n"
        "return filter(IN, kernel=[0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, "
        "0.0625], border=\"reflect_101\", device=@)",
};
const stk__op_def stk__op_filter = {.schema = &filter_schema,
                                    .init = filter_init,
                                    .destroy = filter_destroy,
                                    .run_sample = filter_run,
                                    .run_gpu = filter_run_gpu};

static const stk_op_schema experimental_filter_schema = {
    .name = "experimental.filter",
    .doc = FILTER_DOC " Same operator as `filter` (DALI's name).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 2,
    .inputs = filter_in,
    .num_outputs = 1,
    .outputs = img_out,
    .num_args = sizeof filter_args / sizeof filter_args[0],
    .args = filter_args,
    .gpu_check =
        "# atol=1\n"
        "return experimental.filter(IN, kernel=[0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, "
        "0.125, 0.0625], device=@)",
};
const stk__op_def stk__op_experimental_filter = {.schema = &experimental_filter_schema,
                                                 .init = filter_init,
                                                 .destroy = filter_destroy,
                                                 .run_sample = filter_run,
                                                 .run_gpu = filter_run_gpu};
