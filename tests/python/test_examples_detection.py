"""examples/ssd_detection.py and examples/segmentation.py run on the CPU (on a COCO-style
set they write from the bundled photographs) and pass their own checks: encoded boxes of
the anchors' shape, finite; masks holding only their image's labels."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("script", ["ssd_detection.py", "segmentation.py"])
def test_example_runs(script):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), "--iters", "2",
                        "--batch-size", "4"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("batch ") == 2
