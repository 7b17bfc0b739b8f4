"""CPU-GPU parity of the colour operators (src/cuda/color.cu against src/ops/color*.c).

Tolerances: uint8 input goes through tables that the GPU path builds on the host with
the CPU's own code (every point operation, Pillow's blends), or through integer / float32
arithmetic shared with the CPU in src/ops/color_math.h (Pillow's luma, SMOOTH, blends,
the histogram tables): those are exact (atol=0). The float64 maps (colour matrices,
point maps of float inputs) run the same operations in the same order without fused
multiply-adds, so they should be exact too; they are allowed 1 LSB (uint8 / int16) or
1e-6 (float32) / 1e-3 (float16: one ulp near 1) in case a libm or rounding step differs.
The mean-luma centre of float32 inputs is a sum whose order differs on the GPU, also
within those bounds.
"""
import numpy as np
import pytest

from gpu_parity import compare_op, requires_gpu, run_both

pytestmark = requires_gpu

from stoker import fn  # noqa: E402

DENSE = (120, 160)
U8_AFFINE_ATOL = 1


def uni(lo, hi):
    return lambda: fn.random.uniform(range=[lo, hi])


def to_float(img, dev, dtype="float32"):
    """uint8 -> [0, 1] float (an exact table on both backends)."""
    return fn.brightness(img, dtype=dtype, device=dev)


# ---- brightness / contrast / brightness_contrast ----

@pytest.mark.parametrize("resize", [None, DENSE])
def test_brightness_u8_per_sample(resize):
    compare_op(lambda img, dev, b, s: fn.brightness(img, brightness=b, brightness_shift=s, device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.0, 2.0]), "s": fn.random.uniform(range=[-0.2, 0.2])},
               resize=resize)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int16", "int32"])
def test_brightness_u8_to_other_types(dtype):
    compare_op(lambda img, dev, b: fn.brightness(img, brightness=b, dtype=dtype, device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.5, 1.5])})


@pytest.mark.parametrize("dtype,atol", [("float32", 1e-6), ("float16", 1e-3)])
def test_brightness_float_input(dtype, atol):
    compare_op(lambda img, dev, b: fn.brightness(to_float(img, dev, dtype), brightness=b, brightness_shift=0.1,
                                                 device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.5, 1.5])}, atol=atol)


def test_brightness_float_to_uint8():
    compare_op(lambda img, dev, b: fn.brightness(to_float(img, dev), brightness=b, dtype="uint8", device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.5, 1.5])}, atol=U8_AFFINE_ATOL)


def test_brightness_int16_input():
    compare_op(lambda img, dev, b: fn.brightness(fn.cast(img, dtype="int16", device=dev), brightness=b,
                                                 device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.5, 100.0])}, atol=1)


def test_brightness_pil():
    compare_op(lambda img, dev, b: fn.brightness(img, brightness=b, pil=True, device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.0, 2.5])}, resize=DENSE)


def test_brightness_gray():
    compare_op(lambda img, dev, b: fn.brightness(img, brightness=b, device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.5, 1.5])}, gray=True)


@pytest.mark.parametrize("resize", [None, DENSE])
def test_contrast_center_per_sample(resize):
    compare_op(lambda img, dev, c, cc: fn.contrast(img, contrast=c, contrast_center=cc, device=dev),
               args=lambda: {"c": fn.random.uniform(range=[0.0, 2.0]), "cc": fn.random.uniform(range=[0, 255])},
               resize=resize)


def test_contrast_zero_and_default_centre():
    compare_op(lambda img, dev: (fn.contrast(img, contrast=0.0, device=dev), fn.contrast(img, contrast=1.7, device=dev)))


def test_contrast_pil():
    compare_op(lambda img, dev, c: fn.contrast(img, contrast=c, pil=True, device=dev),
               args=lambda: {"c": fn.random.uniform(range=[0.0, 2.0])})
    compare_op(lambda img, dev: fn.contrast(img, contrast=0.4, pil=True, device=dev), gray=True)


