"""Module capture: ``coretorch.compile(model)`` / ``model.compile()`` for an ordinary eager training loop.

The first call with a guard set runs the forward eagerly while recording its launches, then (grad mode on, outputs
that require grad) records the backward of those outputs once through ``autograd.grad`` with placeholder output
gradients (``.grad`` untouched, the graph retained for the user's own backward of that first call).  Later calls
replay the forward launches and return outputs with one autograd node, ``CompiledFunctionBackward``, whose backward
replays the recorded backward launches on the forward's arrays; the engine accumulates its gradients into ``.grad``
as eager does, and the optimizer stays eager.  Buffers the forward updates (running statistics) are written back.
"""
from __future__ import annotations

import contextlib
import functools
import re
from threading import get_ident
from typing import Any, Callable

from ..autograd import run_backward as _run_backward
from ..autograd.engine import _grad_edge
from ..autograd.grad_mode import state as _grad_state
from ..autograd.graph import AccumulateGrad, Node, _version_error
from ..nn.modules.module import Module
from ..ops import _memfmt
from ..ops._util import edge
from ..tensor import Tensor, _make
from . import argtree as _argtree, backends as _backends, guards as _guards, logs as _logs, outtree as _outtree
from . import modstate as _modstate
from . import attrs as _attrs, dynfloat as _dynfloat, dynways as _dynways, gradhooks as _gradhooks, stance as _stance
from . import symbolic as _sym, symwatch as _symwatch
from .config import config as _compile_config
from .capture import CaptureBusy, Recorder, _find_hab_users, state
from .frames import returned
from .owners import _memory_of
from .config import live_modules, recompile_limit_of
from .replay import _VAR, RETRIES, Mismatch, backward_numbers, build_parts, check_process_state, process_state, \
    retried
from .symbolic import Sym


class CompiledFunctionBackward(Node):
    """The backward of a replayed forward: the recorded backward launches (PyTorch's name for the node of a
    compiled region)."""

    entry: _ModEntry
    ctx: tuple | None  # the recorded arrays the backward reads; None once released
    watched: list  # the inputs, parameters and buffers whose arrays the backward reads (see _ModEntry.watch)
    versions: tuple  # their version counters after the forward

    def watch(self, lv: list, res: list) -> None:
        """Note the version counters of what the backward reads: inputs, parameters, buffers and outputs
        (``torch.sigmoid``'s backward reads its result)."""
        ts = self.watched = self.entry.watch(lv)
        idx = self.entry.watch_outputs
        if idx:
            ts += [res[i] for i in idx]
        self.versions = tuple([t._vc[0] for t in ts])

    def backward(self, *grads):
        entry, ctx = self.entry, self.ctx
        if ctx is None:
            raise RuntimeError("Trying to backward through the graph a second time: the compiled forward's saved "
                               "arrays are freed after its backward")
        for t, v in zip(self.watched, self.versions):  # as eager's saved tensors: modified in place since, raise
            if t._vc[0] != v:
                raise _version_error(t, self, v)
        g = [entry.zeros[i]() if x is None else x._data for i, x in enumerate(grads)]
        for i, (other, relaid) in enumerate(entry.layouts):  # (the recorded layout: see _record_backward)
            if other(g[i]):
                g[i] = relaid(g[i])
        try:
            out = entry.backward(ctx, g)
        except Mismatch:
            raise RuntimeError("coretorch.compile: a value the captured backward read on the host differs in this "
                               "call; the eager backward would take another path. Call coretorch.compiler.reset() "
                               "or run the module uncompiled") from None
        node = None
        if _grad_state.enabled:  # create_graph=True: the gradients get a node that refuses a double backward
            node = CompiledFunctionBackwardBackward()
            node.next_functions = self.next_functions
        if entry.grad_views:  # eager's were views (``x.sum()``'s expanded gradient): the engine stores a copy
            out = [tb.contiguous(a) if j in entry.grad_views else a for j, (a, (_, tb)) in
                   enumerate(zip(out, entry.grad_meta))]
        res = [None if a is None else _make(a, dt, tb, node, out_nr=i) if node is not None else _make(a, dt, tb)
               for i, (a, (dt, tb)) in enumerate(zip(out, entry.grad_meta))]
        for i, j in entry.grad_repeats:  # one tensor, as eager's node returned: the engine stores a copy of the other
            res[j] = res[i]
        for j, i in entry.grad_passed:  # an output's gradient itself (``x + b``), the caller's tensor: never stored
            if grads[i] is not None:
                res[j] = grads[i]
        return tuple(res)

    def release(self) -> None:  # the engine frees the forward's arrays unless retain_graph
        self.ctx = None


class CompiledFunctionBackwardBackward(Node):
    """The node of gradients computed through a compiled module with ``create_graph=True``: as PyTorch's
    (aot_autograd), a backward through it raises."""

    def backward(self, *grads):
        raise RuntimeError("torch.compile with aot_autograd does not currently support double backward")


