"""Geometry and filter operators through the Python API, against independent references:
Pillow's Image.rotate / Image.transform(AFFINE) (always), torchvision's functional
rotate / affine on uint8 tensors (when torchvision is importable, e.g. on the GPU
machine), and NumPy float64 formulas (np.pad's border modes for the filter borders).

Pixel centres sit at +0.5 (pixel-edge coordinates); rotations turn about (w/2, h/2),
i.e. ((w-1)/2, (h-1)/2) in pixel indices, as Pillow and torchvision. Tolerances:
bilinear within 1 level (Pillow truncates where we round) where all four taps are inside;
nearest identical except where the source point lies within 0.02 px of a pixel edge
(Pillow's 16.16 fixed point, torchvision's float32 grid)."""

import math
import os

import numpy as np
import pytest

import stoker
from stoker import fn, _schema

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

OPS = {"rotate", "warp_affine", "transforms.rotation", "gaussian_blur", "laplacian",
       "filter", "one_hot"}
pytestmark = pytest.mark.skipif(not OPS <= set(_schema.registry()),
                                reason="geometry operators not in this build")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILL = (10, 20, 30)


def photo(name, size=(161, 120)):
    im = Image.open(os.path.join(ROOT, "data", "photos", name)).convert("RGB")
    return np.asarray(im.resize(size, Image.BILINEAR))


IMAGES = [photo("chelsea.png"), photo("coffee.png")]
H, W = IMAGES[0].shape[:2]


def run(build, images=IMAGES, extra=None):
    """One batch of `images` (and optional per-sample `extra` data) through build()."""
    @stoker.pipeline_def(batch_size=len(images), num_threads=2, seed=9)
    def pipe():
        x = fn.external_source(source=[images], cycle=True, layout="HWC")
        if extra is None:
            return build(x)
        return build(x, fn.external_source(source=[extra], cycle=True))

    outs = pipe().run()
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return [[np.array(tl[i]) for i in range(len(images))] for tl in outs]


def rotate_matrix(angle, h=H, w=W, oh=None, ow=None):
    """Output -> input in pixel-edge coordinates (counter-clockwise on screen)."""
    oh, ow = oh or h, ow or w
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return [c, -s, w / 2 - (c * ow / 2 - s * oh / 2), s, c, h / 2 - (s * ow / 2 + c * oh / 2)]


def source_points(m, oh, ow):
    y, x = np.mgrid[0:oh, 0:ow] + 0.5
    return m[0] * x + m[1] * y + m[2], m[3] * x + m[4] * y + m[5]


def inside_mask(m, oh, ow, h=H, w=W):
    """Pixels whose four bilinear taps are all inside the image."""
    sx, sy = source_points(m, oh, ow)
    u, v = np.floor(sx - 0.5), np.floor(sy - 0.5)
    return (u >= 0) & (u + 1 < w) & (v >= 0) & (v + 1 < h)


def near_edge(m, oh, ow, tol):
    sx, sy = source_points(m, oh, ow)
    return (np.abs(sx - np.round(sx)) < tol) | (np.abs(sy - np.round(sy)) < tol)


def check(got, ref, m, nearest, edge_tol=0.02):
    diff = np.abs(got.astype(int) - ref.astype(int)).max(axis=-1)
    if nearest:
        bad = (diff > 0) & ~near_edge(m, *got.shape[:2], edge_tol)
    else:
        bad = (diff > 1) & inside_mask(m, *got.shape[:2])
    assert not bad.any(), f"{bad.sum()} pixels beyond tolerance, max diff {diff[bad].max()}"


@pytest.mark.parametrize("angle", [23.5, -41.0, 90.0])
@pytest.mark.parametrize("interp", ["nearest", "linear"])
def test_rotate_matches_pillow(angle, interp):
    (got,) = run(lambda x: fn.rotate(x, angle=angle, keep_size=True, interp_type=interp,
                                     fill_value=list(FILL)))
    rs = Image.NEAREST if interp == "nearest" else Image.BILINEAR
    m = rotate_matrix(angle)
    for img, g in zip(IMAGES, got):
        assert g.shape == img.shape
        ref = np.asarray(Image.fromarray(img).rotate(angle, resample=rs, fillcolor=FILL))
        check(g, ref, m, interp == "nearest")


