/* The device runtime as the executor sees it: loading libstoker_cuda.so, opening the
 * device, device tensor lists, and running the GPU stage of a batch. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/gpu_util.h"
#include "gpu_stage.h"
#include "internal.h"

stk_status stk__gpu_check(int rc, const char *err) {
  if (rc == 0) return STK_OK;
  return stk__set_error((stk_status)rc, err && *err ? err : "GPU call failed");
}

/* dlopen of the backend: $STK_CUDA_LIBRARY, the folder of the code holding this
 * function (libstoker.so, or the Python extension), then the loader's search path. */
static void *load_backend(char *why, size_t cap) {
  const char *env = getenv("STK_CUDA_LIBRARY");
  if (env && *env) {
    void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h) snprintf(why, cap, "%s", dlerror());
    return h;
  }
  Dl_info info;
  if (dladdr((void *)&load_backend, &info) && info.dli_fname) {
    char self[4096], path[4200];
    snprintf(self, sizeof self, "%s", info.dli_fname);
    snprintf(path, sizeof path, "%s/libstoker_cuda.so", dirname(self));
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  void *h = dlopen("libstoker_cuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) snprintf(why, cap, "%s", dlerror());
  return h;
}

/* The decoder's threads (header parsing, nvJPEG's hybrid path): the pipeline's thread
 * count, but at most half the CPUs this process may run on. The hybrid path's CPU work
 * (Huffman decoding) competes with the thread that feeds the hardware engines and with
 * the CPU stage's workers: on the H100 machine (16 CPUs) basic@gpu ran at 89-94% of bare
 * nvJPEG with 8 + 8 threads but 81-84% with 15 + 15 (bench/RESULTS.md, 2026-11-23). */
static int decoder_threads(int pipeline_threads) {
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                         : (int)sysconf(_SC_NPROCESSORS_ONLN);
  int cap = cpus > 1 ? cpus / 2 : 1;
  return pipeline_threads < cap ? pipeline_threads : cap;
}

/* Whether the backend's kernels are the ones this library launches: the same count and,
 * id by id, the same name and record sizes (the ids are positions in gpu_kernels.h's list,
 * so two builds from different lists would otherwise launch the wrong kernels). */
static bool kernels_match(const stk_gpu_api *api, char *why, size_t whylen) {
  static const stk_gpu_kernel_info ours[STK_GPU_K_COUNT] = {STK_GPU_KERNELS(STK_GPU_KERNEL_INFO)};
  if (api->kernel_count != STK_GPU_K_COUNT || !api->kernels) {
    snprintf(why, whylen, "%d kernels, expected %d", api->kernel_count, (int)STK_GPU_K_COUNT);
    return false;
  }
  for (int k = 0; k < STK_GPU_K_COUNT; k++) {
    const stk_gpu_kernel_info *theirs = &api->kernels[k];
    if (!theirs->name || strcmp(theirs->name, ours[k].name) != 0 ||
        theirs->sample_size != ours[k].sample_size || theirs->args_size != ours[k].args_size) {
      snprintf(why, whylen, "kernel %d is '%s' (%zu / %zu bytes), expected '%s' (%zu / %zu)", k,
               theirs->name ? theirs->name : "?", theirs->sample_size, theirs->args_size,
               ours[k].name, ours[k].sample_size, ours[k].args_size);
      return false;
    }
  }
  return true;
}

stk_status stk__gpu_open(int device, int decode_threads, int64_t wait_timeout_ms, stk__gpu **out) {
  if (device < 0)
    return STK_FAIL(STK_ERR_DEVICE,
                    "an operator runs on the GPU but device_id is -1 (None): set device_id");
  char why[1024] = "";
  void *lib = load_backend(why, sizeof why);
  if (!lib)
    return STK_FAIL(
        STK_ERR_DEVICE,
        "the GPU backend libstoker_cuda.so could not be loaded (built only where nvcc is present; "
        "set STK_CUDA_LIBRARY to its path): %s",
        why);
  stk_cuda_get_api_fn get = (stk_cuda_get_api_fn)dlsym(lib, "stk_cuda_get_api");
  const stk_gpu_api *api = get ? get() : NULL;
  if (!api || api->abi_version != STK_GPU_ABI_VERSION || api->struct_size < sizeof(stk_gpu_api)) {
    dlclose(lib);
    return STK_FAIL(STK_ERR_DEVICE,
                    "libstoker_cuda.so does not match this library (ABI %d, expected %d)",
                    api ? api->abi_version : -1, STK_GPU_ABI_VERSION);
  }
  char err[STK_GPU_ERRLEN] = "";
  if (!kernels_match(api, err, sizeof err)) {
    dlclose(lib);
    return STK_FAIL(STK_ERR_DEVICE,
                    "libstoker_cuda.so was built from another list of kernels (%s): rebuild it "
                    "with this library",
                    err);
  }
  int count = 0;
  if (api->device_count(&count, err, sizeof err) != 0 || device >= count) {
    dlclose(lib);
    return STK_FAIL(STK_ERR_DEVICE, "no usable GPU for device_id %d (%d device(s) found)%s%s",
                    device, count, *err ? ": " : "", err);
  }
  stk__gpu *g = stk__calloc(1, sizeof *g, "the GPU context");
  if (!g) {
    dlclose(lib);
    return STK_ERR_OUT_OF_MEMORY;
  }
  stk_gpu_open_opts opts = {.device = device,
                            .decode_threads = decoder_threads(decode_threads),
                            .wait_timeout_ms = wait_timeout_ms};
  int rc = api->open(&opts, &g->ctx, err, sizeof err);
  if (rc == 0) rc = api->device_info(g->ctx, &g->info, err, sizeof err);
  if (rc != 0) {
    if (g->ctx) api->close(g->ctx);
    free(g);
    dlclose(lib);
    return STK_FAIL(STK_ERR_DEVICE, "cannot open GPU %d: %s", device, err);
  }
  g->api = api;
  g->library = lib;
  g->device = device;
  atomic_init(&g->refs, 1);
  *out = g;
  return STK_OK;
}

void stk__gpu_retain(stk__gpu *gpu) {
  if (gpu) atomic_fetch_add(&gpu->refs, 1);
}

static int pin_block(void *user, void *ptr, size_t bytes) {
  stk__gpu *g = user;
  return g->api->host_register(g->ctx, ptr, bytes, NULL, 0);
}
static void unpin_block(void *user, void *ptr) {
  stk__gpu *g = user;
  g->api->host_unregister(g->ctx, ptr);
}
static void release_pinning(void *user) { stk__gpu_release(user); }

/* The default: blocks carved from page-locked slabs (slabs.c says why). */
typedef struct {
  stk__gpu *gpu;
  stk__slabs *slabs;
} slab_pinning;

static void *alloc_slab_block(void *user, size_t bytes) {
  return stk__slabs_alloc(((slab_pinning *)user)->slabs, bytes);
}
static void free_slab_block(void *user, void *ptr) {
  stk__slabs_free(((slab_pinning *)user)->slabs, ptr);
}
static void release_slabs(void *user) {
  slab_pinning *sp = user;
  stk__slabs_destroy(sp->slabs);
  stk__gpu_release(sp->gpu);
  free(sp);
}

/* Slabs won (bench/RESULTS.md, 2026-11-25 fifth session: basic@gpu's engines' call 6%
 * faster than with each block registered on its own; pageable blocks and cudaHostAlloc'd
 * ones were slower still). Per-block registration remains as the fallback. */
void stk__gpu_pin_pool(stk__gpu *gpu, stk__pool *pool) {
  stk__pool_pinning pinning = {.release = release_pinning, .user = gpu};
  slab_pinning *sp = calloc(1, sizeof *sp);
  if (sp) sp->slabs = stk__slabs_create(pin_block, unpin_block, gpu);
  if (!sp || !sp->slabs) { /* no memory for the bookkeeping: blocks registered one by one */
    free(sp);
    pinning.pin = pin_block, pinning.unpin = unpin_block;
  } else {
    sp->gpu = gpu;
    pinning = (stk__pool_pinning){.alloc = alloc_slab_block,
                                  .dealloc = free_slab_block,
                                  .release = release_slabs,
                                  .user = sp};
  }
  stk__gpu_retain(gpu);
  stk__pool_set_pinning(pool, &pinning);
}

void stk__gpu_release(stk__gpu *gpu) {
  if (!gpu || atomic_fetch_sub(&gpu->refs, 1) != 1) return;
  gpu->api->close(gpu->ctx);
  dlclose(gpu->library);
  free(gpu);
}

/* ---- device tensor lists ---- */

/* Frees a device list's blocks on the compute stream, after the consumer's stream has
 * passed the point where the list was released. */
static void free_device_blocks(stk_tensor_list *tl) {
  stk__gpu *g = tl->gpu;
  uintptr_t stream = g->api->stream(g->ctx, STK_GPU_STREAM_COMPUTE);
  if (tl->has_consumer && tl->ready_event) {
    g->api->event_record(g->ctx, tl->ready_event, tl->consumer_stream, NULL, 0);
    g->api->stream_wait_event(g->ctx, stream, tl->ready_event, NULL, 0);
  }
  for (size_t b = 0; b < tl->num_blocks; b++)
    (tl->idle_blocks ? g->api->device_free_idle : g->api->device_free)(g->ctx, tl->blocks[b],
                                                                       stream, NULL, 0);
  tl->num_blocks = 0;
  if (tl->ready_event) g->api->event_destroy(g->ctx, tl->ready_event);
  tl->ready_event = NULL;
}

void stk__tensor_list_free_device(stk_tensor_list *tl) {
  if (!tl->gpu) return;
  free_device_blocks(tl);
  stk__gpu_release(tl->gpu);
  tl->gpu = NULL;
}

stk_status stk__gpu_mark_ready(stk__gpu *gpu, stk_tensor_list *tl) {
  char err[STK_GPU_ERRLEN] = "";
  uintptr_t stream = gpu->api->stream(gpu->ctx, STK_GPU_STREAM_COMPUTE);
  int rc =
      tl->ready_event ? 0 : gpu->api->event_create(gpu->ctx, 0, &tl->ready_event, err, sizeof err);
  if (rc == 0) rc = gpu->api->event_record(gpu->ctx, tl->ready_event, stream, err, sizeof err);
  return stk__gpu_check(rc, err);
}

stk_status stk_tensor_list_set_consumer_stream(stk_tensor_list *tl, uintptr_t stream) {
  if (!tl) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL tensor list");
  if (!tl->gpu) return STK_OK; /* host memory: nothing to order */
  char err[STK_GPU_ERRLEN] = "";
  stk__gpu *g = tl->gpu;
  if (tl->ready_event)
    STK_TRY(stk__gpu_check(
        g->api->stream_wait_event(g->ctx, stream, tl->ready_event, err, sizeof err), err));
  tl->consumer_stream = stream;
  tl->has_consumer = true;
  return STK_OK;
}

/* Bytes of sample i. */
static size_t sample_size(const stk_tensor_list *tl, size_t i) {
  size_t bytes = stk_dtype_size(tl->dtype);
  for (int d = 0; d < tl->ndim; d++) bytes *= (size_t)tl->shapes[i * (size_t)tl->ndim + (size_t)d];
  return bytes;
}

stk_status stk_tensor_list_copy_out(const stk_tensor_list *tl, size_t first, size_t count,
                                    void *dst, size_t dst_bytes, uintptr_t stream, int blocking) {
  if (!tl || (!dst && count)) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (first > tl->n || count > tl->n - first)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "samples %zu..%zu out of range (the list has %zu)",
                    first, first + count, tl->n);
  size_t total = 0;
  for (size_t i = first; i < first + count; i++) {
    if (tl->absent && tl->absent[i])
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "sample %zu has no value (a conditional branch)",
                      i);
    total += sample_size(tl, i);
  }
  if (total > dst_bytes)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "the samples take %zu bytes, the destination holds %zu", total, dst_bytes);
  if (!tl->gpu) {
    for (size_t i = first, off = 0; i < first + count; off += sample_size(tl, i), i++)
      memcpy((char *)dst + off, tl->data[i], sample_size(tl, i));
    return STK_OK;
  }
  stk__gpu *g = tl->gpu;
  char err[STK_GPU_ERRLEN] = "";
  if (!stream) stream = g->api->stream(g->ctx, STK_GPU_STREAM_COPY);
  int rc = tl->ready_event
               ? g->api->stream_wait_event(g->ctx, stream, tl->ready_event, err, sizeof err)
               : 0;
  for (size_t i = first, off = 0; rc == 0 && i < first + count; off += sample_size(tl, i), i++)
    rc = g->api->memcpy_async(g->ctx, (char *)dst + off, tl->data[i], sample_size(tl, i), stream,
                              err, sizeof err);
  if (rc == 0 && blocking) rc = g->api->stream_sync(g->ctx, stream, err, sizeof err);
  return stk__gpu_check(rc, err);
}

