"""The non-reentrant activation checkpoint (``checkpoint(fn, *args, use_reentrant=False)``): the segment's
activations are freed after its forward and recomputed in the backward.

PyTorch keeps the segment's graph and drops the tensors its nodes save (saved-tensor hooks), recomputing them when
the backward unpacks them.  coretorch's nodes keep what they save in their own attributes, so the graph is cut
instead: the forward runs as usual while node creation is observed (``autograd._node_watch``), which tells the
segment's own nodes from the graph it reads (its inputs' nodes, the parameters' AccumulateGrad, a closure tensor's
node).  Walking the outputs' nodes through the segment's own ones gives the *boundary*: the edges leaving the
segment.  The outputs are handed back attached to one :class:`CheckpointBackward` node whose edges are that boundary,
and the segment's graph is dropped with the original outputs (its saved activations with it).  Its backward runs the
function again (grad mode on, the random generators and autocast as they were at the forward), takes the gradients
that reach each boundary edge through the recomputed segment (the engine's ``sinks`` mode: the boundary's nodes do
not run there), and returns them along its edges, where the engine goes on as without the checkpoint.  So values and
gradients are those of the plain call (the recomputation runs the same kernels), ``autograd.grad``, keyword
arguments, closures and nested checkpoints work, and the peak memory of a checkpointed model holds each segment's
activations only while its forward or backward runs.

Known differences from PyTorch: the recomputation runs the whole function (PyTorch stops once it has every saved
tensor back: ``set_checkpoint_early_stop(False)``'s behaviour), also where the segment saved nothing; an output's
``grad_fn`` is ``CheckpointBackward`` (PyTorch's is the last op's node); an output that is a view keeps its segment's
graph (no memory saved for it); a leaf made inside the function cannot be checkpointed (CheckpointError at the
backward)."""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from ..autograd import _node_watch
from ..autograd.graph import _FREED, AccumulateGrad, Node
from ..func import _tree

_TLS = threading.local()  # .segments: the node sets of the checkpoints running a forward in this thread


def _note(node: Node) -> None:
    segs = getattr(_TLS, "segments", None)
    if segs:
        for s in segs:  # (a nested checkpoint's nodes belong to the enclosing segments too)
            s[node] = None


class _Watch:
    """``with _Watch() as made:`` ``made`` holds the nodes this thread creates inside the block (a dict, in the
    order made)."""

    def __enter__(self) -> dict:
        self.made: dict = {}
        segs = getattr(_TLS, "segments", None)
        if segs is None:
            segs = _TLS.segments = []
        segs.append(self.made)
        _node_watch.add(_note)
        return self.made

    def __exit__(self, *exc) -> None:
        _node_watch.remove(_note)
        segs = _TLS.segments
        del segs[next(i for i in range(len(segs) - 1, -1, -1) if segs[i] is self.made)]  # (by identity)


def boundary(roots: list, made: dict) -> list:
    """The edges ``(node, output_nr)`` that leave the segment: reached from ``roots`` through nodes in ``made``,
    pointing at a node made before it (or at a leaf's AccumulateGrad), each once, in the order found."""
    edges: dict = {}
    seen: set = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for nxt, nr in n.next_functions:
            if nxt is None:
                continue
            if nxt in made and nxt.__class__ is not AccumulateGrad:
                stack.append(nxt)
            else:
                edges[(nxt, nr)] = None
    return list(edges)


