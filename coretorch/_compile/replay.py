"""Replay: the recorded launches become one generated Python function, so a replay is a straight run of kernel
calls on local variables (no dict lookups, no checks, no autograd), with the write-backs and eager segments in
place."""
from __future__ import annotations

import contextlib
import re
import sys
import threading
from typing import Any, Callable

import numpy as np

from .. import _backend
from ..tensor import Tensor, _make
from . import argtree, backends, fusion, hostfuse, hostrng, lower as _lower, plan as _plan
from . import assigns as _assigns, attrs as _attrs, early as _early, flags as _flags, guards as _guards, made as _made
from . import modstate as _modstate
from . import dynfloat as _dynfloat, rngundo as _rngundo, symbolic as _sym, symwatch as _symwatch, tailreads as _tail
from .symbolic import Sym
from .capture import Recorder, _find_hab_users, _orig_host_all_below
from .frames import returned
from .owners import _memory_of, _state_key, _tensor_key
from .roots_state import iter_position, iterators_of, persistent_of, scheduler_counts
from .hostrng import host_rng_state
from .modes import modes as _modes
from .results import _new_grad, _rebuilt_dict, _rebuilt_object, _root, _view, _with_grad
from .results import graph_consumed, with_consumed_graph
from .config import config


class Mismatch(Exception):
    """A checked host read gave another value than at capture: the eager path would differ."""

    def __init__(self, unsafe: bool, recapture: bool = False, branch: bool = False):
        super().__init__(unsafe)
        self.unsafe = unsafe
        self.recapture = recapture  # a check of how the capture was specialised: capture this call again
        self.branch = branch  # a branch on a float argument went another way (dynfloat.py: another capture's)


def _changed(value: Any, expected: bytes) -> bool:
    return np.asarray(value).tobytes() != expected


def _copy(a):
    return a.copy()


_GLOBALS = {"MAKE": _make, "CHK": _changed, "HAB": _orig_host_all_below, "CP": _copy, "MISMATCH": Mismatch,
            "TKEY": _tensor_key, "SKEY": _state_key, "MEMOF": _memory_of, "VIEW": _view, "REDICT": _rebuilt_dict,
            "REOBJ": _rebuilt_object, "GRAD": _with_grad, "NEWGRAD": _new_grad, "POSOF": fusion.position, "ROOT": _root,
            "RNGSAVE": _rngundo.save, "RNGBACK": _rngundo.back, "RNGEND": _rngundo.end, "TAILREAD": _tail.tail_read,
            "APPEND": _tail.append, "CONSUMED": with_consumed_graph,
            "CONSUMEDQ": graph_consumed}


_VAR = re.compile(r"\ba\d+\b")


def _with_frees(lines: list[str], result_src: str, keep_vars: set | None = None) -> list[str]:
    """``del`` each temporary right after its last use: arrays live as long as in eager, so numpy's allocator
    reuses their memory (kept alive to the end, large temporaries would be fresh mmaps every replay)."""
    last: dict[str, int] = {}
    for i, line in enumerate(lines):
        for v in _VAR.findall(line):
            last[v] = i
    keep = set(_VAR.findall(result_src)) | (keep_vars or set())
    frees: dict[int, list[str]] = {}
    for v, i in last.items():
        if v not in keep:
            frees.setdefault(i, []).append(v)
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i in frees:
            out.append(f"del {', '.join(frees[i])}")
    return out


def _plan_of(rec: Recorder, lo: int, hi: int | None, keep: set) -> _plan.Plan:
    """The planned temporaries of ``rec.lines[lo:hi]`` (see :mod:`.plan`), counted on the recorder."""
    pl = _plan.plan(rec, lo, hi, keep) if config.pool else _plan.NONE
    rec.planned = (rec.planned[0] + pl.temporaries, rec.planned[1] + len(pl.names))
    return pl


def _source(lines: list[str]) -> str:
    return "\n".join(f"        {ln}" for ln in lines)


def _guarded_prologue(pro: list[str]) -> list[str]:
    """The prologue's lines, an exception of their float arithmetic (``1 / t`` at ``t == 0.0``) a mismatch: the eager
    call then raises it where it happens, after the side effects before it (the prologue runs before all of them)."""
    if not pro:
        return pro
    return ["try:", *[f"    {ln}" for ln in pro], "except (ArithmeticError, ValueError):", "    raise MISMATCH(False)"]


