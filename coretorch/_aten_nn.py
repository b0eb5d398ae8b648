"""PyTorch's top-level constants and its ATen-signature neural-network functions (``torch.conv2d``,
``torch.layer_norm``, ``torch.batch_norm``, ``torch.relu_``, ``torch.lstm_cell``, ...): real scripts and ported
code call ``torch.X`` where ``F.X`` has another positional order (``torch.batch_norm(input, weight, bias,
running_mean, running_var, training, momentum, eps, cudnn_enabled)``), an integer ``reduction`` (0 none, 1 mean,
2 sum) or integer grid-sampler modes.  Each is a thin layer over coretorch.nn.functional, so autograd and every
device come with it.
"""
from __future__ import annotations

import builtins
import math

from .nn import functional as _F
from .nn.functional._activation_param import rrelu_with_generator
from .nn.functional._basic import _apply_mask, _check_p
from .nn.functional._normalization import batch_norm_any_eps as _batch_norm_any_eps
from .ops import pointwise as _P
from .ops import reduction as _R
from .ops import shape as _S
from .ops._util import norm_dim
from .ops.creation import empty, ones_like, rand_like
from .tensor import Tensor

_int = builtins.int
_bool = builtins.bool

inf = math.inf
nan = math.nan
e = math.e
pi = math.pi
newaxis = None

# ---- torch.X_(input, ...): the in-place Tensor method as a function (returns input) ----------------------------
_INPLACE = ("abs_", "acos_", "acosh_", "arccos_", "arccosh_", "asin_", "asinh_", "atan_", "atanh_", "arctan_",
            "arctanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_",
            "rad2deg_", "detach_", "erf_", "erfc_", "exp_", "exp2_", "expm1_", "fix_", "floor_", "frac_", "i0_",
            "ldexp_", "log_", "log10_", "log1p_", "log2_", "logit_", "neg_", "negative_", "reciprocal_", "relu_",
            "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_",
            "xlogy_", "nan_to_num_", "zero_", "fill_", "arcsin_", "arcsinh_", "addmv_", "as_strided_", "resize_as_")


def _inplace(name: str):
    def fn(input: Tensor, *args, **kwargs) -> Tensor:
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(input, ...)``: ``input.{name}(...)``, in place; returns ``input``."
    return fn


for _n in _INPLACE:
    globals()[_n] = _inplace(_n)

# ---- torch.X(input, ...) for Tensor methods PyTorch also has as functions --------------------------------------
_METHOD_FORMS = ("absolute", "adjoint", "nonzero_static")
for _n in _METHOD_FORMS:
    globals()[_n] = _inplace(_n)
    globals()[_n].__doc__ = f"``torch.{_n}(input, ...)``: ``input.{_n}(...)``."


def fill(input: Tensor, value) -> Tensor:
    """``torch.fill(input, value)``: a new tensor of ``input``'s shape and dtype filled with ``value`` (a number
    or a 0-d tensor)."""
    return input.clone().fill_(value)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return _F.celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return _F.selu(input, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: _bool = False,
           generator=None) -> Tensor:
    """In-place :func:`rrelu`."""
    return rrelu_with_generator(input, lower, upper, training, True, generator)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _F.threshold(input, threshold, value, inplace=True)


def dropout_(input: Tensor, p: float, train: _bool) -> Tensor:
    """In-place ``torch.dropout``."""
    return _F.dropout(input, p, train, inplace=True)


def alpha_dropout_(input: Tensor, p: float, train: _bool) -> Tensor:
    """In-place :func:`alpha_dropout`."""
    return _F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input: Tensor, p: float, train: _bool) -> Tensor:
    """In-place :func:`feature_alpha_dropout`."""
    return _F.feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout(input: Tensor, p: float, train: _bool, inplace: _bool) -> Tensor:
    p = _check_p(p)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not train or p == 0.0 or input.numel() == 0:
        return input if inplace else input.clone()
    shape = tuple(input.shape)
    return _apply_mask(input, p, shape[:2] + (1,) * (len(shape) - 2), inplace)


def feature_dropout(input: Tensor, p: float, train: _bool) -> Tensor:
    """Dropout of whole channels: each (sample, channel) slice of dims 0 and 1 is zeroed with probability ``p``,
    the rest scaled by ``1 / (1 - p)`` (what ``F.dropout2d`` computes, for any rank >= 2)."""
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: _bool) -> Tensor:
    """In-place :func:`feature_dropout`."""
    return _feature_dropout(input, p, train, True)


def alpha_dropout(input: Tensor, p: float, train: _bool) -> Tensor:
    """``torch.alpha_dropout(input, p, train)``: F.alpha_dropout in ATen's positional form."""
    return _F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input: Tensor, p: float, train: _bool) -> Tensor:
    """``torch.feature_alpha_dropout(input, p, train)``: F.feature_alpha_dropout in ATen's positional form."""
    return _F.feature_alpha_dropout(input, p, train)


