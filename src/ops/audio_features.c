/* mel_filter_bank, mfcc and to_decibels on the CPU (DALI's): features computed from a
 * spectrogram. The coefficients come from src/shared/audio_math.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/audio_math.h"
#include "audio_util.h"

/* Splits a tensor around axis `ax`: outer x len x inner. */
static void split_axis(const stk__tensor *t, int ax, int64_t *outer, int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (d < ax) *outer *= t->shape[d];
    if (d > ax) *inner *= t->shape[d];
  }
}

/* out[o, m, i] = sum_k w[m, k] in[o, k, i] for an (rows x len) matrix w. */
static void apply_matrix(const double *w, int64_t rows, const double *in, int64_t outer,
                         int64_t len, int64_t inner, float *out) {
  for (int64_t o = 0; o < outer; o++) {
    const double *x = in + o * len * inner;
    for (int64_t m = 0; m < rows; m++) {
      float *y = out + (o * rows + m) * inner;
      for (int64_t i = 0; i < inner; i++) {
        double acc = 0.0;
        for (int64_t k = 0; k < len; k++) acc += w[m * len + k] * x[k * inner + i];
        y[i] = (float)acc;
      }
    }
  }
}

/* ---- mel_filter_bank ---- */
enum { MF_NFILTER, MF_SAMPLE_RATE, MF_FREQ_LOW, MF_FREQ_HIGH, MF_NORMALIZE, MF_FORMULA, MF_COUNT_ };
static const stk_arg_schema mf_args[] = {
    [MF_NFILTER] = {.name = "nfilter",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_RANGE,
                    .default_text = "128",
                    .min = 1,
                    .max = 65536,
                    .doc = "number of mel filters (output bins)"},
    [MF_SAMPLE_RATE] = {.name = "sample_rate",
                        .type = STK_ARG_FLOAT,
                        .flags = STK_ARGF_RANGE,
                        .default_text = "44100.0",
                        .min = 1e-6,
                        .max = 1e9,
                        .doc = "sampling rate of the signal (Hz)"},
    [MF_FREQ_LOW] = {.name = "freq_low",
                     .type = STK_ARG_FLOAT,
                     .flags = STK_ARGF_RANGE,
                     .default_text = "0.0",
                     .min = 0,
                     .max = 1e9,
                     .doc = "lowest frequency of the bank (Hz)"},
    [MF_FREQ_HIGH] = {.name = "freq_high",
                      .type = STK_ARG_FLOAT,
                      .flags = STK_ARGF_RANGE,
                      .default_text = "0.0",
                      .min = 0,
                      .max = 1e9,
                      .doc = "highest frequency (Hz); 0: sample_rate / 2"},
    [MF_NORMALIZE] = {.name = "normalize",
                      .type = STK_ARG_BOOL,
                      .default_text = "true",
                      .doc = "scale each triangle by 2 / its width in Hz (Slaney's equal "
                             "area, librosa's norm='slaney'); false: peaks of 1"},
    [MF_FORMULA] = {.name = "mel_formula",
                    .type = STK_ARG_STRING,
                    .default_text = "\"slaney\"",
                    .choices = "slaney|htk",
                    .doc = "the mel scale: Slaney's (librosa's default) or HTK's "
                           "2595 log10(1 + f / 700)"},
};
STK__CHECK_ARGS(mf_args, MF_COUNT_);

static const stk_port_schema mf_in[] = {
    {"input",
     "a power spectrogram with nfft/2+1 frequency bins on the layout's 'f' axis "
     "(the first axis when there is no layout)"}};
static const stk_port_schema mf_out[] = {{"output", "float32; nfilter bins on that axis"}};

static stk_status mf_init(stk__node *node) {
  double sr = stk__arg_float(node, NULL, MF_SAMPLE_RATE);
  double lo = stk__arg_float(node, NULL, MF_FREQ_LOW),
         hi = stk__arg_float(node, NULL, MF_FREQ_HIGH);
  if (hi == 0.0) hi = sr / 2;
  if (hi > sr / 2 + 1e-9 || lo >= hi)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "needs 0 <= freq_low < freq_high <= sample_rate / 2; got freq_low = %g, "
                      "freq_high = %g, sample_rate = %g",
                      lo, hi, sr);
  return STK_OK;
}

