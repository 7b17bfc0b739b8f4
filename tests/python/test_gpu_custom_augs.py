"""Custom augmentations on GPU batches (issue 21 item 1): lists mixing `@augmentation`
functions with the built-in ones, in apply_trivial_augment / apply_rand_augment /
apply_auto_augment and a Policy, on GPU data, against the same pipeline on the CPU.

Two pipelines per case, built alike: the photos decoded on the CPU, then `.gpu()` (GPU)
or `fn.copy` (CPU: one operator too, so every automatically named operator -- the
random draws inside a custom augmentation -- gets the same name, hence the same Philox
stream); the same seed. The decisions (`auto_augment.choose`, named after the call's
position) are the same on both, so each sample takes the same operation and magnitude;
the results are compared sample by sample. Tolerances: the built-in members run through
auto_augment.augment's GPU backend, the fused kernel, whose DALI-convention warps may
round a float32 tie the other way than the CPU (test_gpu_autoaug.py's docstring): atol 1
on at most 0.2% of the elements; torchvision's convention is exact; the custom members
(erase, flip, arithmetic, subscript) are exact.

The `requires_gpu` tests run on the GPU machine (scripts/gpu-check.sh); the `fake_gpu`
ones run in CI too, through tests/fake_gpu/fake_gpu.c (which runs the fused kernel's
interpreter on the host and subscript's gather, but has no erase / flip / arithmetic /
resize kernels, hence their custom augmentations made of subscripts): the dispatch of a
mixed list on GPU data end to end, every built-in's one-step GPU program against the CPU
operator, the DALI-style seed example with enable_conditionals and mixed decoding.
"""
import os

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.auto_aug import augmentations as A
from stoker.auto_aug import auto_augment as aa
from stoker.auto_aug import rand_augment as ra
from stoker.auto_aug import trivial_augment as ta
from stoker.auto_aug.core import Policy, augmentation

from gpu_parity import PHOTOS, assert_close, compare_op, requires_gpu, to_numpy_samples
from test_auto_aug_custom import cutout, shift

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
FAKE = os.path.join(BUILD, "libstk_fake_gpu.so")

SMALL = (96, 128)  # the stand-in backend's tests: its kernels run on one host thread
TOL = {"dali": dict(atol=1, max_mismatch_fraction=0.002), "torchvision": dict(atol=0)}


# ---- custom augmentations (besides test_auto_aug_custom's cutout, seeded, and shift) ----

@augmentation(mag_range=(0.1, 0.5), mag_to_param=lambda m: np.array([m, m], dtype=np.float32))
def cutout_unseeded(data, size, fill_value=128):
    """The seed example's cutout as a DALI user writes it: an unseeded random centre."""
    anchor = fn.random.uniform(range=[0, 1], shape=[2])
    return fn.erase(data, anchor=anchor, shape=size, normalized=True, centered_anchor=True,
                    fill_value=fill_value)


@augmentation
def vflip(data, _):
    return fn.flip(data, horizontal=0, vertical=1)


@augmentation(mag_range=(0.5, 1.5), param_device="auto")
def scale(data, factor):
    """The parameter on the data's device (param_device="auto": the GPU in the GPU
    pipeline, moved there by a named copy), used as data."""
    return fn.cast(data * factor, dtype=types.UINT8)


@augmentation
def upside_down(data, _):
    return data[::-1]


@augmentation(mag_range=(0, 40), randomly_negate=True, mag_to_param=lambda m: np.int32(m))
def crop_rows(data, rows):
    """Keeps the rows from `rows` on (negative: the last -rows), a per-sample slice."""
    return data[rows:]


# ---- running ----

