/* The JSON reader (io/json.c): values, nesting, escapes and the token tree, against
 * hand-written texts; errors carry the file name and the byte offset. */
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "testutil.h"

static stk_status parse(stk__json_doc *d, const char *text) {
  return stk__json_parse(d, text, strlen(text), "t.json");
}

static void test_values_and_members(void **state) {
  (void)state;
  const char *text = " {\"a\": [1, -2.5e1, true, null], \"b\": {\"c\": \"x\\ty\"}, \"d\": []} ";
  stk__json_doc d;
  assert_int_equal(parse(&d, text), STK_OK);
  /* object, "a", [..], 1, -25, true, null, "b", {..}, "c", "x\ty", "d", [] */
  assert_int_equal(d.count, 13);
  assert_int_equal(d.toks[0].type, STK__JSON_OBJECT);
  assert_int_equal(d.toks[0].size, 3);
  uint32_t a = stk__json_member(&d, 0, "a");
  assert_int_equal(a, 2);
  assert_int_equal(d.toks[a].size, 4);
  assert_int_equal(d.toks[a].next, 7);
  double v;
  uint32_t e = stk__json_first(&d, a);
  assert_true(stk__json_number(&d, e, &v) && v == 1.0);
  e = d.toks[e].next;
  assert_true(stk__json_number(&d, e, &v) && v == -25.0);
  int64_t i;
  assert_false(stk__json_int(&d, e, 0, 10, &i)); /* negative: out of the range asked */
  assert_true(stk__json_int(&d, e, -100, 10, &i) && i == -25);
  assert_int_equal(d.toks[d.toks[e].next].type, STK__JSON_TRUE);
  uint32_t c = stk__json_member(&d, stk__json_member(&d, 0, "b"), "c");
  char *s = stk__json_strdup(&d, c);
  assert_string_equal(s, "x\ty");
  free(s);
  assert_int_equal(stk__json_first(&d, stk__json_member(&d, 0, "d")), 0); /* empty */
  assert_int_equal(stk__json_member(&d, 0, "zz"), 0);
  assert_int_equal(stk__json_member(&d, a, "a"), 0); /* not an object */
  stk__json_free(&d);
}

static void test_unicode_escapes(void **state) {
  (void)state;
  stk__json_doc d;
  assert_int_equal(parse(&d, "[\"\\u00e9\\ud83d\\ude00\\/\", \"\\u0041\", \"a\\u0000b\"]"), STK_OK);
  char *s = stk__json_strdup(&d, 1);
  assert_string_equal(s, "\xC3\xA9\xF0\x9F\x98\x80/"); /* U+00E9, U+1F600, '/' */
  free(s);
  assert_true(stk__json_streq(&d, 2, "A"));
  assert_null(stk__json_strdup(&d, 3)); /* an embedded NUL is refused */
  stk__json_free(&d);
}

/* Each bad text fails with STK_ERR_DECODE at the byte named. */
static void test_errors_name_offsets(void **state) {
  (void)state;
  static const struct {
    const char *text, *msg;
  } cases[] = {
      {"[1,]", "t.json: byte 3: unexpected character"},
      {"{\"a\" 1}", "t.json: byte 5: expected ':'"},
      {"\"abc", "t.json: byte 0: unterminated string"},
      {"01", "t.json: byte 1: text after the value"},
      {"[1.]", "t.json: byte 1: bad number"},
      {"[1] x", "t.json: byte 4: text after the value"},
      {"[1}", "t.json: byte 2: mismatched closing bracket"},
      {"{1:2}", "t.json: byte 1: expected a string key"},
      {"[\"a\nb\"]", "t.json: byte 3: control character"},
      {"[\"\\x\"]", "t.json: byte 2: bad escape"},
      {"", "t.json: byte 0: empty text"},
      {"[[", "t.json: byte 2: unexpected end"},
      {"tru", "t.json: byte 0: unexpected character"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    stk__json_doc d;
    assert_int_equal(parse(&d, cases[k].text), STK_ERR_DECODE);
    if (!strstr(stk_last_error(), cases[k].msg))
      fail_msg("%s -> %s", cases[k].text, stk_last_error());
    stk__json_free(&d);
  }
}

static void test_depth_limit(void **state) {
  (void)state;
  size_t n = STK__JSON_MAX_DEPTH + 1;
  char *text = malloc(2 * n + 1);
  memset(text, '[', n);
  memset(text + n, ']', n);
  text[2 * n] = 0;
  stk__json_doc d;
  assert_int_equal(parse(&d, text), STK_ERR_LIMIT);
  stk__json_free(&d);
  text[n - 1] = ' ', text[n] = ' '; /* one level less: accepted */
  assert_int_equal(parse(&d, text), STK_OK);
  assert_int_equal(d.count, STK__JSON_MAX_DEPTH);
  stk__json_free(&d);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values_and_members),
      cmocka_unit_test(test_unicode_escapes),
      cmocka_unit_test(test_errors_name_offsets),
      cmocka_unit_test(test_depth_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
