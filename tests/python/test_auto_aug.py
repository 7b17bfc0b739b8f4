"""stoker.auto_aug: magnitude mappings against DALI's numbers and torchvision's formulas
(computed here), operations against Pillow (torchvision's PIL backend) and DALI's
formulas in NumPy, selection statistics, masks and boxes, fused vs generic path,
determinism, custom augmentations, errors."""

import os

import numpy as np
import pytest
from PIL import Image, ImageEnhance, ImageOps

from stoker import fn, pipeline_def
from stoker.auto_aug import augmentations as A
from stoker.auto_aug import auto_augment as aa
from stoker.auto_aug import rand_augment as ra
from stoker.auto_aug import trivial_augment as ta
from stoker.auto_aug.core import Policy, augmentation

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def photo(name="rocket.jpg", size=(160, 120)):
    img = Image.open(os.path.join(ROOT, "data", "photos", name)).convert("RGB")
    return np.asarray(img.resize(size, Image.BILINEAR)).copy()


IMG = photo()


def run(build, images, batch=None, seed=3, threads=2, iters=1):
    batch = batch or len(images)

    @pipeline_def(batch_size=batch, num_threads=threads, seed=seed)
    def pipe():
        x = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        out = build(x)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe()
    p.build()
    res = []
    for _ in range(iters):
        outs = p.run()
        res.append([[np.asarray(o[i]) for i in range(batch)] for o in outs])
    p.close() if hasattr(p, "close") else None
    return res if iters > 1 else res[0]


