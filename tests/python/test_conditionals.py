"""Per-sample conditional execution from Python: `if` / `elif` / `else`, `and` / `or` /
`not`, `x if c else y` on data nodes (enable_conditionals=True rewrites the pipeline
function and the helpers it calls), and the explicit stoker.conditional API.

Every test runs real pipelines on decoded photos (or numbers fed by external_source).
The reference for "each sample gets exactly its branch's result" is the same pipeline
applying every branch's operation to every sample, unconditionally, and picking the
expected one per sample in NumPy by the predicate values the pipeline also returns."""

import itertools

import numpy as np
import pytest

import stoker
from stoker import fn, pipeline_def, conditional, _schema
from stoker.errors import InvalidArgumentError, StateError, StokerError, UnsupportedError

pytestmark = pytest.mark.skipif(
    not {"select", "constant", "math.binary", "math.unary", "flip", "invert", "rotate",
         "brightness", "resize"} <= set(_schema.registry()),
    reason="conditional or image operators not in this build")

BATCH = 16


def images(photos):
    """Decoded photos, resized small (HWC uint8), in reader order, with their labels. The
    photos are listed BATCH times over, so that every batch is full (a batch never
    crosses a reader epoch)."""
    jpegs, labels = fn.readers.file(files=photos * BATCH,
                                    labels=[i % len(photos) for i in range(len(photos) * BATCH)])
    decoded = fn.decoders.image(jpegs)
    return fn.resize(decoded, resize_x=40, resize_y=30), labels


def arrays(tl):
    return [np.array(tl[i]) for i in range(len(tl))]


def run(pipe, batches=2):
    pipe.build()
    return [[arrays(tl) for tl in pipe.run()] for _ in range(batches)]


def flat_labels(label_batches):
    return [int(np.asarray(x).ravel()[0]) for b in label_batches for x in b]


def check_order(photos, label_batches):
    """Samples come out in the reader's order: 0, 1, ..., n-1, 0, 1, ..."""
    got = flat_labels(label_batches)
    assert got == [i % len(photos) for i in range(len(got))]


# ---- if / else on a random predicate --------------------------------------------------

def test_if_else_random_predicate_each_sample_gets_its_branch(photos):
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=11, enable_conditionals=True)
    def pipe():
        img, label = images(photos)
        flip = fn.random.coin_flip(probability=0.5)  # int32 0/1
        ref_then, ref_else = fn.flip(img, horizontal=1), fn.invert(img)
        if flip:
            out = fn.flip(img, horizontal=1)
        else:
            out = fn.invert(img)
        return out, flip, ref_then, ref_else, img, label

    batches = run(pipe(), batches=3)
    taken = []
    for out, flip, ref_then, ref_else, img, _ in batches:
        for i in range(BATCH):
            want = ref_then[i] if flip[i] else ref_else[i]
            np.testing.assert_array_equal(out[i], want)
            # the references are right: NumPy's flip and 255 - x
            np.testing.assert_array_equal(ref_then[i], img[i][:, ::-1])
            np.testing.assert_array_equal(ref_else[i], 255 - img[i])
            taken.append(int(flip[i]))
    assert 0 < sum(taken) < len(taken), "both branches must be exercised"
    check_order(photos, [b[5] for b in batches])


def test_branch_operators_run_only_for_their_samples():
    calls = {"then": 0, "else": 0}

    def counted(key, delta):
        def f(x):
            calls[key] += 1
            return x + np.float32(delta)
        return f

    values = [np.array([float(i)], np.float32) for i in range(BATCH)]

    @pipeline_def(batch_size=BATCH, num_threads=1, seed=3, enable_conditionals=True,
                  exec_async=False, prefetch_queue_depth=1)
    def pipe():
        x = fn.external_source(source=[values], cycle=True)
        c = fn.random.coin_flip(dtype="bool")
        if c:
            y = fn.python_function(x, function=counted("then", 100))
        else:
            y = fn.python_function(x, function=counted("else", -100))
        return y, c, x

    p = pipe()
    p.build()
    y, c, x = (t.as_array() for t in p.run())
    c = c.astype(bool).ravel()
    np.testing.assert_array_equal(x.ravel(), np.arange(BATCH))  # order preserved
    np.testing.assert_array_equal(y.ravel(), x.ravel() + np.where(c, 100, -100))
    assert calls == {"then": int(c.sum()), "else": int((~c).sum())}
    assert 0 < c.sum() < BATCH


