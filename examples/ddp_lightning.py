#!/usr/bin/env python3
"""PyTorch Lightning's DDP strategy fed by stoker: a LightningDataModule whose training
batches come from one stoker pipeline per rank, reading that rank's shard.

    python examples/ddp_lightning.py --data DIR --devices 2                 # 2 GPUs
    python examples/ddp_lightning.py --data DIR --accelerator cpu --devices 2 --arch tiny
    torchrun --nproc_per_node=2 examples/ddp_lightning.py --data DIR        # also works

Lightning starts the other ranks itself (strategy "ddp" runs this script again with
LOCAL_RANK set) or takes them from torchrun. The data module builds its pipeline in
setup(), when the trainer knows the rank: shard_id = global rank, num_shards = world size,
device_id = local rank. The iterator is not a torch DataLoader, so Lightning adds no
DistributedSampler (use_distributed_sampler=False says so explicitly): the reader's
shards already split every epoch among the ranks. See docs/distributed.md.
"""

import argparse
import json
import os
import sys

import lightning as L
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_train import default_threads, make_model, train_pipeline  # noqa: E402

from stoker.plugin.torch import ClassificationIterator, LastBatchPolicy  # noqa: E402


class StokerDataModule(L.LightningDataModule):
    def __init__(self, data_dir, batch_size=128, size=224, threads=0):
        super().__init__()
        self.data_dir, self.batch_size, self.size = data_dir, batch_size, size
        self.threads = threads or default_threads()
        self.loader = None

    def setup(self, stage=None):
        trainer = self.trainer
        gpu = trainer.accelerator.__class__.__name__ == "CUDAAccelerator"
        pipe = train_pipeline(self.data_dir, self.size, trainer.global_rank, trainer.world_size,
                              gpu, True, batch_size=self.batch_size, num_threads=self.threads,
                              device_id=trainer.local_rank if gpu else None,
                              seed=1 + trainer.global_rank)
        # FILL + the reader's pad_last_batch: every rank the same number of full batches
        self.loader = ClassificationIterator(pipe, reader_name="Reader", auto_reset=True,
                                             last_batch_policy=LastBatchPolicy.FILL)

    def train_dataloader(self):
        return Batches(self.loader)


class Batches:
    """(images, labels) from the iterator's [{"data", "label"}] batches; NHWC memory seen
    as NCHW (channels-last).

    No __len__ on purpose: given one, Lightning ends an epoch after len() batches without
    asking for the next, so the iterator never reaches the end of its epoch (where it
    resets) and the following epoch is empty. Without it, each epoch runs to the
    iterator's StopIteration: exactly the reader's epoch."""

    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        for batch in self.loader:
            yield batch[0]["data"].permute(0, 3, 1, 2), batch[0]["label"].squeeze(1).long()


class Classifier(L.LightningModule):
    def __init__(self, arch, num_classes, lr):
        super().__init__()
        self.model = make_model(arch, num_classes).to(memory_format=torch.channels_last)
        self.loss_fn = nn.CrossEntropyLoss()
        self.lr = lr
        self.seen = []  # labels per step, for --record

    def training_step(self, batch, batch_idx):
        images, labels = batch
        self.seen.append(labels.tolist())
        loss = self.loss_fn(self.model(images), labels)
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--accelerator", default="gpu")
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=-1, help="max_steps (-1: whole epochs)")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--arch", default="resnet50")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--record", default=None, help="write PREFIX.rankR.json: labels per step")
    args = ap.parse_args()

    classes = sorted(d for d in os.listdir(args.data) if os.path.isdir(os.path.join(args.data, d)))
    data = StokerDataModule(args.data, args.batch_size, args.size, args.threads)
    model = Classifier(args.arch, len(classes), args.lr)
    trainer = L.Trainer(accelerator=args.accelerator, devices=args.devices, strategy="ddp",
                        precision="bf16-mixed", max_epochs=args.epochs, max_steps=args.steps,
                        use_distributed_sampler=False, enable_checkpointing=False,
                        logger=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model, datamodule=data)
    if args.record:
        with open(f"{args.record}.rank{trainer.global_rank}.json", "w") as f:
            json.dump({"rank": trainer.global_rank, "world": trainer.world_size,
                       "batches_per_epoch": len(data.loader), "steps": model.seen}, f)


if __name__ == "__main__":
    main()
