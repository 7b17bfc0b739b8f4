/*
 * NumPy .npy files: the header ("\x93NUMPY", version 1.0, 2.0 or 3.0, a little-endian
 * header length of 2 or 4 bytes, then a Python dict literal with 'descr',
 * 'fortran_order' and 'shape') and region copies out of the data that follows.
 *
 * Numeric dtypes are supported (b1, i1/u1 .. i8/u8, f2, f4, f8) in either byte order
 * ('<', '>', '|', '='); big-endian data is converted to the host's order while copied.
 * Object arrays (pickled), strings, complex numbers and structured dtypes are refused
 * with STK_ERR_UNSUPPORTED. Every error names the file.
 */
#ifndef STOKER_IO_NPY_H
#define STOKER_IO_NPY_H

#include "../core/core.h"

typedef struct {
  stk_dtype dtype;
  size_t elem;  /* bytes per element */
  bool swap;    /* stored in the other byte order */
  bool fortran; /* column-major */
  int ndim;
  int64_t shape[STK_MAX_NDIM];
  int64_t data_offset; /* where the data starts */
  int64_t data_bytes;  /* elem * prod(shape) */
  int major, minor;    /* format version */
} stk__npy_header;

/* Bytes the whole header occupies, from the first 12 bytes (fewer is "truncated"). */
stk_status stk__npy_header_length(const uint8_t *prefix, size_t n, const char *path, size_t *out);

/* Parses the header at the start of `data` (`size` bytes: at least the whole header;
 * `file_size` is the whole file's, to check the data is all there). */
stk_status stk__npy_parse(const uint8_t *data, size_t size, int64_t file_size, const char *path,
                          stk__npy_header *out);

/* Copies the box of elements start[d] .. start[d]+count[d]-1 (logical, C-order indices)
 * of the array whose data begins at `src` into `dst`, an array of shape dst_shape in C
 * order, at position dst_start; converts the byte order. The box must lie inside both. */
void stk__npy_copy_box(const stk__npy_header *h, const uint8_t *src, const int64_t *start,
                       const int64_t *count, uint8_t *dst, const int64_t *dst_shape,
                       const int64_t *dst_start);

#endif /* STOKER_IO_NPY_H */
