"""The optimizer step inside the replay, its hyper-parameters as inputs (in the spirit of PyTorch's
``capturable=True`` for CUDA graphs, without changing the update's arithmetic).

A captured step that calls ``optimizer.step()`` of an optimizer that opts in (``_replay_capturable = True`` in the
class itself: SGD, Adam, AdamW) replays it through an :class:`OptimizerReplay`: the first replay runs the step
eagerly while recording its kernels with the group's float hyper-parameters and the step counts it reads
(``Tensor.item()``) as :class:`~.symbolic.Sym` numbers; later calls run one generated function that reads
``lr``, betas, ... from the param groups, recomputes the numbers the step derives from them with the same Python
float operations (so the result is bitwise eager's), checks the branches the step took on them, loads parameters,
gradients and optimizer state from their owners, and runs the recorded kernels (no per-parameter dispatch, no
dict-of-state logic).  A scheduler changing ``lr`` (or OneCycleLR's momentum/betas) needs no recapture.

Adam/AdamW launch one multi-tensor kernel for a param group where the device has one (opencl's ``fused_adam_``), and
the recording keeps that launch; a run of per-parameter ``adam_step_`` launches (``foreach=False``) with the same
hyper-parameters is merged into one ``fused_adam_`` launch of the replay (:func:`_merge_adam_steps`).

It runs the step eagerly instead when: the optimizer's class does not opt in (user optimizers, subclasses), step
hooks are registered, a hyper-parameter is a tensor or ``differentiable=True``, a number escapes the symbolic arithmetic
(see :mod:`.symbolic`), or ``recompile_limit`` recordings were made.  A check of the replay that fails before
anything was written (another branch, a param group, a non-float hyper-parameter or the state changed) records the
step again; a recording that creates state (the first step) is not used.
"""
from __future__ import annotations

import math
import operator
import re
import weakref
from typing import Any

import numpy as np

from ..optim import optimizer as _optmod
from ..optim.optimizer import _manager
from ..tensor import Tensor
from . import hostfuse as _hostfuse, replay as _replay
from .capture import CaptureBusy, Path, Recorder, _find_hab_users, _itself
from .declining import table_of
from .config import config
from .symbolic import Sym

# optimizer -> {whether host fusion was asked for: its replay}
_replays: "weakref.WeakKeyDictionary[Any, dict[bool, OptimizerReplay]]" = weakref.WeakKeyDictionary()


def _numpy_number(v: Any) -> bool:
    """A numpy number whose arithmetic is not Python float's (np.float32, np.int64; np.float64 is a float)."""
    return isinstance(v, np.generic) and not isinstance(v, float)


def supports(opt: Any) -> bool:
    """Whether ``opt``'s class itself declares that its step can be recorded with symbolic hyper-parameters."""
    return bool(type(opt).__dict__.get("_replay_capturable"))


def replay_of(opt: Any, host_fusion: bool = False) -> "OptimizerReplay":
    """``opt``'s replay; ``host_fusion``: for a capture under host fusion (``mode="max-autotune"``: a merged Adam update
    may run as a host-fusion provider's multi-tensor kernel, see :func:`_merge_adam_steps`)."""
    rs = _replays.get(opt)
    if rs is None:
        rs = _replays[opt] = {}
    r = rs.get(host_fusion)
    if r is None:
        r = rs[host_fusion] = OptimizerReplay(opt, host_fusion)
    return r


def _item(table: Any, a: Any) -> float:
    """``Tensor.item()`` of the array ``a`` (the replay's read of a step count)."""
    return table.to_numpy(a).reshape(()).item()


_GLOBALS = dict(_replay._GLOBALS, SQRT=math.sqrt, ITEM=_item, IS=operator.is_)


def _plain_step(opt: Any) -> bool:
    """No hooks that must see the step (they run with the eager step)."""
    return not (opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks or
                _optmod._global_optimizer_pre_hooks or _optmod._global_optimizer_post_hooks or
                _manager.observing["optimizer_step"])


def _state_keys(opt: Any) -> dict:
    """Each parameter's state keys with their values' classes: a step that fills an entry the caller set to None
    (SGD's ``momentum_buffer``, which it then makes from the gradient) created state, as one that adds a key."""
    return {id(p): tuple([(k, v.__class__) for k, v in d.items()]) for p, d in opt.state.items()}


def _state_get(opt: Any, p: Tensor, k: str) -> Any:
    d = opt.state.get(p)
    return None if d is None else d.get(k)


