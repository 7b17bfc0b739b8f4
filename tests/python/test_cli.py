"""The stoker CLI as users run it: bench, preview, info, ops, and bad input."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))
STOKER = os.path.join(BUILD, "stoker")


def run(*args, check=True):
    r = subprocess.run([STOKER, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"stoker {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds") / "train"
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_dataset.py"), str(d), "--count", "28",
                    "--seed", "5"], check=True, capture_output=True)
    return d


def bad_copy(dataset, tmp_path, name, data):
    d = tmp_path / "bad"
    shutil.copytree(dataset, d)
    with open(d / "rocket" / name, "wb") as f:
        f.write(data)
    return d


def test_bench_json(dataset):
    r = run("bench", "--data", dataset, "--pipeline", "basic", "--threads", 2, "--batch-size", 8, "--iters", 5,
            "--json")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    for key in ("images_per_s", "images", "seconds", "skipped", "op_share"):
        assert key in res
    # 28 files, batch 8: an epoch is batches of 8, 8, 8 and 4 (a batch never crosses it)
    assert res["images"] == 8 + 8 + 8 + 4 + 8 and res["skipped"] == 0 and res["images_per_s"] > 0
    shares = res["op_share"]
    assert "Reader" in shares and abs(sum(shares.values()) - 1.0) < 0.01
    assert any(k.startswith("decoders.image_random_crop") for k in shares)


def test_bench_epochs_counts_batches(dataset):
    r = run("bench", "--data", dataset, "--pipeline", "basic-full", "--batch-size", 8, "--epochs", 2, "--json")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["images"] == 2 * 28 and res["batches"] == 2 * 4  # 28 files: 8, 8, 8, 4 per epoch


def test_bench_cached_preset_reports_each_epoch(dataset, tmp_path):
    r = run("bench", "--data", dataset, "--pipeline", "cached", "--batch-size", 8, "--epochs", 3, "--json")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert [e["images"] for e in res["epochs"]] == [28, 28, 28]
    assert all(e["seconds"] > 0 and e["images_per_s"] > 0 for e in res["epochs"])
    # epoch 1 fills the cache, epochs 2 and 3 hit it (a prefetched batch may run ahead)
    assert res["cache"]["misses"] == 28 and res["cache"]["hits"] >= 2 * 28
    assert res["cache"]["entries"] == 28 and res["cache"]["bytes"] > 28 * 256 * 256 * 3
    # --cache-bytes 0: the baseline, nothing kept; --cache-dir: files with a manifest
    res = json.loads(run("bench", "--data", dataset, "--pipeline", "cached", "--batch-size", 8, "--epochs", 2,
                         "--cache-bytes", 0, "--json").stdout.strip().splitlines()[-1])
    assert res["cache"]["hits"] == 0 and res["cache"]["entries"] == 0
    d = tmp_path / "cache"
    run("bench", "--data", dataset, "--pipeline", "cached", "--batch-size", 8, "--epochs", 1, "--cache-dir", d)
    assert (d / "manifest.txt").exists() and len(list(d.glob("*.stkc"))) == 28
    text = run("bench", "--data", dataset, "--pipeline", "cached", "--batch-size", 8, "--epochs", 1,
               "--cache-dir", d).stdout
    assert "epoch 1: 28 images" in text
    # all hits (a batch of the next epoch made ahead may add a few)
    hits = re.search(r"sample cache: (\d+) hits, 0 misses", text)
    assert hits and int(hits.group(1)) >= 28


def test_bench_warmup_batches_are_not_timed(dataset):
    r = run("bench", "--data", dataset, "--pipeline", "basic", "--batch-size", 8, "--iters", 6, "--warmup", 4, "--json")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["images"] == 8 + 8 + 8 + 4 + 8 + 8 and res["warmup_batches"] == 4 and res["timed_images"] == 16
    assert res["timed_seconds"] < res["seconds"]
    assert res["images_per_s"] == pytest.approx(16 / res["timed_seconds"], rel=1e-2)
    assert res["ms_per_batch"] == pytest.approx(1e3 * res["timed_seconds"] / 2, rel=1e-2)
    # by default the first batch is warm-up; a single batch is timed whole
    res = json.loads(run("bench", "--data", dataset, "--batch-size", 8, "--iters", 3, "--json").stdout.splitlines()[-1])
    assert res["warmup_batches"] == 1 and res["timed_images"] == 16
    res = json.loads(run("bench", "--data", dataset, "--batch-size", 8, "--iters", 1, "--json").stdout.splitlines()[-1])
    assert res["warmup_batches"] == 0 and res["timed_images"] == 8
    r = run("bench", "--data", dataset, "--batch-size", 8, "--iters", 3, "--warmup", 3, check=False)
    assert r.returncode == 2 and "--warmup 3 leaves no batch to time" in r.stderr


def test_preview_is_deterministic(dataset, tmp_path):
    a, b, c = tmp_path / "a.png", tmp_path / "b.png", tmp_path / "c.png"
    run("preview", "--data", dataset, "--count", 9, "--out", a, "--seed", 3, "--threads", 1, "--prefetch", 1)
    run("preview", "--data", dataset, "--count", 9, "--out", b, "--seed", 3, "--threads", 2, "--prefetch", 3)
    run("preview", "--data", dataset, "--count", 9, "--out", c, "--seed", 4, "--threads", 2)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    img = Image.open(a)
    assert img.size == (3 * 228 + 4, 3 * 228 + 4)  # 3x3 tiles of 224 with 4 px gaps
    assert np.asarray(img).std() > 10  # real picture content, not a blank grid


def test_info(dataset):
    r = run("info", dataset)
    assert "28 file(s) in 7 class folder(s)" in r.stdout
    f = next((dataset / "rocket").iterdir())
    w, h = Image.open(f).size
    assert f"JPEG, {w} x {h}" in run("info", f).stdout


def test_ops_lists_registry():
    out = run("ops").stdout
    for name in ("readers.file", "decoders.image", "resize", "crop_mirror_normalize", "random.coin_flip"):
        assert name in out
    assert "random_area" in run("ops", "random_resized_crop").stdout


@pytest.mark.parametrize("name,data", [
    ("truncated.jpg", None), ("empty.jpg", b""), ("garbage.jpg", b"GIF89a not really" * 10)])
def test_bad_file_stops_run_naming_it_unless_skipped(dataset, tmp_path, name, data):
    if data is None:
        good = next((dataset / "coffee").iterdir()).read_bytes()
        data = good[: len(good) // 2]
    d = bad_copy(dataset, tmp_path, name, data)
    r = run("bench", "--data", d, "--batch-size", 8, "--epochs", 1, check=False)
    assert r.returncode != 0 and name in r.stderr
    r = run("bench", "--data", d, "--batch-size", 8, "--epochs", 2, "--on-error", "skip", "--json")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    # every good file once per epoch, the bad one skipped once per epoch and named
    assert res["skipped"] == 2 and res["images"] == 2 * 28
    assert len(res["skipped_samples"]) == 2 and all(name in m for m in res["skipped_samples"])


def test_png_with_bad_crc(dataset, tmp_path):
    png = bytearray(open(os.path.join(ROOT, "data", "photos", "coffee.png"), "rb").read())
    png[60] ^= 0xFF  # inside the first IDAT chunk
    d = bad_copy(dataset, tmp_path, "badcrc.png", bytes(png))
    r = run("bench", "--data", d, "--pipeline", "basic-full", "--batch-size", 8, "--epochs", 1, check=False)
    assert r.returncode != 0 and "badcrc.png" in r.stderr


def test_missing_folder_and_unknown_arguments(dataset, tmp_path):
    r = run("bench", "--data", tmp_path / "nope", check=False)
    assert r.returncode != 0 and "nope" in r.stderr
    r = run("bench", "--data", dataset, "--frobnicate", 3, check=False)
    assert r.returncode == 2 and "--frobnicate" in r.stderr
    pipe = tmp_path / "p.txt"
    pipe.write_text('j, l = readers.file(file_root="${DATA}")\n'
                    'i = decoders.image(j, output_typ="RGB")\nreturn i\n')
    r = run("bench", "--data", dataset, "--pipeline", pipe, check=False)
    assert r.returncode != 0 and "output_typ" in r.stderr and "line 2" in r.stderr
    r = run("bench", "--data", dataset, "--pipeline", "no-such-preset", check=False)
    assert r.returncode != 0 and "no-such-preset" in r.stderr


def test_pipeline_file_runs(dataset, tmp_path):
    pipe = tmp_path / "p.txt"
    pipe.write_text('jpegs, labels = readers.file(file_root="${DATA}", name="Reader")\n'
                    'images = decoders.image(jpegs, output_type="GRAY")\n'
                    'small = resize(images, resize_shorter=64)\n'
                    'return small, labels\n')
    out = tmp_path / "g.png"
    run("preview", "--data", dataset, "--pipeline", pipe, "--count", 4, "--out", out)
    assert Image.open(out).size[0] > 64
