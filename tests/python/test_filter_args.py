"""filter / experimental.filter take DALI's third input, fill_value (a scalar per sample
for border "constant"), as their per-sample fill_value argument; checked against the
constant border worked out by hand and against the argument form; transforms.scale's
ndim (2D only); flip's depthwise (NumPy's flip along D)."""

import numpy as np
import pytest

from stoker import fn, pipeline_def
from stoker.errors import StokerError


def run(data, layout="HWC", op=None, **kw):
    @pipeline_def(batch_size=len(data), num_threads=1)
    def pipe():
        x = fn.external_source(source=lambda: data, layout=layout)
        return op(x, **kw)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.array(out[i]) for i in range(len(data))]

def test_filter_fill_value_as_third_input():
    img = np.full((4, 5, 1), 10, np.float32)
    k = np.full((3, 3), 1.0, np.float32)

    def build(x):
        kern = fn.external_source(source=lambda: [k])
        fill = fn.external_source(source=lambda: [np.float32(100)])
        return fn.filter(x, kern, fill, border="constant")

    (got,) = run([img], layout="HWC", op=lambda x, **kw: build(x))
    # corner: 4 taps inside (10) and 5 outside (100); centre-row edge: 6 inside, 3 outside
    assert got[0, 0, 0] == 4 * 10 + 5 * 100 and got[1, 0, 0] == 6 * 10 + 3 * 100
    assert got[1, 1, 0] == 90
    (arg,) = run([img], layout="HWC", op=lambda x, **kw: fn.filter(
        x, kernel=k.ravel().tolist(), border="constant", fill_value=100))
    np.testing.assert_array_equal(got, arg)
    with pytest.raises(StokerError, match="both as input 2 and as an argument"):
        run([img], layout="HWC", op=lambda x, **kw: fn.filter(
            x, fn.external_source(source=lambda: [k]), np.float32(1), fill_value=2))


def test_transforms_scale_ndim():
    """DALI's ndim says how many dimensions a scalar scale has; stoker's transforms are
    2D: ndim=2 gives [[s, 0, 0], [0, s, 0]], other values are refused."""
    @pipeline_def(batch_size=1, num_threads=1)
    def pipe(ndim):
        return fn.transforms.scale(scale=[3.0], ndim=ndim)

    np.testing.assert_array_equal(np.array(pipe(2).run()[0][0]), [[3, 0, 0], [0, 3, 0]])
    with pytest.raises(StokerError, match="2D"):
        pipe(3).run()


@pytest.mark.parametrize("layout,shape,axis", [
    ("DHWC", (2, 3, 4, 2), 0), ("CDHW", (2, 3, 4, 5), 1), ("FDHWC", (2, 3, 4, 5, 2), 1)])
def test_flip_depthwise(layout, shape, axis):
    """DALI 2.4 mirrors the D axis with depthwise=1 (and with horizontal / vertical too);
    without a D axis the argument does nothing (HWC, FHWC)."""
    x = np.arange(np.prod(shape), dtype=np.uint8).reshape(shape)
    d = run([x], layout=layout, op=lambda v: fn.flip(v, depthwise=1, horizontal=0))[0]
    np.testing.assert_array_equal(d, np.flip(x, axis))
    h, w = layout.index("H"), layout.index("W")
    all3 = run([x], layout=layout, op=lambda v: fn.flip(v, depthwise=1, horizontal=1,
                                                        vertical=1))[0]
    np.testing.assert_array_equal(all3, np.flip(x, (axis, h, w)))


def test_flip_depthwise_without_d_and_on_gpu(fake_gpu):
    x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    got = run([x], layout="HWC", op=lambda v: fn.flip(v, depthwise=1, horizontal=0))[0]
    np.testing.assert_array_equal(got, x)
    vol = np.zeros((2, 3, 4, 1), np.uint8)

    @pipeline_def(batch_size=1, num_threads=1, device_id=0)
    def pipe():
        v = fn.external_source(source=lambda: [vol], layout="DHWC")
        return fn.flip(v.gpu(), depthwise=1)

    with pytest.raises(StokerError, match="CPU only"):
        pipe().run()
