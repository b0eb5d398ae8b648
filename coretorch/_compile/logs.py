"""The compiler's logs, switched on by ``torch._logging.set_logs(recompiles=True, graph_breaks=True)``.

* ``coretorch._dynamo.recompiles``: each capture of a compiled callable that already has one, with the parts of
  the guard key that differ from its closest capture (what changed: the arguments' shapes, a global, ...);
* ``coretorch._dynamo.graph_breaks``: each capture that ends in a graph break, with its reasons (the calls with
  that guard set run eagerly; ``coretorch.compiler.explain`` shows the lines).

Both log at INFO; nothing is computed unless the logger is enabled.
"""
from __future__ import annotations

import logging
import sys
import warnings
from typing import Any, Iterable

from .frames import _internal
from .exc import FailOnRecompileLimitHit
from .stance import _where

recompiles_log = logging.getLogger("coretorch._dynamo.recompiles")
graph_breaks_log = logging.getLogger("coretorch._dynamo.graph_breaks")

# what each part of a guard key holds (CompiledFunction._lookup's and ModuleCapture.__call__'s keys)
FUNCTION_PARTS = ("the objects the function reads (globals, closure cells, attributes of modules and config "
                  "objects, container entries)",
                  "the modules' structure (a submodule or parameter replaced)",
                  "the tensors and numbers (arguments' shapes, strides, dtypes, devices, requires_grad, the "
                  "values of Python numbers passed; parameters, buffers, training flags, which .grad are None, grad "
                  "mode)",
                  "which arguments are the step's own tensors",
                  "the keyword argument names",
                  "the numbers on the function, optimizers and tensors it reads (``opt.accum``, ``w.gain``)",
                  "the optimizers' param_groups numbers",
                  "the numbers in the optimizers' state",
                  "which tensor arguments are views (``x._base``, a storage, read by the function)")
MODULE_PARTS = ("the module's structure (a submodule or parameter replaced)",
                "the tensors and numbers (arguments' shapes, strides, dtypes, devices, requires_grad, the values "
                "of Python numbers passed; parameters, buffers, training flags, grad mode)",
                "the keyword argument names",
                "the argument containers' structure (types, lengths, dict keys)",
                "which tensor arguments are views (``x._base``, a storage, read by the forwards)",
                "the argument objects' state (attributes the forwards read, a set's entries)")


def why(key: tuple, keys: Iterable[tuple], parts: tuple) -> str:
    """What differs between ``key`` and the closest of ``keys`` (the parts of a guard key, named by ``parts``)."""
    keys = list(keys)
    if key in keys:  # the same guards: the replay found a layout or alias it was specialised to changed
        return "a layout or aliasing of persistent tensors the capture was specialised to"

    def reasons(k: tuple) -> list[str]:
        out: list[str] = []
        for i, (a, b) in enumerate(zip(key, k)):
            if a != b and i < len(parts):
                out.extend((parts[i].startswith("the tensors") and _detail(a, b)) or [parts[i]])
        return out
    # (the closest capture; of equals the latest, as the sizes in a growing loop)
    best = min([reasons(k) for k in reversed(keys)], key=len)
    return "; ".join(best) or "the number of parts of the key"


# the parts of modstate.key's tuple, and of a tensor argument's key (guards._leaf_key)
_TENSOR_PARTS = ("an argument", "which arguments share memory", "grad mode, a global mode or parametrize.cached()",
                 "a module's training flag", "the module hooks", "a module's attribute", "a parameter replaced",
                 "a parameter's shape, dtype, device or requires_grad", "which parameters' .grad are None",
                 "the gradient hooks", "a buffer's shape, dtype or device", "a tensor's shape, dtype or device",
                 "which tensors' .grad are None")
_LEAF_PARTS = ("size", "stride", "dtype", "device", "whether .grad is None", "requires_grad", "type", "is_leaf",
               "a user attribute")
_LEAF_ORDER = (0, 2, 3, 5, 4, 6, 7, 8, 1)


def _detail(new: Any, old: Any) -> list[str]:
    """What changed between two keys of the tensors-and-numbers part, as PyTorch's guard failures say it
    (``argument 0: size mismatch at index 1, expected 3, actual 4``)."""
    if not (isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old)):
        return []
    out: list[str] = []
    for j, (a, b) in enumerate(zip(new, old)):
        if a == b or j >= len(_TENSOR_PARTS):
            continue
        if j == 0 and len(a) == len(b):
            for n, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    out.extend(f"argument {n}: {d}" for d in _leaf_detail(x, y))
        else:
            out.append(_TENSOR_PARTS[j])
    return out


