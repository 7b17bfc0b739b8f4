"""CPU-GPU parity of the elementwise math family: math.binary / math.unary / math.clamp (the
operators on data nodes), cast_like, one_hot and constant(device="gpu").

Both backends compute every element with the same functions (src/cuda/math_common.h), so
the comparisons are exact (atol 0) except for the libm functions (exp, log, sin, pow,
atan2, ...): glibc and CUDA's libdevice are each within 1-2 ulp in float64, so after the
rounding to float32 a result may differ by 1 float32 ulp; those use LIBM_ATOL (the values
compared there are below ~20, where 1 ulp < 2e-6). The tests in the last section build
graphs only and run everywhere (CI has no GPU).
"""
import numpy as np
import pytest

import stoker
from stoker import fn, math, types
from stoker._graph import unary

from gpu_parity import PHOTOS, assert_close, compare_op, requires_gpu, run_both, to_numpy_samples

LIBM_ATOL = 4e-6

SMALL = (48, 64)  # a dense batch where the element count matters (one_hot, broadcasts)


def _gpu(node, dev):
    """A CPU argument node as the device's operand (uploaded for the GPU side)."""
    return node.gpu() if dev == "gpu" else node


# ---- subscript and shapes (x[...], x.shape()) ------------------------------------------

@requires_gpu
def test_subscript_and_shapes_exact():
    # the gather kernel against the CPU's copy loop: slices with steps (negative too),
    # integer indices, new axes, ellipsis, per-sample indices; shapes uploaded
    def args():  # made before the device's operators, so both graphs draw the same k
        return {"k": fn.cast(fn.random.uniform(range=[0, 2.4]), dtype=types.INT32)}  # 0, 1 or 2

    def build(img, dev, k):
        return (img[10:50, ::-3], img[..., ::-1], img[5], img[:, 7, 1], img[None, ::2],
                img[k, :, k], img[-1:, 4::-1, 2:], img.shape(), img[3].shape(dtype=types.INT32))
    compare_op(build, args=args, atol=0)


@requires_gpu
def test_clamp_promotion_on_the_gpu():
    # clamp computes in the promoted type's kind (uint8 with int bounds -> int32, with a
    # float bound -> float32), as on the CPU
    def build(img, dev):
        return (math.clamp(img, 10, 200), math.clamp(img, 10.5, 200), math.clamp(img, -5, 300),
                math.clamp(img, np.uint8(10), np.uint8(200)))
    for cpu, gpu in run_both(build):
        for c, g in zip(cpu, gpu):
            assert c[0].dtype == g[0].dtype
            assert_close(c, g, atol=0, what="clamp")


# ---- binary: scalar operands, every operation --------------------------------------------

@requires_gpu
def test_binary_uint8_with_int_scalars_exact():
    # uint8 op int32 scalar -> int32 (DALI's promotion), then the uint8 op uint8 wrap-around
    def build(img, dev):
        u7 = np.uint8(7)
        return (img + 7, img - 200, img * 3, img // 7, img % 7, img // 0, img % 0, img // -3,
                img % -3, math.min(img, 100), math.max(img, 100), img ** 2, img ** -1,
                img & 0x0F, img | 0x30, img ^ 0xFF, img + u7, img * u7, img - np.uint8(250))
    compare_op(build, atol=0)


@requires_gpu
def test_binary_comparisons_give_bool():
    def build(img, dev):
        return (img == 128, img != 128, img < 100, img <= 100, img > 200, img >= 200,
                img < 99.5, img > np.float64(120.25))
    for cpu, gpu in run_both(build):
        for c, g in zip(cpu, gpu):
            assert all(x.dtype == np.bool_ for x in c + g)
            assert_close(c, g, atol=0, what="comparison")


@requires_gpu
def test_binary_float_scalars_exact():
    # uint8 * float32 -> float32: + - * / in float64 then one rounding, identical on both
    def build(img, dev):
        return (img * 0.5 + 0.5, img / 3, 0.25 - img, 7.5 / (img + 1), img // 2.5, img % 2.5,
                img * np.float64(1.0 / 3.0), math.min(img, 99.5), math.max(img * 0.5, 50.25),
                (img - 128) * np.float16(0.1))
    compare_op(build, atol=0)