def both(build, files=PHOTOS, resize=None, seed=42, iterations=2, decoder="cpu", conditionals=False):
    """[(cpu outputs, gpu outputs)] per iteration, each a list of per-sample arrays;
    build(images, shape) -> DataNode."""
    def make(dev):
        @stoker.pipeline_def(batch_size=len(files), num_threads=2, device_id=0, seed=seed,
                             enable_conditionals=conditionals)
        def pipe():
            jpegs, _ = fn.readers.file(files=files, name="Reader")
            shape = fn.peek_image_shape(jpegs)
            mixed = dev == "gpu" and decoder == "mixed"
            images = fn.decoders.image(jpegs, output_type=types.RGB, device="mixed" if mixed else "cpu")
            if resize is not None:
                images = fn.resize(images, resize_y=resize[0], resize_x=resize[1])
            if not mixed:
                images = images.gpu() if dev == "gpu" else fn.copy(images)
            return build(images, shape)
        p = pipe()
        p.build()
        return p

    cpu, gpu = make("cpu"), make("gpu")
    out = []
    for _ in range(iterations):
        (c,), (g,) = cpu.run(), gpu.run()
        assert g.device == "gpu" and c.device == "cpu"
        out.append((to_numpy_samples(c), to_numpy_samples(g)))
    return out


def compare(build, tol, **kw):
    results = both(build, **kw)
    for k, (c, g) in enumerate(results):
        assert_close(c, g, what=f"iteration {k}", **tol)
    return results


def suite_plus(conv, extra, use_shape=False):
    return ta.get_trivial_augment_wide_suite(use_shape=use_shape, convention=conv) + extra


# ---- on the GPU ----

@requires_gpu
def test_seed_example_trivial_augment():
    """`ta.apply_trivial_augment(augmentations + [cutout], images, shape=shape, fill_value=0)`."""
    augs = suite_plus("dali", [cutout_unseeded], use_shape=True)
    compare(lambda x, shape: ta.apply_trivial_augment(augs, x, shape=shape, fill_value=0), TOL["dali"])
    compare(lambda x, shape: ta.apply_trivial_augment(augs, x, shape=shape, fill_value=0), TOL["dali"],
            resize=(120, 160), files=PHOTOS * 4)


@requires_gpu
def test_seed_example_on_mixed_decoded_images():
    """On device="mixed" images (nvJPEG: the pixels may differ from libjpeg-turbo's, so only
    the shapes and types are compared; test_seed_example_dali_style_fake compares pixels
    through the stand-in backend, whose mixed decoder is libjpeg-turbo)."""
    augs = suite_plus("dali", [cutout_unseeded], use_shape=True)
    for c, g in both(lambda x, shape: ta.apply_trivial_augment(augs, x, shape=shape, fill_value=0),
                     decoder="mixed"):
        assert [x.shape for x in c] == [x.shape for x in g]
        assert all(x.dtype == np.uint8 for x in g)


@requires_gpu
@pytest.mark.parametrize("n,m", [(1, 20), (2, 12), (3, 30)])
def test_rand_augment(n, m):
    augs = ra.get_rand_augment_suite() + [cutout_unseeded, shift, vflip, scale]
    compare(lambda x, shape: ra.apply_rand_augment(augs, x, n, m, fill_value=0), TOL["dali"],
            files=PHOTOS * 3)


@requires_gpu
def test_policy():
    pol = Policy("mine", 11, [
        [(cutout, 0.8, 3), (A.rotate, 0.5, 5)],
        [(shift, 1.0, 7), (A.invert, 0.3, None)],
        [(A.equalize, 0.6, None), (cutout_unseeded, 1.0, 9)],
        [(vflip, 0.9, None), (A.sharpness.augmentation((0.1, 1.9), False, A.sharpness_kernel_shifted), 1.0, 8)],
        [(A.translate_x_no_shape, 0.7, 6), (scale, 0.5, 2)],
    ])
    compare(lambda x, shape: aa.apply_auto_augment(pol, x, fill_value=0), TOL["dali"], files=PHOTOS * 3)
    compare(lambda x, shape: aa.apply_auto_augment(pol, x, seed=7), TOL["dali"], files=PHOTOS * 3)


@requires_gpu
def test_published_policy_plus_a_custom_augmentation():
    pol = aa.get_image_net_policy(use_shape=True)
    mine = Policy("mine", pol.num_magnitude_bins, list(pol.sub_policies) + [[(cutout_unseeded, 1.0, 4)]])
    compare(lambda x, shape: aa.apply_auto_augment(mine, x, shape=shape), TOL["dali"], files=PHOTOS * 3)


