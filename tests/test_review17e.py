"""Review 17e: errors and exceptions from compiled code — a compiled call raises what the eager call raises (type
and message) and leaves the state eager's failing call leaves (parameters, gradients, optimizer state, version
counters, RNG state); exceptions of user code at the capture and at replays; KeyboardInterrupt and SystemExit
inside a step."""
import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


def _state(objs) -> list:
    out = []
    for o in objs:
        if isinstance(o, torch.optim.Optimizer):
            out.append([(k, v.detach().cpu().numpy().tobytes() if isinstance(v, torch.Tensor) else v)
                        for s in o.state.values() for k, v in sorted(s.items())])
        else:
            g = o.grad
            out.append((o.detach().cpu().numpy().tobytes(), o._version,
                        None if g is None else g.detach().cpu().numpy().tobytes()))
    return out + [torch.get_rng_state().numpy().tobytes()]


def _side_by_side(make, calls, device) -> tuple:
    """Run ``calls`` (each builds the arguments on ``device``) eagerly and compiled: each call's outcome (result
    bytes or exception type and message) and the state after it, and the compiled function's replays."""
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        fn, objs = make(device)
        f = torch.compile(fn) if compiled else fn
        log = []
        for n, c in enumerate(calls):
            torch.manual_seed(n)
            try:
                r = f(*c(device))
                rs = r if isinstance(r, tuple) else (r,)
                log.append(("ok", [t.detach().cpu().numpy().tobytes() if isinstance(t, torch.Tensor) else t
                                   for t in rs]))
            except Exception as e:  # noqa: BLE001 - the outcome is compared
                log.append((type(e).__name__, str(e)))
            log.append(_state(objs))
        runs.append((log, getattr(f, "replays", None)))
    return runs[0][0], runs[1][0], runs[1][1]


def test_checked_index_read_after_a_write_raises_eagers_index_error(device):
    """A step that writes state (``w.add_(1)``) and then indexes with an argument tensor: eager raises IndexError
    (``index 7 is out of bounds``) where a later call's index is out of range.  Compiled before: the replay checked
    the index's range after its write, so it raised the compile RuntimeError ("a value the captured step read on the
    host differs ... after persistent state was already written") and left ``w`` written without its version bump.
    Now the check of the argument runs at the start of the replay and the call runs eagerly."""
    def make(dev):
        w = torch.zeros(3, device=dev)

        def step(x, i):
            w.add_(1)
            return x[i] * 2
        return step, [w]

    good = lambda d: (torch.arange(5., device=d), torch.tensor([1, 2], device=d))  # noqa: E731
    bad = lambda d: (torch.arange(5., device=d), torch.tensor([7, 2], device=d))  # noqa: E731
    eager, compiled, replays = _side_by_side(make, [good, good, good, bad, good], device)
    assert compiled == eager
    assert replays >= 3  # (on opencl the range is checked on the device: reported at the next read)


