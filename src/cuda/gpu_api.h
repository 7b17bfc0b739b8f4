/*
 * The boundary between the CPU library and libstoker_cuda.so (the GPU backend).
 *
 * Plain C11 with no CUDA types: the CPU library loads libstoker_cuda.so at run time with
 * dlopen, looks up the one exported symbol `stk_cuda_get_api`, and calls everything
 * through the table it returns. The core never links CUDA; a machine without a GPU (or
 * without the library) simply fails the lookup and reports it.
 *
 * The table has two parts. The runtime (devices, memory, streams, events, the JPEG
 * decoder) is a set of named functions. The operators' kernels are not: they are reached
 * through one generic entry, launch(ctx, kernel id, launch record), with supports(ctx,
 * kernel id) to ask whether a backend has a kernel at all. The kernels, their ids and
 * their typed launchers are listed in gpu_kernels.h (from the families' lists in the
 * api_*.h headers); adding a kernel adds one line to its family's list and nothing here.
 *
 * Conventions, for every function in the table:
 * - The return value is an stk_status code (0 = STK_OK). Typical failures:
 *   STK_ERR_INVALID_ARGUMENT (bad arguments), STK_ERR_OUT_OF_MEMORY (device or pinned
 *   memory), STK_ERR_UNSUPPORTED (dtype / channel count / filter width a kernel does not
 *   take), STK_ERR_DEVICE (any CUDA or nvJPEG failure). Nothing aborts the process.
 * - `err` / `errlen`: a caller-provided buffer (may be NULL) that receives, on failure,
 *   "<function>: <what> (<cudaGetErrorString / nvJPEG status name>)". STK_GPU_ERRLEN
 *   bytes are always enough. It is left untouched on success.
 * - Streams are `uintptr_t` handles holding a cudaStream_t: the context's own streams
 *   (api->stream(ctx, STK_GPU_STREAM_COMPUTE / _COPY)) or any stream of the process
 *   (e.g. torch.cuda.current_stream().cuda_stream). All work is queued on the stream
 *   given; nothing synchronises the device unless its name says so.
 * - Device pointers come from device_alloc (the context's stream-ordered pool) or any
 *   other CUDA allocation on the same device.
 * - Every function may be called from any host thread; the context sets its device on
 *   the calling thread. Calls on one context from several threads at once are allowed
 *   except decode_batch, which must not run concurrently with itself on one context.
 * - Per-sample parameters are passed as host arrays; each kernel entry point copies them
 *   into one device array (stream-ordered) and makes one launch per pass for the whole
 *   batch (resample: two passes, one when the filter is nearest).
 */
#ifndef STOKER_CUDA_GPU_API_H
#define STOKER_CUDA_GPU_API_H

#include <stddef.h>
#include <stdint.h>

#include "stoker/stoker.h" /* stk_status, stk_dtype */

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct or the table below changes incompatibly. */
#define STK_GPU_ABI_VERSION 7
/* A buffer of this many bytes holds any error message. */
#define STK_GPU_ERRLEN      512

/* The context's streams, for api->stream(). */
/* DECODE: the pipeline's mixed decoders, which run one batch ahead of the compute
 * stream's kernels on their own thread. */
enum { STK_GPU_STREAM_COMPUTE = 0, STK_GPU_STREAM_COPY = 1, STK_GPU_STREAM_DECODE = 2 };

/* Interpolation codes (the values of stk__interp in src/ops/resample.h). */
enum {
  STK_GPU_INTERP_NEAREST = 0,
  STK_GPU_INTERP_LINEAR = 1,
  STK_GPU_INTERP_CUBIC = 2,
  STK_GPU_INTERP_LANCZOS3 = 3
};

/* Decoded colour (the values of stk__color in src/codecs/codecs.h). */
enum { STK_GPU_COLOR_RGB = 0, STK_GPU_COLOR_BGR = 1, STK_GPU_COLOR_GRAY = 2 };

