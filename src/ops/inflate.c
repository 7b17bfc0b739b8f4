/* decoders.inflate (and its former name experimental.inflate): LZ4 blocks or DEFLATE
 * streams, one chunk or several per sample, on the CPU and the GPU. The LZ4 decoder is
 * src/shared/lz4.h on both devices; DEFLATE runs through zlib on the CPU and through
 * src/shared/inflate.h (stk_inflate_any, tested against zlib) on the GPU. */
#include <stdlib.h>
#include <string.h>

#include "../codecs/zlib_any.h"
#include "../shared/lz4.h"
#include "tensor_util.h"

#define NP_DTYPES "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool"

enum { I_ALGORITHM, I_SHAPE, I_OFFSETS, I_SIZES, I_DTYPE, I_LAYOUT, I_SEQ_NAME, I_CHECK, I_COUNT_ };
static const stk_arg_schema inflate_args[] = {
    [I_ALGORITHM] = {.name = "algorithm",
                     .type = STK_ARG_STRING,
                     .default_text = "\"LZ4\"",
                     .choices = "LZ4|DEFLATE",
                     .doc = "LZ4 (raw LZ4 blocks, as DALI) or DEFLATE (zlib or gzip streams, "
                            "or raw deflate; a stoker extension)"},
    [I_SHAPE] = {.name = "shape",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_REQUIRED | STK_ARGF_PER_SAMPLE,
                 .doc = "the shape of one inflated chunk"},
    [I_OFFSETS] = {.name = "chunk_offsets",
                   .type = STK_ARG_INTS,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "where each chunk starts in the input (sizes: up to the next one)"},
    [I_SIZES] = {.name = "chunk_sizes",
                 .type = STK_ARG_INTS,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .doc = "the compressed size of each chunk (offsets: their running sum)"},
    [I_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"uint8\"",
                 .choices = NP_DTYPES,
                 .doc = "the type of the inflated data"},
    [I_LAYOUT] = {.name = "layout",
                  .type = STK_ARG_STRING,
                  .default_text = "\"\"",
                  .doc = "the layout of one chunk"},
    [I_SEQ_NAME] = {.name = "sequence_axis_name",
                    .type = STK_ARG_STRING,
                    .default_text = "\"F\"",
                    .doc = "the letter of the chunk axis, when chunks are given and the layout "
                           "is"},
    [I_CHECK] = {.name = "check_output_size",
                 .type = STK_ARG_BOOL,
                 .default_text = "false",
                 .doc = "accepted for DALI compatibility: stoker always checks that each chunk "
                        "fills exactly its shape"},
};
STK__CHECK_ARGS(inflate_args, I_COUNT_);

static bool is_lz4(const stk__node *node) {
  return strcmp(stk__arg_string(node, I_ALGORITHM), "LZ4") == 0;
}

static bool bytes_ok(stk_dtype dtype, int ndim) {
  return (dtype == STK_DTYPE_UINT8 || dtype == STK_DTYPE_INT8) && ndim <= 1;
}

static stk_status bytes_error(stk__node *node, const stk__sample *s, stk_dtype dtype, int ndim) {
  return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                    "the input must be a 1D tensor of bytes; got %s with %d dimensions",
                    stk_dtype_name(dtype), ndim);
}

static stk_status chunk_error(stk__node *node, const stk__sample *s, size_t k, size_t bytes) {
  return STK__SFAIL(STK_ERR_DECODE, node, s,
                    "chunk %zu is not a valid %s stream inflating to exactly %zu bytes", k,
                    is_lz4(node) ? "LZ4 block" : "DEFLATE", bytes);
}

/* ---- the plan of one sample (both devices) ---- */

/* The number of chunks of a sample. */
static stk_status chunk_count(stk__node *node, stk__sample *s, size_t *count) {
  const int64_t *o = NULL, *z = NULL;
  size_t no = stk__arg_given(node, I_OFFSETS) ? stk__arg_ints(node, s, I_OFFSETS, &o) : 0;
  size_t nz = stk__arg_given(node, I_SIZES) ? stk__arg_ints(node, s, I_SIZES, &z) : 0;
  if (no && nz && no != nz)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "chunk_offsets has %zu entries and chunk_sizes %zu", no, nz);
  *count = no ? no : nz ? nz : 1;
  return STK_OK;
}

