"""Review 18f: eager autograd semantics against PyTorch 2.13: saved-tensor version checks (an input, an index or
mask argument, or an output changed in place between the forward and the backward), graph reuse (second backward,
retain_graph, create_graph, hooks) and in-place/view semantics on leaves and views."""
from __future__ import annotations

import pytest

import coretorch as torch
import coretorch.nn.functional as F


def _leaf(shape, device, lo=0.5, hi=1.5):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(*shape, generator=g) * (hi - lo) + lo
    return x.to(device).requires_grad_(True)


def test_dist_and_cdist_results_modified_in_place_raise(device):
    """PyTorch's dist and cdist backward read their result (g * diff / dist), saved: the result changed in place
    before the backward (``d.mul_(1.5)``) raises "modified by an inplace operation".  coretorch before: the nodes
    kept the result without its version, so the backward divided by the changed distance, a silently wrong
    gradient (1/1.5 of the right one)."""
    for fn in (lambda a, b: torch.dist(a, b), lambda a, b: torch.cdist(a, b),
               lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
               lambda a, b: torch.cdist(a, b, p=3.0)):
        x = _leaf((3, 4), device)
        y = _leaf((1, 4), device, 2.0, 3.0).detach()
        d = fn(x * 1, y)
        d.mul_(1.5)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            d.sum().backward()
        fn(x * 1, y).sum().backward()  # unchanged: a gradient
        assert x.grad is not None


def test_where_and_masked_fill_condition_modified_in_place_raise(device):
    """PyTorch's where (and masked_fill, masked_scatter built on it) saves the condition: the mask changed in place
    before the backward raises.  coretorch before: WhereBackward0 held the mask without its version, so the
    gradient was routed by the changed mask, silently."""
    cases = [lambda x, m: torch.where(m, x, 0.0), lambda x, m: torch.where(m, 0.0, x),
             lambda x, m: x.masked_fill(m, 0.0), lambda x, m: x.masked_scatter(m, torch.ones(12, device=x.device)),
             lambda x, m: torch.ones(3, 4, device=x.device).masked_scatter(m, x.reshape(12))]
    for fn in cases:
        x = _leaf((3, 4), device)
        m = x.detach() > 1
        out = fn(x * 1, m)
        m.logical_not_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
        fn(x * 1, m).sum().backward()
        assert x.grad is not None


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax"])
def test_scatter_reduce_and_index_reduce_indices_modified_in_place_raise(device, reduce):
    """PyTorch's scatter_reduce and index_reduce save their index: changed in place before the backward, it raises.
    coretorch before: ScatterReduceBackward0 held the index without its version, so the gradient was gathered by
    the changed indices (NaN for amax, another value for prod/mean)."""
    x = _leaf((3, 4), device)
    src = _leaf((3, 2), device)
    index = torch.tensor([[0, 1], [2, 3], [1, 1]], device=device)
    out = x.scatter_reduce(1, index, src, reduce)
    index.fill_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    if reduce == "sum":
        return
    index = torch.tensor([0, 2], device=device)
    out = x.index_reduce(0, index, _leaf((2, 4), device), reduce)
    index.fill_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_nll_and_cross_entropy_target_modified_in_place_raise(device):
    """PyTorch's nll_loss saves its target (and weight): changed in place before the backward, it raises.
    coretorch before: the node of the mean/sum fast path held the target's own buffer, so the gradient went to the
    changed classes, silently (cross_entropy with label_smoothing, nll_loss with the default mean)."""
    for fn in (lambda x, t: F.nll_loss(x, t), lambda x, t: F.cross_entropy(x, t),
               lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
               lambda x, t: F.nll_loss(x, t, reduction="none")):
        x = _leaf((3, 4), device)
        t = torch.tensor([0, 1, 3], device=device)
        loss = fn(x * 1, t)
        t.fill_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.sum().backward()
        x = _leaf((3, 4), device)
        w = torch.ones(4, device=device)
        loss = F.nll_loss(x * 1, t, w)
        w.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()


