/* Image decoders: decoders.image, decoders.image_random_crop, decoders.image_crop,
 * decoders.image_slice, peek_image_shape.
 * The codec work lives in src/codecs; these operators read arguments, name the sample in
 * errors and allocate outputs through stk__output so the decoder writes straight into the
 * batch. On the "mixed" device, nvJPEG decodes the batch's JPEGs and the GPU PNG decoder
 * its PNGs into GPU memory (see the end of this file). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codecs/codecs.h"
#include "png_plan.h"
#include "../cuda/api_png.h"
#include "crop_window.h"
#include "gpu_util.h"
#include "image_util.h"
#include "jpeg_own.h"

/* Arguments every decoder takes, first in each table (the enums rely on it). DALI's
 * mixed-backend tuning arguments are accepted so DALI pipelines port unchanged. */
#define DECODER_COMMON_ARGS                                                                   \
  {"output_type",                                                                             \
   STK_ARG_STRING,                                                                            \
   0,                                                                                         \
   "\"RGB\"",                                                                                 \
   0,                                                                                         \
   0,                                                                                         \
   "RGB|BGR|GRAY",                                                                            \
   "colour of the output: RGB or BGR (3 channels) or GRAY (1 channel, BT.601 luma)"},         \
      {"adjust_orientation",                                                                  \
       STK_ARG_BOOL,                                                                          \
       0,                                                                                     \
       "true",                                                                                \
       0,                                                                                     \
       0,                                                                                     \
       NULL,                                                                                  \
       "apply the EXIF orientation, so the image comes out as displayed"},                    \
      {"use_fast_idct",                                                                       \
       STK_ARG_BOOL,                                                                          \
       0,                                                                                     \
       "false",                                                                               \
       0,                                                                                     \
       0,                                                                                     \
       NULL,                                                                                  \
       "JPEG: libjpeg-turbo's fast integer IDCT (a little faster, a little less exact)"},     \
      {"hw_decoder_load",                                                                     \
       STK_ARG_FLOAT,                                                                         \
       STK_ARGF_RANGE,                                                                        \
       "-1",                                                                                  \
       -1,                                                                                    \
       1,                                                                                     \
       NULL,                                                                                  \
       "mixed device: share of the JPEGs the hardware decoder accepts that go to it; the "    \
       "rest are decoded by nvJPEG's hybrid path on the decode threads at the same time. "    \
       "-1 (default): automatic, the share that balances the two paths' measured rates, "     \
       "adjusted every batch (DALI's fixed default is 0.65); a value in [0, 1] fixes it, "    \
       "for bit-identical outputs across runs"},                                              \
      {"cpu_decoder_load",                                                                    \
       STK_ARG_FLOAT,                                                                         \
       STK_ARGF_RANGE,                                                                        \
       "0",                                                                                   \
       -1,                                                                                    \
       1,                                                                                     \
       NULL,                                                                                  \
       "mixed device: share of each batch decoded by libjpeg-turbo in the CPU stage (on "     \
       "the worker threads, batches ahead) and uploaded, instead of by nvJPEG, whose "        \
       "batched call is bound by the one thread submitting it. 0 (default): none; a value "   \
       "in [0, 1] fixes it; -1: automatic, grown while the CPU stage has time to spare and "  \
       "shrunk when the decoders wait for it. Files neither nvJPEG nor the GPU PNG "          \
       "decoder takes are always decoded there"},                                             \
      {"gpu_decoder_load",                                                                    \
       STK_ARG_FLOAT,                                                                         \
       STK_ARGF_RANGE,                                                                        \
       "-1",                                                                                  \
       -2,                                                                                    \
       1,                                                                                     \
       NULL,                                                                                  \
       "mixed device: share of the baseline JPEGs decoded by stoker's own GPU decoder on "    \
       "the CUDA cores instead of by nvJPEG, at the same time as nvJPEG decodes the rest "    \
       "(its outputs are libjpeg-turbo's, byte for byte). -1 (default): automatic, all of "   \
       "them on a GPU without hardware JPEG engines (where nvJPEG's hybrid path is its only " \
       "other), none on a GPU with them (there the own decoder takes SM time from the "       \
       "training: opt in); -2: balanced, the share adapted every batch (from 0.3, within "    \
       "[0.02, 0.95]) so that the own decoder finishes about when nvJPEG's call does, and "   \
       "left out for a while where batches with it are not faster (a probe batch without it " \
       "every 16th); a value in [0, 1] fixes it. Other negative values are refused"},         \
      {"device_memory_padding",                                                               \
       STK_ARG_INT,                                                                           \
       STK_ARGF_RANGE,                                                                        \
       "16777216",                                                                            \
       0,                                                                                     \
       17179869184.0,                                                                         \
       NULL,                                                                                  \
       "mixed device: bytes added to each of nvJPEG's device allocations, so that its "       \
       "buffers, which grow with the images, are reallocated less often (as in DALI)"},       \
      {"host_memory_padding",                                                                 \
       STK_ARG_INT,                                                                           \
       STK_ARGF_RANGE,                                                                        \
       "8388608",                                                                             \
       0,                                                                                     \
       17179869184.0,                                                                         \
       NULL,                                                                                  \
       "mixed device: bytes added to each of nvJPEG's pinned host allocations (as in DALI)"}, \
      {"preallocate_width_hint",                                                              \
       STK_ARG_INT,                                                                           \
       STK_ARGF_RANGE,                                                                        \
       "0",                                                                                   \
       0,                                                                                     \
       65535,                                                                                 \
       NULL,                                                                                  \
       "mixed device: with preallocate_height_hint, the hardware decoder's buffers are "      \
       "allocated up front for a batch of images up to this size, not while decoding; "       \
       "0: none"},                                                                            \
      {"preallocate_height_hint",                                                             \
       STK_ARG_INT,                                                                           \
       STK_ARGF_RANGE,                                                                        \
       "0",                                                                                   \
       0,                                                                                     \
       65535,                                                                                 \
       NULL,                                                                                  \
       "mixed device: see preallocate_width_hint"},                                           \
      {"dtype",                                                                               \
       STK_ARG_STRING,                                                                        \
       0,                                                                                     \
       "\"uint8\"",                                                                           \
       0,                                                                                     \
       0,                                                                                     \
       "uint8|int8|uint16|int16|uint32|int32|float32|float",                                  \
       "output type, the values scaled to its range as DALI: v * max / 255 (integers: "       \
       "through float32, rounded), v * (1 / 255) for float32; CPU only; 16-bit files "        \
       "refused"},                                                                            \
      {"affine",                                                                              \
       STK_ARG_BOOL,                                                                          \
       0,                                                                                     \
       "true",                                                                                \
       0,                                                                                     \
       0,                                                                                     \
       NULL,                                                                                  \
       "DALI's mixed-backend thread pinning: accepted, no effect (stoker's decode threads "   \
       "are not pinned)"},                                                                    \
      {"hybrid_huffman_threshold",                                                            \
       STK_ARG_INT,                                                                           \
       0,                                                                                     \
       "1000000",                                                                             \
       0,                                                                                     \
       0,                                                                                     \
       NULL,                                                                                  \
       "DALI's nvJPEG hybrid-Huffman size threshold: accepted, no effect (hw_decoder_load "   \
       "balances the paths)"},                                                                \
      {"jpeg_fancy_upsampling",                                                               \
       STK_ARG_BOOL,                                                                          \
       0,                                                                                     \
       "false",                                                                               \
       0,                                                                                     \
       0,                                                                                     \
       NULL,                                                                                  \
       "DALI: make the mixed backend upsample chroma as the CPU one: accepted, no effect "    \
       "(the CPU decoder always uses libjpeg-turbo's fancy upsampling)"},                     \
      {"device_memory_padding_jpeg2k",                                                        \
       STK_ARG_INT,                                                                           \
       0,                                                                                     \
       "0",                                                                                   \
       0,                                                                                     \
       0,                                                                                     \
       NULL,                                                                                  \
       "DALI's nvJPEG2000 padding: accepted, no effect (JPEG 2000 is not decoded)"},          \
  {                                                                                           \
    "host_memory_padding_jpeg2k", STK_ARG_INT, 0, "0", 0, 0, NULL,                            \
        "DALI's nvJPEG2000 padding: accepted, no effect (JPEG 2000 is not decoded)"           \
  }
enum {
  A_OUTPUT_TYPE,
  A_ADJUST_ORIENTATION,
  A_FAST_IDCT,
  A_HW_LOAD,
  A_CPU_LOAD,
  A_GPU_LOAD,
  A_DEVICE_PADDING,
  A_HOST_PADDING,
  A_PREALLOC_W,
  A_PREALLOC_H,
  A_DTYPE,
  A_AFFINE,
  A_HYBRID_HUFFMAN,
  A_FANCY_UPSAMPLING,
  A_DEVICE_PADDING_J2K,
  A_HOST_PADDING_J2K,
  A_COMMON_COUNT
};

static const stk_port_schema encoded_in[] = {
    {"encoded", "the file's bytes: a 1-D uint8 tensor (JPEG or PNG)"}};
static const stk_port_schema image_out[] = {{"image", "HWC uint8 image"}};

/* What the CPU stage prepares per sample (stk__op_def.prepare): the plan without the
 * pointers (the input's bytes may move when the batch is assembled) and nvJPEG's
 * classification of the header, so the GPU stage's thread only feeds the decoders. */
typedef struct {
  bool ready;
  bool cpu;
  bool classified;
  int out_h, out_w, channels;
  int roi_x, roi_y, roi_w, roi_h;
  stk_gpu_decode_class cls;
  uint8_t *pixels; /* decoded in the CPU stage (a host pool block), uploaded by the GPU stage */
  /* a PNG for the GPU PNG decoder: its plan, then its zlib stream (one host pool block) */
  stk__png_plan *png;
  /* a JPEG stoker's own GPU decoder takes, parsed (one host pool block) */
  stk_jpeg_parsed *own;
} mixed_record;

/* How a decoder chooses the window it decodes of a w x h image (as displayed), for
 * sample s; `in` holds the sample's anchor and shape inputs (decoders.image_slice) or
 * NULLs. NULL function: the whole image. The CPU operator, the CPU-stage preparation and
 * the GPU stage all call it, so every path decodes the same window. */
typedef stk_status (*window_fn)(stk__node *node, stk__sample *s, const stk__tensor *const in[2],
                                int w, int h, stk__crop_window *win);
