"""A PNG writer for the tests, written from the specification with NumPy and zlib: every
colour type and bit depth, Adam7, PLTE / tRNS and extra chunks, the rows Sub-filtered and
the zlib stream split over two IDAT chunks. It does not go through any PNG library, so
the decoders are checked against files no decoder under test produced."""
import struct
import zlib

import numpy as np

ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]  # (x0, y0, dx, dy) of each pass
SAMPLES = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_png(path, img, ctype, depth, interlace=False, palette=None, trns=None, extra=b""):
    s = SAMPLES[ctype]
    h, w = img.shape[0], img.shape[1] // s  # img: rows of w * s samples
    flat = img.reshape(h, w, s)
    raw = b""
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        sub = flat[y0::dy, x0::dx]
        if sub.size == 0:
            continue
        # Sub's step is the pixel size in bytes (1 below 8 bits)
        rows = sub.reshape(sub.shape[0], -1)
        data = b""
        pix_bytes = max(1, s * depth // 8)
        for row in rows:
            if depth == 16:
                rb = row.astype(">u2").tobytes()
            elif depth == 8:
                rb = row.astype(np.uint8).tobytes()
            else:
                bits = np.unpackbits(row.astype(np.uint8)[:, None], axis=1)[:, 8 - depth:]
                bits = bits.reshape(-1)
                rb = np.packbits(bits).tobytes()
            b = np.frombuffer(rb, np.uint8).astype(np.int32)
            left = np.concatenate([np.zeros(pix_bytes, np.int32), b[:-pix_bytes]])
            data += b"\x01" + ((b - left) & 255).astype(np.uint8).tobytes()
        raw += data
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, int(interlace))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    png += extra
    if palette is not None:
        png += chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    if trns is not None:
        png += chunk(b"tRNS", trns)
    z = zlib.compress(raw, 6)
    png += chunk(b"IDAT", z[: len(z) // 2]) + chunk(b"IDAT", z[len(z) // 2:]) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)
    return str(path)
