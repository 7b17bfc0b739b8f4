/* The order of a reader's samples: shards, epochs, padding, the epoch permutations and
 * the streaming buffer. See sampler.h for the model and its guarantees.
 *
 * Each epoch is built whole when it starts: `order` holds the shard's samples in read
 * order, and the epoch emits them (through the buffer when streaming with a shuffle),
 * then the padding. Everything an epoch draws is keyed by the epoch number, so no state
 * carries from one epoch to the next. */
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

/* Tags keeping the random streams apart under one seed. */
#define TAG_PERMUTATION 0x7065726d75746531ull
#define TAG_LOCAL       0x6c6f63616c706572ull
#define TAG_BUFFER      0x7368756666627566ull

struct stk__sampler {
  stk__sampler_config cfg;
  bool shuffle;
  int64_t *unit_sizes, *unit_begin;     /* streaming: copies, and each unit's first sample */
  int64_t *perm;                        /* N (random access) or U (streaming) when shuffling */
  int64_t *scratch;                     /* U: the next streaming epoch's unit order */
  int64_t meta_shard_size, meta_padded; /* epoch 0's (reader metadata; immutable) */
  int64_t *order;                       /* the epoch's samples in read order */
  int64_t *buffer;                      /* streaming shuffle buffer (buffer_cap entries) */
  int64_t buffer_cap;
  /* The current epoch. */
  int64_t epoch, shard;
  int64_t size;    /* the shard's own samples this epoch */
  int64_t length;  /* size plus padding */
  int64_t emitted; /* samples emitted so far this epoch */
  int64_t read;    /* samples of `order` moved into the buffer */
  int64_t fill;    /* samples in the buffer */
  int64_t last;    /* the last sample emitted (what padding repeats) */
  stk__philox rng; /* this epoch's buffer draws */
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

static int64_t round_up(int64_t n, int64_t multiple) {
  return (n / multiple + (n % multiple != 0)) * multiple;
}

int64_t stk__shard_padded_size(int64_t num_shards, int64_t n, int64_t batch_size) {
  return round_up(n / num_shards + (n % num_shards != 0), batch_size);
}

/* Fisher-Yates over `a`, drawing from `g`. */
static void shuffle_array(int64_t *a, int64_t n, stk__philox *g) {
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)stk__philox_below(g, (uint64_t)i + 1);
    int64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* `perm` becomes epoch e's permutation of `n` items, drawn from (seed, e) alone. */
static void epoch_permutation(const stk__sampler *s, int64_t *perm, int64_t n, int64_t epoch) {
  stk__philox g;
  stk__philox_init(&g, stk__mix64(s->cfg.seed, TAG_PERMUTATION), (uint64_t)epoch);
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  shuffle_array(perm, n, &g);
}

/* The shard epoch e reads. */
static int64_t shard_of_epoch(const stk__sampler_config *c, int64_t epoch) {
  return c->stick_to_shard ? c->shard_id : (c->shard_id + epoch % c->num_shards) % c->num_shards;
}

/* Samples shard `shard` holds in a streaming epoch whose unit order is `perm` (NULL:
 * the identity): the sizes of its units. */
static int64_t stream_shard_size(const stk__sampler *s, const int64_t *perm, int64_t shard) {
  int64_t u = s->cfg.num_units, total = 0;
  int64_t end = stk__shard_begin(shard + 1, s->cfg.num_shards, u);
  for (int64_t p = stk__shard_begin(shard, s->cfg.num_shards, u); p < end; p++)
    total += s->unit_sizes[perm ? perm[p] : p];
  return total;
}

/* The longest shard of an epoch whose unit order is `perm` (what padding fills every
 * shard up to). */
static int64_t longest_shard(const stk__sampler *s, const int64_t *perm) {
  const stk__sampler_config *c = &s->cfg;
  if (!c->num_units) return c->num_samples / c->num_shards + (c->num_samples % c->num_shards != 0);
  int64_t longest = 0;
  for (int64_t k = 0; k < c->num_shards; k++) {
    int64_t size = stream_shard_size(s, perm, k);
    if (size > longest) longest = size;
  }
  return longest;
}

/* An epoch's length: the shard's own size, or with pad_last_batch the longest shard of
 * the epoch (unit order `perm`, NULL: the identity) rounded up to whole batches. */
static int64_t padded_length(const stk__sampler *s, const int64_t *perm, int64_t size) {
  const stk__sampler_config *c = &s->cfg;
  return c->pad_last_batch ? round_up(longest_shard(s, perm), c->batch_size) : size;
}

/* The length of epoch `epoch` (padding included) and its shard's own size; `perm` is
 * scratch for the streaming unit order (U entries) or NULL when not shuffling. */
static int64_t epoch_length(const stk__sampler *s, int64_t epoch, int64_t *perm, int64_t *size) {
  const stk__sampler_config *c = &s->cfg;
  int64_t shard = shard_of_epoch(c, epoch);
  if (!c->num_units) {
    *size = stk__shard_size(shard, c->num_shards, c->num_samples);
    return padded_length(s, NULL, *size);
  }
  if (perm) epoch_permutation(s, perm, c->num_units, epoch);
  *size = stream_shard_size(s, perm, shard);
  return padded_length(s, perm, *size);
}

/* `order` becomes the shard's samples of a random-access epoch. */
static void build_random_access_order(stk__sampler *s) {
  const stk__sampler_config *c = &s->cfg;
  int64_t begin = stk__shard_begin(s->shard, c->num_shards, c->num_samples);
  s->size = stk__shard_size(s->shard, c->num_shards, c->num_samples);
  if (s->shuffle) epoch_permutation(s, s->perm, c->num_samples, s->epoch);
  for (int64_t j = 0; j < s->size; j++) s->order[j] = s->shuffle ? s->perm[begin + j] : begin + j;
  if (c->local_shuffle) {
    stk__philox g;
    stk__philox_init(&g, stk__mix64(stk__mix64(c->local_seed, TAG_LOCAL), (uint64_t)s->shard),
                     (uint64_t)s->epoch);
    shuffle_array(s->order, s->size, &g);
  }
}

/* `order` becomes the samples of the shard's units, unit after unit. */
static void build_streaming_order(stk__sampler *s) {
  const stk__sampler_config *c = &s->cfg;
  if (s->shuffle) epoch_permutation(s, s->perm, c->num_units, s->epoch);
  int64_t end = stk__shard_begin(s->shard + 1, c->num_shards, c->num_units);
  s->size = 0;
  for (int64_t p = stk__shard_begin(s->shard, c->num_shards, c->num_units); p < end; p++) {
    int64_t u = s->shuffle ? s->perm[p] : p;
    for (int64_t i = 0; i < s->unit_sizes[u]; i++) s->order[s->size++] = s->unit_begin[u] + i;
  }
  /* The buffer's draws: per shard and epoch, from the local seed when given. */
  uint64_t key = c->local_shuffle ? c->local_seed : c->seed;
  stk__philox_init(&s->rng, stk__mix64(stk__mix64(key, TAG_BUFFER), (uint64_t)s->shard),
                   (uint64_t)s->epoch);
}

static void start_epoch(stk__sampler *s, int64_t epoch) {
  const stk__sampler_config *c = &s->cfg;
  s->epoch = epoch;
  s->shard = shard_of_epoch(c, epoch);
  if (c->num_units)
    build_streaming_order(s);
  else
    build_random_access_order(s);
  s->length = padded_length(s, s->shuffle && c->num_units ? s->perm : NULL, s->size);
  s->emitted = s->read = s->fill = 0;
}

/* Streaming with a shuffle: a uniform draw from the buffer, whose slot is refilled from
 * the epoch's stream, or given the buffer's last entry once the stream is read. */
static int64_t draw_from_buffer(stk__sampler *s) {
  int64_t cap = s->buffer_cap < s->size ? s->buffer_cap : s->size;
  while (s->fill < cap && s->read < s->size) s->buffer[s->fill++] = s->order[s->read++];
  int64_t slot = (int64_t)stk__philox_below(&s->rng, (uint64_t)s->fill);
  int64_t index = s->buffer[slot];
  s->buffer[slot] = s->read < s->size ? s->order[s->read++] : s->buffer[--s->fill];
  return index;
}

int64_t stk__sampler_next(stk__sampler *s) {
  if (s->emitted == s->length) start_epoch(s, s->epoch + 1);
  int64_t index;
  if (s->emitted >= s->size)
    index = s->last; /* padding */
  else if (s->buffer)
    index = draw_from_buffer(s);
  else
    index = s->order[s->emitted];
  s->emitted++;
  s->last = index;
  return index;
}

void stk__sampler_position(stk__sampler *s, int64_t *epoch, int64_t *left) {
  if (s->emitted < s->length) {
    *epoch = s->epoch;
    *left = s->length - s->emitted;
    return;
  }
  int64_t size;
  *epoch = s->epoch + 1;
  *left = epoch_length(s, s->epoch + 1, s->scratch, &size);
}

stk_status stk__sampler_seek(stk__sampler *s, int64_t epoch, int64_t left, const char *who) {
  if (epoch < 0)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: checkpoint epoch %lld is negative", who,
                    (long long)epoch);
  start_epoch(s, epoch);
  if (left < 1 || left > s->length)
    return STK_FAIL(
        STK_ERR_INVALID_ARGUMENT,
        "%s: checkpoint position (%lld left of epoch %lld) does not fit its %lld samples: "
        "a checkpoint of another data set or configuration?",
        who, (long long)left, (long long)epoch, (long long)s->length);
  for (int64_t i = s->length - left; i > 0; i--) stk__sampler_next(s);
  return STK_OK;
}

