"""nn.functional losses (PyTorch's reductions, legacy size_average/reduce, weights, ignore_index)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import dtypes as _dt
from ..._warn_once import user_stacklevel
from ...amp.autocast_mode import cast_inputs as _ac_cast
from ...amp.autocast_mode import state as _ac
from ...autograd._zero import links_inputs
from ...autograd.grad_mode import state as _gs
from ...autograd.graph import Node
from ...ops import creation as _C
from ...ops import indexing as _I
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from ...ops import special as _SP
from ...ops._util import broadcast_shape, device_mismatch, host_all_below
from ...tensor import Tensor, _make
from ._activation import _floating_only, _softmax_impl, logsigmoid
from ._common import _check_tensor, _i64, _needs_graph, _no_grad, _record
from ._loss_nodes import MseLossBackward0


# ---------------------------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------------------------
def mean_alias(reduction, stacklevel: int = 3):
    """PyTorch's _Reduction.get_enum: the legacy 'elementwise_mean' is 'mean', with its deprecation warning (the
    losses whose ATen kernel takes the enum; poisson/gaussian nll and multilabel_soft_margin reject it)."""
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      UserWarning, stacklevel=stacklevel)
        return "mean"
    return reduction


def _legacy_reduction(size_average, reduce, reduction, emit=True, alias=True):
    if size_average is None and reduce is None:
        return mean_alias(reduction, 4) if alias else reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "none" if not reduce else "mean" if size_average else "sum"
    if emit:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                      UserWarning, stacklevel=3)
    return ret

_EPS_F = float(np.float32(1e-12))  # PyTorch's loss EPSILON (1e-12 as a C float): 9.99999996e-13


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return _R.mean(loss)
    if reduction == "sum":
        return _R.sum(loss)
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _pointwise_target(op, input, target):
    _check_tensor(op, "input", input)
    _check_tensor(op, "target", target)
    if tuple(target.shape) != tuple(input.shape):
        # PyTorch points at the loss function's caller: past coretorch's own frames (the grad_fn-naming wrapper
        # F.mse_loss & co go through, a __torch_function__ dispatch wrapper)
        level = user_stacklevel(3)
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=level)
    return _S.broadcast_tensors(input, target)


def _loss_dtypes(kernel: str, input, target, bool_input: bool = True):
    """PyTorch's pointwise loss kernels: none for two integer/bool operands; a bool operand joins the other's dtype
    (``bool_input``: also when the input is the bool one)."""
    if not (isinstance(input, Tensor) and isinstance(target, Tensor)):
        return input, target
    fi, ft = input.dtype.is_floating_point, target.dtype.is_floating_point
    if not fi and not ft:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype._tname[:-6]}'")
    if target.dtype is _dt.bool_:
        target = target.to(input.dtype)
    elif input.dtype is _dt.bool_ and bool_input:
        input = input.to(target.dtype)
    return input, target


def _weighted(loss, weight):
    return loss if weight is None else _P.mul(loss, weight)


def _check_weight_size(input, weight) -> None:
    """mse/l1/huber's ``weight`` has the input's own shape (PyTorch's check, before any broadcast)."""
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None) -> Tensor:
    """The functional form of :class:`coretorch.nn.MSELoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        weight (Tensor, optional): a weight broadcast to the element losses.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("mse_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_weight_size(input, weight)
    input, target = _pointwise_target("mse_loss", *_loss_dtypes("mse_cpu", input, target))
    if weight is None and _needs_graph(input, target):
        # one MseLossBackward0 node with edges to input and target, as PyTorch's (a tutorial walks
        # loss.grad_fn.next_functions[0][0] to the Linear's AddmmBackward0), not the last op of a composite
        with _no_grad():
            d = _P.sub(input, target)
            out = _reduce(_P.mul(d, d), reduction)
        node = MseLossBackward0()
        node.reduction = reduction
        node.need = (input._rg, target._rg)
        node.save(input, target)
        return _record(node, out._data, out.dtype, out._be, input, target)
    d = _P.sub(input, target)
    return _reduce(_weighted(_P.mul(d, d), weight), reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The functional form of :class:`coretorch.nn.L1Loss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        weight (Tensor, optional): a weight broadcast to the element losses.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_weight_size(input, weight)
    input, target = _pointwise_target("l1_loss", input, target)
    return _reduce(_weighted(_P.abs(_P.sub(input, target)), weight), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """The functional form of :class:`coretorch.nn.SmoothL1Loss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        beta (float): the switch point (default 1).
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("smooth_l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _pointwise_target("smooth_l1_loss", *_loss_dtypes("smooth_l1_cpu", input, target))
    d = _P.sub(input, target)
    ad = _P.abs(d)
    if beta == 0:
        return _reduce(ad, reduction)
    inside = _P.logical_not(_P.ge(ad, beta))  # (NaN inside: a NaN gradient, as PyTorch's x * grad / beta)
    dq = _P.where(inside, d, 0.0)  # (the quadratic branch only sees its own d: no 0 * inf = NaN in the backward)
    loss = _P.where(inside, _P.div(_P.mul(_P.mul(dq, dq), 0.5), beta), _P.sub(ad, 0.5 * beta))
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """The functional form of :class:`coretorch.nn.HuberLoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        delta (float): the switch point (default 1).
        weight (Tensor, optional): a weight broadcast to the element losses.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = mean_alias(reduction)
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("huber_loss", input, target)
    _check_reduction(reduction)
    if isinstance(delta, np.generic):  # (a numpy delta as PyTorch's double: 0.5 * delta ** 2 not in float32)
        delta = float(delta)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_weight_size(input, weight)
    input, target = _pointwise_target("huber_loss", *_loss_dtypes("huber_cpu", input, target, bool_input=False))
    d = _P.sub(input, target)
    ad = _P.abs(d)
    inside = _P.logical_not(_P.ge(ad, delta))  # (NaN inside: a NaN gradient, as PyTorch's x * grad)
    dq = _P.where(inside, d, 0.0)  # (the quadratic branch only sees its own d: no 0 * inf = NaN in the backward)
    loss = _P.where(inside, _P.mul(_P.mul(dq, dq), 0.5), _P.mul(_P.sub(ad, 0.5 * delta), delta))
    return _reduce(_weighted(_in_dtype_of(loss, input), weight), reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The functional form of :class:`coretorch.nn.BCELoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        weight (Tensor, optional): a rescaling weight, broadcast to the input.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target, weight = _ac_cast("binary_cross_entropy", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_tensor("binary_cross_entropy", "input", input)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {target.dtype._tname[:-6]} but expected {input.dtype._tname[:-6]}")
    if weight is not None:
        if weight.requires_grad and _gs.enabled:
            raise RuntimeError("The function 'binary_cross_entropy' is not differentiable with respect to argument "
                               "'weight'. This input cannot have requires_grad True.")
        weight = _S.expand(weight, tuple(input.shape))  # PyTorch expands the weight to the target's size
    if input.numel():
        # one host read of the range test's outcome (a NaN fails it, as PyTorch's): a compiled step checks that it
        # holds again, where reading the extremes themselves differed at the next batch
        with _no_grad():
            x, t = input.detach(), target.detach()
            ok_x = _P.logical_and(_P.ge(_R.amin(x), 0), _P.le(_R.amax(x), 1))
            ok = _P.logical_and(ok_x, _P.logical_and(_P.ge(_R.amin(t), 0), _P.le(_R.amax(t), 1)))
        if not ok.item():
            which = "input" if not ok_x.item() else "target"
            raise RuntimeError(f"all elements of {which} should be between 0 and 1")
    with _no_grad():
        # PyTorch clamps each log at -100 so that a 0/1 prediction gives a finite loss
        log_x = _P.clamp(_P.log(input), min=-100.0)
        log_1mx = _P.clamp(_P.log(_P.rsub(input, 1.0)), min=-100.0)
        loss = _P.sub(_P.mul(_P.sub(target, 1.0), log_1mx), _P.mul(target, log_x))  # PyTorch's order (signed 0s)
        out = _reduce(_weighted(loss, weight), reduction)
    if _needs_graph(input, target):
        node = BinaryCrossEntropyBackward0()
        node.reduction = reduction
        node.need = (input._rg, target._rg)
        node.save(input, target, weight)
        return _record(node, out._data, out.dtype, out._be, input, target)
    return out


class BinaryCrossEntropyBackward0(Node):
    """PyTorch's binary_cross_entropy_backward: input g (x - y) / clamp(x (1 - x), min=1e-12) (finite at a 0 or 1
    prediction), target -g logit(x); times the weight, over numel for 'mean'.  Tensor ops: double backward works."""
    __slots__ = ("reduction", "need")

    def backward(self, g):
        x, y, w = self.saved()
        if self.reduction == "mean":
            g = _P.div(g, x.numel())
        if w is not None:
            g = _P.mul(g, w)
        nx, ny = self.need
        gx = _P.div(_P.mul(g, _P.sub(x, y)), _P.clamp(_P.mul(x, _P.rsub(x, 1.0)), min=_EPS_F)) if nx else None
        gy = _P.mul(g, _P.sub(_P.log(_P.rsub(x, 1.0)), _P.log(x))) if ny else None
        return gx, gy


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """The functional form of :class:`coretorch.nn.BCEWithLogitsLoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        weight (Tensor, optional): a rescaling weight.
        pos_weight (Tensor, optional): the weight of positive examples per class.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target, weight, pos_weight = _ac_cast("binary_cross_entropy_with_logits", input, target, weight,
                                                     pos_weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_tensor("binary_cross_entropy_with_logits", "input", input)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    _floating_only("log_sigmoid_cpu", input)
    if isinstance(target, Tensor) and not target.dtype.is_floating_point:
        raise RuntimeError(f"result type {input.dtype._tname[:-6]} can't be cast to the desired output type "
                           f"{target.dtype._tname[:-6]}")
    # log(1 + exp(-x)) = -logsigmoid(x): stable, with the exact gradient -sigmoid(-x) (also at x = 0)
    softplus_neg = _P.neg(logsigmoid(input))
    if pos_weight is not None:
        log_weight = _P.add(_P.mul(_P.sub(pos_weight, 1.0), target), 1.0)
        loss = _P.add(_P.mul(_P.rsub(target, 1.0), input), _P.mul(log_weight, softplus_neg))
    else:
        loss = _P.add(_P.mul(_P.rsub(target, 1.0), input), softplus_neg)
    loss = _weighted(loss, weight)
    if isinstance(target, Tensor) and loss.dtype is not target.dtype:
        # PyTorch accumulates the loss in place into (1 - target): the result has the target's float dtype
        loss = loss.to(target.dtype)
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """The functional form of :class:`coretorch.nn.KLDivLoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        log_target (bool): ``target`` is given as log-probabilities.
        reduction (str): ``"none"``, ``"batchmean"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("kl_div", input, target)
    if not (input.dtype.is_floating_point or input.dtype.is_complex) or not (
            target.dtype.is_floating_point or target.dtype.is_complex):
        # PyTorch refuses integral (and bool) inputs instead of promoting them to a float loss
        raise RuntimeError("kl_div: Integral inputs not supported.")
    legacy = size_average is not None or reduce is not None
    # PyTorch: legacy arguments pick the reduction (and silence the 'mean' warning), yet a 'batchmean' passed beside
    # them still divides that reduction's result by the batch size
    per_batch = legacy and reduction == "batchmean"
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean" and not legacy:
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    for t in (input, target):  # (PyTorch's checks)
        if t.dtype.is_complex:
            raise RuntimeError("kl_div: Complex inputs not supported.")
        if not t.dtype.is_floating_point:
            raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = _P.mul(_P.exp(target), _P.sub(target, input))
    else:
        # PyTorch's xlogy(t, t) - t * x: xlogy is 0 at t == 0 and NaN for a negative t (its log), while the
        # input's gradient is -t everywhere; xlogy's own backward gives the target's gradient (NaN at t == 0: t / t)
        loss = _P.sub(_SP.xlogy(target, target), _P.mul(target, input))
    if reduction == "batchmean":
        return _P.div(_R.sum(loss), input.shape[0]) if input.ndim else _R.sum(loss)
    out = _reduce(loss, reduction)
    return _P.div(out, input.shape[0]) if per_batch and input.ndim else out


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """The functional form of :class:`coretorch.nn.PoissonNLLLoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        log_input (bool): ``input`` is the log of the rate (default True).
        full (bool): add the Stirling term.
        eps (float): added inside the log without ``log_input``.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("poisson_nll_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction, alias=False)
    if log_input:
        loss = _P.sub(_P.exp(input), _P.mul(target, input))
    else:
        loss = _P.sub(input, _P.mul(target, _P.log(_P.add(input, eps))))
    if full:
        st = _P.add(_P.sub(_P.mul(target, _P.log(target)), target), _P.mul(_P.log(_P.mul(target, 2 * math.pi)), 0.5))
        loss = _P.add(loss, _P.where(_P.gt(target, 1), st, 0.0))
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The functional form of :class:`coretorch.nn.SoftMarginLoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("soft_margin_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if isinstance(target, Tensor) and target._rg and _gs.enabled:  # PyTorch's kernel has no target gradient
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. "
                           "This input cannot have requires_grad True.")
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        # PyTorch's kernel writes the float loss into a tensor of the input's dtype: an integer (or bool) input
        # is refused rather than promoted
        if input.dtype is _dt.bool_:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                               "invert a mask, use the `~` or `logical_not()` operator instead.")
        raise RuntimeError(f"result type Float can't be cast to the desired output type {input.dtype._tname[:-6]}")
    if isinstance(input, Tensor) and isinstance(target, Tensor):
        shape = tuple(input.shape)
        if broadcast_shape(shape, tuple(target.shape), "soft_margin_loss") != shape:  # out has input's shape
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                               f"{list(broadcast_shape(shape, tuple(target.shape)))}")
    loss = _P.log1p(_P.exp(_P.neg(_P.mul(target, input))))
    return _reduce(_in_dtype_of(loss, input), reduction)


