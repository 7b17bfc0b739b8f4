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
