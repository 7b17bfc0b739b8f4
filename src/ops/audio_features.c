/* mel_filter_bank, mfcc and to_decibels on the CPU (DALI's): features computed from a
 * spectrogram. The coefficients come from src/shared/audio_math.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/wide.h"
#include "../shared/audio_math.h"
#include "audio_db.h"
#include "audio_gpu.h"
#include "audio_util.h"

/* Splits a tensor around axis `ax`: outer x len x inner. */
static void split_axis(const stk__tensor *t, int ax, int64_t *outer, int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (d < ax) *outer *= t->shape[d];
    if (d > ax) *inner *= t->shape[d];
  }
}

/* A weight matrix as sparse rows: row m's nonzero weights are wt[start[m] .. start[m+1])
 * at columns col[...], in column order. A mel filter covers a few of the bins, so this
 * does a small fraction of the dense product's work (the dense loop cost a 16 kHz speech
 * pipeline 60% of its CPU time, bench/RESULTS.md issue 26), with the same sums for
 * finite inputs (zero weights skipped). */
typedef struct {
  int64_t *start, *col;
  double *wt;
} sparse_rows;

static bool sparse_from_dense(const double *w, int64_t rows, int64_t len, stk__sample *s,
                              sparse_rows *sp) {
  int64_t nz = 0;
  for (int64_t j = 0; j < rows * len; j++) nz += w[j] != 0.0;
  sp->start = stk__scratch(s, sizeof(int64_t) * (size_t)(rows + 1));
  sp->col = stk__scratch(s, sizeof(int64_t) * (size_t)(nz ? nz : 1));
  sp->wt = stk__scratch(s, sizeof(double) * (size_t)(nz ? nz : 1));
  if (!sp->start || !sp->col || !sp->wt) return false;
  nz = 0;
  for (int64_t m = 0; m < rows; m++) {
    sp->start[m] = nz;
    for (int64_t k = 0; k < len; k++)
      if (w[m * len + k] != 0.0) sp->col[nz] = k, sp->wt[nz++] = w[m * len + k];
  }
  sp->start[rows] = nz;
  return true;
}

typedef double f64x4 __attribute__((vector_size(32), aligned(8)));
typedef float f32x4 __attribute__((vector_size(16), aligned(4)));

/* y[i] = sum_j wt[j] x[col[j] * inner + i] for one row, i < inner, accumulated in float64
 * in column order: 8 values of i at a time (4 per vector), the rest one by one. The
 * input is float32 (`xf`) or float64 (`xd`). */
static inline __attribute__((always_inline)) void sparse_row(const sparse_rows *sp, int64_t m,
                                                             const float *xf, const double *xd,
                                                             int64_t inner, float *y) {
  int64_t j0 = sp->start[m], j1 = sp->start[m + 1], i = 0;
  for (; i + 8 <= inner; i += 8) {
    f64x4 a0 = {0, 0, 0, 0}, a1 = {0, 0, 0, 0};
    for (int64_t j = j0; j < j1; j++) {
      int64_t at = sp->col[j] * inner + i;
      f64x4 x0, x1;
      if (xf) {
        x0 = __builtin_convertvector(*(const f32x4 *)(xf + at), f64x4);
        x1 = __builtin_convertvector(*(const f32x4 *)(xf + at + 4), f64x4);
      } else {
        x0 = *(const f64x4 *)(xd + at), x1 = *(const f64x4 *)(xd + at + 4);
      }
      a0 += sp->wt[j] * x0, a1 += sp->wt[j] * x1;
    }
    *(f32x4 *)(y + i) = __builtin_convertvector(a0, f32x4);
    *(f32x4 *)(y + i + 4) = __builtin_convertvector(a1, f32x4);
  }
  for (; i < inner; i++) {
    double acc = 0.0;
    for (int64_t j = j0; j < j1; j++) {
      int64_t at = sp->col[j] * inner + i;
      acc += sp->wt[j] * (xf ? (double)xf[at] : xd[at]);
    }
    y[i] = (float)acc;
  }
}

