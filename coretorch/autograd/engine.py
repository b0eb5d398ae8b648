"""The autograd engine: topological order over the graph, one pass, gradients summed per input."""
from __future__ import annotations

from typing import Any

import functools
import itertools
import weakref as _weakref
import threading

from .._fpquiet import quiet as _fp_quiet
from . import anomaly_mode as _anomaly_mode
from .grad_mode import state
from .graph import _FREED, ACCUMULATE_LOCK, AccumulateGrad


# a stale view's node refresh (coretorch/ops/inplace.py's ``refresh_view``, set when it is imported): a view whose
# base got another node since the view's own was made (an in-place op recorded on the base or another view of it)
VIEW_REFRESH: list = [None]


def _grad_edge(t):
    """The (node, output_nr) that receives the gradient of tensor ``t`` in the graph (``tensor._edge``: every op's
    graph edges and the backward's roots).  A view whose base got another node since the view's own was made (an
    in-place op on the base or on another view of it, recorded for autograd) first gets a node reading its region
    of the base's new graph, as PyTorch regenerates a view's grad_fn."""
    b = t._vbase
    if b is not None and (t._rg and b._gf is not t._gfb or t._mo is not None and t._vc[0] != t._mo):
        VIEW_REFRESH[0](t)  # (a piece of split/unbind changed in place since it was made: raises)
    g = t._gf
    if g is not None:
        return (g, t._out_nr)
    if t._rg:
        a = t._accum
        return (a if a is not None else t._get_accum(), 0)
    return (None, 0)


def _toposort(roots) -> dict:
    """Dependency counts of the nodes reachable from ``roots`` (iterative DFS): a node enters ``deps`` on its
    first incoming edge and is walked then; roots are walked from the start (and counted if reachable).  Leaf
    sinks (AccumulateGrad) have no edges: they are counted, never walked."""
    deps: dict = {}
    walked: Any
    if len(roots) == 1:  # loss.backward(): a DAG never leads back to its one root, so nothing to remember
        stack, walked = [roots[0]], ()
    else:
        stack = list(dict.fromkeys(roots))  # a root given twice is walked once
        walked = set(stack)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            if nxt in deps:
                deps[nxt] += 1
            else:
                deps[nxt] = 1
                if nxt.__class__ is not AccumulateGrad and nxt not in walked:
                    stack.append(nxt)
    return deps


_EMPTY: dict = {}


def run_backward(tensors, grad_tensors, retain_graph: bool, create_graph: bool,
                 inputs=None, allow_unused: bool = False, accumulate: bool = True, sinks: bool = False):
    """Shared by Tensor.backward and autograd.grad.  Returns captured grads when ``inputs`` given.  numpy's
    floating-point warnings are off for the pass (gradient formulas meet inf * 0 at IEEE edge cases; PyTorch is
    silent), one switch per backward.  ``sinks``: the inputs' nodes never run, and each input's result is the list
    of the gradients that reach it from the outputs without passing through another input, in arrival order,
    unsummed (a compiled module's backward of its own region: the engine sums them where eager's does)."""
    with _fp_quiet():
        return _run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, allow_unused, accumulate,
                             sinks)


