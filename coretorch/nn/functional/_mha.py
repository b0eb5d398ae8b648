"""``F.multi_head_attention_forward``: PyTorch's functional multi-head attention on ``(L, N, E)`` inputs (or
unbatched ``(L, E)``); ``nn.MultiheadAttention`` calls it as PyTorch's module does."""
from __future__ import annotations

import math
import warnings

from ... import dtypes as _dt
from ...amp.autocast_mode import state as _ac
from ...ops import linalg as _L
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from ...ops.creation import arange, zeros
from ._activation import softmax
from ._attention import safe_softmax
from ._basic import dropout, linear
from ._padding import pad

__all__ = ["multi_head_attention_forward"]


def _to_float_mask(mask, dtype, name, other=None):
    """PyTorch's _canonical_mask: a bool mask as an additive float mask, float masks as they are; a key padding
    mask of another dtype than ``other`` (the attn_mask) warns that mismatched masks are deprecated."""
    if mask is None:
        return None
    if mask.dtype is not _dt.bool_ and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and mask.dtype is not other.dtype:
        warnings.warn(f"Support for mismatched {name} and attn_mask is deprecated. Use same type for both instead.",
                      stacklevel=4)
    if mask.dtype is _dt.bool_:
        return _P.where(mask, float("-inf"), 0.0).to(dtype)
    return mask  # PyTorch keeps a float mask's dtype: see _check_mask_dtype


