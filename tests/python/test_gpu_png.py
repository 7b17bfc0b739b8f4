"""decoders.image(device="mixed") on PNG files through the GPU PNG decoder, against the
CPU pipeline (libspng), on two backends: "fake" (everywhere: tests/fake_gpu/fake_gpu.c
runs the device routines of src/shared/inflate.h and png_common.h on the host, so the
planning, batching, fallbacks and bad-sample policy of src/ops/decoders.c are checked
without a GPU) and "gpu" (the kernels of src/cuda/png.cu; the GPU machine only)."""
import os
import struct
import zlib

import numpy as np
import pytest

import stoker
from stoker import fn
from png_writer import SAMPLES, chunk, write_png

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
FAKE_GPU = os.path.join(BUILD, "libstk_fake_gpu.so")
RNG = np.random.default_rng(23)


def variants(tmp_path):
    files = []
    for i, (ctype, depth, interlace) in enumerate([
            (0, 1, False), (0, 2, True), (0, 4, False), (0, 8, True), (0, 16, False),
            (2, 8, False), (2, 16, True), (3, 1, True), (3, 4, False), (3, 8, True),
            (4, 8, False), (4, 16, True), (6, 8, True), (6, 16, False)]):
        h, w = int(RNG.integers(5, 40)), int(RNG.integers(5, 40))
        s = SAMPLES[ctype]
        palette = trns = None
        top = 1 << depth
        if ctype == 3:
            n = int(RNG.integers(1, min(top, 256) + 1))
            palette = RNG.integers(0, 256, (n, 3))
            top = n
            trns = bytes(RNG.integers(0, 256, min(n, 3)).astype(np.uint8))
        img = RNG.integers(0, top, (h, w * s))
        name = tmp_path / f"v{i}_{ctype}_{depth}_{int(interlace)}.png"
        files.append(write_png(name, img, ctype, depth, interlace, palette, trns))
    return files


@pytest.fixture(params=["fake", "gpu"])
def backend(request, monkeypatch):
    if request.param == "fake":
        if not os.path.exists(FAKE_GPU):
            pytest.skip("the fake GPU backend is not built")
        monkeypatch.setenv("STK_CUDA_LIBRARY", FAKE_GPU)
    else:
        import gpu_parity
        if not gpu_parity.gpu_available():
            pytest.skip("needs a CUDA device (runs on the GPU machine)")
    return request.param


def build(graph, device_id, batch_size, **kw):
    @stoker.pipeline_def(batch_size=batch_size, num_threads=2, seed=4, device_id=device_id, **kw)
    def pipe():
        return graph()
    p = pipe()
    p.build()
    return p


def host_samples(tl):
    if hasattr(tl, "as_cpu"):
        tl = tl.as_cpu()
    return [np.asarray(tl.at(i)) for i in range(len(tl))]


@pytest.mark.parametrize("color", ["RGB", "BGR", "GRAY"])
def test_every_png_kind_decodes_on_the_device_path_like_the_cpu(backend, tmp_path, color):
    files = variants(tmp_path)

    def graph(device):
        enc, _ = fn.readers.file(files=files, name="Reader")
        return fn.decoders.image(enc, device=device, output_type=color)

    gpu = build(lambda: graph("mixed"), 0, batch_size=len(files))
    cpu = build(lambda: graph("cpu"), None, batch_size=len(files))
    (g,), (c,) = gpu.run(), cpu.run()
    for f, a, b in zip(files, host_samples(g), host_samples(c)):
        assert a.shape == b.shape and np.array_equal(a, b), f
    # none went the old way (decoded by libspng in the CPU stage and uploaded)
    assert gpu.stats()["host_decoded"] == 0


def test_random_crop_of_pngs_matches_the_cpu(backend, tmp_path):
    files = variants(tmp_path)

    def graph(device):
        enc, _ = fn.readers.file(files=files, name="Reader")
        return fn.decoders.image_random_crop(enc, device=device, seed=7)

    gpu = build(lambda: graph("mixed"), 0, batch_size=len(files))
    cpu = build(lambda: graph("cpu"), None, batch_size=len(files))
    for _ in range(2):
        (g,), (c,) = gpu.run(), cpu.run()
        for a, b in zip(host_samples(g), host_samples(c)):
            assert a.shape == b.shape and np.array_equal(a, b)
    assert gpu.stats()["host_decoded"] == 0


def test_files_the_planner_refuses_are_decoded_in_the_cpu_stage(backend, tmp_path):
    img = RNG.integers(0, 256, (9, 12 * 3))
    plain = write_png(tmp_path / "plain.png", img, 2, 8)
    # a private ancillary chunk: libspng skips it, the planner does not take the file
    text = write_png(tmp_path / "text.png", img, 2, 8, extra=chunk(b"stKr", b"private data"))

    def graph(device):
        enc, _ = fn.readers.file(files=[plain, text], name="Reader")
        return fn.decoders.image(enc, device=device)

    # synchronous: exactly one batch has run when the count is read (no prefetching)
    gpu = build(lambda: graph("mixed"), 0, batch_size=2, exec_async=False, exec_pipelined=False)
    (g,), (c,) = gpu.run(), build(lambda: graph("cpu"), None, batch_size=2).run()
    for a, b in zip(host_samples(g), host_samples(c)):
        assert np.array_equal(a, b)
    assert gpu.stats()["host_decoded"] == 1  # text.png only


def damaged_copy(path, out):
    """A bit flipped in the compressed data with the chunk's CRC fixed: the planner takes
    the file, the inflater (or the Adler-32) finds the damage."""
    d = bytearray(open(path, "rb").read())
    at = d.index(b"IDAT") + 4
    n = struct.unpack(">I", d[at - 8:at - 4])[0]
    d[at + n // 2] ^= 0x10
    d[at + n:at + n + 4] = struct.pack(">I", zlib.crc32(bytes(d[at - 4:at + n])))
    out.write_bytes(bytes(d))
    return str(out)


def test_damaged_png_is_an_error_or_skipped(backend, tmp_path):
    img = RNG.integers(0, 256, (40, 40 * 3))
    good = [write_png(tmp_path / f"good{i}.png", img, 2, 8) for i in range(3)]
    bad = damaged_copy(good[0], tmp_path / "damaged.png")
    files = good + [bad]
    labels = list(range(len(files)))

    def graph():
        enc, lab = fn.readers.file(files=files, labels=labels, name="Reader")
        return fn.decoders.image(enc, device="mixed"), lab

    strict = build(graph, 0, batch_size=len(files))
    with pytest.raises(stoker.errors.StokerError, match="damaged.png"):
        strict.run()
    p = build(graph, 0, batch_size=len(files), on_error="skip", exec_async=False,
              exec_pipelined=False)
    images, lab = p.run()
    assert len(host_samples(images)) == len(files) - 1
    assert p.stats()["skipped"] == 1 and "damaged.png" in p.stats()["skipped_samples"][0]
