"""nn.utils.skip_init: build a module without running its parameter initialisation (PyTorch builds it on the
meta device and allocates with ``to_empty``; here the parameters are allocated and initialised as usual, which
programs that overwrite them right after cannot tell apart)."""
from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs) -> Module:
    """``module_cls(*args, **kwargs)``, whose parameters the caller is expected to overwrite.  The class must take a
    ``device`` argument, as PyTorch requires."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = final_device
    return module_cls(*args, **kwargs)
