/* The mixed decoders' path to stoker's own GPU JPEG decoder: parsing in the CPU stage,
 * launching (on a launcher thread) and collecting on the decode thread (jpeg_own.h). */
#include "jpeg_own.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codecs/jpeg_frame.h"
#include "../core/core.h"
#include "own_balance.h"

/* ---- the share ---- */

int stk__own_take(double share, int capable) {
  int take = (int)floor((share > 1 ? 1 : share < 0 ? 0 : share) * capable + 0.5);
  return take < 0 ? 0 : take > capable ? capable : take;
}

int stk__own_take_balanced(double share, int capable) {
  if (!(share > 0)) return 0;
  int take = stk__own_take(share, capable);
  return take == 0 && capable > 0 ? 1 : take;
}

/* ---- per-node state ---- */

/* The launch runs on a thread of the node's own (the launcher): the host work of the
 * decoder's call (gathering the parsed blocks, planning, uploading: about 20 us an image
 * on the H100 machine) then stays off the decode thread, which feeds nvJPEG's engines and
 * whose every microsecond is theirs (bench/RESULTS.md). finish() waits until the launch is
 * queued; one launch is in flight at a time (the decode thread runs one batch's decoders). */
enum { LAUNCH_IDLE, LAUNCH_REQUESTED, LAUNCH_QUEUED };

struct stk__jpeg_own {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  bool started, stop;
  int state;
  /* the launch: its arguments, its events and verdicts, its outcome */
  stk__gpu *g;
  uintptr_t stream;
  int k, color, cap;
  stk_gpu_jpeg_decode_sample *samples;
  void *ev_end; /* recorded after the call: its work done */
  int *status;  /* pinned: the device writes the verdicts */
  int rc;
  char err[STK_GPU_ERRLEN];
  stk__own_balance balance; /* under `lock` with `gain` */
  stk__own_gain gain;
};

stk_status stk__jpeg_own_create(stk__jpeg_own **out) {
  *out = stk__calloc(1, sizeof **out, "own JPEG decoder state");
  if (!*out) return STK_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&(*out)->lock, NULL);
  pthread_cond_init(&(*out)->cond, NULL);
  (*out)->balance = stk__own_balance_start();
  return STK_OK;
}

void stk__jpeg_own_destroy(stk__jpeg_own *o) {
  if (!o) return;
  if (o->started) {
    pthread_mutex_lock(&o->lock);
    o->stop = true;
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
  }
  pthread_mutex_destroy(&o->lock);
  pthread_cond_destroy(&o->cond);
  free(o->samples);
  free(o);
}

double stk__jpeg_own_balanced_share(stk__jpeg_own *o) {
  pthread_mutex_lock(&o->lock);
  double share = stk__own_gain_without(&o->gain) ? 0 : o->balance.share;
  pthread_mutex_unlock(&o->lock);
  return share;
}

void stk__jpeg_own_balance(stk__jpeg_own *o, double engines_s, double own_wait_s, int images) {
  pthread_mutex_lock(&o->lock);
  if (!stk__own_gain_without(&o->gain))
    o->balance = stk__own_balance_next(o->balance, engines_s, own_wait_s);
  o->gain = stk__own_gain_next(o->gain, engines_s + own_wait_s, images);
  pthread_mutex_unlock(&o->lock);
}

/* ---- parsing (CPU stage) ---- */

/* A worker's scratch for the parse, grown to the largest file seen: the block then gets
 * exactly the bytes it needs (the restart offsets can need up to half the file). */
typedef struct {
  uint8_t *scan;
  int32_t *restarts;
  size_t cap;
} parse_scratch;
static _Thread_local parse_scratch scratch;

static bool scratch_fit(size_t size) {
  if (scratch.cap >= size) return true;
  size_t cap = size < 65536 ? 65536 : size + size / 2;
  uint8_t *scan = realloc(scratch.scan, cap);
  if (scan) scratch.scan = scan;
  int32_t *restarts = realloc(scratch.restarts, (cap / 2 + 1) * sizeof(int32_t));
  if (restarts) scratch.restarts = restarts;
  if (!scan || !restarts) return false;
  scratch.cap = cap;
  return true;
}

stk_jpeg_parsed *stk__jpeg_parse_block(const uint8_t *data, size_t size,
                                       void *(*alloc)(void *ctx, size_t bytes), void *alloc_ctx) {
  if (!scratch_fit(size)) return NULL;
  stk_jpeg_parsed head;
  size_t scan_bytes = 0;
  int n_restarts = 0;
  char why[128];
  if (stk__jpeg_frame_parse(data, size, &head.frame, &head.tables, scratch.scan, scratch.cap,
                            &scan_bytes, scratch.restarts, (int)(scratch.cap / 2 + 1), &n_restarts,
                            why, sizeof why) != 0)
    return NULL;
  if (scan_bytes > UINT32_MAX / 2) return NULL; /* bit positions are 32-bit on the device */
  head.scan_bytes = (uint32_t)scan_bytes;
  head.n_restarts = n_restarts;
  stk_jpeg_parsed *p = alloc(alloc_ctx, stk_jpeg_parsed_bytes(n_restarts, (uint32_t)scan_bytes));
  if (!p) return NULL;
  *p = head;
  memcpy((int32_t *)(p + 1), scratch.restarts, (size_t)n_restarts * sizeof(int32_t));
  memcpy((uint8_t *)stk_jpeg_parsed_scan(p), scratch.scan, scan_bytes);
  return p;
}

