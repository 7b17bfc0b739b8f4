/* Video decoding through FFmpeg (video.h).
 *
 * Opening demuxes the stream once and records every packet's presentation timestamp and
 * which packets are key frames. When every packet has a distinct timestamp, frame i is
 * the i-th smallest of them: a read then seeks to the last key frame at or before the
 * first wanted frame and numbers the decoded frames by their timestamps. Without usable
 * timestamps, or when a read finds a frame it cannot place, it decodes from the start
 * and numbers the frames in output order: slower, never wrong. */
#include "video.h"

#include "nvdec.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef STK_HAVE_LIBAV
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>

struct stk__video {
  const uint8_t *bytes; /* memory source, or NULL */
  size_t size, pos;
  char *path; /* file source */
  AVFormatContext *fmt;
  int stream;
  int64_t frames;
  int64_t *pts;  /* frames sorted timestamps, or NULL (numbered by decoding order) */
  int64_t *keys; /* frame indices of the key frames, ascending */
  int64_t nkeys;
  int width, height;
  double fps;
};

static int mem_read(void *opaque, uint8_t *buf, int n) {
  stk__video *v = opaque;
  size_t left = v->size - v->pos;
  if (left == 0) return AVERROR_EOF;
  if ((size_t)n > left) n = (int)left;
  memcpy(buf, v->bytes + v->pos, (size_t)n);
  v->pos += (size_t)n;
  return n;
}

static int64_t mem_seek(void *opaque, int64_t offset, int whence) {
  stk__video *v = opaque;
  if (whence & AVSEEK_SIZE) return (int64_t)v->size;
  int64_t base = (whence & 3) == SEEK_CUR   ? (int64_t)v->pos
                 : (whence & 3) == SEEK_END ? (int64_t)v->size
                                            : 0;
  int64_t to = base + offset;
  if (to < 0 || to > (int64_t)v->size) return -1;
  v->pos = (size_t)to;
  return to;
}

static void close_format(stk__video *v) {
  if (!v->fmt) return;
  AVIOContext *pb = v->bytes ? v->fmt->pb : NULL;
  avformat_close_input(&v->fmt);
  if (pb) {
    av_freep(&pb->buffer);
    avio_context_free(&pb);
  }
}

static stk_status av_fail(stk_status code, const char *what, int err) {
  char msg[AV_ERROR_MAX_STRING_SIZE] = "";
  av_strerror(err, msg, sizeof msg);
  return STK_FAIL(code, "%s: %s", what, msg);
}

