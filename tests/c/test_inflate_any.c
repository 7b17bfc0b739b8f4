/* decoders.inflate's device decoders run on the CPU: stk_inflate_any (src/shared/inflate.h:
 * gzip, zlib and raw deflate, the GPU kernel's DEFLATE path) against zlib, which is the CPU
 * operator's decoder, and the shared LZ4 block decoder (src/shared/lz4.h) on hand-made
 * blocks. The streams come from zlib's own compressor in all three wrappings. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codecs/zlib_any.h"
#include "shared/inflate.h"
#include "shared/lz4.h"
#include "testutil.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}
static int rnd_in(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); }

enum { WRAP_ZLIB, WRAP_RAW, WRAP_GZIP, WRAP_GZIP_HEADER };

/* Compresses src with zlib in the given wrapping; returns the stream (free()), *zn its size. */
static uint8_t *compress_as(int wrap, const uint8_t *src, size_t n, size_t *zn) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  int bits = rnd_in(9, 15);
  int wb = wrap == WRAP_ZLIB ? bits : wrap == WRAP_RAW ? -bits : 16 + bits;
  assert_int_equal(deflateInit2(&zs, rnd_in(0, 9), Z_DEFLATED, wb, rnd_in(1, 9),
                                rnd_in(0, 3) ? Z_DEFAULT_STRATEGY : Z_FIXED),
                   Z_OK);
  gz_header h;
  memset(&h, 0, sizeof h);
  static uint8_t extra[5] = {1, 2, 3, 4, 5};
  if (wrap == WRAP_GZIP_HEADER) { /* every optional field, the header CRC included */
    h.extra = extra, h.extra_len = sizeof extra;
    h.name = (Bytef *)"chunk.bin", h.comment = (Bytef *)"a comment", h.hcrc = 1;
    assert_int_equal(deflateSetHeader(&zs, &h), Z_OK);
  }
  size_t cap = deflateBound(&zs, n) + 128;
  uint8_t *z = malloc(cap);
  zs.next_in = (Bytef *)src, zs.avail_in = (uInt)n, zs.next_out = z, zs.avail_out = (uInt)cap;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  *zn = zs.total_out;
  deflateEnd(&zs);
  return z;
}

static void fill_text_like(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n;) {
    int run = rnd_in(1, 200);
    uint8_t v = (uint8_t)(rnd() % 256);
    for (int k = 0; k < run && i < n; k++, i++) p[i] = rnd() % 4 ? v : (uint8_t)rnd();
  }
}

static void test_crc32_matches_zlib(void **state) {
  (void)state;
  uint8_t p[3000];
  for (int it = 0; it < 200; it++) {
    size_t n = (size_t)rnd_in(0, sizeof p);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rnd();
    assert_int_equal(stk_crc32_update(0, p, n), (uint32_t)crc32(0, p, (uInt)n));
  }
  assert_int_equal(stk_crc32_update(0, (const uint8_t *)"123456789", 9), 0xcbf43926u);
}

/* Every wrapping inflates to the original; exactness, trailing bytes and checksums. */
static void test_any_wrapping_matches_zlib(void **state) {
  (void)state;
  stk_inf_tables *t = malloc(sizeof *t);
  for (int it = 0; it < 400; it++) {
    int wrap = it % 4;
    size_t n = (size_t)rnd_in(0, 100000 >> rnd_in(0, 8)), zn = 0;
    uint8_t *src = malloc(n + 1), *out = malloc(n + 2);
    fill_text_like(src, n);
    uint8_t *z = compress_as(wrap, src, n, &zn);
    assert_int_equal(stk_inflate_any(t, z, zn, out, n), STK_INF_OK);
    assert_memory_equal(out, src, n);
    if (n > 0) assert_int_not_equal(stk_inflate_any(t, z, zn, out, n - 1), STK_INF_OK);
    assert_int_not_equal(stk_inflate_any(t, z, zn, out, n + 1), STK_INF_OK);
    assert_int_not_equal(stk_inflate_any(t, z, zn - 1, out, n), STK_INF_OK);
    /* bytes after the stream are ignored, as zlib (the CPU operator) ignores them */
    uint8_t *zt = malloc(zn + 3);
    memcpy(zt, z, zn);
    zt[zn] = 7, zt[zn + 1] = 0, zt[zn + 2] = 9;
    assert_int_equal(stk_inflate_any(t, zt, zn + 3, out, n), STK_INF_OK);
    assert_int_equal(stk__zlib_inflate_any(zt, zn + 3, out, n), (int64_t)n);
    /* the wrapped forms' checksums are checked (gzip: CRC-32 and the size) */
    if (wrap != WRAP_RAW) {
      memcpy(zt, z, zn);
      zt[zn - 1 - rnd_in(0, wrap == WRAP_ZLIB ? 3 : 7)] ^= (uint8_t)(1u << rnd_in(0, 7));
      assert_int_equal(stk_inflate_any(t, zt, zn, out, n), STK_INF_BAD_ADLER);
      assert_int_equal(stk__zlib_inflate_any(zt, zn, out, n), -1);
    }
    free(zt);
    free(z);
    free(src);
    free(out);
  }
  free(t);
}

