/*
 * A stand-in for libstoker_cuda.so that runs on the CPU, for testing the executor's GPU
 * stage in CI (no GPU there): "device" memory is host memory, and the work queued on a
 * stream runs only when something waits for it (stream_sync, event_sync, event_query, a
 * copy into pageable host memory), in stream order, with stream_wait_event honoured.
 *
 * That laziness is the point. A real device runs queued work later than the host queues
 * it; here it runs as late as the API allows, so code that lets go of memory the device
 * still reads shows up as wrong bytes. decode_batch reads the JPEG bytes only when its
 * queued decode runs (libjpeg-turbo), as nvJPEG's hardware path was found to read them
 * after its call returned (bench/RESULTS.md, 2026-11-25). Headers are parsed at the call,
 * as nvJPEG does.
 *
 * Only what a pipeline of readers and mixed decoders needs is here; the kernels report
 * STK_ERR_UNSUPPORTED, except the cast (a copy, or for other types the shared element
 * functions' conversion), which gathers outputs, the
 * math table's gather (subscript), queued like a kernel, and the automatic augmentation's
 * program (auto_augment.apply / augment): the kernel's own interpreter run on the host,
 * and the tensor toolbox's table (api_tensor.h): its shared element functions on the host.
 * and the image effects' per-pixel function and clahe tables (effects_px.h, the kernels'
 * own code), queued like kernels.
 * One lock serialises the whole fake: callers may come from any thread.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "cuda/api_autoaug.h"
#include "cuda/api_boxes.h"
#include "cuda/api_effects.h"
#include "cuda/api_math.h"
#include "cuda/api_png.h"
#include "cuda/api_tensor.h"
#include "cuda/api_video.h"
#include "cuda/autoaug_interp.h"
#include "cuda/gpu_kernels.h"
#include "shared/inflate.h"
#include "codecs/jpeg_frame.h"
#include "shared/jpeg_decode_host.h"
#include "shared/jpeg_parsed.h"
#include "shared/lz4.h"
#include "shared/mix_common.h"
#include "shared/math_common.h"
#include "shared/png_common.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int fail(char *err, size_t errlen, int code, const char *what) {
  if (err && errlen) snprintf(err, errlen, "fake GPU: %s", what);
  return code;
}

/* ---- memory ranges: which pointers are device, which host memory is page-locked ---- */

typedef struct {
  const char *base;
  size_t size;
} range_t;

typedef struct {
  range_t *r;
  size_t n, cap;
} range_set;

static range_set device_mem, pinned_mem;

static void range_add(range_set *s, const void *p, size_t size) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->r = realloc(s->r, s->cap * sizeof *s->r);
  }
  s->r[s->n++] = (range_t){(const char *)p, size};
}

/* Forgets the range starting at p; returns its size (0: not found). */
static size_t range_remove(range_set *s, const void *p) {
  for (size_t i = 0; i < s->n; i++)
    if (s->r[i].base == p) {
      size_t size = s->r[i].size;
      s->r[i] = s->r[--s->n];
      return size;
    }
  return 0;
}

/* Frees a block of device or pinned memory after filling it with 0xA5, so that work that
 * still reads it afterwards reads poison, not the old bytes (CI runs without ASan). */
static void poison_free(range_set *s, void *p) {
  size_t size = range_remove(s, p);
  if (size) memset(p, 0xA5, size);
  free(p);
}

static bool range_has(const range_set *s, const void *p) {
  for (size_t i = 0; i < s->n; i++)
    if ((const char *)p >= s->r[i].base &&
        (const char *)p < s->r[i].base + (s->r[i].size ? s->r[i].size : 1))
      return true;
  return false;
}

/* ---- streams of queued work ---- */

typedef enum {
  OP_COPY,
  OP_DECODE,
  OP_FREE_DEVICE,
  OP_FREE_HOST,
  OP_RECORD,
  OP_WAIT,
  OP_GATHER,
  OP_BB_FLIP,
  OP_COORD_FLIP,
  OP_COORD_TRANSFORM,
  OP_BOX_ENCODER,
  OP_AUTOAUG,
  OP_MIX,
  OP_TENSOR,
  OP_EFFECTS
} op_kind;

struct aa_batch;
struct tn_job;

struct fake_event;

typedef struct op {
  struct op *next;
  op_kind kind;
  void *dst;
  const void *src;
  size_t bytes;
  void *staging; /* a copy's source taken at the call (pageable memory), freed after */
  /* OP_DECODE */
  size_t pitch;
  int color, roi_x, roi_y, roi_w, roi_h, width, height;
  /* OP_RECORD / OP_WAIT: the event and which of its records; a wait also keeps the
   * stream that record was queued on (the event may be recorded elsewhere later) */
  struct fake_event *event;
  unsigned long generation;
  struct fake_stream *record_stream;
  /* OP_GATHER: one sample's descriptor (copied at the call), element size in `bytes` */
  stk_gpu_gather_sample gather;
  /* OP_BB_FLIP / OP_COORD_FLIP: one sample's descriptor (copied at the call) */
  stk_gpu_bb_flip_sample bb_flip;
  stk_gpu_coord_flip_sample coord_flip;
  stk_gpu_coord_transform_sample *coord_transform; /* a copy (the descriptor is large) */
  struct be_job *box_encoder;                      /* a sample with a copy of the anchors */
  /* OP_AUTOAUG: the batch's programs (copied at the call, as the real entry uploads them) */
  struct aa_batch *aa;
  /* OP_MIX: one sample's descriptor (copied at the call); its element type in `color` */
  stk_gpu_mix_sample mix;
  /* OP_TENSOR: a tensor-toolbox launch (plans copied at the call) */
  struct tn_job *tn;
  /* OP_EFFECTS: the batch's descriptors (copied at the call) */
  struct fx_batch *fx;
} op;

typedef struct fake_stream {
  uintptr_t handle;
  op *head, *tail;
  struct fake_stream *next;
} fake_stream;

typedef struct fake_event {
  struct fake_event *next_orphan; /* destroyed while queued work still named it */
  fake_stream *stream;            /* where it was last recorded */
  unsigned long recorded;         /* records so far */
  unsigned long completed;        /* the last record that ran */
  unsigned long asked;            /* the record a query last found pending */
} fake_event;

static fake_stream *streams;
static fake_event *orphans; /* freed when the last context closes */
static int open_contexts;

static fake_stream *stream_of(uintptr_t handle) {
  for (fake_stream *s = streams; s; s = s->next)
    if (s->handle == handle) return s;
  fake_stream *s = calloc(1, sizeof *s);
  s->handle = handle;
  s->next = streams;
  streams = s;
  return s;
}

static void enqueue(uintptr_t stream, op *o) {
  fake_stream *s = stream_of(stream);
  o->next = NULL;
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
}

static void run_event(fake_event *e, unsigned long generation, fake_stream *s);

/* A JPEG into dst (whole image, or the region of a whole-image decode); a stream that no
 * longer decodes to the planned size leaves a 0x7F fill, which no test image has. */
static void run_decode(op *o) {
  int channels = o->color == STK_GPU_COLOR_GRAY ? 1 : 3;
  int format = o->color == STK_GPU_COLOR_GRAY  ? TJPF_GRAY
               : o->color == STK_GPU_COLOR_BGR ? TJPF_BGR
                                               : TJPF_RGB;
  size_t row = (size_t)o->width * channels;
  unsigned char *whole = malloc(row * (size_t)o->height);
  tjhandle tj = tjInitDecompress();
  int w = 0, h = 0, ss = 0, cs = 0;
  bool ok =
      whole && tj &&
      tjDecompressHeader3(tj, o->src, (unsigned long)o->bytes, &w, &h, &ss, &cs) == 0 &&
      w == o->width && h == o->height &&
      tjDecompress2(tj, o->src, (unsigned long)o->bytes, whole, w, (int)row, h, format, 0) == 0;
  bool roi = o->roi_w > 0 && o->roi_h > 0;
  int out_w = roi ? o->roi_w : o->width, out_h = roi ? o->roi_h : o->height;
  for (int y = 0; y < out_h; y++) {
    unsigned char *d = (unsigned char *)o->dst + (size_t)y * o->pitch;
    if (ok)
      memcpy(d,
             whole + (size_t)(y + (roi ? o->roi_y : 0)) * row +
                 (size_t)(roi ? o->roi_x : 0) * channels,
             (size_t)out_w * channels);
    else
      memset(d, 0x7F, (size_t)out_w * channels);
  }
  if (tj) tjDestroy(tj);
  free(whole);
}

