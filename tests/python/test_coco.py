"""readers.coco against hand-written expectations: a tiny COCO data set written here
(Pillow images, a JSON file), boxes and labels worked out by hand, masks drawn with
Pillow (axis-aligned rectangles, where every rasterisation rule agrees) and run-length
encodings made from Pillow drawings by an encoder in this file. When DALI's CPU build is
installed (/work/dali-venv), random polygons and RLE masks are also compared with its
output."""

import json
import os
import subprocess

import numpy as np
import pytest
from PIL import Image, ImageDraw

import stoker
from stoker import fn
from stoker.errors import DecodeError, InvalidArgumentError, NotFoundError, StokerError

DALI_PY = "/work/dali-venv/bin/python"


# ---- independent writers ----

def rle_counts(mask):
    """COCO run lengths of a 0/1 mask: column-major, starting with a background run."""
    flat = np.asarray(mask, np.uint8).flatten(order="F")
    counts, cur, n = [], 0, 0
    for v in flat:
        if v != cur:
            counts.append(n)
            n, cur = 0, v
        n += 1
    counts.append(n)
    return counts


def rle_string(counts):
    """The compressed form: deltas from the count two back (after the third), 5 bits per
    character with a continuation bit, offset by 48."""
    out = []
    for i, x in enumerate(counts):
        if i > 2:
            x -= counts[i - 2]
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = (x != -1) if (c & 0x10) else (x != 0)
            out.append(chr((c | 0x20 if more else c) + 48))
    return "".join(out)


def rect_mask(h, w, x0, y0, x1, y1):
    """Pillow's filled rectangle covering pixels x0..x1-1, y0..y1-1."""
    im = Image.new("L", (w, h), 0)
    ImageDraw.Draw(im).rectangle([x0, y0, x1 - 1, y1 - 1], fill=1)
    return np.array(im)


def ellipse_mask(h, w, box):
    im = Image.new("L", (w, h), 0)
    ImageDraw.Draw(im).ellipse(box, fill=1)
    return np.array(im)


SIZES = {"a.png": (40, 30), "b.png": (20, 16), "c.png": (12, 10)}  # (w, h)
B_MASK_1 = ellipse_mask(16, 20, [2, 1, 9, 7])
B_MASK_2 = rect_mask(16, 20, 12, 10, 18, 14)


def annotations():
    return {
        "images": [
            {"id": 7, "file_name": "a.png", "width": 40, "height": 30},
            {"id": 3, "file_name": "b.png", "width": 20, "height": 16},
            {"id": 9, "file_name": "c.png", "width": 12, "height": 10},
        ],
        # Labels follow the list's order: 5 -> 1, 2 -> 2, 11 -> 3.
        "categories": [{"id": 5, "name": "x"}, {"id": 2, "name": "y"}, {"id": 11, "name": "z"}],
        "annotations": [
            {"id": 1, "image_id": 7, "category_id": 11, "bbox": [1.5, 2, 10, 8], "iscrowd": 0,
             "segmentation": [[1, 2, 11, 2, 11, 10, 1, 10], [20, 20, 26, 20, 26, 24, 20, 24]]},
            # Narrower than size_threshold (0.1): dropped.
            {"id": 2, "image_id": 7, "category_id": 5, "bbox": [3, 4, 0.05, 8], "iscrowd": 0,
             "segmentation": [[3, 4, 4, 4, 4, 12]]},
            {"id": 3, "image_id": 3, "category_id": 2, "bbox": [3, 2, 6, 5], "iscrowd": 1,
             "segmentation": {"size": [16, 20], "counts": rle_counts(B_MASK_1)}},
            {"id": 4, "image_id": 3, "category_id": 5, "bbox": [12, 10, 6, 4], "iscrowd": 0,
             "segmentation": {"size": [16, 20], "counts": rle_string(rle_counts(B_MASK_2))}},
            # An image id nobody has: ignored.
            {"id": 5, "image_id": 99, "category_id": 5, "bbox": [1, 1, 3, 3], "iscrowd": 0,
             "segmentation": [[1, 1, 4, 1, 4, 4]]},
        ],
    }


@pytest.fixture
def coco(tmp_path):
    root = tmp_path / "images"
    root.mkdir()
    for name, (w, h) in SIZES.items():
        Image.fromarray(np.full((h, w, 3), 77, np.uint8)).save(root / name)
    ann = tmp_path / "instances.json"
    ann.write_text(json.dumps(annotations()))
    return str(root), str(ann)


