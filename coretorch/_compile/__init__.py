"""``coretorch.compile``: whole-step capture and replay at the kernel-table level (in the spirit of CUDA graphs and
tinygrad's JIT).

Why this design: eager coretorch is already close to its kernels' speed; what remains is Python dispatch per op
(checks, promotion, autograd bookkeeping).  Recording the *kernel launches* of one call (forward, backward, the
state updates) and replaying them as one generated straight-line Python function removes all of that while
calling exactly the kernels eager calls, in the same order, on the same arrays: a replay is bitwise equal to eager
on every backend, RNG kernels advance the same generators (dropout matches), and nothing has to understand the ops.

* :mod:`.capture`: the recording (kernel wrappers, persistent state, eager segments, checked host reads, breaks);
* :mod:`.replay`: the generated replay function;
* :mod:`.guards`: what must match for a replay (argument shapes/dtypes/devices/requires_grad, Python scalars,
  ``training`` flags, parameter identity, which ``.grad`` are None, grad mode);
* :mod:`.module`: module capture (``compile(model)``, ``model.compile()``): forward and backward replayed;
* ``explain`` (here): ``coretorch.compiler.explain``.

``Optimizer.step()`` runs as an eager segment of the replay (learning-rate schedulers and step counters just work;
recording the optimizer's kernels with lr as a replay input is a later step).  Python side effects of the function
other than tensor kernels and ``optimizer.step()`` (printing, counters, ``scheduler.step()``) happen at capture only.
The result tensors of a replay carry no autograd graph.
"""
from __future__ import annotations

import functools
import warnings
import weakref
from typing import Any, Callable

from ..nn.modules.module import Module
from . import guards as _guards
from .capture import Recorder, Unsupported, _find_hab_users, state
from .module import CompiledFunctionBackward, ModuleCapture, OptimizedModule, compile_in_place
from .replay import Mismatch, build

__all__ = ["compile", "CompiledFunction", "CompiledFunctionBackward", "ModuleCapture", "OptimizedModule", "Unsupported",
           "compile_in_place", "config", "explain", "is_compiling", "reset"]


class _Config:
    """``coretorch._compile.config`` (PyTorch's ``torch._dynamo.config``): ``recompile_limit`` captures per
    compiled function before new guard sets run eagerly (with one warning)."""

    recompile_limit: int = 8
    cache_size_limit: int = 8  # PyTorch's older name; read when recompile_limit is left at its default


config = _Config()
_live: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()
_live_modules: "weakref.WeakSet[ModuleCapture]" = weakref.WeakSet()


class _Entry:
    __slots__ = ("replay", "source", "breaks", "launches")

    def __init__(self, replay, source: str, breaks: list, launches: int):
        self.replay, self.source, self.breaks, self.launches = replay, source, breaks, launches


def _capture(fn: Callable, args: tuple, kwargs: dict, lv: list, st: tuple, fullgraph: bool) -> tuple[Any, _Entry]:
    """Run ``fn`` eagerly while recording; the result and the cache entry (no replay function after a break)."""
    modules, params, buffers, plain = st
    rec = Recorder(fullgraph)
    _find_hab_users()
    rec.install()
    try:
        rec.track(lv, params, buffers, plain)
        result = fn(*args, **kwargs)
        result_src = rec.finish(result, lv)
    finally:
        rec.remove()
    if rec.breaks:
        return result, _Entry(None, "", rec.breaks, rec.launches)
    replay, src = build(rec, result_src)
    return result, _Entry(replay, src, [], rec.launches)


