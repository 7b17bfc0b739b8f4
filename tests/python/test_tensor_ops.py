"""The tensor toolbox (issue 22): transpose, reshape, reinterpret, expand_dims, squeeze,
per_frame, slice, pad, cat, stack, element_extract, sequence_rearrange, reductions.*,
normalize, zeros/ones/full(_like), lookup_table, get_property, io.file.read,
decoders.numpy, decoders.inflate, dump_image and dl_tensor_python_function, against NumPy,
zlib, Pillow and values DALI 2.4 gives (checked with DALI's CPU operators and written out
here where noted)."""

import gzip
import io
import os
import zlib

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.errors import StokerError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = os.path.join(ROOT, "data", "photos")

A = [np.arange(24, dtype=np.uint8).reshape(2, 3, 4), np.arange(12, dtype=np.uint8).reshape(1, 3, 4) + 7]
RNG = np.random.default_rng(7)
F = [RNG.normal(size=s).astype(np.float32) for s in ((4, 5, 3), (2, 6, 3), (3, 3, 3))]


def run(graph, data=A, layout="HWC", device_id=None, **kw):
    """Outputs of graph(external_source) as lists of (array, layout) per output."""
    @stoker.pipeline_def(batch_size=len(data), num_threads=2, seed=3, device_id=device_id, **kw)
    def pipe():
        x = fn.external_source(source=lambda: list(data), layout=layout)
        return graph(x)
    outs = pipe().run()
    if not isinstance(outs, (list, tuple)):
        outs = [outs]
    return [[(np.asarray(t.as_cpu().at(i)), t.layout()) for i in range(len(t))] for t in outs]


def one(graph, data=A, layout="HWC", **kw):
    (out,) = run(graph, data, layout, **kw)
    return out


def feed(values, dtype):
    """A per-sample argument node from a list of per-sample values."""
    return fn.external_source(source=lambda: [np.asarray(v, dtype=dtype) for v in values])


def expect_equal(got, want, layout=None):
    for (g, lay), w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_array_equal(g, w)
        if layout is not None:
            assert lay == layout


def fails(graph, match, data=A, layout="HWC"):
    with pytest.raises(StokerError, match=match):
        run(graph, data, layout)


# ---- shape operators ----

def test_transpose_perm_layout_and_default():
    expect_equal(one(lambda x: fn.transpose(x, perm=[2, 0, 1])), [a.transpose(2, 0, 1) for a in A], "CHW")
    expect_equal(one(lambda x: fn.transpose(x)), [a.transpose() for a in A], "CWH")
    expect_equal(one(lambda x: fn.transpose(x, perm=[1, 0, 2], transpose_layout=False)),
                 [a.transpose(1, 0, 2) for a in A], "HWC")
    expect_equal(one(lambda x: fn.transpose(x, perm=[1, 0, 2], output_layout="ABC")),
                 [a.transpose(1, 0, 2) for a in A], "ABC")
    expect_equal(one(lambda x: fn.transpose(x, perm=[2, 1, 0]), F, "XYZ"),
                 [f.transpose(2, 1, 0) for f in F], "ZYX")


def test_transpose_bad_perm():
    fails(lambda x: fn.transpose(x, perm=[0, 0, 1]), "perm is not a permutation")
    fails(lambda x: fn.transpose(x, perm=[0, 1]), "perm has 2 entries")


def test_reshape_forms():
    expect_equal(one(lambda x: fn.reshape(x, shape=[-1, 4])), [a.reshape(-1, 4) for a in A], "")
    expect_equal(one(lambda x: fn.reshape(x, shape=[4, -1], layout="AB"), data=[A[0]]),
                 [A[0].reshape(4, -1)], "AB")
    # DALI: rel_shape=(1, -1) on (2, 3, 4) gives (2, 12); same rank keeps the layout
    expect_equal(one(lambda x: fn.reshape(x, rel_shape=[1, -1])), [a.reshape(a.shape[0], -1) for a in A], "")
    expect_equal(one(lambda x: fn.reshape(x, src_dims=[2, 0, 1])),
                 [a.reshape(a.shape[2], a.shape[0], a.shape[1]) for a in A], "HWC")
    expect_equal(one(lambda x: fn.reshape(x, src_dims=[-1, 0, 1, 2])), [a[None] for a in A], "")
    expect_equal(one(lambda x: fn.reshape(x, feed([[3, 8], [6, 2]], np.int32))),
                 [A[0].reshape(3, 8), A[1].reshape(6, 2)])


def test_reshape_errors():
    fails(lambda x: fn.reshape(x, shape=[5, -1]), "cannot infer")
    fails(lambda x: fn.reshape(x, shape=[5, 5]), "has 25 elements")
    fails(lambda x: fn.reshape(x, shape=[-1, -1]), "at most one -1")
    with pytest.raises(StokerError, match="at most one of"):
        run(lambda x: fn.reshape(x, shape=[24], rel_shape=[1.0]))


def test_reinterpret():
    expect_equal(one(lambda x: fn.reinterpret(x, dtype=types.INT16)), [a.view(np.int16) for a in A], "HWC")
    expect_equal(one(lambda x: fn.reinterpret(x, dtype=types.INT32, shape=[-1])),
                 [a.reshape(-1).view(np.int32) for a in A], "")
    fails(lambda x: fn.reinterpret(x, dtype=types.INT32), "not a multiple",
          data=[np.zeros((2, 3), np.uint8)], layout="HW")


def test_expand_dims_and_squeeze():
    expect_equal(one(lambda x: fn.expand_dims(x, axes=[0, 3], new_axis_names="AB")),
                 [a[None, :, :, None, :] for a in A], "AHWBC")
    expect_equal(one(lambda x: fn.expand_dims(x, axes=[1])), [a[:, None] for a in A], "")
    expect_equal(one(lambda x: fn.squeeze(fn.expand_dims(x, axes=[0, 3], new_axis_names="AB"), axes=[0])),
                 [a[:, :, None, :] for a in A], "HWBC")
    expect_equal(one(lambda x: fn.squeeze(fn.expand_dims(x, axes=[0, 3], new_axis_names="AB"),
                                          axis_names="BA")), A, "HWC")
    expect_equal(one(lambda x: fn.squeeze(fn.expand_dims(x, axes=[3]), axes=[-1]), layout=""), A, "")
    fails(lambda x: fn.squeeze(x, axes=[0]), "only unit axes")
    fails(lambda x: fn.expand_dims(x, axes=[4]), "out of")
    with pytest.raises(StokerError, match="exactly one of axes and axis_names"):
        run(lambda x: fn.squeeze(x))


def test_per_frame_layouts():
    assert one(lambda x: fn.per_frame(x), layout="")[0][1] == "F**"     # DALI: 'F**'
    assert one(lambda x: fn.per_frame(x, replace=True))[0][1] == "FWC"  # DALI: 'FWC'
    fails(lambda x: fn.per_frame(x), "already has layout")


# ---- slice ----

