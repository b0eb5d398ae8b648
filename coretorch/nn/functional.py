"""coretorch.nn.functional: functional ops; plugin ops registered with functional=True appear here.

PyTorch's ``torch/nn/functional.py`` is the spec (names, defaults, reductions, errors).  Most functions are
composites of differentiable tensor ops (so double backward works with no extra code).  The hot ones are
single graph nodes whose forward runs on the backend's kernels and whose backward is written with tensor ops:
``softmax``/``log_softmax``, ``nll_loss``, ``erf`` and the convolution trio (``conv2d`` and its two gradients,
each the derivative of the others).  Convolution and max pooling use the backend's optional fused kernels
(``conv2d``, ``conv2d_backward_input``, ``conv2d_backward_weight``, ``max_pool2d``; see
``coretorch._backend.PRIMITIVES``) and fall back to a composite of primitive kernels when a backend lacks them.
"""
from __future__ import annotations

import math
import warnings

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..ops import creation as _C, indexing as _I, linalg as _L, pointwise as _P, reduction as _R, shape as _S
from ..ops._util import device_mismatch, edge as _edge, host_all_below, norm_dim as _norm_dim
from ..ops.pointwise import relu, sigmoid, tanh  # noqa: F401
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac, suspended as _ac_off
from ..tensor import Tensor, _make

_f64 = _dt.float64
_i64 = _dt.int64


_no_grad = no_grad  # the one grad-mode switch (autograd.grad_mode)


def _needs_graph(*tensors) -> bool:
    if _gs.enabled:
        for t in tensors:
            if t is not None and t._rg:
                return True
    return False


def _record(node: Node, out, dt, table, *inputs) -> Tensor:
    node.next_functions = tuple([_edge(t) if t is not None else (None, 0) for t in inputs])
    return _make(out, dt, table, node)


def _check_tensor(op: str, name: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position 1) must be Tensor, not {type(t).__name__}")


def _ntuple(v, n: int, name: str = "") -> tuple:
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(v) * n
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match "
                               f"the convolution dimensions, but got {name}={list(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


# ---------------------------------------------------------------------------------------------
# erf: numpy has none; a series / continued fraction on primitive kernels, accurate to ~1e-15 in float64
# ---------------------------------------------------------------------------------------------
_ERF_SPLIT, _ERF_SERIES_TERMS, _ERF_CF_TERMS = 2.5, 38, 28
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_kernel(table, x):
    """erf on any backend's primitives (no Python loop over elements; 66 vectorised steps).

    |x| <= 2.5: erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (2n+1)!!, all terms positive (no cancellation);
    |x| >  2.5: erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), Lentz-free backward
    evaluation.  Both agree with math.erf to ~1e-15 (tested); float32 inputs are evaluated in float32."""
    ax = table.abs(x)
    xs = table.minimum(ax, _ERF_SPLIT)                  # series branch input, kept in range
    a = table.mul(table.mul(xs, xs), 2.0)
    s = table.full(x.shape, 1.0, x.dtype)
    for n in range(_ERF_SERIES_TERMS, 0, -1):
        s = table.add(table.mul(s, table.div(a, 2 * n + 1)), 1.0)
    e2 = table.exp(table.neg(table.mul(xs, xs)))
    ser = table.mul(table.mul(table.mul(e2, xs), s), _TWO_OVER_SQRT_PI)
    xc = table.maximum(ax, _ERF_SPLIT)                  # continued-fraction branch input
    t = xc
    for k in range(_ERF_CF_TERMS, 0, -1):
        t = table.add(xc, table.div(k / 2.0, t))
    erfc = table.div(table.exp(table.neg(table.mul(xc, xc))), table.mul(t, math.sqrt(math.pi)))
    cf = table.add(table.neg(erfc), 1.0)
    r = table.where(table.le(ax, _ERF_SPLIT), ser, cf)
    r = table.mul(r, table.sign(x))
    return table.where(table.isnan(x), x, r)


class ErfBackward0(Node):
    __slots__ = ()

    def backward(self, g):
        (x,) = self.saved()
        return (_P.mul(g, _P.mul(_P.exp(_P.neg(_P.mul(x, x))), _TWO_OVER_SQRT_PI)),)


def erf(input: Tensor) -> Tensor:
    """The error function (torch.erf / torch.special.erf), differentiable to any order."""
    _check_tensor("erf", "input", input)
    table = input._be
    dt = input.dtype if input.dtype.is_floating_point else _dt.default
    x = input._data if dt is input.dtype else table.cast(input._data, dt.np)
    out = table.erf(x) if table.has("erf") else _erf_kernel(table, x)
    if _needs_graph(input):
        node = ErfBackward0()
        node.save(input)
        return _record(node, out, dt, table, input)
    return _make(out, dt, table)


# ---------------------------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------------------------
def _inplace_result(input: Tensor, out: Tensor) -> Tensor:
    return input.copy_(out)


def _src(input: Tensor, inplace: bool) -> Tensor:
    """The tensor an in-place activation computes from: a clone when the graph saves it (the in-place write
    into ``input`` must not invalidate what the backward needs)."""
    return input.clone() if inplace and input.requires_grad and _gs.enabled else input


def _floating_only(op: str, input) -> None:
    """PyTorch's activations with a transcendental or fractional formula have no integer kernels."""
    if isinstance(input, Tensor) and not input.dtype.is_floating_point and not input.dtype.is_complex:
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype._tname[:-6]}'")


def threshold(input, threshold, value, inplace=False):
    x = _src(input, inplace)
    out = _P.where(_P.gt(x, threshold), x, value)
    return _inplace_result(input, out) if inplace else out


def relu_(input):
    return _inplace_result(input, _P.relu(input))


def relu(input, inplace=False):  # noqa: F811  (PyTorch's signature: with inplace)
    return relu_(input) if inplace else _P.relu(input)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _floating_only("leaky_relu", input)
    x = _src(input, inplace)
    out = _P.where(_P.gt(x, 0), x, _P.mul(x, negative_slope))
    return _inplace_result(input, out) if inplace else out


def elu(input, alpha=1.0, inplace=False):
    _floating_only("elu", input)
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return elu(input, alpha, inplace)
    x = _src(input, inplace)
    # expm1 of min(x, 0): the unused branch never overflows (no inf * 0 in the backward)
    neg = _P.mul(_P.expm1(_P.clamp(x, max=0.0)), alpha)
    out = _P.where(_P.gt(x, 0), x, neg)
    return _inplace_result(input, out) if inplace else out