/* subscript's gather, element by element with the kernel's offset rule. */
/* The box kernels' work, through the same per-box functions (src/shared/box_math.h). */
static void run_bb_flip(const stk_gpu_bb_flip_sample *s) {
  for (int64_t i = 0; i < s->count; i++) {
    float b[4];
    memcpy(b, s->src + 4 * i, sizeof b);
    stk__bb_flip_one(b, s->ltrb != 0, s->horizontal != 0, s->vertical != 0);
    memcpy(s->dst + 4 * i, b, sizeof b);
  }
}

static void run_coord_flip(const stk_gpu_coord_flip_sample *s) {
  for (int64_t i = 0; i < s->count; i++) {
    float p[3];
    memcpy(p, s->src + (size_t)s->d * i, (size_t)s->d * sizeof *p);
    stk__coord_flip_one(p, s->d, s->axes, &s->spec);
    memcpy(s->dst + (size_t)s->d * i, p, (size_t)s->d * sizeof *p);
  }
}

static void run_coord_transform(const stk_gpu_coord_transform_sample *s) {
  for (int64_t i = 0; s && i < s->count; i++)
    stk__coord_transform_one(s->m, s->t, s->o, s->d, s->src + (int64_t)s->d * i,
                             s->dst + (int64_t)s->o * i);
}

/* box_encoder's three phases, sequentially (the kernel's order of decisions). */
typedef struct be_job {
  stk_gpu_box_encoder_sample s;
  int64_t m;
  stk__box_encoding enc;
  float anchors[]; /* m x 4 */
} be_job;

static void run_box_encoder(const be_job *b) {
  const stk_gpu_box_encoder_sample *s = &b->s;
  for (int64_t j = 0; b && j < b->m; j++) {
    float best = -1.0f;
    int32_t who = -1;
    for (int64_t i = 0; i < s->n; i++) {
      float v = stk__box_iou(s->boxes + 4 * i, b->anchors + 4 * j);
      if (v > best) best = v, who = (int32_t)i;
    }
    s->out_boxes[4 * j] = best, s->out_labels[j] = who;
  }
  for (int64_t i = 0; b && i < s->n; i++) {
    float top = -1.0f;
    int64_t at = -1;
    for (int64_t j = 0; j < b->m; j++) {
      float v = stk__box_iou(s->boxes + 4 * i, b->anchors + 4 * j);
      if (v > top) top = v, at = j;
    }
    if (at >= 0) s->out_boxes[4 * at] = 2.0f, s->out_labels[at] = (int32_t)i;
  }
  for (int64_t j = 0; b && j < b->m; j++) {
    int32_t who = s->out_labels[j];
    bool matched = who >= 0 && s->out_boxes[4 * j] > b->enc.criteria;
    const float *anchor = b->anchors + 4 * j;
    stk__box_encode(&b->enc, matched ? s->boxes + 4 * who : anchor, anchor, matched,
                    s->out_boxes + 4 * j);
    s->out_labels[j] = matched ? s->labels[who] : 0;
  }
}

static void run_gather(op *o) {
  const stk_gpu_gather_sample *g = &o->gather;
  size_t es = o->bytes;
  for (int64_t e = 0; e < g->count; e++)
    memcpy(
        (char *)g->dst + (size_t)e * es,
        (const char *)g->src + stk_ar_gather_offset(g->ndim, g->shape, g->stride, e) * (int64_t)es,
        es);
}

/* The fused automatic augmentation: the kernel's interpreter (src/cuda/autoaug_interp.h) on
 * the host with one thread, sample after sample (tests/c/test_autoaug_interp.c checks it
 * against the CPU operator). */
struct aa_batch {
  int n, num_steps, num_luts, num_floats;
  stk_gpu_aa_sample *samples;
  stk_gpu_aa_step *steps;
  uint8_t *luts;
  float *floats;
  stk_gpu_aa_args args;
};

static void aa_batch_free(struct aa_batch *a) {
  if (!a) return;
  free(a->samples), free(a->steps), free(a->luts), free(a->floats), free(a);
}

static void run_autoaug(op *o) {
  struct aa_batch *a = o->aa;
  stk_aa_shared *sh = malloc(sizeof *sh);
  for (int i = 0; sh && i < a->n; i++)
    stk_aa_run_sample(&a->samples[i], a->steps, a->luts, a->floats, a->args.interp,
                      a->args.constant, sh, 0, 1);
  free(sh);
  aa_batch_free(a);
}

/* mixup / cutmix of one sample: mix.cu's per-element maths (mix_common.h) on the host. */
static void run_mix(const op *o) {
  const stk_gpu_mix_sample *m = &o->mix;
  int64_t plane = m->h * m->mid * m->w * m->inner;
  for (int64_t e = 0; e < m->outer * plane; e++) {
    int64_t r = e / m->inner, x = r % m->w, y = (r / m->w / m->mid) % m->h;
    bool in = stk_in_box(m->box, y, x);
    float wa = in ? m->wa_in : m->wa_out, wb = in ? m->wb_in : m->wb_out;
    if (o->color == STK_DTYPE_UINT8)
      ((uint8_t *)m->dst)[e] =
          stk_mix_u8(stk_mix_value(((const uint8_t *)m->a)[e], ((const uint8_t *)m->b)[e], wa, wb));
    else
      ((float *)m->dst)[e] =
          stk_mix_value(((const float *)m->a)[e], ((const float *)m->b)[e], wa, wb);
  }
}

/* The tensor toolbox's kernels (api_tensor.h): the shared per-element functions of
 * src/shared/tensor_common.h on the host, in element order. */
enum { TN_COPY, TN_REDUCE, TN_AFFINE, TN_LOOKUP, TN_CAST };
typedef struct tn_job {
  int kind, n, esize, blockwise;
  void *plans; /* n plans of the launch's type (lookup: src, dst, counts) */
  stk_tn_reduce_args ra;
  stk_dtype it, ot;
  double shift;
  const void **src;
  void **dst;
  int64_t *counts;
  void *table;
  int64_t len;
  uint64_t dflt;
} tn_job;

static void tn_job_free(tn_job *j) {
  if (!j) return;
  free(j->plans), free(j->src), free(j->dst), free(j->counts), free(j->table), free(j);
}

static void run_tensor(op *o) {
  tn_job *j = o->tn;
  for (int i = 0; i < j->n; i++) {
    if (j->kind == TN_COPY) {
      const stk_tn_copy *p = (const stk_tn_copy *)j->plans + i;
      for (int64_t e = 0; e < p->count; e++) stk_tn_copy_elem(p, j->esize, e);
    } else if (j->kind == TN_REDUCE) {
      /* the kernel the real backend would pick: per thread, or per block (its grouping) */
      const stk_tn_reduce *p = (const stk_tn_reduce *)j->plans + i;
      for (int64_t e = 0; e < p->out_count; e++) {
        if (j->blockwise)
          stk_tn_reduce_elem_blockwise(p, &j->ra, e);
        else
          stk_tn_reduce_elem(p, &j->ra, e);
      }
    } else if (j->kind == TN_AFFINE) {
      const stk_tn_affine *p = (const stk_tn_affine *)j->plans + i;
      for (int64_t e = 0; e < p->count; e++) stk_tn_affine_elem(p, j->it, j->ot, j->shift, e);
    } else if (j->kind == TN_CAST) {
      /* cross-type casts (slice's dtype): float to integer rounds half away from zero and
       * saturates, as stk__convert (exact below 2^53) */
      const stk_gpu_cast_sample *c = (const stk_gpu_cast_sample *)j->plans + i;
      for (int64_t e = 0; e < c->count; e++)
        stk_tn_store_sat(c->dst, j->ot, (size_t)e, stk_ar_load_f(c->src, j->it, (size_t)e));
    } else {
      for (int64_t e = 0; e < j->counts[i]; e++)
        stk_tn_lookup_elem(j->src[i], j->it, j->dst[i], j->esize, j->table, j->len, j->dflt, e);
    }
  }
  tn_job_free(j);
}