stk_status stk_tensor_list_to_host(const stk_tensor_list *tl, stk_tensor_list **out) {
  if (!tl || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  size_t total = 0;
  size_t *bytes = stk__calloc(tl->n ? tl->n : 1, sizeof(size_t), "sample sizes");
  if (!bytes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < tl->n; i++) total += bytes[i] = sample_size(tl, i);
  stk_tensor_list *h;
  stk_status st = stk__tensor_list_create(&h, tl->n, tl->ndim, NULL);
  char *block = st == STK_OK ? malloc(total ? total : 1) : NULL;
  if (st == STK_OK && !block)
    st = STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes", total);
  if (st != STK_OK) {
    free(bytes);
    if (h && st != STK_OK) stk_tensor_list_release(h);
    return st;
  }
  h->dtype = tl->dtype;
  memcpy(h->layout, tl->layout, sizeof h->layout);
  memcpy(h->shapes, tl->shapes, sizeof(int64_t) * tl->n * (size_t)tl->ndim);
  h->malloc_block = block;
  char err[STK_GPU_ERRLEN] = "";
  size_t off = 0;
  for (size_t i = 0; i < tl->n && st == STK_OK; i++) {
    h->data[i] = block + off;
    if (tl->gpu) {
      stk__gpu *g = tl->gpu;
      uintptr_t stream = g->api->stream(g->ctx, STK_GPU_STREAM_COPY);
      int rc = tl->ready_event
                   ? g->api->stream_wait_event(g->ctx, stream, tl->ready_event, err, sizeof err)
                   : 0;
      if (rc == 0)
        rc = g->api->memcpy_async(g->ctx, block + off, tl->data[i], bytes[i], stream, err,
                                  sizeof err);
      if (rc == 0 && i + 1 == tl->n) rc = g->api->stream_sync(g->ctx, stream, err, sizeof err);
      st = stk__gpu_check(rc, err);
    } else if (bytes[i]) {
      memcpy(block + off, tl->data[i], bytes[i]);
    }
    off += bytes[i];
  }
  if (st == STK_OK && tl->dense) h->dense = block;
  free(bytes);
  if (st != STK_OK) {
    stk_tensor_list_release(h);
    return st;
  }
  *out = h;
  return STK_OK;
}

/* ---- the stage ---- */

size_t stk__gpu_batch_size(const stk__gpu_batch *b) { return b->n; }
stk__gpu *stk__gpu_device(const stk__gpu_batch *b) { return b->p->gpu; }
uintptr_t stk__gpu_stream(const stk__gpu_batch *b) {
  return b->stream ? b->stream : b->p->gpu->api->stream(b->p->gpu->ctx, STK_GPU_STREAM_COMPUTE);
}
stk_tensor_list *stk__gpu_input(const stk__gpu_batch *b, int index) {
  return b->lists[b->node->in_edges[index]];
}
stk__sample *stk__gpu_sample(const stk__gpu_batch *b, size_t i) { return &b->samples[i]; }
const void *stk__gpu_prep(const stk__gpu_batch *b, size_t i) {
  const stk__sample *s = &b->samples[i];
  return b->node->prepares && s->prep ? s->prep + b->node->prep_offset : NULL;
}

stk__gpu *stk__node_gpu(const stk__node *node) { return node->pipe->gpu; }

/* The GPU stage's image outputs are held to max_image_pixels before they are allocated,
 * as the CPU operators' are (sample.c); a failure names the operator and the sample.
 * (max_batch_bytes bounds host memory: a device batch of decoded full-size photos may
 * rightly take more than its host share.) */
static stk_status check_list_limits(const stk__gpu_batch *b, int ndim, const int64_t *shapes,
                                    const char *layout) {
  if (!layout || ndim < 2 || ndim > 3 ||
      (strcmp(layout, "HWC") != 0 && strcmp(layout, "CHW") != 0 && strcmp(layout, "HW") != 0))
    return STK_OK;
  int64_t limit = b->p->settings[STK_PIPE_MAX_IMAGE_PIXELS];
  int h = layout[0] == 'C' ? 1 : 0;
  for (size_t i = 0; i < b->n; i++) {
    const int64_t *shape = &shapes[i * (size_t)ndim];
    if ((double)shape[h] * (double)shape[h + 1] > (double)limit)
      return STK_FAIL(STK_ERR_LIMIT,
                      "operator '%s', sample %zu of the batch: a %lld x %lld output image has more "
                      "than max_image_pixels (%lld) pixels",
                      b->node ? b->node->name : "?", i, (long long)shape[h + 1],
                      (long long)shape[h], (long long)limit);
  }
  return STK_OK;
}

static stk_status alloc_list(stk__gpu_batch *b, stk_dtype dtype, int ndim, const int64_t *shapes,
                             const char *layout, bool dense, bool idle, stk_tensor_list **out) {
  stk__gpu *g = b->p->gpu;
  STK_TRY(check_list_limits(b, ndim, shapes, layout));
  stk_tensor_list *tl;
  STK_TRY(stk__tensor_list_create(&tl, b->n, ndim, NULL));
  tl->dtype = dtype;
  tl->storage = STK_STORAGE_DEVICE;
  tl->device_id = g->device;
  tl->gpu = g;
  tl->idle_blocks = idle;
  stk__gpu_retain(g);
  snprintf(tl->layout, sizeof tl->layout, "%s", layout ? layout : "");
  memcpy(tl->shapes, shapes, sizeof(int64_t) * b->n * (size_t)ndim);
  size_t esize = stk_dtype_size(dtype);
  char err[STK_GPU_ERRLEN] = "";
  uintptr_t stream = stk__gpu_stream(b);
  int (*alloc)(stk_gpu_ctx *, size_t, uintptr_t, void **, char *, size_t) =
      idle ? g->api->device_alloc_idle : g->api->device_alloc;
  stk_status st = STK_OK;
  size_t sample0 = esize;
  for (int d = 0; d < ndim; d++) sample0 *= (size_t)shapes[d];
  if (dense) {
    void *block = NULL;
    st = stk__gpu_check(alloc(g->ctx, sample0 * b->n, stream, &block, err, sizeof err), err);
    if (st == STK_OK) {
      if (block) stk__tensor_list_own(tl, block);
      tl->dense = block;
      for (size_t i = 0; i < b->n; i++) tl->data[i] = (char *)block + i * sample0;
    }
  } else { /* ragged: one block, samples 256-byte aligned inside it (one pool call) */
    size_t total = 0;
    size_t *offsets = stk__calloc(b->n ? b->n : 1, sizeof(size_t), "sample offsets");
    if (!offsets) st = STK_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < b->n && st == STK_OK; i++) {
      size_t bytes = esize;
      for (int d = 0; d < ndim; d++) bytes *= (size_t)shapes[i * (size_t)ndim + (size_t)d];
      offsets[i] = total;
      total += (bytes + 255) & ~(size_t)255;
    }
    void *block = NULL;
    if (st == STK_OK)
      st = stk__gpu_check(alloc(g->ctx, total, stream, &block, err, sizeof err), err);
    if (st == STK_OK && block) stk__tensor_list_own(tl, block);
    for (size_t i = 0; i < b->n && st == STK_OK; i++) tl->data[i] = (char *)block + offsets[i];
    free(offsets);
  }
  if (st != STK_OK) {
    stk_tensor_list_release(tl);
    return st;
  }
  *out = tl;
  return STK_OK;
}

