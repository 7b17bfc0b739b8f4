/* Bytes in and out of the tensor world: get_property (source_info, layout), io.file.read,
 * decoders.numpy, dump_image (decoders.inflate: inflate.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/fileset.h"
#include "../io/npy.h"
#include "tensor_util.h"

static const stk_port_schema one_out[] = {{"output", "the result"}};

/* Emits `n` bytes as a 1D uint8 output. */
static stk_status emit_bytes(stk__sample *s, const void *bytes, size_t n) {
  int64_t shape[1] = {(int64_t)n};
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, 1, shape, "", &out));
  if (n) memcpy(out->data, bytes, n);
  return STK_OK;
}

static stk_status check_bytes(stk__node *node, const stk__sample *s, const stk__tensor *in) {
  if ((in->dtype != STK_DTYPE_UINT8 && in->dtype != STK_DTYPE_INT8) || in->ndim > 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the input must be a 1D tensor of bytes; got %s with %d dimensions",
                      stk_dtype_name(in->dtype), in->ndim);
  return STK_OK;
}

static size_t byte_count(const stk__tensor *in) {
  return (size_t)stk__tn_volume(in->ndim, in->shape);
}

/* ---- get_property ---- */

enum { G_KEY, G_COUNT_ };
static const stk_arg_schema get_property_args[] = {
    [G_KEY] = {.name = "key",
               .type = STK_ARG_STRING,
               .flags = STK_ARGF_REQUIRED,
               .choices = "source_info|layout",
               .doc = "source_info: the sample's origin (a file path; empty when unknown); "
                      "layout: the input's layout"},
};
STK__CHECK_ARGS(get_property_args, G_COUNT_);

static stk_status get_property_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  const char *v =
      strcmp(stk__arg_string(node, G_KEY), "layout") == 0 ? in->layout : stk__sample_source(s);
  return emit_bytes(s, v ? v : "", v ? strlen(v) : 0);
}

/* GPU: the same properties (host metadata: the list's layout, the samples' sources), as
 * device byte tensors; the input's data is not read, so nothing waits for it. */
