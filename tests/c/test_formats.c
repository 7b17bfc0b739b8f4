/* Dataset formats: tar (USTAR, GNU, pax) and readers.webdataset, TFRecord (CRC32C,
 * tf.train.Example) and readers.tfrecord, .npy and readers.numpy, shuffling and sharding
 * through the readers, and the convert round trip. Fixtures come from independent
 * writers (tests/data/make_format_fixtures.py: Python's tarfile, a bitwise CRC32C and a
 * hand-written protobuf encoder, numpy.save); expected contents follow the formula that
 * script documents, recomputed here. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/convert.h"
#include "io/fileset.h"
#include "io/npy.h"
#include "io/tar.h"
#include "io/tfrecord.h"
#include "ops/reader_common.h"
#include "testutil.h"

static char fx[512];      /* the fixture directory */
static char python[1024]; /* the interpreter running the fixture script */
static char script[1024];

/* ---------------------------------------------------------------------------------- */
/* helpers                                                                            */
/* ---------------------------------------------------------------------------------- */

static void content(const char *name, size_t n, uint8_t *out) {
  size_t k = strlen(name) * 7 + 3;
  for (size_t i = 0; i < n; i++) out[i] = (uint8_t)((i * 31 + k) % 256);
}

static const char *fxp(char *buf, size_t cap, const char *rel) {
  snprintf(buf, cap, "%s/%s", fx, rel);
  return buf;
}

static void assert_error_mentions(const char *needle) {
  if (!strstr(stk_last_error(), needle))
    fail_msg("error \"%s\" does not mention \"%s\"", stk_last_error(), needle);
}

static int setup_fixtures(void **state) {
  char cmd[4096];
  tu_tmpdir(fx, sizeof fx, "formats");
  tu_path(script, sizeof script, "tests/data/make_format_fixtures.py");
  tu_path(python, sizeof python, ".venv/bin/python");
  if (access(python, X_OK) != 0) snprintf(python, sizeof python, "python3");
  snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", python, script, fx);
  if (system(cmd) != 0) {
    fprintf(stderr, "fixture generation failed: %s\n", cmd);
    return -1;
  }
  return 0;
}

/* A reader op with outputs o0..o{n-1}, named "R". */
static stk_op *reader(const char *name, int outputs) {
  stk_op *op;
  TU_OK(stk_op_create(name, "cpu", &op));
  TU_OK(stk_op_set_name(op, "R"));
  for (int i = 0; i < outputs; i++) {
    char e[8];
    snprintf(e, sizeof e, "o%d", i);
    TU_OK(stk_op_add_output(op, e));
  }
  return op;
}

/* Builds a pipeline around `op` (not destroyed); NULL with *st on a build error. */
static stk_pipeline *build(const stk_op *op, int outputs, int batch, int threads, bool skip,
                           stk_status *st) {
  stk_pipeline *p;
  TU_OK(stk_pipeline_create(&p));
  TU_OK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, batch));
  TU_OK(stk_pipeline_set(p, STK_PIPE_NUM_THREADS, threads));
  /* skipping: synchronous, so that the skipped count read after a batch is that batch's
   * (a producer running ahead may already have met the bad record again) */
  if (skip) TU_OK(stk_pipeline_set(p, STK_PIPE_ON_ERROR, STK_ON_ERROR_SKIP));
  if (skip) TU_OK(stk_pipeline_set(p, STK_PIPE_EXEC_ASYNC, 0));
  TU_OK(stk_pipeline_add_op(p, op));
  const char *names[] = {"o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9"};
  TU_OK(stk_pipeline_set_outputs(p, names, (size_t)outputs));
  *st = stk_pipeline_build(p);
  if (*st != STK_OK) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  return p;
}

static stk_pipeline *build_ok(const stk_op *op, int outputs, int batch) {
  stk_status st;
  stk_pipeline *p = build(op, outputs, batch, 2, false, &st);
  TU_OK(st);
  return p;
}

static void expect_build_error(const stk_op *op, int outputs, stk_status want, const char *needle) {
  stk_status st;
  stk_pipeline *p = build(op, outputs, 1, 1, false, &st);
  if (p)
    fail_msg("the pipeline built; expected %s mentioning \"%s\"", stk_status_name(want), needle);
  assert_int_equal(st, want);
  assert_error_mentions(needle);
}

/* Sample i of output o of a batch. */
static stk_tensor_desc sample(stk_batch *b, size_t o, size_t i) {
  stk_tensor_desc d;
  TU_OK(stk_tensor_list_sample(stk_batch_output(b, o), i, &d));
  return d;
}

static void set_strings1(stk_op *op, const char *arg, const char *v) {
  TU_OK(stk_op_set_strings(op, arg, &v, 1));
}

/* ---------------------------------------------------------------------------------- */
/* CRC32C and brace expansion                                                         */
/* ---------------------------------------------------------------------------------- */

static void test_crc32c_vectors(void **state) {
  /* The check value of CRC-32C and the iSCSI test vectors of RFC 3720, B.4. */
  assert_int_equal(stk__crc32c(0, "123456789", 9), 0xE3069283u);
  uint8_t buf[32];
  memset(buf, 0, 32);
  assert_int_equal(stk__crc32c(0, buf, 32), 0x8A9136AAu);
  memset(buf, 0xff, 32);
  assert_int_equal(stk__crc32c(0, buf, 32), 0x62A8AB43u);
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)i;
  assert_int_equal(stk__crc32c(0, buf, 32), 0x46DD794Eu);
  for (int i = 0; i < 32; i++) buf[i] = (uint8_t)(31 - i);
  assert_int_equal(stk__crc32c(0, buf, 32), 0x113FDB5Cu);
  assert_int_equal(stk__crc32c_portable(0, "123456789", 9), 0xE3069283u);
  /* Both paths agree on every length and alignment; chaining equals one pass. */
  uint8_t big[1100];
  for (int i = 0; i < 1100; i++) big[i] = (uint8_t)(i * 131 + (i >> 3));
  for (size_t off = 0; off < 9; off++)
    for (size_t n = 0; n + off <= 1100; n += 13) {
      uint32_t a = stk__crc32c(0, big + off, n), b = stk__crc32c_portable(0, big + off, n);
      assert_int_equal(a, b);
      size_t h = n / 3;
      assert_int_equal(stk__crc32c(stk__crc32c(0, big + off, h), big + off + h, n - h), a);
    }
}

static void expect_expansion(const char *pattern, const char *const *want, size_t n) {
  char **out;
  size_t count;
  TU_OK(stk__expand_braces(&pattern, 1, "R", "paths", &out, &count));
  if (count != n) fail_msg("'%s': %zu paths, want %zu", pattern, count, n);
  for (size_t i = 0; i < n; i++) assert_string_equal(out[i], want[i]);
  free(out);
}

static void test_brace_expansion(void **state) {
  const char *a[] = {"s-008.tar", "s-009.tar", "s-010.tar"};
  expect_expansion("s-{008..010}.tar", a, 3);
  const char *b[] = {"a1", "a2", "b1", "b2"};
  expect_expansion("{a,b}{1..2}", b, 4);
  const char *c[] = {"3", "2", "1"};
  expect_expansion("{3..1}", c, 3);
  const char *d[] = {"x{y}z", "plain"};
  expect_expansion("x{y}z", d, 1);
  expect_expansion("plain", d + 1, 1);
  const char *e[] = {"pa", "pb", "pc"};
  expect_expansion("p{a,{b,c}}", e, 3);
  const char *f[] = {"9", "10"};
  expect_expansion("{9..10}", f, 2);
  char **out;
  size_t count;
  const char *bad = "shard-{0..3.tar";
  assert_int_equal(stk__expand_braces(&bad, 1, "R", "paths", &out, &count),
                   STK_ERR_INVALID_ARGUMENT);
  assert_error_mentions("unclosed");
  assert_error_mentions("shard-{0..3.tar");
}