SLICE_CASES = [
    # (kwargs, numpy slice of an HWC array); default axes are W then H (DALI's "WH")
    (dict(start=[1, 0], shape=[2, 1]), lambda a: a[0:1, 1:3]),
    (dict(start=[1, 0], end=[3, 1]), lambda a: a[0:1, 1:3]),
    (dict(rel_start=[0.5, 0.0], rel_shape=[0.5, 1.0]), None),
    (dict(start=[1], shape=[2], axes=[2]), lambda a: a[:, :, 1:3]),
    (dict(start=[1], shape=[2], axis_names="C"), lambda a: a[:, :, 1:3]),
    (dict(start=[0, 1], shape=[1, 2], axes=[0, 1]), lambda a: a[0:1, 1:3]),
]


@pytest.mark.parametrize("k", range(len(SLICE_CASES)))
def test_slice_matches_numpy(k):
    kw, ref = SLICE_CASES[k]
    got = one(lambda x: fn.slice(x, **kw))
    if ref is None:  # rel_start 0.5 of W=3 -> round(1.5) = 2; rel_shape 0.5 -> end round(3.0)
        ref = lambda a: a[0:a.shape[0], 2:3]  # noqa: E731
    expect_equal(got, [ref(a) for a in A], "HWC")


def test_slice_rounding_as_dali():
    # DALI 2.4: rel_start=(0.3, 0), rel_shape=(0.5, 1) on W=3 takes column 1 only
    got = one(lambda x: fn.slice(x, rel_start=[0.3, 0.0], rel_shape=[0.5, 1.0]))
    expect_equal(got, [a[:, 1:2] for a in A])
    # rel_start=(0.6, 0.5), rel_end=(1, 1): H=1 sample starts at round(0.5) = 1 -> empty
    got = one(lambda x: fn.slice(x, rel_start=[0.6, 0.5], rel_end=[1.0, 1.0]))
    expect_equal(got, [A[0][1:2, 2:3], A[1][1:1, 2:3]])


def test_slice_inputs_normalized_and_absolute():
    def sl(anchor, shape, dtype, **kw):
        return lambda x: fn.slice(x, feed([anchor] * 2, dtype), feed([shape] * 2, dtype), **kw)
    expect_equal(one(sl([0.5, 0.0], [0.5, 1.0], np.float32)), [a[:, 2:3] for a in A])
    expect_equal(one(sl([1, 0], [2, 1], np.int32)), [a[0:1, 1:3] for a in A])
    expect_equal(one(sl([1.4, 0.0], [1.6, 1.0], np.float32, normalized_anchor=False,
                        normalized_shape=False)), [a[0:1, 1:3] for a in A])


def test_slice_per_sample_start():
    got = one(lambda x: fn.slice(x, start=feed([[0, 1], [2, 0]], np.float32), shape=[1, 1]))
    expect_equal(got, [A[0][1:2, 0:1], A[1][0:1, 2:3]])


def test_slice_out_of_bounds_policies():
    # DALI 2.4: start=(-1, 0), shape=(5, 2) with per-channel fill (9, 8, 7, 6)
    got = one(lambda x: fn.slice(x, start=[-1, 0], shape=[5, 2], out_of_bounds_policy="pad",
                                 fill_values=[9, 8, 7, 6]))
    for (g, _), a in zip(got, A):
        want = np.empty((2, 5, 4), np.uint8)
        want[:] = np.array([9, 8, 7, 6], np.uint8)
        want[:a.shape[0], 1:4] = a
        np.testing.assert_array_equal(g, want)
    got = one(lambda x: fn.slice(x, start=[2, 0], shape=[5, 1], out_of_bounds_policy="trim_to_shape"))
    expect_equal(got, [a[0:1, 2:3] for a in A])
    fails(lambda x: fn.slice(x, start=[2, 0], shape=[5, 1]), "leaves axis 1")
    fails(lambda x: fn.slice(x, start=[-1, 0], shape=[5, 2], out_of_bounds_policy="pad",
                             fill_values=[1, 2, 3]), "one per channel \\(4 here")


def test_slice_dtype_and_bad_arguments():
    expect_equal(one(lambda x: fn.slice(x, start=[0, 0], shape=[1, 1], dtype=types.FLOAT)),
                 [a[0:1, 0:1].astype(np.float32) for a in A])
    fails(lambda x: fn.slice(x, start=[0, 0, 0], shape=[1, 1, 1]), "3 values for 2 slice axes")
    with pytest.raises(StokerError, match="one of shape, rel_shape, end"):
        run(lambda x: fn.slice(x, start=[0, 0], shape=[1, 1], end=[1, 1]))


# ---- pad ----

