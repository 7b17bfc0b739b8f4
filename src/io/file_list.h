/*
 * A reader's sample list: file paths and integer labels, built from one of three
 * sources, as DALI's file reader builds it:
 *  - an ImageFolder tree (stk__file_list_scan),
 *  - a list file of "path label" lines (stk__file_list_parse),
 *  - explicit paths and labels (stk__file_list_from_files).
 * Errors name the directory, list file (and line) or argument at fault.
 */
#ifndef STOKER_IO_FILE_LIST_H
#define STOKER_IO_FILE_LIST_H

#include "../core/core.h"

typedef struct {
  int64_t count;
  char **paths;    /* count paths, pointing into `text` */
  int32_t *labels; /* count labels */
  char *text;      /* storage of every path, NUL-separated */
} stk__file_list;

/* The default ImageFolder filters (DALI's image extensions); NULL-terminated. */
extern const char *const stk__default_file_filters[];

/* True when `name` matches one of `filters` (fnmatch patterns, matched against the whole
 * name; case-insensitive for ASCII unless `case_sensitive`). */
bool stk__file_filter_match(const char *name, const char *const *filters, size_t num_filters,
                            bool case_sensitive);

/* ImageFolder: every sub-directory of `root` (sorted by name, byte order) is a class
 * whose label is its index in that order (empty classes keep their index). Inside a
 * class directory, files matching `filters` are collected recursively (symbolic links
 * followed; each real directory, by device and inode, walked once, by the first path
 * that reaches it, so loops and link DAGs cost one walk; at most 1,000,000 directories,
 * else STK_ERR_LIMIT) and sorted by their path relative to the class directory. Only
 * regular files are listed (FIFOs, sockets and devices never are).
 * Files directly inside `root` are ignored. Paths are `root` joined with the relative
 * path. Errors: a missing or unreadable root (STK_ERR_NOT_FOUND / STK_ERR_IO), no
 * matching file at all (STK_ERR_NOT_FOUND), both naming `root`. */
stk_status stk__file_list_scan(stk__file_list *out, const char *root, const char *const *filters,
                               size_t num_filters, bool case_sensitive);
/* The same keeping only the class directories whose name matches one of `dir_filters`
 * (fnmatch globs, case-sensitive; DALI's readers.file dir_filters); labels number the
 * kept classes in order. num_dir_filters == 0: every class. Local roots only (a URL root
 * with dir filters is STK_ERR_UNSUPPORTED). */
stk_status stk__file_list_scan_dirs(stk__file_list *out, const char *root,
                                    const char *const *filters, size_t num_filters,
                                    bool case_sensitive, const char *const *dir_filters,
                                    size_t num_dir_filters);

/* A list file: one "path label" per line; the label is the last whitespace-separated
 * token, so paths may contain spaces (leading and trailing blanks are dropped). Blank
 * lines and lines whose first non-blank character is '#' are skipped. Paths are relative
 * to `root` when it is not NULL, else to the list file's directory; absolute paths are
 * kept. Errors name the list file and, for a malformed line (no label, a label that is
 * not an integer in the int32 range), the line number (STK_ERR_PARSE); an empty list is
 * STK_ERR_NOT_FOUND. */
stk_status stk__file_list_parse(stk__file_list *out, const char *list_path, const char *root);

/* A paired list file (segmentation: image + mask): "path path label" per line, paths
 * without blanks; `first` gets the first paths, `second` the second ones, both with the
 * labels. Otherwise as stk__file_list_parse; a line without exactly three fields is
 * STK_ERR_PARSE naming file and line. */
stk_status stk__file_list_parse_pairs(stk__file_list *first, stk__file_list *second,
                                      const char *list_path, const char *root);

/* A list file of paths only, one per line (whole line, blanks trimmed; '#' comments and
 * blank lines skipped); labels are 0. Otherwise as stk__file_list_parse. */
stk_status stk__file_list_parse_paths(stk__file_list *out, const char *list_path, const char *root);

/* Every file below `root` (files directly in it included, sub-directories recursively,
 * links followed, each real directory walked once as above) whose name matches `filters`, sorted by
 * path relative to root; labels are 0. No match at all is STK_ERR_NOT_FOUND naming root. */
stk_status stk__file_list_scan_tree(stk__file_list *out, const char *root,
                                    const char *const *filters, size_t num_filters,
                                    bool case_sensitive);

/* Explicit paths (relative to `root` when not NULL; absolute paths kept) and labels.
 * `labels` may be NULL (num_labels 0): labels are then 0, 1, ..., count - 1, as in DALI.
 * A count mismatch or a label outside int32 is STK_ERR_INVALID_ARGUMENT, naming the
 * argument; no files is STK_ERR_NOT_FOUND. `who` prefixes messages (may be NULL). */
stk_status stk__file_list_from_files(stk__file_list *out, const char *root,
                                     const char *const *files, size_t num_files,
                                     const int64_t *labels, size_t num_labels, const char *who);

/* stk__file_list_scan (classes) or stk__file_list_scan_tree (no classes) of an S3 prefix
 * "s3://bucket/dir" (io/remote.h): the objects listed below "dir/" play the files. */
stk_status stk__file_list_scan_remote(stk__file_list *out, const char *root,
                                      const char *const *filters, size_t num_filters,
                                      bool case_sensitive, bool classes);

/* Frees the arrays; the struct is zeroed. Safe on a zeroed struct. */
void stk__file_list_free(stk__file_list *fl);

#endif /* STOKER_IO_FILE_LIST_H */
