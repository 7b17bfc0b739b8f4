#!/usr/bin/env python3
"""Issue 26 item 3: stoker's audio and video input pipelines against the PyTorch
libraries doing the same work on the same generated files, in one process, alternated
stoker, torch, stoker, torch, ... (a change in the machine's load hits both).

speech: decode N WAV/FLAC clips (2-10 s of tones in noise; 16 kHz unless --rates says
  otherwise), resample to 16 kHz where a clip has another rate, log-mel spectrogram
  (n_fft 512, hop 160, periodic Hann window of 512, 80 HTK mel bins without area
  normalisation, power, then 10 log10 with a floor of -100 dB: torchaudio's
  MelSpectrogram + AmplitudeToDB defaults, which stoker is given explicitly).
  stoker: readers.file -> decoders.audio(sample_rate=16000, downmix=True) -> spectrogram
  -> mel_filter_bank -> to_decibels, `--threads` threads.
  torch: a DataLoader with `--threads` worker processes over a Dataset whose items are
  torchaudio.load (TorchCodec underneath since torchaudio 2.9; --audio-loader soundfile
  for libsndfile) [+ torchaudio.functional.resample] + MelSpectrogram + AmplitudeToDB.
  --device gpu: stoker decodes on the CPU and runs the spectrogram, mel bank and
  decibels on the GPU; torch's workers decode and its main process pads the batch and runs
  the two transforms on CUDA.
video: sequences of 16 consecutive frames (every frame of every clip once, 16 apart) of
  generated 320x240 H.264 MP4 clips, scaled to 112x112 (bilinear), uint8.
  stoker: readers.video_resize (FFmpeg, scaled by libswscale as decoded).
  torch: a DataLoader over (file, first frame) items: torchcodec.decoders.VideoDecoder
  (FFmpeg; torchvision.io's video reading is deprecated in its favour and gone from
  torchvision 0.26) .get_frames_in_range + torchvision.transforms.v2.functional.resize
  (bilinear, antialiased). Both shuffle the sequences every epoch (--no-shuffle: in order).
  --device gpu adds a GPU video row: readers.video(device="gpu") (NVDEC through FFmpeg's
  CUDA hwaccel, RGB conversion on the GPU) against the CPU readers.video on the same
  sequences at full size (no resize: the GPU form does not resize), frames/s, alternated
  per round; and torchcodec's CUDA decoder (VideoDecoder(device="cuda"), one process,
  sequential) when the installed torchcodec has one, else it says so. The torch
  comparison above stays on the CPU.

Each round times one epoch of each library. stoker's window starts before its pipeline
is built (a fresh pipeline per window, so nothing is prefetched outside the window) and
ends when the last batch is returned; torch's DataLoader keeps its workers between epochs
(persistent_workers, started by an untimed warm-up epoch) and its window is one epoch from
iter(). Reported: the median clips/s over the rounds with the range, the median of the
same-round ratios with their range, and the CPU time per clip of all the processes
involved (this process for stoker; this process and the workers for torch, from /proc),
whose ratio is the speed ratio at equal cores on a shared machine. Before timing, the two
outputs are compared on one clip (speech: dB difference; video: mean pixel difference).

Needs torch, torchaudio, torchvision, torchcodec and soundfile in the running interpreter
(bench/requirements-torch.txt; not the project venv), the ffmpeg CLI to make the clips and
stoker built (`make build`; imported from this checkout's python/).

usage: bench_audio_video.py [--only speech,video] [--rounds 5] [--threads 2]
           [--clips 256] [--videos 32] [--device cpu|gpu] [--data DIR] [--json OUT]

On 16 cores give each window more work (an epoch of the defaults takes about 0.1 s
there): --threads 16 --clips 2048 --videos 256. A machine without the ffmpeg CLI (needed
for the videos, and for FLAC without soundfile) can use clips made elsewhere: --data DIR
(the folders are reused when their settings.json matches the arguments).
"""
import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))  # stoker from this checkout
sys.path.insert(0, HERE)

RATE, NFFT, HOP, NMELS, FLOOR_DB = 16000, 512, 160, 80, -100.0
SEQ, SIZE = 16, 112
VIDEO_ARMS = {"after": "torchcodec + torchvision resize", "decoder": "torchcodec decoder-native resize"}


# ---- data ----

