/*
 * The part of nvJPEG's C API that stoker uses, declared from NVIDIA's published
 * documentation (type names, enum values, signatures), so that the library can be loaded
 * at run time with dlopen/dlsym and nothing links against it. Plain C; the stream type
 * is spelled `struct CUstream_st *`, which is what cudaStream_t is.
 */
#ifndef STOKER_CUDA_NVJPEG_MIN_H
#define STOKER_CUDA_NVJPEG_MIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;

typedef enum {
  NVJPEG_STATUS_SUCCESS = 0,
  NVJPEG_STATUS_NOT_INITIALIZED = 1,
  NVJPEG_STATUS_INVALID_PARAMETER = 2,
  NVJPEG_STATUS_BAD_JPEG = 3,
  NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
  NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
  NVJPEG_STATUS_EXECUTION_FAILED = 6,
  NVJPEG_STATUS_ARCH_MISMATCH = 7,
  NVJPEG_STATUS_INTERNAL_ERROR = 8,
  NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
  NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10
} nvjpegStatus_t;

typedef enum {
  NVJPEG_CSS_444 = 0,
  NVJPEG_CSS_422 = 1,
  NVJPEG_CSS_420 = 2,
  NVJPEG_CSS_440 = 3,
  NVJPEG_CSS_411 = 4,
  NVJPEG_CSS_410 = 5,
  NVJPEG_CSS_GRAY = 6,
  NVJPEG_CSS_410V = 7,
  NVJPEG_CSS_UNKNOWN = -1
} nvjpegChromaSubsampling_t;

typedef enum {
  NVJPEG_OUTPUT_UNCHANGED = 0,
  NVJPEG_OUTPUT_YUV = 1,
  NVJPEG_OUTPUT_Y = 2,
  NVJPEG_OUTPUT_RGB = 3,
  NVJPEG_OUTPUT_BGR = 4,
  NVJPEG_OUTPUT_RGBI = 5,
  NVJPEG_OUTPUT_BGRI = 6
} nvjpegOutputFormat_t;

typedef enum {
  NVJPEG_BACKEND_DEFAULT = 0,
  NVJPEG_BACKEND_HYBRID = 1,
  NVJPEG_BACKEND_GPU_HYBRID = 2,
  NVJPEG_BACKEND_HARDWARE = 3,
  NVJPEG_BACKEND_GPU_HYBRID_DEVICE = 4,
  NVJPEG_BACKEND_HARDWARE_DEVICE = 5,
  NVJPEG_BACKEND_LOSSLESS_JPEG = 6
} nvjpegBackend_t;

typedef enum {
  NVJPEG_ENCODING_UNKNOWN = 0x0,
  NVJPEG_ENCODING_BASELINE_DCT = 0xc0,
  NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN = 0xc1,
  NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN = 0xc2,
  NVJPEG_ENCODING_LOSSLESS_HUFFMAN = 0xc3
} nvjpegJpegEncoding_t;

#define NVJPEG_MAX_COMPONENT 4
#define NVJPEG_FLAGS_DEFAULT 0

typedef struct {
  unsigned char *channel[NVJPEG_MAX_COMPONENT];
  size_t pitch[NVJPEG_MAX_COMPONENT];
} nvjpegImage_t;

typedef int (*tDevMalloc)(void **, size_t);
typedef int (*tDevFree)(void *);
typedef int (*tPinnedMalloc)(void **, size_t, unsigned int flags);
typedef int (*tPinnedFree)(void *);
typedef struct {
  tDevMalloc dev_malloc;
  tDevFree dev_free;
} nvjpegDevAllocator_t;
typedef struct {
  tPinnedMalloc pinned_malloc;
  tPinnedFree pinned_free;
} nvjpegPinnedAllocator_t;

typedef struct nvjpegHandle *nvjpegHandle_t;
typedef struct nvjpegJpegState *nvjpegJpegState_t;
typedef struct nvjpegJpegStream *nvjpegJpegStream_t;
typedef struct nvjpegDecodeParams *nvjpegDecodeParams_t;
typedef struct nvjpegJpegDecoder *nvjpegJpegDecoder_t;
typedef struct nvjpegBufferPinned *nvjpegBufferPinned_t;
typedef struct nvjpegBufferDevice *nvjpegBufferDevice_t;

/* X(required, return, name, parameters): every entry point stoker looks up. Required
 * ones must all be present for nvJPEG to count as loaded. */
