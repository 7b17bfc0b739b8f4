"""dump_image on the GPU (issue 22): the batch is copied to the host, the same files as the
CPU operator are written, and the images pass through. Against tests/fake_gpu (the host
side: copies, the wait, file names) and, on a GPU machine, the CUDA backend. References:
the input arrays and Pillow's reading of the files."""
import os

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.errors import StokerError

from gpu_parity import gpu_available

Image = pytest.importorskip("PIL.Image")


@pytest.fixture(params=["fake", "cuda"])
def gpu(request):
    if request.param == "fake":
        request.getfixturevalue("fake_gpu")
    elif not gpu_available():
        pytest.skip("needs a CUDA device (runs on the GPU machine)")


RNG = np.random.default_rng(11)
IMAGES = [RNG.integers(0, 256, size=s, dtype=np.uint8) for s in ((5, 7, 3), (4, 3, 3), (6, 2, 3))]


def run(graph, data, layout, **kw):
    def define():
        x = fn.external_source(source=lambda: list(data), layout=layout)
        return graph(x)

    pipe = stoker.pipeline_def(define, batch_size=len(data), num_threads=1, device_id=0, **kw)()
    return pipe.run()


@pytest.mark.parametrize("from_gpu", [True, False])
def test_files_and_passthrough(gpu, tmp_path, monkeypatch, from_gpu):
    monkeypatch.chdir(tmp_path)
    (out,) = run(lambda x: fn.dump_image(x.gpu() if from_gpu else x, suffix="_g", device="gpu"),
                 IMAGES, "HWC")
    assert out.device == "gpu" and out.layout() == "HWC"
    host = out.as_cpu()
    for i, img in enumerate(IMAGES):
        np.testing.assert_array_equal(np.asarray(host[i]), img)
        written = np.asarray(Image.open(tmp_path / f"dump_image_g_{i}.ppm"))
        np.testing.assert_array_equal(written, img)
    # the pipeline may run ahead: later batches' files (ordinals 3, 4, ...) may exist, and
    # may still be being written; the first batch's are complete once run() returned
    names = sorted(os.listdir(tmp_path), key=lambda f: int(f.split("_")[-1].split(".")[0]))
    assert names[:3] == [f"dump_image_g_{i}.ppm" for i in range(3)]


def test_chw_and_gray_match_the_cpu(gpu, tmp_path, monkeypatch):
    """The same bytes in the same files as the CPU operator, for CHW and 1-channel input."""
    chw = [np.ascontiguousarray(a.transpose(2, 0, 1)) for a in IMAGES]
    gray = [a[:, :, :1].copy() for a in IMAGES]
    files = {}
    for dev in ("cpu", "gpu"):
        d = tmp_path / dev
        d.mkdir()
        monkeypatch.chdir(d)
        run(lambda x: fn.dump_image(x.gpu() if dev == "gpu" else x, input_layout="CHW", device=dev),
            chw, "CHW")
        run(lambda x: fn.dump_image(x.gpu() if dev == "gpu" else x, suffix="_gray", device=dev),
            gray, "HWC")
        # the first batch's files (the pipeline may have run ahead by a varying amount)
        files[dev] = {f: (d / f).read_bytes() for f in sorted(os.listdir(d))
                      if int(f.split("_")[-1].split(".")[0]) < 3}
    assert files["cpu"] == files["gpu"] and len(files["gpu"]) == 6
    written = np.asarray(Image.open(tmp_path / "gpu" / "dump_image_gray_1.pgm"))
    np.testing.assert_array_equal(written, gray[1][:, :, 0])


def test_bad_input_names_the_sample(gpu, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = [IMAGES[0], IMAGES[1][:, :, :2].copy()]
    with pytest.raises(StokerError, match="dump_image.*sample 1.*1 or 3 channels"):
        run(lambda x: fn.dump_image(x.gpu(), device="gpu"), data, "HWC")
