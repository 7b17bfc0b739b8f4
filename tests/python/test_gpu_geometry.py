"""CPU-GPU parity of the geometry and occlusion operators: rotate, warp_affine (matrix as
an argument, per sample, or as an input from transforms.* running on the CPU), erase,
grid_mask and crop. Runs on the GPU machine only (see gpu_parity.py).

Tolerances. Both backends compute coordinates, taps and weights with the same functions
(src/shared/geometry_px.h, each float step rounded alike: no fused multiply-add on the GPU),
so:
- nearest, erase, grid_mask, crop: exact (bytes are copied or filled; the fill is
  converted on the host by the same code);
- linear / cubic to uint8: <= 1 LSB. The float32 results are the same; the CPU converts a
  row's last (w * c) % 16 values with round-half-away-from-zero and the rest (and the
  GPU, every value) with + 0.5 and truncation, which differ only on values a hair below
  .5 (and a -march=native CPU build may fuse multiply-adds);
- float32 output: 1e-3 (the same reasons, in float).
"""
import numpy as np
import pytest

from gpu_parity import compare_op, requires_gpu, run_both

pytestmark = requires_gpu

INTERPS = ["nearest", "linear", "cubic"]


def _atol(interp, dtype="uint8"):
    if dtype.startswith("float"):
        return 1e-3
    return 0 if interp == "nearest" else 1


def _fn():
    from stoker import fn
    return fn


# ---- rotate ----

@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("resize", [None, (120, 160)])
def test_rotate_random_angles(interp, resize):
    fn = _fn()
    compare_op(lambda x, dev, angle: (fn.rotate(x, angle=angle, keep_size=True, interp_type=interp, device=dev),
                                      fn.rotate(x, angle=angle, keep_size=False, interp_type=interp, device=dev)),
               args=lambda: {"angle": fn.random.uniform(range=[-180.0, 180.0])},
               atol=_atol(interp), resize=resize, what=f"rotate {interp}")


@pytest.mark.parametrize("interp", INTERPS)
def test_rotate_fill_and_size(interp):
    fn = _fn()
    compare_op(lambda x, dev, angle, fill: fn.rotate(x, angle=angle, size=[100, 130], fill_value=fill,
                                                     interp_type=interp, device=dev),
               args=lambda: {"angle": fn.random.uniform(range=[-60.0, 60.0]),
                             "fill": fn.random.uniform(range=[0.0, 255.0], shape=[3])},
               atol=_atol(interp), what=f"rotate fill/size {interp}")


@pytest.mark.parametrize("interp", INTERPS)
def test_rotate_edge_angles(interp):
    fn = _fn()
    angles = [0.0, 90.0, -90.0, 180.0, 45.0, 1e-7, 720.0]
    compare_op(lambda x, dev: tuple(fn.rotate(x, angle=a, fill_value=17, interp_type=interp, device=dev)
                                    for a in angles),
               atol=_atol(interp), iterations=1, what=f"rotate edge angles {interp}")


@pytest.mark.parametrize("interp", INTERPS)
def test_rotate_float_input_and_dtypes(interp):
    fn = _fn()
    from stoker import types
    # float32 in, float32 out; uint8 in, int16 out (cast after the float warp); float in, uint8 out
    compare_op(lambda x, dev, angle: (
        fn.rotate(fn.cast(x, dtype=types.FLOAT, device=dev), angle=angle, interp_type=interp, device=dev),
        fn.rotate(x, angle=angle, interp_type=interp, dtype="int16", keep_size=True, device=dev),
        fn.rotate(fn.cast(x, dtype=types.FLOAT, device=dev), angle=angle, interp_type=interp, dtype="uint8",
                  fill_value=[1, 2, 3], device=dev)),
        args=lambda: {"angle": fn.random.uniform(range=[-30.0, 30.0])},
        atol=1e-3 if interp == "nearest" else 1, what=f"rotate dtypes {interp}")


def test_rotate_gray():
    fn = _fn()
    compare_op(lambda x, dev, angle: fn.rotate(x, angle=angle, fill_value=200, device=dev),
               args=lambda: {"angle": fn.random.uniform(range=[-45.0, 45.0])}, gray=True, atol=1,
               what="rotate gray")


# ---- warp_affine ----

MATRIX = [0.9, 0.2, -10.0, -0.15, 1.1, 12.0]


