"""Legacy readers: readers.mxnet (RecordIO files written here by a hand-written writer:
magic, flag/length word, 4-byte padding, payloads split at an embedded magic, im2rec
image headers with one or several labels, the .idx file). When DALI's CPU build is
installed, the same files are read by DALI too and compared."""

import os
import struct
import subprocess

import numpy as np
import pytest

import stoker
from stoker import fn
from stoker.errors import DecodeError, InvalidArgumentError, NotFoundError, StokerError

DALI_PY = "/work/dali-venv/bin/python"
MAGIC = 0xCED7230A


def rec_chunks(payload):
    """RecordIO framing: the payload split where the magic sits at a 4-byte boundary (the
    writer drops the magic there; the reader puts it back), flags 1, 2.., 3 or 0 alone."""
    m = struct.pack("<I", MAGIC)
    parts, start = [], 0
    for i in range(0, len(payload) - 3, 4):
        if payload[i:i + 4] == m and i >= start:
            parts.append(payload[start:i])
            start = i + 4
    parts.append(payload[start:])
    out = b""
    for k, p in enumerate(parts):
        flag = 0 if len(parts) == 1 else (1 if k == 0 else 3 if k == len(parts) - 1 else 2)
        out += struct.pack("<II", MAGIC, (flag << 29) | len(p)) + p + b"\0" * (-len(p) % 4)
    return out


def image_record(labels, image, rid):
    """im2rec's payload: {flag, label, id, id2}, extra labels when flag > 0, the image."""
    if len(labels) == 1:
        head = struct.pack("<IfQQ", 0, labels[0], rid, 0)
    else:
        head = struct.pack("<IfQQ", len(labels), 0.0, rid, 0) + struct.pack(
            f"<{len(labels)}f", *labels)
    return head + image


SAMPLES = [
    ([1.0], b"first image bytes"),
    ([2.5, 7.0, -1.0], b"unaligned" + struct.pack("<I", MAGIC) + b"magic"),  # not split
    ([3.0], b"abcd" * 3 + struct.pack("<I", MAGIC) + b"tail bytes" + struct.pack("<I", MAGIC)),
    ([4.0], b""),
]


@pytest.fixture
def recordio(tmp_path):
    rec, idx = tmp_path / "data.rec", tmp_path / "data.idx"
    blob, lines = b"", []
    for k, (labels, image) in enumerate(SAMPLES):
        lines.append(f"{k}\t{len(blob)}\n")
        blob += rec_chunks(image_record(labels, image, k))
    rec.write_bytes(blob)
    idx.write_text("".join(lines))
    return str(rec), str(idx)


def read_all(rec, idx, n=4, **kw):
    def define():
        return tuple(fn.readers.mxnet(path=[rec], index_path=[idx], **kw))

    pipe = stoker.pipeline_def(define, batch_size=n, num_threads=2)()
    data, labels = pipe.run()
    return [np.array(d).tobytes() for d in data], [np.array(l).tolist() for l in labels]


def test_mxnet_records_labels_and_split_payloads(recordio):
    # The third payload really is split in parts (the test is not vacuous).
    payload = image_record(*SAMPLES[2][:1], SAMPLES[2][1], 2)
    assert rec_chunks(payload).count(struct.pack("<I", MAGIC)) > 1
    data, labels = read_all(*recordio)
    assert data == [image for _, image in SAMPLES]
    assert labels == [[1.0], [2.5, 7.0, -1.0], [3.0], [4.0]]


def test_mxnet_shards_and_shuffle(recordio):
    seen = []
    for shard in range(2):
        data, _ = read_all(*recordio, n=2, num_shards=2, shard_id=shard)
        seen += data
    assert sorted(seen) == sorted(image for _, image in SAMPLES)
    data, _ = read_all(*recordio, random_shuffle=True, seed=3)
    assert sorted(data) == sorted(image for _, image in SAMPLES)


def test_mxnet_bad_input(recordio, tmp_path):
    rec, idx = recordio
    with pytest.raises(NotFoundError, match="nope.idx"):
        read_all(rec, str(tmp_path / "nope.idx"))
    bad = tmp_path / "bad.idx"
    bad.write_text("0\t0\nzero\n")
    with pytest.raises(DecodeError, match="bad.idx' line 2"):
        read_all(rec, str(bad))
    past = tmp_path / "past.idx"
    past.write_text("0\t0\n1\t999999\n")
    with pytest.raises(DecodeError, match="past the end"):
        read_all(rec, str(past))
    shifted = tmp_path / "shifted.idx"  # offsets that miss the records' starts
    shifted.write_text("0\t4\n")
    with pytest.raises(StokerError, match="not a RecordIO image record"):
        read_all(rec, str(shifted), n=1)
    with pytest.raises(InvalidArgumentError, match="one .idx per .rec"):
        stoker.pipeline_def(lambda: tuple(fn.readers.mxnet(path=[rec, rec], index_path=[idx])),
                            batch_size=1, num_threads=1)().run()


