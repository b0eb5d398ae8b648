"""Activation checkpointing (``torch.utils.checkpoint``) recomputes the segment in the backward, as PyTorch's.

Before session 24 coretorch's ``checkpoint`` ran the function once and kept its graph: results and gradients were
the plain call's, but no memory was saved (the point of checkpointing) and the function ran once where PyTorch's
backward runs it again (forward hooks, counters).  Both variants now recompute: ``use_reentrant=True`` as PyTorch's
``CheckpointFunction`` (an inner ``backward``), ``use_reentrant=False`` by cutting the graph at the segment's
boundary (``coretorch/utils/_checkpoint_segment.py``).  Values and gradients stay the plain call's."""
from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import coretorch as torch
from coretorch.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

nn = torch.nn
F = torch.nn.functional


def _net(device, p: float = 0.5):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Dropout(p), nn.Tanh(), nn.Linear(8, 3)).double().to(device)


def _grads(m, x):
    return [p.grad.clone() for p in m.parameters()] + [x.grad.clone()]


@pytest.mark.parametrize("reentrant", [False, True])
def test_values_and_gradients_are_the_plain_calls_with_dropout_inside(device, reentrant):
    """PyTorch: with ``preserve_rng_state=True`` (the default) the recomputation draws the forward's dropout mask,
    so outputs and gradients equal the plain call's."""
    m = _net(device)
    x = torch.randn(5, 4, dtype=torch.float64).to(device).requires_grad_()
    torch.manual_seed(1)
    ref = m(x)
    (ref * ref).sum().backward()
    want = _grads(m, x)
    m.zero_grad()
    x.grad = None
    torch.manual_seed(1)
    y = checkpoint(m, x, use_reentrant=reentrant)
    torch.rand(100)  # (draws between the forward and the backward do not change the recomputed mask)
    (y * y).sum().backward()
    np.testing.assert_array_equal(y.detach().cpu().numpy(), ref.detach().cpu().numpy())
    for a, b in zip(_grads(m, x), want):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reentrant", [False, True])
def test_the_segments_activations_are_freed_after_its_forward(reentrant):
    """The memory saving: a tensor the segment made and saved for its backward (``exp`` keeps its output) is freed
    once the checkpoint returns; without the checkpoint the graph keeps it alive until the backward."""
    x = torch.randn(3, 4, requires_grad=True)
    refs = []

    def seg(a):
        h = a.exp()
        refs.append(weakref.ref(h))
        return (h * 2).sin()

    y = seg(x)
    gc.collect()
    assert refs[-1]() is not None  # (the plain call: kept by the graph)
    y = checkpoint(seg, x, use_reentrant=reentrant)
    gc.collect()
    assert refs[-1]() is None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (torch.cos(x.exp() * 2) * 2 * x.exp()).detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("reentrant", [False, True])
def test_the_backward_runs_the_function_again(reentrant):
    """PyTorch: forward hooks of modules inside fire again in the backward's recomputation (coretorch ran them
    once)."""
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    calls = []
    m[0].register_forward_hook(lambda mod, a, o: calls.append("fwd"))
    x = torch.randn(3, 2, requires_grad=True)
    y = checkpoint(m, x, use_reentrant=reentrant)
    assert calls == ["fwd"]
    y.sum().backward()
    assert calls == ["fwd", "fwd"]


def test_non_reentrant_works_with_autograd_grad_and_closures(device):
    """``use_reentrant=False``: ``autograd.grad`` and a tensor with a graph read from outside the function (a closure)
    give the plain call's gradients; keyword arguments are passed."""
    w = torch.randn(4, dtype=torch.float64).to(device).requires_grad_()
    x = torch.randn(3, 4, dtype=torch.float64).to(device).requires_grad_()
    h = w * 2  # (a non-leaf the function reads from its closure)

    def seg(a, scale=1.0):
        return ((a * h).sin() * scale).sum(1)

    rx, rw = torch.autograd.grad(seg(x, scale=3.0).sum(), [x, w], retain_graph=True)  # (h's node runs again)
    y = checkpoint(seg, x, use_reentrant=False, scale=3.0)
    gx, gw = torch.autograd.grad(y.sum(), [x, w])
    np.testing.assert_allclose(gx.cpu().numpy(), rx.cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.cpu().numpy(), rw.cpu().numpy(), rtol=1e-12)


