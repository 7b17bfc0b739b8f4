/*
 * The order in which a reader visits its samples: sharding, shuffling, padding and
 * epochs, independent of what a sample is (a file, a tar member, a TFRecord). Pure: no
 * I/O, no globals; every random draw comes from Philox streams keyed by the seeds and
 * the epoch, so an epoch's order depends on nothing but (configuration, epoch).
 *
 * What a training loop relies on, and what this guarantees (tested as properties):
 *  - Every epoch of every shard visits each of its samples exactly once (plus, with
 *    pad_last_batch, repeats of its last sample at the end), and the shards of one epoch
 *    are disjoint and together cover the data set.
 *  - Epochs never mix: the stream is epoch 0's samples, then epoch 1's, and so on;
 *    stk__sampler_position tells the reader where the current epoch ends, so a batch
 *    can end there.
 *
 * Random access (the default):
 *  - Epoch e orders the N samples by P_e: the identity, or when shuffling a uniform
 *    permutation drawn from (seed, e) alone — the same on every shard, whatever the
 *    pipeline seed, as PyTorch's DistributedSampler does.
 *  - Shard k holds positions floor(k*N/S) .. floor((k+1)*N/S)-1 of P_e. Epoch e reads
 *    shard k_e = shard_id, or (shard_id + e) mod S when !stick_to_shard.
 *  - With local_shuffle, the shard's slice is permuted once more, keyed by
 *    (local_seed, k_e, e): the pipeline seed then changes the order without changing
 *    which samples a shard holds.
 *
 * Streaming (num_units > 0: samples come in units, e.g. tar shards or TFRecord files,
 * each best read front to back):
 *  - Epoch e orders the units by a permutation of the U units drawn from (seed, e) when
 *    shuffling; shard k takes units floor(k*U/S) .. floor((k+1)*U/S)-1 of that order.
 *  - The shard's samples are read unit after unit, in order; when shuffling, a buffer of
 *    min(initial_fill, epoch length) samples mixes them: each output is drawn uniformly
 *    from the buffer and its slot refilled from the stream; at the end of the epoch the
 *    buffer drains. A sample moves at most initial_fill places from its read position.
 *
 * Padding (both modes): with pad_last_batch every shard's epoch has
 * ceil(L / batch_size) * batch_size samples, L the longest shard of that epoch: the
 * shard's own, then its last one repeated.
 *
 * Thread safety: one sampler is used by one thread at a time (the reader's producer).
 */
#ifndef STOKER_IO_SAMPLER_H
#define STOKER_IO_SAMPLER_H

#include "../core/core.h"

typedef struct {
  int64_t num_samples; /* N >= 1 */
  int64_t shard_id;    /* 0 <= shard_id < num_shards */
  int64_t num_shards;  /* 1 <= num_shards <= N (<= num_units when streaming) */
  bool stick_to_shard;
  bool pad_last_batch;
  int64_t batch_size; /* >= 1; used for padding only */
  /* The reader's shuffling arguments: either one makes every epoch a new permutation;
   * they may not be combined. */
  bool random_shuffle;
  bool shuffle_after_epoch;
  /* Keys the epoch permutations; must be the same on every shard. */
  uint64_t seed;
  /* Also permute each shard's slice (or draw the streaming buffer) from local_seed. */
  bool local_shuffle;
  uint64_t local_seed;
  /* Streaming: the samples come in num_units units of unit_sizes[u] consecutive samples
   * (the sizes add up to num_samples; the sampler keeps a copy). 0: random access. */
  int64_t num_units;
  const int64_t *unit_sizes;
  int64_t initial_fill; /* streaming shuffle buffer (capped at the epoch's length) */
} stk__sampler_config;

typedef struct stk__sampler stk__sampler;

/* First position of shard `shard` of `num_shards` over `n` samples: floor(shard*n/S),
 * computed without overflow for any n when num_shards < 2^31. */
int64_t stk__shard_begin(int64_t shard, int64_t num_shards, int64_t n);
/* Samples in shard `shard`: begin(shard + 1) - begin(shard). */
int64_t stk__shard_size(int64_t shard, int64_t num_shards, int64_t n);
/* Samples every shard yields per epoch with pad_last_batch (random access):
 * ceil(ceil(n / num_shards) / batch_size) * batch_size. */
int64_t stk__shard_padded_size(int64_t num_shards, int64_t n, int64_t batch_size);

/* Checks `cfg` and creates a sampler positioned at the start of epoch 0. Errors
 * (STK_ERR_INVALID_ARGUMENT) name the offending setting, prefixed by `who` (the reader's
 * instance name; may be NULL). The caller frees it with stk__sampler_destroy. */
stk_status stk__sampler_create(stk__sampler **out, const stk__sampler_config *cfg, const char *who);
void stk__sampler_destroy(stk__sampler *s);

/* The next sample index, in [0, N); the stream moves into the next epoch when the
 * current one is over. Never fails (memory is allocated at creation). */
int64_t stk__sampler_next(stk__sampler *s);

/* Where the stream stands: the epoch of the next sample, and how many samples that
 * epoch still has (>= 1; when an epoch is over, the next one's length). Uses scratch
 * space: the sampler's thread only. */
void stk__sampler_position(stk__sampler *s, int64_t *epoch, int64_t *left);

/* Moves the stream to where stk__sampler_position said (epoch, left): the epoch is
 * rebuilt and its first length - left samples drawn again, so the stream goes on exactly
 * as it would have (checkpoints). Errors name `who` and the position. */
stk_status stk__sampler_seek(stk__sampler *s, int64_t epoch, int64_t left, const char *who);

/* Metadata as reported by readers (for the initial shard_id; streaming shards' sizes
 * are those of epoch 0). */
void stk__sampler_meta(const stk__sampler *s, stk_reader_meta *out);

#endif /* STOKER_IO_SAMPLER_H */