def test_pad_to_shape_and_align():
    got = one(lambda x: fn.pad(x, axes=[0], shape=[4], fill_value=5))
    for (g, _), a in zip(got, A):
        want = np.full((4, 3, 4), 5, np.uint8)
        want[:a.shape[0]] = a
        np.testing.assert_array_equal(g, want)
    got = one(lambda x: fn.pad(x, axis_names="WC", shape=[1, 1], align=[2, 3], fill_value=-1.0), F, "HWC")
    for (g, _), f in zip(got, F):
        h, w, c = f.shape
        want = np.full((h, -(-w // 2) * 2, -(-c // 3) * 3), -1.0, np.float32)
        want[:, :w, :c] = f
        np.testing.assert_array_equal(g, want)
    # the fill converts as a C cast, as DALI's: 300 -> 44, -1 -> 255, 2.7 -> 2 in uint8
    for v, w in ((300, 44), (-1, 255), (2.7, 2)):
        got = one(lambda x: fn.pad(x, axes=[1], shape=[4], fill_value=v))
        assert (got[0][0][:, 3] == w).all()
        got = one(lambda x: fn.slice(x, start=[0], shape=[4], axes=[1], out_of_bounds_policy="pad",
                                     fill_values=[v]))
        assert (got[0][0][:, 3] == w).all()


def test_pad_smaller_shape_only_aligns():
    # DALI: an extent smaller than the sample's pads only for alignment (shape=1: align only)
    got = one(lambda x: fn.pad(x, axes=[0, 1], shape=[1, 1], align=[1, 2], fill_value=9))
    for (g, _), a in zip(got, A):
        want = np.full((a.shape[0], 4, 4), 9, np.uint8)
        want[:, :3] = a
        np.testing.assert_array_equal(g, want)


def test_pad_batch_max_needs_gpu_on_cpu():
    fails(lambda x: fn.pad(x), "batch's largest extent")
    fails(lambda x: fn.pad(x, axes=[0], align=[2]), "batch's largest extent")
    fails(lambda x: fn.pad(x, axes=[0, 1], shape=[4]), "one value per padded axis")


def test_axes_and_axis_names_exclude_each_other():
    # DALI 2.4: '"axes" and "axis_names" are mutually exclusive'
    with pytest.raises(StokerError, match="mutually exclusive"):
        run(lambda x: fn.slice(x, start=[1], shape=[2], axes=[0], axis_names="C"))
    fails(lambda x: fn.reductions.sum(x, axes=[0], axis_names="C"), "mutually exclusive")


# ---- cat / stack ----

def test_cat_and_stack():
    expect_equal(one(lambda x: fn.cat(x, x, axis=2)), [np.concatenate([a, a], 2) for a in A], "HWC")
    expect_equal(one(lambda x: fn.cat(x, fn.flip(x), x, axis_name="W")),
                 [np.concatenate([a, a[:, ::-1], a], 1) for a in A], "HWC")
    expect_equal(one(lambda x: fn.cat(x, fn.slice(x, start=[0], shape=[1], axes=[1]), axis=1)),
                 [np.concatenate([a, a[:, :1]], 1) for a in A])
    expect_equal(one(lambda x: fn.stack(x, x, axis=1, axis_name="Z")),
                 [np.stack([a, a], 1) for a in A], "HZWC")
    expect_equal(one(lambda x: fn.stack(x, fn.flip(x), axis=-1)),
                 [np.stack([a, a[:, ::-1]], -1) for a in A], "")
    expect_equal(one(lambda x: fn.stack(x, axis=0), F, "ABC"), [f[None] for f in F])


def test_cat_stack_mismatch():
    fails(lambda x: fn.cat(x, fn.transpose(x, perm=[1, 0, 2]), axis=0), "input 1 has")
    fails(lambda x: fn.stack(x, fn.cast(x, dtype=types.FLOAT)), "input 1 has type float32")


# ---- sequences ----

SEQ = [np.arange(3 * 2 * 2, dtype=np.int16).reshape(3, 2, 2) + 100 * i for i in range(2)]


def test_element_extract_and_rearrange():
    (f2, f0) = run(lambda x: fn.element_extract(x, element_map=[2, 0]), SEQ, "FHW")
    expect_equal(f2, [s[2] for s in SEQ], "HW")
    expect_equal(f0, [s[0] for s in SEQ], "HW")
    order = lambda: feed([[2, 2, 0], [1]], np.int32)  # noqa: E731
    expect_equal(one(lambda x: fn.sequence_rearrange(x, new_order=order()), SEQ, "FHW"),
                 [SEQ[0][[2, 2, 0]], SEQ[1][[1]]], "FHW")
    fails(lambda x: fn.sequence_rearrange(x, new_order=[3]), "outside the 3 frames", SEQ, "FHW")
    fails(lambda x: fn.sequence_rearrange(x, new_order=[0]), "needs a sequence", SEQ, "HWC")


# ---- reductions ----

def np_reduce(name, a, axes, keep, ddof=0):
    f = a.astype(np.float64)
    if name == "min":
        return a.min(axis=axes, keepdims=keep)
    if name == "max":
        return a.max(axis=axes, keepdims=keep)
    if name == "sum":
        return a.sum(axis=axes, keepdims=keep, dtype=np.float64 if a.dtype.kind == "f" else None)
    if name == "mean":
        return f.mean(axis=axes, keepdims=keep)
    if name == "mean_square":
        return (f * f).mean(axis=axes, keepdims=keep)
    if name == "rms":
        return np.sqrt((f * f).mean(axis=axes, keepdims=keep))
    if name == "std_dev":
        return f.std(axis=axes, keepdims=keep, ddof=ddof)
    return f.var(axis=axes, keepdims=keep, ddof=ddof)


REDUCTIONS = ["min", "max", "sum", "mean", "mean_square", "rms", "std_dev", "variance"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("axes,keep", [(None, False), ((0,), False), ((0, 1), True), ((2,), False)])
def test_reductions_match_numpy(name, axes, keep):
    op = getattr(fn.reductions, name)
    kw = {} if axes is None else {"axes": list(axes)}
    for data in (A, F):
        if name in ("std_dev", "variance"):
            g = lambda x: op(x, fn.reductions.mean(x, keep_dims=keep, **kw), keep_dims=keep, **kw)  # noqa: E731
        else:
            g = lambda x: op(x, keep_dims=keep, **kw)  # noqa: E731
        got = one(g, data)
        for (out, _), a in zip(got, data):
            want = np_reduce(name, a, axes, keep)
            assert out.shape == np.shape(want)
            np.testing.assert_allclose(out.astype(np.float64), want, rtol=2e-6, atol=1e-6)


def test_reduction_types_and_layouts():
    # DALI 2.4: sum of uint8 is uint64, of int8 int64; mean is float32
    got = one(lambda x: fn.reductions.sum(x, axis_names="HW"))
    assert got[0][0].dtype == np.uint64 and got[0][1] == "C"
    np.testing.assert_array_equal(got[0][0], [60, 66, 72, 78])
    got = one(lambda x: fn.reductions.sum(fn.cast(x, dtype=types.INT8) - 100))
    assert got[0][0].dtype == np.int64 and int(got[0][0]) == 276 - 2400
    assert one(lambda x: fn.reductions.mean(x))[0][0].dtype == np.float32
    assert one(lambda x: fn.reductions.min(x, keep_dims=True))[0][1] == "HWC"
    assert one(lambda x: fn.reductions.sum(x, dtype=types.FLOAT))[0][0].dtype == np.float32
    # axes=[] reduces nothing (DALI: the input as float32 for mean)
    expect_equal(one(lambda x: fn.reductions.mean(x, axes=[])), [a.astype(np.float32) for a in A])
    # the mean may be one value (a Python scalar becomes a constant node, as in DALI)
    got = one(lambda x: fn.reductions.std_dev(x, 3.0))
    np.testing.assert_allclose(got[0][0], np.sqrt(((A[0] - 3.0) ** 2).mean()), rtol=1e-6)


def test_reduction_errors():
    fails(lambda x: fn.reductions.max(x, axes=[3]), "axes\\[0\\] = 3 is out of range")
    fails(lambda x: fn.reductions.sum(x, axis_names="Q"), "'Q' is not in the input layout")
    fails(lambda x: fn.reductions.variance(x, fn.reductions.mean(x, axes=[0]), axes=[1]),
          "the mean input has 12 values")


# ---- normalize ----

def np_normalize(a, axes=None, mean=None, std=None, scale=1.0, shift=0.0, eps=0.0, ddof=0):
    f = a.astype(np.float64)
    m = f.mean(axis=axes, keepdims=True) if mean is None else np.asarray(mean, np.float64)
    if std is None:
        n = np.prod([a.shape[d] for d in axes]) if axes is not None else f.size
        var = ((f - m) ** 2).sum(axis=axes, keepdims=True) / (n - ddof)
    else:
        var = np.asarray(std, np.float64) ** 2
    return (f - m) * (scale / np.sqrt(var + eps)) + shift


def test_normalize_computed_and_given():
    cases = [
        (dict(), dict()),
        (dict(axes=[0, 1], scale=2, shift=1, epsilon=1), dict(axes=(0, 1), scale=2, shift=1, eps=1)),
        (dict(axis_names="HW", ddof=1), dict(axes=(0, 1), ddof=1)),
        (dict(mean=3.0, axes=[0, 1]), dict(axes=(0, 1), mean=3.0)),
        (dict(stddev=2.0, epsilon=5.0), dict(std=2.0, eps=5.0)),
        (dict(mean=[1.0, 2.0, 3.0, 4.0], stddev=[1.0, 2.0, 4.0, 8.0], axes=[0, 1]),
         dict(mean=[1.0, 2.0, 3.0, 4.0], std=[1.0, 2.0, 4.0, 8.0])),
    ]
    for kw, ref in cases:
        got = one(lambda x: fn.normalize(x, **kw))
        for (g, lay), a in zip(got, A):
            assert g.dtype == np.float32 and lay == "HWC"
            np.testing.assert_allclose(g, np_normalize(a, **ref), rtol=1e-5, atol=1e-6)


def test_std_dev_with_ddof():
    got = one(lambda x: fn.reductions.std_dev(x, fn.reductions.mean(x, axes=[0, 1]), axes=[0, 1], ddof=1), F)
    for (g, _), f in zip(got, F):
        np.testing.assert_allclose(g, f.astype(np.float64).std(axis=(0, 1), ddof=1), rtol=1e-6)


def test_normalize_values_from_dali():
    # DALI 2.4 CPU: fn.normalize(x) and fn.normalize(x, dtype=UINT8, shift=100, scale=30)
    got = one(lambda x: fn.normalize(x))[0][0].ravel()[:4]
    np.testing.assert_allclose(got, [-1.6613247, -1.5168617, -1.3723986, -1.2279357], rtol=1e-6)
    got = one(lambda x: fn.normalize(x, dtype=types.UINT8, shift=100, scale=30))[0][0].ravel()[:8]
    np.testing.assert_array_equal(got, [50, 54, 59, 63, 67, 72, 76, 80])


def test_normalize_errors():
    # batch=True: the kept (not reduced) extents must agree across the batch
    with pytest.raises(StokerError, match="batch=True needs every sample's type and kept"):
        run(lambda x: fn.normalize(x, batch=True, axes=[1]))
    fails(lambda x: fn.normalize(x, mean=[1.0, 2.0], axes=[0, 1]), "give one or 4")


# ---- constants ----

def test_zeros_ones_full():
    got = one(lambda x: fn.zeros(shape=[2, 3]))
    expect_equal(got, [np.zeros((2, 3), np.int32)] * 2, "")  # DALI: int32 by default
    expect_equal(one(lambda x: fn.ones(shape=[2], dtype=types.FLOAT, layout="A")),
                 [np.ones(2, np.float32)] * 2, "A")
    expect_equal(one(lambda x: fn.zeros()), [np.zeros((), np.int32)] * 2)
    expect_equal(one(lambda x: fn.full(np.array([1, 2], np.float32), shape=[3, 2])),
                 [np.array([[1, 2]] * 3, np.float32)] * 2)
    expect_equal(one(lambda x: fn.full(np.int16(7))), [np.array(7, np.int16)] * 2)
    expect_equal(one(lambda x: fn.ones(shape=feed([[2], [4]], np.int32), dtype=types.UINT8)),
                 [np.ones(2, np.uint8), np.ones(4, np.uint8)])
    fails(lambda x: fn.full(np.array([1, 2, 3], np.float32), shape=[2, 2]), "does not broadcast")


def test_like_operators():
    expect_equal(one(lambda x: fn.zeros_like(x)), [np.zeros_like(a) for a in A], "HWC")
    expect_equal(one(lambda x: fn.ones_like(x, dtype=types.FLOAT)), [np.ones(a.shape, np.float32) for a in A])
    # DALI 2.4: full_like keeps data's type
    expect_equal(one(lambda x: fn.full_like(x, np.array([1, 2, 3, 300], np.int16))),
                 [np.broadcast_to(np.array([1, 2, 3, 255], np.uint8), a.shape) for a in A], "HWC")


def test_lookup_table():
    keys, values = [1, 3, 300], [10.0, 30.0, 50.5]
    got = one(lambda x: fn.lookup_table(x, keys=keys, values=values, default_value=-1))
    for (g, _), a in zip(got, A):
        table = dict(zip(keys, values))
        want = np.vectorize(lambda v: table.get(int(v), -1.0))(a).astype(np.float32)
        np.testing.assert_array_equal(g, want)
    s16 = [a.astype(np.int16) - 5 for a in A]
    got = one(lambda x: fn.lookup_table(x, keys=[0, 2], values=[7, 9], dtype=types.INT32), s16)
    for (g, _), a in zip(got, s16):
        np.testing.assert_array_equal(g, np.where(a == 0, 7, np.where(a == 2, 9, 0)).astype(np.int32))
    fails(lambda x: fn.lookup_table(fn.cast(x, dtype=types.FLOAT), keys=[1], values=[2]), "integer keys")
    with pytest.raises(StokerError, match="outside \\[0, 65535\\]"):
        run(lambda x: fn.lookup_table(x, keys=[-1], values=[2]))
    with pytest.raises(StokerError, match="they pair up"):
        run(lambda x: fn.lookup_table(x, keys=[1, 2], values=[2]))


# ---- bytes ----

def as_bytes(b):
    return np.frombuffer(b, np.uint8)


def test_get_property():
    got = one(lambda x: fn.get_property(x, key="layout"))
    assert bytes(got[0][0]) == b"HWC" and got[0][0].dtype == np.uint8

    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        files, _ = fn.readers.file(files=[os.path.join(PHOTOS, "astronaut.png"),
                                          os.path.join(PHOTOS, "camera.png")])
        return fn.get_property(files, key="source_info")
    (out,) = pipe().run()
    assert bytes(np.asarray(out.at(1))).decode().endswith("camera.png")


def test_io_file_read_and_decoders_numpy(tmp_path):
    arrays = [np.arange(6, dtype=">f4").reshape(2, 3), np.asfortranarray(np.arange(6, dtype="<f4").reshape(3, 2))]
    paths = []
    for k, a in enumerate(arrays):
        p = tmp_path / f"a{k}.npy"
        np.save(p, a)
        paths.append(as_bytes(str(p).encode()))
    (raw, dec) = run(lambda x: (fn.io.file.read(x), fn.decoders.numpy(fn.io.file.read(x))), paths, "")
    for (r, _), (d, _), p, a in zip(raw, dec, paths, arrays):
        assert bytes(r) == open(bytes(p).decode(), "rb").read()
        assert d.dtype == np.float32 and np.array_equal(d, a)
    fails(lambda x: fn.io.file.read(x), "cannot open", [as_bytes(b"/no/such/file")] * 2, "")
    fails(lambda x: fn.decoders.numpy(x), "npy", [as_bytes(b"not a numpy file at all")] * 2, "")
    fails(lambda x: fn.decoders.numpy(fn.io.file.read(x), dtype=types.INT32), "dtype says int32",
          paths, "")


def test_inflate_deflate_forms():
    raw = np.arange(24, dtype=np.uint16).tobytes()
    want = np.frombuffer(raw, np.uint16).reshape(3, 8)
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    rawdef = co.compress(raw) + co.flush()
    for blob in (zlib.compress(raw), gzip.compress(raw), rawdef):
        got = one(lambda x: fn.decoders.inflate(x, algorithm="DEFLATE", shape=[3, 8], dtype=types.UINT16,
                                                layout="HW"), [as_bytes(blob)] * 2, "")
        expect_equal(got, [want] * 2, "HW")
    z = zlib.compress(raw)
    two = as_bytes(z + z)
    got = one(lambda x: fn.decoders.inflate(x, algorithm="DEFLATE", shape=[3, 8], dtype=types.UINT16,
                                            chunk_sizes=[len(z), len(z)], layout="HW"), [two], "")
    expect_equal(got, [np.stack([want, want])], "FHW")
    got = one(lambda x: fn.decoders.inflate(x, algorithm="DEFLATE", shape=[48],
                                            chunk_offsets=[0, len(z)]), [two], "")
    expect_equal(got, [np.stack([as_bytes(raw)] * 2)])
    fails(lambda x: fn.decoders.inflate(x, algorithm="DEFLATE", shape=[47]), "exactly 47 bytes",
          [as_bytes(z)], "")
    fails(lambda x: fn.decoders.inflate(x, algorithm="DEFLATE", shape=[48], chunk_sizes=[len(z) + 1]),
          "leaves the", [as_bytes(z)], "")


def test_inflate_lz4_blocks():
    # a hand-made LZ4 block: 4 literals, a match of 8 at offset 4, then 5 final literals
    block = bytes([0x44]) + b"abcd" + bytes([4, 0]) + bytes([0x50]) + b"xyz12"
    got = one(lambda x: fn.decoders.inflate(x, shape=[17]), [as_bytes(block)], "")
    assert bytes(got[0][0]) == b"abcdabcdabcdxyz12"
    # a match reaching back 9 bytes when only 4 were written
    bad = bytes([0x44]) + b"abcd" + bytes([9, 0])
    fails(lambda x: fn.decoders.inflate(x, shape=[17]), "not a valid LZ4", [as_bytes(bad)], "")
    lz4 = pytest.importorskip("lz4.block")
    data = (np.arange(5000) % 251).astype(np.uint8).tobytes() + bytes(3000)
    comp = lz4.compress(data, store_size=False)
    got = one(lambda x: fn.decoders.inflate(x, shape=[len(data)]), [as_bytes(comp)], "")
    assert bytes(got[0][0]) == data


def test_dump_image_writes_ppm(tmp_path, monkeypatch):
    from PIL import Image
    monkeypatch.chdir(tmp_path)
    img = [np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) * 10]
    expect_equal(one(lambda x: fn.dump_image(x, suffix="_t"), img), img)
    # (the pipeline may have run ahead: later ordinals may be there too)
    assert "dump_image_t_0.ppm" in os.listdir(tmp_path)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "dump_image_t_0.ppm")), img[0])


