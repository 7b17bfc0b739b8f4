/*
 * Huffman decoding of baseline JPEG scans to coefficients, shared by the CUDA kernels
 * (src/cuda/jpeg_huffman.cu) and host code (tests, fallbacks): STK_HD functions over
 * explicit arrays, so a host loop running "thread" g = 0..T-1 phase by phase computes
 * exactly what the kernels compute.
 *
 * Input: the entropy-coded bytes with 0xFF00 stuffing and RSTn markers removed (the host
 * parser, src/codecs/jpeg_frame.c, does that), cut into segments (one per restart
 * interval; one in all without DRI). Output: the coefficient layout of jpeg_frame.h.
 *
 * The parallel decoder (after Weissenberger & Schmidt's self-synchronising decoding): each
 * segment is cut into subsequences of S bits. A decoder state is (bit position, data
 * unit within the MCU) at a data unit's first bit. Subsequence g decodes the data units
 * that start in [its first bit, limit_g); its start state is the state after subsequence
 * g - 1's last unit, known only for a segment's first subsequence. Huffman codes
 * resynchronise quickly: a decode started at an arbitrary bit usually falls into the true
 * unit boundaries within a few units. But the unit within the MCU (which tables apply,
 * which component is filled) does not resynchronise by itself when components share
 * tables, so a single guess per subsequence is often wrong for good. Hence:
 *   guess:   each subsequence is decoded STK_JPEG_GUESSES times (as if unit 0, 1, ... of
 *            the MCU started there; fewer when the MCU has fewer units), starting
 *            STK_JPEG_GUESS_LEAD bits before its first bit (so that a guess has usually
 *            synchronised when it gets there); each guess records its end state
 *            and the first STK_JPEG_GUESS_MARKS unit boundaries it passes in
 *            [first bit, limit) with the units decoded and the DC differences summed from
 *            each of them to its end (a guess meeting an invalid code restarts a bit further
 *            and forgets its marks: what it recorded must be a decode without failure);
 *   resolve: per segment, one thread walks from the known start: knowing the true start
 *            state E of subsequence g, it looks for E among the marks of g's guesses; a
 *            guess that passed through E decodes g truly from there on (decoding is
 *            deterministic in the state), so g ends where that guess ended, with the units
 *            and DC sums recorded at the mark; when no guess passed through E (rare), the
 *            thread decodes g itself. The walk sums the unit counts and DC differences:
 *            each subsequence's start state, first data unit and DC predictors;
 *   write:   each subsequence decodes once more from its true start, writing de-zigzagged
 *            coefficients with resolved DC.
 * Every decode is bounded by its subsequence (and a unit count), so corrupt streams end;
 * the resolve pass reports a segment whose decode failed or whose units do not add up.
 */
#ifndef STOKER_SHARED_JPEG_HUFFMAN_H
#define STOKER_SHARED_JPEG_HUFFMAN_H

#include <stdint.h>

#include "gpu_common.h"
#include "jpeg_frame.h"

/* Codes up to this many bits are found with one table look-up; longer ones (rare) by the
 * canonical maxcode / valoff search. */
#define STK_JPEG_LOOKUP_BITS 9
/* Data units per MCU at most (T.81 allows 10; the parser takes at most 4 + 1 + 1). */
#define STK_JPEG_MAX_UNITS   10

/* One Huffman table as the decoder reads it. */
typedef struct {
  /* For each 9-bit prefix: (code length << 8) | symbol; 0 when the code is longer (or
   * the prefix starts no code). */
  uint16_t lookup[1 << STK_JPEG_LOOKUP_BITS];
  /* Canonical decoding (T.81 F.2.2.3): maxcode[l] is the largest code of length l
   * (-1: none), symbol index = code + valoff[l]; maxcode[17] is a sentinel. */
  int32_t maxcode[18];
  int32_t valoff[17];
  uint8_t vals[256];
} stk_jpeg_htable;

/* The tables of one image, by the indices the components name (Td, Ta). */
typedef struct {
  stk_jpeg_htable dc[4], ac[4];
} stk_jpeg_huffman;

/* ---- building tables (host; plain C, also fine in device code) ---- */

/* Fills t from the DHT counts (bits[l] codes of length l + 1, l = 0..15) and symbols;
 * returns 0, or -1 when the counts over-fill the code space (a corrupt table). */