static stk_status random_window(stk__node *node, stk__sample *s, const stk__tensor *const in[2],
                                int w, int h, stk__crop_window *win);

static stk_status image_prepare(stk__node *node, stk__sample *s, void *record);
static stk_status crop_prepare(stk__node *node, stk__sample *s, void *record);
static void mixed_release(stk__node *node, void *record);
static stk_status mixed_init(stk__node *node);
static void mixed_destroy(stk__node *node);

/* ---- helpers shared by the three operators ---- */

/* The sample's name for messages: its source file, else its ordinal. */
static const char *sample_name(const stk__sample *s, char *buf, size_t cap) {
  const char *src = stk__sample_source(s);
  if (src) return src;
  snprintf(buf, cap, "sample %lld", (long long)stk__sample_ordinal(s));
  return buf;
}

static stk_status encoded_input(const stk__node *node, const stk__sample *s, const char *nm,
                                const uint8_t **data, size_t *size) {
  const stk__tensor *t = stk__input(s, 0);
  if (t->dtype != STK_DTYPE_UINT8 || t->ndim != 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: %s: encoded input must be a 1-D uint8 tensor (got %d-D %s)",
                    stk__node_name(node), nm, t->ndim, stk_dtype_name(t->dtype));
  *data = t->data;
  *size = (size_t)t->shape[0];
  return STK_OK;
}

static stk__color color_arg(const stk__node *node) {
  const char *c = stk__arg_string(node, A_OUTPUT_TYPE);
  return strcmp(c, "BGR") == 0    ? STK__COLOR_BGR
         : strcmp(c, "GRAY") == 0 ? STK__COLOR_GRAY
                                  : STK__COLOR_RGB;
}

static void base_opts(const stk__node *node, stk__decode_opts *o) {
  memset(o, 0, sizeof *o);
  o->color = color_arg(node);
  o->ignore_orientation = !stk__arg_bool(node, NULL, A_ADJUST_ORIENTATION);
  o->fast_idct = stk__arg_bool(node, NULL, A_FAST_IDCT);
  o->max_pixels = stk__node_max_pixels(node);
}

/* Allocates output 0 as an HWC uint8 image. */
static stk_status alloc_output(void *ctx, int h, int w, int c, uint8_t **out) {
  int64_t shape[3] = {h, w, c};
  stk__tensor *t;
  STK_TRY(stk__output((stk__sample *)ctx, 0, STK_DTYPE_UINT8, 3, shape, "HWC", &t));
  *out = t->data;
  return STK_OK;
}

/* Where a decode goes when the output type is not uint8: scratch, converted after. */
typedef struct {
  stk__sample *s;
  stk__image img;
} scratch_image;

static stk_status alloc_scratch_image(void *ctx, int h, int w, int c, uint8_t **out) {
  scratch_image *si = ctx;
  *out = stk__scratch(si->s, (size_t)h * (size_t)w * (size_t)c + 1);
  if (!*out) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no scratch memory for a %dx%d image", h, w);
  si->img = (stk__image){.data = *out, .dtype = STK_DTYPE_UINT8, .h = h, .w = w, .c = c};
  return STK_OK;
}

static stk_dtype dtype_arg(const stk__node *node) {
  const char *t = stk__arg_string(node, A_DTYPE);
  return strcmp(t, "float") == 0 ? STK_DTYPE_FLOAT32 : stk__dtype_arg(t);
}

/* DALI's conversion of a decoded uint8 value to the dynamic range of `dt`: v * (1 / 255)
 * in float32 for float, else v * ((float)max / 255) in float32 arithmetic, as DALI (int32 and
 * uint32 values are then multiples of 128 or 256), then half away from zero to the integer. */
static void store_scaled(void *dst, stk_dtype dt, size_t i, uint8_t v) {
  double max = dt == STK_DTYPE_INT8     ? 127.0
               : dt == STK_DTYPE_UINT16 ? 65535.0
               : dt == STK_DTYPE_INT16  ? 32767.0
               : dt == STK_DTYPE_UINT32 ? 4294967295.0
               : dt == STK_DTYPE_INT32  ? 2147483647.0
                                        : 1.0;
  if (dt == STK_DTYPE_FLOAT32) {
    ((float *)dst)[i] = (float)v * (1.0f / 255.0f);
    return;
  }
  float scale = (float)max / 255.0f;
  float f = (float)v * scale;
  stk__store_double(dst, dt, i, (double)f);
}

/* Output 0 of the node's dtype from a uint8 HWC image. */
static stk_status emit_scaled(stk__node *node, stk__sample *s, const stk__image *img) {
  stk_dtype dt = dtype_arg(node);
  int64_t shape[3] = {img->h, img->w, img->c};
  stk__tensor *t;
  STK_TRY(stk__output(s, 0, dt, 3, shape, "HWC", &t));
  size_t n = (size_t)(img->h * img->w * img->c);
  const uint8_t *px = img->data;
  for (size_t i = 0; i < n; i++) store_scaled(t->data, dt, i, px[i]);
  return STK_OK;
}

/* dtype scales the 8-bit decode: a file with deeper samples (16-bit PNG) would lose its
 * low bits, where DALI keeps them, so it is refused rather than converted silently. */
static stk_status check_depth(stk__node *node, stk__sample *s, const uint8_t *data, size_t size,
                              const char *nm) {
  stk__image_info info;
  stk_status st = stk__image_peek(data, size, nm, &info);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  if (info.bit_depth > 8)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                      "dtype \"%s\" on a %d-bit image: stoker decodes 8 bits per sample and "
                      "scales them (DALI keeps the 16); decode as uint8",
                      stk__arg_string(node, A_DTYPE), info.bit_depth);
  return STK_OK;
}

static stk_status decode_into_output(stk__node *node, stk__sample *s, const uint8_t *data,
                                     size_t size, const char *nm, const stk__decode_opts *o) {
  stk__decoded d;
  if (dtype_arg(node) != STK_DTYPE_UINT8) {
    STK_TRY(check_depth(node, s, data, size, nm));
    scratch_image part = {s, {0}};
    stk_status st = stk__image_decode(data, size, nm, o, alloc_scratch_image, &part, &d);
    if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
    return emit_scaled(node, s, &part.img);
  }
  stk_status st = stk__image_decode(data, size, nm, o, alloc_output, s, &d);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  return STK_OK;
}

static stk_status image_run_mixed(stk__node *node, stk__gpu_batch *b);
static stk_status crop_run_mixed(stk__node *node, stk__gpu_batch *b);

/* ---- decoders.image ---- */

_Static_assert(sizeof((stk_arg_schema[]){DECODER_COMMON_ARGS}) / sizeof(stk_arg_schema) ==
                   A_COMMON_COUNT,
               "A_COMMON_COUNT must count DECODER_COMMON_ARGS");

/* DALI's decoder cache (mixed backend): accepted so DALI code ports; stoker caches whole
 * deterministic prefixes instead (fn.cache, docs/python.md). */
#define CACHE_COMPAT "DALI's mixed-backend decoder cache: accepted, no effect (see fn.cache)"
enum {
  IM_CACHE_SIZE = A_COMMON_COUNT,
  IM_CACHE_THRESHOLD,
  IM_CACHE_TYPE,
  IM_CACHE_DEBUG,
  IM_CACHE_BATCH_COPY,
  IM_COUNT_
};
static const stk_arg_schema image_args[] = {
    DECODER_COMMON_ARGS,
    [IM_CACHE_SIZE] = {.name = "cache_size",
                       .type = STK_ARG_INT,
                       .default_text = "0",
                       .doc = CACHE_COMPAT},
    [IM_CACHE_THRESHOLD] = {.name = "cache_threshold",
                            .type = STK_ARG_INT,
                            .default_text = "0",
                            .doc = CACHE_COMPAT},
    [IM_CACHE_TYPE] = {.name = "cache_type",
                       .type = STK_ARG_STRING,
                       .default_text = "\"\"",
                       .doc = CACHE_COMPAT},
    [IM_CACHE_DEBUG] = {.name = "cache_debug",
                        .type = STK_ARG_BOOL,
                        .default_text = "false",
                        .doc = CACHE_COMPAT},
    [IM_CACHE_BATCH_COPY] = {.name = "cache_batch_copy",
                             .type = STK_ARG_BOOL,
                             .default_text = "true",
                             .doc = CACHE_COMPAT},
};
STK__CHECK_ARGS(image_args, IM_COUNT_);

static stk_status image_run(stk__node *node, stk__sample *s) {
  char buf[48];
  const char *nm = sample_name(s, buf, sizeof buf);
  const uint8_t *data;
  size_t size;
  STK_TRY(encoded_input(node, s, nm, &data, &size));
  stk__decode_opts o;
  base_opts(node, &o);
  return decode_into_output(node, s, data, size, nm, &o);
}

static const stk_op_schema image_schema = {
    .name = "decoders.image",
    .doc =
        "Decodes JPEG and PNG images into HWC uint8 (or `dtype`; RGB, BGR or GRAY), applying the "
        "EXIF "
        "orientation. Progressive and CMYK JPEGs and every PNG colour type and bit depth are "
        "supported; alpha is dropped; 16-bit PNG samples are rounded to 8 bits (round(v / "
        "257)) and PNG pixel values are DALI's, GRAY included (docs/gpu.md). Corrupt or "
        "truncated files are errors naming the file. Mixed device: JPEGs through nvJPEG, "
        "PNGs through the GPU PNG decoder (docs/gpu.md), the rest on the CPU.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_MIXED,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = encoded_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof image_args / sizeof image_args[0],
    .args = image_args,
    /* the test photos' JPEGs (nvJPEG's IDCT differs from libjpeg-turbo's by a few levels
     * here and there) and PNGs (the GPU PNG decoder: exact) */
    .gpu_check =
        "# atol=8 mismatch=0.05\n"
        "return decoders.image(ENC, device=@)",
};
const stk__op_def stk__op_decoders_image = {
    .schema = &image_schema,
    .init = mixed_init,
    .run_sample = image_run,
    .run_gpu = image_run_mixed,
    .prepare = image_prepare,
    .prep_bytes = sizeof(mixed_record),
    .prep_release = mixed_release,
    .destroy = mixed_destroy,
};

/* ---- decoders.image_random_crop ---- */

