"""Hostile input and misuse through the Python API (issue 19): nothing a file or a caller
does may crash or hang the interpreter; errors name the culprit and the limit. Cases that
could kill or hang the process run in a subprocess with a timeout."""

import gc
import io
import os
import struct
import subprocess
import sys
import threading
import zlib

import numpy as np
import pytest
from PIL import Image

import stoker
from stoker import fn, types
from stoker.errors import DecodeError, LimitError, StokerError, StateError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))


def pipe(define, batch_size=1, **kw):
    return stoker.pipeline_def(define, batch_size=batch_size, num_threads=2, **kw)()


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_claiming(w, h, idat=b""):
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) +
            chunk(b"IEND", b""))


def folder_with(tmp_path, name, data):
    d = tmp_path / "set" / "a"
    d.mkdir(parents=True)
    (d / name).write_bytes(data)
    return str(tmp_path / "set")


def decode_pipe(root, crop=False, **kw):
    def define():
        j, _ = fn.readers.file(file_root=root)
        if crop:
            return fn.decoders.image_random_crop(j)
        return fn.decoders.image(j)
    return pipe(define, **kw)


# ---- decompression bombs (item 3) ----

def test_png_and_jpeg_headers_claiming_65535_squared(tmp_path):
    b = io.BytesIO()
    Image.new("RGB", (16, 16)).save(b, "JPEG")
    j = bytearray(b.getvalue())
    i = j.find(b"\xff\xc0")
    j[i + 5:i + 9] = struct.pack(">HH", 65535, 65535)
    for name, data in (("x.png", png_claiming(65535, 65535)), ("x.jpg", bytes(j))):
        root = folder_with(tmp_path / name, name, data)
        with pytest.raises(LimitError, match=r"x\.(png|jpg).*max_image_pixels = 67108864"):
            decode_pipe(root).run()


def test_png_zlib_bomb_refused_before_inflating(tmp_path):
    # 16000 x 16000 RGB of zeros: 768 MB when inflated, 750 KB compressed
    w = h = 16000
    co = zlib.compressobj(9)
    row = b"\0" * (1 + 3 * w)
    data = b"".join(co.compress(row) for _ in range(h)) + co.flush()
    root = folder_with(tmp_path, "bomb.png", png_claiming(w, h, data))
    with pytest.raises(LimitError, match="bomb.png.*max_image_pixels"):
        decode_pipe(root).run()


def test_npy_header_claiming_a_huge_shape(tmp_path):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 100000), }"
    d = tmp_path / "n"
    d.mkdir()
    (d / "a.npy").write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    with pytest.raises(DecodeError, match=r"a\.npy.*truncated"):
        pipe(lambda: fn.readers.numpy(file_root=str(d))).run()


def tfrecord_claiming(path, length):
    sys.path.insert(0, os.path.join(ROOT, "tests", "data"))
    import make_format_fixtures as fx
    n = struct.pack("<Q", length)
    path.write_bytes(n + struct.pack("<I", fx.masked(fx.crc32c(n))) + b"x" * 100)


@pytest.mark.parametrize("length", [2 ** 63, 2 ** 64 - 1])
def test_tfrecord_length_near_2_64(tmp_path, length):
    p = tmp_path / "a.tfrecord"
    tfrecord_claiming(p, length)
    feats = {"x": stoker.tfrecord.FixedLenFeature([], stoker.tfrecord.int64, 0)}
    with pytest.raises(DecodeError) as e:
        pipe(lambda: list(fn.readers.tfrecord(path=[str(p)], features=feats).values())).run()
    assert f"claims {length} data bytes" in str(e.value)  # the claimed count, not a wrapped sum


def test_tar_size_field_larger_than_the_file(tmp_path):
    import tarfile
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        ti = tarfile.TarInfo("k1.jpg")
        ti.size = 10
        tf.addfile(ti, io.BytesIO(b"0123456789"))
    data = bytearray(b.getvalue())
    hdr = data[:512]
    hdr[124:136] = b"77777777777\0"
    hdr[148:156] = b" " * 8
    hdr[148:156] = ("%06o\0 " % sum(hdr)).encode()
    data[:512] = hdr
    p = tmp_path / "a.tar"
    p.write_bytes(bytes(data))
    with pytest.raises(DecodeError, match=r"a\.tar.*truncated.*k1\.jpg"):
        pipe(lambda: fn.readers.webdataset(paths=[str(p)], ext=["jpg"])).run()