DALI_SCRIPT = """
import sys, numpy as np
from nvidia.dali import pipeline_def, fn
@pipeline_def(batch_size=4, num_threads=1, device_id=None)
def p():
    return tuple(fn.readers.mxnet(path=[sys.argv[1]], index_path=[sys.argv[2]]))
pp = p(); pp.build(); d, l = pp.run()
np.savez(sys.argv[3], *[np.array(d[i]) for i in range(4)], *[np.array(l[i]) for i in range(4)])
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI's CPU build is not installed")
def test_mxnet_matches_dali(recordio, tmp_path):
    out = tmp_path / "d.npz"
    subprocess.run([DALI_PY, "-c", DALI_SCRIPT, *recordio, str(out)], check=True,
                   capture_output=True)
    want = np.load(out)
    data, labels = read_all(*recordio)
    assert data == [want[f"arr_{k}"].tobytes() for k in range(4)]
    assert labels == [want[f"arr_{k + 4}"].tolist() for k in range(4)]


# ---- readers.sequence ----

@pytest.fixture
def streams(tmp_path):
    """Two streams of PNG frames whose pixels name (stream, frame): 7 and 4 frames."""
    from PIL import Image

    root = tmp_path / "streams"
    for s, n in ((0, 7), (1, 4)):
        d = root / f"s{s}"
        d.mkdir(parents=True)
        for f in range(n):
            px = np.zeros((4, 5, 3), np.uint8)
            px[..., 0], px[..., 1] = s, f
            Image.fromarray(px).save(d / f"{f:05d}.png")
    return str(root)


def sequences(root, n, **kw):
    def define():
        return fn.readers.sequence(file_root=root, **kw)

    out = stoker.pipeline_def(define, batch_size=n, num_threads=2)().run()
    return [np.array(x) for x in out[0]]


def test_sequence_frames_step_and_stride(streams):
    # length 3, step 2, stride 1: stream 0 (7 frames) starts 0, 2, 4; stream 1 (4) starts 0.
    seqs = sequences(streams, 4, sequence_length=3, step=2)
    got = [[(int(q[k, 0, 0, 0]), int(q[k, 0, 0, 1])) for k in range(3)] for q in seqs]
    assert got == [[(0, 0), (0, 1), (0, 2)], [(0, 2), (0, 3), (0, 4)],
                   [(0, 4), (0, 5), (0, 6)], [(1, 0), (1, 1), (1, 2)]]
    assert seqs[0].shape == (3, 4, 5, 3) and seqs[0].dtype == np.uint8
    # stride 3: frames 0, 3, 6 of stream 0 only (stream 1 is too short).
    seqs = sequences(streams, 1, sequence_length=3, stride=3)
    assert [int(seqs[0][k, 0, 0, 1]) for k in range(3)] == [0, 3, 6]
    gray = sequences(streams, 1, sequence_length=2, image_type="GRAY")
    assert gray[0].shape == (2, 4, 5, 1)


def test_sequence_bad_input(streams, tmp_path):
    with pytest.raises(InvalidArgumentError, match="holds 8 frames"):
        sequences(streams, 1, sequence_length=8)
    with pytest.raises(NotFoundError, match="cannot open directory"):
        sequences(str(tmp_path / "none"), 1, sequence_length=2)
    (tmp_path / "streams" / "s1" / "00002.png").write_bytes(b"not a png")
    with pytest.raises(StokerError, match="00002.png"):
        sequences(streams, 4, sequence_length=3, step=2)


SEQ_SCRIPT = """
import sys, numpy as np
from nvidia.dali import pipeline_def, fn
@pipeline_def(batch_size=4, num_threads=1, device_id=None)
def p():
    return fn.readers.sequence(file_root=sys.argv[1], sequence_length=3, step=2)
pp = p(); pp.build(); o = pp.run()[0]
np.savez(sys.argv[2], *[np.array(o[i]) for i in range(4)])
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI's CPU build is not installed")
def test_sequence_matches_dali(streams, tmp_path):
    out = tmp_path / "d.npz"
    subprocess.run([DALI_PY, "-c", SEQ_SCRIPT, streams, str(out)], check=True, capture_output=True)
    want = np.load(out)
    got = sequences(streams, 4, sequence_length=3, step=2)
    for k in range(4):
        np.testing.assert_array_equal(got[k], want[f"arr_{k}"])


# ---- readers.caffe (LMDB) ----

def pb_varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out


