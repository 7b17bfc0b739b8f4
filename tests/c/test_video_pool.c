/* The GPU video decoders' pool of decoders (codecs/video.c): a decoder given back after a
 * read and lent to the next must decode exactly what a fresh one decodes, whatever was
 * read before (other files, other frames, backwards), on any thread; a stream of other
 * parameters gets a decoder of its own. Run through the emulation (software decoding into
 * NV12 host memory, the CPU stand-in backend's mode), which goes through the same pool as
 * NVDEC. Videos encoded here with the ffmpeg command (lavfi, libx264); skipped without. */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/video.h"

#define VP_FRAMES 12

typedef struct {
  char a1[600], a2[600], b[600]; /* a1, a2: one size and encoding; b: another size */
} vp_clips;

static bool vp_have_ffmpeg(void) {
  return stk__video_codec_available() && tu_ffmpeg_lists("-encoders", " libx264 ") &&
         tu_ffmpeg_lists("-formats", " lavfi ");
}

static void vp_encode(char *path, size_t cap, const char *dir, const char *name, const char *source,
                      int w, int h) {
  snprintf(path, cap, "%s/%s.mp4", dir, name);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "ffmpeg -hide_banner -loglevel error -y -f lavfi -i %s=size=%dx%d:rate=10 "
           "-frames:v %d -pix_fmt yuv420p -c:v libx264 -crf 20 -g 4 -bf 2 %s",
           source, w, h, VP_FRAMES, path);
  assert_int_equal(tu_sh(cmd), 0);
}

static void vp_make(vp_clips *c) {
  if (!vp_have_ffmpeg()) {
    print_message("skipped: no FFmpeg build, or an ffmpeg command without libx264 or lavfi\n");
    skip();
  }
  char dir[512];
  tu_tmpdir(dir, sizeof dir, "video_pool");
  vp_encode(c->a1, sizeof c->a1, dir, "a1", "testsrc2", 176, 144);
  vp_encode(c->a2, sizeof c->a2, dir, "a2", "testsrc", 176, 144);
  vp_encode(c->b, sizeof c->b, dir, "b", "testsrc2", 128, 96);
}

/* Whether two decoded frames have the same planes. */
static bool vp_same(const stk_nv12_view *x, const stk_nv12_view *y) {
  if (x->width != y->width || x->height != y->height) return false;
  size_t cw = (size_t)((x->width + 1) / 2) * 2;
  for (int r = 0; r < x->height; r++)
    if (memcmp(x->luma + r * x->luma_pitch, y->luma + r * y->luma_pitch, (size_t)x->width))
      return false;
  for (int r = 0; r < (x->height + 1) / 2; r++)
    if (memcmp(x->chroma + r * x->chroma_pitch, y->chroma + r * y->chroma_pitch, cw)) return false;
  return true;
}

/* Reads frames idx[0..n) of `path` through hw into out (to release by the caller). */
static stk_status vp_read(stk__video_hw *hw, const char *path, const int64_t *idx, int n,
                          stk__video_gpu_frame *out) {
  stk__video *v;
  stk_status st = stk__video_open(NULL, 0, path, &v);
  if (st != STK_OK) return st;
  st = stk__video_read_gpu(v, hw, idx, n, out);
  stk__video_close(v);
  return st;
}

/* Reads through `shared` (its decoders lent again and again) and through a handle of its
 * own (a fresh decoder); the frames must be the same. */
static void vp_check_read(stk__video_hw *shared, const char *path, const int64_t *idx, int n) {
  stk__video_gpu_frame got[8], want[8];
  stk__video_hw *fresh;
  TU_OK(stk__video_hw_open(0, true, &fresh));
  TU_OK(vp_read(shared, path, idx, n, got));
  TU_OK(vp_read(fresh, path, idx, n, want));
  for (int i = 0; i < n; i++) {
    if (!vp_same(&got[i].view, &want[i].view))
      fail_msg("%s: frame %lld differs after the decoder was reused", path, (long long)idx[i]);
    stk__video_gpu_release(&got[i]);
    stk__video_gpu_release(&want[i]);
  }
  assert_int_equal(stk__video_hw_decoders_opened(fresh), 1);
  stk__video_hw_close(fresh);
}

