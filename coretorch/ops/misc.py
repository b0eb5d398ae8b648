"""Small top-level ops and Tensor methods of PyTorch's API that real scripts touch: the complex-number views of a
real tensor (``conj``, ``real``, ``resolve_conj``, ... are the tensor itself, ``imag`` raises, ``angle`` is 0 or pi),
``positive``, the dtype/shape predicates, ``scalar_tensor``, ``empty_strided``/``empty_permuted``, ``frombuffer``
and the window functions (``hann_window``, ...: periodic by default, computed on the device in the float dtype).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad, state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import creation as _C
from ._out import write_out
from ._util import edge
from .pointwise import add, cos, isnan, lt, mul, sqrt, sub, where
from .special import i0

__all__: list[str] = ["angle", "conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "is_conj",
                      "is_neg", "real", "imag", "positive", "is_signed", "is_same_size", "get_device",
                      "scalar_tensor", "empty_strided", "empty_permuted", "frombuffer", "hann_window",
                      "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
METHODS: dict = {}


# ---- a real tensor's complex views ----------------------------------------------------------------------------
class AngleBackward0(Node):
    """The angle of a real number is piecewise constant: a zero gradient (PyTorch's)."""
    __slots__ = ("shape", "dtype")

    def backward(self, g):
        return (_C.zeros(self.shape, dtype=self.dtype, device=g.device),)


def angle(input: Tensor, *, out=None) -> Tensor:
    """torch.angle of a real tensor: ``pi`` where it is negative, 0 elsewhere, NaN where it is NaN (integer and bool
    inputs give the default float dtype)."""
    x = input if input.dtype.is_floating_point else input.to(_dt.default)
    with no_grad():
        r = where(isnan(x), x, mul(lt(x, 0).to(x.dtype), math.pi))  # (pi rounded once, to x's dtype)
    if _gs.enabled and input._rg:
        node = AngleBackward0()
        node.shape, node.dtype = tuple(input.shape), input.dtype
        node.next_functions = (edge(input),)
        r = _make(r._data, r.dtype, r._be, node)
    return r if out is None else write_out("angle", out, r, inputs=(input,))


def conj(input: Tensor) -> Tensor:
    """torch.conj: a real tensor is its own conjugate (the tensor itself, as PyTorch returns it)."""
    return input


def conj_physical(input: Tensor) -> Tensor:
    """torch.conj_physical: the tensor itself for a real tensor (PyTorch's)."""
    return input


def conj_physical_(input: Tensor) -> Tensor:
    """In-place conj_physical: nothing to do for a real tensor."""
    return input


def resolve_conj(input: Tensor) -> Tensor:
    """torch.resolve_conj: the tensor itself (a real tensor has no conjugate bit)."""
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """torch.resolve_neg: the tensor itself (coretorch tensors have no negative bit)."""
    return input


def is_conj(input: Tensor) -> bool:
    """torch.is_conj: False (no lazily conjugated tensors)."""
    return False


def is_neg(input: Tensor) -> bool:
    """torch.is_neg: False (no lazily negated tensors)."""
    return False


def real(input: Tensor) -> Tensor:
    """torch.real: a real tensor's real part is the tensor itself."""
    return input


def imag(input: Tensor) -> Tensor:
    """torch.imag: raises for a real tensor, as PyTorch (coretorch has no complex dtypes)."""
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def positive(input: Tensor) -> Tensor:
    """torch.positive: the tensor itself (``+x``); a bool tensor raises, as PyTorch."""
    if input.dtype is _dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def is_signed(input: Tensor) -> bool:
    """Whether the dtype is signed (the floating and signed integer types; not uint8 or bool)."""
    return input.dtype.is_signed


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


def get_device(input: Tensor) -> int:
    """The device index of the tensor: -1 on the cpu, the index elsewhere (PyTorch's convention)."""
    d = input.device
    return -1 if d.type == "cpu" else (d.index or 0)


# ---- creation -------------------------------------------------------------------------------------------------
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory: bool | None = False,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` is given (``scalar_tensor(True)``
    is 1.0)."""
    if isinstance(s, Tensor):
        s = s.item()
    return _C.full((), s, dtype=dtype or _dt.default, device=device, requires_grad=requires_grad)


def _sizes(size) -> tuple:
    return tuple(int(v) for v in (size if isinstance(size, (tuple, list)) or hasattr(size, "__iter__") else (size,)))


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` viewing its own storage with ``stride`` (element strides)."""
    size, stride = _sizes(size), _sizes(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} != {len(size)}")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError("empty_strided: negative sizes or strides are not supported")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    base = _C.empty((extent,), dtype=dtype, device=device)
    r = base.as_strided(size, stride)
    return r.requires_grad_() if requires_grad else r


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` whose dims are laid out in memory in the order ``physical_layout``
    (outermost first: ``empty_permuted((N, C, H, W), (0, 2, 3, 1))`` is channels-last)."""
    size, perm = _sizes(size), _sizes(physical_layout)
    if len(size) != len(perm):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(perm)}")
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(perm)} is not a permutation")
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    r = _C.empty(tuple(size[p] for p in perm), dtype=dtype, device=device).permute(*inv)
    return r.requires_grad_() if requires_grad else r


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D cpu tensor over the bytes of an object exposing the buffer protocol (shared, not copied, as PyTorch's;
    a read-only buffer warns, as PyTorch)."""
    dtype = _dt.from_python_type(dtype)
    mv = memoryview(buffer)
    nbytes = mv.nbytes
    isz = np.dtype(dtype.np).itemsize
    if nbytes == 0 or count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if offset < 0 or offset >= nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({nbytes} "
                         f"bytes) minus 1")
    if count < 0:
        if (nbytes - offset) % isz:
            raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({isz})")
        count = (nbytes - offset) // isz
    elif offset + count * isz > nbytes:
        raise ValueError(f"requested buffer length ({count} * {isz} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({nbytes} bytes)")
    if mv.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to a "
                      "tensor. This type of warning will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=2)
    arr = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    if mv.readonly:
        arr = arr.copy()  # (numpy refuses a writable view of a read-only buffer; the values are the same)
    r = _C.from_numpy(arr)
    return r.requires_grad_() if requires_grad else r


# ---- window functions -----------------------------------------------------------------------------------------
def _window(name: str, n: int, periodic: bool, dtype, device, requires_grad: bool, fn) -> Tensor:
    d = dtype or _dt.default
    if not d.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if n <= 1:
        r = _C.ones((n,), dtype=d, device=device)
    else:
        m = n + 1 if periodic else n  # periodic: the symmetric window one longer, its last point dropped
        k = _C.arange(0, n, dtype=d, device=device)
        r = fn(k, m - 1)
    return r.requires_grad_() if requires_grad else r


def _cosines(*coef: float):
    def fn(k: Tensor, m: int) -> Tensor:
        r = _C.full_like(k, coef[0])
        for j, c in enumerate(coef[1:], 1):
            r = add(r, mul(cos(mul(k, 2.0 * math.pi * j / m)), c * (-1) ** j))
        return r
    return fn


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi k / (N - 1))`` (``N`` one more than the length when periodic)."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, _cosines(0.5, 0.5))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, layout=None, device=None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """The Hamming window ``alpha - beta cos(2 pi k / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, _cosines(alpha, beta))


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosines(0.42, 0.5, 0.08))


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The Bartlett (triangular) window ``1 - |2 k / (N - 1) - 1|``."""
    def fn(k: Tensor, m: int) -> Tensor:
        return sub(1.0, sub(mul(k, 2.0 / m), 1.0).abs())
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, fn)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None,
                  device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2 k / (N - 1) - 1)^2)) / I0(beta)``."""
    def fn(k: Tensor, m: int) -> Tensor:
        u = sub(mul(k, 2.0 / m), 1.0)
        return mul(i0(mul(sqrt(sub(1.0, mul(u, u)).clamp_min(0.0)), beta)), 1.0 / float(np.i0(beta)))
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, fn)


METHODS.update({
    "angle": angle, "conj": conj, "conj_physical": conj_physical, "conj_physical_": conj_physical_,
    "resolve_conj": resolve_conj, "resolve_neg": resolve_neg, "is_conj": is_conj, "is_neg": is_neg,
    "positive": positive, "is_signed": is_signed, "is_same_size": is_same_size, "get_device": get_device,
    # attributes in PyTorch, not methods: x.real is x, x.imag raises
    "real": property(real, doc="The real part: the tensor itself (a real tensor)."),
    "imag": property(imag, doc="The imaginary part: raises for a real tensor, as PyTorch."),
})
