"""Per-sample conditional execution: ``if`` on data nodes, by rewriting syntax trees.

With ``enable_conditionals=True`` the pipeline's graph-defining function is recompiled
from a rewritten syntax tree (and so, when they are called, are the functions it calls).
An ``if`` statement::

    if pred:
        image = fn.flip(image)
    else:
        image = fn.rotate(image, angle=10)

becomes code that evaluates ``pred`` once and then, when it is a Python value, runs the
original ``if`` unchanged. When it is a DataNode, it runs *both* bodies while the graph
is being defined: the true body with the condition (pred, 1) pushed on the guard stack
(every operator created there gets ``stk_op_add_guard(op, pred, 1)``, so it runs only
for the samples where pred is true), the false body with (pred, 0); the variables
assigned in either body are then merged per sample with a ``select`` operator named
after the variable. Samples are never copied or reordered: a guarded operator simply
does not run for the other samples (see src/pipeline/conditional.c).

``x if c else y``, ``and``, ``or`` and ``not`` on DataNodes are rewritten too. Calls are
routed through :func:`conv`, which rewrites user functions on their first call (cached
per code object), so helpers called from the pipeline, recursive ones included, can use
``if`` on data nodes. A ``return`` inside the branches of such a helper works: the
function is first put in single-exit form (the statements after an ``if`` whose branch
returns are moved into the branches, and returns become assignments to one variable).

The explicit API (no rewriting) is :func:`when` and :func:`switch`, exported as
``stoker.conditional``.
"""

import ast
import contextlib
import copy
import functools
import inspect
import os
import sys
import sysconfig
import textwrap
import types as _pytypes

import numpy as np

from . import _graph
from ._graph import DataNode, UndefinedVariable
from .errors import InvalidArgumentError, UnsupportedError

# Names used by the rewritten code; user code must not use them.
_RT = "__stk__"       # this module, as a free variable of every rewritten function
_TMP = "__stk_tmp"    # prefix of temporaries (never merged)
_RET = "__stk_return"  # the return value of a function put in single-exit form

MAX_BRANCHES = 16  # the "select" operator's limit


# ---------------------------------------------------------------------------------
# Predicates and merging
# ---------------------------------------------------------------------------------

_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
_LOGICAL = {"and", "or", "xor"}


def _is_bool(node):
    """True when `node` is known to hold bools (comparisons, logical ops, bool dtypes)."""
    op = node.op
    name = op.schema.name
    if name == "math.binary":
        kind = op.args.get("op")
        if kind in _COMPARISONS:
            return True
        if kind in _LOGICAL:
            scalar_ok = "scalar" not in op.args or op.args.get("scalar_dtype") == "bool"
            return scalar_ok and all(_is_bool(n) for n in op.inputs)
        return False
    if name == "math.unary":
        return op.args.get("op") == "not"
    if name == "select":
        return all(_is_bool(n) for n in op.inputs[1:])
    return op.args.get("dtype") == "bool"


def as_predicate(node, what="the condition"):
    """A bool DataNode for a condition: comparisons are used as they are, other nodes
    become ``node != 0`` (Python's truth rule for numbers)."""
    _check_cpu(node, what)
    return node if _is_bool(node) else _graph.binary("ne", node, 0, what=f"{what} (as bool)")


def _check_cpu(node, what):
    if node.device != "cpu":
        raise UnsupportedError(
            f"{what}: the condition {node.name!r} is on the GPU; conditions are read per sample "
            "on the host, so compute them on the CPU (as in DALI); the data inside the branches "
            "may be on the GPU")


def _unique_name(label):
    """An instance name for a select named after variable `label`, unique in the pipeline."""
    base = _graph._ident(label)
    pipe = _graph.current_pipeline()
    taken = pipe.__dict__.setdefault("_cond_names", set()) if pipe is not None else _free_names
    name, k = base, 1
    while name in taken:
        name = f"{base}__{k}"
        k += 1
    taken.add(name)
    return name


_free_names = set()  # select names of graphs defined outside a pipeline
_NUMBERS = (bool, int, float, np.bool_, np.number, np.ndarray)


