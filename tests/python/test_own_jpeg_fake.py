"""stoker's own GPU JPEG decoder inside the mixed decoders (gpu_decoder_load), without a
GPU: the C library loads tests/fake_gpu (a CPU stand-in) whose jpeg_decode kernel runs the
decoder's own per-thread code (src/shared/jpeg_huffman.h, jpeg_pixels.h) on the host. The
contract checked here is the user's: with any share given to that decoder, the pipeline
gives the CPU pipeline's images byte for byte (libjpeg-turbo, accurate IDCT, fancy
upsampling), every sample once, corrupt files under the bad-sample policy, and the files
the decoder does not take (progressive) still decoded. The kernels themselves run on the
GPU machine (test_gpu_own_jpeg.py)."""
import io
import os

import numpy as np
import pytest
from PIL import Image

import stoker
from stoker import fn

from test_gpu_stage_fake import build, host_samples

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTO_DIR = os.path.join(ROOT, "data", "photos")
PHOTOS = sorted(os.path.join(PHOTO_DIR, f) for f in os.listdir(PHOTO_DIR) if f.endswith(".png"))


def jpeg_variants(tmp_path):
    """JPEGs of the test photos in every chroma subsampling, gray, with restart markers,
    optimised tables, odd sizes, and a progressive one (which the decoder refuses)."""
    files = []
    for k, png in enumerate(PHOTOS):
        img = Image.open(png).convert("RGB")
        w, h = img.size
        crop = img.crop((0, 0, w - 3 * k - 1, h - 5 * k - 2))  # odd sizes
        for j, (kind, args) in enumerate([
                ("420", dict(subsampling=2, quality=90)),
                ("422", dict(subsampling=1, quality=75)),
                ("444", dict(subsampling=0, quality=95, optimize=True)),
                ("rst", dict(subsampling=2, quality=85, restart_marker_blocks=7)),
                ("rows", dict(subsampling=1, quality=80, restart_marker_rows=1))]):
            src = crop if j % 2 else img
            path = tmp_path / f"p{k}_{kind}.jpg"
            src.save(path, "JPEG", **args)
            files.append(str(path))
        gray = tmp_path / f"p{k}_gray.jpg"
        img.convert("L").save(gray, "JPEG", quality=90)
        files.append(str(gray))
    prog = tmp_path / "progressive.jpg"
    Image.open(PHOTOS[0]).convert("RGB").save(prog, "JPEG", progressive=True, quality=90)
    files.append(str(prog))
    return files


@pytest.fixture
def variants(tmp_path):
    return jpeg_variants(tmp_path)


