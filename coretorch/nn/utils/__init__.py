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
from . import init, memory_format, prune, stateless  # noqa: E402,F401  (torch.nn.utils.stateless, prune, ...)
from .init import skip_init  # noqa: E402
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format  # noqa: E402
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: E402

__all__ += ["skip_init", "stateless", "prune", "spectral_norm", "remove_spectral_norm",
            "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]
