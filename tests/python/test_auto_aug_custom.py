"""Custom augmentations mixed with built-in ones, on the CPU, written as a DALI user writes
them (issue 21 item 1's seed example: `apply_trivial_augment(augmentations + [cutout],
images, shape=shape, fill_value=0)`), in apply_trivial_augment, apply_rand_augment,
apply_auto_augment and a Policy.

Every sample's result must equal the operation its decisions chose, re-run on its own
with the same magnitude: the reference pipeline below applies each augmentation of the
list to the whole batch through the augmentation's public call (a per-sample
`signed_bin(bin, random_sign=sign)`: the parameter table looked up with
`types.Constant(table)[idx]`, not the apply path's `auto_augment.stage_param`), and
NumPy picks, per sample, the result of the augmentation chosen (stage by stage for
RandAugment and AutoAugment). The decisions come from an `auto_augment.choose` node with
the apply call's arguments and seed (a node given `seed` draws from that seed alone, so
it repeats the call's own decisions). One augmentation (`shift`) is also checked against
its NumPy formula: magnitude bins, `randomly_negate` and `mag_to_param` as DALI defines
them. The GPU variant is tests/python/test_gpu_custom_augs.py.
"""

import os

import numpy as np
import pytest
from PIL import Image

from stoker import fn, pipeline_def, types
from stoker.auto_aug import augmentations as A
from stoker.auto_aug import auto_augment as aa
from stoker.auto_aug import rand_augment as ra
from stoker.auto_aug import trivial_augment as ta
from stoker.auto_aug.core import Policy, augmentation, signed_bin
from stoker.auto_aug.core._args import filter_extra_accepted_kwargs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def photo(name, size):
    img = Image.open(os.path.join(ROOT, "data", "photos", name)).convert("RGB")
    return np.asarray(img.resize(size, Image.BILINEAR)).copy()


NAMES = sorted(f for f in os.listdir(os.path.join(ROOT, "data", "photos")) if f.endswith(".jpg"))
# 32 samples of a few sizes (a ragged batch)
IMAGES = [photo(NAMES[i % len(NAMES)], [(64, 48), (50, 40), (72, 56)][i % 3]) for i in range(32)]


# ---- the custom augmentations, as a DALI user writes them ----

@augmentation(mag_range=(0.1, 0.5), mag_to_param=lambda m: np.array([m, m], dtype=np.float32))
def cutout(data, size, fill_value=128):
    """A square of `size` (fraction of the height and width) erased at a random centre."""
    anchor = fn.random.uniform(range=[0, 1], shape=[2], seed=1234)
    return fn.erase(data, anchor=anchor, shape=size, normalized=True, centered_anchor=True,
                    fill_value=fill_value)


def _round_int(m):
    return np.int32(np.round(m))


@augmentation(mag_range=(0, 60), randomly_negate=True, mag_to_param=_round_int)
def shift(data, delta):
    """Brightness shift by +-delta, saturated."""
    return fn.cast(data + delta, dtype=types.UINT8)


@augmentation
def vflip(data, _):
    return fn.flip(data, horizontal=0, vertical=1)


def builtins(shape=True):
    return [A.rotate, A.invert, A.equalize, A.shear_x.augmentation((0, 0.3), True),
            A.translate_y if shape else A.translate_y_no_shape, A.identity]


# ---- running ----

def run(build, images=IMAGES, seed=3, extra=None):
    """Runs build(x, [extra nodes]) on `images` (one batch); outputs as lists of arrays."""
    extra = extra or []

    @pipeline_def(batch_size=len(images), num_threads=2, seed=seed)
    def pipe():
        x = fn.external_source(source=lambda: images, batch=True, layout="HWC")
        feeds = [fn.external_source(source=(lambda v=v: v), batch=True) for v in extra]
        out = build(x, *feeds)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe()
    p.build()
    outs = p.run()
    return [[np.asarray(o[i]) for i in range(len(images))] for o in outs]


