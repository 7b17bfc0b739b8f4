/* Building a reader's sample list: ImageFolder scans, list files, explicit paths. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file_list.h"
#include "remote.h"

const char *const stk__default_file_filters[] = {"*.jpg", "*.jpeg", "*.png",  "*.bmp",
                                                 "*.tif", "*.tiff", "*.pnm",  "*.ppm",
                                                 "*.pgm", "*.pbm",  "*.webp", NULL};

/* Symbolic-link loops aside, no real data set nests deeper than this. */
#define MAX_DEPTH 64

/* ---- a growing list of (path, label) ---- */

typedef struct {
  stk__strbuf text; /* paths, each followed by a NUL */
  size_t *offsets;
  int32_t *labels;
  size_t count, cap;
} builder;

static void builder_free(builder *b) {
  stk__strbuf_free(&b->text);
  free(b->offsets);
  free(b->labels);
  memset(b, 0, sizeof *b);
}

static bool is_absolute(const char *path) { return path[0] == '/' || stk__is_url(path); }

/* Appends `root`/`rel` (or `rel` alone when root is NULL or rel is absolute). */
static stk_status builder_add(builder *b, const char *root, const char *rel, size_t rel_len,
                              int32_t label) {
  if (b->count == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    size_t *o = stk__realloc(b->offsets, cap * sizeof *o, "the file list");
    if (!o) return STK_ERR_OUT_OF_MEMORY;
    b->offsets = o;
    int32_t *l = stk__realloc(b->labels, cap * sizeof *l, "the file list");
    if (!l) return STK_ERR_OUT_OF_MEMORY;
    b->labels = l;
    b->cap = cap;
  }
  b->offsets[b->count] = b->text.len;
  b->labels[b->count] = label;
  if (root && root[0] && !is_absolute(rel)) {
    size_t n = strlen(root);
    STK_TRY(stk__strbuf_append(&b->text, root, n));
    if (root[n - 1] != '/') STK_TRY(stk__strbuf_append(&b->text, "/", 1));
  }
  STK_TRY(stk__strbuf_append(&b->text, rel, rel_len));
  STK_TRY(stk__strbuf_append(&b->text, "", 1)); /* the NUL separating paths */
  b->count++;
  return STK_OK;
}

/* Moves the builder's contents into `out` (path pointers made once the text is final). */
static stk_status builder_finish(builder *b, stk__file_list *out) {
  char **paths = stk__malloc((b->count ? b->count : 1) * sizeof *paths, "the file list");
  if (!paths) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < b->count; i++) paths[i] = b->text.data + b->offsets[i];
  out->count = (int64_t)b->count;
  out->paths = paths;
  out->labels = b->labels;
  out->text = b->text.data;
  free(b->offsets);
  memset(b, 0, sizeof *b);
  return STK_OK;
}

void stk__file_list_free(stk__file_list *fl) {
  if (!fl) return;
  free(fl->paths);
  free(fl->labels);
  free(fl->text);
  memset(fl, 0, sizeof *fl);
}

/* ---- filters ---- */

bool stk__file_filter_match(const char *name, const char *const *filters, size_t num_filters,
                            bool case_sensitive) {
  int flags = case_sensitive ? 0 : FNM_CASEFOLD;
  for (size_t i = 0; i < num_filters; i++)
    if (fnmatch(filters[i], name, flags) == 0) return true;
  return false;
}

/* ---- ImageFolder ---- */

/* A list of malloc'd strings, sorted before use. */
typedef struct {
  char **items;
  size_t count, cap;
} strlist;

static void strlist_free(strlist *l) {
  for (size_t i = 0; i < l->count; i++) free(l->items[i]);
  free(l->items);
  memset(l, 0, sizeof *l);
}

static stk_status strlist_push(strlist *l, char *s) {
  if (!s) return STK_ERR_OUT_OF_MEMORY;
  if (l->count == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    char **items = stk__realloc(l->items, cap * sizeof *items, "a directory listing");
    if (!items) {
      free(s);
      return STK_ERR_OUT_OF_MEMORY;
    }
    l->items = items;
    l->cap = cap;
  }
  l->items[l->count++] = s;
  return STK_OK;
}

