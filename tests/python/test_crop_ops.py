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


# ---- fused crop decoders: the window of the full decode, placed as DALI places it ----

def decode_batch(photos, build, device="cpu", **kw):
    @pipeline_def(batch_size=len(photos), num_threads=2, seed=3, **kw)
    def pipe():
        jpegs, _ = fn.readers.file(files=photos)
        return (fn.decoders.image(jpegs),) + tuple(build(jpegs))

    p = pipe()
    p.build()
    out = p.run()
    return [[np.array((t.as_cpu() if hasattr(t, "as_cpu") else t)[i]) for i in range(len(t))]
            for t in out]


def jpegs_of(photos):
    return [p for p in photos if p.endswith(".jpg")]


@pytest.mark.parametrize("pos", [(0.5, 0.5), (0.3, 0.8), (0.0, 1.0)])
def test_image_crop_is_the_window_of_the_full_decode(photos, pos):
    px, py = pos
    full, crop, trunc = decode_batch(photos, lambda j: (
        fn.decoders.image_crop(j, crop=[100, 77], crop_pos_x=px, crop_pos_y=py),
        fn.decoders.image_crop(j, crop_h=31, crop_w=45, crop_pos_x=px, crop_pos_y=py,
                               rounding="truncate")))
    for f, c, t in zip(full, crop, trunc):
        h, w = f.shape[:2]
        y, x = int(np.floor(py * (h - 100) + 0.5)), int(np.floor(px * (w - 77) + 0.5))
        np.testing.assert_array_equal(c, f[y:y + 100, x:x + 77])
        y, x = int(py * (h - 31)), int(px * (w - 45))
        np.testing.assert_array_equal(t, f[y:y + 31, x:x + 45])


