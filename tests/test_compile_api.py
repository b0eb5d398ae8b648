"""The compiler's switches that PyTorch scripts set: ``torch.compiler.set_stance``, ``backend=`` names and
``list_backends``, ``torch._dynamo.config`` / ``torch._inductor.config`` (known knobs, PyTorch's errors for unknown
ones, ``patch``), ``compile(options=...)`` checks, ``torch._dynamo.optimize`` and ``mark_dynamic``."""
from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
from coretorch._compile import config

from _compile_helpers import fusing, rand


@pytest.fixture(autouse=True)
def _clean():
    torch.compiler.reset()
    yield
    torch.compiler.set_stance("default")
    torch.compiler.set_default_backend(None)
    torch.compiler.reset()


def _counted():
    """A function that counts its Python executions (a replay does not run its body)."""
    runs = []

    def f(x):
        runs.append(1)
        return (x * 2 + 1).relu()
    return f, runs


# ---- set_stance ------------------------------------------------------------------------------------------------
def test_force_eager_runs_the_original_code_as_a_function_block_and_decorator(device):
    f, runs = _counted()
    c = torch.compile(f)
    x = rand(device, 8)
    torch.compiler.set_stance("force_eager")
    for _ in range(3):
        c(x)
    assert len(runs) == 3 and c.replays == 0 and not c._cache
    torch.compiler.set_stance("default")
    with torch.compiler.set_stance("force_eager"):
        c(x)
    assert len(runs) == 4 and not c._cache
    c(x)
    c(x)  # default again after the block: a capture, then a replay
    assert len(runs) == 5 and c.replays == 1

    @torch.compiler.set_stance("force_eager")
    def outer():
        return c(x)
    assert torch._compile.stance.current[0].stance == "default"  # a decorator sets it for the calls only
    np.testing.assert_array_equal(outer().cpu().numpy(), f(x).cpu().numpy())
    assert c.replays == 1


def test_force_eager_for_a_compiled_module(device):
    model = nn.Linear(4, 3).to(device)
    cm = torch.compile(model)
    x = rand(device, 2, 4)
    with torch.compiler.set_stance("force_eager"):
        y = cm(x)
        y.sum().backward()
    assert not cm._capture.cache and model.weight.grad is not None
    np.testing.assert_array_equal(y.detach().cpu().numpy(), model(x).detach().cpu().numpy())


def test_eager_on_recompile_replays_what_is_captured_and_runs_new_guards_eagerly(device):
    f, runs = _counted()
    c = torch.compile(f)
    x, z = rand(device, 8), rand(device, 5)
    c(x)
    with torch.compiler.set_stance("eager_on_recompile"):
        c(x)  # a capture serves it: replayed
        out = c(z)  # new shape: eagerly, no capture
    assert c.replays == 1 and len(c._cache) == 1 and len(runs) == 2
    np.testing.assert_array_equal(out.cpu().numpy(), f(z).cpu().numpy())
    m = torch.compile(nn.Linear(3, 2).to(device))
    with torch.compiler.set_stance("eager_on_recompile"):
        m(rand(device, 2, 3))  # nothing captured yet: eager, as PyTorch's "run mode"
    assert not m._capture.cache


def test_fail_on_recompile_raises_instead_of_capturing(device):
    f, _ = _counted()
    c = torch.compile(f)
    x = rand(device, 8)
    c(x)
    with torch.compiler.set_stance("fail_on_recompile"):
        c(x)
        with pytest.raises(RuntimeError, match="fail_on_recompile'. filename: .*function name: 'f', line number"):
            c(rand(device, 3))
    assert c.replays == 1 and len(c._cache) == 1
    m = torch.compile(nn.Linear(3, 2).to(device))
    with torch.compiler.set_stance("fail_on_recompile"), pytest.raises(RuntimeError, match="fail_on_recompile"):
        m(rand(device, 2, 3))


def test_eager_then_compile_runs_the_first_call_eagerly(device):
    f, runs = _counted()
    c = torch.compile(f)
    x = rand(device, 8)
    with torch.compiler.set_stance("eager_then_compile"):
        c(x)
        assert not c._cache
        c(x)  # captures
        c(x)  # replays
    assert len(c._cache) == 1 and c.replays == 1 and len(runs) == 2
    torch.compiler.reset()  # forgets the first eager call too
    with torch.compiler.set_stance("aot_eager_then_compile"):
        c(x)
    assert not c._cache


