/* COCO segmentation masks (coco.h): RLE decoding and polygon rasterisation.
 *
 * The polygon rule is the one of the COCO tools, reimplemented from its description:
 * vertices are snapped to a grid 5 times finer than the pixels, the outline is traced
 * through that grid one step at a time along its major axis, and every step of the
 * outline across the centre line of a pixel column toggles the column from the first
 * pixel whose centre lies below the crossing. Toggles are applied in column-major order
 * over the whole image, so a pixel is inside when an odd number of toggles precede it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coco.h"

#define SCALE 5

bool stk__coco_rle_decode(const char *text, size_t len, uint32_t **counts, int64_t *n) {
  *counts = NULL;
  *n = 0;
  uint32_t *c = malloc((len ? len : 1) * sizeof *c); /* at most one count per byte */
  if (!c) return false;
  int64_t m = 0;
  for (size_t p = 0; p < len;) {
    int64_t x = 0;
    int k = 0;
    bool more = true;
    while (more) {
      if (p >= len || k > 6) goto bad; /* a count that never ends, or over 35 bits */
      int v = (unsigned char)text[p++] - 48;
      if (v < 0 || v > 63) goto bad;
      x |= (int64_t)(v & 0x1f) << (5 * k);
      more = (v & 0x20) != 0;
      k++;
      if (!more && (v & 0x10)) x -= (int64_t)1 << (5 * k); /* sign-extend */
    }
    if (m > 2) x += c[m - 2]; /* counts after the third are deltas */
    if (x < 0 || x > UINT32_MAX) goto bad;
    c[m++] = (uint32_t)x;
  }
  *counts = c;
  *n = m;
  return true;
bad:
  free(c);
  return false;
}

bool stk__coco_rle_paint(const uint32_t *counts, int64_t n, int32_t h, int32_t w, uint8_t *mask) {
  int64_t total = (int64_t)h * w, pos = 0;
  for (int64_t i = 0; i < n; i++) {
    if ((int64_t)counts[i] > total - pos) return false;
    if (i & 1)
      for (int64_t p = pos; p < pos + counts[i]; p++) mask[(p % h) * w + p / h] = 1;
    pos += counts[i];
  }
  return true;
}

/* The outline is traced on the fine grid one step at a time, edges in polygon order, and
 * each step between two points is turned into a column crossing at once: only the
 * crossings are kept (at most one per step inside the image's columns). */
typedef struct {
  int64_t pu, pv; /* the previous point */
  bool have;
  int32_t h, w;
  int64_t *pos; /* crossings as column-major positions (x * h + y) */
  int64_t m, cap;
  bool oom;
} tracer;

/* Snaps a coordinate to the fine grid (C's truncating cast of scale * c + 0.5). */
static int64_t snap(float c) { return (int64_t)(SCALE * (double)c + 0.5); }

static void cross(tracer *t, int64_t u0, int64_t v0, int64_t u1, int64_t v1) {
  int64_t lo = u1 < u0 ? u1 : u1 - 1;
  /* Pixel column k's centre line lies between fine columns SCALE*k+2 and +3. */
  if (lo < 0 || lo % SCALE != SCALE / 2 || lo / SCALE > t->w - 1) return;
  int64_t vmin = v1 < v0 ? v1 : v0;
  double yd = ((double)vmin + 0.5) / SCALE - 0.5;
  yd = yd < 0 ? 0 : yd > t->h ? t->h : yd;
  if (t->m == t->cap) {
    int64_t cap = t->cap ? 2 * t->cap : 64;
    int64_t *p = realloc(t->pos, (size_t)cap * sizeof *p);
    if (!p) {
      t->oom = true;
      return;
    }
    t->pos = p, t->cap = cap;
  }
  t->pos[t->m++] = (lo / SCALE) * t->h + (int64_t)ceil(yd);
}

static void step(tracer *t, int64_t u, int64_t v) {
  if (t->have && u != t->pu) cross(t, t->pu, t->pv, u, v);
  t->pu = u, t->pv = v, t->have = true;
}

static void trace_edge(tracer *o, int64_t xs, int64_t ys, int64_t xe, int64_t ye) {
  int64_t dx = llabs(xe - xs), dy = llabs(ye - ys);
  bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
  if (flip) {
    int64_t t = xs;
    xs = xe, xe = t, t = ys, ys = ye, ye = t;
  }
  if (dx >= dy) {
    double s = dx ? (double)(ye - ys) / (double)dx : 0;
    for (int64_t d = 0; d <= dx; d++) {
      int64_t t = flip ? dx - d : d;
      step(o, t + xs, (int64_t)((double)ys + s * (double)t + 0.5));
    }
  } else {
    double s = (double)(xe - xs) / (double)dy;
    for (int64_t d = 0; d <= dy; d++) {
      int64_t t = flip ? dy - d : d;
      step(o, (int64_t)((double)xs + s * (double)t + 0.5), t + ys);
    }
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Whether tracing the polygon is reasonable work: its steps are bounded by a multiple of
 * what a polygon over the image could need (vertices far outside are refused). */
static bool bounded(const float *xy, int64_t n, int32_t h, int32_t w) {
  double total = 0, limit = 8.0 * SCALE * ((double)h + w + 2) * ((double)n + 1);
  if (limit > (double)(1 << 30)) limit = (double)(1 << 30);
  /* every vertex checked before any is snapped (an edge reads the next vertex too) */
  for (int64_t j = 0; j < 2 * n; j++)
    if (!isfinite(xy[j]) || fabsf(xy[j]) > 1e9f) return false;
  for (int64_t j = 0; j < n; j++) {
    int64_t k = (j + 1) % n;
    int64_t dx = llabs(snap(xy[2 * k]) - snap(xy[2 * j]));
    int64_t dy = llabs(snap(xy[2 * k + 1]) - snap(xy[2 * j + 1]));
    total += (double)(dx > dy ? dx : dy) + 1;
    if (total > limit) return false;
  }
  return true;
}

bool stk__coco_poly_paint(const float *xy, int64_t n, int32_t h, int32_t w, uint8_t *mask) {
  if (n < 1 || h < 1 || w < 1) return true;
  if (!bounded(xy, n, h, w)) return false;
  tracer t = {.h = h, .w = w};
  for (int64_t j = 0; j < n && !t.oom; j++) {
    int64_t k = (j + 1) % n;
    trace_edge(&t, snap(xy[2 * j]), snap(xy[2 * j + 1]), snap(xy[2 * k]), snap(xy[2 * k + 1]));
  }
  if (!t.oom && t.m > 0) { /* no crossing at all (a degenerate polygon): nothing inside */
    qsort(t.pos, (size_t)t.m, sizeof *t.pos, cmp_i64);
    /* Between toggles 2i and 2i+1 the pixels are inside (equal positions cancel). */
    int64_t end = (int64_t)h * w, m = t.m;
    for (int64_t i = 0; i + 1 < m; i += 2)
      for (int64_t p = t.pos[i]; p < t.pos[i + 1] && p < end; p++) mask[(p % h) * w + p / h] = 1;
    if (m & 1)
      for (int64_t p = t.pos[m - 1]; p < end; p++) mask[(p % h) * w + p / h] = 1;
  }
  free(t.pos);
  return !t.oom;
}
