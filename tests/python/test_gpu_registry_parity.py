"""Every operator with a GPU backend is checked against its CPU backend, from the check
its schema carries (`gpu_check`, see registry_parity.py).

- On every machine (CI included): each GPU-capable operator has a check, the check
  parses, its two-device pipeline parses and validates (arguments, devices), and its CPU
  copy builds and runs.
- On a GPU machine: both copies run on the same batches and agree sample by sample within
  the check's tolerance.

An operator marked GPU-capable without a check fails here: that is how a new GPU operator
gets its parity test.
"""
import pytest

import stoker
from stoker import _schema

import registry_parity
from gpu_parity import assert_close, gpu_available, to_numpy_samples

REGISTRY = _schema.registry()
GPU_OPS = sorted(n for n, s in REGISTRY.items() if "gpu" in s.devices or "mixed" in s.devices)
# Operators whose GPU form is checked elsewhere, with the reason (kept short on purpose).
EXEMPT = {
    "copy": "the transfer itself: every check moves IN with it",
    "select": "merges conditional branches; tests/python/test_gpu_conditionals.py",
    "external_source": "fed by the program, no input to compare; its GPU form is the host feed "
                       "uploaded: tests/python/test_random_gpu.py",
    "readers.numpy": "a reader, no input to compare; its GPU form is the host read uploaded: "
                     "tests/python/test_random_gpu.py",
    "python_function": "the text form cannot name a Python callable: "
                       "tests/python/test_python_function_gpu_fake.py",
    "dl_tensor_python_function": "the text form cannot name a Python callable: "
                                 "tests/python/test_python_function_gpu_fake.py",
    # the harness feeds photos, not videos: NVDEC against the CPU in test_video_gpu.py
    "decoders.video": "video input: tests/python/test_video_gpu.py",
    "experimental.decoders.video": "video input: tests/python/test_video_gpu.py",
    "readers.video": "a reader of video files: tests/python/test_video_gpu.py",
    "experimental.readers.video": "a reader of video files: tests/python/test_video_gpu.py",
    "readers.video_resize": "a reader of video files: tests/python/test_video_gpu.py",
}


@pytest.fixture(autouse=True)
def _files_in_a_scratch_directory(tmp_path, monkeypatch):
    """Checks of operators that write files (dump_image) write them under tmp_path."""
    monkeypatch.chdir(tmp_path)


def test_gpu_operators_exist():
    assert len(GPU_OPS) >= 40  # the registry really is enumerated


@pytest.mark.parametrize("op", GPU_OPS)
def test_gpu_operator_has_a_parity_check(op):
    if op in EXEMPT:
        assert REGISTRY[op].gpu_check is None, f"{op} is exempt ({EXEMPT[op]}) but has a check"
        return
    text = REGISTRY[op].gpu_check
    assert text, (f"operator {op!r} has a GPU backend but no gpu_check in its schema "
                  f"(see tests/python/registry_parity.py for the format)")
    check = registry_parity.parse(op, text)
    called = {registry_parity._op_of(ln) for ln in check.per_device}
    assert op in called, f"{op}'s gpu_check never calls {op} on the two devices (calls {sorted(called)})"


def _checked_ops():
    return [op for op in GPU_OPS if op not in EXEMPT and REGISTRY[op].gpu_check]


@pytest.mark.parametrize("op", _checked_ops())
def test_parity_check_cpu_copy_runs(op):
    """The CPU copy of the check runs (so a check's arguments are right before any GPU
    sees it), and the two-device text is valid for the parser."""
    check = registry_parity.parse(op, REGISTRY[op].gpu_check)
    both = registry_parity.pipeline_text(check, REGISTRY)
    stoker._stoker.Pipeline.from_text(both).close()  # parses and checks every argument
    text = registry_parity.pipeline_text(check, REGISTRY, devices=("cpu",))
    p = stoker.Pipeline.deserialize(text)
    outs = p.run()
    assert len(outs) == len(check.returns)
    for o in outs:
        samples = to_numpy_samples(o)
        assert len(samples) == len(registry_parity.PHOTOS)
    p.close()  # batches run ahead end here, inside the scratch directory


@pytest.mark.skipif("not __import__('gpu_parity').gpu_available()",
                    reason="needs a CUDA device (runs on the GPU machine)")
@pytest.mark.parametrize("op", _checked_ops())
def test_parity(op):
    check = registry_parity.parse(op, REGISTRY[op].gpu_check)
    p = stoker.Pipeline.deserialize(registry_parity.pipeline_text(check, REGISTRY))
    k = len(check.returns)
    for it in range(check.iterations):
        outs = p.run()
        for o in range(k):
            assert_close(to_numpy_samples(outs[o]), to_numpy_samples(outs[k + o]), atol=check.atol,
                         max_mismatch_fraction=check.mismatch,
                         what=f"{op} (batch {it}, output {check.returns[o]})")
