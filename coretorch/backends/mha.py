"""torch.backends.mha: the switch for PyTorch's fast path of MultiheadAttention and TransformerEncoder.

coretorch has one implementation; the switch decides, as in PyTorch, whether a TransformerEncoder in inference
gives the nested fast path's zeros at padded positions."""
from __future__ import annotations

_is_fastpath_enabled: bool = True


def get_fastpath_enabled() -> bool:
    """Whether the fast path of TransformerEncoder and MultiheadAttention is enabled (it still runs only when
    its conditions on the inputs hold)."""
    return _is_fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    """Enable or disable the fast path."""
    global _is_fastpath_enabled
    _is_fastpath_enabled = value