void stk__sampler_meta(const stk__sampler *s, stk_reader_meta *out) {
  const stk__sampler_config *c = &s->cfg;
  out->epoch_size = c->num_samples;
  out->shard_size = s->meta_shard_size;
  out->epoch_size_padded = s->meta_padded;
  out->shard_id = c->shard_id;
  out->number_of_shards = c->num_shards;
  out->pad_last_batch = c->pad_last_batch;
  out->stick_to_shard = c->stick_to_shard;
}

static stk_status check_units(const stk__sampler_config *c, const char *who) {
  int64_t total = 0, nonempty = 0;
  for (int64_t u = 0; u < c->num_units; u++) {
    if (c->unit_sizes[u] < 0 || c->unit_sizes[u] > c->num_samples - total)
      return STK_FAIL(STK_ERR_INTERNAL, "%s: file %lld's sample count %lld does not add up", who,
                      (long long)u, (long long)c->unit_sizes[u]);
    total += c->unit_sizes[u];
    nonempty += c->unit_sizes[u] > 0;
  }
  if (total != c->num_samples)
    return STK_FAIL(STK_ERR_INTERNAL, "%s: the files hold %lld samples, not %lld", who,
                    (long long)total, (long long)c->num_samples);
  if (c->num_shards > nonempty)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: num_shards (%lld) exceeds the number of files holding samples (%lld); "
                    "streaming shards split the files, not the samples",
                    who, (long long)c->num_shards, (long long)nonempty);
  if ((c->random_shuffle || c->shuffle_after_epoch) && c->initial_fill < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: initial_fill is %lld, must be >= 1", who,
                    (long long)c->initial_fill);
  return STK_OK;
}

