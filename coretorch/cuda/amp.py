"""torch.cuda.amp: PyTorch's deprecated CUDA spellings of torch.amp.  coretorch has no CUDA device, so these are
disabled with PyTorch's warnings (autocast for 'cuda', GradScaler for 'cuda'), after its FutureWarning."""
from __future__ import annotations

import warnings

from .. import dtypes as _dt
from ..amp import autocast_mode as _ac, grad_scaler as _gs

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_ac.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True): autocast('cuda', ...)."""

    def __init__(self, enabled: bool = True, dtype: _dt.dtype = _dt.float16, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_gs.GradScaler):
    """torch.cuda.amp.GradScaler(...): torch.amp.GradScaler('cuda', ...)."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: torch.amp.custom_fwd(device_type='cuda')."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use `torch.amp.custom_fwd(args..., "
                  "device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _ac.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """torch.cuda.amp.custom_bwd: torch.amp.custom_bwd(device_type='cuda')."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use `torch.amp.custom_bwd(args..., "
                  "device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _ac.custom_bwd(bwd, device_type="cuda")