/* The offsets and sizes of the c chunks of a sample of n bytes (the caller's arrays). */
static stk_status chunk_fill(stk__node *node, stk__sample *s, size_t n, size_t c, int64_t *off,
                             int64_t *size) {
  const int64_t *o = NULL, *z = NULL;
  size_t no = stk__arg_given(node, I_OFFSETS) ? stk__arg_ints(node, s, I_OFFSETS, &o) : 0;
  size_t nz = stk__arg_given(node, I_SIZES) ? stk__arg_ints(node, s, I_SIZES, &z) : 0;
  int64_t at = 0;
  for (size_t k = 0; k < c; k++) {
    off[k] = no ? o[k] : at;
    size[k] = nz ? z[k] : no ? (k + 1 < no ? o[k + 1] : (int64_t)n) - o[k] : (int64_t)n;
    bool bad = off[k] < 0 || size[k] < 0 || off[k] > (int64_t)n ||
               size[k] > (int64_t)n - off[k]; /* no overflow on hostile values */
    if (bad)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "chunk %zu [%lld, +%lld) leaves the %zu input bytes", k, (long long)off[k],
                        (long long)size[k], n);
    at = off[k] + size[k];
  }
  return STK_OK;
}

/* A sample's output: its shape, layout and type, and the bytes of one chunk. */
typedef struct {
  size_t chunks, chunk_bytes;
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  char layout[STK_MAX_LAYOUT + 1];
  stk_dtype dtype;
} inflate_out;

static stk_status plan_output(stk__node *node, stk__sample *s, size_t chunks, inflate_out *p) {
  bool chunked = stk__arg_given(node, I_OFFSETS) || stk__arg_given(node, I_SIZES);
  const int64_t *v;
  size_t nd = stk__arg_ints(node, s, I_SHAPE, &v);
  if (nd + chunked > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "shape has too many dimensions");
  p->chunks = chunks;
  p->ndim = 0;
  if (chunked) p->shape[p->ndim++] = (int64_t)chunks;
  for (size_t d = 0; d < nd; d++) {
    if (v[d] < 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "shape[%zu] = %lld is negative", d,
                        (long long)v[d]);
    p->shape[p->ndim++] = v[d];
  }
  const char *l = stk__arg_string(node, I_LAYOUT), *f = stk__arg_string(node, I_SEQ_NAME);
  if (*l && strlen(l) != nd)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "layout = \"%s\" does not match shape's %zu dimensions", l, nd);
  snprintf(p->layout, sizeof p->layout, "%s%s", *l && chunked ? f : "", l);
  p->dtype = stk__dtype_arg(stk__arg_string(node, I_DTYPE));
  p->chunk_bytes =
      (size_t)stk__tn_volume(p->ndim - chunked, p->shape + chunked) * stk_dtype_size(p->dtype);
  if ((double)p->chunk_bytes * (double)chunks > (double)stk__node_max_file_bytes(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "the inflated sample exceeds max_file_bytes");
  return STK_OK;
}

/* ---- CPU ---- */

static stk_status inflate_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  if (!bytes_ok(in->dtype, in->ndim)) return bytes_error(node, s, in->dtype, in->ndim);
  size_t n = (size_t)stk__tn_volume(in->ndim, in->shape), chunks = 0;
  STK_TRY(chunk_count(node, s, &chunks));
  int64_t *off = stk__scratch(s, chunks * sizeof(int64_t));
  int64_t *size = stk__scratch(s, chunks * sizeof(int64_t));
  if (!off || !size) return STK_ERR_OUT_OF_MEMORY;
  STK_TRY(chunk_fill(node, s, n, chunks, off, size));
  inflate_out p;
  STK_TRY(plan_output(node, s, chunks, &p));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, p.dtype, p.ndim, p.shape, p.layout, &out));
  bool lz4 = is_lz4(node);
  for (size_t k = 0; k < chunks; k++) {
    const uint8_t *src = (const uint8_t *)in->data + off[k];
    uint8_t *dst = (uint8_t *)out->data + k * p.chunk_bytes;
    int64_t got = lz4 ? stk_lz4_block_decode(src, (size_t)size[k], dst, p.chunk_bytes)
                      : stk__zlib_inflate_any(src, (size_t)size[k], dst, p.chunk_bytes);
    if (got != (int64_t)p.chunk_bytes) return chunk_error(node, s, k, p.chunk_bytes);
  }
  return STK_OK;
}

