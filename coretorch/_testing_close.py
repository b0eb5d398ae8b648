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
        return rtol, atol  # shown as given in the message ("up to 1 allowed")
    return _TOLERANCES.get(dtype_name, (0.0, 0.0))


class _Mismatch(Exception):
    """A failed comparison: its default message, raised as ``type`` by ``assert_close`` once the item path is
    known (PyTorch's ``ErrorMeta``)."""

    def __init__(self, type_: type, message: str, structural: bool = False) -> None:
        super().__init__(message)
        self.type, self.message, self.id, self.structural = type_, message, (), structural


def _fail(msg, default: str, type_: type = AssertionError, structural: bool = False):
    """``structural``: the inputs' structure does not match (no comparison pair, sequence lengths, mapping keys):
    PyTorch raises those while pairing the inputs, without ``msg``."""
    raise _Mismatch(type_, default, structural)


def _pair_tolerances(names: tuple[str, ...], rtol, atol) -> tuple[float, float]:
    """PyTorch's ``get_tolerances``: the largest default tolerance of the two dtypes (check_dtype=False)."""
    if rtol is not None or atol is not None:
        return _tolerances(names[0], rtol, atol)
    tols = [_tolerances(n, None, None) for n in names]
    return max(t[0] for t in tols), max(t[1] for t in tols)


def _to_numpy(t):
    from . import dtypes as _dt
    t = t.detach().cpu()
    if t.dtype is _dt.bfloat16:  # ``Tensor.numpy()`` refuses bfloat16, as PyTorch's does
        t = t.to(_dt.float32)
    return t.numpy()


