/* Several pipelines in one process, each iterated on its own thread (issue 27: two GPU
 * pipelines of one process share the GPU and nvJPEG's hardware decoder; stoker lets one
 * of them call the engines at a time). Takes `stoker bench`'s options plus --pipelines N
 * and prints one line per pipeline: batches, images/s, or the error that stopped it.
 *
 * usage: multi_pipeline --pipelines N --data DIR --pipeline PRESET|FILE [--device gpu]
 *                       [--batch-size N] [--threads N] [--epochs N] [--timeout SECONDS]
 * exit status: 0 when every pipeline ran all its batches, 1 otherwise. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../tools/cli.h"

typedef struct {
  cli_options o;
  int index;
  int64_t batches, images;
  double seconds;
  char error[1024];
} run_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *run_one(void *arg) {
  run_state *r = arg;
  stk_pipeline *p = cli_make_pipeline(&r->o);
  if (!p || stk_pipeline_build(p) != STK_OK) {
    snprintf(r->error, sizeof r->error, "build: %s", stk_last_error());
    stk_pipeline_destroy(p);
    return NULL;
  }
  stk_reader_meta meta;
  int64_t per_epoch = 1;
  if (stk_pipeline_reader_meta(p, "Reader", &meta) == STK_OK)
    per_epoch = (meta.epoch_size_padded + r->o.batch_size - 1) / r->o.batch_size;
  int64_t total = per_epoch * (r->o.epochs > 0 ? r->o.epochs : 1);
  double t0 = now_s();
  for (int64_t b = 0; b < total; b++) {
    stk_batch *batch;
    if (stk_pipeline_run(p, &batch) != STK_OK) {
      snprintf(r->error, sizeof r->error, "batch %lld: %s", (long long)b, stk_last_error());
      break;
    }
    r->images += (int64_t)stk_tensor_list_num_samples(stk_batch_output(batch, 0));
    r->batches++;
    stk_batch_release(batch);
  }
  r->seconds = now_s() - t0;
  stk_pipeline_destroy(p);
  return NULL;
}

int main(int argc, char **argv) {
  int n = 2;
  if (argc > 2 && strcmp(argv[1], "--pipelines") == 0) n = atoi(argv[2]);
  if (n < 1 || n > 64) {
    fprintf(stderr, "multi_pipeline: --pipelines N (1..64) first\n");
    return 2;
  }
  cli_options o;
  /* cli_parse reads argv[1] as the command's name in messages: skip "--pipelines N" */
  static char name[] = "multi_pipeline";
  argv[2] = name;
  if (!cli_parse(
          argc - 2, argv + 2, 1,
          "--data --pipeline --device --batch-size --threads --epochs --prefetch --seed --timeout",
          &o))
    return 2;
  run_state *runs = calloc((size_t)n, sizeof *runs);
  pthread_t *threads = calloc((size_t)n, sizeof *threads);
  for (int i = 0; i < n; i++) {
    runs[i].o = o;
    runs[i].index = i;
    pthread_create(&threads[i], NULL, run_one, &runs[i]);
  }
  int failed = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(threads[i], NULL);
    if (runs[i].error[0]) {
      printf("pipeline %d: FAILED after %lld batches: %s\n", i, (long long)runs[i].batches,
             runs[i].error);
      failed = 1;
    } else {
      printf("pipeline %d: %lld batches, %.0f images/s\n", i, (long long)runs[i].batches,
             runs[i].seconds > 0 ? runs[i].images / runs[i].seconds : 0.0);
    }
  }
  free(runs);
  free(threads);
  return failed;
}
