"""Helpers of the elementwise math families (``special.py``, ``_ldexp.py``): ``out=`` writes with the overlap
check, pass-through nodes named as PyTorch's grad_fn, and the argument check of ops taking a tensor first."""
from __future__ import annotations

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._out import write_out
from ._util import edge
from .pointwise import mul


def _out(r: Tensor, out, op: str, *inputs) -> Tensor:
    """``inputs``: checked against ``out`` for memory overlap (PyTorch's elementwise kernels refuse a partial one)."""
    return write_out(op, out, r, inputs=inputs)


def _bool_out(r: Tensor, out, op: str, *inputs) -> Tensor:
    """``_out`` for the bool tests whose PyTorch kernels take a bool ``out`` only (isposinf, isneginf, signbit):
    another dtype is refused instead of receiving 0/1."""
    if out is not None and getattr(out, "dtype", None) is not _dt.bool_:
        raise RuntimeError(f"{op} does not support non-boolean outputs.")
    return write_out(op, out, r, inputs=inputs)


def _named(r: Tensor, cls) -> Tensor:
    """``r`` (a composite's result) as the output of a pass-through node named as PyTorch's grad_fn for the op."""
    if not (r.requires_grad and _gs.enabled):
        return r
    node = cls()
    node.next_functions = (edge(r),)
    return _make(r._data, r.dtype, r._be, node)


def _passthrough(name: str):
    return type(name, (Node,), {"__slots__": (), "backward": lambda self, g: (g,)})


def _sq(t):
    return mul(t, t) if isinstance(t, Tensor) else t * t


def _x(node):
    return node.saved()[0]


def _float(t: Tensor) -> Tensor:
    return t if t.dtype.is_floating_point else t.to(_dt.default)


def _check(op: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(t).__name__}")