stk_status stk__gpu_alloc_list(stk__gpu_batch *b, stk_dtype dtype, int ndim, const int64_t *shapes,
                               const char *layout, bool dense, stk_tensor_list **out) {
  return alloc_list(b, dtype, ndim, shapes, layout, dense, false, out);
}

stk_status stk__gpu_alloc_list_idle(stk__gpu_batch *b, stk_dtype dtype, int ndim,
                                    const int64_t *shapes, const char *layout, bool dense,
                                    stk_tensor_list **out) {
  return alloc_list(b, dtype, ndim, shapes, layout, dense, true, out);
}

stk_status stk__gpu_reject_sample(stk__gpu_batch *b, size_t i, stk_status st) {
  if (st == STK_OK || !b->rejected || i >= b->n ||
      b->p->settings[STK_PIPE_ON_ERROR] != STK_ON_ERROR_SKIP || !stk__is_data_error(st))
    return st;
  b->rejected[i] = true;
  free(b->reject_messages[i]);
  b->reject_messages[i] =
      stk__sample_failure_message(b->node ? b->node->name : "?", " (GPU stage)", &b->samples[i]);
  return STK_OK;
}

stk__node *stk__gpu_producer(const stk__gpu_batch *b, int input_index) {
  return &b->p->nodes[b->p->edges[b->node->in_edges[input_index]].producer];
}

