"""Review 23f: coretorch.compile with mixed precision (autocast, GradScaler), activation checkpointing, grad-mode
regions inside and around compiled code, ``requires_grad_`` toggled between calls, and shapes that change between
calls.  Each test runs the program eagerly and compiled and compares call by call (bitwise on cpu, 1e-5 relative on
opencl); PyTorch's eager behaviour is the spec, each test says what PyTorch does and what coretorch did before the
fix."""
from __future__ import annotations

import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn

from _compile_helpers import close


def _model(device: str, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)


def _batches(device: str, n: int, sizes=None, seed: int = 1) -> list:
    torch.manual_seed(seed)
    sizes = sizes or [5] * n
    return [(torch.randn(b, 4).to(device), torch.randn(b, 2).to(device)) for b in sizes]


def test_a_replayed_steps_loss_keeps_its_consumed_graph(device):
    """PyTorch: a training step returns ``loss`` after ``loss.backward()``; eager and compiled, it still has its
    (freed) graph: ``requires_grad`` True, ``is_leaf`` False, ``grad_fn`` a ``MseLossBackward0``, and a second
    ``loss.backward()`` raises "Trying to backward through the graph a second time".  coretorch's capture call
    returned that, but its replays returned a plain tensor (``requires_grad`` False, ``grad_fn`` None) whose
    ``backward()`` raised another error; fed back as an argument, the changed ``requires_grad`` was also a new
    guard."""
    m = _model(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    @torch.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        return loss, loss * 2

    for x, y in _batches(device, 4):
        loss, twice = step(x, y)
        assert loss.requires_grad and not loss.is_leaf
        assert loss.grad_fn is not None and loss.grad_fn.name() == "MseLossBackward0"
        assert type(twice.grad_fn).__name__ == "MulBackward0" and twice.requires_grad
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            twice.backward()
        assert loss.detach().requires_grad is False
    assert step.replays >= 2


def test_a_step_whose_loss_is_passed_back_keeps_replaying(device):
    """PyTorch: a step that takes the previous loss (a running average ``ema = 0.9 * prev + 0.1 * loss``) sees it
    with ``requires_grad`` True at every call, eager or compiled.  coretorch's replays returned it without
    ``requires_grad``, so each call alternated between the two and captured again until the recompile limit; the
    values stay eager's."""
    m = _model(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def step(x, y, prev):
        opt.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        return loss, (0.9 * prev + 0.1 * loss.detach()).detach()

    batches = _batches(device, 8)
    results = []
    for compiled in (False, True):
        m2 = _model(device)
        m.load_state_dict(m2.state_dict())
        opt.state.clear()
        fn = torch.compile(step) if compiled else step
        prev = torch.zeros(()).to(device)
        losses = []
        for x, y in batches:
            loss, ema = fn(x, y, prev)
            prev = loss  # the loss itself, with its graph: the next call's argument
            losses.append((loss.detach().clone(), ema, loss.requires_grad))
        results.append(losses)
    for (a, ea, ra), (b, eb, rb) in zip(*results):
        close(device, a, b, "loss")
        close(device, ea, eb, "ema")
        assert ra is rb is True
    assert fn.replays >= 5
