"""min_filter / mag_filter of resize, resize_crop_mirror and tensor_resize (DALI's per-axis
choice: min_filter for an axis scaled down, mag_filter otherwise, interp_type the default
of both): against the single-filter resize they reduce to, a two-pass reference for axes
that differ, the GPU's one-filter-per-batch rule (fake GPU), and DALI 2.4 where installed."""

import os
import pickle
import subprocess

import numpy as np
import pytest

from stoker import fn, pipeline_def
from stoker.errors import StokerError

DALI_PY = "/work/dali-venv/bin/python"
IMG = np.random.default_rng(0).integers(0, 255, (20, 30, 3)).astype(np.uint8)


def run(img, op=fn.resize, device_id=None, gpu=False, **kw):
    @pipeline_def(batch_size=1, num_threads=1, device_id=device_id)
    def pipe():
        x = fn.external_source(source=lambda: [img], layout="HWC")
        return op(x.gpu() if gpu else x, **kw)

    p = pipe()
    p.build()
    out = p.run()[0]
    return np.array((out.as_cpu() if hasattr(out, "as_cpu") else out)[0]).astype(int)


@pytest.mark.parametrize("kw,same", [
    (dict(size=[10, 15], min_filter="nearest"), dict(size=[10, 15], interp_type="nearest")),
    (dict(size=[40, 60], mag_filter="cubic"), dict(size=[40, 60], interp_type="cubic")),
    (dict(size=[10, 15], mag_filter="cubic"), dict(size=[10, 15])),
    (dict(size=[40, 60], interp_type="nearest", mag_filter="cubic"),
     dict(size=[40, 60], interp_type="cubic")),
    (dict(size=[10, 15], interp_type="nearest", mag_filter="cubic"),
     dict(size=[10, 15], interp_type="nearest")),
])
def test_one_filter_when_the_axes_agree(kw, same):
    np.testing.assert_array_equal(run(IMG, **kw), run(IMG, **same))


def test_axes_scaled_both_ways_take_their_own_filters():
    got = run(IMG, size=[10, 60], min_filter="nearest", mag_filter="cubic")
    rows = run(IMG, size=[10, 30], interp_type="nearest").astype(np.uint8)  # exact copies
    want = run(rows, size=[10, 60], interp_type="cubic")
    np.testing.assert_array_equal(got, want)
    # tensor_resize makes the same per-axis choice
    t = run(IMG, op=fn.tensor_resize, sizes=[10, 60], axis_names="HW", min_filter="nearest",
            mag_filter="cubic")
    assert np.abs(t - want).max() <= 1
    # and resize_crop_mirror (crop = the whole resize)
    c = run(IMG, op=fn.resize_crop_mirror, size=[10, 60], crop=[10, 60], min_filter="nearest",
            mag_filter="cubic")
    np.testing.assert_array_equal(c, want)


def test_gpu_takes_one_filter_per_batch(fake_gpu):
    # refused while planning, before any kernel (the fake GPU has no resampling kernels;
    # a uniform choice runs on a real GPU with that one filter)
    with pytest.raises(StokerError, match="one filter per batch"):
        run(IMG, device_id=0, gpu=True, size=[10, 60], min_filter="nearest", mag_filter="cubic")


DALI_SCRIPT = r"""
import pickle, sys
import numpy as np
from nvidia.dali import pipeline_def, fn, types
img, cases = pickle.loads(sys.stdin.buffer.read())
T = {"nearest": types.INTERP_NN, "linear": types.INTERP_LINEAR, "cubic": types.INTERP_CUBIC}
res = {}
for k, kw in enumerate(cases):
    kw = {a: T.get(v, v) if isinstance(v, str) else v for a, v in kw.items()}
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return fn.resize(fn.external_source(source=lambda: [img], layout="HWC"), **kw)
    pipe = p()
    pipe.build()
    res[k] = np.array(pipe.run()[0][0])
sys.stdout.buffer.write(pickle.dumps(res))
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI 2.4 oracle venv absent")
def test_matches_dali():
    cases = [dict(size=[10, 15], min_filter="nearest"),
             dict(size=[40, 60], interp_type="nearest", mag_filter="cubic"),
             dict(size=[10, 60], min_filter="nearest", mag_filter="cubic"),
             dict(size=[13, 50], min_filter="nearest", mag_filter="linear")]
    r = subprocess.run([DALI_PY, "-c", DALI_SCRIPT], input=pickle.dumps((IMG, cases)),
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    want = pickle.loads(r.stdout)
    for k, kw in enumerate(cases):
        got = run(IMG, **kw)
        assert got.shape == want[k].shape
        # DALI's cubic is table-sampled: at most one level apart on uint8
        assert np.abs(got - want[k].astype(int)).max() <= 1, kw


def test_random_resized_crop_filters():
    kw = dict(size=[12, 40], seed=5)
    np.testing.assert_array_equal(
        run(IMG, op=fn.random_resized_crop, min_filter="nearest", mag_filter="nearest", **kw),
        run(IMG, op=fn.random_resized_crop, interp_type="nearest", **kw))
    # the whole image as the window (area 1, its own aspect ratio 1.5): H scaled down
    # (nearest), W up (cubic), as resize with the same filters
    whole = dict(size=[12, 40], random_area=[1.0, 1.0], random_aspect_ratio=[1.5, 1.5])
    mixed = run(IMG, op=fn.random_resized_crop, min_filter="nearest", mag_filter="cubic",
                **whole)
    np.testing.assert_array_equal(
        mixed, run(IMG, size=[12, 40], min_filter="nearest", mag_filter="cubic"))


def test_random_resized_crop_mixed_filters_refused_on_gpu(fake_gpu):
    with pytest.raises(StokerError, match="CPU only"):
        run(IMG, op=fn.random_resized_crop, device_id=0, gpu=True, size=[12, 40],
            min_filter="nearest", mag_filter="cubic")
