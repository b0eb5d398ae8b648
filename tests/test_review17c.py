"""Review 17c: realistic programs on opencl compiled vs eager, every optimizer and LR scheduler inside a compiled
whole step (options, param groups, ``add_param_group`` after the capture, ``load_state_dict`` between steps, frozen
parameters), gradient accumulation, gradient clipping, ``swa_utils`` and ``nn.utils.parametrizations`` in compiled
steps."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
from coretorch.nn import functional as F


def _close(a, b, device) -> None:
    a, b = np.asarray(a), np.asarray(b)
    if device == "cpu":
        assert np.array_equal(a, b), np.abs(a.astype(np.float64) - b).max()
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _adagrad_with_a_group_added(device, compiled):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).to(device)
    opt = torch.optim.Adagrad([dict(params=m[0].parameters(), initial_accumulator_value=0.5)], lr=0.1,
                              initial_accumulator_value=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step
    x, y = torch.randn(6, 8, 4, device=device), torch.randint(0, 3, (6, 8), device=device)
    sum0 = opt.state[m[0].weight]["sum"].cpu().numpy().copy()
    losses = []
    for i in range(6):
        if i == 3:
            opt.add_param_group(dict(params=m[2].parameters(), initial_accumulator_value=0.7))
        losses.append(f(x[i], y[i]).item())
    return losses, sum0, [p.detach().cpu().numpy() for p in m.parameters()], opt.state[m[2].weight]["step"].item()


def test_adagrad_add_param_group_after_the_capture(device):
    """``Adagrad.add_param_group`` after three (compiled) steps, then more steps: PyTorch creates the new
    parameters' state at their first step (``sum`` filled with the constructor's ``initial_accumulator_value``, not a
    group's own, also for the first group).  Before: eager and compiled steps raised ``KeyError: 'step'`` (the state
    was created in ``__init__`` only), and the first group's ``sum`` started at its own 0.5."""
    eager = _adagrad_with_a_group_added(device, False)
    comp = _adagrad_with_a_group_added(device, True)
    assert np.all(eager[1] == np.float32(0.1))
    assert eager[3] == comp[3] == 3.0
    _close(eager[0], comp[0], device)
    for a, b in zip(eager[2], comp[2]):
        _close(a, b, device)


def _clipped_steps(device, compiled, bad=None):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0, error_if_nonfinite=True)
        opt.step()
        return loss, norm
    f = torch.compile(step) if compiled else step
    x, y = torch.randn(6, 8, 4, device=device), torch.randint(0, 3, (6, 8), device=device)
    if bad is not None:
        x[bad, 0, 0] = float("inf")
    out = []
    for i in range(6):
        try:
            out.append([t.item() for t in f(x[i], y[i])])
        except RuntimeError:
            out.append("raised")
            break
    return out, [p.detach().cpu().numpy() for p in m.parameters()], getattr(f, "replays", None)


def test_clip_grad_norm_error_if_nonfinite_replays(device):
    """``clip_grad_norm_(..., error_if_nonfinite=True)`` in a compiled step: eager trains.  Before: the first replay
    raised "a value the captured step read on the host ... differs ... after persistent state was already written":
    the check read the norm itself (another value at every step, after the backward wrote the gradients); it now
    reads the finiteness test's outcome.  A non-finite norm still raises a RuntimeError, as eager."""
    eager, ew, _ = _clipped_steps(device, False)
    comp, cw, replays = _clipped_steps(device, True)
    assert replays == 4
    _close(eager, comp, device)
    for a, b in zip(ew, cw):
        _close(a, b, device)
    eager, ew, _ = _clipped_steps(device, False, bad=4)
    comp, cw, _ = _clipped_steps(device, True, bad=4)
    assert eager[-1] == comp[-1] == "raised" and len(eager) == len(comp) == 5
    _close(eager[:-1], comp[:-1], device)
    for a, b in zip(ew, cw):
        _close(a, b, device)