/* ---- GPU ---- */

/* The batch's plan: each sample's output and its chunks (sample i's start at first[i]). */
typedef struct {
  inflate_out *out;
  size_t *first;
  int64_t *off, *size;
  size_t total;
} inflate_batch;

static void batch_free(inflate_batch *B) {
  free(B->out);
  free(B->first);
  free(B->off);
  free(B->size);
}

/* Appends room for c more chunks. */
static stk_status batch_grow(inflate_batch *B, size_t c) {
  int64_t *o = realloc(B->off, (B->total + c) * sizeof *o);
  if (o) B->off = o;
  int64_t *z = realloc(B->size, (B->total + c) * sizeof *z);
  if (z) B->size = z;
  return o && z ? STK_OK : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for an inflate plan");
}

static stk_status plan_batch(stk__node *node, stk__gpu_batch *b, stk_tensor_list *in,
                             inflate_batch *B) {
  size_t n = stk__gpu_batch_size(b);
  B->out = stk__calloc(n ? n : 1, sizeof *B->out, "an inflate plan");
  B->first = stk__calloc(n + 1, sizeof *B->first, "an inflate plan");
  if (!B->out || !B->first) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) {
    stk__sample *s = stk__gpu_sample(b, i);
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    if (!bytes_ok(d.dtype, d.ndim)) return bytes_error(node, s, d.dtype, d.ndim);
    size_t bytes = (size_t)stk__tn_volume(d.ndim, d.shape), c = 0;
    STK_TRY(chunk_count(node, s, &c));
    STK_TRY(batch_grow(B, c));
    STK_TRY(chunk_fill(node, s, bytes, c, B->off + B->total, B->size + B->total));
    STK_TRY(plan_output(node, s, c, &B->out[i]));
    if (B->out[i].ndim != B->out[0].ndim)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "shape has %d dimensions here and %d in sample 0: on the GPU every "
                        "sample of a batch needs the same number",
                        B->out[i].ndim, B->out[0].ndim);
    B->first[i] = B->total;
    B->total += c;
  }
  B->first[n] = B->total;
  return STK_OK;
}

