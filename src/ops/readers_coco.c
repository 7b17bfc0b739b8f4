/* readers.coco: DALI's COCO reader. The annotations file is indexed at build time
 * (io/coco.h); each worker reads the image's bytes and writes the sample's boxes, labels
 * and, when asked, its polygons or its pixelwise mask. Outputs, in DALI's order: images,
 * bboxes, labels, then (polygons, vertices) or pixelwise_masks, then image_ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/coco.h"
#include "../io/fileset.h"
#include "image_util.h"
#include "reader_common.h"

enum {
  A_FILE_ROOT,
  A_ANNOTATIONS_FILE,
  A_IMAGES,
  A_LTRB,
  A_RATIO,
  A_SKIP_EMPTY,
  A_SIZE_THRESHOLD,
  A_INCLUDE_ISCROWD,
  A_AVOID_CLASS_REMAPPING,
  A_POLYGON_MASKS,
  A_PIXELWISE_MASKS,
  A_MASKS,
  A_IMAGE_IDS,
  A_SHARD_ID, /* the common reader arguments follow, in reader_common.h's order */
  A_COUNT_ = A_SHARD_ID + STK__RA_COUNT,
};

static const stk_arg_schema coco_args[] = {
    [A_FILE_ROOT] = {.name = "file_root",
                     .type = STK_ARG_STRING,
                     .flags = STK_ARGF_REQUIRED,
                     .doc = "The directory the images' file_name entries are relative to."},
    [A_ANNOTATIONS_FILE] = {.name = "annotations_file",
                            .type = STK_ARG_STRING,
                            .flags = STK_ARGF_REQUIRED,
                            .doc = "The COCO annotations JSON (images, annotations, "
                                   "categories); up to 4 GiB."},
    [A_IMAGES] = {.name = "images",
                  .type = STK_ARG_STRINGS,
                  .doc = "The file names to read, in this order (duplicates read twice); "
                         "they must match the file's file_name entries exactly. Default: "
                         "every image once, by id."},
    [A_LTRB] = {.name = "ltrb",
                .type = STK_ARG_BOOL,
                .default_text = "false",
                .doc = "Boxes as [left, top, right, bottom] instead of [x, y, width, height]."},
    [A_RATIO] = {.name = "ratio",
                 .type = STK_ARG_BOOL,
                 .default_text = "false",
                 .doc = "Box and polygon coordinates relative to the image's width and "
                        "height (from the annotations file)."},
    [A_SKIP_EMPTY] = {.name = "skip_empty",
                      .type = STK_ARG_BOOL,
                      .default_text = "false",
                      .doc = "Leave out images with no annotation left after filtering."},
    [A_SIZE_THRESHOLD] = {.name = "size_threshold",
                          .type = STK_ARG_FLOAT,
                          .default_text = "0.1",
                          .doc = "Drop objects whose box width or height (pixels) is below "
                                 "this."},
    [A_INCLUDE_ISCROWD] = {.name = "include_iscrowd",
                           .type = STK_ARG_BOOL,
                           .default_text = "true",
                           .doc = "Keep annotations marked iscrowd=1."},
    [A_AVOID_CLASS_REMAPPING] = {.name = "avoid_class_remapping",
                                 .type = STK_ARG_BOOL,
                                 .default_text = "false",
                                 .doc = "Labels are the category ids as in the file; otherwise "
                                        "a category's position in the file's list + 1 (0 for "
                                        "an id not listed)."},
    [A_POLYGON_MASKS] = {.name = "polygon_masks",
                         .type = STK_ARG_BOOL,
                         .default_text = "false",
                         .doc = "Two more outputs: polygons (int32 [P, 3]: box index, first "
                                "vertex, end vertex) and vertices (float32 [V, 2]). RLE "
                                "masks have no polygons."},
    [A_PIXELWISE_MASKS] = {.name = "pixelwise_masks",
                           .type = STK_ARG_BOOL,
                           .default_text = "false",
                           .doc = "One more output: an int32 [H, W, 1] mask (HWC) holding "
                                  "the largest label of the objects covering each pixel "
                                  "(0: none), from polygons and RLE (COCO's rasterisation)."},
    [A_MASKS] = {.name = "masks",
                 .type = STK_ARG_BOOL,
                 .default_text = "false",
                 .doc = "Deprecated name of polygon_masks."},
    [A_IMAGE_IDS] = {.name = "image_ids",
                     .type = STK_ARG_BOOL,
                     .default_text = "false",
                     .doc = "A last output: the image's id (int32 [1])."},
    STK__READER_COMMON_ARGS,
};
STK__CHECK_ARGS(coco_args, A_COUNT_);

