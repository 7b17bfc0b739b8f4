/* Per-sample conditional execution. Sample-major execution makes a split free: an
 * operator with guards simply does not run for the samples whose predicates fail, and
 * its outputs have no value there. "select" merges branches per sample by taking one of
 * its inputs, aliasing it without a copy. */
#include <stdlib.h>
#include <string.h>

#include "gpu_stage.h"
#include "internal.h"

/* The value of a scalar predicate tensor (bool or integer; element 0). */
static bool scalar_value(const stk__tensor *t, int64_t *out) {
  if (!t->data) return false;
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  if (n < 1) return false;
  switch (t->dtype) {
    case STK_DTYPE_BOOL:
    case STK_DTYPE_UINT8:
      *out = *(const uint8_t *)t->data;
      return true;
    case STK_DTYPE_INT8:
      *out = *(const int8_t *)t->data;
      return true;
    case STK_DTYPE_INT16:
      *out = *(const int16_t *)t->data;
      return true;
    case STK_DTYPE_UINT16:
      *out = *(const uint16_t *)t->data;
      return true;
    case STK_DTYPE_INT32:
      *out = *(const int32_t *)t->data;
      return true;
    case STK_DTYPE_UINT32:
      *out = *(const uint32_t *)t->data;
      return true;
    case STK_DTYPE_INT64:
      *out = *(const int64_t *)t->data;
      return true;
    case STK_DTYPE_UINT64:
      *out = (int64_t) * (const uint64_t *)t->data;
      return true;
    case STK_DTYPE_FLOAT32:
      *out = (int64_t) * (const float *)t->data;
      return true;
    case STK_DTYPE_FLOAT64:
      *out = (int64_t) * (const double *)t->data;
      return true;
    default:
      return false;
  }
}

bool stk__guards_hold(const stk__node *node, const stk__sample *s) {
  for (int g = 0; g < node->spec->num_guards; g++) {
    int64_t v;
    const stk__guard *guard = &node->spec->guards[g];
    if (!scalar_value(&s->edges[guard->edge], &v)) return false;
    /* a bool predicate is "true" for any non-zero value */
    bool is_bool = s->edges[guard->edge].dtype == STK_DTYPE_BOOL;
    if (is_bool ? ((v != 0) != (guard->value != 0)) : v != guard->value) return false;
  }
  return true;
}

/* The branch index of a sample, checked. */
static stk_status branch_of(const stk__node *node, const stk__tensor *pred, int64_t ordinal,
                            int64_t *index) {
  if (!scalar_value(pred, index))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "'%s': the selector has no scalar value for sample %lld", node->name,
                    (long long)ordinal);
  if (pred->dtype == STK_DTYPE_BOOL) *index = *index != 0;
  int branches = node->spec->num_inputs - 1;
  if (*index < 0 || *index >= branches)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "'%s': selector value %lld for sample %lld is outside [0, %d)", node->name,
                    (long long)*index, (long long)ordinal, branches);
  return STK_OK;
}

static stk_status select_run(stk__node *node, stk__sample *s) {
  int64_t index;
  STK_TRY(branch_of(node, stk__input(s, 0), s->ordinal, &index));
  const stk__tensor *chosen = stk__input(s, (int)index + 1);
  if (!chosen->data)
    return STK_FAIL(
        STK_ERR_INVALID_ARGUMENT,
        "'%s': branch %lld has no value for sample %lld (the variable is assigned only in "
        "some branches)",
        node->name, (long long)index, (long long)s->ordinal);
  return stk__output_alias(s, 0, chosen);
}

/* GPU batches: the merge is a view whose sample i is sample i of the chosen branch's
 * list (the branches' lists hold every sample position; holes where a branch did not
 * run). Nothing is copied. */
static stk_status select_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  int branches = node->spec->num_inputs - 1;
  stk_tensor_list *srcs[16];
  for (int k = 0; k < branches; k++) {
    srcs[k] = stk__gpu_input(b, k + 1);
    if (!srcs[k]->gpu)
      return STK_FAIL(
          STK_ERR_INVALID_ARGUMENT,
          "'%s': branch %d is on the CPU while the merge runs on the GPU (branches must agree in "
          "device: move it with .gpu())",
          node->name, k);
  }
  int *which = stk__calloc(n ? n : 1, sizeof(int), "a merge");
  size_t *index = stk__calloc(n ? n : 1, sizeof(size_t), "a merge");
  stk_status st = which && index ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    int64_t k;
    st = branch_of(node, &s->edges[node->in_edges[0]], s->ordinal, &k);
    if (st != STK_OK) break;
    if (!stk__tensor_list_has_sample(srcs[k], i))
      st = STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "'%s': branch %lld has no value for sample %lld (the variable is assigned only "
                    "in some branches)",
                    node->name, (long long)k, (long long)s->ordinal);
    which[i] = (int)k, index[i] = i;
  }
  stk_tensor_list *out = NULL;
  if (st == STK_OK)
    st = stk__tensor_list_view(srcs, (size_t)branches, which, index, n, node->name, &out);
  free(which);
  free(index);
  return st == STK_OK ? stk__gpu_output(b, 0, out) : st;
}

/* One entry per possible input (the schema contract): the index and 16 branches. */
#define BRANCH(k) \
  { "branch" #k, "the value of branch " #k "; only the chosen branch needs a value" }
static const stk_port_schema select_in[] = {
    {"index", "per-sample branch index (bool: false = 0, true = 1)"},
    BRANCH(0),
    BRANCH(1),
    BRANCH(2),
    BRANCH(3),
    BRANCH(4),
    BRANCH(5),
    BRANCH(6),
    BRANCH(7),
    BRANCH(8),
    BRANCH(9),
    BRANCH(10),
    BRANCH(11),
    BRANCH(12),
    BRANCH(13),
    BRANCH(14),
    BRANCH(15)};
#undef BRANCH
static const stk_port_schema select_out[] = {{"value", "the chosen branch's value, per sample"}};
static const stk_op_schema select_schema = {
    .name = "select",
    .doc =
        "Merges conditional branches per sample: output = input[1 + index] where index is the "
        "first "
        "input "
        "(a bool or integer scalar per sample). No data is copied inside a sample's chain.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_MERGES_BRANCHES,
    .min_inputs = 2,
    .max_inputs = 17,
    .inputs = select_in,
    .num_outputs = 1,
    .outputs = select_out,
    .num_args = 0,
    .args = NULL,
};
const stk__op_def stk__op_select = {
    .schema = &select_schema,
    .run_sample = select_run,
    .run_gpu = select_run_gpu,
};
