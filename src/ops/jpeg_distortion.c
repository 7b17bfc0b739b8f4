/* jpeg_compression_distortion (DALI's): each RGB image encoded as a baseline JPEG at the
 * given quality (4:2:0 chroma subsampling, libjpeg's standard tables and integer DCT) and
 * decoded again (fancy upsampling), through libjpeg-turbo's TurboJPEG API: the same
 * bytes as OpenCV's imencode / imdecode, which DALI's CPU operator uses. */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first */
#include <stdlib.h>

#include <jpeglib.h>

#include "../codecs/codecs.h"
#include "effects_common.h"

enum { JD_QUALITY, JD_COUNT_ };

static const stk_arg_schema jd_args[] = {
    [JD_QUALITY] = {.name = "quality",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .default_text = "50",
                    .doc = "JPEG quality, 1 (worst) to 100; values outside are clamped"},
};
STK__CHECK_ARGS(jd_args, JD_COUNT_);

static const stk_port_schema jd_in[] = {{"input", "uint8 RGB image (HWC, 3 channels)"}};
static const stk_port_schema jd_out[] = {{"output", "the image after a JPEG round trip"}};

/* libjpeg's fatal errors longjmp back to encode(); the message is kept. */
typedef struct {
  struct jpeg_error_mgr mgr;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
} enc_error;

static void enc_error_exit(j_common_ptr cinfo) {
  enc_error *e = (enc_error *)cinfo->err;
  cinfo->err->format_message(cinfo, e->msg);
  longjmp(e->jump, 1);
}

/* Encodes the h x w RGB image into a malloc'ed buffer (*buf, *size): baseline, 4:2:0,
 * libjpeg's standard tables scaled to `quality`, integer DCT. */
static stk_status encode(const stk__node *node, const stk__sample *s, const stk__image *in,
                         int quality, unsigned char **buf, unsigned long *size) {
  struct jpeg_compress_struct c;
  enc_error e;
  c.err = jpeg_std_error(&e.mgr);
  e.mgr.error_exit = enc_error_exit;
  if (setjmp(e.jump)) {
    jpeg_destroy_compress(&c);
    return STK__SFAIL(STK_ERR_INTERNAL, node, s, "JPEG encoding failed: %s", e.msg);
  }
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, buf, size);
  c.image_width = (JDIMENSION)in->w, c.image_height = (JDIMENSION)in->h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c); /* YCbCr, 2x2 luma sampling (4:2:0), JDCT_ISLOW */
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  const uint8_t *px = in->data;
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)c.next_scanline * (size_t)in->w * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return STK_OK;
}

/* The decoder writes straight into the operator's output. */
static stk_status into_output(void *ctx, int h, int w, int c, uint8_t **out) {
  (void)h, (void)w, (void)c;
  *out = ctx;
  return STK_OK;
}

/* Encodes `in` and decodes into `out` (both h x w x 3 uint8). */
static stk_status jpeg_round_trip(const stk__node *node, const stk__sample *s, const stk__image *in,
                                  uint8_t *out, int quality) {
  unsigned char *buf = NULL;
  unsigned long size = 0;
  stk_status st = encode(node, s, in, quality, &buf, &size);
  if (st == STK_OK) {
    stk__decode_opts o = {.color = STK__COLOR_RGB, .ignore_orientation = true};
    stk__decoded d;
    st = stk__sample_wrap(
        stk__image_decode(buf, size, "jpeg_compression_distortion", &o, into_output, out, &d), node,
        s);
  }
  free(buf);
  return st;
}

static stk_status jd_run(stk__node *node, stk__sample *s) {
  static const stk_dtype u8[1] = {STK_DTYPE_UINT8};
  stk__image in = {0};
  STK_TRY(stk__image_input(node, s, 0, u8, 1, &in));
  if (in.c != 3)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "expects RGB (3 channels), got %lld",
                      (long long)in.c);
  if (in.h < 1 || in.w < 1 || in.h > 65535 || in.w > 65535)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "%lldx%lld: JPEG images are 1 to 65535 pixels a side", (long long)in.h,
                      (long long)in.w);
  int64_t q = stk__arg_int(node, s, JD_QUALITY);
  int quality = q < 1 ? 1 : q > 100 ? 100 : (int)q;
  stk__image out = in;
  STK_TRY(stk__image_output(s, 3, &out));
  return jpeg_round_trip(node, s, &in, out.data, quality);
}

/* ---------------------------------------------------------------------------------- */
/* GPU: the round trip computed by src/shared/jpeg_emul.h                              */
/* ---------------------------------------------------------------------------------- */

/* ITU T.81 Annex K.1: the example luminance and chrominance tables (natural order). */
static const uint8_t k1_luma[64] = {16,  11,  10,  16,  24, 40, 51,  61,  12,  12,  14,  19,  26,
                                    58,  60,  55,  14,  13, 16, 24,  40,  57,  69,  56,  14,  17,
                                    22,  29,  51,  87,  80, 62, 18,  22,  37,  56,  68,  109, 103,
                                    77,  24,  35,  55,  64, 81, 104, 113, 92,  49,  64,  78,  87,
                                    103, 121, 120, 101, 72, 92, 95,  98,  112, 100, 103, 99};
static const uint8_t k1_chroma[64] = {
    17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99,
    99, 99, 47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99};

