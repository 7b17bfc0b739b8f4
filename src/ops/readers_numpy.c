/* readers.numpy: DALI's NumPy reader. The file list is built at build time (a tree of
 * files matching file_filter, a list file, or explicit files); each worker maps its
 * file, parses the .npy header (io/npy.c) and copies the array, or a region of it, into
 * the output in C order and host byte order. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/fileset.h"
#include "../io/remote.h"
#include "../io/file_list.h"
#include "../io/npy.h"
#include "reader_common.h"

enum {
  A_FILE_ROOT,
  A_FILE_LIST,
  A_FILES,
  A_FILE_FILTER,
  A_CASE_SENSITIVE_FILTER,
  A_ROI_START,
  A_ROI_END,
  A_ROI_SHAPE,
  A_ROI_AXES,
  A_OUT_OF_BOUNDS,
  A_FILL_VALUE,
  A_USE_O_DIRECT,
  A_REL_ROI_START,
  A_REL_ROI_END,
  A_REL_ROI_SHAPE,
  A_CACHE_HEADER,
  A_REGISTER_BUFFERS,
  A_COMMON,
  A_REMOTE = A_COMMON + STK__RA_COUNT,
};

static const stk_arg_schema npy_args[] = {
    [A_FILE_ROOT] =
        {.name = "file_root",
         .type = STK_ARG_STRING,
         .doc = "Alone: a directory searched recursively (files directly in it included) for files "
                "matching file_filter, sorted by relative path. With file_list or files: the "
                "directory "
                "their paths are relative to. May be an s3:// prefix (listed) or an http(s):// URL "
                "(with files)."},
    [A_FILE_LIST] =
        {.name = "file_list",
         .type = STK_ARG_STRING,
         .doc = "A text file with one path per line ('#' comments and blank lines skipped)."},
    [A_FILES] = {.name = "files",
                 .type = STK_ARG_STRINGS,
                 .doc = "Paths of the .npy files to read."},
    [A_FILE_FILTER] = {.name = "file_filter",
                       .type = STK_ARG_STRING,
                       .default_text = "\"*.npy\"",
                       .doc = "fnmatch pattern selecting files when searching file_root."},
    [A_CASE_SENSITIVE_FILTER] = {.name = "case_sensitive_filter",
                                 .type = STK_ARG_BOOL,
                                 .default_text = "false",
                                 .doc = "Match file_filter case-sensitively."},
    [A_ROI_START] =
        {.name = "roi_start",
         .type = STK_ARG_INTS,
         .doc = "Start of the region to read, in elements, per axis of roi_axes (default 0)."},
    [A_ROI_END] =
        {.name = "roi_end",
         .type = STK_ARG_INTS,
         .doc = "End (exclusive) of the region, per axis of roi_axes (default: the extent)."},
    [A_ROI_SHAPE] = {.name = "roi_shape",
                     .type = STK_ARG_INTS,
                     .doc = "Extent of the region per axis of roi_axes (instead of roi_end)."},
    [A_ROI_AXES] = {.name = "roi_axes",
                    .type = STK_ARG_INTS,
                    .doc = "The axes the roi_* arguments refer to; all axes in order when absent."},
    [A_OUT_OF_BOUNDS] =
        {.name = "out_of_bounds_policy",
         .type = STK_ARG_STRING,
         .default_text = "\"error\"",
         .choices = "error|trim_to_shape|pad",
         .doc = "A region reaching outside the array: fail, trim it to the array, or pad it with "
                "fill_value."},
    [A_FILL_VALUE] = {.name = "fill_value",
                      .type = STK_ARG_FLOAT,
                      .default_text = "0",
                      .doc = "Value of padded elements."},
    [A_USE_O_DIRECT] = {.name = "use_o_direct",
                        .type = STK_ARG_BOOL,
                        .default_text = "false",
                        .doc = STK__READER_COMPAT},
    [A_REL_ROI_START] = {.name = "rel_roi_start",
                         .type = STK_ARG_FLOATS,
                         .doc = "roi_start as fractions of the extents: round(f * extent) (in "
                                "float32, half away from zero, as DALI); excludes roi_start"},
    [A_REL_ROI_END] = {.name = "rel_roi_end",
                       .type = STK_ARG_FLOATS,
                       .doc = "roi_end as fractions of the extents, rounded as rel_roi_start"},
    [A_REL_ROI_SHAPE] = {.name = "rel_roi_shape",
                         .type = STK_ARG_FLOATS,
                         .doc = "roi_shape as fractions: end = start + round(f * extent); one of "
                                "roi_end, roi_shape, rel_roi_end and rel_roi_shape at most"},
    [A_CACHE_HEADER] = {.name = "cache_header_information",
                        .type = STK_ARG_BOOL,
                        .default_text = "false",
                        .doc = STK__READER_COMPAT},
    [A_REGISTER_BUFFERS] = {.name = "register_buffers",
                            .type = STK_ARG_BOOL,
                            .default_text = "true",
                            .doc = STK__READER_COMPAT},
    [A_COMMON] = STK__READER_COMMON_ARGS,
    [A_REMOTE] = STK__READER_REMOTE_ARGS,
};
STK__CHECK_ARGS(npy_args, A_REMOTE + STK__RR_REQUEST_COUNT);

static const stk_port_schema npy_outputs[] = {
    {"data", "the array (or its region) in C order and host byte order, with its dtype"},
};

enum { OOB_ERROR, OOB_TRIM, OOB_PAD };

typedef struct {
  stk__reader_base base; /* first: the shared reader hooks reach the sampler through it */
  stk__file_list files;
  bool roi;
  int oob;
  double fill;
  stk__remote_opts remote; /* the remote_* arguments */
} npy_state;

