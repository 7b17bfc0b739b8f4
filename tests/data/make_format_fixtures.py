#!/usr/bin/env python3
"""Writes the dataset-format fixtures of tests/c/test_formats.c with independent writers:
Python's tarfile (USTAR, GNU long names, pax headers), a TFRecord writer below that
computes CRC32C bit by bit and encodes tf.train.Example by hand, and numpy.save /
numpy.lib.format.write_array (many dtypes, both orders, format versions 1-3).

usage: make_format_fixtures.py OUTDIR
       make_format_fixtures.py --list-tar TAR IDX OUT
       make_format_fixtures.py --list-tfrecord FILE IDX OUT

The --list modes read what stoker wrote (`stoker convert`) with independent readers
(tarfile; a CRC-checking TFRecord reader and protobuf decoder below), check the DALI
index files against them, and write one line per sample to OUT for the C test:
"<name> <size> <label>" (tar: per member; the label is the .cls text) or
"<image size> <label> <filename>" (TFRecord). They exit with status 1 on any mismatch.

Contents follow formulas the C test recomputes:
  content(name, n)[i] = (i * 31 + len(name in UTF-8) * 7 + 3) % 256
and the manifests list what each file holds.
"""
import io
import os
import struct
import sys
import tarfile

import numpy as np


def content(name, n):
    k = len(name.encode()) * 7 + 3
    return bytes((i * 31 + k) % 256 for i in range(n))


# ---------------------------------------------------------------- tar -------------------

def add(tf, name, data, manifest, tar_name, type_=tarfile.REGTYPE, pax=None):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1700000000
    info.type = type_
    if pax:
        info.pax_headers = pax
    tf.addfile(info, io.BytesIO(data))
    if type_ == tarfile.REGTYPE:
        manifest.append(f"{tar_name} {name} {len(data)}")


def write_tars(out):
    manifest = []
    # USTAR: a directory, a hidden file, a symlink, a name split into prefix/name.
    with tarfile.open(os.path.join(out, "ustar.tar"), "w", format=tarfile.USTAR_FORMAT) as tf:
        d = tarfile.TarInfo("dir")
        d.type = tarfile.DIRTYPE
        tf.addfile(d)
        for i in range(3):
            add(tf, f"dir/s{i}.jpg", content(f"dir/s{i}.jpg", 700 + 300 * i), manifest, "ustar.tar")
            add(tf, f"dir/s{i}.cls", str(i).encode(), manifest, "ustar.tar")
        add(tf, "dir/._hidden", b"mac junk", manifest, "ustar.tar")
        link = tarfile.TarInfo("dir/link.jpg")
        link.type = tarfile.SYMTYPE
        link.linkname = "s0.jpg"
        tf.addfile(link)
        long_dir = "p" * 60 + "/" + "q" * 70
        name = long_dir + "/s3.jpg"  # 138 bytes: USTAR prefix + name
        add(tf, name, content(name, 513), manifest, "ustar.tar")
        add(tf, long_dir + "/s3.cls", b"3", manifest, "ustar.tar")
    # GNU: long names through 'L' members, a large member.
    with tarfile.open(os.path.join(out, "gnu.tar"), "w", format=tarfile.GNU_FORMAT) as tf:
        base = "long_" + "x" * 150
        add(tf, base + "/a.b.jpg", content(base + "/a.b.jpg", 100000), manifest, "gnu.tar")
        add(tf, base + "/a.b.cls", b"4", manifest, "gnu.tar")
        add(tf, "short.jpg", content("short.jpg", 0), manifest, "gnu.tar")
        add(tf, "short.cls", b"5", manifest, "gnu.tar")
    # pax: UTF-8 long names, a global header, and a member whose size only pax states.
    with tarfile.open(os.path.join(out, "pax.tar"), "w", format=tarfile.PAX_FORMAT,
                      pax_headers={"comment": "global header"}) as tf:
        name = "données/" + "é" * 80 + ".jpg"
        add(tf, name, content(name, 1234), manifest, "pax.tar")
        add(tf, name[:-4] + ".cls", b"6", manifest, "pax.tar")
        f = tf.fileobj
        start = f.tell()
        add(tf, "paxsize.jpg", content("paxsize.jpg", 3000), manifest, "pax.tar",
            pax={"size": "3000"})
        add(tf, "paxsize.cls", b"7", manifest, "pax.tar")
    patch_ustar_size(os.path.join(out, "pax.tar"), start)
    with open(os.path.join(out, "tar_manifest.txt"), "w", encoding="utf-8") as m:
        m.write("\n".join(manifest) + "\n")
    # Pairs for segmentation: image + mask, over two shards; key 'c' lacks its mask.
    pairs = [("a", True), ("b", True), ("c", False)], [("d", True), ("e", True)]
    for k, shard in enumerate(pairs):
        path = os.path.join(out, f"pair-{k}.tar")
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
            for key, has_mask in shard:
                add(tf, f"{key}.jpg", content(f"{key}.jpg", 50), [], "")
                if has_mask:
                    add(tf, f"{key}.png", content(f"{key}.png", 20), [], "")
        write_dali_wds_index(path, os.path.join(out, f"pair-{k}.idx"))
    # Bad input: truncated inside a member, not a tar, a corrupt header checksum.
    data = open(os.path.join(out, "ustar.tar"), "rb").read()
    open(os.path.join(out, "trunc.tar"), "wb").write(data[:512 * 2 + 300])  # inside s0.jpg
    open(os.path.join(out, "notar.tar"), "wb").write(b"this is not a tar archive\n" * 40)
    bad = bytearray(data)
    second = 512 + 512 + 1024  # after the dir header, s0 header and 2 data blocks: s0.cls
    bad[second + 5] ^= 0x55
    open(os.path.join(out, "badsum.tar"), "wb").write(bytes(bad))