def test_reentrant_refuses_autograd_grad_with_pytorchs_message():
    """PyTorch: the reentrant variant's backward raises RuntimeError under ``autograd.grad`` or
    ``backward(inputs=...)``."""
    x = torch.randn(3, requires_grad=True)
    y = checkpoint(lambda a: a.exp(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match=r"When use_reentrant=True, torch.utils.checkpoint is incompatible with "
                                           r"\.grad\(\) or passing an `inputs` parameter to \.backward\(\)"):
        torch.autograd.grad(y.sum(), x)
    assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"


def test_gradcheck_and_double_backward_through_a_non_reentrant_checkpoint(device):
    """The recomputed segment is differentiated with ``create_graph`` when the outer backward has it: gradcheck and
    gradgradcheck pass, and a second-order gradient equals the plain call's."""
    x = torch.randn(3, 2, dtype=torch.float64).to(device).requires_grad_()
    w = torch.randn(2, 2, dtype=torch.float64).to(device).requires_grad_()

    def seg(a, b):
        return (a @ b).tanh() * a.sum()

    def ck(a, b):
        return checkpoint(seg, a, b, use_reentrant=False)

    assert torch.autograd.gradcheck(ck, (x, w))
    assert torch.autograd.gradgradcheck(ck, (x, w))
    g, = torch.autograd.grad(ck(x, w).pow(2).sum(), x, create_graph=True)
    r, = torch.autograd.grad(seg(x, w).pow(2).sum(), x, create_graph=True)
    gg, = torch.autograd.grad(g.sum(), w)
    rr, = torch.autograd.grad(r.sum(), w)
    np.testing.assert_allclose(gg.cpu().numpy(), rr.cpu().numpy(), rtol=1e-10)


def test_nested_checkpoints_and_checkpoint_sequential(device):
    """A checkpoint inside a checkpointed function, and ``checkpoint_sequential`` (dropout in its segments: the
    recomputed masks are the forward's), give the plain call's gradients."""
    m = nn.Sequential(nn.Linear(4, 6), nn.Dropout(0.3), nn.ReLU(), nn.Linear(6, 6), nn.Dropout(0.3), nn.Tanh(),
                      nn.Linear(6, 2)).double().to(device)
    x = torch.randn(5, 4, dtype=torch.float64).to(device).requires_grad_()

    def outer(a):
        b = checkpoint(m[:3], a, use_reentrant=False)
        return m[3:](b)

    for run in (lambda: outer(x), lambda: checkpoint(outer, x, use_reentrant=False),
                lambda: checkpoint_sequential(m, 3, x, use_reentrant=False),
                lambda: checkpoint_sequential(m, 3, x, use_reentrant=True)):
        torch.manual_seed(5)
        ref = m(x)
        ref.sum().backward()
        want = _grads(m, x)
        m.zero_grad()
        x.grad = None
        torch.manual_seed(5)
        y = run()
        y.sum().backward()
        np.testing.assert_allclose(y.detach().cpu().numpy(), ref.detach().cpu().numpy(), rtol=1e-12)
        for a, b in zip(_grads(m, x), want):
            np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-10, atol=1e-12)
        m.zero_grad()
        x.grad = None


