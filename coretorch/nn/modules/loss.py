"""Loss modules (PyTorch's torch/nn/modules/loss.py): thin wrappers over nn.functional; ``weight`` and
``pos_weight`` are buffers, as in PyTorch."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
           "SmoothL1Loss", "HuberLoss", "PoissonNLLLoss", "GaussianNLLLoss", "SoftMarginLoss",
           "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
           "CTCLoss"]


class _Loss(Module):
    reduction: str

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = F._legacy_reduction(size_average, reduce, reduction)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """The mean absolute error.

    ``l = |input - target|``.

    Args:
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """The mean squared error.

    ``l = (input - target) ** 2``.

    Args:
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """The negative log-likelihood of log-probabilities ``input`` (e.g. from ``log_softmax``) at the target classes.

    ``l_n = -weight[y_n] * input[n, y_n]``; ``"mean"`` divides by the sum of the weights of the non-ignored targets.

    Args:
        weight (Tensor, optional): a weight per class ``(C,)``.
        ignore_index (int): a target value that contributes nothing (default -100).
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Input: ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``. Target: ``(N,)`` / ``()`` / ``(N, d1, ...)`` int64.
        Output: scalar, or the target's shape with ``reduction="none"``.
    """
    __constants__ = ["ignore_index", "reduction"]

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """The cross-entropy between logits and class indices (or class probabilities).

    With class indices: ``l_n = -weight[y_n] * log_softmax(x_n)[y_n]``; ``"mean"`` divides by the sum of the
    weights of the non-ignored targets. With probabilities: ``l_n = -sum_c weight[c] * y_nc * log_softmax(x_n)[c]``.

    Args:
        weight (Tensor, optional): a weight per class ``(C,)``.
        ignore_index (int): a target value that contributes nothing (default -100).
        label_smoothing (float): mix the target with the uniform distribution (default 0).
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Input: ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``. Target: ``(N,)`` / ``()`` / ``(N, d1, ...)`` int64 indices,
        or the input's shape as probabilities. Output: scalar, or ``(N, d1, ...)`` with ``reduction="none"``.
    """
    __constants__ = ["ignore_index", "reduction", "label_smoothing"]

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """The binary cross-entropy between probabilities ``input`` and targets in [0, 1].

    ``l = -weight * (target * log(input) + (1 - target) * log(1 - input))``, the logs clamped at -100.

    Args:
        weight (Tensor, optional): a rescaling weight, broadcast to the input.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """The binary cross-entropy of ``sigmoid(input)``, computed stably from the logits.

    ``l = -weight * (pos_weight * target * log(sigmoid(x)) + (1 - target) * log(1 - sigmoid(x)))``.

    Args:
        weight (Tensor, optional): a rescaling weight, broadcast to the input.
        pos_weight (Tensor, optional): the weight of positive examples per class (broadcast over the last dimension).
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """The Kullback-Leibler divergence between the target distribution and ``input`` given as log-probabilities.

    ``l = target * (log(target) - input)`` (``exp(target) * (target - input)`` with ``log_target``).
    Use ``reduction="batchmean"`` for the mathematical KL divergence (sum divided by the batch size).

    Args:
        log_target (bool): the target is given as log-probabilities.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SmoothL1Loss(_Loss):
    """The smooth L1 loss: squared near zero, linear beyond ``beta`` (Huber divided by ``beta``).

    ``l = 0.5 * d**2 / beta`` if ``|d| < beta`` else ``|d| - 0.5 * beta``, with ``d = input - target``.

    Args:
        beta (float): the switch point (default 1.0; 0 is L1).
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """The Huber loss: squared near zero, linear beyond ``delta``.

    ``l = 0.5 * d**2`` if ``|d| < delta`` else ``delta * (|d| - 0.5 * delta)``, with ``d = input - target``.

    Args:
        delta (float): the switch point (default 1.0).
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    __constants__ = ["reduction", "delta"]

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class PoissonNLLLoss(_Loss):
    """The negative log-likelihood of a Poisson-distributed target.

    ``l = exp(input) - target * input`` with ``log_input`` (default), else ``input - target * log(input + eps)``;
    ``full`` adds the Stirling term.

    Args:
        log_input (bool): ``input`` is the log of the rate (default True).
        full (bool): add the Stirling approximation term.
        eps (float): added inside the log without ``log_input``.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """The negative log-likelihood of ``target`` under a normal law of mean ``input`` and variance ``var``.

    ``l = 0.5 * (log(max(var, eps)) + (input - target)**2 / max(var, eps))`` (+ ``0.5 * log(2 pi)`` with ``full``).

    Args:
        full (bool): include the constant term.
        eps (float): the variance clamp (default 1e-6).
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Input and target: ``(N, *)``; var: the same shape, or one dimension fewer / of size 1 (homoscedastic).
    """
    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """The two-class logistic loss for targets 1 or -1.

    ``l = log(1 + exp(-y * x))``.

    Args:
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """The ranking loss of two inputs for targets 1 (``x1`` should rank higher) or -1.

    ``l = max(0, -y * (x1 - x2) + margin)``.

    Args:
        margin (float): default 0.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """The hinge embedding loss for targets 1 or -1 (e.g. with ``input`` a distance).

    ``l = x`` for ``y = 1``, ``max(0, margin - x)`` for ``y = -1``.

    Args:
        margin (float): default 1.0.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        ``input`` and ``target``: any shape, the same; output: scalar, or the input's shape with ``reduction="none"``.
    """
    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """A loss on the cosine similarity of two inputs for targets 1 (similar) or -1 (dissimilar).

    ``l = 1 - cos(x1, x2)`` for ``y = 1``, ``max(0, cos(x1, x2) - margin)`` for ``y = -1``.

    Args:
        margin (float): between -1 and 1 (default 0).
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Inputs: ``(N, D)`` or ``(D,)``. Target: ``(N,)`` or ``()``. Output: scalar, or ``(N,)``.
    """
    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """The triplet loss of anchors, positives and negatives.

    ``l = max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``p``-norm distance (``swap`` also tries ``d(p, n)``).

    Args:
        margin (float): default 1.
        p (float): the norm degree (default 2).
        eps (float): added for stability.
        swap (bool): use the distance swap.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Inputs: ``(N, D)`` or ``(D,)``. Output: scalar, or ``(N,)``.
    """
    __constants__ = ["margin", "p", "eps", "swap", "reduction"]

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet loss with a custom distance function.

    ``l = max(d(a, p) - d(a, n) + margin, 0)`` with ``d = distance_function`` (default pairwise L2).

    Args:
        distance_function (callable, optional): ``d(x1, x2) -> Tensor``.
        margin (float): default 1.
        swap (bool): use the distance swap.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Inputs: ``(N, *)``. Output: scalar, or ``(N,)``.
    """
    __constants__ = ["margin", "swap", "reduction"]

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        from .distance import PairwiseDistance
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """A multi-class hinge loss on scores and class indices.

    ``l = sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C`` (times ``weight[y]``).

    Args:
        p (int): 1 or 2.
        margin (float): default 1.
        weight (Tensor, optional): a weight per class.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Input: ``(N, C)`` or ``(C,)``. Target: ``(N,)`` or ``()`` int64. Output: scalar, or ``(N,)``.
    """
    __constants__ = ["p", "margin", "reduction"]

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D instead")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """A multi-class multi-label hinge loss; ``target`` holds class indices, ended by the first -1.

    ``l = sum_{j in targets, i not in targets} max(0, 1 - (x[j] - x[i])) / C``.

    Args:
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Input: ``(N, C)`` or ``(C,)``. Target: the same shape, int64. Output: scalar, or ``(N,)``.
    """
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """A multi-label one-versus-all loss on logits, targets in {0, 1}.

    ``l = -mean_c(y_c * log(sigmoid(x_c)) + (1 - y_c) * log(sigmoid(-x_c)))`` (times ``weight[c]``).

    Args:
        weight (Tensor, optional): a weight per class.
        reduction (str): ``"none"`` (one loss per element), ``"mean"`` (default) or ``"sum"``.
        size_average, reduce: the deprecated spellings of ``reduction``.

    Shape:
        Input and target: ``(N, C)``. Output: scalar, or ``(N,)``.
    """
    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss between unaligned sequences (speech, handwriting).

    Args:
        blank (int): the blank label (default 0).
        reduction (str): ``"none"``, ``"mean"`` (default: each loss divided by its target length, then averaged)
            or ``"sum"``.
        zero_infinity (bool): replace infinite losses (impossible alignments) and their gradients by zero.

    Shape:
        Log-probabilities ``(T, N, C)`` (or ``(T, C)``); targets ``(N, S)`` or concatenated ``(sum(target_lengths),)``;
        input_lengths and target_lengths ``(N,)``. Output: scalar, or ``(N,)``.
    """
    __constants__ = ["blank", "reduction"]

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)
