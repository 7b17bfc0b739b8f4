/* Separable resampling kernels (see resample.h for the geometry and the filters) and
 * DALI's resize geometry.
 *
 * The hot loops are written as fixed-width blocks over a local accumulator array
 * (4 lanes in the horizontal pass, 16 in the vertical pass and in conversions): GCC's
 * default -O2 vectoriser (the "very cheap" cost model) turns exactly that shape into
 * SSE code, whereas plain loops with unknown trip counts stay scalar. Internal buffers
 * are padded so the blocks never need a scalar tail. Their WIDE (AVX2) clones stayed 128
 * bits wide, so on AVX2 CPUs the vertical pass, the row conversions and (from 4 taps) the
 * horizontal pass run hand-written 256-bit copies instead (resample_rows.c), which give
 * the same bytes. */
#include "resample.h"

#include <math.h>
#include <string.h>

#include "../core/wide.h"
#include "image_util.h"
#include "resample_rows.h"

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif
/* Full unrolling of the constant-count tap loop (GCC does not unroll at -O2 itself). */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL16 _Pragma("GCC unroll 16")
#elif defined(__clang__)
#define UNROLL16 _Pragma("unroll 16")
#else
#define UNROLL16
#endif

#define PI             3.14159265358979323846
#define MAX_DIM        ((int64_t)1 << 30)
#define MAX_TABLE_WORK ((double)(1 << 30)) /* filter evaluations per call */
#define MAX_SCRATCH    ((size_t)1 << 31)   /* bytes */
#define VBLOCK         32                  /* floats per vertical-pass block */

/* ---------------------------------------------------------------------------------- */
/* Filters                                                                            */
/* ---------------------------------------------------------------------------------- */

bool stk__interp_parse(const char *name, stk__interp *out) {
  static const char *const names[] = {"nearest", "linear", "cubic", "lanczos3"};
  for (int i = 0; i < 4; i++)
    if (name && strcmp(name, names[i]) == 0) {
      *out = (stk__interp)i;
      return true;
    }
  return false;
}

double stk__interp_support(stk__interp interp) {
  switch (interp) {
    case STK__INTERP_LINEAR:
      return 1.0;
    case STK__INTERP_CUBIC:
      return 2.0;
    case STK__INTERP_LANCZOS3:
      return 3.0;
    default:
      return 0.5;
  }
}

static double sinc(double x) {
  x *= PI;
  return x == 0.0 ? 1.0 : sin(x) / x;
}

double stk__interp_filter(stk__interp interp, double x) {
  const double a = -0.5; /* Keys' parameter, as Pillow's bicubic */
  x = fabs(x);
  switch (interp) {
    case STK__INTERP_LINEAR:
      return x < 1.0 ? 1.0 - x : 0.0;
    case STK__INTERP_CUBIC:
      if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
      if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
      return 0.0;
    case STK__INTERP_LANCZOS3:
      return x < 3.0 ? sinc(x) * sinc(x / 3.0) : 0.0;
    default:
      return x < 0.5 ? 1.0 : 0.0;
  }
}

/* ---------------------------------------------------------------------------------- */
/* Scratch layout                                                                     */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  int32_t *start; /* first source index of each output (absolute, inside the image) */
  int32_t *count; /* taps of each output */
  float *w;       /* weights, `k` per output, zero beyond count */
  int k;          /* bound on the taps of any output */
  int lanes;      /* copies of each weight (4: pre-broadcast for the 4-lane pass) */
  int32_t lo, hi; /* source range touched: min start, max start + count - 1 */
  float *pairs;   /* horizontal, 3 or 4 channels, AVX2: the weights by pixel pair (or NULL) */
} axis_tab;

/* One axis of the mapping. */
typedef struct {
  int64_t in, out;
  double a0, scale; /* window start, source pixels per output pixel (signed) */
  double fs, sup;   /* filter stretch and support in source pixels */
  int k;            /* tap bound */
} axis_geom;

typedef struct {
  axis_geom x, y;
  bool nearest;
  bool vfirst;     /* vertical pass first (see choose_order) */
  size_t ring_len; /* floats per ring row (multiple of VBLOCK, spill room included) */
  size_t out_len;  /* floats per output-width row, likewise */
  size_t off_x_start, off_x_count, off_x_w, off_x_pairs, off_y_start, off_y_count, off_y_w;
  size_t off_tmp, off_row, off_ring, off_acc, off_rows, total;
} layout;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static void axis_setup(axis_geom *g, int64_t in, int64_t out, double a0, double a1,
                       const stk__resample_args *args) {
  g->in = in;
  g->out = out;
  g->a0 = a0;
  g->scale = (a1 - a0) / (double)out;
  g->fs = args->antialias && fabs(g->scale) > 1.0 ? fabs(g->scale) : 1.0;
  g->sup = stk__interp_support(args->interp) * g->fs;
  double k = 2.0 * ceil(g->sup) + 1.0;
  g->k = (int)(k < (double)in ? k : (double)in);
}

