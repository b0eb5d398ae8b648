"""Triangular and diagonal ops: tril, triu (+ in place), tril_indices, triu_indices, diag, diagonal,
diag_embed, diagflat, trace.
"""
from __future__ import annotations

__all__: list[str] = []  # the names coretorch.<name> exports from this family
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
