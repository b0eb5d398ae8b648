"""nn.Parameter (a Tensor subclass a Module registers as a parameter) and nn.Buffer."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..tensor import Tensor, _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


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


# ---- lazy modules' placeholders ----------------------------------------------------------------------------
# Methods an uninitialised tensor still answers (PyTorch's UninitializedTensorMixin._allowed_methods, plus what
# Module and the optimizers use on any parameter); the conversions keep it uninitialised.
_CONVERSIONS = ("half", "float", "double", "char", "short", "int", "long", "cuda", "cpu", "to", "detach")
_ALLOWED = frozenset(_CONVERSIONS + ("size", "copy_", "is_complex", "is_floating_point", "get_device", "materialize",
                                     "requires_grad_", "share_memory_", "__hash__", "__eq__", "__ne__",
                                     "__setattr__", "__getattribute__", "__delattr__", "__reduce_ex__",
                                     "__deepcopy__", "__repr__", "__str__", "__format__", "__bool__", "__len__"))
_SHAPE_MSG = ("Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
              "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
              "`forward` to initialize the parameters before accessing their attributes.")


def _refuse(name: str):
    def method(self, *args, **kwargs):
        raise ValueError(f"Attempted to use an uninitialized parameter in <method '{name}' of 'Tensor' objects>. "
                         "This error happens when you are using a `LazyModule` or explicitly manipulating "
                         "`torch.nn.parameter.UninitializedParameter` objects. When using LazyModules Call `forward` "
                         "with a dummy batch to initialize the parameters before calling torch functions")
    method.__name__ = name
    method.__doc__ = f"Refused (ValueError) until the placeholder is materialized: ``Tensor.{name}``."
    return method


def _convert(name: str):
    def method(self, *args, **kwargs):
        r = getattr(Tensor, name)(self, *args, **kwargs)
        return self if r is self else type(self)._like(r, self)
    method.__name__ = name
    method.__doc__ = f"``Tensor.{name}``, the result still an uninitialized placeholder of the same kind."
    return method


class UninitializedTensorMixin:
    """A placeholder with no shape yet: ops on it raise ValueError, ``shape`` raises RuntimeError, and
    ``materialize(shape)`` gives it storage and turns it (the same object) into ``cls_to_become``."""
    cls_to_become: type = Tensor
    if TYPE_CHECKING:  # those of the Tensor class this is mixed into
        device: Any
        dtype: Any

    def materialize(self, shape, device=None, dtype=None) -> None:
        from ..ops.creation import empty
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_SHAPE_MSG)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)._like(self, self)
        memo[id(self)] = result
        return result


def _install_refusals(cls) -> None:
    from .._subclass import _OPERATORS
    for name, fn in list(vars(Tensor).items()):
        if name in _ALLOWED or name in vars(UninitializedTensorMixin):
            continue
        if not (name in _OPERATORS or not name.startswith("_")):
            continue
        if isinstance(fn, (property, staticmethod, classmethod, type)) or not callable(fn):
            continue
        setattr(cls, name, _refuse(name))
    for name in _CONVERSIONS:
        setattr(cls, name, _convert(name))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape a lazy module infers on its first forward (``materialize`` makes it a Parameter)."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        from ..ops.creation import empty
        return Tensor._make_subclass(cls, empty(0, device=device, dtype=dtype), requires_grad)

    @classmethod
    def _like(cls, data: Tensor, ref) -> "UninitializedParameter":
        return Tensor._make_subclass(cls, Tensor.detach(data), ref.requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape a lazy module infers on its first forward (``materialize`` makes it a Tensor)."""
    cls_to_become = Tensor
    __torch_function__ = _disabled_torch_function_impl  # ops are refused one by one (no global dispatch)
    persistent: bool  # whether the module's state_dict holds it (set by __new__)

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        from ..ops.creation import empty
        t = Tensor._make_subclass(cls, empty(0, device=device, dtype=dtype), requires_grad)
        t.persistent = persistent
        return t

    @classmethod
    def _like(cls, data: Tensor, ref) -> "UninitializedBuffer":
        t = Tensor._make_subclass(cls, Tensor.detach(data), ref.requires_grad)
        t.persistent = getattr(ref, "persistent", True)
        return t


_install_refusals(UninitializedParameter)
_install_refusals(UninitializedBuffer)


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialised placeholder of a lazy module."""
    return isinstance(param, UninitializedTensorMixin)
