"""examples/ddp_train.py under torchrun with two CPU ranks (gloo): the sharding contract
that DDP training relies on.

The data set gives every sample a class of its own, so a label names its file: each rank
records the labels of its batches (--record) and the test checks that in every epoch the
two ranks' samples are disjoint and together are the whole data set, once each; that both
ranks take the same number of steps (else DDP's gradient all-reduce would wait forever);
that FILL pads a short shard only with repeats of its own last sample; and that each rank
moves to the next shard every epoch (stick_to_shard=False). 33 samples in batches of 8
make the shards 16 and 17 samples long: the 16-sample shard's third batch is all padding,
the case where an unpadded reader would give the ranks 2 and 3 steps.

torch is large (~3 GB from PyPI with its CUDA libraries) and not a stoker dependency: these
tests skip without it (bench/requirements-torch.txt installs it).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (bench/requirements-torch.txt; ~3 GB, not in CI)")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("this torch has no gloo backend for CPU process groups", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "ddp_train.py")
N, BATCH, WORLD = 33, 8, 2
TIMEOUT = 300  # seconds: a hang (ranks with different step counts) fails instead of blocking


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """N JPEGs, each in a class directory of its own: label i is sample i."""
    from PIL import Image
    root = tmp_path_factory.mktemp("ddp_data")
    rng = np.random.default_rng(5)
    for i in range(N):
        d = root / f"c{i:03d}"
        d.mkdir()
        img = rng.integers(0, 256, size=(24 + i % 5, 32, 3), dtype=np.uint8)
        Image.fromarray(img).save(d / "x.jpg", quality=90)
    return str(root)


def launch(cmd, tmp_path):
    """Runs cmd (which starts the ranks) to its end; its stdout. Fails on a hang."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    # output to files, not pipes: a rank left behind cannot keep the test waiting on them
    with open(tmp_path / "out.txt", "w+") as fo, open(tmp_path / "err.txt", "w+") as fe:
        proc = subprocess.Popen(cmd, stdout=fo, stderr=fe, env=env)
        hung = False
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            hung = True
            # torchrun and Lightning pass SIGTERM on to their ranks
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    if hung:
        pytest.fail(f"{cmd[:4]} did not finish in {TIMEOUT} s (a rank hung?):\n{out}\n"
                    f"{err[-4000:]}")
    assert proc.returncode == 0, f"{cmd[:4]} failed:\n{out}\n{err[-4000:]}"
    return out


def read_records(prefix):
    records = []
    for r in range(WORLD):
        with open(f"{prefix}.rank{r}.json") as f:
            records.append(json.load(f))
    return records


def torchrun(tmp_path, data, *extra):
    prefix = str(tmp_path / "rec")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc_per_node={WORLD}", EXAMPLE, "--data", data, "--device", "cpu",
           "--batch-size", str(BATCH), "--size", "32", "--threads", "1", "--warmup", "1",
           "--dist-timeout", "60", "--record", prefix, *extra]
    out = launch(cmd, tmp_path)
    records = read_records(prefix)
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    return records, lines


def shard_bounds(shard):
    """Shard k of WORLD takes positions floor(k N / S) .. floor((k+1) N / S) - 1."""
    return shard * N // WORLD, (shard + 1) * N // WORLD


def check_epochs(records, epochs):
    for rec in records:
        assert rec["world"] == WORLD and len(rec["epochs"]) == epochs
    # every rank the same number of batches per epoch, which len() also says
    assert records[0]["batches_per_epoch"] == records[1]["batches_per_epoch"] == 3
    for e in range(epochs):
        assert [len(rec["epochs"][e]) for rec in records] == [3, 3], f"epoch {e}"


def test_ranks_partition_every_epoch_partial(tmp_path, dataset):
    records, lines = torchrun(tmp_path, dataset, "--pipeline-only", "--last-batch", "partial",
                              "--epochs", "3")
    check_epochs(records, 3)
    for e in range(3):
        per_rank = [sum(rec["epochs"][e], []) for rec in records]
        seen = sorted(per_rank[0] + per_rank[1])
        assert seen == list(range(N)), f"epoch {e}: the ranks together are not every sample once"
        for r in range(WORLD):
            lo, hi = shard_bounds((r + e) % WORLD)  # the shard moves every epoch
            assert len(per_rank[r]) == hi - lo, f"epoch {e} rank {r}"
    # an epoch reshuffles: epoch 0's order is not epoch 1's
    assert sum(records[0]["epochs"][0], []) != sum(records[1]["epochs"][1], [])
    epochs = [x for x in lines if x.get("event") == "epoch"]
    assert [x["images"] for x in epochs] == [N] * 3
    assert all(x["steps_per_rank"] == [3, 3] for x in epochs)


