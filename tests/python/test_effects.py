"""The image effects (issue 22) through the Python API, against independent references.

References, and where each formula comes from:
- water, sphere: NumPy float64 formulas measured on DALI 2.4's CPU operators (feeding an
  image whose channels hold the pixel coordinates and reading back where each output
  pixel sampled): water reads the input at pixel-edge coordinates
  (x + ampl_x sin(freq_x y + phase_x), y + ampl_y cos(freq_y x + phase_y)) for output
  indices (x, y); sphere reads c + t |t| / d with c = (w/2, h/2), t the output pixel
  centre minus c, d = max(w // 2, h // 2). Nearest takes the pixel holding the point;
  linear blends the four nearest centres with out-of-image taps reading fill_value.
  When the DALI oracle venv (/work/dali-venv) is present, the same cases are also
  compared with DALI's outputs directly.
- jitter: DALI has it on the GPU only; its documentation says each pixel moves by a
  random amount in [-nDegree/2, nDegree/2] along x and y. Checked through the offsets
  (an image holding its own coordinates): their range, their distribution for nearest
  sampling of a uniform offset, independence of samples and seeds.
- warp_perspective, remap: OpenCV's warpPerspective / remap (DALI's CPU warp_perspective is
  OpenCV's: identical bytes in all 30 border / interpolation / origin cases we measured).
  OpenCV interpolates with 1/32-pixel fixed-point weights and we in float32: uint8
  results may differ by one level.
- median_blur, dilate, erode: OpenCV medianBlur / dilate / erode (exact), and NumPy for
  non-square windows.
- debayer: OpenCV cvtColor COLOR_Bayer*2RGB (exact away from the 1-pixel frame, where
  OpenCV copies the inner neighbour and we mirror the mosaic).
- clahe: OpenCV createCLAHE (exact for grey and per channel; the RGB luma mode goes
  through CIE Lab, which OpenCV computes with 8-bit tables: within a few levels).
- paste: NumPy (canvas trunc(max(size * ratio, min_canvas_size)), corner trunc(pos *
  (canvas - size)), as measured on DALI); multi_paste: NumPy.
- jpeg_compression_distortion: OpenCV imencode / imdecode at the same quality (what DALI's
  CPU operator uses), byte for byte.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.errors import StokerError

cv2 = pytest.importorskip("cv2")
from PIL import Image  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DALI_PY = "/work/dali-venv/bin/python"


def photo(name, size=(97, 71)):
    im = Image.open(os.path.join(ROOT, "data", "photos", name)).convert("RGB")
    return np.asarray(im.resize(size, Image.BILINEAR))


IMAGES = [photo("chelsea.png"), photo("coffee.png", (64, 80)), photo("astronaut.png", (33, 21))]
RNG = np.random.default_rng(5)
NOISE = RNG.integers(0, 256, (37, 53, 3)).astype(np.uint8)


def run(build, images=IMAGES, extra=None, batch=None, seed=9):
    """One batch of `images` through build(x) (or build(x, *extras), each a per-sample list)."""
    @stoker.pipeline_def(batch_size=batch or len(images), num_threads=2, seed=seed)
    def pipe():
        x = fn.external_source(source=[images], cycle=True, layout="HWC" if images[0].ndim == 3 else "HW")
        if extra is None:
            return build(x)
        return build(x, *[fn.external_source(source=[e], cycle=True) for e in extra])

    outs = pipe().run()
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return [np.array(outs[0][i]) for i in range(len(images))]


def run1(build, img, **kw):
    return run(build, [img], **kw)[0]


# ---- references ----------------------------------------------------------------------

def sample_nearest(img, X, Y, fill):
    h, w = img.shape[:2]
    xi, yi = np.floor(X).astype(int), np.floor(Y).astype(int)
    inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
    v = img[np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)].astype(np.float64)
    return np.where(inside[..., None], v, fill)


def sample_linear(img, X, Y, fill):
    h, w = img.shape[:2]
    u, v = X - 0.5, Y - 0.5
    x0, y0 = np.floor(u).astype(int), np.floor(v).astype(int)
    ax, ay = (u - x0)[..., None], (v - y0)[..., None]

    def tap(xi, yi):
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        return np.where(inside[..., None], img[np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)], fill)

    t = tap(x0, y0) * (1 - ax) + tap(x0 + 1, y0) * ax
    b = tap(x0, y0 + 1) * (1 - ax) + tap(x0 + 1, y0 + 1) * ax
    return t * (1 - ay) + b * ay


def water_coords(h, w, ax=10.0, ay=10.0, fx=0.049087, fy=0.049087, px=0.0, py=0.0):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    return xx + ax * np.sin(fx * yy + px), yy + ay * np.cos(fy * xx + py)


def sphere_coords(h, w):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    cx, cy, d = w / 2, h / 2, max(w // 2, h // 2)
    tx, ty = xx + 0.5 - cx, yy + 0.5 - cy
    r = np.sqrt(tx * tx + ty * ty) / d
    return cx + r * tx, cy + r * ty


def as_u8(x):
    return np.clip(np.floor(x + 0.5), 0, 255)


def close_u8(out, ref, atol=1, frac=0.002):
    """uint8 results within `atol`, except a `frac` share (float32 vs float64 rounding
    on x.5 values and coordinates on pixel edges)."""
    d = np.abs(out.astype(np.int64) - ref.astype(np.int64))
    assert (d > atol).mean() <= frac, f"{(d > atol).sum()} of {d.size} differ by more than {atol} (max {d.max()})"


# ---- water / sphere ------------------------------------------------------------------

WAVE = dict(ampl_x=6.0, ampl_y=3.0, freq_x=0.2, freq_y=0.13, phase_x=0.4, phase_y=1.1)


@pytest.mark.parametrize("interp", ["nearest", "linear"])
def test_water_matches_formula(interp):
    outs = run(lambda x: fn.water(x, interp_type=interp, fill_value=7, **WAVE))
    for img, out in zip(IMAGES, outs):
        X, Y = water_coords(*img.shape[:2], WAVE["ampl_x"], WAVE["ampl_y"], WAVE["freq_x"],
                            WAVE["freq_y"], WAVE["phase_x"], WAVE["phase_y"])
        ref = (sample_nearest if interp == "nearest" else sample_linear)(img, X, Y, 7.0)
        assert out.shape == img.shape and out.dtype == np.uint8
        close_u8(out, as_u8(ref), atol=0 if interp == "nearest" else 1)


def test_water_defaults_float_and_mask():
    img = NOISE.astype(np.float32)
    out = run1(lambda x: fn.water(x, interp_type=types.INTERP_LINEAR), img)
    ref = sample_linear(img, *water_coords(37, 53), 0.0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref, atol=2e-3)
    # mask = 0 leaves the sample unchanged (DALI's documented meaning), 1 applies it
    masks = [np.int32(0), np.int32(1)]
    outs = run(lambda x, m: fn.water(x, mask=m), [NOISE, NOISE], extra=[masks])
    assert np.array_equal(outs[0], NOISE)
    assert not np.array_equal(outs[1], NOISE)


@pytest.mark.parametrize("interp", ["nearest", "linear"])
def test_sphere_matches_formula(interp):
    outs = run(lambda x: fn.sphere(x, interp_type=interp, fill_value=3))
    for img, out in zip(IMAGES, outs):
        ref = (sample_nearest if interp == "nearest" else sample_linear)(img, *sphere_coords(*img.shape[:2]), 3.0)
        close_u8(out, as_u8(ref), atol=0 if interp == "nearest" else 1)


def test_sphere_single_channel_hw():
    g = np.ascontiguousarray(NOISE[..., 0])
    out = run1(lambda x: fn.sphere(x), g)
    assert out.shape == g.shape
    ref = sample_nearest(g[..., None], *sphere_coords(37, 53), 0.0)[..., 0]
    assert np.array_equal(out, ref.astype(np.uint8))


# ---- jitter ---------------------------------------------------------------------------

def coord_image(h, w):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    return np.ascontiguousarray(np.stack([xx, yy], -1))


def test_jitter_offsets_follow_the_documented_range():
    img = coord_image(120, 150)
    out = run1(lambda x: fn.jitter(x, nDegree=4, fill_value=-1, seed=3), img)
    yy, xx = np.mgrid[0:120, 0:150]
    inside = out[..., 0] >= 0
    dx, dy = out[..., 0] - xx, out[..., 1] - yy
    # nearest sampling of the centre moved by u ~ U[-2, 2): floor(x + 0.5 + u) - x in -2..2
    assert set(np.unique(dx[inside]).astype(int)) == {-2, -1, 0, 1, 2}
    assert set(np.unique(dy[inside]).astype(int)) == {-2, -1, 0, 1, 2}
    # P(-2) = P(2) = 1/8, P(-1) = P(0) = P(1) = 1/4
    freq = np.array([(dx[inside] == k).mean() for k in range(-2, 3)])
    np.testing.assert_allclose(freq, [0.125, 0.25, 0.25, 0.25, 0.125], atol=0.01)
    # x and y offsets are independent
    assert abs(np.corrcoef(dx[inside], dy[inside])[0, 1]) < 0.02
    # pixels whose offset leaves the image read the fill value
    assert (~inside).sum() > 0 and np.all(out[~inside] == -1)


def test_jitter_seeded_and_per_sample():
    img = coord_image(40, 50)
    a = run(lambda x: fn.jitter(x, seed=11), [img, img])
    b = run(lambda x: fn.jitter(x, seed=11), [img, img])
    c = run1(lambda x: fn.jitter(x, seed=12), img)
    assert np.array_equal(a[0], b[0])
    assert not np.array_equal(a[0], a[1])  # samples draw their own offsets
    assert not np.array_equal(a[0], c)
    zero = run1(lambda x: fn.jitter(x, nDegree=0), img)
    assert np.array_equal(zero, img)
    masks = [np.int32(0), np.int32(1)]
    m = run(lambda x, k: fn.jitter(x, mask=k, seed=1), [img, img], extra=[masks])
    assert np.array_equal(m[0], img) and not np.array_equal(m[1], img)


# ---- warp_perspective / remap ---------------------------------------------------------

M = np.array([[0.9, 0.1, 3.0], [-0.05, 1.1, -2.0], [0.001, -0.002, 1.0]])
CV_BORDER = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE,
             "reflect": cv2.BORDER_REFLECT, "reflect_101": cv2.BORDER_REFLECT_101,
             "wrap": cv2.BORDER_WRAP}
CV_INTERP = {"nearest": cv2.INTER_NEAREST, "linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC}
T_HALF = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]])


def cv_perspective(img, m, origin, border, interp, size, fill):
    mc = m if origin == "center" else np.linalg.inv(T_HALF) @ m @ T_HALF
    return cv2.warpPerspective(img, mc, (size[1], size[0]), flags=CV_INTERP[interp] | cv2.WARP_INVERSE_MAP,
                               borderMode=CV_BORDER[border], borderValue=fill)


@pytest.mark.parametrize("border", list(CV_BORDER))
@pytest.mark.parametrize("interp", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("origin", ["corner", "center"])
def test_warp_perspective_matches_opencv(border, interp, origin):
    out = run1(lambda x: fn.experimental.warp_perspective(
        x, matrix=M.flatten().tolist(), border_mode=border, interp_type=interp, pixel_origin=origin,
        fill_value=[9, 8, 7], size=[40, 50]), NOISE)
    ref = cv_perspective(NOISE, M, origin, border, interp, (40, 50), (9, 8, 7))
    assert out.shape == (40, 50, 3)
    # nearest: identical except points within OpenCV's 1/32 px quantum of a pixel edge
    close_u8(out, ref, atol=0 if interp == "nearest" else 1, frac=0.01 if interp == "nearest" else 0.002)


def test_warp_perspective_forward_matrix_input_and_types():
    photo_ = IMAGES[0]
    h, w = photo_.shape[:2]
    fwd = np.linalg.inv(M)
    # inverse_map=False inverts the (forward) matrix
    out = run1(lambda x: fn.experimental.warp_perspective(x, matrix=fwd.flatten().tolist(), inverse_map=False), photo_)
    close_u8(out, cv_perspective(photo_, M, "corner", "constant", "linear", (h, w), 0))
    # the matrix as a second input, per sample
    mats = [M.astype(np.float32), np.eye(3, dtype=np.float32)]
    outs = run(lambda x, m: fn.experimental.warp_perspective(x, m), [photo_, photo_], extra=[mats])
    close_u8(outs[0], cv_perspective(photo_, M.astype(np.float32).astype(np.float64), "corner", "constant", "linear", (h, w), 0))
    assert np.array_equal(outs[1], photo_)  # identity
    for dt in (np.uint16, np.int16, np.float32):
        src = (photo_.astype(np.int32) * (3 if dt != np.float32 else 1)).astype(dt)
        o = run1(lambda x: fn.experimental.warp_perspective(x, matrix=M.flatten().tolist(), interp_type="nearest"), src)
        assert o.dtype == dt
        ref = cv_perspective(src, M, "corner", "constant", "nearest", (h, w), 0)
        assert (o != ref).mean() < 0.01


@pytest.mark.parametrize("origin", ["corner", "center"])
@pytest.mark.parametrize("interp", ["nearest", "linear"])
def test_remap_matches_opencv(origin, interp):
    img = IMAGES[1]
    h, w = 45, 70
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    mapx = (xx * 1.1 + 3 * np.sin(yy / 5) - 4).astype(np.float32)
    mapy = (yy * 0.9 + 2 * np.cos(xx / 7) + 1).astype(np.float32)
    out = run1(lambda x, mx, my: fn.experimental.remap(x, mx, my, interp=interp, pixel_origin=origin),
               img, extra=[[mapx], [mapy]])
    shift = 0.0 if origin == "center" else -0.5
    ref = cv2.remap(img, mapx + shift, mapy + shift, CV_INTERP[interp], borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    assert out.shape == (h, w, 3)
    close_u8(out, ref, atol=0 if interp == "nearest" else 1, frac=0.01)


# ---- median / dilate / erode -----------------------------------------------------------

@pytest.mark.parametrize("k", [1, 3, 5, 7])
def test_median_blur_matches_opencv(k):
    outs = run(lambda x: fn.experimental.median_blur(x, window_size=k))
    for img, out in zip(IMAGES, outs):
        assert np.array_equal(out, cv2.medianBlur(img, k))


def test_median_blur_rectangular_and_float():
    img = NOISE.astype(np.float32) / 7
    out = run1(lambda x: fn.experimental.median_blur(x, window_size=[5, 3]), img)  # [W, H]
    pad = np.pad(img, ((1, 1), (2, 2), (0, 0)), mode="edge")
    win = np.lib.stride_tricks.sliding_window_view(pad, (3, 5), axis=(0, 1))
    ref = np.median(win.reshape(*win.shape[:3], -1), axis=-1)
    np.testing.assert_array_equal(out, ref.astype(np.float32))


@pytest.mark.parametrize("op", ["dilate", "erode"])
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101"])
def test_morphology_matches_opencv(op, border):
    f = getattr(fn.experimental, op)
    cvf = getattr(cv2, op)
    out = run1(lambda x: f(x, mask_size=[5, 3], anchor=[1, 2], border_mode=border), NOISE)
    kw = {} if border == "constant" else {"borderType": CV_BORDER[border]}
    ref = cvf(NOISE, np.ones((3, 5), np.uint8), anchor=(1, 2), **kw)
    assert np.array_equal(out, ref)


@pytest.mark.parametrize("op", ["dilate", "erode"])
def test_morphology_iterations_and_types(op):
    f, cvf = getattr(fn.experimental, op), getattr(cv2, op)
    out = run1(lambda x: f(x, mask_size=3, iterations=3), NOISE)
    assert np.array_equal(out, cvf(NOISE, np.ones((3, 3), np.uint8), iterations=3))
    for dt in (np.uint16, np.int16, np.float32):
        src = (NOISE.astype(np.int32) * 100 - (12000 if dt == np.int16 else 0)).astype(dt)
        o = run1(lambda x: f(x), src)
        assert o.dtype == dt and np.array_equal(o, cvf(src, np.ones((3, 3), np.uint8)))


# ---- debayer --------------------------------------------------------------------------

BAYER = {(0, 0): cv2.COLOR_BayerBG2RGB, (0, 1): cv2.COLOR_BayerGB2RGB,
         (1, 0): cv2.COLOR_BayerGR2RGB, (1, 1): cv2.COLOR_BayerRG2RGB}


@pytest.mark.parametrize("pos", list(BAYER))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_debayer_matches_opencv(pos, dtype):
    mosaic = (cv2.cvtColor(IMAGES[0], cv2.COLOR_RGB2GRAY).astype(np.uint32) * (257 if dtype == np.uint16 else 1)).astype(dtype)
    mosaic = np.ascontiguousarray(mosaic)
    out = run1(lambda x: fn.experimental.debayer(x, blue_position=list(pos)), mosaic)
    ref = cv2.cvtColor(mosaic, BAYER[pos])
    assert out.shape == mosaic.shape + (3,) and out.dtype == dtype
    assert np.array_equal(out[1:-1, 1:-1], ref[1:-1, 1:-1])
    # the frame: the sensor's own colour is kept everywhere
    r_y, r_x = pos
    assert np.array_equal(out[r_y::2, r_x::2, 0], mosaic[r_y::2, r_x::2])
    assert np.array_equal(out[1 - r_y::2, 1 - r_x::2, 2], mosaic[1 - r_y::2, 1 - r_x::2])


def test_debayer_main_name():
    mosaic = np.ascontiguousarray(NOISE[..., 2])
    out = run1(lambda x: fn.debayer(x, blue_position=[1, 0]), mosaic)  # DALI 2.4's name
    assert np.array_equal(out[1:-1, 1:-1], cv2.cvtColor(mosaic, BAYER[(1, 0)])[1:-1, 1:-1])


def test_debayer_per_sample_pattern():
    mosaic = np.ascontiguousarray(NOISE[..., 1])
    pats = [np.array([0, 0], np.int32), np.array([1, 1], np.int32)]
    outs = run(lambda x, p: fn.experimental.debayer(x, blue_position=p), [mosaic, mosaic], extra=[pats])
    for pos, out in zip([(0, 0), (1, 1)], outs):
        assert np.array_equal(out[1:-1, 1:-1], cv2.cvtColor(mosaic, BAYER[pos])[1:-1, 1:-1])


# ---- clahe ----------------------------------------------------------------------------

@pytest.mark.parametrize("tiles,clip", [((4, 3), 2.0), ((8, 8), 1.0), ((5, 7), 4.0), ((1, 1), 0.0)])
def test_clahe_gray_matches_opencv(tiles, clip):
    grays = [np.ascontiguousarray(cv2.cvtColor(im, cv2.COLOR_RGB2GRAY)) for im in IMAGES[:2]]
    outs = run(lambda x: fn.clahe(x, tiles_x=tiles[0], tiles_y=tiles[1], clip_limit=clip), grays)
    for g, out in zip(grays, outs):
        ref = cv2.createCLAHE(clipLimit=clip, tileGridSize=tiles).apply(g)
        assert out.shape == g.shape
        assert np.array_equal(out, ref)


def test_clahe_rgb_per_channel_and_luma():
    img = IMAGES[0]
    out = run1(lambda x: fn.clahe(x, tiles_x=4, tiles_y=3, clip_limit=2.0, luma_only=False), img)
    ref = np.stack([cv2.createCLAHE(2.0, (4, 3)).apply(np.ascontiguousarray(img[..., k])) for k in range(3)], -1)
    assert np.array_equal(out, ref)
    # luma: CLAHE of the CIE Lab lightness, a and b kept. Exactly: NumPy's float64 Lab
    # (sRGB curve, D65, OpenCV's 8-bit scaling) with OpenCV's CLAHE on the rounded L
    L, a, b = rgb2lab(img)
    L8 = np.clip(np.floor(L + 0.5), 0, 255).astype(np.uint8)
    Lc = cv2.createCLAHE(2.0, (4, 3)).apply(L8).astype(np.float64)
    ref = as_u8(lab2rgb(Lc, np.floor(a + 0.5), np.floor(b + 0.5)))
    out = run1(lambda x: fn.clahe(x, tiles_x=4, tiles_y=3, clip_limit=2.0), img)
    close_u8(out, ref, atol=1)
    # ... and near OpenCV's own 8-bit Lab sequence (DALI's CPU operator), whose table-based
    # conversion rounds L differently for about a tenth of the pixels
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB)
    lab[..., 0] = cv2.createCLAHE(2.0, (4, 3)).apply(lab[..., 0])
    d = np.abs(out.astype(int) - cv2.cvtColor(lab, cv2.COLOR_LAB2RGB))
    assert d.mean() < 1.0 and np.percentile(d, 99) <= 4, (d.mean(), d.max())


def srgb_lin(v):
    v = v / 255.0
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)


def lab_f(t):
    return np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)


def rgb2lab(img):
    r, g, b = (srgb_lin(img[..., k].astype(np.float64)) for k in range(3))
    X = (0.412453 * r + 0.357580 * g + 0.180423 * b) / 0.950456
    Y = 0.212671 * r + 0.715160 * g + 0.072169 * b
    Z = (0.019334 * r + 0.119193 * g + 0.950227 * b) / 1.088754
    L = np.where(Y > 0.008856, 116 * lab_f(Y) - 16, 903.3 * Y)
    return L * 255 / 100, 500 * (lab_f(X) - lab_f(Y)) + 128, 200 * (lab_f(Y) - lab_f(Z)) + 128


def lab2rgb(L, a, b):
    L, a, b = L * 100 / 255, a - 128, b - 128
    fy = (L + 16) / 116
    fx, fz = fy + a / 500, fy - b / 200
    inv = lambda f: np.where(f > 0.206893, f ** 3, (f - 16 / 116) / 7.787)  # noqa: E731
    Y = np.where(L > 7.9996, fy ** 3, L / 903.3)
    X, Z = inv(fx) * 0.950456, inv(fz) * 1.088754
    rgb = np.stack([3.240479 * X - 1.537150 * Y - 0.498535 * Z,
                    -0.969256 * X + 1.875992 * Y + 0.041556 * Z,
                    0.055648 * X - 0.204043 * Y + 1.057311 * Z], -1).clip(0, 1)
    return np.where(rgb <= 0.0031308, rgb * 12.92, 1.055 * rgb ** (1 / 2.4) - 0.055) * 255


# ---- paste / multi_paste ----------------------------------------------------------------

@pytest.mark.parametrize("ratio,px,py,mcs", [(1.5, 0.5, 0.5, 0), (2.0, 0.0, 1.0, 0), (1.3, 0.3, 0.7, 200), (1.0, 0.5, 0.5, 0)])
def test_paste_geometry(ratio, px, py, mcs):
    outs = run(lambda x: fn.paste(x, ratio=ratio, paste_x=px, paste_y=py, min_canvas_size=mcs, fill_value=(1, 2, 3)))
    for img, out in zip(IMAGES, outs):
        h, w = img.shape[:2]
        oh, ow = int(max(h * ratio, mcs)), int(max(w * ratio, mcs))
        y, x = int(py * (oh - h)), int(px * (ow - w))
        ref = np.empty((oh, ow, 3), np.uint8)
        ref[:] = (1, 2, 3)
        ref[y:y + h, x:x + w] = img
        assert np.array_equal(out, ref)


def test_paste_per_sample_ratio():
    ratios = [np.float32(1.0), np.float32(3.0)]
    outs = run(lambda x, r: fn.paste(x, ratio=r, n_channels=3, fill_value=[0, 0, 0]), [NOISE, NOISE], extra=[ratios])
    assert outs[0].shape == NOISE.shape and outs[1].shape == (111, 159, 3)
    assert np.array_equal(outs[1][37:74, 53:106], NOISE)


def test_multi_paste_regions():
    a, b = IMAGES[0], NOISE
    out = run1(lambda x, y: fn.multi_paste(x, y, output_size=[60, 90], in_anchors=[2, 3, 5, 4],
                                           shapes=[20, 30, 10, 12], out_anchors=[0, 0, 15, 25]),
               a, extra=[[b]])
    ref = np.zeros((60, 90, 3), np.uint8)
    ref[0:20, 0:30] = a[2:22, 3:33]
    ref[15:25, 25:37] = b[5:15, 4:16]  # later regions cover earlier ones
    assert np.array_equal(out, ref)
    # relative anchors and shapes, a dtype change
    out = run1(lambda x: fn.multi_paste(x, in_anchors_rel=[0.5, 0.5], shapes_rel=[0.5, 0.5],
                                        out_anchors_rel=[0.25, 0.0], dtype=types.FLOAT), NOISE)
    # measured on DALI 2.4: anchors truncate (18, 26; 9, 0), a relative region ends at
    # trunc((anchor + shape) * size) = the input's end: 19 x 27
    ref = np.zeros((37, 53, 3), np.float32)
    ref[9:28, 0:27] = NOISE[18:37, 26:53]
    assert out.dtype == np.float32 and np.array_equal(out, ref)


def mosaic_reference(images, ids, size):
    """DALI's mosaic recipe: quadrants of other samples of the batch."""
    h, w = size
    out = np.zeros((h, w, 3), np.uint8)
    for k, j in enumerate(ids):
        oy, ox = (k // 2) * (h // 2), (k % 2) * (w // 2)
        out[oy:oy + h // 2, ox:ox + w // 2] = images[j][:h // 2, :w // 2]
    return out


MOSAIC_IDS = [np.array(v, np.int32) for v in ([1, 2, 0, 2], [0, 0, 1, 1], [2, 1, 0, 1])]
MOSAIC_ARGS = dict(output_size=[40, 60], shapes=[20, 30] * 4,
                   out_anchors=[0, 0, 0, 30, 20, 0, 20, 30])


def test_multi_paste_in_ids_mosaic():
    imgs = [np.ascontiguousarray(im[:40, :60]) for im in (IMAGES[0], IMAGES[1], IMAGES[0][::-1])]
    outs = run(lambda x, ids: fn.multi_paste(x, in_ids=ids, **MOSAIC_ARGS), imgs, extra=[MOSAIC_IDS])
    for out, ids in zip(outs, MOSAIC_IDS):
        assert np.array_equal(out, mosaic_reference(imgs, ids, (40, 60)))


# ---- jpeg_compression_distortion --------------------------------------------------------

@pytest.mark.parametrize("quality", [1, 5, 50, 95, 100])
def test_jpeg_distortion_matches_opencv(quality):
    outs = run(lambda x: fn.jpeg_compression_distortion(x, quality=quality))
    for img, out in zip(IMAGES, outs):
        ok, buf = cv2.imencode(".jpg", img[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
        assert np.array_equal(out, cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1])


def test_jpeg_distortion_clamps_quality_per_sample():
    qs = [np.int32(-5), np.int32(500)]
    outs = run(lambda x, q: fn.jpeg_compression_distortion(x, quality=q), [NOISE, NOISE], extra=[qs])
    for q, out in zip([1, 100], outs):
        ok, buf = cv2.imencode(".jpg", NOISE[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, q])
        assert np.array_equal(out, cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1])


# ---- bad input ------------------------------------------------------------------------

BAD = [
    (lambda x: fn.water(x), NOISE.astype(np.int32), "input type int32 is not supported"),
    (lambda x: fn.experimental.warp_perspective(x, matrix=[1, 0, 0, 0, 1, 0]), NOISE, "matrix has 6 elements; expected 9"),
    (lambda x: fn.experimental.warp_perspective(x, matrix=[0.0] * 9, inverse_map=False), NOISE, "cannot be inverted"),
    (lambda x: fn.experimental.warp_perspective(x, matrix=[1, 0, 0, 0, 1, 0, 0, 0, 1], fill_value=[1, 2]), NOISE, "fill_value has 2 values"),
    (lambda x: fn.experimental.median_blur(x, window_size=4), NOISE, "window_size \\[4, 4\\]: extents must be odd"),
    (lambda x: fn.experimental.median_blur(x, window_size=13), NOISE, "at most 121 elements"),
    (lambda x: fn.experimental.dilate(x, mask_size=3, anchor=[3, 0]), NOISE, "anchor \\[3, 0\\] lies outside"),
    (lambda x: fn.experimental.erode(x, mask_size=[300, 200], iterations=2), NOISE, "reads 599x399 elements per pixel; at most 65536"),
    (lambda x: fn.experimental.debayer(x, blue_position=[0, 2]), NOISE[..., :1].copy(), "blue_position must be"),
    (lambda x: fn.experimental.debayer(x, blue_position=[0, 0]), NOISE, "single-channel mosaic"),
    (lambda x: fn.clahe(x, tiles_x=4, tiles_y=4, clip_limit=2), NOISE[..., :2].copy(), "takes 1 \\(grey\\) or 3"),
    (lambda x: fn.clahe(x, tiles_x=60, tiles_y=4, clip_limit=2), NOISE, "tiles do not fit"),
    (lambda x: fn.clahe(x, tiles_x=4, tiles_y=4, clip_limit=2), NOISE.astype(np.float32), "input type float32"),
    (lambda x: fn.paste(x, ratio=0.5, fill_value=[0, 0, 0]), NOISE, "ratio = 0.5; must be >= 1"),
    (lambda x: fn.paste(x, ratio=2, paste_x=1.5, fill_value=[0, 0, 0]), NOISE, "paste_x = 1.5"),
    (lambda x: fn.paste(x, ratio=2, fill_value=[0, 0]), NOISE, "fill_value has 2 values; n_channels is 3"),
    (lambda x: fn.paste(x, ratio=2, n_channels=1, fill_value=[0]), NOISE, "image has 3 channels; n_channels is 1"),
    (lambda x: fn.multi_paste(x, out_anchors=[5, 5]), NOISE, "region 0: 37x53 .* does not fit"),
    (lambda x: fn.multi_paste(x, shapes=[1, 2, 3]), NOISE, "shapes has 3 values; expected 2"),
    (lambda x: fn.multi_paste(x, x, in_ids=[0]), NOISE, "with in_ids the operator takes exactly one input"),
    (lambda x: fn.multi_paste(x, in_ids=[0, 5]), NOISE, "in_ids\\[1\\] = 5 is not a sample of this batch of 1"),
    (lambda x: fn.jpeg_compression_distortion(x), NOISE[..., :1].copy(), "expects RGB"),
    (lambda x: fn.sphere(x), np.zeros((2, 3, 4, 1), np.uint8), "expects an HWC image"),
]


@pytest.mark.parametrize("build,img,msg", BAD, ids=[m[:24] for _, _, m in BAD])
def test_bad_input_names_the_problem(build, img, msg):
    with pytest.raises(StokerError, match=msg):
        run(build, [img])


def test_remap_bad_maps():
    bad = np.zeros((10, 10), np.float64)
    good = np.zeros((10, 10), np.float32)
    with pytest.raises(StokerError, match="mapx and mapy must be float32"):
        run(lambda x, a, b: fn.experimental.remap(x, a, b), [NOISE], extra=[[bad], [good]])
    with pytest.raises(StokerError, match="mapx is 10x10 but mapy 10x11"):
        run(lambda x, a, b: fn.experimental.remap(x, a, b), [NOISE],
            extra=[[good], [np.zeros((10, 11), np.float32)]])


def test_build_time_errors():
    with pytest.raises(StokerError, match="needs a matrix"):
        run(lambda x: fn.experimental.warp_perspective(x), [NOISE])
    with pytest.raises(StokerError, match="out of range"):
        run(lambda x: fn.clahe(x, tiles_x=4, tiles_y=4, clip_limit=1, bins=128), [NOISE])
    with pytest.raises(StokerError, match="'tiles_x' = 300 is out of range"):
        fn.clahe(fn.external_source(source=[[NOISE]]), tiles_x=300, tiles_y=4, clip_limit=1)


# ---- DALI 2.4 as an oracle (skipped without /work/dali-venv) ------------------------------

DALI_SCRIPT = r"""
import sys, numpy as np
from nvidia.dali import pipeline_def, fn, types
d = dict(np.load(sys.argv[1]))
img = d["img"]
def run(f):
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def p():
        return f(fn.external_source(source=lambda: [img], batch=True, layout="HWC"))
    pp = p(); pp.build(); return np.array(pp.run()[0][0])
res = {
  "water_nn": run(lambda x: fn.water(x, ampl_x=6.0, ampl_y=3.0, freq_x=0.2, freq_y=0.13, phase_x=0.4, phase_y=1.1)),
  "water_lin": run(lambda x: fn.water(x, interp_type=types.INTERP_LINEAR, fill_value=5)),
  "sphere_nn": run(lambda x: fn.sphere(x)),
  "sphere_lin": run(lambda x: fn.sphere(x, interp_type=types.INTERP_LINEAR)),
  "paste": run(lambda x: fn.paste(x, ratio=1.7, paste_x=0.3, paste_y=0.8, fill_value=(4, 5, 6))),
  "jpeg": run(lambda x: fn.jpeg_compression_distortion(x, quality=30)),
  "clahe_pc": run(lambda x: fn.clahe(x, tiles_x=3, tiles_y=5, clip_limit=3.0, luma_only=False)),
  "wp": run(lambda x: fn.experimental.warp_perspective(x, matrix=[0.9, 0.1, 3, -0.05, 1.1, -2, 0.001, -0.002, 1], border_mode="reflect")),
}
np.savez(sys.argv[2], **res)
"""


@pytest.fixture(scope="module")
def dali_results():
    if not os.path.exists(DALI_PY):
        pytest.skip("no DALI oracle venv")
    img = IMAGES[0]
    with tempfile.TemporaryDirectory() as d:
        inp, outp = os.path.join(d, "in.npz"), os.path.join(d, "out.npz")
        np.savez(inp, img=img)
        script = os.path.join(d, "oracle.py")
        with open(script, "w") as f:
            f.write(DALI_SCRIPT)
        r = subprocess.run([DALI_PY, script, inp, outp], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            pytest.skip("DALI oracle failed: " + r.stderr[-300:])
        return dict(np.load(outp))


@pytest.mark.parametrize("key,build,atol,frac", [
    ("water_nn", lambda x: fn.water(x, **WAVE), 0, 0.0),
    ("water_lin", lambda x: fn.water(x, interp_type="linear", fill_value=5), 1, 0.0),
    ("sphere_nn", lambda x: fn.sphere(x), 0, 0.0),
    ("sphere_lin", lambda x: fn.sphere(x, interp_type="linear"), 1, 0.0),
    ("paste", lambda x: fn.paste(x, ratio=1.7, paste_x=0.3, paste_y=0.8, fill_value=(4, 5, 6)), 0, 0.0),
    ("jpeg", lambda x: fn.jpeg_compression_distortion(x, quality=30), 0, 0.0),
    ("clahe_pc", lambda x: fn.clahe(x, tiles_x=3, tiles_y=5, clip_limit=3.0, luma_only=False), 0, 0.0),
    ("wp", lambda x: fn.experimental.warp_perspective(
        x, matrix=[0.9, 0.1, 3, -0.05, 1.1, -2, 0.001, -0.002, 1], border_mode="reflect"), 1, 0.002),
])
def test_matches_dali_oracle(dali_results, key, build, atol, frac):
    out = run1(build, IMAGES[0])
    ref = dali_results[key]
    assert out.shape == ref.shape
    close_u8(out, ref, atol=atol, frac=frac)


# ---- the GPU backends' host side, on the fake GPU ------------------------------------------
# tests/fake_gpu runs the effects table's entries with the kernels' own per-element code
# (src/shared/effects_px.h) on the host, so these check run_gpu's planning, allocation,
# clahe's table pass and the per-sample arguments against the CPU operators; the CUDA
# kernels themselves run on the GPU machine (the schema's gpu_check).

def run_device(build, images, device, extra=None):
    @stoker.pipeline_def(batch_size=len(images), num_threads=2, seed=9,
                         device_id=0 if device == "gpu" else None)
    def pipe():
        x = fn.external_source(source=[images], cycle=True, layout="HWC" if images[0].ndim == 3 else "HW")
        ex = [fn.external_source(source=[e], cycle=True) for e in (extra or [])]
        return build(x.gpu() if device == "gpu" else x, *ex)

    p = pipe()
    p.build()
    out = p.run()
    out = out[0] if isinstance(out, (list, tuple)) else out
    if hasattr(out, "as_cpu"):
        out = out.as_cpu()
    return [np.asarray(out.at(i)) for i in range(len(images))]


GRAYS = [np.ascontiguousarray(cv2.cvtColor(im, cv2.COLOR_RGB2GRAY)) for im in IMAGES]
GPU_CASES = [
    ("water", lambda x, m: fn.water(x, mask=m, interp_type="linear", **WAVE), IMAGES, "mask"),
    ("sphere", lambda x: fn.sphere(x, fill_value=4), IMAGES, None),
    ("jitter", lambda x: fn.jitter(x, nDegree=3, seed=5), IMAGES, None),
    ("warp_perspective", lambda x: fn.experimental.warp_perspective(
        x, matrix=M.flatten().tolist(), border_mode="wrap", size=[30, 40]), IMAGES, None),
    ("median_blur", lambda x: fn.experimental.median_blur(x, window_size=[3, 5]), IMAGES, None),
    ("dilate", lambda x: fn.experimental.dilate(x, mask_size=[3, 5], iterations=2), IMAGES, None),
    ("erode", lambda x: fn.experimental.erode(x, border_mode="reflect"), GRAYS, None),
    ("debayer", lambda x: fn.experimental.debayer(x, blue_position=[0, 1]), GRAYS, None),
    ("clahe_rgb", lambda x: fn.clahe(x, tiles_x=3, tiles_y=2, clip_limit=2.0), IMAGES, None),
    ("clahe_gray", lambda x: fn.clahe(x, tiles_x=4, tiles_y=5, clip_limit=3.0), GRAYS, None),
]
# (paste runs on the GPU through the crop kernel, which the fake does not have)


def test_multi_paste_gpu_on_fake_gpu(fake_gpu):
    b = [np.ascontiguousarray(im[::-1]) for im in IMAGES]
    build = lambda x, y: fn.multi_paste(x, y.gpu() if x.device == "gpu" else y,  # noqa: E731
                                        in_anchors_rel=[0.5, 0.5, 0.0, 0.0], shapes_rel=[0.5, 0.5, 0.3, 0.3],
                                        out_anchors_rel=[0.0, 0.0, 0.4, 0.5], dtype=types.FLOAT)
    cpu = run_device(build, IMAGES, "cpu", [b])
    gpu = run_device(build, IMAGES, "gpu", [b])
    for a, g in zip(cpu, gpu):
        assert a.dtype == np.float32 and a.shape == g.shape and np.array_equal(a, g)


@pytest.mark.parametrize("name,build,images,extra", GPU_CASES, ids=[c[0] for c in GPU_CASES])
def test_gpu_backend_matches_cpu_on_fake_gpu(fake_gpu, name, build, images, extra):
    ex = [[np.int32(i % 2) for i in range(len(images))]] if extra == "mask" else None
    cpu = run_device(build, images, "cpu", ex)
    gpu = run_device(build, images, "gpu", ex)
    for a, b in zip(cpu, gpu):
        assert a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


def test_multi_paste_in_ids_gpu_on_fake_gpu(fake_gpu):
    imgs = [np.ascontiguousarray(im[:40, :60]) for im in (IMAGES[0], IMAGES[1], IMAGES[0][::-1])]
    build = lambda x, ids: fn.multi_paste(x, in_ids=ids, **MOSAIC_ARGS)  # noqa: E731
    gpu = run_device(build, imgs, "gpu", [MOSAIC_IDS])
    for out, ids in zip(gpu, MOSAIC_IDS):
        assert np.array_equal(out, mosaic_reference(imgs, ids, (40, 60)))


def test_remap_gpu_on_fake_gpu(fake_gpu):
    h, w = 30, 44
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    mx = [np.ascontiguousarray(xx * 1.5 + 2), np.ascontiguousarray(xx[::-1] * 0.7)]
    my = [np.ascontiguousarray(yy + 3), np.ascontiguousarray(yy * 1.2)]
    build = lambda x, a, b: fn.experimental.remap(x, a.gpu() if x.device == "gpu" else a,  # noqa: E731
                                                  b.gpu() if x.device == "gpu" else b, interp="linear")
    cpu = run_device(build, IMAGES[:2], "cpu", [mx, my])
    gpu = run_device(build, IMAGES[:2], "gpu", [mx, my])
    for a, b in zip(cpu, gpu):
        assert a.shape == (h, w, 3) and np.array_equal(a, b)


def test_gpu_bad_input_on_fake_gpu(fake_gpu):
    with pytest.raises(StokerError, match="expects an HWC image of a supported type, got 3 dimensions of int32"):
        run_device(lambda x: fn.water(x), [NOISE.astype(np.int32)], "gpu")
    with pytest.raises(StokerError, match="window_size \\[9, 15\\]"):
        run_device(lambda x: fn.experimental.median_blur(x, window_size=[9, 15]), [NOISE], "gpu")
    mats = [np.eye(3, dtype=np.float32)]
    with pytest.raises(StokerError, match="on the GPU input 1 is read on the host"):
        run_device(lambda x, m: fn.experimental.warp_perspective(x, m.gpu()), [NOISE], "gpu", [mats])


def test_warp_perspective_gpu_matrix_input_on_fake_gpu(fake_gpu):
    mats = [M.astype(np.float32), np.array([[1, 0.2, 0], [0, 1, 3], [0, 0.001, 1]], np.float32)]
    build = lambda x, m: fn.experimental.warp_perspective(x, m, border_mode="replicate")  # noqa: E731
    cpu = run_device(build, IMAGES[:2], "cpu", [mats])
    gpu = run_device(build, IMAGES[:2], "gpu", [mats])
    for a, g in zip(cpu, gpu):
        assert np.array_equal(a, g)


@pytest.mark.parametrize("quality", [10, 50, 90])
def test_jpeg_distortion_gpu_emulation_on_fake_gpu(fake_gpu, quality):
    """The GPU's bitstream-free round trip (src/shared/jpeg_emul.h, run by the fake on the
    host) against libjpeg on the CPU: floating-point transforms where libjpeg's are
    integer, so a coefficient on a rounding boundary may land one step apart; most
    pixels are equal and nearly all within a few levels."""
    imgs = IMAGES + [np.ascontiguousarray(IMAGES[0][:5, :3]), np.ascontiguousarray(IMAGES[0][:17, :33])]
    build = lambda x: fn.jpeg_compression_distortion(x, quality=quality)  # noqa: E731
    cpu = run_device(build, imgs, "cpu")
    gpu = run_device(build, imgs, "gpu")
    for a, g in zip(cpu, gpu):
        assert a.shape == g.shape
        d = np.abs(a.astype(int) - g)
        assert (d == 0).mean() > 0.6 and (d > 12).mean() < 0.01, (quality, a.shape, (d > 0).mean(), d.max())
    # tiny images: the chroma plane is padded below its last row (not the image below its
    # last row), as libjpeg does; at the coarsest tables a slip there shows as a colour cast
    tiny = [RNG.integers(0, 256, hw + (3,)).astype(np.uint8) for hw in [(2, 1), (2, 3), (4, 1), (3, 2)]]
    coarse = lambda x: fn.jpeg_compression_distortion(x, quality=3)  # noqa: E731
    for a, g in zip(run_device(coarse, tiny, "cpu"), run_device(coarse, tiny, "gpu")):
        assert np.abs(a.astype(int) - g).max() <= 3
    # a flat colour survives both exactly (only the DC term, far from any boundary)
    flat = [np.full((24, 40, 3), (200, 40, 90), np.uint8)]
    assert np.array_equal(run_device(build, flat, "cpu")[0], run_device(build, flat, "gpu")[0])
