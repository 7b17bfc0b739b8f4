/*
 * Noise operators with DALI's definitions: noise.gaussian, noise.salt_and_pepper,
 * noise.shot.
 *
 * Randomness is counter-based (src/shared/noise_common.h): every element's draws come from
 * Philox4x32-10 under the node's key and the sample's ordinal (stk__sample_rng) with a
 * counter derived from the element index, so results depend on neither threads,
 * prefetching nor batch size, and the GPU kernels (run_gpu here, src/cuda/filter.cu)
 * compute the same bytes with the same inline functions.
 *
 * Inputs: any tensor of uint8, int16, int32, float16 or float32; the output has the
 * input's shape, type and layout. Integer outputs are rounded half away from zero and
 * saturated.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/api_filter.h"
#include "../shared/noise_common.h"
#include "color.h"
#include "gpu_util.h"

static const stk_dtype noise_types[] = {STK_DTYPE_UINT8, STK_DTYPE_INT16, STK_DTYPE_INT32,
                                        STK_DTYPE_FLOAT16, STK_DTYPE_FLOAT32};
static const stk_port_schema noise_in[] = {{"input", "data to corrupt (images: HWC)"}};
static const stk_port_schema noise_out[] = {{"output", "the noisy data, same shape and type"}};

/* Checks the input type and allocates an output like the input. */
static stk_status open_noise(stk__node *node, stk__sample *s, const stk__tensor **in,
                             stk__tensor **out, size_t *count) {
  const stk__tensor *t = stk__input(s, 0);
  bool ok = false;
  for (int i = 0; i < 5; i++) ok |= t->dtype == noise_types[i];
  if (!ok)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "input type %s is not supported (uint8, "
                      "int16, int32, float16 or float32)",
                      stk_dtype_name(t->dtype) ? stk_dtype_name(t->dtype) : "?");
  size_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
  *in = t;
  *count = n;
  return stk__output(s, 0, t->dtype, t->ndim, t->shape, t->layout, out);
}

/* The sample's counter-based stream: the key and ordinal of stk__sample_rng. */
static stk_noise_stream sample_stream(const stk__node *node, const stk__sample *s) {
  stk__philox g;
  stk__sample_rng(node, s, &g);
  stk_noise_stream st = {{g.key[0], g.key[1]}, {g.counter[2], g.counter[3]}};
  return st;
}

/* ---- the GPU path: one API call per batch with the CPU's per-sample values ---- */

typedef stk_status (*noise_params_fn)(stk__node *node, stk__sample *s, const stk__tensor *t,
                                      stk_gpu_noise_sample *ns);

