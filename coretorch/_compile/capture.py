"""Capture: run a function eagerly once while recording every kernel launch at the kernel-table level.

During a capture the kernels of every device's ``KernelTable`` are replaced by recording wrappers (restored
afterwards: eager code outside a capture pays nothing).  A launch is recorded as Python source for the replay
function (see :mod:`.replay`): each array a kernel returns gets a variable; an array a kernel reads that no recorded
kernel produced is *external* and is loaded, at the point of its first use, from the tensor that owns it (a tensor
argument, a parameter, its ``.grad``, a buffer; found through the persistent state reachable from the function, or
once at the end through ``gc.get_referrers``).  Keeping a reference to every array seen keeps ``id()``s unique.

``Optimizer.step()`` and ``LRScheduler.step()`` are *segments*: the persistent state changed so far is written back
(exactly as eager leaves it: new ``p.grad`` tensors, ``p.grad = None``, functional updates of ``_data``) and the
step is called: an optimizer that opts in through its :class:`~.optim.OptimizerReplay` (its own recording, with
``lr`` & co. as inputs: a *symbolic* Recorder, see :mod:`.symbolic`), any other as the real ``step``, so
learning-rate schedulers and Adam's step-dependent scalars need no recapture.

Host reads: a core op that reads one value back (``to_numpy`` of a one-element array, ``host_all_below``) to decide
or to compute on the host is recorded as a *checked read*: the replay reads it again and compares it with the
captured value; a difference aborts the replay (and runs the call eagerly) when nothing persistent was written yet,
else raises.  User-level reads (``.item()``, ``.tolist()``, ``.numpy()``, ``bool(t)``...), whole-array reads and
data-dependent shapes (``nonzero``) are graph breaks: that call's result (the eager capture run) stands, and later
calls with the same guards run eagerly.
"""
from __future__ import annotations

import builtins
import functools
import gc
import re
import sys
import types
from threading import Lock, get_ident
from typing import Any, Callable

import numpy as np

from .. import _backend
from ..ops import _util
from ..optim import lr_scheduler as _sched
from ..optim import optimizer as _optim
from ..tensor import Tensor
from . import foreign as _foreign, hostrng as _hostrng, layouts as _layouts, made as _made, symbolic as _sym
from . import attrs as _attrs, dynfloat as _dynfloat, rngundo as _rngundo, tailreads as _tail, versions as _versions
from .config import config as _compile_config
from .frames import _internal, _pairwise, _user_frame
from .owners import _memory_of, _tensor_key
from .exc import Unsupported
from .declining import on_copies as _on_copies
from .roots_state import check_late_grads, check_orphans, scheduler_counts
from .results import ResultEncoding, _tensors_made
from .symbolic import Sym

# kernels whose result is host information about a layout (decided by shapes, which the guards fix): not replayed
QUERY = frozenset({"is_contiguous", "strides", "storage_offset", "check_mark", "same_storage"})
# kernels that write into an existing array or advance a generator: after one, aborting a replay is unsafe
MUTATING = frozenset({"assign_", "setitem_", "index_put_", "index_reduce_", "iadd", "isub", "imul", "idiv", "axpy_",
                      "adam_step_", "fused_adam_", "fused_sgd_",
                      "uniform_", "normal_", "rng_fill_", "rng_seed", "rng_set_state", "manual_seed", "rand", "randn",
                      "randint", "rng_randint", "rng_poisson", "rng_multinomial", "rng_randperm"})
# kernels whose bool result says whether they ran ("False, nothing written": the caller then takes another path)
DECLINING = frozenset({"adam_step_", "fused_adam_", "fused_sgd_"})
# kernels whose output shape depends on the data: a graph break
DATA_SHAPED = frozenset({"nonzero"})
# Tensor methods that hand a value to Python: a graph break when user code calls them
# (data_ptr: an address, another each call; a graph break in PyTorch too)
USER_READS = ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__", "data_ptr")

state: dict[str, Any] = {"recorder": None}  # the active Recorder (is_compiling() reads it)
# A capture patches process-wide functions (the kernel tables' kernels, Tensor methods, builtins.next, host RNG):
# two threads capturing at once saved each other's patches as the originals and left them installed.  One capture at
# a time: a thread that finds another capturing runs its call eagerly (CaptureBusy).
_CAPTURE_LOCK = Lock()
# a replay line loading a tensor's array (``a12 = c3._data``, ``a14 = A[0]._grad._data``): the variable, the source
LOAD_LINE = re.compile(r"^(a\d+) = ([\w\[\]'\". ]*\._data)$")


class CaptureBusy(Exception):
    """Raised by :meth:`Recorder.install` while another thread captures: the caller runs eagerly this time."""


def host_transfer(host: Any, copy: Any) -> None:
    """Core code copied the host value ``host`` of an array (just read) to make another device's array of the copy:
    under a capture the replay repeats the transfer (see :meth:`Recorder.transfer`)."""
    rec = state["recorder"]
    if rec is not None and rec.active and get_ident() == rec.thread:
        rec.transfer(host, copy)