def test_a_view_made_in_no_grad_mode_modified_in_place_in_grad_mode_raises(device):
    """PyTorch: a view made under ``no_grad`` of a tensor that requires grad (or of any float tensor, written with
    an operand that requires grad) modified in place with grad mode on raises "A view was created in no_grad mode
    and is being modified inplace with grad mode enabled".  coretorch before: the write went through untracked, a
    leaf's data changed silently, and a non-leaf base's gradient ignored the change (``b[0] *= 2`` through the view:
    b.sum()'s gradient stayed 1 where 2 is right)."""
    x = _leaf((3,), device)
    with torch.no_grad():
        v = x[:1]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(2)
    b = x * 1
    with torch.no_grad():
        u, w = b[:1], b.view(3)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        u.mul_(2)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        w[1:].add_(1)  # (a view of such a view: the same)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        u[0] = 3.0
    y = torch.zeros(3, device=device)
    with torch.no_grad():
        yv = y[:1]
    yv.mul_(2)  # a base that needs no gradient, an operand that needs none: allowed
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        yv.copy_(x[:1])
    with torch.no_grad():
        v.mul_(2)  # (inside no_grad: allowed, untracked)
        d = b.detach()[:1]
    d.mul_(2)  # a view of a detached tensor: allowed
    p, q = b.split(2)  # split's pieces (made without a graph, then given their node): their own error
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view"):
        p.mul_(2)


def test_reading_the_grad_of_a_non_leaf_warns(device):
    """PyTorch warns (UserWarning, at the caller's line) when ``.grad`` of a non-leaf that does not retain its
    gradient is read while it is None: it will never be populated.  coretorch before: no warning."""
    x = _leaf((2,), device)
    y = x * 2
    (y * y).sum().backward()
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed") as rec:
        assert y.grad is None
    assert rec[0].filename == __file__
    z = x * 3
    z.retain_grad()
    z.sum().backward()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.grad is not None and x.grad is not None  # (retained, and a leaf: no warning)
        assert torch.ones(2, device=device).grad is None


def test_fmod_and_erfinv_save_only_what_pytorch_saves(device):
    """PyTorch's fmod saves its operands only for the divisor's gradient (the dividend's is g), and erfinv saves its
    input (not its result): ``fmod(x, y)`` with only x requiring grad, then x or y changed in place, and ``erfinv(x)``
    whose result is changed in place, backpropagate.  coretorch before: both raised "modified by an inplace
    operation" where PyTorch computes the gradient."""
    x = _leaf((3,), device)
    y = torch.tensor([0.3, 0.7, 0.9], device=device)
    a = x * 1
    r = torch.fmod(a, y)
    a.mul_(2)
    y.mul_(2)
    r.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    x = _leaf((3,), device, 0.1, 0.5)
    r = torch.erfinv(x)
    expect = torch.autograd.grad(torch.erfinv(x).sum(), x)[0]
    r.mul_(2)
    r.sum().backward()
    assert torch.allclose(x.grad, expect * 2)
    xd = torch.tensor([0.3, -0.5], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(torch.erfinv, (xd,))


def test_a_post_accumulate_grad_hook_that_returns_something_raises(device):
    """PyTorch's post-accumulate-grad hooks must return None: a tensor returned raises RuntimeError "Tensor post
    accumulate grad hooks should return None.", another value TypeError.  coretorch before: the value was ignored."""
    for ret, exc in ((torch.ones(2), RuntimeError), (5, TypeError)):
        x = _leaf((2,), device)
        x.register_post_accumulate_grad_hook(lambda p, ret=ret: ret)
        with pytest.raises(exc):
            (x * 2).sum().backward()
    x = _leaf((2,), device)
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0]]


def test_functional_inplace_activations_record_their_own_node(device):
    """PyTorch's ``F.relu(x, inplace=True)`` (``hardtanh``, ``relu6``, ``hardsigmoid``, ``hardswish`` likewise)
    makes x the output of the activation's node (ReluBackward0, HardtanhBackward0...); relu's saves x after the
    write: x changed in place again before the backward raises.  coretorch before: the result was written with a
    copy_ (grad_fn CopyBackwards) and the later change went unnoticed."""
    for fn, ref, name in ((lambda y: F.relu(y, inplace=True), F.relu, "ReluBackward0"),
                          (lambda y: F.relu_(y), F.relu, "ReluBackward0"),
                          (lambda y: F.hardtanh(y, inplace=True), F.hardtanh, "HardtanhBackward0"),
                          (lambda y: F.relu6(y, inplace=True), F.relu6, "HardtanhBackward0")):
        x = _leaf((4,), device, -1.5, 1.5)
        y = x * 1
        assert fn(y) is y
        assert y.grad_fn.name() == name
        z = y.exp()
        y.add_(1)
        if name == "ReluBackward0":
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                z.sum().backward()
        y = x * 1
        fn(y)
        (got,) = torch.autograd.grad((y * 2).sum(), x)
        (expect,) = torch.autograd.grad((ref(x) * 2).sum(), x)
        assert got.tolist() == expect.tolist()


