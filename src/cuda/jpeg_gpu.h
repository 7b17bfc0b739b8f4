/*
 * stoker's own GPU JPEG decoder for baseline files (beside nvJPEG's engines): the host
 * parses headers into stk_jpeg_frame (src/shared/jpeg_frame.h), batched kernels decode
 * the entropy-coded data into coefficients and the coefficients into pixels. CUDA C++
 * only (libstoker_cuda.so's internals).
 */
#ifndef STOKER_CUDA_JPEG_GPU_H
#define STOKER_CUDA_JPEG_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_internal.h"
#include "../shared/jpeg_frame.h"
#include "../shared/jpeg_huffman.h"

/* Entropy-coded data -> coefficients (jpeg_huffman.cu), n images in the same launches
 * (src/shared/jpeg_huffman.h has the algorithm). Image i: frames[i] and tables[i] as
 * src/codecs/jpeg_frame.c parsed them, its un-stuffed scan (scan[i], scan_bytes[i]) and
 * restart offsets (restarts[i], n_restarts[i]) in host memory (packed and uploaded once
 * per batch); coef[i]: device, frames[i].total_blocks * 64 int16. d_status (device, n
 * ints, may be NULL): an image whose data turns out corrupt gets STK_GPU_DECODE_FAILED
 * (others are left alone: the caller zeroes it first) and unspecified coefficients.
 * Queued on `stream` without waiting; temporaries are stream-ordered. Fails with
 * STK_ERR_INVALID_ARGUMENT naming the image before launching anything. */
STK_HIDDEN int stk_gpu_jpeg_coefficients(stk_gpu_ctx *ctx, int n, const stk_jpeg_frame *frames,
                                         const stk_jpeg_huffman *tables, const uint8_t *const *scan,
                                         const size_t *scan_bytes, const int32_t *const *restarts,
                                         const int *n_restarts, int16_t *const *coef, int *d_status,
                                         cudaStream_t stream, char *err, size_t errlen);

/* Coefficients -> pixels (jpeg_idct.cu), n images in the same launches, exactly as
 * libjpeg-turbo decodes them with JDCT_ISLOW and fancy upsampling (src/shared/
 * jpeg_pixels.h). coef[i]: device, frames[i].total_blocks * 64 int16 as jpeg_frame.h
 * lays them out. dst[i]: device, receives roi_h rows of roi_w * channels bytes, row r at
 * dst[i] + r * dst_pitch[i]. roi: NULL (whole images) or 4 ints per image, x, y, w, h,
 * w == 0 for the whole image. color: STK_GPU_COLOR_RGB, _BGR or _GRAY (channels 3, 3, 1;
 * gray from a colour file is its Y component). Host arrays; queued on `stream` (temporary
 * device memory is stream-ordered). Fails with STK_ERR_INVALID_ARGUMENT naming the image
 * for a frame, region or buffer the kernels cannot handle, before launching anything. */
STK_HIDDEN int stk_gpu_jpeg_pixels(stk_gpu_ctx *ctx, int n, const stk_jpeg_frame *frames,
                                   const int16_t *const *coef, uint8_t *const *dst,
                                   const size_t *dst_pitch, const int *roi, int color,
                                   cudaStream_t stream, char *err, size_t errlen);

#endif
