"""User subclasses of Tensor: ``as_subclass``, and PyTorch's default ``__torch_function__`` for their methods.

In PyTorch, an op on an instance of a Tensor subclass goes through the class's ``__torch_function__``; the
default one runs the op and returns the subclass (``type(t + 1) is MyTensor``), and a class that sets
``__torch_function__ = torch._C._disabled_torch_function_impl`` (nn.Parameter does) gets plain Tensors.

coretorch does the same for the Tensor *methods and operators* of subclass instances: when a subclass is
defined, its inherited methods are wrapped to call ``cls.__torch_function__(func, (cls,), args, kwargs)``, where
``func`` is the Tensor method.  Plain Tensors keep their methods untouched (no cost on the hot path).

And for the *functions* of the public namespaces (``torch.add``, ``torch.cat``, ``F.relu``, ``torch.linalg.*``,
``torch.special.*``): when the first subclass that dispatches is defined, those functions are replaced by wrappers
that look for instances of such classes among the arguments (and inside list/tuple arguments: ``torch.cat``) and
call their ``__torch_function__`` (subclasses before their parents, else left to right), as PyTorch's
``handle_torch_function``; with none among the arguments they call the op directly.  Programs that never define
such a subclass keep the plain functions (no cost); internal calls between ops never dispatch (as PyTorch's
kernels, which run below the dispatcher).
"""
from __future__ import annotations

import functools
import sys
import threading
import types as _types

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
    base = self._vbase if self._vbase is not None and not self._det else self  # (a view's root, as every view's)
    _init(t, self._data, self.dtype, self._be, grad_fn=node, base=base, version=self._vc)
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


class _State(threading.local):
    """Per thread, as PyTorch's DisableTorchFunctionSubclass: one thread inside a default ``__torch_function__``
    leaves the other threads' subclass ops dispatching (a new thread starts with the class default)."""
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
    _register(cls)
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


# ---- functions of the public namespaces ------------------------------------------------------------------------
_DISPATCHING: set = set()  # the Tensor subclasses whose __torch_function__ dispatches
_NAMESPACES = ("coretorch", "coretorch.nn.functional", "coretorch.linalg",
               "coretorch.special", "coretorch.functional")
_FN_MODULES = ("coretorch.ops.", "coretorch.nn.functional", "coretorch.nn.functional.", "coretorch.special",
               "coretorch._compat", "coretorch")
# not dispatched, as PyTorch's (constructors, predicates and global state; no tensor result to wrap)
_FN_SKIP = {"tensor", "as_tensor", "asarray", "from_numpy", "is_tensor", "is_storage", "set_default_device",
            "get_default_device", "set_default_dtype", "get_default_dtype", "compile", "use_deterministic_algorithms",
            "set_default_tensor_type", "devices", "_legacy", "broadcast_shapes", "_broadcast_shapes"}
_wrapped: dict = {}


def _overloaded(args, kwargs) -> list:
    """The dispatching subclasses among the arguments (one level into lists/tuples), subclasses first."""
    found: list = []
    for a in (args + tuple(kwargs.values())) if kwargs else args:
        t = type(a)
        if t in _DISPATCHING:
            cands: tuple = (t,)
        elif t is list or t is tuple:
            cands = tuple(type(b) for b in a if type(b) in _DISPATCHING)
        else:
            continue
        for c in cands:
            if c in found:
                continue
            # PyTorch's order: a subclass goes before its parent class, others left to right
            i = next((k for k, f in enumerate(found) if issubclass(c, f)), len(found))
            found.insert(i, c)
    return found


def _dispatching_function(fn):
    @functools.wraps(fn)
    def public(*args, **kwargs):
        if _state.disabled or not _DISPATCHING:
            return fn(*args, **kwargs)
        found = _overloaded(args, kwargs)
        if not found:
            return fn(*args, **kwargs)
        tys = tuple(found)
        for cls in found:
            ret = cls.__torch_function__(public, tys, args, kwargs)
            if ret is not NotImplemented:
                return ret
        raise TypeError(f"no implementation found for '{fn.__module__}.{fn.__name__}' on types that implement "
                        f"__torch_function__: {[c for c in found]}")
    public.__wrapped_op__ = fn
    return public


def _enable_function_dispatch() -> None:
    """Swap the public namespaces' op functions for dispatching wrappers (once, at the first such subclass)."""
    for ns_name in _NAMESPACES:
        ns = sys.modules.get(ns_name)
        if ns is None:
            continue
        for name, fn in list(vars(ns).items()):
            if (not isinstance(fn, _types.FunctionType) or name.startswith("__") or name in _FN_SKIP
                    or hasattr(fn, "__wrapped_op__")):
                continue
            mod = fn.__module__ or ""
            if not any(mod == m or (m.endswith(".") and mod.startswith(m)) for m in _FN_MODULES):
                continue
            if mod == "coretorch.ops._util":
                continue
            w = _wrapped.get(fn)
            if w is None:
                w = _wrapped[fn] = _dispatching_function(fn)
            setattr(ns, name, w)


def _register(cls) -> None:
    first = not _DISPATCHING
    _DISPATCHING.add(cls)
    if first:
        _enable_function_dispatch()


setattr(Tensor, "as_subclass", as_subclass)
setattr(Tensor, "__torch_function__", classmethod(__torch_function__))
_SUBCLASS_HOOK[0] = _install