def varying_read(why: str) -> None:
    """Core code is about to read a value on the host that changes from call to call (a step counter, GradScaler's
    scale and found_inf) after the step has written state: under a capture this is a graph break, so the call runs
    eagerly (a checked read would differ at the next call, after the step's writes, and could only raise).  Also
    the graph break of ``torch.compiler.disable``'s functions and ``torch._dynamo.graph_break()``."""
    rec = state["recorder"]
    if rec is not None and rec.active and not rec.symbolic and get_ident() == rec.thread:
        rec.graph_break(why)


def data_read(why: str) -> None:
    """Core code is about to read on the host a value of the data that decides a shape (``F.one_hot`` without
    ``num_classes``: the largest class): a checked read, which a replay that differs falls back to eager from; but
    after the call wrote state (``x.add_(1)`` first) it could only raise where eager runs, so that is a graph break."""
    rec = state["recorder"]
    if rec is not None and rec.active and not rec.symbolic and get_ident() == rec.thread and (
            rec.mutated or rec.segments):
        rec.graph_break(why)


def _itself(obj: Any) -> Callable[[], Any]:
    """A getter that returns ``obj``."""
    return lambda: obj


class Path:
    """Where a persistent tensor lives: ``expr`` (source, in the replay function) and ``get()`` (now)."""

    __slots__ = ("expr", "get", "settable")
    expr: str
    get: Callable[[], Any]
    settable: bool

    def __init__(self, expr: str, get: Callable[[], Any], settable: bool):
        self.expr, self.get, self.settable = expr, get, settable


