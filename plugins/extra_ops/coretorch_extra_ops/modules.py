"""nn modules of coretorch-extra-ops (registered as ``coretorch.nn.Mish`` / ``coretorch.nn.RMSNorm``)."""
from __future__ import annotations

import coretorch
from coretorch import nn
from coretorch.nn import functional as F

from .functions import ext_mish

__all__ = ["Mish", "RMSNorm"]


class Mish(nn.Module):
    """Mish activation, x * tanh(softplus(x)) (torch.nn.Mish)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        out = ext_mish(input)
        return input.copy_(out) if self.inplace else out

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class RMSNorm(nn.Module):
    """Root-mean-square layer normalisation over the trailing ``normalized_shape`` dims (torch.nn.RMSNorm)."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(coretorch.ones(shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            with coretorch.no_grad():
                self.weight.fill_(1.0)

    def forward(self, input):
        # PyTorch's module is F.rms_norm (its node: MulBackward0); ext_rms_norm is this plugin's one-Function version
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
