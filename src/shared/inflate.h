/*
 * A zlib (RFC 1950) / DEFLATE (RFC 1951) decoder that compiles as C11 and as CUDA C++
 * (STK_HD): the GPU PNG decoder runs it one stream per thread (src/cuda/png.cu), the CPU
 * tests and the fuzz target run the very same code (tests/c/test_png_gpu.c,
 * tests/fuzz/fuzz_inflate.c) against zlib.
 *
 * Bounded by construction: the caller gives the exact output size (a PNG's from IHDR);
 * every write is checked against it, every read against the input's end, and each loop
 * iteration consumes input or produces output, so a hostile stream can neither write out
 * of bounds nor loop for ever. No allocation: the Huffman tables (stk_inf_tables, 3.4
 * KiB) are the caller's.
 *
 * Strictness: it must never accept a stream that zlib (behind libspng, the CPU decoder)
 * rejects, because a sample the GPU decodes is never looked at by the CPU decoder. So
 * it refuses everything zlib refuses (bad header or preset dictionary, over-subscribed
 * or incomplete codes except zlib's one-code case, symbols 286/287 and distances 30/31,
 * a missing end-of-block code, stored-length mismatches, distances before the start of
 * the output), and a little more that zlib lets through: distances beyond the header's
 * window, output beyond the expected size, bytes after the Adler-32 and a stream that ends
 * short. A refusal is not the final verdict: the caller hands the file to the CPU
 * decoder, which accepts it or says what is wrong.
 *
 * Decoding: canonical Huffman codes (RFC 1951 3.2.2); codes up to STK_INF_FAST bits are
 * found in one table lookup, longer ones by walking the per-length counts.
 */
#ifndef STOKER_SHARED_INFLATE_H
#define STOKER_SHARED_INFLATE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_common.h" /* STK_HD */

#define STK_INF_FAST 9 /* bits of the one-lookup table */

/* Results (stk_inflate_zlib). */
enum {
  STK_INF_OK = 0,
  STK_INF_BAD_HEADER = 1, /* zlib header: method, window, check bits, dictionary */
  STK_INF_BAD_BLOCK = 2,  /* block type 3, stored length mismatch */
  STK_INF_BAD_CODES = 3,  /* a dynamic block's code lengths do not form valid codes */
  STK_INF_BAD_SYMBOL = 4, /* an invalid length / distance symbol or code */
  STK_INF_BAD_DIST = 5,   /* a distance before the output's start or beyond the window */
  STK_INF_TRUNCATED = 6,  /* the input ended inside the stream */
  STK_INF_TOO_LONG = 7,   /* more output than expected */
  STK_INF_TOO_SHORT = 8,  /* the final block ended before the expected output */
  STK_INF_BAD_ADLER = 9,  /* Adler-32 mismatch */
  STK_INF_TRAILING = 10   /* bytes after the Adler-32 */
};

typedef struct {
  uint16_t count[16];   /* codes per length */
  uint16_t symbol[288]; /* symbols in canonical order */
  /* code bits (LSB first) -> symbol << 4 | length; 0: longer than STK_INF_FAST bits */
  uint16_t fast[1 << STK_INF_FAST];
} stk_inf_huff;

/* The two Huffman tables (3.4 KiB): the caller's memory (a global scratch block on the
 * GPU, where a thread's local memory of that size would be reserved for every thread the
 * device can hold). */
typedef struct {
  stk_inf_huff lit, dist;
} stk_inf_tables;

/* The decoder's cursor: small, so that it lives in registers once inlined (its address
 * never escapes, so the output's byte stores cannot alias it). */
typedef struct {
  const uint8_t *in;
  size_t in_len, in_pos;
  uint64_t bits; /* unread bits, LSB first */
  int nbits;
  int overrun; /* bytes read past the input's end (as zeros) */
  uint8_t *out;
  size_t out_len, out_pos;
  size_t window; /* from the zlib header */
  stk_inf_tables *t;
} stk_inflate_state;

/* ---- bits ---- */

STK_HD void stk_inf_refill(stk_inflate_state *s) {
  while (s->nbits <= 56) {
    uint64_t b = 0;
    if (s->in_pos < s->in_len)
      b = s->in[s->in_pos];
    else
      s->overrun++;
    s->in_pos++;
    s->bits |= b << s->nbits;
    s->nbits += 8;
  }
}