static stk_status noise_run_gpu(stk__node *node, stk__gpu_batch *b, int kind,
                                noise_params_fn params) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  int ndim = stk_tensor_list_ndim(in);
  stk_dtype dt = stk_tensor_list_dtype(in);
  stk_gpu_noise_sample *ns = stk__calloc(n ? n : 1, sizeof *ns, "a noise plan");
  int64_t *shapes = stk__calloc((n ? n : 1) * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "shapes");
  stk_status st = ns && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  bool ok = false;
  for (int i = 0; i < 5; i++) ok |= dt == noise_types[i];
  if (st == STK_OK && !ok)
    st = STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                    "input type %s is not supported (uint8, "
                    "int16, int32, float16 or float32)",
                    stk_dtype_name(dt) ? stk_dtype_name(dt) : "?");
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    stk__tensor t = {d.data, d.ndim, {0}, d.dtype, {0}};
    memcpy(t.shape, d.shape, sizeof t.shape);
    memcpy(t.layout, d.layout, sizeof t.layout);
    stk__sample *s = stk__gpu_sample(b, i);
    int64_t count = 1;
    for (int k = 0; k < d.ndim; k++) count *= d.shape[k];
    ns[i].src = d.data, ns[i].count = count, ns[i].group = 1;
    stk_noise_stream rs = sample_stream(node, s);
    ns[i].key[0] = rs.key[0], ns[i].key[1] = rs.key[1];
    ns[i].ordinal[0] = rs.ord[0], ns[i].ordinal[1] = rs.ord[1];
    st = params(node, s, &t, &ns[i]);
    memcpy(shapes + i * (size_t)ndim, d.shape, sizeof(int64_t) * (size_t)ndim);
  }
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, dt, ndim, shapes, stk_tensor_list_layout(in),
                             stk__gpu_shapes_equal(shapes, n, ndim), &out);
  if (st == STK_OK) {
    stk__gpu *g = stk__gpu_device(b);
    size_t m = 0; /* samples with work: shot noise with factor 0 is a copy */
    for (size_t i = 0; i < n && st == STK_OK; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      ns[i].dst = d.data;
      if (kind == STK_GPU_NOISE_SHOT && ns[i].p[0] == 0.0) {
        char err[STK_GPU_ERRLEN] = "";
        size_t bytes = (size_t)ns[i].count * stk_dtype_size(dt);
        st = stk__gpu_op_check(node,
                               g->api->memcpy_async(g->ctx, d.data, ns[i].src, bytes,
                                                    stk__gpu_stream(b), err, sizeof err),
                               err);
        continue;
      }
      ns[m++] = ns[i];
    }
    char err[STK_GPU_ERRLEN] = "";
    if (st == STK_OK && m > 0)
      st = stk__gpu_op_check(
          node,
          stk_gpu_run_noise(g->api, g->ctx, (int)m, ns, &(stk_gpu_noise_args){kind, dt},
                            stk__gpu_stream(b), err, sizeof err),
          err);
  }
  free(ns);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

/* ---- noise.gaussian ---- */

