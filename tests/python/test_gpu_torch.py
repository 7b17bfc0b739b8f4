"""GPU pipelines through Python and torch (runs where torch sees a CUDA device: the GPU
machine; skipped elsewhere): zero-copy DLPack with stream ordering, values against the
CPU pipeline with the same seed, and a long loop that neither leaks nor races."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import stoker
from stoker import fn, types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = sorted(os.path.join(ROOT, "data", "photos", f) for f in os.listdir(os.path.join(ROOT, "data", "photos"))
                if f.endswith((".jpg", ".png")))
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


def make(device_id, gpu):
    @stoker.pipeline_def(batch_size=len(PHOTOS), num_threads=2, seed=9, device_id=device_id)
    def pipe():
        jpegs, labels = fn.readers.file(files=PHOTOS, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu")
        crops = fn.random_resized_crop(images, size=[224, 224], device="gpu" if gpu else "cpu")
        mirror = fn.random.coin_flip(probability=0.5)
        out = fn.crop_mirror_normalize(crops, mirror=mirror, mean=MEAN, std=STD, dtype=types.FLOAT,
                                       device="gpu" if gpu else "cpu")
        return out, labels
    p = pipe()
    p.build()
    return p


def test_torch_from_dlpack_shares_memory_and_matches_cpu():
    g, c = make(0, True), make(None, False)
    for _ in range(3):
        (og, lg), (oc, lc) = g.run(), c.run()
        t = torch.from_dlpack(og)
        assert t.is_cuda and t.shape == (len(PHOTOS), 3, 224, 224) and t.dtype == torch.float32
        assert t.data_ptr() == og.__cuda_array_interface__["data"][0]
        ref = np.asarray(oc.as_array())
        diff = np.abs(t.cpu().numpy() - ref)
        for i, f in enumerate(PHOTOS):
            if f.endswith(".png"):  # same decode on both: resampling parity within 1 LSB
                assert diff[i].max() <= 1.01 / 57.12, (f, diff[i].max())
            else:  # nvJPEG's IDCT differs from libjpeg's by a few LSB
                assert diff[i].mean() < 1.0 / 57.12, (f, diff[i].mean())


def test_long_loop_no_leak_no_race():
    g = make(0, True)
    s = torch.cuda.Stream()
    sums = []
    with torch.cuda.stream(s):
        for it in range(400):
            out, _ = g.run()
            t = torch.from_dlpack(out)
            sums.append(float(t.float().sum()))  # consumed on our stream
            del t, out
    stats = g.stats()
    assert stats["device_bytes_in_use"] < 512 << 20
    # the same seed replays the same batches: a race would change the values
    g2 = make(0, True)
    for it in range(5):
        out, _ = g2.run()
        assert abs(float(torch.from_dlpack(out).float().sum()) - sums[it]) < 1e-3 * max(1.0, abs(sums[it]))


def test_cpu_outputs_moved_to_gpu():
    """DataNode.gpu(): CPU decode + crop, then the normalisation on the GPU; the values
    equal the all-CPU pipeline exactly (same decode, same crop, exact normalisation)."""
    def make_moved(device_id, move):
        @stoker.pipeline_def(batch_size=len(PHOTOS), num_threads=2, seed=4, device_id=device_id)
        def pipe():
            jpegs, _ = fn.readers.file(files=PHOTOS, name="Reader")
            crops = fn.random_resized_crop(fn.decoders.image(jpegs), size=[96, 128])
            if move:
                crops = crops.gpu()
            return fn.crop_mirror_normalize(crops, mean=MEAN, std=STD, dtype=types.FLOAT,
                                            device="gpu" if move else "cpu")
        p = pipe()
        p.build()
        return p
    g, c = make_moved(0, True), make_moved(None, False)
    for _ in range(2):
        (og,), (oc,) = g.run(), c.run()
        assert og.__dlpack_device__()[0] == 2  # kDLCUDA
        np.testing.assert_array_equal(np.asarray(og.as_cpu().as_array()), np.asarray(oc.as_array()))


def test_copy_to_external_into_torch_tensors_on_their_stream():
    """TensorList / TensorGPU.copy_to_external (DALI's API) into a torch CUDA tensor (its
    __cuda_array_interface__), queued on torch's stream after the batch's producer."""
    g, c = make(0, True), make(None, False)
    (out, _), (ref, _) = g.run(), c.run()
    whole = torch.empty((len(PHOTOS), 3, 224, 224), dtype=torch.float32, device="cuda")
    stream = torch.cuda.Stream()
    out.copy_to_external(whole, cuda_stream=stream, non_blocking=True)
    stream.synchronize()
    np.testing.assert_allclose(whole.cpu().numpy(), ref.as_array(), atol=0.05)
    one = torch.empty((3, 224, 224), dtype=torch.float32, device="cuda")
    out[2].copy_to_external(one)
    assert torch.equal(one, whole[2])
