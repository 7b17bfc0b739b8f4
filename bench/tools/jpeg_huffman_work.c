/* The own JPEG decoder's Huffman stage, its work counted on the host: Huffman symbols
 * decoded by all phases (src/codecs/jpeg_frame.c's host run of src/shared/jpeg_huffman.h,
 * the same per-thread code the kernels run) per file and subsequence length, the
 * subsequences the resolve walk decoded itself (misses, serial on a GPU), and a check
 * against the sequential decode. The symbol count is the GPU's work up to memory effects.
 *
 * build: cc -O2 -I src -DSTK_JPEG_COUNT_SYMBOLS bench/tools/jpeg_huffman_work.c \
 *          src/codecs/jpeg_frame.c -o /tmp/jpeg_huffman_work
 * usage: /tmp/jpeg_huffman_work S FILE.jpg...   (S: subsequence bits) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/jpeg_frame.h"

unsigned long long stk_jpeg_symbols_decoded;

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)len + 1);
  *n = fread(p, 1, (size_t)len, f);
  fclose(f);
  return p;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  uint32_t s = (uint32_t)strtoul(argv[1], NULL, 10);
  unsigned long long all_par = 0, all_seq = 0;
  int bad = 0;
  for (int a = 2; a < argc; a++) {
    size_t n;
    unsigned char *b = slurp(argv[a], &n);
    if (!b) return 2;
    stk_jpeg_frame f;
    stk_jpeg_huffman *t = malloc(sizeof *t);
    uint8_t *scan = malloc(n);
    int cap = (int)(n / 2 + 1), nr;
    int32_t *rs = malloc(sizeof *rs * (size_t)cap);
    size_t sb;
    char why[128];
    if (stk__jpeg_frame_parse(b, n, &f, t, scan, n, &sb, rs, cap, &nr, why, sizeof why) != 0) {
      printf("%s: refused: %s\n", argv[a], why);
      continue;
    }
    size_t nc = (size_t)f.total_blocks * 64;
    int16_t *x = malloc(nc * 2), *y = malloc(nc * 2);
    int misses = 0;
    stk_jpeg_symbols_decoded = 0;
    int rx = stk__jpeg_decode_coefficients(&f, t, scan, sb, rs, nr, s, x, &misses);
    unsigned long long par = stk_jpeg_symbols_decoded;
    stk_jpeg_symbols_decoded = 0;
    int ry = stk__jpeg_decode_coefficients(&f, t, scan, sb, rs, nr, 1u << 30, y, NULL);
    unsigned long long seq = stk_jpeg_symbols_decoded;
    int same = rx == 0 && ry == 0 && memcmp(x, y, nc * 2) == 0;
    bad |= !same;
    int64_t subs = stk_jpeg_plan_count((uint32_t)sb, rs, nr, s);
    printf("%-40s %7zu B bpm %d subs %5lld misses %3d symbols %9llu = %5.2f x sequential %s\n",
           argv[a], n, f.blocks_per_mcu, (long long)subs, misses, par, (double)par / seq,
           same ? "equal" : "DIFFERENT");
    all_par += par, all_seq += seq;
    free(x), free(y), free(b), free(t), free(scan), free(rs);
  }
  printf("all: %llu symbols = %.3f x sequential (%llu)\n", all_par, (double)all_par / all_seq,
         all_seq);
  return bad;
}
