"""A view made before an in-place op on its base (or on another view of the base) reads the base's new graph when
it is used afterwards, as PyTorch regenerates a view's grad_fn: before, it kept its old node and the gradient
silently ignored the in-place op.  Expected gradients derived by hand (and checked against PyTorch 2.13)."""
from __future__ import annotations

import numpy as np

import coretorch as torch


def _x(device):
    return torch.ones(4, 3, device=device, requires_grad=True)


def _grad(x):
    return x.grad.cpu().numpy()


def test_view_of_base_modified_through_a_subview(device):
    x = _x(device)
    y = x * 1
    a = y[0:2]
    a[0].mul_(3)                       # writes y[0] through a view of a view
    (a.sum() + y[2:].sum()).backward()
    np.testing.assert_array_equal(_grad(x), [[3] * 3, [1] * 3, [1] * 3, [1] * 3])


def test_split_piece_modified_through_a_subview(device):
    x = _x(device)
    a, b = (x * 1).unsafe_split(2)
    a[0].mul_(3)
    (a.sum() + b.sum()).backward()     # (split's pieces raise here, as in PyTorch)
    np.testing.assert_array_equal(_grad(x), [[3] * 3, [1] * 3, [1] * 3, [1] * 3])


def test_view_used_after_its_base_was_modified(device):
    x = _x(device)
    y = x * 1
    a = y[0:2]
    y.mul_(2)
    a.sum().backward()
    np.testing.assert_array_equal(_grad(x), [[2] * 3, [2] * 3, [0] * 3, [0] * 3])


def test_stale_view_as_the_backward_root_and_in_autograd_grad(device):
    x = _x(device)
    y = x * 1
    a = y[1:3]
    y.mul_(5)
    a.backward(torch.ones(2, 3, device=device))
    np.testing.assert_array_equal(_grad(x), [[0] * 3, [5] * 3, [5] * 3, [0] * 3])
    x = _x(device)
    y = x * 1
    a = y.t()
    y[:, 0].mul_(-1)
    g, = torch.autograd.grad((a * a.detach()).sum(), x)
    np.testing.assert_array_equal(g.cpu().numpy(), np.array([[-1.0, 1, 1]] * 4) * np.array([[-1.0, 1, 1]] * 4))


def test_views_made_after_the_in_place_op_and_leaf_views_unchanged(device):
    x = _x(device)
    y = x * 1
    y.mul_(2)
    a = y[0:2]                         # made after: its node is already the new one
    a.sum().backward()
    np.testing.assert_array_equal(_grad(x), [[2] * 3, [2] * 3, [0] * 3, [0] * 3])
    w = torch.ones(3, 2, device=device, requires_grad=True)
    wt = w.t()                         # a view of a leaf, its base updated outside autograd (an optimizer step)
    with torch.no_grad():
        w.mul_(3)
    (wt * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.full((3, 2), 2.0))
    assert type(wt.grad_fn).__name__ == "TBackward0"