/* Opens the container (again) at its start and finds the video stream. */
static stk_status open_format(stk__video *v) {
  close_format(v);
  AVFormatContext *fmt = avformat_alloc_context();
  if (!fmt) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a demuxer");
  AVIOContext *pb = NULL;
  if (v->bytes) {
    v->pos = 0;
    uint8_t *buf = av_malloc(1 << 16);
    pb = buf ? avio_alloc_context(buf, 1 << 16, 0, v, mem_read, NULL, mem_seek) : NULL;
    if (!pb) {
      av_free(buf);
      avformat_free_context(fmt);
      return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a demuxer");
    }
    fmt->pb = pb;
    fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  /* on failure this frees fmt, but never a caller's I/O context */
  int err = avformat_open_input(&fmt, v->bytes ? NULL : v->path, NULL, NULL);
  if (err < 0) {
    if (pb) {
      av_freep(&pb->buffer);
      avio_context_free(&pb);
    }
    v->fmt = NULL;
    return av_fail(STK_ERR_DECODE, "not a readable video", err);
  }
  v->fmt = fmt;
  if ((err = avformat_find_stream_info(fmt, NULL)) < 0)
    return av_fail(STK_ERR_DECODE, "cannot read the stream information", err);
  v->stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
  if (v->stream < 0) return STK_FAIL(STK_ERR_DECODE, "no video stream");
  return STK_OK;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The index of timestamp ts among the sorted pts, or -1. */
static int64_t pts_index(const stk__video *v, int64_t ts) {
  int64_t lo = 0, hi = v->frames - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (v->pts[mid] == ts) return mid;
    if (v->pts[mid] < ts)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

/* From the packets' timestamps (n of them, key[] their key flags, in file order):
 * v->pts sorted and v->keys, or neither when a timestamp is missing or repeated. */
static void build_index(stk__video *v, int64_t *ts, const uint8_t *key, int64_t n) {
  int64_t *keyts = malloc(sizeof(int64_t) * (size_t)(n ? n : 1)), nk = 0;
  bool ok = keyts != NULL;
  for (int64_t i = 0; i < n && ok; i++) {
    ok = ts[i] != AV_NOPTS_VALUE;
    if (key[i]) keyts[nk++] = ts[i];
  }
  if (ok) qsort(ts, (size_t)n, sizeof *ts, cmp_i64);
  for (int64_t i = 1; i < n && ok; i++) ok = ts[i] != ts[i - 1];
  if (ok) {
    v->pts = ts, v->frames = n;
    for (int64_t i = 0; i < nk; i++) keyts[i] = pts_index(v, keyts[i]);
    qsort(keyts, (size_t)nk, sizeof *keyts, cmp_i64);
    v->keys = keyts, v->nkeys = nk;
    return;
  }
  free(ts);
  free(keyts);
}

/* Counts the stream's shown packets (one frame each for the codecs in common use) and
 * indexes their timestamps. */
static stk_status count_frames(stk__video *v) {
  AVPacket *pkt = av_packet_alloc();
  int64_t n = 0, cap = 256;
  int64_t *ts = malloc(sizeof(int64_t) * (size_t)cap);
  uint8_t *key = malloc((size_t)cap);
  stk_status st = pkt && ts && key ? STK_OK : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory");
  int err = 0;
  while (st == STK_OK && (err = av_read_frame(v->fmt, pkt)) >= 0) {
    /* a packet an edit list hides (MP4 cut without re-encoding) is decoded for reference
     * but never shown: not a frame */
    if (pkt->stream_index == v->stream && !(pkt->flags & AV_PKT_FLAG_DISCARD)) {
      if (n == cap) {
        cap *= 2;
        int64_t *t2 = realloc(ts, sizeof(int64_t) * (size_t)cap);
        if (t2) ts = t2;
        uint8_t *k2 = t2 ? realloc(key, (size_t)cap) : NULL;
        if (k2) key = k2;
        if (!t2 || !k2) st = STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for the frame index");
      }
      if (st == STK_OK) {
        ts[n] = pkt->pts;
        key[n++] = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
      }
    }
    av_packet_unref(pkt);
  }
  av_packet_free(&pkt);
  if (st == STK_OK && err != AVERROR_EOF) st = av_fail(STK_ERR_DECODE, "corrupt container", err);
  v->frames = n;
  if (st == STK_OK)
    build_index(v, ts, key, n); /* takes ts */
  else
    free(ts);
  free(key);
  return st;
}

bool stk__video_codec_available(void) { return true; }

stk_status stk__video_open(const void *bytes, size_t n, const char *path, stk__video **out) {
  *out = NULL;
  stk__video *v = calloc(1, sizeof *v);
  if (!v) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a video");
  v->bytes = bytes, v->size = n;
  if (!bytes && !(v->path = strdup(path))) {
    free(v);
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a video");
  }
  av_log_set_level(AV_LOG_QUIET); /* corrupt input is reported through the status */
  stk_status st = open_format(v);
  if (st == STK_OK) {
    AVCodecParameters *par = v->fmt->streams[v->stream]->codecpar;
    AVRational r = v->fmt->streams[v->stream]->avg_frame_rate;
    v->width = par->width, v->height = par->height;
    v->fps = r.den ? av_q2d(r) : 0.0;
    if (v->width <= 0 || v->height <= 0)
      st = STK_FAIL(STK_ERR_DECODE, "bad frame size %dx%d", v->width, v->height);
  }
  if (st == STK_OK) st = count_frames(v);
  close_format(v);
  if (st != STK_OK) {
    stk__video_close(v);
    return st;
  }
  *out = v;
  return STK_OK;
}

void stk__video_close(stk__video *v) {
  if (!v) return;
  close_format(v);
  free(v->path);
  free(v->pts);
  free(v->keys);
  free(v);
}

int64_t stk__video_frames(const stk__video *v) { return v->frames; }
int stk__video_width(const stk__video *v) { return v->width; }
int stk__video_height(const stk__video *v) { return v->height; }
double stk__video_fps(const stk__video *v) { return v->fps; }

/* What a read wants: the slots of each frame index, sorted by index. */
typedef struct {
  int64_t index, slot;
} want;

static int want_cmp(const void *a, const void *b) {
  const want *x = a, *y = b;
  return x->index < y->index   ? -1
         : x->index > y->index ? 1
                               : (x->slot > y->slot) - (x->slot < y->slot);
}

/* A decoder kept between reads: the reads of a pipeline lend decoders from a pool and give
 * them back. An NVDEC decoder costs about 250 ms of driver work, serialised across threads
 * (measured on the H100); the direct sessions (nvdec.c) keep theirs from read to read.
 * FFmpeg's hwaccel decoders are pooled too (flushed when given back), but FFmpeg makes a
 * new NVDEC decoder after every flush (nvdec.h), so for them the pool saves only the
 * set-up. Each has a CUDA device context of its own (FFmpeg's, in the primary context) for
 * its stream: a read waits for its own frames' copies only. */
typedef struct pooled {
  AVCodecContext *dec;    /* FFmpeg's decoder (hwaccel or, emulated, software), or NULL */
  stk__nvdec *nv;         /* H.264 / HEVC: NVDEC driven directly (nvdec.h says why) */
  AVBufferRef *device;    /* NULL emulated */
  AVCodecParameters *par; /* what it decodes: a read of other parameters opens another */
  struct pooled *next;
} pooled;

/* The decoding state of one read. */
typedef struct {
  stk__video *v;
  AVCodecContext *dec;
  AVFrame *frame;
  struct SwsContext *sws;
  const want *w;
  int64_t nw, next, decoded; /* next: first unserved entry of w */
  int out_w, out_h;          /* the size frames are scaled to */
  uint8_t *dst;
  stk__video_hw *hw; /* decoding with NVDEC: frames go to gpu[] instead of dst */
  pooled *pd;        /* with hw: the decoder lent by hw's pool (dec is pd->dec) */
  stk__video_gpu_frame *gpu;
  int64_t *hidden; /* NVDEC direct: timestamps of the packets an edit list hides, whose
                      pictures the parser still shows (FFmpeg's decoders drop them) */
  int64_t nhidden, hidden_cap;
  bool by_pts; /* frames numbered by their timestamps (v->pts); else by output order */
  bool miss;   /* a frame could not be placed: start again from the start, by order */
} reader;

/* The index of the decoded frame, or -1 for one to skip (r->miss set when the read must
 * start again). */
static int64_t frame_index_at(reader *r, int64_t ts) {
  if (!r->by_pts) return r->decoded++;
  int64_t idx = ts == AV_NOPTS_VALUE ? -1 : pts_index(r->v, ts);
  if (idx < 0 || idx > r->w[r->next].index) {
    r->miss = true; /* an unknown frame, or the wanted one was not decoded */
    return -1;
  }
  return idx;
}

static int64_t frame_index(reader *r) {
  AVFrame *f = r->frame;
  return frame_index_at(
      r, f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts);
}

static stk_status deliver_gpu(reader *r, int64_t idx);
static stk_status copy_out(reader *r, const stk_nv12_view *view, stk__video_gpu_frame *g);
static stk_status deliver_frame(reader *r, AVFrame *f, int64_t idx, int bps);

/* Converts the decoded frame into every slot that wants its index. */
static stk_status deliver(reader *r) {
  stk__video *v = r->v;
  AVFrame *f = r->frame;
  if (r->next >= r->nw) return STK_OK;
  int64_t idx = frame_index(r);
  if (idx < 0 || r->w[r->next].index != idx) return STK_OK;
  if (f->width != v->width || f->height != v->height)
    return STK_FAIL(STK_ERR_DECODE, "frame %lld is %dx%d; the stream says %dx%d", (long long)idx,
                    f->width, f->height, v->width, v->height);
  if (r->hw) return deliver_gpu(r, idx);
  /* Scaled to the output size: the slots in dst are out_w x out_h (a destination of the
   * video's size would write past them). */
  r->sws =
      sws_getCachedContext(r->sws, f->width, f->height, f->format, r->out_w, r->out_h,
                           AV_PIX_FMT_RGB24, SWS_BILINEAR | SWS_ACCURATE_RND, NULL, NULL, NULL);
  if (!r->sws) return STK_FAIL(STK_ERR_UNSUPPORTED, "cannot convert pixel format %d", f->format);
  size_t fb = (size_t)r->out_w * (size_t)r->out_h * 3;
  uint8_t *first = r->dst + (size_t)r->w[r->next].slot * fb;
  uint8_t *planes[4] = {first, NULL, NULL, NULL};
  int strides[4] = {r->out_w * 3, 0, 0, 0};
  sws_scale(r->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, planes, strides);
  for (r->next++; r->next < r->nw && r->w[r->next].index == idx; r->next++)
    memcpy(r->dst + (size_t)r->w[r->next].slot * fb, first, fb);
  return STK_OK;
}

/* Sends one packet (NULL: flush) and delivers the frames it yields. */
static stk_status decode_packet(reader *r, const AVPacket *pkt) {
  int err = avcodec_send_packet(r->dec, pkt);
  if (err < 0 && err != AVERROR_EOF) return av_fail(STK_ERR_DECODE, "corrupt frame data", err);
  while (r->next < r->nw && !r->miss) {
    err = avcodec_receive_frame(r->dec, r->frame);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return STK_OK;
    if (err < 0) return av_fail(STK_ERR_DECODE, "corrupt frame data", err);
    stk_status st = deliver(r);
    av_frame_unref(r->frame);
    if (st != STK_OK) return st;
  }
  return STK_OK;
}

/* A decoder for the stream's parameters, opened (with NVDEC when hw_device is set) in *out;
 * on failure *out is freed. */
static stk_status new_decoder(const AVCodecParameters *par, AVBufferRef *hw_device,
                              AVCodecContext **out);

static stk_status pool_take(stk__video_hw *hw, const AVCodecParameters *par, pooled **out);
static void pool_give(stk__video_hw *hw, pooled *pd, bool reusable);
static stk_status pooled_sync(pooled *pd);

static stk_status open_decoder(reader *r) {
  AVCodecParameters *par = r->v->fmt->streams[r->v->stream]->codecpar;
  if (!r->frame && !(r->frame = av_frame_alloc()))
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a frame");
  if (!r->hw) return new_decoder(par, NULL, &r->dec);
  STK_TRY(pool_take(r->hw, par, &r->pd));
  r->dec = r->pd->dec;
  return STK_OK;
}

/* Closes the read's decoder, or gives it back to the pool: reusable after a read that
 * ended cleanly (a failed one may leave it in any state). */
static void close_decoder(reader *r, bool reusable) {
  if (r->pd) {
    pool_give(r->hw, r->pd, reusable);
    r->pd = NULL, r->dec = NULL;
  } else {
    avcodec_free_context(&r->dec);
  }
}

/* By timestamps: seeks to the last key frame at or before the first wanted frame. */
static void seek_to_key(reader *r) {
  stk__video *v = r->v;
  int64_t want0 = r->w[0].index, key = -1;
  for (int64_t i = 0; i < v->nkeys && v->keys[i] <= want0; i++) key = v->keys[i];
  if (key <= 0) return; /* from the start */
  if (av_seek_frame(v->fmt, v->stream, v->pts[key], AVSEEK_FLAG_BACKWARD) < 0) {
    open_format(v); /* a failed seek may leave the demuxer anywhere: start over */
  }
}

static stk_status decode_all_nvdec(reader *r);

static stk_status decode_all(reader *r) {
  STK_TRY(open_format(r->v));
  STK_TRY(open_decoder(r));
  if (r->by_pts) seek_to_key(r);
  if (!r->v->fmt) return STK_FAIL(STK_ERR_DECODE, "cannot reopen the video");
  if (r->pd && r->pd->nv) return decode_all_nvdec(r);
  AVPacket *pkt = av_packet_alloc();
  if (!pkt) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a packet");
  stk_status st = STK_OK;
  while (st == STK_OK && r->next < r->nw && !r->miss && av_read_frame(r->v->fmt, pkt) >= 0) {
    if (pkt->stream_index == r->v->stream) st = decode_packet(r, pkt);
    av_packet_unref(pkt);
  }
  av_packet_free(&pkt);
  if (st == STK_OK && r->next < r->nw && !r->miss) st = decode_packet(r, NULL);
  return st;
}

/* Waits for the copies queued on the read's decoder's stream before their frames are
 * released: the frames' memory goes back to its pool on another stream (video_cuda.c),
 * which does not wait for that one, and may at once be lent to another decoder. */
static stk_status settle_copies(reader *r) {
  return r->pd && r->pd->device ? pooled_sync(r->pd) : STK_OK;
}

static stk_status run_read(reader *r) {
  r->by_pts = r->v->pts != NULL;
  stk_status st = decode_all(r);
  if (st == STK_OK && r->by_pts && (r->miss || r->next < r->nw)) {
    /* start again, numbering frames in output order from the start; the frames kept so far
     * are dropped once their copies are done */
    st = settle_copies(r);
    if (st != STK_OK) return st;
    close_decoder(r, true);
    for (int64_t i = 0; r->gpu && i < r->nw; i++) stk__video_gpu_release(&r->gpu[i]);
    r->by_pts = r->miss = false;
    r->next = r->decoded = 0;
    st = decode_all(r);
  }
  if (st == STK_OK && r->next < r->nw)
    st = STK_FAIL(STK_ERR_DECODE, "the stream ended after %lld frames; frame %lld was asked for",
                  (long long)r->decoded, (long long)r->w[r->next].index);
  return st;
}

/* Reads into dst (RGB) or, with hw, into gpu[] (device frames). */
static stk_status read_frames(stk__video *v, stk__video_hw *hw, const int64_t *index, int64_t count,
                              int out_w, int out_h, uint8_t *dst, stk__video_gpu_frame *gpu) {
  if (count == 0) return STK_OK;
  want *w = malloc(sizeof *w * (size_t)count);
  if (!w) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory");
  for (int64_t i = 0; i < count; i++) w[i] = (want){index[i], i};
  qsort(w, (size_t)count, sizeof *w, want_cmp);
  reader r = {.v = v,
              .w = w,
              .nw = count,
              .out_w = out_w > 0 ? out_w : v->width,
              .out_h = out_h > 0 ? out_h : v->height,
              .dst = dst,
              .hw = hw,
              .gpu = gpu};
  stk_status st = run_read(&r);
  if (st == STK_OK && r.pd) st = pooled_sync(r.pd); /* the frames' copies are done */
  if (st != STK_OK && gpu) { /* likewise before the frames are released; the read's error stays */
    char why[512];
    snprintf(why, sizeof why, "%s", stk_last_error());
    if (settle_copies(&r) != STK_OK) STK_FAIL(st, "%s", why);
  }
  for (int64_t i = 0; st != STK_OK && gpu && i < count; i++) stk__video_gpu_release(&gpu[i]);
  sws_freeContext(r.sws);
  av_frame_free(&r.frame);
  close_decoder(&r, st == STK_OK);
  close_format(v);
  free(r.hidden);
  free(w);
  return st;
}

stk_status stk__video_read(stk__video *v, const int64_t *index, int64_t count, int out_w, int out_h,
                           uint8_t *dst) {
  return read_frames(v, NULL, index, count, out_w, out_h, dst, NULL);
}

/* ---- NVDEC ---- */

/* AV_CUDA_USE_PRIMARY_CONTEXT of libavutil/hwcontext_cuda.h, which needs cuda.h: decode
 * in the device's primary context, where libstoker_cuda's kernels read the frames. */
#define STK__AV_CUDA_USE_PRIMARY_CONTEXT 1

/* Idle decoders kept per device: enough for every worker of a pipeline to find its own;
 * beyond that the least recently used is closed (each holds NVDEC's surfaces). */
#define STK__VIDEO_POOL_IDLE 16

struct stk__video_hw {
  int ordinal;
  AVBufferRef *device; /* opened first, held to the end: it keeps the primary context
                          retained while decoders come and go (NULL emulated) */
  bool emulated;       /* the test seam below: software decoding into NV12 host memory */
  pthread_mutex_t lock;
  pooled *idle; /* most recently given back first */
  int nidle;
  int64_t opened; /* decoders opened, for stk__video_hw_decoders_opened */
};

/* The first fields of FFmpeg's AVCUDADeviceContext (libavutil/hwcontext_cuda.h, public and
 * unchanged since FFmpeg 4.0), whose header needs cuda.h: the context and the stream. */
typedef struct {
  void *cuda_ctx;
  void *stream;
} stk__av_cuda_device;

static stk__av_cuda_device *cuda_device(AVBufferRef *device) {
  return ((AVHWDeviceContext *)device->data)->hwctx;
}

/* Opens FFmpeg's CUDA device `ordinal` in its primary context, with a non-blocking stream
 * of its own (on failure to make one FFmpeg keeps the legacy default stream: correct,
 * only shared). */
static stk_status open_cuda_device(int ordinal, AVBufferRef **out) {
  char name[16];
  snprintf(name, sizeof name, "%d", ordinal);
  int err = av_hwdevice_ctx_create(out, AV_HWDEVICE_TYPE_CUDA, name, NULL,
                                   STK__AV_CUDA_USE_PRIMARY_CONTEXT);
  if (err < 0) {
    char msg[AV_ERROR_MAX_STRING_SIZE] = "";
    av_strerror(err, msg, sizeof msg);
    return STK_FAIL(STK_ERR_UNSUPPORTED,
                    "FFmpeg cannot open CUDA device %d for NVDEC decoding (%s): it needs an "
                    "NVIDIA GPU and driver (libcuda, libnvcuvid)",
                    ordinal, msg);
  }
  stk__av_cuda_device *cu = cuda_device(*out);
  void *stream = NULL;
  if (stk__video_cuda_stream(cu->cuda_ctx, &stream) == STK_OK)
    cu->stream = stream;
  else
    stk_clear_error();
  return STK_OK;
}

/* Closes FFmpeg's CUDA device: its stream first, while the context is certainly alive
 * (releasing the device may destroy the primary context, and the stream with it). */
static void close_cuda_device(AVBufferRef **device) {
  if (!*device) return;
  stk__av_cuda_device *cu = cuda_device(*device);
  stk__video_cuda_stream_destroy(cu->stream);
  cu->stream = NULL;
  av_buffer_unref(device);
}

static void free_pooled(pooled *pd) {
  if (!pd) return;
  avcodec_free_context(&pd->dec);
  stk__nvdec_destroy(pd->nv);
  close_cuda_device(&pd->device);
  avcodec_parameters_free(&pd->par);
  free(pd);
}

static bool same_stream(const AVCodecParameters *a, const AVCodecParameters *b) {
  return a->codec_id == b->codec_id && a->format == b->format && a->width == b->width &&
         a->height == b->height && a->profile == b->profile && a->level == b->level &&
         a->extradata_size == b->extradata_size &&
         (a->extradata_size == 0 || memcmp(a->extradata, b->extradata, a->extradata_size) == 0);
}

static stk_status open_pooled(stk__video_hw *hw, const AVCodecParameters *par, pooled **out) {
  pooled *pd = calloc(1, sizeof *pd);
  if (!pd || !(pd->par = avcodec_parameters_alloc()) || avcodec_parameters_copy(pd->par, par) < 0) {
    free_pooled(pd);
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a decoder");
  }
  stk_status st = hw->emulated ? STK_OK : open_cuda_device(hw->ordinal, &pd->device);
  if (st == STK_OK && pd->device && stk__nvdec_handles(par->codec_id)) {
    stk__av_cuda_device *cu = cuda_device(pd->device);
    st = stk__nvdec_create(par->codec_id, cu->cuda_ctx, cu->stream, &pd->nv);
  } else if (st == STK_OK) {
    st = new_decoder(par, pd->device, &pd->dec);
  }
  if (st != STK_OK) {
    free_pooled(pd);
    return st;
  }
  pthread_mutex_lock(&hw->lock);
  hw->opened++;
  pthread_mutex_unlock(&hw->lock);
  *out = pd;
  return STK_OK;
}

static stk_status pool_take(stk__video_hw *hw, const AVCodecParameters *par, pooled **out) {
  pthread_mutex_lock(&hw->lock);
  pooled **at = &hw->idle;
  while (*at && !same_stream((*at)->par, par)) at = &(*at)->next;
  pooled *pd = *at;
  if (pd) *at = pd->next, hw->nidle--;
  pthread_mutex_unlock(&hw->lock);
  if (!pd) return open_pooled(hw, par, out);
  pd->next = NULL;
  *out = pd;
  return STK_OK;
}

static void pool_give(stk__video_hw *hw, pooled *pd, bool reusable) {
  if (!reusable) {
    free_pooled(pd);
    return;
  }
  if (pd->dec) avcodec_flush_buffers(pd->dec); /* drops its references: the next read seeks */
  pooled *evict = NULL;
  pthread_mutex_lock(&hw->lock);
  pd->next = hw->idle, hw->idle = pd;
  if (++hw->nidle > STK__VIDEO_POOL_IDLE) { /* close the least recently used */
    pooled **at = &hw->idle;
    while ((*at)->next) at = &(*at)->next;
    evict = *at, *at = NULL, hw->nidle--;
  }
  pthread_mutex_unlock(&hw->lock);
  free_pooled(evict);
}

/* Waits for the copies of the frames the decoder delivered (a read's last step: the
 * frames are then ready for any stream, and the decoder's stream free for the next). */
static stk_status pooled_sync(pooled *pd) {
  if (!pd->device) return STK_OK;
  stk__av_cuda_device *cu = cuda_device(pd->device);
  return stk__video_cuda_sync(cu->cuda_ctx, cu->stream);
}

int64_t stk__video_hw_decoders_opened(stk__video_hw *hw) {
  pthread_mutex_lock(&hw->lock);
  int64_t n = hw->opened;
  pthread_mutex_unlock(&hw->lock);
  return n;
}

stk_status stk__video_hw_open(int device, bool emulate, stk__video_hw **out) {
  *out = NULL;
  av_log_set_level(AV_LOG_QUIET);
  AVBufferRef *first = NULL;
  if (!emulate) {
    /* For the tests' CPU stand-in backend (tests/fake_gpu, whose "device" memory is host
     * memory) frames are decoded in software and converted to NV12 in host memory, the
     * layout NVDEC gives, so the GPU operators' plumbing (prepare, records, the pool, the
     * GPU stage, release) runs in the CPU test suite. Otherwise the device is opened here,
     * so that a missing driver fails the build, not the first batch. */
    if (av_hwdevice_find_type_by_name("cuda") != AV_HWDEVICE_TYPE_CUDA)
      return STK_FAIL(STK_ERR_UNSUPPORTED, "this FFmpeg was built without CUDA (NVDEC) support");
    STK_TRY(stk__video_cuda_align(device));
    STK_TRY(open_cuda_device(device, &first));
  }
  stk__video_hw *hw = calloc(1, sizeof *hw);
  if (!hw || pthread_mutex_init(&hw->lock, NULL) != 0) {
    free(hw);
    close_cuda_device(&first);
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory");
  }
  hw->device = first;
  hw->ordinal = device;
  hw->emulated = emulate;
  *out = hw;
  return STK_OK;
}

void stk__video_hw_close(stk__video_hw *hw) {
  if (!hw) return;
  while (hw->idle) {
    pooled *pd = hw->idle;
    hw->idle = pd->next;
    free_pooled(pd);
  }
  close_cuda_device(&hw->device);
  pthread_mutex_destroy(&hw->lock);
  free(hw);
}

/* Picks NVDEC's output (frames in device memory) when the decoder offers it. */
static enum AVPixelFormat pick_cuda(AVCodecContext *dec, const enum AVPixelFormat *fmts) {
  (void)dec;
  for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++)
    if (*p == AV_PIX_FMT_CUDA) return *p;
  return fmts[0]; /* a software format: deliver_gpu refuses the frame */
}

/* Makes dec decode with NVDEC on `device` (FFmpeg's CUDA device). */
static stk_status use_nvdec(AVCodecContext *dec, AVBufferRef *device) {
  bool cuda = false;
  for (int i = 0;; i++) {
    const AVCodecHWConfig *c = avcodec_get_hw_config(dec->codec, i);
    if (!c) break;
    cuda |= c->device_type == AV_HWDEVICE_TYPE_CUDA &&
            (c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX);
  }
  if (!cuda)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "NVDEC (this FFmpeg) cannot decode codec '%s'",
                    dec->codec->name);
  dec->hw_device_ctx = av_buffer_ref(device);
  if (!dec->hw_device_ctx) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory");
  dec->get_format = pick_cuda;
  return STK_OK;
}

static stk_status new_decoder(const AVCodecParameters *par, AVBufferRef *hw_device,
                              AVCodecContext **out) {
  const AVCodec *codec = avcodec_find_decoder(par->codec_id);
  if (!codec)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "no decoder for codec '%s'",
                    avcodec_get_name(par->codec_id));
  AVCodecContext *dec = avcodec_alloc_context3(codec);
  stk_status st = dec ? STK_OK : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a decoder");
  if (st == STK_OK && avcodec_parameters_to_context(dec, par) < 0)
    st = STK_FAIL(STK_ERR_DECODE, "bad codec parameters");
  if (st == STK_OK) {
    dec->thread_count = 1; /* the pipeline's workers already decode in parallel */
    if (hw_device) st = use_nvdec(dec, hw_device);
  }
  int err = st == STK_OK ? avcodec_open2(dec, codec, NULL) : 0;
  if (err < 0) st = av_fail(STK_ERR_UNSUPPORTED, "cannot open the decoder", err);
  if (st != STK_OK) avcodec_free_context(&dec);
  *out = dec;
  return st;
}

