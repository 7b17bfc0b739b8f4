#!/usr/bin/env python3
"""Per-operator CPU timings (issue 5): stoker's CPU operators against OpenCV, Pillow and,
where neither has the operation, NumPy, doing the same operation on the same decoded
images, in milliseconds per image on one thread.

Images: the bundled photographs (data/photos, 7 of them) converted to RGB uint8 and
resized to 375x500 (H x W, ImageNet's typical landscape shape) and to 224x224, cycled to
fill the batch.

How stoker is timed: a pipeline `fn.readers.numpy(the images as .npy files, page cache
warm) -> operator` with batch size 32, num_threads=1 and exec_async=False, so that run()
does all the work on the calling thread. readers.numpy rather than external_source:
stk_pipeline_feed copies fed samples element by element (~4 ms per 375x500x3 image on
the dev machine), which would drown the operator; the reader costs ~0.15 ms per image.
The figure ("stoker") is the executor's own per-call timer of the operator
(CLOCK_MONOTONIC around each run_sample, src/pipeline/executor.c, read with
Pipeline.executor_statistics(): argument reads, output allocation, the work; nothing
else), multiplied by the share of the run's wall time the thread was on a core
(time.thread_time / time.perf_counter over the run): on a quiet machine that share is 1
and the figure is the timer's; on a shared one (the dev machine's load reaches 10-20 on
2 cores while others compile) it takes out the time spent waiting for a core, which wall
time would count. Cross-check, "with - without": the pipeline's CPU time per image minus
that of the same pipeline without the operator (measured right before it); it agrees
within ~0.1 ms but is noisy for the cheapest operators and slightly low where the
operator's output is smaller than its input (a pipeline that returns the reader's output
pays a copy into the output batch that an operator writing its own output does not).

How the baselines are timed: the library call(s) in a Python loop over the same images
(already converted to what the library takes: NumPy arrays for OpenCV and NumPy,
PIL.Image objects for Pillow), CPU time of the thread (time.thread_time; wall time is
in the JSON, as is stoker's raw timer), cv2.setNumThreads(1) (Pillow is single-threaded). Python's call overhead
(~1 us) is included.

Each figure is the median of --repeats runs of at least --min-time CPU seconds each.
"none" marks a library without the operation.

usage: bench_ops_cpu.py [--ops a,b,...] [--sizes 375x500,224x224] [--repeats 3]
                        [--min-time 0.25] [--json OUT] [--markdown OUT]
"""
import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
from PIL import Image, ImageEnhance, ImageFilter, ImageOps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# This checkout's stoker when it is built (`make` builds the extension into python/stoker/),
# else whichever `import stoker` finds (an install, or a .pth pointing at another checkout).
if glob.glob(os.path.join(ROOT, "python", "stoker", "_stoker*.so")):
    sys.path.insert(0, os.path.join(ROOT, "python"))
import stoker  # noqa: E402
from stoker import fn, pipeline_def  # noqa: E402

try:
    import cv2
    cv2.setNumThreads(1)
    cv2.ocl.setUseOpenCL(False)
except ImportError:  # the OpenCV column is then "n/a" (pip install -r bench/requirements.txt)
    cv2 = None

BATCH = 32
MEAN = [123.675, 116.28, 103.53]
STD = [58.395, 57.12, 57.375]


# ---- images ----

def load_images(h, w):
    d = os.path.join(ROOT, "data", "photos")
    names = sorted(f for f in os.listdir(d) if f.lower().endswith((".png", ".jpg", ".jpeg")))
    imgs = []
    for n in names:
        im = Image.open(os.path.join(d, n)).convert("RGB").resize((w, h), Image.BICUBIC)
        imgs.append(np.ascontiguousarray(np.asarray(im)))
    return imgs


# ---- the operations: stoker graph, OpenCV, Pillow, NumPy ----
# Each entry: name, stoker builder (x, H, W) -> node (or None), and for each baseline a
# factory (H, W) -> function(image) (or None for "none"). Parameters are fixed and the
# same for every library.