/* ---------------------------------------------------------------------------------- */
/* tar                                                                                */
/* ---------------------------------------------------------------------------------- */

typedef struct {
  char names[32][512];
  int64_t offsets[32], sizes[32];
  int count;
} members;

static stk_status collect(void *user, const char *name, int64_t offset, int64_t size) {
  members *m = user;
  if (m->count == 32) return STK_ERR_LIMIT;
  snprintf(m->names[m->count], sizeof m->names[0], "%s", name);
  m->offsets[m->count] = offset;
  m->sizes[m->count++] = size;
  return STK_OK;
}

static stk_status scan(const char *rel, members *m) {
  char path[1024];
  fxp(path, sizeof path, rel);
  stk__fileset fs;
  stk_status st = stk__fileset_open(&fs, (const char *const[]){path}, 1, "test");
  memset(m, 0, sizeof *m);
  if (st == STK_OK) st = stk__tar_scan(fs.fds[0], path, fs.sizes[0], collect, m);
  stk__fileset_close(&fs);
  return st;
}

/* Every member Python's tarfile wrote, by name, size and content, in order. */
static void test_tar_scan_python_writers(void **state) {
  char path[1024];
  size_t msize;
  char *manifest = (char *)tu_read(fxp(path, sizeof path, "tar_manifest.txt"), &msize);
  manifest[msize] = '\0';
  const char *tars[] = {"ustar.tar", "gnu.tar", "pax.tar"};
  int seen = 0;
  for (int t = 0; t < 3; t++) {
    members m;
    TU_OK(scan(tars[t], &m));
    size_t tsize;
    uint8_t *tar = tu_read(fxp(path, sizeof path, tars[t]), &tsize);
    int k = 0;
    for (char *line = manifest; *line; line = strchr(line, '\n') + 1) {
      char tar_name[64], name[512];
      long long size;
      assert_int_equal(sscanf(line, "%63s %511s %lld", tar_name, name, &size), 3);
      if (strcmp(tar_name, tars[t]) != 0) continue;
      assert_true(k < m.count);
      assert_string_equal(m.names[k], name);
      assert_int_equal(m.sizes[k], size);
      uint8_t *want = malloc((size_t)size + 1);
      if (strstr(name, ".cls"))
        memcpy(want, tar + m.offsets[k], (size_t)size); /* label text */
      else if (strstr(name, "._hidden"))
        memcpy(want, "mac junk", 8);
      else
        content(name, (size_t)size, want);
      assert_memory_equal(tar + m.offsets[k], want, (size_t)size);
      free(want);
      k++;
      seen++;
    }
    assert_int_equal(k, m.count); /* no extra members (dirs and links are not files) */
    free(tar);
  }
  assert_int_equal(seen, 9 + 4 + 4);
  free(manifest);
}

static void test_tar_bad_input(void **state) {
  members m;
  char path[1024];
  assert_int_equal(scan("trunc.tar", &m), STK_ERR_DECODE);
  assert_error_mentions(fxp(path, sizeof path, "trunc.tar"));
  assert_error_mentions("truncated");
  assert_error_mentions("dir/s0.jpg");
  assert_error_mentions("offset 512");
  assert_int_equal(scan("notar.tar", &m), STK_ERR_DECODE);
  assert_error_mentions("not a tar archive");
  assert_int_equal(scan("badsum.tar", &m), STK_ERR_DECODE);
  assert_error_mentions("checksum");
  assert_error_mentions("offset 2048");
  assert_int_equal(m.count, 1); /* s0.jpg came before the corrupt header */
  /* The pax size record wins over the zeroed USTAR size field. */
  TU_OK(scan("pax.tar", &m));
  assert_string_equal(m.names[2], "paxsize.jpg");
  assert_int_equal(m.sizes[2], 3000);
}

static void test_wds_split_name(void **state) {
  size_t k;
  const char *ext;
  assert_true(stk__wds_split_name("a/b.c/d.seg.png", &k, &ext));
  assert_int_equal(k, strlen("a/b.c/d"));
  assert_string_equal(ext, "seg.png");
  assert_true(stk__wds_split_name("noext", &k, &ext));
  assert_int_equal(k, 5);
  assert_string_equal(ext, "");
  assert_false(stk__wds_split_name("dir/.hidden.jpg", &k, &ext));
  assert_false(stk__wds_split_name("dir/", &k, &ext));
}

/* ---------------------------------------------------------------------------------- */
/* readers.webdataset                                                                 */
/* ---------------------------------------------------------------------------------- */

static stk_op *wds_op(const char *const *paths, size_t np, const char *const *ext, size_t ne) {
  stk_op *op = reader("readers.webdataset", (int)ne);
  TU_OK(stk_op_set_strings(op, "paths", paths, np));
  TU_OK(stk_op_set_strings(op, "ext", ext, ne));
  return op;
}

static void assert_bytes(stk_tensor_desc d, const char *name, size_t n) {
  assert_int_equal(d.dtype, STK_DTYPE_UINT8);
  assert_int_equal(d.ndim, 1);
  if ((size_t)d.shape[0] != n) fail_msg("%s: %lld bytes, want %zu", name, (long long)d.shape[0], n);
  uint8_t *want = malloc(n + 1);
  content(name, n, want);
  assert_memory_equal(d.data, want, n);
  free(want);
}

static void assert_text(stk_tensor_desc d, const char *text) {
  assert_int_equal(d.shape[0], (int64_t)strlen(text));
  assert_memory_equal(d.data, text, strlen(text));
}

/* The three Python archives through the operator: keys, alternatives, first-dot rule. */
static void test_webdataset_python_archives(void **state) {
  char a[1024], b[1024], c[1024];
  const char *paths[] = {fxp(a, sizeof a, "ustar.tar"), fxp(b, sizeof b, "gnu.tar"),
                         fxp(c, sizeof c, "pax.tar")};
  const char *ext[] = {"jpg;b.jpg", "cls;b.cls"};
  stk_op *op = wds_op(paths, 3, ext, 2);
  stk_pipeline *p = build_ok(op, 2, 8);
  int64_t n;
  TU_OK(stk_pipeline_epoch_size(p, "R", &n));
  assert_int_equal(n, 8); /* hidden files, directories and links are no samples */
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  char s3[300], lx[300], fr[300];
  char ps[61], qs[71], xs[151];
  memset(ps, 'p', 60), ps[60] = '\0';
  memset(qs, 'q', 70), qs[70] = '\0';
  memset(xs, 'x', 150), xs[150] = '\0';
  snprintf(s3, sizeof s3, "%s/%s/s3.jpg", ps, qs);
  snprintf(lx, sizeof lx, "long_%s/a.b.jpg", xs);
  snprintf(fr, sizeof fr, "données/");
  for (int i = 0; i < 80; i++) strcat(fr, "é");
  strcat(fr, ".jpg");
  struct {
    const char *name;
    size_t size;
    const char *cls;
  } want[] = {{"dir/s0.jpg", 700, "0"}, {"dir/s1.jpg", 1000, "1"}, {"dir/s2.jpg", 1300, "2"},
              {s3, 513, "3"},           {lx, 100000, "4"},         {"short.jpg", 0, "5"},
              {fr, 1234, "6"},          {"paxsize.jpg", 3000, "7"}};
  for (int i = 0; i < 8; i++) {
    assert_bytes(sample(out, 0, (size_t)i), want[i].name, want[i].size);
    assert_text(sample(out, 1, (size_t)i), want[i].cls);
  }
  stk_batch_release(out);
  stk_pipeline_destroy(p);
  /* Without the "b.jpg" alternative, sample 4's components match nothing: empty. */
  const char *plain[] = {"jpg", "cls"};
  TU_OK(stk_op_set_strings(op, "ext", plain, 2));
  p = build_ok(op, 2, 8);
  TU_OK(stk_pipeline_run(p, &out));
  assert_int_equal(sample(out, 0, 4).shape[0], 0);
  assert_int_equal(sample(out, 1, 4).shape[0], 0);
  assert_text(sample(out, 1, 5), "5");
  stk_batch_release(out);
  stk_pipeline_destroy(p);
  stk_op_destroy(op);
}

