"""torch.cpu.amp: PyTorch's deprecated CPU spellings of torch.amp (autocast('cpu', ...) and GradScaler('cpu', ...)),
with its FutureWarnings."""
from __future__ import annotations

from .. import dtypes as _dt
from ..amp._deprecated import spellings as _spellings

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = _spellings("cpu", _dt.bfloat16)
