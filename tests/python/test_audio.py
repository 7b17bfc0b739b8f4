"""The audio signal operators (issue 26): power_spectrum, spectrogram, mel_filter_bank,
mfcc, to_decibels, preemphasis_filter, nonsilent_region and audio_resample, checked
against NumPy formulas written here (librosa's conventions as DALI documents them) and,
when the DALI 2.4 CPU venv exists, against DALI itself on the same inputs."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import stoker
from stoker import fn, _schema

AUDIO_OPS = {"power_spectrum", "spectrogram", "mel_filter_bank", "mfcc", "to_decibels",
             "preemphasis_filter", "nonsilent_region", "audio_resample"}
pytestmark = pytest.mark.skipif(not AUDIO_OPS <= set(_schema.registry()),
                                reason="audio operators not in this build")

DALI_PY = os.environ.get("STK_DALI_PYTHON", "/work/dali-venv/bin/python")
needs_dali = pytest.mark.skipif(not os.path.exists(DALI_PY), reason="no DALI venv (oracle)")

RNG = np.random.default_rng(7)
SIG = [(RNG.random(1000) * 2 - 1).astype(np.float32), (RNG.random(777) * 2 - 1).astype(np.float32)]


def run(graph, data, layout=None):
    """Runs graph(x) on a batch fed from `data` (a list of arrays); the outputs as lists."""
    @stoker.pipeline_def(batch_size=len(data), num_threads=2, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: data, layout=layout)
        r = graph(x)
        return tuple(r) if isinstance(r, (list, tuple)) else r
    outs = pipe().run()
    return [[np.asarray(t.at(i)) for i in range(len(data))] for t in outs]


def dali(expr, data, layout="", tmp=None):
    """The same graph run by DALI 2.4 (CPU) in its own venv: `expr` is Python over `x`
    (a DataNode) and `fn`; returns the outputs as lists of arrays."""
    np.savez(tmp / "in.npz", *data)
    script = textwrap.dedent(f"""
        import numpy as np
        from nvidia.dali import pipeline_def, fn, types
        d = np.load({str(tmp / 'in.npz')!r}); data = [d[k] for k in d.files]
        @pipeline_def(batch_size=len(data), num_threads=1, device_id=None)
        def p():
            x = fn.external_source(source=[data], cycle=True, layout={layout!r})
            r = {expr}
            return tuple(r) if isinstance(r, (list, tuple)) else r
        pp = p(); pp.build(); outs = pp.run()
        np.savez({str(tmp / 'out.npz')!r},
                 *[np.asarray(o.at(i)) for o in outs for i in range(len(data))])
    """)
    subprocess.run([DALI_PY, "-c", script], check=True, capture_output=True, timeout=300)
    o = np.load(tmp / "out.npz")
    flat = [o[k] for k in o.files]
    n = len(data)
    return [flat[i:i + n] for i in range(0, len(flat), n)]


# ---- NumPy references ----

def hann(n):
    t = np.arange(n)
    return 0.5 * (1 - np.cos(2 * np.pi * (t + 0.5) / n))


def ref_spectrogram(x, nfft, wl, step, power=2, center=True, reflect=True, window=None):
    w = hann(wl) if window is None else np.asarray(window, np.float64)
    x = x.astype(np.float64)
    if center:
        x = np.pad(x, (wl // 2, wl // 2), mode="reflect" if reflect else "constant")
    frames = (len(x) - wl) // step + 1
    out = np.zeros((nfft // 2 + 1, frames))
    for i in range(frames):
        out[:, i] = np.abs(np.fft.rfft(x[i * step:i * step + wl] * w, nfft)) ** power
    return out


def hz_to_mel(f, htk):
    f = np.asarray(f, np.float64)
    if htk:
        return 2595 * np.log10(1 + f / 700)
    lin = f / (200 / 3)
    return np.where(f >= 1000, 15 + np.log(np.maximum(f, 1e-9) / 1000) / (np.log(6.4) / 27), lin)


def mel_to_hz(m, htk):
    m = np.asarray(m, np.float64)
    if htk:
        return 700 * (10 ** (m / 2595) - 1)
    return np.where(m >= 15, 1000 * np.exp(np.log(6.4) / 27 * (m - 15)), m * 200 / 3)


def ref_mel_bank(nfilter, nfft, sr, lo=0.0, hi=None, htk=False, norm=True):
    hi = sr / 2 if hi is None else hi
    hz = mel_to_hz(np.linspace(hz_to_mel(lo, htk), hz_to_mel(hi, htk), nfilter + 2), htk)
    f = np.arange(nfft // 2 + 1) * sr / nfft
    w = np.zeros((nfilter, len(f)))
    for m in range(nfilter):
        up = (f - hz[m]) / (hz[m + 1] - hz[m])
        down = (hz[m + 2] - f) / (hz[m + 2] - hz[m + 1])
        w[m] = np.maximum(0, np.minimum(up, down)) * (2 / (hz[m + 2] - hz[m]) if norm else 1)
    return w


def ref_dct2(n_out, n, ortho=False):
    k = np.arange(n_out)[:, None]
    c = np.cos(np.pi / n * (np.arange(n) + 0.5) * k)
    if ortho:
        c *= np.where(k == 0, np.sqrt(1 / n), np.sqrt(2 / n))
    return c


def ref_nonsilent(x, cutoff=-60.0, window=2048, ref=None):
    p = np.concatenate([[0.0], np.cumsum(x.astype(np.float64) ** 2)])
    i = np.arange(len(x))
    mms = (p[i + 1] - p[np.maximum(0, i - window + 1)]) / window
    thr = (mms.max() if ref is None else ref) * 10 ** (cutoff / 10)
    idx = np.nonzero(mms >= thr)[0]
    if len(idx) == 0:
        return 0, 0
    b = max(0, idx[0] - window + 1)
    return b, idx[-1] - b + 1


# ---- tests against NumPy ----

@pytest.mark.parametrize("kw", [dict(nfft=64, window_length=64, window_step=20),
                                dict(nfft=64, window_length=40, window_step=16),
                                dict(nfft=50, window_length=41, window_step=10, power=1),
                                dict(nfft=32, window_length=32, window_step=8,
                                     center_windows=False),
                                dict(nfft=32, window_length=30, window_step=9,
                                     reflect_padding=False)])
def test_spectrogram_is_numpy_stft(kw):
    (got,) = run(lambda x: fn.spectrogram(x, **kw), SIG)
    for g, x in zip(got, SIG):
        want = ref_spectrogram(x, kw["nfft"], kw["window_length"], kw["window_step"],
                               kw.get("power", 2), kw.get("center_windows", True),
                               kw.get("reflect_padding", True))
        assert g.dtype == np.float32 and g.shape == want.shape
        assert np.allclose(g, want, rtol=1e-4, atol=1e-4 * want.max())


def test_spectrogram_window_fn_and_tf_layout():
    win = np.linspace(0.1, 1.0, 24)
    (ft, tf) = run(lambda x: (fn.spectrogram(x, nfft=32, window_length=24, window_step=12,
                                             window_fn=list(win)),
                              fn.spectrogram(x, nfft=32, window_length=24, window_step=12,
                                             window_fn=list(win), layout="tf")), SIG)
    want = ref_spectrogram(SIG[0], 32, 24, 12, window=win)
    assert np.allclose(ft[0], want, rtol=1e-4, atol=1e-4 * want.max())
    assert np.array_equal(tf[0], ft[0].T)


@pytest.mark.parametrize("kw", [dict(nfft=512, window_length=512, window_step=160),
                                dict(nfft=512, window_length=400, window_step=160,
                                     power=1, layout="tf"),
                                dict(nfft=256, window_length=200, window_step=37,
                                     center_windows=False),
                                dict(nfft=60, window_length=60, window_step=13)])
def test_spectrogram_to_float32_rounding(kw):
    """The speech front end's settings (and a non-power-of-two size) against NumPy's
    float64 STFT, bin by bin: off by float32 rounding plus 1e-12 of the largest bin,
    where float64 rounding of the FFT lives (a float32 FFT is ~1e-7 of the largest).
    Signal lengths give frame counts that do not fill the last block of four frames,
    and frames in the reflected edges."""
    rng = np.random.default_rng(5)
    sigs = [(rng.standard_normal(n) * 0.3).astype(np.float32) for n in (16000, 1001, 515)]
    (got,) = run(lambda x: fn.spectrogram(x, **kw), sigs)
    for g, x in zip(got, sigs):
        want = ref_spectrogram(x, kw["nfft"], kw["window_length"], kw["window_step"],
                               kw.get("power", 2), kw.get("center_windows", True))
        if kw.get("layout") == "tf":
            want = want.T
        assert g.shape == want.shape
        assert np.all(np.abs(g - want) <= 6e-8 * want + 1e-12 * want.max())


def test_power_spectrum_is_numpy_rfft():
    x2 = [RNG.standard_normal((3, 50)).astype(np.float32)] * 2
    (a, b, c) = run(lambda x: (fn.power_spectrum(x), fn.power_spectrum(x, nfft=16),
                               fn.power_spectrum(x, nfft=100, power=1, axis=1)), x2)
    y = x2[0].astype(np.float64)
    assert np.allclose(a[0], np.abs(np.fft.rfft(y)) ** 2, rtol=1e-4, atol=1e-3)
    assert np.allclose(b[0], np.abs(np.fft.rfft(y, 16)) ** 2, rtol=1e-4, atol=1e-3)
    assert np.allclose(c[0], np.abs(np.fft.rfft(y, 100)), rtol=1e-4, atol=1e-4)
    (d,) = run(lambda x: fn.power_spectrum(x, axis=0), x2)
    assert np.allclose(d[0], np.abs(np.fft.rfft(y, axis=0)) ** 2, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("kw", [dict(nfilter=10, sample_rate=16000),
                                dict(nfilter=10, sample_rate=16000, mel_formula="htk"),
                                dict(nfilter=8, sample_rate=16000, normalize=False,
                                     freq_low=300, freq_high=6000)])
def test_mel_filter_bank_is_librosa_mel(kw):
    spec = [RNG.random((33, 7)).astype(np.float32), RNG.random((33, 4)).astype(np.float32)]
    (got,) = run(lambda x: fn.mel_filter_bank(x, **kw), spec, layout="ft")
    w = ref_mel_bank(kw["nfilter"], 64, kw["sample_rate"], kw.get("freq_low", 0),
                     kw.get("freq_high"), kw.get("mel_formula") == "htk", kw.get("normalize", True))
    for g, s in zip(got, spec):
        assert np.allclose(g, w @ s, rtol=1e-5, atol=1e-7)


def test_mel_filter_bank_follows_the_f_axis():
    spec = [RNG.random((5, 33)).astype(np.float32)] * 2
    (got,) = run(lambda x: fn.mel_filter_bank(x, nfilter=6, sample_rate=8000), spec, layout="tf")
    w = ref_mel_bank(6, 64, 8000)
    assert got[0].shape == (5, 6)
    assert np.allclose(got[0], spec[0] @ w.T, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kw", [dict(n_mfcc=5), dict(n_mfcc=5, normalize=True),
                                dict(n_mfcc=6, lifter=3.0), dict(n_mfcc=4, axis=1)])
def test_mfcc_is_a_dct(kw):
    mel = [RNG.random((12, 7)).astype(np.float32)] * 2
    (got,) = run(lambda x: fn.mfcc(x, **kw), mel)
    s = mel[0].astype(np.float64)
    if kw.get("axis", 0) == 1:
        want = (ref_dct2(kw["n_mfcc"], 7) @ s.T).T
    else:
        n = kw["n_mfcc"]
        want = ref_dct2(n, 12, kw.get("normalize", False)) @ s
        if "lifter" in kw:
            L = kw["lifter"]
            want *= (1 + L / 2 * np.sin(np.pi * (np.arange(n) + 1) / L))[:, None]
    assert np.allclose(got[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(), dict(multiplier=20.0), dict(reference=0.5, cutoff_db=-3.0)])
def test_to_decibels(kw):
    s = [RNG.random((6, 9)).astype(np.float32) + 1e-3] * 2
    (got,) = run(lambda x: fn.to_decibels(x, **kw), s)
    m, c = kw.get("multiplier", 10.0), kw.get("cutoff_db", -200.0)
    ref = kw.get("reference") or s[0].max()
    want = m * np.log10(np.maximum(s[0] / ref, 10 ** (c / m)))
    assert np.allclose(got[0], want, atol=1e-4)


@pytest.mark.parametrize("border, prev", [("clamp", lambda x: x[0]), ("zero", lambda x: 0.0),
                                          ("reflect", lambda x: x[1])])
def test_preemphasis(border, prev):
    (got,) = run(lambda x: fn.preemphasis_filter(x, border=border, preemph_coeff=0.9), SIG)
    for g, x in zip(got, SIG):
        want = x - 0.9 * np.concatenate([[prev(x)], x[:-1]])
        assert g.dtype == np.float32 and np.allclose(g, want, atol=1e-6)


def test_preemphasis_coefficient_per_sample():
    c = fn.random.uniform(range=[0.0, 1.0])
    (got, coef) = run(lambda x: (fn.preemphasis_filter(x, preemph_coeff=c), c), SIG)
    for g, x, k in zip(got, SIG, coef):
        assert np.allclose(g, x - float(k) * np.concatenate([[x[0]], x[:-1]]), atol=1e-6)
    assert coef[0] != coef[1]


@pytest.mark.parametrize("case", [(5000, (1000, 3000), 256, -60.0, None),
                                  (5000, (1000, 3000), 256, -20.0, None),
                                  (300, (100, 120), 16, -30.0, None),
                                  (300, (50, 60), 16, -30.0, 0.5),
                                  (20000, (9000, 9100), 64, -40.0, None)])
def test_nonsilent_region(case):
    n, (a, b), window, cutoff, refp = case
    x = (RNG.standard_normal(n) * 1e-4).astype(np.float32)
    x[a:b] = RNG.standard_normal(b - a)
    kw = dict(window_length=window, cutoff_db=cutoff, reset_interval=1000)
    if refp:
        kw["reference_power"] = refp
    (begin, length) = run(lambda x: fn.nonsilent_region(x, **kw), [x])
    assert begin[0].dtype == np.int32 and begin[0].shape == ()
    assert (int(begin[0]), int(length[0])) == ref_nonsilent(x, cutoff, window, refp)


def test_nonsilent_region_silence():
    (begin, length) = run(lambda x: fn.nonsilent_region(x, reference_power=1.0, window_length=8),
                          [np.zeros(100, np.float32)])
    assert (int(begin[0]), int(length[0])) == (0, 0)


@pytest.mark.parametrize("kw, scale", [(dict(in_rate=16000, out_rate=8000), 0.5),
                                       (dict(in_rate=16000, out_rate=22050), 22050 / 16000),
                                       (dict(scale=0.37), 0.37),
                                       (dict(out_length=1500), 1.5)])
def test_resample_keeps_a_tone(kw, scale):
    t = np.arange(1000)
    x = [np.sin(2 * np.pi * t * 440 / 16000).astype(np.float32)]
    (got,) = run(lambda a: fn.audio_resample(a, **kw), x)
    y = got[0]
    assert len(y) == int(np.ceil(1000 * scale - 1e-9))
    want = np.sin(2 * np.pi * np.arange(len(y)) / scale * 440 / 16000)
    assert np.abs(y - want)[60:-60].max() < 2e-3


def test_resample_removes_what_the_new_rate_cannot_hold():
    t = np.arange(4000)
    x = [(np.sin(2 * np.pi * t * 0.05) + np.sin(2 * np.pi * t * 0.4)).astype(np.float32)]
    (got,) = run(lambda a: fn.audio_resample(a, scale=0.5), x)
    y = got[0]
    want = np.sin(2 * np.pi * np.arange(len(y)) * 0.1)  # the 0.4 tone is above the new Nyquist
    assert np.abs(y - want)[100:-100].max() < 5e-3


def test_resample_channels_and_integer_types():
    t = np.arange(600)
    tone = np.sin(2 * np.pi * t / 40)
    x = [(np.stack([tone, -tone], 1) * 10000).astype(np.int16)]
    (got,) = run(lambda a: fn.audio_resample(a, in_rate=2, out_rate=1), x)
    y = got[0]
    assert y.dtype == np.int16 and y.shape == (300, 2)
    assert np.array_equal(y[:, 0], -y[:, 1])
    want = 10000 * np.sin(2 * np.pi * np.arange(30, 270) * 2 / 40)
    assert np.abs(y[30:-30, 0] - want).max() <= 20


def test_errors_name_the_argument():
    with pytest.raises(stoker.InvalidArgumentError, match="window_length"):
        run(lambda x: fn.spectrogram(x, nfft=16, window_length=32), SIG)
    with pytest.raises(stoker.InvalidArgumentError, match="freq_high"):
        run(lambda x: fn.mel_filter_bank(x, sample_rate=8000, freq_high=6000), SIG)
    with pytest.raises(stoker.InvalidArgumentError, match="n_mfcc"):
        run(lambda x: fn.mfcc(x, n_mfcc=30), [np.ones((12, 3), np.float32)])
    with pytest.raises(stoker.InvalidArgumentError, match="in_rate"):
        run(lambda x: fn.audio_resample(x, in_rate=1), SIG)
    with pytest.raises(stoker.InvalidArgumentError, match="1-D"):
        run(lambda x: fn.preemphasis_filter(x), [np.ones((3, 3), np.float32)])


# ---- the same graphs through DALI 2.4 ----

DALI_CASES = [
    ("fn.spectrogram(x, nfft=64, window_length=40, window_step=20)", SIG, ""),
    ("fn.spectrogram(x, nfft=48, window_length=41, window_step=7, center_windows=False)", SIG, ""),
    ("fn.spectrogram(x, nfft=32, window_length=32, window_step=8, power=1, "
     "reflect_padding=False)", SIG, ""),
    ("fn.mel_filter_bank(fn.spectrogram(x, nfft=64, window_length=64, window_step=32), "
     "nfilter=20, sample_rate=16000, freq_low=100)", SIG, ""),
    ("fn.mfcc(fn.to_decibels(fn.mel_filter_bank(fn.spectrogram(x, nfft=128, window_length=100, "
     "window_step=50), nfilter=24, sample_rate=8000)), n_mfcc=12, lifter=22.0)", SIG, ""),
    ("fn.mfcc(x, n_mfcc=5, dct_type=3)", [RNG.random((9, 4)).astype(np.float32)] * 2, ""),
    ("fn.mfcc(x, n_mfcc=5, dct_type=1)", [RNG.random((9, 4)).astype(np.float32)] * 2, ""),
    ("fn.mfcc(x, n_mfcc=5, dct_type=3, normalize=True)",
     [RNG.random((9, 4)).astype(np.float32)] * 2, ""),
    ("fn.to_decibels(x, multiplier=20.0, cutoff_db=-40.0)",
     [RNG.random((5, 5)).astype(np.float32)] * 2, ""),
    ("fn.power_spectrum(x, nfft=30)", SIG, ""),
    ("fn.preemphasis_filter(x, preemph_coeff=0.5, border='reflect')", SIG, ""),
    ("fn.nonsilent_region(x, window_length=64, cutoff_db=-3)", SIG, ""),
]


@needs_dali
@pytest.mark.parametrize("expr, data, layout", DALI_CASES)
def test_matches_dali(expr, data, layout, tmp_path):
    want = dali(expr, data, layout, tmp_path)
    got = run(lambda x: eval(expr, {"fn": fn, "x": x}), data, layout or None)
    for g_out, w_out in zip(got, want):
        for g, w in zip(g_out, w_out):
            assert g.shape == w.shape and g.dtype == w.dtype, expr
            tol = 1e-4 * max(1.0, float(np.abs(w).max()))
            assert np.allclose(g, w, rtol=1e-4, atol=tol), expr


@needs_dali
def test_resample_close_to_dali(tmp_path):
    t = np.arange(3000)
    # tones well inside both pass bands (the filters differ only in their transition bands)
    x = [np.sin(2 * np.pi * t * 0.013).astype(np.float32),
         sum(0.3 * np.sin(2 * np.pi * t[:2000] * f + f)
             for f in (0.01, 0.05, 0.1)).astype(np.float32)]
    for expr in ["fn.audio_resample(x, in_rate=16000, out_rate=22050)",
                 "fn.audio_resample(x, in_rate=44100, out_rate=16000)"]:
        (want,) = dali(expr, x, "", tmp_path)
        (got,) = run(lambda a: eval(expr, {"fn": fn, "x": a}), x)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            # both are windowed sincs of their own design: close, not equal, away from the ends
            assert np.abs(g - w)[40:-40].max() < 2e-3, expr



# ---- the moving mean power restarted every reset_interval samples (the GPU's segments) ----

@pytest.mark.parametrize("reset", [-1, 1, 5, 64, 999])
@pytest.mark.parametrize("window", [1, 4, 100])
def test_nonsilent_region_reset_interval_is_exact(reset, window):
    """On small integers every sum is exact, so any reset_interval (each restart is a GPU
    thread's segment) gives the direct NumPy result, at the >= threshold included: a
    reference of 4 and cutoff 0 dB make a window of all 2s exactly at the threshold."""
    x = np.zeros(600, np.float32)
    x[150:150 + window] = 2  # the only window of mean power 4
    x[400:410] = 1
    kw = dict(window_length=window, reset_interval=reset, reference_power=4.0, cutoff_db=0.0)
    (begin, length) = run(lambda a: fn.nonsilent_region(a, **kw), [x])
    want = ref_nonsilent(x, 0.0, window, 4.0)
    assert want == (150, window)  # the window ending at 150 + window - 1, hand-computed
    assert (int(begin[0]), int(length[0])) == want
    r = (RNG.integers(-30, 30, 700)).astype(np.float32)
    kw = dict(window_length=window, reset_interval=reset, cutoff_db=-1.0)
    (begin, length) = run(lambda a: fn.nonsilent_region(a, **kw), [r])
    assert (int(begin[0]), int(length[0])) == ref_nonsilent(r, -1.0, window)
