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
    """Compile a function or module to TorchScript: raises ``NotImplementedError`` (TorchScript is not
    part of coretorch; call the model eagerly, or use ``coretorch.compile``).
    """
    raise NotImplementedError(_WHY.format("script"))


def trace(func=None, example_inputs=None, *args, **kwargs):
    """Trace a function into TorchScript: raises ``NotImplementedError`` (see ``script``)."""
    raise NotImplementedError(_WHY.format("trace"))


def trace_module(mod=None, inputs=None, *args, **kwargs):
    """Trace a module's methods into TorchScript: raises ``NotImplementedError`` (see ``script``)."""
    raise NotImplementedError(_WHY.format("trace_module"))


def save(m, f, _extra_files=None) -> None:
    """Save a TorchScript module: raises ``NotImplementedError``; save the weights with
    ``coretorch.save(model.state_dict(), path)``.
    """
    raise NotImplementedError(_WHY.format("save"))


def load(f, map_location=None, _extra_files=None, _restore_shapes: bool = False):
    """Load a TorchScript archive: raises ``NotImplementedError`` (coretorch reads no TorchScript
    archives; ``coretorch.load`` reads its own and safetensors checkpoints).
    """
    raise NotImplementedError(_WHY.format("load"))


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """Freeze a scripted module: raises ``NotImplementedError``."""
    raise NotImplementedError(_WHY.format("freeze"))


def _passthrough_decorator(fn=None, **kwargs):
    """``@torch.jit.unused`` / ``@torch.jit.export``: marks for the TorchScript compiler; eager code (all that
    coretorch runs) is unchanged, so the function is returned as it is."""
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
    """A type annotation for TorchScript: returns ``the_value`` unchanged (what eager PyTorch does).

    Args:
        the_type: the annotated type (ignored).
        the_value: the value.

    Returns:
        ``the_value``.

    Example:
        >>> torch.jit.annotate(list, [])
        []
    """
    return the_value


def is_scripting() -> bool:
    """Whether the code runs under TorchScript compilation: always False."""
    return False


def is_tracing() -> bool:
    """Whether the code runs under ``torch.jit.trace``: always False."""
    return False


class ScriptModule:
    """TorchScript's module type: constructing one raises ``NotImplementedError``. The name exists
    for ``isinstance`` checks in scripts (no coretorch object is one).
    """
    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(_WHY.format("ScriptModule"))


class ScriptFunction:
    """TorchScript's function type: constructing one raises ``NotImplementedError``. The name exists
    for ``isinstance`` checks in scripts (no coretorch object is one).
    """
    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(_WHY.format("ScriptFunction"))
