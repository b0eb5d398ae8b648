"""coretorch.nn.grad: the gradients of the convolutions with respect to their input or weight.

Each is the convolution's own backward (``autograd.grad`` through ``F.conv*``): a convolution is linear in its
input and in its weight, so the gradient does not depend on the other operand's values, only on its size.
"""
from __future__ import annotations

from .. import autograd as _autograd
from ..autograd.grad_mode import state as _gs
from ..ops import creation as _C
from ..tensor import Tensor
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _grad_wrt(conv, dummy_shape, other: Tensor, grad_output: Tensor, wrt_input: bool, stride, padding, dilation,
              groups) -> Tensor:
    dummy = _C.zeros(tuple(dummy_shape), dtype=grad_output.dtype, device=grad_output.device, requires_grad=True)
    graph = _gs.enabled and (other.requires_grad or grad_output.requires_grad)  # differentiable again if needed
    with _autograd.enable_grad():
        out = conv(dummy, other, None, stride, padding, dilation, groups) if wrt_input else \
            conv(other, dummy, None, stride, padding, dilation, groups)
        (g,) = _autograd.grad(out, dummy, grad_output, create_graph=graph)
    return g


def conv1d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """The gradient of ``conv1d`` with respect to an input of size ``input_size``."""
    return _grad_wrt(F.conv1d, input_size, weight, grad_output, True, stride, padding, dilation, groups)


def conv1d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """The gradient of ``conv1d`` with respect to a weight of size ``weight_size``."""
    return _grad_wrt(F.conv1d, weight_size, input, grad_output, False, stride, padding, dilation, groups)


def conv2d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """The gradient of ``conv2d`` with respect to an input of size ``input_size``."""
    return _grad_wrt(F.conv2d, input_size, weight, grad_output, True, stride, padding, dilation, groups)


def conv2d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """The gradient of ``conv2d`` with respect to a weight of size ``weight_size``."""
    return _grad_wrt(F.conv2d, weight_size, input, grad_output, False, stride, padding, dilation, groups)


def conv3d_input(input_size, weight: Tensor, grad_output: Tensor, stride=1, padding=0, dilation=1,
                 groups: int = 1) -> Tensor:
    """The gradient of ``conv3d`` with respect to an input of size ``input_size``."""
    return _grad_wrt(F.conv3d, input_size, weight, grad_output, True, stride, padding, dilation, groups)


def conv3d_weight(input: Tensor, weight_size, grad_output: Tensor, stride=1, padding=0, dilation=1,
                  groups: int = 1) -> Tensor:
    """The gradient of ``conv3d`` with respect to a weight of size ``weight_size``."""
    return _grad_wrt(F.conv3d, weight_size, input, grad_output, False, stride, padding, dilation, groups)
