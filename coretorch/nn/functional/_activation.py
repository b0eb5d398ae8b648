"""nn.functional activations, erf and the softmax family."""
from __future__ import annotations

import math
import warnings

from ... import dtypes as _dt
from ...amp.autocast_mode import below as _ac_below
from ...amp.autocast_mode import cast_inputs as _ac_cast
from ...amp.autocast_mode import policy as _ac_policy
from ...amp.autocast_mode import state as _ac
from ...autograd._node_names import named_node, saves_also
from ...autograd.grad_mode import state as _gs
from ...autograd.graph import Node
from ...ops import inplace as _IP, pointwise as _P
from ...ops import reduction as _R
from ...ops._util import norm_dim as _norm_dim
from ...tensor import Tensor, _make
from ._activation_pwl import (HardtanhBackward0, LeakyReluBackward0, LeakyReluBackward1, ThresholdBackward0,
                              ThresholdBackward1, le_threshold)
from ._common import _check_tensor, _needs_graph, _no_grad, _record

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
    """``out`` written into ``input``; recorded, input becomes the output of out's node (PyTorch's grad_fn of
    F.relu(x, inplace=True) is ReluBackward0, not a copy's; one that saved its output version-checks input)."""
    if out.dtype is input.dtype and out._data.shape == input._data.shape and _IP.check_inplace(input, out, "copy_"):
        _IP.rebase(input, out)
        return input
    return input.copy_(out)


def _saves_result(r: Tensor) -> Tensor:
    """``r``, an in-place activation's result whose PyTorch node saved it (leaky_relu_, elu_, celu_, selu_, rrelu_:
    the formula reads the result): its node checks r's version too, so that an in-place change of r before the
    backward (``h += residual``) raises, naming the node, as PyTorch's (ours computes from a copy of the input)."""
    return saves_also(r, output=True) if r._rg and _gs.enabled else r


def _src(input: Tensor, inplace: bool) -> Tensor:
    """The tensor an in-place activation computes from: a clone when the graph saves it (the in-place write
    into ``input`` must not invalidate what the backward needs)."""
    return input.clone() if inplace and input.requires_grad and _gs.enabled else input


def _floating_only(op: str, input) -> None:
    """PyTorch's activations with a transcendental or fractional formula have no integer kernels."""
    if isinstance(input, Tensor) and not input.dtype.is_floating_point and not input.dtype.is_complex:
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype._tname[:-6]}'")


def threshold(input, threshold, value, inplace=False):
    """Applies ``x if x > threshold else value`` element-wise.

    Args:
        input (Tensor): any shape.
        threshold (float): the threshold.
        value (float): the replacement.
        inplace (bool): modify ``input`` in place (default False).
    """
    if isinstance(input, Tensor) and input.dtype is _dt.bool_:
        raise NotImplementedError("\"threshold\" not implemented for 'Bool'")
    x = _src(input, inplace)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:  # PyTorch: in the input's integer dtype,
        thr, val = math.trunc(threshold), math.trunc(value)  # both truncated (it gave float32)
        out = _P.where(_P.le(x, thr), val, x).to(input.dtype)
    else:  # (a NaN input stays NaN, its gradient 1: PyTorch's test)
        out = _pointwise_node(ThresholdBackward1 if inplace else ThresholdBackward0, x,
                              lambda v: _P.where(le_threshold(v, threshold), value, v), threshold=threshold)
    return _inplace_result(input, out) if inplace else out


def relu_(input):
    """In-place :func:`relu`: writes ``max(x, 0)`` into ``input`` and returns it."""
    return _inplace_result(input, _P.relu(input))


def relu(input, inplace=False) -> Tensor:  # noqa: F811  (PyTorch's signature: with inplace)
    """Applies ``max(x, 0)`` element-wise.

    Args:
        input (Tensor): any shape.
        inplace (bool): modify ``input`` in place (default False).
    """
    return relu_(input) if inplace else _P.relu(input)


