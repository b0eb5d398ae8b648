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
import coretorch.nn.functional as F

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


# ---- saved tensors changed in place: the ops that did not check ---------------------------------------------------
def _x(device):
    a = torch.tensor(np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4) / 7, device=device, requires_grad=True)
    return a, a * 1


_LOSSES = {  # PyTorch's fused node saves input and target (mse_loss_backward(grad, self, target, reduction), ...)
    "mse_loss": lambda x, t: F.mse_loss(x, t), "smooth_l1_loss": lambda x, t: F.smooth_l1_loss(x, t),
    "huber_loss": lambda x, t: F.huber_loss(x, t), "soft_margin_loss": lambda x, t: F.soft_margin_loss(x, t),
}


@pytest.mark.parametrize("name", sorted(_LOSSES))
def test_pointwise_losses_check_their_saved_input_and_target(device, name):
    """PyTorch: MseLossBackward0 (SmoothL1Loss, HuberLoss, SoftMarginLoss) saves input and target; either changed in
    place before the backward raises "... [torch.FloatTensor [3, 4]], which is output 0 of Add, is at version 1;
    expected version 0 instead" (no node for a target that is a leaf).  coretorch's composite saved ``input -
    target``: the backward ran, with the values before the change."""
    fn = _LOSSES[name]
    _, x = _x(device)
    t = torch.full((3, 4), 0.5, device=device)
    loss = fn(x, t)
    x.add_(0.25)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[torch\.FloatTensor \[3, 4\]\], "
                                           r"which is output 0 of Add, is at version 1; expected version 0 instead"):
        loss.backward()
    a, x = _x(device)
    t = torch.full((3, 4), 0.5, device=device)
    loss = fn(x, t)
    t.mul_(2)
    with pytest.raises(RuntimeError, match=r"inplace operation: \[torch\.FloatTensor \[3, 4\]\] is at version 1; "
                                           r"expected version 0 instead"):
        loss.backward()
    a, x = _x(device)  # unchanged: the gradient as before
    t = torch.full((3, 4), 0.5, device=device)
    fn(x, t).backward()
    assert a.grad is not None and a.grad.shape == (3, 4)


def test_normalizations_check_their_saved_input(device):
    """PyTorch: NativeBatchNormBackward0 / NativeGroupNormBackward0 save input and weight (instance_norm: batch_norm
    of the input's view); an in-place change of the input before the backward raises.  coretorch's composites saved
    the normalized values: the backward gave the gradient for the input before the change."""
    cases = {
        "batch_norm": lambda x: F.batch_norm(x, None, None, training=True),
        "group_norm": lambda x: F.group_norm(x.reshape(1, 4, 3), 2),
        "instance_norm": lambda x: F.instance_norm(x.reshape(1, 3, 4)),
    }
    for name, fn in cases.items():
        _, x = _x(device)
        out = fn(x)
        w = torch.cos(torch.arange(out.numel(), device=device, dtype=out.dtype)).reshape(out.shape)
        loss = (out * w).sum()
        x.add_(0.5)
        with pytest.raises(RuntimeError, match=_INPLACE):
            loss.backward()
    _, x = _x(device)  # the weight too: PyTorch names the weight's own shape
    wt = torch.ones(4, device=device, requires_grad=True) * 1
    out = F.batch_norm(x, None, None, weight=wt, training=True)
    wt.add_(1)
    with pytest.raises(RuntimeError, match=r"inplace operation: \[torch\.FloatTensor \[4\]\], which is output 0 of "
                                           r"Add"):
        out.sum().backward()


def test_index_and_window_selections_check_their_saved_input(device):
    """PyTorch: GatherBackward0, CummaxBackward0/CumminBackward0, MaxPool2DWithIndicesBackward0, NllLossBackward0,
    MultiMarginLossBackward0, GluBackward0 and LinalgCrossBackward0 save their input: changed in place before the
    backward, it raises "modified by an inplace operation" (GLU: that error, not the split pieces' view error).
    coretorch saved only the indices (or intermediates): the backward ran."""
    idx = torch.tensor([[0, 1], [2, 3], [1, 1]], device=device)
    cls = torch.tensor([0, 1, 3], device=device)
    cases = {
        "gather": lambda x: torch.gather(x, 1, idx), "cummax": lambda x: x.cummax(1)[0],
        "cummin": lambda x: x.cummin(1)[0], "max_pool1d": lambda x: F.max_pool1d(x.reshape(1, 3, 4), 2),
        "max_pool2d": lambda x: F.max_pool2d(x.reshape(1, 1, 3, 4), 2),
        "adaptive_max_pool1d": lambda x: F.adaptive_max_pool1d(x.reshape(1, 3, 4), 2),
        "nll_loss": lambda x: F.nll_loss(x, cls), "multi_margin_loss": lambda x: F.multi_margin_loss(x, cls),
        "glu": lambda x: F.glu(x, 1), "linalg.cross": lambda x: torch.linalg.cross(x[:, :3], x[:, 1:]),
    }
    for name, fn in cases.items():
        for write in (lambda x: x.add_(0.25), lambda x: x[0].mul_(2)):  # directly or through a view
            _, x = _x(device)
            out = fn(x)
            write(x)
            with pytest.raises(RuntimeError, match=_INPLACE):
                out.sum().backward()
        a, x = _x(device)  # x.data is not counted (PyTorch neither): the backward runs
        out = fn(x)
        x.data.add_(0.25)
        out.sum().backward()
        assert a.grad is not None, name