class OptimizerReplay:
    """``optimizer.step()`` recorded once with symbolic hyper-parameters and replayed (see the module docstring)."""

    def __init__(self, opt: Any, host_fusion: bool = False):
        self._opt = weakref.ref(opt)
        self.host_fusion = host_fusion  # recorded for a capture under host fusion (see _merge_adam_steps)
        self.hosted = 0  # launches of a replay that run as a host-fusion provider's kernels
        self.fn: Any = None
        self.source = ""
        self.why = ""  # why the step runs eagerly (empty while it replays or has not been recorded yet)
        self.tries = 0
        self.replays = 0
        self.launches = 0  # kernel launches one replay runs

    def __call__(self) -> None:
        opt = self._opt()
        assert opt is not None  # called as replay_of(opt)(), so the optimizer is alive
        if _plain_step(opt):
            if self.fn is not None:
                try:
                    self.fn(opt)
                except _replay.Mismatch as e:
                    if e.unsafe:
                        raise RuntimeError("coretorch.compile: a branch of the replayed optimizer step went another "
                                           "way after state was written (a step count crossed a threshold); run "
                                           "the optimizer eagerly for this step function") from None
                    self.fn = None  # a group, a branch or the state changed before anything was written: record again
                else:
                    opt._opt_called = True
                    self.replays += 1
                    return
            if self.tries < config.recompile_limit:
                self.tries += 1
                self._record(opt)
                return
        opt.step()

    def _record(self, opt: Any) -> None:
        groups = opt.param_groups
        if any(g.get("differentiable") for g in groups):
            self.why, self.tries = "differentiable=True", 1 << 30
            opt.step()
            return
        if any(_numpy_number(v) or type(v) is tuple and any(map(_numpy_number, v)) for g in groups for v in g.values()):
            # (betas=(np.float32(0.9), 0.999): the recording runs the step with symbolic step counts, and numpy's
            # beta1 ** step of one is float64 where eager's is float32: that step's update was 1 ulp off)
            self.why, self.tries = "a hyper-parameter holds a numpy number", 1 << 30
            opt.step()
            return
        keys = _state_keys(opt)
        rec = Recorder(False, symbolic=True)
        _find_hab_users()
        busy = False
        try:
            rec.install()
        except CaptureBusy:  # another thread captures: this step runs eagerly, and is recorded at a later one
            self.tries -= 1
            busy = True
        if busy:  # (out of the except block: an exception of the step is not chained to CaptureBusy)
            opt.step()
            return
        try:
            self._recorded(rec, opt, keys)
        finally:
            rec.release()  # (held until the replay is built: see Recorder.remove)

    def _recorded(self, rec: Recorder, opt: Any, keys: dict) -> None:
        swapped: list = []
        try:
            self._track(rec, opt, swapped)
            opt.step()
            if not rec.breaks and not rec.escape:
                rec.finish(None, [])
        finally:
            for g, k, v in swapped:
                g[k] = v
            rec.remove(release=False)
        if rec.breaks or rec.escape:
            self.why, self.tries = (rec.breaks or [rec.escape])[0], 1 << 30
        elif _state_keys(opt) != keys:
            self.why = "the recorded step created optimizer state (recorded again at the next call)"
        else:
            self.why = ""
            self.fn, self.source = _build(rec, self.host_fusion)
            self.launches, self.hosted = rec.launches, rec.hosted

    def _track(self, rec: Recorder, opt: Any, swapped: list) -> None:
        """Paths of parameters, gradients and state; the prologue: the groups, their checks and Syms."""
        o = "OPT"  # an argument of the replay, not a constant: the replay must not keep its optimizer alive
        pro = rec.pro
        pro.append(f"if len({o}.param_groups) != {len(opt.param_groups)}: raise MISMATCH(False)")
        for gi, g in enumerate(opt.param_groups):
            gv = f"G{gi}"
            pro.append(f"{gv} = {o}.param_groups[{gi}]")
            pro.append(f"if len({gv}) != {len(g)}: raise MISMATCH(False)")
            for k, v in list(g.items()):
                key = f"{gv}[{k!r}]"
                if k == "params":
                    # the same list holding the same tensors (one replaced in place: the replay would update the old)
                    pro.append(f"if {key} is not {rec.const(v)} or len({key}) != {len(v)} or "
                               f"not all(map(IS, {key}, {rec.const(tuple(v))})): raise MISMATCH(False)")
                elif type(v) is float:
                    g[k] = self._leaf(rec, key, v)
                    swapped.append((g, k, v))
                elif type(v) is tuple and all(type(x) in (float, int) for x in v):
                    pro.append(f"if {key}.__class__ is not tuple or len({key}) != {len(v)}: raise MISMATCH(False)")
                    g[k] = tuple(self._leaf(rec, f"{key}[{i}]", x) if type(x) is float else x
                                 for i, x in enumerate(v))
                    for i, x in enumerate(v):
                        if type(x) is int:
                            pro.append(f"if {key}[{i}].__class__ is not int or {key}[{i}] != {x!r}: "
                                       "raise MISMATCH(False)")
                    swapped.append((g, k, v))
                elif isinstance(v, Tensor):
                    rec.sym_escape(f"the hyper-parameter {k!r} is a tensor")
                else:
                    c = rec.const(v)
                    pro.append(f"if {key}.__class__ is not {c}.__class__ or {key} != {c}: raise MISMATCH(False)")
            for p in g["params"]:
                c = rec.const(p)
                rec.paths.append(Path(c, _itself(p), False))
                rec.paths.append(Path(f"{c}._grad", _getter(p, "_grad"), True))
                if p._grad is None:  # the recorded step skips it: so must every replay
                    pro.append(f"if {c}._grad is not None: raise MISMATCH(False)")
                d = opt.state.get(p)
                for k, t in (d or {}).items():
                    if isinstance(t, Tensor):
                        # (``.get``: a missing entry after ``opt.state.clear()`` fails the prologue's load; the
                        # defaultdict's lookup created an empty state the eager step would not have made)
                        rec.paths.append(Path(f"{o}.state.get({c})[{k!r}]", _state_getter(opt, p, k), True))
        rec.snapshot()
        rec.refresh_owners()
        rec._owners0 = set(rec.owner)

    @staticmethod
    def _leaf(rec: Recorder, key: str, v: float) -> Any:
        name = f"h{len(rec.pro)}"
        rec.pro.append(f"{name} = {key}")
        rec.pro.append(f"if {name}.__class__ is not float: raise MISMATCH(False)")
        return Sym(v, name, False, rec.sym_token)


