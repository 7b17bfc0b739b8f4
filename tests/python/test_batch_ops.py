"""Batch-level operators (STK_OPF_BATCH): batch_permutation, permute_batch, mixup, cutmix,
and the executor's batch barrier they rely on, plus random.beta.

References: NumPy re-implementations of torchvision.transforms.v2 MixUp / CutMix (the
published formulas: `x.roll(1, 0) * (1 - lam) + x * lam` in float32; CutMix's box
`int(0.5 * sqrt(1 - lam) * side)` about the centre, clamped, and lam corrected to
1 - box area / image area), torchvision itself when it is importable (with its lambda and
centre draws pinned), and hand-checked invariants (permutations, fixed points, the
mean and variance of Beta(a, b)). DALI 2.4 (the oracle venv) gives batch_permutation an
int32 scalar per sample and permute_batch out[i] = in[indices[i]]."""

import math

import numpy as np
import pytest

import stoker
from stoker import fn, pipeline_def, _schema
from stoker.errors import StokerError

OPS = {"batch_permutation", "permute_batch", "mixup", "cutmix", "random.beta"}
pytestmark = pytest.mark.skipif(not OPS <= set(_schema.registry()),
                                reason="batch operators not in this build")

N = 6


def arrays(tl):
    tl = tl.as_cpu() if hasattr(tl, "as_cpu") else tl
    return [np.array(tl[i]) for i in range(len(tl))]


def run(build, batches=1, batch_size=N, threads=2, seed=5, **kw):
    """Runs build() (returning a tuple of nodes) for `batches` batches; a list per batch
    of a list per output of NumPy samples."""
    @pipeline_def(batch_size=batch_size, num_threads=threads, seed=seed, **kw)
    def pipe():
        return build()

    return run_pipe(pipe, batches)


def run_pipe(pipe, batches=1):
    p = pipe()
    p.build()
    out = []
    for _ in range(batches):
        o = p.run()
        o = o if isinstance(o, (list, tuple)) else [o]
        out.append([arrays(tl) for tl in o])
    return out


def feed(samples, layout=None):
    return fn.external_source(source=[samples], cycle=True, layout=layout)


def float_images(n=N, h=5, w=7, c=3, seed=0):
    r = np.random.default_rng(seed)
    return [r.uniform(0, 255, (h, w, c)).astype(np.float32) for _ in range(n)]


# ---- batch_permutation / permute_batch ----

def test_batch_permutation_draws_a_permutation_per_batch():
    outs = run(lambda: (fn.batch_permutation(),), batches=8)
    perms = [tuple(int(v) for v in b[0]) for b in outs]
    for p in perms:
        assert sorted(p) == list(range(N))
    assert all(np.array(b[0][0]).dtype == np.int32 and np.array(b[0][0]).shape == ()
               for b in outs)
    assert len(set(perms)) > 1, "every batch drew the same permutation"


def test_no_fixed_points_and_repetitions():
    outs = run(lambda: (fn.batch_permutation(no_fixed_points=True),
                        fn.batch_permutation(allow_repetitions=True, no_fixed_points=True),
                        fn.batch_permutation(allow_repetitions=True)), batches=20)
    repeated = False
    for b in outs:
        derange, rep_nofix, rep = ([int(v) for v in o] for o in b)
        assert sorted(derange) == list(range(N))
        assert all(derange[i] != i for i in range(N))
        assert all(0 <= v < N and v != i for i, v in enumerate(rep_nofix))
        assert all(0 <= v < N for v in rep)
        repeated |= len(set(rep)) < N
    assert repeated, "allow_repetitions never repeated an index in 20 batches of 6"


def test_no_fixed_points_is_ignored_for_a_batch_of_one():
    outs = run(lambda: (fn.batch_permutation(no_fixed_points=True),), batch_size=1)
    assert int(outs[0][0][0]) == 0


def test_permute_batch_gathers_constant_and_fed_indices():
    ragged = [np.full((i + 1, 2), i, np.int16) for i in range(N)]

    def build():
        x = feed(ragged)
        idx = fn.batch_permutation()
        return idx, fn.permute_batch(x, indices=idx), fn.permute_batch(x, indices=[5, 5, 0, 1, 2, 3])

    for idx, by_idx, by_list in run(build, batches=3):
        for i in range(N):
            np.testing.assert_array_equal(by_idx[i], ragged[int(idx[i])])
        for i, j in enumerate([5, 5, 0, 1, 2, 3]):
            np.testing.assert_array_equal(by_list[i], ragged[j])
            assert by_list[i].dtype == np.int16