/* n <= 32 bits; the caller checks s->overrun at block boundaries and symbol reads. */
STK_HD uint32_t stk_inf_bits(stk_inflate_state *s, int n) {
  if (s->nbits < n) stk_inf_refill(s);
  uint32_t v = (uint32_t)(s->bits & ((1ull << n) - 1));
  s->bits >>= n;
  s->nbits -= n;
  return v;
}

/* True when more bits were consumed than the input holds. */
STK_HD int stk_inf_overran(const stk_inflate_state *s) {
  /* refilled zero bytes not yet consumed are harmless: count only consumed ones */
  int64_t unread_bytes = s->nbits / 8;
  return (int64_t)s->overrun > unread_bytes;
}

/* ---- Huffman codes ---- */

STK_HD uint32_t stk_inf_reverse(uint32_t code, int len) {
  uint32_t r = 0;
  for (int i = 0; i < len; i++) r = (r << 1) | ((code >> i) & 1u);
  return r;
}

/* Builds the decoding tables from n code lengths. Returns 0, or -1 for an over-subscribed
 * set, or 1 for an incomplete one (zlib accepts that only for a single code of length 1,
 * and an empty set; the caller decides). */
STK_HD int stk_inf_build(stk_inf_huff *h, const uint8_t *lengths, int n) {
  uint16_t offs[16];
  for (int i = 0; i < 16; i++) h->count[i] = 0;
  for (int i = 0; i < n; i++) h->count[lengths[i]]++;
  int left = 1;
  for (int len = 1; len < 16; len++) {
    left <<= 1;
    left -= h->count[len];
    if (left < 0) return -1;
  }
  offs[1] = 0;
  for (int len = 1; len < 15; len++) offs[len + 1] = (uint16_t)(offs[len] + h->count[len]);
  for (int i = 0; i < n; i++)
    if (lengths[i]) h->symbol[offs[lengths[i]]++] = (uint16_t)i;
  for (int i = 0; i < (1 << STK_INF_FAST); i++) h->fast[i] = 0;
  /* canonical codes in order: code of the k-th symbol of length len */
  uint32_t code = 0;
  int k = 0;
  for (int len = 1; len <= STK_INF_FAST; len++) {
    for (int j = 0; j < h->count[len]; j++, k++, code++) {
      uint32_t rev = stk_inf_reverse(code, len);
      for (uint32_t fill = rev; fill < (1u << STK_INF_FAST); fill += 1u << len)
        h->fast[fill] = (uint16_t)(h->symbol[k] << 4 | len);
    }
    code <<= 1;
  }
  return left > 0 ? 1 : 0;
}

/* The next symbol, or -1 for a code that is not in the set. */
STK_HD int stk_inf_decode(stk_inflate_state *s, const stk_inf_huff *h) {
  if (s->nbits < 15) stk_inf_refill(s);
  uint16_t e = h->fast[s->bits & ((1u << STK_INF_FAST) - 1)];
  if (e) {
    int len = e & 15;
    s->bits >>= len;
    s->nbits -= len;
    return e >> 4;
  }
  /* slow path: bit by bit over the canonical ranges (codes are sent MSB first) */
  int code = 0, first = 0, index = 0;
  for (int len = 1; len < 16; len++) {
    code |= (int)(s->bits & 1);
    s->bits >>= 1;
    s->nbits--;
    int count = h->count[len];
    if (code - count < first) return h->symbol[index + (code - first)];
    index += count;
    first += count;
    first <<= 1;
    code <<= 1;
  }
  return -1;
}

/* ---- blocks ---- */

