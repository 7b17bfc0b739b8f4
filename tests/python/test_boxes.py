"""Box and point operators (bb_flip, bbox_paste, coord_flip, ...) against values worked
out by hand from the documented formulas, the image they follow (a box drawn into an
image and the image flipped must give the flipped box), bad input, and, when DALI's CPU
build is installed, DALI's outputs bit for bit."""

import os
import subprocess

import numpy as np
import pytest

import stoker
from stoker import fn
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
