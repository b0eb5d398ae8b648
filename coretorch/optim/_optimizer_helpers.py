"""The helpers of ``torch.optim.optimizer`` that optimizers written outside PyTorch import from it (``ParamsT`` in
their signatures, ``_get_value``, ``_get_scalar_dtype``, ``_to_scalar``, ``_default_to_fused_or_foreach``,
``_stack_if_compiling``), re-exported by ``coretorch.optim.optimizer`` with PyTorch's eager meaning."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Union

from .. import dtypes as _dtypes
from ..tensor import Tensor

__all__ = ["ParamsT", "_get_value", "_stack_if_compiling", "_get_scalar_dtype", "_to_scalar",
           "_default_to_fused_or_foreach"]

ParamsT = Union[Iterable[Tensor], Iterable[dict[str, Any]], Iterable[tuple[str, Tensor]]]


def _get_value(x: Any) -> Any:
    """A tensor's Python number (``item()``), anything else as it is."""
    return x.item() if isinstance(x, Tensor) else x


def _stack_if_compiling(x: Any) -> Any:
    """The list itself (PyTorch stacks it only inside torch.compile's tracing)."""
    return x


def _get_scalar_dtype(is_fused: Any = None) -> Any:
    """The dtype of optimizer ``step`` tensors: float32, float64 when that is the default dtype (unless fused)."""
    if is_fused:
        return _dtypes.float32
    return _dtypes.float64 if _dtypes.default == _dtypes.float64 else _dtypes.float32


def _to_scalar(x: Any) -> Any:
    """A one-element tensor of some dimensions as a 0-d tensor (squeezed); anything else as it is."""
    if isinstance(x, Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _default_to_fused_or_foreach(params: list, differentiable: bool, use_fused: bool = False) -> tuple[bool, bool]:
    """``(fused, foreach)`` as PyTorch picks them: neither when ``differentiable``; fused when asked for and every
    parameter is a floating-point tensor; else foreach when every parameter is on an accelerator (PyTorch: not on
    its CPU; coretorch: not on cpu, as opencl stands for CUDA)."""
    if differentiable:
        return False, False
    fused = use_fused and all(p is None or isinstance(p, Tensor) and p.is_floating_point()
                              for p in params)
    foreach = not fused and all(p is None or isinstance(p, Tensor) and p.device.type != "cpu" for p in params)
    return fused, foreach
