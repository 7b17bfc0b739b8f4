"""Box and point operators (bb_flip, bbox_paste, coord_flip, ...) against values worked
out by hand from the documented formulas, the image they follow (a box drawn into an
image and the image flipped must give the flipped box), bad input, and, when DALI's CPU
build is installed, DALI's outputs bit for bit."""

import os
import subprocess

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.errors import InvalidArgumentError, StokerError

DALI_PY = "/work/dali-venv/bin/python"
BOXES = np.array([[0.1, 0.2, 0.3, 0.5], [0.6, 0.0, 0.2, 0.1], [0.33, 0.71, 0.123, 0.01]],
                 np.float32)
POINTS = np.array([[0.1, 0.2, 0.7], [0.6, 0.9, 0.3], [1.5, -0.2, 0.01]], np.float32)


def run1(build, *arrays):
    """Runs build(*sources) on one sample of each array; the outputs as arrays."""
    def define():
        srcs = [fn.external_source(source=lambda a=a: [a], batch=True) for a in arrays]
        out = build(*srcs)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    pipe = stoker.pipeline_def(define, batch_size=1, num_threads=1)()
    return [np.array(tl[0]) for tl in pipe.run()]


def test_bb_flip_by_hand():
    xywh, ltrb, both = run1(lambda b: (fn.bb_flip(b), fn.bb_flip(b, ltrb=True, horizontal=0,
                                                                 vertical=1),
                                       fn.bb_flip(b, horizontal=1, vertical=1)), BOXES)
    np.testing.assert_allclose(xywh[0], [0.6, 0.2, 0.3, 0.5], atol=1e-6)  # 1 - (0.1 + 0.3)
    np.testing.assert_allclose(ltrb[0], [0.1, 0.5, 0.3, 0.8], atol=1e-6)  # t, b = 1 - b, 1 - t
    np.testing.assert_allclose(both[1], [0.2, 0.9, 0.2, 0.1], atol=1e-6)
    assert xywh.dtype == np.float32 and xywh.shape == (3, 4)


def test_bb_flip_follows_the_image_flip():
    """A box drawn into an image: after flip and bb_flip with the same random flags the
    box still frames the drawn pixels."""
    img = np.zeros((20, 40, 1), np.uint8)
    img[4:10, 6:16] = 255  # x 6..16, y 4..10 of 40 x 20
    box = np.array([[6 / 40, 4 / 20, 10 / 40, 6 / 20]], np.float32)

    def define():
        i = fn.external_source(source=lambda: [img] * 8, batch=True, layout="HWC")
        b = fn.external_source(source=lambda: [box] * 8, batch=True)
        h = fn.random.coin_flip(probability=0.5, seed=3)
        v = fn.random.coin_flip(probability=0.5, seed=4)
        return fn.flip(i, horizontal=h, vertical=v), fn.bb_flip(b, horizontal=h, vertical=v)

    pipe = stoker.pipeline_def(define, batch_size=8, num_threads=2)()
    images, boxes = pipe.run()
    for k in range(8):
        im, (x, y, w, h) = np.array(images[k])[:, :, 0], np.array(boxes[k])[0]
        ys, xs = np.nonzero(im)
        assert (xs.min(), xs.max() + 1) == (round(x * 40), round((x + w) * 40))
        assert (ys.min(), ys.max() + 1) == (round(y * 20), round((y + h) * 20))


def test_bbox_paste_by_hand():
    (a, b) = run1(lambda x: (fn.bbox_paste(x, ratio=2.0, paste_x=0.25, paste_y=1.0),
                             fn.bbox_paste(x, ratio=2.0, ltrb=True)), BOXES)
    # x / 2 + 0.25 * (1 - 1/2), y / 2 + 1 * 0.5, sizes halved.
    np.testing.assert_allclose(a[0], [0.175, 0.6, 0.15, 0.25], atol=1e-6)
    np.testing.assert_allclose(b[0], [0.3, 0.35, 0.4, 0.5], atol=1e-6)  # all + 0.25
    with pytest.raises(StokerError, match="ratio >= 1"):
        run1(lambda x: fn.bbox_paste(x, ratio=0.5), BOXES)


def test_coord_flip_by_hand():
    xy = POINTS[:, :2].copy()
    a, b, c = run1(lambda p, q: (fn.coord_flip(q), fn.coord_flip(q, flip_y=1, center_x=0.3,
                                                                 layout="yx"),
                                 fn.coord_flip(p, flip_x=0, flip_z=1, center_z=0.2)),
                   POINTS, xy)
    np.testing.assert_allclose(a, [[0.9, 0.2], [0.4, 0.9], [-0.5, -0.2]], atol=1e-6)
    # layout "yx": column 0 is y (mirrored about 0.5), column 1 is x (about 0.3).
    np.testing.assert_allclose(b, [[0.9, 0.4], [0.4, -0.3], [-0.5, 0.8]], atol=1e-6)
    np.testing.assert_allclose(c[:, 2], [-0.3, 0.1, 0.39], atol=1e-6)
    np.testing.assert_array_equal(c[:, :2], POINTS[:, :2])


