"""The floor for an eager framework written in Python: the nn MLP step of run.py on the least a define-by-run
autograd can do (a node per op holding a closure, a depth-first order, gradients summed into leaves) around the
very kernels coretorch's cpu backend calls, with none of coretorch's checks, dtypes, version counters, hooks
or PyTorch semantics.  Weights are PyTorch's ``(out, in)``, as in ``nn.Linear``.

Its time against the hand-written numpy step is what any Python framework with PyTorch's eager API pays here
before it does anything of its own; coretorch's nn step against it is what coretorch's own features cost.
"""
from __future__ import annotations

import numpy as np

_T2 = (1, 0)


class _Node:
    __slots__ = ("backward", "inputs")


class Var:
    __slots__ = ("data", "grad", "node", "requires_grad")

    def __init__(self, data, node=None, requires_grad=False):
        self.data, self.grad, self.node, self.requires_grad = data, None, node, requires_grad


def _var(data, backward, inputs) -> Var:
    n = _Node()
    n.backward, n.inputs = backward, inputs
    return Var(data, n, True)


class MinimalMLP:
    """784-256-128-10 ReLU MLP, cross-entropy, plain SGD; every kernel is the cpu backend's own."""

    def __init__(self, ps_np, lr: float):
        import coretorch as ct
        from coretorch import _backend
        self.k = _backend.get_table(ct.device("cpu"))
        self.params = []
        for w, b in zip(ps_np[::2], ps_np[1::2]):  # run.py's parameters are (in, out): store nn.Linear's (out, in)
            self.params += [Var(np.ascontiguousarray(w.T), requires_grad=True), Var(b.copy(), requires_grad=True)]
        self.lr = lr

    def linear(self, x: Var, w: Var, b: Var) -> Var:
        k = self.k
        out = k.matmul(x.data, k.permute(w.data, _T2))
        k.iadd(out, b.data)

        def backward(g):
            return (k.matmul(g, w.data) if x.requires_grad else None,
                    k.matmul(k.permute(g, _T2), x.data), k.sum(g, (0,), False))
        return _var(out, backward, (x, w, b))

    def relu(self, x: Var) -> Var:
        k = self.k
        out = k.relu(x.data)
        return _var(out, lambda g: (k.where(k.gt(out, 0), g, 0.0),), (x,))

    def cross_entropy(self, x: Var, y) -> Var:
        k = self.k
        logp = k.log_softmax(x.data, 1)
        m, c = logp.shape
        rows = np.arange(m)
        loss = k.div(k.sum(k.index(logp, (rows, y)), None, False), -float(m))

        def backward(g):
            d = k.full((m, c), 0, logp.dtype)
            k.setitem_(d, (rows, y), -float(g) / m)  # nll's gradient, then log_softmax's
            return (k.sub(d, k.mul(k.exp(logp), k.sum(d, (1,), True))),)
        return _var(loss, backward, (x,))

    def backward(self, loss: Var) -> None:
        order, seen = [], set()
        stack = [(loss, False)]
        while stack:  # iterative post-order: inputs before the node that used them
            v, done = stack.pop()
            if done:
                order.append(v)
            elif v.node is not None and id(v) not in seen:
                seen.add(id(v))
                stack.append((v, True))
                stack.extend((i, False) for i in v.node.inputs)
        loss.grad = np.ones((), loss.data.dtype)
        for v in reversed(order):
            for i, gi in zip(v.node.inputs, v.node.backward(v.grad)):
                if gi is not None and i.requires_grad:
                    i.grad = gi if i.grad is None else self.k.add(i.grad, gi)
            v.node = None

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        w1, b1, w2, b2, w3, b3 = self.params
        for p in self.params:
            p.grad = None
        h = self.relu(self.linear(Var(x), w1, b1))
        h = self.relu(self.linear(h, w2, b2))
        loss = self.cross_entropy(self.linear(h, w3, b3), y)
        self.backward(loss)
        for p in self.params:
            self.k.axpy_(p.data, -self.lr, p.grad)
        return float(loss.data)