static int compare_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void strlist_sort(strlist *l) {
  if (l->count > 1) qsort(l->items, l->count, sizeof *l->items, compare_str);
}

/* "a" + "/" + "b" in a new string (b alone when a is empty). */
static char *join(const char *a, const char *b) {
  stk__strbuf s = {0};
  if ((a[0] && stk__strbuf_printf(&s, "%s/%s", a, b) != STK_OK) ||
      (!a[0] && stk__strbuf_append(&s, b, strlen(b)) != STK_OK)) {
    stk__strbuf_free(&s);
    return NULL;
  }
  return s.data;
}

static stk_status open_dir(const char *path, DIR **out) {
  *out = opendir(path);
  if (*out) return STK_OK;
  if (errno == ENOENT) return STK_FAIL(STK_ERR_NOT_FOUND, "directory '%s' does not exist", path);
  return STK_FAIL(STK_ERR_IO, "cannot read directory '%s': %s", path, strerror(errno));
}

/* The identities of the directories being walked, to skip symbolic-link loops. */
typedef struct {
  dev_t dev[MAX_DEPTH];
  ino_t ino[MAX_DEPTH];
  int depth;
} ancestry;

/* Directories already walked, by identity: a tree of symbolic links to folders may reach
 * one real directory along many paths (a chain of 22 levels, each linking twice to the
 * next, is 2^22 paths), so each is listed once, by the first path reached, and the number
 * of directories one scan may walk is bounded. Open addressing on (device, inode). */
#define MAX_WALKED_DIRS 1000000
typedef struct {
  dev_t *dev;
  ino_t *ino;
  size_t count, cap; /* cap: a power of two, 0 before the first insert */
} dir_set;

typedef struct {
  const char *const *filters;
  size_t num_filters;
  bool case_sensitive;
  strlist *found; /* relative paths */
  dir_set seen;
} walk_ctx;

static void dir_set_free(dir_set *s) {
  free(s->dev);
  free(s->ino);
  memset(s, 0, sizeof *s);
}

static size_t dir_slot(const dir_set *s, dev_t dev, ino_t ino) {
  uint64_t h = stk__mix64((uint64_t)dev, (uint64_t)ino);
  size_t i = (size_t)h & (s->cap - 1);
  while (s->dev[i] != 0 || s->ino[i] != 0) {
    if (s->dev[i] == dev && s->ino[i] == ino) break;
    i = (i + 1) & (s->cap - 1);
  }
  return i;
}

/* Adds a directory; *fresh is false when it was walked before. ("0, 0" marks an empty
 * slot: no real directory has inode 0.) */
static stk_status dir_set_add(dir_set *s, dev_t dev, ino_t ino, const char *path, bool *fresh) {
  if (2 * (s->count + 1) > s->cap) {
    if (s->count >= MAX_WALKED_DIRS)
      return STK_FAIL(STK_ERR_LIMIT,
                      "'%s': more than %d directories to walk (links to "
                      "folders reach too many)",
                      path, MAX_WALKED_DIRS);
    dir_set bigger = {.cap = s->cap ? 2 * s->cap : 64};
    bigger.dev = stk__calloc(bigger.cap, sizeof *bigger.dev, "a directory walk");
    bigger.ino = stk__calloc(bigger.cap, sizeof *bigger.ino, "a directory walk");
    if (!bigger.dev || !bigger.ino) {
      dir_set_free(&bigger);
      return STK_ERR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < s->cap; i++)
      if (s->dev[i] != 0 || s->ino[i] != 0) {
        size_t j = dir_slot(&bigger, s->dev[i], s->ino[i]);
        bigger.dev[j] = s->dev[i], bigger.ino[j] = s->ino[i];
      }
    bigger.count = s->count;
    dir_set_free(s);
    *s = bigger;
  }
  size_t i = dir_slot(s, dev, ino);
  *fresh = s->dev[i] != dev || s->ino[i] != ino;
  if (*fresh) {
    s->dev[i] = dev, s->ino[i] = ino;
    s->count++;
  }
  return STK_OK;
}

static stk_status walk(walk_ctx *w, const char *full, const char *rel, ancestry *up);

