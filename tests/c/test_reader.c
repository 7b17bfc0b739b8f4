/* readers.file and its parts: the sampler (shards, padding, epochs, shuffles), the file
 * list builders (ImageFolder, list files, explicit files) and the operator through the
 * public pipeline API. References are written independently from the rules: naive
 * floor(i*N/S), hand-written expected orders, exact multiset counts. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file_list.h"
#include "io/sampler.h"
#include "testutil.h"

/* ---------------------------------------------------------------------------------- */
/* helpers                                                                            */
/* ---------------------------------------------------------------------------------- */

static stk__sampler_config base_cfg(int64_t n) {
  return (stk__sampler_config){.num_samples = n,
                               .shard_id = 0,
                               .num_shards = 1,
                               .batch_size = 1,
                               .initial_fill = 1024,
                               .seed = 42};
}

static stk__sampler *make_sampler(stk__sampler_config c) {
  stk__sampler *s;
  TU_OK(stk__sampler_create(&s, &c, "test"));
  return s;
}

/* The next `count` indices. */
static void take(stk__sampler *s, int64_t *out, int64_t count) {
  for (int64_t i = 0; i < count; i++) out[i] = stk__sampler_next(s);
}

static void assert_seq(const int64_t *got, const int64_t *want, int count) {
  for (int i = 0; i < count; i++)
    if (got[i] != want[i])
      fail_msg("position %d: got %lld, want %lld", i, (long long)got[i], (long long)want[i]);
}

/* Asserts `v` holds each of 0..n-1 exactly once. */
static void assert_permutation(const int64_t *v, int64_t n) {
  char *seen = calloc((size_t)n, 1);
  assert_non_null(seen);
  for (int64_t i = 0; i < n; i++) {
    assert_true(v[i] >= 0 && v[i] < n);
    if (seen[v[i]]) fail_msg("index %lld appears twice", (long long)v[i]);
    seen[v[i]] = 1;
  }
  free(seen);
}

static bool is_identity(const int64_t *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (v[i] != i) return false;
  return true;
}

static void assert_error_mentions(const char *needle) {
  if (!strstr(stk_last_error(), needle))
    fail_msg("error \"%s\" does not mention \"%s\"", stk_last_error(), needle);
}

/* Creates a file (and its directories) under `dir`, holding `content`. */
static void put(const char *dir, const char *rel, const char *content) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  for (char *p = path + strlen(dir) + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(path, 0755) != 0 && errno != EEXIST) fail_msg("mkdir %s", path);
    *p = '/';
  }
  tu_write(path, content, strlen(content));
}

static void mkdir_in(const char *dir, const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  if (mkdir(path, 0755) != 0) fail_msg("mkdir %s", path);
}

/* Asserts entry i of a file list is dir/rel with `label`. */
static void assert_entry(const stk__file_list *fl, int64_t i, const char *dir, const char *rel,
                         int32_t label) {
  char want[1024];
  if (dir)
    snprintf(want, sizeof want, "%s/%s", dir, rel);
  else
    snprintf(want, sizeof want, "%s", rel);
  assert_true(i < fl->count);
  assert_string_equal(fl->paths[i], want);
  assert_int_equal(fl->labels[i], label);
}

/* ---------------------------------------------------------------------------------- */
/* sampler: sharding                                                                  */
/* ---------------------------------------------------------------------------------- */

static void test_shard_bounds_formula(void **state) {
  for (int64_t n = 1; n <= 80; n++)
    for (int64_t s = 1; s <= n; s++) {
      int64_t total = 0;
      for (int64_t i = 0; i <= s; i++)
        assert_int_equal(stk__shard_begin(i, s, n), i * n / s); /* naive reference */
      for (int64_t i = 0; i < s; i++) {
        int64_t size = stk__shard_size(i, s, n);
        assert_true(size == n / s || size == n / s + 1);
        total += size;
      }
      assert_int_equal(total, n);
    }
  /* Large data sets: no overflow where i*N overflows 64 bits. */
  const int64_t big = (int64_t)1 << 61, shards = 1000003;
  for (int64_t i = 0; i <= shards; i += 99991) {
    unsigned __int128 ref = (unsigned __int128)i * (unsigned __int128)big / shards;
    assert_true((unsigned __int128)stk__shard_begin(i, shards, big) == ref);
  }
  assert_int_equal(stk__shard_begin(shards, shards, big), big);
}

static void test_padded_size(void **state) {
  /* ceil(ceil(N/S) / B) * B, by hand. */
  assert_int_equal(stk__shard_padded_size(1, 7, 2), 8);
  assert_int_equal(stk__shard_padded_size(3, 10, 2), 4); /* sizes 3,3,4 */
  assert_int_equal(stk__shard_padded_size(3, 10, 3), 6);
  assert_int_equal(stk__shard_padded_size(4, 8, 2), 2); /* exact */
  assert_int_equal(stk__shard_padded_size(2, 9, 100), 100);
  assert_int_equal(stk__shard_padded_size(1, 1, 1), 1);
}

/* Every shard's first epoch, concatenated, is each sample once, in the floor ranges. */
static void test_shards_disjoint_and_covering(void **state) {
  for (int64_t n = 1; n <= 40; n++)
    for (int64_t s = 1; s <= n; s += (s < 8 ? 1 : 5)) {
      int64_t *all = malloc(sizeof(int64_t) * (size_t)n), filled = 0;
      for (int64_t k = 0; k < s; k++) {
        stk__sampler_config c = base_cfg(n);
        c.shard_id = k, c.num_shards = s, c.stick_to_shard = true;
        stk__sampler *sm = make_sampler(c);
        int64_t size = k * n / s, end = (k + 1) * n / s;
        size = end - size;
        take(sm, all + filled, size);
        for (int64_t j = 0; j < size; j++) assert_int_equal(all[filled + j], k * n / s + j);
        filled += size;
        stk__sampler_destroy(sm);
      }
      assert_int_equal(filled, n);
      assert_permutation(all, n);
      free(all);
    }
}

/* ---------------------------------------------------------------------------------- */
/* sampler: order, padding, epochs                                                    */
/* ---------------------------------------------------------------------------------- */

/* Samples 1..7 (indices 0..6), batch 2: the 4th batch is [7, 1] without padding and
 * [7, 7] with it, the next epoch then starting at [1, 2]. */
static void test_sequential_wraps_across_epochs(void **state) {
  stk__sampler_config c = base_cfg(7);
  c.batch_size = 2;
  int64_t got[12];
  stk__sampler *s = make_sampler(c);
  take(s, got, 12);
  const int64_t plain[12] = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4};
  assert_seq(got, plain, 12);
  stk__sampler_destroy(s);

  c.pad_last_batch = true;
  s = make_sampler(c);
  take(s, got, 12);
  const int64_t padded[12] = {0, 1, 2, 3, 4, 5, 6, 6, 0, 1, 2, 3};
  assert_seq(got, padded, 12);
  int64_t epoch, left;
  stk__sampler_position(s, &epoch, &left);
  assert_int_equal(epoch, 1);
  assert_int_equal(left, 4); /* 8 - the 4 already taken of epoch 1 */
  stk__sampler_destroy(s);
}

