"""nn.utils.fusion: fold an eval-mode BatchNorm into the convolution or linear layer before it."""
from __future__ import annotations

import copy

from ...ops import pointwise as _P
from ...ops.creation import ones_like, zeros_like
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """(weight, bias) of the convolution whose output equals BatchNorm(conv(x)) with frozen statistics."""
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_b.dtype if conv_b is not None else conv_weight_dtype
    if conv_b is None:
        conv_b = zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ones_like(bn_rm)
    if bn_b is None:
        bn_b = zeros_like(bn_rm)
    bn_var_rsqrt = _P.rsqrt(_P.add(bn_rv, bn_eps))
    shape = [1] * conv_w.ndim
    shape[1 if transpose else 0] = -1
    fused_w = _P.mul(conv_w, _P.mul(bn_w, bn_var_rsqrt).reshape(shape)).to(conv_weight_dtype)
    fused_b = _P.add(_P.mul(_P.mul(_P.sub(conv_b, bn_rm), bn_var_rsqrt), bn_w), bn_b).to(conv_bias_dtype)
    return Parameter(fused_w.detach(), conv_w.requires_grad), Parameter(fused_b.detach(), conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` that applies ``bn`` too (both must be in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The weight and bias of one Linear layer equal to a Linear layer followed by an eval-mode BatchNorm.

    Args:
        linear_w, linear_b (Tensor): the Linear weight ``(out, in)`` and bias ``(out,)`` (or None).
        bn_rm, bn_rv (Tensor): the BatchNorm running mean and variance ``(out,)``.
        bn_eps (float): the BatchNorm epsilon.
        bn_w, bn_b (Tensor): the BatchNorm weight and bias ``(out,)``.

    Returns:
        tuple: ``(weight, bias)`` as Parameters.
    """
    linear_weight_dtype = linear_w.dtype  # (the fused tensors keep the Linear's dtypes, as PyTorch's)
    linear_bias_dtype = linear_b.dtype if linear_b is not None else linear_weight_dtype
    if linear_b is None:
        linear_b = zeros_like(bn_rm)
    bn_scale = bn_w * _P.rsqrt(_P.add(bn_rv, bn_eps))  # (an affine=False BatchNorm: PyTorch's TypeError)
    fused_w = _P.mul(linear_w, bn_scale.unsqueeze(-1).to(linear_weight_dtype))
    fused_b = _P.add(_P.mul(_P.sub(linear_b, bn_rm), bn_scale), bn_b).to(linear_bias_dtype)
    return Parameter(fused_w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), linear_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` that applies ``bn`` too (both in eval mode; bn's features = linear's outputs)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
