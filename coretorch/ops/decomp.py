"""The differentiable linear-algebra functions behind coretorch.linalg: norms, inverse, determinants,
solve, lstsq, cholesky, qr, svd, eigh, pinv, matrix_rank, matrix_power, matrix_exp, multi_dot.
"""
from __future__ import annotations

__all__: list[str] = []  # the names coretorch.<name> exports from this family
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
