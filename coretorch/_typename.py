"""torch.typename, shared by the error messages of Module and Optimizer and exported as coretorch.typename."""
from __future__ import annotations

from .tensor import Tensor


def typename(obj) -> str:
    """PyTorch's type name: ``'torch.FloatTensor'`` for a float32 tensor (the legacy name user code compares
    against), ``module.qualname`` for anything else (builtins without the module)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"
