"""Review 23f: coretorch.compile with mixed precision (autocast, GradScaler), activation checkpointing, grad-mode
regions inside and around compiled code, ``requires_grad_`` toggled between calls, and shapes that change between
calls.  Each test runs the program eagerly and compiled and compares call by call (bitwise on cpu, 1e-5 relative on
opencl); PyTorch's eager behaviour is the spec, each test says what PyTorch does and what coretorch did before the
fix."""
from __future__ import annotations

import numpy as np
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


def test_compile_accepts_the_lite_mode_and_lists_the_modes_in_pytorchs_order():
    """PyTorch 2.13 has a ``mode="lite"`` (opt-in optimizations only), and its error for an unknown mode lists
    "default, lite, reduce-overhead, max-autotune-no-cudagraphs, max-autotune"; ``torch._inductor.list_mode_options``
    raises that RuntimeError too.  coretorch raised "Unrecognized mode=lite" for ``torch.compile(f, mode="lite")``,
    listed the modes in another order, and ``list_mode_options("x")`` raised KeyError."""
    import coretorch._inductor as inductor

    c = torch.compile(lambda a: a * 2, mode="lite")
    assert c(torch.ones(2)).tolist() == [2.0, 2.0]
    modes = "default, lite, reduce-overhead, max-autotune-no-cudagraphs, max-autotune"
    with pytest.raises(RuntimeError, match=f"Unrecognized mode=x, should be one of: {modes}$"):
        torch.compile(lambda a: a, mode="x")
    assert list(inductor.list_mode_options()) == modes.split(", ")
    assert inductor.list_mode_options("lite")["use_dce"] is False
    with pytest.raises(RuntimeError, match=f"Unrecognized mode=x, should be one of: {modes}$"):
        inductor.list_mode_options("x")


@pytest.mark.parametrize("dynamic", ["yes", 1, 0])
def test_compile_rejects_a_dynamic_that_is_not_a_bool(dynamic):
    """PyTorch: ``torch.compile(f, dynamic=...)`` takes True, False or None; anything else raises
    ``AssertionError: Expected enable to be a bool, got <class 'str'>`` when it compiles (the decorator form
    ``torch.compile(dynamic="yes")`` raises only once given the function).  coretorch accepted any value."""
    with pytest.raises(AssertionError, match=f"Expected enable to be a bool, got {type(dynamic)}"):
        torch.compile(lambda a: a, dynamic=dynamic)
    with pytest.raises(AssertionError, match="Expected enable to be a bool"):
        torch.compile(nn.Linear(2, 2), dynamic=dynamic)
    deco = torch.compile(dynamic=dynamic)
    with pytest.raises(AssertionError, match="Expected enable to be a bool"):
        deco(lambda a: a)
    for ok in (True, False, None):
        assert torch.compile(lambda a: a + 1, dynamic=ok)(torch.zeros(1)).tolist() == [1.0]
    torch.compile(lambda a: a, dynamic=dynamic, disable=True)  # (PyTorch: disable returns before the check)
    m = nn.Linear(2, 2)
    with pytest.raises(AssertionError, match="Expected enable to be a bool"):
        m.compile(dynamic=dynamic)
    m.compile(dynamic=dynamic, disable=True)


def test_module_compile_takes_torch_compiles_arguments_only():
    """PyTorch: ``Module.compile(*args, **kwargs)`` passes them to ``torch.compile``: a misspelt keyword raises
    ``TypeError: compile() got an unexpected keyword argument 'fulgraph'`` and a positional argument ``TypeError:
    compile() takes from 0 to 1 positional arguments but 2 were given``.  coretorch's accepted anything (the
    misspelt option silently ignored)."""
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="compile\\(\\) got an unexpected keyword argument 'fulgraph'"):
        m.compile(fulgraph=True)
    with pytest.raises(TypeError, match="^compile\\(\\) takes from 0 to 1 positional arguments but 2 were given$"):
        m.compile(True)
    m.compile(fullgraph=True, mode="lite", dynamic=False)
    x = torch.randn(3, 2)
    for _ in range(3):
        out = m(x)
    np.testing.assert_array_equal(out.detach().numpy(), F.linear(x, m.weight, m.bias).detach().numpy())


