/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11): constants and round structure as
 * published; verified against the paper's known-answer vectors in the tests. */
#include <math.h>

#include "core.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
  uint64_t p = (uint64_t)a * b;
  *hi = (uint32_t)(p >> 32);
  *lo = (uint32_t)p;
}

void stk__philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(PHILOX_M0, c0, &hi0, &lo0);
    mulhilo(PHILOX_M1, c2, &hi1, &lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += PHILOX_W0;
    k1 += PHILOX_W1;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

void stk__philox_init(stk__philox *g, uint64_t key, uint64_t ordinal) {
  g->key[0] = (uint32_t)key;
  g->key[1] = (uint32_t)(key >> 32);
  /* counter[0..1]: draw block index; counter[2..3]: the sample ordinal. */
  g->counter[0] = 0;
  g->counter[1] = 0;
  g->counter[2] = (uint32_t)ordinal;
  g->counter[3] = (uint32_t)(ordinal >> 32);
  g->available = 0;
}

uint32_t stk__philox_u32(stk__philox *g) {
  if (g->available == 0) {
    stk__philox4x32_10(g->counter, g->key, g->buffer);
    if (++g->counter[0] == 0) g->counter[1]++;
    g->available = 4;
  }
  return g->buffer[4 - g->available--];
}

float stk__philox_uniform_f(stk__philox *g) {
  return (float)(stk__philox_u32(g) >> 8) * (1.0f / 16777216.0f);
}

double stk__philox_uniform(stk__philox *g) {
  uint64_t hi = stk__philox_u32(g) >> 5, lo = stk__philox_u32(g) >> 6;
  return (double)((hi << 26) | lo) * (1.0 / 9007199254740992.0);
}

double stk__philox_normal(stk__philox *g) {
  /* Box-Muller; 1 - u keeps the log argument in (0, 1]. */
  double u1 = 1.0 - stk__philox_uniform(g);
  double u2 = stk__philox_uniform(g);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

uint64_t stk__philox_below(stk__philox *g, uint64_t n) {
  if (n <= 1) return 0;
  if (n <= UINT32_MAX) {
    uint32_t limit = (uint32_t)(UINT32_MAX - (UINT32_MAX % n)); /* reject the tail */
    uint32_t x;
    do x = stk__philox_u32(g);
    while (x >= limit);
    return x % n;
  }
  uint64_t limit = UINT64_MAX - (UINT64_MAX % n), x;
  do x = ((uint64_t)stk__philox_u32(g) << 32) | stk__philox_u32(g);
  while (x >= limit);
  return x % n;
}

uint64_t stk__mix64(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t stk__hash_str(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}
