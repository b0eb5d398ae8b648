"""How the guards key an argument's strides: a size-1 dim's stride addresses no element, so it is keyed as 0
(:func:`loose`).  ``idx[:, -8:]`` of a (1, T) batch that grows by a token per step in a sampling loop has a new row
stride at every call and the same elements: it replays.  A capture whose code reads such strides as numbers
(``x.stride()``, an ``as_strided`` geometry) checks every argument's exact strides at its replays instead
(:func:`exact`), and captures again where they differ."""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor


def loose(shape: tuple, strides: tuple) -> tuple:
    """The strides keyed for an argument of ``shape`` with a size-1 dim."""
    return tuple([0 if n == 1 else s for n, s in zip(shape, strides)])


def exact(rec: Any) -> None:
    """The recording ``rec`` (a capture.Recorder) read the strides of an array with a size-1 dim: its replay checks
    first that each argument with a size-1 dim has the capture's strides, or raises a recapturing mismatch."""
    for p in rec.paths:
        t = p.get() if p.expr.startswith("A[") and not p.expr.endswith("_grad") else None
        if not isinstance(t, Tensor) or 1 not in t.shape:
            continue
        check = f"if {p.expr}._data.strides != {t._data.strides!r}: raise MISMATCH(False, True)"
        if check not in rec.checks:
            rec.checks.append(check)
