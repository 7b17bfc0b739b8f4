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

#endif /* STOKER_CODECS_VIDEO_H */
