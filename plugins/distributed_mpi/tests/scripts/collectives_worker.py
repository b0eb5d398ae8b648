"""Every collective of coretorch.distributed against numpy on the gathered inputs, on every available device.

Inputs differ per rank; the reference gathers them with raw mpi4py (independent of the code under test)."""
from __future__ import annotations

import warnings

import numpy as np
from _checks import Checks
from mpi4py import MPI

import coretorch
import coretorch.distributed as dist
from coretorch.testing import available_devices

dist.init_process_group(backend="mpi")
rank, world = dist.get_rank(), dist.get_world_size()
C = Checks(rank)
C.check("world", world == 2 and dist.is_initialized() and dist.get_backend() == "mpi", f"{rank}/{world}")
comm = MPI.COMM_WORLD
ops = {"SUM": np.sum, "AVG": np.mean, "MAX": np.max, "MIN": np.min, "PRODUCT": np.prod}


def data(shape, dt, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dt).kind == "f":
        return rng.uniform(-2, 2, shape).astype(dt)
    if np.dtype(dt).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-5, 6, shape).astype(dt)


def gathered(x):
    return np.stack(comm.allgather(x))


def device_dtypes(dev):
    out = ["float32", "int64"]
    try:
        coretorch.zeros(1, dtype=coretorch.float64, device=dev)
        out.append("float64")
    except Exception:
        pass
    if dev == "cpu":
        out += ["float16", "bool"]
    return out


def mk(x, dev):
    return coretorch.tensor(x, device=dev)


