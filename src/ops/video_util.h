/* What the video decoder and readers share (video_decode.c). */
#ifndef STOKER_OPS_VIDEO_UTIL_H
#define STOKER_OPS_VIDEO_UTIL_H

#include "../codecs/video.h"
#include "op.h"

/* How the frames of a sequence past the end of the video are filled. */
typedef enum {
  STK__VPAD_NONE,     /* shorter sequence */
  STK__VPAD_CONSTANT, /* fill_value */
  STK__VPAD_EDGE,     /* the last frame again */
  STK__VPAD_REFLECT_1001,
  STK__VPAD_REFLECT_101,
} stk__vpad;

#define STK__VPAD_CHOICES "none|constant|edge|repeat|reflect_1001|symmetric|reflect_101|reflect"
stk__vpad stk__vpad_parse(const char *name);
/* Frame j of a video of n >= 1 frames under padding mode p: an index, or -1 (fill). */
int64_t stk__vpad_index(stk__vpad p, int64_t j, int64_t n);

typedef struct {
  stk_dtype dtype;    /* uint8, or float32 */
  bool normalized;    /* float32 in [0, 1] instead of [0, 255] */
  const double *fill; /* fill values (per channel, or one for all) */
  size_t nfill;
  int out_w, out_h; /* scale the frames to this size; 0: the video's */
} stk__video_out;

/* Output `index` = frames idx[0..count) of v as [count, H, W, 3] "FHWC" (idx -1: filled),
 * within the node's pixel limit. Errors name the node and the sample. */
stk_status stk__video_emit(stk__node *node, stk__sample *s, stk__video *v, const int64_t *idx,
                           int64_t count, const stk__video_out *o, int index);

#endif /* STOKER_OPS_VIDEO_UTIL_H */