def _is_number(x):
    from .types import ScalarConstant
    return isinstance(x, _NUMBERS + (ScalarConstant,))


def _same_python_value(a, b):
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b)))
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _as_node(x):
    """A DataNode for a number (a ``constant`` operator; DALI's typing of literals)."""
    from .types import Constant, ScalarConstant
    c = x if isinstance(x, ScalarConstant) else Constant(x)
    return _graph.constant_node(c)


def merge_values(label, index, values, where="", op_label=None):
    """Merges the per-branch values of one variable: ``values[k]`` is its value in the
    branch taken when ``index == k``. DataNodes (and numbers, made into constants next to
    a DataNode) become one ``select``; lists and tuples merge element-wise; equal Python
    values stay as they are; anything else becomes an UndefinedVariable that fails when
    used."""
    first = values[0]
    if all(v is first for v in values):
        return first
    where_text = f" at {where}" if where else ""
    undefined = [k for k, v in enumerate(values) if isinstance(v, UndefinedVariable)]
    if undefined:
        if len(values) == 2:
            side = "false" if undefined == [0] else "true"
            other = "true" if side == "false" else "false"
            if len(undefined) == 2:
                return values[0]
            return UndefinedVariable(label, (
                f"is assigned only in the {other} branch of the `if` on a DataNode{where_text}, "
                f"so the samples taking the {side} branch have no value for it; assign it in both "
                "branches (or before the `if`)"))
        return UndefinedVariable(label, (
            f"has no value in branch(es) {undefined} of the conditional{where_text}; assign it "
            "in every branch"))
    if all(isinstance(v, DataNode) or _is_number(v) for v in values) and (
            any(isinstance(v, DataNode) for v in values)
            or not all(_same_python_value(first, v) for v in values[1:])):
        devices = {"cpu" if v.device == "cpu" else "gpu" for v in values if isinstance(v, DataNode)}
        if len(devices) > 1:
            where_dev = ", ".join(f"branch {k}: {'CPU' if v.device == 'cpu' else 'GPU'}"
                                  for k, v in enumerate(values) if isinstance(v, DataNode))
            raise TypeError(f"'{label}'{where_text}: the branches disagree in device ({where_dev}); "
                            "branches must agree in device (move the CPU value with .gpu())")
        device = devices.pop() if devices else "cpu"
        nodes = [v if isinstance(v, DataNode) else _as_node(v) for v in values]
        if device == "gpu":  # numbers merged with GPU data become GPU constants
            nodes = [n if n.device != "cpu" else n.gpu() for n in nodes]
        name = _unique_name(op_label or label)
        return _graph.call_op("select", [index] + nodes, {"name": name, "device": device},
                              what=f"merging '{label}' after a conditional")
    if all(isinstance(v, (list, tuple)) for v in values) and len({type(v) for v in values}) == 1 \
            and len({len(v) for v in values}) == 1:
        merged = [merge_values(f"{label}[{i}]", index, [v[i] for v in values], where,
                               f"{op_label or label}_{i}")
                  for i in range(len(first))]
        return type(first)(merged) if type(first) in (list, tuple) else merged
    if all(_same_python_value(first, v) for v in values[1:]):
        return first
    kinds = " and ".join(sorted({type(v).__name__ for v in values}))
    return UndefinedVariable(label, (
        f"holds different Python values ({kinds}) in the branches of the `if` on a DataNode"
        f"{where_text}; only DataNodes and numbers can differ per sample"))


# ---------------------------------------------------------------------------------
# Runtime of rewritten code (referenced as __stk__.<name>)
# ---------------------------------------------------------------------------------

