/* decoders.video and experimental.decoders.video (DALI's): encoded video bytes in,
 * frames out ([F, H, W, 3] uint8 RGB), through FFmpeg on the CPU. Also the frame
 * selection, padding and output code the video readers share (video_util.h). */
#include <stdlib.h>
#include <string.h>

#include "../shared/audio_math.h" /* stk_reflect_index */
#include "image_util.h"
#include "video_gpu.h"
#include "video_util.h"

stk__vpad stk__vpad_parse(const char *m) {
  if (strcmp(m, "constant") == 0) return STK__VPAD_CONSTANT;
  if (strcmp(m, "edge") == 0 || strcmp(m, "repeat") == 0) return STK__VPAD_EDGE;
  if (strcmp(m, "reflect_1001") == 0 || strcmp(m, "symmetric") == 0) return STK__VPAD_REFLECT_1001;
  if (strcmp(m, "reflect_101") == 0 || strcmp(m, "reflect") == 0) return STK__VPAD_REFLECT_101;
  return STK__VPAD_NONE;
}

int64_t stk__vpad_index(stk__vpad p, int64_t j, int64_t n) {
  if (j < n) return j;
  switch (p) {
    case STK__VPAD_EDGE:
      return n - 1;
    case STK__VPAD_REFLECT_1001: {
      int64_t k = j % (2 * n);
      return k < n ? k : 2 * n - 1 - k;
    }
    case STK__VPAD_REFLECT_101:
      return stk_reflect_index(j, n);
    default:
      return -1;
  }
}

/* Fills frame f of out with the fill values (uint8 range). */
static void fill_frame(uint8_t *frame, size_t pixels, const stk__video_out *o) {
  for (size_t p = 0; p < pixels; p++)
    for (int c = 0; c < 3; c++) {
      double v = o->nfill == 0 ? 0.0 : o->fill[o->nfill == 3 ? (size_t)c : 0];
      frame[p * 3 + (size_t)c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

stk_status stk__video_emit(stk__node *node, stk__sample *s, stk__video *v, const int64_t *idx,
                           int64_t count, const stk__video_out *o, int index) {
  int64_t h = o->out_h > 0 ? o->out_h : stk__video_height(v);
  int64_t w = o->out_w > 0 ? o->out_w : stk__video_width(v);
  if (count * h * w > stk__node_max_pixels(node) && stk__node_max_pixels(node) > 0)
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "%lld frames of %lldx%lld exceed max_image_pixels",
                      (long long)count, (long long)w, (long long)h);
  int64_t shape[4] = {count, h, w, 3};
  stk__tensor *out;
  STK_TRY(stk__output(s, index, o->dtype, 4, shape, "FHWC", &out));
  size_t fb = (size_t)(h * w * 3), n = (size_t)count;
  uint8_t *rgb = o->dtype == STK_DTYPE_UINT8 ? out->data : stk__scratch(s, fb * n + 1);
  int64_t *want = stk__scratch(s, sizeof(int64_t) * (n + 1));
  int64_t *slot = stk__scratch(s, sizeof(int64_t) * (n + 1));
  if (!rgb || !want || !slot) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch");
  uint8_t *packed = stk__scratch(s, fb * n + 1); /* decoded frames, then spread to slots */
  if (!packed) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch");
  int64_t m = 0;
  for (int64_t i = 0; i < count; i++) {
    if (idx[i] >= 0)
      want[m] = idx[i], slot[m++] = i;
    else
      fill_frame(rgb + (size_t)i * fb, fb / 3, o);
  }
  stk_status st = stk__video_read(v, want, m, (int)w, (int)h, packed);
  if (st != STK_OK) return stk__sample_wrap(st, node, s);
  for (int64_t k = 0; k < m; k++) memcpy(rgb + (size_t)slot[k] * fb, packed + (size_t)k * fb, fb);
  if (o->dtype != STK_DTYPE_UINT8) {
    float *f = out->data, scale = o->normalized ? 1.0f / 255.0f : 1.0f;
    for (size_t i = 0; i < fb * n; i++) f[i] = rgb[i] * scale;
  }
  return STK_OK;
}

/* ---- decoders.video ---- */
enum {
  A_FRAMES,
  A_START,
  A_SEQ_LEN,
  A_STRIDE,
  A_END,
  A_PAD_MODE,
  A_FILL,
  A_AFFINE,
  A_BUILD_INDEX,
  A_COUNT_
};
static const stk_arg_schema vd_args[] = {
    [A_FRAMES] = {.name = "frames",
                  .type = STK_ARG_INTS,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .doc = "the frames to decode, any order, repeats allowed (excludes "
                         "start_frame, sequence_length, stride, end_frame)"},
    [A_START] = {.name = "start_frame",
                 .type = STK_ARG_INT,
                 .flags = STK_ARGF_PER_SAMPLE,
                 .default_text = "0",
                 .doc = "the first frame"},
    [A_SEQ_LEN] = {.name = "sequence_length",
                   .type = STK_ARG_INT,
                   .flags = STK_ARGF_PER_SAMPLE,
                   .doc = "frames to return (padded past the end as pad_mode says); excludes "
                          "end_frame; absent with end_frame absent: to the end"},
    [A_STRIDE] = {.name = "stride",
                  .type = STK_ARG_INT,
                  .flags = STK_ARGF_PER_SAMPLE,
                  .default_text = "1",
                  .doc = "distance between returned frames"},
    [A_END] = {.name = "end_frame",
               .type = STK_ARG_INT,
               .flags = STK_ARGF_PER_SAMPLE,
               .doc = "the frame after the last (exclusive); excludes sequence_length"},
    [A_PAD_MODE] = {.name = "pad_mode",
                    .type = STK_ARG_STRING,
                    .default_text = "\"constant\"",
                    .choices = STK__VPAD_CHOICES,
                    .doc = "frames past the end: none (shorter output), constant (fill_value), "
                           "edge/repeat (the last frame), reflect_1001/symmetric (ABC -> "
                           "ABCCBA), reflect_101/reflect (ABC -> ABCBA)"},
    [A_FILL] = {.name = "fill_value",
                .type = STK_ARG_FLOATS,
                .default_text = "[0]",
                .doc = "constant padding: one value, or one per channel (0..255)"},
    [A_AFFINE] = {.name = "affine",
                  .type = STK_ARG_BOOL,
                  .default_text = "true",
                  .doc = "Accepted for DALI compatibility (mixed backend's thread pinning); "
                         "no effect"},
    [A_BUILD_INDEX] = {.name = "build_index",
                       .type = STK_ARG_BOOL,
                       .default_text = "true",
                       .doc = "Accepted for DALI compatibility; frames are always found by "
                              "decoding from the start"},
};
STK__CHECK_ARGS(vd_args, A_COUNT_);

static const stk_port_schema vd_in[] = {{"input", "an encoded video file's bytes (1-D uint8)"}};
static const stk_port_schema vd_out[] = {{"output", "the frames, [F, H, W, 3] uint8 RGB (FHWC)"}};

static stk_status vd_init(stk__node *node) {
  if (!stk__video_codec_available())
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "built without FFmpeg (install libavformat-dev, libavcodec-dev and "
                      "libswscale-dev and rebuild)");
  bool frames = stk__arg_given(node, A_FRAMES);
  if (frames && (stk__arg_given(node, A_START) || stk__arg_given(node, A_SEQ_LEN) ||
                 stk__arg_given(node, A_STRIDE) || stk__arg_given(node, A_END)))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "frames excludes start_frame, sequence_length, stride and end_frame");
  if (stk__arg_given(node, A_SEQ_LEN) && stk__arg_given(node, A_END))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                      "give sequence_length or end_frame, not both");
  if (stk__node_device(node) == STK_DEVICE_MIXED)
    stk__video_cuda_align_early(stk__node_device_id(node));
  return STK_OK;
}