def test_set_stance_errors():
    with pytest.raises(RuntimeError, match="invalid torch.compile stance 'nonsense'"):
        torch.compiler.set_stance("nonsense")
    with pytest.raises(RuntimeError, match="non-default stance cannot have force_backend"):
        torch.compiler.set_stance("force_eager", force_backend="eager")
    with pytest.raises(torch._dynamo.exc.InvalidBackend):
        torch.compiler.set_stance(force_backend="nosuch")
    assert torch._compile.stance.current[0].stance == "default"

    def f(x):
        torch.compiler.set_stance("force_eager")
        return x + 1
    with pytest.raises(RuntimeError, match="set_stance in a torch.compile region"):
        torch.compile(f)(torch.ones(2))
    assert torch._compile.stance.current[0].stance == "default"


def test_skip_guard_eval_unsafe_still_checks_guards(device):
    """Accepted, and every guard is still checked: a new shape captures again instead of replaying the old one."""
    c = torch.compile(lambda x: x * 3)
    c(rand(device, 4))
    with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
        z = rand(device, 6)
        np.testing.assert_array_equal(c(z).cpu().numpy(), (z * 3).cpu().numpy())
    assert len(c._cache) == 2


# ---- backends --------------------------------------------------------------------------------------------------
def test_list_backends_and_bad_backends():
    assert torch.compiler.list_backends() == ["cudagraphs", "inductor"]
    assert torch.compiler.list_backends(exclude_tags=()) == ["aot_eager", "cudagraphs", "eager", "inductor"]
    assert torch._dynamo.list_backends is torch.compiler.list_backends
    with pytest.raises(torch._dynamo.exc.InvalidBackend, match="Invalid backend: 'nosuch'"):
        torch.compile(lambda x: x, backend="nosuch")
    assert issubclass(torch._dynamo.exc.InvalidBackend, RuntimeError)
    with pytest.raises(NotImplementedError, match="custom backend .*my_backend.*FX"):
        def my_backend(gm, example_inputs):
            return gm
        torch.compile(lambda x: x, backend=my_backend)
    with pytest.raises(torch._dynamo.exc.InvalidBackend):
        nn.Linear(2, 2).compile(backend="nosuch")
    with pytest.raises(torch._dynamo.exc.InvalidBackend):
        torch.compiler.set_default_backend("nosuch")


def _chain(x):
    return ((x * 1.7 + 0.3).tanh() * x).sigmoid() - x / 3


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "cudagraphs"])
def test_recorded_kernel_backends_replay_eager_bitwise_on_every_device(device, backend):
    """The debug backends replay the recorded kernels without fusion: bitwise eager's, opencl included."""
    x = rand(device, 64, 33)
    c = torch.compile(_chain, backend=backend)
    c(x)
    out = c(x)
    assert c.replays == 1 and c.launches == c.launches_before_fusion
    np.testing.assert_array_equal(out.cpu().numpy(), _chain(x).cpu().numpy())
    m = torch.compile(nn.Sequential(nn.Linear(33, 8), nn.GELU()).to(device), backend=backend)
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), m(x).detach().cpu().numpy())


def test_inductor_fuses_where_the_device_fuses_and_force_backend_overrides(device):
    x = rand(device, 64, 33)
    c = torch.compile(_chain)
    c(x)
    assert (c.launches < c.launches_before_fusion) == fusing(device)
    torch.compiler.reset()
    with torch.compiler.set_stance(force_backend="eager"):
        c(x)
    assert c.launches == c.launches_before_fusion
    torch.compiler.set_default_backend("eager")
    assert torch.compiler.get_default_backend() == "eager"
    d = torch.compile(_chain)
    d(x)
    assert d.launches == d.launches_before_fusion
    e = torch.compile(_chain, backend="inductor")
    e(x)
    assert (e.launches < e.launches_before_fusion) == fusing(device)


def test_a_debug_backend_turns_max_autotune_off():
    c = torch.compile(_chain, backend="eager", mode="max-autotune")
    assert c._host_fusion is False and c._fused is False
    assert torch.compile(_chain, options={"max_autotune": True})._host_fusion is True
    assert torch.compile(_chain, options={"host_fusion": False})._host_fusion is False


