"""Colour, occlusion and noise operators through the Python API, the way users call them,
against Pillow (the Pillow-defined operators and the `pil=True` variants: exact, 0 LSB)
and against DALI's formulas in NumPy float64 (the DALI-defined ones: exact after rounding,
1 LSB allowed next to a rounding tie). Per-sample arguments come from fn.random.*."""

import os

import numpy as np
import pytest

import stoker
from stoker import fn, _schema

PIL = pytest.importorskip("PIL")
from PIL import Image, ImageEnhance, ImageOps  # noqa: E402

OPS = {"brightness", "contrast", "saturation", "sharpness", "equalize", "auto_contrast",
       "posterize", "solarize", "invert", "grayscale", "brightness_contrast", "hsv",
       "erase", "noise.gaussian"}
pytestmark = pytest.mark.skipif(not OPS <= set(_schema.registry()),
                                reason="colour operators not in this build")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def photo(name, size=(160, 120)):
    im = Image.open(os.path.join(ROOT, "data", "photos", name)).convert("RGB")
    return np.asarray(im.resize(size, Image.BILINEAR))


IMAGES = [photo("chelsea.png"), photo("coffee.png"), photo("astronaut.png")]


def run(build, images=IMAGES):
    """Runs one batch of `images` through build(node) and returns its outputs as lists."""
    @stoker.pipeline_def(batch_size=len(images), num_threads=2, seed=3)
    def pipe():
        x = fn.external_source(source=[images], cycle=True, layout="HWC")
        return build(x)

    outs = pipe().run()
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return [[np.array(tl[i]) for i in range(len(images))] for tl in outs]


def pil_apply(img, op, *args):
    im = Image.fromarray(img)
    if op in ("Brightness", "Color", "Contrast", "Sharpness"):
        return np.asarray(getattr(ImageEnhance, op)(im).enhance(*args))
    return np.asarray(getattr(ImageOps, op)(im, *args))


@pytest.mark.parametrize("call, op, args", [
    (lambda x: fn.brightness(x, brightness=1.4, pil=True), "Brightness", (1.4,)),
    (lambda x: fn.contrast(x, contrast=0.35, pil=True), "Contrast", (0.35,)),
    (lambda x: fn.saturation(x, saturation=1.7, pil=True), "Color", (1.7,)),
    (lambda x: fn.sharpness(x, sharpness=0.2), "Sharpness", (0.2,)),
    (lambda x: fn.equalize(x, algorithm="pil"), "equalize", ()),
    (lambda x: fn.auto_contrast(x, cutoff=[2.0, 1.0]), "autocontrast", ((2.0, 1.0),)),
    (lambda x: fn.posterize(x, bits=2), "posterize", (2,)),
    (lambda x: fn.solarize(x, threshold=100), "solarize", (100,)),
    (lambda x: fn.invert(x), "invert", ()),
])
def test_pil_defined_exact(call, op, args):
    (got,) = run(call)
    for img, g in zip(IMAGES, got):
        np.testing.assert_array_equal(g, pil_apply(img, op, *args))


def test_grayscale_is_convert_L():
    g1, g3 = run(lambda x: (fn.grayscale(x), fn.grayscale(x, num_output_channels=3)))
    for img, a, b in zip(IMAGES, g1, g3):
        ref = np.asarray(Image.fromarray(img).convert("L"))
        np.testing.assert_array_equal(a[:, :, 0], ref)
        np.testing.assert_array_equal(b, np.stack([ref] * 3, axis=-1))


def test_per_sample_factors_match_pillow():
    def build(x):
        f = fn.random.uniform(range=[0.1, 1.9])
        return (fn.brightness(x, brightness=f, pil=True), fn.contrast(x, contrast=f, pil=True),
                fn.saturation(x, saturation=f, pil=True), fn.sharpness(x, sharpness=f), f)

    b, c, s, h, f = run(build)
    assert len({float(v) for v in f}) == len(IMAGES)
    for i, img in enumerate(IMAGES):
        fac = float(np.float32(f[i]))
        np.testing.assert_array_equal(b[i], pil_apply(img, "Brightness", fac))
        np.testing.assert_array_equal(c[i], pil_apply(img, "Contrast", fac))
        np.testing.assert_array_equal(s[i], pil_apply(img, "Color", fac))
        np.testing.assert_array_equal(h[i], pil_apply(img, "Sharpness", fac))


def expect_rounded(got, exact):
    want = np.clip(np.floor(exact + 0.5), 0, 255)
    off = got.astype(np.float64) != want
    tie = np.abs(exact - np.floor(exact) - 0.5) < 1e-6
    assert not np.any(off & ~tie), f"{np.count_nonzero(off & ~tie)} values differ"
    assert np.all(np.abs(got[off].astype(np.float64) - want[off]) <= 1)


def test_dali_brightness_contrast_formula():
    def build(x):
        cc = fn.random.uniform(range=[0, 255])
        return fn.brightness_contrast(x, brightness=1.2, brightness_shift=0.05, contrast=0.7,
                                      contrast_center=cc), cc

    out, cc = run(build)
    for img, o, c in zip(IMAGES, out, cc):
        c = float(c)
        exact = 0.05 * 255 + 1.2 * (c + 0.7 * (img.astype(np.float64) - c))
        expect_rounded(o, exact)


def test_dali_hsv_formula():
    rgb2yiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    yiq2rgb = np.array([[1, 0.956, 0.621], [1, -0.272, -0.647], [1, -1.107, 1.705]])
    h = np.deg2rad(35.0)
    rot = np.array([[1, 0, 0], [0, np.cos(h), np.sin(h)], [0, -np.sin(h), np.cos(h)]])
    m = yiq2rgb @ (0.9 * np.diag([1, 1.4, 1.4]) @ rot) @ rgb2yiq
    (out,) = run(lambda x: fn.hsv(x, hue=35, saturation=1.4, value=0.9))
    for img, o in zip(IMAGES, out):
        expect_rounded(o, img.astype(np.float64) @ m.T)


def test_erase_and_noise_through_python():
    def build(x):
        an = fn.random.uniform(range=[0, 60], shape=[2])
        e = fn.erase(x, anchor=an, shape=[20, 30], fill_value=[1, 2, 3])
        g = fn.noise.gaussian(fn.cast(x, dtype=stoker.types.FLOAT), stddev=5.0)
        return e, g, an

    e, g, an = run(build)
    for img, out, noisy, a in zip(IMAGES, e, g, an):
        y0, x0 = (int(np.floor(v + 0.5)) for v in np.asarray(a, np.float64))
        ref = img.copy()
        ref[y0:y0 + 20, x0:x0 + 30] = [1, 2, 3]
        np.testing.assert_array_equal(out, ref)
        noise = noisy.astype(np.float64) - img
        assert abs(noise.mean()) < 5 * 5 / np.sqrt(noise.size)
        assert abs(noise.std() / 5 - 1) < 0.02


def test_bad_argument_names_it():
    with pytest.raises(Exception, match="brightness_shift"):
        run(lambda x: fn.brightness(x, brightness=1.1, brightness_shift=0.2, pil=True))
    with pytest.raises(Exception, match="bits"):
        run(lambda x: fn.posterize(x, bits=9))
