"""PyTorch's grad_fn names for the composite ops of nn.functional (what ``print(loss.grad_fn)`` shows).

coretorch builds ``F.gelu``, ``F.layer_norm``, ``F.mse_loss``, ... from several differentiable ops, so the node
of their result is the last op's (``MulBackward0``).  Here each is wrapped once, at import, to give that node a
subclass of its class named as PyTorch names the fused op (``GeluBackward0``): the backward is unchanged.  An
in-place call (the result is the input) and an unbatched convolution (PyTorch ends it with a squeeze) keep their
node's name, as in PyTorch.
"""
from __future__ import annotations

import functools
import inspect

from ..autograd._node_names import named_node
from ..tensor import Tensor
from . import functional as F

__all__ = ["named_node"]


def _naming(fn, name: str, batched_ndim: int | None = None):
    saves = _SAVES.get(fn.__name__)
    if saves:
        return _saving(fn, name, saves, batched_ndim)

    @functools.wraps(fn)
    def wrapper(input, *args, **kwargs):
        out = fn(input, *args, **kwargs)
        if out is not input and (batched_ndim is None or input.ndim == batched_ndim):
            named_node(out, name)
        return out
    setattr(wrapper, "_pytorch_node_name", name)
    return wrapper


# the arguments PyTorch's fused op saves for its backward where coretorch's composite saves others (mse_loss's
# nodes save input - target): an in-place change of one after the forward raises at the backward, as in PyTorch
_SAVES = {"mse_loss": ("input", "target"), "smooth_l1_loss": ("input", "target"), "huber_loss": ("input", "target"),
          "soft_margin_loss": ("input", "target"), "binary_cross_entropy_with_logits": ("input", "target"),
          "batch_norm": ("input", "weight"), "group_norm": ("input", "weight"), "instance_norm": ("input", "weight"),
          "glu": ("input",), "multi_margin_loss": ("input",), "multilabel_margin_loss": ("input",),
          "nll_loss": ("input",),
          **{f"conv{k}{n}d": ("input", "weight") for k in ("", "_transpose") for n in (1, 2, 3)}}


def _saving(fn, name: str, saves: tuple, batched_ndim: int | None = None):
    params = list(inspect.signature(fn).parameters)
    where = tuple((params.index(k), k) for k in saves)  # (position, name): no binding per call (conv2d is hot)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if out.__class__ is Tensor and out.grad_fn is not None and not (args and out is args[0]):
            got = [args[i] if i < len(args) else kwargs.get(k) for i, k in where]
            if batched_ndim is None or got[0].ndim == batched_ndim:
                named_node(out, name, saves=tuple(t for t in got if isinstance(t, Tensor)))
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
    "conv3d": ("ConvolutionBackward0", 5), "conv_transpose3d": ("ConvolutionBackward0", 5),
    "avg_pool2d": ("AvgPool2DBackward0", None), "avg_pool3d": ("AvgPool3DBackward0", None),
    "adaptive_avg_pool1d": ("SqueezeBackward1", None), "affine_grid": ("AffineGridGeneratorBackward0", None),
    "pixel_shuffle": ("PixelShuffleBackward0", None), "pixel_unshuffle": ("PixelUnshuffleBackward0", None),
    "channel_shuffle": ("ChannelShuffleBackward0", None), "glu": ("GluBackward0", None),
    "prelu": ("PreluKernelBackward0", None), "celu": ("CeluBackward0", None), "selu": ("EluBackward0", None),
    "rrelu": ("RreluWithNoiseBackward0", None), "threshold": ("ThresholdBackward0", None),
    "hardshrink": ("HardshrinkBackward0", None), "softshrink": ("SoftshrinkBackward0", None),
    "soft_margin_loss": ("SoftMarginLossBackward0", None), "multi_margin_loss": ("MultiMarginLossBackward0", None),
    "multilabel_margin_loss": ("MultilabelMarginLossBackward0", None), "unfold": ("Im2ColBackward0", None),
    "fold": ("Col2ImBackward0", None), "embedding_bag": ("EmbeddingBagBackward0", None),
    "instance_norm": ("ViewBackward0", None), "pairwise_distance": ("NormBackward1", None),
}


