/* The order of a reader's samples: shards, epochs, padding, the epoch permutation and
 * the shuffle buffer. See sampler.h for the model. */
#include <stdlib.h>

#include "sampler.h"

/* Tags keeping the two kinds of random streams apart under one seed. */
#define TAG_PERMUTATION 0x7065726d75746531ull
#define TAG_BUFFER 0x7368756666627566ull

struct stk__sampler {
  stk__sampler_config cfg;
  int64_t padded; /* epoch length with pad_last_batch */
  /* The shard stream's read position. */
  int64_t epoch, shard, begin, size, length, pos;
  int64_t *perm; /* N entries with shuffle_after_epoch, else NULL */
  /* The shuffle buffer (random_shuffle). */
  int64_t *buffer;
  stk__philox rng;
};

int64_t stk__shard_begin(int64_t shard, int64_t num_shards, int64_t n) {
  /* floor(shard * n / S) = shard * q + floor(shard * r / S) with n = q * S + r, which
   * stays below 2^62 while S < 2^31. */
  int64_t q = n / num_shards, r = n % num_shards;
  return shard * q + (shard * r) / num_shards;
}

int64_t stk__shard_size(int64_t shard, int64_t num_shards, int64_t n) {
  return stk__shard_begin(shard + 1, num_shards, n) - stk__shard_begin(shard, num_shards, n);
}

int64_t stk__shard_padded_size(int64_t num_shards, int64_t n, int64_t batch_size) {
  int64_t largest = n / num_shards + (n % num_shards != 0);
  int64_t batches = largest / batch_size + (largest % batch_size != 0);
  return batches * batch_size;
}

void stk__sampler_meta(const stk__sampler_config *cfg, stk_reader_meta *out) {
  int64_t n = cfg->num_samples, s = cfg->num_shards;
  out->epoch_size = n;
  out->shard_size = stk__shard_size(cfg->shard_id, s, n);
  out->epoch_size_padded =
      cfg->pad_last_batch ? stk__shard_padded_size(s, n, cfg->batch_size) : out->shard_size;
  out->shard_id = cfg->shard_id;
  out->number_of_shards = s;
  out->pad_last_batch = cfg->pad_last_batch;
  out->stick_to_shard = cfg->stick_to_shard;
}

/* Draws epoch e's permutation from (seed, e) alone, starting from the identity each
 * time, so it does not depend on earlier epochs and every shard agrees on it. */
static void permute(stk__sampler *s, int64_t epoch) {
  int64_t n = s->cfg.num_samples;
  stk__philox g;
  stk__philox_init(&g, stk__mix64(s->cfg.seed, TAG_PERMUTATION), (uint64_t)epoch);
  for (int64_t i = 0; i < n; i++) s->perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)stk__philox_below(&g, (uint64_t)i + 1);
    int64_t t = s->perm[i];
    s->perm[i] = s->perm[j];
    s->perm[j] = t;
  }
}

static void start_epoch(stk__sampler *s, int64_t epoch) {
  const stk__sampler_config *c = &s->cfg;
  s->epoch = epoch;
  s->shard = c->stick_to_shard ? c->shard_id
                               : (c->shard_id + epoch % c->num_shards) % c->num_shards;
  s->begin = stk__shard_begin(s->shard, c->num_shards, c->num_samples);
  s->size = stk__shard_size(s->shard, c->num_shards, c->num_samples);
  s->length = c->pad_last_batch ? s->padded : s->size;
  s->pos = 0;
  if (s->perm) permute(s, epoch);
}

/* The next sample of the shard stream (padding repeats the shard's last sample). */
static int64_t stream_next(stk__sampler *s) {
  if (s->pos == s->length) start_epoch(s, s->epoch + 1);
  int64_t j = s->pos < s->size ? s->pos : s->size - 1;
  s->pos++;
  return s->perm ? s->perm[s->begin + j] : s->begin + j;
}

static stk_status check_config(const stk__sampler_config *c, const char *who) {
  if (!who) who = "sampler";
  if (c->num_samples < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: the data set is empty", who);
  if (c->num_shards < 1 || c->num_shards > INT32_MAX)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: num_shards is %lld, must be in [1, %d]",
                    who, (long long)c->num_shards, INT32_MAX);
  if (c->num_shards > c->num_samples)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: num_shards (%lld) exceeds the number of samples (%lld)", who,
                    (long long)c->num_shards, (long long)c->num_samples);
  if (c->shard_id < 0 || c->shard_id >= c->num_shards)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: shard_id is %lld, must be in [0, %lld)",
                    who, (long long)c->shard_id, (long long)c->num_shards);
  if (c->batch_size < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: batch size %lld must be >= 1", who,
                    (long long)c->batch_size);
  if (c->random_shuffle && c->initial_fill < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: initial_fill is %lld, must be >= 1", who,
                    (long long)c->initial_fill);
  if (c->random_shuffle && c->shuffle_after_epoch)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: random_shuffle and shuffle_after_epoch cannot be used together", who);
  return STK_OK;
}

/* Allocates `count` indices, naming the argument that asked for them on failure. */
static int64_t *alloc_indices(int64_t count, const char *who, const char *why) {
  size_t bytes;
  if ((uint64_t)count > SIZE_MAX || !stk__mul_size((size_t)count, sizeof(int64_t), &bytes)) {
    STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: %s of %lld entries is too large", who, why,
             (long long)count);
    return NULL;
  }
  int64_t *p = malloc(bytes);
  if (!p)
    STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: cannot allocate the %s (%lld entries)", who, why,
             (long long)count);
  return p;
}

stk_status stk__sampler_create(stk__sampler **out, const stk__sampler_config *cfg,
                               const char *who) {
  *out = NULL;
  STK_TRY(check_config(cfg, who));
  if (!who) who = "sampler";
  stk__sampler *s = stk__calloc(1, sizeof *s, "sampler");
  if (!s) return STK_ERR_OUT_OF_MEMORY;
  s->cfg = *cfg;
  s->padded = stk__shard_padded_size(cfg->num_shards, cfg->num_samples, cfg->batch_size);
  if (cfg->shuffle_after_epoch &&
      !(s->perm = alloc_indices(cfg->num_samples, who, "shuffle_after_epoch permutation"))) {
    stk__sampler_destroy(s);
    return STK_ERR_OUT_OF_MEMORY;
  }
  start_epoch(s, 0);
  if (cfg->random_shuffle) {
    s->buffer = alloc_indices(cfg->initial_fill, who, "initial_fill shuffle buffer");
    if (!s->buffer) {
      stk__sampler_destroy(s);
      return STK_ERR_OUT_OF_MEMORY;
    }
    for (int64_t i = 0; i < cfg->initial_fill; i++) s->buffer[i] = stream_next(s);
    /* Shards draw different slots; one sequential stream for the reader's life. */
    stk__philox_init(&s->rng, stk__mix64(cfg->seed, TAG_BUFFER), (uint64_t)cfg->shard_id);
  }
  *out = s;
  return STK_OK;
}

void stk__sampler_destroy(stk__sampler *s) {
  if (!s) return;
  free(s->perm);
  free(s->buffer);
  free(s);
}

int64_t stk__sampler_next(stk__sampler *s) {
  if (!s->buffer) return stream_next(s);
  int64_t slot = (int64_t)stk__philox_below(&s->rng, (uint64_t)s->cfg.initial_fill);
  int64_t index = s->buffer[slot];
  s->buffer[slot] = stream_next(s);
  return index;
}

int64_t stk__sampler_epoch(const stk__sampler *s) { return s->epoch; }