STK_HD int stk_jpeg_htable_build(stk_jpeg_htable *t, const uint8_t bits[16], const uint8_t *vals,
                                 int nvals) {
  for (int i = 0; i < (1 << STK_JPEG_LOOKUP_BITS); i++) t->lookup[i] = 0;
  for (int i = 0; i < 256; i++) t->vals[i] = i < nvals ? vals[i] : 0;
  int32_t code = 0, k = 0;
  for (int l = 1; l <= 16; l++) {
    int cnt = bits[l - 1];
    /* Codes of length l must fit in l bits without the all-ones code (T.81 C; libjpeg
     * refuses such tables too): checked before anything is written. */
    if (cnt && code + cnt >= (1 << l)) return -1;
    t->valoff[l] = k - code;
    t->maxcode[l] = cnt ? code + cnt - 1 : -1;
    for (int j = 0; j < cnt; j++, code++, k++) {
      if (l <= STK_JPEG_LOOKUP_BITS) {
        int shift = STK_JPEG_LOOKUP_BITS - l;
        for (int e = 0; e < (1 << shift); e++)
          t->lookup[(code << shift) | e] = (uint16_t)((l << 8) | t->vals[k]);
      }
    }
    code <<= 1;
  }
  t->maxcode[0] = -1;
  t->valoff[0] = 0;
  t->maxcode[17] = 0x7fffffff;
  return 0;
}

/* ---- the bit reader ---- */

#ifdef STK_JPEG_COUNT_SYMBOLS
/* Work measurement on the host (bench/tools/jpeg_huffman_work.c): symbols decoded. */
extern unsigned long long stk_jpeg_symbols_decoded;
#endif

/* Decodes one symbol from the 32 bits `bits`; returns the symbol and sets *len, or
 * returns -1 (no such code). */
STK_HD int stk_jpeg_decode_symbol(const stk_jpeg_htable *t, uint32_t bits, int *len) {
#ifdef STK_JPEG_COUNT_SYMBOLS
  stk_jpeg_symbols_decoded++;
#endif
  uint32_t e = t->lookup[bits >> (32 - STK_JPEG_LOOKUP_BITS)];
  if (e) {
    *len = (int)(e >> 8);
    return (int)(e & 0xff);
  }
  int l = STK_JPEG_LOOKUP_BITS + 1;
  int32_t code = (int32_t)(bits >> (32 - l));
  while (code > t->maxcode[l]) {
    if (++l > 16) return -1;
    code = (int32_t)(bits >> (32 - l));
  }
  *len = l;
  return t->vals[(code + t->valoff[l]) & 0xff];
}

/* The signed value of an s-bit magnitude category (T.81 F.2.2.1, EXTEND). */
STK_HD int stk_jpeg_extend(uint32_t v, int s) {
  return v < (1u << (s - 1)) ? (int)v - (1 << s) + 1 : (int)v;
}

/* T.81 Figure A.6: natural index of the zigzag index z (one table per side: device code
 * reads a __device__ array, host code a static one). */
#define STK_JPEG_NATURAL_INIT                                                                     \
  {                                                                                               \
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27,   \
        20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, \
        58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63                            \
  }
#ifdef __CUDACC__
static __device__ const uint8_t stk_jpeg_natural_dev[64] = STK_JPEG_NATURAL_INIT;
#endif
static const uint8_t stk_jpeg_natural_host[64] = STK_JPEG_NATURAL_INIT;

STK_HD int stk_jpeg_natural(int z) {
#ifdef __CUDA_ARCH__
  return stk_jpeg_natural_dev[z & 63];
#else
  return stk_jpeg_natural_host[z & 63];
#endif
}

/* A bit reader over data[0..end): a 64-bit buffer, MSB first, refilled a byte at a time
 * (a symbol costs a shift and about one byte load). Bytes at or beyond `end` read as 0xFF
 * (a segment is padded with 1-bits), so decoding never touches memory outside
 * data[0..end). */
typedef struct {
  const uint8_t *data;
  uint32_t end;  /* bytes */
  uint32_t next; /* the next byte to load */
  uint64_t buf;  /* valid bits at the top */
  int n;         /* valid bits, >= 33 after a refill */
} stk_jpeg_bits;

STK_HD void stk_jpeg_bits_refill(stk_jpeg_bits *r) {
  while (r->n <= 56) {
    uint64_t b = r->next < r->end ? r->data[r->next] : 0xFFu;
    r->next++;
    r->buf |= b << (56 - r->n);
    r->n += 8;
  }
}

