"""bbox_rotate: boxes worked out by hand (90 and 180 degrees exactly, 30 degrees by the
rotation formula on rotate's canvas), agreement with fn.rotate (a filled box drawn into
a mask and rotated stays inside the rotated box), bad input, and DALI's CPU build as an
oracle when it is installed."""

import math
import os
import subprocess

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.errors import StokerError

DALI_PY = "/work/dali-venv/bin/python"
BOX = np.array([[0.1, 0.2, 0.4, 0.5]], np.float32)  # pixels x 20..80, y 20..50 of 200 x 100


def run1(build, *arrays):
    """Runs build(*sources) on one sample of each array; the outputs as arrays."""
    def define():
        srcs = [fn.external_source(source=lambda a=a: [a], batch=True) for a in arrays]
        out = build(*srcs)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    pipe = stoker.pipeline_def(define, batch_size=1, num_threads=1)()
    return [np.array(tl[0]) for tl in pipe.run()]


def rot(*inputs, **kw):
    kw.setdefault("input_shape", [100, 200])
    return fn.bbox_rotate(*inputs, **kw)


def test_right_angles_by_hand():
    # 90 degrees counter-clockwise about the centre (100, 50): (dx, dy) -> (dy, -dx); the
    # grown canvas is 100 wide, 200 high (centre (50, 100)): x 20..50, y 120..180.
    e90, k90, e180 = run1(lambda b: (rot(b, angle=90.0), rot(b, angle=90.0, keep_size=True),
                                     rot(b, angle=180.0)), BOX)
    np.testing.assert_allclose(e90, [[0.2, 0.6, 0.5, 0.9]], atol=1e-6)
    # keep_size: the canvas stays 200 x 100 (centre (100, 50)): x 70..100, y 70..130,
    # clipped to 1 (half the box remains, above remove_threshold 0.1).
    np.testing.assert_allclose(k90, [[0.35, 0.7, 0.5, 1.0]], atol=1e-6)
    np.testing.assert_allclose(e180, [[0.6, 0.5, 0.9, 0.8]], atol=1e-6)
    assert e90.dtype == np.float32 and e90.shape == (1, 4)


def formula(box, angle, h, w, mode):
    """The 30-degree case straight from the rotation formula, on rotate's canvas."""
    a = math.radians(angle)
    c, s = math.cos(a), math.sin(a)
    ow, oh = math.ceil(abs(c) * w + abs(s) * h - 0.01), math.ceil(abs(c) * h + abs(s) * w - 0.01)
    ow += ow % 2 != w % 2
    oh += oh % 2 != h % 2
    l, t, r, b = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    xs, ys = [], []
    for x, y in ((l, t), (r, t), (l, b), (r, b)):
        dx, dy = x - w / 2, y - h / 2
        xs.append(c * dx + s * dy + ow / 2)
        ys.append(-s * dx + c * dy + oh / 2)
    e = np.array([min(xs), min(ys), max(xs), max(ys)])
    cx, cy = (e[0] + e[2]) / 2, (e[1] + e[3]) / 2
    bw, bh = (r - l, b - t) if abs(s) < abs(c) else (b - t, r - l)  # a turned box: w <-> h
    f = np.array([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2])
    out = {"expand": e, "fixed": f, "halfway": (e + f) / 2}[mode]
    return out / [ow, oh, ow, oh]


@pytest.mark.parametrize("angle", [30.0, -30.0])
def test_30_degrees_by_formula(angle):
    got = run1(lambda b: tuple(rot(b, angle=angle, mode=m)
                               for m in ("expand", "halfway", "fixed")), BOX)
    for g, m in zip(got, ("expand", "halfway", "fixed")):
        np.testing.assert_allclose(g[0], formula(BOX[0], angle, 100, 200, m), atol=1e-6,
                                   err_msg=m)
    # The canvas is 224 x 188: fixed keeps the 60 x 30 pixel extent.
    fixed = got[2][0]
    assert abs((fixed[2] - fixed[0]) * 224 - 60) < 1e-3
    assert abs((fixed[3] - fixed[1]) * 188 - 30) < 1e-3