def every_builtin(conv, resize, iterations=3, copies=4):
    """Each built-in of a convention with a custom one beside it (the list is then not
    fusable): auto_augment.augment's GPU backend for every operation, many bins and signs."""
    aug = ta.get_trivial_augment_wide_suite(convention=conv)
    compare(lambda x, shape: ta.apply_trivial_augment(aug + [upside_down], x, seed=3), TOL[conv],
            files=PHOTOS * copies, resize=resize, iterations=iterations)
    extra = [A.solarize_add, A.invert] if conv == "dali" else [A.torchvision.solarize_add, A.torchvision.invert]
    compare(lambda x, shape: ra.apply_rand_augment(extra + [upside_down], x, 2, 7, seed=3), TOL[conv],
            files=PHOTOS * 2, resize=resize)


@requires_gpu
@pytest.mark.parametrize("conv", ["dali", "torchvision"])
def test_every_builtin_in_a_mixed_list(conv):
    every_builtin(conv, (150, 200))
    every_builtin(conv, None)


# ---- auto_augment.augment on its own: every operation, per-sample parameter vectors ----

def _u(lo, hi, shape=None):
    kw = {"shape": shape} if shape else {}
    return lambda: fn.random.uniform(range=[lo, hi], **kw)


AUGMENT_CASES = [  # (op, convention, param node factory, extra arguments)
    ("shear_x", "dali", _u(-0.3, 0.3, [2]), {}),       # [sx, sy] both non-zero
    ("shear_y", "torchvision", _u(-0.3, 0.3), {}),
    ("translate_x", "dali", _u(-0.5, 0.5), {"relative": True}),
    ("translate_y", "dali", _u(-0.5, 0.5, [2]), {"relative": True, "shape": [300.0, 200.0]}),
    ("translate_x", "torchvision", _u(-40, 40), {"interp_type": "cubic", "border": "clamp"}),
    ("rotate", "dali", _u(-135, 135), {"fill_value": [10.0, 20.0, 30.0]}),
    ("rotate", "torchvision", _u(-30, 30), {}),
    ("brightness", "dali", _u(0.1, 1.9), {}),
    ("brightness", "torchvision", _u(0.1, 1.9), {}),
    ("contrast", "dali", _u(0.1, 1.9), {}),
    ("contrast", "torchvision", _u(0.1, 1.9), {}),
    ("color", "dali", _u(0.1, 1.9), {}),
    ("color", "torchvision", _u(0.1, 1.9), {}),
    ("sharpness", "dali", _u(-0.2, 0.4, [9]), {}),     # DALI's 3x3 kernel as the parameter
    ("sharpness", "dali", _u(-0.9, 0.9), {}),
    ("sharpness", "torchvision", _u(0.1, 1.9), {}),
    ("posterize", "dali", lambda: fn.random.choice(a=[0, 128, 192, 240, 255]), {}),
    ("posterize", "torchvision", lambda: fn.random.choice(a=[1, 2, 4, 8]), {}),
    ("solarize", "dali", _u(0, 256), {}),
    ("solarize_add", "torchvision", _u(0, 110), {}),
    ("invert", "dali", None, {}),
    ("equalize", "dali", None, {}),
    ("equalize", "torchvision", None, {}),
    ("auto_contrast", "dali", None, {}),
    ("auto_contrast", "torchvision", None, {}),
]


def augment_case(op, conv, param, extra, resize=None, iterations=2, files=None):
    def build(img, dev, **kw):
        return fn.auto_augment.augment(img, op=op, convention=conv, device=dev, **kw, **extra)
    build.__name__ = f"augment-{op}-{conv}"
    compare_op(build, args=(lambda: {"param": param()}) if param else None, resize=resize,
               iterations=iterations, files=files, **TOL[conv])


@requires_gpu
@pytest.mark.parametrize("op,conv,param,extra", AUGMENT_CASES)
def test_augment_operator(op, conv, param, extra):
    """The built-in members' GPU operator against its CPU operator, photos as they are."""
    augment_case(op, conv, param, extra)


# ---- through the stand-in GPU backend (runs in CI) ----

def test_augment_operator_fake(fake_gpu):
    """The same, every case, through the stand-in's host run of the kernel's interpreter:
    the one-step programs (stk__aa_gpu_step_vec) against the CPU operator."""
    for case in AUGMENT_CASES:
        augment_case(*case, resize=SMALL, iterations=1, files=PHOTOS[:4])