/* N=10, S=3 (shards 0-2, 3-5, 6-9), batch 2: padded epochs have 4 samples. */
static void test_padding_with_shards(void **state) {
  stk__sampler_config c = base_cfg(10);
  c.num_shards = 3, c.batch_size = 2, c.pad_last_batch = true, c.stick_to_shard = true;
  int64_t got[8];
  stk__sampler *s = make_sampler(c);
  take(s, got, 8);
  const int64_t shard0[8] = {0, 1, 2, 2, 0, 1, 2, 2};
  assert_seq(got, shard0, 8);
  stk__sampler_destroy(s);

  c.shard_id = 2;
  s = make_sampler(c);
  take(s, got, 8);
  const int64_t shard2[8] = {6, 7, 8, 9, 6, 7, 8, 9};
  assert_seq(got, shard2, 8);
  stk__sampler_destroy(s);

  /* Rotating shards, padded: every epoch is 4 samples of the next shard. */
  c.shard_id = 0, c.stick_to_shard = false;
  s = make_sampler(c);
  int64_t rot[16];
  take(s, rot, 16);
  const int64_t want[16] = {0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 9, 0, 1, 2, 2};
  assert_seq(rot, want, 16);
  stk__sampler_destroy(s);
}

static void test_stick_to_shard(void **state) {
  stk__sampler_config c = base_cfg(10);
  c.num_shards = 3, c.shard_id = 1, c.stick_to_shard = true;
  int64_t got[13];
  stk__sampler *s = make_sampler(c);
  take(s, got, 9);
  const int64_t stick[9] = {3, 4, 5, 3, 4, 5, 3, 4, 5};
  assert_seq(got, stick, 9);
  stk__sampler_destroy(s);

  /* Not sticking: shard 1, then 2, then 0, then 1 again. */
  c.stick_to_shard = false;
  s = make_sampler(c);
  take(s, got, 13);
  const int64_t rotate[13] = {3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5};
  assert_seq(got, rotate, 13);
  stk__sampler_destroy(s);
}

static void test_meta(void **state) {
  stk__sampler_config c = base_cfg(10);
  c.num_shards = 3, c.shard_id = 2, c.batch_size = 3, c.pad_last_batch = true;
  stk_reader_meta m;
  stk__sampler *s = make_sampler(c);
  stk__sampler_meta(s, &m);
  stk__sampler_destroy(s);
  assert_int_equal(m.epoch_size, 10);
  assert_int_equal(m.shard_size, 4);
  assert_int_equal(m.epoch_size_padded, 12); /* 3 shards * ceil(10/3), as DALI */
  assert_int_equal(m.shard_id, 2);
  assert_int_equal(m.number_of_shards, 3);
  assert_true(m.pad_last_batch);
  assert_false(m.stick_to_shard);
  c.pad_last_batch = false, c.shard_id = 0;
  s = make_sampler(c);
  stk__sampler_meta(s, &m);
  stk__sampler_destroy(s);
  assert_int_equal(m.shard_size, 3);
  assert_int_equal(m.epoch_size_padded, 10); /* unpadded: the data set */
}

/* ---------------------------------------------------------------------------------- */
/* sampler: random_shuffle, as properties a training loop relies on                   */
/* ---------------------------------------------------------------------------------- */

/* The next epoch of a sampler: its samples, in order (*count of them). The length comes
 * from stk__sampler_position, and the epoch must be the one expected. */
static int64_t *next_epoch(stk__sampler *s, int64_t want_epoch, int64_t *count) {
  int64_t epoch, left;
  stk__sampler_position(s, &epoch, &left);
  assert_int_equal(epoch, want_epoch);
  int64_t *v = malloc(sizeof(int64_t) * (size_t)left);
  assert_non_null(v);
  take(s, v, left);
  *count = left;
  stk__sampler_position(s, &epoch, &left);
  assert_int_equal(epoch, want_epoch + 1); /* nothing of this epoch is left */
  return v;
}

/* Checks one epoch over all shards: each shard's part holds distinct samples (then
 * only repeats of its last one, as padding), the parts are disjoint and cover 0..n-1. */
static void check_epoch_partition(int64_t *const *parts, const int64_t *sizes, int64_t shards,
                                  int64_t n, bool padded) {
  char *seen = calloc((size_t)n, 1);
  assert_non_null(seen);
  int64_t covered = 0;
  for (int64_t k = 0; k < shards; k++) {
    int64_t own = sizes[k];
    if (padded) /* the padding: the shard's last sample repeated */
      while (own > 1 && parts[k][own - 1] == parts[k][own - 2]) own--;
    for (int64_t j = 0; j < own; j++) {
      int64_t v = parts[k][j];
      assert_true(v >= 0 && v < n);
      if (seen[v])
        fail_msg("shard %lld: sample %lld seen twice in one epoch", (long long)k, (long long)v);
      seen[v] = 1;
      covered++;
    }
  }
  if (covered != n)
    fail_msg("the shards cover %lld of %lld samples", (long long)covered, (long long)n);
  free(seen);
}

/* Every reader mode x shard count x stick/rotate x padding x local shuffle: each epoch
 * of the shards together is a partition of the data set, and epochs differ. */
static void test_epochs_partition_the_data(void **state) {
  const int64_t sizes_n[] = {1, 7, 23, 64};
  for (size_t ni = 0; ni < sizeof sizes_n / sizeof *sizes_n; ni++)
    for (int64_t shards = 1; shards <= 4 && shards <= sizes_n[ni]; shards++)
      for (int mode = 0; mode < 16; mode++) {
        int64_t n = sizes_n[ni];
        stk__sampler *sm[4];
        for (int64_t k = 0; k < shards; k++) {
          stk__sampler_config c = base_cfg(n);
          c.num_shards = shards, c.shard_id = k, c.batch_size = 5;
          c.stick_to_shard = mode & 1, c.pad_last_batch = (mode >> 1) & 1;
          c.random_shuffle = (mode >> 2) & 1,
          c.shuffle_after_epoch = !c.random_shuffle && ((mode >> 3) & 1);
          c.local_shuffle = c.random_shuffle && ((mode >> 3) & 1), c.local_seed = 100 + (uint64_t)k;
          sm[k] = make_sampler(c);
        }
        int64_t *first = NULL, first_size = 0;
        bool differs = false;
        for (int64_t e = 0; e < 4; e++) {
          int64_t *parts[4], counts[4];
          for (int64_t k = 0; k < shards; k++) parts[k] = next_epoch(sm[k], e, &counts[k]);
          check_epoch_partition(parts, counts, shards, n, (mode >> 1) & 1);
          if (e == 0)
            first = parts[0], first_size = counts[0];
          else
            differs |= counts[0] != first_size ||
                       memcmp(parts[0], first, sizeof(int64_t) * (size_t)first_size);
          for (int64_t k = (e == 0); k < shards; k++) free(parts[k]);
        }
        bool shuffled = (mode >> 2) & 1 || (mode >> 3) & 1;
        if (n > 4 && (shuffled || (!(mode & 1) && shards > 1))) assert_true(differs);
        free(first);
        for (int64_t k = 0; k < shards; k++) stk__sampler_destroy(sm[k]);
      }
}