STK_HD int stk_inf_stored(stk_inflate_state *s) {
  s->bits >>= s->nbits & 7; /* to a byte boundary */
  s->nbits -= s->nbits & 7;
  uint32_t len = stk_inf_bits(s, 16), nlen = stk_inf_bits(s, 16);
  if (stk_inf_overran(s)) return STK_INF_TRUNCATED;
  if ((len ^ 0xffffu) != nlen) return STK_INF_BAD_BLOCK;
  /* whole bytes still in the bit buffer come first, then the input */
  while (len > 0 && s->nbits >= 8) {
    if (s->out_pos >= s->out_len) return STK_INF_TOO_LONG;
    s->out[s->out_pos++] = (uint8_t)stk_inf_bits(s, 8);
    len--;
  }
  if (stk_inf_overran(s)) return STK_INF_TRUNCATED;
  /* the bit buffer is empty here unless len == 0; unread refilled bytes are undone */
  size_t pos = s->in_pos - (size_t)(s->nbits / 8);
  if (len > 0) {
    if (pos > s->in_len || s->in_len - pos < len) return STK_INF_TRUNCATED;
    if (s->out_len - s->out_pos < len) return STK_INF_TOO_LONG;
    for (uint32_t i = 0; i < len; i++) s->out[s->out_pos++] = s->in[pos + i];
    s->in_pos = pos + len;
    s->bits = 0;
    s->nbits = 0;
    s->overrun = 0;
  }
  return STK_INF_OK;
}

STK_HD int stk_inf_codes(stk_inflate_state *s) {
  const uint16_t lbase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                              31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  const uint8_t lextra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                              2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  const uint16_t dbase[30] = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
                              33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
                              1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
  const uint8_t dextra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                              6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
  for (;;) {
    int sym = stk_inf_decode(s, &s->t->lit);
    if (stk_inf_overran(s)) return STK_INF_TRUNCATED;
    if (sym < 0) return STK_INF_BAD_SYMBOL;
    if (sym < 256) {
      if (s->out_pos >= s->out_len) return STK_INF_TOO_LONG;
      s->out[s->out_pos++] = (uint8_t)sym;
      continue;
    }
    if (sym == 256) return STK_INF_OK;
    sym -= 257;
    if (sym >= 29) return STK_INF_BAD_SYMBOL;
    size_t len = lbase[sym] + stk_inf_bits(s, lextra[sym]);
    int dsym = stk_inf_decode(s, &s->t->dist);
    if (dsym < 0 || dsym >= 30) return STK_INF_BAD_SYMBOL;
    size_t dist = dbase[dsym] + stk_inf_bits(s, dextra[dsym]);
    if (stk_inf_overran(s)) return STK_INF_TRUNCATED;
    if (dist > s->out_pos || dist > s->window) return STK_INF_BAD_DIST;
    if (s->out_len - s->out_pos < len) return STK_INF_TOO_LONG;
    uint8_t *o = s->out + s->out_pos;
    for (size_t i = 0; i < len; i++) o[i] = o[(ptrdiff_t)i - (ptrdiff_t)dist];
    s->out_pos += len;
  }
}

STK_HD int stk_inf_fixed(stk_inflate_state *s) {
  uint8_t lengths[288];
  for (int i = 0; i < 144; i++) lengths[i] = 8;
  for (int i = 144; i < 256; i++) lengths[i] = 9;
  for (int i = 256; i < 280; i++) lengths[i] = 7;
  for (int i = 280; i < 288; i++) lengths[i] = 8;
  stk_inf_build(&s->t->lit, lengths, 288);
  for (int i = 0; i < 30; i++) lengths[i] = 5;
  stk_inf_build(&s->t->dist, lengths, 30);
  return stk_inf_codes(s);
}

/* Reads the code-length code and the literal/length and distance code lengths. */
STK_HD int stk_inf_read_lengths(stk_inflate_state *s, uint8_t *lengths, int nlen, int ndist) {
  const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  int ncode = (int)stk_inf_bits(s, 4) + 4;
  uint8_t cl[19];
  for (int i = 0; i < 19; i++) cl[i] = 0;
  for (int i = 0; i < ncode; i++) cl[order[i]] = (uint8_t)stk_inf_bits(s, 3);
  if (stk_inf_overran(s)) return STK_INF_TRUNCATED;
  if (stk_inf_build(&s->t->lit, cl, 19) != 0) return STK_INF_BAD_CODES; /* complete only */
  for (int i = 0; i < nlen + ndist;) {
    int sym = stk_inf_decode(s, &s->t->lit);
    if (stk_inf_overran(s)) return STK_INF_TRUNCATED;
    if (sym < 0) return STK_INF_BAD_CODES;
    if (sym < 16) {
      lengths[i++] = (uint8_t)sym;
      continue;
    }
    int rep;
    uint8_t val = 0;
    if (sym == 16) {
      if (i == 0) return STK_INF_BAD_CODES;
      val = lengths[i - 1];
      rep = 3 + (int)stk_inf_bits(s, 2);
    } else if (sym == 17) {
      rep = 3 + (int)stk_inf_bits(s, 3);
    } else {
      rep = 11 + (int)stk_inf_bits(s, 7);
    }
    if (i + rep > nlen + ndist) return STK_INF_BAD_CODES;
    while (rep--) lengths[i++] = val;
  }
  return stk_inf_overran(s) ? STK_INF_TRUNCATED : STK_INF_OK;
}

