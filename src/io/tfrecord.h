/*
 * TFRecord files and tf.train.Example messages.
 *
 * A TFRecord file is a sequence of records: uint64 length (little-endian), uint32 masked
 * CRC32C of those 8 bytes, `length` bytes of data, uint32 masked CRC32C of the data. The
 * mask is ((crc >> 15) | (crc << 17)) + 0xa282ead8. CRC32C is the Castagnoli CRC
 * (reflected polynomial 0x82F63B78), computed here with slicing-by-8 tables or the SSE4.2
 * instruction where the CPU has it.
 *
 * Index files follow DALI's tfrecord2idx: one "<offset> <size>" line per record, size
 * counting the whole record (header and both CRCs).
 *
 * A small protobuf reader finds features of a serialized tf.train.Example:
 *   Example { Features features = 1; }
 *   Features { map<string, Feature> feature = 1; }
 *   Feature { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
 *                     Int64List int64_list = 3; } }
 *   BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1; }
 *   Int64List { repeated int64 value = 1; }
 * Repeated numbers may be packed or not (both are accepted, even mixed); unknown fields
 * are skipped; a map key given twice keeps the last value, as protobuf does.
 */
#ifndef STOKER_IO_TFRECORD_H
#define STOKER_IO_TFRECORD_H

#include <stdio.h>

#include "../core/core.h"
#include "fileset.h"

/* CRC32C of `n` bytes continuing from `crc` (0 to start): crc32c(crc32c(0, a), b) equals
 * crc32c(0, a + b). */
uint32_t stk__crc32c(uint32_t crc, const void *data, size_t n);
/* The portable table-driven path, whatever the CPU (for tests). */
uint32_t stk__crc32c_portable(uint32_t crc, const void *data, size_t n);
static inline uint32_t stk__crc32c_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

#define STK__TFRECORD_OVERHEAD 16 /* 8 length + 4 + 4 CRC bytes */

typedef struct {
  int64_t count;
  int64_t *offsets; /* of each record */
  int64_t *sizes;   /* whole record sizes, >= 16 */
} stk__tfrecord_index;

/* Walks the records' headers (checking each length CRC) of the file open on `fd`. A
 * first header that does not check is "not a TFRecord file"; a later one is a corrupt
 * record; a record running past the end is "truncated". All STK_ERR_DECODE, naming the
 * file and offset. An empty file has no record. */
stk_status stk__tfrecord_index_build(stk__tfrecord_index *out, int fd, const char *path,
                                     int64_t file_size);
/* The same over any source (a file set's file: local or remote). */
stk_status stk__tfrecord_index_build_source(stk__tfrecord_index *out, const stk__source *src,
                                            int64_t file_size);
/* Loads a DALI index file; every record must lie inside the file (`file_size`). */
stk_status stk__tfrecord_index_load(stk__tfrecord_index *out, const char *index_path,
                                    const char *path, int64_t file_size);
stk_status stk__tfrecord_index_write(const stk__tfrecord_index *idx, const char *index_path);
void stk__tfrecord_index_free(stk__tfrecord_index *idx);

/* Checks one whole record read from `path` at `offset` (framing and both CRCs) and
 * points *payload at its data. STK_ERR_DECODE naming the file and offset on mismatch. */
stk_status stk__tfrecord_check(const uint8_t *record, size_t size, const char *path, int64_t offset,
                               const uint8_t **payload, size_t *length);

/* Writes one record (framing and CRCs) to `f`; errors name `path`. */
stk_status stk__tfrecord_write(FILE *f, const char *path, const void *data, size_t length);

/* ---- tf.train.Example ---- */

typedef enum {
  STK__TF_MISSING = 0,
  STK__TF_BYTES = 1,
  STK__TF_FLOAT = 2,
  STK__TF_INT64 = 3,
  STK__TF_EMPTY = 4 /* present, but none of the three lists set */
} stk__tf_kind;

typedef struct {
  stk__tf_kind kind;
  const uint8_t *list; /* the serialized BytesList / FloatList / Int64List */
  size_t list_size;
  int64_t count; /* number of values */
} stk__tf_feature;

/* Finds the features named `names[0..n)` in a serialized Example; out[i].kind is
 * STK__TF_MISSING for absent ones. Malformed messages are STK_ERR_DECODE (the caller
 * adds the file and offset). */
stk_status stk__tf_example_find(const uint8_t *msg, size_t size, const char *const *names, size_t n,
                                stk__tf_feature *out);
/* Calls fn for every feature of a serialized Example, in message order (a repeated key is
 * reported each time). For inspection (`stoker info`). */
stk_status stk__tf_example_each(const uint8_t *msg, size_t size,
                                stk_status (*fn)(void *user, const char *name, size_t name_len,
                                                 const stk__tf_feature *f),
                                void *user);
/* Copies the feature's values (f->count of them) into dst. */
stk_status stk__tf_feature_int64(const stk__tf_feature *f, int64_t *dst);
stk_status stk__tf_feature_float(const stk__tf_feature *f, float *dst);
/* Calls fn for each bytes value in order. */
stk_status stk__tf_feature_bytes(const stk__tf_feature *f,
                                 stk_status (*fn)(void *user, const uint8_t *p, size_t n),
                                 void *user);

/* Appends one map entry ("name" -> list of values) to `features`, the body of a Features
 * message under construction; stk__tf_example_finish wraps it into an Example. */
stk_status stk__tf_put_bytes(stk__strbuf *features, const char *name, const void *value,
                             size_t size);
stk_status stk__tf_put_int64(stk__strbuf *features, const char *name, const int64_t *values,
                             size_t count);
stk_status stk__tf_put_float(stk__strbuf *features, const char *name, const float *values,
                             size_t count);
stk_status stk__tf_example_finish(const stk__strbuf *features, stk__strbuf *example);

#endif /* STOKER_IO_TFRECORD_H */