def test_box_ops_bad_input():
    with pytest.raises(StokerError, match=r"bb_flip.*float32 boxes \[N, 4\].*last 3"):
        run1(lambda b: fn.bb_flip(b), POINTS)
    with pytest.raises(StokerError, match="float32 boxes"):
        run1(lambda b: fn.bb_flip(b), BOXES.astype(np.float64))
    with pytest.raises(StokerError, match="layout 'xz' does not fit"):
        run1(lambda p: fn.coord_flip(p, layout="xz"), POINTS[:, :2].copy())
    with pytest.raises(StokerError, match="D = 1, 2 or 3"):
        run1(lambda p: fn.coord_flip(p), np.zeros((2, 4), np.float32))


DALI_SCRIPT = """
import sys, numpy as np
from nvidia.dali import pipeline_def, fn
boxes, pts = np.load(sys.argv[1]), np.load(sys.argv[2])
@pipeline_def(batch_size=1, num_threads=1, device_id=None)
def p():
    b = fn.external_source(source=lambda: [boxes], batch=True)
    q = fn.external_source(source=lambda: [pts], batch=True)
    q2 = fn.external_source(source=lambda: [pts[:, :2].copy()], batch=True)
    return (fn.bb_flip(b), fn.bb_flip(b, ltrb=True, horizontal=1, vertical=1),
            fn.bbox_paste(b, ratio=2.0, paste_x=0.25, paste_y=1.0),
            fn.bbox_paste(b, ratio=3.7, ltrb=True, paste_x=0.1, paste_y=0.3),
            fn.coord_flip(q2), fn.coord_flip(q2, flip_y=1, center_x=0.3, layout="yx"),
            fn.coord_flip(q, flip_z=1, flip_x=0, center_z=0.2))
pp = p(); pp.build()
np.savez(sys.argv[3], *[np.array(o[0]) for o in pp.run()])
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI's CPU build is not installed")
def test_box_ops_match_dali_bit_for_bit(tmp_path):
    rng = np.random.default_rng(5)
    boxes = rng.random((50, 4), np.float32) * 0.5
    pts = rng.random((50, 3), np.float32) * 2 - 0.5
    np.save(tmp_path / "b.npy", boxes)
    np.save(tmp_path / "p.npy", pts)
    subprocess.run([DALI_PY, "-c", DALI_SCRIPT, str(tmp_path / "b.npy"), str(tmp_path / "p.npy"),
                    str(tmp_path / "d.npz")], check=True, capture_output=True)
    want = np.load(tmp_path / "d.npz")
    got = run1(lambda b, q, q2: (fn.bb_flip(b), fn.bb_flip(b, ltrb=True, horizontal=1,
                                                           vertical=1),
                                 fn.bbox_paste(b, ratio=2.0, paste_x=0.25, paste_y=1.0),
                                 fn.bbox_paste(b, ratio=3.7, ltrb=True, paste_x=0.1,
                                               paste_y=0.3),
                                 fn.coord_flip(q2),
                                 fn.coord_flip(q2, flip_y=1, center_x=0.3, layout="yx"),
                                 fn.coord_flip(q, flip_z=1, flip_x=0, center_z=0.2)),
               boxes, pts, pts[:, :2].copy())
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, want[f"arr_{k}"], err_msg=f"output {k}")


# ---- box_encoder ----

ANCHORS = np.array([[0.0, 0.0, 0.5, 0.5], [0.5, 0.0, 1.0, 0.5], [0.0, 0.5, 0.5, 1.0],
                    [0.5, 0.5, 1.0, 1.0], [0.2, 0.2, 0.8, 0.8]], np.float32)


def test_box_encoder_by_hand():
    # Box 0 covers anchor 0 exactly (IoU 1); box 1 [0.55, 0.55, 0.95, 0.95] lies inside
    # anchor 3 (IoU 0.16/0.25 = 0.64) and overlaps anchor 4 by 0.0625/0.4975 = 0.126.
    boxes = np.array([[0.0, 0.0, 0.5, 0.5], [0.55, 0.55, 0.95, 0.95]], np.float32)
    labels = np.array([7, 9], np.int32)
    enc, lab = run1(lambda b, l: fn.box_encoder(b, l, anchors=ANCHORS.ravel().tolist(),
                                                criteria=0.5), boxes, labels)
    assert lab.tolist() == [7, 0, 0, 9, 0] and lab.dtype == np.int32
    np.testing.assert_allclose(enc[0], [0.25, 0.25, 0.5, 0.5])  # the box as cx, cy, w, h
    np.testing.assert_allclose(enc[3], [0.75, 0.75, 0.4, 0.4], atol=1e-6)
    np.testing.assert_allclose(enc[1], [0.75, 0.25, 0.5, 0.5])  # unmatched: the anchor
    # criteria 0.1 also gives anchor 4 away: to box 0 (IoU 0.09/0.52 = 0.173), not box 1
    # (0.0625/0.4575 = 0.137); offsets: (cx - acx) / aw, log(w / aw), over stds.
    enc, lab = run1(lambda b, l: fn.box_encoder(b, l, anchors=ANCHORS.ravel().tolist(),
                                                criteria=0.1, offset=True, stds=[0.1, 0.1, 0.2,
                                                                                 0.2]),
                    boxes, labels)
    assert lab.tolist() == [7, 0, 0, 9, 7]
    want4 = [(0.25 - 0.5) / 0.6 / 0.1, (0.25 - 0.5) / 0.6 / 0.1, np.log(0.5 / 0.6) / 0.2,
             np.log(0.5 / 0.6) / 0.2]
    np.testing.assert_allclose(enc[4], want4, rtol=1e-5)
    np.testing.assert_array_equal(enc[1], [0, 0, 0, 0])
    np.testing.assert_allclose(enc[0], [0, 0, 0, 0], atol=1e-6)


def test_box_encoder_claims_best_anchor_below_criteria():
    # A small box overlapping nothing by more than 0.5 still claims its best anchor.
    boxes = np.array([[0.05, 0.05, 0.15, 0.15]], np.float32)
    _, lab = run1(lambda b, l: fn.box_encoder(b, l, anchors=ANCHORS.ravel().tolist()),
                  boxes, np.array([3], np.int32))
    assert lab.tolist() == [3, 0, 0, 0, 0]


def test_box_encoder_gpu_plumbing_matches_cpu(fake_gpu):
    """The GPU backend (two device inputs, two outputs, descriptors, anchors uploaded with
    them) against the fake GPU, which runs the kernel's three phases on the CPU: the same
    outputs as the CPU operator on a ragged batch (one sample without boxes)."""
    rng = np.random.default_rng(12)

    def rb(k):
        a = rng.random((k, 2), np.float32) * 0.7
        return np.concatenate([a, a + rng.random((k, 2), np.float32) * 0.3 + 0.02], 1)

    anchors = rb(200).astype(np.float32).ravel().tolist()
    boxes = [rb(k).astype(np.float32) for k in (5, 0, 12)]
    labels = [rng.integers(1, 9, len(b)).astype(np.int32) for b in boxes]

    def define():
        b = fn.external_source(source=lambda: boxes, batch=True)
        l = fn.external_source(source=lambda: labels, batch=True)
        kw = dict(anchors=anchors, criteria=0.35, offset=True, stds=[0.1, 0.1, 0.2, 0.2])
        return (*fn.box_encoder(b, l, **kw), *fn.box_encoder(b.gpu(), l.gpu(), device="gpu",
                                                             **kw))

    outs = stoker.pipeline_def(define, batch_size=3, num_threads=1, device_id=0)().run()
    assert outs[2].device == "gpu" and outs[3].device == "gpu"
    for k in range(2):
        cpu, gpu = outs[k], outs[k + 2].as_cpu()
        for i in range(3):
            np.testing.assert_array_equal(np.array(gpu[i]), np.array(cpu[i]),
                                          err_msg=f"output {k} sample {i}")
    assert np.array(outs[1][1]).tolist() == [0] * 200  # no boxes: background everywhere


def test_box_encoder_bad_input():
    with pytest.raises(StokerError, match="4 values per anchor"):
        run1(lambda b, l: fn.box_encoder(b, l, anchors=[0.0, 0.1, 0.2]), BOXES,
             np.zeros(3, np.int32))
    with pytest.raises(StokerError, match="labels must be int32 \\[N\\] with N = 3"):
        run1(lambda b, l: fn.box_encoder(b, l, anchors=ANCHORS.ravel().tolist()), BOXES,
             np.zeros(2, np.int32))


BE_SCRIPT = """
import sys, numpy as np
from nvidia.dali import pipeline_def, fn
boxes, labels, anchors = np.load(sys.argv[1]), np.load(sys.argv[2]), np.load(sys.argv[3])
@pipeline_def(batch_size=1, num_threads=1, device_id=None)
def p():
    b = fn.external_source(source=lambda: [boxes], batch=True)
    l = fn.external_source(source=lambda: [labels], batch=True)
    e1 = fn.box_encoder(b, l, anchors=anchors.ravel().tolist(), criteria=0.3)
    e2 = fn.box_encoder(b, l, anchors=anchors.ravel().tolist(), criteria=0.4, offset=True,
                        scale=2.0, means=[0.1, 0.2, 0.3, 0.4], stds=[0.5, 0.6, 0.7, 0.8])
    return (*e1, *e2)
