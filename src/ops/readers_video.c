/* readers.video, experimental.readers.video and readers.video_resize (DALI's), on the
 * CPU through FFmpeg. At build time every file is opened once to count its frames;
 * each sample is a sequence of sequence_length frames, `stride` apart, starting every
 * `step` frames of a file. The sampler (shards, shuffling) works over the sequences; a
 * worker decodes the sequence's frames. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/file_list.h"
#include "image_util.h"
#include "reader_common.h"
#include "video_gpu.h"
#include "video_util.h"

enum {
  A_FILENAMES,
  A_LABELS,
  A_FILE_ROOT,
  A_FILE_LIST,
  A_SEQ_LEN,
  A_STEP,
  A_STRIDE,
  A_FILE_LIST_FRAME_NUM,
  A_FILE_LIST_FORMAT,
  A_FILE_LIST_INCLUDE_PRECEDING,
  A_ENABLE_FRAME_NUM,
  A_ENABLE_TIMESTAMPS,
  A_PAD_SEQUENCES,
  A_PAD_MODE,
  A_FILL_VALUE,
  A_DTYPE,
  A_NORMALIZED,
  A_CHANNELS,
  A_IMAGE_TYPE,
  A_SKIP_VFR_CHECK,
  A_RESIZE_X,
  A_RESIZE_Y,
  A_DECODE_SURFACES,
  A_SIZE,
  A_RESIZE_SHORTER,
  A_RESIZE_LONGER,
  A_MODE,
  A_MAX_SIZE,
  A_MINIBATCH,
  A_TEMP_BUFFER,
  A_COMMON,
  A_COUNT_ = A_COMMON + STK__RA_COUNT
};

static const stk_arg_schema video_args[] = {
    [A_FILENAMES] = {.name = "filenames",
                     .type = STK_ARG_STRINGS,
                     .doc = "the video files (excludes file_root and file_list)"},
    [A_LABELS] = {.name = "labels",
                  .type = STK_ARG_INTS,
                  .doc = "labels of `filenames`, one per file; an empty list: 0, 1, ...; "
                         "absent: no label output"},
    [A_FILE_ROOT] = {.name = "file_root",
                     .type = STK_ARG_STRING,
                     .doc = "a directory with one sub-directory per class (sorted by name, "
                            "labelled by index) holding video files"},
    [A_FILE_LIST] = {.name = "file_list",
                     .type = STK_ARG_STRING,
                     .doc = "a text file of \"path label [start [end]]\" lines; start and end "
                            "limit the frames read (timestamps in seconds, or frame numbers "
                            "with file_list_frame_num / file_list_format=\"frames\"; negative "
                            "frame numbers count from the end; end exclusive)"},
    [A_SEQ_LEN] = {.name = "sequence_length",
                   .type = STK_ARG_INT,
                   .flags = STK_ARGF_REQUIRED | STK_ARGF_RANGE,
                   .min = 1,
                   .max = 1 << 20,
                   .doc = "frames per sample"},
    [A_STEP] = {.name = "step",
                .type = STK_ARG_INT,
                .default_text = "-1",
                .doc = "frames between the starts of consecutive sequences; < 0: "
                       "sequence_length"},
    [A_STRIDE] = {.name = "stride",
                  .type = STK_ARG_INT,
                  .flags = STK_ARGF_RANGE,
                  .default_text = "1",
                  .min = 1,
                  .max = 1 << 20,
                  .doc = "frames between the frames of a sequence"},
    [A_FILE_LIST_FRAME_NUM] = {.name = "file_list_frame_num",
                               .type = STK_ARG_BOOL,
                               .default_text = "false",
                               .doc = "file_list's start and end are frame numbers"},
    [A_FILE_LIST_FORMAT] = {.name = "file_list_format",
                            .type = STK_ARG_STRING,
                            .default_text = "\"timestamps\"",
                            .choices = "timestamps|frames",
                            .doc = "file_list's start and end: seconds or frame numbers"},
    [A_FILE_LIST_INCLUDE_PRECEDING] = {.name = "file_list_include_preceding_frame",
                                       .type = STK_ARG_BOOL,
                                       .default_text = "false",
                                       .doc = "timestamps: the start frame is "
                                              "floor(start * fps) instead of ceil"},
    [A_ENABLE_FRAME_NUM] = {.name = "enable_frame_num",
                            .type = STK_ARG_STRING,
                            .default_text = "\"none\"",
                            .choices = "none|scalar|sequence",
                            .doc = "an output of frame numbers: the first frame's (int32 [1], "
                                   "scalar; Python True) or every frame's ([F], -1 for "
                                   "padding)"},
    [A_ENABLE_TIMESTAMPS] = {.name = "enable_timestamps",
                             .type = STK_ARG_BOOL,
                             .default_text = "false",
                             .doc = "an output of each frame's time in seconds (float32 [F], "
                                    "-1 for padding)"},
    [A_PAD_SEQUENCES] = {.name = "pad_sequences",
                         .type = STK_ARG_BOOL,
                         .default_text = "false",
                         .doc = "also emit the incomplete last sequences of each file, padded "
                                "with black frames (pad_mode=\"constant\")"},
    [A_PAD_MODE] = {.name = "pad_mode",
                    .type = STK_ARG_STRING,
                    .default_text = "\"none\"",
                    .choices = STK__VPAD_CHOICES,
                    .doc = "none: only whole sequences; otherwise incomplete last sequences "
                           "too, padded as decoders.video's pad_mode says"},
    [A_FILL_VALUE] = {.name = "fill_value",
                      .type = STK_ARG_FLOATS,
                      .default_text = "[0]",
                      .doc = "constant padding: one value, or one per channel"},
    [A_DTYPE] = {.name = "dtype",
                 .type = STK_ARG_STRING,
                 .default_text = "\"uint8\"",
                 .choices = "uint8|float|float32",
                 .doc = "output type"},
    [A_NORMALIZED] = {.name = "normalized",
                      .type = STK_ARG_BOOL,
                      .default_text = "false",
                      .doc = "float output in [0, 1] (divided by 255)"},
    [A_CHANNELS] = {.name = "channels",
                    .type = STK_ARG_INT,
                    .flags = STK_ARGF_RANGE,
                    .default_text = "3",
                    .min = 3,
                    .max = 3,
                    .doc = "channels of the output (3: RGB)"},
    [A_IMAGE_TYPE] = {.name = "image_type",
                      .type = STK_ARG_STRING,
                      .default_text = "\"RGB\"",
                      .choices = "RGB",
                      .doc = "colour space of the output"},
    [A_SKIP_VFR_CHECK] = {.name = "skip_vfr_check",
                          .type = STK_ARG_BOOL,
                          .default_text = "false",
                          .doc = STK__READER_COMPAT " (frames are counted, not timed)"},
    [A_RESIZE_X] = {.name = "resize_x",
                    .type = STK_ARG_INT,
                    .default_text = "0",
                    .doc = "readers.video_resize: output width (0: keep the aspect ratio "
                           "from resize_y, or the video's)"},
    [A_RESIZE_Y] = {.name = "resize_y",
                    .type = STK_ARG_INT,
                    .default_text = "0",
                    .doc = "readers.video_resize: output height (0: keep the aspect ratio "
                           "from resize_x, or the video's)"},
    [A_DECODE_SURFACES] = {.name = "additional_decode_surfaces",
                           .type = STK_ARG_INT,
                           .default_text = "2",
                           .doc = "DALI's NVDEC surface count: accepted, no effect (on the "
                                  "GPU, FFmpeg sizes NVDEC's surfaces itself)"},
    [A_SIZE] = {.name = "size",
                .type = STK_ARG_FLOATS,
                .doc = "readers.video_resize: output size [H, W] (one value: both; a 0 extent "
                       "follows `mode`), with resize's rules (excludes resize_x / resize_y)"},
    [A_RESIZE_SHORTER] = {.name = "resize_shorter",
                          .type = STK_ARG_FLOAT,
                          .doc = "readers.video_resize: the shorter side's length, aspect kept "
                                 "(as resize's)"},
    [A_RESIZE_LONGER] = {.name = "resize_longer",
                         .type = STK_ARG_FLOAT,
                         .doc = "readers.video_resize: the longer side's length, aspect kept"},
    [A_MODE] = {.name = "mode",
                .type = STK_ARG_STRING,
                .default_text = "\"default\"",
                .choices = STK__RESIZE_MODE_CHOICES,
                .doc = "readers.video_resize: resize's modes for size / resize_x / resize_y"},
    [A_MAX_SIZE] = {.name = "max_size",
                    .type = STK_ARG_FLOATS,
                    .doc = "readers.video_resize: limit of the output size [H, W], as resize's"},
    [A_MINIBATCH] = STK__RESAMPLE_MINIBATCH_ARG,
    [A_TEMP_BUFFER] = STK__RESAMPLE_TEMP_BUFFER_ARG,
    [A_COMMON] = STK__READER_COMMON_ARGS,
};
STK__CHECK_ARGS(video_args, A_COUNT_);

static const stk_port_schema video_outputs[] = {
    {"video, [label], [frame_num], [timestamps]",
     "the sequence, [F, H, W, 3] (FHWC); then the label (int32 [1]) when labels, file_root "
     "or file_list is given, frame numbers with enable_frame_num, times with "
     "enable_timestamps"}};

typedef struct {
  char *path;
  int32_t label;
  int64_t frames;
  double fps;
  int width, height;
  int64_t begin, end; /* the frames read: [begin, end) */
} vfile;