def test_padded_crop_beyond_the_pixel_limit(photos):
    root = os.path.dirname(os.path.dirname(photos[0]))

    def define():
        j, _ = fn.readers.file(file_root=root)
        return fn.crop(fn.decoders.image(j), crop=[30000, 30000], out_of_bounds_policy="pad")
    with pytest.raises(LimitError, match="30000 x 30000 output image.*max_image_pixels"):
        pipe(define).run()


def test_max_batch_bytes_bounds_a_batch(photos):
    root = os.path.dirname(os.path.dirname(photos[0]))
    with pytest.raises(LimitError, match=r"max_batch_bytes \(1000000 / batch_size 2"):
        decode_pipe(root, batch_size=2, max_batch_bytes=1000000).run()
    decode_pipe(root, batch_size=2).run()  # the default holds these photographs


# ---- damaged files whatever the window (item 6) ----

def test_png_idat_damage_is_an_error_for_every_window(tmp_path):
    im = Image.open(os.path.join(ROOT, "data", "photos", "camera.png")).convert("RGB").resize((64, 64))
    b = io.BytesIO()
    im.save(b, "PNG")
    good = b.getvalue()
    start = good.find(b"IDAT") + 4
    rng = np.random.default_rng(5)
    for trial in range(12):
        bad = bytearray(good)
        at = int(rng.integers(start + 2, len(good) - 16))
        bad[at] ^= 1 << int(rng.integers(0, 8))
        root = folder_with(tmp_path / str(trial), "x.png", bytes(bad))
        for seed in (1, 2, 3):
            with pytest.raises(StokerError):
                decode_pipe(root, crop=True, seed=seed).run()


