"""torch._standard_gamma (Marsaglia-Tsang sampling on any device) with its implicit reparameterisation gradient,
and torch._sample_dirichlet; the samplers behind Gamma, Chi2, Beta, Dirichlet and StudentT.

The gradient of a Gamma(alpha, 1) sample x with respect to alpha at fixed quantile, dx/dalpha = -dP/dalpha / p,
has the exact series form (x / alpha) * sum_n exp(L_n) (digamma(alpha + n + 1) - log x) with
L_n = n log x + lgamma(alpha + 1) - lgamma(alpha + n + 1) (from P's power series); it is summed in float64."""
from __future__ import annotations

import math

from .. import dtypes as _dt
from .._rnglock import LOCK as _RNG_LOCK
from ..autograd.graph import Node
from ..autograd.grad_mode import no_grad, state as _gs
from ..tensor import Tensor, _make
from ._util import data_read, edge

__all__ = ["_standard_gamma", "_standard_gamma_grad", "_sample_dirichlet"]

_MAX_ROUNDS = 200  # acceptance >= 95% per round: 200 rounds leave ~1e-260 of an element unaccepted


def _standard_gamma_grad(self: Tensor, output: Tensor) -> Tensor:
    """d output / d self for output ~ Gamma(self, 1) drawn by inversion (implicit reparameterisation)."""
    from . import creation as C, pointwise as P, reduction as R, special as S
    wide = _dt.float64 if self.dtype is not _dt.float64 else self.dtype
    a, x = self.to(wide), output.to(wide)
    logx = P.log(x)
    base = S.lgamma(P.add(a, 1.0))
    if x.numel() == 0:
        return C.zeros_like(output)
    from .._compile.capture import varying_read  # (imported on use: compile imports the ops)
    varying_read("the gradient of a Gamma, Beta or Dirichlet rsample() sums as many series terms as its draws need, "
                 "read on the host: another number at almost every call")
    n_terms = int(math.ceil(float(R.amax(P.clamp(P.sub(x, a), min=0.0))) + 10 * math.sqrt(float(R.amax(x)))
                            + 20))
    chunk = max(1, (1 << 22) // max(1, x.numel()))
    acc = C.zeros_like(a)
    lead = (-1,) + (1,) * a.ndim
    for start in range(0, n_terms, chunk):
        n = C.arange(start, min(n_terms, start + chunk), dtype=wide, device=a.device).reshape(lead)
        an1 = P.add(P.add(a, n), 1.0)
        log_t = P.sub(P.add(P.mul(n, logx), base), S.lgamma(an1))
        acc = P.add(acc, R.sum(P.mul(P.exp(log_t), P.sub(S.digamma(an1), logx)), 0))
    return P.mul(P.div(x, a), acc).to(output.dtype)


class StandardGammaBackward0(Node):
    __slots__ = ()

    def backward(self, g):
        alpha, out = self.saved()
        from .pointwise import mul
        return (mul(g, _standard_gamma_grad(alpha, out)),)


def _draw(alpha: Tensor, generator) -> Tensor:
    """Gamma(alpha, 1) draws: Marsaglia and Tsang's squeeze for alpha >= 1, alpha + 1 boosted by U^(1/alpha)
    below 1; each round redraws only where no proposal was accepted yet (one host read per round)."""
    from . import creation as C, pointwise as P, random as Rn, reduction as R
    a = alpha.detach()
    boost = P.lt(a, 1.0)
    a1 = P.where(boost, P.add(a, 1.0), a)
    d = P.sub(a1, 1.0 / 3.0)
    c = P.rsqrt(P.mul(d, 9.0))
    out = C.zeros_like(a)
    todo = C.ones_like(a, dtype=_dt.bool_)
    tiny = _dt.finfo(a.dtype).tiny
    # one whole draw, as PyTorch's single kernel holds its generator's mutex: another thread's draw from the same
    # generator between two rounds took numbers from the middle of this sample's stream
    with _RNG_LOCK:
        for _ in range(_MAX_ROUNDS):
            z = Rn.randn(tuple(a.shape), dtype=a.dtype, device=a.device, generator=generator)
            u = Rn.rand(tuple(a.shape), dtype=a.dtype, device=a.device, generator=generator)
            v = P.pow(P.add(P.mul(c, z), 1.0), 3)
            logv = P.log(P.clamp(v, min=tiny))
            bound = P.add(P.add(P.mul(P.mul(z, z), 0.5), d), P.sub(P.mul(d, logv), P.mul(d, v)))
            ok = P.logical_and(P.gt(v, 0.0), P.lt(P.log(u), bound))
            out = P.where(P.logical_and(ok, todo), P.mul(d, v), out)
            todo = P.logical_and(todo, P.logical_not(ok))
            # (a checked read of a replay: another number of rounds sets the generators back and runs the call eagerly;
            # after the step wrote state that could only raise, so then a graph break)
            data_read("a Gamma, Beta or Dirichlet draw takes as many rejection rounds as its random numbers need")
            if not bool(R.any(todo)):
                break
        u = Rn.rand(tuple(a.shape), dtype=a.dtype, device=a.device, generator=generator)
        out = P.where(boost, P.mul(out, P.pow(u, P.reciprocal(a))), out)
    return P.clamp(out, min=tiny)  # as PyTorch: a draw that underflows is the smallest normal number


def _standard_gamma(self: Tensor, generator=None) -> Tensor:
    """Samples of Gamma(self, 1), differentiable with respect to ``self`` (implicit reparameterisation)."""
    if not isinstance(self, Tensor):
        raise TypeError(f"_standard_gamma(): argument 'input' (position 1) must be Tensor, not {type(self).__name__}")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"gamma_cpu\" not implemented for '{self.dtype._tname[:-6]}'")
    with no_grad():
        out = _draw(self, generator)
    if self._rg and _gs.enabled:
        node = StandardGammaBackward0()
        node.save(self, out)
        node.next_functions = (edge(self),)
        return _make(out._data, out.dtype, out._be, node)
    return out


