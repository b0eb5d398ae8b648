"""Statistics of the sorting family: quantile, nanquantile, histc, bincount, count_nonzero, aminmax, diff, gradient,
cov, corrcoef (compositions of differentiable tensor ops: sort, gather, arithmetic; autograd comes with them), and
cumprod (the backend's scan kernel, with PyTorch's zero-safe backward).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import check_grad_dtype, edge, norm_dim, norm_dims, return_type
from .sorting import _write_out

__all__: list[str] = ["quantile", "nanquantile", "histc", "bincount", "count_nonzero", "aminmax", "diff", "gradient",
                      "cov", "corrcoef", "cumprod"]
METHODS: dict = {}

_i64, _bool = _dt.int64, _dt.bool_
AMINMAX = return_type("aminmax", ("min", "max"))
_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


def _check(op: str, input) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


# ---- quantile / nanquantile ----------------------------------------------------------------------------------------
def _quantile(op: str, input: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool, out):
    _check(op, input)
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, q = _ac_cast(op, input, q)
    if input.dtype is not _dt.float32 and input.dtype is not _dt.float64:  # no float16/bfloat16 (PyTorch's CPU)
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERP:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest. Got "
                         f"{interpolation}")
    if isinstance(q, Tensor):
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        scalar_q = q.ndim == 0
        qt = reshape(q, (-1,))
        msg = f"{op}() q values must be in the range [0, 1]"
        if q._be.host_memory:  # a free read on the host
            qn = q._be.to_numpy(q._data)
            if qn.size and not ((qn >= 0) & (qn <= 1)).all():  # (NaN fails, as PyTorch's check)
                raise RuntimeError(msg)
        elif q.numel() and q._be.has("check_values"):
            # the device's queued check, reported at the next host read (q = 1.5 gave a value silently on opencl)
            with no_grad():
                ok = q.detach().ge(0).logical_and(q.detach().le(1))
            q._be.check_values(ok._data, "nonzero", msg)
    else:
        scalar_q = not isinstance(q, (list, tuple))
        qs = [float(q)] if scalar_q else [float(v) for v in q]
        for v in qs:
            if not 0 <= v <= 1:
                raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {v}")
        qt = tensor(qs, dtype=input.dtype, device=input.device)
    if input.numel() == 0:   # with or without dim (PyTorch's message names quantile for both ops)
        raise RuntimeError("quantile() input tensor must be non-empty")
    if dim is None:
        x = reshape(input, (-1,))
        out_shape = (1,) * input.ndim if keepdim else ()
    else:
        d = norm_dim(dim, input.ndim, op)
        x = movedim(input, d, -1) if input.ndim else reshape(input, (1,))
        if input.ndim:
            out_shape = tuple(1 if i == d else s for i, s in enumerate(input.shape)) if keepdim else \
                tuple(s for i, s in enumerate(input.shape) if i != d)
        else:
            out_shape = ()
        if x.shape[-1] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    n = x.shape[-1]
    s = sort(x, -1).values                                   # NaN last
    lead = tuple(s.shape[:-1])
    nq = qt.shape[0]
    qv = reshape(qt, (nq,) + (1,) * len(lead) + (1,))       # (Q, ..., 1)
    if ignore_nan:
        valid = sum_(logical_not(isnan(s)), -1, keepdim=True).to(input.dtype)
        rank = qv * clamp_min(valid - 1, 0)
    else:  # a NaN anywhere in the slice (it sorts last): the rank of the last, as PyTorch (its gradient goes there)
        rank = where(isnan(narrow(s, -1, n - 1, 1)), float(n - 1), qv * (n - 1))
    if interpolation == "lower":
        rank = floor(rank)
    elif interpolation == "higher":
        rank = ceil(rank)
    elif interpolation == "nearest":
        rank = round_(rank)
    lo = clamp(floor(rank), 0, n - 1).to(_i64)
    hi = clamp(ceil(rank), 0, n - 1).to(_i64)
    se = expand(unsqueeze(s, 0), (nq,) + lead + (n,))
    v_lo = gather(se, -1, expand(lo, (nq,) + lead + (1,)))
    if interpolation in ("lower", "higher", "nearest"):
        r = v_lo
    else:
        v_hi = gather(se, -1, expand(hi, (nq,) + lead + (1,)))
        w = 0.5 if interpolation == "midpoint" else (rank - lo.to(input.dtype)).detach()
        r = v_lo + (v_hi - v_lo) * w
    r = reshape(r, (nq,) + out_shape)
    if scalar_q:
        r = reshape(r, out_shape)
    return _write_out(op, out, r)


def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear", out=None):
    """The q-th quantiles of ``input`` (of all elements, or along ``dim``); NaN in a slice gives NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False, out)


