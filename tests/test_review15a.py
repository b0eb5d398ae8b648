"""Review 15a of coretorch.compile: compiled functions and modules for inference and general tensor code (outputs
and their aliasing, arguments, shapes, modes), on every installed device.  Each test runs the same calls eagerly
and compiled and compares what the caller sees."""
from __future__ import annotations

import collections
import dataclasses
import fractions
import functools
import types

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


def test_the_same_tensor_returned_twice_is_one_tensor(device):
    """``y = x * 2; return (y, y), {"a": y}``: eager returns one tensor three times, so ``out[0].add_(1)`` is seen
    through ``out[1]``; the replay made a tensor for each place (same array, but ``is`` false and the version
    counters apart).  A detached twin (another tensor over the same array) stays its own tensor."""
    def f(x):
        y = x * 2
        z = y.detach()
        return (y, y), {"a": y, "b": [z, z]}, y + 1

    for fn in (f, torch.compile(f)):
        for i in range(3):
            (a, b), d, _ = fn(torch.ones(3, device=device) * i)
            assert a is b and d["a"] is a and d["b"][0] is d["b"][1] and d["b"][0] is not a
            a.add_(1)
            assert a._version == b._version and d["a"]._version == a._version
            np.testing.assert_array_equal(b.cpu().numpy(), np.full(3, 2.0 * i + 1))


