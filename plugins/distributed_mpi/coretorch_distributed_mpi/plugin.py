"""The plugin module coretorch loads through the entry point ``distributed_mpi`` (group ``coretorch``).

It registers :mod:`coretorch_distributed_mpi.api` as the implementation of ``coretorch.distributed`` (its
``DistributedDataParallel`` becomes ``coretorch.nn.parallel.DistributedDataParallel``).  Loading it does not
import mpi4py: MPI is initialised by ``init_process_group`` (or the first collective), not by
``import coretorch``.
"""
from __future__ import annotations

import sys

from coretorch.plugins import hookimpl

CORETORCH_PLUGIN_API = 1


@hookimpl
def coretorch_register_distributed(register):
    from . import algorithms, api
    register(api)
    # `from coretorch.distributed.algorithms.join import Join`, as scripts write it for torch
    sys.modules.setdefault("coretorch.distributed.algorithms", algorithms)
    sys.modules.setdefault("coretorch.distributed.algorithms.join", algorithms.join)
    from .algorithms import ddp_comm_hooks   # (register_comm_hook's default hooks, under torch's names)
    sys.modules.setdefault("coretorch.distributed.algorithms.ddp_comm_hooks", ddp_comm_hooks)
    sys.modules.setdefault("coretorch.distributed.algorithms.ddp_comm_hooks.default_hooks",
                           ddp_comm_hooks.default_hooks)
