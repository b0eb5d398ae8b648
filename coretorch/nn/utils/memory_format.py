"""nn.utils.convert_conv2d_weight_memory_format / convert_conv3d_weight_memory_format: accepted for PyTorch
programs.  coretorch's tensors have one (row-major) layout, so the weights are left as they are."""
from __future__ import annotations

from typing import TypeVar

from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

_M = TypeVar("_M", bound=Module)


def convert_conv2d_weight_memory_format(module: _M, memory_format) -> _M:
    """Returns ``module`` (the convolution weights' memory format is not a property of coretorch tensors)."""
    return module


def convert_conv3d_weight_memory_format(module: _M, memory_format) -> _M:
    """Returns ``module`` (the convolution weights' memory format is not a property of coretorch tensors)."""
    return module
