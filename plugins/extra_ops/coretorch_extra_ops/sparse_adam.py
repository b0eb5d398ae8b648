"""SparseAdam: Adam for sparse gradients (``Embedding(sparse=True)``), updating only the rows a step touched.

coretorch's sparse tensors are dense-backed (``coretorch.sparse``): the gradient an ``Embedding(sparse=True)``
gives its weight is a dense tensor marked sparse, with the looked-up rows as its COO indices.  As in PyTorch, this
optimizer refuses dense gradients, and its moments and parameters change only at the gradient's (coalesced)
indices: rows that were not looked up keep their moments, unlike Adam's, which decay everywhere.
"""
from __future__ import annotations

import math

import coretorch
from coretorch.optim import Optimizer

from .optimizers import _evaluate

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """PyTorch's ``optim.SparseAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False)``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize: bool = False) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse = [i for g in self.param_groups for i, p in enumerate(g["params"]) if p.is_sparse]
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense parameter tensors")

    @coretorch.no_grad()
    def step(self, closure=None):
        loss = _evaluate(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if not grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = coretorch.zeros_like(p)
                    state["exp_avg_sq"] = coretorch.zeros_like(p)
                state["step"] += 1
                grad = grad.coalesce()
                idx, values = grad._indices(), grad._values()
                if group["maximize"]:
                    values = -values
                # the sparse dimensions read as one row index into (rows, *dense dims) views
                sparse_dim = idx.shape[0]
                rows = idx[0]
                for d in range(1, sparse_dim):
                    rows = rows * p.shape[d] + idx[d]
                dense_shape = tuple(p.shape[sparse_dim:])
                flat = (-1, *dense_shape)
                p_rows, m_rows, v_rows = p.view(flat), state["exp_avg"].view(flat), state["exp_avg_sq"].view(flat)
                old_m, old_v = m_rows.index_select(0, rows), v_rows.index_select(0, rows)
                m_update = (values - old_m) * (1 - beta1)
                v_update = (values * values - old_v) * (1 - beta2)
                m_rows.index_add_(0, rows, m_update)
                v_rows.index_add_(0, rows, v_update)
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                step_size = lr * math.sqrt(bias_correction2) / bias_correction1
                p_rows.index_add_(0, rows, (m_update + old_m) / ((v_update + old_v).sqrt() + eps), alpha=-step_size)
        return loss