def run(coco, batch_size=3, **kw):
    root, ann = coco

    def define():
        out = fn.readers.coco(file_root=root, annotations_file=ann, **kw)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    pipe = stoker.pipeline_def(define, batch_size=batch_size, num_threads=2)()
    return [[np.array(s) for s in tl] for tl in pipe.run()]


# ---- boxes, labels, order ----

def test_default_outputs_order_and_labels(coco):
    images, boxes, labels = run(coco)
    # By image id: b (3), a (7), c (9); the encoded files as they are on disk.
    root = coco[0]
    for got, name in zip(images, ["b.png", "a.png", "c.png"]):
        with open(os.path.join(root, name), "rb") as f:
            assert got.dtype == np.uint8 and got.tobytes() == f.read()
    np.testing.assert_array_equal(boxes[0], [[3, 2, 6, 5], [12, 10, 6, 4]])
    np.testing.assert_array_equal(boxes[1], [[1.5, 2, 10, 8]])
    assert boxes[2].shape == (0, 4) and boxes[2].dtype == np.float32
    assert [l.tolist() for l in labels] == [[2, 1], [3], []]
    assert labels[0].dtype == np.int32


def test_ltrb_ratio_and_image_ids(coco):
    _, boxes, _, ids = run(coco, ltrb=True, ratio=True, image_ids=True)
    np.testing.assert_allclose(boxes[0], [[3 / 20, 2 / 16, 9 / 20, 7 / 16],
                                          [12 / 20, 10 / 16, 18 / 20, 14 / 16]], rtol=1e-6)
    np.testing.assert_allclose(boxes[1], [[1.5 / 40, 2 / 30, 11.5 / 40, 10 / 30]], rtol=1e-6)
    assert [i.tolist() for i in ids] == [[3], [7], [9]] and ids[0].dtype == np.int32


def test_filters_remapping_and_image_list(coco):
    _, boxes, labels = run(coco, include_iscrowd=False, avoid_class_remapping=True,
                           size_threshold=0.01)
    np.testing.assert_array_equal(boxes[0], [[12, 10, 6, 4]])  # the crowd is gone
    assert [l.tolist() for l in labels] == [[5], [11, 5], []]  # the thin box is back
    # skip_empty drops c.png; images= picks and orders (duplicates read twice).
    _, _, labels = run(coco, batch_size=2, skip_empty=True)
    assert [l.tolist() for l in labels] == [[2, 1], [3]]
    _, _, labels, ids = run(coco, batch_size=3, images=["c.png", "a.png", "c.png"], image_ids=True)
    assert [i.tolist() for i in ids] == [[9], [7], [9]]


def test_shards_split_the_images(coco):
    # 3 images, 2 shards: shard 0 holds image 0 (id 3), shard 1 images 1 and 2 (ids 7, 9).
    ids0 = run(coco, batch_size=1, num_shards=2, shard_id=0, image_ids=True)[3]
    ids1 = run(coco, batch_size=2, num_shards=2, shard_id=1, image_ids=True)[3]
    assert [i.item() for i in ids0] == [3] and [i.item() for i in ids1] == [7, 9]


# ---- masks ----

def test_polygons_and_vertices(coco):
    out = run(coco, polygon_masks=True)
    assert len(out) == 5
    polygons, vertices = out[3], out[4]
    assert polygons[0].shape == (0, 3)  # b.png has RLE masks only: no polygons
    np.testing.assert_array_equal(polygons[1], [[0, 0, 4], [0, 4, 8]])
    np.testing.assert_array_equal(vertices[1], [[1, 2], [11, 2], [11, 10], [1, 10],
                                                [20, 20], [26, 20], [26, 24], [20, 24]])
    assert vertices[1].dtype == np.float32 and polygons[1].dtype == np.int32
    # ratio scales the vertices by the image size too.
    v = run(coco, polygon_masks=True, ratio=True)[4][1]
    np.testing.assert_allclose(v[:2], [[1 / 40, 2 / 30], [11 / 40, 2 / 30]], rtol=1e-6)


def test_pixelwise_masks(coco):
    out = run(coco, pixelwise_masks=True, image_ids=True)
    masks = out[3]
    assert masks[0].shape == (16, 20, 1) and masks[0].dtype == np.int32
    # b.png: label 2 from the uncompressed RLE, label 1 from the compressed one.
    want_b = np.maximum(2 * B_MASK_1, 1 * B_MASK_2)
    np.testing.assert_array_equal(masks[0][:, :, 0], want_b)
    # a.png: both rectangles of object 1 (label 3), drawn by Pillow.
    want_a = 3 * np.maximum(rect_mask(30, 40, 1, 2, 11, 10), rect_mask(30, 40, 20, 20, 26, 24))
    np.testing.assert_array_equal(masks[1][:, :, 0], want_a)
    assert not masks[2].any() and masks[2].shape == (10, 12, 1)
    assert [i.item() for i in out[4]] == [3, 7, 9]