def test_dl_tensor_python_function():
    from stoker._dlpack_fn import _Capsule

    def f(a, b):
        assert type(a).__name__ == "PyCapsule"
        x, y = np.from_dlpack(_Capsule(a)), np.from_dlpack(_Capsule(b))
        return x.astype(np.float32) * 2, (y.astype(np.int32) + 1).__dlpack__()
    twice, plus = run(lambda x: fn.dl_tensor_python_function(x, x, function=f, num_outputs=2))
    expect_equal(twice, [a.astype(np.float32) * 2 for a in A])
    expect_equal(plus, [a.astype(np.int32) + 1 for a in A])
    # batch_processing: one call with a list of capsules per input, a list per output
    def g(batch):
        assert isinstance(batch, list) and len(batch) == len(A)
        return [np.from_dlpack(_Capsule(c)).astype(np.int16) - 300 for c in batch]
    less = one(lambda x: fn.dl_tensor_python_function(x, function=g, batch_processing=True))
    expect_equal(less, [a.astype(np.int16) - 300 for a in A])


# (every GPU operator's gpu_check runs on the CPU in test_gpu_registry_parity.py)


# ---- the GPU backends, run through tests/fake_gpu (the kernels' element functions on the
# host): the same graph on the CPU and on the GPU stage must agree exactly ----

