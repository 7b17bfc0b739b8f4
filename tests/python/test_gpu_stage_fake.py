"""GPU pipelines through the Python API without a GPU: the C library loads
tests/fake_gpu/fake_gpu.c (STK_CUDA_LIBRARY) instead of libstoker_cuda.so, a CPU backend
whose queued work (decodes included) runs only when something waits for it. Device
outputs, .as_cpu(), .gpu() and the bad-sample policy of the GPU stage are checked against
the CPU pipeline; the kernels themselves are tested on the GPU machine (test_gpu_*.py)."""
import os

import numpy as np
import pytest

import stoker
from stoker import fn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
FAKE = os.path.join(BUILD, "libstk_fake_gpu.so")
PHOTO_DIR = os.path.join(ROOT, "data", "photos")
PHOTOS = sorted(os.path.join(PHOTO_DIR, f) for f in os.listdir(PHOTO_DIR) if f.endswith((".jpg", ".png")))


def build(graph, device_id, batch_size=len(PHOTOS), **kw):
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


def label_values(tl):
    return [int(x.reshape(-1)[0]) for x in host_samples(tl)]


def test_mixed_decoding_matches_the_cpu_over_several_batches(fake_gpu):
    def graph(device):
        jpegs, labels = fn.readers.file(files=PHOTOS, name="Reader")
        return fn.decoders.image(jpegs, device=device), labels

    gpu = build(lambda: graph("mixed"), 0, batch_size=3)
    cpu = build(lambda: graph("cpu"), None, batch_size=3)
    for _ in range(5):  # 15 samples of 7 files: the reader wraps, the host pool's blocks are reused
        (g_img, g_lab), (c_img, c_lab) = gpu.run(), cpu.run()
        assert g_img.device == "gpu" and c_img.device == "cpu"
        for a, b in zip(host_samples(g_img), host_samples(c_img)):
            assert a.shape == b.shape and np.array_equal(a, b)
        assert label_values(g_lab) == label_values(c_lab)


@pytest.mark.parametrize("load", [1.0, 0.5, -1.0])
def test_cpu_decoder_load_decodes_in_the_cpu_stage(fake_gpu, load):
    """cpu_decoder_load: that share of every batch decoded by the CPU decoder in the CPU
    stage and uploaded (byte-identical to the CPU pipeline); counted in stats(). JPEGs
    only: PNGs are always decoded there, and would be counted too."""
    jpeg_files = [f for f in PHOTOS if f.endswith(".jpg")] * 4  # full batches of 4

    def graph(device, **kw):
        jpegs, _ = fn.readers.file(files=jpeg_files, name="Reader")
        return fn.decoders.image(jpegs, device=device, **kw)

    gpu = build(lambda: graph("mixed", cpu_decoder_load=load), 0, batch_size=4)
    cpu = build(lambda: graph("cpu"), None, batch_size=4)
    for _ in range(4):
        (g,), (c,) = gpu.run(), cpu.run()
        for a, b in zip(host_samples(g), host_samples(c)):
            assert a.shape == b.shape and np.array_equal(a, b)
    stats = gpu.stats()
    if load >= 0:
        per_batch = round(load * 4)
        assert stats["host_decoded"] >= 4 * per_batch and stats["host_decoded"] % per_batch == 0
        assert gpu.decoder_diagnostics()["host_decode_quota"] == 0  # a fixed share: no balance
    else:
        assert 0 <= gpu.decoder_diagnostics()["host_decode_quota"] <= 4


def test_cpu_decoder_load_out_of_range_is_refused(fake_gpu):
    def graph():  # JPEGs only: the PNGs are decoded in the CPU stage, not by the decode call
        jpegs, _ = fn.readers.file(files=[f for f in PHOTOS if f.endswith(".jpg")], name="Reader")
        return fn.decoders.image(jpegs, device="mixed", cpu_decoder_load=1.5)

    with pytest.raises(Exception, match="cpu_decoder_load"):
        build(graph, 0)


