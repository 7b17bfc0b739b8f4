"""JAX iterator: batches as jax arrays through DLPack.

``Iterator`` (alias ``DALIGenericIterator``) takes the arguments of DALI's JAX
iterator (pipelines, output_map, size, reader_name, auto_reset, last_batch_policy,
last_batch_padded, prepare_first_batch) and yields one dict per pipeline, with DALI's
epoch semantics. With one pipeline, ``__next__`` returns the dict itself, as DALI's JAX
iterator does.
"""

import jax
import jax.numpy as jnp

from .base import BaseIterator, LastBatchPolicy  # noqa: F401

__all__ = ["Iterator", "DALIGenericIterator", "LastBatchPolicy", "to_jax"]


def to_jax(tensor_list):
    """One dense TensorList as a jax array (zero-copy where JAX allows it)."""
    if not tensor_list.is_dense():
        raise ValueError("stoker.plugin.jax: the batch is ragged (samples differ in shape)")
    return jnp.from_dlpack(tensor_list)


class Iterator(BaseIterator):
    def _convert(self, tensor_list, pipe):
        return to_jax(tensor_list)

    def _slice(self, tensor, n):
        return tensor[:n]

    def _fill(self, tensor, last, k):
        return jnp.concatenate([tensor, jnp.repeat(last, k, axis=0)])

    def __next__(self):
        batches = super().__next__()
        return batches[0] if len(batches) == 1 else batches


DALIGenericIterator = Iterator
_ = jax