def test_variable_modified_in_one_branch_keeps_its_value_in_the_other(photos):
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=5, enable_conditionals=True)
    def pipe():
        img, label = images(photos)
        orig = img
        c = fn.random.coin_flip(probability=0.3)
        if c:
            img = fn.flip(img, vertical=1, horizontal=0)
        return img, c, orig

    for out, c, orig in run(pipe()):
        for i in range(BATCH):
            want = orig[i][::-1] if c[i] else orig[i]
            np.testing.assert_array_equal(out[i], want)


# ---- elif, nesting, and / or / not, x if c else y --------------------------------------

def test_elif_chain(photos):
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=7, enable_conditionals=True)
    def pipe():
        img, _ = images(photos)
        k = fn.random.choice(a=[4])
        refs = [fn.flip(img, horizontal=1), fn.invert(img), fn.brightness(img, brightness=0.5), img]
        if k == 0:
            out = fn.flip(img, horizontal=1)
        elif k == 1:
            out = fn.invert(img)
        elif k == 2:
            out = fn.brightness(img, brightness=0.5)
        else:
            out = img
        return (out, k) + tuple(refs)

    seen = set()
    for out, k, *refs in run(pipe(), batches=3):
        for i in range(BATCH):
            kk = int(k[i])
            np.testing.assert_array_equal(out[i], refs[kk][i])
            seen.add(kk)
    assert seen == {0, 1, 2, 3}


def test_nested_ifs(photos):
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=21, enable_conditionals=True)
    def pipe():
        img, _ = images(photos)
        a = fn.random.coin_flip(dtype="bool")
        b = fn.random.coin_flip(dtype="bool")
        refs = [fn.flip(img, horizontal=1), fn.invert(img), fn.brightness(img, brightness=2.0)]
        if a:
            if b:
                out = fn.flip(img, horizontal=1)
            else:
                out = fn.invert(img)
        else:
            out = fn.brightness(img, brightness=2.0)
        return (out, a, b) + tuple(refs)

    paths = set()
    for out, a, b, *refs in run(pipe(), batches=3):
        for i in range(BATCH):
            want = (0 if b[i] else 1) if a[i] else 2
            np.testing.assert_array_equal(out[i], refs[want][i])
            paths.add(want)
    assert paths == {0, 1, 2}


@pytest.mark.parametrize("kind", ["and", "or", "not_and", "mixed_python"])
def test_and_or_not(kind):
    values = [np.array([float(i)], np.float32) for i in range(BATCH)]
    use_python_true = True

    @pipeline_def(batch_size=BATCH, num_threads=2, seed=9, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=[values], cycle=True)
        a = fn.random.coin_flip(dtype="bool")
        b = fn.random.coin_flip(probability=0.5)  # int32: `and`/`or` make it bool
        if kind == "and":
            cond = a and b
        elif kind == "or":
            cond = a or b
        elif kind == "not_and":
            cond = not a and b
        else:
            cond = use_python_true and a  # a Python value first: Python's rule, then a
        if cond:
            y = x + 1000.0
        else:
            y = x - 1000.0
        return y, a, b, x

    p = pipe()
    p.build()
    y, a, b, x = (t.as_array().ravel() for t in p.run())
    a, b = a.astype(bool), b.astype(bool)
    want_cond = {"and": a & b, "or": a | b, "not_and": ~a & b, "mixed_python": a}[kind]
    np.testing.assert_array_equal(y, x + np.where(want_cond, 1000, -1000))
    assert 0 < want_cond.sum() < BATCH


def test_conditional_expression(photos):
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=4, enable_conditionals=True)
    def pipe():
        img, _ = images(photos)
        c = fn.random.coin_flip()
        out = fn.invert(img) if c else img
        return out, c, img

    for out, c, img in run(pipe()):
        for i in range(BATCH):
            np.testing.assert_array_equal(out[i], 255 - img[i] if c[i] else img[i])


