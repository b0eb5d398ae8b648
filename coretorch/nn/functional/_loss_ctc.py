"""nn.functional.ctc_loss: Connectionist Temporal Classification (Graves et al. 2006).

The forward (alpha) recursion runs in log space over the extended label sequence (blank, l1, blank, l2, ...,
blank), vectorised over the batch and the extended label axis; only time is a Python loop.  It is a composition
of differentiable tensor ops (gather, logsumexp, where), so autograd's reverse pass through the recursion is the
backward (beta) recursion and the gradient w.r.t. ``log_probs`` (and double backward) comes for free; a zero-valued
term adds PyTorch's ``exp(log_probs)`` to it (its kernel's gradient is that of log_softmax's logits).  Impossible
alignments use a large finite negative instead of -inf so that no 0 * inf reaches the gradient; their loss is
set to inf afterwards (or 0 with ``zero_infinity``), as PyTorch reports them.
"""
from __future__ import annotations

from ... import dtypes as _dt
from ...ops import creation as _C
from ...ops import indexing as _I
from ...ops import pointwise as _P
from ...ops import reduction as _R
from ...ops import shape as _S
from ...tensor import Tensor
from ._common import _check_tensor, _i64
from ._loss import mean_alias

__all__ = ["ctc_loss"]

_NEG = -1e30  # log(0) stand-in: exp(_NEG - finite) is 0 and logsumexp stays finite, so gradients stay finite


_OK = object()


def _lengths(v, name: str) -> list:
    if isinstance(v, Tensor):
        if v.dtype.is_floating_point or v.dtype is _dt.bool_:  # (PyTorch's check: float lengths were truncated)
            raise RuntimeError(f"{name} must be integral")
        return [int(x) for x in v.reshape(-1).tolist()]
    if isinstance(v, (list, tuple)):
        bad = next((x for x in v if isinstance(x, bool) or not hasattr(type(x), "__index__")), _OK)
        if bad is not _OK:  # (numpy and 0-d tensor integers pass, as PyTorch's int lists take them)
            raise TypeError(f"ctc_loss(): argument '{name}' must be tuple of ints, but found element of type "
                            f"{type(bad).__name__}")
        return [int(x) for x in v]
    raise TypeError(f"ctc_loss(): argument '{name}' must be tuple of ints or Tensor, not {type(v).__name__}")


