"""``torch._logging.set_logs``: the compiler's logs (:mod:`coretorch._compile.logs`).

``recompiles`` (and ``recompiles_verbose``) logs each capture of a compiled callable that already has one, with
what changed; ``graph_breaks`` logs each capture that ends in a graph break, with its reasons; ``dynamo=`` or
``all=`` at ``logging.INFO`` or below turns both on.  PyTorch's other keywords are accepted and log nothing: they
name stages coretorch does not have (AOT graphs, Inductor's output code, distributed components).  Messages go to
stderr through the ``coretorch._dynamo`` logger.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

from .._compile.logs import graph_breaks_log, recompiles_log

__all__ = ["set_logs"]

# PyTorch's set_logs keywords: component log levels, then artifact switches
_LEVELS = ("all", "dynamo", "aot", "autograd", "dynamic", "inductor", "distributed", "c10d", "ddp", "fsdp", "dtensor",
           "onnx", "export")
_ARTIFACTS = ("bytecode", "aot_graphs", "aot_joint_graph", "ddp_graphs", "graph", "graph_code", "graph_code_verbose",
              "graph_breaks", "side_effects", "graph_sizes", "guards", "recompiles", "recompiles_verbose",
              "trace_source", "trace_call", "trace_bytecode", "output_code", "kernel_code", "schedule", "perf_hints",
              "pre_grad_graphs", "post_grad_graphs", "ir_pre_fusion", "ir_post_fusion", "onnx_diagnostics", "fusion",
              "overlap", "cudagraphs", "sym_node", "compiled_autograd", "compiled_autograd_verbose",
              "cudagraph_static_inputs", "benchmarking", "autotuning", "incremental", "graph_region_expansion",
              "inductor_metrics", "hierarchical_compile", "compute_dependencies", "caching")
_parent = logging.getLogger("coretorch._dynamo")
_handler: list = []


def set_logs(**kwargs: Any) -> None:
    """Turn the compiler's logs on or off (``set_logs()`` turns them off), as PyTorch's ``torch._logging.set_logs``
    (see the module docstring for what coretorch logs)."""
    for k in kwargs:
        if k not in _LEVELS and k not in _ARTIFACTS and k != "modules":
            raise TypeError(f"set_logs() got an unexpected keyword argument '{k}'")
    level = min((v for k in ("all", "dynamo") if (v := kwargs.get(k)) is not None), default=None)
    on = level is not None and level <= logging.INFO
    for log, names in ((recompiles_log, ("recompiles", "recompiles_verbose")), (graph_breaks_log, ("graph_breaks",))):
        log.setLevel(logging.INFO if on or any(kwargs.get(n) for n in names) else logging.WARNING)
    if not _handler:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        _parent.addHandler(h)
        _parent.propagate = False
        _handler.append(h)