static stk_status get_property_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  const stk_tensor_list *in = stk__gpu_input(b, 0);
  bool layout = strcmp(stk__arg_string(node, G_KEY), "layout") == 0;
  int64_t *shapes = stk__calloc(n ? n : 1, sizeof *shapes, "property sizes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) {
    const char *v = layout ? stk_tensor_list_layout(in) : stk__sample_source(stk__gpu_sample(b, i));
    shapes[i] = v ? (int64_t)strlen(v) : 0;
  }
  stk_tensor_list *out = NULL;
  stk_status st = stk__gpu_alloc_list(b, STK_DTYPE_UINT8, 1, shapes, "",
                                      stk__gpu_shapes_equal(shapes, n, 1), &out);
  stk__gpu *g = stk__gpu_device(b);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    if (shapes[i] == 0) continue;
    const char *v = layout ? stk_tensor_list_layout(in) : stk__sample_source(stk__gpu_sample(b, i));
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    char err[STK_GPU_ERRLEN] = "";
    /* a pageable source: copied before the call returns */
    st = stk__gpu_op_check(node,
                           g->api->memcpy_async(g->ctx, d.data, v, (size_t)shapes[i],
                                                stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  free(shapes);
  return stk__gpu_finish(b, NULL, false, out, st);
}

static const stk_port_schema any_in[] = {{"input", "any tensor"}};
static const stk_op_schema get_property_schema = {
    .name = "get_property",
    .doc =
        "A property of each sample as a 1D uint8 tensor of characters (DALI's get_property): "
        "its source_info (the reader's file path for it) or the input's layout. On the GPU "
        "the same bytes in device memory.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = any_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = G_COUNT_,
    .args = get_property_args,
    .gpu_check =
        "a = get_property(IN, key=\"layout\", device=@)\n"
        "b = get_property(IN, key=\"source_info\", device=@)\n"
        "return a, b",
};
const stk__op_def stk__op_get_property = {.schema = &get_property_schema,
                                          .run_sample = get_property_run,
                                          .run_gpu = get_property_run_gpu};

/* ---- io.file.read ---- */

enum { FR_NO_MMAP, FR_O_DIRECT, FR_COUNT_ };
static const stk_arg_schema file_read_args[] = {
    [FR_NO_MMAP] = {.name = "dont_use_mmap",
                    .type = STK_ARG_BOOL,
                    .default_text = "false",
                    .doc = "accepted for DALI compatibility: files are always read with pread"},
    [FR_O_DIRECT] = {.name = "use_o_direct",
                     .type = STK_ARG_BOOL,
                     .default_text = "false",
                     .doc = "accepted for DALI compatibility (ignored)"},
};
STK__CHECK_ARGS(file_read_args, FR_COUNT_);

static stk_status file_read_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  STK_TRY(check_bytes(node, s, in));
  size_t n = byte_count(in);
  char *path = stk__scratch(s, n + 1);
  if (!path) return STK_ERR_OUT_OF_MEMORY;
  memcpy(path, in->data, n);
  path[n] = '\0';
  if (strlen(path) != n)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "the path holds a NUL byte");
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return STK__SFAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, node, s,
                      "cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  stk_status st = STK_OK;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    st = STK__SFAIL(STK_ERR_IO, node, s, "'%s' is not a regular file", path);
  else if ((int64_t)sb.st_size > stk__node_max_file_bytes(node))
    st = STK__SFAIL(STK_ERR_LIMIT, node, s, "'%s' has %lld bytes, more than max_file_bytes (%lld)",
                    path, (long long)sb.st_size, (long long)stk__node_max_file_bytes(node));
  stk__tensor *out = NULL;
  int64_t shape[1] = {(int64_t)sb.st_size};
  if (st == STK_OK) st = stk__output(s, 0, STK_DTYPE_UINT8, 1, shape, "", &out);
  size_t got = 0;
  if (st == STK_OK && shape[0])
    st = stk__pread_full(fd, path, 0, out->data, (size_t)shape[0], &got);
  if (st == STK_OK && got != (size_t)shape[0])
    st = STK__SFAIL(STK_ERR_IO, node, s, "'%s' shrank while read (%zu of %lld bytes)", path, got,
                    (long long)shape[0]);
  close(fd);
  return st;
}

static const stk_port_schema path_in[] = {
    {"filepaths",
     "the path of the file, as a 1D tensor of bytes (e.g. np.frombuffer(p.encode(), "
     "np.uint8))"}};
static const stk_op_schema file_read_schema = {
    .name = "io.file.read",
    .doc =
        "Reads the file each sample names (DALI's io.file.read) into a 1D uint8 tensor of its "
        "bytes; max_file_bytes applies.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = path_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = FR_COUNT_,
    .args = file_read_args,
};
const stk__op_def stk__op_io_file_read = {.schema = &file_read_schema, .run_sample = file_read_run};

/* ---- decoders.numpy ---- */

#define NP_DTYPES "uint8|int8|uint16|int16|uint32|int32|uint64|int64|float16|float32|float64|bool"

enum { NP_DTYPE, NP_COUNT_ };
static const stk_arg_schema numpy_args[] = {
    [NP_DTYPE] = {.name = "dtype",
                  .type = STK_ARG_STRING,
                  .choices = NP_DTYPES,
                  .doc = "the expected element type: a file of another type is an error "
                         "(default: the file's)"},
};
STK__CHECK_ARGS(numpy_args, NP_COUNT_);

