"""Variance and standard deviation reductions (var, std, var_mean, std_mean) with their backward nodes;
``ops.reduction`` re-exports every name."""
from __future__ import annotations

import builtins
import warnings
from typing import TYPE_CHECKING

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad, no_grad as _no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import edge
from .. import ops as _ops  # the package: comparison (isfinite, isinf) sits above the reductions
from .indexing import narrow
from .pointwise import div, eq, logical_and, logical_not, mul, sqrt, sub, where
from ._reduction_base import _axes, _expand_back, _f16, _f32, _f64

if TYPE_CHECKING:
    from .reduction import any, mean, sum
# bound by ops.reduction (bind_late), which imports this module and re-exports its names
_LATE = ("any", "mean", "sum")


def _var_args(dim, unbiased, correction):
    if isinstance(dim, bool):  # legacy var(unbiased)
        unbiased, dim = dim, None
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    elif unbiased is not None:
        raise RuntimeError("var/std: cannot pass both 'unbiased' and 'correction'")
    return dim, correction


_F64_OK: dict = {}  # kernel table -> whether the device has float64


def _has_f64(table) -> bool:
    ok = _F64_OK.get(table)
    if ok is None:
        try:
            table.empty((1,), _f64.np)
            ok = True
        except (RuntimeError, TypeError):  # (an OpenCL device without cl_khr_fp64)
            ok = False
        _F64_OK[table] = ok
    return ok


def _var_acc(input, dim, keepdim, correction, op="var"):
    """The variance in its accumulation dtype: float64 for float32 (as PyTorch's CPU kernel accumulates; the
    squares of 1e20 overflow float32, and std(1e30) is finite), float32 for float16/bfloat16."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"std and var only support floating point and complex dtypes, got {input.dtype}")
    if input.dtype is _f16 or input.dtype is _dt.bfloat16:  # in float32 as PyTorch (half squares lose digits)
        input = input.to(_f32)
    if input.dtype is _f32 and _has_f64(input._be):
        input = input.to(_f64)
    mu = mean(input, dim, keepdim=True)
    d = sub(input, mu)
    s = sum(mul(d, d), dim, keepdim)
    n = input.numel() // builtins.max(s.numel(), 1)
    if n - correction <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=5)
    return div(s, builtins.max(n - correction, 0))


class VarBackward0(Node):
    """PyTorch's var_backward: 2 / (N - correction) * grad * (x - mean), also where N <= correction (+-inf; with no
    dim: grad * inf, NaN where x is the mean), where the composite's path through the mean would give NaN."""
    __slots__ = ("axes", "keepdim", "shape", "correction")

    def backward(self, g):
        (x,) = self.saved()
        axes = self.axes if x.ndim else None
        if axes is None:
            mu = mean(x)
            dof = x.numel() - self.correction
            if dof <= 0:
                return (mul(g, where(eq(x, mu), float("nan"), float("inf"))),)
            return (mul(mul(g, 2.0 / dof), sub(x, mu)),)
        rn = 1
        for a in axes:
            rn *= self.shape[a]
        dof = rn - self.correction
        ge = _expand_back(g, self.shape, axes, self.keepdim)
        return (mul(mul(ge, 2.0 / dof if dof else float("inf")), sub(x, mean(x, axes, keepdim=True))),)


