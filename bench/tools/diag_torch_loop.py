"""Diagnostics for the torch hand-off loop of tests/python/test_gpu_torch.py: runs the
loop (GPU pipeline -> torch.from_dlpack -> a sum on a torch stream, 400 batches) in a
child process per configuration, prints its rate every 50 batches, and on a stall (no
progress for --stall seconds) prints every Python thread's stack and, where gdb exists,
the native stacks of every thread.

usage: python3 bench/tools/diag_torch_loop.py [--stall 30]"""
import argparse
import faulthandler
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = [("auto", "side"), ("1.0", "side"), ("auto", "default"), ("0.75", "side")]


def child(load, stream_kind, iters):
    faulthandler.enable()
    import torch
    import stoker
    from stoker import fn, types
    photos = sorted(os.path.join(ROOT, "data", "photos", f) for f in os.listdir(os.path.join(ROOT, "data", "photos"))
                    if f.endswith((".jpg", ".png")))

    @stoker.pipeline_def(batch_size=len(photos), num_threads=2, seed=9, device_id=0)
    def pipe():
        jpegs, labels = fn.readers.file(files=photos, name="Reader")
        kw = {} if load == "auto" else {"hw_decoder_load": float(load)}
        images = fn.decoders.image(jpegs, device="mixed", **kw)
        crops = fn.random_resized_crop(images, size=[224, 224], device="gpu")
        mirror = fn.random.coin_flip(probability=0.5)
        out = fn.crop_mirror_normalize(crops, mirror=mirror, dtype=types.FLOAT, device="gpu")
        return out, labels

    g = pipe()
    g.build()
    s = torch.cuda.Stream() if stream_kind == "side" else torch.cuda.current_stream()
    t0 = time.time()
    with torch.cuda.stream(s):
        for it in range(iters):
            out, _ = g.run()
            t = torch.from_dlpack(out)
            float(t.float().sum())
            del t, out
            if (it + 1) % 50 == 0:
                print(f"  {it + 1} batches, {(it + 1) / (time.time() - t0):.1f} batches/s, stats {g.stats()}", flush=True)
    print("  done", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stall", type=float, default=30)
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], a.child[1], a.iters)
    for load, kind in CONFIGS:
        print(f"== hw_decoder_load {load}, consumer stream {kind}", flush=True)
        p = subprocess.Popen([sys.executable, __file__, "--child", load, kind, "--iters", str(a.iters)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        os.set_blocking(p.stdout.fileno(), False)
        last = time.time()
        while p.poll() is None:
            line = p.stdout.readline()
            if line:
                print(line, end="", flush=True)
                last = time.time()
            elif time.time() - last > a.stall:
                print(f"  STALL: no progress for {a.stall:.0f} s", flush=True)
                if shutil.which("gdb"):
                    subprocess.run(["gdb", "-p", str(p.pid), "-batch", "-ex", "thread apply all bt 12"], timeout=60)
                os.kill(p.pid, 6)  # SIGABRT: faulthandler prints the Python stacks
                time.sleep(2)
                print(p.stdout.read() or "", flush=True)
                p.kill()
                break
            else:
                time.sleep(0.1)
        print(p.stdout.read() or "", end="", flush=True)
        print(f"  exit {p.returncode}", flush=True)


if __name__ == "__main__":
    main()