def speech_signal(rng, rate):
    """2-10 s: three vibrato tones switched on and off like syllables, in white noise."""
    n = int(rate * rng.uniform(2.0, 10.0))
    t = np.arange(n) / rate
    x = np.zeros(n)
    for f0 in rng.uniform(120, 1200, 3):
        x += np.sin(2 * np.pi * f0 * t + 3 * np.sin(2 * np.pi * rng.uniform(2, 6) * t))
    envelope = 0.5 + 0.5 * np.sign(np.sin(2 * np.pi * rng.uniform(2, 5) * t))
    return 0.2 * x * envelope + 0.02 * rng.standard_normal(n)


def write_pcm16(path, x, rate):
    """A 16-bit mono WAV or FLAC file: soundfile (libsndfile) where installed, else the
    standard library's wave module and, for FLAC, the ffmpeg CLI."""
    try:
        import soundfile
        soundfile.write(path, x, rate, subtype="PCM_16")
        return
    except ImportError:
        pass
    import wave
    wav = path if path.endswith(".wav") else path + ".tmp.wav"
    with wave.open(wav, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(x, -1, 1 - 2 ** -15) * 32768).astype("<i2").tobytes())
    if wav != path:
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", wav, "-c:a", "flac", path], check=True)
        os.remove(wav)


def make_speech(folder, count, rates, seed=0):
    """`count` clips alternating WAV and FLAC (16-bit), rates cycling through `rates`;
    reuses the folder when it was made with the same settings."""
    stamp = os.path.join(folder, "settings.json")
    settings = {"count": count, "rates": rates, "seed": seed, "version": 1}
    paths = [os.path.join(folder, f"clip{i:04d}." + ("wav" if i % 2 == 0 else "flac")) for i in range(count)]
    if os.path.exists(stamp) and json.load(open(stamp)) == settings:
        return paths
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i, path in enumerate(paths):
        rate = rates[i % len(rates)]
        write_pcm16(path, speech_signal(rng, rate), rate)
    json.dump(settings, open(stamp, "w"))
    return paths


def video_frames(rng, frames, w, h):
    """A blocky random texture drifting 1-3 pixels a frame over a gradient, with noise."""
    dx, dy = rng.integers(1, 4, 2)
    tex = rng.integers(0, 256, ((h + frames * dy) // 8 + 2, (w + frames * dx) // 8 + 2, 3), np.uint8)
    tex = np.repeat(np.repeat(tex, 8, 0), 8, 1)
    grad = np.linspace(0, 60, w)[None, :, None]
    out = np.empty((frames, h, w, 3), np.uint8)
    for i in range(frames):
        f = tex[i * dy:i * dy + h, i * dx:i * dx + w] * 0.7 + grad + rng.normal(0, 3, (h, w, 3))
        out[i] = np.clip(f, 0, 255)
    return out


def make_videos(folder, count, frames, w=320, h=240, gop=16, seed=0):
    """`count` H.264 MP4 clips (yuv420p, crf 23, a key frame every `gop` frames, 25 fps)."""
    stamp = os.path.join(folder, "settings.json")
    settings = {"count": count, "frames": frames, "w": w, "h": h, "gop": gop, "seed": seed, "version": 1}
    paths = [os.path.join(folder, f"clip{i:03d}.mp4") for i in range(count)]
    if os.path.exists(stamp) and json.load(open(stamp)) == settings:
        return paths
    if not shutil.which("ffmpeg"):
        sys.exit("the ffmpeg CLI is needed to make the clips (apt-get install ffmpeg)")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    for path in paths:
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                        "-s", f"{w}x{h}", "-r", "25", "-i", "-", "-c:v", "libx264", "-crf", "23",
                        "-g", str(gop), "-sc_threshold", "0", "-pix_fmt", "yuv420p", path],
                       input=video_frames(rng, frames, w, h).tobytes(), check=True)
    json.dump(settings, open(stamp, "w"))
    return paths


# ---- speech: stoker ----

def periodic_hann(n):
    """torch.hann_window(n)'s window (periodic): stoker's default Hann is centred on the
    half samples, 0.5 (1 - cos(2 pi (t + 0.5) / n)), as DALI's."""
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)).tolist()


