"""GPU video decoding (issue 26): decoders.video(device="mixed") and readers.video(device="gpu")
decode with NVDEC (FFmpeg's CUDA hwaccel) and convert on the GPU; they are compared here
with the CPU path on the same files.

On every machine: the schemas offer the devices, and building without a GPU / driver fails
with an error naming the operator and the reason; argument errors of the GPU forms are
caught at build. On a GPU machine (the lead's H100): frame indices identical to the CPU's
(each frame's red channel encodes its index, as in test_video.py), pixels within the
tolerance test_video_nv12 measures for the shared conversion (src/shared/video_yuv.h), step
and stride, several files, ragged batches, HEVC when the encoder exists, a corrupt file, and
many batches without growing device memory.

The test videos use only what the GPU machine's minimal FFmpeg has: rawvideo input,
libx264 in MP4 / MKV (HEVC needs libx265: skipped without it)."""

import shutil
import subprocess

import numpy as np
import pytest

import stoker
from stoker import fn, types, _schema

from gpu_parity import gpu_available, requires_gpu, to_numpy_samples
from test_video import has_encoder

pytestmark = [
    pytest.mark.skipif("decoders.video" not in _schema.registry(), reason="no video operators"),
    pytest.mark.skipif(not shutil.which("ffmpeg"), reason="no ffmpeg CLI to make test videos"),
]

H, W = 96, 128
# The conversion's agreement with the CPU path (tests/c/test_video_nv12.c measures it on
# photographs and colour bars; these clips are smooth gradients, well inside it).
ATOL, MISMATCH, MEAN = 6, 0.02, 1.8


def frames(n, offset=0):
    """n frames whose red channel is 5 * (index + offset): the index can be read back."""
    y, x = np.mgrid[0:H, 0:W]
    out = np.empty((n, H, W, 3), np.uint8)
    for i in range(n):
        out[i, ..., 0] = 5 * (i + offset) % 256
        out[i, ..., 1] = (x * 2 + i) % 256
        out[i, ..., 2] = (y * 2) % 256
    return out


def encode(path, video, codec="h264"):
    args = {"h264": ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "10", "-g", "6"],
            "hevc": ["-c:v", "libx265", "-pix_fmt", "yuv420p", "-crf", "10", "-x265-params",
                     "keyint=6:log-level=error"]}[codec]
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                    "-s", f"{W}x{H}", "-r", "25", "-i", "-", *args, str(path)],
                   input=video.tobytes(), check=True)
    return str(path)


def index_of(frame):
    return int(round(float(frame[..., 0].astype(np.float64).mean()) / 5))


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    if not has_encoder("libx264"):
        pytest.skip("ffmpeg has no libx264")
    d = tmp_path_factory.mktemp("video_gpu")
    return {"a": encode(d / "a.mp4", frames(30)), "b": encode(d / "b.mkv", frames(17, 20)),
            "dir": d}


def raw(path):
    return np.frombuffer(open(path, "rb").read(), np.uint8)


def assert_frames_close(cpu, gpu, what):
    assert cpu.shape == gpu.shape and cpu.dtype == gpu.dtype, f"{what}: {cpu.shape} vs {gpu.shape}"
    for f in range(cpu.shape[0]):
        assert index_of(cpu[f]) == index_of(gpu[f]), f"{what}: frame {f} is another frame"
    d = np.abs(cpu.astype(np.float64) - gpu.astype(np.float64))
    if d.size:
        assert d.mean() <= MEAN, f"{what}: mean |diff| {d.mean():.3f}"
        assert (d > ATOL).mean() <= MISMATCH, f"{what}: {(d > ATOL).mean():.4f} beyond {ATOL}"


# ---- every machine ----

def test_schemas_offer_the_gpu_devices():
    reg = _schema.registry()
    for op in ("decoders.video", "experimental.decoders.video"):
        assert "mixed" in reg[op].devices and "cpu" in reg[op].devices, op
    for op in ("readers.video", "experimental.readers.video", "readers.video_resize"):
        assert "gpu" in reg[op].devices and "cpu" in reg[op].devices, op