def test_contrast_mean_center_u8():
    compare_op(lambda img, dev, c: (fn.contrast(img, contrast=c, mean_center=True, device=dev),
                                    fn.contrast(img, contrast=c, mean_center=True, dtype="float32", device=dev)),
               args=lambda: {"c": fn.random.uniform(range=[0.0, 2.0])})
    compare_op(lambda img, dev: fn.contrast(img, contrast=0.5, mean_center=True, device=dev), gray=True)


def test_contrast_mean_center_float():
    # the float32 mean is summed in another order on the GPU: well under 1e-6 here
    compare_op(lambda img, dev, c: fn.contrast(to_float(img, dev), contrast=c, mean_center=True, device=dev),
               args=lambda: {"c": fn.random.uniform(range=[0.0, 2.0])}, atol=1e-6)


def test_contrast_float_input():
    compare_op(lambda img, dev, c: fn.contrast(to_float(img, dev), contrast=c, device=dev),
               args=lambda: {"c": fn.random.uniform(range=[0.0, 2.0])}, atol=1e-6)


@pytest.mark.parametrize("resize", [None, DENSE])
def test_brightness_contrast(resize):
    compare_op(lambda img, dev, b, s, c: fn.brightness_contrast(img, brightness=b, brightness_shift=s, contrast=c,
                                                                device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.5, 1.5]), "s": fn.random.uniform(range=[-0.1, 0.1]),
                             "c": fn.random.uniform(range=[0.0, 2.0])},
               resize=resize)


def test_brightness_contrast_float_out_and_in():
    compare_op(lambda img, dev: (fn.brightness_contrast(img, brightness=1.1, contrast=0.8, contrast_center=100,
                                                        dtype="float32", device=dev),
                                 fn.brightness_contrast(to_float(img, dev), brightness=1.1, contrast=0.8,
                                                        dtype="float32", device=dev)),
               atol=1e-6)


# ---- hsv / hue / saturation / color_twist (3x3 colour matrices) ----

@pytest.mark.parametrize("resize", [None, DENSE])
def test_hsv_per_sample(resize):
    compare_op(lambda img, dev, h, s, v: fn.hsv(img, hue=h, saturation=s, value=v, device=dev),
               args=lambda: {"h": fn.random.uniform(range=[-180, 180]), "s": fn.random.uniform(range=[0, 2]),
                             "v": fn.random.uniform(range=[0.5, 1.5])},
               atol=U8_AFFINE_ATOL, resize=resize)


def test_hue_edges_and_bgr():
    compare_op(lambda img, dev: (fn.hue(img, hue=180.0, device=dev), fn.hue(img, hue=-180.0, device=dev),
                                 fn.hue(img, hue=33.0, image_type="BGR", device=dev)),
               atol=U8_AFFINE_ATOL)


def test_hue_per_sample_u8():
    compare_op(lambda img, dev, h: fn.hue(img, hue=h, device=dev),
               args=lambda: {"h": fn.random.uniform(range=[-180, 180])}, atol=U8_AFFINE_ATOL)
    compare_op(lambda img, dev, h: fn.hue(img, hue=h, dtype="float32", device=dev),
               args=lambda: {"h": fn.random.uniform(range=[-180, 180])}, atol=1e-6)


def test_hue_float_tight():
    compare_op(lambda img, dev, h: fn.hue(to_float(img, dev), hue=h, device=dev),
               args=lambda: {"h": fn.random.uniform(range=[-180, 180])}, atol=1e-6)


def test_saturation():
    compare_op(lambda img, dev, s: (fn.saturation(img, saturation=s, device=dev),
                                    fn.saturation(img, saturation=0.0, device=dev),
                                    fn.saturation(img, saturation=s, image_type="BGR", device=dev)),
               args=lambda: {"s": fn.random.uniform(range=[0.0, 2.0])}, atol=U8_AFFINE_ATOL, resize=DENSE)


def test_saturation_pil_exact():
    compare_op(lambda img, dev, s: (fn.saturation(img, saturation=s, pil=True, device=dev),
                                    fn.saturation(img, saturation=0.0, pil=True, device=dev)),
               args=lambda: {"s": fn.random.uniform(range=[-0.5, 2.5])})