def relu6(input, inplace=False):
    """Applies ``min(max(x, 0), 6)`` element-wise.

    Args:
        input (Tensor): any shape.
        inplace (bool): modify ``input`` in place (default False).
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Applies ``x if x >= 0 else negative_slope * x`` element-wise.

    Args:
        input (Tensor): any shape.
        negative_slope (float): default 0.01.
        inplace (bool): modify ``input`` in place (default False).
    """
    _floating_only("leaky_relu", input)
    x = _src(input, inplace)
    out = _pointwise_node(LeakyReluBackward1 if inplace else LeakyReluBackward0, x,
                          lambda v: _P.where(_P.gt(v, 0), v, _P.mul(v, negative_slope)), slope=negative_slope)
    return _saves_result(_inplace_result(input, out)) if inplace else out


class EluBackward0(Node):
    """PyTorch's elu_backward (elu, selu and celu: ``scale * (x if x > 0 else alpha * expm1(x * input_scale))``):
    ``g * scale`` where ``x > 0``, ``g * alpha * scale * input_scale * exp(x * input_scale)`` elsewhere, in tensor
    ops.  The exponential is of ``x`` where ``x < 0`` (0 elsewhere): the gradient at 0 is the negative side's, its
    own derivative there 0 (PyTorch's elu_double_backward masks ``x < 0``); a NaN input gives NaN.  (Differentiated
    through ``expm1``, the gradient was ``expm1(x) + 1``: at x = -30 off by 1.7e-4 relative in float64.)"""
    __slots__ = ("negcoef", "poscoef", "iscale")

    def backward(self, g):
        (x,) = self.saved()
        z = _P.where(_P.ge(x, 0), 0.0, x)
        if self.iscale != 1:
            z = _P.mul(z, self.iscale)
        neg = _P.mul(g, _P.mul(_P.exp(z), self.negcoef * self.iscale))
        return (_P.where(_P.gt(x, 0), _P.mul(g, self.poscoef) if self.poscoef != 1 else g, neg),)


class EluBackward1(EluBackward0):
    __slots__ = ()


class CeluBackward0(EluBackward0):
    __slots__ = ()


class CeluBackward1(EluBackward0):
    __slots__ = ()


def _elu(input, alpha: float, scale: float, iscale: float, inplace: bool, name: str) -> Tensor:
    """elu/selu/celu: ``scale * (x if x > 0 else alpha * expm1(x * iscale))`` as one node."""
    _floating_only(name, input)
    x = _src(input, inplace)

    def forward(v):
        # expm1 of x where x <= 0 (0 elsewhere): the unused branch never overflows
        z = _P.where(_P.gt(v, 0), 0.0, v)
        neg = _P.mul(_P.expm1(_P.div(z, alpha) if name == "celu" else z), alpha)
        out = _P.where(_P.gt(v, 0), v, neg)
        return _P.mul(out, scale) if scale != 1 else out

    cls = (CeluBackward1 if inplace else CeluBackward0) if name == "celu" else \
        (EluBackward1 if inplace else EluBackward0)
    out = _pointwise_node(cls, x, forward, negcoef=alpha * scale, poscoef=scale, iscale=iscale)
    return _saves_result(_inplace_result(input, out)) if inplace else out


@_ac_below  # autocast: on no list, its inner ops as they are
def elu(input, alpha=1.0, inplace=False):
    """Applies ``x if x > 0 else alpha * (exp(x) - 1)`` element-wise.

    Args:
        input (Tensor): any shape.
        alpha (float): default 1.
        inplace (bool): modify ``input`` in place (default False).
    """
    return _elu(input, alpha, 1.0, 1.0, inplace, "elu")


@_ac_below  # autocast: on no list, its inner ops as they are
def selu(input, inplace=False):
    """Applies the self-normalising ``scale * elu(x, alpha)`` with PyTorch's constants element-wise.

    Args:
        input (Tensor): any shape.
        inplace (bool): modify ``input`` in place (default False).
    """
    return _elu(input, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0, inplace, "selu")


