"""Factories, conversions between dtypes/devices, and random number generation."""
from __future__ import annotations

import functools
import math
import threading
from typing import TYPE_CHECKING, Callable, TypeVar, cast

import numpy as np

from .. import dtypes as _dt
from .._fpquiet import quiet_call
from .._backend import get_table
from .._warn_once import warn_once
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..device import device as Device
from ..tensor import Tensor, _make
from . import _memfmt
from ._out import write_out
from ._spaced import float_spaced
from ._tensor_data import _Unpack, _check_fits, _flatten_tensors, _infer_np, _mixed_fit
from ._util import data_read as _data_read, edge, shape_arg

_CPU = Device("cpu")


class _DefaultDevice(threading.local):
    """torch.set_default_device: the device of factories called without one. Per thread, as PyTorch's (its
    DeviceContext is a mode on the thread-local mode stack): a new thread starts with none (cpu), whatever its
    creator set, and one thread's setting leaves the others' alone. A class default: one attribute read."""
    device: Device | None = None
    outer: tuple = ()  # the defaults that ``with torch.device(...)`` blocks of this thread replaced, innermost last


_default = _DefaultDevice()


def _push_default_device(device: Device) -> None:
    """``with device:`` entered: ``device`` is this thread's default until the block ends (see device.__enter__)."""
    before = _default.device
    set_default_device(device)  # (an unknown or unavailable device raises here, before anything changed)
    _default.outer = _default.outer + (before,)


def _pop_default_device() -> None:
    outer = _default.outer
    if outer:
        _default.device, _default.outer = outer[-1], outer[:-1]


def set_default_device(device) -> None:
    """The device factories (tensor, zeros, arange, rand, ...) use when given none, in this thread (PyTorch's
    default device is per thread); None restores cpu."""
    d = None if device is None else get_table(
        device if isinstance(device, Device) else Device(device if not isinstance(device, int)
                                                         else f"opencl:{device}")).device
    # an explicit cpu is the default itself (code restoring ``get_default_device()`` sets it): kept as None, so that
    # this thread's compiled functions' guards (which hold the default device) match other threads'
    _default.device = None if d is None or d.type == "cpu" else d


def get_default_device() -> Device:
    """The device factory functions use when none is given (``cpu`` unless changed)."""
    return _default.device or _CPU


def _table(device):
    if device is None:
        return get_table(_default.device or _CPU)
    if isinstance(device, Tensor):
        raise TypeError("device must be a str or coretorch.device, not Tensor")
    return get_table(device if isinstance(device, Device) else Device(device if not isinstance(device, int)
                                                                        else f"opencl:{device}"))


def _to_out(r: Tensor, out, op: str) -> Tensor:
    return write_out(op, out, r, exact_dtype=True)


_Factory = TypeVar("_Factory", bound=Callable[..., Tensor])


