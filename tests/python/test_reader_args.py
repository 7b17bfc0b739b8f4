"""Readers' DALI arguments: readers.file's dir_filters (class directories kept by glob,
labels renumbered over the kept ones: the outputs DALI 2.4 gives for the same tree, learnt
from its CPU reader and written out here), shuffle_after_epoch_seed (the key of the epoch
permutations, as seed is) and tensor_init_bytes (accepted, no effect)."""

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
