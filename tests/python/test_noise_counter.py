"""Counter-based noise on the CPU (src/shared/noise_common.h): an element's value depends
only on (seed, sample, element index, input value), so the same data as uint8 and as int16
give the same noise (up to uint8 saturation), whichever code path the type takes (uint8
shot noise uses per-value inversion tables, other types the direct loop the GPU runs)."""
import os

import numpy as np

import stoker
from stoker import fn, types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = [os.path.join(ROOT, "data", "photos", f) for f in ("astronaut.png", "chelsea.png", "coffee.png")]


def run(op):
    @stoker.pipeline_def(batch_size=len(PHOTOS), num_threads=2, device_id=None, seed=9)
    def pipe():
        data, _ = fn.readers.file(files=PHOTOS)
        img = fn.decoders.image(data, output_type=types.RGB)
        wide = fn.cast(img, dtype=types.INT16)
        return img, op(img), op(wide)

    p = pipe()
    p.build()
    img, a, b = p.run()
    return [np.asarray(x) for x in img], [np.asarray(x) for x in a], [np.asarray(x) for x in b]


def check_same(a, b):
    for x, y in zip(a, b):
        assert x.dtype == np.uint8 and y.dtype == np.int16
        np.testing.assert_array_equal(x, np.clip(y, 0, 255).astype(np.uint8))


def test_shot_u8_tables_match_direct_sampler():
    for factor in (0.7, 4.0, 20.0, 30.0):  # means below and above 10 (inversion / PTRS)
        img, a, b = run(lambda x: fn.noise.shot(x, factor=factor, seed=21))
        check_same(a, b)
        assert any((x != y).any() for x, y in zip(img, a))


def test_gaussian_and_salt_and_pepper_same_across_types():
    check_same(*run(lambda x: fn.noise.gaussian(x, stddev=12.0, mean=1.0, seed=22))[1:])
    check_same(*run(lambda x: fn.noise.salt_and_pepper(x, prob=0.2, salt_val=250, pepper_val=3, seed=23))[1:])