def _writes_out(fn: _Factory) -> _Factory:
    """A factory's ``out=``: made with out's dtype and device (unless given) and written into ``out``."""
    @functools.wraps(fn)
    def factory(*args, out=None, **kw):
        d = kw.get("dtype")
        if d.__class__ is type:  # dtype=float, int, bool
            kw["dtype"] = _dt.from_python_type(d)
        if out is None:
            return fn(*args, **kw)
        if isinstance(out, Tensor):
            kw["dtype"] = kw.get("dtype") or out.dtype
            kw["device"] = kw.get("device") or out.device
        return _to_out(fn(*args, **kw), out, fn.__name__)
    return cast(_Factory, factory)  # fn's own signature (it declares ``out``)


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        if not t.dtype.is_floating_point:  # (PyTorch's factories capitalise it, unlike requires_grad_())
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def _check_dtype(dtype, op: str):
    if dtype is not None and not isinstance(dtype, _dt.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be coretorch.dtype, not {type(dtype).__name__}")


def tensor(data, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Copy data into a new tensor, inferring the dtype as PyTorch does."""
    dtype = _dt.from_python_type(dtype)
    _check_dtype(dtype, "tensor")
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        out = data.detach().to(device=device or _default.device or data.device, dtype=dtype or data.dtype,
                               copy=True)
        return _finish(out, requires_grad)
    try:
        arr, dt = _infer_np(data)
    except _Unpack as e:
        if dtype is None or dtype.category == 1:  # (an integer dtype)
            raise ValueError(str(e)) from None
        arr, dt = np.array(_flatten_tensors(data) if isinstance(data, (list, tuple)) else data, dtype=np.float64), \
            dtype  # (tensor([2 ** 64], dtype=float32) is 1.8447e+19)
    if dtype is not None and dtype is not dt and not isinstance(data, np.ndarray):
        try:
            # Python and numpy numbers are converted one by one, checked (an ndarray is cast): tensor(np.int64(300),
            # dtype=uint8) raises as tensor([300.], dtype=uint8) does
            _check_fits(arr, dtype)
        except RuntimeError:
            arr = _mixed_fit(data, arr, dtype)
    dt = dtype or dt
    table = _table(device)
    if arr is data and data.dtype == dt.np and data.flags.c_contiguous:
        # an array as it is: copied by the device's own kernels (from_numpy; on the host, contiguous), which a
        # compiled step records and repeats, so a buffer the caller refills in place is read again at each call
        a = table.from_numpy(data)
        return _finish(_make(table.contiguous(a) if table.host_memory else a, dt, table), requires_grad)
    # a float beyond float16's range becomes inf, an out-of-range float to an integer dtype as a cast (silently)
    with np.errstate(over="ignore", invalid="ignore"):
        if dt.np == np.uint8 and getattr(arr, "dtype", None) == np.float64:
            arr = arr.astype(np.int64)  # (through int64 as PyTorch's cast: see the cpu backend's dtypes._cast)
        elif dt.is_floating_point and dt.itemsize == 2 and getattr(arr, "dtype", None) == np.float64:
            arr = arr.astype(np.float32)  # (a double becomes a Half/BFloat16 through float, as c10's conversion)
        a = np.array(arr, dtype=dt.np, copy=True, order="C")
    return _finish(_make(table.from_numpy(a), dt, table), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Convert ``data`` to a tensor, sharing memory where possible.

    A tensor with the requested dtype and device is returned as is; a numpy array on the cpu device shares its
    memory; anything else (lists, scalars) is copied as :func:`tensor` does.

    Args:
        data: a tensor, numpy array, (nested) sequence or scalar.
        dtype (dtype, optional): the result dtype (inferred by default).
        device (device, optional): the result device.
    """
    dtype = _dt.from_python_type(dtype)
    if isinstance(data, Tensor):
        return data.to(device=device or data.device, dtype=dtype or data.dtype)
    if isinstance(data, np.ndarray) and (dtype is None or dtype.np == data.dtype):
        dev = device if device is not None else _default.device
        if dev is None or dev in ("cpu", _CPU):  # (a default device set back to cpu shares too)
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None) -> Tensor:
    """``as_tensor`` with PyTorch's ``copy``: True always copies, False never does (ValueError where it must),
    None copies only where needed; ``requires_grad`` set on the result (unless given: False, or a tensor
    ``obj``'s own, see ``_asarray_requires_grad``)."""
    dtype = _dt.from_python_type(dtype)
    if _is_buffer(obj):  # (bytes, bytearray, array.array, memoryview: its bytes read as dtype, as PyTorch's)
        from .misc import frombuffer  # (misc imports this module)
        r = frombuffer(obj, dtype=dtype or _dt.default)
        if device is not None and Device(device) != r.device:
            if copy is False:
                raise ValueError(f"can't alias tensor on device 'cpu' into device '{Device(device)}'.")
            r = r.to(device)
        elif copy:
            r = r.clone()
        return _finish(r, bool(requires_grad))
    if copy is False:
        if isinstance(obj, Tensor):
            if dtype is not None and dtype is not obj.dtype:
                raise ValueError(f"can't alias tensor with dtype '{obj.dtype._tname[:-6]}' into dtype "
                                 f"'{dtype._tname[:-6]}'.")
            if device is not None and Device(device) != obj.device:
                raise ValueError(f"can't alias tensor on device '{obj.device}' into device '{Device(device)}'.")
        elif not isinstance(obj, np.ndarray) or (dtype is not None and dtype.np != obj.dtype):
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        r = as_tensor(obj, dtype=dtype, device=device)
    elif copy:
        if isinstance(obj, Tensor):  # (a copy in the graph, as PyTorch's, unless requires_grad=False detaches it)
            src = obj.detach() if requires_grad is False else obj
            same = (dtype is None or dtype is obj.dtype) and (device is None or Device(device) == obj.device)
            r = src.clone() if same else src.to(device=device or obj.device, dtype=dtype or obj.dtype, copy=True)
        else:
            r = tensor(obj, dtype=dtype, device=device)
    else:
        r = as_tensor(obj, dtype=dtype, device=device)
    if isinstance(obj, Tensor):
        return _asarray_requires_grad(obj, r, copy, requires_grad)
    return _finish(r, bool(requires_grad))


_ASARRAY_RG = ("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of False. Pass "
               "requires_grad=False explicitly to get the old behavior and silence this warning.")


def _asarray_requires_grad(obj: Tensor, r: Tensor, copy, requires_grad) -> Tensor:
    """PyTorch's asarray of a tensor: unspecified, ``requires_grad`` is ``obj``'s (where that is True, with
    PyTorch's warning, once per process); given, it is set on the result, and a result in a graph (a copy or
    conversion, or a non-leaf ``obj``) asked for False is detached (``obj`` itself, a leaf, has its flag set, as
    PyTorch's ``set_requires_grad`` does)."""
    if requires_grad is None:
        if obj._rg:
            warn_once("asarray.requires_grad", _ASARRAY_RG, stacklevel=3)
        return r
    if not requires_grad and r.grad_fn is not None:
        return r.detach()
    return r.requires_grad_(bool(requires_grad))


def _is_buffer(obj) -> bool:
    """Whether asarray reads ``obj`` through the buffer protocol (numpy arrays and scalars, tensors, sequences and
    numbers go their own ways first, as in PyTorch)."""
    if isinstance(obj, (Tensor, np.ndarray, np.generic, list, tuple, str, int, float, complex)):
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt = _dt.from_numpy_dtype(ndarray.dtype)
    isz = ndarray.itemsize
    if any(s % isz for s in ndarray.strides):  # (PyTorch's checks: element strides, none negative)
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array "
                         "to reallocate the memory.")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a copy "
                         "of your array with array.copy().)")
    if not ndarray.flags.writeable:  # (PyTorch's warning, once per process; coretorch refuses writes to it instead)
        warn_once("from_numpy.read_only", "The given NumPy array is not writable, and PyTorch does not support "
                  "non-writable tensors. This means writing to this tensor will result in undefined behavior. You may "
                  "want to copy the array to protect its data or make it writable before converting it to a tensor. "
                  "This type of warning will be suppressed for the rest of this program.", 2)
    table = get_table(_CPU)
    return _make(table.from_numpy(ndarray), dt, table)


