"""CPU-GPU parity of the filters (gaussian_blur, laplacian, filter) and the noise operators
(noise.gaussian, noise.salt_and_pepper, noise.shot), with tests/python/gpu_parity.py.

Tolerances, and why:
- Convolutions: both backends compute the same float32 products and sums in the same
  order (src/shared/filter_common.h; tests/c/test_filter_emul.c checks the kernels' bodies
  bit for bit on the host), so float outputs are identical (atol 1e-3 only as a guard;
  values are O(1e3)). uint8 outputs: atol 1, because the CPU's float32 -> uint8
  conversion rounds the last (size % 16) elements of a sample with round() and the
  others with + 0.5 and truncation, which differ on x.5 - 2^-25; the GPU uses the latter
  everywhere.
- Noise: counter-based Philox draws and shared inline arithmetic (noise_common.h) give
  bit-identical values: exact (atol 0). Shot noise calls exp/log/lgamma of each
  platform's libm, which may differ by an ULP; an element changes only if a uniform
  lies within ~1e-15 of a threshold, so exact is expected too.

The noise nodes get an explicit `seed` so the CPU and the GPU node share one Philox key.
"""
import numpy as np
import pytest

from gpu_parity import compare_op, requires_gpu, run_both

pytestmark = requires_gpu

from stoker import fn, types  # noqa: E402


def as_float(img, dev):
    return fn.cast(img, dtype=types.FLOAT, device=dev)


# ---- gaussian_blur ----

@pytest.mark.parametrize("resize", [None, (120, 160)])
@pytest.mark.parametrize("gray", [False, True])
def test_gaussian_blur_per_sample_sigma(resize, gray):
    compare_op(lambda img, dev, sigma: fn.gaussian_blur(img, sigma=sigma, device=dev),
               args=lambda: {"sigma": fn.random.uniform(range=[0.3, 4.0])},
               atol=1, resize=resize, gray=gray, what="gaussian_blur sigma")


def test_gaussian_blur_window_and_float():
    compare_op(lambda img, dev, win: fn.gaussian_blur(as_float(img, dev), window_size=win, device=dev),
               args=lambda: {"win": fn.random.uniform(values=[1, 3, 5, 9, 15], dtype="int32")},
               atol=1e-3, what="gaussian_blur window float")
    compare_op(lambda img, dev: fn.gaussian_blur(img, sigma=[1.5, 0.7], window_size=[7, 3],
                                                 dtype="float32", device=dev),
               atol=1e-3, resize=(64, 96), what="gaussian_blur anisotropic")


# ---- laplacian ----

@pytest.mark.parametrize("opts", [
    {},
    {"window_size": 5},
    {"window_size": [3, 7], "smoothing_size": [1, 5]},
    {"window_size": 7, "normalized_kernel": True},
    {"window_size": 5, "scale": [0.5, 2.0]},
])
@pytest.mark.parametrize("dtype", ["", "float32", "int16"])
def test_laplacian_options(opts, dtype):
    compare_op(lambda img, dev: fn.laplacian(img, dtype=dtype, device=dev, **opts),
               atol=1 if dtype != "float32" else 1e-3, what=f"laplacian {opts} {dtype}")


def test_laplacian_per_sample_and_float_input():
    compare_op(lambda img, dev, win, sc: fn.laplacian(as_float(img, dev), window_size=win, scale=sc, device=dev),
               args=lambda: {"win": fn.random.uniform(values=[3, 5, 9], dtype="int32"),
                             "sc": fn.random.uniform(range=[0.1, 2.0])},
               atol=1e-2, resize=(100, 140), gray=True, what="laplacian per-sample")


# ---- filter ----

BORDERS = ["reflect_101", "reflect_1001", "wrap", "clamp", "constant"]


@pytest.mark.parametrize("border", BORDERS)
def test_filter_borders_full_kernel(border):
    # per-sample random 3x4 kernels (not separable: tap by tap), an off-centre anchor
    compare_op(lambda img, dev, k: fn.filter(img, kernel=k, kernel_shape=[3, 4], anchor=[2, 0],
                                             border=border, fill_value=40.0, dtype="float32", device=dev),
               args=lambda: {"k": fn.random.uniform(range=[-1, 1], shape=[12])},
               atol=1e-3, what=f"filter {border}")


@pytest.mark.parametrize("border", BORDERS)
def test_filter_borders_separable_u8(border):
    # a separable 5x5 kernel: the two-pass path
    k = np.outer([1, 4, 6, 4, 1], [1, 2, 3, 2, 1]).astype(np.float64) / 144.0
    compare_op(lambda img, dev: fn.filter(img, kernel=k.ravel().tolist(), border=border, fill_value=200.0,
                                          device=dev),
               atol=1, resize=(90, 70), what=f"filter separable {border}")


