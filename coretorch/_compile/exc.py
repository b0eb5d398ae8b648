"""The compiler's exceptions, with PyTorch's names and bases (``torch._dynamo.exc``)."""
from __future__ import annotations


class TorchDynamoException(RuntimeError):
    """The base of the compiler's errors (PyTorch's ``torch._dynamo.exc.TorchDynamoException``)."""


class InvalidBackend(TorchDynamoException):
    """``compile(backend=...)`` with a name that is not in ``torch.compiler.list_backends(())``."""


class RecompileError(TorchDynamoException):
    """A capture for a compiled function that already has one, under ``torch._dynamo.config.error_on_recompile``."""


class Unsupported(TorchDynamoException):
    """A graph break under ``fullgraph=True`` (PyTorch's ``torch._dynamo.exc.Unsupported``)."""


class FailOnRecompileLimitHit(Exception):
    """``recompile_limit`` captures reached under ``fullgraph=True`` (PyTorch's ``torch._dynamo.exc`` class)."""