/* ---- image effects: the kernels' per-element code, run on the host ---- */
struct fx_batch {
  int n, clahe;
  stk_dtype in, out;
  stk_gpu_fx_sample *px;
  stk_gpu_clahe_sample *cl;
  stk_gpu_jpeg_sample *jpeg; /* jpeg_distort's batch, when set */
};

static void run_effects(op *o) {
  struct fx_batch *f = o->fx;
  for (int i = 0; f->jpeg && i < f->n; i++) {
    const stk_gpu_jpeg_sample *j = &f->jpeg[i];
    for (long long my = 0; my < (j->h + 15) / 16; my++)
      for (long long mx = 0; mx < (j->w + 15) / 16; mx++)
        stk_je_mcu(j->src, j->h, j->w, j->ql, j->qc, mx, my, j->planes);
    for (long long y = 0; y < j->h; y++)
      for (long long x = 0; x < j->w; x++)
        stk_je_pixel(j->planes, j->h, j->w, x, y, j->dst + (y * j->w + x) * 3);
  }
  if (f->jpeg) f->n = 0;
  free(f->jpeg);
  for (int i = 0; i < f->n && f->clahe; i++) { /* (jpeg batches have n = 0 here) */
    const stk_gpu_clahe_sample *c = &f->cl[i];
    int tiles = c->tiles_y * c->tiles_x;
    for (int t = 0; t < (c->luma ? 1 : c->c) * tiles; t++) {
      int plane = t / tiles, ty = (t % tiles) / c->tiles_x, tx = t % c->tiles_x, hist[256] = {0};
      for (long long k = 0; k < (long long)c->th * c->tw; k++)
        hist[stk_fx_clahe_padded(c->src, c->h, c->w, c->c, (long long)tx * c->tw + k % c->tw,
                                 (long long)ty * c->th + k / c->tw, plane, c->luma)]++;
      stk_fx_clahe_lut(hist, c->th * c->tw, c->limit, c->luts + (size_t)t * 256);
    }
  }
  for (int i = 0; i < f->n && !f->clahe; i++) {
    const stk_gpu_fx_sample *s = &f->px[i];
    stk_fx_image im = {s->src, f->in, s->h, s->w, s->c};
    long long e = 0;
    for (long long y = 0; y < s->out_h; y++)
      for (long long x = 0; x < s->out_w; x++)
        stk_fx_eval_pixel(&s->p, &im, x, y, s->out_w, s->out_c, s->dst, f->out, e), e += s->out_c;
  }
  free(f->px);
  free(f->cl);
  free(f);
}

static void run_op(op *o) {
  switch (o->kind) {
    case OP_COPY:
      memcpy(o->dst, o->staging ? o->staging : o->src, o->bytes);
      break;
    case OP_DECODE:
      run_decode(o);
      break;
    case OP_FREE_DEVICE:
      poison_free(&device_mem, o->dst);
      break;
    case OP_FREE_HOST:
      poison_free(&pinned_mem, o->dst);
      break;
    case OP_RECORD:
      if (o->generation > o->event->completed) o->event->completed = o->generation;
      break;
    case OP_WAIT:
      run_event(o->event, o->generation, o->record_stream);
      break;
    case OP_GATHER:
      run_gather(o);
      break;
    case OP_BB_FLIP:
      run_bb_flip(&o->bb_flip);
      break;
    case OP_COORD_FLIP:
      run_coord_flip(&o->coord_flip);
      break;
    case OP_COORD_TRANSFORM:
      run_coord_transform(o->coord_transform);
      free(o->coord_transform);
      break;
    case OP_BOX_ENCODER:
      run_box_encoder(o->box_encoder);
      free(o->box_encoder);
      break;
    case OP_AUTOAUG:
      run_autoaug(o);
      break;
    case OP_MIX:
      run_mix(o);
      break;
    case OP_TENSOR:
      run_tensor(o);
      break;
    case OP_EFFECTS:
      run_effects(o);
      break;
  }
  free(o->staging);
  free(o);
}

/* Runs the stream's queued work, oldest first, until `until` has run (NULL: all of it). */
static void run_stream(fake_stream *s, const op *until) {
  while (s->head) {
    op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    bool last = o == until;
    run_op(o);
    if (last) return;
  }
}

/* Runs stream s, where the event's record `generation` was queued, until it has run. */
static void run_event(fake_event *e, unsigned long generation, fake_stream *s) {
  while (e->completed < generation && s && s->head) {
    op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    run_op(o);
  }
}

static void run_all(void) {
  for (bool more = true; more;) {
    more = false;
    for (fake_stream *s = streams; s; s = s->next)
      if (s->head) run_stream(s, NULL), more = true;
  }
}

/* ---- the table ---- */

struct stk_gpu_ctx {
  int device;
};

static int device_count(int *count, char *err, size_t errlen) {
  (void)err, (void)errlen;
  *count = 1;
  return 0;
}

static int ctx_open(const stk_gpu_open_opts *opts, stk_gpu_ctx **out, char *err, size_t errlen) {
  (void)err, (void)errlen;
  *out = calloc(1, sizeof **out);
  (*out)->device = opts ? opts->device : 0;
  pthread_mutex_lock(&lock);
  open_contexts++;
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Runs what is queued; the last context to close frees the fake's own bookkeeping (the
 * library may be unloaded next). */
static void ctx_close(stk_gpu_ctx *ctx) {
  if (!ctx) return;
  pthread_mutex_lock(&lock);
  run_all();
  if (--open_contexts == 0) {
    while (streams) {
      fake_stream *s = streams;
      streams = s->next;
      free(s);
    }
    while (orphans) {
      fake_event *e = orphans;
      orphans = e->next_orphan;
      free(e);
    }
    free(device_mem.r);
    free(pinned_mem.r);
    device_mem = pinned_mem = (range_set){NULL, 0, 0};
  }
  pthread_mutex_unlock(&lock);
  free(ctx);
}

static int device_info(stk_gpu_ctx *ctx, stk_gpu_device_info *out, char *err, size_t errlen) {
  (void)err, (void)errlen;
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "fake GPU (CPU, queued work runs when waited for)");
  out->device = ctx->device;
  out->cc_major = 9;
  out->total_memory = (int64_t)1 << 34;
  out->host_memory = 1;
  out->has_nvjpeg = 1;
  out->has_hw_decoder = !getenv("STK_FAKE_GPU_NO_ENGINES"); /* a GPU without JPEG engines */
  return 0;
}

static uintptr_t ctx_stream(stk_gpu_ctx *ctx, int which) {
  (void)ctx;
  return (uintptr_t)(0x5000 + which);
}

static int stats(stk_gpu_ctx *ctx, stk_gpu_stats *out, char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  memset(out, 0, sizeof *out);
  return 0;
}

static int trim(stk_gpu_ctx *ctx, uint64_t keep, char *err, size_t errlen) {
  (void)ctx, (void)keep, (void)err, (void)errlen;
  return 0;
}

static int device_alloc(stk_gpu_ctx *ctx, size_t size, uintptr_t stream, void **out, char *err,
                        size_t errlen) {
  (void)ctx, (void)stream;
  *out = NULL;
  if (size == 0) return 0;
  if (!(*out = malloc(size))) return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "out of memory");
  pthread_mutex_lock(&lock);
  range_add(&device_mem, *out, size);
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Freed when the stream reaches the free (cudaFreeAsync). */
static int device_free(stk_gpu_ctx *ctx, void *ptr, uintptr_t stream, char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  if (!ptr) return 0;
  op *o = calloc(1, sizeof *o);
  o->kind = OP_FREE_DEVICE;
  o->dst = ptr;
  pthread_mutex_lock(&lock);
  enqueue(stream, o);
  pthread_mutex_unlock(&lock);
  return 0;
}

