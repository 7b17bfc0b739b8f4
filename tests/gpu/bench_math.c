/* GPU throughput of the math family (api_math.h) on the batch of 256 decoded 375x500x3
 * uint8 images already on the device: one RESULT line per operator (bench_util.h). Bytes
 * moved: each input element read once and each output element written once.
 * usage: bench_math [--batch N] [--lib PATH] [--size HxW] */
#include "bench_util.h"
#include "cuda/api_math.h"
#include "shared/math_common.h"
#include "ops/arithmetic.h"

typedef struct {
  int op;               /* stk__binop, stk__unop, or -1 (clamp) */
  stk_dtype in, b, out; /* b: the second operand's type (binary) */
  const void *src;      /* NULL: the uint8 images */
  void *dst;
  int b_mode;         /* binary: STK_GPU_OPERAND_SCALAR or _PERIODIC */
  uint64_t scalar;    /* binary SCALAR: the element's bytes */
  const void *b_data; /* binary PERIODIC: device vector of `period` elements */
  int64_t period;
  double lo, hi; /* clamp */
} job;

static const void *job_src(const bu_bench *b, const job *j, int i) {
  size_t n = b->image_bytes, es = stk_dtype_size(j->in);
  return j->src ? (const void *)((const char *)j->src + (size_t)i * n * es)
                : (const void *)bu_image(b, i);
}
static void *job_dst(const bu_bench *b, const job *j, int i) {
  return (char *)j->dst + (size_t)i * b->image_bytes * stk_dtype_size(j->out);
}

static int call_binary(bu_bench *b, void *user) {
  const job *j = (const job *)user;
  stk_gpu_binary_sample *s = (stk_gpu_binary_sample *)calloc((size_t)b->batch, sizeof *s);
  if (!s) return STK_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < b->batch; i++) {
    s[i].dst = job_dst(b, j, i);
    s[i].count = (int64_t)b->image_bytes;
    s[i].ndim = 3;
    s[i].shape[0] = b->h, s[i].shape[1] = b->w, s[i].shape[2] = b->c;
    s[i].a.data = job_src(b, j, i);
    s[i].a.mode = STK_GPU_OPERAND_DENSE;
    s[i].b.mode = j->b_mode;
    s[i].b.data = j->b_mode == STK_GPU_OPERAND_SCALAR ? NULL : j->b_data;
    s[i].b.scalar = j->scalar;
    s[i].b.period = j->period;
  }
  stk_gpu_binary_args args = {j->op, j->in, j->b, j->out,
                              stk__binary_kind((stk__binop)j->op, j->in, j->b, j->out)};
  int rc = stk_gpu_run_binary(b->api, b->ctx, b->batch, s, &args, b->stream, b->err, sizeof b->err);
  free(s);
  return rc;
}

static int call_unary(bu_bench *b, void *user) {
  const job *j = (const job *)user;
  stk_gpu_unary_sample *s = (stk_gpu_unary_sample *)calloc((size_t)b->batch, sizeof *s);
  if (!s) return STK_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < b->batch; i++) {
    s[i].src = job_src(b, j, i);
    s[i].dst = job_dst(b, j, i);
    s[i].count = (int64_t)b->image_bytes;
    s[i].lo = j->lo, s[i].hi = j->hi;
    stk_ar_int_bounds(j->in, j->lo, j->hi, &s[i].ilo, &s[i].ihi, &s[i].ulo, &s[i].uhi);
  }
  stk_gpu_unary_args args = {j->op, j->in, j->out};
  int rc = stk_gpu_run_unary(b->api, b->ctx, b->batch, s, &args, b->stream, b->err, sizeof b->err);
  free(s);
  return rc;
}

static int call_cast(bu_bench *b, void *user) {
  const job *j = (const job *)user;
  stk_gpu_cast_sample *s = (stk_gpu_cast_sample *)calloc((size_t)b->batch, sizeof *s);
  if (!s) return STK_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < b->batch; i++) {
    s[i].src = job_src(b, j, i);
    s[i].dst = job_dst(b, j, i);
    s[i].count = (int64_t)b->image_bytes;
  }
  int rc = stk_gpu_run_cast(b->api, b->ctx, b->batch, s, &(stk_gpu_io_args){j->in, j->out},
                            b->stream, b->err, sizeof b->err);
  free(s);
  return rc;
}

typedef struct {
  void *labels, *dst;
  int64_t classes;
} oh_job;

static int call_one_hot(bu_bench *b, void *user) {
  const oh_job *j = (const oh_job *)user;
  stk_gpu_one_hot_sample *s = (stk_gpu_one_hot_sample *)calloc((size_t)b->batch, sizeof *s);
  if (!s) return STK_ERR_OUT_OF_MEMORY;
  float on = 1.0f;
  for (int i = 0; i < b->batch; i++) {
    s[i].src = (const int32_t *)j->labels + i;
    s[i].dst = (float *)j->dst + (size_t)i * (size_t)j->classes;
    s[i].count = 1, s[i].num_classes = j->classes, s[i].inner = 1;
    memcpy(&s[i].on, &on, sizeof on);
  }
  int rc = stk_gpu_run_one_hot(b->api, b->ctx, b->batch, s,
                               &(stk_gpu_io_args){STK_DTYPE_INT32, STK_DTYPE_FLOAT32}, b->stream,
                               b->err, sizeof b->err);
  free(s);
  return rc;
}

