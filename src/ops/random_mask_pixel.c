/* segmentation.random_mask_pixel: the coordinates of a random pixel of a mask (DALI's
 * operator), e.g. the centre of a crop that should contain an object. With foreground,
 * the pixel is drawn uniformly from those equal to `value` (when given) or above
 * `threshold`; without, or when there is no such pixel, from the whole mask. Output:
 * int64 [ndim], one coordinate per axis of the input (channels included). */
#include <string.h>

#include "image_util.h"

enum { A_VALUE, A_FOREGROUND, A_THRESHOLD, A_SEED, A_COUNT_ };

static const stk_arg_schema rmp_args[] = {
    [A_VALUE] = {.name = "value",
                 .type = STK_ARG_INT,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "with foreground: draw among pixels equal to this (excludes threshold)"},
    [A_FOREGROUND] = {.name = "foreground",
                      .type = STK_ARG_INT,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .default_text = "0",
                      .doc = "non-zero: draw a foreground pixel; zero: any pixel"},
    [A_THRESHOLD] = {.name = "threshold",
                     .type = STK_ARG_FLOAT,
                     .flags = STK_ARGF_PER_SAMPLE,
                     .default_text = "0.0",
                     .doc = "with foreground and no value: pixels above this are foreground"},
    [A_SEED] = {.name = "seed",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "this operator's seed (-1: derived)"},
};
STK__CHECK_ARGS(rmp_args, A_COUNT_);

static const stk_port_schema rmp_in[] = {{"input", "the mask (any numeric type, any layout)"}};
static const stk_port_schema rmp_out[] = {{"output", "int64 [ndim]: the pixel's coordinates"}};

#define CHUNK 4096

typedef struct {
  bool by_value;
  double value, threshold;
} fg_rule;

/* Counts the foreground elements, or (nth >= 0) returns the index of the nth one. */
static int64_t scan(const stk__tensor *in, int64_t total, const fg_rule *r, int64_t nth,
                    double *buf) {
  int64_t count = 0;
  size_t es = stk_dtype_size(in->dtype);
  for (int64_t at = 0; at < total; at += CHUNK) {
    int64_t k = total - at < CHUNK ? total - at : CHUNK;
    stk__convert(buf, STK_DTYPE_FLOAT64, (const char *)in->data + (size_t)at * es, in->dtype,
                 (size_t)k);
    for (int64_t j = 0; j < k; j++) {
      bool fg = r->by_value ? buf[j] == r->value : buf[j] > r->threshold;
      if (fg && count++ == nth) return at + j;
    }
  }
  return nth >= 0 ? -1 : count;
}

static stk_status rmp_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (!stk__dtype_valid(in->dtype) || in->ndim < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "expects a numeric mask of 1+ dims");
  int64_t total = 1;
  for (int d = 0; d < in->ndim; d++) total *= in->shape[d];
  if (total == 0) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "the mask is empty");
  stk__philox g;
  stk__sample_rng(node, s, &g);
  int64_t index = -1;
  if (stk__arg_int(node, s, A_FOREGROUND) != 0) {
    fg_rule r = {stk__arg_given(node, A_VALUE), 0, stk__arg_float(node, s, A_THRESHOLD)};
    if (r.by_value) r.value = (double)stk__arg_int(node, s, A_VALUE);
    double *buf = stk__scratch(s, CHUNK * sizeof *buf);
    if (!buf) return STK_ERR_OUT_OF_MEMORY;
    int64_t count = scan(in, total, &r, -1, buf);
    if (count > 0)
      index = scan(in, total, &r, (int64_t)stk__philox_below(&g, (uint64_t)count), buf);
  }
  if (index < 0) index = (int64_t)stk__philox_below(&g, (uint64_t)total);
  int64_t nd = in->ndim;
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_INT64, 1, &nd, NULL, &out));
  int64_t *o = out->data;
  for (int d = in->ndim - 1; d >= 0; d--) o[d] = index % in->shape[d], index /= in->shape[d];
  return STK_OK;
}

static const stk_op_schema rmp_schema = {
    .name = "segmentation.random_mask_pixel",
    .doc =
        "Draws a random pixel of a mask: with foreground=1 among those equal to value (or "
        "above threshold), else anywhere; outputs its coordinates (int64, one per axis). "
        "Feeds crop positions that keep an object in view.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = rmp_in,
    .num_outputs = 1,
    .outputs = rmp_out,
    .num_args = A_COUNT_,
    .args = rmp_args,
};
const stk__op_def stk__op_random_mask_pixel = {.schema = &rmp_schema, .run_sample = rmp_run};
