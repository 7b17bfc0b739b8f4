/* Requests to remote objects through libcurl: a handle pool, retries with backoff and
 * bounded response sinks; see remote.h. */
#ifdef STK_HAVE_CURL
#include <curl/curl.h>
#endif
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remote.h"
#include "remote_url.h"

bool stk__is_url(const char *path) {
  return path && (strncmp(path, "s3://", 5) == 0 || strncmp(path, "http://", 7) == 0 ||
                  strncmp(path, "https://", 8) == 0);
}

static _Thread_local const stk__remote_opts *current_opts;

const stk__remote_opts *stk__remote_use(const stk__remote_opts *o) {
  const stk__remote_opts *prev = current_opts;
  current_opts = o;
  return prev;
}

const stk__remote_opts *stk__remote_current(void) { return current_opts; }

/* The thread's value of setting `name`, or -1 when it leaves it to the environment. */
static int given_value(const char *name) {
  const stk__remote_opts *o = current_opts;
  if (!o) return -1;
  static const struct {
    const char *name;
    size_t offset;
  } fields[] = {
      {"STK_REMOTE_RETRIES", offsetof(stk__remote_opts, retries)},
      {"STK_REMOTE_BACKOFF_MS", offsetof(stk__remote_opts, backoff_ms)},
      {"STK_REMOTE_TIMEOUT", offsetof(stk__remote_opts, timeout)},
      {"STK_REMOTE_BLOCK_KB", offsetof(stk__remote_opts, block_kb)},
      {"STK_REMOTE_CACHE_MB", offsetof(stk__remote_opts, cache_mb)},
      {"STK_REMOTE_READAHEAD", offsetof(stk__remote_opts, readahead)},
      {"STK_REMOTE_PREFETCH_THREADS", offsetof(stk__remote_opts, prefetch_threads)},
  };
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    if (strcmp(fields[i].name, name) == 0)
      return *(const int *)((const char *)o + fields[i].offset);
  return -1;
}

int stk__remote_setting(const char *name, int fallback, int lo, int hi) {
  int given = given_value(name);
  if (given >= lo && given <= hi && given >= 0) return given;
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || x < lo || x > hi) return fallback;
  return (int)x;
}

bool stk__remote_setting_given(const char *name) {
  const char *v = getenv(name);
  return given_value(name) >= 0 || (v && *v);
}

#ifdef STK_HAVE_CURL

/* ---- the handle pool ----------------------------------------------------------- */

#define POOL_MAX 256

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CURLcode init_result;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static CURL *pool[POOL_MAX];
static int pool_len;

static void global_init(void) { init_result = curl_global_init(CURL_GLOBAL_DEFAULT); }

static CURL *handle_get(void) {
  pthread_once(&init_once, global_init);
  if (init_result != CURLE_OK) return NULL;
  CURL *h = NULL;
  pthread_mutex_lock(&pool_mu);
  if (pool_len > 0) h = pool[--pool_len];
  pthread_mutex_unlock(&pool_mu);
  if (h)
    curl_easy_reset(h); /* keeps the live connections */
  else
    h = curl_easy_init();
  return h;
}