def _fill(size, value, dtype, device, requires_grad, op):
    _check_dtype(dtype, op)
    shape = shape_arg(size, op)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(shape)}")
    table = _table(device)
    dt = dtype or _dt.default
    value = _dt.fit_scalar(value, dt)
    return _finish(_make(table.full(shape, value, dt.np), dt, table), requires_grad)


def _size_kw(args: tuple, kw: dict, op: str) -> tuple:
    """f(2, 3), f((2, 3)) or f(size=(2, 3)): PyTorch's factories take the size as a keyword too."""
    if "size" in kw:
        if args:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        args = (kw.pop("size"),)
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kw))}'")
    return args


@_writes_out
def zeros(*size, dtype=None, device=None, requires_grad: bool = False, layout=None, out=None,
          pin_memory: bool = False, **kw) -> Tensor:
    """A tensor of the given shape filled with zeros.

    Args:
        *size (ints or a tuple): the shape.
        dtype, device, requires_grad: of the result.
        out (Tensor, optional): the output tensor.

    Example:
        >>> torch.zeros(2, 3).shape
        coretorch.Size([2, 3])
    """
    return _fill(_size_kw(size, kw, "zeros"), 0, dtype, device, requires_grad, "zeros")


@_writes_out
def ones(*size, dtype=None, device=None, requires_grad: bool = False, layout=None, out=None,
         pin_memory: bool = False, **kw) -> Tensor:
    """A tensor of the given shape filled with ones.

    Args:
        *size (ints or a tuple): the shape.
        dtype, device, requires_grad: of the result.
        out (Tensor, optional): the output tensor.
    """
    return _fill(_size_kw(size, kw, "ones"), 1, dtype, device, requires_grad, "ones")


