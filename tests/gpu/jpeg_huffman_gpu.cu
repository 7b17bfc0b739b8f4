/* The Huffman stage of stoker's own JPEG decoder on a GPU: src/cuda/jpeg_huffman.cu
 * compiled into this program (with stand-ins for the runtime's allocation helpers, so it
 * needs no context), fed files parsed by src/codecs/jpeg_frame.c, must give exactly the
 * coefficients libjpeg-turbo's jpeg_read_coefficients reads (tests/c/jpeg_coefs.h), over
 * the whole padded block grid. The CPU test (tests/c/test_jpeg_huffman.c) runs the same
 * phases on the host. Batches mix the photos and files libjpeg encodes in every sampling
 * the decoder takes, with and without restart intervals, standard and optimised tables,
 * odd sizes; each batch runs with subsequences of 32, 1024 and 4096 bits. Then corrupt
 * scans (must not crash; most must be reported in the status array; run it under
 * compute-sanitizer to check the accesses) and a timing of batches of 128 500x375 4:2:0
 * images (the stage alone, and the host's parse per image).
 *
 * usage: build/jpeg_huffman_gpu [iterations]   (exit 0: all equal; 1: a difference; 2: setup) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jpeg_coefs.h"
#include "../../src/cuda/jpeg_huffman.cu"

extern "C" int stk__jpeg_frame_parse(const uint8_t *data, size_t size, stk_jpeg_frame *frame,
                                     stk_jpeg_huffman *tables, uint8_t *scan, size_t scan_cap,
                                     size_t *scan_bytes, int32_t *restarts, int restarts_cap,
                                     int *n_restarts, char *why, size_t whylen);

#include "runtime_standins.cuh"
#include "jpeg_test_images.cuh"

/* ---- test data ---- */

/* libjpeg encoding with the options the decoder must handle: luma sampling h x v (chroma
 * 1x1), restart interval in MCUs or MCU rows, optimised tables. */
typedef struct {
  int h, v, restart_mcus, restart_rows, optimize, quality;
} enc_opts;

static void encode(test_image im, const enc_opts *o, uint8_t **out, size_t *n) {
  struct jpeg_compress_struct ci;
  struct jpeg_error_mgr jerr;
  ci.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&ci);
  unsigned char *buf = NULL;
  unsigned long size = 0;
  jpeg_mem_dest(&ci, &buf, &size);
  ci.image_width = (JDIMENSION)im.w;
  ci.image_height = (JDIMENSION)im.h;
  ci.input_components = im.c;
  ci.in_color_space = im.c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&ci);
  jpeg_set_quality(&ci, o->quality, TRUE);
  if (im.c == 3) {
    ci.comp_info[0].h_samp_factor = o->h, ci.comp_info[0].v_samp_factor = o->v;
    for (int k = 1; k < 3; k++) ci.comp_info[k].h_samp_factor = ci.comp_info[k].v_samp_factor = 1;
  }
  ci.restart_interval = (unsigned)o->restart_mcus;
  ci.restart_in_rows = o->restart_rows;
  ci.optimize_coding = o->optimize ? TRUE : FALSE;
  jpeg_start_compress(&ci, TRUE);
  while (ci.next_scanline < ci.image_height) {
    JSAMPROW row = im.p + (size_t)ci.next_scanline * im.w * im.c;
    jpeg_write_scanlines(&ci, &row, 1);
  }
  jpeg_finish_compress(&ci);
  jpeg_destroy_compress(&ci);
  *out = (uint8_t *)malloc(size);
  memcpy(*out, buf, size);
  *n = size;
  free(buf);
}

/* One file: its bytes, what the parser gives, libjpeg's coefficients, a device output. */
typedef struct {
  uint8_t *jpeg;
  size_t n;
  stk_jpeg_frame f;
  stk_jpeg_huffman t;
  uint8_t *scan;
  size_t scan_bytes;
  int32_t *restarts;
  int n_restarts;
  jc_coded ref;
  int16_t *d_coef;
  char name[128];
} item;

