/*
 * GPU kernels for geometry and occlusion: warp_affine (behind rotate and warp_affine),
 * erase, grid_mask (api_geometry.h).
 *
 * As in kernels.cu, each entry point copies its per-sample descriptors and a table of
 * each sample's first block into one device array and launches one grid for the batch;
 * block b belongs to the sample whose range holds b. The per-pixel arithmetic is
 * src/shared/geometry_px.h, the same functions the CPU operators call, so the results
 * agree with the CPU by construction (bit for bit for float32, and for uint8 up to the
 * CPU's tail rounding rule; see the tests).
 */
#include <stdlib.h>
#include <string.h>

#include "api_geometry.h"
#include "gpu_kernels.h"
#include "gpu_internal.h"
#include "launch.cuh"
#include "../shared/geometry_px.h"
#include "pixel_tiles.cuh"

#define G_THREADS 256
#define G_TW      32   /* output columns per 2-D block */
#define G_TH      8    /* output rows per 2-D block */
#define G_TILE    8192 /* bytes per block of the staged kernels (pixel_tiles.cuh) */

/* Everything below has internal linkage: kernel templates of other families' files may
 * share a name (their host stubs would otherwise be merged by the linker). */
namespace {

/* ---------------------------------------------------------------------------------- */
/* Launch plumbing (as kernels.cu)                                                    */
/* ---------------------------------------------------------------------------------- */

/* One host block holding n descriptors of `desc` bytes, the first-block table (n + 1
 * ints) and `extra` more bytes (8-byte aligned), uploaded in one copy. */
typedef struct {
  char *host;
  size_t bytes, table_off, extra_off;
  int64_t *nb;
} g_plan;

static int g_plan_init(g_plan *p, int n, size_t desc, size_t extra, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  p->table_off = (size_t)n * desc;
  p->extra_off = (p->table_off + (size_t)(n + 1) * sizeof(int) + 7) & ~(size_t)7;
  p->bytes = p->extra_off + extra;
  p->host = (char *)calloc(1, p->bytes);
  p->nb = (int64_t *)malloc((size_t)n * sizeof(int64_t));
  if (!p->host || !p->nb)
    return GPU_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for %d descriptors", n);
  return 0;
}

static void g_plan_free(g_plan *p) {
  free(p->host);
  free(p->nb);
}

/* Builds the block table and uploads the plan; *dev stays NULL when there is no block. */
static int g_plan_upload(stk_gpu_ctx *ctx, g_plan *p, int n, cudaStream_t stream, void **dev,
                         char *err, size_t errlen) {
  *dev = NULL;
  int *first = (int *)(p->host + p->table_off);
  STK_TRY_INT(stk_block_table(p->nb, n, first, err, errlen));
  if (first[n] == 0) return 0;
  return stk_gpu_upload(ctx, p->host, p->bytes, stream, dev, err, errlen);
}

static int g_blocks(const g_plan *p, int n) { return ((const int *)(p->host + p->table_off))[n]; }

/* ---------------------------------------------------------------------------------- */
/* warp_affine                                                                        */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_warp_sample s;
  int bx; /* blocks across a row */
} warp_dev;

/* Channel ch of source pixel (x, y), which may lie outside: fill or the clamped edge. */
template <typename TI>
__device__ __forceinline__ float warp_tap(const stk_gpu_warp_sample &s, int C, long long x,
                                          long long y, int ch) {
  if (x < 0 || y < 0 || x >= s.src_w || y >= s.src_h) {
    if (s.constant_border) return s.fill[ch];
    x = x < 0 ? 0 : x >= s.src_w ? s.src_w - 1 : x;
    y = y < 0 ? 0 : y >= s.src_h ? s.src_h - 1 : y;
  }
  const TI *row = (const TI *)((const char *)s.src + (size_t)y * s.src_pitch);
  return (float)row[(size_t)x * C + ch];
}