def decisions_of(policy, n_samples, **kw):
    """(apply's decisions [samples, stages, 5]) for one small image."""
    img = IMG[:8, :8].copy()

    def build(x):
        d = fn.auto_augment.choose(policy=policy, seed=11, **kw)
        return fn.auto_augment.apply(x, decisions=d, policy=policy, **kw)[3]

    out = run(build, [img] * 64, iters=n_samples // 64)
    return np.concatenate([np.stack(b[0]) for b in out])


# ---------------------------------------------------------------------------------
# magnitude mappings
# ---------------------------------------------------------------------------------

OPS = ["identity", "shear_x", "shear_y", "translate_x", "translate_y", "rotate", "brightness",
       "contrast", "color", "sharpness", "posterize", "solarize", "solarize_add", "invert",
       "equalize", "auto_contrast"]


def params_by_op(dec):
    got = {}
    for row in dec.reshape(-1, 5):
        if row[0] >= 0:
            got.setdefault(OPS[int(row[1])], set()).add(round(abs(float(row[4])), 4))
    return got


def test_rand_augment_m9_torchvision_formulas():
    got = params_by_op(decisions_of("rand_augment", 1024, n=2, m=9, convention="torchvision"))
    lin = lambda hi: abs(np.float32(hi * 9 / 30))  # noqa: E731  linspace(0, hi, 31)[9]
    assert got["shear_x"] == {round(float(lin(0.3)), 4)} == {0.09}
    assert got["rotate"] == {9.0}
    for op in ("brightness", "contrast", "color", "sharpness"):  # 1 +- 0.27
        assert got[op] <= {1.27, 0.73} and len(got[op]) == 2
    assert got["posterize"] == {8 - round(9 / ((31 - 1) / 4))} == {7}
    assert got["solarize"] == {255 - 9 * 255 / 30}  # 178.5
    # 150/331 of the 8-pixel test image, truncated
    assert got["translate_x"] == {float(int(np.float32(150 / 331 * 9 / 30) * 8))}


def test_rand_augment_m9_dali_numbers():
    got = params_by_op(decisions_of("rand_augment", 1024, n=2, m=9))
    assert got["shear_x"] == {0.09} and got["rotate"] == {9.0}
    assert got["brightness"] <= {1.27, 0.73} and got["sharpness"] == {0.27}  # kernel's s
    assert got["posterize"] == {254.0}  # round(8 - 4 * 9 / 30) = 7 bits: mask 0b11111110
    assert got["solarize"] == {round(256 - 256 * 9 / 30, 4)}  # 179.2
    assert got["translate_x"] == {30.0}  # 100 px * 9 / 30


def test_auto_augment_policy_magnitudes():
    # DALI: 11 bins; image_net uses color (0.1, 1.9), solarize (0, 256), posterize (0, 4)
    got = params_by_op(decisions_of("auto_augment_image_net", 2048))
    expect_color = {round(float(np.float32(0.1 + 1.8 * b / 10)), 4) for b in (0, 1, 4, 6, 7, 9)}
    assert got["color"] <= expect_color and len(got["color"]) >= 4
    assert got["solarize"] <= {round(float(np.float32(256 * b / 10)), 4) for b in (2, 3, 4, 8, 10)}
    assert got["solarize_add"] <= {float(int(np.float32(110 * b / 10))) for b in (3, 7)}
    # torchvision: 10 bins, posterize 8 - round(b / 2.25)
    got = params_by_op(decisions_of("auto_augment_image_net", 2048, convention="torchvision"))
    assert got["posterize"] <= {8 - round(b / 2.25) for b in (5, 6, 7, 8)}
    assert got["rotate"] <= {round(30 * b / 9, 4) for b in (3, 8, 9)} and len(got["rotate"]) == 3


def test_python_suites_match_the_c_table():
    """The magnitude each Python augmentation maps bin 9 to equals the C table's."""
    for conv in ("dali", "torchvision"):
        dec = decisions_of("rand_augment", 256, n=1, m=9, convention=conv)
        suite = ra.get_rand_augment_suite(convention=conv)
        for row in dec.reshape(-1, 5):
            aug = suite[int(row[0])]
            assert aug._builtin == OPS[int(row[1])]
            mags = aug._get_magnitudes(31)
            if mags is not None and aug._builtin not in ("translate_x", "translate_y"):
                param = aug._map_mag_to_param(mags[9] * (-1 if row[3] and aug.randomly_negate else 1))
                flat = np.ravel(param)
                ref = float(flat[4] if param.size == 9 else flat[np.argmax(np.abs(flat))])
                if param.size == 9:  # DALI's sharpness kernel: centre is 1 + 8 s / 13
                    ref = (ref - 1) * 13 / 8
                assert abs(ref - row[4]) < 1e-5, (conv, aug.name)


# ---------------------------------------------------------------------------------
# operations against Pillow (torchvision) and DALI's formulas
# ---------------------------------------------------------------------------------

def augment(op, param=None, convention="torchvision", img=IMG, **kw):
    if param is not None:
        kw["param"] = [float(v) for v in np.ravel(param)]
    return run(lambda x: fn.auto_augment.augment(x, op=op, convention=convention, **kw), [img])[0][0]


@pytest.mark.parametrize("op,param,ref", [
    ("brightness", 1.27, lambda im: ImageEnhance.Brightness(im).enhance(1.27)),
    ("contrast", 0.73, lambda im: ImageEnhance.Contrast(im).enhance(0.73)),
    ("color", 1.81, lambda im: ImageEnhance.Color(im).enhance(1.81)),
    ("sharpness", 1.9, lambda im: ImageEnhance.Sharpness(im).enhance(1.9)),
    ("posterize", 5, lambda im: ImageOps.posterize(im, 5)),
    ("solarize", 178.5, lambda im: ImageOps.solarize(im, 178.5)),
    ("invert", None, ImageOps.invert),
    ("equalize", None, ImageOps.equalize),
    ("auto_contrast", None, ImageOps.autocontrast),
])
def test_torchvision_colour_ops_equal_pillow(op, param, ref):
    np.testing.assert_array_equal(augment(op, param), np.asarray(ref(Image.fromarray(IMG))))


@pytest.mark.parametrize("op,param,data", [
    ("shear_x", 0.27, (1, 0.27, 0, 0, 1, 0)),
    ("shear_y", -0.3, (1, 0, 0, -0.3, 1, 0)),
    ("translate_x", 30, (1, 0, -30, 0, 1, 0)),
    ("translate_y", -17, (1, 0, 0, 0, 1, 17)),
])
def test_torchvision_geometry_matches_pillow_transform(op, param, data):
    """torchvision's PIL affine: Image.transform(AFFINE, inverse matrix, NEAREST, fill 0).
    Tolerance: pixels whose source point lies within Pillow's 16.16 fixed-point error of
    a pixel edge may pick the neighbour (at most 0.5% here)."""
    im = Image.fromarray(IMG)
    ref = np.asarray(im.transform(im.size, Image.AFFINE, data, Image.NEAREST, fillcolor=(0, 0, 0)))
    got = augment(op, param)
    assert (got != ref).any(axis=2).mean() <= 0.005


def test_torchvision_rotate_matches_pillow():
    im = Image.fromarray(IMG)
    ref = np.asarray(im.rotate(-21.0, resample=Image.NEAREST, fillcolor=(0, 0, 0)))
    assert (augment("rotate", -21.0) != ref).any(axis=2).mean() <= 0.005


def test_dali_colour_ops_against_formulas_and_operators():
    x = IMG.astype(np.float64)
    round_away = lambda v: np.clip(np.floor(v + 0.5), 0, 255).astype(np.uint8)  # noqa: E731
    np.testing.assert_array_equal(augment("brightness", 1.27, "dali"), round_away(x * 1.27))
    luma = (0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]).mean()
    c = float(np.float32(0.73))
    np.testing.assert_array_equal(augment("contrast", c, "dali"), round_away(luma * (1 - c) + c * x))
    np.testing.assert_array_equal(augment("solarize", 179.2, "dali"), np.where(x < 179.2, x, 255 - x))
    np.testing.assert_array_equal(augment("posterize", 0xF0, "dali"), IMG & 0xF0)
    np.testing.assert_array_equal(augment("solarize_add", 66, "dali"), np.where(x < 128, np.minimum(x + 66, 255), x))
    lo, hi = IMG.min(axis=(0, 1)), IMG.max(axis=(0, 1))
    scale = (np.float32(255) / (hi - lo).astype(np.float32))
    ref = np.floor((IMG.astype(np.float32) - lo) * scale + np.float32(0.5)).clip(0, 255)
    assert np.abs(augment("auto_contrast", None, "dali").astype(int) - ref).max() <= 1
    # equalize / colour / sharpness: the same bytes as DALI-defined stoker operators
    (eq, sat, sh), = [run(lambda x: (fn.experimental.equalize(x), fn.saturation(x, saturation=1.6),
                                     fn.experimental.filter(x, kernel=list(A.sharpness_kernel(np.float32(0.4)).ravel()))),
                          [IMG])]
    np.testing.assert_array_equal(augment("equalize", None, "dali"), eq[0])
    np.testing.assert_array_equal(augment("color", 1.6, "dali"), sat[0])
    np.testing.assert_array_equal(augment("sharpness", 0.4, "dali"), sh[0])


