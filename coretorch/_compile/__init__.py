"""``coretorch.compile``: whole-step capture and replay at the kernel-table level (in the spirit of CUDA graphs and
tinygrad's JIT).

Why this design: eager coretorch is already close to its kernels' speed; what remains is Python dispatch per op
(checks, promotion, autograd bookkeeping).  Recording the *kernel launches* of one call (forward, backward, the
state updates) and replaying them as one generated straight-line Python function removes all of that while
calling exactly the kernels eager calls, in the same order, on the same arrays: a replay is bitwise equal to eager
on every backend, RNG kernels advance the same generators (dropout matches), and nothing has to understand the ops.

* :mod:`.capture`: the recording (kernel wrappers, persistent state, eager segments, checked host reads, breaks);
* :mod:`.roots_state`: what a capture notes about the objects a call reaches and compares after it;
* :mod:`.results`: the call's result as a replay rebuilds it (views, aliases, objects of eager's kinds);
* :mod:`.replay`: the generated replay function;
* :mod:`.hostrng`: the random state a capture reads on the host (draws that break, a generator's seed checked);
* :mod:`.early`: the checked reads of values nothing before them writes, run at a replay's start; :mod:`.versions`:
  the version counters a replay bumps before each checked read;
* :mod:`.fusion`: elementwise chains of a recorded program fused into one kernel each (opencl);
* :mod:`.plan`: planned temporaries (buffers reused across replays and across non-overlapping lifetimes);
* :mod:`.hostfuse`: opt-in (``mode="max-autotune"``): cpu launches run as another plugin's compiled kernels on the
  same memory (PoCL through the opencl plugin);
* :mod:`.guards`: what must match for a replay (argument shapes/dtypes/devices/requires_grad, Python scalars,
  ``training`` flags, parameter identity and layout, which ``.grad`` are None, grad mode and the other settings
  (:mod:`.modes`), the numbers, tensors and container entries the step can reach in its globals, closure, helpers
  and modules, ``os.environ``; :mod:`.ownnumbers`: the numbers on the function, its optimizers and tensors);
* :mod:`.optim`, :mod:`.symbolic`: the optimizer step replayed with ``lr`` & co. as inputs;
* :mod:`.argtree`: argument lists, tuples and dicts keyed by their structure (a fresh batch dict replays);
* :mod:`.attrs`: the modules' plain tensor attributes (a weight-norm pre-hook's ``module.weight``, truncated BPTT's
  ``self.h``) and ``parametrize.cached()``'s cache, read and written where they live;
* :mod:`.assigns`: Python state a call assigns where no guard looks (a graph break); :mod:`.flags`: the modules'
  ``training`` flags a call sets (``model.train()``: set by the replay too); :mod:`.made`: optimizer and
  scheduler steps a replay cannot repeat (an optimizer made in the call, an ``lr`` set outside a scheduler);
  :mod:`.transfer`: device copies inside a step; :mod:`.keyvalues`, :mod:`.weak`: guard keys of values, weak
  references of the caches;
* :mod:`.module`: module capture (``compile(model)``, ``model.compile()``): forward and backward replayed;
* :mod:`.backends`, :mod:`.stance`, :mod:`.config`, :mod:`.exc`, :mod:`.logs`: PyTorch's switches (``backend=``,
  ``set_stance``, ``torch._dynamo.config``, its exceptions, ``torch._logging.set_logs``);
* :mod:`.explain`: ``coretorch.compiler.explain``.

``Optimizer.step()`` of SGD/Adam/AdamW is replayed from its own recording with the hyper-parameters and step
counts as inputs (:mod:`.optim`, :mod:`.symbolic`: schedulers need no recapture); other optimizers' ``step()`` and
``LRScheduler.step()`` run as eager segments of the replay.  Python side
effects of the function other than tensor kernels and those ``step()`` calls (printing, counters) happen at capture
only.  The result tensors of a replay carry no autograd graph.  :mod:`.fusion` fuses elementwise chains into
generated kernels on devices with a ``compile_fused`` hook (opencl).  :mod:`.plan` writes the temporaries of a
replay into buffers allocated once per capture and reused across non-overlapping lifetimes, on devices with a
``compile_out`` hook (numpy's ``out=`` on cpu, kernels writing into a given buffer on opencl).
"""
from __future__ import annotations

import functools
from threading import get_ident
from types import MethodType as _MethodType
import warnings
from typing import Any, Callable

