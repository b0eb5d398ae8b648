"""The differentiable ops of coretorch-extra-ops.

Each op is an ``autograd.Function`` whose forward and backward are written with tensor ops, so it runs on
every backend and, where the backward is itself made of differentiable ops, supports double backward
(``create_graph=True``).  ``erf`` uses a per-device kernel when the device
has one (see ``kernels.py``) and tensor ops otherwise.  The public functions at the bottom check arguments
and are what the plugin registers.
"""
from __future__ import annotations

import math

import numpy as np

import coretorch
from coretorch.autograd import Function
from coretorch.plugins import from_array, get_kernel, to_array

from . import kernels

_SQRT_2PI = math.sqrt(2 * math.pi)
_GELU_K = math.sqrt(2 / math.pi)


def _run(name: str, generic, x, *args):
    """Op ``name`` on ``x``: the kernel registered for x's device if there is one, else ``generic`` (tensor
    ops).  Kernels take and return the backend's arrays; ``from_array`` wraps the result as a Tensor on x's
    device (the public plugin API: coretorch.plugins)."""
    try:
        kernel = get_kernel(name, x)
    except NotImplementedError:  # no kernel for this device type: the tensor-op version runs everywhere
        return generic(x, *args)
    return from_array(kernel(to_array(x.contiguous()), *args), x)


def _float(x):
    return x if x.dtype.is_floating_point else x.to(coretorch.get_default_dtype())


def _softplus(x):
    return x.clamp(min=0) + (-x.abs()).exp().log1p()  # log(1 + e^x) without overflow