class If:
    """One executed ``if`` statement of rewritten code.

    Python conditions: ``take(True)`` is the condition's truth, ``take(False)`` its
    negation, and nothing else happens. DataNode conditions: both bodies run, each inside
    ``branch(side)`` (which pushes the guard), and ``merge`` joins the variables.
    """

    __slots__ = ("node", "value", "where", "_side", "_reached")

    def __init__(self, cond, where):
        _graph.check_defined(cond)
        self.where = where
        self._reached = set()
        self._side = None
        if isinstance(cond, DataNode):
            self.node = as_predicate(cond, f"`if` at {where}")
            self.value = None
        else:
            self.node = None
            self.value = bool(cond)

    def take(self, side):
        if self.node is not None:
            return True
        return self.value if side else not self.value

    def branch(self, side):
        self._side = side
        return self

    def __enter__(self):
        if self.node is not None:
            _graph.push_guard(self.node, 1 if self._side else 0)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.node is None:
            return False
        _graph.pop_guard()
        if exc_type is None and self._side not in self._reached:
            raise UnsupportedError(
                f"`if` on a DataNode at {self.where}: its {'true' if self._side else 'false'} "
                "branch left early with `return`, `break` or `continue` from inside a loop "
                "(or another statement stoker cannot make per-sample); compute the values in "
                "both branches and return after the `if`")
        return False

    def reached(self, side):
        self._reached.add(side)

    def merge(self, label, op_label, false_value, true_value):
        return merge_values(label, self.node, [false_value, true_value], self.where, op_label)


def undefined(name):
    return UndefinedVariable(name, "is not defined before the `if` on a DataNode that uses it")


def _logic(op, thunks):
    """`and` / `or` over lazily evaluated operands (Python's short circuit for Python
    values; DataNode operands are combined per sample, all of them evaluated)."""
    nodes = []
    value = None
    for k, thunk in enumerate(thunks):
        value = _graph.check_defined(thunk())
        if isinstance(value, DataNode):
            nodes.append(as_predicate(value, f"`{op}`"))
            continue
        decided = (not value) if op == "and" else bool(value)
        if decided:
            # a Python value decides the result for every sample
            return value if not nodes else (op == "or")
        if k == len(thunks) - 1 and not nodes:
            return value
    if not nodes:
        return value
    result = nodes[0]
    for n in nodes[1:]:
        result = _graph.binary(op, result, n, what=f"`{op}` on data nodes")
    return result


def and_(*thunks):
    return _logic("and", thunks)


def or_(*thunks):
    return _logic("or", thunks)


def not_(x):
    _graph.check_defined(x)
    if isinstance(x, DataNode):
        _check_cpu(x, "`not`")
        return _graph.unary("not", x, what="`not` on a data node")
    return not x


def ifexp(cond, true_thunk, false_thunk, where):
    """``a if cond else b``."""
    _graph.check_defined(cond)
    if not isinstance(cond, DataNode):
        return true_thunk() if cond else false_thunk()
    c = If(cond, where)
    with c.branch(True):
        t = true_thunk()
        c.reached(True)
    with c.branch(False):
        f = false_thunk()
        c.reached(False)
    return c.merge("the value of `x if c else y`", "ifexp", f, t)


# ---------------------------------------------------------------------------------
# Explicit API: when / switch
# ---------------------------------------------------------------------------------

@contextlib.contextmanager
def when(pred, value=True):
    """Operators created inside ``with when(pred):`` run only for the samples where
    ``pred`` is true (or, with an integer ``value``, where ``pred == value``); their
    outputs have no value for the other samples. Merge with ``fn.select``."""
    if not isinstance(pred, DataNode):
        raise InvalidArgumentError(
            f"stoker.conditional.when: the condition must be a DataNode, got {type(pred).__name__}")
    if isinstance(value, (bool, np.bool_)):
        node, v = as_predicate(pred, "stoker.conditional.when"), int(bool(value))
    elif isinstance(value, (int, np.integer)):
        _check_cpu(pred, "stoker.conditional.when")
        node, v = pred, int(value)
    else:
        raise InvalidArgumentError(
            f"stoker.conditional.when: value must be a bool or an int, got {type(value).__name__}")
    _graph.push_guard(node, v)
    try:
        yield node
    finally:
        _graph.pop_guard()


