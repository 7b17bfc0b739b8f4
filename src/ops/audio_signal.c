/* preemphasis_filter, nonsilent_region and audio_resample on the CPU (DALI's):
 * operators on raw 1-D (or time x channel) signals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../shared/audio_signal_math.h"
#include "audio_resample.h"
#include "audio_gpu.h"
#include "audio_util.h"

#define FLOAT_TYPES "float|float32|float64|double"
#define AUDIO_TYPES "float|float32|float64|double|int16|int32|uint8|int8|uint16|uint32"

/* ---- preemphasis_filter ---- */
enum { PE_COEFF, PE_BORDER, PE_DTYPE, PE_COUNT_ };
static const stk_arg_schema pe_args[] = {
    [PE_COEFF] = {.name = "preemph_coeff",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .default_text = "0.97",
                  .doc = "the coefficient c of y[t] = x[t] - c x[t-1]"},
    [PE_BORDER] = {.name = "border",
                   .type = STK_ARG_STRING,
                   .default_text = "\"clamp\"",
                   .choices = "clamp|zero|reflect",
                   .doc = "x[-1] for the first sample: x[0] (clamp), 0 (zero) or x[1] "
                          "(reflect)"},
    [PE_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .default_text = "\"float\"",
                  .choices = FLOAT_TYPES,
                  .doc = "output type"},
};
STK__CHECK_ARGS(pe_args, PE_COUNT_);

static const stk_port_schema pe_in[] = {{"input", "a 1-D signal, any numeric type"}};
static const stk_port_schema pe_out[] = {{"output", "the filtered signal, same shape"}};

static stk_status pe_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (in->ndim != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "needs a 1-D signal; got %d dimensions",
                      in->ndim);
  const double *x = NULL;
  STK_TRY(stk__audio_doubles(node, s, in, &x));
  int64_t n = in->shape[0];
  double c = stk__arg_float(node, s, PE_COEFF);
  const char *border = stk__arg_string(node, PE_BORDER);
  double prev = 0.0;
  if (n > 0 && strcmp(border, "clamp") == 0) prev = x[0];
  if (n > 1 && strcmp(border, "reflect") == 0) prev = x[1];
  double *y = stk__scratch(s, sizeof(double) * (size_t)(n ? n : 1));
  if (!y) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  for (int64_t t = 0; t < n; t++) {
    y[t] = x[t] - c * prev;
    prev = x[t];
  }
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, PE_DTYPE));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, 1, in->shape, in->layout, &out));
  stk__convert(out->data, dt, y, STK_DTYPE_FLOAT64, (size_t)n);
  return STK_OK;
}

