"""Waiting for MPI with a deadline, and noticing ranks that have left: what keeps a job from hanging for ever.

Every collective (and send/recv) is started as a nonblocking MPI call and completed by :func:`wait`, which polls
``MPI_Testall``: it spins for the first few milliseconds (the usual case: the peers are there and the call
completes at once, as fast as a blocking call), then sleeps between polls with a growing pause (at most
``_MAX_NAP_S``), so a rank waiting for a slow peer leaves the CPU to the others.  While it waits it checks, every
``_CHECK_S``:

* the **deadline**: ``init_process_group(timeout=...)`` (default 30 minutes, PyTorch's ``default_pg_timeout``)
  or ``new_group(timeout=...)``.  A wait that runs past it prints which rank, which collective and how long,
  then calls ``MPI_Abort``: ``mpiexec`` ends every rank, as PyTorch's NCCL watchdog tears the job down.
* **exit notices**.  Each rank registers an ``atexit`` handler at ``init_process_group`` (world size > 1).  At
  exit (end of script, ``sys.exit()``) it sends every other rank, on a private control communicator, the number
  of collectives it issued on each group, then waits in a barrier on that communicator until every rank has
  reached its own exit (keeping MPI's progress going meanwhile, so collectives it took part in can finish on
  the other side).  A rank waiting in collective number ``k`` of a group that learns that a member left after
  issuing only ``k`` or fewer collectives there knows the collective can never complete: it prints a message
  naming both ranks and the collective, then calls ``MPI_Abort``.  A rank that left after joining the
  collective is no reason to abort: the collective completes.

Groups are numbered in creation order (``init_process_group`` and ``new_group`` are called by every rank in the
same order), so the counts in a notice mean the same thing on every rank.
"""
from __future__ import annotations

import atexit
import datetime
import sys
import time

__all__ = ["DEFAULT_TIMEOUT", "Watch", "wait", "abort", "watch"]

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)   # torch.distributed.constants.default_pg_timeout
_TAG_EXIT = 7717          # control-communicator tag of exit notices (any value below MPI_TAG_UB's minimum 32767)
_SPIN_S = 0.005           # poll without sleeping this long first: the fast path
_CHECK_S = 0.02           # how often a waiting rank looks at the clock and at exit notices
_MAX_NAP_S = 0.002        # the longest sleep between two polls (MPICH progresses only inside MPI calls)
_P2P_GRACE_S = 1.0        # a peer that left may still have a send in flight: give it this long


class Watch:
    """Per-process state: the control communicator, group sequence counts and what other ranks said at exit."""

    def __init__(self) -> None:
        self.ctl = None           # dup of COMM_WORLD, for exit notices and the exit barrier only
        self.rank = 0
        self.size = 1
        self.next_gid = 0         # id of the next group created (same on every rank)
        self.seqs: dict = {}      # gid -> collectives issued on that group by this rank
        self.exited: dict = {}    # global rank -> {gid: collectives it had issued} from its exit notice
        self.registered = False
        self.leaving = False


watch = Watch()


def setup(MPI) -> None:
    """Called by init_process_group after the world is known: control communicator and atexit handler."""
    w = watch
    w.rank, w.size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    if w.size > 1 and not w.registered:
        w.registered = True
        atexit.register(_at_exit)


def new_gid() -> int:
    gid = watch.next_gid
    watch.next_gid += 1
    watch.seqs[gid] = 0
    return gid


def issue(gid: int) -> int:
    """The sequence number of the collective about to be started on group ``gid`` (counts it)."""
    k = watch.seqs[gid]
    watch.seqs[gid] = k + 1
    return k


def abort(message: str) -> None:
    """Print ``message`` (prefixed with this rank) on stderr and end every rank of the job."""
    MPI = sys.modules["mpi4py.MPI"]
    me, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    try:
        sys.stdout.flush()
        sys.stderr.write(f"[rank {me}] coretorch.distributed: {message}; aborting all {size} ranks with "
                         "MPI_Abort\n")
        sys.stderr.flush()
        # mpiexec forwards our stderr through a pipe; MPI_Abort tears the job down at once and can drop what is
        # still in flight, so give the forwarder a moment to pass the message on
        time.sleep(0.25)
    finally:
        MPI.COMM_WORLD.Abort(1)