from ..nn.modules.module import Module
from ..tensor import Tensor
from . import argtree as _argtree, backends as _backends, guards as _guards, logs as _logs, ownnumbers as _ownnumbers
from . import modstate as _modstate
from . import dynfloat as _dynfloat, dynways as _dynways, forked as _forked, stance as _stance  # noqa: F401  (forked: a fork hook)
from .capture import CaptureBusy, state
from .exc import FailOnRecompileLimitHit, InvalidBackend, RecompileError, TorchDynamoException, Unsupported
from .config import config, live_functions as _live, live_modules as _live_modules, recompile_limit_of
from .module import BASE_NAMES as _BASE_NAMES, CompiledFunctionBackward, ModuleCapture
from .optimized import OptimizedModule, compile_in_place
from .explain import ExplainOutput, explain
from .held import method_names as _method_names
from .optim import _replays as _optim_replays
from .replay import RETRIES as _RETRIES, Mismatch, capture as _capture

__all__ = ["compile", "CompiledFunction", "CompiledFunctionBackward", "ExplainOutput", "FailOnRecompileLimitHit",
           "InvalidBackend", "ModuleCapture", "OptimizedModule", "RecompileError", "TorchDynamoException",
           "Unsupported", "compile_in_place", "config", "explain", "is_compiling", "reset"]


def _unsafe() -> RuntimeError:
    return RuntimeError("coretorch.compile: a value the captured step read on the host (a check or a scalar) "
                        "differs in this call after persistent state was already written; the eager step would take "
                        "another path. Call coretorch.compiler.reset() or compile with disable=True")


