"""coretorch.optim.swa_utils: stochastic weight averaging and EMA of a model's weights (PyTorch's
torch.optim.swa_utils): ``AveragedModel``, ``SWALR``, ``update_bn`` and the averaging functions."""
from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any, Callable, Iterable

from .. import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from ..ops import creation as _C
from ._lr_base import LRScheduler, _format_param, _warn_get_lr_called_within_step
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """``f(ema_params, params, n)`` updating every EMA parameter in place: ``ema = decay * ema + (1 - decay) * p``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _) -> None:
        with no_grad():
            for p_ema, p in zip(ema_param_list, current_param_list):
                if p_ema.dtype.is_floating_point:
                    p_ema.lerp_(p, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """``f(averaged, params, n)`` updating every running mean in place: ``avg += (p - avg) / (n + 1)``."""
    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        n = int(num_averaged)
        with no_grad():
            for p_avg, p in zip(averaged_param_list, current_param_list):
                if p_avg.dtype.is_floating_point:
                    p_avg.lerp_(p, 1 / (n + 1))
                else:
                    p_avg.copy_(p_avg + (p - p_avg) / (n + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``f(ema, p, n) -> decay * ema + (1 - decay) * p`` (one parameter)."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """``f(avg, p, n) -> avg + (p - avg) / (n + 1)`` (one parameter)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers with ``use_buffers``) are the running average of the
    model's, updated by :meth:`update_parameters` (an equal-weight mean by default; ``avg_fn`` / ``multi_avg_fn``
    such as :func:`get_ema_multi_avg_fn` give other averages)."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _C.tensor(0, dtype=_dt.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average (the first call copies them)."""
        mine = itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers \
            else self.parameters()
        theirs = itertools.chain(model.parameters(), model.buffers()) if self.use_buffers else model.parameters()
        avg, cur = [], []
        from .._compile.capture import varying_read  # (imported on use: compile imports optim)
        varying_read("AveragedModel.update_parameters reads n_averaged on the host, which changes every call")
        first = int(self.n_averaged) == 0
        with no_grad():
            for p_avg, p in zip(mine, theirs):
                p_ = p.detach().to(p_avg.device)
                avg.append(p_avg.detach())
                cur.append(p_)
                if first:
                    p_avg.detach().copy_(p_)
            if not first:
                n = self.n_averaged
                if self.avg_fn is not None:
                    for a, c in zip(avg, cur):
                        a.copy_(self.avg_fn(a, c, n.to(a.device)))
                else:
                    (self.multi_avg_fn or get_swa_multi_avg_fn())(avg, cur, n)
            if not self.use_buffers:  # buffers follow the source model
                for b_swa, b in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b.detach().to(b_swa.device))
            self.n_averaged += 1


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader`` (a cumulative average:
    what averaged weights need before evaluation)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate to ``swa_lr`` over ``anneal_epochs`` epochs (``"cos"`` or ``"linear"``),
    then keeps it there."""

    def __init__(self, optimizer: Optimizer, swa_lr: float, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list:
        """The next learning rate of each group, between its ``lr`` and its ``swa_lr``."""
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev, strict=True)]

    def state_dict(self) -> dict:
        """Every attribute but the optimizer and the anneal function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