static void handle_put(CURL *h) {
  int cap = stk__remote_setting("STK_REMOTE_CONNECTIONS", 32, 0, POOL_MAX);
  pthread_mutex_lock(&pool_mu);
  if (pool_len < cap) {
    pool[pool_len++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&pool_mu);
  if (h) curl_easy_cleanup(h);
}

/* ---- one request ----------------------------------------------------------------- */

typedef struct {
  const char *method; /* "GET", "HEAD", "PUT" */
  int64_t offset;     /* GET: first byte wanted */
  int64_t length;     /* GET: bytes wanted, -1 for the rest of the object */
  /* the sink: a fixed buffer (cap bytes) or, when `grow`, a malloc'd one up to `max` */
  uint8_t *dst;
  size_t cap, got, max;
  bool grow, too_big;
  int64_t skip; /* bytes still to drop: a 200 answer to a range request */
  bool status_seen;
  /* a failed answer's body, for S3's error code */
  char err[512];
  size_t err_len;
  int64_t content_length; /* HEAD: the header's value, -1 when absent */
  const uint8_t *body;    /* PUT */
  size_t body_len, body_pos;
  CURL *h;
} request;

static stk_status grow_sink(request *q, size_t need) {
  if (need <= q->cap) return STK_OK;
  if (need > q->max) {
    q->too_big = true;
    return STK_ERR_LIMIT;
  }
  size_t c = q->cap ? q->cap : 65536;
  while (c < need) c = c > q->max / 2 ? q->max : c * 2;
  uint8_t *d = realloc(q->dst, c);
  if (!d) return STK_ERR_OUT_OF_MEMORY;
  q->dst = d;
  q->cap = c;
  return STK_OK;
}

/* Decides, at the first body byte, what the answer is: an error body, a range, or a
 * whole object of which the wanted range must be cut out. */
static void on_status(request *q) {
  q->status_seen = true;
  long code = 0;
  curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &code);
  if (code == 200 && q->offset > 0) q->skip = q->offset;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *user) {
  request *q = user;
  size_t n = size * nmemb, used = 0;
  if (!q->status_seen) on_status(q);
  long code = 0;
  curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &code);
  if (code >= 300) { /* keep the start of an error body */
    size_t k = n < sizeof q->err - 1 - q->err_len ? n : sizeof q->err - 1 - q->err_len;
    memcpy(q->err + q->err_len, data, k);
    q->err_len += k;
    return n;
  }
  if (!q->dst && !q->grow) return n; /* HEAD, PUT: the body is not wanted */
  if (q->skip > 0) {
    used = (int64_t)n < q->skip ? n : (size_t)q->skip;
    q->skip -= (int64_t)used;
  }
  size_t take = n - used;
  if (q->grow && grow_sink(q, q->got + take) != STK_OK) return 0;
  size_t room = q->cap - q->got;
  if (take > room) take = room; /* never past the buffer, whatever the server sends */
  memcpy(q->dst + q->got, data + used, take);
  q->got += take;
  /* all wanted bytes are in: stop reading (the server may be sending a whole object) */
  if (!q->grow && q->got == q->cap && used + take < n) return 0;
  return n;
}

static size_t on_upload(char *dst, size_t size, size_t nmemb, void *user) {
  request *q = user;
  size_t n = size * nmemb, left = q->body_len - q->body_pos;
  if (n > left) n = left;
  memcpy(dst, q->body + q->body_pos, n);
  q->body_pos += n;
  return n;
}

static struct curl_slist *set_signing(CURL *h, const stk__remote_target *t, stk_status *st) {
  struct curl_slist *hdr = NULL;
  *st = STK_OK;
  if (!t->sigv4) return NULL;
  curl_easy_setopt(h, CURLOPT_AWS_SIGV4, t->sigv4);
  curl_easy_setopt(h, CURLOPT_USERNAME, t->access_key);
  curl_easy_setopt(h, CURLOPT_PASSWORD, t->secret_key);
  /* S3 wants the payload's hash; ours are sent unsigned (TLS protects them) */
  hdr = curl_slist_append(hdr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (hdr && t->token) {
    stk__strbuf b = {0};
    if (stk__strbuf_printf(&b, "x-amz-security-token: %s", t->token) == STK_OK) {
      struct curl_slist *h2 = curl_slist_append(hdr, b.data);
      if (h2) hdr = h2;
    }
    stk__strbuf_free(&b);
  }
  if (!hdr) *st = STK_FAIL(STK_ERR_OUT_OF_MEMORY, "request headers");
  return hdr;
}

static void set_transfer(CURL *h, request *q, const char *url) {
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  /* whatever a server answers, nothing but HTTP(S) is fetched (no file:// redirects) */
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
                   (long)stk__remote_setting("STK_REMOTE_TIMEOUT", 30, 1, 3600));
  /* a stall: under one byte a second for the timeout */
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                   (long)stk__remote_setting("STK_REMOTE_TIMEOUT", 30, 1, 3600));
  /* a private CA (an S3-compatible store or a web server with its own certificate):
   * verified against it, never unverified */
  const char *ca = current_opts && current_opts->ca_bundle ? current_opts->ca_bundle
                                                           : getenv("STK_REMOTE_CA_BUNDLE");
  if (ca && *ca) curl_easy_setopt(h, CURLOPT_CAINFO, ca);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, q);
  if (strcmp(q->method, "HEAD") == 0) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  if (strcmp(q->method, "PUT") == 0) {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
    curl_easy_setopt(h, CURLOPT_READDATA, q);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)q->body_len);
  }
}

/* What one attempt came to. */
typedef enum { DONE, RETRY, FAIL } outcome;