def shape_of(x):
    return fn.shapes(x, dtype=types.FLOAT)


def reference(augs, images, decisions, num_bins, kwargs, skip):
    """Each stage: every augmentation applied alone to every sample with the sample's bin
    and sign; per sample, the one its decisions chose (none: an AutoAugment stage skipped)."""
    current = [im.copy() for im in images]
    for stage in range(decisions[0].shape[0]):
        rows = [d[stage] for d in decisions]
        bins = [np.array(max(int(r[2]), 0), dtype=np.int32) for r in rows]
        signs = [np.array(int(r[3]), dtype=np.int32) for r in rows]

        def build(x, b, s):
            outs = []
            for aug in augs:
                kw = dict(kwargs)
                if "shape" in kw:
                    kw["shape"] = shape_of(x)
                kw = filter_extra_accepted_kwargs(aug.op, kw)
                outs.append(aug(x, magnitude_bin=signed_bin(b, random_sign=s),
                                num_magnitude_bins=num_bins, **kw))
            return outs

        results = run(build, current, extra=[bins, signs])
        for i, r in enumerate(rows):
            k = int(r[0])
            if k >= 0:
                current[i] = results[k][i]
            else:
                assert skip, "only AutoAugment skips stages"
    return current


def decisions(images, seed, **choose_args):
    return run(lambda x: fn.auto_augment.choose(seed=seed, **choose_args), images)[0]


def check(augs, apply, choose_args, num_bins, kwargs, skip=False, seed=17):
    """apply(x) (an apply_* call with `seed`) equals the reference per sample; returns the
    decisions."""
    def build(x):
        kw = dict(kwargs)
        if "shape" in kw:
            kw["shape"] = shape_of(x)
        return apply(x, seed=seed, **kw)

    got = run(build)[0]
    dec = decisions(IMAGES, seed, num_augmentations=len(augs), **choose_args)
    want = reference(augs, IMAGES, dec, num_bins, kwargs, skip)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"sample {i}"
        np.testing.assert_array_equal(g, w, err_msg=f"sample {i}: decisions {dec[i].tolist()}")
    return dec, got


def check_shift(augs, dec, got, num_bins, images=IMAGES):
    """Samples whose last applied augmentation was `shift` and whose earlier stages did
    nothing: NumPy's clip(image +- round(linspace(0, 60, bins)[bin]))."""
    k = augs.index(shift)
    mags = np.linspace(0, 60, num_bins, dtype=np.float32)
    seen = 0
    for i, d in enumerate(dec):
        applied = [r for r in d if r[0] >= 0]
        if len(applied) != 1 or int(applied[0][0]) != k:
            continue
        r = applied[0]
        delta = int(np.round(mags[int(r[2])])) * (-1 if r[3] else 1)
        want = np.clip(images[i].astype(np.int32) + delta, 0, 255).astype(np.uint8)
        np.testing.assert_array_equal(got[i], want, err_msg=f"sample {i}: delta {delta}")
        seen += 1
    return seen


# ---- the four entry points ----

def test_trivial_augment_seed_example():
    """The seed example: built-ins (translations relative to `shape`) + cutout, fill 0."""
    augs = builtins() + [cutout, shift, vflip]
    dec, got = check(augs, lambda x, **kw: ta.apply_trivial_augment(augs, x, **kw),
                     dict(policy="trivial_augment_wide", num_magnitude_bins=31), 31,
                     dict(shape=True, fill_value=0))
    chosen = {int(d[0][0]) for d in dec}
    assert {augs.index(cutout), augs.index(shift), augs.index(A.rotate)} <= chosen
    assert check_shift(augs, dec, got, 31) >= 1


