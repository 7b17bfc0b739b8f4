/*
 * Helpers shared by the GPU test programs (tests/gpu): the bundled photographs decoded on
 * the CPU, a small deterministic RNG, random resample trials with their CPU reference
 * (src/ops/resample.c and the crop_mirror_normalize kernel, called directly), and
 * tolerance checks. Header-only (static functions): each program includes it once.
 */
#ifndef STK_GPU_TESTUTIL_H
#define STK_GPU_TESTUTIL_H

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codecs.h"
#include "core/core.h"
#include "cuda/gpu_kernels.h"
#include "ops/image_util.h"
#include "ops/resample.h"

/* ---- photos ---- */

typedef struct {
  char name[64];
  uint8_t *file; /* the file's bytes */
  size_t file_size;
  int is_jpeg;
  uint8_t *rgb, *gray;
  int h, w;
} tu_photo;

/* Frees what tu_load_photos loaded. */
static inline void tu_free_photos(tu_photo *ph, int n) {
  for (int i = 0; ph && i < n; i++) {
    free(ph[i].file);
    free(ph[i].rgb);
    free(ph[i].gray);
  }
  free(ph);
}

static inline uint8_t *tu_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *d = (uint8_t *)malloc((size_t)n + 1);
  if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
    free(d);
    d = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return d;
}

/* CPU decode of a whole file as stored (no orientation), RGB or GRAY. */
static inline uint8_t *tu_cpu_decode(const uint8_t *data, size_t size, const char *name, int gray,
                                     int *h, int *w) {
  stk__decode_opts o;
  memset(&o, 0, sizeof o);
  o.color = gray ? STK__COLOR_GRAY : STK__COLOR_RGB;
  o.ignore_orientation = true;
  stk__decoded d;
  if (stk__image_decode(data, size, name, &o, stk__image_alloc_malloc, NULL, &d) != STK_OK) {
    fprintf(stderr, "decode %s: %s\n", name, stk_last_error());
    free(d.data);
    return NULL;
  }
  *h = d.h;
  *w = d.w;
  return d.data;
}

/* Loads data/photos/ (sorted by name). Returns the count, 0 on failure. */
static inline int tu_load_photos(tu_photo **out) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/data/photos", STK_SOURCE_DIR);
  DIR *dp = opendir(dir);
  if (!dp) return 0;
  char names[32][64];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)) && n < 32) {
    size_t l = strlen(e->d_name);
    if (l > 4 && l < 64 &&
        (!strcmp(e->d_name + l - 4, ".jpg") || !strcmp(e->d_name + l - 4, ".png")))
      snprintf(names[n++], 64, "%s", e->d_name);
  }
  closedir(dp);
  qsort(names, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
  tu_photo *p = (tu_photo *)calloc((size_t)n, sizeof *p);
  for (int i = 0; i < n; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    snprintf(p[i].name, sizeof p[i].name, "%s", names[i]);
    p[i].file = tu_read_file(path, &p[i].file_size);
    p[i].is_jpeg = strstr(names[i], ".jpg") != NULL;
    int h2, w2;
    p[i].rgb = tu_cpu_decode(p[i].file, p[i].file_size, path, 0, &p[i].h, &p[i].w);
    p[i].gray = tu_cpu_decode(p[i].file, p[i].file_size, path, 1, &h2, &w2);
    if (!p[i].rgb || !p[i].gray) return 0;
  }
  *out = p;
  return n;
}

/* ---- files ---- */

/* Reads the files under dir (sorted, up to 3 folders deep), at most max. */
typedef struct {
  char path[1024];
  uint8_t *data;
  size_t size;
} tu_file;

static inline int tu_list_files(const char *dir, tu_file *out, int max, int depth) {
  DIR *dp = opendir(dir);
  if (!dp) return 0;
  int n = 0;
  struct dirent *e;
  char names[512][256];
  int nn = 0;
  while ((e = readdir(dp)) && nn < 512)
    if (e->d_name[0] != '.') snprintf(names[nn++], 256, "%s", e->d_name);
  closedir(dp);
  qsort(names, (size_t)nn, 256, (int (*)(const void *, const void *))strcmp);
  for (int i = 0; i < nn && n < max; i++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    DIR *sub = depth < 3 ? opendir(p) : NULL;
    if (sub) {
      closedir(sub);
      n += tu_list_files(p, out + n, max - n, depth + 1);
      continue;
    }
    snprintf(out[n].path, sizeof out[n].path, "%s", p);
    out[n].data = tu_read_file(p, &out[n].size);
    if (out[n].data) n++;
  }
  return n;
}

/* ---- random numbers (xorshift64*) ---- */

