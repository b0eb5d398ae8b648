"""autograd.Function: custom differentiable ops written the way PyTorch users write them."""
from __future__ import annotations

from typing import Any

from .. import tensor as _tensor_mod  # resolved at call time (tensor imports autograd)
from .grad_mode import state
from .graph import _FREED, Node


class FunctionCtx:
    """The ``ctx`` API (mixed into every backward node of a user Function)."""
    save: Any  # (provided by Node, which every ctx also is)
    saved: Any

    def save_for_backward(self, *tensors) -> None:
        """Save tensors for ``backward``, which reads them from ``ctx.saved_tensors``.

        Saved tensors are checked for in-place modification when read (PyTorch's version counter).
        """
        Tensor = _tensor_mod.Tensor
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self.save(*tensors)

    _in_forward = False  # (True while the Function's forward / setup_context runs)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors saved by :meth:`save_for_backward`, in order (empty while forward runs, as PyTorch's: they
        are saved when it returns)."""
        if self._in_forward:
            return ()
        return self.saved()

    @property
    def saved_variables(self) -> tuple:
        """Deprecated spelling of :attr:`saved_tensors` (warns, as PyTorch)."""
        import warnings
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved()

    def mark_dirty(self, *tensors) -> None:
        """Declare that ``forward`` modified these input tensors in place (they must be returned as outputs)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that have no gradient (e.g. indices); their gradients arrive as zeros."""
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` receives None instead of zero tensors for outputs without a gradient."""
        self._materialize = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """Graph node of a user Function; ``ctx`` *is* this node (as in PyTorch)."""

    _forward_cls = None
    _user_grads = True

    def __init__(self):
        Node.__init__(self)
        self._dirty = ()
        self._non_diff = ()
        self._materialize = True
        self.needs_input_grad = ()
        self._tensor_pos = ()
        self._n_args = 0

    def name(self) -> str:
        return type(self).__name__

    def release(self) -> None:
        # as in torch, only the saved tensors are freed: attributes the user put on ``ctx`` stay
        self._saved = _FREED

    def apply(self, *grads):
        cls = self._forward_cls
        backward = cls.backward
        if backward is Function.backward:  # (PyTorch's choice: the Function may define ``vjp`` instead)
            backward = cls.vjp
        elif cls.vjp is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                               "should only implement one of them.")
        res = backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = self._n_args
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                                   f"(expected {n}, got {len(res)})")
        Tensor = _tensor_mod.Tensor
        tpos = self._tensor_pos
        for i, r in enumerate(res):
            if r is not None and i not in tpos:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
        out = []
        for pos, meta in zip(self._tensor_pos, self._in_meta):
            g = res[pos]
            if g is not None:
                if not isinstance(g, Tensor):
                    raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
                shape, dtype, table = meta
                if g._be is not table:  # (PyTorch moves a 0-d gradient only)
                    if g.dim() != 0:
                        raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {pos} "
                                           f"- expected device {table.device} but got {g.device}")
                    g = g.to(table.device)
                if g.dtype is not dtype:  # as PyTorch's engine: cast to the input's dtype
                    g = g.to(dtype)
                if tuple(g.shape) != tuple(shape):
                    from ..ops._util import sum_to
                    try:
                        g = sum_to(g, tuple(shape))
                    except Exception:
                        raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {pos} "
                                           f"- got {list(g.shape)} but expected shape compatible with "
                                           f"{list(shape)}") from None
                    if tuple(g.shape) != tuple(shape):
                        raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {pos} "
                                           f"- got {list(g.shape)} but expected shape compatible with "
                                           f"{list(shape)}")
            out.append(g)
        return tuple(out)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})


