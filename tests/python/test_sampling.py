"""What a training loop relies on from the readers, asserted as properties through the
public API, for every reader (file, numpy, tfrecord, webdataset), shuffle mode, shard
count and epoch:

* every epoch of a shard is each of its samples once, and the shards of one epoch are
  disjoint and cover the data set (the reference: PyTorch's DistributedSampler);
* shuffled epochs differ, the same seed gives the same order for any thread count and
  prefetch depth, and a shuffle mixes a class-sorted folder;
* streaming readers (files read front to back) keep whole files per shard and never mix
  two epochs;
* under on_error="skip" an epoch delivers every good sample exactly once, through every
  last-batch policy of the iterators.

Each sample carries its own identity (its label, file content or record), so the tests
need no knowledge of the sampler's internals."""

import tarfile

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker import tfrecord as tfrec
from stoker.plugin.base import LastBatchPolicy
from stoker.plugin.numpy import ClassificationIterator, GenericIterator

from test_formats import example, write_shard, write_tfrecord

N = 100
FILE_SIZES = (20, 3, 31, 1, 12, 25, 8)  # samples per file for the multi-sample formats
assert sum(FILE_SIZES) == N


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """The same N samples (identity i) in every format the readers take."""
    d = tmp_path_factory.mktemp("sampling")
    files = []
    for i in range(N):
        path = d / f"f{i:03d}.bin"
        path.write_bytes(bytes([i]))
        files.append(str(path))
    npys = []
    for i in range(N):
        path = d / f"a{i:03d}.npy"
        np.save(path, np.array([i], np.int32))
        npys.append(str(path))
    tars, records, k = [], [], 0
    for f, size in enumerate(FILE_SIZES):
        tars.append(str(d / f"shard-{f}.tar"))
        write_shard(tars[-1], [(f"s{k + j:03d}.cls", str(k + j).encode()) for j in range(size)],
                    tarfile.USTAR_FORMAT)
        records.append(str(d / f"part-{f}.tfrecord"))
        write_tfrecord(records[-1], [example({"label": [k + j]}) for j in range(size)])
        k += size
    return {"file": files, "numpy": npys, "webdataset": tars, "tfrecord": records}


def reader(kind, paths, **kw):
    """The reader of `kind` over `paths`, giving each sample's identity as an int32/int64."""
    if kind == "file":
        data, label = fn.readers.file(files=paths, labels=list(range(N)), name="Reader", **kw)
        return label
    if kind == "numpy":
        return fn.readers.numpy(files=paths, name="Reader", **kw)
    if kind == "webdataset":
        return fn.readers.webdataset(paths=paths, ext="cls", name="Reader", **kw)
    return fn.readers.tfrecord(path=paths, features={"label": tfrec.FixedLenFeature([1], tfrec.int64)},
                               name="Reader", **kw)["label"]


def identity(kind, sample):
    a = np.asarray(sample)
    return int(a.tobytes()) if kind == "webdataset" else int(a.reshape(-1)[0])


def run_epochs(kind, paths, epochs, batch_size=10, threads=2, prefetch=2, pipe_seed=7, **kw):
    """`epochs` reader epochs: per epoch, the identities in order. Checks that a batch
    never holds two epochs and that the epochs come in order."""
    @stoker.pipeline_def(batch_size=batch_size, num_threads=threads, seed=pipe_seed,
                         prefetch_queue_depth=prefetch)
    def pipe():
        return reader(kind, paths, **kw)

    p = pipe()
    p.build()
    out = [[] for _ in range(epochs)]
    for e in range(epochs):
        while True:
            (tl,) = p.run()
            info = p.last_batch_info()
            assert info["epoch"] == e and info["size"] == len(tl) <= batch_size
            out[e].extend(identity(kind, tl[i]) for i in range(len(tl)))
            if info["ends_epoch"]:
                break
    return out


def check_partition(parts, n=N):
    """The shards' parts of one epoch: each part distinct, together every sample once."""
    for part in parts:
        assert len(set(part)) == len(part), "a sample twice in one shard's epoch"
    assert sorted(sum(parts, [])) == list(range(n))