def _scalar_message(actual, expected, rtol: float, atol: float) -> str:
    exact = rtol == 0 and atol == 0
    d = abs(actual - expected)
    rel = math.inf if expected == 0 else d / abs(expected)
    return (f"Scalars are not {'equal' if exact else 'close'}!\n\nExpected {expected} but got {actual}.\n"
            f"Absolute difference: {d}" + ("" if exact else f" (up to {atol} allowed)") + "\n"
            f"Relative difference: {rel}" + ("" if exact else f" (up to {rtol} allowed)"))


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg,
                     check_layout: bool = True):
    if actual.shape != expected.shape:
        _fail(msg, f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.")
    if check_layout and actual.layout != expected.layout:
        _fail(msg, f"The values for attribute 'layout' do not match: {actual.layout} != {expected.layout}.")
    if check_device and actual.device != expected.device:
        _fail(msg, f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.")
    if check_dtype and actual.dtype != expected.dtype:
        _fail(msg, f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}.")
    if check_stride and actual.stride() != expected.stride():
        _fail(msg, f"The values for attribute 'stride()' do not match: {actual.stride()} != {expected.stride()}.")
    a = _to_numpy(actual)
    e = _to_numpy(expected)
    if a.dtype != e.dtype:  # compared in their common dtype, as PyTorch does with check_dtype=False
        common = np.promote_types(a.dtype, e.dtype)
        a, e = a.astype(common), e.astype(common)
    rtol, atol = _pair_tolerances((str(actual.dtype).rsplit(".", 1)[-1], str(expected.dtype).rsplit(".", 1)[-1]),
                                  rtol, atol)
    a0, e0 = a, e
    if a.dtype == np.bool_:
        a, e = a.astype(np.int64), e.astype(np.int64)
    wide = np.float64 if a.dtype.kind in "fc" or a.dtype.name == "bfloat16" else np.int64
    a64, e64 = a.astype(wide), e.astype(wide)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if wide is np.float64:
            close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
        else:  # |a - e| exactly, in uint64: int64's a - e wraps (2**62 - -2**62 is negative) and passed
            u, v = a64.view(np.uint64), e64.view(np.uint64)
            dist = np.where(a64 >= e64, u - v, v - u).astype(np.float64)
            close = (a64 == e64) | (dist <= atol + rtol * np.abs(e64.astype(np.float64)))
        if close.all():
            return
        diff = np.abs(a64.astype(np.float64) - e64.astype(np.float64))
        rel = diff / np.abs(e64.astype(np.float64))
    bad = ~close
    exact = rtol == 0 and atol == 0
    if a.ndim == 0:  # PyTorch reports a 0-d mismatch as one between scalars
        x, y = a0.item(), e0.item()
        _fail(msg, _scalar_message(x, y, rtol, atol))
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
    elementwise, with the same shape (and device and dtype, unless told otherwise).  Tensors, numpy arrays, Python
    numbers, ``None`` and (nested) sequences and mappings of them are accepted, as in ``torch.testing.assert_close``;
    the default tolerances depend on the dtype (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7; integers:
    exact; the larger of the two dtypes' with ``check_dtype=False``).  A failure inside a container names the item
    (``The failure occurred for item ['a'][1]``)."""
    opts = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                check_device=check_device, check_dtype=check_dtype, check_stride=check_stride,
                check_layout=check_layout)
    try:
        _compare(actual, expected, (), opts)
    except _Mismatch as m:
        if isinstance(msg, str) and not m.structural:
            text = msg
        else:
            text = m.message
            if m.id:
                text += f"\n\nThe failure occurred for item {''.join(str([k]) for k in m.id)}"
            if callable(msg) and not m.structural:
                text = msg(text)
        raise m.type(text) from None


def _compare(actual: Any, expected: Any, path: tuple, opts: dict) -> None:
    try:
        _compare_one(actual, expected, path, opts)
    except _Mismatch as m:
        if not m.id:
            m.id = path
        raise


def _compare_one(actual: Any, expected: Any, path: tuple, opts: dict) -> None:
    from .tensor import Tensor
    rtol, atol, equal_nan = opts["rtol"], opts["atol"], opts["equal_nan"]
    if rtol is not None or atol is not None:
        _tolerances("", rtol, atol)  # both or neither, checked before anything is compared
    if actual is None or expected is None:
        if actual is expected:
            return
        _fail(None, f"None mismatch: {actual} is not {expected}")
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        from . import from_numpy
        actual, expected = (from_numpy(x if min(x.strides, default=0) >= 0 else x.copy()) for x in (actual, expected))
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if not opts["allow_subclasses"] and type(actual) is not type(expected):
            _fail(None, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                        f"{type(expected)}.", TypeError, True)
        _compare_tensors(actual, expected, rtol, atol, equal_nan, opts["check_device"], opts["check_dtype"],
                         opts["check_stride"], None, opts["check_layout"])
        return
    bools = (bool, np.bool_)
    if isinstance(actual, bools) and isinstance(expected, bools):
        if bool(actual) != bool(expected):
            _fail(None, f"Booleans mismatch: {actual} is not {expected}")
        return
    numbers = (int, float, np.integer, np.floating)
    if isinstance(actual, numbers) and isinstance(expected, numbers) and not isinstance(actual, bools) \
            and not isinstance(expected, bools):
        x = actual.item() if isinstance(actual, np.generic) else actual
        y = expected.item() if isinstance(expected, np.generic) else expected
        if opts["check_dtype"] and type(x) is not type(y):
            _fail(None, f"The (d)types do not match: {type(x)} != {type(y)}.")
        r, a = _pair_tolerances(tuple("float64" if isinstance(v, float) else "int64" for v in (x, y)), rtol, atol)
        if x == y or (equal_nan and math.isnan(x) and math.isnan(y)):
            return
        d = abs(x - y)
        if math.isfinite(d) and d <= a + r * abs(y):
            return
        _fail(None, _scalar_message(x, y, r, a))
    if isinstance(actual, _abc.Mapping) and isinstance(expected, _abc.Mapping):
        if set(actual) != set(expected):
            missing = sorted(set(expected) - set(actual), key=repr)
            extra = sorted(set(actual) - set(expected), key=repr)
            _fail(None, f"The keys of the mappings do not match:\nMissing keys in the actual mapping: {missing}\n"
                        f"Additional keys in the actual mapping: {extra}", AssertionError, True)
        for k in expected:
            _compare(actual[k], expected[k], (*path, k), opts)
        return
    seq = (_abc.Sequence,)
    if isinstance(actual, seq) and isinstance(expected, seq) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            _fail(None, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", AssertionError, True)
        for i, (x, y) in enumerate(zip(actual, expected)):
            _compare(x, y, (*path, i), opts)
        return
    _fail(None, f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.",
          TypeError, True)


_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated ``torch.testing.assert_allclose`` (FutureWarning): ``assert_close`` with its own looser default
    tolerances, NaNs equal, dtypes and strides unchecked; non-tensor inputs become tensors (``expected`` in
    ``actual``'s dtype)."""
    import warnings

    import coretorch as torch
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, torch.Tensor):
        actual = torch.tensor(actual)
    if not isinstance(expected, torch.Tensor):
        expected = torch.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        tols = [_ALLCLOSE_TOLERANCES.get(str(t.dtype).rsplit(".", 1)[-1], (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(t[0] for t in tols), max(t[1] for t in tols)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)