def test_data_set_to_an_integer_tensor_on_a_tensor_requiring_grad_raises(device):
    """PyTorch: ``x.data = int_tensor`` where x requires grad raises "data set to a tensor that requires gradients
    must be floating point or complex dtype".  coretorch before: x became an int64 tensor requiring grad."""
    x = _leaf((2,), device)
    with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
        x.data = torch.tensor([1, 2], device=device)
    assert x.dtype is torch.float32
    x.data = torch.tensor([3.0, 4.0], device=device, dtype=torch.float64)  # (a float one: allowed, as PyTorch)
    assert x.dtype is torch.float64 and x.requires_grad
    y = torch.zeros(2, device=device)
    y.data = torch.tensor([1, 2], device=device)
    assert y.dtype is torch.int64


def test_a_tensor_hook_that_changes_the_gradients_dtype_size_or_kind_raises(device):
    """PyTorch checks what a tensor hook returns: another dtype raises "hook '<lambda>' has changed the type of
    value (was torch.FloatTensor got torch.DoubleTensor)", another size "... has changed the size of value", a
    non-tensor TypeError.  coretorch before: a float64 gradient was cast back silently (the size and non-tensor
    cases raised elsewhere with other messages)."""
    for ret, exc, msg in ((lambda g: g.double(), RuntimeError, r"changed the type of value \(was torch.FloatTensor "
                           r"got torch.DoubleTensor\)"),
                          (lambda g: g.sum(), RuntimeError, "changed the size of value"),
                          (lambda g: 3, TypeError, "hook returned 'int'")):
        for leaf in (False, True):
            x = _leaf((2,), device)
            y = x if leaf else x * 1
            y.register_hook(ret)
            with pytest.raises(exc, match=msg):
                (y * 2).sum().backward()
    x = _leaf((2,), device)
    y = x * 1
    y.register_hook(lambda g: g * 10)  # (a same-kind tensor: used)
    y.sum().backward()
    assert x.grad.tolist() == [10.0, 10.0]


def test_an_in_place_op_on_an_expanded_view_of_a_tensor_requiring_grad_raises_pytorchs_overlap_error(device):
    """PyTorch: an in-place op on an expanded view (``b[0:1].expand(3, 4).mul_(2)``) raises RuntimeError
    "unsupported operation: more than one element of the written-to tensor refers to a single memory location",
    with or without autograd.  coretorch before: with a base requiring grad, NotImplementedError ("not supported
    by coretorch yet")."""
    b = _leaf((1, 4), device) * 1
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        b[0:1].expand(3, 4).mul_(2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch.zeros(1, 4, device=device).expand(3, 4).add_(torch.ones(3, 4, device=device))


def test_the_names_of_the_cpp_autograd_nodes_carry_their_namespace(device):
    """PyTorch's ``grad_fn.name()`` of its C++ nodes is ``torch::autograd::CopySlices`` (a view written in place),
    ``torch::autograd::CopyBackwards`` (copy_), ``torch::autograd::AccumulateGrad``; their type's ``__name__`` and
    repr stay bare.  coretorch before: ``name()`` gave the bare names."""
    x = _leaf((2,), device)
    y = x * 1
    y.copy_(x * 2)
    assert y.grad_fn.name() == "torch::autograd::CopyBackwards" and type(y.grad_fn).__name__ == "CopyBackwards"
    z = x * 1
    z[0:1].mul_(3.0)
    assert z.grad_fn.name() == "torch::autograd::CopySlices" and repr(z.grad_fn).startswith("<CopySlices object")
    assert (x * 1).grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"
    assert (x * 1).grad_fn.name() == "MulBackward0"
