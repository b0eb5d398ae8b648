"""Each optimizer against a hand-written numpy implementation of its published / PyTorch update rule: several
steps, several hyper-parameter settings, on every available device; state_dict round trips; PyTorch's errors."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import coretorch
from coretorch.testing import available_devices

optim = coretorch.optim
DEVICES = available_devices()
RNG = np.random.default_rng(1234)
W0, V0, B = RNG.standard_normal((2, 3)), RNG.standard_normal(3), RNG.standard_normal(2)


def loss_and_grads(W, v):
    """f(W, v) = |W v - b|^2 + |W|^2 / 2 + |v|^2 / 2 and its gradient, by hand."""
    r = W @ v - B
    return float(r @ r + 0.5 * (W * W).sum() + 0.5 * v @ v), [2 * np.outer(r, v) + W, 2 * W.T @ r + v]


def ct_loss(W, v):
    r = W @ v - coretorch.tensor(B, dtype=W.dtype, device=W.device)
    return (r * r).sum() + 0.5 * (W * W).sum() + 0.5 * (v * v).sum()


# ---- numpy references: one parameter array p, its gradient g, a dict of state, keyword hyper-parameters ---
def ref_adam(p, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False,
             decoupled=False):
    b1, b2 = betas
    t = s["t"] = s.get("t", 0) + 1
    g = -g if maximize else g
    if weight_decay and decoupled:
        p = p * (1 - lr * weight_decay)
    elif weight_decay:
        g = g + weight_decay * p
    m = s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    if amsgrad:
        v = s["vmax"] = np.maximum(s.get("vmax", 0), v)
    return p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)


def ref_adamw(p, g, s, weight_decay=1e-2, **kw):
    return ref_adam(p, g, s, weight_decay=weight_decay, decoupled=True, **kw)


def ref_rmsprop(p, g, s, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    v = s["v"] = alpha * s.get("v", 0) + (1 - alpha) * g * g
    if centered:
        ga = s["ga"] = alpha * s.get("ga", 0) + (1 - alpha) * g
        v = v - ga * ga
    step = g / (np.sqrt(v) + eps)
    if momentum:
        step = s["buf"] = momentum * s.get("buf", 0) + step
    return p - lr * step


def ref_adagrad(p, g, s, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                maximize=False):
    t = s["t"] = s.get("t", 0) + 1
    g = (-g if maximize else g) + weight_decay * p
    acc = s["sum"] = s.get("sum", initial_accumulator_value) + g * g
    return p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(acc) + eps)


def ref_adadelta(p, g, s, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    g = (-g if maximize else g) + weight_decay * p
    v = s["v"] = rho * s.get("v", 0) + (1 - rho) * g * g
    delta = np.sqrt(s.get("u", 0) + eps) / np.sqrt(v + eps) * g
    s["u"] = rho * s.get("u", 0) + (1 - rho) * delta * delta
    return p - lr * delta


def ref_adamax(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    b1, b2 = betas
    t = s["t"] = s.get("t", 0) + 1
    g = (-g if maximize else g) + weight_decay * p
    m = s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    u = s["u"] = np.maximum(b2 * s.get("u", 0), np.abs(g) + eps)
    return p - lr / (1 - b1 ** t) * m / u


def ref_nadam(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    t = s["t"] = s.get("t", 0) + 1
    g = -g if maximize else g
    if weight_decay and decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    elif weight_decay:
        g = g + weight_decay * p
    mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    # PyTorch keeps the product of the mu_t in a float32 0-d tensor (like ``step``): model that rounding
    prod = s["prod"] = float(np.float32(s.get("prod", 1.0)) * np.float32(mu))
    m = s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    denom = np.sqrt(v / (1 - b2 ** t)) + eps
    return p - lr * (1 - mu) / (1 - prod) * g / denom - lr * mu_next / (1 - prod * mu_next) * m / denom


def ref_radam(p, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
              maximize=False):
    b1, b2 = betas
    t = s["t"] = s.get("t", 0) + 1
    g = -g if maximize else g
    if weight_decay and decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    elif weight_decay:
        g = g + weight_decay * p
    m = s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    v = s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    m_hat = m / (1 - b1 ** t)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
    if rho_t <= 5:
        return p - lr * m_hat
    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    return p - lr * m_hat * rect * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)


def ref_lion(p, g, s, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
    """Chen et al. 2023, Algorithm 2."""
    b1, b2 = betas
    g = -g if maximize else g
    m = s.get("m", 0)
    p = p - lr * (np.sign(b1 * m + (1 - b1) * g) + weight_decay * p)
    s["m"] = b2 * m + (1 - b2) * g
    return p


SETTINGS = [
    ("Adam", ref_adam, {}), ("Adam", ref_adam, dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ("Adam", ref_adam, dict(lr=0.02, eps=1e-3, maximize=True)),
    ("AdamW", ref_adamw, {}), ("AdamW", ref_adamw, dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", ref_rmsprop, {}), ("RMSprop", ref_rmsprop, dict(lr=0.01, momentum=0.9, centered=True)),
    ("RMSprop", ref_rmsprop, dict(alpha=0.9, weight_decay=0.1, momentum=0.5, maximize=True)),
    ("Adagrad", ref_adagrad, {}), ("Adagrad", ref_adagrad, dict(lr=0.1, lr_decay=0.05, weight_decay=0.1,
                                                                initial_accumulator_value=0.3)),
    ("Adadelta", ref_adadelta, {}), ("Adadelta", ref_adadelta, dict(lr=0.5, rho=0.5, weight_decay=0.2,
                                                                    maximize=True)),
    ("Adamax", ref_adamax, {}), ("Adamax", ref_adamax, dict(lr=0.1, betas=(0.5, 0.9), weight_decay=0.1)),
    ("NAdam", ref_nadam, {}), ("NAdam", ref_nadam, dict(lr=0.05, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", ref_nadam, dict(weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", ref_radam, {}), ("RAdam", ref_radam, dict(lr=0.05, betas=(0.5, 0.6), weight_decay=0.1)),
    ("RAdam", ref_radam, dict(betas=(0.9, 0.7), weight_decay=0.1, decoupled_weight_decay=True)),
    ("Lion", ref_lion, {}), ("Lion", ref_lion, dict(lr=0.01, betas=(0.5, 0.8), weight_decay=0.5)),
]


def _params(device, dtype=coretorch.float64):
    return [coretorch.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in (W0, V0)]


def _train(opt, params, steps):
    for _ in range(steps):
        opt.zero_grad()
        ct_loss(*params).backward()
        opt.step()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,ref,hp", SETTINGS, ids=lambda v: v if isinstance(v, str) else "")
def test_matches_reference(name, ref, hp, device):
    params = _params(device)
    opt = getattr(optim, name)(params, **hp)
    want, states = [W0.copy(), V0.copy()], [{}, {}]
    for step in range(8):  # 8 steps: RAdam leaves its rho_t <= 5 phase after 5 or 6
        opt.zero_grad()
        ct_loss(*params).backward()
        opt.step()
        grads = loss_and_grads(*want)[1]
        want = [ref(p, g, s, **hp) for p, g, s in zip(want, grads, states)]
        for got, w in zip(params, want):
            np.testing.assert_allclose(got.detach().cpu().numpy(), w, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{name}({hp}) step {step + 1} on {device}")


def test_param_groups_and_float32():
    W, v = _params("cpu", coretorch.float32)
    opt = optim.Adam([{"params": [W], "lr": 0.1}, {"params": [v]}], lr=0.01, betas=(0.8, 0.9))
    want, states = [W0.copy(), V0.copy()], [{}, {}]
    for _ in range(4):
        opt.zero_grad()
        ct_loss(W, v).backward()
        opt.step()
        grads = loss_and_grads(*want)[1]
        want = [ref_adam(p, g, s, lr=lr, betas=(0.8, 0.9)) for p, g, s, lr in zip(want, grads, states, (0.1, 0.01))]
    np.testing.assert_allclose(W.detach().numpy(), want[0], rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(v.detach().numpy(), want[1], rtol=2e-5, atol=2e-6)
    assert W.dtype is coretorch.float32 and opt.state[W]["exp_avg"].dtype is coretorch.float32


STATE_KEYS = {"Adam": {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}, "AdamW": {"step", "exp_avg", "exp_avg_sq"},
              "RMSprop": {"step", "square_avg", "momentum_buffer", "grad_avg"}, "Adagrad": {"step", "sum"},
              "Adadelta": {"step", "square_avg", "acc_delta"}, "Adamax": {"step", "exp_avg", "exp_inf"},
              "NAdam": {"step", "mu_product", "exp_avg", "exp_avg_sq"}, "RAdam": {"step", "exp_avg", "exp_avg_sq"},
              "Lion": {"exp_avg"}}
EXTRA = {"Adam": dict(amsgrad=True), "RMSprop": dict(momentum=0.9, centered=True)}


@pytest.mark.parametrize("name", sorted(STATE_KEYS))
def test_state_dict_round_trip(name):
    # float32 parameters: load_state_dict casts float state to the parameter's dtype (as PyTorch does), which
    # would change NAdam's float32 mu_product if the parameters were float64
    a = _params("cpu", coretorch.float32)
    opt_a = getattr(optim, name)(a, lr=0.01, **EXTRA.get(name, {}))
    _train(opt_a, a, 3)
    sd = copy.deepcopy(opt_a.state_dict())
    assert set(sd["state"]) == {0, 1} and set(sd["state"][0]) == STATE_KEYS[name]
    assert sd["param_groups"][0]["params"] == [0, 1] and sd["param_groups"][0]["lr"] == 0.01
    if "step" in sd["state"][0]:
        assert sd["state"][0]["step"].item() == 3.0 and sd["state"][0]["step"].dtype is coretorch.float32
    b = [coretorch.tensor(p.detach().numpy(), requires_grad=True) for p in a]
    opt_b = getattr(optim, name)(b, lr=0.5)  # hyper-parameters come back from the state dict
    opt_b.load_state_dict(sd)
    assert opt_b.param_groups[0]["lr"] == 0.01
    _train(opt_a, a, 3)
    _train(opt_b, b, 3)
    for pa, pb in zip(a, b):
        np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy())


def test_hyper_parameter_errors():
    p = [coretorch.zeros(2, requires_grad=True)]
    cases = [(optim.Adam, dict(lr=-1.0), "Invalid learning rate: -1.0"), (optim.Adam, dict(eps=-1), "Invalid epsilon"),
             (optim.AdamW, dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
             (optim.NAdam, dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
             (optim.RAdam, dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
             (optim.RMSprop, dict(alpha=-0.5), "Invalid alpha value: -0.5"),
             (optim.RMSprop, dict(momentum=-0.5), "Invalid momentum value: -0.5"),
             (optim.Adagrad, dict(lr_decay=-1), "Invalid lr_decay value: -1"),
             (optim.Adagrad, dict(initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
             (optim.Adadelta, dict(rho=1.5), "Invalid rho value: 1.5"),
             (optim.NAdam, dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
             (optim.Lion, dict(lr=-1), "Invalid learning rate: -1")]
    for cls, kw, msg in cases:
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(".", r"\.")):
            cls(p, **kw)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [p[0]]}, {"params": [coretorch.zeros(1, requires_grad=True)]}])
    assert optim.Adam(p).defaults["lr"] == 1e-3 and optim.AdamW(p).defaults["weight_decay"] == 1e-2
    assert optim.RMSprop(p).defaults["alpha"] == 0.99 and optim.Adamax(p).defaults["lr"] == 2e-3
    assert optim.Lion(p).defaults["betas"] == (0.9, 0.99) and optim.LBFGS(p).defaults["max_eval"] == 25


def test_adagrad_state_exists_before_the_first_step():
    p = coretorch.zeros(3, requires_grad=True)
    opt = optim.Adagrad([p], initial_accumulator_value=0.5)
    assert opt.state[p]["sum"].tolist() == [0.5] * 3 and opt.state[p]["step"].item() == 0


def test_closure_and_missing_grads():
    p, q = coretorch.ones(2, requires_grad=True), coretorch.ones(2, requires_grad=True)
    opt = optim.Adam([p, q], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 2.0
    assert p.tolist() != [1.0, 1.0] and q.tolist() == [1.0, 1.0] and len(opt.state[q]) == 0


# ---- L-BFGS ----------------------------------------------------------------------------------------------
def ref_lbfgs(x, steps, lr=1, max_iter=20, tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100):
    """PyTorch's L-BFGS without line search (two-loop recursion), in numpy; one row of x per step() call."""
    def fg(z):
        loss, (gW, gv) = loss_and_grads(z[:6].reshape(2, 3), z[6:])
        return loss, np.concatenate([gW.ravel(), gv])
    max_eval, st, out = max_iter * 5 // 4, {"n_iter": 0}, []
    for _ in range(steps):
        loss, g = fg(x)
        evals, n = 1, 0
        while np.abs(g).max() > tolerance_grad and n < max_iter:
            n += 1
            st["n_iter"] += 1
            if st["n_iter"] == 1:
                d, dirs, stps, ro, H = -g, [], [], [], 1.0
            else:
                d, t, dirs, stps, ro, H, prev_g = (st[k] for k in ("d", "t", "dirs", "stps", "ro", "H", "prev_g"))
                y, s = g - prev_g, d * t
                if y @ s > 1e-10:
                    if len(dirs) == history_size:
                        dirs, stps, ro = dirs[1:], stps[1:], ro[1:]
                    dirs, stps, ro, H = dirs + [y], stps + [s], ro + [1 / (y @ s)], (y @ s) / (y @ y)
                q, al = -g, [0.0] * len(dirs)
                for i in reversed(range(len(dirs))):
                    al[i] = (stps[i] @ q) * ro[i]
                    q = q - al[i] * dirs[i]
                d = q * H
                for i in range(len(dirs)):
                    d = d + stps[i] * (al[i] - (dirs[i] @ d) * ro[i])
            t = min(1.0, 1.0 / np.abs(g).sum()) * lr if st["n_iter"] == 1 else lr
            st.update(d=d, t=t, dirs=dirs, stps=stps, ro=ro, H=H, prev_g=g)
            prev_loss = loss
            if g @ d > -tolerance_change:
                break
            x = x + t * d
            if n == max_iter:
                break
            loss, g = fg(x)
            evals += 1
            if evals >= max_eval or np.abs(g).max() <= tolerance_grad or np.abs(d * t).max() <= tolerance_change \
                    or abs(loss - prev_loss) < tolerance_change:
                break
        out.append(x.copy())
    return out


