/* Bytes in and out of the tensor world: get_property (source_info, layout), io.file.read,
 * decoders.numpy, decoders.inflate (and its old name experimental.inflate), dump_image. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

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

static const stk_port_schema any_in[] = {{"input", "any tensor"}};
static const stk_op_schema get_property_schema = {
    .name = "get_property",
    .doc =
        "A property of each sample as a 1D uint8 tensor of characters (DALI's get_property): "
        "its source_info (the reader's file path for it) or the input's layout.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = any_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = G_COUNT_,
    .args = get_property_args,
};
const stk__op_def stk__op_get_property = {.schema = &get_property_schema,
                                          .run_sample = get_property_run};

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

/* ---- decoders.inflate ---- */

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

/* LZ4 block format: sequences of (token, literals, 2-byte offset, match). The last
 * sequence has literals only. Returns the bytes written, or -1 on malformed input or
 * output overflow. */
static int64_t lz4_block_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
  size_t i = 0, o = 0;
  while (i < n) {
    unsigned token = src[i++];
    size_t lit = token >> 4;
    if (lit == 15) {
      unsigned b;
      do {
        if (i >= n) return -1;
        b = src[i++];
        lit += b;
      } while (b == 255);
    }
    if (lit > n - i || lit > cap - o) return -1;
    memcpy(dst + o, src + i, lit);
    i += lit, o += lit;
    if (i == n) return (int64_t)o; /* the last sequence */
    if (n - i < 2) return -1;
    size_t off = (size_t)src[i] | (size_t)src[i + 1] << 8;
    i += 2;
    if (off == 0 || off > o) return -1;
    size_t len = (token & 15u) + 4;
    if ((token & 15u) == 15) {
      unsigned b;
      do {
        if (i >= n) return -1;
        b = src[i++];
        len += b;
      } while (b == 255);
    }
    if (len > cap - o) return -1;
    for (size_t k = 0; k < len; k++, o++) dst[o] = dst[o - off]; /* may overlap: byte-wise */
  }
  return (int64_t)o;
}

/* DEFLATE through zlib: zlib or gzip headers detected, else raw deflate. */
static int64_t deflate_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
  bool wrapped = n >= 2 && ((src[0] == 0x1f && src[1] == 0x8b) ||
                            ((src[0] & 0x0f) == 8 && ((src[0] << 8) | src[1]) % 31 == 0));
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, wrapped ? 15 + 32 : -15) != Z_OK) return -1;
  z.next_in = (Bytef *)src, z.avail_in = (uInt)n;
  z.next_out = dst, z.avail_out = (uInt)cap;
  int rc = inflate(&z, Z_FINISH);
  int64_t out = (int64_t)z.total_out;
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : -1;
}

/* The chunks of one sample: count, offsets and sizes (scratch). */
static stk_status inflate_chunks(stk__node *node, stk__sample *s, size_t n, int64_t **off,
                                 int64_t **size, size_t *count) {
  const int64_t *o = NULL, *z = NULL;
  size_t no = stk__arg_given(node, I_OFFSETS) ? stk__arg_ints(node, s, I_OFFSETS, &o) : 0;
  size_t nz = stk__arg_given(node, I_SIZES) ? stk__arg_ints(node, s, I_SIZES, &z) : 0;
  if (no && nz && no != nz)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "chunk_offsets has %zu entries and chunk_sizes %zu", no, nz);
  size_t c = no ? no : nz ? nz : 1;
  *off = stk__scratch(s, c * sizeof(int64_t)), *size = stk__scratch(s, c * sizeof(int64_t));
  if (!*off || !*size) return STK_ERR_OUT_OF_MEMORY;
  int64_t at = 0;
  for (size_t k = 0; k < c; k++) {
    (*off)[k] = no ? o[k] : at;
    (*size)[k] = nz ? z[k] : no ? (k + 1 < no ? o[k + 1] : (int64_t)n) - o[k] : (int64_t)n;
    bool bad = (*off)[k] < 0 || (*size)[k] < 0 || (*off)[k] > (int64_t)n ||
               (*size)[k] > (int64_t)n - (*off)[k]; /* no overflow on hostile values */
    at = bad ? 0 : (*off)[k] + (*size)[k];
    if (bad)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "chunk %zu [%lld, +%lld) leaves the %zu input bytes", k,
                        (long long)(*off)[k], (long long)(*size)[k], n);
  }
  *count = c;
  return STK_OK;
}

static stk_status inflate_shape(stk__node *node, stk__sample *s, size_t chunks, bool chunked,
                                int *ndim, int64_t *shape, char *layout) {
  const int64_t *v;
  size_t nd = stk__arg_ints(node, s, I_SHAPE, &v);
  if (nd + chunked > STK_MAX_NDIM)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "shape has too many dimensions");
  *ndim = 0;
  if (chunked) shape[(*ndim)++] = (int64_t)chunks;
  for (size_t d = 0; d < nd; d++) {
    if (v[d] < 0)
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "shape[%zu] = %lld is negative", d,
                        (long long)v[d]);
    shape[(*ndim)++] = v[d];
  }
  const char *l = stk__arg_string(node, I_LAYOUT), *f = stk__arg_string(node, I_SEQ_NAME);
  if (*l && strlen(l) != nd)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "layout = \"%s\" does not match shape's %zu dimensions", l, nd);
  snprintf(layout, STK_MAX_LAYOUT + 1, "%s%s", *l && chunked ? f : "", l);
  return STK_OK;
}