template <typename TO>
__device__ __forceinline__ void warp_store(TO *p, float v);
template <>
__device__ __forceinline__ void warp_store<uint8_t>(uint8_t *p, float v) {
  *p = (uint8_t)stk_gpu_u8_from_float(v);
}
template <>
__device__ __forceinline__ void warp_store<float>(float *p, float v) {
  *p = v;
}

template <typename TI, typename TO, int INTERP>
__global__ void __launch_bounds__(G_THREADS)
    warp_kernel(const warp_dev *S, const int *first, int n, int C) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const warp_dev *d = &S[si];
  const stk_gpu_warp_sample &s = d->s;
  int t = b - first[si], bx = t % d->bx, by = t / d->bx;
  int x = bx * G_TW + (int)threadIdx.x % G_TW, y = by * G_TH + (int)threadIdx.x / G_TW;
  if (x >= s.dst_w || y >= s.dst_h) return;
  double sx, sy;
  stk_warp_row_origin(s.m, y, &sx, &sy);
  double px = stk_warp_step(sx, s.m[0], x), py = stk_warp_step(sy, s.m[3], x);
  TO *out = (TO *)s.dst + ((size_t)y * s.dst_w + x) * C;
  long long W = s.src_w, H = s.src_h;
  if (INTERP == STK_GPU_INTERP_NEAREST) {
    long long xi, yi;
    stk_warp_nearest(px, py, W, H, &xi, &yi);
    bool inside = xi >= 0 && yi >= 0 && xi < W && yi < H;
    if (sizeof(TI) == 1 && sizeof(TO) == 1) { /* bytes, as the CPU's uint8 -> uint8 path */
      if (!inside && s.constant_border) {
        for (int c = 0; c < C; c++) ((uint8_t *)out)[c] = s.fill_u8[c];
        return;
      }
      xi = xi < 0 ? 0 : xi >= W ? W - 1 : xi;
      yi = yi < 0 ? 0 : yi >= H ? H - 1 : yi;
      const uint8_t *p = (const uint8_t *)s.src + (size_t)yi * s.src_pitch + (size_t)xi * C;
      for (int c = 0; c < C; c++) ((uint8_t *)out)[c] = p[c];
    } else {
      for (int c = 0; c < C; c++) warp_store<TO>(out + c, warp_tap<TI>(s, C, xi, yi, c));
    }
  } else if (INTERP == STK_GPU_INTERP_LINEAR) {
    long long x0, y0;
    float ax, ay;
    stk_warp_linear_setup(px, py, W, H, &x0, &y0, &ax, &ay);
    if (x0 >= 0 && y0 >= 0 && x0 + 1 < W && y0 + 1 < H) { /* all taps inside: no checks */
      const TI *p = (const TI *)((const char *)s.src + (size_t)y0 * s.src_pitch) + (size_t)x0 * C;
      const TI *q = (const TI *)((const char *)p + s.src_pitch);
      for (int c = 0; c < C; c++)
        warp_store<TO>(out + c, stk_warp_bilinear((float)p[c], (float)p[c + C], (float)q[c],
                                                  (float)q[c + C], ax, ay));
      return;
    }
    for (int c = 0; c < C; c++)
      warp_store<TO>(out + c, stk_warp_bilinear(warp_tap<TI>(s, C, x0, y0, c),
                                                warp_tap<TI>(s, C, x0 + 1, y0, c),
                                                warp_tap<TI>(s, C, x0, y0 + 1, c),
                                                warp_tap<TI>(s, C, x0 + 1, y0 + 1, c), ax, ay));
  } else {
    long long x0, y0;
    float wx[4], wy[4];
    stk_warp_cubic_setup(px, py, W, H, &x0, &y0, wx, wy);
    bool inside = x0 >= 0 && y0 >= 0 && x0 + 3 < W && y0 + 3 < H;
    for (int c = 0; c < C; c++) {
      float acc = 0.0f;
      for (int j = 0; j < 4; j++) {
        float r = 0.0f;
        if (inside) { /* all 16 taps inside: no checks (same values) */
          const TI *p = (const TI *)((const char *)s.src + (size_t)(y0 + j) * s.src_pitch) +
                        (size_t)x0 * C + c;
          for (int k = 0; k < 4; k++) r = stk_warp_mac(r, wx[k], (float)p[k * C]);
        } else {
          for (int k = 0; k < 4; k++)
            r = stk_warp_mac(r, wx[k], warp_tap<TI>(s, C, x0 + k, y0 + j, c));
        }
        acc = stk_warp_mac(acc, wy[j], r);
      }
      warp_store<TO>(out + c, acc);
    }
  }
}