def _lbfgs_run(device, steps, **kw):
    W, v = _params(device)
    opt = optim.LBFGS([W, v], **kw)

    def closure():
        opt.zero_grad()
        loss = ct_loss(W, v)
        loss.backward()
        return loss

    traj = []
    for _ in range(steps):
        opt.step(closure)
        traj.append(np.concatenate([W.detach().cpu().numpy().ravel(), v.detach().cpu().numpy()]))
    return traj, opt


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", [dict(max_iter=4, history_size=3), dict(lr=0.5, max_iter=3, history_size=2),
                                dict(max_iter=2)], ids=str)
def test_lbfgs_matches_reference(kw, device):
    got, opt = _lbfgs_run(device, 4, **kw)
    want = ref_lbfgs(np.concatenate([W0.ravel(), V0]), 4, **kw)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11, err_msg=f"LBFGS({kw}) step {i + 1}")
    assert len(opt.state[opt.param_groups[0]["params"][0]]["old_dirs"]) <= kw.get("history_size", 100)


def _rosenbrock(line_search_fn):
    x = coretorch.tensor([-1.5, 2.0], dtype=coretorch.float64, requires_grad=True)
    opt = optim.LBFGS([x], line_search_fn=line_search_fn, max_iter=100, tolerance_grad=1e-12, tolerance_change=1e-15)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    return x.detach().numpy(), opt.state[x]["func_evals"]