static size_t row_len(size_t floats) { return (floats + 4 + VBLOCK - 1) / VBLOCK * VBLOCK; }

/* Picks the cheaper pass order from the expected work: a horizontal tap costs about 7
 * instructions per group of 4 channels of one pixel, a vertical tap about 3.5 per 4
 * floats. Downscaling both axes usually favours the vertical pass first (the costly
 * horizontal pass then runs on output rows only); upscaling favours horizontal first. */
static bool choose_order(const layout *L, int64_t C, const stk__resample_args *args) {
  if (args->order) return args->order == 2;
  double kx = fmin(fmax(2.0 * L->x.sup, 1.0), (double)L->x.in);
  double ky = fmin(fmax(2.0 * L->y.sup, 1.0), (double)L->y.in);
  double rows = fmin((double)L->y.in, fabs(args->y1 - args->y0) + 2.0 * L->y.sup + 1.0);
  double cols = fmin((double)L->x.in, fabs(args->x1 - args->x0) + 2.0 * L->x.sup + 1.0);
  double groups = C == 1 ? 0.6 : (double)((C + 3) / 4), ow = (double)L->x.out,
         oh = (double)L->y.out;
  double h_first = rows * ow * kx * groups * 7.0 + oh * ow * (double)C / 4.0 * ky * 3.5;
  double v_first = oh * cols * (double)C / 4.0 * ky * 3.5 + oh * ow * kx * groups * 7.0;
  return v_first < h_first;
}

/* Carves the scratch: returns false when the sizes are out of bounds. */
static bool make_layout(const stk__image *src, int64_t out_h, int64_t out_w,
                        const stk__resample_args *args, layout *L) {
  memset(L, 0, sizeof *L);
  axis_setup(&L->x, src->w, out_w, args->x0, args->x1, args);
  axis_setup(&L->y, src->h, out_h, args->y0, args->y1, args);
  L->nearest = args->interp == STK__INTERP_NEAREST;
  size_t c = (size_t)src->c, ow = (size_t)out_w, oh = (size_t)out_h, iw = (size_t)src->w;
  size_t off = 0;
  L->off_x_start = off, off += align64(ow * sizeof(int32_t));
  if (L->nearest) {
    L->total = off;
    return true;
  }
  if ((2.0 * L->x.sup + 1.0) * (double)out_w > MAX_TABLE_WORK ||
      (2.0 * L->y.sup + 1.0) * (double)out_h > MAX_TABLE_WORK)
    return false;
  size_t kx = (size_t)L->x.k, ky = (size_t)L->y.k;
  L->vfirst = choose_order(L, src->c, args);
  L->out_len = row_len(ow * c);
  /* vertical first: the ring holds converted source rows; horizontal first: filtered rows */
  L->ring_len = L->vfirst ? row_len(iw * c) : L->out_len;
  L->off_x_count = off, off += align64(ow * sizeof(int32_t));
  L->off_x_w = off, off += align64(ow * kx * (c == 1 ? 1 : 4) * sizeof(float));
  if (c == 3 || c == 4) L->off_x_pairs = off, off += align64((ow + 1) * kx * 4 * sizeof(float));
  L->off_y_start = off, off += align64(oh * sizeof(int32_t));
  L->off_y_count = off, off += align64(oh * sizeof(int32_t));
  L->off_y_w = off, off += align64(oh * ky * sizeof(float));
  L->off_tmp = off, off += align64((kx > ky ? kx : ky) * sizeof(double));
  L->off_row = off, off += align64(row_len(iw * c) * sizeof(float));
  L->off_ring = off, off += align64(ky * L->ring_len * sizeof(float));
  L->off_acc = off, off += align64(L->out_len * sizeof(float));
  L->off_rows = off, off += align64(ky * sizeof(float *));
  L->total = off;
  return off <= MAX_SCRATCH;
}