STK_HD void stk_jpeg_bits_init(stk_jpeg_bits *r, const uint8_t *data, uint32_t end, uint32_t pos) {
  r->data = data;
  r->end = end;
  r->next = pos >> 3;
  r->buf = 0;
  r->n = 0;
  stk_jpeg_bits_refill(r);
  r->buf <<= pos & 7;
  r->n -= (int)(pos & 7);
}

/* The bit position of the next unread bit. */
STK_HD uint32_t stk_jpeg_bits_pos(const stk_jpeg_bits *r) { return r->next * 8 - (uint32_t)r->n; }

/* The next 32 bits (valid after a refill). */
STK_HD uint32_t stk_jpeg_bits_peek(const stk_jpeg_bits *r) { return (uint32_t)(r->buf >> 32); }

/* Drops k <= 32 bits and refills. */
STK_HD void stk_jpeg_bits_skip(stk_jpeg_bits *r, int k) {
  r->buf <<= k;
  r->n -= k;
  stk_jpeg_bits_refill(r);
}

/* Decodes one data unit from the reader: its DC difference in *dc and, when `out` is not
 * NULL, its AC coefficients at their natural indices (out[0] is left alone; the caller
 * zeroes the block first). Returns 0, or -1 on an invalid code or a run past
 * coefficient 63 (the reader is then somewhere in the unit). */
STK_HD int stk_jpeg_decode_unit(stk_jpeg_bits *r, const stk_jpeg_htable *dct,
                                const stk_jpeg_htable *act, int *dc, int16_t *out) {
  int len;
  uint32_t bits = stk_jpeg_bits_peek(r);
  int s = stk_jpeg_decode_symbol(dct, bits, &len);
  if (s < 0 || s > 11) return -1;
  /* A code (<= 16 bits) and its value (<= 11 bits) fit in the 32 bits peeked. */
  *dc = s ? stk_jpeg_extend((bits << len) >> (32 - s), s) : 0;
  stk_jpeg_bits_skip(r, len + s);
  for (int z = 1; z < 64;) {
    bits = stk_jpeg_bits_peek(r);
    int rs = stk_jpeg_decode_symbol(act, bits, &len);
    if (rs < 0) return -1;
    int run = rs >> 4, sz = rs & 15;
    if (sz == 0) {
      stk_jpeg_bits_skip(r, len);
      if (run != 15) break; /* EOB */
      z += 16;              /* ZRL */
      continue;
    }
    z += run;
    if (z > 63 || sz > 10) return -1;
    if (out) out[stk_jpeg_natural(z)] = (int16_t)stk_jpeg_extend((bits << len) >> (32 - sz), sz);
    stk_jpeg_bits_skip(r, len + sz);
    z++;
  }
  return 0;
}

/* ---- MCU geometry ---- */

/* The component of data unit u (0 <= u < blocks_per_mcu) of an MCU and its place (dx, dy)
 * within the component's h x v blocks of the MCU. */
STK_HD int stk_jpeg_unit_comp(const stk_jpeg_frame *f, int u, int *dx, int *dy) {
  for (int c = 0; c < f->ncomp; c++) {
    int n = f->comp[c].h * f->comp[c].v;
    if (u < n) {
      *dx = u % f->comp[c].h;
      *dy = u / f->comp[c].h;
      return c;
    }
    u -= n;
  }
  *dx = *dy = 0;
  return 0;
}

/* Index of the block that data unit k (counted over the whole scan) fills. */
STK_HD int64_t stk_jpeg_unit_block(const stk_jpeg_frame *f, int64_t k, int *comp) {
  int64_t m = k / f->blocks_per_mcu;
  int dx, dy;
  int c = stk_jpeg_unit_comp(f, (int)(k % f->blocks_per_mcu), &dx, &dy);
  const stk_jpeg_component *cp = &f->comp[c];
  int64_t bx = (m % f->mcus_x) * cp->h + dx, by = (m / f->mcus_x) * cp->v + dy;
  *comp = c;
  return cp->block0 + by * cp->bw + bx;
}

/* ---- segments and subsequences ---- */

/* One restart interval (or the whole scan) of one image's un-stuffed stream. */
typedef struct {
  uint32_t begin, end; /* bytes */
  int64_t unit0;       /* the first data unit it codes */
  int32_t units;       /* data units it codes */
  int32_t sub0;        /* its first subsequence (index into the image's subsequences) */
} stk_jpeg_segment;