template <typename TI, typename TO>
static void warp_launch(int interp, int g, cudaStream_t st, const warp_dev *S, const int *f, int n,
                        int C) {
  switch (interp) {
    case STK_GPU_INTERP_NEAREST:
      warp_kernel<TI, TO, STK_GPU_INTERP_NEAREST><<<g, G_THREADS, 0, st>>>(S, f, n, C);
      break;
    case STK_GPU_INTERP_LINEAR:
      warp_kernel<TI, TO, STK_GPU_INTERP_LINEAR><<<g, G_THREADS, 0, st>>>(S, f, n, C);
      break;
    default:
      warp_kernel<TI, TO, STK_GPU_INTERP_CUBIC><<<g, G_THREADS, 0, st>>>(S, f, n, C);
      break;
  }
}

static int warp_check_sample(const stk_gpu_warp_sample *s, const stk_gpu_warp_args *a, int i,
                             char *err, size_t errlen) {
  size_t es = a->in_dtype == STK_DTYPE_UINT8 ? 1 : 4;
  if (!s->src || !s->dst || s->src_h < 1 || s->src_w < 1 || s->dst_h < 0 || s->dst_w < 0 ||
      s->src_pitch < (size_t)s->src_w * (size_t)a->channels * es)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: NULL pointer, empty image, negative "
                    "size or short pitch",
                    i);
  for (int k = 0; k < 6; k++)
    if (!isfinite(s->m[k]))
      return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: matrix element %d is not finite", i, k);
  return 0;
}

static int gpu_warp_affine(stk_gpu_ctx *ctx, int n, const stk_gpu_warp_sample *samples,
                           const stk_gpu_warp_args *args, uintptr_t stream_h, char *err,
                           size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  const stk_gpu_warp_args a = *args;
  if (a.channels < 1 || a.channels > 4)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "%d channels (1 to 4 supported)", a.channels);
  bool in_ok = a.in_dtype == STK_DTYPE_UINT8 || a.in_dtype == STK_DTYPE_FLOAT32;
  bool out_ok = a.out_dtype == STK_DTYPE_UINT8 || a.out_dtype == STK_DTYPE_FLOAT32;
  if (!in_ok || !out_ok)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "types %d -> %d (uint8 or float32 expected)",
                    (int)a.in_dtype, (int)a.out_dtype);
  if (a.interp != STK_GPU_INTERP_NEAREST && a.interp != STK_GPU_INTERP_LINEAR &&
      a.interp != STK_GPU_INTERP_CUBIC)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "interpolation %d (nearest, linear or cubic)",
                    a.interp);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  g_plan p;
  int rc = g_plan_init(&p, n, sizeof(warp_dev), 0, err, errlen);
  warp_dev *S = (warp_dev *)p.host;
  for (int i = 0; i < n && rc == 0; i++) {
    rc = warp_check_sample(&samples[i], &a, i, err, errlen);
    S[i].s = samples[i];
    S[i].bx = (int)stk_cdiv(samples[i].dst_w, G_TW);
    p.nb[i] = (int64_t)S[i].bx * stk_cdiv(samples[i].dst_h, G_TH);
  }
  cudaStream_t stream = (cudaStream_t)stream_h;
  void *dp = NULL;
  if (rc == 0) rc = g_plan_upload(ctx, &p, n, stream, &dp, err, errlen);
  if (rc == 0 && dp) {
    const warp_dev *dS = (const warp_dev *)dp;
    const int *df = (const int *)((char *)dp + p.table_off);
    int g = g_blocks(&p, n);
    bool iu8 = a.in_dtype == STK_DTYPE_UINT8, ou8 = a.out_dtype == STK_DTYPE_UINT8;
    if (iu8 && ou8)
      warp_launch<uint8_t, uint8_t>(a.interp, g, stream, dS, df, n, a.channels);
    else if (iu8)
      warp_launch<uint8_t, float>(a.interp, g, stream, dS, df, n, a.channels);
    else if (ou8)
      warp_launch<float, uint8_t>(a.interp, g, stream, dS, df, n, a.channels);
    else
      warp_launch<float, float>(a.interp, g, stream, dS, df, n, a.channels);
    rc = stk_check_launch("warp_affine", err, errlen);
  }
  if (dp) stk_gpu_device_free(ctx, dp, stream_h, NULL, 0);
  g_plan_free(&p);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* erase                                                                              */
