"""The video readers' DALI arguments: additional_decode_surfaces (NVDEC surfaces: accepted,
no effect on the frames, stoker decodes with FFmpeg on the CPU) and readers.video_resize's
size / resize_shorter / resize_longer / mode / max_size (output sizes worked out by
resize's rules for the 48 x 64 test clips)."""

import numpy as np
import pytest

from stoker import fn, pipeline_def
from stoker.errors import StokerError

from test_video import clips, read_all  # noqa: F401 (the clips fixture; skips without FFmpeg)


def test_video_decode_surfaces_accepted(clips):
    files = [str(clips["a"][0])]

    def frames(**kw):
        @pipeline_def(batch_size=2, num_threads=1, seed=1)
        def pipe():
            return fn.readers.video(filenames=files, sequence_length=3, name="R", **kw)

        p = pipe()
        p.build()
        return [np.array(t) for t in read_all(p, 1)[0]]

    for a, b in zip(frames(additional_decode_surfaces=8), frames()):
        np.testing.assert_array_equal(a, b)


def resized(clips, **kw):
    files = [str(clips["a"][0])]

    @pipeline_def(batch_size=1, num_threads=1, seed=1)
    def pipe():
        return fn.readers.video_resize(filenames=files, sequence_length=2, name="R", **kw)

    p = pipe()
    p.build()
    return np.array(p.run()[0][0])


@pytest.mark.parametrize("kw,hw", [
    # the clips are 48 x 64; sizes by resize's rules (stk__resize_plan)
    (dict(size=[24, 32]), (24, 32)),
    (dict(resize_shorter=24), (24, 32)),
    (dict(resize_longer=32), (24, 32)),
    (dict(size=[30, 30], mode="not_larger"), (23, 30)),   # scale 30/64: 22.5 -> 23
    (dict(size=[30, 30], mode="not_smaller"), (30, 40)),  # scale 30/48
    (dict(size=[40, 0], max_size=[20, 100]), (20, 53)),   # W = 64 * 40/48, H clipped
])
def test_video_resize_sizes(clips, kw, hw):
    got = resized(clips, **kw)
    assert got.shape == (2,) + hw + (3,)
    if hw == (24, 32):  # the same frames as resize_x / resize_y
        np.testing.assert_array_equal(got, resized(clips, resize_x=32, resize_y=24))


def test_video_resize_size_given_two_ways(clips):
    with pytest.raises(StokerError, match="one way"):
        resized(clips, size=[24, 32], resize_x=32)
