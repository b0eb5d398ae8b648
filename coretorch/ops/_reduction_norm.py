"""logsumexp and the vector norms (torch.norm's p-norms, inf-norms) with their backward nodes;
``ops.reduction`` re-exports every name."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ..autograd._node_names import named_node, saves_also
from ..autograd.grad_mode import no_grad as _no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import edge, norm_dim
from .pointwise import abs as _abs, div, eq, exp, isnan, logical_or, mul, ne, pow, sign, sub, where
from ._reduction_base import _ReduceNode, _axes, _expand_back, _f16, _f32, _recorded, _reduced_shape

if TYPE_CHECKING:
    from .reduction import amax, amin, sum
# bound by ops.reduction (bind_late), which imports this module and re-exports its names
_LATE = ("amax", "amin", "sum")


class LogsumexpBackward0(_ReduceNode):
    __slots__ = ()

    def backward(self, g):
        x = self.saved()[0]  # (input, output): the version check covers both
        table = x._be
        if not (_gs.enabled and (g._rg or x._rg)) and table.native_broadcast and g.dtype is x.dtype:
            # plain backward: g * exp(x - out), the reduced operands broadcast by the kernels themselves
            k = _reduced_shape(self.shape, self.axes, True)
            gk, ok = table.view(g._data, k), table.view(self.out._data, k)
            if gk is not None and ok is not None:
                return (_make(table.mul(gk, table.exp(table.sub(x._data, ok))), g.dtype, table),)
        ge = _expand_back(g, self.shape, self.axes, self.keepdim)
        oe = _expand_back(self.out, self.shape, self.axes, self.keepdim)
        return (mul(ge, exp(sub(x, oe))),)


def logsumexp(input, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) computed stably (shifted by the max; an all -inf slice gives -inf)."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        (input,) = _ac_cast("logsumexp", input)
    if not input.dtype.is_floating_point:
        input = input.to(_dt.default)
    table = input._be
    x = input._data
    axes = _axes(dim, x.ndim, "logsumexp")
    out = _logsumexp_data(table, x, axes, keepdim, None)
    if input._rg and _gs.enabled:
        return _recorded(LogsumexpBackward0(), input, out, input.dtype, x.shape, axes, keepdim)
    return _make(out, input.dtype, table)


def _logsumexp_data(table, x, axes, keepdim: bool, dt):
    """logsumexp of the array ``x`` over ``axes``; with ``dt`` (a float dtype), as PyTorch's out= kernel into a
    ``dt`` out: the shifted exp in x's dtype, the sum (a half one accumulated in float32), log and shift in ``dt``."""
    if 0 in tuple(x.shape):
        m = table.full(_reduced_shape(x.shape, axes, True), 0, x.dtype)
    else:
        m = table.amax(x, axes, True)
        m = table.where(table.eq(table.abs(m), float("inf")), 0.0, m)
    e = table.exp(table.sub(x, m))
    if dt is None:
        out = table.add(table.log(table.sum(e, axes, True)), m)
    else:
        acc = _f32 if dt.itemsize < 4 else dt
        s = table.cast(table.sum(table.cast(e, acc.np), axes, True), dt.np)
        out = table.add(table.log(s), table.cast(m, dt.np))
    if not keepdim:
        out = table.view(out, _reduced_shape(x.shape, axes, False))
    return out


def logsumexp_into(input: Tensor, dim, keepdim: bool, dt) -> Tensor:
    """``logsumexp(input, dim, keepdim, out=<a dt tensor>)``'s value, computed as PyTorch's out= kernel does (see
    :func:`_logsumexp_data`); no autograd (out= takes none)."""
    if not input.dtype.is_floating_point:
        input = input.to(_dt.default)
    x = input._data
    return _make(_logsumexp_data(input._be, x, _axes(dim, x.ndim, "logsumexp"), keepdim, dt), dt, input._be)


class LinalgVectorNormBackward0(_ReduceNode):  # (torch.norm's vector norms are linalg.vector_norm's)
    __slots__ = ("p",)

    def backward(self, g):
        x = self.saved()[0]  # (input, output): the version check covers both
        ge = _expand_back(g, self.shape, self.axes, self.keepdim)
        oe = _expand_back(self.out, self.shape, self.axes, self.keepdim)
        if self.p == 2:
            # d||x|| / dx = x / ||x||, and 0 where the norm is 0 (as PyTorch)
            return (where(eq(oe, 0), 0.0, mul(ge, div(x, oe))),)
        # general p: sign(x) |x|^(p-1) / ||x||^(p-1), finite at x = 0 and 0 where the norm is 0 (as PyTorch)
        p = self.p
        xs = mul(sign(x), pow(where(eq(x, 0), 1.0, _abs(x)), p - 1))
        zero = eq(oe, 0)
        return (where(zero, 0.0, mul(xs, mul(ge, pow(where(zero, 1.0, oe), 1 - p)))),)


