/* The sample cache's store (src/pipeline/cache_store.c): memory entries are evicted least
 * recently used first (a lookup refreshes an entry) and never exceed the capacity; a stamp
 * that differs is a miss; an entry pinned by a lookup survives its eviction until unpinned;
 * disk entries round-trip, a damaged or foreign file is a miss, a full directory stops
 * storing, another prefix empties the directory of cache files only; many threads storing
 * and finding at once see only whole, correct values. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "../../src/pipeline/cache.h"

/* A one-tensor value: `n` bytes of `fill` (shape [n], uint8). */
static stk__cache_value value_of(uint8_t *buf, int64_t n, uint8_t fill) {
  memset(buf, fill, (size_t)n);
  stk__cache_value v = {.count = 1};
  v.t[0].data = buf;
  v.t[0].ndim = 1;
  v.t[0].shape[0] = n;
  v.t[0].dtype = STK_DTYPE_UINT8;
  v.bytes[0] = (size_t)n;
  return v;
}

/* Finds `key` and returns the first byte of its value, or -1 for a miss. */
static int find_byte(stk__cache_store *s, const char *key, const char *stamp) {
  stk__cache_value v;
  stk__cache_pin pin;
  bool hit;
  TU_OK(stk__cache_store_find(s, key, stamp, &v, &pin, &hit));
  if (!hit) return -1;
  uint8_t *dst = malloc(v.bytes[0] + 1);
  TU_OK(stk__cache_store_read(s, &pin, &v, 0, dst));
  int first = dst[0];
  for (size_t i = 0; i < v.bytes[0]; i++) assert_int_equal(dst[i], first);
  free(dst);
  stk__cache_store_unpin(s, &pin);
  return first;
}

static void test_memory_lru_order_and_bound(void **state) {
  (void)state;
  uint8_t buf[4000];
  stk__cache_store *s;
  /* room for two 4000-byte entries with their headers, not three */
  TU_OK(stk__cache_store_create(3 * 4000 - 1, NULL, "prefix", "t", &s));
  stk__cache_value v;
  v = value_of(buf, 4000, 1);
  TU_OK(stk__cache_store_put(s, "a", "1", &v));
  v = value_of(buf, 4000, 2);
  TU_OK(stk__cache_store_put(s, "b", "1", &v));
  assert_int_equal(find_byte(s, "a", "1"), 1); /* a is now the most recently used */
  v = value_of(buf, 4000, 3);
  TU_OK(stk__cache_store_put(s, "c", "1", &v));
  assert_int_equal(find_byte(s, "b", "1"), -1); /* b went, not a */
  assert_int_equal(find_byte(s, "a", "1"), 1);
  assert_int_equal(find_byte(s, "c", "1"), 3);
  stk__cache_store_stats st;
  stk__cache_store_stats_get(s, &st);
  assert_int_equal(st.entries, 2);
  assert_true(st.bytes <= 3 * 4000 - 1 && st.bytes >= 2 * 4000);
  assert_int_equal(st.dropped, 1);
  /* another stamp (the file changed) is a miss; storing again replaces the entry */
  assert_int_equal(find_byte(s, "a", "2"), -1);
  v = value_of(buf, 4000, 9);
  TU_OK(stk__cache_store_put(s, "a", "2", &v));
  assert_int_equal(find_byte(s, "a", "2"), 9);
  assert_int_equal(find_byte(s, "a", "1"), -1);
  /* a value larger than the whole capacity is dropped, keeping the others */
  uint8_t *big = malloc(20000);
  v = value_of(big, 20000, 5);
  TU_OK(stk__cache_store_put(s, "big", "1", &v));
  free(big);
  assert_int_equal(find_byte(s, "big", "1"), -1);
  assert_int_equal(find_byte(s, "c", "1"), 3);
  stk__cache_store_destroy(s);
}

static void test_pinned_entry_outlives_eviction(void **state) {
  (void)state;
  uint8_t buf[4000], out[4000];
  stk__cache_store *s;
  TU_OK(stk__cache_store_create(4000 + 2000, NULL, "prefix", "t", &s));
  stk__cache_value v = value_of(buf, 4000, 7), found;
  TU_OK(stk__cache_store_put(s, "a", "1", &v));
  stk__cache_pin pin;
  bool hit;
  TU_OK(stk__cache_store_find(s, "a", "1", &found, &pin, &hit));
  assert_true(hit);
  v = value_of(buf, 4000, 8);
  TU_OK(stk__cache_store_put(s, "b", "1", &v)); /* evicts a */
  assert_int_equal(find_byte(s, "a", "1"), -1);
  TU_OK(stk__cache_store_read(s, &pin, &found, 0, out)); /* still readable: pinned */
  for (int i = 0; i < 4000; i++) assert_int_equal(out[i], 7);
  stk__cache_store_unpin(s, &pin);
  stk__cache_store_destroy(s);
}

static int count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name), k = strlen(suffix);
    n += l > k && strcmp(de->d_name + l - k, suffix) == 0;
  }
  closedir(d);
  return n;
}

/* The one entry file in `dir` (path into `out`). */
static void entry_file(const char *dir, char *out, size_t cap) {
  DIR *d = opendir(dir);
  struct dirent *de;
  while ((de = readdir(d)))
    if (strstr(de->d_name, ".stkc")) snprintf(out, cap, "%s/%s", dir, de->d_name);
  closedir(d);
}