static void npy_destroy(stk__node *node) {
  npy_state *r = *stk__node_state(node);
  if (!r) return;
  stk__file_list_free(&r->files);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

static stk_status build_list(stk__node *node, stk__file_list *out) {
  bool root = stk__arg_given(node, A_FILE_ROOT), list = stk__arg_given(node, A_FILE_LIST);
  bool files = stk__arg_given(node, A_FILES);
  const char *name = stk__node_name(node);
  if (list && files)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: give file_list or files, not both", name);
  if (!root && !list && !files)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: no data source: give file_root, file_list or files", name);
  const char *dir = root ? stk__arg_string(node, A_FILE_ROOT) : NULL;
  stk_status st;
  if (list) {
    st = stk__file_list_parse_paths(out, stk__arg_string(node, A_FILE_LIST), dir);
  } else if (files) {
    const char *const *paths;
    size_t n = stk__arg_strings(node, A_FILES, &paths);
    st = stk__file_list_from_files(out, dir, paths, n, NULL, 0, name);
  } else {
    const char *filter = stk__arg_string(node, A_FILE_FILTER);
    st = stk__file_list_scan_tree(out, dir, &filter, 1,
                                  stk__arg_bool(node, NULL, A_CASE_SENSITIVE_FILTER));
  }
  return st == STK_OK ? STK_OK : stk__wrap(st, "%s", name);
}

static stk_status npy_init(stk__node *node) {
  npy_state *r = stk__calloc(1, sizeof *r, "a NumPy reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  const char *oob = stk__arg_string(node, A_OUT_OF_BOUNDS);
  r->oob = strcmp(oob, "pad") == 0             ? OOB_PAD
           : strcmp(oob, "trim_to_shape") == 0 ? OOB_TRIM
                                               : OOB_ERROR;
  r->fill = stk__arg_float(node, NULL, A_FILL_VALUE);
  int ends = stk__arg_given(node, A_ROI_END) + stk__arg_given(node, A_ROI_SHAPE) +
             stk__arg_given(node, A_REL_ROI_END) + stk__arg_given(node, A_REL_ROI_SHAPE);
  bool starts = stk__arg_given(node, A_ROI_START) || stk__arg_given(node, A_REL_ROI_START);
  r->roi = starts || ends > 0;
  stk_status st = STK_OK;
  if (ends > 1)
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                  "%s: roi_end, roi_shape, rel_roi_end and rel_roi_shape are mutually exclusive",
                  stk__node_name(node));
  if (stk__arg_given(node, A_ROI_START) && stk__arg_given(node, A_REL_ROI_START))
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                  "%s: roi_start and rel_roi_start are mutually exclusive (as in DALI)",
                  stk__node_name(node));
  stk__reader_remote_opts(node, A_REMOTE, false, &r->remote);
  const stk__remote_opts *prev = stk__remote_use(&r->remote); /* listings, list files */
  if (st == STK_OK) st = build_list(node, &r->files);
  stk__remote_use(prev);
  if (st == STK_OK)
    st = stk__reader_sampler(node, A_COMMON, r->files.count, NULL, 0, &r->base.sampler);
  if (st != STK_OK) npy_destroy(node);
  return st;
}

