"""The data set formats through the Python API: readers.webdataset (shards written by
Python's tarfile), readers.tfrecord (records framed and CRC32C'd by a writer in this file,
tf.train.Example protobufs encoded by hand), readers.numpy (numpy.save), shuffling and
sharding, and `stoker convert` read back through both readers."""

import io
import os
import shutil
import struct
import subprocess
import tarfile

import numpy as np
import pytest

import stoker
from stoker import fn, ops, tfrecord as tfrec
from stoker.errors import DecodeError, InvalidArgumentError, StokerError, UnsupportedError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = os.path.join(ROOT, "data", "photos")
BUILD = os.environ.get("STK_BUILD_DIR", os.path.join(ROOT, "build"))


def photo(name):
    with open(os.path.join(PHOTOS, name), "rb") as f:
        return f.read()


def run_batches(pipe, n):
    """n batches, as one list per output of per-sample NumPy arrays (copies)."""
    outs = None
    for _ in range(n):
        batch = pipe.run()
        if outs is None:
            outs = [[] for _ in batch]
        for k, tl in enumerate(batch):
            outs[k].extend(np.array(s) for s in tl)
    return outs


def build_and_run(define, batch_size, n=1, **pipe_kwargs):
    """Builds a one-off pipeline around `define` (a function returning the outputs)."""
    pipe = stoker.pipeline_def(define, batch_size=batch_size, num_threads=2, **pipe_kwargs)()
    return pipe, run_batches(pipe, n)


# ---- independent writers ----

