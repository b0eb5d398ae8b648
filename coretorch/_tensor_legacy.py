# mypy: disable-error-code="method-assign,assignment"
# (this module attaches the legacy methods to Tensor by design)
"""Legacy and convenience Tensor API that old PyTorch programs still use (bound onto Tensor at import).

The deprecated ``add_(Number, Tensor)`` overloads, ``volatile``, ``new``, ``resize_as_``,
``is_cuda``/``is_xpu``/``is_mps``, ``pin_memory``/``is_pinned``, ``cuda()`` and ``__setstate__``.
"""
from __future__ import annotations

import warnings

from . import accelerator as _accelerator
from .autograd import VOLATILE_WARNING
from .device import device as Device
from .ops import creation as _C, inplace as _IP, pointwise as _P
from .tensor import Size, Tensor

_NO = object()  # "argument not given" (None is a value some arguments take)


# ---- the deprecated overloads add_(Number alpha, Tensor other), add(Number alpha, Tensor other) ----------------
def _deprecated(name: str) -> None:
    warnings.warn(f"This overload of {name} is deprecated:\n\t{name}(Number alpha, Tensor other)\nConsider using one "
                  f"of the following signatures instead:\n\t{name}(Tensor other, *, Number alpha = 1)",
                  UserWarning, stacklevel=3)