def patch_ustar_size(path, start):
    """Zeroes the USTAR size field of the member after the pax header at `start`, so only
    the pax 'size' record says how large it is (as for members over 8 GiB)."""
    data = bytearray(open(path, "rb").read())
    pax_size = int(data[start + 124:start + 136].rstrip(b"\0 ") or b"0", 8)
    hdr = start + 512 + (pax_size + 511) // 512 * 512
    assert data[hdr + 156:hdr + 157] == b"0"
    data[hdr + 124:hdr + 136] = b"00000000000\0"
    data[hdr + 148:hdr + 156] = b" " * 8
    data[hdr + 148:hdr + 156] = b"%06o\0 " % sum(data[hdr:hdr + 512])
    open(path, "wb").write(bytes(data))


def write_dali_wds_index(tar_path, idx_path):
    """DALI's wds2idx v1.2 format, from tarfile's own offsets."""
    samples = []
    with tarfile.open(tar_path) as tf:
        for m in tf.getmembers():
            if not m.isreg():
                continue
            base = m.name.rsplit("/", 1)[-1]
            dot = base.find(".")
            key = m.name[: len(m.name) - len(base) + dot]
            ext = base[dot + 1:]
            if samples and samples[-1][0] == key:
                samples[-1][1].append((ext, m.offset_data, m.size, m.name))
            else:
                samples.append((key, [(ext, m.offset_data, m.size, m.name)]))
    with open(idx_path, "w") as f:
        f.write(f"v1.2 {len(samples)}\n")
        for _, comps in samples:
            f.write(" ".join(f"{e} {o} {s} {n}" for e, o, s, n in comps) + "\n")


# ---------------------------------------------------------------- TFRecord --------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, wire, payload):
    tag = varint(num << 3 | wire)
    if wire == 2:
        return tag + varint(len(payload)) + payload
    return tag + payload


def bytes_list(values):
    return field(1, 2, b"".join(field(1, 2, v) for v in values))


def int64_list(values, packed=True):
    if packed:
        body = field(1, 2, b"".join(varint(v) for v in values))
    else:
        body = b"".join(field(1, 0, varint(v)) for v in values)
    return field(3, 2, body)


def float_list(values, packed=True):
    if packed:
        body = field(1, 2, b"".join(struct.pack("<f", v) for v in values))
    else:
        body = b"".join(field(1, 5, struct.pack("<f", v)) for v in values)
    return field(2, 2, body)


def example(features, junk=False):
    entries = b""
    for i, (key, feat) in enumerate(features):
        if i % 2:  # value before key: field order must not matter
            entries += field(1, 2, field(2, 2, feat) + field(1, 2, key.encode()))
        else:
            entries += field(1, 2, field(1, 2, key.encode()) + field(2, 2, feat))
    body = field(1, 2, entries)
    if junk:  # unknown fields are skipped
        body = field(7, 0, varint(99)) + body + field(9, 2, b"ignored")
    return body


def record(payload):
    n = struct.pack("<Q", len(payload))
    return n + struct.pack("<I", masked(crc32c(n))) + payload + struct.pack("<I", masked(crc32c(payload)))