enum { RC_AREA = A_COMMON_COUNT, RC_RATIO, RC_ATTEMPTS, RC_SEED, RC_SIZE, RC_COUNT_ };
static const stk_arg_schema crop_args[] = {
    DECODER_COMMON_ARGS,
    {"random_area", STK_ARG_FLOATS, 0, "[0.08, 1.0]", 0, 0, NULL,
     "[min, max] fraction of the image area the crop covers"},
    {"random_aspect_ratio", STK_ARG_FLOATS, 0, "[0.75, 1.333333]", 0, 0, NULL,
     "[min, max] width/height ratio of the crop (drawn log-uniformly)"},
    {"num_attempts", STK_ARG_INT, STK_ARGF_RANGE, "10", 1, 1e9, NULL,
     "tries to find a window before falling back to a centre crop"},
    {"seed", STK_ARG_INT, 0, "-1", 0, 0, NULL, "this operator's seed (-1: derived)"},
    {"size", STK_ARG_INTS, STK_ARGF_RANGE, NULL, 0, 1e9, NULL,
     "[H, W] the crop will be resized to: lets JPEGs be downscaled by 1/2, 1/4 or 1/8 in "
     "the DCT domain while the crop stays at least this large (faster, nearly lossless "
     "for the resize that follows)"},
};
STK__CHECK_ARGS(crop_args, RC_COUNT_);

static stk_status crop_init(stk__node *node) {
  STK_TRY(mixed_init(node));
  const char *nm = stk__node_name(node);
  const double *a, *r;
  if (stk__arg_floats(node, NULL, RC_AREA, &a) != 2 || !(a[0] > 0 && a[0] <= a[1] && a[1] <= 1))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: random_area must be [min, max] with 0 < min <= max <= 1", nm);
  if (stk__arg_floats(node, NULL, RC_RATIO, &r) != 2 || !(r[0] > 0 && r[0] <= r[1]))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: random_aspect_ratio must be [min, max] with 0 < min <= max", nm);
  if (stk__arg_given(node, RC_SIZE)) {
    const int64_t *sz;
    if (stk__arg_ints(node, NULL, RC_SIZE, &sz) != 2 || sz[0] < 1 || sz[1] < 1 || sz[0] > 1 << 20 ||
        sz[1] > 1 << 20)
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: size must be [H, W] with positive values", nm);
  }
  return STK_OK;
}

static stk_status crop_run(stk__node *node, stk__sample *s) {
  char buf[48];
  const char *nm = sample_name(s, buf, sizeof buf);
  const uint8_t *data;
  size_t size;
  STK_TRY(encoded_input(node, s, nm, &data, &size));
  stk__decode_opts o;
  base_opts(node, &o);
  stk__image_info info;
  stk_status st = stk__image_peek(data, size, nm, &info);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  int w = o.ignore_orientation ? info.width : info.oriented_width;
  int h = o.ignore_orientation ? info.height : info.oriented_height;

  stk__crop_window win;
  STK_TRY(random_window(node, s, NULL, w, h, &win));
  o.roi_x = win.x;
  o.roi_y = win.y;
  o.roi_w = win.w;
  o.roi_h = win.h;
  if (stk__arg_given(node, RC_SIZE)) {
    const int64_t *sz;
    stk__arg_ints(node, NULL, RC_SIZE, &sz);
    o.min_h = (int)sz[0];
    o.min_w = (int)sz[1];
  }
  return decode_into_output(node, s, data, size, nm, &o);
}

static stk_status random_window(stk__node *node, stk__sample *s, const stk__tensor *const in[2],
                                int w, int h, stk__crop_window *win) {
  (void)in;
  const double *a, *r;
  stk__arg_floats(node, NULL, RC_AREA, &a);
  stk__arg_floats(node, NULL, RC_RATIO, &r);
  stk__philox g;
  stk__sample_rng(node, s, &g);
  *win = stk__random_crop_window(&g, w, h, a[0], a[1], r[0], r[1],
                                 (int)stk__arg_int(node, NULL, RC_ATTEMPTS));
  return STK_OK;
}

static const stk_op_schema crop_schema = {
    .name = "decoders.image_random_crop",
    .doc =
        "Decodes only a random window of each image (torchvision's RandomResizedCrop window, "
        "drawn on the image as displayed): JPEGs decode just the rows and columns the window "
        "needs. With `size`, a JPEG window at least twice that size is also downscaled in the "
        "DCT domain. Otherwise as decoders.image.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_MIXED,
    .flags = STK_OPF_RANDOM,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = encoded_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = sizeof crop_args / sizeof crop_args[0],
    .args = crop_args,
    .gpu_check =
        "# atol=8 mismatch=0.05\n"
        "return decoders.image_random_crop(ENC, seed=7, device=@)",
};
const stk__op_def stk__op_decoders_image_random_crop = {
    .schema = &crop_schema,
    .init = crop_init,
    .run_sample = crop_run,
    .run_gpu = crop_run_mixed,
    .prepare = crop_prepare,
    .prep_bytes = sizeof(mixed_record),
    .prep_release = mixed_release,
    .destroy = mixed_destroy,
};

/* ---- decoders.image_crop and decoders.image_slice: a given window ---- */

static stk_status window_mixed_prepare(stk__node *node, stk__sample *s, void *record);
static stk_status window_run_mixed(stk__node *node, stk__gpu_batch *b);

static stk_status decode_padded(stk__node *node, stk__sample *s, const uint8_t *data, size_t size,
                                const char *nm, stk__decode_opts *o, const stk__crop_window *win,
                                int w, int h, int fill_arg);

static bool window_inside(const stk__crop_window *win, int w, int h) {
  return win->x >= 0 && win->y >= 0 && (int64_t)win->x + win->w <= w &&
         (int64_t)win->y + win->h <= h;
}

/* The window of a w x h image as decode options; a window leaving the image is cut to it
 * (trim_to_shape), refused (error) or padded with argument `fill_arg`'s values (pad: the
 * window function then returns it uncut). */
static stk_status decode_window(stk__node *node, stk__sample *s, window_fn window, int fill_arg) {
  char buf[48];
  const char *nm = sample_name(s, buf, sizeof buf);
  const uint8_t *data;
  size_t size;
  STK_TRY(encoded_input(node, s, nm, &data, &size));
  stk__decode_opts o;
  base_opts(node, &o);
  stk__image_info info;
  stk_status st = stk__image_peek(data, size, nm, &info);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  int w = o.ignore_orientation ? info.width : info.oriented_width;
  int h = o.ignore_orientation ? info.height : info.oriented_height;
  const stk__tensor *in[2] = {NULL, NULL};
  for (int k = 0; k < 2 && k + 1 < stk__node_num_inputs(node); k++) in[k] = stk__input(s, k + 1);
  stk__crop_window win;
  STK_TRY(window(node, s, in, w, h, &win));
  if (!window_inside(&win, w, h))
    return decode_padded(node, s, data, size, nm, &o, &win, w, h, fill_arg);
  o.roi_x = win.x, o.roi_y = win.y, o.roi_w = win.w, o.roi_h = win.h;
  return decode_into_output(node, s, data, size, nm, &o);
}

/* out_of_bounds_policy "pad": decodes the part of the window inside the image (nothing
 * when it lies wholly outside) and places it in a window-sized output whose other pixels
 * take the fill values (rounded and saturated to uint8, as crop's). */
static stk_status decode_padded(stk__node *node, stk__sample *s, const uint8_t *data, size_t size,
                                const char *nm, stk__decode_opts *o, const stk__crop_window *win,
                                int w, int h, int fill_arg) {
  int64_t x0 = win->x < 0 ? 0 : win->x, y0 = win->y < 0 ? 0 : win->y;
  int64_t x1 = (int64_t)win->x + win->w, y1 = (int64_t)win->y + win->h;
  x1 = x1 > w ? w : x1, y1 = y1 > h ? h : y1;
  int c = o->color == STK__COLOR_GRAY ? 1 : 3;
  scratch_image part = {s, {.data = NULL, .dtype = STK_DTYPE_UINT8, .h = 0, .w = 0, .c = c}};
  if (x1 > x0 && y1 > y0) {
    o->roi_x = (int)x0, o->roi_y = (int)y0, o->roi_w = (int)(x1 - x0), o->roi_h = (int)(y1 - y0);
    stk__decoded d;
    stk_status st = stk__image_decode(data, size, nm, o, alloc_scratch_image, &part, &d);
    if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
    c = (int)part.img.c;
  }
  double *fill = NULL;
  STK_TRY(stk__channel_values(node, s, fill_arg, "fill_values", c, &fill));
  uint8_t fill_px[4];
  stk__fill_pixel(fill_px, STK_DTYPE_UINT8, (size_t)c, fill, (size_t)c);
  int64_t shape[3] = {win->h, win->w, c};
  stk__image out = {.data = NULL, .dtype = STK_DTYPE_UINT8, .h = win->h, .w = win->w, .c = c};
  bool scaled = dtype_arg(node) != STK_DTYPE_UINT8;
  if (scaled) STK_TRY(check_depth(node, s, data, size, nm));
  if (scaled) {
    out.data = stk__scratch(s, (size_t)(win->h * win->w * c) + 1);
    if (!out.data) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch memory");
  } else {
    stk__tensor *t;
    STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, 3, shape, "HWC", &t));
    out.data = t->data;
  }
  stk__crop_hwc(&part.img, win->y - y0, win->x - x0, &out, fill_px);
  return scaled ? emit_scaled(node, s, &out) : STK_OK;
}

/* A rectangle of the w x h image as a window under the policy: inside the image, cut to it
 * (trim), or as it is (pad: decode_padded fills what lies outside); else the error naming
 * it. Empty windows are refused under every policy, as DALI's decoders do. */
static stk_status fit_window(stk__node *node, stk__sample *s, const stk__rect *r, int w, int h,
                             stk__oob_policy policy, stk__crop_window *win) {
  int64_t y0 = r->y, x0 = r->x, y1 = r->y + r->h, x1 = r->x + r->w;
  if (policy == STK__OOB_TRIM) {
    y0 = y0 < 0 ? 0 : y0 > h ? h : y0, x0 = x0 < 0 ? 0 : x0 > w ? w : x0;
    y1 = y1 < y0 ? y0 : y1 > h ? h : y1, x1 = x1 < x0 ? x0 : x1 > w ? w : x1;
  }
  bool leaves = y0 < 0 || x0 < 0 || y1 > h || x1 > w;
  if (y1 <= y0 || x1 <= x0 || (leaves && policy == STK__OOB_ERROR))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the window %lldx%lld at (y %lld, x %lld) is empty or leaves the %dx%d image "
                      "(out_of_bounds_policy \"error\"; \"trim_to_shape\" cuts it to the image, "
                      "\"pad\" fills the rest with fill_values)",
                      (long long)r->h, (long long)r->w, (long long)r->y, (long long)r->x, h, w);
  if (y0 < INT_MIN / 2 || x0 < INT_MIN / 2 || y1 > INT_MAX / 2 || x1 > INT_MAX / 2 ||
      ((y1 - y0) * (x1 - x0) > stk__node_max_pixels(node) && stk__node_max_pixels(node) > 0))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "the window %lldx%lld is larger than the pipeline's max_pixels",
                      (long long)(y1 - y0), (long long)(x1 - x0));
  *win = (stk__crop_window){(int)x0, (int)y0, (int)(x1 - x0), (int)(y1 - y0)};
  return STK_OK;
}

