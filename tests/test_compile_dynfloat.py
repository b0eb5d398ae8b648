"""Float arguments as inputs of the replay (coretorch/_compile/dynfloat.py, PyTorch's automatic dynamic floats):
after one value change a compiled step's float arguments are Syms of one more capture, or stay specialised where the
step takes them out of Python arithmetic (every installed device; results compared with eager's, bitwise)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch._compile import config


def _model(device):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).to(device)
    return m, torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)


def _compare(device, make_step, floats, kw=False):
    """Run ``make_step(m, opt)`` eagerly and compiled over batches with the float ``floats[i]`` at call i: the
    results and parameters must be eager's bit for bit; returns the compiled callable."""
    runs = []
    for compiled in (False, True):
        m, opt = _model(device)
        step = make_step(m, opt)
        s = torch.compile(step) if compiled else step
        g = torch.Generator().manual_seed(1)
        out = []
        for f in floats:
            x = torch.randn(16, 4, generator=g).to(device)
            y = torch.randint(0, 3, (16,), generator=g).to(device)
            out.append(s(x, y, t=f) if kw else s(x, y, f))
        runs.append((out, [p.detach().cpu().numpy() for p in m.parameters()], s))
    (eager, pe, _), (comp, pc, s) = runs
    assert repr(eager) == repr(comp)
    for a, b in zip(pe, pc):
        np.testing.assert_array_equal(a, b)
    return s, comp


def _step_of(loss_of):
    """A step factory for :func:`_compare`: zero_grad, ``loss_of(m, x, y, t)``, backward, step; returns the loss."""
    def make(m, opt):
        def step(x, y, t):
            opt.zero_grad()
            loss = loss_of(m, x, y, t)
            loss.backward()
            opt.step()
            return loss.detach()
        return step
    return make


def _mixup(m, opt):
    def step(x, y, lam):
        opt.zero_grad()
        out = m(lam * x + (1 - lam) * x.flip(0))
        loss = lam * F.cross_entropy(out, y) + (1 - lam) * F.cross_entropy(out, y.flip(0))
        loss.backward()
        opt.step()
        return loss.detach(), lam * 2
    return step


def test_float_argument_changing_every_call_replays(device):
    """PyTorch compiles such a step once more when ``lam`` changes, taking it as an input of the graph. Before, each
    new value captured again until recompile_limit and then every call ran eagerly."""
    r = random.Random(3)
    s, out = _compare(device, _mixup, [r.random() for _ in range(12)])
    # (captures: the first call's, with no .grad yet; the second's; the third's with lam as a Sym)
    assert len(s._cache) == 2 and s._dyn and s.replays == 9
    assert all(type(o[1]) is float for o in out)  # (the capture's own result too: no Sym escapes to the caller)


def _penalised(m, x, y, w):
    out = m(x)
    return F.cross_entropy(out, y) + w * out.pow(2).mean()


@pytest.mark.parametrize("kw", [False, True])
def test_weight_constant_for_a_while_then_changing(device, kw):
    """A KL weight annealed per epoch: several replays see one value, then it changes. On opencl a replay is lowered
    to its launches after two observed runs, which saw one value: a launch taking the number must stay a call, or
    the lowered replay kept the old weight."""
    s, _ = _compare(device, _step_of(_penalised), [0.1] * 4 + [0.2] * 4 + [0.3] * 4 + [0.5] * 4, kw=kw)
    assert s._dyn and s.replays == 13


def test_number_taken_out_of_python_arithmetic_stays_specialised(device):
    """``math.exp(t)`` is computed by C code: the capture sees a plain number. The Sym capture is compared with the
    specialised one, finds the number changed with the argument and keeps the function specialised."""
    make = _step_of(lambda m, x, y, t: F.cross_entropy(m(x) * math.exp(t), y))
    s, _ = _compare(device, make, [0.5, 0.7, 0.5, 0.9, 0.7])
    assert not s._dyn and s._dyn_failed


def test_float_reaching_a_non_elementwise_kernel_stays_specialised(device):
    """A dropout probability (a kernel that is not elementwise arithmetic on the number) is refused as a Sym."""
    def dropped(m, x, y, p):
        torch.manual_seed(5)
        return F.cross_entropy(F.dropout(m(x), p), y)

    s, _ = _compare(device, _step_of(dropped), [0.1, 0.2, 0.1, 0.3])
    assert not s._dyn


def test_branch_on_the_float(device):
    """A comparison on the argument is a check of the replay's prologue. A call going the other way used to run
    eagerly every time; as PyTorch (a graph for each outcome of its guards), that way is captured with Syms too and
    kept once a second value takes it (the first Sym capture of a way is compared with the captures before it)."""
    def branched(m, x, y, t):
        loss = F.cross_entropy(m(x) / t, y)
        return loss * 2 if t > 1.0 else loss

    s, _ = _compare(device, _step_of(branched), [0.5, 0.6, 0.7, 1.5, 0.8, 2.0, 0.9, 3.0, 0.4, 2.5, 0.3])
    # (captures: 0.5 without .grad, 0.6, 0.7 as Syms, 1.5 as Syms (its own value: the program differs from the
    # ones before), 2.0 as Syms (the program of 1.5's): the six calls after them replay)
    assert s._dyn and s.replays == 6 and [len(a) for a in s._alts.values()] == [2]


