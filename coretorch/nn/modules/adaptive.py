"""AdaptiveLogSoftmaxWithLoss (PyTorch's torch/nn/modules/adaptive.py): the efficient softmax of Grave et al.
for large output spaces, the frequent classes in the head, the rest in clusters behind smaller projections."""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

from ...ops import creation as _C, indexing as _I, reduction as _R, shape as _S
from ...ops._indexing_dim import index_add as _index_add
from ...tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax: classes below ``cutoffs[0]`` are scored by the head, each later range ``[cutoffs[i],
    cutoffs[i+1])`` by a cluster (an ``in_features -> in_features // div_value**(i+1) -> size`` projection) whose
    log-probabilities add the head's log-probability of the cluster.

    ``forward(input, target)`` returns ``(output, loss)``: each target's log-probability and the mean negative
    log-likelihood.  ``log_prob(input)`` gives every class's, ``predict(input)`` the most likely class.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 \
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Re-initialise the head and every cluster's projections."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:  # type: ignore[misc]
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """``(output, loss)``: the log-probability of each target and the mean negative log-likelihood."""
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else _S.unsqueeze(input_, 0)
        target = target_ if batched else _S.unsqueeze(target_, 0)
        if target.numel() and (bool(_R.amin(target) < 0) or bool(_R.amax(target) >= self.n_classes)):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        # the head's index for each row: the class itself in the shortlist, else its cluster's entry
        head_index = target
        output = _C.zeros(target.shape[0], dtype=input.dtype, device=input.device)
        for i in range(self.n_clusters):
            lo, hi = self.cutoffs[i], self.cutoffs[i + 1]
            in_cluster = (target >= lo) & (target < hi)
            rows = _S.reshape(_I.nonzero(in_cluster), (-1,))
            if rows.numel() == 0:
                continue
            head_index = head_index.masked_fill(in_cluster, self.shortlist_size + i)
            logprob = F.log_softmax(self.tail[i](_I.index_select(input, 0, rows)), dim=1)
            local = _I.gather(logprob, 1, _S.unsqueeze(_I.index_select(target, 0, rows) - lo, 1))
            output = _index_add(output, 0, rows, _S.reshape(local, (-1,)))
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = _S.reshape(_I.gather(head_logprob, 1, _S.unsqueeze(head_index, 1)), (-1,)) + output
        loss = (-output).mean()
        return _ASMoutput(output if batched else _S.squeeze(output, 0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head_logprob[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return _S.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class, ``(N, n_classes)``."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row, ``(N,)`` (``log_prob(input).argmax(1)``, skipping the clusters when
        the head's best entry is a shortlist class)."""
        head_output = self.head(input)
        output = _R.argmax(head_output, dim=1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        full = _R.argmax(self._full_log_prob(input, head_output), dim=1)
        return full.where(outside, output)
