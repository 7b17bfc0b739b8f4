/*
 * Device helpers for memory-bound kernels over packed uint8 data (HWC images, flat
 * arrays): moving a byte span between global memory and shared memory, and walking a
 * span as 16-byte vectors, at any alignment of the span.
 *
 * Why: a thread that reads 1 to 3 bytes per pixel issues one narrow load per byte, and
 * a warp's requests cover only 32 to 96 bytes; at 256 images x 562 KB the kernels were
 * bound by load/store instructions, not by HBM. Moving 16 bytes per instruction (uint4)
 * needs 16-byte aligned addresses, which samples of a batch rarely all have (375 x 500
 * x 3 = 562500 bytes: every fourth sample is aligned). So a span [g, g + n) is split
 * into a scalar head up to the first 16-byte boundary, whole aligned vectors, and a
 * scalar tail. In shared memory the span is mirrored at the same address modulo 16
 * (sm + (g & 15)), so that the aligned middle lands on aligned shared words too.
 *
 * CUDA C++ only (included by .cu files).
 */
#ifndef STOKER_CUDA_PIXEL_TILES_CUH
#define STOKER_CUDA_PIXEL_TILES_CUH

#include <stdint.h>

/* A byte span cut at 16-byte boundaries: bytes [0, head) and [tail, n) are scalar,
 * [head, tail) is (tail - head) / 16 aligned vectors. Offsets are relative to the
 * span's first byte. */
typedef struct {
  int head, tail;
} pt_cut;

__device__ __forceinline__ pt_cut pt_cut_of(const void *g, int n) {
  pt_cut c;
  int mis = (int)((uintptr_t)g & 15);
  c.head = mis ? 16 - mis : 0;
  if (c.head > n) c.head = n;
  c.tail = c.head + ((n - c.head) & ~15);
  return c;
}

/* The shared-memory mirror of span g: where its first byte goes in a 16-aligned buffer
 * (buffers hold n + 15 bytes). */
__device__ __forceinline__ int pt_shift(const void *g) { return (int)((uintptr_t)g & 15); }

/* Block-wide copy of global bytes [g, g + n) to sm + pt_shift(g) (sm 16-byte aligned).
 * The caller synchronises before reading sm. */
__device__ __forceinline__ void pt_load(uint8_t *sm, const uint8_t *g, int n) {
  pt_cut c = pt_cut_of(g, n);
  uint8_t *s = sm + pt_shift(g);
  int nv = (c.tail - c.head) >> 4;
  const uint4 *gv = (const uint4 *)(g + c.head);
  uint4 *sv = (uint4 *)(s + c.head);
  for (int v = threadIdx.x; v < nv; v += blockDim.x) sv[v] = gv[v];
  int t = threadIdx.x;
  if (t < c.head)
    s[t] = g[t];
  else if (t >= 16 && t < 32 && c.tail + (t - 16) < n)
    s[c.tail + t - 16] = g[c.tail + t - 16];
}

/* Block-wide copy of sm + pt_shift(g) (n bytes) to global [g, g + n). The caller
 * synchronises before, after writing sm. */
__device__ __forceinline__ void pt_store(uint8_t *g, const uint8_t *sm, int n) {
  pt_cut c = pt_cut_of(g, n);
  const uint8_t *s = sm + pt_shift(g);
  int nv = (c.tail - c.head) >> 4;
  uint4 *gv = (uint4 *)(g + c.head);
  const uint4 *sv = (const uint4 *)(s + c.head);
  for (int v = threadIdx.x; v < nv; v += blockDim.x) gv[v] = sv[v];
  int t = threadIdx.x;
  if (t < c.head)
    g[t] = s[t];
  else if (t >= 16 && t < 32 && c.tail + (t - 16) < n)
    g[c.tail + t - 16] = s[c.tail + t - 16];
}

/* The 16 bytes of a uint4 as an array view (register-friendly: byte j of word j / 4). */
__device__ __forceinline__ uint8_t pt_byte(const uint4 &v, int j) {
  uint32_t w = j < 4 ? v.x : j < 8 ? v.y : j < 12 ? v.z : v.w;
  return (uint8_t)(w >> ((j & 3) * 8));
}

__device__ __forceinline__ void pt_set_byte(uint4 &v, int j, uint8_t b) {
  uint32_t sh = (uint32_t)(j & 3) * 8, m = ~(0xFFu << sh), x = (uint32_t)b << sh;
  if (j < 4)
    v.x = (v.x & m) | x;
  else if (j < 8)
    v.y = (v.y & m) | x;
  else if (j < 12)
    v.z = (v.z & m) | x;
  else
    v.w = (v.w & m) | x;
}

#endif
