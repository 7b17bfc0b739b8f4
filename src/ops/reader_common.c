/* The dataset readers' shared arguments, sampler set-up and brace expansion. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "op_gpu.h" /* stk__node_def */
#include "reader_common.h"
#include "../io/remote.h"
#include "../io/remote_cache.h"

/* Key of the epoch permutations when no seed is given: fixed, so that every shard
 * agrees on them whatever its pipeline seed (DALI's examples seed each rank apart). */
#define EPOCH_SHUFFLE_SEED 0x5d1ce5eedull

/* The sampler's configuration from the common arguments. */
/* The index of argument `name` in the node's schema, or -1 (readers.file keeps its own
 * order past the sampling arguments, so the later common ones are found by name). */
static int arg_index(const stk__node *node, const char *name) {
  const stk_op_schema *sc = stk__node_def(node)->schema;
  for (int i = 0; i < sc->num_args; i++)
    if (strcmp(sc->args[i].name, name) == 0) return i;
  return -1;
}

/* The permutations' key: shuffle_after_epoch_seed when given with shuffle_after_epoch
 * (DALI's argument for that mode), else seed. */
static int64_t reader_seed(stk__node *node, int base) {
  int64_t seed = stk__arg_int(node, NULL, base + STK__RA_SEED);
  int a = arg_index(node, "shuffle_after_epoch_seed");
  if (a >= 0 && stk__arg_bool(node, NULL, base + STK__RA_SHUFFLE_AFTER_EPOCH) &&
      stk__arg_int(node, NULL, a) >= 0)
    seed = stk__arg_int(node, NULL, a);
  return seed;
}

static stk__sampler_config reader_config(stk__node *node, int base, int64_t num_samples,
                                         const int64_t *unit_sizes, int64_t num_units) {
  int64_t seed = reader_seed(node, base);
  bool random_shuffle = stk__arg_bool(node, NULL, base + STK__RA_RANDOM_SHUFFLE);
  return (stk__sampler_config){
      .num_samples = num_samples,
      .shard_id = stk__arg_int(node, NULL, base + STK__RA_SHARD_ID),
      .num_shards = stk__arg_int(node, NULL, base + STK__RA_NUM_SHARDS),
      .stick_to_shard = stk__arg_bool(node, NULL, base + STK__RA_STICK_TO_SHARD),
      .pad_last_batch = stk__arg_bool(node, NULL, base + STK__RA_PAD_LAST_BATCH),
      .batch_size = stk__node_batch_size(node),
      .random_shuffle = random_shuffle,
      .shuffle_after_epoch = stk__arg_bool(node, NULL, base + STK__RA_SHUFFLE_AFTER_EPOCH),
      .seed = seed >= 0 ? (uint64_t)seed : EPOCH_SHUFFLE_SEED,
      /* Without a seed, random_shuffle also follows the pipeline seed, within the shard. */
      .local_shuffle = random_shuffle && seed < 0,
      .local_seed = stk__mix64((uint64_t)stk__node_seed(node), stk__hash_str(stk__node_name(node))),
      .num_units = unit_sizes ? num_units : 0,
      .unit_sizes = unit_sizes,
      .initial_fill = stk__arg_int(node, NULL, base + STK__RA_INITIAL_FILL),
  };
}

stk_status stk__reader_sampler(stk__node *node, int base, int64_t num_samples,
                               const int64_t *unit_sizes, int64_t num_units, stk__sampler **out) {
  stk__sampler_config cfg = reader_config(node, base, num_samples, unit_sizes, num_units);
  return stk__sampler_create(out, &cfg, stk__node_name(node));
}

stk_status stk__reader_file_sampler(stk__node *node, int base, int64_t num_samples,
                                    const int32_t *file_of, int64_t num_files, bool streaming,
                                    stk__sampler **out) {
  if (!streaming) return stk__reader_sampler(node, base, num_samples, NULL, 0, out);
  int64_t *sizes = stk__calloc((size_t)num_files, sizeof *sizes, "per-file sample counts");
  if (!sizes) return STK_ERR_OUT_OF_MEMORY;
  int64_t largest = 0;
  for (int64_t i = 0; i < num_samples; i++) {
    sizes[file_of[i]]++;
    if (sizes[file_of[i]] > largest) largest = sizes[file_of[i]];
  }
  stk__sampler_config cfg = reader_config(node, base, num_samples, sizes, num_files);
  stk_status st = stk__sampler_create(out, &cfg, stk__node_name(node));
  free(sizes); /* the sampler keeps its own copy */
  /* A buffer that cannot hold two files' worth mixes few files into a batch: where each
   * file holds one class (files written class by class), batches see few classes. */
  if (st == STK_OK && cfg.random_shuffle && cfg.initial_fill < 2 * largest &&
      cfg.initial_fill < num_samples)
    stk__warn(
        "%s: streaming with initial_fill=%lld, less than two files' worth (the largest holds %lld "
        "samples): a batch mixes samples of few files; if files are sorted by class, raise "
        "initial_fill or write shards with mixed classes",
        stk__node_name(node), (long long)cfg.initial_fill, (long long)largest);
  return st;
}