@_ac_below  # autocast: on no list, its inner ops as they are
def celu(input, alpha=1.0, inplace=False):
    """Applies ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` element-wise.

    Args:
        input (Tensor): any shape.
        alpha (float): default 1.
        inplace (bool): modify ``input`` in place (default False).
    """
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu(input, alpha, 1.0, 1.0 / alpha, inplace, "celu")


class GeluBackward0(Node):
    """GELU's backward, g * (Phi(x) + x phi(x)), in tensor ops (so double backward works)."""
    __slots__ = ("cdf",)

    def backward(self, g):
        (x,) = self.saved()
        if not _gs.enabled and g.dtype is x.dtype and g._be.has("gelu_backward") and x.dtype in _GELU_FUSED:
            # plain backward: the backend's one-pass kernel (issue 14 speed)
            return (_make(g._be.gelu_backward(g._data, x._data, getattr(self, "cdf", None)), x.dtype, x._be),)
        cdf = _P.mul(_P.add(erf(_P.mul(x, _SQRT1_2)), 1.0), 0.5)
        pdf = _P.mul(_P.exp(_P.mul(_P.mul(x, x), -0.5)), _INV_SQRT_2PI)
        return (_P.mul(g, _P.add(cdf, _P.mul(x, pdf))),)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_GELU_FUSED = (_dt.float32, _dt.float64)
_HALF = (_dt.float16, _dt.bfloat16)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def gelu(input, approximate="none") -> Tensor:
    """Applies the Gaussian error linear unit ``x * Phi(x)`` element-wise.

    Args:
        input (Tensor): any shape.
        approximate (str): ``"none"`` (exact) or ``"tanh"``.
    """
    _floating_only("gelu", input)
    if approximate == "none":
        table = input._be
        if table.has("gelu") and input.dtype.is_floating_point:  # the fused kernel: one pass instead of five
            if _needs_graph(input):
                node = GeluBackward0()
                if input.dtype is _dt.float32 and table.has("gelu_cdf"):  # Phi(x) kept: a cheap backward
                    out, node.cdf = table.gelu_cdf(input._data)
                else:
                    out, node.cdf = table.gelu(input._data), None
                node.save(input)
                return _record(node, out, input.dtype, table, input)
            return _make(table.gelu(input._data), input.dtype, table)
        return _P.mul(_P.mul(input, 0.5), _P.add(erf(_P.mul(input, _SQRT1_2)), 1.0))
    if approximate == "tanh":
        if input.dtype in _HALF:  # in float32, rounded once (PyTorch's op math; each half step rounded: 1 ulp off)
            return named_node(gelu(input.float(), approximate).to(input.dtype), "GeluBackward0")
        inner = _P.mul(_P.add(input, _P.mul(_P.mul(_P.mul(input, input), input), 0.044715)), math.sqrt(2.0 / math.pi))
        return _P.mul(_P.mul(input, 0.5), _P.add(_P.tanh(inner), 1.0))
    raise RuntimeError(f"approximate argument must be either none or tanh, but got {approximate!r}")


def silu(input, inplace=False) -> Tensor:
    """Applies ``x * sigmoid(x)`` (swish) element-wise.

    Args:
        input (Tensor): any shape.
        inplace (bool): modify ``input`` in place (default False).
    """
    _floating_only("silu", input)
    x = _src(input, inplace)
    # float16/bfloat16 in float32, rounded once (PyTorch's opmath: in half, sigmoid(-20) underflowed to 0)
    out = silu(x.float()).to(x.dtype) if x.dtype in _HALF else _P.mul(x, _P.sigmoid(x))
    return _inplace_result(input, named_node(out, "SiluBackward0")) if inplace else out  # (PyTorch's silu_ node)