def test_fixed_turns_past_45_degrees():
    # At 60 degrees the canvas is ceil(100 + 86.6) -> 188 wide, ceil(50 + 173.2) -> 224
    # high; the 60 x 30 box, nearer a quarter turn, becomes 30 wide and 60 high.
    (fixed,) = run1(lambda b: rot(b, angle=60.0, mode="fixed"), BOX)
    np.testing.assert_allclose(fixed[0], formula(BOX[0], 60.0, 100, 200, "fixed"), atol=1e-6)
    assert abs((fixed[0, 2] - fixed[0, 0]) * 188 - 30) < 1e-3
    assert abs((fixed[0, 3] - fixed[0, 1]) * 224 - 60) < 1e-3


def test_layouts_pixels_and_shape_layout():
    px = np.array([[20, 20, 80, 50]], np.float32)
    wh = np.array([[0.1, 0.2, 0.3, 0.3]], np.float32)
    g_px, g_wh, g_hwc, g_wh_layout = run1(
        lambda p, q, b: (rot(p, angle=30.0, bbox_normalized=False),
                         rot(q, angle=30.0, bbox_layout="xyWH"),
                         rot(b, angle=30.0, input_shape=[100, 200, 3]),
                         rot(b, angle=30.0, input_shape=[200, 100], shape_layout="WH")),
        px, wh, BOX)
    want = formula(BOX[0], 30.0, 100, 200, "expand")
    np.testing.assert_allclose(g_px[0], want * [224, 188, 224, 188], atol=1e-3)
    np.testing.assert_allclose(g_wh[0], [want[0], want[1], want[2] - want[0], want[3] - want[1]],
                               atol=1e-6)
    np.testing.assert_allclose(g_hwc[0], want, atol=1e-6)
    np.testing.assert_allclose(g_wh_layout[0], want, atol=1e-6)


BOXES = np.array([[0.0, 0.0, 0.3, 0.3], [0.4, 0.4, 0.6, 0.6], [0.7, 0.1, 0.95, 0.3],
                  [0.0, 0.8, 0.05, 1.0]], np.float32)
LABELS = np.array([1, 2, 3, 4], np.int32)


def test_clipping_removes_boxes_with_labels():
    # 90 degrees, canvas kept (200 x 100): box 3 ([0, 0.8, 0.05, 1]: x 0..10, y 80..100)
    # lands at x 130..150, y 100..110 -- wholly below the canvas; box 2 keeps 0.1 of 0.4.
    (b0, l0), (b1, l1), (b2, l2) = [
        run1(lambda b, l, t=t: tuple(rot(b, l, angle=90.0, keep_size=True,
                                          remove_threshold=t)), BOXES, LABELS)
        for t in (0.1, 0.0, 0.6)]
    np.testing.assert_allclose(b0, [[0.25, 0.9, 0.4, 1.0], [0.45, 0.3, 0.55, 0.7],
                                    [0.3, 0.0, 0.4, 0.1]], atol=1e-6)
    assert l0.tolist() == [1, 2, 3] and l0.dtype == np.int32
    np.testing.assert_allclose(b1[3], [0.65, 1.0, 0.75, 1.0], atol=1e-6)  # kept, zero area
    assert l1.tolist() == [1, 2, 3, 4]
    assert l2.tolist() == [2] and b2.shape == (1, 4)
    # 2-D labels keep their trailing shape.
    _, l2d = run1(lambda b, l: tuple(rot(b, l, angle=90.0, keep_size=True)), BOXES,
                  LABELS.reshape(4, 1).astype(np.float32))
    assert l2d.shape == (3, 1) and l2d[:, 0].tolist() == [1, 2, 3]


def test_size_sets_the_canvas():
    # size [80, 150] ([H, W]): at 90 degrees box 1 (x 80..120, y 40..60 of 200 x 100)
    # goes to x 65..85, y 20..60 of the 150 x 80 canvas.
    b, l = run1(lambda b, l: tuple(rot(b, l, angle=90.0, size=[80.0, 150.0])), BOXES, LABELS)
    np.testing.assert_allclose(b, [[65 / 150, 0.25, 85 / 150, 0.75]], atol=1e-6)
    assert l.tolist() == [2]


def test_empty_boxes():
    (b,) = run1(lambda b: rot(b, angle=30.0), np.zeros((0, 4), np.float32))
    assert b.shape == (0, 4)


@pytest.mark.parametrize("angle,keep", [(30.0, False), (90.0, False), (-75.0, False),
                                        (30.0, True), (200.0, False)])
