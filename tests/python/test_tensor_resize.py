"""tensor_resize (DALI's generic tensor resize): output extents from sizes / scales with
size_rounding, mode and max_size over all axes; sample positions on a ramp worked out by
hand (alignment, subpixel_scale, regions of interest); agreement with resize on images;
any axes and types; bad arguments; and, where DALI 2.4 is installed, DALI's outputs for
the same calls."""

import os
import pickle
import subprocess

import numpy as np
import pytest

from stoker import fn, pipeline_def, types
from stoker.errors import StokerError

DALI_PY = "/work/dali-venv/bin/python"
RAMP = np.arange(10, dtype=np.float32).reshape(10, 1, 1) * np.ones((1, 2, 1), np.float32)
X = np.arange(5 * 7 * 3, dtype=np.float32).reshape(5, 7, 3)


def run(data, layout="HWC", op=None, **kw):
    @pipeline_def(batch_size=len(data), num_threads=2)
    def pipe():
        x = fn.external_source(source=lambda: data, layout=layout)
        return (op or fn.tensor_resize)(x, **kw)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.array(out[i]) for i in range(len(data))]


def linear_at(pos, n):
    """Linear interpolation of the ramp 0..n-1 at pixel-centre positions (edges clamped)."""
    return np.clip(pos, 0, n - 1)


@pytest.mark.parametrize("align", [0.0, 0.5, 1.0])
def test_scales_keep_the_exact_scale_about_the_alignment_point(align):
    (got,) = run([RAMP], axis_names="H", scales=[1.33], alignment=[align], antialias=False)
    assert got.shape == (13, 2, 1)  # round(10 * 1.33)
    # the 13 outputs cover 13 / 1.33 input pixels placed so that the alignment point of
    # [0, 10) stays put: start = align * 10 - align * 13 / 1.33
    start = align * 10 - align * 13 / 1.33
    want = linear_at(start + (np.arange(13) + 0.5) / 1.33 - 0.5, 10)
    np.testing.assert_allclose(got[:, 0, 0], want, atol=1e-4)


def test_sizes_and_no_subpixel_map_the_whole_region():
    for kw in (dict(sizes=[13]), dict(scales=[1.33], subpixel_scale=False)):
        (got,) = run([RAMP], axis_names="H", antialias=False, **kw)
        want = linear_at((np.arange(13) + 0.5) * 10 / 13 - 0.5, 10)
        np.testing.assert_allclose(got[:, 0, 0], want, atol=1e-4)


@pytest.mark.parametrize("rel", [False, True])
def test_region_with_scales_uses_the_input_extent(rel):
    # DALI 2.4: out = round(1.33 * 10) = 13 even for the region [2, 8); the region is
    # then resampled at 13.3 / 6 outputs per pixel about its centre
    lo, hi = ([0.2], [0.8]) if rel else ([2], [8])
    (got,) = run([RAMP], axis_names="H", scales=[1.33], roi_start=lo, roi_end=hi,
                 roi_relative=rel, antialias=False)
    step = 6 / 13.3
    start = 5 - 13 * step / 2
    want = linear_at(start + (np.arange(13) + 0.5) * step - 0.5, 10)
    assert got.shape == (13, 2, 1)
    np.testing.assert_allclose(got[:, 0, 0], want, atol=1e-4)


@pytest.mark.parametrize("kw,shape", [
    (dict(sizes=[8, 0]), (8, 9, 3)),  # W: 7 * sqrt(1.6 * 1), C counts as a scale-1 axis
    (dict(sizes=[0, 14]), (7, 14, 3)),
    (dict(sizes=[8, 0], mode="stretch"), (8, 7, 3)),
    (dict(scales=[1.3, 0.77]), (7, 5, 3)),
    (dict(scales=[1.3, 0.77], size_rounding="ceil"), (7, 6, 3)),
    (dict(scales=[1.3, 0.77], size_rounding="truncate"), (6, 5, 3)),
    (dict(sizes=[20, 20], max_size=[12, 100]), (12, 20, 3)),
    (dict(sizes=[20, 20], max_size=[12, 100], mode="not_larger"), (5, 7, 3)),
    (dict(sizes=[8, 9], mode="not_smaller"), (8, 11, 5)),  # C grows too, as in DALI 2.4
])
def test_output_extents_follow_dali(kw, shape):
    (got,) = run([X], axis_names="HW", **kw)
    assert got.shape == shape


def test_any_axes_and_all_axes():
    x = np.arange(2 * 5 * 7 * 3, dtype=np.float32).reshape(2, 5, 7, 3)
    a, b, c = (run([x], layout="", **kw)[0] for kw in (
        dict(sizes=[8, 9], axes=[1, 2]), dict(sizes=[3, 9], axes=[0, 2]),
        dict(sizes=[4, 8, 9, 3])))
    assert a.shape == (2, 8, 9, 3) and b.shape == (3, 5, 9, 3) and c.shape == (4, 8, 9, 3)
    # resizing only W of a W-ramp: every row is the 1-D resize of that row
    ramp_w = np.broadcast_to(np.arange(7, dtype=np.float32)[None, :, None], (5, 7, 3)).copy()
    (got,) = run([ramp_w], axes=[-2], sizes=[14], antialias=False)
    want = linear_at((np.arange(14) + 0.5) / 2 - 0.5, 7)
    np.testing.assert_allclose(got, np.broadcast_to(want[None, :, None], (5, 14, 3)), atol=1e-5)