def build(rec: Recorder, result_src: str, host_fusion: bool | None = None) -> tuple[Callable, str]:
    """The replay function ``f(A)`` (``A`` the flattened tensor arguments) and its source; ``host_fusion``: the
    compile call's choice (None: the config's; see :mod:`.hostfuse`)."""
    _early.hoist(rec)
    fusion.update_alias_checks(rec)
    if backends.fusing():
        rec.fused = fusion.fuse(rec, result_src)
    if hostfuse.requested(host_fusion):
        rec.hosted = hostfuse.apply(rec)
    pl = _plan_of(rec, 0, None, set(_VAR.findall(result_src)))
    lines = _rngundo.window(rec.checks + _guarded_prologue(rec.pro) + pl.wrap(  # (pro: a Sym argument's numbers,
        rec, _with_frees([ln for ln in rec.lines if ln], result_src), f"return {result_src}"))  # dynfloat.py)
    names = [f"c{i}" for i in range(len(rec.consts))]
    head = f"def _build({', '.join(names)}):\n    def _replay(A):\n"
    src = f"{head}{_source(lines)}\n    return _replay\n"
    ns: dict[str, Any] = dict(_GLOBALS)
    exec(compile(src, "<coretorch.compile replay>", "exec"), ns)  # noqa: S102 - source generated above
    replay = ns["_build"](*rec.consts)
    if config.lower and _lower.hooks(rec):
        replay = _lower.Lowering(replay, lines, rec, _GLOBALS)
    return replay, src


_ARG_NUMBER = re.compile(r"\bA\[(\d+)\](?![.\[])")  # a float argument of a module's Sym capture (dynfloat.py)
_NUMBER = re.compile(r"\bA\[\d+\](?![.\[])|\bs\d+_\d+\b")


def backward_numbers(rec: Recorder, split: int) -> list[str]:
    """The float arguments (``A[2]``) and the numbers the prologue computes from them (``s0_7``) that a module's
    recorded backward (the lines from ``split``) takes: the forward returns them in the context, in this order
    (dynfloat.py; ``A[2]`` is ``sa2`` in the backward, which has no ``A``)."""
    bw = [ln for ln in rec.lines[split:] if ln]
    made = {ln.split(" = ", 1)[0] for ln in bw}  # (none made there: a module's backward reads no Sym)
    return sorted({t for ln in bw for t in _NUMBER.findall(ln)} - made)


