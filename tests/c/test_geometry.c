/* Geometry: the affine warp kernel, rotate, warp_affine and the transforms.* matrix
 * builders.
 *
 * References: a float64 warp written here from the conventions in ops/geometry.h (pixel
 * centres at +0.5, Keys' cubic with a = -0.5, constant or clamped border, round half away
 * from zero); Pillow's Image.rotate and Image.transform(AFFINE) run through the project's
 * .venv (skipped when Pillow is missing); matrices composed by hand. Tolerances: uint8
 * results within 1 level of the float64 reference (float32 arithmetic inside); Pillow's
 * nearest results equal ours except where the source point lies within 0.02 pixel of a
 * pixel edge (Pillow's nearest path computes coordinates in 16.16 fixed point); Pillow's
 * bilinear results within 1 level (Pillow truncates where we round)
 * on pixels whose four taps lie inside the image (Pillow clamps taps at the edges where
 * torchvision's tensor path and DALI blend with the fill value, as we do). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codecs.h"
#include "ops/geometry.h"

#define PI 3.14159265358979323846

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                            */
/* ---------------------------------------------------------------------------------- */

typedef tu_image img_t;
#define load_photo tu_load_photo

static uint32_t rng_state = 2024;
static double urand(void) { /* xorshift32 in [0, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 17;
  rng_state ^= rng_state << 5;
  return (rng_state >> 8) / 16777216.0;
}

/* Keys' cubic, a = -0.5, from the published piecewise formula. */
static double keys(double x) {
  x = fabs(x);
  if (x < 1) return 1.5 * x * x * x - 2.5 * x * x + 1;
  if (x < 2) return -0.5 * x * x * x + 2.5 * x * x - 4 * x + 2;
  return 0;
}

typedef struct {
  const double *src; /* float64 copy of the source */
  int h, w, c;
  bool constant;
  const double *fill;
} ref_src;

static double ref_tap(const ref_src *S, long x, long y, int ch) {
  if (x < 0 || y < 0 || x >= S->w || y >= S->h) {
    if (S->constant) return S->fill[ch];
    x = x < 0 ? 0 : x >= S->w ? S->w - 1 : x;
    y = y < 0 ? 0 : y >= S->h ? S->h - 1 : y;
  }
  return S->src[((size_t)y * S->w + x) * S->c + ch];
}

/* The float64 warp: out (oh x ow x c doubles). interp 0 nearest, 1 linear, 2 cubic. */
static void ref_warp(const ref_src *S, const double m[6], int interp, int oh, int ow, double *out) {
  for (int y = 0; y < oh; y++)
    for (int x = 0; x < ow; x++) {
      double ex = m[0] * (x + 0.5) + m[1] * (y + 0.5) + m[2];
      double ey = m[3] * (x + 0.5) + m[4] * (y + 0.5) + m[5];
      double u = ex - 0.5, v = ey - 0.5;
      for (int ch = 0; ch < S->c; ch++) {
        double r = 0;
        if (interp == 0) {
          r = ref_tap(S, (long)floor(ex), (long)floor(ey), ch);
        } else if (interp == 1) {
          long x0 = (long)floor(u), y0 = (long)floor(v);
          double fx = u - x0, fy = v - y0;
          r = (1 - fy) * ((1 - fx) * ref_tap(S, x0, y0, ch) + fx * ref_tap(S, x0 + 1, y0, ch)) +
              fy * ((1 - fx) * ref_tap(S, x0, y0 + 1, ch) + fx * ref_tap(S, x0 + 1, y0 + 1, ch));
        } else {
          long x0 = (long)floor(u), y0 = (long)floor(v);
          for (int j = -1; j <= 2; j++)
            for (int i = -1; i <= 2; i++)
              r += keys(u - (x0 + i)) * keys(v - (y0 + j)) * ref_tap(S, x0 + i, y0 + j, ch);
        }
        out[((size_t)y * ow + x) * S->c + ch] = r;
      }
    }
}

static double *to_double(const uint8_t *p, size_t n) {
  double *d = malloc(n * sizeof(double));
  assert_non_null(d);
  for (size_t i = 0; i < n; i++) d[i] = p[i];
  return d;
}

/* True when output pixel (x, y) samples within `tol` of a source pixel edge, where
 * nearest-neighbour results legitimately depend on rounding. */
static bool near_edge(const double m[6], int x, int y, double tol) {
  double ex = m[0] * (x + 0.5) + m[1] * (y + 0.5) + m[2];
  double ey = m[3] * (x + 0.5) + m[4] * (y + 0.5) + m[5];
  return fabs(ex - floor(ex + 0.5)) < tol || fabs(ey - floor(ey + 0.5)) < tol;
}

static uint8_t round_u8(double v) {
  v = v < 0 ? 0 : v > 255 ? 255 : v;
  return (uint8_t)floor(v + 0.5);
}

/* Compares uint8 output with the float64 reference: max |diff| and mismatch count. */
static void compare_u8(const uint8_t *got, const double *ref, size_t n, int *maxd, size_t *bad) {
  *maxd = 0, *bad = 0;
  for (size_t i = 0; i < n; i++) {
    int d = abs((int)got[i] - (int)round_u8(ref[i]));
    if (d > *maxd) *maxd = d;
    if (d) (*bad)++;
  }
}

/* Runs the kernel on a uint8 image into a fresh uint8 buffer. */
static uint8_t *kernel_u8(const img_t *im, const double m[6], stk__interp interp, const float *fill,
                          int oh, int ow) {
  uint8_t *out = malloc((size_t)oh * ow * im->c);
  float *row = malloc((size_t)ow * im->c * sizeof(float));
  assert_non_null(out);
  assert_non_null(row);
  stk__image src = {im->p, STK_DTYPE_UINT8, im->h, im->w, im->c};
  stk__image dst = {out, STK_DTYPE_UINT8, oh, ow, im->c};
  stk__warp_params p = {{m[0], m[1], m[2], m[3], m[4], m[5]}, interp, fill != NULL, fill};
  TU_OK(stk__warp_affine(&src, &dst, &p, row));
  free(row);
  return out;
}

/* ---------------------------------------------------------------------------------- */
/* Matrices and sizes                                                                 */
/* ---------------------------------------------------------------------------------- */

static void test_matrix_helpers(void **state) {
  double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0.5, -1, 2, 3, 0.25, -4}, r[6];
  stk__affine_mul(a, b, r);
  /* [[1,2,3],[4,5,6],[0,0,1]] x [[.5,-1,2],[3,.25,-4],[0,0,1]] by hand */
  double expect[6] = {6.5, -0.5, -3, 17, -2.75, -6};
  for (int i = 0; i < 6; i++) assert_true(fabs(r[i] - expect[i]) < 1e-12);
  double inv[6], id[6];
  assert_true(stk__affine_invert(b, inv));
  stk__affine_mul(b, inv, id);
  double eye[6] = {1, 0, 0, 0, 1, 0};
  for (int i = 0; i < 6; i++) assert_true(fabs(id[i] - eye[i]) < 1e-12);
  double singular[6] = {1, 2, 0, 2, 4, 7};
  assert_false(stk__affine_invert(singular, inv));
  double nan_m[6] = {NAN, 0, 0, 0, 1, 0};
  assert_false(stk__affine_invert(nan_m, inv));
}

