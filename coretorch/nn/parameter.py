"""nn.Parameter (a Tensor subclass a Module registers as a parameter) and nn.Buffer."""
from __future__ import annotations

from ..tensor import Tensor, _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "is_lazy"]


class _ParameterMeta(type):
    """``isinstance(t, Parameter)`` is also true for a tensor flagged ``_is_param`` (PyTorch's rule: a user's own
    Tensor subclass can say it is a parameter, and Module then registers it)."""

    def __instancecheck__(cls, obj) -> bool:
        return type.__instancecheck__(cls, obj) or (cls is Parameter and isinstance(obj, Tensor) and obj._is_param)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A tensor that is a module parameter: ``requires_grad=True`` by default, shares storage (and the
    version counter) with ``data``, and registers itself when assigned as a Module attribute."""

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        return Tensor._make_subclass(cls, data, requires_grad)  # as PyTorch's Parameter

    __torch_function__ = _disabled_torch_function_impl  # as PyTorch: ops on a parameter give plain Tensors

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        # as in PyTorch: a fresh parameter with cloned data; the gradient is not copied
        if id(self) in memo:
            return memo[id(self)]
        from ..ops.shape import clone
        result = type(self)(clone(self.data), self.requires_grad)
        memo[id(self)] = result
        return result


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` is true for tensors made by ``Buffer(...)`` (they are plain Tensors)."""

    def __instancecheck__(cls, obj) -> bool:
        if cls is Buffer:
            return isinstance(obj, Tensor) and getattr(obj, "_is_buffer", False)
        return super().__instancecheck__(obj)


class Buffer(Tensor, metaclass=_BufferMeta):
    """``nn.Buffer(data, persistent=True)``: assigning it to a Module attribute registers a buffer."""
    __torch_function__ = _disabled_torch_function_impl
    persistent: bool

    def __new__(cls, data=None, *, persistent: bool = True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def is_lazy(param) -> bool:
    return False
