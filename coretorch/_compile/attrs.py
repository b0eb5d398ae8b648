"""Modules' plain tensor attributes as persistent state: ``module.weight`` that the deprecated hook-based
``nn.utils.weight_norm``/``spectral_norm`` (and pruning-style forward pre-hooks) assign before every forward, a
cached ``self.mask``.

Such an attribute is read where it lives (``module.__dict__[name]``) at each replay, and one the call assigns is
written back there, as a buffer is: the guards key its shape, dtype and device (:func:`key`), not its identity, so a
pre-hook that assigns a new tensor at every call keeps its replay, and the replay leaves the attribute holding a
tensor with this call's values, as eager does.  A tensor that requires grad as a leaf (``self.scale =
torch.ones(1, requires_grad=True)``: its ``.grad`` is accumulated) stays keyed by identity, as before.

What a replay cannot repeat is a graph break (:func:`stored`): storing an argument, a view (but a detached one of a
tensor the call made: truncated BPTT's ``self.h = h.detach()``), an array made outside
the recorded kernels, a tensor whose autograd graph is still needed after a compiled function (a replay's tensors
carry none: one the call's backward consumed gets a stand-in of its freed graph, ``results.ConsumedNode``; a compiled
module's forward gives the attribute an output of its ``CompiledFunctionBackward`` node instead, see ``module.py``).
Checked at the capture, and one test per read attribute at a replay's start (:func:`on_load`: an attribute read with
an autograd graph is keyed by identity there, as before).
"""
from __future__ import annotations

from typing import Any

from ..nn.modules.module import Module
from ..nn.utils import parametrize as _parametrize
from ..tensor import Tensor
from . import versions as _versions
from .keyvalues import _TENSOR_OWN, user_attrs
from .results import _graph_consumed, consumed_node_type


def eligible(v: Any) -> bool:
    """Whether a module attribute's value is a tensor kept as persistent state (see the module docstring)."""
    return type(v) is Tensor and not (v._rg and v._gf is None)


def eligible_tuple(v: Any) -> bool:
    """Whether it is a tuple of such tensors (an LSTM's state ``(h, c)``), kept as one."""
    return type(v) is tuple and 0 < len(v) <= 8 and all(map(eligible, v))


def item(d: dict, k: Any, i: int) -> Any:
    """Entry ``i`` of the tuple at ``d[k]`` (None where there is none): a tuple attribute's element, as a path."""
    v = d.get(k)
    return v[i] if type(v) is tuple and i < len(v) else None


def key(v: Any) -> tuple:
    """The guard key of such an attribute: its shape, dtype and device, and the attributes set on it (``m.mask.scale
    = 2.0``), as a buffer's (whether it carries an autograd graph is checked where a capture reads it: see
    :func:`on_load`)."""
    if type(v) is tuple:
        return tuple(map(key, v))
    d = v._data
    return "tensor", d.shape, d.dtype, id(v._be), None if v.__dict__.keys() <= _TENSOR_OWN else user_attrs(v)


_BASE: set = set()  # every Module's own attribute names


def attributes(modules: list) -> list[tuple[dict, Any]]:
    """``(module.__dict__, name)`` of the modules' eligible tensor attributes, taken at a capture's start; inside a
    ``parametrize.cached()`` block, also the entries of its cache the parametrized modules read or fill
    (``(cache, (id(module), name))``: a block around several calls keeps what the first computed, as eager's)."""
    if not _BASE:
        _BASE.update(Module().__dict__)
    out: list = [(d, k) for m in modules for d in (m.__dict__,) for k, v in list(d.items())
                 if k not in _BASE and (eligible(v) or eligible_tuple(v))]
    if _parametrize._cache_enabled:
        out += [(_parametrize._cache, (id(m), n)) for m in modules
                if isinstance(p := m.__dict__.get("_modules", {}).get("parametrizations"), Module)
                for n in p._modules]
    return out


def cache_key() -> tuple:
    """The guard key of ``parametrize.cached()``'s cache: inside a block, its entries (what a call reads from it,
    or whether it computes and stores them)."""
    if not _parametrize._cache_enabled:
        return ()
    return tuple([(k, key(v) if eligible(v) else id(v)) for k, v in _parametrize._cache.items()])


def on_load(rec: Any, src: str, found: list) -> None:
    """The call reads ``src``, the array of the attributes ``found`` ((path, tensor)) as the call found them.  The
    replay checks first that an attribute whose array it loads through another path (a parameter's, a global
    tensor's, another module's attribute: one array) still holds that array (``model.mask = other`` after the
    capture); that one holding a tensor with an autograd graph made before the call (``self.w_t = self.weight.t()``
    in ``__init__``: the capture's backward ran through it) is still that tensor (a new graph each call, as ``self.h
    = h`` without ``detach`` or a pre-hook run outside the capture, captures again); and that one without a graph
    still has none."""
    for expr, t in found:
        if src != f"{expr}._data":
            rec.checks.append(f"if {expr}._data is not {src}: raise MISMATCH(False, True)")
        elif t._gf is not None and _graph_consumed(t._gf):
            # a graph a backward consumed (``prev = self.last_loss.detach()`` of the loss the last call stored): its
            # values are all the call can read (a backward through it raises), so any consumed one will do; keyed
            # by identity, every call (each stores a new loss) captured again
            rec.checks.append(f"if {expr}._gf is not None and not CONSUMEDQ({expr}._gf): raise MISMATCH(False, True)")
        elif t._gf is not None:
            rec.checks.append(f"if {expr} is not {rec.const(t)}: raise MISMATCH(False, True)")
        else:
            rec.checks.append(f"if {expr}._gf is not None: raise MISMATCH(False, True)")


