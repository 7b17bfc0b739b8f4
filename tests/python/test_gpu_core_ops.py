"""CPU-GPU parity of the operators that had GPU kernels first (flip, cast, resize,
crop_mirror_normalize), through the shared harness (gpu_parity.py). GPU machine only."""
import numpy as np

from stoker import fn, types
from gpu_parity import compare_op, requires_gpu, run_both

pytestmark = requires_gpu
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


def test_flip_per_sample_is_exact():
    compare_op(lambda img, dev, h, v: fn.flip(img, horizontal=h, vertical=v, device=dev),
               args=lambda: {"h": fn.random.coin_flip(), "v": fn.random.coin_flip()}, atol=0)


def test_cast_to_float_and_int16_is_exact():
    compare_op(lambda img, dev: (fn.cast(img, dtype=types.FLOAT, device=dev),
                                 fn.cast(img, dtype=types.INT16, device=dev)), atol=0)


def test_resize_linear_and_cubic_within_one_level():
    compare_op(lambda img, dev: (fn.resize(img, resize_x=123, resize_y=77, device=dev),
                                 fn.resize(img, resize_shorter=64, interp_type=types.INTERP_CUBIC, device=dev)),
               atol=1)


def test_crop_mirror_normalize_float_within_rounding():
    compare_op(lambda img, dev, m: fn.crop_mirror_normalize(img, crop=(64, 64), mirror=m, mean=MEAN, std=STD,
                                                            dtype=types.FLOAT, device=dev),
               args=lambda: {"m": fn.random.coin_flip()}, atol=1e-4)


def test_harness_sees_a_real_difference():
    """The harness must fail when the two sides differ (a flip against no flip)."""
    (cpu, gpu), = run_both(lambda img, dev: fn.flip(img, horizontal=1 if dev == "gpu" else 0, device=dev),
                           iterations=1)
    assert any(not np.array_equal(c, g) for c, g in zip(cpu[0], gpu[0]))