_READS = {
    "sched.state_dict()": lambda opt, sched: sched.state_dict()["last_epoch"],
    "sched.get_lr()": lambda opt, sched: sched.get_lr()[0],
    "opt.state_dict()": lambda opt, sched: opt.state_dict()["param_groups"][0]["lr"],
}


@pytest.mark.filterwarnings("ignore:To get the last learning rate")
@pytest.mark.parametrize("inside", [True, False])
@pytest.mark.parametrize("read", list(_READS))
def test_a_step_returning_numbers_of_a_state_dict_or_get_lr(device, read, inside):
    """A step returning ``sched.state_dict()["last_epoch"]``, ``sched.get_lr()[0]`` or
    ``opt.state_dict()["param_groups"][0]["lr"]``, the scheduler stepped inside or outside the step: eager returns
    this call's numbers.  Before: a replay returned the capture's (``last_epoch`` 2 at every later call); such a
    read is now a graph break (the call runs eagerly)."""
    fn = _READS[read]

    def run(compiled):
        torch.manual_seed(0)
        m = nn.Linear(3, 2).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 1, 0.5)

        def step(x):
            opt.zero_grad()
            loss = m(x).sum()
            loss.backward()
            opt.step()
            if inside:
                sched.step()
            return loss, fn(opt, sched)
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(5):
            if not inside and i:
                sched.step()
            loss, v = f(torch.ones(2, 3, device=device) * i)
            out.append((loss.item(), v))
        return out, m.weight.detach().cpu().numpy()
    eo, ew = run(False)
    co, cw = run(True)
    assert [v for _, v in eo] == [v for _, v in co]
    _close([x for x, _ in eo], [x for x, _ in co], device)
    _close(ew, cw, device)


@pytest.mark.parametrize("read", ["getattr(cfg, 'scale')", "vars(cfg)['scale']", "cfg.__dict__['scale']"])
def test_an_attribute_read_by_its_name_as_a_string_is_guarded(device, read):
    """``x * getattr(cfg, "scale")`` (or ``vars(cfg)["scale"]``, ``cfg.__dict__["scale"]``) of a config object whose
    ``scale`` changes from 2.0 to 3.0: eager multiplies by 3.  Before: the replay reused 2.0 (the guards keyed the
    attributes the code names, and ``scale`` is a string constant there); it now captures again."""
    import types
    cfg = types.SimpleNamespace(scale=2.0)
    g = {"cfg": cfg}
    exec(f"def f(x):\n    return x * {read}\n", g)  # noqa: S102 - the test's own source
    f = torch.compile(g["f"])
    x = torch.ones(3, device=device)
    got = [f(x).tolist()[0] for _ in range(3)]
    cfg.scale = 3.0
    got += [f(x).tolist()[0] for _ in range(2)]
    assert got == [2.0, 2.0, 2.0, 3.0, 3.0]


def _orthogonal_steps(device, compiled):
    torch.manual_seed(0)
    m = nn.Sequential(nn.utils.parametrizations.orthogonal(nn.Linear(4, 4)), nn.ReLU(), nn.Linear(4, 3)).to(device)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step
    x, y = torch.randn(8, 6, 4, device=device), torch.randint(0, 3, (8, 6), device=device)
    losses = [f(x[i], y[i]).item() for i in range(8)]
    return losses, [p.detach().cpu().numpy() for p in m.parameters()], getattr(f, "replays", None)


def test_an_orthogonal_parametrization_replays(device):
    """A step of a model with ``parametrizations.orthogonal`` (a square weight: ``matrix_exp``): eager trains; the
    compiled step matched, but no call ever replayed (each replay's check of the 1-norm ``matrix_exp`` read on the
    host to choose its squarings failed, and the call ran eagerly): it now reads the number of squarings."""
    eager, ew, _ = _orthogonal_steps(device, False)
    comp, cw, replays = _orthogonal_steps(device, True)
    assert replays == 6
    _close(eager, comp, device)
    for a, b in zip(ew, cw):
        _close(a, b, device)