@pytest.mark.parametrize("interp", ["nearest", "linear"])
def test_warp_affine_matches_pillow(interp):
    m = [1.3, 0.4, -20.5, -0.25, 0.8, 35.25]
    (got,) = run(lambda x: fn.warp_affine(x, matrix=m, size=[100, 140], interp_type=interp,
                                          fill_value=list(FILL)))
    rs = Image.NEAREST if interp == "nearest" else Image.BILINEAR
    for img, g in zip(IMAGES, got):
        assert g.shape == (100, 140, 3)
        ref = np.asarray(Image.fromarray(img).transform((140, 100), Image.AFFINE, tuple(m),
                                                        resample=rs, fillcolor=FILL))
        check(g, ref, m, interp == "nearest")


def test_per_sample_angles_and_dali_canvas():
    got, angles = run(lambda x: (lambda a: (fn.rotate(x, angle=a, fill_value=0), a))(
        fn.random.uniform(range=[-40.0, 40.0])))
    assert len({float(a) for a in angles}) == len(angles)
    for img, g, a in zip(IMAGES, got, angles):
        a = float(a)
        c, s = abs(math.cos(math.radians(a))), abs(math.sin(math.radians(a)))
        ow, oh = math.ceil(c * W + s * H - 0.01), math.ceil(c * H + s * W - 0.01)
        ow += (ow % 2) != ((W if s <= c else H) % 2)  # parity of the dominant extent
        oh += (oh % 2) != ((H if s <= c else W) % 2)
        assert g.shape == (oh, ow, 3)
        # Pillow with expand=False on a canvas of the output size, centred: same mapping
        m = rotate_matrix(a, oh=oh, ow=ow)
        ref = np.asarray(Image.fromarray(img).transform((ow, oh), Image.AFFINE, tuple(m),
                                                        resample=Image.BILINEAR))
        check(g, ref, m, False)


def test_transforms_feed_warp_affine():
    def build(x):
        a = fn.random.uniform(range=[-30.0, 30.0])
        fwd = fn.transforms.rotation(angle=-a, center=[W / 2, H / 2])  # where input points go
        inv = fn.transforms.rotation(angle=a, center=[W / 2, H / 2])   # output -> input
        return (fn.rotate(x, angle=a, keep_size=True),
                fn.warp_affine(x, inv),
                fn.warp_affine(x, matrix=fwd, inverse_map=False))

    rot, w_inv, w_fwd = run(build)
    for r, a, b in zip(rot, w_inv, w_fwd):
        # the matrices went through float32: a few values may move by one level
        for other in (a, b):
            d = np.abs(r.astype(int) - other.astype(int))
            assert d.max() <= 1 and (d > 0).mean() < 1e-3


def test_one_hot():
    labels = [np.array([2], np.int32), np.array([7], np.int32)]
    (got,) = run(lambda x, y: fn.one_hot(y, num_classes=4), extra=labels)
    np.testing.assert_array_equal(got[0], [0, 0, 1, 0])
    np.testing.assert_array_equal(got[1], [0, 0, 0, 0])  # out of range: all off


# ---- filters against NumPy: np.pad's modes are the border modes ----

PAD = {"reflect_101": "reflect", "reflect_1001": "symmetric", "wrap": "wrap",
       "clamp": "edge", "constant": "constant"}


def correlate(img, k, ay, ax, border, fill=0.0):
    kh, kw = k.shape
    pads = ((ay, kh - 1 - ay), (ax, kw - 1 - ax), (0, 0))
    extra = {"constant_values": fill} if border == "constant" else {}
    p = np.pad(img.astype(np.float64), pads, mode=PAD[border], **extra)
    win = np.lib.stride_tricks.sliding_window_view(p, (kh, kw), axis=(0, 1))
    return np.einsum("hwcij,ij->hwc", win, k.astype(np.float64))


def to_u8(v):
    return np.clip(np.floor(v + 0.5), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("border", list(PAD))
def test_filter_borders_vs_numpy(border):
    rng = np.random.default_rng(3)
    kernels = [rng.uniform(-1, 1, (3, 4)).astype(np.float32),
               rng.uniform(-1, 1, (5, 2)).astype(np.float32)]
    (got,) = run(lambda x, k: fn.filter(x, k, border=border, fill_value=40.0, anchor=[1, 0],
                                        dtype="float32"), extra=kernels)
    for img, k, g in zip(IMAGES, kernels, got):
        ref = correlate(img, k, 1, 0, border, 40.0)
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, ref, rtol=1e-5, atol=2e-3)


