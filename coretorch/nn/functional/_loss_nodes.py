"""The single graph nodes of pointwise losses PyTorch records as one op (``MseLossBackward0``): each backward is
PyTorch's formula in tensor ops (double backward works)."""
from __future__ import annotations

from ...autograd._node_names import named_node
from ...autograd.graph import Node
from ...ops import pointwise as _P


class MseLossBackward0(Node):
    """PyTorch's mse_loss_backward: input 2 (x - y) g (over numel for 'mean'), target its negation.  Tensor ops:
    double backward works."""
    __slots__ = ("reduction", "need")

    def backward(self, g):
        x, y = self.saved()
        d = _P.sub(x, y)
        if self.reduction == "mean":
            g = _P.mul(g, 2.0 / max(d.numel(), 1))  # (an empty input: an empty gradient, no division by 0)
        else:
            g = _P.mul(g, 2.0)
        gx = _P.mul(d, g)
        gy = _P.neg(gx) if self.need[1] else None
        if gx.grad_fn is not None:  # (create_graph: PyTorch's double-backward node name for both gradients)
            named_node(gx, "MseLossBackwardBackward0")
            if gy is not None:
                named_node(gy, "MseLossBackwardBackward0")
        return (gx if self.need[0] else None, gy)