class _ModEntry:
    __slots__ = ("forward", "backward", "breaks", "launches", "out_meta", "grad_meta", "counts", "zeros", "targets",
                 "single", "planned", "watch", "watch_outputs", "node_meta", "repeats", "views", "aliases",
                 "hidden", "grad_repeats", "grad_views", "grad_passed", "retry", "layouts", "out_nrs", "attrs",
                 "fp", "escape", "mkey", "branches")
    forward: Any
    backward: Any
    breaks: Any
    launches: Any
    out_meta: Any
    grad_meta: Any  # the (dtype, table) of each gradient the backward returns
    counts: list | None  # how many gradients it returns per target (its node's edges to it); None: one each
    zeros: Any
    targets: Any
    single: Any  # the result's structure (see .outtree)
    planned: tuple  # (temporaries, buffers) planned in the forward and backward together (see .plan)
    watch: Any  # lv -> the tensors (inputs, parameters, buffers) whose memory the backward reads
    watch_outputs: list  # the outputs whose memory the backward reads
    node_meta: Any  # the outputs' (shape, dtype, table) for the engine when there are several (else None)
    repeats: list  # (i, j): output j is output i (the forward returned one tensor twice)
    views: list  # (i, base, shared, det): output i is a view of an input, a parameter or a buffer (see _views_of)
    aliases: list  # (i, j, piece, det): output i is a view of output j, or a piece of one split (_output_aliases)
    hidden: list  # the (dtype, table) of the pieces' bases
    grad_repeats: list  # (i, j): the backward's gradient j is its gradient i (one tensor, as eager's node returns)
    grad_views: frozenset  # the positions of the gradients that were views in eager (copied, as the engine does)
    grad_passed: list  # (j, i): the backward's gradient j is the output gradient i itself (returned as that tensor)
    retry: bool  # a graph break only another thread may have caused (see replay.check_process_state)
    layouts: list  # per output: whether a gradient is laid out unlike the recorded one, a copy into that layout
    out_nrs: list  # per output: its place among the node's outputs (those that require grad), or None
    attrs: list  # (dict, name, version) of the module attributes the forward stores, outputs after the result's
    fp: tuple | None  # the capture's fingerprint, where it has float arguments (dynfloat.py)
    escape: str  # why its Syms escaped (dynfloat.py)
    mkey: tuple | None  # its cache key with the float arguments masked (dynfloat.py)
    branches: bool  # its prologue checks a branch on a float argument (dynfloat.py)


def _views_of(outs: list, lv: list, params: list, buffers: list, plain: list) -> list:
    """The outputs that are views of an input (``x.flatten(1)``), a parameter or a buffer: (output index, base, whether
    it shares the base's version counter, whether it is detached), the base an index into the inputs, a tensor, or a
    (dict, name) buffer."""
    out = []
    for i, o in enumerate(outs):
        b = o._vbase
        if b is None:
            continue
        ref: Any = next((j for j, a in enumerate(lv) if a is b), None)
        if ref is None:
            ref = next((t for t in (*params, *plain) if t is b), None)
        if ref is None:
            ref = next(((d, k) for d, k in buffers if d.get(k) is b), None)
        if ref is not None:
            out.append((i, ref, o._vc is b._vc, o._det))
    return out


def _output_aliases(outs: list, views: list) -> tuple[list, list] | None:
    """([(i, j, piece)], hidden): output i is a view of output j (``(h, h[:, :3])``), or (j < 0) a piece of one
    split of the intermediate ``hidden[-1 - j]`` (``h.chunk(2)``: the replay gives the pieces a base over its array,
    sharing its version counter); ``piece``: of a split (an in-place use raises as eager's).  The only view of an
    intermediate is no alias.  None: outputs are other views of one intermediate, which a replay cannot rebuild (an
    in-place op on one would have to reach the others' gradients through their base)."""
    out: list = []
    hidden: list = []
    persistent = {v[0] for v in views}
    distinct = list({id(o): o for o in outs}.values())  # (one tensor returned twice: one view)
    for i, o in enumerate(outs):
        b = o._vbase
        if b is None or i in persistent:
            continue
        j = next((k for k, p in enumerate(outs) if p is b), None)
        if j is None:
            if o._mo is None:
                if sum(p._vbase is b for p in distinct) > 1:
                    return None
                # the only output over an intermediate (a 3-D ``nn.Linear``'s result, ``h.view(...)``): a plain
                # output, as PyTorch's compiled one (``_base`` None; an in-place op on it recorded on the node's
                # output: as a view of a base without autograd history, eager's ``y.mul_(2)`` raised)
                continue
            k = next((k for k, h in enumerate(hidden) if h is b), None)
            if k is None:
                hidden.append(b)
                k = len(hidden) - 1
            j = -1 - k
        out.append((i, j, o._mo is not None, o._det))
    return out, hidden


def _unsafe() -> RuntimeError:
    return RuntimeError("coretorch.compile: a value the captured forward read on the host differs in this call "
                        "after state was written (see CompiledFunction)")


def _node(entry: _ModEntry, lv: list, ctx: Any) -> "CompiledFunctionBackward":
    """The autograd node of a compiled forward's outputs (a replay's, or the capture call's): the recorded backward
    with ``ctx`` (the forward arrays it reads), its edges to the inputs' and parameters' nodes."""
    node = CompiledFunctionBackward()
    node.entry, node.ctx = entry, ctx
    if entry.counts is None:
        node.next_functions = tuple([edge(t) for t in entry.targets(lv)])
    else:  # (a target that receives several gradients: an edge for each)
        node.next_functions = tuple([e for t, k in zip(entry.targets(lv), entry.counts) for e in (edge(t),) * k])
    if entry.node_meta is not None:
        node._out_meta = entry.node_meta
    return node


