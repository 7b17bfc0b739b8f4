/* `stoker preview`: a PNG grid of the first N samples of a pipeline's first output, with
 * later outputs that are boxes or label masks drawn over them (preview_overlay.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "preview_overlay.h"

typedef preview_tile tile;

static double element(const stk_tensor_desc *d, int64_t offset) {
  const char *p = (const char *)d->data + offset;
  switch (d->dtype) {
    case STK_DTYPE_UINT8:
      return *(const uint8_t *)p;
    case STK_DTYPE_FLOAT32:
      return *(const float *)p;
    case STK_DTYPE_FLOAT64:
      return *(const double *)p;
    case STK_DTYPE_INT16:
      return *(const int16_t *)p;
    case STK_DTYPE_INT32:
      return *(const int32_t *)p;
    case STK_DTYPE_FLOAT16: { /* half to float, enough for display */
      uint16_t h = *(const uint16_t *)p;
      int e = (h >> 10) & 31, m = h & 1023;
      double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
      return (h & 0x8000) ? -v : v;
    }
    default:
      return 0;
  }
}

/* Converts an HWC or CHW sample of any numeric type to 8-bit RGB; non-uint8 data is
 * stretched from its own min..max (deterministic, shows normalised outputs). */
static bool to_tile(const stk_tensor_desc *d, const char *layout, tile *t) {
  if (d->ndim != 3 && d->ndim != 2) return false;
  bool chw = strcmp(layout, "CHW") == 0;
  int h = (int)(d->ndim == 2 ? d->shape[0] : chw ? d->shape[1] : d->shape[0]);
  int w = (int)(d->ndim == 2 ? d->shape[1] : chw ? d->shape[2] : d->shape[1]);
  int c = (int)(d->ndim == 2 ? 1 : chw ? d->shape[0] : d->shape[2]);
  int64_t sc = d->ndim == 2 ? 0 : chw ? d->strides[0] : d->strides[2];
  int64_t sy = d->ndim == 2 ? d->strides[0] : chw ? d->strides[1] : d->strides[0];
  int64_t sx = d->ndim == 2 ? d->strides[1] : chw ? d->strides[2] : d->strides[1];
  double lo = 0, hi = 255;
  if (d->dtype != STK_DTYPE_UINT8) {
    lo = INFINITY, hi = -INFINITY;
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        for (int k = 0; k < c; k++) {
          double v = element(d, y * sy + x * sx + k * sc);
          lo = fmin(lo, v), hi = fmax(hi, v);
        }
    if (!(hi > lo)) hi = lo + 1;
  }
  t->h = h, t->w = w;
  t->rgb = malloc((size_t)h * w * 3);
  if (!t->rgb) return false;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < 3; k++) {
        double v = element(d, y * sy + x * sx + (c >= 3 ? k : 0) * sc);
        double s = (v - lo) * 255.0 / (hi - lo);
        t->rgb[((size_t)y * w + x) * 3 + k] = (uint8_t)(s < 0 ? 0 : s > 255 ? 255 : s + 0.5);
      }
  return true;
}

/* Output `index` of batch b as a host list (*copy: a host copy to release, or NULL). */
static stk_tensor_list *host_output(stk_batch *b, size_t index, stk_tensor_list **copy) {
  stk_tensor_list *tl = stk_batch_output(b, index);
  *copy = NULL;
  if (stk_tensor_list_storage(tl) != STK_STORAGE_DEVICE) return tl;
  return stk_tensor_list_to_host(tl, copy) == STK_OK ? *copy : NULL;
}

/* Draws outputs 1.. of sample i over its tile (boxes, masks; others are skipped). */
static void overlay_outputs(stk_batch *b, size_t i, tile *t) {
  for (size_t k = 1; k < stk_batch_num_outputs(b); k++) {
    stk_tensor_list *copy, *tl = host_output(b, k, &copy);
    if (tl && i < stk_tensor_list_num_samples(tl)) {
      stk_tensor_desc d;
      stk_tensor_list_sample(tl, i, &d);
      preview_overlay(t, &d);
    }
    stk_tensor_list_release(copy);
  }
}

