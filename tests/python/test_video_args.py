"""The video readers' DALI tuning argument additional_decode_surfaces (NVDEC surfaces):
accepted, with no effect on the frames (stoker decodes with FFmpeg on the CPU)."""

import numpy as np

from stoker import fn, pipeline_def

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
