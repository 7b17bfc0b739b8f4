"""Pillow reference outputs for tests/c/test_color_ops.c.

Usage: python make_pil_refs.py TASKS_FILE

Each line of TASKS_FILE is
    OP IN_PATH H W C OUT_PATH [PARAMS...]
where IN_PATH holds H*W*C raw uint8 bytes (HWC; C is 1 or 3). The script applies OP with
Pillow and writes the raw uint8 result to OUT_PATH. Ops:
    brightness F | color F | contrast F | sharpness F    (ImageEnhance.<Op>(im).enhance(F))
    equalize | invert | grayscale                        (ImageOps.equalize/invert, convert("L"))
    autocontrast LO HI                                    (ImageOps.autocontrast(cutoff=(LO, HI)))
    posterize BITS | solarize THRESHOLD                   (ImageOps.posterize/solarize)
Exits with status 3 when Pillow or NumPy cannot be imported, so the C test can skip.
"""
import sys

try:
    import numpy as np
    from PIL import Image, ImageEnhance, ImageOps
except ImportError as e:  # the C test skips on status 3
    print(f"make_pil_refs.py: {e}", file=sys.stderr)
    sys.exit(3)


def run(op, im, params):
    enhancers = {
        "brightness": ImageEnhance.Brightness,
        "color": ImageEnhance.Color,
        "contrast": ImageEnhance.Contrast,
        "sharpness": ImageEnhance.Sharpness,
    }
    if op in enhancers:
        return enhancers[op](im).enhance(float(params[0]))
    if op == "equalize":
        return ImageOps.equalize(im)
    if op == "invert":
        return ImageOps.invert(im)
    if op == "grayscale":
        return im.convert("L")
    if op == "autocontrast":
        return ImageOps.autocontrast(im, cutoff=(float(params[0]), float(params[1])))
    if op == "posterize":
        return ImageOps.posterize(im, int(params[0]))
    if op == "solarize":
        return ImageOps.solarize(im, float(params[0]))
    raise ValueError(f"unknown op {op}")


def main():
    with open(sys.argv[1]) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            op, src, h, w, c, dst = parts[:6]
            h, w, c = int(h), int(w), int(c)
            arr = np.fromfile(src, dtype=np.uint8).reshape(h, w, c)
            im = Image.fromarray(arr[:, :, 0] if c == 1 else arr, "L" if c == 1 else "RGB")
            out = np.asarray(run(op, im, parts[6:]), dtype=np.uint8)
            out.tofile(dst)


if __name__ == "__main__":
    main()
