"""Padding layers (PyTorch's padding.py): constant/zero, reflection, replication and circular, 1-3 spatial dims;
all through F.pad."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [f"{kind}Pad{n}d" for kind in ("Constant", "Zero", "Reflection", "Replication", "Circular")
           for n in (1, 2, 3)]


def _ntuple(padding, n: int) -> tuple:
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"expected a padding of {2 * n} values, got {len(padding)}")
    return padding


class _PadNd(Module):
    __constants__ = ["padding"]
    _mode = "constant"
    _n = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(padding, self._n)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"


def _make(kind: str, base: type, mode: str, n: int) -> type:
    return type(f"{kind}Pad{n}d", (base,), {"_mode": mode, "_n": n, "__module__": __name__,
                                          "__doc__": f"{kind} padding of the last {n} dim(s) (F.pad mode {mode!r})."})


ConstantPad1d, ConstantPad2d, ConstantPad3d = (_make("Constant", _ConstantPadNd, "constant", n) for n in (1, 2, 3))
# (as PyTorch: ZeroPad{n}d is a ConstantPad{n}d, value 0)
ZeroPad1d, ZeroPad2d, ZeroPad3d = (type(f"ZeroPad{n}d", (_ZeroPadNd, base), {
    "_mode": "constant", "_n": n, "__module__": __name__, "__doc__": f"Zero padding of the last {n} dim(s)."})
    for n, base in ((1, ConstantPad1d), (2, ConstantPad2d), (3, ConstantPad3d)))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_make("Reflection", _ReflectionPadNd, "reflect", n)
                                                     for n in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_make("Replication", _ReplicationPadNd, "replicate", n)
                                                        for n in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_make("Circular", _CircularPadNd, "circular", n) for n in (1, 2, 3))
