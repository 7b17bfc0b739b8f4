/* The remote layer's pure parts (io/remote_url.h): how s3:// URLs map to HTTP URLs with
 * and without a custom endpoint, key encoding, where credentials come from (environment,
 * credentials file profiles), and the ListObjectsV2 parser on hand-written answers
 * (entities, continuation, malformed pages); and the block cache under concurrent
 * sequential and random reads against an in-process HTTP server with ranges, with a
 * cache much smaller than the object (run under ThreadSanitizer too). The readers run
 * against real servers in tests/python/test_remote.py; responses are fuzzed by
 * fuzz_http_response. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/fileset.h"
#include "io/remote.h"
#include "io/remote_cache.h"
#include "io/remote_url.h"
#include "testutil.h"

static void clear_env(void) {
  const char *vars[] = {
      "AWS_ENDPOINT_URL",      "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
      "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",   "AWS_REGION",
      "AWS_DEFAULT_REGION",    "AWS_PROFILE",         "AWS_SHARED_CREDENTIALS_FILE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
  setenv("HOME", "/nonexistent-stoker-home", 1);
}

static void test_is_url(void **state) {
  (void)state;
  assert_true(stk__is_url("s3://b/k"));
  assert_true(stk__is_url("http://h/x") && stk__is_url("https://h/x"));
  assert_false(stk__is_url("/data/s3://x") || stk__is_url("file:///x") || stk__is_url("s3:/b"));
}

static void test_s3_urls_with_and_without_endpoint(void **state) {
  (void)state;
  clear_env();
  stk__remote_target t;
  setenv("AWS_REGION", "eu-west-1", 1);
  TU_OK(stk__remote_target_make(&t, "s3://my-bucket/dir/a b+c.tar", NULL, false));
  assert_string_equal(t.http_url, "https://my-bucket.s3.eu-west-1.amazonaws.com/dir/a%20b%2Bc.tar");
  assert_null(t.sigv4); /* no credentials anywhere: anonymous */
  stk__remote_target_free(&t);
  setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/", 1);
  setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
  TU_OK(stk__remote_target_make(&t, "s3://b/k/x.idx", "list-type=2&prefix=k%2F", true));
  assert_string_equal(t.http_url, "http://127.0.0.1:9000/b/?list-type=2&prefix=k%2F");
  assert_string_equal(t.sigv4, "aws:amz:eu-west-1:s3");
  assert_string_equal(t.access_key, "AKID");
  assert_string_equal(t.secret_key, "SECRET");
  assert_null(t.token);
  stk__remote_target_free(&t);
  setenv("AWS_ENDPOINT_URL_S3", "https://minio.local", 1); /* the S3-specific one wins */
  TU_OK(stk__remote_target_make(&t, "s3://b/k", NULL, false));
  assert_string_equal(t.http_url, "https://minio.local/b/k");
  stk__remote_target_free(&t);
  TU_OK(stk__remote_target_make(&t, "https://h/x?y=1", NULL, false)); /* as it is */
  assert_string_equal(t.http_url, "https://h/x?y=1");
  assert_null(t.sigv4);
  stk__remote_target_free(&t);
  assert_int_equal(stk__remote_target_make(&t, "s3:///k", NULL, false), STK_ERR_INVALID_ARGUMENT);
  stk__remote_target_free(&t);
  clear_env();
}