enum { G_MEAN, G_STDDEV, G_SEED, GAUSSIAN_ARGS_COUNT_ };
static const stk_arg_schema gaussian_args[] = {
    [G_MEAN] = {.name = "mean",
                .type = STK_ARG_FLOAT,
                .flags = STK_ARGF_PER_SAMPLE,
                .default_text = "0.0",
                .doc = "mean of the noise"},
    [G_STDDEV] =
        {.name = "stddev",
         .type = STK_ARG_FLOAT,
         .flags = STK_ARGF_PER_SAMPLE,
         .default_text = "1.0",
         .doc =
             "standard deviation of the noise (>= 0), in the data's units (e.g. 0..255 for uint8)"},
    [G_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(gaussian_args, GAUSSIAN_ARGS_COUNT_);

static stk_status gaussian_args_of(stk__node *node, stk__sample *s, double *mean, double *sd) {
  STK_TRY(stk__float_arg_in(node, s, G_MEAN, "mean", -DBL_MAX, DBL_MAX, mean));
  return stk__float_arg_in(node, s, G_STDDEV, "stddev", 0.0, DBL_MAX, sd);
}

/* The CPU loops are instantiated per element type (a constant dt folds the load and
 * store switches away): FOR_NOISE_TYPES(fn, args) calls fn(args..., dt) with dt constant. */
#define NOISE_INLINE static inline __attribute__((always_inline))
#define FOR_NOISE_TYPES(dt, call) \
  switch (dt) {                   \
    case STK_DTYPE_UINT8:         \
      call(STK_DTYPE_UINT8);      \
      break;                      \
    case STK_DTYPE_INT16:         \
      call(STK_DTYPE_INT16);      \
      break;                      \
    case STK_DTYPE_INT32:         \
      call(STK_DTYPE_INT32);      \
      break;                      \
    case STK_DTYPE_FLOAT16:       \
      call(STK_DTYPE_FLOAT16);    \
      break;                      \
    default:                      \
      call(STK_DTYPE_FLOAT32);    \
      break;                      \
  }

/* Elements of a sample, four Philox blocks (16 elements) at a time. */
NOISE_INLINE void gaussian_all(const stk_noise_stream *st, const void *in, void *out, int64_t n,
                               double mean, double sd, int dt) {
  int64_t blocks = (n + 3) / 4;
  for (int64_t q = 0; q < blocks; q += 4) {
    uint32_t w[4][4];
    stk_noise_blocks4(st, (uint64_t)q, w);
    for (int k = 0; k < 4 && q + k < blocks; k++)
      stk_noise_gaussian_words(w[k], in, out, dt, n, q + k, mean, sd);
  }
}

static stk_status gaussian_run(stk__node *node, stk__sample *s) {
  double mean, sd;
  STK_TRY(gaussian_args_of(node, s, &mean, &sd));
  const stk__tensor *in;
  stk__tensor *out;
  size_t n;
  STK_TRY(open_noise(node, s, &in, &out, &n));
  stk_noise_stream st = sample_stream(node, s);
#define GAUSSIAN_ALL(DT) gaussian_all(&st, in->data, out->data, (int64_t)n, mean, sd, DT)
  FOR_NOISE_TYPES(in->dtype, GAUSSIAN_ALL)
#undef GAUSSIAN_ALL
  return STK_OK;
}

static stk_status gaussian_gpu_params(stk__node *node, stk__sample *s, const stk__tensor *t,
                                      stk_gpu_noise_sample *ns) {
  return gaussian_args_of(node, s, &ns->p[0], &ns->p[1]);
}

static stk_status gaussian_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return noise_run_gpu(node, b, STK_GPU_NOISE_GAUSSIAN, gaussian_gpu_params);
}

static const stk_op_schema gaussian_schema = {
    .name = "noise.gaussian",
    .doc =
        "Adds normally distributed noise to every element (DALI's noise.gaussian): out = in + "
        "N(mean, stddev), rounded and saturated for integer types. Elements 4q .. 4q + 3 take "
        "two Box-Muller pairs from Philox block q (counter-based; the GPU gives the same bytes).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = noise_in,
    .num_outputs = 1,
    .outputs = noise_out,
    .num_args = sizeof gaussian_args / sizeof gaussian_args[0],
    .args = gaussian_args,
    .gpu_check =
        "sd = random.uniform(range=[0.0, 40.0])\n"
        "return noise.gaussian(IN, stddev=sd, seed=7, device=@)",
};
const stk__op_def stk__op_noise_gaussian = {
    .schema = &gaussian_schema,
    .run_sample = gaussian_run,
    .run_gpu = gaussian_run_gpu,
};

/* ---- noise.salt_and_pepper ---- */

enum { SP_PROB, SP_SVP, SP_PER_CHANNEL, SP_SALT, SP_PEPPER, SP_SEED, SP_ARGS_COUNT_ };
static const stk_arg_schema sp_args[] = {
    [SP_PROB] = {.name = "prob",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                 .default_text = "0.05",
                 .max = 1,
                 .doc = "probability that a value (or pixel) is replaced by salt or pepper"},
    [SP_SVP] = {.name = "salt_vs_pepper",
                .type = STK_ARG_FLOAT,
                .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                .default_text = "0.5",
                .max = 1,
                .doc = "share of salt among the replaced values"},
    [SP_PER_CHANNEL] =
        {.name = "per_channel",
         .type = STK_ARG_BOOL,
         .default_text = "false",
         .doc =
             "draw for every channel independently; otherwise one draw per pixel replaces all its "
             "channels (the channels are the last axis when the layout ends in C or is empty)"},
    [SP_SALT] = {.name = "salt_val",
                 .type = STK_ARG_FLOAT,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "value of salt; default: the type's maximum (1.0 for floats)"},
    [SP_PEPPER] = {.name = "pepper_val",
                   .type = STK_ARG_FLOAT,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "value of pepper; default: the type's minimum (-1.0 for floats)"},
    [SP_SEED] = {.name = "seed",
                 .type = STK_ARG_INT,
                 .default_text = "-1",
                 .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(sp_args, SP_ARGS_COUNT_);

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
    case STK_DTYPE_INT16:
      return -32768.0;
    case STK_DTYPE_INT32:
      return -2147483648.0;
    case STK_DTYPE_UINT8:
      return 0.0;
    default:
      return -1.0;
  }
}

typedef struct {
  double salt_below, noise_below; /* thresholds on u = word / 2^32 */
  double salt, pepper;
  int64_t group; /* elements sharing one draw */
} sp_params;

static stk_status sp_args_of(stk__node *node, stk__sample *s, const stk__tensor *in, sp_params *k) {
  double prob, svp;
  STK_TRY(stk__float_arg_in(node, s, SP_PROB, "prob", 0.0, 1.0, &prob));
  STK_TRY(stk__float_arg_in(node, s, SP_SVP, "salt_vs_pepper", 0.0, 1.0, &svp));
  k->noise_below = prob, k->salt_below = prob * svp;
  k->salt = stk__dtype_full_range(in->dtype);
  k->pepper = type_min(in->dtype);
  if (stk__arg_given(node, SP_SALT))
    STK_TRY(stk__float_arg_in(node, s, SP_SALT, "salt_val", -DBL_MAX, DBL_MAX, &k->salt));
  if (stk__arg_given(node, SP_PEPPER))
    STK_TRY(stk__float_arg_in(node, s, SP_PEPPER, "pepper_val", -DBL_MAX, DBL_MAX, &k->pepper));
  k->group = stk__arg_bool(node, s, SP_PER_CHANNEL) ? 1 : (int64_t)pixel_channels(in);
  return STK_OK;
}

NOISE_INLINE void sp_all(const stk_noise_stream *st, const void *in, void *out, int64_t npix,
                         const sp_params *k, int dt) {
  int64_t blocks = (npix + 3) / 4;
  for (int64_t q = 0; q < blocks; q += 4) {
    uint32_t w[4][4];
    stk_noise_blocks4(st, (uint64_t)q, w);
    for (int j = 0; j < 4 && q + j < blocks; j++)
      stk_noise_sp_words(w[j], in, out, dt, npix, k->group, q + j, k->salt_below, k->noise_below,
                         k->salt, k->pepper);
  }
}

static stk_status sp_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in;
  stk__tensor *out;
  size_t n;
  STK_TRY(open_noise(node, s, &in, &out, &n));
  sp_params k;
  STK_TRY(sp_args_of(node, s, in, &k));
  if (k.group == 0 || n == 0) return STK_OK;
  stk_noise_stream st = sample_stream(node, s);
#define SP_ALL(DT) sp_all(&st, in->data, out->data, (int64_t)n / k.group, &k, DT)
  FOR_NOISE_TYPES(in->dtype, SP_ALL)
#undef SP_ALL
  return STK_OK;
}

