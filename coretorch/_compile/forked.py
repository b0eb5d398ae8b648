"""A forked child (a DataLoader worker, ``multiprocessing`` with fork) started while a thread of the parent captured.

That thread does not exist in the child, so its capture never ends there: every kernel table, Tensor method and host
random function stayed patched with the recorder's wrappers (each of the child's launches went through them and the
last 4096 results were kept alive, see :mod:`.foreign`), and the capture lock stayed taken, so no compiled call of the
child ever captured.  The child undoes the capture's patches and frees the lock (the parent's capture goes on).
"""
from __future__ import annotations

import os

from .capture import _CAPTURE_LOCK, state


def end_capture_in_child() -> None:
    """(After a fork, in the child) the parent's capture in progress ended: patches undone, lock free."""
    rec = state["recorder"]
    if rec is not None:
        rec.remove(release=False)
        rec.__dict__.pop("_locked", None)
    _CAPTURE_LOCK._at_fork_reinit()  # type: ignore[attr-defined]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=end_capture_in_child)
