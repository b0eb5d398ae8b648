"""``DistributedDataParallel``: data parallelism with gradients averaged in buckets during backward.

As PyTorch's reducer: at construction, parameters and buffers are broadcast from rank 0 and the parameters
are split into buckets (in reverse registration order, the order gradients tend to arrive in; the first
bucket is capped at 1 MiB so communication starts early, the others at ``bucket_cap_mb``).  A hook on every
parameter (``Tensor.register_hook`` on the leaf) copies its gradient, plus whatever ``.grad`` already holds
(``no_sync`` accumulation), into its bucket's contiguous host buffer; when a bucket is full, a non-blocking
``MPI_Iallreduce`` starts on it, in bucket order (every rank must start collectives in the same order), while
backward goes on computing the gradients of earlier layers.  When the last gradient has arrived, the hook
waits for every bucket, divides by the world size and writes the averages into the parameters' ``.grad``.

How the result reaches ``.grad`` without an engine callback: the hook sets ``param.grad = None`` and returns a
fresh tensor; the autograd engine then stores that very tensor as ``.grad`` (accumulating into an empty
``.grad`` keeps the tensor it is given), and the final hook writes the averaged values into it in place.  One
consequence: hooks registered on a parameter *after* wrapping it see that placeholder instead of the local
gradient (PyTorch's DDP uses post-accumulate hooks; coretorch has none).

Uneven inputs: ``with ddp.join():`` (PyTorch's generic join context manager, ``algorithms.Join``).  Inside it
every forward of a rank that still has inputs all-reduces a 1 (the join protocol's count) and one small vector:
which ranks are still iterating and whether they will synchronise buffers and gradients.  A rank that has run
out shadows each iteration of the others (``_DDPJoinHook.main_hook``): the same vector (zeros), the buffer
broadcast, one all-reduce of zeros per bucket.  The averaged gradient is the sum over the ranks still iterating
divided by the world size (``divide_by_initial_world_size=True``, PyTorch's default) or by their number.  When
every rank has joined, parameters and buffers are broadcast from the last rank to run out (the highest one),
whose replica took every optimizer step.
"""
from __future__ import annotations

import contextlib
import warnings
import weakref
from typing import Any

import numpy as np

import coretorch
from coretorch.autograd.graph import AccumulateGrad
from coretorch.nn import Module
from coretorch.tensor import Tensor

from .algorithms.join import Join, JoinHook, Joinable, _JoinConfig

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024
_DEFAULT_BUCKET_MB = 25


class _Bucket:
    __slots__ = ("index", "params", "offsets", "flat", "pending", "req", "seq", "outs", "fut")

    def __init__(self, index: int, params: list, offsets: list, total: int, np_dtype):
        self.index = index
        self.params = params          # indices into DDP's parameter list
        self.offsets = offsets        # start of each parameter in flat
        # MPI reduces float16 in no standard type: its buckets reduce in float32
        self.flat = np.zeros(total, np.float32 if np_dtype == np.float16 else np_dtype)
        self.pending = 0
        self.req = None
        self.fut = None               # a comm hook's Future (register_comm_hook) instead of req
        self.seq = 0                  # the all-reduce's number on the process group (for the watchdog)
        self.outs: dict = {}


def _tensors_in(obj, out: list) -> list:
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


def _reachable_leaves(output) -> set:
    """ids of the leaf tensors whose AccumulateGrad node the graph of ``output`` reaches."""
    stack, seen, leaves = [], set(), set()
    for t in _tensors_in(output, []):
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            leaves.add(id(t))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if type(node) is AccumulateGrad:
            leaves.add(id(node.variable))
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                stack.append(nxt)
    return leaves