pp = p(); pp.build()
np.savez(sys.argv[4], *[np.array(o[0]) for o in pp.run()])
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI's CPU build is not installed")
def test_box_encoder_matches_dali(tmp_path):
    rng = np.random.default_rng(11)

    def rb(n):
        a = rng.random((n, 2), np.float32) * 0.7
        return np.concatenate([a, a + rng.random((n, 2), np.float32) * 0.3 + 0.02], 1)

    boxes, anchors = rb(12).astype(np.float32), rb(300).astype(np.float32)
    labels = rng.integers(1, 80, 12).astype(np.int32)
    paths = [str(tmp_path / n) for n in ("b.npy", "l.npy", "a.npy", "d.npz")]
    for p, a in zip(paths, (boxes, labels, anchors)):
        np.save(p, a)
    subprocess.run([DALI_PY, "-c", BE_SCRIPT, *paths], check=True, capture_output=True)
    want = np.load(paths[3])
    got = run1(lambda b, l: (*fn.box_encoder(b, l, anchors=anchors.ravel().tolist(),
                                             criteria=0.3),
                             *fn.box_encoder(b, l, anchors=anchors.ravel().tolist(),
                                             criteria=0.4, offset=True, scale=2.0,
                                             means=[0.1, 0.2, 0.3, 0.4],
                                             stds=[0.5, 0.6, 0.7, 0.8])), boxes, labels)
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, want[f"arr_{k}"], rtol=1e-6, atol=1e-6,
                                   err_msg=f"output {k}")