def build_error(make):
    @stoker.pipeline_def(batch_size=1, num_threads=1, seed=1, device_id=0)
    def pipe():
        return make()
    with pytest.raises(Exception) as e:
        pipe().build()
    return str(e.value)


@pytest.mark.skipif("__import__('gpu_parity').gpu_available()", reason="this machine has a GPU")
def test_mixed_decoder_without_gpu_fails_at_build():
    data = [np.zeros(16, np.uint8)]
    # the device is opened first, and without one the build says so
    msg = build_error(lambda: fn.decoders.video(fn.external_source(source=lambda: data),
                                                device="mixed"))
    assert "GPU" in msg, msg
    msg = build_error(lambda: fn.experimental.decoders.video(
        fn.external_source(source=lambda: data), device="mixed"))
    assert "GPU" in msg, msg


@pytest.mark.skipif("__import__('gpu_parity').gpu_available()", reason="this machine has a GPU")
def test_gpu_reader_without_gpu_fails_at_build(clips):
    msg = build_error(lambda: fn.readers.video(filenames=[clips["a"]], sequence_length=2,
                                               device="gpu"))
    assert "GPU" in msg, msg


def test_mixed_decoder_checks_arguments_at_build():
    data = [np.zeros(16, np.uint8)]
    msg = build_error(lambda: fn.decoders.video(fn.external_source(source=lambda: data),
                                                frames=[0, 1], start_frame=1, device="mixed"))
    assert "frames excludes start_frame" in msg, msg


def test_gpu_video_resize_without_resampling_kernel_fails_naming_it(clips, fake_nvdec):
    """readers.video_resize on the GPU resizes with the resampling kernel, which the CPU
    stand-in backend does not have: the run fails with the operator and the kernel named
    (not a crash, not frames of the wrong size)."""
    @stoker.pipeline_def(batch_size=1, num_threads=1, seed=1, device_id=0)
    def pipe():
        return fn.readers.video_resize(filenames=[clips["a"]], sequence_length=2, resize_x=64,
                                       resize_y=48, device="gpu")
    p = pipe()
    p.build()
    with pytest.raises(stoker.errors.StokerError) as e:
        p.run()
    msg = str(e.value)
    assert "readers.video_resize" in msg and "resample" in msg, msg


def test_gpu_reader_names_a_missing_file_at_build():
    msg = build_error(lambda: fn.readers.video(filenames=["/nonexistent/x.mp4"], sequence_length=2,
                                               device="gpu"))
    assert "/nonexistent/x.mp4" in msg, msg


# ---- the GPU forms' plumbing on the CPU stand-in (tests/fake_gpu) ----
# NVDEC is emulated by software decoding into NV12 host memory, the stand-in backend runs
# the kernel's per-pixel code: the CPU-stage decoding (prepare), the records, the GPU
# stage's assembly, the uploaded extra outputs and the release run as on a GPU.

@pytest.fixture
def fake_nvdec(fake_gpu):
    """The stand-in backend, which reports host memory: the video decoders then emulate
    NVDEC."""


def test_emulated_mixed_decoder_matches_cpu(clips, fake_nvdec):
    data = [raw(clips["a"]), raw(clips["b"])]

    @stoker.pipeline_def(batch_size=2, num_threads=2, seed=1, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda: data)
        kw = dict(start_frame=10, stride=3, sequence_length=6, pad_mode="constant",
                  fill_value=[10.7, 20, 300])
        return fn.decoders.video(x, **kw), fn.experimental.decoders.video(x, device="mixed", **kw)
    p = pipe()
    p.build()
    for _ in range(3):
        cpu, gpu = (to_numpy_samples(o) for o in p.run())
        assert [g.shape for g in gpu] == [(6, H, W, 3)] * 2
        for i in range(2):
            assert_frames_close(cpu[i], gpu[i], f"sample {i}")
        assert [index_of(f) for f in gpu[1][:3]] == [30, 33, 36]
        assert np.array_equal(gpu[1][3:], cpu[1][3:])  # the fill, truncated as on the CPU
        assert gpu[1][3, 0, 0].tolist() == [10, 20, 255]


