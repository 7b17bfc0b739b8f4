"""The Augmentation wrapper (DALI's ``nvidia.dali.auto_aug.core`` Augmentation).

An augmentation is a function ``op(data, param, **kwargs)`` built from ``fn.*``
operators plus its magnitude setup: ``mag_range`` (low, high) split into
``num_magnitude_bins`` bins (or an explicit array of magnitudes), ``randomly_negate``
(the magnitude's sign is random), and ``mag_to_param`` (magnitude -> the op's parameter,
computed once per bin in NumPy). When an apply_* function runs it, the parameter of each
sample is looked up per bin and sign with ``auto_augment.stage_param`` from the decisions
of ``auto_augment.choose``.
"""

import numpy as np

from ... import fn
from .._conventions import magnitudes as _magnitudes
from ._args import (MissingArgException, filter_extra_accepted_kwargs, get_missing_kwargs,
                    get_num_positional_args)


class _SignedMagnitudeBin:
    """A magnitude bin together with its sign (DALI's signed_bin result): ``bin`` (int or
    DataNode), ``random_sign`` (a DataNode of 0 / 1, 1: negate) and
    ``signed_magnitude_idx`` = 2 * bin + random_sign, the row of a signed parameter table.
    Indexing picks one entry of a sign drawn with a shape (one per augmentation of a
    sequence)."""

    def __init__(self, magnitude_bin, random_sign, signed_magnitude_idx):
        self._magnitude_bin = magnitude_bin
        self._random_sign = random_sign
        self._signed_magnitude_idx = signed_magnitude_idx

    bin = property(lambda self: self._magnitude_bin)
    random_sign = property(lambda self: self._random_sign)
    signed_magnitude_idx = property(lambda self: self._signed_magnitude_idx)

    def __getitem__(self, idx):
        from ..._graph import DataNode
        b = self._magnitude_bin[idx] if isinstance(self._magnitude_bin, DataNode) else self._magnitude_bin
        return type(self)(b, self._random_sign[idx], self._signed_magnitude_idx[idx])

    @classmethod
    def create_from_bin(cls, magnitude_bin, random_sign=None, seed=None, shape=None):
        from ..._graph import DataNode
        if isinstance(magnitude_bin, (bool, np.bool_)) or not isinstance(magnitude_bin, (int, np.integer, DataNode)):
            raise Exception(
                "signed_bin: `magnitude_bin` must be an int or a DataNode of ints in "
                f"[0, num_magnitude_bins - 1], got {magnitude_bin!r}")
        if isinstance(magnitude_bin, np.integer):
            magnitude_bin = int(magnitude_bin)
        if random_sign is not None and (seed is not None or shape is not None):
            raise Exception("signed_bin: `random_sign` cannot be given together with `seed` or `shape`")
        if random_sign is None:
            kwargs = {"values": [0, 1], "dtype": "int32"}
            if seed is not None:
                kwargs["seed"] = seed
            if shape is not None:
                kwargs["shape"] = list(shape) if isinstance(shape, (list, tuple)) else [shape]
            random_sign = fn.random.uniform(**kwargs)
        # made here, before any conditional split that reads it
        return cls(magnitude_bin, random_sign, 2 * magnitude_bin + random_sign)


def signed_bin(magnitude_bin, random_sign=None, seed=None, shape=None):
    """Pairs a magnitude bin (int or DataNode) with a sign: `random_sign` (a DataNode of
    0 / 1), or one drawn here (with `seed` and `shape`). Augmentations declared with
    ``randomly_negate=True`` negate their magnitude where the sign is 1. Draw it before
    splitting a batch between augmentations (``select``), as DALI recommends."""
    return _SignedMagnitudeBin.create_from_bin(magnitude_bin, random_sign, seed, shape)


class _UndefinedParam:
    """Marks a keyword of ``.augmentation()`` that was not given."""


def _np_wrap(mag):
    return np.array(mag)


_PARAM_DTYPES = {"uint8": "uint8", "bool": "uint8", "int8": "int32", "int16": "int32",
                 "int32": "int32", "int64": "int32", "uint16": "int32", "uint32": "int32",
                 "float16": "float32", "float32": "float32", "float64": "float32"}