def _run_backward(tensors, grad_tensors, retain_graph: bool, create_graph: bool,
                  inputs=None, allow_unused: bool = False, accumulate: bool = True, sinks: bool = False):
    roots = []
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        node, nr = _grad_edge(t)
        if node is None:
            raise RuntimeError(f"element {k} of tensors does not require grad and does not have a grad_fn")
        roots.append((node, nr, g))

    capture: dict | None = None
    results: list = []
    if inputs is not None:
        capture = {}
        for i, t in enumerate(inputs):
            node, nr = _grad_edge(t) if not isinstance(t, tuple) else t  # (a GradientEdge: its node and number)
            if node is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture.setdefault((node, nr), []).append(i)
        results = [None] * len(inputs)
    if len(roots) == 1:  # loss.backward(): one root, one gradient
        node, nr, g = roots[0]
        deps = _toposort([node])
        buffers: dict = {node: {nr: g}}
        ready = [node] if node not in deps else []
        owned = _Owned()  # the caller's gradient tensors are never stored
        owned.add(g)
    else:
        deps = _toposort([r[0] for r in roots])
        buffers = {}
        for node, nr, g in roots:
            buf = buffers.setdefault(node, {})
            buf[nr] = g if nr not in buf else buf[nr] + g
        ready = list(dict.fromkeys(r[0] for r in roots if deps.get(r[0], 0) == 0))
        owned = _Owned()
        for _, _, g in roots:
            owned.add(g)
    # autograd.grad / backward(inputs=): as PyTorch, only the nodes that lead to an input run (nothing upstream of
    # the inputs: its launches, its hooks, its saved tensors, which may already be freed)
    live: set | None = None
    cap: set = set()
    terms: dict | None = {} if sinks else None  # sinks: the gradients reaching each input's edge, in arrival order
    if capture is not None:
        cap = {n for n, _ in capture}
        live = _leading(roots, cap, sinks)
    prev = state.enabled
    state.enabled = create_graph
    release = not retain_graph
    fast_leaves = accumulate and capture is None
    prev_task = getattr(_TASK, "cur", None)
    task: tuple = (next(_TASK_IDS), deps, roots, live, cap, [])
    _TASK.cur = task  # (multi-grad hooks ask; final callbacks)
    node = None
    try:
        while ready:
            node = ready.pop()
            buf = buffers.pop(node, _EMPTY)
            # leads to no input: captured here at most, never run; nor what it leads to, which leads to no input
            # either (sinks: an input's node gets its gradients as terms, never queued)
            if live is not None and node not in live:
                if node in cap:
                    _run_hooks(node, buf, capture, results, owned, False)
                continue
            if node._hooked or capture is not None:
                buf = _run_hooks(node, buf, capture, results, owned)
                if not buf:  # a pre-hook replaced every gradient by None: as PyTorch, nothing flows on from here
                    _skip(node, deps, buffers, ready)
                    continue
            if node.__class__ is AccumulateGrad:  # a leaf reached through the queue (several edges, hooks, grad())
                if accumulate and capture is None and 0 in buf:
                    g = buf[0]
                    if g._vbase is not None or id(g) in owned:  # never store a view or a tensor held elsewhere
                        g = g.detach().clone() if not create_graph else g.clone()
                    owned.add(g)
                    node.apply(g)
                continue
            if node._out_meta is None:  # one output: its gradient, straight to the formula
                if node._plain:
                    grads_in = node.backward(buf.get(0))
                    if release:  # as PyTorch: a node's saved tensors go as soon as it has run (lower peak)
                        if node._saved:
                            node._saved = _FREED
                        if getattr(node, "out", None) is not None:  # a saved output kept outside _saved
                            node.out = None
                else:
                    grads_in = node.apply(buf.get(0))
                    if release:
                        node.release()
                    if node._user_grads:
                        _own_all(grads_in, owned)
            else:
                grads_in = node.apply(*_grads_tuple(node, buf))
                if release:
                    node.release()
                if node._user_grads:
                    _own_all(grads_in, owned)
            if node._hooked and node._hooks:
                gi = _hook_grads(node, buf)
                for fn in list(node._hooks.values()):
                    r = fn(grads_in, gi)
                    if r is not None:
                        grads_in = _check_node_hook_result(fn, tuple(grads_in), r)
                        _own_all(grads_in, owned)
            nf = node.next_functions
            if len(grads_in) > 1:
                _mark_shared(grads_in, owned)
            if len(grads_in) != len(nf):  # fewer gradients than inputs: the rest are None
                grads_in = tuple(grads_in) + (None,) * (len(nf) - len(grads_in))
            leaves = None  # the leaves (with hooks) this node makes ready: queued last, so run first (PyTorch runs
            # AccumulateGrad before any other ready node: a DDP bucket's gradients come as soon as its layer's)
            for (nxt, nr), g in zip(nf, grads_in):
                if nxt is None:
                    continue
                if g is not None:
                    if terms is not None and nxt in cap:
                        terms.setdefault((nxt, nr), []).append(g)
                        continue
                    if nxt.__class__ is AccumulateGrad and fast_leaves and deps[nxt] == 1 and not nxt._hooked \
                            and nxt not in buffers:
                        # a leaf reached by this edge alone, no hooks: store or accumulate now, no buffer or queue
                        deps[nxt] = 0
                        v = nxt.variable
                        with ACCUMULATE_LOCK:  # another thread's backward may store into the same leaf
                            if v._grad is None and g._vbase is None and g.grad_fn is None and not g._rg \
                                    and g.dtype is v.dtype and g._data.shape == v._data.shape and g._be is v._be \
                                    and id(g) not in owned and g._data.strides == v._data.strides:
                                owned.add(g)
                                v._grad = g  # what AccumulateGrad.apply does for a first, matching, owned gradient
                            else:
                                _leaf_slow(node, grads_in, g, nxt, owned, create_graph)
                        continue
                    if nxt.__class__ is AccumulateGrad:  # a leaf gradient queued (several edges, hooks, grad())
                        v = nxt.variable
                        if g._data.shape != v._data.shape or g.dtype is not v.dtype or v._gdt is not False \
                                or g._be is not v._be:
                            g = _validate_leaf_grad(node, grads_in, g, v)
                    b = buffers.get(nxt)
                    if b is None:
                        buffers[nxt] = {nr: g}
                    else:
                        b[nr] = g if nr not in b else b[nr] + g
                    d = deps[nxt]
                    if d == 1:  # its last edge: ready now (nothing reads its count again)
                        if nxt.__class__ is AccumulateGrad:
                            if leaves is None:
                                leaves = []
                            leaves.append(nxt)
                        else:
                            ready.append(nxt)
                        continue
                else:
                    d = deps[nxt]
                d -= 1
                deps[nxt] = d
                if d == 0:
                    if nxt in buffers:
                        ready.append(nxt)
                    else:
                        _skip(nxt, deps, buffers, ready)
            if leaves is not None:  # (popped in edge order, as PyTorch's: Linear's bias, then its weight)
                ready.extend(reversed(leaves))
        callbacks = task[5]
        node = None
        while callbacks:  # Variable._execution_engine.queue_callback's, in order (one may queue another)
            callbacks.pop(0)()
    except BaseException:
        if _anomaly_mode.state.enabled:  # PyTorch's warning: where the failing node was made (forward traceback)
            _anomaly_mode.warn_error_in(node)
        raise
    finally:
        state.enabled = prev
        _TASK.cur = prev_task
        owned.clear()  # (its weak references' callbacks hold it)
    if terms is not None:
        assert capture is not None
        for e, idx in capture.items():
            for i in idx:
                results[i] = terms.get(e)
    if inputs is not None:
        for i, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(results)
    return None