/* One subsequence: data units starting in [its first bit, limit) belong to it. */
typedef struct {
  uint32_t first; /* its first bit (the guess of its start) */
  uint32_t limit; /* bit */
  int32_t seg;    /* its segment */
  int32_t head;   /* 1: the segment's first subsequence (its start state is known) */
} stk_jpeg_subseq;

/* A decoder state packed in 64 bits (stored and compared in one access): bit position in
 * bits 0..31, unit within the MCU in bits 32..39, bit 62: the decode failed. */
#define STK_JPEG_STATE(pos, unit) ((uint64_t)(uint32_t)(pos) | ((uint64_t)(unit) << 32))
#define STK_JPEG_STATE_BAD        (1ull << 62)
STK_HD uint32_t stk_jpeg_state_pos(uint64_t s) { return (uint32_t)s; }
STK_HD int stk_jpeg_state_unit(uint64_t s) { return (int)((s >> 32) & 0xff); }

/* The default subsequence length in bits (STK_JPEG_SUBSEQ_BITS overrides it on the GPU).
 * Longer subsequences share the guesses' lead (STK_JPEG_GUESS_LEAD) over more bits and
 * miss less; shorter ones give more threads. On the files of docs/gpu.md the stage
 * decodes 2.64x the symbols of a sequential decode at 4096 bits, 4.09x at 1024 (the
 * link pass's version: 4.66x at 1024); on the H100 2048 was as fast as 4096 on 59 KB
 * files and faster on 39 KB ones (more threads per image). */
#define STK_JPEG_SUBSEQ_DEFAULT 2048

/* Number of subsequences of `s` bits a segment of `bytes` bytes is cut into (>= 1). */
STK_HD int32_t stk_jpeg_subseq_count(uint32_t bytes, uint32_t s) {
  uint64_t bits = (uint64_t)bytes * 8;
  return bits == 0 ? 1 : (int32_t)((bits + s - 1) / s);
}

/* Segment k's bytes: restarts[k - 1] (0 for k = 0) to restarts[k] (scan_bytes after the
 * last). */
STK_HD void stk_jpeg_segment_bytes(uint32_t scan_bytes, const int32_t *restarts, int n_restarts,
                                   int k, uint32_t *begin, uint32_t *end) {
  *begin = k == 0 ? 0 : (uint32_t)restarts[k - 1];
  *end = k == n_restarts ? scan_bytes : (uint32_t)restarts[k];
}

/* Number of subsequences of `s` bits over all segments of an image. */
STK_HD int64_t stk_jpeg_plan_count(uint32_t scan_bytes, const int32_t *restarts, int n_restarts,
                                   uint32_t s) {
  int64_t n = 0;
  for (int k = 0; k <= n_restarts; k++) {
    uint32_t b, e;
    stk_jpeg_segment_bytes(scan_bytes, restarts, n_restarts, k, &b, &e);
    n += stk_jpeg_subseq_count(e - b, s);
  }
  return n;
}

/* Fills the n_restarts + 1 segments and the stk_jpeg_plan_count subsequences of an image
 * whose restart intervals the parser checked (n_restarts + 1 intervals of
 * frame->restart_interval MCUs, the last possibly shorter). */
STK_HD void stk_jpeg_plan_fill(const stk_jpeg_frame *f, uint32_t scan_bytes,
                               const int32_t *restarts, int n_restarts, uint32_t s,
                               stk_jpeg_segment *segs, stk_jpeg_subseq *subs) {
  const int64_t mcus = (int64_t)f->mcus_x * f->mcus_y;
  const int64_t ri = f->restart_interval > 0 ? f->restart_interval : mcus;
  int32_t g = 0;
  for (int k = 0; k <= n_restarts; k++) {
    stk_jpeg_segment *sg = &segs[k];
    stk_jpeg_segment_bytes(scan_bytes, restarts, n_restarts, k, &sg->begin, &sg->end);
    int64_t m0 = (int64_t)k * ri, m1 = m0 + ri < mcus ? m0 + ri : mcus;
    sg->unit0 = m0 * f->blocks_per_mcu;
    sg->units = (int32_t)((m1 > m0 ? m1 - m0 : 0) * f->blocks_per_mcu);
    sg->sub0 = g;
    int32_t n = stk_jpeg_subseq_count(sg->end - sg->begin, s);
    for (int32_t i = 0; i < n; i++, g++) {
      uint64_t first = (uint64_t)sg->begin * 8 + (uint64_t)i * s;
      uint64_t limit = first + s < (uint64_t)sg->end * 8 ? first + s : (uint64_t)sg->end * 8;
      subs[g].first = (uint32_t)first;
      subs[g].limit = (uint32_t)(i == n - 1 ? (uint64_t)sg->end * 8 : limit);
      subs[g].seg = k;
      subs[g].head = i == 0;
    }
  }
}

