"""PyTorch-style tensor printing (precision 4, shared width, scientific mode, summarisation), with PyTorch's
``set_printoptions`` / ``get_printoptions`` / ``printoptions``."""
from __future__ import annotations

import contextlib
import math

import numpy as np

from . import dtypes as _dt

__all__ = ["set_printoptions", "get_printoptions", "printoptions"]


class _PrintOptions:
    precision = 4
    threshold: float = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode: bool | None = None  # None: chosen from the values, as PyTorch


PRINT_OPTS = _PrintOptions()

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set the tensor repr's options, as PyTorch: a ``profile`` ('default', 'short' or 'full') first, then the
    options given; ``sci_mode`` is always set (None: automatic)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"Invalid profile: {profile}. the profile must be one of 'default', 'short', 'full'")
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options (keys as set_printoptions' arguments, without profile)."""
    return {"precision": PRINT_OPTS.precision, "threshold": PRINT_OPTS.threshold, "edgeitems": PRINT_OPTS.edgeitems,
            "linewidth": PRINT_OPTS.linewidth, "sci_mode": PRINT_OPTS.sci_mode}


@contextlib.contextmanager
def printoptions(**kwargs):
    """``with printoptions(precision=2):`` sets options for the block and restores them after."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    def __init__(self, a: np.ndarray):
        self.floating = a.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        flat = a.reshape(-1)
        if not self.floating:
            self.width = max((len(self._str_plain(v)) for v in flat), default=1)
            return
        finite = flat[np.isfinite(flat)].astype(np.float64)
        nonzero = np.abs(finite[finite != 0])
        if finite.size and not np.all(finite == np.ceil(finite)):
            self.int_mode = False
        if nonzero.size:
            mx, mn = nonzero.max(), nonzero.min()
            if self.int_mode:
                self.sci_mode = mx / mn > 1000.0 or mx > 1.0e8
            else:
                self.sci_mode = mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4
            if PRINT_OPTS.sci_mode is not None:
                # as PyTorch: a forced mode sizes the width too (all zeros: never forced)
                self.sci_mode = PRINT_OPTS.sci_mode
        # as in PyTorch, only nonzero finite values set the width (nan/inf/0 are padded to it, never widen it)
        self.width = max((len(self._fmt(v)) for v in finite[finite != 0]), default=1)

    def _str_plain(self, v) -> str:
        if isinstance(v, (np.bool_, bool)):
            return "True" if v else "False"
        return str(v)

    def _fmt(self, v) -> str:
        if not self.floating:
            return self._str_plain(v)
        v = float(v)
        if not np.isfinite(v):
            return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
        if self.sci_mode:
            return f"{v:.{PRINT_OPTS.precision}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{PRINT_OPTS.precision}f}"

    def format(self, v) -> str:
        return self._fmt(v).rjust(self.width)


def _tensor_body(a: np.ndarray, fmt: _Formatter, indent: int, summarize: bool) -> str:
    edge, linewidth = PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth
    if a.ndim == 0:
        return fmt._fmt(a.item()) if fmt.floating else fmt._str_plain(a.item())
    if a.ndim == 1:
        n = a.shape[0]
        if summarize and n > 2 * edge:
            items = [fmt.format(v) for v in a[:edge]] + [" ..."] + [fmt.format(v) for v in a[-edge:]]
        else:
            items = [fmt.format(v) for v in a]
        per_line = max(1, (linewidth - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = a.shape[0]
    if summarize and n > 2 * edge:
        rows = [_tensor_body(a[i], fmt, indent + 1, summarize) for i in range(edge)] + ["..."] + \
               [_tensor_body(a[i], fmt, indent + 1, summarize) for i in range(n - edge, n)]
    else:
        rows = [_tensor_body(a[i], fmt, indent + 1, summarize) for i in range(n)]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def _summary_view(a: np.ndarray) -> np.ndarray:
    """The elements that will be printed (for width/sci-mode decisions)."""
    edge = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    idx = np.arange(a.shape[0])
    if a.shape[0] > 2 * edge:
        idx = np.concatenate([idx[:edge], idx[-edge:]])
    return np.stack([_summary_view(a[i]) for i in idx]) if a.ndim > 1 else a[idx]


def tensor_str(t, prefix: str = "tensor(") -> tuple[str, list[str]]:
    a = t._host()
    if t.dtype is _dt.float16 or t.dtype is _dt.bfloat16:  # formatted through float32 (exact)
        a = a.astype(np.float32)
    indent = len(prefix)
    suffixes = []
    if a.size == 0:
        body = "[]"
        if a.ndim != 1:
            suffixes.append(f"size={tuple(a.shape)}")
    else:
        summarize = a.size > PRINT_OPTS.threshold
        fmt = _Formatter(_summary_view(a) if summarize else a)
        body = _tensor_body(a, fmt, indent, summarize)
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    dt = t.dtype
    if a.size == 0:
        if dt is not _dt.default:
            suffixes.append(f"dtype={dt!r}")
    elif dt not in (_dt.default, _dt.int64, _dt.bool_):
        suffixes.append(f"dtype={dt!r}")
    return body, suffixes


def tensor_repr(t) -> str:
    # PyTorch names a user subclass in the repr ("MyTensor([1., 2.])"); its own classes (Parameter) print "tensor("
    cls = type(t)
    prefix = "tensor(" if cls.__module__.partition(".")[0] == "coretorch" else f"{cls.__name__}("
    body, suffixes = tensor_str(t, prefix)
    try:
        fn = t.grad_fn
        name = None if fn is None else fn.name()
    except RuntimeError:  # a split piece whose base was modified in place: PyTorch prints its node as Invalid
        name = "Invalid"
    if name is not None:
        suffixes.append(f"grad_fn=<{name}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, len(prefix))


def _add_suffixes(text: str, suffixes: list, indent: int) -> str:
    """PyTorch's: each suffix after a comma, on a new line (indented) where it would pass the line width."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last += len(suffix) + 2
    parts.append(")")
    return "".join(parts)