@_writes_out
def empty(*size, dtype=None, device=None, requires_grad: bool = False, layout=None, out=None,
          memory_format=None, pin_memory: bool = False, **kw) -> Tensor:
    """A tensor of the given shape whose values are not initialised (zeros here; do not rely on it).

    Args:
        *size (ints or a tuple): the shape.
        dtype (dtype, optional): default ``get_default_dtype()``.
        device (device, optional): default the default device.
        requires_grad (bool): record operations for autograd (default False).
        out (Tensor, optional): the output tensor.
    """
    _check_dtype(dtype, "empty")
    shape = shape_arg(_size_kw(size, kw, "empty"), "empty")
    for s in shape:
        if s < 0:
            raise RuntimeError(f"empty(): Trying to create tensor with negative dimension {s}: {list(shape)}")
    table = _table(device)
    dt = dtype or _dt.default
    t = _finish(_make(table.empty(shape, dt.np), dt, table), requires_grad)
    if memory_format is None:
        return t
    if memory_format is _memfmt._preserve():  # (no input whose layout to keep: PyTorch's error)
        raise RuntimeError("unsupported memory format Preserve")
    return _memfmt.fresh(t, memory_format)


@_writes_out
def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False, layout=None, out=None,
         pin_memory: bool = False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``.

    The dtype is inferred from ``fill_value`` (bool, int64 or the default float dtype) unless given.

    Args:
        size (tuple of ints): the shape.
        fill_value (Number): the value.
        dtype, device, requires_grad: of the result.
    """
    if isinstance(fill_value, Tensor):
        _data_read("full() reads its fill value on the host")
        fill_value = fill_value.item()
    if dtype is None:
        # (a numpy integer is int64 as PyTorch's; a numpy bool or float the default float dtype, as PyTorch's)
        dtype = _dt.bool_ if isinstance(fill_value, bool) else _dt.int64 if isinstance(fill_value, (int, np.integer)) \
            else _dt.default
    return _fill((size,) if isinstance(size, int) else size, fill_value, dtype, device, requires_grad, "full")


def _like(input, dtype, device):
    if not isinstance(input, Tensor):
        raise TypeError(f"argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return _dt.from_python_type(dtype) or input.dtype, device or input.device


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None,
               pin_memory: bool = False) -> Tensor:
    """A tensor of zeros with the shape (and, unless given, dtype and device) of ``input``."""
    dt, dev = _like(input, dtype, device)
    t = zeros(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)
    return _memfmt.fresh(t, memory_format, input)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None,
              pin_memory: bool = False) -> Tensor:
    """A tensor of ones with the shape (and, unless given, dtype and device) of ``input``."""
    dt, dev = _like(input, dtype, device)
    t = ones(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)
    return _memfmt.fresh(t, memory_format, input)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, layout=None, memory_format=None,
               pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with the shape (and, unless given, dtype and device) of ``input``."""
    dt, dev = _like(input, dtype, device)
    t = empty(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)
    return _memfmt.fresh(t, memory_format, input)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
              memory_format=None, pin_memory: bool = False):
    """A tensor filled with ``fill_value``, with the shape (and, unless given, dtype and device) of ``input``."""
    dt, dev = _like(input, dtype, device)
    t = full(tuple(input.shape), fill_value, dtype=dt, device=dev, requires_grad=requires_grad)
    return _memfmt.fresh(t, memory_format, input)