def check_fill_epoch(batches_per_rank, e):
    """FILL: full batches; each rank's shard once, then repeats of its last sample."""
    real = []
    for r, batches in enumerate(batches_per_rank):
        assert all(len(b) == BATCH for b in batches), f"epoch {e} rank {r}: FILL batches"
        flat = sum(batches, [])
        lo, hi = shard_bounds((r + e) % WORLD)
        own = flat[:hi - lo]
        assert len(set(own)) == len(own)
        # the padding repeats the shard's last sample, never another shard's
        assert flat[hi - lo:] == [own[-1]] * (len(flat) - (hi - lo))
        real += own
    assert sorted(real) == list(range(N)), f"epoch {e}"


def test_ddp_training_fill_pads_with_own_samples(tmp_path, dataset):
    records, lines = torchrun(tmp_path, dataset, "--arch", "tiny", "--epochs", "2")
    check_epochs(records, 2)
    for e in range(2):
        check_fill_epoch([rec["epochs"][e] for rec in records], e)
    epochs = [x for x in lines if x.get("event") == "epoch"]
    assert len(epochs) == 2 and all(x["steps_per_rank"] == [3, 3] for x in epochs)
    assert all(np.isfinite(x["loss"]) for x in epochs)
    summary = [x for x in lines if x.get("event") == "summary"]
    assert len(summary) == 1 and summary[0]["images_per_s_total"] > 0
    assert len(summary[0]["images_per_s_per_rank"]) == WORLD


def test_synthetic_reuses_one_batch_for_every_step(tmp_path, dataset):
    """--synthetic (bench_ddp.sh's control): the model trains on one batch of the pipeline's
    over and over, the same number of steps per epoch as with the pipeline."""
    records, lines = torchrun(tmp_path, dataset, "--arch", "tiny", "--epochs", "2",
                              "--synthetic")
    for rec in records:
        batches = sum(rec["epochs"], [])
        assert len(batches) == 6 and all(b == batches[0] for b in batches)
        assert len(batches[0]) == BATCH
    epochs = [x for x in lines if x.get("event") == "epoch"]
    assert [x["steps_per_rank"] for x in epochs] == [[3, 3], [3, 3]]
    assert all(np.isfinite(x["loss"]) for x in epochs)


def test_steps_cut_the_run_short(tmp_path, dataset):
    records, lines = torchrun(tmp_path, dataset, "--pipeline-only", "--epochs", "5",
                              "--steps", "4")
    # 3 steps in epoch 0, then 1 in epoch 1, on both ranks
    assert [[len(e) for e in rec["epochs"]] for rec in records] == [[3, 1], [3, 1]]
    assert [x["steps_per_rank"] for x in lines if x.get("event") == "epoch"] == [[3, 3], [1, 1]]


def test_training_refuses_partial_batches():
    res = subprocess.run([sys.executable, EXAMPLE, "--data", ROOT, "--device", "cpu",
                          "--last-batch", "partial"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "--last-batch partial is" in res.stderr


def import_example():
    sys.path.insert(0, os.path.dirname(EXAMPLE))
    try:
        import ddp_train
    finally:
        sys.path.remove(os.path.dirname(EXAMPLE))
    return ddp_train


@pytest.mark.parametrize("cores, local_world, want", [(16, "2", 8), (16, "3", 5), (2, "4", 1),
                                                       (32, None, 32)])
def test_threads_are_the_ranks_share_of_the_cores(monkeypatch, cores, local_world, want):
    ddp_train = import_example()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    if local_world is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local_world)
    assert ddp_train.default_threads() == want


def test_gpu_pipeline_builds(fake_gpu, dataset):
    """The --device gpu pipeline (mixed decoding, GPU resize and normalisation) is a valid
    graph: it builds against the fake GPU backend (which has no resampling kernels, so it
    cannot run it; the two-GPU run is bench/bench_ddp.sh's)."""
    ddp_train = import_example()
    pipe = ddp_train.train_pipeline(dataset, 64, 1, 2, True, True, batch_size=4, num_threads=1,
                                    device_id=0, seed=1)
    pipe.build()
    meta = pipe.reader_meta("Reader")
    assert (meta["shard_id"], meta["number_of_shards"], meta["pad_last_batch"]) == (1, 2, True)


def test_lightning_ddp_strategy_partitions_every_epoch(tmp_path, dataset):
    """examples/ddp_lightning.py: Lightning's own DDP launcher (strategy "ddp", two CPU
    processes), two epochs of 3 steps per rank, each epoch the shards' FILL contract. (With a
    __len__ on the batches, Lightning would stop each epoch at len() without letting the
    iterator end it, and the second epoch would have no step: this catches that.)"""
    pytest.importorskip("lightning", reason="lightning is not installed (not in CI)")
    prefix = str(tmp_path / "rec")
    launch([sys.executable, os.path.join(ROOT, "examples", "ddp_lightning.py"), "--data", dataset,
            "--accelerator", "cpu", "--devices", str(WORLD), "--arch", "tiny", "--batch-size",
            str(BATCH), "--size", "32", "--threads", "1", "--epochs", "2", "--record", prefix],
           tmp_path)
    records = read_records(prefix)
    assert [len(rec["steps"]) for rec in records] == [6, 6]
    for e in range(2):
        check_fill_epoch([rec["steps"][3 * e:3 * e + 3] for rec in records], e)