static stk_status sp_gpu_params(stk__node *node, stk__sample *s, const stk__tensor *t,
                                stk_gpu_noise_sample *ns) {
  sp_params k;
  STK_TRY(sp_args_of(node, s, t, &k));
  ns->group = k.group > 0 ? k.group : 1;
  if (k.group == 0) ns->count = 0; /* no pixels */
  ns->p[0] = k.salt_below, ns->p[1] = k.noise_below, ns->p[2] = k.salt, ns->p[3] = k.pepper;
  return STK_OK;
}

static stk_status sp_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return noise_run_gpu(node, b, STK_GPU_NOISE_SALT_AND_PEPPER, sp_gpu_params);
}

static const stk_op_schema sp_schema = {
    .name = "noise.salt_and_pepper",
    .doc =
        "Replaces values by salt (with probability prob * salt_vs_pepper) or pepper (prob * (1 - "
        "salt_vs_pepper)), per pixel or per channel (DALI's noise.salt_and_pepper). One Philox "
        "word u per pixel (per value with per_channel): salt when u < prob * salt_vs_pepper, "
        "pepper when u < prob.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = noise_in,
    .num_outputs = 1,
    .outputs = noise_out,
    .num_args = sizeof sp_args / sizeof sp_args[0],
    .args = sp_args,
    .gpu_check =
        "p = random.uniform(range=[0.0, 0.5])\n"
        "return noise.salt_and_pepper(IN, prob=p, seed=3, device=@)",
};
const stk__op_def stk__op_noise_salt_and_pepper = {
    .schema = &sp_schema,
    .run_sample = sp_run,
    .run_gpu = sp_run_gpu,
};