@pytest.mark.parametrize("gray", [False, True])
def test_filter_valid_mode_and_float(gray):
    compare_op(lambda img, dev, k: fn.filter(as_float(img, dev), kernel=k, mode="valid", device=dev),
               args=lambda: {"k": fn.random.uniform(range=[-2, 2], shape=[25])},
               atol=1e-3, gray=gray, what="filter valid")
    # large kernel bigger than small images' halves: repeated reflections
    compare_op(lambda img, dev: fn.filter(img, kernel=[1.0 / 81] * 81, border="reflect_1001", device=dev),
               atol=1, resize=(6, 5), what="filter 9x9 on 6x5")


# ---- noise ----

@pytest.mark.parametrize("resize", [None, (100, 120)])
def test_noise_gaussian(resize):
    compare_op(lambda img, dev, sd, m: fn.noise.gaussian(img, stddev=sd, mean=m, seed=7, device=dev),
               args=lambda: {"sd": fn.random.uniform(range=[0, 40]), "m": fn.random.uniform(range=[-5, 5])},
               atol=0, resize=resize, what="noise.gaussian u8")
    compare_op(lambda img, dev: fn.noise.gaussian(as_float(img, dev), stddev=3.0, seed=8, device=dev),
               atol=0, resize=resize, gray=True, what="noise.gaussian float")


@pytest.mark.parametrize("per_channel", [False, True])
def test_noise_salt_and_pepper(per_channel):
    compare_op(lambda img, dev, p, s: fn.noise.salt_and_pepper(img, prob=p, salt_vs_pepper=s,
                                                               per_channel=per_channel, seed=3, device=dev),
               args=lambda: {"p": fn.random.uniform(range=[0, 0.5]), "s": fn.random.uniform(range=[0, 1])},
               atol=0, what=f"salt_and_pepper per_channel={per_channel}")
    compare_op(lambda img, dev: fn.noise.salt_and_pepper(as_float(img, dev), prob=0.3, salt_val=0.5,
                                                         pepper_val=-7.0, per_channel=per_channel, seed=4,
                                                         device=dev),
               atol=0, resize=(50, 60), what="salt_and_pepper float")


def test_noise_shot():
    compare_op(lambda img, dev, f: fn.noise.shot(img, factor=f, seed=11, device=dev),
               args=lambda: {"f": fn.random.uniform(values=[0.0, 0.5, 3.0, 20.0, 60.0])},
               atol=0, what="noise.shot u8")
    compare_op(lambda img, dev: fn.noise.shot(as_float(img, dev), factor=2.5, seed=12, device=dev),
               atol=0, resize=(80, 90), what="noise.shot float")


def test_noise_gpu_statistics():
    # the GPU's numbers are noise too: mean and spread of the added Gaussian noise
    (_, gpu), = run_both(lambda img, dev: (as_float(img, dev),
                                           fn.noise.gaussian(as_float(img, dev), stddev=10.0, seed=5, device=dev)),
                         resize=(200, 200), iterations=1)
    d = np.concatenate([(n - s).ravel() for s, n in zip(gpu[0], gpu[1])])
    assert abs(d.mean()) < 0.2 and abs(d.std() / 10.0 - 1) < 0.02


# ---- errors ----

def run_gpu_only(build):
    """One GPU node on the photos; returns the pipeline's first output (raises on errors)."""
    import stoker
    from gpu_parity import PHOTOS

    @stoker.pipeline_def(batch_size=len(PHOTOS), num_threads=2, device_id=0, seed=1)
    def pipe():
        data, _ = fn.readers.file(files=PHOTOS)
        return build(fn.decoders.image(data, output_type=types.RGB).gpu())

    p = pipe()
    p.build()
    return p.run()


def test_gpu_bad_window_is_a_clear_error():
    with pytest.raises(Exception, match="gaussian_blur.*window_size|window_size.*gaussian_blur"):
        run_gpu_only(lambda img: fn.gaussian_blur(img, window_size=4, device="gpu"))


def test_gpu_bad_noise_type_is_a_clear_error():
    with pytest.raises(Exception, match="not supported"):
        run_gpu_only(lambda img: fn.noise.gaussian(fn.cast(img, dtype=types.FLOAT64, device="gpu"), seed=1,
                                                   device="gpu"))


def test_gpu_filter_as_input_is_refused_clearly():
    with pytest.raises(Exception, match="kernel|filter"):
        run_gpu_only(lambda img: fn.filter(img, fn.constant(fdata=[0.0, 1.0, 0.0], shape=[1, 3]), device="gpu"))
