"""Per-sample conditional execution without rewriting Python code.

Pipelines defined with ``enable_conditionals=True`` can use plain ``if`` statements on
data nodes (see ``stoker._conditionals``). These functions give the same power to
graphs built without the rewriter::

    from stoker import conditional
    with conditional.when(flip):             # operators here run where flip is true
        flipped = fn.flip(images, horizontal=1)
    images = fn.select(flip, images, flipped)  # merge: select(index, v0, v1, ...)

    images = conditional.switch(k, [fn.invert, lambda x: fn.flip(x, vertical=1)], images)

Branches may hold CPU or GPU operators (a GPU operator in a branch runs on the sub-batch
of the samples taking it; the merge of GPU values is a GPU "select" that copies nothing).
Conditions themselves are read per sample on the host: compute them with CPU operators.
"""

from ._conditionals import convert, do_not_convert, switch, when, merge_values as _merge

__all__ = ["when", "switch", "merge", "convert", "do_not_convert"]


def merge(index, *values, name="merge"):
    """Per-sample merge: sample i gets ``values[index[i]]`` (a ``select`` named `name`).
    Numbers among the values become ``constant`` nodes; equal-length tuples or lists
    merge element-wise."""
    from ._graph import check_defined
    if len(values) < 1:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError("stoker.conditional.merge: give at least one value")
    return check_defined(_merge(name, index, list(values), "stoker.conditional.merge"))
