/*
 * Internal core of stoker: error reporting, small utilities, host memory pools,
 * the thread pool and the Philox4x32-10 counter-based generator.
 *
 * Internal non-static names are prefixed `stk__`.
 */
#ifndef STOKER_CORE_H
#define STOKER_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stoker/stoker.h"

#if defined(__GNUC__)
#define STK__PRINTF(a, b) __attribute__((format(printf, a, b)))
#define STK__HIDDEN       __attribute__((visibility("hidden")))
#else
#define STK__PRINTF(a, b)
#define STK__HIDDEN
#endif

/* ---------------------------------------------------------------------------------- */
/* Errors                                                                             */
/* ---------------------------------------------------------------------------------- */

/* Sets the calling thread's message to "<func>: <formatted text>" and returns
 * `status`. Use through STK_FAIL so the function name comes first. */
stk_status stk__fail(stk_status status, const char *func, const char *fmt, ...) STK__PRINTF(3, 4);
stk_status stk__vfail(stk_status status, const char *func, const char *fmt, va_list ap);
/* Prepends "<context>: " to the calling thread's current message (for callers that add
 * the culprit, e.g. the file name, to an error raised deeper down). Returns `status`. */
stk_status stk__wrap(stk_status status, const char *fmt, ...) STK__PRINTF(2, 3);
/* A warning for the user's log (standard error, one line prefixed "stoker: warning: "):
 * for settings that work but likely not as meant. Call it once per cause (at build). */
void stk__warn(const char *fmt, ...) STK__PRINTF(1, 2);

/* Prefixes "operator '<name>': " to the calling thread's message, dropping the name the
 * operator's own message may start with ("<name>: "), so it is not said twice. */
stk_status stk__wrap_operator(stk_status status, const char *name);
/* The same with the operator's device: "operator 'NAME' (DEVICE): ...". */
stk_status stk__wrap_operator_on(stk_status status, const char *name, const char *device);

/* Replaces the calling thread's message with `message` as is (for passing a message
 * recorded on another thread). Returns `status`. */
stk_status stk__set_error(stk_status status, const char *message);

#define STK_FAIL(status, ...) stk__fail((status), __func__, __VA_ARGS__)

/* Evaluate an expression returning stk_status; return it on failure. */
#define STK_TRY(expr)                      \
  do {                                     \
    stk_status stk__st = (expr);           \
    if (stk__st != STK_OK) return stk__st; \
  } while (0)

/* ---------------------------------------------------------------------------------- */
/* Allocation helpers: report the culprit instead of aborting                          */
/* ---------------------------------------------------------------------------------- */

/* malloc/calloc/realloc that set an error message naming `what` on failure. */
void *stk__malloc(size_t size, const char *what);
void *stk__calloc(size_t count, size_t size, const char *what);
void *stk__realloc(void *ptr, size_t size, const char *what);
char *stk__strdup(const char *s);

/* Checked size arithmetic: returns false on overflow. */
static inline bool stk__mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return false;
  *out = a * b;
  return true;
}

/* Monotonic clock in nanoseconds. */
int64_t stk__now_ns(void);

/* Names the calling thread (Linux: at most 15 characters show, in /proc/PID/task/TID/comm,
 * top -H and debuggers), so per-thread CPU figures (bench/tools/stack_sample.py) say which
 * stage a thread belongs to. printf-style; a no-op where unsupported. */
void stk__name_thread(const char *fmt, ...);

/* A growable byte buffer. */
typedef struct {
  char *data;
  size_t len, cap;
} stk__strbuf;

stk_status stk__strbuf_append(stk__strbuf *b, const char *s, size_t n);
stk_status stk__strbuf_printf(stk__strbuf *b, const char *fmt, ...) STK__PRINTF(2, 3);
void stk__strbuf_free(stk__strbuf *b);

/* Reads a whole file into a malloc'd buffer (NUL appended, not counted). Refuses files
 * larger than `max_bytes` with STK_ERR_LIMIT. Errors name the path. */
stk_status stk__read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *size);

/* ---------------------------------------------------------------------------------- */
/* Float16                                                                            */
/* ---------------------------------------------------------------------------------- */

/* IEEE 754 binary16 conversion, round to nearest even. */
uint16_t stk__f32_to_f16(float f);
float stk__f16_to_f32(uint16_t h);

/* ---------------------------------------------------------------------------------- */
/* Philox4x32-10                                                                      */
/* ---------------------------------------------------------------------------------- */

/* Counter-based generator (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11). The key names a stream (pipeline seed + operator instance [+ shard]);
 * the counter names a sample and a draw. No state is shared, so no locks. */
