"""Graph building: operator instances and the data nodes they produce.

Calling ``fn.resize(images, resize_x=224)`` (or an ``ops.Resize`` object) creates one
:class:`OpInstance` whose arguments were checked against the C schema, and returns its
output :class:`DataNode` objects. A pipeline collects the instances reachable from its
outputs and hands them to the C library when it is built.
"""

import itertools
import re
import threading

from . import _schema
from .errors import InvalidArgumentError, UnsupportedError, StateError

_local = threading.local()
_global_counter = itertools.count()
_seq = itertools.count()


def pipeline_stack():
    """The thread's stack of pipelines entered with ``with pipe:``."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_pipeline():
    stack = pipeline_stack()
    return stack[-1] if stack else None


# ---- conditional execution (see stoker._conditionals) ----

def guard_stack():
    """The thread's stack of (predicate DataNode, value) conditions: every operator
    created while it is not empty runs only for the samples where all of them hold."""
    stack = getattr(_local, "guards", None)
    if stack is None:
        stack = _local.guards = []
    return stack


def push_guard(node, value):
    guard_stack().append((node, int(value)))


def pop_guard():
    guard_stack().pop()


class UndefinedVariable:
    """What a variable holds after an ``if`` on a DataNode when it has no value for some
    samples (assigned in one branch only) or holds Python objects that cannot differ
    per sample. Any use raises an error naming the variable."""

    __slots__ = ("_name", "_reason")

    def __init__(self, name, reason):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_reason", reason)

    def error(self):
        what = self._name if self._name.startswith("the ") else f"variable '{self._name}'"
        return InvalidArgumentError(f"{what} {self._reason}")

    def _fail(self, *args, **kwargs):
        raise self.error()

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # protocol probes (copy, pickle) are not uses
        raise self.error()

    def __repr__(self):
        return f"<undefined variable {self._name!r}>"

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = __setitem__ = __setattr__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = _fail
    __rpow__ = __lt__ = __le__ = __gt__ = __ge__ = __and__ = __rand__ = __or__ = _fail
    __ror__ = __xor__ = __rxor__ = __neg__ = __pos__ = __abs__ = __invert__ = _fail
    __eq__ = __ne__ = __int__ = __float__ = __index__ = __array__ = _fail
    __hash__ = object.__hash__


def check_defined(x):
    """Raises the variable's error if `x` is an UndefinedVariable."""
    if isinstance(x, UndefinedVariable):
        raise x.error()
    return x


def _ident(text):
    """`text` made into an identifier, as edge names in the text form must be."""
    s = re.sub(r"\W", "_", text)
    return "_" + s if not s or s[0].isdigit() else s


class OpInstance:
    """One operator call in a graph."""

    def __init__(self, schema, device, name, inputs, args, arg_inputs, num_outputs):
        self.schema = schema
        self.device = device
        self.seq = next(_seq)  # creation order, which is a topological order
        pipe = current_pipeline()
        if name is None:
            k = pipe._next_op_index() if pipe is not None else next(_global_counter)
            name = f"{schema.name}_{k}"
        self.name = name
        self.inputs = list(inputs)
        self.args = dict(args)
        self.arg_inputs = dict(arg_inputs)
        self.guards = tuple(guard_stack())
        if self.guards and (schema.is_reader or schema.name == "external_source"):
            raise InvalidArgumentError(
                f"{schema.name} ('{name}'): a data source cannot be inside a conditional "
                "branch (every sample needs its item); create it before the `if` and use "
                "its output in the branches")
        self.outputs = [DataNode(self, k, self._output_device()) for k in range(num_outputs)]
        self.payload = None  # Python-side extras (external source, python function)

    def _output_device(self):
        return "cpu" if self.device == "cpu" else "gpu"

    def edge_name(self, k):
        base = _ident(self.name)
        return base if len(self.outputs) == 1 else f"{base}_{k}"

    def upstream(self):
        """The instances this one reads from (inputs, argument inputs, conditions)."""
        for node in itertools.chain(self.inputs, self.arg_inputs.values()):
            yield node.op
        for node, _ in self.guards:
            yield node.op

    def __repr__(self):
        return f"<OpInstance {self.schema.name} name={self.name!r} device={self.device!r}>"