def test_operators_after_a_batch_operator_see_the_permuted_samples():
    """A later pass: per-sample operators (flip, arithmetic) after permute_batch, and a
    second batch operator after them."""
    imgs = [np.random.default_rng(i).integers(0, 255, (4, 5, 3), dtype=np.uint8)
            for i in range(N)]

    def build():
        x = feed(imgs, "HWC")
        idx = fn.batch_permutation(no_fixed_points=True)
        y = fn.flip(fn.permute_batch(x, indices=idx), horizontal=1)
        z = fn.permute_batch(y, indices=idx)
        return idx, y, z

    for idx, y, z in run(build, batches=2):
        for i in range(N):
            j = int(idx[i])
            np.testing.assert_array_equal(y[i], imgs[j][:, ::-1])
            np.testing.assert_array_equal(z[i], imgs[int(idx[j])][:, ::-1])


@pytest.mark.parametrize("exec_async", [True, False])
def test_same_seed_same_bytes_for_any_thread_count(exec_async):
    imgs = float_images()
    labels = [np.int32(i % 4) for i in range(N)]

    def build():
        x, l = feed(imgs, "HWC"), feed(labels)
        m, y = fn.mixup(x, l, num_classes=4, pairing="permutation")
        c, cy = fn.cutmix(x, l, num_classes=4, per_sample=True)
        return fn.batch_permutation(), m, y, c, cy

    a = run(build, batches=3, threads=1, exec_async=exec_async)
    b = run(build, batches=3, threads=4, exec_async=exec_async, prefetch_queue_depth=3)
    for ba, bb in zip(a, b):
        for oa, ob in zip(ba, bb):
            for sa, sb in zip(oa, ob):
                assert sa.tobytes() == sb.tobytes()


def test_permute_batch_errors_name_the_argument():
    x = [np.zeros((2,), np.uint8)] * N
    with pytest.raises(StokerError, match="indices"):
        run(lambda: (fn.permute_batch(feed(x), indices=[0, 1]),))
    with pytest.raises(StokerError, match=r"indices.*outside \[0, 6\)"):
        run(lambda: (fn.permute_batch(feed(x), indices=fn.constant(idata=[9], dtype="int32")),))


def test_bad_samples_leave_the_batch_before_the_barrier(photos):
    """on_error="skip": a corrupt file is dropped in the first pass (an external source has
    no replacement within its fed batch), and the batch operators see the shorter batch."""
    good = [np.fromfile(p, np.uint8) for p in photos[:3]]
    files = good + [np.frombuffer(b"\xff\xd8\xff\xe0 not a jpeg", np.uint8)] + good[:2]

    def build():
        img = fn.decoders.image(feed(files))
        img = fn.resize(img, size=[16, 16])
        idx = fn.batch_permutation(no_fixed_points=True)
        return idx, fn.permute_batch(img, indices=idx), img

    (idx, perm, img), = run(build, on_error="skip")
    assert len(idx) == 5
    assert sorted(int(v) for v in idx) == list(range(5))
    for i in range(5):
        np.testing.assert_array_equal(perm[i], img[int(idx[i])])


def test_batch_operator_inside_a_conditional_sees_its_branch_only():
    vals = [np.int32(i) for i in range(N)]

    @pipeline_def(batch_size=N, num_threads=2, seed=1, enable_conditionals=True)
    def pipe():
        v = feed(vals)
        if v >= 3:  # samples 3, 4, 5 form the branch's batch
            out = fn.permute_batch(v, indices=fn.batch_permutation(no_fixed_points=True))
        else:
            out = v + 100
        return out

    (out,), = run_pipe(pipe)
    out = [int(x) for x in out]
    assert out[:3] == [100, 101, 102]
    assert sorted(out[3:]) == [3, 4, 5] and all(out[i] != i for i in range(3, N))


# ---- mixup / cutmix against the published formulas ----

