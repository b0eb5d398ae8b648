"""Graph nodes: every ``grad_fn`` is a Node; leaves get an ``AccumulateGrad`` node."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import itertools
import os
import re
import threading
import weakref
from collections import OrderedDict

from .._coo import SPARSE_ADD

_FREED = object()
# held while a gradient is stored into or added to a leaf's .grad: two threads' backward passes into shared
# parameters add up instead of one overwriting the other (PyTorch's AccumulateGrad holds a mutex likewise)
ACCUMULATE_LOCK = threading.RLock()
# held while a leaf's AccumulateGrad is made (Tensor._get_accum, once per leaf): a leaf has one node, whichever threads
# first use it at once (PyTorch makes it under the leaf's autograd-meta mutex)
NEW_ACCUM_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child (a DataLoader worker) starts with both unlocked: a thread of the
    # parent that held one at the fork is not in the child, whose first backward would wait on it forever
    os.register_at_fork(after_in_child=ACCUMULATE_LOCK._at_fork_reinit)  # type: ignore[attr-defined]
    os.register_at_fork(after_in_child=NEW_ACCUM_LOCK._at_fork_reinit)  # type: ignore[attr-defined]


class RemovableHandle:
    """A handle that removes a hook from its ``OrderedDict`` (and from the extra dicts that carry the
    hook's options, e.g. ``with_kwargs``).  Usable as a context manager (PyTorch's torch.utils.hooks)."""

    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        if isinstance(extra_dict, dict):
            self.extra_dict_ref: tuple = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)
        else:
            self.extra_dict_ref = ()

    @classmethod
    def add(cls, hooks_dict, hook, prepend: bool = False) -> "RemovableHandle":
        """Register ``hook`` in ``hooks_dict`` (an OrderedDict) and return its handle."""
        handle = cls(hooks_dict)
        hooks_dict[handle.id] = hook
        if prepend:
            hooks_dict.move_to_end(handle.id, last=False)
        return handle

    def remove(self) -> None:
        """Unregister the hook this handle was returned for (safe to call twice)."""
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self) -> tuple:
        # as PyTorch's: the dicts themselves (a module saved with a handle kept in an attribute, the dicts shared
        # with the module's, so that the loaded handle removes the loaded module's hook)
        if not self.extra_dict_ref:
            return (self.hooks_dict_ref(), self.id)
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state: tuple) -> None:
        from collections import OrderedDict
        self.hooks_dict_ref = weakref.ref(state[0] if state[0] is not None else OrderedDict())  # (None: dead)
        self.id = state[1]
        # later handles must not reuse a loaded id
        RemovableHandle._ids = itertools.count(max(next(RemovableHandle._ids), self.id + 1))
        extra = state[2] if len(state) > 2 else None
        self.extra_dict_ref = () if extra is None else tuple(weakref.ref(d) for d in extra if d is not None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _version_error(t, node, saved_version) -> RuntimeError:
    """PyTorch 2.13's message for a saved tensor modified in place: the tensor's node, as the forward op's name
    (``Exp``, ``Add``, a custom Function's class name); for a saved output of ``node`` itself, ``node`` (what made
    it, whatever in-place op changed its grad_fn since); no node for a leaf."""
    outs = node.__dict__.get("_saved_outs")  # (a custom Function's saved outputs: id -> output number)
    if outs is not None and id(t) in outs:
        fn, nr = node, outs[id(t)]
    elif t is getattr(node, "out", None) or "_saved_result" in type(node).__dict__:  # a built-in op's saved result
        fn, nr = node, 0  # (a unary node whose one saved tensor is its result: exp's, sigmoid's)
    elif t._made_by is not None and t._made_by[0] is node:  # an output of node, whose grad_fn an in-place op changed
        fn, nr = node, t._made_by[1]  # (PyTorch's SavedVariable names the node that saved its own output)
    else:
        fn, nr = t.grad_fn, t._out_nr
    which = ""
    if fn is not None:
        name = fn.name()
        m = _BACKWARD_SUFFIX.search(name)
        # PyTorch's name: without "Backward0" (AddBackward0: Add), a later overload's number kept (ProdBackward1: Prod1)
        which = f", which is output {nr} of {name[:m.start()] + m.group(1).lstrip('0') if m else name},"
    from .anomaly_mode import state as anomaly
    hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable "
            "in question was changed in there or anywhere later. Good luck!" if anomaly.enabled else
            "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [torch.{t.dtype._tname} {list(t.shape)}]{which} is at version {t._vc[0]}; "
        f"expected version {saved_version} instead. {hint}")


_BACKWARD_SUFFIX = re.compile(r"Backward(\d*)$")


_TORCH_NS = frozenset(("AccumulateGrad", "CopySlices", "CopyBackwards", "GraphRoot", "Error", "DelayedError",
                       "NotImplemented", "UndefinedGrad", "UndefinedGradBackward"))


class Node:
    """A backward function in the graph.  ``next_functions`` is a tuple of (Node|None, output_nr)."""

    __slots__ = ("next_functions", "__dict__", "__weakref__")
    # rarely-set fields live in the instance __dict__ only when set: creating a node stays cheap
    _saved: Any = ()  # the saved tensors (or _FREED), and their versions when saved
    _versions: tuple = ()
    _pre_hooks: Any = None
    _hooks: Any = None
    _tensor_hooks: Any = None
    _out_meta: Any = None

    # apply and release are Node's (just the backward formula; free the saved tensors): the engine calls backward
    # directly and releases inline
    _plain = True
    _hooked = False  # set once any hook is registered on the node (never reset: the engine then checks them all)
    # the node's gradients come from user code (a custom Function's backward) and may be tensors held elsewhere (a
    # saved or global tensor): a leaf stores a copy, never the tensor itself, which the next backward adds into
    _user_grads = False

    out: Any = None  # nodes that keep their output declare an ``out`` slot
    next_functions: tuple

    if TYPE_CHECKING:  # an op's forward stores what its backward needs on the node (node.k = k): any name
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self):
        self.next_functions = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._plain = cls.apply is Node.apply and cls.release is Node.release

    def name(self) -> str:
        """The node's name, PyTorch's ``grad_fn`` name (``AddBackward0``, ...; its C++ autograd nodes'
        ``torch::autograd::CopySlices``, ``torch::autograd::AccumulateGrad``...: ``type(fn).__name__`` is bare)."""
        n = type(self).__name__
        return "torch::autograd::" + n if n in _TORCH_NS else n

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    # saved tensors with version check and release
    def save(self, *tensors) -> None:
        """Save tensors for the backward (version-checked when read by :meth:`saved`)."""
        self._saved = tensors
        self._versions = tuple([0 if t is None else t._vc[0] for t in tensors])  # a list: cheaper than a generator

    def saved(self) -> tuple:
        """The saved tensors; raises RuntimeError if they were released or modified in place since saving."""
        s = self._saved
        if s is _FREED:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors "
                "after they have already been freed). Saved intermediate values of the graph are freed "
                "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
                "backward through the graph a second time or if you need to access saved tensors after "
                "calling backward.")
        for t, v in zip(s, self._versions):
            if t is not None and t._vc[0] != v:
                raise _version_error(t, self, v)
        return s

    def release(self) -> None:
        # a node that saved nothing can run again, as in PyTorch (y = x + 1; y.backward(); y.backward())
        """Free the saved tensors (after backward without ``retain_graph``); a second backward then raises."""
        if self._saved:
            self._saved = _FREED
        if getattr(self, "out", None) is not None:  # a saved output kept outside _saved
            self.out = None

    # hooks
    def register_hook(self, fn) -> RemovableHandle:
        """Register ``fn(grad_inputs, grad_outputs)`` called after this node computed its gradients; it may return
        replacement ``grad_inputs``. Returns a handle whose ``remove()`` unregisters it.
        """
        if self._hooks is None:
            self._hooks = OrderedDict()
        self._hooked = True
        return RemovableHandle.add(self._hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """Register ``fn(grad_outputs)`` called before this node runs; it may return replacement
        ``grad_outputs``. Returns a handle whose ``remove()`` unregisters it.
        """
        if self._pre_hooks is None:
            self._pre_hooks = OrderedDict()
        self._hooked = True
        return RemovableHandle.add(self._pre_hooks, fn)

    def _register_tensor_hook(self, out_nr: int, fn) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        self._hooked = True
        return RemovableHandle.add(self._tensor_hooks.setdefault(out_nr, OrderedDict()), fn)

    def backward(self, *grads):  # pragma: no cover - overridden
        """Override: the gradients of the node's inputs (one per ``next_functions`` edge) from its output gradients."""
        raise NotImplementedError(f"{self.name()} has no backward")

    def apply(self, *grads):
        """Call the backward formula (``grads`` has one entry per output)."""
        return self.backward(*grads)

    def __call__(self, *grads) -> Any:
        """``grad_fn(*grad_outputs)``: the node's gradients for its inputs (PyTorch's nodes are callable; recorded
        by autograd in grad mode, as theirs): the gradient itself for a node of one input, else a tuple."""
        r = self.apply(*grads)
        r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
        return r[0] if len(r) == 1 else r

    @property
    def metadata(self) -> dict:
        """A dict for user data attached to this node (PyTorch's ``grad_fn.metadata``)."""
        m = self.__dict__.get("_metadata")
        if m is None:
            m = self.__dict__["_metadata"] = {}
        return m


