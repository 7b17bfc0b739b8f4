"""Magnitude bins in DALI's and torchvision's conventions (the same numbers as the C table
in src/autoaug/autoaug.c)."""

import numpy as np

CONVENTIONS = ("dali", "torchvision")


def check_convention(convention):
    if convention not in CONVENTIONS:
        raise Exception(f"The `convention` must be 'dali' or 'torchvision', got {convention!r}.")
    return convention


def torch_linspace(lo, hi, n):
    """torch.linspace(lo, hi, n) in float32 as torch's CPU kernel computes it: start + step k
    below the midpoint, end - step (n - 1 - k) from it, all in float32."""
    start, end = np.float32(lo), np.float32(hi)
    if n == 1:
        return np.array([start], dtype=np.float32)
    step = (end - start) / np.float32(n - 1)
    k = np.arange(n)
    lower = start + step * k.astype(np.float32)
    upper = end - step * (n - 1 - k).astype(np.float32)
    return np.where(k < n // 2, lower, upper).astype(np.float32)


def torch_posterize_bits(hi, n):
    """torchvision's posterize bins: 8 - round(arange(n) / ((n - 1) / (8 - hi))) in float32."""
    if n == 1:
        return np.array([8], dtype=np.int32)
    div = np.float32((n - 1) / (8.0 - hi))
    return (8 - np.round(np.arange(n, dtype=np.float32) / div)).astype(np.int32)


def magnitudes(aug, n):
    lo, hi = aug.mag_range
    if aug.convention == "torchvision":
        if aug._builtin == "posterize":
            return torch_posterize_bits(hi, n).astype(np.float32)
        return torch_linspace(lo, hi, n)
    return np.linspace(lo, hi, n, dtype=np.float32)