/* The reader's sampler: every reader's state starts with a stk__reader_base. */
static stk__sampler *sampler_of(stk__node *node) {
  stk__reader_base *r = *stk__node_state(node);
  return r ? r->sampler : NULL;
}

stk_status stk__reader_plan(stk__node *node, stk__plan *plan) {
  stk__sampler *s = sampler_of(node);
  for (int64_t i = 0; i < plan->count; i++) stk__plan_set_item(plan, i, stk__sampler_next(s));
  return STK_OK;
}

stk_status stk__reader_meta(stk__node *node, stk_reader_meta *out) {
  stk__sampler *s = sampler_of(node);
  if (!s) return STK_FAIL(STK_ERR_STATE, "%s: reader not built", stk__node_name(node));
  stk__sampler_meta(s, out);
  return STK_OK;
}

stk_status stk__reader_position(stk__node *node, int64_t *epoch, int64_t *left) {
  stk__sampler_position(sampler_of(node), epoch, left);
  return STK_OK;
}

stk_status stk__reader_seek(stk__node *node, int64_t epoch, int64_t left) {
  return stk__sampler_seek(sampler_of(node), epoch, left, stk__node_name(node));
}

void stk__reader_check_cache(stk__node *node, int base, const stk__fileset *fs,
                             int64_t num_samples) {
  if (!fs->cache || num_samples <= 0 || !stk__arg_bool(node, NULL, base + STK__RA_RANDOM_SHUFFLE))
    return;
  int64_t bytes = 0, block;
  int blocks;
  for (int64_t i = 0; i < fs->count; i++) bytes += fs->sizes[i];
  int64_t fill = stk__arg_int(node, NULL, base + STK__RA_INITIAL_FILL);
  if (fill > num_samples) fill = num_samples;
  int need = stk__remote_cache_fit_shuffle(fs->cache, fill, (double)bytes / (double)num_samples);
  stk__remote_cache_shape(fs->cache, &block, &blocks);
  if (need <= blocks) return;
  stk__warn(
      "%s: streaming remote files with initial_fill=%lld: the shuffle buffer keeps "
      "about %d blocks of %lld KiB in use but the cache holds %d (remote_cache_mb or "
      "STK_REMOTE_CACHE_MB, or 4 GiB unset); blocks will be fetched more than once: set "
      "remote_cache_mb (or STK_REMOTE_CACHE_MB) to at least %lld, or lower initial_fill",
      stk__node_name(node), (long long)fill, need, (long long)(block >> 10), blocks,
      (long long)(((int64_t)need * block >> 20) + 1));
}

/* ---- remote settings and unreadable files ---- */

void stk__reader_remote_opts(const stk__node *node, int base, bool cache, stk__remote_opts *out) {
  *out = (stk__remote_opts)STK__REMOTE_OPTS_UNSET;
  if (stk__arg_given(node, base + STK__RR_ENDPOINT))
    out->endpoint = stk__arg_string(node, base + STK__RR_ENDPOINT);
  if (stk__arg_given(node, base + STK__RR_REGION))
    out->region = stk__arg_string(node, base + STK__RR_REGION);
  if (stk__arg_given(node, base + STK__RR_CA_BUNDLE))
    out->ca_bundle = stk__arg_string(node, base + STK__RR_CA_BUNDLE);
  struct {
    int arg, *field;
  } ints[] = {{STK__RR_RETRIES, &out->retries},
              {STK__RR_BACKOFF_MS, &out->backoff_ms},
              {STK__RR_TIMEOUT, &out->timeout},
              {STK__RR_BLOCK_KB, &out->block_kb},
              {STK__RR_CACHE_MB, &out->cache_mb},
              {STK__RR_READAHEAD, &out->readahead},
              {STK__RR_PREFETCH_THREADS, &out->prefetch_threads}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    if (ints[i].arg >= (cache ? STK__RR_COUNT : STK__RR_REQUEST_COUNT)) break;
    if (stk__arg_given(node, base + ints[i].arg))
      *ints[i].field = (int)stk__arg_int(node, NULL, base + ints[i].arg);
  }
}

