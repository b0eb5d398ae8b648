"""torch.utils.checkpoint: accepted with PyTorch's signatures.  coretorch runs the function once and keeps its
graph (no recomputation in the backward), so results and gradients are those of the plain call; only the memory
saving is missing."""
from __future__ import annotations

import warnings

__all__ = ["checkpoint", "checkpoint_sequential"]

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


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=None, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs):
    """``function(*args, **kwargs)``, differentiable as usual.  coretorch keeps the function's graph instead of
    recomputing it in the backward: the result and the gradients are those of the plain call, and no memory is
    saved.

    Args:
        function: what to run (a module or any callable).
        *args, **kwargs: its arguments (keywords only with ``use_reentrant=False``, as PyTorch).
        use_reentrant (bool): pass it explicitly (PyTorch warns when it is omitted, and so does this).
        context_fn, determinism_check, debug, preserve_rng_state: accepted for PyTorch's signature.

    Returns:
        ``function(*args, **kwargs)``.

    Example:
        >>> from coretorch.utils.checkpoint import checkpoint
        >>> x = torch.ones(2, requires_grad=True)
        >>> checkpoint(lambda t: (t * 3).sum(), x, use_reentrant=False).backward()
        >>> x.grad
        tensor([3., 3.])
    """
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        from ..tensor import Tensor
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            # as PyTorch's reentrant checkpoint (an autograd.Function of the inputs): no input that requires grad,
            # no graph (parameters used inside get no gradient)
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", UserWarning,
                          stacklevel=2)
            from ..autograd.grad_mode import no_grad
            with no_grad():
                return function(*args)
    return _saves_inputs(function(*args, **kwargs), args)


def _saves_inputs(out, args):
    """PyTorch's checkpoint saves its tensor inputs for the recomputation (version-checked): one changed in place
    before the backward raises "modified by an inplace operation".  coretorch keeps the function's graph, whose nodes
    may have saved other tensors (``x.exp()`` its result): each output's node checks the inputs' versions too."""
    from ..autograd._node_names import saves_also
    from ..autograd.grad_mode import state
    from ..tensor import Tensor
    inputs = tuple(a for a in args if isinstance(a, Tensor))
    if not inputs or not state.enabled:
        return out
    for o in (out if isinstance(out, (tuple, list)) else (out,)):
        if isinstance(o, Tensor) and o._gf is not None and not any(o is a for a in inputs):
            saves_also(o, *inputs)
    return out


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules/callables) in order on ``input``, in
    ``segments`` chunks: each chunk but the last through ``checkpoint`` (so with ``use_reentrant=True`` and an input
    that does not require grad, those chunks record no graph, as PyTorch's), no recomputation.

    Args:
        functions: an ``nn.Sequential`` or a list.
        segments (int): the number of checkpointed chunks.
        input (Tensor): the first function's input.
        use_reentrant (bool): pass it explicitly, as for ``checkpoint``.
        preserve_rng_state (bool): accepted (nothing is recomputed).

    Returns:
        Tensor: the last function's output.
    """
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_WARNING, UserWarning, stacklevel=2)
        use_reentrant = True
    kwargs.pop("preserve_rng_state", True)
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
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant)
    return run(end + 1, len(functions) - 1)(input)
