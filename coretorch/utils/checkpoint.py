"""torch.utils.checkpoint: activation checkpointing, as PyTorch's.  The checkpointed function's activations are not
kept for the backward; the backward runs it again (with the random generators and autocast as at the forward) and
differentiates the recomputed segment.  ``use_reentrant=True`` is PyTorch's :class:`CheckpointFunction` (an
autograd Function of the tensor arguments whose backward runs an inner ``backward``); ``use_reentrant=False``
(recommended) cuts the graph at the segment's boundary instead (``_checkpoint_segment.py``), so ``autograd.grad``,
keyword arguments and tensors the function reads from outside all work.  Values and gradients are the plain call's."""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, ContextManager, Iterable

from . import _checkpoint_segment
from ..autograd.function import Function

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
           "detach_variable", "get_device_states", "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "DefaultDeviceType", "set_checkpoint_debug_enabled"]

# PyTorch's two warnings, word for word (checkpoint's was reworded for 2.9; checkpoint_sequential's was not)
_REENTRANT_WARNING = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between the "
                      "two variants.")
_SEQUENTIAL_WARNING = ("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                       "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                       "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                       "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                       "the two variants.")


class CheckpointError(RuntimeError):
    """Raised where a checkpoint's recomputation differs from its forward (PyTorch's)."""


def noop_context_fn() -> tuple[ContextManager, ContextManager]:
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_early_stop: list = [None]
_debug: list = [None]


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Accepted as PyTorch's: coretorch's recomputation always runs the whole function (``enable=False``'s
    behaviour)."""
    prev, _early_stop[0] = _early_stop[0], enable
    try:
        yield
    finally:
        _early_stop[0] = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Accepted as PyTorch's (``debug=`` prints nothing more in coretorch)."""
    prev, _debug[0] = _debug[0], enabled
    try:
        yield
    finally:
        _debug[0] = prev