/* Image + mask pairs over a brace pattern; missing_component_behavior. */
static void test_webdataset_pairs_missing(void **state) {
  char pat[1024];
  const char *paths[] = {fxp(pat, sizeof pat, "pair-{0..1}.tar")};
  const char *ext[] = {"jpg", "png"};
  stk_op *op = wds_op(paths, 1, ext, 2);
  const char *keys[] = {"a", "b", "c", "d", "e"};
  for (int mode = 0; mode < 4; mode++) {
    const char *names[] = {"empty", "fill", "skip", "error"};
    TU_OK(stk_op_set_string(op, "missing_component_behavior", names[mode]));
    if (mode == 3) {
      expect_build_error(op, 2, STK_ERR_DECODE, "pair-0.tar");
      assert_error_mentions("'c'");
      break;
    }
    stk_pipeline *p = build_ok(op, 2, mode == 2 ? 4 : 5);
    int64_t n;
    TU_OK(stk_pipeline_epoch_size(p, "R", &n));
    assert_int_equal(n, mode == 2 ? 4 : 5);
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    for (int i = 0, k = 0; i < 5; i++) {
      if (mode == 2 && i == 2) continue; /* c has no mask: left out */
      char img[16], mask[16];
      snprintf(img, sizeof img, "%s.jpg", keys[i]);
      snprintf(mask, sizeof mask, "%s.png", keys[i]);
      assert_bytes(sample(out, 0, (size_t)k), img, 50);
      if (i == 2)
        assert_int_equal(sample(out, 1, (size_t)k).shape[0], 0);
      else
        assert_bytes(sample(out, 1, (size_t)k), mask, 20);
      k++;
    }
    stk_batch_release(out);
    stk_pipeline_destroy(p);
  }
  stk_op_destroy(op);
}

/* DALI index files written by the fixture script (from tarfile's offsets), and our own
 * index writer, give the same samples as scanning. */
static void test_webdataset_index_files(void **state) {
  char pat[1024], idx[1024];
  const char *paths[] = {fxp(pat, sizeof pat, "pair-{0..1}.tar")};
  const char *index[] = {fxp(idx, sizeof idx, "pair-{0..1}.idx")};
  const char *ext[] = {"png", "jpg"};
  stk_op *op = wds_op(paths, 1, ext, 2);
  TU_OK(stk_op_set_strings(op, "index_paths", index, 1));
  stk_pipeline *p = build_ok(op, 2, 5);
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  assert_bytes(sample(out, 0, 0), "a.png", 20);
  assert_bytes(sample(out, 1, 4), "e.jpg", 50);
  assert_int_equal(sample(out, 0, 2).shape[0], 0);
  stk_batch_release(out);
  stk_pipeline_destroy(p);

  /* Our writer's index equals what scanning builds, and loads back. */
  char tar[1024], mine[1024];
  fxp(tar, sizeof tar, "pair-0.tar");
  fxp(mine, sizeof mine, "mine.idx");
  stk__fileset fs;
  TU_OK(stk__fileset_open(&fs, (const char *const[]){tar}, 1, "t"));
  stk__wds_index built, loaded, dali;
  TU_OK(stk__wds_index_build(&built, fs.fds[0], tar, fs.sizes[0]));
  TU_OK(stk__wds_index_write(&built, mine));
  TU_OK(stk__wds_index_load(&loaded, mine, tar, fs.sizes[0]));
  TU_OK(stk__wds_index_load(&dali, fxp(idx, sizeof idx, "pair-0.idx"), tar, fs.sizes[0]));
  const stk__wds_index *all[] = {&loaded, &dali};
  for (int k = 0; k < 2; k++) {
    assert_int_equal(all[k]->num_samples, 3);
    assert_int_equal(all[k]->num_comps, built.num_comps);
    for (int64_t i = 0; i < built.num_comps; i++) {
      assert_int_equal(all[k]->comps[i].offset, built.comps[i].offset);
      assert_int_equal(all[k]->comps[i].size, built.comps[i].size);
      assert_string_equal(stk__wds_ext(all[k], &all[k]->comps[i]),
                          stk__wds_ext(&built, &built.comps[i]));
    }
    assert_string_equal(stk__wds_key(all[k], 2), "c");
  }
  stk__wds_index_free(&loaded);
  /* An index that does not match its archive. */
  tu_write(mine, "v1.2 1\njpg 512 999999 a.jpg\n", 28);
  assert_int_equal(stk__wds_index_load(&loaded, mine, tar, fs.sizes[0]), STK_ERR_DECODE);
  assert_error_mentions("mine.idx:2");
  tu_write(mine, "v1.1 1\n", 7);
  assert_int_equal(stk__wds_index_load(&loaded, mine, tar, fs.sizes[0]), STK_ERR_UNSUPPORTED);
  stk__wds_index_free(&built);
  stk__wds_index_free(&dali);
  stk__fileset_close(&fs);
  stk_op_destroy(op);
}

static void test_webdataset_dtypes_and_errors(void **state) {
  char a[1024];
  const char *paths[] = {fxp(a, sizeof a, "ustar.tar")};
  const char *ext[] = {"jpg", "cls"};
  const char *dtypes[] = {"int16", "uint8"};
  stk_op *op = wds_op(paths, 1, ext, 2);
  TU_OK(stk_op_set_strings(op, "dtypes", dtypes, 2));
  stk_pipeline *p = build_ok(op, 2, 1);
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out)); /* s0.jpg: 700 bytes = 350 int16 */
  stk_tensor_desc d = sample(out, 0, 0);
  assert_int_equal(d.dtype, STK_DTYPE_INT16);
  assert_int_equal(d.shape[0], 350);
  uint8_t want[700];
  content("dir/s0.jpg", 700, want);
  assert_memory_equal(d.data, want, 700);
  stk_batch_release(out);
  TU_OK(stk_pipeline_run(p, &out)); /* s1.jpg: 1000 bytes */
  stk_batch_release(out);
  stk_pipeline_destroy(p);
  const char *dt8[] = {"float64", "uint8"}; /* 700 bytes are no whole float64s */
  TU_OK(stk_op_set_strings(op, "dtypes", dt8, 2));
  p = build_ok(op, 2, 3);
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_DECODE);
  assert_error_mentions("dir/s0.jpg");
  assert_error_mentions("multiple");
  stk_pipeline_destroy(p);
  /* Build-time errors name the reader and the culprit. */
  const char *one[] = {"uint8"};
  TU_OK(stk_op_set_strings(op, "dtypes", one, 1));
  expect_build_error(op, 2, STK_ERR_INVALID_ARGUMENT, "2 ext entries but 1 dtypes");
  stk_op_destroy(op);
  char t[1024], nt[1024], missing[1024];
  const char *trunc[] = {fxp(t, sizeof t, "trunc.tar")};
  op = wds_op(trunc, 1, ext, 2);
  expect_build_error(op, 2, STK_ERR_DECODE, "truncated");
  assert_error_mentions("operator 'R': ");
  stk_op_destroy(op);
  const char *notar[] = {fxp(nt, sizeof nt, "notar.tar")};
  op = wds_op(notar, 1, ext, 2);
  expect_build_error(op, 2, STK_ERR_DECODE, "not a tar archive");
  stk_op_destroy(op);
  const char *gone[] = {fxp(missing, sizeof missing, "missing-{0..1}.tar")};
  op = wds_op(gone, 1, ext, 2);
  expect_build_error(op, 2, STK_ERR_NOT_FOUND, "missing-0.tar");
  stk_op_destroy(op);
}

/* ---------------------------------------------------------------------------------- */
/* TFRecord                                                                           */
/* ---------------------------------------------------------------------------------- */

