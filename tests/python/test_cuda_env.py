"""The package's CUDA_DEVICE_MAX_CONNECTIONS default (stoker/_cuda_env.py): CUDA reads it
once, when the process's context is created, so importing stoker must set it (32 hardware
queues; with CUDA's 8, decoding streams queued behind training and NCCL kernels, see
docs/gpu.md "Hardware queues") and must keep a value the user chose."""

import os
import subprocess
import sys

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")


def value_after_import(env_value):
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    if env_value is not None:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = env_value
    env["PYTHONPATH"] = os.path.abspath(PYTHON_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    code = ("import os, stoker; "
            "print(os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS', '<unset>'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_import_sets_32_queues_when_unset():
    assert value_after_import(None) == "32"


def test_import_keeps_the_users_value():
    assert value_after_import("1") == "1"
    assert value_after_import("16") == "16"


def test_the_child_processes_inherit_it():
    # torchrun / DataLoader workers started after the import see the same value
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    env["PYTHONPATH"] = os.path.abspath(PYTHON_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    code = ("import subprocess, sys, stoker; "
            "print(subprocess.run([sys.executable, '-c', "
            "'import os; print(os.environ[\"CUDA_DEVICE_MAX_CONNECTIONS\"])'], "
            "capture_output=True, text=True).stdout.strip())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "32"