static stk_status check_call(const stk__image *src, const stk__image *dst,
                             const stk__resample_args *args) {
  if (src->h < 1 || src->w < 1 || src->c < 1 || dst->h < 1 || dst->w < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "empty image (%lldx%lldx%lld -> %lldx%lld)",
                    (long long)src->h, (long long)src->w, (long long)src->c, (long long)dst->h,
                    (long long)dst->w);
  if (dst->c != src->c)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output has %lld channels, input %lld",
                    (long long)dst->c, (long long)src->c);
  if (src->h > MAX_DIM || src->w > MAX_DIM || dst->h > MAX_DIM || dst->w > MAX_DIM ||
      src->c > MAX_DIM || src->w * src->c > MAX_DIM || dst->w * dst->c > MAX_DIM)
    return STK_FAIL(STK_ERR_LIMIT, "image dimensions beyond 2^30");
  const double win[4] = {args->x0, args->y0, args->x1, args->y1};
  for (int i = 0; i < 4; i++)
    if (!(fabs(win[i]) <= 1e12))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "source window coordinate %g is not finite "
                      "or beyond 1e12",
                      win[i]);
  if (src->dtype != STK_DTYPE_UINT8 && src->dtype != STK_DTYPE_FLOAT32)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "input type %s (uint8 or float32 expected)",
                    stk_dtype_name(src->dtype) ? stk_dtype_name(src->dtype) : "?");
  if (dst->dtype != STK_DTYPE_UINT8 && dst->dtype != STK_DTYPE_FLOAT32 &&
      dst->dtype != STK_DTYPE_FLOAT16)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "output type %s (uint8, float32 or float16 expected)",
                    stk_dtype_name(dst->dtype) ? stk_dtype_name(dst->dtype) : "?");
  if ((unsigned)args->interp > STK__INTERP_LANCZOS3)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "unknown interpolation %d", (int)args->interp);
  return STK_OK;
}

size_t stk__resample_scratch_size(const stk__image *src, int64_t out_h, int64_t out_w,
                                  const stk__resample_args *args) {
  stk__image dst = {NULL, STK_DTYPE_FLOAT32, out_h, out_w, src->c};
  layout L;
  if (check_call(src, &dst, args) != STK_OK) {
    stk_clear_error();
    return 0;
  }
  if (!make_layout(src, out_h, out_w, args, &L)) return 0;
  return L.total + 64; /* room to realign the caller's pointer */
}

/* ---------------------------------------------------------------------------------- */
/* Weight tables                                                                      */
/* ---------------------------------------------------------------------------------- */

static int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* The weights of output i, normalised, into t at row i; `tmp` holds k doubles. */
static void axis_weights(axis_tab *t, const axis_geom *g, stk__interp interp, int64_t i,
                         double *tmp) {
  double c = g->a0 + ((double)i + 0.5) * g->scale - 0.5; /* sampling centre */
  double inv = 1.0 / g->fs;
  /* taps strictly inside the support: |j - c| < sup */
  int64_t j0 = (int64_t)floor(c - g->sup) + 1, j1 = (int64_t)ceil(c + g->sup) - 1;
  if (j1 < j0) j1 = j0;
  int64_t s = clamp_i64(j0, 0, g->in - 1), e = clamp_i64(j1, 0, g->in - 1);
  int n = (int)(e - s + 1);
  memset(tmp, 0, (size_t)n * sizeof(double));
  double sum = 0.0;
  for (int64_t j = j0; j <= j1; j++) { /* outside taps fold onto the edge pixels */
    double v = stk__interp_filter(interp, ((double)j - c) * inv);
    tmp[clamp_i64(j, 0, g->in - 1) - s] += v;
    sum += v;
  }
  int lead = 0;
  if (!(fabs(sum) > 1e-12)) { /* degenerate: take the nearest pixel */
    s = clamp_i64((int64_t)floor(c + 0.5), 0, g->in - 1);
    n = 1;
    tmp[0] = sum = 1.0;
  } else {
    while (n > 1 && tmp[n - 1] == 0.0) n--;
    while (lead < n - 1 && tmp[lead] == 0.0) lead++;
  }
  float *w = t->w + (size_t)i * (size_t)t->k * (size_t)t->lanes;
  for (int k = 0; k < t->k; k++) {
    float v = k < n - lead ? (float)(tmp[lead + k] / sum) : 0.0f;
    for (int l = 0; l < t->lanes; l++) w[k * t->lanes + l] = v;
  }
  t->start[i] = (int32_t)(s + lead);
  t->count[i] = n - lead;
  if (t->start[i] < t->lo) t->lo = t->start[i];
  if (t->start[i] + t->count[i] - 1 > t->hi) t->hi = t->start[i] + t->count[i] - 1;
}

static void build_axis(axis_tab *t, const axis_geom *g, stk__interp interp, int lanes,
                       double *tmp) {
  t->k = g->k;
  t->lanes = lanes;
  t->lo = INT32_MAX;
  t->hi = -1;
  for (int64_t i = 0; i < g->out; i++) axis_weights(t, g, interp, i, tmp);
}

/* Gives every output of the (horizontal) table the same tap count K = the largest count,
 * so the pass can run a fixed, unrolled tap loop: each window becomes K taps long,
 * shifted left where it would run past the last source column (weights moved right,
 * zeros in front), and the weight stride becomes K. Some output has K taps inside
 * [lo, hi], so hi - lo + 1 >= K and every shifted window stays in the loaded range. */