/* The features of the fixture's records, in output order. */
static const char *tf_names[] = {"image/encoded",   "label", "floats", "unpacked_ints",
                                 "unpacked_floats", "var",   "neg",    "opt"};

static stk_op *tf_op(const char *file, bool with_index) {
  char path[1024], idx[1024];
  stk_op *op = reader("readers.tfrecord", 8);
  set_strings1(op, "path", fxp(path, sizeof path, file));
  if (with_index) set_strings1(op, "index_path", fxp(idx, sizeof idx, "data.idx"));
  const char *types[] = {"string",  "int64", "float32", "int64",
                         "float32", "int64", "int64",   "int64"};
  const char *kinds[] = {"fixed", "fixed", "fixed", "fixed", "fixed", "var", "fixed", "var"};
  const int64_t ndims[] = {0, 1, 1, 1, 0, 0, 2, 0};
  const int64_t shapes[] = {1, 3, 2, 1, 1};
  const char *defaults[] = {"", "", "", "", "", "", "", "-7"};
  const int64_t has[] = {0, 0, 0, 0, 0, 0, 0, 1};
  TU_OK(stk_op_set_strings(op, "feature_names", tf_names, 8));
  TU_OK(stk_op_set_strings(op, "feature_types", types, 8));
  TU_OK(stk_op_set_strings(op, "feature_kinds", kinds, 8));
  TU_OK(stk_op_set_ints(op, "feature_ndims", ndims, 8));
  TU_OK(stk_op_set_ints(op, "feature_shapes", shapes, 5));
  TU_OK(stk_op_set_strings(op, "feature_defaults", defaults, 8));
  TU_OK(stk_op_set_ints(op, "feature_has_default", has, 8));
  return op;
}

/* Record i's features against the formulas of the fixture script. */
static void assert_record(stk_batch *out, size_t k, int i) {
  char name[16];
  snprintf(name, sizeof name, "img%d", i);
  assert_bytes(sample(out, 0, k), name, (size_t)(100 + 37 * i));
  stk_tensor_desc d = sample(out, 1, k);
  assert_int_equal(d.dtype, STK_DTYPE_INT64);
  assert_int_equal(d.ndim, 1);
  assert_int_equal(d.shape[0], 1);
  assert_int_equal(((int64_t *)d.data)[0], i * 10);
  d = sample(out, 2, k);
  assert_int_equal(d.dtype, STK_DTYPE_FLOAT32);
  assert_int_equal(d.shape[0], 3);
  const float *f = d.data;
  assert_true(f[0] == i + 0.5f && f[1] == -(float)i && f[2] == 1.25f * i);
  d = sample(out, 3, k);
  assert_int_equal(d.shape[0], 2);
  assert_int_equal(((int64_t *)d.data)[0], i);
  assert_int_equal(((int64_t *)d.data)[1], i + 1);
  d = sample(out, 4, k);
  assert_int_equal(d.ndim, 0); /* FixedLenFeature([], float32) */
  assert_true(((float *)d.data)[0] == 0.25f * i);
  d = sample(out, 5, k);
  assert_int_equal(d.ndim, 1);
  assert_int_equal(d.shape[0], i);
  for (int j = 0; j < i; j++) assert_int_equal(((int64_t *)d.data)[j], j);
  d = sample(out, 6, k);
  assert_int_equal(d.ndim, 2);
  assert_int_equal(d.shape[0], 1);
  assert_int_equal(d.shape[1], 1);
  assert_int_equal(((int64_t *)d.data)[0], -(int64_t)(i + 1) * 1000000007);
  d = sample(out, 7, k);
  assert_int_equal(d.shape[0], 1);
  assert_int_equal(((int64_t *)d.data)[0], i % 2 == 0 ? i : -7); /* the default when absent */
}

static void test_tfrecord_reader(void **state) {
  for (int with_index = 0; with_index <= 1; with_index++) {
    stk_op *op = tf_op("data.tfrecord", with_index);
    stk_pipeline *p = build_ok(op, 8, 3);
    int64_t n;
    TU_OK(stk_pipeline_epoch_size(p, "R", &n));
    assert_int_equal(n, 6);
    for (int b = 0; b < 4; b++) { /* wraps into the second epoch */
      stk_batch *out;
      TU_OK(stk_pipeline_run(p, &out));
      for (int k = 0; k < 3; k++) assert_record(out, (size_t)k, (b * 3 + k) % 6);
      stk_batch_release(out);
    }
    stk_pipeline_destroy(p);
    stk_op_destroy(op);
  }
}

/* A record whose data CRC is wrong: an error naming file and offset; skipped under the
 * skip policy. */
static void test_tfrecord_bad_crc(void **state) {
  char path[1024], offsets[1024];
  size_t n;
  char *text = (char *)tu_read(fxp(offsets, sizeof offsets, "tf_offsets.txt"), &n);
  text[n] = '\0';
  long long off[6];
  assert_int_equal(sscanf(text, "%lld %lld %lld %lld %lld %lld", &off[0], &off[1], &off[2], &off[3],
                          &off[4], &off[5]),
                   6);
  free(text);
  stk_op *op = tf_op("badcrc.tfrecord", false);
  stk_pipeline *p = build_ok(op, 8, 3);
  stk_batch *out;
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_DECODE);
  assert_error_mentions(fxp(path, sizeof path, "badcrc.tfrecord"));
  char where[64];
  snprintf(where, sizeof where, "offset %lld", off[2]);
  assert_error_mentions(where);
  assert_error_mentions("CRC");
  stk_pipeline_destroy(p);
  stk_status st;
  p = build(op, 8, 3, 2, true, &st);
  TU_OK(st);
  TU_OK(stk_pipeline_run(p, &out)); /* records 0, 1, then 3 replaces the bad 2 */
  assert_record(out, 0, 0);
  assert_record(out, 1, 1);
  assert_record(out, 2, 3);
  stk_batch_release(out);
  stk_stats stats = {.struct_size = sizeof stats};
  TU_OK(stk_pipeline_stats(p, &stats));
  assert_int_equal(stats.skipped, 1);
  stk_pipeline_destroy(p);
  stk_op_destroy(op);
}

static void test_tfrecord_bad_input(void **state) {
  stk_op *op = tf_op("trunc.tfrecord", false);
  expect_build_error(op, 8, STK_ERR_DECODE, "truncated");
  assert_error_mentions("trunc.tfrecord");
  assert_error_mentions("offset");
  stk_op_destroy(op);
  op = tf_op("notrec.tfrecord", false);
  expect_build_error(op, 8, STK_ERR_DECODE, "not a TFRecord file");
  stk_op_destroy(op);
  /* Type and count mismatches are per-record decode errors naming the feature. */
  char path[1024];
  const char *names[] = {"label"}, *as_float[] = {"float32"}, *as_int[] = {"int64"};
  op = reader("readers.tfrecord", 1);
  set_strings1(op, "path", fxp(path, sizeof path, "data.tfrecord"));
  TU_OK(stk_op_set_strings(op, "feature_names", names, 1));
  TU_OK(stk_op_set_strings(op, "feature_types", as_float, 1));
  stk_pipeline *p = build_ok(op, 1, 1);
  stk_batch *out;
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_DECODE);
  assert_error_mentions("'label'");
  assert_error_mentions("int64_list");
  stk_pipeline_destroy(p);
  const char *var[] = {"var"};
  TU_OK(stk_op_set_strings(op, "feature_names", var, 1));
  TU_OK(stk_op_set_strings(op, "feature_types", as_int, 1));
  p = build_ok(op, 1, 1); /* record 0 has no 'var' values and no default */
  assert_int_equal(stk_pipeline_run(p, &out), STK_ERR_DECODE);
  assert_error_mentions("missing and has no default");
  stk_pipeline_destroy(p);
  const char *two[] = {"string", "int64"};
  TU_OK(stk_op_set_strings(op, "feature_types", two, 2));
  expect_build_error(op, 1, STK_ERR_INVALID_ARGUMENT, "1 feature_names but 2 feature_types");
  stk_op_destroy(op);
}