def test_dynamo_decorators_module_holds_mark_dynamic_and_mark_unbacked(device):
    """PyTorch defines ``mark_dynamic`` and its kin in ``torch._dynamo.decorators`` (scripts import them from
    there), ``mark_unbacked`` only there, and ``mark_static_address``'s ``guard`` defaults to False.  coretorch had
    no ``torch._dynamo.decorators`` (ModuleNotFoundError).  A marked argument's compiled results are eager's."""
    from coretorch._dynamo.decorators import mark_dynamic, mark_unbacked, maybe_mark_dynamic
    import inspect

    assert mark_dynamic is torch._dynamo.mark_dynamic
    assert inspect.signature(torch._dynamo.mark_static_address).parameters["guard"].default is False
    with pytest.raises(TypeError, match="mark_unbacked"):
        mark_unbacked(3, 0)
    w = torch.randn(4, 3).to(device)
    f = torch.compile(lambda x: (x @ w).sum(0))
    for n in (2, 5, 1, 5):
        x = torch.randn(n, 4).to(device)
        mark_dynamic(x, 0)
        maybe_mark_dynamic(x, 0)
        mark_unbacked(x, 0)
        close(device, (x @ w).sum(0), f(x), f"batch {n}")


def test_a_module_attribute_the_step_stores_its_loss_in_keeps_the_consumed_graph(device):
    """PyTorch: a step that keeps its loss on the model (``model.last_loss = loss``, after ``loss.backward()``)
    leaves the attribute holding the loss with its (freed) graph, eager and compiled: ``requires_grad`` True and a
    ``MeanBackward0`` grad_fn.  coretorch's replays wrote back a plain tensor (``requires_grad`` False); the
    values were eager's and stay so."""
    def run(compiled: bool) -> list:
        m = _model(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            m.last_loss = loss
            return loss.detach()

        fn = torch.compile(step) if compiled else step
        out = []
        for x, _ in _batches(device, 5):
            fn(x)
            t = m.last_loss
            out.append((t.detach().clone(), t.requires_grad, type(t.grad_fn).__name__))
        if compiled:
            assert fn.replays >= 2
        return out

    for (a, ra, na), (b, rb, nb) in zip(run(False), run(True)):
        close(device, a, b, "last_loss")
        assert ra is rb is True and na == nb == "MeanBackward0"


def _same(device: str, a, b, what: str) -> None:
    """``close``, with NaN equal to NaN (a GradScaler's overflowing step leaves NaN gradients, eager and compiled)."""
    a, b = a.detach().float().cpu().numpy(), b.detach().float().cpu().numpy()
    if device == "cpu":
        np.testing.assert_array_equal(b, a, err_msg=what)
    else:
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6, err_msg=what)


def _run_step_program(device: str, compiled: bool, calls: list, scaler: bool = False) -> list:
    """A training step (autocast inside, optional GradScaler, a checkpointed block) run for ``calls``: each a dict
    of the batch size, the autocast dtype around the call (None: off), the grad mode around it and whether the
    first layer's weight requires grad; returns what each call left (loss, parameters, gradients, scale)."""
    from coretorch.utils.checkpoint import checkpoint

    m = _model(device)
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    sc = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2, enabled=scaler)

    def step(x, y):
        opt.zero_grad()
        with torch.enable_grad():  # (the grad mode around the call may be no_grad)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                h = checkpoint(m[0], x, use_reentrant=False)
            loss = F.mse_loss(m[2](m[1](h.float())).float(), y)
            sc.scale(loss).backward()
        sc.step(opt)
        sc.update()
        return loss

    fn = torch.compile(step, recompile_limit=32) if compiled else step  # (each toggle is a capture of its own)
    torch.manual_seed(3)
    out = []
    for c in calls:
        x, y = torch.randn(c["b"], 4).to(device), torch.randn(c["b"], 2).to(device)
        if c.get("inf"):
            y = y * float("inf")
        m[0].weight.requires_grad_(c.get("rg", True))
        grad = torch.enable_grad() if c.get("grad", True) else torch.no_grad()
        with grad, torch.autocast("cpu", dtype=c.get("ac") or torch.bfloat16, enabled=c.get("ac") is not None):
            loss = fn(x, y)
        out.append([loss.detach().clone(), *[p.detach().clone() for p in m.parameters()],
                    *[p.grad for p in m.parameters()], sc.get_scale()])
    if compiled and not scaler:
        assert fn.replays >= 3
    return out