def tf_features(i):
    f = [
        ("image/encoded", bytes_list([content(f"img{i}", 100 + 37 * i)])),
        ("label", int64_list([i * 10])),
        ("floats", float_list([i + 0.5, -float(i), 1.25 * i])),
        ("unpacked_ints", int64_list([i, i + 1], packed=False)),
        ("unpacked_floats", float_list([0.25 * i], packed=False)),
        ("var", int64_list(list(range(i)))),
        ("neg", int64_list([-(i + 1) * 1000000007])),
    ]
    if i % 2 == 0:
        f.append(("opt", int64_list([i])))
    return f


def write_tfrecords(out):
    recs = [record(example(tf_features(i), junk=(i == 1))) for i in range(6)]
    data = b"".join(recs)
    open(os.path.join(out, "data.tfrecord"), "wb").write(data)
    with open(os.path.join(out, "data.idx"), "w") as f:  # DALI's tfrecord2idx format
        off = 0
        for r in recs:
            f.write(f"{off} {len(r)}\n")
            off += len(r)
    bad = bytearray(data)
    off2 = len(recs[0]) + len(recs[1])
    bad[off2 + 12 + 5] ^= 0x01  # a data byte of record 2
    open(os.path.join(out, "badcrc.tfrecord"), "wb").write(bytes(bad))
    open(os.path.join(out, "trunc.tfrecord"), "wb").write(data[:-7])
    open(os.path.join(out, "notrec.tfrecord"), "wb").write(b"definitely not a TFRecord file" * 4)
    with open(os.path.join(out, "tf_offsets.txt"), "w") as f:
        off = 0
        for r in recs:
            f.write(f"{off}\n")
            off += len(r)


# ---------------------------------------------------------------- npy -------------------

DTYPES = ["|b1", "|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8",
          ">i2", ">i4", ">f4", ">f8", ">u8"]
NAMES = {"b": "bool", "u": "uint", "i": "int", "f": "float"}


def dtype_name(dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return "bool"
    return NAMES[dt.kind] + str(dt.itemsize * 8)


def values(shape, dt):
    n = int(np.prod(shape))
    dt = np.dtype(dt)
    base = np.arange(n, dtype=np.float64)
    if dt.kind == "b":
        v = (base % 3) == 1
    elif dt.kind == "f":
        v = (base - n / 2) * 0.75
    elif dt.kind == "i":
        v = (base * 37 - n * 11)
    else:
        v = base * 41 + 7
    return v.reshape(shape).astype(dt)


def save(out, manifest, name, arr, version=None, fortran=False):
    path = os.path.join(out, name)
    a = np.asfortranarray(arr) if fortran else np.ascontiguousarray(arr)
    if arr.ndim == 0:  # asXarray would make it 1-D
        a = arr
    with open(path, "wb") as f:
        if version:
            np.lib.format.write_array(f, a, version=version)
        else:
            np.save(f, a)
    native = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("="))
    native.tofile(path + ".raw")
    manifest.append(" ".join([name, dtype_name(arr.dtype), str(arr.ndim)] + [str(s) for s in arr.shape]))


def write_npys(out):
    d = os.path.join(out, "npy")
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    manifest = []
    shapes = [(7,), (3, 4), (2, 3, 5), (), (0, 3)]
    k = 0
    for dt in DTYPES:
        for shape in shapes:
            if shape == () and dt not in ("<f4", ">i4"):
                continue
            if shape == (0, 3) and dt != "<i8":
                continue
            for fortran in (False, True) if len(shape) > 1 else (False,):
                version = [None, (1, 0), (2, 0), (3, 0)][k % 4]
                k += 1
                name = f"a{k:03d}.npy"
                save(d, manifest, name, values(shape, dt), version=version, fortran=fortran)
    save(d, manifest, "sub/nested.npy", values((2, 2), "<i4"))
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    # Region reads: the same 3-D array in both orders.
    bad = os.path.join(out, "npybad")
    os.makedirs(bad, exist_ok=True)
    roi = np.arange(4 * 5 * 6, dtype="<i4").reshape(4, 5, 6)
    np.save(os.path.join(bad, "roi_c.npy"), roi)
    np.save(os.path.join(bad, "roi_f.npy"), np.asfortranarray(roi))
    np.save(os.path.join(bad, "roi_be.npy"), roi.astype(">i4"))
    np.save(os.path.join(bad, "object.npy"), np.array([{"a": 1}, None], dtype=object),
            allow_pickle=True)
    np.save(os.path.join(bad, "complex.npy"), np.zeros(3, np.complex64))
    np.save(os.path.join(bad, "strings.npy"), np.array(["ab", "cd"]))
    np.save(os.path.join(bad, "struct.npy"), np.zeros(2, dtype=[("x", "<i4"), ("y", "<f4")]))
    good = open(os.path.join(d, "a002.npy"), "rb").read()
    open(os.path.join(bad, "magic.npy"), "wb").write(b"\x93NUMPZ" + good[6:])
    open(os.path.join(bad, "trunc.npy"), "wb").write(good[:-3])
    open(os.path.join(bad, "version.npy"), "wb").write(good[:6] + b"\x04\x00" + good[8:])