def _in_dtype_of(loss, input):
    """The element losses in the input's floating dtype: PyTorch's kernels write into a tensor like the input (a
    float64 target does not promote the loss, a float32 one does not promote a float16 input)."""
    if isinstance(input, Tensor) and input.dtype.is_floating_point and loss.dtype is not input.dtype:
        return loss.to(input.dtype)
    return loss


def _capturing() -> bool:
    from ..._compile import is_compiling  # (imported on use: compile imports nn)
    return is_compiling()


@links_inputs
class NllLossBackward0(Node):
    """Gradient of the picked log-probabilities: -w[t] (g / total) at (i, t_i) in the rows whose target is not
    ``ignore`` (a row of class weight 0 too: -0.0, or NaN where every weight is 0, as PyTorch's), written with
    tensor ops."""
    __slots__ = ("target", "wt", "total", "reduction", "shape", "dt", "ignore")

    def backward(self, g):
        m, c = self.shape
        tgt = self.saved()[0]  # (the version check of the target and weight) the targets as given
        if self.wt is None:  # the forward's fast path: every weight 1, total m
            table = g._be
            if not (_gs.enabled and g._rg) and g.dtype is self.dt:
                # the scalar is free to read on the host: -g / m computed once (double, then rounded: the same
                # float as the kernel's division, m being exact); not under a compile capture, where the read would
                # be a checked value (a module capture's placeholder output gradient, a varying loss scale)
                if table.host_memory and not _capturing():
                    gv = float(table.to_numpy(g._data))
                    coef = -gv / m if self.reduction == "mean" else -gv
                else:
                    gm = table.view(g._data, (1,))
                    coef = table.div(gm, -float(m)) if self.reduction == "mean" else table.neg(gm)
                out = table.full((m, c), 0, g.dtype.np)
                table.setitem_(out, (table.arange(0, m, 1, _i64.np), self.target._data), coef)
                return (_make(out, g.dtype, table),)
            self.wt = _make(g._be.full((m,), 1, g.dtype.np), g.dtype, g._be)
            self.total = _make(g._be.full((), m, g.dtype.np), g.dtype, g._be)
        if not (_gs.enabled and g._rg) and g.dtype is self.wt.dtype:
            # plain backward: -w[t] g / total scattered into zeros at (i, target_i), all at kernel level
            table, gd, wt = g._be, g._data, self.wt._data
            if table.has("nll_loss_backward"):  # the backend's one kernel
                gv = table.view(gd, (m,)) if self.reduction == "none" else gd
                return (_make(table.nll_loss_backward(gv, wt, None if self.total is None else self.total._data,
                                                      self.target._data, tgt._data, self.ignore, c, self.reduction),
                              g.dtype, table),)
            if self.reduction == "none":
                coef = table.mul(table.view(gd, (m,)), wt)
            else:  # PyTorch's order: -w[t] * (g / total)
                gm = table.view(gd if self.reduction == "sum" else table.div(gd, self.total._data), (1,))
                coef = table.mul(wt, gm if table.native_broadcast else table.expand(gm, (m,)))
            # an ignored sample gets 0, as PyTorch never writes it (0 / 0 would be NaN when every target is
            # ignored); one of class weight 0 gets -0 * (g / total), as PyTorch's
            coef = table.where(table.ne(tgt._data, self.ignore), table.neg(coef), 0.0)
            out = table.full((m, c), 0, g.dtype.np)
            table.setitem_(out, (table.arange(0, m, 1, _i64.np), self.target._data), coef)
            return (_make(out, g.dtype, table),)
        if self.reduction == "none":
            coef = _P.mul(g.reshape(m), self.wt)
        else:
            gs = g if self.reduction == "sum" else _P.div(g, self.total)
            coef = _P.mul(_S.expand(gs.reshape(1), (m,)), self.wt)
        coef = _P.where(_P.ne(tgt, self.ignore), _P.neg(coef), 0.0)
        classes = _C.arange(c, device=g.device)
        hit = _P.eq(_S.unsqueeze(self.target, 1), classes)
        return (_P.where(hit, _S.unsqueeze(coef, 1), 0.0),)