static void *node_pool_alloc(void *node, size_t bytes) { return stk__node_pool_alloc(node, bytes); }

stk_jpeg_parsed *stk__jpeg_own_parse(stk__node *node, const uint8_t *data, size_t size) {
  return stk__jpeg_parse_block(data, size, node_pool_alloc, node);
}

/* ---- launching (decode thread) ---- */

static stk_status api_check(stk__node *node, int rc, const char *err) {
  if (rc == 0) return STK_OK;
  return stk__wrap(stk__gpu_check(rc, err), "%s: own JPEG decoder", stk__node_name(node));
}

static void release(stk__jpeg_own *o, stk__gpu *g) {
  if (o->ev_end) g->api->event_destroy(g->ctx, o->ev_end);
  if (o->status) g->api->pinned_free(g->ctx, o->status, NULL, NULL, 0);
  o->ev_end = NULL;
  o->status = NULL;
}

/* The launcher's part: the decoder's call on the batch's stream, and an event after it. */
static void launch_now(stk__jpeg_own *o) {
  const stk_gpu_api *api = o->g->api;
  stk_gpu_ctx *ctx = o->g->ctx;
  stk_gpu_jpeg_decode_args args = {o->color, o->status};
  int rc =
      stk_gpu_run_jpeg_decode(api, ctx, o->k, o->samples, &args, o->stream, o->err, sizeof o->err);
  if (rc == 0) rc = api->event_record(ctx, o->ev_end, o->stream, o->err, sizeof o->err);
  o->rc = rc;
}

static void *launcher_main(void *arg) {
  stk__jpeg_own *o = arg;
  stk__name_thread("stk-own-jpeg");
  pthread_mutex_lock(&o->lock);
  for (;;) {
    while (!o->stop && o->state != LAUNCH_REQUESTED) pthread_cond_wait(&o->cond, &o->lock);
    if (o->stop) break;
    pthread_mutex_unlock(&o->lock);
    launch_now(o);
    pthread_mutex_lock(&o->lock);
    o->state = LAUNCH_QUEUED;
    pthread_cond_broadcast(&o->cond);
  }
  pthread_mutex_unlock(&o->lock);
  return NULL;
}

stk_status stk__jpeg_own_launch(stk__jpeg_own *o, stk__node *node, stk__gpu_batch *b, int k,
                                const stk_gpu_jpeg_decode_sample *samples, int color) {
  stk__gpu *g = stk__gpu_device(b);
  if (k > o->cap) {
    void *grown = realloc(o->samples, (size_t)k * sizeof *o->samples);
    if (!grown)
      return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: own JPEG decoder: %d requests",
                      stk__node_name(node), k);
    o->samples = grown;
    o->cap = k;
  }
  if (!o->started) {
    if (pthread_create(&o->thread, NULL, launcher_main, o) != 0)
      return STK_FAIL(STK_ERR_INTERNAL, "%s: cannot start the own JPEG decoder's thread",
                      stk__node_name(node));
    o->started = true;
  }
  char err[STK_GPU_ERRLEN] = "";
  int rc = g->api->event_create(g->ctx, 0, &o->ev_end, err, sizeof err);
  if (rc == 0)
    rc =
        g->api->pinned_alloc(g->ctx, (size_t)k * sizeof(int), (void **)&o->status, err, sizeof err);
  if (rc != 0) {
    release(o, g);
    return api_check(node, rc, err);
  }
  memcpy(o->samples, samples, (size_t)k * sizeof *samples);
  pthread_mutex_lock(&o->lock);
  o->g = g, o->stream = stk__gpu_stream(b), o->k = k, o->color = color;
  o->state = LAUNCH_REQUESTED;
  pthread_cond_broadcast(&o->cond);
  pthread_mutex_unlock(&o->lock);
  return STK_OK;
}

stk_status stk__jpeg_own_finish(stk__jpeg_own *o, stk__node *node, stk__gpu_batch *b, int k,
                                int *status) {
  stk__gpu *g = stk__gpu_device(b);
  pthread_mutex_lock(&o->lock); /* the launch queued (the samples' pool blocks stay alive) */
  while (o->state == LAUNCH_REQUESTED) pthread_cond_wait(&o->cond, &o->lock);
  o->state = LAUNCH_IDLE;
  pthread_mutex_unlock(&o->lock);
  char err[STK_GPU_ERRLEN] = "";
  int rc = o->rc;
  if (rc != 0) snprintf(err, sizeof err, "%s", o->err);
  if (rc == 0) rc = g->api->event_sync(g->ctx, o->ev_end, err, sizeof err);
  if (rc == 0) memcpy(status, o->status, (size_t)k * sizeof(int));
  release(o, g);
  return api_check(node, rc, err);
}
