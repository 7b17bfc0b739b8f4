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
