"""Elementwise math beyond the primitives and the special functions: trigonometric and hyperbolic
families, log2/log10/exp2, hypot, logaddexp, xlogy, erf family, gamma family, Bessel i0/i1, clamp with tensor
bounds, addcmul/addcdiv, nan_to_num, and the comparisons and tests (isinf, isfinite, isclose, isin, ...).
"""
from __future__ import annotations

__all__: list[str] = []  # the names coretorch.<name> exports from this family
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
