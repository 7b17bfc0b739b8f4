"""Exceptions raised by stoker.

Every C status code has its own class, all deriving from :class:`StokerError`; each
also derives from the closest built-in exception, so ``except ValueError`` or
``except OSError`` keeps working in code written for other loaders. The message is the C
library's: it names the function first, then the culprit (file, sample, argument).
"""

from . import _stoker


class StokerError(Exception):
    """Base class of every error raised by stoker."""

    status = None  #: the C status code (an int), set on each subclass
    status_name = None  #: e.g. "STK_ERR_IO"


class InvalidArgumentError(StokerError, ValueError, TypeError):
    """An argument is unknown, of the wrong type or out of range (the message names it)."""


class OutOfMemoryError(StokerError, MemoryError):
    """An allocation failed."""


class StokerIOError(StokerError, OSError):
    """Reading a file failed (the message names the path)."""


class DecodeError(StokerError, ValueError):
    """Corrupt or undecodable data (the message names the file)."""


class UnsupportedError(StokerError, NotImplementedError):
    """The operation, format or device is not supported by this build."""


class NotFoundError(StokerError, LookupError):
    """A named thing (operator, reader, edge, file) does not exist."""


class StateError(StokerError, RuntimeError):
    """The call is not valid in the object's current state (e.g. run before build)."""


class DeviceError(StokerError, RuntimeError):
    """A CUDA error, or no usable GPU."""


class LimitError(StokerError, ValueError):
    """The input exceeds a configured limit (max pixels, max file bytes)."""


class ParseError(StokerError, ValueError):
    """A syntax error in a pipeline's text form."""


class InternalError(StokerError, RuntimeError):
    """A bug in stoker; please report it with the message."""


_BY_NAME = {
    "STK_ERR_INVALID_ARGUMENT": InvalidArgumentError,
    "STK_ERR_OUT_OF_MEMORY": OutOfMemoryError,
    "STK_ERR_IO": StokerIOError,
    "STK_ERR_DECODE": DecodeError,
    "STK_ERR_UNSUPPORTED": UnsupportedError,
    "STK_ERR_NOT_FOUND": NotFoundError,
    "STK_ERR_STATE": StateError,
    "STK_ERR_DEVICE": DeviceError,
    "STK_ERR_LIMIT": LimitError,
    "STK_ERR_PARSE": ParseError,
    "STK_ERR_INTERNAL": InternalError,
}

#: status code -> exception class, for every error status of the C library.
ERROR_CLASSES = {}


def _install():
    for code, name, _text in _stoker.status_table():
        if code == 0:
            continue
        cls = _BY_NAME.get(name)
        if cls is None:  # a status added to the C table later: still a StokerError
            cls = type(name.title().replace("_", ""), (StokerError,), {})
        cls.status, cls.status_name = code, name
        ERROR_CLASSES[code] = cls
    _stoker._set_error_classes(ERROR_CLASSES)


_install()

__all__ = ["StokerError", "ERROR_CLASSES"] + [c.__name__ for c in _BY_NAME.values()]