/* The policy argument's value. */
static stk__oob_policy window_policy(const stk__node *node, int policy_arg) {
  stk__oob_policy p = STK__OOB_ERROR;
  stk__oob_parse(stk__arg_string(node, policy_arg), &p);
  return p;
}

/* "pad" decodes into a host buffer first: the mixed device does not take it. */
static stk_status window_policy_check(stk__node *node, int policy_arg) {
  if (window_policy(node, policy_arg) == STK__OOB_PAD && stk__node_device(node) == STK_DEVICE_MIXED)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "out_of_bounds_policy \"pad\" is CPU-only: use device=\"cpu\", or decode "
                      "with \"trim_to_shape\" and pad with fn.pad / fn.crop on the GPU");
  return STK_OK;
}

#define WINDOW_POLICY_ARG                                                                 \
  {                                                                                       \
    .name = "out_of_bounds_policy", .type = STK_ARG_STRING, .default_text = "\"error\"",  \
    .choices = STK__OOB_CHOICES,                                                          \
    .doc =                                                                                \
        "a window leaving the image: \"error\", \"trim_to_shape\" (cut to the image) or " \
        "\"pad\" (the rest takes fill_values; CPU only; a stoker extension: DALI's "      \
        "decoders have no such argument)"                                                 \
  }
#define WINDOW_FILL_ARG                                                             \
  {                                                                                 \
    .name = "fill_values", .type = STK_ARG_FLOATS, .flags = STK_ARGF_PER_SAMPLE,    \
    .default_text = "[0.0]",                                                        \
    .doc =                                                                          \
        "out_of_bounds_policy \"pad\": the padding, one value or one per channel, " \
        "rounded and saturated to uint8"                                            \
  }

enum {
  IC_CROP = A_COMMON_COUNT,
  IC_CROP_H,
  IC_CROP_W,
  IC_POS_X,
  IC_POS_Y,
  IC_ROUNDING,
  IC_POLICY,
  IC_FILL,
  IC_COUNT_
};
static const stk_arg_schema image_crop_args[] = {
    DECODER_COMMON_ARGS,
    [IC_CROP] = {.name = "crop",
                 .type = STK_ARG_FLOATS,
                 .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                 .max = 1e9,
                 .doc = "window size [H, W] (exclusive with crop_h / crop_w)"},
    [IC_CROP_H] = {.name = "crop_h",
                   .type = STK_ARG_FLOAT,
                   .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                   .default_text = "0.0",
                   .max = 1e9,
                   .doc = "window height (with crop_w)"},
    [IC_CROP_W] = {.name = "crop_w",
                   .type = STK_ARG_FLOAT,
                   .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                   .default_text = "0.0",
                   .max = 1e9,
                   .doc = "window width (with crop_h)"},
    [IC_POS_X] = {.name = "crop_pos_x",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                  .default_text = "0.5",
                  .max = 1,
                  .doc = "horizontal position in [0, 1]: x = round(crop_pos_x * (W - crop_W))"},
    [IC_POS_Y] = {.name = "crop_pos_y",
                  .type = STK_ARG_FLOAT,
                  .flags = STK_ARGF_PER_SAMPLE | STK_ARGF_RANGE,
                  .default_text = "0.5",
                  .max = 1,
                  .doc = "vertical position in [0, 1]: y = round(crop_pos_y * (H - crop_H))"},
    [IC_ROUNDING] = {.name = "rounding",
                     .type = STK_ARG_STRING,
                     .default_text = "\"round\"",
                     .choices = "round|truncate",
                     .doc = "how the anchor becomes an integer"},
    [IC_POLICY] = WINDOW_POLICY_ARG,
    [IC_FILL] = WINDOW_FILL_ARG,
};
STK__CHECK_ARGS(image_crop_args, IC_COUNT_);

static const stk__crop_arg_ids image_crop_ids = {IC_CROP, IC_CROP_H, IC_CROP_W, IC_POS_X, IC_POS_Y};

static stk_status image_crop_window(stk__node *node, stk__sample *s, const stk__tensor *const in[2],
                                    int w, int h, stk__crop_window *win) {
  (void)in;
  stk__rect r;
  stk__oob_policy policy = window_policy(node, IC_POLICY);
  bool truncate = strcmp(stk__arg_string(node, IC_ROUNDING), "truncate") == 0;
  STK_TRY(stk__crop_args_rect(node, s, &image_crop_ids, policy, truncate, h, w, &r));
  return fit_window(node, s, &r, w, h, policy, win);
}

static stk_status image_crop_init(stk__node *node) {
  STK_TRY(mixed_init(node));
  STK_TRY(window_policy_check(node, IC_POLICY));
  return stk__crop_args_check(node, &image_crop_ids);
}

static stk_status image_crop_run(stk__node *node, stk__sample *s) {
  return decode_window(node, s, image_crop_window, IC_FILL);
}

static const stk_op_schema image_crop_schema = {
    .name = "decoders.image_crop",
    .doc =
        "Decodes only a fixed window of each image, placed as crop does (DALI's "
        "decoders.image_crop: anchor = round(pos * (in - crop)) on the image as displayed): "
        "JPEGs decode just the rows and columns the window needs. Otherwise as "
        "decoders.image.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_MIXED,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = encoded_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = IC_COUNT_,
    .args = image_crop_args,
    .gpu_check =
        "# atol=8 mismatch=0.05\n"
        "return decoders.image_crop(ENC, crop=[64, 80], crop_pos_x=0.3, device=@)",
};
const stk__op_def stk__op_decoders_image_crop = {
    .schema = &image_crop_schema,
    .init = image_crop_init,
    .run_sample = image_crop_run,
    .run_gpu = window_run_mixed,
    .prepare = window_mixed_prepare,
    .prep_bytes = sizeof(mixed_record),
    .prep_release = mixed_release,
    .destroy = mixed_destroy,
};

enum {
  IS_NORM_ANCHOR = A_COMMON_COUNT,
  IS_NORM_SHAPE,
  IS_AXES,
  IS_POLICY,
  IS_START,
  IS_END,
  IS_SHAPE,
  IS_REL_START,
  IS_REL_END,
  IS_REL_SHAPE,
  IS_AXIS_NAMES,
  IS_FILL,
  IS_COUNT_
};
static const stk_arg_schema image_slice_args[] = {
    DECODER_COMMON_ARGS,
    [IS_NORM_ANCHOR] = {.name = "normalized_anchor",
                        .type = STK_ARG_BOOL,
                        .default_text = "true",
                        .doc = "a floating-point anchor input is a fraction of the extent (else "
                               "pixels); an integer one is always in pixels, as in DALI"},
    [IS_NORM_SHAPE] = {.name = "normalized_shape",
                       .type = STK_ARG_BOOL,
                       .default_text = "true",
                       .doc = "a floating-point shape input is a fraction of the extent (else "
                              "pixels); an integer one is always in pixels"},
    [IS_AXES] = {.name = "axes",
                 .type = STK_ARG_INTS,
                 .default_text = "[1, 0]",
                 .doc = "the axes the anchor / shape inputs and the start ... rel_shape "
                        "arguments give, in their order: 0 (or -2) = H, 1 (or -1) = W (the "
                        "default [1, 0]: [x, y] and [w, h], as DALI); excludes axis_names"},
    [IS_POLICY] = WINDOW_POLICY_ARG,
    [IS_START] = {.name = "start",
                  .type = STK_ARG_INTS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "the window's start in pixels, one value per axis (instead of the "
                         "anchor input; excludes rel_start); default 0"},
    [IS_END] = {.name = "end",
                .type = STK_ARG_INTS,
                .flags = STK_ARGF_PER_SAMPLE,
                .doc = "the window's end (exclusive) in pixels; give at most one of end, "
                       "rel_end, shape, rel_shape (none: the image's extent)"},
    [IS_SHAPE] = {.name = "shape",
                  .type = STK_ARG_INTS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "the window's extent in pixels (end = start + shape)"},
    [IS_REL_START] = {.name = "rel_start",
                      .type = STK_ARG_FLOATS,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .doc = "the start as a fraction of the extent: round(rel_start * extent)"},
    [IS_REL_END] = {.name = "rel_end",
                    .type = STK_ARG_FLOATS,
                    .flags = STK_ARGF_PER_SAMPLE,
                    .doc = "the end as a fraction of the extent: round(rel_end * extent)"},
    [IS_REL_SHAPE] = {.name = "rel_shape",
                      .type = STK_ARG_FLOATS,
                      .flags = STK_ARGF_PER_SAMPLE,
                      .doc = "the extent as a fraction of the image's: end = round(start + "
                             "rel_shape * extent), with the start before rounding"},
    [IS_AXIS_NAMES] = {.name = "axis_names",
                       .type = STK_ARG_STRING,
                       .doc = "the axes as letters, in order: \"WH\" is axes=[1, 0], \"HW\" "
                              "axes=[0, 1], \"W\" only the width (excludes axes)"},
    [IS_FILL] = WINDOW_FILL_ARG,
};
STK__CHECK_ARGS(image_slice_args, IS_COUNT_);

static const stk_port_schema slice_in[] = {
    {"encoded", "the file's bytes: a 1-D uint8 tensor (JPEG or PNG)"},
    {"anchor", "optional (with shape): the window's start along `axes` (float or integer)"},
    {"shape", "optional (with anchor): the window's extent along `axes`"}};

/* Value k of a 1-D anchor or shape input. */
static bool slice_value(const stk__tensor *t, int64_t k, double *v) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
  if (k >= n) return false;
  switch (t->dtype) {
    case STK_DTYPE_FLOAT32:
      *v = ((const float *)t->data)[k];
      return true;
    case STK_DTYPE_FLOAT64:
      *v = ((const double *)t->data)[k];
      return true;
    case STK_DTYPE_INT32:
      *v = ((const int32_t *)t->data)[k];
      return true;
    case STK_DTYPE_INT64:
      *v = (double)((const int64_t *)t->data)[k];
      return true;
    default:
      return false;
  }
}