/* Failures a file may be left out for: the bad-sample policy's data errors
 * (pipeline/internal.h's stk__is_data_error), a missing file (a 404) included. */
static bool skippable(stk_status st) {
  return st == STK_ERR_DECODE || st == STK_ERR_IO || st == STK_ERR_LIMIT ||
         st == STK_ERR_UNSUPPORTED || st == STK_ERR_NOT_FOUND;
}

stk_status stk__reader_skip_file(stk__node *node, const char *path, stk_status st) {
  const char *name = stk__node_name(node);
  if (!stk__node_skips_bad_data(node) || !skippable(st)) return st;
  /* the failure's message usually starts with the reader's name already */
  const char *why = stk_last_error();
  size_t n = strlen(name);
  if (strncmp(why, name, n) == 0 && strncmp(why + n, ": ", 2) == 0) why += n + 2;
  char message[1536];
  snprintf(message, sizeof message,
           "%s: left out '%s' (on_error=\"skip\"; its samples are in no epoch): %s", name, path,
           why);
  stk__node_skip_file(node, message);
  stk_clear_error();
  return STK_OK;
}

static stk_status skip_file_cb(void *user, const char *path, stk_status st) {
  return stk__reader_skip_file(user, path, st);
}

stk_status stk__reader_fileset_open(stk__node *node, stk__fileset *fs, const char *const *paths,
                                    size_t count) {
  return stk__fileset_open_lenient(fs, paths, count, stk__node_name(node), skip_file_cb, node);
}

stk_status stk__reader_check_files(stk__node *node, const stk__fileset *fs) {
  stk_status last = fs->bad_status;
  if (fs->count == 0 || fs->num_bad < fs->count) return STK_OK;
  stk__strbuf names = {0};
  for (int64_t i = 0; i < fs->count && i < 5; i++)
    STK_TRY(stk__strbuf_printf(&names, "%s'%s'", i ? ", " : "", fs->paths[i]));
  stk_status st = STK_FAIL(last == STK_ERR_NOT_FOUND ? STK_ERR_NOT_FOUND : STK_ERR_IO,
                           "%s: none of the %lld file(s) can be read, all were left out under "
                           "on_error=\"skip\" (stats()'s skipped_file_messages say why): %s%s",
                           stk__node_name(node), (long long)fs->count, names.data,
                           fs->count > 5 ? ", ..." : "");
  stk__strbuf_free(&names);
  return st;
}

/* ---- brace expansion ---- */

#define MAX_EXPANSION 10000000
#define MAX_NESTING   32

typedef struct {
  char **items;
  size_t count, cap;
  const char *who, *arg, *pattern;
  stk__node *skipper; /* a reader skipping patterns it cannot list (on_error="skip") */
  size_t skipped;
} expansion;

static stk_status push(expansion *x, const char *s, size_t n) {
  if (x->count >= MAX_EXPANSION)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %s pattern '%s' expands to more than %d paths",
                    x->who, x->arg, x->pattern, MAX_EXPANSION);
  if (x->count == x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 16;
    char **items = stk__realloc(x->items, cap * sizeof *items, "brace expansion");
    if (!items) return STK_ERR_OUT_OF_MEMORY;
    x->items = items;
    x->cap = cap;
  }
  char *copy = stk__malloc(n + 1, "brace expansion");
  if (!copy) return STK_ERR_OUT_OF_MEMORY;
  memcpy(copy, s, n);
  copy[n] = '\0';
  x->items[x->count++] = copy;
  return STK_OK;
}

/* The '}' closing the '{' at s[open], or -1. */
static long matching_brace(const char *s, size_t open) {
  int depth = 0;
  for (size_t i = open; s[i]; i++) {
    if (s[i] == '{') depth++;
    if (s[i] == '}' && --depth == 0) return (long)i;
  }
  return -1;
}

