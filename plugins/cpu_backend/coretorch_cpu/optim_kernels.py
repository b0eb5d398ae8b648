"""The optimizers' optional fused kernels on 'cpu' (see coretorch.plugins.KERNELS): ``adam_step_``.

One Adam/AdamW update of a parameter and its state with numpy ufuncs writing into the state and one scratch array:
the same float operations in the same order as coretorch-extra-ops' composite (``exp_avg.lerp_(grad, 1 - beta1)``,
``exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)``, ...; lerp's and the weight decay's fused add
through the composite's own ``axpy``), so the results are bitwise equal, without the tensor-op dispatch and
temporaries of about thirteen tensor ops per parameter.
"""
from __future__ import annotations

import math

import numpy as np

from .blas1 import axpy

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def adam_step_(p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay, decoupled,
               maximize) -> bool:
    """In place; False (nothing written) for a dtype other than float32/float64 or mixed dtypes."""
    dt = p.dtype
    if dt not in _FLOATS or grad.dtype != dt or exp_avg.dtype != dt or exp_avg_sq.dtype != dt \
            or not (p.flags.writeable and exp_avg.flags.writeable and exp_avg_sq.flags.writeable):
        return False
    with np.errstate(all="ignore"):  # IEEE results (inf, NaN) as the composite's quiet kernels
        d = np.empty(p.shape, dt)  # the scratch array (out= everywhere: a 0-d result stays an array)
        g = grad
        if maximize or (weight_decay != 0 and not decoupled):
            g = np.negative(grad, out=np.empty(p.shape, dt)) if maximize else grad.copy()
        if weight_decay != 0:
            if decoupled:
                np.multiply(p, 1 - lr * weight_decay, out=p)
            else:
                axpy(g, weight_decay, p)  # grad.add(p, alpha=weight_decay): one rounding, as the composite's
        # lerp(exp_avg, g, w) as coretorch (and PyTorch's vectorised kernel) computes it: one rounding after the
        # difference, from exp_avg for |w| < 0.5, else from g backwards (alpha w - 1)
        w = 1 - beta1
        np.subtract(g, exp_avg, out=d)
        if abs(w) < 0.5:
            axpy(exp_avg, w, d)
        else:
            np.copyto(exp_avg, g)
            axpy(exp_avg, w - 1, d)
        np.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
        np.multiply(g, 1 - beta2, out=d)  # addcmul_(g, g, value=1 - beta2): (value * g) * g, then the sum
        np.multiply(d, g, out=d)
        np.add(exp_avg_sq, d, out=exp_avg_sq)
        v = exp_avg_sq
        if max_exp_avg_sq is not None:
            np.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            v = max_exp_avg_sq
        np.sqrt(v, out=d)
        np.true_divide(d, math.sqrt(1 - beta2 ** step), out=d)
        np.add(d, eps, out=d)
        t = np.multiply(exp_avg, -(lr / (1 - beta1 ** step)), out=np.empty(p.shape, dt))  # addcdiv_'s order
        np.true_divide(t, d, out=t)
        np.add(p, t, out=p)
    return True


KERNELS = {"adam_step_": adam_step_}
