/* The GPU video decoders' colour conversion (src/shared/video_yuv.h, the per-pixel code of
 * src/cuda/video.cu) against the CPU video decoder (codecs/video.c, libswscale): videos
 * encoded here with the ffmpeg command (H.264, yuv420p) are decoded by the CPU path to
 * RGB, and to NV12 by ffmpeg (the layout NVDEC writes), which the shared function then
 * converts. The tolerance measured here is the one the GPU tests and the docs state.
 * Skipped without FFmpeg or the ffmpeg command (libx264). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/video.h"
#include "shared/video_yuv.h"

/* Values more than VT_ATOL apart are counted; measured (x264 at crf 18): photographs
 * mean |diff| 1.5, 0.1-1.6 % beyond 6, max 25; colour bars mean 2.4, 6.3 % beyond 6, max
 * 91 (at the bars' sharp chroma edges). The bounds below leave a little room. */
#define VT_ATOL 6

typedef struct {
  int max;
  double mean, beyond;
} vt_diff;

/* FFmpeg in this build, and an ffmpeg command with libx264 and the input `need` asks for
 * (the GPU machine's minimal FFmpeg has neither lavfi nor a PNG decoder). */
static bool vt_have_ffmpeg(const char *need) {
  if (!stk__video_codec_available() || !tu_ffmpeg_lists("-encoders", " libx264 ")) return false;
  if (strcmp(need, "png") == 0) return tu_ffmpeg_lists("-decoders", "^ V\\S* png ");
  return tu_ffmpeg_lists("-formats", " lavfi ");
}

/* Encodes `input_args` (an ffmpeg input) to H.264 at w x h, then writes its NV12 frames. */
static void vt_make(const char *dir, const char *input_args, int w, int h, int frames) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "ffmpeg -hide_banner -loglevel error -y %s -frames:v %d -vf scale=%d:%d,format=yuv420p "
           "-c:v libx264 -crf 18 -g 4 %s/v.mp4",
           input_args, frames, w, h, dir);
  assert_int_equal(tu_sh(cmd), 0);
  snprintf(cmd, sizeof cmd,
           "ffmpeg -hide_banner -loglevel error -y -i %s/v.mp4 -pix_fmt nv12 -f rawvideo %s/v.nv12",
           dir, dir);
  assert_int_equal(tu_sh(cmd), 0);
}

/* Converts every NV12 frame with the shared function and compares with the CPU path. */
static vt_diff vt_compare(const char *dir, int w, int h, int frames) {
  char path[1024];
  snprintf(path, sizeof path, "%s/v.mp4", dir);
  stk__video *v;
  TU_OK(stk__video_open(NULL, 0, path, &v));
  assert_int_equal(stk__video_frames(v), frames);
  int64_t idx[16];
  for (int i = 0; i < frames; i++) idx[i] = i;
  size_t fb = (size_t)w * (size_t)h * 3;
  uint8_t *rgb = malloc(fb * (size_t)frames);
  assert_non_null(rgb);
  TU_OK(stk__video_read(v, idx, frames, 0, 0, rgb));
  stk__video_close(v);
  snprintf(path, sizeof path, "%s/v.nv12", dir);
  size_t size;
  uint8_t *nv12 = tu_read(path, &size);
  size_t frame_bytes = (size_t)w * (size_t)h * 3 / 2;
  assert_int_equal(size, frame_bytes * (size_t)frames);
  vt_diff d = {0, 0.0, 0.0};
  for (int f = 0; f < frames; f++) {
    const uint8_t *base = nv12 + frame_bytes * (size_t)f;
    stk_nv12_view view = {base, base + (size_t)w * (size_t)h, w, w, w, h, 1, 0};
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++) {
        uint8_t px[3];
        stk_nv12_to_rgb(&view, x, y, px);
        const uint8_t *ref = rgb + fb * (size_t)f + ((size_t)y * (size_t)w + (size_t)x) * 3;
        for (int c = 0; c < 3; c++) {
          int e = abs((int)px[c] - (int)ref[c]);
          if (e > d.max) d.max = e;
          d.mean += e;
          d.beyond += e > VT_ATOL;
        }
      }
  }
  double n = (double)fb * frames;
  d.mean /= n;
  d.beyond /= n;
  free(nv12);
  free(rgb);
  return d;
}

