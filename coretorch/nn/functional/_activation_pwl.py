"""Backward nodes of the piecewise-linear activations (threshold, leaky_relu and rrelu in evaluation, hardtanh and
relu6, hardshrink, softshrink; relu's own node links the same way): the gradient is the incoming one masked or
scaled by where the input lies.

PyTorch's backward ops of these (``threshold_backward``, ``leaky_relu_backward``, ...) are differentiable with
respect to the input with a zero derivative: a gradient taken with ``create_graph=True`` requires grad through the
input (its grad_fn is ``ThresholdBackwardBackward0``, ...) and a second gradient with respect to the input is zeros.
A masked gradient built from the mask alone is a constant of the input: the second gradient of a ReLU network with
respect to its input (a Hessian-vector product) raised "appears to not have been used in the graph".
"""
from __future__ import annotations

from ...autograd._zero import keep_graph
from ...autograd.grad_mode import state as _gs
from ...autograd.graph import Node
from ...ops import pointwise as _P, reduction as _R
from ...tensor import Tensor
from ... import dtypes as _dt

_HALVES = (_dt.float16, _dt.bfloat16)


def le_threshold(x: Tensor, threshold) -> Tensor:
    """``x <= threshold`` as PyTorch's threshold kernels compare: in float for half types (its opmath), so a
    bfloat16 0.10009765625 is above a threshold of 0.1 (rounding 0.1 to bfloat16 first made it equal)."""
    return _P.le(x.float() if x.dtype in _HALVES else x, threshold)


def linked(grad: Tensor, x: Tensor, node: Node) -> Tensor:
    """``grad`` (the gradient ``node`` computed from its saved ``x``), in a create_graph backward recorded also
    against ``x`` with a zero derivative, by PyTorch's ``<Op>BackwardBackward0``; unchanged in a plain backward."""
    if not _gs.enabled:
        return grad
    return keep_graph(grad, (x,), type(node).__name__[:-1] + "Backward0")


class ThresholdBackward0(Node):
    """0 where ``x <= threshold``, the incoming gradient elsewhere (NaN included), as PyTorch's threshold_backward."""
    __slots__ = ("threshold",)

    def backward(self, g):
        (x,) = self.saved()
        return (linked(_P.where(le_threshold(x, self.threshold), 0.0, g), x, self),)


class LeakyReluBackward0(Node):
    """The incoming gradient where ``x > 0``, times the slope elsewhere, as PyTorch's leaky_relu_backward."""
    __slots__ = ("slope",)

    def backward(self, g):
        (x,) = self.saved()
        return (linked(_P.where(_P.gt(x, 0), g, _P.mul(g, self.slope)), x, self),)


class _ShrinkBackward(Node):
    """The incoming gradient where ``|x| > lambd``, 0 elsewhere (NaN included)."""
    __slots__ = ("lambd",)

    def backward(self, g):
        (x,) = self.saved()
        return (linked(_P.where(_P.gt(_P.abs(x), self.lambd), g, 0.0), x, self),)


class HardshrinkBackward0(_ShrinkBackward):
    __slots__ = ()


class SoftshrinkBackward0(_ShrinkBackward):
    __slots__ = ()


class HardtanhBackward0(Node):
    """1 strictly inside (min_val, max_val), 0 elsewhere (the bounds and NaN too), as PyTorch's hardtanh_backward."""
    __slots__ = ("lo", "hi")

    def backward(self, g):
        (x,) = self.saved()
        return (linked(_P.where(_P.logical_and(_P.gt(x, self.lo), _P.lt(x, self.hi)), g, 0.0), x, self),)


class PreluKernelBackward0(Node):
    """PyTorch's _prelu_kernel_backward: the incoming gradient where ``x > 0``, times the weight elsewhere, for the
    input (linked to it); ``x * g`` where ``x <= 0``, summed to the weight's shape, for the weight.  ``wshape``: the
    weight's own shape (the saved weight is the one broadcast against ``x``)."""
    __slots__ = ("wshape",)

    def backward(self, g):
        x, w = self.saved()
        pos = _P.gt(x, 0)
        gx = linked(_P.where(pos, g, _P.mul(g, w)), x, self) if self.next_functions[0][0] is not None else None
        gw = None
        if self.next_functions[1][0] is not None:
            gw = _P.where(pos, 0.0, _P.mul(x, g))
            dims = [d for d in range(gw.ndim) if d >= w.ndim or w.shape[d] == 1]
            if dims:
                gw = _R.sum(gw, dims)
            gw = gw.reshape(self.wshape)
        return gx, gw


class ThresholdBackward1(ThresholdBackward0):
    """The in-place threshold's node (PyTorch's name for ``threshold_``)."""
    __slots__ = ()


class LeakyReluBackward1(LeakyReluBackward0):
    """The in-place leaky_relu's node (PyTorch's name for ``leaky_relu_``).  PyTorch's saves the result, whose sign
    does not tell the input's for a negative slope: its backward refuses one (so does this, in PyTorch's words)."""
    __slots__ = ()

    def backward(self, g):
        if self.slope < 0:
            raise RuntimeError(
                "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
                "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
                "version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting "
                "in-place leakRelu backward calculation with negative slope")
        return LeakyReluBackward0.backward(self, g)