/* What decoding one subsequence from a start state gives. */
typedef struct {
  uint64_t end;                  /* state after its last data unit */
  int32_t units;                 /* data units decoded */
  int32_t dc[STK_JPEG_MAX_COMP]; /* DC differences summed per component */
} stk_jpeg_subresult;

/* The context a subsequence decode needs: one image's stream, frame and tables. */
typedef struct {
  const uint8_t *data; /* the image's un-stuffed stream */
  const stk_jpeg_frame *frame;
  const stk_jpeg_huffman *tables;
  const stk_jpeg_segment *segs;
  const stk_jpeg_subseq *subs;
} stk_jpeg_image_view;

/* Unit boundaries a guess records (in [first bit, limit) of its subsequence). The
 * resolve walk needs the true start among them: a guess that synchronised within its
 * lead passes through it first; more marks catch guesses synchronising a little later. */
#ifndef STK_JPEG_GUESS_MARKS
#define STK_JPEG_GUESS_MARKS 2
#endif
/* Bits a guess decodes before its subsequence's first bit (to synchronise there). */
#ifndef STK_JPEG_GUESS_LEAD
#define STK_JPEG_GUESS_LEAD 1024
#endif
/* An unused mark (no decoder state has every bit set). */
#define STK_JPEG_NO_MARK (~0ull)

/* A decode's per-component DC sums (or predictors) in three named fields, added to and
 * read through a component index by selects. Not an array indexed by the component: on
 * the H100, nvcc 13.0's optimised build of the guess kernel lost DC differences when the
 * sums were such an array and the marks copied it (docs/gpu.md, "Huffman stage"), while
 * the same code built with -G, and on the host, was right. */
#if STK_JPEG_MAX_COMP != 3
#error "stk_jpeg_dc3 holds three components"
#endif
typedef struct {
  int32_t c0, c1, c2;
} stk_jpeg_dc3;

/* Adds x to component c's sum (wrapping: a corrupt stream must not overflow into
 * undefined behaviour). */
STK_HD void stk_jpeg_dc3_add(stk_jpeg_dc3 *s, int c, int32_t x) {
  const uint32_t u = (uint32_t)x;
  s->c0 = (int32_t)((uint32_t)s->c0 + (c == 0 ? u : 0u));
  s->c1 = (int32_t)((uint32_t)s->c1 + (c == 1 ? u : 0u));
  s->c2 = (int32_t)((uint32_t)s->c2 + (c == 2 ? u : 0u));
}

STK_HD int32_t stk_jpeg_dc3_get(const stk_jpeg_dc3 *s, int c) {
  return c == 0 ? s->c0 : c == 1 ? s->c1 : s->c2;
}

/* The marks of one decode while it runs: boundary states, and the units and DC sums
 * counted when it passed them. */
typedef struct {
  int n;
  uint64_t state[STK_JPEG_GUESS_MARKS];
  int32_t units[STK_JPEG_GUESS_MARKS];
  stk_jpeg_dc3 dc[STK_JPEG_GUESS_MARKS];
} stk_jpeg_marks;

/* Decodes the data units of subsequence `g` from state `start` (whose bit may precede the
 * subsequence's first: a guess's lead). With `coef` (the image's coefficient array) it
 * also writes them: unit0 is the first unit's index over the scan, dcpred the DC
 * predictors at the start; units beyond the segment's count are not written. A failed
 * decode stops with STK_JPEG_STATE_BAD set in the end state, unless `resync` (guesses):
 * then it starts again one bit after the failed unit's start, as unit `start`'s unit of
 * the MCU, with its counts and marks cleared. With `mk`, the boundaries the decode
 * passes in [first bit, limit) are recorded there (the first STK_JPEG_GUESS_MARKS). */
