"""The linear-algebra family: PyTorch's top-level aliases (torch.det, inverse, logdet, slogdet, cholesky, qr, svd,
pinverse, matrix_power, matrix_exp) and their Tensor methods.  The functions themselves (coretorch.linalg) live in
_decomp_ops.py (on the decomposition kernels) and _decomp_composite.py (composed of tensor ops)."""
from __future__ import annotations

from ..tensor import Tensor
from . import creation as _C
from ._decomp_composite import matrix_exp, matrix_power
from ._decomp_ops import (cholesky as _cholesky, det, inv, logdet, pinv, qr as _qr, return_type, slogdet as _slogdet,
                          svd as _svd)

__all__: list[str] = ["det", "logdet", "slogdet", "inverse", "pinverse", "cholesky", "qr", "svd", "matrix_power",
                      "matrix_exp"]


def inverse(input: Tensor) -> Tensor:
    """torch.inverse: linalg.inv."""
    return inv(input)


def slogdet(input: Tensor):
    """torch.slogdet: (sign, logabsdet) as torch.return_types.slogdet."""
    return _slogdet(input, _name="slogdet")


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: linalg.pinv with rcond relative to the largest singular value."""
    return pinv(input, rtol=rcond)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky (deprecated in PyTorch, still there): the lower (or upper) Cholesky factor."""
    return _cholesky(input, upper=upper, _api="cholesky")


def qr(input: Tensor, some: bool = True):
    """torch.qr: Q, R of the reduced (some=True) or complete factorization."""
    Q, R = _qr(input, "reduced" if some else "complete")
    return return_type("qr", ("Q", "R"))(Q, R)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """torch.svd (the old API): U, S, V (V, not Vh), reduced with some=True; without compute_uv, U and V are
    zero-filled (m, m) and (n, n) matrices."""
    m, n = input.shape[-2], input.shape[-1]
    if not compute_uv:
        from ._decomp_ops import svdvals
        S = svdvals(input)
        batch = tuple(input.shape[:-2])
        return return_type("svd", ("U", "S", "V"))(
            _C.zeros(batch + (m, m), dtype=input.dtype, device=input.device), S,
            _C.zeros(batch + (n, n), dtype=input.dtype, device=input.device))
    U, S, Vh = _svd(input, full_matrices=not some)
    return return_type("svd", ("U", "S", "V"))(U, S, Vh.mT)


METHODS: dict = {  # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
    "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inverse, "pinverse": pinverse,
    "cholesky": cholesky, "qr": qr, "svd": svd, "matrix_power": matrix_power, "matrix_exp": matrix_exp,
}
