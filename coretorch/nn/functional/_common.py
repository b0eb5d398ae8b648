"""Helpers shared by the nn.functional families (graph recording, argument checks)."""
from __future__ import annotations

from ... import dtypes as _dt
from ...autograd.grad_mode import no_grad
from ...autograd.grad_mode import state as _gs
from ...autograd.graph import Node
from ...ops import _memfmt
from ...ops._util import edge as _edge
from ...tensor import Tensor, _make

_f64 = _dt.float64
_i64 = _dt.int64


_no_grad = no_grad  # the one grad-mode switch (autograd.grad_mode)


def _needs_graph(*tensors) -> bool:
    if _gs.enabled:
        for t in tensors:
            if t is not None and t._rg:
                return True
    return False


def _record(node: Node, out, dt, table, *inputs) -> Tensor:
    node.next_functions = tuple([_edge(t) if t is not None else (None, 0) for t in inputs])
    return _make(out, dt, table, node)


def _channels_last_like(out: Tensor, *inputs) -> Tensor:
    """The 4-D result ``out`` laid out channels-last when one of the 4-D ``inputs`` (None allowed) suggests that
    layout, as PyTorch's CPU convolution, pooling and upsampling kernels write their result in the input's
    suggest_memory_format() (a convolution: the input's or the weight's); else ``out`` as it is (row-major)."""
    for t in inputs:  # (a row-major input, the common case, is never channels-last: one cached flag read)
        if t is not None and not t.is_contiguous() and t.ndim == 4 and out.ndim == 4 and \
                _memfmt.strides_like_channels_last(tuple(t.shape), t.stride()):
            from ..._compat import channels_last  # (on use: _compat imports the ops)
            return out.contiguous(memory_format=channels_last)
    return out


def _check_tensor(op: str, name: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position 1) must be Tensor, not {type(t).__name__}")


def _ntuple(v, n: int, name: str = "") -> tuple:
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(v) * n
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match "
                               f"the convolution dimensions, but got {name}={list(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n

