/*
 * Video decoding through FFmpeg (libavformat, libavcodec, libswscale), from bytes in
 * memory or from a file. Frames are numbered in presentation order from 0, as the
 * decoder outputs them; the count comes from demuxing the stream once (its packets),
 * without decoding. Optional at build time: without FFmpeg (STK_HAVE_LIBAV undefined)
 * every call fails with STK_ERR_UNSUPPORTED and "built without FFmpeg".
 */
#ifndef STOKER_CODECS_VIDEO_H
#define STOKER_CODECS_VIDEO_H

#include "../core/core.h"
#include "../shared/video_yuv.h"

typedef struct stk__video stk__video;

bool stk__video_codec_available(void);
/* Opens a video from memory (`bytes`, `n`; the bytes must outlive the handle) or, when
 * bytes is NULL, from the file `path`. Errors (STK_ERR_DECODE, STK_ERR_IO,
 * STK_ERR_UNSUPPORTED) carry no prefix; the caller names the sample. */
stk_status stk__video_open(const void *bytes, size_t n, const char *path, stk__video **out);
void stk__video_close(stk__video *v);
/* Frame count, width, height and frame rate (frames per second, 0 when unknown). */
int64_t stk__video_frames(const stk__video *v);
int stk__video_width(const stk__video *v);
int stk__video_height(const stk__video *v);
double stk__video_fps(const stk__video *v);
/* Decodes the frames `index[0..count)` (any order, repeats allowed, each < the frame
 * count) as RGB24 into dst: count frames of out_h x out_w x 3 bytes, scaled bilinearly
 * when that differs from the video's size (0: the video's width or height). */
stk_status stk__video_read(stk__video *v, const int64_t *index, int64_t count, int out_w, int out_h,
                           uint8_t *dst);

/* ---- decoding on an NVIDIA GPU (NVDEC, through FFmpeg's CUDA hwaccel) ----
 * FFmpeg loads libcuda and libnvcuvid itself at run time and decodes into its device
 * context's CUDA primary context (the one libstoker_cuda's runtime API uses). A handle
 * keeps a pool of decoders (video.c says why), each copying its decoded surfaces into
 * frames of device memory on a stream of its own. */
typedef struct stk__video_hw stk__video_hw;
/* Sets CUDA device `device`'s primary context flags to what FFmpeg's CUDA device needs
 * (video_cuda.c says why); stk__video_hw_open calls it. */
stk_status stk__video_cuda_align(int device);
/* The same as early as the operators' init, before the pipeline's own CUDA runtime makes
 * the primary context active: best effort, a failure (no driver: the stand-in backend of
 * the tests, or no GPU) is left for the NVDEC open to report. */
void stk__video_cuda_align_early(int device);
/* A non-blocking stream in CUDA context `cuda_ctx` (a CUcontext) for FFmpeg's copies, and
 * its destruction (video_cuda.c). */
stk_status stk__video_cuda_stream(void *cuda_ctx, void **stream);
void stk__video_cuda_stream_destroy(void *stream);
/* Waits until the work queued on `stream` (a CUstream; NULL: the legacy default stream)
 * in `cuda_ctx` is done. */
stk_status stk__video_cuda_sync(void *cuda_ctx, void *stream);
/* Opens CUDA device `device` for decoding; fails (STK_ERR_UNSUPPORTED, with FFmpeg's
 * reason) without an NVIDIA driver or an FFmpeg built without CUDA. Thread-safe to share
 * once opened: reads on several threads lend decoders from its pool. `emulate` (the
 * tests' CPU stand-in backend): software decoding into NV12 host memory instead of NVDEC. */
stk_status stk__video_hw_open(int device, bool emulate, stk__video_hw **out);
/* Closes the pool's decoders; no read may be in progress. */
void stk__video_hw_close(stk__video_hw *hw);
/* How many decoders the handle has opened so far (reads beyond that reused one). */
int64_t stk__video_hw_decoders_opened(stk__video_hw *hw);
/* A frame decoded on the device: `view` describes its planes, which stay valid until
 * stk__video_gpu_release: a copy in device memory of its own (`mem`, in CUDA context
 * `ctx`), or, emulated, FFmpeg's frame in host memory (`ref`). */
typedef struct {
  void *ref, *mem, *ctx;
  stk_nv12_view view;
} stk__video_gpu_frame;
/* Copies a decoded frame (device planes `src`) into device memory of its own, queued on
 * `stream` (a CUstream) in `cuda_ctx` (a CUcontext); *dst describes the copy, *mem owns it
 * (video_cuda.c says why). */
stk_status stk__video_cuda_copy(void *cuda_ctx, void *stream, const stk_nv12_view *src,
                                stk_nv12_view *dst, void **mem);
void stk__video_cuda_free(void *cuda_ctx, void *mem);
/* As stk__video_read, into out[0..count) (device frames at the video's size), decoded
 * with NVDEC. When it returns the frames are complete in device memory: any stream may
 * read them. A stream NVDEC cannot decode (codec, profile, size) fails with
 * STK_ERR_UNSUPPORTED. On failure no frame is held. */
stk_status stk__video_read_gpu(stk__video *v, stk__video_hw *hw, const int64_t *index,
                               int64_t count, stk__video_gpu_frame *out);
/* Drops the frame (NULL ref: nothing). */
void stk__video_gpu_release(stk__video_gpu_frame *f);

#endif /* STOKER_CODECS_VIDEO_H */
