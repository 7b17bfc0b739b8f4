/* The remote layer's pure parts (io/remote_url.h): how s3:// URLs map to HTTP URLs with
 * and without a custom endpoint, key encoding, where credentials come from (environment,
 * credentials file profiles), and the ListObjectsV2 parser on hand-written answers
 * (entities, continuation, malformed pages). The network side runs against real servers
 * in tests/python/test_remote.py and the response fuzzer (fuzz_http_response). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/remote.h"
#include "io/remote_url.h"
#include "testutil.h"

static void clear_env(void) {
  const char *vars[] = {"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
                        "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                        "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE"};
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
  const char *text = "# comment\n[default]\naws_access_key_id = DEF\naws_secret_access_key=DS\n"
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_is_url),
      cmocka_unit_test(test_s3_urls_with_and_without_endpoint),
      cmocka_unit_test(test_credentials_file_profiles),
      cmocka_unit_test(test_list_parser),
      cmocka_unit_test(test_url_encoding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
