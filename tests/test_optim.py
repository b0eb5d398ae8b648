"""optim.Optimizer and optim.SGD against PyTorch's semantics: update formulas re-derived in numpy,
state_dict layout and round trips, hooks, errors, the plugin observation hook."""
from __future__ import annotations

import copy
import io
import itertools
import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch import optim, plugins
from coretorch.optim import SGD, Optimizer
from coretorch.optim import optimizer as optimizer_mod
from coretorch.optim.optimizer import required
from coretorch.plugins import hookimpl

# a fixed quadratic-plus-linear loss per parameter: L(p) = sum(a * p**2 + b * p + c * p**3 / 10)
# grad(p) = 2 a p + b + 0.3 c p**2 (computed by coretorch's autograd, and by hand in numpy)
RNG = np.random.default_rng(0)
A = [RNG.uniform(0.5, 1.5, (3, 2)), RNG.uniform(0.5, 1.5, (4,))]
B = [RNG.normal(size=(3, 2)), RNG.normal(size=(4,))]
C = [RNG.normal(size=(3, 2)), RNG.normal(size=(4,))]
P0 = [RNG.normal(size=(3, 2)), RNG.normal(size=(4,))]


def np_grad(i, p):
    return 2 * A[i] * p + B[i] + 0.3 * C[i] * p ** 2


def ct_loss(params):
    total = None
    for i, p in enumerate(params):
        a, b, c = (torch.tensor(v) for v in (A[i], B[i], C[i]))
        term = (a * p * p + b * p + c * p * p * p / 10).sum()
        total = term if total is None else total + term
    return total


def ref_sgd(p0, steps, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    """PyTorch's SGD update rule, written independently in numpy."""
    ps = [p.copy() for p in p0]
    bufs = [None] * len(ps)
    traj = []
    for _ in range(steps):
        for i, p in enumerate(ps):
            g = np_grad(i, p)
            if maximize:
                g = -g
            if weight_decay:
                g = g + weight_decay * p
            if momentum:
                bufs[i] = g.copy() if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            ps[i] = p - lr * g
        traj.append([p.copy() for p in ps])
    return traj, bufs


def make_params(dtype=torch.float64):
    return [torch.tensor(p, dtype=dtype, requires_grad=True) for p in P0]


def run(opt, params, steps):
    traj = []
    for _ in range(steps):
        opt.zero_grad()
        ct_loss(params).backward()
        opt.step()
        traj.append([p.detach().numpy().copy() for p in params])
    return traj


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.8, nesterov=True),
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.03, momentum=0.9, weight_decay=0.01, dampening=0.5),
    dict(lr=0.03, momentum=0.7, weight_decay=0.05, nesterov=True),
    dict(lr=0.02, maximize=True),
    dict(lr=0.02, momentum=0.9, weight_decay=0.02, nesterov=True, maximize=True),
    dict(lr=0.02, momentum=0.5, dampening=0.9, weight_decay=0.3, maximize=True),
]


@pytest.mark.parametrize("foreach", [None, True, False], ids=["foreach=None", "foreach=True", "foreach=False"])
@pytest.mark.parametrize("kw", SGD_CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_sgd_matches_reference_trajectory(kw, foreach):
    params = make_params()
    opt = SGD(params, foreach=foreach, **kw)
    traj = run(opt, params, 6)
    ref, bufs = ref_sgd(P0, 6, **kw)
    for got_step, ref_step in zip(traj, ref):
        for g, r in zip(got_step, ref_step):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)
    if kw.get("momentum"):
        for p, b in zip(params, bufs):
            np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(), b, rtol=1e-12, atol=1e-12)
    else:
        assert len(opt.state) == 0  # PyTorch keeps no state for plain SGD


def test_sgd_float32_and_first_step_copies_grad():
    p = torch.tensor([1.0, -2.0], requires_grad=True)
    opt = SGD([p], lr=0.5, momentum=0.9)
    (p * p).sum().backward()
    g = p.grad.clone()
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    assert buf.dtype is torch.float32 and buf.tolist() == g.tolist()
    assert buf is not p.grad  # a copy, not the gradient itself
    p.grad.mul_(0)
    assert buf.tolist() == g.tolist()
    np.testing.assert_allclose(p.detach().numpy(), [0.0, 0.0])
    assert p.is_leaf and p.requires_grad and p.grad_fn is None