def switch(index, branches, *args, name="switch", **kwargs):
    """n-way selection: ``branches[k](*args, **kwargs)`` is called with its operators
    guarded by ``index == k`` and the results are merged per sample (``select``):
    sample i gets the result of branch ``index[i]``. ``index`` is an integer (or bool)
    scalar per sample; a value outside [0, len(branches)) fails at run time naming the
    merge. Branches may return a DataNode, a number, or equally long tuples/lists."""
    if not isinstance(index, DataNode):
        raise InvalidArgumentError(
            f"stoker.conditional.switch: index must be a DataNode, got {type(index).__name__}")
    branches = list(branches)
    if not 1 <= len(branches) <= MAX_BRANCHES:
        raise InvalidArgumentError(
            f"stoker.conditional.switch: between 1 and {MAX_BRANCHES} branches, got {len(branches)}")
    for k, b in enumerate(branches):
        if not callable(b):
            raise InvalidArgumentError(f"stoker.conditional.switch: branch {k} is not callable")
    _check_cpu(index, "stoker.conditional.switch")
    results = []
    for k, b in enumerate(branches):
        with when(index, k):
            results.append(b(*args, **kwargs))
    merged = merge_values(name, index, results, "stoker.conditional.switch")
    return _graph.check_defined(merged)


# ---------------------------------------------------------------------------------
# Converting functions
# ---------------------------------------------------------------------------------

_NO_CONVERT_ATTR = "_stoker_do_not_convert"
_CONVERTED_ATTR = "_stoker_converted"
_code_cache = {}  # original code object -> rewritten code object, or None (call as is)


def do_not_convert(func):
    """Marks a function to be called as it is by conditional pipelines (not rewritten)."""
    setattr(func, _NO_CONVERT_ATTR, True)
    return func


def _library_dirs():
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.realpath(p))
    dirs.add(os.path.realpath(os.path.dirname(__file__)))  # stoker itself
    return tuple(sorted(dirs))


_LIB_DIRS = None
_user_file = {}  # file name -> True when its functions are rewritten (not a library's)


def _convertible(func):
    global _LIB_DIRS
    if getattr(func, _NO_CONVERT_ATTR, False) or getattr(func, _CONVERTED_ATTR, False):
        return False
    code = func.__code__
    if code in _ours:
        return False  # already rewritten (a function defined inside rewritten code)
    if func.__name__ == "<lambda>" or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                                       | inspect.CO_ASYNC_GENERATOR):
        return False
    mod = getattr(func, "__module__", None) or ""
    if mod == "stoker" or mod.startswith(("stoker.", "numpy", "torch")):
        return False
    fname = code.co_filename
    if not fname or fname.startswith("<"):
        return False
    user = _user_file.get(fname)
    if user is None:
        if _LIB_DIRS is None:
            _LIB_DIRS = _library_dirs()
        real = os.path.realpath(fname)
        user = _user_file[fname] = not any(real.startswith(d + os.sep) for d in _LIB_DIRS)
    return user


def _rewritten_code(func):
    """The rewritten code object of `func`, or None when it cannot be rewritten."""
    code = func.__code__
    if code in _code_cache:
        return _code_cache[code]
    new = None
    try:
        new = _compile(func)
    except (OSError, TypeError, SyntaxError, _CannotConvert):
        new = None
    _code_cache[code] = new
    return new


class _CannotConvert(Exception):
    pass


def _parse_function(func):
    lines, first = inspect.getsourcelines(func)
    src = textwrap.dedent("".join(lines))
    tree = ast.parse(src)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == func.__name__:
            ast.increment_lineno(tree, first - 1)
            return node
    raise _CannotConvert(func.__name__)


