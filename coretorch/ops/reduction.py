"""Reductions and scans: sum mean prod amax amin max min argmax argmin var std logsumexp norm all any cumsum."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac, suspended as _ac_off
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make, _zeros_on
from ._out import write_out
from ._own import own
from ._util import bind_late, check_grad_dtype, edge, norm_dim, return_type
# the pieces shared with the var/std and norm families (a module below all three; the names stay importable here)
from ._reduction_base import _ReduceNode, _axes, _bool, _expand_back, _f16, _f32, _f64, _i64, _recorded


_RETURN_TYPES = {"max": return_type("max"), "min": return_type("min")}
values_indices = _RETURN_TYPES["max"]  # (kept for importers)


class SumBackward0(_ReduceNode):
    __slots__ = ()

    def backward(self, g):
        return (_expand_back(g, self.shape, self.axes, self.keepdim),)


class ProdBackward1(_ReduceNode):
    __slots__ = ()

    def backward(self, g):
        x = self.saved()[0]  # (input, output): the version check covers both
        out = self.out
        ge = _expand_back(g, self.shape, self.axes, self.keepdim)
        if x.ndim == 0:
            return (ge,)
        oe = _expand_back(out, self.shape, self.axes, self.keepdim)
        # PyTorch's rule: out / x when no element of the whole input is 0, else the product of the other elements
        # of each slice (then an infinite element gets a finite gradient); a whole-tensor prod with two or more
        # zeros gives zeros in a plain backward.  Decided on the host where the read is free; a device selects
        # with where (a read here would be a host round trip inside backward).
        nz = sum(eq(x, 0))
        shortcut = self.axes is None and not _gs.enabled
        if x._be.host_memory:
            n = int(nz.item())
            if n == 0:
                return (mul(ge, div(oe, x)),)
            if n > 1 and shortcut:
                return (_zeros_on(tuple(x.shape), ge.dtype, x._be),)
            return (mul(ge, _prod_others_graph(x, self.axes) if _gs.enabled else _prod_others(x, self.axes)),)
        # product of the other elements, computed without dividing by zero (differentiable ops under create_graph)
        others = _prod_others_graph(x, self.axes) if _gs.enabled else _prod_others(x, self.axes)
        r = where(gt(nz, 0), mul(ge, others), mul(ge, div(oe, where(eq(x, 0), 1.0, x) if _gs.enabled else x)))
        return (where(gt(nz, 1), 0.0, r) if shortcut else r,)


def _slices(shape: tuple, axes) -> tuple[tuple, tuple, int]:
    """The reduced slices of ``shape`` over ``axes`` (None: all): (the permutation putting the kept dims first, the
    kept sizes, the number of elements in a slice)."""
    nd = len(shape)
    ax = tuple(range(nd)) if axes is None else tuple(axes)
    keep = tuple(d for d in range(nd) if d not in ax)
    k = 1
    for d in ax:
        k *= shape[d]
    return keep + ax, tuple(shape[d] for d in keep), k


def _prod_others_graph(x: Tensor, axes) -> Tensor:
    """``_prod_others`` with differentiable ops, for a create_graph backward (PyTorch's prod_safe_zeros_backward: the
    exclusive products are cumprods, whose own backward gives the second derivative)."""
    from .statistics import cumprod  # (statistics imports this module)
    nd = x.ndim
    perm, lead, k = _slices(tuple(x.shape), axes)
    flat = x.permute(perm).reshape(lead + (k,))
    ones = flat.new_ones(lead + (1,))
    last = len(lead)
    left = cumprod(cat([ones, flat[..., :k - 1]], last), last)
    right = flip(cumprod(cat([ones, flip(flat[..., 1:], (last,))], last), last), (last,))
    res = mul(left, right).reshape(tuple(x.shape[d] for d in perm))
    return res.permute(tuple(perm.index(d) for d in range(nd)))


def _prod_others(x: Tensor, axes):
    """For each element, the product of the other elements of its reduced slice: exclusive products from both
    ends (cumprod of the slice shifted by a 1), with the backend's kernels, on x's device."""
    table, a = x._be, x._data
    nd = len(a.shape)
    perm, lead, k = _slices(tuple(a.shape), axes)
    if k == 0:
        return _make(table.full(a.shape, 0, a.dtype), x.dtype, table)
    flat = table.view(table.contiguous(table.permute(a, perm)), lead + (k,))
    last, ones = len(lead), table.full(lead + (1,), 1, a.dtype)

    def exclusive(v):  # [1, v0, v0*v1, ...]: the product of the elements before each one
        return table.cumprod(table.cat([ones, table.basic_index(v, (Ellipsis, slice(0, k - 1)))], last), last)
    right = table.flip(exclusive(table.flip(flat, (last,))), (last,))
    res = table.view(table.mul(exclusive(flat), right), tuple(a.shape[d] for d in perm))
    inv = tuple(perm.index(d) for d in range(nd))
    return _make(table.contiguous(table.permute(res, inv)), x.dtype, table)


# PyTorch's node names: the dim overloads are "...Backward1"
SumBackward1 = type("SumBackward1", (SumBackward0,), {"__slots__": ()})
ProdBackward0 = type("ProdBackward0", (ProdBackward1,), {"__slots__": ()})


class AmaxBackward0(_ReduceNode):
    __slots__ = ()

    def backward(self, g):
        x = self.saved()[0]  # (input, output): the version check covers both
        oe = _expand_back(self.out.detach(), self.shape, self.axes, self.keepdim)
        mask = eq(x, oe).to(g.dtype)
        count = sum(mask, self.axes, keepdim=True)
        return (mul(_expand_back(g, self.shape, self.axes, self.keepdim), div(mask, count)),)


def _reduce(op, kernel, node_cls, input: Tensor, dim, keepdim: bool, out_dtype=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    table = input._be
    x = input._data
    axes = _axes(dim, x.ndim, op)
    dt = input.dtype if out_dtype is None else out_dtype
    if dt is not input.dtype:
        if input._rg and _gs.enabled and dt.is_floating_point:
            input = input.to(dt)  # a differentiable cast: the gradient comes back in the input's dtype
            x = input._data
        else:
            x = table.cast(x, dt.np)
    if dt is _f16 and kernel == "sum":  # PyTorch accumulates a float16 sum in float32
        out = table.cast(getattr(table, kernel)(table.cast(x, _f32.np), axes, keepdim), dt.np)
    else:
        out = getattr(table, kernel)(x, axes, keepdim)
    if node_cls is not None and input._rg and _gs.enabled:
        return _recorded(node_cls(), input, out, dt, x.shape, axes, keepdim,
                         save_io=not issubclass(node_cls, SumBackward0))
    return _make(out, dt, table)


def _bool_of(input: Tensor) -> Tensor:
    return input if input.dtype is _bool else _make(input._be.cast(input._data, _bool.np), _bool, input._be)


def sum(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The sum of ``input``'s elements, overall or over ``dim``.

    Integer and bool inputs are summed in int64 unless ``dtype`` is given.

    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all when None.
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
        dtype (dtype, optional): cast to this dtype first.

    Example:
        >>> torch.sum(torch.ones(2, 3), dim=1)
        tensor([3., 3.])
    """
    if dtype.__class__ is type:  # dtype=float, int, bool
        dtype = _dt.from_python_type(dtype)
    if _ac.on and dtype is None:  # autocast: the op's dtype policy (one attribute check when off)
        (input,) = _ac_cast("sum", input)
    if dtype is not None:
        dt = dtype
        check_grad_dtype(input, dt)
    elif input.dtype.is_floating_point:
        dt = input.dtype
    else:
        dt = _i64
    if dt is _bool:  # PyTorch casts to bool first: the sum is "any" (a bool never holds 2)
        return _reduce("sum", "any", None, _bool_of(input), dim, keepdim)
    return _reduce("sum", "sum", SumBackward0 if dim is None else SumBackward1, input, dim, keepdim, dt)