def test_matrix_exp_squarings_are_the_least_power_of_two_above_the_norm(device):
    """The number of squarings ``matrix_exp`` reads: the least ``s`` with ``norm <= 2^s`` (0 for NaN, inf, <= 1),
    from a device ``log2`` estimate checked against powers of two (the norm itself where it is off)."""
    from coretorch.ops._decomp_composite import _squarings
    for v, s in [(0.0, 0), (1.0, 0), (1.5, 1), (2.0, 1), (2.5, 2), (4.0, 2), (1e30, 100), (float("inf"), 0),
                 (float("nan"), 0), (np.nextafter(np.float32(8.0), np.float32(9.0)), 4)]:
        for dt in (torch.float32, torch.float64):
            assert _squarings(torch.tensor(float(v), dtype=dt, device=device)) == s, (v, dt)


def _accumulating(device, compiled, where):
    torch.manual_seed(0)
    m = nn.Linear(4, 3).to(device)
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    holder = opt if where == "optimizer" else None

    def step(x):
        loss = m(x).pow(2).mean() / 3
        loss.backward()
        h = holder if holder is not None else step
        h.k = getattr(h, "k", 0) + 1
        if h.k % 3 == 0:  # gradient accumulation: a step every third call
            opt.step()
            opt.zero_grad()
        return loss
    f = torch.compile(step) if compiled else step
    x = torch.randn(9, 5, 4, device=device)
    losses = [f(x[i]).item() for i in range(9)]
    return losses, m.weight.detach().cpu().numpy()


@pytest.mark.filterwarnings("ignore:coretorch.compile")
@pytest.mark.parametrize("where", ["function", "optimizer"])
def test_a_counter_attribute_of_the_function_or_optimizer_that_the_step_branches_on(device, where):
    """Gradient accumulation counted in an attribute of the step function or of the optimizer (``step.k += 1``,
    ``if step.k % 3 == 0: opt.step()``): eager steps every third call.  Before: Python numbers on the function and
    the optimizers were left out of the capture's check of what the call assigns, so every replay took the capture's
    branch (no step at all); such a call is now a graph break."""
    el, ew = _accumulating(device, False, where)
    cl, cw = _accumulating(device, True, where)
    _close(el, cl, device)
    _close(ew, cw, device)


def _branch_on_state(device, compiled):
    torch.manual_seed(0)
    m = nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        loss = m(x).pow(2).mean()
        loss.backward()
        if opt.state:  # warm-up done: the first step's gradient alone is halved
            m.weight.grad.mul_(2.0)
        opt.step()
        opt.zero_grad()
        return loss
    f = torch.compile(step) if compiled else step
    x = torch.randn(6, 5, 4, device=device)
    return [f(x[i]).item() for i in range(6)], m.weight.detach().cpu().numpy()


def test_a_branch_on_whether_the_optimizer_has_state(device):
    """``if opt.state: m.weight.grad.mul_(2)`` in a step: eager doubles the gradient from the second call.  Before:
    the guards keyed the Python numbers of the optimizer state only, so the capture made before the first step
    (empty state) replayed without the branch; which parameters have state and its keys are keyed now."""
    el, ew = _branch_on_state(device, False)
    cl, cw = _branch_on_state(device, True)
    _close(el, cl, device)
    _close(ew, cw, device)


@pytest.mark.parametrize("owner", ["optimizer", "function"])
def test_a_number_on_the_optimizer_or_the_function_changed_between_calls(device, owner):
    """``loss / opt.accum`` (or ``step.accum``) with ``accum`` changed from 2 to 4 between calls: eager divides by
    4.  Before: the guards did not key the Python numbers on optimizers and on the step function itself, so the
    replay kept dividing by 2; they are keyed now (the call captures again)."""
    m = nn.Linear(3, 1).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.0)

    def step(x):
        return m(x).detach().sum() / (opt if owner == "optimizer" else step).accum
    holder = opt if owner == "optimizer" else step
    holder.accum = 2.0
    f = torch.compile(step)
    x = torch.ones(2, 3, device=device)
    ref = m(x).sum().item()
    got = [f(x).item() for _ in range(3)]
    holder.accum = 4.0
    got += [f(x).item() for _ in range(2)]
    np.testing.assert_allclose(got, [ref / 2] * 3 + [ref / 4] * 2, rtol=1e-6)
    assert f.replays == 3


