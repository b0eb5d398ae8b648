"""torch.tensor's reading of Python data: a nested sequence of numbers, numpy numbers and arrays and tensors to a
numpy array with PyTorch's dtype inference, its checked conversion to an integer dtype, and PyTorch's errors for
malformed data (creation.tensor and as_tensor use it)."""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor


class _Unpack(ValueError):
    """A Python int beyond int64 (PyTorch's ValueError), unless the dtype asked for is a float or bool one."""


def _infer_np(data):
    """Python data -> numpy array with PyTorch's dtype inference."""
    if isinstance(data, np.ndarray):
        _dt.from_numpy_dtype(data.dtype)
        return data, _dt.from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return np.asarray(data), _dt.from_numpy_dtype(data.dtype)
    typed = None
    if isinstance(data, (list, tuple)):
        typed = _typed_dtype(data)
        data = _flatten_tensors(data)
    try:
        arr = np.array(data)
    except ValueError as e:
        msg = _ragged_message(data)
        if msg is not None and msg.startswith("tensor(): mixed"):  # (PyTorch: a TypeError, 'not a sequence')
            raise TypeError(msg) from None
        raise ValueError(msg or f"tensor(): could not build a tensor from {e}") from None
    k = arr.dtype.kind
    if k == "f":
        dt = _dt.default
        if typed is None and arr.size and bool((np.abs(arr) >= 2.0 ** 63).any()) \
                and not any(type(v) is float for v in np.array(data, dtype=object).reshape(-1)):
            raise _Unpack("Overflow when unpacking long long")  # ([1, 2 ** 63]: numpy made ints beyond int64 floats)
    elif k in "iu":
        dt = _dt.int64
        if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise _Unpack("Overflow when unpacking long long")
    elif k == "b":
        dt = _dt.bool_
    else:
        if k == "O" and arr.size and all(type(v) is int or type(v) is bool for v in arr.reshape(-1)):
            raise _Unpack("Overflow when unpacking long long")  # ints beyond int64
        if k == "O" and arr.size and all(type(v) in (int, float, bool) for v in arr.reshape(-1)):
            return arr.astype(np.float64), _dt.default  # ([1.5, 2 ** 70]: floats, the int too, as PyTorch's)
        bad = data
        if k in "OUS" and arr.ndim:  # the first element that is no number names itself, as in PyTorch
            flat = arr.reshape(-1) if k == "O" else np.array(data, dtype=object).reshape(-1)
            bad = next((v for v in flat if not isinstance(v, (int, float, bool, np.generic))), data)
        if isinstance(bad, (str, bytes)):
            if bad is not data:  # (PyTorch: a str first is a dimension too many, a str after a number no number)
                first = data
                while isinstance(first, (list, tuple)) and first:
                    first = first[0]
                if isinstance(first, str):
                    raise ValueError(f"too many dimensions '{type(bad).__name__}'")
                raise TypeError(f"new(): invalid data type '{type(bad).__name__}'")
            raise TypeError(f"Could not infer dtype of {type(bad).__name__}")
        raise RuntimeError(f"Could not infer dtype of {type(bad).__name__}")
    return arr, typed or dt


_PY_DTYPES = {float: None, int: _dt.int64, bool: _dt.bool_}  # (float: the default dtype)


def _typed_dtype(seq):
    """PyTorch's dtype of a nested sequence holding numpy scalars or arrays or tensors, which keep their own dtype
    (``tensor([np.float64(1.5)])`` is float64, ``[np.int16(3)]`` int16): the promotion of every element's type (a
    Python float: the default dtype, an int: int64, a bool: bool); None when every element is a Python number."""
    kinds: set = set()
    typed: set = set()
    stack = [seq]
    while stack:
        for v in stack.pop():
            t = type(v)
            if t is float or t is int or t is bool:
                kinds.add(t)
            elif t is list or t is tuple:
                stack.append(v)
            elif isinstance(v, Tensor):
                typed.add(v.dtype)
            elif isinstance(v, (np.generic, np.ndarray)) and v.dtype.kind in "biuf":
                try:
                    typed.add(_dt.from_numpy_dtype(v.dtype))
                except (TypeError, ValueError):  # (uint16 and the like: as the Python number it holds)
                    kinds.add(float if v.dtype.kind == "f" else int)
    if not typed:
        return None
    out = None
    for d in typed | {_PY_DTYPES[k] or _dt.default for k in kinds}:
        out = d if out is None else _dt.promote_types(out, d)
    return out