def native_dropout(input: Tensor, p: float, train: _bool | None) -> tuple[Tensor, Tensor]:
    """``(output, mask)``: dropout and the bool mask of kept elements (all True when not training)."""
    if train is False:
        return input.clone(), _P.ne(ones_like(input), 0)
    p = _check_p(p)
    keep = 1.0 - p
    mask = _P.lt(rand_like(input), keep)
    scale = 0.0 if keep == 0 else 1.0 / keep
    return _P.mul(_P.mul(input, mask), scale), mask


# ---- aliases: the same positional signature as F's ------------------------------------------------------------
conv1d = _F.conv1d
conv2d = _F.conv2d
conv3d = _F.conv3d
conv_transpose1d = _F.conv_transpose1d
conv_transpose2d = _F.conv_transpose2d
conv_transpose3d = _F.conv_transpose3d
conv_tbc = _F.conv_tbc
pixel_shuffle = _F.pixel_shuffle
pixel_unshuffle = _F.pixel_unshuffle
channel_shuffle = _F.channel_shuffle
native_channel_shuffle = _F.native_channel_shuffle
cosine_similarity = _F.cosine_similarity
pairwise_distance = _F.pairwise_distance
bilinear = _F.bilinear
prelu = _F.prelu
hardshrink = _F.hardshrink
rms_norm = _F.rms_norm
adaptive_avg_pool1d = _F.adaptive_avg_pool1d


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation, transposed: _bool,
                output_padding, groups: _int) -> Tensor:
    """``torch.convolution``: the 1-D, 2-D or 3-D (transposed) convolution picked by ``weight``'s rank."""
    nd = weight.ndim - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, got {weight.ndim}-D")
    if transposed:
        ft = (_F.conv_transpose1d, _F.conv_transpose2d, _F.conv_transpose3d)[nd - 1]
        return ft(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fc = (_F.conv1d, _F.conv2d, _F.conv3d)[nd - 1]
    return fc(input, weight, bias, stride, padding, dilation, groups)


# ---- normalisation in ATen's argument order ---------------------------------------------------------------------
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5, cudnn_enable: _bool = True) -> Tensor:
    """``torch.layer_norm``: F.layer_norm (``cudnn_enable`` is accepted and ignored)."""
    return _F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: _int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5, cudnn_enabled: _bool = True) -> Tensor:
    """``torch.group_norm``: F.group_norm (``cudnn_enabled`` is accepted and ignored)."""
    return _F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
               running_var: Tensor | None, training: _bool, momentum: float, eps: float,
               cudnn_enabled: _bool) -> Tensor:
    """``torch.batch_norm`` in ATen's order (weight and bias before the running statistics; any ``eps``)."""
    return _batch_norm_any_eps(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                  running_var: Tensor | None, use_input_stats: _bool, momentum: float, eps: float,
                  cudnn_enabled: _bool) -> Tensor:
    """``torch.instance_norm`` in ATen's order."""
    return _F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def native_layer_norm(input: Tensor, normalized_shape, weight: Tensor | None, bias: Tensor | None,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(output, mean, rstd)``: layer norm and the statistics of each normalised slice (kept dims of size 1)."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, _int) else tuple(normalized_shape)
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    mean = _R.mean(input, dims, keepdim=True)
    rstd = _P.rsqrt(_P.add(_R.var(input, dims, correction=0, keepdim=True), eps))
    return _F.layer_norm(input, normalized_shape, weight, bias, eps), mean, rstd


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: _bool, momentum: float,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(output, save_mean, save_invstd)``: batch norm and, in training, the batch's per-channel mean and
    ``1 / sqrt(var + eps)`` (empty tensors in evaluation, as PyTorch)."""
    out = _batch_norm_any_eps(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        none = empty((0,), dtype=input.dtype, device=input.device)
        return out, none, none.clone()
    dims = (0,) + tuple(range(2, input.ndim))
    mean = _R.mean(input, dims)
    invstd = _P.rsqrt(_P.add(_R.var(input, dims, correction=0), eps))
    return out, mean, invstd


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: _int, C: _int, HxW: _int,
                      group: _int, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(output, mean, rstd)``: group norm and each (sample, group)'s statistics, shape (N, group)."""
    g = _S.reshape(input, (N, group, -1))
    mean = _R.mean(g, 2)
    rstd = _P.rsqrt(_P.add(_R.var(g, 2, correction=0), eps))
    return _F.group_norm(input, group, weight, bias, eps), mean, rstd


# ---- embeddings, pooling, padding, sampling -----------------------------------------------------------------
def embedding(weight: Tensor, indices: Tensor, padding_idx: _int = -1, scale_grad_by_freq: _bool = False,
              sparse: _bool = False) -> Tensor:
    """``torch.embedding(weight, indices, ...)``: weight first; ``padding_idx=-1`` is no padding row (ATen's)."""
    return _F.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _stride(stride):
    return None if stride is None or (not isinstance(stride, _int) and len(stride) == 0) else stride


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: _bool = False) -> Tensor:
    """``torch.max_pool1d``: ``stride=[]`` (the default) is the kernel size."""
    return _F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: _bool = False) -> Tensor:
    """``torch.max_pool2d``: ``stride=[]`` (the default) is the kernel size."""
    return _F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: _bool = False) -> Tensor:
    """``torch.max_pool3d``: ``stride=[]`` (the default) is the kernel size."""
    return _F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: _bool = False) -> tuple[Tensor, Tensor]:
    """``(values, indices)`` of :func:`max_pool1d`."""
    return _F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, return_indices=True)


