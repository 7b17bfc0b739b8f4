"""DALI 2.4's operator names, as a DALI program spells them, exist in stoker: every fn.*
function and ops.* class DALI exports (its internal "hidden" namespaces left out), including
the acronym spellings (ops.readers.COCO, ops.MFCC, ops.DLTensorPythonFunction) and DALI's
deprecated names that older programs still use (fn.file_reader, ops.ImageDecoder,
fn.uniform). The lists were read from DALI 2.4 (`dir()` of nvidia.dali.fn / ops, walked);
when the DALI venv is there the lists are read again from it."""
import os
import subprocess

import numpy as np
import pytest

import stoker.fn as fn
import stoker.ops as ops
from stoker import pipeline_def

# operators stoker does not have (yet): NVIDIA's optical-flow engine, FITS files, and the
# video input operator
NOT_PROVIDED = {"optical_flow", "OpticalFlow", "experimental.inputs.video",
                "experimental.inputs.Video", "experimental.readers.fits",
                "experimental.readers.Fits"}

DALI_FN = [
    "audio_decoder", "audio_resample", "batch_permutation", "bb_flip", "bbox_paste",
    "bbox_rotate", "box_encoder", "brightness", "brightness_contrast", "caffe2_reader",
    "caffe_reader", "cast", "cast_like", "cat", "clahe", "coco_reader", "coin_flip",
    "color_space_conversion", "color_twist", "constant", "contrast", "coord_flip",
    "coord_transform", "copy", "crop", "crop_mirror_normalize", "debayer", "decoders.audio",
    "decoders.image", "decoders.image_crop", "decoders.image_random_crop",
    "decoders.image_slice", "decoders.inflate", "decoders.numpy", "decoders.video",
    "dl_tensor_python_function", "dump_image", "element_extract", "equalize", "erase",
    "expand_dims", "experimental.audio_resample", "experimental.debayer",
    "experimental.decoders.image", "experimental.decoders.image_crop",
    "experimental.decoders.image_random_crop", "experimental.decoders.image_slice",
    "experimental.decoders.video", "experimental.dilate", "experimental.equalize",
    "experimental.erode", "experimental.filter", "experimental.inflate",
    "experimental.inputs.video", "experimental.median_blur", "experimental.peek_image_shape",
    "experimental.readers.fits", "experimental.readers.video", "experimental.remap",
    "experimental.resize", "experimental.tensor_resize", "experimental.warp_perspective",
    "external_source", "fast_resize_crop_mirror", "file_reader", "filter", "flip", "full",
    "full_like", "gaussian_blur", "get_property", "grid_mask", "hsv", "hue", "image_decoder",
    "image_decoder_crop", "image_decoder_random_crop", "image_decoder_slice", "io.file.read",
    "jitter", "jpeg_compression_distortion", "laplacian", "lookup_table", "mel_filter_bank",
    "mfcc", "multi_paste", "mxnet_reader", "nemo_asr_reader", "noise.gaussian",
    "noise.salt_and_pepper", "noise.shot", "nonsilent_region", "normal_distribution",
    "normalize", "numpy_reader", "one_hot", "ones", "ones_like", "optical_flow", "pad", "paste",
    "peek_image_shape", "per_frame", "permute_batch", "power_spectrum", "preemphasis_filter",
    "python_function", "random.beta", "random.choice", "random.coin_flip", "random.normal",
    "random.uniform", "random_bbox_crop", "random_crop_generator", "random_resized_crop",
    "readers.caffe", "readers.caffe2", "readers.coco", "readers.file", "readers.mxnet",
    "readers.nemo_asr", "readers.numpy", "readers.sequence", "readers.tfrecord", "readers.video",
    "readers.video_resize", "readers.webdataset", "reductions.max", "reductions.mean",
    "reductions.mean_square", "reductions.min", "reductions.rms", "reductions.std_dev",
    "reductions.sum", "reductions.variance", "reinterpret", "reshape", "resize",
    "resize_crop_mirror", "roi_random_crop", "rotate", "saturation",
    "segmentation.random_mask_pixel", "segmentation.random_object_bbox",
    "segmentation.select_masks", "sequence_reader", "sequence_rearrange", "shapes", "slice",
    "spectrogram", "sphere", "squeeze", "ssd_random_crop", "stack", "tensor_resize",
    "tfrecord_reader", "to_decibels", "transform_translation", "transforms.combine",
    "transforms.crop", "transforms.rotation", "transforms.scale", "transforms.shear",
    "transforms.translation", "transpose", "uniform", "video_reader", "video_reader_resize",
    "warp_affine", "water", "zeros", "zeros_like",
]