/* Bytes per sample of a device frame's layout (NV12 1, P010 / P016 2), or 0. */
static int hw_bytes_per_sample(const AVFrame *f) {
  if (f->format != AV_PIX_FMT_CUDA || !f->hw_frames_ctx) return 0;
  enum AVPixelFormat sw = ((const AVHWFramesContext *)f->hw_frames_ctx->data)->sw_format;
  return sw == AV_PIX_FMT_NV12 ? 1 : sw == AV_PIX_FMT_P010 || sw == AV_PIX_FMT_P016 ? 2 : 0;
}

/* The emulation's frame: the software frame converted to NV12 (limited range, as the
 * test clips are) in a new frame, which *out then owns. */
static stk_status emulated_nv12(reader *r, AVFrame **out) {
  AVFrame *f = r->frame, *c = av_frame_alloc();
  if (!c) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a frame");
  c->format = AV_PIX_FMT_NV12, c->width = f->width, c->height = f->height;
  r->sws = sws_getCachedContext(r->sws, f->width, f->height, f->format, f->width, f->height,
                                AV_PIX_FMT_NV12, SWS_POINT, NULL, NULL, NULL);
  if (!r->sws || av_frame_get_buffer(c, 0) < 0) {
    av_frame_free(&c);
    return STK_FAIL(STK_ERR_UNSUPPORTED, "cannot convert pixel format %d to NV12", f->format);
  }
  sws_scale(r->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, c->data,
            c->linesize);
  *out = c;
  return STK_OK;
}