/* ---------------------------------------------------------------------------------- */

/* A sample seen as `units` units of `unit` contiguous elements: the dimensions [0, split)
 * index the units (every box may restrict them), the others lie inside a unit (every
 * box spans them whole), so a unit is erased or kept as a whole. The units form a
 * rows x cols grid (cols: the extent of dimension split - 1), tiled like an image. */
typedef struct {
  const void *src;
  void *dst;
  int shape[STK_GPU_ERASE_MAX_NDIM];
  int split, unit, units;
  int rows, cols, bx; /* units as rows x cols (cols: extent of dimension split - 1) */
  int box0, nboxes;   /* this sample's boxes in the box array */
  int nfill, fill_axis;
  int cstride, cshape; /* fill index inside a unit: (j / cstride) % cshape */
  uint8_t fill[64];
} erase_dev;

typedef struct {
  int lo[STK_GPU_ERASE_MAX_NDIM], hi[STK_GPU_ERASE_MAX_NDIM];
} erase_box_dev;

template <int ES>
__device__ __forceinline__ void erase_copy(uint8_t *dst, const uint8_t *src) {
  if (ES == 1)
    *dst = *src;
  else if (ES == 2)
    *(uint16_t *)dst = *(const uint16_t *)src;
  else if (ES == 4)
    *(uint32_t *)dst = *(const uint32_t *)src;
  else
    *(unsigned long long *)dst = *(const unsigned long long *)src;
}

template <int ES>
__global__ void __launch_bounds__(G_THREADS)
    erase_kernel(const erase_dev *S, const int *first, int n, const erase_box_dev *boxes) {
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const erase_dev *d = &S[si];
  /* 2-D tiles over (rows, cols) of units: a warp takes 32 consecutive units of a row */
  int t = b - first[si], tx = t % d->bx, ty = t / d->bx;
  int x = tx * G_TW + (int)threadIdx.x % G_TW, y = ty * G_TH + (int)threadIdx.x / G_TW;
  if (x >= d->cols || y >= d->rows) return;
  int u = y * d->cols + x;
  int coord[STK_GPU_ERASE_MAX_NDIM];
  coord[d->split - 1] = x;
  int r = y;
  for (int k = d->split - 2; k > 0; k--) {
    coord[k] = r % d->shape[k];
    r /= d->shape[k];
  }
  if (d->split >= 2) coord[0] = r;
  bool erased = false;
  for (int q = 0; q < d->nboxes && !erased; q++) {
    const erase_box_dev *bx = &boxes[d->box0 + q];
    bool in = true;
    for (int k = 0; k < d->split && in; k++) in = coord[k] >= bx->lo[k] && coord[k] < bx->hi[k];
    erased = in;
  }
  size_t e0 = (size_t)u * d->unit;
  uint8_t *dst = (uint8_t *)d->dst + e0 * ES;
  if (!erased) {
    const uint8_t *src = (const uint8_t *)d->src + e0 * ES;
    for (int j = 0; j < d->unit; j++) erase_copy<ES>(dst + (size_t)j * ES, src + (size_t)j * ES);
    return;
  }
  int fixed = d->nfill > 1 && d->fill_axis < d->split ? coord[d->fill_axis] : 0;
  bool inner = d->nfill > 1 && d->fill_axis >= d->split;
  for (int j = 0; j < d->unit; j++) {
    int k = inner ? (j / d->cstride) % d->cshape : fixed;
    erase_copy<ES>(dst + (size_t)j * ES, d->fill + k * ES);
  }
}

