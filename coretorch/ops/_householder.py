"""geqrf and the products of its Householder reflectors: ``orgqr`` / ``linalg.householder_product`` and ``ormqr``.

``geqrf`` is LAPACK's (numpy's ``qr(mode="raw")``; on opencl a host round trip, as the other decompositions); the
products are compositions of tensor ops (one rank-1 update per reflector), so they are differentiable on every
device.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..autograd.graph import Node
from ..tensor import Tensor
from . import creation as _C, indexing as _I, linalg as _L, shape as _S, triangular as _T
from ._util import edge, return_type

__all__ = ["geqrf", "orgqr", "ormqr", "householder_product"]

_geqrf_result = return_type("geqrf", ("a", "tau"))


class GeqrfBackward0(Node):
    def backward(self, *grads):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def _check_float(op: str, x: Tensor) -> None:
    if not x.dtype.is_floating_point or x.dtype in (_dt.float16, _dt.bfloat16):
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{x.dtype._tname[:-6]}'")


def geqrf(input: Tensor):
    """``(a, tau)``: the QR factorization in LAPACK's compact form, R on and above the diagonal of ``a``, the
    Householder vectors below it, their scales in ``tau`` (not differentiable, as in PyTorch)."""
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    _check_float("geqrf", input)
    a = input.detach().cpu().numpy()
    m, n = a.shape[-2:]
    if a.size == 0:
        h, tau = a.copy(), np.zeros(a.shape[:-2] + (min(m, n),), a.dtype)
    else:
        h, tau = np.linalg.qr(a, mode="raw")  # h is the transposed (Fortran-order) result
        h = np.ascontiguousarray(np.swapaxes(h, -1, -2), dtype=a.dtype)
        tau = np.asarray(tau, dtype=a.dtype)
    out_a = _C.tensor(h, dtype=input.dtype, device=input.device)
    out_tau = _C.tensor(tau, dtype=input.dtype, device=input.device)
    if input.requires_grad:
        node = GeqrfBackward0()
        node.next_functions = (edge(input),)
        out_a.grad_fn, out_a._rg = node, True
        out_tau.grad_fn, out_tau._rg, out_tau._out_nr = node, True, 1
    return _geqrf_result(out_a, out_tau)


def _reflectors(input: Tensor, k: int) -> Tensor:
    """The Householder vectors as columns (*, m, k): unit diagonal, ``input``'s entries below it."""
    m = input.shape[-2]
    low = _T.tril(_I.narrow(input, -1, 0, k), -1)
    return low + _C.eye(m, k, dtype=input.dtype, device=input.device)


def _apply(C: Tensor, V: Tensor, tau: Tensor, order, left: bool) -> Tensor:
    """C with the reflectors ``I - tau_i v_i v_i^T`` applied one by one in ``order`` (from the left or the
    right)."""
    for i in order:
        v = _I.narrow(V, -1, i, 1)                      # (*, m, 1)
        t = _S.unsqueeze(_I.narrow(tau, -1, i, 1), -1)  # (*, 1, 1)
        if left:
            C = C - _L.matmul(v * t, _L.matmul(_S.transpose(v, -2, -1), C))
        else:
            C = C - _L.matmul(_L.matmul(C, v), _S.transpose(v * t, -2, -1))
    return C


def householder_product(input: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """The first ``n`` columns of the product of the Householder reflectors ``geqrf`` describes (``Q`` of the QR
    factorization for ``geqrf``'s outputs)."""
    op = "torch.linalg.householder_product"
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    m, n = input.shape[-2:]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.ndim != input.ndim - 1:
        raise RuntimeError(f"{op}: input.dim() - tau.dim() must be equal to 1 but got {input.ndim - tau.ndim}")
    _check_float("orgqr", input)
    k = tau.shape[-1]
    eye = _C.eye(m, n, dtype=input.dtype, device=input.device)
    Q = _S.expand(eye, tuple(input.shape[:-2]) + (m, n)) if input.ndim > 2 else eye
    Q = _apply(Q, _reflectors(input, k), tau, range(k - 1, -1, -1), True)
    if out is not None:
        out.copy_(Q)
        return out
    return Q


def orgqr(input: Tensor, input2: Tensor, *, out=None) -> Tensor:
    """:func:`coretorch.linalg.householder_product` (LAPACK's name); ``input2`` is ``tau`` (PyTorch's keyword)."""
    return householder_product(input, input2, out=out)


def _check_ormqr_args(input: Tensor, tau: Tensor, other: Tensor, left: bool) -> None:
    """PyTorch's ormqr checks of ``tau`` and ``other`` against ``input`` (in its order): without them a tau of
    another shape was broadcast into a silent wrong-shaped product (a (3, 3) tau for a (3, 3) input gave (3, 3, 3))."""
    op = "torch.ormqr"
    if tau.ndim == 0 or tau.shape[-1] != min(other.shape[-2 if left else -1], input.shape[-1]):
        raise RuntimeError(f"{op}: tau.shape[-1] must be equal to min(other.shape[-2], input.shape[-1])")
    if input.ndim - tau.ndim != 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {input.ndim}")
    if other.ndim != input.ndim:
        raise RuntimeError(f"{op}: Expected other to have the same number of dimensions as input, but got other.ndim "
                           f"equal to {other.ndim} and input.ndim is equal to {input.ndim}")
    batch = tuple(input.shape[:-2])
    if tuple(tau.shape[:-1]) != batch:
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tuple(other.shape[:-2]) != batch:
        raise RuntimeError(f"{op}: Expected batch dimensions of other to be equal to input.shape[:-2], but got "
                           f"{list(other.shape[:-2])}")
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"{op}: Expected input and {name} to have the same dtype, but input has dtype"
                               f"{input.dtype._tname[:-6]} and {name} has dtype {t.dtype._tname[:-6]}")


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False, *,
          out=None) -> Tensor:
    """``input3`` multiplied by the full ``Q`` (m x m) of ``geqrf``'s reflectors (``input``, ``input2`` the
    ``tau``): ``Q @ input3`` (``left``), or ``input3 @ Q``; ``Q^T`` with ``transpose``.  (PyTorch's keyword
    names: ``input2=``/``input3=``.)"""
    tau, other = input2, input3
    if input.ndim < 2 or other.ndim < 2:
        raise RuntimeError("torch.ormqr: input and other must have at least 2 dimensions.")
    m = input.shape[-2]
    if (other.shape[-2] if left else other.shape[-1]) != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to input.shape[-2]")
    _check_ormqr_args(input, tau, other, left)
    _check_float("ormqr", input)
    k = tau.shape[-1]
    V = _reflectors(input, k)
    forward = (not left) != transpose  # Q^T C and C Q apply H_1 first
    order = range(k) if forward else range(k - 1, -1, -1)
    r = _apply(other, V, tau, order, left)
    if out is not None:
        out.copy_(r)
        return out
    return r