class ForwardState:
    """What a recomputation starts from, as the forward did: the default generators' states (``preserve_rng``:
    PyTorch keeps cpu's and those of its tensor arguments' devices; these are cpu's and every device's in use) and
    the autocast settings."""

    def __init__(self, preserve_rng: bool) -> None:
        from ..amp import autocast_mode as ac
        from ..ops.random import defaults_in_use
        self.rng = [(g, g.get_state()) for g in defaults_in_use()] if preserve_rng else []
        self.amp = [(d, ac.is_autocast_enabled(d), ac.get_autocast_dtype(d), ac.is_autocast_cache_enabled())
                    for d in ("cpu", "opencl") if ac.is_autocast_available(d)]

    @contextlib.contextmanager
    def restored(self, extra: Any = None) -> Iterator[None]:
        """The block in grad mode, the generators at their forward states (set back after it), the forward's
        autocast and ``extra`` (a context manager, or None) entered."""
        from ..amp.autocast_mode import autocast
        from ..autograd.grad_mode import enable_grad
        now = [(g, g.get_state()) for g, _ in self.rng]
        try:
            for g, st in self.rng:
                g.set_state(st)
            with enable_grad(), contextlib.ExitStack() as stack:
                for d, on, dt, cache in self.amp:
                    stack.enter_context(autocast(d, dtype=dt, enabled=on, cache_enabled=cache))
                if extra is not None:
                    stack.enter_context(extra)
                yield
        finally:
            for g, st in now:
                g.set_state(st)


def _map_tensors(obj: Any, fn: Callable) -> Any:
    """``obj`` with every tensor in it (through tuples, named tuples, lists and dicts) replaced by ``fn(t)``."""
    from ..tensor import Tensor
    return _tree.tree_map(lambda x: fn(x) if isinstance(x, Tensor) else x, obj)


def _tensors(obj: Any) -> list:
    """The tensors in ``obj``, in order (see :func:`_map_tensors`)."""
    from ..tensor import Tensor
    return [x for x in _tree.flatten(obj)[0] if isinstance(x, Tensor)]


def _meta(t: Any) -> dict:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


def _saved_meta(made: dict) -> list:
    """The metadata of the tensors the segment's nodes saved, in the order made (what PyTorch's determinism check
    compares: a recomputation taking another path, or another slice, differs here)."""
    out: list = []
    for n in made:
        saved = n._saved
        if type(saved) is tuple:
            out.extend(None if t is None else _meta(t) for t in saved)
    return out


class CheckpointBackward(Node):
    """The node of a non-reentrant checkpoint's outputs: recomputes the segment and returns the gradients that reach
    its boundary (see the module docstring)."""

    _user_grads = True
    _materialize = False  # (an output without a gradient gets None, not zeros: it starts no recomputed path)
    # what the recomputation needs (set by run(); released after a backward without retain_graph)
    fn: Any = None
    args: Any = None
    kwargs: Any = None
    state: Any = None  # the forward's ForwardState
    recompute_ctx: Any = None  # (context_fn's second context: entered around the recomputation)

    def release(self) -> None:
        """After a backward without ``retain_graph``: the inputs, function and generator states go (a second
        backward raises the engine's "second time" error, as PyTorch's freed recomputation)."""
        self._saved = _FREED
        self.args = self.kwargs = self.fn = self.state = self.recompute_ctx = None

    def backward(self, *grads):
        from ..autograd.engine import run_backward
        from ..autograd.grad_mode import state as grad_state
        args = self.saved()  # (version-checked: an input changed in place since raises, as PyTorch's saved input)
        create_graph = grad_state.enabled  # (the engine runs a node's backward in grad mode under create_graph)
        outs = self.recompute(args)
        roots, gs = [], []
        for nr, g in enumerate(grads):
            if g is not None and outs[nr]._rg:
                roots.append(outs[nr])
                gs.append(g)
        if not roots:
            return (None,) * len(self.next_functions)
        terms = run_backward(roots, gs, create_graph, create_graph, inputs=list(self.next_functions),
                             allow_unused=True, sinks=True)
        out = []
        for gl in terms:
            if not gl:
                out.append(None)
                continue
            g = gl[0]
            for t in gl[1:]:
                g = g + t
            out.append(g)
        return tuple(out)

    def recompute(self, tensor_args: tuple) -> list:
        """The segment run again as at the forward; its checkpointed outputs, in this node's output order."""
        args = list(self.args)
        for i, t in zip(self.tensor_pos, tensor_args):
            args[i] = t
        with self.state.restored(self.recompute_ctx), _Watch() as made:
            result = self.fn(*args, **self.kwargs)
        flat = _tensors(result)
        outs = [flat[i] if i < len(flat) else None for i in self.out_pos]
        self.check(outs, made)
        return outs

    def check(self, outs: list, made: dict) -> None:
        """The recomputation must save tensors of the forward's metadata (``determinism_check="default"``), give
        outputs of the forward's and leave the segment by the same edges (else its gradients would not reach the
        graph the forward's reached)."""
        from .checkpoint import CheckpointError
        if self.determinism != "none":
            now = _saved_meta(made)
            was = self.saved_meta
            diff = [i for i in range(max(len(was), len(now)))
                    if i >= len(was) or i >= len(now) or was[i] != now[i]]
            if diff:
                lines = [f"tensor at position {i}:\nsaved metadata: {was[i] if i < len(was) else None}\n"
                         f"recomputed metadata: {now[i] if i < len(now) else None}\n" for i in diff]
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      "different metadata than during the forward pass.\n" + "".join(lines))
        bad = [i for i, (o, m) in enumerate(zip(outs, self.out_meta)) if o is None or _meta(o) != m]
        if bad:
            raise CheckpointError("torch.utils.checkpoint: the recomputed outputs differ from the forward's "
                                  f"(positions {bad}): their gradients cannot be computed")
        found = set(boundary([o._gf for o in outs if o._gf is not None and o._gf in made], made))
        if not found <= set(self.next_functions):
            raise CheckpointError(
                "torch.utils.checkpoint: the recomputation reached tensors that require grad which the forward did "
                "not (a different code path, a leaf tensor made inside the checkpointed function, or parameters "
                "swapped since the forward, as functional_call's are restored before a torch.func transform's "
                "backward): coretorch cannot give them gradients. Make the function deterministic, create such "
                "tensors outside it, or run the backward while the same tensors are in place.")