class DataNode:
    """The output of an operator in a pipeline graph (a batch, sample-wise).

    ``name`` is the edge name; ``device`` is "cpu" or "gpu". Arithmetic and comparison
    operators build elementwise operators (``math.add``, ``math.lt``, ...) with DALI's type
    promotion; the registry must provide them.
    """

    __slots__ = ("op", "index", "device", "__weakref__")

    def __init__(self, op, index, device):
        self.op, self.index, self.device = op, index, device

    @property
    def name(self):
        return self.op.edge_name(self.index)

    @property
    def source(self):
        return self.op

    def gpu(self):
        """This node's data in GPU memory (a ``copy`` operator on device "gpu")."""
        if self.device == "gpu":
            return self
        return _transfer(self, "gpu")

    def cpu(self):
        """This node's data in host memory."""
        if self.device == "cpu":
            return self
        return _transfer(self, "cpu")

    def __repr__(self):
        return f"DataNode(name={self.name!r}, device={self.device!r})"

    def __bool__(self):
        if getattr(_local, "converted_depth", 0):
            hint = ("this `if` (or `while`, `assert`, chained comparison) is not one stoker "
                    "rewrites: `if` statements, `x if c else y`, `and`, `or` and `not` in the "
                    "pipeline function and in the functions it calls work; lambdas, functions "
                    "without source and functions of installed packages are called as they "
                    "are. Use stoker.conditional.when/switch there")
        else:
            hint = ("per-sample `if` / `and` / `or` / `not` on data nodes need "
                    "@pipeline_def(enable_conditionals=True) (or stoker.conditional.when / "
                    "switch for graphs built without it)")
        raise StateError(
            f"DataNode {self.name!r} has no single truth value while the graph is being "
            f"defined (it holds one value per sample); {hint}")

    def __hash__(self):
        return id(self)

    # Arithmetic: the registry's math.binary / math.unary (see stoker.math).
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("div", self, o)
    def __rtruediv__(self, o): return binary("div", o, self)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __rfloordiv__(self, o): return binary("floordiv", o, self)
    def __mod__(self, o): return binary("mod", self, o)
    def __rmod__(self, o): return binary("mod", o, self)
    def __pow__(self, o): return binary("pow", self, o)
    def __rpow__(self, o): return binary("pow", o, self)
    def __eq__(self, o): return binary("eq", self, o)
    def __ne__(self, o): return binary("ne", self, o)
    def __lt__(self, o): return binary("lt", self, o)
    def __le__(self, o): return binary("le", self, o)
    def __gt__(self, o): return binary("gt", self, o)
    def __ge__(self, o): return binary("ge", self, o)
    def __and__(self, o): return binary("and", self, o)
    def __rand__(self, o): return binary("and", o, self)
    def __or__(self, o): return binary("or", self, o)
    def __ror__(self, o): return binary("or", o, self)
    def __xor__(self, o): return binary("xor", self, o)
    def __rxor__(self, o): return binary("xor", o, self)
    def __neg__(self): return unary("neg", self)
    def __pos__(self): return self
    def __abs__(self): return unary("abs", self)

    # Indexing: the registry's subscript (NumPy's a[...] per sample), shape(): shapes.
    def __getitem__(self, index):
        return subscript(self, index)

    def __iter__(self):
        # Without this, Python would iterate by indexing 0, 1, 2... forever.
        raise TypeError(
            f"DataNode {self.name!r} is not iterable while the graph is being defined (it "
            "holds one value per sample); index it (x[0], x[1:3]) to select parts of each sample")

    def shape(self, dtype=None, device=None):
        """Each sample's shape as a 1D int64 tensor (DALI's DataNode.shape(); the
        ``shapes`` operator). ``dtype`` picks another type. A GPU node's shape is a GPU
        node here (DALI gives a CPU node)."""
        kwargs = {"device": device or self.device}
        if dtype is not None:
            kwargs["dtype"] = dtype
        return call_op("shapes", [self], kwargs, what="DataNode.shape()")


# ---- instantiation ----