/* zlib's rule for incomplete codes: only a set whose longest code has length 1 (one
 * symbol) or an empty distance set. */
STK_HD int stk_inf_single_code(const stk_inf_huff *h) {
  int max = 0;
  for (int len = 1; len < 16; len++)
    if (h->count[len]) max = len;
  return max <= 1;
}

STK_HD int stk_inf_dynamic(stk_inflate_state *s) {
  int nlen = (int)stk_inf_bits(s, 5) + 257, ndist = (int)stk_inf_bits(s, 5) + 1;
  if (nlen > 286 || ndist > 30) return STK_INF_BAD_CODES;
  uint8_t lengths[316];
  int rc = stk_inf_read_lengths(s, lengths, nlen, ndist);
  if (rc) return rc;
  if (lengths[256] == 0) return STK_INF_BAD_CODES; /* no end-of-block code */
  int err = stk_inf_build(&s->t->lit, lengths, nlen);
  if (err < 0 || (err > 0 && !stk_inf_single_code(&s->t->lit))) return STK_INF_BAD_CODES;
  err = stk_inf_build(&s->t->dist, lengths + nlen, ndist);
  if (err < 0 || (err > 0 && !stk_inf_single_code(&s->t->dist))) return STK_INF_BAD_CODES;
  return stk_inf_codes(s);
}

/* ---- the zlib stream ---- */

/* Adler-32 in pieces, so that the kernel can sum a stream's spans in parallel: the sums
 * (a = sum of the bytes, b = sum of each byte times its distance from the span's end,
 * both mod 65521) of one span, and the checksum (A, B) extended by a span of n bytes. */
#define STK_ADLER_MOD 65521u

STK_HD void stk_adler_span(const uint8_t *p, size_t n, uint32_t *sa, uint32_t *sb) {
  uint32_t a = 0, b = 0;
  while (n > 0) {
    size_t k = n < 5552 ? n : 5552; /* no overflow of b before the modulo */
    n -= k;
    while (k--) {
      a += *p++;
      b += a;
    }
    a %= STK_ADLER_MOD;
    b %= STK_ADLER_MOD;
  }
  *sa = a, *sb = b;
}

STK_HD void stk_adler_extend(uint32_t *A, uint32_t *B, size_t n, uint32_t sa, uint32_t sb) {
  uint64_t len = n % STK_ADLER_MOD;
  *B = (uint32_t)((*B + len * *A + sb) % STK_ADLER_MOD);
  *A = (*A + sa) % STK_ADLER_MOD;
}

STK_HD uint32_t stk_adler32(const uint8_t *p, size_t n) {
  uint32_t A = 1, B = 0, sa, sb;
  stk_adler_span(p, n, &sa, &sb);
  stk_adler_extend(&A, &B, n, sa, sb);
  return B << 16 | A;
}

/* The blocks of a DEFLATE stream, up to and including the final one, which must end
 * with exactly the expected output. */
STK_HD int stk_inf_blocks(stk_inflate_state *s) {
  int last = 0;
  while (!last) {
    last = (int)stk_inf_bits(s, 1);
    int type = (int)stk_inf_bits(s, 2);
    if (stk_inf_overran(s)) return STK_INF_TRUNCATED;
    int rc = type == 0   ? stk_inf_stored(s)
             : type == 1 ? stk_inf_fixed(s)
             : type == 2 ? stk_inf_dynamic(s)
                         : STK_INF_BAD_BLOCK;
    if (rc) return rc;
  }
  return s->out_pos != s->out_len ? STK_INF_TOO_SHORT : STK_INF_OK;
}