static int parse_item(item *it) {
  char why[256];
  it->scan = (uint8_t *)malloc(it->n);
  it->restarts = (int32_t *)malloc(sizeof(int32_t) * (it->n / 2 + 1));
  return stk__jpeg_frame_parse(it->jpeg, it->n, &it->f, &it->t, it->scan, it->n, &it->scan_bytes,
                               it->restarts, (int)(it->n / 2 + 1), &it->n_restarts, why,
                               sizeof why);
}

/* The parser's grid must be the one jc_read laid libjpeg's coefficients out in. */
static void check_layout(const item *it) {
  const stk_jpeg_frame *a = &it->f, *b = &it->ref.f;
  bool same = a->ncomp == b->ncomp && a->total_blocks == b->total_blocks &&
              a->blocks_per_mcu == b->blocks_per_mcu && a->mcus_x == b->mcus_x;
  for (int c = 0; c < a->ncomp && same; c++)
    same = a->comp[c].bw == b->comp[c].bw && a->comp[c].bh == b->comp[c].bh &&
           a->comp[c].block0 == b->comp[c].block0;
  if (!same) fprintf(stderr, "%s: the parser's block grid is not jc_read's\n", it->name), exit(2);
}

static item make_item(test_image im, const enc_opts *o, const char *what) {
  item it;
  memset(&it, 0, sizeof it);
  encode(im, o, &it.jpeg, &it.n);
  snprintf(it.name, sizeof it.name, "%s %dx%d %s %dx%d q%d opt %d dri %d/%d", what, im.w, im.h,
           im.c == 1 ? "gray" : "ycc", o->h, o->v, o->quality, o->optimize, o->restart_mcus,
           o->restart_rows);
  if (parse_item(&it)) fprintf(stderr, "%s: refused by the parser\n", it.name), exit(2);
  if (jc_read(it.jpeg, it.n, &it.ref)) fprintf(stderr, "%s: jc_read failed\n", it.name), exit(2);
  check_layout(&it);
  CHECK_CUDA(cudaMalloc((void **)&it.d_coef, (size_t)it.f.total_blocks * 64 * sizeof(int16_t)));
  return it;
}

/* Decodes items[0..n) in one call; returns 0 or the entry's status (err printed). */
static int run_batch(item *items, int n, int *d_status, cudaStream_t st) {
  stk_jpeg_frame *frames = (stk_jpeg_frame *)malloc(sizeof *frames * n);
  stk_jpeg_huffman *tables = (stk_jpeg_huffman *)malloc(sizeof *tables * n);
  const uint8_t **scan = (const uint8_t **)malloc(sizeof *scan * n);
  size_t *bytes = (size_t *)malloc(sizeof *bytes * n);
  const int32_t **rs = (const int32_t **)malloc(sizeof *rs * n);
  int *nrs = (int *)malloc(sizeof *nrs * n);
  int16_t **coef = (int16_t **)malloc(sizeof *coef * n);
  for (int i = 0; i < n; i++) {
    frames[i] = items[i].f, tables[i] = items[i].t, scan[i] = items[i].scan;
    bytes[i] = items[i].scan_bytes, rs[i] = items[i].restarts, nrs[i] = items[i].n_restarts;
    coef[i] = items[i].d_coef;
  }
  char err[512] = "";
  int rc = stk_gpu_jpeg_coefficients(NULL, n, frames, tables, scan, bytes, rs, nrs, coef, d_status,
                                     st, err, sizeof err);
  if (rc) fprintf(stderr, "stk_gpu_jpeg_coefficients: %d: %s\n", rc, err);
  free(frames), free(tables), free(scan), free(bytes), free(rs), free(nrs), free(coef);
  return rc;
}

/* ---- tracing a difference: each launch on the GPU against the same launch run on the
 * host (the batch layer's loops, as tests/c/test_jpeg_huffman.c runs them), temporaries
 * filled with the same garbage on both sides; prints where they first part. ---- */