STK_HD stk_jpeg_subresult stk_jpeg_decode_subseq_ex(const stk_jpeg_image_view *im, int32_t g,
                                                    uint64_t start, int16_t *coef, int64_t unit0,
                                                    const int32_t *dcpred, int resync,
                                                    stk_jpeg_marks *mk) {
  const stk_jpeg_subseq *sq = &im->subs[g];
  const stk_jpeg_segment *sg = &im->segs[sq->seg];
  const stk_jpeg_frame *f = im->frame;
  stk_jpeg_subresult r;
  r.units = 0;
  stk_jpeg_dc3 sum = {0, 0, 0}, pred = {0, 0, 0};
  if (dcpred) pred.c0 = dcpred[0], pred.c1 = dcpred[1], pred.c2 = dcpred[2];
  if (mk) mk->n = 0;
  uint32_t pos = stk_jpeg_state_pos(start);
  int u = stk_jpeg_state_unit(start);
  const uint32_t seg_end_bit = sg->end * 8;
  /* A unit needs at least 2 bits; bounding the count keeps a corrupt stream finite. */
  const uint32_t from = pos < sq->first ? pos : sq->first;
  const int32_t max_units = (int32_t)((sq->limit - from) / 2 + 2);
  uint64_t bad = 0;
  if (u >= f->blocks_per_mcu) bad = STK_JPEG_STATE_BAD;
  stk_jpeg_bits rd;
  stk_jpeg_bits_init(&rd, im->data, sg->end, pos);
  while (!bad && pos < sq->limit && r.units < max_units) {
    if (mk && pos >= sq->first && mk->n < STK_JPEG_GUESS_MARKS) {
      /* Constant indices only (unrolled): the marks can stay in registers on a GPU. */
      for (int j = 0; j < STK_JPEG_GUESS_MARKS; j++) {
        if (j != mk->n) continue;
        mk->state[j] = STK_JPEG_STATE(pos, u);
        mk->units[j] = r.units;
        mk->dc[j] = sum;
      }
      mk->n++;
    }
    int dx, dy;
    int c = stk_jpeg_unit_comp(f, u, &dx, &dy);
    const stk_jpeg_component *cp = &f->comp[c];
    int64_t k = unit0 + r.units;
    int16_t *blk = 0;
    if (coef && k >= sg->unit0 && k < sg->unit0 + sg->units) {
      int cc;
      blk = coef + stk_jpeg_unit_block(f, k, &cc) * 64;
      for (int i = 0; i < 64; i++) blk[i] = 0;
    }
    int dc;
    int fail = stk_jpeg_decode_unit(&rd, &im->tables->dc[cp->dc_table],
                                    &im->tables->ac[cp->ac_table], &dc, blk);
    uint32_t p = stk_jpeg_bits_pos(&rd);
    if ((fail || p > seg_end_bit) && resync && pos + 8 <= seg_end_bit) {
      /* A guess that met an invalid code tries again one bit further, as a new decode:
       * what it recorded so far was not a true decode. */
      pos++;
      u = stk_jpeg_state_unit(start);
      r.units = 0;
      sum.c0 = sum.c1 = sum.c2 = 0;
      if (mk) mk->n = 0;
      stk_jpeg_bits_init(&rd, im->data, sg->end, pos);
      continue;
    }
    if (fail || p > seg_end_bit) {
      /* The segment's 1-bit padding decodes to no code: past the last unit that is the
       * normal end, elsewhere the stream is corrupt. */
      if (pos + 8 <= seg_end_bit) bad = STK_JPEG_STATE_BAD;
      pos = seg_end_bit;
      break;
    }
    pos = p;
    /* Wrapping sums: a corrupt stream must not overflow into undefined behaviour. */
    stk_jpeg_dc3_add(&pred, c, dc);
    stk_jpeg_dc3_add(&sum, c, dc);
    if (blk) blk[0] = (int16_t)stk_jpeg_dc3_get(&pred, c);
    r.units++;
    if (++u == f->blocks_per_mcu) u = 0;
  }
  r.dc[0] = sum.c0, r.dc[1] = sum.c1, r.dc[2] = sum.c2;
  r.end = STK_JPEG_STATE(pos, u) | bad;
  return r;
}

/* stk_jpeg_decode_subseq_ex without resynchronisation or marks: the true decodes. */
STK_HD stk_jpeg_subresult stk_jpeg_decode_subseq(const stk_jpeg_image_view *im, int32_t g,
                                                 uint64_t start, int16_t *coef, int64_t unit0,
                                                 const int32_t *dcpred) {
  return stk_jpeg_decode_subseq_ex(im, g, start, coef, unit0, dcpred, 0, 0);
}

