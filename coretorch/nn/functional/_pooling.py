"""nn.functional pooling: max/avg pooling 1d/2d, adaptive_avg_pool2d (3-D pooling: _pooling3d; adaptive max and
1-D/3-D adaptive average pooling: _adaptive; unpooling: _unpool)."""
from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...autograd._node_names import named_node
from ...autograd._zero import links_inputs
from ...autograd.grad_mode import state as _gs
from ...autograd.graph import Node
from ...ops import creation as _C
from ...ops import indexing as _I
from ...ops import pointwise as _P
from ...ops import shape as _S
from ...ops._own import own
from ...tensor import Tensor, _make
from ._common import _channels_last_like, _check_tensor, _i64, _needs_graph, _ntuple, _record
from ._adaptive import _adaptive_avg
from ._conv import _conv2d_raw
from ._padding import _pad_constant
from ._window import pool_table, take_max, window_argmax, window_sum


# ---------------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------------
def _pool_out(n, k, s, p, d, ceil_mode) -> int:
    num = n + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pool_args(op, input, kernel_size, stride, padding, dilation, ceil_mode):
    _check_tensor(op, "input", input)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"non-empty 3D or 4D (batch mode) tensor expected for input, but got: "
                           f"{list(input.shape)}")
    if 0 in tuple(input.shape)[input.ndim - 3:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{list(input.shape)}")
    k = _ntuple(kernel_size, 2, "kernel_size")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else \
        _ntuple(stride, 2, "stride")
    p, d = _ntuple(padding, 2, "padding"), _ntuple(dilation, 2, "dilation")
    for i in range(2):  # ATen's order: each dim's output-shape checks (height, then width), then the shape check
        if s[i] == 0:
            raise RuntimeError("stride should not be zero")
        if p[i] < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p[i]}")
        if p[i] > int((d[i] * (k[i] - 1) + 1) / 2):  # (C's truncating division)
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    for name, (a, b), sfx in (("kernel size", k, "k"), ("stride", s, "d"), ("dilation", d, "dilation")):
        if a <= 0 or b <= 0:
            raise RuntimeError(f"{name} should be greater than zero, but got {sfx}H: {a} {sfx}W: {b}")
    h, w = input.shape[-2:]
    oh, ow = _pool_out(h, k[0], s[0], p[0], d[0], ceil_mode), _pool_out(w, k[1], s[1], p[1], d[1], ceil_mode)
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input size: ({input.shape[-3]}x{h}x{w}). Calculated output size: "
                           f"({input.shape[-3]}x{oh}x{ow}). Output size is too small")
    return k, s, p, d, oh, ow


@links_inputs
class MaxPool2DWithIndicesBackward0(Node):
    """The indices are saved as PyTorch saves them (returned to the caller: an in-place change before the
    backward raises)."""
    __slots__ = ("shape",)

    def backward(self, g, gi=None):
        n, c, h, w = self.shape
        idx = self.saved()[0]  # (x is saved for its version only)
        table = g._be
        if not (g._rg and _gs.enabled) and table.has("max_pool2d_backward"):
            return (_make(table.max_pool2d_backward(g._data, idx._data, self.shape), g.dtype, table),)
        z = _C.zeros(n, c, h * w, dtype=g.dtype, device=g.device)
        flat = _I._scatter_add(z, 2, idx.reshape(n, c, -1), g.reshape(n, c, -1), False)  # (half: in its dtype)
        return (flat.reshape(n, c, h, w),)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """2-D max pooling returning ``(output, indices)`` (channels-last for a channels-last input, as PyTorch)."""
    out, idx = _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _channels_last_like(out, input), _channels_last_like(idx, input)


