"""stoker.plugin.jax (issue 21 item 7): data_iterator and sharding over devices, as DALI's
JAX plugin. Multi-device cases run on jax's CPU backend split into 4 devices (XLA_FLAGS,
in a subprocess: the flag must come before jax is imported). Skipped without jax."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stoker  # noqa: E402
from stoker import fn  # noqa: E402
from stoker.errors import InvalidArgumentError  # noqa: E402
from stoker.plugin.jax import Iterator, data_iterator  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_data_iterator_with_one_pipeline():
    @data_iterator(output_map=["x", "y"])
    def pipe():
        x = fn.external_source(source=lambda info: np.full((2,), info.idx_in_epoch, np.int32), batch=False)
        return x, fn.cast(x, dtype="float32")

    it = pipe(batch_size=4, seed=1)
    for step in range(2):
        b = next(it)
        assert isinstance(b["x"], jax.Array) and b["x"].shape == (4, 2) and b["y"].dtype == np.float32
        assert np.asarray(b["x"])[:, 0].tolist() == [4 * step + i for i in range(4)]


def test_argument_errors():
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("b",))
    sh = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("b"))
    with pytest.raises(InvalidArgumentError, match="sharding or devices, not both"):
        data_iterator(output_map=["x"], sharding=sh, devices=jax.devices())
    @stoker.pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        return fn.random.uniform()
    with pytest.raises(InvalidArgumentError, match="sharding must be a jax.sharding.Sharding"):
        Iterator(pipe(), ["x"], sharding="batch")
    with pytest.raises(InvalidArgumentError, match="2 devices for 1 pipelines"):
        Iterator(pipe(), ["x"], devices=jax.devices() * 2)


SCRIPT = textwrap.dedent("""
    import os, sys
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    sys.path.insert(0, {python!r})
    import jax, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from stoker import fn
    from stoker.plugin.jax import data_iterator, LastBatchPolicy
    assert len(jax.devices()) == 4

    def sample(shard_id, num_shards):
        return fn.external_source(
            source=lambda info: np.array([shard_id, num_shards, info.idx_in_epoch], np.int32),
            batch=False)

    # sharding: one pipeline per device, one global array [4 * 2, 3]
    sh = NamedSharding(Mesh(np.array(jax.devices()), ("batch",)), PartitionSpec("batch"))
    it = data_iterator(sample, output_map=["x"], sharding=sh)(batch_size=8)
    for step in range(2):
        x = next(it)["x"]
        assert x.shape == (8, 3) and x.sharding == sh, x.sharding
        shards = sorted((s.device.id, np.asarray(s.data).tolist()) for s in x.addressable_shards)
        assert shards == [(d, [[d, 4, 2 * step], [d, 4, 2 * step + 1]]) for d in range(4)], shards
    assert float(jax.jit(lambda a: a.sum())(x)) == float(np.asarray(x).sum())

    # devices: pmap-compatible [devices, batch, ...]
    it = data_iterator(sample, output_map=["x"], devices=jax.devices()[:2])(batch_size=4)
    x = next(it)["x"]
    assert x.shape == (2, 2, 3) and np.asarray(x)[:, :, 0].tolist() == [[0, 0], [1, 1]]
    assert np.asarray(jax.pmap(lambda a: a[:, 2].sum())(x)).tolist() == [1, 1]

    # a function that takes no shard arguments still gets one pipeline per device
    def plain():
        return fn.external_source(source=lambda info: np.array([info.idx_in_epoch], np.int64), batch=False)
    it = data_iterator(plain, output_map=["x"], sharding=sh)(batch_size=4)
    assert next(it)["x"].shape == (4, 1)

    # the global batch must divide among the devices
    try:
        data_iterator(sample, output_map=["x"], sharding=sh)(batch_size=6)
    except Exception as e:
        assert "does not divide among 4 devices" in str(e), e
    else:
        raise AssertionError("no error for batch_size=6")
    print("OK")
""")


def test_sharding_over_devices():
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(python=os.path.join(ROOT, "python"))],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out.stdout + out.stderr