static bool transient_curl(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_COULDNT_RESOLVE_HOST:
      return true;
    default:
      return false;
  }
}

static bool transient_http(long code) { return code == 408 || code == 429 || code >= 500; }

/* S3's <Code> from an error body, for the message. */
static void error_code(const request *q, char *out, size_t n) {
  out[0] = 0;
  const char *s = strstr(q->err, "<Code>"), *e = s ? strstr(s, "</Code>") : NULL;
  if (s && e && (size_t)(e - s - 6) < n) snprintf(out, n, " (%.*s)", (int)(e - s - 6), s + 6);
}

static outcome attempt(request *q, const stk__remote_target *t, char *why, size_t why_len,
                       long *code) {
  CURL *h = handle_get();
  if (!h) {
    snprintf(why, why_len, "libcurl cannot start");
    return FAIL;
  }
  q->h = h;
  q->got = 0;
  q->skip = 0;
  q->status_seen = false;
  q->err_len = 0;
  q->body_pos = 0;
  q->too_big = false;
  memset(q->err, 0, sizeof q->err);
  stk_status st;
  struct curl_slist *hdr = set_signing(h, t, &st);
  if (st != STK_OK) {
    handle_put(h);
    snprintf(why, why_len, "out of memory");
    return FAIL;
  }
  set_transfer(h, q, t->http_url);
  if (hdr) curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
  char range[64];
  if (strcmp(q->method, "GET") == 0 && (q->offset > 0 || q->length >= 0)) {
    if (q->length >= 0)
      snprintf(range, sizeof range, "%lld-%lld", (long long)q->offset,
               (long long)(q->offset + q->length - 1));
    else
      snprintf(range, sizeof range, "%lld-", (long long)q->offset);
    curl_easy_setopt(h, CURLOPT_RANGE, range);
  }
  CURLcode c = curl_easy_perform(h);
  *code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
  curl_off_t cl = -1;
  curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
  q->content_length = (int64_t)cl;
  curl_slist_free_all(hdr);
  bool stopped_early = c == CURLE_WRITE_ERROR && !q->grow && q->got == q->cap && *code < 300;
  handle_put(h);
  if (q->too_big) {
    snprintf(why, why_len, "the object is larger than %zu bytes", q->max);
    return FAIL;
  }
  if (c != CURLE_OK && !stopped_early) {
    snprintf(why, why_len, "%s", curl_easy_strerror(c));
    return transient_curl(c) ? RETRY : FAIL;
  }
  if (*code >= 300 || *code < 200) {
    char s3[96];
    error_code(q, s3, sizeof s3);
    snprintf(why, why_len, "HTTP %ld%s", *code, s3);
    return transient_http(*code) ? RETRY : FAIL;
  }
  if (!q->grow && q->dst && q->got < q->cap) {
    snprintf(why, why_len, "short body: %zu of %zu bytes", q->got, q->cap);
    return RETRY;
  }
  return DONE;
}

static void backoff(int attempt_no) {
  int base = stk__remote_setting("STK_REMOTE_BACKOFF_MS", 100, 0, 60000);
  double ms = (double)base * (double)(1 << (attempt_no < 16 ? attempt_no : 16));
  if (ms > 10000) ms = 10000;
  ms *= 0.5 + 0.5 * ((double)rand() / RAND_MAX); /* jitter: clients retrying together spread */
  struct timespec ts = {(time_t)(ms / 1000), (long)(((int64_t)ms % 1000) * 1000000)};
  nanosleep(&ts, NULL);
}

/* Runs `q` with retries; errors name `url` and `what` (the range, say). */
static stk_status perform(request *q, const char *url, const char *query, bool bucket_only,
                          const char *what) {
  stk__remote_target t;
  stk_status st = stk__remote_target_make(&t, url, query, bucket_only);
  if (st != STK_OK) {
    stk__remote_target_free(&t);
    return st;
  }
  int retries = stk__remote_setting("STK_REMOTE_RETRIES", 6, 0, 100);
  char why[256] = "";
  long code = 0;
  outcome o = RETRY;
  int n = 0;
  for (; o == RETRY && n <= retries; n++) {
    if (n > 0) backoff(n - 1);
    o = attempt(q, &t, why, sizeof why, &code);
  }
  stk__remote_target_free(&t);
  if (o == DONE) return STK_OK;
  stk_status code_st = q->too_big ? STK_ERR_LIMIT : code == 404 ? STK_ERR_NOT_FOUND : STK_ERR_IO;
  return STK_FAIL(code_st, "cannot %s '%s'%s%s: %s%s", q->method, url, what ? " " : "",
                  what ? what : "", why, o == RETRY ? " (after every retry)" : "");
}