typedef struct {
  int32_t file;
  int64_t first;
} vseq;

typedef struct {
  stk__reader_base base; /* first: the shared reader hooks reach the sampler through it */
  vfile *files;
  int64_t nfiles;
  vseq *seqs;
  int64_t nseqs;
  int64_t len, step, stride;
  stk__vpad pad;
  stk__video_hw *hw; /* device="gpu": NVDEC */
} vstate;

static void video_destroy(stk__node *node) {
  vstate *r = *stk__node_state(node);
  if (!r) return;
  for (int64_t i = 0; i < r->nfiles; i++) free(r->files[i].path);
  free(r->files);
  free(r->seqs);
  stk__video_hw_close(r->hw);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

static stk_status add_file(stk__node *node, vstate *r, const char *path, int32_t label) {
  vfile *f = realloc(r->files, sizeof *f * (size_t)(r->nfiles + 1));
  if (!f) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory", stk__node_name(node));
  r->files = f;
  f = &r->files[r->nfiles];
  *f = (vfile){.path = strdup(path), .label = label, .begin = 0, .end = INT64_MAX};
  if (!f->path) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory", stk__node_name(node));
  r->nfiles++;
  return STK_OK;
}

static stk_status from_filenames(stk__node *node, vstate *r) {
  const char *const *paths;
  const int64_t *labels = NULL;
  size_t n = stk__arg_strings(node, A_FILENAMES, &paths), nl = 0;
  if (stk__arg_given(node, A_LABELS)) nl = stk__arg_ints(node, NULL, A_LABELS, &labels);
  if (nl != 0 && nl != n)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: %zu filenames but %zu labels",
                    stk__node_name(node), n, nl);
  for (size_t i = 0; i < n; i++)
    STK_TRY(add_file(node, r, paths[i], nl ? (int32_t)labels[i] : (int32_t)i));
  return STK_OK;
}