KINDS = ["file", "numpy", "webdataset", "tfrecord"]
MODES = [{}, {"random_shuffle": True}, {"shuffle_after_epoch": True}, {"random_shuffle": True, "seed": 3}]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", MODES, ids=["in-order", "random_shuffle", "shuffle_after_epoch", "seeded"])
@pytest.mark.parametrize("shards,stick", [(1, True), (3, True), (3, False), (4, False)])
def test_every_epoch_is_a_partition(datasets, kind, mode, shards, stick):
    runs = [run_epochs(kind, datasets[kind], 3, num_shards=shards, shard_id=s, stick_to_shard=stick,
                       pipe_seed=10 + s, **mode) for s in range(shards)]  # ranks seeded apart, as DALI's examples
    for e in range(3):
        check_partition([runs[s][e] for s in range(shards)])
    if mode:
        assert runs[0][0] != runs[0][1] != runs[0][2], "shuffled epochs must differ"
        assert runs[0][0] != sorted(runs[0][0])
    else:
        lo, hi = 0, N // shards  # shard 0's first epoch, in order
        assert runs[0][0] == list(range(lo, hi))


@pytest.mark.parametrize("kind", KINDS)
def test_pad_last_batch_pads_each_epoch_with_its_last_sample(datasets, kind):
    shards, batch = 3, 8
    runs = [run_epochs(kind, datasets[kind], 2, batch_size=batch, num_shards=shards, shard_id=s,
                       random_shuffle=True, pad_last_batch=True) for s in range(shards)]
    padded = -(-(-(-N // shards)) // batch) * batch  # ceil(ceil(N/S)/B)*B
    for e in range(2):
        parts = []
        for s in range(shards):
            epoch = runs[s][e]
            assert len(epoch) == padded
            k = (s + e) % shards  # the shard this epoch reads (stick_to_shard is off)
            own = (k + 1) * N // shards - k * N // shards
            assert epoch[own:] == [epoch[own - 1]] * (padded - own)
            parts.append(epoch[:own])
        check_partition(parts)


@pytest.mark.parametrize("kind", ["webdataset", "tfrecord"])
@pytest.mark.parametrize("shards", [1, 2, 3])
def test_streaming_keeps_files_whole_and_epochs_apart(datasets, kind, shards):
    bounds = np.cumsum((0,) + FILE_SIZES)
    file_of = {i: int(np.searchsorted(bounds, i, side="right") - 1) for i in range(N)}
    runs = [run_epochs(kind, datasets[kind], 3, streaming=True, random_shuffle=True, initial_fill=6,
                       num_shards=shards, shard_id=s) for s in range(shards)]
    for e in range(3):
        parts = [runs[s][e] for s in range(shards)]
        check_partition(parts)
        owners = [{file_of[i] for i in part} for part in parts]
        for s in range(shards):  # every file read whole by one shard
            for f in owners[s]:
                assert sum(file_of[i] == f for i in parts[s]) == FILE_SIZES[f]
            assert all(not (owners[s] & owners[t]) for t in range(shards) if t != s)
        for part in parts:  # a buffer of 6: a sample moves less than 6 + the file order allows
            assert part != sorted(part)
    assert runs[0][0] != runs[0][1]


def test_streaming_needs_as_many_files_as_shards(datasets):
    with pytest.raises(stoker.InvalidArgumentError, match="num_shards .8. exceeds the number of files"):
        run_epochs("webdataset", datasets["webdataset"], 1, streaming=True, num_shards=8)


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_order_for_any_threads_and_prefetch(datasets, kind):
    base = run_epochs(kind, datasets[kind], 2, threads=1, prefetch=1, random_shuffle=True)
    for threads, prefetch in ((2, 1), (3, 4)):
        assert run_epochs(kind, datasets[kind], 2, threads=threads, prefetch=prefetch,
                          random_shuffle=True) == base
    other = run_epochs(kind, datasets[kind], 2, pipe_seed=8, random_shuffle=True)
    assert other != base  # the pipeline seed reorders (within the shard)


def test_shuffled_positions_are_uniform_over_pipeline_seeds(datasets):
    """Where sample 0 lands in an epoch of 8, over 800 pipeline seeds: chi-square with 7
    degrees of freedom below 24.3 (the 0.999 quantile)."""
    files = datasets["file"][:8]
    counts = np.zeros(8)
    for seed in range(800):
        @stoker.pipeline_def(batch_size=8, num_threads=1, seed=seed, prefetch_queue_depth=1)
        def pipe():
            _, label = fn.readers.file(files=files, labels=list(range(8)), random_shuffle=True)
            return label

        (tl,) = pipe().run()
        order = [int(np.asarray(tl[i])[0]) for i in range(8)]
        counts[order.index(0)] += 1
    chi2 = ((counts - 100) ** 2 / 100).sum()
    assert chi2 < 24.3, counts


def test_class_sorted_folder_batches_mix_classes(tmp_path):
    """An ImageFolder of 20 classes x 200 files (ImageNet's layout, sorted by class):
    a uniform shuffle gives batches of 64 from about 19 classes; we demand at least 12 in
    every batch (a failure would be a 1e-9 event)."""
    for c in range(20):
        d = tmp_path / f"class{c:02d}"
        d.mkdir()
        for i in range(200):
            (d / f"{i:03d}.jpg").write_bytes(b"x")

    @stoker.pipeline_def(batch_size=64, num_threads=2, seed=1)
    def pipe():
        _, label = fn.readers.file(file_root=str(tmp_path), random_shuffle=True, name="Reader")
        return label

    p = pipe()
    for _ in range(4000 // 64):
        (tl,) = p.run()
        classes = {int(np.asarray(tl[i])[0]) for i in range(len(tl))}
        assert len(classes) >= 12, sorted(classes)


# ---- skip: every good sample exactly once per epoch --------------------------------------

@pytest.fixture
def good_and_bad(tmp_path, photos):
    """40 good images (labels 0..39) and 4 corrupt ones (labels 40..43), interleaved."""
    png = [p for p in photos if p.endswith(".png")][0]
    good = open(png, "rb").read()
    files, labels = [], []
    for i in range(44):
        path = tmp_path / f"img{i:02d}.png"
        path.write_bytes(good if i < 40 else good[: len(good) // 3])
        files.append(str(path))
        labels.append(i)
    order = np.random.default_rng(0).permutation(44)
    return [files[i] for i in order], [labels[i] for i in order]


@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.DROP, LastBatchPolicy.FILL])
@pytest.mark.parametrize("shuffle", [False, True])
def test_skip_delivers_every_good_sample_once_per_epoch(good_and_bad, policy, shuffle):
    files, labels = good_and_bad

    @stoker.pipeline_def(batch_size=8, num_threads=2, seed=3, on_error="skip")
    def pipe():
        jpegs, label = fn.readers.file(files=files, labels=labels, random_shuffle=shuffle, name="Reader")
        return fn.resize(fn.decoders.image(jpegs), size=[8, 8]), label

    p = pipe()
    it = ClassificationIterator(p, reader_name="Reader", last_batch_policy=policy)
    assert len(it) == (44 // 8 if policy == LastBatchPolicy.DROP else -(-44 // 8))  # DALI's bound
    for epoch in range(3):
        got = []
        for batch in it:
            lab = batch[0]["label"][:, 0].tolist()
            if policy != LastBatchPolicy.PARTIAL:
                assert len(lab) == 8  # DROP and FILL: whole batches only
            got.append(lab)
        flat = sum(got, [])
        assert all(x < 40 for x in flat), "a corrupt sample came out"
        if policy == LastBatchPolicy.PARTIAL:
            assert sorted(flat) == list(range(40))  # each good sample once, none twice
        elif policy == LastBatchPolicy.DROP:
            assert len(flat) == 40 // 8 * 8 and len(set(flat)) == len(flat)
        else:  # FILL: every good sample, the last batch filled with its last sample
            assert set(flat) == set(range(40)) and len(flat) == 40
        it.reset()
    stats = p.stats()
    assert stats["skipped"] == 3 * 4  # counted as batches are handed out: 4 per epoch
    assert all(".png" in m for m in stats["skipped_samples"])


@pytest.mark.filterwarnings("ignore:iterator. size counts samples")
def test_skip_in_a_sized_iterator_counts_delivered_samples(good_and_bad):
    files, labels = good_and_bad

    @stoker.pipeline_def(batch_size=8, num_threads=2, seed=3, on_error="skip")
    def pipe():
        jpegs, label = fn.readers.file(files=files, labels=labels)
        return fn.decoders.image(jpegs), label

    it = GenericIterator(pipe(), ["img", "label"], size=20, last_batch_policy=LastBatchPolicy.PARTIAL)
    got = sum((b[0]["label"][:, 0].tolist() for b in it), [])
    assert len(got) == 20 and len(set(got)) == 20 and all(x < 40 for x in got)


def test_streaming_warns_once_when_the_buffer_cannot_mix_files(datasets, capfd):
    # the largest file holds 31 samples: a buffer of 62 or more mixes at least two files
    run_epochs("webdataset", datasets["webdataset"], 2, streaming=True, random_shuffle=True, initial_fill=62)
    assert "stoker: warning:" not in capfd.readouterr().err
    run_epochs("webdataset", datasets["webdataset"], 2, streaming=True, random_shuffle=True, initial_fill=16)
    err = capfd.readouterr().err
    assert err.count("stoker: warning:") == 1 and "initial_fill=16" in err and "Reader" in err
