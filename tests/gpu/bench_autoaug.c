/* Benchmark of the fused automatic augmentation on the GPU (api_autoaug.h): one call
 * (program upload + one launch) on 256 images of 224x224x3 uint8 (the size after
 * random_resized_crop) for RandAugment (n=2, m=9), AutoAugment (ImageNet policy) and
 * TrivialAugmentWide, in both conventions. The programs are drawn and encoded on the
 * host exactly as auto_augment.apply's GPU path does (stk__aa_draw, stk__aa_param,
 * stk__aa_gpu_step), once, outside the timing; a separate line reports that host cost.
 *
 * Bytes an ideal implementation moves: the input read once and the output written once
 * (the kernel's intermediate steps ping-pong through a scratch buffer that mostly stays
 * in L2, and the histogram steps read their input twice).
 * usage: bench_autoaug [--batch N] [--size HxW] [--lib PATH]   (default 256 of 224x224) */
#include <time.h>

#include "bench_util.h"
#include "../../src/ops/autoaug_kernels.h"
#include "../../src/ops/image_util.h"

typedef struct {
  const char *name;
  stk__aa_scheme scheme;
  stk__aa_convention conv;
  const char *policy; /* AutoAugment */
} case_def;

typedef struct {
  stk_gpu_aa_sample *smp;
  stk_gpu_aa_step *steps;
  uint8_t *luts;
  int num_steps, num_luts;
  stk_gpu_aa_args args;
} programs;

/* Draws and encodes every sample's program (as autoaug_op.c's gpu_plan_sample). */
static int build_programs(bu_bench *b, const case_def *cd, programs *pr) {
  stk__aa_translate tr = {false, {-1, -1}, {-1, -1}};
  const stk__aa_policy *pol = cd->policy ? stk__aa_policy_find(cd->policy, cd->conv) : NULL;
  stk__aa_suite suite;
  if (stk__aa_default_suite(cd->scheme, cd->conv, true, pol, &tr, &suite) != STK_OK) return 1;
  int32_t aug[256], bin[256];
  float prob[256];
  stk__aa_sampler s = {
      cd->scheme,  2,   9, pol ? pol->num_bins : stk__aa_default_bins(cd->scheme, cd->conv),
      suite.count, 0,   0, NULL,
      NULL,        NULL};
  if (pol) {
    stk__aa_policy_cells(pol, &suite, aug, prob, bin);
    s.num_sub = pol->num_sub, s.stages = pol->stages, s.aug = aug, s.prob = prob, s.bin = bin;
  }
  int stages = stk__aa_num_stages(&s);
  pr->smp = calloc((size_t)b->batch, sizeof *pr->smp);
  pr->steps = calloc((size_t)b->batch * (size_t)(stages + 1), sizeof *pr->steps);
  pr->luts = calloc((size_t)b->batch * (size_t)(stages + 1), 256);
  pr->num_steps = pr->num_luts = 0;
  pr->args.interp =
      cd->conv == STK__AA_TORCHVISION ? STK_GPU_INTERP_NEAREST : STK_GPU_INTERP_LINEAR;
  pr->args.constant = 1;
  float fill = cd->conv == STK__AA_TORCHVISION ? 0.0f : 128.0f;
  for (int i = 0; i < b->batch; i++) {
    stk__philox g;
    stk__philox_init(&g, 1234, (uint64_t)i);
    stk__aa_decision dec[STK__AA_MAX_STAGES];
    stk__aa_draw(&s, &g, dec);
    stk_gpu_aa_sample *q = &pr->smp[i];
    q->src = bu_image(b, i), q->dst = bu_scratch(b, i), q->h = b->h, q->w = b->w, q->c = b->c;
    q->first_step = pr->num_steps;
    for (int k = 0; k < b->c && k < 4; k++) q->fill[k] = fill, q->fill8[k] = (uint8_t)fill;
    for (int k = 0; k < stages; k++) {
      if (dec[k].index < 0) continue;
      const stk__aa_entry *e = &suite.e[dec[k].index];
      double p = stk__aa_param(e, cd->conv, dec[k].bin, s.num_bins, dec[k].negate, b->h, b->w),
             m[6];
      bool uses = false;
      stk_gpu_aa_step *st = &pr->steps[pr->num_steps];
      if (stk__aa_gpu_step(e->op, cd->conv, p, b->h, b->w, st, m,
                           pr->luts + (size_t)pr->num_luts * 256, &uses))
        return 1;
      if (uses) st->lut = pr->num_luts++;
      if (st->code != STK_GPU_AA_COPY) pr->num_steps++;
    }
    if (pr->num_steps == q->first_step) memset(&pr->steps[pr->num_steps++], 0, sizeof *pr->steps);
    q->num_steps = pr->num_steps - q->first_step;
  }
  return 0;
}

