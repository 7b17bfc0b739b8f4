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

/* The outline on the fine grid: one point per step, edges traced in polygon order. */
typedef struct {
  int64_t *u, *v;
  int64_t n;
} outline;

/* Snaps a coordinate to the fine grid (C's truncating cast of scale * c + 0.5). */
static int64_t snap(float c) { return (int64_t)(SCALE * (double)c + 0.5); }

static void trace_edge(outline *o, int64_t xs, int64_t ys, int64_t xe, int64_t ye) {
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
      o->u[o->n] = t + xs, o->v[o->n++] = (int64_t)((double)ys + s * (double)t + 0.5);
    }
  } else {
    double s = (double)(xe - xs) / (double)dy;
    for (int64_t d = 0; d <= dy; d++) {
      int64_t t = flip ? dy - d : d;
      o->v[o->n] = t + ys, o->u[o->n++] = (int64_t)((double)xs + s * (double)t + 0.5);
    }
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Column crossings of the outline as column-major pixel positions (x * h + y). */
static int64_t crossings(const outline *o, int32_t h, int32_t w, int64_t *pos) {
  int64_t m = 0;
  for (int64_t j = 1; j < o->n; j++) {
    if (o->u[j] == o->u[j - 1]) continue;
    int64_t lo = o->u[j] < o->u[j - 1] ? o->u[j] : o->u[j] - 1;
    /* Pixel column k's centre line lies between fine columns SCALE*k+2 and +3. */
    if (lo < 0 || lo % SCALE != SCALE / 2) continue;
    int64_t x = lo / SCALE;
    if (x > w - 1) continue;
    int64_t vmin = o->v[j] < o->v[j - 1] ? o->v[j] : o->v[j - 1];
    double yd = ((double)vmin + 0.5) / SCALE - 0.5;
    yd = yd < 0 ? 0 : yd > h ? h : yd;
    pos[m++] = x * h + (int64_t)ceil(yd);
  }
  return m;
}

bool stk__coco_poly_paint(const float *xy, int64_t n, int32_t h, int32_t w, uint8_t *mask) {
  if (n < 1 || h < 1 || w < 1) return true;
  /* Bound the work: the outline has sum(max(|dx|, |dy|) + 1) points. */
  int64_t total = 0, limit = (int64_t)64 * SCALE * ((int64_t)h + w + 2) * (n + 1);
  for (int64_t j = 0; j < n; j++) {
    int64_t k = (j + 1) % n;
    if (!isfinite(xy[2 * j]) || !isfinite(xy[2 * j + 1]) || fabsf(xy[2 * j]) > 1e9f ||
        fabsf(xy[2 * j + 1]) > 1e9f)
      return false;
    int64_t dx = llabs(snap(xy[2 * k]) - snap(xy[2 * j]));
    int64_t dy = llabs(snap(xy[2 * k + 1]) - snap(xy[2 * j + 1]));
    total += (dx > dy ? dx : dy) + 1;
    if (total > limit) return false;
  }
  outline o = {malloc((size_t)total * sizeof(int64_t)), malloc((size_t)total * sizeof(int64_t)), 0};
  int64_t *pos = malloc((size_t)total * sizeof(int64_t));
  bool ok = o.u && o.v && pos;
  if (ok) {
    for (int64_t j = 0; j < n; j++) {
      int64_t k = (j + 1) % n;
      trace_edge(&o, snap(xy[2 * j]), snap(xy[2 * j + 1]), snap(xy[2 * k]), snap(xy[2 * k + 1]));
    }
    int64_t m = crossings(&o, h, w, pos);
    qsort(pos, (size_t)m, sizeof *pos, cmp_i64);
    /* Between toggles 2i and 2i+1 the pixels are inside (equal positions cancel). */
    int64_t end = (int64_t)h * w;
    for (int64_t i = 0; i + 1 < m; i += 2)
      for (int64_t p = pos[i]; p < pos[i + 1] && p < end; p++) mask[(p % h) * w + p / h] = 1;
    if (m & 1)
      for (int64_t p = pos[m - 1]; p < end; p++) mask[(p % h) * w + p / h] = 1;
  }
  free(o.u);
  free(o.v);
  free(pos);
  return ok;
}
