"""More optimizers of coretorch-extra-ops with PyTorch's update rules step for step: Rprop, ASGD, Adafactor
(state keys and 0-d float32 ``step`` tensors as PyTorch's, so state dicts have PyTorch's layout)."""
from __future__ import annotations

import coretorch
from coretorch.optim import Optimizer

from ._legacy_state import legacy_setstate
from .optimizers import _evaluate, _params, _step

__all__ = ["Rprop", "ASGD", "Adafactor"]


class Rprop(Optimizer):
    """Resilient backpropagation: per-element step sizes grow by ``etas[1]`` while the gradient keeps its sign,
    shrink by ``etas[0]`` when it flips (that step is skipped); only the gradient's sign is used."""

    _sparse_grad_error = "Rprop does not support sparse gradients"
    __setstate__ = legacy_setstate({"foreach": None, "maximize": False, "differentiable": False, "capturable": False})

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            for p, grad, state in _params(self, group):
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    state["prev"] = coretorch.zeros_like(p)
                    state["step_size"] = coretorch.full_like(grad, group["lr"])
                _step(state)
                sign = (grad * state["prev"]).sign()
                flipped = sign < 0
                factor = coretorch.ones_like(grad).masked_fill_(sign > 0, etaplus).masked_fill_(flipped, etaminus)
                state["step_size"].mul_(factor).clamp_(lo, hi)
                grad = grad.masked_fill(flipped, 0.0)  # a sign flip skips this step
                p.addcmul_(grad.sign(), state["step_size"], value=-1)
                state["prev"].copy_(grad)
        return loss


class ASGD(Optimizer):
    """Averaged SGD: SGD with a decaying step ``lr / (1 + lambd lr t)^alpha`` and a running average ``ax`` of the
    parameters, started after ``t0`` steps."""

    _sparse_grad_error = "ASGD does not support sparse gradients"
    __setstate__ = legacy_setstate({"foreach": None, "maximize": False, "differentiable": False, "capturable": False},
                                   ("step", "eta", "mu"))

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            for p, grad, state in _params(self, group):
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    state["eta"] = coretorch.tensor(float(lr))
                    state["mu"] = coretorch.tensor(1.0)
                    state["ax"] = coretorch.zeros_like(p)
                step = _step(state)
                if group["foreach"]:
                    self._foreach_update(p, grad, state, step, lr, lambd, alpha, t0, group["weight_decay"])
                    continue
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                eta = state["eta"].item()
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                if state["mu"].item() != 1:
                    state["ax"].add_(p.sub(state["ax"]).mul_(state["mu"].item()))
                else:
                    state["ax"].copy_(p)
                # PyTorch's copy_(as_tensor(number)): the value rounded to the default dtype, also into a float64
                # eta/mu (load_state_dict casts them to a float64 parameter's dtype); a tensor lr keeps its dtype
                state["eta"].copy_(coretorch.as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
                state["mu"].copy_(coretorch.tensor(1 / max(1, step - t0)))
        return loss

    @staticmethod
    def _foreach_update(p, grad, state, step, lr, lambd, alpha, t0, wd) -> None:
        """PyTorch's ``_multi_tensor_asgd`` (``foreach=True``), whose order of operations differs from the
        per-tensor step: p -= eta * (g + wd p + lambd p); ax += (p - ax) * mu; the new eta from the 0-d ``step``
        tensor (arithmetic in its dtype: float32), mu from the number."""
        inter = grad.add(p, alpha=wd) if wd != 0 else grad
        inter = inter.add(p, alpha=lambd)
        p.addcmul_(inter, state["eta"], value=-1)
        state["ax"].addcmul_(p.sub(state["ax"]), state["mu"])
        state["eta"].copy_(lr / ((1 + lambd * lr * state["step"]) ** alpha))
        state["mu"].copy_(coretorch.tensor(1 / max(1, step - t0)))


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern) as torch.optim.Adafactor: factored second moments (row and column statistics)
    for matrices, a relative step size ``min(lr, 1/sqrt(t))`` scaled by the parameter's RMS, update clipping
    ``d``; no first moment."""

    _sparse_grad_error = "Adafactor does not support sparse gradients"
    __setstate__ = legacy_setstate({"foreach": None})

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, beta2_decay, d, wd = group["lr"], group["beta2_decay"], group["d"], group["weight_decay"]
            eps1, eps2 = group["eps"]
            for p, grad, state in _params(self, group):
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    if grad.dim() > 1:
                        row_shape, col_shape = list(grad.shape), list(grad.shape)
                        row_shape[-1] = 1
                        col_shape[-2] = 1
                        state["row_var"] = grad.new_zeros(row_shape)
                        state["col_var"] = grad.new_zeros(col_shape)
                    else:
                        state["variance"] = coretorch.zeros_like(grad)
                e1 = coretorch.finfo(p.dtype).eps if eps1 is None else eps1
                t = _step(state)
                one_minus_beta2_t = t ** beta2_decay
                rho_t = min(lr, 1 / (t ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if grad.dim() > 1:
                    row_mean = grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1))
                    state["row_var"].lerp_(row_mean, one_minus_beta2_t)
                    col_mean = grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2))
                    state["col_var"].lerp_(col_mean, one_minus_beta2_t)
                    var_estimate = state["row_var"] @ state["col_var"]
                    var_estimate.div_(state["row_var"].mean(dim=-2, keepdim=True).clamp_(min=e1))
                else:
                    state["variance"].lerp_(grad * grad, one_minus_beta2_t)
                    var_estimate = state["variance"].clone()
                update = var_estimate.clamp_(min=e1 * e1).rsqrt_()
                update.mul_(grad)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
