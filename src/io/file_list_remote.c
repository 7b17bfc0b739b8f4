/* File lists from an S3 prefix (file_root = "s3://bucket/dir"): the listing plays the
 * directory walk's part; see file_list.h for the layouts. */
#include <stdlib.h>
#include <string.h>

#include "file_list.h"
#include "remote.h"

typedef struct {
  const char *rel;  /* the key below the root */
  size_t class_len; /* ImageFolder: the class directory's name length */
} entry;

static int cmp_entry(const void *a, const void *b) {
  const entry *x = a, *y = b;
  size_t n = x->class_len < y->class_len ? x->class_len : y->class_len;
  int c = memcmp(x->rel, y->rel, n);
  if (c) return c;
  if (x->class_len != y->class_len) return x->class_len < y->class_len ? -1 : 1;
  return strcmp(x->rel + x->class_len, y->rel + y->class_len);
}

/* The listing of `root` as a directory ("root/"). */
static stk_status list_dir(const char *root, char ***urls, size_t *count, size_t *prefix_len) {
  stk__strbuf dir = {0};
  STK_TRY(stk__strbuf_printf(&dir, "%s", root));
  if (dir.len && dir.data[dir.len - 1] != '/') STK_TRY(stk__strbuf_append(&dir, "/", 1));
  stk_status st = stk__remote_list(dir.data, urls, NULL, count);
  *prefix_len = dir.len;
  stk__strbuf_free(&dir);
  return st;
}

/* Keeps the listed objects that match the filters (and, for classes, lie in a class
 * directory), sorted by class then path. */
static size_t select_entries(char **urls, size_t count, size_t prefix_len, bool classes,
                             const char *const *filters, size_t num_filters, bool case_sensitive,
                             entry *out) {
  size_t n = 0;
  for (size_t i = 0; i < count; i++) {
    const char *rel = urls[i] + prefix_len;
    const char *slash = strchr(rel, '/'), *base = strrchr(rel, '/');
    if (classes && !slash) continue; /* files directly in the root are ignored */
    if (!stk__file_filter_match(base ? base + 1 : rel, filters, num_filters, case_sensitive))
      continue;
    out[n].rel = rel;
    out[n].class_len = classes ? (size_t)(slash - rel) : 0;
    n++;
  }
  qsort(out, n, sizeof *out, cmp_entry);
  return n;
}

stk_status stk__file_list_scan_remote(stk__file_list *out, const char *root,
                                      const char *const *filters, size_t num_filters,
                                      bool case_sensitive, bool classes) {
  memset(out, 0, sizeof *out);
  char **urls = NULL;
  size_t count = 0, prefix_len = 0;
  STK_TRY(list_dir(root, &urls, &count, &prefix_len));
  entry *e = malloc((count ? count : 1) * sizeof *e);
  const char **rels = malloc((count ? count : 1) * sizeof *rels);
  int64_t *labels = malloc((count ? count : 1) * sizeof *labels);
  stk_status st = e && rels && labels ? STK_OK : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "a listing");
  size_t n = 0;
  if (st == STK_OK)
    n = select_entries(urls, count, prefix_len, classes, filters, num_filters, case_sensitive, e);
  int64_t label = -1;
  for (size_t i = 0; st == STK_OK && i < n; i++) {
    bool new_class = i == 0 || e[i].class_len != e[i - 1].class_len ||
                     memcmp(e[i].rel, e[i - 1].rel, e[i].class_len) != 0;
    label += new_class ? 1 : 0;
    rels[i] = e[i].rel;
    labels[i] = classes ? label : 0;
  }
  if (st == STK_OK && n == 0)
    st = STK_FAIL(STK_ERR_NOT_FOUND, "file_root '%s' holds no matching object (%zu listed)%s", root,
                  count, classes ? " in a class sub-directory (root/class/file)" : "");
  if (st == STK_OK) st = stk__file_list_from_files(out, root, rels, n, labels, n, "file_root");
  free(e);
  free(rels);
  free(labels);
  free(urls);
  return st;
}