@requires_gpu
def test_binary_libm_operations():
    def build(img, dev):
        x = img / 255.0
        return math.pow(x, 1.7), math.fpow(img, 0.5), math.atan2(x - 0.5, 0.25), x ** 2.2
    compare_op(build, atol=LIBM_ATOL, resize=SMALL)


@requires_gpu
def test_float_division_by_zero_and_nan_match():
    def build(img, dev):
        zero = img - img  # uint8 zeros
        f = img * 1.0 - 128.0  # float32 with negatives and zeros
        return (f / zero, f // (f * 0.0), f % (f * 0.0), (f / zero) == (f / zero), f / zero > 0,
                math.min(f / zero, 1.0), math.max(f / zero, 1.0))
    compare_op(build, atol=0)


# ---- binary: tensor operands and the promotion table -------------------------------------

PAIRS = [  # (left, right, DALI's result for add)
    ("uint8", "uint8", "uint8"), ("uint8", "int8", "int16"), ("uint8", "int16", "int16"),
    ("uint16", "int32", "int32"), ("uint16", "int16", "int32"), ("uint32", "int8", "int64"),
    ("uint64", "int8", "int64"), ("int32", "float16", "float16"), ("float16", "float32", "float32"),
    ("float32", "float64", "float64"), ("uint8", "float32", "float32"), ("bool", "uint8", "uint8"),
    ("bool", "bool", "bool"), ("int64", "uint32", "int64"), ("uint16", "uint32", "uint32"),
]


