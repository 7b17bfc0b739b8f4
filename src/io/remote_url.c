/* URL mapping, credentials and ListObjectsV2 parsing for remote objects; see remote_url.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote.h"
#include "remote_url.h"

static const char *env_or(const char *a, const char *b) {
  const char *v = getenv(a);
  if ((!v || !*v) && b) v = getenv(b);
  return v && *v ? v : NULL;
}

/* A reader's argument (the thread's settings, io/remote.h) before the environment. */
static const char *given_or_env(const char *given, const char *a, const char *b) {
  return given && *given ? given : env_or(a, b);
}

stk_status stk__url_encode(stk__strbuf *b, const char *s, size_t n, bool keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      STK_TRY(stk__strbuf_append(b, (const char *)&c, 1));
    } else {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      STK_TRY(stk__strbuf_append(b, e, 3));
    }
  }
  return STK_OK;
}

stk_status stk__s3_split(const char *url, const char **bucket, size_t *bucket_len,
                         const char **key) {
  const char *p = url + strlen("s3://");
  const char *slash = strchr(p, '/');
  *bucket = p;
  *bucket_len = slash ? (size_t)(slash - p) : strlen(p);
  *key = slash ? slash + 1 : p + *bucket_len;
  if (*bucket_len == 0) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "'%s' names no bucket", url);
  return STK_OK;
}

/* Trims blanks at both ends of [*s, *e). */
static void trim(const char **s, const char **e) {
  while (*s < *e && isspace((unsigned char)**s)) (*s)++;
  while (*e > *s && isspace((unsigned char)(*e)[-1])) (*e)--;
}

/* Looks `name` up in the [profile] section of an AWS credentials file's text. */
static char *ini_value(const char *text, const char *profile, const char *name) {
  bool in = false;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    const char *next = end ? end + 1 : NULL;
    if (!end) end = line + strlen(line);
    const char *s = line, *e = end;
    trim(&s, &e);
    if (s < e && *s == '[' && e[-1] == ']') {
      const char *ps = s + 1, *pe = e - 1;
      trim(&ps, &pe);
      in = (size_t)(pe - ps) == strlen(profile) && strncmp(ps, profile, (size_t)(pe - ps)) == 0;
    } else if (in) {
      const char *eq = memchr(s, '=', (size_t)(e - s));
      const char *ks = s, *ke = eq ? eq : s;
      trim(&ks, &ke);
      if (eq && (size_t)(ke - ks) == strlen(name) && strncmp(ks, name, (size_t)(ke - ks)) == 0) {
        const char *vs = eq + 1, *ve = e;
        trim(&vs, &ve);
        char *v = malloc((size_t)(ve - vs) + 1);
        if (v) {
          memcpy(v, vs, (size_t)(ve - vs));
          v[ve - vs] = 0;
        }
        return v;
      }
    }
    line = next;
  }
  return NULL;
}

/* Credentials from the environment, else from the shared credentials file. */
static stk_status load_credentials(stk__remote_target *t) {
  const char *id = env_or("AWS_ACCESS_KEY_ID", NULL),
             *secret = env_or("AWS_SECRET_ACCESS_KEY", NULL);
  if (id && secret) {
    t->access_key = stk__strdup(id);
    t->secret_key = stk__strdup(secret);
    const char *token = env_or("AWS_SESSION_TOKEN", NULL);
    if (token) t->token = stk__strdup(token);
    return t->access_key && t->secret_key && (!token || t->token) ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  }
  stk__strbuf path = {0};
  const char *file = env_or("AWS_SHARED_CREDENTIALS_FILE", NULL), *home = getenv("HOME");
  if (file)
    STK_TRY(stk__strbuf_printf(&path, "%s", file));
  else if (home)
    STK_TRY(stk__strbuf_printf(&path, "%s/.aws/credentials", home));
  else
    return STK_OK;
  uint8_t *text = NULL;
  size_t size = 0;
  const char *profile = env_or("AWS_PROFILE", NULL);
  if (!profile) profile = "default";
  if (stk__read_file(path.data, (size_t)1 << 20, &text, &size) == STK_OK) {
    t->access_key = ini_value((const char *)text, profile, "aws_access_key_id");
    t->secret_key = ini_value((const char *)text, profile, "aws_secret_access_key");
    t->token = ini_value((const char *)text, profile, "aws_session_token");
  }
  free(text);
  stk__strbuf_free(&path);
  if (!t->access_key || !t->secret_key) { /* anonymous */
    free(t->access_key);
    free(t->secret_key);
    free(t->token);
    t->access_key = t->secret_key = t->token = NULL;
  }
  return STK_OK;
}