def avg_pool1d(input: Tensor, kernel_size, stride=(), padding=0, ceil_mode: _bool = False,
               count_include_pad: _bool = True) -> Tensor:
    """``torch.avg_pool1d``: ``stride=[]`` (the default) is the kernel size."""
    return _F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:
    """``(values, indices)``: adaptive max pooling over the last dim (ATen always returns the indices)."""
    return _F.adaptive_max_pool1d(input, output_size, return_indices=True)


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """``torch.constant_pad_nd(input, pad, value=0)``: F.pad's constant mode."""
    return _F.pad(input, tuple(pad), "constant", value)


_INTERP = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: _int, padding_mode: _int,
                 align_corners: _bool) -> Tensor:
    """``torch.grid_sampler``: F.grid_sample with ATen's integer modes (0 bilinear, 1 nearest, 2 bicubic; padding
    0 zeros, 1 border, 2 reflection)."""
    if not 0 <= interpolation_mode < 3 or not 0 <= padding_mode < 3:
        raise RuntimeError(f"grid_sampler(): unknown interpolation_mode {interpolation_mode} or padding_mode "
                           f"{padding_mode}")
    return _F.grid_sample(input, grid, _INTERP[interpolation_mode], _PADDING[padding_mode], align_corners)


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: _int, padding_mode: _int,
                    align_corners: _bool) -> Tensor:
    """:func:`grid_sampler` of a 4-D input."""
    if input.ndim != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: _int, padding_mode: _int,
                    align_corners: _bool) -> Tensor:
    """:func:`grid_sampler` of a 5-D input."""
    if input.ndim != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input with sizes {list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta: Tensor, size, align_corners: _bool) -> Tensor:
    """``torch.affine_grid_generator``: F.affine_grid."""
    return _F.affine_grid(theta, list(size), align_corners)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """``torch.pdist``: F.pdist (the p-norm distances between the rows of a 2-D ``input``)."""
    return _F.pdist(input, p)


# ---- activations in ATen's form -----------------------------------------------------------------------------
def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``torch.celu(input, alpha=1.0)``."""
    return _F.celu(input, alpha)


def selu(input: Tensor) -> Tensor:
    """``torch.selu(input)``."""
    return _F.selu(input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: _bool = False,
          generator=None) -> Tensor:
    """``torch.rrelu``: randomised leaky ReLU (the mean slope ``(lower + upper) / 2`` when not training)."""
    return rrelu_with_generator(input, lower, upper, training, False, generator)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``torch.threshold(input, threshold, value)``: ``value`` where ``input <= threshold``."""
    return _F.threshold(input, threshold, value)


# ---- losses with ATen's integer reduction (0 none, 1 mean, 2 sum; the Python binding's default is none) -------
_REDUCTIONS = ("none", "mean", "sum")


def _red(reduction) -> str:
    if isinstance(reduction, _bool) or not isinstance(reduction, _int):
        raise TypeError(f"argument 'reduction' must be int, not {type(reduction).__name__}")
    if not 0 <= reduction <= 2:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def _reduce(loss: Tensor, reduction) -> Tensor:
    r = _red(reduction)
    return loss if r == "none" else (_R.mean(loss) if r == "mean" else _R.sum(loss))


