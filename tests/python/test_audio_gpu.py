"""The GPU spectrogram against the CPU one at the settings speech pipelines use (the
registry's parity check covers one small transform): the FFT kernel (power-of-two sizes up
to 2048) and the direct DFT (other sizes), both layouts, power and magnitude, centred
windows with reflect and zero padding, signals of several lengths in one batch. Both
compute in float64 and round to float32, so they agree to float32 rounding (relative
1e-5 of the frame's largest value). Runs only on a GPU machine."""
import numpy as np
import pytest

import stoker
from stoker import fn

from gpu_parity import requires_gpu, to_numpy_samples

LENGTHS = (16000, 9731, 48000, 700)


def signals():
    rng = np.random.default_rng(3)
    out = []
    for n in LENGTHS:
        t = np.arange(n) / 16000.0
        x = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.1 * np.sin(2 * np.pi * 3100 * t * (1 + t))
        out.append((x + 0.05 * rng.standard_normal(n)).astype(np.float32))
    return out


def run(**kw):
    data = signals()

    @stoker.pipeline_def(batch_size=len(data), num_threads=2, seed=1, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda: data)
        return fn.spectrogram(x, **kw), fn.spectrogram(x.gpu(), device="gpu", **kw)
    p = pipe()
    p.build()
    cpu, gpu = (to_numpy_samples(o) for o in p.run())
    return cpu, gpu


@requires_gpu
@pytest.mark.parametrize("kw", [
    dict(nfft=512, window_length=400, window_step=160),                       # speech, FFT
    dict(nfft=512, window_length=512, window_step=160, layout="tf", power=1),  # FFT, tf, |X|
    dict(nfft=2048, window_length=2048, window_step=512, reflect_padding=False),
    dict(nfft=400, window_length=400, window_step=160),                       # direct DFT
    dict(nfft=64, window_length=40, window_step=7, center_windows=False),
])
def test_gpu_spectrogram_matches_cpu(kw):
    cpu, gpu = run(**kw)
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.shape == g.shape and g.dtype == np.float32, (i, c.shape, g.shape)
        scale = float(np.abs(c).max()) or 1.0
        err = float(np.abs(c.astype(np.float64) - g.astype(np.float64)).max()) / scale
        assert err <= 1e-5, f"signal {i} ({LENGTHS[i]} samples): relative error {err:.2e}"
