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

import datetime
import enum
import os
import pickle
import sys
import time
import traceback
import warnings
from typing import Any

import numpy as np

from coretorch.plugins import get_kernel, increment_version, to_array
from coretorch.tensor import Tensor

from . import algorithms, watchdog
from .ddp import DistributedDataParallel
from .launch import launch
from .sampler import DistributedSampler

__all__ = ["Backend", "ReduceOp", "ProcessGroup", "GroupMember", "group", "Work", "is_available",
           "is_mpi_available", "is_nccl_available", "is_gloo_available", "is_torchelastic_launched",
           "init_process_group", "is_initialized", "destroy_process_group", "get_rank", "get_world_size",
           "get_backend", "new_group", "get_process_group_ranks", "get_global_rank", "get_group_rank",
           "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "reduce", "gather", "scatter", "barrier", "send", "recv", "isend", "irecv",
           "all_gather_object", "broadcast_object_list", "DistributedDataParallel", "DistributedSampler",
           "launch", "algorithms", "default_pg_timeout"]

default_pg_timeout = watchdog.DEFAULT_TIMEOUT

_MPI = None


def _mpi():
    """mpi4py's MPI module; importing it initialises MPI (a singleton outside mpiexec)."""
    global _MPI
    if _MPI is None:
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


class Backend(str):
    """Backend names (``Backend.MPI == "mpi"``); this plugin provides only ``mpi``."""
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name: str):
        return str.__new__(cls, name.lower())


class ReduceOp(enum.Enum):
    """How a reduction combines the ranks' tensors: ``SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX`` and
    the bitwise ``BAND``, ``BOR``, ``BXOR`` (integer and bool tensors).
    """
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class ProcessGroup:
    """A set of ranks with its own MPI communicator (``rank()``/``size()`` are ranks within the group)."""

    def __init__(self, comm, ranks: list[int], timeout: datetime.timedelta, desc: str = "the default group"):
        self.comm = comm
        self.ranks = list(ranks)   # global ranks, in group-rank order
        self.timeout = timeout
        self.desc = desc
        self.gid = watchdog.new_gid()   # the same on every rank: groups are created in the same order

    def _seq(self) -> int:
        """Number the collective about to start on this group (exit notices compare these numbers)."""
        return watchdog.issue(self.gid)

    def _wait(self, reqs: list, what: str, seq: int | None, peer: int | None = None, timeout=None,
              statuses=None) -> None:
        """Complete MPI requests under the watchdog (timeout, ranks that left)."""
        t = self.timeout if timeout is None else timeout
        watchdog.wait(_mpi(), reqs, what=what, group=self.desc, gid=self.gid, ranks=self.ranks, seq=seq,
                      timeout_s=t.total_seconds(), peer=peer, statuses=statuses,
                      timeout_from="Work.wait(timeout=...)" if timeout is not None else self._timeout_from)

    @property
    def _timeout_from(self) -> str:
        return ("init_process_group(timeout=...)" if self.desc == "the default group" else
                "new_group(timeout=...)")

    def rank(self) -> int:
        """This process's rank within the group."""
        return self.comm.Get_rank()

    def size(self) -> int:
        """The number of ranks in the group."""
        return self.comm.Get_size()

    def name(self) -> str:
        """The group's backend name: ``"mpi"``."""
        return Backend.MPI

    def __repr__(self) -> str:
        return f"ProcessGroup(backend='mpi', ranks={self.ranks})"


class _NonGroupMember:
    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """Group constants: ``WORLD`` (the default group; None means the same) and ``NON_GROUP_MEMBER``
    (what ``new_group`` returns on a rank outside the new group).
    """
    WORLD = None                          # "the default group", as in torch (None means the same)
    NON_GROUP_MEMBER = _NonGroupMember()  # what new_group returns on ranks outside the group


group = GroupMember

_state: dict[str, Any] = {"pg": None, "groups": [], "prev_excepthook": None}


# ---- the default group -------------------------------------------------------------------------------
def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    """Whether the MPI backend is available: True with this plugin."""
    return True


def is_nccl_available() -> bool:
    """Whether the NCCL backend is available: False (this plugin provides MPI only)."""
    return False


def is_gloo_available() -> bool:
    """Whether the Gloo backend is available: False (this plugin provides MPI only)."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether the process was started by torchelastic (``torchrun``): False; coretorch's
    launcher is ``mpiexec`` (``python -m coretorch_distributed_mpi.launch``).
    """
    return False


