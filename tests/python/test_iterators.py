"""Framework iterators: DALI's last-batch policies, epoch lengths, auto_reset, sharding
over epochs, and the torch / JAX conversions (skipped when those are not installed)."""


import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.plugin.base import LastBatchPolicy
from stoker.plugin.numpy import ClassificationIterator, GenericIterator

FILL, DROP, PARTIAL = LastBatchPolicy.FILL, LastBatchPolicy.DROP, LastBatchPolicy.PARTIAL


@stoker.pipeline_def(batch_size=2, num_threads=1)
def reader_pipe(files, labels, pad=False, shard_id=0, num_shards=1, stick=False):
    data, label = fn.readers.file(files=files, labels=labels, pad_last_batch=pad, name="Reader",
                                  shard_id=shard_id, num_shards=num_shards, stick_to_shard=stick)
    return data, label


def epochs(it, n, gpu=0):
    """n epochs of labels (lists per batch) of pipeline `gpu`."""
    out = []
    for _ in range(n):
        out.append([b[gpu]["label"][:, 0].tolist() for b in it])
        it.reset()
    return out


# The semantics stated for samples 1..7, batch size 2: every epoch is the reader's epoch.
@pytest.mark.parametrize("policy, pad, expected, length", [
    (PARTIAL, False, [[[1, 2], [3, 4], [5, 6], [7]]] * 2, 4),
    (FILL, False, [[[1, 2], [3, 4], [5, 6], [7, 7]]] * 2, 4),
    (DROP, False, [[[1, 2], [3, 4], [5, 6]]] * 2, 3),
    (FILL, True, [[[1, 2], [3, 4], [5, 6], [7, 7]]] * 2, 4),
    (PARTIAL, True, [[[1, 2], [3, 4], [5, 6], [7]]] * 2, 4),
    (DROP, True, [[[1, 2], [3, 4], [5, 6]]] * 2, 3),
])
def test_last_batch_policies(seven_files, policy, pad, expected, length):
    it = ClassificationIterator(reader_pipe(*seven_files, pad=pad), reader_name="Reader",
                                last_batch_policy=policy)
    assert len(it) == length
    assert epochs(it, 2) == expected


def test_fill_epoch_three_starts_with_its_own_first_sample(seven_files):
    it = ClassificationIterator(reader_pipe(*seven_files), reader_name="Reader")
    assert epochs(it, 3)[2] == [[1, 2], [3, 4], [5, 6], [7, 7]]


def test_outputs_are_dense_numpy_batches(seven_files):
    it = GenericIterator(reader_pipe(*seven_files), ["bytes", "labels"], reader_name="Reader")
    batch = next(it)
    assert set(batch[0]) == {"bytes", "labels"}
    assert batch[0]["bytes"].tolist() == [[1], [2]] and batch[0]["labels"].dtype == np.int32


def test_auto_reset_runs_epoch_after_epoch(seven_files):
    it = ClassificationIterator(reader_pipe(*seven_files), reader_name="Reader",
                                last_batch_policy=DROP, auto_reset=True)
    first = [b[0]["label"][:, 0].tolist() for b in it]
    second = [b[0]["label"][:, 0].tolist() for b in it]
    assert first == [[1, 2], [3, 4], [5, 6]] and second == [[1, 2], [3, 4], [5, 6]]


def test_reset_before_the_end_is_ignored(seven_files):
    it = ClassificationIterator(reader_pipe(*seven_files), reader_name="Reader")
    next(it)
    with pytest.warns(UserWarning, match="ignored"):
        it.reset()
    assert [b[0]["label"][:, 0].tolist() for b in it][0] == [3, 4]


def test_prepare_first_batch_off(seven_files):
    it = ClassificationIterator(reader_pipe(*seven_files), reader_name="Reader",
                                prepare_first_batch=False)
    assert next(it)[0]["label"][:, 0].tolist() == [1, 2]


