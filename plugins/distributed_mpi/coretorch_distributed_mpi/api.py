"""``coretorch.distributed`` over MPI: ``torch.distributed``'s API implemented with mpi4py.

Every rank is one MPI process (``mpiexec -n N python script.py`` or ``coretorch run -n N script.py``); outside
``mpiexec`` a process is an MPI singleton, world size 1.  Collectives work on tensors of every backend and
write their result into the tensor's own storage: a contiguous ``cpu`` tensor is handed to MPI as it is (zero
copies); other devices and strided views are staged through one contiguous host array (``to_numpy`` before,
``assign_`` after).  Reductions MPI has no operation for are composed: ``AVG`` is ``SUM`` then a division;
``float16`` reduces in float32; ``bool`` reduces as uint8 with MAX (or) / MIN (and).  The default group works on
a duplicate of ``MPI.COMM_WORLD``, so raw mpi4py traffic of the same program never matches ours.

``init_process_group`` installs a ``sys.excepthook`` (when the world has more than one rank): an uncaught
exception on any rank prints its traceback prefixed with ``[rank R]`` and calls ``MPI_Abort``, which makes
``mpiexec`` end every rank at once instead of leaving the others waiting in a collective.  Every collective is
a nonblocking MPI call completed under the watchdog (:mod:`.watchdog`): a wait longer than the group's
``timeout`` aborts the job with a message naming the rank and the collective, and so does waiting for a rank
that has left the job (``sys.exit()``, end of script) without joining the collective.
"""
from __future__ import annotations

from . import algorithms, watchdog  # noqa: F401  (public: dist.algorithms; watchdog as before)
from .ddp import DistributedDataParallel, GradBucket
from .launch import launch
from .sampler import DistributedSampler

__all__ = ["Backend", "ReduceOp", "ProcessGroup", "GroupMember", "group", "Work", "is_available",
           "is_mpi_available", "is_nccl_available", "is_gloo_available", "is_torchelastic_launched",
           "init_process_group", "is_initialized", "destroy_process_group", "get_rank", "get_world_size",
           "get_backend", "new_group", "get_process_group_ranks", "get_global_rank", "get_group_rank",
           "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "reduce", "gather", "scatter", "barrier", "send", "recv", "isend", "irecv",
           "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list", "all_to_all",
           "all_to_all_single", "P2POp", "batch_isend_irecv", "GradBucket",
           "monitored_barrier", "get_node_local_rank", "DistributedDataParallel",
           "DistributedSampler", "launch", "algorithms", "default_pg_timeout"]

# the implementation, by job (each name is public here, where coretorch.distributed and the scripts find it)
from ._groups import default_pg_timeout, _MPI, _mpi, Backend, ReduceOp, ProcessGroup, _NonGroupMember  # noqa: F401
from ._groups import GroupMember, group, _state, is_available, is_mpi_available, is_nccl_available  # noqa: F401
from ._groups import is_gloo_available, is_torchelastic_launched, is_initialized, _timeout  # noqa: F401
from ._groups import get_node_local_rank  # noqa: F401
from ._groups import init_process_group, _abort_excepthook, _default, _group, destroy_process_group  # noqa: F401
from ._groups import get_rank, get_world_size, get_backend, new_group, get_process_group_ranks  # noqa: F401
from ._groups import _member_group, _warn_not_in_group, get_global_rank, get_group_rank, _to_group_rank  # noqa: F401
from ._collectives import Work, _complete, _inflight, _track, _check, _host_inout, _host_in, _write  # noqa: F401
from ._collectives import _bytes, _MPI_OP_NAMES, _BOOL_OPS, _op, _reduction, all_reduce, broadcast  # noqa: F401
from ._collectives import _check_same, all_gather, all_gather_into_tensor, _reduce_scatter_host  # noqa: F401
from ._collectives import reduce_scatter, reduce_scatter_tensor, reduce, gather, scatter, barrier, isend  # noqa: F401
from ._collectives import send, irecv, recv  # noqa: F401
from ._object_collectives import _allreduce_np, _allgather_bytes, _allgather_obj, all_gather_object  # noqa: F401
from ._object_collectives import broadcast_object_list, gather_object, scatter_object_list  # noqa: F401
from ._collectives import Future, P2POp, batch_isend_irecv, monitored_barrier  # noqa: F401
from ._all_to_all import all_to_all, all_to_all_single  # noqa: F401

_PARTS = tuple(f"{__package__}.{m}" for m in ("_groups", "_collectives", "_object_collectives", "_all_to_all"))
for _o in list(globals().values()):
    if callable(_o) and getattr(_o, "__module__", None) in _PARTS:  # functions and classes defined there
        _o.__module__ = __name__  # dist.all_reduce.__module__ is this module, as before the split
del _o, _PARTS
