"""Elementwise math on data nodes, as ``nvidia.dali.math``: ``math.min(a, b)``,
``math.clamp(x, lo, hi)``, ``math.sqrt(x)``...

Binary functions and the operators on data nodes (``+ - * / // % **``, comparisons,
``& | ^``) become the registry operator ``math.binary`` with its ``op`` argument (add,
sub, mul, div, floordiv, mod, pow, eq, ne, lt, le, gt, ge, and, or, xor, min, max, fpow,
atan2); a Python number or a one-element ``types.Constant`` operand becomes its
``scalar`` argument (int -> int32, float -> float32, bool -> bool, as DALI types
literals); a larger ``types.Constant`` becomes a ``constant`` node on the data node's
device. Unary functions (and ``-x``, ``abs(x)``) become ``math.unary``; ``clamp``
becomes ``math.clamp``. Result types follow DALI's promotion rules
(:func:`stoker.types.promote`), applied by the C operators.

Device: an expression runs on the GPU when any operand is a GPU node; CPU operands (tensors
or per-sample scalar nodes) are then uploaded for it, and the result is a GPU node. Both
devices compute every element with the same code (docs/gpu.md).
"""

from . import _graph
from .errors import UnsupportedError

BINARY = ("min", "max", "pow", "fpow", "atan2")
UNARY = ("abs", "fabs", "floor", "ceil", "round", "sqrt", "rsqrt", "cbrt", "exp", "log", "log2",
         "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
         "acosh", "atanh")
_ALIASES = {"fabs": "abs"}


def _check_op(schema_name, op, what):
    schema = _graph._require(schema_name, what)
    choices = schema.args["op"].choices if "op" in schema.args else None
    if choices and op not in choices:
        raise UnsupportedError(f"{what}: '{schema_name}' has no op '{op}' in this build")


def _make_binary(name):
    def fn(a, b, **kwargs):
        what = f"stoker.math.{name}"
        _check_op("math.binary", name, what)
        return _graph.binary(name, a, b, what=what)
    fn.__doc__ = f"Elementwise {name}(a, b) (math.binary with op={name!r})."
    return fn


def _make_unary(name):
    op = _ALIASES.get(name, name)

    def fn(x, **kwargs):
        what = f"stoker.math.{name}"
        _check_op("math.unary", op, what)
        return _graph.unary(op, x, what=what)
    fn.__doc__ = f"Elementwise {name}(x) (math.unary with op={op!r})."
    return fn


def clamp(x, lo=None, hi=None):
    """Clamps x to [lo, hi] (math.clamp); lo and hi may be numbers or per-sample nodes.

    The result type follows DALI: x's type promoted with the bounds' types (a Python int
    is int32, a float float32, a NumPy scalar or types.Constant keeps its type, a node
    its own), so ``clamp(uint8_image, 0, 255)`` is int32 and ``clamp(uint8_image, 0.5,
    200)`` float32; give bounds of x's type (``np.uint8(10)``) to keep it."""
    schema = _graph._require("math.clamp", "stoker.math.clamp")
    kwargs = {}
    for key, value in (("lo", lo), ("hi", hi)):
        if value is None:
            continue
        _graph.check_defined(value)
        if isinstance(value, _graph.DataNode):
            kwargs[key] = value
        else:
            kwargs[key], kwargs[key + "_dtype"] = _graph.scalar_operand(value, "stoker.math.clamp")
    return _graph.outputs_of(_graph.instantiate(schema, [x], kwargs))


for _name in BINARY:
    globals()[_name] = _make_binary(_name)
    globals()[_name].__name__ = _name
for _name in UNARY:
    globals()[_name] = _make_unary(_name)
    globals()[_name].__name__ = _name

__all__ = list(BINARY) + list(UNARY) + ["clamp"]