/* The tables at `quality` (1..100) with the IJG scaling jpeg_set_quality applies: 5000 / q
 * percent below 50, 200 - 2 q from 50, rounded, kept within 1..255 (baseline). */
static void quality_tables(int quality, uint16_t ql[64], uint16_t qc[64]) {
  int scale = quality < 50 ? 5000 / quality : 200 - 2 * quality;
  for (int i = 0; i < 64; i++) {
    long l = ((long)k1_luma[i] * scale + 50) / 100, c = ((long)k1_chroma[i] * scale + 50) / 100;
    ql[i] = (uint16_t)(l < 1 ? 1 : l > 255 ? 255 : l);
    qc[i] = (uint16_t)(c < 1 ? 1 : c > 255 ? 255 : c);
  }
}

/* Sample i's descriptor (its planes assigned by the caller). */
static stk_status jd_gpu_sample(stk__node *node, stk__gpu_batch *b, const stk_tensor_list *in,
                                size_t i, stk_gpu_jpeg_sample *js, int64_t *shape) {
  stk__sample *s = stk__gpu_sample(b, i);
  stk_tensor_desc d;
  STK_TRY(stk_tensor_list_sample(in, i, &d));
  if (d.ndim != 3 || d.shape[2] != 3 || d.dtype != STK_DTYPE_UINT8 ||
      (d.layout[0] && strcmp(d.layout, "HWC") != 0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "expects uint8 RGB (HWC, 3 channels), got %d dimensions, layout '%s'", d.ndim,
                      d.layout);
  if (d.shape[0] < 1 || d.shape[1] < 1 || d.shape[0] > 65535 || d.shape[1] > 65535)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "%lldx%lld: JPEG images are 1 to 65535 pixels a side", (long long)d.shape[0],
                      (long long)d.shape[1]);
  int64_t q = stk__arg_int(node, s, JD_QUALITY);
  memset(js, 0, sizeof *js);
  js->src = d.data;
  js->h = (int)d.shape[0], js->w = (int)d.shape[1];
  quality_tables(q < 1 ? 1 : q > 100 ? 100 : (int)q, js->ql, js->qc);
  memcpy(shape, d.shape, 3 * sizeof(int64_t));
  return STK_OK;
}

static stk_status jd_run_gpu(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_FX_JPEG_DISTORT));
  stk_tensor_list *in, *out = NULL;
  bool owned;
  STK_TRY(stk__gpu_device_input(b, 0, &in, &owned));
  stk_gpu_jpeg_sample *js = stk__calloc(n ? n : 1, sizeof *js, "a jpeg plan");
  int64_t *shapes = stk__calloc(n * 3 + 1, sizeof(int64_t), "shapes");
  void *planes = NULL;
  stk_status st = js && shapes ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  size_t total = 0;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    st = jd_gpu_sample(node, b, in, i, &js[i], shapes + i * 3);
    total += st == STK_OK ? stk_je_planes_bytes(js[i].h, js[i].w) : 0;
  }
  if (st == STK_OK)
    st = stk__gpu_alloc_list(b, STK_DTYPE_UINT8, 3, shapes, "HWC",
                             stk__gpu_shapes_equal(shapes, n, 3), &out);
  if (st == STK_OK && n > 0)
    st = stk__gpu_op_check(
        node, g->api->device_alloc(g->ctx, total, stk__gpu_stream(b), &planes, err, sizeof err),
        err);
  if (st == STK_OK && n > 0) {
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
      stk_tensor_desc d;
      stk_tensor_list_sample(out, i, &d);
      js[i].dst = d.data;
      js[i].planes = (uint8_t *)planes + off;
      off += stk_je_planes_bytes(js[i].h, js[i].w);
    }
    st = stk__gpu_op_check(node,
                           stk_gpu_run_fx_jpeg_distort(g->api, g->ctx, (int)n, js, NULL,
                                                       stk__gpu_stream(b), err, sizeof err),
                           err);
  }
  if (planes) g->api->device_free(g->ctx, planes, stk__gpu_stream(b), NULL, 0);
  free(js);
  free(shapes);
  return stk__gpu_finish(b, in, owned, out, st);
}

static const stk_op_schema jd_schema = {
    .name = "jpeg_compression_distortion",
    .doc =
        "Adds JPEG compression artefacts: each uint8 RGB image is encoded at `quality` "
        "(4:2:0, standard tables) and decoded again with libjpeg-turbo, byte for byte "
        "what DALI's CPU operator (OpenCV's imencode / imdecode) gives. The GPU computes "
        "the same round trip without a bitstream (src/shared/jpeg_emul.h) with "
        "floating-point transforms where libjpeg uses integer ones: most pixels equal "
        "the CPU's, the rest differ by a few levels (coefficients on a rounding "
        "boundary).",
    .devices = STK_DEVICE_CPU | STK_DEVICE_GPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = jd_in,
    .num_outputs = 1,
    .outputs = jd_out,
    .num_args = JD_COUNT_,
    .args = jd_args,
    .gpu_check =
        "# atol=12 mismatch=0.02\n"
        "q = random.uniform(values=[10, 50, 90], dtype=\"int32\")\n"
        "return jpeg_compression_distortion(IN, quality=q, device=@)",
};
const stk__op_def stk__op_jpeg_compression_distortion = {
    .schema = &jd_schema, .run_sample = jd_run, .run_gpu = jd_run_gpu};