@requires_gpu
@pytest.mark.parametrize("left,right,expect", PAIRS)
def test_promotion_table_tensor_tensor(left, right, expect):
    def operand(img, dtype, dev):
        if dtype == "bool":
            return img > 100
        shifted = img * 1.0 - 100.0 if dtype.startswith(("int", "float")) else img
        return fn.cast(shifted, dtype=dtype)

    def build(img, dev):
        a = operand(img, left, dev)
        b = operand(fn.flip(img, horizontal=1), right, dev)
        outs = [a + b, a - b, a * b, math.min(a, b), math.max(a, b), a < b, a == b]
        if "float" not in expect:
            outs += [a // b, a % b, a & b, a | b, a ^ b]
        if expect != "bool":
            outs += [a / b]
        return tuple(outs)

    for cpu, gpu in run_both(build, resize=SMALL):
        assert cpu[0][0].dtype == np.dtype(expect if expect != "bool" else np.bool_)
        for k, (c, g) in enumerate(zip(cpu, gpu)):
            assert_close(c, g, atol=0, what=f"{left} op {right} (output {k})")


@requires_gpu
def test_binary_ragged_tensor_tensor():
    def build(img, dev):
        f = fn.flip(img, horizontal=1, vertical=1)
        return img + f, img - f, img * f, img / f, img // f, img % f, img < f, math.max(img, f)
    compare_op(build, atol=0)


@requires_gpu
def test_binary_broadcasts():
    # [C] against HWC (periodic), [H, 1, C] against HWC (strided), [1] (scalar), and the
    # constant on the GPU or uploaded from the CPU
    def args():
        return {"chan": fn.constant(fdata=[0.5, 1.0, 2.0]),
                "col": fn.constant(fdata=[float(v) for v in np.linspace(0, 1, SMALL[0] * 3)], shape=[SMALL[0], 1, 3]),
                "one": fn.constant(idata=[3], dtype="int16")}

    def build(img, dev, chan, col, one):
        g_chan = fn.constant(fdata=[0.5, 1.0, 2.0], device=dev)
        vec = types.Constant(np.array([3, 1, 2], dtype=np.int16))  # a constant node on img's device
        return img * chan, img * g_chan, chan - img, img + col, col * img, img * one, one - img, img * vec, vec - img
    compare_op(build, args=args, resize=SMALL, atol=0)


@requires_gpu
def test_per_sample_scalar_nodes():
    def args():
        return {"s": fn.random.uniform(range=[0.5, 2.0]), "k": fn.random.uniform(range=[0, 5], dtype="int32")}

    def build(img, dev, s, k):
        return img * s, s - img, img // (k + 1), img > s * 100, math.clamp(img, lo=s * 50, hi=s * 100)
    compare_op(build, args=args, atol=0)


# ---- unary and clamp ---------------------------------------------------------------------

EXACT_UNARY = ("abs", "floor", "ceil", "round", "sqrt")
LIBM_UNARY = ("rsqrt", "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
              "atan", "sinh", "cosh", "tanh")


@requires_gpu
def test_unary_exact():
    def build(img, dev):
        f = img / 25.5 - 5.0  # float32 in [-5, 5]
        outs = [getattr(math, name)(f) for name in EXACT_UNARY]
        outs += [getattr(math, name)(img) for name in EXACT_UNARY]
        outs += [-f, -img, abs(f), abs(fn.cast(img, dtype="int8")), -fn.cast(img, dtype="int16"),
                 stoker.math.sqrt(fn.cast(f, dtype="float64")), math.round(fn.cast(f, dtype="float16"))]
        return tuple(outs)
    compare_op(build, atol=0)


@requires_gpu
@pytest.mark.parametrize("name", LIBM_UNARY)
def test_unary_libm(name):
    def build(img, dev):
        x = img / 255.0  # [0, 1]: inside every function's domain
        return getattr(math, name)(x), getattr(math, name)(fn.cast(x, dtype="float64"))
    compare_op(build, atol=LIBM_ATOL, resize=SMALL)


@requires_gpu
def test_logical_not_and_bool_ops():
    def build(img, dev):
        a, b = img > 100, img < 200
        return (unary("not", a), unary("not", img), unary("not", img * 0.5 - 10.0), a & b, a | b, a ^ b,
                a == b, a + b, a * b, a - b)
    compare_op(build, atol=0)


@requires_gpu
def test_clamp_every_kind():
    def build(img, dev):
        return (math.clamp(img, 20.5, 200.2), math.clamp(img, -5, 300), math.clamp(img * 0.5 - 20, lo=-3.5),
                math.clamp(fn.cast(img, dtype="int16") - 128, -100, 50), math.clamp(img, 200, 100),
                math.clamp(img / (img - img), 0.0, 1.0))
    compare_op(build, atol=0)


# ---- cast_like, one_hot, constant --------------------------------------------------------

@requires_gpu
def test_cast_like_saturates_as_the_cpu():
    def build(img, dev):
        f = img * 2.5 - 100.0
        return (fn.cast_like(f, img), fn.cast_like(f, fn.cast(img, dtype="int8")),
                fn.cast_like(img, f), fn.cast_like(f, fn.cast(img, dtype="float16")))
    compare_op(build, atol=0)


def _blend_pipeline(edges_kind):
    """fn.cast_like(0.5 * image + 0.5 * edges, image) on the CPU and on the GPU, edges from
    a GPU operator (flip), from a CPU operator uploaded (laplacian) or moved with .gpu()."""
    @stoker.pipeline_def(batch_size=len(PHOTOS), num_threads=2, device_id=0, seed=3)
    def pipe():
        data, _ = fn.readers.file(files=PHOTOS)
        image = fn.decoders.image(data, output_type=types.RGB)
        gimage = image.gpu()
        if edges_kind == "gpu_op":
            edges, gedges = fn.flip(image, vertical=1), fn.flip(gimage, vertical=1)
        else:
            edges = fn.laplacian(image, window_size=3, dtype="float32")
            gedges = edges if edges_kind == "uploaded" else edges.gpu()
        cpu = fn.cast_like(0.5 * image + 0.5 * edges, image)
        gpu = fn.cast_like(0.5 * gimage + 0.5 * gedges, gimage)
        return cpu, gpu
    return pipe()


@requires_gpu
@pytest.mark.parametrize("edges_kind", ["gpu_op", "uploaded", "moved"])
def test_cast_like_blend_example(edges_kind):
    p = _blend_pipeline(edges_kind)
    p.build()
    for _ in range(2):
        cpu, gpu = p.run()
        c, g = to_numpy_samples(cpu), to_numpy_samples(gpu)
        assert c[0].dtype == np.uint8
        assert_close(c, g, atol=0, what=f"blend with {edges_kind} edges")


@requires_gpu
def test_one_hot_on_labels():
    def args():
        return {"label": fn.random.uniform(range=[-1, 12], dtype="int32"),
                "on": fn.random.uniform(range=[1, 2])}

    def build(img, dev, label, on):
        lab = _gpu(label, dev)
        pix = img // 26  # uint8 classes 0..9 per pixel
        return (fn.one_hot(lab, num_classes=10),
                fn.one_hot(lab, num_classes=10, on_value=on, off_value=-1.0, dtype="int8"),
                fn.one_hot(pix, num_classes=10, axis=0, dtype="uint8"),
                fn.one_hot(pix, num_classes=8, axis=-1, on_value=0.5),
                fn.one_hot(pix, num_classes=12, axis=2, dtype="float64", axis_name="K"),
                fn.one_hot(img / 25.5, num_classes=10, axis=1, dtype="int32"))
    compare_op(build, args=args, resize=SMALL, atol=0)


@requires_gpu
def test_constant_on_the_gpu():
    def build(img, dev):
        return (fn.constant(fdata=[1.5, -2.0, 3.25], device=dev),
                fn.constant(idata=[1, 2, 3, 4, 5, 6], shape=[2, 3], dtype="uint16", device=dev),
                fn.constant(fdata=[7.0], shape=[4, 4], dtype="float16", layout="HW", device=dev))
    compare_op(build, atol=0)


# ---- errors on the GPU -------------------------------------------------------------------

@requires_gpu
def test_gpu_shape_mismatch_is_a_clear_error():
    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=1)
    def pipe():
        data, _ = fn.readers.file(files=PHOTOS[:2])
        image = fn.decoders.image(data).gpu()
        return image + fn.constant(fdata=[1.0, 2.0], device="gpu")

    p = pipe()
    with pytest.raises(Exception, match="broadcast"):
        p.build()
        p.run()