def _compile(func):
    fdef = _parse_function(func)
    fdef.decorator_list = []
    filename = func.__code__.co_filename
    _Rewriter(filename).visit(fdef)
    freevars = func.__code__.co_freevars
    if _RT in freevars or any(v.startswith(_TMP) for v in freevars):
        raise _CannotConvert("reserved name")
    # A factory whose parameters are the function's free variables, so that the
    # rewritten function compiles with the same closure layout (plus __stk__).
    params = [ast.arg(arg=_RT)] + [ast.arg(arg=v) for v in freevars]
    factory = ast.FunctionDef(
        name="__stk_factory",
        args=ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[]),
        # `global` keeps the function's own name (recursion) a global, as it was
        body=([] if fdef.name in freevars else [ast.Global(names=[fdef.name])])
        + [fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.copy_location(factory, fdef)
    ast.fix_missing_locations(module)
    mcode = compile(module, filename, "exec", dont_inherit=True)
    fcode = next(c for c in mcode.co_consts if isinstance(c, _pytypes.CodeType))
    inner = next(c for c in fcode.co_consts
                 if isinstance(c, _pytypes.CodeType) and c.co_name == fdef.name)
    unknown = set(inner.co_freevars) - set(freevars) - {_RT}
    if unknown:
        raise _CannotConvert(", ".join(sorted(unknown)))
    _mark_ours(inner)
    return inner


_ours = set()  # code objects made by the rewriter (nested ones included)


def _mark_ours(code):
    _ours.add(code)
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            _mark_ours(c)


_RT_CELL = None


def _converted_function(func):
    code = _rewritten_code(func)
    if code is None:
        return None
    global _RT_CELL
    if _RT_CELL is None:
        _RT_CELL = _pytypes.CellType(sys.modules[__name__])
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    closure = tuple(_RT_CELL if v == _RT else cells[v] for v in code.co_freevars)
    new = _pytypes.FunctionType(code, func.__globals__, func.__name__, func.__defaults__, closure)
    new.__kwdefaults__ = copy.copy(func.__kwdefaults__)
    functools.update_wrapper(new, func, assigned=("__module__", "__name__", "__qualname__",
                                                  "__doc__", "__annotations__"), updated=())
    new.__dict__.update(func.__dict__)
    setattr(new, _CONVERTED_ATTR, True)
    new.__wrapped__ = func
    return new


def conv(f):
    """`f`, rewritten when it is a user function (what every call in rewritten code
    goes through); anything else (builtins, operators, library functions) as it is."""
    if isinstance(f, _pytypes.FunctionType):
        if not _convertible(f):
            return f
        return _converted_function(f) or f
    if isinstance(f, _pytypes.MethodType) and isinstance(f.__func__, _pytypes.FunctionType):
        if not _convertible(f.__func__):
            return f
        new = _converted_function(f.__func__)
        return _pytypes.MethodType(new, f.__self__) if new is not None else f
    if isinstance(f, functools.partial) and isinstance(f.func, (_pytypes.FunctionType,
                                                                _pytypes.MethodType)):
        inner = conv(f.func)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    call = getattr(type(f), "__call__", None)
    if isinstance(call, _pytypes.FunctionType) and not isinstance(f, type) and _convertible(call):
        new = _converted_function(call)  # a callable object of a user class
        return _pytypes.MethodType(new, f) if new is not None else f
    return f


def convert(func):
    """The rewritten version of a function (or bound method): ``if`` / ``and`` / ``or`` /
    ``not`` / ``x if c else y`` on DataNodes act per sample. Raises when the function's
    source cannot be found or parsed."""
    target = func.__func__ if isinstance(func, _pytypes.MethodType) else func
    if not isinstance(target, _pytypes.FunctionType):
        raise InvalidArgumentError(
            f"enable_conditionals: cannot rewrite {func!r}: not a Python function")
    if getattr(target, _CONVERTED_ATTR, False):
        return func
    if _code_cache.get(target.__code__) is not None:
        new = _converted_function(target)
        return _pytypes.MethodType(new, func.__self__) if isinstance(func, _pytypes.MethodType) else new
    try:
        code = _compile(target)
    except (OSError, TypeError) as e:
        raise InvalidArgumentError(
            f"enable_conditionals: the source of {target.__qualname__} is not available "
            f"({e}); conditionals rewrite the function's source (define it in a file)") from e
    except (SyntaxError, _CannotConvert) as e:
        raise InvalidArgumentError(
            f"enable_conditionals: cannot rewrite {target.__qualname__}: {e}") from e
    _code_cache[target.__code__] = code
    new = _converted_function(target)
    return _pytypes.MethodType(new, func.__self__) if isinstance(func, _pytypes.MethodType) else new


def call_converted(func, *args, **kwargs):
    """Calls the rewritten `func` (a pipeline's graph function) with conditionals on."""
    new = convert(func)
    depth = getattr(_graph._local, "converted_depth", 0)
    _graph._local.converted_depth = depth + 1
    guards = _graph.guard_stack()
    n = len(guards)
    try:
        return new(*args, **kwargs)
    finally:
        _graph._local.converted_depth = depth
        del guards[n:]


# ---------------------------------------------------------------------------------
# The syntax tree rewriter
# ---------------------------------------------------------------------------------

_SKIP_CALLS = {"super", "locals", "globals", "vars", "eval", "exec", "dir", "isinstance",
               "len", "range", "print", "type", "id", "getattr", "setattr", "hasattr"}


def _assigned_names(stmts):
    """Names bound by `stmts` in their own scope (not inside nested functions, classes,
    lambdas or comprehensions), without the rewriter's temporaries."""
    names = set()

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            for d in node.decorator_list:
                visit(d)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name != "*":
                    names.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.NamedExpr):
            names.add(node.target.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for s in stmts:
        visit(s)
    return sorted(n for n in names if not n.startswith(_TMP))


def _terminates(stmts):
    """True when every path through `stmts` ends in return or raise (at the if level)."""
    for s in stmts:
        if isinstance(s, (ast.Return, ast.Raise)):
            return True
        if isinstance(s, ast.If) and _terminates(s.body) and _terminates(s.orelse):
            return True
    return False


def _has_if_return(stmts):
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.If) and (_has_if_return(s.body) or _has_if_return(s.orelse)):
            return True
    return False