def _mvn_steps(device, compiled):
    torch.manual_seed(0)
    enc = nn.Linear(4, 3).to(device)
    opt = torch.optim.Adam(enc.parameters(), lr=1e-2)
    eye = torch.eye(3, device=device)

    def step(x, target):
        mu = enc(x)  # a batch of 5 distributions: a batched Cholesky factorization
        cov = eye * (1.0 + mu.pow(2).mean())
        loss = -torch.distributions.MultivariateNormal(mu, covariance_matrix=cov).log_prob(target).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step
    x, t = torch.randn(6, 5, 4, device=device), torch.randn(6, 5, 3, device=device)
    losses = [f(x[i], t[i]).item() for i in range(6)]
    return losses, enc.weight.detach().cpu().numpy(), getattr(f, "replays", None)


def test_a_batched_factorization_in_a_compiled_step_replays(device):
    """A step with a batched ``MultivariateNormal`` (a batched Cholesky factorization): eager trains; the compiled
    step matched but never replayed (the factorization's error check read every batch member's code on the host,
    a whole-array read: a graph break); it now reads whether any failed (the codes only then, to raise)."""
    el, ew, _ = _mvn_steps(device, False)
    cl, cw, replays = _mvn_steps(device, True)
    assert replays == 4
    _close(el, cl, device)
    _close(ew, cw, device)
    a = torch.eye(3, device=device).repeat(4, 1, 1)
    a[2, 1, 1] = -1.0
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 2\).*order 2"):
        torch.linalg.cholesky(a)


def _fresh_optimizer_steps(device, compiled, with_scheduler):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).to(device)

    def step(x, y):
        opt = torch.optim.Adam(m.parameters(), lr=0.01)  # a fresh optimizer per call (an inner loop's)
        sched = torch.optim.lr_scheduler.StepLR(opt, 1, 0.5) if with_scheduler else None
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        return loss
    f = torch.compile(step) if compiled else step
    x, y = torch.randn(6, 8, 4, device=device), torch.randint(0, 3, (6, 8), device=device)
    losses = [f(x[i], y[i]).item() for i in range(6)]
    return losses, [p.detach().cpu().numpy() for p in m.parameters()]


@pytest.mark.parametrize("with_scheduler", [False, True])
def test_an_optimizer_made_inside_the_compiled_step(device, with_scheduler):
    """``opt = Adam(...)`` (and a scheduler) made inside the step: eager takes a first Adam step at every call.
    Before: the replay's segment stepped the capture's optimizer: with a scheduler keeping it alive, its state and
    step count went on (silently other parameters); without, the replay raised ``AssertionError`` once it was
    freed.  Stepping an optimizer or a scheduler made in the call is now a graph break."""
    el, ew = _fresh_optimizer_steps(device, False, with_scheduler)
    cl, cw = _fresh_optimizer_steps(device, True, with_scheduler)
    _close(el, cl, device)
    for a, b in zip(ew, cw):
        _close(a, b, device)


@pytest.mark.parametrize("owner", ["parameter", "closure tensor"])
def test_a_number_on_a_parameter_or_tensor_changed_between_calls(device, owner):
    """``x * m.weight.gain`` (or ``w.gain`` of a closure tensor) with ``gain`` changed from 2 to 3 between calls:
    eager multiplies by 3.  Before: the Python attributes of tensors were keyed by no guard, so the replay kept
    multiplying by 2; the attributes the step's code reads are keyed now."""
    m = nn.Linear(3, 1).to(device)
    w = torch.ones(2, device=device)
    holder = m.weight if owner == "parameter" else w
    holder.gain = 2.0

    def step(x):
        return x * (m.weight if owner == "parameter" else w).gain
    f = torch.compile(step)
    x = torch.ones(2, device=device)
    got = [f(x).tolist()[0] for _ in range(3)]
    holder.gain = 3.0
    got += [f(x).tolist()[0] for _ in range(2)]
    assert got == [2.0, 2.0, 2.0, 3.0, 3.0]
    assert f.replays == 3


