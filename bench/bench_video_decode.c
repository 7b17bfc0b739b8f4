/* Where a video read's time goes, below the pipeline: the codec layer (codecs/video.c)
 * reading sequences of frames from files on T threads, on the CPU (libavcodec + swscale
 * to RGB) or with NVDEC (FFmpeg's CUDA hwaccel, frames copied into device memory).
 *
 * usage: bench_video_decode cpu|gpu THREADS READS FRAMES FILE...
 *   Each thread makes READS reads of FRAMES consecutive frames, starting at a frame that
 *   moves through the files (thread t, read r: file (t + r) % n, first frame r * FRAMES
 *   modulo what fits), opening the file for each read as the readers do.
 * Prints one JSON line: frames/s over the whole run, and per read the mean wall time of
 * the open (demuxing the file to index it) and of the read, and for gpu the decoders the
 * pool opened. Reads of FRAMES=1 against FRAMES=16 split a read's fixed cost from its
 * per-frame cost. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codecs/video.h"

typedef struct {
  int id, reads, frames, nfiles;
  char **files;
  stk__video_hw *hw; /* NULL: CPU */
  double open_s, read_s;
  int64_t decoded;
  char error[512];
} worker;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One read: opens file, reads `count` frames from `first`, drops them. */
static stk_status one_read(worker *w, const char *file, int64_t first_hint, uint8_t **rgb,
                           size_t *rgb_cap) {
  double t0 = now();
  stk__video *v;
  STK_TRY(stk__video_open(NULL, 0, file, &v));
  double t1 = now();
  int64_t n = stk__video_frames(v), count = w->frames < n ? w->frames : n;
  int64_t first = n > count ? first_hint % (n - count + 1) : 0, idx[256];
  for (int64_t i = 0; i < count; i++) idx[i] = first + i;
  stk_status st;
  if (w->hw) {
    stk__video_gpu_frame f[256];
    st = stk__video_read_gpu(v, w->hw, idx, count, f);
    for (int64_t i = 0; st == STK_OK && i < count; i++) stk__video_gpu_release(&f[i]);
  } else {
    size_t need = (size_t)count * (size_t)stk__video_width(v) * (size_t)stk__video_height(v) * 3;
    if (need > *rgb_cap) {
      free(*rgb);
      *rgb = malloc(need);
      *rgb_cap = *rgb ? need : 0;
    }
    st = *rgb ? stk__video_read(v, idx, count, 0, 0, *rgb)
              : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory");
  }
  stk__video_close(v);
  w->open_s += t1 - t0;
  w->read_s += now() - t1;
  if (st == STK_OK) w->decoded += count;
  return st;
}

static void *run(void *arg) {
  worker *w = arg;
  uint8_t *rgb = NULL;
  size_t cap = 0;
  for (int r = 0; r < w->reads; r++) {
    const char *file = w->files[(w->id + r) % w->nfiles];
    if (one_read(w, file, (int64_t)r * w->frames, &rgb, &cap) != STK_OK) {
      snprintf(w->error, sizeof w->error, "%s: %s", file, stk_last_error());
      break;
    }
  }
  free(rgb);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 6 || (strcmp(argv[1], "cpu") && strcmp(argv[1], "gpu"))) {
    fprintf(stderr, "usage: %s cpu|gpu THREADS READS FRAMES FILE...\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[2]), reads = atoi(argv[3]), frames = atoi(argv[4]);
  if (threads < 1 || threads > 256 || reads < 1 || frames < 1 || frames > 256) {
    fprintf(stderr, "THREADS 1-256, READS >= 1, FRAMES 1-256\n");
    return 2;
  }
  stk__video_hw *hw = NULL;
  if (argv[1][0] == 'g' && stk__video_hw_open(0, false, &hw) != STK_OK) {
    fprintf(stderr, "cannot open NVDEC: %s\n", stk_last_error());
    return 1;
  }
  worker *w = calloc((size_t)threads, sizeof *w);
  pthread_t *t = calloc((size_t)threads, sizeof *t);
  if (!w || !t) return 1;
  double t0 = now();
  for (int i = 0; i < threads; i++) {
    w[i] = (worker){i, reads, frames, argc - 5, argv + 5, hw};
    pthread_create(&t[i], NULL, run, &w[i]);
  }
  double open_s = 0, read_s = 0;
  int64_t decoded = 0;
  int failed = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    open_s += w[i].open_s, read_s += w[i].read_s, decoded += w[i].decoded;
    if (w[i].error[0]) fprintf(stderr, "thread %d: %s\n", i, w[i].error), failed = 1;
  }
  double wall = now() - t0, nreads = (double)threads * reads;
  printf(
      "{\"device\": \"%s\", \"threads\": %d, \"frames_per_read\": %d, \"frames_per_s\": %.1f, "
      "\"open_ms\": %.3f, \"read_ms\": %.3f, \"decoders_opened\": %lld}\n",
      argv[1], threads, frames, (double)decoded / wall, 1e3 * open_s / nreads,
      1e3 * read_s / nreads, hw ? (long long)stk__video_hw_decoders_opened(hw) : 0LL);
  stk__video_hw_close(hw);
  free(w);
  free(t);
  return failed;
}
