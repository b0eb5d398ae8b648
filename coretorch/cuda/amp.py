"""torch.cuda.amp: PyTorch's deprecated CUDA spellings of torch.amp.  coretorch has no CUDA device, so these are
disabled with PyTorch's warnings (autocast for 'cuda', GradScaler for 'cuda'), after its FutureWarning."""
from __future__ import annotations

import warnings

from .. import dtypes as _dt
from ..amp import autocast_mode as _ac
from ..amp._deprecated import spellings as _spellings

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


autocast, GradScaler = _spellings("cuda", _dt.float16)


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