@_ac_below  # autocast: on no list, its inner ops as they are
def mish(input, inplace=False):
    """Applies ``x * tanh(softplus(x))`` element-wise.

    Args:
        input (Tensor): any shape.
        inplace (bool): modify ``input`` in place (default False).
    """
    _floating_only("mish", input)
    x = _src(input, inplace)
    out = mish(x.float()).to(x.dtype) if x.dtype in _HALF else _P.mul(x, _P.tanh(softplus(x)))  # (as silu)
    return _inplace_result(input, named_node(out, "MishBackward0")) if inplace else out  # (PyTorch's mish_ node)


@_ac_below  # autocast: on no list, its inner ops as they are
def logsigmoid(input):
    """Applies ``log(sigmoid(x))``, computed stably element-wise.

    Args:
        input (Tensor): any shape.
    """
    _floating_only("log_sigmoid_forward", input)
    # min(x, 0) - log1p(exp(-|x|)): no overflow on either side; row-major, as PyTorch's log_sigmoid_forward (a
    # channels-last or permuted input gave a result in its layout: a .view PyTorch allows raised)
    return _pointwise_node(LogSigmoidBackward0, input, lambda x: _P.sub(
        _P.where(_P.lt(x, 0), x, 0.0), _P.log1p(_P.exp(_P.neg(_P.abs(x))))).contiguous())


class LogSigmoidBackward0(Node):
    """d/dx log sigmoid(x) = sigmoid(-x) (exact for every x, NaN at NaN), in tensor ops."""
    __slots__ = ()

    def backward(self, g):
        (x,) = self.saved()
        return (_P.mul(g, _P.sigmoid(_P.neg(x))),)


class HardswishBackward0(Node):
    """0 for x <= -3, x / 3 + 1/2 for -3 < x < 3 (NaN at NaN), 1 from 3 on, as PyTorch's hardswish_backward."""
    __slots__ = ()

    def backward(self, g):
        (x,) = self.saved()
        inner = _P.where(_P.ge(x, 3.0), 1.0, _P.add(_P.div(x, 3.0), 0.5))
        return (_P.where(_P.le(x, -3.0), 0.0, _P.mul(g, inner)),)


# PyTorch's hardsigmoid_backward multiplies by 1/6 rounded to float32 in every dtype (kept for parity)
_ONE_SIXTH_F32 = 0.1666666716337204  # float(numpy.float32(1) / numpy.float32(6))


class HardsigmoidBackward0(Node):
    """1/6 strictly inside (-3, 3), 0 elsewhere (NaN included), as PyTorch's hardsigmoid_backward."""
    __slots__ = ()

    def backward(self, g):
        (x,) = self.saved()
        return (_P.where(_P.logical_and(_P.gt(x, -3.0), _P.lt(x, 3.0)), _P.mul(g, _ONE_SIXTH_F32), 0.0),)


def _pointwise_node(node_cls, input: Tensor, forward, **fields) -> Tensor:
    """``forward(input)`` as one graph node ``node_cls`` (its backward reads the saved input), the composite's
    own graph not recorded; without a graph, just ``forward(input)``.  float16 and bfloat16 are computed in float32
    and rounded once (PyTorch's op math: hardswish, selu, logsigmoid, ... of half rounded at every step were off by
    an ulp or more in a fifth of the elements)."""
    if input.dtype is _dt.float16 or input.dtype is _dt.bfloat16:
        f32 = forward

        def forward(v):
            return f32(v.float()).to(v.dtype)
    if not _needs_graph(input):
        return forward(input)
    with _no_grad():
        out = forward(input)
    node = node_cls()
    for k, v in fields.items():
        setattr(node, k, v)
    node.save(input)
    return _record(node, out._data, out.dtype, out._be, input)