def _outputs(entry: _ModEntry, lv: list, res: list, node: Any, arrays: Any) -> Any:
    """The forward's result from its output tensors ``res``: an output returned twice is one tensor, views of
    persistent tensors share their counters (see _view_outputs), views of another output are its views (``arrays``:
    the forward's, the pieces' bases after the outputs), the node watches the versions its backward reads."""
    for i, j in entry.repeats:
        res[j] = res[i]
    if entry.views:
        _view_outputs(entry, lv, res, node is None)
    if entry.aliases:  # as eager's: views of another output, pieces of one split of an intermediate
        n = len(res)
        bases = [_make(a, dt, tb) for a, (dt, tb) in zip(arrays[n:], entry.hidden)]
        for i, j, mo, det in entry.aliases:
            t, b = res[i], res[j] if j >= 0 else bases[-1 - j]
            t._vc, t._vbase, t._gfb = b._vc, b, b._gf
            if det:  # (``h.detach()``: no view for autograd, see Tensor._det)
                t._det = True
            if mo:
                t._mo = t._vc[0]
    if node is not None:
        node.watch(lv, res)
    if entry.attrs:  # the module attributes the forward stored (see attrs.py): outputs of the node, as eager's
        spec, n = entry.single
        j = n
        for d, k, version in entry.attrs:
            items = res[j:j + len(version)] if type(version) is tuple else res[j:j + 1]
            for t, v in zip(items, version if type(version) is tuple else (version,)):
                t._vc[0] = v
            d[k] = tuple(items) if type(version) is tuple else items[0]
            j += len(items)
        return _outtree.rebuild(spec, res[:n], lv)
    return _outtree.rebuild(entry.single, res, lv)


def _view_outputs(entry: _ModEntry, lv: list, res: list, plain: bool) -> None:
    """A replay's outputs that are views of persistent tensors share their version counters as eager's (an
    in-place change of the input after the output was saved for a backward raises); ``plain`` (no backward node):
    their base too."""
    for i, ref, shared, det in entry.views:
        b = lv[ref] if type(ref) is int else ref[0].get(ref[1]) if type(ref) is tuple else ref
        t = res[i]
        if shared:
            t._vc = b._vc
        if plain:
            t._vbase, t._gfb = b, b._gf
            if det:
                t._det = True


