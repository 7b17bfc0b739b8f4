"""The sample cache (fn.cache, issue 22): a pipeline with a cache returns exactly what the
same pipeline without it returns, epoch after epoch with shuffling and random operators
after the cache; later epochs do not run the cached prefix (counted through a
python_function inside it, and through stats()); entries stay within capacity_bytes; the
disk cache persists across pipelines and is invalidated by a changed file or a changed
prefix; random operators and sources without sample identity are refused."""

import os
import shutil

import numpy as np
import pytest

import stoker
from stoker import fn, pipeline_def
from stoker.errors import StokerError

from test_sampling import FILE_SIZES as SAMPLING_FILE_SIZES, N as SAMPLING_N  # noqa: I100
from test_sampling import datasets  # noqa: F401  (the fixture)
from test_sampling import identity as sampling_identity, reader as sampling_reader

BATCH = 3


def photos_copy(photos, tmp_path):
    """The test photos copied to a directory the test may modify."""
    d = tmp_path / "photos"
    d.mkdir()
    out = []
    for p in photos:
        dst = d / os.path.basename(p)
        shutil.copyfile(p, dst)
        out.append(str(dst))
    return out


def make(files, cache=None, calls=None, shorter=40, with_labels=False, checkpoint=None,
         on_error="error", prefetch=2, exec_async=True):
    """Reader (shuffled) -> decode -> python_function counting calls -> resize ->
    [cache] -> random_resized_crop -> flip by coin -> output; `cache` is fn.cache's
    keyword arguments, None for no cache."""

    calls = [] if calls is None else calls

    def count(x):
        calls.append(1)
        return x

    @pipeline_def(batch_size=BATCH, num_threads=2, seed=11, prefetch_queue_depth=prefetch,
                  exec_async=exec_async, enable_checkpointing=True, on_error=on_error)
    def pipe():
        jpegs, labels = fn.readers.file(files=files, random_shuffle=True, seed=4, name="Reader")
        images = fn.decoders.image(jpegs, output_type="RGB")
        images = fn.python_function(images, function=count)
        small = fn.resize(images, resize_shorter=shorter)
        if cache is not None:
            if with_labels:
                small, labels = fn.cache(small, labels, **cache)
            else:
                small = fn.cache(small, **cache)
        # named: random streams are keyed by instance names, which would otherwise shift
        # with the operators the cached variants add
        crops = fn.random_resized_crop(small, size=[24, 24], name="rrc")
        flipped = fn.flip(crops, horizontal=fn.random.coin_flip(probability=0.5, name="coin"))
        return flipped, small, labels

    p = pipe(checkpoint=checkpoint)
    p.build()
    return p