GPU_GRAPHS = {
    "transpose": lambda x, d: fn.transpose(x, perm=[2, 0, 1], device=d),
    "reshape": lambda x, d: fn.reshape(x, shape=[-1, 4], layout="XC", device=d),
    "reinterpret": lambda x, d: fn.reinterpret(x, dtype=types.INT16, device=d),
    "expand_dims": lambda x, d: fn.expand_dims(x, axes=[0, 3], new_axis_names="FX", device=d),
    "squeeze": lambda x, d: fn.squeeze(fn.expand_dims(x, axes=[0], new_axis_names="F", device=d),
                                       axis_names="F", device=d),
    "per_frame": lambda x, d: fn.per_frame(x, replace=True, device=d),
    "slice": lambda x, d: fn.slice(x, rel_start=[0.25, -0.5], rel_shape=[0.5, 1.7],
                                   out_of_bounds_policy="pad", fill_values=[1, 2, 3, 4], device=d),
    "slice_trim": lambda x, d: fn.slice(x, start=[1, 0], shape=[5, 1],
                                        out_of_bounds_policy="trim_to_shape", device=d),
    "slice_inputs": lambda x, d: fn.slice(x, feed([[0.25, 0.5], [0.0, 0.0]], np.float32),
                                          feed([[0.5, 0.5], [1.0, 1.0]], np.float32), device=d),
    "slice_dtype": lambda x, d: fn.slice(x, start=[1, 0], shape=[2, 1], dtype=types.FLOAT, device=d),
    "reshape_input": lambda x, d: fn.reshape(x, feed([[4, -1], [-1, 2]], np.int64), device=d),
    "pad": lambda x, d: fn.pad(x, axis_names="HW", shape=[5, 7], align=[1, 4], fill_value=9, device=d),
    "pad_align_only": lambda x, d: fn.pad(x, axes=[0, 1], shape=[1, 1], align=[2, 2], device=d),
    "cat": lambda x, d: fn.cat(x, x, x, axis_name="W", device=d),
    "stack": lambda x, d: fn.stack(x, x, axis=1, axis_name="Z", device=d),
    "sequence_rearrange": lambda x, d: fn.sequence_rearrange(
        fn.per_frame(x, replace=True, device=d), new_order=[0, 0], device=d),
    "lookup_table": lambda x, d: fn.lookup_table(x, keys=[0, 1, 2, 20], values=[5, -1.5, 7, 9],
                                                 default_value=0.25, device=d),
    "normalize": lambda x, d: fn.normalize(x, axis_names="HW", scale=64, shift=128, epsilon=1, device=d),
    "normalize_given": lambda x, d: fn.normalize(x, mean=[1.0, 2.0, 3.0, 4.0], axes=[0, 1], device=d),
    "normalize_uint8": lambda x, d: fn.normalize(x, dtype=types.UINT8, scale=30, shift=100, device=d),
}
GPU_GRAPHS["std_dev_scalar_mean"] = lambda x, d: fn.reductions.std_dev(
    x, fn.reductions.mean(x, device=d), axis_names="HW", device=d)
