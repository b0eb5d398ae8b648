"""torch.backends: the flags scripts set on their first lines (cudnn, cuda.matmul, mps, opt_einsum).

The CUDA/cuDNN/MPS flags are accepted and remembered (coretorch has none of those libraries, so they change
nothing); ``opt_einsum`` is real: coretorch's einsum orders its contractions with it.
"""
from __future__ import annotations

from . import cpu, cuda, cudnn, mha, mkldnn, mps, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mha", "mkldnn", "mps", "opt_einsum", "fp32_precision"]

fp32_precision = "ieee"  # PyTorch 2.9's global default for the per-backend fp32_precision flags
