/* `stoker preview` overlays: the pipeline's outputs after the first, drawn over each
 * sample's image when they look like boxes (float [N, 4], ltrb, relative when every
 * value is within [-0.5, 1.5], else pixels) or like a label mask (integers, HW or HWC
 * with one channel, the image's size: each label tinted in its own colour). Anything
 * else is left out. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "preview_overlay.h"

/* A colour per label (golden-angle hues, bright). */
static void label_colour(int64_t label, uint8_t rgb[3]) {
  double h = fmod((double)label * 137.508, 360.0) / 60.0, x = 1.0 - fabs(fmod(h, 2.0) - 1.0);
  double r = 0, g = 0, b = 0;
  int sector = (int)h;
  if (sector == 0)
    r = 1, g = x;
  else if (sector == 1)
    r = x, g = 1;
  else if (sector == 2)
    g = 1, b = x;
  else if (sector == 3)
    g = x, b = 1;
  else if (sector == 4)
    r = x, b = 1;
  else
    r = 1, b = x;
  rgb[0] = (uint8_t)(55 + 200 * r), rgb[1] = (uint8_t)(55 + 200 * g),
  rgb[2] = (uint8_t)(55 + 200 * b);
}

static double value_at(const stk_tensor_desc *d, int64_t offset) {
  const char *p = (const char *)d->data + offset;
  switch (d->dtype) {
    case STK_DTYPE_UINT8:
      return *(const uint8_t *)p;
    case STK_DTYPE_INT16:
      return *(const int16_t *)p;
    case STK_DTYPE_UINT16:
      return *(const uint16_t *)p;
    case STK_DTYPE_INT32:
      return *(const int32_t *)p;
    case STK_DTYPE_INT64:
      return (double)*(const int64_t *)p;
    case STK_DTYPE_FLOAT32:
      return *(const float *)p;
    case STK_DTYPE_FLOAT64:
      return *(const double *)p;
    default:
      return 0;
  }
}

static void put(preview_tile *t, int x, int y, const uint8_t rgb[3]) {
  if (x < 0 || y < 0 || x >= t->w || y >= t->h) return;
  memcpy(t->rgb + ((size_t)y * t->w + x) * 3, rgb, 3);
}

static bool draw_boxes(preview_tile *t, const stk_tensor_desc *d) {
  if (d->ndim != 2 || d->shape[1] != 4 ||
      (d->dtype != STK_DTYPE_FLOAT32 && d->dtype != STK_DTYPE_FLOAT64))
    return false;
  bool relative = true;
  for (int64_t i = 0; i < d->shape[0] * 4; i++) {
    double v = value_at(d, (i / 4) * d->strides[0] + (i % 4) * d->strides[1]);
    relative = relative && v >= -0.5 && v <= 1.5;
  }
  for (int64_t i = 0; i < d->shape[0]; i++) {
    double c[4];
    for (int k = 0; k < 4; k++) c[k] = value_at(d, i * d->strides[0] + k * d->strides[1]);
    double sx = relative ? t->w : 1, sy = relative ? t->h : 1;
    int l = (int)floor(c[0] * sx), tp = (int)floor(c[1] * sy);
    int r = (int)ceil(c[2] * sx) - 1, b = (int)ceil(c[3] * sy) - 1;
    uint8_t rgb[3];
    label_colour(i + 1, rgb);
    for (int x = l; x <= r; x++) put(t, x, tp, rgb), put(t, x, b, rgb);
    for (int y = tp; y <= b; y++) put(t, l, y, rgb), put(t, r, y, rgb);
  }
  return true;
}

static bool tint_mask(preview_tile *t, const stk_tensor_desc *d) {
  bool integer = d->dtype == STK_DTYPE_UINT8 || d->dtype == STK_DTYPE_INT16 ||
                 d->dtype == STK_DTYPE_UINT16 || d->dtype == STK_DTYPE_INT32 ||
                 d->dtype == STK_DTYPE_INT64;
  bool shape = (d->ndim == 2 || (d->ndim == 3 && d->shape[2] == 1)) && d->shape[0] == t->h &&
               d->shape[1] == t->w;
  if (!integer || !shape) return false;
  for (int y = 0; y < t->h; y++)
    for (int x = 0; x < t->w; x++) {
      int64_t label = (int64_t)value_at(d, y * d->strides[0] + x * d->strides[1]);
      if (label == 0) continue;
      uint8_t rgb[3], *px = t->rgb + ((size_t)y * t->w + x) * 3;
      label_colour(label, rgb);
      for (int k = 0; k < 3; k++) px[k] = (uint8_t)((px[k] + rgb[k] + 1) / 2);
    }
  return true;
}

void preview_overlay(preview_tile *t, const stk_tensor_desc *d) {
  if (!tint_mask(t, d)) draw_boxes(t, d);
}