# ---- erf -------------------------------------------------------------------------------------------
class Erf(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _run("ext_erf", lambda t: kernels.erf(t, coretorch), x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (2 / math.sqrt(math.pi)) * (-x * x).exp()


# ---- activations ---------------------------------------------------------------------------------------
def _normal_cdf(x):
    return 0.5 * (1 + Erf.apply(x * (1 / math.sqrt(2))))


class Gelu(Function):
    """x * Phi(x) ("none") or its tanh approximation ("tanh")."""

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        if approximate == "tanh":
            return 0.5 * x * (1 + (_GELU_K * (x + 0.044715 * x * x * x)).tanh())
        return x * _normal_cdf(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            t = (_GELU_K * (x + 0.044715 * x * x * x)).tanh()
            d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _GELU_K * (1 + 3 * 0.044715 * x * x)
        else:
            d = _normal_cdf(x) + x * (-0.5 * x * x).exp() / _SQRT_2PI
        return g * d, None


class Mish(Function):
    """x * tanh(softplus(x))."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * _softplus(x).tanh()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = _softplus(x).tanh()
        return g * (t + x * (1 - t * t) * x.sigmoid())


class SwiGLU(Function):
    """a * sigmoid(a) * b, where a, b are the two halves of the input along ``dim``."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.save_for_backward(x)
        ctx.dim = dim
        a, b = x.chunk(2, dim)
        return a * a.sigmoid() * b

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        a, b = x.chunk(2, ctx.dim)
        s = a.sigmoid()
        return coretorch.cat([g * b * s * (1 + a * (1 - s)), g * a * s], ctx.dim), None


class RMSNorm(Function):
    """x / sqrt(mean(x^2 over ``dims``) + eps) * weight."""

    @staticmethod
    def forward(ctx, x, weight, dims, eps):
        ctx.save_for_backward(x, weight)
        ctx.dims, ctx.eps = dims, eps
        y = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
        return y if weight is None else y * weight

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        r = ((x * x).mean(ctx.dims, keepdim=True) + ctx.eps).rsqrt()
        gy = g if weight is None else g * weight
        gx = r * gy - x * (r * r * r) * (gy * x).mean(ctx.dims, keepdim=True)
        gw = None
        if weight is not None and ctx.needs_input_grad[1]:
            gw = (g * x * r).sum(tuple(range(x.ndim - len(ctx.dims))))
        return gx, gw, None, None


# ---- scans and losses ------------------------------------------------------------------------------------
class FocalLoss(Function):
    """Elementwise sigmoid focal loss (torchvision.ops.sigmoid_focal_loss); ``target`` gets no gradient."""

    @staticmethod
    def forward(ctx, x, target, alpha, gamma):
        ctx.save_for_backward(x, target)
        ctx.alpha, ctx.gamma = alpha, gamma
        p = x.sigmoid()
        loss = (_softplus(x) - target * x) * (1 - (p * target + (1 - p) * (1 - target))) ** gamma
        return loss if alpha < 0 else (alpha * target + (1 - alpha) * (1 - target)) * loss

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        alpha, gamma = ctx.alpha, ctx.gamma
        p = x.sigmoid()
        m = 1 - (p * t + (1 - p) * (1 - t))  # 1 - p_t; dm/dx = -(2t - 1) p (1 - p)
        d = (p - t) * m ** gamma
        if gamma != 0:
            d = d - (_softplus(x) - t * x) * gamma * m ** (gamma - 1) * (2 * t - 1) * p * (1 - p)
        if alpha >= 0:
            d = d * (alpha * t + (1 - alpha) * (1 - t))
        return g * d, None, None, None


class FusedSoftmaxCrossEntropy(Function):
    """cross_entropy(input (N, C), target (N,)) in one node: forward keeps the softmax for backward."""

    @staticmethod
    def forward(ctx, x, target, reduction, ignore_index):
        logp = x - x.logsumexp(1, keepdim=True)
        valid = target != ignore_index
        safe = coretorch.where(valid, target, 0)
        loss = -logp.gather(1, safe.unsqueeze(1)).squeeze(1) * valid
        ctx.save_for_backward(x, safe, valid, logp.exp())
        ctx.reduction = reduction
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.sum() / valid.sum()

    @staticmethod
    def backward(ctx, g):
        x, safe, valid, probs = ctx.saved_tensors
        if coretorch.is_grad_enabled():  # create_graph: rebuild the softmax from x so that it is differentiable
            probs = (x - x.logsumexp(1, keepdim=True)).exp()
        scale = g * valid if ctx.reduction != "mean" else g * valid / valid.sum()
        onehot = coretorch.arange(x.shape[1], device=x.device) == safe.unsqueeze(1)
        return (probs - onehot.to(x.dtype)) * scale.unsqueeze(-1), None, None, None


# ---- the public ops (what the plugin registers) -----------------------------------------------------------
def ext_erf(input):
    """The error function (torch.erf), as a Function with a per-device kernel."""
    return Erf.apply(_float(input))


def ext_gelu(input, approximate: str = "none"):
    """GELU: x * Phi(x) with approximate="none" (erf form), the tanh approximation with "tanh"."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, but got {approximate!r}")
    return Gelu.apply(input, approximate)


def ext_mish(input):
    """Mish: x * tanh(softplus(x))."""
    return Mish.apply(input)


def swiglu(input, dim: int = -1):
    """SwiGLU on the two halves a, b of ``input`` along ``dim`` (as F.glu splits): silu(a) * b."""
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {input.shape[dim]}")
    return SwiGLU.apply(input, dim)


def ext_rms_norm(input, normalized_shape, weight=None, eps: float | None = None):
    """RMS normalisation over the last ``len(normalized_shape)`` dims (F.rms_norm's signature; eps defaults to
    the dtype's machine epsilon)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"rms_norm: normalized_shape {list(shape)} does not match the trailing dims of the "
                           f"input of shape {list(input.shape)}")
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    eps = float(np.finfo(input.dtype.np).eps) if eps is None else eps
    return RMSNorm.apply(input, weight, dims, eps)


def focal_loss(input, target, alpha: float = 0.25, gamma: float = 2.0, reduction: str = "none"):
    """Sigmoid focal loss of logits ``input`` against 0/1 (or soft) ``target`` (torchvision's definition)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction}' \n Supported reduction modes: "
                         "'none', 'mean', 'sum'")
    loss = FocalLoss.apply(input, target.to(input.dtype), alpha, gamma)
    return loss if reduction == "none" else loss.mean() if reduction == "mean" else loss.sum()


def fused_softmax_cross_entropy(input, target, reduction: str = "mean", ignore_index: int = -100):
    """F.cross_entropy for logits (N, C) and class indices (N,), as one graph node."""
    if input.ndim != 2 or target.ndim != 1 or target.shape[0] != input.shape[0]:
        raise ValueError(f"fused_softmax_cross_entropy expects input (N, C) and target (N,), got "
                         f"{list(input.shape)} and {list(target.shape)}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return FusedSoftmaxCrossEntropy.apply(input, target, reduction, ignore_index)
