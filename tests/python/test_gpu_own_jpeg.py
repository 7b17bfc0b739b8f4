"""stoker's own GPU JPEG decoder on a real GPU (gpu_decoder_load): the kernels of
src/cuda/jpeg_own.cu, jpeg_huffman.cu and jpeg_idct.cu against the CPU pipeline, byte for
byte, over every chroma subsampling, gray, restart markers, odd sizes, regions, output
colours and corrupt data; test_own_jpeg_fake.py checks the same contract through the CPU
stand-in backend."""
import numpy as np
import pytest

import stoker
from stoker import fn

from gpu_parity import requires_gpu
from test_gpu_stage_fake import build, host_samples
from test_own_jpeg_fake import assert_ends_as_on_the_cpu, corrupt_scan, jpeg_variants

pytestmark = requires_gpu


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    return jpeg_variants(tmp_path_factory.mktemp("own_jpeg"))


def compare(variants, op, load, batch, batches, output_type=stoker.types.RGB, exact=True):
    """Runs the mixed decoder with gpu_decoder_load=load beside the CPU one. exact: every
    sample but the progressive file (nvJPEG's) must be the CPU's byte for byte (a share of
    1); else samples may be nvJPEG's, held to its agreement with libjpeg-turbo."""
    def graph(device, **kw):
        jpegs, labels = fn.readers.file(files=variants, labels=list(range(len(variants))),
                                        name="Reader")
        decode = getattr(fn.decoders, op)
        return decode(jpegs, device=device, output_type=output_type, **kw), labels

    gpu = build(lambda: graph("mixed", gpu_decoder_load=load), 0, batch_size=batch)
    cpu = build(lambda: graph("cpu"), None, batch_size=batch)
    for _ in range(batches):
        (g, gl), (c, cl) = gpu.run(), cpu.run()
        labels = [int(x.reshape(-1)[0]) for x in host_samples(gl)]
        for k, a, b in zip(labels, host_samples(g), host_samples(c)):
            assert a.shape == b.shape, variants[k]
            d = np.abs(a.astype(int) - b.astype(int))
            if not exact or variants[k].endswith("progressive.jpg"):  # nvJPEG may decode it
                assert d.mean() < 2, f"{variants[k]}: mean |d| {d.mean():.2f}"
                continue
            assert d.max() == 0, f"{variants[k]}: {np.count_nonzero(d)} values differ, max {d.max()}"
    return gpu.decoder_diagnostics()


@pytest.mark.parametrize("op", ["image", "image_random_crop"])
def test_every_sample_to_the_own_decoder_is_the_cpu_decode(variants, op):
    diag = compare(variants, op, 1.0, len(variants), 3)
    # all but the progressive file, in every batch (prefetched ones count too)
    assert diag["own_decoded"] >= 3 * (len(variants) - 1)
    assert diag["own_decoded"] % (len(variants) - 1) == 0


@pytest.mark.parametrize("output_type", [stoker.types.GRAY, stoker.types.BGR])
def test_output_colours(variants, output_type):
    diag = compare(variants, "image", 1.0, len(variants), 1, output_type)
    assert diag["own_decoded"] >= len(variants) - 1


def test_half_share_beside_the_engines(variants):
    """Half of each batch's files to the own decoder, the rest to nvJPEG's engines at the
    same time, over several batches of a ragged, repeated set."""
    diag = compare(variants * 4, "image_random_crop", 0.5, 32, 12, exact=False)
    assert diag["own_decoded"] > 0 and diag["own_share"] == 0.5


def test_balanced_share_beside_the_engines(variants):
    """gpu_decoder_load=-2: the balancer moves the share from 0.3 within its clamp, and the
    samples are the CPU's (own decoder) or within nvJPEG's agreement with it."""
    diag = compare(variants * 4, "image_random_crop", -2.0, 32, 16, exact=False)
    assert diag["own_decoded"] > 0
    assert 0.02 <= diag["own_share"] <= 0.95 and diag["own_share"] != 0.3


def test_default_share_beside_the_engines_is_none(variants):
    diag = compare(variants, "image", -1.0, len(variants), 2, exact=False)
    assert diag["own_decoded"] == 0


def test_corrupt_data_ends_as_on_the_cpu(variants, tmp_path):
    bad = [corrupt_scan(variants[0], tmp_path / f"bad{i}.jpg", i) for i in range(6)]
    assert_ends_as_on_the_cpu(variants[:6] + bad, batches=3)