/* Handles one directory entry during a walk. Regular files are taken from d_type without
 * a stat; directories, links and unknown types are resolved with stat (links are
 * followed; a directory's identity guards against loops). */
static stk_status walk_entry(walk_ctx *w, const char *full, const char *rel, const struct dirent *e,
                             ancestry *up) {
  bool is_dir = e->d_type == DT_DIR, is_file = e->d_type == DT_REG;
  bool matches = stk__file_filter_match(e->d_name, w->filters, w->num_filters, w->case_sensitive);
  if (is_file) return matches ? strlist_push(w->found, join(rel, e->d_name)) : STK_OK;
  if (e->d_type == DT_FIFO || e->d_type == DT_SOCK || e->d_type == DT_CHR || e->d_type == DT_BLK)
    return STK_OK;
  struct stat sb;
  char *child_full = join(full, e->d_name);
  if (!child_full) return STK_ERR_OUT_OF_MEMORY;
  if (stat(child_full, &sb) != 0) { /* a dangling link: nothing to read */
    free(child_full);
    return STK_OK;
  }
  is_dir = S_ISDIR(sb.st_mode);
  is_file = S_ISREG(sb.st_mode);
  stk_status st = STK_OK;
  if (is_file && matches) {
    st = strlist_push(w->found, join(rel, e->d_name));
  } else if (is_dir) {
    bool loop = false;
    for (int i = 0; i < up->depth; i++) loop |= up->dev[i] == sb.st_dev && up->ino[i] == sb.st_ino;
    if (!loop && up->depth == MAX_DEPTH)
      st = STK_FAIL(STK_ERR_LIMIT, "'%s' is nested more than %d directories deep", child_full,
                    MAX_DEPTH);
    bool fresh = false;
    if (!loop && st == STK_OK) st = dir_set_add(&w->seen, sb.st_dev, sb.st_ino, child_full, &fresh);
    if (!loop && fresh && st == STK_OK) {
      char *child_rel = join(rel, e->d_name);
      up->dev[up->depth] = sb.st_dev;
      up->ino[up->depth++] = sb.st_ino;
      st = child_rel ? walk(w, child_full, child_rel, up) : STK_ERR_OUT_OF_MEMORY;
      up->depth--;
      free(child_rel);
    }
  }
  free(child_full);
  return st;
}

/* Collects matching files below `full` (whose path relative to the class is `rel`). */
static stk_status walk(walk_ctx *w, const char *full, const char *rel, ancestry *up) {
  DIR *d;
  STK_TRY(open_dir(full, &d));
  stk_status st = STK_OK;
  struct dirent *e;
  while (st == STK_OK && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    st = walk_entry(w, full, rel, e, up);
  }
  closedir(d);
  return st;
}

/* The sorted names of the sub-directories of `root` (links to directories count). */
static stk_status list_classes(const char *root, strlist *classes) {
  DIR *d;
  STK_TRY(open_dir(root, &d));
  stk_status st = STK_OK;
  struct dirent *e;
  while (st == STK_OK && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {
      char *full = join(root, e->d_name);
      struct stat sb;
      if (!full)
        st = STK_ERR_OUT_OF_MEMORY;
      else
        is_dir = stat(full, &sb) == 0 && S_ISDIR(sb.st_mode);
      free(full);
    }
    if (st == STK_OK && is_dir) st = strlist_push(classes, stk__strdup(e->d_name));
  }
  closedir(d);
  strlist_sort(classes);
  return st;
}