def test_compile_checks_mode_and_options_as_pytorch():
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        torch.compile(_chain, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        torch.compile(_chain, mode="max-autotune", options={})
    with pytest.raises(RuntimeError, match="Unexpected optimization option nosuch"):
        torch.compile(_chain, options={"nosuch": 1})
    with pytest.raises(RuntimeError, match="Unexpected optimization option triton.nosuch"):
        torch.compile(_chain, options={"triton.nosuch": 1})
    torch.compile(_chain, options={"triton.cudagraphs": True, "epilogue_fusion": False})
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        nn.Linear(2, 2).compile(mode="fast")


# ---- torch._dynamo.config and torch._inductor.config ----------------------------------------------------------
def test_dynamo_config_is_the_compile_config_with_pytorchs_errors():
    assert torch._dynamo.config is config
    assert importlib.import_module("coretorch._dynamo.config") is config
    from coretorch._dynamo import config as c2
    assert c2 is config
    with pytest.raises(AttributeError, match=r"torch._dynamo.config.nosuch does not exist"):
        torch._dynamo.config.nosuch = 1
    with pytest.raises(AttributeError, match=r"torch._dynamo.config.nosuch does not exist"):
        torch._dynamo.config.nosuch
    for knob in ("suppress_errors", "verbose", "capture_scalar_outputs", "optimize_ddp", "automatic_dynamic_shapes"):
        old = getattr(config, knob)
        with config.patch(knob, not old):
            assert getattr(config, knob) is (not old)
        assert getattr(config, knob) is old


def test_cache_size_limit_is_recompile_limit(device):
    assert config.cache_size_limit == config.recompile_limit == 8
    with torch._dynamo.config.patch(cache_size_limit=2):
        assert config.recompile_limit == 2
        c = torch.compile(lambda x: x + 1)
        c(rand(device, 1))
        c(rand(device, 2))
        with pytest.warns(UserWarning, match=r"recompile_limit \(2\)"):
            out = c(rand(device, 3))
        assert len(c._cache) == 2 and out.shape == (3,)
    assert config.recompile_limit == 8
    config.accumulated_cache_size_limit = 100
    assert config.accumulated_recompile_limit == 100
    config.accumulated_recompile_limit = 256


def test_patch_as_decorator_and_its_errors():
    @config.patch({"recompile_limit": 3, "verbose": True})
    def inner():
        return config.recompile_limit, config.verbose
    assert inner() == (3, True)
    assert (config.recompile_limit, config.verbose) == (8, False)
    with pytest.raises(AttributeError, match="nosuch does not exist"):
        config.patch(nosuch=1)
    assert config.get_config_copy()["recompile_limit"] == 8


def test_error_on_recompile(device):
    c = torch.compile(lambda x: x - 1)
    with torch._dynamo.config.patch(error_on_recompile=True):
        c(rand(device, 4))
        c(rand(device, 4))
        with pytest.raises(torch._dynamo.exc.RecompileError, match="Recompiling function .*line number"):
            c(rand(device, 5))
    assert c.replays == 1


def test_inductor_config_knobs():
    ic = torch._inductor.config
    assert importlib.import_module("coretorch._inductor.config") is ic
    ic.coordinate_descent_tuning = True
    ic.triton.unique_kernel_names = False
    ic.triton.cudagraphs = True
    ic.cpp.threads = 2
    assert (ic.coordinate_descent_tuning, ic.triton.unique_kernel_names, ic.cpp.threads) == (True, False, 2)
    with pytest.raises(AttributeError, match=r"torch._inductor.config.nosuch does not exist"):
        ic.nosuch = 1
    with pytest.raises(AttributeError, match=r"torch._inductor.config.triton.nosuch does not exist"):
        ic.triton.nosuch = 1
    assert ic.max_autotune is False
    with ic.patch(max_autotune=True):  # the same knob as coretorch's host fusion
        assert config.host_fusion is True
    assert config.host_fusion is False
    with ic.patch({"triton.cudagraphs": False}):
        assert ic.triton.cudagraphs is False
    assert ic.triton.cudagraphs is True
    for k, v in (("coordinate_descent_tuning", False), ("triton.unique_kernel_names", True),
                 ("triton.cudagraphs", False), ("cpp.threads", -1)):
        ic._set(k, v)
    assert "triton.cudagraphs" in torch._inductor.list_options()
    assert torch._inductor.list_mode_options("max-autotune")["max_autotune"] is True


# ---- torch._dynamo functions -----------------------------------------------------------------------------------
def test_optimize_is_compile_with_nopython_as_fullgraph(device):
    x = rand(device, 6)
    c = torch._dynamo.optimize("eager")(_chain)
    c(x)
    np.testing.assert_array_equal(c(x).cpu().numpy(), _chain(x).cpu().numpy())
    assert c.replays == 1

    def breaks(x):
        return x * float(x.sum().item())
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch._dynamo.optimize(nopython=True)(breaks)(x)
    assert torch._dynamo.optimize(disable=True)(_chain) is _chain
    with pytest.raises(torch._dynamo.exc.InvalidBackend):
        torch._dynamo.optimize("nosuch")


def test_mark_dynamic_is_accepted_and_new_sizes_capture_again(device):
    c = torch.compile(lambda x: x.sum(0) * 2)
    for n in (3, 5, 3):
        x = rand(device, n, 4, seed=n)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.maybe_mark_dynamic(x, 0)
        torch._dynamo.mark_static(x, 1)
        np.testing.assert_array_equal(c(x).cpu().numpy(), (x.sum(0) * 2).cpu().numpy())
    assert len(c._cache) == 2 and c.replays == 1
    with pytest.raises(TypeError, match="mark_dynamic: expected a Tensor"):
        torch._dynamo.mark_dynamic(3, 0)


def test_compiler_step_marks_and_names():
    assert torch.compiler.cudagraph_mark_step_begin() is None
    assert torch.compiler.is_exporting() is False
    assert torch._dynamo.reset is torch.compiler.reset and torch._dynamo.set_stance is torch.compiler.set_stance
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch._dynamo.config.suppress_errors = True  # kept, no warning, no effect
    torch._dynamo.config.suppress_errors = False


# ---- torch._logging.set_logs -----------------------------------------------------------------------------------
class _Collect:
    """The records of the compiler's two loggers."""

    def __init__(self):
        import logging
        self.records: list = []
        self.h = logging.Handler()
        self.h.emit = self.records.append
        self.logs = [logging.getLogger(f"coretorch._dynamo.{n}") for n in ("recompiles", "graph_breaks")]
        for log in self.logs:
            log.addHandler(self.h)

    def close(self):
        for log in self.logs:
            log.removeHandler(self.h)

    def text(self):
        return [r.getMessage() for r in self.records]


SCALE = 2.0


def test_set_logs_recompiles_and_graph_breaks(device):
    global SCALE
    col = _Collect()
    try:
        def f(x):
            return x * SCALE
        c = torch.compile(f)
        c(rand(device, 3))
        c(rand(device, 4))  # no log yet: switched off
        assert col.text() == []
        torch._logging.set_logs(recompiles=True, graph_breaks=True)
        c(rand(device, 5))
        SCALE = 3.0
        c(rand(device, 5))

        def g(x):
            return x * x.sum().item()
        torch.compile(g)(rand(device, 2))
        m = torch.compile(nn.Linear(2, 2).to(device))
        m(rand(device, 1, 2))
        m(rand(device, 3, 2))
        t = col.text()
        assert len(t) == 4, t
        assert "function name: 'f'" in t[0] and "capture 3 of at most 8" in t[0]
        assert "triggered by a change in: argument 0: size mismatch at index 0, expected 4, actual 5" in t[0]
        assert "capture 4" in t[1] and "the objects the function reads" in t[1]
        assert "Graph break in" in t[2] and "function name: 'g'" in t[2] and "Tensor.item" in t[2]
        assert "function name: 'forward'" in t[3]
        assert "argument 0: size mismatch at index 0, expected 1, actual 3" in t[3]
        torch._logging.set_logs()  # off again
        c(rand(device, 6))
        assert len(col.text()) == 4
        torch._logging.set_logs(dynamo=20)  # logging.INFO: both
        c(rand(device, 7))
        assert len(col.text()) == 5
        with pytest.raises(TypeError, match="unexpected keyword argument 'nosuch'"):
            torch._logging.set_logs(nosuch=True)
        torch._logging.set_logs(output_code=True, inductor=10)  # PyTorch's names: accepted, nothing to log here
    finally:
        SCALE = 2.0
        torch._logging.set_logs()
        col.close()


# ---- compiled methods ------------------------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    @torch.compile
    def forward(self, x):
        return x + self.lin(x).relu()


def test_a_compiled_method_replays_for_every_instance(device):
    """Twelve blocks whose ``forward`` is compiled in the class body: each instance has its own module capture (its
    own captures and recompile_limit), so all twelve replay, in inference and in training (one compiled function for
    all of them reached the limit of 8 captures at the ninth block and ran the rest eagerly with a warning, and in
    training every call was a graph break: a function capture's results carry no autograd graph; PyTorch's one graph
    serves every instance)."""
    torch.manual_seed(0)
    blocks = [Block().to(device) for _ in range(12)]
    twins = [Block().to(device) for _ in range(12)]
    for b, t in zip(blocks, twins):
        t.load_state_dict(b.state_dict())
    x = rand(device, 3, 4)
    with torch.no_grad():
        want = x
        for b in blocks:
            want = Block.forward._orig_fn(b, want)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(3):
                y = x
                for b in blocks:
                    y = b(y)
                np.testing.assert_array_equal(y.cpu().numpy(), want.cpu().numpy())
    assert [b.forward.replays for b in blocks] == [2] * 12
    assert blocks[0].forward is not blocks[1].forward and blocks[0].forward is blocks[0].forward
    for _ in range(3):  # training: forward and backward replayed, gradients as eager's (the twins run eagerly)
        y, z = x, x
        for b, t in zip(blocks, twins):
            y, z = b(y), Block.forward._orig_fn(t, z)
        y.square().sum().backward()
        z.square().sum().backward()
    for b, t in zip(blocks, twins):
        for p, q in zip(b.parameters(), t.parameters()):
            np.testing.assert_array_equal(p.grad.cpu().numpy(), q.grad.cpu().numpy()) if device == "cpu" else \
                np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
    assert all(b.forward.replays >= 4 for b in blocks)
    import copy
    import gc
    import pickle
    import weakref
    twin = copy.deepcopy(blocks[0])  # its own module capture, no captures yet
    assert twin.forward is not blocks[0].forward and twin.forward.replays == 0
    with torch.no_grad():
        np.testing.assert_array_equal(twin(x).cpu().numpy(), blocks[0](x).cpu().numpy())
    back = pickle.loads(pickle.dumps(blocks[1]))
    assert back.forward.replays == 0 and back.forward.module is back
    with torch.no_grad():
        np.testing.assert_array_equal(back(x).cpu().numpy(), blocks[1](x).cpu().numpy())
    gone = weakref.ref(blocks[2])
    del blocks, b, twin, back, twins, t
    gc.collect()
    assert gone() is None  # a block's module capture (and its captures) goes with it


class _ScaledSGD(torch.optim.Optimizer):
    """A user optimizer with a Python attribute its step reads and a counter it keeps."""

    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))
        self.scale, self.calls = 1.0, 0

    @torch.no_grad()
    def step(self, closure=None):
        self.calls += 1
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-g["lr"] * self.scale)


