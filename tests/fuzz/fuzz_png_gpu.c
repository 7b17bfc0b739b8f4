/* The GPU PNG decoder's whole chain run on the CPU (src/ops/png_plan.h: planning,
 * inflate, unfilter, expansion), differentially against the CPU decoder: whenever the
 * device path decodes a file, libspng must decode it too, to the same pixels, for the
 * colour and region the input's last bytes pick. Every chunk's CRC is recomputed first
 * (unless the last byte says not to), so that mutations reach the inflater and the pixel
 * code instead of stopping at a CRC mismatch. */
#include <stdlib.h>
#include <zlib.h>

#include "codecs/codecs.h"
#include "ops/png_plan.h"
#include "fuzz_util.h"

#define FUZZ_MAX_PIXELS ((int64_t)1 << 22)

static void check(const uint8_t *data, size_t size, int color, int x, int y, int w, int h) {
  int c = color == STK_PNG_GRAY ? 1 : 3;
  uint8_t *dev = malloc((size_t)w * h * c);
  int detail;
  if (dev && stk__png_decode_emulated(data, size, color, x, y, w, h, dev, &detail) == STK__PNG_OK) {
    stk__decode_opts o;
    memset(&o, 0, sizeof o);
    o.color = (stk__color)color;
    o.ignore_orientation = true;
    o.roi_x = x, o.roi_y = y, o.roi_w = w, o.roi_h = h;
    stk__decoded out;
    memset(&out, 0, sizeof out);
    if (stk__image_decode(data, size, "fuzz", &o, stk__image_alloc_malloc, NULL, &out) != STK_OK ||
        memcmp(out.data, dev, (size_t)w * h * c) != 0)
      abort();
    free(out.data);
  }
  free(dev);
}

static void fix_crcs(uint8_t *d, size_t n) {
  for (size_t pos = 8; pos <= n && n - pos >= 12;) {
    uint32_t len = (uint32_t)d[pos] << 24 | d[pos + 1] << 16 | d[pos + 2] << 8 | d[pos + 3];
    if (len > n - pos - 12) return;
    uint32_t crc = (uint32_t)crc32(0, d + pos + 4, len + 4);
    d[pos + 8 + len] = (uint8_t)(crc >> 24), d[pos + 9 + len] = (uint8_t)(crc >> 16);
    d[pos + 10 + len] = (uint8_t)(crc >> 8), d[pos + 11 + len] = (uint8_t)crc;
    pos += 12 + (size_t)len;
  }
}

static void run(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8 || memcmp(data, "\x89PNG\r\n\x1a\n", 8) != 0) return 0;
  uint8_t *copy = malloc(size);
  if (!copy) return 0;
  memcpy(copy, data, size);
  if (!(data[size - 1] & 0x80)) fix_crcs(copy, size);
  run(copy, size);
  free(copy);
  return 0;
}

static void run(const uint8_t *data, size_t size) {
  stk__image_info info;
  if (stk__image_peek(data, size, "fuzz", &info) != STK_OK) return;
  if ((int64_t)info.width * info.height > FUZZ_MAX_PIXELS) return;
  uint8_t k0 = data[size - 1], k1 = data[size - 2];
  int W = info.width, H = info.height;
  check(data, size, k0 % 3, 0, 0, W, H);
  int x = (int)((int64_t)W * (k1 & 15) / 16), y = (int)((int64_t)H * (k1 >> 4) / 16);
  check(data, size, (k0 / 3) % 3, x, y, W - x, H - y);
}