#define STK_NVJPEG_FUNCS(X)                                                                        \
  X(1, nvjpegStatus_t, nvjpegGetProperty, (int type, int *value))                                  \
  X(1, nvjpegStatus_t, nvjpegCreateEx,                                                             \
    (nvjpegBackend_t backend, nvjpegDevAllocator_t * dev, nvjpegPinnedAllocator_t * pinned,        \
     unsigned int flags, nvjpegHandle_t *handle))                                                  \
  X(1, nvjpegStatus_t, nvjpegDestroy, (nvjpegHandle_t handle))                                     \
  X(1, nvjpegStatus_t, nvjpegJpegStateCreate, (nvjpegHandle_t handle, nvjpegJpegState_t * state))  \
  X(1, nvjpegStatus_t, nvjpegJpegStateDestroy, (nvjpegJpegState_t state))                          \
  X(1, nvjpegStatus_t, nvjpegGetImageInfo,                                                         \
    (nvjpegHandle_t handle, const unsigned char *data, size_t length, int *n_components,           \
     nvjpegChromaSubsampling_t *subsampling, int *widths, int *heights))                           \
  X(1, nvjpegStatus_t, nvjpegDecodeBatchedInitialize,                                              \
    (nvjpegHandle_t handle, nvjpegJpegState_t state, int batch_size, int max_cpu_threads,          \
     nvjpegOutputFormat_t fmt))                                                                    \
  X(1, nvjpegStatus_t, nvjpegDecodeBatched,                                                        \
    (nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *const *data,             \
     const size_t *lengths, nvjpegImage_t *dst, struct CUstream_st *stream))                       \
  X(1, nvjpegStatus_t, nvjpegDecodeBatchedSupported,                                               \
    (nvjpegHandle_t handle, nvjpegJpegStream_t stream, int *is_supported))                         \
  X(1, nvjpegStatus_t, nvjpegJpegStreamCreate, (nvjpegHandle_t handle, nvjpegJpegStream_t * s))    \
  X(1, nvjpegStatus_t, nvjpegJpegStreamDestroy, (nvjpegJpegStream_t s))                            \
  X(1, nvjpegStatus_t, nvjpegJpegStreamParse,                                                      \
    (nvjpegHandle_t handle, const unsigned char *data, size_t length, int save_metadata,           \
     int save_stream, nvjpegJpegStream_t s))                                                       \
  X(1, nvjpegStatus_t, nvjpegJpegStreamParseHeader,                                                \
    (nvjpegHandle_t handle, const unsigned char *data, size_t length, nvjpegJpegStream_t s))       \
  X(1, nvjpegStatus_t, nvjpegJpegStreamGetFrameDimensions,                                         \
    (nvjpegJpegStream_t s, unsigned int *w, unsigned int *h))                                      \
  X(1, nvjpegStatus_t, nvjpegJpegStreamGetComponentsNum, (nvjpegJpegStream_t s, unsigned int *n))  \
  X(1, nvjpegStatus_t, nvjpegJpegStreamGetJpegEncoding,                                            \
    (nvjpegJpegStream_t s, nvjpegJpegEncoding_t * enc))                                            \
  X(1, nvjpegStatus_t, nvjpegDecodeParamsCreate,                                                   \
    (nvjpegHandle_t handle, nvjpegDecodeParams_t * p))                                             \
  X(1, nvjpegStatus_t, nvjpegDecodeParamsDestroy, (nvjpegDecodeParams_t p))                        \
  X(1, nvjpegStatus_t, nvjpegDecodeParamsSetOutputFormat,                                          \
    (nvjpegDecodeParams_t p, nvjpegOutputFormat_t fmt))                                            \
  X(1, nvjpegStatus_t, nvjpegDecodeParamsSetROI,                                                   \
    (nvjpegDecodeParams_t p, int x, int y, int w, int h))                                          \
  X(1, nvjpegStatus_t, nvjpegDecoderCreate,                                                        \
    (nvjpegHandle_t handle, nvjpegBackend_t backend, nvjpegJpegDecoder_t * decoder))               \
  X(1, nvjpegStatus_t, nvjpegDecoderDestroy, (nvjpegJpegDecoder_t decoder))                        \
  X(1, nvjpegStatus_t, nvjpegDecoderJpegSupported,                                                 \
    (nvjpegJpegDecoder_t decoder, nvjpegJpegStream_t s, nvjpegDecodeParams_t p,                    \
     int *is_supported))                                                                           \
  X(1, nvjpegStatus_t, nvjpegDecoderStateCreate,                                                   \
    (nvjpegHandle_t handle, nvjpegJpegDecoder_t decoder, nvjpegJpegState_t * state))               \
  X(1, nvjpegStatus_t, nvjpegBufferPinnedCreate,                                                   \
    (nvjpegHandle_t handle, nvjpegPinnedAllocator_t * alloc, nvjpegBufferPinned_t * buf))          \
  X(1, nvjpegStatus_t, nvjpegBufferPinnedDestroy, (nvjpegBufferPinned_t buf))                      \
  X(1, nvjpegStatus_t, nvjpegBufferDeviceCreate,                                                   \
    (nvjpegHandle_t handle, nvjpegDevAllocator_t * alloc, nvjpegBufferDevice_t * buf))             \
  X(1, nvjpegStatus_t, nvjpegBufferDeviceDestroy, (nvjpegBufferDevice_t buf))                      \
  X(1, nvjpegStatus_t, nvjpegStateAttachPinnedBuffer,                                              \
    (nvjpegJpegState_t state, nvjpegBufferPinned_t buf))                                           \
  X(1, nvjpegStatus_t, nvjpegStateAttachDeviceBuffer,                                              \
    (nvjpegJpegState_t state, nvjpegBufferDevice_t buf))                                           \
  X(1, nvjpegStatus_t, nvjpegDecodeJpegHost,                                                       \
    (nvjpegHandle_t handle, nvjpegJpegDecoder_t dec, nvjpegJpegState_t state,                      \
     nvjpegDecodeParams_t p, nvjpegJpegStream_t s))                                                \
  X(1, nvjpegStatus_t, nvjpegDecodeJpegTransferToDevice,                                           \
    (nvjpegHandle_t handle, nvjpegJpegDecoder_t dec, nvjpegJpegState_t state,                      \
     nvjpegJpegStream_t s, struct CUstream_st * stream))                                           \
  X(1, nvjpegStatus_t, nvjpegDecodeJpegDevice,                                                     \
    (nvjpegHandle_t handle, nvjpegJpegDecoder_t dec, nvjpegJpegState_t state, nvjpegImage_t * dst, \
     struct CUstream_st * stream))                                                                 \
  X(0, nvjpegStatus_t, nvjpegDecodeBatchedEx,                                                      \
    (nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *const *data,             \
     const size_t *lengths, nvjpegImage_t *dst, nvjpegDecodeParams_t *params,                      \
     struct CUstream_st *stream))                                                                  \
  X(0, nvjpegStatus_t, nvjpegDecodeBatchedSupportedEx,                                             \
    (nvjpegHandle_t handle, nvjpegJpegStream_t s, nvjpegDecodeParams_t p, int *is_supported))      \
  X(0, nvjpegStatus_t, nvjpegGetHardwareDecoderInfo,                                               \
    (nvjpegHandle_t handle, unsigned int *engines, unsigned int *cores))                           \
  X(0, nvjpegStatus_t, nvjpegJpegStreamGetSamplePrecision,                                         \
    (nvjpegJpegStream_t s, unsigned int *precision))                                               \
  X(0, nvjpegStatus_t, nvjpegSetDeviceMemoryPadding, (size_t padding, nvjpegHandle_t handle))      \
  X(0, nvjpegStatus_t, nvjpegSetPinnedMemoryPadding, (size_t padding, nvjpegHandle_t handle))      \
  X(0, nvjpegStatus_t, nvjpegDecodeBatchedPreAllocate,                                             \
    (nvjpegHandle_t handle, nvjpegJpegState_t state, int batch, int width, int height,             \
     nvjpegChromaSubsampling_t css, nvjpegOutputFormat_t fmt))