def test_lbfgs_strong_wolfe_converges():
    """The strong-Wolfe line search reaches the Rosenbrock minimum (1, 1) with fewer function evaluations than
    the fixed step does."""
    x, evals = _rosenbrock("strong_wolfe")
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-6)
    x_fixed, evals_fixed = _rosenbrock(None)
    np.testing.assert_allclose(x_fixed, [1.0, 1.0], atol=1e-6)
    assert evals < evals_fixed
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        _rosenbrock("backtracking")


# ---- L-BFGS with the strong-Wolfe line search ----------------------------------------------------------------
def _ref_cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """torch.optim.lbfgs._cubic_interpolate: minimiser of the cubic Hermite interpolant, clamped to the bounds
    (default: the interval between the two points); the bounds' midpoint when the cubic has no minimiser."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    with np.errstate(divide="ignore", invalid="ignore"):  # the g's are 0-d tensors in PyTorch: x / 0 is +-inf
        if x1 <= x2:
            xm = x2 - (x2 - x1) * (np.float64(g2 + d2 - d1) / np.float64(g2 - g1 + 2 * d2))
        else:
            xm = x1 - (x1 - x2) * (np.float64(g1 + d2 - d1) / np.float64(g1 - g2 + 2 * d2))
    return min(max(xm, lo), hi)


def _ref_strong_wolfe(fg, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """torch.optim.lbfgs._strong_wolfe on numpy vectors: returns (f, g, t, number of evaluations).  Each
    bracket end is a list [t, f, g, g.d]."""
    d_norm = np.abs(d).max()
    f_new, g_new = fg(x + t * d)
    evals, it, done = 1, 0, False
    gtd_new = g_new @ d
    prev = [0, f, g, gtd]
    while it < max_ls:  # bracketing phase
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= prev[1]):
            ends = [prev, [t, f_new, g_new, gtd_new]]
            break
        if abs(gtd_new) <= -c2 * gtd:
            ends, done = [[t, f_new, g_new, gtd_new]], True
            break
        if gtd_new >= 0:
            ends = [prev, [t, f_new, g_new, gtd_new]]
            break
        t_next = _ref_cubic_interpolate(prev[0], prev[1], prev[3], t, f_new, gtd_new,
                                        bounds=(t + 0.01 * (t - prev[0]), t * 10))
        prev, t = [t, f_new, g_new, gtd_new], t_next
        f_new, g_new = fg(x + t * d)
        evals, it = evals + 1, it + 1
        gtd_new = g_new @ d
    if it == max_ls:
        ends = [[0, f, g, None], [t, f_new, g_new, None]]
    lo = 0 if ends[0][1] <= ends[-1][1] else 1
    insuf = False
    while not done and it < max_ls:  # zoom phase
        a, b = ends[0][0], ends[1][0]
        if abs(b - a) * d_norm < tolerance_change:
            break
        t = _ref_cubic_interpolate(ends[0][0], ends[0][1], ends[0][3], ends[1][0], ends[1][1], ends[1][3])
        top, bot = max(a, b), min(a, b)
        eps = 0.1 * (top - bot)
        if min(top - t, t - bot) < eps:
            if insuf or t >= top or t <= bot:
                t = top - eps if abs(t - top) < abs(t - bot) else bot + eps
                insuf = False
            else:
                insuf = True
        else:
            insuf = False
        f_new, g_new = fg(x + t * d)
        evals, it = evals + 1, it + 1
        gtd_new = g_new @ d
        new = [t, f_new, g_new, gtd_new]
        if f_new > f + c1 * t * gtd or f_new >= ends[lo][1]:
            ends[1 - lo] = new
            lo = 0 if ends[0][1] <= ends[1][1] else 1
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (ends[1 - lo][0] - ends[lo][0]) >= 0:
                ends[1 - lo] = ends[lo]
            ends[lo] = new
    return ends[lo][1], ends[lo][2], ends[lo][0], evals


def ref_lbfgs_strong_wolfe(fg, x, steps, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                           tolerance_change=1e-9, history_size=100):
    """PyTorch's LBFGS.step with line_search_fn="strong_wolfe", in numpy.  fg(x) -> (loss, gradient).  Returns,
    per step() call, (x, cumulative closure evaluations, cumulative iterations)."""
    max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
    st, out = dict(func_evals=0, n_iter=0), []
    for _ in range(steps):
        loss, g = fg(x)
        st["func_evals"] += 1
        evals, n = 1, 0
        if np.abs(g).max() > tolerance_grad:
            while n < max_iter:
                n += 1
                st["n_iter"] += 1
                if st["n_iter"] == 1:
                    d, st["S"], st["Y"], st["rho"], st["H"] = -g, [], [], [], 1.0
                else:
                    S, Y, rho = st["S"], st["Y"], st["rho"]
                    y, s = g - st["g_prev"], st["d"] * st["t"]
                    if y @ s > 1e-10:
                        if len(S) == history_size:
                            del S[0], Y[0], rho[0]
                        S.append(s)
                        Y.append(y)
                        rho.append(1.0 / (y @ s))
                        st["H"] = (y @ s) / (y @ y)
                    q, alpha = -g, {}
                    for i in reversed(range(len(S))):
                        alpha[i] = (S[i] @ q) * rho[i]
                        q = q - alpha[i] * Y[i]
                    d = st["H"] * q
                    for i in range(len(S)):
                        d = d + (alpha[i] - (Y[i] @ d) * rho[i]) * S[i]
                st["g_prev"], prev_loss = g, loss
                t = min(1.0, 1.0 / np.abs(g).sum()) * lr if st["n_iter"] == 1 else lr
                st["d"], st["t"] = d, t
                gtd = g @ d
                if gtd > -tolerance_change:
                    break
                loss, g, t, ls_evals = _ref_strong_wolfe(fg, x, t, d, loss, g, gtd)
                st["t"] = t
                x = x + t * d
                evals += ls_evals
                st["func_evals"] += ls_evals
                if n == max_iter or evals >= max_eval or np.abs(g).max() <= tolerance_grad:
                    break
                if np.abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                    break
        out.append((x.copy(), st["func_evals"], st["n_iter"]))
    return out


def _rosen_np(z):
    a, b = z
    return (1 - a) ** 2 + 100 * (b - a * a) ** 2, np.array([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)])


LS_X, LS_Y = RNG.standard_normal((12, 3)), RNG.standard_normal(12)


def _lsq_np(z):
    """0.5 |X w + c - y|^2 with z = (w, c)."""
    r = LS_X @ z[:3] + z[3] - LS_Y
    return 0.5 * float(r @ r), np.concatenate([LS_X.T @ r, [r.sum()]])


def _wolfe_problem(name, device):
    """Parameters, their coretorch loss, the numpy (loss, gradient) function and the flat start point."""
    f64 = coretorch.float64
    if name == "rosenbrock":
        z0 = np.array([-1.5, 2.0])
        x = coretorch.tensor(z0, dtype=f64, device=device, requires_grad=True)
        return [x], lambda: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2, _rosen_np, z0
    z0 = np.array([0.5, -1.0, 2.0, 0.3])
    w = coretorch.tensor(z0[:3], dtype=f64, device=device, requires_grad=True)
    c = coretorch.tensor(z0[3:], dtype=f64, device=device, requires_grad=True)
    X, y = (coretorch.tensor(a, dtype=f64, device=device) for a in (LS_X, LS_Y))

    def loss():
        r = X @ w + c - y
        return 0.5 * (r * r).sum()
    return [w, c], loss, _lsq_np, z0


# history_size=1 only on the well-conditioned least squares: on Rosenbrock it is chaotic (two numpy runs whose
# gradients differ in rounding only part by 1e-5 within 20 iterations)
WOLFE_SETTINGS = [dict(), dict(lr=30.0, history_size=2, max_iter=5),
                  dict(lr=0.5, history_size=5, max_iter=7, max_eval=9),
                  dict(lr=300.0, max_iter=6, tolerance_grad=1e-5, tolerance_change=1e-6)]
WOLFE_CASES = [("rosenbrock", 6, kw) for kw in WOLFE_SETTINGS] + [("lstsq", 4, kw) for kw in WOLFE_SETTINGS] + [
    ("lstsq", 4, dict(history_size=1)), ("lstsq", 3, dict(lr=0.2, history_size=1, max_iter=3))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("problem,steps,kw", WOLFE_CASES, ids=str)
def test_lbfgs_strong_wolfe_matches_reference(problem, steps, kw, device):
    """Parameters and closure-evaluation counts after every step() against the numpy port of PyTorch."""
    params, loss_fn, fg, z0 = _wolfe_problem(problem, device)
    opt = optim.LBFGS(params, line_search_fn="strong_wolfe", **kw)
    calls = [0]

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    want = ref_lbfgs_strong_wolfe(fg, z0, steps, **kw)
    for i, (x, evals, n_iter) in enumerate(want):
        opt.step(closure)
        got = np.concatenate([p.detach().cpu().numpy().ravel() for p in params])
        msg = f"LBFGS(strong_wolfe, {kw}) on {problem}, step {i + 1} on {device}"
        # Rosenbrock's curved valley amplifies rounding (autograd's vs the hand-written gradient) ~1e3-fold per
        # step late in a run; a real deviation shows as a different evaluation count or an O(1) difference
        rtol = 1e-9 if problem == "lstsq" else 1e-6
        np.testing.assert_allclose(got, x, rtol=rtol, atol=rtol * 1e-2, err_msg=msg)
        state = opt.state[params[0]]
        assert (calls[0], state["func_evals"], state["n_iter"]) == (evals, evals, n_iter), msg
    assert len(opt.state[params[0]]["old_dirs"]) <= kw.get("history_size", 100)


def _line(fn, device):
    """An obj_func for the plugin's _strong_wolfe (numpy x, coretorch d) over the numpy (loss, gradient) fn."""
    def obj_func(x, t, d):
        f, g = fn(x + t * d.cpu().numpy())
        return f, coretorch.tensor(g, dtype=coretorch.float64, device=device)
    return obj_func