def test_a_torch_size_in_the_result(device):
    """``return x.size(), x * 2``: the result's tuple subclasses were all rebuilt as named tuples
    (``Size(8, 3)``), so every replay raised ``TypeError: tuple expected at most 1 argument``."""
    nt = collections.namedtuple("nt", "shape n")

    def f(x):
        return x.size(), x * 2, nt(x.shape[1:], x.shape[0])

    c = torch.compile(f)
    for i in range(4):
        x = torch.ones(2 + i // 2, 3, device=device)
        size, y, named = c(x)
        assert type(size) is torch.Size and size == (2 + i // 2, 3) and named == nt(torch.Size([3]), 2 + i // 2)
        np.testing.assert_array_equal(y.cpu().numpy(), np.full((2 + i // 2, 3), 2.0))
    assert c.replays == 2


class _Returns(nn.Module):
    def __init__(self, what: str):
        super().__init__()
        self.lin, self.what = nn.Linear(4, 4), what

    def forward(self, x):
        y = self.lin(x)
        if self.what == "input":
            return y, x
        if self.what == "parameter":
            return y, self.lin.weight
        if self.what == "twice":
            return y, y
        x.mul_(2)  # "input modified": the backward needs x as it was (eager raises at the backward)
        return y


@pytest.mark.parametrize("what", ["input", "parameter"])
@pytest.mark.parametrize("grad", [False, True])
def test_a_compiled_module_returning_an_input_or_a_parameter_itself(device, what, grad):
    """``return y, x`` / ``return y, self.lin.weight``: eager returns that tensor (``requires_grad`` true, its
    version counter); the replay returned a new tensor over its memory without ``requires_grad``, so the caller's
    in-place change of it (guarded by ``requires_grad`` here) changed the input or the weight behind autograd."""
    seen = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _Returns(what).to(device)
        f = torch.compile(m) if compiled else m
        res = []
        for i in range(4):
            x = torch.full((2, 4), float(i), device=device, requires_grad=True)
            with torch.enable_grad() if grad else torch.no_grad():
                y, t = f(x)
            res.append((t is (x if what == "input" else m.lin.weight), t.requires_grad))
            if not t.requires_grad:
                t.add_(1)
            res.append((x.detach().cpu().numpy().tolist(), m.lin.weight.detach().cpu().numpy().tolist()))
        seen.append(res)
    assert seen[0] == seen[1]


@pytest.mark.parametrize("grad", [False, True])
def test_a_compiled_module_returning_one_tensor_twice(device, grad):
    """``return y, y``: one tensor in eager (``a.add_(1)`` is seen through ``b``); the replay returned two.  With
    grad, the backward of both adds their gradients."""
    for compiled in (False, True):
        torch.manual_seed(0)
        m = _Returns("twice").to(device)
        f = torch.compile(m) if compiled else m
        for i in range(4):
            x = torch.full((2, 4), float(i), device=device)
            with torch.enable_grad() if grad else torch.no_grad():
                a, b = f(x)
            assert a is b
            if grad:
                m.zero_grad()
                (a.sum() + 2 * b.sum()).backward()
                np.testing.assert_allclose(m.lin.bias.grad.cpu().numpy(), np.full(4, 6.0))
                a = a.detach()
            a.add_(1)
            np.testing.assert_allclose(b.detach().cpu().numpy(), (m.lin(x) + 1).detach().cpu().numpy(), rtol=1e-6)


def test_a_compiled_module_whose_backward_would_raise_runs_its_forward(device):
    """A forward that modifies its input in place after a matmul saved it, called with grad enabled but no
    backward (inference without no_grad): eager returns the output and raises only at a backward; the capture
    recorded the backward at once and raised from the forward call."""
    torch.manual_seed(0)
    m = _Returns("input modified").to(device)
    ref = [m(torch.full((2, 4), float(i), device=device)).detach().cpu().numpy() for i in range(3)]
    f = torch.compile(m)
    for i in range(3):
        x = torch.full((2, 4), float(i), device=device)
        y = f(x)
        np.testing.assert_array_equal(y.detach().cpu().numpy(), ref[i])
        np.testing.assert_array_equal(x.cpu().numpy(), np.full((2, 4), 2.0 * i))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_data_ptr_read_in_the_function(device):
    """``x.data_ptr()`` in the function (an aliasing check, a cache key): another address each call, so the replay
    returned the capture's number.  A graph break, as PyTorch's."""
    def f(x, y):
        return x * 0 + float(x.data_ptr() == y.data_ptr()), x.data_ptr() % 9973

    c = torch.compile(f)
    keep = [torch.ones(16, device=device) for _ in range(8)]
    for i in range(4):
        x = keep[2 * i]
        y = x if i % 2 else keep[2 * i + 1]
        same, ptr = c(x, y)
        assert ptr == x.data_ptr() % 9973
        np.testing.assert_array_equal(same.cpu().numpy(), np.full(16, float(i % 2)))


class _Kw(nn.Module):
    def forward(self, x, mask=None, bias=None, scale=1.0, shift=1.0):
        y = x * scale + shift * 10
        if mask is not None:
            y = y * mask
        if bias is not None:
            y = y + bias
        return y


@pytest.mark.parametrize("how", ["function", "module"])
def test_the_keyword_names_of_a_call(device, how):
    """``f(x, mask=t)`` then ``f(x, bias=t)`` (or ``scale=2.0`` then ``shift=2.0``): the guard keyed the keyword
    values only, not their names, so the second call replayed the first one's capture."""
    x, t = torch.full((3,), 2.0, device=device), torch.full((3,), 3.0, device=device)
    calls = [{"mask": t}, {"mask": t}, {"bias": t}, {"bias": t}, {"scale": 2.0}, {"shift": 2.0}, {"mask": t}]
    m = _Kw()
    f = torch.compile(m) if how == "module" else torch.compile(lambda x, **kw: m(x, **kw))
    for kw in calls:
        np.testing.assert_array_equal(f(x, **kw).cpu().numpy(), m(x, **kw).cpu().numpy())


@pytest.mark.parametrize("what", ["view of an input", "detached input", "view of a returned temporary",
                                  "two views of a temporary"])
def test_a_returned_view_shares_the_version_counter_of_its_base(device, what):
    """``return x[1:]`` (or ``(y, y[1:])``, ``(y[0], y[1])``): eager's view shares its base's version counter, so
    ``z = (w * v).sum(); base.add_(1); z.backward()`` raises (``v`` saved by the mul was modified).  The replay made
    the view a tensor with a counter of its own: the backward ran on the modified values without a word."""
    fns = {"view of an input": lambda x: x[1:], "detached input": lambda x: x.detach()[1:],
           "view of a returned temporary": lambda x: (lambda y: (y, y[1:]))(x * 2),
           "two views of a temporary": lambda x: (lambda y: (y[:2], y[1:]))(x * 2)}
    for f in (fns[what], torch.compile(fns[what])):
        for i in range(3):
            x = torch.ones(3, device=device) * i
            out = f(x)
            base, v = out if isinstance(out, tuple) else (x, out)
            w = torch.ones(2, device=device, requires_grad=True)
            z = (w * v).sum()
            base.add_(1)
            assert v._version == 1
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                z.backward()


@pytest.mark.parametrize("what", ["argument add_", "argument view", "argument setitem", "closure tensor",
                                  "module buffer"])
def test_a_replay_bumps_the_version_counter_of_what_it_modifies(device, what):
    """A function modifying its argument, a view of it or a closure tensor in place, or a module updating its
    running statistics: eager bumps their version counters, so a backward that saved the tensor before the call
    raises.  The replay wrote the arrays and left the counters alone: the backward ran on the new values."""
    bn = nn.BatchNorm1d(3).to(device)
    w0 = torch.ones(3, device=device)
    fns = {"argument add_": lambda x: x.add_(1) * 2, "argument view": lambda x: x[1:].add_(1) * 2,
           "argument setitem": lambda x: (x.__setitem__(0, 5.0), x * 2)[1], "closure tensor": lambda x: w0.add_(x),
           "module buffer": bn}
    for f in (fns[what], torch.compile(fns[what])):
        for i in range(3):
            x = torch.ones(4, 3, device=device) if what == "module buffer" else torch.ones(3, device=device)
            saved = {"closure tensor": w0, "module buffer": bn.running_mean}.get(what, x)
            w = torch.ones(3, device=device, requires_grad=True)
            z = (w * saved).sum()
            before = saved._version
            with torch.no_grad():
                f(x)
            if what == "module buffer":  # (review 24f: PyTorch's batch-norm kernel writes its running statistics
                # without a version bump, eagerly: the backward runs, on the new values; the replay as eager)
                assert saved._version == before
                z.backward()
                np.testing.assert_allclose(w.grad.cpu().numpy(), saved.cpu().numpy())
                continue
            assert saved._version == before + 1
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                z.backward()


@dataclasses.dataclass
class _Output:
    logits: object
    hidden: object = None
    n: int = 0


class _OrderedOut(collections.OrderedDict):
    pass


@pytest.mark.parametrize("what", ["dataclass", "namespace", "nested", "OrderedDict", "dict subclass", "set"])
def test_a_result_object_holds_this_call_s_values(device, what):
    """``return Output(logits=y)`` (a dataclass, a SimpleNamespace, one inside another): the replay returned the
    capture's object itself, holding the capture's tensors, every call; an OrderedDict or another dict subclass came
    back a plain dict; a set was the capture's object (the caller's change to it showed in the next call's)."""
    m = nn.Linear(3, 3).to(device)
    m.requires_grad_(False)
    fns = {"dataclass": lambda x: _Output(m(x), n=2),
           "namespace": lambda x: types.SimpleNamespace(y=m(x), model=m),
           "nested": lambda x: _Output(m(x), types.SimpleNamespace(h=[x * 3])),
           "OrderedDict": lambda x: collections.OrderedDict(y=m(x)),
           "dict subclass": lambda x: _OrderedOut(y=m(x)),
           "set": lambda x: (m(x), {x.shape[0]})}
    f, c = fns[what], torch.compile(fns[what])
    for i in range(4):
        x = torch.full((2, 3), float(i), device=device)
        e, o = f(x), c(x)
        assert type(o) is type(e) and repr(o) == repr(e)
        if what == "namespace":
            assert o.model is m
        if what == "set":
            o[1].add(99)
    assert c.replays == 3


@pytest.mark.parametrize("what", ["zeros_like", "requires_grad_", "parameter"])
def test_a_new_leaf_that_requires_grad_in_the_result(device, what):
    """``delta = torch.zeros_like(x, requires_grad=True); return delta`` (an adversarial perturbation, an initial
    weight): eager returns a leaf that requires grad (or a Parameter); the replay returned a plain tensor without
    requires_grad, so the caller's backward left ``delta.grad`` None."""
    fns = {"zeros_like": lambda x: torch.zeros_like(x, requires_grad=True),
           "requires_grad_": lambda x: (x * 0.5).requires_grad_(),
           "parameter": lambda x: nn.Parameter(x * 0.5)}
    c = torch.compile(fns[what])
    for i in range(4):
        x = torch.full((3,), float(i), device=device)
        delta = c(x)
        assert type(delta) is (nn.Parameter if what == "parameter" else torch.Tensor)
        assert delta.requires_grad and delta.is_leaf
        ((x + delta) ** 2).sum().backward()
        np.testing.assert_allclose(delta.grad.cpu().numpy(), 2 * (x + delta).detach().cpu().numpy())


def test_a_returned_leaf_keeps_the_grad_a_backward_in_the_call_gave_it(device):
    """``w = torch.zeros(3, requires_grad=True); (w * x).sum().backward(); return w, w.grad``: the replay's ``w``
    had no ``.grad`` (None where eager's holds ``x``)."""
    def f(x):
        w = torch.zeros(3, device=device, requires_grad=True)
        (w * x).sum().backward()
        return w, w.grad

    c = torch.compile(f)
    for i in range(4):
        w, g = c(torch.full((3,), float(i), device=device))
        assert w.requires_grad and w.grad is g
        np.testing.assert_array_equal(g.cpu().numpy(), np.full(3, float(i)))
    assert c.replays == 3


class _ViewOut(nn.Module):
    def __init__(self, of: str):
        super().__init__()
        self.lin, self.of = nn.Linear(3, 3), of

    def forward(self, x):
        return (self.lin.weight.t() if self.of == "parameter" else x[1:]), self.lin(x)


@pytest.mark.parametrize("of", ["input", "parameter"])
@pytest.mark.parametrize("grad", [False, True])
def test_a_compiled_module_output_that_views_an_input_or_a_parameter(device, of, grad):
    """``return self.lin.weight.t(), y`` or ``return x[1:], y``: eager's view shares the version counter of the
    weight or the input, so ``z = (w * v).sum(); weight.add_(1); z.backward()`` raises.  The compiled module's
    output had a counter of its own (at the capture call too): the backward ran on the changed values."""
    torch.manual_seed(0)
    m = _ViewOut(of).to(device)
    f = torch.compile(m)
    for i in range(3):
        x = torch.full((2, 3), float(i + 1), device=device)
        with torch.set_grad_enabled(grad):
            v, _ = f(x)
        w = torch.ones(v.shape, device=device, requires_grad=True)
        z = (w * v).sum()
        with torch.no_grad():
            (m.lin.weight if of == "parameter" else x).add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()
    # (with grad, x[1:] does not require grad while y does: a replay since review 18a, a graph break before)
    assert f.__dict__["_capture"].replays == 2


def test_one_hot_without_num_classes_after_an_in_place_change(device):
    """``x.add_(1); F.one_hot(labels)``: the largest label (the output's width) was a checked read after the replay
    had written ``x``, so a batch with another largest label raised RuntimeError where eager runs."""
    def f(x, labels):
        x.add_(1)
        return F.one_hot(labels).sum(0) + x.sum()

    c = torch.compile(f)
    xe, xc = torch.zeros(2, device=device), torch.zeros(2, device=device)
    for top in (2, 2, 2, 4, 3):
        labels = torch.tensor([0, 1, top], device=device)
        np.testing.assert_array_equal(c(xc, labels).cpu().numpy(), f(xe, labels).cpu().numpy())
    np.testing.assert_array_equal(xc.cpu().numpy(), xe.cpu().numpy())


def test_one_hot_without_num_classes_still_replays_before_any_write(device):
    """Without a write before it, the read stays checked (a replay; another width falls back to eager)."""
    c = torch.compile(lambda labels: F.one_hot(labels).sum(0) * 2)
    for top in (2, 2, 2, 4, 2):
        labels = torch.tensor([0, 1, top], device=device)
        np.testing.assert_array_equal(c(labels).cpu().numpy(), (F.one_hot(labels).sum(0) * 2).cpu().numpy())
    assert c.replays == 3


@pytest.mark.parametrize("kind", ["np.float32", "np.int64", "Fraction"])
def test_a_numpy_scalar_argument_made_fresh_each_call(device, kind):
    """``f(x, np.float32(s))`` with a new scalar each call (``arr[i]`` of a numpy array, a scale computed in numpy):
    the guard keyed such an argument by its id, so a new value at a freed one's address replayed the old value."""
    make = {"np.float32": np.float32, "np.int64": lambda v: np.int64(v * 4),
            "Fraction": lambda v: fractions.Fraction(int(v * 4), 4)}[kind]
    c = torch.compile(lambda x, s: x * float(s))
    x = torch.ones(2, device=device)
    for v in (0.5, 0.5, 0.5, 0.75, 1.25, 0.5):
        s = make(v)
        np.testing.assert_array_equal(c(x, s).cpu().numpy(), np.full(2, float(make(v)), np.float32))
        del s
    assert c.replays >= 3


_K = 1.0


class _Scale:
    def __init__(self, k):
        self.k = k

    def __call__(self, t):
        return t * self.k


@pytest.mark.parametrize("kind", ["closure", "global", "partial", "callable object", "default", "dict it reads"])
def test_a_function_argument_that_reads_a_number(device, kind):
    """``f(x, act)`` with ``act`` a lambda over a loop variable, a partial, a callable object, a function reading a
    global or a dict: the number it reads was baked into the replay, and the guard keyed ``act`` by its id only (a
    new lambda at a freed one's address, or the same one after the global changed, replayed the old number)."""
    global _K
    cfg = {"k": 1.0}
    same = {"global": lambda t: t * _K, "dict it reads": lambda t: t * cfg["k"]}  # one function, changed state

    def make(k):
        global _K
        _K = cfg["k"] = k
        if kind in same:
            return same[kind]
        return {"closure": lambda t: t * k, "partial": functools.partial(lambda t, k: t * k, k=k),
                "callable object": _Scale(k), "default": lambda t, k=k: t * k}[kind]

    c = torch.compile(lambda x, act: act(x) + 1)
    x = torch.ones(2, device=device)
    for k in (1.0, 1.0, 1.0, 2.0, 3.0, 1.0):
        np.testing.assert_array_equal(c(x, make(k)).cpu().numpy(), np.full(2, k + 1))
    _K = 1.0


class _Crit:
    def __init__(self, eps):
        self.eps = eps

    def __call__(self, a, b):
        return ((a - b) ** 2).mean() * (1 - self.eps)


class _Configured(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.cfg, self.crit = nn.Linear(3, 3), types.SimpleNamespace(scale=2.0), _Crit(0.1)

    def forward(self, x):
        return self.crit(self.lin(x) * self.cfg.scale, x)


@pytest.mark.parametrize("how", ["module", "function", "closure object"])
@pytest.mark.parametrize("change", ["config attribute", "callable's attribute"])
def test_a_number_held_by_an_object_a_module_or_closure_holds(device, how, change):
    """``self.cfg.scale`` (a config object a module holds) or ``self.crit.eps`` (a callable loss object), or a loss
    object in the function's closure, changed after the capture: the guard keyed such objects by identity only
    (their attributes were not read by the compiled code itself), so the replay reused the old number."""
    torch.manual_seed(0)
    m = _Configured().to(device).requires_grad_(False)
    crit = m.crit
    fn = {"module": m, "function": lambda x: m(x), "closure object": lambda x: crit(m.lin(x), x)}[how]
    c = torch.compile(fn)
    x = torch.ones(2, 3, device=device)
    for i in range(5):
        if i == 3:
            if change == "config attribute":
                m.cfg.scale = 5.0
            else:
                crit.eps = 0.5
        np.testing.assert_allclose(c(x).cpu().numpy(), fn(x).cpu().numpy(), rtol=1e-6)


def test_a_new_generator_argument_each_call(device):
    """``f(x, g)`` with a new ``torch.Generator`` seeded each call: the guard keyed the generator by its id, so one
    made at a freed one's address replayed with the capture's generator (other random numbers than eager's)."""
    def f(x, g):
        return x + torch.rand(3, generator=g, device=device)

    c = torch.compile(f)
    x = torch.zeros(3, device=device)
    for i in range(6):
        g = torch.Generator(device=device)
        g.manual_seed(i)
        got = c(x, g).cpu().numpy()
        g = torch.Generator(device=device)
        g.manual_seed(i)
        np.testing.assert_array_equal(got, f(x, g).cpu().numpy())
        del g


class _Stateful(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = types.SimpleNamespace(w=torch.ones(2))
        self.cache, self.hist = {"w": torch.ones(2)}, [torch.zeros(2)]

    def forward(self, x):
        return x * 2, self.state, self.cache, self.hist


def test_a_persistent_object_in_the_result_is_itself():
    """``return y, self.state, self.cache, self.hist`` (objects that outlive the call): eager returns those
    objects; the replay returned a new dict and list (a caller's change to them did not reach the module)."""
    m = _Stateful()
    c = torch.compile(lambda x: m(x))
    for i in range(3):
        y, state, cache, hist = c(torch.ones(2) * i)
        assert state is m.state and cache is m.cache and hist is m.hist
        np.testing.assert_array_equal(y.numpy(), np.full(2, 2.0 * i))
    assert c.replays == 2


@pytest.mark.parametrize("op", ["arange", "repeat_interleave", "full"])
def test_a_value_read_into_a_shape_after_an_in_place_change(device, op):
    """``x.add_(1)`` then ``torch.arange(n)`` / ``repeat_interleave(t, reps)`` / ``torch.full(s, v)`` of tensor
    values: the values were checked reads after the replay had written ``x``, so another value raised
    RuntimeError where eager runs (as one_hot's)."""
    fns = {"arange": lambda x, t: torch.arange(t.max(), device=device) + x.sum(),
           "repeat_interleave": lambda x, t: torch.repeat_interleave(torch.arange(2, device=device), t) + x.sum(),
           "full": lambda x, t: torch.full((2,), t.max(), device=device) + x.sum()}

    def f(x, t):
        x.add_(1)
        return fns[op](x, t)

    c = torch.compile(f)
    xe, xc = torch.zeros(2, device=device), torch.zeros(2, device=device)
    for top in (2, 2, 2, 3, 1):
        t = torch.tensor([1, top], device=device)
        np.testing.assert_array_equal(c(xc, t).cpu().numpy(), f(xe, t).cpu().numpy())


def test_a_slice_argument_made_each_call(device):
    """``f(x, slice(0, n))`` with a new slice each call: keyed by its value (it was keyed by its id, which a new
    slice at a freed one's address shared: the replay took the old bounds)."""
    c = torch.compile(lambda x, s: x[s] * 2)
    x = torch.arange(6.0, device=device)
    for s in (slice(0, 2), slice(0, 2), slice(0, 2), slice(1, 4), slice(0, 2), slice(0, 6, 2)):
        np.testing.assert_array_equal(c(x, s).cpu().numpy(), (x[s] * 2).cpu().numpy())
    assert c.replays == 3
