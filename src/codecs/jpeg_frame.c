/* JPEG parsing for stoker's own GPU decoder (see jpeg_frame.h): markers walked once,
 * the frame, tables and restart interval checked against what the decoder takes, the
 * scan un-stuffed with memchr (the bytes between 0xFF are copied in bulk). */
#include "jpeg_frame.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scans whose bit positions do not fit 32 bits are refused (512 MB of coded data). */
#define MAX_SCAN_BYTES ((size_t)1 << 29)

typedef struct {
  const uint8_t *p;
  size_t n;
  stk_jpeg_frame *f;
  stk_jpeg_huffman *t;
  bool have_sof, have_dc[4], have_ac[4], have_q[4];
  bool adobe_rgb; /* Adobe APP14 with transform 0 */
  int comp_id[STK_JPEG_MAX_COMP];
  char *why;
  size_t whylen;
} parser;

static int refuse(parser *ps, const char *fmt, ...) {
  if (ps->why && ps->whylen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->why, ps->whylen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int be16(const uint8_t *p) { return (p[0] << 8) | p[1]; }

/* T.81 Figure A.6 (zigzag index -> natural index) through the shared table. */
static int natural(int z) { return stk_jpeg_natural(z); }

static int parse_sof(parser *ps, const uint8_t *s, int len) {
  stk_jpeg_frame *f = ps->f;
  if (ps->have_sof) return refuse(ps, "two frame headers");
  if (len < 6) return refuse(ps, "frame header too short");
  if (s[0] != 8) return refuse(ps, "%d-bit samples (8-bit only)", s[0]);
  f->height = be16(s + 1);
  f->width = be16(s + 3);
  f->ncomp = s[5];
  if (f->width == 0 || f->height == 0)
    return refuse(ps, "dimensions %dx%d (a zero height needs DNL: not taken)", f->width, f->height);
  if (f->ncomp != 1 && f->ncomp != 3) return refuse(ps, "%d components (1 or 3 only)", f->ncomp);
  if (len < 6 + 3 * f->ncomp) return refuse(ps, "frame header too short");
  for (int c = 0; c < f->ncomp; c++) {
    const uint8_t *q = s + 6 + 3 * c;
    stk_jpeg_component *cp = &f->comp[c];
    ps->comp_id[c] = q[0];
    cp->h = q[1] >> 4;
    cp->v = q[1] & 15;
    cp->quant = q[2];
    if (cp->quant > 3) return refuse(ps, "component %d: quantisation table %d", c, cp->quant);
    if (cp->h < 1 || cp->h > 4 || cp->v < 1 || cp->v > 4)
      return refuse(ps, "component %d: sampling %dx%d", c, cp->h, cp->v);
    if (f->ncomp == 1) cp->h = cp->v = 1; /* one component: never interleaved */
  }
  if (f->ncomp == 3) {
    if (f->comp[0].h > 2 || f->comp[0].v > 2)
      return refuse(ps, "luma sampling %dx%d (1 or 2 only)", f->comp[0].h, f->comp[0].v);
    for (int c = 1; c < 3; c++)
      if (f->comp[c].h != 1 || f->comp[c].v != 1)
        return refuse(ps, "component %d: sampling %dx%d (chroma 1x1 only)", c, f->comp[c].h,
                      f->comp[c].v);
  }
  ps->have_sof = true;
  return 0;
}

static int parse_dht(parser *ps, const uint8_t *s, int len) {
  int i = 0;
  while (i < len) {
    if (len - i < 17) return refuse(ps, "Huffman table segment too short");
    int tc = s[i] >> 4, th = s[i] & 15, total = 0;
    if (tc > 1 || th > 3) return refuse(ps, "Huffman table class %d index %d", tc, th);
    for (int l = 0; l < 16; l++) total += s[i + 1 + l];
    if (total > 256 || len - i - 17 < total) return refuse(ps, "Huffman table too short");
    stk_jpeg_htable *t = tc ? &ps->t->ac[th] : &ps->t->dc[th];
    if (stk_jpeg_htable_build(t, s + i + 1, s + i + 17, total) != 0)
      return refuse(ps, "Huffman table %s%d: invalid code lengths", tc ? "AC" : "DC", th);
    (tc ? ps->have_ac : ps->have_dc)[th] = true;
    i += 17 + total;
  }
  return 0;
}

static int parse_dqt(parser *ps, const uint8_t *s, int len) {
  int i = 0;
  while (i < len) {
    int pq = s[i] >> 4, tq = s[i] & 15, n = pq ? 128 : 64;
    if (pq > 1 || tq > 3) return refuse(ps, "quantisation table precision %d index %d", pq, tq);
    if (len - i - 1 < n) return refuse(ps, "quantisation table too short");
    for (int z = 0; z < 64; z++)
      ps->f->quant[tq][natural(z)] = (uint16_t)(pq ? be16(s + i + 1 + 2 * z) : s[i + 1 + z]);
    ps->have_q[tq] = true;
    i += 1 + n;
  }
  return 0;
}

/* Adobe APP14 with transform 0: on 3 components, RGB coded as is (not YCbCr). It
 * usually comes before the frame header: checked at the scan. */
static void parse_app14(parser *ps, const uint8_t *s, int len) {
  if (len >= 12 && memcmp(s, "Adobe", 5) == 0 && s[11] == 0) ps->adobe_rgb = true;
}

/* Fills the geometry of jpeg_frame.h from the sampling factors. */
static void set_geometry(stk_jpeg_frame *f) {
  f->hmax = f->vmax = 1;
  for (int c = 0; c < f->ncomp; c++) {
    f->hmax = f->comp[c].h > f->hmax ? f->comp[c].h : f->hmax;
    f->vmax = f->comp[c].v > f->vmax ? f->comp[c].v : f->vmax;
  }
  f->mcus_x = (f->width + 8 * f->hmax - 1) / (8 * f->hmax);
  f->mcus_y = (f->height + 8 * f->vmax - 1) / (8 * f->vmax);
  f->blocks_per_mcu = 0;
  f->total_blocks = 0;
  for (int c = 0; c < f->ncomp; c++) {
    stk_jpeg_component *cp = &f->comp[c];
    cp->bw = f->mcus_x * cp->h;
    cp->bh = f->mcus_y * cp->v;
    cp->block0 = f->total_blocks;
    f->total_blocks += (int64_t)cp->bw * cp->bh;
    f->blocks_per_mcu += cp->h * cp->v;
  }
}

static int parse_sos(parser *ps, const uint8_t *s, int len) {
  stk_jpeg_frame *f = ps->f;
  if (!ps->have_sof) return refuse(ps, "scan before the frame header");
  if (len < 1 || len < 1 + 2 * s[0] + 3) return refuse(ps, "scan header too short");
  if (s[0] != f->ncomp)
    return refuse(ps, "scan of %d of %d components (one scan of all only)", s[0], f->ncomp);
  for (int c = 0; c < f->ncomp; c++) {
    if (s[1 + 2 * c] != ps->comp_id[c]) return refuse(ps, "scan component %d out of order", c);
    stk_jpeg_component *cp = &f->comp[c];
    cp->dc_table = s[2 + 2 * c] >> 4;
    cp->ac_table = s[2 + 2 * c] & 15;
    if (cp->dc_table > 3 || cp->ac_table > 3 || !ps->have_dc[cp->dc_table] ||
        !ps->have_ac[cp->ac_table])
      return refuse(ps, "component %d: missing Huffman table", c);
    if (!ps->have_q[cp->quant]) return refuse(ps, "component %d: missing quantisation table", c);
  }
  const uint8_t *e = s + 1 + 2 * s[0];
  if (e[0] != 0 || e[1] != 63 || e[2] != 0)
    return refuse(ps, "spectral selection %d..%d, approximation %d", e[0], e[1], e[2]);
  set_geometry(f);
  return 0;
}

int64_t stk__jpeg_unstuff(const uint8_t *data, size_t size, uint8_t *scan, size_t scan_cap,
                          size_t *scan_bytes, int32_t *restarts, int restarts_cap,
                          int *n_restarts) {
  size_t i = 0, o = 0;
  int nr = 0;
  for (;;) {
    const uint8_t *ff = memchr(data + i, 0xFF, size - i);
    size_t run = (ff ? (size_t)(ff - data) : size) - i;
    if (run > scan_cap - o) return -1;
    memcpy(scan + o, data + i, run);
    o += run;
    i += run;
    if (!ff || i + 1 >= size) break; /* no marker: the caller finds the file truncated */
    uint8_t m = data[i + 1];
    if (m == 0x00) {
      if (o == scan_cap) return -1;
      scan[o++] = 0xFF;
      i += 2;
    } else if (m >= 0xD0 && m <= 0xD7) {
      if (nr == restarts_cap) return -1;
      restarts[nr++] = (int32_t)o;
      i += 2;
    } else if (m == 0xFF) {
      i += 1; /* fill byte before a marker */
    } else {
      break; /* the marker that ends the scan */
    }
  }
  *scan_bytes = o;
  *n_restarts = nr;
  return (int64_t)i;
}

/* Expected number of restart markers: one between consecutive intervals. */
static int64_t restart_markers(const stk_jpeg_frame *f) {
  int64_t mcus = (int64_t)f->mcus_x * f->mcus_y;
  if (f->restart_interval == 0) return 0;
  return (mcus + f->restart_interval - 1) / f->restart_interval - 1;
}

/* After the scan: only EOI (possibly after fill or other non-frame segments) may follow. */
static int finish(parser *ps, size_t i) {
  while (i + 1 < ps->n) {
    if (ps->p[i] != 0xFF) return refuse(ps, "garbage after the scan");
    uint8_t m = ps->p[i + 1];
    if (m == 0xFF) {
      i++;
      continue;
    }
    if (m == 0xD9) return 0;
    if (m == 0xDA) return refuse(ps, "several scans (one scan only)");
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xCC) return refuse(ps, "second frame");
    if (m >= 0xD0 && m <= 0xD8) return refuse(ps, "marker 0x%02X after the scan", m);
    if (i + 4 > ps->n) break;
    size_t len = (size_t)be16(ps->p + i + 2);
    if (len < 2) return refuse(ps, "segment length %zu", len);
    i += 2 + len;
  }
  return refuse(ps, "truncated: no end-of-image marker");
}

int stk__jpeg_frame_parse(const uint8_t *data, size_t size, stk_jpeg_frame *frame,
                          stk_jpeg_huffman *tables, uint8_t *scan, size_t scan_cap,
                          size_t *scan_bytes, int32_t *restarts, int restarts_cap, int *n_restarts,
                          char *why, size_t whylen) {
  parser ps = {.p = data, .n = size, .f = frame, .t = tables, .why = why, .whylen = whylen};
  memset(frame, 0, sizeof *frame);
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return refuse(&ps, "not a JPEG (no SOI)");
  size_t i = 2;
  for (;;) {
    while (i < size && data[i] == 0xFF && i + 1 < size && data[i + 1] == 0xFF) i++;
    if (i + 4 > size) return refuse(&ps, "truncated before the scan");
    if (data[i] != 0xFF) return refuse(&ps, "no marker at byte %zu", i);
    uint8_t m = data[i + 1];
    int len = be16(data + i + 2);
    if (m == 0xD9 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01)
      return refuse(&ps, "marker 0x%02X before the scan", m);
    if (len < 2 || (size_t)len > size - i - 2) return refuse(&ps, "truncated segment 0x%02X", m);
    const uint8_t *s = data + i + 4;
    int n = len - 2, rc = 0;
    if (m == 0xC0 || m == 0xC1)
      rc = parse_sof(&ps, s, n);
    else if (m == 0xC2 || m == 0xC6)
      rc = refuse(&ps, "progressive JPEG");
    else if (m == 0xC9 || m == 0xCA || m == 0xCB || m == 0xCD || m == 0xCE || m == 0xCF)
      rc = refuse(&ps, "arithmetic coding");
    else if (m == 0xC3 || m == 0xC5 || m == 0xC7)
      rc = refuse(&ps, "lossless or hierarchical JPEG");
    else if (m == 0xC4)
      rc = parse_dht(&ps, s, n);
    else if (m == 0xDB)
      rc = parse_dqt(&ps, s, n);
    else if (m == 0xDD)
      frame->restart_interval = n >= 2 ? be16(s) : 0;
    else if (m == 0xEE)
      parse_app14(&ps, s, n);
    else if (m == 0xCC)
      rc = refuse(&ps, "arithmetic coding conditioning");
    if (rc) return rc;
    i += 2 + (size_t)len;
    if (m != 0xDA) continue;
    if ((rc = parse_sos(&ps, s, n)) != 0) return rc;
    break;
  }
  if (ps.adobe_rgb && frame->ncomp == 3)
    return refuse(&ps, "Adobe transform 0 (RGB-coded components)");
  if (size - i > MAX_SCAN_BYTES) return refuse(&ps, "scan larger than 512 MB");
  int64_t used = stk__jpeg_unstuff(data + i, size - i, scan, scan_cap, scan_bytes, restarts,
                                   restarts_cap, n_restarts);
  if (used < 0) return refuse(&ps, "scan buffer too small");
  if (finish(&ps, i + (size_t)used) != 0) return -1;
  int64_t want = restart_markers(frame);
  if (*n_restarts != want)
    return refuse(&ps, "%d restart markers, %lld expected", *n_restarts, (long long)want);
  return 0;
}

/* ---- the Huffman stage on the host ---- */

typedef struct {
  stk_jpeg_segment *segs;
  stk_jpeg_subseq *subs;
  stk_jpeg_guesses guess;
  uint64_t *start;
  int64_t *unit0;
  int32_t *dcpred;
} host_tmp;

static void host_tmp_free(host_tmp *t) {
  free(t->segs), free(t->subs), free(t->guess.end), free(t->guess.mark), free(t->guess.rest);
  free(t->start), free(t->unit0), free(t->dcpred);
}

static int host_tmp_alloc(host_tmp *t, int nsegs, int64_t nsubs) {
  size_t np = (size_t)nsubs * STK_JPEG_GUESSES, nm = np * STK_JPEG_GUESS_MARKS;
  t->segs = malloc(sizeof *t->segs * (size_t)nsegs);
  t->subs = malloc(sizeof *t->subs * (size_t)nsubs);
  t->guess.end = malloc(sizeof *t->guess.end * np);
  t->guess.mark = malloc(sizeof *t->guess.mark * nm);
  t->guess.rest = malloc(sizeof *t->guess.rest * nm);
  t->start = malloc(sizeof *t->start * (size_t)nsubs);
  t->unit0 = malloc(sizeof *t->unit0 * (size_t)nsubs);
  t->dcpred = malloc(sizeof *t->dcpred * (size_t)nsubs * STK_JPEG_MAX_COMP);
  return t->segs && t->subs && t->guess.end && t->guess.mark && t->guess.rest && t->start &&
                 t->unit0 && t->dcpred
             ? 0
             : -1;
}

int stk__jpeg_decode_coefficients(const stk_jpeg_frame *frame, const stk_jpeg_huffman *tables,
                                  const uint8_t *scan, size_t scan_bytes, const int32_t *restarts,
                                  int n_restarts, uint32_t subseq_bits, int16_t *coef,
                                  int *misses) {
  if (subseq_bits < 32) subseq_bits = 32;
  if (misses) *misses = 0;
  if (scan_bytes >= MAX_SCAN_BYTES || frame->blocks_per_mcu < 1 ||
      frame->blocks_per_mcu > STK_JPEG_MAX_PHASES)
    return -1;
  int64_t nsubs = stk_jpeg_plan_count((uint32_t)scan_bytes, restarts, n_restarts, subseq_bits);
  int nsegs = n_restarts + 1;
  host_tmp t = {0};
  if (host_tmp_alloc(&t, nsegs, nsubs) != 0) {
    host_tmp_free(&t);
    return -2;
  }
  stk_jpeg_plan_fill(frame, (uint32_t)scan_bytes, restarts, n_restarts, subseq_bits, t.segs,
                     t.subs);
  stk_jpeg_image_view im = {scan, frame, tables, t.segs, t.subs};
  const int bpm = stk_jpeg_guess_count(frame);
  for (int32_t g = 0; g < nsubs; g++)
    for (int p = 0; p < bpm; p++) stk_jpeg_guess_step(&im, g, p, &t.guess);
  int rc = 0;
  int32_t miss = 0;
  for (int k = 0; k < nsegs; k++)
    if (stk_jpeg_resolve_segment(&im, k, (int32_t)nsubs, &t.guess, t.start, t.unit0, t.dcpred,
                                 &miss) != 0)
      rc = -1;
  if (rc == 0)
    for (int32_t g = 0; g < nsubs; g++)
      stk_jpeg_write_step(&im, g, t.start, t.unit0, t.dcpred, coef);
  if (misses) *misses = miss;
  host_tmp_free(&t);
  return rc;
}
