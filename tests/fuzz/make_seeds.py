#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/seed-*.

usage: make_seeds.py [CORPUS_DIR]   (default: tests/fuzz/corpus next to this script)

Seeds are small on purpose (a few KB each; fuzzers mutate small inputs far faster):
thumbnails of the photographs in data/photos in every JPEG / PNG variant the decoders
handle (baseline, progressive, gray, CMYK, 4:4:4, restart markers, EXIF orientations; PNG
colour types, bit depths, interlacing, eXIf), and the dataset-format fixtures written by
tests/data/make_format_fixtures.py's writers (tar flavours, TFRecord + Example, .npy
versions and dtypes). Regression inputs (files not named seed-*) are never touched.
"""
import io
import os
import struct
import sys
import tarfile
import zlib

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "data"))
import make_format_fixtures as fx  # noqa: E402


def exif_tiff(orientation, big_endian=False):
    e = ">" if big_endian else "<"
    head = (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8)
    ifd = struct.pack(e + "H", 1) + struct.pack(e + "HHIHH", 0x0112, 3, 1, orientation, 0)
    return head + ifd + struct.pack(e + "I", 0)


def thumbs():
    out = []
    for name in sorted(os.listdir(os.path.join(ROOT, "data", "photos"))):
        if name.endswith((".jpg", ".png")):
            im = Image.open(os.path.join(ROOT, "data", "photos", name)).convert("RGB")
            im.thumbnail((40, 32))
            out.append(im)
    return out


def jpegs(ims):
    seeds = []
    def save(im, **kw):
        b = io.BytesIO()
        im.save(b, "JPEG", **kw)
        seeds.append(b.getvalue())
    for i, im in enumerate(ims[:3]):
        save(im, quality=90)
        save(im, quality=75, progressive=True)
        save(im.convert("L"), quality=85)
    save(ims[0], quality=90, subsampling=0)
    save(ims[1].convert("CMYK"), quality=90)
    save(ims[2], quality=80, exif=b"Exif\0\0" + exif_tiff(6))
    save(ims[3], quality=80, exif=b"Exif\0\0" + exif_tiff(3, big_endian=True))
    b = io.BytesIO()
    ims[4].save(b, "JPEG", quality=80)
    data = b.getvalue()
    # restart markers by hand are hard with PIL; a truncated file and a bare header instead
    seeds.append(data[: len(data) * 2 // 3])
    seeds.append(data[:300])
    return seeds


def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def pngs(ims):
    seeds = []
    def save(im, **kw):
        b = io.BytesIO()
        im.save(b, "PNG", **kw)
        seeds.append(b.getvalue())
    save(ims[0])
    save(ims[1].convert("RGBA"))
    save(ims[2].convert("L"))
    save(ims[3].convert("1"))
    save(ims[4].convert("P", palette=Image.ADAPTIVE, colors=16))
    save(ims[5].convert("LA"))
    save(ims[6], optimize=True)
    a16 = (np.asarray(ims[0].convert("L"), dtype=np.uint16) * 257)
    save(Image.fromarray(a16))
    # interlaced: PIL cannot write Adam7; a 3x2 RGB image written by hand
    raw = b"".join(b"\0" + bytes(range(r * 9, r * 9 + 9)) for r in range(2))
    ihdr = struct.pack(">IIBBBBB", 3, 2, 8, 2, 0, 0, 1)
    rows = [b"\0" + bytes(3)] * 1  # pass 1: pixel (0,0)
    body = b"".join(rows) + b"\0" + bytes(3) + b"\0" + bytes(6) + b"\0" + bytes(9)
    sig = b"\x89PNG\r\n\x1a\n"
    seeds.append(sig + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(body)) +
                 png_chunk(b"IEND", b""))
    ihdr = struct.pack(">IIBBBBB", 3, 2, 8, 2, 0, 0, 0)
    seeds.append(sig + png_chunk(b"IHDR", ihdr) + png_chunk(b"eXIf", exif_tiff(8)) +
                 png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b""))
    return seeds


def tars(tmp):
    os.makedirs(tmp, exist_ok=True)
    fx.write_tars(tmp)
    seeds = []
    for name in ("ustar.tar", "gnu.tar", "pax.tar"):
        data = open(os.path.join(tmp, name), "rb").read()
        seeds.append(data[:16384])
    return seeds


def wds_indexes():
    return [b"v1.2 2\njpg 512 100 a.jpg cls 1024 2 a.cls\njpg 1536 50 b.jpg\n",
            b"v1.2 1\njpg 0 0 x.jpg txt 512 10 x.txt json 1024 3 x.json\n"]


def tfrecords():
    recs = [fx.record(fx.example(fx.tf_features(i), junk=(i == 1))) for i in range(3)]
    return [b"".join(recs), recs[0], fx.example(fx.tf_features(2))]


def npys():
    seeds = []
    arrays = [np.arange(12, dtype="<f4").reshape(3, 4), np.arange(6, dtype=">i2").reshape(2, 3),
              np.asfortranarray(np.arange(24, dtype="u1").reshape(2, 3, 4)),
              np.array([True, False]), np.zeros((0, 5), "<f8"), np.array(3.5, "<f2"),
              np.arange(8, dtype="<i8")]
    for i, a in enumerate(arrays):
        b = io.BytesIO()
        version = [(1, 0), (2, 0), (3, 0)][i % 3]
        np.lib.format.write_array(b, a, version=version)
        seeds.append(b.getvalue())
    return seeds


TEXTS = [
    'batch_size = 4\nseed = 7\non_error = "skip"\n'
    'jpegs, labels = readers.file(file_root="/data", random_shuffle=true, name="Reader")\n'
    'crops = decoders.image_random_crop(jpegs, output_type="RGB", size=[224, 224])\n'
    'images = resize(crops, size=[224, 224])\nmirror = random.coin_flip(probability=0.5)\n'
    'out = crop_mirror_normalize(images, mirror=mirror, mean=[123.675, 116.28, 103.53], '
    'std=[58.395, 57.12, 57.375], dtype="float32", output_layout="CHW")\nreturn out, labels\n',
    'jpegs, labels = readers.file(file_root="/d", name="R")\n'
    'images = decoders.image(jpegs, output_type="RGB")\n'
    'crops = random_resized_crop(images, size=[224, 224])\n'
    'a = rotate(crops, angle=30.5, fill_value=0)\nreturn a, labels\n',
    'x = readers.numpy(file_root="/n", name="N")\ny = cast(x, dtype="float16")\nreturn y\n',
    'j, k = readers.webdataset(paths=["a.tar", "b\\"c.tar"], ext=["jpg", "cls"])\n'
    'i = decoders.image(j, device="mixed")\nr = resize(i, resize_shorter=256.0, device="gpu")\n'
    'return r, k\n',
]

LISTS = [b"a/1.jpg 0\nb/2.jpg 1\n# comment\n\n  spaced name.jpg  7\n",
         b"img/a.png mask/a.png 3\nimg/b.png mask/b.png 4\n",
         b"/abs/path.jpg\nrel.jpg\n"]


def write(corpus, target, seeds):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith("seed-"):
            os.remove(os.path.join(d, f))
    for i, s in enumerate(seeds):
        with open(os.path.join(d, f"seed-{i:02d}"), "wb") as f:
            f.write(s if isinstance(s, bytes) else s.encode())


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
    ims = thumbs()
    j, p = jpegs(ims), pngs(ims)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        t = tars(tmp)
    write(corpus, "fuzz_jpeg", j)
    write(corpus, "fuzz_png", p)
    write(corpus, "fuzz_exif", [exif_tiff(o, o % 2 == 0) for o in range(1, 9)] +
          [b"Exif\0\0" + exif_tiff(6)])
    write(corpus, "fuzz_tar", t)
    write(corpus, "fuzz_wds_index", wds_indexes())
    write(corpus, "fuzz_tfrecord", tfrecords())
    write(corpus, "fuzz_npy", npys())
    write(corpus, "fuzz_text", TEXTS)
    write(corpus, "fuzz_file_list", LISTS)
    write(corpus, "fuzz_cli_info", [j[0], p[0], t[0], tfrecords()[0], npys()[0]])


if __name__ == "__main__":
    main()