/* Keeps a reference to the device frame in every slot that wants index idx. */
static stk_status deliver_gpu(reader *r, int64_t idx) {
  AVFrame *f = r->frame, *own = NULL;
  if (r->hw->emulated) STK_TRY(emulated_nv12(r, &own));
  stk_status st = deliver_frame(r, own ? own : f, idx, own ? 1 : hw_bytes_per_sample(f));
  av_frame_free(&own);
  return st;
}

/* Keeps a reference to frame f (bps bytes per sample; 0: not NVDEC's) in every slot that
 * wants index idx. */
static stk_status deliver_frame(reader *r, AVFrame *f, int64_t idx, int bps) {
  if (bps == 0)
    return STK_FAIL(
        STK_ERR_UNSUPPORTED,
        "NVDEC did not decode this stream (FFmpeg fell back to pixel format '%s': an "
        "unsupported profile, chroma format or size); use device=\"cpu\"",
        av_get_pix_fmt_name(f->format == AV_PIX_FMT_CUDA && f->hw_frames_ctx
                                ? ((AVHWFramesContext *)f->hw_frames_ctx->data)->sw_format
                                : (enum AVPixelFormat)f->format));
  stk_nv12_view view = {f->data[0],
                        f->data[1],
                        f->linesize[0],
                        f->linesize[1],
                        f->width,
                        f->height,
                        bps,
                        f->color_range == AVCOL_RANGE_JPEG};
  for (; r->next < r->nw && r->w[r->next].index == idx; r->next++) {
    stk__video_gpu_frame *g = &r->gpu[r->w[r->next].slot];
    stk__video_gpu_release(g); /* a slot filled by an earlier attempt */
    if (r->hw->emulated) {     /* host memory, no surfaces to give back: keep the frame */
      AVFrame *c = av_frame_clone(f);
      if (!c) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a frame reference");
      g->ref = c;
      g->view = view;
      continue;
    }
    STK_TRY(copy_out(r, &view, g));
  }
  return STK_OK;
}

