/*
 * Noise operators with DALI's definitions: noise.gaussian, noise.salt_and_pepper,
 * noise.shot.
 *
 * Randomness comes from the node's Philox stream for the sample (stk__sample_rng), so
 * results do not depend on threads, prefetching or batch size. The draws are laid out so
 * that any element can be computed on its own (what a GPU kernel needs to give the same
 * bytes): gaussian and salt_and_pepper consume exactly one 32-bit word per element (per
 * pixel for salt_and_pepper without per_channel), words in stream order, so element i
 * reads word i % 4 of Philox block i / 4; shot noise, whose Poisson sampler rejects a
 * variable number of times, gives element i its own sub-stream starting at block i * 2^16.
 *
 * Inputs: any tensor of uint8, int16, int32, float16 or float32; the output has the
 * input's shape, type and layout. Integer outputs are rounded half away from zero and
 * saturated.
 */
#include <float.h>
#include <string.h>

#include "color.h"

static const stk_dtype noise_types[] = {STK_DTYPE_UINT8, STK_DTYPE_INT16, STK_DTYPE_INT32,
                                        STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT32};
static const stk_port_schema noise_in[] = {{"input", "data to corrupt (images: HWC)"}};
static const stk_port_schema noise_out[] = {{"output", "the noisy data, same shape and type"}};

#define TWO_PI 6.283185307179586476925
#define INV_2_32 (1.0 / 4294967296.0)

/* Checks the input type and allocates an output like the input. */
static stk_status open_noise(stk__node *node, stk__sample *s, const stk__tensor **in,
                             stk__tensor **out, size_t *count) {
  const stk__tensor *t = stk__input(s, 0);
  bool ok = false;
  for (int i = 0; i < 5; i++) ok |= t->dtype == noise_types[i];
  if (!ok)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "input type %s is not supported (uint8, "
                      "int16, int32, float16 or float32)",
                      stk_dtype_name(t->dtype) ? stk_dtype_name(t->dtype) : "?");
  size_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
  *in = t;
  *count = n;
  return stk__output(s, 0, t->dtype, t->ndim, t->shape, t->layout, out);
}

/* Processes the data in chunks of doubles: convert in, `fn` on the chunk, convert out. */
#define CHUNK 4096
typedef void (*chunk_fn)(double *v, size_t first, size_t n, void *ctx);

static stk_status map_chunks(stk__node *node, stk__sample *s, const stk__tensor *in,
                             stk__tensor *out, size_t count, chunk_fn fn, void *ctx) {
  double *buf = stk__scratch(s, CHUNK * sizeof(double));
  if (!buf) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  size_t es = stk_dtype_size(in->dtype);
  for (size_t i = 0; i < count; i += CHUNK) {
    size_t n = count - i < CHUNK ? count - i : CHUNK;
    stk__to_f64(buf, (const char *)in->data + i * es, in->dtype, n);
    fn(buf, i, n, ctx);
    stk__from_f64((char *)out->data + i * es, out->dtype, buf, n);
  }
  return STK_OK;
}

/* ---- noise.gaussian ---- */

enum { G_MEAN, G_STDDEV, G_SEED };
static const stk_arg_schema gaussian_args[] = {
    {"mean", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, "0.0", 0, 0, NULL, "mean of the noise"},
    {"stddev", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, "1.0", 0, 0, NULL,
     "standard deviation of the noise (>= 0), in the data's units (e.g. 0..255 for uint8)"},
    {"seed", STK_ARG_INT, 0, "-1", 0, 0, NULL, "this operator's seed (-1: derived)"},
};

typedef struct {
  stk__philox g;
  double mean, sd;
} gaussian_ctx;

/* Box-Muller on word pairs: words (2k, 2k + 1) give elements 2k and 2k + 1. The chunks
 * have even length, so pairs never straddle two chunks. The transcendental part is in
 * float32 (the noise needs no more), the sum with the data in float64. */
