/* COCO annotation files (io/coco.c, io/coco_mask.c): index the text with segmentation,
 * check that every sample and annotation points inside the index, and rasterise every
 * mask of the small images (polygons and run lengths), as readers.coco's workers do. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/coco.h"

static void check(const stk__coco_index *x) {
  for (int64_t i = 0; i < x->num_samples; i++)
    if (x->samples[i] < 0 || x->samples[i] >= x->num_images) __builtin_trap();
  for (int64_t i = 0; i < x->num_images; i++) {
    const stk__coco_image *img = &x->images[i];
    if (img->width < 1 || img->height < 1 || img->first_ann < 0 || img->num_anns < 0)
      __builtin_trap();
    if ((int64_t)img->width * img->height > (1 << 16)) continue;
    uint8_t *mask = calloc((size_t)img->width * (size_t)img->height, 1);
    if (!mask) return;
    for (int64_t k = 0; k < img->num_anns; k++) {
      const stk__coco_ann *a = &x->anns[img->first_ann + k];
      if (a->seg == STK__COCO_SEG_RLE)
        (void)stk__coco_rle_paint(x->rle + a->first, a->count, img->height, img->width, mask);
      for (int64_t p = 0; a->seg == STK__COCO_SEG_POLY && p < a->count; p++) {
        const stk__coco_poly *pg = &x->polys[a->first + p];
        (void)stk__coco_poly_paint(x->verts + 2 * pg->first_vertex, pg->num_vertices, img->height,
                                   img->width, mask);
      }
    }
    free(mask);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 20) return 0;
  char *text = malloc(size ? size : 1);
  if (!text) return 0;
  memcpy(text, data, size);
  stk__coco_options o = {.path = "fuzz.json",
                         .size_threshold = 0.1,
                         .include_iscrowd = true,
                         .segmentation = true,
                         .max_bytes = 1 << 20};
  stk__coco_index idx;
  if (stk__coco_index_text(&idx, &o, text, size) == STK_OK) check(&idx);
  stk__coco_free(&idx);
  free(text);
  return 0;
}