/* NVDEC's surface is only lent (video_cuda.c): the frame is copied out of it into g. */
static stk_status copy_out(reader *r, const stk_nv12_view *view, stk__video_gpu_frame *g) {
  stk__av_cuda_device *cu = cuda_device(r->pd->device);
  STK_TRY(stk__video_cuda_copy(cu->cuda_ctx, cu->stream, view, &g->view, &g->mem));
  g->ctx = cu->cuda_ctx;
  return STK_OK;
}

/* ---- H.264 / HEVC: NVDEC driven directly ---- */

static bool is_hidden(const reader *r, int64_t pts) {
  for (int64_t i = 0; i < r->nhidden; i++)
    if (r->hidden[i] == pts) return true;
  return false;
}

/* Notes a packet an edit list hides (its picture is not a frame). */
static stk_status note_hidden(reader *r, int64_t pts) {
  if (r->nhidden == r->hidden_cap) {
    int64_t cap = r->hidden_cap ? 2 * r->hidden_cap : 16;
    int64_t *h = realloc(r->hidden, sizeof *h * (size_t)cap);
    if (!h) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory");
    r->hidden = h, r->hidden_cap = cap;
  }
  r->hidden[r->nhidden++] = pts;
  return STK_OK;
}

/* Whether the session's next picture is a wanted frame: its index, or -1. */
static int64_t nvdec_want(void *user, int64_t pts) {
  reader *r = user;
  if (r->next >= r->nw || r->miss || is_hidden(r, pts)) return -1;
  int64_t idx = frame_index_at(r, pts);
  return idx >= 0 && r->w[r->next].index == idx ? idx : -1;
}

