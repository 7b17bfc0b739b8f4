"""The mixed decoder's nvJPEG memory arguments (DALI's device_memory_padding,
host_memory_padding, preallocate_width_hint, preallocate_height_hint).

The argument checks run everywhere (CI included); the decoding tests only where a GPU
pipeline can run (the GPU machine, scripts/gpu-check.sh ops)."""
import os

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.errors import StokerError

from gpu_parity import requires_gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTO_DIR = os.path.join(ROOT, "data", "photos")
JPEGS = sorted(os.path.join(PHOTO_DIR, f) for f in os.listdir(PHOTO_DIR) if f.endswith(".jpg"))


def decode_pipe(device, device_id, **decoder_args):
    @stoker.pipeline_def(batch_size=len(JPEGS), num_threads=2, seed=3, device_id=device_id)
    def pipe():
        jpegs, _ = fn.readers.file(files=JPEGS, name="Reader")
        return fn.decoders.image(jpegs, device=device, **decoder_args)
    p = pipe()
    p.build()
    return p


def images_of(p):
    (out,) = p.run()
    if hasattr(out, "as_cpu"):
        out = out.as_cpu()
    return [np.asarray(out.at(i)) for i in range(len(JPEGS))]


@pytest.mark.parametrize("arg,value", [("device_memory_padding", -1), ("host_memory_padding", -5),
                                       ("preallocate_width_hint", -1), ("preallocate_height_hint", 70000)])
def test_out_of_range_memory_arguments_are_refused_by_name(arg, value):
    with pytest.raises(StokerError, match=arg):
        decode_pipe("cpu", None, **{arg: value})


def test_memory_arguments_change_nothing_on_the_cpu():
    plain = images_of(decode_pipe("cpu", None))
    tuned = images_of(decode_pipe("cpu", None, device_memory_padding=0, host_memory_padding=0,
                                  preallocate_width_hint=640, preallocate_height_hint=480))
    for a, b in zip(plain, tuned):
        assert np.array_equal(a, b)


@requires_gpu
@pytest.mark.parametrize("args", [
    {"device_memory_padding": 0, "host_memory_padding": 0},
    {"device_memory_padding": 64 << 20, "host_memory_padding": 32 << 20},
    {"preallocate_width_hint": 4096, "preallocate_height_hint": 4096},
])
def test_mixed_decoding_is_the_same_with_any_memory_arguments(args):
    # hw_decoder_load 1.0: every JPEG the engines take goes to them, so runs compare bit for bit
    ref = decode_pipe("mixed", 0, hw_decoder_load=1.0)
    tuned = decode_pipe("mixed", 0, hw_decoder_load=1.0, **args)
    cpu = images_of(decode_pipe("cpu", None))
    for _ in range(2):  # the second batch reuses what the first allocated
        for name, a, b, c in zip(JPEGS, images_of(ref), images_of(tuned), cpu):
            assert np.array_equal(a, b), name
            assert a.shape == c.shape and np.abs(a.astype(int) - c).mean() < 1.0, name


@requires_gpu
def test_a_preallocation_the_device_cannot_hold_fails_cleanly():
    # 65535 x 65535 x 3 bytes for each of the batch's images: terabytes. nvJPEG refuses, the
    # run fails with a message naming the hint, and the process goes on decoding.
    p = decode_pipe("mixed", 0, hw_decoder_load=1.0, preallocate_width_hint=65535, preallocate_height_hint=65535)
    try:
        images = images_of(p)
    except StokerError as e:
        assert "preallocate" in str(e)
    else:  # a decoder without the hardware engines never pre-allocates: then it must decode
        assert len(images) == len(JPEGS) and all(im.ndim == 3 for im in images)
    again = images_of(decode_pipe("mixed", 0))
    assert len(again) == len(JPEGS)
