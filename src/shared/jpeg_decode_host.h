/* stoker's own GPU JPEG decoder run on the host, phase by phase and thread by thread, with
 * the very functions the kernels run (jpeg_huffman.h, jpeg_pixels.h): for the CPU
 * stand-in backend (tests/fake_gpu) and the tests, so they check what the GPU computes.
 * Plain C11 (malloc'd scratch). */
#ifndef STOKER_SHARED_JPEG_DECODE_HOST_H
#define STOKER_SHARED_JPEG_DECODE_HOST_H

#include <stdlib.h>
#include <string.h>

#include "jpeg_parsed.h"
#include "jpeg_pixels.h"

/* The Huffman stage: guesses, links, resolve per segment, write, over subsequences of `s`
 * bits. Threads of a phase are independent, so running them in order gives what the GPU
 * gives. coef: frame.total_blocks * 64 values. Returns 0, or -1 for a corrupt stream or no
 * memory; *misses (may be NULL): subsequences the resolve pass decoded itself. */
static inline int stk_jpeg_coefficients_host(const stk_jpeg_parsed *p, uint32_t s, int16_t *coef,
                                             int32_t *misses) {
  const int32_t *restarts = stk_jpeg_parsed_restarts(p);
  int64_t nsubs = stk_jpeg_plan_count(p->scan_bytes, restarts, p->n_restarts, s);
  int64_t np = nsubs * STK_JPEG_MAX_PHASES;
  stk_jpeg_segment *segs = malloc(sizeof *segs * (size_t)(p->n_restarts + 1));
  stk_jpeg_subseq *subs = malloc(sizeof *subs * (size_t)nsubs);
  stk_jpeg_subresult *guess = malloc(sizeof *guess * (size_t)np);
  stk_jpeg_subresult *link = malloc(sizeof *link * (size_t)np);
  int8_t *match = malloc((size_t)nsubs * STK_JPEG_MATCH_STRIDE);
  uint64_t *start = malloc(sizeof *start * (size_t)nsubs);
  int64_t *unit0 = malloc(sizeof *unit0 * (size_t)nsubs);
  int32_t *dcpred = malloc(sizeof *dcpred * (size_t)nsubs * STK_JPEG_MAX_COMP);
  int rc = segs && subs && guess && link && match && start && unit0 && dcpred ? 0 : -1;
  int32_t miss = 0;
  if (rc == 0) {
    stk_jpeg_plan_fill(&p->frame, p->scan_bytes, restarts, p->n_restarts, s, segs, subs);
    stk_jpeg_image_view im = {stk_jpeg_parsed_scan(p), &p->frame, &p->tables, segs, subs};
    for (int64_t t = 0; t < np; t++)
      stk_jpeg_guess_step(&im, (int32_t)(t / STK_JPEG_MAX_PHASES), (int)(t % STK_JPEG_MAX_PHASES),
                          guess);
    for (int64_t t = 0; t < np; t++)
      stk_jpeg_link_step(&im, (int32_t)(t / STK_JPEG_MAX_PHASES), (int)(t % STK_JPEG_MAX_PHASES),
                         (int32_t)nsubs, guess, link, match);
    for (int k = 0; k <= p->n_restarts; k++)
      if (stk_jpeg_resolve_segment(&im, k, (int32_t)nsubs, guess, link, match, start, unit0, dcpred,
                                   &miss) != 0)
        rc = -1;
    for (int64_t g = 0; rc == 0 && g < nsubs; g++)
      stk_jpeg_write_step(&im, (int32_t)g, start, unit0, dcpred, coef);
  }
  if (misses) *misses = miss;
  free(segs), free(subs), free(guess), free(link), free(match), free(start), free(unit0),
      free(dcpred);
  return rc;
}

/* The pixel stage: region (rx, ry, rw, rh) of the image (rw <= 0: all of it) in colour
 * `color` (STK_JPEG_OUT_*) into dst, `pitch` bytes per row. Returns 0, or -1 for no memory
 * or a frame the stage does not handle. */
static inline int stk_jpeg_pixels_host(const stk_jpeg_frame *f, const int16_t *coef, int color,
                                       int rx, int ry, int rw, int rh, uint8_t *dst,
                                       int64_t pitch) {
  if (rw <= 0 || rh <= 0) rx = 0, ry = 0, rw = f->width, rh = f->height;
  if (stk_jpeg_frame_problem(f)) return -1;
  uint8_t *planes = malloc((size_t)f->total_blocks * 64);
  if (!planes) return -1;
  for (int64_t g = 0; g < f->total_blocks; g++)
    stk_jpeg_idct_at(f, coef, planes, g, color, rx, ry, rw, rh);
  stk_jpeg_plane pl[STK_JPEG_MAX_COMP];
  stk_jpeg_planes(f, planes, pl);
  for (int y = 0; y < rh; y++)
    for (int x = 0; x < rw; x++)
      stk_jpeg_region_pixel(pl, f->ncomp, color, rx, ry, x, y, dst, pitch);
  free(planes);
  return 0;
}

#endif