/* GPU: float32 in and out (the kernel's type); the coefficient per sample. */
static stk_status pe_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_gpu_preemph_sample *ps = stk__calloc(n ? n : 1, sizeof *ps, "a pre-emphasis plan");
  int64_t *shapes = stk__calloc(n ? n : 1, sizeof(int64_t), "shapes");
  stk_status st = ps && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  const char *border = stk__arg_string(node, PE_BORDER);
  if (st == STK_OK && stk__dtype_arg(stk__arg_string(node, PE_DTYPE)) != STK_DTYPE_FLOAT32)
    st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL, "the GPU backend writes float32 only");
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__tensor t;
    st = stk__audio_gpu_sample(node, b, in, i, &t);
    if (st == STK_OK && t.ndim != 1)
      st = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, stk__gpu_sample(b, i),
                      "needs a 1-D signal; got %d dimensions", t.ndim);
    ps[i] = (stk_gpu_preemph_sample){t.data, NULL, t.shape[0],
                                     stk__arg_float(node, stk__gpu_sample(b, i), PE_COEFF),
                                     strcmp(border, "clamp") == 0     ? 1
                                     : strcmp(border, "reflect") == 0 ? 2
                                                                      : 0};
    shapes[i] = t.shape[0];
  }
  if (st == STK_OK) st = stk__audio_gpu_output(b, in, 1, shapes, &out);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) ps[i].dst = stk__audio_gpu_data(out, i);
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(node,
                           stk_gpu_run_audio_preemph(g->api, g->ctx, (int)n, ps, NULL,
                                                     stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(ps);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema pe_schema = {
    .name = "preemphasis_filter",
    .doc =
        "Pre-emphasis: y[t] = x[t] - preemph_coeff * x[t-1], boosting high frequencies "
        "before spectral analysis of speech.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = pe_in,
    .num_outputs = 1,
    .outputs = pe_out,
    .num_args = PE_COUNT_,
    .args = pe_args,
    .gpu_check =
        "# atol=0.0001\n"
        "r = subscript(IN, kinds=[0, 1, 0], at_0=0, at_2=1)\n"
        "x = cast(r, dtype=\"float\")\n"
        "c = random.uniform(range=[0.5, 1.0])\n"
        "return preemphasis_filter(x, preemph_coeff=c, border=\"reflect\", device=@)",
};
const stk__op_def stk__op_preemphasis_filter = {
    .schema = &pe_schema, .run_sample = pe_run, .run_gpu = pe_run_gpu};

/* ---- nonsilent_region ---- */
enum { NS_CUTOFF, NS_REFERENCE, NS_RESET, NS_WINDOW, NS_COUNT_ };
static const stk_arg_schema ns_args[] = {
    [NS_CUTOFF] = {.name = "cutoff_db",
                   .type = STK_ARG_FLOAT,
                   .default_text = "-60.0",
                   .doc = "threshold (dB relative to reference_power): samples whose "
                          "moving mean power is below it are silent"},
    [NS_REFERENCE] = {.name = "reference_power",
                      .type = STK_ARG_FLOAT,
                      .flags = STK_ARGF_RANGE,
                      .default_text = "0.0",
                      .min = 0,
                      .max = 1e300,
                      .doc = "the power of 0 dB; 0: the maximum of the moving mean power"},
    [NS_RESET] = {.name = "reset_interval",
                  .type = STK_ARG_INT,
                  .default_text = "8192",
                  .doc = "samples after which the running sum is recomputed from scratch "
                         "(bounds rounding drift; -1: never)"},
    [NS_WINDOW] = {.name = "window_length",
                   .type = STK_ARG_INT,
                   .flags = STK_ARGF_RANGE,
                   .default_text = "2048",
                   .min = 1,
                   .max = 1 << 30,
                   .doc = "samples averaged by the moving mean of the power"},
};
STK__CHECK_ARGS(ns_args, NS_COUNT_);

static const stk_port_schema ns_in[] = {{"input", "a 1-D signal, any numeric type"}};
static const stk_port_schema ns_out[] = {
    {"begin, length",
     "int32 scalars: the first sample and the length of the non-silent region (0, 0 when "
     "all is silent)"}};

/* Moving mean of x^2 over the window ending at each sample (zeros before the start),
 * segment by segment as the GPU computes it (audio_signal_math.h). */
static void moving_mean_power(const double *x, int64_t n, int64_t window, int64_t reset,
                              double *mms) {
  int64_t seg = stk_mms_segment_len(n, reset);
  for (int64_t s = 0; s < n; s += seg) {
    double sum = stk_mms_start(NULL, x, s, window);
    for (int64_t i = s; i < n && i < s + seg; i++)
      mms[i] = stk_mms_step(NULL, x, i, s, window, &sum);
  }
}

static stk_status ns_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (in->ndim != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "needs a 1-D signal; got %d dimensions",
                      in->ndim);
  const double *x = NULL;
  STK_TRY(stk__audio_doubles(node, s, in, &x));
  int64_t n = in->shape[0], window = stk__arg_int(node, s, NS_WINDOW);
  double *mms = stk__scratch(s, sizeof(double) * (size_t)(n ? n : 1));
  if (!mms) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  moving_mean_power(x, n, window, stk__arg_int(node, s, NS_RESET), mms);
  double ref = stk__arg_float(node, s, NS_REFERENCE);
  if (ref == 0.0)
    for (int64_t i = 0; i < n; i++) ref = mms[i] > ref ? mms[i] : ref;
  double thr = ref * pow(10.0, stk__arg_float(node, s, NS_CUTOFF) / 10.0);
  int64_t first = -1, last = -1;
  for (int64_t i = 0; i < n; i++)
    if (mms[i] >= thr) {
      if (first < 0) first = i;
      last = i;
    }
  int64_t begin = 0, length = 0;
  if (first >= 0) {
    begin = first - window + 1 > 0 ? first - window + 1 : 0;
    length = last - begin + 1;
  }
  stk__tensor *ob, *ol;
  STK_TRY(stk__output(s, 0, STK_DTYPE_INT32, 0, NULL, NULL, &ob));
  STK_TRY(stk__output(s, 1, STK_DTYPE_INT32, 0, NULL, NULL, &ol));
  *(int32_t *)ob->data = (int32_t)begin;
  *(int32_t *)ol->data = (int32_t)length;
  return STK_OK;
}

/* GPU: float32 1-D signals; the per-sample threshold factor is computed here, as ns_run
 * does, so both backends compare against the same double. */
static stk_status ns_gpu_sample(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                size_t i, stk_gpu_nonsilent_sample *ns) {
  stk__sample *s = stk__gpu_sample(b, i);
  stk__tensor t;
  STK_TRY(stk__audio_gpu_sample(node, b, in, i, &t));
  if (t.ndim != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "needs a 1-D signal; got %d dimensions",
                      t.ndim);
  *ns = (stk_gpu_nonsilent_sample){.src = t.data,
                                   .n = t.shape[0],
                                   .window = stk__arg_int(node, s, NS_WINDOW),
                                   .reset = stk__arg_int(node, s, NS_RESET),
                                   .ref = stk__arg_float(node, s, NS_REFERENCE),
                                   .factor = pow(10.0, stk__arg_float(node, s, NS_CUTOFF) / 10.0)};
  return STK_OK;
}

static stk_status ns_run_gpu(stk__node *node, stk__gpu_batch *b) {
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_AUDIO_NONSILENT));
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *outs[2] = {NULL, NULL};
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_gpu_nonsilent_sample *ns = stk__calloc(n ? n : 1, sizeof *ns, "a nonsilent_region plan");
  stk_status st = ns ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) st = ns_gpu_sample(node, b, in, i, &ns[i]);
  int64_t no_shape = 0; /* scalars: ndim 0 */
  for (int o = 0; o < 2 && st == STK_OK; o++)
    st = stk__gpu_alloc_list(b, STK_DTYPE_INT32, 0, &no_shape, NULL, true, &outs[o]);
  if (st == STK_OK) {
    for (size_t i = 0; i < n; i++) {
      ns[i].begin = stk__audio_gpu_data(outs[0], i);
      ns[i].length = stk__audio_gpu_data(outs[1], i);
    }
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    st = stk__gpu_op_check(node,
                           stk_gpu_run_audio_nonsilent(g->api, g->ctx, (int)n, ns, NULL,
                                                       stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(ns);
  if (owned) stk_tensor_list_release(in);
  for (int o = 0; o < 2; o++) {
    if (st == STK_OK) {
      st = stk__gpu_output(b, o, outs[o]);
      outs[o] = NULL;
    }
    stk_tensor_list_release(outs[o]);
  }
  return st;
}

static const stk_op_schema ns_schema = {
    .name = "nonsilent_region",
    .doc =
        "Finds the non-silent part of a signal: where the moving mean of the power over "
        "window_length samples reaches cutoff_db relative to the reference; the region "
        "starts window_length - 1 samples before the first such sample, so it covers "
        "that window, and ends at the last one. Feed it to slice to trim silence. On the "
        "GPU: float32 input.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = ns_in,
    .num_outputs = 2,
    .outputs = ns_out,
    .num_args = NS_COUNT_,
    .args = ns_args,
    /* a photo row as the signal: the -2 dB cut-off and short windows put the region's
     * ends inside it; reset_interval 64 gives the GPU several segments per sample */
    .gpu_check =
        "r = subscript(IN, kinds=[0, 1, 0], at_0=0, at_2=1)\n"
        "x = cast(r, dtype=\"float\")\n"
        "b, l = nonsilent_region(x, cutoff_db=-2.0, window_length=12, reset_interval=64, "
        "device=@)\n"
        "return b, l",
};
const stk__op_def stk__op_nonsilent_region = {
    .schema = &ns_schema, .run_sample = ns_run, .run_gpu = ns_run_gpu};

/* ---- audio_resample ---- */
enum { AR_IN_RATE, AR_OUT_RATE, AR_SCALE, AR_OUT_LENGTH, AR_QUALITY, AR_DTYPE, AR_COUNT_ };
static const stk_arg_schema ar_args[] = {
    [AR_IN_RATE] = {.name = "in_rate",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .doc = "input sampling rate (with out_rate)"},
    [AR_OUT_RATE] = {.name = "out_rate",
                     .type = STK_ARG_FLOAT,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .doc = "output sampling rate (with in_rate)"},
    [AR_SCALE] = {.name = "scale",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "out_rate / in_rate, instead of the two rates"},
    [AR_OUT_LENGTH] = {.name = "out_length",
                       .type = STK_ARG_INT,
                       .flags = STK_ARGF_PER_SAMPLE,
                       .doc = "the output's length in samples, instead of rates or scale"},
    [AR_QUALITY] = {.name = "quality",
                    .type = STK_ARG_FLOAT,
                    .flags = STK_ARGF_RANGE,
                    .default_text = "50.0",
                    .min = 0,
                    .max = 100,
                    .doc = "0..100: the windowed sinc's zero crossings on each side grow "
                           "from 3 to 64 (16 at 50)"},
    [AR_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .default_text = "\"\"",
                  .choices = "|" AUDIO_TYPES,
                  .doc = "output type (integers rounded and saturated); \"\": the input's"},
};
STK__CHECK_ARGS(ar_args, AR_COUNT_);

static const stk_port_schema ar_in[] = {
    {"input", "audio: [time] or [time, channels], any numeric type"}};
static const stk_port_schema ar_out[] = {{"output", "the resampled audio, same layout"}};

static stk_status ar_init(stk__node *node) {
  bool rates = stk__arg_given(node, AR_IN_RATE) || stk__arg_given(node, AR_OUT_RATE);
  bool both = stk__arg_given(node, AR_IN_RATE) && stk__arg_given(node, AR_OUT_RATE);
  int ways = rates + stk__arg_given(node, AR_SCALE) + stk__arg_given(node, AR_OUT_LENGTH);
  if (ways != 1 || (rates && !both))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give exactly one of: in_rate and out_rate, scale, out_length");
  return STK_OK;
}

/* The rates (in, out) of this sample, from whichever argument was given. */
static stk_status ar_rates(stk__node *node, stk__sample *s, int64_t n, double *in_rate,
                           double *out_rate, int64_t *out_n) {
  *in_rate = 1.0;
  if (stk__arg_given(node, AR_SCALE)) {
    *out_rate = stk__arg_float(node, s, AR_SCALE);
  } else if (stk__arg_given(node, AR_OUT_LENGTH)) {
    int64_t len = stk__arg_int(node, s, AR_OUT_LENGTH);
    if (len < 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "out_length = %lld is negative",
                        (long long)len);
    *in_rate = (double)(n ? n : 1), *out_rate = (double)(len ? len : 1), *out_n = len;
    return STK_OK;
  } else {
    *in_rate = stk__arg_float(node, s, AR_IN_RATE);
    *out_rate = stk__arg_float(node, s, AR_OUT_RATE);
  }
  if (!(*in_rate > 0.0) || !(*out_rate > 0.0) || *out_rate / *in_rate > 1e4)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the rates must be positive with out/in <= 10^4; got in_rate %g, "
                      "out_rate %g",
                      *in_rate, *out_rate);
  *out_n = stk__audio_resample_length(n, *in_rate, *out_rate);
  return STK_OK;
}

static stk_status ar_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (in->ndim != 1 && in->ndim != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "needs [time] or [time, channels]; got %d dimensions", in->ndim);
  int64_t n = in->shape[0], ch = in->ndim == 2 ? in->shape[1] : 1, out_n = 0;
  double ri = 1.0, ro = 1.0;
  STK_TRY(ar_rates(node, s, n, &ri, &ro, &out_n));
  if (out_n * ch > stk__node_max_pixels(node) && stk__node_max_pixels(node) > 0)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "%lld output samples exceed the element limit",
                      (long long)(out_n * ch));
  const double *x = NULL;
  STK_TRY(stk__audio_doubles(node, s, in, &x));
  double *y = stk__scratch(s, sizeof(double) * (size_t)(out_n * ch + 1));
  if (!y) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  if (!stk__audio_resample(x, n, (int)ch, ri, ro, stk__arg_float(node, s, AR_QUALITY), y, out_n))
    return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for the resampling kernel");
  const char *dts = stk__arg_string(node, AR_DTYPE);
  stk_dtype dt = *dts ? stk__dtype_arg(dts) : in->dtype;
  int64_t shape[2] = {out_n, ch};
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, in->ndim, shape, in->layout, &out));
  stk__convert(out->data, dt, y, STK_DTYPE_FLOAT64, (size_t)(out_n * ch));
  return STK_OK;
}