def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear", out=None):
    """quantile ignoring NaN (NaN only where a slice is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True, out)


# ---- histc / bincount / count_nonzero ------------------------------------------------------------------------------
def histc(input: Tensor, bins: int = 100, min=0, max=0, *, out=None) -> Tensor:
    """Histogram of ``input`` in ``bins`` equal bins over [min, max] (the data's range when min == max == 0);
    elements outside are ignored."""
    _check("histc", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")  # (PyTorch's)
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    with no_grad():
        x = reshape(input.detach(), (-1,))
        dt = input.dtype
        lo, hi = float(min), float(max)
        if min == max and x.numel():
            # the data's range, read to the host as PyTorch's kernels (CPU and CUDA) read it: a NaN or an inf in the
            # data is an error there, not an empty histogram or a bin index out of range
            lo, hi = stack([amin(x), amax(x)]).tolist()
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histc: range of [{_num(lo)}, {_num(hi)}] is not finite")
        mn = full((), lo, dtype=dt, device=input.device)
        mx = full((), hi, dtype=dt, device=input.device)
        same = eq(mn, mx)
        mn, mx = where(same, mn - 1, mn), where(same, mx + 1, mx)
        inside = logical_and(ge(x, mn), le(x, mx))
        b = floor((x - mn) * bins / (mx - mn))
        b = clamp(where(inside, b, 0.0), 0, bins - 1).to(_i64)   # max itself goes in the last bin
        h = scatter_add(zeros(bins, dtype=dt, device=input.device), 0, b, inside.to(dt))
    return _write_out("histc", out, h)


def _num(v: float) -> str:
    """A float as PyTorch's C++ messages print it (``0``, ``1.5``, ``inf``, ``nan``)."""
    return str(int(v)) if math.isfinite(v) and v == int(v) else repr(v)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count of each value of the non-negative 1-D integer ``input`` (weighted sums with ``weights``)."""
    _check("bincount", input)
    # PyTorch's order: the kernel's integral-dtype dispatch, minlength, then an empty 1-D input gives int64 zeros
    # whatever the weights (their dtype and length are not looked at), then the shape and sign checks
    if input.dtype.is_floating_point or input.dtype is _bool or input.dtype.is_complex:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim == 1 and not input.numel():
        return zeros(minlength, dtype=_i64, device=input.device)
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    with no_grad():
        n = minlength
        if input.numel():
            # the output's length depends on the data: one host read of (min, max)
            lo, hi = (int(v) for v in stack([amin(input), amax(input)]).to(_i64).tolist())
            if lo < 0:
                raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
            n = builtins.max(n, hi + 1)
        if weights is None:
            dt, w = _i64, ones(input.shape[0], dtype=_i64, device=input.device)
        else:
            dt = weights.dtype if weights.dtype is _dt.float32 else _dt.float64
            w = weights.detach().to(dt)
        return scatter_add(zeros(n, dtype=dt, device=input.device), 0, input.to(_i64), w)


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """Number of non-zero elements (over ``dim``, an int or a tuple of ints)."""
    _check("count_nonzero", input)
    if dim is not None:
        norm_dims(dim, input.ndim, "count_nonzero")
    return sum_(ne(input.detach(), 0), dim)


def aminmax(input: Tensor, *, dim=None, keepdim: bool = False, out=None):
    """(min, max) of all elements or along ``dim``."""
    _check("aminmax", input)
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    d: int | tuple[int, ...]
    if dim is None:
        d = tuple(range(input.ndim))
        if not keepdim or not input.ndim:
            return _write_out("aminmax", out, AMINMAX(amin(reshape(input, (-1,)), 0), amax(reshape(input, (-1,)), 0)),
                              input)
    else:
        d = norm_dim(dim, input.ndim, "aminmax")
        if input.ndim == 0:
            return _write_out("aminmax", out, AMINMAX(input.clone(), input.clone()), input)
    return _write_out("aminmax", out, AMINMAX(amin(input, d, keepdim), amax(input, d, keepdim)), input)


# ---- diff / gradient -----------------------------------------------------------------------------------------------
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None,
         *, out=None) -> Tensor:
    """The n-th forward difference along ``dim`` (of ``input`` with ``prepend``/``append`` joined on)."""
    _check("diff", input)
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = norm_dim(dim, input.ndim, "diff")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    last: tuple = ()  # the last difference's operands when they view input (PyTorch checks them against out)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        a, b = narrow(x, d, 1, m - 1), narrow(x, d, 0, m - 1)
        last = (a, b) if x is input else ()
        x = logical_xor(a, b) if x.dtype is _bool else a - b
    if x is input and out is None:  # n = 0: PyTorch's clone (the input itself was returned: writes reached it)
        x = clone(x)
    return _write_out("diff", out, x, *last)


def _spacings(spacing, dims, input):
    """Per dim: a float step or a 1-D coordinates tensor."""
    if isinstance(spacing, (int, float)):
        return [float(spacing)] * len(dims)
    if isinstance(spacing, Tensor) and spacing.ndim == 0:
        return [float(spacing.item())] * len(dims)
    sp = list(spacing)
    if len(sp) == 1 and len(dims) > 1 and not isinstance(sp[0], Tensor):
        sp = sp * len(dims)
    if len(sp) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or a list of length "
                           f"{len(dims)} but got a list of length {len(sp)}")
    out = []
    for s, d in zip(sp, dims):
        if isinstance(s, Tensor):
            if s.ndim == 0:
                out.append(float(s.item()))
                continue
            if s.ndim != 1 or s.shape[0] != input.shape[d]:
                raise RuntimeError("torch.gradient expected each tensor to be on the same device and to have the "
                                   f"size of dimension {d} of the input, but got {list(s.shape)}")
            out.append(s)
        else:
            out.append(float(s))
    return out


def _along(t: Tensor, d: int, nd: int) -> Tensor:
    """A 1-D tensor shaped to broadcast along dim ``d`` of an ``nd``-dim tensor."""
    shape = [1] * nd
    shape[d] = t.shape[0]
    return reshape(t, shape)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Derivative estimates along each dim in ``dim`` (all dims by default) by second-order central differences,
    first- or second-order one-sided ones at the edges (numpy.gradient)."""
    _check("gradient", input)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = tuple(range(input.ndim)) if dim is None else norm_dims(dim, input.ndim, "gradient")
    f = input if input.dtype.is_floating_point else input.to(_dt.default)
    nd = f.ndim
    res = []
    for d, h in zip(dims, _spacings(spacing, dims, input)):
        m = f.shape[d]
        if m < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")

        def sl(a, length):
            return narrow(f, d, a if a >= 0 else m + a, length)
        if isinstance(h, Tensor):
            c = h.to(f.dtype)
            dx = c[1:] - c[:-1]
            hd, hs = _along(dx[:-1], d, nd), _along(dx[1:], d, nd)
            inner = -hs / (hd * (hd + hs)) * sl(0, m - 2) + (hs - hd) / (hd * hs) * sl(1, m - 2) + \
                hd / (hs * (hd + hs)) * sl(2, m - 2)
            if edge_order == 1:
                first = (sl(1, 1) - sl(0, 1)) / _along(dx[:1], d, nd)
                last = (sl(-1, 1) - sl(-2, 1)) / _along(dx[-1:], d, nd)
            else:
                a1, a2 = _along(dx[:1], d, nd), _along(dx[1:2], d, nd)
                first = -(2 * a1 + a2) / (a1 * (a1 + a2)) * sl(0, 1) + (a1 + a2) / (a1 * a2) * sl(1, 1) - \
                    a1 / (a2 * (a1 + a2)) * sl(2, 1)
                b1, b2 = _along(dx[-2:-1], d, nd), _along(dx[-1:], d, nd)
                last = b2 / (b1 * (b1 + b2)) * sl(-3, 1) - (b2 + b1) / (b1 * b2) * sl(-2, 1) + \
                    (2 * b2 + b1) / (b2 * (b1 + b2)) * sl(-1, 1)
        else:
            inner = (sl(2, m - 2) - sl(0, m - 2)) / (2 * h)
            if edge_order == 1:
                first, last = (sl(1, 1) - sl(0, 1)) / h, (sl(-1, 1) - sl(-2, 1)) / h
            else:
                first = (-1.5 * sl(0, 1) + 2 * sl(1, 1) - 0.5 * sl(2, 1)) / h
                last = (0.5 * sl(-3, 1) - 2 * sl(-2, 1) + 1.5 * sl(-1, 1)) / h
        res.append(cat([first, inner, last], d))
    return tuple(res)


# ---- cumprod ---------------------------------------------------------------------------------------------------------
class CumprodBackward0(Node):
    """PyTorch's cumprod_backward: revcumsum(g * out) / x at a nonzero element (after a slice's first zero that is
    0, yet its derivative is not: kept for double backward); at the first zero, revcumsum of g times the cumprod with
    that zero replaced by 1; 0 at a later zero."""
    __slots__ = ("dim", "out")

    def backward(self, g):
        x, out = self.saved()  # an in-place change of the output makes the backward raise, as PyTorch
        d = self.dim
        if x.ndim == 0 or x.shape[d] == 1:  # the identity, as PyTorch's shortcut (inf / inf would give NaN)
            return (g,)

        if _gs.enabled and bool(eq(x, 0).any().item()):
            return (_cumprod_backward_graph(g, x, d),)

        def revcumsum(t):
            return flip(cumsum(flip(t, (d,)), d), (d,))
        zeros_seen = cumsum(eq(x, 0).to(_i64), d)
        before = eq(zeros_seen, 0)
        first = logical_and(eq(x, 0), eq(zeros_seen, 1))
        # as PyTorch, a term past the next zero adds nothing: it is 0 (kept, for double backward) unless it is
        # inf * 0 = nan, which PyTorch never forms (left out)
        nz = logical_or(before, logical_and(ne(x, 0), _isfinite(x)))  # (a NaN past a zero: 0, as PyTorch)
        t = g * out
        plain = revcumsum(where(logical_or(before, _isfinite(t)), t, 0.0)) / where(nz, x, 1.0)
        t = g * cumprod(where(first, 1.0, x), d)
        at_zero = revcumsum(where(logical_or(eq(zeros_seen, 1), _isfinite(t)), t, 0.0))
        return (where(nz, plain, where(first, at_zero, 0.0)),)


def _cumprod_backward_graph(g: Tensor, x: Tensor, d: int) -> Tensor:
    """The gradient of cumprod along ``d`` for a create_graph backward of an input with zeros: for each k,
    sum over i >= k of g_i * prod_{j <= i, j != k} x_j, from the cumprods of x with x_k replaced by 1 (O(n^2), as
    PyTorch's grad-mode cumprod_backward): every term stays a function of every x_j, so the second derivative is
    right past a slice's second zero (the mask formula's 0 there is a constant)."""
    n = x.shape[d]
    xm, gm = movedim(x, d, -1), movedim(g, d, -1)
    eye = tensor(np.eye(n, dtype=bool), device=x.device)
    c = cumprod(where(eye, 1.0, unsqueeze(xm, -2)), -1)  # [..., k, i]: prod_{j <= i, j != k} x_j
    upper = tensor(np.triu(np.ones((n, n), dtype=bool)), device=x.device)  # i >= k
    return movedim(sum_(where(upper, c * unsqueeze(gm, -2), 0.0), -1), -1, d)


def cumprod(input: Tensor, dim: int, *, dtype=None, out=None) -> Tensor:
    """Cumulative product along ``dim`` (integer and bool inputs give int64, as PyTorch)."""
    _check("cumprod", input)
    dtype = _dt.from_python_type(dtype)
    if out is not None and dtype is None:  # as PyTorch: computed in the out tensor's dtype
        dtype = out.dtype
    if _ac.on and dtype is None:  # autocast: the op's dtype policy (one attribute check when off)
        (input,) = _ac_cast("cumprod", input)
    d = norm_dim(dim, input.ndim, "cumprod")
    dt = dtype or (input.dtype if input.dtype.is_floating_point else _i64)
    if dtype is not None:
        if dt is _dt.bool_:
            raise NotImplementedError("\"cumprod_out_cpu\" not implemented for 'Bool'")
        check_grad_dtype(input, dt)
    if dt is not input.dtype:
        input = input.to(dt) if dt.is_floating_point else input.detach().to(dt)
    table = input._be
    r = table.cumprod(input._data, d if input.ndim else None)
    if input._rg and _gs.enabled:
        node = CumprodBackward0()
        node.dim = d
        node.next_functions = (edge(input),)
        res = _make(r, dt, table, node)
        node.out = res
        node.save(input, res)
        return _write_out("cumprod", out, res, input)
    return _write_out("cumprod", out, _make(r, dt, table), input)


# ---- cov / corrcoef ------------------------------------------------------------------------------------------------
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None):
    """Covariance matrix of the variables in the rows of ``input`` (observations in the columns)."""
    _check("cov", input)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.dtype is _bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = reshape(input, (1, -1)) if input.ndim < 2 else input
    if not x.dtype.is_floating_point:
        x = x.to(_dt.default)
    nobs = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.ndim > 1 or fweights.numel() != nobs:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions and {nobs} elements")
        if fweights.dtype.is_floating_point:
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        w = reshape(fweights, (-1,)).to(x.dtype)
    if aweights is not None:
        if aweights.ndim > 1 or aweights.numel() != nobs:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions and {nobs} elements")
        if not aweights.dtype.is_floating_point:
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        aw = reshape(aweights, (-1,)).to(x.dtype)
        w = aw if w is None else w * aw
    if w is None:
        avg = mean(x, 1, keepdim=True)
        fact = nobs - correction
    else:
        wsum = sum_(w)
        avg = sum_(x * w, 1, keepdim=True) / wsum
        fact = wsum - correction if aweights is None else wsum - correction * sum_(w * aw) / wsum
    if isinstance(fact, (int, float)):
        fact = builtins.max(fact, 0)
    else:
        fact = clamp_min(fact, 0)
    xc = x - avg
    c = matmul(xc if w is None else xc * w, transpose(xc, 0, 1)) / fact
    return squeeze(c)  # one variable: a 0-d result (PyTorch squeezes)


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of ``input``."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    n = c.shape[0]
    dg = reshape(c, (-1,))[:: n + 1]
    sd = sqrt(dg)
    r = c / reshape(sd, (n, 1)) / reshape(sd, (1, n))
    return clamp(r, -1, 1)


METHODS.update({"quantile": quantile, "nanquantile": nanquantile, "histc": histc, "bincount": bincount,
                "count_nonzero": count_nonzero, "aminmax": aminmax, "diff": diff, "cov": cov, "corrcoef": corrcoef,
                "cumprod": cumprod})

# late, module level (the shape and pointwise modules import this family's siblings)
from .creation import full, ones, tensor, zeros  # noqa: E402
from .indexing import gather, narrow, scatter_add  # noqa: E402
from .linalg import matmul  # noqa: E402
from .comparison import isfinite as _isfinite  # noqa: E402
from .pointwise import (ceil, clamp, clamp_min, eq, floor, ge, isnan, le, logical_and, logical_not,  # noqa: E402
                        logical_or, logical_xor, ne, round as round_, sqrt, where)
from .reduction import amax, amin, cumsum, mean, sum as sum_  # noqa: E402
from .shape import cat, clone, expand, flip, movedim, reshape, squeeze, stack, transpose, unsqueeze  # noqa: E402
from .sorting import sort  # noqa: E402
