"""torch.autograd.detect_anomaly / set_detect_anomaly: a backward that produces NaN names the node that did.

While enabled, each backward (``Tensor.backward``, ``autograd.backward``, ``autograd.grad``) puts a check on every
node of the graph it runs: a node whose gradients contain NaN raises PyTorch's
``RuntimeError: Function 'DivBackward0' returned nan values in its 0th output.``  Nodes made while it is on
record the forward call's traceback (the user's frames), which a backward that fails in that node shows in PyTorch's
warning ("Error detected in DivBackward0. Traceback of forward call that caused the error: ...").  Off by default,
and then free: nothing is added to the forward or backward pass (the recording is an observer of node creation,
registered only while anomaly mode is on).
"""
from __future__ import annotations

import functools
import os
import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


class _State:
    enabled = False
    check_nan = True


state = _State()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection (``autograd.detect_anomaly``) is on."""
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode also checks backward results for NaN."""
    return state.check_nan


class _Switch:
    def __init__(self, mode: bool, check_nan: bool) -> None:
        self._prev = (state.enabled, state.check_nan)
        self._mode, self._check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        self._prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = self._mode, self._check_nan
        _sync_recording()
        return self

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self._prev
        _sync_recording()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _Switch(self._mode, self._check_nan):
                return fn(*args, **kwargs)
        return wrapper


class detect_anomaly(_Switch):
    """Context manager / decorator enabling anomaly detection for the block."""

    def __init__(self, check_nan: bool = True) -> None:
        super().__init__(True, check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)


class set_detect_anomaly(_Switch):
    """``set_detect_anomaly(True)`` switches it on now; also usable as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__(mode, check_nan)
        state.enabled, state.check_nan = self._mode, self._check_nan
        _sync_recording()

    def __enter__(self):
        return self


def _nan_check(node):
    name = node.name()

    def hook(grads_in, grads_out):
        for i, g in enumerate(grads_in):
            if g is not None and g.dtype.is_floating_point and bool(g.isnan().any()):
                raise RuntimeError(f"Function '{name}' returned nan values in its {i}th output.")
    return hook


def watch(roots) -> list:
    """While anomaly mode checks NaN: a NaN check on every node reachable from ``roots`` (grad_fns); returns the
    handles that remove them."""
    if not (state.enabled and state.check_nan):
        return []
    from .graph import AccumulateGrad  # graph imports nothing from here: no cycle, just kept off the import path
    handles, seen, stack = [], set(), [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if node in seen or node.__class__ is AccumulateGrad:
            continue
        seen.add(node)
        handles.append(node.register_hook(_nan_check(node)))
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return handles


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # coretorch's own frames: not shown
_recording = [False]  # whether _record_trace is registered (see _node_watch)


def _record_trace(node) -> None:
    stack = traceback.extract_stack()[:-2]  # (without this observer's and _node_watch's frames)
    node._anomaly_trace = [f for f in stack if not os.path.abspath(f.filename).startswith(_PKG)] or stack


def _sync_recording() -> None:
    """While anomaly mode is on, every node made records its forward traceback (PyTorch's anomaly metadata): an
    observer of node creation (``_node_watch``), so nothing is added per node while it is off."""
    from . import _node_watch  # (it imports graph, which imports nothing from here)
    if state.enabled and not _recording[0]:
        _recording[0] = True
        _node_watch.add(_record_trace)
    elif not state.enabled and _recording[0]:
        _recording[0] = False
        _node_watch.remove(_record_trace)


def warn_error_in(node) -> None:
    """PyTorch's warning when a node's backward raised in anomaly mode: the forward traceback that made it."""
    if node is None or node.__class__.__name__ == "AccumulateGrad":
        return
    name = node.name()
    trace = node.__dict__.get("_anomaly_trace")
    if trace is None:
        msg = (f"Error detected in {name}. No forward pass information available. Enable detect anomaly during "
               "forward pass for more information.")
    else:
        msg = f"Error detected in {name}. Traceback of forward call that caused the error:\n" + \
            "".join(traceback.format_list(trace))
    warnings.warn(msg, UserWarning, stacklevel=3)