/* The table of entry points, one pointer per X entry, named as the function. */
#define STK__NVJPEG_FIELD(req, ret, name, params) ret(*name) params;
typedef struct {
  STK_NVJPEG_FUNCS(STK__NVJPEG_FIELD)
} stk_nvjpeg_fns;
#undef STK__NVJPEG_FIELD

/* The symbolic name of a status ("NVJPEG_STATUS_BAD_JPEG"); static storage. */
static inline const char *stk_nvjpeg_status_name(int s) {
  static const char *const names[] = {"NVJPEG_STATUS_SUCCESS",
                                      "NVJPEG_STATUS_NOT_INITIALIZED",
                                      "NVJPEG_STATUS_INVALID_PARAMETER",
                                      "NVJPEG_STATUS_BAD_JPEG",
                                      "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
                                      "NVJPEG_STATUS_ALLOCATOR_FAILURE",
                                      "NVJPEG_STATUS_EXECUTION_FAILED",
                                      "NVJPEG_STATUS_ARCH_MISMATCH",
                                      "NVJPEG_STATUS_INTERNAL_ERROR",
                                      "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
                                      "NVJPEG_STATUS_INCOMPLETE_BITSTREAM"};
  return s >= 0 && s <= 10 ? names[s] : "NVJPEG_STATUS_(unknown)";
}

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_NVJPEG_MIN_H */