/* Whether unit u is inside a box; *fixed: the fill index when it does not vary inside
 * the unit (as erase_kernel). */
__device__ __forceinline__ bool erase_unit_in(const erase_dev *d, const erase_box_dev *boxes, int u,
                                              int *fixed) {
  int coord[STK_GPU_ERASE_MAX_NDIM];
  int x = u % d->cols, r = u / d->cols;
  coord[d->split - 1] = x;
  for (int k = d->split - 2; k > 0; k--) {
    coord[k] = r % d->shape[k];
    r /= d->shape[k];
  }
  if (d->split >= 2) coord[0] = r;
  bool erased = false;
  for (int q = 0; q < d->nboxes && !erased; q++) {
    const erase_box_dev *bx = &boxes[d->box0 + q];
    bool in = true;
    for (int k = 0; k < d->split && in; k++) in = coord[k] >= bx->lo[k] && coord[k] < bx->hi[k];
    erased = in;
  }
  *fixed = d->nfill > 1 && d->fill_axis < d->split ? coord[d->fill_axis] : 0;
  return erased;
}

/* Small units (at most 64 bytes): a block takes `upb` consecutive units (upb = the
 * sample's G_TILE / unit bytes), staged through shared memory as 16-byte vectors; each
 * thread copies or fills whole units there. */
template <int ES>
__global__ void __launch_bounds__(G_THREADS)
    erase_staged(const erase_dev *S, const int *first, int n, const erase_box_dev *boxes) {
  __shared__ __align__(16) uint8_t sin[G_TILE + 16], sout[G_TILE + 16];
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const erase_dev *d = &S[si];
  int ub = d->unit * ES, upb = G_TILE / ub;
  int u0 = (b - first[si]) * upb, nu = d->units - u0 < upb ? d->units - u0 : upb;
  const uint8_t *g = (const uint8_t *)d->src + (size_t)u0 * ub;
  uint8_t *gd = (uint8_t *)d->dst + (size_t)u0 * ub;
  pt_load(sin, g, nu * ub);
  __syncthreads();
  const uint8_t *a = sin + pt_shift(g);
  uint8_t *o = sout + pt_shift(gd);
  bool inner = d->nfill > 1 && d->fill_axis >= d->split;
  for (int i = threadIdx.x; i < nu; i += G_THREADS) {
    int fixed;
    const uint8_t *q = a + i * ub;
    uint8_t *w = o + i * ub;
    if (!erase_unit_in(d, boxes, u0 + i, &fixed)) {
      for (int j = 0; j < ub; j++) w[j] = q[j];
      continue;
    }
    for (int j = 0; j < d->unit; j++) {
      int k = inner ? (j / d->cstride) % d->cshape : fixed;
      for (int e = 0; e < ES; e++) w[j * ES + e] = d->fill[k * ES + e];
    }
  }
  __syncthreads();
  pt_store(gd, sout, nu * ub);
}

/* The unit split of sample s (see erase_dev); false when a box is empty (skipped). */
static bool erase_box_empty(const stk_gpu_erase_box *bx, int ndim) {
  for (int k = 0; k < ndim; k++)
    if (bx->hi[k] <= bx->lo[k]) return true;
  return false;
}

