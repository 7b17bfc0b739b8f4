/*
 * Audio decoding through libsndfile (WAV, FLAC, OGG/Vorbis, AIFF, ... as the installed
 * libsndfile supports), from bytes in memory. Optional at build time: without
 * libsndfile (STK_HAVE_SNDFILE undefined) every call fails with STK_ERR_UNSUPPORTED and
 * "built without libsndfile".
 */
#ifndef STOKER_CODECS_AUDIO_H
#define STOKER_CODECS_AUDIO_H

#include "../core/core.h"

typedef struct {
  int64_t frames;
  int channels;
  double rate;  /* samples per second */
  double *data; /* frames x channels, interleaved, full scale = 1.0 (int16 / 32768) */
} stk__audio;

/* True when the library was built with libsndfile. */
bool stk__audio_codec_available(void);
/* Decodes `n` bytes; refuses more than max_elems frames x channels (STK_ERR_LIMIT;
 * 0: no limit). The caller frees out->data with stk__audio_free. Errors name the format
 * problem (STK_ERR_DECODE) without a prefix; the caller adds the sample. */
stk_status stk__audio_decode(const void *bytes, size_t n, int64_t max_elems, stk__audio *out);
void stk__audio_free(stk__audio *a);

#endif /* STOKER_CODECS_AUDIO_H */