/* One decoder serves every read of streams with the same parameters, in any order. */
static void test_reused_decoder_decodes_as_a_fresh_one(void **state) {
  (void)state;
  vp_clips c;
  vp_make(&c);
  stk__video_hw *hw;
  TU_OK(stk__video_hw_open(0, true, &hw));
  const int64_t mid[] = {5, 6, 7, 8}, late[] = {11, 9}, back[] = {2, 0, 1}, rep[] = {3, 3, 10};
  vp_check_read(hw, c.a1, mid, 4);
  vp_check_read(hw, c.a2, back, 3); /* another file: no state of a1 may leak in */
  vp_check_read(hw, c.a1, late, 2);
  vp_check_read(hw, c.a1, back, 3); /* backwards after the end */
  vp_check_read(hw, c.a2, rep, 3);
  assert_int_equal(stk__video_hw_decoders_opened(hw), 1);
  vp_check_read(hw, c.b, mid, 4); /* another size: a decoder of its own */
  vp_check_read(hw, c.a1, mid, 4);
  vp_check_read(hw, c.b, back, 3);
  assert_int_equal(stk__video_hw_decoders_opened(hw), 2);
  stk__video_hw_close(hw);
}

typedef struct {
  stk__video_hw *hw;
  const vp_clips *c;
  int seed, mismatches;
  stk_status st;
  char why[256]; /* the failure's message (errors are per thread) */
} vp_worker;

/* Many reads of random frames of random clips, each compared with a fresh decoder's. */
static void *vp_work(void *arg) {
  vp_worker *w = arg;
  stk__video_hw *fresh = NULL;
  w->st = stk__video_hw_open(0, true, &fresh);
  unsigned rng = (unsigned)w->seed;
  for (int k = 0; k < 12 && w->st == STK_OK; k++) {
    rng = rng * 1103515245u + 12345u;
    const char *path = (rng >> 8) % 3 == 0 ? w->c->a1 : (rng >> 8) % 3 == 1 ? w->c->a2 : w->c->b;
    int64_t idx[3];
    for (int i = 0; i < 3; i++) rng = rng * 1103515245u + 12345u, idx[i] = (rng >> 8) % VP_FRAMES;
    stk__video_gpu_frame got[3], want[3];
    w->st = vp_read(w->hw, path, idx, 3, got);
    if (w->st != STK_OK) break;
    w->st = vp_read(fresh, path, idx, 3, want);
    for (int i = 0; i < 3; i++) {
      if (w->st == STK_OK) w->mismatches += !vp_same(&got[i].view, &want[i].view);
      stk__video_gpu_release(&got[i]);
      stk__video_gpu_release(&want[i]);
    }
  }
  if (w->st != STK_OK) snprintf(w->why, sizeof w->why, "%s", stk_last_error());
  stk__video_hw_close(fresh);
  return NULL;
}

/* Threads lending from one pool at once: each read gets a decoder of its own (never one in
 * use), and no more are opened than reads ran at once. */
static void test_pool_shared_by_threads(void **state) {
  (void)state;
  vp_clips c;
  vp_make(&c);
  stk__video_hw *hw;
  TU_OK(stk__video_hw_open(0, true, &hw));
  enum { THREADS = 4 };
  pthread_t t[THREADS];
  vp_worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (vp_worker){.hw = hw, .c = &c, .seed = 17 + i};
    assert_int_equal(pthread_create(&t[i], NULL, vp_work, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    if (w[i].st != STK_OK) fail_msg("thread %d: %s", i, w[i].why);
    assert_int_equal(w[i].mismatches, 0);
  }
  /* two kinds of stream (a1/a2, b), at most one decoder per thread for each */
  int64_t opened = stk__video_hw_decoders_opened(hw);
  print_message("decoders opened for %d threads x 12 reads: %lld\n", THREADS, (long long)opened);
  assert_true(opened >= 2 && opened <= 2 * THREADS);
  stk__video_hw_close(hw);
}

/* A clip cut with an edit list (stream copy from 0.45 s): its first packets, from the key
 * frame before the cut, are decoded but never shown (not frames: count_frames). Reads of
 * its first frames, forwards and backwards, through a lent decoder must give a fresh
 * decoder's frames, and the pool must not open another. */
static void test_edit_list_cut_through_a_lent_decoder(void **state) {
  (void)state;
  vp_clips c;
  vp_make(&c);
  char cut[700], cmd[2048];
  snprintf(cut, sizeof cut, "%s.cut.mp4", c.a1);
  snprintf(cmd, sizeof cmd, "ffmpeg -hide_banner -loglevel error -y -ss 0.45 -i %s -c copy %s",
           c.a1, cut);
  assert_int_equal(tu_sh(cmd), 0);
  stk__video_hw *hw;
  TU_OK(stk__video_hw_open(0, true, &hw));
  const int64_t first[] = {0, 1, 2}, back[] = {2, 0};
  vp_check_read(hw, cut, first, 3);
  vp_check_read(hw, cut, back, 2);
  assert_int_equal(stk__video_hw_decoders_opened(hw), 1);
  stk__video_hw_close(hw);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reused_decoder_decodes_as_a_fresh_one),
      cmocka_unit_test(test_pool_shared_by_threads),
      cmocka_unit_test(test_edit_list_cut_through_a_lent_decoder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