def test_dali_shear_is_warp_of_transforms_shear():
    (ref,), = [run(lambda x: (fn.warp_affine(x, fn.transforms.shear(shear=[0.27, 0]), inverse_map=False,
                                             fill_value=[128.0]),), [IMG])]
    np.testing.assert_array_equal(augment("shear_x", [0.27, 0], "dali"), ref[0])


# ---------------------------------------------------------------------------------
# selection statistics
# ---------------------------------------------------------------------------------

def test_rand_augment_draws_each_op_uniformly_with_fair_signs():
    dec = decisions_of("rand_augment", 2048, n=2, m=9)  # 4096 draws over 14 augmentations
    idx = dec[:, :, 0].ravel().astype(int)
    counts = np.bincount(idx, minlength=14)
    expected = idx.size / 14
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 40  # 13 degrees of freedom: p < 1e-4 beyond
    assert abs(dec[:, :, 3].mean() - 0.5) < 0.04


def test_trivial_augment_bins_uniform():
    dec = decisions_of("trivial_augment_wide", 2048)
    counts = np.bincount(dec[:, 0, 2].astype(int), minlength=31)
    assert ((counts - 2048 / 31) ** 2 / (2048 / 31)).sum() < 70  # 30 dof


def test_auto_augment_stage_probabilities():
    n = 4096
    dec = decisions_of("auto_augment_image_net", n)
    pol = aa.get_image_net_policy()
    for stage in (0, 1):
        p = np.mean([sp[stage][1] if len(sp) > stage else 0.0 for sp in pol.sub_policies])
        got = (dec[:, stage, 0] >= 0).mean()
        assert abs(got - p) < 4 * np.sqrt(p * (1 - p) / n), (stage, got, p)


