/* Loading COCO annotation files into the index of coco.h. */
#include "coco.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileset.h"
#include "json.h"

/* Growable arrays of the index being built. */
typedef struct {
  const stk__coco_options *opt;
  const stk__json_doc *doc;
  stk__coco_index *idx;
  int64_t *cat_ids; /* the categories' ids, in file order */
  int64_t num_cats;
  int64_t *img_order; /* image positions sorted by id */
  stk__coco_ann *anns;
  int64_t *ann_image; /* the image of each kept annotation */
  int64_t num_anns, cap_anns;
  int64_t num_polys, cap_polys, num_verts, cap_verts, num_rle, cap_rle;
} builder;

static stk_status bad(const builder *b, uint32_t tok, const char *what) {
  return STK_FAIL(STK_ERR_DECODE, "%s: byte %u: %s", b->opt->path,
                  tok < b->doc->count ? b->doc->toks[tok].start : 0, what);
}

/* Makes room for `more` elements of `size` bytes in *arr (capacity *cap). */
static bool grow(void **arr, int64_t *cap, int64_t used, int64_t more, size_t size) {
  /* allocated even for nothing more: an annotation of zero counts or an empty polygon
   * still points into the array (NULL + 0 is undefined) */
  if (*arr && used + more <= *cap) return true;
  int64_t c = *cap ? *cap : 64;
  while (c < used + more) c *= 2;
  void *p = stk__realloc(*arr, (size_t)c * size, "the COCO index");
  if (!p) return false;
  *arr = p, *cap = c;
  return true;
}