def datum(data, label, encoded=True, chw=(0, 0, 0)):
    """Caffe's Datum by hand: channels 1, height 2, width 3, data 4, label 5, encoded 7."""
    msg = b""
    for field, v in zip((1, 2, 3), chw):
        if v:
            msg += pb_varint(field << 3) + pb_varint(v)
    msg += pb_varint(4 << 3 | 2) + pb_varint(len(data)) + data
    msg += pb_varint(5 << 3) + pb_varint(label & 0xFFFFFFFFFFFFFFFF)
    msg += b"\x32\x00"  # field 6 (float_data), empty: skipped
    if encoded:
        msg += pb_varint(7 << 3) + b"\x01"
    return msg


def write_lmdb(path, records):
    """Through mdb_load's documented dump format (hex key and value lines)."""
    lines = ["VERSION=3", "format=bytevalue", "type=btree", "HEADER=END"]
    for k, v in records:
        lines += [" " + k.hex(), " " + v.hex()]
    lines.append("DATA=END")
    os.makedirs(path)
    subprocess.run(["mdb_load", "-f", "/dev/stdin", path], input="\n".join(lines) + "\n",
                   text=True, check=True)


RAW = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)  # C, H, W


@pytest.fixture
def caffe_db(tmp_path):
    import shutil
    if not shutil.which("mdb_load"):
        pytest.skip("mdb_load (lmdb-utils) is not installed")
    path, raw = str(tmp_path / "caffe_lmdb"), str(tmp_path / "raw_lmdb")
    write_lmdb(path, [(b"00000000", datum(b"\xff\xd8jpeg-ish bytes", 3)),
                      (b"00000001", datum(b"png bytes here", -2))])
    # Raw datums (pixels, not files) in a database of their own: a batch holds one kind.
    write_lmdb(raw, [(b"a", datum(RAW.tobytes(), 9, encoded=False, chw=RAW.shape)),
                     (b"b", datum(RAW[:, ::-1].tobytes(), 4, encoded=False, chw=RAW.shape))])
    return path, raw


def caffe(path, n=3, **kw):
    def define():
        out = fn.readers.caffe(path=path if isinstance(path, list) else [path], **kw)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    return [[np.array(x) for x in tl] for tl in
            stoker.pipeline_def(define, batch_size=n, num_threads=2)().run()]


def test_caffe_datums(caffe_db):
    path, raw = caffe_db
    images, labels = caffe(path, n=2)
    assert images[0].tobytes() == b"\xff\xd8jpeg-ish bytes"
    assert images[1].tobytes() == b"png bytes here"
    assert [l.tolist() for l in labels] == [[3], [-2]] and labels[0].dtype == np.int32
    (only_labels,) = caffe(path, n=2, image_available=False)
    assert [l.tolist() for l in only_labels] == [[3], [-2]]
    images, labels = caffe(raw, n=2)
    np.testing.assert_array_equal(images[0], RAW.transpose(1, 2, 0))  # raw CHW -> HWC
    np.testing.assert_array_equal(images[1], RAW[:, ::-1].transpose(1, 2, 0))
    assert [l.tolist() for l in labels] == [[9], [4]]
    # Both databases: their records one after the other, each in key order.
    (labels,) = caffe([path, raw], n=4, image_available=False)
    assert [l.tolist() for l in labels] == [[3], [-2], [9], [4]]


def test_caffe_bad_input(caffe_db, tmp_path):
    with pytest.raises(NotFoundError, match="cannot open LMDB"):
        caffe(str(tmp_path / "none"))
    bad = str(tmp_path / "bad_lmdb")
    write_lmdb(bad, [(b"k", b"\x0a\xff")])  # a length past the end
    with pytest.raises(StokerError, match="not a Caffe Datum"):
        caffe(bad, n=1)


# ---- readers.caffe2 (LMDB of TensorProtos) ----

def pb_field(n, wt, payload):
    return pb_varint(n << 3 | wt) + (pb_varint(len(payload)) + payload if wt == 2 else payload)


def tensor_proto(dims=(), dtype=None, floats=None, ints=None, raw=None, string=None):
    """caffe2.proto's TensorProto: dims 1, data_type 2, float_data 3 and int32_data 4
    (packed), byte_data 5, string_data 6."""
    m = pb_field(1, 2, b"".join(pb_varint(d) for d in dims)) if dims else b""
    if dtype is not None:
        m += pb_varint(2 << 3) + pb_varint(dtype)
    if floats is not None:
        m += pb_field(3, 2, struct.pack(f"<{len(floats)}f", *floats))
    if ints is not None:
        m += pb_field(4, 2, b"".join(pb_varint(i & 0xFFFFFFFFFFFFFFFF) for i in ints))
    if raw is not None:
        m += pb_field(5, 2, raw)
    if string is not None:
        m += pb_field(6, 2, string)
    return m


def tensor_protos(*tensors):
    return b"".join(pb_field(1, 2, t) for t in tensors)