/* Mutated streams of every wrapping: ours and zlib agree on accepting, and on the bytes. */
static void test_any_mutations_agree_with_zlib(void **state) {
  (void)state;
  stk_inf_tables *t = malloc(sizeof *t);
  int accepted = 0, refused = 0;
  for (int it = 0; it < 20000; it++) {
    uint8_t src[600], mine[600], ref[600];
    size_t n = (size_t)rnd_in(1, 600), zn = 0;
    for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(rnd() % 7);
    uint8_t *z = compress_as(it % 4, src, n, &zn);
    int flips = rnd_in(0, 2);
    for (int k = 0; k < flips; k++) z[rnd() % zn] ^= (uint8_t)(1u << rnd_in(0, 7));
    bool ours = stk_inflate_any(t, z, zn, mine, n) == STK_INF_OK;
    bool theirs = stk__zlib_inflate_any(z, zn, ref, n) == (int64_t)n;
    assert_int_equal(ours, theirs);
    if (ours) assert_memory_equal(mine, ref, n);
    accepted += ours, refused += !ours;
    free(z);
  }
  assert_true(accepted > 1000 && refused > 1000); /* both sides really exercised */
  free(t);
}

/* Hand-made headers: gzip's reserved flags and method, the header CRC, a stored raw block. */
static void test_any_hand_made(void **state) {
  (void)state;
  stk_inf_tables t;
  uint8_t out[8];
  /* raw deflate: one final stored block of 3 bytes */
  const uint8_t stored[] = {1, 3, 0, 0xfc, 0xff, 'a', 'b', 'c'};
  assert_int_equal(stk_inflate_any(&t, stored, sizeof stored, out, 3), STK_INF_OK);
  assert_memory_equal(out, "abc", 3);
  size_t zn;
  uint8_t *z = compress_as(WRAP_GZIP_HEADER, (const uint8_t *)"abcabcab", 8, &zn);
  assert_int_equal(stk_inflate_any(&t, z, zn, out, 8), STK_INF_OK);
  z[3] |= 0x20; /* a reserved flag */
  assert_int_equal(stk_inflate_any(&t, z, zn, out, 8), STK_INF_BAD_HEADER);
  z[3] &= (uint8_t)~0x20;
  z[14] ^= 1; /* inside the extra field: the header CRC no longer matches */
  assert_int_equal(stk_inflate_any(&t, z, zn, out, 8), STK_INF_BAD_HEADER);
  assert_int_equal(stk__zlib_inflate_any(z, zn, out, 8), -1);
  free(z);
  const uint8_t short_gzip[] = {0x1f, 0x8b, 8, 0, 0, 0};
  assert_int_equal(stk_inflate_any(&t, short_gzip, sizeof short_gzip, out, 1), STK_INF_TRUNCATED);
}

/* LZ4: literals only, an overlapping match, and every malformed shape refused. */
static void test_lz4_blocks(void **state) {
  (void)state;
  uint8_t out[64];
  const uint8_t lit[] = {0x30, 'x', 'y', 'z'};
  assert_int_equal(stk_lz4_block_decode(lit, sizeof lit, out, 3), 3);
  assert_memory_equal(out, "xyz", 3);
  assert_int_equal(stk_lz4_block_decode(lit, sizeof lit, out, 2), -1); /* no room */
  /* "ab" then a match of 6 at distance 2 (overlapping), then the last literals "c" */
  const uint8_t ovl[] = {0x22, 'a', 'b', 2, 0, 0x10, 'c'};
  assert_int_equal(stk_lz4_block_decode(ovl, sizeof ovl, out, sizeof out), 9);
  assert_memory_equal(out, "ababababc", 9);
  const uint8_t zero_off[] = {0x10, 'a', 0, 0, 0x10, 'c'};
  assert_int_equal(stk_lz4_block_decode(zero_off, sizeof zero_off, out, sizeof out), -1);
  const uint8_t far[] = {0x10, 'a', 5, 0, 0x10, 'c'}; /* before the output's start */
  assert_int_equal(stk_lz4_block_decode(far, sizeof far, out, sizeof out), -1);
  const uint8_t cut[] = {0xf0, 255}; /* the length's continuation never ends */
  assert_int_equal(stk_lz4_block_decode(cut, sizeof cut, out, sizeof out), -1);
  /* a long literal run: 15 + 255 + 10 = 280 bytes */
  uint8_t big[3 + 280], dst[280];
  big[0] = 0xf0, big[1] = 255, big[2] = 10;
  for (int i = 0; i < 280; i++) big[3 + i] = (uint8_t)i;
  assert_int_equal(stk_lz4_block_decode(big, sizeof big, dst, sizeof dst), 280);
  assert_memory_equal(dst, big + 3, 280);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32_matches_zlib),
      cmocka_unit_test(test_any_wrapping_matches_zlib),
      cmocka_unit_test(test_any_mutations_agree_with_zlib),
      cmocka_unit_test(test_any_hand_made),
      cmocka_unit_test(test_lz4_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