typedef struct {
  programs pr;
} run_ctx;

static int call_apply(bu_bench *b, void *user) {
  run_ctx *r = user;
  stk_gpu_aa_args a = r->pr.args;
  a.num_steps = r->pr.num_steps, a.steps = r->pr.steps;
  a.num_luts = r->pr.num_luts, a.luts = r->pr.luts;
  return stk_gpu_run_autoaug(b->api, b->ctx, b->batch, r->pr.smp, &a, b->stream, b->err,
                             sizeof b->err);
}

int main(int argc, char **argv) {
  /* 224x224 by default: prepend --size (a later --size overrides) */
  char **av = calloc((size_t)argc + 3, sizeof *av);
  av[0] = argv[0], av[1] = "--size", av[2] = "224x224";
  for (int i = 1; i < argc; i++) av[i + 2] = argv[i];
  bu_bench b;
  bu_open(&b, argc + 2, av);
  static const case_def cases[] = {
      {"auto_augment.apply rand_augment n2 m9 (dali)", STK__AA_RAND_AUGMENT, STK__AA_DALI, NULL},
      {"auto_augment.apply rand_augment n2 m9 (torchvision)", STK__AA_RAND_AUGMENT,
       STK__AA_TORCHVISION, NULL},
      {"auto_augment.apply auto_augment image_net (dali)", STK__AA_AUTO_AUGMENT, STK__AA_DALI,
       "image_net"},
      {"auto_augment.apply auto_augment image_net (torchvision)", STK__AA_AUTO_AUGMENT,
       STK__AA_TORCHVISION, "image_net"},
      {"auto_augment.apply trivial_augment_wide (dali)", STK__AA_TRIVIAL_AUGMENT_WIDE, STK__AA_DALI,
       NULL},
      {"auto_augment.apply trivial_augment_wide (torchvision)", STK__AA_TRIVIAL_AUGMENT_WIDE,
       STK__AA_TORCHVISION, NULL},
  };
  void *ping = NULL;
  BU_DIE_IF(&b,
            b.api->device_alloc(b.ctx, b.image_bytes * (size_t)b.batch, b.stream, &ping, b.err,
                                sizeof b.err),
            "alloc");
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    run_ctx r;
    memset(&r, 0, sizeof r);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (build_programs(&b, &cases[k], &r.pr)) {
      printf("RESULT op %s: FAILED (building the programs)\n", cases[k].name);
      continue;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int i = 0; i < b.batch; i++)
      r.pr.smp[i].scratch = (uint8_t *)ping + (size_t)i * b.image_bytes;
    printf("bench: %s: %d steps for %d images, %d tables; host drawing + encoding %.3f ms\n",
           cases[k].name, r.pr.num_steps, b.batch, r.pr.num_luts,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    bu_time(&b, cases[k].name, 2.0 * (double)b.image_bytes * b.batch, call_apply, &r);
    free(r.pr.smp), free(r.pr.steps), free(r.pr.luts);
  }
  b.api->device_free(b.ctx, ping, b.stream, b.err, sizeof b.err);
  bu_close(&b);
  free(av);
  return 0;
}