/* Parses "A..B" (both optionally signed integers) over the whole of [s, s+n). */
static bool parse_range(const char *s, size_t n, long long *a, long long *b, int *width) {
  char buf[64];
  if (n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *dots = strstr(buf, "..");
  if (!dots || dots == buf || !dots[2]) return false;
  *dots = '\0';
  char *end1, *end2;
  *a = strtoll(buf, &end1, 10);
  *b = strtoll(dots + 2, &end2, 10);
  if (*end1 || *end2) return false;
  const char *lo = buf[0] == '-' ? buf + 1 : buf, *hi = dots[2] == '-' ? dots + 3 : dots + 2;
  if (!(*lo >= '0' && *lo <= '9') || !(*hi >= '0' && *hi <= '9')) return false;
  size_t w1 = strlen(buf), w2 = strlen(dots + 2);
  bool padded = (lo[0] == '0' && lo[1]) || (hi[0] == '0' && hi[1]);
  *width = padded ? (int)(w1 > w2 ? w1 : w2) : 0;
  return true;
}

static stk_status expand(expansion *x, const char *s, int depth);

/* prefix + middle + suffix, expanded further. */
static stk_status expand_joined(expansion *x, const char *s, size_t plen, const char *mid,
                                size_t mlen, const char *suffix, int depth) {
  stk__strbuf b = {0};
  stk_status st = stk__strbuf_append(&b, s, plen);
  if (st == STK_OK) st = stk__strbuf_append(&b, mid, mlen);
  if (st == STK_OK) st = stk__strbuf_append(&b, suffix, strlen(suffix));
  if (st == STK_OK) st = expand(x, b.data, depth + 1);
  stk__strbuf_free(&b);
  return st;
}

/* Alternatives split at the top-level commas of [body, body+n); false if none. */
static stk_status expand_list(expansion *x, const char *s, size_t open, size_t close, int depth,
                              bool *done) {
  const char *body = s + open + 1;
  size_t n = close - open - 1;
  int level = 0;
  bool comma = false;
  for (size_t i = 0; i < n; i++) {
    level += body[i] == '{' ? 1 : body[i] == '}' ? -1 : 0;
    comma |= level == 0 && body[i] == ',';
  }
  *done = comma;
  if (!comma) return STK_OK;
  size_t start = 0;
  level = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n) level += body[i] == '{' ? 1 : body[i] == '}' ? -1 : 0;
    if (i == n || (level == 0 && body[i] == ',')) {
      STK_TRY(expand_joined(x, s, open, body + start, i - start, s + close + 1, depth));
      start = i + 1;
    }
  }
  return STK_OK;
}

static stk_status expand_range(expansion *x, const char *s, size_t open, size_t close, int depth,
                               bool *done) {
  long long a, b;
  int width;
  *done = parse_range(s + open + 1, close - open - 1, &a, &b, &width);
  if (!*done) return STK_OK;
  if ((a > b ? a - b : b - a) >= MAX_EXPANSION)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %s pattern '%s' expands to more than %d paths",
                    x->who, x->arg, x->pattern, MAX_EXPANSION);
  long long step = a <= b ? 1 : -1;
  for (long long v = a;; v += step) {
    char num[48];
    int len = v < 0 ? snprintf(num, sizeof num, "-%0*lld", width > 0 ? width - 1 : 0, -v)
                    : snprintf(num, sizeof num, "%0*lld", width, v);
    STK_TRY(expand_joined(x, s, open, num, (size_t)len, s + close + 1, depth));
    if (v == b) break;
  }
  return STK_OK;
}

/* True for an s3:// URL naming several objects: it ends in '/' (every object below) or
 * its last component holds '*', '?' or '[' (fnmatch). */
static bool is_remote_glob(const char *s) {
  if (strncmp(s, "s3://", 5) != 0) return false;
  const char *last = strrchr(s, '/');
  return s[strlen(s) - 1] == '/' || strpbrk(last, "*?[") != NULL;
}