/* A pipeline seed (local_seed) changes the order within the shard, never which samples
 * the shard holds; the reader seed changes the epoch permutation. */
static void test_local_shuffle_keeps_the_shard(void **state) {
  stk__sampler_config c = base_cfg(40);
  c.num_shards = 2, c.shard_id = 1, c.random_shuffle = true, c.local_shuffle = true;
  c.local_seed = 1;
  stk__sampler *a = make_sampler(c);
  c.local_seed = 2;
  stk__sampler *b = make_sampler(c);
  int64_t na, nb;
  int64_t *ea = next_epoch(a, 0, &na), *eb = next_epoch(b, 0, &nb);
  assert_int_equal(na, 20);
  assert_int_equal(nb, 20);
  assert_memory_not_equal(ea, eb, sizeof(int64_t) * 20);
  int64_t sa = 0, sb = 0, xa = 0, xb = 0;
  for (int i = 0; i < 20; i++) sa += ea[i], sb += eb[i], xa ^= ea[i] * 7919, xb ^= eb[i] * 7919;
  assert_int_equal(sa, sb); /* the same set (sum and xor of a hash as witnesses) */
  assert_int_equal(xa, xb);
  free(ea), free(eb);
  stk__sampler_destroy(a), stk__sampler_destroy(b);
}

/* Uniformity: over 20000 seeds, where sample i lands in epoch 0 (10 samples) is uniform:
 * chi-square over the 10x10 position table (81 degrees of freedom; 131.6 is the 0.9999
 * quantile), and the same for epoch 1 and for shard-local shuffles. */
static void test_shuffle_positions_uniform(void **state) {
  const int n = 10, trials = 20000;
  for (int variant = 0; variant < 3; variant++) {
    static int table[10][10];
    memset(table, 0, sizeof table);
    for (int t = 0; t < trials; t++) {
      stk__sampler_config c = base_cfg(n);
      c.random_shuffle = true;
      c.seed = variant == 2 ? 5 : (uint64_t)t;
      c.local_shuffle = variant == 2, c.local_seed = (uint64_t)t;
      stk__sampler *s = make_sampler(c);
      int64_t count, *v = next_epoch(s, 0, &count);
      if (variant == 1) {
        free(v);
        v = next_epoch(s, 1, &count);
      }
      for (int pos = 0; pos < n; pos++) table[v[pos]][pos]++;
      free(v);
      stk__sampler_destroy(s);
    }
    double chi2 = 0, expected = (double)trials / n;
    for (int i = 0; i < n; i++)
      for (int pos = 0; pos < n; pos++)
        chi2 += (table[i][pos] - expected) * (table[i][pos] - expected) / expected;
    if (chi2 > 131.6) fail_msg("variant %d: chi-square %.1f over 81 dof", variant, chi2);
  }
}

/* A class-sorted list (20 classes x 200, as an ImageFolder lists ImageNet): every batch
 * of 64 of a shuffled epoch mixes many classes. A uniform shuffle gives about 19.3
 * classes per batch; fewer than 12 has probability far below 1e-9. */
static void test_class_sorted_batches_mix(void **state) {
  stk__sampler_config c = base_cfg(4000);
  c.random_shuffle = true, c.local_shuffle = true, c.local_seed = 3;
  stk__sampler *s = make_sampler(c);
  int64_t count, *v = next_epoch(s, 0, &count);
  for (int64_t b = 0; b + 64 <= count; b += 64) {
    int classes[20] = {0}, distinct = 0;
    for (int64_t i = b; i < b + 64; i++) distinct += classes[v[i] / 200]++ == 0;
    if (distinct < 12) fail_msg("batch %lld holds %d classes", (long long)(b / 64), distinct);
  }
  free(v);
  stk__sampler_destroy(s);
}

static void test_random_shuffle_seeds(void **state) {
  stk__sampler_config c = base_cfg(100);
  c.random_shuffle = true, c.seed = 1;
  stk__sampler *a = make_sampler(c), *b = make_sampler(c);
  c.seed = 2;
  stk__sampler *d = make_sampler(c);
  int64_t va[300], vb[300], vd[300];
  take(a, va, 300), take(b, vb, 300), take(d, vd, 300);
  assert_memory_equal(va, vb, sizeof va);
  assert_memory_not_equal(va, vd, sizeof va);
  assert_false(is_identity(va, 100));
  stk__sampler_destroy(a), stk__sampler_destroy(b), stk__sampler_destroy(d);
}

/* ---------------------------------------------------------------------------------- */
/* sampler: streaming (samples in files read front to back)                            */
/* ---------------------------------------------------------------------------------- */

/* Files of 3, 0, 5, 1, 4, 2, 7 samples (22 in all; one file empty). */
static const int64_t unit_sizes[] = {3, 0, 5, 1, 4, 2, 7};

static stk__sampler_config stream_cfg(void) {
  stk__sampler_config c = base_cfg(22);
  c.num_units = 7, c.unit_sizes = unit_sizes;
  return c;
}

/* The file of sample i. */
static int unit_of(int64_t i) {
  int u = 0;
  for (int64_t begin = 0; i >= begin + unit_sizes[u]; u++) begin += unit_sizes[u];
  return u;
}

/* Without a shuffle: files in order, each front to back; shards take whole files. */
static void test_streaming_in_order(void **state) {
  stk__sampler_config c = stream_cfg();
  stk__sampler *s = make_sampler(c);
  int64_t count, *v = next_epoch(s, 0, &count);
  assert_int_equal(count, 22);
  for (int64_t i = 0; i < 22; i++) assert_int_equal(v[i], i);
  free(v);
  stk__sampler_destroy(s);
  /* Two shards over the 6 non-empty files: files 0,2,3 (9 samples) and 4,5,6 (13). */
  c.num_shards = 2, c.shard_id = 1, c.stick_to_shard = true;
  s = make_sampler(c);
  v = next_epoch(s, 0, &count);
  assert_int_equal(count, 13);
  for (int64_t i = 0; i < 13; i++) assert_int_equal(v[i], 9 + i);
  free(v);
  stk_reader_meta m;
  stk__sampler_meta(s, &m);
  assert_int_equal(m.shard_size, 13);
  assert_int_equal(m.epoch_size, 22);
  stk__sampler_destroy(s);
}