for dev in available_devices():
    for dt in device_dtypes(dev):
        tag = f"{dev}/{dt}"
        x = data((3, 5), dt, 10 + rank)
        allx = gathered(x)
        for opname, fn in ops.items():
            if opname == "AVG" and np.dtype(dt).kind != "f":
                continue
            if dt == "bool" and opname in ("AVG",):
                continue
            for async_op in (False, True):
                def check_all_reduce(opname=opname, fn=fn, async_op=async_op):
                    t = mk(x, dev)
                    v0 = t._version
                    w = dist.all_reduce(t, op=getattr(dist.ReduceOp, opname), async_op=async_op)
                    if async_op:
                        C.check(f"all_reduce {opname} async returns Work {tag}", w is not None and w.wait())
                    else:
                        C.check(f"all_reduce {opname} returns None {tag}", w is None)
                    if dt == "bool":
                        exp = allx.any(0) if opname in ("SUM", "MAX") else allx.all(0)
                    else:
                        exp = fn(allx.astype(np.float64) if dt == "float16" else allx, axis=0).astype(dt)
                    tol = 1e-3 if dt == "float16" else 1e-6
                    C.close(f"all_reduce {opname} async={async_op} {tag}", t.cpu().numpy(), exp, rtol=tol, atol=tol)
                    C.check(f"all_reduce bumps version {tag}", t._version > v0)
                C.run(f"all_reduce {opname} async={async_op} {tag} (raised)", check_all_reduce)

        def strided():
            base = mk(x, dev)
            view = base.t()                    # a non-contiguous view: the result lands in base's storage
            dist.all_reduce(view, op=dist.ReduceOp.MAX)
            C.close(f"all_reduce on a strided view writes the base {tag}", base.cpu().numpy(),
                    allx.max(0) if dt != "bool" else allx.any(0))
        C.run(f"strided {tag}", strided)

        for src in (0, 1):
            for async_op in (False, True):
                def check_bcast(src=src, async_op=async_op):
                    t = mk(x, dev)
                    w = dist.broadcast(t, src=src, async_op=async_op)
                    if async_op:
                        w.wait()
                    C.close(f"broadcast src={src} async={async_op} {tag}", t.cpu().numpy(), allx[src])
                C.run(f"broadcast {src} {tag} (raised)", check_bcast)

        for async_op in (False, True):
            def check_gather(async_op=async_op):
                outs = [coretorch.zeros(3, 5, dtype=getattr(coretorch, dt if dt != "bool" else "bool"), device=dev)
                        for _ in range(world)]
                w = dist.all_gather(outs, mk(x, dev), async_op=async_op)
                if async_op:
                    w.wait()
                for i in range(world):
                    C.close(f"all_gather[{i}] async={async_op} {tag}", outs[i].cpu().numpy(), allx[i])
                    C.check(f"all_gather keeps device {tag}", outs[i].device.type == dev)
            C.run(f"all_gather {tag} (raised)", check_gather)

        def check_gather_tensor():
            out = coretorch.zeros(world * 3, 5, dtype=mk(x, dev).dtype, device=dev)
            dist.all_gather_into_tensor(out, mk(x, dev))
            C.close(f"all_gather_into_tensor {tag}", out.cpu().numpy(), allx.reshape(world * 3, 5))
        C.run(f"all_gather_into_tensor {tag} (raised)", check_gather_tensor)

        # reduce_scatter: rank r's input list is [chunk_0, chunk_1]; output of rank i = op over ranks of chunk_i
        chunks = data((world, 2, 5), dt, 50 + rank)
        allc = gathered(chunks)                       # (rank, chunk, 2, 5)
        for opname in ("SUM", "MAX", "AVG"):
            if opname == "AVG" and np.dtype(dt).kind != "f":
                continue
            for async_op in (False, True):
                def check_rs(opname=opname, async_op=async_op):
                    out = mk(np.zeros((2, 5), chunks.dtype), dev)
                    w = dist.reduce_scatter(out, [mk(chunks[i], dev) for i in range(world)],
                                            op=getattr(dist.ReduceOp, opname), async_op=async_op)
                    if async_op:
                        w.wait()
                    if dt == "bool":
                        exp = allc[:, rank].any(0)
                    else:
                        exp = ops[opname](allc[:, rank].astype(np.float64) if dt == "float16" else allc[:, rank],
                                          axis=0).astype(dt)
                    tol = 1e-3 if dt == "float16" else 1e-6
                    C.close(f"reduce_scatter {opname} async={async_op} {tag}", out.cpu().numpy(), exp, tol, tol)
                C.run(f"reduce_scatter {opname} {tag} (raised)", check_rs)

        def check_rst():
            out = mk(np.zeros((2, 5), chunks.dtype), dev)
            dist.reduce_scatter_tensor(out, mk(chunks.reshape(world * 2, 5), dev), op=dist.ReduceOp.MAX)
            C.close(f"reduce_scatter_tensor MAX {tag}", out.cpu().numpy(),
                    allc[:, rank].max(0) if dt != "bool" else allc[:, rank].any(0))
        C.run(f"reduce_scatter_tensor {tag} (raised)", check_rst)

        def check_reduce_gather_scatter():
            t = mk(x, dev)
            dist.reduce(t, dst=1, op=dist.ReduceOp.MAX)
            C.close(f"reduce dst=1 {tag}", t.cpu().numpy(),
                    (allx.max(0) if dt != "bool" else allx.any(0)) if rank == 1 else x)
            lst = [mk(np.zeros_like(x), dev) for _ in range(world)] if rank == 0 else None
            dist.gather(mk(x, dev), lst, dst=0)
            if rank == 0:
                for i in range(world):
                    C.close(f"gather[{i}] {tag}", lst[i].cpu().numpy(), allx[i])
            recvt = mk(np.zeros_like(x), dev)
            dist.scatter(recvt, [mk(allx[i], dev) for i in range(world)] if rank == 1 else None, src=1)
            C.close(f"scatter src=1 {tag}", recvt.cpu().numpy(), allx[rank])
        C.run(f"reduce/gather/scatter {tag} (raised)", check_reduce_gather_scatter)

        def check_p2p():
            if rank == 0:
                dist.send(mk(x, dev), dst=1, tag=7)
                buf = mk(np.zeros_like(x), dev)
                w = dist.irecv(buf, src=1)
                w.wait()
                C.close(f"irecv from 1 {tag}", buf.cpu().numpy(), allx[1])
            else:
                buf = mk(np.zeros_like(x), dev)
                who = dist.recv(buf, src=0, tag=7)
                C.check(f"recv returns the sender {tag}", who == 0, who)
                C.close(f"recv from 0 {tag}", buf.cpu().numpy(), allx[0])
                dist.isend(mk(x, dev), dst=0).wait()
            buf = mk(np.zeros_like(x), dev)
            if rank == 1:
                dist.send(mk(x, dev), dst=0)
            else:
                who = dist.recv(buf)                     # any source
                C.check(f"recv(any source) returns the sender {tag}", who == 1, who)
        C.run(f"send/recv {tag} (raised)", check_p2p)

C.check("barrier", dist.barrier() is None)
w = dist.barrier(async_op=True)
C.check("barrier async", w.wait() and w.is_completed())
# an async Work the caller drops keeps its buffers alive until MPI is done with them (they used to be freed and
# reused by the next tensor, which then received the dropped all-reduce's result)
got = []
for _ in range(5):
    dist.all_reduce(coretorch.ones(4), async_op=True)
    t = coretorch.ones(4)
    dist.all_reduce(t)
    got.append(t.tolist())
