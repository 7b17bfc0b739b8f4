"""Keyword arguments passed through apply_* to the augmentations that accept them (DALI's
rules: an augmentation receives the keywords its signature names; a keyword no
augmentation accepts is an error; a required keyword that is missing is an error)."""

import inspect


class MissingArgException(Exception):
    def __init__(self, message, augmentation, missing_args):
        super().__init__(message)
        self.augmentation = augmentation
        self.missing_args = missing_args


def _params(op, skip):
    params = list(inspect.signature(op).parameters.values())
    return params[skip:]


def get_num_positional_args(op):
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in inspect.signature(op).parameters.values())


def accepted_kwargs(op, skip=2):
    params = _params(op, skip)
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        return None  # **kwargs: everything
    return {p.name for p in params
            if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}


def filter_extra_accepted_kwargs(op, kwargs, skip=2):
    names = accepted_kwargs(op, skip)
    return dict(kwargs) if names is None else {k: v for k, v in kwargs.items() if k in names}


def get_missing_kwargs(op, kwargs, skip=2):
    return [p.name for p in _params(op, skip)
            if p.default is inspect.Parameter.empty and p.name not in kwargs
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]


def forbid_unused_kwargs(augmentations, kwargs, call_name):
    used = set()
    for aug in augmentations:
        names = accepted_kwargs(aug.op)
        if names is None:
            return
        used |= names
    unused = [k for k in kwargs if k not in used]
    if unused:
        raise Exception(
            f"The kwarg(s) {', '.join(repr(k) for k in unused)} passed to `{call_name}` are not "
            f"used by any of the augmentations: "
            f"{', '.join(sorted({aug.name for aug in augmentations}))}.")