def shard_slice(labels, shard_id, num_shards, stick, epoch):
    """An independent model of a reader's epoch: its shard's samples, in order."""
    n = len(labels)
    k = shard_id if stick else (shard_id + epoch) % num_shards
    return labels[k * n // num_shards:(k + 1) * n // num_shards]


def expected_steps(slices, policy, batch=2):
    """What an iterator over one pipeline per slice gives in one epoch, per pipeline."""
    chunks = [[s[i:i + batch] for i in range(0, len(s), batch)] for s in slices]
    steps = max(map(len, chunks))
    out = [[] for _ in slices]
    for step in range(steps):
        got = [c[step] if step < len(c) else [] for c in chunks]
        if policy == DROP and any(len(b) < batch for b in got):
            continue  # an incomplete step is dropped
        for g, b in enumerate(got):
            if policy == FILL:
                b = b + [b[-1] if b else slices[g][-1]] * (batch - len(b))
            out[g].append(b)
    return out


@pytest.mark.parametrize("policy", [FILL, DROP, PARTIAL])
@pytest.mark.parametrize("stick", [False, True])
def test_sharding_over_epochs(seven_files, policy, stick):
    files, labels = seven_files
    pipes = [reader_pipe(files, labels, shard_id=s, num_shards=2, stick=stick) for s in (0, 1)]
    it = ClassificationIterator(pipes, reader_name="Reader", last_batch_policy=policy)
    # Shard sizes 3 and 4: an epoch is two batches (FILL/PARTIAL) or one (DROP).
    assert it.size == (3 if policy == DROP else 4) and len(it) == (1 if policy == DROP else 2)
    for epoch in range(4):
        got = [[], []]
        for batch in it:
            for g in (0, 1):
                got[g].append(batch[g]["label"][:, 0].tolist())
        slices = [shard_slice(labels, g, 2, stick, epoch) for g in (0, 1)]
        assert got == expected_steps(slices, policy)
        if policy == PARTIAL:  # the shards of an epoch together: every sample once
            assert sorted(sum(got[0] + got[1], [])) == labels
        it.reset()


@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("stick", [False, True])
def test_drop_gives_every_rank_the_same_steps(seven_files, pad, stick):
    """DDP: one iterator per rank, each over its own shard. Shards of 3 and 4 samples,
    batches of 2: under DROP both ranks take floor(3 / 2) = 1 step every epoch (= len()),
    the first full batch of their own shard, though the larger shard has two full
    batches (a rank with one step more hangs in the all-reduce); the next epoch starts
    with the shard's own first samples."""
    files, labels = seven_files
    its = [ClassificationIterator(reader_pipe(files, labels, pad=pad, shard_id=r, num_shards=2,
                                              stick=stick),
                                  reader_name="Reader", last_batch_policy=DROP) for r in (0, 1)]
    for epoch in range(4):
        for r, it in enumerate(its):
            got = [b[0]["label"][:, 0].tolist() for b in it]
            assert len(got) == len(it) == 1, (epoch, r, got)
            assert got == [shard_slice(labels, r, 2, stick, epoch)[:2]], (epoch, r)
            it.reset()


@pytest.mark.filterwarnings("ignore:iterator. size counts samples")
def test_size_without_reader_and_partial_last_batch():
    data = [[np.array([2 * i + k], np.int32) for k in range(2)] for i in range(10)]

    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        return fn.external_source(source=data, cycle=True)

    it = GenericIterator(pipe(), ["x"], size=5, last_batch_policy=PARTIAL)
    assert len(it) == 3
    assert [b[0]["x"][:, 0].tolist() for b in it] == [[0, 1], [2, 3], [4]]
    it.reset()
    assert [b[0]["x"][:, 0].tolist() for b in it] == [[6, 7], [8, 9], [10]]


def test_external_source_end_stops_an_unsized_iterator():
    data = [[np.array([i], np.int32)] * 2 for i in range(3)]

    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        return fn.external_source(source=data)

    it = GenericIterator(pipe(), ["x"], auto_reset=True)
    assert [b[0]["x"][0, 0] for b in it] == [0, 1, 2]
    assert [b[0]["x"][0, 0] for b in it] == [0, 1, 2]


def test_iterator_argument_errors(seven_files):
    p = reader_pipe(*seven_files)
    with pytest.raises(stoker.InvalidArgumentError, match="either size or reader_name"):
        GenericIterator(p, ["a", "b"], size=4, reader_name="Reader")
    with pytest.raises(stoker.InvalidArgumentError, match="last_batch_padded comes from the reader"):
        GenericIterator(p, ["a", "b"], reader_name="Reader", last_batch_padded=True)
    with pytest.warns(UserWarning, match="pass reader_name instead"):  # as DALI warns
        GenericIterator(p, ["a", "b"], size=4)
    with pytest.raises(stoker.InvalidArgumentError, match="unique"):
        GenericIterator(p, ["a", "a"], reader_name="Reader")
    with pytest.raises(stoker.InvalidArgumentError, match="outputs"):
        GenericIterator(p, ["a"], reader_name="Reader")


# ---- PyTorch ----

def test_torch_iterator_zero_copy(seven_files):
    torch = pytest.importorskip("torch")
    from stoker.plugin.torch import ClassificationIterator as TorchIt, to_torch, distributed_info

    @stoker.pipeline_def(batch_size=4, num_threads=1)
    def pipe():
        return fn.random.uniform(shape=[3]), fn.random.coin_flip(dtype=stoker.types.INT64)

    p = pipe()
    u, _ = p.run()
    t = to_torch(u)
    assert t.dtype == torch.float32 and tuple(t.shape) == (4, 3)
    assert t.data_ptr() == u.data_ptr() and t.device.type == "cpu"
    it = TorchIt(pipe(), size=8, last_batch_policy=LastBatchPolicy.PARTIAL)
    batches = list(it)
    assert len(batches) == 2 and batches[0][0]["label"].dtype == torch.int64
    info = distributed_info()
    assert info["shard_id"] == 0 and info["num_shards"] == 1


def test_torch_policies_match_numpy(seven_files):
    pytest.importorskip("torch")
    from stoker.plugin.torch import ClassificationIterator as TorchIt
    for policy in (FILL, DROP, PARTIAL):
        a = epochs(TorchIt(reader_pipe(*seven_files), reader_name="Reader", last_batch_policy=policy), 2)
        b = epochs(ClassificationIterator(reader_pipe(*seven_files), reader_name="Reader",
                                          last_batch_policy=policy), 2)
        assert a == b


# ---- JAX ----

def test_jax_iterator():
    jax = pytest.importorskip("jax")
    from stoker.plugin.jax import Iterator

    @stoker.pipeline_def(batch_size=4, num_threads=1)
    def pipe():
        return fn.random.uniform(shape=[2])

    it = Iterator(pipe(), ["x"], size=8)
    batches = list(it)
    assert len(batches) == 2 and batches[0]["x"].shape == (4, 2)
    assert isinstance(batches[0]["x"], jax.Array)


