/*
 * Tar archives as WebDataset shards: a scanner for the member headers (POSIX USTAR, GNU
 * long names 'L', pax extended headers 'x' and global headers 'g' with path= and size=,
 * base-256 sizes), the WebDataset index (members grouped into samples by key) built from
 * a scan or loaded from DALI's index files, and a minimal USTAR writer for `stoker
 * convert`.
 *
 * Every error names the archive and the byte offset at fault; corrupt or truncated
 * archives are STK_ERR_DECODE.
 */
#ifndef STOKER_IO_TAR_H
#define STOKER_IO_TAR_H

#include <stdio.h>

#include "../core/core.h"
#include "fileset.h"

#define STK__TAR_BLOCK 512

/* Called for every regular file member, in archive order: its full name (pax path, GNU
 * long name, or USTAR prefix/name), the offset of its data and its size. Returning an
 * error stops the scan with that error. */
typedef stk_status (*stk__tar_visit_fn)(void *user, const char *name, int64_t offset, int64_t size);

/* Scans the archive open on `fd` (`file_size` bytes, named `path` in messages). A file
 * whose first block is not a valid tar header is STK_ERR_DECODE ("not a tar archive"). */
stk_status stk__tar_scan(int fd, const char *path, int64_t file_size, stk__tar_visit_fn fn,
                         void *user);
/* The same over any source (a file set's file: local or remote). */
stk_status stk__tar_scan_source(const stk__source *src, int64_t file_size, stk__tar_visit_fn fn,
                                void *user);

/* True when the 512-byte block is a tar header with a valid checksum. */
bool stk__tar_header_valid(const uint8_t block[STK__TAR_BLOCK]);

/* ---- WebDataset index ---- */

/* One member of a sample: its extension (the name after the first dot of the base name)
 * and where its bytes lie. */
typedef struct {
  int64_t offset, size;
  size_t ext; /* offset of the NUL-terminated extension in the index's text */
} stk__wds_component;

typedef struct {
  int64_t num_samples;
  int64_t *first; /* num_samples + 1: sample i owns components first[i]..first[i+1]-1 */
  size_t *keys;   /* num_samples offsets of the keys in `text` */
  stk__wds_component *comps;
  int64_t num_comps;
  stk__strbuf text; /* keys and extensions, NUL-terminated */
  int64_t cap_samples, cap_comps;
} stk__wds_index;

/* Splits a member name into key (directory + base name up to its first dot) and
 * extension (the rest after that dot; "" when the base name has none). Returns false
 * for names that belong to no sample (hidden files, whose base name starts with '.'). */
bool stk__wds_split_name(const char *name, size_t *key_len, const char **ext);

/* Groups the archive's regular files into samples: consecutive members with one key form
 * a sample (as WebDataset and DALI do). */
stk_status stk__wds_index_build(stk__wds_index *out, int fd, const char *path, int64_t file_size);
stk_status stk__wds_index_build_source(stk__wds_index *out, const stk__source *src,
                                       int64_t file_size);
/* Loads a DALI index file (version "v1.2": a first line "v1.2 <samples>", then one line
 * per sample of "<ext> <offset> <size> <name>" groups) for the archive `tar_path` of
 * `tar_size` bytes; every component is checked to lie inside the archive. Errors name
 * the index file and line (STK_ERR_PARSE), or the archive (STK_ERR_DECODE). */
stk_status stk__wds_index_load(stk__wds_index *out, const char *index_path, const char *tar_path,
                               int64_t tar_size);
/* Appends a component (data at `offset`, `size` bytes); it starts a new sample unless
 * its key (key_len bytes of `key`) equals the last sample's. */
stk_status stk__wds_index_add(stk__wds_index *idx, const char *key, size_t key_len, const char *ext,
                              int64_t offset, int64_t size);
/* Writes the index in DALI's v1.2 format (member names are key + "." + ext). */
stk_status stk__wds_index_write(const stk__wds_index *idx, const char *index_path);
void stk__wds_index_free(stk__wds_index *idx);

static inline const char *stk__wds_key(const stk__wds_index *idx, int64_t sample) {
  return idx->text.data + idx->keys[sample];
}
static inline const char *stk__wds_ext(const stk__wds_index *idx, const stk__wds_component *c) {
  return idx->text.data + c->ext;
}

/* ---- writing ---- */

/* Writes one regular-file member (USTAR header, data, padding to 512 bytes). Names
 * longer than 100 bytes are split into prefix/name when possible, otherwise preceded by
 * a GNU long-name member. `mtime` in seconds since 1970. Errors name `path`. */
stk_status stk__tar_write_member(FILE *f, const char *path, const char *name, const void *data,
                                 size_t size, int64_t mtime);
/* Writes the two zero blocks ending an archive. */
stk_status stk__tar_write_end(FILE *f, const char *path);

#endif /* STOKER_IO_TAR_H */
