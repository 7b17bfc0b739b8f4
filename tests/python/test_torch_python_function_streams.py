"""TorchPythonFunction on device "gpu" without torch or a GPU: a stand-in torch module
records on which stream each tensor operation is queued. Everything the wrapper does to
the function's results (the contiguous copies of non-contiguous results) must be queued
on the pipeline's stream, after the function's own work there: torch's default stream
is not ordered with stoker's (non-blocking) stream, so a copy queued there reads the
result before the kernels computing it have run. The real thing on a GPU:
test_gpu_python_function.py::test_torch_non_contiguous_result_of_queued_work."""
import importlib
import sys
import types
from contextlib import contextmanager

import pytest

from stoker._pyfunc import _DeviceCall

PIPELINE_STREAM = 0x5000


class _Stream:
    def __init__(self, ptr):
        self.ptr = ptr


def _fake_torch():
    torch = types.ModuleType("torch")
    current = [_Stream(0)]  # torch's default stream
    log = []

    class Tensor:
        def __init__(self, contiguous=True):
            self.is_contiguous = contiguous

        def work(self):  # a kernel queued on the current stream
            log.append(("work", current[0].ptr))
            return Tensor()

        def t(self):  # a view: no kernel
            return Tensor(contiguous=False)

        def contiguous(self):
            if not self.is_contiguous:
                log.append(("contiguous", current[0].ptr))
            return Tensor()

    @contextmanager
    def stream(s):
        previous, current[0] = current[0], s
        try:
            yield s
        finally:
            current[0] = previous

    torch.from_dlpack = lambda capsule: Tensor()
    torch.cuda = types.SimpleNamespace(ExternalStream=_Stream, stream=stream)
    torch.log = log
    return torch


@pytest.fixture
def plugin(monkeypatch):
    torch = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.delitem(sys.modules, "stoker.plugin.torch", raising=False)
    module = importlib.import_module("stoker.plugin.torch")
    yield module, torch.log
    sys.modules.pop("stoker.plugin.torch", None)


@pytest.mark.parametrize("batch_processing", [False, True])
def test_results_are_made_contiguous_on_the_pipeline_stream(plugin, batch_processing):
    module, log = plugin

    def function(x):
        if batch_processing:
            return [t.work().t() for t in x]
        return x.work().t()  # e.g. (x.float() / 255).permute(2, 0, 1)

    call = module._torch_call(function, 1, batch_processing, "gpu")
    with _DeviceCall(PIPELINE_STREAM):
        call([object(), object()] if batch_processing else object())
    assert [op for op, _ in log].count("contiguous") == (2 if batch_processing else 1)
    assert all(ptr == PIPELINE_STREAM for _, ptr in log), log


def test_several_outputs_too(plugin):
    module, log = plugin
    call = module._torch_call(lambda x: (x.work().t(), x.work().t()), 2, False, "gpu")
    with _DeviceCall(PIPELINE_STREAM):
        call(object())
    assert len(log) == 4 and all(ptr == PIPELINE_STREAM for _, ptr in log), log


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_side_effect_function_without_outputs(plugin, device):
    # num_outputs=0: the function returns None (DALI accepts it), the wrapper passes it on
    module, log = plugin
    seen = []
    call = module._torch_call(lambda x: seen.append(x.work()), 0, False, device)
    with _DeviceCall(PIPELINE_STREAM):
        assert call(object()) is None
    assert len(seen) == 1
