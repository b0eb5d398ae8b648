"""The functional forms behind Linear, Bilinear, Dropout and Embedding (re-exported by nn.functional)."""
from __future__ import annotations

import warnings

from ... import dtypes as _dt
from ..._coo import mark_sparse
from ...amp.autocast_mode import cast_inputs as _ac_cast, state as _ac
from ...autograd._node_names import named_node
from ...autograd.grad_mode import no_grad, state as _gs
from ...autograd.graph import Node
from ...ops import _memfmt
from ...ops._own import own
from ...ops import creation as _C, indexing as _I, linalg as _L, pointwise as _P, reduction as _R, shape as _S
from ...ops._util import device_mismatch, host_all_below
from ...tensor import Tensor, _edge, _make

__all__ = ["linear", "bilinear", "dropout", "dropout1d", "dropout2d", "dropout3d", "embedding"]


def _check_tensor(name: str, arg: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not {type(t).__name__}")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: one fused ``addmm`` node for 2-D input with a bias (as PyTorch)."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, weight, bias = _ac_cast("linear", input, weight, bias)
    if not isinstance(input, Tensor):
        _check_tensor("linear", "input", input)
    if bias is not None and isinstance(bias, Tensor) and bias.dtype is not input.dtype \
            and input.dtype is weight.dtype:  # (PyTorch's addmm: a bias of another dtype is not promoted)
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {bias.dtype._tname[:-6]} and "
                           f"{input.dtype._tname[:-6]}")
    if len(input._data.shape) == 2 and len(weight._data.shape) == 2 and input.dtype is weight.dtype and \
            input._be is weight._be and \
            (bias is None or (bias.dtype is input.dtype and bias._be is input._be)):
        return _L.linear2d(input, weight, bias)
    if len(input._data.shape) > 2 and len(weight._data.shape) == 2 and input.dtype is weight.dtype and \
            input._be is weight._be and input.numel() and \
            (bias is None or (bias.dtype is input.dtype and bias._be is input._be and bias.ndim == 1)):
        # (..., in): folded into (N, in) rows for the one-node product with the bias added in place, then viewed
        # back (as PyTorch: its grad_fn is ViewBackward0); saves a broadcast add and its reduction (issue 14)
        lead = tuple(input.shape[:-1])
        out = _L.linear2d(_S.reshape(input, (-1, input.shape[-1])), weight, bias)
        out = _S.reshape(out, lead + (out.shape[1],))
        # (with a bias PyTorch's result views its addmm's; without, its matmul's _unsafe_view gives a new tensor)
        return out if bias is not None else own(named_node(out, "UnsafeViewBackward0"))
    if len(input._data.shape) == 1 and len(weight._data.shape) == 2 and bias is not None and bias.ndim == 1 and \
            input.dtype is weight.dtype is bias.dtype and input._be is weight._be is bias._be:
        # a vector: PyTorch's addmm of the (1, in) row viewed back (ViewBackward0)
        out = _L.linear2d(_S.unsqueeze(input, 0), weight, bias)
        return _S.reshape(out, (out.shape[1],))
    if weight.ndim == 1 and bias is not None and (input.ndim == 2 or bias.ndim == 1 and (
            input.ndim == 1 or input.ndim > 2 and input.is_contiguous())):
        # PyTorch's addmm paths (a 2-D input with a bias, a vector bias on a contiguous input) need a matrix weight
        raise RuntimeError("mat2 must be a matrix, got 1-D tensor")
    out = _L.matmul(input, _S.t(weight) if weight.ndim == 2 else weight)
    if bias is not None:
        out = _P.add(out, bias)
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D, got {weight.ndim}-D")
    o, n1, n2 = weight.shape
    if input1.shape[-1] != n1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {n1}")
    if input2.shape[-1] != n2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {n2}")
    dts = (input1.dtype, input2.dtype, weight.dtype) + ((bias.dtype,) if bias is not None else ())
    if any(d is not dts[0] for d in dts):  # (PyTorch's check, before its matmuls' own)
        names = ", ".join(f"{n}: {_dt.cpp_name(d)}" for n, d in zip(("input1", "input2", "weight", "bias"), dts))
        raise RuntimeError(f"All tensors must have the same dtype, got {names}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != o):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0] if bias.ndim else 1} but expected {o}")
    # (.., I) @ (I, O*J) -> (.., O, J); times input2 (.., 1, J) summed over J
    w = _S.reshape(_S.permute(weight, (1, 0, 2)), (n1, o * n2))
    t = _S.reshape(_L.matmul(input1, w), tuple(input1.shape[:-1]) + (o, n2))
    out = _R.sum(_P.mul(t, _S.unsqueeze(input2, -2)), -1)
    if bias is not None:
        out = _P.add(out, bias)
    return out


