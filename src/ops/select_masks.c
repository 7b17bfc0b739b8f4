/* segmentation.select_masks: keeps the polygons of chosen masks (DALI's select_masks), in
 * the polygon/vertex form readers.coco(polygon_masks=True) produces. Output follows the
 * order of mask_ids (as DALI 2.4 does), a mask's polygons in input order; vertices are
 * copied in output order and renumbered; with reindex_masks a mask id becomes its
 * position in mask_ids. A mask made of several polygons keeps all of them (DALI 2.4
 * keeps only the last one; docs/detection.md). */
#include <string.h>

#include "image_util.h"

enum { A_REINDEX, A_COUNT_ };

static const stk_arg_schema select_masks_args[] = {
    [A_REINDEX] = {.name = "reindex_masks",
                   .type = STK_ARG_BOOL,
                   .default_text = "false",
                   .doc = "replace each kept mask id by its position in mask_ids"},
};
STK__CHECK_ARGS(select_masks_args, A_COUNT_);

static const stk_port_schema sm_in[] = {
    {"mask_ids", "int32 [K]: the masks to keep (distinct)"},
    {"polygons", "int32 [P, 3]: mask id, first vertex, end vertex"},
    {"vertices", "[V, D] vertices of any type"}};
static const stk_port_schema sm_out[] = {{"polygons", "the kept polygons, int32 [P', 3]"},
                                         {"vertices", "their vertices [V', D]"}};

static stk_status check_inputs(stk__node *node, stk__sample *s, const stk__tensor *ids,
                               const stk__tensor *polys, const stk__tensor *verts) {
  if (ids->dtype != STK_DTYPE_INT32 || ids->ndim != 1)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "mask_ids must be int32 [K]");
  if (polys->dtype != STK_DTYPE_INT32 || polys->ndim != 2 || polys->shape[1] != 3)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "polygons must be int32 [P, 3]");
  if (verts->ndim != 2)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "vertices must be [V, D]");
  const int32_t *id = ids->data, *p = polys->data;
  for (int64_t i = 0; i < ids->shape[0]; i++)
    for (int64_t j = 0; j < i; j++)
      if (id[i] == id[j])
        return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "mask id %d appears twice in mask_ids",
                          id[i]);
  for (int64_t i = 0; i < polys->shape[0]; i++)
    if (p[3 * i + 1] < 0 || p[3 * i + 2] < p[3 * i + 1] || p[3 * i + 2] > verts->shape[0])
      return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s,
                        "polygon %lld spans vertices %d..%d of %lld", (long long)i, p[3 * i + 1],
                        p[3 * i + 2], (long long)verts->shape[0]);
  return STK_OK;
}

static stk_status select_masks_run(stk__node *node, stk__sample *s) {
  const stk__tensor *ids = stk__input(s, 0), *polys = stk__input(s, 1), *verts = stk__input(s, 2);
  STK_TRY(check_inputs(node, s, ids, polys, verts));
  bool reindex = stk__arg_bool(node, NULL, A_REINDEX);
  const int32_t *id = ids->data, *p = polys->data;
  int64_t np = 0, nv = 0, k = ids->shape[0], npoly = polys->shape[0];
  for (int64_t m = 0; m < k; m++)
    for (int64_t i = 0; i < npoly; i++)
      if (p[3 * i] == id[m]) np++, nv += p[3 * i + 2] - p[3 * i + 1];
  int64_t ps[2] = {np, 3}, vs[2] = {nv, verts->shape[1]};
  stk__tensor *op, *ov;
  STK_TRY(stk__output(s, 0, STK_DTYPE_INT32, 2, ps, polys->layout, &op));
  STK_TRY(stk__output(s, 1, verts->dtype, 2, vs, verts->layout, &ov));
  size_t row = (size_t)verts->shape[1] * stk_dtype_size(verts->dtype);
  int32_t *o = op->data;
  int64_t at = 0;
  for (int64_t m = 0; m < k; m++) {
    for (int64_t i = 0; i < npoly; i++) {
      if (p[3 * i] != id[m]) continue;
      int64_t len = p[3 * i + 2] - p[3 * i + 1];
      *o++ = reindex ? (int32_t)m : id[m], *o++ = (int32_t)at, *o++ = (int32_t)(at + len);
      memcpy((char *)ov->data + (size_t)at * row,
             (const char *)verts->data + (size_t)p[3 * i + 1] * row, (size_t)len * row);
      at += len;
    }
  }
  return STK_OK;
}

static const stk_op_schema select_masks_schema = {
    .name = "segmentation.select_masks",
    .doc =
        "Keeps the polygons of the masks listed in mask_ids, with their vertices "
        "renumbered (DALI's segmentation.select_masks), in the order of mask_ids.",
    .devices = STK_DEVICE_CPU,
    .min_inputs = 3,
    .max_inputs = 3,
    .inputs = sm_in,
    .num_outputs = 2,
    .outputs = sm_out,
    .num_args = A_COUNT_,
    .args = select_masks_args,
};
const stk__op_def stk__op_select_masks = {.schema = &select_masks_schema,
                                          .run_sample = select_masks_run};
