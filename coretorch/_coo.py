"""The COO form a dense-backed sparse tensor carries (``coretorch.sparse``), in a module without dependencies so
that autograd and nn.functional can mark tensors sparse without importing the sparse API."""
from __future__ import annotations


class COO:
    """``indices`` (sparse_dim x nnz, int64), ``values`` (nnz, *dense dims), whether they are coalesced."""
    __slots__ = ("indices", "values", "coalesced")

    def __init__(self, indices, values, coalesced: bool) -> None:
        self.indices, self.values, self.coalesced = indices, values, coalesced


def mark_sparse(dense, indices, values, coalesced: bool = False):
    """Make ``dense`` (whose value is ``values`` summed at ``indices``) a sparse COO tensor, in place."""
    dense.__dict__["_coo"] = COO(indices, values, coalesced)
    dense.__class__ = SPARSE_CLASS[0]  # a Tensor subclass without slots of its own: the same layout
    return dense


#: set by coretorch.sparse: ``add(a, b)`` of gradients where either is sparse (AccumulateGrad)
SPARSE_ADD: list = [None]
#: set by coretorch.sparse: the class of sparse tensors
SPARSE_CLASS: list = [None]
