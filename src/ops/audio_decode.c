/* decoders.audio (DALI's): WAV, FLAC, OGG, ... through libsndfile, optionally downmixed
 * to mono and resampled. */
#include "audio_decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio_resample.h"
#include "audio_util.h"

/* Averages the channels in place: frames values remain. */
static void downmix(double *x, int64_t frames, int channels) {
  for (int64_t t = 0; t < frames; t++) {
    double acc = 0.0;
    for (int c = 0; c < channels; c++) acc += x[t * channels + c];
    x[t] = acc / channels;
  }
}

/* Full-scale factor of an output type: what 1.0 becomes. */
static double full_scale(stk_dtype dt) {
  if (dt == STK_DTYPE_INT16) return 32768.0;
  if (dt == STK_DTYPE_INT32) return 2147483648.0;
  return 1.0;
}

static stk_status emit(stk__node *node, stk__sample *s, stk__audio *a,
                       const stk__audio_emit_opts *o, int index, double *rate) {
  int ch = a->channels;
  if (o->downmix && ch > 1) downmix(a->data, a->frames, ch), ch = 1;
  double *x = a->data;
  int64_t frames = a->frames;
  *rate = a->rate;
  if (o->rate > 0 && o->rate != a->rate) {
    frames = stk__audio_resample_length(a->frames, a->rate, o->rate);
    if (frames * ch > stk__node_max_pixels(node) && stk__node_max_pixels(node) > 0)
      return STK__SFAIL(STK_ERR_LIMIT, node, s, "%lld resampled samples exceed the limit",
                        (long long)(frames * ch));
    x = stk__scratch(s, sizeof(double) * (size_t)(frames * ch + 1));
    if (!x || !stk__audio_resample(a->data, a->frames, ch, a->rate, o->rate, o->quality, x, frames))
      return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory to resample");
    *rate = o->rate;
  }
  int64_t shape[2] = {frames, ch};
  stk__tensor *out;
  STK_TRY(stk__output(s, index, o->dtype, o->downmix ? 1 : 2, shape, NULL, &out));
  double scale = full_scale(o->dtype);
  if (scale != 1.0)
    for (int64_t i = 0; i < frames * ch; i++) x[i] *= scale;
  stk__convert(out->data, o->dtype, x, STK_DTYPE_FLOAT64, (size_t)(frames * ch));
  return STK_OK;
}

stk_status stk__audio_decode_emit(stk__node *node, stk__sample *s, const void *bytes, size_t n,
                                  const stk__audio_emit_opts *o, int index, double *rate) {
  stk__audio a;
  stk_status st = stk__audio_decode(bytes, n, stk__node_max_pixels(node), &a);
  if (st != STK_OK) return stk__sample_wrap(st, node, s);
  st = emit(node, s, &a, o, index, rate);
  stk__audio_free(&a);
  return st;
}

/* ---- decoders.audio ---- */
enum { A_SAMPLE_RATE, A_DOWNMIX, A_DTYPE, A_QUALITY, A_COUNT_ };
static const stk_arg_schema audio_args[] = {
    [A_SAMPLE_RATE] = {.name = "sample_rate",
                       .type = STK_ARG_FLOAT,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .default_text = "0.0",
                       .doc = "resample to this rate (Hz); 0: keep the file's"},
    [A_DOWNMIX] = {.name = "downmix",
                   .type = STK_ARG_BOOL,
                   .default_text = "false",
                   .doc = "average the channels: a 1-D [time] output"},
    [A_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"float\"",
                 .choices = STK__AUDIO_DTYPES,
                 .doc = "float in [-1, 1), or int16 / int32 at full scale"},
    [A_QUALITY] = {.name = "quality",
                   .type = STK_ARG_FLOAT,
                   .flags = STK_ARGF_RANGE,
                   .default_text = "50.0",
                   .min = 0,
                   .max = 100,
                   .doc = "resampling quality (as audio_resample's)"},
};
STK__CHECK_ARGS(audio_args, A_COUNT_);

static const stk_port_schema audio_in[] = {{"input", "encoded audio bytes (1-D uint8)"}};
static const stk_port_schema audio_out[] = {
    {"audio, sample_rate",
     "the samples, [time, channels] ([time] with downmix), and the rate as a float32 "
     "scalar"}};

static stk_status audio_init(stk__node *node) {
  if (!stk__audio_codec_available())
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "built without libsndfile (install libsndfile1-dev and rebuild)");
  return STK_OK;
}

static stk_status audio_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (in->dtype != STK_DTYPE_UINT8 || in->ndim != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "needs encoded bytes (1-D uint8)");
  double target = stk__arg_float(node, s, A_SAMPLE_RATE);
  if (!(target >= 0) || target > 1e7)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "sample_rate = %g must lie in [0, 1e7]",
                      target);
  stk__audio_emit_opts o = {target, stk__arg_bool(node, s, A_DOWNMIX),
                            stk__arg_float(node, s, A_QUALITY),
                            stk__dtype_arg(stk__arg_string(node, A_DTYPE))};
  double rate;
  STK_TRY(stk__audio_decode_emit(node, s, in->data, (size_t)in->shape[0], &o, 0, &rate));
  stk__tensor *r;
  STK_TRY(stk__output(s, 1, STK_DTYPE_FLOAT32, 0, NULL, NULL, &r));
  *(float *)r->data = (float)rate;
  return STK_OK;
}

static const stk_op_schema audio_schema = {
    .name = "decoders.audio",
    .doc =
        "Decodes audio files (WAV, FLAC, OGG/Vorbis, AIFF, ... through libsndfile), "
        "optionally downmixed to mono and resampled.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = audio_in,
    .num_outputs = 2,
    .outputs = audio_out,
    .num_args = A_COUNT_,
    .args = audio_args,
};
const stk__op_def stk__op_decoders_audio = {
    .schema = &audio_schema, .init = audio_init, .run_sample = audio_run};
