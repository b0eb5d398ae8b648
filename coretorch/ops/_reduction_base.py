"""The reductions' shared pieces (dims, reduced shapes, the gradient's broadcast back, the node base): below
``ops.reduction`` and its sibling families (var/std, norms), which all import them; ``ops.reduction`` re-exports."""
from __future__ import annotations

from .. import dtypes as _dt
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from . import shape as _shape
from ._util import edge, norm_dims

_bool, _i64 = _dt.bool_, _dt.int64
_f16, _f32, _f64 = _dt.float16, _dt.float32, _dt.float64


def _axes(dim, ndim: int, op: str):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    axes = norm_dims(dim, ndim, op)
    return axes if ndim else None  # a 0-d tensor accepts dim 0/-1: it reduces over nothing


def _reduced_shape(shape, axes, keepdim):
    if axes is None:
        return tuple(1 for _ in shape) if keepdim else ()
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _expand_back(g: Tensor, in_shape, axes, keepdim) -> Tensor:
    """Broadcast a reduced gradient back to the input shape (differentiable)."""
    if not (g._rg and _gs.enabled):  # plain backward: a broadcast view made by the kernels directly
        table = g._be
        gd = g._data if keepdim else table.view(g._data, _reduced_shape(in_shape, axes, True))
        if gd is not None:
            return _make(table.expand(gd, in_shape), g.dtype, table, base=g if g._vbase is None else g._vbase,
                         version=g._vc)
    if not keepdim:
        g = _shape.reshape(g, _reduced_shape(in_shape, axes, True))
    return _shape.expand(g, in_shape)


class _ReduceNode(Node):
    __slots__ = ("shape", "axes", "keepdim", "out")


def _recorded(node, input, out, dt, shape, axes, keepdim, save_io=True):
    """Wrap a reduction's result as the output of ``node`` (saving input and output when its backward needs them)."""
    node.shape, node.axes, node.keepdim = shape, axes, keepdim
    node.next_functions = (edge(input),)
    r = _make(out, dt, input._be, node)
    if save_io:
        node.save(input, r)  # the output too: an in-place change of it makes the backward raise, as PyTorch
        node.out = r
    return r


for _o in (_axes, _reduced_shape, _expand_back, _ReduceNode, _recorded):
    _o.__module__ = "coretorch.ops.reduction"  # defined here, public there (as before)
del _o