stk__node *stk__gpu_sole_consumer(const stk__gpu_batch *b, const stk__node *node, int output) {
  stk_pipeline *p = b->p;
  int e = node->out_edges[output];
  if (p->edges[e].output_index >= 0) return NULL;
  stk__node *found = NULL;
  int uses = 0;
  for (size_t n = 0; n < p->num_nodes; n++) {
    stk__node *c = &p->nodes[n];
    for (int i = 0; i < c->spec->num_inputs; i++)
      if (c->in_edges[i] == e) uses++, found = c;
    for (int a = 0; a < c->spec->def->schema->num_args; a++)
      if (c->spec->args[a].edge == e) uses += 2;
    for (int g = 0; g < c->spec->num_guards; g++)
      if (c->spec->guards[g].edge == e) uses += 2;
  }
  return uses == 1 ? found : NULL;
}

const stk__op_def *stk__node_def(const stk__node *node) { return node->spec->def; }
unsigned stk__node_device(const stk__node *node) { return node->spec->device; }
int stk__node_num_guards(const stk__node *node) { return node->spec->num_guards; }

stk_status stk__gpu_finalize_output(stk__gpu *gpu, stk_tensor_list **tlp, const char *name) {
  stk_tensor_list *tl = *tlp;
  for (size_t i = 0; tl->absent && i < tl->n; i++)
    if (tl->absent[i])
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "pipeline output '%s' has no value for sample %zu of the batch (it is "
                      "assigned only in some "
                      "branches of a condition)",
                      name, i);
  if (!tl->parents || tl->dense || tl->n == 0 ||
      !stk__gpu_shapes_equal(tl->shapes, tl->n, tl->ndim))
    return STK_OK;
  int64_t count = 1; /* elements per sample */
  for (int d = 0; d < tl->ndim; d++) count *= tl->shapes[d];
  size_t bytes = (size_t)count * stk_dtype_size(tl->dtype);
  char err[STK_GPU_ERRLEN] = "";
  uintptr_t stream = gpu->api->stream(gpu->ctx, STK_GPU_STREAM_COMPUTE);
  void *block = NULL;
  STK_TRY(stk__gpu_check(
      gpu->api->device_alloc(gpu->ctx, bytes * tl->n, stream, &block, err, sizeof err), err));
  stk_tensor_list *out;
  stk_status st = stk__tensor_list_create(&out, tl->n, tl->ndim, NULL);
  if (st != STK_OK) {
    gpu->api->device_free(gpu->ctx, block, stream, NULL, 0);
    return st;
  }
  out->dtype = tl->dtype;
  out->storage = STK_STORAGE_DEVICE;
  out->device_id = gpu->device;
  out->gpu = gpu;
  stk__gpu_retain(gpu);
  memcpy(out->layout, tl->layout, sizeof out->layout);
  memcpy(out->shapes, tl->shapes, sizeof(int64_t) * tl->n * (size_t)tl->ndim);
  stk__tensor_list_own(out, block);
  out->dense = block;
  /* one launch for the whole gather: a cast to the same type copies bit for bit */
  stk_gpu_cast_sample *copies = stk__calloc(tl->n, sizeof *copies, "gather descriptors");
  if (!copies) st = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < tl->n && st == STK_OK; i++) {
    out->data[i] = (char *)block + i * bytes;
    copies[i] = (stk_gpu_cast_sample){tl->data[i], out->data[i], count};
  }
  if (st == STK_OK)
    st = stk__gpu_check(
        stk_gpu_run_cast(gpu->api, gpu->ctx, (int)tl->n, copies,
                         &(stk_gpu_io_args){tl->dtype, tl->dtype}, stream, err, sizeof err),
        err);
  free(copies);
  if (st != STK_OK) {
    stk_tensor_list_release(out);
    return st;
  }
  stk_tensor_list_release(tl);
  *tlp = out;
  return STK_OK;
}