def run(fn: Callable, args: tuple, kwargs: dict, preserve_rng_state: bool, determinism_check: str,
        recompute_ctx: Any = None) -> Any:
    """``fn(*args, **kwargs)``, checkpointed (see the module docstring); ``recompute_ctx``: a context manager entered
    around the recomputation (``context_fn``'s second)."""
    from ..autograd.grad_mode import state as grad_state
    from ..tensor import Tensor, _make
    if not grad_state.enabled:  # (no graph to save memory from)
        return fn(*args, **kwargs)
    state = ForwardState(preserve_rng_state)
    with _Watch() as made:
        result = fn(*args, **kwargs)
    flat = _tensors(result)
    picked: dict = {}  # id(output) -> its position among the checkpointed outputs
    pos: list = []
    for i, o in enumerate(flat):
        # an output made by the segment (not an input or another tensor returned as is), not a view (whose base
        # would keep the segment's graph anyway)
        if o._gf is not None and o._gf in made and o._vbase is None and id(o) not in picked:
            picked[id(o)] = len(pos)
            pos.append(i)
    if not pos:
        return result
    outs = [flat[i] for i in pos]
    edges = boundary([o._gf for o in outs], made)
    saved_meta = _saved_meta(made) if determinism_check != "none" else []
    made.clear()
    node = CheckpointBackward()
    node.next_functions = tuple(edges)
    tpos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    node.save(*[args[i] for i in tpos])
    node.tensor_pos, node.args, node.kwargs, node.fn = tpos, [None if isinstance(a, Tensor) else a for a in args], \
        kwargs, fn
    node.state, node.recompute_ctx = state, recompute_ctx
    node.out_pos, node.out_meta, node.determinism = pos, [_meta(o) for o in outs], determinism_check
    node.saved_meta = saved_meta
    if len(outs) > 1:
        node._out_meta = tuple((o.shape, o.dtype, o._be) for o in outs)
    new: dict = {}
    for nr, o in enumerate(outs):
        new[id(o)] = _make(o._data, o.dtype, o._be, node, nr, version=o._vc)
    return _map_tensors(result, lambda t: new.get(id(t), t))