/* The Example parser against hand-made messages: unknown fields, duplicates, bad wire. */
static void test_tf_example_parser(void **state) {
  stk__strbuf feats = {0}, ex = {0};
  int64_t v[] = {5, -1, INT64_MAX, INT64_MIN};
  float fl[] = {1.5f, -0.0f};
  TU_OK(stk__tf_put_int64(&feats, "i", v, 4));
  TU_OK(stk__tf_put_float(&feats, "f", fl, 2));
  TU_OK(stk__tf_put_bytes(&feats, "b", "xyz", 3));
  TU_OK(stk__tf_put_int64(&feats, "i", v, 1)); /* a repeated key: the last wins */
  TU_OK(stk__tf_example_finish(&feats, &ex));
  const char *names[] = {"f", "i", "b", "zz"};
  stk__tf_feature out[4];
  TU_OK(stk__tf_example_find((const uint8_t *)ex.data, ex.len, names, 4, out));
  assert_int_equal(out[0].kind, STK__TF_FLOAT);
  assert_int_equal(out[0].count, 2);
  float fo[2];
  TU_OK(stk__tf_feature_float(&out[0], fo));
  assert_memory_equal(fo, fl, sizeof fl);
  assert_int_equal(out[1].kind, STK__TF_INT64);
  assert_int_equal(out[1].count, 1);
  assert_int_equal(out[2].kind, STK__TF_BYTES);
  assert_int_equal(out[3].kind, STK__TF_MISSING);
  stk__strbuf_free(&feats);
  TU_OK(stk__tf_put_int64(&feats, "i", v, 4));
  TU_OK(stk__tf_example_finish(&feats, &ex));
  TU_OK(stk__tf_example_find((const uint8_t *)ex.data, ex.len, names + 1, 1, out));
  int64_t io[4];
  TU_OK(stk__tf_feature_int64(&out[0], io));
  assert_memory_equal(io, v, sizeof v);
  /* Every truncation of a valid message is an error or a shorter valid one: never a
   * crash (run under ASan in the sanitizer build). */
  for (size_t cut = 0; cut < ex.len; cut++) {
    stk_status st = stk__tf_example_find((const uint8_t *)ex.data, cut, names, 4, out);
    assert_true(st == STK_OK || st == STK_ERR_DECODE);
  }
  const uint8_t group[] = {0x0b}; /* field 1, wire type 3 */
  assert_int_equal(stk__tf_example_find(group, 1, names, 4, out), STK_ERR_DECODE);
  assert_error_mentions("malformed");
  stk__strbuf_free(&feats);
  stk__strbuf_free(&ex);
}

/* ---------------------------------------------------------------------------------- */
/* NumPy                                                                              */
/* ---------------------------------------------------------------------------------- */

static stk_op *npy_op(void) { return reader("readers.numpy", 1); }

/* Every array numpy wrote (dtypes, orders, versions) equals numpy's own C-order bytes. */
static void test_numpy_dtypes_orders_versions(void **state) {
  char root[1024], path[1024];
  size_t msize;
  char *manifest = (char *)tu_read(fxp(path, sizeof path, "npy/manifest.txt"), &msize);
  manifest[msize] = '\0';
  int count = 0;
  for (char *l = manifest; *l; l = strchr(l, '\n') + 1) count++;
  for (int plain = 0; plain <= 1; plain++) { /* mapped, then read (dont_use_mmap) */
    stk_op *op = npy_op();
    TU_OK(stk_op_set_string(op, "file_root", fxp(root, sizeof root, "npy")));
    TU_OK(stk_op_set_bool(op, "dont_use_mmap", plain));
    stk_pipeline *p = build_ok(op, 1, 1); /* one sample per batch: dtypes differ */
    int64_t n;
    TU_OK(stk_pipeline_epoch_size(p, "R", &n));
    assert_int_equal(n, count); /* file_root searched recursively: sub/nested.npy too */
    for (char *l = manifest; *l; l = strchr(l, '\n') + 1) {
      stk_batch *out;
      TU_OK(stk_pipeline_run(p, &out));
      char file[64], dtype[16];
      int ndim, used;
      long long shape[8] = {0};
      assert_int_equal(sscanf(l, "%63s %15s %d%n", file, dtype, &ndim, &used), 3);
      for (int d = 0; d < ndim; d++) {
        int more;
        assert_int_equal(sscanf(l + used, "%lld%n", &shape[d], &more), 1);
        used += more;
      }
      stk_tensor_desc d = sample(out, 0, 0);
      stk_dtype want;
      TU_OK(stk_dtype_from_name(dtype, &want));
      if (d.dtype != want) fail_msg("%s: dtype %s, want %s", file, stk_dtype_name(d.dtype), dtype);
      if (d.ndim != ndim) fail_msg("%s: %d dimensions, want %d", file, d.ndim, ndim);
      size_t bytes = stk_dtype_size(want);
      for (int j = 0; j < ndim; j++) {
        assert_int_equal(d.shape[j], shape[j]);
        bytes *= (size_t)shape[j];
      }
      char raw[1024];
      snprintf(raw, sizeof raw, "%s/npy/%s.raw", fx, file);
      size_t rsize;
      uint8_t *ref = tu_read(raw, &rsize);
      assert_int_equal(rsize, bytes);
      if (memcmp(d.data, ref, bytes) != 0) fail_msg("%s: values differ from numpy's", file);
      free(ref);
      stk_batch_release(out);
    }
    stk_pipeline_destroy(p);
    stk_op_destroy(op);
  }
  free(manifest);
}

static bool roi_plain; /* read_roi with dont_use_mmap */

/* Reads roi_x.npy with the given region arguments; *d is the only sample. */
static stk_status read_roi(const char *file, const int64_t *start, const int64_t *end,
                           const int64_t *axes, int n, const char *policy, stk_batch **out) {
  char path[1024];
  stk_op *op = npy_op();
  const char *files[] = {fxp(path, sizeof path, file)};
  TU_OK(stk_op_set_strings(op, "files", files, 1));
  if (start) TU_OK(stk_op_set_ints(op, "roi_start", start, (size_t)n));
  if (end) TU_OK(stk_op_set_ints(op, "roi_end", end, (size_t)n));
  if (axes) TU_OK(stk_op_set_ints(op, "roi_axes", axes, (size_t)n));
  if (policy) TU_OK(stk_op_set_string(op, "out_of_bounds_policy", policy));
  TU_OK(stk_op_set_float(op, "fill_value", -5));
  TU_OK(stk_op_set_bool(op, "dont_use_mmap", roi_plain));
  stk_pipeline *p = build_ok(op, 1, 1);
  stk_op_destroy(op);
  stk_status st = stk_pipeline_run(p, out);
  stk_pipeline_destroy(p); /* the batch outlives the pipeline */
  return st;
}

/* The element (i, j, k) of the 4x5x6 arange, or the fill value outside it. */
static int32_t roi_value(int64_t i, int64_t j, int64_t k) {
  if (i < 0 || i >= 4 || j < 0 || j >= 5 || k < 0 || k >= 6) return -5;
  return (int32_t)(i * 30 + j * 6 + k);
}

static void assert_box(stk_batch *out, const int64_t *lo, const int64_t *hi) {
  stk_tensor_desc d = sample(out, 0, 0);
  assert_int_equal(d.dtype, STK_DTYPE_INT32);
  assert_int_equal(d.ndim, 3);
  for (int a = 0; a < 3; a++) assert_int_equal(d.shape[a], hi[a] - lo[a]);
  const int32_t *v = d.data;
  for (int64_t i = lo[0]; i < hi[0]; i++)
    for (int64_t j = lo[1]; j < hi[1]; j++)
      for (int64_t k = lo[2]; k < hi[2]; k++) assert_int_equal(*v++, roi_value(i, j, k));
}