def test_overlapping_objects_keep_the_larger_label(tmp_path, coco):
    js = annotations()
    js["annotations"] = [
        {"id": 1, "image_id": 9, "category_id": 2, "bbox": [0, 0, 6, 6],
         "segmentation": [[0, 0, 6, 0, 6, 6, 0, 6]]},
        {"id": 2, "image_id": 9, "category_id": 5, "bbox": [3, 3, 6, 6],
         "segmentation": [[3, 3, 9, 3, 9, 9, 3, 9]]},
    ]
    ann = tmp_path / "overlap.json"
    ann.write_text(json.dumps(js))
    m = run((coco[0], str(ann)), batch_size=3, pixelwise_masks=True)[3][2][:, :, 0]
    want = np.maximum(2 * rect_mask(10, 12, 0, 0, 6, 6), 1 * rect_mask(10, 12, 3, 3, 9, 9))
    np.testing.assert_array_equal(m, want)


# ---- bad input ----

def write(tmp_path, text):
    p = tmp_path / "bad.json"
    p.write_text(text)
    return str(p)


def test_bad_annotation_files(tmp_path, coco):
    root = coco[0]
    cases = [
        ('{"images": [1,]}', DecodeError, "bad.json: byte 14: unexpected character"),
        ('{"images": {}}', DecodeError, '"images" is not an array'),
        ('{"images": [{"id": 1, "width": 3}]}', DecodeError, 'byte 12: an image without'),
        ('{"images": [{"id": 1, "file_name": "a.png", "width": 40, "height": 30}], '
         '"annotations": [{"image_id": 1, "category_id": 1, "bbox": [1, 2]}]}',
         DecodeError, 'a "bbox" of 4 numbers'),
        ('{"images": [{"id": 1, "file_name": "a.png", "width": 40, "height": 30}], '
         '"annotations": [{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], '
         '"segmentation": {"size": [3, 3], "counts": [1]}}]}',
         DecodeError, "RLE mask whose size differs"),
        ('{"images": [{"id": 1, "file_name": "a.png", "width": 40, "height": 30}], '
         '"annotations": [{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], '
         '"segmentation": {"size": [30, 40], "counts": "!!"}}]}',
         DecodeError, "malformed compressed RLE"),
        ('{"images": []}', InvalidArgumentError, "no images to read"),
    ]
    for text, err, msg in cases:
        with pytest.raises(err, match=msg):
            run((root, write(tmp_path, text)), pixelwise_masks=True)
    with pytest.raises(NotFoundError, match="nope.json"):
        run((root, str(tmp_path / "nope.json")))
    with pytest.raises(InvalidArgumentError, match="exclude each other"):
        run(coco, polygon_masks=True, pixelwise_masks=True)
    with pytest.raises(NotFoundError, match=r"images\[0\] 'zz.png'"):
        run(coco, images=["zz.png"])


def test_rle_overrunning_the_image_fails_its_sample(tmp_path, coco):
    js = annotations()
    js["annotations"] = [{"id": 1, "image_id": 9, "category_id": 2, "bbox": [0, 0, 6, 6],
                          "segmentation": {"size": [10, 12], "counts": [100, 30]}}]
    ann = tmp_path / "overrun.json"
    ann.write_text(json.dumps(js))
    with pytest.raises(StokerError, match="c.png.*object 0: its RLE runs overrun"):
        run((coco[0], str(ann)), pixelwise_masks=True)


# ---- DALI as an oracle (skipped without its CPU build) ----