def selu(input, inplace=False):
    _floating_only("selu", input)
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return selu(input, inplace)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    out = _P.mul(elu(_src(input, inplace), alpha), scale)
    return _inplace_result(input, out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    _floating_only("celu", input)
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return celu(input, alpha, inplace)
    x = _src(input, inplace)
    neg = _P.mul(_P.expm1(_P.div(_P.clamp(x, max=0.0), alpha)), alpha)
    out = _P.where(_P.gt(x, 0), x, neg)
    return _inplace_result(input, out) if inplace else out


class GeluBackward0(Node):
    """GELU's backward, g * (Phi(x) + x phi(x)), in tensor ops (so double backward works)."""
    __slots__ = ()

    def backward(self, g):
        (x,) = self.saved()
        cdf = _P.mul(_P.add(erf(_P.mul(x, _SQRT1_2)), 1.0), 0.5)
        pdf = _P.mul(_P.exp(_P.mul(_P.mul(x, x), -0.5)), _INV_SQRT_2PI)
        return (_P.mul(g, _P.add(cdf, _P.mul(x, pdf))),)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def gelu(input, approximate="none"):
    _floating_only("gelu", input)
    if approximate == "none":
        table = input._be
        if table.has("gelu") and input.dtype.is_floating_point:  # the fused kernel: one pass instead of five
            out = table.gelu(input._data)
            if _needs_graph(input):
                node = GeluBackward0()
                node.save(input)
                return _record(node, out, input.dtype, table, input)
            return _make(out, input.dtype, table)
        return _P.mul(_P.mul(input, 0.5), _P.add(erf(_P.mul(input, _SQRT1_2)), 1.0))
    if approximate == "tanh":
        inner = _P.mul(_P.add(input, _P.mul(_P.mul(_P.mul(input, input), input), 0.044715)), math.sqrt(2.0 / math.pi))
        return _P.mul(_P.mul(input, 0.5), _P.add(_P.tanh(inner), 1.0))
    raise RuntimeError(f"approximate argument must be either none or tanh, but got {approximate!r}")


def silu(input, inplace=False):
    _floating_only("silu", input)
    x = _src(input, inplace)
    out = _P.mul(x, _P.sigmoid(x))
    return _inplace_result(input, out) if inplace else out


def mish(input, inplace=False):
    _floating_only("mish", input)
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return mish(input, inplace)
    x = _src(input, inplace)
    out = _P.mul(x, _P.tanh(softplus(x)))
    return _inplace_result(input, out) if inplace else out


def logsigmoid(input):
    _floating_only("log_sigmoid_forward", input)
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return logsigmoid(input)
    return _P.neg(softplus(_P.neg(input)))


def softplus(input, beta=1.0, threshold=20.0):
    _floating_only("softplus", input)
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, = _ac_cast("softplus", input)
    z = _P.mul(input, beta) if beta != 1 else input
    # log1p(exp(z)) on min(z, threshold): the linear branch never overflows exp
    soft = _P.log1p(_P.exp(_P.clamp(z, max=float(threshold))))
    if beta != 1:
        soft = _P.div(soft, beta)
    return _P.where(_P.gt(z, threshold), input, soft)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        # PyTorch clamps integers in their own dtype (the bounds truncated); bool has no kernel
        if input.dtype is _dt.bool_:
            raise RuntimeError("Bool inputs not supported for hardtanh")
        if input.dtype is _dt.uint8 and (min_val < 0 or max_val < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        min_val, max_val = math.trunc(min_val), math.trunc(max_val)
    out = _P.clamp(_src(input, inplace), min_val, max_val)
    return _inplace_result(input, out) if inplace else out


def hardsigmoid(input, inplace=False):
    _floating_only("hardsigmoid", input)
    x = _src(input, inplace)
    out = _P.div(_P.clamp(_P.add(x, 3.0), 0.0, 6.0), 6.0)
    return _inplace_result(input, out) if inplace else out


def hardswish(input, inplace=False):
    _floating_only("hardswish", input)
    x = _src(input, inplace)
    out = _P.mul(x, _P.div(_P.clamp(_P.add(x, 3.0), 0.0, 6.0), 6.0))
    return _inplace_result(input, out) if inplace else out


def softsign(input):
    return _P.div(input, _P.add(_P.abs(input), 1.0))


def tanhshrink(input):
    return _P.sub(input, _P.tanh(input))


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


class SoftmaxBackward0(Node):
    __slots__ = ("dim", "out")

    def backward(self, g):
        (y,) = self.saved()  # the version check: an in-place change of the output makes the backward raise
        return (_P.mul(y, _P.sub(g, _R.sum(_P.mul(g, y), self.dim, keepdim=True))),)


class LogSoftmaxBackward0(Node):
    __slots__ = ("dim", "out")

    def backward(self, g):
        (y,) = self.saved()  # the version check: an in-place change of the output makes the backward raise
        if not _gs.enabled and g.dtype is y.dtype and g._be.native_broadcast and g._data.ndim:
            # plain backward: g - exp(y) * sum(g), the backend's fused kernel or four kernel calls, no op layer
            table = g._be
            if table.has("log_softmax_backward"):
                return (_make(table.log_softmax_backward(g._data, y._data, self.dim), g.dtype, table),)
            s = table.sum(g._data, (self.dim,), True)
            return (_make(table.sub(g._data, table.mul(table.exp(y._data), s)), g.dtype, table),)
        return (_P.sub(g, _P.mul(_P.exp(y), _R.sum(g, self.dim, keepdim=True))),)


def _softmax_impl(name, input, dim, dtype, log: bool, stacklevel: int = 4):
    _check_tensor(name, "input", input)
    if dim is None:
        dim = _get_softmax_dim(name, input.ndim, stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point and input.numel() == 0:
        return input.clone()  # PyTorch: an empty integer input comes back empty in its own dtype (no kernel runs)
    elif not input.dtype.is_floating_point:
        raise RuntimeError(f"\"{name}_lastdim_kernel_impl\" not implemented for '{input.dtype._tname[:-6]}'")
    table, x = input._be, input._data
    nd = len(x.shape)
    d = _norm_dim(dim, nd, name)
    axes = (d,) if nd else None
    if x.size == 0:
        out = table.full(x.shape, 0, x.dtype)
    elif nd and table.has(name):
        out = getattr(table, name)(x, d)
    else:
        m = table.amax(x, axes, True)
        m = table.where(table.eq(m, float("-inf")), 0.0, m)  # all -inf rows: 0/0 (nan); +inf in a row: nan row
        z = table.sub(x, m)
        if log:
            out = table.sub(z, table.log(table.sum(table.exp(z), axes, True)))
        else:
            e = table.exp(z)
            out = table.div(e, table.sum(e, axes, True))
    if _needs_graph(input):
        node = LogSoftmaxBackward0() if log else SoftmaxBackward0()
        node.dim = d
        r = _record(node, out, input.dtype, table, input)
        node.out = r
        node.save(r)
        return r
    return _make(out, input.dtype, table)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, = _ac_cast("softmax", input)
    return _softmax_impl("softmax", input, dim, dtype, False, _stacklevel + 1)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, = _ac_cast("log_softmax", input)
    return _softmax_impl("log_softmax", input, dim, dtype, True, _stacklevel + 1)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.ndim, _stacklevel + 1)
    return softmax(_P.neg(input), dim, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# padding, one_hot, normalize
# ---------------------------------------------------------------------------------------------
def _slice_dim(x: Tensor, d: int, start, stop) -> Tensor:
    return x[(slice(None),) * d + (slice(start, stop),)]


def pad(input, pad, mode="constant", value=None):
    _check_tensor("pad", "input", input)
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    n = len(pad) // 2
    if n > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode == "constant":
        return _pad_constant(input, pad, 0.0 if value is None else value)
    if value not in (None, 0, 0.0):
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if n > 3 or input.ndim not in (n + 1, n + 2):
        raise NotImplementedError(f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
                                  f"(got a {input.ndim}-D input and {len(pad)} padding values for mode {mode})")
    if _ac.on and mode != "circular":  # autocast: the op's dtype policy (one attribute check when off)
        input, = _ac_cast("pad_" + mode, input)
    out = input
    for k in range(n):
        d = input.ndim - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        size = out.shape[d]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if lo < 0:
            out, lo = _slice_dim(out, d, -lo, None), 0
        if hi < 0:
            out, hi = _slice_dim(out, d, None, out.shape[d] + hi), 0
        size = out.shape[d]
        parts = []
        if mode == "reflect":
            if lo:
                parts.append(_S.flip(_slice_dim(out, d, 1, lo + 1), (d,)))
            parts.append(out)
            if hi:
                parts.append(_S.flip(_slice_dim(out, d, size - hi - 1, size - 1), (d,)))
        elif mode == "replicate":
            shp = list(out.shape)
            if lo:
                shp[d] = lo
                parts.append(_S.expand(_slice_dim(out, d, 0, 1), tuple(shp)))
            parts.append(out)
            if hi:
                shp[d] = hi
                parts.append(_S.expand(_slice_dim(out, d, size - 1, size), tuple(shp)))
        else:
            if lo:
                parts.append(_slice_dim(out, d, size - lo, size))
            parts.append(out)
            if hi:
                parts.append(_slice_dim(out, d, 0, hi))
        out = _S.cat(parts, d) if len(parts) > 1 else out
    return out


def _pad_constant(input: Tensor, pad, value) -> Tensor:
    out = input
    nd = input.ndim
    for k in range(len(pad) // 2):
        d = nd - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        if lo < 0:
            out, lo = _slice_dim(out, d, -lo, None), 0
        if hi < 0:
            out, hi = _slice_dim(out, d, None, out.shape[d] + hi), 0
        parts = []
        shp = list(out.shape)
        if lo:
            shp[d] = lo
            parts.append(_C.full(tuple(shp), value, dtype=out.dtype, device=out.device))
        parts.append(out)
        if hi:
            shp[d] = hi
            parts.append(_C.full(tuple(shp), value, dtype=out.dtype, device=out.device))
        if len(parts) > 1:
            out = _S.cat(parts, d)
    if out is input:
        out = _S.clone(input)
    return out


def one_hot(tensor, num_classes=-1):
    _check_tensor("one_hot", "tensor", tensor)
    if tensor.dtype is not _i64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _C.zeros(*tensor.shape, num_classes, dtype=_i64, device=tensor.device)
    lo, hi = int(_R.amin(tensor).item()), int(_R.amax(tensor).item())
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _C.arange(num_classes, device=tensor.device)
    return _P.eq(_S.unsqueeze(tensor, -1), classes).to(_i64)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = _S.expand_as(_P.clamp(_R.norm(input, p, dim, keepdim=True), min=eps), input)
    return _P.div(input, denom)


# ---------------------------------------------------------------------------------------------
# dropout helper (the public dropout family lives with the Dropout layer), attention
# ---------------------------------------------------------------------------------------------
def _dropout_mask(input: Tensor, p: float) -> Tensor:
    keep = _P.ge(_C.rand(*input.shape, dtype=input.dtype, device=input.device), p)
    return _P.div(_P.where(keep, input, 0.0), 1.0 - p) if p < 1 else _P.mul(input, 0.0)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        query, key, value = _ac_cast("scaled_dot_product_attention", query, key, value)
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    scale_factor = 1.0 / math.sqrt(E) if scale is None else scale
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = _repeat_interleave(key, rep, -3)
        value = _repeat_interleave(value, rep, -3)
    attn = _P.mul(_L.matmul(query, _S.transpose(key, -2, -1)), scale_factor)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        causal = _P.ge(_S.unsqueeze(_C.arange(L, device=query.device), 1), _C.arange(S, device=query.device))
        attn = _P.masked_fill(attn, _P.logical_not(causal), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is _dt.bool_:
            attn = _P.masked_fill(attn, _P.logical_not(attn_mask), float("-inf")) \
                if attn_mask.shape == attn.shape or _bcast_ok(attn_mask.shape, attn.shape) \
                else _P.add(attn, _P.where(attn_mask, 0.0, float("-inf")))
        else:
            attn = _P.add(attn, attn_mask)
    attn = softmax(attn, -1)
    if dropout_p > 0.0:
        attn = _dropout_mask(attn, dropout_p)
    return _L.matmul(attn, value)


def _bcast_ok(small, big) -> bool:
    if len(small) > len(big):
        return False
    return all(s == 1 or s == b for s, b in zip(reversed(small), reversed(big)))


def _repeat_interleave(x: Tensor, rep: int, dim: int) -> Tensor:
    d = _norm_dim(dim, x.ndim)
    shp = tuple(x.shape)
    y = _S.unsqueeze(x, d + 1)
    y = _S.expand(y, shp[:d + 1] + (rep,) + shp[d + 1:])
    return _S.reshape(y, shp[:d] + (shp[d] * rep,) + shp[d + 1:])


# ---------------------------------------------------------------------------------------------
# interpolate
# ---------------------------------------------------------------------------------------------
def _index_tensor(values, device) -> Tensor:
    return _C.tensor(values, dtype=_i64, device=device)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    _check_tensor("interpolate", "input", input)
    nsp = input.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    else:
        align_corners = bool(align_corners)
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if nsp < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the "
                         f"modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
                         f"(got {mode})")
    in_sizes = tuple(input.shape[2:])
    if size is not None:
        out_sizes = _ntuple(size, nsp, "size") if isinstance(size, (tuple, list)) else (int(size),) * nsp
        if isinstance(size, (tuple, list)) and len(size) != nsp:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(in_sizes)} and output size of {list(size)}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                             "...,oK) format.")
        scales = [None] * nsp
    else:
        sf = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nsp
        if len(sf) != nsp:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                             f"input with spatial dimensions of {list(in_sizes)} and scale_factor of shape {sf}.")
        out_sizes = tuple(int(math.floor(s * f)) for s, f in zip(in_sizes, sf))
        scales = [None] * nsp if recompute_scale_factor else [float(f) for f in sf]
    modes = {"nearest": 1, "nearest-exact": 1, "linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "area": 0}
    if mode not in modes:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if modes[mode] > 1 and modes[mode] != nsp or mode == "linear" and nsp != 1:
        want = {1: "3D", 2: "4D", 3: "5D"}[modes[mode]]
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {want} input")
    if mode == "area":
        return adaptive_avg_pool2d(input, out_sizes) if nsp == 2 else _adaptive_avg_nd(input, out_sizes)
    out = input
    for k in range(nsp):
        d = 2 + k
        n_in, n_out, sc = in_sizes[k], out_sizes[k], scales[k]
        scale = (1.0 / sc) if sc is not None and sc > 0 else n_in / n_out
        if mode in ("nearest", "nearest-exact"):
            off = 0.5 if mode == "nearest-exact" else 0.0
            idx = [min(int(math.floor((i + off) * scale)), n_in - 1) for i in range(n_out)]
            out = _I.index_select(out, d, _index_tensor(idx, input.device))
            continue
        if align_corners:
            src = [i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0 for i in range(n_out)]
        else:  # (bicubic keeps negative source positions: its taps are clamped instead)
            src = [scale * (i + 0.5) - 0.5 for i in range(n_out)]
            if mode != "bicubic":
                src = [max(v, 0.0) for v in src]
        if mode == "bicubic":
            out = _cubic_pass(out, d, src, n_in, input.device)
            continue
        i0 = [min(int(math.floor(s)), n_in - 1) for s in src]
        i1 = [min(i + 1, n_in - 1) for i in i0]
        lam = [s - i for s, i in zip(src, i0)]
        wshape = [1] * out.ndim
        wshape[d] = n_out
        lam_t = _C.tensor(lam, dtype=out.dtype, device=out.device).reshape(wshape)
        a = _I.index_select(out, d, _index_tensor(i0, input.device))
        b = _I.index_select(out, d, _index_tensor(i1, input.device))
        out = _P.add(_P.mul(a, _P.rsub(lam_t, 1.0)), _P.mul(b, lam_t))
    return out


_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def _cubic_weights(t: float) -> tuple:
    """The four taps' weights of Keys' cubic convolution at fractional position t (taps at -1, 0, 1, 2)."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _cubic_pass(out: Tensor, d: int, src: list, n_in: int, device) -> Tensor:
    """Bicubic interpolation along dim ``d``: four index_select taps (clamped at the borders) weighted per output."""
    base = [int(math.floor(v)) for v in src]
    weights = [_cubic_weights(v - b) for v, b in zip(src, base)]
    wshape = [1] * out.ndim
    wshape[d] = len(src)
    acc = None
    for j in range(4):
        idx = [min(max(b - 1 + j, 0), n_in - 1) for b in base]
        w = _C.tensor([ws[j] for ws in weights], dtype=out.dtype, device=out.device).reshape(wshape)
        term = _P.mul(_I.index_select(out, d, _index_tensor(idx, device)), w)
        acc = term if acc is None else _P.add(acc, term)
    return acc


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


# ---------------------------------------------------------------------------------------------
# convolution: conv2d and its two gradients, each a differentiable op of the others
# ---------------------------------------------------------------------------------------------
def _conv_out(n, k, s, p, d) -> int:
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def _unfold_fallback(x: Tensor, kh, kw, stride, padding, dilation, oh, ow, pad_value=0.0) -> Tensor:
    """(N, C, H, W) -> (N, C, KH*KW, OH, OW) with basic slicing (one slice per kernel tap, no pixel loop)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    need_h, need_w = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    eh, ew = max(0, need_h - x.shape[2] - 2 * ph), max(0, need_w - x.shape[3] - 2 * pw)
    xp = _pad_constant(x, (pw, pw + ew, ph, ph + eh), pad_value) if (ph or pw or eh or ew) else x
    taps = [xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            for i in range(kh) for j in range(kw)]
    return _S.stack(taps, 2)


def _conv2d_fallback(x: Tensor, w: Tensor, stride, padding, dilation, groups) -> Tensor:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh, ow = _conv_out(h, kh, stride[0], padding[0], dilation[0]), _conv_out(wd, kw, stride[1], padding[1],
                                                                             dilation[1])
    cols = _unfold_fallback(x, kh, kw, stride, padding, dilation, oh, ow)       # N, C, K, OH, OW
    cols = cols.reshape(n, groups, cg * kh * kw, oh * ow)
    wm = w.reshape(1, groups, o // groups, cg * kh * kw)
    return _L.matmul(wm, cols).reshape(n, o, oh, ow)


def _conv2d_bwd_weight_fallback(x: Tensor, gy: Tensor, wshape, stride, padding, dilation, groups) -> Tensor:
    n, c = x.shape[:2]
    o, cg, kh, kw = wshape
    oh, ow = gy.shape[2:]
    cols = _unfold_fallback(x, kh, kw, stride, padding, dilation, oh, ow).reshape(n, groups, cg * kh * kw,
                                                                                   oh * ow)
    gm = gy.reshape(n, groups, o // groups, oh * ow)
    return _R.sum(_L.matmul(gm, _S.transpose(cols, -1, -2)), 0).reshape(wshape)


def _conv2d_bwd_input_fallback(gy: Tensor, w: Tensor, xshape, stride, padding, dilation, groups) -> Tensor:
    n, c, h, wd = xshape
    o, cg, kh, kw = w.shape
    oh, ow = gy.shape[2:]
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    wm = _S.transpose(w.reshape(1, groups, o // groups, cg * kh * kw), -1, -2)    # 1, G, CgKK, Og
    gc = _L.matmul(wm, gy.reshape(n, groups, o // groups, oh * ow))             # N, G, CgKK, OHOW
    gc = gc.reshape(n, c, kh, kw, oh, ow)
    hp = max(h + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(wd + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    gxp = _C.zeros(n, c, hp, wp, dtype=gy.dtype, device=gy.device)
    for i in range(kh):
        for j in range(kw):
            key = (slice(None), slice(None), slice(i * dh, i * dh + (oh - 1) * sh + 1, sh),
                   slice(j * dw, j * dw + (ow - 1) * sw + 1, sw))
            gxp[key] = _P.add(gxp[key], gc[:, :, i, j])
    return _S.contiguous(gxp[:, :, ph:ph + h, pw:pw + wd])


def _conv_call(kernel: str, fallback, a: Tensor, b: Tensor, shape, stride, padding, dilation, groups):
    table = a._be
    if b._be is not table:
        raise device_mismatch(kernel, a, b)
    if table.has(kernel):
        if shape is None:
            return table.conv2d(a._data, b._data, stride, padding, dilation, groups)
        return getattr(table, kernel)(a._data, b._data, tuple(shape), stride, padding, dilation, groups)
    with _no_grad():
        ta, tb = _make(a._data, a.dtype, table), _make(b._data, b.dtype, table)
        r = fallback(ta, tb, stride, padding, dilation, groups) if shape is None else \
            fallback(ta, tb, tuple(shape), stride, padding, dilation, groups)
    return r._data


class _ConvNode(Node):
    __slots__ = ("args", "shape", "need")


class ConvolutionBackward0(_ConvNode):
    __slots__ = ()

    def backward(self, gy):
        x, w = self.saved()
        nx, nw = self.need
        return (_conv2d_input_grad(gy, w, x.shape, *self.args) if nx else None,
                _conv2d_weight_grad(x, gy, w.shape, *self.args) if nw else None)


class ConvolutionBackwardInput(_ConvNode):
    """The input-gradient op gx = J_x^T gy: linear in gy and in w."""
    __slots__ = ()

    def backward(self, ggx):
        gy, w = self.saved()
        ngy, nw = self.need
        return (_conv2d_raw(ggx, w, *self.args) if ngy else None,
                _conv2d_weight_grad(ggx, gy, w.shape, *self.args) if nw else None)


class ConvolutionBackwardWeight(_ConvNode):
    """The weight-gradient op gw: linear in x and in gy."""
    __slots__ = ()

    def backward(self, ggw):
        x, gy = self.saved()
        nx, ngy = self.need
        return (_conv2d_input_grad(gy, ggw, x.shape, *self.args) if nx else None,
                _conv2d_raw(x, ggw, *self.args) if ngy else None)


def _conv_op(node_cls, kernel, fallback, a, b, shape, args):
    out = _conv_call(kernel, fallback, a, b, shape, *args)
    dt, table = a.dtype, a._be
    if _needs_graph(a, b):
        node = node_cls()
        node.args, node.need = args, (a._rg, b._rg)
        node.save(a, b)
        return _record(node, out, dt, table, a, b)
    return _make(out, dt, table)


def _conv2d_raw(x, w, stride, padding, dilation, groups):
    return _conv_op(ConvolutionBackward0, "conv2d", _conv2d_fallback, x, w, None,
                    (stride, padding, dilation, groups))


def _conv2d_input_grad(gy, w, xshape, stride, padding, dilation, groups):
    return _conv_op(ConvolutionBackwardInput, "conv2d_backward_input", _conv2d_bwd_input_fallback, gy, w,
                    tuple(xshape), (stride, padding, dilation, groups))


def _conv2d_weight_grad(x, gy, wshape, stride, padding, dilation, groups):
    return _conv_op(ConvolutionBackwardWeight, "conv2d_backward_weight", _conv2d_bwd_weight_fallback, x, gy,
                    tuple(wshape), (stride, padding, dilation, groups))


def _check_conv(op, input, weight, bias, groups, nsp):
    _check_tensor(op, "input", input)
    _check_tensor(op, "weight", weight)
    if weight.ndim != nsp + 2:
        raise RuntimeError(f"weight should have at least three dimensions (expected {nsp + 2}-D weight for "
                           f"{op}, got {weight.ndim}-D weight of size {list(weight.shape)})")
    if input.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"Expected {nsp + 1}D (unbatched) or {nsp + 2}D (batched) input to {op}, but got input "
                           f"of size: {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({input.dtype._tname[:-6]}) and weight type ({weight.dtype._tname[:-6]}) "
                           "should be the same")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"{op}\" not implemented for '{input.dtype._tname[:-6]}'")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[0] and op != "conv_transpose2d"):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{weight.shape[0]} elements, but got bias of size {list(bias.shape)} instead")


def _add_bias(out: Tensor, bias, nsp: int) -> Tensor:
    if bias is None:
        return out
    return _P.add(out, bias.reshape((bias.shape[0],) + (1,) * nsp))


def _same_padding(ks, dilation):
    """PyTorch's padding='same': total d*(k-1), the extra element (odd totals) on the right/bottom."""
    lo, extra = [], []
    for k, d in zip(ks, dilation):
        total = d * (k - 1)
        lo.append(total // 2)
        extra.append(total - 2 * (total // 2))
    return tuple(lo), tuple(extra)


def _resolve_conv_padding(x: Tensor, padding, stride: tuple, dilation: tuple, ks: tuple):
    """(input, per-dim padding) for a convolution: 'valid' is none; 'same' pads d*(k-1) with the odd element on
    the far side (padded into ``x`` here); then PyTorch's checks of stride, padding and dilation."""
    nsp = len(ks)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nsp
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            padding, extra = _same_padding(ks, dilation)
            if any(extra):
                pads = ()
                for e in reversed(extra):  # F.pad order: last dim first
                    pads += (0, e)
                x = _pad_constant(x, pads, 0.0)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _ntuple(padding, nsp, "padding")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    return x, padding


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("conv2d", input, weight, bias)
    _check_conv("conv2d", input, weight, bias, groups, 2)
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    stride, dilation = _ntuple(stride, 2, "stride"), _ntuple(dilation, 2, "dilation")
    kh, kw = weight.shape[2:]
    x, padding = _resolve_conv_padding(x, padding, stride, dilation, (kh, kw))
    n, c, h, w = x.shape
    o = weight.shape[0]
    if c != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got {c} channels "
                           "instead")
    if o % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    ph, pw = h + 2 * padding[0], w + 2 * padding[1]
    ekh, ekw = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
    if ph < ekh or pw < ekw:
        raise RuntimeError(f"Calculated padded input size per channel: ({ph} x {pw}). Kernel size: ({ekh} x {ekw}). "
                           "Kernel size can't be greater than actual input size")
    out = _add_bias(_conv2d_raw(x, weight, stride, padding, dilation, groups), bias, 2)
    return out if batched else _S.squeeze(out, 0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("conv1d", input, weight, bias)
    _check_conv("conv1d", input, weight, bias, groups, 1)
    batched = input.ndim == 3
    x = input if batched else _S.unsqueeze(input, 0)
    s, d = _ntuple(stride, 1, "stride")[0], _ntuple(dilation, 1, "dilation")[0]
    if not isinstance(padding, str):
        padding = (0, _ntuple(padding, 1, "padding")[0])
    out = conv2d(_S.unsqueeze(x, 2), _S.unsqueeze(weight, 2), None, (1, s), padding, (1, d), groups)
    out = _add_bias(_S.squeeze(out, 2), bias, 1)
    return out if batched else _S.squeeze(out, 0)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("conv_transpose2d", input, weight, bias)
    _check_conv("conv_transpose2d", input, weight, bias, groups, 2)
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    stride, padding = _ntuple(stride, 2, "stride"), _ntuple(padding, 2, "padding")
    output_padding, dilation = _ntuple(output_padding, 2, "output_padding"), _ntuple(dilation, 2, "dilation")
    n, c, h, w = x.shape
    cin, cog, kh, kw = weight.shape
    if c != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input "
                           f"{list(input.shape)} to have {cin} channels, but got {c} channels instead")
    if cin % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    for k in range(2):
        if output_padding[k] >= stride[k] and output_padding[k] >= dilation[k]:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_height: {output_padding[0]} output_padding_width: "
                               f"{output_padding[1]} stride_height: {stride[0]} stride_width: {stride[1]} "
                               f"dilation_height: {dilation[0]} dilation_width: {dilation[1]}")
    oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    ow = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    if oh <= 0 or ow <= 0:
        raise RuntimeError(f"Given input size per channel: ({h} x {w}). Calculated output size per channel: "
                           f"({oh} x {ow}). Output size is too small")
    out = _conv2d_input_grad(x, weight, (n, cog * groups, oh, ow), stride, padding, dilation, groups)
    if bias is not None:
        out = _add_bias(out, bias, 2)
    return out if batched else _S.squeeze(out, 0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("conv_transpose1d", input, weight, bias)
    batched = input.ndim == 3
    x = input if batched else _S.unsqueeze(input, 0)
    one = lambda v: (1, _ntuple(v, 1)[0])  # noqa: E731
    out = conv_transpose2d(_S.unsqueeze(x, 2), _S.unsqueeze(weight, 2), None, one(stride),
                           (0, _ntuple(padding, 1)[0]), (0, _ntuple(output_padding, 1)[0]), groups, one(dilation))
    out = _add_bias(_S.squeeze(out, 2), bias, 1)
    return out if batched else _S.squeeze(out, 0)


# ---------------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------------
def _pool_out(n, k, s, p, d, ceil_mode) -> int:
    num = n + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_args(op, input, kernel_size, stride, padding, dilation, ceil_mode):
    _check_tensor(op, "input", input)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"non-empty 3D or 4D (batch mode) tensor expected for input, but got: "
                           f"{list(input.shape)}")
    k = _ntuple(kernel_size, 2, "kernel_size")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else \
        _ntuple(stride, 2, "stride")
    p, d = _ntuple(padding, 2, "padding"), _ntuple(dilation, 2, "dilation")
    if any(v <= 0 for v in k + s + d):
        raise RuntimeError(f"{op}: kernel_size, stride and dilation must be greater than zero, but got "
                           f"kernel_size={list(k)} stride={list(s)} dilation={list(d)}")
    for i in range(2):
        if p[i] > (d[i] * (k[i] - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    h, w = input.shape[-2:]
    oh, ow = _pool_out(h, k[0], s[0], p[0], d[0], ceil_mode), _pool_out(w, k[1], s[1], p[1], d[1], ceil_mode)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input size: ({input.shape[-3]}x{h}x{w}). Calculated output size: "
                           f"({input.shape[-3]}x{oh}x{ow}). Output size is too small")
    return k, s, p, d, oh, ow


class MaxPool2DWithIndicesBackward0(Node):
    __slots__ = ("idx", "shape")

    def backward(self, g, gi=None):
        n, c, h, w = self.shape
        table = g._be
        if not (g._rg and _gs.enabled) and table.has("max_pool2d_backward"):
            return (_make(table.max_pool2d_backward(g._data, self.idx._data, self.shape), g.dtype, table),)
        z = _C.zeros(n, c, h * w, dtype=g.dtype, device=g.device)
        flat = _I.scatter_add(z, 2, self.idx.reshape(n, c, -1), g.reshape(n, c, -1))
        return (flat.reshape(n, c, h, w),)


def _max_pool2d_fallback(x: Tensor, k, s, p, d, oh, ow):
    n, c, h, w = x.shape
    neg = float("-inf")
    cols = _unfold_fallback(x, k[0], k[1], s, p, d, oh, ow, neg)           # N, C, K, OH, OW
    vals, kidx = _R.max(cols, 2)
    ki, kj = _P.floor_divide(kidx, k[1]), _P.remainder(kidx, k[1])
    hh = _P.add(_P.mul(ki, d[0]), _C.arange(oh, device=x.device).reshape(oh, 1) * s[0] - p[0])
    ww = _P.add(_P.mul(kj, d[1]), _C.arange(ow, device=x.device) * s[1] - p[1])
    return vals, _P.add(_P.mul(hh, w), ww)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    k, s, p, d, oh, ow = _pool_args("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"\"max_pool2d\" not implemented for '{x.dtype._tname[:-6]}'")
    table = x._be
    if table.has("max_pool2d"):
        v, i = table.max_pool2d(x._data, k, s, p, d, (oh, ow))
    else:
        with _no_grad():
            vt, it = _max_pool2d_fallback(_make(x._data, x.dtype, table), k, s, p, d, oh, ow)
        v, i = vt._data, it._data
    idx = _make(i, _i64, table)
    if _needs_graph(x):
        node = MaxPool2DWithIndicesBackward0()
        node.idx, node.shape = idx, tuple(x.shape)
        out = _record(node, v, x.dtype, table, x)
    else:
        out = _make(v, x.dtype, table)
    if not batched:
        out, idx = _S.squeeze(out, 0), _S.squeeze(idx, 0)
    return out, idx


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    one = lambda v: (1, _ntuple(v, 1)[0])  # noqa: E731
    out, idx = max_pool2d_with_indices(_S.unsqueeze(input, -2), one(kernel_size),
                                       None if stride is None else one(stride), (0, _ntuple(padding, 1)[0]),
                                       one(dilation), ceil_mode)
    out, idx = _S.squeeze(out, -2), _S.squeeze(idx, -2)
    return (out, idx) if return_indices else out


def _avg_divisor(n, k, s, p, oh, count_include_pad):
    """Per-output window sizes along one dim, as PyTorch's avg_pool2d computes them."""
    out = []
    for i in range(oh):
        start = i * s - p
        end = min(start + k, n + p)
        size = end - start
        start, end = max(start, 0), min(end, n)
        out.append(size if count_include_pad else end - start)
    return out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    k, s, p, d, oh, ow = _pool_args("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    n, c, h, w = x.shape
    eh, ew = max(0, (oh - 1) * s[0] + k[0] - h - 2 * p[0]), max(0, (ow - 1) * s[1] + k[1] - w - 2 * p[1])
    xp = _pad_constant(x, (p[1], p[1] + ew, p[0], p[0] + eh), 0.0) if any(p) or eh or ew else x
    ones = _C.ones(c, 1, k[0], k[1], dtype=x.dtype, device=x.device)
    sums = _conv2d_raw(xp, ones, s, (0, 0), (1, 1), c)[:, :, :oh, :ow]
    if divisor_override is not None:
        out = _P.div(sums, float(divisor_override))
    else:
        dh = _avg_divisor(h, k[0], s[0], p[0], oh, count_include_pad)
        dw = _avg_divisor(w, k[1], s[1], p[1], ow, count_include_pad)
        if len(set(dh)) == 1 and len(set(dw)) == 1:
            out = _P.div(sums, float(dh[0] * dw[0]))
        else:
            div = _C.tensor([[a * b for b in dw] for a in dh], dtype=x.dtype, device=x.device)
            out = _P.div(sums, div)
    return out if batched else _S.squeeze(out, 0)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    one = lambda v: (1, _ntuple(v, 1)[0])  # noqa: E731
    out = avg_pool2d(_S.unsqueeze(input, -2), one(kernel_size), None if stride is None else one(stride),
                     (0, _ntuple(padding, 1)[0]), ceil_mode, count_include_pad)
    return _S.squeeze(out, -2)


def _adaptive_matrix(n_in, n_out, dtype, device) -> Tensor:
    rows = []
    for i in range(n_out):
        start, end = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        rows.append([1.0 / (end - start) if start <= j < end else 0.0 for j in range(n_in)])
    return _C.tensor(rows, dtype=dtype, device=device)


def adaptive_avg_pool2d(input, output_size):
    _check_tensor("adaptive_avg_pool2d", "input", input)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    h, w = input.shape[-2:]
    os_ = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size, output_size]
    oh, ow = (h if os_[0] is None else int(os_[0])), (w if os_[1] is None else int(os_[1]))
    if oh == h and ow == w:
        return _S.clone(input)
    if h % oh == 0 and w % ow == 0:
        return avg_pool2d(input, (h // oh, w // ow))
    # rectangular windows: the average is separable, A_h @ x @ A_w^T with constant averaging matrices
    ah = _adaptive_matrix(h, oh, input.dtype, input.device)
    aw = _adaptive_matrix(w, ow, input.dtype, input.device)
    return _L.matmul(_L.matmul(ah, input), _S.transpose(aw, 0, 1))


def _adaptive_avg_nd(input, out_sizes):
    out = input
    for k, n_out in enumerate(out_sizes):
        d = 2 + k
        a = _adaptive_matrix(input.shape[d], n_out, input.dtype, input.device)
        out = _S.movedim(_L.matmul(a, _S.movedim(out, d, -2)), -2, d)
    return out


def adaptive_avg_pool1d(input, output_size):
    n = _ntuple(output_size, 1)[0]
    return _adaptive_avg_nd(input, (n,))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    h, w = input.shape[-2:]
    oh, ow = _ntuple(output_size, 2)
    if h % oh or w % ow:
        raise NotImplementedError("adaptive_max_pool2d supports output sizes that divide the input size")
    return max_pool2d(input, (h // oh, w // ow), return_indices=return_indices)


# ---------------------------------------------------------------------------------------------
# normalization
# ---------------------------------------------------------------------------------------------
def _verify_batch_size(shape) -> None:
    size_prods = shape[0]
    for s in shape[2:]:
        size_prods *= s
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"coretorch.Size({list(shape)})")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    _check_tensor("batch_norm", "input", input)
    if input.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")
    c = input.shape[1]
    axes = (0,) + tuple(range(2, input.ndim))
    bshape = (1, c) + (1,) * (input.ndim - 2)
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if training:
        _verify_batch_size(tuple(input.shape))
        mean = _R.mean(input, axes, keepdim=True)
        xc = _P.sub(input, mean)
        var = _R.mean(_P.mul(xc, xc), axes, keepdim=True)
        if running_mean is not None or running_var is not None:
            n = input.numel() // c
            with _no_grad():
                if running_mean is not None:
                    running_mean.copy_(_P.add(_P.mul(running_mean, 1 - momentum),
                                              _P.mul(mean.reshape(c).to(running_mean.dtype), momentum)))
                if running_var is not None:
                    unbiased = _P.mul(var.reshape(c), n / max(n - 1, 1)).to(running_var.dtype)
                    running_var.copy_(_P.add(_P.mul(running_var, 1 - momentum), _P.mul(unbiased, momentum)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean = running_mean.reshape(bshape)
        xc = _P.sub(input, mean)
        var = running_var.reshape(bshape)
    out = _P.mul(xc, _P.rsqrt(_P.add(var, eps)))
    if weight is not None:
        out = _P.mul(out, weight.reshape(bshape))
    if bias is not None:
        out = _P.add(out, bias.reshape(bshape))
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each (instance, channel) over its spatial dims; with running stats, update them by the batch
    mean of the per-instance statistics (unbiased variance), or normalise by them when not use_input_stats."""
    if _ac.on and (off := _ac_off(input)) is not None:  # autocast: on no list, its inner ops as they are
        with off:
            return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)
    bshape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if use_input_stats:
        axes = tuple(range(2, input.ndim))
        mean = _R.mean(input, axes, keepdim=True)
        xc = _P.sub(input, mean)
        var = _R.mean(_P.mul(xc, xc), axes, keepdim=True)
        if running_mean is not None or running_var is not None:
            cnt = 1
            for d in axes:
                cnt *= input.shape[d]
            with no_grad():
                if running_mean is not None:
                    batch_mean = _R.mean(mean.reshape(input.shape[0], input.shape[1]), 0)
                    running_mean.mul_(1 - momentum).add_(_P.mul(batch_mean, momentum))
                if running_var is not None:
                    unbiased = _P.mul(var.reshape(input.shape[0], input.shape[1]), cnt / max(cnt - 1, 1))
                    running_var.mul_(1 - momentum).add_(_P.mul(_R.mean(unbiased, 0), momentum))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        xc = _P.sub(input, running_mean.reshape(bshape))
        var = running_var.reshape(bshape)
    out = _P.mul(xc, _P.rsqrt(_P.add(var, eps)))
    if weight is not None:
        out = _P.mul(out, weight.reshape(bshape))
    if bias is not None:
        out = _P.add(out, bias.reshape(bshape))
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("layer_norm", input, weight, bias)
    _check_tensor("layer_norm", "input", input)
    ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or input.ndim < k or tuple(input.shape[-k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    axes = tuple(range(input.ndim - k, input.ndim))
    mean = _R.mean(input, axes, keepdim=True)
    xc = _P.sub(input, mean)
    out = _P.mul(xc, _P.rsqrt(_P.add(_R.mean(_P.mul(xc, xc), axes, keepdim=True), eps)))
    if weight is not None:
        out = _P.mul(out, weight)
    if bias is not None:
        out = _P.add(out, bias)
    return out


def rms_norm(input, normalized_shape, weight=None, eps=None):
    ns = (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    axes = tuple(range(input.ndim - len(ns), input.ndim))
    e = eps if eps is not None else (1.1920928955078125e-07 if input.dtype is _dt.float32 else 2.220446049250313e-16)
    out = _P.mul(input, _P.rsqrt(_P.add(_R.mean(_P.mul(input, input), axes, keepdim=True), e)))
    return out if weight is None else _P.mul(out, weight)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("group_norm", input, weight, bias)
    _check_tensor("group_norm", "input", input)
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)
    mean = _R.mean(x, 2, keepdim=True)
    xc = _P.sub(x, mean)
    out = _P.mul(xc, _P.rsqrt(_P.add(_R.mean(_P.mul(xc, xc), 2, keepdim=True), eps))).reshape(input.shape)
    bshape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = _P.mul(out, weight.reshape(bshape))
    if bias is not None:
        out = _P.add(out, bias.reshape(bshape))
    return out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    sq = _P.mul(input, input).unsqueeze(1)
    div = _pad_constant(sq, (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2), 0.0)
    div = avg_pool2d(div.reshape(input.shape[0], 1, div.shape[2], -1), (size, 1), stride=1)
    div = div.reshape(input.shape)
    return _P.div(input, _P.pow(_P.add(_P.mul(div, alpha), k), beta))


# ---------------------------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce, reduction, emit=True):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "none" if not reduce else "mean" if size_average else "sum"
    if emit:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                      UserWarning, stacklevel=3)
    return ret


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return _R.mean(loss)
    if reduction == "sum":
        return _R.sum(loss)
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _pointwise_target(op, input, target):
    _check_tensor(op, "input", input)
    _check_tensor(op, "target", target)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=3)
    return _S.broadcast_tensors(input, target)


def _loss_dtypes(kernel: str, input, target, bool_input: bool = True):
    """PyTorch's pointwise loss kernels: none for two integer/bool operands; a bool operand joins the other's dtype
    (``bool_input``: also when the input is the bool one)."""
    if not (isinstance(input, Tensor) and isinstance(target, Tensor)):
        return input, target
    fi, ft = input.dtype.is_floating_point, target.dtype.is_floating_point
    if not fi and not ft:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype._tname[:-6]}'")
    if target.dtype is _dt.bool_:
        target = target.to(input.dtype)
    elif input.dtype is _dt.bool_ and bool_input:
        input = input.to(target.dtype)
    return input, target


def _weighted(loss, weight):
    return loss if weight is None else _P.mul(loss, weight)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("mse_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    input, target = _pointwise_target("mse_loss", *_loss_dtypes("mse_cpu", input, target))
    d = _P.sub(input, target)
    return _reduce(_weighted(_P.mul(d, d), weight), reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    input, target = _pointwise_target("l1_loss", input, target)
    return _reduce(_weighted(_P.abs(_P.sub(input, target)), weight), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("smooth_l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _pointwise_target("smooth_l1_loss", *_loss_dtypes("smooth_l1_cpu", input, target))
    d = _P.sub(input, target)
    ad = _P.abs(d)
    if beta == 0:
        return _reduce(ad, reduction)
    loss = _P.where(_P.lt(ad, beta), _P.div(_P.mul(_P.mul(d, d), 0.5), beta), _P.sub(ad, 0.5 * beta))
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("huber_loss", input, target)
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _pointwise_target("huber_loss", *_loss_dtypes("huber_cpu", input, target, bool_input=False))
    d = _P.sub(input, target)
    ad = _P.abs(d)
    loss = _P.where(_P.lt(ad, delta), _P.mul(_P.mul(d, d), 0.5), _P.mul(_P.sub(ad, 0.5 * delta), delta))
    return _reduce(_weighted(loss, weight), reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target, weight = _ac_cast("binary_cross_entropy", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_tensor("binary_cross_entropy", "input", input)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {target.dtype._tname[:-6]} but expected {input.dtype._tname[:-6]}")
    if weight is not None:
        if weight.requires_grad and _gs.enabled:
            raise RuntimeError("The function 'binary_cross_entropy' is not differentiable with respect to argument "
                               "'weight'. This input cannot have requires_grad True.")
        weight = _S.expand(weight, tuple(input.shape))  # PyTorch expands the weight to the target's size
    if input.numel():
        lo, hi = float(_R.amin(input.detach()).item()), float(_R.amax(input.detach()).item())
        if lo < 0 or hi > 1:
            raise RuntimeError("all elements of input should be between 0 and 1")
    with _no_grad():
        # PyTorch clamps each log at -100 so that a 0/1 prediction gives a finite loss
        log_x = _P.clamp(_P.log(input), min=-100.0)
        log_1mx = _P.clamp(_P.log(_P.rsub(input, 1.0)), min=-100.0)
        loss = _P.sub(_P.mul(_P.sub(target, 1.0), log_1mx), _P.mul(target, log_x))  # PyTorch's order (signed 0s)
        out = _reduce(_weighted(loss, weight), reduction)
    if _needs_graph(input, target):
        node = BinaryCrossEntropyBackward0()
        node.reduction = reduction
        node.need = (input._rg, target._rg)
        node.save(input, target, weight)
        return _record(node, out._data, out.dtype, out._be, input, target)
    return out


class BinaryCrossEntropyBackward0(Node):
    """PyTorch's binary_cross_entropy_backward: input g (x - y) / clamp(x (1 - x), min=1e-12) (finite at a 0 or 1
    prediction), target -g logit(x); times the weight, over numel for 'mean'.  Tensor ops: double backward works."""
    __slots__ = ("reduction", "need")

    def backward(self, g):
        x, y, w = self.saved()
        if self.reduction == "mean":
            g = _P.div(g, x.numel())
        if w is not None:
            g = _P.mul(g, w)
        nx, ny = self.need
        gx = _P.div(_P.mul(g, _P.sub(x, y)), _P.clamp(_P.mul(x, _P.rsub(x, 1.0)), min=1e-12)) if nx else None
        gy = _P.mul(g, _P.sub(_P.log(_P.rsub(x, 1.0)), _P.log(x))) if ny else None
        return gx, gy


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target, weight, pos_weight = _ac_cast("binary_cross_entropy_with_logits", input, target, weight,
                                                     pos_weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_tensor("binary_cross_entropy_with_logits", "input", input)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    _floating_only("log_sigmoid_cpu", input)
    if isinstance(target, Tensor) and not target.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {target.dtype._tname[:-6]}")
    # stable: log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|))
    softplus_neg = _P.add(_P.clamp(_P.neg(input), min=0.0), _P.log1p(_P.exp(_P.neg(_P.abs(input)))))
    if pos_weight is not None:
        log_weight = _P.add(_P.mul(_P.sub(pos_weight, 1.0), target), 1.0)
        loss = _P.add(_P.mul(_P.rsub(target, 1.0), input), _P.mul(log_weight, softplus_neg))
    else:
        loss = _P.add(_P.mul(_P.rsub(target, 1.0), input), softplus_neg)
    return _reduce(_weighted(loss, weight), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("kl_div", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if log_target:
        loss = _P.mul(_P.exp(target), _P.sub(target, input))
    else:
        pos = _P.gt(target, 0)
        safe = _P.where(pos, target, 1.0)
        loss = _P.where(pos, _P.mul(target, _P.sub(_P.log(safe), input)), _P.mul(_P.mul(target, input), -1.0))
    if reduction == "batchmean":
        return _P.div(_R.sum(loss), input.shape[0]) if input.ndim else _R.sum(loss)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("poisson_nll_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = _P.sub(_P.exp(input), _P.mul(target, input))
    else:
        loss = _P.sub(input, _P.mul(target, _P.log(_P.add(input, eps))))
    if full:
        st = _P.add(_P.sub(_P.mul(target, _P.log(target)), target), _P.mul(_P.log(_P.mul(target, 2 * math.pi)), 0.5))
        loss = _P.add(loss, _P.where(_P.gt(target, 1), st, 0.0))
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("soft_margin_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(_P.log1p(_P.exp(_P.neg(_P.mul(target, input)))), reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        x1, x2 = _ac_cast("cosine_similarity", x1, x2)
    n1 = _P.clamp(_R.norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = _P.clamp(_R.norm(x2, 2, dim, keepdim=True), min=eps)
    return _R.sum(_P.mul(_P.div(x1, n1), _P.div(x2, n2)), dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _R.norm(_P.add(_P.sub(x1, x2), eps), p, -1, keepdim)


class NllLossBackward0(Node):
    """Gradient of the picked log-probabilities: -w[t] g / total at (i, t_i), written with tensor ops."""
    __slots__ = ("target", "wt", "total", "reduction", "shape", "dt")

    def backward(self, g):
        m, c = self.shape
        if self.wt is None:  # the forward's fast path: every weight 1, total m
            table = g._be
            if not (_gs.enabled and g._rg) and g.dtype is self.dt:
                if table.host_memory:  # the scalar is free to read: -g / m computed once (double, then rounded)
                    gv = float(table.to_numpy(g._data))
                    coef = -gv / m if self.reduction == "mean" else -gv
                else:
                    gm = table.view(g._data, (1,))
                    coef = table.div(gm, -float(m)) if self.reduction == "mean" else table.neg(gm)
                out = table.full((m, c), 0, g.dtype.np)
                table.setitem_(out, (table.arange(0, m, 1, _i64.np), self.target._data), coef)
                return (_make(out, g.dtype, table),)
            self.wt = _make(g._be.full((m,), 1, g.dtype.np), g.dtype, g._be)
            self.total = _make(g._be.full((), m, g.dtype.np), g.dtype, g._be)
        if not (_gs.enabled and g._rg) and g.dtype is self.wt.dtype:
            # plain backward: -w[t] g / total scattered into zeros at (i, target_i), all at kernel level
            table, gd, wt = g._be, g._data, self.wt._data
            if self.reduction == "none":
                coef = table.mul(table.view(gd, (m,)), wt)
            else:
                scale = wt if self.reduction == "sum" else table.div(wt, self.total._data)
                gm = table.view(gd, (1,))
                coef = table.mul(scale, gm if table.native_broadcast else table.expand(gm, (m,)))
            # a sample of weight 0 (an ignored one) gets 0, as PyTorch never writes it (0 / 0 would be NaN when
            # every target is ignored)
            coef = table.where(table.eq(wt, 0), 0.0, table.neg(coef))
            out = table.full((m, c), 0, g.dtype.np)
            table.setitem_(out, (table.arange(0, m, 1, _i64.np), self.target._data), coef)
            return (_make(out, g.dtype, table),)
        if self.reduction == "none":
            coef = _P.mul(g.reshape(m), self.wt)
        else:
            scale = self.wt if self.reduction == "sum" else _P.div(self.wt, self.total)
            coef = _P.mul(_S.expand(g.reshape(1), (m,)), scale)
        coef = _P.where(_P.eq(self.wt, 0), 0.0, _P.neg(coef))
        classes = _C.arange(c, device=g.device)
        hit = _P.eq(_S.unsqueeze(self.target, 1), classes)
        return (_P.where(hit, _S.unsqueeze(coef, 1), 0.0),)


def _nll_2d(x: Tensor, t: Tensor, weight, ignore_index, reduction) -> Tensor:
    """nll over x (M, C) and class indices t (M,); returns per-sample losses (M,) or the reduced loss."""
    table = x._be
    m, c = x._data.shape
    tt = t._data if t._data.dtype == _i64.np else table.cast(t._data, _i64.np)
    if m and table.has("nll_loss"):  # the backend's fused kernel (its range check need not sync the device)
        losses, wt, st = table.nll_loss(x._data, tt, None if weight is None else weight._data, int(ignore_index))
        return _nll_reduce(x, table, losses, wt, st, reduction, m, c)
    if m and weight is None and reduction != "none" and not 0 <= ignore_index < c and table.host_memory:
        # the common case, decided by one reduction read back (free where the arrays are host memory):
        # every target a valid class, none ignored -> loss = -sum(x[i, t_i]) / m, no masks or weights
        if host_all_below(table, tt, c):
            s = table.sum(table.index(x._data, (table.arange(0, m, 1, _i64.np), tt)), None, False)
            out = table.div(s, -float(m)) if reduction == "mean" else table.neg(s)
            return _nll_out(x, table, out, tt, None, None, reduction, m, c)
    valid = table.ne(tt, ignore_index)
    if m:
        bad = table.logical_and(valid, table.logical_or(table.lt(tt, 0), table.ge(tt, c)))
        if bool(table.to_numpy(table.any(bad, None, False))):
            bad_vals = table.to_numpy(tt)[table.to_numpy(bad)]
            raise IndexError(f"Target {int(bad_vals[0])} is out of bounds.")
    st = table.where(valid, tt, 0)
    picked = table.index(x._data, (table.arange(0, m, 1, _i64.np), st))  # x[i, t_i]
    validf = table.cast(valid, x.dtype.np)
    if weight is not None:
        wt = table.mul(table.index_select(weight._data, 0, st), validf)
    else:
        wt = validf
    losses = table.neg(table.mul(picked, wt))
    return _nll_reduce(x, table, losses, wt, st, reduction, m, c)


def _nll_reduce(x: Tensor, table, losses, wt, st, reduction: str, m: int, c: int) -> Tensor:
    """Reduce per-sample losses (weights ``wt``, safe class indices ``st``) and record the node."""
    total = None
    if reduction == "none":
        out = losses
    elif reduction == "sum":
        out = table.sum(losses, None, False)
    else:
        total = table.sum(wt, None, False)
        out = table.div(table.sum(losses, None, False), total)
    return _nll_out(x, table, out, st, wt, total, reduction, m, c)


def _nll_out(x: Tensor, table, out, st, wt, total, reduction: str, m: int, c: int) -> Tensor:
    """The loss tensor, with its NllLossBackward0 node when x needs a graph (``wt`` None: every weight 1)."""
    if not _needs_graph(x):
        return _make(out, x.dtype, table)
    node = NllLossBackward0()
    node.target, node.dt = _make(st, _i64, table), x.dtype
    node.wt = None if wt is None else _make(wt, x.dtype, table)
    node.total = None if total is None else _make(total, x.dtype, table)
    node.reduction, node.shape = reduction, (m, c)
    return _record(node, out, x.dtype, table, x)


def _class_last(input: Tensor):
    """(N, C, d1, ...) -> (N*d1*..., C); (C,) -> (1, C)."""
    nd = len(input._data.shape)
    if nd == 1:
        return _S.unsqueeze(input, 0)
    if nd == 2:
        return input
    c = input.shape[1]
    return _S.movedim(input, 1, -1).reshape(-1, c)


def _check_nll_shapes(input, target):
    if target._be is not input._be:
        raise device_mismatch("nll_loss", input, target)
    xs, ts = input._data.shape, target._data.shape
    if not xs:
        raise ValueError(f"Expected 1 or more dimensions (got {len(xs)})")
    if target.dtype.is_floating_point or target.dtype is _dt.bool_:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._tname[:-6]} (class-index targets "
                           "must be int64: use target.long())")
    if len(xs) == 1:
        if ts:
            raise ValueError(f"Expected input batch_size (1) to match target batch_size ({ts[0]}).")
        return
    if not ts or xs[0] != ts[0]:
        raise ValueError(f"Expected input batch_size ({xs[0]}) to match target batch_size "
                         f"({ts[0] if ts else 0}).")
    if ts[1:] != xs[2:]:
        raise RuntimeError(f"Expected target size {[xs[0]] + list(xs[2:])}, got {list(ts)}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target, weight = _ac_cast("nll_loss", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_tensor("nll_loss", "input", input)
    return _nll(input, target, weight, ignore_index, reduction)


def _nll(input, target, weight, ignore_index, reduction: str):
    """nll_loss once its arguments are read (cross_entropy comes here directly)."""
    _check_nll_shapes(input, target)
    xs = input._data.shape
    c = xs[1] if len(xs) > 1 else xs[0]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    x = _class_last(input)
    t = target if len(target._data.shape) == 1 else target.reshape(-1)
    out = _nll_2d(x, t, weight, ignore_index, reduction)
    if reduction == "none":
        out = out.reshape(tuple(target._data.shape))
    return out


def _class_shape(ndim: int, class_dim: int, c: int) -> list:
    """A per-class weight's shape broadcast against an input of ``ndim`` dims with classes on ``class_dim``."""
    shape = [1] * ndim
    shape[class_dim] = c
    return shape


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target, weight = _ac_cast("cross_entropy", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_tensor("cross_entropy", "input", input)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    xs = input._data.shape
    class_dim = 0 if len(xs) == 1 else 1
    c = xs[class_dim]
    logp = _softmax_impl("log_softmax", input, class_dim, None, True)
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            hint = ""
            if tuple(target.shape) == tuple(input.shape[:class_dim]) + tuple(input.shape[class_dim + 1:]):
                hint = (f" (a {target.dtype._tname[:-6].lower()} target is read as class probabilities of the "
                        "input's shape; class indices must be an int64 tensor: use target.long())")
            raise RuntimeError(f"Expected target size {list(input.shape)}, got {list(target.shape)}{hint}")
        if label_smoothing > 0:
            target = _P.add(_P.mul(target, 1 - label_smoothing), label_smoothing / c)
        prod = _P.mul(logp, target)
        if weight is not None:
            prod = _P.mul(prod, weight.reshape(_class_shape(len(xs), class_dim, c)))
        if reduction == "none":
            return _P.neg(_R.sum(prod, class_dim))
        total = _P.neg(_R.sum(prod))
        if reduction == "sum":
            return total
        return _P.div(total, input.numel() / c) if input.numel() else _P.mul(total, float("nan"))
    nll = _nll(logp, target, weight, ignore_index, reduction)
    if label_smoothing <= 0:
        return nll
    _check_nll_shapes(input, target)
    wl = _P.mul(logp, weight.reshape(_class_shape(len(xs), class_dim, c))) if weight is not None else logp
    smooth = _R.sum(wl, class_dim)
    ignore = _P.eq(target, ignore_index)
    smooth = _P.neg(_P.where(ignore, 0.0, smooth))
    if reduction == "mean":
        if weight is not None:
            keep = _I.masked_select(target, _P.logical_not(ignore))
            ret = _P.div(_R.sum(smooth), _R.sum(_I.index_select(weight, 0, keep)))
        else:
            ret = _P.div(_R.sum(smooth), _R.sum(_P.logical_not(ignore)))
    elif reduction == "sum":
        ret = _R.sum(smooth)
    else:
        ret = smooth
    return _P.add(_P.mul(nll, 1 - label_smoothing), _P.mul(ret, label_smoothing / c))


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input1, input2, target = _ac_cast("margin_ranking_loss", input1, input2, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(_P.clamp(_P.add(_P.mul(_P.neg(target), _P.sub(input1, input2)), margin), min=0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("hinge_embedding_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    neg = _P.clamp(_P.rsub(input, margin), min=0.0)
    loss = _P.add(_P.where(_P.eq(target, 1), input, 0.0), _P.where(_P.eq(target, -1), neg, 0.0))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input1, input2, target = _ac_cast("cosine_embedding_loss", input1, input2, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    cos = cosine_similarity(input1, input2, dim=-1, eps=1e-12)
    loss = _P.where(_P.eq(target, 1), _P.rsub(cos, 1.0), _P.clamp(_P.sub(cos, margin), min=0.0))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    v = _P.clamp(var, min=eps)
    d = _P.sub(input, target)
    loss = _P.mul(_P.add(_P.log(v), _P.div(_P.mul(d, d), v)), 0.5)
    if full:
        loss = _P.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


# linear, bilinear, dropout (1d/2d/3d) and embedding live with their modules (nn/_functional_basic.py)
from ._functional_basic import (bilinear, dropout, dropout1d, dropout2d, dropout3d, embedding,  # noqa: E402,F401
                                linear)
from ._functional_activation import glu, hardshrink, prelu, rrelu, rrelu_, softshrink  # noqa: E402,F401
from ._functional_vision import (channel_shuffle, native_channel_shuffle, pixel_shuffle,  # noqa: E402,F401
                                 pixel_unshuffle)
from ._functional_margin import (multi_margin_loss, multilabel_margin_loss,  # noqa: E402,F401
                                 multilabel_soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss)
from ._functional_fold import embedding_bag, fold, gumbel_softmax, lp_pool1d, lp_pool2d, unfold  # noqa: E402,F401
from ._functional_conv3d import conv3d  # noqa: E402,F401