/* A wanted picture from the NVDEC session: copied into every slot that wants frame idx. */
static stk_status nvdec_sink(void *user, int64_t idx, const stk_nv12_view *view) {
  reader *r = user;
  if (view->width != r->v->width || view->height != r->v->height)
    return STK_FAIL(STK_ERR_DECODE, "frame %lld is %dx%d; the stream says %dx%d", (long long)idx,
                    view->width, view->height, r->v->width, r->v->height);
  for (; r->next < r->nw && r->w[r->next].index == idx; r->next++) {
    stk__video_gpu_frame *g = &r->gpu[r->w[r->next].slot];
    stk__video_gpu_release(g); /* a slot filled by an earlier attempt */
    STK_TRY(copy_out(r, view, g));
  }
  return STK_OK;
}

/* NVIDIA's parser reads Annex B (start codes, parameter sets in band); MP4 / MKV store
 * length-prefixed units with the parameter sets aside: FFmpeg's filter converts. */
static stk_status open_annexb(reader *r, AVBSFContext **out) {
  AVStream *s = r->v->fmt->streams[r->v->stream];
  const char *name =
      s->codecpar->codec_id == AV_CODEC_ID_H264 ? "h264_mp4toannexb" : "hevc_mp4toannexb";
  const AVBitStreamFilter *f = av_bsf_get_by_name(name);
  if (!f) return STK_FAIL(STK_ERR_UNSUPPORTED, "this FFmpeg lacks the %s bitstream filter", name);
  AVBSFContext *b = NULL;
  if (av_bsf_alloc(f, &b) < 0 || avcodec_parameters_copy(b->par_in, s->codecpar) < 0) {
    av_bsf_free(&b);
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a bitstream filter");
  }
  b->time_base_in = s->time_base;
  int err = av_bsf_init(b);
  if (err < 0) {
    av_bsf_free(&b);
    return av_fail(STK_ERR_DECODE, "cannot read the stream's parameter sets", err);
  }
  *out = b;
  return STK_OK;
}

