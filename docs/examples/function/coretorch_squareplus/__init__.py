"""coretorch-squareplus: squareplus(x, b) = (x + sqrt(x^2 + b)) / 2 (docs/plugins.md, "A Function with kernels")."""
import coretorch  # noqa: F401  (first: coretorch loads this plugin through its entry point; see docs/plugins.md)
from .function import squareplus

__all__ = ["squareplus"]
