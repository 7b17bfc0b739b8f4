/* Tensor lists: the per-output result of a batch. Reference counted; the pool blocks
 * they own go back to the pipeline's pool with the last reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_stage.h"
#include "internal.h"

stk_status stk__tensor_list_create(stk_tensor_list **out, size_t n, int ndim, stk__pool *pool) {
  stk_tensor_list *tl = stk__calloc(1, sizeof *tl, "a tensor list");
  if (!tl) return STK_ERR_OUT_OF_MEMORY;
  atomic_init(&tl->refs, 1);
  tl->n = n;
  tl->ndim = ndim;
  tl->pool = pool;
  tl->device_id = -1;
  tl->shapes = stk__calloc(n * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "sample shapes");
  tl->data = stk__calloc(n ? n : 1, sizeof(void *), "sample pointers");
  tl->blocks = stk__calloc(n + 1, sizeof(void *), "blocks");
  if (!tl->shapes || !tl->data || !tl->blocks) {
    stk_tensor_list_release(tl);
    return STK_ERR_OUT_OF_MEMORY;
  }
  *out = tl;
  return STK_OK;
}

stk_status stk__tensor_list_own(stk_tensor_list *tl, void *block) {
  if (tl->num_blocks >= tl->n + 1)
    return STK_FAIL(STK_ERR_INTERNAL, "tensor list owns too many blocks");
  tl->blocks[tl->num_blocks++] = block;
  return STK_OK;
}

bool stk__tensor_list_has_sample(const stk_tensor_list *tl, size_t i) {
  return tl && i < tl->n && !(tl->absent && tl->absent[i]);
}

/* Checks that the sources giving samples agree; returns the first such source. */
static stk_status view_template(stk_tensor_list *const *srcs, const int *which, size_t n,
                                const char *what, const stk_tensor_list **first) {
  *first = NULL;
  for (size_t j = 0; j < n; j++) {
    if (which[j] < 0) continue;
    const stk_tensor_list *t = srcs[which[j]];
    if (!*first) {
      *first = t;
      continue;
    }
    const stk_tensor_list *f = *first;
    if (t->dtype != f->dtype || t->ndim != f->ndim || strcmp(t->layout, f->layout) != 0 ||
        (t->gpu != NULL) != (f->gpu != NULL))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "'%s': the branches disagree: one gives %s/%dD/'%s' on the %s, another "
                      "%s/%dD/'%s' on the %s "
                      "(branches must agree in dtype, dimensions, layout and device)",
                      what, stk_dtype_name(f->dtype), f->ndim, f->layout, f->gpu ? "GPU" : "CPU",
                      stk_dtype_name(t->dtype), t->ndim, t->layout, t->gpu ? "GPU" : "CPU");
  }
  return STK_OK;
}

stk_status stk__tensor_list_view(stk_tensor_list *const *srcs, size_t num_srcs, const int *which,
                                 const size_t *index, size_t n, const char *what,
                                 stk_tensor_list **out) {
  const stk_tensor_list *first;
  STK_TRY(view_template(srcs, which, n, what, &first));
  if (!first) first = srcs[0];
  stk_tensor_list *tl;
  STK_TRY(stk__tensor_list_create(&tl, n, first->ndim, NULL));
  tl->parents = stk__calloc(num_srcs ? num_srcs : 1, sizeof *tl->parents, "view sources");
  tl->absent = stk__calloc(n ? n : 1, sizeof *tl->absent, "view holes");
  if (!tl->parents || !tl->absent) {
    stk_tensor_list_release(tl);
    return STK_ERR_OUT_OF_MEMORY;
  }
  for (size_t k = 0; k < num_srcs; k++) {
    stk_tensor_list_retain(srcs[k]);
    tl->parents[tl->num_parents++] = srcs[k];
  }
  tl->dtype = first->dtype;
  tl->storage = first->storage;
  tl->device_id = first->device_id;
  memcpy(tl->layout, first->layout, sizeof tl->layout);
  if (first->gpu) {
    tl->gpu = first->gpu;
    stk__gpu_retain(tl->gpu);
  }
  size_t nd = (size_t)first->ndim;
  bool identity = num_srcs == 1 && n == srcs[0]->n;
  for (size_t j = 0; j < n; j++) {
    if (which[j] < 0) {
      identity = false;
      tl->absent[j] = true;
      continue;
    }
    const stk_tensor_list *src = srcs[which[j]];
    if (index[j] >= src->n) {
      stk_tensor_list_release(tl);
      return STK_FAIL(STK_ERR_INTERNAL, "'%s': sample %zu of a list of %zu", what, index[j],
                      src->n);
    }
    if (!stk__tensor_list_has_sample(src, index[j])) { /* a hole stays a hole */
      identity = false;
      tl->absent[j] = true;
      continue;
    }
    identity = identity && index[j] == j;
    tl->data[j] = src->data[index[j]];
    memcpy(tl->shapes + j * nd, src->shapes + index[j] * nd, sizeof(int64_t) * nd);
  }
  if (identity) tl->dense = srcs[0]->dense;
  *out = tl;
  return STK_OK;
}

void stk_tensor_list_retain(stk_tensor_list *tl) {
  if (tl) atomic_fetch_add_explicit(&tl->refs, 1, memory_order_relaxed);
}

