"""Session 18's own fixes around coretorch.compile (the reviews' are in test_review18a.py ... ): Module.compile
called again."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn


class _Breaks(nn.Module):
    """A forward with a graph break (``.item()`` steering Python): fine compiled, Unsupported under fullgraph."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        y = self.lin(x)
        return y * 2 if y.sum().item() > -1e9 else y


def test_module_compile_again_takes_the_new_options(device):
    """PyTorch's ``Module.compile(**kw)`` makes a new compiled call each time, so ``fullgraph=True`` given the second
    time holds (the graph break raises), and ``compile(disable=True)`` calls the module as it was.  coretorch kept
    the first call's capture: the second call's options were ignored, and ``disable=True`` changed nothing."""
    m = _Breaks().to(device)
    x = torch.randn(4, 3).to(device)
    want = m(x).detach().cpu().numpy()
    m.compile()
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)
    m.compile(fullgraph=True)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        m(x)
    m.compile(disable=True)
    assert "forward" not in m.__dict__
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)
    m.compile()
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)


def test_module_compile_again_keeps_an_instance_forward(device):
    """An instance ``forward`` (Accelerate's patch) that ``Module.compile`` wrapped stays what a later
    ``compile(...)``, or ``compile(disable=True)``, calls."""
    m = nn.Linear(3, 2).to(device)
    calls = []
    plain = m.forward

    def patched(x):
        calls.append(1)
        return plain(x) + 1
    m.forward = patched
    x = torch.randn(4, 3).to(device)
    want = patched(x).detach().cpu().numpy()
    m.compile()
    m.compile(fullgraph=True)
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)
    m.compile(disable=True)
    assert m.__dict__["forward"] is patched
    n = len(calls)
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), want)
    assert len(calls) == n + 1


def test_index_fill_counts_negative_indices_from_the_end(device):
    """PyTorch's ``index_fill_`` takes indices in [-size, size) (``torch.zeros(3).index_fill_(0, tensor([-1]), 5)``
    fills the last element; -4 raises IndexError), unlike index_copy/index_select.  coretorch raised IndexError for
    every negative index.  The value's gradient reads the filled positions with the indices counted from the end
    (PyTorch 2.13 raises an IndexError in that backward: here it is computed)."""
    x = torch.zeros(3, 4, device=device)
    x.index_fill_(1, torch.tensor([-1, 0], device=device), 5.0)
    want = np.zeros((3, 4), np.float32)
    want[:, [3, 0]] = 5.0
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    assert torch.tensor(1.0, device=device).index_fill_(0, torch.tensor([-1], device=device), 5.0).item() == 5.0
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        torch.zeros(3, device=device).index_fill_(0, torch.tensor([-4], device=device), 1.0).cpu()  # (opencl: at
        # the next host read, as CUDA's device-side asserts)
    with pytest.raises(IndexError, match="index -1 is out of bounds"):   # index_copy stays non-negative, as PyTorch
        torch.zeros(3, device=device).index_copy_(0, torch.tensor([-1], device=device),
                                                  torch.ones(1, device=device)).cpu()
    idx = torch.tensor([-1, 1, -3], device=device)
    a = torch.randn(2, 3, dtype=torch.float64, device=device, requires_grad=True)
    v = torch.tensor(0.7, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, v: a.index_fill(1, idx, v) * torch.arange(
        6.0, dtype=torch.float64, device=device).view(2, 3), (a, v))


# ---- a fresh batch object of the user's own class each call (compile/userrecords.py) --------------------------------
SCALE = 1.0


