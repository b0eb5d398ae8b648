"""signSGD with momentum ("Signum", Bernstein et al. 2018, Algorithm 1), as a coretorch optimizer.

    m = momentum * m + (1 - momentum) * g      (m = g when momentum == 0)
    p = p - lr * sign(m)
"""
import coretorch
from coretorch.optim import Optimizer

__all__ = ["SignSGD"]


class SignSGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with coretorch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["momentum_buffer"] = coretorch.zeros_like(p)
                buf = state["momentum_buffer"].lerp_(p.grad, 1 - group["momentum"])
                p.add_(buf.sign(), alpha=-group["lr"])
        return loss