/* The mixed form's NVDEC, once the pipeline's device is open: no driver or no
 * CUDA-enabled FFmpeg fails the build here. */
static stk_status vd_device_ready(stk__node *node) {
  stk__video_hw *hw;
  STK_TRY(stk__vgpu_open(node, &hw));
  *stk__node_state(node) = hw;
  return STK_OK;
}

static void vd_destroy(stk__node *node) {
  stk__video_hw_close(*stk__node_state(node));
  *stk__node_state(node) = NULL;
}

/* The frame list of this sample (-1: filled) into scratch; *count entries. */
static stk_status vd_plan(stk__node *node, stk__sample *s, int64_t n, int64_t **out,
                          int64_t *count) {
  if (stk__arg_given(node, A_FRAMES)) {
    const int64_t *f;
    size_t k = stk__arg_ints(node, s, A_FRAMES, &f);
    *out = stk__scratch(s, sizeof(int64_t) * (k + 1));
    if (!*out) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch");
    for (size_t i = 0; i < k; i++) {
      if (f[i] < 0 || f[i] >= n)
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                          "frames[%zu] = %lld is outside the video's %lld frames", i,
                          (long long)f[i], (long long)n);
      (*out)[i] = f[i];
    }
    *count = (int64_t)k;
    return STK_OK;
  }
  int64_t start = stk__arg_int(node, s, A_START), stride = stk__arg_int(node, s, A_STRIDE);
  if (start < 0 || stride < 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                      "needs start_frame >= 0 and stride >= 1; got %lld and %lld", (long long)start,
                      (long long)stride);
  int64_t len;
  if (stk__arg_given(node, A_SEQ_LEN))
    len = stk__arg_int(node, s, A_SEQ_LEN);
  else {
    int64_t end = stk__arg_given(node, A_END) ? stk__arg_int(node, s, A_END) : n;
    len = end > start ? (end - start + stride - 1) / stride : 0;
  }
  if (len < 0 || len > (1 << 24))
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "sequence_length = %lld is out of range",
                      (long long)len);
  stk__vpad pad = stk__vpad_parse(stk__arg_string(node, A_PAD_MODE));
  *out = stk__scratch(s, sizeof(int64_t) * (size_t)(len + 1));
  if (!*out) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch");
  *count = 0;
  for (int64_t i = 0; i < len; i++) {
    int64_t j = start + i * stride;
    if (j >= n && pad == STK__VPAD_NONE) break;
    (*out)[(*count)++] = stk__vpad_index(pad, j, n);
  }
  return STK_OK;
}