# ---- helpers called from the pipeline ----------------------------------------------------

def select(image, idx, ops, i=0):
    """Applies ops[idx] per sample (the recursive helper of the issue)."""
    if i == len(ops) - 1:
        return ops[i](image)
    if idx == i:
        return ops[i](image)
    else:
        return select(image, idx, ops, i + 1)


OPS = [lambda x: fn.flip(x, horizontal=1),
       lambda x: fn.rotate(x, angle=90),
       lambda x: fn.brightness(x, brightness=0.5),
       lambda x: fn.invert(x)]


@pytest.mark.parametrize("n_ops", [3, 4])
def test_recursive_select_helper(photos, n_ops):
    ops = OPS[:n_ops]

    @pipeline_def(batch_size=BATCH, num_threads=2, seed=13, enable_conditionals=True)
    def pipe():
        img, label = images(photos)
        idx = fn.random.choice(a=[n_ops])
        out = select(img, idx, ops)
        return (out, idx, label) + tuple(op(img) for op in ops)

    p = pipe()
    seen = set()
    batches = run(p, batches=3)
    for out, idx, _, *refs in batches:
        for i in range(BATCH):
            k = int(idx[i])
            assert out[i].shape == refs[k][i].shape
            np.testing.assert_array_equal(out[i], refs[k][i])
            seen.add(k)
    assert seen == set(range(n_ops))
    check_order(photos, [b[2] for b in batches])
    # n_ops - 1 comparisons, n_ops - 1 merges named after the helper's return value
    text = p.serialize()
    assert text.count("= select(") == n_ops - 1
    assert "select_return = select(" in text


def test_nested_recursive_helper_runs_each_operation_only_for_its_samples():
    """A helper defined in a function (recursing through its closure), whose operations
    are python_functions counting their calls: each runs once per sample that chose it."""
    calls = [0, 0, 0, 0]

    def op(k):
        def f(x):
            calls[k] += 1
            return x * np.float32(10) + np.float32(k)
        return lambda x: fn.python_function(x, function=f)

    ops = [op(k) for k in range(4)]

    def choose(x, idx, k=0):
        if k == len(ops) - 1:
            return ops[k](x)
        if idx == k:
            return ops[k](x)
        return choose(x, idx, k + 1)

    values = [np.array([float(i)], np.float32) for i in range(BATCH)]

    @pipeline_def(batch_size=BATCH, num_threads=2, seed=19, enable_conditionals=True,
                  exec_async=False, prefetch_queue_depth=1)
    def pipe():
        x = fn.external_source(source=[values], cycle=True)
        idx = fn.random.choice(a=[4])
        return choose(x, idx), idx, x

    p = pipe()
    p.build()
    y, idx, x = (t.as_array().ravel() for t in p.run())
    np.testing.assert_array_equal(x, np.arange(BATCH))
    np.testing.assert_array_equal(y, x * 10 + idx)
    assert calls == [int((idx == k).sum()) for k in range(4)]
    assert all(c > 0 for c in calls)


def pick(image, which):
    """A helper with an early return in one branch and code after the `if`."""
    if which:
        return fn.invert(image)
    image = fn.flip(image, horizontal=1)
    return image


class Augment:
    def __init__(self, amount):
        self.amount = amount

    def __call__(self, image, c):
        if c:
            image = fn.brightness(image, brightness=self.amount)
        return image


def test_helpers_with_returns_methods_and_python_conditions(photos):
    mode = "rewritten"

    @pipeline_def(batch_size=BATCH, num_threads=2, seed=17, enable_conditionals=True)
    def pipe(strength):
        img, _ = images(photos)
        c = fn.random.coin_flip()
        out = pick(img, c)
        bright = Augment(strength)(img, c)
        if mode == "rewritten":  # a Python condition keeps its Python meaning
            extra = 1
        else:
            extra = fn.invert(img)
        return out, bright, c, img, fn.invert(img), fn.flip(img, horizontal=1), \
            fn.brightness(img, brightness=strength), extra * 0 + c

    for out, bright, c, img, inv, flp, br, c_again in run(pipe(0.25)):
        for i in range(BATCH):
            np.testing.assert_array_equal(out[i], inv[i] if c[i] else flp[i])
            np.testing.assert_array_equal(bright[i], br[i] if c[i] else img[i])
            np.testing.assert_array_equal(c_again[i], c[i])