def _check_mask_dtype(mask_dt, query_dt, need_weights: bool) -> None:
    """PyTorch adds a float mask of another dtype than the query as it is: with the weights returned into a
    baddbmm (dtypes must match), else into scaled_dot_product_attention (float32 or the query's dtype)."""
    if need_weights:
        if _ac.on:  # autocast casts baddbmm's operands to one dtype
            return
        raise RuntimeError(f"Input dtypes must be the same, got: input {mask_dt._tname[:-6].lower()}, batch1: "
                           f"{query_dt._tname[:-6].lower()}, batch2: {query_dt._tname[:-6].lower()}")
    if mask_dt is not _dt.float32:
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {mask_dt} and  query.dtype: {query_dt} instead.")


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """PyTorch's _mha_shape_check: whether the inputs are batched, AssertionError for ranks that do not go
    together."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.ndim}-D tensor instead")
        return True
    if query.ndim != 2:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query "
                             "tensor")
    if key.ndim != 2 or value.ndim != 2:
        raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                             f"{key.ndim}-D and {value.ndim}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != 1:
        raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                             f"found {key_padding_mask.ndim}-D tensor instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.ndim}-D tensor instead")
        if attn_mask.ndim == 3 and tuple(attn_mask.shape) != (num_heads, query.shape[0], key.shape[0]):
            raise AssertionError(f"Expected `attn_mask` shape to be {(num_heads, query.shape[0], key.shape[0])} "
                                 f"but got {attn_mask.shape}")
    return False


def _pad_last(mask):
    """A float mask with one more (unmasked) column for an appended key position."""
    return None if mask is None else pad(mask, (0, 1))


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight, out_proj_bias, training: bool = True, key_padding_mask=None,
                                 need_weights: bool = True, attn_mask=None, use_separate_proj_weight: bool = False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights: bool = True, is_causal: bool = False):
    """Multi-head attention with PyTorch's functional signature: inputs ``(L, N, E)`` / ``(S, N, E)`` (or
    unbatched), packed ``in_proj_weight`` (3E, E) or separate ``q/k/v_proj_weight`` when
    ``use_separate_proj_weight``; returns ``(output (L, N, E), weights (N, L, S) or (N, H, L, S) or None)``."""
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = (_S.unsqueeze(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = _S.unsqueeze(key_padding_mask, 0)
    tgt_len, bsz, e = query.shape
    src_len = key.shape[0]
    if e != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {e}")
    h = num_heads
    hd = e // h
    if hd * h != e:
        raise AssertionError(f"embed_dim {e} not divisible by num_heads {h}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    # PyTorch: without a key padding mask or returned weights the is_causal hint replaces attn_mask (its documented
    # "ignores attn_mask"): a top-left causal mask over the final keys (bias_k and the zero key included)
    causal = is_causal and key_padding_mask is None and not need_weights
    if causal:
        attn_mask = None
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
                                 "v_proj_weight is None")
        ws = (q_proj_weight, k_proj_weight, v_proj_weight)
        for name, w, x in zip(("query", "key", "value"), ws, (query, key, value)):  # PyTorch's _in_projection
            if tuple(w.shape) != (e, x.shape[-1]):
                raise AssertionError(f"expecting {name} weights shape of {(e, x.shape[-1])}, but got "
                                     f"torch.Size({list(w.shape)})")
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        ws = tuple(in_proj_weight[i * e:(i + 1) * e] for i in range(3))
    bs = (None,) * 3 if in_proj_bias is None else tuple(in_proj_bias[i * e:(i + 1) * e] for i in range(3))
    q, k, v = (linear(x, w, b) for x, w, b in zip((query, key, value), ws, bs))
    mask = _to_float_mask(attn_mask, q.dtype, "attn_mask")
    kpm = _to_float_mask(key_padding_mask, q.dtype, "key_padding_mask", attn_mask)
    if bias_k is not None and bias_v is not None:  # one more key/value position, never masked
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = _S.cat([k, _S.expand(bias_k, (1, bsz, e))])
        v = _S.cat([v, _S.expand(bias_v, (1, bsz, e))])
        mask, kpm = _pad_last(mask), _pad_last(kpm)
    elif (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    # (L, N, E) -> (N*H, L, hd)
    q = _S.transpose(q.reshape(tgt_len, bsz * h, hd), 0, 1)
    for name, st in (("static_k", static_k), ("static_v", static_v)):
        if st is not None and (st.shape[0] != bsz * h or st.shape[2] != hd):
            i, want = (0, bsz * h) if st.shape[0] != bsz * h else (2, hd)
            raise AssertionError(f"expecting {name}.size({i}) of {want}, but got {st.shape[i]}")
    k = static_k if static_k is not None else _S.transpose(k.reshape(k.shape[0], bsz * h, hd), 0, 1)
    v = static_v if static_v is not None else _S.transpose(v.reshape(v.shape[0], bsz * h, hd), 0, 1)
    if add_zero_attn:  # and a zero key/value position
        k = _S.cat([k, zeros((bsz * h, 1, hd), dtype=k.dtype, device=k.device)], 1)
        v = _S.cat([v, zeros((bsz * h, 1, hd), dtype=v.dtype, device=v.device)], 1)
        mask, kpm = _pad_last(mask), _pad_last(kpm)
    src_len = k.shape[1]
    if causal:
        rows = _S.unsqueeze(arange(tgt_len, device=q.device), 1)
        mask = _S.unsqueeze(_P.where(_P.ge(rows, arange(src_len, device=q.device)), 0.0, float("-inf")).to(q.dtype), 0)
    elif mask is not None:
        if mask.ndim == 2:
            if tuple(mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            mask = _S.unsqueeze(mask, 0)
        elif tuple(mask.shape) != (bsz * h, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {mask.shape}, but should be "
                               f"{(bsz * h, tgt_len, src_len)}.")
    if kpm is not None:
        for i, want in enumerate((bsz, src_len)):  # (PyTorch's _check_key_padding_mask and its wording)
            if kpm.ndim > i and kpm.shape[i] != want:
                raise AssertionError(f"Expected key_padded_mask.shape[{i}] to be {want}, but got {kpm.shape[i]}")
        if tuple(kpm.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got {kpm.shape}")
        kpm = _S.expand(kpm.reshape(bsz, 1, 1, src_len), (bsz, h, 1, src_len)).reshape(bsz * h, 1, src_len)
        mask = kpm if mask is None else _P.add(mask, kpm)
    if mask is not None and mask.dtype is not q.dtype:
        _check_mask_dtype(mask.dtype, q.dtype, need_weights)
        mask = mask.to(q.dtype)
    scores = _P.mul(_L.bmm(q, _S.transpose(k, 1, 2)), 1.0 / math.sqrt(hd))
    if mask is not None:
        scores = _P.add(scores, mask)
    # PyTorch computes the weights it returns with softmax (NaN for a row with every key masked), else it calls
    # scaled_dot_product_attention (zeros there)
    attn = softmax(scores, -1) if need_weights or mask is None else safe_softmax(scores)
    if dropout_p > 0.0 and training:
        attn = dropout(attn, dropout_p, True)
    out = _L.bmm(attn, v)                                           # (N*H, L, hd)
    out = _S.transpose(out, 0, 1).reshape(tgt_len * bsz, e)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, e)
    weights = None
    if need_weights:
        weights = attn.reshape(bsz, h, tgt_len, src_len)
        if average_attn_weights:
            weights = _R.mean(weights, 1)
        if not batched:
            weights = _S.squeeze(weights, 0)
    if not batched:
        out = _S.squeeze(out, 1)
    return out, weights
