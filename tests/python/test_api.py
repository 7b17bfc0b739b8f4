"""The Python API generated from the C registry: namespaces, docs, argument checks,
types, errors, stubs, graph definition styles."""

import inspect

import numpy as np
import pytest

import stoker
from stoker import fn, ops, types, _schema, _stoker, _stubgen
from stoker.errors import (InvalidArgumentError, StokerError, UnsupportedError, NotFoundError,
                           StateError, ERROR_CLASSES)


def registry():
    return list(_schema.registry().values())


def resolve(root, dotted):
    obj = root
    for part in dotted:
        obj = getattr(obj, part)
    return obj


# ---- generation ----

def test_registry_is_not_empty_and_has_the_core_operators():
    names = {s.name for s in registry()}
    assert len(names) == len(_stoker.registry())
    for name in ("random.uniform", "random.normal", "random.coin_flip", "random.choice",
                 "external_source", "python_function", "readers.file"):
        assert name in names


@pytest.mark.parametrize("schema", registry(), ids=lambda s: s.name)
def test_every_operator_is_in_fn_with_docs_and_signature(schema):
    f = resolve(fn, schema.path + (schema.leaf,))
    assert callable(f)
    assert f.__doc__ and schema.doc.strip()[:40] in f.__doc__
    params = inspect.signature(f).parameters
    for a in schema.args.values():
        if a.name.isidentifier():
            assert a.name in params
            assert a.name in f.__doc__
    assert "device" in params and "name" in params


@pytest.mark.parametrize("schema", registry(), ids=lambda s: s.name)
def test_every_operator_is_in_ops_as_a_camelcase_class(schema):
    cls = resolve(ops, schema.path + (schema.class_name,))
    assert isinstance(cls, type) and issubclass(cls, ops.Operator)
    assert cls.schema is schema
    assert cls.__doc__ == fn_doc(schema)
    assert cls.__name__[0].isupper() and "_" not in cls.__name__


def fn_doc(schema):
    return resolve(fn, schema.path + (schema.leaf,)).__doc__


def test_camelcase_names_follow_dali():
    reg = _schema.registry()
    assert reg["readers.file"].class_name == "File"
    assert reg["random.coin_flip"].class_name == "CoinFlip"
    assert reg["python_function"].class_name == "PythonFunction"
    assert ops.readers.File.schema.name == "readers.file"
    assert ops.random.Uniform.schema.name == "random.uniform"
    for name, cls in (("decoders.image", "Image"), ("crop_mirror_normalize", "CropMirrorNormalize"),
                      ("resize", "Resize")):
        if name in reg:
            assert resolve(ops, reg[name].path + (cls,)).schema.name == name


def test_nested_namespaces_are_importable_modules():
    import importlib
    mod = importlib.import_module("stoker.fn.random")
    assert mod.uniform is fn.random.uniform
    assert importlib.import_module("stoker.ops.readers").File is ops.readers.File


def test_docstring_describes_types_defaults_ranges_and_choices():
    doc = fn.random.coin_flip.__doc__
    assert "probability (a float; default 0.5; in [0, 1]; may be a DataNode" in doc
    assert "'int32'" in doc and "Devices: cpu, gpu." in doc


def test_stubs_are_up_to_date():
    assert _stubgen.main(["--check"]) == 0, "run: python -m stoker._stubgen"
    for text in _stubgen.generate().values():
        compile(text, "<stub>", "exec")


def test_stub_mentions_every_operator():
    text = _stubgen.generate()
    for s in registry():
        assert f"def {s.leaf}(" in text["fn.pyi"]
        assert f"class {s.class_name}(Operator)" in text["ops.pyi"]


# ---- errors ----

def test_every_status_has_its_exception_class():
    codes = {code for code, _n, _t in _stoker.status_table() if code != 0}
    assert set(ERROR_CLASSES) == codes
    for code, cls in ERROR_CLASSES.items():
        assert issubclass(cls, StokerError) and cls.status == code
        with pytest.raises(cls, match="the culprit"):
            _stoker._raise_status(code, "f: the culprit")


def test_exception_classes_also_derive_from_builtins():
    assert issubclass(stoker.InvalidArgumentError, ValueError)
    assert issubclass(stoker.InvalidArgumentError, TypeError)
    assert issubclass(stoker.StokerIOError, OSError)
    assert issubclass(stoker.DecodeError, ValueError)
    assert issubclass(stoker.UnsupportedError, NotImplementedError)
    assert issubclass(stoker.NotFoundError, LookupError)


# ---- argument validation ----

def test_unknown_argument_is_named():
    with pytest.raises(InvalidArgumentError, match="random.uniform: unknown argument 'rnage'"):
        fn.random.uniform(rnage=[0, 1])


