"""squareplus as an autograd Function: the forward runs the device's kernel, the backward is written with tensor
ops (so it runs on every device, and double backward works)."""
from __future__ import annotations

import coretorch
from coretorch.autograd import Function
from coretorch.plugins import from_array, get_kernel, to_array

_KERNEL_DTYPES = (coretorch.float32, coretorch.float64)


class Squareplus(Function):
    @staticmethod
    def forward(ctx, x, b):
        ctx.save_for_backward(x)
        ctx.b = b
        if x.dtype in _KERNEL_DTYPES:
            try:
                kernel = get_kernel("squareplus", x)    # NotImplementedError: no kernel for x's device type
            except NotImplementedError:
                pass
            else:
                return from_array(kernel(to_array(x.contiguous()), float(b)), x)
        return (x + (x * x + b).sqrt()) / 2            # any other device or dtype: tensor ops

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1 + x / (x * x + ctx.b).sqrt()) / 2, None


def squareplus(input: coretorch.Tensor, b: float = 4.0) -> coretorch.Tensor:
    """(input + sqrt(input^2 + b)) / 2: a smooth ReLU (Barron, 2021); ``b`` > 0 sets the curvature at 0."""
    if not isinstance(input, coretorch.Tensor):
        raise TypeError(f"squareplus(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not b > 0:
        raise ValueError(f"squareplus(): b must be positive, got {b}")
    if not input.dtype.is_floating_point:
        input = input.to(coretorch.get_default_dtype())
    return Squareplus.apply(input, b)
