/* The GPU side of the video decoders and readers (video_gpu.h). */
#include "video_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "image_util.h"

stk_status stk__vgpu_open(stk__node *node, stk__video_hw **out) {
  const stk__gpu *g = stk__node_gpu(node);
  if (!g) return STK__SFAIL(STK_ERR_INTERNAL, node, NULL, "the pipeline's device is not open");
  stk_status st = stk__video_hw_open(stk__node_device_id(node), g->info.host_memory != 0, out);
  if (st == STK_OK) return STK_OK;
  char why[512];
  snprintf(why, sizeof why, "%s", stk_last_error());
  return STK__SFAIL(st, node, NULL, "cannot decode on the GPU (NVDEC): %s", why);
}

/* Frames in the output's slots: the decoded ones where idx >= 0. */
static stk_status decode_into(stk__node *node, stk__sample *s, stk__video_hw *hw, stk__video *v,
                              const int64_t *idx, int64_t count, stk__vgpu_record *rec) {
  int64_t *want = stk__scratch(s, sizeof(int64_t) * (size_t)(count + 1));
  int64_t *slot = stk__scratch(s, sizeof(int64_t) * (size_t)(count + 1));
  stk__video_gpu_frame *got = calloc((size_t)count + 1, sizeof *got);
  if (!want || !slot || !got) {
    free(got);
    return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory for %lld frames",
                      (long long)count);
  }
  int64_t m = 0;
  for (int64_t i = 0; i < count; i++)
    if (idx[i] >= 0) want[m] = idx[i], slot[m++] = i;
  stk_status st = stk__video_read_gpu(v, hw, want, m, got);
  if (st == STK_OK)
    for (int64_t k = 0; k < m; k++) rec->frames[slot[k]] = got[k];
  free(got);
  return st == STK_OK ? STK_OK : stk__sample_wrap(st, node, s);
}

stk_status stk__vgpu_decode(stk__node *node, stk__sample *s, stk__video_hw *hw, stk__video *v,
                            const int64_t *idx, int64_t count, const stk__video_out *o,
                            stk__vgpu_record *rec) {
  int64_t h = stk__video_height(v), w = stk__video_width(v);
  int64_t oh = o->out_h > 0 ? o->out_h : h, ow = o->out_w > 0 ? o->out_w : w;
  int64_t most = stk__node_max_pixels(node);
  if (most > 0 && (count * h * w > most || count * oh * ow > most))
    return STK__SFAIL(STK_ERR_LIMIT, node, s, "%lld frames of %lldx%lld exceed max_image_pixels",
                      (long long)count, (long long)(ow > w ? ow : w), (long long)(oh > h ? oh : h));
  if (o->nfill != 1 && o->nfill != 3)
    return STK__SFAIL(STK_ERR_INVALID_ARGUMENT, node, s, "fill_value needs 1 or 3 values; got %zu",
                      o->nfill);
  *rec = (stk__vgpu_record){.count = count,
                            .width = (int)w,
                            .height = (int)h,
                            .out_width = (int)ow,
                            .out_height = (int)oh,
                            .dtype = o->dtype,
                            .normalized = o->normalized};
  for (int c = 0; c < 3; c++) { /* the CPU's fill: clamped, then truncated to uint8 */
    double f = o->fill[o->nfill == 3 ? c : 0];
    rec->fill[c] = (float)(uint8_t)(f < 0 ? 0 : f > 255 ? 255 : f);
  }
  rec->frames = calloc((size_t)count + 1, sizeof *rec->frames);
  if (!rec->frames) return STK__SFAIL(STK_ERR_OUT_OF_MEMORY, node, s, "no memory");
  STK_TRY(decode_into(node, s, hw, v, idx, count, rec));
  rec->ready = true;
  return STK_OK;
}

void stk__vgpu_release(stk__node *node, void *record) {
  (void)node;
  stk__vgpu_record *rec = record;
  for (int64_t i = 0; rec->frames && i < rec->count; i++) stk__video_gpu_release(&rec->frames[i]);
  free(rec->frames);
  for (int e = 0; e < rec->nextra; e++) free(rec->extra[e].data);
  memset(rec, 0, sizeof *rec);
}

/* Every sample's prepared record, or a failure naming the first unprepared one. */
static stk_status records(stk__node *node, stk__gpu_batch *b, const stk__vgpu_record **recs) {
  for (size_t i = 0; i < stk__gpu_batch_size(b); i++) {
    recs[i] = stk__gpu_prep(b, i);
    if (!recs[i] || !recs[i]->ready)
      return STK__SFAIL(STK_ERR_UNSUPPORTED, node, stk__gpu_sample(b, i),
                        "the frames were not decoded in the CPU stage (the input, an argument "
                        "or a condition comes from a GPU operator: feed them from the CPU)");
  }
  return STK_OK;
}