def _missing_op(name, what):
    raise UnsupportedError(
        f"{what} needs the operator '{name}', which this build's registry does not have")


def _infer_device(schema, inputs):
    if any(n.device == "gpu" for n in inputs) and "gpu" in schema.devices:
        return "gpu"
    return "cpu" if "cpu" in schema.devices else schema.devices[0]


def check_inputs(schema, inputs):
    """The positional inputs as DataNodes; constants become ``constant`` nodes."""
    nodes = []
    for i, x in enumerate(inputs):
        check_defined(x)
        if isinstance(x, DataNode):
            nodes.append(x)
        elif isinstance(x, (list, tuple)) and x and all(isinstance(n, DataNode) for n in x):
            raise InvalidArgumentError(
                f"{schema.name}: input {i} is a list of DataNodes; stoker operators take one "
                "DataNode per input")
        else:
            import numpy as np
            from .types import Constant, ScalarConstant
            if isinstance(x, ScalarConstant):
                nodes.append(constant_node(x))
            elif isinstance(x, (np.ndarray, np.generic, int, float)):
                # DALI turns NumPy arrays and Python scalars given as inputs into constants
                # (fn.full(np.float32(2.5), ...), fn.reductions.std_dev(x, 0.5)).
                nodes.append(constant_node(Constant(np.asarray(x) if isinstance(x, np.generic) else x)))
            else:
                raise InvalidArgumentError(
                    f"{schema.name}: input {i} must be a DataNode, got {type(x).__name__}")
    n = len(nodes)
    if not (schema.min_inputs <= n <= schema.max_inputs):
        want = (f"{schema.min_inputs}" if schema.min_inputs == schema.max_inputs
                else f"{schema.min_inputs} to {schema.max_inputs}")
        raise InvalidArgumentError(f"{schema.name}: takes {want} input(s), got {n}")
    return nodes


def split_kwargs(schema, kwargs):
    """(checked constant args, per-sample DataNode args) from keyword arguments."""
    args, arg_inputs = {}, {}
    for key, value in kwargs.items():
        if key in _schema.IGNORED_KWARGS:
            continue
        check_defined(value)
        a = schema.args.get(key)
        if a is None:
            known = ", ".join(list(schema.args) + list(_schema.COMMON_KWARGS))
            raise InvalidArgumentError(
                f"{schema.name}: unknown argument '{key}' (known: {known})")
        if isinstance(value, DataNode):
            if not a.per_sample:
                raise InvalidArgumentError(
                    f"{schema.name}: argument '{key}' cannot be fed per sample by a DataNode "
                    "(its schema has no per-sample flag); pass a constant")
            arg_inputs[key] = value
        elif value is None:
            continue  # None means "not given", as in DALI's signatures
        else:
            args[key] = _schema.convert(schema.name, a, value)
    for a in schema.args.values():
        if a.required and a.name not in args and a.name not in arg_inputs:
            raise InvalidArgumentError(f"{schema.name}: argument '{a.name}' is required")
    return args, arg_inputs


def num_outputs_of(schema, args):
    if schema.num_outputs >= 0:
        return schema.num_outputs
    a = schema.args.get("num_outputs")
    if a is None:
        raise UnsupportedError(
            f"{schema.name}: the number of outputs depends on the arguments, and the "
            "schema has no 'num_outputs' argument to tell it")
    return int(args.get("num_outputs", a.default if a.default is not None else 1))


def instantiate(schema, inputs, kwargs, num_outputs=None):
    """Creates an OpInstance and returns its OpInstance (outputs in .outputs).

    `num_outputs` is given by hooks of operators whose outputs follow a list argument
    (one per entry of a reader's `ext` or `feature_names`)."""
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None)
    name = kwargs.pop("name", None)
    preserve = bool(kwargs.pop("preserve", False))
    nodes = check_inputs(schema, inputs)
    if device is None:
        device = _infer_device(schema, nodes)
    if device not in ("cpu", "mixed", "gpu"):
        raise InvalidArgumentError(f"{schema.name}: device must be 'cpu', 'mixed' or 'gpu', got {device!r}")
    if device not in schema.devices:
        raise UnsupportedError(
            f"{schema.name}: device {device!r} is not supported (devices: {', '.join(schema.devices)})")
    if name is not None and not isinstance(name, str):
        raise InvalidArgumentError(f"{schema.name}: argument 'name' must be a string")
    args, arg_inputs = split_kwargs(schema, kwargs)
    if num_outputs is None:
        num_outputs = num_outputs_of(schema, args)
    inst = OpInstance(schema, device, name, nodes, args, arg_inputs, num_outputs)
    if preserve or schema.name in NEVER_PRUNED:
        pipe = current_pipeline()
        if pipe is not None:
            pipe._preserve(inst)
    return inst