/* Opens the sample's video and plans its frames (idx, count) and output (o). On success
 * the caller closes *v. */
static stk_status vd_open_plan(stk__node *node, stk__sample *s, stk__video **v, int64_t **idx,
                               int64_t *count, stk__video_out *o) {
  const stk__tensor *in = stk__input(s, 0);
  if (in->dtype != STK_DTYPE_UINT8 || in->ndim != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "needs encoded bytes (1-D uint8)");
  stk_status st = stk__video_open(in->data, (size_t)in->shape[0], NULL, v);
  if (st != STK_OK) return stk__sample_wrap(st, node, s);
  *idx = NULL, *count = 0;
  st = stk__video_frames(*v) > 0 ? vd_plan(node, s, stk__video_frames(*v), idx, count)
                                 : STK__SFAIL(STK_ERR_DECODE, node, s, "the video has no frames");
  *o = (stk__video_out){STK_DTYPE_UINT8, false, NULL, 0, 0, 0};
  o->nfill = stk__arg_floats(node, s, A_FILL, &o->fill);
  if (st == STK_OK && o->nfill != 1 && o->nfill != 3)
    st = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "fill_value needs 1 or 3 values; got %zu",
                    o->nfill);
  if (st != STK_OK) {
    stk__video_close(*v);
    *v = NULL;
  }
  return st;
}

static stk_status vd_run(stk__node *node, stk__sample *s) {
  stk__video *v;
  int64_t *idx, count;
  stk__video_out o;
  STK_TRY(vd_open_plan(node, s, &v, &idx, &count, &o));
  stk_status st = stk__video_emit(node, s, v, idx, count, &o, 0);
  stk__video_close(v);
  return st;
}

/* device="mixed": the frames are decoded with NVDEC here, on the CPU stage's workers (one
 * sample each, so several videos decode at once on the GPU's engines); the GPU stage
 * converts them into the batch (stk__vgpu_run). */
static stk_status vd_prepare(stk__node *node, stk__sample *s, void *record) {
  stk__video *v;
  int64_t *idx, count;
  stk__video_out o;
  STK_TRY(vd_open_plan(node, s, &v, &idx, &count, &o));
  stk_status st = stk__vgpu_decode(node, s, *stk__node_state(node), v, idx, count, &o, record);
  stk__video_close(v);
  return st;
}

#define VD_DOC                                                                               \
  "Decodes video files from memory (any container and codec the installed FFmpeg reads: "    \
  "MP4, MKV, WebM, AVI; H.264, HEVC, VP8/9, AV1, MPEG-4, ...) on the CPU into RGB frames: "  \
  "all, a strided sequence from start_frame (padded past the end as pad_mode says), or "     \
  "the listed frames. device=\"mixed\": decoded by the GPU's NVDEC engines (through "        \
  "FFmpeg's CUDA hwaccel: H.264, HEVC, ... as the GPU and FFmpeg support) and converted to " \
  "RGB on the GPU; see docs/video.md for the tolerance against the CPU."

static const stk_op_schema vd_schema = {
    .name = "decoders.video",
    .doc = VD_DOC,
    .devices = STK_DEVICE_CPU | STK_DEVICE_MIXED,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = vd_in,
    .num_outputs = 1,
    .outputs = vd_out,
    .num_args = A_COUNT_,
    .args = vd_args,
};
/* No gpu_check: the parity harness feeds photos, not videos; the mixed backend is
 * compared with the CPU one in tests/python/test_video_gpu.py. */
#define VD_DEF(var, sch)                      \
  const stk__op_def var = {                   \
      .schema = &sch,                         \
      .init = vd_init,                        \
      .destroy = vd_destroy,                  \
      .run_sample = vd_run,                   \
      .run_gpu = stk__vgpu_run,               \
      .prepare = vd_prepare,                  \
      .prep_bytes = sizeof(stk__vgpu_record), \
      .prep_release = stk__vgpu_release,      \
      .device_ready = vd_device_ready,        \
  }
VD_DEF(stk__op_decoders_video, vd_schema);

static const stk_op_schema vd_exp_schema = {
    .name = "experimental.decoders.video",
    .doc = VD_DOC " (DALI's experimental name; the same operator as decoders.video.)",
    .devices = STK_DEVICE_CPU | STK_DEVICE_MIXED,
    .min_inputs = 1,
    .max_inputs = 1,
    .inputs = vd_in,
    .num_outputs = 1,
    .outputs = vd_out,
    .num_args = A_COUNT_,
    .args = vd_args,
};
VD_DEF(stk__op_experimental_decoders_video, vd_exp_schema);