def test_emulated_gpu_reader_matches_cpu(clips, fake_nvdec):
    res = run_readers(iterations=5, filenames=[clips["a"], clips["b"]], labels=[], sequence_length=4,
                      step=5, stride=2, enable_frame_num=True, enable_timestamps=True)
    seen = set()
    for cpu, gpu in res:
        assert len(cpu) == len(gpu) == 4
        for i in range(len(cpu[0])):
            assert_frames_close(cpu[0][i], gpu[0][i], f"sample {i}")
            for k in (1, 2, 3):
                assert np.array_equal(cpu[k][i], gpu[k][i]), f"output {k} sample {i}"
                assert cpu[k][i].dtype == gpu[k][i].dtype
            label, first = int(gpu[1][i][0]), int(gpu[2][i][0])
            offset = 0 if label == 0 else 20
            assert [index_of(f) for f in gpu[0][i]] == [offset + first + 2 * j for j in range(4)]
            seen.add((label, first))
    assert len(seen) > 5  # the batches moved through the sequences of both files


def test_emulated_gpu_reader_float_and_edge_padding(clips, fake_nvdec):
    (cpu, gpu), = run_readers(filenames=[clips["b"]], sequence_length=5, step=5, dtype="float",
                              normalized=True, pad_mode="edge", batch_size=4)
    assert len(gpu[0]) == 4
    for i in range(4):
        assert gpu[0][i].dtype == np.float32 and gpu[0][i].max() <= 1.0
        assert_frames_close(np.round(cpu[0][i] * 255), np.round(gpu[0][i] * 255), f"sample {i}")
    # the last sequence, 15..19 of 17 frames, repeats frame 16 (index 36)
    assert [index_of(np.round(f * 255)) for f in gpu[0][3]] == [35, 36, 36, 36, 36]


def test_emulated_mixed_decoder_refuses_gpu_input(clips, fake_nvdec):
    """Decoding happens in the CPU stage: bytes already on the GPU are refused, saying so."""
    data = [raw(clips["a"])]

    @stoker.pipeline_def(batch_size=1, num_threads=1, seed=1, device_id=0)
    def pipe():
        return fn.decoders.video(fn.external_source(source=lambda: data).gpu(), device="mixed")
    p = pipe()
    p.build()
    with pytest.raises(Exception) as e:
        p.run()
    assert "decoders.video" in str(e.value) and "CPU stage" in str(e.value), str(e.value)


def test_emulated_gpu_reader_feeds_gpu_operators(clips, fake_nvdec):
    """A GPU operator after the reader: the executor then runs the reader's GPU part on its
    decode thread and stream, one batch ahead (as the mixed image decoders)."""
    @stoker.pipeline_def(batch_size=2, num_threads=2, seed=1, device_id=0)
    def pipe():
        v = fn.readers.video(filenames=[clips["a"]], sequence_length=3, step=3, device="gpu",
                             random_shuffle=False)
        c = fn.readers.video(filenames=[clips["a"]], sequence_length=3, step=3, random_shuffle=False)
        return fn.cast(v, dtype=types.FLOAT), fn.cast(c, dtype=types.FLOAT)
    p = pipe()
    p.build()
    for b in range(6):
        gpu, cpu = (to_numpy_samples(o) for o in p.run())
        for i in range(2):
            assert gpu[i].dtype == np.float32
            assert_frames_close(cpu[i], gpu[i], f"batch {b} sample {i}")
            assert index_of(gpu[i][0]) == (6 * b + 3 * i) % 30
    assert p.stats()["decode_stage_ns"] > 0  # the split really happened


# ---- on the GPU ----