@requires_gpu
def test_gpu_bitwise_on_floats_is_refused():
    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=1)
    def pipe():
        data, _ = fn.readers.file(files=PHOTOS[:2])
        image = fn.decoders.image(data).gpu()
        return (image * 0.5) & 1

    p = pipe()
    with pytest.raises(Exception, match="does not take float32"):
        p.build()
        p.run()


# ---- graph construction (no GPU needed) --------------------------------------------------

def test_expressions_on_gpu_nodes_build_gpu_operators():
    with stoker.Pipeline(batch_size=2):
        x = fn.random.uniform(shape=[4, 4, 3])
        g = x.gpu()
        for node in (g * 0.5 + 0.5, g < 3, -g, math.sqrt(g), math.clamp(g, 0, 1), g + x, x * g,
                     fn.cast_like(g * 0.5, x), fn.one_hot(g, num_classes=3),
                     fn.constant(fdata=[1.0], device="gpu")):
            assert node.device == "gpu", node
        assert (x * 0.5).device == "cpu"
        tensor_const = types.Constant(np.array([1.0, 2.0, 3.0], dtype=np.float32))
        assert (g * tensor_const).device == "gpu" and (tensor_const - x).device == "cpu"


def test_tensor_constant_operand_becomes_a_constant_node():
    @stoker.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        x = fn.random.uniform(shape=[2, 3], range=[0, 10])
        return x, x * types.Constant(np.array([1.0, 2.0, 3.0], dtype=np.float32)), types.Constant([1, 2, 3]) - x

    p = pipe()
    p.build()
    x, prod, diff = (to_numpy_samples(o) for o in p.run())
    for i in range(2):
        np.testing.assert_array_equal(prod[i], x[i] * np.float32([1, 2, 3]))
        np.testing.assert_array_equal(diff[i], np.float32([1, 2, 3]) - x[i])