def _nll_2d(x: Tensor, t: Tensor, weight, ignore_index, reduction) -> Tensor:
    """nll over x (M, C) and class indices t (M,); returns per-sample losses (M,) or the reduced loss."""
    table = x._be
    m, c = x._data.shape
    tt = t._data if t._data.dtype == _i64.np else table.cast(t._data, _i64.np)
    if m and table.has("nll_loss"):  # the backend's fused kernel (its range check need not sync the device)
        losses, wt, st = table.nll_loss(x._data, tt, None if weight is None else weight._data, int(ignore_index))
        return _nll_reduce(x, table, losses, wt, st, reduction, m, c)
    if m and weight is None and reduction != "none" and not 0 <= ignore_index < c and table.host_memory:
        # the common case, decided by one reduction read back (free where the arrays are host memory):
        # every target a valid class, none ignored -> loss = -sum(x[i, t_i]) / m, no masks or weights
        if host_all_below(table, tt, c):
            s = table.sum(table.index(x._data, (table.arange(0, m, 1, _i64.np), tt)), None, False)
            out = table.div(s, -float(m)) if reduction == "mean" else table.neg(s)
            return _nll_out(x, table, out, tt, None, None, reduction, m, c)
    valid = table.ne(tt, ignore_index)
    if m:
        bad = table.logical_and(valid, table.logical_or(table.lt(tt, 0), table.ge(tt, c)))
        if bool(table.to_numpy(table.any(bad, None, False))):
            bad_vals = table.to_numpy(tt)[table.to_numpy(bad)]
            raise IndexError(f"Target {int(bad_vals[0])} is out of bounds.")
    st = table.where(valid, tt, 0)
    picked = table.index(x._data, (table.arange(0, m, 1, _i64.np), st))  # x[i, t_i]
    validf = table.cast(valid, x.dtype.np)
    if weight is not None:
        wt = table.mul(table.index_select(weight._data, 0, st), validf)
    else:
        wt = validf
    losses = table.neg(table.mul(picked, wt))
    return _nll_reduce(x, table, losses, wt, st, reduction, m, c)


