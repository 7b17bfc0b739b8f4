/* EXIF orientation: the one tag of the Exif block that changes pixels. The block is a
 * TIFF structure: byte order mark, 42, the offset of IFD0, then 12-byte entries. Every
 * offset is checked against the block size, so hostile blocks give orientation 1. */
#include <string.h>

#include "codecs.h"

#define TIFF_TAG_ORIENTATION 0x0112
#define TIFF_TYPE_BYTE       1
#define TIFF_TYPE_SHORT      3
#define TIFF_TYPE_LONG       4

static unsigned read16(const uint8_t *p, bool le) {
  return le ? (unsigned)p[0] | (unsigned)p[1] << 8 : (unsigned)p[0] << 8 | (unsigned)p[1];
}

static uint32_t read32(const uint8_t *p, bool le) {
  return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
            : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The value of an orientation entry (value stored inline: count 1 fits 4 bytes). */
static int entry_value(const uint8_t *e, bool le) {
  unsigned type = read16(e + 2, le);
  uint32_t count = read32(e + 4, le);
  if (count < 1) return 1;
  unsigned v;
  switch (type) {
    case TIFF_TYPE_SHORT:
      v = read16(e + 8, le);
      break;
    case TIFF_TYPE_LONG:
      v = (unsigned)read32(e + 8, le);
      break; /* non-standard writers */
    case TIFF_TYPE_BYTE:
      v = e[8];
      break;
    default:
      return 1;
  }
  return v >= 1 && v <= 8 ? (int)v : 1;
}

int stk__exif_orientation(const uint8_t *data, size_t size) {
  if (!data) return 1;
  if (size >= 6 && memcmp(data, "Exif\0\0", 6) == 0) {
    data += 6;
    size -= 6;
  }
  if (size < 8) return 1;
  bool le;
  if (data[0] == 'I' && data[1] == 'I')
    le = true;
  else if (data[0] == 'M' && data[1] == 'M')
    le = false;
  else
    return 1;
  if (read16(data + 2, le) != 42) return 1;
  uint32_t ifd = read32(data + 4, le);
  if (ifd < 8 || ifd > size - 2) return 1;
  unsigned count = read16(data + ifd, le);
  for (unsigned i = 0; i < count; i++) {
    size_t e = (size_t)ifd + 2 + (size_t)12 * i;
    if (e + 12 > size) break;
    if (read16(data + e, le) == TIFF_TAG_ORIENTATION) return entry_value(data + e, le);
  }
  return 1;
}