def test_params_without_grad_are_skipped():
    a, b = make_params()
    opt = SGD([a, b], lr=0.1, momentum=0.9)
    (a * a).sum().backward()
    before = b.detach().numpy().copy()
    opt.step()
    np.testing.assert_array_equal(b.detach().numpy(), before)
    assert b not in opt.state and a in opt.state


def test_default_lr_and_signature_defaults():
    p = torch.zeros(2, requires_grad=True)
    opt = SGD([p])
    g = opt.param_groups[0]
    assert g["lr"] == 1e-3 and g["momentum"] == 0 and g["dampening"] == 0 and g["weight_decay"] == 0
    assert g["nesterov"] is False and g["maximize"] is False and g["foreach"] is None
    assert g["differentiable"] is False


def test_step_with_closure_returns_loss_and_runs_with_grad():
    params = make_params()
    opt = SGD(params, lr=0.1)
    seen = {}

    def closure():
        seen["grad_enabled"] = torch.is_grad_enabled()
        opt.zero_grad()
        loss = ct_loss(params)
        loss.backward()
        return loss

    with torch.no_grad():
        loss = opt.step(closure)
    assert seen["grad_enabled"] is True
    expected = sum(float((A[i] * P0[i] ** 2 + B[i] * P0[i] + C[i] * P0[i] ** 3 / 10).sum()) for i in range(2))
    assert abs(float(loss) - expected) < 1e-10
    ref, _ = ref_sgd(P0, 1, lr=0.1)
    np.testing.assert_allclose(params[0].detach().numpy(), ref[0][0], rtol=1e-12)
    assert opt.step() is None


def test_update_does_not_record_graph_and_keeps_storage():
    p = torch.ones(3, requires_grad=True)
    storage = p._data
    opt = SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True)
    for _ in range(2):
        opt.zero_grad()
        (p * 2).sum().backward()
        opt.step()
    assert p.grad_fn is None and p._data is storage  # in place, outside autograd
    assert opt.state[p]["momentum_buffer"].requires_grad is False