def _check_p(p) -> float:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return float(p)


def _apply_mask(input: Tensor, p: float, noise_shape, inplace: bool) -> Tensor:
    if p == 1.0:
        scale = _C.zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(scale) if inplace else _P.mul(input, scale)
    keep = 1.0 - p
    with no_grad():
        noise = _C.rand(*noise_shape, dtype=input.dtype, device=input.device)
        if noise_shape == tuple(input.shape):  # (in input's layout, as PyTorch's empty_like noise: so is the result)
            noise = _memfmt.fresh(noise, None, input)
        # bernoulli(1 - p) / (1 - p): kept elements are scaled so the expectation is unchanged
        noise = _P.div(_P.lt(noise, keep).to(input.dtype), keep)
    return input.mul_(noise) if inplace else _P.mul(input, noise)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (training only)."""
    p = _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type {input.dtype._tname[:-6]}")
    return _apply_mask(input, p, tuple(input.shape), inplace)


_SPATIAL = {"dropout1d": 1, "dropout2d": 2, "dropout3d": 3}


def _feature_dropout(name: str, input: Tensor, p: float, training: bool, inplace: bool, batched_dim: int):
    """Channel-wise dropout with PyTorch's rank rules: dropout1d accepts only 2-D/3-D input; dropout2d and dropout3d
    accept any rank with a deprecation warning outside theirs, and dropout2d reads a 3-D input as (N, C, L) (with
    PyTorch's warning) where dropout3d reads a 4-D one as unbatched (C, D, H, W)."""
    p = _check_p(p)
    nsp = _SPATIAL[name]
    note = (f"Note that {name} exists to provide channel-wise dropout on inputs with {nsp} spatial "
            f"dimension{'s' if nsp > 1 else ''}, a channel dimension, and an optional batch dimension (i.e. "
            f"{batched_dim}D or {batched_dim + 1}D inputs).")
    nd = input.ndim
    if nd not in (batched_dim, batched_dim + 1):
        if name == "dropout1d":
            raise RuntimeError(f"{name}: Expected {batched_dim}D or {batched_dim + 1}D input, but received a {nd}D "
                               f"input. {note}")
        warnings.warn(f"{name}: Received a {nd}-D input to {name}, which is deprecated and will result in an "
                      f"error in a future release. To retain the behavior and silence this warning, please use "
                      f"dropout instead. {note}", stacklevel=3)
    if name == "dropout2d" and nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This "
                      "behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=3)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = tuple(input.shape)
    # the dims that index channels: (N, C) when batched (dropout2d: always), C alone when unbatched
    batched = nd == batched_dim + 1 or (name == "dropout2d" and nd >= 2)
    nfeat = 2 if batched else 1
    if nd < nfeat:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    noise_shape = shape[:nfeat] + (1,) * (len(shape) - nfeat)
    return _apply_mask(input, p, noise_shape, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` with probability ``p`` in training (the rest scaled by ``1 / (1 - p)``)."""
    return _feature_dropout("dropout1d", input, p, training, inplace, 2)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` with probability ``p`` in training (the rest scaled by ``1 / (1 -
    p)``)."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 3)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` with probability ``p`` in training (the rest scaled by ``1 / (1 -
    p)``)."""
    return _feature_dropout("dropout3d", input, p, training, inplace, 4)


class EmbeddingBackward0(Node):
    """Gradient of a row lookup: rows scattered back with index_add; the padding row gets none."""
    __slots__ = ("num", "padding_idx", "scale", "sparse")

    def backward(self, g):
        (flat,) = self.saved()
        if self.sparse and self.scale:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
        d = g.shape[-1]
        g2 = _S.reshape(g, (flat.shape[0], d))  # not (-1, d): ambiguous for embedding_dim 0
        if self.padding_idx >= 0:  # (a where: an inf/NaN gradient of a padding lookup leaves the row at 0)
            g2 = _P.where(_S.unsqueeze(_P.ne(flat, self.padding_idx), 1), g2, 0.0)
        if self.scale:
            ones = _C.ones(flat.shape[0], dtype=g.dtype, device=g.device)
            counts = _I._index_add(_C.zeros(self.num, dtype=g.dtype, device=g.device), 0, flat, ones)
            g2 = _P.div(g2, _S.unsqueeze(_I.index_select(counts, 0, flat), 1))
        # (indices checked in forward; float16/bfloat16 rows summed in their dtype, as PyTorch's CPU backward)
        gw = _I._index_add(_C.zeros(self.num, d, dtype=g.dtype, device=g.device), 0, flat, g2, opmath=False)
        if self.sparse:  # Embedding(sparse=True): the gradient is marked sparse (the rows looked up, uncoalesced)
            rows, vals = flat, g2
            if self.padding_idx >= 0:  # the padding row's lookups are left out, as PyTorch
                keep = _S.reshape(_I.nonzero(_P.ne(flat, self.padding_idx)), (-1,))
                rows, vals = _I.index_select(flat, 0, keep), _I.index_select(g2, 0, keep)
            mark_sparse(gw, _S.unsqueeze(rows, 0), vals)
        return (gw,)


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """Rescale (in place, outside autograd) the referenced rows whose norm exceeds ``max_norm``."""
    with no_grad():
        # every referenced row, repeats included (a repeated row is rescaled to the same values): no host read of
        # the indices, so a compiled step replays
        idx = _S.reshape(input, (-1,))
        if not idx.numel():
            return
        sel = _I.index_select(weight, 0, idx)
        norms = _R.norm(sel, norm_type, 1)
        scale = _P.where(_P.gt(norms, max_norm), _P.div(max_norm, _P.add(norms, 1e-7)),
                         _C.ones((), dtype=weight.dtype, device=weight.device))
        weight[idx] = _P.mul(sel, _S.unsqueeze(scale, 1))


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` looked up by the integer tensor ``input``: output shape ``input.shape + (D,)``."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("embedding(): argument 'indices' and 'weight' must be Tensors")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= num:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    else:
        padding_idx = -1
    if input.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    if input._be is not weight._be:  # (the lookup below reads raw arrays: a cpu index crashed on opencl)
        raise device_mismatch("embedding", weight, input)
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    flat = _S.reshape(input, (-1,))
    if flat.numel():
        t = flat._be
        if not t.host_memory and t.has("check_index"):  # on the device: reported at the next host read
            t.check_index(flat._data, num, False, "index out of range in self")
        elif not (t.host_memory and host_all_below(t, flat._data, num)):  # one reduction decides the common case
            lo = int(t.to_numpy(t.amin(flat._data, None, False)))
            hi = int(t.to_numpy(t.amax(flat._data, None, False)))
            if lo < 0 or hi >= num:
                raise IndexError("index out of range in self")
    table = weight._be
    out = table.index_select(weight._data, 0, flat._data)
    out = table.view(out, tuple(input.shape) + (weight.shape[1],)) if out.shape != tuple(input.shape) + (
        weight.shape[1],) else out
    if out is None:  # pragma: no cover - index_select returns a fresh contiguous array
        raise RuntimeError("embedding: could not reshape the looked-up rows")
    if weight._rg and _gs.enabled:
        node = EmbeddingBackward0()
        node.num, node.padding_idx, node.scale, node.sparse = num, padding_idx, bool(scale_grad_by_freq), bool(sparse)
        node.save(flat)
        node.next_functions = (_edge(weight),)
        return _make(out, weight.dtype, table, node)
    return _make(out, weight.dtype, table)