/* ---- regions ---- */

typedef struct {
  int64_t start[STK_MAX_NDIM], end[STK_MAX_NDIM]; /* requested, may exceed the array */
} region;

/* A relative position in elements: f * extent in float32, rounded half away from zero
 * (DALI's arithmetic: 0.45 of 10 is 4.5f, hence 5). */
static int64_t rel_pos(double f, int64_t extent) {
  float v = (float)f * (float)extent;
  if (!(fabsf(v) < 9.0e18f)) return v < 0 ? INT64_MIN / 2 : INT64_MAX / 2;
  return (int64_t)roundf(v);
}

/* The values of roi argument `abs_arg` or its relative form `rel_arg` for the `n` roi
 * axes of the array (`h`), in elements: out[i] for axis `ax[i]`. *given: either was set. */
static stk_status roi_values(stk__node *node, const stk__npy_header *h, const char *path,
                             int abs_arg, int rel_arg, const int64_t *ax, size_t n, int64_t *out,
                             bool *given) {
  *given = true;
  size_t count;
  if (stk__arg_given(node, abs_arg)) {
    const int64_t *v;
    count = stk__arg_ints(node, NULL, abs_arg, &v);
    for (size_t i = 0; i < count && i < n; i++) out[i] = v[i];
  } else if (stk__arg_given(node, rel_arg)) {
    const double *f;
    count = stk__arg_floats(node, NULL, rel_arg, &f);
    for (size_t i = 0; i < count && i < n; i++)
      out[i] = ax[i] >= 0 && ax[i] < h->ndim ? rel_pos(f[i], h->shape[ax[i]]) : 0;
  } else {
    *given = false;
    return STK_OK;
  }
  if (count != n)
    return STK_FAIL(
        STK_ERR_INVALID_ARGUMENT, "%s: %s has %zu values, '%s' needs %zu (%s)",
        stk__node_name(node), npy_args[stk__arg_given(node, abs_arg) ? abs_arg : rel_arg].name,
        count, path, n,
        stk__arg_given(node, A_ROI_AXES) ? "one per roi_axes entry" : "one per dimension");
  return STK_OK;
}

/* The region of `h` the roi arguments ask for. */
static stk_status request(stk__node *node, const stk__npy_header *h, const char *path, region *g) {
  const char *name = stk__node_name(node);
  for (int d = 0; d < h->ndim; d++) g->start[d] = 0, g->end[d] = h->shape[d];
  const int64_t *axes;
  size_t na = stk__arg_ints(node, NULL, A_ROI_AXES, &axes);
  bool given_axes = stk__arg_given(node, A_ROI_AXES);
  size_t n = given_axes ? na : (size_t)h->ndim;
  if (n > STK_MAX_NDIM)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: roi_axes has %zu entries", name, n);
  int64_t ax[STK_MAX_NDIM], start[STK_MAX_NDIM], end[STK_MAX_NDIM], shape[STK_MAX_NDIM];
  for (size_t i = 0; i < n; i++) ax[i] = given_axes ? axes[i] : (int64_t)i;
  bool gs, ge, gz;
  STK_TRY(roi_values(node, h, path, A_ROI_START, A_REL_ROI_START, ax, n, start, &gs));
  STK_TRY(roi_values(node, h, path, A_ROI_END, A_REL_ROI_END, ax, n, end, &ge));
  STK_TRY(roi_values(node, h, path, A_ROI_SHAPE, A_REL_ROI_SHAPE, ax, n, shape, &gz));
  size_t ns = gs ? n : 0, ne = ge ? n : 0, nz = gz ? n : 0;
  for (size_t i = 0; i < n; i++) {
    int64_t a = given_axes ? axes[i] : (int64_t)i;
    if (a < 0 || a >= h->ndim)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "%s: roi_axes entry %lld is not an axis of '%s' "
                      "(%d dimensions)",
                      name, (long long)a, path, h->ndim);
    if (ns) g->start[a] = start[i];
    if (ne) g->end[a] = end[i];
    if (nz && __builtin_add_overflow(g->start[a], shape[i], &g->end[a]))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "%s: roi_start %lld + roi_shape %lld overflows "
                      "(axis %lld of '%s')",
                      name, (long long)g->start[a], (long long)shape[i], (long long)a, path);
  }
  return STK_OK;
}