@pytest.mark.parametrize("opt_cls", [torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop,
                                     _ScaledSGD])
def test_compiling_an_optimizers_bound_step_replays_across_lr_changes(device, opt_cls):
    """``torch.compile(opt.step)`` with a scheduler changing lr every step: the bound method's ``self`` attributes
    (the param_groups' lr, the state) were keyed, so every step captured again and the ninth ran eagerly; the
    optimizer's numbers are replay inputs as for a step function that calls ``opt.step()``."""
    def run(compiled):
        torch.manual_seed(0)
        model = nn.Linear(6, 5).to(device)
        opt = opt_cls(model.parameters(), lr=0.05)
        sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=6)
        step = torch.compile(opt.step) if compiled else opt.step
        x = rand(device, 8, 6)
        for i in range(10):
            if i == 5 and isinstance(opt, _ScaledSGD):
                opt.scale = 0.5
            model(x).square().sum().backward()
            step()
            sched.step()
            opt.zero_grad()
        return [p.detach().cpu().numpy() for p in model.parameters()], step, opt
    (pe, _, oe), (pc, step, oc) = run(False), run(True)
    for a, b in zip(pe, pc):
        np.testing.assert_array_equal(a, b) if device == "cpu" else np.testing.assert_allclose(b, a, rtol=1e-5)
    assert step.replays >= 8
    if isinstance(oe, _ScaledSGD):
        assert oc.calls == oe.calls == 10


