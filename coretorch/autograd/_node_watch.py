"""Observers of node creation: while one is registered, ``Node.__init__`` is swapped for one that reports every node
made (anomaly mode records the forward's traceback on it; a non-reentrant checkpoint notes which nodes its segment
made).  With none registered the plain ``__init__`` is back: making a node costs nothing extra.  Every node class
runs ``Node.__init__`` (its own ``__init__`` calls it), so none is missed."""
from __future__ import annotations

import threading
from typing import Callable

from .graph import Node

_LOCK = threading.Lock()
_PLAIN = Node.__init__
_observers: tuple = ()


def _observed_init(self) -> None:
    _PLAIN(self)
    for f in _observers:
        f(self)


def add(observer: Callable[[Node], None]) -> None:
    """Call ``observer(node)`` for every node made from now on (in any thread) until :func:`remove`."""
    global _observers
    with _LOCK:
        _observers = (*_observers, observer)
        Node.__init__ = _observed_init  # type: ignore[method-assign]


def remove(observer: Callable[[Node], None]) -> None:
    """Stop calling ``observer`` (one registration of it)."""
    global _observers
    with _LOCK:
        obs = list(_observers)
        obs.remove(observer)
        _observers = tuple(obs)
        if not obs:
            Node.__init__ = _PLAIN  # type: ignore[method-assign]