def run_decoders(data, iterations=1, **kw):
    @stoker.pipeline_def(batch_size=len(data), num_threads=2, seed=1, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda: data)
        return fn.decoders.video(x, **kw), fn.decoders.video(x, device="mixed", **kw)
    p = pipe()
    p.build()
    out = []
    for _ in range(iterations):
        cpu, gpu = p.run()
        out.append((to_numpy_samples(cpu), to_numpy_samples(gpu)))
    return out


@requires_gpu
def test_mixed_decoder_matches_cpu_ragged(clips):
    """Two files of 30 and 17 frames: a ragged batch of every frame."""
    ((cpu, gpu),) = run_decoders([raw(clips["a"]), raw(clips["b"])])
    assert gpu[0].shape == (30, H, W, 3) and gpu[1].shape == (17, H, W, 3)
    for i in range(2):
        assert_frames_close(cpu[i], gpu[i], f"sample {i}")
    assert [index_of(f) for f in gpu[1]] == list(range(20, 37))


@requires_gpu
def test_mixed_decoder_sequences_and_padding(clips):
    ((cpu, gpu),) = run_decoders([raw(clips["a"]), raw(clips["b"])], start_frame=10, stride=3,
                                 sequence_length=6, pad_mode="constant", fill_value=[10, 20, 30])
    for i in range(2):
        assert_frames_close(cpu[i], gpu[i], f"sample {i}")
    # b has 17 frames: 10, 13, 16, then three frames of fill
    assert [index_of(f) for f in gpu[1][:3]] == [30, 33, 36]
    assert np.array_equal(gpu[1][3:], np.broadcast_to(np.uint8([10, 20, 30]), (3, H, W, 3)))
    ((cpu, gpu),) = run_decoders([raw(clips["a"])], frames=[29, 0, 5, 5])
    assert [index_of(f) for f in gpu[0]] == [29, 0, 5, 5]
    assert_frames_close(cpu[0], gpu[0], "frames")


@requires_gpu
def test_mixed_decoder_edit_list_cut_shows_the_cpu_frames(clips):
    """A clip cut without re-encoding hides its first packets with an edit list: the NVDEC
    path must skip them as the CPU path does (frame i is the i-th frame shown)."""
    src = encode(clips["dir"] / "el_src.mp4", frames(30))
    cut = clips["dir"] / "el_cut.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-ss", "0.45", "-i", src, "-c", "copy",
                    str(cut)], check=True)
    ((cpu, gpu),) = run_decoders([raw(cut)])
    shown = [index_of(f) for f in cpu[0]]
    assert 0 < len(shown) < 30 and shown[0] > 0  # the cut hides frames
    assert_frames_close(cpu[0], gpu[0], "edit-list cut")
    last = len(shown) - 1
    ((cpu, gpu),) = run_decoders([raw(cut)], frames=[last, 0, 3])
    assert [index_of(f) for f in gpu[0]] == [shown[last], shown[0], shown[3]]


@requires_gpu
def test_mixed_decoder_interlaced_is_woven_as_on_the_cpu(clips):
    """Interlaced H.264 (field-coded): the GPU gives the same woven frames as the CPU."""
    path = str(clips["dir"] / "interlaced.mp4")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                    "-s", f"{W}x{H}", "-r", "25", "-i", "-", "-c:v", "libx264", "-pix_fmt",
                    "yuv420p", "-crf", "10", "-g", "6", "-flags", "+ildct+ilme", "-x264-params",
                    "interlaced=1:tff=1", path], input=frames(12).tobytes(), check=True)
    ((cpu, gpu),) = run_decoders([raw(path)])
    assert [index_of(f) for f in cpu[0]] == list(range(12))
    assert_frames_close(cpu[0], gpu[0], "interlaced")


