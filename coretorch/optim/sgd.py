"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize, as PyTorch's ``optim.SGD``."""
from __future__ import annotations

from .._backend import get_table
from ..autograd.grad_mode import enable_grad, state as _gs
from ..ops.creation import empty_like
from ..ops.foreach import _foreach_add_, _foreach_mul_
from ..tensor import Tensor
from ._checks import check_fused
from .optimizer import Optimizer, _use_grad_for_differentiable

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    r"""Stochastic gradient descent (optionally with momentum).

    For each parameter ``p`` with gradient ``g`` (``-g`` when ``maximize``)::

        g = g + weight_decay * p
        b = g                                   (first step)
        b = momentum * b + (1 - dampening) * g  (later steps)
        g = g + momentum * b   if nesterov else   b
        p = p - lr * g

    Where the device has a multi-tensor ``fused_sgd_`` kernel (opencl), a param group is updated in one launch
    (``foreach=None``/``True`` and ``fused=True``) with the foreach step's results bit for bit; ``fused=True`` on a
    device without one (cpu: numpy cannot fuse) runs the foreach step.
    """

    _replay_capturable = True  # coretorch.compile replays this step with lr & co. as inputs (_compile/optim.py)

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False, foreach=None,
                 differentiable: bool = False, fused=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        check_fused(fused, foreach=foreach, differentiable=differentiable)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` (optional) re-evaluates the model and returns
        the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            momentum = group["momentum"]
            params, grads, bufs = [], [], []
            state = self.state
            for p in group["params"]:
                g = p._grad
                if g is not None:
                    params.append(p)
                    grads.append(g)
                    if momentum != 0:
                        bufs.append(state[p].get("momentum_buffer"))
            check_fused(group["fused"], params=params)
            if not _gs.enabled and group["foreach"] is not False and _fused_sgd(
                    params, grads, bufs, weight_decay=group["weight_decay"], momentum=momentum, lr=group["lr"],
                    dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"]):
                pass  # the device's multi-tensor kernel: the whole group in one launch (or a few)
            elif momentum == 0 and group["weight_decay"] == 0 and not group["maximize"] and not _gs.enabled \
                    and group["foreach"] is not False:
                if params:  # (torch._foreach_* refuse an empty list, as PyTorch's)
                    _foreach_add_(params, grads, alpha=-group["lr"])  # plain SGD: what _multi_tensor_sgd comes to
                continue
            else:
                sgd(params, grads, bufs, foreach=group["foreach"], weight_decay=group["weight_decay"],
                    momentum=momentum, lr=group["lr"], dampening=group["dampening"], nesterov=group["nesterov"],
                    maximize=group["maximize"])
            if momentum != 0:
                for p, buf in zip(params, bufs):
                    state[p]["momentum_buffer"] = buf
        return loss


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad: bool = False, foreach=None, fused=None,
        grad_scale=None, found_inf=None, *, weight_decay: float, momentum: float, lr: float, dampening: float,
        nesterov: bool, maximize: bool) -> None:
    """The functional form of SGD (``torch.optim.sgd``); updates ``params`` in place and fills
    ``momentum_buffer_list`` with the (new) buffers.  ``foreach=None`` picks the multi-tensor form outside
    autograd (an ordinary step) and the per-tensor form inside it (``differentiable=True``)."""
    check_fused(fused, foreach=foreach, params=params)
    if foreach is None:
        foreach = not _gs.enabled
    if (foreach or fused) and not _gs.enabled and _fused_sgd(
            params, d_p_list, momentum_buffer_list, weight_decay=weight_decay, momentum=momentum, lr=lr,
            dampening=dampening, nesterov=nesterov, maximize=maximize):
        return
    fn = _multi_tensor_sgd if foreach else _single_tensor_sgd
    fn(params, d_p_list, momentum_buffer_list, weight_decay=weight_decay, momentum=momentum, lr=lr,
       dampening=dampening, nesterov=nesterov, maximize=maximize)


def _fused_sgd(params, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening, nesterov,
               maximize) -> bool:
    """The step through the device's multi-tensor ``fused_sgd_`` kernel (the foreach step's results bit for bit),
    filling ``momentum_buffer_list``; False, nothing written, where the device has none (cpu: numpy cannot fuse,
    the foreach step runs) or it does not take the tensors (dtype, layout, several devices, tensor
    hyper-parameters)."""
    if not params or not all(isinstance(x, (int, float)) for x in (lr, momentum, dampening, weight_decay)):
        return False
    dev = params[0].device
    table = get_table(dev)
    if not table.has("fused_sgd_") or any(p.device != dev or g.device != dev or g.is_sparse
                                          for p, g in zip(params, grads)):
        return False
    kernel = table.fused_sgd_  # looked up at each call: a compiled step's recording sees the launch
    hp = (lr, momentum, dampening, weight_decay, nesterov, maximize)
    P, G = [p._data for p in params], [g._data for g in grads]
    if momentum == 0:
        if not kernel(P, G, None, *hp, False):
            return False
        for p in params:
            p._vc[0] += 1
        return True
    first = momentum_buffer_list[0] is None
    if any((b is None) is not first for b in momentum_buffer_list):
        return False  # some buffers exist and some not (a parameter's first gradient): the foreach step
    # the first step's buffers are new tensors the kernel sets to the (decayed) gradient, as clone() in foreach
    bufs = [empty_like(p) for p in params] if first else momentum_buffer_list
    if not kernel(P, G, [b._data for b in bufs], *hp, first):
        return False
    momentum_buffer_list[:] = bufs
    for t in [*params, *bufs]:
        t._vc[0] += 1
    return True


def _single_tensor_sgd(params, d_p_list, momentum_buffer_list, *, weight_decay: float, momentum: float, lr: float,
                       dampening: float, nesterov: bool, maximize: bool) -> None:
    for i, param in enumerate(params):
        grad = d_p_list[i] if not maximize else -d_p_list[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = grad.clone().detach()
                momentum_buffer_list[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            if nesterov:
                grad = grad.add(buf, alpha=momentum)
            else:
                grad = buf
        param.add_(grad, alpha=-lr)


def _multi_tensor_sgd(params, grads, momentum_buffer_list, *, weight_decay: float, momentum: float, lr: float,
                      dampening: float, nesterov: bool, maximize: bool) -> None:
    """The same update as _single_tensor_sgd, one list op at a time (PyTorch's _multi_tensor_sgd)."""
    if not params:
        return
    if maximize:
        grads = [g.neg() for g in grads]
    if weight_decay != 0:
        grads = [g.add(p, alpha=weight_decay) for g, p in zip(grads, params)]
    if momentum != 0:
        old = [i for i, b in enumerate(momentum_buffer_list) if b is not None]
        if old:
            bufs = [momentum_buffer_list[i] for i in old]
            _foreach_mul_(bufs, momentum)
            _foreach_add_(bufs, [grads[i] for i in old], alpha=1 - dampening)
        for i, b in enumerate(momentum_buffer_list):
            if b is None:
                momentum_buffer_list[i] = grads[i].clone().detach()
        if nesterov:
            grads = [g.add(b, alpha=momentum) for g, b in zip(grads, momentum_buffer_list)]
        else:
            grads = momentum_buffer_list
    if params:
        _foreach_add_(params, grads, alpha=-lr)
