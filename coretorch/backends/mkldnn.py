"""torch.backends.mkldnn: oneDNN is not part of coretorch (the cpu backend computes with numpy)."""
from __future__ import annotations

enabled = True


def is_available() -> bool:
    """Whether oneDNN (MKL-DNN) can be used: always False (the cpu backend computes with numpy)."""
    return False