def test_python_bool_conditions_are_unaffected(photos):
    log = []

    def maybe_flip(image, do_it):
        if do_it and not log:
            log.append("flipped")
            return fn.flip(image, horizontal=1)
        elif do_it is None or 0:
            return None
        log.append("kept")
        return image

    @pipeline_def(batch_size=4, num_threads=2, seed=1, enable_conditionals=True)
    def pipe(flag):
        img, _ = images(photos)
        a = maybe_flip(img, flag)
        total = 0
        for k in range(3):  # a Python loop, unrolled
            if k % 2 == 0:
                total += k
            else:
                continue
        b = fn.invert(img) if total == 2 else img
        return a, b, fn.cast(img, dtype="uint8")

    for flag in (True, False):
        log.clear()
        p = pipe(flag)
        assert "select" not in p.serialize() and "if " not in p.serialize().split("return")[0]
        a, b, img = p.run()
        for i in range(4):
            np.testing.assert_array_equal(np.array(a[i]), np.array(img[i])[:, ::-1] if flag
                                          else np.array(img[i]))
            np.testing.assert_array_equal(np.array(b[i]), 255 - np.array(img[i]))
        assert log == (["flipped"] if flag else ["kept"])


def test_data_node_ifs_in_an_unrolled_python_loop(photos):
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=23, enable_conditionals=True)
    def pipe():
        img, _ = images(photos)
        orig = img
        flips = []
        for _ in range(3):
            c = fn.random.coin_flip()
            flips.append(c)
            if c:
                img = fn.invert(img)
        return (img, orig) + tuple(flips)

    for out, orig, *flips in run(pipe()):
        for i in range(BATCH):
            n = sum(int(f[i]) for f in flips)
            np.testing.assert_array_equal(out[i], 255 - orig[i] if n % 2 else orig[i])


class SubclassPipe(stoker.Pipeline):
    """DALI's other style: a Pipeline subclass whose define_graph uses `if`."""

    def __init__(self, values):
        super().__init__(batch_size=BATCH, num_threads=2, seed=29, enable_conditionals=True)
        self.values = values
        self.offset = 7.0

    def shifted(self, x, c):
        if not c:
            x = x - self.offset
        return x

    def define_graph(self):
        x = fn.external_source(source=[self.values], cycle=True)
        c = fn.random.coin_flip(dtype="bool")
        return self.shifted(x, c), c, x


def test_pipeline_subclass_define_graph():
    p = SubclassPipe([np.array([float(i)], np.float32) for i in range(BATCH)])
    p.build()
    y, c, x = (t.as_array().ravel() for t in p.run())
    np.testing.assert_array_equal(y, np.where(c.astype(bool), x, x - 7))


def test_literal_in_one_branch_becomes_a_constant():
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=2, enable_conditionals=True)
    def pipe():
        c = fn.random.coin_flip(dtype="bool")
        if c:
            v = 0.5
        else:
            v = fn.random.uniform(range=[10.0, 11.0])
        return v, c

    v, c = (t.as_array() for t in pipe().run())
    c = c.astype(bool)
    assert v.dtype == np.float32
    assert np.all(v[c] == np.float32(0.5))
    assert np.all((v[~c] >= 10) & (v[~c] < 11))
    assert 0 < c.sum() < BATCH


def test_serialized_conditional_pipeline_round_trips(photos):
    @pipeline_def(batch_size=8, num_threads=2, seed=6, enable_conditionals=True)
    def pipe():
        img, _ = images(photos)
        c = fn.random.coin_flip(dtype="bool")
        if c:
            img = fn.invert(img)
        return img, c

    p = pipe()
    text = p.serialize()
    assert "if random_coin_flip" in text and "img = select(" in text
    q = stoker.Pipeline.deserialize(text)
    for _ in range(2):
        a, b = p.run(), q.run()
        for x, y in zip(a, b):
            for i in range(8):
                np.testing.assert_array_equal(np.array(x[i]), np.array(y[i]))


