/* The audio operators through the C API (issue 26), so that `make sanitize` runs them
 * under ASan + UBSan: a chain of every signal operator on a known signal with values
 * checked against closed forms, readers.nemo_asr on WAV files written here, and errors.
 * (tests/python/test_audio*.py compare them with NumPy and DALI in depth.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stoker/stoker.h"
#include "testutil.h"

#define N 1024

static stk_pipeline *build(const char *body) {
  char text[4096];
  snprintf(text, sizeof text,
           "batch_size = 1\nnum_threads = 1\nsrc = external_source(name=\"src\")\n%s", body);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  return p;
}

static stk_batch *feed_run(stk_pipeline *p, float *x, int64_t n) {
  stk_tensor_desc d = {
      .data = x, .ndim = 1, .shape = {n}, .strides = {4}, .dtype = STK_DTYPE_FLOAT32};
  TU_OK(stk_pipeline_feed(p, "src", &d, 1));
  stk_batch *out;
  TU_OK(stk_pipeline_run(p, &out));
  return out;
}

static stk_tensor_desc out_of(stk_batch *b, size_t k) {
  stk_tensor_desc d;
  TU_OK(stk_tensor_list_sample(stk_batch_output(b, k), 0, &d));
  return d;
}

/* A cosine at FFT bin 8 of 64: the spectrogram's energy sits in bin 8; the chain's other
 * outputs have their closed-form values. */