/* Per-sample decode results (stk_gpu_decode_out.status). */
enum {
  STK_GPU_DECODE_OK = 0,
  /* nvJPEG cannot take this stream here (not a JPEG, progressive with no hybrid backend,
   * CMYK / 2 or 4 components, 12-bit, lossless, a header nvJPEG refuses): decode on the
   * CPU and upload. Nothing was written to dst. */
  STK_GPU_DECODE_FALLBACK = 1,
  /* nvJPEG accepted the header but failed while decoding (corrupt or truncated entropy
   * data, or an internal failure): run the CPU decoder, which gives the verdict and the
   * message under the pipeline's bad-input policy. dst holds garbage. */
  STK_GPU_DECODE_FAILED = 2
};

/* Which nvJPEG path decoded a sample (stk_gpu_decode_out.backend). */
enum {
  STK_GPU_BACKEND_NONE = 0,
  STK_GPU_BACKEND_HARDWARE = 1,
  STK_GPU_BACKEND_HYBRID = 2,
  STK_GPU_BACKEND_GPU_HYBRID = 3
};

/* How a region of interest was honoured (stk_gpu_decode_out.roi_mode). */
enum {
  STK_GPU_ROI_NONE = 0,   /* whole image requested */
  STK_GPU_ROI_NVJPEG = 1, /* nvJPEG decoded only the region (decode params ROI) */
  STK_GPU_ROI_CROPPED = 2 /* decoded whole into a temporary, region copied by a kernel */
};

typedef struct stk_gpu_ctx stk_gpu_ctx; /* opaque */

/* ---------------------------------------------------------------------------------- */
/* Context, device, memory                                                             */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  int device; /* CUDA device ordinal */
  /* Bytes the device pool keeps cached after frees (cudaMemPoolAttrReleaseThreshold);
   * beyond that, memory goes back to the driver at the next synchronisation. 0: 2 GiB. */
  uint64_t device_cache_bytes;
  uint64_t pinned_cache_bytes; /* pinned host bytes kept for reuse; 0: 256 MiB */
  int decode_threads;          /* host threads for nvJPEG header parsing and the hybrid
                                  (CPU Huffman) path, the caller's thread included;
                                  0: 4 */
  int no_nvjpeg;               /* non-zero: do not load nvJPEG (decode_batch refuses) */
  int no_hw_decoder;           /* non-zero: never use the hardware JPEG decoder */
  /* The bound of every wait on the device inside the backend (stream_sync, event_sync,
   * decode_batch's waits, close): past it the call fails with STK_ERR_DEVICE naming what
   * it waited for, instead of waiting for ever on work the device never finishes.
   * 0: 300000 (5 minutes). */
  int64_t wait_timeout_ms;
} stk_gpu_open_opts;

typedef struct {
  char name[128];
  int device, cc_major, cc_minor, sm_count;
  int64_t total_memory;
  int has_nvjpeg;                      /* nvJPEG loaded */
  int nvjpeg_version;                  /* major*1000 + minor*10 + patch, 0 without nvJPEG */
  char nvjpeg_path[64];                /* the soname that was loaded */
  int has_hw_decoder;                  /* the hardware backend initialised */
  int hw_engines, hw_cores_per_engine; /* from nvjpegGetHardwareDecoderInfo (0: unknown) */
  int has_batched_roi;                 /* nvjpegDecodeBatchedEx present (hardware ROI decode) */
  int host_memory; /* 1: a stand-in backend (tests) whose "device" memory is host memory */
} stk_gpu_device_info;

typedef struct {
  int64_t device_in_use;             /* bytes allocated from the context's pool and not yet freed */
  int64_t device_reserved;           /* bytes the pool holds from the driver (in use + cached) */
  int64_t device_peak;               /* high-water mark of device_in_use */
  int64_t device_free, device_total; /* cudaMemGetInfo: the whole device, all users */
  int64_t pinned_in_use, pinned_cached, pinned_peak;
  int64_t decoded_hw, decoded_hybrid, decode_fallbacks, decode_failures; /* counters */
  /* host time of decode_batch: header parsing (wall, on the decode threads), waiting
   * before the engines' call for their previous batch and, unless the destinations are
   * idle, until they are (see decode.cu), the
   * engines' batched call (the wait included), waiting for the hybrid samples after it */
  int64_t decode_parse_ns, decode_fence_ns, decode_hw_call_ns, decode_hybrid_wait_ns;
  double decode_hw_share; /* the engines' share of the capable samples in the last batch */
} stk_gpu_stats;

