"""Comparison of two runs of one random program (coretorch/testing_fuzz.py): the first difference in errors,
dtypes, shapes, requires_grad, values (by dtype tolerance), final values of views, and gradients; and the check of
a run against its numpy references."""
from __future__ import annotations

import numpy as np

from .testing_fuzz import INTS, Result

__all__ = ["compare", "check_refs", "values_differ"]

_TOL = {"bfloat16": (1.6e-2, 1e-2), "float16": (2e-2, 2e-3), "float32": (2e-4, 1e-5), "float64": (1e-9, 1e-12)}


def values_differ(a: np.ndarray, b: np.ndarray, dtype: str | None = None) -> bool:
    """True when two results differ beyond the tolerance of their dtype (nan equals nan; inf must match)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return True
    if a.dtype.kind in "biu" or a.dtype == bool or (dtype and dtype not in _TOL):
        return not np.array_equal(a, b)
    rtol, atol = _TOL.get(dtype or "", (2e-4, 1e-5)) if dtype else _TOL.get(a.dtype.name, (2e-4, 1e-5))
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        return not np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True)


def compare(want: Result, got: Result, *, grads: bool = True, requires_grad: bool = True) -> tuple | None:
    """The first difference between two runs of one program: (step index, op, kind, what) or None.

    Float values are compared with the tolerance of the least precise float dtype the program held so far (a
    float32 rounding difference carried into a float64 result is not a float64 error)."""
    loose = None
    for i, (a, b) in enumerate(zip(want.steps, got.steps)):
        loose = _looser(loose, a.dtype)
        if a.src != b.src:
            return i, a.op, a.kind, "program"   # an earlier difference steered the generator
        if a.error != b.error:
            return i, a.op, a.kind, f"error {a.error} vs {b.error}"
        if a.error:
            continue
        if a.dtype != b.dtype:
            return i, a.op, a.kind, f"dtype {a.dtype} vs {b.dtype}"
        if a.shape != b.shape:
            return i, a.op, a.kind, "shape"
        if requires_grad and a.requires_grad != b.requires_grad:
            return i, a.op, a.kind, f"requires_grad {a.requires_grad} vs {b.requires_grad}"
        if a.value is not None and values_differ(a.value, b.value, _looser(loose, a.dtype)
                                                 if a.dtype in _TOL else a.dtype):
            return i, a.op, a.kind, "value"
    if len(want.steps) != len(got.steps):
        return len(got.steps), "?", "", "program"
    for n, v in want.final.items():
        if n not in got.final or values_differ(v, got.final[n], _looser(loose, v.dtype.name)
                                               if v.dtype.name in _TOL else None):
            i = next((j for j, s in enumerate(want.steps) if s.src.startswith(n + " =")), -1)
            s = want.steps[i]
            return i, s.op, s.kind, "aliasing (final value)"
    if grads:
        if want.grad_error != got.grad_error:
            return -1, "backward", "", f"backward error {want.grad_error} vs {got.grad_error}"
        for n, g in want.grads.items():
            h = got.grads.get(n)
            if (g is None) != (h is None) or (g is not None and h is not None
                                              and values_differ(g, h, _grad_tol(want, g))):
                return -1, "backward", _grad_culprit(want), "gradient"
    return None


def _looser(a: str | None, b: str | None) -> str | None:
    order = ("bfloat16", "float16", "float32", "float64")
    known = [d for d in (a, b) if d in order]
    return min(known, key=order.index) if known else a


def _grad_culprit(r: Result) -> str:
    return "+".join(s.op for s in r.steps if s.op != "input")


def check_refs(r: Result) -> tuple | None:
    """The first step whose value disagrees with its numpy reference (values and dtype): (index, op, what)."""
    for i, s in enumerate(r.steps):
        if s.expected is None or s.error:
            continue
        e = s.expected
        if e.dtype.kind == "f" and not np.all(np.isfinite(e)):
            continue
        if s.shape != e.shape:
            return i, s.op, f"shape {s.shape} vs numpy {e.shape}"
        if s.dtype != e.dtype.name:
            return i, s.op, f"dtype {s.dtype} vs numpy {e.dtype.name}"
        if values_differ(e, s.value, s.dtype):
            return i, s.op, "value vs numpy"
    return None


def _grad_tol(r: Result, g: np.ndarray) -> str | None:
    """Gradients flow through every step: the tolerance of the least precise float dtype the program held (and
    float32's when integers were promoted on the way)."""
    loose: str | None = g.dtype.name
    for s in r.steps:
        loose = _looser(loose, s.dtype)
        if loose == "float64" and s.dtype in INTS and s.op != "input":
            loose = "float32"
    return loose