/* Shuffled streaming: every epoch of the shards together is a partition; each shard
 * holds whole files; no sample moves more than initial_fill places from where its
 * file's read put it; epochs differ. */
static void test_streaming_shuffled_partition(void **state) {
  for (int64_t shards = 1; shards <= 3; shards++)
    for (int pad = 0; pad <= 1; pad++) {
      stk__sampler *sm[3];
      for (int64_t k = 0; k < shards; k++) {
        stk__sampler_config c = stream_cfg();
        c.num_shards = shards, c.shard_id = k, c.random_shuffle = true, c.initial_fill = 4;
        c.pad_last_batch = pad, c.batch_size = 4;
        sm[k] = make_sampler(c);
      }
      int64_t prev_first = -1;
      bool differs = false;
      for (int64_t e = 0; e < 6; e++) {
        int64_t *parts[3], counts[3];
        for (int64_t k = 0; k < shards; k++) parts[k] = next_epoch(sm[k], e, &counts[k]);
        check_epoch_partition(parts, counts, shards, 22, pad);
        for (int64_t k = 0; k < shards; k++) {
          int owner[7] = {0};
          for (int64_t j = 0; j < counts[k]; j++) owner[unit_of(parts[k][j])] = 1;
          for (int64_t other = 0; other < shards; other++) /* whole files per shard */
            if (other != k)
              for (int64_t j = 0; j < counts[other]; j++)
                assert_false(owner[unit_of(parts[other][j])]);
        }
        differs |= prev_first >= 0 && parts[0][0] != prev_first;
        prev_first = parts[0][0];
        for (int64_t k = 0; k < shards; k++) free(parts[k]);
      }
      assert_true(differs);
      for (int64_t k = 0; k < shards; k++) stk__sampler_destroy(sm[k]);
    }
}

/* The buffer's bound: output j comes from the first j + initial_fill samples read. The
 * read order is what a buffer of one emits (the same files in the same order). */
static void test_streaming_buffer_bound(void **state) {
  for (int64_t fill = 1; fill <= 8; fill++)
    for (int64_t e = 0; e < 3; e++) {
      stk__sampler_config c = stream_cfg();
      c.random_shuffle = true, c.initial_fill = 1;
      stk__sampler *reads = make_sampler(c);
      c.initial_fill = fill;
      stk__sampler *s = make_sampler(c);
      int64_t nr, n, *r = NULL, *v = NULL;
      for (int64_t k = 0; k <= e; k++) {
        free(r), free(v);
        r = next_epoch(reads, k, &nr);
        v = next_epoch(s, k, &n);
      }
      assert_int_equal(nr, n);
      int64_t read_pos[22];
      for (int64_t j = 0; j < nr; j++) read_pos[r[j]] = j;
      bool moved = false;
      for (int64_t j = 0; j < n; j++) {
        assert_true(read_pos[v[j]] < j + fill);
        moved |= read_pos[v[j]] != j;
      }
      if (fill > 2) assert_true(moved);
      free(r), free(v);
      stk__sampler_destroy(reads), stk__sampler_destroy(s);
    }
}

/* ---------------------------------------------------------------------------------- */
/* sampler: shuffle_after_epoch                                                       */
/* ---------------------------------------------------------------------------------- */

static void test_shuffle_after_epoch_single_shard(void **state) {
  const int64_t n = 50;
  stk__sampler_config c = base_cfg(n);
  c.shuffle_after_epoch = true;
  stk__sampler *s = make_sampler(c), *t = make_sampler(c);
  c.seed = 43;
  stk__sampler *u = make_sampler(c);
  int64_t e[4][50], same[50], other[50];
  for (int k = 0; k < 4; k++) {
    take(s, e[k], n);
    assert_permutation(e[k], n);
    take(t, same, n);
    assert_memory_equal(e[k], same, sizeof same);
    take(u, other, n);
    assert_memory_not_equal(e[k], other, sizeof other);
  }
  assert_false(is_identity(e[0], n)); /* the first epoch is shuffled too */
  for (int k = 1; k < 4; k++) assert_memory_not_equal(e[0], e[k], sizeof e[0]);
  stk__sampler_destroy(s), stk__sampler_destroy(t), stk__sampler_destroy(u);
}

/* Fisher-Yates is uniform: the 6 permutations of 3 samples over 6000 epochs. */
static void test_shuffle_after_epoch_uniform(void **state) {
  stk__sampler_config c = base_cfg(3);
  c.shuffle_after_epoch = true;
  stk__sampler *s = make_sampler(c);
  int counts[3][3][3] = {{{0}}};
  for (int e = 0; e < 6000; e++) {
    int64_t v[3];
    take(s, v, 3);
    assert_permutation(v, 3);
    counts[v[0]][v[1]][v[2]]++;
  }
  int kinds = 0;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      for (int d = 0; d < 3; d++)
        if (counts[a][b][d]) {
          kinds++;
          assert_true(abs(counts[a][b][d] - 1000) < 120); /* ~4 sd */
        }
  assert_int_equal(kinds, 6);
  stk__sampler_destroy(s);
}

/* Per epoch, the shards' parts of one permutation: disjoint, covering, the same
 * permutation on every shard, sticking to the shard or rotating. */
static void test_shuffle_after_epoch_shards(void **state) {
  const int64_t n = 23, shards = 4, epochs = 5;
  for (int stick = 0; stick <= 1; stick++) {
    stk__sampler *sm[4];
    for (int64_t k = 0; k < shards; k++) {
      stk__sampler_config c = base_cfg(n);
      c.num_shards = shards, c.shard_id = k, c.stick_to_shard = stick;
      c.shuffle_after_epoch = true;
      sm[k] = make_sampler(c);
    }
    int64_t prev[23] = {0};
    for (int64_t e = 0; e < epochs; e++) {
      int64_t all[23], filled = 0;
      for (int64_t k = 0; k < shards; k++) {
        int64_t read = stick ? k : (k + e) % shards; /* the shard read this epoch */
        int64_t size = (read + 1) * n / shards - read * n / shards;
        take(sm[k], all + filled, size);
        filled += size;
      }
      assert_int_equal(filled, n);
      assert_permutation(all, n);
      if (e > 0) assert_memory_not_equal(all, prev, sizeof all);
      memcpy(prev, all, sizeof all);
    }
    for (int64_t k = 0; k < shards; k++) stk__sampler_destroy(sm[k]);
  }
}

/* ---------------------------------------------------------------------------------- */
/* sampler: configuration errors                                                      */
/* ---------------------------------------------------------------------------------- */

static void expect_config_error(stk__sampler_config c, const char *needle) {
  stk__sampler *s = (stk__sampler *)1;
  assert_int_equal(stk__sampler_create(&s, &c, "rdr"), STK_ERR_INVALID_ARGUMENT);
  assert_null(s);
  assert_error_mentions("rdr");
  assert_error_mentions(needle);
}

