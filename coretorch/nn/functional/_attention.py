"""nn.functional.scaled_dot_product_attention."""
from __future__ import annotations

import math

from ... import dtypes as _dt
from ...amp.autocast_mode import below as _below
from ...amp.autocast_mode import cast_inputs as _ac_cast
from ...amp.autocast_mode import state as _ac
from ...autograd._node_names import named_node
from ...backends.cuda import _sdp
from ...ops import creation as _C
from ...ops import linalg as _L
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from ...ops._util import broadcast_shape as _broadcast_shape
from ...ops._util import norm_dim as _norm_dim
from ...ops import _memfmt
from ...tensor import Tensor, _make
from . import _fused
from ._activation import softmax


# ---------------------------------------------------------------------------------------------
# dropout helper (the public dropout family lives with the Dropout layer), attention
# ---------------------------------------------------------------------------------------------
def _dropout_mask(input: Tensor, p: float) -> Tensor:
    keep = _P.ge(_C.rand(*input.shape, dtype=input.dtype, device=input.device), p)
    return _P.div(_P.where(keep, input, 0.0), 1.0 - p) if p < 1 else _P.mul(input, 0.0)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                                 enable_gqa=False):
    """Attention ``softmax(Q @ K.mT * scale + mask) @ V``.

    Args:
        query (Tensor): ``(N, ..., L, E)``.
        key (Tensor): ``(N, ..., S, E)``.
        value (Tensor): ``(N, ..., S, Ev)``.
        attn_mask (Tensor, optional): a bool mask (True keeps) or an additive float mask broadcast to ``(L, S)``.
        dropout_p (float): dropout on the attention weights.
        is_causal (bool): apply a lower-triangular (causal) mask.
        scale (float, optional): default ``1 / sqrt(E)``.
        enable_gqa (bool): let key/value have fewer heads than query (grouped-query attention).

    Returns:
        Tensor: ``(N, ..., L, Ev)``.
    """
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        from ..attention.bias import CausalBias

        if isinstance(attn_mask, CausalBias):  # PyTorch's tensor subclass dispatches here (__torch_function__)
            return CausalBias._dispatch(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        query, key, value = _ac_cast("scaled_dot_product_attention", query, key, value)
    _check_inputs(query, key, value, attn_mask)
    flash = _flash_cpu(query, key, value, dropout_p)
    if query._be.type == "cpu" and not _sdp["math"] and not (flash and _sdp["flash"]):
        # PyTorch's CPU has the flash and math kernels only: sdpa_kernel(EFFICIENT_ATTENTION) (or FLASH for inputs
        # its flash kernel refuses) leaves none
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found.")
    dt = query.dtype
    if (dt is _dt.float16 or dt is _dt.bfloat16) and key.dtype is dt and value.dtype is dt:
        # PyTorch's CPU attention keeps half inputs "in high precision for accuracy": float32 scores, softmax and
        # weighted sum, rounded once (in half, q @ k.mT of 200s over two features overflowed: NaN rows); past the
        # autocast cast (calling the public function again under autocast cast back to half: endless recursion)
        m = attn_mask.float() if attn_mask is not None and attn_mask.dtype is dt else attn_mask
        out = _attention(query.float(), key.float(), value.float(), m, dropout_p, is_causal, scale,
                         enable_gqa).to(dt)
        if flash and out.numel():  # (one flash node in PyTorch, not the cast's ToCopyBackward0)
            named_node(out, "ScaledDotProductFlashAttentionForCpuBackward0")
    else:
        out = _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if flash and (not _sdp["math"] or _sdp["flash"]) and out.numel():
        # PyTorch's CPU flash kernel writes its output in the query's stride order (empty_like): a query that is a
        # transposed view of (B, L, H, E) projections gives an output whose ``transpose(1, 2)`` is contiguous, as
        # the tutorials' ``y.transpose(1, 2).view(B, L, H * E)`` needs (a row-major output refused that view)
        data = _memfmt.preserved(out._be, out._data, like=query._data)
        if data is not out._data:
            out = _make(data, out.dtype, out._be, out.grad_fn, out._out_nr)
    return out


def _flash_cpu(query, key, value, dropout_p) -> bool:
    """Whether PyTorch's CPU flash kernel takes these inputs (sdp_utils_cpp's use_flash_attention_cpp): 4-D query,
    key and value of one batch and head count, one head size, no dropout, non-empty sequences, unit last stride."""
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4 or dropout_p != 0.0:
        return False
    qs, ks, vs = query.shape, key.shape, value.shape
    return (qs[0] == ks[0] == vs[0] and qs[1] == ks[1] == vs[1] and qs[3] == ks[3] == vs[3] and qs[2] > 0
            and ks[2] > 0 and query.stride(-1) == key.stride(-1) == value.stride(-1) == 1)


@_below
def _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """scaled_dot_product_attention past its autocast cast, input checks and half-precision upcast (with autocast
    suspended: its matmuls keep the dtype chosen here)."""
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    scale_factor = (1.0 / math.sqrt(E) if E else math.inf) if scale is None else scale  # E == 0: C++'s 1/0
    if dropout_p > 1:  # PyTorch's dropout check (a negative or NaN p is no dropout there, as here)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and min(query.ndim, key.ndim, value.ndim) < 3:  # PyTorch reads each one's size(-3)
        n = min(query.ndim, key.ndim, value.ndim)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got -3)")
    if enable_gqa and (key.shape[-3] != query.shape[-3] or value.shape[-3] != query.shape[-3]):
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if not hk or not hv or hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        # key and value each repeated to the query's heads (they may have different numbers of heads)
        key = _repeat_interleave(key, hq // hk, -3) if hk != hq else key
        value = _repeat_interleave(value, hq // hv, -3) if hv != hq else value
    if attn_mask is not None:
        _check_mask_fits(attn_mask, query, key, L, S)
    if dropout_p == 0.0 and query.ndim >= 2 and query.shape[:-2] == key.shape[:-2] == value.shape[:-2] \
            and query.numel() and key.numel() and _fused.fused_ok(query, key, value) \
            and (attn_mask is None or not attn_mask._rg):
        # one node on kernel calls (issue 14 speed): scores, mask, softmax and the weighted sum
        mask = _additive_mask(attn_mask, is_causal, L, S, query)
        if mask is not False:
            out = _fused.attention(query, key, value, mask, scale_factor,
                                   lambda q, k, v: _sdpa_composite(q, k, v, attn_mask, is_causal, scale_factor),
                                   attn_mask is not None)
            # PyTorch's name: its CPU flash kernel's node for 4-D inputs with E == Ev, else its composite's last op
            return named_node(out, "AddBackward0" if out.numel() == 0 else
                              "ScaledDotProductFlashAttentionForCpuBackward0" if query.ndim == 4 and
                              value.shape[-1] == E else "UnsafeViewBackward0" if query.ndim > 2 else "MmBackward0")
    out = _sdpa_composite(query, key, value, attn_mask, is_causal, scale_factor, dropout_p)
    # PyTorch answers no keys (S == 0) or an empty result with zeros plus the graph: its node is an add
    return named_node(out, "AddBackward0") if S == 0 or out.numel() == 0 else out


def _check_inputs(query, key, value, attn_mask) -> None:
    """PyTorch's argument checks (validate_sdpa_input and the shapes its matmuls check): the kernel path below
    multiplies raw arrays, which on opencl do not check their shapes (a key of another feature size or a value of
    another length gave a result)."""
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead.")
    if attn_mask is not None and attn_mask.dtype is not _dt.bool_ and attn_mask.dtype is not _dt.float32 \
            and attn_mask.dtype is not query.dtype:
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query's last dim ({query.shape[-1]}) must equal key's "
                           f"({key.shape[-1]}): query {list(query.shape)}, key {list(key.shape)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key and value must have the same sequence length, got "
                           f"key {list(key.shape)} and value {list(value.shape)}")


def _check_mask_fits(attn_mask, query, key, L: int, S: int) -> None:
    """PyTorch adds the mask to the scores in place: a mask that broadcasts the scores to a bigger shape (more
    dims, or a batch dim the inputs have as 1) raises, where an out-of-place add gave a bigger result."""
    try:
        scores = _broadcast_shape(tuple(query.shape[:-2]), tuple(key.shape[:-2])) + (L, S)
        full = _broadcast_shape(scores, tuple(attn_mask.shape))
    except RuntimeError:
        return  # shapes that do not broadcast: the matmul or the add below says so
    if full != scores:
        raise RuntimeError(f"output with shape {list(scores)} doesn't match the broadcast shape {list(full)}")


_CAUSAL: dict = {}  # (kernel table, L, S, dtype) -> the additive causal mask array (read only)


def _additive_mask(attn_mask, is_causal: bool, L: int, S: int, query):
    """The mask as an array to add to the scores (None without one), or False where the composite must run
    (a float mask of another dtype or device, both a mask and is_causal)."""
    if is_causal:
        if attn_mask is not None:
            return False
        key = (query._be, L, S, query.dtype)
        mask = _CAUSAL.get(key)
        if mask is None:  # built once per shape and device (on opencl: uploads and kernels saved every call)
            causal = _P.ge(_S.unsqueeze(_C.arange(L, device=query.device), 1), _C.arange(S, device=query.device))
            mask = _P.where(causal, 0.0, float("-inf")).to(query.dtype)._data
            if len(_CAUSAL) >= 16:
                _CAUSAL.clear()
            _CAUSAL[key] = mask
        return mask
    if attn_mask is None:
        return None
    if attn_mask.dtype is _dt.bool_:
        return _P.where(attn_mask, 0.0, float("-inf")).to(query.dtype)._data \
            if attn_mask._be is query._be and _bcast_ok(attn_mask.shape, query.shape[:-1] + (S,)) else False
    if attn_mask.dtype is not query.dtype or attn_mask._be is not query._be \
            or not _bcast_ok(attn_mask.shape, query.shape[:-1] + (S,)):
        return False
    return attn_mask._data


def _sdpa_composite(query, key, value, attn_mask, is_causal, scale_factor, dropout_p=0.0):
    """Attention from differentiable ops (dropout, masks that need a gradient, broadcast batch dims)."""
    L, S = query.shape[-2], key.shape[-2]
    attn = _L.matmul(query, _S.transpose(key, -2, -1))
    if query.shape[-1]:  # E == 0: the scores are zeros (PyTorch scales the empty q and k, never inf * 0)
        attn = _P.mul(attn, scale_factor)
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        causal = _P.ge(_S.unsqueeze(_C.arange(L, device=query.device), 1), _C.arange(S, device=query.device))
        attn = _P.masked_fill(attn, _P.logical_not(causal), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype is _dt.bool_:
            attn = _P.masked_fill(attn, _P.logical_not(attn_mask), float("-inf")) \
                if attn_mask.shape == attn.shape or _bcast_ok(attn_mask.shape, attn.shape) \
                else _P.add(attn, _P.where(attn_mask, 0.0, float("-inf")))
        else:
            attn = _P.add(attn, attn_mask)
    attn = safe_softmax(attn) if attn_mask is not None else softmax(attn, -1)
    if dropout_p > 0.0:
        attn = _dropout_mask(attn, dropout_p)
    return _L.matmul(attn, value)


def safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, with zeros for a row whose every score is -inf (every key masked): PyTorch's
    _safe_softmax of its attention; the gradient of such a row is zero, never NaN."""
    if not scores.shape[-1]:  # no keys: nothing to reduce (amax of an empty dim raised)
        return softmax(scores, -1)
    dead = _P.eq(_R.amax(scores.detach(), -1, keepdim=True), float("-inf"))
    return _P.where(dead, 0.0, softmax(_P.where(dead, 0.0, scores), -1))


def _bcast_ok(small, big) -> bool:
    if len(small) > len(big):
        return False
    return all(s == 1 or s == b for s, b in zip(reversed(small), reversed(big)))


def _repeat_interleave(x: Tensor, rep: int, dim: int) -> Tensor:
    d = _norm_dim(dim, x.ndim)
    shp = tuple(x.shape)
    y = _S.unsqueeze(x, d + 1)
    y = _S.expand(y, shp[:d + 1] + (rep,) + shp[d + 1:])
    return _S.reshape(y, shp[:d] + (shp[d] * rep,) + shp[d + 1:])
