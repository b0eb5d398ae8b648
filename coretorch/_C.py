"""The few private names of ``torch._C`` that PyTorch's own Python classes reference, so that those classes run
as user code on coretorch (PyTorch's Parameter: ``class _ParameterMeta(torch._C._TensorMeta)`` and
``__torch_function__ = _disabled_torch_function_impl``).  coretorch has no C extension: nothing else is here."""
from __future__ import annotations

from .tensor import Tensor, _disabled_torch_function_impl  # noqa: F401  (torch._C's name for it)

_TensorMeta = type(Tensor)  # the metaclass of Tensor (plain ``type``): user metaclasses derive from it
_TensorBase = Tensor


def _get_tracing_state():
    return None