static void fix_taps(axis_tab *t, int64_t out) {
  int K = 1;
  for (int64_t i = 0; i < out; i++) K = t->count[i] > K ? t->count[i] : K;
  size_t L = (size_t)t->lanes;
  for (int64_t i = 0; i < out; i++) {
    const float *src = t->w + (size_t)i * (size_t)t->k * L;
    float *dst = t->w + (size_t)i * (size_t)K * L; /* K <= k: moves never overtake reads */
    int32_t start = t->start[i] + K - 1 > t->hi ? t->hi - K + 1 : t->start[i];
    size_t shift = (size_t)(t->start[i] - start), n = (size_t)t->count[i];
    /* dst row i ends before source row i + 1 starts (k >= K), so only row i moves */
    memmove(dst + shift * L, src, n * L * sizeof(float));
    memset(dst, 0, shift * L * sizeof(float));
    memset(dst + (shift + n) * L, 0, ((size_t)K - shift - n) * L * sizeof(float));
    t->start[i] = start;
    t->count[i] = K;
  }
  t->k = K;
}

/* The horizontal weights regrouped for stk__hpass_pairs_avx2 (resample_rows.h): per
 * pixel pair and tap, the two pixels' 4-lane weights side by side (zeros for a missing
 * second pixel). After fix_taps: every output has t->k taps, 4 lanes each. */
static void pair_weights(axis_tab *t, int64_t out, float *pairs) {
  size_t K = (size_t)t->k;
  for (int64_t x = 0; x < out; x += 2)
    for (size_t k = 0; k < K; k++) {
      float *d = pairs + ((size_t)(x / 2) * K + k) * 8;
      memcpy(d, t->w + ((size_t)x * K + k) * 4, 4 * sizeof(float));
      if (x + 1 < out)
        memcpy(d + 4, t->w + ((size_t)(x + 1) * K + k) * 4, 4 * sizeof(float));
      else
        memset(d + 4, 0, 4 * sizeof(float));
    }
  t->pairs = pairs;
}

/* ---------------------------------------------------------------------------------- */
/* Row conversions                                                                    */
/* ---------------------------------------------------------------------------------- */

/* n uint8 values to float, 16 at a time. */
WIDE static void u8_to_f32(float *restrict d, const uint8_t *restrict s, size_t n) {
  size_t i = stk__resample_rows_avx2() ? stk__u8_to_f32_avx2(d, s, n) : 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; l++) d[i + l] = (float)s[i + l];
  for (; i < n; i++) d[i] = (float)s[i];
}

/* Source row y, columns [xlo, xhi], as floats, then zeros up to row_len(): the blocks
 * that read past the data (unused lanes, 32-float vertical blocks) see zeros. */
static void load_row(float *restrict d, const stk__image *src, int64_t y, int32_t xlo,
                     int32_t xhi) {
  size_t c = (size_t)src->c, n = (size_t)(xhi - xlo + 1) * c;
  size_t first = ((size_t)y * (size_t)src->w + (size_t)xlo) * c;
  if (src->dtype == STK_DTYPE_UINT8)
    u8_to_f32(d, (const uint8_t *)src->data + first, n);
  else
    memcpy(d, (const float *)src->data + first, n * sizeof(float));
  memset(d + n, 0, (row_len(n) - n) * sizeof(float));
}

/* n floats to uint8 for results of uint8 sources, which stay within (-1000, 1000) (the
 * filters' absolute weights sum to less than 2): biased by 1024.5 the truncation is a
 * round-half-up, and the clamp runs on int16 (pmaxsw / pminsw exist in SSE2, the int32
 * ones do not), 16 at a time. */
WIDE static void bounded_to_u8(uint8_t *restrict d, const float *restrict s, size_t n) {
  size_t i = stk__resample_rows_avx2() ? stk__bounded_to_u8_avx2(d, s, n) : 0;
  for (; i + 16 <= n; i += 16) {
    int16_t t[16];
    uint8_t a[16];
    for (int l = 0; l < 16; l++) t[l] = (int16_t)(int32_t)(s[i + l] + 1024.5f);
    for (int l = 0; l < 16; l++) {
      int16_t v = (int16_t)(t[l] - 1024);
      v = v > 0 ? v : 0;
      v = v < 255 ? v : 255;
      a[l] = (uint8_t)v;
    }
    memcpy(d + i, a, sizeof a);
  }
  stk__convert(d + i, STK_DTYPE_UINT8, s + i, STK_DTYPE_FLOAT32, n - i);
}

static void store_row(const float *restrict acc, const stk__image *src, const stk__image *dst,
                      int64_t y) {
  size_t n = (size_t)dst->w * (size_t)dst->c, first = (size_t)y * n;
  switch (dst->dtype) {
    case STK_DTYPE_UINT8:
      if (src->dtype == STK_DTYPE_UINT8)
        bounded_to_u8((uint8_t *)dst->data + first, acc, n);
      else
        stk__convert((uint8_t *)dst->data + first, STK_DTYPE_UINT8, acc, STK_DTYPE_FLOAT32, n);
      break;
    case STK_DTYPE_FLOAT32:
      memcpy((float *)dst->data + first, acc, n * sizeof(float));
      break;
    default: {
      uint16_t *d = (uint16_t *)dst->data + first;
      for (size_t i = 0; i < n; i++) d[i] = stk__f32_to_f16(acc[i]);
    }
  }
}

