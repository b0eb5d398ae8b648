"""Collectives of picklable Python objects (``all_gather_object``, ``broadcast_object_list``) and the numpy
helpers DistributedDataParallel uses.  Public through :mod:`coretorch_distributed_mpi.api`."""
from __future__ import annotations

import pickle

import numpy as np

from ._groups import ProcessGroup, _group, _mpi, _to_group_rank, _warn_not_in_group


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