# Operators a pipeline runs even when no output depends on them, as DALI does: Python
# functions are called for their side effects too (logging, saving, counting), also with
# num_outputs=0. Any other operator can ask for it with preserve=True.
NEVER_PRUNED = frozenset({"python_function", "dl_tensor_python_function"})


def outputs_of(inst):
    """What an operator call returns: one DataNode, or a list for several outputs."""
    return inst.outputs[0] if len(inst.outputs) == 1 else list(inst.outputs)


def call_op(schema_name, inputs, kwargs, what=None):
    schema = _schema.registry().get(schema_name)
    if schema is None:
        _missing_op(schema_name, what or schema_name)
    return outputs_of(instantiate(schema, inputs, kwargs))


def _transfer(node, device):
    schema = _schema.registry().get("copy")
    if schema is None or device not in schema.devices:
        raise UnsupportedError(
            f"DataNode.{device}(): moving {node.name!r} to the {device.upper()} needs the "
            f"operator 'copy' with device {device!r}, which this build does not have")
    return outputs_of(instantiate(schema, [node], {"device": device}))


def constant_node(c, device=None):
    """A DataNode holding a constant (registry operator ``constant``)."""
    import numpy as np
    from .types import to_c_value
    value = np.asarray(c.value)
    dtype = to_c_value(c.dtype) if c.dtype else value.dtype.name
    kwargs = {"shape": list(c.shape) if c.shape is not None else list(value.shape), "dtype": dtype}
    if np.issubdtype(np.dtype(dtype) if dtype != "bool" else np.bool_, np.floating):
        kwargs["fdata"] = [float(v) for v in value.ravel()]
    else:
        kwargs["idata"] = [int(v) for v in value.ravel()]
    if c.layout:
        kwargs["layout"] = c.layout
    if device or c.device:
        kwargs["device"] = device or c.device
    return call_op("constant", [], kwargs, what=f"the constant {c!r}")


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
            "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
            "and": "&", "or": "|", "xor": "^", "neg": "unary -", "abs": "abs()"}


def _what(op):
    sym = _SYMBOLS.get(op)
    return f"the expression '{sym}' on data nodes" if sym else f"stoker.math.{op}"


def _require(schema_name, what):
    schema = _schema.registry().get(schema_name)
    if schema is None:
        _missing_op(schema_name, what)
    return schema


def scalar_operand(x, what):
    """(value, C dtype) of a constant operand: Python ints are int32, floats float32 and
    bools bool (DALI's rule); NumPy scalars and types.Constant keep their type."""
    import numpy as np
    from .types import ScalarConstant, to_c_value
    if isinstance(x, ScalarConstant):
        value = np.asarray(x.value)
        if value.size != 1:
            _missing_op("constant", f"{what} with the tensor constant {x!r}")
        return value.item(), to_c_value(x.dtype)
    if isinstance(x, (bool, np.bool_)):
        return bool(x), "bool"
    if isinstance(x, np.generic):
        return x.item(), x.dtype.name
    if isinstance(x, int):
        return x, "int32"
    if isinstance(x, float):
        return x, "float32"
    raise InvalidArgumentError(f"{what}: unsupported operand of type {type(x).__name__}")


