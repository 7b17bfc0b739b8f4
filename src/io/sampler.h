/*
 * The order in which a reader visits its samples: sharding, shuffling, padding and
 * epochs, independent of what a sample is (a file, a tar member, a TFRecord). Pure: no
 * I/O, no globals; every random draw comes from Philox streams keyed by the seed, so a
 * sampler replays exactly for the same configuration.
 *
 * The model (DALI's reader semantics, made explicit):
 *  - Epoch e (0, 1, ...) sees the N samples in the order P_e: the identity, or with
 *    `shuffle_after_epoch` a permutation drawn from (seed, e) alone — the same on every
 *    shard, so shards stay disjoint and covering in every epoch. Epoch 0 is shuffled
 *    too (as DALI does).
 *  - Shard k holds positions floor(k*N/S) .. floor((k+1)*N/S)-1 of P_e.
 *  - Epoch e reads shard k_e = shard_id, or (shard_id + e) mod S when !stick_to_shard.
 *  - With `pad_last_batch`, every epoch of every shard has
 *    ceil(ceil(N/S) / batch_size) * batch_size samples: the shard's own, then its last
 *    sample repeated. Without it, an epoch is the shard's samples and the stream simply
 *    goes on into the next epoch (a batch may straddle two epochs).
 *  - This "shard stream" is what the reader emits, unless `random_shuffle`: then a
 *    buffer is filled with the first `initial_fill` samples of the stream, and every
 *    output takes a uniformly drawn slot and refills it with the stream's next sample.
 *
 * Thread safety: one sampler is used by one thread at a time (the reader's producer).
 */
#ifndef STOKER_IO_SAMPLER_H
#define STOKER_IO_SAMPLER_H

#include "../core/core.h"

typedef struct {
  int64_t num_samples; /* N >= 1 */
  int64_t shard_id;    /* 0 <= shard_id < num_shards */
  int64_t num_shards;  /* 1 <= num_shards <= N */
  bool stick_to_shard;
  bool pad_last_batch;
  int64_t batch_size; /* >= 1; used for padding only */
  bool random_shuffle;
  int64_t initial_fill; /* >= 1; size of the shuffle buffer */
  bool shuffle_after_epoch; /* excludes random_shuffle */
  /* Keys the shuffle buffer's draws (mixed with shard_id) and the epoch permutations
   * (not mixed with the shard: every shard must see the same permutation). */
  uint64_t seed;
} stk__sampler_config;

typedef struct stk__sampler stk__sampler;

/* First position of shard `shard` of `num_shards` over `n` samples: floor(shard*n/S),
 * computed without overflow for any n when num_shards < 2^31. */
int64_t stk__shard_begin(int64_t shard, int64_t num_shards, int64_t n);
/* Samples in shard `shard`: begin(shard + 1) - begin(shard). */
int64_t stk__shard_size(int64_t shard, int64_t num_shards, int64_t n);
/* Samples every shard yields per epoch with pad_last_batch:
 * ceil(ceil(n / num_shards) / batch_size) * batch_size. */
int64_t stk__shard_padded_size(int64_t num_shards, int64_t n, int64_t batch_size);

/* Checks `cfg` and creates a sampler positioned at the start of epoch 0. Errors
 * (STK_ERR_INVALID_ARGUMENT) name the offending setting, prefixed by `who` (the reader's
 * instance name; may be NULL). The caller frees it with stk__sampler_destroy. */
stk_status stk__sampler_create(stk__sampler **out, const stk__sampler_config *cfg,
                               const char *who);
void stk__sampler_destroy(stk__sampler *s);

/* The next sample index, in [0, N). Never fails (memory is allocated at creation). */
int64_t stk__sampler_next(stk__sampler *s);

/* The epoch of the shard stream's read position (with random_shuffle, the buffer runs
 * ahead of the emitted samples by initial_fill). */
int64_t stk__sampler_epoch(const stk__sampler *s);

/* Metadata as reported by readers (for the initial shard_id). */
void stk__sampler_meta(const stk__sampler_config *cfg, stk_reader_meta *out);

#endif /* STOKER_IO_SAMPLER_H */