/* GPU: float32 in and out; the rates per sample as ar_run reads them. */
static stk_status ar_gpu_sample(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                size_t i, stk_gpu_resample_audio_sample *rs, int64_t *shape) {
  stk__sample *s = stk__gpu_sample(b, i);
  stk__tensor t;
  STK_TRY(stk__audio_gpu_sample(node, b, in, i, &t));
  if (t.ndim != 1 && t.ndim != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "needs [time] or [time, channels]; got %d dimensions", t.ndim);
  int64_t n = t.shape[0], ch = t.ndim == 2 ? t.shape[1] : 1, out_n = 0;
  double ri = 1.0, ro = 1.0;
  STK_TRY(ar_rates(node, s, n, &ri, &ro, &out_n));
  if (out_n * ch > stk__node_max_pixels(node) && stk__node_max_pixels(node) > 0)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "%lld output samples exceed the element limit",
                      (long long)(out_n * ch));
  *rs = (stk_gpu_resample_audio_sample){t.data, NULL, n, out_n, ch, ri, ro};
  shape[0] = out_n;
  if (t.ndim == 2) shape[1] = ch;
  return STK_OK;
}

/* The launch of a planned batch: the windowed sinc's table, the kernel. */
static stk_status ar_launch(stk__node *node, stk__gpu_batch *b, size_t n,
                            stk_gpu_resample_audio_sample *rs, const stk_tensor_list *out) {
  for (size_t i = 0; i < n; i++) rs[i].dst = stk__audio_gpu_data(out, i);
  stk_gpu_resample_audio_args args = {stk__audio_lobes(stk__arg_float(node, NULL, AR_QUALITY)),
                                      NULL};
  float *table = stk__audio_resample_table(args.lobes);
  if (!table) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, NULL, "no memory for the kernel");
  args.table = table;
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  stk_status st = stk__gpu_op_check(node,
                                    stk_gpu_run_audio_resample(g->api, g->ctx, (int)n, rs, &args,
                                                               stk__gpu_stream(b), err, sizeof err),
                                    err);
  free(table);
  return st;
}

