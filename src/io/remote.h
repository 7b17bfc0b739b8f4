/*
 * Remote objects over HTTP(S) and S3 (libcurl): sizes, range reads, whole-object reads,
 * uploads and S3 prefix listings, for the readers (through io/fileset.h) and the CLI.
 *
 * URLs: "s3://bucket/key" goes to the endpoint AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL
 * (path style: <endpoint>/<bucket>/<key>, as S3-compatible stores expect) or, without
 * one, https://<bucket>.s3.<region>.amazonaws.com/<key>; requests are signed with AWS
 * SigV4 (curl's CURLOPT_AWS_SIGV4) when credentials are found: AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN from the environment, else the profile
 * AWS_PROFILE (default "default") of AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials.
 * Region: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1. Without credentials requests
 * are anonymous (public buckets). "http://" and "https://" URLs are fetched as they are.
 *
 * Faults: connection failures, resets, stalls (no byte for STK_REMOTE_TIMEOUT seconds),
 * short bodies, HTTP 408, 429 and 5xx (503 SlowDown included) are retried up to
 * STK_REMOTE_RETRIES times (default 6) with exponential backoff from
 * STK_REMOTE_BACKOFF_MS (default 100 ms, doubling, capped at 10 s, jittered). Other
 * statuses fail at once: 404 is STK_ERR_NOT_FOUND, the rest STK_ERR_IO, the message
 * naming the URL, the status and S3's error code. Responses are untrusted: a body is
 * never written beyond the buffer asked for, whatever Content-Length says; a server
 * that ignores Range is handled (the unwanted bytes are skipped).
 *
 * Connections: easy handles (each keeping its connections alive) are pooled, up to
 * STK_REMOTE_CONNECTIONS idle ones (default 32). Every function is thread-safe.
 */
#ifndef STOKER_IO_REMOTE_H
#define STOKER_IO_REMOTE_H

#include "../core/core.h"

/* True for "s3://", "http://" and "https://" paths. */
bool stk__is_url(const char *path);

/* The object's size in bytes (HEAD). */
stk_status stk__remote_size(const char *url, int64_t *size);

/* Exactly `size` bytes at `offset` into `dst` (a range request); a shorter body after
 * every retry is STK_ERR_IO naming the URL and range. */
stk_status stk__remote_read(const char *url, int64_t offset, void *dst, size_t size);

/* The whole object into a malloc'd buffer (the caller frees it); an object larger than
 * `max_bytes` is STK_ERR_LIMIT. */
stk_status stk__remote_get(const char *url, size_t max_bytes, uint8_t **data, size_t *size);

/* stk__read_file for a local path or a URL (a NUL appended, not counted). */
stk_status stk__read_path(const char *path, size_t max_bytes, uint8_t **data, size_t *size);

/* Uploads `size` bytes as the object at `url` (PUT). */
stk_status stk__remote_put(const char *url, const void *data, size_t size);

/* Uploads the local file `path` to `url`. */
stk_status stk__remote_put_file(const char *url, const char *path);

/* Every object whose key starts with the prefix of `url` ("s3://bucket/prefix"), sorted
 * by key: *urls is one allocation of *count full "s3://" URLs (free(*urls)), *sizes their
 * sizes (free(*sizes); may be NULL). Only s3:// URLs can be listed (STK_ERR_UNSUPPORTED
 * otherwise). At most 10^7 objects. */
stk_status stk__remote_list(const char *url, char ***urls, int64_t **sizes, size_t *count);

/* Settings given as a reader's arguments (the remote_* arguments, reader_common.h): a
 * field left unset (NULL, -1) falls back to its environment variable, then to the
 * built-in default. */
typedef struct {
  const char *endpoint;  /* AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL */
  const char *region;    /* AWS_REGION, AWS_DEFAULT_REGION */
  const char *ca_bundle; /* STK_REMOTE_CA_BUNDLE: PEM file of the CAs https:// servers are
                            verified against (else the system's) */
  int retries;           /* STK_REMOTE_RETRIES */
  int backoff_ms;        /* STK_REMOTE_BACKOFF_MS */
  int timeout;           /* STK_REMOTE_TIMEOUT */
  int block_kb;          /* STK_REMOTE_BLOCK_KB */
  int cache_mb;          /* STK_REMOTE_CACHE_MB */
  int readahead;         /* STK_REMOTE_READAHEAD */
  int prefetch_threads;  /* STK_REMOTE_PREFETCH_THREADS */
} stk__remote_opts;

#define STK__REMOTE_OPTS_UNSET \
  { NULL, NULL, NULL, -1, -1, -1, -1, -1, -1, -1 }

/* Makes `o` the settings of the calling thread's remote calls (NULL: the environment's
 * alone) and returns the previous ones, to be restored: a reader sets its own around its
 * build and its reads, the block cache around its requests. `o` must outlive its use.
 * Per thread, because the calls below take no settings of their own. */
const stk__remote_opts *stk__remote_use(const stk__remote_opts *o);
const stk__remote_opts *stk__remote_current(void);

/* Setting `name` (an STK_REMOTE_* variable): the calling thread's settings' value when
 * set, else the environment's (read on each call: tests change it), else `fallback`;
 * values outside [lo, hi] are ignored. */
int stk__remote_setting(const char *name, int fallback, int lo, int hi);
/* Whether `name` is set (by the thread's settings or the environment). */
bool stk__remote_setting_given(const char *name);

#endif /* STOKER_IO_REMOTE_H */