static int trace_cmp(const char *what, const void *gpu, const void *host, size_t bytes, size_t unit,
                     const char *name) {
  const uint8_t *a = (const uint8_t *)gpu, *b = (const uint8_t *)host;
  int shown = 0;
  size_t diffs = 0;
  for (size_t k = 0; k < bytes; k += unit)
    if (memcmp(a + k, b + k, unit)) {
      if (shown++ < 6) {
        printf("TRACE %s: %s[%zu] gpu", name, what, k / unit);
        for (size_t j = 0; j < unit; j += 4) printf(" %08x", *(const uint32_t *)(a + k + j));
        printf(" host");
        for (size_t j = 0; j < unit; j += 4) printf(" %08x", *(const uint32_t *)(b + k + j));
        printf("\n");
      }
      diffs++;
    }
  if (diffs) printf("TRACE %s: %s: %zu of %zu entries differ\n", name, what, diffs, bytes / unit);
  return diffs != 0;
}

static void trace_image(item *it, cudaStream_t st) {
  const uint32_t s = subseq_bits();
  const size_t nb = (size_t)it->f.total_blocks * 64 * sizeof(int16_t);
  const uint8_t *scan = it->scan;
  const int32_t *rs = it->restarts;
  stk_jpeg_batch_layout L;
  if (stk_jpeg_batch_plan(1, &it->f, &it->scan_bytes, &rs, &it->n_restarts, s, &L)) return;
  int16_t *h_coef = (int16_t *)malloc(nb), *g_coef = (int16_t *)malloc(nb);
  memset(h_coef, 0x5A, nb);
  CHECK_CUDA(cudaMemset(it->d_coef, 0x5A, nb));
  char *h_block = (char *)malloc(L.bytes), *d_fill = (char *)malloc(L.bytes);
  stk_jpeg_batch_fill(&L, h_block, 1, &it->f, &it->t, &scan, &it->scan_bytes, &rs, &it->n_restarts,
                      &h_coef, s);
  stk_jpeg_batch_fill(&L, d_fill, 1, &it->f, &it->t, &scan, &it->scan_bytes, &rs, &it->n_restarts,
                      &it->d_coef, s);
  char *d_block;
  CHECK_CUDA(cudaMalloc((void **)&d_block, L.bytes));
  CHECK_CUDA(cudaMemcpy(d_block, d_fill, L.bytes, cudaMemcpyHostToDevice));
  stk_jpeg_batch_tmp ht, dt;
  const size_t tb = stk_jpeg_batch_tmp_carve(L.total_subs, 1, 0, &ht);
  char *h_tmp = (char *)malloc(tb), *g_tmp = (char *)malloc(tb), *d_tmp;
  CHECK_CUDA(cudaMalloc((void **)&d_tmp, tb));
  memset(h_tmp, 0xA5, tb);
  CHECK_CUDA(cudaMemset(d_tmp, 0xA5, tb));
  stk_jpeg_batch_tmp_carve(L.total_subs, 1, (uintptr_t)h_tmp, &ht);
  stk_jpeg_batch_tmp_carve(L.total_subs, 1, (uintptr_t)d_tmp, &dt);
  memset(ht.failed, 0, sizeof(int32_t));
  CHECK_CUDA(cudaMemset(dt.failed, 0, sizeof(int32_t)));
  const int T = STK_JPEG_BATCH_THREADS;
  const size_t offs = (uintptr_t)ht.guess.mark - (uintptr_t)h_tmp;
  const size_t offr = (uintptr_t)ht.guess.rest - (uintptr_t)h_tmp;
  const size_t offs_start = (uintptr_t)ht.start - (uintptr_t)h_tmp;
  const size_t np = (size_t)L.total_subs * STK_JPEG_GUESSES, nm = np * STK_JPEG_GUESS_MARKS;
  printf("TRACE %s: S = %u, %lld subsequences, %d segments\n", it->name, s, (long long)L.total_subs,
         it->n_restarts + 1);
  for (int launch = 0; launch < 3; launch++) {
    const int kind = launch == 0   ? STK_JPEG_BY_PHASE
                     : launch == 1 ? STK_JPEG_BY_SEGMENT
                                   : STK_JPEG_BY_SUBSEQ;
    if (launch == 0) jh_guess_kernel<<<L.blocks[kind], T, 0, st>>>(d_block, L, 1, dt);
    if (launch == 1) jh_resolve_kernel<<<L.blocks[kind], T, 0, st>>>(d_block, L, 1, dt, NULL);
    if (launch == 2) jh_write_kernel<<<L.blocks[kind], T, 0, st>>>(d_block, L, 1, dt);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(st));
    for (int64_t b = 0; b < L.blocks[kind]; b++) {
      stk_jpeg_image_view v = stk_jpeg_batch_view(h_block, &L, 0, &it->f, &it->t);
      for (int th = 0; th < T; th++) {
        int64_t k = stk_jpeg_batch_thread(h_block, &L, 1, kind, 0, b, th);
        if (launch == 0) stk_jpeg_batch_guess(h_block, &L, 0, k, &v, &ht);
        if (launch == 1) stk_jpeg_batch_resolve(h_block, &L, 0, k, &v, &ht);
        if (launch == 2) stk_jpeg_batch_write(h_block, &L, 0, k, &v, &ht);
      }
    }
    CHECK_CUDA(cudaMemcpy(g_tmp, d_tmp, tb, cudaMemcpyDeviceToHost));
    int differ = 0;
    if (launch == 0) {
      differ |= trace_cmp("guess end", g_tmp, h_tmp, np * 8, 8, it->name);
      differ |= trace_cmp("guess mark", g_tmp + offs, h_tmp + offs, nm * 8, 8, it->name);
      differ |= trace_cmp("guess rest", g_tmp + offr, h_tmp + offr, nm * sizeof(stk_jpeg_rest),
                          sizeof(stk_jpeg_rest), it->name);
      /* the resolve launch then reads the same records on both sides */
      if (differ) memcpy(h_tmp, g_tmp, tb);
    } else if (launch == 1) {
      differ |= trace_cmp("start, unit0, dcpred, failed", g_tmp + offs_start, h_tmp + offs_start,
                          tb - offs_start, 8, it->name);
      if (differ) memcpy(h_tmp, g_tmp, tb);
    } else {
      CHECK_CUDA(cudaMemcpy(g_coef, it->d_coef, nb, cudaMemcpyDeviceToHost));
      differ |= trace_cmp("coefficient block", g_coef, h_coef, nb, 128, it->name);
      size_t ref_diff = 0;
      for (size_t k = 0; k < nb / 2; k++) ref_diff += h_coef[k] != it->ref.coef[k];
      printf("TRACE %s: the host run differs from libjpeg in %zu coefficients\n", it->name,
             ref_diff);
    }
    if (!differ) printf("TRACE %s: launch %d equal\n", it->name, launch);
  }
  CHECK_CUDA(cudaFree(d_block));
  CHECK_CUDA(cudaFree(d_tmp));
  free(h_coef), free(g_coef), free(h_block), free(d_fill), free(h_tmp), free(g_tmp);
}