static int pinned_alloc(stk_gpu_ctx *ctx, size_t size, void **out, char *err, size_t errlen) {
  (void)ctx;
  if (!(*out = malloc(size ? size : 1)))
    return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "out of memory");
  pthread_mutex_lock(&lock);
  range_add(&pinned_mem, *out, size);
  pthread_mutex_unlock(&lock);
  return 0;
}

static int pinned_free(stk_gpu_ctx *ctx, void *ptr, const uintptr_t *stream, char *err,
                       size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  if (!ptr) return 0;
  pthread_mutex_lock(&lock);
  if (stream) {
    op *o = calloc(1, sizeof *o);
    o->kind = OP_FREE_HOST;
    o->dst = ptr;
    enqueue(*stream, o);
  } else {
    poison_free(&pinned_mem, ptr);
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* cudaMemcpyAsync's rules: a pageable source is taken at the call, a pageable
 * destination is written before the call returns; anything else runs in stream order. */
static int memcpy_async(stk_gpu_ctx *ctx, void *dst, const void *src, size_t bytes,
                        uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  if (bytes == 0) return 0;
  if (!dst || !src)
    return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "memcpy_async: NULL pointer");
  pthread_mutex_lock(&lock);
  op *o = calloc(1, sizeof *o);
  o->kind = OP_COPY;
  o->dst = dst;
  o->src = src;
  o->bytes = bytes;
  bool src_pageable = !range_has(&device_mem, src) && !range_has(&pinned_mem, src);
  bool dst_pageable = !range_has(&device_mem, dst) && !range_has(&pinned_mem, dst);
  if (src_pageable) {
    o->staging = malloc(bytes);
    memcpy(o->staging, src, bytes);
  }
  enqueue(stream, o);
  if (dst_pageable) run_stream(stream_of(stream), o);
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Runs the stream's queued work, then sets the bytes (in stream order). */
static int memset_async(stk_gpu_ctx *ctx, void *dst, int value, size_t bytes, uintptr_t stream,
                        char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  pthread_mutex_lock(&lock);
  run_stream(stream_of(stream), NULL);
  memset(dst, value, bytes);
  pthread_mutex_unlock(&lock);
  return 0;
}

static int stream_sync(stk_gpu_ctx *ctx, uintptr_t stream, char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  pthread_mutex_lock(&lock);
  run_stream(stream_of(stream), NULL);
  pthread_mutex_unlock(&lock);
  return 0;
}

static int event_create(stk_gpu_ctx *ctx, int timing, void **out, char *err, size_t errlen) {
  (void)ctx, (void)timing;
  if (!(*out = calloc(1, sizeof(fake_event))))
    return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "out of memory");
  return 0;
}

/* An event's record or a wait on it, queued on `stream` (lock held). */
static op *enqueue_event_op(op_kind kind, fake_event *e, unsigned long generation,
                            uintptr_t stream) {
  op *o = calloc(1, sizeof *o);
  o->kind = kind;
  o->event = e;
  o->generation = generation;
  enqueue(stream, o);
  return o;
}

static int event_record(stk_gpu_ctx *ctx, void *event, uintptr_t stream, char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  fake_event *e = event;
  pthread_mutex_lock(&lock);
  e->stream = stream_of(stream);
  enqueue_event_op(OP_RECORD, e, ++e->recorded, stream);
  pthread_mutex_unlock(&lock);
  return 0;
}

/* The stream waits for the event's latest record (none yet: no wait, as CUDA). */
static int stream_wait_event(stk_gpu_ctx *ctx, uintptr_t stream, void *event, char *err,
                             size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  fake_event *e = event;
  pthread_mutex_lock(&lock);
  enqueue_event_op(OP_WAIT, e, e->recorded, stream)->record_stream = e->stream;
  pthread_mutex_unlock(&lock);
  return 0;
}

/* A wait makes the work up to the event's latest record run now. A query finds pending
 * work still pending the first time it asks about a record and done the next (the
 * device lags a little), so callers meet both answers. */
static void wait_or_ask(fake_event *e, int *done) {
  pthread_mutex_lock(&lock);
  bool pending = e->completed < e->recorded;
  if (!done || !pending || e->asked == e->recorded)
    run_event(e, e->recorded, e->stream);
  else
    e->asked = e->recorded;
  if (done) *done = e->completed >= e->recorded;
  pthread_mutex_unlock(&lock);
}

static int event_query(stk_gpu_ctx *ctx, void *event, int *done, char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  wait_or_ask(event, done);
  return 0;
}

static int event_sync(stk_gpu_ctx *ctx, void *event, char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  wait_or_ask(event, NULL);
  return 0;
}

static int event_elapsed(stk_gpu_ctx *ctx, void *a, void *b, float *ms, char *err, size_t errlen) {
  (void)ctx, (void)a, (void)b, (void)err, (void)errlen;
  *ms = 0;
  return 0;
}

/* Destroyed with work still queued that names it: kept until the last context closes. */
static void event_destroy(stk_gpu_ctx *ctx, void *event) {
  (void)ctx;
  fake_event *e = event;
  pthread_mutex_lock(&lock);
  bool referenced = false;
  for (fake_stream *s = streams; s && !referenced; s = s->next)
    for (op *o = s->head; o && !referenced; o = o->next) referenced = o->event == e;
  if (referenced) {
    e->next_orphan = orphans;
    orphans = e;
  } else {
    free(e);
  }
  pthread_mutex_unlock(&lock);
}

static bool header(const uint8_t *data, size_t size, int *w, int *h, int *components) {
  tjhandle tj = tjInitDecompress();
  int ss = 0, cs = 0;
  bool ok = tj && tjDecompressHeader3(tj, data, (unsigned long)size, w, h, &ss, &cs) == 0;
  if (tj) tjDestroy(tj);
  *components = ok && cs == TJCS_GRAY ? 1 : 3;
  return ok && cs != TJCS_CMYK && cs != TJCS_YCCK;
}

static int jpeg_info(stk_gpu_ctx *ctx, const uint8_t *data, size_t size, stk_gpu_jpeg_info *out,
                     char *err, size_t errlen) {
  (void)ctx;
  memset(out, 0, sizeof *out);
  if (!header(data, size, &out->width, &out->height, &out->components))
    return fail(err, errlen, STK_ERR_DECODE, "jpeg_info: not a JPEG the fake takes");
  return 0;
}

/* Whether libjpeg-turbo decodes the stream without complaint (a warning counts): the
 * verdict nvJPEG's hybrid path gives at its call on corrupt entropy-coded data. */
static bool decodes_cleanly(const uint8_t *data, size_t size, int w, int h) {
  unsigned char *scratch = malloc((size_t)w * h * 3);
  tjhandle tj = tjInitDecompress();
  bool ok = scratch && tj &&
            tjDecompress2(tj, data, (unsigned long)size, scratch, w, 0, h, TJPF_RGB, 0) == 0;
  if (tj) tjDestroy(tj);
  free(scratch);
  return ok;
}

static int decode_classify(stk_gpu_ctx *ctx, const uint8_t *data, size_t size, int roi_x, int roi_y,
                           int roi_w, int roi_h, stk_gpu_decode_class *out, char *err,
                           size_t errlen) {
  (void)ctx, (void)roi_x, (void)roi_y, (void)err, (void)errlen;
  memset(out, 0, sizeof *out);
  bool ok = header(data, size, &out->width, &out->height, &out->components);
  out->status = ok ? STK_GPU_DECODE_OK : STK_GPU_DECODE_FALLBACK;
  out->hw_ok = ok;
  out->roi = roi_w > 0 && roi_h > 0;
  return 0;
}

/* A decode call that does not return (issue 27's test): while the test keeps
 * `hang_decodes` set, decode_batch blocks inside the call, as nvJPEG's batched call did on
 * the GPU machine once the engines' work was lost, and nothing but the test can release
 * it. hung_calls counts the calls blocked there. */
static pthread_mutex_t hang_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hang_cond = PTHREAD_COND_INITIALIZER;
static int hang_decodes, hung_calls;

__attribute__((visibility("default"))) void stk_fake_gpu_hang_decodes(int on) {
  pthread_mutex_lock(&hang_lock);
  hang_decodes = on;
  pthread_cond_broadcast(&hang_cond);
  pthread_mutex_unlock(&hang_lock);
}

__attribute__((visibility("default"))) int stk_fake_gpu_hung_calls(void) {
  pthread_mutex_lock(&hang_lock);
  int n = hung_calls;
  pthread_mutex_unlock(&hang_lock);
  return n;
}

static void maybe_hang(void) {
  pthread_mutex_lock(&hang_lock);
  if (hang_decodes) {
    hung_calls++;
    while (hang_decodes) pthread_cond_wait(&hang_cond, &hang_lock);
    hung_calls--;
  }
  pthread_mutex_unlock(&hang_lock);
}

/* Headers now; the decodes queued on `stream`, reading the bytes when they run. A stream
 * that does not decode cleanly is reported FAILED at the call (nvJPEG's hybrid path). */
static int decode_batch(stk_gpu_ctx *ctx, int n, const stk_gpu_decode_in *in,
                        stk_gpu_decode_out *out, const stk_gpu_decode_opts *opts, uintptr_t stream,
                        char *err, size_t errlen) {
  (void)ctx;
  if (n < 0 || (n > 0 && (!in || !out)))
    return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "decode_batch: bad batch");
  maybe_hang();
  int color = opts ? opts->color : STK_GPU_COLOR_RGB;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n; i++) {
    memset(&out[i], 0, sizeof out[i]);
    int w = 0, h = 0, c = 0;
    if (!header(in[i].data, in[i].size, &w, &h, &c)) {
      out[i].status = STK_GPU_DECODE_FALLBACK;
      continue;
    }
    if (!decodes_cleanly(in[i].data, in[i].size, w, h)) {
      out[i] = (stk_gpu_decode_out){
          STK_GPU_DECODE_FAILED, STK_GPU_BACKEND_HYBRID, STK_GPU_ROI_NONE, 6, w, h, c};
      continue;
    }
    out[i] = (stk_gpu_decode_out){STK_GPU_DECODE_OK,
                                  STK_GPU_BACKEND_HARDWARE,
                                  in[i].roi_w > 0 ? STK_GPU_ROI_CROPPED : STK_GPU_ROI_NONE,
                                  0,
                                  w,
                                  h,
                                  c};
    op *o = calloc(1, sizeof *o);
    o->kind = OP_DECODE;
    o->dst = in[i].dst;
    o->src = in[i].data; /* read when the decode runs */
    o->bytes = in[i].size;
    o->pitch = in[i].dst_pitch;
    o->color = color;
    o->roi_x = in[i].roi_x, o->roi_y = in[i].roi_y, o->roi_w = in[i].roi_w, o->roi_h = in[i].roi_h;
    o->width = w, o->height = h;
    enqueue(stream, o);
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Bytes per element (the library's stk_dtype_size is not visible to a dlopen'd module). */
static size_t dtype_size(stk_dtype t) {
#define FAKE_DTYPE_SIZE(name, value, text, size) \
  if (t == STK_DTYPE_##name) return size;
  STK_DTYPE_MAP(FAKE_DTYPE_SIZE)
#undef FAKE_DTYPE_SIZE
  return 0;
}

static int tn_cast(int n, const stk_gpu_cast_sample *samples, stk_dtype it, stk_dtype ot,
                   uintptr_t stream, char *err, size_t errlen);

static int cast(stk_gpu_ctx *ctx, int n, const stk_gpu_cast_sample *samples, stk_dtype in_dtype,
                stk_dtype out_dtype, uintptr_t stream, char *err, size_t errlen) {
  if (in_dtype != out_dtype) return tn_cast(n, samples, in_dtype, out_dtype, stream, err, errlen);
  for (int i = 0; i < n; i++) {
    int rc = memcpy_async(ctx, samples[i].dst, samples[i].src,
                          (size_t)samples[i].count * dtype_size(in_dtype), stream, err, errlen);
    if (rc) return rc;
  }
  return 0;
}

/* Queued like a kernel: the gather runs when something waits for the stream. */
static int gather(stk_gpu_ctx *ctx, int n, const stk_gpu_gather_sample *samples, size_t esize,
                  uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  if (esize != 1 && esize != 2 && esize != 4 && esize != 8)
    return fail(err, errlen, STK_ERR_UNSUPPORTED, "gather: element size");
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n; i++) {
    op *o = calloc(1, sizeof *o);
    if (!o) {
      pthread_mutex_unlock(&lock);
      return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "gather: no memory");
    }
    o->kind = OP_GATHER;
    o->gather = samples[i];
    o->bytes = esize;
    enqueue(stream, o);
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Queued like a kernel, one op per sample. */
static int mix(stk_gpu_ctx *ctx, int n, const stk_gpu_mix_sample *samples, stk_dtype dtype,
               uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  if (dtype != STK_DTYPE_UINT8 && dtype != STK_DTYPE_FLOAT32)
    return fail(err, errlen, STK_ERR_UNSUPPORTED, "mix: type");
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n; i++) {
    op *o = calloc(1, sizeof *o);
    if (!o) {
      pthread_mutex_unlock(&lock);
      return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "mix: no memory");
    }
    o->kind = OP_MIX;
    o->mix = samples[i];
    o->color = (int)dtype;
    enqueue(stream, o);
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Queues one op per sample, each with a copy of its descriptor (`set` copies it in). */
static int queue_samples(int n, uintptr_t stream, op_kind kind, char *err, size_t errlen,
                         void (*set)(op *o, int i, const void *samples), const void *samples) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n; i++) {
    op *o = calloc(1, sizeof *o);
    if (!o) {
      pthread_mutex_unlock(&lock);
      return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "boxes: no memory");
    }
    o->kind = kind;
    set(o, i, samples);
    enqueue(stream, o);
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

static void set_bb_flip(op *o, int i, const void *s) {
  o->bb_flip = ((const stk_gpu_bb_flip_sample *)s)[i];
}
static void set_coord_flip(op *o, int i, const void *s) {
  o->coord_flip = ((const stk_gpu_coord_flip_sample *)s)[i];
}

static int fake_bb_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_bb_flip_sample *s, uintptr_t stream,
                        char *err, size_t errlen) {
  (void)ctx;
  return queue_samples(n, stream, OP_BB_FLIP, err, errlen, set_bb_flip, s);
}
static int fake_coord_flip(stk_gpu_ctx *ctx, int n, const stk_gpu_coord_flip_sample *s,
                           uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  return queue_samples(n, stream, OP_COORD_FLIP, err, errlen, set_coord_flip, s);
}
static void set_coord_transform(op *o, int i, const void *s) {
  o->coord_transform = malloc(sizeof *o->coord_transform); /* NULL: the op does nothing */
  if (o->coord_transform) *o->coord_transform = ((const stk_gpu_coord_transform_sample *)s)[i];
}
static int fake_coord_transform(stk_gpu_ctx *ctx, int n, const stk_gpu_coord_transform_sample *s,
                                uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  return queue_samples(n, stream, OP_COORD_TRANSFORM, err, errlen, set_coord_transform, s);
}
static int fake_box_encoder(stk_gpu_ctx *ctx, int n, const stk_gpu_box_encoder_sample *s,
                            const stk_gpu_box_encoder_args *a, uintptr_t stream, char *err,
                            size_t errlen) {
  (void)ctx;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n; i++) {
    op *o = calloc(1, sizeof *o);
    be_job *b = malloc(sizeof *b + (size_t)a->m * 4 * sizeof(float));
    if (!o || !b) {
      free(o), free(b);
      pthread_mutex_unlock(&lock);
      return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "box_encoder: no memory");
    }
    b->s = s[i], b->m = a->m, b->enc = a->enc;
    memcpy(b->anchors, a->anchors, (size_t)a->m * 4 * sizeof(float));
    o->kind = OP_BOX_ENCODER;
    o->box_encoder = b;
    enqueue(stream, o);
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Queues a tensor job (taken over) like a kernel. */
static int tn_enqueue(tn_job *j, uintptr_t stream, char *err, size_t errlen) {
  op *o = j ? calloc(1, sizeof *o) : NULL;
  if (!o) {
    tn_job_free(j);
    return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "tensor: no memory");
  }
  o->kind = OP_TENSOR;
  o->tn = j;
  pthread_mutex_lock(&lock);
  enqueue(stream, o);
  pthread_mutex_unlock(&lock);
  return 0;
}