class ModuleCapture:
    """The compiled ``forward`` of one module (stored as the module's instance ``forward`` or an
    OptimizedModule's)."""

    def __init__(self, module: Module, forward: Callable, fullgraph: bool = False,
                 recompile_limit: int | None = None, host_fusion: bool | None = None, fused: bool = True):
        self.module, self.fn, self.fullgraph = module, forward, fullgraph
        if forward is not module:  # model.compile(): model.forward keeps its signature, name and doc (PyTorch's)
            functools.update_wrapper(self, forward, updated=())
        self.recompile_limit = recompile_limit  # None: config.recompile_limit
        self.host_fusion = host_fusion  # compile(mode="max-autotune"): see hostfuse.py (None: the config's)
        self.fused = fused  # False: the backend replays the recorded kernels only (see backends.py)
        self.delayed = [False]  # the first capture put off under an *_then_compile stance (see stance.py)
        self.warned = False  # the recompile_limit warning given
        self.cache: dict = {}
        self.st = None
        self.sig: tuple = ()
        self.anames: tuple | None = None  # attribute names the forward's code reads (see guards.attribute_names)
        self.bases = False  # whether the forwards read a tensor's ``_base`` or storage (see BASE_NAMES)
        self.replays = 0
        self.recaptures = 0  # captures again of a cache entry whose replay found its specialisation changed
        self.retries = 0  # graph breaks not kept, as another thread may have caused them (see replay.RETRIES)
        self.own = False  # fn: an instance forward the capture replaced (see _fresh_capture)
        self.dyn = False  # Sym captures serve any value of the forward's float arguments (dynfloat.py)
        self.dyn_failed = False  # one escaped its Syms: the floats stay keyed by value
        self.alts: dict = {}  # masked key -> its Sym captures, one for each way the branches go (dynways.py)
        live_modules.add(self)

    def __reduce__(self):  # pickle / deepcopy: a fresh capture of the copied module (the generated code stays here)
        return _fresh_capture, (self.module, self.fn is self.module, self.fullgraph, self.recompile_limit,
                                self.host_fusion, self.fused, self.fn if self.own else None)

    def rebound(self, module: Module) -> ModuleCapture:
        """The same compilation of another module: a shallow copy's (``copy.copy``) instance ``forward``."""
        return _fresh_capture(module, self.fn is self.module, self.fullgraph, self.recompile_limit,
                              self.host_fusion, self.fused, self.fn if self.own else None)

    def _state(self):
        st = self.st
        if st is None or _modstate.structure(st[0]) != self.sig:  # first call, or a submodule added or replaced
            st = self.st = _modstate.state_of([self.module])
            self.sig = _modstate.structure(st[0])
            self.anames = None
        return st

    def __call__(self, *args, **kwargs):
        rec = state["recorder"]  # (inside a capture of this thread: see CompiledFunction)
        if rec is not None and rec.thread == get_ident() or _stance.current[0].stance == "force_eager":
            return self.fn(*args, **kwargs)
        st = self._state()
        lv = _guards.leaves(args, kwargs)
        # (.grad is not touched by a forward; the keyword names: leaves holds the values only)
        # (the argument containers' structure: dict keys, lengths; leaves holds their entries only)
        if self.anames is None:
            fns = {getattr(self.fn, "__func__", self.fn), *[getattr(type(m), "forward", None) for m in st[0]]}
            self.anames = tuple(sorted({n for f in fns if f is not None for n in _guards.attribute_names(f)}))
            self.bases = not BASE_NAMES.isdisjoint(self.anames)
        # (which tensor arguments are views, where the forwards read ``x._vbase`` or a storage: see CompiledFunction;
        # key(..., False): self.sig, in the key, holds the parameters' ids)
        key = (self.sig, _modstate.key(lv, st[0], (), st[2], (), False), tuple(kwargs), _argtree.shape(args, kwargs),
               tuple([a._vbase is None for a in lv if isinstance(a, Tensor)]) if self.bases else None)
        held = _argtree.held(args, kwargs) if kwargs or any(a.__class__ not in _argtree._PLAIN for a in args) else ()
        if held:  # (argument objects' state: a config's attributes the forward reads, a set's entries)
            key += (tuple([_guards.contents(o, self.anames) for o in held if _guards._opened(o)]),)
        entry = self.cache.get(key)
        pos: tuple | None = None  # (the float arguments: found only on a miss)
        if entry is None and self.dyn:  # Sym captures serving any value of the float arguments (dynways.py)
            pos = self._floats(args, kwargs, lv)
            alts = self.alts.get(_dynfloat.masked(key, lv, pos, 1)) if pos else None
            if alts is not None:
                return self._dyn_call(alts, key, pos, args, kwargs, lv, st)
        if entry is None:
            if not _stance.on_capture(self.fn, len(self.cache), self.delayed):
                return self.fn(*args, **kwargs)
            if self._at_limit(key):
                return self.fn(*args, **kwargs)
            if pos is None:
                pos = self._floats(args, kwargs, lv)
            if pos and not self.dyn_failed and not _compile_config.specialize_float and not any(
                    _dynfloat.checks_type(f) for f in self._forwards(st)):
                mk = _dynfloat.masked(key, lv, pos, 1)
                if any(e.mkey == mk and e.fp is not None and e.forward is not None for e in tuple(self.cache.values())):
                    return self._capture_dyn(key, mk, pos, args, kwargs, lv, st)  # only these floats changed: Syms
            return self._capture_or_eager(key, args, kwargs, lv, st, pos)[0]
        if entry.forward is None:
            return self.fn(*args, **kwargs)
        try:
            out = self._run(entry, lv)
        except Mismatch as e:
            unsafe, recapture = e.unsafe, e.recapture
        else:
            return out
        # (out of the except block: eager's own exception is not chained to the Mismatch)
        if unsafe:
            raise _unsafe()
        if recapture and self.recaptures < recompile_limit_of(self.recompile_limit) and \
                _stance.on_capture(self.fn, len(self.cache), self.delayed):
            # (a check of how the capture was specialised: a parameter's layout, see plan.py)
            result, captured = self._capture_or_eager(key, args, kwargs, lv, st, self._floats(args, kwargs, lv))
            self.recaptures += captured
            return result
        if not recapture:
            _logs.checked_read_differs(self.fn)
        return self.fn(*args, **kwargs)

    def _run(self, entry: _ModEntry, lv: list) -> Any:
        """A replay of ``entry``'s forward, its outputs on the node of its backward (raises Mismatch first)."""
        outs, ctx = entry.forward(lv)
        self.replays += 1
        node = _node(entry, lv, ctx) if entry.backward is not None else None
        res = [_make(a, dt, tb, node, out_nr=k) if node is not None and k is not None else _make(a, dt, tb)
               for k, a, (dt, tb) in zip(entry.out_nrs, outs, entry.out_meta)]
        return _outputs(entry, lv, res, node, outs)

    def _at_limit(self, key) -> bool:
        """Whether ``recompile_limit`` captures were made (warned once, as PyTorch's)."""
        limit = recompile_limit_of(self.recompile_limit)
        if len(self.cache) < limit:
            return False
        _logs.limit_reached(type(self.module).__name__, limit, self.fullgraph, not self.warned, key, self.cache,
                            _logs.MODULE_PARTS)
        self.warned = True
        return True

    def _forwards(self, st: tuple) -> list:
        """The forward functions the capture runs (this one's and its submodules' classes')."""
        return [getattr(self.fn, "__func__", self.fn), *[getattr(type(m), "forward", None) for m in st[0]]]

    def _floats(self, args: tuple, kwargs: dict, lv: list) -> tuple:
        """The top-level float arguments and their places among the leaves (see dynfloat.positions)."""
        if not any(type(a) is float for a in lv):
            return ()
        return _dynfloat.positions(args, kwargs, lambda a: len(_guards.leaves((a,), {})))

    def _dyn_call(self, alts: list, key, pos: tuple, args: tuple, kwargs: dict, lv: list, st: tuple) -> Any:
        """A call served by the Sym capture of its way (see CompiledFunction._dyn_call)."""
        def on_miss() -> Any:
            if not self._at_limit(key) and _stance.on_capture(self.fn, len(self.cache), self.delayed):
                return self._capture_dyn(key, _dynfloat.masked(key, lv, pos, 1), pos, args, kwargs, lv, st)
            return self.fn(*args, **kwargs)
        return _dynways.call(alts, lambda e: self._run(e, lv), on_miss, lambda: self.fn(*args, **kwargs), _unsafe)

    def _capture_dyn(self, key, mk, pos: tuple, args: tuple, kwargs: dict, lv: list, st: tuple) -> Any:
        """Capture with the float arguments at ``pos`` as Syms, kept by dynways.settle."""
        result, kept = _dynways.capture_way(
            self.fn, self.cache, self.alts, key, mk, pos, lambda e: e.forward is not None,
            lambda: self._capture_or_eager(key, args, kwargs, lv, st, pos, dyn=True)[0])
        if kept is None:
            self.dyn_failed = True
        elif kept:
            self.dyn = True
        return result

    def _capture_or_eager(self, key, args: tuple, kwargs: dict, lv: list, st: tuple, pos: tuple = (),
                          dyn: bool = False) -> tuple[Any, bool]:
        """(result, whether captured): this call captured into the cache under ``key``, or run eagerly while another
        thread captures (see CompiledFunction._capture_or_eager); ``pos``: its float arguments, as Syms with
        ``dyn`` (dynfloat.py)."""
        fused, host_fusion = _stance.choice(self.fused, self.host_fusion)
        _logs.recompile(self.fn, key, self.cache, _logs.MODULE_PARTS, recompile_limit_of(self.recompile_limit))
        try:
            with _backends.capture_settings(fused):
                result, entry = self._capture(args, kwargs, lv, st, host_fusion, pos if dyn else (), bool(pos))
        except CaptureBusy:
            entry = None
        if entry is None:  # (out of the except block: an exception of the eager call is not chained to it)
            return self.fn(*args, **kwargs), False
        if entry.forward is None and entry.retry and self.retries < RETRIES:  # (see CompiledFunction)
            self.retries += 1
            return result, False
        if pos:
            entry.mkey = _dynfloat.masked(key, lv, pos, 1)
        self.cache[key] = entry
        if entry.forward is None:
            _logs.graph_break(self.fn, entry.breaks)
        return result, True

    def _capture(self, args, kwargs, lv, st, host_fusion, dyn: tuple = (), fp: bool = False):
        rec = Recorder(self.fullgraph)
        rec.attr_outputs = []  # (the tensor attributes the forward stores: outputs, see attrs.py)
        try:
            with contextlib.ExitStack() as watch:
                if dyn:  # the float arguments as Syms (dynfloat.py), watched through forward and backward
                    args, kwargs = _dynfloat.with_syms(args, kwargs, dyn,
                                                       lambda v, name: Sym(v, name, False, rec.sym_token))
                    rec.dyn = True
                    watch.enter_context(_symwatch.watching(rec))
                result, entry = self._recorded(rec, args, kwargs, lv, st, host_fusion)
            if not fp:  # (kept where the call has float arguments: see dynfloat.py)
                entry.fp = None
            entry.escape = rec.escape
            return result, entry
        finally:
            rec.release()  # (held until the replay is built: see Recorder.remove)

    def _recorded(self, rec, args, kwargs, lv, st, host_fusion):
        modules, params, buffers, plain = st[:4]
        _find_hab_users()
        rec.install()
        entry = _ModEntry()
        entry.forward = entry.backward = None
        entry.attrs = []
        entry.planned = (0, 0)
        entry.fp, entry.escape, entry.mkey, entry.branches = None, "", None, False
        try:
            rec.track(lv, params, buffers, plain, _attrs.attributes(modules))
            before = _modstate.module_numbers(modules)
            process = process_state([*modules, *args, *kwargs.values()])  # (a module's ``self.rng``)
            nodes = [(a, a._gf) for a in lv if isinstance(a, Tensor) and a._gf is not None]
            hooks = _gradhooks.counts(lv, params)
            entries = _argtree.snapshot(args, kwargs) if args or kwargs else None
            objs = [(o, _guards.contents(o, self.anames)) for o in _argtree.held(args, kwargs) if _guards._opened(o)] \
                if entries else ()
            if rec.dyn:
                _sym._active[0] = rec
            result = self.fn(*args, **kwargs)
            # (the breaks found now: their place is the forward, not the caller's line the user frame is by now)
            where = returned(type(self.module).forward if self.fn is self.module else self.fn)
            at = f" (at {where})"
            if entries and (_argtree.snapshot(args, kwargs) != entries or
                            any(_guards.contents(o, self.anames) != c for o, c in objs)):
                rec.breaks.append("the forward assigns an entry or attribute of an argument (`batch[\"pred\"] = out`, "
                                  "`hidden.append(h)`, `cfg.step = 3`), which a replay would not repeat" + at)
            check_process_state(rec, process, where)
            _modstate.check_module_writes(rec, modules, before, where)
            if _gradhooks.counts(lv, params) != hooks:
                rec.breaks.append("the forward registers a gradient hook on an input or a parameter "
                                  "(`x.register_hook(...)`, `x.retain_grad()`), which a replay would not register" + at)
            if any(a._gf is not g for a, g in nodes):  # (a replay would leave the input's grad_fn as it was)
                rec.breaks.append("the forward modifies an input that requires grad in place" + at)
            outs, single = _outtree.flatten(result, frozenset(map(id, (*args, *kwargs.values(), *[
                v for m in modules for v in vars(m).values()]))),  # (objects eager returns themselves)
                {id(a): i for i, a in enumerate(lv) if isinstance(a, Tensor)})  # (an input: itself)
            if outs is None:
                rec.breaks.append("the forward returns something other than tensors in tuples, lists and dicts" + at)
            elif any(o is t for o in outs for t in (*lv, *params, *buffers, *plain)):
                # eager returns that tensor (its requires_grad, its version counter, its .grad); a replay would
                # make another over its memory
                rec.breaks.append("an output is a parameter or a buffer itself" + at)
            rec.write_back()
            # (d, name, version: a tuple of them for a tuple attribute)
            entry.attrs = [(*rec.attr_exprs[e], tuple([x._vc[0] for x in t]) if type(t) is tuple else t._vc[0])
                           for e, t in rec.attr_outputs]
            if outs is not None and rec.attr_outputs:  # (outputs of the node too, after the result's)
                single = (single, len(outs))
                outs = [*outs, *[x for _, t in rec.attr_outputs for x in (t if type(t) is tuple else (t,))]]
            rec.attr_outputs = []
            split = len(rec.lines)
            rec.no_undo = True  # (the backward's checks: the forward's draws were returned)
            out_vars = [rec.var.get(id(o._data)) for o in outs or ()]
            if None in out_vars:
                rec.breaks.append("an output holds an array made outside the recorded kernels")
            # (outputs that do not require grad, as MaxPool2d(return_indices=True)'s indices: no edge of the node)
            need = [o for o in outs or () if o.requires_grad]
            targets = [i for i, a in enumerate(lv) if isinstance(a, Tensor) and a.requires_grad] + \
                [p for p in params if p.requires_grad]
            targets += _outside_leaves(outs or (), lv, targets)
            if need and _gradhooks.in_region(need, lv, targets):
                # recording the backward (placeholder gradients) would call the hook, and a replay never calls it
                rec.breaks.append("a gradient hook inside the forward's autograd graph (an intermediate tensor's "
                                  "register_hook or retain_grad, a node hook, a submodule's backward hook): "
                                  "the capture would call it with placeholder gradients, a replay not at all")
            bw_src = None
            if not rec.breaks and need:  # (under no_grad too: an enable_grad block of the forward made them)
                try:
                    bw_src = self._record_backward(rec, lv, need, targets, entry)
                except Exception:  # noqa: BLE001 - eager raises it at the user's backward (a saved input
                    # modified in place, a gradient hook's ValueError), not at this forward
                    rec.breaks.append("the backward of the forward raises")
                if not rec.breaks:  # a backward hook that wrote state ran with the placeholder gradients
                    _modstate.check_module_writes(rec, modules, before)
            if not rec.breaks:
                rec.finish(None, lv)
                if rec.attr_outputs:  # (a backward hook's ``mod.g = grad.clone()``: stored at the forward only)
                    rec.breaks.append("a backward hook stores a module attribute, which a replay would not repeat")
        finally:
            rec.remove(release=False)
        entry.breaks, entry.launches, entry.retry = rec.breaks, rec.launches, retried(rec)
        if rec.breaks:
            return result, entry
        entry.single = single
        # an output the forward returns twice ((y, y)) is one tensor, as eager's (the backward adds both gradients)
        first = {id(o): i for i, o in reversed(list(enumerate(outs)))}
        entry.repeats = [(first[id(o)], j) for j, o in enumerate(outs) if first[id(o)] != j]
        entry.views = _views_of(outs, lv, params, buffers, plain)
        found = _output_aliases(outs, entry.views)
        hidden_vars = [rec.var.get(id(b._data)) for b in found[1]] if found is not None else []
        if found is None or None in hidden_vars:
            rec.breaks.append("outputs are views of one intermediate tensor of the forward (h[:, :4], h[:, 2:])")
            return result, entry
        entry.aliases, entry.hidden = found[0], [(b.dtype, b._be) for b in found[1]]
        entry.out_meta = [(o.dtype, o._be) for o in outs]
        # several outputs: the engine passes a gradient for each (zeros for one the loss does not use: out[0].sum());
        # the node's outputs are those that require grad (out_nrs: each output's place among them, or None)
        k = iter(range(len(outs)))
        entry.out_nrs = [next(k) if o.requires_grad else None for o in outs]
        need = [o for o in outs if o.requires_grad]
        entry.node_meta = tuple((tuple(o._data.shape), o.dtype, o._be) for o in need) if len(need) > 1 else None
        # (the forward returns the arrays of the pieces' bases after its outputs)
        entry.fp = _dynfloat.fingerprint(rec, f"{out_vars + hidden_vars} {bw_src}")
        entry.branches = any(ln.endswith("MISMATCH(False, False, True)") for ln in rec.pro)
        entry.forward, entry.backward, split = build_parts(rec, split, out_vars + hidden_vars, bw_src, host_fusion)
        entry.planned = rec.planned
        if bw_src is not None:
            idx = [t for t in targets if isinstance(t, int)]
            fixed = [t for t in targets if not isinstance(t, int)]
            entry.targets = lambda lv, idx=idx, fixed=fixed: [lv[i] for i in idx] + fixed
            entry.watch, entry.watch_outputs = _watched(rec, split, out_vars)
            result = self._attach(entry, rec, split, lv, outs, [b._data for b in found[1]])
        return result, entry

    @staticmethod
    def _attach(entry: _ModEntry, rec: Recorder, split: int, lv: list, outs: list, hidden: list) -> Any:
        """The capture call's outputs on a ``CompiledFunctionBackward`` node over the recorded arrays (as a replay's:
        its backward is the recorded one, and a double backward raises on every call alike)."""
        fw = [ln for ln in rec.lines[:split] if ln]
        defined = {v for ln in fw for v in _VAR.findall(ln)}
        used = {v for ln in rec.lines[split:] if ln for v in _VAR.findall(ln)}
        # (build_parts' order: the arrays, then the float arguments' numbers, plain floats, dynfloat.py)
        numbers = [float.__float__(rec.sym_values[n] if n[0] == "s" else lv[int(n[2:-1])])
                   for n in backward_numbers(rec, split)]
        node = _node(entry, lv, (*[rec.keep[int(v[1:])] for v in sorted(used & defined)], *numbers))
        res = [_make(o._data, o.dtype, o._be) if k is None else _make(o._data, o.dtype, o._be, node, out_nr=k)
               for k, o in zip(entry.out_nrs, outs)]
        return _outputs(entry, lv, res, node, [*res, *hidden])

    def _record_backward(self, rec: Recorder, lv: list, outs: list, targets: list, entry: _ModEntry):
        """Record the backward of ``outs`` with placeholder output gradients; the source of the gradients."""
        gs = []
        entry.zeros, entry.layouts = [], []
        for i, o in enumerate(outs):
            # a placeholder: the replay passes the real output gradients as G.  The recorded backward took the
            # paths of its layout (a gradient's ``view`` where that layout allows it, a reduction over merged dims),
            # so a gradient of another layout is copied into it at the replay (see CompiledFunctionBackward); the
            # output's own layout, as eager's gradient of an elementwise loss of it is (``out.sin().sum()`` of a
            # permuted or conv3d output: bitwise eager's), as PyTorch's AOTAutograd traces its tangents
            rec.active = False
            zeros, other, relaid = _layout(o._be, tuple(o._data.shape), tuple(o._be.strides(o._data)), o.dtype.np)
            arr = zeros()
            rec.active = True
            rec.keep.append(arr)
            rec.var[id(arr)] = f"G[{i}]"
            gs.append(_make(arr, o.dtype, o._be))
            entry.zeros.append(zeros)
            entry.layouts.append((other, relaid))
        inputs = [lv[t] if isinstance(t, int) else t for t in targets]
        # the gradients of the forward's own region: none through a target's node (an input made from another
        # input or from a parameter outside the forward: the engine's edge from that input adds that path), one
        # target per edge (an input passed twice, a parameter passed as an input), and each gradient that reaches a
        # target unsummed, in arrival order: the node has an edge per gradient, so the engine adds them where and
        # in the order eager's adds them (a parameter used twice per call, two calls before one backward).  The
        # targets' nodes never run here: their hooks (``p.register_hook``, an input's ``retain_grad``) run on the
        # replayed gradients at the user's backward, as eager's
        edges = [_grad_edge(t) for t in inputs]
        terms = _run_backward(outs, gs, True, False, inputs=inputs, allow_unused=True, sinks=True)
        srcs: list = []
        entry.grad_meta, entry.counts = [], []
        seen: dict = {}  # id(gradient tensor) -> its first position
        entry.grad_repeats, entry.grad_passed, views = [], [], set()
        for i, (gl, t) in enumerate(zip(terms, inputs)):
            if not gl or edges[i] in edges[:i]:
                gl = [None]
            entry.counts.append(len(gl))
            for g in gl:
                entry.grad_meta.append((t.dtype, t._be) if g is None else (g.dtype, g._be))
                v = "None" if g is None else rec.var.get(id(g._data))
                if v is None:
                    rec.breaks.append("a gradient holds an array made outside the recorded kernels")
                    return None
                if g is not None:
                    if id(g) in seen:
                        entry.grad_repeats.append((seen[id(g)], len(srcs)))
                    else:
                        seen[id(g)] = len(srcs)
                    if v.startswith("G["):
                        entry.grad_passed.append((len(srcs), int(v[2:-1])))
                    elif g._vbase is not None:  # (the engine's test: never store a view)
                        views.add(len(srcs))
                srcs.append(v)
        entry.grad_views = frozenset(views)
        if all(k == 1 for k in entry.counts):
            entry.counts = None
        return "(" + ", ".join(srcs) + ",)"


