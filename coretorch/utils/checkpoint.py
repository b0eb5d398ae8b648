"""torch.utils.checkpoint: accepted with PyTorch's signatures.  coretorch runs the function once and keeps its
graph (no recomputation in the backward), so results and gradients are those of the plain call; only the memory
saving is missing."""
from __future__ import annotations

import warnings

__all__ = ["checkpoint", "checkpoint_sequential"]

_REENTRANT_WARNING = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version "
                      "2.5 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences between the two "
                      "variants.")


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
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules/callables) in order on ``input``, as
    ``checkpoint`` does for one function (no recomputation).

    Args:
        functions: an ``nn.Sequential`` or a list.
        segments (int): the number of checkpointed chunks (accepted as in PyTorch; nothing is recomputed).
        input (Tensor): the first function's input.
        use_reentrant (bool): pass it explicitly, as for ``checkpoint``.

    Returns:
        Tensor: the last function's output.
    """
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, UserWarning, stacklevel=2)
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    for fn in functions:
        input = fn(input)
    return input