def np_mixup(x, y_onehot, lam):
    """torchvision v2 MixUp with a given lambda: the batch rolled by one."""
    x, y = np.stack(x), np.stack(y_onehot).astype(np.float32)
    xr, yr = np.roll(x, 1, 0), np.roll(y, 1, 0)
    f = np.float32
    return xr * f(1.0 - lam) + x * f(lam), yr * f(1.0 - lam) + y * f(lam)


def np_cutmix_box(lam, h, w, rx, ry):
    r = 0.5 * math.sqrt(1.0 - lam)
    rw, rh = int(r * w), int(r * h)
    x1, y1 = max(rx - rw, 0), max(ry - rh, 0)
    x2, y2 = min(rx + rw, w), min(ry + rh, h)
    return x1, y1, x2, y2, 1.0 - (x2 - x1) * (y2 - y1) / (w * h)


def np_cutmix(x, y_onehot, lam, rx, ry):
    """torchvision v2 CutMix with a given lambda and centre (HWC images)."""
    x, y = np.stack(x), np.stack(y_onehot).astype(np.float32)
    h, w = x.shape[1:3]
    x1, y1, x2, y2, lam_adj = np_cutmix_box(lam, h, w, rx, ry)
    out = x.copy()
    out[:, y1:y2, x1:x2] = np.roll(x, 1, 0)[:, y1:y2, x1:x2]
    f = np.float32
    return out, np.roll(y, 1, 0) * f(1.0 - lam_adj) + y * f(lam_adj)


def one_hot(labels, k):
    return [np.eye(k, dtype=np.float32)[int(v)] for v in labels]


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.77, 1.0])
def test_mixup_matches_torchvision_formula(lam):
    imgs, labels = float_images(), [np.int64(v) for v in [0, 3, 1, 4, 2, 4]]
    (m, y), = run(lambda: fn.mixup(feed(imgs, "HWC"), feed(labels), num_classes=5, lam=lam))
    em, ey = np_mixup(imgs, one_hot(labels, 5), lam)
    np.testing.assert_array_equal(np.stack(m), em)
    np.testing.assert_array_equal(np.stack(y), ey)


def test_mixup_soft_labels_and_uint8_rounding():
    r = np.random.default_rng(3)
    imgs = [r.integers(0, 256, (3, 4, 3), dtype=np.uint8) for _ in range(N)]
    soft = [r.dirichlet(np.ones(7)).astype(np.float32) for _ in range(N)]
    (m, y), = run(lambda: fn.mixup(feed(imgs, "HWC"), feed(soft), lam=0.35))
    em, ey = np_mixup([i.astype(np.float32) for i in imgs], soft, 0.35)
    np.testing.assert_array_equal(np.stack(m), np.clip(np.floor(em + 0.5), 0, 255).astype(np.uint8))
    assert m[0].dtype == np.uint8
    np.testing.assert_array_equal(np.stack(y), ey)
    np.testing.assert_allclose(np.stack(y).sum(1), 1.0, atol=1e-6)


@pytest.mark.parametrize("lam,center", [(0.5, (3, 2)), (0.2, (0, 0)), (0.9, (6, 4)),
                                        (0.0, (3, 2)), (1.0, (1, 1))])
def test_cutmix_matches_torchvision_formula(lam, center):
    imgs, labels = float_images(h=5, w=7), [np.int32(v) for v in [2, 0, 1, 2, 0, 1]]
    (c, y), = run(lambda: fn.cutmix(feed(imgs, "HWC"), feed(labels), num_classes=3, lam=lam,
                                    center=list(center)))
    ec, ey = np_cutmix(imgs, one_hot(labels, 3), lam, *center)
    np.testing.assert_array_equal(np.stack(c), ec)
    np.testing.assert_array_equal(np.stack(y), ey)


def test_cutmix_chw_layout_boxes_the_h_and_w_axes():
    chw = [np.transpose(i, (2, 0, 1)).copy() for i in float_images(h=6, w=8)]
    labels = [np.int32(i % 2) for i in range(N)]
    (c, _), = run(lambda: fn.cutmix(feed(chw, "CHW"), feed(labels), num_classes=2, lam=0.4,
                                    center=[5, 1]))
    hwc = [np.transpose(i, (1, 2, 0)) for i in chw]
    ec, _ = np_cutmix(hwc, one_hot(labels, 2), 0.4, 5, 1)
    np.testing.assert_array_equal(np.stack([np.transpose(i, (1, 2, 0)) for i in c]), ec)


