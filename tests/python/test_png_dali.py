"""PNG decoding's values, as DALI 2.4's CPU decoders.image gives them (docs/gpu.md, "PNG
values and DALI"): 16-bit samples rounded to 8 bits (not cut to their high byte, as
libspng's RGB8 format, OpenCV's imread and Pillow do), GRAY from colour with DALI's
fixed-point weights.

Everywhere: stoker against NumPy formulas and hand-computed values, on files written by
tests/python/png_writer.py (no PNG library), OpenCV and Pillow. With /work/dali-venv:
stoker against DALI itself, byte for byte, on a set of files covering every colour type
and bit depth, palettes with tRNS, Adam7, odd sizes and the three output types. The CPU
decoder is what is checked here; the GPU decoder computes its values with the same code
(src/shared/png_common.h), which test_gpu_png.py checks against the CPU decoder."""
import os
import struct
import subprocess
import zlib

import cv2
import numpy as np
import pytest
from PIL import Image

import stoker
from png_writer import SAMPLES, chunk, write_png
from stoker import fn

DALI_PY = "/work/dali-venv/bin/python"
RNG = np.random.default_rng(1616)
COLORS = ["RGB", "BGR", "GRAY"]


def decode(files, color, device="cpu", stats=None):
    # synchronous, so that exactly one batch has run when the stats are read
    @stoker.pipeline_def(batch_size=len(files), num_threads=2,
                         device_id=None if device == "cpu" else 0, exec_async=False,
                         exec_pipelined=False)
    def pipe():
        enc, _ = fn.readers.file(files=files)
        return fn.decoders.image(enc, output_type=color, device=device)

    p = pipe()
    p.build()
    (out,) = p.run()
    if hasattr(out, "as_cpu"):
        out = out.as_cpu()
    if stats is not None:
        stats.update(p.stats())
    return [np.asarray(out.at(i)) for i in range(len(files))]


# ---- the reference values, as NumPy formulas ---------------------------------------------

def round16(v):
    """A 16-bit sample to 8 bits, to nearest: v * 255 / 65535 = v / 257, never a tie."""
    return np.floor(np.asarray(v, np.float64) / 257.0 + 0.5).astype(np.uint8)


def gray_weighted(rgb):
    """DALI's GRAY weights (0.299 and 0.587 in 15-bit fixed point, blue the rest), as a
    real number in the samples' own scale."""
    rgb = np.asarray(rgb, np.float64)
    return (9797 * rgb[..., 0] + 19234 * rgb[..., 1] + 3737 * rgb[..., 2]) / 32768


def expected(rgb, color, depth, gray_file):
    """What a decoded pixel array should be, from its R, G, B at the file's precision
    (16-bit files: 0..65535; others: 0..255, after palette lookup and depth scaling)."""
    rgb = np.asarray(rgb, np.float64)
    if color == "GRAY":
        if gray_file:
            y = rgb[..., :1]
        else:
            y = gray_weighted(rgb)[..., None]
            # 8 bits: truncated; 16 bits: rounded at 16 bits, then rounded to 8 below
            y = np.floor(y + 0.5) if depth == 16 else np.floor(y)
        return round16(y) if depth == 16 else y.astype(np.uint8)
    out = round16(rgb) if depth == 16 else rgb.astype(np.uint8)
    return out[..., ::-1] if color == "BGR" else out


def ramp16(ctype):
    """Every 16-bit value once (256 x 256), each channel a different permutation."""
    v = np.arange(65536, dtype=np.int64).reshape(256, 256)
    planes = [v, (v * 7 + 3) % 65536, 65535 - v, (v * 13 + 11) % 65536][:SAMPLES[ctype]]
    return np.stack(planes, -1)


def as_rgb(samples, ctype):
    """R, G, B of a gray / gray+alpha / RGB / RGBA sample array (alpha dropped)."""
    return np.repeat(samples[..., :1], 3, -1) if ctype in (0, 4) else samples[..., :3]


# ---- 16-bit rounding, everywhere ---------------------------------------------------------

