/*
 * The Huffman stage batched (src/cuda/jpeg_huffman.cu): how n images' inputs are packed
 * into the one block uploaded per call, how thread blocks map to images and threads to
 * subsequences, and the per-thread bodies of the three launches. Plain C11 / CUDA C++ like
 * jpeg_huffman.h, so the host test (tests/c/test_jpeg_huffman.c) packs a batch with the
 * same code and runs every launch's blocks and threads in loops: the kernels add only
 * the copy of an image's frame and tables to shared memory.
 *
 * The block: images[n] (offsets into the block, the output pointer), frames[n],
 * tables[n], then three block tables of n + 1 ints (first block of each image in the
 * launch whose threads are (subsequence, guess) pairs, segments,
 * subsequences), then per image its segments, subsequences and un-stuffed scan. Every
 * part starts 16-byte aligned.
 */
#ifndef STOKER_SHARED_JPEG_HUFFMAN_BATCH_H
#define STOKER_SHARED_JPEG_HUFFMAN_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "block_owner.h"
#include "jpeg_huffman.h"

#define STK_JPEG_BATCH_THREADS 128

/* The launches by the threads they have. */
enum { STK_JPEG_BY_PHASE = 0, STK_JPEG_BY_SEGMENT = 1, STK_JPEG_BY_SUBSEQ = 2 };

typedef struct {
  int64_t scan, segs, subs; /* offsets in the block */
  int64_t sub0;             /* its first subsequence over the batch (temporaries' index) */
  int32_t nsegs, nsubs;
  int16_t *coef; /* output: total_blocks * 64 */
} stk_jpeg_batch_image;

typedef struct {
  size_t bytes, images_at, frames_at, tables_at, first_at;
  int64_t total_subs;
  int32_t blocks[3]; /* thread blocks of each launch kind */
} stk_jpeg_batch_layout;

/* Temporaries, per subsequence over the batch, and a failure flag per image. */
typedef struct {
  stk_jpeg_guesses guess; /* per (sub, p) and (sub, p, mark): see jpeg_huffman.h */
  uint64_t *start;
  int64_t *unit0;
  int32_t *dcpred; /* [sub * STK_JPEG_MAX_COMP + c] */
  int32_t *failed;
} stk_jpeg_batch_tmp;

static inline size_t stk_jpeg_align16(size_t x) { return (x + 15) & ~(size_t)15; }

/* ---- host: packing ---- */

/* Sizes the block for subsequences of `s` bits. Returns 0, or -1 when the batch needs
 * more subsequences or thread blocks than the launches can index. */
static inline int stk_jpeg_batch_plan(int n, const stk_jpeg_frame *frames, const size_t *scan_bytes,
                                      const int32_t *const *restarts, const int *n_restarts,
                                      uint32_t s, stk_jpeg_batch_layout *L) {
  L->images_at = 0;
  L->frames_at = stk_jpeg_align16((size_t)n * sizeof(stk_jpeg_batch_image));
  L->tables_at = stk_jpeg_align16(L->frames_at + (size_t)n * sizeof(stk_jpeg_frame));
  L->first_at = stk_jpeg_align16(L->tables_at + (size_t)n * sizeof(stk_jpeg_huffman));
  size_t at = stk_jpeg_align16(L->first_at + 3 * (size_t)(n + 1) * sizeof(int32_t));
  int64_t blocks[3] = {0, 0, 0};
  L->total_subs = 0;
  for (int i = 0; i < n; i++) {
    int64_t ns = stk_jpeg_plan_count((uint32_t)scan_bytes[i], restarts[i], n_restarts[i], s);
    at += stk_jpeg_align16((size_t)(n_restarts[i] + 1) * sizeof(stk_jpeg_segment)) +
          stk_jpeg_align16((size_t)ns * sizeof(stk_jpeg_subseq)) + stk_jpeg_align16(scan_bytes[i]);
    L->total_subs += ns;
    const int64_t t = STK_JPEG_BATCH_THREADS;
    blocks[STK_JPEG_BY_PHASE] += (ns * stk_jpeg_guess_count(&frames[i]) + t - 1) / t;
    blocks[STK_JPEG_BY_SEGMENT] += (n_restarts[i] + 1 + t - 1) / t;
    blocks[STK_JPEG_BY_SUBSEQ] += (ns + t - 1) / t;
  }
  L->bytes = at;
  for (int k = 0; k < 3; k++) {
    if (blocks[k] > INT32_MAX) return -1;
    L->blocks[k] = (int32_t)blocks[k];
  }
  return L->total_subs > INT32_MAX / STK_JPEG_GUESSES ? -1 : 0;
}

