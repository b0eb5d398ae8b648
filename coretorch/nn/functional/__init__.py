"""coretorch.nn.functional: functional ops; plugin ops registered with functional=True appear here.

PyTorch's ``torch/nn/functional.py`` is the spec (names, defaults, reductions, errors).  The functions live in
one private module per family (activations, padding, attention, interpolation, convolution, pooling,
normalisation, losses, ...); this package only re-exports them.  Most are composites of differentiable tensor ops
(so double backward works with no extra code).  The hot ones are single graph nodes whose forward runs on the
backend's kernels and whose backward is written with tensor ops: ``softmax``/``log_softmax``, ``nll_loss``,
``erf`` and the convolution trio (``conv2d`` and its two gradients, each the derivative of the others).
Convolution and max pooling use the backend's optional fused kernels (``conv2d``, ``conv2d_backward_input``,
``conv2d_backward_weight``, ``max_pool2d``; see ``coretorch._backend.PRIMITIVES``) and fall back to a composite
of primitive kernels when a backend lacks them.
"""
from __future__ import annotations

from ...ops.pointwise import sigmoid, tanh
from ...tensor import Tensor
from ._activation import (celu, elu, erf, gelu, hardsigmoid, hardswish, hardtanh, leaky_relu, log_softmax,
                          logsigmoid, mish, relu, relu6, relu_, selu, silu, softmax, softmin, softplus, softsign,
                          tanhshrink, threshold)
from ._activation_param import glu, hardshrink, prelu, rrelu, rrelu_, softshrink
from ._activation_inplace import celu_, elu_, hardtanh_, leaky_relu_, selu_, threshold_
from ._pdist import pdist, upsample_bilinear, upsample_nearest
from ._linear_ce import linear_cross_entropy
from ._conv_tbc import conv_tbc
from ._attention import scaled_dot_product_attention
from ._mha import multi_head_attention_forward
from ._basic import bilinear, dropout, dropout1d, dropout2d, dropout3d, embedding, linear
from ._conv import _conv2d_fallback, conv1d, conv2d, conv_transpose1d, conv_transpose2d
from ._conv3d import conv3d, conv_transpose3d
from ._grid import affine_grid, grid_sample
from ._fold import embedding_bag, fold, gumbel_softmax, lp_pool1d, lp_pool2d, unfold
from ._interpolate import interpolate, upsample
from ._loss import (_legacy_reduction, binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss,
                    cross_entropy, gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div, l1_loss,
                    margin_ranking_loss, mse_loss, nll_loss, poisson_nll_loss, smooth_l1_loss, soft_margin_loss)
from ._pdist import cosine_similarity, pairwise_distance
from ._loss_ctc import ctc_loss
from ._loss_margin import (multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss,
                           triplet_margin_loss, triplet_margin_with_distance_loss)
from ._normalization import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, rms_norm
from ._padding import normalize, one_hot, pad
from ._pixel import channel_shuffle, native_channel_shuffle, pixel_shuffle, pixel_unshuffle
from ._pooling import (adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool1d_with_indices, max_pool2d,
                       max_pool2d_with_indices)
from ._adaptive import (adaptive_avg_pool1d, adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool1d_with_indices,
                        adaptive_max_pool2d, adaptive_max_pool2d_with_indices, adaptive_max_pool3d,
                        adaptive_max_pool3d_with_indices)
from ._pooling3d import avg_pool3d, max_pool3d, max_pool3d_with_indices
from ._alpha_dropout import alpha_dropout, feature_alpha_dropout
from ._fractional import (fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
                          fractional_max_pool3d_with_indices, lp_pool3d)
from ._unpool import max_unpool1d, max_unpool2d, max_unpool3d

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations", "Tensor")]

# PyTorch's functions say they live in torch.nn.functional (reprs, pickling by reference, __torch_function__
# messages); the family modules are an implementation detail.
for _name in __all__:
    _fn = globals()[_name]
    if getattr(_fn, "__module__", "").startswith(__name__ + "._"):
        _fn.__module__ = __name__
del _name, _fn
