#!/usr/bin/env python3
"""Issue 26: are two checkouts' CPU audio features the same bytes? Runs spectrogram,
power_spectrum, mel_filter_bank (both mel scales, both normalisations, both layouts),
mfcc and to_decibels on fixed random inputs, and the speech chain of
bench_audio_video.py (decode -> spectrogram -> mel bank -> decibels) on its first
--clips clips, in each checkout (a child process importing CHECKOUT/python), and
reports, per output, whether the bytes are equal, else the largest difference.

usage: compare_audio_outputs.py CHECKOUT_A CHECKOUT_B [--clips 32] [--data DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def outputs(checkout, clips, data, path):
    """In the child: every output of this checkout, saved to `path` (.npz)."""
    sys.path.insert(0, os.path.join(checkout, "python"))
    sys.path.insert(0, HERE)
    import numpy as np
    import stoker
    from stoker import fn
    from bench_audio_video import FLOOR_DB, HOP, NFFT, NMELS, RATE, make_speech, periodic_hann

    rng = np.random.default_rng(3)
    spec_ft = [(rng.random((257, 300)) ** 4 * 50).astype(np.float32) for _ in range(3)]
    spec_tf = [s.T.copy() for s in spec_ft]
    sig = [(rng.standard_normal(n) * 0.3).astype(np.float32) for n in (16000, 5001, 700)]
    res = {}

    def run(name, graph, batch, layout=None):
        @stoker.pipeline_def(batch_size=len(batch), num_threads=1, seed=1, device_id=None)
        def p():
            return graph(fn.external_source(source=lambda: batch, layout=layout))
        (o,) = p().run()
        for i in range(len(batch)):
            res[f"{name} #{i}"] = np.asarray(o.at(i))

    for htk in (False, True):
        for norm in (False, True):
            kw = dict(mel_formula="htk" if htk else "slaney", normalize=norm)
            run(f"mel ft htk={htk} norm={norm}",
                lambda x: fn.mel_filter_bank(x, sample_rate=16000, nfilter=80, **kw), spec_ft, "ft")
            run(f"mel tf htk={htk} norm={norm}",
                lambda x: fn.mel_filter_bank(x, sample_rate=22050, nfilter=40, freq_low=60,
                                             freq_high=8000, **kw), spec_tf, "tf")
    run("mfcc", lambda x: fn.mfcc(fn.to_decibels(fn.mel_filter_bank(x, sample_rate=16000,
                                                                    nfilter=64)),
                                  n_mfcc=20, lifter=22.0), spec_ft, "ft")
    run("to_decibels", lambda x: fn.to_decibels(x, cutoff_db=-120.0), spec_ft, "ft")
    run("to_decibels amplitude", lambda x: fn.to_decibels(x, multiplier=20.0, reference=3.0,
                                                          cutoff_db=-60.0), spec_ft, "ft")
    run("spectrogram", lambda x: fn.spectrogram(x, nfft=512, window_length=400,
                                                window_step=160), sig)
    run("spectrogram magnitude tf", lambda x: fn.spectrogram(x, nfft=256, window_length=256,
                                                             window_step=100, power=1,
                                                             layout="tf"), sig)
    run("power_spectrum", lambda x: fn.power_spectrum(x, nfft=1024), sig)
    paths = make_speech(os.path.join(data, "speech-16000"), 256, [16000])[:clips]

    @stoker.pipeline_def(batch_size=len(paths), num_threads=1, seed=1, device_id=None)
    def chain():
        d, _ = fn.readers.file(files=paths, random_shuffle=False)
        a, _ = fn.decoders.audio(d, sample_rate=RATE, downmix=True)
        s = fn.spectrogram(a, nfft=NFFT, window_length=NFFT, window_step=HOP,
                           window_fn=periodic_hann(NFFT))
        m = fn.mel_filter_bank(s, sample_rate=RATE, nfilter=NMELS, mel_formula="htk",
                               normalize=False)
        return s, fn.to_decibels(m, multiplier=10.0, reference=1.0, cutoff_db=FLOOR_DB)
    s, db = chain().run()
    for i in range(len(paths)):
        res[f"speech spectrogram #{i}"] = np.asarray(s.at(i))
        res[f"speech log-mel #{i}"] = np.asarray(db.at(i))
    np.savez(path, **res)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkouts", nargs=2)
    ap.add_argument("--clips", type=int, default=32)
    ap.add_argument("--data", default=os.path.join(HERE, "data", "av"))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        outputs(a.child[0], a.clips, a.data, a.child[1])
        return
    import numpy as np
    with tempfile.TemporaryDirectory() as tmp:
        got = []
        for i, c in enumerate(a.checkouts):
            path = os.path.join(tmp, f"{i}.npz")
            env = dict(os.environ, STK_BUILD_DIR=os.path.join(c, "build"))
            subprocess.run([sys.executable, __file__, *a.checkouts, "--clips", str(a.clips),
                            "--data", a.data, "--child", c, path], env=env, check=True)
            got.append(dict(np.load(path)))
    same = 0
    for k, x in got[0].items():
        y = got[1][k]
        if x.shape == y.shape and x.tobytes() == y.tobytes():
            same += 1
            continue
        d = np.abs(x.astype(np.float64) - y) if x.shape == y.shape else None
        print(f"{k}: " + ("shapes differ" if d is None else
                          f"{np.mean(d > 0):.2e} of the values differ, by at most {d.max():.3g}"))
    print(f"{same} of {len(got[0])} outputs byte-identical")


if __name__ == "__main__":
    main()