@requires_gpu
def test_mixed_decoder_hevc(clips):
    if not has_encoder("libx265"):
        pytest.skip("ffmpeg has no libx265 (the GPU machine's minimal FFmpeg has none)")
    path = encode(clips["dir"] / "h.mp4", frames(12), "hevc")
    ((cpu, gpu),) = run_decoders([raw(path)])
    assert_frames_close(cpu[0], gpu[0], "hevc")


@requires_gpu
def test_mixed_decoder_corrupt_file_fails_naming_operator(clips):
    data = raw(clips["a"])
    broken = data[: len(data) // 3].copy()  # the MP4 index (moov) is at the end: unreadable

    @stoker.pipeline_def(batch_size=1, num_threads=1, seed=1, device_id=0)
    def pipe():
        return fn.decoders.video(fn.external_source(source=lambda: [broken]), device="mixed")
    p = pipe()
    p.build()
    with pytest.raises(Exception) as e:
        p.run()
    assert "decoders.video" in str(e.value)


@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=requires_gpu)])
def test_reader_names_a_file_corrupted_after_build(clips, tmp_path, device):
    """The file is sound when the pipeline is built (probed) and garbage when read: the
    error names it. On the CPU too, so the test itself is checked everywhere."""
    path = tmp_path / "c.mp4"
    shutil.copy(clips["a"], path)

    @stoker.pipeline_def(batch_size=1, num_threads=1, seed=1, device_id=0 if device == "gpu" else None)
    def pipe():
        return fn.readers.video(filenames=[str(path)], sequence_length=4, device=device)
    p = pipe()
    p.build()
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(Exception) as e:
        for _ in range(40):  # past what was prefetched before the file changed: 7 sequences an epoch
            p.run()
    assert str(path) in str(e.value)


def run_readers(iterations=1, batch_size=3, op="video", **kw):
    reader = getattr(fn.readers, op)

    @stoker.pipeline_def(batch_size=batch_size, num_threads=2, seed=1, device_id=0)
    def pipe():
        cpu = reader(random_shuffle=False, name="R", **kw)
        gpu = reader(random_shuffle=False, device="gpu", **kw)
        cpu = list(cpu) if isinstance(cpu, (list, tuple)) else [cpu]
        gpu = list(gpu) if isinstance(gpu, (list, tuple)) else [gpu]
        return tuple(cpu + gpu)
    p = pipe()
    p.build()
    out = []
    for _ in range(iterations):
        outs = p.run()
        k = len(outs) // 2
        out.append(([to_numpy_samples(o) for o in outs[:k]], [to_numpy_samples(o) for o in outs[k:]]))
    return out


@requires_gpu
def test_gpu_reader_matches_cpu_with_step_and_stride(clips):
    files = [clips["a"], clips["b"]]
    res = run_readers(iterations=4, filenames=files, labels=[], sequence_length=4, step=5, stride=2,
                      enable_frame_num=True, enable_timestamps=True)
    for cpu, gpu in res:
        assert len(cpu) == len(gpu) == 4  # video, label, frame_num, timestamps
        for i in range(len(cpu[0])):
            assert_frames_close(cpu[0][i], gpu[0][i], f"sample {i}")
            for k in (1, 2, 3):
                assert np.array_equal(cpu[k][i], gpu[k][i]), f"output {k} sample {i}"
            first = int(gpu[2][i][0])
            offset = 0 if int(gpu[1][i][0]) == 0 else 20
            assert [index_of(f) for f in gpu[0][i]] == [offset + first + 2 * j for j in range(4)]


@requires_gpu
def test_gpu_reader_float_and_padding(clips):
    (cpu, gpu), = run_readers(filenames=[clips["b"]], sequence_length=5, step=5, dtype="float",
                              normalized=True, pad_mode="edge", batch_size=4)
    for i in range(4):
        assert gpu[0][i].dtype == np.float32
        assert_frames_close(np.round(cpu[0][i] * 255), np.round(gpu[0][i] * 255), f"sample {i}")