def build_parts(rec: Recorder, split: int, out_vars: list[str], bw_src: str | None,
                host_fusion: bool | None = None) -> tuple[Callable, Any, int]:
    """A module's forward ``f(A) -> (output arrays, ctx)`` and backward ``b(ctx, G) -> gradient arrays`` (None
    without a backward), the lines before and after ``split``; and the forward's end now (hoisting may add lines)."""
    split += _early.hoist(rec, split)  # (the forward's: a check of the backward raises whatever it finds)
    fusion.update_alias_checks(rec)
    if backends.fusing():
        rec.fused = fusion.fuse(rec, " ".join(out_vars) + " " + (bw_src or ""), split)
    if hostfuse.requested(host_fusion):
        rec.hosted = hostfuse.apply(rec)
    defined = set()
    for ln in rec.lines[:split]:
        if ln:
            defined.update(_VAR.findall(ln))
    ctx = sorted({v for ln in rec.lines[split:] if ln for v in _VAR.findall(ln)} & defined) \
        if bw_src is not None else []
    numbers = backward_numbers(rec, split) if bw_src is not None else []
    fw_plan = _plan_of(rec, 0, split, set(out_vars) | set(ctx))
    bw_plan = _plan_of(rec, split, None, set(_VAR.findall(bw_src))) if bw_src is not None else _plan.NONE
    fw = [ln for ln in rec.lines[:split] if ln]
    bw = [_ARG_NUMBER.sub(r"sa\1", ln) for ln in rec.lines[split:] if ln]  # (A[2] -> sa2: carried in ctx)
    outs = "(" + "".join(f"{v}, " for v in out_vars) + ")"
    ctx_t = "(" + "".join(f"{v}, " for v in [*ctx, *numbers]) + ")"
    fw_lines = _rngundo.window(rec.checks + _guarded_prologue(rec.pro) + fw_plan.wrap(
        rec, _with_frees(fw, outs, set(ctx)), f"return {outs}, {ctx_t}"))
    src = f"    def _fw(A):\n{_source(fw_lines)}\n"
    bw_lines: list[str] = []
    if bw_src is not None:
        names = [*ctx, *[_ARG_NUMBER.sub(r"sa\1", n) for n in numbers]]
        bw_lines = ([f"{', '.join(names)}, = ctx"] if names else []) + \
            bw_plan.wrap(rec, _with_frees(bw, bw_src), f"return {bw_src}")
        src += f"    def _bw(ctx, G):\n{_source(bw_lines)}\n"
    else:
        src += "    _bw = None\n"
    names = [f"c{i}" for i in range(len(rec.consts))]
    src = f"def _build({', '.join(names)}):\n" + src + "    return _fw, _bw\n"
    ns: dict[str, Any] = dict(_GLOBALS)
    exec(compile(src, "<coretorch.compile module replay>", "exec"), ns)  # noqa: S102 - source generated above
    fw_fn, bw_fn = ns["_build"](*rec.consts)
    if config.lower and _lower.hooks(rec):
        fw_fn = _lower.Lowering(fw_fn, fw_lines, rec, _GLOBALS)
        if bw_fn is not None:
            bw_fn = _lower.Lowering(bw_fn, bw_lines, rec, _GLOBALS, params="ctx, G")
    return fw_fn, bw_fn, split


def process_state(objs: list | tuple = ()) -> tuple:
    """The host random state (see :mod:`.hostrng`; with that of the generators of their own among ``objs``, the
    roots and modules of the call) and the global modes and settings (:mod:`.modes`), before a capture runs the
    function (see :func:`check_process_state`)."""
    gens = hostrng.generators_of(list(objs))
    return (host_rng_state(), _modes(), threading.active_count(), gens, hostrng.generator_states(gens),
            _backend.TABLES_CHANGED[0])


def check_process_state(rec: Recorder, before: tuple, where: str | None = None) -> None:
    """A graph break where the captured call drew a host random number or changed a global mode: a replay would
    repeat the number, and leave the mode as it finds it (``where``: the call's function, found when it returned)."""
    rng, modes, threads, gens, states, tables = before
    # with other threads running, another one may have drawn or changed it meanwhile (a data-producing thread's
    # random augmentation): the call runs eagerly and a later one captures again, a few times (see RETRIES), and
    # fullgraph=True raises no Unsupported for it
    maybe = not rec.breaks and max(threads, threading.active_count()) > 1

    def brk(why: str) -> None:
        if maybe:
            rec.breaks.append(f"{why} (at {where})" if where else why)
        else:
            rec.graph_break(why, where)
    if host_rng_state() != rng:
        brk("the call drew a host random number (Python's random or numpy's global generator, also through a name "
            "bound before the capture: `from random import random`; a seed of `torch.seed()`), which a replay would "
            "repeat")
    if hostrng.generator_states(gens) != states:
        brk("the call drew from a host random generator it reaches (`rng = random.Random(0)`, "
            "`np.random.default_rng()`, `np.random.RandomState()`: `rng.random()`), which a replay would repeat")
    if _backend.TABLES_CHANGED[0] != tables:  # (their entries were refilled over the capture's recording ones:
        rec.breaks.append(  # whatever broke after it, a later call captures again: see retried)
            "the kernel tables were refilled during the capture (a plugin registered kernels or a backend), so the "
            "launches after it were not recorded")
    if _modes() != modes:
        brk("the call changed a global mode or setting (`torch.set_grad_enabled(False)`, `set_default_dtype`, "
            "`use_deterministic_algorithms`...), which a replay would not repeat")
    if maybe and rec.breaks:
        rec.__dict__["retry"] = len(rec.breaks)


RETRIES = 3  # captures tried again per compiled callable where only another thread may have broken the graph


