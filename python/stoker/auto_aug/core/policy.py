"""AutoAugment policies (DALI's ``Policy``)."""

import warnings

from ._augmentation import Augmentation


class Policy:
    """Sub-policies of (augmentation, probability, magnitude bin) for AutoAugment: each
    sample takes one sub-policy uniformly at random and runs its stages in order, each with
    its probability."""

    def __init__(self, name, num_magnitude_bins, sub_policies):
        self.name = name
        self.num_magnitude_bins = num_magnitude_bins
        if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
            raise Exception(
                f"The `num_magnitude_bins` must be a positive integer, got {num_magnitude_bins}.")
        if not isinstance(sub_policies, (list, tuple)):
            raise Exception(f"The `sub_policies` must be a list or tuple of sub policies, "
                            f"got {type(sub_policies)}.")
        for sub_policy in sub_policies:
            if not isinstance(sub_policy, (list, tuple)):
                raise Exception(f"Each sub policy must be a list or tuple, got {sub_policy}.")
            for op_desc in sub_policy:
                self._check(name, op_desc)
        self.sub_policies = tuple(tuple(tuple(d) for d in sp) for sp in sub_policies)
        self._builtin = None  # (C policy name, convention) of the published policies

    def _check(self, name, op_desc):
        if not isinstance(op_desc, (list, tuple)) or len(op_desc) != 3:
            raise Exception(f"Each operation in sub policy must be specified as a triple: "
                            f"(augmentation, probability, magnitude). Got {op_desc}.")
        aug, p, mag = op_desc
        if not isinstance(aug, Augmentation):
            raise Exception(f"Each augmentation in sub policies must be an instance of "
                            f"Augmentation. Got `{aug}`. Did you forget to use `@augmentation` "
                            f"decorator?")
        if not isinstance(p, (float, int)) or not 0 <= p <= 1:
            raise Exception(f"Probability of applying the augmentation must be a number from "
                            f"`[0, 1]` range. Got `{p}` for augmentation `{aug.name}`.")
        if mag is None:
            if aug.mag_range is not None:
                raise Exception(f"The augmentation `{aug.name}` has `mag_range` specified, so "
                                f"the magnitude bin is required. However, got `None` in the "
                                f"policy `{name}`.")
        else:
            if aug.mag_range is None:
                warnings.warn(f"The magnitude bin `{mag}` for augmentation `{aug.name}` in "
                              f"policy `{name}` will be ignored. The augmentation does not "
                              f"accept magnitudes (as it has no `mag_range` specified).")
            if not isinstance(mag, int) or not 0 <= mag < self.num_magnitude_bins:
                raise Exception(f"Magnitude of the augmentation must be an integer from "
                                f"`[0, {self.num_magnitude_bins - 1}]` range. Got `{mag}` for "
                                f"augmentation `{aug.name}`.")

    @property
    def augmentations(self):
        augs = []
        for sp in self.sub_policies:
            for aug, _, _ in sp:
                if all(a is not aug for a in augs):
                    augs.append(aug)
        return {a.name: a for a in sorted(augs, key=lambda a: a.name)}

    def _ordered_augmentations(self):
        """Distinct augmentations in order of first appearance (the C table's order)."""
        augs = []
        for sp in self.sub_policies:
            for aug, _, _ in sp:
                if all(a is not aug for a in augs):
                    augs.append(aug)
        return augs

    def __repr__(self):
        subs = ",\n\t".join(repr([(a.name, p, m) for a, p, m in sp]) for sp in self.sub_policies)
        return (f"Policy(name={self.name!r}, num_magnitude_bins={self.num_magnitude_bins!r}, "
                f"sub_policies=[\n\t{subs}])")
