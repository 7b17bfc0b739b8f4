"""DALI compatibility details (issue 21 item 8): types.INTERP_TRIANGULAR, types.YCbCr,
fn.equalize's default algorithm, the auto_aug identity's name. Expected values are
DALI 2.4's behaviour, written from NumPy formulas (DALI itself is not needed here)."""

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.auto_aug import augmentations

RNG = np.random.default_rng(0)
IMG = RNG.integers(0, 256, (37, 53, 3), dtype=np.uint8)


def run(graph, img=IMG):
    @stoker.pipeline_def(batch_size=1, num_threads=1, seed=3)
    def pipe():
        x = fn.external_source(source=lambda: [img], layout="HWC")
        return graph(x)
    return [np.asarray(t.at(0)) for t in pipe().run()]


def test_interp_triangular_is_dalis_linear():
    # DALI 2.4 gives the same bytes for INTERP_TRIANGULAR and INTERP_LINEAR, with and
    # without antialias, down and up
    outs = run(lambda x: tuple(
        fn.resize(x, size=size, interp_type=t, antialias=aa)
        for size in ([17, 23], [61, 80]) for aa in (True, False)
        for t in (types.INTERP_TRIANGULAR, types.INTERP_LINEAR)))
    for k in range(0, len(outs), 2):
        assert np.array_equal(outs[k], outs[k + 1]), k
    assert not np.array_equal(outs[0], outs[2])  # antialias still matters when downscaling
    assert types.INTERP_TRIANGULAR is not types.INTERP_LINEAR
    assert types.INTERP_TRIANGULAR.name == "INTERP_TRIANGULAR"


def test_ycbcr_round_trip():
    y, back = run(lambda x: (
        fn.color_space_conversion(x, image_type=types.RGB, output_type=types.YCbCr),
        fn.color_space_conversion(
            fn.color_space_conversion(x, image_type=types.RGB, output_type=types.YCbCr),
            image_type=types.YCbCr, output_type=types.RGB)))
    assert types.YCbCr is types.DALIImageType.YCbCr and str(types.YCbCr) == "DALIImageType.YCbCr"
    # ITU-R BT.601 studio swing, as DALI
    rgb = IMG.astype(np.float64)
    luma = 16 + (65.481 * rgb[..., 0] + 128.553 * rgb[..., 1] + 24.966 * rgb[..., 2]) / 255
    assert np.abs(y[..., 0].astype(int) - np.round(luma)).max() <= 1
    assert np.abs(back.astype(int) - IMG).max() <= 3


def opencv_equalize(img):
    out = np.empty_like(img)
    for c in range(img.shape[2]):
        hist = np.bincount(img[..., c].ravel(), minlength=256)
        cdf = np.cumsum(hist)
        first = cdf[np.nonzero(hist)[0][0]]
        total = img.shape[0] * img.shape[1]
        lut = np.round((cdf - first) * 255.0 / max(total - first, 1)).clip(0, 255).astype(np.uint8)
        out[..., c] = lut[img[..., c]]
    return out


def test_equalize_defaults_to_dalis_algorithm():
    low = (60 + IMG // 3).astype(np.uint8)  # a low-contrast image: equalizing has work to do
    default, opencv, experimental, pil = run(lambda x: (
        fn.equalize(x), fn.equalize(x, algorithm="opencv"), fn.experimental.equalize(x),
        fn.equalize(x, algorithm="pil")), low)
    assert np.array_equal(default, opencv) and np.array_equal(default, experimental)
    assert np.array_equal(default, opencv_equalize(low))
    assert not np.array_equal(default, pil)  # Pillow's stays available


def test_identity_augmentation_is_named_identity():
    assert augmentations.identity.name == "identity"
    assert augmentations.identity.op.__name__ == "identity"


def test_select_and_signed_bin_per_sample():
    """auto_aug.core.select applies ops[idx] per sample; signed_bin pairs bins with signs;
    augmentations take per-sample (signed) bins. Each sample must equal the augmentation
    called with that sample's bin and sign as Python ints (checked against DALI 2.4 too,
    where brightness differs by at most 1 from rounding)."""
    from stoker.auto_aug import augmentations as a
    from stoker.auto_aug.core import select, signed_bin
    rng = np.random.default_rng(1)
    imgs = [rng.integers(0, 256, (20, 30, 3), dtype=np.uint8) for _ in range(4)]
    augs = [a.brightness, a.contrast, a.identity, a.solarize]
    idx, bins, signs = (0, 1, 2, 3), (3, 9, 5, 4), (1, 0, 1, 1)

    @stoker.pipeline_def(batch_size=4, num_threads=2, seed=3)
    def pipe():
        x = fn.external_source(source=lambda: imgs, layout="HWC")
        i = fn.external_source(source=lambda: [np.int32(v) for v in idx])
        b = fn.external_source(source=lambda: [np.int32(v) for v in bins])
        s = fn.external_source(source=lambda: [np.int32(v) for v in signs])
        sb = signed_bin(b, s)
        return (select(augs, i, x, magnitude_bin=sb, num_magnitude_bins=11), sb.signed_magnitude_idx,
                a.brightness(x, magnitude_bin=signed_bin(7, s), num_magnitude_bins=11),
                a.solarize(x, magnitude_bin=b, num_magnitude_bins=11))

    @stoker.pipeline_def(batch_size=1, num_threads=1, seed=3)
    def one(img, aug, b, sign):
        x = fn.external_source(source=lambda: [img], layout="HWC")
        return aug(x, magnitude_bin=b, random_sign=sign, num_magnitude_bins=11)

    def ref(img, aug, b, sign):
        return np.asarray(one(img, aug, b, sign).run()[0].at(0))

    sel, sidx, bright7, sol = [[np.asarray(t.at(k)) for k in range(4)] for t in pipe().run()]
    assert [int(v) for v in sidx] == [2 * b + s for b, s in zip(bins, signs)]
    for k in range(4):
        assert np.array_equal(sel[k], ref(imgs[k], augs[idx[k]], bins[k], signs[k])), k
        assert np.array_equal(bright7[k], ref(imgs[k], a.brightness, 7, signs[k])), k
        assert np.array_equal(sol[k], ref(imgs[k], a.solarize, bins[k], 0)), k
    assert np.array_equal(sel[2], imgs[2])  # identity


def test_unsigned_bins_for_a_negating_augmentation_warn_and_draw_signs():
    from stoker.auto_aug import augmentations as a
    from stoker.auto_aug.core import signed_bin

    @stoker.pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        x = fn.external_source(source=lambda: [IMG, IMG], layout="HWC")
        b = fn.external_source(source=lambda: [np.int32(3), np.int32(3)])
        with pytest.warns(Warning, match="randomly_negate=True"):
            out = a.brightness(x, magnitude_bin=b, num_magnitude_bins=11)
        return out
    pipe().run()
    with pytest.raises(Exception, match="cannot be given together"):
        signed_bin(1, random_sign=fn.random.uniform(values=[0, 1], dtype="int32"), seed=3)
    with pytest.raises(Exception, match="must be an int or a DataNode"):
        signed_bin(1.5)
