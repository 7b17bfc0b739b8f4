/* readers.sequence: DALI's frame-sequence reader. file_root holds one directory per
 * stream (sorted by name), each holding the stream's frames as image files (sorted by
 * name). A sample is sequence_length frames of one stream, `stride` frames apart; the
 * first frames of consecutive sequences are `step` apart; only complete sequences count
 * and none crosses streams. Each frame is decoded (JPEG or PNG) on the worker; all must
 * have one size. Output: uint8 [F, H, W, C], layout FHWC. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../codecs/codecs.h"
#include "../io/fileset.h"
#include "image_util.h"
#include "reader_common.h"

enum {
  A_FILE_ROOT,
  A_SEQUENCE_LENGTH,
  A_STEP,
  A_STRIDE,
  A_IMAGE_TYPE,
  A_SHARD_ID,
  A_COUNT_ = A_SHARD_ID + STK__RA_COUNT
};

static const stk_arg_schema seq_args[] = {
    [A_FILE_ROOT] = {.name = "file_root",
                     .type = STK_ARG_STRING,
                     .flags = STK_ARGF_REQUIRED,
                     .doc = "a directory of streams: one sub-directory of frame files each"},
    [A_SEQUENCE_LENGTH] = {.name = "sequence_length",
                           .type = STK_ARG_INT,
                           .flags = STK_ARGF_REQUIRED | STK_ARGF_RANGE,
                           .min = 1,
                           .max = 1e6,
                           .doc = "frames per sample"},
    [A_STEP] = {.name = "step",
                .type = STK_ARG_INT,
                .flags = STK_ARGF_RANGE,
                .default_text = "1",
                .min = 1,
                .max = 1e9,
                .doc = "frames between the first frames of consecutive sequences"},
    [A_STRIDE] = {.name = "stride",
                  .type = STK_ARG_INT,
                  .flags = STK_ARGF_RANGE,
                  .default_text = "1",
                  .min = 1,
                  .max = 1e9,
                  .doc = "frames between consecutive frames of a sequence"},
    [A_IMAGE_TYPE] = {.name = "image_type",
                      .type = STK_ARG_STRING,
                      .default_text = "\"RGB\"",
                      .choices = "RGB|BGR|GRAY",
                      .doc = "the colour of the decoded frames"},
    STK__READER_COMMON_ARGS,
};
STK__CHECK_ARGS(seq_args, A_COUNT_);

static const stk_port_schema seq_outputs[] = {{"frames", "uint8 [F, H, W, C], layout FHWC"}};

typedef struct {
  stk__reader_base base;
  stk__fileset frames; /* every frame of every stream, stream after stream */
  int64_t *first;      /* per sequence: its first frame's index in `frames` */
  int64_t count, length, stride;
  stk__color color;
} seq_state;

static void seq_destroy(stk__node *node) {
  seq_state *r = *stk__node_state(node);
  if (!r) return;
  stk__fileset_close(&r->frames);
  free(r->first);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct {
  char **v;
  size_t n, cap;
} strs;

static bool strs_push(strs *s, char *x) {
  if (!x) return false;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    char **p = realloc(s->v, cap * sizeof *p);
    if (!p) return free(x), false;
    s->v = p, s->cap = cap;
  }
  s->v[s->n++] = x;
  return true;
}

static void strs_free(strs *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
}

/* The sorted entries of `dir` (no dot files) that are directories (`dirs`) or regular
 * files, as full paths. */
static stk_status list_dir(const char *who, const char *dir, bool dirs, strs *out) {
  DIR *d = opendir(dir);
  if (!d) return STK_FAIL(STK_ERR_NOT_FOUND, "%s: cannot open directory '%s'", who, dir);
  struct dirent *e;
  bool ok = true;
  while (ok && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *path = malloc(len);
    if (!path) {
      ok = false;
      break;
    }
    snprintf(path, len, "%s/%s", dir, e->d_name);
    struct stat sb;
    bool keep = stat(path, &sb) == 0 && (dirs ? S_ISDIR(sb.st_mode) : S_ISREG(sb.st_mode));
    if (keep)
      ok = strs_push(out, path);
    else
      free(path);
  }
  closedir(d);
  if (!ok) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory for the frame list", who);
  qsort(out->v, out->n, sizeof *out->v, cmp_str);
  return STK_OK;
}

