"""Checkpoints (DALI's enable_checkpointing / checkpoint() / checkpoint=): a pipeline
built from a checkpoint goes on with exactly the batches the original gave after it —
samples, order, random draws — for every reader, mid-epoch and across epochs, and an
iterator's state_dict / load_state_dict resumes a PyTorch-style training loop mid-epoch.
The reference is the uninterrupted run."""

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.plugin.base import LastBatchPolicy
from stoker.plugin.numpy import ClassificationIterator

from test_sampling import datasets, identity, reader  # noqa: F401  (the fixture)


def make(kind, paths, checkpoint=None, prefetch=2, **kw):
    @stoker.pipeline_def(batch_size=8, num_threads=2, seed=5, prefetch_queue_depth=prefetch,
                         enable_checkpointing=True)
    def pipe():
        return reader(kind, paths, **kw), fn.random.uniform(range=[0.0, 1.0])

    p = pipe(checkpoint=checkpoint)
    p.build()
    return p


def take(kind, p, batches):
    out = []
    for _ in range(batches):
        ids, u = p.run()
        out.append(([identity(kind, ids[i]) for i in range(len(ids))],
                    [float(np.asarray(u[i])) for i in range(len(u))]))
    return out


@pytest.mark.parametrize("kind", ["file", "numpy", "webdataset", "tfrecord"])
@pytest.mark.parametrize("mode", [{}, {"random_shuffle": True}, {"streaming": True, "random_shuffle": True}],
                         ids=["in-order", "shuffled", "streaming"])
def test_resumed_pipeline_goes_on_with_the_same_batches(datasets, kind, mode):
    if "streaming" in mode and kind not in ("webdataset", "tfrecord"):
        pytest.skip("streaming is for multi-sample files")
    for cut in (0, 5, 13, 26):  # 13 batches per epoch of 100: mid-epoch and at an epoch's end
        whole = make(kind, datasets[kind], **mode)
        take(kind, whole, cut)
        checkpoint = whole.checkpoint()
        after = take(kind, whole, 16)
        resumed = make(kind, datasets[kind], checkpoint=checkpoint, prefetch=3, **mode)
        assert take(kind, resumed, 16) == after, (cut, checkpoint)


def test_checkpoint_is_the_state_after_the_batches_handed_out(datasets, tmp_path):
    p = make("file", datasets["file"])
    start = p.checkpoint()
    assert start.splitlines()[:2] == ["stoker-checkpoint 1", "ordinal 0"]
    p.schedule_run()  # made ahead, not handed out: the checkpoint stays
    assert p.checkpoint() == start
    p.run()
    path = tmp_path / "ckpt.txt"
    text = p.checkpoint(filename=str(path))
    assert "ordinal 8" in text and path.read_text() == text


def test_a_checkpoint_of_another_data_set_is_refused(datasets):
    text = make("numpy", datasets["numpy"]).checkpoint()
    with pytest.raises(stoker.InvalidArgumentError, match="has 8 samples, the checkpoint was taken over 100"):
        make("numpy", datasets["numpy"][:8], checkpoint=text)
    with pytest.raises(stoker.InvalidArgumentError, match="checkpoint must be the text"):
        make("file", datasets["file"], checkpoint=42)


def test_iterator_state_dict_resumes_mid_epoch(datasets):
    """A training loop saves state_dict() mid-epoch; rebuilt from it, the loop sees the
    rest of that epoch and then the next ones exactly as without the interruption."""
    def iterator(checkpoint=None):
        @stoker.pipeline_def(batch_size=8, num_threads=2, seed=5)
        def pipe():
            return reader("file", datasets["file"], random_shuffle=True), fn.random.uniform(range=[0.0, 1.0])
        return ClassificationIterator(pipe(checkpoint=checkpoint), reader_name="Reader",
                                      last_batch_policy=LastBatchPolicy.PARTIAL)

    def labels(batch):
        return batch[0]["data"][:, 0].tolist(), batch[0]["label"].tolist()

    it = iterator()
    for _ in range(5):
        next(it)
    state = it.state_dict()
    rest = [labels(b) for b in it]
    it.reset()
    following = [labels(b) for b in it]
    resumed = iterator(checkpoint=state["checkpoints"][0])
    resumed.load_state_dict(state)
    assert [labels(b) for b in resumed] == rest
    resumed.reset()
    assert [labels(b) for b in resumed] == following
    assert sorted(sum((r[0] for r in following), [])) == list(range(100))
    with pytest.raises(stoker.InvalidArgumentError, match="built with checkpoint="):
        iterator().load_state_dict(state)


def test_gpu_pipelines_resume_too(datasets, fake_gpu):
    """Through the GPU stage (the stand-in backend of tests/fake_gpu)."""

    def gpu_make(checkpoint=None):
        @stoker.pipeline_def(batch_size=8, num_threads=2, seed=5, device_id=0)
        def pipe():
            return reader("numpy", datasets["numpy"], random_shuffle=True).gpu(), fn.random.uniform(range=[0.0, 1.0])
        p = pipe(checkpoint=checkpoint)
        p.build()
        return p

    def batches(p, n):
        out = []
        for _ in range(n):
            ids, u = p.run()
            host = ids.as_cpu()
            out.append(([int(np.asarray(host.at(i))[0]) for i in range(len(host))],
                        [float(np.asarray(u[i])) for i in range(len(u))]))
        return out

    whole = gpu_make()
    batches(whole, 7)
    text = whole.checkpoint()
    assert batches(gpu_make(text), 10) == batches(whole, 10)