static int erase_describe(const stk_gpu_erase_sample *s, const stk_gpu_erase_args *a, int i,
                          erase_dev *d, erase_box_dev *boxes, int *nbox, char *err, size_t errlen) {
  int nd = a->ndim;
  int64_t total = 1;
  for (int k = 0; k < nd; k++) {
    if (s->shape[k] < 0) return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: negative extent", i);
    total *= s->shape[k];
    if (total > INT32_MAX)
      return GPU_FAIL(STK_ERR_UNSUPPORTED, "sample %d has more than 2^31 elements", i);
  }
  if (total > 0 && (!s->src || !s->dst))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %d: NULL pointer", i);
  if (s->nboxes < 0 || (s->nboxes > 0 && !s->boxes) || s->nfill < 1 || s->nfill * a->esize > 64 ||
      (s->nfill > 1 &&
       (s->fill_axis < 0 || s->fill_axis >= nd || s->shape[s->fill_axis] != s->nfill)))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: bad boxes or fill (%d values along axis %d)", i, s->nfill,
                    s->fill_axis);
  memset(d, 0, sizeof *d);
  d->src = s->src, d->dst = s->dst;
  for (int k = 0; k < nd; k++) d->shape[k] = (int)s->shape[k];
  d->box0 = *nbox;
  int need = nd > 1 ? nd - 1 : 1; /* at least all but the last dimension index units */
  for (int q = 0; q < s->nboxes; q++) {
    const stk_gpu_erase_box *bx = &s->boxes[q];
    if (erase_box_empty(bx, nd)) continue;
    erase_box_dev *o = &boxes[(*nbox)++];
    for (int k = 0; k < nd; k++) {
      o->lo[k] = (int)bx->lo[k], o->hi[k] = (int)bx->hi[k];
      if ((bx->lo[k] > 0 || bx->hi[k] < s->shape[k]) && k + 1 > need) need = k + 1;
    }
  }
  d->nboxes = *nbox - d->box0;
  /* a long last dimension is better split element by element (more threads) */
  if (need < nd && s->shape[nd - 1] > 16) need = nd;
  d->split = need;
  d->unit = 1;
  for (int k = need; k < nd; k++) d->unit *= (int)s->shape[k];
  d->units = d->unit ? (int)(total / d->unit) : 0;
  d->cols = (int)s->shape[need - 1];
  d->rows = d->cols ? d->units / d->cols : 0;
  d->bx = (int)stk_cdiv(d->cols, G_TW);
  d->nfill = s->nfill, d->fill_axis = s->nfill > 1 ? s->fill_axis : 0;
  d->cstride = 1, d->cshape = 1;
  if (s->nfill > 1) {
    for (int k = d->fill_axis + 1; k < nd; k++) d->cstride *= (int)s->shape[k];
    d->cshape = (int)s->shape[d->fill_axis];
  }
  memcpy(d->fill, s->fill, sizeof d->fill);
  return 0;
}