static void test_signal_chain(void **state) {
  static float x[N];
  for (int t = 0; t < N; t++) x[t] = (float)cos(2 * M_PI * 8 * t / 64.0);
  stk_pipeline *p = build(
      "s = spectrogram(src, nfft=64, window_length=64, window_step=32)\n"
      "m = mel_filter_bank(s, nfilter=8, sample_rate=8000)\n"
      "d = to_decibels(m)\n"
      "c = mfcc(d, n_mfcc=4)\n"
      "e = preemphasis_filter(src, preemph_coeff=0.5, border=\"zero\")\n"
      "ps = power_spectrum(src, nfft=100)\n"
      "b, l = nonsilent_region(src, window_length=16)\n"
      "r = audio_resample(src, scale=0.5)\n"
      "return s, d, c, e, ps, b, l, r\n");
  stk_batch *b = feed_run(p, x, N);
  stk_tensor_desc s = out_of(b, 0), d = out_of(b, 1), c = out_of(b, 2), e = out_of(b, 3);
  stk_tensor_desc ps = out_of(b, 4), rb = out_of(b, 5), rl = out_of(b, 6), r = out_of(b, 7);
  assert_int_equal(s.shape[0], 33);
  assert_int_equal(s.shape[1], N / 32 + 1);
  const float *sp = s.data;
  int64_t frames = s.shape[1], mid = frames / 2;
  for (int k = 0; k < 33; k++) /* a full-window frame: a Hann-windowed tone */
    if (abs(k - 8) > 1) assert_true(sp[k * frames + mid] < 1e-6 * sp[8 * frames + mid]);
  float dmax = -1e9f;
  for (int64_t i = 0; i < d.shape[0] * d.shape[1]; i++) dmax = fmaxf(dmax, ((float *)d.data)[i]);
  assert_true(fabsf(dmax) < 1e-5f); /* 0 dB at the maximum */
  assert_int_equal(c.shape[0], 4);
  const float *ep = e.data;
  assert_true(fabsf(ep[0] - x[0]) < 1e-6f && fabsf(ep[5] - (x[5] - 0.5f * x[4])) < 1e-6f);
  assert_int_equal(ps.shape[0], 51);
  assert_int_equal(*(int32_t *)rb.data, 0);
  assert_int_equal(*(int32_t *)rl.data, N);
  assert_int_equal(r.shape[0], N / 2);
  const float *rp = r.data; /* cos(2 pi t / 8) at half the rate: cos(2 pi t / 4) */
  for (int t = 64; t < N / 2 - 64; t++)
    assert_true(fabsf(rp[t] - (float)cos(M_PI * t / 2)) < 2e-3f);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

/* A 16-bit PCM WAV file of n frames. */
static void write_wav(const char *path, const int16_t *pcm, int n, int channels, int rate) {
  uint8_t h[44];
  uint32_t data = (uint32_t)(n * channels * 2);
  memcpy(h, "RIFF", 4);
  uint32_t v = 36 + data;
  memcpy(h + 4, &v, 4);
  memcpy(h + 8, "WAVEfmt ", 8);
  v = 16, memcpy(h + 16, &v, 4);
  uint16_t f = 1, ch = (uint16_t)channels, bits = 16, align = (uint16_t)(channels * 2);
  memcpy(h + 20, &f, 2), memcpy(h + 22, &ch, 2);
  v = (uint32_t)rate, memcpy(h + 24, &v, 4);
  v = (uint32_t)(rate * channels * 2), memcpy(h + 28, &v, 4);
  memcpy(h + 32, &align, 2), memcpy(h + 34, &bits, 2);
  memcpy(h + 36, "data", 4), memcpy(h + 40, &data, 4);
  uint8_t *buf = malloc(44 + data);
  memcpy(buf, h, 44), memcpy(buf + 44, pcm, data);
  tu_write(path, buf, 44 + data);
  free(buf);
}

static void test_nemo_reader(void **state) {
  char dir[512], path[600], manifest[600], text[2048];
  tu_tmpdir(dir, sizeof dir, "audio");
  int16_t pcm[2 * 300];
  for (int i = 0; i < 600; i++) pcm[i] = (int16_t)(i * 37 % 20000 - 10000);
  snprintf(path, sizeof path, "%s/a.wav", dir);
  write_wav(path, pcm, 300, 2, 8000);
  snprintf(manifest, sizeof manifest, "%s/m.json", dir);
  char line[800];
  int len = snprintf(line, sizeof line,
                     "{\"audio_filepath\": \"a.wav\", \"duration\": 0.0375, \"text\": \"hi\"}\n");
  tu_write(manifest, line, (size_t)len);
  snprintf(text, sizeof text,
           "batch_size = 1\nnum_threads = 1\n"
           "a, r, t = readers.nemo_asr(manifest_filepaths=[\"%s\"], dtype=\"int16\", "
           "downmix=false)\nreturn a, r, t\n",
           manifest);
  stk_pipeline *p;
  TU_OK(stk_pipeline_from_text(text, &p));
  TU_OK(stk_pipeline_build(p));
  stk_batch *b;
  TU_OK(stk_pipeline_run(p, &b));
  stk_tensor_desc a = out_of(b, 0), r = out_of(b, 1), t = out_of(b, 2);
  assert_int_equal(a.shape[0], 300);
  assert_int_equal(a.shape[1], 2);
  assert_memory_equal(a.data, pcm, sizeof pcm);
  assert_true(*(float *)r.data == 8000.0f);
  assert_int_equal(t.shape[0], 2);
  assert_memory_equal(t.data, "hi", 2);
  stk_batch_release(b);
  stk_pipeline_destroy(p);
}

/* Sample i (of the padded signal) as the spectrogram pads: NumPy's reflection without
 * the edge sample, or zeros. */
static double padded_at(const float *x, int64_t n, int64_t i, int64_t pad, int reflect) {
  i -= pad;
  if (i >= 0 && i < n) return x[i];
  if (!reflect || n == 0) return 0.0;
  if (n == 1) return x[0];
  int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return x[i < n ? i : period - i];
}

/* The spectrogram by its definition (direct DFT of each windowed, zero-padded frame). */
static double want_bin(const float *x, int64_t n, int64_t f, int64_t k, int64_t nfft, int64_t wl,
                       int64_t step, int center, int reflect, int power) {
  double re = 0, im = 0;
  for (int64_t t = 0; t < wl; t++) {
    double w = 0.5 * (1.0 - cos(2 * M_PI * (t + 0.5) / wl));
    double v = w * padded_at(x, n, f * step + t, center ? wl / 2 : 0, reflect);
    re += v * cos(2 * M_PI * (double)((t * k) % nfft) / nfft);
    im -= v * sin(2 * M_PI * (double)((t * k) % nfft) / nfft);
  }
  double m2 = re * re + im * im;
  return power == 2 ? m2 : sqrt(m2);
}

/* Frame geometries around the FFT's blocks of 4 frames and the signal's edges (signals
 * shorter than the window, frame counts 1..13, both layouts, reflect and zero padding,
 * non-centred, magnitude, nfft above window_length and not a power of two) against the
 * definition; under `make sanitize` this also runs the frame loading, the lanes and the
 * "ft" transpose with ASan. */
static void test_spectrogram_geometries(void **state) {
  static const int cfg[][7] = {/* nfft, wl, step, center, reflect, power, tf */
                               {64, 64, 16, 1, 1, 2, 0}, {64, 40, 7, 1, 1, 2, 1},
                               {32, 32, 8, 0, 1, 1, 0},  {128, 100, 33, 1, 0, 2, 0},
                               {48, 41, 5, 1, 1, 2, 1},  {16, 16, 3, 1, 1, 1, 0}};
  static const int64_t lengths[] = {1, 5, 17, 40, 131, 300};
  float x[300];
  for (int t = 0; t < 300; t++) x[t] = (float)(sin(0.37 * t) + 0.25 * cos(1.9 * t * t / 300.0));
  for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
    const int *g = cfg[c];
    char body[512];
    snprintf(body, sizeof body,
             "s = spectrogram(src, nfft=%d, window_length=%d, window_step=%d, "
             "center_windows=%s, reflect_padding=%s, power=%d, layout=\"%s\")\nreturn s\n",
             g[0], g[1], g[2], g[3] ? "true" : "false", g[4] ? "true" : "false", g[5],
             g[6] ? "tf" : "ft");
    stk_pipeline *p = build(body);
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
      int64_t n = lengths[li], bins = g[0] / 2 + 1;
      int64_t padded = g[3] ? n + 2 * (g[1] / 2) : n;
      int64_t frames = padded < g[1] ? 0 : (padded - g[1]) / g[2] + 1;
      stk_batch *b = feed_run(p, x, n);
      stk_tensor_desc s = out_of(b, 0);
      assert_int_equal(s.shape[0], g[6] ? frames : bins);
      assert_int_equal(s.shape[1], g[6] ? bins : frames);
      for (int64_t f = 0; f < frames; f++)
        for (int64_t k = 0; k < bins; k++) {
          double want = want_bin(x, n, f, k, g[0], g[1], g[2], g[3], g[4], g[5]);
          double got = ((const float *)s.data)[g[6] ? f * bins + k : k * frames + f];
          if (fabs(got - want) > 1e-6 * fabs(want) + 1e-9)
            fail_msg("config %zu, n = %lld, frame %lld, bin %lld: %.9g, want %.9g", c, (long long)n,
                     (long long)f, (long long)k, got, want);
        }
      stk_batch_release(b);
    }
    stk_pipeline_destroy(p);
  }
}