def test_the_optimizer_defaults_the_step_reads(device):
    """``x * opt.defaults["lr"]`` with ``defaults["lr"]`` changed between calls: eager uses the new number.  Before:
    the replay reused the capture's (the optimizer's ``defaults`` were keyed by no guard)."""
    w = torch.ones(2, device=device, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)

    def step(x):
        return x * opt.defaults["lr"]
    f = torch.compile(step)
    x = torch.ones(2, device=device)
    got = [f(x).tolist()[0] for _ in range(3)]
    opt.defaults["lr"] = 0.5
    got += [f(x).tolist()[0] for _ in range(2)]
    np.testing.assert_allclose(got, [0.1] * 3 + [0.5] * 2, rtol=1e-6)


class _NoamOpt:
    """The Annotated Transformer's optimizer wrapper: its ``step()`` sets the rate, then steps the optimizer."""

    def __init__(self, optimizer, warmup=3):
        self.optimizer, self.warmup, self._step = optimizer, warmup, 0

    def step(self):
        self._step += 1
        rate = 0.05 * min(self._step ** -0.5, self._step * self.warmup ** -1.5)
        for p in self.optimizer.param_groups:
            p["lr"] = rate
        self.optimizer.step()


def _noam_steps(device, compiled, opt_name):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).to(device)
    opt = _NoamOpt(getattr(torch.optim, opt_name)(m.parameters(), lr=0.0))

    def step(x, y):
        opt.optimizer.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step
    x, y = torch.randn(8, 8, 4, device=device), torch.randint(0, 3, (8, 8), device=device)
    losses = [f(x[i], y[i]).item() for i in range(8)]
    return losses, [p.detach().cpu().numpy() for p in m.parameters()]


@pytest.mark.filterwarnings("ignore:coretorch.compile")
@pytest.mark.parametrize("opt_name", ["Adam", "SGD"])
def test_a_learning_rate_set_by_python_code_inside_the_step(device, opt_name):
    """A NoamOpt-style wrapper (no LR scheduler: plain Python that sets ``p["lr"]`` and steps the optimizer) inside
    the compiled step: eager warms the rate up at every call.  Before: a replay ran the optimizer's step only, so the
    rate stayed the capture's (other parameters, silently); a param group number set outside an LR scheduler's
    step is now a graph break."""
    el, ew = _noam_steps(device, False, opt_name)
    cl, cw = _noam_steps(device, True, opt_name)
    _close(el, cl, device)
    for a, b in zip(ew, cw):
        _close(a, b, device)


def _reset_steps(device, compiled, how):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).to(device)
    opt = torch.optim.Adam(m.parameters(), lr=0.01)

    def step(x, y, reset):
        if reset:  # a periodic reset of the optimizer (after pruning, a new task)
            if how == "clear":
                opt.state.clear()
            else:
                for p in m.parameters():
                    opt.state[p] = {}
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    f = torch.compile(step) if compiled else step
    x, y = torch.randn(12, 8, 4, device=device), torch.randint(0, 3, (12, 8), device=device)
    losses = [f(x[i], y[i], i % 3 == 2).item() for i in range(12)]
    return losses, [p.detach().cpu().numpy() for p in m.parameters()]


@pytest.mark.parametrize("how", ["clear", "replace"])
def test_an_optimizer_state_reset_inside_the_step(device, how):
    """``if reset: opt.state.clear()`` (or each parameter's state replaced by ``{}``) in the step, every third call:
    eager restarts Adam's moments and step count.  Before: the replay of the reset call ran the optimizer's step on
    the old state (the Python reset is no kernel), silently; a change of the optimizer state outside its step is
    now a graph break."""
    el, ew = _reset_steps(device, False, how)
    cl, cw = _reset_steps(device, True, how)
    _close(el, cl, device)
    for a, b in zip(ew, cw):
        _close(a, b, device)