static uint64_t tu_rng = 0x9E3779B97F4A7C15ull;
static inline uint32_t tu_rand(void) {
  tu_rng ^= tu_rng >> 12;
  tu_rng ^= tu_rng << 25;
  tu_rng ^= tu_rng >> 27;
  return (uint32_t)((tu_rng * 2685821657736338717ull) >> 32);
}
static inline double tu_uniform(double lo, double hi) {
  return lo + (hi - lo) * (tu_rand() / 4294967296.0);
}
static inline int tu_int(int lo, int hi) { return lo + (int)(tu_rand() % (uint32_t)(hi - lo + 1)); }

/* ---- comparisons ---- */

static inline double tu_load(const void *p, stk_dtype t, size_t i) {
  switch (t) {
    case STK_DTYPE_UINT8:
      return ((const uint8_t *)p)[i];
    case STK_DTYPE_INT8:
      return ((const int8_t *)p)[i];
    case STK_DTYPE_FLOAT16:
      return stk__f16_to_f32(((const uint16_t *)p)[i]);
    case STK_DTYPE_FLOAT32:
      return ((const float *)p)[i];
    default:
      return NAN;
  }
}

/* One unit in the last place of a float16 near x. */
static inline double tu_ulp16(double x) {
  x = fabs(x);
  if (x < 6.103515625e-05) return 5.960464477539063e-08;
  return ldexp(1.0, (int)floor(log2(x)) - 10);
}

typedef struct {
  double max_abs;   /* largest |gpu - cpu| */
  double max_ratio; /* largest |gpu - cpu| / tolerance */
  long n, differ, bad;
} tu_stat;

/* Compares n elements; an element is bad when |a - b| > tol (+ 1 float16 ulp of the
 * reference for float16). NaN must meet NaN. */
static inline void tu_compare(tu_stat *st, const void *gpu, const void *cpu, stk_dtype t, size_t n,
                              double tol) {
  for (size_t i = 0; i < n; i++) {
    double a = tu_load(gpu, t, i), b = tu_load(cpu, t, i);
    st->n++;
    if (isnan(a) || isnan(b)) {
      if (!(isnan(a) && isnan(b))) st->bad++, st->differ++;
      continue;
    }
    double d = fabs(a - b);
    if (d == 0.0) continue;
    st->differ++;
    double lim = tol + (t == STK_DTYPE_FLOAT16 ? tu_ulp16(b) : 0.0);
    if (d > st->max_abs) st->max_abs = d;
    double r = lim > 0 ? d / lim : INFINITY;
    if (r > st->max_ratio) st->max_ratio = r;
    if (d > lim) st->bad++;
  }
}

/* ---- resample trials and their CPU reference ---- */

typedef struct {
  stk_gpu_resample_args a;
  stk_gpu_resample_sample s; /* src: host pointer until uploaded */
  size_t out_bytes;
  double tol; /* absolute tolerance (plus 1 float16 ulp) */
  const char *photo;
} tu_trial;

static inline size_t tu_esize(stk_dtype t) { return stk_dtype_size(t); }

/* A random window over an h x w image: mostly inside, sometimes reaching outside,
 * fractional, sometimes mirrored. */
static inline void tu_random_window(int h, int w, double *x0, double *y0, double *x1, double *y1) {
  double fw = tu_uniform(0.05, 1.0), fh = tu_uniform(0.05, 1.0);
  double cx = tu_uniform(0.0, 1.0), cy = tu_uniform(0.0, 1.0);
  double ww = fw * w, hh = fh * h;
  *x0 = cx * (w - ww);
  *y0 = cy * (h - hh);
  if (tu_rand() % 5 == 0) { /* reach outside */
    *x0 -= tu_uniform(0, 0.3) * w;
    *y0 -= tu_uniform(0, 0.3) * h;
    ww *= tu_uniform(1.0, 1.5);
  }
  if (tu_rand() % 2) *x0 = floor(*x0), *y0 = floor(*y0), ww = ceil(ww), hh = ceil(hh);
  *x1 = *x0 + ww;
  *y1 = *y0 + hh;
  if (tu_rand() % 8 == 0) {
    double t = *x0;
    *x0 = *x1;
    *x1 = t;
  }
  if (tu_rand() % 8 == 0) {
    double t = *y0;
    *y0 = *y1;
    *y1 = t;
  }
}

/* The CPU result of a trial (same layout as the GPU's output). src is a host HWC image
 * of a.channels channels of a.in_dtype. Returns 0 on success. */