/* Whether any record asks for frames of another size than decoded. */
static bool any_resized(const stk__vgpu_record **recs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (recs[i]->out_width != recs[i]->width || recs[i]->out_height != recs[i]->height) return true;
  return false;
}

/* A list of every sample's frames, [F, H, W, 3] at the decoded (`decoded`) or the output
 * size. */
static stk_status alloc_frames(stk__gpu_batch *b, const stk__vgpu_record **recs, size_t n,
                               stk_dtype dt, bool decoded, stk_tensor_list **out) {
  int64_t *shapes = stk__calloc(4 * n + 1, sizeof(int64_t), "shapes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) {
    int64_t sh[4] = {recs[i]->count, decoded ? recs[i]->height : recs[i]->out_height,
                     decoded ? recs[i]->width : recs[i]->out_width, 3};
    memcpy(shapes + 4 * i, sh, sizeof sh);
  }
  stk_status st =
      stk__gpu_alloc_list(b, dt, 4, shapes, "FHWC", stk__gpu_shapes_equal(shapes, n, 4), out);
  free(shapes);
  return st;
}

static int64_t total_frames(const stk__vgpu_record **recs, size_t n) {
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) total += recs[i]->count;
  return total;
}

/* Converts every frame of the batch into `dst` (frames at the decoded size) in one launch:
 * dtype dt, scaled by 1/255 when `normalized`. */
static stk_status convert_frames(stk__node *node, stk__gpu_batch *b, const stk__vgpu_record **recs,
                                 size_t n, stk_tensor_list *dst, stk_dtype dt, bool normalized) {
  int64_t total = total_frames(recs, n), k = 0;
  if (total == 0) return STK_OK;
  stk_gpu_video_frame *fr = stk__calloc((size_t)total, sizeof *fr, "frames");
  if (!fr) return STK_ERR_OUT_OF_MEMORY;
  size_t esize = stk_dtype_size(dt);
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(dst, i, &d);
    const stk__vgpu_record *r = recs[i];
    size_t fb = (size_t)r->width * (size_t)r->height * 3 * esize;
    for (int64_t j = 0; j < r->count; j++, k++) {
      fr[k] = (stk_gpu_video_frame){
          .dst = (uint8_t *)d.data + (size_t)j * fb, .width = r->width, .height = r->height};
      if (r->frames[j].ref || r->frames[j].mem) fr[k].src = r->frames[j].view;
      memcpy(fr[k].fill, r->fill, sizeof fr[k].fill);
    }
  }
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  stk_gpu_video_args args = {dt != STK_DTYPE_UINT8, normalized ? 1.0f / 255.0f : 1.0f};
  stk_status st =
      stk__gpu_op_check(node,
                        stk_gpu_run_video_nv12_rgb(g->api, g->ctx, (int)total, fr, &args,
                                                   stk__gpu_stream(b), err, sizeof err),
                        err);
  free(fr);
  return st;
}

/* Resizes every frame of `src` (uint8, decoded size) into `dst` (output size, dtype dt,
 * scaled by 1/255 when `normalized`) in one resampling launch: linear and antialiased, as
 * the CPU path's libswscale bilinear scaling; float outputs are rounded to uint8 first, as
 * the CPU path scales to uint8 and then converts. */
static stk_status resize_frames(stk__node *node, stk__gpu_batch *b, const stk__vgpu_record **recs,
                                size_t n, stk_tensor_list *src, stk_tensor_list *dst, stk_dtype dt,
                                bool normalized) {
  int64_t total = total_frames(recs, n), k = 0;
  if (total == 0) return STK_OK;
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_RESAMPLE));
  stk_gpu_resample_sample *smp = stk__calloc((size_t)total, sizeof *smp, "a resample plan");
  if (!smp) return STK_ERR_OUT_OF_MEMORY;
  size_t esize = stk_dtype_size(dt);
  for (size_t i = 0; i < n; i++) {
    stk_tensor_desc s, d;
    stk_tensor_list_sample(src, i, &s);
    stk_tensor_list_sample(dst, i, &d);
    const stk__vgpu_record *r = recs[i];
    size_t in_b = (size_t)r->width * (size_t)r->height * 3;
    size_t out_b = (size_t)r->out_width * (size_t)r->out_height * 3 * esize;
    for (int64_t j = 0; j < r->count; j++, k++) {
      smp[k] = (stk_gpu_resample_sample){.src = (const uint8_t *)s.data + (size_t)j * in_b,
                                         .src_pitch = (size_t)r->width * 3,
                                         .src_h = r->height,
                                         .src_w = r->width,
                                         .dst = (uint8_t *)d.data + (size_t)j * out_b,
                                         .dst_h = r->out_height,
                                         .dst_w = r->out_width,
                                         .x1 = r->width,
                                         .y1 = r->height};
      for (int c = 0; c < 3; c++) smp[k].stddev[c] = 1.0;
    }
  }
  stk_gpu_resample_args args = {.channels = 3,
                                .in_dtype = STK_DTYPE_UINT8,
                                .out_dtype = dt,
                                .interp = STK_GPU_INTERP_LINEAR,
                                .antialias = 1,
                                .normalize = dt != STK_DTYPE_UINT8,
                                .quantize = 1,
                                .scale = normalized ? 1.0 / 255.0 : 1.0};
  stk__gpu *g = stk__gpu_device(b);
  char err[STK_GPU_ERRLEN] = "";
  stk_status st = stk__gpu_op_check(node,
                                    stk_gpu_run_resample(g->api, g->ctx, (int)total, smp, &args,
                                                         stk__gpu_stream(b), err, sizeof err),
                                    err);
  free(smp);
  return st;
}

