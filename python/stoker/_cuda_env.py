"""Process environment that CUDA reads once, when the process's context is created.

CUDA maps streams onto CUDA_DEVICE_MAX_CONNECTIONS hardware work queues (8 unless set), and
streams sharing a queue run one after the other. With 8, stoker's decoding streams queued
behind the training's and NCCL's kernels: on two H100s the DDP ranks waited for batches
and trained 5-6% slower per GPU than one GPU alone, and nvJPEG's engines and stoker's own
JPEG decoder slowed each other (docs/gpu.md, "Hardware queues"). With 32 neither happened.

The context is usually created after this import (torch creates it at its first CUDA
call), so the package sets the variable here. A value the user set is kept (for example
1, which Megatron-LM asks for to order its communication overlap).
"""

import os

QUEUES_DEFAULT = "32"

os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", QUEUES_DEFAULT)