def test_gaussian_and_laplacian_vs_numpy():
    g, lap = run(lambda x: (fn.gaussian_blur(x, sigma=1.3),
                            fn.laplacian(x, dtype="float32")))
    r = 4  # window 2 ceil(3.9) + 1 = 9
    w1 = np.exp(-np.arange(-r, r + 1) ** 2 / (2 * 1.3 ** 2))
    w1 /= w1.sum()
    lap3 = np.array([[2, 0, 2], [0, -8, 0], [2, 0, 2]], np.float64)  # OpenCV's ksize 3
    for img, a, b in zip(IMAGES, g, lap):
        ref = to_u8(correlate(img, np.outer(w1, w1), r, r, "reflect_101"))
        d = np.abs(a.astype(int) - ref.astype(int))
        assert d.max() <= 1 and (d > 0).mean() < 0.01
        np.testing.assert_allclose(b, correlate(img, lap3, 1, 1, "reflect_101"), atol=2e-3)


# ---- torchvision (where it is installed) ----

def _tv():
    tv = pytest.importorskip("torchvision")
    import torch
    import torchvision.transforms.functional as F
    return torch, F, tv


def _tv_edge_matrix(A, h=H, w=W):
    """torchvision's inverse matrix (about the centre) in pixel-edge coordinates."""
    a, b, c, d, e, f = A
    return [a, b, c + w / 2 - (a * w / 2 + b * h / 2), d, e, f + h / 2 - (d * w / 2 + e * h / 2)]


@pytest.mark.parametrize("interp", ["nearest", "linear"])
def test_rotate_matches_torchvision(interp):
    torch, F, _ = _tv()
    from torchvision.transforms import InterpolationMode as IM
    mode = IM.NEAREST if interp == "nearest" else IM.BILINEAR
    angle = 23.5
    (got,) = run(lambda x: fn.rotate(x, angle=angle, keep_size=True, interp_type=interp,
                                     fill_value=0))
    m = _tv_edge_matrix(F._get_inverse_affine_matrix([0.0, 0.0], -angle, [0.0, 0.0], 1.0,
                                                     [0.0, 0.0]))
    for img, g in zip(IMAGES, got):
        t = torch.from_numpy(img.copy()).permute(2, 0, 1).contiguous()
        ref = F.rotate(t, angle, interpolation=mode).permute(1, 2, 0).numpy()
        diff = np.abs(g.astype(int) - ref.astype(int)).max(axis=-1)
        if interp == "nearest":  # float32 grid: a handful of points flip across an edge
            assert ((diff > 0) & ~near_edge(m, H, W, 1e-3)).sum() == 0
        else:  # fill=None is zero padding: equal to a constant border of 0 everywhere
            assert diff.max() <= 1


def test_affine_matches_torchvision_inside():
    torch, F, _ = _tv()
    from torchvision.transforms import InterpolationMode as IM
    kw = dict(angle=12.0, translate=[15, -9], scale=1.15, shear=[8.0, -4.0])
    m = _tv_edge_matrix(F._get_inverse_affine_matrix([0.0, 0.0], kw["angle"],
                                                     [float(t) for t in kw["translate"]],
                                                     kw["scale"], kw["shear"]))
    (got,) = run(lambda x: fn.warp_affine(x, matrix=m, fill_value=list(FILL)))
    for img, g in zip(IMAGES, got):
        t = torch.from_numpy(img.copy()).permute(2, 0, 1).contiguous()
        ref = F.affine(t, interpolation=IM.BILINEAR, fill=[float(v) for v in FILL],
                       **kw).permute(1, 2, 0).numpy()
        # With a fill value torchvision weights the zero-padded sample by the coverage
        # twice on the one-pixel ring at the image edge; elsewhere we agree.
        sx, sy = source_points(m, H, W)
        u, v = np.floor(sx - 0.5), np.floor(sy - 0.5)
        outside = (u + 1 < 0) | (u >= W) | (v + 1 < 0) | (v >= H)
        keep = inside_mask(m, H, W) | outside
        diff = np.abs(g.astype(int) - ref.astype(int)).max(axis=-1)
        assert diff[keep].max() <= 1
