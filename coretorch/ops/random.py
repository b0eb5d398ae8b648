"""Random sampling: Generator objects, the generator= keyword, multinomial, bernoulli, poisson, normal's
overloads, randperm, the *_like samplers, the in-place distributions (exponential_, geometric_, ...), RNG state.
"""
from __future__ import annotations

__all__: list[str] = []  # the names coretorch.<name> exports from this family
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
