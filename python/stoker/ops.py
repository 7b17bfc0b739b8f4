"""The object API: one class per registry operator in CamelCase, e.g.
``ops.readers.File``, ``ops.decoders.Image``, ``ops.random.Uniform``,
``ops.CropMirrorNormalize``. Generated at import from the C registry."""

from . import _opgen, _pyfunc, external_source as _es  # noqa: F401  (registers hooks)
from ._opgen import Operator  # noqa: F401

__all__ = _opgen.populate_ops(globals(), __name__)

# DALI's ops.PythonFunction.current_stream(): the pipeline's stream during a GPU call
PythonFunction.current_stream = staticmethod(_pyfunc.current_stream)  # noqa: F821