/* The filter bank for `bins` FFT bins: nfilter x bins weights. */
static void mf_weights(const stk__node *node, int64_t bins, double *w) {
  int64_t nf = stk__arg_int(node, NULL, MF_NFILTER), nfft = 2 * (bins - 1);
  double sr = stk__arg_float(node, NULL, MF_SAMPLE_RATE);
  double lo = stk__arg_float(node, NULL, MF_FREQ_LOW),
         hi = stk__arg_float(node, NULL, MF_FREQ_HIGH);
  if (hi == 0.0) hi = sr / 2;
  int htk = strcmp(stk__arg_string(node, MF_FORMULA), "htk") == 0;
  int norm = stk__arg_bool(node, NULL, MF_NORMALIZE);
  double mlo = stk_hz_to_mel(lo, htk), mhi = stk_hz_to_mel(hi, htk);
  for (int64_t m = 0; m < nf; m++) {
    double c[3];
    for (int j = 0; j < 3; j++)
      c[j] = stk_mel_to_hz(mlo + (mhi - mlo) * (double)(m + j) / (double)(nf + 1), htk);
    for (int64_t k = 0; k < bins; k++) {
      double f = nfft ? (double)k * sr / (double)nfft : 0.0;
      w[m * bins + k] = stk_mel_weight(f, c[0], c[1], c[2], norm);
    }
  }
}

/* The frequency axis: the layout's 'f', else the first. */
static int freq_axis(const stk__tensor *t) {
  const char *f = strchr(t->layout, 'f');
  if (f && (int)strlen(t->layout) == t->ndim) return (int)(f - t->layout);
  return 0;
}

static stk_status mf_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (in->ndim < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "needs at least one dimension");
  int ax = freq_axis(in);
  int64_t bins = in->shape[ax], nf = stk__arg_int(node, s, MF_NFILTER), outer, inner;
  if (bins < 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the frequency axis (%d) has %lld bins; needs at least 2", ax,
                      (long long)bins);
  const double *x = NULL;
  STK_TRY(stk__audio_doubles(node, s, in, &x));
  double *w = stk__scratch(s, sizeof(double) * (size_t)(nf * bins));
  if (!w) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  mf_weights(node, bins, w);
  split_axis(in, ax, &outer, &inner);
  int64_t shape[STK_MAX_NDIM];
  memcpy(shape, in->shape, sizeof shape);
  shape[ax] = nf;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, in->ndim, shape, in->layout, &out));
  apply_matrix(w, nf, x, outer, bins, inner, out->data);
  return STK_OK;
}

static const stk_op_schema mf_schema = {
    .name = "mel_filter_bank",
    .doc =
        "Converts a power spectrogram to mel bins with triangular filters equally spaced "
        "on the mel scale between freq_low and freq_high (librosa.filters.mel's "
        "conventions); the FFT size is 2 * (bins - 1).",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = mf_in,
    .num_outputs = 1,
    .outputs = mf_out,
    .num_args = MF_COUNT_,
    .args = mf_args,
};
const stk__op_def stk__op_mel_filter_bank = {
    .schema = &mf_schema, .init = mf_init, .run_sample = mf_run};

/* ---- mfcc ---- */
enum { MC_AXIS, MC_DCT_TYPE, MC_LIFTER, MC_N_MFCC, MC_NORMALIZE, MC_COUNT_ };
static const stk_arg_schema mc_args[] = {
    [MC_AXIS] = {.name = "axis",
                 .type = STK_ARG_INT,
                 .flags = STK_ARGF_RANGE,
                 .default_text = "0",
                 .min = 0,
                 .max = STK_MAX_NDIM - 1,
                 .doc = "the axis of the mel bins (transformed)"},
    [MC_DCT_TYPE] = {.name = "dct_type",
                     .type = STK_ARG_INT,
                     .flags = STK_ARGF_RANGE,
                     .default_text = "2",
                     .min = 1,
                     .max = 3,
                     .doc = "DCT type 1, 2 or 3 (SciPy's definitions without their factor 2)"},
    [MC_LIFTER] = {.name = "lifter",
                   .type = STK_ARG_FLOAT,
                   .default_text = "0.0",
                   .doc = "cepstral liftering: coefficient k is multiplied by "
                          "1 + lifter / 2 sin(pi (k + 1) / lifter); 0: none"},
    [MC_N_MFCC] = {.name = "n_mfcc",
                   .type = STK_ARG_INT,
                   .flags = STK_ARGF_RANGE,
                   .default_text = "20",
                   .min = 1,
                   .max = 65536,
                   .doc = "number of coefficients kept"},
    [MC_NORMALIZE] = {.name = "normalize",
                      .type = STK_ARG_BOOL,
                      .default_text = "false",
                      .doc = "orthonormal DCT (norm='ortho'); not with dct_type 1"},
};
STK__CHECK_ARGS(mc_args, MC_COUNT_);

static const stk_port_schema mc_in[] = {{"input", "mel spectrogram (usually in decibels)"}};
static const stk_port_schema mc_out[] = {{"output", "float32; n_mfcc coefficients on `axis`"}};