static inline int tu_cpu_resample(const tu_trial *t, void *out) {
  const stk_gpu_resample_args *a = &t->a;
  const stk_gpu_resample_sample *s = &t->s;
  int C = a->channels, oc = a->out_channels ? a->out_channels : C;
  stk__image src = {(void *)s->src, a->in_dtype, s->src_h, s->src_w, C};
  stk__resample_args ra = {s->x0, s->y0, s->x1, s->y1, (stk__interp)a->interp, a->antialias != 0,
                           0};
  stk_dtype mid_t = !a->normalize                                     ? a->out_dtype
                    : (a->quantize && a->in_dtype == STK_DTYPE_UINT8) ? STK_DTYPE_UINT8
                                                                      : STK_DTYPE_FLOAT32;
  size_t n = (size_t)s->dst_h * s->dst_w * C;
  void *mid = malloc(n * tu_esize(mid_t));
  stk__image m = {mid, mid_t, s->dst_h, s->dst_w, C};
  size_t need = stk__resample_scratch_size(&src, s->dst_h, s->dst_w, &ra);
  void *scratch = malloc(need ? need : 1);
  int rc = stk__resample(&src, &m, &ra, scratch, need) != STK_OK;
  free(scratch);
  if (rc) {
    fprintf(stderr, "cpu resample: %s\n", stk_last_error());
    free(mid);
    return 1;
  }
  if (!a->normalize) { /* mirror through the CPU flip; HWC only */
    stk__flip(mid, out, tu_esize(mid_t) * C, 1, s->dst_h, 1, s->dst_w, 1, s->mirror != 0, false);
    free(mid);
    return 0;
  }
  stk__cmn_params p;
  memset(&p, 0, sizeof p);
  p.win.y = 0, p.win.x = 0, p.win.h = s->dst_h, p.win.w = s->dst_w;
  p.mirror = s->mirror != 0;
  p.planar = a->planar != 0;
  p.mean = s->mean;
  p.stddev = s->stddev;
  p.scale = a->scale;
  p.shift = a->shift;
  p.fill = a->fill;
  stk__image o = {out, a->out_dtype, s->dst_h, s->dst_w, oc};
  size_t cneed = stk__cmn_scratch_size(&m, &o);
  void *cs = malloc(cneed);
  rc = stk__cmn(&m, &o, &p, cs, cneed) != STK_OK;
  if (rc) fprintf(stderr, "cpu cmn: %s\n", stk_last_error());
  free(cs);
  free(mid);
  return rc;
}

/* Random batch-level arguments of a trial kind: 0 resize, 1 fused (normalize,
 * quantized), 2 fused float (normalize without quantizing). */
static inline void tu_make_args(stk_gpu_resample_args *a, int kind) {
  memset(a, 0, sizeof *a);
  int C = tu_rand() % 4 == 0 ? 1 : 3;
  a->channels = C;
  a->interp = tu_int(0, 3);
  a->antialias = tu_rand() % 4 != 0;
  a->in_dtype = (kind == 1 || tu_rand() % 3) ? STK_DTYPE_UINT8 : STK_DTYPE_FLOAT32;
  if (kind == 0) {
    static const stk_dtype outs[] = {STK_DTYPE_UINT8, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT16};
    a->out_dtype = outs[tu_int(0, 2)];
    a->out_channels = C;
    return;
  }
  a->normalize = 1;
  a->quantize = kind == 1;
  a->planar = tu_rand() % 4 != 0;
  a->out_dtype = tu_rand() % 2 ? STK_DTYPE_FLOAT16 : STK_DTYPE_FLOAT32;
  a->out_channels = (tu_rand() % 3 == 0 && C == 3) ? 4 : C;
  a->scale = tu_rand() % 2 ? 1.0 : 1.0 / 255.0;
  a->shift = tu_rand() % 3 == 0 ? 0.5 : 0.0;
  for (int c = 0; c < 4; c++) a->fill[c] = tu_uniform(-1, 1);
}

/* A random sample on photo `ph` for batch arguments `a`: src points at a host copy in
 * the input type (the caller frees t->s.src). */