# names that depend on the arguments: rule(out, bound arguments) -> PyTorch's node name, or None to keep ours
def _adaptive_name(n: int, out) -> str:
    if n == 1:
        return "SqueezeBackward1"  # PyTorch: a 2-d pool of an unsqueezed input, then squeeze
    return "MeanBackward1" if all(s == 1 for s in out.shape[-n:]) else f"AdaptiveAvgPool{n}DBackward0"


_UPSAMPLE = {"nearest": "UpsampleNearest{n}D", "nearest-exact": "UpsampleNearestExact{n}D",
             "linear": "UpsampleLinear1D", "bilinear": "UpsampleBilinear2D", "bicubic": "UpsampleBicubic2D",
             "trilinear": "UpsampleTrilinear3D"}


def _interpolate_name(out, a):
    n, mode = a["input"].ndim - 2, a["mode"]
    if mode == "area":
        return _adaptive_name(n, out)
    pat = _UPSAMPLE.get(mode)
    if pat is None:
        return None
    return pat.format(n=n) + ("Aa" if a["antialias"] and mode in ("bilinear", "bicubic") else "") + "Backward0"


def _pad_name(out, a):
    mode, k = a["mode"], len(a["pad"]) // 2
    return {"constant": "ConstantPadNdBackward0", "reflect": f"ReflectionPad{k}DBackward0",
            "replicate": f"ReplicationPad{k}DBackward0", "circular": "CopySlices"}.get(mode)


def _nll_name(out, a):
    x, t = a["input"], a["target"]
    if t.dtype.is_floating_point:  # class probabilities: PyTorch's mean divides by a number (DivBackward1)
        return "DivBackward1" if a["reduction"] == "mean" and "label_smoothing" in a else None
    if a.get("label_smoothing", 0.0):
        return None
    if x.ndim < 3:
        return "NllLossBackward0"
    return "NllLoss2DBackward0" if x.ndim == 4 or a["reduction"] != "none" else "ViewBackward0"


_RULES = {
    "adaptive_avg_pool2d": lambda out, a: _adaptive_name(2, out),
    "adaptive_avg_pool3d": lambda out, a: _adaptive_name(3, out),
    "interpolate": _interpolate_name,
    "pad": _pad_name,
    "grid_sample": lambda out, a: f"GridSampler{a['input'].ndim - 2}DBackward0",
    "ctc_loss": lambda out, a: (None if a["reduction"] != "none" else
                                "CtcLossBackward0" if a["log_probs"].ndim == 3 else "SqueezeBackward1"),
    "cross_entropy": _nll_name, "nll_loss": _nll_name,
    # PyTorch divides the per-sample sums by C: DivBackward0 when unreduced
    "multilabel_soft_margin_loss": lambda out, a: "DivBackward0" if a["reduction"] == "none" else None,
}


def _binder(fn):
    """``(args, kwargs) -> {name: value}`` with the defaults filled in, as ``Signature.bind`` + ``apply_defaults``
    give it for a call that succeeded: the names and defaults are read once, here (``bind`` cost ~10 us per call,
    40% of a ``cross_entropy``)."""
    sig = inspect.signature(fn)
    ps = sig.parameters.values()
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in ps):
        def slow(args, kwargs):
            b = sig.bind(*args, **kwargs)
            b.apply_defaults()
            return b.arguments
        return slow
    positional = tuple(p.name for p in ps if p.kind != p.KEYWORD_ONLY)
    defaults = {p.name: p.default for p in ps if p.default is not p.empty}

    def bind(args, kwargs):
        a = dict(defaults)
        a.update(zip(positional, args))
        a.update(kwargs)
        return a
    return bind


def _ruling(fn, rule):
    arguments = _binder(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if out.__class__ is Tensor and out.grad_fn is not None and not (args and out is args[0]):
            a = arguments(args, kwargs)
            name = rule(out, a)
            if name is not None:
                saves = _SAVES.get(fn.__name__, ())
                named_node(out, name, saves=tuple(a[k] for k in saves if isinstance(a.get(k), Tensor)))
        return out
    setattr(wrapper, "_pytorch_node_name", rule)
    return wrapper

for _fname, (_node, _nd) in _NAMES.items():
    _f = getattr(F, _fname, None)
    if _f is not None and not hasattr(_f, "_pytorch_node_name"):
        setattr(F, _fname, _naming(_f, _node, _nd))

for _fname, _rule in _RULES.items():
    _f = getattr(F, _fname, None)
    if _f is not None and not hasattr(_f, "_pytorch_node_name"):
        setattr(F, _fname, _ruling(_f, _rule))
