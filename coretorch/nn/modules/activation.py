"""Activation modules (PyTorch's torch/nn/modules/activation.py; MultiheadAttention lives in attention.py)."""
from __future__ import annotations

import warnings

from ...ops.creation import empty
from ...ops.pointwise import relu as _relu
from .. import functional as F
from .. import init as _init
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
           "Softmin", "Softplus", "Hardtanh", "LogSigmoid", "Hardsigmoid", "Hardswish", "Softsign", "Tanhshrink",
           "SELU", "CELU", "Threshold", "PReLU", "GLU", "Softmax2d", "Hardshrink", "Softshrink", "RReLU"]


def _inplace_str(inplace: bool, first: bool = False) -> str:
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class Threshold(Module):
    """Applies ``x if x > threshold else value`` element-wise.

    Args:
        threshold (float): the threshold.
        value (float): the replacement.
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class ReLU(Module):
    """Applies ``max(x, 0)`` element-wise.

    Args:
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu_(input) if self.inplace else _relu(input)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, True)


class Hardtanh(Module):
    """Clamps every element into ``[min_val, max_val]``.

    Args:
        min_val (float): default -1.
        max_val (float): default 1.
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:  # (PyTorch's deprecated spellings)
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """Applies ``min(max(x, 0), 6)`` element-wise.

    Args:
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, True)


class LeakyReLU(Module):
    """Applies ``x if x >= 0 else negative_slope * x`` element-wise.

    Args:
        negative_slope (float): default 0.01.
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class _AlphaInplace(Module):
    """ELU's and CELU's arguments and repr (a private base: in PyTorch neither class is a subclass of the other,
    so ``isinstance(m, nn.ELU)`` is False for a CELU)."""
    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class ELU(_AlphaInplace):
    """Applies ``x if x > 0 else alpha * (exp(x) - 1)`` element-wise.

    Args:
        alpha (float): default 1.0.
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)


class CELU(_AlphaInplace):
    """Applies ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` element-wise.

    Args:
        alpha (float): default 1.0.
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class SELU(Module):
    """Applies ``scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))`` with PyTorch's self-normalising constants.

    Args:
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, True)


class GELU(Module):
    """Applies the Gaussian error linear unit ``x * Phi(x)`` (``Phi`` the standard normal CDF).

    Args:
        approximate (str): ``"none"`` (exact, erf) or ``"tanh"`` (the tanh approximation).

    Shape:
        Input: any shape. Output: the same shape.
    """
    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class _Inplace(Module):
    """SiLU's, Mish's, Hardsigmoid's and Hardswish's argument (a private base: in PyTorch none of them is a
    subclass of another)."""
    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, True)


class SiLU(_Inplace):
    """Applies ``x * sigmoid(x)`` (swish) element-wise.

    Args:
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """Applies ``x * tanh(softplus(x))`` element-wise.

    Args:
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class Hardsigmoid(_Inplace):
    """Applies ``relu6(x + 3) / 6`` element-wise.

    Args:
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self) -> str:  # (PyTorch prints no inplace for these two)
        return ""


class Hardswish(_Inplace):
    """Applies ``x * relu6(x + 3) / 6`` element-wise.

    Args:
        inplace (bool): modify the input in place (default False).

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.hardswish(input, self.inplace)

    def extra_repr(self) -> str:  # (PyTorch prints no inplace for these two)
        return ""


class Sigmoid(Module):
    """Applies the logistic sigmoid ``1 / (1 + exp(-x))`` element-wise.

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    """Applies the hyperbolic tangent element-wise.

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.tanh(input)


class LogSigmoid(Module):
    """Applies ``log(sigmoid(x))`` element-wise, computed stably.

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """Applies ``x / (1 + |x|)`` element-wise.

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """Applies ``x - tanh(x)`` element-wise.

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.tanhshrink(input)


class Softplus(Module):
    """Applies ``log(1 + exp(beta * x)) / beta`` element-wise (``x`` where ``beta * x > threshold``).

    Args:
        beta (float): default 1.
        threshold (float): the linear switch point (default 20).

    Shape:
        Input: any shape. Output: the same shape.
    """
    __constants__ = ["beta", "threshold"]

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _DimModule(Module):
    """Softmax's, Softmin's and LogSoftmax's ``dim`` (a private base: in PyTorch none of them is a subclass of
    another, so ``isinstance(m, nn.Softmax)`` is False for a LogSoftmax)."""
    __constants__ = ["dim"]

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_DimModule):
    """Applies ``exp(x_i) / sum_j exp(x_j)`` along ``dim``: each slice becomes a probability distribution.

    Args:
        dim (int): the dimension to normalise (give it: the implicit choice is deprecated).

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)


class Softmin(_DimModule):
    """Applies ``softmax(-x)`` along ``dim``.

    Args:
        dim (int): the dimension to normalise.
    """
    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)


class LogSoftmax(_DimModule):
    """Applies ``log(softmax(x))`` along ``dim``, computed stably (pair it with :class:`NLLLoss`).

    Args:
        dim (int): the dimension to normalise.
    """
    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)


class PReLU(Module):
    """max(0, x) + a * min(0, x) with a learned slope ``a`` (one, or one per channel)."""
    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Reset the slope(s) to the ``init`` value."""
        _init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """The gated linear unit: splits the input in halves ``a, b`` along ``dim`` and returns ``a * sigmoid(b)``.

    Args:
        dim (int): the dimension to split (default -1); its size must be even.

    Shape:
        Input: ``(*, 2n, *)``. Output: ``(*, n, *)``.
    """
    __constants__ = ["dim"]

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of a (C, H, W) or (N, C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class _Lambd(Module):
    """Hardshrink's and Softshrink's ``lambd`` (a private base: in PyTorch neither is a subclass of the other)."""
    __constants__ = ["lambd"]

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Lambd):
    """Applies ``x if |x| > lambd else 0`` element-wise.

    Args:
        lambd (float): default 0.5.

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Softshrink(_Lambd):
    """Applies ``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between.

    Args:
        lambd (float): default 0.5.

    Shape:
        Input: any shape. Output: the same shape.
    """
    def forward(self, input):
        return F.softshrink(input, self.lambd)


class RReLU(Module):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) in training, their mean in evaluation."""
    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


from .attention import MultiheadAttention  # noqa: E402,F401  (PyTorch's torch.nn.modules.activation has it)