@pytest.fixture
def caffe2_dbs(tmp_path):
    import shutil
    if not shutil.which("mdb_load"):
        pytest.skip("mdb_load (lmdb-utils) is not installed")
    dbs = {}
    img = [tensor_proto(dtype=4, string=b"image %d" % k) for k in range(3)]
    dbs["single"] = [(b"%08d" % k, tensor_protos(img[k], tensor_proto(dtype=2, ints=[7 * k - 3])))
                     for k in range(3)]
    dbs["sparse"] = [(b"%08d" % k, tensor_protos(img[k], tensor_proto(dtype=2, ints=[k + 1, 3]),
                                                 tensor_proto(dtype=1, floats=[0.5 + k, 0.25])))
                     for k in range(3)]
    dbs["dense"] = [(b"%08d" % k, tensor_protos(img[k], tensor_proto(dtype=1,
                                                                    floats=[k, 1.5, -2, 0])))
                    for k in range(3)]
    raw = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    dbs["raw"] = [(b"r", tensor_protos(tensor_proto(dims=raw.shape, dtype=3, raw=raw.tobytes()),
                                       tensor_proto(dtype=2, ints=[5])))]
    paths = {}
    for name, recs in dbs.items():
        paths[name] = str(tmp_path / name)
        write_lmdb(paths[name], recs)
    return paths, raw


def caffe2(path, n=3, **kw):
    def define():
        out = fn.readers.caffe2(path=[path], **kw)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    return [[np.array(x) for x in tl] for tl in
            stoker.pipeline_def(define, batch_size=n, num_threads=2)().run()]


def test_caffe2_label_types(caffe2_dbs):
    paths, raw = caffe2_dbs
    images, labels = caffe2(paths["single"])
    assert [bytes(i) for i in images] == [b"image 0", b"image 1", b"image 2"]
    assert [l.tolist() for l in labels] == [[-3], [4], [11]] and labels[0].dtype == np.int32
    # Sparse: indices -> 0/1 of num_labels; weighted: the weights at the indices.
    _, labels = caffe2(paths["sparse"], label_type=1, num_labels=5)
    assert [l.tolist() for l in labels] == [[0, 1, 0, 1, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 0]]
    _, labels = caffe2(paths["sparse"], label_type=3, num_labels=5)
    assert [l.tolist() for l in labels] == [[0, 0.5, 0, 0.25, 0], [0, 0, 1.5, 0.25, 0],
                                            [0, 0, 0, 0.25, 0]]
    _, labels = caffe2(paths["dense"], label_type=2, num_labels=4)
    assert [l.tolist() for l in labels] == [[0, 1.5, -2, 0], [1, 1.5, -2, 0], [2, 1.5, -2, 0]]
    assert len(caffe2(paths["dense"], label_type=4)) == 1  # images only
    images, labels = caffe2(paths["raw"], n=1)
    np.testing.assert_array_equal(images[0], raw)
    assert labels[0].tolist() == [5]


def test_caffe2_bad_input(caffe2_dbs):
    paths, _ = caffe2_dbs
    with pytest.raises(StokerError, match="single label tensor holds 2 values"):
        caffe2(paths["sparse"])
    with pytest.raises(StokerError, match="label index 3 outside 0..2"):
        caffe2(paths["sparse"], label_type=1, num_labels=3)
    with pytest.raises(StokerError, match="dense label of 4 values for 3 labels"):
        caffe2(paths["dense"], label_type=2, num_labels=3)
    with pytest.raises(StokerError, match="additional_inputs and bbox are not supported"):
        caffe2(paths["single"], bbox=True)


C2_SCRIPT = """
import sys, numpy as np
from nvidia.dali import pipeline_def, fn
@pipeline_def(batch_size=3, num_threads=1, device_id=None)
def p():
    return tuple(fn.readers.caffe2(path=[sys.argv[1]]))
pp = p(); pp.build(); i, l = pp.run()
np.savez(sys.argv[2], *[np.array(i[k]) for k in range(3)], *[np.array(l[k]) for k in range(3)])
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI's CPU build is not installed")
def test_caffe2_single_label_matches_dali(caffe2_dbs, tmp_path):
    # (DALI 2.4's CPU reader fails on the sparse label types, so only this one is compared.)
    paths, _ = caffe2_dbs
    out = tmp_path / "d.npz"
    subprocess.run([DALI_PY, "-c", C2_SCRIPT, paths["single"], str(out)], check=True,
                   capture_output=True)
    want = np.load(out)
    images, labels = caffe2(paths["single"])
    for k in range(3):
        assert images[k].tobytes() == want[f"arr_{k}"].tobytes()
        assert labels[k].tolist() == want[f"arr_{k + 3}"].tolist()
