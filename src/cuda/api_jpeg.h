/* stoker's own GPU JPEG decoder (src/cuda/jpeg_own.cu over jpeg_huffman.cu and
 * jpeg_idct.cu), reached through the generic kernel interface (gpu_kernels.h). It runs on
 * the CUDA cores beside nvJPEG's hardware engines, whose batched call is bound by the one
 * host thread feeding it. The host parses each file (src/codecs/jpeg_frame.h: the frame,
 * the Huffman tables, the entropy-coded bytes with stuffing and restart markers removed);
 * the device decodes the whole batch in a few launches: self-synchronising parallel
 * Huffman decoding into coefficients (src/shared/jpeg_huffman.h), then dequantisation,
 * the accurate integer IDCT, fancy upsampling and colour conversion, byte-exact with
 * libjpeg-turbo (src/shared/jpeg_pixels.h). The same conventions as gpu_api.h. */
#ifndef STOKER_CUDA_API_JPEG_H
#define STOKER_CUDA_API_JPEG_H

#include "gpu_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  /* host: the parse (src/codecs/jpeg_frame.h, stk__jpeg_parsed), as one block */
  const void *parsed;
  /* region of the image to write; roi_w <= 0 or roi_h <= 0: the whole image */
  int roi_x, roi_y, roi_w, roi_h;
  uint8_t *dst; /* device: (region) height rows of width * channels bytes */
  size_t dst_pitch;
} stk_gpu_jpeg_decode_sample;

/* jpeg_decode's batch arguments: the output colour (STK_GPU_COLOR_*) and n statuses. */
typedef struct {
  int color;
  /* page-locked host memory (pinned_alloc or a registered block) the device writes in
   * stream order: STK_GPU_DECODE_OK, or STK_GPU_DECODE_FAILED when the entropy-coded data
   * did not decode (a bad code, a block past 64 coefficients, a count of blocks other
   * than the frame's): the destination then holds garbage and the CPU decoder gives the
   * verdict. Read it once the stream has passed the call (an event recorded after it). */
  int *status;
} stk_gpu_jpeg_decode_args;

/* The kernel:
 * - jpeg_decode: decodes n baseline JPEGs parsed by stk__jpeg_parse into args->color on
 *   `stream`, without waiting for the device. The return value is an error only for bad
 *   arguments or device failures.
 */
#define STK_GPU_KERNELS_JPEG(X) \
  X(JPEG_DECODE, jpeg_decode, stk_gpu_jpeg_decode_sample, stk_gpu_jpeg_decode_args)

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_API_JPEG_H */
