"""Shared fixtures. The package is imported from the checkout's python/ directory
(where `make` builds the extension) unless stoker is installed."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import stoker  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "python"))


FAKE_GPU = os.path.join(os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build")), "libstk_fake_gpu.so")


@pytest.fixture
def fake_gpu(monkeypatch):
    """GPU pipelines run against tests/fake_gpu (a CPU stand-in for libstoker_cuda.so)."""
    if not os.path.exists(FAKE_GPU):
        pytest.skip("the fake GPU backend is not built")
    monkeypatch.setenv("STK_CUDA_LIBRARY", FAKE_GPU)


@pytest.fixture
def seven_files(tmp_path):
    """Seven one-byte files whose byte is 1..7, and their labels 1..7."""
    files = []
    for i in range(1, 8):
        path = tmp_path / f"sample{i}.bin"
        path.write_bytes(bytes([i]))
        files.append(str(path))
    return files, list(range(1, 8))


@pytest.fixture
def photos():
    d = os.path.join(ROOT, "data", "photos")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith((".png", ".jpg")))


def pytest_collection_modifyitems(config, items):
    """STK_TEST_SHARD=i/n keeps every n-th collected test starting at the i-th (0-based),
    so a slow run (the GPU tests under compute-sanitizer) can be split over processes."""
    shard = os.environ.get("STK_TEST_SHARD")
    if not shard:
        return
    i, n = (int(x) for x in shard.split("/"))
    if not 0 <= i < n:
        raise pytest.UsageError(f"STK_TEST_SHARD={shard}: want i/n with 0 <= i < n")
    keep = [t for k, t in enumerate(items) if k % n == i]
    config.hook.pytest_deselected(items=[t for k, t in enumerate(items) if k % n != i])
    items[:] = keep
