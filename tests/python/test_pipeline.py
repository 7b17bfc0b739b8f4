"""Running pipelines through the Python API: readers, decoding, determinism, metadata,
statistics, errors from the C side, the text form."""

import numpy as np
import pytest

import stoker
from stoker import fn, types, _schema
from stoker.errors import StokerError, StateError, DecodeError, StokerIOError

HAS = _schema.registry()


def collect(pipe, n):
    """n batches as lists of bytes per output."""
    out = []
    for _ in range(n):
        out.append([tl.as_array().tobytes() if tl.is_dense() else b"".join(s.tobytes() for s in tl)
                    for tl in pipe.run()])
    return out


@stoker.pipeline_def
def random_pipe():
    u = fn.random.uniform(range=[-3, 3], shape=[5])
    n = fn.random.normal(mean=fn.random.uniform(range=[0, 10]), stddev=2.0)
    c = fn.random.coin_flip(probability=0.3, dtype=types.UINT8)
    ch = fn.random.choice(a=[1, 2, 5, 7], p=[0.1, 0.2, 0.3, 0.4], shape=[3])
    return u, n, c, ch


def test_random_values_have_the_asked_distribution():
    pipe = random_pipe(batch_size=64, num_threads=2, seed=3)
    u, n, c, _ = pipe.run()
    ua = u.as_array()
    assert ua.shape == (64, 5) and ua.dtype == np.float32
    assert ua.min() >= -3 and ua.max() < 3 and abs(ua.mean()) < 0.5
    assert c.as_array().dtype == np.uint8 and set(np.unique(c.as_array())) <= {0, 1}
    assert n.as_array().shape == (64,)


@pytest.mark.parametrize("threads, prefetch", [(2, 1), (1, 3), (2, 3)])
def test_same_seed_same_bytes_whatever_threads_and_prefetch(threads, prefetch):
    ref = collect(random_pipe(batch_size=8, num_threads=1, prefetch_queue_depth=1, seed=42), 4)
    got = collect(random_pipe(batch_size=8, num_threads=threads, prefetch_queue_depth=prefetch,
                              seed=42), 4)
    assert got == ref


def test_other_seed_other_values():
    a = collect(random_pipe(batch_size=8, num_threads=1, seed=1), 1)
    b = collect(random_pipe(batch_size=8, num_threads=1, seed=2), 1)
    assert a != b


def test_sync_execution_gives_the_same_bytes():
    ref = collect(random_pipe(batch_size=4, num_threads=2, seed=9), 3)
    got = collect(random_pipe(batch_size=4, num_threads=2, seed=9, exec_async=False,
                              exec_pipelined=False), 3)
    assert got == ref


def test_file_reader_metadata_and_labels(seven_files):
    files, labels = seven_files

    @stoker.pipeline_def(batch_size=3, num_threads=1)
    def pipe():
        data, label = fn.readers.file(files=files, labels=labels, name="Reader")
        return data, label

    p = pipe()
    assert p.epoch_size("Reader") == 7 and p.epoch_size() == {"Reader": 7}
    meta = p.reader_meta("Reader")
    assert meta["epoch_size"] == 7 and meta["number_of_shards"] == 1 and meta["shard_id"] == 0
    assert meta["pad_last_batch"] is False and p.reader_meta() == {"Reader": meta}
    data, label = p.run()
    assert label.as_array()[:, 0].tolist() == [1, 2, 3]
    assert [d.tolist() for d in data] == [[1], [2], [3]]
    assert label.dtype == types.INT32


def test_shuffled_reader_is_reproducible(seven_files):
    files, labels = seven_files

    @stoker.pipeline_def(batch_size=7, num_threads=1, seed=11)
    def pipe():
        return fn.readers.file(files=files, labels=labels, shuffle_after_epoch=True)[1]

    a = [pipe().run()[0].as_array()[:, 0].tolist() for _ in range(2)]
    assert a[0] == a[1] and sorted(a[0]) == labels


def test_missing_file_raises_io_error_naming_it(tmp_path):
    missing = str(tmp_path / "missing.jpg")

    @stoker.pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        return fn.readers.file(files=[missing])[0]

    with pytest.raises(StokerError, match="missing.jpg") as info:
        pipe().run()
    assert isinstance(info.value, (StokerIOError, stoker.NotFoundError, stoker.InvalidArgumentError))


@pytest.mark.skipif("decoders.image" not in HAS, reason="no image decoder")
def test_decoded_png_equals_pillow(photos):
    from PIL import Image
    pngs = [p for p in photos if p.endswith(".png")][:2]

    @stoker.pipeline_def(batch_size=len(pngs), num_threads=2)
    def pipe():
        data, _ = fn.readers.file(files=pngs)
        return fn.decoders.image(data, output_type=types.RGB)

    (images,) = pipe().run()
    assert images.layout() == "HWC" and images.dtype == types.UINT8
    for path, img in zip(pngs, images):
        ref = np.asarray(Image.open(path).convert("RGB"))
        assert img.shape == ref.shape and np.array_equal(img, ref)