static tn_job *tn_job_new(int kind, int n, const void *plans, size_t size) {
  tn_job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->kind = kind, j->n = n;
  j->plans = malloc(size * (size_t)(n ? n : 1));
  if (!j->plans) {
    free(j);
    return NULL;
  }
  if (n) memcpy(j->plans, plans, size * (size_t)n);
  return j;
}

static int tn_copy(stk_gpu_ctx *ctx, int n, const stk_tn_copy *plans, int esize, uintptr_t stream,
                   char *err, size_t errlen) {
  (void)ctx;
  tn_job *j = tn_job_new(TN_COPY, n, plans, sizeof *plans);
  if (j) j->esize = esize;
  return tn_enqueue(j, stream, err, errlen);
}

static int tn_reduce(stk_gpu_ctx *ctx, int n, const stk_tn_reduce *plans,
                     const stk_tn_reduce_args *args, uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  tn_job *j = tn_job_new(TN_REDUCE, n, plans, sizeof *plans);
  int64_t outs = 0, elems = 0;
  for (int i = 0; i < n; i++)
    outs += plans[i].out_count, elems += plans[i].out_count * plans[i].red_count;
  if (j) j->ra = *args, j->blockwise = stk_tn_reduce_blockwise(outs, elems);
  return tn_enqueue(j, stream, err, errlen);
}