@_writes_out
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False, out=None,
           layout=None, pin_memory: bool = False) -> Tensor:
    """A 1-D tensor of the values ``start, start + step, ...`` up to but excluding ``end``.

    With one argument it is ``end`` (``arange(5)`` is ``0..4``). The dtype is int64 when every bound is an
    integer, else the default float dtype.

    Args:
        start (Number): the first value (default 0).
        end (Number): the bound, excluded.
        step (Number): the gap between values (default 1).
        dtype (dtype, optional): the result's dtype (default: inferred from the bounds, as above).
        device (device, optional): the result's device (default: the current default device).
        requires_grad (bool): whether autograd records operations on the result (default False).

    Example:
        >>> torch.arange(1, 4)
        tensor([1, 2, 3])
        >>> torch.arange(0, 1, 0.25)
        tensor([0.0000, 0.2500, 0.5000, 0.7500])
    """
    if end is None:
        start, end = 0, start
    if isinstance(start, Tensor) or isinstance(end, Tensor) or isinstance(step, Tensor):
        _data_read("arange() of a tensor's value gives a shape that depends on the data")
    vals = start, end, step = range_args("arange", start, end, step)
    if dtype is None:
        dtype = _dt.default if any(isinstance(v, float) for v in vals) else _dt.int64
    if dtype is _dt.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    table = _table(device)
    n = max(0, math.ceil((end - start) / step))
    if dtype.is_floating_point:
        a = np.arange(n, dtype=np.float64) * step + start
    else:
        # c10 converts start/end/step to the integer type first (truncating); int64 also counts in integers
        istart, iend, istep = int(start), int(end), int(step)
        if istep == 0 and dtype is _dt.int64:  # the other integer types take the length from the float values
            raise ValueError("arange(): step must be nonzero")  # PyTorch: a ValueError for a truncated step
        if dtype is _dt.int64:
            n = max(0, (iend - istart + istep - (1 if istep > 0 else -1)) // istep)
        a = istart + np.arange(n, dtype=np.int64) * istep
    return _finish(_make(table.from_numpy(np.ascontiguousarray(a.astype(dtype.np))), dtype, table),
                   requires_grad)


def range_args(op: str, start, end, step) -> tuple:
    """arange's / range's bounds as Python numbers (a numpy number as the one it holds: np.float32(1.5) is no float,
    and its arange is float32), with PyTorch's checks: finite bounds, a nonzero step of the bounds' sign."""
    # (a numpy number as PyTorch's parser takes it: np.bool_(True) is 1.0, a float bound)
    start, end, step = (v.item() if isinstance(v, Tensor) else _dt.py_scalar(v) for v in (start, end, step))
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start:g} -> {end:g}")
    if step == 0 or step != step:  # (NaN: PyTorch's message too)
        raise RuntimeError(f"{op}(): step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError(f"{op}(): upper bound and lower bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    return start, end, step


@_writes_out
def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False, out=None,
             layout=None, pin_memory: bool = False) -> Tensor:
    """A 1-D tensor of ``steps`` values evenly spaced from ``start`` to ``end`` (both included).

    Example:
        >>> torch.linspace(0, 1, 5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    start, end = _endpoint("linspace", start, "start"), _endpoint("linspace", end, "end")
    dt = dtype or _dt.default
    table = _table(device)
    if dt is _dt.float32 or dt is _dt.float64:
        a = float_spaced(float(start), float(end), steps, dt.np)  # (PyTorch's values, bit for bit)
    elif dt.is_floating_point:
        a = np.linspace(start, end, steps, dtype=np.float64)
    else:
        a = np.trunc(_int_spaced(start, end, steps, dt))
    return _finish(_make(table.from_numpy(a.astype(dt.np)), dt, table), requires_grad)


def _endpoint(op: str, v, name: str):
    """A linspace/logspace bound: a number, or a 0-d tensor's value (PyTorch's error for another tensor)."""
    if isinstance(v, Tensor):
        if v.ndim:
            raise RuntimeError(f"{op} only supports 0-dimensional start and end tensors, but got {name} with "
                               f"{v.ndim} dimension(s).")
        return v.item()
    return v


def _to_int(v, dt) -> int:
    """A bound as c10's checked Scalar conversion to the integer dtype ``dt`` gives it (``fit_scalar``'s check, its
    error where it overflows and an unsigned dtype's wrap of a negative int), truncated."""
    v = v.item() if isinstance(v, (Tensor, np.generic)) else v
    if dt is _dt.bool_:
        return int(bool(v))
    return int(_dt.fit_scalar(v, dt))


