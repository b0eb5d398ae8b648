"""Host reads at the return of a compiled function (``return loss.item()``: coretorch/_compile/tailreads.py): kept in
the replay where nothing but the return follows them, a graph break anywhere else (every installed device)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch._compile import config


def _setup(device):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).to(device)
    return m, torch.optim.Adam(m.parameters(), lr=0.01)


def _batches(device, n=6):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 4, generator=g).to(device), torch.randint(0, 3, (16,), generator=g).to(device))
            for _ in range(n)]


def _run(device, make_step, compiled, **kw):
    m, opt = _setup(device)
    step = make_step(m, opt)
    s = torch.compile(step, **kw) if compiled else step
    out = [s(x, y) for x, y in _batches(device)]
    return out, [p.detach().cpu().numpy().copy() for p in m.parameters()], s


def _trained(m, opt, x, y):
    """One training step's work (zero_grad, forward, backward, step): the model's output and the loss."""
    opt.zero_grad()
    out = m(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    return out, loss


def _item_only(m, opt):
    def step(x, y):
        _, loss = _trained(m, opt, x, y)
        return loss.item()
    return step


def _dict_of_reads(m, opt):
    def step(x, y):
        out, loss = _trained(m, opt, x, y)
        acc = (out.argmax(1) == y).float().mean()
        return {"loss": loss.item(), "acc": acc.item(), "out": out.detach()}
    return step


def _stored_then_returned(m, opt):
    def step(x, y):
        out, loss = _trained(m, opt, x, y)
        value = loss.item()
        return value, out.argmax(1).tolist(), [out.detach().sum(0).tolist()]
    return step


def _single_key(m, opt):
    def step(x, y):
        _, loss = _trained(m, opt, x, y)
        return {"loss": loss.item()}
    return step


@pytest.mark.parametrize("make_step", [_item_only, _dict_of_reads, _stored_then_returned, _single_key])
def test_reads_at_the_return_replay(device, make_step):
    """PyTorch compiles a step that ends in ``return loss.item()`` up to the read. Before, the read was a graph break
    and every call ran eagerly; now the replay runs the kernels and reads the value: results and parameters are
    eager's (bitwise on every device: no fusion crosses the read's array)."""
    eager, pe, _ = _run(device, make_step, False)
    comp, pc, s = _run(device, make_step, True)
    assert s.replays >= 3 and s.launches > 0
    assert repr(eager) == repr(comp)
    for a, b in zip(pe, pc):
        np.testing.assert_array_equal(a, b)
    flat = comp[-1] if isinstance(comp[-1], (tuple, list)) else [comp[-1]]
    assert not any(type(v).__name__ == "Placeholder" for v in flat)


def test_read_then_in_place_change(device):
    """The value is read where the eager call reads it: an in-place change after the read (in the return) does not
    reach it."""
    def step(x):
        y = x * 2
        return y.sum().item(), y.add_(1)

    eager = [step(torch.full((3,), float(i), device=device)) for i in range(4)]
    s = torch.compile(step)
    comp = [s(torch.full((3,), float(i), device=device)) for i in range(4)]
    assert s.replays >= 1
    assert [e[0] for e in eager] == [c[0] for c in comp] == [0.0, 6.0, 12.0, 18.0]
    assert [e[1].tolist() for e in eager] == [c[1].tolist() for c in comp]


def _reasons(fn, *args):
    return torch.compiler.explain(fn, *args).break_reasons


def test_reads_followed_by_python_still_break():
    """A read whose value the Python after it uses (a print, arithmetic, a branch, an append, a helper's return, a
    try block, an op taking the value) stays a graph break: a replay could not repeat it."""
    w = torch.ones(3, requires_grad=True)
    log: list = []

    def printed(x):
        v = (w * x).sum().item()
        print(v)
        return v

    def scaled(x):
        return (w * x).sum().item() * 2

    def branched(x):
        return 1.0 if (w * x).sum().item() > 0 else 0.0

    def appended(x):
        log.append((w * x).sum().item())
        return x

    def helper(x):
        return (w * x).sum().item()

    def via_helper(x):
        return helper(x)

    def in_try(x):
        try:
            return (w * x).sum().item()
        except RuntimeError:
            return None

    def fed_back(x):
        y = (w * x).detach()
        v = y.sum().item()
        return y.mul(v)

    x = torch.ones(3)
    for fn in (printed, scaled, branched, appended, via_helper, in_try, fed_back):
        assert any("reads a tensor value" in r for r in _reasons(fn, x)), fn.__name__


def test_read_at_return_explained_as_no_break():
    w = torch.ones(3, requires_grad=True)

    def fn(x):
        return (w * x).sum().item()

    assert _reasons(fn, torch.ones(3)) == []


def test_fullgraph_raises_unless_capture_scalar_outputs():
    """PyTorch's ``fullgraph=True`` refuses ``.item()`` unless ``capture_scalar_outputs`` is set."""
    def fn(x):
        return (x * 2).sum().item()

    with pytest.raises(torch._dynamo.exc.Unsupported, match="Tensor.item"):
        torch.compile(fn, fullgraph=True)(torch.ones(2))
    with config.patch(capture_scalar_outputs=True):
        s = torch.compile(fn, fullgraph=True)
        assert [s(torch.full((2,), float(i))) for i in range(3)] == [0.0, 4.0, 8.0]
        assert s.replays == 2


def test_subclass_receiver_in_the_return_breaks():
    """A method of a Tensor subclass after the read may run user code (``__torch_function__``): a graph break."""
    calls = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    def fn(x, t):
        return x.sum().item(), t.detach()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.ones(2).as_subclass(Logged)
        assert any("reads a tensor value" in r for r in _reasons(fn, torch.ones(2), t))


_HIST: list = []


def test_read_appended_to_a_global_or_closure_list(device):
    """``hist.append(loss.item())`` of a list held by a global or a closure cell, then the return: the replay
    appends the value it reads, to the list the name holds at that call (a list bound anew between calls gets it),
    as the eager call does. Before, the read was a graph break and every call ran eagerly."""
    global _HIST
    _HIST = []
    m, opt = _setup(device)
    closure_hist: list = []

    def step(x, y):
        _, loss = _trained(m, opt, x, y)
        _HIST.append(loss.item())
        closure_hist.append(loss.item())
        return loss.detach()

    s = torch.compile(step)
    batches = _batches(device, 8)
    for x, y in batches[:4]:
        s(x, y)
    first, _HIST = _HIST, []
    for x, y in batches[4:]:
        s(x, y)
    assert s.replays == 5  # (captures: the first two calls, and the first with the new list)
    m2, opt2 = _setup(device)
    want = [_trained(m2, opt2, x, y)[1].item() for x, y in batches]
    assert first + _HIST == want and closure_hist == want and len(_HIST) == 4
    assert all(type(v) is float for v in closure_hist)


def test_appends_that_stay_graph_breaks():
    """An attribute's list, a list the function makes, an appended expression: graph breaks as before."""
    w = torch.ones(3, requires_grad=True)

    class Log:
        hist: list = []

    log = Log()

    def attribute(x):
        log.hist.append((w * x).sum().item())
        return x

    def local(x):
        out: list = []
        out.append((w * x).sum().item())
        return out

    def expression(x):
        _HIST.append((w * x).sum().item() * 2)
        return x

    for fn in (attribute, local, expression):
        assert any("reads a tensor value" in r for r in _reasons(fn, torch.ones(3))), fn.__name__