_CALLS = [dict(b=5), dict(b=5), dict(b=5, ac=torch.bfloat16), dict(b=5), dict(b=5, ac=torch.float16),
          dict(b=5, grad=False), dict(b=5, rg=False), dict(b=5, rg=False), dict(b=5), dict(b=3), dict(b=1),
          dict(b=5), dict(b=5)]


@pytest.mark.parametrize("scaler", [False, True])
def test_a_step_with_autocast_checkpoint_and_scaler_matches_eager_call_by_call(device, scaler):
    """PyTorch: a compiled step is eager's, call by call, while autocast is toggled around it (bfloat16, float16,
    off), the grad mode around it changes (``no_grad`` around, ``enable_grad`` inside), a layer is frozen and
    unfrozen with ``requires_grad_``, the batch shrinks (3, then 1), and a GradScaler skips a step whose gradients
    overflow and then grows its scale again (its host reads make those calls eager).  A regression test of the
    scope: coretorch matched before this review too."""
    calls = _CALLS + ([dict(b=5, inf=True), dict(b=5), dict(b=5), dict(b=5)] if scaler else [])

    eager, comp = (_run_step_program(device, c, calls, scaler) for c in (False, True))
    for i, (a, b) in enumerate(zip(eager, comp)):
        assert a[-1] == b[-1], f"call {i}: scale"
        for s, t in zip(a[:-1], b[:-1]):
            assert (s is None) == (t is None), f"call {i}"
            if s is not None:
                assert s.dtype == t.dtype and s.shape == t.shape
                _same(device, s, t, f"call {i}")


def test_a_step_reading_the_loss_it_stored_last_call_replays(device):
    """PyTorch: a step that reads the loss the previous call stored (``prev = model.last_loss.detach()``, then
    ``model.last_loss = loss``) compiles once and gives eager's values.  coretorch keyed an attribute holding a
    tensor with an autograd graph by identity, and each call stores a new loss: every call captured again (capture
    2 of 8 each time, never a replay, slower than eager).  A graph a backward consumed can only be read for its
    values, so any consumed one now passes the check; values stay eager's."""
    def run(compiled: bool) -> list:
        m = _model(device)
        m.last_loss = torch.zeros(()).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            prev = m.last_loss.detach()
            m.last_loss = loss
            return loss.detach() + prev

        fn = torch.compile(step) if compiled else step
        out = [(fn(x), m.last_loss.requires_grad) for x, _ in _batches(device, 6)]
        if compiled:
            assert fn.replays >= 3
        return out

    for (a, ra), (b, rb) in zip(run(False), run(True)):
        close(device, a, b, "loss + previous loss")
        assert ra is rb is True


def test_checkpoint_without_use_reentrant_warns_pytorchs_words(device):
    """PyTorch 2.13: ``checkpoint`` without ``use_reentrant`` warns "... Starting in PyTorch 2.9, calling checkpoint
    without use_reentrant will raise an exception. ..." and ``checkpoint_sequential`` "torch.utils.checkpoint.
    checkpoint_sequential: the use_reentrant parameter should be passed explicitly. In version 2.9 we will raise
    ...".  coretorch warned an older text ("In version 2.5 we will raise ...") for both.  Both still run as
    ``use_reentrant=True``: the result is the plain call's."""
    import warnings

    from coretorch.utils.checkpoint import checkpoint, checkpoint_sequential

    torch.manual_seed(0)
    seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2)).to(device)
    x = torch.randn(2, 3).to(device).requires_grad_()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = checkpoint(seq, x)
        b = checkpoint_sequential(seq, 2, x)
    texts = [str(m.message) for m in w]
    assert texts[0].startswith("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                               "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
                               "exception. use_reentrant=False is recommended")
    assert texts[1].startswith("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
                               "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
                               "passed.")
    assert len(texts) == 2
    close(device, seq(x), a, "checkpoint")
    close(device, seq(x), b, "checkpoint_sequential")