def _legacy_alpha(name: str, alpha, other):
    if isinstance(alpha, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments: expected (Tensor other, *, "
                        f"Number alpha) or the deprecated (Number alpha, Tensor other)")
    _deprecated(name)
    return other, alpha


def _alpha_first(name: str, fn):
    """``fn`` (a method with PyTorch's ``(other, *, alpha=1)``) also taking the deprecated ``(alpha, other)``."""
    def method(self, other, *args, **kwargs):
        if len(args) == 1 and "alpha" not in kwargs:
            other, alpha = _legacy_alpha(name, other, args[0])
            return fn(self, other, alpha=alpha, **kwargs)
        return fn(self, other, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = fn.__doc__
    return method


def _add_(self, other, other2=_NO, *, alpha=1):
    if other2 is not _NO:
        other, alpha = _legacy_alpha("add_", other, other2)
    return _IP.binary_inplace(self, "add_", _P.add, other, alpha)


def _sub_(self, other, other2=_NO, *, alpha=1):
    if other2 is not _NO:
        other, alpha = _legacy_alpha("sub_", other, other2)
    return _IP.binary_inplace(self, "sub_", _P.sub, other, alpha)


def _add(self, other, other2=_NO, *, alpha=1):
    if other2 is not _NO:
        other, alpha = _legacy_alpha("add", other, other2)
    return _P.add(self, other, alpha=alpha)


def _sub(self, other, other2=_NO, *, alpha=1):
    if other2 is not _NO:
        other, alpha = _legacy_alpha("sub", other, other2)
    return _P.sub(self, other, alpha=alpha)


def _value_first(name: str, fn):
    """``addcmul_(Number value, Tensor tensor1, Tensor tensor2)``, the deprecated order old optimizers use, on top
    of the method ``fn(self, tensor1, tensor2, *, value=1)`` (warning as PyTorch does)."""
    def method(self, *args, **kwargs):
        if len(args) == 3 and not isinstance(args[0], Tensor) and "value" not in kwargs:
            warnings.warn(f"This overload of {name} is deprecated:\n\t{name}(Number value, Tensor tensor1, Tensor "
                          f"tensor2)\nConsider using one of the following signatures instead:\n\t{name}(Tensor "
                          f"tensor1, Tensor tensor2, *, Number value = 1)", UserWarning, stacklevel=2)
            return fn(self, args[1], args[2], value=args[0], **kwargs)
        return fn(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = fn.__doc__
    setattr(method, "_value_first", True)  # (marks the wrapper: installed once)
    return method


# ---- volatile (removed in PyTorch 0.4: always False, with PyTorch's warning) -----------------------------------


def _get_volatile(self) -> bool:
    """Always False (the pre-0.4 ``volatile`` flag; use ``no_grad``)."""
    warnings.warn(VOLATILE_WARNING, UserWarning, stacklevel=2)
    return False


def _set_volatile(self, value) -> None:
    warnings.warn(VOLATILE_WARNING, UserWarning, stacklevel=2)


# ---- Tensor.new: the legacy constructor of the same dtype and device ---------------------------------------------
def new(self: Tensor, *args, device=None, dtype=None) -> Tensor:
    """``x.new()`` (empty), ``x.new(2, 3)`` / ``x.new(size)`` (uninitialised), ``x.new(data)`` (a copy of the
    data), ``x.new(other)`` (``other`` itself, which must have x's dtype), on x's device and dtype."""
    dev = self.device if device is None else Device(device)
    dt = self.dtype if dtype is None else dtype
    if not args:
        return _C.empty(0, dtype=dt, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not dt or other.device != dev:
            raise TypeError(f"expected {dt} on {dev} (got {other.dtype} on {other.device})")
        return other.detach()
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args) or \
            (len(args) == 1 and isinstance(args[0], Size)):
        return _C.empty(*args, dtype=dt, device=dev)
    if len(args) == 1:
        return _C.tensor(args[0], dtype=dt, device=dev)
    raise TypeError(f"new() received an invalid combination of arguments: {tuple(type(a).__name__ for a in args)}")


def resize_as_(self: Tensor, the_template: Tensor, memory_format=None) -> Tensor:
    """``self.resize_(the_template.shape, memory_format=...)``: elements are kept in storage order (PyTorch's;
    ``the_template`` is its keyword name)."""
    from .ops.joining import resize_
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


# ---- devices that do not exist here ------------------------------------------------------------------------------
def pin_memory(self: Tensor, device=None) -> Tensor:
    """Page-locked host memory is a CUDA feature.  As PyTorch without an accelerator, this raises; with the
    opencl accelerator available it returns the tensor (host memory is what the opencl backend copies from)."""
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors can be pinned")
    if not _accelerator.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if is_pinned(self):
        return self
    out = self.clone()  # (as PyTorch, a copy: in the graph, CloneBackward0, where self requires grad)
    out.__dict__["_pinned"] = True  # page-locked in PyTorch; a marked copy here, for is_pinned()
    return out


def is_pinned(self: Tensor, device=None) -> bool:
    """Whether the tensor (or the tensor it views) was returned by :meth:`pin_memory`."""
    base = self._vbase
    return bool(self.__dict__.get("_pinned") or (base is not None and base.__dict__.get("_pinned")))


def cuda(self: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    """Move to CUDA: coretorch has no CUDA backend, so this raises the error naming the devices that exist."""
    if isinstance(device, int):
        device = f"cuda:{device}"
    return _C.convert(self, None, Device("cuda" if device is None else device))


def cpu(self: Tensor, memory_format=None) -> Tensor:
    """The tensor on the cpu device (``self`` if it is already there)."""
    return _C.convert(self, None, "cpu")


def __setstate__(self, state) -> None:
    """PyTorch's legacy ``Tensor.__setstate__``: ``(storage, offset, size, stride)`` sets the tensor's memory
    (``set_``), ``(data, _, hooks, requires_grad, _)`` (a legacy Variable) its data and ``requires_grad``,
    ``(requires_grad, _, hooks)`` only ``requires_grad`` (hooks are never restored)."""
    if not self.is_leaf:
        raise RuntimeError("__setstate__ can be only called on leaf Tensors")
    if len(state) == 4:
        self.set_(*state)
        return
    if len(state) == 5:
        self.data = state[0]
        state = (state[3], state[4], state[2])
    self.requires_grad = state[0]


def _bind() -> None:
    T = Tensor
    for name, mine in (("add_", _add_), ("sub_", _sub_), ("add", _add), ("sub", _sub)):
        current = getattr(T, name)
        # the core's own method (_tensor_methods): replaced by the same fast path plus the overload; a method an
        # op family rebound: wrapped, so that its change stays
        if current.__qualname__.startswith(("_fast_inplace.", "_method.")):
            setattr(T, name, mine)
        else:
            setattr(T, name, _alpha_first(name, current))
    for name in ("addcmul", "addcmul_", "addcdiv", "addcdiv_"):  # (the elementwise family's methods, if there)
        fn = getattr(T, name, None)
        if fn is not None and not getattr(fn, "_value_first", False):
            setattr(T, name, _value_first(name, fn))
    T.volatile = property(_get_volatile, _set_volatile)
    T.new = new
    setattr(T, "__setstate__", __setstate__)  # noqa: B010 - (Tensor declares none for type checkers)
    T.resize_as_ = resize_as_
    for name in ("is_cuda", "is_xpu", "is_mps", "is_meta", "is_sparse", "is_quantized", "is_mkldnn",
                 "is_nested"):
        setattr(T, name, property(lambda self: False))
    T.is_pinned = is_pinned
    T.pin_memory = pin_memory
    T.cuda = cuda
    T.cpu = cpu


_bind()