static int tn_affine(stk_gpu_ctx *ctx, int n, const stk_tn_affine *plans, stk_dtype it,
                     stk_dtype ot, double shift, uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  tn_job *j = tn_job_new(TN_AFFINE, n, plans, sizeof *plans);
  if (j) j->it = it, j->ot = ot, j->shift = shift;
  return tn_enqueue(j, stream, err, errlen);
}

static int tn_lookup(stk_gpu_ctx *ctx, int n, const stk_gpu_tn_lookup_sample *samples,
                     const stk_gpu_tn_lookup_args *a, uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  stk_dtype it = a->in_dtype;
  int esize = a->esize;
  int64_t len = a->table_len;
  uint64_t dflt = a->dflt;
  const void *table = a->table;
  tn_job *j = tn_job_new(TN_LOOKUP, 0, NULL, 1);
  size_t k = (size_t)(n ? n : 1);
  if (j) {
    j->n = n, j->it = it, j->esize = esize, j->len = len, j->dflt = dflt;
    j->src = malloc(k * sizeof *j->src), j->dst = malloc(k * sizeof *j->dst);
    j->counts = malloc(k * sizeof *j->counts), j->table = malloc((size_t)len * esize + 1);
    if (!j->src || !j->dst || !j->counts || !j->table) {
      tn_job_free(j);
      j = NULL;
    }
  }
  if (j) {
    for (int i = 0; i < n; i++)
      j->src[i] = samples[i].src, j->dst[i] = samples[i].dst, j->counts[i] = samples[i].count;
    if (len) memcpy(j->table, table, (size_t)len * esize); /* taken at the call, as uploaded */
  }
  return tn_enqueue(j, stream, err, errlen);
}

static int tn_cast(int n, const stk_gpu_cast_sample *samples, stk_dtype it, stk_dtype ot,
                   uintptr_t stream, char *err, size_t errlen) {
  tn_job *j = tn_job_new(TN_CAST, n, samples, sizeof *samples);
  if (j) j->it = it, j->ot = ot;
  return tn_enqueue(j, stream, err, errlen);
}

static void *dup_bytes(const void *p, size_t bytes) {
  void *q = malloc(bytes ? bytes : 1);
  if (q && bytes) memcpy(q, p, bytes);
  return q;
}

static int autoaug_apply(stk_gpu_ctx *ctx, int n, const stk_gpu_aa_sample *samples, int num_steps,
                         const stk_gpu_aa_step *steps, int num_luts, const uint8_t *luts,
                         int num_floats, const float *floats, const stk_gpu_aa_args *args,
                         uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  if (n < 0 || (n > 0 && (!samples || !steps || num_steps < 1)) || num_luts < 0 || num_floats < 0 ||
      !args)
    return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "autoaug.apply: bad batch");
  for (int i = 0; i < n; i++) {
    const stk_gpu_aa_sample *q = &samples[i];
    if (!q->src || !q->dst || !q->scratch || q->c < 1 || q->c > STK_GPU_AA_MAX_CHANNELS ||
        q->num_steps < 1 || q->first_step < 0 || q->first_step > num_steps - q->num_steps)
      return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "autoaug.apply: bad sample descriptor");
    for (int j = 0; j < q->num_steps; j++) {
      const stk_gpu_aa_step *st = &steps[q->first_step + j];
      if (st->code < 0 || st->code >= STK_GPU_AA_NUM_CODES ||
          (st->code == STK_GPU_AA_LUT && (st->lut < 0 || st->lut >= num_luts)))
        return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "autoaug.apply: bad step");
    }
  }
  if (n == 0) return 0;
  struct aa_batch *a = calloc(1, sizeof *a);
  if (!a) return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "autoaug.apply: no memory");
  *a = (struct aa_batch){n,
                         num_steps,
                         num_luts,
                         num_floats,
                         dup_bytes(samples, (size_t)n * sizeof *samples),
                         dup_bytes(steps, (size_t)num_steps * sizeof *steps),
                         dup_bytes(luts, (size_t)num_luts * 256),
                         dup_bytes(floats, (size_t)num_floats * sizeof(float)),
                         *args};
  op *o = calloc(1, sizeof *o);
  if (!o || !a->samples || !a->steps || !a->luts || !a->floats) {
    aa_batch_free(a), free(o);
    return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "autoaug.apply: no memory");
  }
  o->kind = OP_AUTOAUG;
  o->aa = a;
  pthread_mutex_lock(&lock);
  enqueue(stream, o);
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Queues one effects batch (pixels when `px`, clahe tables when `cl`). */
static int effects_enqueue(int n, const stk_gpu_fx_sample *px, const stk_gpu_clahe_sample *cl,
                           stk_dtype in, stk_dtype out, uintptr_t stream, char *err,
                           size_t errlen) {
  if (n <= 0) return n < 0 ? fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "effects: n < 0") : 0;
  struct fx_batch *f = calloc(1, sizeof *f);
  op *o = calloc(1, sizeof *o);
  if (f) {
    *f = (struct fx_batch){n, cl != NULL, in, out, NULL, NULL};
    f->px = px ? dup_bytes(px, (size_t)n * sizeof *px) : NULL;
    f->cl = cl ? dup_bytes(cl, (size_t)n * sizeof *cl) : NULL;
  }
  if (!f || !o || (px && !f->px) || (cl && !f->cl)) {
    if (f) free(f->px), free(f->cl);
    free(f), free(o);
    return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "effects: no memory");
  }
  o->kind = OP_EFFECTS;
  o->fx = f;
  pthread_mutex_lock(&lock);
  enqueue(stream, o);
  pthread_mutex_unlock(&lock);
  return 0;
}

static int fx_pixel(stk_gpu_ctx *ctx, int n, const stk_gpu_fx_sample *samples, stk_dtype in_dtype,
                    stk_dtype out_dtype, uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  return effects_enqueue(n, samples, NULL, in_dtype, out_dtype, stream, err, errlen);
}

static int fx_clahe(stk_gpu_ctx *ctx, int n, const stk_gpu_clahe_sample *samples, uintptr_t stream,
                    char *err, size_t errlen) {
  (void)ctx;
  return effects_enqueue(n, NULL, samples, STK_DTYPE_UINT8, STK_DTYPE_UINT8, stream, err, errlen);
}

static int fx_jpeg(stk_gpu_ctx *ctx, int n, const stk_gpu_jpeg_sample *samples, uintptr_t stream,
                   char *err, size_t errlen) {
  (void)ctx;
  if (n <= 0) return n < 0 ? fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "jpeg: n < 0") : 0;
  struct fx_batch *f = calloc(1, sizeof *f);
  op *o = calloc(1, sizeof *o);
  if (f) f->n = n, f->jpeg = dup_bytes(samples, (size_t)n * sizeof *samples);
  if (!f || !o || !f->jpeg) {
    if (f) free(f->jpeg);
    free(f), free(o);
    return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "jpeg: no memory");
  }
  o->kind = OP_EFFECTS;
  o->fx = f;
  pthread_mutex_lock(&lock);
  enqueue(stream, o);
  pthread_mutex_unlock(&lock);
  return 0;
}

