/* What the mixed video decoder and the GPU video readers share (video_gpu.c): NVDEC
 * decoding of a sample's frames in the CPU stage (`prepare`, on the workers, so several
 * sequences decode at once on the GPU's NVDEC engines), and the GPU stage's assembly: one
 * kernel converting every frame of the batch to RGB in the output. */
#ifndef STOKER_OPS_VIDEO_GPU_H
#define STOKER_OPS_VIDEO_GPU_H

#include "op_gpu.h"
#include "video_util.h"

/* A host output a GPU reader uploads next to the frames (label, frame numbers, times). */
typedef struct {
  stk_dtype dtype;
  int64_t n;  /* elements (1-D) */
  void *data; /* malloc'd */
} stk__vgpu_extra;

/* A sample's prepared record (stk__op_def.prep_bytes). */
typedef struct {
  bool ready;
  int64_t count;             /* frames */
  int width, height;         /* the decoded frames' */
  int out_width, out_height; /* the output's: another size is resized on the GPU */
  stk_dtype dtype;
  bool normalized;
  float fill[3];
  stk__video_gpu_frame *frames; /* count of them, malloc'd; ref NULL: a padding frame */
  int nextra;
  stk__vgpu_extra extra[3];
} stk__vgpu_record;

/* At build, for a node on the mixed / GPU device: opens the pipeline's device for NVDEC
 * (the failure names the node and says why: no driver, an FFmpeg without CUDA). */
stk_status stk__vgpu_open(stk__node *node, stk__video_hw **out);
/* In prepare: decodes frames idx[0..count) of v (-1: padding) on the device into rec
 * (o->out_w / out_h: the size the GPU stage resizes them to; 0: the video's), and waits
 * until the frames' copies are done. Errors name the node and the sample. */
stk_status stk__vgpu_decode(stk__node *node, stk__sample *s, stk__video_hw *hw, stk__video *v,
                            const int64_t *idx, int64_t count, const stk__video_out *o,
                            stk__vgpu_record *rec);
/* prep_release: drops the frames and the extras. */
void stk__vgpu_release(stk__node *node, void *record);
/* run_gpu: output 0, the frames [F, H, W, 3] (FHWC) of every sample, converted to RGB by
 * one kernel, then resized (linear, antialiased) by a second where a record asks for
 * another size; outputs 1.. the records' extras. */
stk_status stk__vgpu_run(stk__node *node, stk__gpu_batch *b);

#endif /* STOKER_OPS_VIDEO_GPU_H */