static const char *const video_filters[] = {"*.mp4", "*.mkv", "*.webm", "*.avi", "*.mov",
                                            "*.m4v", "*.mpg", "*.mpeg", "*.ogv", "*.flv"};

static stk_status from_root(stk__node *node, vstate *r) {
  stk__file_list fl = {0};
  STK_TRY(stk__file_list_scan(&fl, stk__arg_string(node, A_FILE_ROOT), video_filters,
                              sizeof video_filters / sizeof *video_filters, false));
  stk_status st = STK_OK;
  for (int64_t i = 0; i < fl.count && st == STK_OK; i++)
    st = add_file(node, r, fl.paths[i], fl.labels[i]);
  stk__file_list_free(&fl);
  return st;
}

/* One "path label [start [end]]" line; start/end stored in the file as given (resolved to
 * frames once the file's frame count and rate are known). */
static stk_status list_line(stk__node *node, vstate *r, char *line, const char *list,
                            int64_t lineno, double *range) {
  char *tok[4], *save = NULL;
  int n = 0;
  for (char *t = strtok_r(line, " \t\r\n", &save); t && n < 4; t = strtok_r(NULL, " \t\r\n", &save))
    tok[n++] = t;
  if (n == 0 || tok[0][0] == '#') return STK_OK;
  char *end;
  long label = n > 1 ? strtol(tok[1], &end, 10) : 0;
  range[0] = n > 2 ? strtod(tok[2], NULL) : NAN;
  range[1] = n > 3 ? strtod(tok[3], NULL) : NAN;
  if (n < 2 || *end)
    return STK_FAIL(STK_ERR_PARSE, "%s: %s line %lld: needs \"path label [start [end]]\"",
                    stk__node_name(node), list, (long long)lineno);
  char path[4096];
  const char *slash = strrchr(list, '/');
  if (tok[0][0] != '/' && slash)
    snprintf(path, sizeof path, "%.*s/%s", (int)(slash - list), list, tok[0]);
  else
    snprintf(path, sizeof path, "%s", tok[0]);
  return add_file(node, r, path, (int32_t)label);
}