class CompiledFunction:
    """What ``coretorch.compile(fn)`` returns: calls capture once per guard set, then replay."""

    def __init__(self, fn: Callable, fullgraph: bool = False):
        self._orig_fn = fn
        self._fullgraph = fullgraph
        self._cache: dict = {}
        self._state: dict = {}
        self._eager = False
        self._warned = False
        self._gnames: list | None = None
        self.replays = 0  # calls served by a replay (for tests and benchmarks)
        functools.update_wrapper(self, fn, updated=())
        _live.add(self)

    def _reset(self) -> None:
        self._cache.clear()
        self._state.clear()
        self._eager = False
        self._warned = False
        self._gnames = None

    def _lookup(self, args: tuple, kwargs: dict):
        if self._gnames is None:
            self._gnames = _guards.global_names(self._orig_fn)
        rid = tuple(map(id, _guards.roots(self._orig_fn, args, kwargs, self._gnames)))
        st = self._state.get(rid)
        if st is None:
            st = self._state[rid] = _guards.state_of(_guards.roots(self._orig_fn, args, kwargs))
        lv = _guards.leaves(args, kwargs)
        return lv, st, (rid, _guards.key(lv, st[0], st[1]))

    def __call__(self, *args, **kwargs):
        if state["recorder"] is not None:  # inside another capture: its kernels are recorded there
            return self._orig_fn(*args, **kwargs)
        lv, st, k = self._lookup(args, kwargs)
        entry = self._cache.get(k)
        if entry is None:
            limit = config.recompile_limit
            if limit == 8 and config.cache_size_limit != 8:
                limit = config.cache_size_limit
            if len(self._cache) >= limit:
                if not self._warned:
                    self._warned = True
                    warnings.warn(f"coretorch.compile: {getattr(self._orig_fn, '__name__', 'fn')} reached "
                                  f"recompile_limit ({limit}) captures; calls with new guards run eagerly",
                                  UserWarning, stacklevel=2)
                return self._orig_fn(*args, **kwargs)
            result, self._cache[k] = _capture(self._orig_fn, args, kwargs, lv, st, self._fullgraph)
            return result
        if entry.replay is None:  # a graph break: this guard set runs eagerly
            return self._orig_fn(*args, **kwargs)
        try:
            out = entry.replay(lv)
            self.replays += 1
            return out
        except Mismatch as e:
            if e.unsafe:
                raise RuntimeError("coretorch.compile: a value the captured step read on the host (a check or a "
                                   "scalar) differs in this call after persistent state was already written; the "
                                   "eager step would take another path. Call coretorch.compiler.reset() or compile "
                                   "with disable=True") from None
            return self._orig_fn(*args, **kwargs)

    @property
    def launches(self) -> int:
        """Kernel launches the last capture recorded (what a replay runs)."""
        live = [e for e in self._cache.values() if e.replay is not None]
        return live[-1].launches if live else 0


def compile(model: Any = None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None,
            options=None, disable: bool = False):
    """``torch.compile``: a :class:`CompiledFunction` for a function, an :class:`OptimizedModule` for a module."""
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable)
    if disable or isinstance(model, (CompiledFunction, OptimizedModule)):
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph=fullgraph)
    return CompiledFunction(model, fullgraph=fullgraph)


def is_compiling() -> bool:
    return state["recorder"] is not None


def reset() -> None:
    """Forget every capture (``torch._dynamo.reset``)."""
    for cf in list(_live):
        cf._reset()
    for mc in list(_live_modules):
        mc.cache.clear()
        mc.st = None


class ExplainOutput:
    """What :func:`explain` found (PyTorch's ``ExplainOutput`` fields)."""

    def __init__(self, breaks: list, launches: int):
        self.break_reasons = list(breaks)
        self.graph_break_count = len(breaks)
        self.graph_count = 1 + len(breaks) if breaks else 1
        self.op_count = launches

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines.extend(f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons))
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn: Callable, *args, **kwargs):
    """Capture ``fn(*args, **kwargs)`` once (it runs eagerly, with its side effects) and say what breaks the graph
    and where; ``explain(fn)(*args)`` works too (PyTorch's ``torch._dynamo.explain``)."""
    if isinstance(fn, CompiledFunction):
        fn = fn._orig_fn

    def run(*a, **kw) -> ExplainOutput:
        rts = _guards.roots(fn, a, kw)
        rec_breaks: list = []
        _, entry = _capture(fn, a, kw, _guards.leaves(a, kw), _guards.state_of(rts), False)
        rec_breaks = entry.breaks
        return ExplainOutput(rec_breaks, entry.launches)
    if not args and not kwargs:
        return run
    return run(*args, **kwargs)