stk_status stk__gpu_output(stk__gpu_batch *b, int index, stk_tensor_list *tl) {
  int e = b->node->out_edges[index];
  stk_tensor_list_release(b->lists[e]);
  b->lists[e] = tl;
  return STK_OK;
}

/* ---- conditional execution on the GPU ----
 * A guarded operator runs on the sub-batch of the samples whose predicates hold: its
 * inputs become views of those samples (no copy), the per-sample contexts are those
 * samples', and its outputs are spread back to batch positions as views with holes where
 * the operator did not run. "select" merges branches into a view too. */

/* Sub-batch of `node`'s samples: their contexts and views of the node's inputs. */
static stk_status make_sub_batch(stk__gpu_batch *b, stk__node *node, const size_t *picked,
                                 size_t count, stk__gpu_batch *sub) {
  stk_pipeline *p = b->p;
  *sub = (stk__gpu_batch){p, count, NULL, NULL, node, b->stream};
  sub->samples = stk__calloc(count ? count : 1, sizeof *sub->samples, "a branch's samples");
  sub->lists = stk__calloc(p->num_edges ? p->num_edges : 1, sizeof *sub->lists, "a branch's lists");
  int *which = stk__calloc(count ? count : 1, sizeof(int), "a branch's samples");
  if (!sub->samples || !sub->lists || !which) {
    free(which);
    return STK_ERR_OUT_OF_MEMORY;
  }
  for (size_t j = 0; j < count; j++) sub->samples[j] = b->samples[picked[j]];
  stk_status st = STK_OK;
  for (int i = 0; i < node->spec->num_inputs && st == STK_OK; i++) {
    int e = node->in_edges[i];
    if (sub->lists[e]) continue; /* the same edge twice */
    st = stk__tensor_list_view(&b->lists[e], 1, which, picked, count, node->name, &sub->lists[e]);
  }
  free(which);
  return st;
}