void stk_tensor_list_release(stk_tensor_list *tl) {
  if (!tl || atomic_fetch_sub_explicit(&tl->refs, 1, memory_order_acq_rel) != 1) return;
  /* a view's stream ordering (the consumer's stream) is enqueued before its sources
   * return their blocks */
  if (tl->gpu) stk__tensor_list_free_device(tl);
  for (size_t k = 0; k < tl->num_parents; k++) stk_tensor_list_release(tl->parents[k]);
  free(tl->parents);
  free(tl->absent);
  for (size_t b = 0; b < tl->num_blocks; b++) stk__pool_free(tl->pool, tl->blocks[b]);
  free(tl->malloc_block);
  free(tl->blocks);
  free(tl->shapes);
  free(tl->data);
  free(tl);
}

size_t stk_tensor_list_num_samples(const stk_tensor_list *tl) { return tl ? tl->n : 0; }
stk_dtype stk_tensor_list_dtype(const stk_tensor_list *tl) { return tl->dtype; }
const char *stk_tensor_list_layout(const stk_tensor_list *tl) { return tl->layout; }
stk_storage stk_tensor_list_storage(const stk_tensor_list *tl) { return tl->storage; }
int stk_tensor_list_device_id(const stk_tensor_list *tl) { return tl->device_id; }
int stk_tensor_list_ndim(const stk_tensor_list *tl) { return tl->ndim; }
int stk_tensor_list_is_dense(const stk_tensor_list *tl) { return tl && tl->dense != NULL; }
void *stk_tensor_list_data(const stk_tensor_list *tl) { return tl ? tl->dense : NULL; }
void *stk_tensor_list_ready_event(const stk_tensor_list *tl) { return tl ? tl->ready_event : NULL; }

stk_status stk_tensor_list_sample(const stk_tensor_list *tl, size_t index, stk_tensor_desc *out) {
  if (!tl || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (index >= tl->n)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %zu out of range (the list has %zu)", index,
                    tl->n);
  memset(out, 0, sizeof *out);
  out->data = tl->data[index];
  out->ndim = tl->ndim;
  out->dtype = tl->dtype;
  memcpy(out->layout, tl->layout, sizeof out->layout);
  int64_t stride = (int64_t)stk_dtype_size(tl->dtype);
  for (int d = tl->ndim - 1; d >= 0; d--) {
    out->shape[d] = tl->shapes[index * (size_t)tl->ndim + (size_t)d];
    out->strides[d] = stride;
    stride *= out->shape[d];
  }
  return STK_OK;
}

size_t stk_batch_num_outputs(const stk_batch *b) { return b ? b->num_outputs : 0; }
int64_t stk_batch_epoch(const stk_batch *b) { return b ? b->epoch : -1; }
int stk_batch_ends_epoch(const stk_batch *b) { return b && b->ends_epoch; }

stk_tensor_list *stk_batch_output(const stk_batch *b, size_t index) {
  return (b && index < b->num_outputs) ? b->outputs[index] : NULL;
}

void stk__skip_list_add(stk__skip_list *l, char *message) {
  if (l->count == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 8;
    char **grown = realloc(l->messages, cap * sizeof *grown);
    if (!grown) { /* counted all the same, without its message */
      free(message);
      l->count++;
      return;
    }
    memset(grown + l->cap, 0, (cap - l->cap) * sizeof *grown);
    l->messages = grown, l->cap = cap;
  }
  l->messages[l->count++] = message;
}

void stk__skip_list_free(stk__skip_list *l) {
  for (size_t i = 0; i < l->count && i < l->cap; i++) free(l->messages[i]);
  free(l->messages);
  memset(l, 0, sizeof *l);
}

void stk_batch_release(stk_batch *b) {
  if (!b) return;
  stk__skip_list_free(&b->skips);
  free(b->resume);
  for (size_t o = 0; o < b->num_outputs; o++) stk_tensor_list_release(b->outputs[o]);
  free(b->outputs);
  free(b);
}

/* op_gpu.h: the same samples under new metadata (reshape, reinterpret, expand_dims,
 * squeeze on the GPU). The view keeps `src` alive; no byte moves. */
stk_status stk__gpu_reshape_view(stk_tensor_list *src, stk_dtype dtype, int ndim,
                                 const int64_t *shapes, const char *layout, stk_tensor_list **out) {
  size_t n = src->n;
  int *which = stk__calloc(n ? n : 1, sizeof(int), "view map");
  size_t *index = stk__calloc(n ? n : 1, sizeof(size_t), "view map");
  stk_status st = which && index ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) index[i] = i;
  stk_tensor_list *tl = NULL;
  if (st == STK_OK) st = stk__tensor_list_view(&src, 1, which, index, n, "reshape", &tl);
  free(which);
  free(index);
  if (st != STK_OK) return st;
  int64_t *sh = stk__calloc(n * (size_t)(ndim ? ndim : 1), sizeof(int64_t), "sample shapes");
  if (!sh) {
    stk_tensor_list_release(tl);
    return STK_ERR_OUT_OF_MEMORY;
  }
  if (n && ndim) memcpy(sh, shapes, n * (size_t)ndim * sizeof(int64_t));
  free(tl->shapes);
  tl->shapes = sh;
  tl->ndim = ndim;
  tl->dtype = dtype;
  snprintf(tl->layout, sizeof tl->layout, "%s", layout ? layout : "");
  /* a dense source stays one dense block only while the new shapes agree */
  for (size_t i = 1; tl->dense && i < n; i++)
    if (memcmp(sh, sh + i * (size_t)ndim, (size_t)ndim * sizeof(int64_t)) != 0) tl->dense = NULL;
  *out = tl;
  return STK_OK;
}