def kl_div(input: Tensor, target: Tensor, reduction: _int = 0, *, log_target: _bool = False) -> Tensor:
    """``torch.kl_div``: the pointwise KL divergence, reduced by ``reduction`` (1: the mean over every element)."""
    return _reduce(_F.kl_div(input, target, reduction="none", log_target=log_target), reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: _int = 0) -> Tensor:
    """``torch.margin_ranking_loss`` with an integer reduction."""
    return _F.margin_ranking_loss(input1, input2, target, margin, reduction=_red(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: _int = 0) -> Tensor:
    """``torch.hinge_embedding_loss`` with an integer reduction."""
    return _F.hinge_embedding_loss(input, target, margin, reduction=_red(reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: _int = 0) -> Tensor:
    """``torch.cosine_embedding_loss`` with an integer reduction."""
    return _F.cosine_embedding_loss(input1, input2, target, margin, reduction=_red(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: _bool = False, reduction: _int = 0) -> Tensor:
    """``torch.triplet_margin_loss`` with an integer reduction."""
    return _F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_red(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: _bool, full: _bool, eps: float,
                     reduction: _int) -> Tensor:
    """``torch.poisson_nll_loss`` (every argument positional and required, as ATen's)."""
    return _F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_red(reduction))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None, reduction: _int = 0) -> Tensor:
    """``torch.binary_cross_entropy_with_logits`` in ATen's order (``pos_weight`` before ``reduction``)."""
    return _F.binary_cross_entropy_with_logits(input, target, weight, reduction=_red(reduction),
                                               pos_weight=pos_weight)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: _int = 0,
             reduction: _int = 0, zero_infinity: _bool = False) -> Tensor:
    """``torch.ctc_loss`` with an integer reduction (1: the mean of the losses divided by the target lengths)."""
    return _F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _red(reduction), zero_infinity)


# ---- recurrent cells: ATen's (input, hx, w_ih, w_hh, b_ih=None, b_hh=None) ------------------------------------
def _gates(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih, b_hh) -> tuple[Tensor, Tensor]:
    return _F.linear(input, w_ih, b_ih), _F.linear(hx, w_hh, b_hh)


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step: ``hx`` is ``(h, c)``; returns ``(h', c')`` (gate order i, f, g, o as nn.LSTM's)."""
    h, c = hx
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = _S.chunk(_P.add(gi, gh), 4, -1)
    c1 = _P.add(_P.mul(_P.sigmoid(f), c), _P.mul(_P.sigmoid(i), _P.tanh(g)))
    return _P.mul(_P.sigmoid(o), _P.tanh(c1)), c1


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step (gate order r, z, n as nn.GRU's; the reset gate applies to the hidden part of n)."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    ir, iz, in_ = _S.chunk(gi, 3, -1)
    hr, hz, hn = _S.chunk(gh, 3, -1)
    r = _P.sigmoid(_P.add(ir, hr))
    z = _P.sigmoid(_P.add(iz, hz))
    n = _P.tanh(_P.add(in_, _P.mul(r, hn)))
    return _P.add(n, _P.mul(z, _P.sub(hx, n)))


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step: ``tanh(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return _P.tanh(_P.add(gi, gh))


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step with ReLU: ``relu(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return _P.relu(_P.add(gi, gh))


def norm_except_dim(v: Tensor, pow: _int = 2, dim: _int = 0) -> Tensor:
    """``torch.norm_except_dim`` (weight norm's ``||v||``): the ``pow``-norm over every dimension but ``dim``, kept
    as size-1 dimensions (``dim=-1``: the norm of all of ``v``, 0-d)."""
    if dim == -1:
        return _R.norm(v, pow)
    if not (v.dtype.is_floating_point or v.dtype.is_complex):  # (PyTorch's norm() check, before the shape's)
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{v.dtype._tname[:-6]} instead.")
    d = norm_dim(dim, v.ndim, "norm_except_dim")
    rest = tuple(i for i in builtins.range(v.ndim) if i != d)
    if not rest:  # (a 1-D v: the norm of each element alone, as PyTorch's view(n, -1).norm(pow, 1))
        return _P.ne(v, 0).to(v.dtype) if pow == 0 else _P.abs(v)
    return _R.norm(v, pow, dim=rest, keepdim=True)


__all__ = ["inf", "nan", "e", "pi", "newaxis", *_INPLACE, *_METHOD_FORMS, "fill", "celu_", "selu_", "rrelu_",
           "norm_except_dim",
           "threshold_",
           "dropout_", "alpha_dropout_", "feature_alpha_dropout_", "feature_dropout", "feature_dropout_",
           "alpha_dropout", "feature_alpha_dropout", "native_dropout", "conv1d", "conv2d", "conv3d",
           "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc", "convolution", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "cosine_similarity", "pairwise_distance",
           "bilinear", "prelu", "hardshrink", "rms_norm", "adaptive_avg_pool1d", "layer_norm", "group_norm",
           "batch_norm", "instance_norm", "native_layer_norm", "native_batch_norm", "native_group_norm",
           "embedding", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
           "adaptive_max_pool1d", "constant_pad_nd", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
           "affine_grid_generator", "pdist", "celu", "selu", "rrelu", "threshold", "kl_div", "margin_ranking_loss",
           "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss",
           "binary_cross_entropy_with_logits", "ctc_loss", "lstm_cell", "gru_cell", "rnn_tanh_cell",
           "rnn_relu_cell"]
