"""MultiheadAttention with PyTorch's parameter layout: packed ``in_proj_weight`` (3E, E) / ``in_proj_bias``
(or ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when kdim/vdim differ) and ``out_proj``."""
from __future__ import annotations

import math

from ... import dtypes as _dt
from ...ops import linalg as _L, pointwise as _P, reduction as _R, shape as _S
from ...ops.creation import empty, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention"]


def _to_float_mask(mask, dtype, name):
    if mask is None:
        return None
    if mask.dtype is _dt.bool_:
        return _P.where(mask, float("-inf"), 0.0).to(dtype)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.to(dtype)


class MultiheadAttention(Module):
    """Multi-head attention: ``concat(head_1, ..., head_h) @ W_o`` with
    ``head_i = softmax(Q W_q_i (K W_k_i).T / sqrt(d)) V W_v_i``.

    Args:
        embed_dim (int): the model dimension ``E``.
        num_heads (int): must divide ``embed_dim``.
        dropout (float): dropout on the attention weights (default 0).
        bias (bool): biases on the projections (default True).
        add_bias_kv (bool): learned bias rows appended to keys and values.
        add_zero_attn (bool): a zero row appended to keys and values.
        kdim, vdim (int, optional): the key and value dimensions (default ``E``).
        batch_first (bool): inputs are ``(N, L, E)`` instead of ``(L, N, E)``.

    Call: ``mha(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights)``; ``output`` has the query's shape,
    ``weights`` is ``(N, L, S)`` (averaged over heads) or None.

    Example:
        >>> mha = nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = torch.randn(2, 5, 16)
        >>> out, w = mha(x, x, x)
    """
    __constants__ = ["batch_first"]

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = dict(device=device, dtype=dtype)
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:  # a learned key and value appended to every sequence
            self.bias_k: Parameter | None = Parameter(empty((1, 1, embed_dim), **kw))
            self.bias_v: Parameter | None = Parameter(empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _proj(self, x, i):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight[i * e:(i + 1) * e]
        else:
            w = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)[i]
        b = self.in_proj_bias[i * e:(i + 1) * e] if self.in_proj_bias is not None else None
        out = _L.matmul(x, _S.t(w))
        return out if b is None else _P.add(out, b)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        batched = query.ndim == 3
        if not batched:
            query, key, value = (_S.unsqueeze(t, 1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = _S.unsqueeze(key_padding_mask, 0)
        elif self.batch_first:
            query, key, value = (_S.transpose(t, 0, 1) for t in (query, key, value))
        tgt_len, bsz, e = query.shape
        src_len = key.shape[0]
        if e != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {e}")
        h, hd = self.num_heads, self.head_dim
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                               "method `generate_square_subsequent_mask` to create this mask.")
        q = self._proj(query, 0)
        k = self._proj(key, 1)
        v = self._proj(value, 2)
        mask = _to_float_mask(attn_mask, q.dtype, "attn_mask")
        kpm = _to_float_mask(key_padding_mask, q.dtype, "key_padding_mask")
        if self.bias_k is not None:  # one more key/value position, never masked
            assert self.bias_v is not None  # set with bias_k
            k = _S.cat([k, _S.expand(self.bias_k, (1, bsz, e))])
            v = _S.cat([v, _S.expand(self.bias_v, (1, bsz, e))])
            mask, kpm = _pad_last(mask), _pad_last(kpm)
            src_len += 1
        # (L, N, E) -> (N*H, L, hd)
        q = _S.transpose(q.reshape(tgt_len, bsz * h, hd), 0, 1)
        k = _S.transpose(k.reshape(src_len, bsz * h, hd), 0, 1)
        v = _S.transpose(v.reshape(src_len, bsz * h, hd), 0, 1)
        if self.add_zero_attn:  # and a zero key/value position
            k = _S.cat([k, zeros((bsz * h, 1, hd), dtype=k.dtype, device=k.device)], 1)
            v = _S.cat([v, zeros((bsz * h, 1, hd), dtype=v.dtype, device=v.device)], 1)
            mask, kpm = _pad_last(mask), _pad_last(kpm)
            src_len += 1
        if mask is not None:
            if mask.ndim == 2:
                if tuple(mask.shape) != (tgt_len, src_len):
                    raise RuntimeError(f"The shape of the 2D attn_mask is {list(mask.shape)}, but should be "
                                       f"{[tgt_len, src_len]}.")
                mask = _S.unsqueeze(mask, 0)
            elif tuple(mask.shape) != (bsz * h, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {list(mask.shape)}, but should be "
                                   f"{[bsz * h, tgt_len, src_len]}.")
        if kpm is not None:
            if tuple(kpm.shape) != (bsz, src_len):
                raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                     f"{tuple(kpm.shape)}")
            kpm = _S.expand(kpm.reshape(bsz, 1, 1, src_len), (bsz, h, 1, src_len)).reshape(bsz * h, 1, src_len)
            mask = kpm if mask is None else _P.add(mask, kpm)
        scores = _P.mul(_L.bmm(q, _S.transpose(k, 1, 2)), 1.0 / math.sqrt(hd))
        if mask is not None:
            scores = _P.add(scores, mask)
        attn = F.softmax(scores, -1)
        if self.dropout > 0.0 and self.training:
            attn = F.dropout(attn, self.dropout, True)
        out = _L.bmm(attn, v)                                           # (N*H, L, hd)
        out = _S.transpose(out, 0, 1).reshape(tgt_len * bsz, e)
        out = self.out_proj(out).reshape(tgt_len, bsz, e)
        weights = None
        if need_weights:
            weights = attn.reshape(bsz, h, tgt_len, src_len)
            if average_attn_weights:
                weights = _R.mean(weights, 1)
            if not batched:
                weights = _S.squeeze(weights, 0)
        if not batched:
            out = _S.squeeze(out, 1)
        elif self.batch_first:
            out = _S.transpose(out, 0, 1)
        return out, weights


def _pad_last(mask):
    """A float mask with one more (unmasked) column for an appended key position."""
    if mask is None:
        return None
    return F.pad(mask, (0, 1))
