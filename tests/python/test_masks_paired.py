"""The DALI-compatible way to transform an image and its segmentation mask identically
(docs/detection.md): the random arguments are nodes shared by the image's and the mask's
calls (or, for operators that draw internally, the same explicit seed), and the mask uses
nearest-neighbour interpolation. The image here is the label map itself, repeated over 3
channels, so with nearest-neighbour sampling every transformed image must equal the
transformed mask channel by channel, pixel by pixel."""

import numpy as np
import pytest

import stoker
from stoker import fn, types

N = 12


def label_maps():
    rng = np.random.default_rng(4)
    out = []
    for k in range(N):
        h, w = int(rng.integers(40, 90)), int(rng.integers(40, 90))
        m = np.zeros((h, w), np.uint8)
        for lab in range(1, 5):  # a few labelled rectangles
            y, x = int(rng.integers(0, h - 10)), int(rng.integers(0, w - 10))
            m[y:y + int(rng.integers(5, 30)), x:x + int(rng.integers(5, 30))] = lab * 50
        out.append(m)
    return out


MAPS = label_maps()


def run_pair(transform):
    def define():
        image = fn.external_source(source=lambda: [np.repeat(m[:, :, None], 3, 2) for m in MAPS],
                                   batch=True, layout="HWC")
        mask = fn.external_source(source=lambda: [m[:, :, None].copy() for m in MAPS],
                                  batch=True, layout="HWC")
        return transform(image, mask)

    pipe = stoker.pipeline_def(define, batch_size=N, num_threads=2, seed=9)()
    images, masks = pipe.run()
    return [np.array(i) for i in images], [np.array(m) for m in masks]


def assert_identical(images, masks, changed_by=None):
    changed = 0
    for k, (im, m) in enumerate(zip(images, masks)):
        assert im.shape[:2] == m.shape[:2], k
        for c in range(3):
            np.testing.assert_array_equal(im[:, :, c], m[:, :, 0], err_msg=f"sample {k}")
        changed += im.shape[:2] != MAPS[k].shape or not np.array_equal(im[:, :, 0], MAPS[k])
    assert changed > N // 3  # the transforms did something to most samples


def test_flip_rotate_shared_random_nodes():
    def transform(image, mask):
        h = fn.random.coin_flip(probability=0.5)
        v = fn.random.coin_flip(probability=0.5)
        angle = fn.random.uniform(range=[-40.0, 40.0])
        out = []
        for x in (image, mask):
            x = fn.flip(x, horizontal=h, vertical=v)
            out.append(fn.rotate(x, angle=angle, interp_type=types.INTERP_NN, fill_value=0))
        return tuple(out)

    assert_identical(*run_pair(transform))


def test_warp_affine_from_shared_transform():
    def transform(image, mask):
        mt = fn.transforms.rotation(angle=fn.random.uniform(range=[-20.0, 20.0]),
                                    center=[30.0, 30.0])
        mt = fn.transforms.scale(mt, scale=fn.random.uniform(range=[0.8, 1.2], shape=[2]))
        return tuple(fn.warp_affine(x, matrix=mt, inverse_map=False,
                                    interp_type=types.INTERP_NN, fill_value=0)
                     for x in (image, mask))

    assert_identical(*run_pair(transform))


def test_random_resized_crop_same_seed():
    def transform(image, mask):
        return tuple(fn.random_resized_crop(x, size=[48, 48], seed=1234,
                                            interp_type=types.INTERP_NN) for x in (image, mask))

    assert_identical(*run_pair(transform))


def test_different_seeds_would_not_pair():
    """The test above is not vacuous: without the shared seed the crops differ."""
    def transform(image, mask):
        return (fn.random_resized_crop(image, size=[48, 48], seed=1,
                                       interp_type=types.INTERP_NN),
                fn.random_resized_crop(mask, size=[48, 48], seed=2,
                                       interp_type=types.INTERP_NN))

    images, masks = run_pair(transform)
    with pytest.raises(AssertionError):
        assert_identical(images, masks)