static stk_status numpy_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  STK_TRY(check_bytes(node, s, in));
  size_t n = byte_count(in);
  const char *src = stk__sample_source(s);
  const char *what = src && *src ? src : "the input";
  stk__npy_header h;
  stk_status st = stk__npy_parse(in->data, n, (int64_t)n, what, &h);
  if (st != STK_OK) return stk__sample_wrap(st, node, s);
  if (stk__arg_given(node, NP_DTYPE) && stk__dtype_arg(stk__arg_string(node, NP_DTYPE)) != h.dtype)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "the array holds %s, dtype says %s",
                      stk_dtype_name(h.dtype), stk__arg_string(node, NP_DTYPE));
  if ((double)h.data_bytes > (double)stk__node_max_file_bytes(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "the array has %lld bytes, more than max_file_bytes",
                      (long long)h.data_bytes);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, h.dtype, h.ndim, h.shape, "", &out));
  int64_t zero[STK_MAX_NDIM] = {0};
  if (h.data_bytes)
    stk__npy_copy_box(&h, (const uint8_t *)in->data + h.data_offset, zero, h.shape, out->data,
                      h.shape, zero);
  return STK_OK;
}

static const stk_port_schema npy_in[] = {{"input", "the bytes of a .npy file (1D uint8)"}};
static const stk_op_schema numpy_schema = {
    .name = "decoders.numpy",
    .doc =
        "Decodes the bytes of .npy files (DALI's decoders.numpy): format versions 1.0-3.0, C or "
        "Fortran order (returned in C order), numeric types in either byte order.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = npy_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = NP_COUNT_,
    .args = numpy_args,
};
const stk__op_def stk__op_decoders_numpy = {.schema = &numpy_schema, .run_sample = numpy_run};

/* ---- dump_image ---- */

enum { D_SUFFIX, D_LAYOUT, D_COUNT_ };
static const stk_arg_schema dump_args[] = {
    [D_SUFFIX] = {.name = "suffix",
                  .type = STK_ARG_STRING,
                  .default_text = "\"\"",
                  .doc = "added to the file names: dump_image<suffix>_<sample ordinal>.ppm"},
    [D_LAYOUT] = {.name = "input_layout",
                  .type = STK_ARG_STRING,
                  .default_text = "\"HWC\"",
                  .choices = "HWC|CHW",
                  .doc = "how the image is laid out"},
};
STK__CHECK_ARGS(dump_args, D_COUNT_);

/* Writes a binary PPM (3 channels) or PGM (1) of an 8-bit image. */
static stk_status write_pnm(const char *path, const uint8_t *px, int64_t h, int64_t w, int64_t c,
                            bool chw) {
  FILE *f = fopen(path, "wb");
  if (!f) return STK_FAIL(STK_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
  fprintf(f, "P%d\n%lld %lld\n255\n", c == 3 ? 6 : 5, (long long)w, (long long)h);
  for (int64_t y = 0; y < h; y++)
    for (int64_t x = 0; x < w; x++)
      for (int64_t k = 0; k < c; k++) fputc(px[chw ? (k * h + y) * w + x : (y * w + x) * c + k], f);
  bool ok = !ferror(f);
  ok = fclose(f) == 0 && ok;
  return ok ? STK_OK : STK_FAIL(STK_ERR_IO, "cannot write '%s'", path);
}

/* An image the dump can write: its height, width and channels; else an error. */
static stk_status dump_geometry(stk__node *node, const stk__sample *s, stk_dtype dtype, int ndim,
                                const int64_t *shape, int64_t *h, int64_t *w, int64_t *c) {
  bool chw = strcmp(stk__arg_string(node, D_LAYOUT), "CHW") == 0;
  *c = ndim == 3 ? shape[chw ? 0 : 2] : 1;
  if (dtype != STK_DTYPE_UINT8 || (ndim != 3 && ndim != 2) || (*c != 1 && *c != 3))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "needs a uint8 image with 1 or 3 channels; got %s with %d dimensions",
                      stk_dtype_name(dtype), ndim);
  *h = shape[chw && ndim == 3 ? 1 : 0], *w = shape[chw && ndim == 3 ? 2 : 1];
  return STK_OK;
}

/* Writes sample s's file: dump_image<suffix>_<ordinal>.ppm / .pgm. */
static stk_status dump_write(stk__node *node, const stk__sample *s, const uint8_t *px, int64_t h,
                             int64_t w, int64_t c) {
  char path[512];
  snprintf(path, sizeof path, "dump_image%s_%lld.%s", stk__arg_string(node, D_SUFFIX),
           (long long)stk__sample_ordinal(s), c == 3 ? "ppm" : "pgm");
  bool chw = strcmp(stk__arg_string(node, D_LAYOUT), "CHW") == 0;
  stk_status st = write_pnm(path, px, h, w, c, chw);
  return st == STK_OK ? STK_OK : stk__sample_wrap(st, node, s);
}