/* Drops the bits up to the next byte boundary (a trailer starts there). */
STK_HD void stk_inf_align(stk_inflate_state *s) {
  s->bits >>= s->nbits & 7;
  s->nbits -= s->nbits & 7;
}

/* The stream's walk: header, blocks, the Adler-32 read (not checked). */
STK_HD int stk_inf_zlib_run(stk_inflate_state *s, const uint8_t *in, size_t in_len, uint8_t *out,
                            size_t out_len, uint32_t *adler) {
  s->in = in;
  s->in_len = in_len;
  s->in_pos = 0;
  s->bits = 0;
  s->nbits = 0;
  s->overrun = 0;
  s->out = out;
  s->out_len = out_len;
  s->out_pos = 0;
  if (in_len < 6) return STK_INF_TRUNCATED;
  unsigned cmf = in[0], flg = in[1];
  if ((cmf & 15) != 8 || (cmf >> 4) > 7 || (cmf * 256 + flg) % 31 != 0 || (flg & 0x20))
    return STK_INF_BAD_HEADER;
  s->window = (size_t)1 << ((cmf >> 4) + 8);
  s->in_pos = 2;
  int rc = stk_inf_blocks(s);
  if (rc) return rc;
  /* the Adler-32 follows on the next byte boundary */
  stk_inf_align(s);
  uint32_t want = 0;
  for (int i = 0; i < 4; i++) want = want << 8 | stk_inf_bits(s, 8);
  if (stk_inf_overran(s)) return STK_INF_TRUNCATED;
  *adler = want; /* also for trailing bytes: stk_inflate_any accepts those */
  if (s->in_pos - (size_t)(s->nbits / 8) != in_len) return STK_INF_TRAILING;
  return STK_INF_OK;
}

/* Inflates the zlib stream in[0..in_len) into exactly out_len bytes of out, with the
 * Huffman tables in *t, and reads the Adler-32 it ends with into *adler without checking
 * it (the kernel sums it in parallel). Returns STK_INF_OK or the first problem found (out
 * then holds a prefix of garbage). */
STK_HD int stk_inflate_zlib_unchecked(stk_inf_tables *t, const uint8_t *in, size_t in_len,
                                      uint8_t *out, size_t out_len, uint32_t *adler) {
  stk_inflate_state s;
  s.t = t;
  return stk_inf_zlib_run(&s, in, in_len, out, out_len, adler);
}

/* The same with the Adler-32 checked. */
STK_HD int stk_inflate_zlib(stk_inf_tables *t, const uint8_t *in, size_t in_len, uint8_t *out,
                            size_t out_len) {
  uint32_t want = 0;
  int rc = stk_inflate_zlib_unchecked(t, in, in_len, out, out_len, &want);
  if (rc) return rc;
  return stk_adler32(out, out_len) == want ? STK_INF_OK : STK_INF_BAD_ADLER;
}

/* ---- any wrapper (decoders.inflate) ----
 * decoders.inflate's CPU form hands each chunk to zlib with its wrapper detected: gzip
 * (RFC 1952), zlib, else raw deflate; bytes after the stream's end are ignored there, and
 * so here. The GPU form runs stk_inflate_any, so both accept the same chunks (except
 * zlib streams whose distances reach beyond the window their header declares, which no
 * compressor writes and which this decoder refuses). */

/* CRC-32 (the gzip trailer's), a nibble at a time: a 16-entry table, no shared state. */
STK_HD uint32_t stk_crc32_update(uint32_t crc, const uint8_t *p, size_t n) {
  const uint32_t tab[16] = {0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu,
                            0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
                            0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
                            0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu};
  crc = ~crc;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    crc = (crc >> 4) ^ tab[crc & 15];
    crc = (crc >> 4) ^ tab[crc & 15];
  }
  return ~crc;
}

STK_HD void stk_inf_begin(stk_inflate_state *s, stk_inf_tables *t, const uint8_t *in, size_t in_len,
                          size_t in_pos, uint8_t *out, size_t out_len) {
  s->t = t;
  s->in = in;
  s->in_len = in_len;
  s->in_pos = in_pos;
  s->bits = 0;
  s->nbits = 0;
  s->overrun = 0;
  s->out = out;
  s->out_len = out_len;
  s->out_pos = 0;
  s->window = 32768; /* raw deflate and gzip: the format's largest */
}

