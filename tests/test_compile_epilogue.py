"""coretorch.compile's fusion across reshapes (coretorch/_compile/fusion.py): elementwise chains continue through
contiguous views, a consumer of several groups joins the ones it legally can, and the replay equals eager bitwise on
every device (devices without a fusion hook replay the same launches)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from _compile_helpers import fusing, twice


@pytest.fixture(autouse=True)
def _fresh():
    torch.compiler.reset()
    yield
    torch.compiler.reset()


def _same(eager, out):
    for e, o in zip(eager if isinstance(eager, tuple) else (eager,), out if isinstance(out, tuple) else (out,)):
        assert tuple(e.shape) == tuple(o.shape)
        np.testing.assert_array_equal(e.detach().cpu().numpy(), o.detach().cpu().numpy())


def _data(device, *shapes):
    rng = np.random.default_rng(0)
    return [torch.tensor(rng.standard_normal(s).astype(np.float32), device=device) for s in shapes]


def test_chain_continues_through_views(device):
    x, w = _data(device, (2, 12), (4, 6))

    def f(x, w):
        y = (x * 2 + 1).view(4, 6)                    # a contiguous view of a group's value
        z = (y.relu() + w).reshape(-1)                # w: contiguous, the size of the chain
        return (z.exp() * 3).view(3, 8)

    eager, out, c = twice(f, x, w)
    _same(eager, out)
    if fusing(device):
        # 6 kernels and 3 views: one kernel, and the view of its value that is the result
        assert (c.launches, c.launches_before_fusion) == (2, 9)
    else:
        assert c.launches == c.launches_before_fusion


def test_views_that_must_stay(device):
    x, b, w = _data(device, (2, 12), (12,), (3, 8))

    def broadcast(x, b, w):
        y = (x + b).view(3, 8)                        # a broadcast operand in another shape: not read linearly
        return (y * w).tanh()

    def read_elsewhere(x, w):
        y = (x * 2).view(3, 8)                        # the view is a result: the group's value is materialised
        return y, (y + w).sigmoid()

    def transposed(x):
        y = (x * 2).t().reshape(24)                   # a transposed value: reshape copies, no linear reading
        return y + 1

    for fn, args in ((broadcast, (x, b, w)), (read_elsewhere, (x, w)), (transposed, (x,))):
        eager, out, c = twice(fn, *args)
        _same(eager, out)
        assert c.launches <= c.launches_before_fusion


def test_consumer_joins_the_groups_it_legally_can(device):
    x, y = _data(device, (4, 5), (4, 5))

    def f(x, y):
        z = torch.zeros(4, 5, device=x.device)        # a group of its own, then an indexed write into it
        z[torch.arange(4, device=x.device), torch.tensor([0, 1, 2, 3], device=x.device)] = 1.0
        e = (x * 0.5).exp()
        return z - e * y                              # joins e's group across the write, not z's

    eager, out, c = twice(f, x, y)
    _same(eager, out)
    if fusing(device):
        assert c.launches_before_fusion - c.launches >= 3, (c.launches, c.launches_before_fusion)


def test_in_place_update_through_a_view(device):
    """An in-place update of a persistent buffer that a view of the chain feeds: the buffer ends as eager's."""
    def make():
        buf = torch.zeros(4, 6, device=device)

        def step(x):
            with torch.no_grad():
                buf.mul_(0.5).add_((x * 2).sigmoid().view(4, 6))
            return buf.sum()
        return step, buf

    x = _data(device, (24,))[0]
    eager, ref = make()
    step, got = make()
    c = torch.compile(step)
    for _ in range(3):
        eager(x)
        c(x)
    np.testing.assert_array_equal(ref.cpu().numpy(), got.cpu().numpy())


