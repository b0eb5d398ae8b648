"""``torch.testing.assert_close`` (PyTorch's semantics and messages): tensors, Python scalars and nested
sequences/mappings of them are compared with dtype-dependent default tolerances."""
from __future__ import annotations

import collections.abc as _abc
import math
from typing import Any

import numpy as np

# PyTorch's default (rtol, atol) per dtype; integer and bool dtypes compare exactly
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7)}


def _tolerances(dtype_name: str, rtol, atol) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return float(rtol), float(atol)
    return _TOLERANCES.get(dtype_name, (0.0, 0.0))


def _fail(msg, default: str):
    raise AssertionError(default if msg is None else (msg(default) if callable(msg) else msg))


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg):
    if actual.shape != expected.shape:
        _fail(msg, f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.")
    if check_device and actual.device != expected.device:
        _fail(msg, f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.")
    if check_dtype and actual.dtype != expected.dtype:
        _fail(msg, f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.")
    if check_stride and actual.stride() != expected.stride():
        _fail(msg, f"The values for attribute 'stride()' do not match: {actual.stride()} != {expected.stride()}.")
    a = actual.detach().cpu().numpy()
    e = expected.detach().cpu().numpy()
    if a.dtype != e.dtype:  # compared in their common dtype, as PyTorch does with check_dtype=False
        common = np.promote_types(a.dtype, e.dtype)
        a, e = a.astype(common), e.astype(common)
    rtol, atol = _tolerances(str(actual.dtype).rsplit(".", 1)[-1], rtol, atol)
    if a.dtype == np.bool_:
        a, e = a.astype(np.int64), e.astype(np.int64)
    wide = np.float64 if a.dtype.kind in "fc" or a.dtype.name == "bfloat16" else np.int64
    a64, e64 = a.astype(wide), e.astype(wide)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan) if wide is np.float64 \
            else np.abs(a64 - e64) <= atol + rtol * np.abs(e64)
        if close.all():
            return
        diff = np.abs(a64.astype(np.float64) - e64.astype(np.float64))
        rel = diff / np.abs(e64.astype(np.float64))
    bad = ~close
    exact = rtol == 0 and atol == 0
    n, total = int(bad.sum()), a.size
    lines = [f"Tensor-likes are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {n} / {total} ({100.0 * n / total:.1f}%)"]
    for label, values, allowed in (("absolute", diff, atol), ("relative", rel, rtol)):
        masked = np.where(bad, values, -np.inf)
        masked = np.where(np.isnan(values) & bad, np.inf, masked)  # a NaN mismatch is the greatest
        idx = np.unravel_index(int(np.argmax(masked)), a.shape) if a.ndim else ()
        v = values[idx] if a.ndim else values
        shown = int(v) if wide is np.int64 and label == "absolute" and math.isfinite(v) else float(v)
        where = f" at index {tuple(int(i) for i in idx)}" if a.ndim else ""
        lines.append(f"Greatest {label} difference: {shown}{where}"
                     + ("" if exact else f" (up to {allowed} allowed)"))
    _fail(msg, "\n".join(lines))


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Any = None) -> None:
    """Assert that ``actual`` and ``expected`` are close: ``|actual - expected| <= atol + rtol * |expected|``
    elementwise, with the same shape (and device and dtype, unless told otherwise).  Tensors, Python numbers
    and (nested) sequences and mappings of them are accepted, as in ``torch.testing.assert_close``; the default
    tolerances depend on the dtype (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7; integers: exact)."""
    from .tensor import Tensor
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if not allow_subclasses and type(actual) is not type(expected):
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                            f"{type(expected)}.")
        _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg)
        return
    scalars = (bool, int, float)
    if isinstance(actual, scalars) and isinstance(expected, scalars):
        if check_dtype and type(actual) is not type(expected):
            _fail(msg, f"The values for attribute 'dtype' do not match: {type(actual)} != {type(expected)}.")
        kind = "float64" if isinstance(actual, float) or isinstance(expected, float) else "int64"
        r, a = _tolerances(kind, rtol, atol)
        x, y = float(actual), float(expected)
        if (equal_nan and math.isnan(x) and math.isnan(y)) or abs(x - y) <= a + r * abs(y):
            return
        d = abs(x - y)
        _fail(msg, f"Scalars are not {'equal' if r == 0 and a == 0 else 'close'}!\n\nExpected {expected} but got "
                   f"{actual}.\nAbsolute difference: {d} (up to {a} allowed)\nRelative difference: "
                   f"{d / abs(y) if y else math.inf} (up to {r} allowed)")
        return
    if isinstance(actual, _abc.Mapping) and isinstance(expected, _abc.Mapping):
        if set(actual) != set(expected):
            missing = sorted(set(expected) - set(actual), key=repr)
            extra = sorted(set(actual) - set(expected), key=repr)
            _fail(msg, f"The keys of the mappings do not match:\nMissing keys in the actual mapping: {missing}\n"
                       f"Additional keys in the actual mapping: {extra}")
        for k in expected:
            assert_close(actual[k], expected[k], allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                         equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                         check_layout=check_layout, check_stride=check_stride, msg=msg)
        return
    seq = (_abc.Sequence,)
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            _fail(msg, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for x, y in zip(actual, expected):
            assert_close(x, y, allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                         check_stride=check_stride, msg=msg)
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")
