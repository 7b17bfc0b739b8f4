/* NVDEC through NVIDIA's video parser (nvdec.h). */
#include "nvdec.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(STK_HAVE_LIBAV) && defined(STK_HAVE_NVCUVID)
#include <libavcodec/codec_id.h>

/* The loader's messages (a library or symbol it cannot load) are kept for the error. */
static char load_message[256];
static void loader_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(load_message, sizeof load_message, fmt, ap);
  va_end(ap);
}
#define FFNV_LOG_FUNC(logctx, msg, ...) loader_log((msg), __VA_ARGS__)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)
#include <ffnvcodec/dynlink_loader.h>

/* libnvcuvid and libcuda's functions, loaded once for the process's life. */
static CuvidFunctions *cuvid;
static CudaFunctions *cuda;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
  if (cuda_load_functions(&cuda, NULL) != 0) cuda = NULL;
  if (cuda && cuvid_load_functions(&cuvid, NULL) != 0) cuvid = NULL;
}

struct stk__nvdec {
  cudaVideoCodec codec;
  CUcontext ctx;
  CUstream stream;
  CUvideoparser parser;
  CUvideodecoder decoder;
  CUVIDDECODECREATEINFO info; /* the decoder's */
  bool full_range;            /* the stream's, from its sequence header */
  int64_t created;
  stk__nvdec_want want;
  stk__nvdec_sink sink;
  void *user;
  stk_status failed; /* set by a callback: the parser is stopped and feed returns it */
};

bool stk__nvdec_handles(int av_codec_id) {
  return av_codec_id == AV_CODEC_ID_H264 || av_codec_id == AV_CODEC_ID_HEVC;
}

/* Runs with the session's context current. */
static bool push(stk__nvdec *d) { return cuda->cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS; }
static void pop(void) {
  CUcontext prev;
  cuda->cuCtxPopCurrent(&prev);
}

stk_status stk__nvdec_create(int av_codec_id, void *cuda_ctx, void *stream, stk__nvdec **out) {
  *out = NULL;
  pthread_once(&load_once, load);
  if (!cuda || !cuvid)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "cannot load NVIDIA's video decoder (%s)",
                    load_message[0] ? load_message : "libcuda / libnvcuvid");
  if (!stk__nvdec_handles(av_codec_id))
    return STK_FAIL(STK_ERR_UNSUPPORTED, "NVDEC is driven here for H.264 and HEVC only");
  stk__nvdec *d = calloc(1, sizeof *d);
  if (!d) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a decoder");
  d->codec = av_codec_id == AV_CODEC_ID_H264 ? cudaVideoCodec_H264 : cudaVideoCodec_HEVC;
  d->ctx = cuda_ctx, d->stream = stream;
  *out = d;
  return STK_OK;
}

static void destroy_parser(stk__nvdec *d) {
  if (d->parser) cuvid->cuvidDestroyVideoParser(d->parser);
  d->parser = NULL;
}

void stk__nvdec_destroy(stk__nvdec *d) {
  if (!d) return;
  destroy_parser(d);
  if (d->decoder && push(d)) {
    cuvid->cuvidDestroyDecoder(d->decoder);
    pop();
  }
  free(d);
}

int64_t stk__nvdec_decoders_created(const stk__nvdec *d) { return d->created; }

/* Whether the decoder made for `info` can decode the sequence `want` describes (and
 * outputs it as a new one would: a progressive sequence's decoder weaves the fields of an
 * interlaced one that follows, where a new one would deinterlace them). */
static bool decoder_fits(const CUVIDDECODECREATEINFO *have, const CUVIDDECODECREATEINFO *want) {
  return have->CodecType == want->CodecType && have->ChromaFormat == want->ChromaFormat &&
         have->bitDepthMinus8 == want->bitDepthMinus8 &&
         have->DeinterlaceMode == want->DeinterlaceMode && have->ulWidth == want->ulWidth &&
         have->ulHeight == want->ulHeight &&
         have->ulNumDecodeSurfaces >= want->ulNumDecodeSurfaces &&
         memcmp(&have->display_area, &want->display_area, sizeof want->display_area) == 0;
}