def stored(rec: Any, expr: str, t: Any, outputs: list | None) -> str | None:
    """The replay's line storing ``t``, which the call assigned to the module attribute ``expr`` (a tensor, or a tuple
    of tensors: an LSTM's ``self.state = (h.detach(), c.detach())``); None where the replay stores nothing
    (``outputs``: a compiled module's forward, whose caller stores the tensors on its node), or on a graph break."""
    if t is None:
        return f"{expr} = None"
    items = t if type(t) is tuple and t else (t,)
    for x in items:
        why = _unstorable(rec, x)
        if why is not None:
            rec.graph_break(f"the call stores {why} in the module attribute {expr}")
            return None
    if outputs is not None:  # (a compiled module's forward: set by its caller, as its outputs are made)
        outputs.append((expr, t))
        return None
    if any(x._gf is not None for x in items):  # (whether its graph is still needed: see :func:`check_graphs`)
        rec.attr_graphs.add(expr)
    if type(t) is tuple:
        return f"{expr} = ({''.join([_make(rec, x) + ', ' for x in items])})"
    for e, (d, k) in rec.attr_exprs.items():  # one tensor in two attributes (``self.b = self.a``): one tensor
        if e != expr and d.get(k) is t and rec.attr_made.get(e) is t:
            return f"{expr} = {e}"
    rec.attr_made[expr] = t
    return f"{expr} = {_make(rec, t)}"


def _make(rec: Any, t: Tensor) -> str:
    src = f"MAKE({rec.var[id(t._data)]}, {rec.const(t.dtype)}, {rec.const(t._be)}{_versions.made(t)})"
    if t._gf is not None:  # (its graph is consumed by the call's end, else a graph break: see check_graphs) eager's
        # attribute keeps that graph (``self.last_loss = loss``: requires_grad, its grad_fn's name), as a result
        src = f"CONSUMED({src}, {rec.const(consumed_node_type(type(t._gf).__name__))})"
    return src


def _unstorable(rec: Any, t: Any) -> str | None:
    """Why the replay cannot store ``t`` as eager's (None: it can)."""
    if type(t) is not Tensor:
        return f"a {type(t).__name__}"
    if t._vbase is not None and not (t._det and _made(rec, t._vbase)):
        return "a view (a replay makes a tensor of its own)"
    if id(t) in rec.persistent or id(t._data) in rec.loaded or id(t._data) not in rec.var:
        return "a tensor the call did not make with the recorded kernels"
    if t._rg and t._gf is None:
        return "a new leaf that requires grad"
    return None


def _made(rec: Any, t: Tensor) -> bool:
    """Whether the call made ``t`` with the recorded kernels (the base of truncated BPTT's ``self.h = h.detach()``:
    the replay stores a tensor over this call's array, as eager's detached view)."""
    return id(t) not in rec.persistent and id(t._data) in rec.var and id(t._data) not in rec.loaded


def check_graphs(rec: Any) -> None:
    """At a compiled function's end: an attribute it stored a tensor with an autograd graph in, and that still holds
    it, is a graph break where no backward of the call ran through that graph (a replay's tensor carries none, and the
    caller may still need eager's: ``model.aux.backward()`` after the call).  Checked at the end, not where the tensor
    was written back: a GAN step stores the generator's weight at the discriminator's ``step()``, before the
    generator's backward."""
    for expr in rec.attr_graphs:
        d, k = rec.attr_exprs[expr]
        t = d.get(k)
        if any(isinstance(x, Tensor) and x._gf is not None and not _graph_consumed(x._gf)
               for x in (t if type(t) is tuple else (t,))):
            rec.graph_break(f"the call stores a tensor whose autograd graph is still needed in the module attribute "
                            f"{expr} (a replay's tensors carry none: run the forward under no_grad, or compile the "
                            "module)")


def only_attributes(rec: Any, modules: Any, now: tuple, before: tuple) -> bool:
    """Whether the modules' numbers (modstate.module_numbers) ``before`` and ``now`` a capture's call differ only in
    the tensor attributes the capture reads and writes where they live: their changes are written back (or a graph
    break where they cannot be), so they are no assignment a replay would miss."""
    if not rec.attr_exprs or now[0][0] != before[0][0]:  # (another count of attributes)
        return False
    skip = {(id(d), k) for d, k in rec.attr_exprs.values()}
    idx = [i for i, (d, k) in enumerate(modules.numbers[2]) if (id(d), k) in skip]

    def masked(numbers: tuple) -> tuple:
        (lens, vals, *rest), hooks = numbers
        keys, types = list(vals[0]), list(vals[1])
        for i in idx:
            keys[i] = types[i] = None
        return (lens, (tuple(keys), tuple(types)), *rest), hooks
    return masked(now) == masked(before)