static bool collect_tiles(stk_pipeline *p, tile *tiles, int64_t count) {
  int64_t have = 0;
  while (have < count) {
    stk_batch *b;
    if (stk_pipeline_run(p, &b) != STK_OK) {
      cli_error("run");
      return false;
    }
    stk_tensor_list *tl = stk_batch_output(b, 0), *host = NULL;
    if (stk_tensor_list_storage(tl) == STK_STORAGE_DEVICE) { /* GPU output: look at a host copy */
      if (stk_tensor_list_to_host(tl, &host) != STK_OK) {
        cli_error("copy to host");
        stk_batch_release(b);
        return false;
      }
      tl = host;
    }
    for (size_t i = 0; i < stk_tensor_list_num_samples(tl) && have < count; i++, have++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(tl, i, &d);
      if (!to_tile(&d, stk_tensor_list_layout(tl), &tiles[have])) {
        fprintf(stderr, "stoker: preview: output 0 is not an image (HWC, CHW or HW)\n");
        stk_tensor_list_release(host);
        stk_batch_release(b);
        return false;
      }
      overlay_outputs(b, i, &tiles[have]);
    }
    stk_tensor_list_release(host);
    stk_batch_release(b);
  }
  return true;
}

static bool write_grid(const char *path, tile *tiles, int64_t count) {
  int cols = (int)ceil(sqrt((double)count)), rows = (int)((count + cols - 1) / cols), gap = 4;
  int cell_h = 0, cell_w = 0;
  for (int64_t i = 0; i < count; i++) {
    if (tiles[i].h > cell_h) cell_h = tiles[i].h;
    if (tiles[i].w > cell_w) cell_w = tiles[i].w;
  }
  int W = cols * (cell_w + gap) + gap, H = rows * (cell_h + gap) + gap;
  uint8_t *img = malloc((size_t)W * H * 3);
  if (!img) return false;
  memset(img, 40, (size_t)W * H * 3);
  for (int64_t i = 0; i < count; i++) {
    int ox = gap + (int)(i % cols) * (cell_w + gap), oy = gap + (int)(i / cols) * (cell_h + gap);
    for (int y = 0; y < tiles[i].h; y++)
      memcpy(img + ((size_t)(oy + y) * W + ox) * 3, tiles[i].rgb + (size_t)y * tiles[i].w * 3,
             (size_t)tiles[i].w * 3);
  }
  bool ok = cli_write_png(path, img, W, H, 3);
  free(img);
  if (ok) printf("wrote %s: %lld samples, %dx%d\n", path, (long long)count, W, H);
  return ok;
}

int cli_preview(int argc, char **argv) {
  cli_options o;
  if (!cli_parse(argc, argv, 2,
                 "--data --pipeline --count --out --seed --threads --prefetch --device "
                 "--batch-size --on-error --timeout",
                 &o))
    return 2;
  if (!o.out) {
    fprintf(stderr, "stoker: preview needs --out FILE.png\n");
    return 2;
  }
  if (o.count > 1024) {
    fprintf(stderr, "stoker: preview: --count is at most 1024\n");
    return 2;
  }
  bool batch_given = false;
  for (int i = 2; i < argc; i++) batch_given |= strcmp(argv[i], "--batch-size") == 0;
  if (!batch_given) o.batch_size = o.count < 16 ? o.count : 16;
  stk_pipeline *p = cli_make_pipeline(&o);
  if (!p) return 1;
  tile *tiles = calloc((size_t)o.count, sizeof(tile));
  bool ok = tiles && stk_pipeline_build(p) == STK_OK;
  if (!ok && tiles) cli_error("build");
  ok = ok && collect_tiles(p, tiles, o.count) && write_grid(o.out, tiles, o.count);
  for (int64_t i = 0; tiles && i < o.count; i++) free(tiles[i].rgb);
  free(tiles);
  stk_pipeline_destroy(p);
  return ok ? 0 : 1;
}