/* ---- the phases, one call per (simulated) thread ---- */

/* Units per MCU the decoder takes: the parser takes at most 4 + 1 + 1. */
#define STK_JPEG_MAX_PHASES 6
/* Guesses per subsequence at most: those of units 0 .. STK_JPEG_GUESSES - 1 of the MCU.
 * After its lead a guess's unit of the MCU no longer depends much on the one it started
 * with, so fewer guesses with a longer lead miss about as rarely for less work (4 guesses
 * with 1024 bits of lead: 2.64x a sequential decode's symbols and 22 misses on the files
 * of docs/gpu.md; 6 with 768: 2.90x, 21). */
#ifndef STK_JPEG_GUESSES
#define STK_JPEG_GUESSES 4
#endif

/* The guesses of a subsequence of frame f. */
STK_HD int stk_jpeg_guess_count(const stk_jpeg_frame *f) {
  return f->blocks_per_mcu < STK_JPEG_GUESSES ? f->blocks_per_mcu : STK_JPEG_GUESSES;
}

/* What a mark leads to: the units and DC differences from the boundary to its guess's
 * end (16 bytes). */
typedef struct {
  int32_t units;
  int32_t dc[STK_JPEG_MAX_COMP];
} stk_jpeg_rest;

/* The guess pass's records, per (subsequence g, guess p): i = g * STK_JPEG_GUESSES + p.
 * The resolve walk scans a subsequence's ends and marks (contiguous), then reads one
 * rest. */
typedef struct {
  uint64_t *end;       /* [i]: the guess's end state */
  uint64_t *mark;      /* [i * STK_JPEG_GUESS_MARKS + j]: boundary j, or STK_JPEG_NO_MARK */
  stk_jpeg_rest *rest; /* [i * STK_JPEG_GUESS_MARKS + j]: from boundary j to the end */
} stk_jpeg_guesses;

/* The records from subsequence `sub` on (an image's within a batch's). */
STK_HD stk_jpeg_guesses stk_jpeg_guesses_at(const stk_jpeg_guesses *gs, int64_t sub) {
  stk_jpeg_guesses r;
  int64_t i = sub * STK_JPEG_GUESSES;
  r.end = gs->end + i;
  r.mark = gs->mark + i * STK_JPEG_GUESS_MARKS;
  r.rest = gs->rest + i * STK_JPEG_GUESS_MARKS;
  return r;
}

/* Guess pass, thread (g, p): decodes subsequence g as if unit p of an MCU started
 * STK_JPEG_GUESS_LEAD bits before its first bit (a segment's first subsequence: from its
 * known start, p = 0 only, without resynchronising) and stores its end, marks and rests. */
STK_HD void stk_jpeg_guess_step(const stk_jpeg_image_view *im, int32_t g, int p,
                                const stk_jpeg_guesses *gs) {
  const stk_jpeg_subseq *sq = &im->subs[g];
  if (p >= stk_jpeg_guess_count(im->frame) || (sq->head && p > 0)) return;
  uint32_t seg_first = im->segs[sq->seg].begin * 8, from = sq->first;
  if (!sq->head)
    from = from - seg_first > STK_JPEG_GUESS_LEAD ? from - STK_JPEG_GUESS_LEAD : seg_first;
  stk_jpeg_marks mk;
  stk_jpeg_subresult r =
      stk_jpeg_decode_subseq_ex(im, g, STK_JPEG_STATE(from, p), 0, 0, 0, !sq->head, &mk);
  int64_t i = (int64_t)g * STK_JPEG_GUESSES + p;
  gs->end[i] = r.end;
  for (int j = 0; j < STK_JPEG_GUESS_MARKS; j++) {
    int64_t m = i * STK_JPEG_GUESS_MARKS + j;
    gs->mark[m] = j < mk.n ? mk.state[j] : STK_JPEG_NO_MARK;
    if (j >= mk.n) continue;
    gs->rest[m].units = r.units - mk.units[j];
    for (int c = 0; c < STK_JPEG_MAX_COMP; c++)
      gs->rest[m].dc[c] = (int32_t)((uint32_t)r.dc[c] - (uint32_t)stk_jpeg_dc3_get(&mk.dc[j], c));
  }
}