def _rot_matrix(h, w, deg):
    # Output -> input map of a rotation by `deg` (counter-clockwise, as PIL and cv2) about
    # the image centre.
    return cv2.getRotationMatrix2D(((w - 1) / 2, (h - 1) / 2), deg, 1.0) if cv2 else None


AFFINE = [1.0, 0.3, -40.0, 0.1, 1.0, -20.0]  # output -> input: shear + translation


def _lut(f):
    return np.array([min(255, max(0, int(f(v)))) for v in range(256)], np.uint8)


def _hue_lut_pil(deg):
    # PIL's HSV hue is 0..255 for 360 degrees (torchvision's adjust_hue on PIL images).
    shift = int(round(deg / 360 * 256))
    return [(v + shift) % 256 for v in range(256)]


def cv_hue(img, deg):
    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV)  # OpenCV's H is 0..179 for 0..358 degrees
    h, s, v = cv2.split(hsv)
    h = cv2.LUT(h, _lut(lambda x: (x + round(deg / 2)) % 180))
    return cv2.cvtColor(cv2.merge([h, s, v]), cv2.COLOR_HSV2RGB)


def cv_hsv(img, deg, sat, val):
    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV)
    h, s, v = cv2.split(hsv)
    h = cv2.LUT(h, _lut(lambda x: (x + round(deg / 2)) % 180))
    s = cv2.convertScaleAbs(s, alpha=sat)
    v = cv2.convertScaleAbs(v, alpha=val)
    return cv2.cvtColor(cv2.merge([h, s, v]), cv2.COLOR_HSV2RGB)


def pil_hsv(img, deg, sat, val):
    h, s, v = img.convert("HSV").split()
    h = h.point(_hue_lut_pil(deg))
    s = s.point([min(255, int(x * sat + 0.5)) for x in range(256)])
    v = v.point([min(255, int(x * val + 0.5)) for x in range(256)])
    return Image.merge("HSV", (h, s, v)).convert("RGB")


def cv_saturation(img, f):
    g = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    return cv2.addWeighted(img, f, g, 1 - f, 0)


def cv_contrast(img, f):
    # PIL's definition (blend with the mean luma) in OpenCV calls.
    m = cv2.mean(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY))[0]
    return cv2.addWeighted(img, f, img, 0, (1 - f) * m)


SHARPEN_SMOOTH = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float32) / 13


def cv_sharpness(img, f):
    blur = cv2.filter2D(img, -1, SHARPEN_SMOOTH, borderType=cv2.BORDER_REPLICATE)
    return cv2.addWeighted(img, f, blur, 1 - f, 0)


def cv_autocontrast(img):
    return cv2.merge([cv2.normalize(c, None, 0, 255, cv2.NORM_MINMAX) for c in cv2.split(img)])


def cv_equalize(img):
    return cv2.merge([cv2.equalizeHist(c) for c in cv2.split(img)])


def cv_color_twist(img):
    # brightness 1.2, contrast 1.3 (centre 128), saturation 0.7, hue 20 degrees: the
    # four OpenCV operations one after the other (what ColorJitter does).
    x = cv2.convertScaleAbs(img, alpha=1.2)
    x = cv2.addWeighted(x, 1.3, x, 0, 128 * (1 - 1.3))
    x = cv_saturation(x, 0.7)
    return cv_hue(x, 20)


def pil_color_twist(img):
    x = ImageEnhance.Brightness(img).enhance(1.2)
    x = ImageEnhance.Contrast(x).enhance(1.3)
    x = ImageEnhance.Color(x).enhance(0.7)
    return pil_hsv(x, 20, 1.0, 1.0)


def np_grid_mask(img, tile=100, ratio=0.5):
    out = img.copy()
    black = int(round(tile * ratio))
    for y in range(0, img.shape[0], tile):
        for x in range(0, img.shape[1], tile):
            out[y:y + black, x:x + black] = 0
    return out


_RNG = np.random.default_rng(0)


def np_gaussian(img, sd=20.0):
    return np.clip(np.rint(img + _RNG.normal(0.0, sd, img.shape)), 0, 255).astype(np.uint8)