for _r in REDUCTIONS:
    if _r in ("std_dev", "variance"):
        GPU_GRAPHS[_r] = (lambda op: lambda x, d: op(
            x, fn.reductions.mean(x, axis_names="HW", device=d), axis_names="HW", device=d))(
                getattr(fn.reductions, _r))
    else:
        GPU_GRAPHS[_r] = (lambda op: lambda x, d: op(x, axes=[0, 1], device=d))(getattr(fn.reductions, _r))


def test_gpu_element_extract(fake_gpu):
    def graph(x):
        c = fn.element_extract(x, element_map=[2, 0, 2])
        g = fn.element_extract(x.gpu(), element_map=[2, 0, 2], device="gpu")
        return (*c, *g)
    outs = run(graph, SEQ, "FHW", device_id=0)
    for c, g in zip(outs[:3], outs[3:]):
        for (cs, cl), (gs, gl) in zip(c, g):
            assert cl == gl == "HW" and np.array_equal(cs, gs)
    np.testing.assert_array_equal(outs[4][1][0], SEQ[1][0])


@pytest.mark.parametrize("name", sorted(GPU_GRAPHS))
def test_gpu_backend_matches_cpu(fake_gpu, name):
    graph = GPU_GRAPHS[name]
    cpu, gpu = run(lambda x: (graph(x, "cpu"), graph(x.gpu(), "gpu")), device_id=0)
    for (c, lc), (g, lg) in zip(cpu, gpu):
        assert c.shape == g.shape and c.dtype == g.dtype and lc == lg
        np.testing.assert_array_equal(c, g)


BIG = [RNG.normal(size=s).astype(np.float32) * 50 for s in ((40, 50, 3), (33, 61, 3))]
BIG_U8 = [np.clip(b + 128, 0, 255).astype(np.uint8) for b in BIG]


@pytest.mark.parametrize("name", REDUCTIONS + ["normalize"])
@pytest.mark.parametrize("data", ["float", "uint8"])
def test_gpu_whole_sample_statistics(fake_gpu, name, data):
    """Boxes this large take the GPU's block-per-output kernel (a tree of partial sums);
    min, max and integer sums stay exact, float64 sums agree to float32 precision."""
    d = BIG if data == "float" else BIG_U8
    op = fn.normalize if name == "normalize" else getattr(fn.reductions, name)

    def graph(x, dev):
        if name in ("std_dev", "variance"):
            return op(x, fn.reductions.mean(x, device=dev), device=dev)
        return op(x, device=dev)
    cpu, gpu = run(lambda x: (graph(x, "cpu"), graph(x.gpu(), "gpu")), d, device_id=0)
    for (c, _), (g, _), a in zip(cpu, gpu, d):
        assert c.dtype == g.dtype and c.shape == g.shape
        if name in ("min", "max") or (name == "sum" and data == "uint8"):
            np.testing.assert_array_equal(c, g)
        else:
            np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-6)
        if name == "sum":
            np.testing.assert_allclose(c, a.astype(np.float64).sum(), rtol=1e-6)


BATCH_NORM_CASES = [({}, None), ({"axis_names": "HW", "ddof": 1, "scale": 3}, (0, 1)),
                    ({"mean": 1.5, "axes": [0, 1]}, (0, 1)),
                    ({"stddev": 4.0, "axis_names": "HW"}, (0, 1))]


@pytest.mark.parametrize("kw,axes", BATCH_NORM_CASES)
@pytest.mark.parametrize("data", ["small", "big"])
def test_gpu_normalize_over_the_batch(fake_gpu, kw, axes, data):
    check_normalize_over_the_batch(kw, axes, data, gpu=True)


@pytest.mark.parametrize("kw,axes", BATCH_NORM_CASES)
@pytest.mark.parametrize("data", ["small", "big"])
def test_cpu_normalize_over_the_batch(kw, axes, data):
    check_normalize_over_the_batch(kw, axes, data, gpu=False)


def check_normalize_over_the_batch(kw, axes, data, gpu):
    """normalize(batch=True) against NumPy statistics of the batch concatenated."""
    d = F if data == "small" else BIG
    dev_kw = {"device_id": 0} if gpu else {}
    (out,) = run(lambda x: fn.normalize(x.gpu() if gpu else x, batch=True, **kw), d, **dev_kw)
    cat = np.concatenate([a.reshape(-1, a.shape[-1]) for a in d]).astype(np.float64)
    red = 0 if axes else None  # the batch as one (N, C) array: HW axes -> axis 0
    mean = kw.get("mean", cat.mean(axis=red))
    dev = ((cat - mean) ** 2).sum(axis=red) / (cat.size / (cat.shape[1] if axes else 1) - kw.get("ddof", 0))
    std = kw.get("stddev", np.sqrt(dev))
    for (g, _), a in zip(out, d):
        want = (a - mean) * (kw.get("scale", 1.0) / std)
        np.testing.assert_allclose(g, want, rtol=2e-5, atol=2e-5)


def test_gpu_pad_to_the_batch_max(fake_gpu):
    (out,) = run(lambda x: fn.pad(x.gpu(), fill_value=3), device_id=0)
    for (g, _), a in zip(out, A):
        want = np.full((2, 3, 4), 3, np.uint8)
        want[:a.shape[0]] = a
        np.testing.assert_array_equal(g, want)


def test_gpu_shape_operators_share_memory(fake_gpu):
    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda: [A[0], A[0]], layout="HWC").gpu()
        return x, fn.reshape(x, shape=[6, 4]), fn.squeeze(fn.expand_dims(x, axes=[0]), axes=[0])
    x, r, q = pipe().run()
    base = x.data_ptr() if hasattr(x, "data_ptr") else None
    got = [np.asarray(t.as_cpu().at(0)) for t in (r, q)]
    np.testing.assert_array_equal(got[0], A[0].reshape(6, 4))
    np.testing.assert_array_equal(got[1], A[0])
    if base is not None:
        assert r.data_ptr() == base and q.data_ptr() == base


def test_gpu_reshape_per_sample_shapes_of_a_dense_batch(fake_gpu):
    shapes = [[3, 8], [6, 4]]

    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda: [A[0], A[0]], layout="HWC").gpu()
        return fn.reshape(x, feed(shapes, np.int32), device="gpu")
    (r,) = pipe().run()
    assert not r.is_dense_tensor()
    for i, sh in enumerate(shapes):
        np.testing.assert_array_equal(np.asarray(r.as_cpu().at(i)), A[0].reshape(sh))


# ---- DALI 2.4 itself, where its CPU build is installed (/work/dali-venv): the same graphs
# on the same data must give the same shapes, types, layouts and values ----

