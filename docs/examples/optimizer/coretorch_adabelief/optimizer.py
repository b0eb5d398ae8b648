"""AdaBelief (Zhuang et al., 2020): Adam whose second moment tracks (grad - m)^2, the "belief" in the gradient.

A subclass of ``coretorch.optim.Optimizer`` writes ``__init__`` (check the hyper-parameters, pass ``defaults``)
and ``step``; param groups, ``state``, ``zero_grad``, ``state_dict``/``load_state_dict``, learning-rate
schedulers and hooks come from the base class.  The update uses in-place tensor ops, so it runs on every device.
"""
from __future__ import annotations


import coretorch
from coretorch.optim import Optimizer


class AdaBelief(Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-16,
                 weight_decay: float = 0.0):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with coretorch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if group["weight_decay"]:
                    p.mul_(1 - group["lr"] * group["weight_decay"])  # decoupled, as AdamW
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = coretorch.zeros_like(p)
                    state["exp_avg_var"] = coretorch.zeros_like(p)
                state["step"] += 1
                m, s = state["exp_avg"], state["exp_avg_var"]
                m.lerp_(grad, 1 - beta1)
                diff = grad - m
                s.mul_(beta2).addcmul_(diff, diff, value=1 - beta2).add_(group["eps"])
                bias1 = 1 - beta1 ** state["step"]
                bias2 = 1 - beta2 ** state["step"]
                denom = (s / bias2).sqrt_().add_(group["eps"])
                p.addcdiv_(m, denom, value=-group["lr"] / bias1)
        return loss