LINE_CASES = {  # (loss, gradient), start, direction
    # concave along d: 25 extrapolations (max_ls) and cubic steps with a zero denominator (+inf, clamped)
    "concave": (lambda z: (float(-z.sum() - 0.01 * z @ z), -1 - 0.02 * z), [0.0, 0.0], [1.0, 0.5]),
    # a kink: the zoom never meets the curvature condition and stops when the bracket is tiny
    "kink": (lambda z: (float(np.abs(z - 0.3).sum()), np.sign(z - 0.3)), [0.0], [1.0]),
    "rosenbrock": (_rosen_np, [-1.5, 2.0], [-30.0, 1.0]),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(LINE_CASES))
def test_strong_wolfe_line_search_matches_reference(case, device):
    from coretorch_extra_ops.lbfgs import _strong_wolfe
    fn, x, d = (np.array(v, dtype=np.float64) if i else v for i, v in enumerate(LINE_CASES[case]))
    f0, g0 = fn(x)
    want = _ref_strong_wolfe(fn, x, 1.0, d, f0, g0, g0 @ d)
    dt = coretorch.tensor(d, dtype=coretorch.float64, device=device)
    gt = coretorch.tensor(g0, dtype=coretorch.float64, device=device)
    f, g, t, evals = _strong_wolfe(_line(fn, device), x, 1.0, dt, f0, gt, float(g0 @ d))
    assert evals == want[3]
    np.testing.assert_allclose([f, t], [want[0], want[2]], rtol=1e-12)
    np.testing.assert_allclose(g.cpu().numpy(), want[1], rtol=1e-12)