static stk_status s3_http_url(stk__strbuf *u, const char *url, const char *query, bool bucket_only,
                              const char *region) {
  const char *bucket, *key;
  size_t blen;
  STK_TRY(stk__s3_split(url, &bucket, &blen, &key));
  const stk__remote_opts *o = stk__remote_current();
  const char *endpoint =
      given_or_env(o ? o->endpoint : NULL, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
  if (endpoint) {
    size_t elen = strlen(endpoint);
    while (elen > 0 && endpoint[elen - 1] == '/') elen--;
    STK_TRY(stk__strbuf_append(u, endpoint, elen));
    STK_TRY(stk__strbuf_append(u, "/", 1));
    STK_TRY(stk__url_encode(u, bucket, blen, false));
  } else {
    STK_TRY(stk__strbuf_append(u, "https://", 8));
    STK_TRY(stk__url_encode(u, bucket, blen, false));
    STK_TRY(stk__strbuf_printf(u, ".s3.%s.amazonaws.com", region));
  }
  STK_TRY(stk__strbuf_append(u, "/", 1));
  if (!bucket_only) STK_TRY(stk__url_encode(u, key, strlen(key), true));
  if (query) STK_TRY(stk__strbuf_printf(u, "?%s", query));
  return STK_OK;
}

stk_status stk__remote_target_make(stk__remote_target *t, const char *url, const char *query,
                                   bool bucket_only) {
  memset(t, 0, sizeof *t);
  if (strncmp(url, "s3://", 5) != 0) {
    t->http_url = stk__strdup(url);
    return t->http_url ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  }
  const stk__remote_opts *o = stk__remote_current();
  const char *region = given_or_env(o ? o->region : NULL, "AWS_REGION", "AWS_DEFAULT_REGION");
  if (!region) region = "us-east-1";
  stk__strbuf u = {0};
  stk_status st = s3_http_url(&u, url, query, bucket_only, region);
  if (st != STK_OK) {
    stk__strbuf_free(&u);
    return st;
  }
  t->http_url = u.data;
  STK_TRY(load_credentials(t));
  if (t->access_key) {
    stk__strbuf sig = {0};
    STK_TRY(stk__strbuf_printf(&sig, "aws:amz:%s:s3", region));
    t->sigv4 = sig.data;
  }
  return STK_OK;
}

void stk__remote_target_free(stk__remote_target *t) {
  free(t->http_url);
  free(t->sigv4);
  free(t->access_key);
  free(t->secret_key);
  free(t->token);
  memset(t, 0, sizeof *t);
}

/* The text between <tag> and </tag> at or after `p` (before `end`), or NULL. */
static const char *xml_element(const char *p, const char *end, const char *tag, size_t *len,
                               const char **after) {
  char open[64], close[64];
  snprintf(open, sizeof open, "<%s>", tag);
  snprintf(close, sizeof close, "</%s>", tag);
  size_t ol = strlen(open), cl = strlen(close);
  for (const char *s = p; s + ol <= end; s++) {
    if (memcmp(s, open, ol) != 0) continue;
    for (const char *e = s + ol; e + cl <= end; e++)
      if (memcmp(e, close, cl) == 0) {
        *len = (size_t)(e - (s + ol));
        *after = e + cl;
        return s + ol;
      }
    return NULL;
  }
  return NULL;
}

/* XML-decodes the five predefined entities and numeric ASCII references in place;
 * returns the new length. */
static size_t xml_decode(char *s, size_t n) {
  static const struct {
    const char *ent;
    char c;
  } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    bool done = false;
    for (size_t k = 0; s[i] == '&' && k < sizeof ents / sizeof ents[0] && !done; k++) {
      size_t l = strlen(ents[k].ent);
      if (i + l <= n && memcmp(s + i, ents[k].ent, l) == 0) {
        s[o++] = ents[k].c;
        i += l;
        done = true;
      }
    }
    if (!done && s[i] == '&' && i + 3 < n && s[i + 1] == '#') {
      char *semi = memchr(s + i, ';', n - i);
      long v = semi ? strtol(s + i + 2, NULL, 10) : 0;
      if (semi && v > 0 && v < 128) {
        s[o++] = (char)v;
        i = (size_t)(semi - s) + 1;
        done = true;
      }
    }
    if (!done) s[o++] = s[i++];
  }
  return o;
}

static stk_status visit_contents(const char *c, size_t clen, stk__list_visit_fn fn, void *user) {
  size_t klen, slen;
  const char *after, *end = c + clen;
  const char *k = xml_element(c, end, "Key", &klen, &after);
  const char *sz = xml_element(c, end, "Size", &slen, &after);
  if (!k) return STK_FAIL(STK_ERR_PARSE, "a listing entry without <Key>");
  int64_t size = -1;
  if (sz && slen > 0 && slen < 20) {
    char tmp[24];
    memcpy(tmp, sz, slen);
    tmp[slen] = 0;
    char *e;
    long long v = strtoll(tmp, &e, 10);
    if (*e == 0 && v >= 0) size = v;
  }
  char *key = malloc(klen + 1);
  if (!key) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "a listed key");
  memcpy(key, k, klen);
  klen = xml_decode(key, klen);
  key[klen] = 0;
  stk_status st = fn(user, key, klen, size);
  free(key);
  return st;
}

stk_status stk__s3_parse_list(const char *xml, size_t len, stk__list_visit_fn fn, void *user,
                              char **next) {
  *next = NULL;
  const char *p = xml, *end = xml + len, *after;
  size_t n;
  for (const char *c; (c = xml_element(p, end, "Contents", &n, &after)) != NULL; p = after)
    STK_TRY(visit_contents(c, n, fn, user));
  const char *trunc = xml_element(xml, end, "IsTruncated", &n, &after);
  if (!trunc || n != 4 || memcmp(trunc, "true", 4) != 0) return STK_OK;
  const char *tok = xml_element(xml, end, "NextContinuationToken", &n, &after);
  if (!tok || n == 0)
    return STK_FAIL(STK_ERR_PARSE, "a truncated listing without NextContinuationToken");
  *next = malloc(n + 1);
  if (!*next) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "a continuation token");
  memcpy(*next, tok, n);
  (*next)[xml_decode(*next, n)] = 0;
  return STK_OK;
}