static void test_rotate_canvas_dali_rule(void **state) {
  int64_t h, w;
  /* 480x640 by 30 degrees: w = ceil(.8660*640 + .5*480 - .01) = 795 -> 796 (parity of
   * 640); h = ceil(.8660*480 + .5*640 - .01) = 736 (even, as 480). */
  stk__rotate_canvas(480, 640, 30, &h, &w);
  assert_int_equal(h, 736);
  assert_int_equal(w, 796);
  /* 90 degrees swaps the extents; |sin| > |cos| takes parities from the other axis. */
  stk__rotate_canvas(3, 5, 90, &h, &w);
  assert_int_equal(h, 5);
  assert_int_equal(w, 3);
  stk__rotate_canvas(300, 451, 0, &h, &w);
  assert_int_equal(h, 300);
  assert_int_equal(w, 451);
  /* 300x451 by 10 degrees: w = ceil(.98481*451 + .17365*300 - .01) = 497 (odd as 451);
   * h = ceil(.98481*300 + .17365*451 - .01) = 374 (even as 300). */
  stk__rotate_canvas(300, 451, 10, &h, &w);
  assert_int_equal(w, 497);
  assert_int_equal(h, 374);
  stk__rotate_canvas(300, 451, -10, &h, &w); /* symmetric in the sign */
  assert_int_equal(w, 497);
  assert_int_equal(h, 374);
}

/* The rotation matrix maps the output centre to the input centre and turns the image
 * counter-clockwise on screen: content below the centre moves to the right for +90. */
static void test_rotate_matrix_direction(void **state) {
  double m[6];
  stk__rotate_matrix(90, 100, 200, 200, 100, m);
  double cx = m[0] * 50 + m[1] * 100 + m[2], cy = m[3] * 50 + m[4] * 100 + m[5];
  assert_true(fabs(cx - 100) < 1e-9 && fabs(cy - 50) < 1e-9);
  /* output pixel right of centre (x = 50 + 10) reads the input 10 below its centre */
  double sx = m[0] * 60 + m[1] * 100 + m[2], sy = m[3] * 60 + m[4] * 100 + m[5];
  assert_true(fabs(sx - 100) < 1e-9 && fabs(sy - 60) < 1e-9);
  /* and a 4x4 image with one bright pixel below the centre: after +90 it is right of it */
  uint8_t px[16] = {0};
  px[3 * 4 + 1] = 200; /* row 3, column 1: below-left of the centre (2, 2) */
  img_t im = {px, 4, 4, 1};
  stk__rotate_matrix(90, 4, 4, 4, 4, m);
  uint8_t *out = kernel_u8(&im, m, STK__INTERP_NEAREST, NULL, 4, 4);
  /* counter-clockwise by 90: (x, y) relative to centre -> (y, -x): (-0.5, 1.5) -> (1.5, 0.5) */
  assert_int_equal(out[2 * 4 + 3], 200);
  int lit = 0;
  for (int i = 0; i < 16; i++) lit += out[i] != 0;
  assert_int_equal(lit, 1);
  free(out);
}

/* ---------------------------------------------------------------------------------- */
/* Kernel against the float64 reference                                                */
/* ---------------------------------------------------------------------------------- */