DALI_OPS = [
    "AudioDecoder", "AudioResample", "BBoxPaste", "BBoxRotate", "BatchPermutation", "BbFlip",
    "BoxEncoder", "Brightness", "BrightnessContrast", "COCOReader", "Caffe2Reader",
    "CaffeReader", "Cast", "CastLike", "Cat", "Clahe", "CoinFlip", "ColorSpaceConversion",
    "ColorTwist", "Constant", "Contrast", "CoordFlip", "CoordTransform", "Copy", "Crop",
    "CropMirrorNormalize", "DLTensorPythonFunction", "Debayer", "DumpImage", "ElementExtract",
    "Equalize", "Erase", "ExpandDims", "ExternalSource", "FastResizeCropMirror", "FileReader",
    "Filter", "Flip", "Full", "FullLike", "GaussianBlur", "GetProperty", "GridMask", "Hsv",
    "Hue", "ImageDecoder", "ImageDecoderCrop", "ImageDecoderRandomCrop", "ImageDecoderSlice",
    "Jitter", "JpegCompressionDistortion", "Laplacian", "LookupTable", "MFCC", "MXNetReader",
    "MelFilterBank", "MultiPaste", "NemoAsrReader", "NonsilentRegion", "NormalDistribution",
    "Normalize", "NumpyReader", "OneHot", "Ones", "OnesLike", "OpticalFlow", "Pad", "Paste",
    "PeekImageShape", "PerFrame", "PermuteBatch", "PowerSpectrum", "PreemphasisFilter",
    "PythonFunction", "ROIRandomCrop", "RandomBBoxCrop", "RandomCropGenerator",
    "RandomResizedCrop", "Reinterpret", "Reshape", "Resize", "ResizeCropMirror", "Rotate",
    "SSDRandomCrop", "Saturation", "SequenceReader", "SequenceRearrange", "Shapes", "Slice",
    "Spectrogram", "Sphere", "Squeeze", "Stack", "TFRecordReader", "TensorResize", "ToDecibels",
    "TransformTranslation", "Transpose", "Uniform", "VideoReader", "VideoReaderResize",
    "WarpAffine", "Water", "Zeros", "ZerosLike", "decoders.Audio", "decoders.Image",
    "decoders.ImageCrop", "decoders.ImageRandomCrop", "decoders.ImageSlice", "decoders.Inflate",
    "decoders.Numpy", "decoders.Video", "experimental.AudioResample", "experimental.Debayer",
    "experimental.Dilate", "experimental.Equalize", "experimental.Erode", "experimental.Filter",
    "experimental.Inflate", "experimental.MedianBlur", "experimental.PeekImageShape",
    "experimental.Remap", "experimental.Resize", "experimental.TensorResize",
    "experimental.WarpPerspective", "experimental.decoders.Image",
    "experimental.decoders.ImageCrop", "experimental.decoders.ImageRandomCrop",
    "experimental.decoders.ImageSlice", "experimental.decoders.Video",
    "experimental.inputs.Video", "experimental.readers.Fits", "experimental.readers.Video",
    "io.file.Read", "noise.Gaussian", "noise.SaltAndPepper", "noise.Shot", "random.Beta",
    "random.Choice", "random.CoinFlip", "random.Normal", "random.Uniform", "readers.COCO",
    "readers.Caffe", "readers.Caffe2", "readers.File", "readers.MXNet", "readers.NemoAsr",
    "readers.Numpy", "readers.Sequence", "readers.TFRecord", "readers.Video",
    "readers.VideoResize", "readers.Webdataset", "reductions.Max", "reductions.Mean",
    "reductions.MeanSquare", "reductions.Min", "reductions.RMS", "reductions.StdDev",
    "reductions.Sum", "reductions.Variance", "segmentation.RandomMaskPixel",
    "segmentation.RandomObjectBBox", "segmentation.SelectMasks", "transforms.Combine",
    "transforms.Crop", "transforms.Rotation", "transforms.Scale", "transforms.Shear",
    "transforms.Translation",
]

