"""Review 23a under `mpiexec -n 2`: torch's error types of the collectives, Work.get_future, all_to_all(_single),
gather_object / scatter_object_list / all_gather_object, and DDP's state synchronisation (frozen parameters,
broadcast_buffers=False, reassigned buffers, when buffers are broadcast).  Expected values are numpy on the
known inputs of both ranks, or what PyTorch 2.13 (gloo, 2 ranks) did on the same script (said where)."""
from __future__ import annotations

import os
import warnings

import numpy as np
from _checks import Checks

import coretorch
import coretorch.distributed as dist
from coretorch import nn
from coretorch.testing import available_devices

dist.init_process_group(backend="mpi")
rank, world = dist.get_rank(), dist.get_world_size()
other = 1 - rank
C = Checks(rank)


def raises(name: str, exc: type, fragment: str, fn) -> None:
    """fn() raises exactly ``exc`` (not a subclass-sibling) with ``fragment`` in its message."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type is the check)
        C.check(name, type(e) is exc and fragment in str(e), f"{type(e).__name__}: {e}")
        return
    C.check(name, False, "nothing raised")


# ---- error types (torch: the backend's RuntimeError for sizes/ops/roots, ValueError for dtypes and p2p) -----------
for dev in available_devices():
    t = f"[{dev}]"
    raises(f"{t} all_reduce AVG int64: RuntimeError", RuntimeError, "can't be cast",
           lambda: dist.all_reduce(coretorch.ones(2, dtype=coretorch.int64, device=dev), op=dist.ReduceOp.AVG))
    raises(f"{t} all_reduce BAND float32: RuntimeError", RuntimeError, "Cannot use ReduceOp.BAND with non-integral",
           lambda: dist.all_reduce(coretorch.ones(2, device=dev), op=dist.ReduceOp.BAND))
    raises(f"{t} all_gather wrong size: RuntimeError", RuntimeError, "invalid tensor size at index 1",
           lambda: dist.all_gather([coretorch.zeros(2, device=dev), coretorch.zeros(3, device=dev)],
                                   coretorch.ones(2, device=dev)))
    raises(f"{t} all_gather short list: RuntimeError", RuntimeError, "expected length 2, got 1",
           lambda: dist.all_gather([coretorch.zeros(2, device=dev)], coretorch.ones(2, device=dev)))
    raises(f"{t} all_gather wrong dtype: ValueError", ValueError, "different dtypes",
           lambda: dist.all_gather([coretorch.zeros(2, dtype=coretorch.int64, device=dev),
                                    coretorch.zeros(2, device=dev)], coretorch.ones(2, device=dev)))
    raises(f"{t} all_gather_into_tensor wrong size: RuntimeError", RuntimeError, "invalid tensor size",
           lambda: dist.all_gather_into_tensor(coretorch.zeros(5, device=dev), coretorch.ones(2, device=dev)))
    raises(f"{t} reduce_scatter_tensor wrong size: RuntimeError", RuntimeError, "invalid tensor size",
           lambda: dist.reduce_scatter_tensor(coretorch.zeros(2, device=dev), coretorch.ones(5, device=dev)))
    raises(f"{t} broadcast src=5: RuntimeError invalid root rank", RuntimeError, "invalid root rank: 5",
           lambda: dist.broadcast(coretorch.ones(2, device=dev), src=5))
    raises(f"{t} reduce group_dst=2: RuntimeError invalid root rank", RuntimeError, "invalid root rank: 2",
           lambda: dist.reduce(coretorch.ones(2, device=dev), group_dst=2))
    raises(f"{t} send to self: ValueError", ValueError, "destination rank should not be the same",
           lambda: dist.send(coretorch.ones(2, device=dev), dst=rank))
    raises(f"{t} isend to self: ValueError", ValueError, "destination rank should not be the same",
           lambda: dist.isend(coretorch.ones(2, device=dev), dst=rank))
    raises(f"{t} recv from self: ValueError", ValueError, "source rank should not be the same",
           lambda: dist.recv(coretorch.ones(2, device=dev), src=rank))
    # the root without its list, the other rank with one: both ValueError, no communication
    lst = [coretorch.zeros(2, device=dev) for _ in range(world)] if rank == 1 else None
    raises(f"{t} gather list on the wrong rank: ValueError", ValueError,
           "must be specified on destination rank" if rank == 0 else "must NOT be specified on non-destination",
           lambda: dist.gather(coretorch.ones(2, device=dev), lst, dst=0))
    raises(f"{t} scatter list on the wrong rank: ValueError", ValueError,
           "must be specified on source rank" if rank == 0 else "must NOT be specified on non-source",
           lambda: dist.scatter(coretorch.ones(2, device=dev), lst, src=0))
    raises(f"{t} all_to_all_single dim 0 not divisible: RuntimeError", RuntimeError, "does not divide equally",
           lambda: dist.all_to_all_single(coretorch.zeros(3, device=dev), coretorch.ones(3, device=dev)))
    raises(f"{t} all_to_all_single bad split sizes: RuntimeError", RuntimeError, "Split sizes doesn't match",
           lambda: dist.all_to_all_single(coretorch.zeros(4, device=dev), coretorch.ones(4, device=dev),
                                          [2, 2], [1, 1]))

sub = dist.new_group([1])
if rank == 1:
    raises("broadcast on a sub-group with a global src outside it: ValueError", ValueError, "not part of group",
           lambda: dist.broadcast(coretorch.ones(2), src=0, group=sub))
else:
    C.check("broadcast on a sub-group with a global src outside it: ValueError", True)


# ---- Work.get_future -------------------------------------------------------------------------------------------
def check_future():
    for dev in available_devices():
        x = coretorch.tensor([1.0, 2.0], device=dev) * (rank + 1)
        w = dist.all_reduce(x, async_op=True)
        fut = w.get_future()
        chained = fut.then(lambda f: f.value()[0] * 10)
        vals = fut.wait()
        C.check(f"[{dev}] Work.get_future().wait() is [the reduced tensor]", len(vals) == 1 and vals[0] is x, vals)
        C.close(f"[{dev}] Work.get_future() value", x.cpu().numpy(), np.array([3.0, 6.0], np.float32))
        C.check(f"[{dev}] Work.get_future() done, work completed", fut.done() and w.is_completed())
        C.close(f"[{dev}] Work.get_future().then(fn)", chained.wait().cpu().numpy(), np.array([30.0, 60.0], np.float32))
        outs = [coretorch.zeros(2, device=dev) for _ in range(world)]
        got = dist.all_gather(outs, x, async_op=True).get_future().wait()
        C.check(f"[{dev}] Work.get_future of all_gather: the output list", len(got) == 2 and
                all(a is b for a, b in zip(got, outs)), got)
        y = coretorch.ones(2, device=dev)
        got = dist.reduce(y, dst=0, async_op=True).get_future().wait()
        C.check(f"[{dev}] Work.get_future of reduce: [tensor]", len(got) == 1 and got[0] is y, got)
C.run("Work.get_future (raised)", check_future)


# ---- all_to_all_single / all_to_all (values PyTorch 2.13 gave on the same inputs) ------------------------------
def check_all_to_all():
    for dev in available_devices():
        for dt in (coretorch.int64, coretorch.float32):
            npdt = np.int64 if dt is coretorch.int64 else np.float32
            inp = coretorch.arange(4, device=dev).to(dt) + rank * 10
            out = coretorch.empty(4, dtype=dt, device=dev)
            dist.all_to_all_single(out, inp)
            C.close(f"[{dev}] all_to_all_single equal splits {dt}", out.cpu().numpy(),
                    np.array([0, 1, 10, 11] if rank == 0 else [2, 3, 12, 13], npdt))
            inp = coretorch.arange(3, device=dev).to(dt) + rank * 10
            splits = [1, 2] if rank == 0 else [2, 1]
            out = coretorch.empty(3, dtype=dt, device=dev)
            w = dist.all_to_all_single(out, inp, splits, splits, async_op=True)
            w.wait()
            C.close(f"[{dev}] all_to_all_single split sizes async {dt}", out.cpu().numpy(),
                    np.array([0, 10, 11] if rank == 0 else [1, 2, 12], npdt))
        # rows of a 2-d tensor, into a strided (transposed-back) output: the output's own storage is written
        inp = coretorch.arange(8.0, device=dev).reshape(4, 2) + rank * 100
        base = coretorch.zeros(2, 4, device=dev)
        out = base.t()
        dist.all_to_all_single(out, inp)
        exp = np.concatenate([np.arange(8.0).reshape(4, 2)[2 * rank:2 * rank + 2],
                              np.arange(8.0).reshape(4, 2)[2 * rank:2 * rank + 2] + 100]).astype(np.float32)
        C.close(f"[{dev}] all_to_all_single 2-d rows into a strided output", base.t().cpu().numpy(), exp)
        ins = [coretorch.full((i + 1,), float(rank * 10 + i), device=dev) for i in range(world)]
        outs = [coretorch.empty(rank + 1, device=dev) for _ in range(world)]
        dist.all_to_all(outs, ins)
        for i in range(world):
            C.close(f"[{dev}] all_to_all uneven pieces [{i}]", outs[i].cpu().numpy(),
                    np.full(rank + 1, i * 10 + rank, np.float32))
C.run("all_to_all (raised)", check_all_to_all)


# ---- object collectives (PyTorch 2.13's results on the same calls) -------------------------------------------
def check_objects():
    out = [None] * 2
    dist.gather_object({"r": rank}, out if rank == 0 else None, dst=0)
    C.check("gather_object", out == ([{"r": 0}, {"r": 1}] if rank == 0 else [None, None]), out)
    out = ["keep"]
    dist.scatter_object_list(out, [10, 20] if rank == 1 else None, src=1)
    C.check("scatter_object_list", out == [10 + 10 * rank], out)
    raises("scatter_object_list empty output list: ValueError", ValueError, "list of size at least 1",
           lambda: dist.scatter_object_list([], None))
    out = ["a", "b", "tail"]
    dist.all_gather_object(out, rank * 7)
    C.check("all_gather_object fills the first world-size slots, keeps the rest", out == [0, 7, "tail"], out)
    mine = {"from": rank}
    out = [mine, "x"]
    dist.broadcast_object_list(out, src=0)
    C.check("broadcast_object_list: the source keeps its own objects (identity), others get copies",
            out[0] is mine if rank == 0 else (out == [{"from": 0}, "x"] and out[0] is not mine), out)
C.run("object collectives (raised)", check_objects)


# ---- P2POp / batch_isend_irecv (torch's example: each rank sends to the other and receives from it) ------------
def check_batch_p2p():
    for dev in available_devices():
        send = coretorch.arange(2, device=dev) + 2 * rank
        recv = coretorch.zeros(2, dtype=coretorch.int64, device=dev)
        ops = [dist.P2POp(dist.isend, send, other), dist.P2POp(dist.irecv, recv, other)]
        works = dist.batch_isend_irecv(ops)
        for w in works:
            w.wait()
        C.close(f"[{dev}] batch_isend_irecv", recv.cpu().numpy(), np.arange(2) + 2 * other)
    raises("P2POp with another op: ValueError", ValueError, "Invalid ``op``",
           lambda: dist.P2POp(dist.all_reduce, coretorch.ones(1), other))
    raises("batch_isend_irecv of a non-P2POp: ValueError", ValueError, "Invalid ``p2p_op_list``",
           lambda: dist.batch_isend_irecv([1]))
C.run("batch_isend_irecv (raised)", check_batch_p2p)


# ---- DDP state synchronisation (what PyTorch 2.13 did, run side by side) ----------------------------------------
ONE = np.array([1.0], np.float32)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.frozen = nn.Linear(2, 2)
        self.frozen.requires_grad_(False)
        self.register_buffer("cnt", coretorch.zeros(1) + rank * 100)
        with coretorch.no_grad():
            for p in self.parameters():
                p.fill_(rank + 1)

    def forward(self, x):
        self.cnt = self.cnt + 1    # a reassigned buffer
        return self.a(x) + self.frozen(x)


def check_ddp(dev):
    t = f"[{dev}]"
    m = Net().to(dev)
    d = nn.parallel.DistributedDataParallel(m)
    C.check(f"{t} DDP construction broadcasts frozen parameters from rank 0",
            np.all(m.frozen.weight.detach().cpu().numpy() == 1) and np.all(m.frozen.bias.detach().cpu().numpy() == 1),
            m.frozen.weight.tolist())
    C.close(f"{t} DDP construction broadcasts buffers", m.cnt.cpu().numpy(), np.zeros(1, np.float32))
    x = coretorch.ones(1, 2, device=dev)

    def forward_after(fill):
        with coretorch.no_grad():
            m.cnt.fill_(fill)
        d(x)
        return m.cnt.cpu().numpy()
    d(x).sum().backward()
    # rank 1's (reassigned) buffer is overwritten by rank 0's before the next forward
    C.close(f"{t} DDP broadcasts the buffer the module holds now (reassigned)", forward_after(rank * 100 + 50),
            np.array([51.0], np.float32))
    with d.no_sync():   # the first forward under no_sync still broadcasts (the previous forward synchronised)
        C.close(f"{t} DDP buffers: first forward in no_sync broadcasts", forward_after(rank * 100),
                ONE)
        C.close(f"{t} DDP buffers: second forward in no_sync does not", forward_after(rank * 100),
                np.array([rank * 100 + 1.0], np.float32))
    C.close(f"{t} DDP buffers: forward after no_sync does not broadcast", forward_after(rank * 100),
            np.array([rank * 100 + 1.0], np.float32))
    with coretorch.no_grad():
        C.close(f"{t} DDP buffers: first no_grad forward broadcasts", forward_after(rank * 100),
                ONE)
        C.close(f"{t} DDP buffers: second no_grad forward does not", forward_after(rank * 100),
                np.array([rank * 100 + 1.0], np.float32))
    C.close(f"{t} DDP buffers: forward after no_grad does not broadcast", forward_after(rank * 100),
            np.array([rank * 100 + 1.0], np.float32))
    C.close(f"{t} DDP buffers: the next forward broadcasts again", forward_after(rank * 100),
            ONE)

    m2 = Net().to(dev)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        d2 = nn.parallel.DistributedDataParallel(m2, broadcast_buffers=False)
    C.check(f"{t} DDP broadcast_buffers=: FutureWarning (deprecated in 2.13)",
            any(issubclass(w.category, FutureWarning) and "broadcast_buffers" in str(w.message) for w in rec),
            [str(w.message) for w in rec])
    C.close(f"{t} DDP broadcast_buffers=False keeps buffers rank-local at construction", m2.cnt.cpu().numpy(),
            np.array([rank * 100.0], np.float32))
    C.check(f"{t} DDP broadcast_buffers=False: forward_sync_buffers False",
            d2.broadcast_buffers is False and d2.forward_sync_buffers is False)
    m3 = Net().to(dev)
    d3 = nn.parallel.DistributedDataParallel(m3, forward_sync_buffers=False)
    C.close(f"{t} DDP forward_sync_buffers=False still broadcasts buffers at construction", m3.cnt.cpu().numpy(),
            np.zeros(1, np.float32))
    with coretorch.no_grad():
        m3.cnt.fill_(rank * 100)
    d3(x)
    C.close(f"{t} DDP forward_sync_buffers=False: no broadcast before forward", m3.cnt.cpu().numpy(),
            np.array([rank * 100 + 1.0], np.float32))


for dev in available_devices():
    C.run(f"[{dev}] DDP state sync (raised)", lambda dev=dev: check_ddp(dev))


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(coretorch.ones(2))
        self.register_buffer("scale", coretorch.full((2,), 2.0 + rank))

    def forward(self, x):
        return self.w * x * self.scale   # the buffer is saved for backward


def check_buffer_version(dev):
    m = Scaled().to(dev)
    d = nn.parallel.DistributedDataParallel(m)
    loss = d(coretorch.ones(2, device=dev)).sum()
    with coretorch.no_grad():
        d(coretorch.ones(2, device=dev))       # broadcasts the buffers again (the previous forward synchronised)
    loss.backward()                            # torch: fine, its buffer sync keeps the version counter
    C.close(f"[{dev}] DDP buffer sync keeps version counters (backward of an earlier forward works)",
            m.w.grad.cpu().numpy(), np.full(2, 2.0, np.float32))


for dev in available_devices():
    C.run(f"[{dev}] DDP buffer sync keeps version counters (raised)", lambda dev=dev: check_buffer_version(dev))
raises("DDP of a cpu module with device_ids: ValueError", ValueError, "device_ids and output_device arguments",
       lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0]))
C.check("DDP of a cpu module: device_ids None", nn.parallel.DistributedDataParallel(nn.Linear(2, 2)).device_ids is None)


# ---- DDP comm hooks: gradients against DDP without a hook (the average of the two ranks' gradients) ------------
def check_comm_hooks(dev):
    from coretorch.distributed.algorithms.ddp_comm_hooks import default_hooks
    t = f"[{dev}]"
    x = coretorch.tensor(np.arange(12.0).reshape(4, 3) * (rank + 1), dtype=coretorch.float32, device=dev)

    def grads(hook=None, state=None):
        coretorch.manual_seed(0)
        net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(dev)
        d = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.00001)   # one bucket per parameter
        if hook is not None:
            d.register_comm_hook(state, hook)
        d(x).pow(2).sum().backward()
        return d, [p.grad.cpu().numpy() for p in net.parameters()]
    _, ref = grads()
    _, got = grads(default_hooks.allreduce_hook)
    C.check(f"{t} comm hook allreduce_hook = no hook", all(np.allclose(a, b, rtol=1e-6, atol=1e-6)
                                                           for a, b in zip(got, ref)), (got[0], ref[0]))
    _, got = grads(default_hooks.fp16_compress_hook)
    C.check(f"{t} comm hook fp16_compress_hook ~ no hook", all(np.allclose(a, b, rtol=2e-3, atol=2e-2)
                                                               for a, b in zip(got, ref)), (got[0], ref[0]))
    seen = []

    def sum_hook(state, bucket):   # no division: the gradients are the sums, used as the hook returns them
        seen.append((bucket.index(), len(bucket.parameters()), bucket.is_last(), state))
        return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])
    d, got = grads(sum_hook, "st")
    C.check(f"{t} comm hook result used as returned (sum, not divided)",
            all(np.allclose(a, 2 * b, rtol=1e-6, atol=1e-6) for a, b in zip(got, ref)), (got[0], ref[0]))
    C.check(f"{t} comm hook sees every bucket once, with its state", sum(s[1] for s in seen) == len(got) and
            sorted(s[0] for s in seen) == list(range(len(seen))) and all(s[3] == "st" for s in seen)
            and [s[0] for s in seen if s[2]] == [len(seen) - 1], seen)
    raises(f"{t} comm hook registered twice: RuntimeError", RuntimeError, "can only be called once",
           lambda: d.register_comm_hook(None, sum_hook))


def check_join_with_hook(dev):
    """Uneven inputs (rank 0: 2 batches, rank 1: 3) with allreduce_hook: the joined rank runs the hook on zeros."""
    from coretorch.distributed.algorithms.ddp_comm_hooks import default_hooks
    net = nn.Linear(3, 1, bias=False).to(dev)
    d = nn.parallel.DistributedDataParallel(net)
    d.register_comm_hook(None, default_hooks.allreduce_hook)
    grads = []
    with d.join():
        for i in range(2 if rank == 0 else 3):
            net.weight.grad = None
            d(coretorch.tensor([[1.0, 2.0, 3.0]], device=dev) * (rank + 1 + i)).sum().backward()
            grads.append(net.weight.grad.cpu().numpy().copy())
    base = np.array([[1.0, 2.0, 3.0]], np.float32)
    C.close(f"[{dev}] comm hook inside join: iteration 0 averaged", grads[0], base * 1.5)
    C.close(f"[{dev}] comm hook inside join: iteration 1 averaged", grads[1], base * 2.5)
    if rank == 1:   # only rank 1 contributes; the hook divides by the world size (torch's default)
        C.close(f"[{dev}] comm hook inside join: the lone rank's gradient / world size", grads[2], base * 2.0)
    else:
        C.check(f"[{dev}] comm hook inside join: the lone rank's gradient / world size", len(grads) == 2)


for dev in available_devices():
    C.run(f"[{dev}] comm hooks (raised)", lambda dev=dev: check_comm_hooks(dev))
    C.run(f"[{dev}] comm hook inside join (raised)", lambda dev=dev: check_join_with_hook(dev))



# ---- dist.group.WORLD: the default ProcessGroup after init (torch: dist.group.WORLD.size()), None after destroy --
def check_world():
    W = dist.group.WORLD
    C.check("group.WORLD is the default group", W is not None and W.size() == world and W.rank() == rank
            and dist.get_world_size(W) == world, W)
    x = coretorch.ones(2) * (rank + 1)
    dist.all_reduce(x, group=W)
    C.close("all_reduce on group.WORLD", x.numpy(), np.full(2, 3.0, np.float32))
C.check("init_process_group sets LOCAL_RANK/LOCAL_WORLD_SIZE (what torchrun sets); get_node_local_rank reads it",
        os.environ.get("LOCAL_RANK") == str(rank) and os.environ.get("LOCAL_WORLD_SIZE") == "2"
        and dist.get_node_local_rank() == rank, (os.environ.get("LOCAL_RANK"), os.environ.get("LOCAL_WORLD_SIZE")))
C.run("group.WORLD (raised)", check_world)


def check_monitored_barrier():
    import datetime
    dist.monitored_barrier()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=60), wait_all_ranks=True)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        dist.monitored_barrier(timeout=60.0)
    C.check("monitored_barrier (timedelta, float seconds with torch's warning)",
            any("timeout arg as a timedelta" in str(w.message) for w in rec), [str(w.message) for w in rec])
C.run("monitored_barrier (raised)", check_monitored_barrier)
W = dist.group.WORLD
dist.destroy_process_group(W)   # torch: destroying group.WORLD destroys the default group
C.check("destroy_process_group(group.WORLD) destroys the default group; group.WORLD is then None",
        not dist.is_initialized() and dist.group.WORLD is None)
C.dump()