def test_agrees_with_rotate(angle, keep):
    """A filled box drawn into a mask and rotated by fn.rotate lies inside the rotated
    box (expand), and the canvases agree."""
    h, w = 60, 90
    mask = np.zeros((h, w, 1), np.uint8)
    mask[12:30, 20:50] = 255
    box = np.array([[20 / w, 12 / h, 50 / w, 30 / h]], np.float32)

    def define():
        m = fn.external_source(source=lambda: [mask], batch=True, layout="HWC")
        b = fn.external_source(source=lambda: [box], batch=True)
        r = fn.rotate(m, angle=angle, keep_size=keep, interp_type="nearest")
        return r, fn.bbox_rotate(b, angle=angle, keep_size=keep, input_shape=m.shape(),
                                 remove_threshold=0.0)

    pipe = stoker.pipeline_def(define, batch_size=1, num_threads=1)()
    img, boxes = (np.array(t[0]) for t in pipe.run())
    oh, ow = img.shape[:2]
    ys, xs = np.nonzero(img[:, :, 0] > 127)
    assert len(xs) > 100
    l, t, r, b = boxes[0] * [ow, oh, ow, oh]
    assert xs.min() >= l - 1 and xs.max() + 1 <= r + 1, (xs.min(), xs.max(), l, r)
    assert ys.min() >= t - 1 and ys.max() + 1 <= b + 1, (ys.min(), ys.max(), t, b)
    # ... and tight: the pixels reach close to every side of the expanded box.
    assert xs.min() <= l + 2 and xs.max() + 1 >= r - 2
    assert ys.min() <= t + 2 and ys.max() + 1 >= b - 2