class _Batch:
    """A collate function's batch: attributes, a ``to`` method, ``__len__``, a property."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def to(self, device):
        new = object.__new__(type(self))
        new.__dict__.update({k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in vars(self).items()})
        return new

    def __len__(self):
        return len(self.x)

    @property
    def n(self):
        return self.x.shape[0]


class _ScaledBatch(_Batch):
    def inputs(self):
        return self.x * SCALE   # a global number: the guards do not key what a batch's methods read


class _ClassScaled(_Batch):
    k = 1.0   # a class attribute read through self

    def inputs(self):
        return self.x * self.k


class _Cfg:
    def __init__(self):
        self.scale = 1.0


class _HoldsCfg(_Batch):
    def __init__(self, x, y, cfg):
        super().__init__(x, y)
        self.cfg = cfg

    def inputs(self):
        return self.x * self.cfg.scale


def _train(device, compiled: bool, make, inputs, change=None, steps: int = 8):
    torch.manual_seed(0)
    m = nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def step(b):
        b = b.to(device)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(inputs(b)), b.y) * (len(b) / b.n)
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step
    g = np.random.default_rng(0)
    losses = []
    for i in range(steps):
        if change is not None and i == steps // 2:
            change()
        b = make(torch.tensor(g.normal(size=(5, 4)).astype(np.float32)), torch.tensor(g.integers(0, 3, 5)))
        losses.append(f(b).item())
    return losses, [p.detach().cpu().numpy() for p in m.parameters()], f


def test_a_fresh_batch_object_of_a_user_class_replays(device):
    """``step(Batch(x, y))`` with a new batch object each call (a class with a ``to`` method, ``__len__`` and a
    property): eager and compiled train alike, and the compiled step replays.  Before, such an object was keyed by
    identity: every call captured again until the recompile limit, then ran eagerly with a warning."""
    e = _train(device, False, _Batch, lambda b: b.x)
    c = _train(device, True, _Batch, lambda b: b.x)
    tol = {"rtol": 0.0, "atol": 0.0} if device == "cpu" else {"rtol": 1e-5, "atol": 1e-6}   # (cpu: bitwise)
    np.testing.assert_allclose(c[0], e[0], **tol)
    for a, b in zip(e[1], c[1]):
        np.testing.assert_allclose(b, a, **tol)
    assert c[2].replays >= 6


@pytest.mark.parametrize("what", ["global", "class_attribute", "held_object"])
def test_a_batch_whose_methods_read_other_state_is_not_opened(device, what):
    """A batch class whose method reads a global number, a class attribute or an object it holds: a change between
    calls must reach the step as in eager (such objects stay keyed by identity: a new object each call captures)."""
    cfg = _Cfg()

    def change():
        global SCALE
        if what == "global":
            SCALE = 3.0
        elif what == "class_attribute":
            _ClassScaled.k = 3.0
        else:
            cfg.scale = 3.0
    make = {"global": _ScaledBatch, "class_attribute": _ClassScaled,
            "held_object": lambda x, y: _HoldsCfg(x, y, cfg)}[what]
    runs = []
    for compiled in (False, True):
        global SCALE
        SCALE, _ClassScaled.k, cfg.scale = 1.0, 1.0, 1.0
        runs.append(_train(device, compiled, make, lambda b: b.inputs(), change)[0])
    SCALE, _ClassScaled.k = 1.0, 1.0
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-6)


# ---- a global named as an attribute the forward reads (guards.global_names: dunders.global_loads) -------------------
head = None   # a notebook's ``head = model(x)``: the name of an attribute the forward reads (``self.head``)
_GK = 1.0


class _Headed(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.head = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def test_a_global_named_like_an_attribute_the_forward_reads_is_not_keyed(device):
    """A notebook loop ``head = model(x)`` at module level, the model's forward reading ``self.head``: the guards
    took every name the forward's code holds (attributes too) as a global it may read, so the global ``head``, a new
    tensor each call, captured again at every call until the recompile limit (the compiled model never replayed).
    Globals are now the names the code loads as globals."""
    global head
    torch.manual_seed(0)
    net = _Headed().to(device)
    head = net(torch.randn(2, 4).to(device))   # (the global exists before the first capture)
    model = torch.compile(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(10):
        x = torch.randn(5, 4).to(device)
        head = model(x)
        want = net.head(torch.relu(net.body(x)))
        np.testing.assert_array_equal(head.detach().cpu().numpy(), want.detach().cpu().numpy())
        opt.zero_grad()
        head.sum().backward()
        opt.step()
    assert len(model._capture.cache) == 1 and model._capture.replays == 9
    head = None


def test_a_global_read_through_globals_is_still_keyed(device):
    """Code reading a global through ``globals()[name]`` names it only as a string: such code now keeps every name
    and identifier string as a possible global, so a change of the number reaches the replay.  Before, silent wrong
    result: the guards looked at strings only for ``getattr``/``vars``, and the replay kept the capture's number."""
    def f(x):
        return x * globals()["_GK"]
    c = torch.compile(f)
    x = torch.ones(2).to(device)
    global _GK
    try:
        for k in (1.0, 1.0, 2.0, 2.0, 3.0):
            _GK = k
            assert c(x).cpu().tolist() == [k, k]
    finally:
        _GK = 1.0


