/*
 * COCO annotation files (instances_*.json): the index readers.coco reads samples from,
 * and the segmentation masks (polygons and run-length encodings) rasterised as the COCO
 * tools do, so pixelwise masks match what DALI (and pycocotools) produce.
 *
 * The index keeps, per image, its file name, id, size and the annotations that passed
 * the filters (iscrowd, size_threshold), in file order; segmentation data only when
 * asked for. Images are ordered by id, or as the `images` option lists them.
 */
#ifndef STOKER_IO_COCO_H
#define STOKER_IO_COCO_H

#include "../core/core.h"

enum { STK__COCO_SEG_NONE, STK__COCO_SEG_POLY, STK__COCO_SEG_RLE };

typedef struct {
  float bbox[4]; /* x, y, width, height as in the file */
  int32_t label; /* the category's position in the file's list + 1, or its id */
  uint8_t seg;   /* STK__COCO_SEG_* (NONE unless segmentation was asked for) */
  int64_t first; /* POLY: first polygon in polys; RLE: first count in rle */
  int64_t count; /* POLY: polygons; RLE: counts */
} stk__coco_ann;

typedef struct {
  int64_t first_vertex, num_vertices; /* into verts (x, y pairs) */
} stk__coco_poly;

typedef struct {
  char *file; /* file_name */
  int64_t id;
  int32_t width, height;
  int64_t first_ann, num_anns; /* into anns */
} stk__coco_image;

typedef struct {
  const char *path; /* the annotations file, for messages */
  double size_threshold;
  bool include_iscrowd;
  bool avoid_class_remapping;
  bool segmentation; /* keep polygons and RLE */
  bool skip_empty;
  const char *const *images; /* optional: the file names to read, in order */
  size_t num_images;
  int64_t max_bytes; /* the largest annotations file accepted */
} stk__coco_options;

typedef struct {
  stk__coco_image *images;
  int64_t num_images;
  stk__coco_ann *anns;
  stk__coco_poly *polys;
  float *verts; /* x, y pairs */
  uint32_t *rle;
  int64_t *samples; /* the images read, in order (indices into images) */
  int64_t num_samples;
} stk__coco_index;

/* Reads and indexes the annotations file. Errors name the file and, for bad content,
 * the byte offset of the value at fault. Free with stk__coco_free, also after a
 * failure. */
stk_status stk__coco_load(stk__coco_index *idx, const stk__coco_options *opt);
/* The same from the text of an annotations file already in memory (`len` bytes); errors
 * name opt->path. */
stk_status stk__coco_index_text(stk__coco_index *idx, const stk__coco_options *opt,
                                const char *text, size_t len);
void stk__coco_free(stk__coco_index *idx);

/* Decodes a compressed COCO RLE string (the LEB128-like text of pycocotools) into run
 * lengths; *counts is freed by the caller. False on malformed text. */
bool stk__coco_rle_decode(const char *text, size_t len, uint32_t **counts, int64_t *n);

/* Sets to 1 the pixels of the h x w row-major `mask` covered by run lengths `counts`
 * (column-major runs, starting with background). False when the runs overrun the
 * image. */
bool stk__coco_rle_paint(const uint32_t *counts, int64_t n, int32_t h, int32_t w, uint8_t *mask);

/* Sets to 1 the pixels of `mask` (h x w, row-major) inside the polygon `xy` (n vertices)
 * by the COCO rule (vertices snapped to a 1/5-pixel grid, even-odd crossings per pixel
 * column), OR-ing into what is there. False when the polygon is unreasonably far outside
 * the image (its outline would take too much work). */
bool stk__coco_poly_paint(const float *xy, int64_t n, int32_t h, int32_t w, uint8_t *mask);

#endif /* STOKER_IO_COCO_H */
