"""Process groups: MPI loading, ``Backend``/``ReduceOp``, ``ProcessGroup``, ``init_process_group`` and the group
queries (``get_rank``, ``new_group``, ...).  Public through :mod:`coretorch_distributed_mpi.api`."""
from __future__ import annotations

import datetime
import enum
import os
import sys
import time
import traceback
import warnings
from typing import Any

from . import watchdog

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


class _WorldMeta(type):
    @property
    def WORLD(cls) -> ProcessGroup | None:   # noqa: N802  (torch's name)
        """The default group once ``init_process_group`` has run (None before, as in torch, where None also
        means the default group): ``dist.group.WORLD.size()`` works."""
        return _state["pg"]


class GroupMember(metaclass=_WorldMeta):
    """Group constants: ``WORLD`` (the default group, None before ``init_process_group``) and
    ``NON_GROUP_MEMBER`` (what ``new_group`` returns on a rank outside the new group).
    """
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


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its node: ``$LOCAL_RANK`` (set by ``init_process_group`` here, by torchrun in
    torch), else ``fallback_rank``, else RuntimeError (torch's)."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context and "
                       "want the code to run locally instead.")


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
    # and LOCAL_RANK / LOCAL_WORLD_SIZE: the ranks sharing this node (after the watched rendezvous above, every
    # rank is here, so this blocking split cannot hang on a missing one)
    node = world.Split_type(MPI.COMM_TYPE_SHARED, me) if size > 1 else None
    os.environ.setdefault("LOCAL_RANK", str(node.Get_rank() if node is not None else 0))
    os.environ.setdefault("LOCAL_WORLD_SIZE", str(node.Get_size() if node is not None else 1))
    if node is not None:
        node.Free()
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
    if group is None or group is _state["pg"]:   # (group.WORLD is the default group: destroys every group)
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
    """The group rank of a root/peer given as a global rank or as ``group_<what>``.  As torch: a global rank
    outside a sub-group is a ValueError (its rank mapping fails); a root outside the group's range (a global rank
    on the default group, or a group rank) is the backend's RuntimeError ``invalid root rank``."""
    if group_rank is None:
        if global_rank is None:
            raise ValueError(f"{what}: give the global rank or its group_ form")
        if pg is not _state["pg"]:
            if int(global_rank) not in pg.ranks:
                raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
            return pg.ranks.index(int(global_rank))
        group_rank = global_rank
    if not 0 <= int(group_rank) < pg.size():
        raise RuntimeError(f"invalid root rank: {group_rank} ({what} of {pg}, whose ranks are 0..{pg.size() - 1})")
    return int(group_rank)
