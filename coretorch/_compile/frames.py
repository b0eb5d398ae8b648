"""Where code runs, for the capture's messages and checks: whether a file is coretorch's (or a plugin's), the
user's innermost frame outside them (``file:line in function``, with the core line that read), and whether a query
comes from the overlap check."""
from __future__ import annotations

import os
import sys
from typing import Any

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_THIS = os.path.dirname(os.path.abspath(__file__))


def _pairwise() -> bool:
    """Whether the recorded query comes from the overlap check (``ops/_overlap.py``), a few frames up."""
    f: Any = sys._getframe(2)
    for _ in range(6):
        if f is None:
            return False
        if f.f_code.co_filename.endswith(_OVERLAP):
            return True
        f = f.f_back
    return False


_OVERLAP = os.path.join("ops", "_overlap.py")


def _internal(filename: str) -> bool:
    return filename.startswith(_PKG) or os.sep + "coretorch_" in filename


def _user_frame(core: bool = False) -> str:
    """``file:line in function`` of the innermost frame outside coretorch and its plugins (with ``core``, also the
    innermost core line that is not this package's, and the outermost plugin frame on the way: a hook of
    DistributedDataParallel's reading a whole array says so)."""
    f: Any = sys._getframe(1)
    inner = plugin = None
    while f is not None and _internal(f.f_code.co_filename):
        if inner is None and not f.f_code.co_filename.startswith(_THIS):
            inner = f
        if os.sep + "coretorch_" in f.f_code.co_filename:
            plugin = f
        f = f.f_back
    if f is None:
        return "<unknown>"
    where = f"{f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}"
    if core and inner is not None:
        where += f" (core: {os.path.relpath(inner.f_code.co_filename, _PKG)}:{inner.f_lineno}"
        if plugin is not None and plugin is not inner:
            name = plugin.f_code.co_filename
            where += f", in {name[name.rindex(os.sep + 'coretorch_') + 1:]}:{plugin.f_lineno} {plugin.f_code.co_name}"
        where += ")"
    return where


def returned(fn: Any) -> str:
    """Where a break found only once ``fn`` returned belongs (state it left changed): ``file:line in name`` of its
    definition, not the caller's line that the innermost user frame is by then."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None) or getattr(getattr(type(fn), "__call__", None), "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{code.co_filename}:{code.co_firstlineno} in {code.co_name}, found when it returned"