def random_dataset(tmp_path, rng):
    root = tmp_path / "rnd"
    root.mkdir()
    images, anns = [], []
    for i in range(10):
        w, h = int(rng.integers(5, 40)), int(rng.integers(5, 40))
        Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(root / f"{i}.png")
        images.append({"id": i, "file_name": f"{i}.png", "width": w, "height": h})
        for k in range(int(rng.integers(1, 5))):
            if rng.random() < 0.3:
                c = rle_counts(rng.random((h, w)) < 0.3)
                seg = {"size": [h, w], "counts": rle_string(c) if rng.random() < 0.5 else c}
            else:
                seg = []
                for _ in range(int(rng.integers(1, 3))):
                    nv = int(rng.integers(3, 9))
                    pts = np.stack([rng.uniform(-3, w + 3, nv), rng.uniform(-3, h + 3, nv)], 1)
                    seg.append([round(float(v), 2) for v in pts.flatten()])
            anns.append({"id": len(anns) + 1, "image_id": i, "category_id": int(rng.integers(1, 4)),
                         "bbox": [0, 0, 5, 5], "iscrowd": 0, "segmentation": seg})
    ann = tmp_path / "rnd.json"
    ann.write_text(json.dumps({"images": images, "annotations": anns,
                               "categories": [{"id": 1}, {"id": 2}, {"id": 3}]}))
    return str(root), str(ann)


DALI_SCRIPT = """
import sys, numpy as np
from nvidia.dali import pipeline_def, fn
@pipeline_def(batch_size=10, num_threads=1, device_id=None)
def p():
    o = fn.readers.coco(file_root=sys.argv[1], annotations_file=sys.argv[2],
                        pixelwise_masks=True)
    return o[3]
pp = p(); pp.build(); o = pp.run()[0]
np.savez(sys.argv[3], *[np.array(o[i]) for i in range(10)])
"""


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="DALI's CPU build is not installed")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_masks_match_dali(tmp_path, seed):
    root, ann = random_dataset(tmp_path, np.random.default_rng(seed))
    out = tmp_path / "dali.npz"
    subprocess.run([DALI_PY, "-c", DALI_SCRIPT, root, ann, str(out)], check=True,
                   capture_output=True)
    want = np.load(out)
    got = run((root, ann), batch_size=10, pixelwise_masks=True)[3]
    wrong = total = 0
    for i in range(10):
        w = want[f"arr_{i}"]
        assert got[i].shape == w.shape
        wrong += int((got[i] != w).sum())
        total += w.size
    # Polygons match exactly; DALI's RLE merge flips a stray pixel now and then
    # (docs/formats.md), hence a tolerance of one pixel in a thousand.
    assert wrong <= total // 1000, (wrong, total)


# ---- stoker preview draws boxes and masks ----

def test_preview_draws_boxes_and_masks(coco, tmp_path):
    root, ann = coco
    build = os.environ.get("STK_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..",
                                                         "build"))
    cli = os.path.join(build, "stoker")
    if not os.path.exists(cli):
        pytest.skip("the CLI is not built")
    outs = {}
    for name, ret in (("plain", "images"), ("over", "images, boxes, masks")):
        text = (f'jpegs, boxes, labels, masks = readers.coco(file_root="{root}", '
                f'annotations_file="{ann}", ltrb=true, ratio=true, pixelwise_masks=true)\n'
                'images = decoders.image(jpegs, output_type="RGB")\n'
                f"return {ret}\n")
        (tmp_path / f"{name}.txt").write_text(text)
        png = str(tmp_path / f"{name}.png")
        subprocess.run([cli, "preview", "--data", root, "--pipeline", str(tmp_path / f"{name}.txt"),
                        "--count", "3", "--out", png, "--threads", "1"], check=True,
                       capture_output=True)
        outs[name] = np.array(Image.open(png).convert("RGB")).astype(int)
    plain, over = outs["plain"], outs["over"]
    # Tile 0 (b.png, 20 x 16 at (4, 4)): box [12, 10, 18, 14] has its outline on x = 12, 17
    # and y = 10, 13; the RLE rectangle under it is tinted; far pixels stay as they were.
    o = 4
    assert (over[o + 10, o + 15] != plain[o + 10, o + 15]).any()  # top edge of box 2
    assert (over[o + 12, o + 14] != plain[o + 12, o + 14]).any()  # inside: the mask's tint
    assert (over[o + 12, o + 14] != over[o + 10, o + 15]).any()  # tint differs from outline
    assert (over[o + 15, o + 0] == plain[o + 15, o + 0]).all()  # background untouched
    assert (over[o + 0, o + 19] == plain[o + 0, o + 19]).all()


def test_only_the_images_read_must_exist(coco):
    root, ann = coco
    os.remove(os.path.join(root, "c.png"))
    images, _, labels = run(coco, batch_size=2, images=["b.png", "a.png"])  # c.png unused
    assert [l.tolist() for l in labels] == [[2, 1], [3]]
    with pytest.raises(StokerError, match="c.png"):
        run(coco)  # every image is read: the missing one is named at build time