def _poll_notices(MPI) -> None:
    """Receive the exit notices that have arrived."""
    ctl = watch.ctl
    if ctl is None:
        return
    st = MPI.Status()
    while ctl.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG_EXIT, status=st):
        src = st.Get_source()
        watch.exited[src] = ctl.recv(source=src, tag=_TAG_EXIT)


def _fmt_timeout(seconds: float) -> str:
    return f"{seconds:g} s" if seconds < 60 else str(datetime.timedelta(seconds=round(seconds)))


def wait(MPI, reqs: list, *, what: str, group: str, gid: int, ranks: list, seq: int | None, timeout_s: float,
         peer: int | None = None, timeout_from: str = "init_process_group(timeout=...)", statuses=None) -> None:
    """Complete ``reqs``, or abort the job when ``timeout_s`` passes or a rank it needs has left.

    ``seq`` is the collective's number on group ``gid`` (whose members are the global ``ranks``); for
    point-to-point calls it is None and ``peer`` is the other side's global rank (None: any rank)."""
    if MPI.Request.Testall(reqs, statuses):
        return
    start = time.monotonic()
    spin_until = start + _SPIN_S
    deadline = start + timeout_s
    check = start
    nap = 1e-5
    gone_since = None
    while True:
        now = time.monotonic()
        if now >= check:
            check = now + _CHECK_S
            _poll_notices(MPI)
            gone = _missing(ranks, gid, seq, peer)
            if gone is not None:
                if seq is not None:
                    abort(f"rank {gone} has left the job (its script ended or called sys.exit()) without taking "
                          f"part in {what} (collective #{seq} of {group}), which rank {watch.rank} is waiting in "
                          "and which can therefore never complete. Ranks that run out of inputs before the others "
                          "can shadow their collectives with `with ddp_model.join():`")
                if gone_since is None:
                    gone_since = now
                elif now - gone_since > _P2P_GRACE_S:
                    abort(f"{what}: rank {gone} has left the job (its script ended or called sys.exit()); the "
                          "message can never arrive")
            if now >= deadline:
                name = f"collective operation timeout: {what} (collective #{seq} of {group})" if seq is not None \
                    else f"operation timeout: {what}"
                abort(timeout_message(name, now - start, timeout_s, timeout_from))
        if now >= spin_until:
            time.sleep(nap)
            nap = min(nap * 2, _MAX_NAP_S)
        if MPI.Request.Testall(reqs, statuses):
            return


def timeout_message(what: str, waited: float, timeout_s: float, timeout_from: str) -> str:
    return (f"{what} ran for {waited:.1f} s, longer than the timeout of "
            f"{_fmt_timeout(timeout_s)} set by {timeout_from}; a rank is stuck, slower than the timeout, or calls "
            "collectives in a different order")


def _missing(ranks: list, gid: int, seq: int | None, peer: int | None):
    """A global rank among ``ranks`` that has left without issuing collective ``seq`` of ``gid`` (or, for
    point-to-point, the peer that has left), else None."""
    ex = watch.exited
    if not ex:
        return None
    if seq is None:
        if peer is not None:
            return peer if peer in ex else None
        others = [r for r in ranks if r != watch.rank]
        return others[0] if others and all(r in ex for r in others) else None
    for r in ranks:
        notice = ex.get(r)
        if notice is not None and notice.get(gid, 0) <= seq:
            return r
    return None


def _at_exit() -> None:
    """This rank is leaving: tell every other rank what it took part in, then wait until every rank leaves."""
    MPI = sys.modules.get("mpi4py.MPI")
    w = watch
    if MPI is None or w.ctl is None or w.leaving or MPI.Is_finalized():
        return
    w.leaving = True
    ctl = w.ctl
    notice = dict(w.seqs)
    sends = [ctl.isend(notice, dest=r, tag=_TAG_EXIT) for r in range(w.size) if r != w.rank]
    barrier = ctl.Ibarrier()
    nap = 1e-5
    while not barrier.Test():
        _poll_notices(MPI)
        time.sleep(nap)
        nap = min(nap * 2, _MAX_NAP_S)
    # every other rank sent its notice before entering the barrier: take the ones not yet received
    while len([r for r in w.exited if r != w.rank]) < w.size - 1:
        st = MPI.Status()
        ctl.Probe(source=MPI.ANY_SOURCE, tag=_TAG_EXIT, status=st)
        w.exited[st.Get_source()] = ctl.recv(source=st.Get_source(), tag=_TAG_EXIT)
    MPI.Request.Waitall(sends)
