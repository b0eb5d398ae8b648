"""User subclasses of Tensor: ``as_subclass``, and PyTorch's default ``__torch_function__`` for their methods.

In PyTorch, an op on an instance of a Tensor subclass goes through the class's ``__torch_function__``; the
default one runs the op and returns the subclass (``type(t + 1) is MyTensor``), and a class that sets
``__torch_function__ = torch._C._disabled_torch_function_impl`` (nn.Parameter does) gets plain Tensors.

coretorch does the same for the Tensor *methods and operators* of subclass instances: when a subclass is
defined, its inherited methods are wrapped to call ``cls.__torch_function__(func, (cls,), args, kwargs)``, where
``func`` is the Tensor method.  Plain Tensors keep their methods untouched (no cost on the hot path).  Functions
called through the ``coretorch`` namespace (``torch.add(t, 1)``) do not dispatch: they return plain Tensors.
"""
from __future__ import annotations

from .autograd.grad_mode import state as _gs
from .autograd.graph import Node
from .tensor import _SUBCLASS_HOOK, Tensor, _disabled_torch_function_impl, _edge, _init


class AliasBackward0(Node):
    """The graph node of ``as_subclass``: the gradient passes through unchanged."""
    __slots__ = ()

    def backward(self, g):
        return (g,)


def as_subclass(self: Tensor, cls) -> Tensor:
    """This tensor as a ``cls`` instance: same storage and version counter, still attached to the graph."""
    if not isinstance(cls, type) or not issubclass(cls, Tensor):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor (got {cls!r})")
    t = object.__new__(cls)
    node = None
    if self._rg and _gs.enabled:
        node = AliasBackward0()
        node.next_functions = (_edge(self),)
    _init(t, self._data, self.dtype, self._be, grad_fn=node, base=self, version=self._vc)
    return t


def _convert(ret, cls):
    """Tensors in an op's result as ``cls`` instances (tuples, lists and named tuples recursively), as PyTorch."""
    if isinstance(ret, Tensor):
        return ret if isinstance(ret, cls) else as_subclass(ret, cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        if hasattr(ret, "_fields"):  # named tuples (max(dim) gives (values, indices))
            return type(ret)(*items)
        return type(ret)(items)
    return ret


class _State:
    disabled = 0  # > 0 inside the default __torch_function__: the op's own method calls do not dispatch again


_state = _State()


def __torch_function__(cls, func, types, args=(), kwargs=None):
    """PyTorch's default: run ``func`` (no nested dispatch) and give the results the subclass."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    _state.disabled += 1
    try:
        ret = func(*args, **kwargs)
    finally:
        _state.disabled -= 1
    return _convert(ret, cls)


# the methods that dispatch: every public Tensor method and the operators; not the conversions to Python values
_OPERATORS = {"__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
              "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__rfloordiv__",
              "__ifloordiv__", "__mod__", "__rmod__", "__imod__", "__pow__", "__rpow__", "__ipow__", "__matmul__",
              "__rmatmul__", "__neg__", "__pos__", "__abs__", "__invert__", "__and__", "__rand__", "__iand__",
              "__or__", "__ror__", "__ior__", "__xor__", "__rxor__", "__ixor__", "__eq__", "__ne__", "__lt__",
              "__le__", "__gt__", "__ge__", "__getitem__", "__setitem__"}
_NOT_DISPATCHED = {"numpy", "tolist", "item", "dim", "ndimension", "size", "numel", "nelement", "stride",
                   "data_ptr", "element_size", "is_contiguous", "is_floating_point", "as_subclass",
                   "_make_subclass", "backward", "register_hook", "retain_grad", "is_pinned"}


def _dispatching(name: str, fn):
    def method(self, *args, **kwargs):
        cls = type(self)
        if _state.disabled:
            return fn(self, *args, **kwargs)
        tf = cls.__torch_function__
        ret = tf(fn, (cls,), (self,) + args, kwargs)
        # an operator's NotImplemented goes back to Python (t == None is False), as PyTorch's operators do
        if ret is NotImplemented and name not in _OPERATORS:
            raise TypeError(f"no implementation found for 'Tensor.{name}' on types that implement "
                            f"__torch_function__: [{cls.__qualname__}]")
        return ret
    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


_PROPERTIES = ("T", "mT", "H", "mH", "data")  # tensor-valued attributes (PyTorch dispatches their getters too)


def _dispatching_property(name: str, prop: property) -> property:
    getter = _dispatching(name, prop.fget)
    return property(getter, prop.fset, prop.fdel, prop.__doc__)


def _install(cls) -> None:
    """Called when a Tensor subclass is defined: wrap the methods it inherits from Tensor, unless the class
    disables __torch_function__ (nn.Parameter) or is one of the legacy type classes (FloatTensor & co)."""
    if "_legacy_dtype" in cls.__dict__:
        return
    tf = cls.__dict__.get("__torch_function__", None) or getattr(cls, "__torch_function__", None)
    if getattr(tf, "__func__", tf) is _disabled_torch_function_impl:
        return
    for name, fn in list(vars(Tensor).items()):
        if not (name in _OPERATORS or (not name.startswith("_") and name not in _NOT_DISPATCHED)):
            continue
        if isinstance(fn, (property, staticmethod, classmethod, type)) or not callable(fn):
            continue
        owner = next(k for k in cls.__mro__ if name in vars(k))
        if owner is Tensor:  # a user's own method (or a parent's wrapper) stays
            setattr(cls, name, _dispatching(name, fn))
    for name in _PROPERTIES:
        prop = vars(Tensor).get(name)
        if isinstance(prop, property) and next(k for k in cls.__mro__ if name in vars(k)) is Tensor:
            setattr(cls, name, _dispatching_property(name, prop))


Tensor.as_subclass = as_subclass
Tensor.__torch_function__ = classmethod(__torch_function__)
_SUBCLASS_HOOK[0] = _install