/* What a sequence needs: NV12 (8-bit) or P016 (deeper) surfaces of its displayed size. */
static CUVIDDECODECREATEINFO decoder_info(const CUVIDEOFORMAT *f) {
  CUVIDDECODECREATEINFO ci = {0};
  ci.CodecType = f->codec;
  ci.ChromaFormat = f->chroma_format;
  ci.bitDepthMinus8 = f->bit_depth_luma_minus8;
  ci.OutputFormat =
      f->bit_depth_luma_minus8 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
  /* interlaced streams come out woven (both fields in one frame), as the CPU form and
   * FFmpeg's decoders give them: the same frames on either device */
  ci.DeinterlaceMode = cudaVideoDeinterlaceMode_Weave;
  ci.ulWidth = ci.ulMaxWidth = f->coded_width;
  ci.ulHeight = ci.ulMaxHeight = f->coded_height;
  ci.display_area.left = (short)f->display_area.left;
  ci.display_area.top = (short)f->display_area.top;
  ci.display_area.right = (short)f->display_area.right;
  ci.display_area.bottom = (short)f->display_area.bottom;
  ci.ulTargetWidth = (unsigned)(f->display_area.right - f->display_area.left);
  ci.ulTargetHeight = (unsigned)(f->display_area.bottom - f->display_area.top);
  /* the parser's minimum plus room for the picture being mapped and one in flight */
  ci.ulNumDecodeSurfaces = (f->min_num_decode_surfaces ? f->min_num_decode_surfaces : 8) + 2;
  ci.ulNumOutputSurfaces = 2;
  ci.ulCreationFlags = cudaVideoCreate_PreferCUVID;
  return ci;
}

static stk_status check_caps(const CUVIDDECODECREATEINFO *ci) {
  if (ci->ChromaFormat != cudaVideoChromaFormat_420)
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "NVDEC output other than 4:2:0 is not converted here; use device=\"cpu\"");
  if (!cuvid->cuvidGetDecoderCaps) return STK_OK;
  CUVIDDECODECAPS caps = {0};
  caps.eCodecType = ci->CodecType;
  caps.eChromaFormat = ci->ChromaFormat;
  caps.nBitDepthMinus8 = (unsigned)ci->bitDepthMinus8;
  if (cuvid->cuvidGetDecoderCaps(&caps) != CUDA_SUCCESS) return STK_OK; /* create will say */
  if (!caps.bIsSupported || ci->ulWidth > caps.nMaxWidth || ci->ulHeight > caps.nMaxHeight ||
      ci->ulWidth < caps.nMinWidth || ci->ulHeight < caps.nMinHeight)
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "this GPU's NVDEC cannot decode this stream (%lux%lu, %d-bit; it takes up "
                    "to %ux%u); use device=\"cpu\"",
                    (unsigned long)ci->ulWidth, (unsigned long)ci->ulHeight,
                    (int)ci->bitDepthMinus8 + 8, caps.nMaxWidth, caps.nMaxHeight);
  return STK_OK;
}

/* The parser found a sequence header: keep the decoder when it fits, else make one. */
static int CUDAAPI on_sequence(void *user, CUVIDEOFORMAT *f) {
  stk__nvdec *d = user;
  CUVIDDECODECREATEINFO want = decoder_info(f);
  d->full_range = f->video_signal_description.video_full_range_flag != 0;
  if (d->decoder && decoder_fits(&d->info, &want)) return (int)d->info.ulNumDecodeSurfaces;
  stk_status st = check_caps(&want);
  if (st == STK_OK && !push(d))
    st = STK_FAIL(STK_ERR_DEVICE, "cannot use the CUDA context for NVDEC");
  if (st == STK_OK) {
    if (d->decoder) cuvid->cuvidDestroyDecoder(d->decoder);
    d->decoder = NULL;
    CUresult rc = cuvid->cuvidCreateDecoder(&d->decoder, &want);
    pop();
    if (rc != CUDA_SUCCESS) {
      d->decoder = NULL;
      st = STK_FAIL(STK_ERR_UNSUPPORTED,
                    "NVDEC cannot make a decoder for this %lux%lu stream "
                    "(error %d); use device=\"cpu\"",
                    (unsigned long)want.ulWidth, (unsigned long)want.ulHeight, (int)rc);
    }
  }
  if (st != STK_OK) {
    d->failed = st;
    return 0;
  }
  d->info = want;
  d->created++;
  return (int)want.ulNumDecodeSurfaces;
}