def retried(rec: Recorder) -> bool:
    """Whether the only breaks of a capture are those check_process_state saw with other threads running, or the
    kernel tables were refilled during it (then any break may be that refill's)."""
    return rec.__dict__.get("retry") == len(rec.breaks) or rec.tables_changed()


def _watch_outer_graphs(rec: Recorder, tensors: list) -> list:
    """Hooks on the graph nodes of the non-leaf tensors the step receives (``f(w * 2)``: the caller's graph): a
    backward of the step that runs one is a graph break.  A replay returned without the gradient that eager carries
    into the caller's graph (``w.grad`` left None), or ran the caller's nodes with the capture's saved values.
    (``autograd.grad(loss, h)``, whose inputs lie before the caller's nodes, keeps the replay: the engine runs those
    nodes, but nothing it returns comes from them.)"""
    def watch(n):
        def hit(_grads_in, _grads_out):
            f = sys._getframe(1)
            cap = f.f_locals.get("capture") if f.f_code.co_name == "_run_backward" else None
            if cap is None or _reaches(n, {k[0] for k in cap}):
                rec.graph_break("the step's backward runs into the autograd graph of a tensor it receives (the "
                                "caller's), which a replay would not carry there")
        return hit
    out: list = []
    for t in tensors:
        n = t._gf if isinstance(t, Tensor) and t._rg else None
        if n is not None and all(n is not m for m, *_ in out):
            out.append((n, n._hooked, n._hooks, n.register_hook(watch(n))))
    return out


def _reaches(node: Any, targets: set) -> bool:
    """Whether a node among ``targets`` lies behind ``node`` in its graph."""
    seen: set = set()
    todo = [f for f, _ in node.next_functions or ()]
    while todo:
        n = todo.pop()
        if n is None or id(n) in seen:
            continue
        if n in targets:
            return True
        seen.add(id(n))
        todo.extend(f for f, _ in n.next_functions or ())
    return False


def _unwatch(watched: list) -> None:
    for n, hooked, hooks, handle in watched:
        handle.remove()
        n._hooked = hooked
        if hooks is None:
            n._hooks = None


class _Entry:
    __slots__ = ("replay", "source", "breaks", "launches", "fused", "planned", "hosted", "arg_identity", "retry",
                 "fp", "escape", "mkey", "branches")

    def __init__(self, replay, source: str, breaks: list, launches: int, fused: int = 0,
                 planned: tuple = (0, 0), hosted: int = 0):
        self.replay, self.source, self.breaks, self.launches = replay, source, breaks, launches
        self.fused = fused  # launches saved by fusion (launches + fused ran before it)
        self.planned = planned  # (temporaries written into pool buffers, buffers): see plan.py
        self.hosted = hosted  # launches run as a host-fusion provider's kernels: see hostfuse.py
        self.arg_identity = False  # the result returns an argument container itself: see argtree.py
        self.retry = False  # a graph break only another thread may have caused (see check_process_state)
        self.fp: tuple | None = None  # the capture's fingerprint, where it has float arguments (dynfloat.py)
        self.escape = ""  # why its Syms escaped (dynfloat.py)
        self.mkey: tuple | None = None  # its cache key with the float arguments masked (dynfloat.py)
        self.branches = False  # its prologue checks a branch on a float argument (dynfloat.py)


def capture(fn: Callable, args: tuple, kwargs: dict, lv: list, st: tuple, fullgraph: bool,
            host_fusion: bool | None = None, root_key: Callable[[], tuple] | None = None,
            dyn: tuple = (), fp: bool = False) -> tuple[Any, _Entry]:
    """Run ``fn`` eagerly while recording; the result and the cache entry (no replay function after a break).
    ``root_key``: the cache's key of the roots now (a call that changes it is a graph break, see
    modstate.check_module_writes); ``dyn``: the float arguments passed as Syms, ``fp``: keep the capture's
    fingerprint on the entry (see dynfloat.py)."""
    rec = Recorder(fullgraph)
    try:
        return _capture(rec, fn, args, kwargs, lv, st, host_fusion, root_key, dyn, fp)
    finally:
        rec.release()  # (held until the replay is built: see Recorder.remove)