@_ac_policy("softplus")
def softplus(input, beta=1.0, threshold=20.0):
    """Applies ``log(1 + exp(beta * x)) / beta`` (``x`` where ``beta * x > threshold``) element-wise.

    Args:
        input (Tensor): any shape.
        beta (float): default 1.
        threshold (float): default 20.
    """
    _floating_only("softplus", input)
    if input.dtype is _dt.float16 or input.dtype is _dt.bfloat16:
        # in float32, rounded once (PyTorch's op math): exp(12) overflows float16 but softplus(12) is 12
        return softplus(input.to(_dt.float32), beta, threshold).to(input.dtype)

    def forward(x):
        z = _P.mul(x, beta) if beta != 1 else x
        # log1p(exp(z)) where z <= threshold (0 elsewhere): the linear branch never overflows exp
        soft = _P.log1p(_P.exp(_P.where(_P.gt(z, threshold), 0.0, z)))
        if beta != 1:
            soft = _P.div(soft, beta)
        return _P.where(_P.gt(z, threshold), x, soft)

    return _pointwise_node(SoftplusBackward0, input, forward, beta=beta, threshold=threshold)


class SoftplusBackward0(Node):
    """PyTorch's softplus_backward: ``g`` where ``beta * x > threshold``, ``g * sigmoid(beta * x)`` elsewhere (NaN
    at NaN), in tensor ops.  The sigmoid is of a constant from the threshold on: its own derivative there is 0, as
    PyTorch's softplus_double_backward masks ``beta * x < threshold`` (differentiated through the composite's
    log1p(exp(z)), the second derivative at ``beta * x == threshold`` was sigmoid's)."""
    __slots__ = ("beta", "threshold")

    def backward(self, g):
        (x,) = self.saved()
        z = _P.mul(x, self.beta) if self.beta != 1 else x
        s = _P.sigmoid(_P.where(_P.ge(z, self.threshold), self.threshold, z))
        return (_P.where(_P.gt(z, self.threshold), g, _P.mul(g, s)),)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Applies ``clamp(x, min_val, max_val)`` element-wise.

    Args:
        input (Tensor): any shape.
        min_val (float): default -1.
        max_val (float): default 1.
        inplace (bool): modify ``input`` in place (default False).
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        # PyTorch clamps integers in their own dtype (the bounds truncated); bool has no kernel
        if input.dtype is _dt.bool_:
            raise RuntimeError("Bool inputs not supported for hardtanh")
        if input.dtype is _dt.uint8 and (min_val < 0 or max_val < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        min_val, max_val = math.trunc(min_val), math.trunc(max_val)
    elif isinstance(input, Tensor):  # a bound past the dtype's range: PyTorch's overflow error (half is clamped in
        _dt.fit_scalar(min_val, input.dtype)  # float32 below, where the bound would fit)
        _dt.fit_scalar(max_val, input.dtype)
    x = _src(input, inplace)
    out = _pointwise_node(HardtanhBackward0, x, lambda v: _P.clamp(v, min_val, max_val), lo=min_val, hi=max_val)
    return _inplace_result(input, out) if inplace else out


def hardsigmoid(input, inplace=False):
    """Applies ``relu6(x + 3) / 6`` element-wise.

    Args:
        input (Tensor): any shape.
        inplace (bool): modify ``input`` in place (default False).
    """
    _floating_only("hardsigmoid", input)
    x = _src(input, inplace)
    out = _pointwise_node(HardsigmoidBackward0, x, lambda v: _P.div(_P.clamp(_P.add(v, 3.0), 0.0, 6.0), 6.0))
    return _inplace_result(input, out) if inplace else out


def hardswish(input, inplace=False):
    """Applies ``x * relu6(x + 3) / 6`` element-wise.

    Args:
        input (Tensor): any shape.
        inplace (bool): modify ``input`` in place (default False).
    """
    _floating_only("hardswish", input)
    x = _src(input, inplace)
    # (x * relu6(x + 3)) / 6 in that order, as PyTorch's kernel: x * (relu6(x + 3) / 6) was an ulp off in a quarter
    # of the float32 elements
    out = _pointwise_node(HardswishBackward0, x,
                          lambda v: _P.div(_P.mul(v, _P.clamp(_P.add(v, 3.0), 0.0, 6.0)), 6.0))
    return _inplace_result(input, out) if inplace else out


def softsign(input):
    """Applies ``x / (1 + |x|)`` element-wise.

    Args:
        input (Tensor): any shape.
    """
    return _P.div(input, _P.add(_P.abs(input), 1.0))


def tanhshrink(input):
    """Applies ``x - tanh(x)`` element-wise.

    Args:
        input (Tensor): any shape.
    """
    return _P.sub(input, _P.tanh(input))


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_bw32(dim: int, g: Tensor, y: Tensor) -> Tensor:
    """softmax's backward y * (g - sum(g * y)) of half tensors in float32, rounded once to their dtype."""
    gf, yf = g.float(), y.float()
    if not _gs.enabled and gf._data.ndim and gf._be.has("softmax_backward"):
        r = _make(gf._be.softmax_backward(gf._data, yf._data, dim), gf.dtype, gf._be)
    else:
        r = _P.mul(yf, _P.sub(gf, _R.sum(_P.mul(gf, yf), dim, keepdim=True)))
    return r.to(g.dtype)


class SoftmaxBackward0(Node):
    __slots__ = ("dim", "out")

    def backward(self, g):
        (y,) = self.saved()  # the version check: an in-place change of the output makes the backward raise
        if g.dtype in _HALF and y.dtype is g.dtype:  # float32 opmath, rounded once, as PyTorch (and the opencl
            # fused kernel has no half variant: the backward raised "softmax_bwd is not implemented for float16")
            return (_softmax_bw32(self.dim, g, y),)
        if not _gs.enabled and g.dtype is y.dtype and g._data.ndim and g._be.has("softmax_backward"):
            # plain backward: the backend's fused y * (g - sum(g * y)), no op layer (issue 14 speed)
            return (_make(g._be.softmax_backward(g._data, y._data, self.dim), g.dtype, g._be),)
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
    table, x = input._be, input._data
    nd = len(x.shape)
    d = _norm_dim(dim, nd, name)
    if not input.dtype.is_floating_point:  # (dtype=torch.int32 too: numpy's casting error leaked)
        if input.numel() == 0 and dtype is None:
            return input.clone()  # PyTorch: an empty integer input comes back empty in its own dtype (no kernel runs)
        k = f"{name}_lastdim_kernel_impl" if d == nd - 1 or nd == 0 else f"{name}_kernel_impl"
        raise NotImplementedError(f"\"{k}\" not implemented for '{input.dtype._tname[:-6]}'")
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


def softmax(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    """``exp(x_i) / sum_j exp(x_j)`` along ``dim``, computed stably.
    Args:
        input (Tensor): the input.
        dim (int): the dimension to normalise (give it: the implicit choice is deprecated).
        dtype (dtype, optional): cast ``input`` to this dtype first (e.g. to compute float16 in float32).
    """
    if _ac.on:  # autocast: the op's dtype policy, inline (not @_ac_policy: _stacklevel counts the frames)
        input, = _ac_cast("softmax", input)
    return _softmax_impl("softmax", input, dim, dtype, False, _stacklevel + 1)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably.
    Args:
        input (Tensor): the input.
        dim (int): the dimension to normalise (give it: the implicit choice is deprecated).
        dtype (dtype, optional): cast ``input`` to this dtype first (e.g. to compute float16 in float32).
    """
    if _ac.on:  # autocast: the op's dtype policy, inline (not @_ac_policy: _stacklevel counts the frames)
        input, = _ac_cast("log_softmax", input)
    return _softmax_impl("log_softmax", input, dim, dtype, True, _stacklevel + 1)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input, dim)``.
    Args:
        input (Tensor): the input.
        dim (int): the dimension to normalise (give it: the implicit choice is deprecated).
        dtype (dtype, optional): cast ``input`` to this dtype first (e.g. to compute float16 in float32).
    """
    if dim is None:
        dim = _get_softmax_dim("softmin", input.ndim, _stacklevel + 1)
    return softmax(_P.neg(input), dim, dtype=dtype)
