"""nn.functional.linear_cross_entropy: ``cross_entropy(linear(input, linear_weight, linear_bias), target)``
(PyTorch 2.13's reference path; its chunked path, chosen by ``options``, gives the same loss with less memory and
is not implemented: ``options`` is accepted and the logits are materialised)."""
from __future__ import annotations

import math

from ...ops import shape as _S
from ...tensor import Tensor
from ._basic import linear
from ._loss import cross_entropy


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """The cross entropy of the logits ``input @ linear_weight^T + linear_bias`` against ``target``.

    ``linear_weight`` is ``(C, in_features)``, or ``(C, d_1, ..., d_K, in_features)`` for a K-dimensional loss
    (logits ``(N, C, d_1, ..., d_K)``); ``ignore_index=None`` is cross_entropy's default (-100).
    """
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if out_features:
        flat = math.prod(out_features, start=num_classes)
        linear_weight = _S.reshape(linear_weight, (flat, in_features))
        if linear_bias is not None:
            linear_bias = _S.reshape(linear_bias, (flat,))
    logits = _S.reshape(linear(input, linear_weight, linear_bias), logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=label_smoothing)