def written_16bit(tmp_path):
    """(path, samples, ctype): every 16-bit colour type through three writers."""
    out = []
    for ctype in (0, 2, 4, 6):
        s = ramp16(ctype)
        p = write_png(tmp_path / f"own{ctype}.png", s.reshape(256, -1), ctype, 16,
                      interlace=ctype == 4)
        out.append((p, s, ctype))
    # OpenCV writes 16-bit gray, BGR and BGRA (channels stored in that order)
    for ctype, n in ((0, 1), (2, 3), (6, 4)):
        s = ramp16(ctype)
        bgr = s[..., [2, 1, 0, 3][:n]] if n > 1 else s[..., 0]
        p = str(tmp_path / f"cv{ctype}.png")
        assert cv2.imwrite(p, bgr.astype(np.uint16))
        out.append((p, s, ctype))
    # Pillow writes 16-bit gray ("I;16")
    s = ramp16(0)
    p = str(tmp_path / "pil0.png")
    Image.fromarray(s[..., 0].astype(np.uint16)).save(p)
    out.append((p, s, 0))
    return out


@pytest.fixture(params=["cpu", "mixed"])
def device(request):
    """The CPU decoder, and the GPU decoder's maths on the fake GPU backend."""
    if request.param == "mixed":
        request.getfixturevalue("fake_gpu")
    return request.param


@pytest.mark.parametrize("color", COLORS)
def test_16bit_samples_are_rounded_to_8_bits(tmp_path, color, device):
    cases = written_16bit(tmp_path)
    stats = {}
    got = decode([p for p, _, _ in cases], color, device, stats)
    if device == "mixed":  # every file went through the GPU decoder's code
        assert stats["host_decoded"] == 0
    for (path, s, ctype), g in zip(cases, got):
        want = expected(as_rgb(s, ctype), color, 16, ctype in (0, 4))
        assert g.dtype == np.uint8 and g.shape == want.shape, path
        bad = np.argwhere(g != want)
        assert bad.size == 0, f"{path} {color}: {len(bad)} pixels differ, first at {bad[0]}"


def test_16bit_rounding_hand_values(tmp_path):
    # v / 257 to nearest: 128 -> 0.498 -> 0, 129 -> 0.502 -> 1, 0x00ff -> 0.99 -> 1,
    # 0xff00 -> 254.01 -> 254, 0xff80 -> 254.50 -> 255. The high byte would give
    # 0, 0, 0, 255, 255.
    values = [0, 128, 129, 0x00ff, 0xff00, 0xff80, 65535]
    want = [0, 0, 1, 1, 254, 255, 255]
    img = np.array(values).reshape(1, -1)
    p = write_png(tmp_path / "g.png", img, 0, 16)
    (g,) = decode([p], "RGB")
    assert g[0, :, 0].tolist() == want and np.array_equal(g[..., 0], g[..., 2])
    # GRAY from 16-bit colour: rounded at 16 bits, then to 8. (65535, 0, 0): 19594.4 ->
    # 19594 -> 76.24 -> 76; (0, 65535, 0): 38467.3 -> 38467 -> 149.68 -> 150;
    # (0, 0, 65535): 7473.9 -> 7474 -> 29.08 -> 29; (257, 257, 257): 257 -> 1.
    rgb = np.array([[[65535, 0, 0], [0, 65535, 0], [0, 0, 65535], [257, 257, 257]]])
    p = write_png(tmp_path / "c.png", rgb.reshape(1, -1), 2, 16)
    (g,) = decode([p], "GRAY")
    assert g[0, :, 0].tolist() == [76, 150, 29, 1]


@pytest.mark.parametrize("ctype,depth", [(2, 8), (6, 8), (3, 8), (3, 4)])
def test_gray_from_8bit_colour_uses_dalis_weights(tmp_path, ctype, depth):
    h, w = 61, 67
    palette = None
    if ctype == 3:
        palette = RNG.integers(0, 256, (1 << depth, 3))
        idx = RNG.integers(0, 1 << depth, (h, w))
        rgb, img = palette[idx], idx
    else:
        img = RNG.integers(0, 256, (h, w, SAMPLES[ctype]))
        rgb = img[..., :3]
    p = write_png(tmp_path / "c.png", img.reshape(h, -1), ctype, depth, palette=palette)
    (g,) = decode([p], "GRAY")
    assert np.array_equal(g, expected(rgb, "GRAY", 8, False))
    # hand values: (255, 0, 0) -> 9797 * 255 / 32768 = 76.24 -> 76; (0, 255, 0) ->
    # 149.68 -> 149 (truncated: BT.601 luma rounded would give 150); (1, 1, 1) -> 1