def stoker_speech(paths, batch, threads, device, shuffle=True):
    import stoker
    from stoker import fn

    @stoker.pipeline_def(batch_size=batch, num_threads=threads, seed=1,
                         device_id=0 if device == "gpu" else None)
    def pipe():
        data, _ = fn.readers.file(files=paths, random_shuffle=shuffle, name="R")
        audio, _ = fn.decoders.audio(data, sample_rate=RATE, downmix=True)
        if device == "gpu":
            audio = audio.gpu()
        spec = fn.spectrogram(audio, nfft=NFFT, window_length=NFFT, window_step=HOP,
                              window_fn=periodic_hann(NFFT))
        mel = fn.mel_filter_bank(spec, sample_rate=RATE, nfilter=NMELS, mel_formula="htk", normalize=False)
        return fn.to_decibels(mel, multiplier=10.0, reference=1.0, cutoff_db=FLOOR_DB)
    return pipe()


# ---- speech: torch ----

def load_audio(path, loader):
    """(float32 [channels, time] in [-1, 1), rate)."""
    import torch
    if loader == "soundfile":
        import soundfile
        x, rate = soundfile.read(path, dtype="float32", always_2d=True)
        return torch.from_numpy(x.T), rate
    import torchaudio
    return torchaudio.load(path)


class SpeechSet:
    """torch Dataset: item i is clip i's log-mel spectrogram [80, frames] (or, with
    features=False, its 16 kHz mono waveform)."""

    def __init__(self, paths, loader, features=True):
        import torchaudio
        self.paths, self.loader, self.features = paths, loader, features
        self.mel = torchaudio.transforms.MelSpectrogram(sample_rate=RATE, n_fft=NFFT, hop_length=HOP,
                                                        n_mels=NMELS)
        self.db = torchaudio.transforms.AmplitudeToDB(stype="power")

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import torchaudio
        x, rate = load_audio(self.paths[i], self.loader)
        x = x.mean(0)
        if rate != RATE:
            x = torchaudio.functional.resample(x, rate, RATE)
        return self.db(self.mel(x)) if self.features else x


def as_list(batch):
    return batch


def torch_speech(paths, batch, workers, device, loader, shuffle=True):
    """An epoch runner over a persistent DataLoader: returns a function that runs one
    epoch and gives the number of clips."""
    import torch
    ds = SpeechSet(paths, loader, features=device == "cpu")
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=shuffle, num_workers=workers,
                                     collate_fn=as_list, persistent_workers=workers > 0,
                                     pin_memory=device == "gpu")
    if device == "cpu":
        def epoch():
            return sum(len(b) for b in dl)
        return dl, epoch
    mel, db = SpeechSet([], loader).mel.to("cuda"), ds.db.to("cuda")  # (the workers' stay on the CPU)

    def epoch_gpu():
        n = 0
        for b in dl:
            x = [t.to("cuda", non_blocking=True) for t in b]  # pinned by the DataLoader
            x = torch.nn.utils.rnn.pad_sequence(x, batch_first=True)
            db(mel(x))  # [batch, 80, frames]: the padded tails cost as much as real audio
            n += len(b)
        torch.cuda.synchronize()
        return n
    return dl, epoch_gpu


def speech_agreement(path, loader, device="cpu"):
    """Largest and mean |stoker - torchaudio| in dB on one clip, over the bins above -80 dB
    and over all; the shapes. device "gpu": stoker's GPU operators against torchaudio on
    the CPU."""
    ds = SpeechSet([path], loader)
    ref = ds[0].numpy()
    p = stoker_speech([path], 1, 1, device, shuffle=False)
    (out,) = p.run()
    got = np.asarray((out.as_cpu() if device == "gpu" else out).at(0))
    if hasattr(p, "close"):
        p.close()
    if got.shape != ref.shape:
        return {"stoker_shape": got.shape, "torch_shape": ref.shape}
    d = np.abs(got.astype(np.float64) - ref)
    loud = ref > -80
    return {"shape": list(got.shape), "max_db_diff": float(d.max()), "mean_db_diff": float(d.mean()),
            "max_db_diff_above_-80dB": float(d[loud].max()), "bins_above_-80dB": float(loud.mean())}


# ---- video ----

def stoker_video(paths, batch, threads, shuffle=True):
    import stoker
    from stoker import fn

    @stoker.pipeline_def(batch_size=batch, num_threads=threads, seed=1)
    def pipe():
        video, _ = fn.readers.video_resize(filenames=paths, labels=[], sequence_length=SEQ, step=SEQ,
                                           resize_x=SIZE, resize_y=SIZE, random_shuffle=shuffle, name="R")
        return video
    return pipe()