static void check_kernel_case(const img_t *im, const double m[6], int interp, bool constant, int oh,
                              int ow, const char *what) {
  double fill_d[4] = {12, 200, 77, 5};
  float fill_f[4] = {12, 200, 77, 5};
  size_t n_in = (size_t)im->h * im->w * im->c, n_out = (size_t)oh * ow * im->c;
  double *src = to_double(im->p, n_in);
  ref_src S = {src, im->h, im->w, im->c, constant, fill_d};
  double *ref = malloc(n_out * sizeof(double));
  assert_non_null(ref);
  ref_warp(&S, m, interp, oh, ow, ref);
  uint8_t *got = kernel_u8(im, m, (stk__interp)interp, constant ? fill_f : NULL, oh, ow);
  int maxd;
  size_t bad;
  compare_u8(got, ref, n_out, &maxd, &bad);
  if (maxd > 1 || bad * 100 > n_out)
    fail_msg("%s: max diff %d, %zu of %zu differ", what, maxd, bad, n_out);
  /* float32 output: the unrounded value within 1e-3 of float64 */
  float *gf = malloc(n_out * sizeof(float));
  float *fsrc = malloc(n_in * sizeof(float));
  for (size_t i = 0; i < n_in; i++) fsrc[i] = im->p[i];
  stk__image s32 = {fsrc, STK_DTYPE_FLOAT32, im->h, im->w, im->c};
  stk__image d32 = {gf, STK_DTYPE_FLOAT32, oh, ow, im->c};
  stk__warp_params p = {
      {m[0], m[1], m[2], m[3], m[4], m[5]}, (stk__interp)interp, constant, fill_f};
  TU_OK(stk__warp_affine(&s32, &d32, &p, NULL));
  double worst = 0;
  for (size_t i = 0; i < n_out; i++) worst = fmax(worst, fabs(gf[i] - ref[i]));
  if (worst > 2e-3) fail_msg("%s: float32 output off by %g", what, worst);
  free(gf), free(fsrc), free(got), free(ref), free(src);
}

static void test_kernel_vs_float64_reference(void **state) {
  img_t im = load_photo("data/photos/chelsea.png"); /* 451 x 300, odd width */
  double m[6];
  char what[128];
  const double angles[] = {23.5, -41.0, 180.0};
  for (int a = 0; a < 3; a++)
    for (int interp = 0; interp < 3; interp++)
      for (int constant = 0; constant < 2; constant++) {
        int64_t oh, ow;
        stk__rotate_canvas(im.h, im.w, angles[a], &oh, &ow);
        stk__rotate_matrix(angles[a], im.h, im.w, oh, ow, m);
        snprintf(what, sizeof what, "rotate %g interp %d constant %d", angles[a], interp, constant);
        check_kernel_case(&im, m, interp, constant, (int)oh, (int)ow, what);
      }
  /* shear + anisotropic scale + translation, output smaller than the input */
  double aff[6] = {1.3, 0.4, -20.5, -0.25, 0.8, 35.25};
  for (int interp = 0; interp < 3; interp++) {
    snprintf(what, sizeof what, "affine interp %d", interp);
    check_kernel_case(&im, aff, interp, interp != 1, 200, 260, what);
  }
  /* random matrices on a small random image, with extreme zoom */
  uint8_t small[7 * 5 * 2];
  for (size_t i = 0; i < sizeof small; i++) small[i] = (uint8_t)(urand() * 256);
  img_t sm = {small, 7, 5, 2};
  for (int t = 0; t < 20; t++) {
    double r[6];
    for (int i = 0; i < 6; i++) r[i] = (urand() - 0.5) * (i % 3 == 2 ? 20 : 3);
    snprintf(what, sizeof what, "random matrix %d", t);
    check_kernel_case(&sm, r, t % 3, t % 2, 9, 11, what);
  }
  free(im.p);
}

/* Coordinates far outside, and non-finite matrices. */
static void test_kernel_extremes(void **state) {
  uint8_t px[4 * 4 * 3];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 5);
  img_t im = {px, 4, 4, 3};
  float fill[3] = {1, 2, 3};
  double far[6] = {1, 0, 1e300, 0, 1, -1e300};
  for (int interp = 0; interp < 3; interp++) {
    uint8_t *out = kernel_u8(&im, far, (stk__interp)interp, fill, 3, 3);
    for (int i = 0; i < 9; i++) {
      assert_int_equal(out[i * 3 + 0], 1);
      assert_int_equal(out[i * 3 + 2], 3);
    }
    free(out);
    /* clamp border: the nearest corner (top-right: x huge, y very negative) */
    out = kernel_u8(&im, far, (stk__interp)interp, NULL, 2, 2);
    for (int i = 0; i < 4; i++) assert_int_equal(out[i * 3 + 1], px[3 * 3 + 1]);
    free(out);
  }
  stk__image src = {px, STK_DTYPE_UINT8, 4, 4, 3};
  uint8_t o[27];
  float row[9];
  stk__image dst = {o, STK_DTYPE_UINT8, 3, 3, 3};
  stk__warp_params p = {{NAN, 0, 0, 0, 1, 0}, STK__INTERP_LINEAR, false, NULL};
  assert_int_equal(stk__warp_affine(&src, &dst, &p, row), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "not finite"));
  p.m[0] = 1, p.interp = STK__INTERP_LANCZOS3;
  assert_int_equal(stk__warp_affine(&src, &dst, &p, row), STK_ERR_INVALID_ARGUMENT);
  p.interp = STK__INTERP_LINEAR;
  dst.dtype = STK_DTYPE_INT16;
  assert_int_equal(stk__warp_affine(&src, &dst, &p, row), STK_ERR_UNSUPPORTED);
}

/* ---------------------------------------------------------------------------------- */
/* Pillow                                                                             */
/* ---------------------------------------------------------------------------------- */