/* ---------------------------------------------------------------------------------- */
/* Passes                                                                             */
/* ---------------------------------------------------------------------------------- */

/* Horizontal pass, channels in groups of 4 lanes. Every output has exactly K taps
 * (fix_taps), weights pre-broadcast to 4 lanes; with K a compile-time constant (the
 * dispatch below) the tap loop unrolls and the per-pixel overhead vanishes. Lanes
 * beyond C read the next pixel (or the zero padding) and write into the next output
 * pixel, which is written afterwards, or into the row's spill room: no masking needed. */
static ALWAYS_INLINE void hpass_lanes(const float *restrict row, int C, int K, const axis_tab *tx,
                                      int32_t xlo, int64_t out_w, float *restrict dst) {
  for (int64_t x = 0; x < out_w; x++) {
    const float *w = tx->w + (size_t)x * (size_t)tx->k * 4;
    const float *p0 = row + (size_t)(tx->start[x] - xlo) * (size_t)C;
    for (int c0 = 0; c0 < C; c0 += 4) {
      float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const float *p = p0 + c0;
      UNROLL16
      for (int k = 0; k < K; k++)
        for (int l = 0; l < 4; l++) a[l] += w[4 * k + l] * p[k * C + l];
      /* one 16-byte store (an element loop here is compiled to scalar moves) */
      memcpy(dst + (size_t)x * (size_t)C + (size_t)c0, a, sizeof a);
    }
  }
}

WIDE static void hpass_gray(const float *restrict row, const axis_tab *tx, int32_t xlo,
                            int64_t out_w, float *restrict dst) {
  for (int64_t x = 0; x < out_w; x++) {
    const float *w = tx->w + (size_t)x * (size_t)tx->k;
    const float *p = row + (tx->start[x] - xlo);
    float a = 0.0f;
    for (int k = 0; k < tx->k; k++) a += w[k] * p[k];
    dst[x] = a;
  }
}

/* Instantiates the 4-lane pass for a constant channel count and each K up to 16 (the
 * common filters: lanczos3 antialiased at scale 2.3 has 14 taps). */
#define HPASS_K(CH)                                     \
  switch (tx->k) {                                      \
    case 1:                                             \
      hpass_lanes(row, CH, 1, tx, xlo, out_w, dst);     \
      return;                                           \
    case 2:                                             \
      hpass_lanes(row, CH, 2, tx, xlo, out_w, dst);     \
      return;                                           \
    case 3:                                             \
      hpass_lanes(row, CH, 3, tx, xlo, out_w, dst);     \
      return;                                           \
    case 4:                                             \
      hpass_lanes(row, CH, 4, tx, xlo, out_w, dst);     \
      return;                                           \
    case 5:                                             \
      hpass_lanes(row, CH, 5, tx, xlo, out_w, dst);     \
      return;                                           \
    case 6:                                             \
      hpass_lanes(row, CH, 6, tx, xlo, out_w, dst);     \
      return;                                           \
    case 7:                                             \
      hpass_lanes(row, CH, 7, tx, xlo, out_w, dst);     \
      return;                                           \
    case 8:                                             \
      hpass_lanes(row, CH, 8, tx, xlo, out_w, dst);     \
      return;                                           \
    case 9:                                             \
      hpass_lanes(row, CH, 9, tx, xlo, out_w, dst);     \
      return;                                           \
    case 10:                                            \
      hpass_lanes(row, CH, 10, tx, xlo, out_w, dst);    \
      return;                                           \
    case 11:                                            \
      hpass_lanes(row, CH, 11, tx, xlo, out_w, dst);    \
      return;                                           \
    case 12:                                            \
      hpass_lanes(row, CH, 12, tx, xlo, out_w, dst);    \
      return;                                           \
    case 13:                                            \
      hpass_lanes(row, CH, 13, tx, xlo, out_w, dst);    \
      return;                                           \
    case 14:                                            \
      hpass_lanes(row, CH, 14, tx, xlo, out_w, dst);    \
      return;                                           \
    case 15:                                            \
      hpass_lanes(row, CH, 15, tx, xlo, out_w, dst);    \
      return;                                           \
    case 16:                                            \
      hpass_lanes(row, CH, 16, tx, xlo, out_w, dst);    \
      return;                                           \
    default:                                            \
      hpass_lanes(row, CH, tx->k, tx, xlo, out_w, dst); \
      return;                                           \
  }