static void free_sub_batch(stk__gpu_batch *sub) {
  for (size_t e = 0; sub->lists && e < sub->p->num_edges; e++)
    stk_tensor_list_release(sub->lists[e]);
  free(sub->lists);
  free(sub->samples);
}

/* Output k of the sub-batch spread over the whole batch (holes where it did not run). */
static stk_status spread_output(stk__gpu_batch *b, stk__gpu_batch *sub, int e, const size_t *picked,
                                size_t count) {
  int *which = stk__calloc(b->n ? b->n : 1, sizeof(int), "branch positions");
  size_t *index = stk__calloc(b->n ? b->n : 1, sizeof(size_t), "branch positions");
  stk_status st = which && index ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; st == STK_OK && i < b->n; i++) which[i] = -1;
  for (size_t j = 0; st == STK_OK && j < count; j++) which[picked[j]] = 0, index[picked[j]] = j;
  stk_tensor_list *full = NULL;
  if (st == STK_OK)
    st = stk__tensor_list_view(&sub->lists[e], 1, which, index, b->n, b->node->name, &full);
  if (st == STK_OK) {
    stk_tensor_list_release(b->lists[e]);
    b->lists[e] = full;
  }
  free(which);
  free(index);
  return st;
}

/* The output of a branch no sample of this batch takes: holes only. */
static stk_status empty_branch_output(stk__gpu_batch *b, int e) {
  stk_tensor_list *tl;
  STK_TRY(stk__tensor_list_create(&tl, b->n, 0, NULL));
  tl->absent = stk__calloc(b->n ? b->n : 1, sizeof *tl->absent, "holes");
  if (!tl->absent) {
    stk_tensor_list_release(tl);
    return STK_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < b->n; i++) tl->absent[i] = true;
  tl->storage = STK_STORAGE_DEVICE;
  tl->device_id = b->p->gpu->device;
  tl->gpu = b->p->gpu;
  stk__gpu_retain(tl->gpu);
  stk_tensor_list_release(b->lists[e]);
  b->lists[e] = tl;
  return STK_OK;
}

