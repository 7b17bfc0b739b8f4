"""NumPy iterators: the framework-neutral version of the PyTorch plugin's iterators,
giving each output as one dense NumPy array (a zero-copy view of the batch)."""

from .base import BaseIterator, LastBatchPolicy  # noqa: F401


class GenericIterator(BaseIterator):
    """Yields [{name: np.ndarray}] (one dict per pipeline) with DALI's epoch semantics."""

    def _convert(self, tensor_list, pipe):
        return tensor_list.as_array()


class ClassificationIterator(GenericIterator):
    """GenericIterator with output_map ["data", "label"]."""

    def __init__(self, pipelines, size=-1, reader_name=None, auto_reset=False,
                 fill_last_batch=None, last_batch_padded=False,
                 last_batch_policy=LastBatchPolicy.FILL, prepare_first_batch=True):
        super().__init__(pipelines, ["data", "label"], size=size, reader_name=reader_name,
                         auto_reset=auto_reset, fill_last_batch=fill_last_batch,
                         last_batch_padded=last_batch_padded,
                         last_batch_policy=last_batch_policy,
                         prepare_first_batch=prepare_first_batch)