static int gpu_erase(stk_gpu_ctx *ctx, int n, const stk_gpu_erase_sample *samples,
                     const stk_gpu_erase_args *args, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples) || !args)
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  stk_gpu_erase_args a = *args;
  if (a.ndim < 1 || a.ndim > STK_GPU_ERASE_MAX_NDIM)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "%d dimensions (1 to %d supported)", a.ndim,
                    STK_GPU_ERASE_MAX_NDIM);
  if (a.esize != 1 && a.esize != 2 && a.esize != 4 && a.esize != 8)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "element size %d", a.esize);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  int64_t total_boxes = 0;
  for (int i = 0; i < n; i++) total_boxes += samples[i].nboxes > 0 ? samples[i].nboxes : 0;
  if (total_boxes > INT32_MAX / 2)
    return GPU_FAIL(STK_ERR_LIMIT, "%lld boxes", (long long)total_boxes);
  g_plan p;
  int rc = g_plan_init(&p, n, sizeof(erase_dev), (size_t)total_boxes * sizeof(erase_box_dev), err,
                       errlen);
  erase_dev *S = (erase_dev *)p.host;
  erase_box_dev *boxes = (erase_box_dev *)(p.host + p.extra_off);
  int nbox = 0;
  /* the staged kernel when every unit is small (one launch for the batch) */
  bool staged = true;
  for (int i = 0; i < n && rc == 0; i++) {
    rc = erase_describe(&samples[i], &a, i, &S[i], boxes, &nbox, err, errlen);
    if (rc == 0 && S[i].units > 0 && (int64_t)S[i].unit * a.esize > 64) staged = false;
  }
  for (int i = 0; i < n && rc == 0; i++)
    p.nb[i] = staged ? (S[i].units > 0 ? stk_cdiv(S[i].units, G_TILE / (S[i].unit * a.esize)) : 0)
                     : (int64_t)S[i].bx * stk_cdiv(S[i].rows, G_TH);
  cudaStream_t stream = (cudaStream_t)stream_h;
  void *dp = NULL;
  if (rc == 0) rc = g_plan_upload(ctx, &p, n, stream, &dp, err, errlen);
  if (rc == 0 && dp) {
    const erase_dev *dS = (const erase_dev *)dp;
    const int *df = (const int *)((char *)dp + p.table_off);
    const erase_box_dev *db = (const erase_box_dev *)((char *)dp + p.extra_off);
    int g = g_blocks(&p, n);
    if (staged) {
      switch (a.esize) {
        case 1:
          erase_staged<1><<<g, G_THREADS, 0, stream>>>(dS, df, n, db);
          break;
        case 2:
          erase_staged<2><<<g, G_THREADS, 0, stream>>>(dS, df, n, db);
          break;
        case 4:
          erase_staged<4><<<g, G_THREADS, 0, stream>>>(dS, df, n, db);
          break;
        default:
          erase_staged<8><<<g, G_THREADS, 0, stream>>>(dS, df, n, db);
          break;
      }
    } else
      switch (a.esize) {
        case 1:
          erase_kernel<1><<<g, G_THREADS, 0, stream>>>(dS, df, n, db);
          break;
        case 2:
          erase_kernel<2><<<g, G_THREADS, 0, stream>>>(dS, df, n, db);
          break;
        case 4:
          erase_kernel<4><<<g, G_THREADS, 0, stream>>>(dS, df, n, db);
          break;
        default:
          erase_kernel<8><<<g, G_THREADS, 0, stream>>>(dS, df, n, db);
          break;
      }
    rc = stk_check_launch("erase", err, errlen);
  }
  if (dp) stk_gpu_device_free(ctx, dp, stream_h, NULL, 0);
  g_plan_free(&p);
  return rc;
}

/* ---------------------------------------------------------------------------------- */
/* grid_mask                                                                          */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  stk_gpu_grid_mask_sample s;
  int bx;
} grid_dev;

/* Pixels of at most 64 bytes, staged: a block takes G_TILE / pb consecutive pixels
 * (flat index: any rows), moved through shared memory as 16-byte vectors; each thread
 * keeps or zeroes whole pixels there (stk_grid_keep, as the CPU). */
__global__ void __launch_bounds__(G_THREADS)
    grid_staged(const grid_dev *S, const int *first, int n, int pb) {
  __shared__ __align__(16) uint8_t sin[G_TILE + 16], sout[G_TILE + 16];
  int b = blockIdx.x, si = stk_find_sample(first, n, b);
  const grid_dev *d = &S[si];
  const stk_gpu_grid_mask_sample &s = d->s;
  int ppb = G_TILE / pb;
  int64_t total = (int64_t)s.h * s.w, p0 = (int64_t)(b - first[si]) * ppb;
  int np = (int)(total - p0 < ppb ? total - p0 : ppb);
  const uint8_t *g = (const uint8_t *)s.src + p0 * pb;
  uint8_t *gd = (uint8_t *)s.dst + p0 * pb;
  pt_load(sin, g, np * pb);
  __syncthreads();
  const uint8_t *a = sin + pt_shift(g);
  uint8_t *o = sout + pt_shift(gd);
  for (int i = threadIdx.x; i < np; i += G_THREADS) {
    int64_t px = p0 + i;
    int y = (int)(px / s.w), x = (int)(px - (int64_t)y * s.w);
    const uint8_t *q = a + i * pb;
    uint8_t *w = o + i * pb;
    if (stk_grid_keep(x, y, s.ca, s.sa, s.shift_x, s.shift_y, s.tile, s.ratio))
      for (int k = 0; k < pb; k++) w[k] = q[k];
    else
      for (int k = 0; k < pb; k++) w[k] = 0;
  }
  __syncthreads();
  pt_store(gd, sout, np * pb);
}

