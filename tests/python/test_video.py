"""Video (issue 26): decoders.video and the video readers on the CPU (FFmpeg). The test
videos are encoded here by the ffmpeg CLI from frames made with NumPy: lossless FFV1
(RGB, so every pixel is checked exactly and each frame's index is read back from its red
channel) and lossy H.264 / VP9; DALI 2.4's CPU video operators are the oracle for VP9
when their venv exists."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import stoker
from stoker import fn, types, _schema

from test_audio import DALI_PY, dali, needs_dali

pytestmark = [
    pytest.mark.skipif("decoders.video" not in _schema.registry(), reason="no video operators"),
    pytest.mark.skipif(not shutil.which("ffmpeg"), reason="no ffmpeg CLI to make test videos"),
]

H, W = 48, 64


def frames(n, offset=0):
    """n frames whose red channel is 5 * (index + offset): the index can be read back."""
    y, x = np.mgrid[0:H, 0:W]
    out = np.empty((n, H, W, 3), np.uint8)
    for i in range(n):
        out[i, ..., 0] = 5 * (i + offset) % 256
        out[i, ..., 1] = (x * 4 + i) % 256
        out[i, ..., 2] = (y * 5) % 256
    return out


def ffmpeg_lists(listing, name):
    """Whether the ffmpeg command's `listing` ("-encoders", "-muxers") names `name` (the GPU
    machine's minimal FFmpeg has the libx264, ffv1 and mpeg4 encoders and the mp4, mov,
    matroska and avi muxers only)."""
    out = subprocess.run(["ffmpeg", "-hide_banner", listing], capture_output=True, text=True).stdout
    return any(name in line.split()[1:2] or name in line.split()[1].split(",")
               for line in out.splitlines() if len(line.split()) > 1)


def has_encoder(name):
    return ffmpeg_lists("-encoders", name)


ENCODERS = {"ffv1": "ffv1", "h264": "libx264", "vp9": "libvpx-vp9"}


def encode(path, video, codec="ffv1", rate=25):
    args = {"ffv1": ["-c:v", "ffv1", "-pix_fmt", "bgr0"],
            "h264": ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "10", "-g", "6"],
            "vp9": ["-c:v", "libvpx-vp9", "-g", "6", "-crf", "10", "-b:v", "0"]}[codec]
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                    "-s", f"{W}x{H}", "-r", str(rate), "-i", "-", *args, str(path)],
                   input=video.tobytes(), check=True)
    return path


def index_of(frame):
    return int(round(float(frame[..., 0].mean()) / 5))


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    d = tmp_path_factory.mktemp("video")
    return {"a": (encode(d / "a.mkv", frames(30)), frames(30)),
            "b": (encode(d / "b.mkv", frames(17, 20)), frames(17, 20)),
            "h264": (encode(d / "c.mp4", frames(20), "h264"), frames(20)),
            "dir": d}


def decode(data, **kw):
    @stoker.pipeline_def(batch_size=len(data), num_threads=2, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: data)
        return fn.decoders.video(x, **kw)
    (v,) = pipe().run()
    return [np.asarray(v.at(i)) for i in range(len(data))]


def raw(path):
    return np.frombuffer(open(path, "rb").read(), np.uint8)


def test_decodes_every_frame_exactly(clips):
    (a, b) = decode([raw(clips["a"][0]), raw(clips["b"][0])])
    assert a.shape == (30, H, W, 3) and a.dtype == np.uint8
    assert np.array_equal(a, clips["a"][1]) and np.array_equal(b, clips["b"][1])


def test_lossy_h264_is_close(clips):
    (a,) = decode([raw(clips["h264"][0])])
    assert a.shape == (20, H, W, 3)
    assert [index_of(f) for f in a] == list(range(20))
    assert np.abs(a.astype(int) - clips["h264"][1]).mean() < 3


@pytest.mark.parametrize("codec, ext", [("h264", "mp4"), ("vp9", "webm"), ("ffv1", "avi")])
def test_seeking_gives_the_frames_of_a_full_decode(clips, codec, ext):
    """Reads that start mid-file seek to the key frame before them (key frames every 6
    frames here; H.264 with B-frames): the frames must be those a decode from the start
    gives, bit for bit."""
    if not has_encoder(ENCODERS[codec]) or not ffmpeg_lists("-muxers", ext):
        pytest.skip(f"ffmpeg has no {ENCODERS[codec]} encoder or no {ext} muxer")
    path = encode(clips["dir"] / f"seek_{codec}.{ext}", frames(40), codec)
    data = [raw(path)]
    (full,) = decode(data)
    for start, length, stride in [(13, 5, 1), (30, 4, 3), (6, 2, 1), (39, 1, 1)]:
        (part,) = decode(data, start_frame=start, sequence_length=length, stride=stride)
        want = full[start:start + length * stride:stride]
        assert np.array_equal(part, want), (codec, start)
    (picked,) = decode(data, frames=[33, 2, 17, 17])
    assert np.array_equal(picked, full[[33, 2, 17, 17]])


def test_frame_selection_and_padding(clips):
    data = [raw(clips["a"][0])]
    ref = clips["a"][1]
    (got,) = decode(data, frames=[5, 1, 5, 29])
    assert np.array_equal(got, ref[[5, 1, 5, 29]])
    (got,) = decode(data, start_frame=3, sequence_length=4, stride=5)
    assert [index_of(f) for f in got] == [3, 8, 13, 18]
    (got,) = decode(data, start_frame=10, end_frame=16, stride=2)
    assert [index_of(f) for f in got] == [10, 12, 14]
    # 26, 28 exist; 30, 32, 34 lie past the end
    for mode, want in [("edge", [26, 28, 29, 29, 29]), ("reflect_101", [26, 28, 28, 26, 24]),
                       ("symmetric", [26, 28, 29, 27, 25]), ("none", [26, 28])]:
        (got,) = decode(data, start_frame=26, sequence_length=5, stride=2, pad_mode=mode)
        assert [index_of(f) for f in got] == want, mode
    (got,) = decode(data, start_frame=28, sequence_length=3, fill_value=[7, 8, 9])
    assert index_of(got[0]) == 28 and index_of(got[1]) == 29
    assert np.all(got[2] == np.array([7, 8, 9], np.uint8))


def test_decoder_errors(clips):
    with pytest.raises(stoker.StokerError, match=r"decoders.video.*sample 1"):
        decode([raw(clips["a"][0]), np.frombuffer(b"\x1a\x45\xdf\xa3" + bytes(200), np.uint8)])
    with pytest.raises(stoker.InvalidArgumentError, match="frames"):
        decode([raw(clips["a"][0])], frames=[3, 30])
    with pytest.raises(stoker.InvalidArgumentError, match="sequence_length or end_frame"):
        decode([raw(clips["a"][0])], sequence_length=3, end_frame=5)


def read_all(p, outputs):
    """All batches of one epoch, as lists per output."""
    size = p.epoch_size("R")
    got = [[] for _ in range(outputs)]
    while sum(len(x) for x in got[:1]) < size:
        outs = p.run()
        for k, o in enumerate(outs):
            got[k] += [np.asarray(o.at(i)) for i in range(len(o))]
    return got


def test_reader_sequences_labels_and_frame_numbers(clips):
    files = [str(clips["a"][0]), str(clips["b"][0])]

    @stoker.pipeline_def(batch_size=3, num_threads=2, seed=1)
    def pipe():
        return fn.readers.video(filenames=files, labels=[7, 9], sequence_length=4, step=5,
                                stride=2, enable_frame_num="sequence", enable_timestamps=True,
                                name="R")
    p = pipe()
    # starts s with s + 4 * 2 <= frames (DALI's rule): 30 frames -> 0, 5, ..., 20 (5);
    # 17 frames -> 0, 5 (2; frames 10..16 would fit but 10 + 8 > 17)
    assert p.epoch_size("R") == 7
    video, label, fnum, ts = read_all(p, 4)
    starts = [(0, s) for s in range(0, 21, 5)] + [(1, s) for s in (0, 5)]
    for v, l, f, t, (fi, s) in zip(video, label, fnum, ts, starts):
        want = [s, s + 2, s + 4, s + 6]
        offset = 20 if fi else 0
        assert v.shape == (4, H, W, 3)
        assert [index_of(x) - offset for x in v] == want
        assert np.array_equal(v, (clips["b"] if fi else clips["a"])[1][want])
        assert int(l[0]) == (9 if fi else 7) and l.dtype == np.int32
        assert list(f) == want
        assert np.allclose(t, np.array(want) / 25.0)


def test_reader_pads_the_last_sequences(clips):
    @stoker.pipeline_def(batch_size=4, num_threads=1, seed=1)
    def pipe():
        return fn.readers.video(filenames=[str(clips["b"][0])], sequence_length=6,
                                pad_sequences=True, enable_frame_num=True, labels=[],
                                name="R")
    p = pipe()
    assert p.epoch_size("R") == 3  # 0, 6, 12: the last has 5 real frames
    video, label, fnum = read_all(p, 3)
    assert [int(f[0]) for f in fnum] == [0, 6, 12]
    assert np.all(video[2][5] == 0) and index_of(video[2][4]) - 20 == 16


def test_reader_file_list_ranges_and_file_root(clips, tmp_path):
    lst = tmp_path / "list.txt"
    lst.write_text(f"{clips['a'][0]} 3 10 20\n{clips['b'][0]} 4\n")

    @stoker.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        return fn.readers.video(file_list=str(lst), sequence_length=5, file_list_frame_num=True,
                                name="R")
    video, label = read_all(pipe(), 2)
    # a: frames [10, 20) -> starts 10, 15; b: 17 frames -> 0, 5, 10
    assert [index_of(v[0]) for v in video] == [10, 15, 20, 25, 30]
    assert [int(l[0]) for l in label] == [3, 3, 4, 4, 4]
    root = tmp_path / "root"
    for cls, key in (("cats", "a"), ("dogs", "b")):
        (root / cls).mkdir(parents=True)
        shutil.copy(clips[key][0], root / cls / "clip.mkv")

    @stoker.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe2():
        return fn.experimental.readers.video(file_root=str(root), sequence_length=10, name="R")
    video, label = read_all(pipe2(), 2)
    assert [int(l[0]) for l in label] == [0, 0, 0, 1]
    assert [index_of(v[0]) for v in video] == [0, 10, 20, 20]


def test_reader_shards_and_resize(clips):
    files = [str(clips["a"][0])]

    @stoker.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        return fn.readers.video_resize(filenames=files, sequence_length=3, shard_id=1,
                                       num_shards=2, resize_x=32, dtype=types.FLOAT,
                                       normalized=True, name="R")
    p = pipe()
    assert p.epoch_size("R") == 10
    (v,) = p.run()
    first = np.asarray(v.at(0))
    assert first.shape == (3, 24, 32, 3) and first.dtype == np.float32
    assert v.layout() == "FHWC"
    assert abs(first[0, 0, 0, 0] * 255 - 5 * 15) < 1  # shard 1 of 10 sequences starts at 15
    assert first.max() <= 1.0


def test_reader_resize_scales_the_whole_frame(clips):
    """readers.video_resize scales each frame to resize_x x resize_y (it once wrote the
    video's full size into the smaller output: a crop of the top left and a write past
    the batch). Lossless clip, half size: on the linear ramps of the test frames any
    symmetric bilinear filter gives the 2x2 mean, so NumPy's is the reference inside a
    one-pixel border (and left of where the green ramp wraps past 255 in later frames)."""
    files = [str(clips["a"][0])]

    @stoker.pipeline_def(batch_size=2, num_threads=2, seed=1)
    def pipe():
        return fn.readers.video_resize(filenames=files, sequence_length=4, step=4,
                                       resize_x=W // 2, resize_y=H // 2, name="R")
    p = pipe()
    full = frames(30)
    for batch in range(2):
        (v,) = p.run()
        for i in range(2):
            got = np.asarray(v.at(i)).astype(np.float64)
            first = 4 * (2 * batch + i)
            src = full[first:first + 4].astype(np.float64)
            ref = src.reshape(4, H // 2, 2, W // 2, 2, 3).mean(axis=(2, 4))
            assert got.shape == (4, H // 2, W // 2, 3)
            assert np.abs(got - ref)[:, 1:-1, 1:-3].max() <= 1.5, (batch, i)


def test_reader_errors(clips, tmp_path):
    with pytest.raises(stoker.InvalidArgumentError, match="no sequence of 40 frames"):
        @stoker.pipeline_def(batch_size=1, num_threads=1)
        def p():
            return fn.readers.video(filenames=[str(clips["b"][0])], sequence_length=40)
        p().build()
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video at all")
    with pytest.raises(stoker.StokerError, match="bad.mp4"):
        @stoker.pipeline_def(batch_size=1, num_threads=1)
        def q():
            return fn.readers.video(filenames=[str(bad)], sequence_length=2)
        q().build()


@needs_dali
def test_vp9_matches_dali(clips, tmp_path):
    path = encode(clips["dir"] / "d.webm", frames(24), "vp9")
    data = [raw(path)]
    (want,) = dali("fn.experimental.decoders.video(x)", data, "", tmp_path)
    got = decode(data)
    assert got[0].shape == want[0].shape == (24, H, W, 3)
    assert np.abs(got[0].astype(int) - want[0]).max() <= 1
    (want,) = dali("fn.experimental.decoders.video(x, start_frame=20, sequence_length=6, "
                   "stride=2, pad_mode='reflect_1001')", data, "", tmp_path)
    got = decode(data, start_frame=20, sequence_length=6, stride=2, pad_mode="reflect_1001")
    assert got[0].shape == want[0].shape == (6, H, W, 3)
    assert np.abs(got[0].astype(int) - want[0]).max() <= 1


@needs_dali
def test_reader_matches_dali(clips, tmp_path):
    """Sequence starts, padding and frame numbers as DALI's experimental.readers.video
    gives them for the same VP9 files (batches of 1, one epoch)."""
    paths = []
    for i, (n, off) in enumerate([(30, 0), (17, 20)]):
        paths.append(str(encode(clips["dir"] / f"r{i}.webm", frames(n, off), "vp9")))
    cases = [(paths, dict(sequence_length=4, stride=2, step=5)),
             (paths, dict(sequence_length=6, pad_mode="constant")),
             (paths[1:], dict(sequence_length=5, step=3, pad_mode="edge",
                              enable_frame_num="sequence")),
             (paths[1:], dict(sequence_length=3, stride=3, step=1))]
    script = "\n".join([
        "import numpy as np, json, sys",
        "from nvidia.dali import pipeline_def, fn",
        "cases = json.loads(sys.argv[1]); out = []",
        "for files, kw in cases:",
        "    @pipeline_def(batch_size=1, num_threads=1, device_id=None)",
        "    def p():",
        "        return tuple(fn.experimental.readers.video(",
        "            filenames=files, labels=[7] * len(files), name='R', **kw))",
        "    pp = p(); pp.build(); res = []",
        "    for _ in range(pp.epoch_size('R')):",
        "        o = pp.run()",
        "        res.append([[round(float(f[..., 0].mean()) / 5) for f in np.asarray(o[0].at(0))]]",
        "                   + [np.asarray(x.at(0)).tolist() for x in o[2:]])",
        "    out.append(res)",
        "print(json.dumps(out))"])
    import json
    r = subprocess.run([DALI_PY, "-c", script, json.dumps(cases)], capture_output=True, text=True,
                       check=True, timeout=300)
    want = json.loads(r.stdout.strip().splitlines()[-1])
    for (files, kw), w in zip(cases, want):
        @stoker.pipeline_def(batch_size=1, num_threads=1, seed=1)
        def pipe():
            return fn.experimental.readers.video(filenames=files, labels=[7] * len(files),
                                                 name="R", **kw)
        p = pipe()
        got = []
        for _ in range(p.epoch_size("R")):
            o = p.run()
            got.append([[index_of(f) for f in np.asarray(o[0].at(0))]]
                       + [np.asarray(x.at(0)).tolist() for x in o[2:]])
        assert got == w, kw


def test_edit_list_cut_counts_only_the_shown_frames(clips):
    """An MP4 cut without re-encoding (`ffmpeg -ss T -c copy`) starts at a key frame before T
    and hides the frames before T with an edit list (their packets are marked discard). Frame
    i is the i-th frame shown, as the ffmpeg command decodes it, whether read with the whole
    clip or alone (a read by timestamps that seeks)."""
    src = encode(clips["dir"] / "el_src.mp4", frames(30), "h264")
    cut = clips["dir"] / "el_cut.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-ss", "0.45", "-i", str(src), "-c",
                    "copy", str(cut)], check=True)
    shown = subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(cut), "-f", "rawvideo",
                            "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
    want = [index_of(f) for f in np.frombuffer(shown, np.uint8).reshape(-1, H, W, 3)]
    assert 0 < len(want) < 30 and want[0] > 0  # the cut hides frames
    (full,) = decode([raw(cut)])
    assert [index_of(f) for f in full] == want
    for i in (0, 3, len(want) - 1):
        (one,) = decode([raw(cut)], frames=[i])
        assert index_of(one[0]) == want[i], f"frame {i}"