/* Runs the batch and compares every image with libjpeg; returns the number that differ. */
static int check_batch(item *items, int n, cudaStream_t st, const char *label) {
  int *d_status, bad = 0;
  CHECK_CUDA(cudaMalloc((void **)&d_status, sizeof(int) * n));
  CHECK_CUDA(cudaMemset(d_status, 0, sizeof(int) * n));
  for (int i = 0; i < n; i++)
    CHECK_CUDA(cudaMemset(items[i].d_coef, 0x5A, (size_t)items[i].f.total_blocks * 128));
  if (run_batch(items, n, d_status, st)) exit(1);
  CHECK_CUDA(cudaStreamSynchronize(st));
  int *status = (int *)malloc(sizeof(int) * n);
  CHECK_CUDA(cudaMemcpy(status, d_status, sizeof(int) * n, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) {
    size_t nb = (size_t)items[i].f.total_blocks * 64;
    int16_t *got = (int16_t *)malloc(nb * sizeof(int16_t));
    CHECK_CUDA(cudaMemcpy(got, items[i].d_coef, nb * sizeof(int16_t), cudaMemcpyDeviceToHost));
    size_t diff = 0, first = 0;
    for (size_t k = 0; k < nb; k++)
      if (got[k] != items[i].ref.coef[k]) first = diff++ ? first : k;
    if (status[i] || diff) {
      printf(
          "DIFF %s (%s): status %d, %zu of %zu coefficients differ (first: block %zu "
          "index %zu)\n",
          items[i].name, label, status[i], diff, nb, first / 64, first % 64);
      bad++;
      if (bad <= 4) trace_image(&items[i], st);
    }
    free(got);
  }
  free(status);
  CHECK_CUDA(cudaFree(d_status));
  return bad;
}

/* Byte flips in the scans (no new markers): the call must not fail or crash, and report
 * most images; returns 1 when none was reported. */
static int check_corrupt(item *items, int n, cudaStream_t st) {
  item *c = (item *)malloc(sizeof *c * n);
  for (int i = 0; i < n; i++) {
    c[i] = items[i];
    c[i].jpeg = (uint8_t *)malloc(items[i].n);
    memcpy(c[i].jpeg, items[i].jpeg, items[i].n);
    size_t tail = items[i].scan_bytes / 2 + 1;
    for (int k = 0; k < 1 + i % 4; k++) {
      size_t at = c[i].n - 2 - 1 - (size_t)rnd_in(0, (int)(tail - 1));
      uint8_t v = (uint8_t)rnd_in(0, 255);
      c[i].jpeg[at] = v == 0xFF ? 0x7F : v;
    }
    if (parse_item(&c[i])) { /* refused: the good file's frame with an empty scan */
      c[i].f = items[i].f, c[i].t = items[i].t;
      c[i].scan_bytes = 0, c[i].n_restarts = 0;
    }
  }
  int *d_status;
  CHECK_CUDA(cudaMalloc((void **)&d_status, sizeof(int) * n));
  CHECK_CUDA(cudaMemset(d_status, 0, sizeof(int) * n));
  if (run_batch(c, n, d_status, st)) exit(1);
  CHECK_CUDA(cudaStreamSynchronize(st));
  int *status = (int *)malloc(sizeof(int) * n), reported = 0;
  CHECK_CUDA(cudaMemcpy(status, d_status, sizeof(int) * n, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) reported += status[i] == STK_GPU_DECODE_FAILED;
  printf("jpeg_huffman_gpu: corrupt scans: %d of %d images reported\n", reported, n);
  for (int i = 0; i < n; i++) free(c[i].jpeg), free(c[i].scan), free(c[i].restarts);
  free(c), free(status);
  CHECK_CUDA(cudaFree(d_status));
  return reported == 0;
}

static double bench(item *items, int n, int iters, cudaStream_t st) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int w = 0; w < 3; w++)
    if (run_batch(items, n, NULL, st)) exit(1);
  CHECK_CUDA(cudaStreamSynchronize(st));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_CUDA(cudaEventRecord(a, st));
  for (int k = 0; k < iters; k++) run_batch(items, n, NULL, st);
  CHECK_CUDA(cudaEventRecord(b, st));
  CHECK_CUDA(cudaEventSynchronize(b));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  double wall = ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6) / iters;
  printf("jpeg_huffman_gpu: wall %.3f ms per batch (host packing + upload included)\n", wall);
  return ms / iters;
}

