/*
 * Dataset conversion behind `stoker convert`: an ImageFolder tree or a "path label" list
 * file into WebDataset tar shards (key.<ext> + key.cls per sample, plus a DALI index per
 * shard) or TFRecord files of tf.train.Example (plus DALI index files).
 *
 * Keys are the samples' positions in the written order, zero padded to 9 digits; the
 * label is written as decimal text (.cls, the WebDataset convention) or as the int64
 * feature "image/class/label". Output is byte-for-byte reproducible for the same input
 * and options (fixed mtimes, seeded shuffle).
 */
#ifndef STOKER_IO_CONVERT_H
#define STOKER_IO_CONVERT_H

#include "../core/core.h"

typedef enum { STK__CONVERT_WDS = 0, STK__CONVERT_TFRECORD = 1 } stk__convert_format;

typedef struct {
  const char *src;     /* an ImageFolder directory, or a list file of "path label" lines */
  const char *out_dir; /* created if missing; a URL (io/remote.h): each file is written to
                          a local staging directory, uploaded when complete, then deleted */
  stk__convert_format format;
  int64_t shard_size; /* samples per output file, >= 1 */
  bool shuffle;       /* write the samples in a seeded random order */
  uint64_t seed;
  /* Called after each sample (may be NULL). */
  void (*progress)(void *user, int64_t done, int64_t total);
  void *user;
  const char *upload_to; /* private: the URL out_dir named (set by stk__convert_dataset) */
} stk__convert_options;

typedef struct {
  int64_t samples, files, bytes; /* bytes of sample data written */
} stk__convert_result;

/* Converts; errors name the source, the output file or the sample at fault. */
stk_status stk__convert_dataset(const stk__convert_options *o, stk__convert_result *result);

/* The output file name of shard `index` ("shard-000012.tar" / ".tfrecord"), and of its
 * index ("shard-000012.idx"), under out_dir, into buf. */
void stk__convert_shard_path(char *buf, size_t cap, const char *out_dir, int64_t index,
                             stk__convert_format format, bool index_file);

#endif /* STOKER_IO_CONVERT_H */
