"""torch.binomial(count, prob, generator=None): Binomial(count, prob) samples on any device, by PyTorch's two
exact samplers: inversion (summed geometric waiting times) where count * min(p, 1 - p) < 10, Hormann's BTRS
transformed rejection elsewhere (W. Hormann, "The generation of binomial random variates", 1993), drawn through
the generator's uniform numbers in rounds: each round redraws only the elements not done yet (one host read per
round), as the Gamma sampler (ops/_gamma.py)."""
from __future__ import annotations

import math

from .. import dtypes as _dt
from .._rnglock import LOCK as _RNG_LOCK
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from ._util import broadcast_shapes, data_read

__all__ = ["binomial"]

_MAX_ROUNDS = 10_000  # inversion: about count * p + 1 rounds (< 11 on average); BTRS accepts most proposals


def _stirling_tail(k: Tensor) -> Tensor:
    """log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2]: exact (lgamma) up to 9, the series beyond."""
    from . import special as S
    small = k.clamp(max=9.0)
    exact = S.lgamma(small + 1.0) - ((small + 0.5) * (small + 1.0).log() - (small + 1.0) + 0.5 * math.log(2 * math.pi))
    kp1 = k + 1.0
    kp1sq = kp1 * kp1
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / kp1
    return exact.where(k <= 9, series)


def _round_done(todo: Tensor) -> bool:
    data_read("a binomial draw takes as many rounds as its random numbers need")
    return not bool(todo.any())


def _inversion(n: Tensor, p: Tensor, generator) -> Tensor:
    """The number of geometric(p) waiting times whose sum stays within n (p <= 1/2, n * p < 10)."""
    from . import random as Rn
    logq = (-p).log1p()
    total, count = n * 0.0, n * 0.0
    todo = n > 0
    for _ in range(_MAX_ROUNDS):
        u = Rn.rand(tuple(n.shape), dtype=n.dtype, device=n.device, generator=generator)
        total = total + (u.log() / logq).ceil().where(todo, 0.0)
        todo = todo & (total <= n)
        count = count + todo.to(n.dtype)
        if _round_done(todo):
            break
    return count


def _btrs(n: Tensor, p: Tensor, generator) -> Tensor:
    """Hormann's BTRS for p <= 1/2 and n * p >= 10 (PyTorch's constants)."""
    from . import random as Rn
    sd = (n * p * (1.0 - p)).sqrt()
    b = sd * 2.53 + 1.15
    a = b * 0.0248 + p * 0.01 - 0.0873
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    r = p / (1.0 - p)
    alpha = (5.1 / b + 2.83) * sd
    m = ((n + 1.0) * p).floor()
    out = n * 0.0
    todo = n >= 0
    for _ in range(_MAX_ROUNDS):
        u = Rn.rand(tuple(n.shape), dtype=n.dtype, device=n.device, generator=generator) - 0.5
        v = Rn.rand(tuple(n.shape), dtype=n.dtype, device=n.device, generator=generator)
        us = 0.5 - u.abs()
        k = ((2.0 * a / us + b) * u + c).floor()
        inside = (k >= 0) & (k <= n)
        quick = inside & (us >= 0.07) & (v <= v_r)
        ks = k.clamp(min=0.0).minimum(n)
        logv = (v * alpha / (a / (us * us) + b)).log()
        bound = ((m + 0.5) * ((m + 1.0) / (r * (n - m + 1.0))).log()
                 + (n + 1.0) * ((n - m + 1.0) / (n - ks + 1.0)).log()
                 + (ks + 0.5) * (r * (n - ks + 1.0) / (ks + 1.0)).log()
                 + _stirling_tail(m) + _stirling_tail(n - m) - _stirling_tail(ks) - _stirling_tail(n - ks))
        ok = quick | (inside & (logv <= bound))
        out = k.where(ok & todo, out)
        todo = todo & ~ok
        if _round_done(todo):
            break
    return out


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Samples of Binomial(count, prob), ``count`` and ``prob`` float tensors of one dtype (broadcast).

    Args:
        count (Tensor): the numbers of trials (``<= 0``: 0).
        prob (Tensor): the success probabilities (``<= 0``: 0, ``>= 1``: count, NaN: NaN).
        generator (Generator, optional): the generator to draw from.
    """
    for t, name, pos in ((count, "count", 1), (prob, "prob", 2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"binomial(): argument '{name}' (position {pos}) must be Tensor, not {type(t).__name__}")
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {count.dtype._tname[:-6]}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {prob.dtype._tname[:-6]} but expected {count.dtype._tname[:-6]}")
    if count.dtype in (_dt.float16, _dt.bfloat16):
        raise NotImplementedError(f"\"binomial_cpu\" not implemented for '{count.dtype._tname[:-6]}'")
    if count.device != prob.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{count.device} and {prob.device}!")
    shape = broadcast_shapes(tuple(count.shape), tuple(prob.shape), op="binomial")
    with no_grad():
        from ._gamma import _gamma_dtype
        wide = _gamma_dtype(count)  # float64 where the device has it (log-ratios of large counts)
        n = count.detach().to(wide).expand(shape).contiguous()
        p = prob.detach().to(wide).expand(shape).contiguous()
        if n.numel() == 0:
            return n.to(count.dtype)
        flip = p > 0.5
        q = (1.0 - p).where(flip, p).clamp(min=0.0, max=0.5)
        live = (n > 0) & (q > 0)
        nl, ql = n.where(live, 0.0), q.where(live, 0.0)
        big = live & (nl * ql >= 10)
        with _RNG_LOCK:  # one whole draw, as PyTorch's single kernel holding its generator's mutex (see _gamma)
            k = _inversion(nl.where(~big, 0.0), ql.where(~big, 0.0), generator)
            if bool(big.any()):
                k = _btrs(nl.where(big, 10.0 / 0.5), ql.where(big, 0.5), generator).where(big, k)
        k = (n - k).where(flip, k)
        out = k.where(live, n.where(p >= 1.0, 0.0)).where(n > 0, 0.0)
        out = out.where(~p.isnan(), p)
        return out.to(count.dtype)
