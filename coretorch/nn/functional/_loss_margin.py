"""nn.functional margin losses: triplet_margin_loss (+ with a distance function), multi_margin_loss,
multilabel_margin_loss, multilabel_soft_margin_loss (compositions of differentiable ops: autograd comes free)."""
from __future__ import annotations

from ... import dtypes as _dt
from ...ops import creation as _C, indexing as _I, pointwise as _P, reduction as _R, shape as _S
from ...amp.autocast_mode import cast_inputs as _ac_cast
from ...amp.autocast_mode import state as _ac
from ...autograd.grad_mode import state as _gs
from ...ops._rangecheck import any_outside
from ...tensor import Tensor
from ._activation import logsigmoid
from ._loss import _legacy_reduction, _reduce as reduce_, mean_alias
from ._pdist import pairwise_distance

__all__ = ["triplet_margin_loss", "triplet_margin_with_distance_loss", "multi_margin_loss",
           "multilabel_margin_loss", "multilabel_soft_margin_loss"]


def _reduction(size_average, reduce, reduction: str, alias: bool = True) -> str:
    return _legacy_reduction(size_average, reduce, reduction) if size_average is not None or reduce is not None \
        else mean_alias(reduction, 4) if alias else reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    return reduce_(loss, reduction)


def _check_triplet_dims(anchor, positive, negative, name: str) -> None:
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == p == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with d the p-norm distance (``swap``: d(a, n) := min(d(a, n), d(p, n)))."""
    if _ac.on:  # autocast: a float32 op
        anchor, positive, negative = _ac_cast("triplet_margin_loss", anchor, positive, negative)
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:  # (PyTorch 2.13 checks it)
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative, "triplet_margin_loss")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = _P.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(_P.clamp(_P.add(_P.sub(d_ap, d_an), margin), min=0.0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """triplet_margin_loss with any distance (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative, "triplet_margin_with_distance_loss")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = _P.minimum(d_an, dist(positive, negative))
    return _reduce(_P.clamp(_P.add(_P.sub(d_ap, d_an), margin), min=0.0), reduction)


def _check_margin_input(op: str, kernel: str, input: Tensor, target: Tensor) -> tuple:
    """PyTorch's shape and dtype checks of the multi(label) margin losses' input and target: a floating input that
    is 0-d, a non-empty vector or a matrix of non-empty rows; a Long target.  (frames, classes)"""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype._tname[:-6]}'")
    nd = input.ndim
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target.dtype is not _dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._tname[:-6]}")
    return (1, 1 if nd == 0 else input.shape[0]) if nd <= 1 else tuple(input.shape)


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                      reduce=None, reduction: str = "mean") -> Tensor:
    """sum over j != y of max(0, margin - x[y] + x[j])^p / C per sample (``weight[y]`` scales it)."""
    if _ac.on:  # autocast: a float32 op
        input, weight = _ac_cast("multi_margin_loss", input, weight)
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    n, c = _check_margin_input("multi_margin_loss", "multi_margin_loss_cpu_kernel", input, target)
    # PyTorch: a 0-d or 1-d input is one sample whose target is any one-element tensor of at most one dim (the
    # unreduced loss takes the target's shape)
    unbatched = input.ndim <= 1
    x = input.reshape(1, -1) if unbatched else input
    if target.ndim > 1 or target.numel() != n:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    if weight is not None:
        if weight.shape[0] != c:
            raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected scalar type {input.dtype._tname[:-6]} but found "
                               f"{weight.dtype._tname[:-6]}")
        if weight.requires_grad and _gs.enabled:
            raise RuntimeError("The function 'multi_margin_loss' is not differentiable with respect to argument "
                               "'weight'. This input cannot have requires_grad True.")
    y = target.reshape(-1)
    if y._be.host_memory and n and any_outside(y, 0, c):  # (PyTorch's CPU kernel's check)
        raise RuntimeError("target out of range")
    x_y = _I.gather(x, 1, _S.unsqueeze(y, 1))
    z = _P.add(_P.sub(x, x_y), margin)
    margins = _P.where(_P.gt(z, 0), z, 0.0)  # (PyTorch's kernel: no gradient at z == 0, unlike a clamp)
    if p == 2:
        margins = _P.mul(margins, margins)
    if weight is not None:
        margins = _P.mul(margins, _S.unsqueeze(_I.index_select(weight, 0, y), 1))
    not_target = _P.ne(_S.unsqueeze(_C.arange(c, device=x.device), 0), _S.unsqueeze(y, 1))
    loss = _P.div(_R.sum(_P.where(not_target, margins, 0.0), 1), c)
    return _reduce(loss.reshape(target.shape) if unbatched else loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """sum over target classes j and non-target classes k of max(0, 1 - (x[j] - x[k])) / C; ``target`` lists the
    class indices of each sample, ended by the first -1."""
    if _ac.on:  # autocast: a float32 op
        (input,) = _ac_cast("multilabel_margin_loss", input)
    reduction = _reduction(size_average, reduce, reduction)
    n, c = _check_margin_input("multilabel_margin_loss", "multilabel_margin_loss_forward_out_frame", input, target)
    unbatched = input.ndim <= 1
    # PyTorch: an unbatched input's target is any tensor of at most one dim holding one entry per class
    if unbatched and target.ndim <= 1 and target.numel() == c:
        x, y = input.reshape(1, c), target.reshape(1, c)
    elif not unbatched and tuple(target.shape) == (n, c):
        x, y = input, target
    else:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    if y._be.host_memory and n and any_outside(y, -1, c):  # (PyTorch's CPU check: every entry, even past a -1)
        raise RuntimeError("argument #2 'target' is out of range")
    valid = _P.ge(y, 0).to(_dt.int64).cumprod(1)          # positions before the first -1
    idx = _P.where(_P.gt(valid, 0), y, 0)
    count = _C.zeros((n, c), dtype=x.dtype, device=x.device)
    count = count.scatter_add(1, idx, valid.to(x.dtype))   # (n, c): how often class k is listed (PyTorch's loop
    is_target = _P.gt(count, 0)                             # over the list counts a repeated class each time)
    # hinge between every listed target class j and every non-target class k (a gradient only where it is > 0)
    diff = _P.rsub(_P.sub(_S.unsqueeze(x, 2), _S.unsqueeze(x, 1)), 1.0)   # [i, j, k] = 1 - (x[j] - x[k])
    pair = _P.logical_and(_P.gt(diff, 0), _P.logical_not(_S.unsqueeze(is_target, 1)))
    hinge = _P.mul(_P.where(pair, diff, 0.0), _S.unsqueeze(count, 2))
    loss = _P.div(_R.sum(hinge, (1, 2)), c)
    if unbatched:
        return _reduce(loss[0], reduction)
    if reduction == "mean" and n == 0:  # (PyTorch's kernel: the mean of no samples is 0, not 0 / 0)
        return _R.sum(loss)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), averaged over the classes."""
    reduction = _reduction(size_average, reduce, reduction, alias=False)
    loss = _P.neg(_P.add(_P.mul(target, logsigmoid(input)), _P.mul(_P.rsub(target, 1.0), logsigmoid(_P.neg(input)))))
    if weight is not None:
        loss = _P.mul(loss, weight)
    if input.ndim == 0:  # (PyTorch's input.size(-1), the class count, of a 0-d input)
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = _R.mean(loss, input.ndim - 1)
    if reduction not in ("none", "mean", "sum"):  # (PyTorch's own check and wording here)
        raise ValueError(f"{reduction} is not valid")
    return _reduce(loss, reduction)