def _nll_reduce(x: Tensor, table, losses, wt, st, reduction: str, m: int, c: int) -> Tensor:
    """Reduce per-sample losses (weights ``wt``, safe class indices ``st``) and record the node."""
    total = None
    if reduction == "none":
        out = losses
    elif reduction == "sum":
        out = table.sum(losses, None, False)
    else:
        total = table.sum(wt, None, False)
        out = table.div(table.sum(losses, None, False), total)
    return _nll_out(x, table, out, st, wt, total, reduction, m, c)


def _nll_out(x: Tensor, table, out, st, wt, total, reduction: str, m: int, c: int) -> Tensor:
    """The loss tensor, with its NllLossBackward0 node when x needs a graph (``wt`` None: every weight 1)."""
    if not _needs_graph(x):
        return _make(out, x.dtype, table)
    node = NllLossBackward0()
    node.target, node.dt = _make(st, _i64, table), x.dtype
    node.wt = None if wt is None else _make(wt, x.dtype, table)
    node.total = None if total is None else _make(total, x.dtype, table)
    node.reduction, node.shape = reduction, (m, c)
    return _record(node, out, x.dtype, table, x)


def _class_last(input: Tensor):
    """(N, C, d1, ...) -> (N*d1*..., C); (C,) -> (1, C)."""
    nd = len(input._data.shape)
    if nd == 1:
        return _S.unsqueeze(input, 0)
    if nd == 2:
        return input
    c = input.shape[1]
    return _S.movedim(input, 1, -1).reshape(-1, c)