def _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode):
    """(output, indices) of 2-D max pooling, row-major (max_pool1d's: PyTorch's 1-d kernel keeps that layout)."""
    k, s, p, d, oh, ow = _pool_args("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    if x.dtype is _dt.bool_:
        raise NotImplementedError("\"max_pool2d\" not implemented for 'Bool'")
    table = x._be
    if not (x.dtype.is_floating_point and table.has("max_pool2d")):
        # integer inputs (PyTorch pools them too) and backends without the primitive: the shared window argmax
        h, w = x.shape[2:]
        idx = window_argmax(x, [pool_table(oh, h, k[0], s[0], p[0], d[0]), pool_table(ow, w, k[1], s[1], p[1], d[1])])
        out = take_max(MaxPool2DWithIndicesBackward0, x, idx)
        if not batched:
            out, idx = _S.squeeze(out, 0), _S.squeeze(idx, 0)
        return out, idx
    v, i = table.max_pool2d(x._data, k, s, p, d, (oh, ow))
    idx = _make(i, _i64, table)
    if _needs_graph(x):
        node = MaxPool2DWithIndicesBackward0()
        node.shape = tuple(x.shape)
        node.save(idx, x)  # (x for its version, as PyTorch's node saves self)
        out = _record(node, v, x.dtype, table, x)
    else:
        out = _make(v, x.dtype, table)
    if not batched:
        out, idx = _S.squeeze(out, 0), _S.squeeze(idx, 0)
    return out, idx


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling (see :class:`coretorch.nn.MaxPool2d`); with ``return_indices`` also the argmax indices."""
    out, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode) -> None:
    """ATen's own checks of max_pool1d without indices (an input that needs no gradient): 1-d messages."""
    k, p, d = _ntuple(kernel_size, 1, "kernel_size")[0], _ntuple(padding, 1, "padding")[0], \
        _ntuple(dilation, 1, "dilation")[0]
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else \
        _ntuple(stride, 1, "stride")[0]
    for name, v in (("kernel_size", k), ("stride", s)):
        if v <= 0:
            raise RuntimeError(f"max_pool1d() {name} must be greater than zero, but got {v}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    if input.ndim in (2, 3) and 0 not in tuple(input.shape)[-2:]:
        out = _pool_out(input.shape[-1], k, s, p, d, ceil_mode)
        if out < 1:
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling (see :class:`coretorch.nn.MaxPool1d`); with ``return_indices`` also the argmax indices."""
    if not return_indices and isinstance(input, Tensor) and not (input.requires_grad and _gs.enabled):
        _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)
    one = lambda v: (1, _ntuple(v, 1)[0])  # noqa: E731
    out, idx = _max_pool2d(_S.unsqueeze(input, -2), one(kernel_size),
                                       None if stride is None else one(stride), (0, _ntuple(padding, 1)[0]),
                                       one(dilation), ceil_mode)
    out, idx = _S.squeeze(out, -2), _S.squeeze(idx, -2)
    if not (input.requires_grad and _gs.enabled):  # PyTorch's kernel (without a graph) gives new tensors, its
        out, idx = own(out), own(idx)  # graph path views of a 2-d pool's: as here
    return (out, idx) if return_indices else out


def _avg_divisor(n, k, s, p, oh, count_include_pad):
    """Per-output window sizes along one dim, as PyTorch's avg_pool2d computes them."""
    out = []
    for i in range(oh):
        start = i * s - p
        end = min(start + k, n + p)
        size = end - start
        start, end = max(start, 0), min(end, n)
        out.append(size if count_include_pad else end - start)
    return out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling (see :class:`coretorch.nn.AvgPool2d` for the arguments and shapes)."""
    if divisor_override is not None and (not isinstance(divisor_override, (int, np.integer)) or
                                         isinstance(divisor_override, bool)):
        raise TypeError(f"avg_pool2d(): argument 'divisor_override' must be int, not "
                        f"{type(divisor_override).__name__}")
    k, s, p, d, oh, ow = _pool_args("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if not input.dtype.is_floating_point:
        return _avg_pool2d_int64(input, k, s, p, oh, ow, count_include_pad, divisor_override)
    if input.dtype is _dt.float16 or input.dtype is _dt.bfloat16:  # PyTorch's opmath: the window sums and the
        # division in float32, rounded once (a half window of two 60000s summed to inf)
        return avg_pool2d(input.float(), kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override).to(input.dtype)
    batched = input.ndim == 4
    x = input if batched else _S.unsqueeze(input, 0)
    n, c, h, w = x.shape
    eh, ew = max(0, (oh - 1) * s[0] + k[0] - h - 2 * p[0]), max(0, (ow - 1) * s[1] + k[1] - w - 2 * p[1])
    xp = _pad_constant(x, (p[1], p[1] + ew, p[0], p[0] + eh), 0.0) if any(p) or eh or ew else x
    ones = _C.ones(c, 1, k[0], k[1], dtype=x.dtype, device=x.device)
    sums = _conv2d_raw(xp, ones, s, (0, 0), (1, 1), c)[:, :, :oh, :ow]
    if divisor_override is not None:
        out = _P.div(sums, float(divisor_override))
    else:
        dh = _avg_divisor(h, k[0], s[0], p[0], oh, count_include_pad)
        dw = _avg_divisor(w, k[1], s[1], p[1], ow, count_include_pad)
        if len(set(dh)) == 1 and len(set(dw)) == 1:
            out = _P.div(sums, float(dh[0] * dw[0]))
        else:
            div = _C.tensor([[a * b for b in dw] for a in dh], dtype=x.dtype, device=x.device)
            out = _P.div(sums, div)
    # (channels-last for a channels-last input; avg_pool1d's unsqueezed input too, as PyTorch's)
    return _channels_last_like(out, input) if batched else _S.squeeze(out, 0)


def _avg_pool2d_int64(input, k, s, p, oh, ow, count_include_pad, divisor_override) -> Tensor:
    """PyTorch pools int64 (only): the int64 window sums divided with C's truncation, an int64 result."""
    if input.dtype is not _dt.int64:
        raise NotImplementedError(f"\"avg_pool2d\" not implemented for '{input.dtype._tname[:-6]}'")
    h, w = input.shape[-2:]
    sums = window_sum(input, [pool_table(oh, h, k[0], s[0], p[0], 1), pool_table(ow, w, k[1], s[1], p[1], 1)])
    if divisor_override is not None:
        return _P.div(sums, int(divisor_override), rounding_mode="trunc")
    dh = _avg_divisor(h, k[0], s[0], p[0], oh, count_include_pad)
    dw = _avg_divisor(w, k[1], s[1], p[1], ow, count_include_pad)
    div = _C.tensor([[a * b for b in dw] for a in dh], dtype=_dt.int64, device=input.device)
    return _P.div(sums, div, rounding_mode="trunc")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling (see :class:`coretorch.nn.AvgPool1d` for the arguments and shapes)."""
    one = lambda v: (1, _ntuple(v, 1)[0])  # noqa: E731
    out = named_node(avg_pool2d(_S.unsqueeze(input, -2), one(kernel_size), None if stride is None else one(stride),
                                (0, _ntuple(padding, 1)[0]), ceil_mode, count_include_pad), "AvgPool2DBackward0")
    return _S.squeeze(out, -2)


def adaptive_avg_pool2d(input, output_size):
    """Adaptive 2-D average pooling to ``output_size`` (see :class:`coretorch.nn.AdaptiveAvgPool2d`)."""
    _check_tensor("adaptive_avg_pool2d", "input", input)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    for i in (input.ndim - 2, input.ndim - 1):  # (an empty batch or channel dim is fine)
        if input.shape[i] == 0:
            raise RuntimeError(f"adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with dimension {i} being empty")
    if not input.dtype.is_floating_point:  # (the averaging matrices of an integer dtype were zeros)
        raise NotImplementedError(f"\"adaptive_avg_pool2d\" not implemented for '{input.dtype._tname[:-6]}'")
    h, w = input.shape[-2:]
    os_ = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size, output_size]
    if len(os_) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    oh, ow = (h if os_[0] is None else int(os_[0])), (w if os_[1] is None else int(os_[1]))
    if oh < 0 or ow < 0:
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{oh}, {ow}}}")
    if oh == h and ow == w:
        return _S.clone(input)
    if oh and ow and h % oh == 0 and w % ow == 0 and input.shape[-3]:
        return avg_pool2d(input, (h // oh, w // ow))
    # rectangular windows: the average is separable (averaging matrices along H, then W), half in float32 rounded
    # once and no autocast inside (it lowered the products: bfloat16 where PyTorch's kernel keeps float32); a
    # channels-last input gives a channels-last result
    return _channels_last_like(_adaptive_avg(input, (oh, ow)), input)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """(values, indices) of 1-D max pooling, as ``torch.nn.functional``'s."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)
