"""Session 24's own fixes found while merging the reviews (the reviews' are in test_review24*.py)."""
from __future__ import annotations

import warnings

import coretorch as torch

nn = torch.nn


def test_leaf_gradients_accumulate_as_soon_as_their_layer_is_done_in_pytorchs_order():
    """PyTorch runs AccumulateGrad before any other ready node, in its node's edge order: the hooks of a Linear
    stack's parameters fire last layer first, bias before weight (review 24h gave Linear's node PyTorch's edge order;
    coretorch's LIFO queue then ran the bias's hook only at the very end, and DDP's first bucket waited for the whole
    backward)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.Tanh(), nn.Linear(2, 1))
    order: list = []
    for n, p in m.named_parameters():
        p.register_hook(lambda g, n=n: order.append(n))
    m(torch.randn(5, 3)).sum().backward()
    assert order == ["4.bias", "4.weight", "2.bias", "2.weight", "0.bias", "0.weight"]


def test_torch_functional_and_a_loss_warning_after_a_dispatching_subclass_is_defined():
    """Once a ``__torch_function__`` subclass exists the public functions are dispatching wrappers: torch.functional's
    names are the same wrappers (review 24h's namespace held the originals), and a loss's size warning still points at
    the user's line (it pointed into the wrapper)."""
    class Tagged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    _ = Tagged  # (defining it switches dispatch on)
    assert torch.functional.einsum is torch.einsum
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        torch.nn.functional.mse_loss(torch.ones(3), torch.ones(3, 1))
    assert [x.filename for x in w if "target size" in str(x.message)] == [__file__]


def test_mul_and_div_nodes_show_their_saved_operands_as_pytorchs():
    """PyTorch's ``grad_fn._saved_self``/``_saved_other`` of mul and div (tutorials print them): the operands the
    node saved, None where no gradient reads one, a number as its wrapped 0-d tensor; after the backward freed them,
    the "second time" error (coretorch had these on unary nodes only: AttributeError)."""
    import pytest
    x, y, c = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True), torch.randn(3)
    g = (x * y).grad_fn
    assert g._saved_self is x and g._saved_other is y
    g = (x * c).grad_fn
    assert g._saved_self is None and g._saved_other is c
    s = (x / 2.5).grad_fn._saved_other
    assert s.dim() == 0 and s.dtype == torch.float64 and s.item() == 2.5 and (x * 2).grad_fn._saved_other.item() == 2
    z = x / y
    z.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.grad_fn._saved_self