# ---- errors -------------------------------------------------------------------------------

def test_variable_assigned_in_one_branch_only_then_used():
    @pipeline_def(batch_size=4, enable_conditionals=True)
    def pipe():
        c = fn.random.coin_flip()
        if c:
            only_here = fn.random.uniform()
        return only_here

    with pytest.raises(InvalidArgumentError, match="'only_here'.*only in the true branch"):
        pipe()

    @pipeline_def(batch_size=4, enable_conditionals=True)
    def pipe2():
        c = fn.random.coin_flip()
        if c:
            pass
        else:
            only_else = fn.random.uniform()
        return fn.cast(only_else, dtype="float64")

    with pytest.raises(InvalidArgumentError, match="'only_else'.*only in the false branch"):
        pipe2()


def test_variable_assigned_in_one_branch_and_unused_is_fine():
    @pipeline_def(batch_size=4, enable_conditionals=True)
    def pipe():
        c = fn.random.coin_flip()
        x = fn.random.uniform(range=[0.0, 1.0])
        if c:
            scratch = fn.random.uniform()  # noqa: F841 (never used)
            x = x + 1.0
        return x

    (x,) = pipe().run()
    assert len(x) == 4


def test_branches_with_different_dtypes_name_the_variable(photos):
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=11, enable_conditionals=True)
    def pipe():
        img, _ = images(photos)
        c = fn.random.coin_flip()
        if c:
            picture = img
        else:
            picture = img * 0.5  # float32
        return picture

    p = pipe()
    with pytest.raises(StokerError, match="'picture': the branches disagree"):
        p.build()
        p.run()


def test_branches_on_different_devices_are_refused(photos):
    """One branch's value on the GPU, the other's on the CPU: refused where the pipeline is
    defined, naming the variable and each branch's device (no GPU needed to see it)."""
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=11, device_id=0, enable_conditionals=True)
    def pipe():
        img, _ = images(photos)
        if fn.random.coin_flip():
            picture = img.gpu()
        else:
            picture = img
        return picture

    with pytest.raises(TypeError, match=r"'picture'.*disagree in device \(branch 0: CPU, branch 1: GPU\)"):
        pipe()


def test_return_value_of_helper_only_in_one_branch():
    def half(x, c):
        if c:
            return x * 0.5

    @pipeline_def(batch_size=4, enable_conditionals=True)
    def pipe():
        return half(fn.random.uniform(), fn.random.coin_flip())

    with pytest.raises(InvalidArgumentError, match=r"return value of half\(\)"):
        pipe()


def test_return_from_a_loop_inside_a_data_node_branch_is_refused():
    def first_match(x, idx):
        for k in range(3):
            if idx == k:
                return x + float(k)
        return x

    @pipeline_def(batch_size=4, enable_conditionals=True)
    def pipe():
        return first_match(fn.random.uniform(), fn.random.choice(a=[3]))

    with pytest.raises(UnsupportedError, match="left early"):
        pipe()


def test_if_on_a_data_node_without_enable_conditionals():
    @pipeline_def(batch_size=4)
    def pipe():
        c = fn.random.coin_flip()
        if c:
            return fn.random.uniform()
        return fn.random.normal()

    with pytest.raises(StateError, match="enable_conditionals=True"):
        pipe()
    with pytest.raises(StateError, match="enable_conditionals=True"):
        bool(fn.random.coin_flip())


def test_lambda_with_if_on_data_node_says_it_is_not_rewritten():
    check = lambda c: 1 if c else 0  # noqa: E731 (lambdas are called as they are)

    def call_it(c):
        return check.__call__(c)

    @pipeline_def(batch_size=4, enable_conditionals=True)
    def pipe():
        return call_it(fn.random.coin_flip())

    with pytest.raises(StateError, match="not one stoker rewrites"):
        pipe()


def test_data_source_in_a_branch_is_refused(photos):
    @pipeline_def(batch_size=4, enable_conditionals=True)
    def pipe():
        if fn.random.coin_flip():
            data, _ = fn.readers.file(files=photos)
        else:
            data, _ = fn.readers.file(files=photos[::-1])
        return data

    with pytest.raises(InvalidArgumentError, match="data source cannot be inside a conditional"):
        pipe()


