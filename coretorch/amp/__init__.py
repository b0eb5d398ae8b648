"""torch.amp: automatic mixed precision (autocast regions and gradient scaling)."""
from __future__ import annotations

from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available,
                            is_autocast_enabled, set_autocast_dtype, set_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available", "GradScaler", "is_autocast_enabled",
           "get_autocast_dtype", "set_autocast_enabled", "set_autocast_dtype"]
