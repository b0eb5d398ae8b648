"""Deprecated layer names PyTorch keeps for old programs: ``NLLLoss2d`` (NLLLoss) and ``Container`` (Module)."""
from __future__ import annotations

import warnings

from .loss import NLLLoss
from .module import Module

__all__ = ["NLLLoss2d", "Container"]


class NLLLoss2d(NLLLoss):
    """Deprecated: :class:`NLLLoss` (which takes inputs of any rank)."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning,
                      stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class Container(Module):
    """Deprecated: a :class:`Module` holding the keyword arguments as submodules."""

    def __init__(self, **kwargs) -> None:
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
                      "Subclass that instead.", FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)
