"""Indexing by index tensors: take, take_along_dim, scatter (src/value, reduce=), scatter_reduce,
index_put(_), index_copy, index_fill, masked_scatter, put_, where(cond), argwhere.
"""
from __future__ import annotations

__all__: list[str] = []  # the names coretorch.<name> exports from this family
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
