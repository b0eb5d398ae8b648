"""PyTorch's deprecated per-device spellings of torch.amp (``torch.cuda.amp.autocast``, ``torch.cpu.amp.GradScaler``,
...): the same classes for one device type, each warning PyTorch's FutureWarning on construction."""
from __future__ import annotations

import warnings

from .. import dtypes as _dt
from . import autocast_mode as _ac, grad_scaler as _gs


def spellings(device_type: str, default_dtype: _dt.dtype) -> tuple[type, type]:
    """(autocast, GradScaler) of ``torch.<device_type>.amp``."""

    class autocast(_ac.autocast):
        __doc__ = f"torch.{device_type}.amp.autocast(enabled=True, dtype=torch.{default_dtype}, " \
                  f"cache_enabled=True): autocast('{device_type}', ...)."

        def __init__(self, enabled: bool = True, dtype: _dt.dtype = default_dtype,
                     cache_enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device_type}.amp.autocast(args...)` is deprecated. Please use "
                          f"`torch.amp.autocast('{device_type}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    class GradScaler(_gs.GradScaler):
        __doc__ = f"torch.{device_type}.amp.GradScaler(...): torch.amp.GradScaler('{device_type}', ...)."

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device_type}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device_type}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
    autocast.__module__ = GradScaler.__module__ = f"coretorch.{device_type}.amp"
    return autocast, GradScaler
