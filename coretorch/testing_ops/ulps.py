"""Accuracy in float32 ulps, for the kernels' accuracy tests (cpu's erf/GELU polynomials, the device kernels)."""
from __future__ import annotations

import numpy as np


def ulps32(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the float32 spacing at the correctly rounded reference (``ref`` in float64)."""
    spacing = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / np.maximum(spacing, float(np.finfo(np.float32).smallest_subnormal))