/* ---- the public calls ------------------------------------------------------------ */

stk_status stk__remote_size(const char *url, int64_t *size) {
  request q = {.method = "HEAD", .length = -1};
  STK_TRY(perform(&q, url, NULL, false, NULL));
  if (q.content_length < 0)
    return STK_FAIL(STK_ERR_IO, "'%s' has no Content-Length: its size is unknown", url);
  *size = q.content_length;
  return STK_OK;
}

stk_status stk__remote_read(const char *url, int64_t offset, void *dst, size_t size) {
  if (size == 0) return STK_OK;
  request q = {.method = "GET", .offset = offset, .length = (int64_t)size, .dst = dst, .cap = size};
  char what[80];
  snprintf(what, sizeof what, "(bytes %lld-%lld)", (long long)offset,
           (long long)(offset + (int64_t)size - 1));
  return perform(&q, url, NULL, false, what);
}

stk_status stk__remote_get(const char *url, size_t max_bytes, uint8_t **data, size_t *size) {
  request q = {.method = "GET", .length = -1, .grow = true, .max = max_bytes};
  stk_status st = perform(&q, url, NULL, false, NULL);
  if (st != STK_OK) {
    free(q.dst);
    return st;
  }
  *data = q.dst ? q.dst : malloc(1);
  *size = q.got;
  return *data ? STK_OK : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "'%s'", url);
}

#else /* built without libcurl: every remote call says so */

static stk_status no_curl(const char *url) {
  return STK_FAIL(STK_ERR_UNSUPPORTED,
                  "'%s': this build of stoker has no remote data sets (built without libcurl; "
                  "install libcurl4-openssl-dev and rebuild)",
                  url);
}
stk_status stk__remote_size(const char *url, int64_t *size) {
  (void)size;
  return no_curl(url);
}
stk_status stk__remote_read(const char *url, int64_t offset, void *dst, size_t size) {
  (void)offset, (void)dst, (void)size;
  return no_curl(url);
}
stk_status stk__remote_get(const char *url, size_t max_bytes, uint8_t **data, size_t *size) {
  (void)max_bytes, (void)data, (void)size;
  return no_curl(url);
}

#endif /* STK_HAVE_CURL */

stk_status stk__read_path(const char *path, size_t max_bytes, uint8_t **data, size_t *size) {
  if (!stk__is_url(path)) return stk__read_file(path, max_bytes, data, size);
  STK_TRY(stk__remote_get(path, max_bytes, data, size));
  uint8_t *d = realloc(*data, *size + 1);
  if (!d) {
    free(*data);
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "'%s'", path);
  }
  d[*size] = 0;
  *data = d;
  return STK_OK;
}

#ifdef STK_HAVE_CURL

stk_status stk__remote_put(const char *url, const void *data, size_t size) {
  request q = {.method = "PUT", .length = -1, .body = data, .body_len = size};
  return perform(&q, url, NULL, false, NULL);
}

stk_status stk__remote_put_file(const char *url, const char *path) {
  uint8_t *data = NULL;
  size_t size = 0;
  STK_TRY(stk__read_file(path, SIZE_MAX - 1, &data, &size));
  stk_status st = stk__remote_put(url, data, size);
  free(data);
  return st;
}

/* ---- listings -------------------------------------------------------------------- */

typedef struct {
  stk__strbuf text; /* the URLs, NUL-separated */
  size_t *offsets;  /* of each URL in text */
  int64_t *sizes;
  size_t count, cap;
  const char *bucket;
  size_t bucket_len;
} listing;

static stk_status list_add(void *user, const char *key, size_t key_len, int64_t size) {
  listing *l = user;
  if (key_len > 0 && key[key_len - 1] == '/') return STK_OK; /* a "directory" marker */
  if (l->count == 10000000) return STK_FAIL(STK_ERR_LIMIT, "more than 10^7 objects");
  if (l->count == l->cap) {
    size_t c = l->cap ? l->cap * 2 : 1024;
    size_t *o = realloc(l->offsets, c * sizeof *o);
    if (o) l->offsets = o;
    int64_t *s = realloc(l->sizes, c * sizeof *s);
    if (s) l->sizes = s;
    if (!o || !s) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "a listing");
    l->cap = c;
  }
  l->offsets[l->count] = l->text.len;
  l->sizes[l->count] = size;
  l->count++;
  STK_TRY(stk__strbuf_printf(&l->text, "s3://%.*s/", (int)l->bucket_len, l->bucket));
  STK_TRY(stk__strbuf_append(&l->text, key, key_len));
  return stk__strbuf_append(&l->text, "", 1);
}