def binary(op, a, b, what=None):
    """`a op b` through the registry operator math.binary; one side may be a constant."""
    what = what or _what(op)
    check_defined(a), check_defined(b)
    schema = _require("math.binary", what)
    if isinstance(a, DataNode) and isinstance(b, DataNode):
        return outputs_of(instantiate(schema, [a, b], {"op": op}))
    node, const, side = (a, b, "right") if isinstance(a, DataNode) else (b, a, "left")
    import numpy as np
    from .types import ScalarConstant
    if isinstance(const, ScalarConstant) and np.asarray(const.value).size != 1:
        # a tensor constant (types.Constant([...])) becomes a `constant` node on the data
        # node's device (DALI does the same), then a two-input operation
        cnode = constant_node(const, device=const.device or node.device)
        pair = [node, cnode] if side == "right" else [cnode, node]
        return outputs_of(instantiate(schema, pair, {"op": op}))
    value, dtype = scalar_operand(const, what)
    return outputs_of(instantiate(schema, [node], {"op": op, "scalar": value,
                                                   "scalar_side": side, "scalar_dtype": dtype}))


def unary(op, x, what=None):
    """`op(x)` through the registry operator math.unary."""
    what = what or _what(op)
    schema = _require("math.unary", what)
    if not isinstance(x, DataNode):
        raise InvalidArgumentError(f"{what}: the operand must be a DataNode, got {type(x).__name__}")
    return outputs_of(instantiate(schema, [x], {"op": op}))


# ---- subscripts: x[...] on data nodes ----

class NewAxis:
    """A new axis of extent 1 in a subscript, with a layout letter: ``x[stoker.newaxis("F")]``
    (DALI's ``newaxis``); a bare ``None`` adds an unnamed one."""

    __slots__ = ("name",)

    def __init__(self, name=None):
        if name is not None and (not isinstance(name, str) or len(name) != 1):
            raise InvalidArgumentError(f"newaxis: name must be one layout letter, got {name!r}")
        self.name = name

    def __repr__(self):
        return f"newaxis({self.name!r})" if self.name else "newaxis()"


def newaxis(name=None):
    return NewAxis(name)


_SUB_AT, _SUB_SLICE, _SUB_NEW, _SUB_ELLIPSIS = 0, 1, 2, 3


def _index_value(x, where):
    """An index or slice bound: a Python / NumPy integer, or a DataNode of one integer per
    sample."""
    import numpy as np
    check_defined(x)
    if isinstance(x, DataNode):
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"DataNode subscript: {where} must be an integer or a DataNode, got "
                        f"{type(x).__name__} ({x!r})")
    return int(x)


def subscript(node, index):
    """``node[index]`` per sample, as NumPy: integers (negative from the end) remove their
    axis, slices (with steps, negative ones too) keep it, None / newaxis() insert an axis
    of extent 1, ``...`` stands for the axes not named. Indices and slice bounds may be
    DataNodes (one integer per sample)."""
    items = index if isinstance(index, tuple) else (index,)
    kinds, kwargs, names = [], {}, []
    for j, item in enumerate(items):
        if item is None or isinstance(item, NewAxis):
            kinds.append(_SUB_NEW)
            names.append(item.name if isinstance(item, NewAxis) else None)
        elif item is Ellipsis:
            if _SUB_ELLIPSIS in kinds:
                raise InvalidArgumentError("DataNode subscript: an index can only have a single ellipsis ('...')")
            kinds.append(_SUB_ELLIPSIS)
        elif isinstance(item, slice):
            kinds.append(_SUB_SLICE)
            for key, value in (("lo", item.start), ("hi", item.stop), ("step", item.step)):
                if value is not None:
                    kwargs[f"{key}_{j}"] = _index_value(value, f"the slice {key} at position {j}")
        else:
            kinds.append(_SUB_AT)
            kwargs[f"at_{j}"] = _index_value(item, f"the index at position {j}")
    schema = _require("subscript", "DataNode subscripts (x[...])")
    limit = (len(schema.args) - 2) // 4
    if len(kinds) > limit:
        raise InvalidArgumentError(
            f"DataNode subscript: {len(kinds)} positions in the index; at most {limit}")
    kwargs["kinds"] = kinds
    if names and all(names):
        kwargs["new_axis_names"] = "".join(names)
    kwargs["device"] = node.device
    return outputs_of(instantiate(schema, [node], kwargs))
