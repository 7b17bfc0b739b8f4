/* The image decode driver shared by fuzz_jpeg.c and fuzz_png.c: header peek, a whole
 * decode and a region-of-interest decode whose window, colour, orientation handling and
 * DCT scaling come from the input's last bytes (so the fuzzer explores them too). */
#ifndef STK_FUZZ_IMAGE_COMMON_H
#define STK_FUZZ_IMAGE_COMMON_H

#include <stdlib.h>

#include "codecs/codecs.h"
#include "fuzz_util.h"

/* Small enough that no input makes the target run out of memory or time. */
#define FUZZ_MAX_PIXELS ((int64_t)1 << 22)

static void fuzz_decode(const uint8_t *data, size_t size, const stk__decode_opts *o) {
  stk__decoded out;
  stk__image_decode(data, size, "fuzz", o, stk__image_alloc_malloc, NULL, &out);
  free(out.data);
}

static void fuzz_image(const uint8_t *data, size_t size) {
  stk__image_info info;
  if (stk__image_peek(data, size, "fuzz", &info) != STK_OK) return;
  uint8_t k0 = size > 0 ? data[size - 1] : 0, k1 = size > 1 ? data[size - 2] : 0,
          k2 = size > 2 ? data[size - 3] : 0;
  stk__decode_opts o;
  memset(&o, 0, sizeof o);
  o.max_pixels = FUZZ_MAX_PIXELS;
  o.color = (stk__color)(k0 % 3);
  o.ignore_orientation = k0 & 4;
  o.fast_idct = k0 & 8;
  fuzz_decode(data, size, &o);
  /* A window: k1 and k2 pick its corner and size as fractions of the oriented image. */
  int W = o.ignore_orientation ? info.width : info.oriented_width;
  int H = o.ignore_orientation ? info.height : info.oriented_height;
  if (W < 1 || H < 1) return;
  o.roi_x = (int)((int64_t)W * (k1 & 15) / 16);
  o.roi_y = (int)((int64_t)H * (k1 >> 4) / 16);
  o.roi_w = 1 + (int)((int64_t)(W - o.roi_x - 1) * (k2 & 15) / 15);
  o.roi_h = 1 + (int)((int64_t)(H - o.roi_y - 1) * (k2 >> 4) / 15);
  if (k0 & 16) {
    o.min_w = o.roi_w / 8 + 1;
    o.min_h = o.roi_h / 8 + 1;
  }
  fuzz_decode(data, size, &o);
}

#endif