def test_matches_resize_on_images(photos):
    imgs = []
    for f in photos[:3]:
        @pipeline_def(batch_size=1, num_threads=1)
        def dec(f=f):
            e, _ = fn.readers.file(files=[f])
            return fn.decoders.image(e)
        imgs.append(np.array(dec().run()[0][0]))
    for kw_t, kw_r in ((dict(sizes=[61, 83]), dict(size=[61, 83])),
                       (dict(sizes=[300, 500], interp_type="cubic"),
                        dict(size=[300, 500], interp_type="cubic"))):
        t = run(imgs, axis_names="HW", **kw_t)
        r = run(imgs, op=fn.resize, **kw_r)
        for a, b in zip(t, r):
            assert a.shape == b.shape and a.dtype == np.uint8
            # two 1-D passes in float32 against resize's one 2-D pass: the same filter,
            # a different accumulation order
            assert np.abs(a.astype(int) - b.astype(int)).max() <= 1


def test_types():
    x16 = (X * 100).astype(np.int16)
    (got,) = run([x16], axis_names="HW", sizes=[10, 14], antialias=False)
    assert got.dtype == np.int16 and got.shape == (10, 14, 3)
    (f,) = run([X.astype(np.uint8)], axis_names="HW", sizes=[10, 14], dtype=types.FLOAT)
    assert f.dtype == np.float32


@pytest.mark.parametrize("kw,msg", [
    (dict(), "exactly one of sizes and scales"),
    (dict(sizes=[2, 2], scales=[1, 1]), "exactly one of sizes and scales"),
    (dict(sizes=[2, 2], axes=[0, 1], axis_names="HW"), "mutually exclusive"),
    (dict(sizes=[2, 2], axis_names="HQ"), "'Q' is not in the input's layout"),
    (dict(sizes=[2, 2], axes=[0, 5]), r"axes\[1\] = 5 is out of range"),
    (dict(sizes=[2], axis_names="HW"), "'sizes' has 1 values; expected 2"),
    (dict(scales=[-1.0], axis_names="H"), "is negative"),
    (dict(sizes=[4], axis_names="H", roi_start=[5], roi_end=[2]), "empty or reversed"),
    (dict(sizes=[4], axis_names="H", roi_start=[1]), "together"),
])
def test_bad_arguments(kw, msg):
    with pytest.raises(StokerError, match=msg):
        run([X], **kw)


DALI_SCRIPT = r"""
import pickle, sys
import numpy as np
from nvidia.dali import pipeline_def, fn, types
data, cases = pickle.loads(sys.stdin.buffer.read())
res = {}
for k, (layout, kw) in cases.items():
    if kw.get("interp_type") == "cubic":
        kw["interp_type"] = types.INTERP_CUBIC
    @pipeline_def(batch_size=len(data), num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: data, layout=layout)
        return fn.tensor_resize(x, **kw)
    try:
        pipe = p()
        pipe.build()
        o = pipe.run()[0]
        res[k] = [np.array(o[i]) for i in range(len(data))]
    except Exception as e:
        res[k] = str(e)[-300:]
sys.stdout.buffer.write(pickle.dumps(res))
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI 2.4 oracle venv absent")
def test_matches_dali():
    rng = np.random.default_rng(4)
    data = [rng.random((9, 13, 3), dtype=np.float32) * 255,
            rng.random((16, 6, 3), dtype=np.float32) * 255]
    cases = {
        "sizes": ("HWC", dict(sizes=[5, 17], axis_names="HW")),
        "scales": ("HWC", dict(scales=[1.37, 0.61], axis_names="HW")),
        "align": ("HWC", dict(scales=[0.7, 1.45], axis_names="HW", alignment=[0.0, 1.0],
                              antialias=False)),
        "cubic": ("HWC", dict(sizes=[12, 4], axis_names="HW", interp_type="cubic")),
        "all": ("", dict(sizes=[7, 7, 2])),
        "roi": ("HWC", dict(scales=[1.5, 1.2], axis_names="WH", roi_start=[1, 2],
                            roi_end=[5, 7])),
        "ceil": ("HWC", dict(scales=[0.45, 0.45], axis_names="HW", size_rounding="ceil")),
        "mode": ("HWC", dict(sizes=[10, 10], axis_names="HW", mode="not_larger")),
    }
    r = subprocess.run([DALI_PY, "-c", DALI_SCRIPT], input=pickle.dumps((data, cases)),
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    want = pickle.loads(r.stdout)
    for k, (layout, kw) in cases.items():
        assert not isinstance(want[k], str), (k, want[k])
        got = run(data, layout=layout, **kw)
        for g, w in zip(got, want[k]):
            assert g.shape == w.shape, k
            # DALI evaluates its cubic filter from a sampled table: within 0.1 of 255
            np.testing.assert_allclose(g, w, atol=0.1 if k == "cubic" else 0.02, err_msg=k)


@pytest.mark.parametrize("op,kw", [
    ("resize", dict(size=[7, 9])), ("tensor_resize", dict(sizes=[7, 9], axis_names="HW")),
    ("random_resized_crop", dict(size=[7, 9])), ("resize_crop_mirror", dict(size=[8, 10],
                                                                           crop=[7, 9]))])
def test_dali_batching_hints_are_accepted_without_effect(op, kw):
    base = run([X], op=getattr(fn, op), **kw)
    hinted = run([X], op=getattr(fn, op), minibatch_size=4, temp_buffer_hint=1 << 20, **kw)
    np.testing.assert_array_equal(base[0], hinted[0])