static bool is_float_dtype(stk_dtype t) { return t == STK_DTYPE_FLOAT32 || t == STK_DTYPE_FLOAT64; }

/* The slice axes (0 = H, 1 = W) in the order the values give them, from axis_names or
 * axes; *na is 1 or 2. */
static stk_status slice_axes(stk__node *node, int axes[2], size_t *na) {
  if (stk__arg_given(node, IS_AXIS_NAMES)) {
    const char *names = stk__arg_string(node, IS_AXIS_NAMES);
    size_t n = strlen(names);
    for (size_t k = 0; k < n && k < 2; k++)
      axes[k] = names[k] == 'H' ? 0 : names[k] == 'W' ? 1 : -1;
    if (n < 1 || n > 2 || axes[0] < 0 || axes[n - 1] < 0 || (n == 2 && axes[0] == axes[1]))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                        "axis_names \"%s\" must name H and/or W, each once", names);
    *na = n;
    return STK_OK;
  }
  const int64_t *ax;
  size_t n = stk__arg_ints(node, NULL, IS_AXES, &ax);
  for (size_t k = 0; k < n && k < 2; k++)
    axes[k] = ax[k] >= -2 && ax[k] <= 1 ? (int)(ax[k] < 0 ? ax[k] + 2 : ax[k]) : -1;
  if (n < 1 || n > 2 || axes[0] < 0 || axes[n - 1] < 0 || (n == 2 && axes[0] == axes[1]))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "'axes' must list 0 (H) and/or 1 (W), each once (-2 and -1 count from "
                      "the back)");
  *na = n;
  return STK_OK;
}

/* The `na` values of argument `arg` for sample s into v, or the error naming it. */
static stk_status slice_arg_values(stk__node *node, stk__sample *s, int arg, size_t na, double *v) {
  size_t n;
  if (image_slice_args[arg].type == STK_ARG_INTS) {
    const int64_t *iv;
    n = stk__arg_ints(node, s, arg, &iv);
    for (size_t k = 0; k < n && k < na; k++) v[k] = (double)iv[k];
  } else {
    const double *fv;
    n = stk__arg_floats(node, s, arg, &fv);
    for (size_t k = 0; k < n && k < na; k++) v[k] = fv[k];
  }
  if (n != na)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "'%s' has %zu values; expected %zu (one per axis of axes / axis_names)",
                      image_slice_args[arg].name, n, na);
  for (size_t k = 0; k < na; k++)
    if (!(fabs(v[k]) < 1e9))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "'%s'[%zu] = %g is out of range",
                        image_slice_args[arg].name, k, v[k]);
  return STK_OK;
}

/* The window's [start, end) in unrounded pixels per slice axis, from the anchor and
 * shape inputs: float values are fractions when normalized_*, integers are pixels. */
static stk_status slice_from_inputs(stk__node *node, stk__sample *s, const stk__tensor *const in[2],
                                    const int axes[2], size_t na, int w, int h, double *b,
                                    double *e) {
  bool na_rel = stk__arg_bool(node, NULL, IS_NORM_ANCHOR) && is_float_dtype(in[0]->dtype);
  bool ns_rel = stk__arg_bool(node, NULL, IS_NORM_SHAPE) && is_float_dtype(in[1]->dtype);
  for (size_t k = 0; k < na; k++) {
    double a, z, extent = axes[k] == 0 ? h : w;
    if (!slice_value(in[0], (int64_t)k, &a) || !slice_value(in[1], (int64_t)k, &z))
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "the anchor and shape need %zu float or int32/int64 values (one per axis "
                        "of 'axes')",
                        na);
    b[k] = na_rel ? a * extent : a;
    e[k] = b[k] + (ns_rel ? z * extent : z);
  }
  return STK_OK;
}

/* The same from the start / end / shape arguments and their rel_ forms (DALI's rules:
 * start 0 and end the extent by default; rel_shape and shape extend the unrounded start). */
static stk_status slice_from_args(stk__node *node, stk__sample *s, const int axes[2], size_t na,
                                  int w, int h, double *b, double *e) {
  double v[2];
  for (size_t k = 0; k < na; k++) b[k] = 0, e[k] = axes[k] == 0 ? h : w;
  if (stk__arg_given(node, IS_START) || stk__arg_given(node, IS_REL_START)) {
    bool rel = stk__arg_given(node, IS_REL_START);
    STK_TRY(slice_arg_values(node, s, rel ? IS_REL_START : IS_START, na, v));
    for (size_t k = 0; k < na; k++) b[k] = rel ? v[k] * e[k] : v[k];
  }
  static const int end_args[] = {IS_END, IS_REL_END, IS_SHAPE, IS_REL_SHAPE};
  for (int j = 0; j < 4; j++) {
    if (!stk__arg_given(node, end_args[j])) continue;
    STK_TRY(slice_arg_values(node, s, end_args[j], na, v));
    for (size_t k = 0; k < na; k++) {
      double extent = axes[k] == 0 ? h : w;
      e[k] = end_args[j] == IS_END       ? v[k]
             : end_args[j] == IS_REL_END ? v[k] * extent
             : end_args[j] == IS_SHAPE   ? b[k] + v[k]
                                         : b[k] + v[k] * extent;
    }
  }
  return STK_OK;
}

/* DALI's slice window: start = round(anchor), end = round(anchor + shape) in pixels (half
 * away from zero), per axis of `axes`; the whole extent on the other axis. */
static stk_status image_slice_window(stk__node *node, stk__sample *s,
                                     const stk__tensor *const in[2], int w, int h,
                                     stk__crop_window *win) {
  int axes[2];
  size_t na;
  STK_TRY(slice_axes(node, axes, &na));
  double b[2], e[2];
  if (in[0] && in[1])
    STK_TRY(slice_from_inputs(node, s, in, axes, na, w, h, b, e));
  else
    STK_TRY(slice_from_args(node, s, axes, na, w, h, b, e));
  int64_t start[2] = {0, 0}, end[2] = {h, w}; /* [y, x] */
  for (size_t k = 0; k < na; k++) {
    start[axes[k]] = (int64_t)llround(b[k]);
    end[axes[k]] = (int64_t)llround(e[k]);
  }
  stk__rect r = {start[0], start[1], end[0] - start[0], end[1] - start[1]};
  return fit_window(node, s, &r, w, h, window_policy(node, IS_POLICY), win);
}

/* The argument combinations DALI accepts: inputs or arguments, one form of each. */
static stk_status image_slice_check_args(stk__node *node) {
  bool g[IS_COUNT_];
  for (int a = 0; a < IS_COUNT_; a++) g[a] = stk__arg_given(node, a);
  int ends = g[IS_END] + g[IS_REL_END] + g[IS_SHAPE] + g[IS_REL_SHAPE];
  bool any = g[IS_START] || g[IS_REL_START] || ends > 0;
  int inputs = stk__node_num_inputs(node);
  const char *msg = NULL;
  if (inputs == 2)
    msg = "give both the anchor and the shape inputs, or neither";
  else if (inputs == 3 && any)
    msg = "the anchor and shape inputs exclude the start/end/shape/rel_* arguments";
  else if (inputs == 1 && !any)
    msg = "give the window: anchor and shape inputs, or start/end/shape (or rel_*) arguments";
  else if (g[IS_START] && g[IS_REL_START])
    msg = "start and rel_start are mutually exclusive";
  else if (ends > 1)
    msg = "end, rel_end, shape and rel_shape are mutually exclusive";
  else if (g[IS_AXES] && g[IS_AXIS_NAMES])
    msg = "axes and axis_names are mutually exclusive";
  if (msg) return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL, "%s (as in DALI)", msg);
  int axes[2];
  size_t na;
  return slice_axes(node, axes, &na);
}

static stk_status image_slice_init(stk__node *node) {
  STK_TRY(mixed_init(node));
  STK_TRY(window_policy_check(node, IS_POLICY));
  return image_slice_check_args(node);
}

static stk_status image_slice_run(stk__node *node, stk__sample *s) {
  return decode_window(node, s, image_slice_window, IS_FILL);
}

static const stk_op_schema image_slice_schema = {
    .name = "decoders.image_slice",
    .doc =
        "Decodes only a window of each image (DALI's decoders.image_slice), given by the "
        "anchor and shape inputs (float: fractions of the extent by default; integer: "
        "pixels) or by the start / end / shape arguments and their rel_ forms, in the order "
        "of axes ([x, y] and [w, h] by default) or axis_names; start = round(anchor), end = "
        "round(anchor + shape) in pixels, half away from zero. E.g. from "
        "random_crop_generator: axes=[0, 1]. JPEGs decode just that window. Otherwise as "
        "decoders.image.",
    .devices = STK_DEVICE_CPU | STK_DEVICE_MIXED,
    .min_inputs = 1,
    .max_inputs = 3,
    .inputs = slice_in,
    .num_outputs = 1,
    .outputs = image_out,
    .num_args = IS_COUNT_,
    .args = image_slice_args,
    .gpu_check =
        "# atol=8 mismatch=0.05\n"
        "a = random.uniform(range=[0.0, 0.4], shape=[2])\n"
        "z = random.uniform(range=[0.3, 0.6], shape=[2])\n"
        "return decoders.image_slice(ENC, a, z, device=@)",
};
const stk__op_def stk__op_decoders_image_slice = {
    .schema = &image_slice_schema,
    .init = image_slice_init,
    .run_sample = image_slice_run,
    .run_gpu = window_run_mixed,
    .prepare = window_mixed_prepare,
    .prep_bytes = sizeof(mixed_record),
    .prep_release = mixed_release,
    .destroy = mixed_destroy,
};

/* The window of the running decoder: image_slice's takes the anchor and shape inputs
 * (its aliases share the schema's shape, not the definition's address). */
static window_fn window_of(const stk__node *node) {
  return stk__node_def(node)->schema->max_inputs == 3 ? image_slice_window : image_crop_window;
}

/* ---- the mixed device: nvJPEG into GPU memory, CPU decode + upload for the rest ---- */