/* Lists every stream's frames and the sequences they hold. */
static stk_status build(stk__node *node, seq_state *r, strs *frames) {
  const char *who = stk__node_name(node);
  strs streams = {0};
  stk_status st = list_dir(who, stk__arg_string(node, A_FILE_ROOT), true, &streams);
  int64_t step = stk__arg_int(node, NULL, A_STEP), span = (r->length - 1) * r->stride + 1;
  int64_t cap = 0;
  for (size_t k = 0; st == STK_OK && k < streams.n; k++) {
    size_t base = frames->n;
    st = list_dir(who, streams.v[k], false, frames);
    int64_t n = (int64_t)(frames->n - base);
    for (int64_t s = 0; st == STK_OK && s + span <= n; s += step) {
      if (r->count == cap) {
        cap = cap ? 2 * cap : 256;
        int64_t *p = stk__realloc(r->first, (size_t)cap * sizeof *p, "sequences");
        if (!p) st = STK_ERR_OUT_OF_MEMORY;
        if (p) r->first = p;
      }
      if (st == STK_OK) r->first[r->count++] = (int64_t)base + s;
    }
  }
  strs_free(&streams);
  if (st == STK_OK && r->count == 0)
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: no stream of '%s' holds %lld frames %lld apart",
                  who, stk__arg_string(node, A_FILE_ROOT), (long long)r->length,
                  (long long)r->stride);
  return st;
}

static stk_status seq_init(stk__node *node) {
  seq_state *r = stk__calloc(1, sizeof *r, "a sequence reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  r->length = stk__arg_int(node, NULL, A_SEQUENCE_LENGTH);
  r->stride = stk__arg_int(node, NULL, A_STRIDE);
  const char *c = stk__arg_string(node, A_IMAGE_TYPE);
  r->color = strcmp(c, "BGR") == 0    ? STK__COLOR_BGR
             : strcmp(c, "GRAY") == 0 ? STK__COLOR_GRAY
                                      : STK__COLOR_RGB;
  strs frames = {0};
  stk_status st = build(node, r, &frames);
  if (st == STK_OK)
    st = stk__fileset_open(&r->frames, (const char *const *)frames.v, frames.n,
                           stk__node_name(node));
  strs_free(&frames);
  if (st == STK_OK) st = stk__reader_sampler(node, A_SHARD_ID, r->count, NULL, 0, &r->base.sampler);
  if (st != STK_OK) seq_destroy(node);
  return st;
}

/* Decodes frame f into a malloc'd buffer (*img, freed by the caller). */
static stk_status decode_frame(stk__node *node, stk__sample *s, const seq_state *r, int64_t f,
                               stk__decoded *img) {
  int64_t size = r->frames.sizes[f];
  if (size > stk__node_max_file_bytes(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "'%s' exceeds max_file_bytes", r->frames.paths[f]);
  uint8_t *bytes = malloc(size ? (size_t)size : 1);
  if (!bytes) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for a frame");
  stk_status st = stk__fileset_read(&r->frames, f, 0, bytes, (size_t)size);
  stk__decode_opts o = {.color = r->color, .max_pixels = stk__node_max_pixels(node)};
  if (st == STK_OK)
    st = stk__image_decode(bytes, (size_t)size, r->frames.paths[f], &o, stk__image_alloc_malloc,
                           NULL, img);
  free(bytes);
  return st;
}

static stk_status seq_run(stk__node *node, stk__sample *s) {
  seq_state *r = *stk__node_state(node);
  int64_t first = r->first[stk__sample_item(s, node)];
  stk__sample_set_source(s, r->frames.paths[first]);
  stk__tensor *out = NULL;
  stk_status st = STK_OK;
  for (int64_t k = 0; k < r->length && st == STK_OK; k++) {
    int64_t f = first + k * r->stride;
    stk__decoded img = {0};
    st = decode_frame(node, s, r, f, &img);
    if (st == STK_OK && !out) {
      int64_t shape[4] = {r->length, img.h, img.w, img.c};
      st = stk__output(s, 0, STK_DTYPE_UINT8, 4, shape, "FHWC", &out);
    }
    if (st == STK_OK && (img.h != out->shape[1] || img.w != out->shape[2]))
      st = STK__SFAIL(STK_ERR_DECODE, node, s, "frame '%s' is %dx%d, the first %lldx%lld",
                      r->frames.paths[f], img.w, img.h, (long long)out->shape[2],
                      (long long)out->shape[1]);
    size_t bytes = (size_t)img.h * (size_t)img.w * (size_t)img.c;
    if (st == STK_OK) memcpy((uint8_t *)out->data + (size_t)k * bytes, img.data, bytes);
    free(img.data);
  }
  return st;
}

static const stk_op_schema seq_schema = {
    .name = "readers.sequence",
    .doc =
        "Reads sequences of frames from a directory of streams (DALI's sequence reader): "
        "sequence_length frames, stride apart, sequences step apart, decoded into one "
        "FHWC uint8 tensor per sample.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .num_outputs = 1,
    .outputs = seq_outputs,
    .num_args = A_COUNT_,
    .args = seq_args,
};

const stk__op_def stk__op_readers_sequence = {
    .schema = &seq_schema,
    .init = seq_init,
    .destroy = seq_destroy,
    .plan = stk__reader_plan,
    .run_sample = seq_run,
    .reader_meta = stk__reader_meta,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
};