/* out[o, m, i] = sum_k w[m, k] in[o, k, i] (in: outer x len x inner, float32 or 64). */
WIDE static void apply_sparse(const sparse_rows *sp, int64_t rows, const float *xf,
                              const double *xd, int64_t outer, int64_t len, int64_t inner,
                              float *out) {
  for (int64_t o = 0; o < outer; o++) {
    int64_t at = o * len * inner;
    for (int64_t m = 0; m < rows; m++)
      sparse_row(sp, m, xf ? xf + at : NULL, xf ? NULL : xd + at, inner,
                 out + (o * rows + m) * inner);
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
    /* The weight is 0 outside (c0, c2): only the bins from one below c0 to one above
     * c2 are evaluated, the others stay 0 (the same matrix, 80 x 257 evaluations
     * fewer than 3% as many for 80 speech filters). */
    int64_t k0 = bins, k1 = -1;
    if (nfft) {
      double b0 = floor(c[0] * (double)nfft / sr) - 1, b2 = ceil(c[2] * (double)nfft / sr) + 1;
      k0 = b0 > 0 ? (b0 < (double)bins ? (int64_t)b0 : bins) : 0;
      k1 = b2 < (double)(bins - 1) ? (b2 > 0 ? (int64_t)b2 : 0) : bins - 1;
    }
    memset(w + m * bins, 0, sizeof(double) * (size_t)bins);
    for (int64_t k = k0; k <= k1; k++) {
      double f = (double)k * sr / (double)nfft;
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

/* The plan shared by both backends: the frequency axis and the filter bank. */
static stk_status mf_plan(stk__node *node, stk__sample *s, const stk__tensor *in, int *axis,
                          int64_t *rows, double **weights) {
  if (in->ndim < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "needs at least one dimension");
  int ax = freq_axis(in);
  int64_t bins = in->shape[ax], nf = stk__arg_int(node, s, MF_NFILTER);
  if (bins < 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the frequency axis (%d) has %lld bins; needs at least 2", ax,
                      (long long)bins);
  double *w = malloc(sizeof(double) * (size_t)(nf * bins));
  if (!w) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for the filter bank");
  mf_weights(node, bins, w);
  *axis = ax, *rows = nf, *weights = w;
  return STK_OK;
}

/* CPU run of a matrix operator: plan, then apply (float32 input read as it is, any
 * other type as float64). */
static stk_status matrix_run(stk__node *node, stk__sample *s, stk__audio_matrix_plan plan) {
  const stk__tensor *in = stk__input(s, 0);
  int ax = 0;
  int64_t rows = 0, outer, inner;
  double *w = NULL;
  STK_TRY(plan(node, s, in, &ax, &rows, &w));
  const double *xd = NULL;
  stk_status st = STK_OK;
  if (in->dtype != STK_DTYPE_FLOAT32) st = stk__audio_doubles(node, s, in, &xd);
  int64_t shape[STK_MAX_NDIM];
  memcpy(shape, in->shape, sizeof shape);
  shape[ax] = rows;
  stk__tensor *out = NULL;
  if (st == STK_OK) st = stk__output(s, 0, STK_DTYPE_FLOAT32, in->ndim, shape, in->layout, &out);
  sparse_rows sp;
  if (st == STK_OK && !sparse_from_dense(w, rows, in->shape[ax], s, &sp))
    st = STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  if (st == STK_OK) {
    split_axis(in, ax, &outer, &inner);
    apply_sparse(&sp, rows, xd ? NULL : in->data, xd, outer, in->shape[ax], inner, out->data);
  }
  free(w);
  return st;
}

static stk_status mf_run(stk__node *node, stk__sample *s) { return matrix_run(node, s, mf_plan); }
static stk_status mf_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__audio_gpu_matrix(node, b, mf_plan);
}

static const stk_op_schema mf_schema = {
    .name = "mel_filter_bank",
    .doc =
        "Converts a power spectrogram to mel bins with triangular filters equally spaced "
        "on the mel scale between freq_low and freq_high (librosa.filters.mel's "
        "conventions); the FFT size is 2 * (bins - 1).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = mf_in,
    .num_outputs = 1,
    .outputs = mf_out,
    .num_args = MF_COUNT_,
    .args = mf_args,
    .gpu_check =
        "# atol=0.001 mismatch=0.001\n"
        "r = subscript(IN, kinds=[0, 1, 0], at_0=0, at_2=0)\n"
        "x = cast(r, dtype=\"float\")\n"
        "s = spectrogram(x, nfft=64, window_length=48, window_step=8)\n"
        "return mel_filter_bank(s, nfilter=20, sample_rate=16000, freq_low=50, "
        "device=@)",
};
const stk__op_def stk__op_mel_filter_bank = {
    .schema = &mf_schema, .init = mf_init, .run_sample = mf_run, .run_gpu = mf_run_gpu};

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

/* The plan shared by both backends: the DCT matrix (liftered) along `axis`. */
static stk_status mc_plan(stk__node *node, stk__sample *s, const stk__tensor *in, int *axis,
                          int64_t *rows, double **weights) {
  int ax = (int)stk__arg_int(node, s, MC_AXIS), type = (int)stk__arg_int(node, s, MC_DCT_TYPE);
  if (ax >= in->ndim)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "axis = %d: the input has %d dimensions",
                      ax, in->ndim);
  int64_t len = in->shape[ax], n = stk__arg_int(node, s, MC_N_MFCC);
  if (n > len || (type == 1 && len < 2))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "n_mfcc = %lld needs at least as many input bins on axis %d; it has %lld",
                      (long long)n, ax, (long long)len);
  double *w = malloc(sizeof(double) * (size_t)(n * len));
  if (!w) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for the DCT");
  int ortho = stk__arg_bool(node, s, MC_NORMALIZE);
  double lifter = stk__arg_float(node, s, MC_LIFTER);
  for (int64_t k = 0; k < n; k++)
    for (int64_t j = 0; j < len; j++)
      w[k * len + j] = stk_dct_coeff(type, k, j, len, ortho) * stk_lifter(k, lifter);
  *axis = ax, *rows = n, *weights = w;
  return STK_OK;
}