/* Applies out_of_bounds_policy; *inside gets the part of the region inside the array. */
static stk_status bound(stk__node *node, const npy_state *r, const stk__npy_header *h,
                        const char *path, region *g, region *inside) {
  for (int d = 0; d < h->ndim; d++) {
    bool out = g->start[d] < 0 || g->end[d] > h->shape[d];
    if (g->end[d] < g->start[d] || (out && r->oob == OOB_ERROR))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                      "%s: region [%lld, %lld) of axis %d is outside "
                      "'%s' (extent %lld); see out_of_bounds_policy",
                      stk__node_name(node), (long long)g->start[d], (long long)g->end[d], d, path,
                      (long long)h->shape[d]);
    inside->start[d] = g->start[d] < 0 ? 0 : g->start[d] > h->shape[d] ? h->shape[d] : g->start[d];
    inside->end[d] = g->end[d] > h->shape[d] ? h->shape[d] : g->end[d] < 0 ? 0 : g->end[d];
    if (inside->end[d] < inside->start[d]) inside->end[d] = inside->start[d];
    if (r->oob == OOB_TRIM) g->start[d] = inside->start[d], g->end[d] = inside->end[d];
  }
  return STK_OK;
}

/* Sets every element of `out` to fill_value converted to the dtype. */
static void fill(stk__tensor *out, int64_t count, double v) {
  uint8_t one[8];
  switch (out->dtype) {
    case STK_DTYPE_BOOL:
      one[0] = v != 0;
      break;
    case STK_DTYPE_INT8: {
      int8_t x = (int8_t)v;
      memcpy(one, &x, 1);
      break;
    }
    case STK_DTYPE_UINT8:
      one[0] = (uint8_t)v;
      break;
    case STK_DTYPE_INT16: {
      int16_t x = (int16_t)v;
      memcpy(one, &x, 2);
      break;
    }
    case STK_DTYPE_UINT16: {
      uint16_t x = (uint16_t)v;
      memcpy(one, &x, 2);
      break;
    }
    case STK_DTYPE_INT32: {
      int32_t x = (int32_t)v;
      memcpy(one, &x, 4);
      break;
    }
    case STK_DTYPE_UINT32: {
      uint32_t x = (uint32_t)v;
      memcpy(one, &x, 4);
      break;
    }
    case STK_DTYPE_INT64: {
      int64_t x = (int64_t)v;
      memcpy(one, &x, 8);
      break;
    }
    case STK_DTYPE_UINT64: {
      uint64_t x = (uint64_t)v;
      memcpy(one, &x, 8);
      break;
    }
    case STK_DTYPE_FLOAT16: {
      uint16_t x = stk__f32_to_f16((float)v);
      memcpy(one, &x, 2);
      break;
    }
    case STK_DTYPE_FLOAT32: {
      float x = (float)v;
      memcpy(one, &x, 4);
      break;
    }
    default: {
      double x = v;
      memcpy(one, &x, 8);
      break;
    }
  }
  size_t e = stk_dtype_size(out->dtype);
  for (int64_t i = 0; i < count; i++) memcpy((uint8_t *)out->data + (size_t)i * e, one, e);
}

