"""coretorch.nn: Module, Parameter, the layers, functional, init and utils.

Modules registered by plugins (hook ``coretorch_register_modules``) appear here as ``coretorch.nn.<Name>``;
a plugin cannot replace a name coretorch itself defines.
"""
from __future__ import annotations

from . import functional  # noqa: F401
from . import init, modules, parameter, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from . import attention, common_types, grad, parallel  # noqa: F401,E402
from .parallel import DataParallel  # noqa: E402
from ._factory import factory_kwargs  # noqa: E402

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "DataParallel", "functional", "init",
           "utils", "modules", "parameter", "attention", "grad", "parallel", "factory_kwargs", *_modules_all]

_registered: dict = {}


def _register(name: str, cls) -> None:
    if name in globals() and name not in _registered:
        raise ValueError(f"coretorch.nn already defines '{name}'")
    globals()[name] = cls
    _registered[name] = cls


def _unregister(name: str) -> None:
    if _registered.pop(name, None) is not None:
        globals().pop(name, None)
