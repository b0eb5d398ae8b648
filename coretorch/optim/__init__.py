"""coretorch.optim: ``Optimizer``, ``SGD`` and ``lr_scheduler``, as in PyTorch.

Optimizers registered by plugins appear here as ``coretorch.optim.<Name>`` (and in ``coretorch info``).
"""
from __future__ import annotations

from . import lr_scheduler
from .optimizer import Optimizer
from .sgd import SGD

_registered: dict = {}


def _register(name: str, cls) -> None:
    if name in globals() and name not in _registered:
        raise ValueError(f"coretorch.optim already defines '{name}'")
    globals()[name] = cls
    _registered[name] = cls


def _unregister(name: str) -> None:
    if _registered.pop(name, None) is not None:
        globals().pop(name, None)


def registered() -> list[str]:
    return sorted(_registered)


__all__ = ["Optimizer", "SGD", "lr_scheduler", "registered"]
