"""One process-wide re-entrant lock around every kernel that reads, advances or sets a generator's state.

A single draw is whole without it (numpy's generators lock each call; the opencl kernels hold their device's
lock), but a compiled replay that may undo its draws (``_compile/rngundo.py``: a checked read after a Gamma
sampler's rejection rounds sets the generators back to their states at the replay's start, then runs the call
eagerly) must also keep the other threads' draws out of that window: set back, a generator handed another thread's
numbers to this call's eager run again (two threads got the same samples) and lost that thread's draws.  The
kernel table (``_backend.KernelTable``) runs each generator kernel holding ``LOCK``; such a replay holds it from
its first line to its last check that may undo, so other threads draw before or after the window, never inside.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

LOCK = threading.RLock()
if hasattr(os, "register_at_fork"):  # a forked child (a DataLoader worker) starts unlocked: the parent's thread
    os.register_at_fork(after_in_child=LOCK._at_fork_reinit)  # type: ignore[attr-defined]  # that held it is gone

# the kernels whose first argument is a generator state (rng_new/rng_initial_seed/rng_default read no changing
# state), and the draws of a backend without generator states (its own hidden one)
KERNELS = frozenset({"rng_fill_", "rng_randint", "rng_poisson", "rng_multinomial", "rng_randperm", "rng_seed",
                     "rng_set_state", "rng_get_state", "rand", "randn", "randint", "uniform_", "normal_"})


_WRAPPED: dict = {}  # kernel -> its wrapper: a table refilled (a plugin's kernels) keeps its entries' identities


def locked(fn: Callable) -> Callable:
    """``fn`` run holding :data:`LOCK` (one wrapper per kernel)."""
    try:
        w = _WRAPPED.get(fn)
    except TypeError:  # (an unhashable callable)
        w = None
    if w is not None:
        return w
    lock = LOCK

    def kernel(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return fn(*args, **kwargs)

    kernel.__wrapped__ = fn  # type: ignore[attr-defined]
    kernel.__name__ = getattr(fn, "__name__", "kernel")
    kernel.__qualname__ = getattr(fn, "__qualname__", kernel.__name__)
    try:
        _WRAPPED[fn] = kernel
    except TypeError:
        pass
    return kernel
