"""Review 23c (eager): the autograd API, second pass — hooks on views modified in place, ``requires_grad`` and
``.grad`` assignment checks, ``grad_dtype``, compared side by side with PyTorch 2.13's behaviour."""
import numpy as np

import coretorch as torch

_T = torch.tensor


def test_hook_on_view_before_its_inplace_op_does_not_fire(device):
    """PyTorch: a hook registered on a view before an in-place op on that view is on the view's old node, which
    CopySlices does not run: it does not fire and its returned gradient is not used (a.grad == [1, 2, 2]).
    coretorch ran the old node on the base's path: the hook fired and scaled the gradient (a.grad [1, 20, 20])."""
    for root in ("base", "view", "base_through_op"):
        a = _T([1., 2., 3.], requires_grad=True, device=device)
        b = a * 1
        v = b[1:]
        calls = []
        v.register_hook(lambda g: calls.append(1) or g * 10)
        v.mul_(2)
        loss = {"base": b.sum, "view": (v * 1).sum, "base_through_op": (b * 1).sum}[root]()
        loss.backward()
        expected = [0., 2., 2.] if root == "view" else [1., 2., 2.]
        assert calls == [], root
        np.testing.assert_allclose(a.grad.cpu().numpy(), expected)


def test_hook_on_view_still_fires_for_ops_recorded_before_the_inplace_op(device):
    """PyTorch: the old view node stays in the graph of the ops that read the view before the in-place op: the
    hook fires there (once, with y's gradient 3) and scales that path only: a.grad == [1, 32, 32]."""
    a = _T([1., 2., 3.], requires_grad=True, device=device)
    b = a * 1
    v = b[1:]
    seen = []
    v.register_hook(lambda g: seen.append(g.cpu().numpy().tolist()) or g * 10)
    y = v * 3
    v.mul_(2)
    (b.sum() + y.sum()).backward()
    assert seen == [[3., 3.]]
    np.testing.assert_allclose(a.grad.cpu().numpy(), [1., 32., 32.])


def test_grad_fn_prehook_of_view_before_inplace_op_does_not_fire(device):
    """PyTorch: a pre-hook on the view's old grad_fn does not run after an in-place op on the view (the base's
    gradient goes through CopySlices); coretorch ran it."""
    a = _T([1., 2., 3.], requires_grad=True, device=device)
    b = a * 1
    v = b[1:]
    calls = []
    v.grad_fn.register_prehook(lambda go: calls.append(1))
    v.mul_(2)
    b.sum().backward()
    assert calls == []
    np.testing.assert_allclose(a.grad.cpu().numpy(), [1., 2., 2.])