static stk_status from_list(stk__node *node, vstate *r, double **ranges) {
  const char *list = stk__arg_string(node, A_FILE_LIST);
  FILE *f = fopen(list, "r");
  if (!f)
    return STK_FAIL(STK_ERR_NOT_FOUND, "%s: cannot open file_list '%s'", stk__node_name(node),
                    list);
  char *line = NULL;
  size_t cap = 0;
  int64_t lineno = 0;
  stk_status st = STK_OK;
  while (st == STK_OK && getline(&line, &cap, f) >= 0) {
    double range[2];
    int64_t before = r->nfiles;
    st = list_line(node, r, line, list, ++lineno, range);
    if (st == STK_OK && r->nfiles > before) {
      double *p = realloc(*ranges, sizeof(double) * 2 * (size_t)r->nfiles);
      if (!p)
        st = STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory", stk__node_name(node));
      else
        *ranges = p, p[2 * before] = range[0], p[2 * before + 1] = range[1];
    }
  }
  free(line);
  fclose(f);
  return st;
}

/* A file_list bound in frames: frame numbers (negative from the end) or seconds. */
static int64_t bound_frame(stk__node *node, const vfile *f, double v, bool is_end) {
  bool frames = stk__arg_bool(node, NULL, A_FILE_LIST_FRAME_NUM) ||
                strcmp(stk__arg_string(node, A_FILE_LIST_FORMAT), "frames") == 0;
  if (frames) {
    int64_t k = is_end ? (int64_t)floor(v) : (int64_t)ceil(v);
    return k < 0 ? f->frames + k : k;
  }
  double x = v * f->fps;
  if (!is_end && stk__arg_bool(node, NULL, A_FILE_LIST_INCLUDE_PRECEDING)) return (int64_t)floor(x);
  return (int64_t)ceil(x - 1e-9);
}

/* Opens each file once: frame count, rate, size; applies the file_list ranges. */
static stk_status probe(stk__node *node, vstate *r, const double *ranges) {
  for (int64_t i = 0; i < r->nfiles; i++) {
    vfile *f = &r->files[i];
    stk__video *v;
    stk_status st = stk__video_open(NULL, 0, f->path, &v);
    if (st != STK_OK) return stk__wrap(st, "%s: '%s'", stk__node_name(node), f->path);
    f->frames = stk__video_frames(v), f->fps = stk__video_fps(v);
    f->width = stk__video_width(v), f->height = stk__video_height(v);
    stk__video_close(v);
    f->end = f->frames;
    if (ranges && !isnan(ranges[2 * i])) f->begin = bound_frame(node, f, ranges[2 * i], false);
    if (ranges && !isnan(ranges[2 * i + 1])) f->end = bound_frame(node, f, ranges[2 * i + 1], true);
    if (f->begin < 0) f->begin = 0;
    if (f->end > f->frames) f->end = f->frames;
  }
  return STK_OK;
}

/* The sequences of every file, in file order. */
static stk_status enumerate(stk__node *node, vstate *r) {
  /* Whole sequences need start + len * stride <= end (DALI's rule: the stride after the
   * last frame counts too); padded ones only a first frame. */
  bool pad = r->pad != STK__VPAD_NONE;
  int64_t span = r->len * r->stride - 1, total = 0;
  for (int pass = 0; pass < 2; pass++) {
    int64_t k = 0;
    for (int64_t i = 0; i < r->nfiles; i++) {
      const vfile *f = &r->files[i];
      for (int64_t s = f->begin; s < f->end && (pad || s + span < f->end); s += r->step) {
        if (pass == 1) r->seqs[k] = (vseq){(int32_t)i, s};
        k++;
      }
    }
    if (pass == 0) {
      total = k;
      if (total == 0)
        return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                        "%s: no sequence of %lld frames (stride %lld) fits in the %lld "
                        "file(s)",
                        stk__node_name(node), (long long)r->len, (long long)r->stride,
                        (long long)r->nfiles);
      r->seqs = malloc(sizeof *r->seqs * (size_t)total);
      if (!r->seqs) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory", stk__node_name(node));
    }
  }
  r->nseqs = total;
  return STK_OK;
}

