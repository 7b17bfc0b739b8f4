"""The image decoders' DALI arguments beyond the basics: `dtype` (the values scaled to the
type's range as DALI 2.4 does, checked by the formula on the uint8 decode and, where DALI
is installed, against DALI on the PNG photos, which both decode exactly), its refusal on
the mixed device, and DALI's mixed-backend tuning arguments, accepted without effect."""

import os
import pickle
import subprocess

import numpy as np
import pytest

from stoker import fn, pipeline_def, types
from stoker.errors import StokerError

DALI_PY = "/work/dali-venv/bin/python"
DTYPES = {"uint8": np.uint8, "int8": np.int8, "uint16": np.uint16, "int16": np.int16,
          "uint32": np.uint32, "int32": np.int32, "float32": np.float32}
MAX = {"int8": 127, "uint16": 65535, "int16": 32767, "uint32": 4294967295, "int32": 2147483647}


def decode(files, build, **kw):
    @pipeline_def(batch_size=len(files), num_threads=2, **kw)
    def pipe():
        enc, _ = fn.readers.file(files=files)
        return (fn.decoders.image(enc),) + tuple(build(enc))

    p = pipe()
    p.build()
    return [[np.array((t.as_cpu() if hasattr(t, "as_cpu") else t)[i]) for i in range(len(t))]
            for t in p.run()]


def scaled(v, name):
    """DALI's scaling of uint8 values into `name`'s range (float32 arithmetic, then
    rounded and saturated)."""
    if name == "float32":
        return v.astype(np.float32) * (np.float32(1) / np.float32(255))
    f = v.astype(np.float32) * (np.float32(MAX[name]) / np.float32(255))
    info = np.iinfo(DTYPES[name])
    return np.clip(np.floor(f.astype(np.float64) + 0.5), info.min, info.max).astype(DTYPES[name])


@pytest.mark.parametrize("name", [n for n in DTYPES if n != "uint8"])
def test_dtype_scales_to_the_types_range(photos, name):
    files = photos[:3]
    full, img, crop, sl = decode(files, lambda e: (
        fn.decoders.image(e, dtype=name),
        fn.decoders.image_crop(e, crop=[40, 30], dtype=name),
        fn.decoders.image_slice(e, start=[-5, -5], end=[20, 20], out_of_bounds_policy="pad",
                                fill_values=[255], dtype=name)))
    for f, a, c, s in zip(full, img, crop, sl):
        assert a.dtype == DTYPES[name] and a.shape == f.shape
        np.testing.assert_array_equal(a, scaled(f, name))
        h, w = f.shape[:2]
        y, x = int(np.floor(0.5 * (h - 40) + 0.5)), int(np.floor(0.5 * (w - 30) + 0.5))
        np.testing.assert_array_equal(c, scaled(f[y:y + 40, x:x + 30], name))
        pad = np.full((25, 25, 3), 255, np.uint8)
        pad[5:, 5:] = f[:20, :20]
        np.testing.assert_array_equal(s, scaled(pad, name))


def test_float_alias_and_gray(photos):
    full, a, g = decode(photos[:2], lambda e: (fn.decoders.image(e, dtype=types.FLOAT),
                                               fn.decoders.image(e, dtype="float",
                                                                 output_type="GRAY")))
    for f, x, y in zip(full, a, g):
        assert x.dtype == np.float32 and y.shape == f.shape[:2] + (1,)
        np.testing.assert_allclose(x, f / 255.0, rtol=1e-6)


def test_dtype_is_refused_on_the_mixed_device(photos, fake_gpu):
    with pytest.raises(StokerError, match="CPU-only"):
        decode(photos[:1], lambda e: (fn.decoders.image(e, device="mixed", dtype="float32"),),
               device_id=0)


def test_tuning_arguments_are_accepted_without_effect(photos):
    kw = dict(affine=False, hybrid_huffman_threshold=10, jpeg_fancy_upsampling=True,
              device_memory_padding_jpeg2k=1024, host_memory_padding_jpeg2k=1024)
    cache = dict(cache_size=100, cache_threshold=1000, cache_type="largest", cache_debug=True,
                 cache_batch_copy=False)
    full, a, b = decode(photos[:3], lambda e: (fn.decoders.image(e, **kw, **cache),
                                               fn.decoders.image_random_crop(e, **kw)))
    for f, x in zip(full, a):
        np.testing.assert_array_equal(f, x)


DALI_SCRIPT = r"""
import pickle, sys
import numpy as np
from nvidia.dali import pipeline_def, fn, types
files, names = pickle.loads(sys.stdin.buffer.read())
res = {}
for name in names:
    dt = {"uint8": types.UINT8, "int8": types.INT8, "uint16": types.UINT16,
          "int16": types.INT16, "uint32": types.UINT32, "int32": types.INT32,
          "float32": types.FLOAT}[name]
    @pipeline_def(batch_size=len(files), num_threads=1, device_id=None)
    def p():
        e, _ = fn.readers.file(files=files)
        return fn.decoders.image(e, dtype=dt)
    pipe = p()
    pipe.build()
    o = pipe.run()[0]
    res[name] = [np.array(o[i]) for i in range(len(files))]
sys.stdout.buffer.write(pickle.dumps(res))
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI 2.4 oracle venv absent")
def test_dtype_matches_dali_on_pngs(photos):
    files = [p for p in photos if p.endswith(".png")][:2]
    r = subprocess.run([DALI_PY, "-c", DALI_SCRIPT], input=pickle.dumps((files, list(DTYPES))),
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    want = pickle.loads(r.stdout)
    got = decode(files, lambda e: tuple(fn.decoders.image(e, dtype=n) for n in DTYPES))[1:]
    for name, outs in zip(DTYPES, got):
        for g, w in zip(outs, want[name]):
            assert g.dtype == w.dtype, name
            np.testing.assert_array_equal(g, w, err_msg=name)


def test_peek_image_shape_image_type(photos):
    """DALI 2.4 CPU, for chelsea.png (RGB), camera.png (grayscale) and rocket.jpg: C is 3
    for RGB (the default), BGR and YCbCr, 1 for GRAY, and 3, 1, 3 for ANY_DATA."""
    files = [p for p in photos if p.endswith(("chelsea.png", "camera.png", "rocket.jpg"))]
    files.sort(key=lambda p: ["chelsea.png", "camera.png", "rocket.jpg"].index(
        os.path.basename(p)))
    types_ = ["RGB", "BGR", "YCbCr", "GRAY", "ANY_DATA"]
    full, default, *outs = decode(files, lambda e: (fn.peek_image_shape(e),) + tuple(
        fn.peek_image_shape(e, image_type=t) for t in types_))
    want_c = {"RGB": [3, 3, 3], "BGR": [3, 3, 3], "YCbCr": [3, 3, 3], "GRAY": [1, 1, 1],
              "ANY_DATA": [3, 1, 3]}
    for i, f in enumerate(full):
        assert list(default[i]) == [f.shape[0], f.shape[1], 3]
        for t, o in zip(types_, outs):
            assert list(o[i]) == [f.shape[0], f.shape[1], want_c[t][i]], t
