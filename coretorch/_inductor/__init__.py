"""``torch._inductor``: the names of PyTorch's compiler back end that scripts set (``torch._inductor.config``).

coretorch's compile has no Inductor (it replays recorded kernel launches: :mod:`coretorch._compile`), so of its
knobs one drives coretorch and the rest are kept for scripts that set them:

* ``max_autotune`` (False): the same knob as ``torch._dynamo.config.host_fusion``: cpu replays run GELU, layer norm
  and softmax as PoCL kernels on numpy's memory (``mode="max-autotune"`` per compile call; see
  ``coretorch._compile.hostfuse``);
* kept, no effect (they tune stages coretorch does not have: Triton and C++ code generation, FX graph caches,
  autotuned GEMM templates, freezing): ``max_autotune_gemm``, ``max_autotune_pointwise``,
  ``coordinate_descent_tuning``, ``fx_graph_cache``, ``freezing``, ``epilogue_fusion``, ``aggressive_fusion``,
  ``shape_padding``, ``cpp_wrapper``, ``conv_1x1_as_mm``, ``force_fuse_int_mm_with_mul``, ``use_mixed_mm``,
  ``benchmark_kernel``, ``debug``, ``fallback_random`` (coretorch's replays draw eager's random numbers always),
  ``triton.unique_kernel_names``, ``triton.cudagraphs``, ``cpp.threads``, ``trace.enabled``.

An unknown name raises ``AttributeError`` (``torch._inductor.config.nosuch does not exist``), as PyTorch's.
``import torch._inductor.config`` works too.
"""
from __future__ import annotations

import os
import sys

from .._compile.config import ConfigObject, config as _compile_config

__all__ = ["config", "list_options", "list_mode_options"]


class _InductorConfig(ConfigObject):
    """``torch._inductor.config`` (see the package docstring)."""

    _NAME = "torch._inductor.config"
    KNOBS = {"max_autotune_gemm": False, "max_autotune_pointwise": False, "coordinate_descent_tuning": False,
             "fx_graph_cache": True, "freezing": False, "epilogue_fusion": True, "aggressive_fusion": False,
             "shape_padding": True, "cpp_wrapper": False, "conv_1x1_as_mm": False,
             "force_fuse_int_mm_with_mul": False, "use_mixed_mm": True, "benchmark_kernel": False, "debug": False,
             "fallback_random": False, "compile_threads": min(32, os.cpu_count() or 1),
             "fx_graph_remote_cache": None, "autotune_local_cache": True, "force_disable_caches": False,
             "split_reductions": True, "layout_optimization": True, "keep_output_stride": True, "size_asserts": True,
             "implicit_fallbacks": True, "emulate_precision_casts": False, "unroll_reductions_threshold": 8,
             "max_fusion_size": 64, "benchmark_fusion": False, "group_fusion": False, "pattern_matcher": True,
             "reorder_for_locality": True, "permute_fusion": False, "allow_buffer_reuse": True,
             "inplace_buffers": True, "comprehensive_padding": True, "online_softmax": True,
             "worker_start_method": "subprocess", "search_autotune_cache": False, "autotune_in_subproc": False,
             "triton": {"unique_kernel_names": True, "cudagraphs": False, "cudagraph_trees": True,
                        "autotune_pointwise": True, "max_tiles": None, "cudagraph_skip_dynamic_graphs": False},
             "cpp": {"threads": -1, "simdlen": None, "enable_kernel_profile": False, "dynamic_threads": False},
             "trace": {"enabled": False, "graph_diagram": False}}

    @property
    def max_autotune(self) -> bool:
        """coretorch's host fusion (``torch._dynamo.config.host_fusion``): see the package docstring."""
        return _compile_config.host_fusion

    @max_autotune.setter
    def max_autotune(self, value: bool) -> None:
        _compile_config.host_fusion = bool(value)

    def get_config_copy(self) -> dict:
        return {"max_autotune": self.max_autotune, **super().get_config_copy()}


config = _InductorConfig()
sys.modules[__name__ + ".config"] = config  # type: ignore[assignment]  # (``import torch._inductor.config``)


def list_options() -> list[str]:
    """The names ``torch._inductor.config`` knows (and ``compile(options=...)`` accepts, with ``host_fusion``)."""
    return sorted(config.get_config_copy())


# PyTorch's "lite" mode: opt-in optimizations only (its passes, dead-code elimination and buffer reuse off)
_LITE = {"fallback_by_default": True, "selective_decompose": True, "reorder_for_peak_memory": False,
         "reorder_for_compute_comm_overlap": False, "triton.reorder_for_reducing_graph_partitions": False,
         "use_pre_grad_passes": False, "use_joint_graph_passes": False, "use_post_grad_passes": False,
         "use_dce": False, "allow_buffer_reuse": False}
_MODE_OPTIONS = {"default": {}, "lite": _LITE, "reduce-overhead": {"triton.cudagraphs": True},
                 "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
                 "max-autotune": {"max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True}}


def list_mode_options(mode: str | None = None, dynamic: bool | None = None) -> dict:
    """The options each ``compile`` mode sets (of ``mode``, or all of them by mode), as PyTorch's."""
    if mode is None:
        return {m: dict(v) for m, v in _MODE_OPTIONS.items()}
    if mode not in _MODE_OPTIONS:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODE_OPTIONS)}")
    return dict(_MODE_OPTIONS[mode])