def _lift(block):
    """Single-exit form of a block reached through `if`s only: a return becomes an
    assignment to __stk_return, and the statements after an `if` that returns in a
    branch move into its branches (those that do not end in return)."""
    out = []
    for i, s in enumerate(block):
        if isinstance(s, ast.Return):
            value = s.value if s.value is not None else ast.Constant(value=None)
            out.append(ast.copy_location(
                ast.Assign(targets=[ast.Name(id=_RET, ctx=ast.Store())], value=value), s))
            return out
        if isinstance(s, ast.Raise):
            out.append(s)
            return out
        if isinstance(s, ast.If) and (_has_if_return(s.body) or _has_if_return(s.orelse)):
            rest = block[i + 1:]
            for attr in ("body", "orelse"):
                branch = getattr(s, attr)
                if rest and not _terminates(branch):
                    branch = branch + copy.deepcopy(rest)
                setattr(s, attr, _lift(branch) if branch else [])
            out.append(s)
            return out
        out.append(s)
    return out


def _contains(node, kinds):
    return any(isinstance(n, kinds) for n in ast.walk(node))


def _own_nodes(fdef):
    """The nodes of a function's own scope (not of nested functions or lambdas)."""
    stack = list(fdef.body)
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))


def _needs_lift(fdef):
    own = list(_own_nodes(fdef))
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in own):
        return False
    return any(isinstance(s, ast.If) and (_has_if_return(s.body) or _has_if_return(s.orelse))
               for s in fdef.body)


def _rt(attr):
    return ast.Attribute(value=ast.Name(id=_RT, ctx=ast.Load()), attr=attr, ctx=ast.Load())


def _thunk(expr):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                         kw_defaults=[], kwarg=None, defaults=[]), body=expr)


def _set_location(nodes, ref):
    for top in nodes:
        for n in ast.walk(top):
            if "lineno" in n._attributes:
                n.lineno = ref.lineno
                n.end_lineno = getattr(ref, "end_lineno", ref.lineno)
                n.col_offset = ref.col_offset
                n.end_col_offset = getattr(ref, "end_col_offset", ref.col_offset)
    return nodes


