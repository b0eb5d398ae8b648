"""nn.functional activations with a parameter or a random slope: prelu, glu, hardshrink, softshrink, rrelu."""
from __future__ import annotations

from ... import dtypes as _dt
from ...amp.autocast_mode import cast_inputs as _ac_cast
from ...amp.autocast_mode import state as _ac
from ...autograd.grad_mode import state as _gs
from ...ops import pointwise as _P, shape as _S
from ...ops.creation import empty
from ...tensor import Tensor
from ...autograd._node_names import named_node
from ._activation import _floating_only, _inplace_result, _pointwise_node, _saves_result
from ._activation_pwl import HardshrinkBackward0, LeakyReluBackward0, PreluKernelBackward0, SoftshrinkBackward0
from ._common import _needs_graph, _no_grad, _record

__all__ = ["prelu", "glu", "hardshrink", "softshrink", "rrelu", "rrelu_"]

_C_TYPE = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}


def _ctype(dt) -> str:
    """The C++ scalar type name PyTorch's messages use (Float, Double, Long, ...)."""
    return _C_TYPE.get(dt.name) or dt._tname[:-6]


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """max(0, x) + weight * min(0, x) with one weight or one per channel (dim 1; a 1-D input has one channel)."""
    if _ac.on:  # autocast: prelu is on PyTorch's lower-precision list
        input, weight = _ac_cast("prelu", input, weight)
    if input.dtype is not weight.dtype:  # (it promoted: a float32 weight with a float64 input gave float64)
        raise RuntimeError(f"prelu: Type promoting not supported. Got {_ctype(input.dtype)} and "
                           f"{_ctype(weight.dtype)}")
    n = weight.numel()
    if n != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim >= 2 else 1  # (PyTorch: a 1-D input has one channel)
        if n != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {n}"
                               f" and channel size = {channels}.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    _floating_only("prelu", input)
    w = weight
    if n != 1:
        if input.ndim >= 2:
            w = weight.reshape((1, n) + (1,) * (input.ndim - 2))
    elif weight.ndim:
        w = weight.reshape(())
    if not _needs_graph(input, weight):
        return _P.where(_P.gt(input, 0), input, _P.mul(w, input))
    with _no_grad():  # one node (PyTorch's PreluKernelBackward0), its input gradient linked to the input
        out = _P.where(_P.gt(input, 0), input, _P.mul(w, input))
    node = PreluKernelBackward0()
    node.wshape = tuple(weight.shape)
    node.save(input, w)
    return _record(node, out._data, out.dtype, out._be, input, weight)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), with a and b the halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    _floating_only("glu", input)
    d = dim % input.ndim
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    if input.dtype in (_dt.float16, _dt.bfloat16):  # PyTorch's opmath: float32, rounded once (in half, sigmoid(-20)
        return glu(input.float(), dim).to(input.dtype)  # underflowed: glu([60000, -20]) was 0, not 1.2e-4)
    a, b = _S.chunk(input, 2, d)
    return _P.mul(a, _P.sigmoid(b))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    _floating_only("hardshrink", input)
    # NaN stays NaN (with no gradient), as PyTorch's kernels
    return _pointwise_node(HardshrinkBackward0, input, lambda v: _P.where(
        _P.gt(_P.abs(v), lambd), v, _P.where(_P.isnan(v), v, 0.0)), lambd=lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, else 0."""
    if lambd < 0:
        hi = _dt.finfo(input.dtype).max if input.dtype.is_floating_point else float("inf")
        tname = _C_TYPE.get(input.dtype.name, input.dtype.name)
        raise RuntimeError(f"lambda must be in range [0, {hi:g}] for input dtype {tname}, but found {lambd:g}")
    _floating_only("softshrink", input)
    return _pointwise_node(SoftshrinkBackward0, input, lambda v: _P.where(
        _P.gt(_P.abs(v), lambd), _P.sub(v, _P.mul(_P.sign(v), lambd)), _P.where(_P.isnan(v), v, 0.0)), lambd=lambd)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a slope drawn from U(lower, upper) per negative element in training, (lower+upper)/2 in
    evaluation (PyTorch's randomized leaky ReLU)."""
    return rrelu_with_generator(input, lower, upper, training, inplace, None)


def rrelu_with_generator(input: Tensor, lower: float, upper: float, training: bool, inplace: bool,
                         generator) -> Tensor:
    """rrelu drawing its slopes from ``generator`` (``torch.rrelu``'s keyword; None: the default generator)."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    slope: Tensor | float
    if training:
        slope = empty(input.shape, dtype=input.dtype, device=input.device).uniform_(lower, upper,
                                                                                    generator=generator)
    else:
        slope = (lower + upper) / 2
    _floating_only("leaky_relu", input)
    x = input.clone() if inplace and input.requires_grad and _gs.enabled else input
    if isinstance(slope, float):  # evaluation: leaky_relu's node (its gradient linked to x, as PyTorch's)
        out = _pointwise_node(LeakyReluBackward0, x, lambda v: _P.where(_P.gt(v, 0), v, _P.mul(v, slope)),
                              slope=slope)
    else:
        out = _P.where(_P.gt(x, 0), x, _P.mul(x, slope))  # (the slope's gradient at 0, as PyTorch)
    # in training the gradient is linked to x under create_graph (a zero derivative), as PyTorch's
    # rrelu_with_noise_backward, which takes the input (evaluation: leaky_relu's node links it)
    if not inplace:  # row-major, as PyTorch's rrelu_with_noise (a permuted input's layout: a .view raised)
        return named_node(out if out.is_contiguous() else out.contiguous(), "RreluWithNoiseBackward0", training)
    # (PyTorch's node of rrelu_, which saves the result: an in-place change of it raises at the backward)
    return _saves_result(_inplace_result(input, named_node(out, "RreluWithNoiseBackward1", training)))


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place randomized leaky ReLU: negative elements are scaled by a slope drawn uniformly from ``[lower, upper]``
    in training, by ``(lower + upper) / 2`` otherwise."""
    return rrelu(input, lower, upper, training, True)
