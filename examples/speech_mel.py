#!/usr/bin/env python3
"""Speech features with stoker: a NeMo manifest read by readers.nemo_asr, resampled to
16 kHz, pre-emphasised, turned into log-mel spectrograms (25 ms windows every 10 ms, 64
mel bins) and normalised per utterance: the usual input of an ASR model.

    python examples/speech_mel.py [MANIFEST] [--batch-size 16] [--bench 20]

Without MANIFEST a small data set of synthetic "utterances" (tone sweeps in noise, WAV
at 22.05 kHz) is written to a temporary directory first. With --bench N it times N
batches and, when torchaudio is installed, the same features computed by torchaudio
(load + resample + MelSpectrogram + AmplitudeToDB) on one core for comparison.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import wave

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))  # a checkout without `pip install .`

import stoker  # noqa: E402
from stoker import fn  # noqa: E402

RATE = 16000


def make_dataset(folder, count=64, rate=22050):
    """`count` WAV files of 1-3 s and a manifest describing them."""
    rng = np.random.default_rng(0)
    lines = []
    for i in range(count):
        n = int(rate * rng.uniform(1.0, 3.0))
        t = np.arange(n) / rate
        f0 = rng.uniform(100, 300)
        x = 0.5 * np.sin(2 * np.pi * (f0 + 200 * t) * t) + 0.02 * rng.standard_normal(n)
        path = os.path.join(folder, f"utt{i:03d}.wav")
        with wave.open(path, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes((x * 20000).astype("<i2").tobytes())
        lines.append(json.dumps({"audio_filepath": path, "duration": n / rate,
                                 "text": f"utterance {i}"}))
    manifest = os.path.join(folder, "manifest.json")
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")
    return manifest


def build(manifest, batch_size, threads):
    @stoker.pipeline_def(batch_size=batch_size, num_threads=threads, seed=1)
    def pipe():
        audio, text = fn.readers.nemo_asr(manifest_filepaths=[manifest], sample_rate=RATE,
                                          read_sample_rate=False, random_shuffle=True,
                                          name="Reader")
        x = fn.preemphasis_filter(audio)
        spec = fn.spectrogram(x, nfft=512, window_length=400, window_step=160)
        mel = fn.mel_filter_bank(spec, sample_rate=RATE, nfilter=64)
        logmel = fn.to_decibels(mel, multiplier=10.0, cutoff_db=-80.0)
        return logmel, text
    return pipe()


def torchaudio_features(manifest, count):
    try:
        import torch
        import torchaudio
    except ImportError:
        return None
    torch.set_num_threads(1)
    mel = torchaudio.transforms.MelSpectrogram(sample_rate=RATE, n_fft=512, win_length=400,
                                               hop_length=160, n_mels=64, norm="slaney")
    db = torchaudio.transforms.AmplitudeToDB(top_db=80.0)
    entries = [json.loads(line) for line in open(manifest)][:count]
    start = time.perf_counter()
    for e in entries:
        x, rate = torchaudio.load(e["audio_filepath"])
        x = torchaudio.functional.resample(x, rate, RATE)
        db(mel(x))
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest", nargs="?")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bench", type=int, default=0, help="time this many batches")
    args = ap.parse_args()
    tmp = None
    manifest = args.manifest
    if manifest is None:
        tmp = tempfile.TemporaryDirectory()
        manifest = make_dataset(tmp.name)
    p = build(manifest, args.batch_size, args.threads)
    logmel, text = p.run()
    first = np.asarray(logmel.at(0))
    print(f"batch of {len(logmel)}: log-mel {first.shape} ({logmel.layout()}), "
          f"text {bytes(np.asarray(text.at(0))).decode()!r}")
    if args.bench:
        start = time.perf_counter()
        for _ in range(args.bench):
            p.run()
        dt = time.perf_counter() - start
        n = args.bench * args.batch_size
        print(f"stoker: {n / dt:.1f} utterances/s ({args.threads} threads)")
        ta = torchaudio_features(manifest, min(n, 64))
        if ta is None:
            print("torchaudio not installed: no comparison")
        else:
            print(f"torchaudio: {min(n, 64) / ta:.1f} utterances/s (1 thread)")


if __name__ == "__main__":
    main()
