"""``coretorch._compile.config`` and the registries ``reset()`` clears."""
from __future__ import annotations

import weakref


class _Config:
    """``coretorch._compile.config`` (PyTorch's ``torch._dynamo.config``): ``recompile_limit`` captures per
    compiled function before new guard sets run eagerly (with one warning)."""

    recompile_limit: int = 8
    cache_size_limit: int = 8  # PyTorch's older name; read when recompile_limit is left at its default
    fusion: bool = True  # fuse elementwise chains on devices with a compile_fused hook (opencl); see fusion.py
    pool: bool = True  # temporaries into buffers planned once per capture on devices with a compile_out hook; plan.py
    # cpu replays run GELU/layer norm/softmax as another plugin's kernels on the same memory (PoCL through the opencl
    # plugin); within float32 rounding of eager, not bitwise; also per compile call: mode="max-autotune" or
    # options={"host_fusion": True}.  See hostfuse.py
    host_fusion: bool = False
    # replays of a capture lowered to the launches their kernel-table calls make, after two observed replays, on
    # devices with a compile_lower hook (opencl); bitwise the table calls.  See lower.py
    lower: bool = True


config = _Config()


def recompile_limit_of(own: int | None) -> int:
    """A compile call's recompile_limit: its own, else the config's (PyTorch's older cache_size_limit honoured)."""
    if own is not None:
        return own
    limit = config.recompile_limit
    return config.cache_size_limit if limit == 8 and config.cache_size_limit != 8 else limit
live_functions: weakref.WeakSet = weakref.WeakSet()  # every CompiledFunction (reset() clears them)
live_modules: weakref.WeakSet = weakref.WeakSet()  # every ModuleCapture