static void test_sampler_errors(void **state) {
  stk__sampler_config c = base_cfg(0);
  expect_config_error(c, "empty");
  c = base_cfg(5), c.num_shards = 6;
  expect_config_error(c, "num_shards");
  c = base_cfg(5), c.num_shards = 0;
  expect_config_error(c, "num_shards");
  c = base_cfg(5), c.num_shards = 2, c.shard_id = 2;
  expect_config_error(c, "shard_id");
  c = base_cfg(5), c.shard_id = -1;
  expect_config_error(c, "shard_id");
  c = base_cfg(5), c.random_shuffle = true, c.shuffle_after_epoch = true;
  expect_config_error(c, "shuffle_after_epoch");
  c = stream_cfg(), c.random_shuffle = true, c.initial_fill = 0;
  expect_config_error(c, "initial_fill");
  c = stream_cfg(), c.num_shards = 7; /* 7 files, one of them empty */
  expect_config_error(c, "files holding samples (6)");
  /* Random access needs no buffer: a huge initial_fill allocates nothing. */
  c = base_cfg(5), c.random_shuffle = true, c.initial_fill = (int64_t)1 << 40;
  stk__sampler *s;
  TU_OK(stk__sampler_create(&s, &c, "rdr"));
  stk__sampler_destroy(s);
  c = stream_cfg(), c.random_shuffle = true, c.initial_fill = (int64_t)1 << 40;
  TU_OK(stk__sampler_create(&s, &c, "rdr")); /* capped at the data set */
  stk__sampler_destroy(s);
  c = base_cfg(5), c.batch_size = 0;
  expect_config_error(c, "batch size");
}

/* ---------------------------------------------------------------------------------- */
/* file lists: ImageFolder                                                            */
/* ---------------------------------------------------------------------------------- */

static const char *const *defaults(size_t *n) {
  size_t k = 0;
  while (stk__default_file_filters[k]) k++;
  *n = k;
  return stk__default_file_filters;
}

static void test_image_folder(void **state) {
  char root[512];
  tu_tmpdir(root, sizeof root, "folder");
  put(root, "b_cls/2.png", "b2");
  put(root, "b_cls/10.jpg", "b10"); /* byte order: "10.jpg" < "2.png" */
  put(root, "a_cls/x.jpeg", "ax");
  put(root, "a_cls/B.jpg", "aB");
  put(root, "a_cls/_.jpg", "a_");
  put(root, "a_cls/notes.txt", "skip");
  mkdir_in(root, "c_empty");
  put(root, "d/y.JPG", "dy");
  put(root, "d/sub/deeper/z.webp", "dz");
  put(root, "d/sub-a/w.bmp", "dw");
  put(root, "top.jpg", "not in a class");
  char link[1024];
  snprintf(link, sizeof link, "%s/d/sub/loop", root);
  assert_int_equal(symlink("..", link), 0); /* a loop back to d/ */

  size_t nf;
  const char *const *filters = defaults(&nf);
  stk__file_list fl;
  TU_OK(stk__file_list_scan(&fl, root, filters, nf, false));
  assert_int_equal(fl.count, 8);
  assert_entry(&fl, 0, root, "a_cls/B.jpg", 0);
  assert_entry(&fl, 1, root, "a_cls/_.jpg", 0);
  assert_entry(&fl, 2, root, "a_cls/x.jpeg", 0);
  assert_entry(&fl, 3, root, "b_cls/10.jpg", 1);
  assert_entry(&fl, 4, root, "b_cls/2.png", 1);
  /* c_empty keeps label 2; d is 3; its files sorted by relative path. */
  assert_entry(&fl, 5, root, "d/sub-a/w.bmp", 3);
  assert_entry(&fl, 6, root, "d/sub/deeper/z.webp", 3);
  assert_entry(&fl, 7, root, "d/y.JPG", 3);
  stk__file_list_free(&fl);

  /* Case-sensitive filters drop y.JPG; custom filters pick other files. */
  TU_OK(stk__file_list_scan(&fl, root, filters, nf, true));
  assert_int_equal(fl.count, 7);
  stk__file_list_free(&fl);
  const char *txt[] = {"*.TXT"};
  TU_OK(stk__file_list_scan(&fl, root, txt, 1, false));
  assert_int_equal(fl.count, 1);
  assert_entry(&fl, 0, root, "a_cls/notes.txt", 0);
  stk__file_list_free(&fl);
  stk__file_list_free(&fl); /* twice is harmless */
}

static void test_image_folder_errors(void **state) {
  size_t nf;
  const char *const *filters = defaults(&nf);
  stk__file_list fl;
  char root[512], missing[600];
  tu_tmpdir(root, sizeof root, "folder-err");
  snprintf(missing, sizeof missing, "%s/nope", root);
  assert_int_equal(stk__file_list_scan(&fl, missing, filters, nf, false), STK_ERR_NOT_FOUND);
  assert_error_mentions(missing);
  /* No class directory at all. */
  put(root, "loose.jpg", "x");
  assert_int_equal(stk__file_list_scan(&fl, root, filters, nf, false), STK_ERR_NOT_FOUND);
  assert_error_mentions(root);
  /* Classes without a matching file. */
  put(root, "cls/readme.md", "x");
  assert_int_equal(stk__file_list_scan(&fl, root, filters, nf, false), STK_ERR_NOT_FOUND);
  assert_error_mentions(root);
  assert_int_equal(fl.count, 0);
  /* A file as root. */
  char file[600];
  snprintf(file, sizeof file, "%s/loose.jpg", root);
  assert_int_not_equal(stk__file_list_scan(&fl, file, filters, nf, false), STK_OK);
  assert_error_mentions(file);
}

static void test_filter_match(void **state) {
  const char *f[] = {"*.jpg", "img_??.png", "[ab]*"};
  assert_true(stk__file_filter_match("x.jpg", f, 3, false));
  assert_true(stk__file_filter_match("X.JpG", f, 3, false));
  assert_false(stk__file_filter_match("X.JpG", f, 3, true));
  assert_true(stk__file_filter_match("img_07.png", f, 3, true));
  assert_false(stk__file_filter_match("img_007.png", f, 3, true));
  assert_true(stk__file_filter_match("apple", f, 3, true));
  assert_false(stk__file_filter_match("x.jpgx", f, 3, true));
  assert_false(stk__file_filter_match("x.jpg", f, 0, false));
}

/* ---------------------------------------------------------------------------------- */
/* file lists: list files and explicit files                                          */
/* ---------------------------------------------------------------------------------- */

