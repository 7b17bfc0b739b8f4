/* Entry points of stoker's own GPU JPEG decoder (CUDA C++, inside libstoker_cuda.so):
 * the host parses with src/codecs/jpeg_frame.c; the stages run batched on one stream. */
#ifndef STOKER_CUDA_JPEG_GPU_H
#define STOKER_CUDA_JPEG_GPU_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_internal.h"
#include "../shared/jpeg_frame.h"
#include "../shared/jpeg_huffman.h"

/* Huffman stage (jpeg_huffman.cu): decodes n images' entropy-coded data to coefficients
 * (the layout of jpeg_frame.h) in the same launches. Image i: frames[i] and tables[i] as
 * the parser gave them, its un-stuffed scan (scan[i], scan_bytes[i]) and restart offsets
 * (restarts[i], n_restarts[i]) in host memory (packed and uploaded once per batch),
 * coef[i] a device buffer of frames[i].total_blocks * 64 int16. d_status (device, n ints,
 * may be NULL): an image whose data turns out corrupt gets STK_GPU_DECODE_FAILED there
 * (others are left alone: the caller zeroes it) and its coefficients are unspecified.
 * Queues work on `stream` and returns without waiting; temporaries are freed on the
 * stream. Returns 0 or a status with the reason in err. */
STK_HIDDEN int stk_gpu_jpeg_coefficients(stk_gpu_ctx *ctx, int n, const stk_jpeg_frame *frames,
                                         const stk_jpeg_huffman *tables, const uint8_t *const *scan,
                                         const size_t *scan_bytes, const int32_t *const *restarts,
                                         const int *n_restarts, int16_t *const *coef, int *d_status,
                                         cudaStream_t stream, char *err, size_t errlen);

#endif