/* Copies the array (or its region) from `data` (the whole file) into output 0. */
static stk_status emit(stk__node *node, npy_state *r, stk__sample *s, const stk__npy_header *h,
                       const uint8_t *data, const char *path) {
  region g, inside;
  int64_t shape[STK_MAX_NDIM], count[STK_MAX_NDIM], at[STK_MAX_NDIM], total = 1;
  if (r->roi) {
    STK_TRY(request(node, h, path, &g));
    STK_TRY(bound(node, r, h, path, &g, &inside));
  } else {
    for (int d = 0; d < h->ndim; d++)
      g.start[d] = inside.start[d] = 0, g.end[d] = inside.end[d] = h->shape[d];
  }
  bool padded = false;
  for (int d = 0; d < h->ndim; d++) {
    /* A region far outside the array (padded with fill_value) may not overflow, nor
     * exceed max_file_bytes once allocated. */
    if (__builtin_sub_overflow(g.end[d], g.start[d], &shape[d]) ||
        __builtin_mul_overflow(total, shape[d], &total) ||
        (double)total * (double)h->elem > (double)stk__node_max_file_bytes(node))
      return STK_FAIL(STK_ERR_LIMIT,
                      "%s: the region read from '%s' would be larger than "
                      "max_file_bytes (%lld bytes)",
                      stk__node_name(node), path, (long long)stk__node_max_file_bytes(node));
    count[d] = inside.end[d] - inside.start[d];
    at[d] = inside.start[d] - g.start[d];
    padded |= count[d] != shape[d];
  }
  stk__tensor *out;
  STK_TRY(stk__output(s, 0, h->dtype, h->ndim, shape, NULL, &out));
  if (padded) fill(out, total, r->fill);
  stk__npy_copy_box(h, data + h->data_offset, inside.start, count, out->data, shape, at);
  return STK_OK;
}

/* Reads exactly `n` bytes at `offset`; a short read means the file changed. */
static stk_status pread_exact(int fd, const char *path, int64_t offset, void *dst, size_t n) {
  size_t got;
  STK_TRY(stk__pread_full(fd, path, offset, dst, n, &got));
  if (got < n)
    return STK_FAIL(STK_ERR_DECODE,
                    "'%s' changed while read: it ends at byte %lld, %lld bytes "
                    "were expected",
                    path, (long long)(offset + (int64_t)got), (long long)(offset + (int64_t)n));
  return STK_OK;
}

/* The header first, then the data straight into the output when it needs no reordering
 * (C order, host byte order, no region); otherwise the whole file into scratch memory and
 * the copy from there. Files are read with pread, never mapped (whatever use_mmap says): a
 * mapped file that shrinks while it is read kills the process with SIGBUS, and a library
 * must not install signal handlers; a short read is an error naming the file instead. */
static stk_status read_plain(stk__node *node, npy_state *r, stk__sample *s, int fd,
                             const char *path, int64_t size) {
  uint8_t pre[12];
  size_t got, hlen;
  STK_TRY(stk__pread_full(fd, path, 0, pre, sizeof pre, &got));
  STK_TRY(stk__npy_header_length(pre, got, path, &hlen));
  if ((int64_t)hlen > size)
    return STK_FAIL(STK_ERR_DECODE, "'%s' is truncated inside its header (%zu bytes)", path, hlen);
  uint8_t *buf = stk__scratch(s, hlen);
  if (!buf)
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: cannot hold the header of '%s'",
                    stk__node_name(node), path);
  STK_TRY(pread_exact(fd, path, 0, buf, hlen));
  stk__npy_header h;
  STK_TRY(stk__npy_parse(buf, hlen, size, path, &h));
  if (!r->roi && !h.fortran && !h.swap) {
    stk__tensor *out;
    STK_TRY(stk__output(s, 0, h.dtype, h.ndim, h.shape, NULL, &out));
    return pread_exact(fd, path, h.data_offset, out->data, (size_t)h.data_bytes);
  }
  uint8_t *all = stk__scratch(s, (size_t)size);
  if (!all)
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: cannot hold '%s'", stk__node_name(node), path);
  STK_TRY(pread_exact(fd, path, 0, all, (size_t)size));
  return emit(node, r, s, &h, all, path);
}