static void gaussian_chunk(double *v, size_t first, size_t n, void *ctx) {
  gaussian_ctx *k = ctx;
  for (size_t i = 0; i < n; i += 2) {
    uint32_t w1 = stk__philox_u32(&k->g), w2 = stk__philox_u32(&k->g);
    float u1 = (float)((double)w1 * INV_2_32 + INV_2_32); /* (0, 1] */
    float a = (float)TWO_PI * (float)((double)w2 * INV_2_32);
    float r = sqrtf(-2.0f * logf(u1));
    v[i] += k->mean + k->sd * (double)(r * cosf(a));
    if (i + 1 < n) v[i + 1] += k->mean + k->sd * (double)(r * sinf(a));
  }
}

static stk_status gaussian_run(stk__node *node, stk__sample *s) {
  gaussian_ctx k;
  STK_TRY(stk__float_arg_in(node, s, G_MEAN, "mean", -DBL_MAX, DBL_MAX, &k.mean));
  STK_TRY(stk__float_arg_in(node, s, G_STDDEV, "stddev", 0.0, DBL_MAX, &k.sd));
  const stk__tensor *in;
  stk__tensor *out;
  size_t n;
  STK_TRY(open_noise(node, s, &in, &out, &n));
  stk__sample_rng(node, s, &k.g);
  return map_chunks(node, s, in, out, n, gaussian_chunk, &k);
}

static const stk_op_schema gaussian_schema = {
    "noise.gaussian",
    "Adds normally distributed noise to every element (DALI's noise.gaussian): out = in + "
    "N(mean, stddev), rounded and saturated for integer types. Elements 2k and 2k + 1 take "
    "the cosine and sine halves of one Box-Muller draw from Philox words 2k and 2k + 1.",
    STK_DEVICE_CPU, STK_OPF_RANDOM, 1, 1, noise_in, 1, noise_out,
    sizeof gaussian_args / sizeof gaussian_args[0], gaussian_args};
const stk__op_def stk__op_noise_gaussian = {&gaussian_schema, NULL, NULL, NULL, gaussian_run,
                                            NULL, NULL};

/* ---- noise.salt_and_pepper ---- */

enum { SP_PROB, SP_SVP, SP_PER_CHANNEL, SP_SALT, SP_PEPPER, SP_SEED };
static const stk_arg_schema sp_args[] = {
    {"prob", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE, "0.05", 0, 1, NULL,
     "probability that a value (or pixel) is replaced by salt or pepper"},
    {"salt_vs_pepper", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE, "0.5", 0, 1, NULL,
     "share of salt among the replaced values"},
    {"per_channel", STK_ARG_BOOL, 0, "false", 0, 0, NULL,
     "draw for every channel independently; otherwise one draw per pixel replaces all its "
     "channels (the channels are the last axis when the layout ends in C or is empty)"},
    {"salt_val", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "value of salt; default: the type's maximum (1.0 for floats)"},
    {"pepper_val", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, NULL, 0, 0, NULL,
     "value of pepper; default: the type's minimum (-1.0 for floats)"},
    {"seed", STK_ARG_INT, 0, "-1", 0, 0, NULL, "this operator's seed (-1: derived)"},
};

/* The number of channels a pixel has: the last extent for "...C" or empty layouts of 3+
 * dimensions, else 1. */
static size_t pixel_channels(const stk__tensor *t) {
  size_t len = strlen(t->layout);
  if (t->ndim == 0) return 1;
  if (len ? t->layout[len - 1] == 'C' : t->ndim >= 3) return (size_t)t->shape[t->ndim - 1];
  return 1;
}

static double type_min(stk_dtype d) {
  switch (d) {
  case STK_DTYPE_INT16: return -32768.0;
  case STK_DTYPE_INT32: return -2147483648.0;
  case STK_DTYPE_UINT8: return 0.0;
  default: return -1.0;
  }
}

typedef struct {
  stk__philox g;
  double salt_below, noise_below; /* thresholds on u = word / 2^32 */
  double salt, pepper;
  size_t group; /* elements sharing one draw */
} sp_ctx;