static void test_list_file(void **state) {
  char dir[512], list[600];
  tu_tmpdir(dir, sizeof dir, "list");
  snprintf(list, sizeof list, "%s/list.txt", dir);
  const char *text =
      "# a comment\n"
      "\n"
      "a.jpg 0\n"
      "   my dir/file 1.jpg   3  \n"
      "\tb.png\t-2\r\n"
      "   # indented comment\n"
      "/abs/c.jpg 7\n"
      "last.jpg 2147483647"; /* no final newline */
  tu_write(list, text, strlen(text));
  stk__file_list fl;
  TU_OK(stk__file_list_parse(&fl, list, NULL));
  assert_int_equal(fl.count, 5);
  assert_entry(&fl, 0, dir, "a.jpg", 0);
  assert_entry(&fl, 1, dir, "my dir/file 1.jpg", 3);
  assert_entry(&fl, 2, dir, "b.png", -2);
  assert_entry(&fl, 3, NULL, "/abs/c.jpg", 7);
  assert_entry(&fl, 4, dir, "last.jpg", 2147483647);
  stk__file_list_free(&fl);
  /* With a root, paths are relative to it. */
  TU_OK(stk__file_list_parse(&fl, list, "/data/root/"));
  assert_entry(&fl, 0, "/data/root", "a.jpg", 0);
  assert_entry(&fl, 3, NULL, "/abs/c.jpg", 7);
  stk__file_list_free(&fl);
}

static void expect_list_error(const char *dir, const char *text, stk_status want,
                              const char *needle) {
  char list[600];
  snprintf(list, sizeof list, "%s/bad.txt", dir);
  tu_write(list, text, strlen(text));
  stk__file_list fl;
  assert_int_equal(stk__file_list_parse(&fl, list, NULL), want);
  assert_error_mentions(list);
  assert_error_mentions(needle);
}

static void test_list_file_errors(void **state) {
  char dir[512];
  tu_tmpdir(dir, sizeof dir, "list-err");
  expect_list_error(dir, "a.jpg 1\n# c\n\nno_label.jpg\nb.jpg 2\n", STK_ERR_PARSE, "bad.txt:4");
  expect_list_error(dir, "a.jpg 1\nb.jpg x\n", STK_ERR_PARSE, "bad.txt:2");
  expect_list_error(dir, "a.jpg 1\nb.jpg 1.5\n", STK_ERR_PARSE, ":2");
  expect_list_error(dir, "a.jpg 99999999999\n", STK_ERR_PARSE, ":1");
  expect_list_error(dir, "a.jpg 3x\n", STK_ERR_PARSE, "'3x'");
  expect_list_error(dir, "# only comments\n\n", STK_ERR_NOT_FOUND, "no file");
  char missing[600];
  snprintf(missing, sizeof missing, "%s/absent.txt", dir);
  stk__file_list fl;
  assert_int_equal(stk__file_list_parse(&fl, missing, NULL), STK_ERR_NOT_FOUND);
  assert_error_mentions(missing);
}

static void test_explicit_files(void **state) {
  const char *files[] = {"x.jpg", "sub/y.png", "/abs/z.jpg"};
  stk__file_list fl;
  TU_OK(stk__file_list_from_files(&fl, NULL, files, 3, NULL, 0, "rd"));
  assert_int_equal(fl.count, 3);
  assert_entry(&fl, 0, NULL, "x.jpg", 0); /* default labels 0..N-1 */
  assert_entry(&fl, 1, NULL, "sub/y.png", 1);
  assert_entry(&fl, 2, NULL, "/abs/z.jpg", 2);
  stk__file_list_free(&fl);
  const int64_t labels[] = {5, -1, 9};
  TU_OK(stk__file_list_from_files(&fl, "/r", files, 3, labels, 3, "rd"));
  assert_entry(&fl, 0, "/r", "x.jpg", 5);
  assert_entry(&fl, 1, "/r", "sub/y.png", -1);
  assert_entry(&fl, 2, NULL, "/abs/z.jpg", 9);
  stk__file_list_free(&fl);

  assert_int_equal(stk__file_list_from_files(&fl, NULL, files, 3, labels, 2, "rd"),
                   STK_ERR_INVALID_ARGUMENT);
  assert_error_mentions("rd");
  assert_error_mentions("3 files but 2 labels");
  assert_int_equal(stk__file_list_from_files(&fl, NULL, files, 0, NULL, 0, "rd"),
                   STK_ERR_NOT_FOUND);
  const int64_t huge[] = {1, (int64_t)1 << 40, 2};
  assert_int_equal(stk__file_list_from_files(&fl, NULL, files, 3, huge, 3, "rd"),
                   STK_ERR_INVALID_ARGUMENT);
  assert_error_mentions("labels[1]");
  const char *empty[] = {"a.jpg", ""};
  assert_int_equal(stk__file_list_from_files(&fl, NULL, empty, 2, NULL, 0, "rd"),
                   STK_ERR_INVALID_ARGUMENT);
  assert_error_mentions("files[1]");
}

/* ---------------------------------------------------------------------------------- */
/* the operator, through the public pipeline API                                      */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  const char *root, *list;
  const char *const *files;
  size_t num_files;
  bool random_shuffle, shuffle_after_epoch, pad_last_batch, stick_to_shard;
  int64_t num_shards, shard_id, seed, initial_fill;
} reader_args;

static stk_op *reader_op(const reader_args *a) {
  stk_op *op;
  TU_OK(stk_op_create("readers.file", "cpu", &op));
  TU_OK(stk_op_set_name(op, "Reader"));
  if (a->root) TU_OK(stk_op_set_string(op, "file_root", a->root));
  if (a->list) TU_OK(stk_op_set_string(op, "file_list", a->list));
  if (a->files) TU_OK(stk_op_set_strings(op, "files", a->files, a->num_files));
  if (a->random_shuffle) TU_OK(stk_op_set_bool(op, "random_shuffle", 1));
  if (a->shuffle_after_epoch) TU_OK(stk_op_set_bool(op, "shuffle_after_epoch", 1));
  if (a->pad_last_batch) TU_OK(stk_op_set_bool(op, "pad_last_batch", 1));
  if (a->stick_to_shard) TU_OK(stk_op_set_bool(op, "stick_to_shard", 1));
  if (a->num_shards) TU_OK(stk_op_set_int(op, "num_shards", a->num_shards));
  if (a->shard_id) TU_OK(stk_op_set_int(op, "shard_id", a->shard_id));
  if (a->seed) TU_OK(stk_op_set_int(op, "seed", a->seed));
  if (a->initial_fill) TU_OK(stk_op_set_int(op, "initial_fill", a->initial_fill));
  TU_OK(stk_op_add_output(op, "data"));
  TU_OK(stk_op_add_output(op, "label"));
  return op;
}

/* A built pipeline running the reader (batch, threads); NULL with the build status in
 * *st when the build fails. */