def _capture(rec: Recorder, fn: Callable, args: tuple, kwargs: dict, lv: list, st: tuple,
             host_fusion: bool | None, root_key: Callable[[], tuple] | None, dyn: tuple = (),
             fp: bool = False) -> tuple[Any, _Entry]:
    modules, params, buffers, plain = st[:4]
    rec.host_fusion = hostfuse.requested(host_fusion)
    rec.tail_fn = getattr(fn, "__func__", fn)  # (reads at its return: tailreads.py)
    # the optimizers whose state tensors the step's own code reads (``opt.state[w]["exp_avg"]``: see _resolve_pending)
    rec.optimizers = list(st[5]) if len(st) > 5 and "state" in _guards.attribute_names(fn) else []
    roots = _guards.roots(fn, args, kwargs)
    rec.iterators = iterators_of(roots)
    rec.persistent = persistent_of(roots)
    rec.arg_containers = argtree.container_ids(args, kwargs)
    _find_hab_users()
    rec.install()
    try:
        rec.track(lv, params, buffers, plain, _attrs.attributes(modules))
        before = _modstate.module_numbers(modules), root_key() if root_key is not None else None
        flags = _flags.before(modules)
        opts = list(st[5]) if len(st) > 5 else []
        assigned = _assigns.snapshot(fn, lv, params, plain, opts)
        process, scheds = process_state([*roots, *modules]), scheduler_counts()
        its = {i: iter_position(it) for i, it in rec.iterators.items()}
        watched = _watch_outer_graphs(rec, [*lv, *plain])
        rec.born = _made.now()  # (an optimizer or a scheduler made after this is no segment: see made.py)
        _made.watch(rec)
        call_args, call_kwargs = args, kwargs
        if dyn:  # the float arguments as Syms (dynfloat.py)
            call_args, call_kwargs = _dynfloat.with_syms(args, kwargs, dyn,
                                                         lambda v, name: Sym(v, name, False, rec.sym_token))
            rec.dyn = True
            _sym._active[0] = rec
        try:
            with _symwatch.watching(rec) if dyn else contextlib.nullcontext():
                result = fn(*call_args, **call_kwargs)
        finally:
            _unwatch(watched)
            _tail.appended_values(rec.tail_appends)  # (the list holds the read's value, as eager's)
        at = returned(fn)  # (the place of the breaks found now: the step, not the caller's line)
        if any(iter_position(rec.iterators[i]) != p for i, p in its.items()):
            rec.graph_break("the call advanced an iterator it reaches (`it.__next__()`, a bound `__next__`, a `for` "
                            "loop over it), which a replay would not advance", at)
        check_process_state(rec, process, at)
        if any(scheduler_counts().get(i, c) != c for i, c in scheds.items() if i not in rec.sched_stepped):
            rec.graph_break("the call stepped an LR scheduler through a method bound before the capture (`then = "
                            "sched.step`), which a replay would not repeat: call `sched.step()` in the function", at)
        _flags.replayed(rec, modules, flags, lambda: _modstate.check_module_writes(rec, modules, before[0], at))
        _assigns.check(rec, assigned, fn, lv, params, plain, opts, at)
        if why := _made.changed_outside(rec):
            rec.graph_break(why, at)
        rec.watch = None  # (the optimizers: the recorder keeps none alive)
        if root_key is not None and root_key() != before[1]:
            rec.graph_break("the call assigns a global, a closure variable, or an entry or attribute of an object it "
                            "reads, which a replay would not repeat", at)
        result_src = rec.finish(result, lv)
    finally:
        rec.remove(release=False)
    if rec.tail or rec.dyn:  # the capture call's own result holds the eager values, plain floats
        result = _tail.substitute(result)
    if rec.breaks:
        entry = _Entry(None, "", rec.breaks, rec.launches)
        entry.retry = retried(rec)
        return result, entry
    finger = _dynfloat.fingerprint(rec, result_src) if fp or rec.dyn else None
    replay, src = build(rec, result_src, host_fusion)
    entry = _Entry(replay, src, [], rec.launches, rec.fused, rec.planned, rec.hosted)
    entry.arg_identity = rec.arg_identity
    entry.fp, entry.escape = finger, rec.escape
    entry.branches = any(ln.endswith("MISMATCH(False, False, True)") for ln in rec.pro)
    return result, entry
