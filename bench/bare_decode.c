/* The decode ceiling: full-image libjpeg-turbo decoding (TurboJPEG API, default
 * accurate IDCT, RGB output) of every JPEG under a folder, on N threads, with the files
 * already in memory. No pipeline, no copies, no augmentation: what a decode-bound loader
 * can at best reach on these cores.
 *
 * usage: bare_decode DIR THREADS [PASSES]   -> prints images/s (and JSON on the last line) */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

typedef struct {
  unsigned char *data;
  unsigned long size;
} blob;

static blob *blobs;
static size_t num_blobs, cap_blobs;
static atomic_size_t next_index;
static size_t total_jobs;
static atomic_int failures;

static int collect(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
  size_t n = strlen(path);
  if (type != FTW_F || n < 4 ||
      (strcmp(path + n - 4, ".jpg") != 0 && strcmp(path + n - 5, ".jpeg") != 0))
    return 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  if (num_blobs == cap_blobs) {
    cap_blobs = cap_blobs ? cap_blobs * 2 : 1024;
    blobs = realloc(blobs, cap_blobs * sizeof *blobs);
  }
  blob *b = &blobs[num_blobs];
  b->size = (unsigned long)sb->st_size;
  b->data = malloc(b->size);
  if (fread(b->data, 1, b->size, f) == b->size)
    num_blobs++;
  else
    free(b->data);
  fclose(f);
  return 0;
}

static void *worker(void *arg) {
  tjhandle tj = tjInitDecompress();
  unsigned char *out = NULL;
  size_t out_cap = 0;
  for (;;) {
    size_t i = atomic_fetch_add(&next_index, 1);
    if (i >= total_jobs) break;
    blob *b = &blobs[i % num_blobs];
    int w, h, sub, cs;
    if (tjDecompressHeader3(tj, b->data, b->size, &w, &h, &sub, &cs) != 0) {
      atomic_fetch_add(&failures, 1);
      continue;
    }
    size_t need = (size_t)w * h * 3;
    if (need > out_cap) {
      free(out);
      out = malloc(need);
      out_cap = need;
    }
    if (tjDecompress2(tj, b->data, b->size, out, w, 0, h, TJPF_RGB, 0) != 0)
      atomic_fetch_add(&failures, 1);
  }
  free(out);
  tjDestroy(tj);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bare_decode DIR THREADS [PASSES]\n");
    return 2;
  }
  int threads = atoi(argv[2]), passes = argc > 3 ? atoi(argv[3]) : 2;
  if (nftw(argv[1], collect, 32, FTW_PHYS) != 0 || num_blobs == 0) {
    fprintf(stderr, "bare_decode: no JPEGs under %s\n", argv[1]);
    return 1;
  }
  total_jobs = num_blobs * (size_t)passes;
  pthread_t *t = calloc((size_t)threads, sizeof *t);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
  printf(
      "bare libjpeg-turbo decode: %zu images x %d passes on %d threads: %.1f images/s (%d "
      "failures)\n",
      num_blobs, passes, threads, (double)total_jobs / s, atomic_load(&failures));
  printf("{\"images_per_s\": %.2f, \"images\": %zu, \"seconds\": %.4f, \"threads\": %d}\n",
         (double)total_jobs / s, total_jobs, s, threads);
  return 0;
}