static const stk_port_schema coco_outputs[] = {
    {"images, bboxes, labels, [polygons, vertices | pixelwise_masks], [image_ids]",
     "the encoded image (uint8 bytes), its boxes (float32 [N, 4]), their labels (int32 [N]), "
     "then the optional outputs in this order"},
};

typedef struct {
  stk__reader_base base; /* first: the shared reader hooks reach the sampler through it */
  stk__coco_index idx;
  stk__fileset files; /* the images read */
  int64_t *file_of;   /* per image of the index: its file in `files`, or -1 */
  bool ltrb, ratio, polygons, pixelwise, ids;
} coco_state;

static void coco_destroy(stk__node *node) {
  coco_state *r = *stk__node_state(node);
  if (!r) return;
  stk__coco_free(&r->idx);
  stk__fileset_close(&r->files);
  free(r->file_of);
  stk__sampler_destroy(r->base.sampler);
  free(r);
  *stk__node_state(node) = NULL;
}

/* Opens the files of the images that are read (not every image of the file: `images=` or
 * skip_empty may leave some out); file_of[k] is image k's file in the set, -1 if none. */
static stk_status open_images(stk__node *node, coco_state *r) {
  const char *root = stk__arg_string(node, A_FILE_ROOT);
  int64_t n = r->idx.num_images, used = 0;
  char **paths = stk__calloc((size_t)n + 1, sizeof *paths, "COCO image paths");
  r->file_of = stk__malloc(((size_t)n + 1) * sizeof *r->file_of, "COCO image files");
  stk_status st = paths && r->file_of ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (int64_t k = 0; st == STK_OK && k < n; k++) r->file_of[k] = -1;
  for (int64_t i = 0; i < r->idx.num_samples && st == STK_OK; i++) {
    int64_t k = r->idx.samples[i];
    if (r->file_of[k] >= 0) continue;
    size_t len = strlen(root) + strlen(r->idx.images[k].file) + 2;
    paths[used] = stk__malloc(len, "a path");
    if (!paths[used]) st = STK_ERR_OUT_OF_MEMORY;
    if (paths[used]) snprintf(paths[used], len, "%s/%s", root, r->idx.images[k].file);
    r->file_of[k] = used++;
  }
  if (st == STK_OK)
    st = stk__fileset_open(&r->files, (const char *const *)paths, (size_t)used,
                           stk__node_name(node));
  for (int64_t i = 0; paths && i < used; i++) free(paths[i]);
  free(paths);
  return st;
}

static stk_status load_index(stk__node *node, coco_state *r) {
  const char *const *images = NULL;
  size_t num_images = 0;
  if (stk__arg_given(node, A_IMAGES)) num_images = stk__arg_strings(node, A_IMAGES, &images);
  stk__coco_options o = {
      .path = stk__arg_string(node, A_ANNOTATIONS_FILE),
      .size_threshold = stk__arg_float(node, NULL, A_SIZE_THRESHOLD),
      .include_iscrowd = stk__arg_bool(node, NULL, A_INCLUDE_ISCROWD),
      .avoid_class_remapping = stk__arg_bool(node, NULL, A_AVOID_CLASS_REMAPPING),
      .segmentation = r->polygons || r->pixelwise,
      .skip_empty = stk__arg_bool(node, NULL, A_SKIP_EMPTY),
      .images = images,
      .num_images = num_images,
      .max_bytes = (int64_t)UINT32_MAX - 1,
  };
  stk_status st = stk__coco_load(&r->idx, &o);
  if (st != STK_OK) return stk__wrap(st, "%s", stk__node_name(node));
  if (r->idx.num_samples == 0)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: no images to read in '%s'", stk__node_name(node),
                    o.path);
  return STK_OK;
}

static stk_status coco_init(stk__node *node) {
  coco_state *r = stk__calloc(1, sizeof *r, "a COCO reader");
  if (!r) return STK_ERR_OUT_OF_MEMORY;
  *stk__node_state(node) = r;
  r->ltrb = stk__arg_bool(node, NULL, A_LTRB);
  r->ratio = stk__arg_bool(node, NULL, A_RATIO);
  r->polygons = stk__arg_bool(node, NULL, A_POLYGON_MASKS) || stk__arg_bool(node, NULL, A_MASKS);
  r->pixelwise = stk__arg_bool(node, NULL, A_PIXELWISE_MASKS);
  r->ids = stk__arg_bool(node, NULL, A_IMAGE_IDS);
  stk_status st = STK_OK;
  if (r->polygons && r->pixelwise)
    st = STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                  "%s: polygon_masks and pixelwise_masks exclude each other", stk__node_name(node));
  if (st == STK_OK) st = load_index(node, r);
  if (st == STK_OK) st = open_images(node, r);
  if (st == STK_OK)
    st = stk__reader_sampler(node, A_SHARD_ID, r->idx.num_samples, NULL, 0, &r->base.sampler);
  if (st != STK_OK) coco_destroy(node);
  return st;
}