def _getter(obj: Any, attr: str):
    return lambda: getattr(obj, attr)


def _state_getter(opt: Any, p: Tensor, k: str):
    return lambda: _state_get(opt, p, k)


_CALL = re.compile(r"^if not (c\d+)\((.*)\): raise MISMATCH\((True|False)\)$")  # a checked adam_step_ line
_NAME = re.compile(r"\b[as]\d+(?:_\d+)?\b")


def _fused_table(kernel: Any) -> Any:
    """The kernel table whose ``adam_step_`` is ``kernel`` if it also has the multi-tensor ``fused_adam_``."""
    t = table_of("adam_step_", kernel)
    return t if t is not None and t.has("fused_adam_") else None


def _fused_or_each(fused: Any, single: Any, table: Any) -> Any:
    """``fused_adam_`` for a merged run, each tensor's ``adam_step_`` where it declines the lists (tensors of
    several dtypes: each launch of the run was taken, the multi-tensor kernel takes one dtype).  A tensor that
    ``adam_step_`` declines too (its data replaced by a view of another layout since the capture: eagerly the
    composite step ran) is stepped on contiguous copies written back: ``adam_step_``'s results are the composite's."""
    def fused_adam_(P, G, M, V, X, steps, *hp):
        if fused(P, G, M, V, X, steps, *hp):
            return True
        for i in range(len(P)):
            ops = [P[i], G[i], M[i], V[i], None if X is None else X[i]]
            if single(*ops, steps[i], *hp):
                continue
            cp = [None if a is None else table.contiguous(a) for a in ops]
            if not single(*cp, steps[i], *hp):
                if i:  # tensors before it were updated: not a clean abort
                    raise _replay.Mismatch(True)
                return False  # nothing written: the replay's check aborts it
            for a, c in zip(ops, cp):
                if a is not None and c is not a:
                    table.assign_(a, c)
        return True
    return fused_adam_