def test_mixed_list_runs_on_gpu_data_fake(fake_gpu):
    """The seed example's shape with custom augmentations the stand-in backend can run
    (subscripts): built, run, and equal to the CPU per sample, in every apply_* and a
    Policy."""
    augs = suite_plus("dali", [upside_down, crop_rows], use_shape=True)
    res = compare(lambda x, shape: ta.apply_trivial_augment(augs, x, shape=shape, fill_value=0), TOL["dali"],
                  files=PHOTOS * 3, resize=SMALL, iterations=1)
    assert any(x.shape[0] != SMALL[0] for _, g in res for x in g)  # crop_rows was chosen
    # more than 16 augmentations: the selection nests (groups of 16), on the GPU too
    many = augs + [upside_down.augmentation(name="again"), A.invert, A.solarize_add]
    compare(lambda x, shape: ta.apply_trivial_augment(many, x, shape=shape, seed=2), TOL["dali"],
            files=PHOTOS * 3, resize=SMALL, iterations=1)
    tv = suite_plus("torchvision", [upside_down, crop_rows])
    compare(lambda x, shape: ra.apply_rand_augment(tv, x, 2, 11, seed=4), TOL["torchvision"], files=PHOTOS * 2,
            resize=SMALL, iterations=1)
    pol = Policy("mine", 11, [[(crop_rows, 0.8, 3), (A.rotate, 0.5, 5)],
                              [(upside_down, 1.0, None), (A.invert, 0.3, None)],
                              [(A.equalize, 0.6, None), (crop_rows, 1.0, 9)]])
    compare(lambda x, shape: aa.apply_auto_augment(pol, x), TOL["dali"], files=PHOTOS * 2, resize=SMALL, iterations=1)


@pytest.mark.parametrize("conv", ["dali", "torchvision"])
def test_every_builtin_in_a_mixed_list_fake(fake_gpu, conv):
    every_builtin(conv, SMALL, iterations=1, copies=2)


def test_seed_example_dali_style_fake(fake_gpu):
    """The seed example as a DALI user writes it: enable_conditionals=True, device="mixed"
    decoding (the stand-in decodes with libjpeg-turbo: the CPU's pixels), shapes from
    peek_image_shape; equal to the CPU pipeline per sample."""
    augs = suite_plus("dali", [upside_down, crop_rows], use_shape=True)

    def build(x, shape):
        x = ta.apply_trivial_augment(augs, x, shape=shape, fill_value=0)
        if fn.random.coin_flip(seed=5):  # a plain `if` on the result, on the GPU too
            x = x[:, ::-1]
        return x
    compare(build, TOL["dali"], decoder="mixed", conditionals=True, iterations=1)


def test_builtin_only_lists_stay_fused_fake(fake_gpu):
    """A built-in-only list keeps the one-launch fused operator on GPU data; a list with a
    custom augmentation takes the per-sample path (a GPU select at the end)."""
    def build(custom):
        def graph(x, shape):
            out = ta.apply_trivial_augment(suite_plus("dali", [upside_down] if custom else [], True), x,
                                           shape=shape)
            names.append(out.op.schema.name)
            return out
        return graph
    names = []
    compare(build(False), TOL["dali"], iterations=1, resize=SMALL)
    compare(build(True), TOL["dali"], iterations=1, resize=SMALL)
    assert names == ["auto_augment.apply"] * 2 + ["select"] * 2


def test_unsupported_augmentation_is_named():
    """An augmentation whose operators cannot take GPU data fails where the pipeline is
    defined, naming it (and the operator)."""
    @augmentation
    def in_python(data, _):  # (zeros_like runs on the CPU only; python_function has a GPU form)
        return fn.zeros_like(data)

    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = fn.constant(idata=[1, 2, 3], shape=[1, 1, 3], dtype=types.UINT8, layout="HWC").gpu()
        return ta.apply_trivial_augment([A.invert, in_python], x)
    with pytest.raises(Exception, match=r"augmentation `in_python` cannot run on GPU data.*zeros_like"):
        pipe().build()