WIDE static void hpass(const float *restrict row, int C, const axis_tab *tx, int32_t xlo,
                       int64_t out_w, float *restrict dst) {
  if (tx->pairs) {
    stk__hpass_pairs_avx2(row, C, tx->k, tx->start, tx->pairs, xlo, out_w, dst);
    return;
  }
  switch (C) { /* constant channel counts let the compiler fix the strides */
    case 1:
      hpass_gray(row, tx, xlo, out_w, dst);
      return;
    case 3:
      HPASS_K(3)
    case 4:
      HPASS_K(4)
    default:
      hpass_lanes(row, C, tx->k, tx, xlo, out_w, dst);
      return;
  }
}

/* Vertical pass: acc = sum_k w[k] * rows[k], `len` a multiple of VBLOCK (32). Eight
 * 4-lane accumulators stay in registers across the taps, so the per-tap overhead
 * (row pointer, weight broadcast, loop) is shared by eight multiply-adds. */
WIDE static void vpass(float *restrict acc, const float *const *rows, const float *w, int n,
                       size_t len) {
  if (stk__resample_rows_avx2()) {
    stk__vpass_avx2(acc, rows, w, n, len);
    return;
  }
  for (size_t i = 0; i < len; i += VBLOCK) {
    float a0[4] = {0.0f}, a1[4] = {0.0f}, a2[4] = {0.0f}, a3[4] = {0.0f};
    float a4[4] = {0.0f}, a5[4] = {0.0f}, a6[4] = {0.0f}, a7[4] = {0.0f};
    for (int k = 0; k < n; k++) {
      const float *r = rows[k] + i;
      float wk = w[k];
      for (int l = 0; l < 4; l++) a0[l] += wk * r[l];
      for (int l = 0; l < 4; l++) a1[l] += wk * r[4 + l];
      for (int l = 0; l < 4; l++) a2[l] += wk * r[8 + l];
      for (int l = 0; l < 4; l++) a3[l] += wk * r[12 + l];
      for (int l = 0; l < 4; l++) a4[l] += wk * r[16 + l];
      for (int l = 0; l < 4; l++) a5[l] += wk * r[20 + l];
      for (int l = 0; l < 4; l++) a6[l] += wk * r[24 + l];
      for (int l = 0; l < 4; l++) a7[l] += wk * r[28 + l];
    }
    memcpy(acc + i, a0, sizeof a0);
    memcpy(acc + i + 4, a1, sizeof a1);
    memcpy(acc + i + 8, a2, sizeof a2);
    memcpy(acc + i + 12, a3, sizeof a3);
    memcpy(acc + i + 16, a4, sizeof a4);
    memcpy(acc + i + 20, a5, sizeof a5);
    memcpy(acc + i + 24, a6, sizeof a6);
    memcpy(acc + i + 28, a7, sizeof a7);
  }
}

/* ---------------------------------------------------------------------------------- */
/* Nearest                                                                            */
/* ---------------------------------------------------------------------------------- */

static int64_t nearest_index(const axis_geom *g, int64_t i) {
  double p = floor(g->a0 + ((double)i + 0.5) * g->scale);
  return p < 0.0 ? 0 : p > (double)(g->in - 1) ? g->in - 1 : (int64_t)p;
}

static void resample_nearest(const stk__image *src, const stk__image *dst, const layout *L,
                             char *base) {
  int32_t *xs = (int32_t *)(base + L->off_x_start);
  for (int64_t x = 0; x < dst->w; x++) xs[x] = (int32_t)nearest_index(&L->x, x);
  size_t c = (size_t)src->c, ses = stk_dtype_size(src->dtype), des = stk_dtype_size(dst->dtype);
  size_t spx = c * ses, dpx = c * des;
  bool same = src->dtype == dst->dtype;
  for (int64_t y = 0; y < dst->h; y++) {
    const char *srow =
        (const char *)src->data + (size_t)nearest_index(&L->y, y) * (size_t)src->w * spx;
    char *drow = (char *)dst->data + (size_t)y * (size_t)dst->w * dpx;
    if (same && spx == 3) {
      for (int64_t x = 0; x < dst->w; x++) memcpy(drow + x * 3, srow + (size_t)xs[x] * 3, 3);
    } else if (same) {
      for (int64_t x = 0; x < dst->w; x++) memcpy(drow + x * dpx, srow + (size_t)xs[x] * spx, spx);
    } else {
      for (int64_t x = 0; x < dst->w; x++)
        stk__convert(drow + x * dpx, dst->dtype, srow + (size_t)xs[x] * spx, src->dtype, c);
    }
  }
}

/* ---------------------------------------------------------------------------------- */
/* Filtered resampling                                                                */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  const stk__image *src, *dst;
  const layout *L;
  axis_tab tx, ty;
  float *row, *ring, *acc;
  const float **rows;
} pass_ctx;

