"""Crop-window generators and fused crop decoders: random_crop_generator, roi_random_crop
(DALI's semantics, learnt from DALI 2.4 CPU: int32 [y, x] / [h, w] windows from a shape;
int64 window starts drawn uniformly from DALI's range rule), against hand-computed
windows, ranges and invariants."""

import numpy as np
import pytest

from stoker import fn, pipeline_def, _schema
from stoker.errors import StokerError

OPS = {"random_crop_generator", "roi_random_crop"}
pytestmark = pytest.mark.skipif(not OPS <= set(_schema.registry()),
                                reason="crop generators not in this build")


def run(build, batch_size=8, batches=1, seed=3):
    @pipeline_def(batch_size=batch_size, num_threads=2, seed=seed)
    def pipe():
        return build()

    p = pipe()
    p.build()
    out = []
    for _ in range(batches):
        o = p.run()
        o = o if isinstance(o, (list, tuple)) else [o]
        out.append([[np.array(t[i]) for i in range(len(t))] for t in o])
    return out


def shapes(values, dtype=np.int64):
    return fn.external_source(source=[[np.array(v, dtype) for v in values]], cycle=True)


def test_random_crop_generator_windows_fit_and_follow_the_ranges():
    dims = [(100, 200, 3), (50, 40, 1), (480, 640, 3), (10, 10, 3)] * 2
    outs = run(lambda: fn.random_crop_generator(shapes(dims)), batches=25)
    ratios, areas = [], []
    for anchor, shape in outs:
        for (h, w, _), a, s in zip(dims, anchor, shape):
            assert a.dtype == np.int32 and s.dtype == np.int32 and a.shape == s.shape == (2,)
            assert 0 <= a[0] and a[0] + s[0] <= h and 0 <= a[1] and a[1] + s[1] <= w
            if h >= 100:  # large enough for the rounding of a window side not to matter
                areas.append(s[0] * s[1] / (h * w))
                ratios.append(s[1] / s[0])
    areas, ratios = np.array(areas), np.array(ratios)
    assert areas.min() > 0.07 and areas.max() <= 1.0 and areas.std() > 0.1
    assert ratios.min() > 0.73 and ratios.max() < 1.36
    # log-uniform ratio: about as many below 1 as above
    assert 0.3 < (ratios < 1).mean() < 0.7


def test_random_crop_generator_falls_back_to_a_centre_crop():
    """A window of the whole area at ratio 2 never fits a square: torchvision's fallback
    keeps the width and cuts the height to width / 2, centred."""
    (anchor, shape), = run(lambda: fn.random_crop_generator(
        shapes([(100, 100)] * 8, np.int32), random_area=[1.0, 1.0], random_aspect_ratio=[2.0, 2.0]))
    for a, s in zip(anchor, shape):
        assert list(a) == [25, 0] and list(s) == [50, 100]


def test_random_crop_generator_errors():
    with pytest.raises(StokerError, match="1-D integer shape"):
        run(lambda: fn.random_crop_generator(shapes([(7,)] * 8)))
    with pytest.raises(StokerError, match="random_area"):
        run(lambda: fn.random_crop_generator(shapes([(9, 9)] * 8), random_area=[0.5, 2.0]))


def draws(build, n=40, batch=8):
    """Every drawn start per dimension over n batches: a (samples, ndim) array."""
    return np.array([s for b in run(build, batch_size=batch, batches=n) for s in b[0]])


def assert_uniform_over(values, lo, hi):
    assert values.min() == lo and values.max() == hi, (values.min(), values.max(), lo, hi)
    assert len(np.unique(values)) == hi - lo + 1


def test_roi_random_crop_covers_a_small_roi_inside_the_input():
    # crop 10 > ROI [5, 9): starts in [9 - 10, 5], clamped to [0, 30 - 10] -> [0, 5]
    d = draws(lambda: fn.roi_random_crop(crop_shape=[10, 10], roi_start=[5, 5], roi_shape=[4, 4],
                                         in_shape=[30, 40]))
    assert d.dtype == np.int64 and d.shape[1] == 2
    assert_uniform_over(d[:, 0], 0, 5)
    assert_uniform_over(d[:, 1], 0, 5)


def test_roi_random_crop_unbounded_may_start_outside():
    d = draws(lambda: fn.roi_random_crop(crop_shape=[10, 10], roi_start=[5, 5], roi_shape=[4, 4]))
    assert_uniform_over(d[:, 0], -1, 5)


def test_roi_random_crop_inside_a_large_roi_of_the_data_input():
    def build():
        x = fn.external_source(source=[[np.zeros((30, 40, 3), np.uint8)] * 8], cycle=True,
                               layout="HWC")
        return fn.roi_random_crop(x, crop_shape=[10, 10, 3], roi_start=[5, 5, 0],
                                  roi_end=[25, 35, 3])
    d = draws(build, n=60)
    assert_uniform_over(d[:, 0], 5, 15)  # ROI 20 > crop 10: starts in [5, 25 - 10]
    assert_uniform_over(d[:, 1], 5, 25)
    assert (d[:, 2] == 0).all()


def test_roi_random_crop_per_sample_arguments():
    roi = fn.external_source(source=[[np.array([i, 0], np.int64) for i in range(8)]], cycle=True)
    (starts,), = run(lambda: (fn.roi_random_crop(crop_shape=[3, 3], roi_start=roi, roi_shape=[3, 3]),))
    for i, s in enumerate(starts):  # ROI of the crop's size: exactly its start
        assert list(s) == [i, 0]


def test_roi_random_crop_errors_name_the_argument():
    with pytest.raises(StokerError, match="roi_end.*roi_shape"):
        run(lambda: fn.roi_random_crop(crop_shape=[2], roi_start=[0], roi_end=[1], roi_shape=[1]))
    with pytest.raises(StokerError, match="roi_start"):
        run(lambda: fn.roi_random_crop(crop_shape=[2, 2], roi_start=[0], roi_shape=[1, 1]))
    with pytest.raises(StokerError, match="extent"):
        run(lambda: fn.roi_random_crop(crop_shape=[50], roi_start=[0], roi_shape=[1], in_shape=[30]))