def test_each_way_of_a_branch_chain_replays(device):
    """``if t < 0.3 ... elif t < 0.6 ... else`` and ``min(1.0, t * t)`` in the last: four ways, each a Sym capture of
    its own (the number computed in each way is the replay's: ``t``, ``2 * t``, ``t * t``, a constant)."""
    def chained(m, x, y, t):
        loss = F.cross_entropy(m(x), y)
        if t < 0.3:
            return loss * t
        if t < 0.6:
            return loss * (2 * t)
        return loss * min(1.0, t * t)

    values = [0.9, 0.8, 0.7, 0.1, 0.2, 0.4, 0.5, 1.5, 0.25, 0.45, 0.65, 0.05, 0.55, 2.0]
    s, _ = _compare(device, _step_of(chained), values)
    # (1.5's way multiplies by the constant 1.0 where the captures before multiplied by a number of ``t``: a constant
    # that differs is not trusted, so 2.0 captured that way again, matching 1.5's)
    assert [len(a) for a in s._alts.values()] == [4] and s.replays == 7


def test_ways_beyond_the_recompile_limit_run_eagerly(device):
    """Every way of a branch is a capture counted against ``recompile_limit``; past it a call whose way no capture
    took runs eagerly (with the one warning), the ways captured still replay."""
    def bucketed(m, x, y, t):
        loss = F.cross_entropy(m(x), y)
        for edge in (0.2, 0.4, 0.6, 0.8):
            if t < edge:
                return loss * (t + edge)
        return loss * t

    values = [0.1, 0.15, 0.12, 0.3, 0.35, 0.5, 0.55, 0.7, 0.75, 0.9, 0.95, 0.13, 0.33, 0.93]
    with config.patch(recompile_limit=6), pytest.warns(UserWarning, match="recompile_limit"):
        s, _ = _compare(device, _step_of(bucketed), values)
    # (captures: 0.1 without .grad, 0.15, then each way's first value; 0.35, 0.55, 0.75, 0.13 and 0.33 replay, the
    # last way (0.9, 0.95, 0.93) runs eagerly)
    assert len(s._cache) == 6 and s.replays == 5


def test_float_made_into_a_tensor_stays_specialised(device):
    """``torch.tensor(t)`` copies a host array the capture made from the number: the two captures' constants
    differ, so the function stays specialised."""
    make = _step_of(lambda m, x, y, t: F.cross_entropy(m(x), y) * torch.tensor(t, device=x.device))
    s, _ = _compare(device, make, [0.5, 0.6, 0.5, 0.7])
    assert not s._dyn


def test_float_in_a_container_is_keyed_by_value(device):
    """Only top-level float arguments become inputs; one inside a dict batch stays guarded by its value."""
    make = _step_of(lambda m, x, y, cfg: F.cross_entropy(m(x), y) * cfg["w"])

    runs = []
    for compiled in (False, True):
        m, opt = _model(device)
        s = torch.compile(make(m, opt)) if compiled else make(m, opt)
        x, y = torch.randn(8, 4).to(device), torch.randint(0, 3, (8,)).to(device)
        runs.append([s(x, y, {"w": w}) for w in (0.5, 0.6, 0.5, 0.6)])
    assert repr(runs[0]) == repr(runs[1]) and not s._dyn


def test_float_argument_without_tensors_math():
    """A float used in plain Python arithmetic only, returned: the replay recomputes it."""
    def fn(x, a):
        return x * a, a * 3 - 1

    s = torch.compile(fn)
    for a in (0.5, 1.5, 2.5, -1.0):
        out, v = s(torch.ones(2), a)
        assert out.tolist() == [a, a] and v == a * 3 - 1 and type(v) is float
    assert s._dyn and s.replays == 2


def test_specialize_float_keeps_floats_keyed_by_value():
    """PyTorch's ``torch._dynamo.config.specialize_float = True``: every new value is a capture of its own."""
    def fn(x, a):
        return x * a

    with config.patch(specialize_float=True):
        s = torch.compile(fn)
        for a in (0.5, 1.5, 2.5):
            assert s(torch.ones(2), a).tolist() == [a, a]
        assert not s._dyn and len(s._cache) == 3 and s.replays == 0


@pytest.mark.parametrize("bucket", ["round", "searchsorted"])
def test_number_discretised_outside_python_arithmetic(bucket):
    """``round(float(t))`` or numpy's ``searchsorted`` give the same number for 0.3 and 0.4: a comparison of two
    captures alone would not see that the number came from ``t``. ``float(t)`` and numpy's conversion of the Sym are
    refused as such, so the function stays specialised and 0.8 is not replayed with 0.3's bucket."""
    def fn(x, t):
        if bucket == "round":
            return x * round(float(t))
        return x * int(np.searchsorted([0.5, 1.0], t))

    s = torch.compile(fn)
    values = (0.3, 0.4, 0.8, 0.9, 1.2)
    assert [s(torch.ones(2), t).tolist() for t in values] == [fn(torch.ones(2), t).tolist() for t in values]
    assert not s._dyn


def test_recompile_log_says_when_floats_become_inputs(caplog):
    def f(x, beta):
        return x * beta

    def g(x, beta):
        return x * math.exp(beta)

    with caplog.at_level("INFO", logger="coretorch._dynamo.recompiles"):
        for fn in (f, g):
            s = torch.compile(fn)
            for b in (0.1, 0.2, 0.3):
                s(torch.ones(2), b)
    text = caplog.text
    assert "function name: 'f'" in text and "are inputs of the replay from now on: argument 1" in text
    assert "function name: 'g', line number" in text and "stay specialised to their values" in text