@pytest.mark.parametrize("interp", INTERPS)
@pytest.mark.parametrize("resize", [None, (150, 110)])
def test_warp_affine_constant_matrix(interp, resize):
    fn = _fn()
    compare_op(lambda x, dev: tuple(
        out for inv in (True, False) for out in (
            fn.warp_affine(x, matrix=MATRIX, inverse_map=inv, interp_type=interp, device=dev),
            fn.warp_affine(x, matrix=MATRIX, inverse_map=inv, interp_type=interp, size=[90, 140],
                           fill_value=[10, 128, 250], device=dev))),
        atol=_atol(interp), resize=resize, iterations=1, what=f"warp_affine {interp}")


@pytest.mark.parametrize("interp", INTERPS)
def test_warp_affine_transforms_input(interp):
    """transforms.* matrices (CPU nodes) feeding a GPU warp_affine as input and as argument."""
    fn = _fn()

    def args():
        a = fn.random.uniform(range=[-40.0, 40.0])
        rot = fn.transforms.rotation(angle=a, center=[100.0, 80.0])
        sh = fn.transforms.shear(shear=fn.random.uniform(range=[-0.3, 0.3], shape=[2]))
        return {"rot": rot, "comb": fn.transforms.combine(rot, sh)}

    compare_op(lambda x, dev, rot, comb: (
        fn.warp_affine(x, rot, interp_type=interp, device=dev),
        fn.warp_affine(x, comb, inverse_map=False, fill_value=0, interp_type=interp, device=dev),
        fn.warp_affine(x, matrix=rot, inverse_map=False, size=[128, 128], interp_type=interp, device=dev)),
        args=args, atol=_atol(interp), what=f"warp_affine transforms {interp}")


