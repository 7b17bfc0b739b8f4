"""stoker: a data loading and augmentation engine for deep learning training.

The Python API mirrors NVIDIA DALI's, so DALI pipelines port by changing imports::

    from stoker import pipeline_def, fn, types
    from stoker.plugin.torch import ClassificationIterator

The operator namespaces ``fn`` and ``ops`` are generated from the C library's registry.
"""

from . import _cuda_env  # noqa: F401  (CUDA_DEVICE_MAX_CONNECTIONS, before any CUDA context)
from . import _stoker
from .errors import *  # noqa: F401,F403
from .errors import StokerError
from . import types
from .tensors import TensorCPU, TensorGPU, TensorList, TensorListCPU, TensorListGPU
from .pipeline import Pipeline, pipeline_def
from ._graph import DataNode, newaxis
from .external_source import SampleInfo, BatchInfo
from ._pyfunc import current_dali_stream
from . import _dlpack_fn  # noqa: F401  (registers fn.dl_tensor_python_function)
from . import fn, ops, math, conditional

__version__ = _stoker.version_string

__all__ = ["Pipeline", "pipeline_def", "fn", "ops", "types", "DataNode", "TensorList",
           "TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU", "SampleInfo", "BatchInfo", "StokerError", "newaxis",
           "current_dali_stream", "__version__"]