def var(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """The variance of ``input``, overall or over ``dim``.
    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all when None.
        unbiased (bool, optional): the old spelling of ``correction`` (True is 1, False is 0).
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
        correction (int, optional): the difference between the sample size and the degrees of freedom
            (default 1: Bessel's correction).
    """
    return _var(input, dim, unbiased, keepdim, correction, "var")


def _var(input, dim, unbiased, keepdim, correction, op):
    dim, correction = _var_args(dim, unbiased, correction)
    if not (_gs.enabled and isinstance(input, Tensor) and input._rg):
        v = _var_acc(input, dim, keepdim, correction, op)
        return v if v.dtype is input.dtype else v.to(input.dtype)
    with _no_grad():
        v = _var_acc(input, dim, keepdim, correction, op)
        if v.dtype is not input.dtype:
            v = v.to(input.dtype)
    return _var_node(input, v, dim, keepdim, correction, op)


def _var_node(input, v, dim, keepdim, correction, op):
    """``v`` (the variance of ``input``, computed without a graph) as the output of a VarBackward0."""
    axes = _axes(dim, input.ndim, op)
    node = VarBackward0()
    node.axes, node.keepdim, node.shape, node.correction = axes, keepdim, tuple(input._data.shape), correction
    node.save(input)
    node.next_functions = (edge(input),)
    return _make(v._data, v.dtype, v._be, node)


class StdBackward0(Node):
    """d std = d var / (2 std), and 0 where std is 0 (PyTorch's std_backward; sqrt's backward would give NaN)."""
    __slots__ = ("out",)

    def backward(self, g):
        (out,) = self.saved()
        return (where(eq(out, 0), 0.0, div(g, mul(out, 2))),)


def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """The standard deviation of ``input``, overall or over ``dim``.
    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all when None.
        unbiased (bool, optional): the old spelling of ``correction`` (True is 1, False is 0).
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
        correction (int, optional): the difference between the sample size and the degrees of freedom
            (default 1: Bessel's correction).
    """
    return _std(input, dim, unbiased, keepdim, correction, "std")


def _std(input, dim, unbiased, keepdim, correction, op):
    dim, correction = _var_args(dim, unbiased, correction)
    if not (_gs.enabled and isinstance(input, Tensor) and input._rg):
        r = sqrt(_var_acc(input, dim, keepdim, correction, op))
        return r if r.dtype is input.dtype else r.to(input.dtype)
    with _no_grad():
        v = _var_acc(input, dim, keepdim, correction, op)
        r = sqrt(v)
        if r.dtype is not input.dtype:  # (rounded once from the accumulation dtype; the node's output is input's)
            r = r.to(input.dtype)
            v = v.to(input.dtype)
    # PyTorch's std_backward: var_backward of grad / (2 std) (finite where N < correction: the composite's
    # division by max(N - correction, 0) gave NaN there)
    v = _var_node(input, v, dim, keepdim, correction, op)
    node = StdBackward0()
    node.next_functions = (edge(v),)
    r = _make(r._data, r.dtype, r._be, node)
    node.out = r
    node.save(r)
    return r


def _welford_mean(input: Tensor, dim, keepdim: bool, m: Tensor) -> Tensor:
    """The mean as PyTorch's var_mean/std_mean return it on the CPU: that of its Welford pass in the elements' order,
    where the running mean is NaN from the first non-finite element on, except a single inf that comes last (its
    running mean is that inf).  Finite slices keep ``m``; the gradient stays mean's (PyTorch's: 1/n each).  (Rows of
    32,768 elements and more are summed in parallel chunks by PyTorch: there the rule is approximate.)"""
    if not input.dtype.is_floating_point or input.numel() == 0:
        return m
    with no_grad():
        x = input.detach()
        bad = logical_not(_ops.comparison.isfinite(x))
        if x._be.host_memory and not bool(any(bad).item()):  # (a free check in host memory: the common case)
            return m
        axes = _axes(dim, x.ndim, "var_mean")
        last = x
        for a in (range(x.ndim) if axes is None else axes):
            last = narrow(last, a, x.shape[a] - 1, 1)
        last = last.to(m.dtype).reshape(tuple(m.shape))
        cnt = sum(bad, axes, keepdim)
        inf_last = logical_and(eq(cnt, 1), _ops.comparison.isinf(last))
        fixed = where(eq(cnt, 0), m.detach(), where(inf_last, last, float("nan")))
    m._data = fixed._data  # (a fresh result: its node saved nothing)
    return m


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` of ``input`` in one pass (arguments as :func:`var`); the mean of non-finite slices as
    PyTorch's Welford pass gives it (see ``_welford_mean``)."""
    if isinstance(dim, bool):  # the legacy var_mean(input, unbiased) overload: over all elements (not dim 1)
        unbiased, dim = dim, None
    return (_var(input, dim, unbiased, keepdim, correction, "var_mean"),
            _welford_mean(input, dim, keepdim, mean(input, dim, keepdim)))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` of ``input`` in one pass (arguments as :func:`std`; the mean as :func:`var_mean`'s)."""
    if isinstance(dim, bool):  # the legacy std_mean(input, unbiased) overload: over all elements (not dim 1)
        unbiased, dim = dim, None
    return (_std(input, dim, unbiased, keepdim, correction, "std_mean"),
            _welford_mean(input, dim, keepdim, mean(input, dim, keepdim)))
