"""torch.backends.cuda: ``matmul.allow_tf32`` and the SDPA switches, accepted and kept; ``is_built()`` False."""
from __future__ import annotations


def is_built() -> bool:
    """Whether coretorch was built with CUDA: always False."""
    return False


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: settable attributes, as PyTorch's (they change nothing here)."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.fp32_precision = "ieee"  # PyTorch 2.9's spelling of allow_tf32 ("ieee" or "tf32")


matmul = _MatmulFlags()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled() -> bool:
    """Whether the flash scaled-dot-product-attention kernel is enabled (a kept flag: coretorch's
    ``F.scaled_dot_product_attention`` has one implementation per device whatever it says).
    """
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    """Enable or disable the flash attention kernel (kept, no effect).

    Args:
        enabled (bool): the new value.
    """
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    """Whether the memory-efficient attention kernel is enabled (a kept flag, no effect)."""
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Enable or disable the memory-efficient attention kernel (kept, no effect).

    Args:
        enabled (bool): the new value.
    """
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    """Whether the math attention implementation is enabled (a kept flag, no effect)."""
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    """Enable or disable the math attention implementation (kept, no effect).

    Args:
        enabled (bool): the new value.
    """
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    """Whether the cuDNN attention kernel is enabled (a kept flag, no effect)."""
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    """Enable or disable the cuDNN attention kernel (kept, no effect).

    Args:
        enabled (bool): the new value.
    """
    _sdp["cudnn"] = bool(enabled)
