"""PyTorch's grad_fn names for the composite ops of nn.functional (what ``print(loss.grad_fn)`` shows).

coretorch builds ``F.gelu``, ``F.layer_norm``, ``F.mse_loss``, ... from several differentiable ops, so the node
of their result is the last op's (``MulBackward0``).  Here each is wrapped once, at import, to give that node a
subclass of its class named as PyTorch names the fused op (``GeluBackward0``): the backward is unchanged.  An
in-place call (the result is the input) and an unbatched convolution (PyTorch ends it with a squeeze) keep their
node's name, as in PyTorch.
"""
from __future__ import annotations

import functools

from . import functional as F

_CLASSES: dict = {}


def named_node(t, name: str):
    """Give ``t.grad_fn`` the class name ``name`` (a same-layout subclass of its class)."""
    fn = t.grad_fn
    if fn is not None and fn.__class__.__name__ != name:  # a fused op's own node has the name already (F.gelu)
        key = (fn.__class__, name)
        cls = _CLASSES.get(key)
        if cls is None:
            cls = _CLASSES[key] = type(name, (fn.__class__,), {"__slots__": ()})
        fn.__class__ = cls
    return t


def _naming(fn, name: str, batched_ndim: int | None = None):
    @functools.wraps(fn)
    def wrapper(input, *args, **kwargs):
        out = fn(input, *args, **kwargs)
        if out is not input and (batched_ndim is None or input.ndim == batched_ndim):
            named_node(out, name)
        return out
    setattr(wrapper, "_pytorch_node_name", name)
    return wrapper


_NAMES = {  # function: (PyTorch's node name, the input rank of the batched form where the unbatched differs)
    "gelu": ("GeluBackward0", None), "silu": ("SiluBackward0", None), "mish": ("MishBackward0", None),
    "leaky_relu": ("LeakyReluBackward0", None), "elu": ("EluBackward0", None),
    "softplus": ("SoftplusBackward0", None), "logsigmoid": ("LogSigmoidBackward0", None),
    "hardtanh": ("HardtanhBackward0", None), "relu6": ("HardtanhBackward0", None),
    "layer_norm": ("NativeLayerNormBackward0", None), "batch_norm": ("NativeBatchNormBackward0", None),
    "group_norm": ("NativeGroupNormBackward0", None),
    "mse_loss": ("MseLossBackward0", None), "smooth_l1_loss": ("SmoothL1LossBackward0", None),
    "huber_loss": ("HuberLossBackward0", None),
    "binary_cross_entropy_with_logits": ("BinaryCrossEntropyWithLogitsBackward0", None),
    "conv1d": ("ConvolutionBackward0", 3), "conv2d": ("ConvolutionBackward0", 4),
    "conv_transpose1d": ("ConvolutionBackward0", 3), "conv_transpose2d": ("ConvolutionBackward0", 4),
}

for _fname, (_node, _nd) in _NAMES.items():
    _f = getattr(F, _fname, None)
    if _f is not None and not hasattr(_f, "_pytorch_node_name"):
        setattr(F, _fname, _naming(_f, _node, _nd))