static int CUDAAPI on_decode(void *user, CUVIDPICPARAMS *pic) {
  stk__nvdec *d = user;
  CUresult rc = CUDA_ERROR_UNKNOWN; /* no decoder, or the context cannot be used */
  if (d->decoder && push(d)) {
    rc = cuvid->cuvidDecodePicture(d->decoder, pic);
    pop();
  }
  if (rc == CUDA_SUCCESS) return 1;
  d->failed = STK_FAIL(STK_ERR_DECODE, "NVDEC failed to decode a picture (error %d)", (int)rc);
  return 0;
}

/* Maps a wanted picture, hands it to the sink, and unmaps it once the sink's copies are
 * done. */
static stk_status show(stk__nvdec *d, const CUVIDPARSERDISPINFO *disp, int64_t key) {
  CUVIDGETDECODESTATUS status = {0};
  if (cuvid->cuvidGetDecodeStatus(d->decoder, disp->picture_index, &status) == CUDA_SUCCESS &&
      status.decodeStatus == cuvidDecodeStatus_Error) /* concealed errors pass, as in software */
    return STK_FAIL(STK_ERR_DECODE, "corrupt frame data (NVDEC reports a decoding error)");
  CUVIDPROCPARAMS proc = {0};
  proc.progressive_frame = 1; /* woven: the frame as decoded (see decoder_info) */
  proc.top_field_first = disp->top_field_first;
  proc.unpaired_field = disp->repeat_first_field < 0;
  proc.output_stream = d->stream;
  unsigned long long frame = 0;
  unsigned pitch = 0;
  CUresult rc = cuvid->cuvidMapVideoFrame(d->decoder, disp->picture_index, &frame, &pitch, &proc);
  if (rc != CUDA_SUCCESS)
    return STK_FAIL(STK_ERR_DEVICE, "cannot map a decoded picture (error %d)", (int)rc);
  int w = (int)d->info.ulTargetWidth, h = (int)d->info.ulTargetHeight;
  stk_nv12_view view = {
      (const uint8_t *)(uintptr_t)frame,
      (const uint8_t *)(uintptr_t)(frame +
                                   (unsigned long long)pitch * (unsigned long long)((h + 1) & ~1)),
      pitch,
      pitch,
      w,
      h,
      d->info.bitDepthMinus8 ? 2 : 1,
      d->full_range};
  stk_status st = d->sink(d->user, key, &view);
  /* the sink's copies read the mapping: finished before it is given back */
  if (cuda->cuStreamSynchronize(d->stream) != CUDA_SUCCESS && st == STK_OK)
    st = STK_FAIL(STK_ERR_DEVICE, "copying a decoded picture failed");
  cuvid->cuvidUnmapVideoFrame(d->decoder, frame);
  return st;
}

static int CUDAAPI on_display(void *user, CUVIDPARSERDISPINFO *disp) {
  stk__nvdec *d = user;
  if (!disp || d->failed != STK_OK) return 1; /* the end-of-stream notice */
  int64_t key = d->want(d->user, disp->timestamp);
  if (key < 0) return 1;
  stk_status st = STK_FAIL(STK_ERR_DEVICE, "cannot use the CUDA context for NVDEC");
  if (d->decoder && push(d)) {
    st = show(d, disp, key);
    pop();
  }
  if (st == STK_OK) return 1;
  d->failed = st;
  return 0;
}