int main(int argc, char **argv) {
  bu_bench b;
  bu_open(&b, argc, argv);
  BU_DIE_IF(&b, !b.api->supports(b.ctx, STK_GPU_K_BINARY), "no math kernels");
  double n = (double)b.image_bytes * b.batch; /* elements */
  void *f0, *f1, *vec;
  size_t fbytes = (size_t)n * sizeof(float);
  BU_DIE_IF(&b, b.api->device_alloc(b.ctx, fbytes, b.stream, &f0, b.err, sizeof b.err), "alloc");
  BU_DIE_IF(&b, b.api->device_alloc(b.ctx, fbytes, b.stream, &f1, b.err, sizeof b.err), "alloc");
  BU_DIE_IF(&b, b.api->device_alloc(b.ctx, 3 * sizeof(float), b.stream, &vec, b.err, sizeof b.err),
            "alloc");
  float hvec[3] = {0.5f, 1.0f, 2.0f};
  BU_DIE_IF(&b, b.api->memcpy_async(b.ctx, vec, hvec, sizeof hvec, b.stream, b.err, sizeof b.err),
            "upload");
  float half = 0.5f;
  uint64_t s_half = 0, s_128 = 0;
  memcpy(&s_half, &half, sizeof half);
  int32_t v128 = 128;
  memcpy(&s_128, &v128, sizeof v128);

  /* image * 0.5 -> float32, then (that) + 0.5 -> float32: the two launches of
   * `image * 0.5 + 0.5` */
  job mul = {STK__BIN_MUL,
             STK_DTYPE_UINT8,
             STK_DTYPE_FLOAT32,
             STK_DTYPE_FLOAT32,
             NULL,
             f0,
             STK_GPU_OPERAND_SCALAR,
             s_half,
             NULL,
             0,
             0,
             0};
  bu_time(&b, "math.mul(u8,f32_scalar)->f32", n * 5, call_binary, &mul);
  job add = {STK__BIN_ADD,
             STK_DTYPE_FLOAT32,
             STK_DTYPE_FLOAT32,
             STK_DTYPE_FLOAT32,
             f0,
             f1,
             STK_GPU_OPERAND_SCALAR,
             s_half,
             NULL,
             0,
             0,
             0};
  bu_time(&b, "math.add(f32,f32_scalar)->f32", n * 8, call_binary, &add);
  job chan = {STK__BIN_MUL,
              STK_DTYPE_UINT8,
              STK_DTYPE_FLOAT32,
              STK_DTYPE_FLOAT32,
              NULL,
              f0,
              STK_GPU_OPERAND_PERIODIC,
              0,
              vec,
              3,
              0,
              0};
  bu_time(&b, "math.mul(u8,f32[3]_per_channel)->f32", n * 5, call_binary, &chan);
  job gt = {STK__BIN_GT,
            STK_DTYPE_UINT8,
            STK_DTYPE_INT32,
            STK_DTYPE_BOOL,
            NULL,
            f0,
            STK_GPU_OPERAND_SCALAR,
            s_128,
            NULL,
            0,
            0,
            0};
  bu_time(&b, "math.gt(u8,128)->bool", n * 2, call_binary, &gt);
  job sub = {STK__BIN_SUB,
             STK_DTYPE_UINT8,
             STK_DTYPE_UINT8,
             STK_DTYPE_UINT8,
             NULL,
             f0,
             STK_GPU_OPERAND_SCALAR,
             100,
             NULL,
             0,
             0,
             0};
  bu_time(&b, "math.sub(u8,u8_scalar)->u8", n * 2, call_binary, &sub);
  job clamp = {
      -1, STK_DTYPE_UINT8, STK_DTYPE_UINT8, STK_DTYPE_UINT8, NULL, f0, 0, 0, NULL, 0, 20.0, 200.0};
  bu_time(&b, "math.clamp(u8)", n * 2, call_unary, &clamp);
  job sq = {STK__UN_SQRT,
            STK_DTYPE_UINT8,
            STK_DTYPE_UINT8,
            STK_DTYPE_FLOAT32,
            NULL,
            f0,
            0,
            0,
            NULL,
            0,
            0,
            0};
  bu_time(&b, "math.sqrt(u8)->f32", n * 5, call_unary, &sq);
  job cast = {0, STK_DTYPE_FLOAT32, STK_DTYPE_FLOAT32, STK_DTYPE_UINT8, f1, f0, 0, 0, NULL, 0, 0,
              0};
  bu_time(&b, "cast_like(f32->u8)", n * 5, call_cast, &cast);

  /* one_hot: one int32 label per sample, 1000 classes, float32 (tiny: launch-bound) */
  int32_t *labels = (int32_t *)malloc((size_t)b.batch * sizeof(int32_t));
  BU_DIE_IF(&b, !labels, "out of host memory");
  for (int i = 0; i < b.batch; i++) labels[i] = (i * 37) % 1000;
  BU_DIE_IF(&b,
            b.api->memcpy_async(b.ctx, f1, labels, (size_t)b.batch * sizeof(int32_t), b.stream,
                                b.err, sizeof b.err),
            "upload");
  oh_job oh = {f1, f0, 1000};
  bu_time(&b, "one_hot(1000_classes)->f32", (double)b.batch * (4 + 4000), call_one_hot, &oh);
  free(labels);

  b.api->device_free(b.ctx, f0, b.stream, b.err, sizeof b.err);
  b.api->device_free(b.ctx, f1, b.stream, b.err, sizeof b.err);
  b.api->device_free(b.ctx, vec, b.stream, b.err, sizeof b.err);
  bu_close(&b);
  return 0;
}