def is_initialized() -> bool:
    """Whether ``init_process_group`` has been called (and the default group not destroyed)."""
    return _state["pg"] is not None


def _timeout(timeout, fn: str) -> datetime.timedelta:
    if timeout is None:
        return default_pg_timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"{fn}: Expected timeout argument to be of type datetime.timedelta, got {timeout!r}")
    if timeout.total_seconds() <= 0:
        raise ValueError(f"{fn}: timeout must be positive, got {timeout}")
    return timeout


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Join the default process group.  Rank and world size come from MPI; ``world_size``/``rank``, when given,
    must agree with them.  ``timeout`` (a ``datetime.timedelta``; default 30 minutes, PyTorch's
    ``default_pg_timeout``) bounds every wait of a collective, this one included: past it the job is aborted
    with a message naming the rank and the collective.  ``init_method`` and ``store`` are accepted and unused
    (MPI's launcher does the rendezvous)."""
    if _state["pg"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() not in ("mpi", "undefined"):
        raise ValueError(f"backend '{backend}' is not available in coretorch: coretorch-distributed-mpi provides "
                         "backend 'mpi' (use init_process_group(backend=\"mpi\") or backend=None)")
    timeout = _timeout(timeout, "init_process_group")
    MPI = _mpi()
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    if world_size not in (-1, None) and int(world_size) != size:
        raise ValueError(f"init_process_group(world_size={world_size}) but MPI started {size} process(es); launch "
                         f"with `mpiexec -n {world_size}` or `coretorch run -n {world_size}`")
    if rank not in (-1, None) and int(rank) != me:
        raise ValueError(f"init_process_group(rank={rank}) but MPI gave this process rank {me}")
    watchdog.setup(MPI)
    everyone = list(range(size))

    def dup():   # MPI_Comm_idup: a rendezvous of every rank that honours the timeout and exit notices
        comm, req = world.Idup()
        watchdog.wait(MPI, [req], what="init_process_group", group="MPI_COMM_WORLD", gid=-1, ranks=everyone,
                      seq=0, timeout_s=timeout.total_seconds())
        return comm
    if size > 1 and watchdog.watch.ctl is None:
        watchdog.watch.ctl = dup()     # exit notices travel here, never mixed with collectives
    _state["pg"] = ProcessGroup(dup(), everyone, timeout)
    # what torchrun sets, for scripts that read them after init
    os.environ.setdefault("RANK", str(me))
    os.environ.setdefault("WORLD_SIZE", str(size))
    if size > 1 and _state["prev_excepthook"] is None:
        _state["prev_excepthook"] = sys.excepthook
        sys.excepthook = _abort_excepthook


def _abort_excepthook(exc_type, exc, tb) -> None:
    """An uncaught exception on this rank: show it, naming the rank, then abort every rank (MPI_Abort)."""
    MPI = _mpi()
    me, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    try:
        lines = "".join(traceback.format_exception(exc_type, exc, tb)).rstrip("\n").split("\n")
        msg = "\n".join(f"[rank {me}] {line}" for line in lines)
        sys.stderr.write(f"[rank {me}] coretorch.distributed: rank {me} of {size} raised an uncaught "
                         f"{exc_type.__name__}; aborting all {size} ranks with MPI_Abort\n{msg}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        time.sleep(0.2)  # mpiexec forwards output asynchronously: let the message reach it before the abort
    finally:
        MPI.COMM_WORLD.Abort(1)


def _default() -> ProcessGroup:
    pg = _state["pg"]
    if pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return pg


def _group(group) -> ProcessGroup | None:
    """The ProcessGroup to use, or None when this rank is not in ``group``."""
    pg = _default()
    if group is None:
        return pg
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup from new_group() or None, not {type(group).__name__}")
    return group


def destroy_process_group(group=None) -> None:
    """Leave ``group`` (default: every group; init_process_group may then be called again).  MPI itself stays
    initialised until the process exits."""
    if group is None:
        if _state["pg"] is None:
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        for g in _state["groups"]:
            g.comm.Free()
        _state["groups"].clear()
        _state["pg"].comm.Free()
        _state["pg"] = None
        if _state["prev_excepthook"] is not None:
            if sys.excepthook is _abort_excepthook:
                sys.excepthook = _state["prev_excepthook"]
            _state["prev_excepthook"] = None
        return
    if isinstance(group, ProcessGroup) and group in _state["groups"]:
        _state["groups"].remove(group)
        group.comm.Free()


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (default: the default group), or -1 on a rank outside it.

    Args:
        group (ProcessGroup, optional): the group.

    Returns:
        int: the rank.
    """
    pg = _group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    """The number of ranks in ``group`` (default: the default group), or -1 on a rank outside it.

    Args:
        group (ProcessGroup, optional): the group.

    Returns:
        int: the world size.
    """
    pg = _group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    """The backend of ``group`` (default: the default group): ``"mpi"``."""
    _group(group)
    return Backend.MPI


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization: bool = False,
              group_desc=None):
    """A sub-group of the default group.  As in torch, every rank of the default group calls it (it is a
    collective: ``MPI_Comm_split``); ranks outside ``ranks`` get ``GroupMember.NON_GROUP_MEMBER``."""
    pg = _default()
    n = pg.size()
    ranks = sorted(set(range(n) if ranks is None else (int(r) for r in ranks)))
    bad = [r for r in ranks if not 0 <= r < n]
    if bad:
        raise ValueError(f"new_group: ranks {bad} are not in the default group (world size {n})")
    MPI = _mpi()
    me = pg.rank()
    # MPI_Comm_split has no nonblocking form: a watched barrier first, so a missing rank is reported, not waited for
    pg._wait([pg.comm.Ibarrier()], "new_group", pg._seq())
    pg._seq()
    sub = pg.comm.Split(0 if me in ranks else MPI.UNDEFINED, me)
    timeout = pg.timeout if timeout is None else _timeout(timeout, "new_group")
    if me not in ranks:
        watchdog.new_gid()         # groups are numbered on every rank, members or not
        return GroupMember.NON_GROUP_MEMBER
    g = ProcessGroup(sub, ranks, timeout, desc=f"group {ranks}")
    _state["groups"].append(g)
    return g


def get_process_group_ranks(group) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order (empty on a rank outside
    it).

    Args:
        group (ProcessGroup): the group.

    Returns:
        list[int]: the global ranks.
    """
    pg = _group(group)
    return list(pg.ranks) if pg is not None else []


def _member_group(group) -> ProcessGroup:
    """``group``'s ProcessGroup; as torch, a group this rank is not in is not registered here (ValueError)."""
    pg = _group(group)
    if pg is None:
        raise ValueError(f"Group {group} is not registered, please create group with torch.distributed.new_group API")
    return pg


def _warn_not_in_group(what: str) -> None:
    # torch's warning where an op on a group this rank is not in does nothing (and returns None, or -1 from recv)
    warnings.warn(f"Running {what} on global rank {_default().rank()} which does not belong to the given group.",
                  stacklevel=3)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of ``group``'s member number ``group_rank``.

    Args:
        group (ProcessGroup): a group this rank belongs to.
        group_rank (int): a rank within the group.

    Returns:
        int: the rank in the default group.

    Raises:
        ValueError: ``group`` is not this rank's, or ``group_rank`` is not in it.
    """
    pg = _member_group(group)
    if not 0 <= group_rank < len(pg.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
    return pg.ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank within ``group`` of the process whose global rank is ``global_rank``.

    Args:
        group (ProcessGroup): a group this rank belongs to.
        global_rank (int): a rank in the default group.

    Returns:
        int: the rank within the group.

    Raises:
        ValueError: ``group`` is not this rank's, or ``global_rank`` is not in it.
    """
    pg = _member_group(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg.ranks.index(global_rank)


def _to_group_rank(pg: ProcessGroup, global_rank, group_rank, what: str) -> int:
    if group_rank is not None:
        return int(group_rank)
    if global_rank is None:
        raise ValueError(f"{what}: give the global rank or its group_ form")
    if int(global_rank) not in pg.ranks:
        raise ValueError(f"{what}={global_rank} is not a rank of {pg}")
    return pg.ranks.index(int(global_rank))


# ---- work handles ------------------------------------------------------------------------------------
class Work:
    """What a collective with ``async_op=True`` returns: ``wait()`` completes it (the result is then in the
    tensors), ``is_completed()`` polls."""

    def __init__(self, requests=(), finish=None, keep=(), pg=None, what: str = "", seq: int | None = None,
                 peer: int | None = None, result=()):
        self._reqs = [r for r in requests if r is not None]
        self._result = list(result)
        self._finish = finish
        self._keep = keep        # host buffers MPI reads or writes until completion
        self._done = False
        self._watch = (pg, what, seq, peer)

    def wait(self, timeout=None) -> bool:
        """Complete the operation; waiting longer than ``timeout`` (a timedelta; default: the group's) aborts
        the job, as a collective past the group's timeout does."""
        if not self._done:
            if self._reqs:
                pg, what, seq, peer = self._watch
                if pg is None:
                    _mpi().Request.Waitall(self._reqs)
                else:
                    pg._wait(self._reqs, what, seq, peer,
                             None if timeout is None else _timeout(timeout, "Work.wait"))
            self._done = True
            fin, self._finish, self._keep = self._finish, None, ()
            if fin is not None:
                fin()
        return True

    def result(self) -> list:
        """The output tensors of the operation (all_reduce/broadcast: the tensor); valid after ``wait()``."""
        return list(self._result)

    def is_completed(self) -> bool:
        """Whether the operation has finished (without waiting; finishing it if its requests are done)."""
        if not self._done and (not self._reqs or _mpi().Request.Testall(self._reqs)):
            self.wait()
        return self._done

    def is_success(self) -> bool:
        """Whether the operation finished successfully (a failure raises from ``wait`` instead)."""
        return self.is_completed()

    def exception(self):
        """The operation's exception: None (failures raise from ``wait``)."""
        return None

    def synchronize(self) -> None:
        """Wait for the operation (the same as ``wait()``)."""
        self.wait()


def _complete(pg: ProcessGroup, what: str, seq: int | None, async_op: bool, requests, finish=None, keep=(),
              result=()):
    """The Work of started MPI requests; unless ``async_op``, completed now (under the watchdog)."""
    w = Work(requests, finish, keep, pg, what, seq, result=result)
    if async_op:
        return _track(w)
    w.wait()
    return None


_inflight: list = []   # async Works not yet seen complete


def _track(w: Work) -> Work:
    """Keep an async Work (and so the buffers MPI is still reading or writing) alive until it completes, even
    when the caller drops it (``Join.notify_join_context``'s all-reduce, a fire-and-forget ``isend``): MPI
    would otherwise write into freed memory that a later tensor reuses."""
    _inflight[:] = [x for x in _inflight if not x.is_completed()]
    _inflight.append(w)
    return w


# ---- host staging ------------------------------------------------------------------------------------
def _check(t, what: str = "tensor") -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what} must be a coretorch Tensor, not {type(t).__name__}")


def _host_inout(t: Tensor):
    """(contiguous host array holding t's values, staged?)  Unstaged: the array *is* t's storage."""
    data = to_array(t)
    h = t.numpy(force=True)  # on a host-memory device: the tensor's own array (no copy)
    if h is data and isinstance(data, np.ndarray) and data.flags.c_contiguous and data.flags.writeable:
        return data, False
    if isinstance(data, np.ndarray) and np.shares_memory(h, data):
        return np.array(h, order="C", copy=True), True
    return np.ascontiguousarray(h), True


def _host_in(t: Tensor) -> np.ndarray:
    """t's values as a contiguous host array, for reading only."""
    return np.ascontiguousarray(t.numpy(force=True))


def _write(t: Tensor, h: np.ndarray) -> None:
    """Put host values ``h`` into t's own storage (views of t see them) and bump its version counter."""
    upload = get_kernel("from_numpy", t)(np.asarray(h).reshape(tuple(t.shape)))
    get_kernel("assign_", t)(to_array(t), upload)
    increment_version(t)


def _bytes(h: np.ndarray) -> np.ndarray:
    return h.reshape(-1).view(np.uint8)


_MPI_OP_NAMES = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
                 ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
_BOOL_OPS = {ReduceOp.SUM: "MAX", ReduceOp.MAX: "MAX", ReduceOp.BOR: "MAX", ReduceOp.PRODUCT: "MIN",
             ReduceOp.MIN: "MIN", ReduceOp.BAND: "MIN", ReduceOp.BXOR: "BXOR"}


def _op(op) -> ReduceOp:
    if isinstance(op, ReduceOp):
        return op
    try:
        return ReduceOp[str(op).upper()] if isinstance(op, str) else ReduceOp(op)
    except (KeyError, ValueError):
        raise ValueError(f"unknown reduce op {op!r}; use one of {[o.name for o in ReduceOp]}") from None


def _reduction(h: np.ndarray, op: ReduceOp):
    """(array MPI reduces, MPI op, finish(n, out)) where finish puts the reduced values into ``out``."""
    MPI = _mpi()
    kind = h.dtype.kind
    if op is ReduceOp.AVG and kind != "f":
        raise ValueError(f"ReduceOp.AVG needs a floating-point tensor, got {h.dtype}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind == "f":
        raise ValueError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {h.dtype}")
    if kind == "b":
        return h.view(np.uint8), getattr(MPI, _BOOL_OPS[op]), None
    mop = getattr(MPI, _MPI_OP_NAMES[op])
    avg = op is ReduceOp.AVG
    if h.dtype == np.float16:        # MPI has no standard half type: reduce in float32
        w = h.astype(np.float32)

        def fin(n, out):
            if avg:
                w.__itruediv__(n)
            out[...] = w
        return w, mop, fin
    if avg:
        return h, mop, lambda n, out: out.__itruediv__(n)
    return h, mop, None


# ---- collectives -------------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group, in place on every rank: afterwards every rank holds the same
    result (``torch.distributed.all_reduce``).

    Args:
        tensor (Tensor): input and output, the same shape and dtype on every rank (any device: the data travels
            through the host).
        op (ReduceOp): how the ranks' values combine (default ``ReduceOp.SUM``; ``AVG``, floating-point
            tensors only, divides by the group size).
        group (ProcessGroup, optional): the group (default: the default group); on a rank outside it the call
            warns (as PyTorch) and does nothing: None.
        async_op (bool): return a ``Work`` to ``wait()`` on instead of waiting (default False).

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    _check(tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("all_reduce")
        return None
    op = _op(op)
    h, staged = _host_inout(tensor)
    w, mop, fin = _reduction(h, op)
    MPI = _mpi()
    n = pg.size()

    def finish():
        if fin is not None:
            fin(n, h)
        if staged:
            _write(tensor, h)
        else:
            increment_version(tensor)
    seq = pg._seq()
    return _complete(pg, "all_reduce", seq, async_op, [pg.comm.Iallreduce(MPI.IN_PLACE, w, op=mop)], finish,
                     keep=(w, h), result=[tensor])


def broadcast(tensor, src: int | None = None, group=None, async_op: bool = False, group_src: int | None = None):
    """Copy ``tensor`` of rank ``src`` (a global rank) into ``tensor`` of every rank of the group.

    Args:
        tensor (Tensor): the data on ``src``, the output elsewhere (same shape and dtype on every rank).
        src (int): the source's global rank (or ``group_src``, its rank within ``group``).
        group (ProcessGroup, optional): the group (default: the default group); on a rank outside it the call
            warns (as PyTorch) and does nothing: None.
        async_op (bool): return a ``Work`` to ``wait()`` on instead of waiting (default False).

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    _check(tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("broadcast")
        return None
    root = _to_group_rank(pg, src, group_src, "src")
    h, staged = _host_inout(tensor)
    mine = pg.rank() == root

    def finish():
        if not mine:
            if staged:
                _write(tensor, h)
            else:
                increment_version(tensor)
    seq = pg._seq()
    return _complete(pg, "broadcast", seq, async_op, [pg.comm.Ibcast(_bytes(h), root=root)], finish, keep=(h,),
                     result=[tensor])


def _check_same(tensors, like: Tensor, what: str, n: int) -> None:
    if len(tensors) != n:
        raise ValueError(f"{what} must hold one tensor per rank of the group ({n}), got {len(tensors)}")
    for t in tensors:
        _check(t, what)
        if tuple(t.shape) != tuple(like.shape) or t.dtype is not like.dtype:
            raise ValueError(f"{what}: every tensor must have the shape and dtype of the input "
                             f"({list(like.shape)}, {like.dtype}); got {list(t.shape)}, {t.dtype}")


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """``tensor_list[i]`` receives ``tensor`` of group rank i, on every rank.

    Args:
        tensor_list (list[Tensor]): one output per rank of the group, each shaped as ``tensor``.
        tensor (Tensor): this rank's input.
        group (ProcessGroup, optional): the group (default: the default group); on a rank outside it the call
            warns (as PyTorch) and does nothing: None.
        async_op (bool): return a ``Work`` to ``wait()`` on instead of waiting (default False).

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    _check(tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("all_gather")
        return None
    n = pg.size()
    _check_same(tensor_list, tensor, "tensor_list", n)
    send = _host_in(tensor)
    recv = np.empty((n,) + send.shape, send.dtype)

    def finish():
        for i, t in enumerate(tensor_list):
            _write(t, recv[i])
    seq = pg._seq()
    return _complete(pg, "all_gather", seq, async_op, [pg.comm.Iallgather(_bytes(send), _bytes(recv))], finish,
                     keep=(send, recv))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """``output_tensor`` (group size times ``input_tensor`` along dim 0, or stacked) gets every rank's input."""
    _check(output_tensor)
    _check(input_tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("all_gather_single")
        return None
    n = pg.size()
    if output_tensor.numel() != n * input_tensor.numel() or output_tensor.dtype is not input_tensor.dtype:
        raise ValueError(f"output tensor must have world size ({n}) times the elements of the input and its dtype")
    send = _host_in(input_tensor)
    recv, staged = _host_inout(output_tensor)

    def finish():
        if staged:
            _write(output_tensor, recv)
        else:
            increment_version(output_tensor)
    seq = pg._seq()
    return _complete(pg, "all_gather_into_tensor", seq, async_op, [pg.comm.Iallgather(_bytes(send), _bytes(recv))],
                     finish, keep=(send, recv))


def _reduce_scatter_host(pg, output, send: np.ndarray, op, async_op: bool):
    """``send`` has shape (group size, *output.shape); group rank i gets the reduction of ``send[i]``."""
    op = _op(op)
    w, mop, _ = _reduction(send, op)
    recv = np.empty(tuple(output.shape), w.dtype)
    n = pg.size()

    def finish():
        if op is ReduceOp.AVG:
            recv.__itruediv__(n)
        _write(output, recv.view(np.bool_) if send.dtype == np.bool_ else recv.astype(send.dtype, copy=False))
    seq = pg._seq()
    return _complete(pg, "reduce_scatter", seq, async_op, [pg.comm.Ireduce_scatter_block(w, recv, op=mop)], finish,
                     keep=(w, recv, send))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``output`` of group rank i receives the reduction over ranks of ``input_list[i]``."""
    _check(output)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("reduce_scatter")
        return None
    n = pg.size()
    _check_same(input_list, output, "input_list", n)
    send = np.stack([_host_in(t) for t in input_list]) if n else np.empty((0,) + tuple(output.shape))
    return _reduce_scatter_host(pg, output, send, op, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``input`` is the concatenation (dim 0) of one chunk per rank; rank i's ``output`` gets chunk i reduced."""
    _check(output)
    _check(input)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("reduce_scatter_single")
        return None
    n = pg.size()
    if input.numel() != n * output.numel() or input.dtype is not output.dtype:
        raise ValueError(f"input tensor must have world size ({n}) times the elements of the output and its dtype")
    send = _host_in(input).reshape((n,) + tuple(output.shape))
    return _reduce_scatter_host(pg, output, send, op, async_op)


def reduce(tensor, dst: int | None = None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """The reduction lands in ``tensor`` of rank ``dst``; other ranks' tensors are unchanged.

    Args:
        tensor (Tensor): the input on every rank, the output on ``dst``.
        dst (int): the destination's global rank (or ``group_dst``, its rank within ``group``).
        op (ReduceOp): how the ranks' values combine (default ``ReduceOp.SUM``; ``AVG``, floating-point
            tensors only, divides by the group size).
        group (ProcessGroup, optional): the group (default: the default group); on a rank outside it the call
            warns (as PyTorch) and does nothing: None.
        async_op (bool): return a ``Work`` to ``wait()`` on instead of waiting (default False).

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    _check(tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("reduce")
        return None
    root = _to_group_rank(pg, dst, group_dst, "dst")
    op = _op(op)
    h, staged = _host_inout(tensor)
    w, mop, fin = _reduction(h, op)
    MPI = _mpi()
    mine = pg.rank() == root
    n = pg.size()

    def finish():
        if mine:
            if fin is not None:
                fin(n, h)
            if staged:
                _write(tensor, h)
            else:
                increment_version(tensor)
    sendbuf, recvbuf = (MPI.IN_PLACE, w) if mine else (w, None)
    seq = pg._seq()
    return _complete(pg, "reduce", seq, async_op, [pg.comm.Ireduce(sendbuf, recvbuf, op=mop, root=root)], finish,
                     keep=(w, h))


def gather(tensor, gather_list=None, dst: int | None = None, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """``gather_list[i]`` of rank ``dst`` receives ``tensor`` of group rank i.

    Args:
        tensor (Tensor): this rank's input.
        gather_list (list[Tensor], optional): on ``dst`` only, one output per rank shaped as ``tensor``.
        dst (int): the destination's global rank (default 0, or ``group_dst`` within ``group``).
        group (ProcessGroup, optional): the group (default: the default group); on a rank outside it the call
            warns (as PyTorch) and does nothing: None.
        async_op (bool): return a ``Work`` to ``wait()`` on instead of waiting (default False).

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    _check(tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("gather")
        return None
    root = _to_group_rank(pg, 0 if dst is None and group_dst is None else dst, group_dst, "dst")
    mine = pg.rank() == root
    send = _host_in(tensor)
    recv = None
    if mine:
        _check_same(gather_list or [], tensor, "gather_list", pg.size())
        recv = np.empty((pg.size(),) + send.shape, send.dtype)

    def finish():
        if mine:
            for i, t in enumerate(gather_list):
                _write(t, recv[i])
    rb = _bytes(recv) if recv is not None else None  # (recv: made on the root only)
    seq = pg._seq()
    return _complete(pg, "gather", seq, async_op, [pg.comm.Igather(_bytes(send), rb, root=root)], finish,
                     keep=(send, recv))


def scatter(tensor, scatter_list=None, src: int | None = None, group=None, async_op: bool = False,
            group_src: int | None = None):
    """``tensor`` of group rank i receives ``scatter_list[i]`` of rank ``src``.

    Args:
        tensor (Tensor): this rank's output.
        scatter_list (list[Tensor], optional): on ``src`` only, one input per rank shaped as ``tensor``.
        src (int): the source's global rank (default 0, or ``group_src`` within ``group``).
        group (ProcessGroup, optional): the group (default: the default group); on a rank outside it the call
            warns (as PyTorch) and does nothing: None.
        async_op (bool): return a ``Work`` to ``wait()`` on instead of waiting (default False).

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    _check(tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("scatter")
        return None
    root = _to_group_rank(pg, 0 if src is None and group_src is None else src, group_src, "src")
    mine = pg.rank() == root
    send = None
    if mine:
        _check_same(scatter_list or [], tensor, "scatter_list", pg.size())
        send = np.stack([_host_in(t) for t in scatter_list])
    recv = np.empty(tuple(tensor.shape), tensor.dtype.np)

    def finish():
        _write(tensor, recv)
    sb = _bytes(send) if send is not None else None  # (send: made on the root only)
    seq = pg._seq()
    return _complete(pg, "scatter", seq, async_op, [pg.comm.Iscatter(sb, _bytes(recv), root=root)], finish,
                     keep=(send, recv))


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Block until every rank of ``group`` reaches this call.

    Args:
        group (ProcessGroup, optional): the group (default: the default group).
        async_op (bool): return a ``Work`` instead of waiting.
        device_ids: accepted for PyTorch's signature (ignored).

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("barrier")
        return None
    seq = pg._seq()
    return _complete(pg, "barrier", seq, async_op, [pg.comm.Ibarrier()])


def isend(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> Work | None:
    """Send ``tensor`` to rank ``dst`` without waiting; ``wait()`` before modifying it.  None (with a warning) on a
    rank not in ``group``, as in torch (where a global ``dst`` cannot be mapped into that group: ValueError)."""
    _check(tensor)
    pg = _group(group) if group_dst is not None else _member_group(group)
    if pg is None:
        _warn_not_in_group("isend")
        return None
    peer = _to_group_rank(pg, dst, group_dst, "dst")
    h = _host_in(tensor)
    return _track(Work([pg.comm.Isend(_bytes(h), dest=peer, tag=tag)], keep=(h,), pg=pg,
                       what=f"send to rank {pg.ranks[peer]}", peer=pg.ranks[peer]))


def send(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it is sent (``isend`` then ``wait``).

    Args:
        tensor (Tensor): the data (any device: it is read to the host).
        dst (int): the destination's global rank (or ``group_dst`` within ``group``).
        group (ProcessGroup, optional): the group (default: the default group).
        tag (int): a tag that the matching ``recv`` must use.
        group_dst (int, optional): the destination's rank within ``group``.
    """
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def irecv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> Work | None:
    """Receive into ``tensor`` from rank ``src`` (any rank when None) without waiting.  None (with a warning) on a
    rank not in ``group``, as in torch."""
    _check(tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("irecv")
        return None
    MPI = _mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _to_group_rank(pg, src, group_src, "src")
    h = np.empty(tuple(tensor.shape), tensor.dtype.np)
    gpeer = None if peer == MPI.ANY_SOURCE else pg.ranks[peer]
    return _track(Work([pg.comm.Irecv(_bytes(h), source=peer, tag=tag)], lambda: _write(tensor, h), keep=(h,),
                       pg=pg, what="recv from " + ("any rank" if gpeer is None else f"rank {gpeer}"), peer=gpeer))


def recv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> int:
    """Receive into ``tensor``; returns the sender's global rank (-1, with a warning, on a rank not in ``group``, as
    in torch)."""
    _check(tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("recv")
        return -1
    MPI = _mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _to_group_rank(pg, src, group_src, "src")
    h = np.empty(tuple(tensor.shape), tensor.dtype.np)
    status = MPI.Status()
    gpeer = None if peer == MPI.ANY_SOURCE else pg.ranks[peer]
    pg._wait([pg.comm.Irecv(_bytes(h), source=peer, tag=tag)], "recv from " +
             ("any rank" if gpeer is None else f"rank {gpeer}"), None, gpeer, statuses=[status])
    _write(tensor, h)
    return pg.ranks[status.Get_source()]


# ---- Python objects (pickled, as torch does) ---------------------------------------------------------
def _allreduce_np(pg: ProcessGroup, arr: np.ndarray, op: str, what: str) -> None:
    """In-place all-reduce of a contiguous numpy array (MPI op name ``op``), watched."""
    MPI = _mpi()
    pg._wait([pg.comm.Iallreduce(MPI.IN_PLACE, arr, op=getattr(MPI, op))], what, pg._seq())


def _allgather_bytes(pg: ProcessGroup, blob: bytes, what: str) -> list[bytes]:
    """Every rank's ``blob``: sizes, then the bytes (MPI_Iallgather / MPI_Iallgatherv, both watched)."""
    MPI = _mpi()
    n = pg.size()
    sizes = np.zeros(n, np.int64)
    pg._wait([pg.comm.Iallgather(np.array([len(blob)], np.int64), sizes)], what, pg._seq())
    out = np.empty(int(sizes.sum()), np.uint8)
    displ = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    send = np.frombuffer(blob, np.uint8)
    pg._wait([pg.comm.Iallgatherv(send, [out, sizes, displ, MPI.BYTE])], what, pg._seq())
    return [out[d:d + k].tobytes() for d, k in zip(displ.tolist(), sizes.tolist())]


def _allgather_obj(pg: ProcessGroup, obj, what: str) -> list:
    return [pickle.loads(b) for b in _allgather_bytes(pg, pickle.dumps(obj), what)]


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Gather one picklable object from every rank into ``object_list`` on every rank.

    Args:
        object_list (list): one slot per rank, filled in rank order.
        obj: this rank's object (pickled: only exchange objects between trusted processes).
        group (ProcessGroup, optional): the group (default: the default group).
    """
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("all_gather_object")
        return None
    if len(object_list) != pg.size():
        raise ValueError(f"object_list must have one slot per rank ({pg.size()}), got {len(object_list)}")
    object_list[:] = _allgather_obj(pg, obj, "all_gather_object")


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace ``object_list`` on every rank with the list held by rank ``src``.

    Args:
        object_list (list): the objects (read on ``src``, overwritten elsewhere; pickled).
        src (int): the source's global rank (default 0, or ``group_src`` within ``group``).
        group (ProcessGroup, optional): the group (default: the default group).
        device: accepted for PyTorch's signature (ignored: objects travel on the host).
        group_src (int, optional): the source's rank within ``group``.
    """
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("broadcast_object_list")
        return None
    root = _to_group_rank(pg, 0 if src is None and group_src is None else src, group_src, "src")
    mine = pg.rank() == root
    blob = pickle.dumps(list(object_list)) if mine else b""
    size = np.array([len(blob)], np.int64)
    pg._wait([pg.comm.Ibcast(size, root=root)], "broadcast_object_list", pg._seq())
    buf = np.frombuffer(blob, np.uint8).copy() if mine else np.empty(int(size[0]), np.uint8)
    pg._wait([pg.comm.Ibcast(buf, root=root)], "broadcast_object_list", pg._seq())
    object_list[:] = pickle.loads(buf.tobytes())