def batches_per_epoch(n):
    return -(-n // BATCH)


def take(p, batches):
    out = []
    for _ in range(batches):
        outs = p.run()
        out.append([[np.asarray(t[i]).copy() for i in range(len(t))] for t in outs])
    return out


def assert_same(a, b):
    assert len(a) == len(b)
    for ba, bb in zip(a, b):
        for ta, tb in zip(ba, bb):
            assert len(ta) == len(tb)
            for x, y in zip(ta, tb):
                assert x.dtype == y.dtype and x.shape == y.shape
                np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("with_labels", [False, True], ids=["images", "images+labels"])
def test_cached_pipeline_gives_the_same_batches_over_three_epochs(photos, with_labels):
    n = len(photos)
    steps = 3 * batches_per_epoch(n)
    plain = take(make(photos), steps)
    calls = []
    p = make(photos, cache={}, calls=calls, with_labels=with_labels, prefetch=1, exec_async=False)
    cached = take(p, steps)
    assert_same(cached, plain)
    # the prefix ran once per photo: epochs 2 and 3 came from the cache
    assert len(calls) == n
    s = p.stats()
    assert s["cache_misses"] == n and s["cache_hits"] == 2 * n
    assert s["cache_entries"] == n
    # the bytes held: the resized images (+ labels) and a small header per entry
    payload = sum(np.asarray(cached[b][1][i]).nbytes for b in range(batches_per_epoch(n))
                  for i in range(len(cached[b][1])))
    assert payload <= s["cache_bytes"] <= payload + n * 2048
    # the epochs differ (shuffled, new random crops) yet agree with the plain pipeline
    assert not all(np.array_equal(x, y) for x, y in zip(cached[0][0], cached[batches_per_epoch(n)][0]))


def test_a_hit_skips_the_decoder(photos):
    p = make(photos, cache={}, with_labels=True, prefetch=1, exec_async=False)
    take(p, batches_per_epoch(len(photos)))
    first = {k: v["time_ns"] for k, v in p.executor_statistics().items()}
    take(p, 2 * batches_per_epoch(len(photos)))
    later = {k: v["time_ns"] for k, v in p.executor_statistics().items()}
    decoder = next(k for k in first if k.startswith("decoders.image"))
    assert later[decoder] == first[decoder]  # not run again
    assert later["Reader"] == first["Reader"]  # labels cached too: the reader is skipped
    assert later["rrc"] > first["rrc"]  # the random part runs every epoch


def test_reader_still_runs_when_its_labels_are_not_cached(photos):
    calls = []
    p = make(photos, cache={}, calls=calls, prefetch=1, exec_async=False)
    take(p, batches_per_epoch(len(photos)))
    first = p.executor_statistics()["Reader"]["time_ns"]
    take(p, batches_per_epoch(len(photos)))
    assert p.executor_statistics()["Reader"]["time_ns"] > first
    assert len(calls) == len(photos)


def test_memory_bound_is_respected_and_results_unchanged(photos):
    n = len(photos)
    steps = 3 * batches_per_epoch(n)
    plain = take(make(photos), steps)
    # room for about two of the resized photos (40 x ~40..60 x 3 bytes each)
    cap = 2 * 40 * 64 * 3
    p = make(photos, cache={"capacity_bytes": cap}, prefetch=1, exec_async=False)
    assert_same(take(p, steps), plain)
    s = p.stats()
    assert s["cache_bytes"] <= cap
    assert 1 <= s["cache_entries"] < n
    assert s["cache_dropped"] > 0
    assert s["cache_hits"] + s["cache_misses"] == 3 * n
    assert s["cache_misses"] > n  # evicted samples were made again


def test_zero_capacity_keeps_nothing(photos):
    p = make(photos, cache={"capacity_bytes": 0}, prefetch=1, exec_async=False)
    take(p, 2 * batches_per_epoch(len(photos)))
    s = p.stats()
    assert s["cache_hits"] == 0 and s["cache_entries"] == 0 and s["cache_bytes"] == 0
    assert s["cache_dropped"] == 2 * len(photos)


def test_disk_cache_persists_and_is_invalidated_by_a_changed_file(photos, tmp_path):
    files = photos_copy(photos, tmp_path)
    n = len(files)
    d = tmp_path / "cache"
    one_epoch = batches_per_epoch(n)
    plain = take(make(files), one_epoch)
    p = make(files, cache={"path": str(d)}, prefetch=1, exec_async=False)
    assert_same(take(p, one_epoch), plain)
    assert p.stats()["cache_misses"] == n
    del p
    entries = sorted(f for f in os.listdir(d) if f.endswith(".stkc"))
    assert len(entries) == n
    manifest = (d / "manifest.txt").read_text()
    assert manifest.startswith("stoker sample cache 1\n")
    assert "decoders.image" in manifest and "resize_shorter=40" in manifest

    # a new pipeline: its first epoch comes from the files, and is the same
    calls = []
    p = make(files, cache={"path": str(d)}, calls=calls, prefetch=1, exec_async=False)
    assert_same(take(p, one_epoch), plain)
    assert calls == [] and p.stats()["cache_hits"] == n and p.stats()["cache_misses"] == 0
    del p

    # one file replaced by another photo: only that sample is made again
    target = files[0]
    shutil.copyfile(files[1], target)
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    plain2 = take(make(files), one_epoch)
    calls = []
    p = make(files, cache={"path": str(d)}, calls=calls, prefetch=1, exec_async=False)
    assert_same(take(p, one_epoch), plain2)
    assert len(calls) == 1
    assert p.stats()["cache_misses"] == 1 and p.stats()["cache_hits"] == n - 1
    # the entry was replaced in place: still one file per sample
    assert len([f for f in os.listdir(d) if f.endswith(".stkc")]) == n
    del p
    # a shorter file list (another data set split) keeps the entries of its files
    p = make(files[:-1], cache={"path": str(d)}, prefetch=1, exec_async=False)
    take(p, batches_per_epoch(n - 1))
    assert p.stats()["cache_hits"] == n - 1 and p.stats()["cache_misses"] == 0


def test_disk_cache_is_emptied_for_a_changed_prefix(photos, tmp_path):
    d = tmp_path / "cache"
    n = len(photos)
    one_epoch = batches_per_epoch(n)
    take(make(photos, cache={"path": str(d)}, prefetch=1, exec_async=False), one_epoch)
    (d / "notes.txt").write_text("kept")  # not the cache's: never deleted
    calls = []
    p = make(photos, cache={"path": str(d)}, calls=calls, shorter=32, prefetch=1,
             exec_async=False)
    assert_same(take(p, one_epoch), take(make(photos, shorter=32), one_epoch))
    assert len(calls) == n and p.stats()["cache_hits"] == 0
    assert "resize_shorter=32" in (d / "manifest.txt").read_text()
    assert len([f for f in os.listdir(d) if f.endswith(".stkc")]) == n
    assert (d / "notes.txt").read_text() == "kept"


def test_disk_cache_stops_inserting_when_full(photos, tmp_path):
    d = tmp_path / "cache"
    n = len(photos)
    cap = 3 * 40 * 64 * 3
    p = make(photos, cache={"path": str(d), "capacity_bytes": cap}, prefetch=1, exec_async=False)
    plain = take(make(photos), 2 * batches_per_epoch(n))
    assert_same(take(p, 2 * batches_per_epoch(n)), plain)
    s = p.stats()
    on_disk = sum(os.path.getsize(d / f) for f in os.listdir(d) if f.endswith(".stkc"))
    assert on_disk == s["cache_bytes"] <= cap
    assert 1 <= s["cache_entries"] < n
    assert s["cache_hits"] == s["cache_entries"]  # epoch 2 found exactly what was stored


def test_checkpoint_resumes_a_cached_pipeline(photos):
    n = len(photos)
    whole = make(photos, cache={})
    take(whole, batches_per_epoch(n) + 1)
    ckpt = whole.checkpoint()
    after = take(whole, 4)
    resumed = make(photos, cache={}, checkpoint=ckpt)
    assert_same(take(resumed, 4), after)


def test_bad_samples_are_skipped_every_epoch(photos, tmp_path):
    files = photos_copy(photos, tmp_path)
    bad = tmp_path / "photos" / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    files = files + [str(bad)]
    steps = 3 * batches_per_epoch(len(files))
    plain = make(files, on_error="skip")
    cached = make(files, cache={}, on_error="skip", prefetch=1, exec_async=False)
    assert_same(take(cached, steps), take(plain, steps))
    assert cached.stats()["cache_entries"] == len(photos)  # the broken file is never stored


def test_random_operator_in_the_prefix_is_refused(photos):
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        jpegs, labels = fn.readers.file(files=photos)
        crops = fn.random_resized_crop(fn.decoders.image(jpegs), size=[8, 8], name="rrc")
        return fn.cache(fn.resize(crops, size=[4, 4]), name="kept")

    with pytest.raises(StokerError, match=r"kept.*'rrc' \(random_resized_crop\), a random operator"):
        pipe().build()


def test_random_argument_feeding_the_prefix_is_refused(photos):
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        jpegs, labels = fn.readers.file(files=photos)
        angle = fn.random.uniform(range=[-10.0, 10.0], name="angle")
        return fn.cache(fn.rotate(fn.decoders.image(jpegs), angle=angle))

    with pytest.raises(StokerError, match=r"'angle' \(random.uniform\), a random operator"):
        pipe().build()


def test_batch_operator_in_the_prefix_is_refused(photos):
    """permute_batch is not random, but a sample's value depends on its batch."""
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        jpegs, labels = fn.readers.file(files=photos)
        images = fn.resize(fn.decoders.image(jpegs), size=[8, 8])
        return fn.cache(fn.permute_batch(images, indices=[1, 0], name="perm"))

    with pytest.raises(StokerError, match=r"'perm' \(permute_batch\), a batch operator"):
        pipe().build()


def test_external_source_prefix_is_refused():
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        x = fn.external_source(source=[[np.zeros(3, np.uint8)] * 2], cycle=True, name="src")
        return fn.cache(x)

    with pytest.raises(StokerError, match=r"'src' \(external_source\).*no identity"):
        pipe().build()


def test_text_form_round_trip_keeps_the_cache(photos):
    p = make(photos, cache={"capacity_bytes": 1 << 20}, with_labels=True)
    text = p.serialize()
    assert "cache(" in text and "capacity_bytes=1048576" in text
    # the text form cannot carry the Python function: take it out of the prefix
    lines = [ln for ln in text.splitlines() if not ln.startswith("python_function_1 =")]
    text = "\n".join(lines).replace("resize(python_function_1", "resize(decoders_image_0")
    q = stoker.Pipeline.deserialize(text)
    q.build()
    steps = 2 * batches_per_epoch(len(photos))
    assert_same(take(q, steps), take(make(photos), steps))
    assert q.stats()["cache_hits"] >= len(photos)


def test_cache_in_a_conditional_branch_is_refused(photos):
    @pipeline_def(batch_size=2, num_threads=1, enable_conditionals=True)
    def pipe():
        jpegs, labels = fn.readers.file(files=photos)
        img = fn.decoders.image(jpegs)
        if fn.random.coin_flip():
            img = fn.cache(img, name="kept")
        return img

    with pytest.raises(StokerError, match=r"'kept'.*conditional branch"):
        pipe().build()


def test_cached_values_feed_gpu_operators(photos, fake_gpu):
    """The cache's outputs go on to the GPU stage (a GPU copy through cast, run by the fake GPU
    backend): the same batches as the uncached pipeline, and epoch 2 hits."""

    def build(cached):
        @pipeline_def(batch_size=BATCH, num_threads=2, seed=2, device_id=0, prefetch_queue_depth=1,
                      exec_async=False)
        def pipe():
            jpegs, labels = fn.readers.file(files=photos, random_shuffle=True, name="Reader")
            small = fn.resize(fn.decoders.image(jpegs), resize_shorter=32)
            if cached:
                small = fn.cache(small)
            return fn.cast(small.gpu(), dtype=stoker.types.UINT8, device="gpu"), labels

        p = pipe()
        p.build()
        return p

    def host(p, steps):
        out = []
        for _ in range(steps):
            imgs, labels = p.run()
            out.append([np.asarray(imgs.as_cpu().at(i)).copy() for i in range(len(imgs))])
        return out

    steps = 2 * batches_per_epoch(len(photos))
    cached = build(True)
    for a, b in zip(host(cached, steps), host(build(False), steps)):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert cached.stats()["cache_hits"] == len(photos)


def test_two_caches_may_not_share_a_directory(photos, tmp_path):
    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        jpegs, labels = fn.readers.file(files=photos)
        img = fn.decoders.image(jpegs)
        a = fn.cache(fn.resize(img, resize_shorter=20), path=tmp_path, name="small")
        b = fn.cache(fn.resize(img, resize_shorter=30), path=str(tmp_path), name="large")
        return a, b

    with pytest.raises(StokerError, match=r"'(small|large)' and '(small|large)' both use the cache directory"):
        pipe().build()


def test_memory_cache_sees_a_file_changed_between_epochs(photos, tmp_path):
    files = photos_copy(photos, tmp_path)
    n = len(files)
    calls = []
    p = make(files, cache={}, calls=calls, prefetch=1, exec_async=False)
    take(p, batches_per_epoch(n))
    shutil.copyfile(files[2], files[0])
    os.utime(files[0], ns=(2_000_000_000, 2_000_000_000))
    epoch2 = take(p, batches_per_epoch(n))
    assert len(calls) == n + 1  # the changed file alone was decoded again
    s = p.stats()
    assert s["cache_misses"] == n + 1 and s["cache_hits"] == n - 1
    assert s["cache_entries"] == n  # replaced, not added
    # epoch 2's resized images: two of them are now the same photo
    smalls = [x for b in epoch2 for x in b[1]]
    same = [(i, j) for i in range(n) for j in range(i + 1, n) if smalls[i].shape == smalls[j].shape
            and np.array_equal(smalls[i], smalls[j])]
    assert len(same) == 1


def test_errors_after_a_hit_name_the_file(photos):
    """A hit skips the reader, which names the sample's file; the cache names it instead."""
    n = len(photos)
    calls = []

    def fail_in_epoch_2(x):
        calls.append(1)
        if len(calls) > n:
            raise ValueError("boom")
        return x

    @pipeline_def(batch_size=BATCH, num_threads=1, prefetch_queue_depth=1, exec_async=False)
    def pipe():
        jpegs, labels = fn.readers.file(files=photos, name="Reader")
        small, labels = fn.cache(fn.resize(fn.decoders.image(jpegs), resize_shorter=16), labels)
        return fn.python_function(small, function=fail_in_epoch_2, name="late"), labels

    p = pipe()
    p.build()
    take(p, batches_per_epoch(n))
    with pytest.raises(StokerError) as err:
        take(p, 1)
    assert "boom" in str(err.value) and photos[0] in str(err.value)
    assert p.executor_statistics()["Reader"]["time_ns"] > 0


@pytest.mark.parametrize("kind", ["file", "numpy", "webdataset", "tfrecord"])
def test_every_reader_keys_by_its_files(datasets, kind, tmp_path):
    """Each data set reader names a sample by its file (and place in it): a new pipeline
    over the same files hits the disk cache; a touched file makes its samples miss (a
    shard's stamp is the shard's: all its samples); a shorter file list keeps the entries
    of the files still in it."""
    src = tmp_path / "src"
    src.mkdir()
    paths = []
    for p in datasets[kind]:
        shutil.copyfile(p, src / os.path.basename(p))
        paths.append(str(src / os.path.basename(p)))
    d = tmp_path / "cache"
    n = SAMPLING_N

    def run(files, count):
        @pipeline_def(batch_size=10, num_threads=2, prefetch_queue_depth=1, exec_async=False)
        def pipe():
            return fn.cache(sampling_reader(kind, files), path=str(d))

        p = pipe()
        p.build()
        ids = []
        while len(ids) < count:
            (tl,) = p.run()
            ids.extend(sampling_identity(kind, tl[i]) for i in range(len(tl)))
        return sorted(ids), p.stats()

    ids, s = run(paths, n)
    assert ids == list(range(n)) and s["cache_misses"] == n
    ids, s = run(paths, n)
    assert ids == list(range(n)) and s["cache_hits"] == n and s["cache_misses"] == 0
    os.utime(paths[0], ns=(3_000_000_000, 3_000_000_000))
    in_first = SAMPLING_FILE_SIZES[0] if kind in ("webdataset", "tfrecord") else 1
    ids, s = run(paths, n)
    assert ids == list(range(n)) and s["cache_misses"] == in_first
    assert s["cache_hits"] == n - in_first
    if kind != "file":  # (readers.file's test labels are fixed to the whole list)
        ids, s = run(paths[1:], n - in_first)
        assert ids == list(range(in_first, n))
        assert s["cache_hits"] == n - in_first and s["cache_misses"] == 0


def test_unusable_cache_directory_fails_the_build_naming_it(photos, tmp_path):
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("x")
    for bad in (tmp_path / "missing" / "deeper", not_a_dir):
        @pipeline_def(batch_size=2, num_threads=1)
        def pipe():
            jpegs, labels = fn.readers.file(files=photos)
            return fn.cache(fn.decoders.image(jpegs), path=bad, name="kept")

        with pytest.raises(StokerError, match=r"'kept'.*cache directory '" + str(bad)):
            pipe().build()


def test_normalize_is_a_batch_operator_only_with_batch_true(photos):
    """normalize(batch=True) on the CPU runs once per batch (its statistics span the
    batch), so it cannot be cached; per-sample normalize can."""
    def make(batch):
        @pipeline_def(batch_size=2, num_threads=1)
        def pipe():
            jpegs, labels = fn.readers.file(files=photos)
            images = fn.resize(fn.decoders.image(jpegs), size=[8, 8])
            return fn.cache(fn.normalize(images, batch=batch, name="norm"))
        return pipe()

    make(False).build()
    with pytest.raises(StokerError, match=r"'norm' \(normalize\), a batch operator"):
        make(True).build()