static stk_pipeline *reader_pipe(const reader_args *a, int batch, int threads, stk_status *st) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, batch));
  TU_OK(stk_pipeline_set(p, STK_PIPE_NUM_THREADS, threads));
  stk_op *op = reader_op(a);
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"data", "label"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 2));
  *st = stk_pipeline_build(p);
  if (*st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

/* Runs `batches` batches (of at most `batch` samples: an epoch's last batch may be
 * shorter); records the labels and checks every sample's bytes against the file named
 * by its label (files are "<label>.jpg" holding "content <label>"). Returns how many
 * samples came. */
static int run_labels(stk_pipeline *p, int batches, int batch, int32_t *labels) {
  int total = 0;
  for (int b = 0; b < batches; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    stk_tensor_list *data = stk_batch_output(out, 0), *lab = stk_batch_output(out, 1);
    assert_int_equal(stk_tensor_list_dtype(data), STK_DTYPE_UINT8);
    assert_int_equal(stk_tensor_list_dtype(lab), STK_DTYPE_INT32);
    int size = (int)stk_tensor_list_num_samples(lab);
    assert_true(size >= 1 && size <= batch);
    assert_int_equal(stk_tensor_list_num_samples(data), size);
    for (int i = 0; i < size; i++) {
      stk_tensor_desc d, l;
      TU_OK(stk_tensor_list_sample(data, (size_t)i, &d));
      TU_OK(stk_tensor_list_sample(lab, (size_t)i, &l));
      assert_int_equal(l.ndim, 1);
      assert_int_equal(l.shape[0], 1);
      int32_t label = *(const int32_t *)l.data;
      char want[64];
      snprintf(want, sizeof want, "content %d", label);
      assert_int_equal(d.ndim, 1);
      assert_int_equal(d.shape[0], (int64_t)strlen(want));
      assert_memory_equal(d.data, want, strlen(want));
      labels[total++] = label;
    }
    stk_batch_release(out);
  }
  return total;
}

/* A list file over n files "<k>.jpg" (label k) in `dir`. */
static const char *make_numbered(char *dir, size_t cap, int n, char *list, size_t list_cap) {
  tu_tmpdir(dir, cap, "op");
  stk__strbuf text = {0};
  for (int k = 0; k < n; k++) {
    char name[64], body[64];
    snprintf(name, sizeof name, "%d.jpg", k);
    snprintf(body, sizeof body, "content %d", k);
    put(dir, name, body);
    TU_OK(stk__strbuf_printf(&text, "%s %d\n", name, k));
  }
  snprintf(list, list_cap, "%s/list.txt", dir);
  tu_write(list, text.data, text.len);
  stk__strbuf_free(&text);
  return list;
}

static void test_operator_sequential_and_meta(void **state) {
  char dir[512], list[600];
  make_numbered(dir, sizeof dir, 7, list, sizeof list);
  reader_args a = {.list = list, .pad_last_batch = true};
  stk_status st;
  stk_pipeline *p = reader_pipe(&a, 2, 3, &st);
  TU_OK(st);
  stk_reader_meta m;
  TU_OK(stk_pipeline_reader_meta(p, "Reader", &m));
  assert_int_equal(m.epoch_size, 7);
  assert_int_equal(m.epoch_size_padded, 7); /* one shard: nothing to pad to */
  assert_int_equal(m.shard_size, 7);
  assert_int_equal(m.number_of_shards, 1);
  assert_true(m.pad_last_batch);
  int64_t size;
  TU_OK(stk_pipeline_epoch_size(p, "Reader", &size));
  assert_int_equal(size, 7);
  int32_t labels[10];
  run_labels(p, 5, 2, labels);
  const int32_t want[10] = {0, 1, 2, 3, 4, 5, 6, 6, 0, 1};
  assert_memory_equal(labels, want, sizeof want);
  stk_pipeline_destroy(p);
}

/* The shuffled order is the sampler's, whatever the thread count. */
static void test_operator_shuffle_threads(void **state) {
  char dir[512], list[600];
  make_numbered(dir, sizeof dir, 30, list, sizeof list);
  int32_t got[3][60];
  int count[3];
  for (int t = 0; t < 3; t++) {
    reader_args a = {.list = list, .random_shuffle = true, .seed = 9};
    stk_status st;
    stk_pipeline *p = reader_pipe(&a, 4, 1 + 2 * t, &st); /* 1, 3, 5 threads */
    TU_OK(st);
    count[t] = run_labels(p, 16, 4, got[t]); /* two epochs: 7 batches of 4 and one of 2 */
    stk_pipeline_destroy(p);
  }
  assert_int_equal(count[0], 60);
  assert_int_equal(count[1], 60);
  assert_int_equal(count[2], 60);
  assert_memory_equal(got[0], got[1], sizeof got[0]);
  assert_memory_equal(got[0], got[2], sizeof got[0]);
  stk__sampler_config c = base_cfg(30);
  c.random_shuffle = true, c.seed = 9;
  stk__sampler *s = make_sampler(c);
  for (int i = 0; i < 60; i++) assert_int_equal(got[0][i], stk__sampler_next(s));
  stk__sampler_destroy(s);
}

static void test_operator_image_folder_sharded(void **state) {
  char root[512];
  tu_tmpdir(root, sizeof root, "op-folder");
  put(root, "cat/a.jpg", "content 0");
  put(root, "cat/b.jpg", "content 0");
  put(root, "dog/c.png", "content 1");
  put(root, "eel/d.jpg", "content 2");
  put(root, "eel/e.jpg", "content 2");
  /* shard 1 of 2 over 5 samples: samples 2..4 (labels 1, 2, 2) */
  reader_args a = {.root = root, .num_shards = 2, .shard_id = 1, .stick_to_shard = true};
  stk_status st;
  stk_pipeline *p = reader_pipe(&a, 3, 2, &st);
  TU_OK(st);
  int32_t labels[6];
  run_labels(p, 2, 3, labels);
  const int32_t want[6] = {1, 2, 2, 1, 2, 2};
  assert_memory_equal(labels, want, sizeof want);
  stk_reader_meta m;
  TU_OK(stk_pipeline_reader_meta(p, "Reader", &m));
  assert_int_equal(m.shard_id, 1);
  assert_int_equal(m.shard_size, 3);
  assert_true(m.stick_to_shard);
  stk_pipeline_destroy(p);
}

static void test_operator_build_errors(void **state) {
  char dir[512], list[600], missing[600];
  make_numbered(dir, sizeof dir, 3, list, sizeof list);
  snprintf(missing, sizeof missing, "%s/missing", dir);
  const char *files[] = {"a.jpg"};
  stk_status st;
  reader_args none = {0};
  assert_null(reader_pipe(&none, 1, 1, &st));
  assert_int_equal(st, STK_ERR_INVALID_ARGUMENT);
  assert_error_mentions("Reader");
  reader_args both = {.list = list, .files = files, .num_files = 1};
  assert_null(reader_pipe(&both, 1, 1, &st));
  assert_int_equal(st, STK_ERR_INVALID_ARGUMENT);
  assert_error_mentions("not both");
  reader_args gone = {.root = missing};
  assert_null(reader_pipe(&gone, 1, 1, &st));
  assert_int_equal(st, STK_ERR_NOT_FOUND);
  assert_error_mentions(missing);
  reader_args shuffles = {.list = list, .random_shuffle = true, .shuffle_after_epoch = true};
  assert_null(reader_pipe(&shuffles, 1, 1, &st));
  assert_error_mentions("shuffle_after_epoch");
  reader_args many = {.list = list, .num_shards = 4};
  assert_null(reader_pipe(&many, 1, 1, &st));
  assert_error_mentions("num_shards");
}

static void test_operator_read_errors(void **state) {
  char dir[512], list[600];
  make_numbered(dir, sizeof dir, 2, list, sizeof list);
  char big[600];
  snprintf(big, sizeof big, "%s/1.jpg", dir);
  tu_write(big, "0123456789abcdef", 16);
  reader_args a = {.list = list};
  stk_status st;
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_MAX_FILE_BYTES, 12));
  TU_OK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, 2));
  stk_op *op = reader_op(&a);
  TU_OK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  const char *outs[] = {"data", "label"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 2));
  TU_OK(stk_pipeline_build(p));
  stk_batch *out;
  st = stk_pipeline_run(p, &out);
  assert_int_equal(st, STK_ERR_LIMIT);
  assert_error_mentions(big);
  stk_pipeline_destroy(p);

  /* A listed file that vanished: the error names it. */
  assert_int_equal(unlink(big), 0);
  p = reader_pipe(&a, 2, 1, &st);
  TU_OK(st);
  assert_int_not_equal(stk_pipeline_run(p, &out), STK_OK);
  assert_error_mentions(big);
  stk_pipeline_destroy(p);
}