static void vt_check(const char *tag, const char *need, const char *input_args, int w, int h,
                     int frames, double max_mean, double max_beyond) {
  if (!vt_have_ffmpeg(need)) {
    print_message("skipped: no FFmpeg build, or an ffmpeg command without libx264 or %s\n", need);
    skip();
  }
  char dir[512];
  tu_tmpdir(dir, sizeof dir, tag);
  vt_make(dir, input_args, w, h, frames);
  vt_diff d = vt_compare(dir, w, h, frames);
  print_message("%s: max |diff| %d, mean %.3f, share beyond %d: %.5f\n", tag, d.max, d.mean,
                VT_ATOL, d.beyond);
  assert_true(d.mean <= max_mean);
  assert_true(d.beyond <= max_beyond);
}

/* A photograph: natural content. */
static void test_nv12_matches_cpu_on_a_photo(void **state) {
  (void)state;
  char photo[1024], in[1200];
  tu_path(photo, sizeof photo, "data/photos/astronaut.png");
  snprintf(in, sizeof in, "-loop 1 -i %s", photo);
  vt_check("nv12_photo", "png", in, 320, 240, 3, 1.8, 0.02);
}

/* ffmpeg's synthetic test pattern: saturated colour bars and sharp edges, the worst case
 * for chroma upsampling. */
static void test_nv12_matches_cpu_on_colour_bars(void **state) {
  (void)state;
  vt_check("nv12_bars", "lavfi", "-f lavfi -i testsrc2=size=176x144:rate=10", 176, 144, 4, 2.8,
           0.075);
}

/* Another photograph at another size (x264's 4:2:0 needs even sizes). */
static void test_nv12_matches_cpu_on_a_second_photo(void **state) {
  (void)state;
  char photo[1024], in[1200];
  tu_path(photo, sizeof photo, "data/photos/chelsea.png");
  snprintf(in, sizeof in, "-loop 1 -i %s", photo);
  vt_check("nv12_photo2", "png", in, 226, 150, 2, 1.8, 0.02);
}

/* Hand-computed values: BT.601 limited range, flat chroma. */
static void test_nv12_hand_values(void **state) {
  (void)state;
  uint8_t luma[4] = {16, 235, 126, 126}, chroma[2] = {128, 128};
  stk_nv12_view v = {luma, chroma, 2, 2, 2, 2, 1, 0};
  uint8_t px[3];
  stk_nv12_to_rgb(&v, 0, 0, px); /* black */
  assert_int_equal(px[0], 0), assert_int_equal(px[1], 0), assert_int_equal(px[2], 0);
  stk_nv12_to_rgb(&v, 1, 0, px); /* white */
  assert_int_equal(px[0], 255), assert_int_equal(px[1], 255), assert_int_equal(px[2], 255);
  stk_nv12_to_rgb(&v, 0, 1, px); /* (126 - 16) * 255 / 219 = 128.08 */
  assert_int_equal(px[0], 128), assert_int_equal(px[1], 128), assert_int_equal(px[2], 128);
  /* Cr = 240: R = Y + 1.402 * 112 * 255 / 224 = 128.08 + 178.8 -> 255; G = 128.08 - 0.714 *
   * 127.5 = 37.05 -> 37 */
  chroma[1] = 240;
  stk_nv12_to_rgb(&v, 0, 1, px);
  assert_int_equal(px[0], 255), assert_int_equal(px[1], 37), assert_int_equal(px[2], 128);
  /* full range: Y as is */
  chroma[1] = 128;
  v.full_range = 1;
  stk_nv12_to_rgb(&v, 0, 1, px);
  assert_int_equal(px[0], 126), assert_int_equal(px[1], 126), assert_int_equal(px[2], 126);
  /* 16-bit samples (P016): 0x7e00 = 126 * 256 -> 125.5 in 8-bit units */
  uint16_t l16[4] = {0x7e7e, 0x7e7e, 0x7e7e, 0x7e7e}, c16[2] = {0x8080, 0x8080};
  stk_nv12_view w = {(uint8_t *)l16, (uint8_t *)c16, 4, 4, 2, 2, 2, 1};
  stk_nv12_to_rgb(&w, 1, 1, px);
  assert_int_equal(px[0], 126), assert_int_equal(px[1], 126), assert_int_equal(px[2], 126);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nv12_hand_values),
      cmocka_unit_test(test_nv12_matches_cpu_on_a_photo),
      cmocka_unit_test(test_nv12_matches_cpu_on_colour_bars),
      cmocka_unit_test(test_nv12_matches_cpu_on_a_second_photo),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