static void test_numpy_roi(void **state) {
  const char *files[] = {"npybad/roi_c.npy", "npybad/roi_f.npy", "npybad/roi_be.npy"};
  stk_batch *out;
  for (int f = 0; f < 6; f++) {
    roi_plain = f >= 3; /* each file mapped, then read */
    const int64_t lo[] = {1, 0, 2}, hi[] = {3, 5, 5};
    TU_OK(read_roi(files[f % 3], lo, hi, NULL, 3, NULL, &out));
    assert_box(out, lo, hi);
    stk_batch_release(out);
    TU_OK(read_roi(files[f % 3], NULL, NULL, NULL, 0, NULL, &out)); /* the whole array */
    assert_box(out, (const int64_t[]){0, 0, 0}, (const int64_t[]){4, 5, 6});
    stk_batch_release(out);
    /* roi_axes: only axis 2 is cut. */
    const int64_t ax[] = {2}, s2[] = {4}, e2[] = {6};
    TU_OK(read_roi(files[f % 3], s2, e2, ax, 1, NULL, &out));
    assert_box(out, (const int64_t[]){0, 0, 4}, (const int64_t[]){4, 5, 6});
    stk_batch_release(out);
    /* Outside the array: padded with fill_value, or trimmed, or an error. */
    const int64_t plo[] = {-1, 3, 4}, phi[] = {2, 7, 8};
    TU_OK(read_roi(files[f % 3], plo, phi, NULL, 3, "pad", &out));
    assert_box(out, plo, phi);
    stk_batch_release(out);
    TU_OK(read_roi(files[f % 3], plo, phi, NULL, 3, "trim_to_shape", &out));
    assert_box(out, (const int64_t[]){0, 3, 4}, (const int64_t[]){2, 5, 6});
    stk_batch_release(out);
    assert_int_equal(read_roi(files[f % 3], plo, phi, NULL, 3, NULL, &out),
                     STK_ERR_INVALID_ARGUMENT);
    assert_error_mentions("out_of_bounds_policy");
    assert_error_mentions(files[f % 3]);
  }
  roi_plain = false;
}

static void test_numpy_bad_input(void **state) {
  struct {
    const char *file;
    stk_status st;
    const char *needle;
  } cases[] = {{"npybad/object.npy", STK_ERR_UNSUPPORTED, "pickled"},
               {"npybad/complex.npy", STK_ERR_UNSUPPORTED, "not supported"},
               {"npybad/strings.npy", STK_ERR_UNSUPPORTED, "not supported"},
               {"npybad/struct.npy", STK_ERR_UNSUPPORTED, "structured"},
               {"npybad/magic.npy", STK_ERR_DECODE, "wrong magic"},
               {"npybad/trunc.npy", STK_ERR_DECODE, "truncated"},
               {"npybad/version.npy", STK_ERR_UNSUPPORTED, "version 4"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    stk_batch *out;
    stk_status st = read_roi(cases[i].file, NULL, NULL, NULL, 0, NULL, &out);
    if (st != cases[i].st)
      fail_msg("%s: %s (%s), want %s", cases[i].file, stk_status_name(st), stk_last_error(),
               stk_status_name(cases[i].st));
    assert_error_mentions(cases[i].needle);
    assert_error_mentions(cases[i].file);
  }
  /* Header parser on hand-written headers. */
  stk__npy_header h;
  const char good[] =
      "\x93NUMPY\x01\x00\x3c\x00{'shape': (2L, 3,), 'fortran_order': True, "
      "'descr': '>u2', }         \n";
  uint8_t file[128] = {0};
  memcpy(file, good, sizeof good - 1);
  TU_OK(stk__npy_parse(file, sizeof file, 10 + 0x3c + 12, "h.npy", &h));
  assert_int_equal(h.ndim, 2);
  assert_int_equal(h.shape[0], 2);
  assert_int_equal(h.shape[1], 3);
  assert_true(h.fortran && h.swap);
  assert_int_equal(h.dtype, STK_DTYPE_UINT16);
  assert_int_equal(stk__npy_parse(file, sizeof file, 10 + 0x3c + 11, "h.npy", &h), STK_ERR_DECODE);
  assert_error_mentions("h.npy");
}

/* ---------------------------------------------------------------------------------- */
/* shuffling and sharding through the readers                                         */
/* ---------------------------------------------------------------------------------- */

/* A shard set of `n` samples over 3 tar files; sample i's "cls" holds i. */
static void make_numbered_shards(char *pattern, size_t cap, int n) {
  char dir[512];
  tu_tmpdir(dir, sizeof dir, "numbered");
  for (int f = 0; f < 3; f++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/n-%d.tar", dir, f);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    for (int i = f * n / 3; i < (f + 1) * n / 3; i++) {
      char name[32], text[16];
      int len = snprintf(text, sizeof text, "%d", i);
      snprintf(name, sizeof name, "k%05d.cls", i);
      TU_OK(stk__tar_write_member(fp, path, name, text, (size_t)len, 0));
    }
    TU_OK(stk__tar_write_end(fp, path));
    fclose(fp);
  }
  snprintf(pattern, cap, "%s/n-{0..2}.tar", dir);
}

/* Runs `count` samples through readers.webdataset and returns their numbers. */
static void run_numbers(stk_op *op, int batch, int count, int *got) {
  stk_pipeline *p = build_ok(op, 1, batch);
  for (int b = 0; b < count / batch; b++) {
    stk_batch *out;
    TU_OK(stk_pipeline_run(p, &out));
    for (int k = 0; k < batch; k++) {
      stk_tensor_desc d = sample(out, 0, (size_t)k);
      char text[16] = {0};
      memcpy(text, d.data, (size_t)d.shape[0]);
      got[b * batch + k] = atoi(text);
    }
    stk_batch_release(out);
  }
  stk_pipeline_destroy(p);
}

static bool is_perm(const int *v, int n) {
  char seen[256] = {0};
  for (int i = 0; i < n; i++) {
    if (v[i] < 0 || v[i] >= n || seen[v[i]]) return false;
    seen[v[i]] = 1;
  }
  return true;
}

static void test_reader_shuffle_and_shards(void **state) {
  enum { N = 30, E = 4 };
  char pattern[1024];
  make_numbered_shards(pattern, sizeof pattern, N);
  const char *paths[] = {pattern}, *ext[] = {"cls"};
  stk_op *op = wds_op(paths, 1, ext, 1);
  int seq[N * E], a[N * E], b[N * E], c[N * E];
  run_numbers(op, 5, N * E, seq);
  for (int i = 0; i < N * E; i++) assert_int_equal(seq[i], i % N); /* in order over shards */
  /* shuffle_after_epoch: every epoch a permutation of all files' samples, different
   * each epoch, the same for the same seed, another for another seed. */
  TU_OK(stk_op_set_bool(op, "shuffle_after_epoch", 1));
  TU_OK(stk_op_set_int(op, "seed", 11));
  run_numbers(op, 5, N * E, a);
  run_numbers(op, 6, N * E, b); /* batch size does not change the order */
  TU_OK(stk_op_set_int(op, "seed", 12));
  run_numbers(op, 5, N * E, c);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
  for (int e = 0; e < E; e++) {
    assert_true(is_perm(a + e * N, N));
    if (e) assert_memory_not_equal(a + e * N, a, N * sizeof(int));
  }
  /* Cross-file mixing: the first 10 samples are not all from the first tar file. */
  int first_file = 0;
  for (int i = 0; i < 10; i++) first_file += a[i] < 10;
  assert_true(first_file < 10);
  /* Shards of the epoch permutation: disjoint and covering, in each epoch. */
  int shard_out[3][N], sizes[3] = {10, 10, 10};
  for (int k = 0; k < 3; k++) {
    TU_OK(stk_op_set_int(op, "seed", 11));
    TU_OK(stk_op_set_int(op, "num_shards", 3));
    TU_OK(stk_op_set_int(op, "shard_id", k));
    TU_OK(stk_op_set_bool(op, "stick_to_shard", 1));
    run_numbers(op, 5, sizes[k], shard_out[k]);
  }
  int all[N];
  memcpy(all, shard_out[0], sizeof shard_out[0] / 3);
  memcpy(all + 10, shard_out[1], 10 * sizeof(int));
  memcpy(all + 20, shard_out[2], 10 * sizeof(int));
  assert_true(is_perm(all, N));
  assert_memory_equal(all, a, N * sizeof(int)); /* shard k holds part k of epoch 0 */
  /* random_shuffle with a buffer: each sample once per epoch in the long run. */
  TU_OK(stk_op_set_bool(op, "shuffle_after_epoch", 0));
  TU_OK(stk_op_set_int(op, "num_shards", 1));
  TU_OK(stk_op_set_int(op, "shard_id", 0));
  TU_OK(stk_op_set_bool(op, "random_shuffle", 1));
  TU_OK(stk_op_set_int(op, "initial_fill", 8));
  run_numbers(op, 5, N * E, a);
  int counts[N] = {0};
  for (int i = 0; i < N * E; i++) counts[a[i]]++;
  for (int i = 0; i < N; i++) assert_true(abs(counts[i] - E) <= 8);
  assert_memory_not_equal(a, seq, sizeof a);
  stk_op_destroy(op);
}