@pytest.mark.skipif("decoders.image" not in HAS, reason="no image decoder")
def test_bad_image_error_names_the_file_or_is_skipped(tmp_path, photos):
    bad = tmp_path / "garbage.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 definitely not a jpeg" * 4)
    good = [p for p in photos if p.endswith(".png")][0]

    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        data, _ = fn.readers.file(files=[good, str(bad)])
        return fn.decoders.image(data)

    with pytest.raises(DecodeError, match="garbage.jpg"):
        pipe().run()
    p = pipe(on_error="skip", exec_async=False, exec_pipelined=False)  # no batch made ahead
    (images,) = p.run()  # the bad file leaves the batch: the epoch holds one good image
    assert len(images) == 1 and p.last_batch_info() == {"epoch": 0, "ends_epoch": True, "size": 1}
    stats = p.stats()
    assert stats["skipped"] == 1 and "garbage.jpg" in stats["skipped_samples"][0]
    (images,) = p.run()
    assert len(images) == 1 and p.last_batch_info()["epoch"] == 1 and p.stats()["skipped"] == 2


def test_stats_and_timings():
    p = random_pipe(batch_size=4, num_threads=1)
    for _ in range(3):
        p.run()
    s = p.stats()
    assert s["batches"] == 3 and s["samples"] == 12 and s["skipped"] == 0
    assert s["host_bytes_in_use"] >= 0 and s["host_bytes_peak"] > 0
    times = p.executor_statistics()
    assert len(times) == 5 and all(v["time_ns"] >= 0 for v in times.values())


def test_text_form_round_trip():
    p = random_pipe(batch_size=4, num_threads=1, seed=5)
    text = p.serialize()
    assert "random.uniform(" in text and "batch_size = 4" in text
    q = stoker.Pipeline.deserialize(text, num_threads=2)
    assert (q.batch_size, q.seed, q.num_threads) == (4, 5, 2)
    ours = [tl.as_array().tobytes() for tl in p.run()]
    theirs = [tl.as_array().tobytes() for tl in q.run()]
    assert ours == theirs
    with pytest.raises(stoker.ParseError, match="line"):
        stoker.Pipeline.deserialize("x = nonsense(")


def test_closed_pipeline_refuses_to_run_but_outputs_survive():
    p = random_pipe(batch_size=2, num_threads=1)
    u, *_ = p.run()
    before = u.as_array().copy()
    p.close()
    with pytest.raises(StateError, match="closed"):
        p.run()
    assert np.array_equal(u.as_array(), before)


CLASSIFICATION_OPS = {"readers.file", "decoders.image", "resize", "crop_mirror_normalize"}


@pytest.mark.skipif(not CLASSIFICATION_OPS <= set(HAS), reason="image operators missing")
def test_dali_classification_pipeline(tmp_path, photos):
    """A DALI-style classification pipeline; the normalised output is checked against
    the pipeline's own resized images with NumPy (mirror included)."""
    import os
    from stoker.plugin.numpy import GenericIterator
    for i, path in enumerate(photos[:4]):
        d = tmp_path / f"class{i % 2}"
        d.mkdir(exist_ok=True)
        os.symlink(path, d / os.path.basename(path))
    mean = np.array([0.485, 0.456, 0.406]) * 255
    std = np.array([0.229, 0.224, 0.225]) * 255

    @stoker.pipeline_def(batch_size=4, num_threads=2, seed=3)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(tmp_path), name="Reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=64, resize_y=48, interp_type=types.INTERP_LINEAR)
        mirror = fn.random.coin_flip(probability=0.5)
        out = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout=types.CHW,
                                       mean=mean.tolist(), std=std.tolist(), mirror=mirror)
        return out, labels, images, mirror

    p = pipe()
    out, labels, images, mirror = p.run()
    assert out.layout() == "CHW" and out.as_array().shape == (4, 3, 48, 64)
    assert labels.as_array()[:, 0].tolist() == [0, 0, 1, 1]
    for i in range(4):
        ref = images[i].astype(np.float64)
        if mirror[i]:
            ref = ref[:, ::-1]
        ref = ((ref - mean) / std).transpose(2, 0, 1)
        assert np.allclose(out[i], ref, atol=1e-4)
    it = GenericIterator(pipe(), ["data", "label", "resized", "mirror"], reader_name="Reader")
    batch = next(it)[0]
    assert batch["data"].shape == (4, 3, 48, 64) and len(it) == 1


def test_timeout_ms_is_a_checked_setting():
    """timeout_ms (issue 27): the bound of the pipeline's waits; kept through the text form,
    refused out of range."""
    pipe = random_pipe(batch_size=4, num_threads=1, seed=9, timeout_ms=1500)
    pipe.build()
    assert pipe.timeout_ms == 1500
    assert "timeout_ms = 1500" in pipe.serialize()
    assert stoker.Pipeline.deserialize(pipe.serialize()).timeout_ms == 1500
    assert len(collect(pipe, 2)) == 2
    from stoker.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="timeout_ms"):
        random_pipe(batch_size=4, num_threads=1, timeout_ms=0).build()