def _merge_adam_steps(rec: Recorder, hosted: bool = False) -> None:
    """Runs of per-parameter ``adam_step_`` launches with the same hyper-parameters (Adam with ``foreach=False``)
    become one ``fused_adam_`` launch where the device has it: it is ``adam_step_`` for each tensor (the same
    results), at the run's last launch, where every operand is loaded; nothing between the launches of a run may
    read what an earlier one wrote.  ``hosted`` (host fusion asked for): on a host-memory device without its own
    ``fused_adam_`` (cpu), a host-fusion provider's multi-tensor kernel (PoCL's, on numpy's memory) where one is
    offered: one launch for the group instead of ~12 numpy passes per parameter, within float32 rounding."""
    runs: list[list[int]] = [[]]
    for i in sorted(rec.info):
        name, kernel, _, kwargs, out = rec.info[i]
        if name != "adam_step_" or kwargs or out is not True:  # (False: refused, the composite followed)
            runs.append([])
            continue
        if runs[-1] and rec.info[runs[-1][0]][1] is not kernel:
            runs.append([])
        runs[-1].append(i)
    for run in runs:
        if len(run) < 2:
            continue
        single = rec.info[run[0]][1]
        table, multi = _fused_table(single), None
        if table is None and hosted:
            table = table_of("adam_step_", single)
            multi = _hostfuse.multi_tensor("fused_adam_", table) if table is not None else None
            if multi is None:
                table = None
        calls = [_CALL.match(rec.lines[i]) for i in run]
        if table is None or any(m is None for m in calls):
            continue
        toks = [m.group(2).split(", ") for m in calls if m is not None]
        ams = toks[0][4] != "None"
        if any(len(t) != 13 or t[6:] != toks[0][6:] or (t[4] != "None") != ams for t in toks):
            continue
        written = {v for t in toks[:-1] for v in (t[0], t[2], t[3], t[4])}
        inside = set(run)
        if any(written & set(_NAME.findall(rec.lines[i])) for i in range(run[0] + 1, run[-1]) if i not in inside):
            continue
        cols = ["[" + ", ".join(t[j] for t in toks) + "]" for j in range(6)]
        if not ams:
            cols[4] = "None"
        fused = _fused_or_each(multi or table.fused_adam_, single, table)
        rec.hosted += multi is not None
        for i in run[:-1]:
            rec.lines[i] = ""
            del rec.info[i]
        first = calls[0]
        assert first is not None
        rec.lines[run[-1]] = f"if not {rec.const(fused)}({', '.join(cols + toks[0][6:])}): " \
                             f"raise MISMATCH({first.group(3)})"
        _, _, args, kwargs, out = rec.info[run[-1]]
        rec.info[run[-1]] = ("fused_adam_", fused, args, kwargs, out)
        rec.launches -= len(run) - 1


_STATE_LOAD = re.compile(r"^(a\d+) = OPT\.state\.get\(c\d+\)\['[^']*'\]\._data$")


def _check_state_loads(rec: Recorder) -> None:
    """After each prologue load of a state tensor's array, a check of its array type (the device's), dtype and
    shape: ``load_state_dict`` moves state to the parameter's device (NAdam's cpu ``mu_product`` to opencl: the
    recorded cpu kernels ran on the opencl array)."""
    arrays = {id(a): a for a in rec.keep}
    names = {v: arrays.get(k) for k, v in rec.var.items()}
    out = []
    for ln in rec.pro:
        out.append(ln)
        m = _STATE_LOAD.match(ln)
        a = names.get(m.group(1)) if m else None
        if m and a is not None:
            v = m.group(1)
            out.append(f"if {v}.__class__ is not {rec.const(type(a))} or {v}.dtype is not {rec.const(a.dtype)} or "
                       f"{v}.shape != {rec.const(tuple(a.shape))}: raise MISMATCH(False)")
    rec.pro[:] = out


def _build(rec: Recorder, hosted: bool = False) -> tuple[Any, str]:
    _merge_adam_steps(rec, hosted)
    _check_state_loads(rec)
    pro = "\n".join(f"            {ln}" for ln in rec.pro + rec.checks)
    pl = _replay._plan_of(rec, 0, None, set())
    body = _replay._source(pl.wrap(rec, _replay._with_frees([ln for ln in rec.lines if ln], "None"), "return None"))
    names = [f"c{i}" for i in range(len(rec.consts))]
    src = (f"def _build({', '.join(names)}):\n    def _step(OPT):\n        try:\n{pro}\n"
           "        except Exception:  # a group, its hyper-parameters, a gradient or state changed: run eagerly\n"
           f"            raise MISMATCH(False) from None\n{body}\n    return _step\n")
    ns: dict[str, Any] = dict(_GLOBALS)
    exec(compile(src, "<coretorch.compile optimizer replay>", "exec"), ns)  # noqa: S102 - source generated above
    return ns["_build"](*rec.consts), src
