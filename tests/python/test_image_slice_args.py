"""decoders.image_slice's argument forms (start / end / shape, their rel_ forms, axis_names,
negative axes), integer anchors in pixels, and out_of_bounds_policy="pad" of image_slice
and image_crop, each checked against NumPy slicing / padding of the full decode with the
rounding worked out here (half away from zero), bad argument combinations, and, where
DALI 2.4 is installed (/work/dali-venv), DALI's own outputs for the same arguments (PNG
photos: lossless, so the bytes must agree; JPEGs: the window shapes)."""

import json
import math
import os
import subprocess

import numpy as np
import pytest

from stoker import fn, pipeline_def
from stoker.errors import StokerError

DALI_PY = "/work/dali-venv/bin/python"


def rnd(v):
    """Round half away from zero, as DALI's slice windows."""
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def decode(files, build, device="cpu", **kw):
    """The full decode of each file and build(encoded)'s outputs, as lists of arrays."""
    @pipeline_def(batch_size=len(files), num_threads=2, seed=3, **kw)
    def pipe():
        enc, _ = fn.readers.file(files=files)
        out = build(enc)
        out = tuple(out) if isinstance(out, (list, tuple)) else (out,)
        return (fn.decoders.image(enc),) + out

    p = pipe()
    p.build()
    return [[np.array((t.as_cpu() if hasattr(t, "as_cpu") else t)[i]) for i in range(len(t))]
            for t in p.run()]


@pytest.fixture
def two(photos):
    """A JPEG and a PNG of different sizes."""
    files = [p for p in photos if p.endswith(("rocket.jpg", "chelsea.png"))]
    assert len(files) == 2
    return files


def test_start_end_and_start_shape_in_xy_order(two):
    full, a, b = decode(two, lambda e: (
        fn.decoders.image_slice(e, start=[10, 20], end=[110, 70]),
        fn.decoders.image_slice(e, start=[10, 20], shape=[100, 50])))
    for f, x, y in zip(full, a, b):
        np.testing.assert_array_equal(x, f[20:70, 10:110])  # default axes [1, 0]: [x, y]
        np.testing.assert_array_equal(y, f[20:70, 10:110])


def test_relative_forms_round_the_unrounded_ends(two):
    # rel_shape extends the unrounded start: end = round(rel_start * W + rel_shape * W)
    full, a, b, c = decode(two, lambda e: (
        fn.decoders.image_slice(e, rel_start=[0.1, 0.2], rel_shape=[0.33, 0.41]),
        fn.decoders.image_slice(e, rel_start=[0.1, 0.2], rel_end=[0.43, 0.61]),
        fn.decoders.image_slice(e, rel_start=[0.1, 0.2], shape=[100, 50])))
    for f, x, y, z in zip(full, a, b, c):
        h, w = f.shape[:2]
        x0, y0 = 0.1 * w, 0.2 * h
        np.testing.assert_array_equal(
            x, f[rnd(y0):rnd(y0 + 0.41 * h), rnd(x0):rnd(x0 + 0.33 * w)])
        np.testing.assert_array_equal(y, f[rnd(y0):rnd(0.61 * h), rnd(x0):rnd(0.43 * w)])
        np.testing.assert_array_equal(z, f[rnd(y0):rnd(y0 + 50), rnd(x0):rnd(x0 + 100)])


def test_axis_names_negative_axes_and_one_axis(two):
    full, hw, neg, only_w, start_only, end_only = decode(two, lambda e: (
        fn.decoders.image_slice(e, start=[10, 20], end=[110, 70], axis_names="HW"),
        fn.decoders.image_slice(e, start=[10, 20], end=[110, 70], axes=[-2, -1]),
        fn.decoders.image_slice(e, start=[10], end=[110], axis_names="W"),
        fn.decoders.image_slice(e, start=[10, 20]),
        fn.decoders.image_slice(e, end=[100, 50])))
    for f, a, b, c, d, g in zip(full, hw, neg, only_w, start_only, end_only):
        np.testing.assert_array_equal(a, f[10:110, 20:70])
        np.testing.assert_array_equal(b, f[10:110, 20:70])
        np.testing.assert_array_equal(c, f[:, 10:110])
        np.testing.assert_array_equal(d, f[20:, 10:])
        np.testing.assert_array_equal(g, f[:50, :100])