def test_color_twist():
    compare_op(lambda img, dev, b, c, h, s: fn.color_twist(img, brightness=b, contrast=c, hue=h, saturation=s,
                                                           device=dev),
               args=lambda: {"b": fn.random.uniform(range=[0.5, 1.5]), "c": fn.random.uniform(range=[0.0, 2.0]),
                             "h": fn.random.uniform(range=[-180, 180]), "s": fn.random.uniform(range=[0.0, 2.0])},
               atol=U8_AFFINE_ATOL)


@pytest.mark.parametrize("dtype,atol", [("float32", 1e-6), ("float16", 1e-3), ("int16", 1), ("uint8", 1)])
def test_color_twist_output_types(dtype, atol):
    compare_op(lambda img, dev: fn.color_twist(img, brightness=1.2, contrast=0.9, hue=20, saturation=1.3, dtype=dtype,
                                               device=dev),
               atol=atol)


def test_color_twist_float_input():
    compare_op(lambda img, dev: fn.color_twist(to_float(img, dev), brightness=1.2, contrast=0.9, hue=-60,
                                               saturation=0.5, image_type="BGR", device=dev),
               atol=1e-6)


# ---- colour spaces and grayscale ----

PAIRS = [("RGB", "GRAY"), ("RGB", "YCbCr"), ("RGB", "BGR"), ("BGR", "YCbCr"), ("BGR", "GRAY"), ("YCbCr", "RGB"),
         ("YCbCr", "BGR"), ("YCbCr", "GRAY")]


@pytest.mark.parametrize("src,dst", PAIRS)
def test_color_space_conversion(src, dst):
    compare_op(lambda img, dev: fn.color_space_conversion(img, image_type=src, output_type=dst, device=dev),
               atol=U8_AFFINE_ATOL)
    compare_op(lambda img, dev: fn.color_space_conversion(to_float(img, dev), image_type=src, output_type=dst,
                                                          device=dev),
               atol=1e-6, resize=DENSE)


@pytest.mark.parametrize("dst", ["RGB", "BGR", "YCbCr", "GRAY"])
def test_color_space_conversion_from_gray(dst):
    compare_op(lambda img, dev: fn.color_space_conversion(img, image_type="GRAY", output_type=dst, device=dev),
               atol=U8_AFFINE_ATOL, gray=True)


def test_grayscale():
    compare_op(lambda img, dev: (fn.grayscale(img, device=dev), fn.grayscale(img, num_output_channels=3, device=dev)))
    compare_op(lambda img, dev: (fn.grayscale(to_float(img, dev), device=dev),
                                 fn.grayscale(to_float(img, dev), num_output_channels=3, device=dev)),
               atol=1e-6, resize=DENSE)


# ---- Pillow's point operations ----

def test_invert():
    compare_op(lambda img, dev: fn.invert(img, device=dev))
    compare_op(lambda img, dev: fn.invert(img, device=dev), gray=True)
    compare_op(lambda img, dev: fn.invert(to_float(img, dev), device=dev), atol=1e-6)


@pytest.mark.parametrize("bits", [0, 1, 4, 8])
def test_posterize_fixed(bits):
    compare_op(lambda img, dev: fn.posterize(img, bits=bits, device=dev))


def test_posterize_per_sample():
    compare_op(lambda img, dev, b: fn.posterize(img, bits=b, device=dev),
               args=lambda: {"b": fn.random.choice(a=[0, 1, 2, 3, 4, 5, 6, 7, 8], dtype="int32")}, resize=DENSE)
    compare_op(lambda img, dev: fn.posterize(img, bits=3, device=dev), gray=True)


@pytest.mark.parametrize("threshold", [0, 1, 128, 255, 256])
def test_solarize_edges(threshold):
    compare_op(lambda img, dev: fn.solarize(img, threshold=threshold, device=dev))


def test_solarize_per_sample_and_float():
    compare_op(lambda img, dev, t: (fn.solarize(img, threshold=t, device=dev), fn.solarize(img, device=dev)),
               args=lambda: {"t": fn.random.uniform(range=[0, 256])})
    compare_op(lambda img, dev, t: fn.solarize(to_float(img, dev), threshold=t, device=dev),
               args=lambda: {"t": fn.random.uniform(range=[0, 1])}, atol=1e-6)