typedef struct {
  uint32_t key[2];
  uint32_t counter[4];
  uint32_t buffer[4];
  int available; /* unread words left in buffer */
} stk__philox;

/* One Philox4x32-10 block: encrypts `ctr` under `key` into `out`. */
void stk__philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* A stream keyed by (key) for sample `ordinal`; draws number 0, 1, 2, ... */
void stk__philox_init(stk__philox *g, uint64_t key, uint64_t ordinal);
uint32_t stk__philox_u32(stk__philox *g);
/* Uniform in [0, 1) with 24 bits (float) / 53 bits (double). */
float stk__philox_uniform_f(stk__philox *g);
double stk__philox_uniform(stk__philox *g);
/* Standard normal (Box-Muller on two uniforms). */
double stk__philox_normal(stk__philox *g);
/* Uniform integer in [0, n), unbiased (rejection). n must be > 0. */
uint64_t stk__philox_below(stk__philox *g, uint64_t n);

/* Mixes values into a 64-bit key (splitmix64 finaliser). */
uint64_t stk__mix64(uint64_t a, uint64_t b);
/* FNV-1a of a string, for keying streams by instance name. */
uint64_t stk__hash_str(const char *s);

/* ---------------------------------------------------------------------------------- */
/* Host memory pool                                                                   */
/* ---------------------------------------------------------------------------------- */

/* A thread-safe pool of host blocks in power-of-two size classes. Freed blocks are kept
 * for reuse up to `max_cached` bytes in total; beyond that they go back to the system.
 * Blocks are 64-byte aligned. Stats feed stk_pipeline_stats. */
typedef struct stk__pool stk__pool;

stk_status stk__pool_create(stk__pool **out, size_t max_cached);
/* Frees every cached block. Blocks still in use stay valid; they are freed when returned
 * (the pool lives on until the last block comes back). */
void stk__pool_destroy(stk__pool *pool);
/* A block of at least `size` bytes (size 0 gives a valid, minimal block). */
void *stk__pool_alloc(stk__pool *pool, size_t size);
/* Returns a block obtained from stk__pool_alloc of the same pool. */
void stk__pool_free(stk__pool *pool, void *ptr);
/* The usable size of a block. */
size_t stk__pool_block_size(const void *ptr);
void stk__pool_stats(stk__pool *pool, int64_t *in_use, int64_t *cached, int64_t *peak);
/* Page-locking of the pool's blocks (pipelines with GPU operators: nvJPEG's hardware
 * call and host-to-device copies read pinned memory much faster). Either every block the
 * pool allocates from now on comes from alloc() (page-locked memory; NULL: the block is
 * malloc'd, pageable, and counted as a failure) and goes back through dealloc(), or, when
 * alloc is NULL, pin() is called once for every new block (a failure leaves it pageable
 * and is counted) and unpin() before a pinned block goes back to the system. release(user)
 * comes when the pool and its last block are gone. */
typedef struct {
  int (*pin)(void *user, void *ptr, size_t bytes);
  void (*unpin)(void *user, void *ptr);
  void *(*alloc)(void *user, size_t bytes);
  void (*dealloc)(void *user, void *ptr);
  void (*release)(void *user);
  void *user;
} stk__pool_pinning;
void stk__pool_set_pinning(stk__pool *pool, const stk__pool_pinning *pinning);
/* Blocks pinned so far, and pin() failures. */
void stk__pool_pin_stats(stk__pool *pool, int64_t *pinned, int64_t *failures);

/* ---------------------------------------------------------------------------------- */
/* Thread pool                                                                        */
/* ---------------------------------------------------------------------------------- */

/* A fixed set of worker threads running "parallel for" jobs: fn(arg, index, worker) is
 * called for every index in [0, count), indices handed out in order from an atomic
 * counter. The calling thread works too, as worker number `num_threads - 1`. */
typedef struct stk__threadpool stk__threadpool;
typedef void (*stk__task_fn)(void *arg, size_t index, int worker);

/* `num_threads` >= 1 counts the caller: num_threads - 1 threads are started. */
stk_status stk__threadpool_create(stk__threadpool **out, int num_threads);
void stk__threadpool_destroy(stk__threadpool *tp);
int stk__threadpool_size(const stk__threadpool *tp);
/* Runs the job and returns when every index is done. Not reentrant. */
void stk__threadpool_parallel_for(stk__threadpool *tp, size_t count, stk__task_fn fn, void *arg);

#endif /* STOKER_CORE_H */
