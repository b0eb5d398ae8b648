"""The linear-algebra family: PyTorch's top-level aliases (torch.det, inverse, logdet, slogdet, cholesky, qr, svd,
pinverse, matrix_power, matrix_exp) and their Tensor methods.  The functions themselves (coretorch.linalg) live in
_decomp_ops.py (on the decomposition kernels) and _decomp_composite.py (composed of tensor ops)."""
from __future__ import annotations


from .._warn_once import warn_once
from ..amp.autocast_mode import autocast as _autocast, cast_inputs as _ac_cast, state as _ac
from ..tensor import Tensor
from . import creation as _C
from ._decomp_composite import matrix_exp as _matrix_exp, matrix_power as _matrix_power
from ._decomp_extra import cholesky_inverse as _cholesky_inverse, cholesky_solve as _cholesky_solve, with_out
from ._decomp_ops import (cholesky as _cholesky, det as _det, inv, logdet as _logdet, pinv, qr as _qr, return_type,
                          slogdet as _slogdet, svd as _svd)

__all__: list[str] = ["det", "logdet", "slogdet", "inverse", "pinverse", "cholesky", "qr", "svd", "matrix_power",
                      "matrix_exp", "cholesky_solve", "cholesky_inverse"]


def inverse(input: Tensor) -> Tensor:
    """torch.inverse: linalg.inv."""
    return inv(input)


def slogdet(input: Tensor):
    """torch.slogdet: (sign, logabsdet) as torch.return_types.slogdet."""
    return _slogdet(input, _name="slogdet")


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: linalg.pinv with rcond relative to the largest singular value."""
    if _ac.on:  # autocast: on the CPU float32 list (one attribute check when off)
        input, = _ac_cast("pinverse", input)
        with _autocast(input.device.type, enabled=False):  # its inner matmuls too, as PyTorch's kernel
            return pinv(input, rtol=rcond)
    return pinv(input, rtol=rcond)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky (deprecated in PyTorch, still there): the lower (or upper) Cholesky factor."""
    warn_once("cholesky", "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
              "future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)"
              "\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
              "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.",
              3)  # (the caller of torch.cholesky, through out='s wrapper)
    return _cholesky(input, upper=upper, _api="cholesky")


def qr(input: Tensor, some: bool = True):
    """torch.qr: Q, R of the reduced (some=True) or complete factorization."""
    warn_once("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
              "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\nQ, R = "
              "torch.qr(A, some)\nshould be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some else "
              "'complete')", 3)
    Q, R = _qr(input, "reduced" if some else "complete")
    return return_type("qr", ("Q", "R"))(Q, R)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """torch.svd (the old API): U, S, V (V, not Vh), reduced with some=True; without compute_uv, U and V are
    zero-filled (m, m) and (n, n) matrices."""
    if input.ndim < 2:  # (before the shape is read: a 0-d or 1-d input gave an IndexError)
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {input.ndim} dimensions "
                           "instead")
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


det = with_out(_det, "det")
logdet = _logdet
matrix_power = with_out(_matrix_power, "matrix_power")
matrix_exp = with_out(_matrix_exp, "matrix_exp", out=False)  # (no out= in PyTorch: its keyword names)
inverse = with_out(inverse, "inverse")
slogdet = with_out(slogdet, "slogdet")
cholesky = with_out(cholesky, "cholesky")
qr = with_out(qr, "qr")
svd = with_out(svd, "svd")
cholesky_solve = with_out(_cholesky_solve, "cholesky_solve")
cholesky_inverse = with_out(_cholesky_inverse, "cholesky_inverse")
for _fn in (det, logdet, matrix_power, matrix_exp, cholesky_solve, cholesky_inverse):
    _fn.__module__ = __name__  # exported as coretorch.ops.<name> with the family's other functions (ops._export)

METHODS: dict = {  # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
    "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inverse, "pinverse": pinverse,
    "cholesky": cholesky, "qr": qr, "svd": svd, "matrix_power": matrix_power, "matrix_exp": matrix_exp,
    "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse,
}