/* The objects a remote glob names, sorted by key; none is an error naming the pattern. */
static stk_status push_listed(expansion *x, const char *s) {
  const char *last = strrchr(s, '/') + 1;
  stk__strbuf dir = {0};
  STK_TRY(stk__strbuf_append(&dir, s, (size_t)(last - s)));
  char **urls = NULL;
  size_t n = 0, kept = 0;
  stk_status st = stk__remote_list(dir.data, &urls, NULL, &n);
  for (size_t i = 0; st == STK_OK && i < n; i++) {
    const char *rel = urls[i] + dir.len;
    if (*last && fnmatch(last, rel, FNM_PATHNAME) != 0) continue;
    st = push(x, urls[i], strlen(urls[i]));
    kept++;
  }
  if (st == STK_OK && kept == 0)
    st = STK_FAIL(STK_ERR_NOT_FOUND, "%s: %s pattern '%s' matches no object (%zu listed)", x->who,
                  x->arg, s, n);
  if (st != STK_OK && st != STK_ERR_NOT_FOUND) st = stk__wrap(st, "%s: %s", x->who, x->arg);
  free(urls);
  stk__strbuf_free(&dir);
  if (st != STK_OK && x->skipper && stk__reader_skip_file(x->skipper, s, st) == STK_OK) {
    x->skipped++;
    for (; kept > 0; kept--) free(x->items[--x->count]); /* none of a failed listing */
    st = STK_OK;
  }
  return st;
}

static stk_status expand(expansion *x, const char *s, int depth) {
  if (depth > MAX_NESTING)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %s pattern '%s' nests braces too deeply", x->who,
                    x->arg, x->pattern);
  /* Find the first brace group that is a list or a range; others stay literal. */
  for (size_t open = 0; s[open]; open++) {
    if (s[open] != '{') continue;
    long close = matching_brace(s, open);
    if (close < 0)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %s pattern '%s' has an unclosed '{'", x->who,
                      x->arg, x->pattern);
    bool done;
    STK_TRY(expand_list(x, s, open, (size_t)close, depth, &done));
    if (done) return STK_OK;
    STK_TRY(expand_range(x, s, open, (size_t)close, depth, &done));
    if (done) return STK_OK;
  }
  return is_remote_glob(s) ? push_listed(x, s) : push(x, s, strlen(s));
}

/* Packs the strings into one block: pointers first, then the text. */
static stk_status pack(expansion *x, char ***out) {
  size_t bytes = x->count * sizeof(char *);
  for (size_t i = 0; i < x->count; i++) bytes += strlen(x->items[i]) + 1;
  char **block = stk__malloc(bytes ? bytes : 1, "brace expansion");
  if (!block) return STK_ERR_OUT_OF_MEMORY;
  char *text = (char *)(block + x->count);
  for (size_t i = 0; i < x->count; i++) {
    size_t n = strlen(x->items[i]) + 1;
    memcpy(text, x->items[i], n);
    block[i] = text;
    text += n;
  }
  *out = block;
  return STK_OK;
}

static stk_status expand_all(expansion *x, const char *const *patterns, size_t num_patterns,
                             char ***out, size_t *count) {
  *out = NULL;
  *count = 0;
  stk_status st = STK_OK;
  for (size_t i = 0; st == STK_OK && i < num_patterns; i++) {
    x->pattern = patterns[i];
    st = expand(x, patterns[i], 0);
  }
  if (st == STK_OK && x->count == 0 && x->skipped > 0)
    st = STK_FAIL(STK_ERR_NOT_FOUND,
                  "%s: %s: no listing gave a file to read: every pattern was left out under "
                  "on_error=\"skip\" (stats()'s skipped_file_messages say why)",
                  x->who, x->arg);
  if (st == STK_OK) st = pack(x, out);
  if (st == STK_OK) *count = x->count;
  for (size_t i = 0; i < x->count; i++) free(x->items[i]);
  free(x->items);
  return st;
}

stk_status stk__reader_expand_paths(stk__node *node, const char *const *patterns,
                                    size_t num_patterns, const char *arg, char ***out,
                                    size_t *count) {
  expansion x = {.who = stk__node_name(node), .arg = arg};
  if (stk__node_skips_bad_data(node)) x.skipper = node;
  return expand_all(&x, patterns, num_patterns, out, count);
}

stk_status stk__expand_braces(const char *const *patterns, size_t num_patterns, const char *who,
                              const char *arg, char ***out, size_t *count) {
  expansion x = {.who = who ? who : "reader", .arg = arg};
  return expand_all(&x, patterns, num_patterns, out, count);
}

stk_status stk__reader_file_identity(const char *path, const char *where, stk__strbuf *id,
                                     stk__strbuf *stamp) {
  struct stat sb;
  STK_TRY(stk__strbuf_printf(id, "%s%s\n", path, where));
  if (stat(path, &sb) != 0) return stk__strbuf_printf(stamp, "-\n");
  return stk__strbuf_printf(stamp, "%lld %lld.%09ld\n", (long long)sb.st_size,
                            (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
}