class AccumulateGrad(Node):
    """The sink node of a leaf tensor: adds incoming gradients into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        Node.__init__(self)
        self.variable = variable

    def release(self) -> None:
        pass

    def apply(self, grad):
        """Accumulate into ``variable.grad``; ``grad`` is already owned by the caller (see engine)."""
        with ACCUMULATE_LOCK:
            self._accumulate(grad)
        post = self.variable._post_accumulate_grad_hooks  # Tensor.register_post_accumulate_grad_hook's
        if post:
            for fn in list(post.values()):
                r = fn(self.variable)
                if r is not None:  # (PyTorch's errors: the hook is for its side effects)
                    if hasattr(r, "_vc"):
                        raise RuntimeError("Tensor post accumulate grad hooks should return None.")
                    raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
        if self._hooks:  # the node's post hooks: no gradient inputs, the accumulated gradient as output
            from .engine import _check_node_hook_result
            for fn in list(self._hooks.values()):
                r = fn((), (grad,))
                if r is not None:
                    _check_node_hook_result(fn, (), r)  # (no gradient inputs: any value is one too many)
        return ()

    def _accumulate(self, grad) -> None:
        v = self.variable
        if v._gdt is not False:  # grad_dtype set (coretorch/_grad_assign.py): the gradient takes that dtype
            want = v._gdt
            if want is not None and grad.dtype is not want:
                grad = grad.to(want)
        if v._grad is None:
            # a gradient computed outside grad mode is already a graph-free tensor: store it as is
            g = grad if _gs.enabled or (grad.grad_fn is None and not grad._rg) else grad.detach()
            if g._be is v._be and g.dtype is v.dtype and g._data.shape == v._data.shape:
                if g._data.strides != v._data.strides and not _gs.enabled:
                    g = _obey_layout(g, v)
                v._grad = g  # what the grad setter would check, checked: no property call
            else:
                v.grad = g
        elif "_coo" in grad.__dict__ or "_coo" in v._grad.__dict__:  # sparse gradients add up sparse
            v.grad = SPARSE_ADD[0](v._grad, grad)
        elif _gs.enabled:
            v.grad = v.grad + grad
        else:
            g = v.grad
            if g._be.has("iadd") and g.dtype is grad.dtype and g._data.shape == grad._data.shape:
                g._be.iadd(g._data, grad._data)
            else:
                g._be.assign_(g._data, g._be.add(g._data, grad._data))
            g._vc[0] += 1


def _obey_layout(g, v):
    """The first gradient of the leaf ``v`` in v's layout (PyTorch's gradient layout contract: a dense leaf's
    strides, row-major for any other leaf); ``g`` itself where it is so already."""
    from ..ops import _memfmt
    from ..tensor import _make
    t, vd, gd = v._be, v._data, g._data
    o = None if t.is_contiguous(vd) else _memfmt.order(tuple(vd.shape), tuple(t.strides(vd)))
    if o is not None and not t.is_contiguous(t.permute(vd, o)):
        o = None  # (a leaf with gaps: row-major, as PyTorch's contiguous() there)
    if o is None:
        return g if t.is_contiguous(gd) else _make(t.contiguous(gd), g.dtype, t)
    return _make(t.permute(t.contiguous(t.permute(gd, o)), _memfmt.inverse(o)), g.dtype, t)


class GraphRoot(Node):
    """The node ``backward``/``grad`` start from: it feeds the given output gradients into the graph."""
    __slots__ = ()

from .grad_mode import state as _gs  # noqa: E402
from ._graph_extras import (GradientEdge, disable_saved_tensors_hooks, get_gradient_edge,  # noqa: E402,F401
                            increment_version, register_multi_grad_hook, save_on_cpu, saved_tensors_hooks)
