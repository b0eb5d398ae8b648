"""``torch._dynamo.exc``: the compiler's exception classes (defined in ``coretorch._compile.exc``)."""
from __future__ import annotations

from .._compile.exc import (FailOnRecompileLimitHit, InvalidBackend, RecompileError, TorchDynamoException,
                            Unsupported)

__all__ = ["FailOnRecompileLimitHit", "InvalidBackend", "RecompileError", "TorchDynamoException", "Unsupported"]
