"""The framework-neutral iterator behind the PyTorch, JAX and NumPy plugins.

It follows DALI's iterator semantics exactly, so training loops port unchanged. With
``reader_name``, the epoch length comes from the reader's metadata, and the last batch
of an epoch follows ``last_batch_policy``. For samples 1..7, batch size 2, unpadded:

* ``PARTIAL`` ends the epoch with [7]; the next epoch starts with [2, 3] (the reader
  went on: the padding sample of the last batch was the next epoch's first).
* ``FILL`` ends with [7, 1] (filled from the next epoch); the next starts with [2, 3].
* ``DROP`` ends with [5, 6]; the incomplete batch is dropped.

With the reader's ``pad_last_batch=True``, FILL ends with [7, 7], PARTIAL with [7], DROP
with [5, 6], and every policy starts the next epoch with [1, 2]. When
``stick_to_shard`` is False, shards advance by one every epoch, and the counters below
follow each pipeline's current shard.
"""

import enum
import math
import warnings

import numpy as np

from ..errors import InvalidArgumentError


class LastBatchPolicy(enum.Enum):
    """What happens to the last, incomplete batch of an epoch."""

    FILL = 0  #: fill it with samples of the next epoch (or the reader's padding)
    DROP = 1  #: drop it
    PARTIAL = 2  #: return only the samples that belong to the epoch


def _auto_reset_flag(value):
    if value in (True, "yes"):
        return True
    if value in (False, "no", None):
        return False
    raise InvalidArgumentError(f"auto_reset must be True, False, 'yes' or 'no', got {value!r}")


