"""Declining kernels (``capture.DECLINING``: a fused optimizer update that returns False where it declines its
operands' layout) in a replay: run on contiguous copies where they decline (see :func:`on_copies`)."""
from __future__ import annotations

from typing import Any, Callable

from .. import _backend


def table_of(name: str, kernel: Callable) -> Any:
    """The device kernel table whose entry ``name`` is ``kernel`` (None outside every table)."""
    return next((t for t in _backend._tables.values() if t.__dict__.get(name) is kernel), None)


def on_copies(name: str, kernel: Callable, types: tuple) -> Callable:
    """A declining kernel (``DECLINING``) for a replay: where it declines its operands (a parameter's data replaced
    by a view of another layout since the capture) it runs on contiguous copies that are then written back, which
    gives what eager's other path gives (the kernels' contract: the same results as the composite or foreach step);
    False only where it declines those too (nothing written)."""
    def run(*args):
        if kernel(*args):
            return True
        table = table_of(name, kernel)  # (looked up now: while recording, the entries are the recording wrappers)
        if table is None:
            return False
        copied: list = []

        def copy(a):
            if isinstance(a, list):
                return [copy(x) for x in a]
            if isinstance(a, types):
                c = table.contiguous(a)
                if c is not a:
                    copied.append((a, c))
                return c
            return a
        if not kernel(*[copy(a) for a in args]):
            return False
        for a, c in copied:
            table.assign_(a, c)
        return True
    return run