# ---------------------------------------------------------------- checking stoker's output

def read_varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def fields(buf):
    pos = 0
    while pos < len(buf):
        tag, pos = read_varint(buf, pos)
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            v, pos = read_varint(buf, pos)
        elif wire == 2:
            n, pos = read_varint(buf, pos)
            v, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            v, pos = buf[pos:pos + 4], pos + 4
        elif wire == 1:
            v, pos = buf[pos:pos + 8], pos + 8
        else:
            raise ValueError("bad wire type")
        yield num, wire, v


def parse_example(buf):
    feats = {}
    for num, _, features in fields(buf):
        if num != 1:
            continue
        for _, _, entry in fields(features):
            key, value = None, b""
            for n, _, v in fields(entry):
                if n == 1:
                    key = v.decode()
                elif n == 2:
                    value = v
            for kind, _, lst in fields(value):
                vals = []
                for n, wire, v in fields(lst):
                    if kind == 1:
                        vals.append(bytes(v))
                    elif kind == 3 and wire == 2:
                        p = 0
                        while p < len(v):
                            x, p = read_varint(v, p)
                            vals.append(x - (1 << 64) if x >> 63 else x)
                    elif kind == 3:
                        vals.append(v - (1 << 64) if v >> 63 else v)
                feats[key] = vals
    return feats


def list_tfrecord(path, idx_path, out):
    data = open(path, "rb").read()
    index = [tuple(map(int, line.split())) for line in open(idx_path)]
    lines, off, k = [], 0, 0
    while off < len(data):
        n = struct.unpack("<Q", data[off:off + 8])[0]
        assert struct.unpack("<I", data[off + 8:off + 12])[0] == masked(crc32c(data[off:off + 8]))
        payload = data[off + 12:off + 12 + n]
        assert struct.unpack("<I", data[off + 12 + n:off + 16 + n])[0] == masked(crc32c(payload))
        assert index[k] == (off, n + 16), (index[k], off, n + 16)
        f = parse_example(payload)
        lines.append(f"{len(f['image/encoded'][0])} {f['image/class/label'][0]} "
                     f"{f['image/filename'][0].decode()}")
        off += n + 16
        k += 1
    assert k == len(index)
    open(out, "w").write("\n".join(lines) + "\n")


def list_tar(path, idx_path, out):
    lines, expected = [], []
    with tarfile.open(path) as tf:
        members = [m for m in tf.getmembers() if m.isreg()]
        labels = {}
        for m in members:
            if m.name.endswith(".cls"):
                labels[m.name[:-4]] = tf.extractfile(m).read().decode()
        for m in members:
            key, ext = m.name.split(".", 1)
            lines.append(f"{m.name} {m.size} {labels[key]}")
            expected.append((ext, m.offset_data, m.size, m.name))
    got = []
    with open(idx_path) as f:
        head = f.readline().split()
        assert head[0] == "v1.2"
        rows = [line.split() for line in f]
        assert int(head[1]) == len(rows)
        for row in rows:
            for i in range(0, len(row), 4):
                got.append((row[i], int(row[i + 1]), int(row[i + 2]), row[i + 3]))
    assert got == expected, (got, expected)
    open(out, "w").write("\n".join(lines) + "\n")


def main():
    try:
        if sys.argv[1] == "--list-tar":
            return list_tar(*sys.argv[2:5])
        if sys.argv[1] == "--list-tfrecord":
            return list_tfrecord(*sys.argv[2:5])
    except (AssertionError, KeyError, ValueError, IndexError) as e:
        print(f"check failed: {e!r}", file=sys.stderr)
        sys.exit(1)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write_tars(out)
    write_tfrecords(out)
    write_npys(out)


if __name__ == "__main__":
    main()