# ---- random_bbox_crop ----

def iou_np(a, w):
    iw = np.clip(np.minimum(a[:, 2], w[2]) - np.maximum(a[:, 0], w[0]), 0, None)
    ih = np.clip(np.minimum(a[:, 3], w[3]) - np.maximum(a[:, 1], w[1]), 0, None)
    inter = iw * ih
    area = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    return inter / (area + (w[2] - w[0]) * (w[3] - w[1]) - inter)


def crop_batch(boxes, labels, n=32, **kw):
    def define():
        b = fn.external_source(source=lambda: [boxes] * n, batch=True)
        l = fn.external_source(source=lambda: [labels] * n, batch=True)
        return tuple(fn.random_bbox_crop(b, l, seed=5, **kw))

    pipe = stoker.pipeline_def(define, batch_size=n, num_threads=2)()
    return [[np.array(x) for x in tl] for tl in pipe.run()]


def test_random_bbox_crop_windows_meet_the_thresholds():
    rng = np.random.default_rng(2)
    a = rng.random((6, 2)).astype(np.float32) * 0.7
    boxes = np.concatenate([a, a + 0.1 + rng.random((6, 2)).astype(np.float32) * 0.2], 1)
    labels = np.arange(10, 16, dtype=np.int32)
    anchor, shape, out, lab, idx = crop_batch(
        boxes, labels, thresholds=[0.1, 0.3, 0.5], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0],
        allow_no_crop=False, all_boxes_above_threshold=False, num_attempts=50,
        output_bbox_indices=True)
    whole = 0
    for k in range(32):
        (x, y), (w, h) = anchor[k], shape[k]
        assert 0 <= x and x + w <= 1 + 1e-6 and 0 <= y and y + h <= 1 + 1e-6
        assert 0.3 - 1e-6 <= w <= 1 and 0.3 - 1e-6 <= h <= 1 and 0.5 - 1e-6 <= w / h <= 2 + 1e-6
        win = np.array([x, y, x + w, y + h])
        assert iou_np(boxes, win).max() >= 0.1 - 1e-6  # the least threshold at least
        # Kept boxes: those whose centre is in the window, clipped, relative to it.
        cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
        want = np.nonzero((cx >= x) & (cx <= x + w) & (cy >= y) & (cy <= y + h))[0]
        assert idx[k].tolist() == want.tolist() and len(want) > 0
        assert lab[k].tolist() == labels[want].tolist()
        clip = np.stack([np.maximum(boxes[want, 0], x), np.maximum(boxes[want, 1], y),
                         np.minimum(boxes[want, 2], x + w), np.minimum(boxes[want, 3], y + h)], 1)
        rel = (clip - [x, y, x, y]) / [w, h, w, h]
        np.testing.assert_allclose(out[k], rel, atol=1e-5)
        whole += w == 1 and h == 1
    assert whole < 32  # it does crop