def _layout(table: Any, shape: tuple, strides: tuple, dt: Any) -> tuple[Callable, Callable, Callable]:
    """``() -> zeros`` of ``shape`` laid out in the stride order of ``strides`` (row-major when that is), ``a ->
    whether a is laid out otherwise``, and ``a -> a`` in that layout (a copy); the kernels as they are at the call."""
    o = _memfmt.order(shape, strides) if len(shape) > 1 else None
    if o is None:
        return (lambda: table.full(shape, 0, dt)), (lambda a: not table.is_contiguous(a)), \
            (lambda a: table.contiguous(a))
    dense, inv = tuple([shape[d] for d in o]), _memfmt.inverse(o)
    own = tuple(table.strides(table.permute(table.full(dense, 0, dt), inv)))
    return (lambda: table.permute(table.full(dense, 0, dt), inv)), (lambda a: table.strides(a) != own), \
        (lambda a: table.permute(table.contiguous(table.permute(a, o)), inv))


def _outside_leaves(outs: list, lv: list, targets: list) -> list:
    """The leaves that require grad which the outputs' graph reaches besides the inputs and parameters (a module's
    plain tensor attribute ``self.scale = torch.ones(1, requires_grad=True)``, a global one): eager accumulates
    their gradients, so the replay's node has edges to them too."""
    stop = {id(_grad_edge(lv[t] if isinstance(t, int) else t)[0]) for t in targets}
    seen: set = set()
    found, stack = [], [o.grad_fn for o in outs]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen or id(n) in stop:
            continue
        seen.add(id(n))
        if isinstance(n, AccumulateGrad):
            found.append(n.variable)
        else:
            stack += [m for m, _ in n.next_functions]
    return found