C.check("dropped async Work: later collectives unaffected", got == [[2.0] * 4] * 5, got)

# sub-groups: new_group is called by every rank
g1 = dist.new_group([1])
g01 = dist.new_group([0, 1])
if rank == 0:
    C.check("new_group non-member", g1 is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g1) == -1
            and dist.get_world_size(g1) == -1)
    t = coretorch.ones(3)
    with warnings.catch_warnings(record=True) as caught:  # torch: a no-op with a warning naming the collective
        warnings.simplefilter("always")
        nothing = [dist.all_reduce(t, group=g1), dist.broadcast(t, src=1, group=g1), dist.barrier(group=g1),
                   dist.all_gather_into_tensor(coretorch.zeros(3), t, group=g1)]
    C.check("collective on a group this rank is not in is a no-op with torch's warning",
            nothing == [None] * 4 and t.tolist() == [1.0, 1.0, 1.0]
            and [str(w.message).split()[1] for w in caught] == ["all_reduce", "broadcast", "barrier",
                                                                 "all_gather_single"]
            and all("does not belong to the given group" in str(w.message) for w in caught),
            [str(w.message) for w in caught])
    # point-to-point and rank lookups on a group this rank is not in: as torch (distributed_c10d.py), a warning and
    # None / -1, or ValueError where a global rank would have to be mapped into the group
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nothing = (dist.irecv(t, src=1, group=g1), dist.recv(t, group=g1), dist.isend(t, group=g1, group_dst=0))
        dist.send(t, group=g1, group_dst=0)
    C.check("p2p on a group this rank is not in: None, -1 and a warning each",
            nothing == (None, -1, None) and len(caught) == 4 and t.tolist() == [1.0, 1.0, 1.0]
            and all("does not belong to the given group" in str(w.message) for w in caught),
            [nothing, [str(w.message) for w in caught]])
    for what, fn in (("get_global_rank", lambda: dist.get_global_rank(g1, 0)),
                     ("get_group_rank", lambda: dist.get_group_rank(g1, 1)),
                     ("isend with a global dst", lambda: dist.isend(t, dst=1, group=g1))):
        try:
            fn()
            C.check(f"{what} on a group this rank is not in: ValueError as torch", False)
        except ValueError as e:
            C.check(f"{what} on a group this rank is not in: ValueError as torch", "is not registered" in str(e), e)
else:
    t = coretorch.full((3,), 5.0)
    dist.all_reduce(t, group=g1)
    C.check("new_group([1]) of one rank", dist.get_rank(g1) == 0 and dist.get_world_size(g1) == 1
            and t.tolist() == [5.0] * 3 and dist.get_process_group_ranks(g1) == [1])
    C.check("group rank <-> global rank", dist.get_global_rank(g1, 0) == 1 and dist.get_group_rank(g1, 1) == 0)
    try:
        dist.get_global_rank(g1, 1)
        C.check("get_global_rank of a group rank the group lacks: ValueError as torch", False)
    except ValueError as e:
        C.check("get_global_rank of a group rank the group lacks: ValueError as torch", "not part of group" in str(e),
                e)
t = coretorch.full((2,), float(rank + 1))
dist.all_reduce(t, op=dist.ReduceOp.PRODUCT, group=g01)
C.check("new_group([0, 1]) all_reduce", t.tolist() == [2.0, 2.0] and dist.get_world_size(g01) == 2, t.tolist())
b = coretorch.full((2,), float(rank))
dist.broadcast(b, src=1, group=g01)
C.check("broadcast in a group takes a global src", b.tolist() == [1.0, 1.0])

objs = [None, None]
dist.all_gather_object(objs, {"rank": rank})
C.check("all_gather_object", objs == [{"rank": 0}, {"rank": 1}], objs)
lst = [f"from {rank}", rank]
dist.broadcast_object_list(lst, src=1)
C.check("broadcast_object_list", lst == ["from 1", 1], lst)

s = coretorch.utils.data.DistributedSampler(list(range(10)), shuffle=False)
C.check("DistributedSampler takes rank and world size from the process group",
        list(s) == list(range(rank, 10, 2)) and s.num_replicas == 2 and s.rank == rank)

try:
    dist.init_process_group()
    C.check("second init_process_group raises", False)
except ValueError as e:
    C.check("second init_process_group raises", "twice" in str(e))
dist.destroy_process_group()
C.check("destroy_process_group", not dist.is_initialized())
dist.init_process_group("mpi")
C.check("init again after destroy", dist.get_world_size() == 2)
dist.destroy_process_group()
C.dump()