def test_random_bbox_crop_no_crop_and_fixed_shape():
    boxes = np.array([[0.1, 0.1, 0.4, 0.5]], np.float32)
    labels = np.array([1], np.int32)
    anchor, shape, out, _ = crop_batch(boxes, labels, thresholds=[])  # only "no crop" left
    for k in range(32):
        np.testing.assert_array_equal(anchor[k], [0, 0])
        np.testing.assert_array_equal(shape[k], [1, 1])
        np.testing.assert_allclose(out[k], boxes)
    # crop_shape: pixels in and out; the window is 100x50 of 400x200 (WH), xywh boxes.
    anchor, shape, out, _ = crop_batch(boxes, labels, thresholds=[0.0], allow_no_crop=False,
                                       crop_shape=[100, 50], input_shape=[400, 200],
                                       bbox_layout="xyWH", threshold_type="overlap")
    for k in range(32):
        np.testing.assert_array_equal(shape[k], [100, 50])
        assert 0 <= anchor[k][0] <= 300 and 0 <= anchor[k][1] <= 150


def test_random_bbox_crop_bad_arguments():
    boxes = np.array([[0.1, 0.1, 0.4, 0.5]], np.float32)
    labels = np.array([1], np.int32)
    with pytest.raises(StokerError, match="crop_shape needs input_shape"):
        crop_batch(boxes, labels, crop_shape=[10, 10])
    with pytest.raises(StokerError, match="'scaling' needs"):
        crop_batch(boxes, labels, scaling=[0.9, 0.1])
    with pytest.raises(StokerError, match="labels have 2 rows for 1 boxes"):
        crop_batch(boxes, np.array([1, 2], np.int32))


# ---- coord_transform, segmentation.select_masks ----

def test_coord_transform_by_hand():
    pts = np.array([[1, 2], [-3, 4]], np.float32)
    a, b, c, d = run1(lambda p: (fn.coord_transform(p, M=[0, 1, 1, 0, 2, 2], T=[1, 2, 3]),
                                 fn.coord_transform(p, M=2.0, T=1.0),
                                 fn.coord_transform(p, MT=[1, 0, 10, 0, -1, 20]),
                                 fn.coord_transform(p, M=[0.5, 0.25], dtype=types.INT32)), pts)
    np.testing.assert_array_equal(a, [[3, 3, 9], [5, -1, 5]])  # (y, x, 2x + 2y) + T
    np.testing.assert_array_equal(b, [[3, 5], [-5, 9]])
    np.testing.assert_array_equal(c, [[11, 18], [7, 16]])
    # 0.5 x + 0.25 y: 1.0 and -0.5, rounded half away from zero.
    assert d.dtype == np.int32 and d.ravel().tolist() == [1, -1]
    with pytest.raises(StokerError, match="MT has 5 values; it must be O x 3"):
        run1(lambda p: fn.coord_transform(p, MT=[1, 2, 3, 4, 5]), pts)
    with pytest.raises(StokerError, match="give MT, or M and T, not both"):
        run1(lambda p: fn.coord_transform(p, MT=[1, 0, 0, 0, 1, 0], T=[1.0]), pts)


def test_select_masks_by_hand():
    polys = np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10], [1, 10, 12]], np.int32)
    verts = np.arange(24, dtype=np.float32).reshape(12, 2)
    ids = np.array([2, 1], np.int32)
    p, v, pr, vr = run1(lambda i, g, x: (*fn.segmentation.select_masks(i, g, x),
                                         *fn.segmentation.select_masks(i, g, x,
                                                                       reindex_masks=True)),
                        ids, polys, verts)
    # Mask 2, then mask 1 (both of its polygons): mask_ids order, vertices renumbered.
    np.testing.assert_array_equal(p, [[2, 0, 3], [1, 3, 7], [1, 7, 9]])
    np.testing.assert_array_equal(v, np.concatenate([verts[7:10], verts[3:7], verts[10:12]]))
    np.testing.assert_array_equal(pr, [[0, 0, 3], [1, 3, 7], [1, 7, 9]])  # 2 -> 0, 1 -> 1
    np.testing.assert_array_equal(vr, v)
    with pytest.raises(StokerError, match="mask id 2 appears twice"):
        run1(lambda i, g, x: fn.segmentation.select_masks(i, g, x),
             np.array([2, 2], np.int32), polys, verts)
    with pytest.raises(StokerError, match="polygon 3 spans vertices 10..12 of 11"):
        run1(lambda i, g, x: fn.segmentation.select_masks(i, g, x), ids, polys, verts[:11])