class CompiledFunction:
    """What ``coretorch.compile(fn)`` returns: calls capture once per guard set, then replay."""

    def __init__(self, fn: Callable, fullgraph: bool = False, recompile_limit: int | None = None,
                 name: str | None = None, host_fusion: bool | None = None, fused: bool = True):
        self._orig_fn = fn
        self._fullgraph = fullgraph
        self._host_fusion = host_fusion  # mode="max-autotune": see hostfuse.py (None: config.host_fusion)
        self._fused = fused  # False: the backend replays the recorded kernels only (see backends.py)
        self._delayed = [False]  # the first capture put off under an *_then_compile stance (see stance.py)
        self._arg_identity = False  # argument containers keyed by identity too (see argtree.py)
        self._recompile_limit = recompile_limit  # None: config.recompile_limit
        self.name = name
        self._cache: dict = {}
        self._state: dict = {}
        self._eager = False
        self._warned = False
        self._gnames: list | None = None
        # the code's names are read again at the next call after a reset (helpers rebound): a flag, not _gnames = None,
        # as a reset from another thread must not leave a call running here without them
        self._stale = False
        self._anames: tuple = ()  # attribute names the function's code reads (see guards.attribute_names)
        self._lens: dict = {}  # id(list among the roots) -> its length when first seen (see guards.contents)
        self._append_names: frozenset = frozenset()  # names the code only appends to (see guards.append_names)
        self._groups = False  # whether the code reads param_groups (see guards.group_numbers)
        self._states = False  # whether the code reads an attribute ``state`` (see guards.state_numbers)
        self._bases = False  # whether the code reads ``_base`` or ``_is_view`` of a tensor (see _lookup)
        self._dyn = False  # a capture with float arguments as Syms serves any of their values (dynfloat.py)
        self._dyn_failed = False  # one escaped its Syms: the function stays specialised to its floats
        self._alts: dict = {}  # masked key -> its Sym captures, one for each way its branches on the floats go
        self._recaptures = 0  # captures made again where a replay's specialisation check failed
        self._retries = 0  # graph breaks not kept, as another thread may have caused them (see replay.RETRIES)
        self.replays = 0  # calls served by a replay (for tests and benchmarks)
        functools.update_wrapper(self, fn, updated=())
        _live.add(self)

    def _reset(self) -> None:
        self._cache.clear()
        self._state.clear()
        self._eager = False
        self._warned = False
        self._stale = True
        self._lens.clear()
        self._recaptures = self._retries = 0
        self._dyn = self._dyn_failed = False
        self._alts.clear()
        self._delayed[0] = False
        self._arg_identity = False

    def _root_key(self, args: tuple, kwargs: dict):
        """The roots' part of the cache key, as _lookup takes it (for a capture to tell whether the call wrote it)."""
        def now() -> tuple:
            objs = _guards.roots(self._orig_fn, args, kwargs, self._gnames)
            rk = _guards.root_key(objs, self._anames, self._lens, self._appended(args, kwargs))
            if not self._states:
                return rk
            # (a number the call stores in optimizer state the code reads: a replay would not store it)
            return rk, _guards.state_numbers(_modstate.state_of(objs)[4])
        return now

    def _appended(self, args: tuple, kwargs: dict) -> frozenset:
        """The lists among the roots the function only appends to (see guards.append_names)."""
        assert self._gnames is not None
        return _guards.appended(self._orig_fn, args, kwargs, self._gnames, self._append_names)

    def _lookup(self, args: tuple, kwargs: dict):
        if self._gnames is None or self._stale:
            self._stale = False
            self._gnames = _guards.global_names(self._orig_fn)
            # (and those the methods it calls on argument objects and the objects it reaches read: see held.py)
            objs = [*args, *kwargs.values(), *_guards.roots(self._orig_fn, args, kwargs, self._gnames)]
            self._anames = tuple(sorted(_method_names(objs, _guards.attribute_names(self._orig_fn),
                                                      _guards.attribute_names)))
            self._groups = "param_groups" in self._anames
            self._states = "state" in self._anames
            self._bases = not _BASE_NAMES.isdisjoint(self._anames)
            self._append_names = _guards.append_names(self._orig_fn)
        appended = self._appended(args, kwargs)
        ra, rk, shape = args, kwargs, ()
        if not self._arg_identity and _argtree.any_container(args, kwargs):
            # argument containers by their structure and entries, not their identity (a fresh batch dict per call)
            ra, shape = _argtree.opened(args, kwargs, appended)
            rk = {}
        rid = (_guards.root_key(_guards.roots(self._orig_fn, ra, rk, self._gnames), self._anames, self._lens,
                                appended), shape)
        st = self._state.get(rid)
        if st is not None and _modstate.structure(st[0], st[5]) != st[4]:  # a submodule or parameter replaced
            st = None
        if st is None:
            if len(self._state) > 64:  # roots that change every call (a fresh argument object): keep it bounded
                self._state.clear()
            found = _modstate.state_of(_guards.roots(self._orig_fn, ra, rk))
            st = self._state[rid] = (*found[:4], _modstate.structure(found[0], found[4]), found[4],
                                     frozenset(map(id, (*found[1], *found[3]))),
                                     _ownnumbers.tensor_attributes((*found[1], *found[3]), self._anames))
        lv = _guards.leaves(args, kwargs, appended)
        # which arguments are the step's own parameters or tensors (f(w), w in the closure too): a capture reads
        # them as one (and the step's write-backs of their data come at its end), so that is another capture
        # (the keyword names: leaves holds the values only, so f(x, a=t) and f(x, b=t) had one key; key(..., False):
        # st[4], in the key, holds the parameters' ids)
        k: tuple = (rid, st[4], _modstate.key(lv, st[0], st[1], st[2], st[3], False),
                    tuple([i for i, a in enumerate(lv) if id(a) in st[6]]), tuple(kwargs),
                    _ownnumbers.key(self._orig_fn, st[5], self._anames, st[7]))
        if self._groups or self._states or self._bases:  # (each at its place: logs.FUNCTION_PARTS names them)
            # the function reads param_groups itself (an lr returned or branched on), optimizer state (a step count),
            # a tensor's ``_base`` (``x._base is None``: keyed only then, as the key costs a pass over the arguments;
            # a detached tensor's is None, as PyTorch's)
            k += (_guards.group_numbers(st[5]) if self._groups else None,
                  _guards.state_numbers(st[5]) if self._states else None,
                  tuple([a._base is None for a in lv if isinstance(a, Tensor)]) if self._bases else None)
        return lv, st, k

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """A compiled function in a class body (``@torch.compile def forward(self, x)``, as PyTorch's function
        wrapper): bound to the instance, which becomes its first argument (an argument object: its attributes the
        code reads are guarded).  A module instance gets its own, kept in its ``__dict__`` (so it lives and dies with
        the module): for the class's ``forward`` a module capture (forward and backward replayed), for another
        method a compiled function; each with its own captures (each instance's tensors are its replay's) and its
        own ``recompile_limit``, so twelve blocks with a compiled ``forward`` all replay, as PyTorch's one graph
        serves them all.  Other objects share this function's captures and limit."""
        if obj is None:
            return self
        if not isinstance(obj, Module):
            return _MethodType(self, obj)
        d = obj.__dict__
        name = f"_ct_compiled_{id(self):x}"
        per = d.get(name)
        if per is None:
            if getattr(type(obj), "forward", None) is self:
                # the class's forward: the instance's module capture (forward and backward replayed: a function
                # capture's results carry no autograd graph, so every training call would be a graph break)
                per = d[name] = ModuleCapture(obj, _MethodType(self._orig_fn, obj), self._fullgraph,
                                              self._recompile_limit, self._host_fusion, self._fused)
                return per
            per = d[name] = _PerInstance(self)
        return per if isinstance(per, ModuleCapture) else _MethodType(per, obj)

    def __set_name__(self, owner: type, name: str) -> None:
        self._owner = (owner, name)  # (pickling: see __reduce__)

    def __reduce__(self):
        """A compiled function pickles (and deep-copies) as what it is: a class attribute by reference; another
        by its function and settings, without its captures."""
        owner = self.__dict__.get("_owner")
        if owner is not None and owner[0].__dict__.get(owner[1]) is self:
            return getattr, owner
        return CompiledFunction, (self._orig_fn, self._fullgraph, self._recompile_limit, self.name,
                                  self._host_fusion, self._fused)

    def __call__(self, *args, **kwargs):
        rec = state["recorder"]  # (inside a capture of this thread: its kernels are recorded there)
        if rec is not None and rec.thread == get_ident() or _stance.current[0].stance == "force_eager":
            return self._orig_fn(*args, **kwargs)
        lv, st, k = self._lookup(args, kwargs)
        entry = self._cache.get(k)
        pos: tuple | None = None  # (the float arguments: found once per call, and only on a miss)
        if entry is None and self._dyn:  # captures serving any value of their float arguments (dynfloat.py)
            pos = self._floats(args, kwargs, lv)
            if pos:
                mk = _dynfloat.masked(k, lv, pos)
                alts = self._alts.get(mk)
                if alts is not None:
                    return self._dyn_call(alts, k, mk, pos, args, kwargs, lv, st)
        if entry is None:
            if not _stance.on_capture(self._orig_fn, len(self._cache), self._delayed):
                return self._orig_fn(*args, **kwargs)
            if self._at_limit(k):
                return self._orig_fn(*args, **kwargs)
            if pos is None:
                pos = self._floats(args, kwargs, lv)
            if pos and not self._dyn_failed and not config.specialize_float and \
                    not _dynfloat.checks_type(self._orig_fn):
                mk = _dynfloat.masked(k, lv, pos)
                if any(e.mkey == mk and e.fp is not None and e.replay is not None for e in tuple(self._cache.values())):
                    return self._capture_dyn(k, mk, pos, args, kwargs, lv, st)  # only these floats changed: Syms
            return self._capture_or_eager(k, args, kwargs, lv, st, pos)[0]
        if entry.replay is None:  # a graph break: this guard set runs eagerly
            return self._orig_fn(*args, **kwargs)
        try:
            out = entry.replay(lv)
        except Mismatch as e:
            unsafe, recapture = e.unsafe, e.recapture
        else:
            self.replays += 1
            return out
        # (out of the except block: the eager call's own exception, an IndexError, is not chained to the Mismatch,
        # whose traceback held the replay's arrays)
        if unsafe:
            raise _unsafe()
        if recapture and self._recaptures < recompile_limit_of(self._recompile_limit) and \
                _stance.on_capture(self._orig_fn, len(self._cache), self._delayed):
            result, captured = self._capture_or_eager(k, args, kwargs, lv, st, self._floats(args, kwargs, lv))
            self._recaptures += captured is not None  # (an argument aliased persistent state at the capture, no longer)
            return result
        if not recapture:
            _logs.checked_read_differs(self._orig_fn)
        return self._orig_fn(*args, **kwargs)

    def _floats(self, args: tuple, kwargs: dict, lv: list) -> tuple:
        """The top-level float arguments and their places among the leaves (see dynfloat.positions)."""
        if not any(type(a) is float for a in lv):
            return ()
        if not kwargs and len(lv) == len(args) and all(a is b for a, b in zip(lv, args)):  # (arguments unopened)
            return tuple([(i, ("a", i)) for i, a in enumerate(args) if type(a) is float])
        appended = self._appended(args, kwargs)
        return _dynfloat.positions(args, kwargs, lambda a: len(_guards.leaves((a,), {}, appended)))

    def _at_limit(self, k) -> bool:
        """Whether ``recompile_limit`` captures were made (warned once, as PyTorch's)."""
        limit = recompile_limit_of(self._recompile_limit)
        if len(self._cache) < limit:
            return False
        _logs.limit_reached(getattr(self._orig_fn, "__name__", "fn"), limit, self._fullgraph, not self._warned, k,
                            self._cache, _logs.FUNCTION_PARTS)
        self._warned = True
        return True

    def _replayed(self, entry, lv: list) -> Any:
        out = entry.replay(lv)
        self.replays += 1
        return out

    def _dyn_call(self, alts: list, k, mk, pos: tuple, args: tuple, kwargs: dict, lv: list, st: tuple) -> Any:
        """A call served by the Sym captures ``alts`` of its masked key ``mk`` (dynways.py): where none takes this
        call's way, it is captured (PyTorch compiles a graph for each outcome of its guards), up to
        ``recompile_limit``."""
        def on_miss() -> Any:
            if not self._at_limit(k) and _stance.on_capture(self._orig_fn, len(self._cache), self._delayed):
                return self._capture_dyn(k, mk, pos, args, kwargs, lv, st)
            return self._orig_fn(*args, **kwargs)
        return _dynways.call(alts, lambda e: self._replayed(e, lv), on_miss, lambda: self._orig_fn(*args, **kwargs),
                             _unsafe)

    def _capture_dyn(self, k, mk, pos: tuple, args: tuple, kwargs: dict, lv: list, st: tuple) -> Any:
        """Capture with the float arguments at ``pos`` as Syms, kept by dynways.settle."""
        result, kept = _dynways.capture_way(
            self._orig_fn, self._cache, self._alts, k, mk, pos, lambda e: e.replay is not None,
            lambda: self._capture_or_eager(k, args, kwargs, lv, st, pos, dyn=True)[0])
        if kept is None:
            self._dyn_failed = True
        elif kept:
            self._dyn = True
        return result

    def _capture_or_eager(self, k, args: tuple, kwargs: dict, lv: list, st: tuple, pos: tuple = (),
                          dyn: bool = False) -> tuple[Any, Any]:
        """(result, the new entry or None): this call captured into the cache under ``k``, or run eagerly while
        another thread captures (a capture's patches are process-wide; this call's guard set captures at a later
        call); ``pos``: its float arguments (see dynfloat.py), as Syms with ``dyn``."""
        fused, host_fusion = _stance.choice(self._fused, self._host_fusion)
        _logs.recompile(self._orig_fn, k, self._cache, _logs.FUNCTION_PARTS, recompile_limit_of(self._recompile_limit))
        try:
            with _backends.capture_settings(fused):
                result, entry = _capture(self._orig_fn, args, kwargs, lv, st, self._fullgraph, host_fusion,
                                         self._root_key(args, kwargs), pos if dyn else (), bool(pos))
        except CaptureBusy:
            entry = None
        if entry is None:  # (out of the except block: an exception of the eager call is not chained to it)
            return self._orig_fn(*args, **kwargs), None
        if entry.retry and self._retries < _RETRIES:  # (another thread may have broken it: not kept)
            self._retries += 1
            return result, None
        if entry.arg_identity and not self._arg_identity:
            # the result returns an argument container itself: from now on containers are keyed by identity too
            # (this capture's replay would return the capture's container; see argtree.py)
            self._arg_identity = True
            self._state.clear()
            return result, entry
        if pos:
            entry.mkey = _dynfloat.masked(k, lv, pos)
        self._cache[k] = entry
        if entry.replay is None:
            _logs.graph_break(self._orig_fn, entry.breaks)
        return result, entry

    def _explained(self, args: tuple, kwargs: dict) -> Any:
        """The cache entry a capture of this call makes, kept nowhere (``explain``): captured as ``__call__``
        captures, so a call that assigns state its guards key (a scheduler's ``_last_lr`` the step returns through
        ``sched.get_last_lr()``) is the graph break it is when compiled."""
        lv, st, _ = self._lookup(args, kwargs)
        return _capture(self._orig_fn, args, kwargs, lv, st, False, None, self._root_key(args, kwargs))[1]

    def _last(self):
        """The last capture's cache entry that has a replay (None before one)."""
        live = [e for e in list(self._cache.values()) if e.replay is not None]
        return live[-1] if live else None

    @property
    def launches(self) -> int:
        """Kernel launches the last capture recorded (what a replay runs)."""
        e = self._last()
        return e.launches if e else 0

    @property
    def planned(self) -> tuple[int, int]:
        """(temporaries written into planned buffers, buffers) of the last capture's replay (see ``.plan``)."""
        e = self._last()
        return e.planned if e else (0, 0)

    @property
    def hosted(self) -> int:
        """Launches of the last capture's replay that run as host-fusion kernels (``mode="max-autotune"``)."""
        e = self._last()
        return e.hosted if e else 0

    @property
    def lowered(self) -> int:
        """Lines of the last capture's replay that run as straight device launches (see ``.lower``; 0 until the
        observed replays ran, and on devices without the hook)."""
        e = self._last()
        return getattr(e.replay, "lowered", 0) if e else 0

    @property
    def launches_before_fusion(self) -> int:
        """Kernel launches the last capture recorded before fusion (equal to ``launches`` without a fusing device)."""
        e = self._last()
        return e.launches + e.fused if e else 0