def _int_spaced(start, end, steps: int, dt) -> np.ndarray:
    """The exponents/values of an integer-dtype linspace or logspace as PyTorch's kernels compute them: the bounds
    converted to the dtype first (``linspace(0.5, 3.5, 7, dtype=int64)`` spans 0 to 3), in float64 steps, the first
    half counted from ``start`` and the second back from ``end``."""
    if steps == 0:
        return np.zeros(0)
    s = _to_int(start, dt)
    if steps == 1:
        return np.array([float(s)])
    e = _to_int(end, dt)
    step = (e - s) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    return np.where(i < steps // 2, s + step * i, e - step * (steps - i - 1))


@_writes_out
def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None, requires_grad=False,
             out=None, layout=None, pin_memory: bool = False) -> Tensor:
    """A 1-D tensor of ``steps`` values ``base ** linspace(start, end, steps)``."""
    if steps < 0:
        raise RuntimeError("logspace(): number of steps must be non-negative")
    start, end = _endpoint("logspace", start, "start"), _endpoint("logspace", end, "end")
    dt = dtype or _dt.default
    table = _table(device)
    if dt.is_floating_point:
        a = np.logspace(start, end, steps, base=base, dtype=np.float64)
    else:
        if steps == 1:  # PyTorch fills with base ** start (start as given), converted with its overflow check
            a = np.array([float(_to_int(float(base) ** float(start), dt))])
        else:
            with np.errstate(all="ignore"):  # (PyTorch's kernel casts the double straight to the dtype, as numpy)
                a = np.power(float(base), _int_spaced(start, end, steps, dt)).astype(dt.np)
    return _finish(_make(table.from_numpy(a.astype(dt.np)), dt, table), requires_grad)


@_writes_out
def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False, out=None) -> Tensor:
    """A 2-D tensor with ones on the diagonal and zeros elsewhere.

    Args:
        n (int): the number of rows.
        m (int, optional): the number of columns (default ``n``).
        dtype, device, requires_grad: of the result.
    """
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"eye(): n and m must be non-negative, got n={n}, m={m}")
    dt = dtype or _dt.default
    table = _table(device)
    return _finish(_make(table.eye(n, n if m is None else m, dt.np), dt, table), requires_grad)


# the random factories live in ops/random.py; importing them from here keeps working
if TYPE_CHECKING:  # their types (at run time __getattr__ below imports them on first use: an import cycle)
    from .random import Generator, initial_seed, manual_seed, normal, rand, rand_like  # noqa: F401
    from .random import randint, randint_like, randn, randn_like, randperm, seed  # noqa: F401

_MOVED = ("rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like", "Generator",
          "manual_seed", "seed", "initial_seed")


def __getattr__(name: str):
    if name in _MOVED:
        from . import random  # a cycle: ops.random imports this module
        value = globals()[name] = getattr(random, name)  # found directly from now on (dropout's rand)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------------------------------
# dtype / device conversion
# ---------------------------------------------------------------------------------------------
class ToCopyBackward0(Node):
    __slots__ = ("dtype", "device")

    def backward(self, g):
        return (convert(g, self.dtype, self.device),)


