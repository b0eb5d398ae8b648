"""Float arguments of a compiled module's forward as inputs of its replay (dynfloat.py, dynways.py; module.py): the
forward's Sym capture replays at any value, its recorded backward takes the numbers it needs from the forward's
context (every installed device; losses, outputs and parameters compared with eager's, bitwise)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


class _Scaled(torch.nn.Module):
    """A forward whose float argument reaches the forward's and the backward's kernels, and a branch on it."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 3)

    def forward(self, x, t, *, scale=1.0):
        out = self.l2(torch.relu(self.l1(x * t))) / t
        if t > 1.0:
            out = out * (2 - t)
        return out * scale


def _train(device, make, floats, compiled, call=None):
    """Train ``make()`` on ``device`` for ``len(floats)`` steps with the float ``floats[i]`` at step i; the losses,
    the parameters and the compiled module's capture."""
    torch.manual_seed(0)
    m = make().to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    model = torch.compile(m) if compiled else m
    g = torch.Generator().manual_seed(1)
    losses = []
    for t in floats:
        x = torch.randn(16, 4, generator=g).to(device)
        y = torch.randint(0, 3, (16,), generator=g).to(device)
        opt.zero_grad()
        out = call(model, x, t) if call is not None else model(x, t)
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    cap = model.__dict__.get("_capture") if compiled else None
    return losses, [p.detach().cpu().numpy() for p in m.parameters()], cap


def _compare(device, make, floats, call=None):
    (le, pe, _), (lc, pc, cap) = (_train(device, make, floats, c, call) for c in (False, True))
    assert le == lc
    for a, b in zip(pe, pc):
        np.testing.assert_array_equal(a, b)
    return cap


def test_module_float_argument_replays_at_every_value(device):
    """``model(x, t)`` with a new ``t`` each step: before, each value was a capture of its own until
    recompile_limit, then every call ran eagerly. Now the second capture with ``t`` as a Sym serves every value of
    each way of ``t > 1.0``; the backward's ``/ t`` and ``* (2 - t)`` take the call's numbers."""
    r = random.Random(3)
    cap = _compare(device, _Scaled, [r.random() * 2 for _ in range(14)])
    assert cap.dyn and not cap.dyn_failed and [len(a) for a in cap.alts.values()] == [2] and cap.replays == 10


def test_module_keyword_float_and_two_forwards_before_one_backward(device):
    """A keyword float (``scale=``), and two forwards with different numbers summed before one backward: each
    node's backward takes its own forward's numbers."""
    def call(model, x, t):
        return model(x, t, scale=t / 2) + model(x.flip(0), t * 0.5, scale=0.25)

    r = random.Random(5)
    cap = _compare(device, _Scaled, [0.2 + r.random() * 0.7 for _ in range(10)], call)
    assert cap.dyn and cap.replays == 18  # (of 20 forwards: the first, and the second as Syms, captured)


class _Dropped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 3)

    def forward(self, x, p):
        torch.manual_seed(7)
        return F.dropout(self.l(x), p)


class _Exp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 3)

    def forward(self, x, t):
        return self.l(x) * math.exp(t)


@pytest.mark.parametrize("make", [_Dropped, _Exp], ids=["dropout_probability", "math_exp"])
def test_module_float_taken_out_of_arithmetic_stays_specialised(device, make):
    """A dropout probability (a kernel that is not elementwise arithmetic) and ``math.exp(t)`` (C code reading
    the number) keep the forward specialised to its values, each value a capture, as before."""
    cap = _compare(device, make, [0.1, 0.2, 0.1, 0.3, 0.2])
    assert not cap.dyn and cap.dyn_failed


def test_module_float_argument_under_no_grad(device):
    """Inference (no backward recorded) with a temperature argument: the Sym capture serves every value."""
    torch.manual_seed(0)
    m = _Scaled().to(device).eval()
    cm = torch.compile(m)
    x = torch.randn(5, 4).to(device)
    with torch.no_grad():
        for t in (0.3, 0.4, 0.5, 0.6, 1.5, 1.7, 0.7, 1.9):
            assert torch.equal(cm(x, t), m(x, t))
    cap = cm.__dict__["_capture"]
    assert cap.dyn and cap.replays == 4  # (0.3 and 0.4 captured, 0.5 as Syms, 1.5 its way, 1.7 its way's match)