def test_per_sample_start_and_integer_anchor_inputs(two):
    def build(e):
        st = fn.external_source(source=[[np.array([5, 7], np.int32), np.array([30, 2], np.int32)]],
                                cycle=True)
        # integer anchor / shape inputs are pixels even with normalized_* left true (DALI)
        ai = fn.external_source(source=[[np.array([10, 20], np.int32)] * 2], cycle=True)
        si = fn.external_source(source=[[np.array([100, 50], np.int32)] * 2], cycle=True)
        return (fn.decoders.image_slice(e, start=st, shape=[40, 30]),
                fn.decoders.image_slice(e, ai, si))
    full, fed, ints = decode(two, build)
    for f, g, (x, y), i in zip(full, fed, [(5, 7), (30, 2)], ints):
        np.testing.assert_array_equal(g, f[y:y + 30, x:x + 40])
        np.testing.assert_array_equal(i, f[20:70, 10:110])


def padded(f, y, x, h, w, fill):
    """The h x w window at (y, x) of f, outside pixels `fill` (per channel), by NumPy."""
    out = np.empty((h, w, f.shape[2]), np.uint8)
    out[:] = np.asarray(fill, np.uint8)
    sy0, sx0 = max(y, 0), max(x, 0)
    sy1, sx1 = min(y + h, f.shape[0]), min(x + w, f.shape[1])
    if sy1 > sy0 and sx1 > sx0:
        out[sy0 - y:sy1 - y, sx0 - x:sx1 - x] = f[sy0:sy1, sx0:sx1]
    return out


def test_image_slice_pad(two):
    full, a, b, c, gray = decode(two, lambda e: (
        fn.decoders.image_slice(e, start=[-15, 30], shape=[60, 40], out_of_bounds_policy="pad",
                                fill_values=[1, 2, 300]),
        fn.decoders.image_slice(e, rel_start=[0.9, 0.8], rel_shape=[0.3, 0.5],
                                out_of_bounds_policy="pad", fill_values=[7]),
        fn.decoders.image_slice(e, start=[-100, -100], end=[-10, -20], out_of_bounds_policy="pad"),
        fn.decoders.image_slice(e, start=[-3, -4], end=[5, 6], out_of_bounds_policy="pad",
                                fill_values=[9], output_type="GRAY")))
    gfull = decode(two, lambda e: fn.decoders.image(e, output_type="GRAY"))[1]
    for f, x, y, z, g, gf in zip(full, a, b, c, gray, gfull):
        h, w = f.shape[:2]
        np.testing.assert_array_equal(x, padded(f, 30, -15, 40, 60, [1, 2, 255]))
        y0, x0 = 0.8 * h, 0.9 * w
        ref = padded(f, rnd(y0), rnd(x0), rnd(y0 + 0.5 * h) - rnd(y0), rnd(x0 + 0.3 * w) - rnd(x0),
                     [7, 7, 7])
        np.testing.assert_array_equal(y, ref)
        assert z.shape == (80, 90, 3) and not z.any()  # wholly outside: all fill
        np.testing.assert_array_equal(g, padded(gf, -4, -3, 10, 8, [9]))


def test_image_crop_pad_centres_a_larger_window(two):
    full, a, b = decode(two, lambda e: (
        fn.decoders.image_crop(e, crop=[1000, 900], out_of_bounds_policy="pad",
                               fill_values=[10, 20, 30]),
        fn.decoders.image_crop(e, crop_h=500, crop_w=100, crop_pos_x=0.2, crop_pos_y=1.0,
                               out_of_bounds_policy="pad")))
    for f, x, y in zip(full, a, b):
        h, w = f.shape[:2]
        # DALI's crop anchor: round(pos * (in - crop)), negative when the crop is larger
        np.testing.assert_array_equal(
            x, padded(f, rnd(0.5 * (h - 1000)), rnd(0.5 * (w - 900)), 1000, 900, [10, 20, 30]))
        np.testing.assert_array_equal(
            y, padded(f, rnd(1.0 * (h - 500)), rnd(0.2 * (w - 100)), 500, 100, [0, 0, 0]))