class Augmentation:
    """Wraps a transformation for automatic augmentation; make one with the
    ``@augmentation`` decorator."""

    def __init__(self, op, mag_range=None, randomly_negate=None, mag_to_param=None,
                 param_device=None, name=None, *, convention="dali", builtin=None):
        self._op = op
        self._mag_range = mag_range
        self._randomly_negate = randomly_negate
        self._mag_to_param = mag_to_param
        self._param_device = param_device
        self._name = name
        self._convention = convention
        self._builtin = builtin  # the C operation name of a stoker built-in
        if get_num_positional_args(op) <= 1:
            raise Exception(
                f"The {op} accepts {get_num_positional_args(op)} positional argument(s), but "
                "the functions decorated with `@augmentation` must accept at least two "
                f"positional arguments: the samples and parameters.\nError in: {self}.")

    def __repr__(self):
        params = [f"{k}={v!r}" for k, v in self._get_config().items() if v is not None]
        return f"Augmentation({', '.join([repr(self.op)] + params)})"

    # ---- DALI's properties ----
    op = property(lambda self: self._op)
    mag_range = property(lambda self: self._mag_range)
    mag_to_param = property(lambda self: self._mag_to_param or _np_wrap)
    randomly_negate = property(lambda self: self._randomly_negate or False)
    param_device = property(lambda self: self._param_device or "cpu")
    name = property(lambda self: self._name or self.op.__name__)
    convention = property(lambda self: self._convention)

    def augmentation(self, mag_range=_UndefinedParam, randomly_negate=_UndefinedParam,
                     mag_to_param=_UndefinedParam, param_device=_UndefinedParam,
                     name=_UndefinedParam, augmentation_cls=None):
        """A new augmentation with the same op and the given settings changed."""
        config = self._get_config()
        for key, value in dict(mag_range=mag_range, randomly_negate=randomly_negate,
                               mag_to_param=mag_to_param, param_device=param_device,
                               name=name).items():
            if value is not _UndefinedParam:
                config[key] = value
        cls = augmentation_cls or self.__class__
        return cls(self.op, **config, convention=self._convention, builtin=self._builtin)

    def _get_config(self):
        return {"mag_range": self._mag_range, "mag_to_param": self._mag_to_param,
                "randomly_negate": self._randomly_negate, "param_device": self._param_device,
                "name": self._name}

    def _key(self):
        """What the fused operator must agree with (translation ranges aside)."""
        mr = self._mag_range
        mr = None if mr is None else tuple(float(x) for x in np.ravel(mr))
        return (self._op, mr, bool(self.randomly_negate), self._mag_to_param, self._convention)

    # ---- magnitudes and parameters ----
    def _get_magnitudes(self, num_magnitude_bins):
        mag_range = self.mag_range
        if mag_range is None:
            return None
        if isinstance(mag_range, np.ndarray):
            if num_magnitude_bins is not None and len(mag_range) != num_magnitude_bins:
                raise Exception(
                    f"The augmentation `{self.name}` has nd.array of length {len(mag_range)} "
                    f"specified as the `mag_range`. However, the `num_magnitude_bins` passed to "
                    f"the call is {num_magnitude_bins}.")
            return mag_range
        if num_magnitude_bins is None:
            raise Exception(f"The `num_magnitude_bins` argument is missing in the call of the "
                            f"`{self.name}` augmentation.")
        if not hasattr(mag_range, "__len__") or len(mag_range) != 2:
            raise Exception(f"The `mag_range` must be a tuple of (low, high) ends of magnitude "
                            f"range or nd.array of explicitly defined magnitudes. Got "
                            f"`{mag_range}` for augmentation `{self.name}`.")
        return _magnitudes(self, num_magnitude_bins)

    def _map_mag_to_param(self, magnitude):
        param = self.mag_to_param(magnitude)
        from ..._graph import DataNode
        if isinstance(param, DataNode) or (
                isinstance(param, (list, tuple)) and any(isinstance(p, DataNode) for p in param)):
            raise Exception(f"The `mag_to_param` callback of `{self.name}` augmentation returned "
                            "a DataNode; it must return NumPy data, so that the parameters can "
                            f"be precomputed.\n\nError in augmentation: {self}.")
        return np.array(param)

    def _param_table(self, num_magnitude_bins):
        """(table [rows, *param_shape], signed): row 2k / 2k + 1 hold bin k's parameter for
        the magnitude and its negation when signed, row k otherwise."""
        mags = self._get_magnitudes(num_magnitude_bins)
        if mags is None:
            return None, False
        if self.randomly_negate:
            mags = [m for mag in mags for m in (mag, -mag)]
        params = [self._map_mag_to_param(m) for m in mags]
        ref = params[0]
        for p, m in zip(params, mags):
            if p.shape != ref.shape or p.dtype != ref.dtype:
                raise Exception(
                    f"The `mag_to_param` callback of `{self.name}` augmentation must return the "
                    f"arrays of the same type and shape for different magnitudes. Got param of "
                    f"shape {ref.shape} and {ref.dtype} type for magnitude {mags[0]}, but for "
                    f"magnitude {m} the returned array has shape {p.shape} and type {p.dtype}.")
        return np.stack(params), bool(self.randomly_negate)

    def _param_node(self, decisions, stage, num_magnitude_bins):
        table, signed = self._param_table(num_magnitude_bins)
        if table is None:
            return None
        dtype = _PARAM_DTYPES.get(table.dtype.name)
        if dtype is None:
            raise Exception(f"The parameters of `{self.name}` have type {table.dtype}; "
                            "numbers are needed")
        return fn.auto_augment.stage_param(
            decisions, stage=stage, values=[float(v) for v in table.ravel()],
            shape=list(table.shape[1:]) or None, dtype=dtype, signed=signed)

    def _call_with(self, data, param, kwargs):
        missing = get_missing_kwargs(self.op, kwargs)
        if missing:
            raise MissingArgException(
                f"The augmentation `{self.name}` requires following named argument(s) which "
                f"were not provided to the call: {', '.join(missing)}. Please make sure to pass "
                "the required arguments when calling the augmentation.",
                augmentation=self, missing_args=missing)
        return self.op(data, param, **filter_extra_accepted_kwargs(self.op, kwargs))

    def __call__(self, sample, *, magnitude_bin=None, num_magnitude_bins=None, random_sign=0,
                 **kwargs):
        """Applies the augmentation as ``op(sample, param, **kwargs)`` with
        ``param = mag_to_param(magnitudes[magnitude_bin] * (-1) ** random_sign)``.

        ``magnitude_bin`` is an int, a DataNode (one bin per sample) or a
        ``signed_bin(...)``; the parameter is then looked up per sample in the table of
        every bin's parameter. An augmentation with ``randomly_negate=True`` given a bin
        without a sign draws one (with a warning, as DALI). With an int bin,
        ``random_sign`` (an int) picks the sign."""
        table, signed = self._param_table(num_magnitude_bins)
        param = None
        if table is not None:
            param = self._param_for(table, signed, magnitude_bin, random_sign, sample)
        return self._call_with(sample, param, kwargs)

    def _param_for(self, table, signed, magnitude_bin, random_sign, sample):
        from ... import types
        from ..._graph import DataNode
        if magnitude_bin is None:
            raise Exception(
                f"The augmentation `{self.name}` has `mag_range` specified, so when called, it "
                "requires the `magnitude_bin` parameter to select the magnitude.\n"
                f"Error in augmentation: {self}.")
        if isinstance(magnitude_bin, (int, np.integer)) and not isinstance(magnitude_bin, (bool, np.bool_)) \
                and not isinstance(random_sign, DataNode):
            row = 2 * int(magnitude_bin) + int(bool(random_sign)) if signed else int(magnitude_bin)
            if not 0 <= row < len(table):
                raise Exception(f"The augmentation `{self.name}`: magnitude_bin {magnitude_bin} is "
                                f"outside [0, {len(table) // (2 if signed else 1) - 1}]")
            return table[row]
        device = self.param_device
        if device == "auto":
            device = sample.device if isinstance(sample, DataNode) else "cpu"
        if not signed:
            b = magnitude_bin.bin if isinstance(magnitude_bin, _SignedMagnitudeBin) else magnitude_bin
            if not isinstance(b, DataNode):
                return table[int(b)]
            return types.Constant(table, device=device)[b]
        if not isinstance(magnitude_bin, _SignedMagnitudeBin):
            import warnings
            warnings.warn(
                f"The augmentation `{self.name}` was declared with `randomly_negate=True`, but an "
                "unsigned `magnitude_bin` was passed: a random sign is drawn here. When a batch is "
                "split between augmentations, draw it once before the split with "
                "`signed_bin(magnitude_bin)` and pass the signed bins.", Warning, stacklevel=3)
            magnitude_bin = signed_bin(magnitude_bin, None if not isinstance(random_sign, DataNode) else random_sign)
        if isinstance(magnitude_bin.bin, DataNode):
            return types.Constant(table, device=device)[magnitude_bin.signed_magnitude_idx]
        both = table[2 * int(magnitude_bin.bin): 2 * int(magnitude_bin.bin) + 2]
        return types.Constant(both, device=device)[magnitude_bin.random_sign]
