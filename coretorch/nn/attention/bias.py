"""torch.nn.attention.bias: causal attention biases for ``scaled_dot_product_attention``.

``causal_upper_left(L, S)`` is ``is_causal=True``'s mask; ``causal_lower_right(L, S)`` aligns the causal triangle
to the lower-right corner (query ``i`` sees keys ``<= i + S - L``: decoding with a key/value cache).  Passed as
``attn_mask`` they make ``scaled_dot_product_attention`` run causally (PyTorch's ``CausalBias`` is a tensor
subclass dispatching through ``__torch_function__``; here ``scaled_dot_product_attention`` recognises it).
"""
from __future__ import annotations

import warnings
from enum import IntEnum, auto

from ... import dtypes as _dt
from ...ops import creation as _C
from ...ops.triangular import tril

__all__ = ["CausalVariant", "CausalBias", "causal_upper_left", "causal_lower_right"]


class CausalVariant(IntEnum):
    """Which corner the causal triangle is aligned to: ``UPPER_LEFT`` (``is_causal=True``) or ``LOWER_RIGHT``."""

    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


class CausalBias:
    """A causal attention bias of ``seq_len_q`` queries over ``seq_len_kv`` keys (see :class:`CausalVariant`)."""

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!",
                          stacklevel=2)

    def _upper_left(self, device):
        return tril(_C.ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=_dt.bool_))

    def _lower_right(self, device):
        return tril(_C.ones(self.seq_len_q, self.seq_len_kv, device=device, dtype=_dt.bool_),
                    diagonal=self.seq_len_kv - self.seq_len_q)

    def _materialize(self, device=None):
        """The bias as a bool mask (True: the key takes part), on ``device`` (cpu when None)."""
        device = "cpu" if device is None else device
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        return self._lower_right(device)

    @staticmethod
    def _dispatch(query, key, value, attn_mask: CausalBias, dropout_p: float = 0.0, is_causal: bool = False,
                  scale=None, enable_gqa: bool = False):
        """``scaled_dot_product_attention`` with this bias as its mask."""
        from ..functional import scaled_dot_product_attention

        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout_p,
                                                is_causal=True, scale=scale, enable_gqa=enable_gqa)
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:
            return scaled_dot_product_attention(query, key, value, attn_mask=attn_mask._materialize(query.device),
                                                dropout_p=dropout_p, is_causal=False, scale=scale,
                                                enable_gqa=enable_gqa)
        raise ValueError(f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}")

    def __repr__(self) -> str:
        return repr(self._materialize())


def causal_upper_left(*size) -> CausalBias:
    """An upper-left causal bias of ``size`` ``(seq_len_q, seq_len_kv)``: ``is_causal=True``'s mask."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size) -> CausalBias:
    """A lower-right causal bias of ``size`` ``(seq_len_q, seq_len_kv)``: the triangle aligned to the last key."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])
