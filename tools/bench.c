/* `stoker bench`: throughput of a pipeline with a per-operator breakdown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(int64_t done, int64_t total, double ips) {
  int width = 30, filled = total ? (int)(width * done / total) : width;
  fprintf(stderr, "\r[%.*s%*s] %lld/%lld batches  %.0f images/s", filled,
          "##############################", width - filled, "", (long long)done, (long long)total,
          ips);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

/* Batches to run: --iters, or --epochs (default 1) over the first reader's shard. */
static bool count_batches(stk_pipeline *p, const cli_options *o, int64_t *out) {
  if (o->iters) {
    *out = o->iters;
    return true;
  }
  stk_reader_meta meta;
  if (stk_pipeline_reader_meta(p, NULL, &meta) != STK_OK || meta.epoch_size_padded <= 0) {
    cli_error("--epochs needs a reader with a known epoch size (or use --iters)");
    return false;
  }
  /* a shard's epoch: its own samples, or with padding the largest shard's count */
  int64_t per_shard =
      meta.pad_last_batch ? meta.epoch_size_padded / meta.number_of_shards : meta.shard_size;
  int64_t per_epoch = (per_shard + o->batch_size - 1) / o->batch_size;
  *out = per_epoch * (o->epochs ? o->epochs : 1);
  return true;
}

/* `text` as a JSON string. */
static void print_json_string(const char *text) {
  putchar('"');
  for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
    if (*c == '"' || *c == '\\')
      printf("\\%c", *c);
    else if (*c < 0x20)
      printf("\\u%04x", *c);
    else
      putchar(*c);
  }
  putchar('"');
}

/* The first skipped samples' messages (they name the files): a JSON list, or lines. */
static void print_skipped(stk_pipeline *p, bool json) {
  if (json) putchar('[');
  for (size_t i = 0;; i++) {
    char *message = NULL;
    if (stk_pipeline_skipped_sample(p, i, &message) != STK_OK) break;
    if (json) {
      if (i) printf(", ");
      print_json_string(message);
    } else {
      printf("  skipped: %s\n", message);
    }
    stk_free(message);
  }
  if (json) putchar(']');
}

/* Where the wall time went, per batch: the stages' threads (see stk_stats) and inside the
 * GPU decoders (stk_decoder_diagnostics). */
static void print_stages(const stk_stats *s, const stk_decoder_diagnostics *d, int64_t batches,
                         bool json) {
  const struct {
    const char *name;
    int64_t ns;
  } t[] = {
      {"cpu_stage", s->cpu_stage_ns},           {"producer_blocked", s->producer_blocked_ns},
      {"gpu_stage", s->gpu_stage_ns},           {"gpu_idle", s->gpu_idle_ns},
      {"decode_stage", s->decode_stage_ns},     {"consumer_wait", s->consumer_wait_ns},
      {"decode_parse", d->decode_parse_ns},     {"decode_fence", d->decode_fence_ns},
      {"decode_hw_call", d->decode_hw_call_ns}, {"decode_hybrid_wait", d->decode_hybrid_wait_ns}};
  double per = batches > 0 ? 1e6 * (double)batches : 1.0;
  if (json)
    printf("\"stage_ms_per_batch\": {");
  else
    printf(
        "stages, ms per batch (threads of the pipeline; decode_* inside decode_stage when it is\n"
        "not zero, else inside gpu_stage):\n");
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (json)
      printf("%s\"%s\": %.3f", i ? ", " : "", t[i].name, (double)t[i].ns / per);
    else
      printf("  %-20s %8.3f\n", t[i].name, (double)t[i].ns / per);
  }
  if (json) {
    printf(
        "}, \"decode_hw_share\": %.3f, \"host_decoded\": %lld, \"host_decode_quota\": %lld, "
        "\"own_decoded\": %lld, \"own_share\": %.3f, ",
        d->decode_hw_share, (long long)s->host_decoded, (long long)d->host_decode_quota,
        (long long)d->own_decoded, d->own_share);
  } else {
    printf("  engines' share of the capable JPEGs in the last batch: %.3f\n", d->decode_hw_share);
    printf(
        "  decoded in the CPU stage and uploaded: %lld samples (host_decoded; automatic share now "
        "%lld per batch)\n",
        (long long)s->host_decoded, (long long)d->host_decode_quota);
    printf("  decoded by stoker's own GPU JPEG decoder: %lld samples (last share %.3f)\n",
           (long long)d->own_decoded, d->own_share);
  }
}

