"""Collectives of picklable Python objects (``all_gather_object``, ``broadcast_object_list``, ``gather_object``,
``scatter_object_list``) and the numpy helpers DistributedDataParallel uses.  Public through
:mod:`coretorch_distributed_mpi.api`."""
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
    # as torch: slot i gets rank i's object; slots past the group size stay, a short list is an IndexError
    for i, o in enumerate(_allgather_obj(pg, obj, "all_gather_object")):
        object_list[i] = o


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
    if not mine:   # as torch: the source keeps its own objects; elsewhere slot i takes the source's object i
        for i, o in enumerate(pickle.loads(buf.tobytes())):
            object_list[i] = o


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    """``object_gather_list[i]`` of rank ``dst`` receives the object of group rank i (pickled).

    Args:
        obj: this rank's object.
        object_gather_list (list, optional): on ``dst`` only, one slot per rank of the group.
        dst (int): the destination's global rank (default 0, or ``group_dst`` within ``group``).
        group (ProcessGroup, optional): the group (default: the default group).
        group_dst (int, optional): the destination's rank within ``group``.
    """
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("gather_object")
        return None
    root = _to_group_rank(pg, 0 if dst is None and group_dst is None else dst, group_dst, "dst")
    mine = pg.rank() == root
    if mine and not object_gather_list:   # torch's checks (ValueError)
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    if not mine and object_gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    MPI = _mpi()
    n = pg.size()
    blob = np.frombuffer(pickle.dumps(obj), np.uint8)
    sizes = np.zeros(n, np.int64) if mine else None
    pg._wait([pg.comm.Igather(np.array([blob.size], np.int64), sizes, root=root)], "gather_object", pg._seq())
    if mine:
        assert sizes is not None and object_gather_list is not None
        displ = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        out = np.empty(int(sizes.sum()), np.uint8)
        rbuf = [out, sizes, displ, MPI.BYTE]
    pg._wait([pg.comm.Igatherv(blob, rbuf if mine else None, root=root)], "gather_object", pg._seq())
    if mine:
        assert sizes is not None and object_gather_list is not None
        for i, (d, k) in enumerate(zip(displ.tolist(), sizes.tolist())):
            object_gather_list[i] = pickle.loads(out[d:d + k].tobytes())


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int | None = None, group=None, group_src: int | None = None) -> None:
    """``scatter_object_output_list[0]`` of group rank i receives ``scatter_object_input_list[i]`` of rank
    ``src`` (pickled).

    Args:
        scatter_object_output_list (list): at least one slot; its first receives this rank's object.
        scatter_object_input_list (list, optional): on ``src``, one object per rank of the group.
        src (int): the source's global rank (default 0, or ``group_src`` within ``group``).
        group (ProcessGroup, optional): the group (default: the default group).
        group_src (int, optional): the source's rank within ``group``.
    """
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("scatter_object_list")
        return None
    root = _to_group_rank(pg, 0 if src is None and group_src is None else src, group_src, "src")
    mine = pg.rank() == root
    MPI = _mpi()
    n = pg.size()
    if mine:
        if scatter_object_input_list is None or len(scatter_object_input_list) != n:
            raise RuntimeError(f"scatter_object_list: scatter_object_input_list must hold one object per rank ({n})")
        blobs = [np.frombuffer(pickle.dumps(o), np.uint8) for o in scatter_object_input_list]
        sizes = np.array([b.size for b in blobs], np.int64)
        displ = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        send = np.concatenate(blobs) if blobs else np.empty(0, np.uint8)
    mysize = np.zeros(1, np.int64)
    pg._wait([pg.comm.Iscatter(sizes if mine else None, mysize, root=root)], "scatter_object_list", pg._seq())
    buf = np.empty(int(mysize[0]), np.uint8)
    pg._wait([pg.comm.Iscatterv([send, sizes, displ, MPI.BYTE] if mine else None, buf, root=root)],
             "scatter_object_list", pg._seq())
    scatter_object_output_list[0] = pickle.loads(buf.tobytes())