static stk_status mc_init(stk__node *node) {
  if (stk__arg_int(node, NULL, MC_DCT_TYPE) == 1 && stk__arg_bool(node, NULL, MC_NORMALIZE))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "normalize is not supported with dct_type = 1");
  return STK_OK;
}

static stk_status mc_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int ax = (int)stk__arg_int(node, s, MC_AXIS), type = (int)stk__arg_int(node, s, MC_DCT_TYPE);
  if (ax >= in->ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "axis = %d: the input has %d dimensions",
                      ax, in->ndim);
  int64_t len = in->shape[ax], n = stk__arg_int(node, s, MC_N_MFCC), outer, inner;
  if (n > len || (type == 1 && len < 2))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "n_mfcc = %lld needs at least as many input bins on axis %d; it has %lld",
                      (long long)n, ax, (long long)len);
  const double *x = NULL;
  STK_TRY(stk__audio_doubles(node, s, in, &x));
  double *w = stk__scratch(s, sizeof(double) * (size_t)(n * len));
  if (!w) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  int ortho = stk__arg_bool(node, s, MC_NORMALIZE);
  double lifter = stk__arg_float(node, s, MC_LIFTER);
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < len; j++)
      w[k * len + j] = stk_dct_coeff(type, k, j, len, ortho) * stk_lifter(k, lifter);
  split_axis(in, ax, &outer, &inner);
  int64_t shape[STK_MAX_NDIM];
  memcpy(shape, in->shape, sizeof shape);
  shape[ax] = n;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, in->ndim, shape, in->layout, &out));
  apply_matrix(w, n, x, outer, len, inner, out->data);
  return STK_OK;
}

static const stk_op_schema mc_schema = {
    .name = "mfcc",
    .doc =
        "Mel-frequency cepstral coefficients: the discrete cosine transform of a mel "
        "spectrogram along `axis`, the first n_mfcc coefficients kept, optionally "
        "liftered (librosa.feature.mfcc's conventions).",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = mc_in,
    .num_outputs = 1,
    .outputs = mc_out,
    .num_args = MC_COUNT_,
    .args = mc_args,
};
const stk__op_def stk__op_mfcc = {.schema = &mc_schema, .init = mc_init, .run_sample = mc_run};

/* ---- to_decibels ---- */
enum { DB_MULTIPLIER, DB_REFERENCE, DB_CUTOFF, DB_COUNT_ };
static const stk_arg_schema db_args[] = {
    [DB_MULTIPLIER] = {.name = "multiplier",
                       .type = STK_ARG_FLOAT,
                       .default_text = "10.0",
                       .doc = "10 for power, 20 for amplitude"},
    [DB_REFERENCE] = {.name = "reference",
                      .type = STK_ARG_FLOAT,
                      .flags = STK_ARGF_RANGE,
                      .default_text = "0.0",
                      .min = 0,
                      .max = 1e300,
                      .doc = "the value of 0 dB; 0: the sample's maximum"},
    [DB_CUTOFF] = {.name = "cutoff_db",
                   .type = STK_ARG_FLOAT,
                   .default_text = "-200.0",
                   .doc = "floor of the result (dB below the reference)"},
};
STK__CHECK_ARGS(db_args, DB_COUNT_);

static const stk_port_schema db_in[] = {{"input", "magnitudes or powers (>= 0)"}};
static const stk_port_schema db_out[] = {
    {"output", "float32, multiplier log10(max(x / reference, 10^(cutoff_db / multiplier)))"}};

static stk_status db_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  const double *x = NULL;
  STK_TRY(stk__audio_doubles(node, s, in, &x));
  int64_t n = stk__audio_numel(in);
  double mult = stk__arg_float(node, s, DB_MULTIPLIER), ref = stk__arg_float(node, s, DB_REFERENCE);
  if (mult == 0.0) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "multiplier must not be 0");
  if (ref == 0.0)
    for (int64_t i = 0; i < n; i++) ref = x[i] > ref ? x[i] : ref;
  double min_ratio = pow(10.0, stk__arg_float(node, s, DB_CUTOFF) / mult);
  double inv_ref = ref > 0.0 ? 1.0 / ref : 1.0;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, in->ndim, in->shape, in->layout, &out));
  float *y = out->data;
  for (int64_t i = 0; i < n; i++) y[i] = stk_to_db(x[i], inv_ref, min_ratio, mult);
  return STK_OK;
}

static const stk_op_schema db_schema = {
    .name = "to_decibels",
    .doc =
        "Converts magnitudes or powers to decibels relative to a reference "
        "(librosa.power_to_db / amplitude_to_db with top_db left out).",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = db_in,
    .num_outputs = 1,
    .outputs = db_out,
    .num_args = DB_COUNT_,
    .args = db_args,
};
const stk__op_def stk__op_to_decibels = {.schema = &db_schema, .run_sample = db_run};
