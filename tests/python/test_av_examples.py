"""The audio and video example pipelines (examples/speech_mel.py,
examples/video_classification.py) run end to end on the synthetic data sets they make."""

import os
import shutil
import subprocess
import sys

import pytest

from stoker import _schema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_example(name):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.skipif("readers.nemo_asr" not in _schema.registry(), reason="no audio readers")
def test_speech_example():
    out = run_example("speech_mel.py")
    assert "log-mel (64, " in out and "(ft)" in out and "utterance" in out


@pytest.mark.skipif("readers.video" not in _schema.registry() or not shutil.which("ffmpeg"),
                    reason="no video reader or no ffmpeg")
def test_video_example():
    out = run_example("video_classification.py")
    assert "clips (8, 112, 112, 3) (FHWC)" in out