def _gamma_dtype(alpha: Tensor):
    """The dtype Dirichlet's Gamma draws are made in: float64 where the device has it (as PyTorch, which draws
    them in double: u^(1/alpha) of a small concentration underflows float32 and the normalised draw degenerates to
    1/K), else alpha's own."""
    if alpha.dtype is _dt.float64:
        return alpha.dtype
    from ._reduction_var import _has_f64
    return _dt.float64 if _has_f64(alpha._be) else alpha.dtype


def _normalise_gammas(g: Tensor, dtype) -> Tensor:
    """``g / g.sum(-1)`` in ``dtype``, clamped into [tiny, the largest value below 1] as PyTorch's
    _sample_dirichlet (so a Beta draw is never exactly 0 or 1); a gradient passes straight through the clamp.
    Computed as softmax(log g): the quotient's own backward squares the sum, which underflows for the tiny draws
    of a small concentration (0 * inf = NaN), while the log's is 1 / g (g >= tiny)."""
    from . import pointwise as P
    from ..nn.functional import softmax
    x = softmax(P.log(g), -1).to(dtype)
    fi = _dt.finfo(dtype)
    with no_grad():
        shift = P.sub(P.clamp(x, min=fi.tiny, max=1.0 - fi.eps / 2), x)
    return P.add(x, shift)


def _sample_dirichlet(self: Tensor, generator=None) -> Tensor:
    """Samples of Dirichlet(self) along the last dim (normalised Gamma draws, made in float64 where the device has
    it and clamped into [tiny, 1 - eps/2], as PyTorch; not differentiable, as PyTorch)."""
    with no_grad():
        return _normalise_gammas(_draw(self.to(_gamma_dtype(self)), generator), self.dtype)