static void print_breakdown(stk_pipeline *p, bool json) {
  size_t n = stk_pipeline_num_ops(p);
  int64_t total = 0, t;
  const char *name;
  for (size_t i = 0; i < n; i++)
    if (stk_pipeline_op_time(p, i, &name, &t) == STK_OK) total += t;
  if (json) printf("\"op_share\": {");
  for (size_t i = 0; i < n; i++) {
    stk_pipeline_op_time(p, i, &name, &t);
    double share = total ? (double)t / total : 0.0;
    if (json)
      printf("%s\"%s\": %.4f", i ? ", " : "", name, share);
    else
      printf("  %-40s %5.1f%%  %8.1f ms cpu\n", name, 100 * share, t / 1e6);
  }
  if (json) printf("}");
}

/* Each epoch's rate (every batch timed, warm-up or not): what a sample cache changes
 * between the first epoch and the next ones. */
#define MAX_EPOCHS_SHOWN 64
typedef struct {
  int count;
  int64_t images[MAX_EPOCHS_SHOWN];
  double seconds[MAX_EPOCHS_SHOWN];
} epoch_times;

static void print_epochs(const epoch_times *e, const stk_stats *s, bool json) {
  if (json) printf("\"epochs\": [");
  for (int k = 0; k < e->count; k++) {
    double ips = e->seconds[k] > 0 ? (double)e->images[k] / e->seconds[k] : 0;
    if (json)
      printf("%s{\"images\": %lld, \"seconds\": %.4f, \"images_per_s\": %.2f}", k ? ", " : "",
             (long long)e->images[k], e->seconds[k], ips);
    else
      printf("  epoch %d: %lld images in %.2f s, %.1f images/s\n", k + 1, (long long)e->images[k],
             e->seconds[k], ips);
  }
  if (json)
    printf(
        "], \"cache\": {\"hits\": %lld, \"misses\": %lld, \"bytes\": %lld, \"entries\": "
        "%lld, \"dropped\": %lld}, ",
        (long long)s->cache_hits, (long long)s->cache_misses, (long long)s->cache_bytes,
        (long long)s->cache_entries, (long long)s->cache_dropped);
  else if (s->cache_hits || s->cache_misses)
    printf("  sample cache: %lld hits, %lld misses, %.1f MiB in %lld samples, %lld dropped\n",
           (long long)s->cache_hits, (long long)s->cache_misses, s->cache_bytes / 1048576.0,
           (long long)s->cache_entries, (long long)s->cache_dropped);
}

