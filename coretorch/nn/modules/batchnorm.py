"""torch.nn.modules.batchnorm: the batch-norm layers (BatchNorm1d/2d/3d and the lazy ones are defined with the
other norms in normalization.py) and SyncBatchNorm.

SyncBatchNorm in one process (or without an initialised process group, or in eval mode) is BatchNorm on any
input rank.  With ``coretorch.distributed`` initialised and more than one rank, training-mode statistics are
those of the whole global batch: each rank all-reduces its per-channel (sum, sum of squares, count) in forward,
and in backward all-reduces the gradient w.r.t. those sums, which is the gradient the global batch's statistics
pass to every rank's inputs.  Unlike PyTorch (whose kernels are GPU-only), this works on cpu and opencl.
"""
from __future__ import annotations

from ... import distributed as _dist
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...ops import creation as _C
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from .. import functional as F
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,
                            _BatchNorm, _LazyNormBase, _NormBase)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "SyncBatchNorm", "_BatchNorm", "_LazyNormBase", "_NormBase"]


def _all_reduce(t, group) -> None:
    """Sum ``t`` over the ranks of ``group`` in place (a seam the single-process tests replace)."""
    _dist.all_reduce(t, group=group)


def _sync_world(group) -> int:
    """The number of ranks batch statistics are shared over: 1 without an initialised process group."""
    if not _dist.is_available() or not _dist.is_initialized():
        return 1
    return _dist.get_world_size(group)


class _AllReduceSum(Function):
    """Sum over ranks; its gradient is the sum over ranks of the gradients (every rank's loss uses the sum)."""

    @staticmethod
    def forward(ctx, stats, group):
        ctx.group = group
        out = stats.detach().clone()
        _all_reduce(out, group)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad.contiguous().clone()
        _all_reduce(g, ctx.group)
        return g, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics are reduced over the processes of a distributed group (BatchNorm when
    not distributed); arguments as :class:`BatchNorm1d`, plus ``process_group``.
    """
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                from ..._compile.capture import varying_read  # (imported on use: compile imports nn)
                varying_read("SyncBatchNorm with momentum=None reads num_batches_tracked, which changes every step")
                eaf = 1.0 / float(self.num_batches_tracked.item())
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        running_mean = self.running_mean if not self.training or self.track_running_stats else None
        running_var = self.running_var if not self.training or self.track_running_stats else None
        world = _sync_world(self.process_group) if bn_training and self.training else 1
        if world <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, eaf,
                                self.eps)
        return self._sync_forward(input, running_mean, running_var, eaf)

    def _sync_forward(self, input, running_mean, running_var, momentum: float):
        c = input.shape[1]
        axes = (0,) + tuple(range(2, input.ndim))
        bshape = (1, c) + (1,) * (input.ndim - 2)
        count = _C.full((1,), input.numel() // c, dtype=input.dtype, device=input.device)
        local = _S.cat([_R.sum(input, axes), _R.sum(_P.mul(input, input), axes), count])
        stats = _AllReduceSum.apply(local, self.process_group)        # (sum, sum of squares, count) of all ranks
        n = float(stats[2 * c].item())
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{input.shape}")
        mean = _P.div(stats[:c], n)
        var = _P.clamp(_P.sub(_P.div(stats[c:2 * c], n), _P.mul(mean, mean)), 0.0, None)  # biased
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(_P.add(_P.mul(running_mean, 1 - momentum),
                                          _P.mul(mean.detach().to(running_mean.dtype), momentum)))
            if running_var is not None:
                unbiased = _P.mul(var.detach(), n / (n - 1)).to(running_var.dtype)
                running_var.copy_(_P.add(_P.mul(running_var, 1 - momentum), _P.mul(unbiased, momentum)))
        out = _P.mul(_P.sub(input, mean.reshape(bshape)), _P.rsqrt(_P.add(var, self.eps)).reshape(bshape))
        if self.weight is not None:
            out = _P.mul(out, self.weight.reshape(bshape))
        if self.bias is not None:
            out = _P.add(out, self.bias.reshape(bshape))
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every BatchNorm*d of ``module`` (or ``module`` itself) by a SyncBatchNorm sharing its
        parameters and buffers."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out