static stk_status load(stk__node *node, vstate *r) {
  const char *name = stk__node_name(node);
  int sources = stk__arg_given(node, A_FILENAMES) + stk__arg_given(node, A_FILE_LIST) +
                (stk__arg_given(node, A_FILE_ROOT) && !stk__arg_given(node, A_FILE_LIST));
  if (sources != 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: give exactly one of filenames, file_root, file_list", name);
  if (stk__arg_given(node, A_LABELS) && !stk__arg_given(node, A_FILENAMES))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: labels needs filenames", name);
  double *ranges = NULL;
  stk_status st = stk__arg_given(node, A_FILENAMES)   ? from_filenames(node, r)
                  : stk__arg_given(node, A_FILE_LIST) ? from_list(node, r, &ranges)
                                                      : from_root(node, r);
  if (st == STK_OK && r->nfiles == 0)
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: no video files", name);
  if (st == STK_OK) st = probe(node, r, ranges);
  free(ranges);
  return st == STK_OK ? enumerate(node, r) : st;
}

static stk_status video_init(stk__node *node) {
  if (!stk__video_codec_available())
    return STK__SFAIL(STK_ERR_UNSUPPORTED, node, NULL,
                      "built without FFmpeg (install libavformat-dev, libavcodec-dev and "
                      "libswscale-dev and rebuild)");
  vstate *r = stk__calloc(1, sizeof *r, "a video reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  r->len = stk__arg_int(node, NULL, A_SEQ_LEN);
  r->stride = stk__arg_int(node, NULL, A_STRIDE);
  r->step = stk__arg_int(node, NULL, A_STEP);
  if (r->step <= 0) r->step = r->len;
  r->pad = stk__vpad_parse(stk__arg_string(node, A_PAD_MODE));
  int ways = (stk__arg_given(node, A_RESIZE_X) || stk__arg_given(node, A_RESIZE_Y)) +
             stk__arg_given(node, A_SIZE) + stk__arg_given(node, A_RESIZE_SHORTER) +
             stk__arg_given(node, A_RESIZE_LONGER);
  const double *v;
  stk_status st = STK_OK;
  if (ways > 1 ||
      (stk__arg_given(node, A_SIZE) && (stk__arg_floats(node, NULL, A_SIZE, &v) - 1) > 1) ||
      (stk__arg_given(node, A_MAX_SIZE) && (stk__arg_floats(node, NULL, A_MAX_SIZE, &v) - 1) > 1))
    st = STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, NULL,
                    "give the size one way (resize_x / resize_y, size, resize_shorter or "
                    "resize_longer); size and max_size take 1 or 2 values");
  if (stk__arg_bool(node, NULL, A_PAD_SEQUENCES)) r->pad = STK__VPAD_CONSTANT;
  if (st == STK_OK) st = load(node, r);
  bool gpu = stk__node_device(node) == STK_DEVICE_GPU;
  if (st == STK_OK && gpu) stk__video_cuda_align_early(stk__node_device_id(node));
  if (st == STK_OK) st = stk__reader_sampler(node, A_COMMON, r->nseqs, NULL, 0, &r->base.sampler);
  if (st != STK_OK) video_destroy(node);
  return st;
}

static bool has_labels(const stk__node *node) {
  stk__node *n = (stk__node *)node;
  return stk__arg_given(n, A_LABELS) || stk__arg_given(n, A_FILE_ROOT) ||
         stk__arg_given(n, A_FILE_LIST);
}

static int video_num_outputs(const stk__node *node) {
  stk__node *n = (stk__node *)node;
  return 1 + has_labels(node) + (strcmp(stk__arg_string(n, A_ENABLE_FRAME_NUM), "none") != 0) +
         stk__arg_bool(n, NULL, A_ENABLE_TIMESTAMPS);
}

/* The output size by resize's rules (size, resize_shorter / resize_longer, mode, max_size;
 * stk__resize_plan), 0 x 0 when it cannot be computed. */
static void planned_size(stk__node *node, const vfile *f, int *w, int *h) {
  stk__resize_request rq = {.mode = STK__RESIZE_DEFAULT};
  stk__resize_mode_parse(stk__arg_string(node, A_MODE), &rq.mode);
  const double *v;
  if (stk__arg_given(node, A_SIZE)) {
    size_t n = stk__arg_floats(node, NULL, A_SIZE, &v);
    rq.size[0] = v[0], rq.size[1] = v[n - 1];
  } else if (stk__arg_given(node, A_RESIZE_SHORTER) || stk__arg_given(node, A_RESIZE_LONGER)) {
    bool sh = stk__arg_given(node, A_RESIZE_SHORTER);
    rq.size[0] = rq.size[1] = stk__arg_float(node, NULL, sh ? A_RESIZE_SHORTER : A_RESIZE_LONGER);
    rq.mode = sh ? STK__RESIZE_NOT_SMALLER : STK__RESIZE_NOT_LARGER;
  } else {
    rq.size[0] = (double)stk__arg_int(node, NULL, A_RESIZE_Y);
    rq.size[1] = (double)stk__arg_int(node, NULL, A_RESIZE_X);
  }
  if ((rq.has_max_size = stk__arg_given(node, A_MAX_SIZE))) {
    size_t n = stk__arg_floats(node, NULL, A_MAX_SIZE, &v);
    rq.max_size[0] = v[0], rq.max_size[1] = v[n - 1];
  }
  rq.hi[0] = f->height, rq.hi[1] = f->width;
  int64_t out[2];
  double lo[2], hi[2];
  *w = *h = 0;
  if (stk__resize_plan(&rq, out, lo, hi) == STK_OK && out[0] < 65536 && out[1] < 65536)
    *h = (int)out[0], *w = (int)out[1];
}

/* The output size: resize_x / resize_y, the missing one keeping the aspect ratio; with
 * size, resize_shorter, resize_longer, mode or max_size, resize's rules. */
static void out_size(stk__node *node, const vfile *f, int *w, int *h) {
  if (stk__arg_given(node, A_SIZE) || stk__arg_given(node, A_RESIZE_SHORTER) ||
      stk__arg_given(node, A_RESIZE_LONGER) || stk__arg_given(node, A_MODE) ||
      stk__arg_given(node, A_MAX_SIZE)) {
    planned_size(node, f, w, h);
    return;
  }
  int64_t rx = stk__arg_int(node, NULL, A_RESIZE_X), ry = stk__arg_int(node, NULL, A_RESIZE_Y);
  *w = (int)rx, *h = (int)ry;
  if (rx > 0 && ry <= 0) *h = (int)llround((double)f->height * (double)rx / f->width);
  if (ry > 0 && rx <= 0) *w = (int)llround((double)f->width * (double)ry / f->height);
  if (*w < 1 || *h < 1) *w = 0, *h = 0;
}

static stk_status extra_outputs(stk__node *node, stk__sample *s, const vstate *r, const vfile *f,
                                const int64_t *idx, int64_t first) {
  int next = 1;
  stk__tensor *t;
  if (has_labels(node)) {
    int64_t one = 1;
    STK_TRY(stk__output(s, next++, STK_DTYPE_INT32, 1, &one, NULL, &t));
    *(int32_t *)t->data = f->label;
  }
  const char *fn = stk__arg_string(node, A_ENABLE_FRAME_NUM);
  if (strcmp(fn, "none") != 0) {
    bool seq = strcmp(fn, "sequence") == 0;
    int64_t n = seq ? r->len : 1;
    STK_TRY(stk__output(s, next++, STK_DTYPE_INT32, 1, &n, NULL, &t));
    for (int64_t i = 0; i < n; i++) ((int32_t *)t->data)[i] = (int32_t)(seq ? idx[i] : first);
  }
  if (stk__arg_bool(node, s, A_ENABLE_TIMESTAMPS)) {
    STK_TRY(stk__output(s, next++, STK_DTYPE_FLOAT32, 1, &r->len, NULL, &t));
    for (int64_t i = 0; i < r->len; i++)
      ((float *)t->data)[i] = idx[i] < 0 || f->fps <= 0 ? -1.0f : (float)(idx[i] / f->fps);
  }
  return STK_OK;
}

/* The sample's sequence: its file and frame indices (-1: padding), into scratch. */
static stk_status sequence_of(stk__node *node, stk__sample *s, const vfile **file, int64_t **idx,
                              int64_t *first) {
  vstate *r = *stk__node_state(node);
  int64_t item = stk__sample_item(s, node);
  if (item < 0 || item >= r->nseqs)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  const vseq *q = &r->seqs[item];
  const vfile *f = &r->files[q->file];
  stk__sample_set_source(s, f->path);
  *idx = stk__scratch(s, sizeof(int64_t) * (size_t)r->len);
  if (!*idx) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no scratch");
  for (int64_t i = 0; i < r->len; i++) { /* padding stays within the file's [begin, end) */
    int64_t k = stk__vpad_index(r->pad, q->first + i * r->stride - f->begin, f->end - f->begin);
    (*idx)[i] = k < 0 ? -1 : f->begin + k;
  }
  *file = f, *first = q->first;
  return STK_OK;
}

static stk__video_out output_of(stk__node *node, stk__sample *s, const vfile *f) {
  stk_dtype dt = stk__dtype_arg(stk__arg_string(node, A_DTYPE));
  stk__video_out o = {dt, stk__arg_bool(node, s, A_NORMALIZED), NULL, 0, 0, 0};
  o.nfill = stk__arg_floats(node, s, A_FILL_VALUE, &o.fill);
  out_size(node, f, &o.out_w, &o.out_h);
  return o;
}

static stk_status video_run(stk__node *node, stk__sample *s) {
  vstate *r = *stk__node_state(node);
  const vfile *f;
  int64_t *idx, first;
  STK_TRY(sequence_of(node, s, &f, &idx, &first));
  stk__video *v;
  stk_status st = stk__video_open(NULL, 0, f->path, &v);
  if (st != STK_OK) return stk__sample_wrap(st, node, s);
  stk__video_out o = output_of(node, s, f);
  st = stk__video_emit(node, s, v, idx, r->len, &o, 0);
  stk__video_close(v);
  return st == STK_OK ? extra_outputs(node, s, r, f, idx, first) : st;
}

/* device="gpu": the extra outputs as host arrays in the record, uploaded by the GPU stage
 * (the same values extra_outputs writes). */
static stk_status gpu_extras(stk__node *node, stk__sample *s, const vstate *r, const vfile *f,
                             const int64_t *idx, int64_t first, stk__vgpu_record *rec) {
  const char *fn = stk__arg_string(node, A_ENABLE_FRAME_NUM);
  bool label = has_labels(node), frame_num = strcmp(fn, "none") != 0;
  bool seq = strcmp(fn, "sequence") == 0, times = stk__arg_bool(node, s, A_ENABLE_TIMESTAMPS);
  stk__vgpu_extra want[3];
  int n = 0;
  if (label) want[n++] = (stk__vgpu_extra){STK_DTYPE_INT32, 1, NULL};
  if (frame_num) want[n++] = (stk__vgpu_extra){STK_DTYPE_INT32, seq ? r->len : 1, NULL};
  if (times) want[n++] = (stk__vgpu_extra){STK_DTYPE_FLOAT32, r->len, NULL};
  for (int e = 0; e < n; e++) {
    rec->extra[e] = want[e];
    rec->extra[e].data = malloc((size_t)want[e].n * 4 + 4);
    rec->nextra = e + 1;
    if (!rec->extra[e].data) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory");
  }
  int e = 0;
  if (label) *(int32_t *)rec->extra[e++].data = f->label;
  if (frame_num) {
    int32_t *d = rec->extra[e++].data;
    for (int64_t i = 0; i < (seq ? r->len : 1); i++) d[i] = (int32_t)(seq ? idx[i] : first);
  }
  if (times) {
    float *d = rec->extra[e].data;
    for (int64_t i = 0; i < r->len; i++)
      d[i] = idx[i] < 0 || f->fps <= 0 ? -1.0f : (float)(idx[i] / f->fps);
  }
  return STK_OK;
}

/* device="gpu": the sequence is decoded with NVDEC here, on the CPU stage's workers (one
 * sequence each, so several decode at once on the GPU's engines); the GPU stage converts
 * the frames into the batch and uploads the other outputs (stk__vgpu_run). */
/* The GPU form's NVDEC, once the pipeline's device is open: no driver or no CUDA-enabled
 * FFmpeg fails the build here. */
static stk_status video_device_ready(stk__node *node) {
  vstate *r = *stk__node_state(node);
  return stk__vgpu_open(node, &r->hw);
}

static stk_status video_prepare(stk__node *node, stk__sample *s, void *record) {
  vstate *r = *stk__node_state(node);
  const vfile *f;
  int64_t *idx, first;
  STK_TRY(sequence_of(node, s, &f, &idx, &first));
  stk__video *v;
  stk_status st = stk__video_open(NULL, 0, f->path, &v);
  if (st != STK_OK) return stk__sample_wrap(st, node, s);
  stk__video_out o = output_of(node, s, f);
  st = stk__vgpu_decode(node, s, r->hw, v, idx, r->len, &o, record);
  stk__video_close(v);
  return st == STK_OK ? gpu_extras(node, s, r, f, idx, first, record) : st;
}

#define VIDEO_SCHEMA(var, opname, docs, devs)                      \
  static const stk_op_schema var = {                               \
      .name = opname,                                              \
      .doc = docs,                                                 \
      .devices = devs,                                             \
      .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT, \
      .min_inputs = 0,                                             \
      .max_inputs = 0,                                             \
      .num_outputs = -1,                                           \
      .outputs = video_outputs,                                    \
      .num_args = A_COUNT_,                                        \
      .args = video_args,                                          \
  }

#define VIDEO_DOC                                                                          \
  "Reads sequences of sequence_length frames (stride apart, a new one every step frames) " \
  "from video files decoded on the CPU with FFmpeg, with labels from filenames/labels, a " \
  "class-folder tree or a file list (optionally limited to a frame or time range). "       \
  "Sharding, padding and shuffling as in readers.file, over the sequences."

#define VIDEO_GPU_DOC                                                                        \
  " device=\"gpu\": decoded by the GPU's NVDEC engines on the CPU stage's workers and "      \
  "converted to RGB (and resized: linear, antialiased) on the GPU; all outputs on the GPU; " \
  "see docs/audio-video.md."

VIDEO_SCHEMA(video_schema, "readers.video", VIDEO_DOC VIDEO_GPU_DOC,
             STK_DEVICE_CPU | STK_DEVICE_GPU);
VIDEO_SCHEMA(video_exp_schema, "experimental.readers.video",
             VIDEO_DOC VIDEO_GPU_DOC
             " (DALI's experimental name; the same operator as readers.video.)",
             STK_DEVICE_CPU | STK_DEVICE_GPU);
VIDEO_SCHEMA(video_resize_schema, "readers.video_resize",
             VIDEO_DOC
             " Frames are scaled (bilinear) to resize_x x resize_y as decoded." VIDEO_GPU_DOC,
             STK_DEVICE_CPU | STK_DEVICE_GPU);

/* The fields every video reader's definition shares. */
#define VIDEO_DEF_FIELDS(sch)                                                                 \
  .schema = &sch, .init = video_init, .destroy = video_destroy, .plan = stk__reader_plan,     \
  .run_sample = video_run, .reader_meta = stk__reader_meta, .position = stk__reader_position, \
  .seek = stk__reader_seek, .num_outputs = video_num_outputs

/* The GPU form: no gpu_check (a reader has no input to compare); checked against the CPU
 * form in tests/python/test_video_gpu.py. */
#define VIDEO_GPU_DEF(var, sch)                                    \
  const stk__op_def var = {VIDEO_DEF_FIELDS(sch),                  \
                           .run_gpu = stk__vgpu_run,               \
                           .prepare = video_prepare,               \
                           .prep_bytes = sizeof(stk__vgpu_record), \
                           .prep_release = stk__vgpu_release,      \
                           .device_ready = video_device_ready}

VIDEO_GPU_DEF(stk__op_readers_video, video_schema);
VIDEO_GPU_DEF(stk__op_experimental_readers_video, video_exp_schema);
VIDEO_GPU_DEF(stk__op_readers_video_resize, video_resize_schema);