@pytest.mark.parametrize("load", [1.0, 0.5])
@pytest.mark.parametrize("op", ["image", "image_random_crop"])
def test_any_share_gives_the_cpu_images(fake_gpu, variants, load, op):
    def graph(device, **kw):
        jpegs, labels = fn.readers.file(files=variants, labels=list(range(len(variants))),
                                        name="Reader")
        decode = getattr(fn.decoders, op)
        return decode(jpegs, device=device, **kw), labels

    n = len(variants)
    gpu = build(lambda: graph("mixed", gpu_decoder_load=load), 0, batch_size=8)
    cpu = build(lambda: graph("cpu"), None, batch_size=8)
    seen = []
    for _ in range(2 * ((n + 7) // 8)):
        (g, gl), (c, cl) = gpu.run(), cpu.run()
        for a, b in zip(host_samples(g), host_samples(c)):
            assert a.shape == b.shape and np.array_equal(a, b)
        seen += [int(x.reshape(-1)[0]) for x in host_samples(gl)]
    diag = gpu.decoder_diagnostics()
    if load == 1.0:  # every file the decoder takes (all but the progressive one), each epoch
        epochs_run = len(seen) / n
        assert diag["own_decoded"] >= int(epochs_run - 1) * (n - 1) and diag["own_decoded"] > 0
    else:
        assert diag["own_decoded"] > 0
    assert diag["own_share"] == load


def test_gray_output_and_bgr(fake_gpu, variants):
    for image_type in (stoker.types.GRAY, stoker.types.BGR):
        def graph(device, **kw):
            jpegs, _ = fn.readers.file(files=variants, name="Reader")
            return fn.decoders.image(jpegs, device=device, output_type=image_type, **kw)

        gpu = build(lambda: graph("mixed", gpu_decoder_load=1.0), 0, batch_size=len(variants))
        cpu = build(lambda: graph("cpu"), None, batch_size=len(variants))
        (g,), (c,) = gpu.run(), cpu.run()
        for a, b in zip(host_samples(g), host_samples(c)):
            assert a.shape == b.shape and np.array_equal(a, b)
        own = gpu.decoder_diagnostics()["own_decoded"]  # batches prefetched ahead count too
        assert own >= len(variants) - 1 and own % (len(variants) - 1) == 0


def corrupt_scan(path, out, seed):
    """The file with bytes of its entropy-coded data overwritten (no 0xFF, so no marker
    appears): the header parses, the data does not decode."""
    data = bytearray(open(path, "rb").read())
    sos = data.index(b"\xff\xda")
    scan = sos + 2 + (data[sos + 2] << 8 | data[sos + 3])
    rng = np.random.default_rng(seed)
    at = scan + 16 + int(rng.integers(0, (len(data) - scan - 40) // 2))
    data[at:at + 24] = bytes(rng.integers(0, 0xFF, 24, dtype=np.uint8))
    out.write_bytes(bytes(data))
    return str(out)


def test_data_the_decoder_cannot_decode_goes_to_the_cpu_verdict(fake_gpu, variants, tmp_path):
    """Corrupt scans: whatever the own decoder makes of them, the sample ends as the CPU
    pipeline's (libjpeg-turbo decodes such data with a warning) or is skipped with the CPU
    decoder's error; the good samples are untouched."""
    bad = [corrupt_scan(variants[0], tmp_path / f"bad{i}.jpg", i) for i in range(4)]
    assert_ends_as_on_the_cpu(variants[:6] + bad, batches=1)


def assert_ends_as_on_the_cpu(files, batches):
    """Every sample of the own decoder's pipeline (gpu_decoder_load=1, on_error="skip") is
    the CPU pipeline's, and the same samples are skipped."""
    def graph(device, **kw):
        jpegs, labels = fn.readers.file(files=files, labels=list(range(len(files))),
                                        name="Reader")
        return fn.decoders.image(jpegs, device=device, **kw), labels

    kw = dict(on_error="skip", exec_async=False, exec_pipelined=False)
    gpu = build(lambda: graph("mixed", gpu_decoder_load=1.0), 0, len(files), **kw)
    cpu = build(lambda: graph("cpu"), None, len(files), **kw)
    for _ in range(batches):
        (g, gl), (c, cl) = gpu.run(), cpu.run()
        g_by = dict(zip((int(x.reshape(-1)[0]) for x in host_samples(gl)), host_samples(g)))
        c_by = dict(zip((int(x.reshape(-1)[0]) for x in host_samples(cl)), host_samples(c)))
        assert sorted(g_by) == sorted(c_by)
        for k in c_by:
            assert np.array_equal(g_by[k], c_by[k]), files[k]


def test_out_of_range_share_is_refused(fake_gpu, variants):
    def graph():
        jpegs, _ = fn.readers.file(files=variants, name="Reader")
        return fn.decoders.image(jpegs, device="mixed", gpu_decoder_load=1.5)

    with pytest.raises(Exception, match="gpu_decoder_load"):
        build(graph, 0, batch_size=4)


def test_default_share_is_none_beside_engines(fake_gpu, variants):
    """gpu_decoder_load -1 (the default): the stand-in has hardware engines, so nvJPEG keeps
    every file (beside the engines the own decoder did not add throughput)."""
    def graph():
        jpegs, _ = fn.readers.file(files=variants, name="Reader")
        return fn.decoders.image(jpegs, device="mixed")

    p = build(graph, 0, batch_size=4)
    p.run()
    assert p.decoder_diagnostics()["own_decoded"] == 0


def test_default_share_is_all_without_engines(fake_gpu, variants, monkeypatch):
    """On a GPU without JPEG engines the default sends every file the own decoder takes to
    it (nvJPEG's only other path there is its hybrid one), with the CPU pipeline's bytes."""
    monkeypatch.setenv("STK_FAKE_GPU_NO_ENGINES", "1")

    def graph(device):
        jpegs, labels = fn.readers.file(files=variants, labels=list(range(len(variants))),
                                        name="Reader")
        return fn.decoders.image_random_crop(jpegs, device=device), labels

    gpu = build(lambda: graph("mixed"), 0, batch_size=len(variants))
    cpu = build(lambda: graph("cpu"), None, batch_size=len(variants))
    (g, _), (c, _) = gpu.run(), cpu.run()
    for a, b in zip(host_samples(g), host_samples(c)):
        assert a.shape == b.shape and np.array_equal(a, b)
    diag = gpu.decoder_diagnostics()
    assert diag["own_decoded"] >= len(variants) - 1 and diag["own_share"] == 1.0


def test_balanced_share_gives_the_cpu_images_and_adapts(fake_gpu, variants):
    """gpu_decoder_load=-2: the share adapts every batch (the stand-in's timings are
    artificial, so no target value is checked), stays within the balancer's clamp, and the
    images are the CPU pipeline's byte for byte whatever the share."""
    def graph(device, **kw):
        jpegs, labels = fn.readers.file(files=variants, labels=list(range(len(variants))),
                                        name="Reader")
        return fn.decoders.image(jpegs, device=device, **kw), labels

    gpu = build(lambda: graph("mixed", gpu_decoder_load=-2), 0, batch_size=8)
    cpu = build(lambda: graph("cpu"), None, batch_size=8)
    shares = []
    for _ in range(12):
        (g, gl), (c, cl) = gpu.run(), cpu.run()
        assert [int(x.reshape(-1)[0]) for x in host_samples(gl)] == \
            [int(x.reshape(-1)[0]) for x in host_samples(cl)]
        for a, b in zip(host_samples(g), host_samples(c)):
            assert a.shape == b.shape and np.array_equal(a, b)
        shares.append(gpu.decoder_diagnostics()["own_share"])
    assert all(0.02 <= s <= 0.95 for s in shares), shares
    assert len(set(shares)) > 1 and shares[-1] != 0.3, shares
    assert gpu.decoder_diagnostics()["own_decoded"] > 0


@pytest.mark.parametrize("load", [-3, -1.5, -0.5])
def test_other_negative_shares_are_refused(fake_gpu, variants, load):
    def graph():
        jpegs, _ = fn.readers.file(files=variants, name="Reader")
        return fn.decoders.image(jpegs, device="mixed", gpu_decoder_load=load)

    with pytest.raises(Exception, match="gpu_decoder_load"):
        build(graph, 0, batch_size=4)