def _check_nll_shapes(input, target):
    if target._be is not input._be:
        raise device_mismatch("nll_loss", input, target)
    xs, ts = input._data.shape, target._data.shape
    if not xs:
        raise ValueError(f"Expected 1 or more dimensions (got {len(xs)})")
    if len(xs) == 1:  # an unbatched input: a 0-d target, or (as PyTorch) a 1-d target of one element
        if len(ts) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if ts and ts[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {ts[0]}")
    else:
        if not ts or xs[0] != ts[0]:
            raise ValueError(f"Expected input batch_size ({xs[0]}) to match target batch_size "
                             f"({ts[0] if ts else 0}).")
        if len(xs) == 2 and len(ts) > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if ts[1:] != xs[2:]:
            raise RuntimeError(f"Expected target size {[xs[0]] + list(xs[2:])}, got {list(ts)}")
    dt = target.dtype
    if dt is not _dt.int64 and dt is not _dt.uint8:  # (PyTorch's kernels: the shapes first, then the dtype)
        hint = " (class-index targets must be int64: use target.long())" if dt.is_floating_point else ""
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {dt._tname[:-6]}{hint}")
    if dt is _dt.uint8 and len(xs) > 2:  # (the spatial kernel takes int64 only)
        raise RuntimeError("expected scalar type Long but found Byte")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean") -> Tensor:
    """The functional form of :class:`coretorch.nn.NLLLoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        weight (Tensor, optional): a weight per class ``(C,)``.
        ignore_index (int): a target value that contributes nothing (default -100).
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target, weight = _ac_cast("nll_loss", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_tensor("nll_loss", "input", input)
    if not input.dtype.is_floating_point:  # (PyTorch's kernels are float-only: an int input gave an int "loss")
        k = "nll_loss_out_frame" if input.ndim <= 2 else "nll_loss2d_forward_out_frame"
        raise NotImplementedError(f"\"{k}\" not implemented for '{input.dtype._tname[:-6]}'")
    return _nll(input, target, weight, ignore_index, reduction)


def _nll(input, target, weight, ignore_index, reduction: str):
    """nll_loss once its arguments are read (cross_entropy comes here directly)."""
    _check_nll_shapes(input, target)
    xs = input._data.shape
    c = xs[1] if len(xs) > 1 else xs[0]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    if weight is not None and weight.dtype is not input.dtype:  # PyTorch's kernel takes one scalar type
        raise RuntimeError(f"expected scalar type {input.dtype._tname[:-6]} but found {weight.dtype._tname[:-6]}")
    x = _class_last(input)
    t = target if len(target._data.shape) == 1 else target.reshape(-1)
    out = _nll_2d(x, t, weight, ignore_index, reduction)
    if out.grad_fn is not None:  # the target and weight saved as PyTorch's: one changed in place raises in backward
        out.grad_fn.save(t, weight)  # (the node may hold the target's own buffer: its gradient went by the change)
        out.grad_fn.ignore = int(ignore_index)
    if reduction == "none":
        out = out.reshape(tuple(target._data.shape) if len(xs) > 1 else ())
    return out


def _class_shape(ndim: int, class_dim: int, c: int) -> list:
    """A per-class weight's shape broadcast against an input of ``ndim`` dims with classes on ``class_dim``."""
    shape = [1] * ndim
    shape[class_dim] = c
    return shape


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0) -> Tensor:
    """The cross-entropy between logits ``input`` and class indices (or probabilities) ``target``
    (``nll_loss(log_softmax(input, 1), target)``; see :class:`coretorch.nn.CrossEntropyLoss`).

    Args:
        input (Tensor): logits ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``.
        target (Tensor): int64 class indices ``(N,)`` / ``()`` / ``(N, d1, ...)``, or probabilities of the input's
            shape.
        weight (Tensor, optional): a weight per class ``(C,)``.
        ignore_index (int): a target value that contributes nothing (default -100).
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
        label_smoothing (float): mix the target with the uniform distribution (default 0).

    Example:
        >>> loss = F.cross_entropy(torch.randn(4, 10, requires_grad=True), torch.tensor([1, 0, 9, 3]))
        >>> loss.backward()
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target, weight = _ac_cast("cross_entropy", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_tensor("cross_entropy", "input", input)
    if label_smoothing > 1.0:  # (PyTorch checks the bound of a positive smoothing only; a negative one is none)
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if label_smoothing < 0.0:
        label_smoothing = 0.0
    xs = input._data.shape
    class_dim = 0 if len(xs) == 1 else 1
    c = xs[class_dim]
    if not input.dtype.is_floating_point and input.numel() == 0 and not target.dtype.is_floating_point:
        # (PyTorch: log_softmax passes an empty integer input through, nll_loss has no integer kernel)
        raise NotImplementedError(f"\"nll_loss_out_frame\" not implemented for '{input.dtype._tname[:-6]}'")
    logp = _softmax_impl("log_softmax", input, class_dim, None, True)
    if target.dtype.is_floating_point and tuple(target.shape) == tuple(input.shape):  # class probabilities
        # (PyTorch's test: another shape is class indices, whose checks raise for a float target)
        if ignore_index >= 0:  # (ATen's test: a non-negative ignore_index with probability targets)
            raise RuntimeError("ignore_index is not supported for floating point target")
        if label_smoothing > 0:
            target = _P.add(_P.mul(target, 1 - label_smoothing), label_smoothing / c)
        prod = _P.mul(logp, target)
        if weight is not None:
            prod = _P.mul(prod, weight.reshape(_class_shape(len(xs), class_dim, c)))
        if reduction == "none":
            return _P.neg(_R.sum(prod, class_dim))
        total = _P.neg(_R.sum(prod))
        if reduction == "sum":
            return total
        return _P.div(total, input.numel() / c) if input.numel() else _P.mul(total, float("nan"))
    nll = _nll(logp, target, weight, ignore_index, reduction)
    if label_smoothing <= 0:
        return nll
    _check_nll_shapes(input, target)
    wl = _P.mul(logp, weight.reshape(_class_shape(len(xs), class_dim, c))) if weight is not None else logp
    smooth = _R.sum(wl, class_dim)
    ignore = _P.eq(target, ignore_index)
    smooth = _P.neg(_P.where(ignore, 0.0, smooth))
    if reduction == "mean":
        if weight is not None:
            # (PyTorch's form for subclasses: class 0 read for ignored targets and masked out, no data-dependent
            # shape, so a compiled step replays it)
            picked = _I.index_select(weight, 0, _P.where(ignore, 0, target).reshape(-1))
            ret = _P.div(_R.sum(smooth), _R.sum(_P.where(ignore.reshape(-1), 0.0, picked)))
        else:
            ret = _P.div(_R.sum(smooth), _R.sum(_P.logical_not(ignore)))
    elif reduction == "sum":
        ret = _R.sum(smooth)
    else:
        ret = smooth
    return _P.add(_P.mul(nll, 1 - label_smoothing), _P.mul(ret, label_smoothing / c))


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """The functional form of :class:`coretorch.nn.MarginRankingLoss` (``input1``, ``input2``, ``target`` of 1/-1)."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input1, input2, target = _ac_cast("margin_ranking_loss", input1, input2, target)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():  # PyTorch's check: no broadcast of dims
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(_P.clamp(_P.add(_P.mul(_P.neg(target), _P.sub(input1, input2)), margin), min=0.0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """The functional form of :class:`coretorch.nn.HingeEmbeddingLoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        margin (float): default 1.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, target = _ac_cast("hinge_embedding_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.dtype.is_floating_point or input.dtype.is_complex:
        neg = _P.clamp(_P.rsub(input, margin), min=0)
    else:  # PyTorch's margin - input fills a tensor like the input: an integer input keeps its dtype, the margin
        neg = _P.clamp(_P.sub(_C.full_like(input, margin), input), min=0)  # truncated (integer zeros below too)
    # PyTorch's formula: the margin term where target != 1, the input where target != -1 (a target outside +-1,
    # e.g. 0 from {0, 1} labels, takes both)
    loss = _P.add(_P.where(_P.ne(target, -1), input, 0), _P.where(_P.ne(target, 1), neg, 0))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """The functional form of :class:`coretorch.nn.CosineEmbeddingLoss` (``input1``, ``input2``, ``target`` of 1/-1)."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input1, input2, target = _ac_cast("cosine_embedding_loss", input1, input2, target)
    td = target.dim()
    if td > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input1.dim() != td + 1 or input2.dim() != td + 1:  # PyTorch: a 0-d target goes with 1-d inputs, 1-d with 2-d
        raise RuntimeError(f"{td}D target tensor expects {td + 1}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    # PyTorch's formula: its EPSILON (1e-12 as a C float) added to each squared magnitude (a zero vector's
    # gradient is finite: x / 1e-6), a target other than 1 / -1 contributes 0
    d, eps = td, _EPS_F
    prod = _R.sum(_P.mul(input1, input2), d)
    mag = _P.mul(_P.add(_R.sum(_P.mul(input1, input1), d), eps), _P.add(_R.sum(_P.mul(input2, input2), d), eps))
    cos = _P.div(prod, _P.sqrt(mag))
    loss = _P.add(_P.where(_P.eq(target, 1), _P.rsub(cos, 1.0), 0.0),
                  _P.where(_P.eq(target, -1), _P.clamp(_P.sub(cos, margin), min=0.0), 0.0))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The functional form of :class:`coretorch.nn.GaussianNLLLoss` (see it for the formula and shapes).

    Args:
        input (Tensor): the prediction.
        target (Tensor): the target.
        var (Tensor): the variances.
        full (bool): include the constant term.
        eps (float): the variance clamp.
        reduction (str): ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _P.mul(_C.ones_like(input), float(var))
    elif bool(_R.any(_P.lt(var, 0))):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):  # homoscedastic: one variance per row
            var = _S.unsqueeze(var, -1)
        elif not (input.ndim == var.ndim
                  and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # PyTorch clamps a clone in place under no_grad: the gradient passes the clamp unchanged
    v = var.clone()
    with _no_grad():
        v.clamp_(min=eps)
    d = _P.sub(input, target)
    loss = _P.mul(_P.add(_P.log(v), _P.div(_P.mul(d, d), v)), 0.5)
    if full:
        loss = _P.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)
