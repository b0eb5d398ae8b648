"""Shape ops by joining, splitting and rearranging: roll, rot90, tile, repeat_interleave, meshgrid,
hstack/vstack/dstack/column_stack, hsplit/vsplit/dsplit/tensor_split, atleast_nd, ravel, moveaxis, as_strided,
unfold, the in-place shape methods and the new_* constructors.
"""
from __future__ import annotations

__all__: list[str] = []  # the names coretorch.<name> exports from this family
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