static void sp_chunk(double *v, size_t first, size_t n, void *ctx) {
  sp_ctx *k = ctx;
  for (size_t i = 0; i < n; i += k->group) {
    double u = (double)stk__philox_u32(&k->g) * INV_2_32;
    if (u >= k->noise_below) continue;
    double x = u < k->salt_below ? k->salt : k->pepper;
    for (size_t c = 0; c < k->group; c++) v[i + c] = x;
  }
}

static stk_status sp_run(stk__node *node, stk__sample *s) {
  double prob, svp;
  STK_TRY(stk__float_arg_in(node, s, SP_PROB, "prob", 0.0, 1.0, &prob));
  STK_TRY(stk__float_arg_in(node, s, SP_SVP, "salt_vs_pepper", 0.0, 1.0, &svp));
  const stk__tensor *in;
  stk__tensor *out;
  size_t n;
  STK_TRY(open_noise(node, s, &in, &out, &n));
  sp_ctx k = {.noise_below = prob, .salt_below = prob * svp};
  k.salt = stk__dtype_full_range(in->dtype);
  k.pepper = type_min(in->dtype);
  if (stk__arg_given(node, SP_SALT))
    STK_TRY(stk__float_arg_in(node, s, SP_SALT, "salt_val", -DBL_MAX, DBL_MAX, &k.salt));
  if (stk__arg_given(node, SP_PEPPER))
    STK_TRY(stk__float_arg_in(node, s, SP_PEPPER, "pepper_val", -DBL_MAX, DBL_MAX, &k.pepper));
  k.group = stk__arg_bool(node, s, SP_PER_CHANNEL) ? 1 : pixel_channels(in);
  if (k.group == 0 || n == 0) return STK_OK;
  stk__sample_rng(node, s, &k.g);
  /* chunks hold whole pixels */
  size_t chunk = CHUNK - CHUNK % k.group;
  if (chunk == 0)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s, "pixels of %zu channels are too large",
                      k.group);
  double *buf = stk__scratch(s, chunk * sizeof(double));
  if (!buf) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  size_t es = stk_dtype_size(in->dtype);
  for (size_t i = 0; i < n; i += chunk) {
    size_t m = n - i < chunk ? n - i : chunk;
    stk__to_f64(buf, (const char *)in->data + i * es, in->dtype, m);
    sp_chunk(buf, i, m, &k);
    stk__from_f64((char *)out->data + i * es, out->dtype, buf, m);
  }
  return STK_OK;
}

static const stk_op_schema sp_schema = {
    "noise.salt_and_pepper",
    "Replaces values by salt (with probability prob * salt_vs_pepper) or pepper (prob * (1 - "
    "salt_vs_pepper)), per pixel or per channel (DALI's noise.salt_and_pepper). One Philox "
    "word u per pixel (per value with per_channel): salt when u < prob * salt_vs_pepper, "
    "pepper when u < prob.",
    STK_DEVICE_CPU, STK_OPF_RANDOM, 1, 1, noise_in, 1, noise_out,
    sizeof sp_args / sizeof sp_args[0], sp_args};
const stk__op_def stk__op_noise_salt_and_pepper = {&sp_schema, NULL, NULL, NULL, sp_run, NULL,
                                                   NULL};

/* ---- noise.shot ---- */

/* Constants of the Poisson sampler for one mean (images repeat values, so they are
 * cached for the last mean). */
typedef struct {
  double lambda;
  double exp_neg;                          /* inversion: exp(-lambda) */
  double slam, loglam, b, a, log_inv_alpha, vr; /* PTRS */
} poisson_consts;

static void poisson_setup(poisson_consts *c, double lambda) {
  c->lambda = lambda;
  c->exp_neg = exp(-lambda);
  c->slam = sqrt(lambda), c->loglam = log(lambda);
  c->b = 0.931 + 2.53 * c->slam, c->a = -0.059 + 0.02483 * c->b;
  c->log_inv_alpha = log(1.1239 + 1.1328 / (c->b - 3.4));
  c->vr = 0.9277 - 3.6224 / (c->b - 2.0);
}

