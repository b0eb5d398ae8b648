"""``coretorch.distributed``: ``torch.distributed``'s API, provided by a plugin.

The core ships only this namespace.  A distribution implements the hook ``coretorch_register_distributed``
and calls ``register(impl)`` with a module that has ``torch.distributed``'s names (``init_process_group``,
``all_reduce``, ``ReduceOp``, ...); they then appear here, ``impl.DistributedDataParallel`` appears as
``coretorch.nn.parallel.DistributedDataParallel`` and ``impl.DistributedSampler`` as
``coretorch.utils.data.DistributedSampler``.  Without such a plugin, ``is_available()`` is False and every
other name raises ``DistributedUnavailableError`` (an ``ImportError``) that says what to install.
``coretorch-distributed-mpi`` (``plugins/distributed_mpi``) is the implementation over MPI.
"""
from __future__ import annotations

import sys
import types

_impl = None          # the registered implementation module
_installed: list = []  # names copied into this namespace from it

INSTALL_HINT = ("install a distributed plugin: `pip install coretorch-distributed-mpi` (or `pip install "
                "\"coretorch[distributed]\"`; from a source checkout `pip install ./plugins/distributed_mpi`); "
                "`coretorch info` lists the loaded plugins")


class DistributedUnavailableError(ImportError):
    """Raised by every name of this namespace (and ``nn.parallel.DistributedDataParallel``) when no
    distributed plugin is loaded.  An ImportError, so that ``from coretorch.distributed import x`` shows it."""


def is_available() -> bool:
    """True when a distributed plugin is installed (``torch.distributed.is_available``)."""
    return _impl is not None


def _missing(name: str) -> DistributedUnavailableError:
    return DistributedUnavailableError(f"coretorch.distributed.{name} is not available: no distributed plugin is "
                                       f"loaded; {INSTALL_HINT}")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if _impl is None:
        raise _missing(name)
    try:
        return getattr(_impl, name)
    except AttributeError:
        raise AttributeError(f"module 'coretorch.distributed' has no attribute '{name}' (implementation: "
                             f"{getattr(_impl, '__name__', _impl)!r})") from None


def _register(impl) -> None:
    global _impl
    if _impl is not None:
        raise RuntimeError(f"a distributed implementation is already registered ({_impl.__name__})")
    names = [n for n in getattr(impl, "__all__", dir(impl)) if not n.startswith("_") and n != "is_available"]
    g = globals()
    for n in names:
        g[n] = getattr(impl, n)
    _installed[:] = names
    _impl = impl
    from ..nn import parallel
    parallel._set(getattr(impl, "DistributedDataParallel", None))
    sampler = getattr(impl, "DistributedSampler", None)
    if sampler is not None:
        from ..utils import data
        if not hasattr(data, "DistributedSampler"):
            # the plugin's sampler, set on the module at run time (it has none of its own)
            data.DistributedSampler = sampler  # type: ignore[attr-defined]
            data._plugin_distributed_sampler = sampler  # type: ignore[attr-defined]
            # and PyTorch's module for it: from torch.utils.data.distributed import DistributedSampler
            mod = types.ModuleType(f"{data.__name__}.distributed", "torch.utils.data.distributed: DistributedSampler.")
            mod.DistributedSampler = sampler  # type: ignore[attr-defined]
            sys.modules[mod.__name__] = data.distributed = mod  # type: ignore[attr-defined]


def _unregister() -> None:
    global _impl
    g = globals()
    for n in _installed:
        g.pop(n, None)
    _installed.clear()
    _impl = None
    from ..nn import parallel
    parallel._set(None)
    from ..utils import data
    s = data.__dict__.pop("_plugin_distributed_sampler", None)
    if s is not None and data.__dict__.get("DistributedSampler") is s:
        del data.DistributedSampler  # type: ignore[attr-defined]  # the plugin's, set by _register
        data.__dict__.pop("distributed", None)
        sys.modules.pop(f"{data.__name__}.distributed", None)