def test_gray_from_8bit_colour_hand_values(tmp_path):
    rgb = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [1, 1, 1], [200, 100, 50]]])
    p = write_png(tmp_path / "c.png", rgb.reshape(1, -1), 2, 8)
    (g,) = decode([p], "GRAY")
    # (200, 100, 50): (9797 * 200 + 19234 * 100 + 3737 * 50) / 32768 = 124.23 -> 124
    assert g[0, :, 0].tolist() == [76, 149, 29, 1, 124]


# ---- against DALI 2.4 (skipped without /work/dali-venv) ----------------------------------

def exif_chunk(orientation):
    """An eXIf chunk: a little-endian TIFF header and one IFD entry, Orientation."""
    tiff = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 1)
    tiff += struct.pack("<HHII", 0x0112, 3, 1, orientation) + struct.pack("<I", 0)
    return chunk(b"eXIf", tiff)


def dali_set(d):
    """{name: path}: every colour type and bit depth, palettes with tRNS, Adam7 (with
    images small enough to leave passes empty), odd sizes, gAMA (ignored by both), EXIF
    orientations, other writers' files."""
    spec = [  # name, ctype, depth, interlace, (h, w), tRNS
        ("gray1", 0, 1, False, (7, 13), None), ("gray2_i", 0, 2, True, (23, 37), None),
        ("gray4", 0, 4, False, (1, 1), None), ("gray8_i", 0, 8, True, (5, 3), None),
        ("gray8_trns", 0, 8, False, (9, 11), b"\x00\x40"),
        ("gray16", 0, 16, False, (17, 29), None), ("gray16_i", 0, 16, True, (31, 9), None),
        ("rgb8", 2, 8, False, (19, 23), None), ("rgb8_i", 2, 8, True, (9, 1), None),
        ("rgb8_trns", 2, 8, False, (8, 8), b"\x00\x10\x00\x20\x00\x30"),
        ("rgb16", 2, 16, False, (13, 17), None), ("rgb16_i", 2, 16, True, (1, 33), None),
        ("pal1_trns", 3, 1, False, (11, 21), b"\x00"),
        ("pal2", 3, 2, True, (6, 7), None), ("pal4_i", 3, 4, True, (25, 19), b"\x10\x80"),
        ("pal8_trns_i", 3, 8, True, (40, 33), bytes(range(0, 250, 3))),
        ("ga8", 4, 8, False, (15, 14), None), ("ga16_i", 4, 16, True, (12, 27), None),
        ("rgba8", 6, 8, False, (21, 22), None), ("rgba8_i", 6, 8, True, (2, 2), None),
        ("rgba16", 6, 16, False, (10, 39), None), ("rgba16_i", 6, 16, True, (18, 5), None),
    ]
    files = {}
    for name, ctype, depth, interlace, (h, w), trns in spec:
        top = 1 << depth
        palette = None
        if ctype == 3:
            n = top if depth < 8 else 200
            palette = RNG.integers(0, 256, (n, 3))
            top = n
        img = RNG.integers(0, top, (h, w * SAMPLES[ctype]))
        files[name] = write_png(d / f"{name}.png", img, ctype, depth, interlace, palette, trns)
    img = RNG.integers(0, 256, (16, 16 * 3))
    files["rgb8_gama"] = write_png(d / "rgb8_gama.png", img, 2, 8,
                                   extra=chunk(b"gAMA", struct.pack(">I", 100000)))
    # eXIf orientation: DALI applies it to PNGs too (adjust_orientation's default)
    for name, ctype, depth, o in (("rgb8_exif6", 2, 8, 6), ("rgba16_exif5", 6, 16, 5),
                                  ("gray16_exif3", 0, 16, 3), ("ga8_exif8", 4, 8, 8)):
        img = RNG.integers(0, 1 << depth, (11, 7 * SAMPLES[ctype]))
        files[name] = write_png(d / f"{name}.png", img, ctype, depth, extra=exif_chunk(o))
    # other writers: OpenCV (16-bit BGRA), Pillow (palette with transparency, LA)
    files["cv_rgba16"] = str(d / "cv_rgba16.png")
    cv2.imwrite(files["cv_rgba16"], RNG.integers(0, 65536, (14, 15, 4)).astype(np.uint16))
    pal = Image.fromarray(RNG.integers(0, 256, (20, 24, 3)).astype(np.uint8)).quantize(40)
    files["pil_p_trns"] = str(d / "pil_p_trns.png")
    pal.save(files["pil_p_trns"], transparency=5)
    files["pil_la"] = str(d / "pil_la.png")
    Image.fromarray(RNG.integers(0, 256, (9, 31, 2)).astype(np.uint8), "LA").save(files["pil_la"])
    return files


