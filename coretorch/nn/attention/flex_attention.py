"""coretorch.nn.attention.flex_attention: attention with a user ``score_mod`` and a ``mask_mod`` (PyTorch's
FlexAttention), computed by reference on every device: the full ``(B, H, L, S)`` score matrix is built, ``score_mod``
and ``mask_mod`` are called once on it with broadcast index tensors (``b``: ``(B, 1, 1, 1)``, ``h``: ``(1, H, 1, 1)``,
``q_idx``: ``(1, 1, L, 1)``, ``kv_idx``: ``(1, 1, 1, S)``) instead of PyTorch's vmap over scalars, which gives the
same values for the element-wise functions these are; gradients flow through both.

There are no fused kernels: the memory is that of the scores (PyTorch's compiled kernels skip masked blocks).  A
row whose every position is masked gives a zero output and a ``-inf`` log-sum-exp, as PyTorch's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from ...ops import creation as _C, pointwise as _P, reduction as _R, shape as _S
from ...ops.linalg import matmul as _matmul
from ...tensor import Tensor

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions", "create_block_mask",
           "create_mask", "or_masks", "and_masks", "noop_mask"]

FlexKernelOptions = dict  # PyTorch's TypedDict of kernel tuning options: accepted, there are no kernels to tune


@dataclass(frozen=True)
class AuxRequest:
    """Which auxiliary outputs ``flex_attention(..., return_aux=AuxRequest(...))`` returns."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The auxiliary outputs asked for (None for the others): the log-sum-exp and the maximum of each row's
    scores."""
    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
    """The mask_mod that keeps every position."""
    return _P.ge(q_idx - q_idx + kv_idx - kv_idx, 0)  # True, broadcast like the indices


def and_masks(*mask_mods: Callable) -> Callable:
    """The mask_mod keeping the positions every one of ``mask_mods`` keeps."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = noop_mask(b, h, q_idx, kv_idx)
        for m in mask_mods:
            result = result & m(b, h, q_idx, kv_idx)
        return result
    return and_mask


def or_masks(*mask_mods: Callable) -> Callable:
    """The mask_mod keeping the positions any of ``mask_mods`` keeps."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = ~noop_mask(b, h, q_idx, kv_idx)
        for m in mask_mods:
            result = result | m(b, h, q_idx, kv_idx)
        return result
    return or_mask


def _indices(B: int, H: int, L: int, S: int, device) -> tuple:
    def ar(n, dim):
        shape = [1, 1, 1, 1]
        shape[dim] = n
        return _S.reshape(_C.arange(n, device=device), tuple(shape))
    return ar(B, 0), ar(H, 1), ar(L, 2), ar(S, 3)


def create_mask(mod_fn: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int, device=None) -> Tensor:
    """The dense ``(B, H, Q_LEN, KV_LEN)`` bool mask of a mask_mod (B or H None: 1)."""
    B, H = B or 1, H or 1
    idx = _indices(B, H, Q_LEN, KV_LEN, device)
    m = mod_fn(*idx)
    return _S.expand(m, (B, H, Q_LEN, KV_LEN)).contiguous()


class BlockMask:
    """A mask_mod with the sizes it covers (what ``create_block_mask`` returns).  PyTorch stores which blocks of
    ``BLOCK_SIZE`` are masked for its kernels; here the mask is evaluated densely when attention needs it."""

    def __init__(self, mask_mod: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                 BLOCK_SIZE=128, device=None) -> None:
        self.mask_mod = mask_mod
        self.seq_lengths = (Q_LEN, KV_LEN)
        self.shape = (B or 1, H or 1, Q_LEN, KV_LEN)
        self.BLOCK_SIZE = BLOCK_SIZE if isinstance(BLOCK_SIZE, tuple) else (BLOCK_SIZE, BLOCK_SIZE)
        self.device = device

    def to_dense(self, device=None) -> Tensor:
        """The mask as a dense ``(B, H, Q_LEN, KV_LEN)`` bool tensor."""
        return create_mask(self.mask_mod, *self.shape, device=device if device is not None else self._device())

    def _device(self):
        from ...device import device as Device
        try:
            return Device(self.device) if self.device is not None else None
        except RuntimeError:  # PyTorch's default is "cuda": the mask is built on the query's device instead
            return None

    def sparsity(self) -> float:
        """The percentage of positions the mask removes."""
        dense = self.to_dense()
        return 100.0 * (1.0 - float(dense.float().mean()))

    def __repr__(self) -> str:
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, mask_mod={self.mask_mod.__name__})"


def create_block_mask(mask_mod: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int, device=None,
                      BLOCK_SIZE=128, _compile: bool = False, **kwargs: Any) -> BlockMask:
    """A :class:`BlockMask` of ``mask_mod(b, h, q_idx, kv_idx) -> bool`` over the given sizes (B or H None: shared
    by every batch element / head)."""
    return BlockMask(mask_mod, B, H, Q_LEN, KV_LEN, BLOCK_SIZE, device)


def flex_attention(query: Tensor, key: Tensor, value: Tensor, score_mod: Callable | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None, enable_gqa: bool = False,
                   return_lse: bool = False, kernel_options: dict | None = None, *,
                   return_aux: AuxRequest | None = None):
    """``softmax(score_mod(q k^T * scale) masked by block_mask) v`` for ``query`` (B, Hq, L, E), ``key`` (B, Hkv, S,
    E) and ``value`` (B, Hkv, S, Ev); ``enable_gqa`` shares each key/value head among ``Hq // Hkv`` query heads.
    Returns the output (B, Hq, L, Ev), with the log-sum-exp (B, Hq, L) for ``return_lse``, or with an
    :class:`AuxOutput` for ``return_aux``."""
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise ValueError(f"NYI: query, key, and value must be 4D tensors, got {query.dim()}D, {key.dim()}D and "
                         f"{value.dim()}D")
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is deprecated, please use "
                         "return_aux=AuxRequest(lse=True)")
    B, Hq, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={Hq} and "
                             f"Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
        if Hq % Hkv != 0:
            raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got Hq={Hq} "
                             f"and Hkv={Hkv}.")
        rep = Hq // Hkv
        key = _S.reshape(_S.expand(_S.unsqueeze(key, 2), (B, Hkv, rep, S, E)), (B, Hq, S, E))
        value = _S.reshape(_S.expand(_S.unsqueeze(value, 2), (B, Hkv, rep, S, value.shape[-1])),
                           (B, Hq, S, value.shape[-1]))
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = _matmul(query, _S.transpose(key, -2, -1)) * scale
    idx = _indices(B, Hq, L, S, query.device)
    if score_mod is not None:
        scores = score_mod(scores, *idx)
    if block_mask is not None:
        keep = _S.expand(block_mask.mask_mod(*idx), tuple(scores.shape))
        scores = scores.masked_fill(~keep, float("-inf"))
    lse = _R.logsumexp(scores, -1)
    # exp(score - lse): a fully masked row (lse = -inf) would be NaN; it gives zero weights instead
    some = _P.ne(lse, float("-inf"))
    weights = _P.where(_S.unsqueeze(some, -1), _P.exp(scores - _S.unsqueeze(_P.where(some, lse, 0.0), -1)), 0.0)
    out = _matmul(weights.to(value.dtype), value)
    if return_lse:
        return out, lse
    if return_aux is not None:
        return out, AuxOutput(lse=lse if return_aux.lse else None,
                              max_scores=_R.amax(scores, -1) if return_aux.max_scores else None)
    return out

