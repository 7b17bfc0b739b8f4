/* A complete stoker C program: an ImageFolder read, decoding of random crop windows,
 * resize to 224, random mirror, normalisation to float32 CHW, on 4 threads, two
 * batches ahead. Built by CMake as build/example_basic_pipeline.
 *
 * usage: example_basic_pipeline DATA_DIR */
#include <stdio.h>

#include "stoker/stoker.h"

#define CHECK(call)                                                \
  do {                                                             \
    if ((call) != STK_OK) {                                        \
      fprintf(stderr, "%s failed: %s\n", #call, stk_last_error()); \
      goto done;                                                   \
    }                                                              \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  int rc = 1;
  stk_pipeline *p = NULL;
  stk_op *op = NULL;
  stk_batch *batch = NULL;
  CHECK(stk_pipeline_create(&p));
  CHECK(stk_pipeline_set(p, STK_PIPE_BATCH_SIZE, 32));
  CHECK(stk_pipeline_set(p, STK_PIPE_NUM_THREADS, 4));
  CHECK(stk_pipeline_set(p, STK_PIPE_SEED, 42));

  /* jpegs, labels = readers.file(file_root=DATA_DIR, random_shuffle=true, name="Reader") */
  CHECK(stk_op_create("readers.file", "cpu", &op));
  CHECK(stk_op_set_name(op, "Reader"));
  CHECK(stk_op_set_string(op, "file_root", argv[1]));
  CHECK(stk_op_set_bool(op, "random_shuffle", 1));
  CHECK(stk_op_add_output(op, "jpegs"));
  CHECK(stk_op_add_output(op, "labels"));
  CHECK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);

  /* crops = decoders.image_random_crop(jpegs, size=[224, 224]) */
  CHECK(stk_op_create("decoders.image_random_crop", "cpu", &op));
  CHECK(stk_op_add_input(op, "jpegs"));
  CHECK(stk_op_set_ints(op, "size", (const int64_t[]){224, 224}, 2));
  CHECK(stk_op_add_output(op, "crops"));
  CHECK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);

  /* images = resize(crops, size=[224, 224]) */
  CHECK(stk_op_create("resize", "cpu", &op));
  CHECK(stk_op_add_input(op, "crops"));
  CHECK(stk_op_set_floats(op, "size", (const double[]){224, 224}, 2));
  CHECK(stk_op_add_output(op, "images"));
  CHECK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);

  /* mirror = random.coin_flip(probability=0.5) */
  CHECK(stk_op_create("random.coin_flip", "cpu", &op));
  CHECK(stk_op_set_float(op, "probability", 0.5));
  CHECK(stk_op_add_output(op, "mirror"));
  CHECK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);

  /* out = crop_mirror_normalize(images, mirror=mirror, mean=..., std=...) */
  CHECK(stk_op_create("crop_mirror_normalize", "cpu", &op));
  CHECK(stk_op_add_input(op, "images"));
  CHECK(stk_op_set_arg_input(op, "mirror", "mirror"));
  CHECK(stk_op_set_floats(op, "mean", (const double[]){123.675, 116.28, 103.53}, 3));
  CHECK(stk_op_set_floats(op, "std", (const double[]){58.395, 57.12, 57.375}, 3));
  CHECK(stk_op_add_output(op, "out"));
  CHECK(stk_pipeline_add_op(p, op));
  stk_op_destroy(op);
  op = NULL;

  const char *outputs[] = {"out", "labels"};
  CHECK(stk_pipeline_set_outputs(p, outputs, 2));
  CHECK(stk_pipeline_build(p));

  int64_t epoch_size;
  CHECK(stk_pipeline_epoch_size(p, "Reader", &epoch_size));
  printf("epoch size %lld\n", (long long)epoch_size);
  for (int b = 0; b < 3; b++) {
    CHECK(stk_pipeline_run(p, &batch));
    stk_tensor_list *images = stk_batch_output(batch, 0);
    stk_tensor_desc first;
    CHECK(stk_tensor_list_sample(images, 0, &first));
    printf("batch %d: %zu samples of %s %s [%lld, %lld, %lld], dense: %s\n", b,
           stk_tensor_list_num_samples(images), stk_dtype_name(stk_tensor_list_dtype(images)),
           stk_tensor_list_layout(images), (long long)first.shape[0], (long long)first.shape[1],
           (long long)first.shape[2], stk_tensor_list_is_dense(images) ? "yes" : "no");
    stk_batch_release(batch);
    batch = NULL;
  }
  rc = 0;
done:
  stk_batch_release(batch);
  stk_op_destroy(op);
  stk_pipeline_destroy(p);
  return rc;
}
