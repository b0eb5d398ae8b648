"""Friendlier layer errors for new users' mistakes: the core's message, plus a note naming the layer, the
input shape it expects and the shape (or device) it got.  Only the error path pays: layers call
``layer_error`` from an ``except RuntimeError`` around their functional call."""
from __future__ import annotations

__all__ = ["layer_error"]

_DEVICE_MISMATCH = "Expected all tensors to be on the same device"
_SHAPE_ERRORS = ("cannot be multiplied", "channels", "input of size", "Kernel size can't be greater")


def _shape(t) -> str:
    shape = tuple(getattr(t, "shape", ()))
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def layer_error(module, input, err: RuntimeError, expected: str) -> RuntimeError:
    """A RuntimeError with ``err``'s message and a note: which layer, which input it expects (``expected``,
    e.g. ``"(*, 64)"``) and what it got; or, for a device or dtype mismatch, what the parameters and the input
    are.  Errors of another kind are returned unchanged."""
    name = f"{type(module).__name__}({module.extra_repr()})"
    msg = str(err)
    params = list(module.parameters(recurse=False))
    devices = sorted({str(p.device) for p in params})
    if _DEVICE_MISMATCH in msg and len(devices) > 1:  # the layer's own tensors are split between devices
        note = (f"{name} has its parameters on several devices ({', '.join(devices)}): move the model with "
                f"model.to('{getattr(input, 'device', devices[0])}')")
    elif _DEVICE_MISMATCH in msg and params and hasattr(input, "device"):
        note = (f"{name} has its parameters on {params[0].device} but got an input on {input.device}: move the "
                f"model with model.to('{input.device}') or the input with input.to('{params[0].device}')")
    elif any(k in msg for k in _SHAPE_ERRORS):
        note = f"{name} expects an input of shape {expected}, but got an input of shape {_shape(input)}"
    elif params and hasattr(input, "dtype") and input.dtype is not params[0].dtype:
        pd, idt = str(params[0].dtype).rsplit(".", 1)[-1], str(input.dtype).rsplit(".", 1)[-1]
        note = (f"{name} has {pd} parameters but got a {idt} input: convert the input with input.to(torch.{pd}) "
                f"(or the model with model.to(torch.{idt}))")
    else:
        return err
    new = RuntimeError(f"{msg}\n  note: {note}")
    new.__cause__ = None
    new.__suppress_context__ = True
    return new