/* Skips a zero-terminated header field; 0 when the input ends inside it. */
STK_HD int stk_inf_skip_string(const uint8_t *in, size_t n, size_t *p) {
  while (*p < n && in[*p]) (*p)++;
  if (*p >= n) return 0;
  (*p)++;
  return 1;
}

/* The gzip member header: *pos receives where the deflate data starts. */
STK_HD int stk_inf_gzip_header(const uint8_t *in, size_t n, size_t *pos) {
  if (n < 10) return STK_INF_TRUNCATED;
  unsigned flg = in[3];
  if (in[2] != 8 || (flg & 0xe0)) return STK_INF_BAD_HEADER;
  size_t p = 10;
  if (flg & 4) { /* FEXTRA */
    if (n - p < 2) return STK_INF_TRUNCATED;
    size_t xlen = (size_t)in[p] | (size_t)in[p + 1] << 8;
    p += 2;
    if (n - p < xlen) return STK_INF_TRUNCATED;
    p += xlen;
  }
  if ((flg & 8) && !stk_inf_skip_string(in, n, &p)) return STK_INF_TRUNCATED;  /* FNAME */
  if ((flg & 16) && !stk_inf_skip_string(in, n, &p)) return STK_INF_TRUNCATED; /* FCOMMENT */
  if (flg & 2) { /* FHCRC: the low half of the header's CRC-32 */
    if (n - p < 2) return STK_INF_TRUNCATED;
    uint32_t want = (uint32_t)in[p] | (uint32_t)in[p + 1] << 8;
    if ((stk_crc32_update(0, in, p) & 0xffffu) != want) return STK_INF_BAD_HEADER;
    p += 2;
  }
  *pos = p;
  return STK_INF_OK;
}

/* A little-endian 32-bit trailer word. */
STK_HD uint32_t stk_inf_le32(stk_inflate_state *s) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= stk_inf_bits(s, 8) << (8 * i);
  return v;
}

STK_HD int stk_inflate_gzip(stk_inf_tables *t, const uint8_t *in, size_t in_len, uint8_t *out,
                            size_t out_len) {
  size_t pos = 0;
  int rc = stk_inf_gzip_header(in, in_len, &pos);
  if (rc) return rc;
  stk_inflate_state s;
  stk_inf_begin(&s, t, in, in_len, pos, out, out_len);
  rc = stk_inf_blocks(&s);
  if (rc) return rc;
  stk_inf_align(&s);
  uint32_t crc = stk_inf_le32(&s), isize = stk_inf_le32(&s);
  if (stk_inf_overran(&s)) return STK_INF_TRUNCATED;
  if (crc != stk_crc32_update(0, out, out_len) || isize != (uint32_t)out_len)
    return STK_INF_BAD_ADLER;
  return STK_INF_OK;
}

STK_HD int stk_inflate_raw(stk_inf_tables *t, const uint8_t *in, size_t in_len, uint8_t *out,
                           size_t out_len) {
  stk_inflate_state s;
  stk_inf_begin(&s, t, in, in_len, 0, out, out_len);
  return stk_inf_blocks(&s);
}

/* Inflates in[0..in_len) into exactly out_len bytes: gzip when it starts with gzip's magic,
 * zlib when its first two bytes are a valid-looking zlib header (method 8, check bits),
 * else raw deflate; checksums checked, bytes after the stream ignored. */
STK_HD int stk_inflate_any(stk_inf_tables *t, const uint8_t *in, size_t in_len, uint8_t *out,
                           size_t out_len) {
  if (in_len >= 2 && in[0] == 0x1f && in[1] == 0x8b)
    return stk_inflate_gzip(t, in, in_len, out, out_len);
  if (in_len >= 2 && (in[0] & 0x0f) == 8 && ((unsigned)in[0] << 8 | in[1]) % 31 == 0) {
    uint32_t want = 0;
    int rc = stk_inflate_zlib_unchecked(t, in, in_len, out, out_len, &want);
    if (rc != STK_INF_OK && rc != STK_INF_TRAILING) return rc;
    return stk_adler32(out, out_len) == want ? STK_INF_OK : STK_INF_BAD_ADLER;
  }
  return stk_inflate_raw(t, in, in_len, out, out_len);
}

#endif /* STOKER_SHARED_INFLATE_H */