class _Rewriter(ast.NodeTransformer):
    def __init__(self, filename):
        self.filename = filename
        self.count = 0
        self.functions = []

    def _where(self, node):
        return f"{os.path.basename(self.filename)}:{node.lineno}"

    # -- scopes --
    def visit_FunctionDef(self, node):
        if _needs_lift(node):
            body = _lift(node.body)
            init = ast.Assign(targets=[ast.Name(id=_RET, ctx=ast.Store())],
                              value=ast.Constant(value=None))
            ret = ast.Return(value=ast.Name(id=_RET, ctx=ast.Load()))
            node.body = (_set_location([init], node.body[0]) + body
                         + _set_location([ret], body[-1] if body else node))
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()
        return node

    def visit_AsyncFunctionDef(self, node):
        return node  # not rewritten

    def visit_ClassDef(self, node):
        # Class bodies are left alone (lambdas there could not see class-level names);
        # their methods are rewritten when called.
        return node

    # -- expressions --
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        if _contains(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return node
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        call = ast.Call(func=_rt(fn), args=[_thunk(v) for v in node.values], keywords=[])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(ast.Call(func=_rt("not_"), args=[node.operand], keywords=[]), node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if _contains(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return node
        call = ast.Call(func=_rt("ifexp"), args=[node.test, _thunk(node.body), _thunk(node.orelse),
                                                 ast.Constant(value=self._where(node))], keywords=[])
        return ast.copy_location(call, node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in _SKIP_CALLS:
            return node
        node.func = ast.copy_location(ast.Call(func=_rt("conv"), args=[node.func], keywords=[]),
                                      node.func)
        return node

    # -- if statements --
    def visit_If(self, node):
        self.generic_visit(node)
        self.count += 1
        k = self.count
        names = _assigned_names(node.body + node.orelse)
        c = f"{_TMP}_if{k}"
        func = self.functions[-1] if self.functions else "<function>"

        def snapshot(prefix):
            return "".join(
                f"    try:\n        {_TMP}_{prefix}{k}_{v} = {v}\n"
                f"    except NameError:\n        {_TMP}_{prefix}{k}_{v} = {_RT}.undefined({v!r})\n"
                for v in names)

        def merges():
            out = []
            for v in names:
                label, op_label = (f"the return value of {func}()", f"{func}_return") \
                    if v == _RET else (v, v)
                out.append(f"    {v} = {c}.merge({label!r}, {op_label!r}, {_TMP}_f{k}_{v}, "
                           f"{_TMP}_t{k}_{v})\n")
            return "".join(out)

        restore = "".join(f"    {v} = {_TMP}_p{k}_{v}\n" for v in names)
        src = (
            f"{c} = {_RT}.If(__STK_TEST__, {self._where(node)!r})\n"
            + (f"if {c}.node is not None:\n{snapshot('p')}" if names else "")
            + f"with {c}.branch(True):\n    if {c}.take(True):\n        __STK_BODY__\n"
            f"        {c}.reached(True)\n"
            + (f"if {c}.node is not None:\n{snapshot('t')}{restore}" if names else "")
            + f"with {c}.branch(False):\n    if {c}.take(False):\n        __STK_ORELSE__\n"
            f"        {c}.reached(False)\n"
            + (f"if {c}.node is not None:\n{snapshot('f')}{merges()}" if names else ""))
        stmts = _set_location(ast.parse(src).body, node)
        return _Splicer(node).visit_all(stmts)


class _Splicer(ast.NodeTransformer):
    """Puts the original test and bodies into the placeholders of the template."""

    def __init__(self, if_node):
        self.if_node = if_node

    def visit_all(self, stmts):
        return [self.visit(s) for s in stmts]

    def visit_Name(self, node):
        if node.id == "__STK_TEST__":
            return self.if_node.test
        return node

    def _splice(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Name) and \
                    s.value.id in ("__STK_BODY__", "__STK_ORELSE__"):
                body = self.if_node.body if s.value.id == "__STK_BODY__" else self.if_node.orelse
                out.extend(body)
            else:
                out.append(self.visit(s))
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse", "handlers", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.AST):
                setattr(node, field, self._splice(stmts))
        for field, value in ast.iter_fields(node):
            if field in ("body", "orelse", "handlers", "finalbody"):
                continue
            if isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v
                                      for v in value])
        return node