/* Converts one packet and parses what comes out (the packet's data is taken). */
static stk_status feed_annexb(reader *r, AVBSFContext *bsf, AVPacket *pkt) {
  int err = av_bsf_send_packet(bsf, pkt);
  if (err < 0) return av_fail(STK_ERR_DECODE, "corrupt frame data", err);
  stk_status st = STK_OK;
  while (st == STK_OK && (err = av_bsf_receive_packet(bsf, pkt)) >= 0) {
    if (pkt->flags & AV_PKT_FLAG_DISCARD) st = note_hidden(r, pkt->pts);
    if (st == STK_OK) st = stk__nvdec_feed(r->pd->nv, pkt->data, (size_t)pkt->size, pkt->pts);
    av_packet_unref(pkt);
  }
  if (st == STK_OK && err != AVERROR(EAGAIN) && err != AVERROR_EOF)
    st = av_fail(STK_ERR_DECODE, "corrupt frame data", err);
  return st;
}

/* As decode_all, through the session: packets until every wanted frame has come, then
 * (when the file ended first) the frames the parser holds for reordering. */
static stk_status decode_all_nvdec(reader *r) {
  AVBSFContext *bsf = NULL;
  AVPacket *pkt = NULL;
  stk_status st = open_annexb(r, &bsf);
  if (st == STK_OK && !(pkt = av_packet_alloc()))
    st = STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a packet");
  if (st == STK_OK) st = stk__nvdec_begin(r->pd->nv, nvdec_want, nvdec_sink, r);
  while (st == STK_OK && r->next < r->nw && !r->miss && av_read_frame(r->v->fmt, pkt) >= 0) {
    if (pkt->stream_index == r->v->stream) st = feed_annexb(r, bsf, pkt);
    av_packet_unref(pkt);
  }
  stk_status end = stk__nvdec_end(r->pd->nv, st == STK_OK && r->next < r->nw && !r->miss);
  if (st == STK_OK) st = end;
  av_packet_free(&pkt);
  av_bsf_free(&bsf);
  return st;
}

