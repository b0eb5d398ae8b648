"""``all_to_all_single`` and ``all_to_all``: every rank sends one piece to every rank (``MPI_Ialltoallv`` on
bytes, so pieces may differ in size).  Public through :mod:`coretorch_distributed_mpi.api`."""
from __future__ import annotations

import numpy as np

from coretorch.plugins import increment_version

from ._collectives import _check, _complete, _host_in, _host_inout, _write
from ._groups import _group, _mpi, _warn_not_in_group


def _splits(t, sizes, n: int, what: str) -> list[int]:
    """Rows of ``t`` (dim 0) per rank: ``sizes`` (summing to dim 0), or equal parts (torch's errors)."""
    rows = t.shape[0] if t.dim() else 1
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise RuntimeError(f"all_to_all_single: the {what} tensor's dim 0 ({rows}) does not divide equally "
                               f"across group size {n}")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n:
        raise RuntimeError(f"all_to_all_single: {what}_split_sizes must hold one size per rank ({n}), got {sizes}")
    if sum(sizes) != rows or min(sizes) < 0:
        raise RuntimeError(f"all_to_all_single: Split sizes doesn't match total dim 0 size: {what}_split_sizes "
                           f"{sizes} sum to {sum(sizes)}, the {what} tensor has {rows} rows")
    return sizes


def _layout(counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(counts, np.int64)
    return c, np.concatenate([[0], np.cumsum(c)[:-1]]).astype(np.int64)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op: bool = False):
    """Split ``input`` along dim 0 into one piece per rank (``input_split_sizes`` rows each, default equal
    parts); rank i's piece goes to rank i, and ``output`` (dim 0 split by ``output_split_sizes``) receives the
    pieces of every rank, in rank order.

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    _check(output)
    _check(input)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("all_to_all_single")
        return None
    if output.dtype is not input.dtype:
        raise ValueError(f"all_to_all_single: Invalid usage of tensors with different dtypes: found {output.dtype} "
                         f"and {input.dtype}")
    n = pg.size()
    row_in = input[0].numel() * input.element_size() if input.dim() else input.element_size()
    row_out = output[0].numel() * output.element_size() if output.dim() else output.element_size()
    send = _host_in(input)
    recv, staged = _host_inout(output)
    sc, sd = _layout([s * row_in for s in _splits(input, input_split_sizes, n, "input")])
    rc, rd = _layout([s * row_out for s in _splits(output, output_split_sizes, n, "output")])
    MPI = _mpi()

    def finish():
        if staged:
            _write(output, recv)
        else:
            increment_version(output)
    req = pg.comm.Ialltoallv([send.reshape(-1).view(np.uint8), (sc, sd), MPI.BYTE],
                             [recv.reshape(-1).view(np.uint8), (rc, rd), MPI.BYTE])
    return _complete(pg, "all_to_all_single", pg._seq(), async_op, [req], finish, keep=(send, recv, sc, sd, rc, rd),
                     result=[output])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """``output_tensor_list[i]`` receives ``input_tensor_list[rank]`` of rank i (the pieces may differ in shape;
    each output must have its piece's number of elements).

    Returns:
        A ``Work`` if ``async_op``, else None.
    """
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("all_to_all")
        return None
    n = pg.size()
    for what, lst in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if len(lst) != n:
            raise RuntimeError(f"all_to_all: {what} must hold one tensor per rank ({n}), got {len(lst)}")
        for t in lst:
            _check(t, what)
    dtypes = {t.dtype for t in list(output_tensor_list) + list(input_tensor_list)}
    if len(dtypes) > 1:
        raise ValueError("all_to_all: Invalid usage of tensors with different dtypes: found "
                         f"{sorted(map(str, dtypes))}")
    hosts = [_host_in(t).reshape(-1).view(np.uint8) for t in input_tensor_list]
    send = np.concatenate(hosts) if hosts else np.empty(0, np.uint8)
    sc, sd = _layout([h.size for h in hosts])
    rc, rd = _layout([t.numel() * t.element_size() for t in output_tensor_list])
    recv = np.empty(int(rc.sum()), np.uint8)
    MPI = _mpi()

    def finish():
        for t, d, c in zip(output_tensor_list, rd.tolist(), rc.tolist()):
            _write(t, recv[d:d + c].view(t.dtype.np))
    req = pg.comm.Ialltoallv([send, (sc, sd), MPI.BYTE], [recv, (rc, rd), MPI.BYTE])
    return _complete(pg, "all_to_all", pg._seq(), async_op, [req], finish, keep=(send, recv, sc, sd, rc, rd),
                     result=list(output_tensor_list))