def test_cpu_outputs_moved_to_the_gpu_come_back_unchanged(fake_gpu):
    def graph():  # JPEGs only: the PNGs are decoded in the CPU stage, not by the decode call
        jpegs, _ = fn.readers.file(files=[f for f in PHOTOS if f.endswith(".jpg")], name="Reader")
        images = fn.decoders.image(jpegs)
        return images, images.gpu()

    (cpu_side, gpu_side), = [build(graph, 0).run()]
    assert gpu_side.device == "gpu"
    for a, b in zip(host_samples(cpu_side), host_samples(gpu_side)):
        assert np.array_equal(a, b)


def corrupt_copy(path, out):
    data = bytearray(open(path, "rb").read())
    sos = data.index(b"\xff\xda")
    scan = sos + 2 + (data[sos + 2] << 8 | data[sos + 3])
    mid = scan + (len(data) - 2 - scan) // 2
    data[mid:mid + 2] = b"\xff\xc4"  # a marker in the middle of the scan: the header still parses
    out.write_bytes(bytes(data))
    return str(out)


def test_corrupt_data_found_in_the_gpu_stage_is_skipped(fake_gpu, tmp_path):
    jpegs_only = [p for p in PHOTOS if p.endswith(".jpg")]
    bad = corrupt_copy(jpegs_only[0], tmp_path / "corrupt.jpg")
    files = jpegs_only + [bad]
    labels = list(range(len(files)))

    def graph():
        jpegs, lab = fn.readers.file(files=files, labels=labels, name="Reader")
        return fn.decoders.image(jpegs, device="mixed"), lab

    # synchronous: exactly one batch has run when the count is read (no prefetching)
    p = build(graph, 0, batch_size=len(files), on_error="skip", exec_async=False, exec_pipelined=False)
    images, lab = p.run()
    imgs, labs = host_samples(images), label_values(lab)
    # the rejected sample left the batch: every good file once, the corrupt one never
    assert len(imgs) == len(files) - 1 and sorted(labs) == labels[:-1]
    stats = p.stats()
    assert stats["skipped"] == 1 and "corrupt.jpg" in stats["skipped_samples"][0]
    assert p.last_batch_info() == {"epoch": 0, "ends_epoch": True, "size": len(files) - 1}

    strict = build(graph, 0, batch_size=len(files))
    with pytest.raises(stoker.errors.StokerError, match="corrupt.jpg"):
        strict.run()


def test_a_decode_call_that_never_returns_times_out(fake_gpu):
    """Issue 27 through the binding: the fake backend blocks inside its decode call; run()
    raises DeviceError within timeout_ms naming the stage and the batch, again on the next
    call, and close() returns; the call released afterwards returns into the kept pipeline."""
    import ctypes
    import time
    from stoker.errors import DeviceError

    lib = ctypes.CDLL(FAKE)  # the module the pipeline loads (same path: same instance)
    lib.stk_fake_gpu_hang_decodes.argtypes = [ctypes.c_int]

    def graph():  # JPEGs only: the PNGs are decoded in the CPU stage, not by the decode call
        jpegs, _ = fn.readers.file(files=[f for f in PHOTOS if f.endswith(".jpg")], name="Reader")
        return fn.cast(fn.decoders.image(jpegs, device="mixed"), dtype=stoker.types.UINT8, device="gpu")

    lib.stk_fake_gpu_hang_decodes(1)
    try:
        p = build(graph, 0, batch_size=2, timeout_ms=300)
        t0 = time.monotonic()
        with pytest.raises(DeviceError, match=r"decode stage .* on batch 0 .*timeout_ms|timeout_ms.*decode stage"):
            p.run()
        assert time.monotonic() - t0 < 5
        with pytest.raises(DeviceError, match="earlier error"):
            p.run()
        t0 = time.monotonic()
        p.close()
        assert time.monotonic() - t0 < 5
    finally:
        lib.stk_fake_gpu_hang_decodes(0)
    for _ in range(250):  # the released call leaves its thread (the pipeline stopped)
        if lib.stk_fake_gpu_hung_calls() == 0:
            break
        time.sleep(0.002)
    assert lib.stk_fake_gpu_hung_calls() == 0
    time.sleep(0.05)