/* ---------------------------------------------------------------------------------- */
/* Decoding                                                                            */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  int width, height; /* as stored (no EXIF orientation applied) */
  int components;    /* 1, 3 (2 and 4 are reported; decode_batch falls back) */
  int subsampling;   /* nvjpegChromaSubsampling_t value (0 444, 1 422, 2 420, ...) */
} stk_gpu_jpeg_info;

/* What decode_classify found out about one JPEG, for decode_batch (which then skips its
 * own header parsing for the sample). */
typedef struct {
  int status;        /* STK_GPU_DECODE_OK: nvJPEG takes it; STK_GPU_DECODE_FALLBACK: not */
  int nvjpeg_status; /* why not (nvjpegStatus_t) */
  int width, height, components; /* as stored, when the header parsed */
  int hw_ok;                     /* the hardware engines accept it (with its region) */
  int roi;                       /* a region was given */
} stk_gpu_decode_class;

typedef struct {
  const uint8_t *data; /* host bytes of the file (pinned or pageable) */
  size_t size;
  /* Region of interest in STORED coordinates (EXIF orientation is the caller's
   * business); roi_w <= 0 or roi_h <= 0: the whole image. Must lie inside the image. */
  int roi_x, roi_y, roi_w, roi_h;
  /* Caller-allocated device output: HWC uint8, (roi or image) height rows of
   * width * channels bytes (channels: 3 for RGB/BGR, 1 for GRAY), `dst_pitch` bytes
   * apart. It must be usable on the stream passed to decode_batch. */
  uint8_t *dst;
  size_t dst_pitch;
  /* decode_classify's verdict for exactly these bytes and this region, or NULL (then
   * decode_batch parses the header itself, on its decode threads) */
  const stk_gpu_decode_class *cls;
} stk_gpu_decode_in;

typedef struct {
  int status;                    /* STK_GPU_DECODE_* */
  int backend;                   /* STK_GPU_BACKEND_* that produced (or tried) the sample */
  int roi_mode;                  /* STK_GPU_ROI_* */
  int nvjpeg_status;             /* nvjpegStatus_t of the failing call; 0 when decoded */
  int width, height, components; /* stored size and components, when the header parsed */
} stk_gpu_decode_out;

typedef struct {
  int color; /* STK_GPU_COLOR_* */
  /* Fraction (0..1) of the samples the hardware decoder accepts that go to it; the rest
   * take the hybrid path on the decode threads (DALI's hw_decoder_load). < 0: automatic,
   * the share that balances the two paths' measured rates, updated every batch
   * (decode_balance.h). */
  double hw_load;
  /* Non-zero: every dst comes from device_alloc_idle (no queued work touches it), so
   * the engines can be fed at once. Zero: before the engines' call, the host waits until
   * `stream` has passed the work queued before decode_batch (the engines write when
   * called, ignoring stream order; see decode.cu). */
  int dst_idle;
  /* nvJPEG's own device and pinned allocations are padded by these many bytes, so that
   * its buffers, which grow with the images, are reallocated less often (DALI's
   * device_memory_padding / host_memory_padding). 0: no padding. The decoder's handles
   * take the values of the latest call. */
  int64_t device_padding, host_padding;
  /* The hardware decoder's buffers are allocated up front for a batch of images of up to
   * this size (nvjpegDecodeBatchedPreAllocate; DALI's preallocate_width_hint /
   * preallocate_height_hint), for the largest batch seen, again whenever a batch is
   * larger. 0 and 0: no pre-allocation. */
  int prealloc_width, prealloc_height;
} stk_gpu_decode_opts;

/* ---------------------------------------------------------------------------------- */
/* Kernels                                                                             */
/* ---------------------------------------------------------------------------------- */

/* resample: resize / random_resized_crop / the fused random_resized_crop + flip +
 * normalise + cast + layout. Geometry, filters and rounding follow src/ops/resample.h:
 * output pixel i samples the source at x0 + (i + 0.5) * (x1 - x0) / dst_w - 0.5; x1 < x0
 * mirrors; outside coordinates clamp to the edge; antialias stretches the filter by the
 * scale when downscaling; taps are folded onto the edges and normalised. Two launches
 * (horizontal pass into a float temporary from the pool, vertical pass fused with the
 * output stage); one launch for nearest. */
