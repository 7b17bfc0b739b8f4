"""select: one augmentation per sample, chosen by a per-sample index (DALI's
``nvidia.dali.auto_aug.core.select``)."""

from ...conditional import switch


def select(ops, selected_op_idx, *op_args, **op_kwargs):
    """Applies ``ops[selected_op_idx](*op_args, **op_kwargs)`` per sample: each
    augmentation runs only on the samples whose index picks it (a conditional switch, no
    copies), and the results merge in the original order. ``selected_op_idx`` is a
    DataNode of integers in [0, len(ops) - 1] (up to 16 augmentations); DataNodes among
    the arguments (``magnitude_bin=signed_bin(...)``) are read per sample by the branch
    that runs. A sample whose index has no augmentation fails at run time."""
    ops = list(ops)
    if len(ops) == 1:
        return ops[0](*op_args, **op_kwargs)
    return switch(selected_op_idx, ops, *op_args, name="select_augmentation", **op_kwargs)
