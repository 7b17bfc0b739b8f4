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