# The GPU form resizes with fn.resize's resampling (linear, antialiased); the CPU form with
# libswscale's bilinear filter as it decodes. Those two filters differ by themselves: on
# these clips, CPU frames resized both ways differ by 0.8-4.7 on average (4.7 at the 4x
# reduction, at the green channel's wrap-around edge). So the GPU frames are held to the
# CPU form's frames and sizes, and their values to the CPU frames resized by the same
# filter (fn.resize on the CPU), within the conversion's own tolerance.


@requires_gpu
@pytest.mark.parametrize("size", [(32, 24), (100, 72)])
def test_gpu_video_resize_matches_cpu(clips, size):
    """readers.video_resize(device="gpu") (DALI has only this form)."""
    w, h = size
    kw = dict(filenames=[clips["a"], clips["b"]], sequence_length=3, step=4, random_shuffle=False)

    @stoker.pipeline_def(batch_size=3, num_threads=2, seed=1, device_id=0)
    def pipe():
        cpu = fn.readers.video_resize(resize_x=w, resize_y=h, name="R", **kw)
        gpu = fn.readers.video_resize(resize_x=w, resize_y=h, device="gpu", **kw)
        full = fn.readers.video(**kw)
        return cpu, gpu, full
    p = pipe()
    p.build()
    cpu, gpu, full = (to_numpy_samples(o) for o in p.run())
    for i in range(3):
        assert cpu[i].shape == gpu[i].shape == (3, h, w, 3), (cpu[i].shape, gpu[i].shape)
        assert [index_of(f) for f in cpu[i]] == [index_of(f) for f in gpu[i]]

        @stoker.pipeline_def(batch_size=3, num_threads=1, seed=1, device_id=None)
        def same_filter():
            src = fn.external_source(source=lambda: list(full[i]), layout="HWC")
            return fn.resize(src, resize_x=w, resize_y=h, interp_type=types.INTERP_LINEAR,
                             antialias=True)
        q = same_filter()
        q.build()
        ref = np.stack(to_numpy_samples(q.run()[0]))
        assert_frames_close(ref, gpu[i], f"sample {i} against fn.resize of the CPU frames")


@requires_gpu
def test_gpu_video_resize_float_normalized(clips):
    """Float output, normalized: the uint8 frames over 255 (rounded to uint8 after the
    resize, then converted, as the CPU form does)."""
    kw = dict(filenames=[clips["b"]], sequence_length=4, step=4, resize_x=64, resize_y=40,
              random_shuffle=False, device="gpu")

    @stoker.pipeline_def(batch_size=3, num_threads=2, seed=1, device_id=0)
    def pipe():
        return (fn.readers.video_resize(**kw),
                fn.readers.video_resize(dtype=types.FLOAT, normalized=True, **kw))
    p = pipe()
    p.build()
    u8, f32 = (to_numpy_samples(o) for o in p.run())
    for i in range(3):
        assert f32[i].dtype == np.float32 and f32[i].shape == (4, 40, 64, 3)
        assert 0.0 <= float(f32[i].min()) and float(f32[i].max()) <= 1.0
        assert np.array_equal(np.round(f32[i].astype(np.float64) * 255), u8[i]), f"sample {i}"


@requires_gpu
def test_gpu_reader_many_batches_do_not_leak(clips):
    torch = pytest.importorskip("torch")

    @stoker.pipeline_def(batch_size=4, num_threads=2, seed=1, device_id=0)
    def pipe():
        return fn.readers.video(filenames=[clips["a"], clips["b"]], sequence_length=8, step=3,
                                device="gpu")
    p = pipe()
    p.build()
    for _ in range(5):
        p.run()
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    for _ in range(50):
        (v,) = p.run()
        assert len(to_numpy_samples(v)) == 4
    torch.cuda.synchronize()
    free1 = torch.cuda.mem_get_info()[0]
    # decoder sessions and frames released: at most 64 MiB of drift over 50 batches
    assert free0 - free1 < 64 << 20, f"device memory fell by {(free0 - free1) >> 20} MiB"