static stk_status inflate_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  STK_TRY(check_bytes(node, s, in));
  size_t n = byte_count(in), chunks = 0;
  int64_t *off = NULL, *size = NULL;
  STK_TRY(inflate_chunks(node, s, n, &off, &size, &chunks));
  bool chunked = stk__arg_given(node, I_OFFSETS) || stk__arg_given(node, I_SIZES);
  int ndim = 0;
  int64_t shape[STK_MAX_NDIM];
  char layout[STK_MAX_LAYOUT + 1];
  STK_TRY(inflate_shape(node, s, chunks, chunked, &ndim, shape, layout));
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, I_DTYPE));
  size_t chunk_bytes = (size_t)stk__tn_volume(ndim - chunked, shape + chunked) * stk_dtype_size(dt);
  if ((double)chunk_bytes * (double)chunks > (double)stk__node_max_file_bytes(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "the inflated sample exceeds max_file_bytes");
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, dt, ndim, shape, layout, &out));
  bool lz4 = strcmp(stk__arg_string(node, I_ALGORITHM), "LZ4") == 0;
  for (size_t k = 0; k < chunks; k++) {
    const uint8_t *src = (const uint8_t *)in->data + off[k];
    uint8_t *dst = (uint8_t *)out->data + k * chunk_bytes;
    int64_t got = lz4 ? lz4_block_decode(src, (size_t)size[k], dst, chunk_bytes)
                      : deflate_decode(src, (size_t)size[k], dst, chunk_bytes);
    if (got != (int64_t)chunk_bytes)
      return STK__SFAIL(STK_ERR_DECODE, node, s,
                        "chunk %zu is not a valid %s stream inflating to exactly %zu bytes", k,
                        lz4 ? "LZ4 block" : "DEFLATE", chunk_bytes);
  }
  return STK_OK;
}

static const stk_port_schema inflate_in[] = {{"input", "compressed bytes (1D uint8)"}};
#define INFLATE_DOC                                                                             \
  "Decompresses each sample (DALI's decoders.inflate): one chunk, or several (chunk_offsets / " \
  "chunk_sizes) that each inflate to `shape` and stack along a new outer axis. LZ4 blocks as "  \
  "DALI; DEFLATE (zlib) is a stoker extension. CPU only (DALI runs it on the GPU)."
static const stk_op_schema inflate_schema = {
    .name = "decoders.inflate",
    .doc = INFLATE_DOC,
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = inflate_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = I_COUNT_,
    .args = inflate_args,
};
const stk__op_def stk__op_decoders_inflate = {.schema = &inflate_schema, .run_sample = inflate_run};
static const stk_op_schema exp_inflate_schema = {
    .name = "experimental.inflate",
    .doc = "The former name of decoders.inflate. " INFLATE_DOC,
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = inflate_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = I_COUNT_,
    .args = inflate_args,
};
const stk__op_def stk__op_experimental_inflate = {.schema = &exp_inflate_schema,
                                                  .run_sample = inflate_run};

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

static stk_status dump_run(stk__node *node, stk__sample *s) {
  const stk__tensor *in = stk__input(s, 0);
  bool chw = strcmp(stk__arg_string(node, D_LAYOUT), "CHW") == 0;
  int64_t c = in->ndim == 3 ? in->shape[chw ? 0 : 2] : 1;
  if (in->dtype != STK_DTYPE_UINT8 || (in->ndim != 3 && in->ndim != 2) || (c != 1 && c != 3))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "needs a uint8 image with 1 or 3 channels; got %s with %d dimensions",
                      stk_dtype_name(in->dtype), in->ndim);
  int64_t h = in->shape[chw && in->ndim == 3 ? 1 : 0], w = in->shape[chw && in->ndim == 3 ? 2 : 1];
  char path[512];
  snprintf(path, sizeof path, "dump_image%s_%lld.%s", stk__arg_string(node, D_SUFFIX),
           (long long)stk__sample_ordinal(s), c == 3 ? "ppm" : "pgm");
  stk_status st = write_pnm(path, in->data, h, w, c, chw);
  if (st != STK_OK) return stk__sample_wrap(st, node, s);
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, in->dtype, in->ndim, in->shape, in->layout, &out));
  memcpy(out->data, in->data, byte_count(in));
  return STK_OK;
}

static const stk_port_schema dump_in[] = {{"input", "a uint8 image (HWC or CHW, 1 or 3 channels)"}};
static const stk_op_schema dump_schema = {
    .name = "dump_image",
    .doc =
        "Writes each image to the working directory as a binary PPM/PGM named "
        "dump_image<suffix>_<sample ordinal>, and passes it on unchanged (DALI's "
        "dump_image; a debugging aid).",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = dump_in,
    .num_outputs = 1,
    .outputs = one_out,
    .num_args = D_COUNT_,
    .args = dump_args,
};
const stk__op_def stk__op_dump_image = {.schema = &dump_schema, .run_sample = dump_run};