stk_status stk__video_read_gpu(stk__video *v, stk__video_hw *hw, const int64_t *index,
                               int64_t count, stk__video_gpu_frame *out) {
  memset(out, 0, sizeof *out * (size_t)count);
  return read_frames(v, hw, index, count, 0, 0, NULL, out);
}

void stk__video_gpu_release(stk__video_gpu_frame *f) {
  if (!f) return;
  if (f->mem) stk__video_cuda_free(f->ctx, f->mem);
  AVFrame *c = f->ref;
  av_frame_free(&c);
  memset(f, 0, sizeof *f);
}

#else /* !STK_HAVE_LIBAV */

struct stk__video {
  int unused;
};

bool stk__video_codec_available(void) { return false; }

stk_status stk__video_open(const void *bytes, size_t n, const char *path, stk__video **out) {
  *out = NULL;
  return STK_FAIL(STK_ERR_UNSUPPORTED,
                  "built without FFmpeg (install libavformat-dev, libavcodec-dev and "
                  "libswscale-dev and rebuild)");
}
void stk__video_close(stk__video *v) {}
int64_t stk__video_frames(const stk__video *v) { return 0; }
int stk__video_width(const stk__video *v) { return 0; }
int stk__video_height(const stk__video *v) { return 0; }
double stk__video_fps(const stk__video *v) { return 0.0; }
stk_status stk__video_read(stk__video *v, const int64_t *index, int64_t count, int out_w, int out_h,
                           uint8_t *dst) {
  return STK_FAIL(STK_ERR_UNSUPPORTED, "built without FFmpeg");
}
struct stk__video_hw {
  int unused;
};
stk_status stk__video_hw_open(int device, bool emulate, stk__video_hw **out) {
  *out = NULL;
  return STK_FAIL(STK_ERR_UNSUPPORTED, "built without FFmpeg");
}
void stk__video_hw_close(stk__video_hw *hw) {}
int64_t stk__video_hw_decoders_opened(stk__video_hw *hw) { return 0; }
stk_status stk__video_read_gpu(stk__video *v, stk__video_hw *hw, const int64_t *index,
                               int64_t count, stk__video_gpu_frame *out) {
  return STK_FAIL(STK_ERR_UNSUPPORTED, "built without FFmpeg");
}
void stk__video_gpu_release(stk__video_gpu_frame *f) {}

#endif
