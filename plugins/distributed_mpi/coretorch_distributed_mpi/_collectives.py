"""Tensor collectives and point-to-point ops (``all_reduce``, ``broadcast``, ``send``, ...), their ``Work``
handles and the host staging of tensors.  Public through :mod:`coretorch_distributed_mpi.api`."""
from __future__ import annotations

import datetime
import warnings

import numpy as np

from coretorch.plugins import get_kernel, increment_version, to_array
from coretorch.tensor import Tensor

from ._groups import (ProcessGroup, ReduceOp, _group, _member_group, _mpi, _timeout, _to_group_rank,
                      _warn_not_in_group)


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

    def get_future(self) -> Future:
        """A ``Future`` of the operation: its ``wait()`` completes the operation and returns ``result()`` (the
        output tensors), as torch's ``Work.get_future()``."""
        return Future(self._wait_result, self.is_completed)

    def _wait_result(self) -> list:
        self.wait()
        return self.result()


class Future:
    """The reading side of ``torch.futures.Future`` for a collective's result: ``wait()``/``value()`` give it
    (completing the operation), ``done()`` polls, ``then(fn)`` chains ``fn(this_future)``."""

    def __init__(self, compute, done=None):
        self._compute = compute
        self._poll = done
        self._has = False
        self._value = None

    def wait(self):
        """Complete the operation and return its value (computed once)."""
        if not self._has:
            self._value, self._has = self._compute(), True
            self._compute = None
        return self._value

    def value(self):
        """The value (as ``wait()``)."""
        return self.wait()

    def done(self) -> bool:
        """Whether the value is ready without waiting."""
        return self._has or (self._poll is not None and self._poll())

    def then(self, callback) -> Future:
        """A Future whose value is ``callback(self)``, computed when it is waited on."""
        def chained():
            self.wait()
            return callback(self)
        return Future(chained, self.done)

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` once the value is there (here: on completion now)."""
        self.wait()
        callback(self)


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


def _write(t: Tensor, h: np.ndarray, bump: bool = True) -> None:
    """Put host values ``h`` into t's own storage (views of t see them) and bump its version counter (unless
    ``bump`` is False: DDP's buffer broadcast, which torch does under ``_unsafe_preserve_version_counter``)."""
    upload = get_kernel("from_numpy", t)(np.asarray(h).reshape(tuple(t.shape)))
    get_kernel("assign_", t)(to_array(t), upload)
    if bump:
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
    # RuntimeError with torch's messages (its AVG divides in place, which fails for integer tensors)
    if op is ReduceOp.AVG and kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {h.dtype}: ReduceOp.AVG "
                           "needs a floating-point tensor")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind == "f":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype ({h.dtype})")
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


def _check_same(tensors, like: Tensor, what: str, n: int, op: str = "") -> None:
    """torch's checks and error types: a wrong list length or shape is a RuntimeError, a dtype a ValueError."""
    if len(tensors) != n:
        raise RuntimeError(f"{op}: invalid {what} (expected length {n}, got {len(tensors)})")
    for i, t in enumerate(tensors):
        _check(t, what)
        if t.dtype is not like.dtype:
            raise ValueError(f"{op}: Invalid usage of tensors with different dtypes: found {t.dtype} in {what}[{i}] "
                             f"and {like.dtype}")
        if tuple(t.shape) != tuple(like.shape):
            raise RuntimeError(f"{op}: invalid tensor size at index {i} of {what} (expected {tuple(like.shape)}, "
                               f"got {tuple(t.shape)})")


def _root_only(mine: bool, tensors, what: str, role: str) -> None:
    """torch's rule for gather/scatter lists: given on the root, absent elsewhere (ValueError)."""
    if mine and not tensors:
        raise ValueError(f"Argument ``{what}`` must be specified on {role} rank.")
    if not mine and tensors:
        raise ValueError(f"Argument ``{what}`` must NOT be specified on non-{role} ranks.")


def _not_self(pg: ProcessGroup, peer: int, role: str) -> None:
    """Point-to-point with oneself is a ValueError in torch (MPI would match it, or wait forever)."""
    if peer == pg.rank():
        raise ValueError(f"Invalid {role} rank: {role} rank should not be the same as the rank of the current "
                         "process.")


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
    _check_same(tensor_list, tensor, "tensor_list", n, "all_gather")
    send = _host_in(tensor)
    recv = np.empty((n,) + send.shape, send.dtype)

    def finish():
        for i, t in enumerate(tensor_list):
            _write(t, recv[i])
    seq = pg._seq()
    return _complete(pg, "all_gather", seq, async_op, [pg.comm.Iallgather(_bytes(send), _bytes(recv))], finish,
                     keep=(send, recv), result=list(tensor_list))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """``output_tensor`` (group size times ``input_tensor`` along dim 0, or stacked) gets every rank's input."""
    _check(output_tensor)
    _check(input_tensor)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("all_gather_single")
        return None
    n = pg.size()
    if output_tensor.dtype is not input_tensor.dtype:
        raise ValueError(f"all_gather_into_tensor: Invalid usage of tensors with different dtypes: found "
                         f"{output_tensor.dtype} and {input_tensor.dtype}")
    if output_tensor.numel() != n * input_tensor.numel():   # (torch: RuntimeError)
        raise RuntimeError(f"all_gather_into_tensor: invalid tensor size: the output {tuple(output_tensor.shape)} "
                           f"must hold world size ({n}) times the input {tuple(input_tensor.shape)}")
    send = _host_in(input_tensor)
    recv, staged = _host_inout(output_tensor)

    def finish():
        if staged:
            _write(output_tensor, recv)
        else:
            increment_version(output_tensor)
    seq = pg._seq()
    return _complete(pg, "all_gather_into_tensor", seq, async_op, [pg.comm.Iallgather(_bytes(send), _bytes(recv))],
                     finish, keep=(send, recv), result=[output_tensor])


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
                     keep=(w, recv, send), result=[output])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``output`` of group rank i receives the reduction over ranks of ``input_list[i]``."""
    _check(output)
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("reduce_scatter")
        return None
    n = pg.size()
    _check_same(input_list, output, "input_list", n, "reduce_scatter")
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
    if input.dtype is not output.dtype:
        raise ValueError(f"reduce_scatter_tensor: Invalid usage of tensors with different dtypes: found "
                         f"{input.dtype} and {output.dtype}")
    if input.numel() != n * output.numel():   # (torch: RuntimeError)
        raise RuntimeError(f"reduce_scatter_tensor: invalid tensor size: the input {tuple(input.shape)} must hold "
                           f"world size ({n}) times the output {tuple(output.shape)}")
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
                     keep=(w, h), result=[tensor])


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
    _root_only(mine, gather_list, "gather_list", "destination")
    send = _host_in(tensor)
    recv = None
    if mine:
        _check_same(gather_list, tensor, "gather_list", pg.size(), "gather")
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
    _root_only(mine, scatter_list, "scatter_list", "source")
    send = None
    if mine:
        _check_same(scatter_list, tensor, "scatter_list", pg.size(), "scatter")
        send = np.stack([_host_in(t) for t in scatter_list])
    recv = np.empty(tuple(tensor.shape), tensor.dtype.np)

    def finish():
        _write(tensor, recv)
    sb = _bytes(send) if send is not None else None  # (send: made on the root only)
    seq = pg._seq()
    return _complete(pg, "scatter", seq, async_op, [pg.comm.Iscatter(sb, _bytes(recv), root=root)], finish,
                     keep=(send, recv), result=[tensor])


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


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that waits at most ``timeout`` (a timedelta, or seconds as a float with a warning, as torch;
    default: the group's).  torch's gloo form raises naming the ranks that did not arrive; here the watchdog
    aborts the job with a message naming the barrier (MPI cannot cancel it).  ``wait_all_ranks`` is accepted."""
    pg = _group(group)
    if pg is None:
        _warn_not_in_group("monitored_barrier")
        return None
    if isinstance(timeout, float):
        warnings.warn("Please specify timeout arg as a timedelta. Converting current value of "
                      f"{timeout} assuming it represents seconds", stacklevel=2)
        timeout = datetime.timedelta(seconds=timeout)
    limit = None if timeout is None else _timeout(timeout, "monitored_barrier")
    Work([pg.comm.Ibarrier()], pg=pg, what="monitored_barrier", seq=pg._seq()).wait(limit)
    return None


def isend(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> Work | None:
    """Send ``tensor`` to rank ``dst`` without waiting; ``wait()`` before modifying it.  None (with a warning) on a
    rank not in ``group``, as in torch (where a global ``dst`` cannot be mapped into that group: ValueError)."""
    _check(tensor)
    pg = _group(group) if group_dst is not None else _member_group(group)
    if pg is None:
        _warn_not_in_group("isend")
        return None
    peer = _to_group_rank(pg, dst, group_dst, "dst")
    _not_self(pg, peer, "destination")
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
    _not_self(pg, peer, "source")
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
    _not_self(pg, peer, "source")
    h = np.empty(tuple(tensor.shape), tensor.dtype.np)
    status = MPI.Status()
    gpeer = None if peer == MPI.ANY_SOURCE else pg.ranks[peer]
    pg._wait([pg.comm.Irecv(_bytes(h), source=peer, tag=tag)], "recv from " +
             ("any rank" if gpeer is None else f"rank {gpeer}"), None, gpeer, statuses=[status])
    _write(tensor, h)
    return pg.ranks[status.Get_source()]


class P2POp:
    """One point-to-point operation for ``batch_isend_irecv``: ``op`` is ``isend`` or ``irecv``, ``peer`` a global
    rank (or ``group_peer`` within ``group``)."""

    def __init__(self, op, tensor, peer: int | None = None, group=None, tag: int = 0, group_peer: int | None = None):
        if op is not isend and op is not irecv:
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        _check(tensor)
        self.op = op
        self.tensor = tensor
        self.group = group
        self.tag = tag
        pg = _group(group)
        if pg is not None and group_peer is None and peer is not None:
            group_peer = _to_group_rank(pg, peer, None, "peer")
        self.group_peer = group_peer
        self.peer = pg.ranks[group_peer] if pg is not None and group_peer is not None else peer


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Start every ``P2POp`` of the list (all on one group) and return their ``Work`` handles, in order."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    if any(p.group is not p2p_op_list[0].group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    works = []
    for p in p2p_op_list:
        kw = {"group_dst" if p.op is isend else "group_src": p.group_peer}
        works.append(p.op(p.tensor, group=p.group, tag=p.tag, **kw))
    return works
