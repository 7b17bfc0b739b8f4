/*
 * YUV 4:2:0 with interleaved chroma (NV12, and P010 / P016 with 16-bit samples, the
 * layouts NVDEC writes) to RGB, per pixel: shared by the GPU video decoders' kernel
 * (src/cuda/video.cu) and the CPU test that checks it against the CPU decoder
 * (tests/c/test_video_nv12.c).
 *
 * The colour maths is the one the CPU path gets from libswscale as video.c calls it (no
 * sws_setColorspaceDetails): BT.601 coefficients, limited ("MPEG") range unless the
 * stream says full ("JPEG") range. Chroma as stk_nv12_chroma says; swscale's integer
 * filters differ a little, mostly at sharp chroma edges: the tolerance measured in
 * test_video_nv12.c (and stated in docs/video.md) covers it. Common subset of C11 and C++ (STK_HD).
 */
#ifndef STOKER_SHARED_VIDEO_YUV_H
#define STOKER_SHARED_VIDEO_YUV_H

#include <stdint.h>

#include "gpu_common.h"

/* One decoded frame as NVDEC gives it: a luma plane and an interleaved CbCr plane of
 * half the height, pitches in bytes, 1 or 2 bytes per sample (2: the value in the high
 * bits, P010 / P016). */
typedef struct {
  const uint8_t *luma, *chroma;
  int64_t luma_pitch, chroma_pitch;
  int width, height;
  int bytes_per_sample;
  int full_range; /* 0: Y in 16..235, CbCr in 16..240 (8-bit units) */
} stk_nv12_view;

/* A sample scaled to 8-bit units (0..255, fractional for 16-bit samples). */
STK_HD float stk_nv12_sample(const uint8_t *row, int i, int bytes_per_sample) {
  if (bytes_per_sample == 1) return (float)row[i];
  const uint16_t v = (uint16_t)(row[2 * i] | (row[2 * i + 1] << 8));
  return (float)v * (255.0f / 65535.0f);
}

/* Chroma component c (0: Cb, 1: Cr) at luma position (x, y): each pair of columns shares
 * its chroma sample, as swscale's packed-RGB output does (measured: the closest of the
 * sitings tried), and rows are interpolated linearly between the two nearest chroma rows
 * (chroma half-way between luma rows), clamped at the borders. */
STK_HD float stk_nv12_chroma(const stk_nv12_view *v, int x, int y, int c) {
  const int cw = (v->width + 1) / 2, ch = (v->height + 1) / 2;
  const float fy = 0.5f * (float)y - 0.25f;
  int x0 = x / 2, y0 = fy < 0.0f ? -1 : (int)fy;
  const float ay = fy - (float)y0;
  int y1 = y0 + 1 < ch ? y0 + 1 : ch - 1;
  if (y0 < 0) y0 = 0;
  if (x0 > cw - 1) x0 = cw - 1;
  if (y0 > ch - 1) y0 = ch - 1;
  const int b = v->bytes_per_sample;
  const uint8_t *r0 = v->chroma + y0 * v->chroma_pitch, *r1 = v->chroma + y1 * v->chroma_pitch;
  return stk_nv12_sample(r0, 2 * x0 + c, b) * (1.0f - ay) + stk_nv12_sample(r1, 2 * x0 + c, b) * ay;
}

STK_HD uint8_t stk_nv12_u8(float v) {
  return (uint8_t)(v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int)(v + 0.5f));
}

/* RGB of pixel (x, y), rounded to uint8. */
STK_HD void stk_nv12_to_rgb(const stk_nv12_view *v, int x, int y, uint8_t rgb[3]) {
  const float kr = 0.299f, kb = 0.114f, kg = 1.0f - kr - kb;
  float yy = stk_nv12_sample(v->luma + y * v->luma_pitch, x, v->bytes_per_sample);
  float cb = stk_nv12_chroma(v, x, y, 0) - 128.0f, cr = stk_nv12_chroma(v, x, y, 1) - 128.0f;
  if (!v->full_range) {
    yy = (yy - 16.0f) * (255.0f / 219.0f);
    cb *= 255.0f / 224.0f;
    cr *= 255.0f / 224.0f;
  }
  rgb[0] = stk_nv12_u8(yy + 2.0f * (1.0f - kr) * cr);
  rgb[1] =
      stk_nv12_u8(yy - (2.0f * kb * (1.0f - kb) / kg) * cb - (2.0f * kr * (1.0f - kr) / kg) * cr);
  rgb[2] = stk_nv12_u8(yy + 2.0f * (1.0f - kb) * cb);
}

#endif /* STOKER_SHARED_VIDEO_YUV_H */