static int gpu_grid_mask(stk_gpu_ctx *ctx, int n, const stk_gpu_grid_mask_sample *samples,
                         int pixel_bytes, uintptr_t stream_h, char *err, size_t errlen) {
  if (n < 0 || (n > 0 && !samples))
    return GPU_FAIL(STK_ERR_INVALID_ARGUMENT, "bad batch (n = %d)", n);
  if (pixel_bytes < 1 || pixel_bytes > 64)
    return GPU_FAIL(STK_ERR_UNSUPPORTED, "%d bytes per pixel (1 to 64 supported)", pixel_bytes);
  if (n == 0) return 0;
  STK_TRY_INT(stk_gpu_enter(ctx, err, errlen));
  g_plan p;
  int rc = g_plan_init(&p, n, sizeof(grid_dev), 0, err, errlen);
  grid_dev *S = (grid_dev *)p.host;
  for (int i = 0; i < n && rc == 0; i++) {
    const stk_gpu_grid_mask_sample *s = &samples[i];
    if (s->h < 0 || s->w < 0 || ((!s->src || !s->dst) && s->h > 0 && s->w > 0) ||
        !(s->tile >= 1.0) || !(s->ratio >= 0.0 && s->ratio <= 1.0)) {
      rc = GPU_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "sample %d: NULL pointer, negative size, tile %g < 1 or "
                    "ratio %g outside [0, 1]",
                    i, s->tile, s->ratio);
      break;
    }
    S[i].s = *s;
    S[i].bx = (int)stk_cdiv(s->w, G_TW);
    p.nb[i] = stk_cdiv((int64_t)s->h * s->w, G_TILE / pixel_bytes);
  }
  cudaStream_t stream = (cudaStream_t)stream_h;
  void *dp = NULL;
  if (rc == 0) rc = g_plan_upload(ctx, &p, n, stream, &dp, err, errlen);
  if (rc == 0 && dp) {
    const grid_dev *dS = (const grid_dev *)dp;
    const int *df = (const int *)((char *)dp + p.table_off);
    int g = g_blocks(&p, n);
    grid_staged<<<g, G_THREADS, 0, stream>>>(dS, df, n, pixel_bytes);
    rc = stk_check_launch("grid_mask", err, errlen);
  }
  if (dp) stk_gpu_device_free(ctx, dp, stream_h, NULL, 0);
  g_plan_free(&p);
  return rc;
}

} // namespace

/* ---- the kernels of gpu_kernels.h ---- */

int stk_gpu_k_warp_affine(stk_gpu_ctx *ctx, int n, const stk_gpu_warp_sample *samples,
                          const stk_gpu_warp_args *args, uintptr_t stream, char *err,
                          size_t errlen) {
  return gpu_warp_affine(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_erase(stk_gpu_ctx *ctx, int n, const stk_gpu_erase_sample *samples,
                    const stk_gpu_erase_args *args, uintptr_t stream, char *err, size_t errlen) {
  return gpu_erase(ctx, n, samples, args, stream, err, errlen);
}

int stk_gpu_k_grid_mask(stk_gpu_ctx *ctx, int n, const stk_gpu_grid_mask_sample *samples,
                        const stk_gpu_grid_mask_args *args, uintptr_t stream, char *err,
                        size_t errlen) {
  return gpu_grid_mask(ctx, n, samples, args->pixel_bytes, stream, err, errlen);
}