CT_SCRIPT = """
import sys, numpy as np
from nvidia.dali import pipeline_def, fn, types
pts, ipts, M, T = (np.load(a) for a in sys.argv[1:5])
polys = np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10], [3, 10, 12]], np.int32)
verts = pts[:12, :2].copy()
@pipeline_def(batch_size=1, num_threads=1, device_id=None)
def p():
    q = fn.external_source(source=lambda: [pts], batch=True)
    qi = fn.external_source(source=lambda: [ipts], batch=True)
    ids = fn.external_source(source=lambda: [np.array([3, 1], np.int32)], batch=True)
    pg = fn.external_source(source=lambda: [polys], batch=True)
    vt = fn.external_source(source=lambda: [verts], batch=True)
    return (fn.coord_transform(q, M=M.ravel().tolist(), T=T.tolist()),
            fn.coord_transform(qi, M=[0.5, 0.25, 1, 2], T=[0.4, -0.6], dtype=types.INT32),
            fn.coord_transform(q, MT=np.concatenate([M, T[:, None]], 1).ravel().tolist()),
            *fn.segmentation.select_masks(ids, pg, vt, reindex_masks=True))
pp = p(); pp.build()
np.savez(sys.argv[5], *[np.array(o[0]) for o in pp.run()])
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI's CPU build is not installed")
def test_coord_transform_and_select_masks_match_dali(tmp_path):
    rng = np.random.default_rng(0)
    arrays = [(rng.random((50, 3)) * 10 - 5).astype(np.float32),
              rng.integers(-100, 100, (50, 2)).astype(np.int32),
              (rng.random((2, 3)) * 3).astype(np.float32), rng.random(2).astype(np.float32)]
    paths = [str(tmp_path / f"{k}.npy") for k in range(4)]
    for p, a in zip(paths, arrays):
        np.save(p, a)
    subprocess.run([DALI_PY, "-c", CT_SCRIPT, *paths, str(tmp_path / "d.npz")], check=True,
                   capture_output=True)
    want = np.load(tmp_path / "d.npz")
    pts, ipts, M, T = arrays
    polys = np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10], [3, 10, 12]], np.int32)
    got = run1(lambda q, qi, i, g, v: (
        fn.coord_transform(q, M=M.ravel().tolist(), T=T.tolist()),
        fn.coord_transform(qi, M=[0.5, 0.25, 1, 2], T=[0.4, -0.6], dtype=types.INT32),
        fn.coord_transform(q, MT=np.concatenate([M, T[:, None]], 1).ravel().tolist()),
        *fn.segmentation.select_masks(i, g, v, reindex_masks=True)),
        pts, ipts, np.array([3, 1], np.int32), polys, pts[:12, :2].copy())
    for k, g in enumerate(got):
        np.testing.assert_array_equal(g, want[f"arr_{k}"], err_msg=f"output {k}")


# ---- the GPU backends' plumbing, against tests/fake_gpu ----

def test_box_ops_gpu_plumbing_match_cpu(fake_gpu):
    """The GPU backends (descriptors, shapes, per-sample flags) through the fake GPU, which
    runs the kernels' per-box functions on the CPU: the same bits as the CPU operators, on
    a ragged batch."""
    rng = np.random.default_rng(8)
    boxes = [rng.random((k, 4)).astype(np.float32) for k in (3, 0, 7, 1)]
    pts = [rng.random((k, 2)).astype(np.float32) * 2 - 0.5 for k in (5, 2, 0, 9)]

    def define():
        b = fn.external_source(source=lambda: boxes, batch=True)
        p = fn.external_source(source=lambda: pts, batch=True)
        h = fn.random.coin_flip(probability=0.5)
        v = fn.random.coin_flip(probability=0.5)
        c = fn.random.uniform(range=[0.0, 1.0])
        mt = fn.random.uniform(range=[-2.0, 2.0], shape=[9])  # 3 x (2 + 1): 2 -> 3 coordinates
        out = []
        for dev, bb, pp in (("cpu", b, p), ("gpu", b.gpu(), p.gpu())):
            out.append(fn.bb_flip(bb, horizontal=h, vertical=v, device=dev))
            out.append(fn.bb_flip(bb, ltrb=True, horizontal=v, device=dev))
            out.append(fn.coord_flip(pp, flip_y=v, flip_x=h, center_y=c, layout="yx",
                                     device=dev))
            out.append(fn.coord_transform(pp, MT=mt, device=dev))
        return tuple(out)

    pipe = stoker.pipeline_def(define, batch_size=4, num_threads=1, device_id=0)()
    outs = pipe.run()
    for k in range(4):
        assert outs[k + 4].device == "gpu" and outs[k].device == "cpu"
        cpu, gpu = outs[k], outs[k + 4].as_cpu()
        for i in range(4):
            np.testing.assert_array_equal(np.array(gpu[i]), np.array(cpu[i]),
                                          err_msg=f"output {k} sample {i}")


# ---- transforms.crop ----

def test_transforms_crop_maps_the_boxes():
    def define():
        m0 = fn.transforms.translation(offset=[3.0, 4.0])
        return (fn.transforms.crop(from_start=[10., 20.], from_end=[110., 70.]),
                fn.transforms.crop(from_start=[10., 20.], from_end=[110., 70.],
                                   to_start=[0., 0.], to_end=[2., 4.]),
                fn.transforms.crop(from_start=[10., 20.], from_end=[0., 70.], absolute=True),
                fn.transforms.crop(m0, from_start=[10., 20.], from_end=[110., 70.]),
                fn.transforms.crop(m0, from_start=[10., 20.], from_end=[110., 70.],
                                   reverse_order=True))

    a, b, c, d, e = [np.array(o[0]) for o in
                     stoker.pipeline_def(define, batch_size=1, num_threads=1)().run()]
    # Scale (to_end - to_start) / (from_end - from_start), offset to_start - from_start * scale.
    np.testing.assert_allclose(a, [[0.01, 0, -0.1], [0, 0.02, -0.4]], rtol=1e-6)
    np.testing.assert_allclose(b, [[0.02, 0, -0.2], [0, 0.08, -1.6]], rtol=1e-6)
    np.testing.assert_allclose(c, [[0.1, 0, 0], [0, 0.02, -0.4]], rtol=1e-6)  # x: 0..10
    np.testing.assert_allclose(d, [[0.01, 0, -0.07], [0, 0.02, -0.32]], rtol=1e-6)  # crop(m0(p))
    np.testing.assert_allclose(e, [[0.01, 0, 2.9], [0, 0.02, 3.6]], rtol=1e-6)  # m0(crop(p))
    # DALI 2.4's float32 results, bit for bit (its rounding: scale, then the offset).
    assert a.ravel().tolist() == [np.float32(0.01), 0.0, np.float32(-0.099999994),
                                  0.0, np.float32(0.02), np.float32(-0.39999998)]
    with pytest.raises(StokerError, match="equal on axis 1"):
        stoker.pipeline_def(lambda: fn.transforms.crop(from_start=[0., 5.], from_end=[1., 5.]),
                            batch_size=1, num_threads=1)().run()


# ---- segmentation.random_mask_pixel ----

def test_random_mask_pixel_draws_from_the_foreground():
    import collections
    m = np.zeros((6, 8, 1), np.uint8)
    m[2, 5], m[4, 1], m[0, 0] = 3, 7, 1
    n = 300

    def define():
        x = fn.external_source(source=lambda: [m] * n, batch=True, layout="HWC")
        return (fn.segmentation.random_mask_pixel(x, foreground=1),
                fn.segmentation.random_mask_pixel(x, foreground=1, threshold=2),
                fn.segmentation.random_mask_pixel(x, foreground=1, value=7),
                fn.segmentation.random_mask_pixel(x, foreground=1, value=9),
                fn.segmentation.random_mask_pixel(x))

    outs = stoker.pipeline_def(define, batch_size=n, num_threads=2, seed=3)().run()
    counts = [collections.Counter(tuple(np.array(t[i]).tolist()) for i in range(n))
              for t in outs]
    assert np.array(outs[0][0]).dtype == np.int64
    assert set(counts[0]) == {(2, 5, 0), (4, 1, 0), (0, 0, 0)}  # every pixel above 0
    assert min(counts[0].values()) > 60  # about 100 each: uniform
    assert set(counts[1]) == {(2, 5, 0), (4, 1, 0)}
    assert set(counts[2]) == {(4, 1, 0)}
    assert len(counts[3]) > 40 and len(counts[4]) > 40  # no pixel of value 9: anywhere
    for c in counts[3]:
        assert 0 <= c[0] < 6 and 0 <= c[1] < 8 and c[2] == 0


# ---- ssd_random_crop ----

def test_ssd_random_crop_crops_image_and_boxes_together():
    h, w = 60, 80
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.stack([xx, yy, np.zeros_like(xx)], 2).astype(np.uint8)  # pixels name themselves
    rng = np.random.default_rng(6)
    a = rng.random((5, 2)).astype(np.float32) * 0.6
    boxes = np.concatenate([a, a + 0.1 + rng.random((5, 2)).astype(np.float32) * 0.3], 1)
    labels = np.arange(1, 6, dtype=np.int32)
    n = 40

    def define():
        i = fn.external_source(source=lambda: [img] * n, batch=True, layout="HWC")
        b = fn.external_source(source=lambda: [boxes] * n, batch=True)
        l = fn.external_source(source=lambda: [labels] * n, batch=True)
        return tuple(fn.ssd_random_crop(i, b, l, num_attempts=10))

    images, out_boxes, out_labels = stoker.pipeline_def(define, batch_size=n, num_threads=2,
                                                        seed=2)().run()
    cropped = 0
    for k in range(n):
        im = np.array(images[k])
        ch, cw = im.shape[:2]
        x0, y0 = int(im[0, 0, 0]), int(im[0, 0, 1])
        np.testing.assert_array_equal(im, img[y0:y0 + ch, x0:x0 + cw])  # a true crop
        cropped += (ch, cw) != (h, w)
        if (ch, cw) != (h, w):
            assert 0.3 * min(h, w) - 1 <= min(ch, cw) and 0.5 - 0.05 <= cw / ch <= 2.05
        win = np.array([x0 / w, y0 / h, (x0 + cw) / w, (y0 + ch) / h])
        cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
        keep = (cx >= win[0]) & (cx <= win[2]) & (cy >= win[1]) & (cy <= win[3])
        assert np.array(out_labels[k]).tolist() == labels[keep].tolist()
        clip = np.concatenate([np.maximum(boxes[keep, :2], win[:2]),
                               np.minimum(boxes[keep, 2:], win[2:])], 1)
        want = (clip - np.tile(win[:2], 2)) / np.tile(win[2:] - win[:2], 2)
        np.testing.assert_allclose(np.array(out_boxes[k]), want, atol=1e-5)
    assert cropped > n // 3


# ---- segmentation.random_object_bbox ----

def object_boxes(m, n=400, **kw):
    import collections

    def define():
        x = fn.external_source(source=lambda: [m] * n, batch=True)
        return fn.segmentation.random_object_bbox(x, format="box", output_class=True, **kw)

    boxes, classes = stoker.pipeline_def(define, batch_size=n, num_threads=2, seed=7)().run()
    return collections.Counter((tuple(np.array(boxes[i]).tolist()), int(np.array(classes[i])))
                               for i in range(n))


def test_random_object_bbox_objects_and_classes():
    m = np.zeros((6, 8), np.int32)
    m[1, 1] = m[2, 2] = 2  # diagonal neighbours: two objects of class 2
    m[4:6, 5:8] = 3  # one object of class 3, 2 x 3
    m[0, 6:8] = 3  # a second, 1 x 2
    c = object_boxes(m)
    assert set(c) == {((1, 1, 2, 2), 2), ((2, 2, 3, 3), 2), ((4, 5, 6, 8), 3), ((0, 6, 1, 8), 3)}
    by_class = {2: 0, 3: 0}
    for (_, k), v in c.items():
        by_class[k] += v
    assert 150 < by_class[2] < 250  # the class first (uniform), then the object
    # threshold: class 2's objects are 1 x 1 -> rejected, class 3 keeps the 2 x 3 object only.
    assert set(object_boxes(m, threshold=[2, 2])) == {((4, 5, 6, 8), 3)}
    assert set(object_boxes(m, k_largest=1, classes=[3])) == {((4, 5, 6, 8), 3)}
    c = object_boxes(m, class_weights=[0.0, 0.0, 1.0])  # labels 1, 2, 3: only class 3
    assert {k for (_, k) in c} == {3}
    # Nothing left, or foreground_prob=0: the whole input and the background label.
    assert set(object_boxes(m, threshold=[3, 3])) == {((0, 0, 6, 8), 0)}
    assert set(object_boxes(m, foreground_prob=0.0)) == {((0, 0, 6, 8), 0)}
    # ignore_class: all four objects equally likely.
    c = object_boxes(m, ignore_class=True)
    assert len(c) == 4 and min(c.values()) > 60


def test_random_object_bbox_formats():
    m = np.zeros((5, 7, 1), np.uint8)
    m[1:3, 2:6] = 4

    def define():
        x = fn.external_source(source=lambda: [m], batch=True)
        return (*fn.segmentation.random_object_bbox(x),
                *fn.segmentation.random_object_bbox(x, format="start_end"))

    a, s, st, en = [np.array(o[0]).tolist() for o in
                    stoker.pipeline_def(define, batch_size=1, num_threads=1)().run()]
    assert (a, s, st, en) == ([1, 2, 0], [2, 4, 1], [1, 2, 0], [3, 6, 1])
