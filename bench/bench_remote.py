#!/usr/bin/env python3
"""Read throughput from remote storage (issue 25): the same WebDataset shards and the same
ImageFolder read from local files, from a local S3-compatible server (moto, a Python
process) and from a local HTTP server with range requests (tests/python/remote_servers.py),
through readers that only read (no decoding), so the figures are the I/O path's.

The servers run on 127.0.0.1 of this machine: the figures say what the client side costs
(requests, copies, read-ahead) against servers that are themselves single Python
processes, not what a real object store gives. MB/s counts the sample bytes handed out
over the epoch, timed after the build; the shards' index files are given (as they should
be for remote data), so the build makes no read but the index files and HEADs.

usage: bench_remote.py [--samples N] [--shard-size N] [--threads N] [--batch-size N]
                       [--epochs N] [--repeat N] [--cache-mb N] [--json OUT]
Each remote reader prints its range requests, cached-block reads and MB fetched on
standard error when it is destroyed (STK_REMOTE_STATS=1).
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
STOKER = os.environ.get("STOKER", os.path.join(BUILD, "stoker"))
SERVERS = os.path.join(ROOT, "tests", "python", "remote_servers.py")
PHOTOS = os.path.join(ROOT, "data", "photos")
BUCKET = "bench"

import stoker  # noqa: E402
from stoker import fn  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no server on port {port}")


def make_data(d, samples, shard_size):
    """An ImageFolder of `samples` photos (4 classes) and the same as WebDataset shards."""
    names = sorted(n for n in os.listdir(PHOTOS) if n.endswith((".jpg", ".png")))
    for i in range(samples):
        cls = d / "img" / f"class{i % 4}"
        os.makedirs(cls, exist_ok=True)
        shutil.copy(os.path.join(PHOTOS, names[i % len(names)]), cls / f"{i:06d}_{names[i % len(names)]}")
    subprocess.run([STOKER, "convert", str(d / "img"), "--to", "wds", "--out", str(d / "wds"),
                    "--shard-size", str(shard_size), "--shuffle"], check=True,
                   capture_output=True)
    return len([n for n in os.listdir(d / "wds") if n.endswith(".tar")])


def measure(define, batch, threads, epochs, epoch_size):
    """Samples/s and MB/s over `epochs` epochs (after building; the first batch included)."""
    pipe = stoker.pipeline_def(define, batch_size=batch, num_threads=threads, seed=1)()
    tb = time.perf_counter()
    pipe.build()
    build_s = time.perf_counter() - tb
    n = epochs * epoch_size
    iters = -(-n // batch)
    nbytes = 0
    t0 = time.perf_counter()
    for _ in range(iters):
        out = pipe.run()
        nbytes += sum(np.array(s).nbytes for s in out[0])
    dt = time.perf_counter() - t0
    del pipe
    return iters * batch / dt, nbytes / dt / 1e6, build_s


def server_ceiling(get, keys, threads):
    """MB/s of plain whole-object downloads of `keys` with `threads` Python threads: what
    the server gives a simple client (GIL included), for scale."""
    from concurrent.futures import ThreadPoolExecutor
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        total = sum(ex.map(lambda k: len(get(k)), keys))
    return total / (time.perf_counter() - t0) / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--shard-size", type=int, default=50)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=1,
                    help="more than one: a data set smaller than the cache is then served "
                         "from memory after the first epoch")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cache-mb", type=int,
                    help="STK_REMOTE_CACHE_MB (default: unset, the reader's own sizing)")
    ap.add_argument("--json")
    a = ap.parse_args()
    import boto3
    from pathlib import Path
    tmp = Path(tempfile.mkdtemp(prefix="stk-bench-remote-"))
    procs = []
    try:
        shards = make_data(tmp, a.samples, a.shard_size)
        port = free_port()
        procs.append(subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                       "-p", str(port)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        wait_listening(port)
        http = subprocess.Popen([sys.executable, SERVERS, "http", str(tmp)],
                                stdout=subprocess.PIPE, text=True)
        procs.append(http)
        http_port = int(http.stdout.readline().split()[1])
        if a.cache_mb:
            os.environ["STK_REMOTE_CACHE_MB"] = str(a.cache_mb)
        os.environ["STK_REMOTE_STATS"] = "1"  # each reader's request count, on stderr
        os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                           "AWS_REGION": "us-east-1",
                           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"})
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        for dirpath, _d, files in os.walk(tmp):
            for f in files:
                p = os.path.join(dirpath, f)
                s3.upload_file(p, BUCKET, os.path.relpath(p, tmp))
        last = f"{shards - 1:06d}"
        roots = {"local": str(tmp), "s3 (moto)": f"s3://{BUCKET}",
                 "http (ranges)": f"http://127.0.0.1:{http_port}"}
        cases = []
        for where, base in roots.items():
            pat = f"{base}/wds/shard-{{000000..{last}}}.tar"
            idx = f"{base}/wds/shard-{{000000..{last}}}.idx"  # no scan: reads are the epoch's
            cases.append((f"tar shards, random access, {where}",
                          lambda pat=pat, idx=idx: fn.readers.webdataset(
                              paths=pat, index_paths=idx, ext=["jpg;png", "cls"],
                              random_shuffle=True, seed=3)))
            cases.append((f"tar shards, streaming, {where}",
                          lambda pat=pat, idx=idx: fn.readers.webdataset(
                              paths=pat, index_paths=idx, ext=["jpg;png", "cls"], streaming=True,
                              random_shuffle=True, initial_fill=128, seed=3)))
            if where != "http (ranges)":  # HTTP cannot be listed
                cases.append((f"ImageFolder (one GET per file), {where}",
                              lambda base=base: fn.readers.file(file_root=f"{base}/img",
                                                                random_shuffle=True)))
        import urllib.request
        keys = [f"wds/shard-{i:06d}.tar" for i in range(shards)]
        ceil_s3 = server_ceiling(
            lambda k: s3.get_object(Bucket=BUCKET, Key=k)["Body"].read(), keys, a.threads)
        ceil_http = server_ceiling(
            lambda k: urllib.request.urlopen(f"http://127.0.0.1:{http_port}/{k}").read(), keys,
            a.threads)
        print(f"server ceiling (whole shards, {a.threads} Python threads): moto "
              f"{ceil_s3:.0f} MB/s, http {ceil_http:.0f} MB/s")
        results = [{"case": "ceiling moto", "mb_per_s": ceil_s3},
                   {"case": "ceiling http", "mb_per_s": ceil_http}]
        print(f"{a.samples} samples in {shards} shards, batch {a.batch_size}, "
              f"{a.threads} threads, {a.epochs} epochs, best of {a.repeat}")
        print(f"{'case':50s} {'samples/s':>10s} {'MB/s':>8s} {'build s':>8s}")
        for name, define in cases:
            best = max(measure(define, a.batch_size, a.threads, a.epochs, a.samples)
                       for _ in range(a.repeat))
            results.append({"case": name, "samples_per_s": best[0], "mb_per_s": best[1],
                            "build_s": best[2]})
            print(f"{name:50s} {best[0]:10.0f} {best[1]:8.1f} {best[2]:8.2f}", flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        for p in procs:
            p.terminate()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
