/* What decoders.audio and readers.nemo_asr share: a decoded clip turned into outputs. */
#ifndef STOKER_OPS_AUDIO_DECODE_H
#define STOKER_OPS_AUDIO_DECODE_H

#include "../codecs/audio.h"
#include "op.h"

#define STK__AUDIO_DTYPES "float|float32|int16|int32"

typedef struct {
  double rate;    /* target rate; <= 0: keep the file's */
  bool downmix;   /* average the channels into a 1-D output */
  double quality; /* resampling quality (audio_resample's) */
  stk_dtype dtype;
} stk__audio_emit_opts;

/* Decodes bytes into output `index` (and the rate actually delivered into *rate):
 * [time, channels], or [time] when downmixed; float in [-1, 1), int16 or int32 at full
 * scale. Errors name the node and the sample. */
stk_status stk__audio_decode_emit(stk__node *node, stk__sample *s, const void *bytes, size_t n,
                                  const stk__audio_emit_opts *o, int index, double *rate);

#endif /* STOKER_OPS_AUDIO_DECODE_H */