/* One ListObjectsV2 request; *next the continuation token or NULL. */
static stk_status list_page(const char *url, const char *prefix, const char *token, listing *l,
                            char **next) {
  stk__strbuf query = {0};
  stk_status st = stk__strbuf_printf(&query, "list-type=2");
  if (st == STK_OK && token) {
    st = stk__strbuf_printf(&query, "&continuation-token=");
    if (st == STK_OK) st = stk__url_encode(&query, token, strlen(token), false);
  }
  if (st == STK_OK) st = stk__strbuf_printf(&query, "&prefix=");
  if (st == STK_OK) st = stk__url_encode(&query, prefix, strlen(prefix), false);
  request q = {.method = "GET", .length = -1, .grow = true, .max = (size_t)64 << 20};
  if (st == STK_OK) st = perform(&q, url, query.data, true, "(listing)");
  if (st == STK_OK) st = grow_sink(&q, q.got + 1);
  if (st == STK_OK) {
    q.dst[q.got] = 0;
    st = stk__s3_parse_list((const char *)q.dst, q.got, list_add, l, next);
    if (st != STK_OK) st = stk__wrap(st, "the listing of '%s'", url);
  }
  free(q.dst);
  stk__strbuf_free(&query);
  return st;
}

/* Sorts the listing by URL (S3 lists in key order already; other stores may not). */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static stk_status list_finish(listing *l, char ***urls, int64_t **sizes, size_t *count) {
  size_t n = l->count, head = (n + 1) * sizeof(char *);
  char **out = malloc(head + l->text.len + 1);
  if (!out) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "a listing");
  char *text = (char *)out + head;
  if (l->text.len) memcpy(text, l->text.data, l->text.len);
  for (size_t i = 0; i < n; i++) out[i] = text + l->offsets[i];
  out[n] = NULL;
  /* keep each size with its URL: sort (url, index) pairs through the URL pointers */
  int64_t *sz = malloc((n ? n : 1) * sizeof *sz);
  if (!sz) {
    free(out);
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "a listing");
  }
  qsort(out, n, sizeof *out, cmp_str);
  for (size_t i = 0; i < n; i++) {
    size_t off = (size_t)(out[i] - text);
    size_t lo = 0, hi = n; /* offsets are increasing: find this URL's entry */
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (l->offsets[mid] <= off)
        lo = mid;
      else
        hi = mid;
    }
    sz[i] = l->sizes[lo];
  }
  *urls = out;
  if (sizes)
    *sizes = sz;
  else
    free(sz);
  *count = n;
  return STK_OK;
}

stk_status stk__remote_list(const char *url, char ***urls, int64_t **sizes, size_t *count) {
  if (strncmp(url, "s3://", 5) != 0)
    return STK_FAIL(STK_ERR_UNSUPPORTED, "cannot list '%s': only s3:// prefixes can be listed",
                    url);
  listing l = {0};
  const char *prefix;
  STK_TRY(stk__s3_split(url, &l.bucket, &l.bucket_len, &prefix));
  char *token = NULL;
  stk_status st = STK_OK;
  do {
    char *next = NULL;
    st = list_page(url, prefix, token, &l, &next);
    free(token);
    token = next;
  } while (st == STK_OK && token);
  free(token);
  if (st == STK_OK) st = list_finish(&l, urls, sizes, count);
  stk__strbuf_free(&l.text);
  free(l.offsets);
  free(l.sizes);
  return st;
}

#else

stk_status stk__remote_put(const char *url, const void *data, size_t size) {
  (void)data, (void)size;
  return no_curl(url);
}
stk_status stk__remote_put_file(const char *url, const char *path) {
  (void)path;
  return no_curl(url);
}
stk_status stk__remote_list(const char *url, char ***urls, int64_t **sizes, size_t *count) {
  (void)urls, (void)sizes, (void)count;
  return no_curl(url);
}

#endif /* STK_HAVE_CURL */