static void test_disk_round_trip_damage_and_prefix(void **state) {
  (void)state;
  char dir[512], path[1024], other[1024];
  tu_tmpdir(dir, sizeof dir, "cache_store");
  uint8_t buf[1000];
  stk__cache_store *s;
  TU_OK(stk__cache_store_create(1 << 20, dir, "prefix one", "t", &s));
  stk__cache_value v = value_of(buf, 1000, 4);
  v.t[0].ndim = 2, v.t[0].shape[0] = 10, v.t[0].shape[1] = 100;
  snprintf(v.t[0].layout, sizeof v.t[0].layout, "HW");
  TU_OK(stk__cache_store_put(s, "key", "stamp", &v));
  stk__cache_store_destroy(s);
  /* a new store over the same directory finds it, shape and layout included */
  TU_OK(stk__cache_store_create(1 << 20, dir, "prefix one", "t", &s));
  stk__cache_value f;
  stk__cache_pin pin;
  bool hit;
  TU_OK(stk__cache_store_find(s, "key", "stamp", &f, &pin, &hit));
  assert_true(hit);
  assert_int_equal(f.t[0].ndim, 2);
  assert_int_equal(f.t[0].shape[1], 100);
  assert_string_equal(f.t[0].layout, "HW");
  stk__cache_store_unpin(s, &pin);
  assert_int_equal(find_byte(s, "key", "stamp"), 4);
  assert_int_equal(find_byte(s, "key", "other stamp"), -1);
  /* a truncated file is a miss, and is made again */
  entry_file(dir, path, sizeof path);
  assert_int_equal(truncate(path, 200), 0);
  assert_int_equal(find_byte(s, "key", "stamp"), -1);
  TU_OK(stk__cache_store_put(s, "key", "stamp", &v));
  assert_int_equal(find_byte(s, "key", "stamp"), 4);
  stk__cache_store_destroy(s);
  /* another prefix empties the directory of entry files, and only of them */
  snprintf(other, sizeof other, "%s/mine.txt", dir);
  tu_write(other, "x", 1);
  TU_OK(stk__cache_store_create(1 << 20, dir, "prefix two", "t", &s));
  assert_int_equal(count_files(dir, ".stkc"), 0);
  assert_int_equal(access(other, F_OK), 0);
  assert_int_equal(find_byte(s, "key", "stamp"), -1);
  stk__cache_store_destroy(s);
}

static void test_disk_full_stops_storing(void **state) {
  (void)state;
  char dir[512];
  tu_tmpdir(dir, sizeof dir, "cache_full");
  uint8_t buf[1000];
  stk__cache_store *s;
  /* each file: the header (< 1 KiB) + key + stamp + 1000 bytes: two fit in 4000, not three */
  TU_OK(stk__cache_store_create(4000, dir, "p", "t", &s));
  char key[16];
  for (int i = 0; i < 5; i++) {
    snprintf(key, sizeof key, "k%d", i);
    stk__cache_value v = value_of(buf, 1000, (uint8_t)i);
    TU_OK(stk__cache_store_put(s, key, "s", &v));
  }
  stk__cache_store_stats st;
  stk__cache_store_stats_get(s, &st);
  assert_true(st.bytes <= 4000);
  assert_int_equal(count_files(dir, ".stkc"), st.entries);
  assert_true(st.entries >= 1 && st.entries < 5);
  assert_int_equal(st.dropped, 5 - st.entries);
  assert_int_equal(find_byte(s, "k0", "s"), 0); /* the first ones stay */
  assert_int_equal(find_byte(s, "k4", "s"), -1);
  stk__cache_store_destroy(s);
}

typedef struct {
  stk__cache_store *s;
  int id;
  int bad;
} worker_arg;

/* Stores and finds keys shared with the other threads: every hit holds the key's bytes. */
static void *worker(void *p) {
  worker_arg *a = p;
  uint8_t buf[3000];
  char key[32];
  for (int round = 0; round < 300; round++) {
    int k = (round * 7 + a->id) % 40;
    snprintf(key, sizeof key, "key %d", k);
    int got = find_byte(a->s, key, "s");
    if (got >= 0 && got != k) a->bad++;
    if (got < 0) {
      stk__cache_value v = value_of(buf, 1000 + 50 * k, (uint8_t)k);
      if (stk__cache_store_put(a->s, key, "s", &v) != STK_OK) a->bad++;
    }
  }
  return NULL;
}

static void run_threads(stk__cache_store *s) {
  pthread_t t[4];
  worker_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (worker_arg){s, i, 0};
    pthread_create(&t[i], NULL, worker, &a[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(a[i].bad, 0);
  }
}

static void test_threads_see_whole_values(void **state) {
  (void)state;
  stk__cache_store *s;
  TU_OK(stk__cache_store_create(20 * 4000, NULL, "p", "t", &s)); /* evicts as it goes */
  run_threads(s);
  stk__cache_store_stats st;
  stk__cache_store_stats_get(s, &st);
  assert_true(st.bytes <= 20 * 4000);
  stk__cache_store_destroy(s);
  char dir[512];
  tu_tmpdir(dir, sizeof dir, "cache_threads");
  TU_OK(stk__cache_store_create(1 << 20, dir, "p", "t", &s));
  run_threads(s);
  assert_int_equal(count_files(dir, ".part"), 0);
  assert_int_equal(count_files(dir, ".stkc"), 40);
  stk__cache_store_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memory_lru_order_and_bound),
      cmocka_unit_test(test_pinned_entry_outlives_eviction),
      cmocka_unit_test(test_disk_round_trip_damage_and_prefix),
      cmocka_unit_test(test_disk_full_stops_storing),
      cmocka_unit_test(test_threads_see_whole_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