static void test_credentials_file_profiles(void **state) {
  (void)state;
  clear_env();
  char path[] = "/tmp/stk-creds-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char *text =
      "# comment\n[default]\naws_access_key_id = DEF\naws_secret_access_key=DS\n"
      "\n[ work ]\n aws_access_key_id=WK \naws_secret_access_key = WS\n"
      "aws_session_token = TOK\n[broken]\naws_access_key_id = ONLY\n";
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
  stk__remote_target t;
  TU_OK(stk__remote_target_make(&t, "s3://b/k", NULL, false));
  assert_string_equal(t.access_key, "DEF");
  assert_string_equal(t.secret_key, "DS");
  assert_null(t.token);
  assert_string_equal(t.sigv4, "aws:amz:us-east-1:s3"); /* the default region */
  stk__remote_target_free(&t);
  setenv("AWS_PROFILE", "work", 1);
  TU_OK(stk__remote_target_make(&t, "s3://b/k", NULL, false));
  assert_string_equal(t.access_key, "WK");
  assert_string_equal(t.secret_key, "WS");
  assert_string_equal(t.token, "TOK");
  stk__remote_target_free(&t);
  setenv("AWS_PROFILE", "broken", 1); /* no secret: anonymous, not half-signed */
  TU_OK(stk__remote_target_make(&t, "s3://b/k", NULL, false));
  assert_null(t.sigv4);
  assert_null(t.access_key);
  stk__remote_target_free(&t);
  setenv("AWS_ACCESS_KEY_ID", "ENV", 1); /* the environment wins over the file */
  setenv("AWS_SECRET_ACCESS_KEY", "ENVS", 1);
  TU_OK(stk__remote_target_make(&t, "s3://b/k", NULL, false));
  assert_string_equal(t.access_key, "ENV");
  stk__remote_target_free(&t);
  unlink(path);
  clear_env();
}

/* A reader's settings (stk__remote_use) come before the environment, which comes before
 * the default; out-of-range values fall through; the endpoint and region too. */
static void test_settings_precedence(void **state) {
  (void)state;
  clear_env();
  unsetenv("STK_REMOTE_RETRIES");
  assert_int_equal(stk__remote_setting("STK_REMOTE_RETRIES", 6, 0, 100), 6);
  assert_false(stk__remote_setting_given("STK_REMOTE_RETRIES"));
  setenv("STK_REMOTE_RETRIES", "3", 1);
  assert_int_equal(stk__remote_setting("STK_REMOTE_RETRIES", 6, 0, 100), 3);
  stk__remote_opts o = STK__REMOTE_OPTS_UNSET;
  const stk__remote_opts *prev = stk__remote_use(&o);
  assert_null(prev);
  assert_int_equal(stk__remote_setting("STK_REMOTE_RETRIES", 6, 0, 100), 3); /* unset: env */
  o.retries = 0;
  assert_int_equal(stk__remote_setting("STK_REMOTE_RETRIES", 6, 0, 100), 0);
  o.retries = 500; /* out of range: as if unset */
  assert_int_equal(stk__remote_setting("STK_REMOTE_RETRIES", 6, 0, 100), 3);
  o.cache_mb = 8;
  assert_true(stk__remote_setting_given("STK_REMOTE_CACHE_MB"));
  assert_int_equal(stk__remote_setting("STK_REMOTE_CACHE_MB", 256, 1, 1 << 20), 8);
  setenv("AWS_ENDPOINT_URL", "http://env:1", 1);
  setenv("AWS_REGION", "eu-west-1", 1);
  setenv("AWS_ACCESS_KEY_ID", "A", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "S", 1);
  stk__remote_target t;
  TU_OK(stk__remote_target_make(&t, "s3://b/k", NULL, false));
  assert_string_equal(t.http_url, "http://env:1/b/k");
  assert_string_equal(t.sigv4, "aws:amz:eu-west-1:s3");
  stk__remote_target_free(&t);
  o.endpoint = "http://arg:2/";
  o.region = "ap-south-1";
  TU_OK(stk__remote_target_make(&t, "s3://b/k", NULL, false));
  assert_string_equal(t.http_url, "http://arg:2/b/k");
  assert_string_equal(t.sigv4, "aws:amz:ap-south-1:s3");
  stk__remote_target_free(&t);
  assert_ptr_equal(stk__remote_use(prev), &o);
  assert_int_equal(stk__remote_setting("STK_REMOTE_RETRIES", 6, 0, 100), 3);
  unsetenv("STK_REMOTE_RETRIES");
  clear_env();
}

typedef struct {
  char keys[8][64];
  int64_t sizes[8];
  int n;
} seen;

static stk_status collect(void *user, const char *key, size_t len, int64_t size) {
  seen *s = user;
  if (s->n == 8 || len >= 64) return STK_ERR_LIMIT;
  memcpy(s->keys[s->n], key, len);
  s->keys[s->n][len] = 0;
  s->sizes[s->n++] = size;
  return STK_OK;
}

