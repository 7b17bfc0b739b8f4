#include "testutil.h"

#include "codecs/codecs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

const char *tu_path(char *buf, size_t cap, const char *relative) {
  snprintf(buf, cap, "%s/%s", STK_SOURCE_DIR, relative);
  return buf;
}

uint8_t *tu_read(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *d = malloc((size_t)n + 1);
  assert_non_null(d);
  if (fread(d, 1, (size_t)n, f) != (size_t)n) fail_msg("short read %s", path);
  fclose(f);
  *size = (size_t)n;
  return d;
}

void tu_write(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) fail_msg("cannot create %s", path);
  if (size && fwrite(data, 1, size, f) != size) fail_msg("short write %s", path);
  fclose(f);
}

const char *tu_tmpdir(char *buf, size_t cap, const char *tag) {
  static int counter = 0;
  snprintf(buf, cap, "tmp-%s-%d-%d", tag, (int)getpid(), counter++);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", buf);
  if (system(cmd) != 0) fail_msg("cannot clean %s", buf);
  if (mkdir(buf, 0755) != 0) fail_msg("cannot create %s", buf);
  return buf;
}

uint32_t tu_rand(uint32_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 17;
  *state ^= *state << 5;
  return *state;
}

int tu_rand_in(uint32_t *state, int lo, int hi) {
  return lo + (int)(tu_rand(state) % (uint32_t)(hi - lo + 1));
}

uint8_t *tu_jpeg_encode(const uint8_t *px, int w, int h, int c, int subsamp, int quality, int flags,
                        size_t *n) {
  tjhandle tj = tjInitCompress();
  unsigned char *out = NULL;
  unsigned long size = 0;
  int pf = c == 1 ? TJPF_GRAY : c == 4 ? TJPF_CMYK : TJPF_RGB;
  if (!tj || tjCompress2(tj, px, w, 0, h, pf, &out, &size, subsamp, quality, flags))
    fail_msg("tjCompress2: %s", tjGetErrorStr2(tj));
  tjDestroy(tj);
  uint8_t *copy = malloc(size);
  if (!copy) fail_msg("no memory for %lu bytes", size);
  memcpy(copy, out, size);
  tjFree(out);
  *n = size;
  return copy;
}

bool tu_ffmpeg_lists(const char *list, const char *pattern) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ffmpeg -hide_banner %s 2>/dev/null | grep -Eq '%s'", list, pattern);
  return system(cmd) == 0;
}

int tu_sh(const char *cmd) {
  int rc = system(cmd);
  if (rc != 0) print_error("command failed (%d): %s\n", rc, cmd);
  return rc;
}

tu_image tu_load_photo(const char *relative) {
  char path[1024];
  size_t n;
  uint8_t *data = tu_read(tu_path(path, sizeof path, relative), &n);
  stk__decode_opts opts = {0};
  stk__decoded d;
  TU_OK(stk__image_decode(data, n, relative, &opts, stk__image_alloc_malloc, NULL, &d));
  free(data);
  return (tu_image){d.data, d.h, d.w, d.c};
}

void tu_corrupt_scan(uint8_t *b, size_t size) {
  size_t sos = 0;
  for (size_t i = 2; i + 3 < size && !sos; i++)
    if (b[i] == 0xFF && b[i + 1] == 0xDA) sos = i;
  if (!sos) fail_msg("no scan (SOS marker) in the JPEG");
  size_t scan = sos + 2 + ((size_t)b[sos + 2] << 8 | b[sos + 3]);
  size_t mid = scan + (size - 2 - scan) / 2;
  b[mid] = 0xFF, b[mid + 1] = 0xC4;
}

uint8_t *tu_gradient_noise(int w, int h, int c, int noise, uint32_t *rng) {
  uint8_t *p = malloc((size_t)w * h * c);
  for (int y = 0; p && y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < c; k++)
        p[((size_t)y * w + x) * c + k] =
            (uint8_t)((x * 255 / w + y * 97 / h + k * 60 + (int)(tu_rand(rng) % (uint32_t)noise)) &
                      255);
  return p;
}