def _classifier(loss: str):
    def make(dev):
        torch.manual_seed(0)
        m = nn.Linear(4, 3).to(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad(set_to_none=False)  # (writes the gradients in place: a write before the loss's check)
            out = m(x)
            lossv = F.cross_entropy(out, y) if loss == "ce" else F.cross_entropy(out, y, ignore_index=1)
            lossv.backward()
            opt.step()
            return lossv
        return step, [m.weight, m.bias, opt]
    return make


def _batch(targets):
    return lambda d: (torch.randn(5, 4, device=d), torch.tensor(targets, device=d))


@pytest.mark.parametrize("loss", ["ce", "ce_ignore_index"])
def test_training_step_with_a_target_out_of_range(device, loss):
    """A training step whose ``zero_grad(set_to_none=False)`` writes before ``cross_entropy``: eager raises
    ``IndexError: Target 3 is out of bounds.`` with the parameters and momentum as the last good step left them.
    Compiled before: the compile RuntimeError, after the replay had zeroed the gradients."""
    good, bad, neg = _batch([0, 1, 2, 0, 1]), _batch([0, 1, 3, 0, 1]), _batch([0, 1, -1, 0, 1])
    eager, compiled, _ = _side_by_side(_classifier(loss), [good, good, good, bad, good, neg, good], device)
    assert compiled == eager


def test_training_step_with_ignored_targets_after_a_write(device):
    """Targets of ``ignore_index`` (-100) take cross_entropy's other path: eager computes the loss over the others.
    Compiled before (cpu): the fast path's range check failed after the gradients were zeroed in place, so a valid
    call raised the compile RuntimeError (and the next replay went on from the half-written state)."""
    good, ign = _batch([0, 1, 2, 0, 1]), _batch([0, 1, -100, 0, 1])
    eager, compiled, replays = _side_by_side(_classifier("ce"), [good, good, good, ign, good, ign], device)
    assert compiled == eager
    assert replays >= 2


def test_embedding_index_out_of_range_after_a_write(device):
    """``nn.Embedding`` after ``zero_grad(set_to_none=False)``: eager raises ``IndexError: index out of range in
    self``; compiled before raised the compile RuntimeError (cpu)."""
    def make(dev):
        torch.manual_seed(0)
        e = nn.Embedding(10, 3).to(dev)
        opt = torch.optim.SGD(e.parameters(), lr=0.1)

        def step(idx):
            opt.zero_grad(set_to_none=False)
            lossv = e(idx).sum()
            lossv.backward()
            opt.step()
            return lossv
        return step, [e.weight, opt]
    good = lambda d: (torch.tensor([1, 2, 3], device=d),)  # noqa: E731
    bad = lambda d: (torch.tensor([1, 12, 3], device=d),)  # noqa: E731
    eager, compiled, _ = _side_by_side(make, [good, good, good, bad, good], device)
    assert compiled == eager


def test_value_checks_after_a_write_raise_eagers_errors(device):
    """``multinomial`` of invalid probabilities, ``linalg.cholesky`` of a matrix that is not positive-definite and
    ``binary_cross_entropy`` of an input outside [0, 1], each after the step wrote state: eager raises its
    RuntimeError / LinAlgError (with its message); compiled before raised the compile RuntimeError instead, with the
    write done and the version counter not bumped."""
    def make(dev):
        w = torch.zeros(3, device=dev)

        def step(p, a, b):
            w.add_(1)
            return torch.multinomial(p, 2), torch.linalg.cholesky(a), F.binary_cross_entropy(b, torch.ones_like(b))
        return step, [w]

    def call(p=(0.2, 0.5, 0.3), a=2.0, b=(0.2, 0.5)):
        return lambda d: (torch.tensor(p, device=d), torch.eye(3, device=d) * a, torch.tensor(b, device=d))
    calls = [call(), call(), call(), call(p=(0.2, -0.5, 0.3)), call(), call(p=(0., 0., 0.)),
             call(p=(0., float("nan"), 0.)), call(a=-1.0), call(), call(b=(0.5, 1.5)), call()]
    eager, compiled, _ = _side_by_side(make, calls, device)
    assert [e[0] for e in eager[::2]].count("ok") == 6
    assert compiled == eager


def test_compiled_module_embedding_index_after_batchnorm_stats(device):
    """A compiled module whose forward updates BatchNorm's running statistics and then looks up an embedding:
    eager raises ``IndexError: index out of range in self`` for an index past the table (the statistics of that
    call updated).  Compiled before (cpu): the module replay's index check came after the statistics' write and
    raised the compile RuntimeError."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn, self.e = nn.BatchNorm1d(3), nn.Embedding(10, 3)

        def forward(self, x, idx):
            return self.bn(x) + self.e(idx)
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = Net().to(device)
        f = torch.compile(m) if compiled else m
        log = []
        for v in ([1, 2], [1, 2], [1, 2], [1, 12], [3, 4]):
            try:
                out = f(torch.randn(2, 3, device=device), torch.tensor(v, device=device))
                out.sum().backward()
                log.append(out.detach().cpu().numpy().tobytes())
            except IndexError as e:
                log.append(str(e))
            log.append(_state([m.bn.running_mean, m.bn.running_var, m.bn.num_batches_tracked, m.e.weight]))
        runs.append(log)
    assert runs[1] == runs[0]


def test_a_user_attribute_of_a_tensor_is_guarded(device):
    """A step that reads a Python attribute a user set on a tensor (an argument's ``x.scale``, a flag it raises on,
    a closure tensor's or a parameter's ``lr_mult``): eager follows each call's value and raises where the flag is
    set.  Compiled before: the guards keyed a tensor by its shape, dtype, device and autograd state only, so the
    replay reused the capture's number (``x * 2`` where eager gave ``x * 3``) and never raised."""
    def f(x):
        if getattr(x, "bad", False):
            raise ValueError("bad input")
        return x * getattr(x, "scale", 1.0)
    c = torch.compile(f)
    for s in (2.0, 2.0, 3.0, -0.0):
        x = torch.ones(2, device=device)
        x.scale = s
        assert torch.equal(c(x), f(x)) and str(c(x)) == str(f(x))
    x.bad = True
    with pytest.raises(ValueError, match="bad input"):
        c(x)
    w = torch.ones(2, device=device)
    w.lr_mult = 2.0
    g = torch.compile(lambda x: x * w.lr_mult)
    for s in (2.0, 2.0, 5.0):
        w.lr_mult = s
        assert g(torch.ones(2, device=device)).tolist() == [s, s]
    m = nn.Linear(2, 2).to(device)
    m.weight.lr_mult = 1.0
    h = torch.compile(lambda x: m(x).detach() * m.weight.lr_mult)
    for s in (1.0, 1.0, 4.0):
        m.weight.lr_mult = s
        assert torch.equal(h(torch.ones(2, device=device)), m(torch.ones(2, device=device)).detach() * s)
    assert c.replays >= 2 and g.replays >= 1 and h.replays >= 1


def test_a_gradient_hook_that_raises_raises_at_the_backward(device):
    """A compiled module whose forward registers a gradient hook that raises (a ValueError on a bad gradient):
    eager's forward returns, and its backward raises the hook's ValueError.  Compiled before: the module capture
    recorded the backward inside the forward call (with placeholder gradients), and only a RuntimeError from it
    became a graph break: the ValueError escaped the forward."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            h = self.lin(x)

            def hook(g):
                raise ValueError("bad gradient")
            h.register_hook(hook)
            return h * 2
    for compiled in (False, True):
        m = Net().to(device)
        f = torch.compile(m) if compiled else m
        for _ in range(2):
            y = f(torch.ones(2, device=device))
            with pytest.raises(ValueError, match="bad gradient"):
                y.sum().backward()
            assert m.lin.weight.grad is None


@pytest.mark.parametrize("kind", ["function", "module"])
def test_the_eager_fallbacks_exception_is_not_chained_to_the_replays(device, kind):
    """A replay whose check fails runs the call eagerly, which raises ``IndexError`` as eager does: no context.
    Compiled before: the eager call ran inside the ``except Mismatch`` block, so its IndexError carried the internal
    ``Mismatch`` as ``__context__`` (the traceback printed "During handling of the above exception, another
    exception occurred" with the replay's frame, and the exception kept the replay's arrays alive)."""
    emb = nn.Embedding(5, 2).to(device)
    f = torch.compile(emb) if kind == "module" else torch.compile(lambda i: emb(i).detach() * 2)
    for _ in range(3):
        f(torch.tensor([1, 2], device=device))
    with pytest.raises(IndexError, match="index out of range in self") as info:
        f(torch.tensor([1, 7], device=device)).tolist()  # (opencl: the device's check reports at the read)
    assert info.value.__context__ is None and info.value.__cause__ is None


def test_an_exception_while_another_thread_captures_is_not_chained():
    """A call made while another thread captures runs eagerly; eager's IndexError has no context.  Compiled
    before: the eager call ran inside ``except CaptureBusy``, so its exception carried CaptureBusy as context (for
    a compiled function, a compiled module and an optimizer step's recording alike)."""
    from coretorch._compile import capture as cap
    emb = nn.Embedding(5, 2)
    fns = [torch.compile(lambda i: emb(i).detach()), torch.compile(emb)]
    assert cap._CAPTURE_LOCK.acquire(blocking=False)  # (as another thread's capture holds it)
    try:
        for f in fns:
            with pytest.raises(IndexError, match="index out of range in self") as info:
                f(torch.tensor([1, 7]))
            assert info.value.__context__ is None
    finally:
        cap._CAPTURE_LOCK.release()


@pytest.mark.xfail(strict=True, reason="a capture runs the function eagerly: under fullgraph=True the Unsupported of a "
                   "graph break is raised in the middle of that run, after the writes before the break (PyTorch "
                   "traces without running, so nothing is written); undoing them needs a snapshot of every tensor "
                   "the step reaches")
def test_fullgraph_break_leaves_no_write(device):
    """PyTorch: ``torch.compile(f, fullgraph=True)`` of a step that writes (``w.add_(1)``) before a graph break
    raises Unsupported and leaves ``w`` as it was.  coretorch: Unsupported is raised at the break, ``w`` written."""
    w = torch.zeros(3, device=device)

    def f(x):
        w.add_(1)
        torch._dynamo.graph_break()
        return x * 2
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(f, fullgraph=True)(torch.ones(3, device=device))
    assert w.tolist() == [0.0, 0.0, 0.0] and w._version == 0


def test_a_check_of_a_temporary_filled_in_place_after_a_write(device):
    """``torch.linalg.cholesky(torch.diag(t))`` after ``w.add_(1)``, its LinAlgError caught by the step: ``diag``
    fills a fresh ``full`` through an ``as_strided`` view, then cholesky's check reads the result.  Eager takes the
    ``except`` branch for a non-positive-definite matrix only.  Compiled (cpu) with the check moved to the replay's
    start: the view's memory was not recognised as the temporary's (``as_strided`` builds its view through an
    ``__array_interface__`` object, which ``_memory_of`` did not follow), so the check ran before the fill and the
    replay silently returned the except branch's result for a valid matrix.  Now the fill moves with the check (the
    chain's own temporary), and ``_memory_of`` follows such views."""
    def make(dev):
        w = torch.zeros(3, device=dev)

        def step(t):
            w.add_(1)
            try:
                r = torch.linalg.cholesky(torch.diag(t))[0]
            except RuntimeError:
                r = torch.full((2,), -1.0, device=t.device) * w.sum()
            return r * 2
        return step, [w]
    bad = lambda d: (torch.tensor([-1., 1.], device=d),)  # noqa: E731
    good = lambda d: (torch.tensor([4., 1.], device=d),)  # noqa: E731
    eager, compiled, _ = _side_by_side(make, [bad, bad, good, bad, good, good], device)
    assert compiled == eager
    x = np.zeros((2, 2))
    from coretorch._compile.capture import _memory_of
    from coretorch._backend import get_table
    assert _memory_of(get_table("cpu").as_strided(x, (2,), (3,), 0)) is x


@pytest.mark.parametrize("kind", ["param_hook", "module_hook", "raise"])
def test_the_numbers_a_hook_reads_are_guarded(device, kind):
    """A training step whose parameter gradient hook (``p.register_hook(lambda g: g * SCALE[0])``) or module
    forward hook reads a number that changes between calls, or raises on a flag: eager follows the number and
    raises.  Compiled before: hooks were keyed by their handles only, so the replay used the capture's number
    (silently other weights) and never raised."""
    box = {"s": 1.0, "stop": False}
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = nn.Linear(2, 1).to(device)
        if kind == "param_hook":
            m.weight.register_hook(lambda g: g * box["s"])
        elif kind == "module_hook":
            m.register_forward_hook(lambda mod, i, o: o * box["s"])
        else:
            def hook(g):
                if box["stop"]:
                    raise ValueError("stopped")
                return g
            m.weight.register_hook(hook)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            m(x).sum().backward()
            opt.step()
        f = torch.compile(step) if compiled else step
        out = []
        for s in (1.0, 1.0, 1.0, 5.0, 5.0, -0.0):
            box["s"], box["stop"] = s, s == 5.0
            try:
                f(torch.ones(2, device=device))
                out.append(m.weight.tolist())
            except ValueError as e:
                out.append(str(e))
        res.append(out)
    assert res[1] == res[0]


def test_a_seed_read_after_the_steps_reseed_is_not_moved_first():
    """``g.manual_seed(s); g.initial_seed()`` in a step: the seed read is checked at its place (after the reseed).
    Moved to the replay's start with the early checks, it would read the caller's seed before the step's reseed
    and run every call eagerly."""
    g = torch.Generator().manual_seed(1)

    def step(x, s):
        g.manual_seed(s)
        return x * g.initial_seed()
    f = torch.compile(step)
    for i in range(4):
        g.manual_seed(100 + i)
        assert f(torch.ones(1), 5).tolist() == [5.0]
    assert f.replays == 3


@pytest.mark.parametrize("op", ["t_", "set_"])
def test_versions_bumped_before_a_check_only_after_a_write(device, op):
    """A step whose in-place op bumps a version without a recorded write (``w.unsqueeze(0).t_()``,
    ``w.set_(w + 1)``) before an index check: a failing check runs the call eagerly, which bumps the version
    itself, so the replay must not have bumped it before the check (versions.py bumps before a checked read only
    after a write)."""
    res = []
    for compiled in (False, True):
        w = torch.zeros(3, device=device)

        def step(x, i):
            if op == "t_":
                w.unsqueeze(0).t_()
            else:
                w.set_(w + 1)
            return x[i] * 2
        f = torch.compile(step) if compiled else step
        x = torch.arange(5., device=device)
        out = []
        for v in ([1, 2], [1, 2], [1, 2], [1, 9], [1, 2]):
            try:
                f(x, torch.tensor(v, device=device)).tolist()
            except IndexError:
                pass
            out.append((w.tolist(), w._version))
        res.append(out)
    assert res[1] == res[0]
