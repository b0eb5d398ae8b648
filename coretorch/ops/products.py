"""Products: einsum (opt_einsum picks the contraction order), tensordot, kron, cross, baddbmm, addbmm,
addmv, addr, block_diag, cartesian_prod, combinations, cdist, dist, inner, vdot, chain_matmul.
"""
from __future__ import annotations

__all__: list[str] = []  # the names coretorch.<name> exports from this family
METHODS: dict = {}       # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