def test_param_groups_with_own_hyperparameters():
    a, b = make_params()
    opt = SGD([{"params": [a]}, {"params": b, "lr": 0.01, "momentum": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0.9
    assert opt.param_groups[1]["lr"] == 0.01 and opt.param_groups[1]["momentum"] == 0.5
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    run(opt, [a, b], 3)
    ra, _ = ref_sgd([P0[0]], 3, lr=0.1, momentum=0.9)
    full, _ = ref_sgd(P0, 3, lr=0.01, momentum=0.5)
    np.testing.assert_allclose(a.detach().numpy(), ra[-1][0], rtol=1e-12)
    np.testing.assert_allclose(b.detach().numpy(), full[-1][1], rtol=1e-12)


def test_add_param_group_later_and_defaults_filled():
    a, b = make_params()
    opt = SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": [b], "lr": 0.2})
    assert len(opt.param_groups) == 2
    g = opt.param_groups[1]
    assert g["lr"] == 0.2 and g["momentum"] == 0.9 and g["params"][0] is b
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([a])


def test_constructor_errors_match_pytorch():
    p = torch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        SGD([], lr=0.1)
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an iterable of Tensors "
                                        "or dicts, but got torch.FloatTensor$"):
        SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="but got torch.DoubleTensor"):
        SGD(p.double(), lr=0.1)
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -0\.1$"):
        SGD([p], lr=-0.1)
    with pytest.raises(ValueError, match=r"^Invalid momentum value: -0\.5$"):
        SGD([p], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match=r"^Invalid weight_decay value: -1$"):
        SGD([p], lr=0.1, weight_decay=-1)
    with pytest.raises(ValueError, match="^Nesterov momentum requires a momentum and zero dampening$"):
        SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="^Nesterov momentum requires a momentum and zero dampening$"):
        SGD([p], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        SGD([p, 3], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        SGD([p * 2], lr=0.1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        SGD([p, p], lr=0.1)
    assert any("duplicate parameters" in str(x.message) for x in w)


def test_generator_of_params_is_consumed_once():
    params = make_params()
    opt = SGD((p for p in params), lr=0.1)
    assert opt.param_groups[0]["params"] == params or all(
        x is y for x, y in zip(opt.param_groups[0]["params"], params))


def test_zero_grad_set_to_none_and_zeroing():
    p = torch.ones(3, requires_grad=True)
    opt = SGD([p], lr=0.1)
    (p * 3).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.tolist() == [0.0, 0.0, 0.0]
    (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0, 3.0, 3.0]
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # no grads at all: fine


def test_two_models_chained_in_one_optimizer_with_momentum():
    """The issue's `SGD(itertools.chain(net1.parameters(), net2.parameters()), momentum=0.9)` pattern."""
    net1, net2 = make_params(), make_params()
    opt = SGD(itertools.chain(net1, net2), lr=0.01, momentum=0.9)
    assert len(opt.param_groups[0]["params"]) == 4
    for _ in range(4):
        opt.zero_grad()
        (ct_loss(net1) + 2 * ct_loss(net2)).backward()
        opt.step()
    r1, _ = ref_sgd(P0, 4, lr=0.01, momentum=0.9)
    # net2's loss is doubled: same as the reference with gradients doubled, i.e. a second reference run
    ps, bufs = [p.copy() for p in P0], [None, None]
    for _ in range(4):
        for i in range(2):
            g = 2 * np_grad(i, ps[i])
            bufs[i] = g.copy() if bufs[i] is None else 0.9 * bufs[i] + g
            ps[i] = ps[i] - 0.01 * bufs[i]
    for i in range(2):
        np.testing.assert_allclose(net1[i].detach().numpy(), r1[-1][i], rtol=1e-12)
        np.testing.assert_allclose(net2[i].detach().numpy(), ps[i], rtol=1e-12)
    # and two optimizers over two chains of the same kind step independently
    n1, n2 = make_params(), make_params()
    o1 = SGD(itertools.chain(n1[:1], n1[1:]), lr=0.01, momentum=0.9)
    o2 = SGD(itertools.chain(n2[:1], n2[1:]), lr=0.01, momentum=0.9)
    run(o1, n1, 4)
    run(o2, n2, 4)
    for i in range(2):
        np.testing.assert_allclose(n1[i].detach().numpy(), r1[-1][i], rtol=1e-12)
        np.testing.assert_allclose(n2[i].detach().numpy(), r1[-1][i], rtol=1e-12)


# ---- state_dict ---------------------------------------------------------------------------------------
def test_state_dict_layout_is_pytorchs():
    a, b = make_params()
    c = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    opt = SGD([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1, momentum=0.9)
    run(opt, [a, b], 1)
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 1]  # c has no grad yet: no state
    assert all(isinstance(k, int) for k in sd["state"])
    assert set(sd["state"][0]) == {"momentum_buffer"}
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["momentum"] == 0.9
    assert set(sd["param_groups"][0]) == {"params", "lr", "momentum", "dampening", "weight_decay", "nesterov",
                                          "maximize", "foreach", "differentiable", "fused"}
    assert sd["state"][0]["momentum_buffer"] is opt.state[a]["momentum_buffer"]  # references, as in torch
    assert opt.param_groups[0]["params"][0] is a  # state_dict() does not touch the live groups


@pytest.mark.parametrize("via", ["deepcopy", "save_load"])
def test_state_dict_round_trip_continues_identically(via):
    kw = dict(lr=0.03, momentum=0.9, weight_decay=0.01, nesterov=True)
    pa = make_params()
    oa = SGD([{"params": pa[:1]}, {"params": pa[1:], "lr": 0.01}], **kw)
    run(oa, pa, 3)
    if via == "deepcopy":
        sd = copy.deepcopy(oa.state_dict())
    else:
        buf = io.BytesIO()
        torch.save(oa.state_dict(), buf)
        buf.seek(0)
        sd = torch.load(buf)
    pb = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in pa]
    ob = SGD([{"params": pb[:1]}, {"params": pb[1:]}], lr=1.0)  # wrong hyper-parameters: loaded ones win
    ob.load_state_dict(sd)
    assert ob.param_groups[1]["lr"] == 0.01 and ob.param_groups[0]["nesterov"] is True
    assert ob.param_groups[0]["params"][0] is pb[0]
    ta, tb = run(oa, pa, 3), run(ob, pb, 3)
    for sa, sb in zip(ta, tb):
        for x, y in zip(sa, sb):
            np.testing.assert_array_equal(x, y)
    for x, y in zip(pa, pb):
        np.testing.assert_array_equal(oa.state[x]["momentum_buffer"].numpy(), ob.state[y]["momentum_buffer"].numpy())


def test_load_state_dict_casts_state_to_param_dtype():
    p64 = make_params()
    o64 = SGD(p64, lr=0.1, momentum=0.9)
    run(o64, p64, 2)
    p32 = make_params(torch.float32)
    o32 = SGD(p32, lr=0.1, momentum=0.9)
    o32.load_state_dict(o64.state_dict())
    buf = o32.state[p32[0]]["momentum_buffer"]
    assert buf.dtype is torch.float32
    np.testing.assert_allclose(buf.numpy(), o64.state[p64[0]]["momentum_buffer"].numpy(), rtol=1e-6)


def test_load_state_dict_errors():
    a, b = make_params()
    opt = SGD([a, b], lr=0.1)
    other = SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    with pytest.raises(ValueError, match="^loaded state dict has a different number of parameter groups$"):
        opt.load_state_dict(other.state_dict())
    small = SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="^loaded state dict contains a parameter group that doesn't match the "
                                         "size of optimizer's group$"):
        opt.load_state_dict(small.state_dict())


def test_state_dict_and_load_hooks():
    a, b = make_params()
    opt = SGD([a, b], lr=0.1)
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    assert calls == ["pre"] and sd["extra"] == 1

    def change_lr(o, sd):
        sd = dict(sd)
        sd["param_groups"] = [dict(g, lr=0.7) for g in sd["param_groups"]]
        return sd
    h = opt.register_load_state_dict_pre_hook(change_lr)
    opt.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.7 and calls[-1] == "loaded"
    h.remove()
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.1


# ---- hooks --------------------------------------------------------------------------------------------
def test_step_hooks_order_args_and_removal():
    p = torch.ones(2, requires_grad=True)
    opt = SGD([p], lr=0.1)
    log = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: log.append(("pre", o is opt, args[0] is opt)))
    h2 = opt.register_step_post_hook(lambda o, args, kwargs: log.append(("post", o is opt)))
    g1 = optimizer_mod.register_optimizer_step_pre_hook(lambda o, a, k: log.append(("gpre",)))
    g2 = optimizer_mod.register_optimizer_step_post_hook(lambda o, a, k: log.append(("gpost",)))
    try:
        (p * 1).sum().backward()
        opt.step()
        assert log == [("gpre",), ("pre", True, True), ("post", True), ("gpost",)]
        log.clear()
        h1.remove()
        h2.remove()
        opt.step()
        assert log == [("gpre",), ("gpost",)]
    finally:
        g1.remove()
        g2.remove()
    log.clear()
    opt.step()
    assert log == []