/* One sample's decode in the mixed backend, planned on the host. */
typedef struct {
  const uint8_t *data;
  size_t size;
  const char *name;
  stk__decode_opts opts; /* the CPU decode, for fallbacks: same window, no DCT scaling */
  int out_h, out_w, channels;
  bool cpu;                        /* EXIF-rotated, a PNG the GPU does not take, ...: decoded on
                                      the CPU and uploaded */
  bool png_device;                 /* a PNG the GPU PNG decoder may take (planned below) */
  const stk_gpu_decode_class *cls; /* nvJPEG's verdict when prepared, else NULL */
  const uint8_t *pixels;           /* decoded in the CPU stage: only uploaded */
  const stk__png_plan *png;        /* set: decoded by the GPU PNG decoder (zlib stream after it) */
  const stk_jpeg_parsed *own;      /* parsed for stoker's own GPU decoder, which may take it */
  bool to_own;                     /* this batch gives it to that decoder */
  stk__png_plan *png_owned;        /* planned in the GPU stage (no record): freed after */
} mixed_sample;

/* gpu_decoder_load's two modes (any other negative value is refused). */
#define GPU_LOAD_AUTO     -1.0
#define GPU_LOAD_BALANCED -2.0

static stk_status mixed_init(stk__node *node) {
  if (stk__node_device(node) == STK_DEVICE_MIXED && dtype_arg(node) != STK_DTYPE_UINT8)
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "dtype \"%s\" is CPU-only: the mixed device decodes to uint8 (convert "
                      "after, e.g. with crop_mirror_normalize or cast on the GPU)",
                      stk__arg_string(node, A_DTYPE));
  double gpu_load = stk__arg_float(node, NULL, A_GPU_LOAD);
  if (gpu_load < 0 && gpu_load != GPU_LOAD_AUTO && gpu_load != GPU_LOAD_BALANCED)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "gpu_decoder_load %g: a share in [0, 1], -1 (automatic) or -2 (balanced)",
                      gpu_load);
  if (stk__arg_float(node, NULL, A_CPU_LOAD) < 0) stk__node_request_host_balance(node);
  if (stk__node_device(node) != STK_DEVICE_MIXED) return STK_OK;
  stk__jpeg_own *own = NULL;
  STK_TRY(stk__jpeg_own_create(&own));
  *stk__node_state(node) = own;
  return STK_OK;
}

static void mixed_destroy(stk__node *node) {
  stk__jpeg_own_destroy(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

/* The share of the JPEGs nvJPEG takes that go to stoker's own GPU decoder instead: 0 when
 * the backend lacks it; the automatic share (gpu_decoder_load -1) is all of them on a GPU
 * without hardware JPEG engines (2.35x nvJPEG's hybrid path there) and none beside the
 * engines (on the H100 it slowed them by about what it added: bench/RESULTS.md, and it
 * takes SM time from the training, so sharing with the engines is opt-in); the balanced
 * one (-2) is the node's balancer's current share (own_balance.h). */
static double own_decoder_share(stk__node *node) {
  stk__gpu *g = stk__node_gpu(node);
  if (!g || !g->api->supports(g->ctx, STK_GPU_K_JPEG_DECODE)) return 0;
  double load = stk__arg_float(node, NULL, A_GPU_LOAD);
  stk__jpeg_own *own = *stk__node_state(node);
  if (load == GPU_LOAD_BALANCED) return own ? stk__jpeg_own_balanced_share(own) : 0;
  return load >= 0 ? load : g->info.has_hw_decoder ? 0 : 1;
}

static bool own_balanced(stk__node *node) {
  return stk__arg_float(node, NULL, A_GPU_LOAD) == GPU_LOAD_BALANCED;
}

/* Whether the CPU stage parses for the own decoder: under the balancer always (batches
 * ahead of the one deciding, and a batch without it, share 0, is only every few). */
static bool own_may_take(stk__node *node) {
  stk__gpu *g = stk__node_gpu(node);
  if (own_balanced(node))
    return g && g->api->supports(g->ctx, STK_GPU_K_JPEG_DECODE) && *stk__node_state(node);
  return own_decoder_share(node) > 0;
}

static void mixed_release(stk__node *node, void *record) {
  (void)node;
  mixed_record *rec = record;
  stk__node_pool_free(rec->pixels);
  rec->pixels = NULL;
  stk__node_pool_free(rec->png);
  rec->png = NULL;
  stk__node_pool_free(rec->own);
  rec->own = NULL;
}

/* Whether position i of n is one of q picked evenly spread over the n positions. */
static bool spread_picks(int64_t i, int64_t q, int64_t n) { return (i + 1) * q / n > i * q / n; }

/* Whether sample s is one of the batch's host-decoded share: q of the n samples, spread
 * evenly over the batch's positions (workers take neighbouring samples, so the decoding
 * is spread over them too). */
static bool host_share_picks(stk__node *node, const stk__sample *s) {
  double load = stk__arg_float(node, NULL, A_CPU_LOAD);
  int64_t n = stk__node_batch_size(node), i = (int64_t)stk__sample_index(s);
  int64_t q = load >= 0 ? (int64_t)(load * (double)n + 0.5) : stk__node_host_decode_quota(node);
  if (q <= 0 || n <= 0) return false;
  return spread_picks(i, q, n);
}

static stk_status alloc_pool_pixels(void *ctx, int h, int w, int c, uint8_t **out) {
  *out = stk__node_pool_alloc(ctx, (size_t)h * (size_t)w * (size_t)c);
  return *out ? STK_OK
              : STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no host memory for a %dx%dx%d image", h, w, c);
}

/* Decodes the sample with the CPU decoder into a pool block kept in the record; the GPU
 * stage only uploads it. A failure is the sample's (under the bad-sample policy). */
static stk_status host_decode(stk__node *node, const mixed_sample *m, mixed_record *rec) {
  stk__decoded dec;
  stk_status st =
      stk__image_decode(m->data, m->size, m->name, &m->opts, alloc_pool_pixels, node, &dec);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  rec->pixels = dec.data;
  if (dec.h != m->out_h || dec.w != m->out_w || dec.c != m->channels)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: %s decoded to %dx%dx%d, planned %dx%dx%d",
                    stk__node_name(node), m->name, dec.h, dec.w, dec.c, m->out_h, m->out_w,
                    m->channels);
  return STK_OK;
}

/* Reads the header, draws the window (random crop: the same Philox draws as the CPU
 * operator), and decides where the sample is decoded. m->data, size and name are set. */
static stk_status mixed_plan(stk__node *node, stk__sample *s, window_fn window,
                             const stk__tensor *const in[2], mixed_sample *m) {
  base_opts(node, &m->opts);
  stk__image_info info;
  stk_status st = stk__image_peek(m->data, m->size, m->name, &info);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  int w = m->opts.ignore_orientation ? info.width : info.oriented_width;
  int h = m->opts.ignore_orientation ? info.height : info.oriented_height;
  if ((int64_t)info.width * info.height > m->opts.max_pixels)
    return STK_FAIL(STK_ERR_LIMIT, "%s: %s: %d x %d exceeds max_image_pixels (%lld)",
                    stk__node_name(node), m->name, info.width, info.height,
                    (long long)m->opts.max_pixels);
  /* nvJPEG decodes without this check: a truncated file is refused here, on every path. */
  if (info.format == STK__IMAGE_JPEG) {
    st = stk__jpeg_check_complete(m->data, m->size, m->name);
    if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  }
  m->out_w = w, m->out_h = h;
  if (window) {
    stk__crop_window win;
    STK_TRY(window(node, s, in, w, h, &win));
    m->opts.roi_x = win.x, m->opts.roi_y = win.y, m->opts.roi_w = win.w, m->opts.roi_h = win.h;
    m->out_w = win.w, m->out_h = win.h;
  }
  m->channels = m->opts.color == STK__COLOR_GRAY ? 1 : 3;
  bool rotated = !m->opts.ignore_orientation && info.orientation != 1;
  m->cpu = info.format != STK__IMAGE_JPEG || rotated || (info.channels != 1 && info.channels != 3);
  stk__gpu *g = stk__node_gpu(node);
  m->png_device = info.format == STK__IMAGE_PNG && !rotated && g &&
                  g->api->supports(g->ctx, STK_GPU_K_PNG_DECODE);
  return STK_OK;
}

/* The GPU PNG decoder's plan and zlib stream for a PNG it may take, in one block from
 * `alloc` (the host pool in the CPU stage, malloc in the GPU stage); NULL when the file
 * goes to the CPU decoder (the planner refused it: unusual chunks, a bad CRC, ...). */
static stk__png_plan *png_plan_block(const mixed_sample *m, void *(*alloc)(void *, size_t),
                                     void *alloc_ctx) {
  stk__png_plan plan;
  if (!stk__png_plan_file(m->data, m->size, &plan, NULL)) return NULL;
  stk__png_plan *block = alloc(alloc_ctx, sizeof plan + plan.zsize);
  if (!block) return NULL; /* the CPU decoder then; it reports a lack of memory itself */
  *block = plan;
  stk__png_gather_idat(m->data, m->size, (uint8_t *)(block + 1));
  return block;
}

static void *pool_alloc_fn(void *node, size_t bytes) { return stk__node_pool_alloc(node, bytes); }
static void *malloc_fn(void *unused, size_t bytes) {
  (void)unused;
  return malloc(bytes);
}

/* The CPU stage's part (on the workers, while the GPU stage runs earlier batches): the
 * plan, and either nvJPEG's header classification or, for the host-decoded share and
 * the files nvJPEG does not take, the decoded pixels. A bad header or, there, bad data
 * is the sample's failure here, so the bad-sample policy replaces it before the batch
 * reaches the GPU. */
static stk_status mixed_prepare(stk__node *node, stk__sample *s, void *record, window_fn window) {
  mixed_record *rec = record;
  char buf[48];
  mixed_sample m = {.name = sample_name(s, buf, sizeof buf)};
  STK_TRY(encoded_input(node, s, m.name, &m.data, &m.size));
  const stk__tensor *in[2] = {NULL, NULL};
  for (int k = 0; k < 2 && k + 1 < stk__node_num_inputs(node); k++) in[k] = stk__input(s, k + 1);
  STK_TRY(mixed_plan(node, s, window, in, &m));
  *rec = (mixed_record){true,         m.cpu,        false,        m.out_h,      m.out_w, m.channels,
                        m.opts.roi_x, m.opts.roi_y, m.opts.roi_w, m.opts.roi_h, {0}};
  stk__gpu *g = stk__node_gpu(node);
  if (m.png_device && !host_share_picks(node, s)) {
    rec->png = png_plan_block(&m, pool_alloc_fn, node);
    if (rec->png) {
      rec->cpu = false;
      return STK_OK;
    }
  }
  if (m.cpu || !g || !g->info.has_nvjpeg || host_share_picks(node, s)) {
    rec->cpu = true;
    return host_decode(node, &m, rec);
  }
  char err[STK_GPU_ERRLEN] = "";
  int rc = g->api->decode_classify(g->ctx, m.data, m.size, m.opts.roi_x, m.opts.roi_y, m.opts.roi_w,
                                   m.opts.roi_h, &rec->cls, err, sizeof err);
  if (rc != 0) return stk__gpu_op_check(node, rc, err);
  rec->classified = true;
  if (rec->cls.status == STK_GPU_DECODE_OK) {
    /* NULL when the own decoder does not take it: nvJPEG then decodes it */
    if (own_may_take(node)) rec->own = stk__jpeg_own_parse(node, m.data, m.size);
    return STK_OK;
  }
  /* nvJPEG refuses it (truncated, CMYK, a header it cannot read): decoded here, where a
   * corrupt file falls under the bad-sample policy (skipped and replaced) */
  rec->cpu = true;
  return host_decode(node, &m, rec);
}

static stk_status image_prepare(stk__node *node, stk__sample *s, void *record) {
  return mixed_prepare(node, s, record, NULL);
}
static stk_status crop_prepare(stk__node *node, stk__sample *s, void *record) {
  return mixed_prepare(node, s, record, random_window);
}

/* Sample i's plan in the GPU stage: the prepared record, else planned here. */
static stk_status mixed_plan_sample(stk__node *node, stk__gpu_batch *b, window_fn window,
                                    const stk_tensor_list *in, size_t i, mixed_sample *m, char *buf,
                                    size_t cap) {
  stk_tensor_desc d;
  STK_TRY(stk_tensor_list_sample(in, i, &d));
  if (d.dtype != STK_DTYPE_UINT8 || d.ndim != 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: encoded input must be a 1-D uint8 tensor",
                    stk__node_name(node));
  stk__sample *s = stk__gpu_sample(b, i);
  m->data = d.data;
  m->size = (size_t)d.shape[0];
  m->name = sample_name(s, buf, cap);
  const mixed_record *rec = stk__gpu_prep(b, i);
  if (!rec || !rec->ready) {
    stk__tensor views[2];
    const stk__tensor *extra[2] = {NULL, NULL};
    for (int k = 0; k < 2 && k + 1 < stk__node_num_inputs(node); k++) {
      stk_tensor_desc e;
      STK_TRY(stk_tensor_list_sample(stk__gpu_input(b, k + 1), i, &e));
      if (stk_tensor_list_storage(stk__gpu_input(b, k + 1)) == STK_STORAGE_DEVICE)
        return STK__SFAIL(STK_ERR_UNSUPPORTED, node, s,
                          "the anchor and shape must come from the CPU");
      views[k] = (stk__tensor){.data = e.data, .ndim = e.ndim, .dtype = e.dtype};
      memcpy(views[k].shape, e.shape, sizeof views[k].shape);
      extra[k] = &views[k];
    }
    STK_TRY(mixed_plan(node, s, window, extra, m));
    if (m->png_device) m->png = m->png_owned = png_plan_block(m, malloc_fn, NULL);
    if (m->png) m->cpu = false;
    return STK_OK;
  }
  base_opts(node, &m->opts);
  m->opts.roi_x = rec->roi_x, m->opts.roi_y = rec->roi_y, m->opts.roi_w = rec->roi_w,
  m->opts.roi_h = rec->roi_h;
  m->out_h = rec->out_h, m->out_w = rec->out_w, m->channels = rec->channels;
  m->cpu = rec->cpu;
  m->cls = rec->classified ? &rec->cls : NULL;
  m->pixels = rec->pixels;
  m->png = rec->png;
  m->own = rec->own;
  return STK_OK;
}

/* CPU decode of one sample into a host buffer, then a copy to its device slot. */
static stk_status mixed_cpu_decode(stk__node *node, stk__gpu_batch *b, mixed_sample *m, void *dst) {
  stk__decoded dec;
  stk_status st =
      stk__image_decode(m->data, m->size, m->name, &m->opts, stk__image_alloc_malloc, NULL, &dec);
  if (st == STK_OK && (dec.h != m->out_h || dec.w != m->out_w || dec.c != m->channels))
    st = STK_FAIL(STK_ERR_INTERNAL, "%s: %s decoded to %dx%dx%d, planned %dx%dx%d",
                  stk__node_name(node), m->name, dec.h, dec.w, dec.c, m->out_h, m->out_w,
                  m->channels);
  if (st == STK_OK) {
    stk__gpu *g = stk__gpu_device(b);
    char err[STK_GPU_ERRLEN] = "";
    size_t bytes = (size_t)dec.h * dec.w * dec.c;
    /* a pageable source: the copy has staged the bytes when the call returns */
    st = stk__gpu_op_check(
        node,
        g->api->memcpy_async(g->ctx, dst, dec.data, bytes, stk__gpu_stream(b), err, sizeof err),
        err);
  } else {
    stk__wrap(st, "%s", stk__node_name(node));
  }
  free(dec.data);
  return st;
}

/* Uploads the pixels the CPU stage decoded (page-locked pool blocks, kept by the job
 * until its GPU work has completed), before nvJPEG's call so that the copies run while
 * it decodes. */
static stk_status upload_host_decoded(stk__node *node, stk__gpu_batch *b, const mixed_sample *ms,
                                      stk_tensor_list *out) {
  size_t n = stk__gpu_batch_size(b);
  stk__gpu *g = stk__gpu_device(b);
  int64_t uploaded = 0;
  stk_status st = STK_OK;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    if (!ms[i].pixels) continue;
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    char err[STK_GPU_ERRLEN] = "";
    size_t bytes = (size_t)ms[i].out_h * (size_t)ms[i].out_w * (size_t)ms[i].channels;
    st = stk__gpu_op_check(node,
                           g->api->memcpy_async(g->ctx, d.data, ms[i].pixels, bytes,
                                                stk__gpu_stream(b), err, sizeof err),
                           err);
    uploaded += st == STK_OK;
  }
  stk__node_count_host_decoded(node, uploaded);
  return st;
}

