"""torch.autograd.graph's helpers around saved tensors: ``increment_version``, ``save_on_cpu`` (accepted: coretorch's
saved tensors stay where they are), ``disable_saved_tensors_hooks``, and ``saved_tensors_hooks`` (not supported:
raises); ``GradientEdge``/``get_gradient_edge`` (an edge ``autograd.grad`` takes as an input);
``register_multi_grad_hook``."""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, NamedTuple

__all__ = ["increment_version", "save_on_cpu", "disable_saved_tensors_hooks", "saved_tensors_hooks", "GradientEdge",
           "get_gradient_edge", "register_multi_grad_hook"]


class GradientEdge(NamedTuple):
    """A place in the graph a gradient flows into: ``node`` (a grad_fn or a leaf's AccumulateGrad) and its input
    ``output_nr``; ``autograd.grad`` accepts one as an input (the gradient that reaches the edge)."""
    node: Any
    output_nr: int


def get_gradient_edge(tensor: Any) -> GradientEdge:
    """The edge that receives ``tensor``'s gradient (its grad_fn and output number, or a leaf's AccumulateGrad):
    usable after ``tensor`` itself was modified in place or dropped."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    from .engine import _grad_edge
    node, nr = _grad_edge(tensor)
    return GradientEdge(node, nr)



class _Disabled(threading.local):
    """The message of this thread's innermost ``disable_saved_tensors_hooks`` (None: hooks allowed), and the
    messages its open blocks replaced (a stack: one instance entered by several threads, or as a decorator, keeps
    each block's own).  Per thread, as PyTorch's (SavedTensorDefaultHooksTLS): one thread's block leaves another
    thread's ``save_on_cpu`` working."""
    message: str | None = None

    def __init__(self) -> None:
        self.stack: list = []


_DISABLED = _Disabled()


def increment_version(tensor: Any) -> None:
    """Raise the version counter of ``tensor`` (or of each tensor of an iterable) by one, as an in-place op does:
    a graph that saved it raises at its backward (for code that writes a tensor's memory outside coretorch's ops)."""
    from ..tensor import Tensor  # (tensor imports autograd: resolved at call time)
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._vc[0] += 1


class _ContextDecorator:
    """A context manager that also decorates functions (each call runs inside it)."""

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class saved_tensors_hooks(_ContextDecorator):
    """PyTorch's pack/unpack hooks for the tensors autograd saves: not supported by coretorch (its ops keep what
    their backward needs on the graph nodes directly), so entering it raises NotImplementedError rather than
    silently not calling the hooks."""

    def __init__(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        if _DISABLED.message is not None:
            raise RuntimeError(_DISABLED.message)
        raise NotImplementedError("torch.autograd.graph.saved_tensors_hooks is not supported by coretorch: the "
                                  "tensors saved for the backward cannot be packed and unpacked by user hooks")

    def __exit__(self, *exc: Any) -> None:
        pass


class save_on_cpu(_ContextDecorator):
    """PyTorch moves the tensors saved for the backward to the CPU while inside (saving device memory); coretorch
    accepts it and keeps them where they are: results and gradients are the same, only the memory saving is
    missing (as ``utils.checkpoint``)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self) -> "save_on_cpu":
        if _DISABLED.message is not None:
            raise RuntimeError(_DISABLED.message)
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class disable_saved_tensors_hooks(_ContextDecorator):
    """Inside it, entering ``save_on_cpu`` (or ``saved_tensors_hooks``) raises RuntimeError(error_message)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> "disable_saved_tensors_hooks":
        _DISABLED.stack.append(_DISABLED.message)
        _DISABLED.message = self.error_message
        return self

    def __exit__(self, *exc: Any) -> None:
        _DISABLED.message = _DISABLED.stack.pop()


class _MultiHandle:
    """The handle of a multi-grad hook: removes every tensor hook it registered."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self) -> "_MultiHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Any, fn: Callable, *, mode: str = "all") -> _MultiHandle:
    """PyTorch's multi-grad hook.  ``mode="all"``: in each backward pass, once the gradients of all the ``tensors``
    the pass computes are there, ``fn(grads)`` (None for those it does not compute); ``mode="any"``: ``fn(grad)``
    once per pass, with the first of their gradients computed.  Returns a handle whose ``remove()`` unregisters it.
    """
    from .engine import _grad_edge, current_graph_task_id, will_engine_execute_node
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of {('all', 'any')} but got {mode}")
    lock = threading.Lock()
    if mode == "any":
        ran: dict = {}

        @functools.wraps(fn)
        def first(grad):
            task = current_graph_task_id()
            with lock:
                prev, ran[task] = ran.get(task, False), True
            if not prev:
                fn(grad)
        return _MultiHandle(tuple(t.register_hook(first) for t in tensors if t.requires_grad))
    tensors = tuple(tensors)
    nodes = [_grad_edge(t)[0] for t in tensors]
    count: dict = {}
    buffer: dict = {}
    expected: dict = {}

    def hook_for(i: int) -> Callable:
        def hook(grad):
            task = current_graph_task_id()
            with lock:
                seen = count.get(task, 0)
                count[task] = seen + 1
                if seen == 0:
                    buffer[task] = [None] * len(tensors)
                    expected[task] = sum(n is not None and will_engine_execute_node(n) for n in nodes)
            buffer[task][i] = grad
            if seen == expected[task] - 1:
                grads = buffer.pop(task)
                del count[task], expected[task]
                fn(grads)
        return hook
    return _MultiHandle(tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors)))