static const char *pillow_script =
    "import sys\n"
    "import numpy as np\n"
    "from PIL import Image\n"
    "d, h, w = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "img = Image.fromarray(np.fromfile(d + '/in.bin', np.uint8).reshape(h, w, 3))\n"
    "R = {'nearest': Image.NEAREST, 'linear': Image.BILINEAR}\n"
    "for line in open(d + '/cases.txt'):\n"
    "    f = line.split()\n"
    "    name, kind, rs = f[0], f[1], R[f[2]]\n"
    "    fill = tuple(int(v) for v in f[3:6])\n"
    "    if kind == 'rotate':\n"
    "        out = img.rotate(float(f[6]), resample=rs, expand=False, fillcolor=fill)\n"
    "    else:\n"
    "        oh, ow = int(f[6]), int(f[7])\n"
    "        data = tuple(float(v) for v in f[8:14])\n"
    "        out = img.transform((ow, oh), Image.AFFINE, data, resample=rs, fillcolor=fill)\n"
    "    np.asarray(out, np.uint8).tofile(d + '/' + name + '.bin')\n";

/* Runs the Pillow script; false (the test skips) when Python or Pillow is missing. */
static bool run_pillow(const char *dir, int h, int w) {
  char py[1024], cmd[4096], script[1200];
  tu_path(py, sizeof py, ".venv/bin/python");
  snprintf(cmd, sizeof cmd, "'%s' -c 'import PIL, numpy' 2>/dev/null", py);
  if (system(cmd) != 0) return false;
  snprintf(script, sizeof script, "%s/ref.py", dir);
  tu_write(script, pillow_script, strlen(pillow_script));
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %d %d", py, script, dir, h, w);
  if (system(cmd) != 0) fail_msg("the Pillow reference script failed: %s", cmd);
  return true;
}

static void test_against_pillow(void **state) {
  img_t im = load_photo("data/photos/coffee.png"); /* 600 x 400 */
  char dir[256], path[512];
  tu_tmpdir(dir, sizeof dir, "geom-pillow");
  snprintf(path, sizeof path, "%s/in.bin", dir);
  tu_write(path, im.p, (size_t)im.h * im.w * 3);
  /* name kind interp fill(3) args */
  struct {
    const char *name;
    bool rotate;
    int interp;
    double angle;
    double m[6];
    int oh, ow;
  } cases[] = {
      {"rot_n", true, 0, 23.5, {0}, 0, 0},
      {"rot_l", true, 1, -41.0, {0}, 0, 0},
      {"rot_l2", true, 1, 7.25, {0}, 0, 0},
      {"aff_n", false, 0, 0, {1.3, 0.4, -20.5, -0.25, 0.8, 35.25}, 350, 420},
      {"aff_l", false, 1, 0, {0.7, -0.3, 90.0, 0.35, 1.1, -12.0}, 380, 500},
  };
  int ncases = (int)(sizeof cases / sizeof cases[0]);
  snprintf(path, sizeof path, "%s/cases.txt", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (int i = 0; i < ncases; i++) {
    const char *rs = cases[i].interp ? "linear" : "nearest";
    if (cases[i].rotate) {
      fprintf(f, "%s rotate %s 10 20 30 %.17g\n", cases[i].name, rs, cases[i].angle);
    } else {
      const double *m = cases[i].m;
      fprintf(f, "%s affine %s 10 20 30 %d %d %.17g %.17g %.17g %.17g %.17g %.17g\n", cases[i].name,
              rs, cases[i].oh, cases[i].ow, m[0], m[1], m[2], m[3], m[4], m[5]);
    }
  }
  fclose(f);
  if (!run_pillow(dir, im.h, im.w)) {
    free(im.p);
    print_message("Pillow is not available in .venv: skipping the Pillow comparison\n");
    skip();
  }
  float fill[3] = {10, 20, 30};
  for (int i = 0; i < ncases; i++) {
    double m[6];
    int oh = im.h, ow = im.w;
    if (cases[i].rotate)
      stk__rotate_matrix(cases[i].angle, im.h, im.w, im.h, im.w, m);
    else
      memcpy(m, cases[i].m, sizeof m), oh = cases[i].oh, ow = cases[i].ow;
    uint8_t *got = kernel_u8(&im, m, (stk__interp)cases[i].interp, fill, oh, ow);
    size_t size;
    snprintf(path, sizeof path, "%s/%s.bin", dir, cases[i].name);
    uint8_t *ref = tu_read(path, &size);
    assert_int_equal(size, (size_t)oh * ow * 3);
    size_t compared = 0, bad = 0;
    int maxd = 0;
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++) {
        if (cases[i].interp == 1) { /* only where all four taps are inside */
          double u = m[0] * (x + 0.5) + m[1] * (y + 0.5) + m[2] - 0.5;
          double v = m[3] * (x + 0.5) + m[4] * (y + 0.5) + m[5] - 0.5;
          if (!(floor(u) >= 0 && floor(u) + 1 < im.w && floor(v) >= 0 && floor(v) + 1 < im.h))
            continue;
        }
        compared++;
        int worst = 0;
        for (int ch = 0; ch < 3; ch++) {
          size_t k = ((size_t)y * ow + x) * 3 + (size_t)ch;
          int d = abs((int)got[k] - (int)ref[k]);
          if (d > worst) worst = d;
        }
        if (worst > maxd) maxd = worst;
        /* Pillow's nearest path works in 16.16 fixed point: its coordinates may be off by
         * about 0.01 pixel, so only mismatches farther from a pixel edge count. */
        if (cases[i].interp == 0 ? worst != 0 && !near_edge(m, x, y, 0.02) : worst > 1) bad++;
      }
    print_message("Pillow %s: %zu pixels compared, max diff %d, %zu beyond tolerance\n",
                  cases[i].name, compared, maxd, bad);
    assert_true(compared > (size_t)oh * ow / 2);
    assert_int_equal(bad, 0);
    free(got), free(ref);
  }
  free(im.p);
}