/* ---- noise.shot ---- */

enum { SH_FACTOR, SH_SEED, SHOT_ARGS_COUNT_ };
static const stk_arg_schema shot_args[] = {
    [SH_FACTOR] = {.name = "factor",
                   .type = STK_ARG_FLOAT,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .default_text = "20.0",
                   .doc = "value of one event (>= 0); larger is noisier; 0 keeps the data"},
    [SH_SEED] = {.name = "seed",
                 .type = STK_ARG_INT,
                 .default_text = "-1",
                 .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(shot_args, SHOT_ARGS_COUNT_);

/* uint8 inputs: per input value, the sampler's constants and the inversion's first
 * INV_TERMS terms (probability and distribution, by stk_noise_inversion_from's own
 * recurrence), so an element costs a short search instead of a loop of divisions. */
#define INV_TERMS 64
typedef struct {
  stk_noise_poisson_consts c;
  double cdf[INV_TERMS];
  double p_last; /* the term probability at INV_TERMS - 1 */
} shot_u8_entry;

static void shot_u8_setup(shot_u8_entry *t, double lambda) {
  stk_noise_poisson_setup(&t->c, lambda);
  if (!(lambda < 10.0)) return;
  double p = t->c.exp_neg, cdf = p;
  t->cdf[0] = cdf;
  for (int k = 1; k < INV_TERMS; k++) {
    p = p * (lambda / (double)k);
    cdf = cdf + p;
    t->cdf[k] = cdf;
  }
  t->p_last = p;
}

/* Poisson for element e with uniform u (used below a mean of 10). */
static double shot_u8_poisson(const stk_noise_stream *st, uint64_t e, double u,
                              const shot_u8_entry *t) {
  if (!(t->c.lambda < 10.0)) return stk_noise_poisson(st, e, &t->c);
  for (int k = 0; k < INV_TERMS; k++)
    if (!(u > t->cdf[k])) return (double)k;
  return (double)stk_noise_inversion_from(u, t->c.lambda, INV_TERMS - 1, t->p_last,
                                          t->cdf[INV_TERMS - 1]);
}

/* Eight elements at a time: their inversion uniforms are the words of four consecutive
 * Philox blocks (stk_noise_inversion_u's layout), drawn together. */
static void shot_u8(const stk_noise_stream *st, const uint8_t *in, uint8_t *out, int64_t n,
                    double factor, shot_u8_entry *tab) {
  for (int64_t e0 = 0; e0 < n; e0 += 8) {
    uint32_t w[4][4];
    stk_noise_blocks4(st, (uint64_t)e0 >> 1, w);
    for (int j = 0; j < 8 && e0 + j < n; j++) {
      int64_t e = e0 + j;
      int v = in[e];
      double lambda = (double)v / factor;
      if (!(lambda > 0.0)) {
        out[e] = 0;
        continue;
      }
      if (tab[v].c.lambda != lambda) shot_u8_setup(&tab[v], lambda);
      const uint32_t *b = w[j >> 1];
      int o = (j & 1) * 2;
      double k = shot_u8_poisson(st, (uint64_t)e, stk_noise_u53(b[o], b[o + 1]), &tab[v]);
      stk_noise_store(out, STK_DTYPE_UINT8, e, STK_DMUL(k, factor));
    }
  }
}

/* Other types: the sampler's constants in a small direct-mapped cache keyed by the mean
 * (images repeat values; the constants are the same whichever entry holds them). */
#define SHOT_CACHE 256
NOISE_INLINE void shot_all(const stk_noise_stream *st, const void *in, void *out, int64_t n,
                           double factor, stk_noise_poisson_consts *cache, int dt) {
  for (int64_t e = 0; e < n; e++) {
    double x = stk_noise_load(in, dt, e), lambda = x / factor;
    if (!(lambda > 0.0)) {
      stk_noise_store(out, dt, e, 0.0);
      continue;
    }
    uint64_t bits;
    memcpy(&bits, &lambda, sizeof bits);
    stk_noise_poisson_consts *c = &cache[(bits * 0x9E3779B97F4A7C15ull) >> 56];
    if (c->lambda != lambda) stk_noise_poisson_setup(c, lambda);
    stk_noise_store(out, dt, e, STK_DMUL(stk_noise_poisson(st, (uint64_t)e, c), factor));
  }
}

static stk_status shot_run(stk__node *node, stk__sample *s) {
  double factor;
  STK_TRY(stk__float_arg_in(node, s, SH_FACTOR, "factor", 0.0, DBL_MAX, &factor));
  const stk__tensor *in;
  stk__tensor *out;
  size_t n;
  STK_TRY(open_noise(node, s, &in, &out, &n));
  if (factor == 0.0) {
    memcpy(out->data, in->data, n * stk_dtype_size(in->dtype));
    return STK_OK;
  }
  stk_noise_stream st = sample_stream(node, s);
  if (in->dtype == STK_DTYPE_UINT8) {
    shot_u8_entry *tab = stk__scratch(s, 256 * sizeof *tab);
    if (!tab) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
    for (int i = 0; i < 256; i++) tab[i].c.lambda = -1.0;
    shot_u8(&st, in->data, out->data, (int64_t)n, factor, tab);
    return STK_OK;
  }
  stk_noise_poisson_consts *cache = stk__scratch(s, SHOT_CACHE * sizeof *cache);
  if (!cache) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  for (int i = 0; i < SHOT_CACHE; i++) cache[i].lambda = -1.0;
#define SHOT_ALL(DT) shot_all(&st, in->data, out->data, (int64_t)n, factor, cache, DT)
  FOR_NOISE_TYPES(in->dtype, SHOT_ALL)
#undef SHOT_ALL
  return STK_OK;
}

static stk_status shot_gpu_params(stk__node *node, stk__sample *s, const stk__tensor *t,
                                  stk_gpu_noise_sample *ns) {
  return stk__float_arg_in(node, s, SH_FACTOR, "factor", 0.0, DBL_MAX, &ns->p[0]);
}

static stk_status shot_run_gpu(stk__node *node, stk__gpu_batch *b) {
  return noise_run_gpu(node, b, STK_GPU_NOISE_SHOT, shot_gpu_params);
}

static const stk_op_schema shot_schema = {
    .name = "noise.shot",
    .doc =
        "Shot (Poisson) noise (DALI's noise.shot): out = Poisson(max(0, in) / factor) * factor, "
        "rounded and saturated for integer types; factor 0 keeps the data. Exact Poisson "
        "sampling (inversion below a mean of 10, Hörmann's PTRS above), counter-based per element.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = noise_in,
    .num_outputs = 1,
    .outputs = noise_out,
    .num_args = sizeof shot_args / sizeof shot_args[0],
    .args = shot_args,
    .gpu_check =
        "f = random.uniform(values=[0.0, 0.5, 3.0, 20.0])\n"
        "return noise.shot(IN, factor=f, seed=11, device=@)",
};
const stk__op_def stk__op_noise_shot = {
    .schema = &shot_schema,
    .run_sample = shot_run,
    .run_gpu = shot_run_gpu,
};