static stk_status check_config(const stk__sampler_config *c, const char *who) {
  if (c->num_samples < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: the data set is empty", who);
  if (c->num_shards < 1 || c->num_shards > INT32_MAX)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: num_shards is %lld, must be in [1, %d]", who,
                    (long long)c->num_shards, INT32_MAX);
  if (c->num_shards > c->num_samples)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: num_shards (%lld) exceeds the number of samples (%lld)", who,
                    (long long)c->num_shards, (long long)c->num_samples);
  if (c->shard_id < 0 || c->shard_id >= c->num_shards)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: shard_id is %lld, must be in [0, %lld)", who,
                    (long long)c->shard_id, (long long)c->num_shards);
  if (c->batch_size < 1)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: batch size %lld must be >= 1", who,
                    (long long)c->batch_size);
  if (c->random_shuffle && c->shuffle_after_epoch)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: random_shuffle and shuffle_after_epoch cannot be used together", who);
  return c->num_units ? check_units(c, who) : STK_OK;
}

/* Allocates `count` indices, naming what asked for them on failure. */
static int64_t *alloc_indices(int64_t count, const char *who, const char *why) {
  size_t bytes;
  if (count < 1) count = 1;
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

/* The streaming tables: the sizes of the units that hold samples (an empty file takes
 * no part in sharding), and each one's first sample. */
static stk_status alloc_units(stk__sampler *s, const char *who) {
  const stk__sampler_config *c = &s->cfg;
  s->unit_sizes = alloc_indices(c->num_units, who, "file table");
  s->unit_begin = alloc_indices(c->num_units, who, "file table");
  if (!s->unit_sizes || !s->unit_begin) return STK_ERR_OUT_OF_MEMORY;
  int64_t begin = 0, kept = 0;
  for (int64_t u = 0; u < c->num_units; u++) {
    if (c->unit_sizes[u] > 0) {
      s->unit_sizes[kept] = c->unit_sizes[u];
      s->unit_begin[kept++] = begin;
    }
    begin += c->unit_sizes[u];
  }
  s->cfg.num_units = kept;
  s->cfg.unit_sizes = s->unit_sizes;
  if (s->shuffle) { /* a buffer no larger than the data set (initial_fill may be huge) */
    s->buffer_cap = c->initial_fill < c->num_samples ? c->initial_fill : c->num_samples;
    if (!(s->buffer = alloc_indices(s->buffer_cap, who, "initial_fill shuffle buffer")))
      return STK_ERR_OUT_OF_MEMORY;
  }
  return STK_OK;
}

static stk_status alloc_tables(stk__sampler *s, const char *who) {
  const stk__sampler_config *c = &s->cfg;
  if (c->num_units) STK_TRY(alloc_units(s, who));
  int64_t perm_size = c->num_units ? c->num_units : c->num_samples;
  if (s->shuffle && !(s->perm = alloc_indices(perm_size, who, "epoch permutation")))
    return STK_ERR_OUT_OF_MEMORY;
  if (s->shuffle && c->num_units &&
      !(s->scratch = alloc_indices(perm_size, who, "epoch permutation")))
    return STK_ERR_OUT_OF_MEMORY;
  /* Random access: at most the largest shard; streaming: a shard may hold every sample. */
  int64_t order_size = c->num_units ? c->num_samples : longest_shard(s, NULL);
  if (!(s->order = alloc_indices(order_size, who, "epoch order"))) return STK_ERR_OUT_OF_MEMORY;
  return STK_OK;
}

stk_status stk__sampler_create(stk__sampler **out, const stk__sampler_config *cfg,
                               const char *who) {
  *out = NULL;
  if (!who) who = "sampler";
  STK_TRY(check_config(cfg, who));
  stk__sampler *s = stk__calloc(1, sizeof *s, "sampler");
  if (!s) return STK_ERR_OUT_OF_MEMORY;
  s->cfg = *cfg;
  if (!cfg->num_units) s->cfg.unit_sizes = NULL;
  s->shuffle = cfg->random_shuffle || cfg->shuffle_after_epoch;
  stk_status st = alloc_tables(s, who);
  if (st != STK_OK) {
    stk__sampler_destroy(s);
    return st;
  }
  start_epoch(s, 0);
  epoch_length(s, 0, s->scratch, &s->meta_shard_size);
  /* DALI's definition: every shard padded to the longest one, over all shards. */
  s->meta_padded = cfg->pad_last_batch
                       ? cfg->num_shards * longest_shard(s, s->shuffle ? s->perm : NULL)
                       : cfg->num_samples;
  *out = s;
  return STK_OK;
}

void stk__sampler_destroy(stk__sampler *s) {
  if (!s) return;
  free(s->unit_sizes);
  free(s->unit_begin);
  free(s->perm);
  free(s->scratch);
  free(s->order);
  free(s->buffer);
  free(s);
}