def check_norm_identity(x, ord, dim) -> None:
    """PyTorch's error for a norm without an identity (inf or negative order) over an empty tensor or dim."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
                           "operation does not have an identity")
    for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
        if x.shape[norm_dim(d, x.ndim, "linalg.vector_norm")] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on the dimension {d}because this "
                               "dimension is empty and the operation does not have an identity")


def check_narrowing(op: str, x: Tensor, dtype) -> None:
    """PyTorch's norms compute a floating input in ``dtype`` only if the input's dtype promotes to it."""
    if dtype is not None and x.dtype.is_floating_point and dtype.is_floating_point \
            and _dt.promote_types(x.dtype, dtype) is not dtype:
        raise RuntimeError(f"{op}: the dtype of the input ({x.dtype._tname[:-6]}) should be convertible without "
                           f"narrowing to the specified dtype ({dtype._tname[:-6]})")


def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """A matrix or vector norm (the old API; prefer ``linalg.vector_norm`` / ``linalg.matrix_norm``).

    Args:
        input (Tensor): the input tensor.
        p (float or str): ``"fro"`` (default: the 2-norm of all elements), ``"nuc"``, or a number.
        dim (int or tuple of ints, optional): the dimensions to reduce.
        keepdim (bool): keep reduced dimensions.
        dtype (dtype, optional): cast to this dtype first.
    """
    if _ac.on and dtype is None:  # autocast: the op's dtype policy (one attribute check when off)
        (input,) = _ac_cast("norm", input)
    if not input.dtype.is_floating_point:  # (the input's own dtype: an int input with dtype=float raises too)
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{input.dtype._tname[:-6]}")
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got "
                               f"{dtype._tname[:-6]}")
        check_narrowing("linalg.vector_norm", input, dtype)
        input = input.to(dtype)
    if (input.dtype is _f16 or input.dtype is _dt.bfloat16) and p not in (float("inf"), -float("inf"), "nuc"):
        # (in float32, rounded once, as PyTorch; "nuc" goes to matrix_norm, whose SVD takes no half: it raises)
        return norm(input.to(_f32), p, dim, keepdim).to(input.dtype)
    if isinstance(p, (int, float)) and (p < 0 or p == float("inf")) and input.numel() == 0:
        check_norm_identity(input, p, dim)
    if p in ("fro", 2, 2.0) or p is None:
        table = input._be
        axes = _axes(dim, input.ndim, "norm")
        x = input._data
        out = table.sqrt(table.sum(table.mul(x, x), axes, keepdim))
        if input._rg and _gs.enabled:
            node = LinalgVectorNormBackward0()
            node.p = 2
            return _recorded(node, input, out, input.dtype, x.shape, axes, keepdim)
        return _make(out, input.dtype, table)
    if p == float("inf") or p == -float("inf"):
        return _inf_norm(input, dim, keepdim, p > 0)
    if p == 1:
        # (PyTorch's node saves the result, as for every p: an in-place change of it raises at the backward)
        return saves_also(named_node(sum(_abs(input), dim, keepdim), "LinalgVectorNormBackward0"), output=True)
    if p == 0:  # the count of non-zeros: no gradient (PyTorch's backward gives an undefined one: .grad stays None)
        with _no_grad():
            r = sum(ne(input, 0).to(input.dtype), dim, keepdim)
        if input._rg and _gs.enabled:
            zn = _ZeroNormBackward()
            zn.next_functions = (edge(input),)
            r = _make(r._data, r.dtype, r._be, zn)
        return r
    if p == "nuc":  # PyTorch's torch.norm: linalg.matrix_norm over dim (the last two dims of a 2-D input)
        from ._decomp_composite import matrix_norm  # (late: that module imports this one)
        if dim is None:
            dim = (0, 1) if input.ndim == 2 else tuple(range(input.ndim))
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dim) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
        return matrix_norm(input, "nuc", dim, keepdim)
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported norm type '{p}'")
    with _no_grad():
        r = pow(sum(pow(_abs(input), p), dim, keepdim), 1.0 / p)
    if input._rg and _gs.enabled:
        node = LinalgVectorNormBackward0()
        node.p = p
        node.shape, node.axes, node.keepdim = input._data.shape, _axes(dim, input.ndim, "norm"), keepdim
        node.next_functions = (edge(input),)
        r = _make(r._data, r.dtype, r._be, node)
        node.save(input, r)
        node.out = r
    return r


NormBackward1 = LinalgVectorNormBackward0  # (its former name)


class _ZeroNormBackward(Node):
    __slots__ = ()

    def backward(self, g):
        return (None,)


_ZeroNormBackward.__name__ = _ZeroNormBackward.__qualname__ = "LinalgVectorNormBackward0"


class _InfNormBackward(Node):
    """The +-inf norm's gradient as PyTorch's linalg_vector_norm_backward: shared by the elements whose magnitude is
    the norm or NaN, times their sign (sign(NaN) is 0: a slice with a NaN gets zeros, not amax's NaN)."""
    __slots__ = ("shape", "axes", "keepdim")

    def backward(self, g):
        x, r = self.saved()
        a = _abs(x)
        mask = logical_or(eq(a, _expand_back(r.detach(), self.shape, self.axes, self.keepdim)), isnan(a)).to(g.dtype)
        count = sum(mask, self.axes, keepdim=True)
        return (mul(sign(x), mul(div(_expand_back(g, self.shape, self.axes, self.keepdim), count), mask)),)


def _inf_norm(input: Tensor, dim, keepdim: bool, largest: bool) -> Tensor:
    """max |x| (``largest``) or min |x| over ``dim`` (all dims when None or empty)."""
    dims = dim if dim is not None else ()
    with _no_grad():
        r = (amax if largest else amin)(_abs(input), dims, keepdim)
    if not (input._rg and _gs.enabled):
        return r
    node = _InfNormBackward()
    node.shape, node.axes, node.keepdim = input._data.shape, _axes(dims, input.ndim, "norm"), keepdim
    node.next_functions = (edge(input),)
    r = _make(r._data, r.dtype, r._be, node)
    node.save(input, r)
    return r


_InfNormBackward.__name__ = _InfNormBackward.__qualname__ = "LinalgVectorNormBackward0"  # PyTorch's name for it too