DALI_SCRIPT = r"""
import sys, numpy as np
from nvidia.dali import pipeline_def, fn, types
files = sys.argv[2:]
res = {}
for name, t in (("RGB", types.RGB), ("BGR", types.BGR), ("GRAY", types.GRAY)):
    @pipeline_def(batch_size=len(files), num_threads=1, device_id=None)
    def p():
        enc, _ = fn.readers.file(files=files)
        return fn.decoders.image(enc, device="cpu", output_type=t)
    pp = p(); pp.build(); out = pp.run()[0]
    for i in range(len(files)):
        res[f"{name}:{i}"] = np.array(out[i])
np.savez(sys.argv[1], **res)
"""


@pytest.fixture(scope="module")
def dali_pngs(tmp_path_factory):
    if not os.path.exists(DALI_PY):
        pytest.skip("no DALI oracle venv (/work/dali-venv)")
    d = tmp_path_factory.mktemp("dali_png")
    files = dali_set(d)
    names = list(files)
    out = d / "dali.npz"
    r = subprocess.run([DALI_PY, "-c", DALI_SCRIPT, str(out), *[files[n] for n in names]],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    res = np.load(out)
    return names, files, {(c, names[int(k.split(":")[1])]): res[k]
                          for c in COLORS for k in res.files if k.startswith(c + ":")}


def check_against_dali(dali_pngs, color, device):
    names, files, dali = dali_pngs
    stats = {}
    got = decode([files[n] for n in names], color, device, stats)
    if device == "mixed":  # all but the four eXIf files went through the GPU decoder
        assert stats["host_decoded"] == sum("exif" in n for n in names) == 4
    diffs = []
    for name, g in zip(names, got):
        want = dali[(color, name)]
        if g.shape != want.shape or not np.array_equal(g, want):
            n = int(np.sum(g != want)) if g.shape == want.shape else "shape"
            diffs.append(f"{name}: {n} {g.shape} vs DALI {want.shape}")
    assert not diffs, f"{color}: " + "; ".join(diffs)


@pytest.mark.parametrize("color", COLORS)
def test_png_decoding_equals_dali(dali_pngs, color):
    check_against_dali(dali_pngs, color, "cpu")


@pytest.mark.parametrize("color", COLORS)
def test_gpu_png_maths_equals_dali(dali_pngs, fake_gpu, color):
    # device="mixed" on the fake GPU backend: the GPU decoder's planning and its per-pixel
    # code (src/shared/png_common.h) run on the host; the eXIf files go to the CPU decoder
    check_against_dali(dali_pngs, color, "mixed")


def test_dalis_dtype_argument_is_refused_by_name(tmp_path):
    # DALI's decoders offer dtype=UINT16 / FLOAT, keeping a 16-bit PNG's low byte; stoker's
    # dtype scales the 8-bit decode (test_decoder_args.py), so on a 16-bit file it fails
    # naming the argument rather than returning values without their low bits
    p = write_png(tmp_path / "g.png", np.array([[0, 65535]]), 0, 16)

    @stoker.pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        enc, _ = fn.readers.file(files=[p])
        return fn.decoders.image(enc, dtype=stoker.types.UINT16)

    with pytest.raises(stoker.errors.UnsupportedError, match="dtype \"uint16\" on a 16-bit"):
        pipe().run()