def _padded_targets(targets: Tensor, tl: list, n: int, s: int, device) -> Tensor:
    """(N, S) label matrix from padded (N, S') or concatenated (sum(target_lengths),) targets."""
    if targets.ndim == 1:  # concatenated: sample b's labels start at the sum of the earlier lengths
        if targets.shape[0] < sum(tl):
            raise RuntimeError(f"Expected tensor to have size {sum(tl)} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets' (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        starts, acc = [], 0
        for k in tl:
            starts.append([min(acc + j, max(targets.shape[0] - 1, 0)) for j in range(s)])
            acc += k
        if s == 0 or targets.shape[0] == 0:
            return _C.zeros(n, s, dtype=_i64, device=device)
        idx = _C.tensor(starts, dtype=_i64, device=device)
        return _I.index_select(targets, 0, idx.reshape(-1)).reshape(n, s)
    if targets.ndim != 2 or targets.shape[0] != n:
        raise RuntimeError(f"ctc_loss(): expected targets of shape (N, S) with N={n} or a 1-D concatenation, got "
                           f"{list(targets.shape)}")
    if targets.shape[1] < s:
        raise RuntimeError(f"Expected tensor to have size at least {s} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for "
                           "ctc_loss_allocate_outputs)")
    return targets[:, :s]


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """CTC loss of ``log_probs`` (T, N, C) (or unbatched (T, C)) against ``targets``; PyTorch's ``mean`` divides
    each loss by its target length (at least 1) and then averages over the batch."""
    _check_tensor("ctc_loss", "log_probs", log_probs)
    _check_tensor("ctc_loss", "targets", targets)
    reduction = mean_alias(reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = _S.unsqueeze(log_probs, 1)
        if targets.ndim == 1:
            targets = _S.unsqueeze(targets, 0)
    if isinstance(input_lengths, int) or isinstance(target_lengths, int):
        raise TypeError("ctc_loss(): argument 'input_lengths' and 'target_lengths' must be tuples of ints or "
                        "Tensors, not int")
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss(): expected log_probs of 2 or 3 dimensions, got {log_probs.ndim}")
    if log_probs.dtype not in (_dt.float32, _dt.float64):  # PyTorch's kernel: float and double only
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{log_probs.dtype._tname[:-6]}'")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    t_max, n, c = log_probs.shape
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    if len(il) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tl) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    for v in il:
        if v > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {v} (while "
                               "checking arguments for ctc_loss_allocate_outputs)")
        if v < 0:
            raise RuntimeError("ctc_loss(): input_lengths must be non-negative")
    if any(v < 0 for v in tl):
        raise RuntimeError("ctc_loss(): target_lengths must be non-negative")
    dev = log_probs.device
    if targets.device != dev:  # PyTorch accepts cpu targets with device log_probs (cuDNN's layout)
        targets = targets.to(dev)
    s = max(tl) if tl else 0
    lab = _padded_targets(targets, tl, n, s, dev).to(_i64)
    # extended labels (N, 2S+1): blank, l1, blank, l2, ..., blank; labels past a sample's length read the blank
    tl_t = _C.tensor(tl, dtype=_i64, device=dev).reshape(n, 1)
    live = _P.lt(_C.arange(s, dtype=_i64, device=dev).reshape(1, s), tl_t)
    lab = _P.where(live, lab, blank)
    blanks = _C.full((n, s + 1), blank, dtype=_i64, device=dev)
    ext = _S.cat([_S.stack([blanks[:, :s], lab], 2).reshape(n, 2 * s), blanks[:, s:]], 1)
    width = 2 * s + 1
    # a label may be skipped into from two back when it is not a blank and differs from the label two back
    if s > 0:
        skip = _P.logical_and(_P.ne(ext[:, 2:], blank), _P.ne(ext[:, 2:], ext[:, :-2]))
    neg = _C.full((n, 2), _NEG, dtype=log_probs.dtype, device=dev)
    # emissions along the extended labels: (T, N, 2S+1)
    emit = _I.gather(log_probs, 2, _S.expand(_S.unsqueeze(ext, 0), (t_max, n, width)))
    init = _C.full((1, width), _NEG, dtype=log_probs.dtype, device=dev)
    init_mask = _P.lt(_C.arange(width, dtype=_i64, device=dev).reshape(1, width), 2)
    alpha = _P.where(init_mask, emit[0], init) if t_max > 0 else _S.expand(init, (n, width))
    il_t = _C.tensor(il, dtype=_i64, device=dev).reshape(n, 1)
    for t in range(1, max(il) if il else 0):
        cands = [alpha, _S.cat([neg[:, :1], alpha[:, :-1]], 1)]
        if s > 0:
            cands.append(_S.cat([neg, _P.where(skip, alpha[:, :-2], _NEG)], 1))
        new = _P.add(_R.logsumexp(_S.stack(cands, 0), 0), emit[t])
        alpha = _P.where(_P.gt(il_t, t), new, alpha)  # a finished sequence keeps its last alpha
    # log-likelihood: the last label or the final blank, at each sample's own last step
    last = _C.tensor([[2 * k, max(2 * k - 1, 0)] for k in tl], dtype=_i64, device=dev)
    ends = _I.gather(alpha, 1, last)
    one_label = _C.tensor([[True, k > 0] for k in tl], device=dev)
    ll = _R.logsumexp(_P.where(one_label, ends, _NEG), 1)
    if 0 in il:  # an empty input emits only the empty target
        ll = _P.where(_C.tensor([v == 0 and k > 0 for v, k in zip(il, tl)], device=dev), _NEG, ll)
        ll = _P.where(_C.tensor([v == 0 and k == 0 for v, k in zip(il, tl)], device=dev), 0.0, ll)
    feasible = _P.gt(ll, _NEG / 2)
    nll = _P.neg(ll)
    if log_probs.requires_grad:
        # PyTorch's ctc backward gives (exp(log_probs) - posterior) * grad for t < input_length: the gradient of
        # the logits of a log_softmax (the same through one), not of free log_probs.  Its exp term added here
        # with a zero value: sum(exp(lp)) - the same, detached.
        on = _P.lt(_C.arange(t_max, dtype=_i64, device=dev).reshape(t_max, 1), il_t.reshape(1, n))
        e = _R.sum(_P.where(_S.unsqueeze(on, 2), _P.exp(log_probs), 0.0), (0, 2))
        nll = _P.add(nll, _P.sub(e, e.detach()))
    if zero_infinity or not log_probs.requires_grad:
        loss = _P.where(feasible, nll, 0.0 if zero_infinity else float("inf"))
    else:
        # PyTorch's gradient of an infinite loss is NaN at its steps t < input_length: an inf whose gradient is
        # inf * 0 there, (1 + 0 * z) * inf with z the sum of the sample's (finite) log_probs (``on``: see above)
        live_lp = _P.where(_P.logical_and(_S.unsqueeze(on, 2), log_probs.detach().isfinite()), log_probs, 0.0)
        scale = _P.where(feasible, 1.0, float("inf"))  # (a feasible sample's zero gradient times 1, not inf)
        inf = _P.mul(_P.add(_P.mul(_R.sum(live_lp, (0, 2)), 0.0), 1.0), scale)
        loss = _P.where(feasible, nll, inf)
    if unbatched:
        loss = loss.reshape(())
        tl_t = tl_t.reshape(())
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _R.sum(loss)
    return _R.mean(_P.div(loss, _P.clamp(tl_t.reshape(loss.shape), 1, None).to(loss.dtype)))
