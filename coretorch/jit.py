"""torch.jit: TorchScript is not part of coretorch.  ``script``/``trace``/``save``/``load`` raise
NotImplementedError saying what to do instead; the decorators scripts put on eager code (``ignore``, ``unused``,
``export``, ``annotate``, ``is_scripting``) work as they do in eager PyTorch."""
from __future__ import annotations

from typing import Final  # noqa: F401  (torch.jit.Final, for annotations)

__all__ = ["script", "trace", "trace_module", "save", "load", "freeze", "ignore", "unused", "export", "annotate",
           "is_scripting", "is_tracing", "Final", "ScriptModule", "ScriptFunction"]

_WHY = ("TorchScript is not available in coretorch: run the model eagerly (call it directly, without "
        "torch.jit.{}), save weights with coretorch.save(model.state_dict(), path)")


def script(obj=None, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    raise NotImplementedError(_WHY.format("script"))


def trace(func=None, example_inputs=None, *args, **kwargs):
    raise NotImplementedError(_WHY.format("trace"))


def trace_module(mod=None, inputs=None, *args, **kwargs):
    raise NotImplementedError(_WHY.format("trace_module"))


def save(m, f, _extra_files=None) -> None:
    raise NotImplementedError(_WHY.format("save"))


def load(f, map_location=None, _extra_files=None, _restore_shapes: bool = False):
    raise NotImplementedError(_WHY.format("load"))


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    raise NotImplementedError(_WHY.format("freeze"))


def _passthrough_decorator(fn=None, **kwargs):
    if fn is None or not callable(fn):
        return lambda f: f
    return fn


def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore`` / ``@torch.jit.ignore(drop=True)``: eager code is unchanged."""
    if callable(drop):
        return drop
    return lambda f: f


unused = _passthrough_decorator
export = _passthrough_decorator


def annotate(the_type, the_value):
    return the_value


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


class ScriptModule:
    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(_WHY.format("ScriptModule"))


class ScriptFunction:
    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(_WHY.format("ScriptFunction"))
