/* Audio (libsndfile) and video (FFmpeg) decoding from memory through stoker's wrappers:
 * their virtual I/O callbacks, limits and frame bookkeeping. Decodes at most a few
 * frames of a video (from the middle, then the start, scaled), and the audio resampled
 * to a second rate. */
#include <stdlib.h>

#include "codecs/audio.h"
#include "codecs/video.h"
#include "fuzz_util.h"
#include "ops/audio_resample.h"

static void audio(const uint8_t *data, size_t size) {
  stk__audio a;
  if (stk__audio_decode(data, size, 1 << 22, &a) != STK_OK) return;
  int64_t out_n = stk__audio_resample_length(a.frames, a.rate, 8000);
  if (out_n > 0 && out_n < (1 << 22) / a.channels) {
    double *y = malloc(sizeof(double) * (size_t)(out_n * a.channels));
    if (y) stk__audio_resample(a.data, a.frames, a.channels, a.rate, 8000, 10, y, out_n);
    free(y);
  }
  stk__audio_free(&a);
}

static void video(const uint8_t *data, size_t size) {
  stk__video *v;
  if (stk__video_open(data, size, NULL, &v) != STK_OK) return;
  int64_t n = stk__video_frames(v), w = stk__video_width(v), h = stk__video_height(v);
  if (n > 0 && w * h <= (1 << 20)) {
    /* mid-file first (the seeking path), then the first frame (from the start) */
    int64_t late[2] = {n - 1, n / 2}, first = 0;
    uint8_t *dst = malloc((size_t)(2 * w * h * 3));
    if (dst && stk__video_read(v, late, 2, 0, 0, dst) == STK_OK)
      stk__video_read(v, &first, 1, 8, 8, dst);
    free(dst);
  }
  stk__video_close(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  audio(data, size);
  video(data, size);
  return 0;
}
