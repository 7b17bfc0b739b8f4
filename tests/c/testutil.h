/* Helpers shared by the C tests (cmocka). */
#ifndef STK_TESTUTIL_H
#define STK_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs the headers above first. */
#include <cmocka.h>

#include "stoker/stoker.h"

/* Absolute path of a file in the repository (static buffer per call site is not safe:
 * copies into `buf`). */
const char *tu_path(char *buf, size_t cap, const char *relative);
/* Reads a whole file; the test fails if it cannot. Free with free(). */
uint8_t *tu_read(const char *path, size_t *size);
/* Writes bytes to a file; the test fails if it cannot. */
void tu_write(const char *path, const void *data, size_t size);
/* A fresh empty directory under the build tree, unique per call. */
const char *tu_tmpdir(char *buf, size_t cap, const char *tag);

/* A w x h x c image of smooth gradients plus noise of up to `noise` levels (drawn from
 * *rng): non-trivial AC coefficients for codec tests. malloc'd. */
uint8_t *tu_gradient_noise(int w, int h, int c, int noise, uint32_t *rng);
/* A xorshift32 generator for test data (*state must not be 0), and a value in lo..hi. */
uint32_t tu_rand(uint32_t *state);
int tu_rand_in(uint32_t *state, int lo, int hi);
/* The JPEG bytes of an image (c: 1 gray, 3 RGB, 4 CMYK) through TurboJPEG, in *n bytes;
 * the test fails if it cannot. Free with free(). */
uint8_t *tu_jpeg_encode(const uint8_t *px, int w, int h, int c, int subsamp, int quality, int flags,
                        size_t *n);

/* Whether the ffmpeg command's listing `list` (e.g. "-encoders") has a line matching the
 * extended regular expression `pattern`. */
bool tu_ffmpeg_lists(const char *list, const char *pattern);
/* Runs a shell command, printing it when it fails; returns its status. */
int tu_sh(const char *cmd);

/* A decoded photograph (RGB HWC uint8 unless the file is gray); free p with free(). */
typedef struct {
  uint8_t *p;
  int h, w, c;
} tu_image;
/* Decodes a repository image (e.g. "data/photos/rocket.jpg") with stoker's decoder. */
tu_image tu_load_photo(const char *relative);

/* Writes a DHT marker into the middle of a JPEG's scan (the header still parses; the
 * decoders fail on the data). The test fails if the bytes have no scan. */
void tu_corrupt_scan(uint8_t *jpeg, size_t size);

/* Asserts a status is STK_OK, printing the error message if not. */
#define TU_OK(expr)                                                              \
  do {                                                                           \
    stk_status tu_st = (expr);                                                   \
    if (tu_st != STK_OK)                                                         \
      fail_msg("%s -> %s: %s", #expr, stk_status_name(tu_st), stk_last_error()); \
  } while (0)

#endif