class Recorder(ResultEncoding):
    def __init__(self, fullgraph: bool, symbolic: bool = False):
        self.fullgraph = fullgraph
        self.symbolic = symbolic  # an optimizer step recorded with Syms (see .optim): no segments, no float consts
        self.sym_token = next(_sym.TOKENS)  # (its Syms': see symbolic.ours)
        self.pro: list[str] = []  # symbolic: the replay's prologue (loads, hyper-parameter lines, their checks)
        self.escape = ""  # symbolic: why a number of the step became a constant (the recording is not used)
        self._owners0: set[int] = set()
        self.lines: list[str] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, str] = {}
        self.var: dict[int, str] = {}      # id(array) -> variable name
        self.keep: list[Any] = []          # every array seen: ids stay unique
        self._current = ""
        self._mem: set[int] = set()  # ids of the memory (numpy base, cl buffer) of every array seen
        self.pending: list[tuple[int, Any, str]] = []  # (line index, array, var): externals without a known owner
        self.checks: list[str] = []  # lines the replay runs first (the layouts of tensors that are no guard)
        self.iterators: dict[int, Any] = {}  # the iterators the step reaches, by id (see iterators_of)
        self.owner: dict[int, str] = {}    # id(array) -> source of its owner's array, from the tracked paths
        self.paths: list[Path] = []
        self.optimizers: list = []  # the optimizers the step reaches (their state tensors: see _resolve_pending)
        self._host_reads: dict[int, tuple] = {}  # id(host value) -> (line, source, value) of a checked read
        self.snap: dict[str, tuple] = {}  # expr -> (tensor, its array, its version, grad_fn, requires_grad)
        self.breaks: list[str] = []
        self.launches = 0
        self.fused = 0  # launches saved by fusion.fuse (set by replay.build / build_parts)
        self.planned = (0, 0)  # (temporaries, buffers) of plan.plan (set by replay.build / build_parts)
        self.layout_checked: set[str] = set()  # persistent arrays whose layout a replay checks (plan.py)
        self.hosted = 0  # launches hostfuse.apply replaced (set by replay.build / build_parts)
        self.host_fusion = False  # the capture's compile call asks for host fusion (replay.capture sets it)
        self.sched_stepped: set[int] = set()  # ids of the schedulers its scheduler segments stepped
        self.info: dict[int, tuple] = {}   # line -> (kernel name, kernel, args, kwargs, array): for fusion.py
        self.mutated, self.active = False, True
        self.drawn: list = []  # (table, generator) drawn from before any write (see rngundo.py)
        self.undo_saved = self.no_undo = False  # their states read first; no undoing past here
        self.born: int | None = None  # made.now() at the call's start, and (optimizers, their group numbers) ...
        self.watch: tuple | None = None  # ... outside the segments (replay.capture sets them; see made.py)
        self.user_read = self.segments = 0
        self.tail_fn: Any = None  # the compiled function (reads at its return: tailreads.py)
        self.tail: list[_tail.Placeholder] = []
        self.tail_appends: list[tuple] = []  # (ListRef, Placeholder): a read appended to a list (tailreads.py)
        self.dyn = False  # the call's float arguments are Syms (see dynfloat.py)
        self.sym_values: dict[str, float] = {}  # the numbers of the Syms computed (name -> value)
        self._saved: list[tuple[Any, str, Any]] = []
        self._array_types: tuple = ()
        self.thread = get_ident()
        self.persistent: set[int] = set()  # ids of objects reachable before the call (see persistent_of)
        self.arg_containers: frozenset = frozenset()  # ids of the argument containers (see argtree.py)
        self.arg_identity = False  # the result returns an argument container itself (see argtree.py)
        self.loaded: set[int] = set()  # ids of the arrays read from their owners (not made by a recorded kernel)
        self.attr_exprs: dict[str, tuple] = {}  # path -> (dict, name) of the modules' tensor attributes (attrs.py)
        self.attr_first: dict[int, list] = {}  # id(array) -> [(path, tensor)] of those attributes at the call's start
        self.attr_outputs: list | None = None  # a compiled module's: the attributes stored on its node (attrs.py)
        self.attr_made: dict[str, Any] = {}  # attribute -> the tensor a replay makes for it (see attrs.stored)
        self.attr_items: set[str] = set()  # the paths of the tensors of tuple attributes (stored with the tuple)
        self.attr_graphs: set[str] = set()  # the attributes a compiled function stored a graph's tensor in (attrs.py)

    # ---- constants and variables --------------------------------------------------------------------------------
    def const(self, obj: Any) -> str:
        name = self._const_ids.get(id(obj))
        if name is None:
            name = f"c{len(self.consts)}"
            self.consts.append(obj)
            self._const_ids[id(obj)] = name
        return name

    def new_var(self, arr: Any) -> str:
        name = f"a{len(self.keep)}"
        self.keep.append(arr)
        mem = _memory_of(arr)
        if mem is not None:
            self._mem.add(id(mem))
            self.keep.append(mem)
        self.var[id(arr)] = name
        return name

    def read(self, arr: Any) -> str:
        """The variable of an array a kernel reads: produced earlier, or loaded now from its owner."""
        v = self.var.get(id(arr))
        if v is not None:
            return v
        src = self.owner.get(id(arr))
        if src is None:
            self.refresh_owners()
            src = self.owner.get(id(arr))
        if src is None:
            mem = _memory_of(arr)
            if mem is not None and id(mem) in self._mem:  # a view of a recorded array, made on the host
                self.graph_break(f"kernel '{self._current}' read a view made outside the recorded kernels")
        v = self.new_var(arr)
        self.loaded.add(id(arr))
        if src is not None and id(arr) in self.attr_first:  # (a module's tensor attribute as the call found it)
            _attrs.on_load(self, src, self.attr_first.pop(id(arr)))
        if src is None:
            self.pending.append((len(self.lines), arr, v))
            self.lines.append("")  # filled in by finish()
        elif self.symbolic and id(arr) in self._owners0:  # state known at the start: loaded (and checked) first
            self.pro.append(f"{v} = {src}")
        else:
            self.lines.append(f"{v} = {src}")
        return v

    def encode(self, obj: Any) -> str:
        if isinstance(obj, self._array_types):
            return self.read(obj)
        if _sym.ours(obj, self):
            return obj.name
        if isinstance(obj, (tuple, list)) and any(self._has_array(o) or isinstance(o, Sym) for o in obj):
            inner = ", ".join(self.encode(o) for o in obj)
            return f"({inner},)" if isinstance(obj, tuple) else f"[{inner}]"
        if obj is None or type(obj) in (bool, int, str):  # exact types: an IntEnum's repr is no literal
            return repr(obj)
        if self.symbolic and _escaped(obj):
            self.sym_escape(f"kernel '{self._current}' got the number {obj!r} computed outside the recorded "
                            "arithmetic")
        return self.const(obj)

    def _target(self, out: Any) -> str:
        """The assignment target that names every array of a kernel's (nested) result: ``(a1, (a2, a3,), _,)``."""
        if isinstance(out, self._array_types):
            return self.new_var(out)
        if isinstance(out, (tuple, list)) and self._has_array(out):
            return f"({', '.join(self._target(o) for o in out)},)"
        return "_"

    def _has_array(self, obj: Any) -> bool:
        if isinstance(obj, self._array_types):
            return True
        return isinstance(obj, (tuple, list)) and any(self._has_array(o) for o in obj)

    # ---- persistent state -----------------------------------------------------------------------------------------
    def track(self, args: list, params: list, buffers: list, tensors: list, attrs: list | tuple = ()) -> None:
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                self.paths.append(Path(f"A[{i}]", _itself(a), False))
                # its .grad (accumulated by a backward in the step, as a parameter's; or read or assigned by the
                # step, ``w.grad = g`` on any tensor: a replay loads and writes it as eager does)
                self.paths.append(Path(f"A[{i}]._grad", functools.partial(getattr, a, "_grad"), True))
        for p in params:
            c = self.const(p)
            self.paths.append(Path(c, _itself(p), False))
            self.paths.append(Path(f"{c}._grad", functools.partial(getattr, p, "_grad"), True))
        for d, k in buffers:
            self.paths.append(Path(f"{self.const(d)}[{k!r}]", functools.partial(d.get, k), True))
        for t in tensors:
            c = self.const(t)
            self.paths.append(Path(c, _itself(t), False))
            # its .grad as a parameter's (w = torch.randn(3, requires_grad=True)), and any tensor's: a step may read
            # or assign it without requires_grad (a replay used to keep the capture's .grad tensor)
            self.paths.append(Path(f"{c}._grad", functools.partial(getattr, t, "_grad"), True))
        for d, k in attrs:  # modules' plain tensor attributes: read and written where they live (see attrs.py)
            expr = f"{self.const(d)}[{repr(k) if isinstance(k, str) else self.const(k)}]"  # (a cache's tuple key)
            self.paths.append(Path(expr, functools.partial(d.get, k), True))
            self.attr_exprs[expr] = (d, k)
            v = d.get(k)
            for i in range(len(v) if type(v) is tuple else 0):  # a tuple's tensors: loaded where they live
                self.paths.append(Path(f"{expr}[{i}]", functools.partial(_attrs.item, d, k, i), True))
                self.attr_items.add(f"{expr}[{i}]")
        self.snapshot()
        self.refresh_owners()
        for e in (*self.attr_exprs, *self.attr_items):
            t = self.snap[e][0]
            if isinstance(t, Tensor):
                self.attr_first.setdefault(id(t._data), []).append((e, t))
        self._arg_aliases(args)

    def _arg_aliases(self, args: list) -> None:
        """An argument that is a persistent tensor's array (``f(w)`` with ``w`` in the closure too): the recording
        cannot tell the two apart (both read as the argument), so the replay checks first that they are still one
        array, and captures again where not (another tensor passed: eager reads the closure's ``w`` as ``w``)."""
        arrays = {id(a._data): i for i, a in enumerate(args) if isinstance(a, Tensor)}
        for p in self.paths:
            if p.expr.startswith("A["):
                continue
            t = p.get()
            i = arrays.get(id(t._data)) if isinstance(t, Tensor) else None
            if i is not None:
                self.checks.append(f"if A[{i}]._data is not getattr({p.expr}, '_data', None): "
                                   "raise MISMATCH(False, True)")

    def refresh_owners(self) -> None:
        for p in self.paths:
            t = p.get()
            if isinstance(t, Tensor) and id(t._data) not in self.owner:
                self.owner[id(t._data)] = f"{p.expr}._data"
                self.keep.append(t._data)
                mem = _memory_of(t._data)
                if mem is not None:
                    self._mem.add(id(mem))
                    self.keep.append(mem)

    def snapshot(self) -> None:
        self.snap = {}
        for p in self.paths:
            t = p.get()
            self.snap[p.expr] = (t, t._data, t._vc[0], t._gf, t._rg) if isinstance(t, Tensor) else (t, None, 0, 0, 0)

    def write_back(self) -> None:
        """Source that leaves the persistent state as eager has left it since the last snapshot."""
        counters: set = set()
        stored: dict[int, str] = {}  # id(tensor stored) -> its first path (a tensor reached by two paths: one store)
        for p in self.paths:
            t = p.get()
            t0, d0, v0, g0, r0 = self.snap[p.expr]
            if t is t0:
                if isinstance(t, Tensor) and t._gf is not g0:  # (x.mul_(w) recorded in x's graph, x.detach_():
                    self.graph_break(f"the call changed the autograd graph of {p.expr} (an in-place op recorded in "
                                     "its graph, detach_()), which a replay would not")  # a backward through it
                    continue  # would miss the op)
                if isinstance(t, Tensor) and t._rg is not r0:  # a leaf's requires_grad_() (an FGSM step's input)
                    self.lines.append(f"{p.expr}._rg = {t._rg!r}")
                if isinstance(t, Tensor) and t._data is not d0:
                    self.lines.append(f"{p.expr}._data = {self._known(t._data, p.expr)}")
                if isinstance(t, Tensor) and t._vc[0] != v0 and id(t._vc) not in counters:
                    # modified in place (x.add_(1), a buffer's running mean): its version counter (shared with its
                    # views) as eager's, so a backward that saved it raises (the replay left it unchanged)
                    counters.add(id(t._vc))
                    self.lines.append(f"{p.expr}._vc[0] += {t._vc[0] - v0}")
                continue
            if not p.settable:
                self.graph_break(f"the tensor at {p.expr} was replaced")
                continue
            if p.expr in self.attr_items:  # (a tuple attribute's tensor: its tuple's path stores the new one)
                continue
            if p.expr in self.attr_exprs:
                line = _attrs.stored(self, p.expr, t, self.attr_outputs)
                if line is not None:
                    self.lines.append(line)
            elif t is None:
                self.lines.append(f"{p.expr} = None")
            elif isinstance(t, Tensor):
                if type(t) is not Tensor or t.grad_fn is not None or t._rg:
                    self.graph_break(f"a {type(t).__name__} with autograd state was stored at {p.expr}")
                    continue
                if id(t) in stored:  # (f(w) with w in the closure too: eager stored one tensor, w's own .grad;
                    self.lines.append(f"{p.expr} = {stored[id(t)]}")  # a second NEWGRAD would add it to itself)
                    continue
                v, dt = self._known(t._data, p.expr), self.const(t.dtype)
                made = f"MAKE({v}, {dt}, {self.const(t._be)}{_versions.made(t)})"
                if t0 is None and p.expr.endswith("._grad"):  # a first gradient: another thread's backward may
                    made = f"NEWGRAD({p.expr[:-6]}, {made})"  # store one meanwhile (see results._new_grad)
                self.lines.append(f"{p.expr} = {made}")
                stored[id(t)] = p.expr
        self.snapshot()

    def _known(self, arr: Any, where: str) -> str:
        v = self.var.get(id(arr))
        if v is None:
            self.graph_break(f"the array stored at {where} was made outside the recorded kernels")
            return "None"
        return v

    # ---- events ---------------------------------------------------------------------------------------------------
    def graph_break(self, why: str, where: str | None = None) -> None:
        """Record a break (``where``: its place, if not the innermost user frame now)."""
        msg = f"{why} (at {where or _user_frame(core=True)})"
        if self.fullgraph:
            raise Unsupported(f"coretorch.compile(fullgraph=True): graph break: {msg}")
        self.breaks.append(msg)

    def launch(self, name: str, kernel: Callable, args: tuple, kwargs: dict) -> Any:
        if _sym._active[0] is self:  # kernels get plain floats (numpy reads a Sym as float64)
            if self.dyn and name not in _dynfloat.KERNELS and self.active and \
                    any(map(_sym.has_sym, (*args, *kwargs.values()))):
                self.sym_escape(f"kernel '{name}' took a float argument of the call (only elementwise kernels do)")
            out = kernel(*map(_sym.plain, args), **{k: _sym.plain(v) for k, v in kwargs.items()})
        else:
            out = kernel(*args, **kwargs)
        if not self.active or self.breaks or get_ident() != self.thread:  # another thread's ops are not the step's
            return out if get_ident() == self.thread else _foreign.note(self, name, args, out, MUTATING)
        self._current = name
        if name in DATA_SHAPED:
            self.graph_break(f"'{name}' gives a shape that depends on the data")
            return out
        if name == "index" and _bool_key(args[1] if len(args) > 1 else None):
            self.graph_break("boolean-mask indexing gives a shape that depends on the data")
            return out
        if name == "to_numpy":
            return self._host_read(kernel, args[0], out)
        if name == "rng_initial_seed":  # a generator's seed: the caller may reseed it between calls
            return _hostrng.seed_read(self, kernel, args[0], out)
        if name == "storage_offset" and self.owner.get(id(args[0])) is not None and not _pairwise():
            # an input's offset (no guard: a view of a batch at another place captures again where the step reads
            # it, as_strided's storage_offset); not for an overlap check, which compares two arrays' offsets (the
            # guards key arguments' offsets relative to each other, and fusion checks persistent loads' positions)
            self.checks.append(f"if {self.const(kernel)}({self.owner[id(args[0])]}) != {out!r}: "
                               "raise MISMATCH(False, True)")
        if name in _layouts.READS:  # (the guards key the arguments' layouts, not the persistent arrays': layouts.py)
            _layouts.queried(self, name, args[0])
        if name in QUERY or out is None and name == "view":  # (a view the strides forbid: decided by the guards)
            return out
        if name == "from_numpy" and id(args[0]) not in self.var:  # a host constant: a fresh copy each replay
            if self.symbolic:
                self.sym_escape("a tensor was made from host data inside the optimizer step")
            a0 = args[0]
            # an array the roots hold (or a view of one): its values at the replay (a buffer the caller refills in
            # place; over 1 MiB it is keyed by identity only); any other: the capture's values
            live = isinstance(a0, np.ndarray) and id(_memory_of(a0)) in self.persistent
            src = f"{self.const(kernel)}(CP({self.const(a0 if live else np.array(a0, copy=True))}))"
        else:
            enc = ", ".join([self.encode(a) for a in args] + [f"{k}={self.encode(v)}" for k, v in kwargs.items()])
            src = f"{self.const(kernel)}({enc})"
        unsafe = self.mutated or self.segments > 0  # whether an abort here would leave a write behind
        if name in DECLINING and out is False:  # it declined and wrote nothing: what the caller did instead is recorded
            return out
        self.launches += 1
        if name in MUTATING and (self.mutated or self.segments or not _rngundo.note(self, name, kernel, args)):
            self.mutated = True
        if name in DECLINING:  # a replay whose operands it declines (another layout) must not skip the update
            retry = self.const(_on_copies(name, kernel, self._array_types))
            self.lines.append(f"if not {retry}({src[src.index('(') + 1:]}: raise MISMATCH({unsafe})")
        elif isinstance(out, self._array_types):
            self.lines.append(f"{self.new_var(out)} = {src}")
        elif self._has_array(out):  # a tuple of results, nested ones included (saved activations in a tuple)
            self.lines.append(f"{self._target(out)[1:-2]}, = {src}")
        else:
            self.lines.append(src)
        self.info[len(self.lines) - 1] = (name, kernel, args, kwargs, out)
        return out

    def _host_read(self, kernel: Callable, arr: Any, out: Any) -> Any:
        if self.user_read:
            return out
        value = np.asarray(out)
        # (small integers before any write, a PackedSequence's or ctc_loss's lengths: checked as a number is)
        if value.size > 1 and (value.size > 1024 or value.dtype.kind not in "iu" or self.mutated or self.segments):
            self.graph_break("a core op read a whole array back to the host")
            return out
        v = self.read(arr) if isinstance(arr, self._array_types) else self.encode(arr)
        _versions.flush(self)  # (an error at this read leaves the version counters as eager's)
        self._host_reads[id(out)] = (len(self.lines), f"{self.const(kernel)}({v})", out)
        self.lines.append(f"if CHK({self.const(kernel)}({v}), {self.const(value.tobytes())}): "
                          f"raise {_rngundo.abort(self)}")
        return out

    def transfer(self, host: Any, copy: Any) -> None:
        """Core code made ``copy`` of the host value ``host`` it just read (``align_devices``: a 0-d cpu operand):
        the replay reads it again and transfers it, not checks it (a cpu step count the step updates)."""
        e = self._host_reads.get(id(host))
        if e is None or e[2] is not host or not self.lines[e[0]].startswith("if CHK("):
            return
        i, call, _ = e
        self.lines[i] = f"{self.new_var(copy)} = {call}"

    def checked_host_all_below(self, table, arr, n: int, low: int = 0) -> bool:
        if not self.active or get_ident() != self.thread:
            return _orig_host_all_below(table, arr, n, low)
        self.active = False  # its whole-array read is the check itself
        try:
            result = _orig_host_all_below(table, arr, n, low)
        finally:
            self.active = True
        if not self.breaks:
            v = self.read(arr)
            _versions.flush(self)
            self.lines.append(f"if HAB({self.const(table)}, {v}, {n!r}, {low!r}) is not {result!r}: "
                              f"raise {_rngundo.abort(self)}")
        return result

    def segment_start(self, optimizer, args, kwargs) -> None:
        """Before ``optimizer.step()`` (a global pre hook): ``args`` starts with the optimizer.  An optimizer whose
        step can be recorded with symbolic hyper-parameters (SGD, Adam, AdamW) replays through its
        :class:`~.optim.OptimizerReplay`; any other runs eagerly."""
        if self.symbolic:  # the optimizer step being recorded itself
            return
        from . import optim as _optim_replay  # (a cycle: .optim records with this module's Recorder)
        method = optimizer.step
        if len(args) == 1 and not kwargs and _optim_replay.supports(optimizer):
            method = _optim_replay.replay_of(optimizer, self.host_fusion)
        self._segment(method, tuple(args[1:]), dict(kwargs))

    # ---- symbolic numbers (an optimizer step's hyper-parameters and step counts, see .symbolic) ---------------------
    def sym(self, value: float, src: str, dep: bool) -> Sym:
        """A new Sym computed by ``src``: a prologue line, or in place when it depends on a value read in the step."""
        name = f"s{self.segments}_{len(self.pro) + len(self.lines)}"
        (self.lines if dep else self.pro).append(f"{name} = {src}")
        self.sym_values[name] = value  # (a module's backward takes it from the capture call's context: module.py)
        return Sym(value, name, dep, self.sym_token)

    def sym_check(self, src: str, value: bool, dep: bool) -> None:
        """A branch on a Sym: the replay checks that it goes the same way (else the step runs eagerly)."""
        if dep:
            self.lines.append(f"if ({src}) is not {value!r}: raise MISMATCH({self.mutated})")
        else:  # (a float argument's: another capture may have taken the other way, see dynfloat.py)
            self.pro.append(f"if ({src}) is not {value!r}: raise MISMATCH(False, False, {self.dyn})")

    def sym_escape(self, how: str) -> None:
        if not self.escape:
            self.escape = f"{how} (at {_user_frame(core=True)})"

    def sym_item(self, t: Tensor, orig: Callable) -> Any:
        """``Tensor.item()`` in a symbolic recording: a Sym read again by the replay at this point."""
        self.user_read += 1
        try:
            value = orig(t)
        finally:
            self.user_read -= 1
        if type(value) is not float:
            self.sym_escape("Tensor.item() of a non-float tensor")
            return value
        v = self.read(t._data)
        name = f"s{self.segments}_{len(self.pro) + len(self.lines)}"
        self.lines.append(f"{name} = ITEM({self.const(t._be)}, {v})")
        return Sym(value, name, True, self.sym_token)

    def _segment(self, method: Callable, args: tuple, kwargs: dict) -> None:
        if not self.active or self.breaks or get_ident() != self.thread:
            return
        if why := _made.why_not(self, method, args, kwargs):
            self.graph_break(why)
            return
        self.write_back()
        self.lines.append(f"{self.const(method)}(*{self.const(args)}, **{self.const(kwargs)})")
        self.segments += 1
        self.active = False

    def segment_end(self, optimizer=None, args=None, kwargs=None) -> None:
        if get_ident() != self.thread:
            return
        if self.active:  # (after a graph break the step ran unrecorded: its state is no change made outside it)
            if self.breaks:
                _made.rewatch(self)
            return
        self.active = self.mutated = True
        if self.dyn:  # (an optimizer's own recording inside the segment set it back)
            _sym._active[0] = self
        self.snapshot()
        self.refresh_owners()
        _made.rewatch(self)

    def _scheduler_step(self, orig: Callable) -> Callable:
        rec = self

        def step(sched, *args, **kwargs):
            if not rec.active or rec.breaks or get_ident() != rec.thread:
                return orig(sched, *args, **kwargs)
            # the replay calls the scheduler's own step, not this wrapper (bound at the capture, it would record the
            # segment again into the finished capture at every replay)
            rec._segment(types.MethodType(orig, sched), args, kwargs)
            before = scheduler_counts()
            try:
                return orig(sched, *args, **kwargs)
            finally:
                rec.segment_end()
                # the schedulers this segment stepped (a SequentialLR's or ChainedScheduler's own too)
                rec.sched_stepped.update(i for i, c in scheduler_counts().items() if before.get(i) != c)
        return step

    # ---- install / remove -----------------------------------------------------------------------------------------
    def install(self) -> None:
        if not _CAPTURE_LOCK.acquire(blocking=False):
            raise CaptureBusy
        self._locked = True
        self._tables_at = _backend.TABLES_CHANGED[0]
        try:
            self._patch()
        except BaseException:
            self.remove()
            raise

    def _patch(self) -> None:
        tables = {id(t): t for t in _backend._tables.values()}.values()
        self._array_types = tuple({t.backend.array_type for t in tables if hasattr(t.backend, "array_type")})
        for table in tables:
            for name in table.names:
                kernel = table.__dict__.get(name)
                if kernel is None:
                    continue
                self._saved.append((table, name, kernel))

                def wrap(*a, _n=name, _k=kernel, **kw):
                    return self.launch(_n, _k, a, kw)
                setattr(table, name, wrap)
        self._saved.append((_util, "host_call", _util.host_call))
        _util.host_call = lambda fn, *a: self.launch(f"host:{fn.__name__}", fn, a, {})
        for mod in _HAB_USERS:
            self._saved.append((mod, "host_all_below", mod.host_all_below))
            mod.host_all_below = self.checked_host_all_below
        for meth in USER_READS:
            orig = Tensor.__dict__[meth]
            self._saved.append((Tensor, meth, orig))
            setattr(Tensor, meth, self._user_read(meth, orig))
        if self.symbolic:  # an optimizer step alone: no segments, no schedulers
            _sym._active[0] = self
            state["recorder"] = self
            return
        if self.iterators:  # next(it) of an iterator the step reaches (a data loader's): no replay advances it
            self._saved.append((builtins, "next", builtins.next))
            builtins.next = self._next(builtins.next)
        for mod, name, orig in _hostrng.draws():  # random.random(), np.random.rand(): a number the replay would reuse
            self._saved.append((mod, name, orig))
            setattr(mod, name, self._host_draw(f"{mod.__name__}.{name}", orig))
        for cls in _subclasses(_sched.LRScheduler):  # a scheduler stepped inside the function: an eager segment
            if "step" in cls.__dict__:
                self._saved.append((cls, "step", cls.__dict__["step"]))
                setattr(cls, "step", self._scheduler_step(cls.__dict__["step"]))
        self._hooks = (_optim.register_optimizer_step_pre_hook(self.segment_start),
                       _optim.register_optimizer_step_post_hook(self.segment_end))
        state["recorder"] = self

    def tables_changed(self) -> bool:
        """Whether the kernel tables were refilled since the capture patched them (by another thread: a plugin
        registering kernels), which put the plain kernels back over the recording ones."""
        return _backend.TABLES_CHANGED[0] != self.__dict__.get("_tables_at", _backend.TABLES_CHANGED[0])

    def remove(self, release: bool = True) -> None:
        """Undo the patches; ``release=False`` keeps the lock until release() (after the replay's build, which reads
        the kernel tables another thread's capture would patch)."""
        for obj, name, orig in reversed(self._saved):
            setattr(obj, name, orig)
        self._saved.clear()
        if self.tables_changed():
            _backend._refresh_tables()  # refilled during the capture: the entries set back were the old ones
        for h in getattr(self, "_hooks", ()):
            h.remove()
        state["recorder"] = None
        _sym._active[0] = None
        if release:
            self.release()

    def release(self) -> None:
        if self.__dict__.pop("_locked", False):
            _CAPTURE_LOCK.release()

    def _next(self, orig: Callable) -> Callable:
        rec = self

        def next_(it, *default):
            if id(it) in rec.iterators and rec.active and get_ident() == rec.thread:
                rec.graph_break(f"next() advanced a {type(it).__name__} the step does not create (a data loader's "
                                "iterator): a replay would not advance it")
            return orig(it, *default)
        return next_

    def _host_draw(self, what: str, orig: Callable) -> Callable:
        rec = self

        def draw(*a, **kw):
            fn = sys._getframe(1).f_code.co_filename
            if rec.active and get_ident() == rec.thread and not _internal(fn) and _hostrng.counts(what, fn):
                rec.graph_break(f"{what}() reads a host random number or the clock (a replay would reuse the "
                                "captured one)")
            return orig(*a, **kw)
        return draw

    def _user_read(self, meth: str, orig: Callable) -> Callable:
        rec = self

        def method(self, *a, **kw):
            if rec.symbolic and meth == "item" and rec.active and get_ident() == rec.thread:
                return rec.sym_item(self, orig)
            if rec.active and get_ident() == rec.thread and not _internal(sys._getframe(1).f_code.co_filename):
                if rec.tail_fn is not None and meth in _tail.READS and not a and not kw:
                    ok, ref = rec.at_return(meth)
                    if ok:
                        return rec.tail_read(self, meth, orig, ref)
                op = "Tensor." + meth if not meth.startswith("__") else f"{meth.strip('_')}(tensor)"
                rec.graph_break(f"{op} reads a tensor {'address' if meth == 'data_ptr' else 'value'} into Python")
                rec.user_read += 1
                try:
                    return orig(self, *a, **kw)
                finally:
                    rec.user_read -= 1
            return orig(self, *a, **kw)
        return method

    def at_return(self, meth: str) -> tuple[bool, Any]:
        """A host read the compiled function's own frame makes where only its return follows (see tailreads.py), and
        the list it is appended to; with ``fullgraph=True`` only under ``capture_scalar_outputs``, as PyTorch's."""
        frame = sys._getframe(2)  # (at_return <- the Tensor method's wrapper <- the caller)
        if self.fullgraph and not _compile_config.capture_scalar_outputs or self.breaks:
            return False, None
        back = frame.f_back  # (the capture called the function: a recursive call's read is no return of it)
        if back is None or not _internal(back.f_code.co_filename):
            return False, None
        return _tail.at_return(frame, self.tail_fn, meth)

    def tail_read(self, t: Tensor, meth: str, orig: Callable, ref: Any) -> _tail.Placeholder:
        """The read's value for the capture, held by a placeholder; the replay reads the array at this point (and
        appends the value to the list ``ref`` names, if not None)."""
        self.user_read += 1
        try:
            value = orig(t)
        finally:
            self.user_read -= 1
        name = f"tr{len(self.tail)}"
        self.lines.append(f"{name} = TAILREAD({self.const(t._be)}, {self.read(t._data)}, {meth!r})")
        p = _tail.Placeholder(value, name)
        self.tail.append(p)
        if ref is not None:
            self.lines.append(f"APPEND({self.const(ref)}, {name})")
            self.tail_appends.append((ref, p))
        return p

    # ---- end ------------------------------------------------------------------------------------------------------
    def finish(self, result: Any, args: list) -> str:
        """Write back the final state, resolve the remaining externals, encode the result."""
        if self.breaks:  # recording stopped at the first break: nothing more to say
            return "None"
        self.write_back()
        if self.attr_graphs and self.attr_outputs is None:
            _attrs.check_graphs(self)
        if self.pending:
            self._resolve_pending(result)
        made: dict[int, list] = {}
        src = self._encode_result(result, args, made)
        return _tensors_made(src, list(made.values())) if made else src

    def _resolve_pending(self, result: Any = None) -> None:
        arrays = {id(a): (i, a, v) for i, a, v in self.pending}
        _foreign.check(self, arrays)
        owners: dict[int, Tensor] = {}
        for ref in gc.get_referrers(*[p[1] for p in self.pending]):
            if isinstance(ref, Tensor) and id(ref._data) in arrays and id(ref._data) not in owners:
                owners[id(ref._data)] = ref
        # an optimizer's state tensor the step's own code reads (``opt.state[w]["exp_avg"]``): loaded from its place
        # in ``opt.state`` (``load_state_dict``, ``state.clear()`` put new tensors there; the replay read the old)
        states = {id(t._data): (o, q, k, t) for o in self.optimizers for q, d in list(o.state.items())
                  if isinstance(d, dict) for k, t in list(d.items()) if isinstance(t, Tensor)
                  and id(t._data) in arrays}
        for key, (i, a, v) in arrays.items():
            t = owners.get(key)
            if key in states:
                o, q, k, t = states[key]
                co, cq = self.const(o), self.const(q)
                self.lines[i] = f"{v} = {co}.state[{cq}][{k!r}]._data"
                # checked first: the entry exists, its shape, dtype and device (else this call runs eagerly)
                self.checks.append(f"if SKEY({co}, {cq}, {k!r}) != {self.const(_tensor_key(t))}: "
                                   "raise MISMATCH(False)")
            elif t is not None:  # a persistent tensor the roots did not show (a plain attribute): its array at replay
                c = self.const(t)
                self.lines[i] = f"{v} = {c}._data"
                # its shape, dtype and device are no guard: checked first (``t.data = other``: eagerly then)
                self.checks.append(f"if TKEY({c}) != {self.const(_tensor_key(t))}: raise MISMATCH(False)")
            else:  # an array no tensor owns: a constant of the step (index arrays made from shapes, a cached mask)
                self.lines[i] = f"{v} = {self.const(a)}"
        check_late_grads(self, [t for k, t in owners.items() if k not in states], arrays)
        check_orphans(self, arrays, owners, states, result)


def _escaped(obj: Any) -> bool:
    """A number in a symbolic recording's kernel arguments that is not a Sym: one computed from a hyper-parameter
    outside the recorded arithmetic (C code such as ``math.exp(lr)``) would replay stale.  Exempt: the small whole
    numbers literals become (``x += 1`` reaches the kernel as 1.0)."""
    if type(obj) is float:
        return not (obj.is_integer() and abs(obj) <= 2.0)
    if isinstance(obj, (tuple, list)):
        return any(_escaped(o) for o in obj)
    return isinstance(obj, (float, complex, np.generic, np.ndarray))


def _bool_key(key: Any) -> bool:
    items = key if isinstance(key, (tuple, list)) else (key,)
    return any(getattr(getattr(k, "dtype", None), "kind", "") == "b" for k in items)


def _subclasses(cls: type) -> list:
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


_orig_host_all_below = _util.host_all_below
_HAB_USERS: list = []


def _find_hab_users() -> None:
    """Modules that imported ``host_all_below`` by name: patched during a capture."""
    if _HAB_USERS:
        return
    for name, mod in list(sys.modules.items()):
        if name.startswith("coretorch") and getattr(mod, "host_all_below", None) is _orig_host_all_below:
            _HAB_USERS.append(mod)