/* ---------------------------------------------------------------------------------- */
/* Operators through pipelines                                                        */
/* ---------------------------------------------------------------------------------- */

static stk_pipeline *make_pipe(int batch, int threads) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, batch));
  TU_OK(stk_pipeline_set(p, STK_PIPE_NUM_THREADS, threads));
  TU_OK(stk_pipeline_set(p, STK_PIPE_SEED, 11));
  return p;
}

static void add_source(stk_pipeline *p, const char *name, const char *layout) {
  stk_op *op;
  TU_OK(stk_op_create("external_source", "cpu", &op));
  TU_OK(stk_op_set_name(op, name));
  if (layout) TU_OK(stk_op_set_string(op, "layout", layout));
  TU_OK(stk_op_add_output(op, name));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
}

static void add_uniform(stk_pipeline *p, const char *out, double lo, double hi) {
  stk_op *op;
  TU_OK(stk_op_create("random.uniform", "cpu", &op));
  double r[2] = {lo, hi};
  TU_OK(stk_op_set_floats(op, "range", r, 2));
  TU_OK(stk_op_add_output(op, out));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
}

static void feed_same(stk_pipeline *p, const char *name, const img_t *im, int count) {
  stk_tensor_desc d[16];
  for (int i = 0; i < count; i++)
    d[i] = (stk_tensor_desc){.data = im->p,
                             .ndim = 3,
                             .shape = {im->h, im->w, im->c},
                             .strides = {(int64_t)im->w * im->c, im->c, 1},
                             .dtype = STK_DTYPE_UINT8};
  TU_OK(stk_pipeline_feed(p, name, d, (size_t)count));
}

static void set_outputs(stk_pipeline *p, const char *const *names, size_t n) {
  TU_OK(stk_pipeline_set_outputs(p, names, n));
}

/* rotate with a per-sample angle from random.uniform, a per-channel fill and the DALI
 * canvas; warp_affine fed by transforms.rotation about the centre equals rotate with
 * keep_size; the matrix as the second input gives the same. */