@pytest.mark.parametrize("kwargs, message", [
    ({"range": "ab"}, "argument 'range' expects a list of floats"),
    ({"range": [0, "x"]}, "argument 'range' expects a list of floats"),
    ({"shape": [2.5]}, "argument 'shape' expects a list of ints"),
    ({"seed": 1.5}, "argument 'seed' expects an int"),
    ({"dtype": 3}, "argument 'dtype' expects a string"),
    ({"dtype": "complex64"}, "argument 'dtype' = 'complex64' is not one of"),
])
def test_mistyped_arguments_are_named(kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        fn.random.uniform(**kwargs)


def test_range_is_checked():
    with pytest.raises(InvalidArgumentError, match=r"'probability' = 1.5 is out of range \[0, 1\]"):
        fn.random.coin_flip(probability=1.5)
    with pytest.raises(InvalidArgumentError, match="'stddev' = -1.0 is out of range"):
        fn.random.normal(stddev=-1)


def test_values_are_converted():
    inst = fn.random.uniform(range=np.array([0, 2]), shape=3, dtype=types.FLOAT16).op
    assert inst.args == {"range": [0.0, 2.0], "shape": [3], "dtype": "float16"}
    assert fn.random.coin_flip(probability=1, dtype=np.int64).op.args == {
        "probability": 1.0, "dtype": "int64"}


def test_enum_values_map_to_c_strings():
    assert types.to_c_value(types.FLOAT) == "float32"
    assert types.to_c_value(types.DALIDataType.FLOAT64) == "float64"
    assert types.to_c_value(types.RGB) == "RGB" and types.to_c_value(types.GRAY) == "GRAY"
    assert types.to_c_value(types.INTERP_NN) == "nearest"
    assert types.to_c_value(types.INTERP_LINEAR) == "linear"
    assert types.to_c_value(types.INTERP_CUBIC) == "cubic"
    assert types.to_c_value(types.INTERP_LANCZOS3) == "lanczos3"
    assert types.FLOAT.numpy == np.float32 and types.to_numpy_type("uint8") == np.uint8
    reg = _schema.registry()
    if "decoders.image" in reg:
        assert fn.decoders.image(fn.readers.file(files=["x"])[0], output_type=types.BGR).op.args == {
            "output_type": "BGR"}


def test_per_sample_argument_needs_the_flag():
    u = fn.random.uniform(range=[0, 1])
    node = fn.random.coin_flip(probability=u)
    assert node.op.arg_inputs == {"probability": u} and node.op.args == {}
    with pytest.raises(InvalidArgumentError, match="'dtype' cannot be fed per sample"):
        fn.random.coin_flip(dtype=u)


def test_input_count_and_types_are_checked():
    u = fn.random.uniform()
    with pytest.raises(InvalidArgumentError, match=r"random.uniform: takes 0 to 1 input\(s\), got 2"):
        fn.random.uniform(u, u)  # shape_like is its only input
    with pytest.raises(InvalidArgumentError, match="input 0 must be a DataNode"):
        fn.python_function("x", function=abs)


def test_device_is_checked():
    with pytest.raises(UnsupportedError, match="device 'gpu' is not supported"):
        fn.random.beta(device="gpu")
    with pytest.raises(InvalidArgumentError, match="device must be"):
        fn.random.uniform(device="tpu")


def test_required_argument_is_named():
    req = [s for s in registry() if any(a.required for a in s.args.values())
           and s.name not in ("external_source", "python_function") and s.min_inputs == 0]
    if not req:
        pytest.skip("no operator with a required argument and no inputs")
    s = req[0]
    a = next(a for a in s.args.values() if a.required)
    with pytest.raises(InvalidArgumentError, match=f"argument '{a.name}' is required"):
        resolve(fn, s.path + (s.leaf,))()


def test_ops_objects_check_arguments_at_creation():
    with pytest.raises(InvalidArgumentError, match="unknown argument 'foo'"):
        ops.random.Uniform(foo=1)
    with pytest.raises(InvalidArgumentError, match="'range' expects"):
        ops.random.Uniform(range="x")
    op = ops.random.Uniform(range=[0, 2], device="cpu")
    node = op(shape=[2])
    assert node.op.args == {"range": [0.0, 2.0], "shape": [2]} and node.op.device == "cpu"


# ---- data nodes ----

def test_data_node_names_and_outputs():
    data, label = fn.readers.file(files=["a", "b"], name="Reader")
    assert data.name == "Reader_0" and label.name == "Reader_1"
    assert data.op is label.op and data.device == "cpu"
    u = fn.random.uniform(name="my.op")
    assert u.name == "my_op"


def test_arithmetic_builds_math_operators_or_says_which_is_missing():
    u = fn.random.uniform()
    reg = _schema.registry()
    cases = ((lambda: u + 1, "math.binary", {"op": "add", "scalar": 1.0, "scalar_side": "right",
                                             "scalar_dtype": "int32"}),
             (lambda: 2.5 - u, "math.binary", {"op": "sub", "scalar": 2.5, "scalar_side": "left",
                                               "scalar_dtype": "float32"}),
             (lambda: u / u, "math.binary", {"op": "div"}),
             (lambda: u <= np.uint8(3), "math.binary", {"op": "le", "scalar": 3.0,
                                                        "scalar_side": "right",
                                                        "scalar_dtype": "uint8"}),
             (lambda: -u, "math.unary", {"op": "neg"}))
    for expr, op, args in cases:
        if op in reg:
            inst = expr().op
            assert inst.schema.name == op and inst.args == args
        else:
            with pytest.raises(UnsupportedError, match=f"'{op}'"):
                expr()


def test_data_node_has_no_truth_value():
    with pytest.raises(StateError, match="enable_conditionals"):
        bool(fn.random.uniform())


def test_gpu_transfer_needs_a_copy_operator():
    if "copy" in _schema.registry() and "gpu" in _schema.registry()["copy"].devices:
        assert fn.random.uniform().gpu().device == "gpu"
    else:
        with pytest.raises(UnsupportedError, match="'copy'"):
            fn.random.uniform().gpu()


def test_type_promotion_follows_dali():
    p = types.promote
    assert p("uint8", "float32") == "float32"
    assert p(types.UINT8, types.FLOAT16) == "float16"
    assert p("int8", "int32") == "int32" and p("uint16", "uint8") == "uint16"
    assert p("int8", "uint8") == "int16" and p("int16", "uint8") == "int16"
    assert p("int32", "uint32") == "int64" and p("int64", "uint64") == "int64"
    assert p("bool", "uint8") == "uint8" and p("float32", "float64") == "float64"
    assert p("int32", "int32") == "int32"


def test_constant_types():
    assert types.Constant(3).dtype == "int32" and types.Constant(0.5).dtype == "float32"
    assert types.Constant(True).dtype == "bool"
    c = types.Constant(np.float32([1.25, 0.75]))
    assert c.dtype == "float32" and c.shape == (2,)
    assert types.Constant(2, dtype=types.UINT8).dtype == "uint8"


# ---- pipeline definitions ----

def test_pipeline_def_with_overrides():
    @stoker.pipeline_def(batch_size=3, num_threads=1, seed=5)
    def pipe(shape):
        return fn.random.uniform(shape=shape)

    p = pipe([2], batch_size=4, seed=7, prefetch_queue_depth=1)
    assert (p.batch_size, p.seed, p.num_threads, p.prefetch_queue_depth) == (4, 7, 1, 1)
    assert p.device_id is None
    (out,) = p.run()
    assert len(out) == 4 and out.as_array().shape == (4, 2)


def test_bare_pipeline_def_and_enable_conditionals_flag():
    @stoker.pipeline_def
    def pipe():
        return fn.random.uniform(), fn.random.normal()

    p = pipe(batch_size=2, num_threads=1, enable_conditionals=True)
    assert p.enable_conditionals
    a, b = p.run()
    assert len(a) == 2 and len(b) == 2


def test_pipeline_def_must_return_nodes():
    @stoker.pipeline_def(batch_size=1)
    def pipe():
        fn.random.uniform()

    with pytest.raises(InvalidArgumentError, match="returned None"):
        pipe()


def test_subclass_with_define_graph_and_ops_objects():
    class MyPipe(stoker.Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, seed=1)
            self.uniform = ops.random.Uniform(range=[5, 6])

        def define_graph(self):
            return self.uniform(shape=[1])

    p = MyPipe()
    p.build()
    (out,) = p.run()
    assert np.all((out.as_array() >= 5) & (out.as_array() < 6))


def test_with_pipe_and_set_outputs():
    pipe = stoker.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        assert stoker.Pipeline.current() is pipe
        pipe.set_outputs(fn.random.coin_flip(probability=1.0))
    assert stoker.Pipeline.current() is None
    (out,) = pipe.run()
    assert out.as_array().tolist() == [1, 1]


def test_pipeline_argument_errors():
    with pytest.raises(InvalidArgumentError, match="unknown argument 'batchsize'"):
        stoker.Pipeline(batchsize=2)
    with pytest.raises(InvalidArgumentError, match="on_error"):
        stoker.Pipeline(batch_size=2, on_error="ignore")
    pipe = stoker.Pipeline(num_threads=1)
    with pipe:
        pipe.set_outputs(fn.random.uniform())
    with pytest.raises(InvalidArgumentError, match="batch_size must be set"):
        pipe.build()
    with pytest.raises(InvalidArgumentError, match="not a DataNode"):
        pipe.set_outputs(3)


def test_c_validation_errors_surface_with_their_message():
    pipe = stoker.Pipeline(batch_size=2, num_threads=1, prefetch_queue_depth=100)
    with pipe:
        pipe.set_outputs(fn.random.uniform())
    with pytest.raises(InvalidArgumentError, match="prefetch_queue_depth = 100 is out of range"):
        pipe.build()


def test_duplicate_instance_names_are_refused():
    pipe = stoker.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.random.uniform(name="u"), fn.random.normal(name="u"))
    with pytest.raises(InvalidArgumentError, match="two operators are named 'u'"):
        pipe.build()


def test_run_builds_implicitly_and_counts_unknown_readers():
    pipe = stoker.Pipeline(batch_size=1, num_threads=1)
    with pipe:
        pipe.set_outputs(fn.random.uniform())
    pipe.run()
    assert pipe.built and pipe.epoch_size() == {}
    with pytest.raises(NotFoundError, match="no reader named 'nope'"):
        pipe.epoch_size("nope")
