"""Range checks of integer index tensors read back as one boolean."""
from __future__ import annotations

from ..tensor import Tensor
from ._util import host_all_below


def any_outside(t: Tensor, lo: int, hi: int) -> bool:
    """Whether an element of the integer tensor ``t`` lies outside [lo, hi): one read of one boolean rather than of
    the smallest and largest element, so that while the indices are valid the value read stays the same (a compiled
    step's checked read then replays instead of recapturing for each new batch).  In host memory that is
    :func:`host_all_below`'s one reduction (the index checks' own, which a capture checks by its outcome)."""
    be = t._be
    if be.host_memory:
        return not host_all_below(be, t._data, hi, lo)
    from . import pointwise as _pw, reduction as _R  # (imported on use: they import this package's helpers)
    return bool(_R.any(_pw.logical_or(_pw.lt(t, lo), _pw.ge(t, hi))).item())
