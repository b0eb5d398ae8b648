"""Lowered replays: a replay's kernel-table calls become the device launches they make (device-neutral driver of the
optional ``compile_lower`` hook; the opencl backend's is ``coretorch_opencl/lowering.py``).

A replay still calls the kernel table once per recorded launch, and a table call is Python: plans, allocation,
argument conversion, a generic launcher.  On PoCL that is ~20-50 us per launch against ~3 us for the enqueue
itself, most of a small step's replay.  The first ``OBSERVE`` replays of a capture run an instrumented copy of the
replay function that brackets every candidate line (``x = cK(args)``: one table call on variables and immutable
constants) with the hook's observer; then each line is offered to the hook with what it saw (the line's device
events, input and output arrays, per run), and the lines it accepts are replaced by its straight code: an ``if`` on
the inputs' layouts, the launches, and the table call itself in the ``else`` branch.  Replays from then on run the
lowered function; a hook's ``state()`` (module settings its plans depend on) that differs from the observed one
sends the call to the plain replay.  Nothing else changes: the same write-backs, checks, segments and result.

The hook's contract (documented in ``coretorch/_backend.py``): ``compile_lower.observer()`` a context manager with
``begin()``/``end() -> events`` around each line (events only the hook reads); ``summary(events, input arrays,
output arrays) -> summary | None`` (holding no array: kept until the next observed run); ``state() -> hashable``;
``lower(summaries, ins, outs, prefix) -> (code lines, constants) | None`` with one summary per observed run,
``ins``/``outs`` the line's variable names and ``prefix`` the prefix of the constants' names.
"""
from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Callable

import numpy as np

from .. import _backend
from .capture import MUTATING, Recorder
from .config import config

OBSERVE = 2  # replays observed before lowering (two: a scalar that differs between them is not a constant)
_CALL = re.compile(r"^(\s*)(?:((?:[ap]\d+, )*[ap]\d+,?) = )?(c\d+)\((.*)\)$")
_VARS = re.compile(r"\b[ap]\d+\b")
_CONSTS = re.compile(r"\bc\d+\b")
_NUMBER_ARGS = re.compile(r"\bA\[|\bs\d+_\d+\b|\bsa\d+\b")  # a Python argument or a number computed from one
_IMMUTABLE = (int, float, bool, str, bytes, type(None), np.dtype, np.generic, type)
# random kernels: a generator's state is read on the host (the observed scalars may repeat by chance)
_NOT_LOWERED = frozenset(n for n in MUTATING if n.startswith(("rng", "rand", "uniform", "normal", "manual")))


def hooks(rec: Recorder | None = None) -> list:
    """The ``compile_lower`` hooks of the device tables made so far (with ``rec``: of those its launches used)."""
    used = {id(k) for _, k, *_ in getattr(rec, "info", {}).values()} if rec is not None else None
    out, seen = [], set()
    for t in _backend._tables.values():
        if id(t) in seen or "compile_lower" not in getattr(t, "names", ()):
            continue
        seen.add(id(t))
        if used is None or any(id(getattr(t, n, None)) in used for n in t.names):
            out.append(t.compile_lower)
    return out


def _immutable(v: Any) -> bool:
    if isinstance(v, tuple):
        return all(_immutable(x) for x in v)
    return isinstance(v, _IMMUTABLE)


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


class _Observation:
    """``_O`` of the instrumented replay: brackets candidate lines with every hook's observer and keeps each hook's
    summary of what the line did (no arrays: nothing of the run is kept alive until the next one)."""

    def __init__(self, hooks: list) -> None:
        self.hooks = hooks
        self.observers = [h.observer() for h in hooks]
        self.seen: dict[int, list] = {}  # line -> [summary per hook]

    def b(self) -> None:
        for o in self.observers:
            o.begin()

    def e(self, i: int, outs: tuple, ins: tuple) -> None:
        self.seen[i] = [h.summary(o.end(), ins, outs) for h, o in zip(self.hooks, self.observers)]


