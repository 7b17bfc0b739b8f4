"""reductions.mean / mean_square / rms with `dtype`: the NumPy statistics, and integer
outputs truncated toward zero as DALI 2.4 casts them (its CPU operators give
mean([[0, 1], [1, 1], [1, 2]], axes=[0], dtype=UINT8) = [0, 1] and rms = [0, 1]; for
arange(12).reshape(3, 4) rms over axis 0 = [5, 5, 6, 7])."""

import numpy as np
import pytest

from stoker import fn, pipeline_def

X = np.array([[0, 1], [1, 1], [1, 2]], np.uint8)
R = np.arange(12, dtype=np.uint8).reshape(3, 4)


def red(name, x, **kw):
    @pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        return getattr(fn.reductions, name)(fn.external_source(source=lambda: [x]), **kw)

    return np.array(pipe().run()[0][0])


def test_integer_means_truncate_as_dali():
    np.testing.assert_array_equal(red("mean", X, axes=[0], dtype="uint8"), [0, 1])
    np.testing.assert_array_equal(red("rms", X, axes=[0], dtype="uint8"), [0, 1])
    got = red("rms", R, axes=[0], dtype="uint8")
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, [5, 5, 6, 7])
    np.testing.assert_array_equal(got, np.sqrt((R.astype(float) ** 2).mean(0)).astype(np.uint8))


@pytest.mark.parametrize("name,ref", [
    ("mean_square", lambda v: (v.astype(np.float64) ** 2).mean(0)),
    ("rms", lambda v: np.sqrt((v.astype(np.float64) ** 2).mean(0)))])
@pytest.mark.parametrize("dtype,np_dtype", [("float32", np.float32), ("float64", np.float64)])
def test_float_outputs(name, ref, dtype, np_dtype):
    got = red(name, R, axes=[0], dtype=dtype)
    assert got.dtype == np_dtype
    np.testing.assert_allclose(got, ref(R), rtol=1e-6)
    # the default stays float32
    assert red(name, R, axes=[0]).dtype == np.float32