def _check_fits(arr: np.ndarray, dt) -> None:
    """PyTorch's checked conversion of Python numbers into an integer dtype (tensor([300.], dtype=int8) raises,
    as x.fill_(300) does): NaN, inf and out-of-range values raise; a negative int wraps into uint8, a float
    does not."""
    k = arr.dtype.kind
    if dt.category != 1 or not arr.size or k not in "fiu":
        return
    info = np.iinfo(dt.np)
    lo, hi = int(info.min), int(info.max)
    if k == "f":
        with np.errstate(invalid="ignore"):
            bad = bool(np.any(~(arr >= lo) | (arr > hi)))  # NaN fails arr >= lo
    else:
        bad = bool(np.any((arr < (-hi if lo == 0 else lo)) | (arr > hi)))
    if bad:
        raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")


def _mixed_fit(data, arr: np.ndarray, dt) -> np.ndarray:
    """_check_fits refused a list made float by numpy: PyTorch converts each Python number by its own type, so an
    int in a list of floats still wraps into uint8 (tensor([2.0, -1], dtype=uint8) is [2, 255]).  Element by
    element (only on this failure path); raises _check_fits's error where an element does not fit."""
    if arr.dtype.kind != "f" or not isinstance(data, (list, tuple)):
        _check_fits(arr, dt)
    info = np.iinfo(dt.np)
    lo, hi = int(info.min), int(info.max)
    flat = np.array(_flatten_tensors(data), dtype=object).reshape(-1)  # the Python numbers, types kept
    out = []
    for v in flat:
        if isinstance(v, (bool, int, np.integer)):
            v = int(v)
            if not -2 ** 63 <= v < 2 ** 63:  # (PyTorch unpacks each int as an int64 first)
                raise ValueError("Overflow when unpacking long long")
            if lo == 0 and -hi <= v < 0:
                v += hi + 1  # c10 lets a negative integer wrap into an unsigned type
            ok = lo <= v <= hi
        else:
            v = float(v)
            ok = lo <= v <= hi  # (NaN fails)
            v = int(v) if ok else v
        if not ok:
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
        out.append(v)
    return np.array(out, dtype=dt.np).reshape(arr.shape)


def _ragged_message(data, dim: int = 0):
    """PyTorch's message for the first sequence whose length differs from its siblings'."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    lens = [len(x) if isinstance(x, (list, tuple, np.ndarray)) else None for x in data]
    first = lens[0]
    for n in lens[1:]:
        if n != first:
            if first is None or n is None:
                return f"tensor(): mixed numbers and sequences at dim {dim}"
            return f"expected sequence of length {first} at dim {dim + 1} (got {n})"
    for x in data:
        m = _ragged_message(x, dim + 1) if not isinstance(x, np.ndarray) else None
        if m:
            return m
    return None


def _flatten_tensors(seq):
    """A nested sequence with its tensors as the numbers they hold: PyTorch reads a tensor in a sequence as a
    number (its one element, whatever its shape: ``tensor([tensor([1.5])])`` is ``tensor([1.5])``); a tensor of
    several elements raises as its ``__index__`` (integers, bool) or ``__float__`` does."""
    out = []
    for x in seq:
        if isinstance(x, Tensor):
            if x.numel() != 1:
                if x.dtype.is_floating_point:
                    raise ValueError("only one element tensors can be converted to Python scalars")
                raise TypeError("only integer tensors of a single element can be converted to an index")
            out.append(x.item())
        elif isinstance(x, (list, tuple)):
            out.append(_flatten_tensors(x))
        else:
            out.append(x)
    return out