def test_saved_results_of_pdist_and_the_1_norm(device):
    """PyTorch: PdistBackward0 and LinalgVectorNormBackward0 (every p) save their result; changed in place before
    the backward it raises, naming the node: "[torch.FloatTensor [3]], which is output 0 of PdistBackward0"...
    "output 0 of LinalgVectorNorm".  coretorch's pdist (a copy of cdist's entries) and 1-norm (a sum of |x|) did not
    save it: the backward ran."""
    _, x = _x(device)
    d = F.pdist(x)
    d.mul_(1.5)
    with pytest.raises(RuntimeError, match=r"\[torch\.FloatTensor \[3\]\], which is output 0 of Pdist, is at version "
                                           r"1; expected version 0"):
        d.sum().backward()
    for norm in (lambda x: x.norm(p=1), lambda x: torch.linalg.vector_norm(x, 1)):
        _, x = _x(device)
        n = norm(x)
        n.mul_(1.5)
        with pytest.raises(RuntimeError, match=r"\[torch\.FloatTensor \[\]\], which is output 0 of LinalgVectorNorm, "
                                               r"is at version 1"):
            n.backward()
    a, x = _x(device)  # unchanged: pdist's gradient is cdist's (no alias of the result left behind)
    F.pdist(x).sum().backward()
    xs = _np(x)
    want = np.zeros_like(xs)
    for i in range(3):
        for j in range(i + 1, 3):
            u = (xs[i] - xs[j]) / np.linalg.norm(xs[i] - xs[j])
            want[i] += u
            want[j] -= u
    np.testing.assert_allclose(_np(a.grad), want, rtol=1e-5, atol=1e-6)


# ---- the error's words and the version counter ---------------------------------------------------------------------
def test_a_saved_output_changed_in_place_is_named_as_the_node_that_saved_it(device):
    """PyTorch: a node that saved its own output names itself when that output was changed in place: ``d =
    torch.linalg.det(m); d.mul_(2)`` -> "[torch.FloatTensor []], which is output 0 of LinalgDet, is at version 1"
    (through a view too: ``d.view(-1)[0:1].mul_(2)``), ``x.prod(1)`` -> "output 0 of Prod1" (its node
    ProdBackward1: only "Backward0" is dropped, a later overload's number kept), ``2 ** x`` -> "Pow2".  coretorch
    named the tensor's new node ("output 0 of Mul", "torch::autograd::CopySlices") and dropped the number
    ("Prod")."""
    m = torch.tensor([[2.0, 1.0], [1.0, 3.0]], device=device, requires_grad=True) * 1
    cases = [
        (lambda: torch.linalg.det(m), lambda r: r.mul_(2), r"\[torch\.FloatTensor \[\]\], which is output 0 of "
                                                           r"LinalgDet, is at version 1"),
        (lambda: torch.linalg.det(m), lambda r: r.view(-1)[0:1].mul_(2), r"which is output 0 of LinalgDet, is at"),
        (lambda: torch.linalg.inv(m), lambda r: r.mul_(2), r"\[torch\.FloatTensor \[2, 2\]\], which is output 0 of "
                                                           r"LinalgInvEx, is at version 1"),
        (lambda: m.prod(1), lambda r: r.mul_(2), r"which is output 0 of Prod1, is at version 1"),
        (lambda: 2 ** m, lambda r: r.mul_(2), r"which is output 0 of Pow2, is at version 1"),
        (lambda: m.max(), lambda r: r.mul_(2), r"which is output 0 of Max1, is at version 1"),
        (lambda: m.exp(), lambda r: r.mul_(2), r"which is output 0 of Exp, is at version 1"),
    ]
    for make, write, words in cases:
        r = make()
        write(r)
        with pytest.raises(RuntimeError, match=words):
            r.sum().backward()
    x = m * 1  # an input changed in place: named by its new node, as before
    y = x * x
    x.add_(1)
    with pytest.raises(RuntimeError, match=r"which is output 0 of Add, is at version 1; expected version 0"):
        y.sum().backward()


