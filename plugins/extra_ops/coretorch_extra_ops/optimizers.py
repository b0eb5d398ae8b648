"""Optimizers of coretorch-extra-ops: PyTorch's update rules step for step (Lion: the published algorithm).

Each is a subclass of ``coretorch.optim.Optimizer`` that writes only ``__init__`` (checks, then ``defaults``)
and ``step``; param groups, ``state``, ``zero_grad``, ``state_dict`` and hooks come from the base class.
State keys and 0-d float32 ``step`` tensors are PyTorch's, so state dicts have PyTorch's layout.
``foreach``/``capturable`` are accepted for signature compatibility (ASGD's ``foreach=True`` follows PyTorch's
multi-tensor order of operations, which rounds otherwise).
Adam and AdamW update a whole param group with the backend's optional multi-tensor ``fused_adam_`` kernel where it
has one (coretorch-opencl: one launch, or a few; with the default ``foreach=None``, ``foreach=True`` and
``fused=True``); with ``foreach=False``, or on a backend without it, each parameter with the optional ``adam_step_``
(coretorch-opencl: one launch per parameter; coretorch-cpu: numpy ufuncs into the state, also for ``fused=True``,
as numpy cannot fuse); both give the composite's results bit for bit.  The tensor-op composite runs elsewhere
(other backends, float16, strided opencl tensors, tensor hyper-parameters).  A compiled step (``coretorch.compile``)
records these launches with ``lr`` & co. as inputs: its optimizer replay is the same single launch.
"""
from __future__ import annotations

import math

import coretorch
from coretorch.optim import Optimizer, check_fused
from coretorch.optim.optimizer import _dispatch_sqrt
from coretorch.plugins import KERNELS, get_backend, get_kernel, increment_version, to_array

from ._legacy_state import legacy_setstate

__all__ = ["Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Lion"]


def _check(lr=0.0, eps=0.0, betas=(0.0, 0.0), weight_decay=0.0, differentiable=False):
    """PyTorch's hyper-parameter checks and messages."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported by coretorch-extra-ops optimizers")


def _evaluate(closure):
    if closure is None:
        return None
    with coretorch.enable_grad():
        return closure()


def _params(optimizer, group) -> list:
    """(param, grad, state) for each param of ``group`` that has a gradient (negated with maximize).  PyTorch's
    RuntimeError for a sparse gradient where the class's ``_sparse_grad_error`` holds one (its ``_init_group``:
    checked for the whole group before any of it is updated)."""
    items = [p for p in group["params"] if p.grad is not None]
    msg = getattr(type(optimizer), "_sparse_grad_error", None)
    if msg is not None and any(p.grad.is_sparse for p in items):
        raise RuntimeError(msg)
    maximize = group.get("maximize")
    return [(p, -p.grad if maximize else p.grad, optimizer.state[p]) for p in items]


def _step(state) -> float:
    state["step"] += 1
    return state["step"].item()


_UNSEEN = object()
_OWN_KERNELS: dict = {}  # (name, device) -> True where the backend has its own optional kernel, else None


def _own_kernel(name: str, device):
    """The device's own optional kernel ``name`` (``adam_step_``, the multi-tensor ``fused_adam_``), or None: a core
    without it in the contract, or a backend without it (not CORETORCH_FALLBACK's CPU stand-in: it would update
    copies).  Whether it has one is cached per device; the kernel is the table's now (a cached kernel found during
    a ``coretorch.compile`` capture was the capture's recording wrapper, which kept its recorder, and with it the
    first compiled step's model and arrays, alive for good)."""
    k = _OWN_KERNELS.get((name, device), _UNSEEN)
    if k is _UNSEEN:
        backend = get_backend(device.type)
        k = _OWN_KERNELS[name, device] = True if name in KERNELS and backend is not None \
            and name in backend.kernels(device.index or 0) else None
    return get_kernel(name, device) if k else None