def stoker_video_full(paths, batch, threads, device, shuffle=True):
    """readers.video at the clips' size on `device` (cpu, or gpu: NVDEC)."""
    import stoker
    from stoker import fn

    @stoker.pipeline_def(batch_size=batch, num_threads=threads, seed=1,
                         device_id=0 if device == "gpu" else None)
    def pipe():
        video, _ = fn.readers.video(filenames=paths, labels=[], sequence_length=SEQ, step=SEQ,
                                    random_shuffle=shuffle, device=device, name="R")
        return video
    return pipe()


def video_gpu_agreement(path):
    """Mean / largest |GPU - CPU| over one sequence and whether the frames are the same ones."""
    outs = {}
    for d in ("cpu", "gpu"):
        p = stoker_video_full([path], 1, 1, d, shuffle=False)
        (v,) = p.run()
        v = v.as_cpu() if hasattr(v, "as_cpu") else v
        outs[d] = np.asarray(v.at(0)).astype(np.int16)
        del p
    d = np.abs(outs["gpu"] - outs["cpu"])
    return {"mean_abs_diff": float(d.mean()), "max_abs_diff": int(d.max()),
            "share_beyond_6": float((d > 6).mean()),
            "mean_abs_diff_one_frame_off": float(np.abs(outs["gpu"][1:] - outs["cpu"][:-1]).mean())}


def torchcodec_cuda(paths, frames, rounds):
    """torchcodec's CUDA decoder over every sequence, sequentially: frames/s per round, or
    the reason it is not there."""
    import torch
    try:
        from torchcodec.decoders import VideoDecoder
        VideoDecoder(paths[0], device="cuda").get_frames_in_range(0, 1)
    except Exception as e:  # no torchcodec, or one built without CUDA
        return None, f"{type(e).__name__}: {str(e)[:200]}"
    rates = []
    for _ in range(rounds + 1):  # the first is a warm-up
        torch.cuda.synchronize()
        t0, n = time.perf_counter(), 0
        for p in paths:
            dec = VideoDecoder(p, device="cuda")
            for s in range(0, frames - SEQ + 1, SEQ):
                n += dec.get_frames_in_range(s, s + SEQ).data.shape[0]
        torch.cuda.synchronize()
        rates.append(n / (time.perf_counter() - t0))
    return rates[1:], None