def test_a_recomputation_that_differs_raises_checkpoint_error():
    """PyTorch's determinism check: a recomputation whose saved tensors have other shapes raises CheckpointError
    ("Recomputed values for the following tensors have different metadata than during the forward pass")."""
    calls = [0]

    def seg(a):
        calls[0] += 1
        k = 3 - calls[0] % 2
        return (a[:k] * a[:k]).sum()

    x = torch.randn(3, 4, requires_grad=True)
    y = checkpoint(seg, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata than during the forward pass"):
        y.backward()
    assert issubclass(CheckpointError, RuntimeError)


def test_retain_graph_second_backward_and_inputs_changed_in_place():
    """PyTorch: with ``retain_graph=True`` a second backward recomputes again (gradients add up); without it a
    second backward raises "Trying to backward through the graph a second time"; an input changed in place before
    the backward raises the version error."""
    x = torch.randn(3, requires_grad=True)
    y = checkpoint(lambda a: a.exp() * 2, x, use_reentrant=False)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.exp(x.detach().numpy()), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    z = x * 1
    y = checkpoint(lambda a: a.exp(), z, use_reentrant=False)
    z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_outputs_that_need_no_checkpoint_are_returned_as_they_are():
    """An input returned as it is, a non-tensor and a view output come back as PyTorch's: the input itself, the
    value, a view of its base."""
    x = torch.randn(3, 4, requires_grad=True)
    assert checkpoint(lambda a: a, x, use_reentrant=False) is x
    out = checkpoint(lambda a: (a.sin(), 3, {"c": a.cos()}), x, use_reentrant=False)
    assert out[1] == 3 and out[2]["c"].requires_grad and out[0].requires_grad
    v = checkpoint(lambda a: (a * 2)[0], x, use_reentrant=False)
    assert v._base is not None
    with torch.no_grad():
        assert not checkpoint(lambda a: a.sin(), x, use_reentrant=False).requires_grad


def test_a_compiled_step_with_a_checkpointed_dropout_block_replays_eagers_values():
    """A compiled training step whose block is checkpointed (dropout inside) gives eager's parameters bitwise on cpu
    and replays (the generator state the checkpoint keeps and sets back is part of the recorded call)."""
    def run(compiled: bool):
        m = _net("cpu", 0.3).float()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            h = checkpoint(m[:3], x, use_reentrant=False)
            loss = F.mse_loss(m[3](h), y)
            loss.backward()
            opt.step()
            return loss

        fn = torch.compile(step) if compiled else step
        torch.manual_seed(2)
        losses = [fn(torch.randn(6, 4), torch.randn(6, 3)).item() for _ in range(6)]
        if compiled:
            assert fn.replays >= 3
        return losses, [p.detach().clone() for p in m.parameters()]

    (la, pa), (lb, pb) = run(False), run(True)
    assert la == lb
    for a, b in zip(pa, pb):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_threads_checkpointing_at_once_get_their_own_gradients():
    """Each thread's checkpoint sees the nodes its own forward made: four threads checkpointing and backpropagating
    at once get the plain call's gradients."""
    errors = []
    barrier = threading.Barrier(4)

    def work(seed: int):
        try:
            g = torch.Generator().manual_seed(seed)
            w = torch.randn(8, 8, generator=g, dtype=torch.float64, requires_grad=True)
            x = torch.randn(4, 8, generator=g, dtype=torch.float64)
            barrier.wait()
            for _ in range(20):
                w.grad = None
                y = checkpoint(lambda a: (a @ w).tanh() @ w, x, use_reentrant=False)
                y.pow(2).sum().backward()
                got = w.grad.clone()
                w.grad = None
                ((x @ w).tanh() @ w).pow(2).sum().backward()
                np.testing.assert_allclose(got.numpy(), w.grad.numpy(), rtol=1e-12)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_checkpoint_module_names_and_arguments():
    """PyTorch's names (``CheckpointError``, ``detach_variable``, ``noop_context_fn``, ...) and argument checks:
    ``context_fn``/``debug`` only without reentrancy, ``determinism_check`` one of two, keywords only without
    reentrancy; a ``context_fn``'s forward context wraps the forward."""
    import coretorch.utils.checkpoint as C
    for name in ("CheckpointError", "CheckpointFunction", "check_backward_validity", "detach_variable",
                 "get_device_states", "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
                 "DefaultDeviceType"):
        assert name in C.__all__ and hasattr(C, name)
    x = torch.randn(2, requires_grad=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(torch.sin, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(torch.sin, x, use_reentrant=False, determinism_check="strict")
    d = C.detach_variable((x, 3))
    assert d[0].requires_grad and d[0].grad_fn is None and d[1] == 3
    seen = []

    class Ctx:
        def __enter__(self):
            seen.append("in")

        def __exit__(self, *a):
            seen.append("out")

    y = checkpoint(torch.sin, x, use_reentrant=False, context_fn=lambda: (Ctx(), Ctx()))
    assert seen == ["in", "out"]
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)


def test_parameters_swapped_back_before_the_backward_raise_checkpoint_error():
    """A module whose forward is checkpointed, run through ``torch.func.grad(functional_call(...))``: the transform's
    backward runs after functional_call put the module's own parameters back, so the recomputation reaches other
    leaves than the forward did (PyTorch refuses checkpoints under torch.func too). CheckpointError names this case
    instead of a gradient computed from the wrong parameters."""
    from coretorch.func import functional_call, grad

    class Checkpointed(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x):
            return checkpoint(self.lin, x, use_reentrant=False)

    m = Checkpointed()
    params = {k: v.detach() for k, v in m.named_parameters()}
    with pytest.raises(CheckpointError, match="parameters swapped since the forward"):
        grad(lambda p, x: functional_call(m, p, (x,)).sum())(params, torch.randn(4, 3))
