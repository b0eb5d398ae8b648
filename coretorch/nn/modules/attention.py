"""MultiheadAttention with PyTorch's parameter layout: packed ``in_proj_weight`` (3E, E) / ``in_proj_bias``
(or ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when kdim/vdim differ) and ``out_proj``."""
from __future__ import annotations


from ... import dtypes as _dt
from ...amp.autocast_mode import is_autocast_enabled
from ...autograd.grad_mode import state as _gs
from ...backends import mha as _mha
from ...ops import pointwise as _P, reduction as _R, shape as _S
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention"]


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

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """PyTorch's helper for its fused kernels: ``(merged_mask, mask_type)``: the key padding mask (type 1), or
        ``attn_mask`` expanded to ``(N, num_heads, L, L)`` plus the expanded key padding mask (type 2); ``(None,
        None)`` without masks.  ``query`` is ``(N, L, E)``."""
        mask_type, merged = None, None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.ndim == 3:
                merged = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                merged = attn_mask.view(1, 1, seq_len, seq_len).expand(batch_size, self.num_heads, -1, -1)
            if key_padding_mask is not None:
                merged = merged + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(-1, self.num_heads,
                                                                                           -1, -1)
        return merged, mask_type

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        batched = query.ndim == 3
        self_attn = query is key and key is value  # (before the transposes below make new tensors)
        if batched and self.batch_first:
            query, key, value = (_S.transpose(t, 0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if batched and self.batch_first:
            out = _S.transpose(out, 0, 1)
            if not need_weights and (attn_mask is not None or key_padding_mask is not None) \
                    and self_attn and self._fast_path(query):
                out = self._fast_path_nan_rows(out, attn_mask, key_padding_mask)
        return out, weights

    def _fast_path(self, query) -> bool:
        """Whether PyTorch would run this batch-first self-attention call through its fused
        ``_native_multi_head_attention`` (the conditions of its MultiheadAttention.forward)."""
        w, b = self.in_proj_weight, self.in_proj_bias
        if self.training or not _mha.get_fastpath_enabled() or w is None or query.dtype is not w.dtype \
                or (b is not None and query.dtype is not b.dtype) or self.num_heads % 2 \
                or self.bias_k is not None or self.bias_v is not None or self.add_zero_attn \
                or not self._qkv_same_embed_dim or is_autocast_enabled():
            return False
        args = (query, w, b, self.out_proj.weight, self.out_proj.bias)
        return not (_gs.enabled and any(t is not None and t.requires_grad for t in args))

    def _fast_path_nan_rows(self, out, attn_mask, key_padding_mask):
        """PyTorch's fused kernel takes a boolean mask through its masked softmax, which leaves NaN where a query
        sees no key (its unfused path, coretorch's, gives the output bias there); float masks give the bias in
        both."""
        if any(m is not None and m.dtype is not _dt.bool_ for m in (attn_mask, key_padding_mask)):
            return out
        return nan_where_blind(out, attn_mask, key_padding_mask)


def nan_where_blind(out, attn_mask, key_padding_mask):
    """``out`` (N, L, E) with NaN rows where a (batch-first self-attention) query sees no key through the masks
    (boolean: True hides; float: -inf hides), as PyTorch's fused attention kernels leave them."""
    n, seq = out.shape[0], out.shape[1]
    masked = None  # (N or 1, H or 1, L, S): True where the key is hidden from the query
    for m, shape in ((attn_mask, (n, -1, seq, seq) if attn_mask is not None and attn_mask.ndim == 3
                      else (1, 1, seq, seq)), (key_padding_mask, (n, 1, 1, seq))):
        if m is not None:
            hidden = m.reshape(shape) if m.dtype is _dt.bool_ else _P.eq(m.reshape(shape), float("-inf"))
            masked = hidden if masked is None else _P.logical_or(masked, hidden)
    if masked is None:
        return out
    blind = _R.any(_R.all(masked, -1), 1)  # (N or 1, L): some head of the query sees no key
    return _P.where(_S.unsqueeze(blind, -1), float("nan"), out)
