"""numpy's floating-point warnings from this package's kernels stay silent, as PyTorch computes IEEE results (inf - inf
is nan, an overflowing sum is inf) without a word.

One warnings filter on this package's modules does it at no cost per op (numpy's error state is left alone, so a
user's own numpy code warns as it is set to).  A ``warnings.catch_warnings()`` block around ``import coretorch``
(pytest's collection is one) restores the filter list it saw on entry and so drops the filter: a warning that then
reaches display is recognised by a wrapper of ``warnings._showwarnmsg`` (called only for warnings about to be shown,
never on the hot path), swallowed, and the filter is installed again for the next ones."""
from __future__ import annotations

import os
import re
import warnings

_MESSAGE = r"(invalid value|overflow|divide by zero|underflow) encountered"
_MODULE = r"coretorch_cpu(\.|$)"
_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_match = re.compile(_MESSAGE).match


def install_filter() -> None:
    """The one filter (idempotent: not added twice to the current filter list)."""
    for f in warnings.filters:
        if f[0] == "ignore" and f[2] is RuntimeWarning and getattr(f[1], "pattern", None) == _MESSAGE:
            return
    warnings.filterwarnings("ignore", _MESSAGE, RuntimeWarning, _MODULE)


def _ours(msg) -> bool:
    return (issubclass(msg.category, RuntimeWarning) and str(msg.filename).startswith(_DIR)
            and _match(str(msg.message)) is not None)


def _wrap(show):
    def _showwarnmsg(msg) -> None:
        if _ours(msg):
            install_filter()  # a catch_warnings() block dropped it: back, for the next ones
            return
        show(msg)
    _showwarnmsg._coretorch_cpu = True  # type: ignore[attr-defined]
    return _showwarnmsg


def install() -> None:
    """The filter, and the wrapper that restores it (once per process)."""
    install_filter()
    show = getattr(warnings, "_showwarnmsg", None)
    if show is not None and not getattr(show, "_coretorch_cpu", False):
        warnings._showwarnmsg = _wrap(show)  # type: ignore[attr-defined]
