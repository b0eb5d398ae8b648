"""DataParallel: PyTorch's single-process multi-GPU wrapper.  coretorch has no CUDA devices, so it behaves as
PyTorch does on a machine without GPUs: it holds the module (state dict keys ``module.*``) and forwards to it."""
from __future__ import annotations

from typing import Any

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps ``module`` (``self.module``); ``forward`` calls it (no GPUs to split the batch over:
    ``device_ids`` is empty)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None) -> Any:
    """The functional form of :class:`DataParallel`: ``module(*inputs, **module_kwargs)`` here."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