DALI_PY = os.environ.get("STK_DALI_PYTHON", "/work/dali-venv/bin/python")
DALI_CASES = {
    "transpose": "fn.transpose(x, perm=(2, 0, 1))",
    "reshape": "fn.reshape(x, rel_shape=(1, -1))",
    "reinterpret": "fn.reinterpret(x, dtype=types.INT16)",
    "expand_squeeze": "fn.squeeze(fn.expand_dims(x, axes=(0, 3), new_axis_names='AB'), axes=0)",
    "slice_rel": "fn.slice(x, rel_start=(0.3, 0.0), rel_shape=(0.5, 1.0))",
    "slice_pad": "fn.slice(x, start=(-1, 0), shape=(5, 2), out_of_bounds_policy='pad', fill_values=(9, 8, 7, 6))",
    "slice_trim": "fn.slice(x, start=(2, 0), shape=(5, 1), out_of_bounds_policy='trim_to_shape')",
    "slice_axes": "fn.slice(x, start=(1,), shape=(2,), axes=(2,))",
    "pad": "fn.pad(x, axes=(0, 2), shape=(4, 6), fill_value=7)",
    "pad_align_only": "fn.pad(x, axes=(0, 1), shape=(1, 1), align=(1, 2), fill_value=9)",
    "pad_fill_cast": "fn.pad(x, axes=(1,), shape=(4,), fill_value=-1.5)",
    "slice_fill_cast": "fn.slice(x, start=(0,), shape=(5,), axes=(1,), out_of_bounds_policy='pad', fill_values=(300, -1, 2.7, 9))",
    "lut_sat": "fn.lookup_table(x, keys=[0, 1, 2, 3], values=[-1, 2.7, 300, 5], dtype=types.UINT8)",
    "full_like_sat": "fn.full_like(x, np.array([1.7, 2, 300.5, -1.2], dtype=np.float32))",
    "cat": "fn.cat(x, x, axis_name='W')",
    "stack": "fn.stack(x, x, axis=1, axis_name='Z')",
    "sum": "fn.reductions.sum(x, axis_names='HW')",
    "mean": "fn.reductions.mean(x, axes=0)",
    "rms": "fn.reductions.rms(x, axes=(0, 1), keep_dims=True)",
    "std": "fn.reductions.std_dev(x, fn.reductions.mean(x, axes=2), axes=2)",
    "var": "fn.reductions.variance(x, fn.reductions.mean(x, axes=0), axes=0, ddof=1)",
    "max": "fn.reductions.max(x, axes=(1,))",
    "normalize": "fn.normalize(x, axes=(0, 1), scale=2, shift=1, epsilon=1)",
    "normalize_mean": "fn.normalize(x, mean=3.0, axes=(0, 1))",
    "normalize_u8": "fn.normalize(x, dtype=types.UINT8, shift=100, scale=30)",
    "lut": "fn.lookup_table(x, keys=[1, 3, 30], values=[10, 30, 50], default_value=-1)",
    "zeros_like": "fn.zeros_like(x)",
    "ones_like": "fn.ones_like(x, dtype=types.FLOAT)",
    "full_like": "fn.full_like(x, np.array([1, 2, 3, 4], dtype=np.int16))",
    "zeros": "fn.zeros(shape=(2, 3))",
    "full": "fn.full(np.array([1, 2], dtype=np.float32), shape=(3, 2))",
    "layout": "fn.get_property(x, key='layout')",
    "slice_in_abs": "fn.slice(x, np.array([1, 0], dtype=np.int32), np.array([2, 1], dtype=np.int32))",
    "slice_in_norm": "fn.slice(x, np.array([0.5, 0.25], dtype=np.float32), np.array([0.5, 0.5], dtype=np.float32))",
    "slice_end": "fn.slice(x, start=(1, 0), end=(3, 1))",
    "slice_rel_end": "fn.slice(x, rel_start=(0.6, 0.5), rel_end=(1, 1))",
    "slice_dtype": "fn.slice(x, start=(0, 0), shape=(1, 1), dtype=types.FLOAT)",
    "squeeze_names": "fn.squeeze(fn.expand_dims(x, axes=(0, 3), new_axis_names='AB'), axis_names='BA')",
    "expand_noname": "fn.expand_dims(x, axes=(1,))",
    "transpose_keep_layout": "fn.transpose(x, perm=(1, 0, 2), transpose_layout=False)",
    "transpose_out_layout": "fn.transpose(x, perm=(1, 0, 2), output_layout='ABC')",
    "reinterpret_shape": "fn.reinterpret(x, dtype=types.INT32, shape=(-1,))",
    "per_frame_replace": "fn.per_frame(x, replace=True)",
    "normalize_std": "fn.normalize(x, stddev=2.0, epsilon=5.0)",
    "normalize_mean_arr": "fn.normalize(x, axes=(0, 1), mean=np.array([[[1, 2, 3, 4]]], dtype=np.float32))",
    "normalize_ddof": "fn.normalize(x, ddof=1)",
    "mean_square": "fn.reductions.mean_square(x, axis_names='WC')",
    "min_keep": "fn.reductions.min(x, axes=(0, 1), keep_dims=True)",
    "sum_float": "fn.reductions.sum(x, dtype=types.FLOAT)",
    "sum_int8": "fn.reductions.sum(fn.cast(x, dtype=types.INT8))",
    "lut_int16": "fn.lookup_table(fn.cast(x, dtype=types.INT16), keys=[0, 2, 9], values=[7, 9, 11], dtype=types.INT32)",
    "ones": "fn.ones(shape=(3,), dtype=types.UINT8)",
    "full_scalar": "fn.full(np.float32(2.5), shape=(2,))",
    "cat3": "fn.cat(x, x, x, axis=0)",
    "stack_last": "fn.stack(x, x, axis=3)",
    "var_ddof_past_n": "fn.reductions.variance(x, fn.reductions.mean(x), ddof=30)",
    "mean_empty": "fn.reductions.mean(fn.slice(x, start=(0,), shape=(0,), axes=(0,)))",
    "min_empty": "fn.reductions.min(fn.slice(x, start=(0,), shape=(0,), axes=(0,)))",
    "max_empty": "fn.reductions.max(fn.slice(x, start=(0,), shape=(0,), axes=(0,)))",
}
_DALI_SCRIPT = r"""
import sys, pickle, numpy as np
from nvidia.dali import pipeline_def, fn, types
data, cases, *rest = pickle.load(sys.stdin.buffer)
layout = rest[0] if rest else "HWC"
res = {}
for name, expr in cases.items():
    @pipeline_def(batch_size=len(data), num_threads=1, device_id=None)
    def p():
        x = fn.external_source(source=lambda: data, layout=layout)
        return eval(expr)
    try:
        pp = p(); pp.build(); (t,) = pp.run()
        res[name] = [(np.array(t[i]), t.layout()) for i in range(len(t))]
    except Exception as e:
        res[name] = str(e)
pickle.dump(res, sys.stdout.buffer)
"""