def lam_of(y, labels, k):
    """The label weight of each sample's own class (labels all differ from the partner's)."""
    return [float(y[i][int(labels[i])]) for i in range(len(labels))]


def test_drawn_lambda_is_per_batch_unless_per_sample():
    imgs = float_images()
    labels = [np.int32(i) for i in range(N)]  # own class != partner's class
    outs = run(lambda: (*fn.mixup(feed(imgs, "HWC"), feed(labels), num_classes=N, alpha=0.7),
                        *fn.mixup(feed(imgs, "HWC"), feed(labels), num_classes=N, alpha=0.7,
                                  per_sample=True)), batches=4)
    per_batch = [lam_of(b[1], labels, N) for b in outs]
    per_sample = [lam_of(b[3], labels, N) for b in outs]
    for lams in per_batch:
        assert max(lams) - min(lams) < 1e-6
    assert len({round(l[0], 6) for l in per_batch}) > 1, "the same lambda every batch"
    assert any(max(l) - min(l) > 1e-3 for l in per_sample)
    # the image agrees with the labels' lambda: image_i = lam x_i + (1 - lam) x_{i-1}
    for b, lams in zip(outs, per_sample):
        for i in range(N):
            lam = np.float32(lams[i])
            exp = imgs[i - 1] * np.float32(1 - lams[i]) + imgs[i] * lam
            np.testing.assert_allclose(b[2][i], exp, rtol=1e-5, atol=1e-3)


def test_drawn_cutmix_box_is_consistent_with_its_label_weight():
    """Drawn lambda and centre: the pasted region is a rectangle whose area gives the
    label weight, as torchvision's lam correction."""
    imgs = [np.full((10, 12, 1), float(i), np.float32) for i in range(N)]
    labels = [np.int32(i) for i in range(N)]
    areas = []
    for c, y in run(lambda: fn.cutmix(feed(imgs, "HWC"), feed(labels), num_classes=N,
                                      per_sample=True), batches=4):
        for i in range(N):
            pasted = c[i][:, :, 0] == float((i - 1) % N)
            ys, xs = np.nonzero(pasted)
            area = pasted.sum()
            areas.append(area)
            if area:
                assert area == (np.ptp(ys) + 1) * (np.ptp(xs) + 1), "not a rectangle"
            assert abs(y[i][i] - (1 - area / 120)) < 1e-6
            assert abs(y[i][(i - 1) % N] - area / 120) < 1e-6
    assert len(set(areas)) > 3, "the drawn boxes hardly vary"


def test_pairing_permutation_mixes_with_a_batch_permutation():
    imgs = [np.full((2, 2, 1), float(i), np.float32) for i in range(N)]
    labels = [np.int32(i) for i in range(N)]
    for m, y in run(lambda: fn.mixup(feed(imgs, "HWC"), feed(labels), num_classes=N,
                                     pairing="permutation", lam=0.25), batches=3):
        partners = []
        for i in range(N):
            # y_i = 0.25 onehot(i) + 0.75 onehot(j) (or onehot(i) where j == i)
            j = int(np.argmax(y[i])) if y[i][i] < 0.9 else i
            partners.append(j)
            np.testing.assert_allclose(m[i], 0.25 * i + 0.75 * j, rtol=1e-6)
        assert sorted(partners) == list(range(N))


def test_mixup_errors_name_the_sample_and_argument():
    ragged = float_images()
    ragged[2] = np.zeros((4, 7, 3), np.float32)
    labels = [np.int32(0)] * N
    with pytest.raises(StokerError, match="shape"):
        run(lambda: fn.mixup(feed(ragged, "HWC"), feed(labels), num_classes=2))
    with pytest.raises(StokerError, match=r"num_classes"):
        run(lambda: fn.mixup(feed(float_images(), "HWC"), feed([np.int32(5)] * N), num_classes=3))
    with pytest.raises(StokerError, match="lam"):
        run(lambda: fn.mixup(feed(float_images(), "HWC"), feed(labels), num_classes=2, lam=1.5))
    with pytest.raises(StokerError, match="uint8 or float32"):
        run(lambda: fn.mixup(feed([np.zeros((2, 2, 1), np.int32)] * N, "HWC"), feed(labels),
                             num_classes=2))
    with pytest.raises(StokerError, match="center"):
        run(lambda: fn.cutmix(feed(float_images(), "HWC"), feed(labels), num_classes=2,
                              center=[100, 1]))


