"""``torch.sym_*``: the symbolic-shape helpers that size arithmetic in export-friendly code calls.

coretorch has no symbolic integers (nothing traces shapes), so each helper is its plain-Python meaning, as PyTorch's
own fallback for concrete numbers: ``sym_max(a, b)`` is ``max`` (a float when either is a float), ``sym_int`` truncates,
``sym_not`` is ``not``, ``sym_ite(b, t, f)`` is ``t if b else f``.
"""
from __future__ import annotations

import builtins
import math
from typing import Any, Iterable

import numpy as np

__all__ = ["sym_float", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum"]

_ALL = (np.integer, np.floating, int, float)
_FLOAT = (np.floating, float)


def _check_number(a: Any) -> None:
    # PyTorch asserts the operands of sym_max/sym_min are Python or numpy numbers (a tensor is refused)
    assert isinstance(a, _ALL), f"expected {_ALL}, got {type(a)}"


def sym_max(a: Any, b: Any) -> Any:
    """``max(a, b)``; a float when either operand is a float (PyTorch's rule for concrete numbers)."""
    _check_number(a)
    _check_number(b)
    m = builtins.max(a, b)
    return builtins.float(m) if isinstance(a, _FLOAT) or isinstance(b, _FLOAT) else m


def sym_min(a: Any, b: Any) -> Any:
    """``min(a, b)``; a float when either operand is a float (PyTorch's rule for concrete numbers)."""
    _check_number(a)
    _check_number(b)
    m = builtins.min(a, b)
    return builtins.float(m) if isinstance(a, _FLOAT) or isinstance(b, _FLOAT) else m


def sym_int(a: Any) -> int:
    """``int(a)``: truncation toward zero (``sym_int(-2.7) == -2``)."""
    return builtins.int(a)


def sym_float(a: Any) -> float:
    """``float(a)``."""
    return a if isinstance(a, builtins.float) else builtins.float(a)


def sym_not(a: Any) -> bool:
    """``not a``."""
    return not a


def sym_sqrt(a: Any) -> float:
    """``math.sqrt(a)``."""
    return math.sqrt(a)


def sym_ite(b: Any, t: Any, f: Any) -> Any:
    """``t if b else f``; as PyTorch, ``b`` must be a bool and ``t``, ``f`` of one type."""
    assert isinstance(b, bool) and type(t) is type(f)
    return t if b else f


def sym_sum(args: Iterable) -> Any:
    """``sum(args)`` (0 for none)."""
    return builtins.sum(args)
