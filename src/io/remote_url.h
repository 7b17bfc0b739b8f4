/*
 * What a request to a remote URL needs besides the URL (io/remote.h): the HTTP URL an
 * "s3://" URL maps to, and the SigV4 signing settings and credentials. Pure string work
 * and reading the credentials file; no network.
 */
#ifndef STOKER_IO_REMOTE_URL_H
#define STOKER_IO_REMOTE_URL_H

#include "../core/core.h"

typedef struct {
  char *http_url;   /* what curl fetches */
  char *sigv4;      /* "aws:amz:<region>:s3", or NULL: unsigned */
  char *access_key; /* with sigv4 */
  char *secret_key;
  char *token; /* session token, or NULL */
} stk__remote_target;

/* Resolves `url` (s3:// or http(s)://). For s3://, `query` (may be NULL) is appended
 * after '?', and `bucket_only` addresses the bucket (listings) instead of the key.
 * Free with stk__remote_target_free. */
stk_status stk__remote_target_make(stk__remote_target *t, const char *url, const char *query,
                                   bool bucket_only);
void stk__remote_target_free(stk__remote_target *t);

/* Splits "s3://bucket/key": *bucket and *key point into `url` (key may be empty).
 * STK_ERR_INVALID_ARGUMENT when the bucket is missing. */
stk_status stk__s3_split(const char *url, const char **bucket, size_t *bucket_len,
                         const char **key);

/* Appends `s` percent-encoded (RFC 3986 unreserved characters kept, and '/' when
 * `keep_slash`). */
stk_status stk__url_encode(stk__strbuf *b, const char *s, size_t n, bool keep_slash);

/* One ListObjectsV2 page: calls `fn` for every <Contents> entry (key XML-decoded, size),
 * and sets *next (malloc'd, or NULL when the listing is complete). `xml` is untrusted. */
typedef stk_status (*stk__list_visit_fn)(void *user, const char *key, size_t key_len, int64_t size);
stk_status stk__s3_parse_list(const char *xml, size_t len, stk__list_visit_fn fn, void *user,
                              char **next);

#endif /* STOKER_IO_REMOTE_URL_H */