@pytest.mark.parametrize("kw, msg", [
    (dict(start=[1, 2], rel_start=[0.1, 0.2]), "start and rel_start"),
    (dict(start=[1, 2], end=[5, 5], shape=[3, 3]), "mutually exclusive"),
    (dict(rel_end=[0.5, 0.5], rel_shape=[0.1, 0.1]), "mutually exclusive"),
    (dict(), "give the window"),
    (dict(start=[1, 2], axes=[0, 1], axis_names="HW"), "axes and axis_names"),
    (dict(start=[1, 2], axis_names="HC"), "axis_names"),
    (dict(start=[1, 2], axes=[0, 2]), "'axes'"),
    (dict(start=[1, 2, 3]), r"'start' has 3 values; expected 2"),
    (dict(start=[10, 10], end=[5, 50]), "empty"),
    (dict(rel_start=[-0.1, 0.2], rel_end=[0.5, 0.5]), "out_of_bounds_policy"),
    (dict(start=[-1, 0], end=[5, 5], out_of_bounds_policy="pad", fill_values=[1, 2]),
     "'fill_values' has 2 values"),
])
def test_bad_arguments_are_named(two, kw, msg):
    with pytest.raises(StokerError, match=msg):
        decode(two[:1], lambda e: fn.decoders.image_slice(e, **kw))


def test_inputs_and_arguments_exclude_each_other(two):
    def build(e):
        a = fn.external_source(source=[[np.array([0.1, 0.1], np.float32)]], cycle=True)
        s = fn.external_source(source=[[np.array([0.5, 0.5], np.float32)]], cycle=True)
        return fn.decoders.image_slice(e, a, s, start=[1, 2])
    with pytest.raises(StokerError, match="exclude"):
        decode(two[:1], build)


def test_mixed_takes_the_arguments_and_refuses_pad(two, fake_gpu):
    full, cpu, mixed = decode(two, lambda e: (
        fn.decoders.image_slice(e, rel_start=[0.1, 0.2], end=[300, 250]),
        fn.decoders.image_slice(e, rel_start=[0.1, 0.2], end=[300, 250], device="mixed")),
        device_id=0)
    for a, b in zip(cpu, mixed):
        np.testing.assert_array_equal(a, b)
    for op, kw in (("image_slice", dict(start=[0, 0])), ("image_crop", dict(crop=[5, 5]))):
        with pytest.raises(StokerError, match="CPU-only"):
            decode(two, lambda e: getattr(fn.decoders, op)(e, device="mixed",
                                                           out_of_bounds_policy="pad", **kw),
                   device_id=0)


# ---- DALI 2.4 as the oracle ----

DALI_SCRIPT = r"""
import json, sys
import numpy as np
from nvidia.dali import pipeline_def, fn
files, cases, out = sys.argv[1].split(','), json.loads(sys.argv[2]), sys.argv[3]
res = {}
for k, kw in enumerate(cases):
    @pipeline_def(batch_size=len(files), num_threads=1, device_id=None)
    def p():
        enc, _ = fn.readers.file(files=files)
        return fn.decoders.image_slice(enc, **kw)
    pipe = p()
    pipe.build()
    o = pipe.run()[0]
    for i in range(len(files)):
        res[f"{k}_{i}"] = np.array(o[i])
np.savez(out, **res)
"""

DALI_CASES = [
    dict(start=[10, 20], end=[110, 70]),
    dict(rel_start=[0.1, 0.2], rel_shape=[0.33, 0.41]),
    dict(rel_start=[0.2006, 0.3], rel_shape=[0.000625, 0.2]),
    dict(rel_start=[0.05, 0.11], rel_end=[0.77, 0.93]),
    dict(rel_start=[0.1, 0.2], shape=[101, 51]),
    dict(start=[3, 5], rel_shape=[0.5, 0.25]),
    dict(start=[7], end=[100], axis_names="W"),
    dict(start=[7, 9], shape=[50, 60], axes=[0, 1]),
    dict(end=[120, 80]),
]


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI 2.4 oracle venv absent")
def test_windows_match_dali(photos, tmp_path):
    files = [p for p in photos if p.endswith(("chelsea.png", "coffee.png", "rocket.jpg"))]
    out = tmp_path / "dali.npz"
    r = subprocess.run([DALI_PY, "-c", DALI_SCRIPT, ",".join(files), json.dumps(DALI_CASES),
                        str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    want = np.load(out)
    got = decode(files, lambda e: tuple(fn.decoders.image_slice(e, **kw) for kw in DALI_CASES))[1:]
    for k, outs in enumerate(got):
        for i, (f, g) in enumerate(zip(files, outs)):
            w = want[f"{k}_{i}"]
            assert g.shape == w.shape, (DALI_CASES[k], f)
            if f.endswith(".png"):
                np.testing.assert_array_equal(g, w, err_msg=f"{DALI_CASES[k]} {f}")