def test_batch_norm_updates_its_running_stats_without_a_version_bump(device):
    """PyTorch: the batch-norm kernel writes the running statistics in place without bumping their version counter
    (``running_mean._version`` stays 0 after ``F.batch_norm(..., training=True)``; a BatchNorm1d's is 1, from its
    reset, before and after a forward).  coretorch copied the new values in (one bump per forward)."""
    rm, rv = torch.zeros(3, device=device), torch.ones(3, device=device)
    x = torch.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3), device=device)
    F.batch_norm(x, rm, rv, training=True, momentum=0.5)
    assert (rm._version, rv._version) == (0, 0)
    np.testing.assert_allclose(_np(rm), [2.25, 2.75, 3.25])
    np.testing.assert_allclose(_np(rv), 0.5 + 0.5 * np.var(np.arange(12.0).reshape(4, 3), 0, ddof=1), rtol=1e-6)
    bn = torch.nn.BatchNorm1d(3).to(device)
    v = bn.running_mean._version
    bn(x)
    assert bn.running_mean._version == v and bn.running_var._version == v
    assert bn.num_batches_tracked._version == v + 1  # (its add_ bumps it, as in PyTorch)


def test_checkpoint_checks_its_saved_inputs(device):
    """PyTorch: ``checkpoint`` (reentrant or not) saves its tensor inputs for the recomputation: one changed in place
    before the backward raises "... which is output 0 of Add, is at version 1".  coretorch keeps the function's graph
    (``x.exp()`` saved only its result): the backward ran.  A checkpointed loss keeps its own check as well."""
    from coretorch.utils.checkpoint import checkpoint
    for reentrant in (True, False):
        a = torch.ones(3, device=device, requires_grad=True)
        x = a * 2
        y = checkpoint(lambda z: z.exp(), x, use_reentrant=reentrant)
        x.add_(1)
        with pytest.raises(RuntimeError, match=r"which is output 0 of Add, is at version 1; expected version 0"):
            y.sum().backward()
        a = torch.ones(3, device=device, requires_grad=True)  # unchanged: the gradient of exp(2a)
        checkpoint(lambda z: z.exp(), a * 2, use_reentrant=reentrant).sum().backward()
        np.testing.assert_allclose(_np(a.grad), 2 * np.exp(2.0) * np.ones(3), rtol=1e-6)
    _, x = _x(device)
    t = torch.zeros(3, 4, device=device)
    loss = checkpoint(lambda p, q: F.mse_loss(p, q), x, t, use_reentrant=False)
    t.add_(1)  # (the loss's own saved target: both checks stay)
    with pytest.raises(RuntimeError, match=_INPLACE):
        loss.backward()


_SAVE_RESULT = {  # the in-place activations whose PyTorch node saves the result, and that node's name in the error
    "leaky_relu": (lambda h: F.leaky_relu(h, 0.1, inplace=True), "LeakyRelu1"),
    "elu": (lambda h: F.elu(h, inplace=True), "Elu1"), "selu": (lambda h: F.selu(h, inplace=True), "Elu1"),
    "celu": (lambda h: F.celu(h, inplace=True), "Celu1"),
    "rrelu": (lambda h: F.rrelu(h, training=False, inplace=True), "RreluWithNoise1"),
}


@pytest.mark.parametrize("name", sorted(_SAVE_RESULT))
def test_in_place_activations_check_their_saved_result(device, name):
    """PyTorch: ``F.leaky_relu(h, inplace=True)`` (elu_, selu_, celu_, rrelu_) saves its result; ``h.mul_(2)`` (a
    residual ``h += x``) before the backward raises "... which is output 0 of LeakyRelu1, is at version 2; expected
    version 1 instead".  coretorch computed from a copy of the input: no error, the gradient of the old values."""
    fn, node = _SAVE_RESULT[name]
    a = torch.tensor([[0.5, -1.0, 2.0], [-0.3, 0.2, -2.5]], device=device, requires_grad=True)
    h = a * 1
    fn(h)
    h.mul_(2)
    with pytest.raises(RuntimeError, match=rf"which is output 0 of {node}, is at version 2; expected version 1"):
        h.sum().backward()
    a = torch.tensor([[0.5, -1.0, 2.0], [-0.3, 0.2, -2.5]], device=device, requires_grad=True)
    h = a * 1
    fn(h).sum().backward()  # unchanged: the gradient runs
    assert a.grad is not None and float(a.grad[0, 0]) == pytest.approx(1.0507009873554805 if name == "selu" else 1.0)