/* ---- PNG: the device routines (src/shared/inflate.h, png_common.h) run on the host ---- */

/* One image into its destination; the status the kernels would give. */
static int png_one(const stk_gpu_png_sample *s, int color) {
  stk_png_layout L;
  stk_png_layout_of(&s->hdr, &L);
  uint8_t *raw = malloc((size_t)L.total + 1);
  stk_inf_tables *st = malloc(sizeof *st);
  int rc = STK_GPU_DECODE_FAILED;
  if (!raw || !st || stk_inflate_zlib(st, s->zdata, s->zsize, raw, (size_t)L.total) != 0) goto done;
  for (int p = 0; p < L.npass; p++) {
    const uint8_t *prev = NULL;
    for (int32_t y = 0; y < L.pass[p].h; y++) {
      uint8_t *row = raw + L.pass[p].offset + (int64_t)y * (L.pass[p].row_size + 1);
      if (row[0] > 4) goto done;
      stk_png_unfilter_row(row[0], row + 1, prev, L.pass[p].row_size, L.bpp);
      prev = row + 1;
    }
  }
  bool whole = s->roi_w <= 0 || s->roi_h <= 0;
  int x0 = whole ? 0 : s->roi_x, y0 = whole ? 0 : s->roi_y;
  int w = whole ? s->hdr.width : s->roi_w, h = whole ? s->hdr.height : s->roi_h;
  int c = color == STK_GPU_COLOR_GRAY ? 1 : 3;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      if (stk_png_pixel(&s->hdr, &L, raw, x0 + x, y0 + y, color,
                        s->dst + (size_t)y * s->dst_pitch + (size_t)x * c) != 0)
        goto done;
  rc = STK_GPU_DECODE_OK;
done:
  free(raw);
  free(st);
  return rc;
}

/* The real call waits for its batch: here the stream's queued work runs first, then
 * the images are decoded at once. */
static int png_decode(stk_gpu_ctx *ctx, int n, const stk_gpu_png_sample *s, int color, int *status,
                      uintptr_t stream, char *err, size_t errlen) {
  (void)ctx;
  if (n < 0 || (n > 0 && (!s || !status)) || color < 0 || color > 2)
    return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "png decode: bad batch");
  pthread_mutex_lock(&lock);
  run_stream(stream_of(stream), NULL);
  for (int i = 0; i < n; i++) status[i] = png_one(&s[i], color);
  pthread_mutex_unlock(&lock);
  return 0;
}

/* ---- stoker's own JPEG decoder: its phases on the host (src/shared/jpeg_decode_host.h),
 * after the stream's queued work; the verdicts are written at once (the real call writes
 * them in stream order) ---- */
static int jpeg_one(const stk_gpu_jpeg_decode_sample *s, int color) {
  const stk_jpeg_parsed *p = s->parsed;
  int16_t *coef = malloc((size_t)p->frame.total_blocks * 64 * sizeof *coef);
  const int32_t *restarts = stk_jpeg_parsed_restarts(p);
  int rc = coef ? stk__jpeg_decode_coefficients(&p->frame, &p->tables, stk_jpeg_parsed_scan(p),
                                                p->scan_bytes, restarts, p->n_restarts,
                                                STK_JPEG_SUBSEQ_DEFAULT, coef, NULL)
                : -1;
  if (rc == 0)
    rc = stk_jpeg_pixels_host(&p->frame, coef, color, s->roi_x, s->roi_y, s->roi_w, s->roi_h,
                              s->dst, (int64_t)s->dst_pitch);
  free(coef);
  return rc == 0 ? STK_GPU_DECODE_OK : STK_GPU_DECODE_FAILED;
}

static int jpeg_decode(stk_gpu_ctx *ctx, int n, const stk_gpu_jpeg_decode_sample *s,
                       const stk_gpu_jpeg_decode_args *a, uintptr_t stream, char *err,
                       size_t errlen) {
  (void)ctx;
  if (!a || n < 0 || (n > 0 && (!s || !a->status)) || a->color < 0 || a->color > 2)
    return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "jpeg decode: bad batch");
  pthread_mutex_lock(&lock);
  run_stream(stream_of(stream), NULL);
  for (int i = 0; i < n; i++) a->status[i] = jpeg_one(&s[i], a->color);
  pthread_mutex_unlock(&lock);
  return 0;
}

/* ---- inflate: the kernel's per-chunk decoders (src/shared/lz4.h, inflate.h) on the host,
 * after the stream's queued work (the real call waits for its batch too) ---- */
static int inflate_chunks(stk_gpu_ctx *ctx, int n, const stk_gpu_inflate_sample *s,
                          const stk_gpu_inflate_args *a, uintptr_t stream, char *err,
                          size_t errlen) {
  (void)ctx;
  if (!a || n < 0 || (n > 0 && (!s || !a->status)))
    return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, "inflate: bad batch");
  stk_inf_tables *t = malloc(sizeof *t);
  if (!t) return fail(err, errlen, STK_ERR_OUT_OF_MEMORY, "inflate: no memory");
  pthread_mutex_lock(&lock);
  run_stream(stream_of(stream), NULL);
  for (int i = 0; i < n; i++) {
    bool ok =
        a->algorithm == STK_GPU_INFLATE_LZ4
            ? stk_lz4_block_decode(s[i].src, s[i].src_size, s[i].dst, s[i].dst_size) ==
                  (int64_t)s[i].dst_size
            : stk_inflate_any(t, s[i].src, s[i].src_size, s[i].dst, s[i].dst_size) == STK_INF_OK;
    a->status[i] = ok ? STK_GPU_DECODE_OK : STK_GPU_DECODE_FAILED;
  }
  pthread_mutex_unlock(&lock);
  free(t);
  return 0;
}

static int host_register(stk_gpu_ctx *ctx, void *ptr, size_t bytes, char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  pthread_mutex_lock(&lock);
  range_add(&pinned_mem, ptr, bytes);
  pthread_mutex_unlock(&lock);
  return 0;
}

static void host_unregister(stk_gpu_ctx *ctx, void *ptr) {
  (void)ctx;
  pthread_mutex_lock(&lock);
  range_remove(&pinned_mem, ptr);
  pthread_mutex_unlock(&lock);
}

static int host_alloc(stk_gpu_ctx *ctx, size_t bytes, void **out, char *err, size_t errlen) {
  return pinned_alloc(ctx, bytes, out, err, errlen);
}

static void host_free(stk_gpu_ctx *ctx, void *ptr) { pinned_free(ctx, ptr, NULL, NULL, 0); }

/* ---- the kernels: the stand-in has a subset; the others are unsupported ---- */

static const stk_gpu_kernel_info kernel_infos[STK_GPU_K_COUNT] = {
    STK_GPU_KERNELS(STK_GPU_KERNEL_INFO)};

typedef int (*kernel_fn)(stk_gpu_ctx *ctx, const stk_gpu_launch *l, char *err, size_t errlen);