def test_compiling_a_modules_bound_forward_replays_forward_and_backward(device):
    """``torch.compile(model.forward)`` in an eager training loop: a function capture, whose results carry no
    autograd graph, so every call was a graph break (eager); now the module capture, as ``model.compile()``."""
    def run(compiled):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        fwd = torch.compile(model.forward) if compiled else model.forward
        x, y = rand(device, 5, 6), torch.tensor([0, 1, 2, 1, 0]).to(device)
        losses = []
        for _ in range(4):
            loss = torch.nn.functional.cross_entropy(fwd(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.detach())
        return losses + [p.detach() for p in model.parameters()], fwd
    (e, _), (c, fwd) = run(False), run(True)
    for a, b in zip(e, c):
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy()) if device == "cpu" else \
            np.testing.assert_allclose(b.cpu().numpy(), a.cpu().numpy(), rtol=1e-5, atol=1e-6)
    assert fwd.replays == 3


def test_the_recompile_limit_warning_says_why_and_points_at_the_callers_line(device):
    """The limit's warning names the last reason and the caller's line, for a function and for both module forms (a
    compiled module ran eagerly past the limit without a word)."""
    f = torch.compile(lambda s: s.sum(-1), recompile_limit=2)
    m = torch.compile(nn.Linear(8, 2).to(device), recompile_limit=2)
    m2 = nn.Linear(8, 2).to(device)
    m2.compile(recompile_limit=2)
    with torch.no_grad():
        for fn in (f, m, m2):
            with pytest.warns(UserWarning, match=r"recompile_limit \(2\).*last reason: a change in argument 0: size "
                                                 r"mismatch at index 0, expected 2, actual 3") as w:
                for n in range(1, 5):
                    fn(rand(device, n, 8))
            assert len(w) == 1 and w[0].filename == __file__