class DefaultDeviceType:
    """The device type whose generator states a checkpoint keeps when no tensor argument names one (PyTorch's; the
    default is the accelerator's, ``opencl`` where one exists, else ``cpu``)."""

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """Set the default device type for checkpointing (PyTorch's default argument, ``cuda``, names no device
        here)."""
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """The default device type for checkpointing: the one set, else the accelerator's (``opencl``) or ``cpu``."""
        if not DefaultDeviceType._default_device_type:
            from .. import accelerator
            acc = accelerator.current_accelerator(True)
            DefaultDeviceType._default_device_type = acc.type if acc is not None else "cpu"
        return DefaultDeviceType._default_device_type


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor of ``inputs`` detached, keeping its ``requires_grad`` (other values as they are)."""
    from ..tensor import Tensor
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for a in inputs:
        if isinstance(a, Tensor):
            d = a.detach()
            d.requires_grad = a.requires_grad
            a = d
        out.append(a)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warn (as PyTorch) where no tensor of ``inputs`` requires grad: the reentrant checkpoint gives no gradients."""
    from ..tensor import Tensor
    if not any(a.requires_grad for a in inputs if isinstance(a, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def get_device_states(*args) -> tuple[list, list]:
    """The device indices of the non-cpu tensors among ``args`` and their default generators' states."""
    from ..ops.random import default_for
    from ..tensor import Tensor
    ids, states = [], []
    for a in _checkpoint_segment._tensors(args):
        if isinstance(a, Tensor) and a.device.type != "cpu":
            ids.append(a.get_device())
            states.append(default_for(a.device).get_state())
    return ids, states


def set_device_states(devices, states, *, device_type: str | None = None) -> None:
    """Set the default generators of ``devices`` (indices of ``device_type``) to ``states``."""
    from ..ops.random import default_for
    device_type = device_type or DefaultDeviceType.get_device_type()
    for d, s in zip(devices, states):
        default_for(f"{device_type}:{d}").set_state(s)


def _is_checkpoint_valid() -> bool:
    """Whether the running backward may hold a reentrant checkpoint: not ``autograd.grad`` nor ``backward(inputs=)``
    (PyTorch's ``torch.autograd._is_checkpoint_valid``)."""
    from ..autograd.engine import _TASK
    t = getattr(_TASK, "cur", None)
    return t is None or not t[4]


class CheckpointFunction(Function):
    """PyTorch's reentrant checkpoint: the forward runs ``run_function`` without a graph; the backward runs it
    again on detached copies of the inputs and backpropagates through it with an inner ``backward`` (the
    parameters it uses accumulate their gradients there)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        from ..autograd.grad_mode import no_grad
        from ..tensor import Tensor
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.state = _checkpoint_segment.ForwardState(preserve_rng_state)
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_indices])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        from .. import autograd
        from ..tensor import Tensor
        if not _is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                               "either set use_reentrant=False, or call .backward() without passing the "
                               "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with ctx.state.restored():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad, grads_of = [], []
        for o, g in zip(outputs, grads):
            if isinstance(o, Tensor) and o.requires_grad:
                with_grad.append(o)
                grads_of.append(g)
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd.backward(with_grad, grads_of)
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in detached)



def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[ContextManager, ContextManager]] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True, **kwargs):
    """Checkpoint a part of a model: ``function(*args, **kwargs)`` whose activations are recomputed in the backward
    instead of being kept (less memory for one more forward of the part).

    Args:
        function: what to run (a module or any callable); it should compute the same on the recomputation.
        *args, **kwargs: its arguments (keywords only with ``use_reentrant=False``, as PyTorch).
        use_reentrant (bool): pass it explicitly (PyTorch warns when it is omitted, and so does this);
            ``False`` is recommended (works with ``autograd.grad`` and tensors the function reads from outside).
        preserve_rng_state (bool): keyword, default True: the recomputation draws the forward's random numbers.
        context_fn: ``() -> (forward context, recomputation context)`` (``use_reentrant=False`` only).
        determinism_check (str): ``"default"`` compares the recomputed outputs' shapes, dtypes and devices with the
            forward's (CheckpointError when they differ); ``"none"`` does not.
        debug, early_stop: accepted (coretorch always recomputes the whole function).

    Returns:
        ``function(*args, **kwargs)``, its outputs attached to the checkpoint's node.

    Example:
        >>> from coretorch.utils.checkpoint import checkpoint
        >>> x = torch.ones(2, requires_grad=True)
        >>> checkpoint(lambda t: (t * 3).sum(), x, use_reentrant=False).backward()
        >>> x.grad
        tensor([3., 3.])
    """
    preserve = kwargs.pop("preserve_rng_state", True)
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got " + str(determinism_check))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        from ..autograd.grad_mode import state as grad_state
        from ..tensor import Tensor
        if grad_state.enabled and any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return CheckpointFunction.apply(function, preserve, *args)
        check_backward_validity(args)  # (no graph: as PyTorch's Function of inputs that need no grad)
        from ..autograd.grad_mode import no_grad
        with no_grad():
            return function(*args)
    if context_fn is not noop_context_fn:
        fwd_ctx, recompute_ctx = context_fn()
        with fwd_ctx:
            return _checkpoint_segment.run(function, args, kwargs, preserve, determinism_check, recompute_ctx)
    return _checkpoint_segment.run(function, args, kwargs, preserve, determinism_check)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules/callables) in order on ``input``, in
    ``segments`` chunks: each chunk but the last through ``checkpoint`` (so with ``use_reentrant=True`` and an input
    that does not require grad, those chunks record no graph, as PyTorch's), recomputed in the backward.

    Args:
        functions: an ``nn.Sequential`` or a list.
        segments (int): the number of checkpointed chunks.
        input (Tensor): the first function's input.
        use_reentrant (bool): pass it explicitly, as for ``checkpoint``.
        preserve_rng_state (bool): keyword, default True: each recomputation draws the forward's random numbers.

    Returns:
        Tensor: the last function's output.
    """
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())

    def run(start: int, end: int):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