def convert(input: Tensor, dtype=None, device=None, copy: bool = False) -> Tensor:
    src = input._be
    dt = dtype or input.dtype
    dst = src if device is None else _table(device)
    if dst is src and dt is input.dtype:
        if copy:
            from .shape import clone
            return clone(input)
        return input
    x = input._data
    if dst is not src:
        from .._compile.transfer import transfer  # (imported on use: compile imports ops)
        out = transfer(functools.partial(_copy_to, src, dst, None if dt is input.dtype else dt.np), x)
    else:
        out = src.cast(x, dt.np)
    if input._rg and _gs.enabled and dt.is_floating_point:
        node = ToCopyBackward0()
        node.dtype, node.device = input.dtype, src.device
        node.next_functions = (edge(input),)
        return _make(out, dt, dst, node)
    return _make(out, dt, dst)


def _copy_to(src, dst, np_dtype, x):
    """``x`` (an array of the table ``src``) copied to the table ``dst``, cast to ``np_dtype`` (None: as it is), in
    x's layout as PyTorch's copies (preserve_format: a transposed tensor arrives transposed)."""
    order = None if len(x.shape) < 2 or src.is_contiguous(x) else _memfmt.order(tuple(x.shape), tuple(src.strides(x)))
    if order is not None:
        x = src.permute(x, order)   # (row-major in memory order: moved as it lies, laid back out on arrival)
    host = src.to_numpy(x)
    if np_dtype is not None:  # (PyTorch's cast gives inf / its own value for NaN silently: numpy would warn)
        host = quiet_call(host.astype, np_dtype)
    out = dst.from_numpy(np.array(host, copy=True, order="C"))
    return out if order is None else dst.permute(out, _memfmt.inverse(order))


_PY_DTYPE_ARGS = (float, int, bool)


def parse_to_args(args, kwargs):
    """Tensor.to's overloads, as PyTorch's: ``to(device=None, dtype=None, non_blocking, copy)``, ``to(dtype,
    non_blocking, copy)``, ``to(tensor, non_blocking, copy)``, with keywords; any other combination (two dtypes, a
    dtype then a device, a positional argument also given by keyword) raises TypeError."""
    given = {k: v for k, v in kwargs.items() if k in ("device", "dtype")}
    device = kwargs.pop("device", None)
    dtype = _dt.from_python_type(kwargs.pop("dtype", None))
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    kind, nbools = None, 0  # kind: what the first positional argument was ("device", "dtype", "tensor")
    for i, a in enumerate(args):
        if isinstance(a, bool):
            # positional bools are (non_blocking, copy), in that order, as in torch
            nbools += 1
            if nbools == 2:
                copy = copy or a
            ok = nbools <= 2 and kind is not None
        elif nbools:
            ok = False
        elif isinstance(a, _dt.dtype) or a.__class__ is type and a in _PY_DTYPE_ARGS:  # to(float), to(int)...
            ok = (i == 0 and not given or kind == "device" and i == 1 and "dtype" not in given)
            dtype, kind = _dt.from_python_type(a), kind or "dtype"
        elif isinstance(a, Tensor):
            ok = i == 0 and not given
            dtype, device, kind = a.dtype, a.device, "tensor"
        elif isinstance(a, (str, Device)) or isinstance(a, int) or a is None:
            ok = i == 0 and "device" not in given or a is None and kind == "device" and i == 1
            if a is not None:
                device = a if isinstance(a, (str, Device)) else Device(f"opencl:{a}")
            kind = kind or "device"
        else:
            ok = False
        if not ok:
            got = ", ".join(["torch.dtype" if isinstance(b, _dt.dtype) else type(b).__name__ for b in args]
                            + [f"{k}={'torch.dtype' if isinstance(v, _dt.dtype) else type(v).__name__}"
                               for k, v in given.items()])
            raise TypeError(f"to() received an invalid combination of arguments - got ({got}), but expected one "
                            "of:\n * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = "
                            "False, bool copy = False, *, torch.memory_format memory_format = None)\n * (torch.dtype "
                            "dtype, bool non_blocking = False, bool copy = False, *, torch.memory_format "
                            "memory_format = None)\n * (Tensor tensor, bool non_blocking = False, bool copy = False, "
                            "*, torch.memory_format memory_format = None)")
    if device is not None and not isinstance(device, Device):
        device = Device(device)
    return device, dtype, copy