static stk_status mc_run(stk__node *node, stk__sample *s) { return matrix_run(node, s, mc_plan); }
static stk_status mc_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return stk__audio_gpu_matrix(node, b, mc_plan);
}

static const stk_op_schema mc_schema = {
    .name = "mfcc",
    .doc =
        "Mel-frequency cepstral coefficients: the discrete cosine transform of a mel "
        "spectrogram along `axis`, the first n_mfcc coefficients kept, optionally "
        "liftered (librosa.feature.mfcc's conventions).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = mc_in,
    .num_outputs = 1,
    .outputs = mc_out,
    .num_args = MC_COUNT_,
    .args = mc_args,
    .gpu_check =
        "# atol=0.001\n"
        "r = subscript(IN, kinds=[0, 1, 0], at_0=0, at_2=0)\n"
        "x = cast(r, dtype=\"float\")\n"
        "s = spectrogram(x, nfft=64, window_length=48, window_step=8)\n"
        "m = mel_filter_bank(s, nfilter=20, sample_rate=16000)\n"
        "d = to_decibels(m)\n"
        "return mfcc(d, n_mfcc=12, lifter=22.0, normalize=true, device=@)",
};
const stk__op_def stk__op_mfcc = {
    .schema = &mc_schema, .init = mc_init, .run_sample = mc_run, .run_gpu = mc_run_gpu};

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

/* The sample's constants: multiplier and the floor ratio (reference: given, or 0). */
static stk_status db_params(stk__node *node, stk__sample *s, double *mult, double *ref,
                            double *min_ratio) {
  *mult = stk__arg_float(node, s, DB_MULTIPLIER), *ref = stk__arg_float(node, s, DB_REFERENCE);
  if (*mult == 0.0)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "multiplier must not be 0");
  *min_ratio = pow(10.0, stk__arg_float(node, s, DB_CUTOFF) / *mult);
  return STK_OK;
}

static stk_status db_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  const double *xd = NULL; /* float32 is read as it is, other types as float64 */
  const float *xf = in->dtype == STK_DTYPE_FLOAT32 ? in->data : NULL;
  if (!xf) STK_TRY(stk__audio_doubles(node, s, in, &xd));
  int64_t n = stk__audio_numel(in);
  double mult, ref, min_ratio;
  STK_TRY(db_params(node, s, &mult, &ref, &min_ratio));
  if (ref == 0.0) {
    for (int64_t i = 0; i < n; i++) {
      double v = xf ? (double)xf[i] : xd[i];
      ref = v > ref ? v : ref;
    }
  }
  double inv_ref = ref > 0.0 ? 1.0 / ref : 1.0;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_FLOAT32, in->ndim, in->shape, in->layout, &out));
  stk__to_db_row(xf, xd, n, inv_ref, min_ratio, mult, out->data);
  return STK_OK;
}

static stk_status db_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_gpu_decibels_sample *ds = stk__calloc(n ? n : 1, sizeof *ds, "a decibels plan");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "shapes");
  stk_status st = ds && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t;
    st = stk__audio_gpu_sample(node, b, in, i, &t);
    if (st == STK_OK)
      st = db_params(node, stk__gpu_sample(b, i), &ds[i].multiplier, &ds[i].ref, &ds[i].min_ratio);
    ds[i].src = t.data, ds[i].count = stk__audio_numel(&t);
    memcpy(shapes + i * (size_t)ndim, t.shape, sizeof(int64_t) * (size_t)ndim);
  }
  if (st == STK_OK) st = stk__audio_gpu_output(b, in, ndim, shapes, &out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) ds[i].dst = stk__audio_gpu_data(out, i);
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(node,
                           stk_gpu_run_audio_decibels(g->api, g->ctx, (int)n, ds, NULL,
                                                      stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(ds);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema db_schema = {
    .name = "to_decibels",
    .doc =
        "Converts magnitudes or powers to decibels relative to a reference "
        "(librosa.power_to_db / amplitude_to_db with top_db left out).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = db_in,
    .num_outputs = 1,
    .outputs = db_out,
    .num_args = DB_COUNT_,
    .args = db_args,
    .gpu_check =
        "# atol=0.001\n"
        "r = subscript(IN, kinds=[0, 1, 0], at_0=0, at_2=0)\n"
        "x = cast(r, dtype=\"float\")\n"
        "s = spectrogram(x, nfft=64, window_length=48, window_step=8)\n"
        "return to_decibels(s, cutoff_db=-80.0, device=@)",
};
const stk__op_def stk__op_to_decibels = {
    .schema = &db_schema, .run_sample = db_run, .run_gpu = db_run_gpu};