static double parse_us(item *items, int n) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int r = 0; r < 10; r++)
    for (int i = 0; i < n; i++) parse_item(&items[i]), free(items[i].scan), free(items[i].restarts);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  parse_item(&items[0]); /* leave valid buffers behind for the bench */
  for (int i = 1; i < n; i++) parse_item(&items[i]);
  return ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) / (10.0 * n);
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 50;
  ti_seed(0x2545f491u);
  (void)jc_decode; /* jpeg_coefs.h's decoder: the pixel stage's reference, unused here */
  cudaStream_t st;
  CHECK_CUDA(cudaStreamCreate(&st));
  test_image photos[3] = {load_rgb("data/photos/rocket.jpg"), load_rgb("data/photos/retina.jpg"),
                          load_rgb("data/photos/hubble_deep_field.jpg")};
  static const char *files[] = {"data/photos/rocket.jpg", "data/photos/retina.jpg",
                                "data/photos/hubble_deep_field.jpg"};
  static const int samp[][3] = {{3, 1, 1}, {3, 2, 1}, {3, 2, 2}, {3, 1, 2}, {1, 1, 1}};
  static const int sizes[][2] = {{1, 1}, {7, 9}, {17, 33}, {4000, 3}, {3, 300}, {161, 97}};
  item *items = (item *)malloc(sizeof *items * 512);
  int n = 0;
  for (int p = 0; p < 3; p++) { /* the photos' own files */
    item it;
    memset(&it, 0, sizeof it);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", STK_SOURCE_DIR, files[p]);
    FILE *fp = fopen(path, "rb");
    if (!fp) fprintf(stderr, "cannot open %s\n", path), exit(2);
    fseek(fp, 0, SEEK_END);
    it.n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    it.jpeg = (uint8_t *)malloc(it.n);
    if (fread(it.jpeg, 1, it.n, fp) != it.n) exit(2);
    fclose(fp);
    snprintf(it.name, sizeof it.name, "%s", files[p]);
    if (parse_item(&it) || jc_read(it.jpeg, it.n, &it.ref)) exit(2);
    check_layout(&it);
    CHECK_CUDA(cudaMalloc((void **)&it.d_coef, (size_t)it.f.total_blocks * 128));
    items[n++] = it;
  }
  for (int s = 0; s < 5; s++)
    for (int variant = 0; variant < 4; variant++) {
      enc_opts o = {samp[s][1],           samp[s][2],  variant == 2 ? 7 : 0,
                    variant == 3 ? 1 : 0, variant & 1, 90};
      test_image w = window(photos[s % 3], 0, 0, 500, 375);
      if (samp[s][0] == 1) {
        test_image g = {(uint8_t *)malloc(500 * 375), 500, 375, 1};
        for (int k = 0; k < 500 * 375; k++) g.p[k] = w.p[3 * k + 1];
        free(w.p);
        w = g;
      }
      items[n++] = make_item(w, &o, "photo window");
      free(w.p);
      for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        test_image im = synthetic(sizes[z][0], sizes[z][1], samp[s][0]);
        items[n++] = make_item(im, &o, "synthetic");
        free(im.p);
      }
    }
  int bad = 0;
  static const char *lengths[] = {"32", "1024", "4096"};
  for (int l = 0; l < 3; l++) {
    setenv("STK_JPEG_SUBSEQ_BITS", lengths[l], 1);
    char label[64];
    snprintf(label, sizeof label, "S = %s bits", lengths[l]);
    bad += check_batch(items, n, st, label);
  }
  unsetenv("STK_JPEG_SUBSEQ_BITS");
  printf("jpeg_huffman_gpu: %d images x 3 subsequence lengths: %s\n", n,
         bad ? "DIFFERENCES" : "all equal to libjpeg's coefficients");
  int corrupt_bad = check_corrupt(items, n, st);

  /* timing: 128 different 500x375 windows of the photos, 4:2:0 q90 */
  item *bi = (item *)malloc(sizeof *bi * 128);
  size_t total = 0;
  for (int i = 0; i < 128; i++) {
    test_image s = photos[1 + i % 2];
    test_image im = window(s, rnd_in(0, s.w - 500), rnd_in(0, s.h - 375), 500, 375);
    enc_opts o = {2, 2, 0, 0, 0, 90};
    bi[i] = make_item(im, &o, "bench");
    total += bi[i].n;
    free(im.p);
  }
  double us = parse_us(bi, 128);
  printf(
      "jpeg_huffman_gpu: 128 x 500x375 4:2:0 q90 (%.0f KB average): host parse %.1f us per "
      "image\n",
      total / 128.0 / 1024, us);
  /* the subsequence length trades parallelism (guesses) against the guesses' lead (a
   * fixed STK_JPEG_GUESS_LEAD bits each), the resolve walk's steps and misses: a sweep for
   * tuning the default (STK_JPEG_SUBSEQ_DEFAULT) */
  static const char *sweep[] = {"512", "1024", "2048", "4096", "8192"};
  for (int l = 0; l < 5; l++) {
    setenv("STK_JPEG_SUBSEQ_BITS", sweep[l], 1);
    double ms = bench(bi, 128, iters, st);
    printf("jpeg_huffman_gpu: S = %s bits: GPU %.3f ms per batch, %.0f images/s\n", sweep[l], ms,
           128 / ms * 1e3);
  }
  unsetenv("STK_JPEG_SUBSEQ_BITS");
  return bad || corrupt_bad ? 1 : 0;
}
