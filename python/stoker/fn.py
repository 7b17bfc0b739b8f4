"""The functional API: one function per registry operator, e.g. ``fn.readers.file``,
``fn.decoders.image``, ``fn.random.uniform``. Generated at import from the C registry;
see each function's docstring (``help(fn.resize)``) for its arguments."""

from . import _opgen, external_source as _es  # noqa: F401  (registers hooks)

__all__ = _opgen.populate_fn(globals(), __name__)