def cv_gaussian(img, sd=20.0):
    noise = np.empty(img.shape, np.int16)
    cv2.randn(noise, 0, sd)
    return cv2.add(img, noise, dtype=cv2.CV_8U)


def np_salt_pepper(img, p=0.05):
    r = _RNG.random(img.shape[:2])
    out = img.copy()
    out[r < p / 2] = 0
    out[(r >= p / 2) & (r < p)] = 255
    return out


def cv_salt_pepper(img, p=0.05):
    r = np.empty(img.shape[:2], np.float32)
    cv2.randu(r, 0, 1)
    out = img.copy()
    out[r < p / 2] = 0
    out[(r >= p / 2) & (r < p)] = 255
    return out


def np_shot(img, factor=20.0):
    return np.clip(_RNG.poisson(img / factor) * factor, 0, 255).astype(np.uint8)


def np_cmn(img, mean=np.array(MEAN, np.float32), inv=1 / np.array(STD, np.float32)):
    h, w = img.shape[:2]
    y, x = (h - 224) // 2, (w - 224) // 2
    c = img[y:y + 224, x:x + 224, :][:, ::-1]
    return np.ascontiguousarray(((c.astype(np.float32) - mean) * inv).transpose(2, 0, 1))


def cv_cmn(img, mean=np.array(MEAN, np.float64), inv=1 / np.array(STD, np.float64)):
    h, w = img.shape[:2]
    y, x = (h - 224) // 2, (w - 224) // 2
    c = cv2.flip(img[y:y + 224, x:x + 224], 1)
    f = cv2.split(c)
    out = np.empty((3, 224, 224), np.float32)
    for k in range(3):  # convertTo with scale/shift per plane: (x - mean) / std as float32
        out[k] = cv2.addWeighted(f[k], float(inv[k]), f[k], 0, float(-mean[k] * inv[k]),
                                 dtype=cv2.CV_32F)
    return out


