"""Kernel-table wrappers shared by the fused-kernel tests (tests/test_fused14b.py, test_fused14c.py): a table with
some kernels hidden (the core's composites run instead) and a spy counting kernel calls."""
from __future__ import annotations


class PlainTable:
    """A device's kernel table without the kernels named in ``hidden``: the core's composites of primitive kernels
    run in their place."""

    def __init__(self, table, hidden):
        self._t, self._hidden = table, frozenset(hidden)

    def has(self, name):
        return name not in self._hidden and self._t.has(name)

    def __getattr__(self, name):
        return getattr(self._t, name)


class KernelSpy:
    """Counts the calls of the named kernels of a table (restored by monkeypatch)."""

    def __init__(self, monkeypatch, table, names):
        self.calls = dict.fromkeys(names, 0)
        for n in names:
            monkeypatch.setattr(table, n, self._wrap(n, getattr(table, n)))

    def _wrap(self, name, fn):
        def k(*a, **kw):
            self.calls[name] += 1
            return fn(*a, **kw)
        return k
