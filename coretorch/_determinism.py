"""The state behind ``torch.use_deterministic_algorithms`` (a module of its own, without imports, so that device
backends can read it: the opencl backend switches its atomic accumulations to an ordered path while it is set).

``alert_not_deterministic(caller)`` is PyTorch's check for an op without a deterministic implementation: it raises
PyTorch's RuntimeError while the mode is on, or warns with ``warn_only=True``."""
from __future__ import annotations

import warnings

state = {"mode": False, "warn_only": False}


def deterministic() -> bool:
    """Whether ``torch.use_deterministic_algorithms(True)`` is in force (also with ``warn_only=True``)."""
    return state["mode"]


def alert_not_deterministic(caller: str) -> None:
    if not state["mode"]:
        return
    msg = (f"{caller} does not have a deterministic implementation, but you set "
           "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for this operation, or you "
           "can use the 'warn_only=True' option, if that's acceptable for your application. You can also file an "
           "issue at https://github.com/pytorch/pytorch/issues to help us prioritize adding deterministic support "
           "for this operation.")
    if state["warn_only"]:
        warnings.warn(msg, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(msg)
