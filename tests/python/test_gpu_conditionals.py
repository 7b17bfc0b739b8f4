"""Conditional execution on GPU batches (runs on the GPU machine; skipped elsewhere).

A branch's GPU operators run on the sub-batch of the samples taking that branch (views of
their inputs, no copies), and the merge ("select" on the GPU) takes each sample from its
branch in the original order. The reference for every test is the same condition applied
to the same decoded images on the CPU in the same pipeline (same predicate nodes), plus
NumPy's own flips for "each sample gets exactly its branch's result"."""
import numpy as np
import pytest

import stoker
from stoker import fn, types
from gpu_parity import PHOTOS, requires_gpu, to_numpy_samples

pytestmark = requires_gpu
BATCH = 16


def decoded(size=(30, 40)):
    # the photos listed BATCH times over: every batch is full (a batch never crosses an epoch)
    jpegs, labels = fn.readers.file(files=PHOTOS * BATCH,
                                    labels=[i % len(PHOTOS) for i in range(len(PHOTOS) * BATCH)])
    img = fn.decoders.image(jpegs)
    return fn.resize(img, resize_y=size[0], resize_x=size[1]), labels


def run(pipe, batches=2):
    pipe.build()
    return [[to_numpy_samples(tl) for tl in pipe.run()] for _ in range(batches)]


def test_if_else_on_gpu_data_each_sample_gets_its_branch():
    @stoker.pipeline_def(batch_size=BATCH, num_threads=2, device_id=0, seed=5, enable_conditionals=True)
    def pipe():
        img, _ = decoded()
        g = img.gpu()
        p = fn.random.coin_flip(probability=0.5)
        if p:
            out_gpu = fn.flip(g, horizontal=1)
            out_cpu = fn.flip(img, horizontal=1)
        else:
            out_gpu = fn.flip(g, horizontal=0, vertical=1)
            out_cpu = fn.flip(img, horizontal=0, vertical=1)
        return out_gpu, out_cpu, img, p

    seen = set()
    for out_gpu, out_cpu, img, p in run(pipe(), batches=3):
        for i in range(BATCH):
            want = img[i][:, ::-1] if int(p[i]) else img[i][::-1]
            np.testing.assert_array_equal(out_cpu[i], want)
            np.testing.assert_array_equal(out_gpu[i], want, err_msg=f"sample {i}")
            seen.add(int(p[i]))
    assert seen == {0, 1}


def test_gpu_merge_of_equal_shapes_is_one_dense_batch():
    @stoker.pipeline_def(batch_size=BATCH, num_threads=2, device_id=0, seed=6, enable_conditionals=True)
    def pipe():
        img, _ = decoded()
        g = img.gpu()
        if fn.random.coin_flip(probability=0.3):
            g = fn.flip(g, horizontal=1)
        return g

    p = pipe()
    p.build()
    (out,) = p.run()
    arr = np.asarray(out.as_cpu().as_array())  # one batch tensor: the merge was gathered
    assert arr.shape == (BATCH, 30, 40, 3)


def test_nested_conditions_and_ragged_branches_on_gpu():
    @stoker.pipeline_def(batch_size=BATCH, num_threads=2, device_id=0, seed=7, enable_conditionals=True)
    def pipe():
        img, _ = decoded()
        g = img.gpu()
        a = fn.random.coin_flip(probability=0.5)
        b = fn.random.coin_flip(probability=0.5)
        if a:
            if b:
                og = fn.resize(g, resize_y=20, resize_x=24)
                oc = fn.resize(img, resize_y=20, resize_x=24)
            else:
                og = fn.flip(g, horizontal=1)
                oc = fn.flip(img, horizontal=1)
        else:
            og, oc = g, img
        return og, oc

    for og, oc in run(pipe(), batches=3):
        shapes = set()
        for i in range(BATCH):
            assert og[i].shape == oc[i].shape, i
            # resize on the GPU is within 1 level of the CPU's; flips and pass-through exact
            assert np.abs(og[i].astype(int) - oc[i].astype(int)).max() <= 1, i
            shapes.add(og[i].shape)
        assert len(shapes) >= 1


def test_recursive_select_helper_on_gpu():
    ops = [lambda x: fn.flip(x, horizontal=1), lambda x: fn.flip(x, vertical=1, horizontal=0),
           lambda x: fn.flip(x, horizontal=1, vertical=1), lambda x: x]

    def select(image, idx, i):
        if i == len(ops) - 1:
            return ops[i](image)
        if idx == i:
            return ops[i](image)
        else:
            return select(image, idx, i + 1)

    @stoker.pipeline_def(batch_size=BATCH, num_threads=2, device_id=0, seed=8, enable_conditionals=True)
    def pipe():
        img, _ = decoded()
        idx = fn.random.uniform(range=[0, 4], dtype=types.INT32)
        return select(img.gpu(), idx, 0), img, idx

    for out, img, idx in run(pipe(), batches=2):
        for i in range(BATCH):
            k = int(idx[i])
            want = [img[i][:, ::-1], img[i][::-1], img[i][::-1, ::-1], img[i]][k]
            np.testing.assert_array_equal(out[i], want, err_msg=f"sample {i} op {k}")


def test_empty_branch_on_gpu():
    """A branch that no sample of the batch takes."""
    @stoker.pipeline_def(batch_size=BATCH, num_threads=2, device_id=0, seed=9, enable_conditionals=True)
    def pipe():
        img, _ = decoded()
        g = img.gpu()
        if fn.random.coin_flip(probability=0.0):
            g = fn.flip(g, horizontal=1)
        return g, img

    for out, img in run(pipe(), batches=2):
        for i in range(BATCH):
            np.testing.assert_array_equal(out[i], img[i])


def test_condition_computed_on_gpu_is_refused():
    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=9, enable_conditionals=True)
    def pipe():
        img, _ = decoded()
        g = img.gpu()
        c = fn.random.coin_flip().gpu()
        if c:
            g = fn.flip(g, horizontal=1)
        return g

    with pytest.raises(Exception, match="is on the GPU; conditions are read per sample"):
        p = pipe()
        p.build()