# ---------------------------------------------------------------------------------
# masks, boxes, fused vs generic, determinism
# ---------------------------------------------------------------------------------

GEOMETRIC = ["shear_x", "shear_y", "translate_x", "translate_y", "rotate"]


def test_masks_move_exactly_like_the_image():
    mask = IMG[..., 0].copy()

    def build(x):
        m = fn.external_source(source=lambda: [mask] * 8, batch=True, layout="HW")
        d = fn.auto_augment.choose(policy="rand_augment", n=3, m=17, augmentations=GEOMETRIC, seed=2)
        o = fn.auto_augment.apply(x, m, decisions=d, policy="rand_augment", n=3, m=17,
                                  augmentations=GEOMETRIC, with_mask=True, interp_type="nearest",
                                  fill_value=[0.0])
        return o[0], o[1]

    imgs, masks = run(build, [IMG] * 8)
    for im, mk in zip(imgs, masks):
        np.testing.assert_array_equal(mk, im[..., 0])
    assert any((mk != mask).any() for mk in masks)


def test_colour_ops_leave_masks_alone_and_boxes_follow_translations():
    mask = np.full(IMG.shape[:2], 7, np.uint8)
    box = np.array([[10, 20, 50, 60]], np.float32)
    imgs = [IMG] * 8

    @pipeline_def(batch_size=8, num_threads=2, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
        m = fn.external_source(source=lambda: [mask] * 8, batch=True, layout="HW")
        b = fn.external_source(source=lambda: [box] * 8, batch=True)
        out, mo, bo = ra.rand_augment(x, 1, 20, masks=m, boxes=b, excluded=[
            "shear_x", "shear_y", "rotate"], max_translate_abs=40, seed=4)
        return out, mo, bo, fn.auto_augment.choose(policy="rand_augment", n=1, m=20, seed=4,
                                                   excluded=["shear_x", "shear_y", "rotate"])

    p = pipe()
    p.build()
    out, mo, bo, dec = p.run()
    suite = [a_ for a_ in ra.get_rand_augment_suite() if a_.name not in ("shear_x", "shear_y", "rotate")]
    for i in range(8):
        row = np.asarray(dec[i])[0]
        name = suite[int(row[0])].name
        b = np.asarray(bo[i])[0]
        off = 40 * 20 / 30 * (-1 if row[3] else 1)
        if name == "translate_x":
            np.testing.assert_allclose(b, np.clip([10 + off, 20, 50 + off, 60], 0, [160, 120, 160, 120]), atol=1e-3)
        elif name == "translate_y":
            np.testing.assert_allclose(b, np.clip([10, 20 + off, 50, 60 + off], 0, [160, 120, 160, 120]), atol=1e-3)
        else:
            np.testing.assert_array_equal(b, box[0])
            np.testing.assert_array_equal(np.asarray(mo[i]), mask)


def renamed(augs):
    """The same augmentations under other names: no longer the built-in list, so they run
    through the per-sample selection."""
    return [x.augmentation(name="copy_" + x.name) for x in augs]


@pytest.mark.parametrize("conv", ["dali", "torchvision"])
def test_fused_equals_generic(conv):
    imgs = [photo("rocket.jpg"), photo(size=(97, 64))] * 4
    pairs = [
        (lambda x: ra.apply_rand_augment(ra.get_rand_augment_suite(convention=conv), x, 3, 12, seed=9),
         lambda x: ra.apply_rand_augment(renamed(ra.get_rand_augment_suite(convention=conv)), x, 3, 12, seed=9)),
        (lambda x: ta.apply_trivial_augment(ta.get_trivial_augment_wide_suite(convention=conv), x, seed=9),
         lambda x: ta.apply_trivial_augment(renamed(ta.get_trivial_augment_wide_suite(convention=conv)), x, seed=9)),
    ]
    for fused, generic in pairs:
        f, g = run(fused, imgs, iters=2), run(generic, imgs, iters=2)
        for bf, bg in zip(f, g):
            for a_, b_ in zip(bf[0], bg[0]):
                np.testing.assert_array_equal(a_, b_)
    pol = aa.get_svhn_policy(convention=conv)
    cache = {}
    copy = Policy("copy", pol.num_magnitude_bins, [[(cache.setdefault(id(x), x.augmentation(name="c_" + x.name)), p, m)
                                                    for x, p, m in sp] for sp in pol.sub_policies])
    f = run(lambda x: aa.apply_auto_augment(pol, x, seed=5), imgs)
    g = run(lambda x: aa.apply_auto_augment(copy, x, seed=5), imgs)
    for a_, b_ in zip(f[0], g[0]):
        np.testing.assert_array_equal(a_, b_)


def test_deterministic_across_threads_and_batches():
    imgs = [photo(size=(64, 48))] * 8
    one = run(lambda x: aa.auto_augment(x, "reduced_cifar10", seed=1), imgs, threads=1)
    two = run(lambda x: aa.auto_augment(x, "reduced_cifar10", seed=1), imgs, threads=2)
    for a_, b_ in zip(one[0], two[0]):
        np.testing.assert_array_equal(a_, b_)


# ---------------------------------------------------------------------------------
# custom augmentations and errors
# ---------------------------------------------------------------------------------

@augmentation
def negative(data, _):
    return fn.invert(data)


@augmentation(mag_range=(0, 40), randomly_negate=True)
def turn(data, angle, fill_value=0):
    return fn.rotate(data, angle=angle, keep_size=True, fill_value=fill_value)


def test_custom_augmentations_in_every_apply():
    imgs = [IMG] * 16
    out = run(lambda x: ra.apply_rand_augment([negative, A.identity], x, 1, 5, seed=3), imgs)[0]
    inverted = sum((o == 255 - IMG).all() for o in out)
    kept = sum((o == IMG).all() for o in out)
    assert inverted + kept == 16 and 2 <= inverted <= 14
    out = run(lambda x: ta.apply_trivial_augment([turn, negative], x, fill_value=0, seed=3), imgs)[0]
    assert all(o.shape == IMG.shape for o in out)
    pol = Policy("mine", 5, [[(turn, 1.0, 4), (negative, 0.5, None)]])
    out = run(lambda x: aa.apply_auto_augment(pol, x, seed=3), imgs)[0]
    assert all((o != IMG).any() for o in out)


def test_published_dali_policies():
    p = aa.get_image_net_policy()
    assert p.num_magnitude_bins == 11 and len(p.sub_policies) == 25
    assert [(x.name, pr, m) for x, pr, m in p.sub_policies[15]] == [("rotate", 1.0, 7), ("translate_y", 0.8, 9)]
    assert [(x.name, pr, m) for x, pr, m in p.sub_policies[16]] == [("solarize", 0.8, 4)]
    r = aa.get_reduced_image_net_policy()
    assert [(x.name, pr, m) for x, pr, m in r.sub_policies[12]] == [("equalize", 0.8, None)]
    t = aa.get_image_net_policy(convention="torchvision")
    assert t.num_magnitude_bins == 10
    assert [(x.name, pr, m) for x, pr, m in t.sub_policies[0]] == [("posterize", 0.4, 8), ("rotate", 0.6, 9)]


def test_errors_name_the_problem():
    with pytest.raises(Exception, match="excluded"):
        ra.rand_augment(None, 2, 9, excluded=["not_an_op"])
    with pytest.raises(Exception, match="magnitude bin `m`"):
        ra.apply_rand_augment([negative], None, 1, 31)
    with pytest.raises(Exception, match="not used by any of the augmentations"):
        run(lambda x: ra.apply_rand_augment([negative], x, 1, 3, bogus=1), [IMG])
    with pytest.raises(Exception, match="masks and boxes"):
        run(lambda x: ra.apply_rand_augment([negative], x, 1, 3, masks=x), [IMG])
    with pytest.raises(Exception, match="policy_name"):
        aa.auto_augment(None, "cifar100")
    with pytest.raises(Exception, match="augmentations"):
        run(lambda x: fn.auto_augment.apply(x, augmentations=["warp"]), [IMG])