def test_random_angle_per_sample_follows_rotate():
    """One random angle per sample feeds both rotate and bbox_rotate (ragged sizes)."""
    masks, boxes_in = [], []
    for k, (h, w) in enumerate(((50, 70), (64, 64), (41, 90), (80, 33))):
        m = np.zeros((h, w, 1), np.uint8)
        t, l = 5 + k, 4 + 2 * k
        m[t:t + h // 3, l:l + w // 3] = 255
        masks.append(m)
        boxes_in.append(np.array([[l / w, t / h, (l + w // 3) / w, (t + h // 3) / h]],
                                 np.float32))

    def define():
        m = fn.external_source(source=lambda: masks, batch=True, layout="HWC")
        b = fn.external_source(source=lambda: boxes_in, batch=True)
        a = fn.random.uniform(range=[-180.0, 180.0], seed=7)
        return (fn.rotate(m, angle=a, interp_type="nearest"), a,
                fn.bbox_rotate(b, angle=a, input_shape=m.shape(), remove_threshold=0.0))

    pipe = stoker.pipeline_def(define, batch_size=4, num_threads=2)()
    imgs, angles, boxes = pipe.run()
    assert len({round(float(np.array(angles[k])), 3) for k in range(4)}) == 4
    for k in range(4):
        img, box = np.array(imgs[k])[:, :, 0], np.array(boxes[k])[0]
        oh, ow = img.shape
        ys, xs = np.nonzero(img > 127)
        l, t, r, b = box * [ow, oh, ow, oh]
        assert xs.min() >= l - 1 and xs.max() + 1 <= r + 1 and xs.min() <= l + 2, k
        assert ys.min() >= t - 1 and ys.max() + 1 <= b + 1 and ys.max() + 1 >= b - 2, k


@pytest.mark.parametrize("kw,words", [
    (dict(angle=30.0, input_shape=[100]), "input_shape"),
    (dict(angle=30.0, input_shape=[0, 200]), "input_shape"),
    (dict(angle=30.0, input_shape=[100, 200], shape_layout="XY"), "shape_layout"),
    (dict(angle=30.0, input_shape=[100, 200], keep_size=True, size=[10.0, 10.0]), "keep_size"),
    (dict(angle=30.0, input_shape=[100, 200], size=[1.0, 2.0, 3.0]), "size"),
    (dict(angle=float("inf"), input_shape=[100, 200]), "angle"),
])
def test_bad_arguments(kw, words):
    with pytest.raises(StokerError, match=words):
        run1(lambda b: fn.bbox_rotate(b, **kw), BOX)


def test_bad_inputs():
    with pytest.raises(StokerError, match="boxes"):
        run1(lambda b: rot(b, angle=10.0), np.zeros((2, 3), np.float32))
    with pytest.raises(StokerError, match="labels"):
        run1(lambda b, l: tuple(rot(b, l, angle=10.0)), BOXES, LABELS[:3])
    with pytest.raises(StokerError, match="mode"):
        run1(lambda b: rot(b, angle=10.0, mode="grow"), BOX)
    with pytest.raises(StokerError, match="remove_threshold"):
        run1(lambda b: rot(b, angle=10.0, remove_threshold=1.5), BOX)


DALI_SCRIPT = r"""
import sys, numpy as np
from nvidia.dali import pipeline_def, fn, types
boxes, labels = np.load(sys.argv[1]), np.load(sys.argv[2])
CASES = [dict(angle=a, keep_size=k, mode=m, remove_threshold=t)
         for a in (17.0, -63.0, 90.0, 130.0, 250.0) for k in (False, True)
         for m in ("expand", "halfway", "fixed") for t in (0.1, 0.5)]
CASES += [dict(angle=33.0, size=[70.0, 130.0]), dict(angle=-20.0, bbox_layout="xyWH"),
          dict(angle=50.0, bbox_normalized=False, keep_size=True)]
outs = []
for kw in CASES:
    b = boxes * ([200, 100, 200, 100] if not kw.get("bbox_normalized", True) else 1)
    if kw.get("bbox_layout") == "xyWH":
        b = np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1)
    b = b.astype(np.float32)
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: [b], batch=True)
        l = fn.external_source(source=lambda: [labels], batch=True)
        return tuple(fn.bbox_rotate(x, l, input_shape=[101, 203], **kw))
    pp = p(); pp.build(); o = pp.run()
    outs += [np.array(o[0][0]), np.array(o[1][0])]
np.savez(sys.argv[3], *outs)
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI's CPU build is not installed")
def test_matches_dali(tmp_path):
    rng = np.random.default_rng(23)
    lt = rng.random((40, 2), np.float32) * 0.9 - 0.05
    boxes = np.concatenate([lt, lt + rng.random((40, 2), np.float32) * 0.4 + 0.01], 1)
    boxes = boxes.astype(np.float32)
    labels = np.arange(40, dtype=np.int32)
    paths = [str(tmp_path / n) for n in ("b.npy", "l.npy", "d.npz")]
    np.save(paths[0], boxes)
    np.save(paths[1], labels)
    subprocess.run([DALI_PY, "-c", DALI_SCRIPT, *paths], check=True, capture_output=True)
    want = np.load(paths[2])
    cases = [dict(angle=a, keep_size=k, mode=m, remove_threshold=t)
             for a in (17.0, -63.0, 90.0, 130.0, 250.0) for k in (False, True)
             for m in ("expand", "halfway", "fixed") for t in (0.1, 0.5)]
    cases += [dict(angle=33.0, size=[70.0, 130.0]), dict(angle=-20.0, bbox_layout="xyWH"),
              dict(angle=50.0, bbox_normalized=False, keep_size=True)]
    removed = 0
    for k, kw in enumerate(cases):
        b = boxes * ([200, 100, 200, 100] if not kw.get("bbox_normalized", True) else 1)
        if kw.get("bbox_layout") == "xyWH":
            b = np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1)
        gb, gl = run1(lambda x, l, kw=kw: tuple(fn.bbox_rotate(x, l, input_shape=[101, 203],
                                                               **kw)),
                      b.astype(np.float32), labels)
        wb, wl = want[f"arr_{2 * k}"], want[f"arr_{2 * k + 1}"]
        assert gl.tolist() == wl.tolist(), kw
        tol = 1e-3 if kw.get("bbox_normalized", True) is False else 2e-6
        np.testing.assert_allclose(gb, wb, atol=tol, rtol=0, err_msg=str(kw))
        removed += 40 - len(wl)
    assert removed > 0  # the cases exercise removal


def test_text_form_round_trip_with_labels():
    """Two outputs (boxes, labels) survive the text form: the same boxes from the copy."""
    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=3)
    def pipe():
        boxes = fn.constant(fdata=[0.1, 0.1, 0.4, 0.5, 0.5, 0.5, 0.9, 0.9], shape=[2, 4], dtype="float32")
        labels = fn.constant(idata=[1, 2], shape=[2], dtype="int32")
        return fn.bbox_rotate(boxes, labels, angle=30.0, input_shape=[100, 200])

    p = pipe()
    p.build()
    q = stoker.Pipeline.deserialize(p.serialize())
    a, b = p.run(), q.run()
    assert len(b) == 2
    for k in range(2):
        np.testing.assert_array_equal(np.asarray(a[k][0]), np.asarray(b[k][0]))
    np.testing.assert_array_equal(np.asarray(b[1][0]), [1, 2])