/* A guarded operator on the samples whose predicates hold. */
static stk_status run_guarded(stk__gpu_batch *b, stk__node *node) {
  size_t *picked = stk__calloc(b->n ? b->n : 1, sizeof(size_t), "a branch's samples");
  if (!picked) return STK_ERR_OUT_OF_MEMORY;
  size_t count = 0;
  for (size_t i = 0; i < b->n; i++)
    if (stk__guards_hold(node, &b->samples[i])) picked[count++] = i;
  stk__gpu_batch sub;
  stk_status st = make_sub_batch(b, node, picked, count, &sub);
  bool merges = (node->spec->def->schema->flags & STK_OPF_MERGES_BRANCHES) != 0;
  for (int i = 0; i < node->spec->num_inputs && st == STK_OK && !merges; i++)
    for (size_t j = 0; j < count && st == STK_OK; j++)
      if (!stk__tensor_list_has_sample(sub.lists[node->in_edges[i]], j))
        st = STK_FAIL(
            STK_ERR_INVALID_ARGUMENT,
            "'%s': input '%s' has no value for sample %lld (it is assigned only in some branches)",
            node->name, b->p->edges[node->in_edges[i]].name, (long long)sub.samples[j].ordinal);
  if (st == STK_OK && count > 0) st = node->spec->def->run_gpu(node, &sub);
  for (int k = 0; k < node->num_outputs && st == STK_OK; k++) {
    int e = node->out_edges[k];
    if (count == 0) { /* no sample takes this branch */
      st = empty_branch_output(b, e);
      continue;
    }
    if (!sub.lists[e])
      st = STK_FAIL(STK_ERR_INTERNAL, "operator '%s' produced no output %d", node->name, k);
    else
      st = spread_output(b, &sub, e, picked, count);
  }
  free_sub_batch(&sub);
  free(picked);
  return st;
}