def nansum(input, dim=None, keepdim=False, *, dtype=None) -> Tensor:
    """The sum of ``input`` treating NaN as zero, overall or over ``dim``.
    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all of them when omitted.
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
    """
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return nansum(input, dim, keepdim, dtype=dtype)
    if not input.dtype.is_floating_point:  # no NaN to skip: an integer input sums to int64, as sum does
        return sum(input, dim, keepdim, dtype=dtype)
    if not (input._rg and _gs.enabled) or (dtype is not None and not getattr(dtype, "is_floating_point", False)):
        return sum(where(isnan(input), 0.0, input), dim, keepdim, dtype=dtype)
    with no_grad():
        r = sum(where(isnan(input), 0.0, input), dim, keepdim, dtype=dtype)
    node = NansumBackward0()
    node.shape, node.axes, node.keepdim, node.out = tuple(input.shape), _axes(dim, input.ndim, "nansum"), keepdim, None
    node.next_functions = (edge(input),)
    node.save(input)
    return _make(r._data, r.dtype, r._be, node)


class NansumBackward0(_ReduceNode):
    """PyTorch's nansum_backward: sum's gradient times the not-NaN mask, a product (so an infinite or NaN
    gradient gives NaN at the NaN elements: nanmean of an all-NaN slice has a NaN gradient there)."""
    __slots__ = ()

    def backward(self, g):
        x = self.saved()[0]
        ge = _expand_back(g if g.dtype is x.dtype else g.to(x.dtype), self.shape, self.axes, self.keepdim)
        return (mul(ge, logical_not(isnan(x))),)


