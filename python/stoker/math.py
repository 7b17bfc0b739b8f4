"""Elementwise math on data nodes, as ``nvidia.dali.math``: ``math.min(a, b)``,
``math.clamp(x, lo, hi)``, ``math.sqrt(x)``...

Each function is the registry operator ``math.<name>``; Python numbers and
``types.Constant`` operands become ``constant`` nodes. Operators on data nodes map the
same way: ``+ - * / // % **`` to math.add, sub, mul, fdiv, div, mod, pow; comparisons to
eq, neq, lt, leq, gt, geq; ``& | ^`` to bitand, bitor, bitxor; unary ``-`` to minus and
``abs()`` to abs. Result types follow DALI's promotion rules
(:func:`stoker.types.promote`).
"""

from . import _graph, _schema

NAMES = ("abs", "fabs", "floor", "ceil", "pow", "fpow", "min", "max", "clamp", "sqrt", "rsqrt",
         "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
         "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh")


def _make(name):
    def op(*operands, **kwargs):
        what = f"stoker.math.{name}"
        schema_name = f"math.{name}"
        if schema_name not in _schema.registry():
            _graph._missing_op(schema_name, what)
        nodes = [_graph._operand(x, what) for x in operands]
        return _graph.call_op(schema_name, nodes, kwargs, what=what)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name} (the registry operator math.{name})."
    return op


def __getattr__(name):
    if name in NAMES or f"math.{name}" in _schema.registry():
        return _make(name)
    raise AttributeError(f"module 'stoker.math' has no attribute {name!r}")


def __dir__():
    return sorted(set(NAMES) | {n[5:] for n in _schema.registry() if n.startswith("math.")})
