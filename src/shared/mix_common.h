/*
 * The arithmetic of MixUp and CutMix (torchvision.transforms.v2 semantics), shared by the
 * CPU operators (src/ops/mixup.c) and the GPU kernel (src/cuda/mix.cu), so the CPU tests
 * check the GPU's per-element maths too. C11 and CUDA C++.
 *
 * torchvision mixes a float batch as `x.roll(1, 0).mul_(1 - lam).add_(x.mul(lam))`: two
 * float products and one sum, each rounded (STK_FMUL / STK_FADD keep nvcc from fusing
 * them). A weight of exactly 0 or 1 selects the other value untouched (CutMix's box and
 * its outside), so a copy stays bit-exact whatever the values.
 */
#ifndef STOKER_SHARED_MIX_COMMON_H
#define STOKER_SHARED_MIX_COMMON_H

#include <math.h>
#include <stdint.h>

#include "gpu_common.h"

/* One element: own value a with weight wa, partner's value b with weight wb. */
STK_HD float stk_mix_value(float a, float b, float wa, float wb) {
  if (wb == 0.0f) return a;
  if (wa == 0.0f) return b;
  return STK_FADD(STK_FMUL(b, wb), STK_FMUL(a, wa));
}

/* A mixed value stored as uint8: + 0.5, clamped, truncated (stk__convert's rounding). */
STK_HD uint8_t stk_mix_u8(float v) {
  v = v + 0.5f;
  return v <= 0.0f ? (uint8_t)0 : v >= 255.0f ? (uint8_t)255 : (uint8_t)v;
}

/* CutMix's box from lam and the centre (rx, ry) in an h x w image, as torchvision:
 * half sides int(0.5 * sqrt(1 - lam) * side), clamped to the image.
 * box = {x1, y1, x2, y2}, the half-open rectangle [y1, y2) x [x1, x2). */
STK_HD void stk_cutmix_box(double lam, int64_t h, int64_t w, int64_t rx, int64_t ry,
                           int64_t box[4]) {
  double r = 0.5 * sqrt(1.0 - lam);
  int64_t rw = (int64_t)(r * (double)w), rh = (int64_t)(r * (double)h);
  box[0] = rx - rw < 0 ? 0 : rx - rw;
  box[1] = ry - rh < 0 ? 0 : ry - rh;
  box[2] = rx + rw > w ? w : rx + rw;
  box[3] = ry + rh > h ? h : ry + rh;
}

/* The label weight after pasting the box: 1 - box area / image area. */
STK_HD double stk_cutmix_lam(const int64_t box[4], int64_t h, int64_t w) {
  return 1.0 - (double)((box[2] - box[0]) * (box[3] - box[1])) / (double)(w * h);
}

/* Whether pixel (y, x) lies in the box. */
STK_HD int stk_in_box(const int64_t box[4], int64_t y, int64_t x) {
  return x >= box[0] && x < box[2] && y >= box[1] && y < box[3];
}

#endif /* STOKER_SHARED_MIX_COMMON_H */