class BaseIterator:
    """Iterates over one pipeline per device; subclasses convert the outputs.

    Args:
        pipelines: a pipeline or a list of them (one per GPU); they are built if needed.
        output_map: a name for each pipeline output; batches are dicts keyed by them.
        size: samples per epoch when there is no ``reader_name`` (-1: until the pipeline
            raises StopIteration, e.g. an external source's end).
        reader_name: the reader whose metadata sets the epoch size and shards.
        auto_reset: reset at the end of each epoch (True/"yes"), so the next ``for`` loop
            runs the next epoch.
        last_batch_policy: a LastBatchPolicy.
        last_batch_padded: without reader_name, whether the data source pads the last
            batch (with reader_name, the reader's pad_last_batch is used).
        prepare_first_batch: run the first batch at construction.
    """

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        if not isinstance(pipelines, (list, tuple)):
            pipelines = [pipelines]
        if not pipelines:
            raise InvalidArgumentError("iterator: no pipelines")
        self._pipes = list(pipelines)
        self._num_gpus = len(self._pipes)
        self.batch_size = self._pipes[0].max_batch_size
        if any(p.max_batch_size != self.batch_size for p in self._pipes):
            raise InvalidArgumentError("iterator: all pipelines must have the same batch size")
        if size != -1 and reader_name is not None:
            raise InvalidArgumentError("iterator: give either size or reader_name, not both")
        if fill_last_batch is not None:
            warnings.warn("fill_last_batch is deprecated; use last_batch_policy",
                          DeprecationWarning, stacklevel=2)
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else LastBatchPolicy.PARTIAL
        if not isinstance(last_batch_policy, LastBatchPolicy):
            raise InvalidArgumentError(f"iterator: last_batch_policy must be a LastBatchPolicy, "
                                       f"got {last_batch_policy!r}")
        self.output_map = list(output_map)
        if len(set(self.output_map)) != len(self.output_map):
            raise InvalidArgumentError("iterator: output_map names must be unique")
        self._auto_reset = _auto_reset_flag(auto_reset)
        self._last_batch_policy = last_batch_policy
        self._last_batch_padded = bool(last_batch_padded)
        self._reader_name = reader_name
        self._size = int(size)
        for p in self._pipes:
            p.build()
        if reader_name is not None:
            self._init_from_reader(reader_name)
        self._counter = 0
        self._first_batch = None
        if prepare_first_batch:
            try:
                self._first_batch = self._next_batch()
            except StopIteration:
                raise InvalidArgumentError(
                    "iterator: the pipeline gave no data; check its source and size") from None

    # ---- epoch bookkeeping (DALI's algorithm) ----

    def _init_from_reader(self, name):
        metas = [p.reader_meta(name) for p in self._pipes]
        first = metas[0]
        for key in ("epoch_size", "number_of_shards", "pad_last_batch", "stick_to_shard"):
            if any(m[key] != first[key] for m in metas):
                raise InvalidArgumentError(f"iterator: pipelines disagree on reader {name!r}'s {key}")
        self._size_no_pad = first["epoch_size"]
        self._shards_num = first["number_of_shards"]
        self._last_batch_padded = first["pad_last_batch"]
        self._is_stick_to_shard = first["stick_to_shard"]
        self._shards_id = np.array([m["shard_id"] for m in metas], dtype=np.int64)
        if self._last_batch_policy == LastBatchPolicy.DROP:
            self._size = self._size_no_pad // self._shards_num
        elif self._last_batch_padded:
            # stoker's epoch_size_padded is already per shard
            self._size = first["epoch_size_padded"]
        else:
            self._size = math.ceil(math.ceil(self._size_no_pad / self._shards_num)
                                   / self.batch_size) * self.batch_size
        self._counter_per_gpu = np.zeros(self._shards_num, dtype=np.int64)
        self._shard_sizes_per_gpu = self._shard_sizes(np.arange(0, self._shards_num))

    def _shard_sizes(self, shards):
        begin = shards * self._size_no_pad // self._shards_num
        end = (shards + 1) * self._size_no_pad // self._shards_num
        return (end - begin).astype(np.int64)

    def _end_iteration(self):
        if self._auto_reset:
            self.reset()
        raise StopIteration

    def _advance_and_check_drop_last(self):
        if self._reader_name is not None:
            self._counter += self.batch_size
            if self._last_batch_policy == LastBatchPolicy.DROP:
                return bool(np.any(self._counter_per_gpu + self._counter > self._shard_sizes_per_gpu))
            return False
        self._counter += self._num_gpus * self.batch_size
        return self._last_batch_policy == LastBatchPolicy.DROP and self._counter > self._size

    def _remove_padded(self):
        """How many samples of each pipeline's batch belong to the epoch (PARTIAL)."""
        if self._last_batch_policy != LastBatchPolicy.PARTIAL:
            return False, None
        left = self.batch_size - (self._counter - self._shard_sizes_per_gpu[self._shards_id])
        return bool(np.any(left < self.batch_size)), left

    # ---- iteration ----

    def _run_pipelines(self):
        if self._size > 0 and self._counter >= self._size:
            self._end_iteration()
        try:
            return [p.run() for p in self._pipes]
        except StopIteration:
            if self._size < 0 and self._auto_reset:
                self.reset()
            raise

    def _next_batch(self):
        outputs = self._run_pipelines()
        batches = []
        for i, outs in enumerate(outputs):
            if len(outs) != len(self.output_map):
                raise InvalidArgumentError(
                    f"iterator: the pipeline has {len(outs)} outputs, output_map names "
                    f"{len(self.output_map)}")
            batches.append({name: self._convert(out, self._pipes[i])
                            for name, out in zip(self.output_map, outs)})
        if self._advance_and_check_drop_last():
            self._end_iteration()
        if self._reader_name is not None:
            drop, left = self._remove_padded()
            if drop:
                return [{k: self._slice(v, int(n)) for k, v in b.items()}
                        for b, n in zip(batches, left)]
        elif (self._last_batch_policy == LastBatchPolicy.PARTIAL and self._size > 0
              and self._counter > self._size):
            want = self._num_gpus * self.batch_size - (self._counter - self._size)
            ngpus = math.ceil(want / self.batch_size)
            last = want % self.batch_size or self.batch_size
            batches = batches[:ngpus]
            batches[-1] = {k: self._slice(v, last) for k, v in batches[-1].items()}
        return batches

    def __next__(self):
        if self._first_batch is not None:
            batch, self._first_batch = self._first_batch, None
            return batch
        return self._next_batch()

    def __iter__(self):
        return self

    def reset(self):
        """Starts the next epoch; only valid once the current one has ended."""
        if not (self._counter >= self._size or self._size < 0):
            warnings.warn("iterator: reset() before the end of the epoch is ignored", stacklevel=2)
            return
        fill = self._last_batch_policy == LastBatchPolicy.FILL and not self._last_batch_padded
        if fill and self._reader_name is not None:
            # Samples each pipeline read beyond its shard spill into the next epoch.
            self._counter -= min(self._counter_per_gpu)
            self._counter_per_gpu = self._counter_per_gpu + self._counter
            self._counter_per_gpu = self._counter_per_gpu - self._shard_sizes_per_gpu
            self._counter = min(self._counter_per_gpu)
        elif fill and self._size > 0:
            self._counter = self._counter % self._size
        else:
            self._counter = 0
        if self._reader_name is not None:
            if not self._is_stick_to_shard:
                self._shards_id = (self._shards_id + 1) % self._shards_num
            if fill:
                if not self._is_stick_to_shard:
                    self._shard_sizes_per_gpu = np.roll(self._shard_sizes_per_gpu, 1)
                left = self._shard_sizes_per_gpu - self._counter_per_gpu
                self._size = math.ceil(max(left) / self.batch_size) * self.batch_size
                if self._size == 0:
                    self._counter_per_gpu = np.zeros(self._shards_num, dtype=np.int64)
                    self._size = math.ceil(max(self._shard_sizes_per_gpu) / self.batch_size) * self.batch_size
        for p in self._pipes:
            p.reset()

    @property
    def size(self):
        """Samples per epoch per pipeline (as DALI reports it)."""
        return self._size

    def __len__(self):
        div = self.batch_size if self._reader_name is not None else self._num_gpus * self.batch_size
        if self._last_batch_policy != LastBatchPolicy.DROP:
            return math.ceil(self._size / div)
        return self._size // div

    # ---- framework hooks ----

    def _convert(self, tensor_list, pipe):
        """A framework tensor for one output (zero-copy where possible)."""
        raise NotImplementedError

    def _slice(self, tensor, n):
        return tensor[:n]