def test_in_place_leaky_relu_with_a_negative_slope_refuses_its_backward(device):
    """PyTorch: ``F.leaky_relu(h, -0.5, inplace=True)`` runs, but its backward raises "In-place leakyReLu backward
    calculation is triggered with a negative slope which is not supported" (the saved result's sign does not tell the
    input's).  coretorch gave a gradient; out of place, or with slope 0, both give one."""
    a = torch.tensor([1.0, -2.0], device=device, requires_grad=True)
    h = a * 1
    F.leaky_relu(h, -0.5, inplace=True)
    np.testing.assert_allclose(_np(h), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="In-place leakyReLu backward calculation is triggered with a negative "
                                           "slope which is not supported"):
        h.sum().backward()
    h = a * 1
    F.leaky_relu(h, 0.0, inplace=True).sum().backward()
    np.testing.assert_allclose(_np(a.grad), [1.0, 0.0])
    F.leaky_relu(a * 1, -0.5).sum().backward()
    np.testing.assert_allclose(_np(a.grad), [2.0, -0.5])


def test_an_expanded_view_read_after_its_base_was_written_in_place(device):
    """PyTorch: ``e = b[0:1].expand(5, 4); b.mul_(2); e.sum(0)``: e's grad_fn is regenerated (AsStridedBackward0) from
    b's new node, so the gradient goes through the ``mul_``: ``a.grad`` is 2 * 5 * the weights in row 0.  coretorch
    kept e's old node for a stride-0 view: the gradient skipped the in-place op (half of PyTorch's, silently)."""
    a = torch.tensor(np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4), device=device, requires_grad=True)
    b = a * 1
    e = b[0:1].expand(5, 4)
    b.mul_(2)
    wt = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    y = e.sum(0)
    assert e.grad_fn.name() == "AsStridedBackward0"
    np.testing.assert_allclose(_np(y), 10 * np.arange(1.0, 5.0))
    (y * wt).sum().backward()
    want = np.zeros((3, 4), np.float32)
    want[0] = 10 * np.arange(1.0, 5.0)
    np.testing.assert_allclose(_np(a.grad), want)
    a.grad = None  # a new leading dim, and a column expanded along the other dim
    b = a * 1
    e, c = b[1].expand(2, 4), b[:, 1:2].expand(3, 5)
    b.mul_(3)
    ((e * torch.arange(8.0, device=device).reshape(2, 4)).sum() + c.sum()).backward()
    want = np.zeros((3, 4), np.float32)
    want[1] = 3 * (np.arange(4.0) + np.arange(4.0, 8.0))
    want[:, 1] += 15
    np.testing.assert_allclose(_np(a.grad), want)


def test_views_of_a_non_contiguous_base_under_in_place_ops(device):
    """PyTorch: a base in another memory order (a clone of a transposed tensor keeps its strides; channels_last):
    ``v = b[0]; b.mul_(2); v * 1`` regenerates v's node, so the gradient goes through the ``mul_`` (twice the
    weights); ``b[0].mul_(2)`` on the view is recorded (CopySlices).  coretorch kept v's old node for such a base
    (half the gradient, silently) and refused the in-place op on the view (NotImplementedError)."""
    a = torch.tensor(np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4), device=device, requires_grad=True)
    wt = torch.tensor([1.0, 2.0, 3.0], device=device)
    b = (a * 1).t().clone()  # (4, 3), strides (1, 4)
    v = b[0]
    b.mul_(2)
    (v * wt).sum().backward()
    want = np.zeros((3, 4), np.float32)
    want[:, 0] = 2 * np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(_np(a.grad), want)
    a.grad = None
    b = (a * 1).t().clone()
    b[1].mul_(wt)  # row 1 of b: column 1 of a, times (1, 2, 3)
    want = _np(a).T.copy()
    want[1] *= [1.0, 2.0, 3.0]
    np.testing.assert_allclose(_np(b), want)
    assert b.grad_fn.name() == "torch::autograd::CopySlices"
    (b * torch.arange(12.0, device=device).reshape(4, 3)).sum().backward()
    want = np.arange(12.0).reshape(4, 3)
    want[1] *= [1.0, 2.0, 3.0]
    np.testing.assert_allclose(_np(a.grad), want.T)
    a.grad = None
    c = (a * 1).reshape(1, 3, 2, 2).to(memory_format=torch.channels_last)
    c[0, 0].mul_(3)
    (c * torch.arange(12.0, device=device).reshape(1, 3, 2, 2)).sum().backward()
    want = np.arange(12.0).reshape(3, 4)
    want[0] *= 3
    np.testing.assert_allclose(_np(a.grad), want)