typedef struct {
  const void *src; /* device HWC image, rows `src_pitch` bytes apart */
  size_t src_pitch;
  int src_h, src_w;
  void *dst; /* device, dense: HWC (dst_h, dst_w, out_channels) or CHW */
  int dst_h, dst_w;
  double x0, y0, x1, y1;     /* source window, pixel-edge coordinates */
  int mirror;                /* mirror the output left-right (applied after resampling,
                                exactly as flip / crop_mirror_normalize's mirror) */
  double mean[4], stddev[4]; /* per channel, used when args.normalize */
} stk_gpu_resample_sample;

typedef struct {
  int channels;        /* 1..4 */
  stk_dtype in_dtype;  /* UINT8 or FLOAT32 */
  stk_dtype out_dtype; /* UINT8, FLOAT32, FLOAT16; with normalize also INT8 */
  int interp;          /* STK_GPU_INTERP_* */
  int antialias;
  int planar;       /* CHW output; else HWC */
  int out_channels; /* >= channels: extra channels take fill[c]; 0: channels */
  /* normalize: out = (v - mean[c]) / stddev[c] * scale + shift, then the output type
   * with saturation (integers: round half away from zero). */
  int normalize;
  /* With normalize and uint8 input: round the resampled value to uint8 first, which is
   * the CPU chain random_resized_crop(uint8) -> crop_mirror_normalize (and
   * torchvision's); the normalisation is then computed in float64 like the CPU's table,
   * so the two agree exactly wherever the uint8 resample agrees. Without it the float
   * resample feeds the normalisation directly (CPU: resample to float32, then
   * crop_mirror_normalize on float32: out = v * (float)(scale / std) + (float)(shift -
   * mean * scale / std) in float32). */
  int quantize;
  double scale, shift;
  double fill[4]; /* values of channels >= channels (output space) */
} stk_gpu_resample_args;

/* crop_mirror_normalize without resampling (src/ops/image_util.h: stk__cmn). */
typedef struct {
  const void *src;
  size_t src_pitch;
  int src_h, src_w;
  void *dst;                      /* dense win_h x win_w, CHW or HWC per args.planar */
  int win_y, win_x, win_h, win_w; /* window in the source; outside pixels take fill */
  int mirror;
  double mean[4], stddev[4];
  double fill[4]; /* output space: outside pixels and pad channels */
} stk_gpu_cmn_sample;

typedef struct {
  int channels;        /* 1..4 */
  int out_channels;    /* >= channels (pad_output); 0: channels */
  stk_dtype in_dtype;  /* UINT8 or FLOAT32 */
  stk_dtype out_dtype; /* FLOAT32, FLOAT16, UINT8, INT8 */
  int planar;
  double scale, shift;
} stk_gpu_cmn_args;

/* crop with padding and type conversion (stk__crop_hwc). */
typedef struct {
  const void *src;
  size_t src_pitch;
  int src_h, src_w;
  void *dst; /* dense dst_h x dst_w x channels of out_dtype */
  int dst_h, dst_w;
  int y, x;         /* top-left corner of the window; may be negative / past the end */
  uint8_t fill[64]; /* one output pixel (channels elements of out_dtype) for outside
                       pixels, e.g. from stk__fill_pixel */
} stk_gpu_crop_sample;

typedef struct {
  int channels;                  /* >= 1; channels * element size of out_dtype <= 64 */
  stk_dtype in_dtype, out_dtype; /* any stk_dtype; conversion as stk__convert */
} stk_gpu_crop_args;

/* MixUp / CutMix of one sample (mix_common.h): a dense tensor seen as [outer, h, mid, w,
 * inner] elements; dst = a * wa + b * wb, with (wa_in, wb_in) inside the box
 * [box[1], box[3]) x [box[0], box[2]) of the (h, w) plane and (wa_out, wb_out) outside. */
typedef struct {
  const void *a, *b; /* the sample and its partner (same shape) */
  void *dst;
  int64_t outer, h, mid, w, inner;
  int64_t box[4]; /* x1, y1, x2, y2 */
  float wa_in, wb_in, wa_out, wb_out;
} stk_gpu_mix_sample;

