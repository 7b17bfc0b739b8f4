"""GPU parity of the fused automatic augmentation (auto_augment.apply on device "gpu").

The host draws every sample's decisions with the same function as the CPU operator (the
same Philox stream for the same seed) and the kernel computes each operation with the
per-pixel code the CPU uses (src/shared/autoaug_pixel.h). Tolerances:
  - torchvision's convention (nearest warps, Pillow's integer / truncating arithmetic,
    tables) is exact: atol 0;
  - DALI's convention (linear warps, float32 sharpness) and cubic warps round float32
    results to uint8:
    the CPU's bulk conversion adds 0.5f in float32 while its conversion of a row's last
    elements rounds in double, so a value within one float32 ulp of .5 may round either
    way: atol 1, on a small fraction of the elements. A warp moves such an off-by-one
    value, never a whole region, so the fraction stays tiny.
Both CPU and GPU nodes are fed the same seed, so they draw the same decisions; the
decisions output (float32 [stages, 5]) must match exactly.
"""
import numpy as np
import pytest

from gpu_parity import compare_op, requires_gpu, run_both, assert_close

from stoker import fn
from stoker.auto_aug import auto_augment as aa
from stoker.auto_aug import rand_augment as ra
from stoker.auto_aug import trivial_augment as ta
from stoker.auto_aug.core import Policy, augmentation

pytestmark = requires_gpu

# A small dense batch for the long parameter sweeps (the CPU side dominates their time);
# the scheme tests also run the ragged batch of the bundled photos.
SMALL = (150, 200)

# DALI rounds float32 results (see the docstring); torchvision is exact.
TOL = {"dali": dict(atol=1, max_mismatch_fraction=0.002), "torchvision": dict(atol=0)}


def fused(policy, conv, seed=7, **kw):
    def build(img, dev):
        outs = fn.auto_augment.apply(img, policy=policy, convention=conv, seed=seed, device=dev, **kw)
        return outs[0], outs[3]
    build.__name__ = f"{policy}-{conv}"
    return build


@pytest.mark.parametrize("conv", ["dali", "torchvision"])
@pytest.mark.parametrize("n,m", [(2, 9), (1, 0), (4, 30)])
def test_rand_augment_operator(conv, n, m):
    compare_op(fused("rand_augment", conv, n=n, m=m), **TOL[conv])
    compare_op(fused("rand_augment", conv, n=n, m=m), resize=(224, 224), **TOL[conv])


@pytest.mark.parametrize("conv", ["dali", "torchvision"])
@pytest.mark.parametrize("policy", ["trivial_augment_wide", "auto_augment_image_net",
                                    "auto_augment_reduced_image_net"])
def test_policies_operator(conv, policy):
    compare_op(fused(policy, conv), iterations=3, **TOL[conv])
    compare_op(fused(policy, conv), resize=(224, 224), iterations=3, **TOL[conv])


@pytest.mark.parametrize("op", ["identity", "shear_x", "shear_y", "translate_x", "translate_y", "rotate",
                                "brightness", "contrast", "color", "sharpness", "posterize", "solarize",
                                "solarize_add", "invert", "equalize", "auto_contrast"])
@pytest.mark.parametrize("conv", ["dali", "torchvision"])
def test_every_operation(op, conv):
    """Each operation on its own over many magnitudes and signs in one pipeline:
    TrivialAugmentWide over a one-entry list (a random bin and sign per sample), or a
    one-stage AutoAugment policy with three bins for the operations only the policies
    configure."""
    try:
        if op in ("invert", "solarize_add"):
            build = fused("auto_augment", conv, augmentations=[op], policy_augmentations=[0, 0, 0],
                          policy_probabilities=[1.0, 1.0, 1.0], policy_magnitude_bins=[0, 5, 9], policy_stages=1)
        else:
            build = fused("trivial_augment_wide", conv, augmentations=[op])
        compare_op(build, iterations=3, resize=SMALL, **TOL[conv])
    except Exception as e:  # an operation the convention's lists do not configure
        if "is not in the" in str(e):
            pytest.skip(f"{op} is not in {conv}'s lists")
        raise