def test_pre_hook_may_replace_arguments_and_bad_results_raise():
    p = torch.ones(2, requires_grad=True)
    opt = SGD([p], lr=0.1)
    h = opt.register_step_pre_hook(lambda o, args, kwargs: (args, {"closure": lambda: 42}))
    (p * 1).sum().backward()
    assert opt.step() == 42
    h.remove()
    opt.register_step_pre_hook(lambda o, args, kwargs: "nonsense")
    with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\)"):
        opt.step()


def test_handle_as_context_manager():
    p = torch.ones(2, requires_grad=True)
    opt = SGD([p], lr=0.1)
    n = []
    with opt.register_step_post_hook(lambda o, a, k: n.append(1)):
        opt.step()
    opt.step()
    assert n == [1]


class _StepObserver:
    CORETORCH_PLUGIN_API = 1

    def __init__(self):
        self.seen = []

    @hookimpl
    def coretorch_optimizer_step(self, optimizer):
        self.seen.append((optimizer, [p.detach().numpy().copy() for p in optimizer.param_groups[0]["params"]]))


def test_plugin_observation_hook_after_each_step():
    from coretorch.plugins import manager
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = SGD([p], lr=0.5)
    (p * 1).sum().backward()
    obs = _StepObserver()
    plugins.register(obs, name="step-observer")
    try:
        assert manager.observing["optimizer_step"] is True
        opt.step()
        opt.step()
        assert len(obs.seen) == 2 and obs.seen[0][0] is opt
        np.testing.assert_allclose(obs.seen[0][1][0], [0.5, 1.5])  # called after the update
    finally:
        plugins.unregister("step-observer")
    assert manager.observing["optimizer_step"] is False
    opt.step()
    assert len(obs.seen) == 2