_TASK = threading.local()  # the backward pass running in this thread (its id, deps, roots, live and captured nodes)
_TASK_IDS = itertools.count()


def current_graph_task_id() -> int:
    """The id of the backward pass running in this thread, -1 outside one (PyTorch's
    ``torch._C._current_graph_task_id``)."""
    t = getattr(_TASK, "cur", None)
    return -1 if t is None else t[0]


def queue_callback(callback) -> None:
    """Run ``callback()`` when the running backward pass has run its last node (PyTorch's
    ``Variable._execution_engine.queue_callback``, as distributed and ZeRO-style optimizers use it)."""
    t = getattr(_TASK, "cur", None)
    if t is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    t[5].append(callback)


class _ExecutionEngine:
    """``Variable._execution_engine``: the engine's Python face (``queue_callback``; ``run_backward`` as
    ``autograd.backward``/``grad`` call it)."""

    queue_callback = staticmethod(queue_callback)

    @staticmethod
    def run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs=(), allow_unreachable=True,
                     accumulate_grad=True):
        from . import _make_grads, run_backward as _run
        tensors = tuple(tensors)
        grads = _make_grads(tensors, tuple(grad_tensors), create_graph)
        if inputs and not accumulate_grad:
            return _run(tensors, grads, keep_graph, create_graph, inputs=tuple(inputs),
                        allow_unused=allow_unreachable)
        from . import backward
        backward(tensors, grads, keep_graph, create_graph, inputs=tuple(inputs) or None)
        return ()