/* The GPU PNG decoder for the planned PNGs; those whose data did not decode are marked
 * for the CPU decoder, which gives the verdict (a damaged file is an error there). */
static stk_status png_decode(stk__node *node, stk__gpu_batch *b, mixed_sample *ms,
                             stk_tensor_list *out) {
  size_t n = stk__gpu_batch_size(b);
  stk_gpu_png_sample *req = stk__calloc(n, sizeof *req, "PNG requests");
  int *status = stk__calloc(n, sizeof *status, "PNG results");
  int *index = stk__calloc(n, sizeof *index, "PNG index");
  stk_status st = req && status && index ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  int k = 0;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    if (!ms[i].png || ms[i].cpu) continue;
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    const stk__decode_opts *o = &ms[i].opts;
    req[k] = (stk_gpu_png_sample){.zdata = (const uint8_t *)(ms[i].png + 1),
                                  .zsize = ms[i].png->zsize,
                                  .hdr = ms[i].png->hdr,
                                  .roi_x = o->roi_x,
                                  .roi_y = o->roi_y,
                                  .roi_w = o->roi_w,
                                  .roi_h = o->roi_h,
                                  .dst = d.data,
                                  .dst_pitch = (size_t)ms[i].out_w * (size_t)ms[i].channels};
    index[k++] = (int)i;
  }
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  if (st == STK_OK && k > 0)
    st =
        stk__gpu_op_check(node,
                          stk_gpu_run_png_decode(g->api, g->ctx, k, req,
                                                 &(stk_gpu_png_args){(int)ms[0].opts.color, status},
                                                 stk__gpu_stream(b), err, sizeof err),
                          err);
  for (int j = 0; j < k && st == STK_OK; j++)
    if (status[j] != STK_GPU_DECODE_OK) ms[index[j]].cpu = true;
  free(req);
  free(status);
  free(index);
  return st;
}

/* Gives stoker's own GPU decoder its share of the batch's parsed JPEGs (spread evenly over
 * them) and queues their decoding on the batch's stream; *k: how many, *capable: how many
 * it could have taken. */
static stk_status own_launch(stk__node *node, stk__gpu_batch *b, mixed_sample *ms,
                             stk_tensor_list *out, int *k, int *capable_out) {
  *k = 0;
  stk__jpeg_own *own = *stk__node_state(node);
  size_t n = stk__gpu_batch_size(b);
  int capable = 0;
  for (size_t i = 0; i < n; i++) capable += ms[i].own && !ms[i].cpu && !ms[i].png;
  *capable_out = own ? capable : 0;
  if (!own || capable == 0) return STK_OK;
  double share = own_decoder_share(node);
  int take =
      own_balanced(node) ? stk__own_take_balanced(share, capable) : stk__own_take(share, capable);
  if (take == 0) return STK_OK;
  stk_gpu_jpeg_decode_sample *req = stk__calloc((size_t)take, sizeof *req, "own decoder requests");
  if (!req) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0, j = 0; i < n; i++) {
    if (!ms[i].own || ms[i].cpu || ms[i].png) continue;
    if (!spread_picks((int64_t)j++, take, capable)) continue;
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    const stk__decode_opts *o = &ms[i].opts;
    ms[i].to_own = true;
    req[(*k)++] =
        (stk_gpu_jpeg_decode_sample){.parsed = ms[i].own,
                                     .roi_x = o->roi_x,
                                     .roi_y = o->roi_y,
                                     .roi_w = o->roi_w,
                                     .roi_h = o->roi_h,
                                     .dst = d.data,
                                     .dst_pitch = (size_t)ms[i].out_w * (size_t)ms[i].channels};
  }
  stk_status st = stk__jpeg_own_launch(own, node, b, *k, req, (int)ms[0].opts.color);
  if (st != STK_OK) *k = 0;
  free(req);
  return st;
}

/* After nvJPEG's call: the own decoder's verdicts; a sample it could not decode goes to
 * the CPU decoder, which gives the verdict on corrupt data. *wait_s: how long this waited
 * for the own decoder (the balancer's measure); the diagnostics report the share this
 * batch had. */