static void test_rotate_per_sample_pipeline(void **state) {
  img_t im = load_photo("data/photos/chelsea.png");
  enum { B = 4 };
  stk_pipeline *p = make_pipe(B, 2);
  add_source(p, "img", "HWC");
  add_uniform(p, "angle", -45, 45);
  stk_op *op;
  TU_OK(stk_op_create("rotate", "cpu", &op));
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_arg_input(op, "angle", "angle"));
  double fill[3] = {255, 0, 128};
  TU_OK(stk_op_set_floats(op, "fill_value", fill, 3));
  TU_OK(stk_op_add_output(op, "rot"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  /* keep_size rotation and its warp_affine twins */
  TU_OK(stk_op_create("rotate", "cpu", &op));
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_arg_input(op, "angle", "angle"));
  TU_OK(stk_op_set_bool(op, "keep_size", 1));
  TU_OK(stk_op_set_floats(op, "fill_value", fill, 3));
  TU_OK(stk_op_add_output(op, "rot_keep"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  TU_OK(stk_op_create("transforms.rotation", "cpu", &op));
  TU_OK(stk_op_set_arg_input(op, "angle", "angle"));
  double center[2] = {im.w / 2.0, im.h / 2.0};
  TU_OK(stk_op_set_floats(op, "center", center, 2));
  TU_OK(stk_op_add_output(op, "mt"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  TU_OK(stk_op_create("warp_affine", "cpu", &op));
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_arg_input(op, "matrix", "mt"));
  TU_OK(stk_op_set_floats(op, "fill_value", fill, 3));
  TU_OK(stk_op_add_output(op, "warp_arg"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  TU_OK(stk_op_create("warp_affine", "cpu", &op));
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_add_input(op, "mt"));
  TU_OK(stk_op_set_floats(op, "fill_value", fill, 3));
  TU_OK(stk_op_add_output(op, "warp_in"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"rot", "angle", "rot_keep", "warp_arg", "warp_in"};
  set_outputs(p, outs, 5);
  TU_OK(stk_pipeline_build(p));
  double fill_d[3] = {255, 0, 128};
  double *src = to_double(im.p, (size_t)im.h * im.w * 3);
  ref_src S = {src, im.h, im.w, 3, true, fill_d};
  double angles_seen[2 * B];
  for (int b = 0; b < 2; b++) {
    feed_same(p, "img", &im, B);
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    for (size_t i = 0; i < B; i++) {
      stk_tensor_desc r, a, k, wa, wi;
      TU_OK(stk_tensor_list_sample(stk_batch_output(out, 0), i, &r));
      TU_OK(stk_tensor_list_sample(stk_batch_output(out, 1), i, &a));
      TU_OK(stk_tensor_list_sample(stk_batch_output(out, 2), i, &k));
      TU_OK(stk_tensor_list_sample(stk_batch_output(out, 3), i, &wa));
      TU_OK(stk_tensor_list_sample(stk_batch_output(out, 4), i, &wi));
      double angle = *(float *)a.data;
      angles_seen[b * B + i] = angle;
      int64_t oh, ow;
      stk__rotate_canvas(im.h, im.w, angle, &oh, &ow);
      assert_int_equal(r.shape[0], oh);
      assert_int_equal(r.shape[1], ow);
      assert_string_equal(r.layout, "HWC");
      double m[6];
      stk__rotate_matrix(angle, im.h, im.w, oh, ow, m);
      size_t n = (size_t)oh * ow * 3;
      double *ref = malloc(n * sizeof(double));
      ref_warp(&S, m, 1, (int)oh, (int)ow, ref);
      int maxd;
      size_t bad;
      compare_u8(r.data, ref, n, &maxd, &bad);
      assert_true(maxd <= 1 && bad * 100 < n);
      free(ref);
      /* keep_size: same size as the input; the two warp_affine forms agree with it */
      assert_int_equal(k.shape[0], im.h);
      assert_int_equal(k.shape[1], im.w);
      size_t nk = (size_t)im.h * im.w * 3, differ = 0;
      int worst = 0;
      for (size_t j = 0; j < nk; j++) {
        int d1 = abs(((uint8_t *)k.data)[j] - ((uint8_t *)wa.data)[j]);
        int d2 = abs(((uint8_t *)wa.data)[j] - ((uint8_t *)wi.data)[j]);
        worst = d1 > worst ? d1 : worst;
        differ += d1 != 0;
        assert_int_equal(d2, 0); /* argument and input forms are identical */
      }
      /* the matrix went through float32: rounding may flip a few values by one level */
      assert_true(worst <= 1 && differ * 1000 < nk);
    }
    stk_batch_release(out);
  }
  bool varied = false;
  for (int i = 1; i < 2 * B; i++) varied |= angles_seen[i] != angles_seen[0];
  assert_true(varied);
  stk_pipeline_destroy(p);
  free(src), free(im.p);
}

/* Builds one transform op with an optional input matrix edge. */
static void add_tf(stk_pipeline *p, const char *kind, const char *in, const char *out,
                   const char *arg, const double *v, size_t n, bool reverse) {
  stk_op *op;
  TU_OK(stk_op_create(kind, "cpu", &op));
  if (in) TU_OK(stk_op_add_input(op, in));
  if (arg) {
    if (strcmp(arg, "angle") == 0)
      TU_OK(stk_op_set_float(op, arg, v[0]));
    else
      TU_OK(stk_op_set_floats(op, arg, v, n));
  }
  if (reverse) TU_OK(stk_op_set_bool(op, "reverse_order", 1));
  TU_OK(stk_op_add_output(op, out));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
}

static void expect_matrix(const stk_tensor_list *tl, const double *m, const char *what) {
  stk_tensor_desc d;
  TU_OK(stk_tensor_list_sample(tl, 0, &d));
  assert_int_equal(d.dtype, STK_DTYPE_FLOAT32);
  assert_int_equal(d.ndim, 2);
  assert_int_equal(d.shape[0], 2);
  assert_int_equal(d.shape[1], 3);
  for (int i = 0; i < 6; i++)
    if (fabs(((float *)d.data)[i] - m[i]) > 1e-5 * (1 + fabs(m[i])))
      fail_msg("%s: element %d is %g, expected %g", what, i, ((float *)d.data)[i], m[i]);
}

static void test_transforms_matrices(void **state) {
  stk_pipeline *p = make_pipe(1, 1);
  double ang = 30, ctr[2] = {10, 20}, sh[2] = {0.5, -0.25}, ang2[2] = {45, -30};
  double off[2] = {3, -7}, sc[2] = {2, 0.5};
  add_tf(p, "transforms.rotation", NULL, "r", "angle", &ang, 1, false);
  add_tf(p, "transforms.shear", NULL, "s", "shear", sh, 2, false);
  add_tf(p, "transforms.shear", NULL, "sa", "angles", ang2, 2, false);
  add_tf(p, "transforms.translation", NULL, "t", "offset", off, 2, false);
  add_tf(p, "transforms.scale", NULL, "sc", "scale", sc, 2, false);
  /* centred rotation and scale; chained: translation appended to the rotation, both
   * orders; combine of three in both orders */
  stk_op *op;
  TU_OK(stk_op_create("transforms.rotation", "cpu", &op));
  TU_OK(stk_op_set_float(op, "angle", 30));
  TU_OK(stk_op_set_floats(op, "center", ctr, 2));
  TU_OK(stk_op_add_output(op, "rc"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  TU_OK(stk_op_create("transforms.scale", "cpu", &op));
  TU_OK(stk_op_set_floats(op, "scale", sc, 2));
  TU_OK(stk_op_set_floats(op, "center", ctr, 2));
  TU_OK(stk_op_add_output(op, "scc"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  add_tf(p, "transforms.translation", "r", "rt", "offset", off, 2, false);
  add_tf(p, "transforms.translation", "r", "tr", "offset", off, 2, true);
  TU_OK(stk_op_create("transforms.combine", "cpu", &op));
  TU_OK(stk_op_add_input(op, "r"));
  TU_OK(stk_op_add_input(op, "s"));
  TU_OK(stk_op_add_input(op, "t"));
  TU_OK(stk_op_add_output(op, "comb"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  TU_OK(stk_op_create("transforms.combine", "cpu", &op));
  TU_OK(stk_op_add_input(op, "r"));
  TU_OK(stk_op_add_input(op, "s"));
  TU_OK(stk_op_add_input(op, "t"));
  TU_OK(stk_op_set_bool(op, "reverse_order", 1));
  TU_OK(stk_op_add_output(op, "combr"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"r", "s", "sa", "t", "sc", "rc", "scc", "rt", "tr", "comb", "combr"};
  set_outputs(p, outs, 11);
  TU_OK(stk_pipeline_build(p));
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  double c = cos(PI / 6), s = sin(PI / 6);
  double R[6] = {c, -s, 0, s, c, 0};
  expect_matrix(stk_batch_output(b, 0), R, "rotation");
  double S[6] = {1, 0.5, 0, -0.25, 1, 0};
  expect_matrix(stk_batch_output(b, 1), S, "shear");
  double SA[6] = {1, 1, 0, -1 / sqrt(3.0), 1, 0}; /* tan 45, tan -30 */
  expect_matrix(stk_batch_output(b, 2), SA, "shear angles");
  double T[6] = {1, 0, 3, 0, 1, -7};
  expect_matrix(stk_batch_output(b, 3), T, "translation");
  double SC[6] = {2, 0, 0, 0, 0.5, 0};
  expect_matrix(stk_batch_output(b, 4), SC, "scale");
  /* about a centre: p -> R (p - c) + c */
  double RC[6] = {c, -s, 10 - (c * 10 - s * 20), s, c, 20 - (s * 10 + c * 20)};
  expect_matrix(stk_batch_output(b, 5), RC, "rotation about a centre");
  double SCC[6] = {2, 0, 10 * (1 - 2), 0, 0.5, 20 * (1 - 0.5)};
  expect_matrix(stk_batch_output(b, 6), SCC, "scale about a centre");
  /* T after R: T * R = R with the translation added; reverse: R * T */
  double RT[6] = {c, -s, 3, s, c, -7};
  expect_matrix(stk_batch_output(b, 7), RT, "rotation then translation");
  double TR[6] = {c, -s, c * 3 - s * -7, s, c, s * 3 + c * -7};
  expect_matrix(stk_batch_output(b, 8), TR, "reverse order");
  double tmp[6], comb[6], combr[6];
  stk__affine_mul(S, R, tmp);
  stk__affine_mul(T, tmp, comb); /* R first, then S, then T */
  expect_matrix(stk_batch_output(b, 9), comb, "combine");
  stk__affine_mul(S, T, tmp);
  stk__affine_mul(R, tmp, combr);
  expect_matrix(stk_batch_output(b, 10), combr, "combine, reverse order");
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

/* warp_affine with inverse_map = false inverts the matrix; dtype and size; nearest. */
static void test_warp_affine_forward_map_and_options(void **state) {
  img_t im = load_photo("data/photos/chelsea.png");
  stk_pipeline *p = make_pipe(2, 2);
  add_source(p, "img", "HWC");
  stk_op *op;
  /* forward: x' = 0.8 x + 0.1 y + 5, y' = -0.2 x + 0.9 y + 30 */
  double fwd[6] = {0.8123, 0.1071, 5.37, -0.2049, 0.9311, 30.19};
  TU_OK(stk_op_create("warp_affine", "cpu", &op));
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_floats(op, "matrix", fwd, 6));
  TU_OK(stk_op_set_bool(op, "inverse_map", 0));
  double size[2] = {250.4, 399.6}; /* rounds to 250 x 400 */
  TU_OK(stk_op_set_floats(op, "size", size, 2));
  TU_OK(stk_op_set_string(op, "interp_type", "nearest"));
  TU_OK(stk_op_set_string(op, "dtype", "float32"));
  TU_OK(stk_op_add_output(op, "w"));
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"w"};
  set_outputs(p, outs, 1);
  TU_OK(stk_pipeline_build(p));
  feed_same(p, "img", &im, 2);
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  stk_tensor_desc d;
  TU_OK(stk_tensor_list_sample(stk_batch_output(b, 0), 1, &d));
  assert_int_equal(d.dtype, STK_DTYPE_FLOAT32);
  assert_int_equal(d.shape[0], 250);
  assert_int_equal(d.shape[1], 400);
  double inv[6];
  assert_true(stk__affine_invert(fwd, inv));
  double *src = to_double(im.p, (size_t)im.h * im.w * 3);
  ref_src S = {src, im.h, im.w, 3, false, NULL};
  size_t n = 250 * 400 * 3, bad = 0;
  double *ref = malloc(n * sizeof(double));
  ref_warp(&S, inv, 0, 250, 400, ref);
  for (size_t i = 0; i < n; i++) {
    size_t px = i / 3;
    bool mismatch = ((float *)d.data)[i] != ref[i];
    bad += mismatch && !near_edge(inv, (int)(px % 400), (int)(px / 400), 1e-9);
  }
  assert_int_equal(bad, 0); /* nearest: equal but within 1e-9 of a pixel edge */
  free(ref), free(src);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
  free(im.p);
}

/* Bad arguments name themselves. */
static void expect_build_error(stk_pipeline *p, const char *needle) {
  const char *outs[] = {"o"};
  set_outputs(p, outs, 1);
  stk_status st = stk_pipeline_build(p);
  assert_int_not_equal(st, STK_OK);
  if (!strstr(stk_last_error(), needle))
    fail_msg("error '%s' does not mention '%s'", stk_last_error(), needle);
  stk_pipeline_destroy(p);
}

static void expect_run_error(stk_pipeline *p, const img_t *im, const char *needle) {
  const char *outs[] = {"o"};
  set_outputs(p, outs, 1);
  TU_OK(stk_pipeline_build(p));
  feed_same(p, "img", im, 1);
  stk_batch *b;
  stk_status st = stk_pipeline_run(p, &b);
  assert_int_not_equal(st, STK_OK);
  if (!strstr(stk_last_error(), needle))
    fail_msg("error '%s' does not mention '%s'", stk_last_error(), needle);
  stk_pipeline_destroy(p);
}

static stk_pipeline *pipe_with(const char *kind, stk_op **op) {
  stk_pipeline *p = make_pipe(1, 1);
  add_source(p, "img", "HWC");
  TU_OK(stk_op_create(kind, "cpu", op));
  TU_OK(stk_op_set_name(*op, "under_test"));
  TU_OK(stk_op_add_output(*op, "o"));
  return p;
}

static void finish(stk_pipeline *p, stk_op *op) {
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
}

static void test_bad_arguments(void **state) {
  uint8_t px[5 * 6 * 3] = {0};
  img_t im = {px, 5, 6, 3};
  stk_op *op;
  stk_pipeline *p;
  /* interpolation outside the choices is refused when set, naming the argument */
  p = pipe_with("rotate", &op);
  assert_int_equal(stk_op_set_string(op, "interp_type", "lanczos3"), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "interp_type"));
  stk_op_destroy(op);
  stk_pipeline_destroy(p);
  /* rotate without angle */
  p = pipe_with("rotate", &op);
  TU_OK(stk_op_add_input(op, "img"));
  finish(p, op);
  expect_build_error(p, "angle");
  /* warp_affine without a matrix, and with both forms */
  p = pipe_with("warp_affine", &op);
  TU_OK(stk_op_add_input(op, "img"));
  finish(p, op);
  expect_build_error(p, "needs a matrix");
  p = pipe_with("warp_affine", &op);
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_floats(op, "matrix", (double[]){1, 0, 0, 0, 1, 0}, 6));
  finish(p, op);
  expect_build_error(p, "not both");
  /* a matrix of 5 numbers; a singular matrix to invert; a 6-element image as matrix */
  p = pipe_with("warp_affine", &op);
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_floats(op, "matrix", (double[]){1, 0, 0, 0, 1}, 5));
  finish(p, op);
  expect_run_error(p, &im, "matrix has 5 elements");
  p = pipe_with("warp_affine", &op);
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_floats(op, "matrix", (double[]){1, 2, 0, 2, 4, 0}, 6));
  TU_OK(stk_op_set_bool(op, "inverse_map", 0));
  finish(p, op);
  expect_run_error(p, &im, "cannot be inverted");
  /* fill_value of 2 values for 3 channels; size of 3 values; a zero size */
  p = pipe_with("rotate", &op);
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_float(op, "angle", 10));
  TU_OK(stk_op_set_floats(op, "fill_value", (double[]){1, 2}, 2));
  finish(p, op);
  expect_run_error(p, &im, "fill_value");
  p = pipe_with("rotate", &op);
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_float(op, "angle", 10));
  TU_OK(stk_op_set_floats(op, "size", (double[]){1, 2, 3}, 3));
  finish(p, op);
  expect_run_error(p, &im, "size has 3 values");
  p = pipe_with("warp_affine", &op);
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_floats(op, "matrix", (double[]){1, 0, 0, 0, 1, 0}, 6));
  TU_OK(stk_op_set_floats(op, "size", (double[]){0.2, 10}, 2));
  finish(p, op);
  expect_run_error(p, &im, "under_test");
  /* absurd output sizes hit the pixel limit instead of allocating */
  p = pipe_with("warp_affine", &op);
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_floats(op, "matrix", (double[]){1, 0, 0, 0, 1, 0}, 6));
  TU_OK(stk_op_set_floats(op, "size", (double[]){2e9, 2e9}, 2));
  finish(p, op);
  expect_run_error(p, &im, "pixel limit");
  /* transforms: shear needs exactly one of shear / angles; angles within [-90, 90];
   * a 3D centre; a non-matrix input */
  p = make_pipe(1, 1);
  TU_OK(stk_op_create("transforms.shear", "cpu", &op));
  TU_OK(stk_op_set_floats(op, "shear", (double[]){1, 2}, 2));
  TU_OK(stk_op_set_floats(op, "angles", (double[]){1, 2}, 2));
  TU_OK(stk_op_add_output(op, "o"));
  finish(p, op);
  expect_build_error(p, "exactly one of 'shear' and 'angles'");
  p = make_pipe(1, 1);
  add_source(p, "img", "HWC");
  TU_OK(stk_op_create("transforms.shear", "cpu", &op));
  TU_OK(stk_op_set_floats(op, "angles", (double[]){10, 95}, 2));
  TU_OK(stk_op_add_output(op, "o"));
  finish(p, op);
  expect_run_error(p, &im, "angles[1] = 95");
  p = make_pipe(1, 1);
  add_source(p, "img", "HWC");
  TU_OK(stk_op_create("transforms.rotation", "cpu", &op));
  TU_OK(stk_op_set_float(op, "angle", 10));
  TU_OK(stk_op_set_floats(op, "center", (double[]){1, 2, 3}, 3));
  TU_OK(stk_op_add_output(op, "o"));
  finish(p, op);
  expect_run_error(p, &im, "'center' has 3 values");
  p = make_pipe(1, 1);
  add_source(p, "img", "HWC");
  TU_OK(stk_op_create("transforms.translation", "cpu", &op));
  TU_OK(stk_op_add_input(op, "img"));
  TU_OK(stk_op_set_floats(op, "offset", (double[]){1, 2}, 2));
  TU_OK(stk_op_add_output(op, "o"));
  finish(p, op);
  expect_run_error(p, &im, "must be a 2x3 matrix");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matrix_helpers),
      cmocka_unit_test(test_rotate_canvas_dali_rule),
      cmocka_unit_test(test_rotate_matrix_direction),
      cmocka_unit_test(test_kernel_vs_float64_reference),
      cmocka_unit_test(test_kernel_extremes),
      cmocka_unit_test(test_against_pillow),
      cmocka_unit_test(test_rotate_per_sample_pipeline),
      cmocka_unit_test(test_transforms_matrices),
      cmocka_unit_test(test_warp_affine_forward_map_and_options),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