def test_linearly_read_operand_that_changes_layout(device):
    w = torch.randn(24, device=device)

    def f(x):
        return (x + w).view(4, 6).relu() * 2          # w is read at the linear index of the (4, 6) kernel

    x = torch.randn(24, device=device)
    c = torch.compile(f)
    c(x)
    _same(f(x), c(x))
    w.data = torch.randn(24, 2, device=device)[:, 0]  # now a strided view: read through a contiguous copy
    _same(f(x), c(x))
    assert c.replays == 2


def test_residual_add_then_layer_norm(device):
    """The pre-LN block's ``layer_norm(x + y)`` (a prologue of the layer norm kernel where the device has one): the
    sum and the normalised rows as eager, bitwise, forward and backward, and in a module capture."""
    import coretorch.nn.functional as F
    x, y, w, b = _data(device, (4, 6, 32), (4, 6, 32), (32,), (32,))
    pos = _data(device, (6, 32))[0]

    def f(x, y):
        s = x + y                                     # the residual stream: read again below
        h = F.layer_norm(s, (32,), w, b)
        e = F.layer_norm(x + pos, (32,), w, b)        # a broadcast operand: not a prologue
        t = s * 2                                     # read between the add and its layer norm
        return s, h, e, F.layer_norm(t + 1.0, (32,), w, b), t

    eager, out, c = twice(f, x, y)
    _same(eager, out)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln, self.lin = torch.nn.LayerNorm(32), torch.nn.Linear(32, 32)

        def forward(self, x):
            return self.ln(x + self.lin(x))

    def train(compiled):
        torch.manual_seed(0)
        model = Block().to(device)
        m = torch.compile(model) if compiled else model
        xs = x.detach().clone().requires_grad_(True)
        for _ in range(3):
            model.zero_grad()
            xs.grad = None
            (m(xs) * y).sum().backward()
        return [xs.grad] + [p.grad for p in model.parameters()]
    for a, g in zip(train(False), train(True)):
        _same(a, g)


def test_split_backward_joins_the_pieces_gradients(device):
    """split's pieces share one SplitBackward0 (SplitWithSizesBackward0 for a list of sizes), as PyTorch: their
    gradients are concatenated (zeros for a piece without one), in-place ops on a piece still reach the input,
    and the formula is differentiable (gradcheck in float64)."""
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((5, 7))
    x = torch.tensor(x_np, device=device, requires_grad=True)
    a, b, c = x.split(3, dim=1)
    assert [type(p.grad_fn).__name__ for p in (a, b, c)] == ["SplitBackward0"] * 3 and a._base is x
    assert type(x.split([2, 5], 1)[0].grad_fn).__name__ == "SplitWithSizesBackward0"
    assert type(x.chunk(2, 0)[1].grad_fn).__name__ == "SplitBackward0"
    (a * 2).sum().backward(retain_graph=True)                   # b and c get no gradient: zeros
    expect = np.zeros_like(x_np)
    expect[:, :3] = 2
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expect)
    x.grad = None
    (a.sum() + (c * c).sum()).backward()
    expect[:, :3], expect[:, 6:] = 1, 2 * x_np[:, 6:]
    np.testing.assert_allclose(x.grad.cpu().numpy(), expect, rtol=1e-12)
    y = x.clone()
    p, q = y[:, :4], y[:, 4:]  # (slices: split's pieces refuse in-place ops where autograd records them)
    q.mul_(3)                                                   # an in-place op on a piece: the input's graph too
    x.grad = None
    (p.sum() + 2 * y.sum()).backward()
    expect = np.full_like(x_np, 3.0)
    expect[:, 4:] = 6.0
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expect)
    assert torch.autograd.gradcheck(lambda t: [u * (k + 1) for k, u in enumerate(t.split(2, 0))][1].sin(),
                                    (torch.tensor(x_np[:, :3], device=device, requires_grad=True),))
    assert torch.autograd.gradgradcheck(lambda t: (t.split([1, 2], 1)[1] ** 2),
                                        (torch.tensor(x_np[:3, :3], device=device, requires_grad=True),))
