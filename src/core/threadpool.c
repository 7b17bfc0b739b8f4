/* A fixed thread pool running one "parallel for" job at a time. Indices come from an
 * atomic counter, so a slow sample does not hold up a fixed share of the batch. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core.h"

struct stk__threadpool {
  int num_threads; /* including the calling thread */
  pthread_t *threads;
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  /* the current job */
  uint64_t generation;
  stk__task_fn fn;
  void *arg;
  size_t count;
  atomic_size_t next;
  int busy_workers;
  bool stop;
};

typedef struct {
  stk__threadpool *tp;
  int index;
} worker_start;

static void run_indices(stk__threadpool *tp, stk__task_fn fn, void *arg, size_t count, int worker) {
  for (;;) {
    size_t i = atomic_fetch_add_explicit(&tp->next, 1, memory_order_relaxed);
    if (i >= count) break;
    fn(arg, i, worker);
  }
}

static void *worker_main(void *opaque) {
  worker_start *ws = opaque;
  stk__threadpool *tp = ws->tp;
  int index = ws->index;
  free(ws);
  stk__name_thread("stk-cpu-%d", index + 1);
  uint64_t seen = 0;
  pthread_mutex_lock(&tp->lock);
  for (;;) {
    while (!tp->stop && tp->generation == seen) pthread_cond_wait(&tp->wake, &tp->lock);
    if (tp->stop) break;
    seen = tp->generation;
    stk__task_fn fn = tp->fn;
    void *arg = tp->arg;
    size_t count = tp->count;
    pthread_mutex_unlock(&tp->lock);
    run_indices(tp, fn, arg, count, index);
    pthread_mutex_lock(&tp->lock);
    if (--tp->busy_workers == 0) pthread_cond_signal(&tp->done);
  }
  pthread_mutex_unlock(&tp->lock);
  return NULL;
}

stk_status stk__threadpool_create(stk__threadpool **out, int num_threads) {
  if (num_threads < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "num_threads must be >= 1, got %d", num_threads);
  stk__threadpool *tp = stk__calloc(1, sizeof *tp, "a thread pool");
  if (!tp) return STK_ERR_OUT_OF_MEMORY;
  tp->num_threads = num_threads;
  pthread_mutex_init(&tp->lock, NULL);
  pthread_cond_init(&tp->wake, NULL);
  pthread_cond_init(&tp->done, NULL);
  tp->threads = stk__calloc((size_t)num_threads, sizeof(pthread_t), "thread handles");
  if (!tp->threads) {
    stk__threadpool_destroy(tp);
    return STK_ERR_OUT_OF_MEMORY;
  }
  for (int i = 0; i < num_threads - 1; i++) {
    worker_start *ws = stk__malloc(sizeof *ws, "a worker");
    if (!ws) {
      tp->num_threads = i + 1;
      stk__threadpool_destroy(tp);
      return STK_ERR_OUT_OF_MEMORY;
    }
    ws->tp = tp;
    ws->index = i;
    if (pthread_create(&tp->threads[i], NULL, worker_main, ws) != 0) {
      free(ws);
      tp->num_threads = i + 1;
      stk__threadpool_destroy(tp);
      return STK_FAIL(STK_ERR_INTERNAL, "cannot start worker thread %d of %d", i + 1,
                      num_threads - 1);
    }
  }
  *out = tp;
  return STK_OK;
}

void stk__threadpool_destroy(stk__threadpool *tp) {
  if (!tp) return;
  pthread_mutex_lock(&tp->lock);
  tp->stop = true;
  pthread_cond_broadcast(&tp->wake);
  pthread_mutex_unlock(&tp->lock);
  for (int i = 0; i < tp->num_threads - 1; i++)
    if (tp->threads) pthread_join(tp->threads[i], NULL);
  pthread_cond_destroy(&tp->wake);
  pthread_cond_destroy(&tp->done);
  pthread_mutex_destroy(&tp->lock);
  free(tp->threads);
  free(tp);
}

int stk__threadpool_size(const stk__threadpool *tp) { return tp->num_threads; }

void stk__threadpool_parallel_for(stk__threadpool *tp, size_t count, stk__task_fn fn, void *arg) {
  if (count == 0) return;
  int helpers = tp->num_threads - 1;
  if (helpers == 0 || count == 1) {
    for (size_t i = 0; i < count; i++) fn(arg, i, tp->num_threads - 1);
    return;
  }
  pthread_mutex_lock(&tp->lock);
  tp->fn = fn;
  tp->arg = arg;
  tp->count = count;
  atomic_store(&tp->next, 0);
  tp->busy_workers = helpers;
  tp->generation++;
  pthread_cond_broadcast(&tp->wake);
  pthread_mutex_unlock(&tp->lock);
  run_indices(tp, fn, arg, count, tp->num_threads - 1);
  pthread_mutex_lock(&tp->lock);
  while (tp->busy_workers > 0) pthread_cond_wait(&tp->done, &tp->lock);
  pthread_mutex_unlock(&tp->lock);
}
