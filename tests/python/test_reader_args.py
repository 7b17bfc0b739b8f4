"""Readers' DALI arguments: readers.file's dir_filters (class directories kept by glob,
labels renumbered over the kept ones: the outputs DALI 2.4 gives for the same tree, learnt
from its CPU reader and written out here), shuffle_after_epoch_seed (the key of the epoch
permutations, as seed is), tensor_init_bytes (accepted, no effect), and readers.numpy's
relative regions."""

import os

import numpy as np
import pytest

from stoker import fn, pipeline_def
from stoker.errors import StokerError

CLASSES = ["apple", "avocado", "banana", "cherry"]


@pytest.fixture
def tree(tmp_path):
    for c in CLASSES:
        (tmp_path / c).mkdir()
        for i in (1, 2):
            (tmp_path / c / f"f{i}.bin").write_bytes(f"{c}{i}".encode())
    return str(tmp_path)


def read(n, **kw):
    """The first n samples as (text, label)."""
    @pipeline_def(batch_size=n, num_threads=1, seed=7)
    def pipe():
        return fn.readers.file(name="r", **kw)

    p = pipe()
    p.build()
    d, lab = p.run()
    return [(bytes(np.array(d[i])).decode(), int(np.array(lab[i])[0])) for i in range(n)]


def test_dir_filters_keep_matching_classes_and_renumber_them(tree):
    kw = dict(file_root=tree, file_filters=["*.bin"])
    # DALI 2.4: [apple1 0, apple2 0, avocado1 1, avocado2 1, cherry1 2, cherry2 2], epoch 6
    assert read(6, dir_filters=["a*", "cherry"], **kw) == [
        ("apple1", 0), ("apple2", 0), ("avocado1", 1), ("avocado2", 1), ("cherry1", 2),
        ("cherry2", 2)]
    assert read(2, dir_filters=["*n*"], **kw) == [("banana1", 0), ("banana2", 0)]
    # without dir_filters every class, labels 0..3
    assert [lab for _, lab in read(8, **kw)] == [0, 0, 1, 1, 2, 2, 3, 3]
    with pytest.raises(StokerError, match="no matching file"):
        read(1, dir_filters=["zzz"], **kw)


def test_dir_filters_are_ignored_with_files(tree):
    files = [os.path.join(tree, "banana", "f1.bin")]
    assert read(1, files=files, dir_filters=["a*"]) == [("banana1", 0)]


def order(**kw):
    @pipeline_def(batch_size=8, num_threads=1, seed=7)
    def pipe():
        d, lab = fn.readers.file(name="r", **kw)
        return d

    p = pipe()
    p.build()
    return [[bytes(np.array(t[i])).decode() for i in range(8)] for t in (p.run()[0], p.run()[0])]


def test_shuffle_after_epoch_seed_keys_the_permutations(tree):
    kw = dict(file_root=tree, file_filters=["*.bin"], shuffle_after_epoch=True)
    by_seed = order(seed=1234, **kw)
    by_name = order(shuffle_after_epoch_seed=1234, **kw)
    assert by_seed == by_name  # the same key, whichever argument gives it
    other = order(shuffle_after_epoch_seed=99, **kw)
    assert other != by_name
    assert sorted(other[0]) == sorted(by_name[0])  # both permute the same epoch
    # without shuffle_after_epoch the argument changes nothing
    plain = dict(file_root=tree, file_filters=["*.bin"])
    assert order(shuffle_after_epoch_seed=5, **plain) == order(**plain)


def test_tensor_init_bytes_is_accepted(tree):
    kw = dict(file_root=tree, file_filters=["*.bin"])
    assert read(8, tensor_init_bytes=4096, **kw) == read(8, **kw)


# ---- readers.numpy: relative regions (DALI 2.4's rounding: f * extent in float32, half
# away from zero; rel_roi_shape adds its rounded extent to the rounded start) ----

A = np.arange(70, dtype=np.int32).reshape(10, 7)


@pytest.fixture
def npy(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, A)
    return str(path)


def read_npy(path, **kw):
    @pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        return fn.readers.numpy(files=[path], **kw)

    return np.array(pipe().run()[0][0])


@pytest.mark.parametrize("kw,rows,cols", [
    # the windows DALI 2.4's CPU reader gives for the same arguments
    (dict(rel_roi_start=[0.25, 0.5]), (3, 10), (4, 7)),
    (dict(rel_roi_start=[0.15, 0.5]), (2, 10), (4, 7)),
    (dict(rel_roi_end=[0.35, 0.64]), (0, 4), (0, 4)),
    (dict(rel_roi_start=[0.15, 0.2], rel_roi_shape=[0.5, 0.5]), (2, 7), (1, 5)),
    (dict(rel_roi_start=[0.1, 0.1], rel_roi_shape=[0.34, 0.3]), (1, 4), (1, 3)),
    (dict(rel_roi_start=[0.25], roi_axes=[1]), (0, 10), (2, 7)),
    (dict(roi_start=[1, 1], rel_roi_end=[0.5, 0.5]), (1, 5), (1, 4)),
    (dict(rel_roi_start=[0.45, 0.0], rel_roi_end=[0.55, 1.0]), (5, 6), (0, 7)),
    (dict(rel_roi_start=[0.44, 0.0], rel_roi_shape=[0.01, 1.0]), (4, 4), (0, 7)),
])
def test_numpy_relative_regions(npy, kw, rows, cols):
    got = read_npy(npy, **kw)
    np.testing.assert_array_equal(got, A[rows[0]:rows[1], cols[0]:cols[1]])


def test_numpy_relative_region_padded_and_errors(npy):
    got = read_npy(npy, rel_roi_start=[-0.1, 0.0], out_of_bounds_policy="pad", fill_value=-1)
    assert got.shape == (11, 7) and (got[0] == -1).all()
    np.testing.assert_array_equal(got[1:], A)
    with pytest.raises(StokerError, match="roi_start and rel_roi_start"):
        read_npy(npy, rel_roi_start=[0.1, 0.1], roi_start=[1, 1])
    with pytest.raises(StokerError, match="mutually exclusive"):
        read_npy(npy, rel_roi_end=[0.5, 0.5], roi_shape=[1, 1])
    with pytest.raises(StokerError, match="rel_roi_start has 1 values"):
        read_npy(npy, rel_roi_start=[0.5])
    # DALI's header cache and GPUDirect buffer registration: accepted, no effect
    np.testing.assert_array_equal(
        read_npy(npy, cache_header_information=True, register_buffers=False), A)

