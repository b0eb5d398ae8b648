"""nn.functional.pad (constant, reflect, replicate, circular), one_hot and normalize."""
from __future__ import annotations

import operator

from ...amp.autocast_mode import cast_inputs as _ac_cast
from ...amp.autocast_mode import state as _ac
from ...ops import creation as _C
from ...ops import indexing as _I
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from ...dtypes import bool_ as _bool
from ...ops._out import write_out
from ...ops._own import fresh_like
from ...ops._rangecheck import any_outside
from ...tensor import Tensor
from ._common import _check_tensor, _i64


# ---------------------------------------------------------------------------------------------
# padding, one_hot, normalize
# ---------------------------------------------------------------------------------------------
def _slice_dim(x: Tensor, d: int, start, stop) -> Tensor:
    return x[(slice(None),) * d + (slice(start, stop),)]


def _is_index(v) -> bool:
    try:
        operator.index(v)
    except TypeError:
        return False
    return True


def pad(input, pad, mode="constant", value=None):
    """Pad ``input``'s last dimensions.

    Args:
        input (Tensor): the tensor to pad.
        pad (tuple of ints): ``(left, right)`` for the last dimension, then ``(top, bottom)`` for the one before,
            and so on; negative values crop.
        mode (str): ``"constant"`` (default), ``"reflect"``, ``"replicate"`` or ``"circular"``.
        value (float, optional): the fill value of ``"constant"`` (default 0).

    Example:
        >>> F.pad(torch.ones(2, 3), (1, 1)).shape
        coretorch.Size([2, 5])
    """
    _check_tensor("pad", "input", input)
    try:
        pad = [operator.index(p) for p in pad]  # (a float is PyTorch's TypeError, not a truncation)
    except TypeError:
        pos = next(i for i, p in enumerate(pad) if not _is_index(p))
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                        f"{type(pad[pos]).__name__} at pos {pos}") from None
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    n = len(pad) // 2
    if n > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode == "constant":
        return _pad_constant(input, pad, 0.0 if value is None else value)
    if value not in (None, 0, 0.0):
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if n > 3 or input.ndim not in (n + 1, n + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
                                  "Supported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode != "circular" and 0 in input.shape[1 if input.ndim == n + 2 else 0:]:
        raise RuntimeError(f"Expected {n + 1}D or {n + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    if mode != "circular" and input.dtype is _bool:  # PyTorch's reflection/replication kernels have no bool
        name = "reflection" if mode == "reflect" else "replication"
        raise NotImplementedError(f"\"{name}_pad{n}d\" not implemented for 'Bool'")
    if _ac.on and mode != "circular":  # autocast: the op's dtype policy (one attribute check when off)
        input, = _ac_cast("pad_" + mode, input)
    if mode != "circular":
        return _pad_indexed(input, pad, mode)
    out = input
    for k in range(n):
        d = input.ndim - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        size = out.shape[d]
        if lo > size or hi > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + lo + hi < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        if lo < 0:
            out, lo = _slice_dim(out, d, -lo, None), 0
        if hi < 0:
            out, hi = _slice_dim(out, d, None, out.shape[d] + hi), 0
        size = out.shape[d]
        parts = []
        if lo:
            parts.append(_slice_dim(out, d, size - lo, size))
        parts.append(out)
        if hi:
            parts.append(_slice_dim(out, d, 0, hi))
        if len(parts) > 1:
            out = _S.cat(parts, d)
    return fresh_like(out, input, False)  # (a crop alone is a new tensor too, not a view of the input; row-major)


def _pad_indexed(input: Tensor, pad: list, mode: str) -> Tensor:
    """Reflection and replication padding as PyTorch's kernels: output position j of a dim reads input position
    j - left reflected about the first/last element (reflect) or clamped into the input (replicate), in the
    input's own coordinates, so a negative pad crops and the other side's pad still reflects the uncropped input
    ((-5, 1) of 5 elements reads element 3); one index_select per padded dim."""
    n = len(pad) // 2
    nd = input.ndim
    ins = [input.shape[nd - 1 - k] for k in range(n)]
    if mode == "reflect":
        for k in range(n):
            lo, hi = pad[2 * k], pad[2 * k + 1]
            if lo >= ins[k] or hi >= ins[k]:
                raise RuntimeError(f"Argument #{4 + 2 * k}: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({lo}, {hi}) at dimension {nd - 1 - k} of input "
                                   f"{list(input.shape)}")
    outs = [ins[k] + pad[2 * k] + pad[2 * k + 1] for k in range(n)]
    if max(outs) < 1:  # PyTorch's kernels check that some output dim is non-empty (their messages verbatim)
        w, ow = ins[0], outs[0]
        if n == 1:
            msg = f"input (W: {w}) is too small. Calculated output W: {ow}"
        elif n == 2:
            sep = " " if mode == "replicate" else ""
            msg = f"input (H: {ins[1]}, W: {w}{sep}) is too small. Calculated output H: {outs[1]} W: {ow}"
        else:
            msg = (f"input (D: {ins[2]} H: {ins[1]}, W: {w}) is too small. Calculated output D: {outs[2]} "
                   f"H: {outs[1]} W: {ow}")
        raise RuntimeError(msg)
    if min(outs) < 0:
        shape = list(input.shape[:nd - n]) + outs[::-1]
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(outs)}: {shape}")
    out = input
    for k in range(n):
        d, size, lo = nd - 1 - k, ins[k], pad[2 * k]
        if pad[2 * k] == 0 and pad[2 * k + 1] == 0:
            continue
        pos = [j - lo for j in range(outs[k])]
        if mode == "reflect":
            idx = [-i if i < 0 else (2 * (size - 1) - i if i >= size else i) for i in pos]
        else:
            idx = [min(max(i, 0), size - 1) for i in pos]
        out = _I.index_select(out, d, _C.tensor(idx, dtype=_i64, device=input.device))
    # a new tensor, as PyTorch's padding kernels allocate: channels-last where the input's strides suggest it
    return fresh_like(out, input)


def _pad_constant(input: Tensor, pad, value) -> Tensor:
    out = input
    padded = False
    nd = input.ndim
    for k in range(len(pad) // 2):
        d = nd - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        if lo < 0:
            if out.shape[d] + lo < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
            out, lo = _slice_dim(out, d, -lo, None), 0
        if hi < 0:
            if out.shape[d] + hi < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
            out, hi = _slice_dim(out, d, None, out.shape[d] + hi), 0
        parts = []
        shp = list(out.shape)
        if lo:
            shp[d] = lo
            parts.append(_C.full(tuple(shp), value, dtype=out.dtype, device=out.device))
        parts.append(out)
        if hi:
            shp[d] = hi
            parts.append(_C.full(tuple(shp), value, dtype=out.dtype, device=out.device))
        if len(parts) > 1:
            out = _S.cat(parts, d)
            padded = True
    if not padded:  # crops only: PyTorch's clone of the narrowed input (it was a view, written through to input)
        return _S.clone(out)
    return fresh_like(out, input)  # (PyTorch's empty of the input's suggested memory format, filled)


def one_hot(tensor, num_classes=-1):
    """One-hot encode int64 class indices: the result has a new last dimension of size ``num_classes`` (the
    largest index + 1 when -1) with 1 at each index, int64.

    Example:
        >>> F.one_hot(torch.tensor([0, 2]), 3)
        tensor([[1, 0, 0],
                [0, 0, 1]])
    """
    _check_tensor("one_hot", "tensor", tensor)
    if tensor.dtype is not _i64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError(f"one_hot(): argument 'num_classes' (position 2) must be int, not "
                        f"{type(num_classes).__name__}") from None
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return _C.zeros(*tensor.shape, num_classes, dtype=_i64, device=tensor.device)
    if num_classes == -1:
        from ..._compile.capture import data_read  # (imported on use: compile imports nn)
        data_read("one_hot without num_classes gives a shape that depends on the data")
    if num_classes != -1 and not any_outside(tensor, 0, num_classes):
        lo, hi = 0, 0  # one read whose value stays the same while the classes are valid (a compiled step replays)
    else:
        lo, hi = int(_R.amin(tensor).item()), int(_R.amax(tensor).item())
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _C.arange(num_classes, device=tensor.device)
    return _S.contiguous(_P.eq(_S.unsqueeze(tensor, -1), classes).to(_i64))  # row-major, as PyTorch's (a
    # transposed index tensor gave a permuted result and ``.view`` raised)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """Divide ``input`` by its ``p``-norm along ``dim``: ``v / max(||v||_p, eps)``.

    Args:
        input (Tensor): any shape.
        p (float): the norm degree (default 2).
        dim (int): the dimension (default 1).
        eps (float): avoids division by zero.
        out (Tensor, optional): written with the result and returned (PyTorch's ``torch.div(..., out=out)``).
    """
    denom = _S.expand_as(_P.clamp(_R.norm(input, p, dim, keepdim=True), min=eps), input)
    if out is not None:  # (it was ignored: ``out`` kept its old values)
        return write_out("div", out, _P.div(input, denom), inputs=(input, denom))
    return _P.div(input, denom)