/* Adapters from the generic launch record to the stand-in's functions. */
#define ARGS(T) ((const T *)l->args)
static int k_cast(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return cast(c, l->n, l->samples, ARGS(stk_gpu_io_args)->in_dtype,
              ARGS(stk_gpu_io_args)->out_dtype, l->stream, e, el);
}
static int k_mix(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return mix(c, l->n, l->samples, ARGS(stk_gpu_mix_args)->dtype, l->stream, e, el);
}
static int k_gather(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return gather(c, l->n, l->samples, ARGS(stk_gpu_elem_args)->esize, l->stream, e, el);
}
static int k_autoaug(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  const stk_gpu_aa_args *a = ARGS(stk_gpu_aa_args);
  return autoaug_apply(c, l->n, l->samples, a->num_steps, a->steps, a->num_luts, a->luts,
                       a->num_floats, a->floats, a, l->stream, e, el);
}
static int k_fx_pixel(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return fx_pixel(c, l->n, l->samples, ARGS(stk_gpu_io_args)->in_dtype,
                  ARGS(stk_gpu_io_args)->out_dtype, l->stream, e, el);
}
static int k_fx_clahe(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return fx_clahe(c, l->n, l->samples, l->stream, e, el);
}
static int k_fx_jpeg(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return fx_jpeg(c, l->n, l->samples, l->stream, e, el);
}
static int k_tn_copy(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return tn_copy(c, l->n, l->samples, (int)ARGS(stk_gpu_elem_args)->esize, l->stream, e, el);
}
static int k_tn_reduce(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return tn_reduce(c, l->n, l->samples, ARGS(stk_tn_reduce_args), l->stream, e, el);
}
static int k_tn_affine(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  const stk_gpu_tn_affine_args *a = ARGS(stk_gpu_tn_affine_args);
  return tn_affine(c, l->n, l->samples, a->in_dtype, a->out_dtype, a->shift, l->stream, e, el);
}
static int k_tn_lookup(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return tn_lookup(c, l->n, l->samples, ARGS(stk_gpu_tn_lookup_args), l->stream, e, el);
}
static int k_bb_flip(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return fake_bb_flip(c, l->n, l->samples, l->stream, e, el);
}
static int k_coord_flip(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return fake_coord_flip(c, l->n, l->samples, l->stream, e, el);
}
static int k_coord_transform(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return fake_coord_transform(c, l->n, l->samples, l->stream, e, el);
}
static int k_box_encoder(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return fake_box_encoder(c, l->n, l->samples, ARGS(stk_gpu_box_encoder_args), l->stream, e, el);
}
static int k_png_decode(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  const stk_gpu_png_args *a = ARGS(stk_gpu_png_args);
  return png_decode(c, l->n, l->samples, a->color, a->status, l->stream, e, el);
}
static int k_inflate(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return inflate_chunks(c, l->n, l->samples, ARGS(stk_gpu_inflate_args), l->stream, e, el);
}
/* ---- video: the kernel's per-pixel conversion (src/shared/video_yuv.h) on the host, after
 * the stream's queued work ---- */
static void video_frame(const stk_gpu_video_frame *f, const stk_gpu_video_args *a) {
  for (int y = 0; y < f->height; y++)
    for (int x = 0; x < f->width; x++) {
      uint8_t rgb[3];
      if (f->src.luma)
        stk_nv12_to_rgb(&f->src, x, y, rgb);
      else
        for (int c = 0; c < 3; c++) rgb[c] = stk_nv12_u8(f->fill[c]);
      size_t px = ((size_t)y * (size_t)f->width + (size_t)x) * 3;
      for (int c = 0; c < 3; c++) {
        if (a->out_float)
          ((float *)f->dst)[px + (size_t)c] = (float)rgb[c] * a->scale;
        else
          ((uint8_t *)f->dst)[px + (size_t)c] = rgb[c];
      }
    }
}
static int k_jpeg_decode(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  return jpeg_decode(c, l->n, l->samples, ARGS(stk_gpu_jpeg_decode_args), l->stream, e, el);
}
static int k_video(stk_gpu_ctx *c, const stk_gpu_launch *l, char *e, size_t el) {
  (void)c, (void)e, (void)el;
  const stk_gpu_video_frame *f = l->samples;
  pthread_mutex_lock(&lock);
  run_stream(stream_of(l->stream), NULL);
  for (int i = 0; i < l->n; i++) video_frame(&f[i], ARGS(stk_gpu_video_args));
  pthread_mutex_unlock(&lock);
  return 0;
}
#undef ARGS

static const kernel_fn kernels[STK_GPU_K_COUNT] = {
    [STK_GPU_K_CAST] = k_cast,
    [STK_GPU_K_MIX] = k_mix,
    [STK_GPU_K_GATHER] = k_gather,
    [STK_GPU_K_AUTOAUG] = k_autoaug,
    [STK_GPU_K_FX_PIXEL] = k_fx_pixel,
    [STK_GPU_K_FX_CLAHE_LUTS] = k_fx_clahe,
    [STK_GPU_K_FX_JPEG_DISTORT] = k_fx_jpeg,
    [STK_GPU_K_TN_COPY] = k_tn_copy,
    [STK_GPU_K_TN_REDUCE] = k_tn_reduce,
    [STK_GPU_K_TN_AFFINE] = k_tn_affine,
    [STK_GPU_K_TN_LOOKUP] = k_tn_lookup,
    [STK_GPU_K_BB_FLIP] = k_bb_flip,
    [STK_GPU_K_COORD_FLIP] = k_coord_flip,
    [STK_GPU_K_COORD_TRANSFORM] = k_coord_transform,
    [STK_GPU_K_BOX_ENCODER] = k_box_encoder,
    [STK_GPU_K_PNG_DECODE] = k_png_decode,
    [STK_GPU_K_INFLATE] = k_inflate,
    [STK_GPU_K_VIDEO_NV12_RGB] = k_video,
    [STK_GPU_K_JPEG_DECODE] = k_jpeg_decode,
};

static int supports(stk_gpu_ctx *ctx, int kernel) {
  (void)ctx;
  return kernel >= 0 && kernel < STK_GPU_K_COUNT && kernels[kernel] != NULL;
}

static int launch(stk_gpu_ctx *ctx, int kernel, const stk_gpu_launch *l, char *err, size_t errlen) {
  if (kernel < 0 || kernel >= STK_GPU_K_COUNT)
    return fail(err, errlen, STK_ERR_UNSUPPORTED, "launch: no such kernel id");
  const stk_gpu_kernel_info *k = &kernel_infos[kernel];
  char what[160];
  if (!kernels[kernel]) {
    snprintf(what, sizeof what, "%s: not in the stand-in backend", k->name);
    return fail(err, errlen, STK_ERR_UNSUPPORTED, what);
  }
  if (!l || l->n < 0 || (l->n > 0 && !l->samples) || l->sample_size != k->sample_size ||
      l->args_size != k->args_size) {
    snprintf(what, sizeof what, "%s: bad launch record", k->name);
    return fail(err, errlen, STK_ERR_INVALID_ARGUMENT, what);
  }
  return kernels[kernel](ctx, l, err, errlen);
}

static const stk_gpu_api api = {
    .abi_version = STK_GPU_ABI_VERSION,
    .struct_size = sizeof(stk_gpu_api),
    .device_count = device_count,
    .open = ctx_open,
    .close = ctx_close,
    .device_info = device_info,
    .stream = ctx_stream,
    .stats = stats,
    .trim = trim,
    .device_alloc = device_alloc,
    .device_free = device_free,
    .pinned_alloc = pinned_alloc,
    .pinned_free = pinned_free,
    .memcpy_async = memcpy_async,
    .memset_async = memset_async,
    .stream_sync = stream_sync,
    .event_create = event_create,
    .event_record = event_record,
    .stream_wait_event = stream_wait_event,
    .event_sync = event_sync,
    .event_query = event_query,
    .event_elapsed = event_elapsed,
    .event_destroy = event_destroy,
    .jpeg_info = jpeg_info,
    .decode_batch = decode_batch,
    .kernel_count = STK_GPU_K_COUNT,
    .kernels = kernel_infos,
    .supports = supports,
    .launch = launch,
    .device_alloc_idle = device_alloc,
    .decode_classify = decode_classify,
    .device_free_idle = device_free,
    .host_register = host_register,
    .host_unregister = host_unregister,
    .host_alloc = host_alloc,
    .host_free = host_free,
};

/* STK_FAKE_GPU_KERNEL_SKEW set: the table claims one kernel fewer, as a backend built from
 * another kernel list would (tests/c/test_gpu_kernels_fake.c: the loader must refuse it). */
__attribute__((visibility("default"))) const stk_gpu_api *stk_cuda_get_api(void) {
  static stk_gpu_api skewed;
  if (!getenv("STK_FAKE_GPU_KERNEL_SKEW")) return &api;
  skewed = api;
  skewed.kernel_count = STK_GPU_K_COUNT - 1;
  return &skewed;
}