# ---- index arguments saved by the backward nodes (review 18a's outside-scope finding) -----------------------------
def _idx_cases(device):
    dev = {"device": device}
    i2 = lambda: torch.tensor([[0, 1], [2, 0], [1, 3]], **dev)   # noqa: E731
    i1 = lambda: torch.tensor([0, 2], **dev)   # noqa: E731
    r = lambda *s: torch.randn(*s, **dev)   # noqa: E731
    w4 = torch.arange(4.0, **dev)
    return {
        "gather": (i2, lambda x, i: x.gather(1, i)),
        "index_select": (i1, lambda x, i: x.index_select(1, i)),
        "scatter_add_src": (i2, lambda x, i, s=r(3, 2).requires_grad_(): x.detach().scatter_add(1, i, s) * w4),
        "index_add_src": (i1, lambda x, i, s=r(3, 2).requires_grad_(): x.detach().index_add(1, i, s) * w4),
        "scatter_src": (i2, lambda x, i: x.scatter(1, i, r(3, 2)) * w4),
        "scatter_value": (i2, lambda x, i: x.scatter(1, i, 2.0) * w4),
        "index_copy": (i1, lambda x, i: x.index_copy(1, i, r(3, 2)) * w4),
        "index_fill": (i1, lambda x, i: x.index_fill(1, i, 2.0) * w4),
        "advanced": (i1, lambda x, i: x[:, i]),
        "mask": (lambda: torch.tensor([True, False, True, True], **dev), lambda x, i: x[:, i] * torch.arange(
            3.0, **dev)),
        "take": (i1, lambda x, i: x.take(i) * torch.arange(2.0, **dev)),
        "index_put": (i1, lambda x, i: x.index_put((i,), r(2, 4)) * w4),
        "index_put_accumulate": (i1, lambda x, i: x.index_put((i,), r(2, 4), accumulate=True) * w4),
        "setitem": (i1, lambda x, i: _setitem(x, i, r(2, 4)) * w4),
        "put": (i1, lambda x, i: x.put(i, r(2)) * torch.arange(4.0, **dev)),
    }


def _setitem(x, i, v):
    y = x.clone()
    y[i] = v
    return y


@pytest.mark.parametrize("op", sorted(_idx_cases("cpu")))
def test_an_index_changed_in_place_before_the_backward_raises(device, op):
    """PyTorch saves an op's index tensors for its backward: ``i.zero_()`` between ``x.gather(1, i)`` and the
    backward raises "modified by an inplace operation".  coretorch eager read the changed indices and put the
    gradient at the wrong positions without a word (a changed mask raised numpy's broadcast error); a compiled
    module raised, so eager and compiled disagreed.  The gradients of an index left alone are unchanged."""
    make_index, f = _idx_cases(device)[op]
    x = torch.randn(3, 4, device=device, requires_grad=True)
    i = make_index()
    y = f(x, i)
    i.zero_() if i.dtype is not torch.bool else i.copy_(torch.tensor([False, True, True, True], device=device))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x.grad = None
    f(x, make_index()).sum().backward()   # (unchanged: a gradient where the indices point)
    assert x.grad is not None or op.endswith("_src")


def test_result_order_is_tensoriterators_dim_order():
    """``coretorch.plugins.result_order``: the public helper a backend lays new results out with (the opencl plugin
    uses it): row-major operands give None, a transposed one its dims' order, a broadcast operand (stride 0) leaves
    the choice to the next, and the result matches the strides of coretorch's own ``a.t() + b.t()``."""
    from coretorch.plugins import result_order
    assert result_order((3, 4), [(4, 1), (4, 1)]) is None
    assert result_order((3, 4), [(1, 3)]) == [1, 0]
    assert result_order((3, 4), [(0, 1), (1, 3)]) == [1, 0]
    assert result_order((2, 3, 4), [(1, 2, 6)]) == [2, 1, 0]
    a, b = torch.randn(4, 3).t(), torch.randn(4, 3).t()
    assert (a + b).stride() == (1, 3)


@pytest.mark.parametrize("e", [3.0, 3, -2.0, -2])
def test_pow_by_3_and_minus_2_multiplies_as_pytorch(device, e):
    """PyTorch's scalar-exponent pow kernels compute ``x ** 3`` as ``x * x * x`` and ``x ** -2`` as ``1 / (x * x)``
    (float32/float64; CPU and CUDA).  coretorch took numpy's pow (OpenCL's builtin on opencl), which differs in the
    last bit for about a third of float32 inputs, and on a PoCL build with a less accurate pow more."""
    x = np.random.default_rng(0).uniform(-3, 3, 1000).astype(np.float32)
    got = (torch.tensor(x, device=device) ** e).cpu().numpy()
    want = x * x * x if e == 3 else np.float32(1) / (x * x)
    np.testing.assert_array_equal(got, want)
    xd = torch.tensor(x[:20].astype(np.float64) + 4.0, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: t ** e, (xd,))