def will_engine_execute_node(node) -> bool:
    """Whether the running backward pass will run ``node`` (reached from its roots, and leading to an input of
    ``grad``/``backward(inputs=)`` if given); PyTorch's ``torch._C._will_engine_execute_node``."""
    t = getattr(_TASK, "cur", None)
    if t is None:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward pass")
    _, deps, roots, live, cap, _ = t
    if node not in deps and all(node is not r[0] for r in roots):
        return False
    return live is None or node in live or node in cap


def _leading(roots, cap: set, sinks: bool) -> set:
    """The nodes from which one of the nodes ``cap`` (autograd.grad's inputs') is reached through ``next_functions``
    (a DAG: a node's answer is known once its inputs' are); ``sinks``: no node of ``cap`` itself."""
    memo: dict = {}
    stack = [(r[0], False) for r in roots]
    while stack:
        n, done = stack.pop()
        nf = n.next_functions
        if done:
            memo[n] = not (sinks and n in cap) and any(m is not None and (m in cap or memo[m]) for m, _ in nf)
        elif n not in memo:
            memo[n] = False
            stack.append((n, True))
            stack.extend([(m, False) for m, _ in nf if m is not None and m not in memo])
    return {n for n, v in memo.items() if v}


class _Owned(dict):
    """The ids of the gradient tensors a backward must not store as a leaf's ``.grad`` (held elsewhere), each as
    long as its tensor lives (a weak reference's callback drops it): by bare ids, a tensor made later at a freed
    one's address was taken as held and copied, so whether a gradient was copied depended on addresses (a compiled
    step's two captures then recorded different programs, and its float arguments stayed specialised)."""
    __slots__ = ()

    def add(self, g: Any) -> None:
        i = id(g)
        if i not in self:
            self[i] = _weakref.ref(g, functools.partial(_forget, self, i))


def _forget(owned: _Owned, i: int, _ref: Any) -> None:
    owned.pop(i, None)


def _mark_shared(grads_in, owned: _Owned) -> None:
    """A gradient object a node sends along more than one edge (add's backward passes its incoming gradient to both
    inputs) joins ``owned``: a leaf it reaches, directly or through pass-through nodes (clone), stores a copy, as
    PyTorch steals a gradient only when nothing else holds it. Stored as is, another thread's backward into the
    same leaf added into it in place while this backward still read it for the other edge (a silently wrong
    gradient there)."""
    if len(grads_in) == 2:
        a = grads_in[0]
        if a is grads_in[1] and a is not None:
            owned.add(a)
        return
    for i in range(1, len(grads_in)):
        g = grads_in[i]
        if g is not None:
            for j in range(i):
                if grads_in[j] is g:
                    owned.add(g)
                    break


def _leaf_slow(node, grads_in, g, acc, owned: _Owned, create_graph: bool) -> None:
    """A leaf's gradient that cannot simply be stored: validated (shape, dtype), copied when it is a view or
    held elsewhere, then accumulated by the leaf's AccumulateGrad."""
    v = acc.variable
    if g._data.shape != v._data.shape or g.dtype is not v.dtype or g._be is not v._be:
        g = _validate_leaf_grad(node, grads_in, g, v)
    if g._vbase is not None or id(g) in owned:
        g = g.detach().clone() if not create_graph else g.clone()
    owned.add(g)
    acc.apply(g)


def _own_all(grads, owned: _Owned) -> None:
    """Gradients user code returned (a hook's, a custom Function's): they may be held elsewhere, so a leaf they
    reach stores a copy (PyTorch steals a gradient only when nothing else holds it)."""
    for g in grads:
        if g is not None:
            owned.add(g)