static stk_status dump_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  int64_t h, w, c;
  STK_TRY(dump_geometry(node, s, in->dtype, in->ndim, in->shape, &h, &w, &c));
  STK_TRY(dump_write(node, s, in->data, h, w, c));
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, in->dtype, in->ndim, in->shape, in->layout, &out));
  memcpy(out->data, in->data, byte_count(in));
  return STK_OK;
}

/* GPU: the batch is copied to the host in stream order, the stream is waited for (this
 * operator only: it is a debugging aid), the files written as on the CPU; the output is
 * a view of the input (no device copy). */
static stk_status dump_download(stk__node *node, stk__gpu_batch *b, stk_tensor_list *in,
                                uint8_t **host, size_t *offs) {
  size_t n = stk__gpu_batch_size(b), total = 0;
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    int64_t h, w, c;
    STK_TRY(dump_geometry(node, stk__gpu_sample(b, i), d.dtype, d.ndim, d.shape, &h, &w, &c));
    offs[i] = total;
    total += (size_t)(h * w * c);
  }
  *host = stk__calloc(total ? total : 1, 1, "dump_image's host copy");
  if (!*host) return STK_ERR_OUT_OF_MEMORY;
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    size_t bytes = (i + 1 < n ? offs[i + 1] : total) - offs[i];
    if (bytes)
      STK_TRY(stk__gpu_op_check(node,
                                g->api->memcpy_async(g->ctx, *host + offs[i], d.data, bytes,
                                                     stk__gpu_stream(b), err, sizeof err),
                                err));
  }
  return stk__gpu_op_check(node, g->api->stream_sync(g->ctx, stk__gpu_stream(b), err, sizeof err),
                           err);
}

static stk_status dump_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  uint8_t *host = NULL;
  size_t *offs = stk__calloc(n + 1, sizeof *offs, "dump_image offsets");
  stk_status st = offs ? dump_download(node, b, in, &host, offs) : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    int64_t h, w, c;
    stk__sample *s = stk__gpu_sample(b, i);
    st = dump_geometry(node, s, d.dtype, d.ndim, d.shape, &h, &w, &c);
    if (st == STK_OK) st = dump_write(node, s, host + offs[i], h, w, c);
  }
  free(host);
  free(offs);
  int ndim = stk_tensor_list_ndim(in);
  int64_t *shapes =
      st == STK_OK ? stk__calloc(n * (size_t)ndim + 1, sizeof *shapes, "shapes") : NULL;
  if (st == STK_OK && !shapes) st = STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(in, i, &d);
    memcpy(shapes + i * (size_t)ndim, d.shape, sizeof *shapes * (size_t)ndim);
  }
  if (st == STK_OK)
    st = stk__gpu_reshape_view(in, stk_tensor_list_dtype(in), ndim, shapes,
                               stk_tensor_list_layout(in), &out);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_port_schema dump_in[] = {{"input", "a uint8 image (HWC or CHW, 1 or 3 channels)"}};
static const stk_op_schema dump_schema = {
    .name = "dump_image",
    .doc =
        "Writes each image to the working directory as a binary PPM/PGM named "
        "dump_image<suffix>_<sample ordinal>, and passes it on unchanged (DALI's "
        "dump_image; a debugging aid). On the GPU each batch is copied to the host and "
        "the stream waited for before the files are written; the output is the input.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = dump_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = D_COUNT_,
    .args = dump_args,
    /* the files land in the working directory (both copies write the same names: the
     * check compares the images passed through) */
    .gpu_check = "return dump_image(IN, suffix=\"_gpu_check\", device=@)",
};
const stk__op_def stk__op_dump_image = {
    .schema = &dump_schema, .run_sample = dump_run, .run_gpu = dump_run_gpu};