def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data):
    """CRC-32C (Castagnoli), reflected, bit by table."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n):
    n &= (1 << 64) - 1  # negative int64s take ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    tag = varint(num << 3 | wire)
    return tag + (varint(len(payload)) + payload if wire == 2 else payload)


class Floats(list):
    """Marks a FloatList (an empty list would otherwise be an Int64List)."""


def feature(value, packed=True):
    """A tf.train.Feature: bytes -> BytesList, a list -> Int64List, Floats -> FloatList
    (packed or one tag per value)."""
    if isinstance(value, bytes):
        return field(1, 2, field(1, 2, value))
    if not isinstance(value, Floats):
        if packed:
            body = field(1, 2, b"".join(varint(v) for v in value))
        else:
            body = b"".join(field(1, 0, varint(v)) for v in value)
        return field(3, 2, body)
    if packed:
        body = field(1, 2, struct.pack(f"<{len(value)}f", *value))
    else:
        body = b"".join(field(1, 5, struct.pack("<f", v)) for v in value)
    return field(2, 2, body)


def example(features, packed=True):
    """A tf.train.Example: Features (field 1) holding map<string, Feature> entries."""
    entries = b"".join(field(1, 2, field(1, 2, k.encode()) + field(2, 2, feature(v, packed)))
                       for k, v in features.items())
    return field(1, 2, entries)


def write_tfrecord(path, records):
    """TFRecord framing; returns DALI index lines (offset, size) per record."""
    index = []
    with open(path, "wb") as f:
        for data in records:
            length = struct.pack("<Q", len(data))
            index.append((f.tell(), 16 + len(data)))
            f.write(length + struct.pack("<I", masked_crc(length)) + data +
                    struct.pack("<I", masked_crc(data)))
    return index


def write_shard(path, members, fmt):
    """A tar shard by Python's tarfile: members are (name, bytes), or (name, None) for a
    directory; `fmt` is tarfile.GNU_FORMAT / PAX_FORMAT (with a global 'g' header and
    per-member 'x' headers) / USTAR_FORMAT."""
    pax = {"comment": "a global header"} if fmt == tarfile.PAX_FORMAT else None
    with tarfile.open(path, "w", format=fmt, pax_headers=pax) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
                continue
            info.size, info.mtime = len(data), 1_700_000_000
            if fmt == tarfile.PAX_FORMAT:
                info.pax_headers = {"comment": "written by the stoker tests"}
            tar.addfile(info, io.BytesIO(data))


def test_the_test_writers_match_published_values():
    # CRC-32C check value of "123456789" (RFC 3720 / iSCSI); protobuf varint examples.
    assert crc32c(b"123456789") == 0xE3069283
    assert varint(300) == b"\xac\x02" and varint(-1) == b"\xff" * 9 + b"\x01"


# ---- WebDataset ----

JPGS = ["rocket.jpg", "retina.jpg"]
PNGS = ["camera.png"]
LONG_DIR = "class_with_a_rather_long_directory_name/" + "x" * 90 + "/"


@pytest.fixture(scope="module")
def wds_shards(tmp_path_factory):
    """Two shards: GNU with a >100-byte name and a directory, pax with per-member headers.
    Returns (paths, [(key, image bytes, cls bytes, raw int32 bytes or None)])."""
    d = tmp_path_factory.mktemp("wds")
    samples = [
        (LONG_DIR + "sample0", photo("rocket.jpg"), b"3", np.arange(5, dtype="<i4").tobytes()),
        ("sample1", photo("camera.png"), b"0", np.array([-7], "<i4").tobytes()),
        ("sub.dir/sample2", photo("retina.jpg"), b"12", None),
        # > 100 bytes and not ASCII: only the pax 'path' record holds the whole name
        ("d\u00e9j\u00e0/" + "y" * 100 + "/sample3", b"\xff\xd8tiny", b"1",
         np.array([1, 2], "<i4").tobytes()),
    ]

    def members(ss):
        out = []
        for key, img, cls, raw in ss:
            ext = "png" if img.startswith(b"\x89PNG") else "jpg"
            out += [(f"{key}.{ext}", img), (f"{key}.cls", cls)]
            if raw is not None:
                out.append((f"{key}.raw.bin", raw))
        return out

    a, b = str(d / "shard-000000.tar"), str(d / "shard-000001.tar")
    write_shard(a, [("class_with_a_rather_long_directory_name", None)] + members(samples[:2]),
                tarfile.GNU_FORMAT)
    write_shard(b, members(samples[2:]), tarfile.PAX_FORMAT)
    with tarfile.open(a) as t:  # the GNU long name really is there
        assert any(len(m.name) > 100 for m in t.getmembers())
    return [a, b], samples


def test_webdataset_reads_what_tarfile_wrote(wds_shards):
    paths, samples = wds_shards
    pattern = paths[0].replace("000000", "{000000..000001}")

    def define():
        return fn.readers.webdataset(paths=pattern, ext=["jpg;png", "cls", "raw.bin"],
                                     dtypes=["uint8", "uint8", "int32"], name="Reader")

    pipe, (imgs, cls, raw) = build_and_run(define, batch_size=len(samples))
    assert pipe.epoch_size("Reader") == len(samples)
    for k, (_key, img, c, r) in enumerate(samples):
        assert imgs[k].dtype == np.uint8 and imgs[k].tobytes() == img
        assert cls[k].tobytes() == c
        want = np.frombuffer(r, "<i4") if r is not None else np.zeros(0, np.int32)
        assert raw[k].dtype == np.int32 and np.array_equal(raw[k], want)  # missing: empty


def test_webdataset_single_ext_gives_one_node_and_skip_policy(wds_shards):
    paths, samples = wds_shards
    node = fn.readers.webdataset(paths=paths, ext="cls")
    assert isinstance(node, stoker.DataNode)

    def define():
        return fn.readers.webdataset(paths=paths, ext=["cls", "raw.bin"], name="Reader",
                                     missing_component_behavior="skip")

    with_raw = [s for s in samples if s[3] is not None]
    pipe, (cls, _raw) = build_and_run(define, batch_size=len(with_raw))
    assert pipe.epoch_size("Reader") == len(with_raw)
    assert [c.tobytes() for c in cls] == [s[2] for s in with_raw]


def test_webdataset_class_form(wds_shards):
    paths, samples = wds_shards
    reader = ops.readers.Webdataset(paths=paths, ext=["jpg;png", "cls"])
    _pipe, (imgs, cls) = build_and_run(lambda: reader(), batch_size=len(samples))
    assert [i.tobytes() for i in imgs] == [s[1] for s in samples]


def test_webdataset_bad_input(tmp_path, wds_shards):
    paths, _ = wds_shards
    data = open(paths[1], "rb").read()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(data[:4000])  # inside the first member's data (after 'g', 'x', header)
    with pytest.raises(DecodeError, match="cut.tar' is truncated: member 'sub.dir/sample2.jpg'"):
        build_and_run(lambda: fn.readers.webdataset(paths=str(cut), ext="jpg"), batch_size=1)
    with pytest.raises(StokerError, match="sub.dir/sample2' of '.*shard-000001.tar"):  # no raw.bin
        build_and_run(lambda: fn.readers.webdataset(
            paths=paths, ext=["cls", "raw.bin"], missing_component_behavior="error"), batch_size=1)
    with pytest.raises(InvalidArgumentError, match="ext"):
        fn.readers.webdataset(paths=paths, ext=[])
    with pytest.raises(InvalidArgumentError, match="ext"):
        fn.readers.webdataset(paths=paths)


# ---- TFRecord ----

def tf_records():
    """Examples and what each feature should read back as."""
    rocket, tiny = photo("rocket.jpg"), b"\x00\x01\xff binary \x00"
    return [
        {"image/encoded": rocket, "label": [7], "bbox": Floats([0.25, -1.5, 3.0e-8, 1e30]),
         "ids": [1, -2, 2 ** 40], "mat": Floats([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])},
        {"image/encoded": tiny, "label": [-5], "bbox": Floats(), "ids": [0],
         "mat": Floats([0.5] * 6)},
        {"image/encoded": b"", "label": [2 ** 62], "ids": [], "mat": Floats([6, 5, 4, 3, 2, 1.5])},
    ]


FEATURES = {
    "image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
    "label": tfrec.FixedLenFeature([1], tfrec.int64, -1),
    "bbox": tfrec.VarLenFeature(tfrec.float32, -2.0),
    "ids": tfrec.VarLenFeature(tfrec.int64),
    "mat": tfrec.FixedLenFeature([2, 3], tfrec.float32),
    "absent": tfrec.FixedLenFeature([2], tfrec.int64, [8, 9]),
}


@pytest.fixture(scope="module")
def tfrecord_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("tfrec")
    path = str(d / "data.tfrecord")
    recs = tf_records()
    # record 1 unpacked, the others packed: the reader must take both encodings
    index = write_tfrecord(path, [example(r, packed=(i != 1)) for i, r in enumerate(recs)])
    idx = str(d / "data.idx")
    with open(idx, "w") as f:
        f.writelines(f"{o} {s}\n" for o, s in index)
    return path, idx, recs


@pytest.mark.parametrize("with_index", [False, True])
def test_tfrecord_reads_hand_encoded_examples(tfrecord_file, with_index):
    path, idx, recs = tfrecord_file

    def define():
        out = fn.readers.tfrecord(path=path, index_path=idx if with_index else None,
                                  features=FEATURES, name="Reader")
        assert isinstance(out, dict) and list(out) == list(FEATURES)
        return tuple(out.values())

    pipe, got = build_and_run(define, batch_size=len(recs))
    got = dict(zip(FEATURES, got))
    assert pipe.epoch_size("Reader") == len(recs)
    for k, r in enumerate(recs):
        enc = got["image/encoded"][k]
        assert enc.dtype == np.uint8 and enc.ndim == 1 and enc.tobytes() == r["image/encoded"]
        assert got["label"][k].dtype == np.int64 and got["label"][k].tolist() == r["label"]
        # missing or present but empty: the default (no default: an empty tensor)
        want_bbox = np.float32(r.get("bbox") or [-2.0])
        assert got["bbox"][k].dtype == np.float32 and np.array_equal(got["bbox"][k], want_bbox)
        assert got["ids"][k].dtype == np.int64 and got["ids"][k].tolist() == r["ids"]
        assert got["mat"][k].shape == (2, 3)
        assert np.array_equal(got["mat"][k], np.float32(r["mat"]).reshape(2, 3))
        assert got["absent"][k].tolist() == [8, 9]


def test_tfrecord_list_form_and_class_form(tfrecord_file):
    path, idx, recs = tfrecord_file

    def lists():
        return fn.readers.tfrecord(path=path, feature_names=["label", "bbox"],
                                   feature_types=["int64", "float32"],
                                   feature_kinds=["fixed", "var"], feature_ndims=[1, 0],
                                   feature_shapes=[1])

    _p, (labels, _bbox) = build_and_run(lists, batch_size=len(recs))
    assert [x.tolist() for x in labels] == [r["label"] for r in recs]
    reader = ops.readers.TFRecord(path=path, index_path=idx,
                                  features={"label": tfrec.FixedLenFeature([], tfrec.int64)})
    _p, (labels,) = build_and_run(lambda: reader()["label"], batch_size=len(recs))
    assert [x.shape for x in labels] == [()] * len(recs)
    assert [int(x) for x in labels] == [r["label"][0] for r in recs]


def test_tfrecord_feature_errors(tfrecord_file):
    path, _idx, _ = tfrecord_file
    with pytest.raises(InvalidArgumentError, match="non-empty dict"):
        fn.readers.tfrecord(path=path, features={})
    with pytest.raises(InvalidArgumentError, match="'x' must be a stoker.tfrecord"):
        fn.readers.tfrecord(path=path, features={"x": tfrec.int64})
    with pytest.raises(InvalidArgumentError, match="not both"):
        fn.readers.tfrecord(path=path, features={"x": tfrec.VarLenFeature(tfrec.int64)},
                            feature_names=["x"])
    with pytest.raises(InvalidArgumentError, match="integers"):
        fn.readers.tfrecord(path=path, features={"x": tfrec.VarLenFeature(tfrec.int64, 0.5)})
    with pytest.raises(InvalidArgumentError, match="dtype"):
        tfrec.FixedLenFeature([1], "int32")
    with pytest.raises(InvalidArgumentError, match="partial shape"):
        tfrec.VarLenFeature([2, -1], tfrec.float32)
    with pytest.raises(StokerError, match="label"):  # 2 values where one or 3 are needed
        build_and_run(lambda: fn.readers.tfrecord(path=path, features={
            "label": tfrec.FixedLenFeature([3], tfrec.int64, [1, 2])})["label"], batch_size=1)
    with pytest.raises(StokerError, match="'absent'"):  # missing, no default
        build_and_run(lambda: fn.readers.tfrecord(path=path, features={
            "absent": tfrec.FixedLenFeature([1], tfrec.int64)})["absent"], batch_size=1)


def test_tfrecord_bad_crc_is_an_error_naming_the_file_or_skipped(tmp_path, tfrecord_file):
    path, _idx, recs = tfrecord_file
    data = bytearray(open(path, "rb").read())
    rec0 = 16 + len(example(recs[0]))
    data[rec0 + 12 + 5] ^= 0x40  # a byte of record 1's Example
    bad = tmp_path / "flipped.tfrecord"
    bad.write_bytes(bytes(data))

    def define():
        return fn.readers.tfrecord(path=str(bad), features={
            "label": tfrec.FixedLenFeature([1], tfrec.int64)})["label"]

    with pytest.raises(DecodeError, match=f"flipped.tfrecord.*CRC.*offset {rec0}"):
        build_and_run(define, batch_size=3)
    pipe, (labels,) = build_and_run(define, batch_size=3, on_error="skip")
    stats = pipe.stats()
    assert stats["skipped"] == 1 and "flipped.tfrecord" in stats["skipped_samples"][0]
    # the epoch's two good records, each once: the bad one left the batch
    good = sorted(r["label"][0] for i, r in enumerate(recs) if i != 1)
    assert sorted(int(x[0]) for x in labels) == good


def test_tfrecord_truncated_file_names_it(tmp_path, tfrecord_file):
    path, _idx, _ = tfrecord_file
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(open(path, "rb").read()[:-7])
    with pytest.raises(DecodeError, match="cut.tfrecord.*truncated"):
        build_and_run(lambda: fn.readers.tfrecord(path=str(cut), features={
            "label": tfrec.FixedLenFeature([1], tfrec.int64)})["label"], batch_size=1)


# ---- NumPy ----

NPY_CASES = [
    np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
    np.arange(-6, 6, dtype=np.int16).reshape(3, 4),
    np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3),
    np.arange(10, dtype=">f8") / 7,  # big-endian
    np.array([[True, False, True], [False, False, True]]),
    np.array([2 ** 62, -3, 0], dtype=np.int64),
    np.arange(6, dtype=">u4").reshape(2, 3),
]


@pytest.mark.parametrize("arr", NPY_CASES, ids=lambda a: a.dtype.str)
def test_numpy_reader_reads_numpy_save(tmp_path, arr):
    files = []
    for order in ("C", "F"):
        path = tmp_path / f"{order}.npy"
        np.save(path, np.asarray(arr, order=order))
        files.append(str(path))
    v2 = tmp_path / "v2.npy"
    with open(v2, "wb") as f:
        np.lib.format.write_array(f, np.asfortranarray(arr), version=(2, 0))
    files.append(str(v2))
    assert np.load(files[1]).flags.f_contiguous or arr.ndim < 2

    _p, (out,) = build_and_run(lambda: fn.readers.numpy(files=files), batch_size=len(files))
    for got in out:
        assert got.dtype == arr.dtype.newbyteorder("=") and got.shape == arr.shape
        assert np.array_equal(got, arr)


def test_numpy_reader_refuses_pickles_and_reads_regions(tmp_path):
    arr = np.arange(30, dtype=np.float32).reshape(5, 6)
    np.save(tmp_path / "a.npy", arr)
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(UnsupportedError, match="obj.npy"):
        build_and_run(lambda: fn.readers.numpy(files=[str(tmp_path / "obj.npy")]), batch_size=1)
    _p, (out,) = build_and_run(lambda: fn.readers.numpy(
        file_root=str(tmp_path), files=["a.npy"], roi_start=[1, 2], roi_end=[4, 5]), batch_size=1)
    assert np.array_equal(out[0], arr[1:4, 2:5])


# ---- shuffling and sharding (through the WebDataset and TFRecord readers) ----

@pytest.fixture(scope="module")
def cls_shards(tmp_path_factory):
    """12 samples whose .cls is their index, over 3 shards of 5, 4 and 3."""
    d = tmp_path_factory.mktemp("cls")
    paths, k = [], 0
    for s, n in enumerate((5, 4, 3)):
        members = []
        for _ in range(n):
            members.append((f"s{k:03d}.cls", str(k).encode()))
            k += 1
        paths.append(str(d / f"part-{s}.tar"))
        write_shard(paths[-1], members, tarfile.USTAR_FORMAT)
    return paths, k


def cls_epochs(paths, batch, epochs, **reader_kwargs):
    def define():
        return fn.readers.webdataset(paths=paths, ext="cls", name="Reader", **reader_kwargs)

    pipe = stoker.pipeline_def(define, batch_size=batch, num_threads=1, seed=5)()
    meta = pipe.reader_meta("Reader")
    shard = meta["epoch_size_padded"] // meta["number_of_shards"] if meta["pad_last_batch"] else meta["shard_size"]
    per_epoch = -(-shard // batch)
    (vals,) = run_batches(pipe, per_epoch * epochs)
    vals = [int(v.tobytes()) for v in vals]
    n = per_epoch * batch if meta["pad_last_batch"] else shard  # a batch never crosses an epoch
    return [vals[e * n:(e + 1) * n] for e in range(epochs)], pipe.reader_meta("Reader")


def test_shuffle_after_epoch_is_a_new_global_permutation_each_epoch(cls_shards):
    paths, n = cls_shards
    epochs, _ = cls_epochs(paths, 4, 3, shuffle_after_epoch=True, seed=77)
    for e in epochs:
        assert sorted(e) == list(range(n))
    assert len({tuple(e) for e in epochs}) == 3 and epochs[0] != list(range(n))
    # mixed across shards: the first 5 samples do not all come from the first shard
    assert set(epochs[0][:5]) != set(range(5))
    again, _ = cls_epochs(paths, 4, 3, shuffle_after_epoch=True, seed=77)
    other, _ = cls_epochs(paths, 4, 3, shuffle_after_epoch=True, seed=78)
    assert again == epochs and other != epochs


def test_shards_are_disjoint_and_covering_every_epoch(cls_shards):
    paths, n = cls_shards
    for shuffle in (False, True):
        per_shard = [cls_epochs(paths, 2, 2, num_shards=3, shard_id=s, stick_to_shard=True,
                                shuffle_after_epoch=shuffle, seed=3)[0] for s in range(3)]
        for e in range(2):
            parts = [per_shard[s][e] for s in range(3)]
            assert sorted(sum(parts, [])) == list(range(n))
            if not shuffle:
                assert parts == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_pad_last_batch_repeats_the_last_sample(cls_shards):
    paths, n = cls_shards
    # 12 samples, 5 shards: floor(k*12/5) gives sizes 2, 2, 3, 2, 3; padded to 2 batches of 2
    sizes = []
    for s in range(5):
        (epoch,), meta = cls_epochs(paths, 2, 1, num_shards=5, shard_id=s, stick_to_shard=True,
                                    pad_last_batch=True)
        lo, hi = s * n // 5, (s + 1) * n // 5
        assert meta["epoch_size_padded"] == 15  # 5 shards * ceil(12/5), as DALI
        assert epoch == list(range(lo, hi)) + [hi - 1] * (4 - (hi - lo))
        sizes.append(hi - lo)
    assert sizes == [2, 2, 3, 2, 3]


def test_tfrecord_shuffle_and_shards_through_features(tmp_path):
    paths = []
    for f in range(2):
        paths.append(str(tmp_path / f"t{f}.tfrecord"))
        write_tfrecord(paths[-1], [example({"i": [f * 5 + k]}) for k in range(5)])

    def read(**kw):
        def define():
            return fn.readers.tfrecord(path=paths, features={
                "i": tfrec.FixedLenFeature([], tfrec.int64)}, name="R", **kw)["i"]
        _p, (vals,) = build_and_run(define, batch_size=5, n=2)
        return [int(v) for v in vals]

    assert read() == list(range(10))
    shuffled = read(shuffle_after_epoch=True, seed=4)
    assert sorted(shuffled) == list(range(10)) and shuffled != list(range(10))
    assert read(shuffle_after_epoch=True, seed=4) == shuffled
    a = read(num_shards=2, shard_id=0, stick_to_shard=True)
    b = read(num_shards=2, shard_id=1, stick_to_shard=True)
    assert a == [0, 1, 2, 3, 4] * 2 and b == [5, 6, 7, 8, 9] * 2


# ---- stoker convert ----

@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("imgfolder") / "train"
    for label, (cls, names) in enumerate((("cats", ["chelsea.png", "rocket.jpg"]),
                                          ("space", ["retina.jpg", "camera.png", "coffee.png"]))):
        os.makedirs(d / cls)
        for name in names:
            shutil.copy(os.path.join(PHOTOS, name), d / cls / name)
    return d


def source_samples(folder):
    """(bytes, label) of the ImageFolder, classes labelled by sorted directory name."""
    out = []
    for label, cls in enumerate(sorted(os.listdir(folder))):
        for name in sorted(os.listdir(folder / cls)):
            out.append(((folder / cls / name).read_bytes(), label))
    return out


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "stoker")), reason="no stoker CLI")
@pytest.mark.parametrize("shuffle", [False, True])
def test_convert_round_trip_through_both_readers(tmp_path, image_folder, shuffle):
    src = source_samples(image_folder)
    extra = ["--shuffle", "--seed", "9"] if shuffle else []
    for to in ("wds", "tfrecord"):
        subprocess.run([os.path.join(BUILD, "stoker"), "convert", str(image_folder), "--to", to,
                        "--out", str(tmp_path / to), "--shard-size", "2", *extra],
                       check=True, capture_output=True, timeout=120)
    assert sorted(os.listdir(tmp_path / "wds")) == [f"shard-00000{i}.{e}" for i in range(3)
                                                   for e in ("idx", "tar")]
    shards = "shard-{000000..000002}"

    def wds():
        return fn.readers.webdataset(paths=str(tmp_path / "wds" / f"{shards}.tar"),
                                     index_paths=str(tmp_path / "wds" / f"{shards}.idx"),
                                     ext=["jpg;png", "cls"])

    def tfr():
        out = fn.readers.tfrecord(
            path=str(tmp_path / "tfrecord" / f"{shards}.tfrecord"),
            index_path=str(tmp_path / "tfrecord" / f"{shards}.idx"),
            features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                      "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
        return out["image/encoded"], out["image/class/label"]

    _p, (w_img, w_cls) = build_and_run(wds, batch_size=len(src))
    _p, (t_img, t_lab) = build_and_run(tfr, batch_size=len(src))
    w = [(i.tobytes(), int(c.tobytes())) for i, c in zip(w_img, w_cls)]
    t = [(i.tobytes(), int(lab[0])) for i, lab in zip(t_img, t_lab)]
    assert w == t  # same order, same bytes, same labels
    assert sorted(w) == sorted(src)
    assert (w == src) != shuffle


def test_file_reader_paired_list(tmp_path):
    """readers.file(paired=True): image + mask from a list with two paths per line; both
    files of a sample travel together through shuffling; a malformed line names itself."""
    import stoker
    from stoker import fn
    pairs = []
    for i in range(6):
        img, mask = tmp_path / f"img{i}.bin", tmp_path / f"mask{i}.bin"
        img.write_bytes(bytes([i]) * (10 + i))
        mask.write_bytes(bytes([100 + i]) * (3 + i))
        pairs.append((img.name, mask.name, i))
    lst = tmp_path / "pairs.txt"
    lst.write_text("# image mask label\n" + "".join(f"{a} {b} {c}\n" for a, b, c in pairs))

    @stoker.pipeline_def(batch_size=3, num_threads=2, seed=1)
    def pipe():
        image, mask, label = fn.readers.file(file_list=str(lst), paired=True, random_shuffle=True,
                                             initial_fill=4, name="Reader")
        return image, mask, label

    p = pipe()
    p.build()
    seen = set()
    for _ in range(4):
        image, mask, label = p.run()
        for k in range(3):
            i = int(np.asarray(label[k])[0])
            assert bytes(np.asarray(image[k])) == bytes([i]) * (10 + i)
            assert bytes(np.asarray(mask[k])) == bytes([100 + i]) * (3 + i)
            seen.add(i)
    assert seen == set(range(6))

    bad = tmp_path / "bad.txt"
    bad.write_text("img0.bin mask0.bin 0\nimg1.bin 1\n")

    @stoker.pipeline_def(batch_size=1)
    def bad_pipe():
        return fn.readers.file(file_list=str(bad), paired=True)

    with pytest.raises(stoker.StokerError, match=r"bad.txt:2"):
        bad_pipe().build()
