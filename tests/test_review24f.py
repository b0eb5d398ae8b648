"""Review 24f: in-place modification, version counters and views under autograd.  A tensor an op saved for its
backward and changed in place afterwards must make the backward raise PyTorch's "modified by an inplace operation"
(or, through ``.data``, silently use the new values, as PyTorch does); in-place ops on leaves, views of leaves and
views whose base came to require grad later raise PyTorch's errors; ``retain_grad`` follows a tensor whose view was
written in place; ``set_``/``resize_``/``detach_`` behave as PyTorch's under autograd.  PyTorch 2.13's behaviour is
the spec; each test says what PyTorch does and what coretorch did before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch

_INPLACE = "modified by an inplace operation"


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


# ---- retain_grad, set_, resize_, detach_, views of leaves ----------------------------------------------------------
def test_retain_grad_of_a_base_written_through_a_view(device):
    """PyTorch: ``b.retain_grad(); b[:2].mul_(3)``: the retain_grad hook moves to b's new node (CopySlices), so
    ``b.grad`` is the gradient of b's final value (the loss's weights ``[1, 2, 3]``).  coretorch kept the hook on b's
    old node: ``b.grad`` was the gradient of b's value before the write (``[3, 6, 3]``), silently."""
    a = torch.ones(3, device=device, requires_grad=True)
    b = a * 2
    b.retain_grad()
    b[:2].mul_(3)
    (b * torch.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    np.testing.assert_allclose(_np(b.grad), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(_np(a.grad), [6.0, 12.0, 6.0])


def test_set_on_a_tensor_in_the_graph_makes_its_backward_raise(device):
    """PyTorch: ``set_`` has no derivative: on a tensor in the graph (or from a source that requires grad, in grad
    mode) its grad_fn becomes ``NotImplemented`` and a backward through it raises "derivative for set_ is not
    implemented".  coretorch kept the old grad_fn: ``b = a * 2; b.set_(s); b.sum().backward()`` silently gave a the
    gradient of the memory b no longer shows (``[2, 2, 2]``), and ``b.set_(a)`` of a plain b left b outside the graph
    (a "does not require grad" error at backward)."""
    a = torch.ones(3, device=device, requires_grad=True)
    b = a * 2
    b.set_(torch.zeros(3, device=device))
    assert b.requires_grad and b.grad_fn.name() == "torch::autograd::NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for set_ is not implemented"):
        b.sum().backward()
    assert a.grad is None
    c = torch.zeros(3, device=device)
    c.set_(a)
    assert c.requires_grad
    with pytest.raises(RuntimeError, match="derivative for set_ is not implemented"):
        (c * 2).sum().backward()
    d = a * 2  # a saved tensor changed by set_ names the NotImplemented node
    e = d * d
    d.set_(torch.zeros(3, device=device))
    with pytest.raises(RuntimeError, match=r"output 0 of torch::autograd::NotImplemented, is at version 1"):
        e.sum().backward()
    f = a * 2  # in no_grad mode set_ is not recorded: the old node stays
    with torch.no_grad():
        f.set_(torch.zeros(3, device=device))
    assert f.grad_fn.name() == "MulBackward0"


def test_resize_of_a_tensor_that_requires_grad_raises_in_no_grad_mode_too(device):
    """PyTorch: ``resize_`` of a tensor that requires grad raises "cannot resize variables that require grad",
    whatever the grad mode.  coretorch resized it inside ``torch.no_grad()`` (a parameter whose shape no longer
    matched its ``.grad``)."""
    a = torch.ones(3, device=device, requires_grad=True)
    with torch.no_grad():
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            a.resize_(4)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            a.resize_as_(torch.ones(4, device=device))
    assert tuple(a.shape) == (3,) and a._version == 0
    b = torch.ones(3, device=device)
    b.resize_(4)  # (no grad: allowed)
    assert tuple(b.shape) == (4,)


def test_detach_in_place_refuses_every_view(device):
    """PyTorch: ``detach_()`` of any view raises "Can't detach views in-place. Use detach() instead. If you are using
    DistributedDataParallel ..." (its is_view(), whether or not the base requires grad); a detached tensor is no view.
    coretorch allowed it on a view of a tensor that does not require grad, and its message stopped after the first
    sentence."""
    b = torch.ones(3, device=device)
    with pytest.raises(RuntimeError, match=r"Can't detach views in-place\. Use detach\(\) instead\. If you are using "
                                           r"DistributedDataParallel \(DDP\)"):
        b[:2].detach_()
    a = torch.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        (a * 2)[:2].detach_()
    d = a.detach()
    assert d.detach_() is d and not d.requires_grad
    c = a * 2
    c.detach_()
    assert not c.requires_grad and c.grad_fn is None and c.is_leaf


def test_in_place_on_a_view_whose_base_came_to_require_grad(device):
    """PyTorch: ``v = b[:2]; b.requires_grad_(); v.add_(1)``: v requires grad through its base, a leaf, and the
    in-place op raises "a view of a leaf Variable that requires grad is being used in an in-place operation."
    coretorch wrote into the leaf silently (add_/mul_'s direct kernel path too)."""
    for op in (lambda v: v.add_(1), lambda v: v.mul_(2.0), lambda v: v.exp_(), lambda v: v.copy_(torch.zeros_like(v))):
        b = torch.ones(3, device=device)
        v = b[:2]
        b.requires_grad_()
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                               "in-place operation"):
            op(v)
        np.testing.assert_allclose(_np(b), [1.0, 1.0, 1.0])
        assert b._version == 0
    b = torch.ones(3, device=device)  # a view made in no_grad mode: PyTorch's no_grad-view error comes first
    b.requires_grad_()
    with torch.no_grad():
        v = b[:2]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.add_(1)
    b = torch.ones(3, device=device)  # a detached tensor's view is no view of the leaf: allowed
    b.requires_grad_()
    b.detach()[:2].add_(1)
    np.testing.assert_allclose(_np(b), [2.0, 2.0, 1.0])