def test_a_disabled_function_runs_at_every_call_of_a_compiled_step(device):
    """``@torch.compiler.disable`` on a logger called inside a compiled step: it was returned as it was, recorded
    into the capture, and its Python side effects (here a list append) happened at the capture only; PyTorch runs it
    at every call.  Now its call is a graph break, named by ``explain``; ``fullgraph=True`` raises."""
    seen: list = []

    @torch.compiler.disable(reason="logging")
    def log(v):
        seen.append(float(v.shape[0]))

    def step(x):
        y = x * 2
        log(y)
        return y + 1
    c = torch.compile(step)
    x = rand(device, 3)
    for _ in range(3):
        np.testing.assert_array_equal(c(x).cpu().numpy(), (x * 2 + 1).cpu().numpy())
    assert seen == [3.0] * 3 and c.replays == 0
    ex = torch.compiler.explain(step, x)
    assert ex.graph_break_count == 1 and "under torch.compiler.disable (logging)" in ex.break_reasons[0]
    with pytest.raises(torch._dynamo.exc.Unsupported, match="torch.compiler.disable"):
        torch.compile(step, fullgraph=True)(x)
    log(x)  # outside a capture: a plain call
    assert len(seen) == 5
    inner = torch.compile(lambda t: t - 1)
    assert torch.compiler.disable(inner)(x).shape == x.shape and inner.replays == 0 and not inner._cache


def test_graph_break_makes_the_call_eager(device):
    def f(x):
        y = x + 1
        torch._dynamo.graph_break()
        return y * 2
    c = torch.compile(f)
    x = rand(device, 4)
    for _ in range(2):
        np.testing.assert_array_equal(c(x).cpu().numpy(), ((x + 1) * 2).cpu().numpy())
    assert c.replays == 0 and torch.compiler.explain(f, x).graph_break_count == 1
    torch._dynamo.graph_break()  # outside a capture: nothing


def test_a_hidden_state_passed_back_keeps_its_replay(device):
    """Truncated BPTT: the step returns ``h.detach()`` and the caller passes it back.  After an eager call (a capture)
    the state's ``_base`` pointed at the capture's ``h``, after a replay at nothing, so with ``_base`` in every guard
    key each capture cost one more (the key holds ``x._base is None`` only where the function reads ``_base``)."""
    torch.manual_seed(0)
    rnn = nn.GRU(3, 4).to(device)
    opt = torch.optim.SGD(rnn.parameters(), lr=0.1)
    cfg = {"scale": 1.0}

    def step(x, h):
        opt.zero_grad()
        out, h = rnn(x, h)
        loss = out.square().mean() * cfg["scale"]
        loss.backward()
        opt.step()
        return loss, h.detach()
    s = torch.compile(step)
    h = torch.zeros(1, 2, 4, device=device)
    for i in range(8):
        if i == 4:
            cfg["scale"] = 2.0
        _, h = s(rand(device, 5, 2, 3, seed=i), h)
    assert len(s._cache) == 3 and s.replays == 5