static stk_status read_file(stk__node *node, npy_state *r, stk__sample *s, const char *path,
                            int fd) {
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    return STK_FAIL(STK_ERR_IO, "%s: '%s' is not a regular file", stk__node_name(node), path);
  int64_t size = (int64_t)sb.st_size;
  if (size > stk__node_max_file_bytes(node))
    return STK_FAIL(STK_ERR_LIMIT, "%s: '%s' has %lld bytes, more than max_file_bytes (%lld)",
                    stk__node_name(node), path, (long long)size,
                    (long long)stk__node_max_file_bytes(node));
  if (size < 10)
    return STK_FAIL(STK_ERR_DECODE, "'%s' is not a .npy file (%lld bytes)", path, (long long)size);
  return read_plain(node, r, s, fd, path, size);
}

/* A URL (io/remote.h): the whole object in one request, then as from memory. */
static stk_status read_remote(stk__node *node, npy_state *r, stk__sample *s, const char *path) {
  uint8_t *all = NULL;
  size_t size = 0, hlen = 0;
  const stk__remote_opts *prev = stk__remote_use(&r->remote);
  stk_status st = stk__remote_get(path, (size_t)stk__node_max_file_bytes(node), &all, &size);
  stk__remote_use(prev);
  if (st != STK_OK) return st;
  st = stk__npy_header_length(all, size, path, &hlen);
  if (st == STK_OK && hlen > size)
    st = STK_FAIL(STK_ERR_DECODE, "'%s' is truncated inside its header (%zu bytes)", path, hlen);
  stk__npy_header h;
  if (st == STK_OK) st = stk__npy_parse(all, hlen, (int64_t)size, path, &h);
  if (st == STK_OK) st = emit(node, r, s, &h, all, path);
  free(all);
  return st;
}

static stk_status npy_run(stk__node *node, stk__sample *s) {
  npy_state *r = *stk__node_state(node);
  int64_t item = stk__sample_item(s, node);
  if (item < 0 || item >= r->files.count)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  const char *path = r->files.paths[item];
  stk__sample_set_source(s, path);
  if (stk__is_url(path)) return read_remote(node, r, s, path);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "%s: cannot open '%s': %s",
                    stk__node_name(node), path, strerror(errno));
  stk_status st = read_file(node, r, s, path, fd);
  close(fd);
  return st;
}

static const stk_op_schema npy_schema = {
    .name = "readers.numpy",
    .doc =
        "Reads NumPy .npy files (DALI's numpy reader): format versions 1.0-3.0, C or Fortran "
        "order (returned in C order), numeric dtypes in either byte order (returned in host "
        "order); pickled object arrays are refused. Files are read with pread, never memory-mapped "
        "(dont_use_mmap is accepted for DALI compatibility: a mapped file that shrinks while read "
        "would kill the process); roi_start/roi_end/roi_shape read only a region. Sharding, "
        "padding and shuffling as in readers.file. On device \"gpu\" (DALI reads through "
        "GPUDirect Storage there) the arrays are read on the host and uploaded.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT | STK_OPF_GPU_ON_HOST,
    .min_inputs = 0,
    .max_inputs = 0,
    .inputs = NULL,
    .num_outputs = 1,
    .outputs = npy_outputs,
    .num_args = sizeof npy_args / sizeof npy_args[0],
    .args = npy_args,
};

/* The sample cache's name of an item: its file (op.h's item_identity). */
static stk_status npy_identity(stk__node *node, int64_t item, stk__strbuf *id, stk__strbuf *stamp,
                               const char **source) {
  npy_state *r = *stk__node_state(node);
  if (item < 0 || item >= r->files.count)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  *source = r->files.paths[item];
  return stk__reader_file_identity(r->files.paths[item], "", id, stamp);
}

const stk__op_def stk__op_readers_numpy = {
    .schema = &npy_schema,
    .init = npy_init,
    .destroy = npy_destroy,
    .plan = stk__reader_plan,
    .run_sample = npy_run,
    .reader_meta = stk__reader_meta,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
    .item_identity = npy_identity,
};