/* Subsequence g's true decode from its true start `e`, when a guess passed through e
 * (or e is at or past its limit: then it decodes nothing); returns 0 when neither. */
STK_HD int stk_jpeg_find_mark(const stk_jpeg_image_view *im, int32_t g, const stk_jpeg_guesses *gs,
                              uint64_t e, stk_jpeg_subresult *out) {
  const stk_jpeg_subseq *sq = &im->subs[g];
  if (stk_jpeg_state_pos(e) >= sq->limit) {
    out->end = e;
    out->units = 0;
    for (int c = 0; c < STK_JPEG_MAX_COMP; c++) out->dc[c] = 0;
    return 1;
  }
  const int n = sq->head ? 1 : stk_jpeg_guess_count(im->frame);
  const int64_t i0 = (int64_t)g * STK_JPEG_GUESSES;
  for (int q = 0; q < n; q++)
    for (int j = 0; j < STK_JPEG_GUESS_MARKS; j++) {
      int64_t m = (i0 + q) * STK_JPEG_GUESS_MARKS + j;
      if (gs->mark[m] != e) continue;
      stk_jpeg_rest rs = gs->rest[m];
      out->end = gs->end[i0 + q];
      out->units = rs.units;
      for (int c = 0; c < STK_JPEG_MAX_COMP; c++) out->dc[c] = rs.dc[c];
      return 1;
    }
  return 0;
}

/* The resolve walk's running sums: records subsequence g's first unit and DC predictors,
 * then adds its decode `r`. */
typedef struct {
  int64_t u;
  int32_t pred[STK_JPEG_MAX_COMP];
  int bad;
} stk_jpeg_walk;

STK_HD void stk_jpeg_walk_add(stk_jpeg_walk *w, int32_t g, const stk_jpeg_subresult *r,
                              int64_t *unit0, int32_t *dcpred) {
  unit0[g] = w->u;
  for (int c = 0; c < STK_JPEG_MAX_COMP; c++) {
    dcpred[g * STK_JPEG_MAX_COMP + c] = w->pred[c];
    w->pred[c] = (int32_t)((uint32_t)w->pred[c] + (uint32_t)r->dc[c]);
  }
  w->u += r->units;
  if (r->end & STK_JPEG_STATE_BAD) w->bad = 1;
}

/* Resolve pass, thread `seg`: walks the segment's subsequences from its known start.
 * Knowing subsequence g's true start, its true decode is found among its guesses' marks
 * (stk_jpeg_find_mark) or, when no guess passed through that state, decoded here. Its end
 * is g + 1's start. Records each subsequence's start, first data unit and DC predictors
 * (exclusive prefix sums). Returns 0, or -1 when a decode failed or the units do not add
 * up to the interval's (a corrupt stream); *misses counts the subsequences decoded here. */
STK_HD int stk_jpeg_resolve_segment(const stk_jpeg_image_view *im, int32_t seg, int32_t nsubs,
                                    const stk_jpeg_guesses *gs, uint64_t *start, int64_t *unit0,
                                    int32_t *dcpred, int32_t *misses) {
  const stk_jpeg_segment *sg = &im->segs[seg];
  stk_jpeg_walk w = {sg->unit0, {0, 0, 0}, 0};
  uint64_t e = STK_JPEG_STATE(sg->begin * 8, 0);
  for (int32_t g = sg->sub0; g < nsubs && (g == sg->sub0 || !im->subs[g].head); g++) {
    start[g] = e;
    stk_jpeg_subresult cur;
    if (!stk_jpeg_find_mark(im, g, gs, e, &cur)) {
      cur = stk_jpeg_decode_subseq(im, g, e, 0, 0, 0);
      ++*misses;
    }
    stk_jpeg_walk_add(&w, g, &cur, unit0, dcpred);
    e = cur.end & ~STK_JPEG_STATE_BAD;
  }
  return w.bad || w.u != sg->unit0 + sg->units ? -1 : 0;
}

/* Write pass, thread g: decodes subsequence g once more, writing its coefficients. */
STK_HD stk_jpeg_subresult stk_jpeg_write_step(const stk_jpeg_image_view *im, int32_t g,
                                              const uint64_t *start, const int64_t *unit0,
                                              const int32_t *dcpred, int16_t *coef) {
  return stk_jpeg_decode_subseq(im, g, start[g], coef, unit0[g], dcpred + g * STK_JPEG_MAX_COMP);
}

#endif