static void test_errors(void **state) {
  stk_pipeline *p = build("s = spectrogram(src, window_length=8, window_step=4)\nreturn s\n");
  float x[12] = {0};
  stk_tensor_desc d = {
      .data = x, .ndim = 2, .shape = {3, 4}, .strides = {16, 4}, .dtype = STK_DTYPE_FLOAT32};
  TU_OK(stk_pipeline_feed(p, "src", &d, 1));
  stk_batch *b;
  assert_int_equal(stk_pipeline_run(p, &b), STK_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(stk_last_error(), "spectrogram"));
  assert_non_null(strstr(stk_last_error(), "1-D"));
  stk_pipeline_destroy(p);
  stk_pipeline *q;
  TU_OK(
      stk_pipeline_from_text("batch_size = 1\nsrc = external_source(name=\"src\")\n"
                             "a, r = decoders.audio(src)\nreturn a\n",
                             &q));
  TU_OK(stk_pipeline_build(q));
  uint8_t junk[64];
  memset(junk, 'x', sizeof junk);
  stk_tensor_desc j = {
      .data = junk, .ndim = 1, .shape = {64}, .strides = {1}, .dtype = STK_DTYPE_UINT8};
  TU_OK(stk_pipeline_feed(q, "src", &j, 1));
  assert_int_equal(stk_pipeline_run(q, &b), STK_ERR_DECODE);
  assert_non_null(strstr(stk_last_error(), "decoders.audio"));
  stk_pipeline_destroy(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_signal_chain),
      cmocka_unit_test(test_nemo_reader),
      cmocka_unit_test(test_spectrogram_geometries),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