static int coco_num_outputs(const stk__node *node) {
  bool poly = stk__arg_bool(node, NULL, A_POLYGON_MASKS) || stk__arg_bool(node, NULL, A_MASKS);
  return 3 + (poly ? 2 : 0) + (stk__arg_bool(node, NULL, A_PIXELWISE_MASKS) ? 1 : 0) +
         (stk__arg_bool(node, NULL, A_IMAGE_IDS) ? 1 : 0);
}

static stk_status write_boxes(const coco_state *r, stk__sample *s, const stk__coco_image *img) {
  int64_t shape[2] = {img->num_anns, 4};
  stk__tensor *boxes, *labels;
  STK_TRY(stk__output(s, 1, STK_DTYPE_FLOAT32, 2, shape, NULL, &boxes));
  STK_TRY(stk__output(s, 2, STK_DTYPE_INT32, 1, shape, NULL, &labels));
  /* Divisions, not multiplications by the reciprocal: DALI's rounding. */
  float *b = boxes->data, sx = r->ratio ? (float)img->width : 1.0f;
  float sy = r->ratio ? (float)img->height : 1.0f;
  for (int64_t i = 0; i < img->num_anns; i++) {
    const stk__coco_ann *a = &r->idx.anns[img->first_ann + i];
    float x = a->bbox[0], y = a->bbox[1], w = a->bbox[2], h = a->bbox[3];
    if (r->ltrb) w += x, h += y;
    b[4 * i] = x / sx, b[4 * i + 1] = y / sy, b[4 * i + 2] = w / sx, b[4 * i + 3] = h / sy;
    ((int32_t *)labels->data)[i] = a->label;
  }
  return STK_OK;
}

/* polygons (int32 [P, 3]: box, first vertex, end vertex) and vertices (float32 [V, 2]). */
static stk_status write_polygons(const coco_state *r, stk__sample *s, const stk__coco_image *img) {
  int64_t np = 0, nv = 0;
  const stk__coco_ann *anns = r->idx.anns + img->first_ann;
  for (int64_t i = 0; i < img->num_anns; i++) {
    if (anns[i].seg != STK__COCO_SEG_POLY) continue;
    np += anns[i].count;
    for (int64_t k = 0; k < anns[i].count; k++) nv += r->idx.polys[anns[i].first + k].num_vertices;
  }
  int64_t ps[2] = {np, 3}, vs[2] = {nv, 2};
  stk__tensor *polys, *verts;
  STK_TRY(stk__output(s, 3, STK_DTYPE_INT32, 2, ps, NULL, &polys));
  STK_TRY(stk__output(s, 4, STK_DTYPE_FLOAT32, 2, vs, NULL, &verts));
  int32_t *p = polys->data;
  float *v = verts->data, sx = r->ratio ? (float)img->width : 1.0f;
  float sy = r->ratio ? (float)img->height : 1.0f;
  int64_t at = 0;
  for (int64_t i = 0; i < img->num_anns; i++) {
    for (int64_t k = 0; anns[i].seg == STK__COCO_SEG_POLY && k < anns[i].count; k++) {
      const stk__coco_poly *pg = &r->idx.polys[anns[i].first + k];
      *p++ = (int32_t)i, *p++ = (int32_t)at, *p++ = (int32_t)(at + pg->num_vertices);
      const float *src = r->idx.verts + 2 * pg->first_vertex;
      for (int64_t j = 0; j < pg->num_vertices; j++, at++)
        v[2 * at] = src[2 * j] / sx, v[2 * at + 1] = src[2 * j + 1] / sy;
    }
  }
  return STK_OK;
}

/* One object's mask into `obj` (cleared first); false when its data is unusable. */
static bool paint_object(const coco_state *r, const stk__coco_ann *a, int32_t h, int32_t w,
                         uint8_t *obj) {
  memset(obj, 0, (size_t)h * (size_t)w);
  if (a->seg == STK__COCO_SEG_RLE)
    return stk__coco_rle_paint(r->idx.rle + a->first, a->count, h, w, obj);
  for (int64_t k = 0; a->seg == STK__COCO_SEG_POLY && k < a->count; k++) {
    const stk__coco_poly *pg = &r->idx.polys[a->first + k];
    if (!stk__coco_poly_paint(r->idx.verts + 2 * pg->first_vertex, pg->num_vertices, h, w, obj))
      return false;
  }
  return true;
}