_LOAD = re.compile(r"^(a\d+) = (.+)\._data$")


def _watched(rec: Recorder, split: int, out_vars: list) -> tuple[Callable[[list], list], list]:
    """``lv -> tensors``: the persistent tensors (inputs, parameters, buffers) that the recorded backward reads
    memory of (an array the forward loaded from one, or a view of it), and the indices of the outputs it reads
    memory of.  Eager saves them with their version counter, and an in-place change before the backward
    (``x.mul_(2)``, ``opt.step()`` before a second loss's backward, ``torch.sigmoid(h).mul_(2)``) raises; the
    replayed backward would compute with the changed values."""
    fw = [ln for ln in rec.lines[:split] if ln]
    defined = {v for ln in fw for v in _VAR.findall(ln)}
    used = {v for ln in rec.lines[split:] if ln for v in _VAR.findall(ln)}
    mems = {id(m) for v in used & defined for m in (_memory_of(rec.keep[int(v[1:])]),) if m is not None}
    mems |= {id(rec.keep[int(v[1:])]) for v in used & defined}
    def read(v: str) -> bool:
        arr = rec.keep[int(v[1:])]
        mem = _memory_of(arr)
        return id(arr) in mems or mem is not None and id(mem) in mems
    outs = [i for i, v in enumerate(out_vars) if read(v)]
    srcs: list[str] = []
    for ln in fw:
        m = _LOAD.match(ln)
        if m is None:
            continue
        if read(m.group(1)) and m.group(2) not in srcs:
            srcs.append(m.group(2))
    if not srcs:
        return (lambda lv: []), outs
    ns = {f"c{i}": c for i, c in enumerate(rec.consts)}
    return eval(f"lambda A: [{', '.join(srcs)}]", ns), outs  # noqa: S307 - the replay's own load expressions