def crop_box(h, w):
    """A centre crop of ~80% whose margins are even, so every library puts it at the same
    pixel."""
    ch, cw = h - 2 * ((h - int(h * 0.8)) // 2), w - 2 * ((w - int(w * 0.8)) // 2)
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def cmn_pos(h, w):
    """crop_pos_y, crop_pos_x of the 224 window at ((h - 224) // 2, (w - 224) // 2)."""
    return (((h - 224) // 2) / (h - 224) if h > 224 else 0.5), (((w - 224) // 2) / (w - 224) if w > 224 else 0.5)


def resize_target(h, w):
    return (224, 224) if (h, w) != (224, 224) else (112, 112)


# An asymmetric 5x5 kernel, applied as a correlation (OpenCV's filter2D and stoker);
# PIL's ImageFilter.Kernel reads its rows bottom-up, so it gets FILTER5[::-1].
FILTER5 = (np.arange(25, dtype=np.float32).reshape(5, 5) % 7 - 3) / 25.0 + np.eye(5, dtype=np.float32) * 0.2
ERASE = (60, 80, 100, 100)  # y, x, h, w
LAPLACE3 = [2, 0, 2, 0, -8, 0, 2, 0, 2]  # d2/dx2 + d2/dy2 with [1 2 1] smoothing (OpenCV ksize=3)


def build_ops():
    """[(name, stoker(x, h, w), cv2(h, w), pil(h, w), numpy(h, w), note)]"""
    c = cv2
    ops = [
        ("rotate 30deg linear keep_size",
         lambda x, h, w: fn.rotate(x, angle=30.0, keep_size=True, interp_type="linear", fill_value=[0.0]),
         lambda h, w: (lambda m: lambda im: c.warpAffine(im, m, (w, h), flags=c.INTER_LINEAR))(_rot_matrix(h, w, 30)),
         lambda h, w: lambda im: im.rotate(30, resample=Image.BILINEAR),
         None, "cv2.warpAffine(getRotationMatrix2D); PIL Image.rotate"),
        ("warp_affine linear",
         lambda x, h, w: fn.warp_affine(x, matrix=AFFINE, inverse_map=True, interp_type="linear", fill_value=[0.0]),
         lambda h, w: (lambda m: lambda im: c.warpAffine(im, m, (w, h), flags=c.INTER_LINEAR | c.WARP_INVERSE_MAP))(
             np.array(AFFINE, np.float64).reshape(2, 3)),
         lambda h, w: lambda im: im.transform((w, h), Image.AFFINE, AFFINE, Image.BILINEAR),
         None, "cv2.warpAffine(WARP_INVERSE_MAP); PIL Image.transform(AFFINE)"),
        ("resize linear antialias",
         lambda x, h, w: fn.resize(x, size=list(resize_target(h, w)), interp_type="linear"),
         lambda h, w: (lambda t: lambda im: c.resize(im, (t[1], t[0]), interpolation=c.INTER_AREA))(resize_target(h, w)),
         lambda h, w: (lambda t: lambda im: im.resize((t[1], t[0]), Image.BILINEAR))(resize_target(h, w)),
         None, "to 224x224 (from 224x224: to 112x112); cv2.resize INTER_AREA; PIL resize BILINEAR (both antialiased)"),
        ("resize linear, no antialias",
         lambda x, h, w: fn.resize(x, size=list(resize_target(h, w)), interp_type="linear", antialias=False),
         lambda h, w: (lambda t: lambda im: c.resize(im, (t[1], t[0]), interpolation=c.INTER_LINEAR))(resize_target(h, w)),
         None, None, "cv2.resize INTER_LINEAR; Pillow always antialiases"),
        ("flip horizontal",
         lambda x, h, w: fn.flip(x, horizontal=1),
         lambda h, w: lambda im: c.flip(im, 1),
         lambda h, w: lambda im: im.transpose(Image.FLIP_LEFT_RIGHT),
         None, "cv2.flip; PIL transpose"),
        ("crop 80% centre",
         lambda x, h, w: fn.crop(x, crop=list(crop_box(h, w)[2:])),
         None,
         lambda h, w: (lambda b: lambda im: im.crop((b[1], b[0], b[1] + b[3], b[0] + b[2])))(crop_box(h, w)),
         lambda h, w: (lambda b: lambda im: im[b[0]:b[0] + b[2], b[1]:b[1] + b[3]].copy())(crop_box(h, w)),
         "PIL Image.crop; NumPy slice + copy"),
        ("brightness 1.3",
         lambda x, h, w: fn.brightness(x, brightness=1.3),
         lambda h, w: lambda im: c.convertScaleAbs(im, alpha=1.3),
         None, None, "cv2.convertScaleAbs (DALI's definition; PIL's is the pil=true row)"),
        ("brightness 1.3 pil=true",
         lambda x, h, w: fn.brightness(x, brightness=1.3, pil=True),
         None,
         lambda h, w: lambda im: ImageEnhance.Brightness(im).enhance(1.3),
         None, "ImageEnhance.Brightness"),
        ("contrast 1.5 (centre 128)",
         lambda x, h, w: fn.contrast(x, contrast=1.5),
         lambda h, w: lambda im: c.addWeighted(im, 1.5, im, 0, 128 * (1 - 1.5)),
         None, None, "cv2.addWeighted"),
        ("contrast 1.5 pil=true",
         lambda x, h, w: fn.contrast(x, contrast=1.5, pil=True),
         lambda h, w: lambda im: cv_contrast(im, 1.5),
         lambda h, w: lambda im: ImageEnhance.Contrast(im).enhance(1.5),
         None, "ImageEnhance.Contrast; cv2: mean of cvtColor(GRAY) + addWeighted"),
        ("saturation 0.5",
         lambda x, h, w: fn.saturation(x, saturation=0.5),
         lambda h, w: lambda im: cv_saturation(im, 0.5),
         None, None, "stoker: DALI's YIQ map; cv2: blend with cvtColor(GRAY)"),
        ("saturation 0.5 pil=true",
         lambda x, h, w: fn.saturation(x, saturation=0.5, pil=True),
         lambda h, w: lambda im: cv_saturation(im, 0.5),
         lambda h, w: lambda im: ImageEnhance.Color(im).enhance(0.5),
         None, "ImageEnhance.Color; cv2 as above"),
        ("hue 30deg",
         lambda x, h, w: fn.hue(x, hue=30.0),
         lambda h, w: lambda im: cv_hue(im, 30),
         lambda h, w: lambda im: pil_hsv(im, 30, 1.0, 1.0),
         None, "stoker: YIQ rotation; cv2/PIL: RGB->HSV, shift H, HSV->RGB (torchvision's adjust_hue)"),
        ("hsv (30deg, 0.7, 1.1)",
         lambda x, h, w: fn.hsv(x, hue=30.0, saturation=0.7, value=1.1),
         lambda h, w: lambda im: cv_hsv(im, 30, 0.7, 1.1),
         lambda h, w: lambda im: pil_hsv(im, 30, 0.7, 1.1),
         None, "cv2/PIL: HSV round trip with the three changes"),
        ("color_twist (1.2, 1.3, 0.7, 20deg)",
         lambda x, h, w: fn.color_twist(x, brightness=1.2, contrast=1.3, saturation=0.7, hue=20.0),
         lambda h, w: cv_color_twist,
         lambda h, w: pil_color_twist,
         None, "cv2/PIL: the four operations in sequence (ColorJitter's way)"),
        ("grayscale (1 channel)",
         lambda x, h, w: fn.grayscale(x),
         lambda h, w: lambda im: c.cvtColor(im, c.COLOR_RGB2GRAY),
         lambda h, w: lambda im: im.convert("L"),
         None, "cv2.cvtColor; PIL convert('L')"),
        ("invert",
         lambda x, h, w: fn.invert(x),
         lambda h, w: lambda im: c.bitwise_not(im),
         lambda h, w: lambda im: ImageOps.invert(im),
         None, "cv2.bitwise_not; ImageOps.invert"),
        ("posterize 4 bits",
         lambda x, h, w: fn.posterize(x, bits=4),
         lambda h, w: (lambda t: lambda im: c.LUT(im, t))(_lut(lambda v: v & 0xF0)),
         lambda h, w: lambda im: ImageOps.posterize(im, 4),
         None, "cv2.LUT; ImageOps.posterize"),
        ("solarize 128",
         lambda x, h, w: fn.solarize(x, threshold=128.0),
         lambda h, w: (lambda t: lambda im: c.LUT(im, t))(_lut(lambda v: 255 - v if v >= 128 else v)),
         lambda h, w: lambda im: ImageOps.solarize(im, 128),
         None, "cv2.LUT; ImageOps.solarize"),
        ("equalize (pil)",
         lambda x, h, w: fn.equalize(x),
         None,
         lambda h, w: lambda im: ImageOps.equalize(im),
         None, "ImageOps.equalize"),
        ("equalize algorithm=opencv",
         lambda x, h, w: fn.equalize(x, algorithm="opencv"),
         lambda h, w: cv_equalize,
         None, None, "cv2.equalizeHist per channel (split/merge)"),
        ("auto_contrast",
         lambda x, h, w: fn.auto_contrast(x),
         lambda h, w: cv_autocontrast,
         lambda h, w: lambda im: ImageOps.autocontrast(im),
         None, "ImageOps.autocontrast; cv2.normalize(NORM_MINMAX) per channel"),
        ("sharpness 2.0",
         lambda x, h, w: fn.sharpness(x, sharpness=2.0),
         lambda h, w: lambda im: cv_sharpness(im, 2.0),
         lambda h, w: lambda im: ImageEnhance.Sharpness(im).enhance(2.0),
         None, "ImageEnhance.Sharpness; cv2: filter2D(PIL's SMOOTH kernel) + addWeighted"),
        ("gaussian_blur sigma 2 (13x13)",
         lambda x, h, w: fn.gaussian_blur(x, sigma=[2.0]),
         lambda h, w: lambda im: c.GaussianBlur(im, (13, 13), 2.0),
         lambda h, w: lambda im: im.filter(ImageFilter.GaussianBlur(2.0)),
         None, "cv2.GaussianBlur; PIL GaussianBlur(radius=sigma: box approximation)"),
        ("laplacian 3x3",
         lambda x, h, w: fn.laplacian(x, window_size=[3]),
         lambda h, w: lambda im: c.Laplacian(im, -1, ksize=3),
         lambda h, w: lambda im: im.filter(ImageFilter.Kernel((3, 3), LAPLACE3, scale=1)),
         None, "cv2.Laplacian(ksize=3); PIL ImageFilter.Kernel 3x3"),
        ("filter 5x5 float kernel",
         lambda x, h, w: fn.filter(x, kernel=FILTER5.ravel().tolist(), kernel_shape=[5, 5]),
         lambda h, w: lambda im: c.filter2D(im, -1, FILTER5, borderType=c.BORDER_REFLECT_101),
         lambda h, w: lambda im: im.filter(ImageFilter.Kernel((5, 5), FILTER5[::-1].ravel().tolist(), scale=1)),
         None, "cv2.filter2D; PIL ImageFilter.Kernel 5x5"),
        ("erase 100x100",
         lambda x, h, w: fn.erase(x, anchor=list(ERASE[:2]), shape=list(ERASE[2:]), fill_value=[0.0]),
         lambda h, w: lambda im: c.rectangle(im.copy(), (ERASE[1], ERASE[0]),
                                              (ERASE[1] + ERASE[3] - 1, ERASE[0] + ERASE[2] - 1), (0, 0, 0), -1),
         lambda h, w: lambda im: (lambda o: (o.paste((0, 0, 0), (ERASE[1], ERASE[0], ERASE[1] + ERASE[3],
                                                              ERASE[0] + ERASE[2])), o)[1])(im.copy()),
         None, "copy + cv2.rectangle(filled); PIL copy + paste(colour, box)"),
        ("grid_mask tile 100 ratio 0.5",
         lambda x, h, w: fn.grid_mask(x, tile=100, ratio=0.5),
         None, None,
         lambda h, w: np_grid_mask,
         "NumPy: copy + slice assignment per tile (angle 0)"),
        ("grid_mask tile 100 ratio 0.5 angle 0.5",
         lambda x, h, w: fn.grid_mask(x, tile=100, ratio=0.5, angle=0.5),
         None, None, None, "rotated grid"),
        ("noise.gaussian stddev 20",
         lambda x, h, w: fn.noise.gaussian(x, stddev=20.0),
         lambda h, w: cv_gaussian,
         None,
         lambda h, w: np_gaussian,
         "cv2.randn(int16) + cv2.add; NumPy Generator.normal + round + clip"),
        ("noise.salt_and_pepper prob 0.05",
         lambda x, h, w: fn.noise.salt_and_pepper(x, prob=0.05),
         lambda h, w: cv_salt_pepper,
         None,
         lambda h, w: np_salt_pepper,
         "cv2.randu + NumPy masks; NumPy Generator.random + masks"),
        ("noise.shot factor 20",
         lambda x, h, w: fn.noise.shot(x, factor=20.0),
         None, None,
         lambda h, w: np_shot,
         "NumPy Generator.poisson"),
        ("crop_mirror_normalize 224 f32 CHW",
         lambda x, h, w: fn.crop_mirror_normalize(x, crop=[224, 224], crop_pos_y=cmn_pos(h, w)[0],
                                                  crop_pos_x=cmn_pos(h, w)[1], mirror=1, mean=MEAN, std=STD,
                                                  dtype="float32", output_layout="CHW"),
         lambda h, w: cv_cmn,
         None,
         lambda h, w: np_cmn,
         "centre 224 crop, mirror, (x - mean) / std to float32 CHW; cv2: flip + addWeighted(CV_32F) per plane"),
    ]
    return ops


# ---- timing ----

def _median(xs):
    return statistics.median(xs) if xs else None


class Clock:
    """CPU time of the calling thread and wall time, read together."""

    def __init__(self):
        self.cpu0, self.wall0 = time.thread_time(), time.perf_counter()

    def cpu(self):
        return time.thread_time() - self.cpu0

    def wall(self):
        return time.perf_counter() - self.wall0


def mean_abs_diff(a, b):
    """Mean |a - b| of two results of the same operation, None if the shapes differ (a
    check that the baselines do the same thing: noise differs by construction)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        a, b = np.squeeze(a), np.squeeze(b)
    if a.shape != b.shape:
        return None
    return float(np.mean(np.abs(a.astype(np.float64) - b.astype(np.float64))))


def time_baseline(factory, h, w, images, repeats, min_time):
    """{"cpu": ms, "wall": ms} per image (medians over the repeats) and "first", the
    result for images[0]; or None."""
    if factory is None:
        return None
    f = factory(h, w)
    first = np.asarray(f(images[0]))  # warm-up (and a check that it runs)
    cpu, wall = [], []
    for _ in range(repeats):
        n, c = 0, Clock()
        while True:
            for im in images:
                f(im)
            n += len(images)
            if c.cpu() >= min_time and n >= BATCH:
                break
        cpu.append(1e3 * c.cpu() / n)
        wall.append(1e3 * c.wall() / n)
    return {"cpu": _median(cpu), "wall": _median(wall), "first": first}


def write_npy(images, folder):
    """The batch's images as .npy files (the pipeline's source, see the module doc)."""
    files = []
    for i in range(BATCH):
        f = os.path.join(folder, f"{i:02d}.npy")
        np.save(f, images[i % len(images)])
        files.append(f)
    return files


def _stoker_pipe(files, build):
    # One thread and no producer thread: run() does all the work on the calling thread,
    # so time.thread_time() around it is the pipeline's CPU time. readers.numpy on files
    # in the page cache, not external_source: stk_pipeline_feed copies fed samples
    # element by element (~4 ms per 375x500x3 image here), which would drown the
    # subtraction; the reader costs ~0.15 ms per image.
    @pipeline_def(batch_size=BATCH, num_threads=1, seed=7, prefetch_queue_depth=1, exec_async=False)
    def pipe():
        return build(fn.readers.numpy(files=files, name="src"))

    p = pipe()
    p.build()
    return p


def _op_ns(p):
    # The executor's per-call timer summed over everything but the source: the operator
    # (and any node it made for its arguments).
    return sum(v["time_ns"] for k, v in p.executor_statistics().items() if k != "src")


def time_pipeline(build, h, w, files, repeats, min_time):
    """Per image, medians over the repeats: "cpu" = the calling thread's CPU time of the
    whole pipeline (reading, the operator, batch output); "exec" = the executor's timer of
    the operator's calls (wall clock); "exec_cpu" = that timer times the share of the
    run's wall time the thread spent on a core (cpu / wall), i.e. with the time spent
    waiting for a core on a busy machine taken out (1 on a quiet machine)."""
    p = _stoker_pipe(files, (lambda x: build(x, h, w)) if build else (lambda x: x))
    (out,) = p.run()  # warm-up: pools, shape predictions
    first = np.array(out[0])  # the operator applied to images[0]
    cpu, ex, ex_cpu = [], [], []
    for _ in range(repeats):
        ns0, n, c = _op_ns(p), 0, Clock()
        while True:
            p.run()
            n += BATCH
            if c.cpu() >= min_time:
                break
        t_cpu, t_wall, t_op = c.cpu(), c.wall(), (_op_ns(p) - ns0) / 1e9
        cpu.append(1e3 * t_cpu / n)
        ex.append(1e3 * t_op / n)
        ex_cpu.append(1e3 * t_op * min(1.0, t_cpu / t_wall) / n)
    p.close()
    return {"cpu": _median(cpu), "exec": _median(ex), "exec_cpu": _median(ex_cpu), "first": first}


def fmt(v):
    if v is None:
        return "none"
    return f"{v:.3f}" if abs(v) < 1 else f"{v:.2f}"


def measure(ops, h, w, a, folder):
    images = load_images(h, w)
    pil_images = [Image.fromarray(im) for im in images]
    files = write_npy(images, folder)
    rows = []
    for name, st, cvf, pilf, npf, note in ops:
        r = {"op": name, "size": f"{h}x{w}", "note": note}
        # The pipeline without the operator right before the one with it, so that both
        # see the same machine load.
        base = time_pipeline(None, h, w, files, a.repeats, a.min_time)
        full = time_pipeline(st, h, w, files, a.repeats, a.min_time)
        r["stoker"] = full["exec_cpu"]
        r["stoker_subtract"] = full["cpu"] - base["cpu"]
        r["stoker_exec_wall"] = full["exec"]
        r["stoker_pipeline_cpu"], r["base_pipeline_cpu"] = full["cpu"], base["cpu"]
        for key, fac, imgs in (("opencv", cvf if cv2 else None, images), ("pillow", pilf, pil_images),
                               ("numpy", npf, images)):
            t = time_baseline(fac, h, w, imgs, a.repeats, a.min_time)
            r[key] = t["cpu"] if t else None
            r[key + "_wall"] = t["wall"] if t else None
            r[key + "_diff"] = mean_abs_diff(full["first"], t["first"]) if t else None
        others = [r[k] for k in ("opencv", "pillow", "numpy") if r[k] is not None]
        r["best_other_over_stoker"] = min(others) / r["stoker"] if others and r["stoker"] > 0 else None
        rows.append(r)
        print(f"{r['size']:>8} {name:<40} stoker {fmt(r['stoker']):>7} (with-without {fmt(r['stoker_subtract'])}, "
              f"wall {fmt(r['stoker_exec_wall'])})"
              f"  cv2 {fmt(r['opencv']):>7}  PIL {fmt(r['pillow']):>7}  NumPy {fmt(r['numpy']):>7}",
              flush=True)
    return rows


def markdown(rows, sizes):
    out = []
    for h, w in sizes:
        size = f"{h}x{w}"
        out += [f"{size} RGB uint8, ms per image, one thread (CPU time; median of the repeats):", "",
                "| operator | stoker | stoker (with - without) | OpenCV | Pillow | NumPy "
                "| fastest other / stoker |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in rows:
            if r["size"] != size:
                continue
            ratio = r["best_other_over_stoker"]
            out.append(f"| {r['op']} | {fmt(r['stoker'])} | {fmt(r['stoker_subtract'])} | {fmt(r['opencv'])} "
                       f"| {fmt(r['pillow'])} | {fmt(r['numpy'])} | {'-' if ratio is None else f'{ratio:.2f}'} |")
        out.append("")
    out += ["What the baselines call, and how far their result is from stoker's (mean absolute "
            "difference on the first image, uint8 levels; float32 for crop_mirror_normalize; "
            "noise differs by construction):", "",
            "| operator | baselines | diff OpenCV | diff Pillow | diff NumPy |", "| --- | --- | ---: | ---: | ---: |"]
    seen = set()
    for r in rows:
        if r["op"] in seen:
            continue
        seen.add(r["op"])
        d = [("-" if r[k + "_diff"] is None else f"{r[k + '_diff']:.2f}") for k in ("opencv", "pillow", "numpy")]
        out.append(f"| {r['op']} | {r['note']} | {d[0]} | {d[1]} | {d[2]} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", help="comma-separated substrings of operator names to run")
    ap.add_argument("--sizes", default="375x500,224x224")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.25, help="CPU seconds per repeat, at least")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in a.sizes.split(",")]
    ops = build_ops()
    if a.ops:
        keys = [k.strip() for k in a.ops.split(",")]
        ops = [o for o in ops if any(k in o[0] for k in keys)]
    print(f"stoker from {os.path.dirname(stoker.__file__)}; OpenCV {cv2.__version__ if cv2 else 'not installed'}, "
          f"Pillow {Image.__version__}, NumPy {np.__version__}", flush=True)
    rows = []
    for h, w in sizes:
        with tempfile.TemporaryDirectory(prefix="stk-opbench-") as folder:
            rows += measure(ops, h, w, a, folder)
    md = markdown(rows, sizes)
    print()
    print(md)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