def test_trivial_augment_suite_plus_cutout():
    """The whole TrivialAugmentWide suite (the fused list) + cutout: no longer fusable, so
    the per-sample path, with every built-in configured as in the suite."""
    suite = ta.get_trivial_augment_wide_suite(use_shape=True)
    augs = suite + [cutout]
    check(augs, lambda x, **kw: ta.apply_trivial_augment(augs, x, **kw),
          dict(policy="trivial_augment_wide", num_magnitude_bins=31), 31, dict(shape=True, fill_value=0))


@pytest.mark.parametrize("n,m", [(1, 20), (2, 12)])
def test_rand_augment(n, m):
    augs = builtins(shape=False) + [cutout, shift]
    dec, got = check(augs, lambda x, **kw: ra.apply_rand_augment(augs, x, n, m, **kw),
                     dict(policy="rand_augment", n=n, m=m, num_magnitude_bins=31), 31,
                     dict(fill_value=0))
    if n == 1:
        assert check_shift(augs, dec, got, 31) >= 1


def test_policy():
    pol = Policy("mine", 11, [
        [(cutout, 0.8, 3), (A.rotate, 0.5, 5)],
        [(shift, 1.0, 7), (A.invert, 0.3, None)],
        [(A.equalize, 0.6, None), (cutout, 1.0, 9)],
        [(shift, 0.9, 10)],
    ])
    augs = pol._ordered_augmentations()
    stages, cells = aa._cells(pol, augs)
    dec, got = check(augs, lambda x, **kw: aa.apply_auto_augment(pol, x, **kw),
                     dict(policy="auto_augment", num_magnitude_bins=11, **cells), 11,
                     dict(fill_value=0), skip=True)
    assert any(int(r[0]) < 0 for d in dec for r in d)  # stages skipped by their probability
    assert check_shift(augs, dec, got, 11) >= 1


def test_selection_is_deterministic_by_seed():
    augs = builtins(shape=False) + [cutout, shift]

    def build(seed):
        return lambda x: (ta.apply_trivial_augment(augs, x, seed=seed, fill_value=0),
                          ra.apply_rand_augment(augs, x, 2, 9, seed=seed, fill_value=0))

    one, two, other = run(build(5)), run(build(5)), run(build(6))
    for a_, b_ in zip(one, two):
        for x, y in zip(a_, b_):
            np.testing.assert_array_equal(x, y)
    assert any(x.shape != y.shape or (x != y).any() for x, y in zip(one[0], other[0]))
    # without a seed the draws follow the call's position in the pipeline: the same again
    unseeded = [run(lambda x: ta.apply_trivial_augment(augs, x, fill_value=0))[0] for _ in range(2)]
    for x, y in zip(*unseeded):
        np.testing.assert_array_equal(x, y)


def test_param_device_auto_on_cpu_data():
    """param_device="auto" on CPU data keeps the parameter on the CPU (DALI's rule)."""
    @augmentation(mag_range=(0.5, 1.5), param_device="auto")
    def scale(data, factor):
        return fn.cast(data * factor, dtype=types.UINT8)

    augs = [scale, A.identity]
    check(augs, lambda x, **kw: ta.apply_trivial_augment(augs, x, num_magnitude_bins=5, **kw),
          dict(policy="trivial_augment_wide", num_magnitude_bins=5), 5, {})


def test_masks_with_custom_augmentations_name_them():
    with pytest.raises(Exception, match="masks and boxes.*`cutout`"):
        run(lambda x: ta.apply_trivial_augment([A.rotate, cutout], x, masks=x))


def test_gpu_parameter_for_cpu_data_names_the_augmentation():
    """param_device="gpu" moves the parameter to the GPU (DALI's meaning): on CPU data the
    augmentation's result lands on the GPU, refused where the pipeline is defined."""
    @augmentation(mag_range=(0.5, 1.5), param_device="gpu")
    def gpu_scale(data, factor):
        return fn.cast(data * factor, dtype=types.UINT8)

    with pytest.raises(Exception, match="augmentation `gpu_scale` returns GPU data for CPU data"):
        run(lambda x: ta.apply_trivial_augment([gpu_scale, A.identity], x))
