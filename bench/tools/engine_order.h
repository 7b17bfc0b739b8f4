/* The order in which a batch's JPEGs are handed to nvJPEG's hardware engines.
 *
 * The decoded images land where their destination pointers say whatever the order, so the
 * order is free to choose. On the H100, bare batched decoding took 2.5% longer per call
 * when each batch was a random set of files (as a shuffling reader makes them) than when
 * it held neighbouring files, crops of one photo of similar size, and handing a random
 * batch over in the orders below took back about 1% of that (bench/RESULTS.md, fifth
 * session: call by call in one process); the pipeline keeps the given order, and these
 * orders remain for gpu_bench --bare-order (a lab tool). The engines
 * decode one image each at a time; a batch is done when the last engine is, so the
 * batch's time is set by the most loaded engine. How nvJPEG deals the images out is not
 * documented; the modes are the candidates that were measured. The cost of an image is taken to be
 * its bitstream's size (the engines' entropy decoding reads every byte).
 *
 *   STK_ORDER_AS_GIVEN  the batch's order
 *   STK_ORDER_DESC      largest bitstream first: with engines that take the next image when
 *                       free, the longest-processing-time-first rule, whose tail is the
 *                       small images (makespan within 4/3 of the best)
 *   STK_ORDER_DEALT     balanced sets for `engines` engines dealt in turn (image p to engine
 *                       p mod engines): largest first, each to the least loaded engine that
 *                       still has a place, then laid out so that the dealing gives each
 *                       engine its set
 *   STK_ORDER_CHUNKS    the same for engines given contiguous chunks of ceil(n / engines)
 *
 * Pure C (no CUDA) so that tests/c/test_engine_order.c checks it on any machine. */
#ifndef STOKER_CUDA_ENGINE_ORDER_H
#define STOKER_CUDA_ENGINE_ORDER_H

#include <stdlib.h>
#include <string.h>

enum { STK_ORDER_AS_GIVEN, STK_ORDER_DESC, STK_ORDER_DEALT, STK_ORDER_CHUNKS };
#define STK_ORDER_MAX_ENGINES 64

/* gpu_bench --bare-order's value ("given", "desc", "dealt", "chunks"); unknown or NULL: `dflt`. */
static inline int stk_engine_order_parse(const char *s, int dflt) {
  if (!s) return dflt;
  if (!strcmp(s, "given")) return STK_ORDER_AS_GIVEN;
  if (!strcmp(s, "desc")) return STK_ORDER_DESC;
  if (!strcmp(s, "dealt")) return STK_ORDER_DEALT;
  if (!strcmp(s, "chunks")) return STK_ORDER_CHUNKS;
  return dflt;
}

/* Insertion sort of perm[0..n) by cost, largest first, ties in their given order (stable,
 * so equal batches give equal orders; n is a batch, a few hundred at most). */
static inline void stk_engine_sort_desc(int *perm, int n, const size_t *cost) {
  for (int i = 1; i < n; i++) {
    int v = perm[i], j = i - 1;
    while (j >= 0 && cost[perm[j]] < cost[v]) perm[j + 1] = perm[j], j--;
    perm[j + 1] = v;
  }
}

/* Writes into perm[0..n) the order (indices into cost[]) in which to submit. `scratch`
 * holds 2n ints. Returns 0, or -1 when a mode needs the engines' count and has none (perm
 * is then the given order). */
static inline int stk_engine_order(int mode, int n, const size_t *cost, int engines, int *perm,
                                   int *scratch) {
  for (int i = 0; i < n; i++) perm[i] = i;
  if (mode == STK_ORDER_AS_GIVEN || n < 2) return 0;
  stk_engine_sort_desc(perm, n, cost);
  if (mode == STK_ORDER_DESC) return 0;
  if (engines < 1 || engines > STK_ORDER_MAX_ENGINES) {
    for (int i = 0; i < n; i++) perm[i] = i;
    return -1;
  }
  int cap[STK_ORDER_MAX_ENGINES], used[STK_ORDER_MAX_ENGINES], start[STK_ORDER_MAX_ENGINES];
  double load[STK_ORDER_MAX_ENGINES];
  int chunk = (n + engines - 1) / engines;
  for (int e = 0, acc = 0; e < engines; e++) {
    int left = n - e * chunk;
    cap[e] = mode == STK_ORDER_DEALT ? n / engines + (e < n % engines)
             : left < 0              ? 0
             : left > chunk          ? chunk
                                     : left;
    used[e] = 0, load[e] = 0, start[e] = acc;
    acc += cap[e];
  }
  int *bin = scratch, *out = scratch + n;
  for (int i = 0; i < n; i++) { /* largest first, to the least loaded engine with a place */
    int best = -1;
    for (int e = 0; e < engines; e++)
      if (used[e] < cap[e] && (best < 0 || load[e] < load[best])) best = e;
    bin[i] = best;
    load[best] += (double)cost[perm[i]];
    used[best]++;
  }
  for (int e = 0; e < engines; e++) used[e] = 0;
  for (int i = 0; i < n; i++) {
    int e = bin[i], r = used[e]++;
    out[mode == STK_ORDER_DEALT ? r * engines + e : start[e] + r] = perm[i];
  }
  memcpy(perm, out, sizeof(int) * (size_t)n);
  return 0;
}

#endif
