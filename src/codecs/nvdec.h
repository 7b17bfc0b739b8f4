/*
 * NVDEC driven directly, through NVIDIA's video parser (libnvcuvid, loaded at run time):
 * the GPU video readers' decoder for H.264 and HEVC.
 *
 * Why not FFmpeg's NVDEC hwaccel for these: every avcodec_flush_buffers (a read's seek, a
 * new file) makes FFmpeg create a new NVDEC decoder, about 250 ms of driver work that the
 * driver serialises (measured on the H100: 15 reads a second, whatever the thread count).
 * Here a session keeps its decoder from one read to the next, and only the parser, a host
 * object, is made per read. Packets come from libavformat in Annex B form (video.c);
 * decoded pictures are handed over in display order, mapped, one at a time.
 *
 * Optional at build time: without the ffnvcodec headers (Debian's libffmpeg-nvenc-dev)
 * stk__nvdec_handles is false and video.c keeps FFmpeg's hwaccel for every codec.
 */
#ifndef STOKER_CODECS_NVDEC_H
#define STOKER_CODECS_NVDEC_H

#include "../core/core.h"
#include "../shared/video_yuv.h"

typedef struct stk__nvdec stk__nvdec;

/* Called for each picture in display order with `pts`, the timestamp fed with the packet
 * the picture began in: returns a key >= 0 when the picture is wanted, else -1 (it is then
 * never mapped). */
typedef int64_t (*stk__nvdec_want)(void *user, int64_t pts);
/* Receives a wanted picture (`key` as want returned): `frame`'s planes are device memory
 * valid only during the call (mapped). A failure stops the parsing and is returned by the
 * feed that caused it. */
typedef stk_status (*stk__nvdec_sink)(void *user, int64_t key, const stk_nv12_view *frame);

/* Whether this build decodes FFmpeg codec `av_codec_id` (an AVCodecID) here. */
bool stk__nvdec_handles(int av_codec_id);
/* A session for the codec in CUDA context `cuda_ctx` (a CUcontext), its mapping queued on
 * `stream` (a CUstream). Fails (STK_ERR_UNSUPPORTED) without libnvcuvid. */
stk_status stk__nvdec_create(int av_codec_id, void *cuda_ctx, void *stream, stk__nvdec **out);
void stk__nvdec_destroy(stk__nvdec *d);
/* Starts a read: a new parser, whose pictures go to want and sink (with `user`). */
stk_status stk__nvdec_begin(stk__nvdec *d, stk__nvdec_want want, stk__nvdec_sink sink, void *user);
/* Parses one Annex B packet with its presentation timestamp. */
stk_status stk__nvdec_feed(stk__nvdec *d, const uint8_t *data, size_t n, int64_t pts);
/* Ends the read: with `drain`, the pictures still held for reordering go to the sink
 * first. The decoder stays for the next read. */
stk_status stk__nvdec_end(stk__nvdec *d, bool drain);
/* NVDEC decoders the session has created (one, unless the streams' formats changed). */
int64_t stk__nvdec_decoders_created(const stk__nvdec *d);

#endif /* STOKER_CODECS_NVDEC_H */
