"""PyTorch iterators: batches as torch tensors shared with stoker (DLPack, no copy).

``GenericIterator`` and ``ClassificationIterator`` take the arguments of DALI's
``DALIGenericIterator`` / ``DALIClassificationIterator``, with the same epoch and
last-batch semantics (see :mod:`stoker.plugin.base`). Each tensor keeps its batch's
memory alive; the memory returns to the pipeline's pool when the tensor is freed.

For distributed training, :func:`distributed_info` gives the shard and device of this
process from torch.distributed, and the iterator warns when the reader is not sharded
the way the process group is.
"""

import os
import warnings

import torch

from .base import BaseIterator, LastBatchPolicy  # noqa: F401

__all__ = ["GenericIterator", "ClassificationIterator", "LastBatchPolicy", "distributed_info",
           "to_torch", "TorchPythonFunction", "torch_python_function", "DALIGenericIterator",
           "DALIClassificationIterator"]


def to_torch(tensor_list):
    """One TensorList as a torch tensor of shape [N, ...] on its device, without a copy."""
    if not tensor_list.is_dense():
        raise ValueError(
            "stoker.plugin.torch: the batch is ragged (samples differ in shape); resize or "
            "pad in the pipeline so every sample has one shape")
    return torch.from_dlpack(tensor_list)


def distributed_info():
    """{"shard_id", "num_shards", "device_id"} for this process.

    From torch.distributed's rank and world size when it is initialised (else shard 0 of
    1), and the device from LOCAL_RANK (torchrun sets it), or rank modulo the number of
    visible GPUs; None when CUDA is unavailable.
    """
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    device = None
    if torch.cuda.is_available():
        local = os.environ.get("LOCAL_RANK")
        device = int(local) if local is not None else rank % max(torch.cuda.device_count(), 1)
    return {"shard_id": rank, "num_shards": world, "device_id": device}


class GenericIterator(BaseIterator):
    """Yields [{name: torch.Tensor}] (one dict per pipeline / GPU).

    Args: as :class:`stoker.plugin.base.BaseIterator` (DALI's DALIGenericIterator).
    """

    def __init__(self, pipelines, output_map, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, dynamic_shape=False, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        super().__init__(pipelines, output_map, size=size, reader_name=reader_name,
                         auto_reset=auto_reset, fill_last_batch=fill_last_batch,
                         last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)
        if reader_name is not None:
            self._check_sharding()

    def _check_sharding(self):
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            return
        world = dist.get_world_size() * self._num_gpus
        if world > 1 and self._shards_num != world:
            warnings.warn(
                f"stoker: {world} processes/pipelines read with num_shards={self._shards_num}; "
                "pass **stoker.plugin.torch.distributed_info() values (shard_id, num_shards) "
                "to the reader so each process reads its own shard", stacklevel=3)

    def _convert(self, tensor_list, pipe):
        return to_torch(tensor_list)

    def _fill(self, tensor, last, k):
        return torch.cat([tensor, last.expand(k, *last.shape[1:])])


class ClassificationIterator(GenericIterator):
    """GenericIterator with output_map ["data", "label"] (DALIClassificationIterator)."""

    def __init__(self, pipelines, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, dynamic_shape=False, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        super().__init__(pipelines, ["data", "label"], size=size, reader_name=reader_name,
                         auto_reset=auto_reset, fill_last_batch=fill_last_batch,
                         dynamic_shape=dynamic_shape, last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)


# DALI's names, so `from stoker.plugin.torch import DALIClassificationIterator` ports.
DALIGenericIterator = GenericIterator
DALIClassificationIterator = ClassificationIterator


# ---- torch functions in pipelines (DALI's TorchPythonFunction) ----

def _torch_call(function, num_outputs, batch_processing, device):
    """Wraps a function of torch tensors as a dl_tensor_python_function one: capsules to
    tensors, results back as contiguous tensors. On the GPU it runs with the pipeline's
    stream as torch's current stream, so its kernels follow the inputs' producers."""
    from .. import current_dali_stream

    def to_out(result):
        if batch_processing:
            return [t.contiguous() for t in result]
        return result.contiguous()

    def call(*args):
        if batch_processing:
            tensors = [[torch.from_dlpack(c) for c in batch] for batch in args]
        else:
            tensors = [torch.from_dlpack(c) for c in args]
        if device == "gpu":
            # the contiguous copies too: on torch's default stream, which is not ordered
            # with the pipeline's, they would read results not computed yet
            stream = torch.cuda.ExternalStream(current_dali_stream())
            with torch.cuda.stream(stream):
                return outputs(function(*tensors))
        return outputs(function(*tensors))

    def outputs(result):
        if num_outputs == 0 and result is None:  # a function run for its side effects
            return None
        if num_outputs == 1:
            return to_out(result)
        return tuple(to_out(r) for r in result)
    return call


def torch_python_function(*inputs, function, num_outputs=1, device="cpu", batch_processing=False,
                          **kwargs):
    """``fn.dl_tensor_python_function`` for a function of torch tensors: it gets one tensor
    per input (a list per input with ``batch_processing=True``; CUDA tensors on device
    "gpu", where torch's current stream is the pipeline's) and returns tensors."""
    from .. import fn
    wrapped = _torch_call(function, num_outputs, batch_processing, device)
    return fn.dl_tensor_python_function(*inputs, function=wrapped, num_outputs=num_outputs,
                                        device=device, batch_processing=batch_processing,
                                        **kwargs)


class TorchPythonFunction:
    """DALI's ``ops.TorchPythonFunction``: ``TorchPythonFunction(function, num_outputs=1,
    device="cpu", batch_processing=False, **kwargs)(*inputs)`` (see torch_python_function)."""

    def __init__(self, function, num_outputs=1, device="cpu", batch_processing=False, **kwargs):
        self.function, self.num_outputs = function, num_outputs
        self.device, self.batch_processing, self.kwargs = device, batch_processing, kwargs

    def __call__(self, *inputs, **kwargs):
        return torch_python_function(*inputs, function=self.function, num_outputs=self.num_outputs,
                                     device=self.device, batch_processing=self.batch_processing,
                                     **{**self.kwargs, **kwargs})