/* flip of a dense tensor seen as [outer, h, mid, w, inner] elements (stk__flip). */
typedef struct {
  const void *src;
  void *dst; /* must not overlap src */
  int64_t outer, h, mid, w, inner;
  int horizontal, vertical;
} stk_gpu_flip_sample;

/* cast of `count` elements (stk__convert: integers round half away from zero and
 * saturate, NaN -> 0; bool: != 0; float16 round to nearest even). */
typedef struct {
  const void *src;
  void *dst;
  int64_t count;
} stk_gpu_cast_sample;

/* Batch arguments shared by several kernels. */
typedef struct {
  int unused; /* kernels without batch arguments: pass NULL */
} stk_gpu_no_args;
typedef struct {
  stk_dtype in_dtype, out_dtype; /* the input's and the output's element type */
} stk_gpu_io_args;
typedef struct {
  size_t esize; /* bytes per element (any positive size) */
} stk_gpu_elem_args;
typedef struct {
  stk_dtype dtype; /* STK_DTYPE_UINT8 or STK_DTYPE_FLOAT32 */
} stk_gpu_mix_args;

/* The kernels of this header (see gpu_kernels.h): X(ID, name, sample type, args type). */
#define STK_GPU_KERNELS_CORE(X)                                         \
  X(RESAMPLE, resample, stk_gpu_resample_sample, stk_gpu_resample_args) \
  X(CMN, cmn, stk_gpu_cmn_sample, stk_gpu_cmn_args)                     \
  X(CROP, crop, stk_gpu_crop_sample, stk_gpu_crop_args)                 \
  X(FLIP, flip, stk_gpu_flip_sample, stk_gpu_elem_args)                 \
  X(CAST, cast, stk_gpu_cast_sample, stk_gpu_io_args)                   \
  X(MIX, mix, stk_gpu_mix_sample, stk_gpu_mix_args)

/* One kernel launch: n sample records of the kernel's sample type and its batch
 * arguments, queued on `stream`. The sizes let the backend check that caller and kernel
 * agree on the records (a mismatch is STK_ERR_INVALID_ARGUMENT, never a wrong read). */
typedef struct {
  int n;
  const void *samples;
  size_t sample_size; /* sizeof one sample record */
  const void *args;   /* NULL for kernels whose args type is stk_gpu_no_args */
  size_t args_size;   /* sizeof the args type */
  uintptr_t stream;
} stk_gpu_launch;

/* What a backend says of each kernel id: its name and record sizes. The loader compares
 * them with its own list, so a backend built from another list is refused at open. */
typedef struct {
  const char *name;
  size_t sample_size, args_size;
} stk_gpu_kernel_info;

/* ---------------------------------------------------------------------------------- */
/* The table                                                                           */
/* ---------------------------------------------------------------------------------- */

