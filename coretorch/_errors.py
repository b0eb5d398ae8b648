"""Exception classes PyTorch exposes at the top level (``torch.OutOfMemoryError``)."""
from __future__ import annotations

__all__ = ["OutOfMemoryError"]


class OutOfMemoryError(RuntimeError):
    """A device allocation that would exceed the device's memory (PyTorch's ``torch.OutOfMemoryError``, also
    ``torch.cuda.OutOfMemoryError``): a RuntimeError, so ``except RuntimeError`` still catches it."""