static stk_status read_file(const stk__coco_options *opt, char **text, size_t *len) {
  int fd = open(opt->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return STK_FAIL(errno == ENOENT ? STK_ERR_NOT_FOUND : STK_ERR_IO, "cannot open '%s': %s",
                    opt->path, strerror(errno));
  struct stat sb;
  stk_status st = STK_OK;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    st = STK_FAIL(STK_ERR_IO, "'%s' is not a regular file", opt->path);
  else if ((int64_t)sb.st_size > opt->max_bytes)
    st = STK_FAIL(STK_ERR_LIMIT, "'%s' has %lld bytes, more than the %lld accepted", opt->path,
                  (long long)sb.st_size, (long long)opt->max_bytes);
  *text = st == STK_OK ? stk__malloc((size_t)sb.st_size + 1, "the annotations file") : NULL;
  if (st == STK_OK && !*text) st = STK_ERR_OUT_OF_MEMORY;
  size_t got = 0;
  if (st == STK_OK) st = stk__pread_full(fd, opt->path, 0, *text, (size_t)sb.st_size, &got);
  if (st == STK_OK && got != (size_t)sb.st_size)
    st = STK_FAIL(STK_ERR_IO, "'%s' shrank while it was read", opt->path);
  close(fd);
  *len = got;
  return st;
}

/* The array member `key` of the root object (absent: an empty array). */
static stk_status section(const builder *b, const char *key, uint32_t *arr) {
  if (b->doc->toks[0].type != STK__JSON_OBJECT) return bad(b, 0, "the root is not an object");
  *arr = stk__json_member(b->doc, 0, key);
  if (*arr && b->doc->toks[*arr].type != STK__JSON_ARRAY) {
    char what[64];
    snprintf(what, sizeof what, "\"%s\" is not an array", key);
    return bad(b, *arr, what);
  }
  return STK_OK;
}

static stk_status load_categories(builder *b) {
  uint32_t arr;
  STK_TRY(section(b, "categories", &arr));
  int64_t n = arr ? b->doc->toks[arr].size : 0;
  b->cat_ids = stk__calloc((size_t)n + 1, sizeof *b->cat_ids, "COCO categories");
  if (!b->cat_ids) return STK_ERR_OUT_OF_MEMORY;
  uint32_t t = stk__json_first(b->doc, arr);
  for (int64_t i = 0; i < n; i++, t = b->doc->toks[t].next)
    if (!stk__json_int(b->doc, stk__json_member(b->doc, t, "id"), INT32_MIN, INT32_MAX,
                       &b->cat_ids[i]))
      return bad(b, t, "a category without an integer \"id\"");
  b->num_cats = n;
  return STK_OK;
}

/* The label of category `id`: its position in the list + 1 (0 when unknown), or the id
 * itself with avoid_class_remapping. */
static int32_t label_of(const builder *b, int64_t id) {
  if (b->opt->avoid_class_remapping) return (int32_t)id;
  for (int64_t i = 0; i < b->num_cats; i++)
    if (b->cat_ids[i] == id) return (int32_t)(i + 1);
  return 0;
}

static stk_status load_image(builder *b, uint32_t t, stk__coco_image *img) {
  const stk__json_doc *d = b->doc;
  int64_t w, h;
  if (!stk__json_int(d, stk__json_member(d, t, "id"), INT64_MIN / 2, INT64_MAX / 2, &img->id))
    return bad(b, t, "an image without an integer \"id\"");
  if (!stk__json_int(d, stk__json_member(d, t, "width"), 1, INT32_MAX, &w) ||
      !stk__json_int(d, stk__json_member(d, t, "height"), 1, INT32_MAX, &h))
    return bad(b, t, "an image without a positive integer \"width\" and \"height\"");
  img->width = (int32_t)w, img->height = (int32_t)h;
  img->file = stk__json_strdup(d, stk__json_member(d, t, "file_name"));
  if (!img->file) return bad(b, t, "an image without a \"file_name\" string");
  return STK_OK;
}

static const stk__coco_image *sort_base;
static int cmp_image_id(const void *a, const void *b) {
  int64_t x = sort_base[*(const int64_t *)a].id, y = sort_base[*(const int64_t *)b].id;
  if (x != y) return (x > y) - (x < y);
  return (*(const int64_t *)a > *(const int64_t *)b) - (*(const int64_t *)a < *(const int64_t *)b);
}

static stk_status load_images(builder *b) {
  uint32_t arr;
  STK_TRY(section(b, "images", &arr));
  stk__coco_index *idx = b->idx;
  int64_t n = arr ? b->doc->toks[arr].size : 0;
  idx->images = stk__calloc((size_t)n + 1, sizeof *idx->images, "COCO images");
  b->img_order = stk__calloc((size_t)n + 1, sizeof *b->img_order, "COCO images");
  if (!idx->images || !b->img_order) return STK_ERR_OUT_OF_MEMORY;
  uint32_t t = stk__json_first(b->doc, arr);
  for (int64_t i = 0; i < n; i++, t = b->doc->toks[t].next) {
    idx->num_images = i + 1;
    STK_TRY(load_image(b, t, &idx->images[i]));
    b->img_order[i] = i;
  }
  sort_base = idx->images; /* build time only: one thread */
  qsort(b->img_order, (size_t)n, sizeof *b->img_order, cmp_image_id);
  return STK_OK;
}

/* The position of the image with this id, -1 when none. */
static int64_t find_image(const builder *b, int64_t id) {
  int64_t lo = 0, hi = b->idx->num_images;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (b->idx->images[b->img_order[mid]].id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < b->idx->num_images && b->idx->images[b->img_order[lo]].id == id ? b->img_order[lo]
                                                                              : -1;
}

static stk_status load_polygons(builder *b, uint32_t seg, stk__coco_ann *a) {
  const stk__json_doc *d = b->doc;
  stk__coco_index *idx = b->idx;
  a->seg = STK__COCO_SEG_POLY;
  a->first = b->num_polys;
  uint32_t p = stk__json_first(d, seg);
  for (uint32_t i = 0; i < d->toks[seg].size; i++, p = d->toks[p].next) {
    if (d->toks[p].type != STK__JSON_ARRAY || d->toks[p].size % 2)
      return bad(b, p, "a polygon is not an array of x, y pairs");
    int64_t nv = d->toks[p].size / 2;
    if (!grow((void **)&idx->polys, &b->cap_polys, b->num_polys, 1, sizeof *idx->polys) ||
        !grow((void **)&idx->verts, &b->cap_verts, b->num_verts, 2 * nv, sizeof *idx->verts))
      return STK_ERR_OUT_OF_MEMORY;
    idx->polys[b->num_polys++] = (stk__coco_poly){b->num_verts / 2, nv};
    uint32_t c = stk__json_first(d, p);
    for (int64_t k = 0; k < 2 * nv; k++, c = d->toks[c].next) {
      double v;
      if (!stk__json_number(d, c, &v)) return bad(b, c, "a polygon coordinate is not a number");
      idx->verts[b->num_verts++] = (float)v;
    }
  }
  a->count = b->num_polys - a->first;
  return STK_OK;
}

/* An RLE object: {"size": [h, w], "counts": [..] or "compressed"}. */
static stk_status load_rle(builder *b, uint32_t seg, const stk__coco_image *img, stk__coco_ann *a) {
  const stk__json_doc *d = b->doc;
  uint32_t size = stk__json_member(d, seg, "size"), counts = stk__json_member(d, seg, "counts");
  int64_t h, w;
  uint32_t s0 = stk__json_first(d, size);
  if (!s0 || d->toks[size].size != 2 || !stk__json_int(d, s0, 0, INT32_MAX, &h) ||
      !stk__json_int(d, d->toks[s0].next, 0, INT32_MAX, &w))
    return bad(b, seg, "an RLE mask without \"size\": [height, width]");
  if (h != img->height || w != img->width)
    return bad(b, seg, "an RLE mask whose size differs from its image's");
  uint32_t *c = NULL;
  int64_t n = 0;
  if (d->toks[counts].type == STK__JSON_STRING && counts) {
    char *text = stk__json_strdup(d, counts); /* escapes resolved ('\\' is a digit) */
    bool ok = text && stk__coco_rle_decode(text, strlen(text), &c, &n);
    free(text);
    if (!ok) return bad(b, counts, "malformed compressed RLE counts");
  } else if (counts && d->toks[counts].type == STK__JSON_ARRAY) {
    n = d->toks[counts].size;
    c = malloc((size_t)(n ? n : 1) * sizeof *c);
    if (!c) return STK_ERR_OUT_OF_MEMORY;
    uint32_t t = stk__json_first(d, counts);
    for (int64_t i = 0; i < n; i++, t = d->toks[t].next) {
      int64_t v;
      if (!stk__json_int(d, t, 0, UINT32_MAX, &v)) {
        free(c);
        return bad(b, t, "an RLE count is not a non-negative integer");
      }
      c[i] = (uint32_t)v;
    }
  } else {
    return bad(b, seg, "an RLE mask without \"counts\"");
  }
  stk__coco_index *idx = b->idx;
  bool ok = grow((void **)&idx->rle, &b->cap_rle, b->num_rle, n, sizeof *idx->rle);
  if (ok && n > 0) memcpy(idx->rle + b->num_rle, c, (size_t)n * sizeof *c);
  free(c);
  if (!ok) return STK_ERR_OUT_OF_MEMORY;
  a->seg = STK__COCO_SEG_RLE, a->first = b->num_rle, a->count = n;
  b->num_rle += n;
  return STK_OK;
}

static stk_status load_segmentation(builder *b, uint32_t t, int64_t image, stk__coco_ann *a) {
  uint32_t seg = stk__json_member(b->doc, t, "segmentation");
  if (!seg) return STK_OK;
  uint8_t type = b->doc->toks[seg].type;
  if (type == STK__JSON_ARRAY) return load_polygons(b, seg, a);
  if (type == STK__JSON_OBJECT) return load_rle(b, seg, &b->idx->images[image], a);
  return bad(b, seg, "\"segmentation\" is neither polygons nor an RLE object");
}

/* One annotation: kept (appended) unless it refers to an unknown image or the filters
 * drop it. */
static stk_status load_ann(builder *b, uint32_t t) {
  const stk__json_doc *d = b->doc;
  int64_t image_id, cat = 0, crowd = 0;
  if (!stk__json_int(d, stk__json_member(d, t, "image_id"), INT64_MIN / 2, INT64_MAX / 2,
                     &image_id))
    return bad(b, t, "an annotation without an integer \"image_id\"");
  int64_t image = find_image(b, image_id);
  if (image < 0) return STK_OK;
  uint32_t ct = stk__json_member(d, t, "category_id"), cr = stk__json_member(d, t, "iscrowd");
  if (!stk__json_int(d, ct, INT32_MIN, INT32_MAX, &cat))
    return bad(b, t, "an annotation without an integer \"category_id\"");
  if (cr && !stk__json_int(d, cr, 0, 1, &crowd)) return bad(b, cr, "\"iscrowd\" is not 0 or 1");
  if (crowd && !b->opt->include_iscrowd) return STK_OK;
  stk__coco_ann a = {.label = label_of(b, cat), .seg = STK__COCO_SEG_NONE};
  uint32_t box = stk__json_member(d, t, "bbox"), c = stk__json_first(d, box);
  if (!box || d->toks[box].type != STK__JSON_ARRAY || d->toks[box].size != 4)
    return bad(b, t, "an annotation without a \"bbox\" of 4 numbers");
  for (int k = 0; k < 4; k++, c = d->toks[c].next) {
    double v;
    if (!stk__json_number(d, c, &v)) return bad(b, c, "a bbox value is not a number");
    a.bbox[k] = (float)v;
  }
  if (a.bbox[2] < b->opt->size_threshold || a.bbox[3] < b->opt->size_threshold) return STK_OK;
  if (b->opt->segmentation) STK_TRY(load_segmentation(b, t, image, &a));
  if (!grow((void **)&b->anns, &b->cap_anns, b->num_anns, 1, sizeof *b->anns)) {
    return STK_ERR_OUT_OF_MEMORY;
  }
  int64_t cap = b->cap_anns;
  void *p = stk__realloc(b->ann_image, (size_t)cap * sizeof *b->ann_image, "the COCO index");
  if (!p) return STK_ERR_OUT_OF_MEMORY;
  b->ann_image = p;
  b->anns[b->num_anns] = a;
  b->ann_image[b->num_anns++] = image;
  return STK_OK;
}

/* Groups the kept annotations by image, keeping file order within an image. */
static stk_status group_anns(builder *b) {
  stk__coco_index *idx = b->idx;
  idx->anns = stk__calloc((size_t)b->num_anns + 1, sizeof *idx->anns, "COCO annotations");
  if (!idx->anns) return STK_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; i < b->num_anns; i++) idx->images[b->ann_image[i]].num_anns++;
  int64_t at = 0;
  for (int64_t i = 0; i < idx->num_images; i++) {
    idx->images[i].first_ann = at;
    at += idx->images[i].num_anns;
    idx->images[i].num_anns = 0;
  }
  for (int64_t i = 0; i < b->num_anns; i++) {
    stk__coco_image *img = &idx->images[b->ann_image[i]];
    idx->anns[img->first_ann + img->num_anns++] = b->anns[i];
  }
  return STK_OK;
}

static stk_status load_anns(builder *b) {
  uint32_t arr;
  STK_TRY(section(b, "annotations", &arr));
  int64_t n = arr ? b->doc->toks[arr].size : 0;
  uint32_t t = stk__json_first(b->doc, arr);
  for (int64_t i = 0; i < n; i++, t = b->doc->toks[t].next) {
    if (b->doc->toks[t].type != STK__JSON_OBJECT)
      return bad(b, t, "an annotation is not an object");
    STK_TRY(load_ann(b, t));
  }
  return group_anns(b);
}

static const stk__coco_image *name_base;
static int cmp_image_name(const void *a, const void *b) {
  int c = strcmp(name_base[*(const int64_t *)a].file, name_base[*(const int64_t *)b].file);
  if (c) return c;
  return (*(const int64_t *)a > *(const int64_t *)b) - (*(const int64_t *)a < *(const int64_t *)b);
}

/* The first image named `name` (by_name: positions sorted by file name), -1 when none. */
static int64_t find_name(const stk__coco_index *idx, const int64_t *by_name, const char *name) {
  int64_t lo = 0, hi = idx->num_images;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (strcmp(idx->images[by_name[mid]].file, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < idx->num_images && strcmp(idx->images[by_name[lo]].file, name) == 0 ? by_name[lo]
                                                                                  : -1;
}

/* The samples: the images by id, or those `images` names, in its order; then without the
 * empty ones when skip_empty. */
static stk_status choose_samples(builder *b) {
  const stk__coco_options *o = b->opt;
  stk__coco_index *idx = b->idx;
  int64_t n = o->images ? (int64_t)o->num_images : idx->num_images;
  idx->samples = stk__calloc((size_t)n + 1, sizeof *idx->samples, "COCO samples");
  int64_t *by_name =
      o->images ? stk__calloc((size_t)idx->num_images + 1, sizeof *by_name, "COCO file names")
                : NULL;
  if (!idx->samples || (o->images && !by_name)) return free(by_name), STK_ERR_OUT_OF_MEMORY;
  for (int64_t i = 0; by_name && i < idx->num_images; i++) by_name[i] = i;
  name_base = idx->images; /* build time only: one thread */
  if (by_name) qsort(by_name, (size_t)idx->num_images, sizeof *by_name, cmp_image_name);
  stk_status st = STK_OK;
  for (int64_t i = 0; i < n && st == STK_OK; i++) {
    int64_t img = o->images ? find_name(idx, by_name, o->images[i]) : b->img_order[i];
    if (img < 0)
      st = STK_FAIL(STK_ERR_NOT_FOUND, "%s: images[%lld] '%s' is not in the file", o->path,
                    (long long)i, o->images[i]);
    else if (!(o->skip_empty && idx->images[img].num_anns == 0))
      idx->samples[idx->num_samples++] = img;
  }
  free(by_name);
  return st;
}

stk_status stk__coco_index_text(stk__coco_index *idx, const stk__coco_options *opt,
                                const char *text, size_t len) {
  memset(idx, 0, sizeof *idx);
  stk__json_doc doc = {0};
  builder b = {.opt = opt, .doc = &doc, .idx = idx};
  stk_status st = stk__json_parse(&doc, text, len, opt->path);
  if (st == STK_OK) st = load_categories(&b);
  if (st == STK_OK) st = load_images(&b);
  if (st == STK_OK) st = load_anns(&b);
  if (st == STK_OK) st = choose_samples(&b);
  stk__json_free(&doc);
  free(b.cat_ids);
  free(b.img_order);
  free(b.anns);
  free(b.ann_image);
  return st;
}

stk_status stk__coco_load(stk__coco_index *idx, const stk__coco_options *opt) {
  memset(idx, 0, sizeof *idx);
  char *text = NULL;
  size_t len = 0;
  stk_status st = read_file(opt, &text, &len);
  if (st == STK_OK) st = stk__coco_index_text(idx, opt, text, len);
  free(text);
  return st;
}

void stk__coco_free(stk__coco_index *idx) {
  if (!idx) return;
  for (int64_t i = 0; i < idx->num_images; i++) free(idx->images[i].file);
  free(idx->images);
  free(idx->anns);
  free(idx->polys);
  free(idx->verts);
  free(idx->rle);
  free(idx->samples);
  memset(idx, 0, sizeof *idx);
}