/* pad_last_batch and reader metadata through readers.tfrecord and readers.numpy. */
static void test_reader_padding_meta(void **state) {
  stk_op *op = tf_op("data.tfrecord", true); /* 6 records */
  TU_OK(stk_op_set_int(op, "num_shards", 4));
  TU_OK(stk_op_set_int(op, "shard_id", 3));
  TU_OK(stk_op_set_bool(op, "pad_last_batch", 1));
  TU_OK(stk_op_set_bool(op, "stick_to_shard", 1));
  stk_pipeline *p = build_ok(op, 8, 4);
  stk_reader_meta m;
  TU_OK(stk_pipeline_reader_meta(p, "R", &m));
  assert_int_equal(m.epoch_size, 6);
  assert_int_equal(m.shard_size, 2);        /* records 4 and 5 */
  assert_int_equal(m.epoch_size_padded, 8); /* 4 shards * ceil(6/4), as DALI */
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  assert_record(out, 0, 4);
  assert_record(out, 1, 5);
  assert_record(out, 2, 5); /* padding repeats the shard's last sample */
  assert_record(out, 3, 5);
  stk_batch_release(out);
  stk_pipeline_destroy(p);
  stk_op_destroy(op);
}

/* ---------------------------------------------------------------------------------- */
/* convert round trip                                                                 */
/* ---------------------------------------------------------------------------------- */

/* An ImageFolder of the bundled photos: two classes. */
static void make_image_folder(char *root, size_t cap) {
  tu_tmpdir(root, cap, "folder");
  const char *photos[] = {"data/photos/rocket.jpg", "data/photos/astronaut.png",
                          "data/photos/coffee.png", "data/photos/chelsea.png"};
  for (int i = 0; i < 4; i++) {
    char src[1024], dst[1024], dir[1024];
    tu_path(src, sizeof src, photos[i]);
    snprintf(dir, sizeof dir, "%s/%s", root, i < 2 ? "a" : "b");
    mkdir(dir, 0755);
    const char *base = strrchr(photos[i], '/') + 1;
    snprintf(dst, sizeof dst, "%s/%s", dir, base);
    size_t n;
    uint8_t *data = tu_read(src, &n);
    tu_write(dst, data, n);
    free(data);
  }
}

/* Lists a converted file with the script's independent readers (which also check the
 * CRCs and the DALI index); returns the listing's lines. */
static char *independent_listing(const char *mode, const char *file, const char *idx) {
  char cmd[4096], out[1200];
  snprintf(out, sizeof out, "%s.listing", file);
  snprintf(cmd, sizeof cmd, "'%s' '%s' %s '%s' '%s' '%s'", python, script, mode, file, idx, out);
  if (system(cmd) != 0) fail_msg("independent check failed: %s", cmd);
  size_t n;
  char *text = (char *)tu_read(out, &n);
  text[n] = '\0';
  return text;
}

/* Shard 0 of an unshuffled conversion holds samples 0..2 of the file reader's order. */
static void check_shard0_independently(const char *out_dir, int format, const size_t *sizes,
                                       const int32_t *labels) {
  char file[1200], idx[1200];
  snprintf(file, sizeof file, "%s/shard-000000.%s", out_dir,
           format == STK__CONVERT_WDS ? "tar" : "tfrecord");
  snprintf(idx, sizeof idx, "%s/shard-000000.idx", out_dir);
  char *text =
      independent_listing(format == STK__CONVERT_WDS ? "--list-tar" : "--list-tfrecord", file, idx);
  char *line = text;
  for (int i = 0; i < 3; i++) {
    long long size, label;
    char name[256];
    if (format == STK__CONVERT_WDS) {
      assert_int_equal(sscanf(line, "%255s %lld %lld", name, &size, &label), 3);
      char key[16];
      snprintf(key, sizeof key, "%09d.", i);
      assert_true(strncmp(name, key, 10) == 0);
      line = strchr(line, '\n') + 1; /* then the .cls member: one digit, the label */
      long long cls_size, cls_label;
      char cls[256], want_cls[32];
      assert_int_equal(sscanf(line, "%255s %lld %lld", cls, &cls_size, &cls_label), 3);
      snprintf(want_cls, sizeof want_cls, "%09d.cls", i);
      assert_string_equal(cls, want_cls);
      assert_int_equal(cls_size, 1);
      assert_int_equal(cls_label, labels[i]);
    } else {
      assert_int_equal(sscanf(line, "%lld %lld %255s", &size, &label, name), 3);
      assert_non_null(strchr(name, '/')); /* class/file relative to the root */
    }
    assert_int_equal(size, (long long)sizes[i]);
    assert_int_equal(label, labels[i]);
    line = strchr(line, '\n') + 1;
  }
  free(text);
}

/* Reads `count` samples (data, label) of readers.file over `root`, in order. */
static void file_reader_samples(const char *root, int count, uint8_t **data, size_t *sizes,
                                int32_t *labels) {
  stk_op *op = reader("readers.file", 2);
  TU_OK(stk_op_set_string(op, "file_root", root));
  stk_pipeline *p = build_ok(op, 2, count);
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  for (int i = 0; i < count; i++) {
    stk_tensor_desc d = sample(out, 0, (size_t)i);
    sizes[i] = (size_t)d.shape[0];
    data[i] = malloc(sizes[i]);
    memcpy(data[i], d.data, sizes[i]);
    labels[i] = *(int32_t *)sample(out, 1, (size_t)i).data;
  }
  stk_batch_release(out);
  stk_pipeline_destroy(p);
  stk_op_destroy(op);
}