# ---- writing a new optimizer --------------------------------------------------------------------------
class SignSGD(Optimizer):
    """A new optimizer: only __init__ and step."""

    def __init__(self, params, lr=required, momentum=0.0):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "step" not in state:
                    state["step"] = 0
                    state["avg"] = torch.zeros_like(p)
                state["step"] += 1
                state["avg"].mul_(group["momentum"]).add_(p.grad.sign(), alpha=1 - group["momentum"])
                p.add_(state["avg"].sign(), alpha=-group["lr"])
        return loss


def test_custom_optimizer_gets_everything_from_the_base_class():
    with pytest.raises(ValueError, match="^parameter group didn't specify a value of required optimization "
                                         "parameter lr$"):
        SignSGD(make_params())
    a, b = make_params()
    opt = SignSGD([{"params": [a], "lr": 0.1}, {"params": [b], "lr": 0.01}], momentum=0.5)
    posts = []
    opt.register_step_post_hook(lambda o, args, kwargs: posts.append(1))
    run(opt, [a, b], 3)
    assert posts == [1, 1, 1]
    # reference in numpy
    ps, avgs = [p.copy() for p in P0], [np.zeros_like(p) for p in P0]
    for _ in range(3):
        for i, lr in enumerate((0.1, 0.01)):
            avgs[i] = 0.5 * avgs[i] + 0.5 * np.sign(np_grad(i, ps[i]))
            ps[i] = ps[i] - lr * np.sign(avgs[i])
    np.testing.assert_allclose(a.detach().numpy(), ps[0], rtol=1e-12)
    np.testing.assert_allclose(b.detach().numpy(), ps[1], rtol=1e-12)
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 3 and sd["param_groups"][1]["params"] == [1]
    assert repr(opt).startswith("SignSGD (\nParameter Group 0\n    lr: 0.1\n    momentum: 0.5\n")


def test_subclass_calling_super_step_runs_hooks_once():
    class LoggedSGD(SGD):
        def step(self, closure=None):
            self.count = getattr(self, "count", 0) + 1
            return super().step(closure)

    p = torch.ones(2, requires_grad=True)
    opt = LoggedSGD([p], lr=0.1)
    posts = []
    opt.register_step_post_hook(lambda o, a, k: posts.append(1))
    (p * 1).sum().backward()
    opt.step()
    assert posts == [1] and opt.count == 1
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 0.9])


def test_base_step_is_abstract_and_plugin_names_coexist():
    p = torch.ones(1, requires_grad=True)
    with pytest.raises(NotImplementedError):
        Optimizer([p], {"lr": 0.1}).step()
    assert optim.SGD is SGD and optim.Optimizer is Optimizer
    assert "SGD" not in optim.registered()
    with pytest.raises(ValueError, match="already defines 'SGD'"):
        optim._register("SGD", object)
