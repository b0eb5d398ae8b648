"""The zero-gradient nodes of random sampling: a sample's gradient with respect to its distribution's parameters is
zero in PyTorch (derivatives.yaml), as is the gradient of the values an in-place sampler overwrote."""
from __future__ import annotations

from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._util import edge


class _ZeroGrad(Node):
    """The gradient of a sample with respect to its distribution's parameters is zero in PyTorch."""
    __slots__ = ("metas",)

    def backward(self, g):
        return tuple(None if m is None else _zeros(m[0], g) for m in self.metas)


def _zeros(shape, like: Tensor) -> Tensor:
    table = like._be
    return _make(table.full(tuple(shape), 0, like.dtype.np), like.dtype, table)


class NormalBackward1(_ZeroGrad):
    __slots__ = ()


class NormalBackward2(_ZeroGrad):
    __slots__ = ()


class NormalBackward3(_ZeroGrad):
    __slots__ = ()


class BernoulliBackward0(_ZeroGrad):
    __slots__ = ()


class PoissonBackward0(_ZeroGrad):
    __slots__ = ()


def _attach(r: Tensor, cls, inputs) -> Tensor:
    """``r`` as the output of a zero-gradient node over the tensors of ``inputs`` that require grad."""
    if not _gs.enabled or not any(isinstance(t, Tensor) and t._rg for t in inputs):
        return r
    node = cls()
    node.metas = tuple((tuple(t.shape),) if isinstance(t, Tensor) and t._rg else None for t in inputs)
    node.next_functions = tuple(edge(t) if isinstance(t, Tensor) and t._rg else (None, 0) for t in inputs)
    return _make(r._data, r.dtype, r._be, node)


class _InplaceZeroGrad(Node):
    """An in-place sampler run on a tensor of the graph: the earlier values get a zero gradient."""
    __slots__ = ("shape",)

    def backward(self, g):
        return (_zeros(self.shape, g),)


_NODE_NAMES: dict = {}


def _inplace_node(op: str, overload: int = 0):
    cls = _NODE_NAMES.get((op, overload))
    if cls is None:  # PyTorch's names: UniformBackward0, NormalBackward0, ExponentialBackward0, ...
        name = "".join(w.capitalize() for w in op.rstrip("_").split("_")) + f"Backward{overload}"
        cls = _NODE_NAMES[op, overload] = type(name, (_InplaceZeroGrad,), {"__slots__": ()})
    return cls