/* Output rows are produced in increasing source position (reversed when y is mirrored),
 * so the first tap never moves back and a ring of ty.k rows holds every row still
 * needed: source row r lives in slot r % ty.k and is prepared once. */
static int64_t row_at(const pass_ctx *p, int64_t step) {
  bool up = p->L->y.scale >= 0;
  return up ? step : p->dst->h - 1 - step;
}

/* Horizontal pass into the ring, then the vertical pass per output row. */
static void run_hfirst(pass_ctx *p) {
  int C = (int)p->src->c, R = p->ty.k;
  int64_t next = 0;
  for (int64_t step = 0; step < p->dst->h; step++) {
    int64_t j = row_at(p, step), s = p->ty.start[j], n = p->ty.count[j];
    if (next < s) next = s;
    for (; next < s + n; next++) {
      load_row(p->row, p->src, next, p->tx.lo, p->tx.hi);
      hpass(p->row, C, &p->tx, p->tx.lo, p->dst->w, p->ring + (size_t)(next % R) * p->L->ring_len);
    }
    for (int64_t k = 0; k < n; k++) p->rows[k] = p->ring + (size_t)((s + k) % R) * p->L->ring_len;
    vpass(p->acc, p->rows, p->ty.w + (size_t)j * (size_t)p->ty.k, (int)n, p->L->out_len);
    store_row(p->acc, p->src, p->dst, j);
  }
}

/* Source rows converted into the ring; per output row, the vertical pass over the needed
 * columns, then the horizontal pass. */
static void run_vfirst(pass_ctx *p) {
  int C = (int)p->src->c, R = p->ty.k;
  size_t len = row_len((size_t)(p->tx.hi - p->tx.lo + 1) * (size_t)C);
  int64_t next = 0;
  for (int64_t step = 0; step < p->dst->h; step++) {
    int64_t j = row_at(p, step), s = p->ty.start[j], n = p->ty.count[j];
    if (next < s) next = s;
    for (; next < s + n; next++)
      load_row(p->ring + (size_t)(next % R) * p->L->ring_len, p->src, next, p->tx.lo, p->tx.hi);
    for (int64_t k = 0; k < n; k++) p->rows[k] = p->ring + (size_t)((s + k) % R) * p->L->ring_len;
    vpass(p->row, p->rows, p->ty.w + (size_t)j * (size_t)p->ty.k, (int)n, len);
    hpass(p->row, C, &p->tx, p->tx.lo, p->dst->w, p->acc);
    store_row(p->acc, p->src, p->dst, j);
  }
}

static void resample_filtered(const stk__image *src, const stk__image *dst,
                              const stk__resample_args *args, const layout *L, char *base) {
  pass_ctx p = {src,
                dst,
                L,
                {(int32_t *)(base + L->off_x_start), (int32_t *)(base + L->off_x_count),
                 (float *)(base + L->off_x_w), 0, 0, 0, 0},
                {(int32_t *)(base + L->off_y_start), (int32_t *)(base + L->off_y_count),
                 (float *)(base + L->off_y_w), 0, 0, 0, 0},
                (float *)(base + L->off_row),
                (float *)(base + L->off_ring),
                (float *)(base + L->off_acc),
                (const float **)(base + L->off_rows)};
  double *tmp = (double *)(base + L->off_tmp);
  build_axis(&p.tx, &L->x, args->interp, src->c == 1 ? 1 : 4, tmp);
  fix_taps(&p.tx, dst->w);
  /* two pixels a register pay from 4 taps on (bench/bench_resample.c; below that the
   * 4-lane loop is quicker: 72 against 68 us for a 269-wide window to 224) */
  if ((src->c == 3 || src->c == 4) && p.tx.k >= 4 && stk__resample_rows_avx2())
    pair_weights(&p.tx, dst->w, (float *)(base + L->off_x_pairs));
  build_axis(&p.ty, &L->y, args->interp, 1, tmp);
  /* defined values in the padding that the 32-float blocks read past the data */
  memset(p.ring, 0, (size_t)p.ty.k * L->ring_len * sizeof(float));
  if (L->vfirst)
    run_vfirst(&p);
  else
    run_hfirst(&p);
}

stk_status stk__resample(const stk__image *src, const stk__image *dst,
                         const stk__resample_args *args, void *scratch, size_t scratch_size) {
  STK_TRY(check_call(src, dst, args));
  layout L;
  if (!make_layout(src, dst->h, dst->w, args, &L))
    return STK_FAIL(STK_ERR_LIMIT,
                    "resampling %lldx%lld to %lldx%lld needs too wide a filter "
                    "or too much scratch memory",
                    (long long)src->h, (long long)src->w, (long long)dst->h, (long long)dst->w);
  char *base = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
  if (!scratch || scratch_size < L.total + (size_t)(base - (char *)scratch))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "scratch of %zu bytes, %zu needed", scratch_size,
                    L.total + 64);
  if (L.nearest)
    resample_nearest(src, dst, &L, base);
  else
    resample_filtered(src, dst, args, &L, base);
  return STK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* Resize geometry                                                                    */