class Lowering:
    """A capture's replay (``entry.replay``): the plain replay observed ``OBSERVE`` times, then the lowered one."""

    def __init__(self, plain: Callable, body: list[str], rec: Recorder, globals_: dict, params: str = "A") -> None:
        self.plain = plain
        self._params = params  # the replay function's parameters (a module capture's backward: "ctx, G")
        head = f"def _build({', '.join(f'c{i}' for i in range(len(rec.consts)))}):\n    def _replay({params}):\n"
        self.source = ""  # the last function generated (the lowered replay's once lowered)
        self.fn: Callable | None = None
        self.lowered = 0  # lines lowered (0 until lowering ran, and where the hooks declined every line)
        self._hooks = hooks(rec)
        self._body, self._head, self._globals = body, head, globals_
        self._consts = rec.consts
        names = {id(k): n for n, k, *_ in getattr(rec, "info", {}).values()}
        self._cand: dict[int, tuple[str, list[str], list[str]]] = {}
        for i, line in enumerate(body):
            m = _CALL.match(line)
            # (a number of the call's float arguments, dynfloat.py: the observed runs may share one value by chance)
            if m is None or "*" in m.group(4) or _NUMBER_ARGS.search(m.group(4)):
                continue
            callee = rec.consts[int(m.group(3)[1:])]
            if names.get(id(callee)) in _NOT_LOWERED:
                continue
            if not all(_immutable(rec.consts[int(c[1:])]) for c in _CONSTS.findall(m.group(4))):
                continue
            ins = _unique(_VARS.findall(m.group(4)))
            outs = _VARS.findall(m.group(2) or "")
            self._cand[i] = (m.group(1), ins, outs)
        self._runs: list[dict] = []
        self._observed: Callable | None = None
        self._lock = threading.Lock()

    def __call__(self, *A):
        if not config.lower:  # switched off after the capture: the plain replay (the switch holds for every capture)
            return self.plain(*A)
        fn = self.fn
        if fn is not None:
            return fn(*A)
        if not self._cand or not self._hooks or not self._lock.acquire(blocking=False):
            return self.plain(*A)
        try:
            if self.fn is not None:
                return self.fn(*A)
            return self._observe(A)
        finally:
            self._lock.release()

    def _observe(self, A: tuple):
        if self._observed is None:
            self._observed = self._make(self._instrumented(), {"_O": None})
        obs = _Observation(self._hooks)
        state = [h.state() for h in self._hooks]
        self._observed.__globals__["_O"] = obs
        with contextlib.ExitStack() as stack:
            for o in obs.observers:
                stack.enter_context(o)
            out = self._observed(*A)
        if state == [h.state() for h in self._hooks]:
            self._runs.append({"seen": obs.seen, "state": state})
        if len(self._runs) >= OBSERVE:
            self._lower()
        return out

    def _instrumented(self) -> list[str]:
        out = []
        for i, line in enumerate(self._body):
            c = self._cand.get(i)
            if c is None:
                out.append(line)
                continue
            ind, ins, outs = c
            out += [f"{ind}_O.b()", line,
                    f"{ind}_O.e({i}, ({''.join(v + ', ' for v in outs)}), ({''.join(v + ', ' for v in ins)}))"]
        return out

    def _make(self, body: list[str], extra: dict) -> Callable:
        src = self._head + "\n".join(f"        {ln}" for ln in body) + "\n    return _replay\n"
        self.source = src
        ns: dict[str, Any] = dict(self._globals)
        ns.update(extra)
        exec(compile(src, "<coretorch.compile lowered replay>", "exec"), ns)  # noqa: S102 - generated here
        return ns["_build"](*self._consts)

    def _lower(self) -> None:
        runs, self._runs = self._runs, []
        states = runs[0]["state"]
        if any(r["state"] != states for r in runs):
            self.fn = self.plain
            return
        body: list[str] = []
        extra: dict[str, Any] = {"_LOWER_PLAIN": self.plain}
        lowered = 0
        for i, line in enumerate(self._body):
            c = self._cand.get(i)
            seen = [r["seen"].get(i) for r in runs]
            code = None
            if c is not None and all(s is not None for s in seen):
                ind, ins, outs = c
                for h, hook in enumerate(self._hooks):
                    got = hook.lower([s[h] for s in seen], ins, outs, f"L{i}_{h}_")
                    if got is not None:
                        code, consts = got
                        extra.update(consts)
                        break
            if code is None or c is None:
                body.append(line)
                continue
            lowered += 1
            ind = c[0]
            body += [ind + ln for ln in code] + [f"{ind}    {line.strip()}"]
        if not lowered:
            self.fn = self.plain
            return
        checks = []
        for h, hook in enumerate(self._hooks):
            extra[f"_LOWER_STATE{h}"], extra[f"_LOWER_S{h}"] = hook.state, states[h]
            checks.append(f"_LOWER_STATE{h}() != _LOWER_S{h}")
        body = [f"if {' or '.join(checks)}:", f"    return _LOWER_PLAIN({self._params})", *body]
        self.fn = self._make(body, extra)
        self.lowered = lowered
        self._observed = None
