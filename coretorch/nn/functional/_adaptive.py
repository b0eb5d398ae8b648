"""nn.functional adaptive pooling: adaptive_max_pool1d/2d/3d (+ _with_indices) and adaptive_avg_pool1d/3d.

Windows are PyTorch's: output i covers [floor(i*in/out), ceil((i+1)*in/out)) along each dim, so any output size
works (no divisibility needed).  Max pooling gathers the window taps and reads the argmax (backward: a scatter);
average pooling is separable: one constant averaging matrix per dim, applied by matmul."""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...amp.autocast_mode import below as _ac_below
from ...autograd._node_names import named_node
from ...ops import creation as _C
from ...ops import linalg as _L
from ...ops import shape as _S
from ...tensor import Tensor
from ._common import _channels_last_like, _check_tensor
from ._window import AdaptiveMaxPool2DBackward0, AdaptiveMaxPool3DBackward0, adaptive_table, take_max, window_argmax

__all__ = ["adaptive_max_pool1d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
           "adaptive_avg_pool1d", "adaptive_avg_pool3d"]


def _out_sizes(op: str, output_size, input: Tensor, nsp: int) -> tuple:
    """output_size as nsp ints, ``None`` entries taking the input's size (PyTorch's _list_with_default)."""
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nsp:
            if nsp == 1:
                raise RuntimeError(f"{op}() argument 'output_size' should contain one int (got {len(output_size)})")
            raise RuntimeError(f"{op}(): internal error: output_size.size() must be {nsp}")
        sizes = list(output_size)
    else:
        sizes = [output_size] * nsp
    sp = input.shape[-nsp:]
    outs = tuple(int(sp[i]) if sizes[i] is None else int(sizes[i]) for i in range(nsp))
    if any(o < 0 for o in outs):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(map(str, outs))}}}")
    return outs


def _check_input(op: str, input: Tensor, nsp: int, colon: bool = True) -> None:
    _check_tensor(op, "input", input)
    if input.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{op}(): Expected {nsp + 1}D or {nsp + 2}D tensor, but got{':' if colon else ''} "
                           f"{list(input.shape)}")
    for i in range(1, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {i} being empty")


def _check_1d(op: str, input: Tensor) -> None:
    _check_tensor(op, "input", input)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {op})")


def _adaptive_max(op: str, node_cls, input: Tensor, outs: tuple):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype._tname[:-6]}'")
    nsp = len(outs)
    batched = input.ndim == nsp + 2
    x = input if batched else _S.unsqueeze(input, 0)
    sp = tuple(x.shape[2:])
    idx = window_argmax(x, [adaptive_table(outs[i], sp[i]) for i in range(nsp)])
    out = take_max(node_cls, x, idx)
    if not batched:
        return _S.squeeze(out, 0), _S.squeeze(idx, 0)
    return _channels_last_like(out, x), _channels_last_like(idx, x)  # (PyTorch's layout of a channels-last input)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """(values, flat H*W indices) of adaptive max pooling over the last two dims."""
    _check_input("adaptive_max_pool2d", input, 2)
    return _adaptive_max("adaptive_max_pool2d", AdaptiveMaxPool2DBackward0, input,
                         _out_sizes("adaptive_max_pool2d", output_size, input, 2))


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling over (N, C, H, W) or (C, H, W) to any output size."""
    out, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """(values, indices) of adaptive max pooling over the last dim (PyTorch runs it as the 2-D op)."""
    _check_1d("adaptive_max_pool1d", input)
    n = _out_sizes("adaptive_max_pool1d", output_size, input, 1)[0]
    out, idx = adaptive_max_pool2d_with_indices(_S.unsqueeze(input, -2), (1, n))
    return _S.squeeze(out, -2), _S.squeeze(idx, -2)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling over (N, C, L) or (C, L)."""
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = False):
    """(values, flat D*H*W indices) of adaptive max pooling over the last three dims."""
    _check_input("adaptive_max_pool3d", input, 3)
    return _adaptive_max("adaptive_max_pool3d", AdaptiveMaxPool3DBackward0, input,
                         _out_sizes("adaptive_max_pool3d", output_size, input, 3))


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Adaptive max pooling over (N, C, D, H, W) or (C, D, H, W) to any output size."""
    out, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def _avg_matrix(n_in: int, n_out: int, input: Tensor) -> Tensor:
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        start, end = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        m[i, start:end] = 1.0 / (end - start)
    return _C.tensor(m, dtype=input.dtype, device=input.device)


@_ac_below  # autocast: one kernel on no list in PyTorch (its inner matmuls must not run in the lower precision)
def _adaptive_avg(input: Tensor, outs: tuple) -> Tensor:
    """Separable: A_d applied along each of the last len(outs) dims (negative dims: batched or not); half and
    bfloat16 averaged in float32 and rounded once, as PyTorch's kernels accumulate."""
    if input.dtype in (_dt.float16, _dt.bfloat16):
        return _adaptive_avg(input.float(), outs).to(input.dtype)
    nsp = len(outs)
    out = input
    for k, n_out in enumerate(outs):
        d = input.ndim - nsp + k
        a = _avg_matrix(input.shape[d], n_out, input)
        out = _S.movedim(_L.matmul(a, _S.movedim(out, d, -2)), -2, d)
    return _S.contiguous(out)  # PyTorch's result is row-major (``.view(n, -1)`` works)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Adaptive average pooling over (N, C, L) or (C, L)."""
    _check_1d("adaptive_avg_pool1d", input)
    n = _out_sizes("adaptive_avg_pool1d", output_size, input, 1)[0]
    _check_input("adaptive_avg_pool2d", _S.unsqueeze(input, -2), 2)  # PyTorch runs it as the 2-D op
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_avg_pool2d\" not implemented for '{input.dtype._tname[:-6]}'")
    out = _adaptive_avg(input, (n,))
    # PyTorch: a 2-D pool (its backward takes the input: linked) then a squeeze; a mean where n is 1 (not linked)
    return out if n == 1 else named_node(out, "SqueezeBackward1", link=True)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Adaptive average pooling over (N, C, D, H, W) or (C, D, H, W) to any output size."""
    _check_input("adaptive_avg_pool3d", input, 3, colon=False)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_avg_pool3d_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    outs = _out_sizes("adaptive_avg_pool3d", output_size, input, 3)
    if outs == tuple(input.shape[-3:]):
        return _S.clone(input)
    return _adaptive_avg(input, outs)
