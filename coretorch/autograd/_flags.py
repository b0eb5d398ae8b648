"""PyTorch's autograd engine switches that coretorch accepts: ``set_multithreading_enabled`` (coretorch's backward
always runs on the calling thread: the switch is kept, thread-locally, for programs that set and read it) and
``is_view_replay_enabled`` (False: views are rebuilt by their own backward nodes, not replayed)."""
from __future__ import annotations

import threading
from typing import Any

__all__ = ["set_multithreading_enabled", "is_multithreading_enabled", "is_view_replay_enabled"]

_state = threading.local()


def is_multithreading_enabled() -> bool:
    """The multithreaded-backward switch of this thread (True unless turned off)."""
    return getattr(_state, "multithreading", True)


def is_view_replay_enabled() -> bool:
    """False: coretorch does not replay views in the backward."""
    return False


class set_multithreading_enabled:
    """Set the multithreaded-backward switch (as a call, a context manager or a decorator); the previous value
    comes back when the block ends."""

    def __init__(self, mode: bool) -> None:
        self.prev = is_multithreading_enabled()
        _state.multithreading = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _state.multithreading = self.prev

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with set_multithreading_enabled(self.mode):
                return fn(*args, **kwargs)
        _state.multithreading = self.prev  # as a decorator, constructing it did not change the switch for good
        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = fn.__doc__
        return wrapper

    def clone(self) -> "set_multithreading_enabled":
        """A new instance with the same mode."""
        return self.__class__(self.mode)
