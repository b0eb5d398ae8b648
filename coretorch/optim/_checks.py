"""The argument checks PyTorch's optimizers make for ``fused=True``, shared by the core's SGD and the optimizers
of plugins (public as ``coretorch.optim.check_fused``)."""
from __future__ import annotations

from typing import Any, Iterable


def check_fused(fused: Any, *, foreach: Any = None, differentiable: bool = False, params: Iterable = ()) -> None:
    """Raise PyTorch's ``RuntimeError`` for an optimizer's ``fused=True`` with ``differentiable=True`` or
    ``foreach=True``, or (``params``: the tensors a step updates) with a parameter that is not floating point.
    Nothing is checked when ``fused`` is false.  Call it in ``__init__`` with the arguments, and in ``step`` with
    ``params=`` (PyTorch checks the parameters' dtypes at each step).

    Example:
        >>> from coretorch.optim import check_fused
        >>> check_fused(True, foreach=True)
        Traceback (most recent call last):
        ...
        RuntimeError: `fused` and `foreach` cannot be `True` together.
    """
    if not fused:
        return
    if differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    for p in params:
        if not p.dtype.is_floating_point:
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported "
                               f"devices: ['cpu', 'opencl'] but {p.dtype} and {p.device.type}")