/* ---------------------------------------------------------------------------------- */

bool stk__resize_mode_parse(const char *name, stk__resize_mode *out) {
  static const char *const names[] = {"default", "stretch", "not_larger", "not_smaller"};
  for (int i = 0; i < 4; i++)
    if (name && strcmp(name, names[i]) == 0) {
      *out = (stk__resize_mode)i;
      return true;
    }
  return false;
}

/* Clips each requested extent to its limit, keeping the sign (default and stretch). */
static void clip_to_max(double req[2], const stk__resize_request *rq) {
  if (!rq->has_max_size) return;
  for (int d = 0; d < 2; d++)
    if (rq->max_size[d] > 0 && fabs(req[d]) > rq->max_size[d])
      req[d] = copysign(rq->max_size[d], req[d]);
}

/* Fills in the requested extents from the input extents and the mode (DALI's rules). */
static void adjust_size(double req[2], const double in[2], const stk__resize_request *rq) {
  bool given[2];
  double scale[2];
  int provided = 0;
  for (int d = 0; d < 2; d++) {
    given[d] = req[d] != 0.0 && in[d] != 0.0;
    scale[d] = in[d] != 0.0 ? req[d] / in[d] : 1.0;
    provided += given[d];
  }
  if (provided == 0) { /* nothing requested: keep the input size */
    req[0] = in[0], req[1] = in[1];
    return;
  }
  if (rq->mode == STK__RESIZE_DEFAULT || rq->mode == STK__RESIZE_STRETCH) {
    if (provided < 2) {
      /* with two axes the geometric mean of one provided scale is that scale */
      double avg = rq->mode == STK__RESIZE_DEFAULT ? fabs(given[0] ? scale[0] : scale[1]) : 1.0;
      for (int d = 0; d < 2; d++)
        if (!given[d]) req[d] = in[d] * avg;
    }
    clip_to_max(req, rq);
    return;
  }
  /* not_larger / not_smaller: one scale for both axes */
  bool larger = rq->mode == STK__RESIZE_NOT_SMALLER;
  double final = 0.0;
  bool first = true;
  for (int d = 0; d < 2; d++) {
    if (!given[d]) continue;
    double s = fabs(scale[d]);
    if (first || (larger && s > final) || (!larger && s < final)) final = s;
    first = false;
  }
  if (rq->has_max_size)
    for (int d = 0; d < 2; d++)
      if (rq->max_size[d] > 0 && rq->max_size[d] / in[d] < final) final = rq->max_size[d] / in[d];
  for (int d = 0; d < 2; d++)
    if (!given[d] || fabs(scale[d]) != final) req[d] = in[d] * copysign(final, scale[d]);
}

stk_status stk__resize_plan(const stk__resize_request *rq, int64_t out_size[2], double win_lo[2],
                            double win_hi[2]) {
  double req[2], in[2], lo[2], hi[2];
  for (int d = 0; d < 2; d++) {
    lo[d] = rq->lo[d], hi[d] = rq->hi[d], req[d] = rq->size[d];
    if (!isfinite(lo[d]) || !isfinite(hi[d]) || !isfinite(req[d]) ||
        (rq->has_max_size && !isfinite(rq->max_size[d])))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "non-finite size or region of interest");
    if (hi[d] < lo[d]) { /* a mirrored ROI: resample forward, mirror through the size */
      double t = lo[d];
      lo[d] = hi[d], hi[d] = t, req[d] = -req[d];
    }
    in[d] = hi[d] - lo[d];
  }
  adjust_size(req, in, rq);
  for (int d = 0; d < 2; d++) {
    double a = fabs(req[d]);
    if (!(a < 2147483647.0))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "output extent %g is too large", a);
    int64_t n = (int64_t)floor(a + 0.5); /* DALI rounds half away from zero */
    if (n < 1) n = 1;
    double l = req[d] < 0 ? hi[d] : lo[d], h = req[d] < 0 ? lo[d] : hi[d];
    if (rq->subpixel_scale && (double)n != a) {
      /* keep the requested scale: widen or narrow the window about its centre */
      double adj = a > 0 ? (double)n / a : 10.0;
      adj = adj > 10.0 ? 10.0 : adj;
      double c = 0.5 * (l + h);
      l = c + (l - c) * adj, h = c + (h - c) * adj;
      l = l < -1e9 ? -1e9 : l > 1e9 ? 1e9 : l;
      h = h < -1e9 ? -1e9 : h > 1e9 ? 1e9 : h;
    }
    out_size[d] = n;
    win_lo[d] = l;
    win_hi[d] = h;
  }
  return STK_OK;
}