stk_status stk__gpu_run_stage(stk__gpu_batch *b, stk__gpu_part part) {
  stk_pipeline *p = b->p;
  for (size_t o = 0; o < p->num_nodes; o++) {
    stk__node *node = &p->nodes[p->order[o]];
    if (node->spec->device == STK_DEVICE_CPU) continue;
    if ((part == STK__GPU_PART_DECODE && !node->prepares) ||
        (part == STK__GPU_PART_REST && node->prepares))
      continue;
    if (b->n == 0) { /* an empty batch (every sample skipped): empty outputs, no launch */
      for (int k = 0; k < node->num_outputs; k++)
        STK_TRY(empty_branch_output(b, node->out_edges[k]));
      continue;
    }
    b->node = node;
    int64_t t0 = stk__now_ns();
    stk_status st =
        node->spec->num_guards ? run_guarded(b, node) : node->spec->def->run_gpu(node, b);
    atomic_fetch_add_explicit(&node->time_ns, stk__now_ns() - t0, memory_order_relaxed);
    if (st != STK_OK)
      return stk__wrap(stk__wrap_operator_on(st, node->name, stk__device_name(node->spec->device)),
                       "stk_pipeline_run");
    for (int k = 0; k < node->num_outputs; k++)
      if (!b->lists[node->out_edges[k]])
        return STK_FAIL(STK_ERR_INTERNAL, "operator '%s' produced no output %d", node->name, k);
  }
  return STK_OK;
}