DALI_PY = "/work/dali-venv/bin/python"


def lookup(module, dotted):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


@pytest.mark.parametrize("module,names", [(fn, DALI_FN), (ops, DALI_OPS)], ids=["fn", "ops"])
def test_every_dali_name_exists(module, names):
    missing = [n for n in names if n not in NOT_PROVIDED and lookup(module, n) is None]
    assert not missing, f"DALI names stoker lacks: {missing}"


@pytest.mark.skipif(not os.path.exists(DALI_PY), reason="no DALI venv (the oracle)")
def test_the_lists_are_dalis():
    script = ("import nvidia.dali.fn as fn, nvidia.dali.ops as ops, types as T, inspect\n"
              "def walk(m, p, out, d=0):\n"
              "    for n in dir(m):\n"
              "        if n.startswith('_') or n == 'hidden': continue\n"
              "        o = getattr(m, n)\n"
              "        if isinstance(o, T.ModuleType):\n"
              "            if o.__name__.startswith(m.__name__) and d < 4: walk(o, p + n + '.', out, d + 1)\n"
              "        elif callable(o) and getattr(o, '__module__', '').startswith(('nvidia.dali.fn', 'nvidia.dali.ops')):\n"
              "            out.add(p + n)\n"
              "a, b = set(), set()\n"
              "walk(fn, '', a); walk(ops, '', b)\n"
              "print(' '.join(sorted(a))); print(' '.join(sorted(b)))\n")
    out = subprocess.run([DALI_PY, "-c", script], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        pytest.skip("DALI did not import: " + out.stderr[-300:])
    fns, opss = (set(line.split()) for line in out.stdout.splitlines()[-2:])
    assert set(DALI_FN) <= fns | set(), sorted(set(DALI_FN) - fns)
    assert set(DALI_OPS) <= opss, sorted(set(DALI_OPS) - opss)


def test_legacy_names_are_the_operators_they_name():
    assert fn.file_reader is fn.readers.file and fn.uniform is fn.random.uniform
    assert fn.image_decoder_random_crop is fn.decoders.image_random_crop
    assert ops.FileReader is ops.readers.File and ops.ImageDecoder is ops.decoders.Image
    assert ops.COCOReader is ops.readers.COCO and ops.TFRecordReader is ops.readers.TFRecord
    assert ops.CoinFlip is ops.random.CoinFlip and ops.Uniform is ops.random.Uniform


def test_a_legacy_pipeline_runs_as_the_current_one():
    root = os.path.join(os.path.dirname(__file__), "..", "..", "data", "photos")
    photos = [os.path.join(root, f) for f in ("rocket.jpg", "retina.jpg")]

    def graph(legacy):
        if legacy:
            jpegs, labels = fn.file_reader(files=photos, random_shuffle=False)
            img = fn.image_decoder(jpegs)
            u = fn.uniform(range=[0, 1])
        else:
            jpegs, labels = fn.readers.file(files=photos, random_shuffle=False)
            img = fn.decoders.image(jpegs)
            u = fn.random.uniform(range=[0, 1])
        return fn.resize(img, size=[32, 32]), labels, u

    outs = []
    for legacy in (True, False):
        @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5)
        def p():
            return graph(legacy)
        pipe = p()
        pipe.build()
        outs.append([np.stack([np.asarray(t) for t in tl]) for tl in pipe.run()])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_acronym_class_names():
    for name in ("readers.COCO", "readers.MXNet", "reductions.RMS", "MFCC", "BBoxPaste",
                 "RandomBBoxCrop", "ROIRandomCrop", "DLTensorPythonFunction",
                 "segmentation.RandomObjectBBox"):
        assert lookup(ops, name) is not None, name
