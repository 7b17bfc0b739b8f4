"""bench/bench_audio_video.py (issue 26): its stoker speech pipeline is the recipe
docs/audio-video.md gives for torchaudio's MelSpectrogram + AmplitudeToDB, checked here
against a NumPy transcription of torchaudio's definitions (and against torchaudio itself
where it is installed); its generated clips hold what was written; its video pipeline
reads every frame of every clip once, as the torch arm's items do."""
import os
import shutil
import sys
import wave

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_audio_video as bav  # noqa: E402

needs_ffmpeg = pytest.mark.skipif(not shutil.which("ffmpeg"), reason="no ffmpeg CLI")


def torchaudio_logmel(x, rate=16000, n_fft=512, hop=160, n_mels=80):
    """MelSpectrogram(rate, n_fft, hop_length=hop, n_mels) + AmplitudeToDB() by their
    published definitions: periodic Hann window of n_fft, frames centred on i * hop with
    reflection padding, |rfft|^2, HTK-scale triangles over linspace(0, rate / 2, bins)
    without area normalisation, then 10 log10(max(p, 1e-10))."""
    xp = np.pad(x, n_fft // 2, mode="reflect")
    frames = 1 + (len(xp) - n_fft) // hop
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    idx = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
    power = np.abs(np.fft.rfft(xp[idx] * window, axis=1)) ** 2  # [frames, bins]
    freqs = np.linspace(0, rate / 2, n_fft // 2 + 1)

    def mel(f):
        return 2595 * np.log10(1 + f / 700)
    pts = 700 * (10 ** (np.linspace(mel(0), mel(rate / 2), n_mels + 2) / 2595) - 1)
    slopes = pts[None, :] - freqs[:, None]
    down, up = -slopes[:, :-2] / np.diff(pts)[:-1], slopes[:, 2:] / np.diff(pts)[1:]
    bank = np.maximum(0, np.minimum(down, up))  # [bins, n_mels]
    return 10 * np.log10(np.maximum((power @ bank).T, 1e-10))


def read_wav(path):
    with wave.open(path) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), "<i2") / 32768.0, w.getframerate()


def logmel_of(paths):
    p = bav.stoker_speech(paths, len(paths), 1, "cpu", shuffle=False)
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(len(paths))]


@needs_ffmpeg  # (FLAC without soundfile)
def test_speech_pipeline_is_torchaudios_log_mel(tmp_path):
    x = bav.speech_signal(np.random.default_rng(5), bav.RATE)[:3 * bav.RATE]
    paths = [str(tmp_path / "a.wav"), str(tmp_path / "a.flac")]
    for p in paths:
        bav.write_pcm16(p, x, bav.RATE)
    samples, rate = read_wav(paths[0])
    assert rate == 16000 and np.abs(samples - x).max() < 1e-4  # 16-bit quantisation
    ref = torchaudio_logmel(samples)
    for got in logmel_of(paths):  # the WAV and the lossless FLAC: the same features
        assert got.shape == ref.shape == (80, 3 * bav.RATE // bav.HOP + 1)
        loud = ref > -80
        assert loud.mean() > 0.5
        assert np.abs(got - ref)[loud].max() < 0.01
        assert np.abs(got - ref).max() < 0.5  # the -100 dB floor too


def test_speech_pipeline_resamples_to_16k(tmp_path):
    """A 22.05 kHz clip gives the frame count of its 16 kHz duration, and a tone keeps
    its mel bin."""
    t = np.arange(22050 * 2) / 22050
    path = str(tmp_path / "tone.wav")
    bav.write_pcm16(path, 0.5 * np.sin(2 * np.pi * 1000 * t), 22050)
    (got,) = logmel_of([path])
    assert got.shape == (80, 2 * bav.RATE // bav.HOP + 1)
    ref = torchaudio_logmel(0.5 * np.sin(2 * np.pi * 1000 * np.arange(2 * bav.RATE) / bav.RATE))
    mid = slice(20, -20)
    assert np.argmax(got[:, mid].mean(1)) == np.argmax(ref[:, mid].mean(1))
    assert abs(got[:, mid].max() - ref[:, mid].max()) < 0.5


@pytest.mark.skipif(not all(map(bav.importlib.util.find_spec, ("torch", "torchaudio", "soundfile"))),
                    reason="torch / torchaudio / soundfile not installed (bench/requirements-torch.txt)")
def test_agreement_with_torchaudio_itself(tmp_path):
    path = str(tmp_path / "b.wav")
    bav.write_pcm16(path, bav.speech_signal(np.random.default_rng(6), bav.RATE), bav.RATE)
    a = bav.speech_agreement(path, "soundfile")
    assert a["max_db_diff_above_-80dB"] < 0.01


@needs_ffmpeg
def test_video_pipeline_reads_every_frame_once(tmp_path):
    paths = bav.make_videos(str(tmp_path), 2, 32, w=160, h=120, gop=16)
    stamp = os.path.getmtime(paths[0])
    assert bav.make_videos(str(tmp_path), 2, 32, w=160, h=120, gop=16) == paths  # reused
    assert os.path.getmtime(paths[0]) == stamp
    p = bav.stoker_video(paths, 2, 1, shuffle=False)
    assert p.epoch_size("R") == 4  # 2 clips x 32 frames / 16, as the torch arm's items
    (v,) = p.run()
    assert [np.asarray(v.at(i)).shape for i in range(2)] == [(16, bav.SIZE, bav.SIZE, 3)] * 2