/* Fills the planned block at `host` (L->bytes). coef[i]: image i's output (a device
 * pointer for the kernels, a host one for the host run). */
static inline void stk_jpeg_batch_fill(const stk_jpeg_batch_layout *L, char *host, int n,
                                       const stk_jpeg_frame *frames, const stk_jpeg_huffman *tables,
                                       const uint8_t *const *scan, const size_t *scan_bytes,
                                       const int32_t *const *restarts, const int *n_restarts,
                                       int16_t *const *coef, uint32_t s) {
  stk_jpeg_batch_image *im = (stk_jpeg_batch_image *)(host + L->images_at);
  memcpy(host + L->frames_at, frames, (size_t)n * sizeof *frames);
  memcpy(host + L->tables_at, tables, (size_t)n * sizeof *tables);
  int32_t *first = (int32_t *)(host + L->first_at);
  size_t at = stk_jpeg_align16(L->first_at + 3 * (size_t)(n + 1) * sizeof(int32_t));
  int64_t sub0 = 0, b[3] = {0, 0, 0};
  const int64_t t = STK_JPEG_BATCH_THREADS;
  for (int i = 0; i < n; i++) {
    int32_t ns =
        (int32_t)stk_jpeg_plan_count((uint32_t)scan_bytes[i], restarts[i], n_restarts[i], s);
    im[i].nsegs = n_restarts[i] + 1;
    im[i].nsubs = ns;
    im[i].sub0 = sub0;
    im[i].coef = coef[i];
    im[i].segs = (int64_t)at;
    at += stk_jpeg_align16((size_t)im[i].nsegs * sizeof(stk_jpeg_segment));
    im[i].subs = (int64_t)at;
    at += stk_jpeg_align16((size_t)ns * sizeof(stk_jpeg_subseq));
    im[i].scan = (int64_t)at;
    if (scan_bytes[i]) memcpy(host + at, scan[i], scan_bytes[i]);
    at += stk_jpeg_align16(scan_bytes[i]);
    stk_jpeg_plan_fill(&frames[i], (uint32_t)scan_bytes[i], restarts[i], n_restarts[i], s,
                       (stk_jpeg_segment *)(host + im[i].segs),
                       (stk_jpeg_subseq *)(host + im[i].subs));
    sub0 += ns;
    first[STK_JPEG_BY_PHASE * (n + 1) + i] = (int32_t)b[0];
    first[STK_JPEG_BY_SEGMENT * (n + 1) + i] = (int32_t)b[1];
    first[STK_JPEG_BY_SUBSEQ * (n + 1) + i] = (int32_t)b[2];
    b[0] += ((int64_t)ns * stk_jpeg_guess_count(&frames[i]) + t - 1) / t;
    b[1] += (im[i].nsegs + t - 1) / t;
    b[2] += (ns + t - 1) / t;
  }
  for (int k = 0; k < 3; k++) first[k * (n + 1) + n] = (int32_t)b[k];
}

/* Carves the temporaries from one block at `base` (0: sizes only); returns its bytes. */
static inline size_t stk_jpeg_batch_tmp_carve(int64_t subs, int n, uintptr_t base,
                                              stk_jpeg_batch_tmp *t) {
  size_t at = 0, np = (size_t)subs * STK_JPEG_GUESSES, nm = np * STK_JPEG_GUESS_MARKS;
  t->guess.end = (uint64_t *)(base + at);
  at = stk_jpeg_align16(at + np * sizeof(uint64_t));
  t->guess.mark = (uint64_t *)(base + at);
  at = stk_jpeg_align16(at + nm * sizeof(uint64_t));
  t->guess.rest = (stk_jpeg_rest *)(base + at);
  at = stk_jpeg_align16(at + nm * sizeof(stk_jpeg_rest));
  t->start = (uint64_t *)(base + at);
  at = stk_jpeg_align16(at + (size_t)subs * sizeof(uint64_t));
  t->unit0 = (int64_t *)(base + at);
  at = stk_jpeg_align16(at + (size_t)subs * sizeof(int64_t));
  t->dcpred = (int32_t *)(base + at);
  at = stk_jpeg_align16(at + (size_t)subs * STK_JPEG_MAX_COMP * sizeof(int32_t));
  t->failed = (int32_t *)(base + at);
  return at + (size_t)n * sizeof(int32_t);
}

