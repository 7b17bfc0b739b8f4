"""The framework-neutral iterator behind the PyTorch, JAX and NumPy plugins.

It takes DALI's iterator arguments, so training loops port unchanged, and guarantees
what a training loop relies on: with ``reader_name``, an epoch of the iterator is
exactly one epoch of the reader, so every sample of the shard comes once per epoch
(stoker's batches never cross a reader epoch: see ``Pipeline.last_batch_info``). The
epoch's last batch, when incomplete, follows ``last_batch_policy``. For samples 1..7,
batch size 2:

* ``PARTIAL`` ends every epoch with [7].
* ``FILL`` ends every epoch with [7, 7]: the incomplete batch is filled by repeating
  its last sample (what DALI gives with the reader's ``pad_last_batch=True``), so the
  next epoch still starts with its own first sample.
* ``DROP`` ends every epoch with [5, 6]: only full batches are returned. With shards,
  every shard's epoch gets the same number of batches, the full batches of the smallest
  shard (``len()``), whichever shard a pipeline reads: DDP ranks, each with its own
  iterator, then take the same number of steps (a rank with one step more would wait for
  ever in its gradient all-reduce); the rest of a larger shard's epoch is read and dropped.

With the reader's ``pad_last_batch=True`` the reader itself pads (FILL and the
pipeline give [7, 7]); PARTIAL then returns at most the shard's own samples ([7]).
Under ``on_error="skip"`` a batch may lose samples anywhere: PARTIAL returns what is
left, FILL fills it, DROP drops it; a step where no pipeline has a sample left (the end
of an epoch was all bad samples) is no batch at all. With several pipelines (one per GPU), the epoch
ends when every pipeline's epoch has ended; a pipeline whose shard ran out a batch
earlier contributes an empty batch (PARTIAL) or a filled one (FILL), and DROP drops
such a step. ``len()`` and ``size`` are DALI's (upper bounds when samples are skipped).
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
        if last_batch_padded and reader_name is not None:
            raise InvalidArgumentError(
                "iterator: with reader_name, last_batch_padded comes from the reader's "
                "pad_last_batch; do not set it")
        if size > 0:
            warnings.warn("iterator: size counts samples without knowing the reader's epochs; "
                          "pass reader_name instead, so that every epoch is the reader's",
                          UserWarning, stacklevel=3)
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
        self._ended = [False] * self._num_gpus  # reader epochs over, this iterator epoch
        self._delivered = np.zeros(self._num_gpus, dtype=np.int64)  # samples, this epoch
        self._steps = 0  # batches returned this epoch
        self._templates = [None] * self._num_gpus  # a pipeline's last converted batch
        if reader_name is not None:
            self._init_from_reader(reader_name)
        self._counter = 0
        self._first_batch = None
        # the pipelines' checkpoints after the batches returned so far, and after those run
        self._checkpoints = [p.checkpoint() for p in self._pipes]
        self._staged = list(self._checkpoints)
        if prepare_first_batch:
            try:
                self._first_batch = self._next_batch()
                self._first_staged = list(self._staged)
            except StopIteration:
                raise InvalidArgumentError(
                    "iterator: the pipeline gave no data; check its source and size") from None

    # ---- epoch bookkeeping ----

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
        elif self._last_batch_padded:  # every shard padded to the largest (DALI's size)
            self._size = first["epoch_size_padded"] // self._shards_num
        else:
            self._size = math.ceil(math.ceil(self._size_no_pad / self._shards_num)
                                   / self.batch_size) * self.batch_size

    def _shard_sizes(self):
        """Each pipeline's shard size this epoch (the shard moves when not sticking)."""
        n, s = self._size_no_pad, self._shards_num
        return (self._shards_id + 1) * n // s - self._shards_id * n // s

    def _drop_steps(self):
        """DROP's batches per epoch: the full batches of the smallest shard (DALI ends a
        DROP epoch when any shard would overflow), the same on every rank."""
        return (self._size_no_pad // self._shards_num) // self.batch_size

    def _drain(self):
        """Reads and drops what is left of every pipeline's reader epoch."""
        while not all(self._ended):
            self._run_pipelines()

    def _end_iteration(self):
        if self._auto_reset:
            self.reset()
        raise StopIteration

    # ---- iteration ----

    def _run_pipelines(self):
        """One batch of converted outputs per pipeline (None for a pipeline whose reader
        epoch has ended), and their sizes."""
        batches, sizes = [], []
        for g, p in enumerate(self._pipes):
            if self._ended[g]:
                batches.append(None)
                sizes.append(0)
                continue
            try:
                outs = p.run()
            except StopIteration:
                if self._size < 0 and self._auto_reset:
                    self.reset()
                raise
            if len(outs) != len(self.output_map):
                raise InvalidArgumentError(
                    f"iterator: the pipeline has {len(outs)} outputs, output_map names "
                    f"{len(self.output_map)}")
            if self._reader_name is not None and p.last_batch_info()["ends_epoch"]:
                self._ended[g] = True
            self._staged[g] = p.checkpoint()
            batches.append({name: self._convert(out, p) for name, out in zip(self.output_map, outs)})
            sizes.append(len(outs[0]) if outs else 0)
        return batches, sizes

    def _shaped(self, g, batch, n, keep):
        """Pipeline g's batch cut to `keep` samples (PARTIAL), or filled up to the batch
        size by repeating its last sample (FILL); a missing batch takes the pipeline's
        last one as the model."""
        if batch is not None and n > 0:
            self._templates[g] = {k: self._slice_from(v, n - 1) for k, v in batch.items()}
        model = self._templates[g]
        if batch is None and model is None:  # its shard gave no sample at all yet
            return {k: None for k in self.output_map}
        if batch is None or (n == 0 and model is not None):
            # this pipeline's epoch ended a step earlier, or every sample of the batch was
            # skipped: an empty batch shaped like the pipeline's earlier ones
            batch, n = {k: self._slice(v, 0) for k, v in model.items()}, 0
        if self._last_batch_policy == LastBatchPolicy.PARTIAL:
            return batch if keep >= n else {k: self._slice(v, keep) for k, v in batch.items()}
        if n == self.batch_size or model is None:  # nothing was ever seen to fill with
            return batch
        return {k: self._fill(v, model[k], self.batch_size - n) for k, v in batch.items()}

    def _next_reader_batch(self):
        while True:
            if all(self._ended):
                self._end_iteration()
            if self._last_batch_policy == LastBatchPolicy.DROP and self._steps >= self._drop_steps():
                self._drain()
                self._end_iteration()
            batches, sizes = self._run_pipelines()
            if not any(sizes):  # nothing left in any pipeline's epoch (all of it skipped)
                continue
            if self._last_batch_policy == LastBatchPolicy.DROP:
                padding = self._last_batch_padded and np.any(self._delivered + sizes > self._shard_sizes())
                if all(n == self.batch_size for n in sizes) and not padding:
                    self._delivered += sizes
                    self._steps += 1
                    return batches
                continue  # an incomplete step is dropped; the epoch may go on
            keep = self._shard_sizes() - self._delivered if self._last_batch_padded else np.array(sizes)
            out = []
            for g in range(self._num_gpus):
                out.append(self._shaped(g, batches[g], sizes[g], int(max(keep[g], 0))))
            self._delivered += np.minimum(sizes, np.maximum(keep, 0))
            return out

    def _next_sized_batch(self):
        """Without reader_name: `size` samples per epoch over all pipelines (or until an
        external source ends, size -1), counted as they come."""
        if self._size > 0 and self._counter >= self._size:
            self._end_iteration()
        batches, sizes = self._run_pipelines()
        before, self._counter = self._counter, self._counter + sum(sizes)
        policy = self._last_batch_policy
        if policy == LastBatchPolicy.DROP and self._size > 0 and self._counter > self._size:
            self._end_iteration()
        if policy == LastBatchPolicy.PARTIAL and self._size > 0 and self._counter > self._size:
            want, out = self._size - before, []
            for g, batch in enumerate(batches):
                take = min(want, sizes[g])
                want -= take
                if take > 0:
                    out.append({k: self._slice(v, take) for k, v in batch.items()})
            return out
        return batches

    def _next_batch(self):
        if self._reader_name is not None:
            return self._next_reader_batch()
        return self._next_sized_batch()

    def __next__(self):
        if self._first_batch is not None:
            batch, self._first_batch = self._first_batch, None
            self._checkpoints = self._first_staged
            return batch
        batch = self._next_batch()
        self._checkpoints = list(self._staged)
        return batch

    def __iter__(self):
        return self

    def _epoch_over(self):
        if self._reader_name is not None:
            return all(self._ended) and self._first_batch is None
        return self._size < 0 or self._counter >= self._size

    def reset(self):
        """Starts the next epoch; only valid once the current one has ended."""
        if not self._epoch_over():
            warnings.warn("iterator: reset() before the end of the epoch is ignored", stacklevel=2)
            return
        if self._reader_name is not None:
            self._ended = [False] * self._num_gpus
            self._delivered[:] = 0
            self._steps = 0
            if not self._is_stick_to_shard:
                self._shards_id = (self._shards_id + 1) % self._shards_num
        elif self._last_batch_policy == LastBatchPolicy.FILL and self._size > 0:
            self._counter = self._counter % self._size
        else:
            self._counter = 0
        for p in self._pipes:
            p.reset()

    # ---- checkpoints ----

    def checkpoints(self):
        """Each pipeline's checkpoint after the batches this iterator returned (DALI's
        ``checkpoints()``): build the pipelines with ``checkpoint=`` these to resume."""
        return list(self._checkpoints)

    def state_dict(self):
        """Where the iterator stands: the pipelines' checkpoints and the epoch's
        counters; a plain dict (PyTorch Lightning's ``state_dict`` convention)."""
        return {"checkpoints": self.checkpoints(), "ended": list(self._ended),
                "delivered": self._delivered.tolist(), "counter": self._counter,
                "steps": self._steps,
                "shards_id": self._shards_id.tolist() if self._reader_name is not None else None}

    def load_state_dict(self, state):
        """Resumes the epoch's counters of `state` (from ``state_dict()``). The
        pipelines must have been built with ``checkpoint=`` state["checkpoints"], each
        its own; construct the iterator on them, then call this before iterating."""
        if list(state["checkpoints"]) != self._checkpoints:
            raise InvalidArgumentError(
                "iterator: load_state_dict needs pipelines built with checkpoint= the "
                "state's checkpoints (each pipeline its own, in order)")
        self._ended = list(state["ended"])
        self._delivered = np.array(state["delivered"], dtype=np.int64)
        self._counter = int(state["counter"])
        self._steps = int(state.get("steps", 0))
        if state["shards_id"] is not None:
            self._shards_id = np.array(state["shards_id"], dtype=np.int64)

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

    def _slice_from(self, tensor, i):
        """Sample i alone, as a batch of one."""
        return tensor[i:i + 1]

    def _fill(self, tensor, last, k):
        """`tensor` followed by k copies of `last` (a batch of one sample)."""
        return np.concatenate([tensor, np.repeat(last, k, axis=0)])