int cli_bench(int argc, char **argv) {
  cli_options o;
  if (!cli_parse(argc, argv, 2,
                 "--data --pipeline --device --batch-size --threads --epochs --iters --prefetch "
                 "--seed --on-error --warmup "
                 "--timeout --json --cache-bytes --cache-dir",
                 &o))
    return 2;
  stk_pipeline *p = cli_make_pipeline(&o);
  if (!p) return 1;
  /* The settings in effect (a pipeline file's own, unless a flag overrode them). */
  stk_pipeline_get(p, STK_PIPE_BATCH_SIZE, &o.batch_size);
  stk_pipeline_get(p, STK_PIPE_NUM_THREADS, &o.threads);
  int64_t batches = 0;
  if (stk_pipeline_build(p) != STK_OK) {
    cli_error("build");
    stk_pipeline_destroy(p);
    return 1;
  }
  if (!count_batches(p, &o, &batches)) {
    stk_pipeline_destroy(p);
    return 1;
  }
  if (o.warmup < 0) o.warmup = batches > 1; /* by default the first batch, when there are more */
  if (o.warmup >= batches) {
    fprintf(stderr, "stoker: bench: --warmup %lld leaves no batch to time (the run has %lld)\n",
            (long long)o.warmup, (long long)batches);
    stk_pipeline_destroy(p);
    return 2;
  }
  bool bar = !o.json && isatty(2);
  epoch_times ep = {0};
  double t0 = now_s(), t_first = t0,
         t_epoch = t0; /* the clock starts after the warm-up batches, if any */
  int64_t images = 0, timed_images = 0;
  /* With --epochs, the run ends with the last batch of the last epoch (batches is then an
   * upper bound: bad samples skipped can end an epoch a batch early). */
  int64_t epochs_left = o.iters ? -1 : (o.epochs ? o.epochs : 1), ran = 0;
  for (int64_t b = 0; b < batches && epochs_left != 0; b++, ran++) {
    stk_batch *batch;
    if (stk_pipeline_run(p, &batch) != STK_OK) {
      if (bar) fputc('\n', stderr);
      cli_error("run");
      stk_pipeline_destroy(p);
      return 1;
    }
    stk_tensor_list *first = stk_batch_output(batch, 0);
    size_t n = stk_tensor_list_num_samples(first);
    bool ends = stk_batch_ends_epoch(batch);
    if (epochs_left > 0 && ends) epochs_left--;
    bool last = b + 1 == batches || epochs_left == 0;
    /* GPU work is queued, not finished, when a batch is handed out: the last batch is
     * copied to the host so the clock stops only after the device is done with it */
    if (last && n > 0 && stk_tensor_list_device_id(first) >= 0) {
      stk_tensor_list *host = NULL;
      if (stk_tensor_list_to_host(first, &host) != STK_OK) {
        cli_error("copying the last batch to the host");
        stk_batch_release(batch);
        stk_pipeline_destroy(p);
        return 1;
      }
      stk_tensor_list_release(host);
    }
    stk_batch_release(batch);
    images += (int64_t)n;
    if (ep.count < MAX_EPOCHS_SHOWN) ep.images[ep.count] += (int64_t)n;
    if (ends || last) { /* the epoch's clock: batches handed out */
      double t = now_s();
      if (ep.count < MAX_EPOCHS_SHOWN) ep.seconds[ep.count++] = t - t_epoch;
      t_epoch = t;
    }
    /* the first --warmup batches (the host pool growing, its blocks being page-locked,
     * caches and nvJPEG's buffers filling) are not timed */
    if (b + 1 == o.warmup)
      t_first = now_s();
    else if (b >= o.warmup)
      timed_images += (int64_t)n;
    if (bar && (b % 4 == 3 || last))
      progress(b + 1, batches, b >= o.warmup ? timed_images / (now_s() - t_first) : 0);
  }
  batches = ran;
  double t_end = now_s();
  double timed = t_end - t_first;
  double ips = timed > 0 ? timed_images / timed : 0;
  double ms_batch = 1e3 * timed / (double)(batches - o.warmup);
  stk_stats s = {.struct_size = sizeof s};
  stk_decoder_diagnostics d = {.struct_size = sizeof d};
  stk_pipeline_stats(p, &s);
  stk_pipeline_decoder_diagnostics(p, &d);
  if (o.json) {
    printf(
        "{\"images_per_s\": %.2f, \"images\": %lld, \"seconds\": %.4f, \"skipped\": %lld, "
        "\"batches\": %lld, \"batch_size\": %lld, \"threads\": %lld, \"ms_per_batch\": %.3f, "
        "\"warmup_batches\": %lld, \"timed_images\": %lld, \"timed_seconds\": %.6f, "
        "\"host_bytes_peak\": %lld, \"pipeline\": \"%s\", \"device\": \"%s\", ",
        ips, (long long)images, t_end - t0, (long long)s.skipped, (long long)batches,
        (long long)o.batch_size, (long long)o.threads, ms_batch, (long long)o.warmup,
        (long long)timed_images, timed, (long long)s.host_bytes_peak, o.pipeline, o.device);
    print_epochs(&ep, &s, true);
    print_stages(&s, &d, batches, true);
    print_breakdown(p, true);
    printf(", \"skipped_samples\": ");
    print_skipped(p, true);
    printf("}\n");
  } else {
    printf(
        "pipeline %s on %s: %lld images in %.2f s (the first %lld batch%s excluded from the "
        "rate)\n",
        o.pipeline, o.device, (long long)images, t_end - t0, (long long)o.warmup,
        o.warmup == 1 ? "" : "es");
    printf(
        "  %.1f images/s, %.2f ms/batch of %lld, %lld threads, %lld skipped, host pool peak %.1f "
        "MiB\n",
        ips, ms_batch, (long long)o.batch_size, (long long)o.threads, (long long)s.skipped,
        s.host_bytes_peak / 1048576.0);
    if (d.host_blocks_pinned || d.host_pin_failures)
      printf("  host pool blocks page-locked: %lld (%lld left pageable)\n",
             (long long)d.host_blocks_pinned, (long long)d.host_pin_failures);
    print_skipped(p, false);
    if (ep.count > 1 || s.cache_hits || s.cache_misses) print_epochs(&ep, &s, false);
    print_stages(&s, &d, batches, false);
    printf("operator share of CPU time:\n");
    print_breakdown(p, false);
  }
  stk_pipeline_destroy(p);
  return 0;
}