/* Adds the files of class `label` (directory root/name) to the builder. */
static stk_status scan_class(builder *b, const char *root, const char *name, int32_t label,
                             walk_ctx *w) {
  char *full = join(root, name);
  if (!full) return STK_ERR_OUT_OF_MEMORY;
  strlist found = {0};
  ancestry up = {.depth = 0};
  struct stat sb;
  stk_status st = STK_OK;
  if (stat(full, &sb) != 0)
    st = STK_FAIL(STK_ERR_IO, "cannot stat '%s': %s", full, strerror(errno));
  if (st == STK_OK) {
    up.dev[0] = sb.st_dev;
    up.ino[0] = sb.st_ino;
    up.depth = 1;
    w->found = &found;
    bool fresh;
    st = dir_set_add(&w->seen, sb.st_dev, sb.st_ino, full, &fresh);
    if (st == STK_OK) st = walk(w, full, "", &up);
  }
  dir_set_free(&w->seen); /* per class: a folder linked into two classes is in both */
  strlist_sort(&found);
  for (size_t i = 0; st == STK_OK && i < found.count; i++) {
    char *rel = join(name, found.items[i]);
    st = rel ? builder_add(b, root, rel, strlen(rel), label) : STK_ERR_OUT_OF_MEMORY;
    free(rel);
  }
  strlist_free(&found);
  free(full);
  return st;
}

/* Drops the classes no dir filter matches, keeping the order. */
static void keep_classes(strlist *classes, const char *const *dir_filters, size_t n) {
  size_t k = 0;
  for (size_t c = 0; c < classes->count; c++) {
    bool keep = false;
    for (size_t f = 0; f < n && !keep; f++)
      keep = fnmatch(dir_filters[f], classes->items[c], 0) == 0;
    if (keep)
      classes->items[k++] = classes->items[c];
    else
      free(classes->items[c]);
  }
  classes->count = k;
}

stk_status stk__file_list_scan(stk__file_list *out, const char *root, const char *const *filters,
                               size_t num_filters, bool case_sensitive) {
  return stk__file_list_scan_dirs(out, root, filters, num_filters, case_sensitive, NULL, 0);
}

stk_status stk__file_list_scan_dirs(stk__file_list *out, const char *root,
                                    const char *const *filters, size_t num_filters,
                                    bool case_sensitive, const char *const *dir_filters,
                                    size_t num_dir_filters) {
  if (stk__is_url(root) && num_dir_filters > 0)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "dir_filters needs a local file_root, not '%s'", root);
  if (stk__is_url(root))
    return stk__file_list_scan_remote(out, root, filters, num_filters, case_sensitive, true);
  memset(out, 0, sizeof *out);
  strlist classes = {0};
  builder b = {0};
  walk_ctx w = {filters, num_filters, case_sensitive, NULL, {0}};
  stk_status st = list_classes(root, &classes);
  if (st == STK_OK && num_dir_filters > 0) keep_classes(&classes, dir_filters, num_dir_filters);
  if (st == STK_OK && classes.count > INT32_MAX)
    st = STK_FAIL(STK_ERR_LIMIT, "'%s' has more than 2^31 class directories", root);
  for (size_t c = 0; st == STK_OK && c < classes.count; c++)
    st = scan_class(&b, root, classes.items[c], (int32_t)c, &w);
  if (st == STK_OK && b.count == 0)
    st = STK_FAIL(STK_ERR_NOT_FOUND,
                  "file_root '%s' holds no matching file in its %zu class sub-director%s "
                  "(file_filters select the files; ImageFolder layout: root/class/file)",
                  root, classes.count, classes.count == 1 ? "y" : "ies");
  if (st == STK_OK) st = builder_finish(&b, out);
  builder_free(&b);
  strlist_free(&classes);
  return st;
}

/* ---- a whole tree, without classes (readers.numpy) ---- */

stk_status stk__file_list_scan_tree(stk__file_list *out, const char *root,
                                    const char *const *filters, size_t num_filters,
                                    bool case_sensitive) {
  if (stk__is_url(root))
    return stk__file_list_scan_remote(out, root, filters, num_filters, case_sensitive, false);
  memset(out, 0, sizeof *out);
  strlist found = {0};
  builder b = {0};
  walk_ctx w = {filters, num_filters, case_sensitive, &found, {0}};
  ancestry up = {.depth = 0};
  struct stat sb;
  stk_status st = STK_OK;
  if (stat(root, &sb) != 0)
    st = errno == ENOENT ? STK_FAIL(STK_ERR_NOT_FOUND, "directory '%s' does not exist", root)
                         : STK_FAIL(STK_ERR_IO, "cannot stat '%s': %s", root, strerror(errno));
  if (st == STK_OK) {
    up.dev[0] = sb.st_dev;
    up.ino[0] = sb.st_ino;
    up.depth = 1;
    bool fresh;
    st = dir_set_add(&w.seen, sb.st_dev, sb.st_ino, root, &fresh);
    if (st == STK_OK) st = walk(&w, root, "", &up);
  }
  dir_set_free(&w.seen);
  strlist_sort(&found);
  for (size_t i = 0; st == STK_OK && i < found.count; i++)
    st = builder_add(&b, root, found.items[i], strlen(found.items[i]), 0);
  if (st == STK_OK && b.count == 0)
    st = STK_FAIL(STK_ERR_NOT_FOUND, "file_root '%s' holds no file matching the filter", root);
  if (st == STK_OK) st = builder_finish(&b, out);
  builder_free(&b);
  strlist_free(&found);
  return st;
}