/* ---- device (and host run): the launches ---- */

/* The image owning thread block b of launch `kind`: the last i with first[i] <= b. */
STK_HD int stk_jpeg_batch_image_of(const char *base, const stk_jpeg_batch_layout *L, int n,
                                   int kind, int64_t b) {
  return stk_block_owner((const int32_t *)(base + L->first_at) + kind * (n + 1), n, b);
}

/* The index of thread `thread` of block b within image i's threads of launch `kind`. */
STK_HD int64_t stk_jpeg_batch_thread(const char *base, const stk_jpeg_batch_layout *L, int n,
                                     int kind, int i, int64_t b, int thread) {
  const int32_t *first = (const int32_t *)(base + L->first_at) + kind * (n + 1);
  return (b - first[i]) * STK_JPEG_BATCH_THREADS + thread;
}

/* Image i's view, with its frame and tables wherever the caller keeps them. */
STK_HD stk_jpeg_image_view stk_jpeg_batch_view(const char *base, const stk_jpeg_batch_layout *L,
                                               int i, const stk_jpeg_frame *frame,
                                               const stk_jpeg_huffman *tables) {
  const stk_jpeg_batch_image *im = (const stk_jpeg_batch_image *)(base + L->images_at) + i;
  stk_jpeg_image_view v;
  v.data = (const uint8_t *)(base + im->scan);
  v.frame = frame;
  v.tables = tables;
  v.segs = (const stk_jpeg_segment *)(base + im->segs);
  v.subs = (const stk_jpeg_subseq *)(base + im->subs);
  return v;
}

STK_HD const stk_jpeg_batch_image *stk_jpeg_batch_img(const char *base,
                                                      const stk_jpeg_batch_layout *L, int i) {
  return (const stk_jpeg_batch_image *)(base + L->images_at) + i;
}

/* Guess launch, thread k of image i: (subsequence k / G, guess k % G), G guesses per
 * subsequence (stk_jpeg_guess_count: no idle lanes). */
STK_HD void stk_jpeg_batch_guess(const char *base, const stk_jpeg_batch_layout *L, int i, int64_t k,
                                 const stk_jpeg_image_view *v, const stk_jpeg_batch_tmp *t) {
  const stk_jpeg_batch_image *im = stk_jpeg_batch_img(base, L, i);
  const int ng = stk_jpeg_guess_count(v->frame);
  if (k >= (int64_t)im->nsubs * ng) return;
  stk_jpeg_guesses gs = stk_jpeg_guesses_at(&t->guess, im->sub0);
  stk_jpeg_guess_step(v, (int32_t)(k / ng), (int)(k % ng), &gs);
}

/* Resolve launch, thread k of image i: segment k. Returns 1 when it found the image
 * corrupt (and set its failure flag), else 0. */
STK_HD int stk_jpeg_batch_resolve(const char *base, const stk_jpeg_batch_layout *L, int i,
                                  int64_t k, const stk_jpeg_image_view *v,
                                  const stk_jpeg_batch_tmp *t) {
  const stk_jpeg_batch_image *im = stk_jpeg_batch_img(base, L, i);
  if (k >= im->nsegs) return 0;
  int32_t misses = 0;
  int64_t s0 = im->sub0;
  stk_jpeg_guesses gs = stk_jpeg_guesses_at(&t->guess, s0);
  if (stk_jpeg_resolve_segment(v, (int32_t)k, im->nsubs, &gs, t->start + s0, t->unit0 + s0,
                               t->dcpred + s0 * STK_JPEG_MAX_COMP, &misses) == 0)
    return 0;
  t->failed[i] = 1; /* racing writers all write the same value */
  return 1;
}

/* Write launch, thread k of image i: subsequence k (nothing for a failed image). */
STK_HD void stk_jpeg_batch_write(const char *base, const stk_jpeg_batch_layout *L, int i, int64_t k,
                                 const stk_jpeg_image_view *v, const stk_jpeg_batch_tmp *t) {
  const stk_jpeg_batch_image *im = stk_jpeg_batch_img(base, L, i);
  if (k >= im->nsubs || t->failed[i]) return;
  int64_t s0 = im->sub0;
  stk_jpeg_write_step(v, (int32_t)k, t->start + s0, t->unit0 + s0,
                      t->dcpred + s0 * STK_JPEG_MAX_COMP, im->coef);
}

#endif
