"""Building blocks of automatic augmentation (DALI's ``nvidia.dali.auto_aug.core``)."""

from ._augmentation import Augmentation, signed_bin
from ._select import select
from .decorator import augmentation
from .policy import Policy

_Augmentation = Augmentation

__all__ = ["augmentation", "Augmentation", "Policy", "select", "signed_bin"]