static stk_status alloc_output(stk__gpu_batch *b, const inflate_batch *B, stk_tensor_list **out) {
  size_t n = stk__gpu_batch_size(b);
  int ndim = n ? B->out[0].ndim : 1;
  int64_t *shapes = stk__calloc(n * (size_t)(ndim ? ndim : 1) + 1, sizeof *shapes, "shapes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++)
    memcpy(shapes + i * (size_t)ndim, B->out[i].shape, sizeof *shapes * (size_t)ndim);
  stk_status st =
      stk__gpu_alloc_list(b, n ? B->out[0].dtype : STK_DTYPE_UINT8, ndim, shapes,
                          n ? B->out[0].layout : "", stk__gpu_shapes_equal(shapes, n, ndim), out);
  free(shapes);
  return st;
}

/* One launch over every chunk of the batch; a failed chunk names its sample. */
static stk_status launch_chunks(stk__node *node, stk__gpu_batch *b, stk_tensor_list *in,
                                stk_tensor_list *out, const inflate_batch *B) {
  size_t n = stk__gpu_batch_size(b);
  if (B->total > (size_t)INT32_MAX)
    return STK_FAIL(STK_ERR_LIMIT, "%s: more than 2^31 chunks in a batch", stk__node_name(node));
  stk_gpu_inflate_sample *c = stk__calloc(B->total + 1, sizeof *c, "an inflate plan");
  int *status = stk__calloc(B->total + 1, sizeof *status, "inflate statuses");
  stk_status st = c && status ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc src, dst;
    stk_tensor_list_sample(in, i, &src);
    stk_tensor_list_sample(out, i, &dst);
    const inflate_out *p = &B->out[i];
    for (size_t k = 0; k < p->chunks; k++) {
      size_t j = B->first[i] + k;
      c[j] = (stk_gpu_inflate_sample){(const uint8_t *)src.data + B->off[j], (uint64_t)B->size[j],
                                      (uint8_t *)dst.data + k * p->chunk_bytes, p->chunk_bytes};
    }
  }
  if (st == STK_OK) {
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    stk_gpu_inflate_args a = {is_lz4(node) ? STK_GPU_INFLATE_LZ4 : STK_GPU_INFLATE_DEFLATE, status};
    st = stk__gpu_op_check(node,
                           stk_gpu_run_inflate(g->api, g->ctx, (int)B->total, c, &a,
                                               stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  for (size_t i = 0; i < n && st == STK_OK; i++)
    for (size_t j = B->first[i]; j < B->first[i + 1]; j++)
      if (status[j] != STK_GPU_DECODE_OK) {
        st = chunk_error(node, stk__gpu_sample(b, i), j - B->first[i], B->out[i].chunk_bytes);
        break;
      }
  free(c);
  free(status);
  return st;
}

/* The compressed input lives on the device (DALI's rule; a CPU input is uploaded); the
 * chunk arguments are read on the host. */
static stk_status inflate_run_gpu(stk__node *node, stk__gpu_batch *b) {
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_INFLATE));
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  inflate_batch B = {0};
  stk_status st = plan_batch(node, b, in, &B);
  if (st == STK_OK) st = alloc_output(b, &B, &out);
  if (st == STK_OK) st = launch_chunks(node, b, in, out, &B);
  batch_free(&B);
  return stk__gpu_finish(b, in, owned, out, st);
}

/* ---- schemas ---- */

static const stk_port_schema inflate_in[] = {{"input", "compressed bytes (1D uint8)"}};
static const stk_port_schema one_out[] = {{"output", "the result"}};
#define INFLATE_DOC                                                                             \
  "Decompresses each sample (DALI's decoders.inflate): one chunk, or several (chunk_offsets / " \
  "chunk_sizes) that each inflate to `shape` and stack along a new outer axis. LZ4 blocks as "  \
  "DALI; DEFLATE (zlib, gzip or raw) is a stoker extension. On the GPU (DALI's device) the "    \
  "compressed bytes are a GPU input (a CPU input is uploaded), each chunk is inflated by one "  \
  "thread, and every sample of a batch needs the same number of output dimensions."
/* Dense photos as stored DEFLATE blocks: the 5-byte raw-deflate header of one final
 * stored block of 57600 bytes (LEN 0xE100, NLEN its complement) before each photo. */
#define INFLATE_CHECK(op)                                                  \
  "# resize=120x160\n"                                                     \
  "flat = reshape(IN, shape=[57600], layout=\"\", device=@)\n"             \
  "hd = constant(idata=[1, 0, 225, 255, 30], dtype=\"uint8\", device=@)\n" \
  "z = cat(hd, flat, axis=0, device=@)\n"                                  \
  "return " op                                                             \
  "(z, shape=[120, 160, 3], layout=\"HWC\", algorithm=\"DEFLATE\", "       \
  "device=@)"
static const stk_op_schema inflate_schema = {
    .name = "decoders.inflate",
    .doc = INFLATE_DOC,
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = inflate_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = I_COUNT_,
    .args = inflate_args,
    .gpu_check = INFLATE_CHECK("decoders.inflate"),
};
const stk__op_def stk__op_decoders_inflate = {
    .schema = &inflate_schema, .run_sample = inflate_run, .run_gpu = inflate_run_gpu};
static const stk_op_schema exp_inflate_schema = {
    .name = "experimental.inflate",
    .doc = "The former name of decoders.inflate. " INFLATE_DOC,
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = inflate_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = I_COUNT_,
    .args = inflate_args,
    .gpu_check = INFLATE_CHECK("experimental.inflate"),
};
const stk__op_def stk__op_experimental_inflate = {
    .schema = &exp_inflate_schema, .run_sample = inflate_run, .run_gpu = inflate_run_gpu};