/* Output 0: the frames, converted in one launch (straight into the output when no record
 * resizes; else into uint8 frames that one resampling launch resizes into the output). */
static stk_status run_frames(stk__node *node, stk__gpu_batch *b, const stk__vgpu_record **recs) {
  size_t n = stk__gpu_batch_size(b);
  stk_dtype dt = n ? recs[0]->dtype : STK_DTYPE_UINT8;
  bool normalized = n && recs[0]->normalized, resized = any_resized(recs, n);
  stk_tensor_list *out = NULL, *decoded = NULL;
  stk_status st = alloc_frames(b, recs, n, dt, false, &out);
  if (st == STK_OK && !resized) st = convert_frames(node, b, recs, n, out, dt, normalized);
  if (st == STK_OK && resized) {
    st = alloc_frames(b, recs, n, STK_DTYPE_UINT8, true, &decoded);
    if (st == STK_OK) st = convert_frames(node, b, recs, n, decoded, STK_DTYPE_UINT8, false);
    if (st == STK_OK) st = resize_frames(node, b, recs, n, decoded, out, dt, normalized);
    stk_tensor_list_release(decoded); /* stream-ordered: freed after the launches */
  }
  if (st == STK_OK) return stk__gpu_output(b, 0, out);
  stk_tensor_list_release(out);
  return st;
}

/* Output 1 + e: the records' extra e uploaded (pageable sources: the copy has read them
 * when memcpy_async returns). */
static stk_status run_extra(stk__node *node, stk__gpu_batch *b, const stk__vgpu_record **recs,
                            int e) {
  size_t n = stk__gpu_batch_size(b);
  int64_t *shapes = stk__calloc(n + 1, sizeof(int64_t), "shapes");
  if (!shapes) return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++) shapes[i] = recs[i]->extra[e].n;
  stk_dtype dt = recs[0]->extra[e].dtype;
  stk_tensor_list *out = NULL;
  stk_status st =
      stk__gpu_alloc_list(b, dt, 1, shapes, NULL, stk__gpu_shapes_equal(shapes, n, 1), &out);
  stk__gpu *g = stk__gpu_device(b);
  for (size_t i = 0; i < n && st == STK_OK; i++) {
    stk_tensor_desc d;
    stk_tensor_list_sample(out, i, &d);
    char err[STK_GPU_ERRLEN] = "";
    size_t bytes = (size_t)shapes[i] * stk_dtype_size(dt);
    if (bytes)
      st = stk__gpu_op_check(node,
                             g->api->memcpy_async(g->ctx, d.data, recs[i]->extra[e].data, bytes,
                                                  stk__gpu_stream(b), err, sizeof err),
                             err);
  }
  free(shapes);
  if (st == STK_OK) return stk__gpu_output(b, 1 + e, out);
  stk_tensor_list_release(out);
  return st;
}

stk_status stk__vgpu_run(stk__node *node, stk__gpu_batch *b) {
  size_t n = stk__gpu_batch_size(b);
  STK_TRY(stk__gpu_require(node, b, STK_GPU_K_VIDEO_NV12_RGB));
  const stk__vgpu_record **recs = stk__calloc(n + 1, sizeof *recs, "records");
  if (!recs) return STK_ERR_OUT_OF_MEMORY;
  stk_status st = records(node, b, recs);
  if (st == STK_OK) st = run_frames(node, b, recs);
  for (int e = 0; n && st == STK_OK && e < recs[0]->nextra; e++) st = run_extra(node, b, recs, e);
  free(recs);
  return st;
}
