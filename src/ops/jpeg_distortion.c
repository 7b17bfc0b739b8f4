/* jpeg_compression_distortion (DALI's): each RGB image encoded as a baseline JPEG at the
 * given quality (4:2:0 chroma subsampling, libjpeg's standard tables and integer DCT) and
 * decoded again (fancy upsampling), through libjpeg-turbo's TurboJPEG API: the same
 * bytes as OpenCV's imencode / imdecode, which DALI's CPU operator uses. */
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first */
#include <stdlib.h>

#include <jpeglib.h>

#include "../codecs/codecs.h"
#include "image_util.h"

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

static const stk_op_schema jd_schema = {
    .name = "jpeg_compression_distortion",
    .doc =
        "Adds JPEG compression artefacts: each uint8 RGB image is encoded at `quality` "
        "(4:2:0, standard tables) and decoded again with libjpeg-turbo, byte for byte "
        "what DALI's CPU operator (OpenCV's imencode / imdecode) gives. CPU only in "
        "stoker (DALI's GPU version emulates the codec with its own kernels).",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = jd_in,
    .num_outputs = 1,
    .outputs = jd_out,
    .num_args = JD_COUNT_,
    .args = jd_args,
};
const stk__op_def stk__op_jpeg_compression_distortion = {.schema = &jd_schema,
                                                         .run_sample = jd_run};
