"""get_property on the GPU (DALI has it there): the same bytes as the CPU operator, in
device memory, for a GPU input; run against the CPU stand-in for the GPU backend."""
import os

import numpy as np

import stoker
from stoker import fn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = os.path.join(ROOT, "data", "photos")


def test_layout_and_source_info_on_the_gpu(fake_gpu):
    files = sorted(os.path.join(PHOTOS, f) for f in os.listdir(PHOTOS) if f.endswith(".jpg"))[:3]

    def define():
        jpegs, _ = fn.readers.file(files=files)
        images = fn.decoders.image(jpegs)
        g = images.gpu()
        return (fn.get_property(images, key="layout"), fn.get_property(g, key="layout",
                                                                       device="gpu"),
                fn.get_property(images, key="source_info"),
                fn.get_property(g, key="source_info", device="gpu"))

    pipe = stoker.pipeline_def(define, batch_size=3, num_threads=1, device_id=0)()
    lc, lg, sc, sg = pipe.run()
    assert lg.device == "gpu" and sg.device == "gpu"
    for i in range(3):
        assert bytes(np.array(lg.as_cpu()[i])) == bytes(np.array(lc[i])) == b"HWC"
        src = bytes(np.array(sg.as_cpu()[i]))
        assert src == bytes(np.array(sc[i])) and src.decode() == files[i]
