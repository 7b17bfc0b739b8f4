#!/usr/bin/env python3
"""Issue 26: the CPU cost of each stage of stoker's speech chain, per clip, on one thread,
for one or more checkouts alternated round by round (A/B of a change against a build of
another commit, on a shared machine whose load moves).

The chain is bench_audio_video.py's: readers.file -> decoders.audio(sample_rate=16000,
downmix=True) -> spectrogram (n_fft 512, hop 160, periodic Hann) -> mel_filter_bank
(80 HTK bins) -> to_decibels. The pipeline is cut after each operator (four pipelines:
decode, + spectrogram, + mel bank, + decibels); each is built with num_threads=1 and a
batch of all the clips, run once untimed, then `--runs` times while this process's CPU
time is measured. A stage's cost is the difference between its pipeline and the one cut
before it, divided by the clips.

Each checkout runs in a child process that imports stoker from CHECKOUT/python (its own
extension module) with STK_BUILD_DIR=CHECKOUT/build; the checkouts take turns within each
round. Reported: the median over the rounds of each stage's CPU ms per clip, and the
range.

usage: bench_speech_stages.py CHECKOUT [CHECKOUT ...] [--rounds 5] [--clips 32]
           [--runs 20] [--data DIR] [--json OUT]
The clips are bench_audio_video.py's (its --data folder, 256 clips of 16 kHz); the first
--clips of them are used (6.2 s on average for the first 32).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STAGES = ("decode", "spectrogram", "mel", "decibels")


def child(checkout, paths, runs):
    """Runs in the child: CPU ms per clip of each cut pipeline (cumulative)."""
    sys.path.insert(0, os.path.join(checkout, "python"))
    sys.path.insert(0, HERE)
    import stoker
    from stoker import fn
    from bench_audio_video import FLOOR_DB, HOP, NFFT, NMELS, RATE, periodic_hann

    def make(depth):
        @stoker.pipeline_def(batch_size=len(paths), num_threads=1, seed=1, device_id=None)
        def pipe():
            data, _ = fn.readers.file(files=paths, random_shuffle=False, name="R")
            out, _ = fn.decoders.audio(data, sample_rate=RATE, downmix=True)
            if depth >= 1:
                out = fn.spectrogram(out, nfft=NFFT, window_length=NFFT, window_step=HOP,
                                     window_fn=periodic_hann(NFFT))
            if depth >= 2:
                out = fn.mel_filter_bank(out, sample_rate=RATE, nfilter=NMELS,
                                         mel_formula="htk", normalize=False)
            if depth >= 3:
                out = fn.to_decibels(out, multiplier=10.0, reference=1.0, cutoff_db=FLOOR_DB)
            return out
        return pipe()

    cum = []
    for depth in range(len(STAGES)):
        p = make(depth)
        p.run()
        c0 = time.process_time()
        for _ in range(runs):
            p.run()
        cum.append(1e3 * (time.process_time() - c0) / (runs * len(paths)))
        del p
    return cum


def stages(cum):
    return [cum[0]] + [cum[i] - cum[i - 1] for i in range(1, len(cum))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkouts", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clips", type=int, default=32)
    ap.add_argument("--runs", type=int, default=20, help="timed runs of each cut pipeline")
    ap.add_argument("--data", default=os.path.join(HERE, "data", "av"))
    ap.add_argument("--json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    sys.path.insert(0, HERE)
    from bench_audio_video import make_speech
    paths = make_speech(os.path.join(a.data, "speech-16000"), 256, [16000])[:a.clips]
    if a.child:
        print(json.dumps(child(a.child, paths, a.runs)))
        return
    res = {c: [] for c in a.checkouts}
    for r in range(a.rounds):
        for c in a.checkouts:
            # one thread: NumPy's OpenBLAS threads would spin in this CPU time otherwise
            env = dict(os.environ, STK_BUILD_DIR=os.path.join(c, "build"), OPENBLAS_NUM_THREADS="1")
            out = subprocess.run([sys.executable, __file__, c, "--child", c, "--clips",
                                  str(a.clips), "--runs", str(a.runs), "--data", a.data],
                                 env=env, check=True, capture_output=True, text=True).stdout
            res[c].append(stages(json.loads(out.strip().splitlines()[-1])))
            print(f"round {r + 1} {c}: " + ", ".join(
                f"{s} {v:.3f}" for s, v in zip(STAGES, res[c][-1])), flush=True)
    print(f"\nCPU ms per clip, one thread, {a.clips} clips, median (range) of {a.rounds} rounds; "
          f"load average {open('/proc/loadavg').read().split()[:3]}")
    for c in a.checkouts:
        cols = []
        for i, s in enumerate(STAGES + ("total",)):
            v = [sum(x) if s == "total" else x[i] for x in res[c]]
            cols.append(f"{s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})")
        print(f"{c}: " + "; ".join(cols))
    if a.json:
        json.dump({"clips": a.clips, "rounds": res}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