/* files + labels, relative to file_root; a mismatch of counts names the reader. */
static void test_operator_files_and_labels(void **state) {
  char dir[512], list[600];
  make_numbered(dir, sizeof dir, 4, list, sizeof list);
  const char *files[] = {"3.jpg", "1.jpg"};
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, 2));
  stk_op *op;
  TU_OK(stk_op_create("readers.file", "cpu", &op));
  TU_OK(stk_op_set_name(op, "Reader"));
  TU_OK(stk_op_set_string(op, "file_root", dir));
  TU_OK(stk_op_set_strings(op, "files", files, 2));
  const int64_t labels[] = {3, 1};
  TU_OK(stk_op_set_ints(op, "labels", labels, 2));
  TU_OK(stk_op_add_output(op, "data"));
  TU_OK(stk_op_add_output(op, "label"));
  TU_OK(stk_pipeline_add_op(p, op));
  const char *outs[] = {"data", "label"};
  TU_OK(stk_pipeline_set_outputs(p, outs, 2));
  TU_OK(stk_pipeline_build(p));
  int32_t got[4];
  run_labels(p, 2, 2, got); /* checks each sample's bytes against its label's file */
  const int32_t want[4] = {3, 1, 3, 1};
  assert_memory_equal(got, want, sizeof want);
  stk_pipeline_destroy(p);

  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_op_set_ints(op, "labels", labels, 1));
  TU_OK(stk_pipeline_add_op(p, op));
  TU_OK(stk_pipeline_set_outputs(p, outs, 2));
  assert_int_equal(stk_pipeline_build(p), STK_ERR_INVALID_ARGUMENT);
  assert_error_mentions("Reader");
  assert_error_mentions("2 files but 1 labels");
  stk_pipeline_destroy(p);
  stk_op_destroy(op);
}

/* Paired lists: "image mask label" lines into two parallel lists; bad lines named. */
static void test_file_list_pairs(void **state) {
  char dir[256], path[512];
  tu_tmpdir(dir, sizeof dir, "pairs");
  snprintf(path, sizeof path, "%s/pairs.txt", dir);
  const char *text = "# image mask label\n a.jpg  a.png 3\nsub/b.jpg\tsub/b.png -1\n\n";
  tu_write(path, text, strlen(text));
  stk__file_list img, mask;
  TU_OK(stk__file_list_parse_pairs(&img, &mask, path, "/data"));
  assert_int_equal(img.count, 2);
  assert_int_equal(mask.count, 2);
  assert_string_equal(img.paths[0], "/data/a.jpg");
  assert_string_equal(mask.paths[0], "/data/a.png");
  assert_string_equal(img.paths[1], "/data/sub/b.jpg");
  assert_string_equal(mask.paths[1], "/data/sub/b.png");
  assert_int_equal(img.labels[0], 3);
  assert_int_equal(mask.labels[1], -1);
  stk__file_list_free(&img);
  stk__file_list_free(&mask);
  const char *bad = "a.jpg a.png 1\na.jpg 2\n";
  tu_write(path, bad, strlen(bad));
  assert_int_equal(stk__file_list_parse_pairs(&img, &mask, path, NULL), STK_ERR_PARSE);
  assert_non_null(strstr(stk_last_error(), "pairs.txt:2"));
  const char *bad_label = "a.jpg a.png x\n";
  tu_write(path, bad_label, strlen(bad_label));
  assert_int_equal(stk__file_list_parse_pairs(&img, &mask, path, NULL), STK_ERR_PARSE);
  assert_non_null(strstr(stk_last_error(), "label 'x'"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shard_bounds_formula),
      cmocka_unit_test(test_file_list_pairs),
      cmocka_unit_test(test_padded_size),
      cmocka_unit_test(test_shards_disjoint_and_covering),
      cmocka_unit_test(test_sequential_wraps_across_epochs),
      cmocka_unit_test(test_padding_with_shards),
      cmocka_unit_test(test_stick_to_shard),
      cmocka_unit_test(test_meta),
      cmocka_unit_test(test_epochs_partition_the_data),
      cmocka_unit_test(test_local_shuffle_keeps_the_shard),
      cmocka_unit_test(test_shuffle_positions_uniform),
      cmocka_unit_test(test_class_sorted_batches_mix),
      cmocka_unit_test(test_random_shuffle_seeds),
      cmocka_unit_test(test_streaming_in_order),
      cmocka_unit_test(test_streaming_shuffled_partition),
      cmocka_unit_test(test_streaming_buffer_bound),
      cmocka_unit_test(test_shuffle_after_epoch_single_shard),
      cmocka_unit_test(test_shuffle_after_epoch_uniform),
      cmocka_unit_test(test_shuffle_after_epoch_shards),
      cmocka_unit_test(test_sampler_errors),
      cmocka_unit_test(test_image_folder),
      cmocka_unit_test(test_image_folder_errors),
      cmocka_unit_test(test_filter_match),
      cmocka_unit_test(test_list_file),
      cmocka_unit_test(test_list_file_errors),
      cmocka_unit_test(test_explicit_files),
      cmocka_unit_test(test_operator_sequential_and_meta),
      cmocka_unit_test(test_operator_shuffle_threads),
      cmocka_unit_test(test_operator_image_folder_sharded),
      cmocka_unit_test(test_operator_build_errors),
      cmocka_unit_test(test_operator_read_errors),
      cmocka_unit_test(test_operator_files_and_labels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
