"""Automatic augmentation with DALI's ``nvidia.dali.auto_aug`` API: AutoAugment
(``auto_augment``), RandAugment (``rand_augment``), TrivialAugmentWide
(``trivial_augment``), the standard ``augmentations`` and the ``core`` building blocks
(``@augmentation``, ``Policy``) for custom ones.

Every function takes ``convention="dali"`` (default: DALI's magnitudes and operation
definitions) or ``"torchvision"`` (torchvision's AutoAugment / RandAugment /
TrivialAugmentWide on PIL images). Lists made of the built-in augmentations run as one
fused operator (``auto_augment.apply``); lists with custom augmentations run through
per-sample conditional selection; both draw the same decisions for the same seed.
"""

from . import augmentations, core, auto_augment, rand_augment, trivial_augment  # noqa: F401
