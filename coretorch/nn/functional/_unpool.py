"""nn.functional max unpooling: max_unpool1d/2d/3d, the partial inverse of max pooling (values scattered into
zeros at the pooling indices; backward: a gather of the gradient at those indices)."""
from __future__ import annotations

import math

from ...autograd.graph import Node
from ...ops import creation as _C
from ...ops import indexing as _I
from ...ops import scatter as _SC
from ...ops import shape as _S
from ...ops._rangecheck import any_outside
from ...tensor import Tensor, _make
from ._common import _check_tensor, _i64, _needs_graph, _no_grad, _record

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _tuple(v, n: int) -> tuple:
    if isinstance(v, (tuple, list)):
        return tuple(int(a) for a in v) * (n if len(v) == 1 else 1)
    return (int(v),) * n


def _unpool_output_size(input: Tensor, kernel_size: tuple, stride: tuple, padding: tuple, output_size) -> list:
    """PyTorch's: the default size (in - 1) * stride + kernel - 2 * padding, or the checked ``output_size``."""
    n = len(kernel_size)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {lo} and {hi})')
    return [int(v) for v in output_size]


class _UnpoolNode(Node):
    """The indices are saved as PyTorch saves them: an in-place change of them before the backward raises."""
    __slots__ = ("shape",)

    def backward(self, g):
        n, c = self.shape[:2]
        _, idx = self.saved()
        return (_I.gather(g.reshape(n, c, math.prod(g.shape[2:])), 2, idx).reshape(self.shape),)


class MaxUnpool2DBackward0(_UnpoolNode):
    __slots__ = ()


class MaxUnpool3DBackward0(_UnpoolNode):
    __slots__ = ()


def _unpool(op: str, node_cls, input: Tensor, indices: Tensor, out_sp: list, nsp: int) -> Tensor:
    _check_tensor(op, "input", input)
    if input.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"Input to {op} should be a {nsp + 1}d or {nsp + 2}d Tensor, but got a tensor with "
                           f"{input.ndim} dimensions.")
    if not isinstance(indices, Tensor) or indices.dtype is not _i64:
        got = indices.dtype._tname[:-6] if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(f"elements in indices should be type int64 but got: {got}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op.replace('unpooling', 'unpool')}\" not implemented for "
                                  f"'{input.dtype._tname[:-6]}'")
    batched = input.ndim == nsp + 2
    x = input if batched else _S.unsqueeze(input, 0)
    idx = indices if batched else _S.unsqueeze(indices, 0)
    n, c = x.shape[:2]
    size = math.prod(out_sp)
    flat_i = _S.contiguous(idx).reshape(n, c, math.prod(idx.shape[2:]))
    if flat_i.numel():
        if any_outside(flat_i, 0, size):  # the error path reads the indices back: PyTorch names the first bad one
            flat = flat_i.cpu().numpy().reshape(-1)
            bad = int(flat[(flat < 0) | (flat >= size)][0])
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{'x'.join(str(v) for v in out_sp)})")
    table = x._be
    with _no_grad():
        z = _C.zeros(n, c, size, dtype=x.dtype, device=x.device)
        out = z if not flat_i.numel() else _SC.scatter(z, 2, flat_i, _S.contiguous(x).reshape(flat_i.shape))
        out = out.reshape((n, c) + tuple(out_sp))
    if _needs_graph(x):
        node = node_cls()
        node.shape = tuple(x.shape)
        node.save(indices, flat_i)
        res = _record(node, out._data, x.dtype, table, x)
    else:
        res = _make(out._data, x.dtype, table)
    return res if batched else _S.squeeze(res, 0)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Inverse of max_pool1d: (N, C, L) or (C, L) values placed at ``indices`` in zeros of the output length."""
    k = _tuple(kernel_size, 1)
    s = k if stride is None else _tuple(stride, 1)
    p = _tuple(padding, 1)
    out_sp = _unpool_output_size(input, k, s, p, output_size) + [1]
    return _unpool("max_unpooling2d", MaxUnpool2DBackward0, _S.unsqueeze(input, -1) if isinstance(input, Tensor)
                   else input, _S.unsqueeze(indices, -1) if isinstance(indices, Tensor) else indices, out_sp,
                   2).squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Inverse of max_pool2d over (N, C, H, W) or (C, H, W)."""
    k = _tuple(kernel_size, 2)
    s = k if stride is None else _tuple(stride, 2)
    p = _tuple(padding, 2)
    out_sp = _unpool_output_size(input, k, s, p, output_size)
    return _unpool("max_unpooling2d", MaxUnpool2DBackward0, input, indices, out_sp, 2)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Inverse of max_pool3d over (N, C, D, H, W) or (C, D, H, W)."""
    k = _tuple(kernel_size, 3)
    s = k if stride is None else _tuple(stride, 3)
    p = _tuple(padding, 3)
    out_sp = _unpool_output_size(input, k, s, p, output_size)
    return _unpool("max_unpooling3d", MaxUnpool3DBackward0, input, indices, out_sp, 3)