static inline void tu_make_trial_for(tu_trial *t, const tu_photo *ph,
                                     const stk_gpu_resample_args *a) {
  memset(t, 0, sizeof *t);
  t->photo = ph->name;
  t->a = *a;
  int C = a->channels;
  stk_gpu_resample_sample *s = &t->s;
  s->src_h = ph->h;
  s->src_w = ph->w;
  size_t np = (size_t)ph->h * ph->w * C;
  const uint8_t *px = C == 1 ? ph->gray : ph->rgb;
  if (a->in_dtype == STK_DTYPE_UINT8) {
    uint8_t *c = (uint8_t *)malloc(np);
    memcpy(c, px, np);
    s->src = c;
  } else {
    float *f = (float *)malloc(np * sizeof(float));
    for (size_t i = 0; i < np; i++) f[i] = (float)px[i];
    s->src = f;
  }
  s->src_pitch = (size_t)ph->w * C * tu_esize(a->in_dtype);
  tu_random_window(ph->h, ph->w, &s->x0, &s->y0, &s->x1, &s->y1);
  s->dst_h = tu_rand() % 3 == 0 ? 224 : tu_int(1, 300);
  s->dst_w = tu_rand() % 3 == 0 ? 224 : tu_int(1, 300);
  /* downscales of at most 64x keep every filter under the kernels' tap limit */
  int min_h = (int)(fabs(s->y1 - s->y0) / 64) + 1, min_w = (int)(fabs(s->x1 - s->x0) / 64) + 1;
  s->dst_h = s->dst_h < min_h ? min_h : s->dst_h;
  s->dst_w = s->dst_w < min_w ? min_w : s->dst_w;
  s->mirror = tu_rand() % 2;
  if (!a->normalize) {
    t->tol = a->out_dtype == STK_DTYPE_UINT8     ? 1.0
             : a->out_dtype == STK_DTYPE_FLOAT32 ? 1e-5 * 255
                                                 : 0.0;
  } else {
    double min_std = 1e9;
    for (int c = 0; c < C; c++) {
      s->mean[c] = a->scale == 1.0 ? tu_uniform(100, 130) : tu_uniform(0.4, 0.5);
      s->stddev[c] = a->scale == 1.0 ? tu_uniform(50, 70) : tu_uniform(0.2, 0.3);
      if (fabs(s->stddev[c]) < min_std) min_std = fabs(s->stddev[c]);
    }
    /* one input level (quantized), or float32 rounding at the data's scale */
    t->tol = a->quantize ? a->scale / min_std * 1.0001 : 1e-5 * 255.0 * a->scale / min_std;
  }
  int oc = a->out_channels ? a->out_channels : C;
  t->out_bytes = (size_t)s->dst_h * s->dst_w * oc * tu_esize(a->out_dtype);
}

static inline void tu_make_trial(tu_trial *t, const tu_photo *ph, int kind) {
  stk_gpu_resample_args a;
  tu_make_args(&a, kind);
  tu_make_trial_for(t, ph, &a);
}

static const char *const tu_kind_name[] = {"resize", "fused-quantized", "fused-float"};

static inline void tu_stat_add(tu_stat *to, const tu_stat *one) {
  to->n += one->n, to->differ += one->differ, to->bad += one->bad;
  if (one->max_abs > to->max_abs) to->max_abs = one->max_abs;
  if (one->max_ratio > to->max_ratio) to->max_ratio = one->max_ratio;
}

/* Compares one trial's outputs into st[out_dtype]; prints the trial when it fails. */
static inline void tu_check_trial(const tu_trial *t, const void *gpu, const void *cpu,
                                  tu_stat *st) {
  tu_stat one;
  memset(&one, 0, sizeof one);
  tu_compare(&one, gpu, cpu, t->a.out_dtype, t->out_bytes / stk_dtype_size(t->a.out_dtype), t->tol);
  if (one.bad)
    fprintf(stderr,
            "  BAD %s: interp %d aa %d in %d out %d C %d %dx%d -> %dx%d "
            "win (%g,%g)-(%g,%g) mirror %d norm %d quant %d: %ld bad of %ld, max |d| %g "
            "(tol %g)\n",
            t->photo, t->a.interp, t->a.antialias, t->a.in_dtype, t->a.out_dtype, t->a.channels,
            t->s.src_h, t->s.src_w, t->s.dst_h, t->s.dst_w, t->s.x0, t->s.y0, t->s.x1, t->s.y1,
            t->s.mirror, t->a.normalize, t->a.quantize, one.bad, one.n, one.max_abs, t->tol);
  tu_stat_add(&st[t->a.out_dtype], &one);
}

/* Prints one line per output type; returns non-zero when any value was over tolerance. */
static inline int tu_report(const char *prog, const char *what, const tu_stat *st) {
  int bad = 0;
  for (int t = 0; t < STK_DTYPE_COUNT; t++) {
    if (!st[t].n) continue;
    printf(
        "%s %-16s %-8s %9ld values: %8ld differ (%7.4f%%), max |d| %-9.3g max d/tol %.3f, "
        "%ld over\n",
        prog, what, stk_dtype_name((stk_dtype)t), st[t].n, st[t].differ,
        100.0 * st[t].differ / (double)st[t].n, st[t].max_abs, st[t].max_ratio, st[t].bad);
    bad |= st[t].bad != 0;
  }
  return bad;
}

#endif /* STK_GPU_TESTUTIL_H */