static stk_status own_collect(stk__node *node, stk__gpu_batch *b, mixed_sample *ms, int k,
                              double *wait_s) {
  stk__jpeg_own *own = *stk__node_state(node);
  double share = own_decoder_share(node);
  int *status = stk__calloc((size_t)k, sizeof *status, "own decoder verdicts");
  int64_t t0 = stk__now_ns();
  stk_status st = status ? stk__jpeg_own_finish(own, node, b, k, status) : STK_ERR_OUT_OF_MEMORY;
  *wait_s = (double)(stk__now_ns() - t0) * 1e-9;
  int64_t decoded = 0;
  for (size_t i = 0, j = 0; st == STK_OK && i < stk__gpu_batch_size(b); i++) {
    if (!ms[i].to_own) continue;
    if (status[j++] == STK_GPU_DECODE_OK)
      decoded++;
    else
      ms[i].cpu = true;
  }
  if (st == STK_OK) stk__node_count_own_decoded(node, decoded, share);
  free(status);
  return st;
}

/* nvJPEG for the JPEGs it takes, and stoker's own GPU decoder for a share of them at the
 * same time; the CPU decoder for the rest and for the GPU decoders' failures (it gives
 * the verdict and the message on corrupt data). The samples decoded in the CPU stage are
 * only uploaded. */
static stk_status mixed_decode(stk__node *node, stk__gpu_batch *b, mixed_sample *ms,
                               stk_tensor_list *out) {
  STK_TRY(upload_host_decoded(node, b, ms, out));
  int k_own = 0;
  int own_capable = 0;
  STK_TRY(own_launch(node, b, ms, out, &k_own, &own_capable));
  size_t n = stk__gpu_batch_size(b);
  stk_gpu_decode_in *din = stk__calloc(n, sizeof *din, "decode requests");
  stk_gpu_decode_out *dout = stk__calloc(n, sizeof *dout, "decode results");
  int *index = stk__calloc(n, sizeof *index, "decode index");
  stk_status st = din && dout && index ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  int k = 0;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    if (ms[i].cpu || ms[i].png || ms[i].to_own) continue;
    const stk__decode_opts *o = &ms[i].opts;
    din[k] = (stk_gpu_decode_in){
        ms[i].data, ms[i].size, o->roi_x, o->roi_y,
        o->roi_w,   o->roi_h,   d.data,   (size_t)ms[i].out_w * (size_t)ms[i].channels,
        ms[i].cls};
    index[k++] = (int)i;
  }
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  /* the output list comes from the idle pool (mixed_run): the engines need not wait */
  stk_gpu_decode_opts opts = {.color = (int)ms[0].opts.color,
                              .hw_load = stk__arg_float(node, NULL, A_HW_LOAD),
                              .dst_idle = 1,
                              .device_padding = stk__arg_int(node, NULL, A_DEVICE_PADDING),
                              .host_padding = stk__arg_int(node, NULL, A_HOST_PADDING),
                              .prealloc_width = (int)stk__arg_int(node, NULL, A_PREALLOC_W),
                              .prealloc_height = (int)stk__arg_int(node, NULL, A_PREALLOC_H)};
  double engines_s = 0; /* the balancer's measure: the call's wall time on this thread */
  if (st == STK_OK && k > 0) {
    int64_t t0 = stk__now_ns();
    st = stk__gpu_op_check(
        node,
        g->api->decode_batch(g->ctx, k, din, dout, &opts, stk__gpu_stream(b), err, sizeof err),
        err);
    engines_s = st == STK_OK ? (double)(stk__now_ns() - t0) * 1e-9 : 0;
  }
  double own_wait_s = 0;
  if (k_own > 0) { /* collected whatever happened: the launch's objects are released */
    stk_status own_st = own_collect(node, b, ms, k_own, &own_wait_s);
    if (st == STK_OK) st = own_st;
  }
  /* the balancer (gpu_decoder_load -2) learns from every batch the own decoder could have
   * served: with it, or without it (a probe, or sitting out: the engines alone) */
  if (st == STK_OK && own_capable > 0 && own_balanced(node))
    stk__jpeg_own_balance(*stk__node_state(node), engines_s, own_wait_s, k + k_own);
  for (int j = 0; j < k && st == STK_OK; j++)
    if (dout[j].status != STK_GPU_DECODE_OK) ms[index[j]].cpu = true;
  if (st == STK_OK) st = png_decode(node, b, ms, out);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    if (!ms[i].cpu || ms[i].pixels) continue;
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    /* the CPU decoder's verdict; under on_error="skip" a bad sample is rejected (the
     * executor gives its place to another sample of the batch) instead of failing it */
    st = stk__gpu_reject_sample(b, i, mixed_cpu_decode(node, b, &ms[i], d.data));
  }
  free(din);
  free(dout);
  free(index);
  return st;
}

static stk_status mixed_run(stk__node *node, stk__gpu_batch *b, window_fn window) {
  size_t n = stk__gpu_batch_size(b);
  stk_tensor_list *in = stk__gpu_input(b, 0), *out = NULL;
  if (stk_tensor_list_storage(in) == STK_STORAGE_DEVICE)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: the mixed decoder reads encoded bytes from the CPU", stk__node_name(node));
  mixed_sample *ms = stk__calloc(n, sizeof *ms, "decode plans");
  int64_t *shapes = stk__calloc(3 * n, sizeof(int64_t), "shapes");
  char(*names)[48] = stk__calloc(n, 48, "sample names");
  stk_status st = ms && shapes && names ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    st = mixed_plan_sample(node, b, window, in, i, &ms[i], names[i], 48);
    shapes[3 * i] = ms[i].out_h, shapes[3 * i + 1] = ms[i].out_w,
               shapes[3 * i + 2] = ms[i].channels;
  }
  /* idle memory: nvJPEG's engines write it when called, whatever the stream says */
  if (st == STK_OK)
    st = stk__gpu_alloc_list_idle(b, STK_DTYPE_UINT8, 3, shapes, "HWC",
                                  stk__gpu_shapes_equal(shapes, n, 3), &out);
  if (st == STK_OK) st = mixed_decode(node, b, ms, out);
  for (size_t i = 0; ms && i < n; i++) free(ms[i].png_owned);
  free(ms);
  free(shapes);
  free(names);
  return stk__gpu_finish(b, NULL, false, out, st);
}

static stk_status image_run_mixed(stk__node *node, stk__gpu_batch *b) {
  return mixed_run(node, b, NULL);
}
static stk_status window_run_mixed(stk__node *node, stk__gpu_batch *b) {
  return mixed_run(node, b, window_of(node));
}
static stk_status window_mixed_prepare(stk__node *node, stk__sample *s, void *record) {
  return mixed_prepare(node, s, record, window_of(node));
}
static stk_status crop_run_mixed(stk__node *node, stk__gpu_batch *b) {
  return mixed_run(node, b, random_window);
}

/* ---- peek_image_shape ---- */

enum { P_DTYPE, P_ADJUST_ORIENTATION, P_IMAGE_TYPE, PEEK_ARGS_COUNT_ };
static const stk_arg_schema peek_args[] = {
    [P_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"int64\"",
                 .choices = "int32|int64|uint32|uint64|float32|float64|float|double",
                 .doc = "type of the output"},
    [P_ADJUST_ORIENTATION] = {.name = "adjust_orientation",
                              .type = STK_ARG_BOOL,
                              .default_text = "true",
                              .doc = "report the shape as displayed (EXIF orientation applied)"},
    [P_IMAGE_TYPE] = {.name = "image_type",
                      .type = STK_ARG_STRING,
                      .default_text = "\"RGB\"",
                      .choices = "RGB|BGR|YCbCr|GRAY|ANY_DATA",
                      .doc = "the colour format the image would be decoded to, which sets C: 3 "
                             "for RGB, BGR and YCbCr, 1 for GRAY, the file's own channel count "
                             "for ANY_DATA (as DALI)"},
};
STK__CHECK_ARGS(peek_args, PEEK_ARGS_COUNT_);
static const stk_port_schema shape_out[] = {
    {"shape", "[H, W, C]: height, width and the channels of image_type"}};

static void store_dim(void *data, stk_dtype dtype, int i, int64_t v) {
  switch (dtype) {
    case STK_DTYPE_INT32:
      ((int32_t *)data)[i] = (int32_t)v;
      break;
    case STK_DTYPE_UINT32:
      ((uint32_t *)data)[i] = (uint32_t)v;
      break;
    case STK_DTYPE_UINT64:
      ((uint64_t *)data)[i] = (uint64_t)v;
      break;
    case STK_DTYPE_FLOAT32:
      ((float *)data)[i] = (float)v;
      break;
    case STK_DTYPE_FLOAT64:
      ((double *)data)[i] = (double)v;
      break;
    default:
      ((int64_t *)data)[i] = v;
      break;
  }
}

static stk_status peek_run(stk__node *node, stk__sample *s) {
  char buf[48];
  const char *nm = sample_name(s, buf, sizeof buf);
  const uint8_t *data;
  size_t size;
  STK_TRY(encoded_input(node, s, nm, &data, &size));
  stk__image_info info;
  stk_status st = stk__image_peek(data, size, nm, &info);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  bool oriented = stk__arg_bool(node, NULL, P_ADJUST_ORIENTATION);
  stk_dtype dtype = stk__dtype_arg(stk__arg_string(node, P_DTYPE));
  int64_t shape[1] = {3};
  stk__tensor *t;
  STK_TRY(stk__output(s, 0, dtype, 1, shape, NULL, &t));
  store_dim(t->data, dtype, 0, oriented ? info.oriented_height : info.height);
  store_dim(t->data, dtype, 1, oriented ? info.oriented_width : info.width);
  const char *it = stk__arg_string(node, P_IMAGE_TYPE);
  int64_t c = strcmp(it, "ANY_DATA") == 0 ? info.channels : strcmp(it, "GRAY") == 0 ? 1 : 3;
  store_dim(t->data, dtype, 2, c);
  return STK_OK;
}

static const stk_op_schema peek_schema = {
    .name = "peek_image_shape",
    .doc =
        "The shape [H, W, C] of each encoded image, read from its header without decoding "
        "(DALI's peek_image_shape: C follows image_type, 3 by default).",
    .devices = STK_DEVICE_CPU,
    .flags = 0,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = encoded_in,
    .num_outputs = 1,
    .outputs = shape_out,
    .num_args = sizeof peek_args / sizeof peek_args[0],
    .args = peek_args,
};
const stk__op_def stk__op_peek_image_shape = {
    .schema = &peek_schema,
    .run_sample = peek_run,
};