@pytest.fixture(scope="module")
def dali_results():
    import pickle
    import subprocess
    if not os.path.exists(DALI_PY):
        pytest.skip("DALI's CPU build is not installed here")
    r = subprocess.run([DALI_PY, "-c", _DALI_SCRIPT], input=pickle.dumps((A, DALI_CASES)),
                       capture_output=True, timeout=600)
    if r.returncode != 0:
        pytest.skip(f"DALI did not run: {r.stderr.decode()[-300:]}")
    return pickle.loads(r.stdout)


@pytest.mark.parametrize("name", sorted(DALI_CASES))
def test_matches_dali(dali_results, name):
    want = dali_results[name]
    assert not isinstance(want, str), want
    got = one(lambda x: eval(DALI_CASES[name]))
    for (g, gl), (w, wl) in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and gl == wl, (g.shape, g.dtype, gl, w.shape, w.dtype, wl)
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)


def test_decoders_refuse_hostile_bytes():
    """Random and mutated bytes: every sample fails with a message or decodes, never
    crashes (the decoders read untrusted data)."""
    rng = np.random.default_rng(11)
    buf = io.BytesIO()
    np.save(buf, np.arange(30, dtype=np.int16).reshape(5, 6))
    npy = buf.getvalue()
    z = zlib.compress(bytes(range(200)) * 3)
    lz = bytes([0x44]) + b"abcd" + bytes([4, 0]) + bytes([0x50]) + b"xyz12"
    cases = []
    for _ in range(60):
        base = [npy, z, lz][rng.integers(3)]
        b = bytearray(base)
        for _ in range(rng.integers(1, 6)):
            b[rng.integers(len(b))] = rng.integers(256)
        cases.append(bytes(b[: rng.integers(1, len(b) + 1)]))
    cases += [bytes(rng.integers(0, 256, rng.integers(0, 64), dtype=np.uint8)) for _ in range(20)]
    graphs = [lambda x: fn.decoders.numpy(x),
              lambda x: fn.decoders.inflate(x, algorithm="DEFLATE", shape=[600]),
              lambda x: fn.decoders.inflate(x, shape=[17]),
              lambda x: fn.decoders.inflate(x, shape=[4], chunk_offsets=[0, 2**62], chunk_sizes=[2**62, 2**62])]
    for data in cases:
        for g in graphs:
            try:
                run(g, [as_bytes(data)], "")
            except StokerError as e:
                assert "decoders." in str(e)


def test_gpu_normalize_batch_matches_dali(fake_gpu):
    check_normalize_batch_matches_dali(gpu=True)


def test_cpu_normalize_batch_matches_dali():
    check_normalize_batch_matches_dali(gpu=False)


def test_cpu_normalize_batch_true_and_false_side_by_side():
    # batch=True shares the batch's statistics; batch=False (the same operator, run per
    # sample) keeps each sample's own, in the same pipeline
    a = [np.arange(12, dtype=np.float32).reshape(2, 2, 3) + 10 * i for i in range(4)]
    both = run(lambda x: (fn.normalize(x, batch=True, axis_names="HW"),
                          fn.normalize(x, axis_names="HW")), a)
    cat = np.concatenate([v.reshape(-1, 3) for v in a]).astype(np.float64)
    for (g, _), (p, _), v in zip(both[0], both[1], a):
        np.testing.assert_allclose(g, (v - cat.mean(0)) / cat.std(0), rtol=1e-5, atol=1e-6)
        f = v.reshape(-1, 3).astype(np.float64)
        np.testing.assert_allclose(p, (v - f.mean(0)) / f.std(0), rtol=1e-5, atol=1e-6)


def check_normalize_batch_matches_dali(gpu):
    import pickle
    import subprocess
    if not os.path.exists(DALI_PY):
        pytest.skip("DALI's CPU build is not installed here")
    cases = {"nb": "fn.normalize(x, batch=True)",
             "nb_hw": "fn.normalize(x, batch=True, axis_names='HW', scale=2, shift=1, epsilon=1)"}
    r = subprocess.run([DALI_PY, "-c", _DALI_SCRIPT], input=pickle.dumps((A, cases)),
                       capture_output=True, timeout=600)
    if r.returncode != 0:
        pytest.skip("DALI did not run")
    want = pickle.loads(r.stdout)
    dev_kw = {"device_id": 0} if gpu else {}
    got = {"nb": one(lambda x: fn.normalize(x.gpu() if gpu else x, batch=True), **dev_kw),
           "nb_hw": one(lambda x: fn.normalize(x.gpu() if gpu else x, batch=True, axis_names="HW",
                                               scale=2, shift=1, epsilon=1), **dev_kw)}
    for k in cases:
        assert not isinstance(want[k], str), want[k]
        for (g, gl), (w, wl) in zip(got[k], want[k]):
            assert g.shape == w.shape and gl == wl
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("expr", ["fn.pad(x, fill_value=-1)", "fn.pad(x, axes=(0,), align=4)",
                                  "fn.pad(x, axis_names='HW', shape=(-1, 5), align=(2, 1))"])
def test_gpu_pad_batch_max_matches_dali(fake_gpu, expr):
    import pickle
    import subprocess
    if not os.path.exists(DALI_PY):
        pytest.skip("DALI's CPU build is not installed here")
    r = subprocess.run([DALI_PY, "-c", _DALI_SCRIPT], input=pickle.dumps((A, {"p": expr})),
                       capture_output=True, timeout=600)
    if r.returncode != 0:
        pytest.skip("DALI did not run")
    want = pickle.loads(r.stdout)["p"]
    assert not isinstance(want, str), want
    gpu_expr = expr.replace("fn.pad(x", "fn.pad(x.gpu()")
    got = one(lambda x: eval(gpu_expr), device_id=0)
    for (g, gl), (w, wl) in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and gl == wl
        np.testing.assert_array_equal(g, w)


SEQ_CASES = {
    "rearrange": "fn.sequence_rearrange(x, new_order=[2, 0, 0, 1])",
    "extract": "fn.element_extract(x, element_map=[0, 2])[1]",
    "cat_frames": "fn.cat(x, x, axis_name='F')",
    "sum_frames": "fn.reductions.sum(x, axis_names='F')",
}


def test_sequences_match_dali():
    import pickle
    import subprocess
    if not os.path.exists(DALI_PY):
        pytest.skip("DALI's CPU build is not installed here")
    r = subprocess.run([DALI_PY, "-c", _DALI_SCRIPT], input=pickle.dumps((SEQ, SEQ_CASES, "FHW")),
                       capture_output=True, timeout=600)
    if r.returncode != 0:
        pytest.skip("DALI did not run")
    want = pickle.loads(r.stdout)
    for name, expr in SEQ_CASES.items():
        assert not isinstance(want[name], str), want[name]
        got = one(lambda x: eval(expr), SEQ, "FHW")
        for (g, gl), (w, wl) in zip(got, want[name]):
            assert g.shape == w.shape and g.dtype == w.dtype and gl == wl, name
            np.testing.assert_array_equal(g, w)
