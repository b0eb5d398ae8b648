"""optim.lr_scheduler against closed forms / recursions written in the test, PyTorch's step semantics,
state_dict round trips and warnings."""
from __future__ import annotations

import io
import math
import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch.optim import SGD, Optimizer, lr_scheduler as S

BASE = (0.1, 0.03)


def make_opt(momentum=0.9):
    a = torch.zeros(2, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    return SGD([{"params": [a]}, {"params": [b], "lr": BASE[1]}], lr=BASE[0], momentum=momentum)


def trajectory(opt, sched, n, metrics=None):
    """The rates in effect at epochs 0..n-1 (optimizer.step() then scheduler.step(), as PyTorch wants)."""
    out = []
    for e in range(n):
        out.append([g["lr"] for g in opt.param_groups])
        assert sched.get_last_lr() == out[-1]
        opt.step()
        sched.step() if metrics is None else sched.step(metrics[e])
    return np.array(out)


def expect(fn, n):
    return np.array([[fn(base, e) for base in BASE] for e in range(n)])


def test_step_lr():
    opt = make_opt()
    sched = S.StepLR(opt, step_size=3, gamma=0.5)
    np.testing.assert_allclose(trajectory(opt, sched, 12), expect(lambda b, e: b * 0.5 ** (e // 3), 12), rtol=1e-12)
    assert sched.last_epoch == 12


def test_multistep_lr_with_repeated_milestone():
    opt = make_opt()
    sched = S.MultiStepLR(opt, milestones=[2, 5, 5, 8], gamma=0.1)
    ms = [2, 5, 5, 8]
    np.testing.assert_allclose(trajectory(opt, sched, 11),
                               expect(lambda b, e: b * 0.1 ** sum(m <= e for m in ms), 11), rtol=1e-12)


def test_exponential_lr():
    opt = make_opt()
    sched = S.ExponentialLR(opt, gamma=0.9)
    np.testing.assert_allclose(trajectory(opt, sched, 15), expect(lambda b, e: b * 0.9 ** e, 15), rtol=1e-12)


@pytest.mark.parametrize("eta_min", [0.0, 0.001])
def test_cosine_annealing_recursive_form_follows_closed_form_over_several_periods(eta_min):
    T = 5
    opt = make_opt()
    sched = S.CosineAnnealingLR(opt, T_max=T, eta_min=eta_min)
    got = trajectory(opt, sched, 3 * T + 2)
    ref = expect(lambda b, e: eta_min + (b - eta_min) * (1 + math.cos(math.pi * e / T)) / 2, 3 * T + 2)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)


def test_cosine_annealing_is_chainable_from_the_current_lr():
    """The recursive form rescales whatever lr the group holds (here halved by hand after epoch 2)."""
    T, eta_min = 10, 0.01
    opt = make_opt()
    sched = S.CosineAnnealingLR(opt, T_max=T, eta_min=eta_min)
    for _ in range(2):
        opt.step()
        sched.step()
    for g in opt.param_groups:
        g["lr"] /= 2
    lrs = [g["lr"] for g in opt.param_groups]
    for e in range(3, 7):
        opt.step()
        sched.step()
        factor = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
        lrs = [eta_min + (lr - eta_min) * factor for lr in lrs]
        np.testing.assert_allclose(sched.get_last_lr(), lrs, rtol=1e-12)


def test_explicit_epoch_uses_closed_form_and_warns():
    opt = make_opt()
    sched = S.CosineAnnealingLR(opt, T_max=8, eta_min=0.0)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(6)
    np.testing.assert_allclose(sched.get_last_lr(), [b * (1 + math.cos(math.pi * 6 / 8)) / 2 for b in BASE])
    with pytest.warns(UserWarning):
        S.StepLR(opt, step_size=2, gamma=0.5).step(5)
    assert sched.optimizer.param_groups[0]["lr"] == pytest.approx(BASE[0] * 0.25)


def test_lambda_lr_one_and_per_group():
    opt = make_opt()
    sched = S.LambdaLR(opt, lr_lambda=lambda e: 1 / (1 + e))
    np.testing.assert_allclose(trajectory(opt, sched, 6), expect(lambda b, e: b / (1 + e), 6), rtol=1e-12)
    opt = make_opt()
    sched = S.LambdaLR(opt, lr_lambda=[lambda e: 0.95 ** e, lambda e: e + 1])
    got = trajectory(opt, sched, 5)
    np.testing.assert_allclose(got[:, 0], [BASE[0] * 0.95 ** e for e in range(5)], rtol=1e-12)
    np.testing.assert_allclose(got[:, 1], [BASE[1] * (e + 1) for e in range(5)], rtol=1e-12)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        S.LambdaLR(make_opt(), lr_lambda=[lambda e: 1.0])


def test_multiplicative_constant_polynomial_lr():
    opt = make_opt()
    got = trajectory(opt, S.MultiplicativeLR(opt, lambda e: 0.9), 5)
    np.testing.assert_allclose(got, expect(lambda b, e: b * 0.9 ** e, 5), rtol=1e-12)
    opt = make_opt()
    got = trajectory(opt, S.ConstantLR(opt, factor=0.5, total_iters=3), 6)
    np.testing.assert_allclose(got, expect(lambda b, e: b * (0.5 if e < 3 else 1.0), 6), rtol=1e-12)
    opt = make_opt()
    got = trajectory(opt, S.PolynomialLR(opt, total_iters=4, power=2.0), 7)
    np.testing.assert_allclose(got, expect(lambda b, e: b * (1 - min(e, 4) / 4) ** 2, 7), rtol=1e-9, atol=1e-15)


def test_linear_lr():
    opt = make_opt()
    sched = S.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=4)
    np.testing.assert_allclose(trajectory(opt, sched, 8), expect(lambda b, e: b * (0.25 + 0.75 * min(e, 4) / 4), 8),
                               rtol=1e-12)
    opt = make_opt()
    sched = S.LinearLR(opt, start_factor=1.0, end_factor=0.1, total_iters=3)
    np.testing.assert_allclose(trajectory(opt, sched, 6), expect(lambda b, e: b * (1 - 0.9 * min(e, 3) / 3), 6),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(make_opt(), start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        S.LinearLR(make_opt(), end_factor=1.5)


def test_sequential_lr_warmup_then_exponential():
    opt = make_opt()
    warm = S.LinearLR(opt, start_factor=0.1, total_iters=3)
    decay = S.ExponentialLR(opt, gamma=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # step(0) at the milestone warns about `epoch`, as in PyTorch
        sched = S.SequentialLR(opt, schedulers=[warm, decay], milestones=[3])
        got = trajectory(opt, sched, 9)
    ref = expect(lambda b, e: b * (0.1 + 0.9 * e / 3) if e < 3 else b * 0.9 ** (e - 3), 9)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    with pytest.raises(ValueError, match="one more than the number of milestone points"):
        S.SequentialLR(opt, schedulers=[warm, decay], milestones=[3, 5])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        S.SequentialLR(opt, schedulers=[warm, S.ReduceLROnPlateau(opt)], milestones=[3])


def test_chained_schedulers_multiply():
    opt = make_opt()
    s1 = S.ExponentialLR(opt, gamma=0.9)
    s2 = S.StepLR(opt, step_size=2, gamma=0.5)
    chained = S.ChainedScheduler([s1, s2])
    got = trajectory(opt, chained, 7)
    np.testing.assert_allclose(got, expect(lambda b, e: b * 0.9 ** e * 0.5 ** (e // 2), 7), rtol=1e-12)


def _anneal(kind, start, end, pct):
    if kind == "cos":
        return end + (start - end) / 2 * (1 + math.cos(math.pi * pct))
    return start + (end - start) * pct


def one_cycle_reference(total, max_lr, pct_start, kind, div, final_div, base_m, max_m, three_phase):
    init = max_lr / div
    low = init / final_div
    if three_phase:
        phases = [(pct_start * total - 1, init, max_lr, max_m, base_m),
                  (2 * pct_start * total - 2, max_lr, init, base_m, max_m),
                  (total - 1, init, low, max_m, max_m)]
    else:
        phases = [(pct_start * total - 1, init, max_lr, max_m, base_m), (total - 1, max_lr, low, base_m, max_m)]
    lrs, moms = [], []
    for s in range(total):
        start = 0.0
        for i, (end, lr0, lr1, m0, m1) in enumerate(phases):
            if s <= end or i == len(phases) - 1:
                pct = (s - start) / (end - start)
                lrs.append(_anneal(kind, lr0, lr1, pct))
                moms.append(_anneal(kind, m0, m1, pct))
                break
            start = end
    return lrs, moms


@pytest.mark.parametrize("kind", ["cos", "linear"])
@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_lr_and_momentum(kind, three_phase):
    total = 20
    opt = make_opt()
    sched = S.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=total, pct_start=0.3, anneal_strategy=kind,
                         div_factor=10.0, final_div_factor=100.0, base_momentum=0.8, max_momentum=0.9,
                         three_phase=three_phase)
    lrs, moms = [], []
    for _ in range(total):
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append([g["momentum"] for g in opt.param_groups])
        opt.step()
        if len(lrs) < total:
            sched.step()
    for gi, max_lr in enumerate((1.0, 0.5)):
        ref_lr, ref_m = one_cycle_reference(total, max_lr, 0.3, kind, 10.0, 100.0, 0.8, 0.9, three_phase)
        np.testing.assert_allclose([x[gi] for x in lrs], ref_lr, rtol=1e-12)
        np.testing.assert_allclose([x[gi] for x in moms], ref_m, rtol=1e-12)
    assert opt.param_groups[0]["initial_lr"] == pytest.approx(0.1)
    assert opt.param_groups[0]["min_lr"] == pytest.approx(0.001)
    sched.step()  # the step after the last one is allowed (PyTorch checks step_num > total_steps)
    with pytest.raises(ValueError, match=f"Tried to step {total + 1} times. The specified number of total steps "
                                         f"is {total}"):
        sched.step()


class BetaOpt(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999)):
        super().__init__(params, dict(lr=lr, betas=betas))

    def step(self, closure=None):
        return None


def test_one_cycle_cycles_beta1_and_checks_arguments():
    p = torch.zeros(1, requires_grad=True)
    opt = BetaOpt([p])
    sched = S.OneCycleLR(opt, max_lr=0.01, epochs=2, steps_per_epoch=5)
    assert sched.total_steps == 10
    assert opt.param_groups[0]["betas"] == (0.95, 0.999)
    opt.step()
    sched.step()
    _, moms = one_cycle_reference(10, 0.01, 0.3, "cos", 25.0, 1e4, 0.85, 0.95, False)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(moms[1]) and opt.param_groups[0]["betas"][1] == 0.999
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        S.OneCycleLR(make_opt(), max_lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        S.OneCycleLR(make_opt(), max_lr=0.1, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.OneCycleLR(Plain([torch.zeros(1, requires_grad=True)]), max_lr=0.1, total_steps=10)
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups"):
        S.OneCycleLR(make_opt(), max_lr=[0.1], total_steps=10)


class Plain(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    def step(self, closure=None):
        return None


def test_reduce_lr_on_plateau_min_rel_with_cooldown():
    opt = make_opt()
    sched = S.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1, threshold=0.1, cooldown=1)
    # epoch: metric -> best / bad epochs, worked out by hand with the rule "better iff m < best * 0.9"
    metrics = [10.0, 9.5, 9.4, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0]
    # e0 10 best; e1 9.5 bad1; e2 9.4 bad2>1 -> halve, cooldown 1; e3 8.0 better (8<9) best=8, cooldown->0;
    # e4 bad1; e5 bad2 -> halve, cooldown 1; e6 bad, in cooldown (counter->0, bad reset); e7 bad1; e8 bad2 -> halve
    got = trajectory(opt, sched, len(metrics), metrics)
    factors = [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    np.testing.assert_allclose(got, expect(lambda b, e: b * factors[e], len(metrics)), rtol=1e-12)
    assert sched.get_last_lr() == pytest.approx([b * 0.125 for b in BASE])
    assert sched.best == 8.0 and sched.last_epoch == len(metrics)


def test_reduce_lr_on_plateau_max_abs_min_lr_and_eps():
    opt = make_opt()
    sched = S.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, threshold=0.5, threshold_mode="abs",
                                min_lr=[0.005, 0.0], eps=1e-8)
    metrics = [1.0, 1.4, 2.0, 2.0, 2.0]
    # better iff m > best + 0.5: e0 yes; e1 no -> reduce; e2 yes (2.0 > 1.5); e3 no -> reduce; e4 no -> reduce
    got = trajectory(opt, sched, len(metrics), metrics)
    g0 = [0.1, 0.1, 0.01, 0.01, 0.005]  # floored at min_lr 0.005
    g1 = [0.03, 0.03, 0.003, 0.003, 0.0003]
    np.testing.assert_allclose(got[:, 0], g0, rtol=1e-12)
    np.testing.assert_allclose(got[:, 1], g1, rtol=1e-12)
    sched.step(0.0)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.005)  # min_lr reached: no change
    opt.param_groups[1]["lr"] = 5e-9
    sched.step(0.0)
    assert opt.param_groups[1]["lr"] == 5e-9  # a change smaller than eps is ignored
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        S.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="threshold mode pct is unknown!"):
        S.ReduceLROnPlateau(opt, threshold_mode="pct")
    sched.step(torch.tensor(3.0))  # a 0-d tensor metric is accepted


@pytest.mark.parametrize("name", ["step", "multistep", "cosine", "lambda", "onecycle", "plateau", "sequential",
                                  "linear"])
def test_scheduler_state_dict_round_trip_continues_identically(name):
    def build():
        opt = make_opt()
        if name == "step":
            return opt, S.StepLR(opt, 2, 0.5)
        if name == "multistep":
            return opt, S.MultiStepLR(opt, [3, 3, 6], 0.5)
        if name == "cosine":
            return opt, S.CosineAnnealingLR(opt, 4, 0.001)
        if name == "lambda":
            return opt, S.LambdaLR(opt, lambda e: 0.8 ** e)
        if name == "onecycle":
            return opt, S.OneCycleLR(opt, max_lr=0.5, total_steps=12, anneal_strategy="linear")
        if name == "plateau":
            return opt, S.ReduceLROnPlateau(opt, patience=0, factor=0.5)
        if name == "linear":
            return opt, S.LinearLR(opt, start_factor=0.2, total_iters=6)
        return opt, S.SequentialLR(opt, [S.ConstantLR(opt, 0.5, 10), S.ExponentialLR(opt, 0.9)], [3])

    metrics = [5.0, 4.0, 4.0, 4.0, 3.0, 3.0, 3.0, 2.0, 2.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oa, sa = build()
        for e in range(4):
            oa.step()
            sa.step(metrics[e]) if name == "plateau" else sa.step()
        buf = io.BytesIO()
        torch.save({"optimizer": oa.state_dict(), "scheduler": sa.state_dict()}, buf)
        buf.seek(0)
        ck = torch.load(buf)
        ob, sb = build()
        ob.load_state_dict(ck["optimizer"])
        sb.load_state_dict(ck["scheduler"])
        assert sb.get_last_lr() == sa.get_last_lr()
        for e in range(4, 10):
            for o, s in ((oa, sa), (ob, sb)):
                o.step()
                s.step(metrics[e]) if name == "plateau" else s.step()
            assert sb.get_last_lr() == sa.get_last_lr()
            assert [g["lr"] for g in ob.param_groups] == [g["lr"] for g in oa.param_groups]
            if name == "onecycle":
                assert [g["momentum"] for g in ob.param_groups] == [g["momentum"] for g in oa.param_groups]


def test_state_dict_contents_like_pytorch():
    opt = make_opt()
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    sd = sched.state_dict()
    assert "optimizer" not in sd
    assert sd["step_size"] == 2 and sd["gamma"] == 0.5 and sd["base_lrs"] == list(BASE)
    assert sd["last_epoch"] == 0 and sd["_step_count"] == 1 and sd["_last_lr"] == list(BASE)
    assert opt.param_groups[0]["initial_lr"] == BASE[0]
    lam = S.LambdaLR(make_opt(), lambda e: 1.0).state_dict()
    assert lam["lr_lambdas"] == [None, None] and "optimizer" not in lam


def test_warnings_and_errors():
    opt = make_opt()
    sched = S.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = make_opt()
    sched2 = S.StepLR(opt2, 2)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()
        sched2.get_last_lr()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched2.get_lr()
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        S.StepLR([], 2)
    fresh = make_opt()
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\] when resuming"):
        S.StepLR(fresh, 2, last_epoch=3)


def test_resume_with_last_epoch():
    opt = make_opt()
    S.StepLR(opt, 3, 0.5)  # stores initial_lr
    sched = S.StepLR(opt, 3, 0.5, last_epoch=4)  # resumes at epoch 5 (chainable form from the current lr)
    assert sched.last_epoch == 5 and sched.base_lrs == list(BASE)


def test_legacy_base_class_name():
    class Halving(S._LRScheduler):
        def get_lr(self):
            return [b * 0.5 ** self.last_epoch for b in self.base_lrs]

    opt = make_opt()
    sched = Halving(opt)
    assert isinstance(sched, S.LRScheduler)
    np.testing.assert_allclose(trajectory(opt, sched, 4), expect(lambda b, e: b * 0.5 ** e, 4), rtol=1e-12)