def _leaf_detail(new: Any, old: Any) -> list[str]:
    if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old) == len(_LEAF_PARTS):
        out: list[str] = []
        for i in _LEAF_ORDER:  # (a stride after the dtype: strides count bytes)
            name, x, y = _LEAF_PARTS[i], new[i], old[i]
            if x == y or name == "stride" and out:
                continue
            if name in ("size", "stride") and x is not None and y is not None and len(x) == len(y):
                d = next(d for d, (u, v) in enumerate(zip(x, y)) if u != v)
                size = getattr(new[2], "itemsize", 1) if name == "stride" else 1
                out.append(f"{name} mismatch at index {d}, expected {y[d] // size}, actual {x[d] // size}")
            else:
                out.append(f"{name} mismatch, expected {y}, actual {x}" if name != "device" else "device mismatch")
        return out
    if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old) == 2:  # (type, value)
        hint = ""
        if new[0] is float and old[0] is float:  # (PyTorch makes a float input of the graph once it changes)
            hint = (" (a float argument becomes an input of the replay at its second value, unless the step turns "
                    "it into a number outside Python arithmetic (math.exp, a size, a dropout probability) or it "
                    "sits in a container; each way a branch on it goes is a capture of its own: pass such a "
                    "number as a 0-d tensor, torch.tensor(v, device=...), to make it an input of the replay)")
        return [f"value mismatch, expected {old[1]!r}, actual {new[1]!r}{hint}"]
    return ["changed"]


def recompile(fn: Any, key: tuple, keys: Iterable[tuple], parts: tuple, limit: int) -> None:
    """Log the capture ``fn`` is about to make under ``key`` beside its earlier ``keys``."""
    if not recompiles_log.isEnabledFor(logging.INFO):
        return
    keys = list(keys)
    if keys:
        recompiles_log.info("Recompiling function (%s): capture %d of at most %d\n    triggered by a change in: %s",
                            _where(fn), len(keys) + (key not in keys), limit, why(key, keys, parts))


def graph_break(fn: Any, breaks: list) -> None:
    """Log the reasons a capture of ``fn`` ended in a graph break."""
    if breaks and graph_breaks_log.isEnabledFor(logging.INFO):
        graph_breaks_log.info("Graph break in (%s); calls with these guards run eagerly:\n%s", _where(fn),
                              "\n".join(f"    - {b}" for b in breaks))


def checked_read_differs(fn: Any) -> None:
    """Log that a replay of ``fn`` gave way to eager before writing anything: its checks found this call differs
    from the capture in what the guards do not key (most often a checked read: a value a core op read on the host).
    Such a call runs eagerly without a new capture (PyTorch breaks the graph at such an op: Dynamo skips
    ``pack_padded_sequence``), so without this line a step whose batches' lengths vary ran eagerly at most calls
    while the logs and ``explain`` showed nothing."""
    if graph_breaks_log.isEnabledFor(logging.INFO):
        graph_breaks_log.info("Graph break in (%s): this call runs eagerly, as it differs from the capture in a value "
                              "a core op read on the host (a checked read: a 0-d integer tensor indexing as an int, "
                              "`abar[t]`, where `abar[t.view(1)]` stays on the device; a PackedSequence's "
                              "batch_sizes, ctc_loss's lengths) or in state the guards do not key", _where(fn))


def dynamic_refused(fn: Any, why: str) -> None:
    """Log why ``fn``'s float arguments stay specialised (dynfloat.py)."""
    if recompiles_log.isEnabledFor(logging.INFO):
        recompiles_log.info("Float arguments of (%s) stay specialised to their values: %s", _where(fn), why)


def dynamic_floats(fn: Any, pos: tuple) -> None:
    """Log that ``fn``'s float arguments at ``pos`` are inputs of its replay from now on (dynfloat.py)."""
    if recompiles_log.isEnabledFor(logging.INFO):
        names = ", ".join(f"argument {w}" if k == "a" else f"keyword {w!r}" for _, (k, w) in pos)
        recompiles_log.info("Float arguments of (%s) are inputs of the replay from now on: %s", _where(fn), names)


def limit_reached(label: str, limit: int, fullgraph: bool, warn: bool, key: tuple, keys: Iterable[tuple],
                  parts: tuple) -> None:
    """A compiled callable ``label`` needs a capture past its ``recompile_limit``: under ``fullgraph`` that raises
    PyTorch's ``FailOnRecompileLimitHit``, else (once: ``warn``) a warning at the caller's line names the last
    reason; the call then runs eagerly."""
    if fullgraph:
        raise FailOnRecompileLimitHit(f"Hard failure due to fullgraph=True: {label} reached recompile_limit ({limit}) "
                                      f"captures")
    if warn:
        warnings.warn(f"coretorch.compile: {label} reached recompile_limit ({limit}) captures; calls with new guards "
                      f"run eagerly (last reason: a change in {why(key, keys, parts)}; "
                      f"torch._logging.set_logs(recompiles=True) logs every capture)", UserWarning,
                      stacklevel=_user_level())


def _user_level() -> int:
    """The ``stacklevel`` of the first frame outside coretorch, for a warning given by the caller of this function."""
    f: Any = sys._getframe(1)
    level = 1
    while f is not None and _internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level
