"""decoders.audio and readers.nemo_asr (issue 26): files written here with Python's wave
module (and FLAC / OGG through the ffmpeg CLI when it is installed) decoded back to the
known samples; DALI 2.4's decoder as an oracle when its venv exists."""

import io
import json
import os
import shutil
import subprocess
import wave

import numpy as np
import pytest

import stoker
from stoker import fn, types, _schema

from test_audio import DALI_PY, dali, needs_dali

pytestmark = pytest.mark.skipif("decoders.audio" not in _schema.registry(),
                                reason="decoders.audio not in this build")

T = np.arange(1000)
MONO = (np.sin(T / 10) * 10000).astype(np.int16)
STEREO = np.stack([MONO, (MONO // 2)], 1)


def wav_bytes(x, rate, width=2):
    b = io.BytesIO()
    with wave.open(b, "wb") as w:
        w.setnchannels(1 if x.ndim == 1 else x.shape[1])
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(x.astype("<i%d" % width).tobytes())
    return np.frombuffer(b.getvalue(), np.uint8)


def decode(data, **kw):
    @stoker.pipeline_def(batch_size=len(data), num_threads=2, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: data)
        return tuple(fn.decoders.audio(x, **kw))
    a, r = pipe().run()
    return [np.asarray(a.at(i)) for i in range(len(data))], [float(np.asarray(r.at(i)))
                                                            for i in range(len(data))]


def test_wav_samples_and_rates():
    (a, b), rates = decode([wav_bytes(MONO, 16000), wav_bytes(STEREO, 8000)])
    assert rates == [16000.0, 8000.0]
    assert a.dtype == np.float32 and a.shape == (1000, 1) and b.shape == (1000, 2)
    assert np.array_equal(a[:, 0], MONO / np.float32(32768))
    assert np.array_equal(b, STEREO / np.float32(32768))


def test_integer_outputs_are_full_scale():
    (a16, b16), _ = decode([wav_bytes(MONO, 16000), wav_bytes(STEREO, 8000)], dtype=types.INT16)
    assert a16.dtype == np.int16 and np.array_equal(a16[:, 0], MONO)
    assert np.array_equal(b16, STEREO)
    (a32,), _ = decode([wav_bytes(MONO, 16000)], dtype=types.INT32)
    assert a32.dtype == np.int32 and np.array_equal(a32[:, 0], MONO.astype(np.int32) << 16)


def test_downmix_averages_channels():
    (b,), _ = decode([wav_bytes(STEREO, 8000)], downmix=True)
    assert b.shape == (1000,)
    assert np.allclose(b, STEREO.astype(np.float64).mean(1) / 32768, atol=1e-7)


def test_resampling_on_decode():
    tone = (np.sin(2 * np.pi * np.arange(4000) * 300 / 16000) * 20000).astype(np.int16)
    (a,), rates = decode([wav_bytes(tone, 16000)], sample_rate=8000, downmix=True)
    assert rates == [8000.0] and a.shape == (2000,)
    want = np.sin(2 * np.pi * np.arange(2000) * 300 / 8000) * 20000 / 32768
    assert np.abs(a - want)[50:-50].max() < 2e-3


def test_sample_rate_per_sample():
    tone = (np.sin(np.arange(800) / 7) * 8000).astype(np.int16)

    @stoker.pipeline_def(batch_size=4, num_threads=1, seed=5)
    def pipe():
        x = fn.external_source(source=lambda: [wav_bytes(tone, 16000)] * 4)
        r = fn.random.uniform(values=[8000.0, 4000.0])
        a, sr = fn.decoders.audio(x, sample_rate=r, downmix=True)
        return a, sr, r
    a, sr, r = pipe().run()
    for i in range(4):
        assert float(np.asarray(sr.at(i))) == float(np.asarray(r.at(i)))
        assert np.asarray(a.at(i)).shape == (800 * float(np.asarray(r.at(i))) // 16000,)


@pytest.mark.skipif(not shutil.which("ffmpeg"), reason="no ffmpeg CLI to encode FLAC/OGG")
@pytest.mark.parametrize("ext, lossless", [("flac", True), ("ogg", False)])
def test_flac_and_ogg(tmp_path, ext, lossless):
    src = tmp_path / "in.wav"
    src.write_bytes(wav_bytes(STEREO, 16000).tobytes())
    dst = tmp_path / ("out." + ext)
    codec = ["-c:a", "flac"] if ext == "flac" else ["-c:a", "libvorbis", "-q:a", "8"]
    r = subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", str(src), *codec, str(dst)],
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip("ffmpeg cannot encode " + ext)
    (a,), rates = decode([np.frombuffer(dst.read_bytes(), np.uint8)], dtype=types.INT16)
    assert rates == [16000.0] and a.shape[1] == 2
    if lossless:
        assert np.array_equal(a, STEREO)
    else:  # a lossy codec: the same sound, not the same samples
        n = min(len(a), 1000)
        err = a[:n].astype(np.float64) - STEREO[:n]
        assert np.sqrt((err ** 2).mean()) < 0.05 * np.sqrt((STEREO[:n].astype(float) ** 2).mean())


def test_bad_bytes_name_the_sample():
    with pytest.raises(stoker.StokerError, match=r"decoders.audio.*sample 1.*audio"):
        decode([wav_bytes(MONO, 16000), np.frombuffer(b"RIFF1234WAVEjunk" * 4, np.uint8)])


@needs_dali
def test_matches_dalis_decoder(tmp_path):
    data = [wav_bytes(MONO, 16000), wav_bytes(STEREO, 8000)]
    for kw in ["", "downmix=True", "dtype=types.INT16", "sample_rate=12000, downmix=True"]:
        want_a, want_r = dali(f"fn.decoders.audio(x, {kw})", data, "", tmp_path)
        got_a, got_r = decode(data, **eval(f"dict({kw})", {"types": types}))
        for g, w in zip(got_a, want_a):
            assert g.shape == w.shape and g.dtype == w.dtype, kw
            if "sample_rate" in kw:  # two resamplers: close inside, not at the edges
                assert np.abs(g - w)[40:-40].max() < 2e-3, kw
            else:
                assert np.array_equal(g, w), kw
        assert got_r == [float(w) for w in want_r], kw


# ---- readers.nemo_asr ----

def write_manifest(tmp_path, clips):
    lines = []
    for i, (x, rate, text) in enumerate(clips):
        p = tmp_path / f"clip{i}.wav"
        p.write_bytes(wav_bytes(x, rate).tobytes())
        lines.append(json.dumps({"audio_filepath": str(p), "duration": len(x) / rate,
                                 "text": text}))
    m = tmp_path / "manifest.json"
    m.write_text("\n".join(lines) + "\n")
    return m


NEMO = pytest.mark.skipif("readers.nemo_asr" not in _schema.registry(),
                          reason="readers.nemo_asr not in this build")


@NEMO
def test_nemo_asr_reads_audio_text_and_rate(tmp_path):
    clips = [(MONO, 16000, "hello world"), (STEREO, 8000, "zwei kanäle"),
             (MONO[:400], 16000, "short")]
    m = write_manifest(tmp_path, clips)

    @stoker.pipeline_def(batch_size=3, num_threads=2, seed=1)
    def pipe():
        a, sr, text, idx = fn.readers.nemo_asr(manifest_filepaths=[str(m)], read_idxs=True)
        return a, sr, text, idx
    a, sr, text, idx = pipe().run()
    for i, (x, rate, t) in enumerate(clips):
        want = x.astype(np.float64) / 32768
        if want.ndim == 2:
            want = want.mean(1)  # downmix is on by default
        assert np.allclose(np.asarray(a.at(i)), want, atol=1e-6)
        assert float(np.asarray(sr.at(i))) == rate
        assert bytes(np.asarray(text.at(i))).decode() == t
        assert int(np.asarray(idx.at(i)).reshape(-1)[0]) == i


@NEMO
def test_nemo_asr_durations_resampling_and_shards(tmp_path):
    long = (np.sin(np.arange(6400) / 10) * 10000).astype(np.int16)
    clips = [(long[:n], 16000, f"clip {n}") for n in (160, 800, 1600, 3200, 6400)]
    m = write_manifest(tmp_path, clips)

    @stoker.pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        a, text = fn.readers.nemo_asr(manifest_filepaths=[str(m)], min_duration=0.02,
                                      max_duration=0.3, sample_rate=8000,
                                      read_sample_rate=False, shard_id=1, num_shards=2,
                                      name="R")
        return a, text
    p = pipe()
    assert p.epoch_size("R") == 3  # 0.01 s and 0.4 s clips dropped
    a, text = p.run()
    # shard 1 of 2 over the 3 kept clips: the last two (800 and 1600 frames kept -> 1600, 3200)
    got = [bytes(np.asarray(text.at(i))).decode() for i in range(2)]
    assert got == ["clip 1600", "clip 3200"]
    assert [np.asarray(a.at(i)).shape for i in range(2)] == [(800,), (1600,)]


@NEMO
def test_nemo_asr_bad_manifest(tmp_path):
    m = tmp_path / "bad.json"
    m.write_text('{"audio_filepath": "x.wav", "duration": 1.0\n')
    with pytest.raises(stoker.StokerError, match=r"nemo_asr.*bad.json.*line 1"):
        @stoker.pipeline_def(batch_size=1, num_threads=1)
        def pipe():
            return fn.readers.nemo_asr(manifest_filepaths=[str(m)])[0]
        pipe().build()