/* Whether RLE object i is left out of the mask, as DALI does: it keeps one RLE mask per
 * label (the last), and none for a label that also has polygons in the image. */
static bool rle_ignored(const coco_state *r, const stk__coco_image *img, int64_t i) {
  const stk__coco_ann *a = r->idx.anns + img->first_ann;
  if (a[i].seg != STK__COCO_SEG_RLE) return false;
  for (int64_t k = 0; k < img->num_anns; k++) {
    if (a[k].label != a[i].label) continue;
    if (a[k].seg == STK__COCO_SEG_POLY || (a[k].seg == STK__COCO_SEG_RLE && k > i)) return true;
  }
  return false;
}

/* The pixelwise mask: per pixel the largest label of the objects covering it. */
static stk_status write_mask(stk__node *node, const coco_state *r, stk__sample *s, int index,
                             const stk__coco_image *img) {
  int32_t h = img->height, w = img->width;
  if ((int64_t)h * w > stk__node_max_pixels(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "mask of %dx%d exceeds max_image_pixels", w, h);
  int64_t shape[3] = {h, w, 1};
  stk__tensor *out;
  STK_TRY(stk__output(s, index, STK_DTYPE_INT32, 3, shape, "HWC", &out));
  int32_t *m = out->data;
  memset(m, 0, (size_t)h * (size_t)w * sizeof *m);
  uint8_t *obj = stk__scratch(s, (size_t)h * (size_t)w);
  if (!obj) return STK_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < img->num_anns; i++) {
    const stk__coco_ann *a = &r->idx.anns[img->first_ann + i];
    if (a->seg == STK__COCO_SEG_NONE || rle_ignored(r, img, i)) continue;
    if (!paint_object(r, a, h, w, obj))
      return STK__SFAIL(STK_ERR_DECODE, node, s,
                        "object %lld: its RLE runs overrun the image or its polygon lies far "
                        "outside it",
                        (long long)i);
    for (int64_t p = 0; p < (int64_t)h * w; p++)
      if (obj[p] && a->label > m[p]) m[p] = a->label;
  }
  return STK_OK;
}

static stk_status coco_run(stk__node *node, stk__sample *s) {
  coco_state *r = *stk__node_state(node);
  int64_t item = stk__sample_item(s, node);
  if (item < 0 || item >= r->idx.num_samples)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: planned item %lld out of range", stk__node_name(node),
                    (long long)item);
  int64_t k = r->idx.samples[item];
  const stk__coco_image *img = &r->idx.images[k];
  int64_t f = r->file_of[k];
  stk__sample_set_source(s, r->files.paths[f]);
  int64_t size = r->files.sizes[f];
  if (size > stk__node_max_file_bytes(node))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "%lld bytes, more than max_file_bytes",
                      (long long)size);
  stk__tensor *data;
  STK_TRY(stk__output(s, 0, STK_DTYPE_UINT8, 1, &size, NULL, &data));
  STK_TRY(stk__fileset_read(&r->files, f, 0, data->data, (size_t)size));
  STK_TRY(write_boxes(r, s, img));
  int next = 3;
  if (r->polygons) {
    STK_TRY(write_polygons(r, s, img));
    next = 5;
  }
  if (r->pixelwise) STK_TRY(write_mask(node, r, s, next++, img));
  if (r->ids) {
    int64_t one = 1;
    stk__tensor *id;
    STK_TRY(stk__output(s, next, STK_DTYPE_INT32, 1, &one, NULL, &id));
    *(int32_t *)id->data = (int32_t)img->id;
  }
  return STK_OK;
}

static const stk_op_schema coco_schema = {
    .name = "readers.coco",
    .doc =
        "Reads a COCO data set (DALI's COCO reader): the encoded images under file_root "
        "with their boxes and labels from annotations_file, optionally the segmentation "
        "as polygons or as a pixelwise mask, and the image ids; with sharding, padding "
        "and shuffling like the other readers. See docs/formats.md.",
    .devices = STK_DEVICE_CPU,
    .flags = STK_OPF_READER | STK_OPF_RANDOM | STK_OPF_NO_INPUT,
    .num_outputs = -1,
    .outputs = coco_outputs,
    .num_args = A_COUNT_,
    .args = coco_args,
};

const stk__op_def stk__op_readers_coco = {
    .schema = &coco_schema,
    .init = coco_init,
    .destroy = coco_destroy,
    .plan = stk__reader_plan,
    .run_sample = coco_run,
    .reader_meta = stk__reader_meta,
    .num_outputs = coco_num_outputs,
    .position = stk__reader_position,
    .seek = stk__reader_seek,
};