@pytest.mark.parametrize("conv", ["dali", "torchvision"])
@pytest.mark.parametrize("interp", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("border", ["constant", "clamp"])
def test_warp_settings(conv, interp, border):
    tol = dict(atol=0) if interp == "nearest" else TOL["dali"]
    compare_op(fused("rand_augment", conv, n=3, m=20, augmentations=["shear_x", "shear_y", "translate_x",
                                                                       "translate_y", "rotate"],
                     interp_type=interp, border=border, fill_value=[10.0, 20.0, 30.0]), resize=SMALL, **tol)


def test_gray_images():
    compare_op(fused("rand_augment", "torchvision", n=3, m=12), gray=True)
    compare_op(fused("rand_augment", "dali", n=3, m=12), gray=True, **TOL["dali"])


def test_per_sample_shape_argument():
    """DALI's relative translations scaled by a per-sample `shape` argument (a CPU node)."""
    def build(img, dev, shape):
        o = fn.auto_augment.apply(img, policy="rand_augment", n=2, m=25, use_shape=True, shape=shape,
                                  augmentations=["translate_x", "translate_y"], seed=3, device=dev)
        return o[0], o[3]
    compare_op(build, args=lambda: {"shape": fn.random.uniform(range=[100, 400], shape=[2])}, atol=1,
               max_mismatch_fraction=0.002)


# ---------------------------------------------------------------------------------
# the Python layer: rand_augment / auto_augment / trivial_augment_wide on GPU data
# ---------------------------------------------------------------------------------

def python_build(which, conv, masks=False):
    def build(img, dev):
        kw = dict(convention=conv, seed=5)
        if masks:
            kw["masks"] = img  # an HWC mask of the image's size: moved by the same warps
        if which == "rand":
            return ra.rand_augment(img, 2, 9, **kw)
        if which == "trivial":
            return ta.trivial_augment_wide(img, **kw)
        return aa.auto_augment(img, **kw)
    build.__name__ = f"{which}-{conv}-masks{masks}"
    return build


@pytest.mark.parametrize("conv", ["dali", "torchvision"])
@pytest.mark.parametrize("which", ["rand", "trivial", "auto"])
@pytest.mark.parametrize("masks", [False, True])
def test_python_api_on_gpu_data(conv, which, masks):
    compare_op(python_build(which, conv, masks), iterations=2, **TOL[conv])


def test_masks_follow_exactly():
    """Nearest warps under torchvision: the GPU's mask is the CPU's mask, byte for byte,
    and a mask equal to the image's first channel stays equal to it."""
    def build(img, dev):
        o = fn.auto_augment.apply(img, img, policy="rand_augment", n=3, m=17, with_mask=True,
                                  augmentations=["shear_x", "shear_y", "translate_x", "translate_y", "rotate"],
                                  interp_type="nearest", fill_value=[0.0], seed=2, device=dev)
        return o[0], o[1]
    for cpu, gpu in run_both(build, iterations=2):
        assert_close(cpu[1], gpu[1], atol=0, what="mask")
        for im, mk in zip(gpu[0], gpu[1]):
            np.testing.assert_array_equal(im, mk)


def test_boxes_moved_on_the_host():
    def build(img, dev, boxes):
        o = fn.auto_augment.apply(img, boxes, policy="rand_augment", n=2, m=20, with_boxes=True,
                                  augmentations=["translate_x", "translate_y", "shear_x", "rotate"],
                                  seed=4, device=dev)
        return o[0], o[2], o[3]
    compare_op(build, args=lambda: {"boxes": fn.constant(fdata=[10, 20, 50, 60, 0, 0, 30, 30], shape=[2, 4])},
               **TOL["dali"])


def renamed(augs):
    return [x.augmentation(name="copy_" + x.name) for x in augs]


@pytest.mark.parametrize("conv", ["dali", "torchvision"])
def test_gpu_fused_equals_cpu_generic(conv):
    """The generic path (custom list, per-sample conditionals) on the CPU gives what the
    fused operator gives on the GPU for the same seed (the CPU suite shows fused ==
    generic on the CPU)."""
    cases = {
        "rand": (lambda x: ra.apply_rand_augment(ra.get_rand_augment_suite(convention=conv), x, 3, 12, seed=9),
                 lambda x: ra.apply_rand_augment(renamed(ra.get_rand_augment_suite(convention=conv)), x, 3, 12,
                                                 seed=9)),
        "trivial": (lambda x: ta.apply_trivial_augment(ta.get_trivial_augment_wide_suite(convention=conv), x,
                                                       seed=9),
                    lambda x: ta.apply_trivial_augment(renamed(ta.get_trivial_augment_wide_suite(convention=conv)),
                                                       x, seed=9)),
    }
    pol = aa.get_svhn_policy(convention=conv)
    cache = {}
    copy = Policy("copy", pol.num_magnitude_bins,
                  [[(cache.setdefault(id(x), x.augmentation(name="c_" + x.name)), p, m) for x, p, m in sp]
                   for sp in pol.sub_policies])
    cases["auto"] = (lambda x: aa.apply_auto_augment(pol, x, seed=5),
                     lambda x: aa.apply_auto_augment(copy, x, seed=5))
    for name, (fused_fn, generic_fn) in cases.items():
        def build(img, dev):
            return fused_fn(img) if dev == "gpu" else generic_fn(img)
        build.__name__ = f"generic-{name}-{conv}"
        compare_op(build, resize=(120, 160), **TOL[conv])


@augmentation
def _in_python(data, _):  # (zeros_like runs on the CPU only; python_function has a GPU form)
    return fn.zeros_like(data)


_in_python = _in_python.augmentation(name="in_python")


def test_errors_on_the_gpu():
    with pytest.raises(Exception, match="fill_value"):  # 2 values for 3 channels
        run_both(fused("rand_augment", "dali", fill_value=[1.0, 2.0]), iterations=1)
    # a list with custom augmentations runs on GPU data (test_gpu_custom_augs.py); one whose
    # operators cannot take GPU data fails naming the augmentation
    with pytest.raises(Exception, match="augmentation `in_python` cannot run on GPU data"):
        run_both(lambda img, dev: ra.apply_rand_augment(
            [ra.get_rand_augment_suite()[0], _in_python], img, 2, 9), iterations=1)
    with pytest.raises(Exception):  # float32 images: refused on both backends
        run_both(lambda img, dev: fn.auto_augment.apply(fn.cast(img, dtype="float32", device=dev),
                                                        device=dev)[0], iterations=1)