# ---- torchvision itself, when importable (e.g. on the GPU machine) ----

def test_against_torchvision_v2(monkeypatch):
    torch = pytest.importorskip("torch")
    v2 = pytest.importorskip("torchvision.transforms.v2")
    imgs = float_images(h=8, w=10)
    labels = [np.int64(v) for v in [0, 3, 1, 4, 2, 4]]
    x = torch.from_numpy(np.stack([np.transpose(i, (2, 0, 1)) for i in imgs]))
    t = torch.from_numpy(np.stack(labels))

    mix = v2.MixUp(alpha=1.0, num_classes=5)
    monkeypatch.setattr(mix._dist, "sample", lambda *a, **k: torch.tensor(0.62))
    ex, ey = mix(x, t)
    (m, y), = run(lambda: fn.mixup(feed(imgs, "HWC"), feed(labels), num_classes=5, lam=0.62))
    np.testing.assert_allclose(np.stack([np.transpose(i, (2, 0, 1)) for i in m]), ex.numpy(),
                               rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(np.stack(y), ey.numpy(), atol=1e-6)

    cut = v2.CutMix(alpha=1.0, num_classes=5)
    monkeypatch.setattr(cut._dist, "sample", lambda *a, **k: torch.tensor(0.45))
    draws = iter([torch.tensor([7]), torch.tensor([2])])  # r_x, then r_y
    monkeypatch.setattr(torch, "randint", lambda *a, **k: next(draws))
    ex, ey = cut(x, t)
    (c, y), = run(lambda: fn.cutmix(feed(imgs, "HWC"), feed(labels), num_classes=5, lam=0.45,
                                    center=[7, 2]))
    np.testing.assert_array_equal(np.stack([np.transpose(i, (2, 0, 1)) for i in c]), ex.numpy())
    np.testing.assert_allclose(np.stack(y), ey.numpy(), atol=1e-6)


# ---- the DALI-style recipe: random.beta + batch_permutation + permute_batch ----

def test_dali_style_mixup_recipe():
    imgs, labels = float_images(), [np.int32(v) for v in [0, 1, 2, 0, 1, 2]]

    def build():
        x, l = feed(imgs, "HWC"), fn.one_hot(feed(labels), num_classes=3)
        lam = fn.random.beta(alpha=0.4, beta=0.4)
        idx = fn.batch_permutation()
        x2, l2 = fn.permute_batch(x, indices=idx), fn.permute_batch(l, indices=idx)
        return x * lam + x2 * (1.0 - lam), l * lam + l2 * (1.0 - lam), lam, idx

    for m, y, lam, idx in run(build, batches=2):
        for i in range(N):
            j, a = int(idx[i]), np.float32(lam[i])
            np.testing.assert_allclose(m[i], imgs[i] * a + imgs[j] * (np.float32(1) - a),
                                       rtol=1e-5, atol=1e-3)
            ey = np.eye(3, dtype=np.float32)
            np.testing.assert_allclose(y[i], ey[labels[i]] * a + ey[labels[j]] * (1 - a),
                                       atol=1e-6)


# ---- random.beta ----

def test_random_beta_moments_and_per_sample_arguments():
    alphas = [np.float32(a) for a in [0.5, 2.0, 5.0, 0.5, 2.0, 5.0]]

    def build():
        a = feed(alphas)
        return (fn.random.beta(alpha=a, beta=2.0, shape=[400]),
                fn.random.beta(alpha=2.0, beta=3.0, dtype="float64"))

    out = run(build, batches=3)
    for i, a in enumerate([0.5, 2.0, 5.0]):
        v = np.concatenate([b[0][k] for b in out for k in (i, i + 3)])
        assert v.dtype == np.float32 and v.min() >= 0 and v.max() <= 1
        mean, var = a / (a + 2), a * 2 / ((a + 2) ** 2 * (a + 3))
        assert abs(v.mean() - mean) < 5 * math.sqrt(var / len(v)), (a, v.mean(), mean)
        assert abs(v.var() - var) < 0.25 * var
    scal = [b[1][k] for b in out for k in range(N)]
    assert all(s.dtype == np.float64 and s.shape == () for s in scal)


def test_random_beta_rejects_bad_parameters():
    with pytest.raises(StokerError, match="alpha"):
        run(lambda: (fn.random.beta(alpha=feed([np.float32(-1)] * N)),))


def test_checkpoint_resumes_batch_operators_with_the_same_draws(photos):
    """The batch streams are keyed by the batch's first sample: a pipeline resumed from a
    checkpoint draws the same permutations and lambdas as the uninterrupted run."""
    def make(checkpoint=None):
        @pipeline_def(batch_size=4, num_threads=2, seed=7, enable_checkpointing=True)
        def pipe():
            jpegs, labels = fn.readers.file(files=photos * 4, labels=list(range(len(photos) * 4)),
                                            random_shuffle=True)
            img = fn.resize(fn.decoders.image(jpegs), size=[12, 12])
            m, y = fn.mixup(img, labels, num_classes=len(photos) * 4, pairing="permutation")
            return m, y, fn.batch_permutation()

        p = pipe(checkpoint=checkpoint)
        p.build()
        return p

    def take(p, k):
        return [[np.array(tl[i]).tobytes() for tl in p.run() for i in range(len(tl))]
                for _ in range(k)]

    whole = make()
    take(whole, 3)
    ckpt = whole.checkpoint()
    after = take(whole, 4)
    assert take(make(ckpt), 4) == after


# ---- the GPU backends' host side, against the CPU (tests/fake_gpu runs mix.cu's maths) ----

@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_gpu_backend_matches_the_cpu_on_the_fake_device(fake_gpu, dtype):
    r = np.random.default_rng(4)
    imgs = [r.integers(0, 256, (12, 17, 3)).astype(dtype) for _ in range(N)]
    labels = [np.int32(v) for v in r.integers(0, 5, N)]

    def build():
        x, l = feed(imgs, "HWC"), feed(labels)
        idx = fn.batch_permutation()
        lam = fn.random.uniform(range=[0.0, 1.0])
        outs = []
        for dev in ("cpu", "gpu"):
            src = x if dev == "cpu" else x.gpu()
            outs += [fn.permute_batch(src, indices=idx, device=dev),
                     *fn.mixup(src, l, num_classes=5, lam=lam, device=dev),
                     # one seed for both instances: the same draws on both backends
                     *fn.cutmix(src, l, num_classes=5, per_sample=True, seed=11, device=dev),
                     *fn.mixup(src, l, num_classes=5, alpha=0.3, pairing="permutation",
                               seed=12, device=dev)]
        return tuple(outs)

    for batch in run(build, batches=2, device_id=0):
        half = len(batch) // 2
        for cpu, gpu in zip(batch[:half], batch[half:]):
            for a, b in zip(cpu, gpu):
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_a_sample_failing_after_the_barrier_leaves_the_batch(photos):
    """on_error="skip": a corrupt file reaches the decoder only after permute_batch (a later
    pass): that sample has no replacement and leaves the batch; the others keep their
    values on every output, the permutation's included."""
    good = [np.fromfile(p, np.uint8) for p in photos if p.endswith(".jpg")][:3]
    bad = np.frombuffer(b"\xff\xd8\xff\xe0 not a jpeg", np.uint8)
    files = good + good[:2] + [bad]

    def build():
        enc = feed(files)
        idx = fn.batch_permutation(seed=4)
        img = fn.resize(fn.decoders.image(fn.permute_batch(enc, indices=idx)), size=[16, 16])
        return idx, img

    refs = [np.array(x) for x in run(lambda: (fn.resize(fn.decoders.image(feed(good)), size=[16, 16]),),
                                     batch_size=3)[0][0]]
    batches = run(build, batches=3, on_error="skip")
    for idx, img in batches:
        assert len(idx) == len(img) == 5  # the permutation was drawn over all 6
        assert 5 not in [int(v) for v in idx]
        for i, j in enumerate(int(v) for v in idx):
            np.testing.assert_array_equal(img[i], refs[j % 3])
    assert len(batches) == 3