static void test_list_parser(void **state) {
  (void)state;
  const char *page =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>b</Name>"
      "<IsTruncated>true</IsTruncated><Contents><Key>d/a&amp;b &lt;1&gt;.tar</Key>"
      "<LastModified>x</LastModified><Size>1234</Size></Contents>"
      "<Contents><Key>d/&#38;c.tar</Key><Size>0</Size></Contents>"
      "<NextContinuationToken>1/abc&amp;=</NextContinuationToken></ListBucketResult>";
  seen s = {0};
  char *next = NULL;
  TU_OK(stk__s3_parse_list(page, strlen(page), collect, &s, &next));
  assert_int_equal(s.n, 2);
  assert_string_equal(s.keys[0], "d/a&b <1>.tar");
  assert_int_equal(s.sizes[0], 1234);
  assert_string_equal(s.keys[1], "d/&c.tar");
  assert_int_equal(s.sizes[1], 0);
  assert_string_equal(next, "1/abc&=");
  free(next);
  const char *last = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
  memset(&s, 0, sizeof s);
  TU_OK(stk__s3_parse_list(last, strlen(last), collect, &s, &next));
  assert_int_equal(s.n, 0);
  assert_null(next);
  const char *no_token = "<IsTruncated>true</IsTruncated>";
  assert_int_equal(stk__s3_parse_list(no_token, strlen(no_token), collect, &s, &next),
                   STK_ERR_PARSE);
  const char *no_key = "<Contents><Size>5</Size></Contents>";
  assert_int_equal(stk__s3_parse_list(no_key, strlen(no_key), collect, &s, &next), STK_ERR_PARSE);
}

static void test_url_encoding(void **state) {
  (void)state;
  stk__strbuf b = {0};
  TU_OK(stk__url_encode(&b, "a/b c~_-.%\xff", 11, true));
  assert_string_equal(b.data, "a/b%20c~_-.%25%FF");
  b.len = 0;
  TU_OK(stk__url_encode(&b, "a/b", 3, false));
  assert_string_equal(b.data, "a%2Fb");
  stk__strbuf_free(&b);
}

/* ---- an HTTP server of one object, with ranges ---- */

#define OBJ_SIZE (4 << 20)
static uint8_t object[OBJ_SIZE];
static int server_port;

static uint8_t object_byte(int64_t i) { return (uint8_t)((i * 131) ^ (i >> 9)); }

static void *serve_one(void *arg) {
  int c = (int)(intptr_t)arg;
  char req[4096];
  size_t n = 0;
  while (n < sizeof req - 1) {
    ssize_t k = recv(c, req + n, sizeof req - 1 - n, 0);
    if (k <= 0) break;
    n += (size_t)k;
    req[n] = 0;
    if (strstr(req, "\r\n\r\n")) break;
  }
  req[n] = 0;
  long long a = 0, b = OBJ_SIZE - 1;
  const char *r = strstr(req, "Range: bytes=");
  bool ranged = r && sscanf(r, "Range: bytes=%lld-%lld", &a, &b) >= 1;
  if (b >= OBJ_SIZE) b = OBJ_SIZE - 1;
  char head[256];
  int hl = ranged ? snprintf(head, sizeof head,
                             "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes %lld-%lld/%d\r\n"
                             "Content-Length: %lld\r\nConnection: close\r\n\r\n",
                             a, b, OBJ_SIZE, b - a + 1)
                  : snprintf(head, sizeof head,
                             "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
                             OBJ_SIZE);
  send(c, head, (size_t)hl, MSG_NOSIGNAL);
  if (strncmp(req, "HEAD", 4) != 0) {
    for (long long at = a; at <= b;) {
      ssize_t k = send(c, object + at, (size_t)(b - at + 1), MSG_NOSIGNAL);
      if (k <= 0) break;
      at += k;
    }
  }
  close(c);
  return NULL;
}

static void *accept_loop(void *arg) {
  int s = *(int *)arg;
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0) continue;
    pthread_t t;
    if (pthread_create(&t, NULL, serve_one, (void *)(intptr_t)c) == 0)
      pthread_detach(t);
    else
      close(c);
  }
  return NULL;
}

static int start_object_server(void **state) {
  (void)state;
  static int s;
  for (int64_t i = 0; i < OBJ_SIZE; i++) object[i] = object_byte(i);
  s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &len) != 0)
    return -1;
  server_port = ntohs(a.sin_port);
  pthread_t t;
  pthread_create(&t, NULL, accept_loop, &s);
  pthread_detach(t);
  return 0;
}