class Adam(Optimizer):
    """Adam (Kingma & Ba), with AMSGrad, L2 ``weight_decay`` (decoupled, as AdamW, with
    ``decoupled_weight_decay=True``) and ``maximize``."""

    __setstate__ = legacy_setstate(
        {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
         "decoupled_weight_decay": False, "fused": None})

    _replay_capturable = True  # coretorch.compile replays this step with lr & co. as inputs (_compile/optim.py)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        # PyTorch's checks of fused=True (on every device: coretorch's cpu runs its per-tensor kernel)
        check_fused(fused, foreach=foreach, differentiable=differentiable)
        for what, x in (("lr", lr), ("betas[0]", betas[0]), ("betas[1]", betas[1])):  # PyTorch's tensor checks
            if isinstance(x, coretorch.Tensor):
                if foreach and not capturable:
                    raise ValueError(f"{what} as a Tensor is not supported for capturable=False and foreach=True")
                if x.numel() != 1:
                    raise ValueError(f"Tensor {what} must be 1-element")
        _check(lr, eps, betas, weight_decay, differentiable)
        betas = tuple(betas)  # PyTorch's Adam: a tuple, whatever sequence was given (its state dicts hold one)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            amsgrad, maximize, decoupled = group["amsgrad"], group["maximize"], group["decoupled_weight_decay"]
            items = []
            check_fused(group.get("fused"), params=(p for p in group["params"] if p.grad is not None))
            if any(p.grad is not None and p.grad.is_sparse for p in group["params"]):
                raise RuntimeError("Adam does not support sparse gradients, please consider SparseAdam instead")
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    state["exp_avg"] = coretorch.zeros_like(p)
                    state["exp_avg_sq"] = coretorch.zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = coretorch.zeros_like(p)
                items.append((p, grad, state, _step(state)))
            if not items:
                continue
            # the backend's kernels where it has them (the composite's results bit for bit): every parameter in one
            # launch (foreach / fused), else one launch per parameter; Python numbers only (a compiled step's
            # recording passes its symbolic ones: they are floats)
            scalars = all(isinstance(x, (int, float)) for x in (lr, beta1, beta2, eps, wd))
            hp = (lr, beta1, beta2, eps, wd, decoupled, maximize)
            if scalars and group["foreach"] is not False and self._fused_step(items, amsgrad, hp):
                continue
            for p, grad, state, step in items:
                if scalars and isinstance(step, float) and _own_kernel("adam_step_", p.device) is not None \
                        and grad.device == p.device:
                    bufs = (p, state["exp_avg"], state["exp_avg_sq"]) + ((state["max_exp_avg_sq"],) if amsgrad else ())
                    # looked up at each call: a compiled step's recording sees the launch
                    if get_kernel("adam_step_", p.device)(
                            to_array(p), to_array(grad), to_array(bufs[1]), to_array(bufs[2]),
                            to_array(bufs[3]) if amsgrad else None, step, *hp):
                        increment_version(bufs)
                        continue
                self._composite(p, -grad if maximize else grad, state, step, lr, beta1, beta2, eps, wd, group)
        return loss

    @staticmethod
    def _fused_step(items, amsgrad, hp) -> bool:
        """All of ``items`` updated by the device's multi-tensor ``fused_adam_`` (False: nothing written)."""
        dev = items[0][0].device
        if _own_kernel("adam_step_", dev) is None or _own_kernel("fused_adam_", dev) is None:
            return False
        steps = []
        for p, grad, _, step in items:
            if p.device != dev or grad.device != dev or not isinstance(step, float):
                return False
            steps.append(step)
        keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
        lists = [[to_array(p) for p, _, _, _ in items], [to_array(g) for _, g, _, _ in items]] + \
            [[to_array(st[k]) for _, _, st, _ in items] for k in keys]
        if not get_kernel("fused_adam_", dev)(*lists[:4], lists[4] if amsgrad else None, steps, *hp):
            return False
        increment_version([p for p, _, _, _ in items] + [st[k] for _, _, st, _ in items for k in keys])
        return True

    @staticmethod
    def _composite(p, grad, state, step, lr, beta1, beta2, eps, wd, group):
        """One parameter's update from tensor ops (any device, dtype and layout)."""
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                grad = grad.add(p, alpha=wd)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = _dispatch_sqrt(1 - beta2 ** step)
        if group["amsgrad"]:
            state["max_exp_avg_sq"].copy_(coretorch.maximum(state["max_exp_avg_sq"], exp_avg_sq))
            exp_avg_sq = state["max_exp_avg_sq"]
        denom = exp_avg_sq.sqrt() / bias_correction2_sqrt + eps
        p.addcdiv_(exp_avg, denom, value=-(lr / bias_correction1))  # PyTorch's: -step_size, addcdiv's rounding


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): p <- p * (1 - lr * weight_decay) first."""

    # PyTorch: a loaded state is always decoupled (an older AdamW state dict had no such key)
    __setstate__ = legacy_setstate(
        {"amsgrad": False, "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
         "fused": None}, forced={"decoupled_weight_decay": True})

    _replay_capturable = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered (Graves) and with momentum."""

    _sparse_grad_error = "RMSprop does not support sparse gradients"
    __setstate__ = legacy_setstate(
        {"momentum": 0, "centered": False, "foreach": None, "maximize": False, "differentiable": False,
         "capturable": False})

    _replay_capturable = True  # coretorch.compile replays this step with lr & co. as inputs

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check(lr, eps, differentiable=differentiable)
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, alpha, eps, wd, momentum = (group[k] for k in ("lr", "alpha", "eps", "weight_decay", "momentum"))
            for p, grad, state in _params(self, group):
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    state["square_avg"] = coretorch.zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = coretorch.zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = coretorch.zeros_like(p)
                _step(state)
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg = state["square_avg"].mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if group["centered"]:
                    grad_avg = state["grad_avg"].lerp_(grad, 1 - alpha)
                    avg = (square_avg - grad_avg * grad_avg).sqrt() + eps
                else:
                    avg = square_avg.sqrt() + eps
                if momentum > 0:
                    buf = state["momentum_buffer"].mul_(momentum).add_(grad / avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(grad, avg, value=-lr)  # PyTorch's rounding: (-lr * grad) / avg
        return loss


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.) with learning-rate decay; state is created in ``__init__``, as in PyTorch."""

    __setstate__ = legacy_setstate(
        {"foreach": None, "maximize": False, "differentiable": False, "fused": None})

    _replay_capturable = True  # coretorch.compile replays this step with lr & co. as inputs

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        _check(eps=eps)
        check_fused(fused, foreach=foreach, differentiable=differentiable)  # PyTorch's checks of fused=True
        _check(differentiable=differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p) -> None:
        """PyTorch's: the constructor's ``initial_accumulator_value`` (a group's own is not read), also for a
        parameter of a group added later (created at its first step)."""
        self.state[p]["step"] = coretorch.tensor(0.0)
        self.state[p]["sum"] = coretorch.full_like(p, self.defaults["initial_accumulator_value"])

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            check_fused(group.get("fused"), params=(p for p in group["params"] if p.grad is not None))
            for p, grad, state in _params(self, group):
                if not state:  # a parameter of a group added by add_param_group
                    self._init_state(p)
                step = _step(state)
                if group["weight_decay"] != 0:
                    if grad.is_sparse:
                        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
                    grad = grad.add(p, alpha=group["weight_decay"])
                clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
                state["sum"].add_(grad * grad)
                p.addcdiv_(grad, state["sum"].sqrt().add_(group["eps"]), value=-clr)  # PyTorch's rounding
        return loss


class Adadelta(Optimizer):
    """Adadelta (Zeiler)."""

    _sparse_grad_error = "Adadelta does not support sparse gradients"
    __setstate__ = legacy_setstate(
        {"foreach": None, "maximize": False, "differentiable": False, "capturable": False})

    _replay_capturable = True  # coretorch.compile replays this step with lr & co. as inputs

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check(eps=eps, weight_decay=weight_decay, differentiable=differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, grad, state in _params(self, group):
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    state["square_avg"] = coretorch.zeros_like(p)
                    state["acc_delta"] = coretorch.zeros_like(p)
                _step(state)
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg = state["square_avg"].mul_(rho).add_(grad * grad, alpha=1 - rho)
                delta = (state["acc_delta"] + eps).sqrt() / (square_avg + eps).sqrt() * grad
                state["acc_delta"].mul_(rho).add_(delta * delta, alpha=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm (Kingma & Ba, section 7)."""

    _sparse_grad_error = "Adamax does not support sparse gradients"
    __setstate__ = legacy_setstate(
        {"foreach": None, "maximize": False, "differentiable": False, "capturable": False})

    _replay_capturable = True  # coretorch.compile replays this step with lr & co. as inputs

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check(lr, eps, betas, weight_decay, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p, grad, state in _params(self, group):
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    state["exp_avg"] = coretorch.zeros_like(p)
                    state["exp_inf"] = coretorch.zeros_like(p)
                step = _step(state)
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                state["exp_avg"].lerp_(grad, 1 - beta1)
                exp_inf = state["exp_inf"]
                exp_inf.copy_(coretorch.maximum(exp_inf.mul_(beta2), grad.abs() + eps))
                # PyTorch's rounding: clr = lr / bias_correction; p.addcdiv_(exp_avg, exp_inf, value=-clr)
                p.addcdiv_(state["exp_avg"], exp_inf, value=-(lr / (1 - beta1 ** step)))
        return loss


class NAdam(Optimizer):
    """NAdam (Dozat): Adam with Nesterov momentum and the momentum-decay schedule mu_t."""

    _sparse_grad_error = "NAdam does not support sparse gradients"
    __setstate__ = legacy_setstate(
        {"maximize": False, "foreach": None, "capturable": False, "differentiable": False,
         "decoupled_weight_decay": False}, ("step", "mu_product"))

    _replay_capturable = True  # coretorch.compile replays this step with lr & co. as inputs

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check(lr, eps, betas, weight_decay, differentiable)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p, grad, state in _params(self, group):
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    state["mu_product"] = coretorch.tensor(1.0)
                    state["exp_avg"] = coretorch.zeros_like(p)
                    state["exp_avg_sq"] = coretorch.zeros_like(p)
                step = _step(state)
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
                state["mu_product"] *= mu
                mu_product = state["mu_product"].item()
                state["exp_avg"].lerp_(grad, 1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (state["exp_avg_sq"] / bias_correction2).sqrt().add_(eps)
                # PyTorch's rounding: addcdiv_ scales the numerator, then divides
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.addcdiv_(state["exp_avg"], denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))
        return loss


class RAdam(Optimizer):
    """RAdam (Liu et al.): Adam with the variance rectification term; SGD with momentum while rho_t <= 5."""

    _sparse_grad_error = "RAdam does not support sparse gradients"
    __setstate__ = legacy_setstate(
        {"foreach": None, "maximize": False, "differentiable": False, "decoupled_weight_decay": False,
         "capturable": False})

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check(lr, eps, betas, weight_decay, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p, grad, state in _params(self, group):
                if not state:
                    state["step"] = coretorch.tensor(0.0)
                    state["exp_avg"] = coretorch.zeros_like(p)
                    state["exp_avg_sq"] = coretorch.zeros_like(p)
                step = _step(state)
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                state["exp_avg"].lerp_(grad, 1 - beta1)
                state["exp_avg_sq"].mul_(beta2).add_(grad * grad, alpha=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                bias_corrected_exp_avg = state["exp_avg"] / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive_lr = math.sqrt(bias_correction2) / (state["exp_avg_sq"].sqrt() + eps)
                    p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
                else:
                    p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
        return loss


class Lion(Optimizer):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Algorithm 2):

        c = beta1 * m + (1 - beta1) * g
        p = p - lr * (sign(c) + weight_decay * p)
        m = beta2 * m + (1 - beta2) * g
    """

    _replay_capturable = True  # coretorch.compile replays this step with lr & co. as inputs

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, *, maximize=False):
        _check(lr, 0.0, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay, maximize=maximize))

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
            for p, grad, state in _params(self, group):
                if not state:
                    state["exp_avg"] = coretorch.zeros_like(p)
                exp_avg = state["exp_avg"]
                p.mul_(1 - lr * wd)
                p.add_(exp_avg.lerp(grad, 1 - beta1).sign(), alpha=-lr)
                exp_avg.lerp_(grad, 1 - beta2)
        return loss