def video_gpu(a, paths, nseq, shuffle):
    """GPU row: stoker's GPU reader against its CPU reader (and torchcodec on CUDA)."""
    agree = video_gpu_agreement(paths[0])
    print(f"video on the GPU: one sequence, stoker GPU vs CPU: {agree}", flush=True)
    make = {d: (lambda d=d: stoker_video_full(paths, a.video_batch, a.threads, d, shuffle))
            for d in ("gpu", "cpu")}
    for d in make:
        time_stoker(make[d], 1, a.video_batch, d)  # warm-up
    res = {"gpu": [], "cpu": []}
    for r in range(a.rounds):
        for d in ("gpu", "cpu"):
            res[d].append(time_stoker(make[d], nseq // a.video_batch, a.video_batch, d))
        print(f"  video gpu round {r + 1} (frames/s): stoker gpu {SEQ * res['gpu'][-1][0]:.0f}, "
              f"stoker cpu {SEQ * res['cpu'][-1][0]:.0f}", flush=True)
    tc, why = torchcodec_cuda(paths, a.frames, a.rounds)
    med = statistics.median
    out = {"agreement": agree,
           "stoker_gpu_frames_s": med([SEQ * x[0] for x in res["gpu"]]),
           "stoker_cpu_frames_s": med([SEQ * x[0] for x in res["cpu"]]),
           "ratio": med([g[0] / c[0] for g, c in zip(res["gpu"], res["cpu"])]),
           "stoker_gpu_cpu_ms_per_seq": med([x[1] for x in res["gpu"]]),
           "stoker_cpu_cpu_ms_per_seq": med([x[1] for x in res["cpu"]]),
           "torchcodec_cuda_frames_s": med(tc) if tc else None, "torchcodec_cuda": why or "ran",
           "runs": res}
    print(f"\nvideo, 16 frames at 320x240, {a.threads} threads: stoker GPU {out['stoker_gpu_frames_s']:.0f} "
          f"frames/s, stoker CPU {out['stoker_cpu_frames_s']:.0f} frames/s, GPU / CPU "
          f"**{out['ratio']:.2f}x**; torchcodec CUDA: "
          + (f"{out['torchcodec_cuda_frames_s']:.0f} frames/s (one process)" if tc else f"not available ({why})"),
          flush=True)
    return out


class VideoSet:
    """torch Dataset: item i is the i-th (file, first frame) sequence as uint8
    [16, 3, 112, 112] (torchcodec decode, then torchvision's bilinear resize)."""

    def __init__(self, paths, frames, resize="after"):
        self.items = [(p, s) for p in paths for s in range(0, frames - SEQ + 1, SEQ)]
        self.resize = resize

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        from torchcodec.decoders import VideoDecoder
        from torchvision.transforms.v2 import functional as F
        path, start = self.items[i]
        if self.resize == "decoder":  # torchcodec's decoder-native resize (FFmpeg's scaler)
            from torchvision.transforms import v2
            dec = VideoDecoder(path, seek_mode="approximate", num_ffmpeg_threads=1,
                               transforms=[v2.Resize((SIZE, SIZE))])
            return dec.get_frames_in_range(start, start + SEQ).data
        dec = VideoDecoder(path, seek_mode="approximate", num_ffmpeg_threads=1)
        x = dec.get_frames_in_range(start, start + SEQ).data  # uint8 [16, 3, H, W]
        return F.resize(x, [SIZE, SIZE], antialias=True)


def torch_video(paths, frames, batch, workers, shuffle=True, resize="after"):
    import torch
    ds = VideoSet(paths, frames, resize)
    dl = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=shuffle, num_workers=workers,
                                     persistent_workers=workers > 0)

    def epoch():
        return sum(b.shape[0] for b in dl)
    return dl, epoch


def video_agreement(path, frames, resize):
    """Mean and largest |stoker - torch| over one sequence (uint8 levels): both scale the
    same 16 decoded frames bilinearly, with different filters."""
    ref = VideoSet([path], frames, resize)[1].permute(0, 2, 3, 1).numpy()  # frames 16-31, FHWC
    p = stoker_video([path], 1, 1, shuffle=False)
    p.run()
    (out,) = p.run()
    got = np.asarray(out.at(0))
    if hasattr(p, "close"):
        p.close()
    if got.shape != ref.shape:
        return {"stoker_shape": got.shape, "torch_shape": ref.shape}
    d = np.abs(got.astype(np.int16) - ref)
    # A wrong frame would differ by tens of levels: the texture moves 1-3 pixels a frame.
    shifted = np.abs(got[1:].astype(np.int16) - ref[:-1]).mean()
    return {"shape": list(got.shape), "mean_abs_diff": float(d.mean()), "max_abs_diff": int(d.max()),
            "mean_abs_diff_one_frame_off": float(shifted)}


# ---- timing ----

def cpu_seconds(pids):
    from bench_torchvision import _cpu_seconds
    return _cpu_seconds(pids)


def worker_pids(dl):
    it = getattr(dl, "_iterator", None)
    return [w.pid for w in getattr(it, "_workers", [])]


def time_stoker(make, batches, batch, device):
    """One epoch of a fresh pipeline: (clips/s, CPU ms per clip)."""
    t0, c0 = time.perf_counter(), time.process_time()
    p = make()
    n = 0
    for _ in range(batches):
        (out,) = p.run()
        n += len(out)
    if device == "gpu":
        import torch
        torch.cuda.synchronize()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    if hasattr(p, "close"):
        p.close()
    del p
    return n / dt, 1e3 * cpu / n


def time_torch(dl, epoch):
    pids = worker_pids(dl)
    t0, c0 = time.perf_counter(), cpu_seconds(pids)
    n = epoch()
    dt, c1 = time.perf_counter() - t0, cpu_seconds(pids)
    return n / dt, (1e3 * (c1 - c0) / n if c0 is not None and c1 is not None else None)


def compare(name, make_stoker, batches, batch, arms, rounds, device):
    """Untimed warm-up of all, then `rounds` rounds of (stoker epoch, each torch arm's
    epoch). arms: {label: (DataLoader, epoch function)}. Returns {label: [(rate, CPU ms)]}."""
    for dl, epoch in arms.values():
        epoch()  # the DataLoader's workers start (fork) before stoker makes any thread
    time_stoker(make_stoker, 1, batch, device)
    res = {"stoker": [], **{label: [] for label in arms}}
    for r in range(rounds):
        res["stoker"].append(time_stoker(make_stoker, batches, batch, device))
        for label, (dl, epoch) in arms.items():
            res[label].append(time_torch(dl, epoch))
        print(f"  {name} round {r + 1} (per second, CPU ms per unit): " +
              ", ".join(f"{k} {v[-1][0]:.1f} {v[-1][1] or float('nan'):.2f} ms" for k, v in res.items()),
              flush=True)
    return res


def summarise(res, arm):
    s, t = res["stoker"], res[arm]
    ratios = [a[0] / b[0] for a, b in zip(s, t)]
    med = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    sc, tc = med([x[1] for x in s]), med([x[1] for x in t if x[1] is not None])
    return {"stoker": med([x[0] for x in s]), "stoker_range": [min(x[0] for x in s), max(x[0] for x in s)],
            "torch": med([x[0] for x in t]), "torch_range": [min(x[0] for x in t), max(x[0] for x in t)],
            "ratio": med(ratios), "ratio_range": [min(ratios), max(ratios)],
            "stoker_cpu_ms": sc, "torch_cpu_ms": tc, "cpu_ratio": tc / sc if sc and tc else None,
            "runs": {"stoker": s, arm: t}}


def table(rows, threads):
    out = [f"| work | unit | stoker, {threads} threads | torch, {threads} workers | stoker / torch "
           "(same-round ratios) | CPU ms per unit: stoker / torch | torch / stoker CPU |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, unit, s in rows:
        cpu = (f"{s['stoker_cpu_ms']:.2f} / {s['torch_cpu_ms']:.2f}" if s["torch_cpu_ms"] else
               f"{s['stoker_cpu_ms']:.2f} / -")
        ratio = f"{s['cpu_ratio']:.2f}x" if s["cpu_ratio"] else "-"
        out.append(f"| {name} | {unit} | {s['stoker']:.1f} ({s['stoker_range'][0]:.1f}-{s['stoker_range'][1]:.1f}) "
                   f"| {s['torch']:.1f} ({s['torch_range'][0]:.1f}-{s['torch_range'][1]:.1f}) "
                   f"| **{s['ratio']:.2f}x** ({s['ratio_range'][0]:.2f}-{s['ratio_range'][1]:.2f}) | {cpu} "
                   f"| {ratio} |")
    return "\n".join(out)


def machine():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()}: {model}, {os.cpu_count()} cores"


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def versions():
    import torch
    import stoker
    v = [f"stoker {stoker.__version__}", f"torch {torch.__version__}"]
    for name in ("torchaudio", "torchvision"):  # absent where only the GPU video row runs
        try:
            v.append(f"{name} {__import__(name).__version__}")
        except ImportError:
            v.append(f"no {name}")
    try:
        import torchcodec
        v.append(f"torchcodec {torchcodec.__version__}")
    except ImportError:
        v.append("no torchcodec")
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        v.append(f"checkout {rev}")
    except OSError:
        pass
    return ", ".join(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="speech,video")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="stoker threads = DataLoader workers")
    ap.add_argument("--clips", type=int, default=256, help="speech clips (a multiple of --audio-batch)")
    ap.add_argument("--audio-batch", type=int, default=16)
    ap.add_argument("--rates", default="16000", help="sample rates of the clips, cycled (e.g. 16000,22050,44100)")
    ap.add_argument("--audio-loader", choices=("auto", "torchaudio", "soundfile"), default="auto",
                    help="torch's decoder; auto: torchaudio.load where torchcodec is installed, else soundfile")
    ap.add_argument("--videos", type=int, default=32, help="video clips")
    ap.add_argument("--frames", type=int, default=64, help="frames per video clip (a multiple of 16)")
    ap.add_argument("--gop", type=int, default=16, help="frames between the clips' key frames")
    ap.add_argument("--video-batch", type=int, default=4, help="sequences per batch")
    ap.add_argument("--video-resize", default="after,decoder",
                    help="torch arms: after (torchvision resize of the decoded frames), decoder "
                         "(torchcodec's decoder-native Resize transform)")
    ap.add_argument("--no-shuffle", action="store_true", help="read in order (both libraries)")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="where the speech features run; gpu also times the GPU video reader")
    ap.add_argument("--data", default=os.path.join(HERE, "data", "av"))
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)  # the main process collates (CPU); the workers set 1 themselves
    only, shuffle = a.only.split(","), not a.no_shuffle
    have_codec = importlib.util.find_spec("torchcodec") is not None
    if a.audio_loader == "auto":
        a.audio_loader = "torchaudio" if have_codec else "soundfile"
    gpu_video_only = "video" in only and not have_codec and a.device == "gpu"
    if "video" in only and not have_codec:
        print("video: torch comparison skipped (no torchcodec: torchvision 0.26 has no video reader "
              "of its own)" + ("; the GPU video row still runs" if gpu_video_only else ""))
        only = [x for x in only if x != "video"]
    print(f"machine {machine()}; load average before: {loadavg()}", flush=True)
    print(f"versions: {versions()}", flush=True)
    rows, report = [], {"machine": machine(), "load_before": loadavg(), "args": vars(a)}
    if "speech" in only:
        if a.clips % a.audio_batch:
            sys.exit("--clips must be a multiple of --audio-batch")
        rates = [int(r) for r in a.rates.split(",")]
        paths = make_speech(os.path.join(a.data, "speech-" + "-".join(map(str, rates))), a.clips, rates)
        # one clip of each rate: the others are resampled, by different filters
        agree = {rate: speech_agreement(paths[i], a.audio_loader, a.device) for i, rate in enumerate(rates)}
        print(f"speech: {a.clips} clips ({sum(os.path.getsize(p) for p in paths) / 1e6:.1f} MB, rates {rates}), "
              f"batch {a.audio_batch}, device {a.device}; one clip, stoker vs torch: {agree}", flush=True)
        arms = {"torchaudio": torch_speech(paths, a.audio_batch, a.threads, a.device, a.audio_loader, shuffle)}
        res = compare("speech", lambda: stoker_speech(paths, a.audio_batch, a.threads, a.device, shuffle),
                      a.clips // a.audio_batch, a.audio_batch, arms, a.rounds, a.device)
        del arms
        s = summarise(res, "torchaudio")
        what = "torch.load" if a.audio_loader == "torchaudio" else "soundfile"
        rows.append((f"speech log-mel ({a.device}) vs torchaudio ({what.replace('torch.', 'torchaudio.')})",
                     "clips", s))
        report["speech"] = {"summary": s, "agreement": agree, "clips": a.clips, "rates": rates}
    if "video" in only:
        if a.frames % SEQ:
            sys.exit("--frames must be a multiple of 16")
        paths = make_videos(os.path.join(a.data, f"video-{a.frames}-g{a.gop}"), a.videos, a.frames, gop=a.gop)
        resizes = a.video_resize.split(",")
        agree = {r: video_agreement(paths[0], a.frames, r) for r in resizes}
        nseq = a.videos * (a.frames // SEQ)
        if nseq % a.video_batch:
            sys.exit("the number of sequences (videos x frames / 16) must be a multiple of --video-batch")
        print(f"video: {a.videos} clips of {a.frames} frames 320x240 H.264 (key frame every {a.gop}), {nseq} "
              f"sequences of {SEQ}, batch {a.video_batch}; one sequence, stoker vs torch: {agree}", flush=True)
        arms = {VIDEO_ARMS[r]: torch_video(paths, a.frames, a.video_batch, a.threads, shuffle, r) for r in resizes}
        res = compare("video", lambda: stoker_video(paths, a.video_batch, a.threads, shuffle),
                      nseq // a.video_batch, a.video_batch, arms, a.rounds, "cpu")
        del arms
        report["video"] = {"agreement": agree, "sequences": nseq, "summary": {}}
        for r in resizes:
            s = summarise(res, VIDEO_ARMS[r])
            rows.append((f"video, 16 frames -> 112x112 (cpu) vs {VIDEO_ARMS[r]}", "sequences", s))
            report["video"]["summary"][r] = s
        if a.device == "gpu":
            report["video"]["gpu"] = video_gpu(a, paths, nseq, shuffle)
    if gpu_video_only:
        paths = make_videos(os.path.join(a.data, f"video-{a.frames}-g{a.gop}"), a.videos, a.frames, gop=a.gop)
        report["video"] = {"gpu": video_gpu(a, paths, a.videos * (a.frames // SEQ), shuffle)}
    report["load_after"] = loadavg()
    print(f"\nload average after: {report['load_after']}; medians over {a.rounds} rounds (range)\n")
    print(table(rows, a.threads))
    for r, v in report.get("video", {}).get("summary", {}).items():
        print(f"\nvideo frames/s: stoker {SEQ * v['stoker']:.0f}, {VIDEO_ARMS[r]} {SEQ * v['torch']:.0f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