def test_image_crop_out_of_bounds(photos):
    full, trimmed = decode_batch(photos[:2], lambda j: (
        fn.decoders.image_crop(j, crop=[100000, 50], crop_pos_y=0.0, out_of_bounds_policy="trim_to_shape"),))
    for f, t in zip(full, trimmed):
        np.testing.assert_array_equal(t, f[:, (f.shape[1] - 50 + 1) // 2:][:, :50])
    with pytest.raises(StokerError, match="out_of_bounds_policy"):
        decode_batch(photos[:1], lambda j: (fn.decoders.image_crop(j, crop=[100000, 50]),))


def test_image_slice_matches_dali(photos):
    """DALI 2.4 gives (322, 500) and (522, 706) windows for these two photos with the
    normalised anchor (0.1, 0.23) and shape (0.5, 0.37) in its default [x, y] order."""
    files = [p for p in photos if p.endswith(("hubble_deep_field.jpg", "retina.jpg"))]
    assert len(files) == 2

    def build(j):
        a = fn.external_source(source=[[np.array([0.1, 0.23], np.float32)] * 2], cycle=True)
        s = fn.external_source(source=[[np.array([0.5, 0.37], np.float32)] * 2], cycle=True)
        ai = fn.external_source(source=[[np.array([10, 23], np.int32)] * 2], cycle=True)
        si = fn.external_source(source=[[np.array([50, 37], np.int32)] * 2], cycle=True)
        return (fn.decoders.image_slice(j, a, s),
                fn.decoders.image_slice(j, ai, si, normalized_anchor=False,
                                        normalized_shape=False, axes=[0, 1]))
    full, rel, pix = decode_batch(files, build)
    assert [r.shape[:2] for r in rel] == [(322, 500), (522, 706)]
    for f, r, p in zip(full, rel, pix):
        h, w = f.shape[:2]
        y, x = round(0.23 * h), round(0.1 * w)
        np.testing.assert_array_equal(r, f[y:y + r.shape[0], x:x + r.shape[1]])
        np.testing.assert_array_equal(p, f[10:60, 23:60])


def test_image_slice_fed_by_random_crop_generator(photos):
    def build(j):
        anchor, shape = fn.random_crop_generator(fn.peek_image_shape(j))
        return (fn.decoders.image_slice(j, anchor, shape, normalized_anchor=False,
                                        normalized_shape=False, axes=[0, 1]), anchor, shape)
    full, sliced, anchor, shape = decode_batch(photos, build)
    for f, s, a, z in zip(full, sliced, anchor, shape):
        assert s.shape[:2] == tuple(z)
        np.testing.assert_array_equal(s, f[a[0]:a[0] + z[0], a[1]:a[1] + z[1]])


def test_mixed_crop_decoders_match_the_cpu(photos, fake_gpu):
    files = jpegs_of(photos)

    def build(j):
        a = fn.external_source(source=[[np.array([0.2, 0.1], np.float32)] * len(files)], cycle=True)
        s = fn.external_source(source=[[np.array([0.5, 0.6], np.float32)] * len(files)], cycle=True)
        return (fn.decoders.image_crop(j, crop=[64, 48], crop_pos_x=0.25),
                fn.decoders.image_crop(j, crop=[64, 48], crop_pos_x=0.25, device="mixed"),
                fn.decoders.image_slice(j, a, s),
                fn.experimental.decoders.image_slice(j, a, s, device="mixed"))
    _, c_cpu, c_gpu, s_cpu, s_gpu = decode_batch(files, build, device_id=0)
    for a, b in zip(c_cpu + s_cpu, c_gpu + s_gpu):
        np.testing.assert_array_equal(a, b)


def test_experimental_aliases_run_their_targets(photos):
    from stoker import _schema
    reg = _schema.registry()
    for alias, target in [("experimental.decoders.image", "decoders.image"),
                          ("experimental.decoders.image_crop", "decoders.image_crop"),
                          ("experimental.decoders.image_random_crop", "decoders.image_random_crop"),
                          ("experimental.decoders.image_slice", "decoders.image_slice"),
                          ("experimental.resize", "resize"),
                          ("experimental.tensor_resize", "tensor_resize"),
                          ("experimental.peek_image_shape", "peek_image_shape")]:
        assert alias in reg and target in reg[alias].doc
    full, a, b, c, d = decode_batch(photos[:3], lambda j: (
        fn.experimental.decoders.image(j), fn.experimental.peek_image_shape(j),
        fn.resize(fn.decoders.image(j), size=[20, 30]),
        fn.experimental.resize(fn.experimental.decoders.image(j), size=[20, 30])))
    for f, x, shape, r1, r2 in zip(full, a, b, c, d):
        np.testing.assert_array_equal(f, x)
        assert list(shape[:2]) == list(f.shape[:2])  # channels: the file's
        np.testing.assert_array_equal(r1, r2)


# ---- resize_crop_mirror: resize, then crop, then flip, in one resampling ----

@pytest.mark.parametrize("op,aa", [("resize_crop_mirror", True), ("fast_resize_crop_mirror", False)])
@pytest.mark.parametrize("kw", [dict(resize_shorter=96, crop=[64, 80], crop_pos_x=0.3),
                                dict(size=[120, 90], crop_h=50, crop_w=33, crop_pos_y=0.9,
                                     interp_type="cubic"),
                                dict(resize_x=70, crop=[40, 40], crop_pos_x=0.0, crop_pos_y=1.0,
                                     rounding="truncate")])
def test_resize_crop_mirror_equals_resize_then_crop_then_flip(photos, op, aa, kw):
    crop_kw = {k: kw[k] for k in kw if k.startswith("crop") or k == "rounding"}
    resize_kw = {k: kw[k] for k in kw if k not in crop_kw}

    def build(j):
        img = fn.decoders.image(j)
        m = fn.external_source(source=[[np.int32(i % 4) for i in range(len(photos))]], cycle=True)
        ref = fn.crop(fn.resize(img, antialias=aa, **resize_kw), **crop_kw)
        ref = fn.flip(ref, horizontal=m % 2, vertical=m // 2)
        return getattr(fn, op)(img, mirror=m, **resize_kw, **crop_kw), ref
    _, fused, ref = decode_batch(photos, build)
    for a, b in zip(fused, ref):
        assert a.shape == b.shape
        diff = np.abs(a.astype(int) - b.astype(int))
        assert diff.max() <= 1 and (diff > 0).mean() < 0.01  # float rounding of the window


def test_resize_crop_mirror_float_output_is_the_same_samples(photos):
    """float32 output: the fused window samples at the same points up to float error."""
    def build(j):
        img = fn.decoders.image(j)
        ref = fn.flip(fn.crop(fn.resize(img, resize_shorter=80, dtype="float32"), crop=[50, 60]),
                      horizontal=1)
        return fn.resize_crop_mirror(img, resize_shorter=80, dtype="float32", crop=[50, 60],
                                     mirror=1), ref
    _, fused, ref = decode_batch(photos, build)
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(a, b, atol=0.02)


def test_resize_crop_mirror_crop_larger_than_the_resize_fails(photos):
    with pytest.raises(StokerError, match="leaves"):
        decode_batch(photos[:1], lambda j: (
            fn.resize_crop_mirror(fn.decoders.image(j), resize_shorter=32, crop=[64, 64]),))