def test_warp_affine_per_sample_matrix_and_size():
    fn = _fn()

    def args():
        jitter = fn.random.uniform(range=[-0.1, 0.1], shape=[6])
        return {"m": jitter + fn.constant(fdata=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
                "size": fn.random.uniform(range=[50.0, 300.0], shape=[2])}

    compare_op(lambda x, dev, m, size: fn.warp_affine(x, matrix=m, size=size, device=dev),
               args=args, atol=1, what="warp_affine per-sample matrix")


# ---- erase ----

def test_erase_several_regions():
    fn = _fn()

    def args():
        return {"anchor": fn.random.uniform(range=[0.0, 300.0], shape=[6]),
                "shape": fn.random.uniform(range=[10.0, 120.0], shape=[6]),
                "fill": fn.random.uniform(range=[0.0, 255.0], shape=[3])}

    for resize in (None, (200, 240)):
        compare_op(lambda x, dev, anchor, shape, fill: (
            fn.erase(x, anchor=anchor, shape=shape, fill_value=fill, device=dev),
            fn.erase(x, anchor=anchor, shape=shape, fill_value=77, centered_anchor=True, device=dev),
            fn.erase(x, anchor=[10, 20, 50, 60], shape=[30, 40, 300, 10], device=dev)),
            args=args, resize=resize, what="erase regions")


def test_erase_normalized_and_axes():
    fn = _fn()

    def args():
        return {"anchor": fn.random.uniform(range=[0.0, 1.0], shape=[4]),
                "shape": fn.random.uniform(range=[0.05, 0.5], shape=[4])}

    compare_op(lambda x, dev, anchor, shape: (
        fn.erase(x, anchor=anchor, shape=shape, normalized=True, device=dev),
        fn.erase(x, anchor=anchor, shape=shape, normalized_anchor=True, normalized_shape=True, centered_anchor=True,
                 fill_value=[255, 0, 0], device=dev),
        fn.erase(x, anchor=[0.25], shape=[0.5], axis_names="W", normalized=True, fill_value=9, device=dev),
        fn.erase(x, anchor=[1], shape=[1], axis_names="C", fill_value=0, device=dev),
        fn.erase(x, anchor=[5, 5, 0], shape=[100, 80, 2], axis_names="HWC", fill_value=3, device=dev),
        fn.erase(x, device=dev)),
        args=args, what="erase normalized")


def test_erase_float():
    fn = _fn()
    from stoker import types
    compare_op(lambda x, dev: fn.erase(fn.cast(x, dtype=types.FLOAT, device=dev), anchor=[20, 30], shape=[40, 50],
                                       fill_value=[0.5, -1.5, 1e6], device=dev),
               iterations=1, what="erase float")


# ---- grid_mask ----

def test_grid_mask_per_sample():
    fn = _fn()

    def args():
        return {"tile": fn.cast(fn.random.uniform(range=[10.0, 120.0]), dtype=__import__("stoker").types.INT32),
                "ratio": fn.random.uniform(range=[0.0, 1.0]),
                "angle": fn.random.uniform(range=[-3.2, 3.2]),
                "sx": fn.random.uniform(range=[-50.0, 50.0]),
                "sy": fn.random.uniform(range=[-50.0, 50.0])}

    for resize in (None, (224, 224)):
        compare_op(lambda x, dev, tile, ratio, angle, sx, sy: (
            fn.grid_mask(x, tile=tile, ratio=ratio, angle=angle, shift_x=sx, shift_y=sy, device=dev),
            fn.grid_mask(x, device=dev),
            fn.grid_mask(x, tile=1, ratio=1.0, device=dev)),
            args=args, resize=resize, what="grid_mask")


def test_grid_mask_gray_float():
    fn = _fn()
    from stoker import types
    compare_op(lambda x, dev: fn.grid_mask(fn.cast(x, dtype=types.FLOAT, device=dev), tile=37, ratio=0.4, angle=0.3,
                                           device=dev),
               gray=True, iterations=1, what="grid_mask gray float")


# ---- crop ----

def test_crop_positions_and_pad():
    fn = _fn()

    def args():
        return {"px": fn.random.uniform(range=[0.0, 1.0]), "py": fn.random.uniform(range=[0.0, 1.0])}

    for resize in (None, (300, 400)):
        compare_op(lambda x, dev, px, py: (
            fn.crop(x, crop=[200, 250], crop_pos_x=px, crop_pos_y=py, device=dev),
            fn.crop(x, crop_h=900, crop_w=1100, crop_pos_x=px, crop_pos_y=py, out_of_bounds_policy="pad",
                    fill_values=[1, 2, 3], device=dev),
            fn.crop(x, crop=[900, 64], crop_pos_x=px, out_of_bounds_policy="trim_to_shape", device=dev),
            fn.crop(x, crop=[120, 120], crop_pos_x=px, crop_pos_y=py, dtype="float32", device=dev),
            fn.crop(x, crop=[700, 700], out_of_bounds_policy="pad", fill_values=[300], dtype="int16",
                    rounding="truncate", crop_pos_x=px, device=dev)),
            args=args, resize=resize, what="crop")


def test_crop_per_sample_size():
    fn = _fn()
    compare_op(lambda x, dev, c: fn.crop(x, crop=c, out_of_bounds_policy="pad", fill_values=[9], device=dev),
               args=lambda: {"c": fn.random.uniform(range=[1.0, 800.0], shape=[2])}, what="crop per-sample size")


# ---- errors on the GPU ----

def _run_gpu_only(build):
    import stoker
    from gpu_parity import PHOTOS
    from stoker import fn

    @stoker.pipeline_def(batch_size=len(PHOTOS), num_threads=2, device_id=0, seed=3)
    def pipe():
        data, _ = fn.readers.file(files=PHOTOS, name="Reader")
        return build(fn.decoders.image(data).gpu())

    p = pipe()
    p.build()
    return p.run()


def test_gpu_errors_name_the_operator():
    fn = _fn()
    with pytest.raises(Exception, match="warp_affine.*inverted"):
        _run_gpu_only(lambda x: fn.warp_affine(x, matrix=[1, 2, 0, 2, 4, 0], inverse_map=False, device="gpu"))
    with pytest.raises(Exception, match="crop.*leaves"):
        _run_gpu_only(lambda x: fn.crop(x, crop=[5000, 10], device="gpu"))
    with pytest.raises(Exception, match="erase.*anchor"):
        _run_gpu_only(lambda x: fn.erase(x, anchor=[1, 2, 3], shape=[4, 5], device="gpu"))
    with pytest.raises(Exception, match="grid_mask.*tile"):
        _run_gpu_only(lambda x: fn.grid_mask(x, tile=0, device="gpu"))
    with pytest.raises(Exception, match="rotate.*angle"):
        _run_gpu_only(lambda x: fn.rotate(x, angle=float("inf"), device="gpu"))
    # the pipeline still works afterwards
    out = _run_gpu_only(lambda x: fn.rotate(x, angle=10.0, device="gpu"))
    assert len(out[0]) > 0


def test_rotate_gpu_output_stays_on_device_and_matches():
    fn = _fn()
    (cpu, gpu), = run_both(lambda x, dev: fn.rotate(x, angle=33.0, device=dev), iterations=1)
    assert [c.shape for c in cpu[0]] == [g.shape for g in gpu[0]]