class _PerInstance(CompiledFunction):
    """A module instance's own compiled function of a method compiled in its class body (see
    ``CompiledFunction.__get__``); copies and pickles as a fresh one of the same class attribute."""

    def __init__(self, parent: CompiledFunction):
        super().__init__(parent._orig_fn, parent._fullgraph, parent._recompile_limit, parent.name,
                         parent._host_fusion, parent._fused)
        self._parent = parent

    def __reduce__(self):
        return _PerInstance, (self._parent,)


def compile(model: Any = None, *, fullgraph: bool = False, dynamic=None, backend: Any = None, mode=None,
            options=None, name: str | None = None, disable: bool = False, recompile_limit: int | None = None,
            isolate_recompiles: bool = False, shapes_spec: Any = None):
    """``torch.compile``: a :class:`CompiledFunction` for a function, an :class:`OptimizedModule` for a module.

    ``recompile_limit`` caps this call's captures (default ``config.recompile_limit``, 8; past it calls run eagerly
    with one warning, or raise ``FailOnRecompileLimitHit`` with ``fullgraph=True``). Each ``compile`` call keeps its
    own captures, so ``isolate_recompiles=True`` is what already happens. ``name`` labels the compiled callable.
    ``dynamic`` and ``shapes_spec`` are accepted: a capture is specialised to its shapes (a new shape captures
    again, within the limit).  ``mode="max-autotune"`` or ``options={"host_fusion": True}`` (or ``"max_autotune"``):
    cpu replays run GELU, layer norm and softmax as compiled kernels of another plugin on the same memory where one
    is offered (PoCL through the opencl plugin: see ``coretorch._compile.hostfuse``), within float32 rounding of
    eager.  ``backend``: ``"inductor"`` (the default), or ``"eager"``/``"aot_eager"``/``"cudagraphs"`` for replays
    of the recorded kernels only (see ``coretorch._compile.backends``)."""
    choice = _backends.resolve(backend, mode, options)
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                                  isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
    if not callable(model):
        raise RuntimeError("torch.compile: the model must be callable (an nn.Module or a function)")
    if not disable:
        _backends.check_dynamic(dynamic)
    if disable or isinstance(model, (CompiledFunction, OptimizedModule, ModuleCapture)):
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph=fullgraph, recompile_limit=recompile_limit, name=name,
                               host_fusion=choice.host_fusion, fused=choice.fused)
    if isinstance(model, _MethodType) and isinstance(model.__self__, Module) and \
            model.__func__ is getattr(type(model.__self__), "forward", None):
        # torch.compile(model.forward): the module capture (forward and backward replayed, as model.compile()'s),
        # not a function capture (its results carry no autograd graph: every call would be a graph break); where the
        # class compiled its forward, model.forward is the instance's module capture already (see __get__)
        return ModuleCapture(model.__self__, model, fullgraph, recompile_limit, choice.host_fusion, choice.fused)
    return CompiledFunction(model, fullgraph=fullgraph, recompile_limit=recompile_limit, name=name,
                            host_fusion=choice.host_fusion, fused=choice.fused)


def is_compiling() -> bool:
    """Whether a capture records this thread (another thread's capture is not this thread's, as PyTorch's)."""
    rec = state["recorder"]
    return rec is not None and rec.thread == get_ident()


def reset() -> None:
    """Forget every capture (``torch._dynamo.reset``)."""
    for cf in list(_live):
        cf._reset()
    for mc in list(_live_modules):
        mc.cache.clear()
        mc.alts.clear()  # (the Sym captures of each way: served before the cache, dynways.py)
        mc.dyn = mc.dyn_failed = False
        mc.recaptures = 0
        mc.st = None
        mc.delayed[0] = False
        mc.warned = False
        mc.retries = 0
    _optim_replays.clear()
