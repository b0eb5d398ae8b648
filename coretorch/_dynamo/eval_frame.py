"""``torch._dynamo.eval_frame``: where scripts find ``OptimizedModule`` (``isinstance(model,
torch._dynamo.eval_frame.OptimizedModule)`` to unwrap ``model._orig_mod`` before saving)."""
from __future__ import annotations

from .._compile.optimized import OptimizedModule

__all__ = ["OptimizedModule"]
