"""nn.utils: gradient clipping, flat parameter vectors, packed sequences (nn.utils.rnn), parametrizations
(parametrize, weight_norm, spectral_norm, orthogonal) and batch-norm fusion."""
from __future__ import annotations

from . import clip_grad, convert_parameters, fusion, parametrizations, parametrize, rnn
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "clip_grad", "convert_parameters", "rnn", "parametrize",
           "parametrizations", "fusion",
           "weight_norm", "remove_weight_norm", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]
from .weight_norm import remove_weight_norm, weight_norm  # noqa: E402
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: E402