typedef struct stk_gpu_api {
  int abi_version;    /* STK_GPU_ABI_VERSION */
  size_t struct_size; /* sizeof(stk_gpu_api) */

  /* Counts the usable CUDA devices (0 with a driver but no device). Fails with
   * STK_ERR_DEVICE and the driver's message when CUDA cannot start at all. */
  int (*device_count)(int *count, char *err, size_t errlen);

  /* Opens device opts->device: one compute and one copy stream (non-blocking), a
   * stream-ordered device pool, a pinned host pool, and nvJPEG (dlopen of
   * libnvjpeg.so.13, then .12; $STK_NVJPEG_LIBRARY first when set) with its hardware
   * backend when present. A missing nvJPEG is not an error: device_info says so and
   * decode_batch refuses. opts may be NULL (defaults, device 0). */
  int (*open)(const stk_gpu_open_opts *opts, stk_gpu_ctx **out, char *err, size_t errlen);
  /* Waits for the context's streams, then frees everything (NULL is a no-op). Memory
   * still allocated from the pool is freed with it. When the streams do not drain within
   * the context's wait bound (a device that stopped), the device-side objects are left
   * allocated rather than destroyed under work that may still name them. */
  void (*close)(stk_gpu_ctx *ctx);
  int (*device_info)(stk_gpu_ctx *ctx, stk_gpu_device_info *out, char *err, size_t errlen);
  /* The context's stream STK_GPU_STREAM_COMPUTE, _COPY or _DECODE, as a cudaStream_t handle. */
  uintptr_t (*stream)(stk_gpu_ctx *ctx, int which);
  int (*stats)(stk_gpu_ctx *ctx, stk_gpu_stats *out, char *err, size_t errlen);
  /* Returns cached memory: the device pool down to `keep_bytes`, the pinned cache to 0
   * (blocks still pending on a stream stay). */
  int (*trim)(stk_gpu_ctx *ctx, uint64_t keep_bytes, char *err, size_t errlen);

  /* Stream-ordered device memory from the pool: usable on `stream` right away and on
   * other streams once they are ordered after it (events). size 0 gives NULL. */
  int (*device_alloc)(stk_gpu_ctx *ctx, size_t size, uintptr_t stream, void **out, char *err,
                      size_t errlen);
  /* Frees after the work queued on `stream` so far (cudaFreeAsync). NULL is a no-op. */
  int (*device_free)(stk_gpu_ctx *ctx, void *ptr, uintptr_t stream, char *err, size_t errlen);
  /* Pinned host memory from the pooled cache (cudaHostAlloc, power-of-two classes,
   * 64-byte aligned). */
  int (*pinned_alloc)(stk_gpu_ctx *ctx, size_t size, void **out, char *err, size_t errlen);
  /* Returns a pinned block. `stream` NULL: reusable at once; otherwise reused only after
   * the work queued on *stream so far has finished (an event is recorded). */
  int (*pinned_free)(stk_gpu_ctx *ctx, void *ptr, const uintptr_t *stream, char *err,
                     size_t errlen);
  /* cudaMemcpyAsync with cudaMemcpyDefault (host/pinned/device in any direction).
   * Pageable host sources may be reused when the call returns; pageable destinations are
   * written when it returns. */
  int (*memcpy_async)(stk_gpu_ctx *ctx, void *dst, const void *src, size_t bytes, uintptr_t stream,
                      char *err, size_t errlen);
  /* 2-D copy: `height` rows of `width_bytes`, pitches in bytes. */
  int (*memcpy2d_async)(stk_gpu_ctx *ctx, void *dst, size_t dst_pitch, const void *src,
                        size_t src_pitch, size_t width_bytes, size_t height, uintptr_t stream,
                        char *err, size_t errlen);
  int (*memset_async)(stk_gpu_ctx *ctx, void *dst, int value, size_t bytes, uintptr_t stream,
                      char *err, size_t errlen);
  /* Blocks until the stream is idle; reports errors of earlier asynchronous work. The
   * wait polls with a growing sleep (no spinning core) and gives up after the context's
   * wait_timeout_ms with STK_ERR_DEVICE. */
  int (*stream_sync)(stk_gpu_ctx *ctx, uintptr_t stream, char *err, size_t errlen);

  /* Events (opaque cudaEvent_t). timing != 0: usable with event_elapsed. */
  int (*event_create)(stk_gpu_ctx *ctx, int timing, void **out, char *err, size_t errlen);
  int (*event_record)(stk_gpu_ctx *ctx, void *event, uintptr_t stream, char *err, size_t errlen);
  /* Makes `stream` (any stream of the process, e.g. a consumer's) wait for the event. */
  int (*stream_wait_event)(stk_gpu_ctx *ctx, uintptr_t stream, void *event, char *err,
                           size_t errlen);
  /* As stream_sync, for the event's latest record (bounded the same way). */
  int (*event_sync)(stk_gpu_ctx *ctx, void *event, char *err, size_t errlen);
  /* *done = 1 when the event has completed, 0 while pending. */
  int (*event_query)(stk_gpu_ctx *ctx, void *event, int *done, char *err, size_t errlen);
  int (*event_elapsed)(stk_gpu_ctx *ctx, void *start, void *end, float *ms, char *err,
                       size_t errlen);
  void (*event_destroy)(stk_gpu_ctx *ctx, void *event);

  /* Header of one JPEG (nvjpegGetImageInfo; thread-safe). Not a JPEG or a header nvJPEG
   * refuses: STK_ERR_DECODE with the nvJPEG status in the message. */
  int (*jpeg_info)(stk_gpu_ctx *ctx, const uint8_t *data, size_t size, stk_gpu_jpeg_info *out,
                   char *err, size_t errlen);
  /* Decodes n JPEGs into the callers' device buffers, queued on `stream`. Headers are
   * parsed on the decode threads (unless in[i].cls carries decode_classify's verdict);
   * the samples the hardware decoder accepts go to it in
   * one batched call (a share of 1 - hw_load goes to the hybrid path instead); the rest
   * are decoded through nvJPEG's decoupled API (HYBRID: CPU Huffman; GPU_HYBRID for
   * baseline images over 1 Mpixel) on the decode threads. out[i] tells per sample what
   * happened; a sample that cannot be decoded here is reported (FALLBACK / FAILED), never
   * an error of the call. The call returns once all host-side work is done; the device
   * work is ordered on `stream`. The return value is an error only for bad arguments or
   * device failures (then out[] is meaningless). */
  int (*decode_batch)(stk_gpu_ctx *ctx, int n, const stk_gpu_decode_in *in, stk_gpu_decode_out *out,
                      const stk_gpu_decode_opts *opts, uintptr_t stream, char *err, size_t errlen);

  /* The kernels (gpu_kernels.h): `kernel_count` ids, described by kernels[id].
   * supports: 1 when this backend can launch the kernel (a stand-in backend has a
   * subset), else 0; unknown ids give 0. launch: queues the kernel on l->stream; a kernel
   * the backend lacks is STK_ERR_UNSUPPORTED naming it. Callers use the typed launchers
   * stk_gpu_run_<name>() of gpu_kernels.h, which fill the record and its sizes. */
  int kernel_count;
  const stk_gpu_kernel_info *kernels;
  int (*supports)(stk_gpu_ctx *ctx, int kernel);
  int (*launch)(stk_gpu_ctx *ctx, int kernel, const stk_gpu_launch *l, char *err, size_t errlen);

  /* Device memory that no queued work on any stream reads or writes: a separate pool
   * that reuses only frees the device has completed. For buffers the hardware JPEG
   * engines write (decode_batch's dst_idle). Usable on `stream` at once; free it with
   * device_free_idle. */
  int (*device_alloc_idle)(stk_gpu_ctx *ctx, size_t size, uintptr_t stream, void **out, char *err,
                           size_t errlen);
  /* decode_batch's header parsing for one JPEG, done ahead (e.g. on the CPU stage's
   * workers while an earlier batch decodes): whether nvJPEG and its engines take it
   * with this region (roi_w, roi_h <= 0: the whole image). Thread-safe, also against a
   * running decode_batch. Refusals are the verdict (status FALLBACK), not an error;
   * errors are for bad arguments or a context without nvJPEG. */
  int (*decode_classify)(stk_gpu_ctx *ctx, const uint8_t *data, size_t size, int roi_x, int roi_y,
                         int roi_w, int roi_h, stk_gpu_decode_class *out, char *err, size_t errlen);
  /* Returns a device_alloc_idle block once the work queued on `stream` so far has
   * finished (an event is recorded; the block goes back to the idle pool at a later
   * device_alloc_idle that finds the event complete). NULL is a no-op. */
  int (*device_free_idle)(stk_gpu_ctx *ctx, void *ptr, uintptr_t stream, char *err, size_t errlen);
  /* Page-locks existing host memory (cudaHostRegister) / undoes it before the memory is
   * freed. The pipeline pins its host pool's blocks this way. */
  int (*host_register)(stk_gpu_ctx *ctx, void *ptr, size_t bytes, char *err, size_t errlen);
  void (*host_unregister)(stk_gpu_ctx *ctx, void *ptr);
  /* Page-locked host memory straight from the driver (cudaHostAlloc, no pooling) and its
   * release (cudaFreeHost). */
  int (*host_alloc)(stk_gpu_ctx *ctx, size_t bytes, void **out, char *err, size_t errlen);
  void (*host_free)(stk_gpu_ctx *ctx, void *ptr);
} stk_gpu_api;

/* The one exported symbol of libstoker_cuda.so. Never NULL. Check abi_version. */
typedef const stk_gpu_api *(*stk_cuda_get_api_fn)(void);
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const stk_gpu_api *
stk_cuda_get_api(void);

#ifdef __cplusplus
}
#endif

#endif /* STOKER_CUDA_GPU_API_H */