class Function(metaclass=_FunctionMeta):
    """Subclass with static ``forward(ctx, ...)`` and ``backward(ctx, *grads)``; call ``Fn.apply(...)``.

    The ``setup_context(ctx, inputs, output)`` form (forward without ctx) is supported too.
    """

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, so "
                      "you should invoke them on the class itself. Instantiating an autograd function will raise an "
                      "error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Override: compute the outputs from the inputs.

        Receives ``ctx`` first (unless ``setup_context`` is defined), then the arguments of ``apply``; runs with
        gradient recording off. Save what backward needs with ``ctx.save_for_backward(...)``.
        """
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optional override: fill ``ctx`` from ``inputs`` and ``output`` when ``forward`` does not take ``ctx``
        (PyTorch 2's form, needed by ``functorch``-style transforms).
        """
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Override: the gradients of the inputs from the gradients of the outputs.

        Receives ``ctx`` and one gradient per output of ``forward``; returns one gradient (or None) per input of
        ``forward``. Written with Tensor ops, so it is itself differentiable (double backward).
        """
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode AD's formula (PyTorch's name; coretorch has no forward-mode AD)."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    # PyTorch's switch for torch.func.vmap's automatic batching rule (coretorch has no vmap: read, never used)
    generate_vmap_rule = False

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run the Function on ``args``: calls ``forward`` without recording, then connects the outputs to the graph
        with a node whose backward is this class's ``backward``. Call ``MyFunction.apply(x, ...)``, not
        ``forward``.
        """
        Tensor, _make, edge = _tensor_mod.Tensor, _tensor_mod._make, _tensor_mod._edge
        ctx = cls._backward_cls()
        uses_setup = cls.setup_context is not Function.setup_context
        if uses_setup:
            # as torch does, bind forward's defaults so setup_context's ``inputs`` lists every argument
            sig = cls.__dict__.get("_forward_signature")
            if sig is None or sig[0] is not cls.forward:  # (read once per class: ~10 us a call)
                import inspect
                sig = (cls.forward, inspect.signature(cls.forward))
                setattr(cls, "_forward_signature", sig)
            bound = sig[1].bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        tensor_pos = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        ctx._n_args = len(args)
        record = state.enabled and any(ctx.needs_input_grad)
        prev = state.enabled
        state.enabled = False
        ctx._in_forward = True
        try:
            if uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            state.enabled = prev
            ctx._in_forward = False
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if ctx._dirty:
            _check_dirty(ctx._dirty, outs, args)
        if not record:
            return outputs
        ctx.next_functions = tuple(edge(args[i]) for i in tensor_pos)
        ctx._tensor_pos = tensor_pos
        ctx._in_meta = tuple((tuple(args[i].shape), args[i].dtype, args[i]._be) for i in tensor_pos)
        dirty = {id(t) for t in ctx._dirty}
        non_diff = {id(t) for t in ctx._non_diff}
        inputs = {id(args[i]) for i in tensor_pos}
        wrapped = []
        meta = []
        for nr, o in enumerate(outs):
            if not isinstance(o, Tensor):
                wrapped.append(o)
                meta.append(((), None, None))
                continue
            meta.append((tuple(o.shape), o.dtype, o._be))
            if id(o) in non_diff or not o.dtype.is_floating_point:
                # (an input returned as-is gets its own identity, outside the graph, as PyTorch's: its detach(), no
                # view of it for autograd, so that an in-place op on it is no in-place op on a view of a leaf)
                wrapped.append(o.detach() if id(o) in inputs and o._rg else o)
                continue
            if id(o) in dirty:
                if o._rg and o.grad_fn is None:
                    raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                                       "operation.")
                old_fn, old_nr = o.grad_fn, o._out_nr
                b = o._vbase
                if b is not None and not o._det and o._rg == b._rg:
                    # a view of a base modified in place: the base's graph gets the region's new gradient, as an
                    # in-place op on a view (PyTorch's CopySlices)
                    from ..ops.inplace import rebase_view_onto
                    rebase_view_onto(o, ctx, nr, cls.__name__)
                else:
                    o.grad_fn, o._out_nr, o._rg = ctx, nr, True
                if o._retains:
                    from ..tensor import _move_retains_hook
                    _move_retains_hook(o, old_fn, old_nr)
                wrapped.append(o)
            else:
                if id(o) in inputs or o.grad_fn is not None:
                    # an input returned as-is (or a tensor already in a graph): give the output its own identity
                    o = _make(o._data, o.dtype, o._be, ctx, nr, base=o, version=o._vc)
                else:
                    o.grad_fn, o._out_nr, o._rg = ctx, nr, True
                if o._vbase is not None and not o._det:
                    # a view: in-place ops on it, or its base's changed since, raise (they would bypass backward)
                    o._mo, o._cfv = o._vc[0], True
                wrapped.append(o)
        ctx._out_meta = tuple(meta) if len(outs) > 1 else None
        if ctx._saved:  # as PyTorch saves at the end of forward: the versions after it (mark_dirty's bump)
            ctx._versions = tuple([0 if t is None else t._vc[0] for t in ctx._saved])
            outs_nr = {id(o): nr for nr, o in enumerate(outs) if isinstance(o, Tensor)}
            # the saved outputs, which a version error names as this Function's (PyTorch's "output 0 of F")
            ctx._saved_outs = {id(t): outs_nr[id(t)] for t in ctx._saved if t is not None and id(t) in outs_nr}
        return wrapped[0] if single else tuple(wrapped)


def _check_dirty(dirty: tuple, outs: tuple, args: tuple) -> None:
    """PyTorch's rules for ``ctx.mark_dirty``: every tensor marked is returned, and its version goes up by one
    (what was saved of it before the Function raises at the backward, also where forward wrote it without an
    in-place op that counts, e.g. through ``.data``); one that is no input is marked with a warning."""
    returned = {id(o) for o in outs}
    inputs = {id(a) for a in args}
    if any(id(t) not in inputs for t in dirty):
        import warnings
        warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
                      "mutated should be passed to ctx.mark_dirty().", UserWarning, stacklevel=3)
    for t in dirty:
        if id(t) not in returned:
            raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                               "The inputs that are modified inplace must all be outputs of the Function.")
    for t in {id(t): t for t in dirty}.values():
        t._vc[0] += 1


class InplaceFunction(Function):
    """A :class:`Function` with an ``inplace`` flag (the legacy base of in-place custom functions)."""
    pass


class NestedIOFunction(Function):
    """A legacy :class:`Function` base whose ``forward``/``backward`` take and return nested structures."""
    pass


def once_differentiable(fn):
    """Accepted for compatibility: the backward runs without building a graph."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = state.enabled
        state.enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            state.enabled = prev
        Tensor, _make = _tensor_mod.Tensor, _tensor_mod._make
        if not prev or not any(isinstance(a, Tensor) and a._rg for a in args):
            return outputs
        # as torch does: results that would need a graph get a grad_fn that refuses double backward
        err = _DelayedError()
        single = not isinstance(outputs, tuple)
        outs = tuple(o if not isinstance(o, Tensor) or not o.dtype.is_floating_point
                     else _make(o._data, o.dtype, o._be, err, nr, version=o._vc)
                     for nr, o in enumerate((outputs,) if single else outputs))
        return outs[0] if single else outs
    return wrapper


class _DelayedError(Node):
    __slots__ = ()

    def name(self) -> str:
        return "DelayedError"

    def apply(self, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")