/* ---- list files ---- */

static bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Parses a label token (the whole token must be a base-10 int32). */
static bool parse_label(const char *tok, size_t len, int32_t *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return false;
  memcpy(buf, tok, len);
  buf[len] = '\0';
  char *end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno != 0 || *end != '\0' || v < INT32_MIN || v > INT32_MAX) return false;
  *out = (int32_t)v;
  return true;
}

/* Parses one line [p, end) into the builder; blank and comment lines are skipped. */
static stk_status parse_line(builder *b, const char *base, const char *p, const char *end,
                             const char *list_path, size_t line_no, bool labels) {
  while (p < end && is_blank(*p)) p++;
  while (end > p && is_blank(end[-1])) end--;
  if (p == end || *p == '#') return STK_OK;
  if (memchr(p, '\0', (size_t)(end - p)))
    return STK_FAIL(STK_ERR_PARSE, "%s:%zu: the line holds a NUL byte", list_path, line_no);
  if (!labels) return builder_add(b, base, p, (size_t)(end - p), 0);
  const char *tok = end;
  while (tok > p && !is_blank(tok[-1])) tok--;
  if (tok == p)
    return STK_FAIL(STK_ERR_PARSE, "%s:%zu: expected \"<path> <label>\", found no label", list_path,
                    line_no);
  int32_t label;
  if (!parse_label(tok, (size_t)(end - tok), &label))
    return STK_FAIL(STK_ERR_PARSE, "%s:%zu: label '%.*s' is not an integer in the int32 range",
                    list_path, line_no, (int)(end - tok), tok);
  const char *path_end = tok;
  while (path_end > p && is_blank(path_end[-1])) path_end--;
  return builder_add(b, base, p, (size_t)(path_end - p), label);
}

/* The directory part of `path` in a new string, or NULL in *out when it has none. */
static stk_status dir_of(const char *path, char **out) {
  *out = NULL;
  const char *slash = strrchr(path, '/');
  if (!slash) return STK_OK;
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  stk__strbuf s = {0};
  STK_TRY(stk__strbuf_append(&s, path, n));
  *out = s.data;
  return STK_OK;
}

/* Parses a paired line "image mask label" (paths without blanks) into two builders. */
static stk_status parse_pair_line(builder *b, builder *b2, const char *base, const char *p,
                                  const char *end, const char *list_path, size_t line_no) {
  while (p < end && is_blank(*p)) p++;
  while (end > p && is_blank(end[-1])) end--;
  if (p == end || *p == '#') return STK_OK;
  const char *tok[3];
  size_t len[3];
  int n = 0;
  while (p < end && n < 4) {
    const char *t = p;
    while (p < end && !is_blank(*p)) p++;
    if (n < 3) tok[n] = t, len[n] = (size_t)(p - t);
    n++;
    while (p < end && is_blank(*p)) p++;
  }
  if (n != 3)
    return STK_FAIL(STK_ERR_PARSE,
                    "%s:%zu: expected \"<path> <path> <label>\" (paths without blanks), found %d "
                    "field(s)",
                    list_path, line_no, n);
  int32_t label;
  if (!parse_label(tok[2], len[2], &label))
    return STK_FAIL(STK_ERR_PARSE, "%s:%zu: label '%.*s' is not an integer in the int32 range",
                    list_path, line_no, (int)len[2], tok[2]);
  STK_TRY(builder_add(b, base, tok[0], len[0], label));
  return builder_add(b2, base, tok[1], len[1], label);
}