stk_status stk__nvdec_begin(stk__nvdec *d, stk__nvdec_want want, stk__nvdec_sink sink, void *user) {
  destroy_parser(d);
  d->want = want, d->sink = sink, d->user = user, d->failed = STK_OK;
  CUVIDPARSERPARAMS p = {0};
  p.CodecType = d->codec;
  p.ulMaxNumDecodeSurfaces = d->decoder ? (unsigned)d->info.ulNumDecodeSurfaces : 1;
  /* two pictures decoding while one is shown keep the engine busy (NVIDIA suggests 2-4);
   * the read then feeds two packets more, or drains at the end of the file */
  p.ulMaxDisplayDelay = 2;
  p.pUserData = d;
  p.pfnSequenceCallback = on_sequence;
  p.pfnDecodePicture = on_decode;
  p.pfnDisplayPicture = on_display;
  CUresult rc = cuvid->cuvidCreateVideoParser(&d->parser, &p);
  if (rc == CUDA_SUCCESS) return STK_OK;
  d->parser = NULL;
  return STK_FAIL(STK_ERR_DEVICE, "cannot make an NVDEC parser (error %d)", (int)rc);
}

/* Parses one packet; a callback's failure wins over the parser's own status. */
static stk_status parse(stk__nvdec *d, CUVIDSOURCEDATAPACKET *pkt) {
  if (!d->parser) return STK_FAIL(STK_ERR_INTERNAL, "NVDEC parser not started");
  CUresult rc = cuvid->cuvidParseVideoData(d->parser, pkt);
  if (d->failed != STK_OK) return d->failed; /* its message is the last error */
  if (rc != CUDA_SUCCESS)
    return STK_FAIL(STK_ERR_DECODE, "corrupt frame data (the NVDEC parser fails: error %d)",
                    (int)rc);
  return STK_OK;
}

stk_status stk__nvdec_feed(stk__nvdec *d, const uint8_t *data, size_t n, int64_t pts) {
  CUVIDSOURCEDATAPACKET pkt = {0};
  pkt.flags = CUVID_PKT_TIMESTAMP;
  pkt.payload = data;
  pkt.payload_size = (tcu_ulong)n;
  pkt.timestamp = pts;
  return parse(d, &pkt);
}

stk_status stk__nvdec_end(stk__nvdec *d, bool drain) {
  stk_status st = STK_OK;
  if (drain && d->parser && d->failed == STK_OK) {
    CUVIDSOURCEDATAPACKET eos = {0};
    eos.flags = CUVID_PKT_ENDOFSTREAM;
    st = parse(d, &eos);
  }
  destroy_parser(d);
  return st;
}

#else /* without the ffnvcodec headers or FFmpeg: FFmpeg's hwaccel decodes everything */

bool stk__nvdec_handles(int av_codec_id) { return false; }
stk_status stk__nvdec_create(int av_codec_id, void *cuda_ctx, void *stream, stk__nvdec **out) {
  *out = NULL;
  return STK_FAIL(STK_ERR_UNSUPPORTED, "built without NVIDIA's video parser headers");
}
void stk__nvdec_destroy(stk__nvdec *d) {}
stk_status stk__nvdec_begin(stk__nvdec *d, stk__nvdec_want want, stk__nvdec_sink sink, void *user) {
  return STK_FAIL(STK_ERR_UNSUPPORTED, "built without NVIDIA's video parser headers");
}
stk_status stk__nvdec_feed(stk__nvdec *d, const uint8_t *data, size_t n, int64_t pts) {
  return STK_FAIL(STK_ERR_UNSUPPORTED, "built without NVIDIA's video parser headers");
}
stk_status stk__nvdec_end(stk__nvdec *d, bool drain) { return STK_OK; }
int64_t stk__nvdec_decoders_created(const stk__nvdec *d) { return 0; }

#endif