/* Poisson(lambda > 0): inversion below 10, Hörmann's transformed rejection (PTRS, 1993)
 * above. Exact samplers both; the number of draws varies. */
static double poisson(stk__philox *g, const poisson_consts *c) {
  double lambda = c->lambda;
  if (lambda < 10.0) {
    double u = stk__philox_uniform(g), p = c->exp_neg, cdf = p;
    int k = 0;
    while (u > cdf && k < 1000) {
      k++;
      p *= lambda / k;
      cdf += p;
    }
    return k;
  }
  for (;;) {
    double u = stk__philox_uniform(g) - 0.5, v = stk__philox_uniform(g);
    double us = 0.5 - fabs(u);
    double k = floor((2.0 * c->a / us + c->b) * u + lambda + 0.43);
    if (us >= 0.07 && v <= c->vr) return k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (log(v) + c->log_inv_alpha - log(c->a / (us * us) + c->b) <=
        -lambda + k * c->loglam - lgamma(k + 1.0))
      return k;
  }
}

enum { SH_FACTOR, SH_SEED };
static const stk_arg_schema shot_args[] = {
    {"factor", STK_ARG_FLOAT, STK_ARGF_PER_SAMPLE, "20.0", 0, 0, NULL,
     "value of one event (>= 0); larger is noisier; 0 keeps the data"},
    {"seed", STK_ARG_INT, 0, "-1", 0, 0, NULL, "this operator's seed (-1: derived)"},
};

typedef struct {
  stk__philox g;
  double factor;
  poisson_consts pc;      /* the last mean's constants */
  poisson_consts *by_u8;  /* uint8 input: constants per input value, lazily */
} shot_ctx;

static void shot_chunk(double *v, size_t first, size_t n, void *ctx) {
  shot_ctx *k = ctx;
  for (size_t i = 0; i < n; i++) {
    double lambda = v[i] / k->factor;
    if (!(lambda > 0.0)) {
      v[i] = 0.0;
      continue;
    }
    uint64_t block = (uint64_t)(first + i) << 16; /* the element's own sub-stream */
    k->g.counter[0] = (uint32_t)block, k->g.counter[1] = (uint32_t)(block >> 32);
    k->g.available = 0;
    poisson_consts *c = &k->pc;
    if (k->by_u8) c = &k->by_u8[(int)v[i]];
    if (lambda != c->lambda) poisson_setup(c, lambda);
    v[i] = poisson(&k->g, c) * k->factor;
  }
}

static stk_status shot_run(stk__node *node, stk__sample *s) {
  shot_ctx k = {.pc.lambda = -1.0, .by_u8 = NULL};
  STK_TRY(stk__float_arg_in(node, s, SH_FACTOR, "factor", 0.0, DBL_MAX, &k.factor));
  const stk__tensor *in;
  stk__tensor *out;
  size_t n;
  STK_TRY(open_noise(node, s, &in, &out, &n));
  if (k.factor == 0.0) {
    memcpy(out->data, in->data, n * stk_dtype_size(in->dtype));
    return STK_OK;
  }
  if (in->dtype == STK_DTYPE_UINT8) {
    k.by_u8 = stk__scratch(s, 256 * sizeof(poisson_consts));
    if (!k.by_u8) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
    for (int i = 0; i < 256; i++) k.by_u8[i].lambda = -1.0;
  }
  stk__sample_rng(node, s, &k.g);
  return map_chunks(node, s, in, out, n, shot_chunk, &k);
}

static const stk_op_schema shot_schema = {
    "noise.shot",
    "Shot (Poisson) noise (DALI's noise.shot): out = Poisson(max(0, in) / factor) * factor, "
    "rounded and saturated for integer types; factor 0 keeps the data. Exact Poisson "
    "sampling (inversion below a mean of 10, Hörmann's PTRS above).",
    STK_DEVICE_CPU, STK_OPF_RANDOM, 1, 1, noise_in, 1, noise_out,
    sizeof shot_args / sizeof shot_args[0], shot_args};
const stk__op_def stk__op_noise_shot = {&shot_schema, NULL, NULL, NULL, shot_run, NULL, NULL};
