"""coretorch-squareplus: squareplus(x, b) = (x + sqrt(x^2 + b)) / 2 (docs/plugins.md, "A Function with kernels")."""
from .function import squareplus

__all__ = ["squareplus"]