def test_solarize_add():
    compare_op(lambda img, dev, s, t: fn.solarize_add(img, shift=s, threshold=t, device=dev),
               args=lambda: {"s": fn.random.uniform(range=[-128, 128]), "t": fn.random.uniform(range=[0, 256])})
    compare_op(lambda img, dev: (fn.solarize_add(img, shift=300, threshold=256, device=dev),
                                 fn.solarize_add(img, shift=-300, threshold=0, device=dev)), gray=True)
    compare_op(lambda img, dev, s: fn.solarize_add(to_float(img, dev), shift=s, device=dev),
               args=lambda: {"s": fn.random.uniform(range=[-0.5, 0.5])}, atol=1e-6)


# ---- histogram operators ----

@pytest.mark.parametrize("resize", [None, DENSE])
def test_equalize(resize):
    compare_op(lambda img, dev: (fn.equalize(img, device=dev), fn.equalize(img, algorithm="pil", device=dev),
                                 fn.experimental.equalize(img, device=dev),
                                 fn.experimental.equalize(img, algorithm="pil", device=dev)),
               resize=resize)


def test_equalize_gray_and_flat():
    compare_op(lambda img, dev: (fn.equalize(img, device=dev), fn.experimental.equalize(img, device=dev)), gray=True)
    # a constant image: every table is the identity
    compare_op(lambda img, dev: (fn.equalize(fn.contrast(img, contrast=0.0, device=dev), device=dev),
                                 fn.experimental.equalize(fn.contrast(img, contrast=0.0, device=dev), device=dev)))


def test_auto_contrast():
    compare_op(lambda img, dev: (fn.auto_contrast(img, device=dev), fn.auto_contrast(img, cutoff=[2.0, 1.0], device=dev),
                                 fn.auto_contrast(img, cutoff=[5.0], device=dev)))
    compare_op(lambda img, dev: fn.auto_contrast(img, cutoff=[1.0, 3.0], device=dev), gray=True, resize=DENSE)


def test_auto_contrast_per_sample_cutoff():
    compare_op(lambda img, dev, c: fn.auto_contrast(img, cutoff=c, device=dev),
               args=lambda: {"c": fn.random.uniform(range=[0.0, 20.0], shape=[2])})


# ---- sharpness ----

@pytest.mark.parametrize("resize", [None, DENSE])
def test_sharpness(resize):
    compare_op(lambda img, dev, f: (fn.sharpness(img, sharpness=f, device=dev),
                                    fn.sharpness(img, sharpness=0.0, device=dev),
                                    fn.sharpness(img, sharpness=-1.5, device=dev)),
               args=lambda: {"f": fn.random.uniform(range=[0.0, 3.0])}, resize=resize)


def test_sharpness_gray_and_tiny():
    compare_op(lambda img, dev: fn.sharpness(img, sharpness=2.0, device=dev), gray=True)
    compare_op(lambda img, dev: fn.sharpness(img, sharpness=2.0, device=dev), resize=(2, 5))
    compare_op(lambda img, dev: fn.sharpness(img, sharpness=2.0, device=dev), resize=(3, 3))


# ---- errors ----

def test_gpu_errors_name_the_operator():
    # only the GPU call is bad (the CPU one is valid), so the error comes from the GPU path
    with pytest.raises(Exception, match="posterize"):
        run_both(lambda img, dev: fn.posterize(img if dev == "cpu" else to_float(img, dev), bits=2, device=dev))
    with pytest.raises(Exception, match="brightness"):
        run_both(lambda img, dev, b: fn.brightness(img, brightness=b, pil=True,
                                                   dtype="uint8" if dev == "cpu" else "float32", device=dev),
                 args=lambda: {"b": fn.random.uniform(range=[0.5, 1.5])})
    with pytest.raises(Exception, match="out of range"):
        run_both(lambda img, dev, b: fn.color_twist(img, brightness=b if dev == "gpu" else 1.0, device=dev),
                 args=lambda: {"b": fn.random.uniform(range=[-2.0, -1.0])})
