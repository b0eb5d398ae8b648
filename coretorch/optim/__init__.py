"""coretorch.optim: ``Optimizer``, ``SGD`` and ``lr_scheduler``, as in PyTorch.

Optimizers registered by plugins appear here as ``coretorch.optim.<Name>`` (and in ``coretorch info``).
"""
from __future__ import annotations

import difflib

from . import lr_scheduler, swa_utils  # noqa: F401  (torch.optim.swa_utils)
from ._checks import check_fused
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
    """The names of every optimizer available as ``coretorch.optim.<name>`` (the core's and the plugins')."""
    return sorted(_registered)


def __getattr__(name: str):
    """An optimizer name that does not exist lists the available ones (the core's and the plugins')."""
    if name[:1].isupper():
        names = sorted({"SGD"} | set(_registered))
        close = [n for n in names if n.lower() == name.lower()] or difflib.get_close_matches(name, names, 1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise AttributeError(f"module 'coretorch.optim' has no attribute '{name}': {hint}available optimizers: "
                             f"{', '.join(names)} (plugins add more; see `coretorch info`)")
    raise AttributeError(f"module 'coretorch.optim' has no attribute '{name}'")


__all__ = ["Optimizer", "SGD", "check_fused", "lr_scheduler", "registered"]