class DistributedDataParallel(Module, Joinable):
    """``torch.nn.parallel.DistributedDataParallel``: wrap a module replicated on every rank; each rank feeds
    its own part of the batch, and after ``loss.backward()`` every rank's ``.grad`` holds the average of the
    ranks' gradients, so identical optimizer steps keep the replicas identical."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0, broadcast_buffers: bool | None = None,
                 init_sync: bool = True, process_group=None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 forward_sync_buffers: bool | None = None, **unused_kwargs):
        super().__init__()
        from . import api
        pg = api._group(process_group)
        if pg is None:
            raise ValueError("DistributedDataParallel: this rank is not a member of process_group")
        self.module = module
        self.process_group = pg
        # as torch: device_ids/output_device are for accelerator modules; a cpu module given them is a ValueError
        devices = {p.device for p in module.parameters()}
        if devices and all(d.type == "cpu" for d in devices):
            if device_ids or output_device:
                raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                                 "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                                 f"{device_ids}, output_device {output_device}, and module parameters {devices}.")
            device_ids = None
        self.device_ids = device_ids
        self.dim = dim
        # torch 2.13: buffers are broadcast before forward unless forward_sync_buffers (or the deprecated
        # broadcast_buffers) is False; broadcast_buffers=False also keeps them rank-local at construction
        init_sync_buffers = _buffer_sync_args(broadcast_buffers, forward_sync_buffers)
        self.forward_sync_buffers = (forward_sync_buffers if forward_sync_buffers is not None else
                                     init_sync_buffers)
        # torch: the previous forward ran with grad and sync; buffers are broadcast before a forward when it did
        self.require_forward_param_sync = True
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((_DEFAULT_BUCKET_MB if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._ddp_names = [n for n, _ in named]
        self._ddp_params = [p for _, p in named]
        self._verify_same_model()
        if init_sync:   # every parameter (frozen ones too, as torch) and, unless kept local, every buffer
            self._broadcast(self._module_states(init_sync_buffers))
        self._build_buckets()
        self._expect = False          # backward of the last forward must reduce
        self._remaining = 0
        self._next = 0
        self._used = np.zeros(len(self._ddp_params), np.uint8)
        self._ddp_stats = {"buckets": len(self._buckets), "launched_during_backward": 0, "reductions": 0}
        self._join_config = _JoinConfig.construct_disabled_join_config()
        self._divide_by_initial_world_size = True
        self._divisor = pg.size()     # what the summed gradients are divided by (join: maybe fewer ranks)
        ref = weakref.ref(self)
        self._comm_hook: tuple | None = None  # (state, hook) of register_comm_hook
        self._ddp_handles = [p.register_hook(_hook(ref, i)) for i, p in enumerate(self._ddp_params)]

    # ---- construction ---------------------------------------------------------------------------------
    def _verify_same_model(self) -> None:
        from .api import _allgather_obj
        sig = [(n, tuple(p.shape), str(p.dtype)) for n, p in zip(self._ddp_names, self._ddp_params)]
        sigs = _allgather_obj(self.process_group, sig, "DistributedDataParallel construction (model check)")
        for r, s in enumerate(sigs):
            if s != sigs[0]:
                diff = next((a, b) for a, b in zip(s + [None] * len(sigs[0]), sigs[0] + [None] * len(s)) if a != b)
                raise RuntimeError(f"DistributedDataParallel: the model on rank {self.process_group.ranks[r]} "
                                   f"differs from rank {self.process_group.ranks[0]}'s: {diff[0]} vs {diff[1]}")

    def _broadcast(self, tensors: list, src: int = 0, bump: bool = True) -> None:
        """Every tensor takes the values of group rank ``src``: one MPI_Ibcast of all of them packed as bytes
        (``bump=False``: version counters kept, as torch's buffer sync before forward)."""
        from .api import _host_in, _write
        if not tensors:
            return
        pg = self.process_group
        hosts = [_host_in(t) for t in tensors]
        packed = np.concatenate([h.reshape(-1).view(np.uint8) for h in hosts]) if hosts else np.empty(0, np.uint8)
        pg._wait([pg.comm.Ibcast(packed, root=src)], "DistributedDataParallel broadcast of parameters/buffers",
                 pg._seq())
        if pg.rank() == src:
            return
        off = 0
        with coretorch.no_grad():
            for t, h in zip(tensors, hosts):
                n = h.nbytes
                _write(t, packed[off:off + n].view(h.dtype).reshape(h.shape), bump)
                off += n

    def _build_buckets(self) -> None:
        open_: dict = {}     # (device, dtype) -> [param indices, bytes]
        groups: list = []
        caps_used: dict = {}
        for i in reversed(range(len(self._ddp_params))):
            p = self._ddp_params[i]
            key = (str(p.device), p.dtype)
            cur = open_.get(key)
            if cur is None:
                cur = open_[key] = [[], 0]
                groups.append(cur)
            cur[0].append(i)
            cur[1] += p.numel() * p.element_size()
            cap = self.bucket_bytes_cap if caps_used.get(key) else min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
            if cur[1] >= cap:
                caps_used[key] = True
                del open_[key]
        self._buckets = []
        self._where: list[Any] = [None] * len(self._ddp_params)  # (bucket, offset) per parameter, set below
        for idx, (members, _) in enumerate(groups):
            offsets, total = [], 0
            for i in members:
                offsets.append(total)
                total += self._ddp_params[i].numel()
            b = _Bucket(idx, members, offsets, total, self._ddp_params[members[0]].dtype.np)
            for i, off in zip(members, offsets):
                self._where[i] = (b, off)
            self._buckets.append(b)

    # ---- forward ----------------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._expect and self._remaining < len(self._ddp_params):
            missing = [self._ddp_names[i] for i in range(len(self._ddp_params)) if not self._used[i]]
            self._expect = False
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`coretorch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                f"participate in calculating loss. Parameters that did not receive a gradient: {missing}")
        sync = coretorch.is_grad_enabled() and self.require_backward_grad_sync
        if self._join_config.enable:
            self._join_forward(sync)
        elif self.forward_sync_buffers and self.require_forward_param_sync:
            # versions kept, as torch: a graph that saved a buffer may still be backpropagated after this forward
            self._broadcast(self._ddp_buffers, bump=False)
        out = self.module(*inputs, **kwargs)
        self.require_forward_param_sync = sync
        if sync:
            self._prepare(out)
        else:
            self._expect = False
        return out

    @property
    def broadcast_buffers(self) -> bool:
        """Whether buffers are broadcast from rank 0 before each forward (``forward_sync_buffers``)."""
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    @property
    def _ddp_buffers(self) -> list:
        """The module's buffers, read again at each use: a module may reassign one (``self.n = self.n + 1``),
        and the broadcast must reach the tensor the module holds now (as torch's ``_assign_modules_buffers``)."""
        return list(self.module.buffers())

    def _module_states(self, with_buffers: bool) -> list:
        """Every parameter of the module (requires_grad or not) and, if asked, every buffer: what torch's
        ``_sync_module_states`` broadcasts at construction and after join."""
        return list(self.module.parameters()) + (self._ddp_buffers if with_buffers else [])

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate local gradients only; the first synchronised backward after it
        averages the accumulated ``.grad``."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state: object, hook) -> None:
        """Communicate each gradient bucket with ``hook(state, bucket)`` (a ``GradBucket``) instead of the
        all-reduce and division by the world size: the hook returns a Future whose value is the bucket's new
        contents (``algorithms.ddp_comm_hooks.default_hooks.allreduce_hook`` is the default behaviour).
        As torch, it can be registered once, before training."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got {type(hook).__name__}")
        self._comm_hook = (state, hook)

    # ---- uneven inputs ----------------------------------------------------------------------------------
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """``with ddp.join():`` around a training loop whose ranks have different numbers of batches: ranks
        that run out shadow the others' collectives until every rank is done, then every replica takes the
        parameters of the last rank to finish.  Gradients of an iteration are the sum over the ranks still
        iterating divided by the world size (``divide_by_initial_world_size=True``) or by their number."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs) -> JoinHook:
        return _DDPJoinHook(self, divide_by_initial_world_size=kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self._ddp_params[0].device

    @property
    def join_process_group(self):
        return self.process_group

    def _join_info(self, mine) -> tuple:
        """All-reduce of [one flag per rank still iterating, sync buffers?, sync gradients?]: returns (the group
        ranks still iterating, sync buffers, sync gradients).  A joined rank contributes zeros."""
        from .api import _allreduce_np
        n = self.process_group.size()
        info = np.zeros(n + 2, np.int64)
        if mine is not None:
            info[self.process_group.rank()] = 1
            info[n:] = mine
        _allreduce_np(self.process_group, info, "SUM", "DistributedDataParallel join (iteration state)")
        return np.flatnonzero(info[:n]), bool(info[n]), bool(info[n + 1])

    def _join_forward(self, sync: bool) -> None:
        work = Join.notify_join_context(self)
        active, sync_buffers, _ = self._join_info((int(self.require_forward_param_sync), int(sync)))
        if work is not None:
            work.wait()
        self._divisor = self.process_group.size() if self._divide_by_initial_world_size else len(active)
        if sync_buffers and self.broadcast_buffers and self._ddp_buffers:
            # as PyTorch: from the highest rank still iterating, version counters kept
            self._broadcast(self._ddp_buffers, src=int(active.max()), bump=False)

    # ---- the reducer ------------------------------------------------------------------------------------
    def _prepare(self, output) -> None:
        for b in self._buckets:
            b.pending = len(b.params)
            b.req = None
            b.outs = {}
        self._next = 0
        self._remaining = len(self._ddp_params)
        self._used[:] = 0
        self._expect = True
        if self.find_unused_parameters:
            reached = _reachable_leaves(output)
            for i, p in enumerate(self._ddp_params):
                if id(p) not in reached:
                    b, off = self._where[i]
                    slot = b.flat[off:off + p.numel()]
                    if p.grad is None:
                        slot[:] = 0
                    else:
                        slot[:] = p.grad.numpy(force=True).reshape(-1)
                    self._ready(b)

    def _grad_ready(self, i: int, grad: Tensor):
        if not self._expect:
            return None
        p = self._ddp_params[i]
        b, off = self._where[i]
        slot = b.flat[off:off + p.numel()].reshape(tuple(p.shape))
        np.copyto(slot, grad.numpy(force=True))
        if p.grad is not None:
            slot += p.grad.numpy(force=True)
            p.grad = None
        out = coretorch.empty(tuple(p.shape), dtype=p.dtype, device=p.device)
        b.outs[i] = out
        self._used[i] = 1
        self._ready(b)
        return out

    def _ready(self, b: _Bucket) -> None:
        from .api import _mpi
        MPI = _mpi()
        b.pending -= 1
        self._remaining -= 1
        buckets = self._buckets
        comm = self.process_group.comm
        while self._next < len(buckets) and buckets[self._next].pending == 0:
            nb = buckets[self._next]
            if self._comm_hook is not None:   # the hook communicates (and averages) the bucket itself
                state, hook = self._comm_hook
                nb.fut = hook(state, GradBucket(self, nb))
            else:
                nb.seq = self.process_group._seq()
                nb.req = comm.Iallreduce(MPI.IN_PLACE, nb.flat, op=MPI.SUM)
            if self._remaining > 0:
                self._ddp_stats["launched_during_backward"] += 1
            self._next += 1
        if self._remaining == 0:
            self._finalize()

    def _finalize(self) -> None:
        from .api import _allreduce_np, _write
        pg = self.process_group
        for b in self._buckets:
            if b.fut is not None:   # a comm hook's result replaces the bucket, already reduced and divided
                np.copyto(b.flat, b.fut.wait().numpy(force=True).reshape(-1))
            else:
                pg._wait([b.req], f"DistributedDataParallel gradient all_reduce (bucket {b.index})", b.seq)
        used = self._used
        if self.find_unused_parameters:
            used = used.copy()
            _allreduce_np(pg, used, "MAX", "DistributedDataParallel all_reduce of the used-parameter mask")
        n = self._divisor if self._join_config.enable else pg.size()
        for b in self._buckets:
            if n != 1 and b.fut is None:
                b.flat /= n
            for i, off in zip(b.params, b.offsets):
                p = self._ddp_params[i]
                vals = b.flat[off:off + p.numel()].reshape(tuple(p.shape))
                if vals.dtype != p.dtype.np:
                    vals = vals.astype(p.dtype.np)
                out = b.outs.get(i)
                if out is None:
                    if not used[i]:
                        continue            # unused on every rank: .grad stays as it was (None)
                    out = coretorch.empty(tuple(p.shape), dtype=p.dtype, device=p.device)
                    p.grad = out
                elif p.grad is not None:
                    # the engine stored the hook's placeholder as .grad already, as a copy (PyTorch's rule for
                    # a gradient user code still holds): the averages go there; the last parameter's hook is
                    # still running (its .grad None), so they go into its placeholder, stored when it returns
                    out = p.grad
                _write(out, vals)
            b.outs = {}
            b.req = b.fut = None
        self._expect = False
        self._ddp_stats["reductions"] += 1


class GradBucket:
    """What a comm hook gets (``torch.distributed.GradBucket``): one bucket of flattened gradients."""

    def __init__(self, ddp: DistributedDataParallel, bucket: _Bucket) -> None:
        self._ddp = ddp
        self._b = bucket
        self._buf = coretorch.from_numpy(bucket.flat)   # shares the bucket's memory: in-place ops reach it

    def index(self) -> int:
        """The bucket's index (0: the first to be ready, holding the last parameters)."""
        return self._b.index

    def buffer(self) -> Tensor:
        """The flattened gradients of the bucket's parameters (this rank's, not yet communicated)."""
        return self._buf

    def is_last(self) -> bool:
        """Whether this is the last bucket of the iteration."""
        return self._b.index == len(self._ddp._buckets) - 1

    def set_buffer(self, tensor: Tensor) -> None:
        """Replace the bucket's contents with ``tensor`` (same number of elements)."""
        np.copyto(self._b.flat, tensor.numpy(force=True).reshape(-1))

    def parameters(self) -> list:
        """The bucket's parameters, in bucket order."""
        return [self._ddp._ddp_params[i] for i in self._b.params]

    def gradients(self) -> list:
        """Views of ``buffer()`` shaped as each parameter."""
        return [self._buf[off:off + p.numel()].view(tuple(p.shape))
                for off, p in zip(self._b.offsets, self.parameters())]


class _DDPJoinHook(JoinHook):
    """What a DDP rank that has run out of inputs does while others iterate, and when all are done."""

    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool) -> None:
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        """Shadow one iteration of the ranks still iterating: their state vector, buffer broadcast and every
        gradient all-reduce (with zeros: this rank contributes nothing to the sum)."""
        from .api import _allreduce_np
        ddp = self.ddp
        pg = ddp.process_group
        active, sync_buffers, sync = ddp._join_info(None)
        if sync_buffers and ddp.broadcast_buffers and ddp._ddp_buffers:
            ddp._broadcast(ddp._ddp_buffers, src=int(active.max()), bump=False)
        if not sync:
            return
        for b in ddp._buckets:
            if ddp._comm_hook is not None:   # as torch: the hook runs on a bucket of zeros, matching its collectives
                state, hook = ddp._comm_hook
                zeros = _Bucket(b.index, b.params, b.offsets, b.flat.size, b.flat.dtype)
                hook(state, GradBucket(ddp, zeros)).wait()
                continue
            _allreduce_np(pg, np.zeros_like(b.flat), "SUM", f"DistributedDataParallel gradient all_reduce (bucket "
                          f"{b.index}, shadowed by a joined rank)")
        if ddp.find_unused_parameters:
            _allreduce_np(pg, np.zeros(len(ddp._ddp_params), np.uint8), "MAX",
                          "DistributedDataParallel all_reduce of the used-parameter mask")

    def post_hook(self, is_last_joiner: bool) -> None:
        """Every replica takes the parameters (and buffers) of the highest rank among the last to finish."""
        from .api import _allreduce_np
        ddp = self.ddp
        pg = ddp.process_group
        src = np.array([pg.rank() if is_last_joiner else -1], np.int64)
        _allreduce_np(pg, src, "MAX", "DistributedDataParallel join (final model synchronisation)")
        ddp._broadcast(ddp._module_states(ddp.broadcast_buffers), src=int(src[0]))


def _buffer_sync_args(broadcast_buffers: bool | None, forward_sync_buffers: bool | None) -> bool:
    """Whether buffers are broadcast at construction, and torch 2.13's FutureWarnings for ``broadcast_buffers``."""
    if broadcast_buffers is not None:
        if forward_sync_buffers is not None:
            warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were specified. `broadcast_buffers` "
                          "is deprecated and its value is ignored when `forward_sync_buffers` is provided.",
                          FutureWarning, stacklevel=3)
        else:
            warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: unlike "
                          "`broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at init.",
                          FutureWarning, stacklevel=3)
    if forward_sync_buffers is not None:
        return True
    return True if broadcast_buffers is None else bool(broadcast_buffers)


def _hook(ref, i: int):
    def hook(grad):
        ddp = ref()
        return None if ddp is None else ddp._grad_ready(i, grad)
    return hook