# the names whose reading makes a tensor argument's being a view part of the guard key: its ``_base``, its storage's
# size (the base's: untyped_storage of a view itself breaks the graph, see storage._window)
BASE_NAMES = frozenset(("_base", "_is_view", "untyped_storage", "storage", "_typed_storage"))


def _forward_of(module: Module) -> Callable:
    """The module's class ``forward`` bound to it (its own code where the class body compiled it)."""
    f = type(module).forward
    return getattr(f, "_orig_fn", f).__get__(module)


def _fresh_capture(module: Module, whole: bool, fullgraph: bool, recompile_limit: int | None = None,
                   host_fusion: bool | None = None, fused: bool = True, own: Callable | None = None) -> ModuleCapture:
    """A capture of ``module`` (``whole``: its calls; else its forward: ``own``, an instance ``forward`` the
    capture replaced, copied as eager copies it, or the class's)."""
    cap = ModuleCapture(module, module if whole else own or _forward_of(module), fullgraph,
                        recompile_limit, host_fusion, fused)
    if own is not None:
        cap.own = True
    return cap


def __getattr__(name: str) -> Any:
    """``OptimizedModule``, ``compile_in_place`` and ``_uncompiled_forward`` moved to :mod:`.optimized`: pickles
    of compiled modules made before name them here."""
    if name in ("OptimizedModule", "compile_in_place", "_uncompiled_forward"):
        from . import optimized
        return getattr(optimized, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