def test_truncated_jpeg_fails_whatever_the_window(tmp_path):
    data = open(os.path.join(ROOT, "data", "photos", "rocket.jpg"), "rb").read()
    root = folder_with(tmp_path, "cut.jpg", data[: len(data) * 9 // 10])
    for seed in range(6):
        with pytest.raises(DecodeError, match="cut.jpg: JPEG is truncated"):
            decode_pipe(root, crop=True, seed=seed).run()


# ---- the file system (item 6) ----

def run_py(code, timeout=60):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_fifo_in_a_file_list_and_stoker_info(tmp_path):
    fifo = tmp_path / "x.jpg"
    os.mkfifo(fifo)
    lst = tmp_path / "list.txt"
    lst.write_text("x.jpg 0\n")
    r = run_py(f"""
import stoker
from stoker import fn
def d():
    j, l = fn.readers.file(file_list={str(lst)!r})
    return fn.decoders.image(j)
try:
    stoker.pipeline_def(d, batch_size=1, num_threads=1)().run()
except Exception as e:
    print(type(e).__name__, e)
""", timeout=30)
    assert "x.jpg" in r.stdout and "regular file" in r.stdout, r.stdout + r.stderr
    shard = tmp_path / "s.tar"
    os.mkfifo(shard)
    r = run_py(f"""
import stoker
from stoker import fn
try:
    stoker.pipeline_def(lambda: fn.readers.webdataset(paths=[{str(shard)!r}], ext=["jpg"]),
                        batch_size=1, num_threads=1)().run()
except Exception as e:
    print(type(e).__name__, e)
""", timeout=30)
    assert "s.tar' is not a regular file" in r.stdout, r.stdout + r.stderr
    cli = os.path.join(BUILD, "stoker")
    if os.path.exists(cli):
        r = subprocess.run([cli, "info", str(fifo)], capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "regular file" in r.stderr
        (tmp_path / "cls").mkdir()
        os.mkfifo(tmp_path / "cls" / "y.jpg")  # a dataset summary skips it
        r = subprocess.run([cli, "info", str(tmp_path)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr


def test_numpy_file_shrinking_while_read(tmp_path):
    """A mapped file that shrank killed the process with SIGBUS; now reads fail cleanly."""
    d = tmp_path / "n"
    d.mkdir()
    arr = np.arange(1 << 20, dtype=np.float32)
    for i in range(4):
        np.save(d / f"a{i}.npy", arr)
    r = run_py(f"""
import threading, os, numpy as np, stoker
from stoker import fn
paths = [os.path.join({str(d)!r}, f"a{{i}}.npy") for i in range(4)]
full = open(paths[0], "rb").read()
stop = False
def shrink():
    while not stop:
        for p in paths:
            os.truncate(p, 1000)
            with open(p, "r+b") as f: f.write(full)
t = threading.Thread(target=shrink); t.start()
p = stoker.pipeline_def(lambda: fn.readers.numpy(file_root={str(d)!r}), batch_size=2,
                        num_threads=2, on_error="error")()
errors = ok = 0
for _ in range(200):
    try:
        p.run(); ok += 1
    except stoker.errors.StokerError as e:
        errors += 1
        assert "a" in str(e)
stop = True; t.join()
print("done", ok, errors)
""", timeout=120)
    assert r.returncode == 0 and "done" in r.stdout, (r.returncode, r.stdout, r.stderr[-2000:])


def test_embedded_nul_in_a_path():
    def define():
        j, _ = fn.readers.file(file_root="/data\0/evil")
        return j
    with pytest.raises(ValueError, match="file_root: embedded NUL"):
        pipe(define).build()
    with pytest.raises(ValueError, match="files: embedded NUL"):
        pipe(lambda: fn.readers.file(files=["a.jpg\0.png"])[0]).build()


def test_overflowing_ints_name_their_argument():
    with pytest.raises(OverflowError, match="max_image_pixels"):
        pipe(lambda: fn.external_source(name="s"), max_image_pixels=2 ** 70).build()
    with pytest.raises((OverflowError, ValueError), match="argument 'size'"):
        def define():
            return fn.decoders.image_random_crop(fn.external_source(name="s"), size=[2 ** 70, 3])
        pipe(define).build()


# ---- misuse from Python (item 4) ----

def photo_pipe(photos, **kw):
    root = os.path.dirname(os.path.dirname(photos[0]))
    return decode_pipe(root, batch_size=2, **kw)


def test_tensorlist_outlives_its_pipeline(photos):
    p = photo_pipe(photos)
    (tl,) = p.run()
    expected = np.array(tl[0]).copy()
    del p
    gc.collect()
    assert np.array_equal(np.array(tl[0]), expected)


def test_run_from_two_threads(photos):
    p = photo_pipe(photos)
    p.build()
    results = []

    def work():
        for _ in range(10):
            try:
                p.run()
                results.append("ok")
            except StateError:
                results.append("busy")
    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 20 and "ok" in results


def test_build_twice(photos):
    p = photo_pipe(photos)
    p.build()
    p.build()
    assert len(p.run()) == 1


def python_function_pipe(photos, function):
    root = os.path.dirname(os.path.dirname(photos[0]))

    def define():
        j, _ = fn.readers.file(file_root=root)
        return fn.python_function(fn.decoders.image(j), function=function)
    return pipe(define)


def test_python_function_raising_or_returning_the_wrong_type(photos):
    def boom(x):
        raise RuntimeError("boom")
    with pytest.raises(StokerError, match="RuntimeError: boom") as e:
        python_function_pipe(photos, boom).run()
    assert isinstance(e.value.__cause__, RuntimeError)
    assert str(e.value).count("python_function") <= 2  # the operator named once, not thrice
    with pytest.raises(StokerError, match="unsupported type"):
        python_function_pipe(photos, lambda x: "text").run()


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_and_system_exit_propagate_as_themselves(photos, exc):
    def stop(x):
        raise exc()
    with pytest.raises(exc):
        python_function_pipe(photos, stop).run()


def test_external_source_non_contiguous_and_wrong_dtype():
    p = pipe(lambda: fn.external_source(name="src", dtype=types.FLOAT), batch_size=2)
    p.build()
    a = np.arange(100, dtype=np.float32).reshape(10, 10)[:, ::2]
    p.feed_input("src", [a, a.T])
    (out,) = p.run()
    assert np.array_equal(np.array(out[0]), a) and np.array_equal(np.array(out[1]), a.T)
    with pytest.raises(StokerError, match="int32.*float32"):
        p.feed_input("src", [np.zeros(3, np.int32)] * 2)
        p.run()
    with pytest.raises(StokerError, match="complex64"):
        p.feed_input("src", [np.zeros(3, np.complex64)] * 2)
        p.run()


# ---- the text form and messages (item 6) ----

@pytest.mark.parametrize("body, match", [
    ("x = random_resized_crop(src, size=[4, 4], random_area=[nan, 1.0])", "random_area"),
    ("x = resize(src, resize_shorter=-1)", "'resize_shorter' = -1 is out of range"),
    ("x = crop(src, crop=[-5, -5])", "'crop' = -5 is out of range"),
    ("x = random_resized_crop(src, size=[4, 4], random_aspect_ratio=nan)", "random_aspect_ratio"),
])
def test_text_form_nan_and_negative_sizes(body, match):
    text = 'batch_size = 1\nsrc = external_source(name="src")\n' + body + "\nreturn x\n"
    with pytest.raises(StokerError, match=match) as e:
        stoker.Pipeline.deserialize(text).build()
    assert "fed by 'nan'" not in str(e.value)  # nan is a number, not an edge name


def test_messages_name_no_internal_function(tmp_path):
    root = folder_with(tmp_path, "bad.png", png_claiming(4, 4, b"junk"))
    with pytest.raises(StokerError) as e:
        decode_pipe(root).run()
    msg = str(e.value)
    assert "bad.png" in msg and "stk__" not in msg and "run_png" not in msg
    assert msg.count("decoders.image") == 1, msg


def test_ctrl_c_during_run_returns_promptly():
    """SIGINT during run() raises KeyboardInterrupt within a fraction of a second, not after
    the batch in flight; the next run() hands out that batch (none lost)."""
    r = run_py("""
import os, signal, threading, time, numpy as np, stoker
from stoker import fn
# (a job started with '&' by a non-interactive shell inherits SIGINT ignored, and Python
#  then installs no handler: install Python's own, as an interactive session has it)
signal.signal(signal.SIGINT, signal.default_int_handler)
def slow(x):
    time.sleep(3.0)
    return x
p = stoker.pipeline_def(lambda: fn.python_function(fn.external_source(name="s"), function=slow),
                        batch_size=1, num_threads=1, exec_async=False)()
p.build()
p.feed_input("s", [np.full(3, 7, np.uint8)])
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    p.run()
    print("no interrupt")
except KeyboardInterrupt:
    print("interrupted after %.2f s" % (time.monotonic() - t0))
(out,) = p.run()
print("collected", np.array(out[0]).tolist())
""", timeout=60)
    assert "interrupted after" in r.stdout, r.stdout + r.stderr
    took = float(r.stdout.split("interrupted after ")[1].split()[0])
    assert took < 1.5, r.stdout  # (before: the whole 3 s batch)
    assert "collected [7, 7, 7]" in r.stdout, r.stdout + r.stderr


def test_cli_flags_override_a_pipeline_file_only_when_given(tmp_path, photos):
    cli = os.path.join(BUILD, "stoker")
    if not os.path.exists(cli):
        pytest.skip("the CLI is not built")
    data = tmp_path / "data" / "a"
    data.mkdir(parents=True)
    for p in photos[:3]:
        (data / os.path.basename(p)).write_bytes(open(p, "rb").read())
    (data / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    spec = tmp_path / "p.txt"
    spec.write_text('batch_size = 2\nnum_threads = 1\non_error = "skip"\n'
                    'j, l = readers.file(file_root="${DATA}", name="Reader")\n'
                    'i = decoders.image(j)\nreturn i, l\n')
    import json
    r = subprocess.run([cli, "bench", "--data", str(tmp_path / "data"), "--pipeline", str(spec),
                        "--epochs", "1", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr  # on_error = "skip" from the file held
    out = json.loads(r.stdout)
    assert out["batch_size"] == 2 and out["threads"] == 1 and out["skipped"] == 1
    r = subprocess.run([cli, "bench", "--data", str(tmp_path / "data"), "--pipeline", str(spec),
                        "--epochs", "1", "--json", "--batch-size", "4", "--on-error", "error"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "broken.jpg" in r.stderr  # the flags given override


def test_tensorlist_bad_indices_and_dlpack_arguments(photos):
    (tl,) = photo_pipe(photos).run()
    with pytest.raises(IndexError, match="sample index -100 out of range"):
        tl[-100]
    with pytest.raises((OverflowError, IndexError)):
        tl[10 ** 20]
    with pytest.raises(BufferError, match="stream must be None"):  # was a SystemError
        tl.__dlpack__(stream=10 ** 30)
    with pytest.raises((OverflowError, TypeError, ValueError)):
        tl.__dlpack__(max_version=(10 ** 20, 0))


def test_gpu_stage_outputs_are_held_to_the_limits(fake_gpu):
    """A GPU operator's image output is checked against max_image_pixels before it is
    allocated, as the CPU operators' are: a resize on the GPU past it fails naming the
    operator and the limit (against the stand-in GPU backend, tests/fake_gpu)."""

    @stoker.pipeline_def(batch_size=2, num_threads=1, device_id=0, max_image_pixels=1 << 20)
    def pipe():
        x = fn.external_source(source=lambda: [np.zeros((8, 8, 3), np.uint8)] * 2, batch=True, layout="HWC")
        return fn.resize(x.gpu(), size=[2048, 2048], device="gpu")

    with pytest.raises(stoker.StokerError, match="operator 'resize_[0-9]+'.*2048 x 2048 output image has more "
                                                 "than max_image_pixels .1048576."):
        pipe().run()
