"""The layer classes of coretorch.nn (each file mirrors PyTorch's torch/nn/modules/<file>.py).

Every name in ``__all__`` is re-exported as ``coretorch.nn.<Name>``.
"""
from __future__ import annotations

from .module import Module
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Bilinear, Identity, LazyLinear, Linear
from .flatten import Flatten, Unflatten
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from .sparse import Embedding, EmbeddingBag

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Linear", "LazyLinear", "Bilinear", "Flatten", "Unflatten", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
           "AlphaDropout", "FeatureAlphaDropout",
           "Embedding", "EmbeddingBag"]

# activations, convolution, pooling, normalization, losses, recurrent layers and attention
from . import activation as _activation, attention as _attention, conv as _conv, loss as _loss  # noqa: E402
from . import normalization as _normalization, pooling as _pooling, rnn as _rnn  # noqa: E402
from . import transformer as _transformer  # noqa: E402
from . import distance as _distance, instancenorm as _instancenorm, padding as _padding  # noqa: E402
from . import fold as _fold, pixelshuffle as _pixelshuffle, upsampling as _upsampling  # noqa: E402
from . import batchnorm, lazy, utils  # noqa: E402,F401  (torch.nn.modules.batchnorm/.lazy/.utils, as scripts import them)
from .activation import *  # noqa: E402,F401,F403
from .attention import *  # noqa: E402,F401,F403
from .conv import *  # noqa: E402,F401,F403
from .loss import *  # noqa: E402,F401,F403
from .normalization import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .rnn import *  # noqa: E402,F401,F403
from .transformer import *  # noqa: E402,F401,F403
from .distance import *  # noqa: E402,F401,F403
from .instancenorm import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403
from .pixelshuffle import *  # noqa: E402,F401,F403
from .upsampling import *  # noqa: E402,F401,F403
from .fold import *  # noqa: E402,F401,F403
from .batchnorm import SyncBatchNorm  # noqa: E402,F401
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402,F401
from .legacy import Container, NLLLoss2d  # noqa: E402,F401
from .linear_cross_entropy import LinearCrossEntropyLoss, LinearCrossEntropyOptions  # noqa: E402,F401

for _m in (_activation, _attention, _conv, _loss, _normalization, _pooling, _rnn, _transformer, _distance,
           _instancenorm, _padding, _pixelshuffle, _upsampling, _fold):
    __all__ += [n for n in _m.__all__ if n not in __all__]
del _m
__all__ += ["SyncBatchNorm", "AdaptiveLogSoftmaxWithLoss", "NLLLoss2d", "Container", "LinearCrossEntropyLoss",
            "LinearCrossEntropyOptions"]