static void test_convert_round_trip(void **state) {
  char root[512], out_dir[1024];
  make_image_folder(root, sizeof root);
  uint8_t *data[4];
  size_t sizes[4];
  int32_t labels[4];
  file_reader_samples(root, 4, data, sizes, labels);
  for (int format = 0; format < 2; format++) {
    for (int shuffle = 0; shuffle <= 1; shuffle++) {
      snprintf(out_dir, sizeof out_dir, "%s-out-%d-%d", root, format, shuffle);
      stk__convert_options o = {.src = root,
                                .out_dir = out_dir,
                                .format = format,
                                .shard_size = 3,
                                .shuffle = shuffle,
                                .seed = 9};
      stk__convert_result res;
      TU_OK(stk__convert_dataset(&o, &res));
      assert_int_equal(res.samples, 4);
      assert_int_equal(res.files, 2);
      if (!shuffle) check_shard0_independently(out_dir, format, sizes, labels);
      char pattern[1100];
      snprintf(pattern, sizeof pattern, "%s/shard-{000000..000001}.%s", out_dir,
               format == STK__CONVERT_WDS ? "tar" : "tfrecord");
      stk_op *op;
      if (format == STK__CONVERT_WDS) {
        const char *paths[] = {pattern}, *ext[] = {"jpg;png", "cls"};
        op = wds_op(paths, 1, ext, 2);
      } else {
        op = reader("readers.tfrecord", 2);
        set_strings1(op, "path", pattern);
        char idx[1100];
        snprintf(idx, sizeof idx, "%s/shard-{000000..000001}.idx", out_dir);
        set_strings1(op, "index_path", idx);
        const char *names[] = {"image/encoded", "image/class/label"},
                   *types[] = {"string", "int64"};
        TU_OK(stk_op_set_strings(op, "feature_names", names, 2));
        TU_OK(stk_op_set_strings(op, "feature_types", types, 2));
      }
      stk_pipeline *p = build_ok(op, 2, 4);
      stk_batch *out;
      TU_OK(stk_pipeline_run(p, &out));
      int matched = 0, in_place = 0;
      for (int i = 0; i < 4; i++) {
        stk_tensor_desc d = sample(out, 0, (size_t)i), l = sample(out, 1, (size_t)i);
        int32_t label;
        if (format == STK__CONVERT_WDS) {
          char text[16] = {0};
          memcpy(text, l.data, (size_t)l.shape[0]);
          label = atoi(text);
        } else {
          label = (int32_t) * (int64_t *)l.data;
        }
        for (int j = 0; j < 4; j++)
          if ((size_t)d.shape[0] == sizes[j] && memcmp(d.data, data[j], sizes[j]) == 0) {
            assert_int_equal(label, labels[j]);
            matched++;
            in_place += i == j;
          }
      }
      assert_int_equal(matched, 4);
      if (!shuffle) assert_int_equal(in_place, 4);
      stk_batch_release(out);
      stk_pipeline_destroy(p);
      stk_op_destroy(op);
      if (format == STK__CONVERT_WDS && !shuffle) { /* the shards' own index files */
        char idx[1100];
        snprintf(idx, sizeof idx, "%s/shard-{000000..000001}.idx", out_dir);
        const char *paths[] = {pattern}, *ext[] = {"jpg;png"}, *index[] = {idx};
        op = wds_op(paths, 1, ext, 1);
        TU_OK(stk_op_set_strings(op, "index_paths", index, 1));
        p = build_ok(op, 1, 4);
        TU_OK(stk_pipeline_run(p, &out));
        for (int i = 0; i < 4; i++) {
          stk_tensor_desc d = sample(out, 0, (size_t)i);
          assert_int_equal(d.shape[0], (int64_t)sizes[i]);
          assert_memory_equal(d.data, data[i], sizes[i]);
        }
        stk_batch_release(out);
        stk_pipeline_destroy(p);
        stk_op_destroy(op);
      }
    }
  }
  for (int i = 0; i < 4; i++) free(data[i]);
  /* Same options, same bytes. */
  char again[1100], first[1200], second[1200];
  snprintf(again, sizeof again, "%s-again", root);
  stk__convert_options o = {.src = root,
                            .out_dir = again,
                            .format = STK__CONVERT_WDS,
                            .shard_size = 3,
                            .shuffle = true,
                            .seed = 9};
  stk__convert_result res;
  TU_OK(stk__convert_dataset(&o, &res));
  snprintf(first, sizeof first, "%s-out-0-1/shard-000000.tar", root);
  snprintf(second, sizeof second, "%s/shard-000000.tar", again);
  size_t n1, n2;
  uint8_t *b1 = tu_read(first, &n1), *b2 = tu_read(second, &n2);
  assert_int_equal(n1, n2);
  assert_memory_equal(b1, b2, n1);
  free(b1), free(b2);
}

/* ---------------------------------------------------------------------------------- */
/* hostile input: corrupted copies of valid files never crash the parsers              */
/* ---------------------------------------------------------------------------------- */

static bool acceptable(stk_status st) {
  return st == STK_OK || st == STK_ERR_DECODE || st == STK_ERR_UNSUPPORTED || st == STK_ERR_LIMIT ||
         st == STK_ERR_PARSE;
}

static void test_hostile_inputs(void **state) {
  char path[1024], out[1200];
  const char *files[] = {"ustar.tar", "gnu.tar", "pax.tar", "data.tfrecord", "npy/a010.npy"};
  stk__philox g;
  stk__philox_init(&g, 99, 0);
  for (int f = 0; f < 5; f++) {
    size_t n;
    uint8_t *orig = tu_read(fxp(path, sizeof path, files[f]), &n);
    uint8_t *buf = malloc(n);
    snprintf(out, sizeof out, "%s/mutant", fx);
    for (int iter = 0; iter < 150; iter++) {
      memcpy(buf, orig, n);
      /* Mutations in the first 4 KiB (headers), sometimes a truncation. */
      size_t len = iter % 5 == 4 ? (size_t)stk__philox_below(&g, n) : n;
      for (int k = 0; k < 1 + iter % 4; k++) {
        size_t at = (size_t)stk__philox_below(&g, len < 4096 ? (len ? len : 1) : 4096);
        if (at < len) buf[at] = (uint8_t)stk__philox_u32(&g);
      }
      tu_write(out, buf, len);
      stk__fileset fs;
      TU_OK(stk__fileset_open(&fs, (const char *const[]){out}, 1, "t"));
      stk_status st;
      if (f < 3) {
        stk__wds_index idx;
        st = stk__wds_index_build(&idx, fs.fds[0], out, fs.sizes[0]);
        if (st == STK_OK) stk__wds_index_free(&idx);
      } else if (f == 3) {
        stk__tfrecord_index idx;
        st = stk__tfrecord_index_build(&idx, fs.fds[0], out, fs.sizes[0]);
        for (int64_t r = 0; st == STK_OK && r < idx.count; r++) {
          const uint8_t *payload;
          size_t plen;
          stk__tf_feature feats[8];
          stk_status rs = stk__tfrecord_check(buf + idx.offsets[r], (size_t)idx.sizes[r], out,
                                              idx.offsets[r], &payload, &plen);
          if (rs == STK_OK) rs = stk__tf_example_find(payload, plen, tf_names, 8, feats);
          assert_true(acceptable(rs));
        }
        if (st == STK_OK) stk__tfrecord_index_free(&idx);
      } else {
        stk__npy_header h;
        st = stk__npy_parse(buf, len, (int64_t)len, out, &h);
      }
      if (!acceptable(st))
        fail_msg("%s mutant %d: %s: %s", files[f], iter, stk_status_name(st), stk_last_error());
      stk__fileset_close(&fs);
    }
    free(buf);
    free(orig);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crc32c_vectors),
      cmocka_unit_test(test_brace_expansion),
      cmocka_unit_test(test_tar_scan_python_writers),
      cmocka_unit_test(test_tar_bad_input),
      cmocka_unit_test(test_wds_split_name),
      cmocka_unit_test(test_webdataset_python_archives),
      cmocka_unit_test(test_webdataset_pairs_missing),
      cmocka_unit_test(test_webdataset_index_files),
      cmocka_unit_test(test_webdataset_dtypes_and_errors),
      cmocka_unit_test(test_tfrecord_reader),
      cmocka_unit_test(test_tfrecord_bad_crc),
      cmocka_unit_test(test_tfrecord_bad_input),
      cmocka_unit_test(test_tf_example_parser),
      cmocka_unit_test(test_numpy_dtypes_orders_versions),
      cmocka_unit_test(test_numpy_roi),
      cmocka_unit_test(test_numpy_bad_input),
      cmocka_unit_test(test_reader_shuffle_and_shards),
      cmocka_unit_test(test_reader_padding_meta),
      cmocka_unit_test(test_convert_round_trip),
      cmocka_unit_test(test_hostile_inputs),
  };
  return cmocka_run_group_tests(tests, setup_fixtures, NULL);
}