def _run_hooks(node, buf: dict, capture, results, owned: _Owned, run: bool = True) -> dict:
    """Tensor hooks (register_hook / retain_grad), captured inputs of autograd.grad, and node pre-hooks (where the
    node runs: ``run``)."""
    th = node._tensor_hooks
    if th:
        buf = dict(buf)
        for nr, hooks in th.items():
            if nr in buf:
                # as in torch, the retain_grad hook runs after every other tensor hook
                for fn in sorted(hooks.values(), key=_retains_last):
                    r = fn(buf[nr])
                    if r is not None:
                        _check_hook_result(fn, buf[nr], r)
                        buf[nr] = r
                        owned.add(r)
    if capture is not None:
        for nr, g in buf.items():
            for i in capture.get((node, nr), ()):
                results[i] = g
    if run and node._pre_hooks:
        gi = _hook_grads(node, buf)
        for fn in list(node._pre_hooks.values()):
            r = fn(gi)
            if r is not None:
                gi = _check_node_hook_result(fn, gi, r)
                _own_all(gi, owned)
        buf = {i: g for i, g in enumerate(gi) if g is not None}
    return buf


def _check_hook_result(fn, old, new) -> None:
    """PyTorch's checks of what a tensor hook returned: a tensor of the gradient's size, dtype and device."""
    name = getattr(fn, "__name__", type(fn).__name__)
    if not hasattr(new, "_vc"):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if new.dtype is not old.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was torch.{old.dtype._tname} got "
                           f"torch.{new.dtype._tname})")
    if new._be is not old._be:
        raise RuntimeError(f"hook '{name}' has changed the device of value (was {old.device} got {new.device})")
    if tuple(new.shape) != tuple(old.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value")


def _check_node_hook_result(fn, old: tuple, new) -> tuple:
    """PyTorch's checks of what a grad_fn's (pre-)hook returned: as many values, each None or a tensor of its
    gradient's size, dtype and device (no value where the gradient is None)."""
    if not isinstance(new, tuple):  # (PyTorch: a list, or a lone tensor, is no tuple of gradients either)
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        name = getattr(fn, "__name__", type(fn).__name__)
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got {len(new)}, but "
                           f"expected {len(old)})")
    for o, n in zip(old, new):
        if n is not None:
            if o is None:
                raise RuntimeError("can't replace a None gradient with a non-None value")
            _check_hook_result(fn, o, n)
    return new


def _retains_last(fn) -> bool:
    return getattr(fn, "_retains_grad", False)


def _validate_leaf_grad(node, grads_in, g, v):
    """As PyTorch's engine: a gradient must match its leaf's shape; its dtype is cast to the leaf's grad_dtype (the
    leaf's own dtype unless set; None: kept), and a 0-d one on another device moved to the leaf's (a 0-d cpu leaf
    used as a scalar beside another device's tensor: lerp's weight), before the leaf's hooks see it and what
    autograd.grad returns."""
    if g._data.shape != v._data.shape:
        k = next(i for i, x in enumerate(grads_in) if x is g)
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {k} - got "
                           f"{list(g.shape)} but expected shape compatible with {list(v.shape)}")
    if g._be is not v._be and not g._data.shape:
        g = g.to(v.device)
    want = v.dtype if v._gdt is False else v._gdt
    if want is not None and g.dtype is not want:
        g = g.to(want)
    return g


def _skip(node, deps, buffers, ready):
    """A node that received no gradient at all: release its dependants without running it."""
    stack = [node]
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is None:
                continue
            d = deps[nxt] - 1
            deps[nxt] = d
            if d == 0:
                if nxt in buffers:
                    ready.append(nxt)
                else:
                    stack.append(nxt)


def _hook_grads(node, buf: dict) -> tuple:
    """The output gradients a node's hooks see: as PyTorch, None for an output that got no gradient (the node's
    backward gets zeros there, _grads_tuple)."""
    meta = node._out_meta
    return tuple(buf.get(i) for i in range(len(meta) if meta else 1))


def _grads_tuple(node, buf: dict) -> tuple:
    meta = node._out_meta
    n = len(meta) if meta else 1
    if n == 1:
        return (buf.get(0),)
    out = []
    for i in range(n):
        g = buf.get(i)
        if g is None and getattr(node, "_materialize", True):
            shape, dt, table = meta[i]
            if dt is not None:  # (a Function's non-tensor output gets None, as in PyTorch)
                from ..tensor import _zeros_on
                g = _zeros_on(shape, dt, table)
        out.append(g)
    return tuple(out)