static stk_status ar_run_gpu(stk__node *node, stk__gpu_batch *b) {
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_AUDIO_RESAMPLE));
  const char *dts = stk__arg_string(node, AR_DTYPE);
  if (*dts && stk__dtype_arg(dts) != STK_DTYPE_FLOAT32)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "the GPU backend writes float32 only; got dtype=\"%s\"", dts);
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_gpu_resample_audio_sample *rs = stk__calloc(n ? n : 1, sizeof *rs, "a resampling plan");
  int64_t *shapes = stk__calloc((n ? n : 1) * 2, sizeof(int64_t), "shapes");
  stk_status st = rs && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++)
    st = ar_gpu_sample(node, b, in, i, &rs[i], shapes + i * (size_t)ndim);
  if (st == STK_OK) st = stk__audio_gpu_output(b, in, ndim, shapes, &out);
  if (st == STK_OK) st = ar_launch(node, b, n, rs, out);
  free(rs);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema ar_schema = {
    .name = "audio_resample",
    .doc =
        "Resamples audio with a Hann-windowed sinc low-pass filter (cut-off at the lower "
        "Nyquist frequency); output sample j is the band-limited signal at input "
        "position j * in_rate / out_rate, and the output has ceil(n * out_rate / "
        "in_rate) samples. On the GPU: float32 input and output.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = ar_in,
    .num_outputs = 1,
    .outputs = ar_out,
    .num_args = AR_COUNT_,
    .args = ar_args,
    /* [time, channels] photo rows, a per-sample scale either side of 1 (down- and
     * up-sampling); the GPU may fuse multiply-adds the CPU does not */
    .gpu_check =
        "# atol=0.001\n"
        "r = subscript(IN, kinds=[0, 1, 1], at_0=0)\n"
        "x = cast(r, dtype=\"float\")\n"
        "s = random.uniform(range=[0.4, 1.7])\n"
        "return audio_resample(x, scale=s, quality=30.0, device=@)",
};
const stk__op_def stk__op_audio_resample = {
    .schema = &ar_schema, .init = ar_init, .run_sample = ar_run, .run_gpu = ar_run_gpu};