static stk_status parse_list2(stk__file_list *out, stk__file_list *out2, const char *list_path,
                              const char *root, bool labels);

static stk_status parse_list(stk__file_list *out, const char *list_path, const char *root,
                             bool labels) {
  return parse_list2(out, NULL, list_path, root, labels);
}

/* A list file; with `out2`, paired lines go to `out` (first path) and `out2` (second). */
static stk_status parse_list2(stk__file_list *out, stk__file_list *out2, const char *list_path,
                              const char *root, bool labels) {
  memset(out, 0, sizeof *out);
  if (out2) memset(out2, 0, sizeof *out2);
  struct stat sb;
  bool remote = stk__is_url(list_path);
  if (!remote && stat(list_path, &sb) != 0 && errno == ENOENT)
    return STK_FAIL(STK_ERR_NOT_FOUND, "file_list '%s' does not exist", list_path);
  uint8_t *data;
  size_t size;
  /* a server's answer is bounded: 1 GiB holds a list of tens of millions of files */
  STK_TRY(stk__read_path(list_path, remote ? (size_t)1 << 30 : SIZE_MAX - 1, &data, &size));
  char *base = NULL;
  builder b = {0}, b2 = {0};
  stk_status st = root ? STK_OK : dir_of(list_path, &base);
  const char *p = (const char *)data, *end = p + size;
  for (size_t line_no = 1; st == STK_OK && p < end; line_no++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *line_end = nl ? nl : end;
    st = out2 ? parse_pair_line(&b, &b2, root ? root : base, p, line_end, list_path, line_no)
              : parse_line(&b, root ? root : base, p, line_end, list_path, line_no, labels);
    p = nl ? nl + 1 : end;
  }
  if (st == STK_OK && b.count == 0)
    st = STK_FAIL(STK_ERR_NOT_FOUND, "file_list '%s' lists no file", list_path);
  if (st == STK_OK) st = builder_finish(&b, out);
  if (st == STK_OK && out2) st = builder_finish(&b2, out2);
  if (st != STK_OK) stk__file_list_free(out);
  builder_free(&b);
  builder_free(&b2);
  free(base);
  free(data);
  return st;
}

stk_status stk__file_list_parse_pairs(stk__file_list *first, stk__file_list *second,
                                      const char *list_path, const char *root) {
  return parse_list2(first, second, list_path, root, true);
}

stk_status stk__file_list_parse(stk__file_list *out, const char *list_path, const char *root) {
  return parse_list(out, list_path, root, true);
}

stk_status stk__file_list_parse_paths(stk__file_list *out, const char *list_path,
                                      const char *root) {
  return parse_list(out, list_path, root, false);
}

/* ---- explicit files ---- */

stk_status stk__file_list_from_files(stk__file_list *out, const char *root,
                                     const char *const *files, size_t num_files,
                                     const int64_t *labels, size_t num_labels, const char *who) {
  memset(out, 0, sizeof *out);
  if (!who) who = "files";
  if (num_files == 0) return STK_FAIL(STK_ERR_NOT_FOUND, "%s: files is empty", who);
  if (num_labels != 0 && num_labels != num_files)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %zu files but %zu labels", who, num_files,
                    num_labels);
  if (num_files > INT32_MAX && num_labels == 0)
    return STK_FAIL(STK_ERR_LIMIT, "%s: more than 2^31 files need explicit labels", who);
  builder b = {0};
  stk_status st = STK_OK;
  for (size_t i = 0; st == STK_OK && i < num_files; i++) {
    int64_t label = num_labels ? labels[i] : (int64_t)i;
    if (!files[i] || !files[i][0])
      st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: files[%zu] is empty", who, i);
    else if (label < INT32_MIN || label > INT32_MAX)
      st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: labels[%zu] = %lld is outside int32", who, i,
                    (long long)label);
    else
      st = builder_add(&b, root, files[i], strlen(files[i]), (int32_t)label);
  }
  if (st == STK_OK) st = builder_finish(&b, out);
  builder_free(&b);
  return st;
}