def prod(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The product of ``input``'s elements, overall or along one ``dim``.

    Integer and bool inputs give int64.

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension to reduce.
        keepdim (bool): keep the reduced dimension.
        dtype (dtype, optional): cast to this dtype first.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        (input,) = _ac_cast("prod", input)
    dtype = _dt.from_python_type(dtype)
    dt = dtype or (input.dtype if input.dtype.is_floating_point else _i64)
    if dtype is not None:
        check_grad_dtype(input, dt)
    if dim is not None and not isinstance(dim, int):
        if not hasattr(dim, "__index__") or getattr(dim, "ndim", 0) != 0:  # (np.int64, a 0-d integer tensor)
            raise TypeError("prod(): argument 'dim' must be int")
        dim = dim.__index__()
    if dt is _bool:  # the product of bools is "all"
        return _reduce("prod", "all", None, _bool_of(input), dim, keepdim)
    return _reduce("prod", "prod", ProdBackward0 if dim is None else ProdBackward1, input, dim, keepdim, dt)


AminBackward0 = type("AminBackward0", (AmaxBackward0,), {"__slots__": ()})


class MaxBackward1(AmaxBackward0):
    """max()/min() of all elements: PyTorch's evenly_distribute_backward (its CPU form): the gradient is shared by
    the elements equal to the result (the NaNs when it is NaN) and written only there, so a NaN gradient stays
    at those elements (amax/amin multiply by the mask instead and spread it, as PyTorch's do)."""
    __slots__ = ()

    def backward(self, g):
        x = self.saved()[0]
        v = self.out.detach()
        mask = where(isnan(v), isnan(x), eq(x, v))
        count = sum(mask, None, dtype=g.dtype)
        return (where(mask, div(g, count), 0.0),)


MinBackward1 = type("MinBackward1", (MaxBackward1,), {"__slots__": ()})


class MeanBackward0(_ReduceNode):
    __slots__ = ("n",)

    def backward(self, g):
        # PyTorch's grad.expand(...) / n: a dense gradient (sum's is the broadcast view); a hook may write into it
        if not (g._rg and _gs.enabled):  # plain backward: one division of the broadcast view
            ge = _expand_back(g, self.shape, self.axes, self.keepdim)
            return (_make(g._be.div(ge._data, self.n), g.dtype, g._be),)
        return (div(_expand_back(g, self.shape, self.axes, self.keepdim), self.n),)


def mean(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of ``input``, overall or over ``dim``.

    ``input`` must be floating point (or give ``dtype``).
    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all of them when omitted.
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
        dtype (dtype, optional): cast to this dtype first.
    """
    dtype = _dt.from_python_type(dtype)
    dt = dtype or input.dtype
    if not dt.is_floating_point:
        which = "Input" if dtype is None else "Optional"  # PyTorch names the argument that is wrong
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either a floating "
                           f"point or complex dtype. Got: {dt._tname[:-6]}")
    table = input._be
    if dt is not input.dtype and input._rg and _gs.enabled:
        input = input.to(dt)  # a differentiable cast: the gradient comes back in the input's dtype
    x = input._data if dt is input.dtype else table.cast(input._data, dt.np)
    axes = _axes(dim, x.ndim, "mean")
    n = 1
    for i, sz in enumerate(x.shape):
        if axes is None or i in axes:
            n *= sz
    if dt is _f16 or dt is _dt.bfloat16:  # accumulated in float32 and rounded once, as PyTorch
        out = table.cast(table.div(table.sum(table.cast(x, _f32.np), axes, keepdim), n), dt.np)
    else:
        out = table.div(table.sum(x, axes, keepdim), n)  # n == 0 gives nan, as in PyTorch
    if input._rg and _gs.enabled:
        node = MeanBackward0() if dim is None else MeanBackward1()
        node.shape, node.axes, node.keepdim, node.n = x.shape, axes, keepdim, n
        node.next_functions = (edge(input),)
        return _make(out, dt, table, node)
    return _make(out, dt, table)


def amax(input, dim=(), keepdim: bool = False) -> Tensor:
    """The maximum of ``input`` over ``dim`` (values only; every dimension when ``dim`` is ``()``).

    Unlike ``max(dim)``, ``amax`` takes several dimensions and its gradient is shared evenly between equal
    maxima.
    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all of them when omitted.
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
    """
    _check_nonempty("amax", input, dim)
    return _reduce("amax", "amax", AmaxBackward0, input, dim, keepdim)


def amin(input, dim=(), keepdim: bool = False) -> Tensor:
    """The minimum of ``input`` over ``dim`` (values only; every dimension when ``dim`` is ``()``).

    Its gradient is shared evenly between equal minima.
    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all of them when omitted.
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
    """
    _check_nonempty("amin", input, dim)
    return _reduce("amin", "amin", AminBackward0, input, dim, keepdim)


def _check_nonempty(op, input, dim):
    if input.numel() == 0:
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):   # each as given, before the repeat check
            if input.shape[norm_dim(d, input.ndim, op)] == 0:
                raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


class MaxBackward0(Node):
    """The indices are saved as PyTorch saves them (returned to the caller: an in-place change raises)."""
    __slots__ = ("shape", "dim", "keepdim")

    def backward(self, g, gi=None):
        (idx,), gg = self.saved(), g
        if not self.keepdim:
            idx, gg = unsqueeze(idx, self.dim), unsqueeze(g, self.dim)
        return (scatter_add(_zeros_on(self.shape, g.dtype, g._be), self.dim, idx, gg),)


def _max_min(op, arg_kernel, input, dim, keepdim, other):
    if isinstance(dim, Tensor) and other is None:
        other, dim = dim, None
    if other is not None:
        return (maximum if op == "max" else minimum)(input, other)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        _check_nonempty(op, input, None)
        return _reduce(op, "amax" if op == "max" else "amin", MaxBackward1 if op == "max" else MinBackward1,
                       input, None, False)
    d = norm_dim(dim, input.ndim, op)
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    table = input._be
    idx_arr = getattr(table, arg_kernel)(input._data, d if input.ndim else None, keepdim)
    idx = _make(idx_arr, _i64, table)
    ix = idx if keepdim or input.ndim == 0 else unsqueeze(idx, d)
    with _no_grad():
        vals = gather(input, d, ix) if input.ndim else input.clone()
        if not keepdim and input.ndim:
            vals = own(squeeze(vals, d))  # (not a view of the gathered temporary: PyTorch's is new)
    if input._rg and _gs.enabled:
        node = MaxBackward0() if op == "max" else MinBackward0()
        node.shape, node.dim, node.keepdim = input.shape, d, keepdim or input.ndim == 0
        node.save(idx)
        node.next_functions = (edge(input),)
        node._out_meta = ((vals.shape, vals.dtype, table), (idx.shape, _i64, table))
        vals = _make(vals._data, vals.dtype, table, node)
    return _RETURN_TYPES[op](vals, idx)


_no_grad = no_grad  # the one grad-mode switch (autograd.grad_mode)


def max(input, dim=None, keepdim: bool = False, *, other=None):
    """The maximum: of all elements, along ``dim``, or element-wise with ``other``.

    - ``max(input)``: a 0-d tensor.
    - ``max(input, dim, keepdim=False)``: a named tuple ``(values, indices)`` (first index on ties).
    - ``max(input, other)``: the element-wise maximum (as :func:`maximum`).
    """
    return _max_min("max", "argmax", input, dim, keepdim, other)


def min(input, dim=None, keepdim: bool = False, *, other=None):
    """The minimum: of all elements, along ``dim``, or element-wise with ``other``.

    - ``min(input)``: a 0-d tensor.
    - ``min(input, dim, keepdim=False)``: a named tuple ``(values, indices)`` (first index on ties).
    - ``min(input, other)``: the element-wise minimum (as :func:`minimum`).
    """
    return _max_min("min", "argmin", input, dim, keepdim, other)


def _arg(op, kernel, input, dim, keepdim):
    if input.dtype is _bool:
        raise RuntimeError(f"{op}(): does not support bool input")
    if input.numel() == 0 and dim is None:
        raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
    if dim is not None and input.ndim:
        d = norm_dim(dim, input.ndim, op)
        if input.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    table = input._be
    if dim is None:
        out = getattr(table, kernel)(input._data, None, False)
        if keepdim:
            out = table.view(out, (1,) * input.ndim)
        return _make(out, _i64, table)
    d = norm_dim(dim, input.ndim, op)
    return _make(getattr(table, kernel)(input._data, d if input.ndim else None, keepdim), _i64, table)


def argmax(input, dim=None, keepdim: bool = False) -> Tensor:
    """The index of the maximum of ``input``: of the flattened tensor when ``dim`` is None, else along ``dim``.

    Ties return the first index. The result is int64.

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension to reduce.
        keepdim (bool): keep the reduced dimension with size 1 (default False).
    """
    return _arg("argmax", "argmax", input, dim, keepdim)


def argmin(input, dim=None, keepdim: bool = False) -> Tensor:
    """The index of the minimum of ``input``: of the flattened tensor when ``dim`` is None, else along ``dim``.

    Ties return the first index. The result is int64.

    Args:
        input (Tensor): the input tensor.
        dim (int, optional): the dimension to reduce.
        keepdim (bool): keep the reduced dimension with size 1 (default False).
    """
    return _arg("argmin", "argmin", input, dim, keepdim)


def _bool_reduce(op, input, dim, keepdim):
    table = input._be
    if isinstance(dim, (tuple, list)) and len(dim) == 0 and input.ndim:
        axes = ()  # all/any over no dims: elementwise (sum and the others reduce everything for dim=())
    else:
        axes = _axes(dim, input.ndim, op)
    out = getattr(table, op)(input._data, axes, keepdim)
    if input.dtype is _dt.uint8:  # PyTorch keeps uint8 for uint8 inputs (bool for every other dtype)
        return _make(table.cast(out, _dt.uint8.np), _dt.uint8, table)
    return _make(out, _bool, table)


def all(input, dim=None, keepdim: bool = False) -> Tensor:
    """Whether every element of ``input`` is true (nonzero), overall or along ``dim``.

    Returns a bool tensor (uint8 for a uint8 input, as in PyTorch).
    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all of them when omitted.
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
    """
    return _bool_reduce("all", input, dim, keepdim)


def any(input, dim=None, keepdim: bool = False) -> Tensor:
    """Whether any element of ``input`` is true (nonzero), overall or along ``dim``.

    Returns a bool tensor (uint8 for a uint8 input, as in PyTorch).
    Args:
        input (Tensor): the input tensor.
        dim (int or tuple of ints, optional): the dimension(s) to reduce; all of them when omitted.
        keepdim (bool): keep the reduced dimensions with size 1 (default False).
    """
    return _bool_reduce("any", input, dim, keepdim)


class CumsumBackward0(Node):
    __slots__ = ("dim",)

    def backward(self, g):
        return (flip(cumsum(flip(g, (self.dim,)), self.dim), (self.dim,)),)


def cumsum(input, dim, *, dtype=None, out=None) -> Tensor:
    """The cumulative sum along ``dim``: ``out[i] = input[0] + ... + input[i]``.

    Integer and bool inputs accumulate in int64 unless ``dtype`` is given.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dimension to accumulate along.
        dtype (dtype, optional): cast ``input`` to this dtype first.
        out (Tensor, optional): the output tensor.
    """
    dtype = _dt.from_python_type(dtype)
    if out is not None:  # as PyTorch: computed in the out tensor's dtype when no dtype is given
        return write_out("cumsum", out, cumsum(input, dim, dtype=dtype or out.dtype), inputs=(input,))
    if _ac.on and dtype is None:  # autocast: the op's dtype policy (one attribute check when off)
        (input,) = _ac_cast("cumsum", input)
    d = norm_dim(dim, input.ndim, "cumsum")
    dt = dtype or (input.dtype if input.dtype.is_floating_point else _i64)
    if dtype is not None:
        if dt is _bool:
            raise NotImplementedError("\"cumsum_out_cpu\" not implemented for 'Bool'")
        check_grad_dtype(input, dt)
    table = input._be
    if dt is not input.dtype and input._rg and _gs.enabled and dt.is_floating_point:
        input = input.to(dt)  # a differentiable cast: the gradient comes back in the input's dtype
    x = input._data if dt is input.dtype else table.cast(input._data, dt.np)
    acc = (_f64 if table.host_memory else _f32) if dt is _f16 or dt is _f32 else dt
    if acc is not dt:  # as PyTorch: its CPU scan accumulates in double (a float32 running sum drifts), CUDA's
        # in float32 (float16 too); a device backend is the CUDA case (and may have no float64)
        out = table.cast(table.cumsum(table.cast(x, acc.np), d if input.ndim else None), dt.np)
    else:
        out = table.cumsum(x, d if input.ndim else None)
    if input._rg and _gs.enabled:
        node = CumsumBackward0()
        node.dim = d
        node.next_functions = (edge(input),)
        return _make(out, dt, table, node)
    return _make(out, dt, table)

# late, module level: a function-level import costs ~10k instructions per call (the backward formulas)
from .indexing import gather, narrow, scatter_add  # noqa: E402, F401  (narrow: also kept for importers)
from .pointwise import abs as _abs, div, eq, exp, gt, isnan, logical_and, logical_not, logical_or, maximum, minimum, mul, ne, pow, sign, sqrt, sub, where  # noqa: E402,E501,F401
from .shape import cat, flip, squeeze, unsqueeze  # noqa: E402
if TYPE_CHECKING:
    from .comparison import isfinite, isinf  # noqa: F401
_LATE = ("isfinite", "isinf")  # kept for importers: bound by ops.comparison (bind_late), which imports this module

MeanBackward1 = type("MeanBackward1", (MeanBackward0,), {"__slots__": ()})
MinBackward0 = type("MinBackward0", (MaxBackward0,), {"__slots__": ()})

# the variance and norm families, built on the reductions above; every name stays public here
from ._reduction_var import _var_args, _F64_OK, _has_f64, _var_acc, VarBackward0, var, _var  # noqa: E402, F401
from ._reduction_var import StdBackward0, std, _std, _welford_mean, var_mean, std_mean  # noqa: E402, F401
from ._reduction_norm import LogsumexpBackward0, logsumexp, LinalgVectorNormBackward0  # noqa: E402, F401
from ._reduction_norm import check_norm_identity, norm, NormBackward1, _InfNormBackward, _inf_norm  # noqa: E402, F401

from . import _reduction_norm, _reduction_var  # noqa: E402
for _m in (_reduction_var, _reduction_norm):
    for _o in list(vars(_m).values()):
        if callable(_o) and getattr(_o, "__module__", None) == _m.__name__:
            _o.__module__ = __name__  # public here, as before the split (ops._export flattens each module's own)
    bind_late(_m, globals())  # the reductions they call (see their _LATE)
del _m, _o