typedef struct {
  const stk__fileset *fs;
  int id;
  int bad;
} reader_arg;

/* Threads 0-2 read the object front to back in uneven chunks (the cache's blocks, with
 * read-ahead); thread 3 reads at random places (straight range requests). */
static void *read_object(void *p) {
  reader_arg *r = p;
  uint8_t *buf = malloc(70000);
  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(r->id + 1);
  int64_t off = 0;
  for (int k = 0; k < 400 && off < OBJ_SIZE; k++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    size_t n = 1 + (size_t)((x >> 33) % 70000);
    int64_t at = r->id == 3 ? (int64_t)((x >> 17) % OBJ_SIZE) : off;
    size_t got = 0;
    if (stk__fileset_pread(r->fs, 0, at, buf, n, &got) != STK_OK) {
      r->bad++;
      break;
    }
    if (got != (at + (int64_t)n <= OBJ_SIZE ? n : (size_t)(OBJ_SIZE - at))) r->bad++;
    for (size_t i = 0; i < got; i++)
      if (buf[i] != object_byte(at + (int64_t)i)) {
        r->bad++;
        break;
      }
    off += (int64_t)got;
  }
  free(buf);
  return NULL;
}

static void test_cache_concurrent_reads(void **state) {
  (void)state;
  setenv("STK_REMOTE_BLOCK_KB", "16", 1); /* 256 blocks of the object */
  setenv("STK_REMOTE_CACHE_MB", "1", 1);  /* 64 of them cached: blocks are evicted */
  setenv("STK_REMOTE_READAHEAD", "3", 1);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/obj", server_port);
  const char *paths[] = {url};
  stk__fileset fs;
  TU_OK(stk__fileset_open(&fs, paths, 1, "test"));
  assert_int_equal(fs.sizes[0], OBJ_SIZE);
  assert_int_equal(fs.fds[0], STK__FD_REMOTE);
  pthread_t t[4];
  reader_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (reader_arg){&fs, i, 0};
    pthread_create(&t[i], NULL, read_object, &args[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++) assert_int_equal(args[i].bad, 0);
  int64_t requests, hits;
  stk__remote_cache_stats(fs.cache, &requests, &hits);
  /* the sequential readers share blocks: far fewer requests than reads */
  assert_true(hits > 0);
  assert_true(requests > 0 && requests < 3 * 400);
  /* past the end: short, and nothing requested */
  uint8_t b[8];
  size_t got = 99;
  TU_OK(stk__fileset_pread(&fs, 0, OBJ_SIZE, b, sizeof b, &got));
  assert_int_equal(got, 0);
  assert_int_equal(stk__fileset_read(&fs, 0, OBJ_SIZE - 4, b, 8), STK_ERR_DECODE);
  stk__fileset_close(&fs);
  /* a hint fetches the block in the background; the read then finds it */
  TU_OK(stk__fileset_open(&fs, paths, 1, "test"));
  stk__fileset_hint(&fs, 0, 100);
  for (int i = 0; i < 200; i++) {
    stk__remote_cache_stats(fs.cache, &requests, &hits);
    if (requests == 1) break;
    usleep(10000);
  }
  assert_int_equal(requests, 1);
  usleep(50000); /* let the load finish */
  TU_OK(stk__fileset_read(&fs, 0, 10, b, 8));
  for (int i = 0; i < 8; i++) assert_int_equal(b[i], object_byte(10 + i));
  stk__remote_cache_stats(fs.cache, &requests, &hits);
  assert_int_equal(hits, 1);
  stk__fileset_close(&fs);
  unsetenv("STK_REMOTE_BLOCK_KB");
  unsetenv("STK_REMOTE_CACHE_MB");
  unsetenv("STK_REMOTE_READAHEAD");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_is_url),
      cmocka_unit_test(test_s3_urls_with_and_without_endpoint),
      cmocka_unit_test(test_credentials_file_profiles),
      cmocka_unit_test(test_settings_precedence),
      cmocka_unit_test(test_list_parser),
      cmocka_unit_test(test_url_encoding),
      cmocka_unit_test(test_cache_concurrent_reads),
  };
  return cmocka_run_group_tests(tests, start_object_server, NULL);
}
