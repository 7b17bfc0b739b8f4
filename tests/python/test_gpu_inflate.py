"""decoders.inflate on the GPU (issue 22): the GPU backend's plumbing (chunk planning, the
per-chunk records, statuses turned into errors naming the sample) against tests/fake_gpu,
which runs the kernel's decoders (src/shared/lz4.h, inflate.h) on the host; the same tests
run the CUDA kernel on a GPU machine and skip elsewhere. References: the uncompressed bytes
(NumPy), the compressed forms made by zlib, gzip and lz4, and the CPU operator."""
import gzip
import zlib

import numpy as np
import pytest

import stoker
from stoker import fn, types
from stoker.errors import StokerError

from gpu_parity import gpu_available


@pytest.fixture(params=["fake", "cuda"])
def gpu(request):
    """A GPU pipeline can run: the fake backend, or a real device (skipped without one)."""
    if request.param == "fake":
        request.getfixturevalue("fake_gpu")
    elif not gpu_available():
        pytest.skip("needs a CUDA device (runs on the GPU machine)")


def as_bytes(b):
    return np.frombuffer(b, np.uint8)


def raw_deflate(data, level=6):
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def run_both(data, feeds=None, from_gpu=True, **kw):
    """decoders.inflate on the CPU and on the GPU over one batch: (cpu, gpu) outputs as
    lists of (array, layout). `feeds`: per-sample argument values {name: (values, dtype)}."""
    def define():
        x = fn.external_source(source=lambda: list(data), layout="")
        args = dict(kw)
        for name, (values, dtype) in (feeds or {}).items():
            args[name] = fn.external_source(
                source=lambda v=values, d=dtype: [np.asarray(a, d) for a in v])
        cpu = fn.decoders.inflate(x, device="cpu", **args)
        gpu = fn.decoders.inflate(x.gpu() if from_gpu else x, device="gpu", **args)
        return cpu, gpu

    pipe = stoker.pipeline_def(define, batch_size=len(data), num_threads=1, device_id=0)()
    cpu, gpu = pipe.run()
    assert cpu.device == "cpu" and gpu.device == "gpu"
    gpu = gpu.as_cpu()
    return ([(np.asarray(cpu[i]), cpu.layout()) for i in range(len(data))],
            [(np.asarray(gpu[i]), gpu.layout()) for i in range(len(data))])


def test_deflate_chunks_every_wrapping(gpu):
    """A ragged batch: per-sample chunk counts and shapes, each sample another wrapping
    (zlib, gzip with a file name, raw, zlib followed by bytes that are ignored)."""
    rng = np.random.default_rng(5)
    frames = [[(rng.integers(0, 4, size=(h, 8)) * 1000).astype(np.uint16) for _ in range(k)]
              for k, h in ((2, 3), (1, 5), (3, 2), (2, 4))]
    packers = (zlib.compress,
               lambda b: gzip.compress(b, mtime=0),
               raw_deflate,
               lambda b: zlib.compress(b, 1) + b"\x00\x07junk")
    data, sizes, shapes = [], [], []
    for fr, pack in zip(frames, packers):
        chunks = [pack(f.tobytes()) for f in fr]
        data.append(as_bytes(b"".join(chunks)))
        sizes.append([len(c) for c in chunks])
        shapes.append(list(fr[0].shape))
    cpu, gpu = run_both(data, feeds={"chunk_sizes": (sizes, np.int32), "shape": (shapes, np.int32)},
                        algorithm="DEFLATE", dtype=types.UINT16, layout="HW")
    for i, fr in enumerate(frames):
        want = np.stack(fr)
        for got, lay in (cpu[i], gpu[i]):
            assert lay == "FHW" and got.dtype == np.uint16
            np.testing.assert_array_equal(got, want, err_msg=f"sample {i}")


def test_lz4_blocks_from_a_cpu_input(gpu):
    """LZ4 (DALI's default algorithm); the compressed bytes come from a CPU edge and are
    uploaded. Hand-made blocks (literals, an overlapping match) and, when the lz4 package
    is installed, real ones in two chunks with offsets."""
    hand = bytes([0x44]) + b"abcd" + bytes([4, 0]) + bytes([0x50]) + b"xyz12"
    data = [as_bytes(hand), as_bytes(hand)]
    cpu, gpu_out = run_both(data, from_gpu=False, shape=[17])
    for got, _ in cpu + gpu_out:
        assert bytes(got) == b"abcdabcdabcdxyz12"
    lz4 = pytest.importorskip("lz4.block")
    parts = [(np.arange(6000) % 251).astype(np.uint8).tobytes(), bytes(6000)]
    comp = [lz4.compress(p, store_size=False) for p in parts]
    data = [as_bytes(comp[0] + comp[1]), as_bytes(comp[1] + comp[0])]
    offsets = [[0, len(comp[0])], [0, len(comp[1])]]
    cpu, gpu_out = run_both(data, feeds={"chunk_offsets": (offsets, np.int64)}, shape=[6000])
    for i, order in enumerate(([0, 1], [1, 0])):
        want = np.stack([as_bytes(parts[k]) for k in order])
        for got, lay in (cpu[i], gpu_out[i]):
            assert lay == ""
            np.testing.assert_array_equal(got, want)


def test_a_damaged_chunk_names_its_sample(gpu):
    z = zlib.compress(bytes(range(200)))
    bad = bytearray(z)
    bad[-2] ^= 0x10  # the Adler-32
    data = [as_bytes(z + z), as_bytes(z + bytes(bad))]

    def define():
        x = fn.external_source(source=lambda: list(data), layout="")
        return fn.decoders.inflate(x.gpu(), algorithm="DEFLATE", shape=[200], device="gpu",
                                   chunk_sizes=[len(z), len(z)])

    pipe = stoker.pipeline_def(define, batch_size=2, num_threads=1, device_id=0)()
    with pytest.raises(StokerError, match=r"decoders.inflate.*sample 1.*chunk 1 is not a valid "
                                          r"DEFLATE stream inflating to exactly 200 bytes"):
        pipe.run()


def test_gpu_needs_one_rank_per_batch(gpu):
    z = zlib.compress(bytes(12))
    data = [as_bytes(z), as_bytes(z)]

    def define():
        x = fn.external_source(source=lambda: list(data), layout="")
        shape = fn.external_source(
            source=lambda: [np.array([12], np.int32), np.array([3, 4], np.int32)])
        return fn.decoders.inflate(x.gpu(), algorithm="DEFLATE", shape=shape, device="gpu")

    pipe = stoker.pipeline_def(define, batch_size=2, num_threads=1, device_id=0)()
    with pytest.raises(StokerError, match="sample 1.*2 dimensions here and 1 in sample 0"):
        pipe.run()


def test_bad_input_type_on_the_gpu(gpu):
    data = [np.zeros((2, 3), np.uint8)] * 2

    def define():
        x = fn.external_source(source=lambda: list(data), layout="")
        return fn.decoders.inflate(x.gpu(), shape=[6], device="gpu")

    pipe = stoker.pipeline_def(define, batch_size=2, num_threads=1, device_id=0)()
    with pytest.raises(StokerError, match="1D tensor of bytes; got uint8 with 2 dimensions"):
        pipe.run()