def test_gpu_operator_in_a_branch_is_accepted_but_a_gpu_condition_is_not():
    """GPU operators may sit in branches (they run on the branch's sub-batch: see
    test_gpu_conditionals.py on the GPU machine); the condition must come from the CPU."""
    gpu_ops = [name for name, s in _schema.registry().items()
               if "gpu" in s.devices and "cpu" in s.devices and name in ("flip", "cast")]
    if not gpu_ops:
        pytest.skip("no operator with a GPU backend in this build")
    with stoker.Pipeline(batch_size=2):
        c = fn.random.coin_flip()
        x = fn.random.uniform(shape=[4, 4, 3])
        with conditional.when(c):
            y = fn.cast(x, dtype="uint8", device="gpu")
        assert y.device == "gpu"
        with pytest.raises(UnsupportedError, match="is on the GPU; conditions are read per sample"):
            with conditional.when(c.gpu()):
                pass


# ---- the explicit API ----------------------------------------------------------------------

def test_switch_and_when_without_rewriting(photos):
    branches = [lambda x: fn.flip(x, horizontal=1), fn.invert,
                lambda x: fn.brightness(x, brightness=0.5)]

    @pipeline_def(batch_size=BATCH, num_threads=2, seed=8)
    def pipe():
        img, _ = images(photos)
        k = fn.random.choice(a=[3])
        out = conditional.switch(k, branches, img, name="augmented")
        c = fn.random.coin_flip(dtype="bool")
        with conditional.when(c):
            inverted = fn.invert(img)
        maybe = fn.select(c, img, inverted)
        return (out, k, maybe, c, img) + tuple(b(img) for b in branches)

    p = pipe()
    assert "augmented = select(" in p.serialize()
    seen = set()
    for out, k, maybe, c, img, *refs in run(p, batches=2):
        for i in range(BATCH):
            np.testing.assert_array_equal(out[i], refs[int(k[i])][i])
            np.testing.assert_array_equal(maybe[i], 255 - img[i] if c[i] else img[i])
            seen.add(int(k[i]))
    assert seen == {0, 1, 2}


def test_switch_merges_tuples_and_numbers():
    @pipeline_def(batch_size=BATCH, num_threads=2, seed=10)
    def pipe():
        k = fn.random.choice(a=[3])
        a, b = conditional.switch(k, [lambda: (fn.random.uniform(range=[0.0, 1.0]), 1.5),
                                      lambda: (fn.random.uniform(range=[5.0, 6.0]), 2.5),
                                      lambda: (7.0, 3.5)])
        return a, b, k

    a, b, k = (t.as_array() for t in pipe().run())
    lo = np.array([0.0, 5.0, 7.0])[k]
    assert np.all((a >= lo) & (a < lo + 1))
    np.testing.assert_array_equal(b, np.array([1.5, 2.5, 3.5], np.float32)[k])


def test_switch_index_out_of_range_fails_naming_the_merge():
    @pipeline_def(batch_size=8, num_threads=1, seed=3)
    def pipe():
        k = fn.random.choice(a=[3])  # 2 has no branch
        return conditional.switch(k, [lambda: fn.random.uniform(), lambda: fn.random.normal()],
                                  name="two_way")

    with pytest.raises(StokerError, match="'two_way'"):
        pipe().run()


def test_explicit_api_argument_errors():
    with stoker.Pipeline(batch_size=2):
        k = fn.random.choice(a=[2])
        with pytest.raises(InvalidArgumentError, match="must be a DataNode"):
            conditional.switch(1, [lambda: 0])
        with pytest.raises(InvalidArgumentError, match="between 1 and 16"):
            conditional.switch(k, [lambda: 0] * 17)
        with pytest.raises(InvalidArgumentError, match="must be a DataNode"):
            with conditional.when(True):
                pass
        with pytest.raises(InvalidArgumentError, match="different Python values"):
            conditional.switch(k, [lambda: "a", lambda: "b"])
