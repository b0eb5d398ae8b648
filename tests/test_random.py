"""Random sampling on every device: Generator objects and their state, the generator= keyword, the distributions
(checked statistically with fixed seeds: means and variances within a few standard errors of the sample size,
chi-square tests on frequencies), reproducibility, fork_rng, PyTorch's errors, and the factories' legacy forms
(randint(high, size), size=, set_default_device)."""
from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest
from scipy import stats

import coretorch as torch
from coretorch.testing import available_devices
from coretorch.utils.data import DataLoader, RandomSampler, TensorDataset, WeightedRandomSampler, random_split

DEVICES = available_devices()
N = 200_000
K = 6  # standard errors allowed: with fixed seeds a false failure has probability ~1e-9 per check


def _h(t) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float64)


def _near(value: float, expect: float, se: float, what: str) -> None:
    assert abs(value - expect) <= K * se, f"{what}: {value} vs {expect} (standard error {se})"


def _mean_var(x: np.ndarray, mean: float, var: float, mu4: float, what: str) -> None:
    """Sample mean and variance against the distribution's, mu4 its fourth central moment."""
    n = x.size
    _near(x.mean(), mean, math.sqrt(var / n), what + " mean")
    _near(x.var(), var, math.sqrt((mu4 - var * var) / n), what + " variance")


def _chi2_ok(counts: np.ndarray, probs: np.ndarray, what: str) -> None:
    keep = probs > 0
    assert counts[~keep].sum() == 0, f"{what}: a zero-probability category was drawn: {counts}"
    expected = probs[keep] / probs[keep].sum() * counts.sum()
    chi2 = float(((counts[keep] - expected) ** 2 / expected).sum())
    assert chi2 < stats.chi2.ppf(1 - 1e-7, keep.sum() - 1), f"{what}: chi2 {chi2}, counts {counts}"


def _gen(device, s=1234):
    return torch.Generator(device=device).manual_seed(s)


# ---------------------------------------------------------------------------------------------
# Generator objects
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_generator_as_pytorch_builds_it(device):
    g = torch.Generator(device=device)
    assert g.initial_seed() == 67280421310721
    assert g.device.type == device and isinstance(g.device, torch.device)
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    st = g.get_state()
    assert st.dtype is torch.uint8 and st.ndim == 1 and st.device.type == "cpu"
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1  # negative seeds wrap to uint64, as in PyTorch
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):  # (PyTorch 2.13's exception)
        g.manual_seed(2 ** 64)
    assert torch.Generator().device == torch.device("cpu")


SAMPLERS = {
    "rand": lambda d, g: torch.rand(3, 5, generator=g, device=d),
    "randn": lambda d, g: torch.randn((4,), generator=g, device=d, dtype=torch.float32),
    "randint": lambda d, g: torch.randint(-5, 9, (7,), generator=g, device=d),
    "randperm": lambda d, g: torch.randperm(12, generator=g, device=d),
    "normal_ff": lambda d, g: torch.normal(2.0, 3.0, (6,), generator=g, device=d),
    "normal_tt": lambda d, g: torch.normal(torch.zeros(3, 1, device=d), torch.ones(4, device=d), generator=g),
    "normal_tf": lambda d, g: torch.normal(torch.zeros(5, device=d), 2.0, generator=g),
    "normal_ft": lambda d, g: torch.normal(1.0, torch.ones(5, device=d), generator=g),
    "multinomial": lambda d, g: torch.multinomial(torch.ones(3, 8, device=d), 4, generator=g),
    "multinomial_r": lambda d, g: torch.multinomial(torch.ones(8, device=d), 20, True, generator=g),
    "bernoulli": lambda d, g: torch.bernoulli(torch.full((9,), 0.5, device=d), generator=g),
    "bernoulli_p": lambda d, g: torch.bernoulli(torch.zeros(9, device=d), 0.5, generator=g),
    "poisson": lambda d, g: torch.poisson(torch.full((9,), 20.0, device=d), generator=g),
    "rand_like": lambda d, g: torch.rand_like(torch.zeros(4, device=d), generator=g),
    "randn_like": lambda d, g: torch.randn_like(torch.zeros(4, device=d), generator=g),
    "randint_like": lambda d, g: torch.randint_like(torch.zeros(4, device=d), 100, generator=g),
    "uniform_": lambda d, g: torch.empty(6, device=d).uniform_(-1, 1, generator=g),
    "normal_": lambda d, g: torch.empty(6, device=d).normal_(generator=g),
    "exponential_": lambda d, g: torch.empty(6, device=d).exponential_(generator=g),
    "geometric_": lambda d, g: torch.empty(6, device=d).geometric_(0.2, generator=g),
    "log_normal_": lambda d, g: torch.empty(6, device=d).log_normal_(generator=g),
    "cauchy_": lambda d, g: torch.empty(6, device=d).cauchy_(generator=g),
    "random_": lambda d, g: torch.empty(6, device=d, dtype=torch.int64).random_(generator=g),
    "bernoulli_": lambda d, g: torch.empty(9, device=d).bernoulli_(0.5, generator=g),
    "bernoulli_t": lambda d, g: torch.empty(9, device=d).bernoulli_(torch.full((9,), 0.5, device=d), generator=g),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_seed_same_samples_and_state_round_trip(device, name):
    f = SAMPLERS[name]
    a, b = _gen(device), _gen(device)
    first = _h(f(device, a))
    np.testing.assert_array_equal(first, _h(f(device, b)))
    state = a.get_state()
    nxt = _h(f(device, a))
    if not name.startswith("bernoulli"):  # the next call draws new samples (9 coin flips may repeat)
        assert not np.array_equal(nxt, first), name
    c = torch.Generator(device=device).set_state(state)
    np.testing.assert_array_equal(_h(f(device, c)), nxt)  # another generator given the state continues alike
    a.set_state(state)
    np.testing.assert_array_equal(_h(f(device, a)), nxt)


@pytest.mark.parametrize("device", DEVICES)
def test_generator_clone_pickle_deepcopy(device):
    import copy
    import pickle
    g = _gen(device, 13)
    torch.rand(3, generator=g, device=device)
    for c in (g.clone_state(), pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
        assert c is not g and c.device == g.device and c.initial_seed() == 13
        np.testing.assert_array_equal(_h(torch.rand(4, generator=c, device=device)),
                                      _h(torch.rand(4, generator=g.clone_state(), device=device)))


@pytest.mark.parametrize("device", DEVICES)
def test_a_generator_leaves_the_default_one_alone(device):
    torch.manual_seed(11)
    want = _h(torch.rand(5, device=device))
    torch.manual_seed(11)
    g = _gen(device, 99)
    torch.randn(100, generator=g, device=device)
    torch.empty(10, device=device).uniform_(generator=g)
    np.testing.assert_array_equal(_h(torch.rand(5, device=device)), want)


@pytest.mark.parametrize("device", DEVICES)
def test_set_state_checks(device):
    g = torch.Generator(device=device)
    with pytest.raises(TypeError):
        g.set_state(torch.zeros(3))
    with pytest.raises(RuntimeError):
        g.set_state(torch.zeros(3, dtype=torch.uint8))


def test_global_seed_state_and_fork_rng():
    assert torch.default_generator is torch.random.default_generator is torch.manual_seed(1)
    assert torch.default_generator.device == torch.device("cpu") and isinstance(torch.default_generator,
                                                                                 torch.Generator)
    torch.manual_seed(3)
    assert torch.initial_seed() == 3 and torch.random.initial_seed() == 3
    assert isinstance(torch.manual_seed(3), torch.Generator)
    state = torch.get_rng_state()
    assert state.dtype is torch.uint8
    a = _h(torch.rand(4))
    torch.set_rng_state(state)
    np.testing.assert_array_equal(_h(torch.rand(4)), a)
    s = torch.seed()
    assert torch.initial_seed() == s
    torch.random.manual_seed(5)
    assert torch.random.default_generator.initial_seed() == 5
    before = torch.random.get_rng_state()
    devices = [d for d in DEVICES if d != "cpu"]
    others = {d: _h(torch.rand(3, device=d)) for d in devices}  # the devices' default generators are in use
    torch.random.manual_seed(5)
    with torch.random.fork_rng(device_type="opencl"):
        torch.rand(10)
        for d in devices:
            torch.rand(10, device=d)
    np.testing.assert_array_equal(_h(torch.random.get_rng_state()), _h(before))
    for d, want in others.items():
        np.testing.assert_array_equal(_h(torch.rand(3, device=d)), want)
    if devices:
        g = torch.random.default_generator
        st = torch.Generator(device=devices[0]).manual_seed(0)  # a separate generator is not forked
        mark = st.get_state()
        torch.manual_seed(9)
        want = _h(torch.rand(3, device=devices[0]))
        torch.manual_seed(9)
        with torch.random.fork_rng(devices=[0], device_type=devices[0]):
            torch.rand(5, device=devices[0])
            torch.rand(5, device=devices[0], generator=st)
        np.testing.assert_array_equal(_h(torch.rand(3, device=devices[0])), want)
        assert not np.array_equal(_h(st.get_state()), _h(mark)) and g.device.type == "cpu"
    with torch.random.fork_rng(enabled=False):
        torch.rand(1)
    assert not np.array_equal(_h(torch.random.get_rng_state()), _h(before))


@pytest.mark.parametrize("device", DEVICES)
def test_manual_seed_seeds_every_device(device):
    torch.manual_seed(21)
    a = _h(torch.randn(6, device=device))
    torch.manual_seed(21)
    np.testing.assert_array_equal(_h(torch.randn(6, device=device)), a)


def test_poisson_rate_check_on_cpu():
    for bad in (-1.0, math.nan):
        with pytest.raises(RuntimeError, match="invalid Poisson rate"):
            torch.poisson(torch.tensor([1.0, bad]))


def test_generator_errors():
    with pytest.raises(TypeError):
        torch.rand(2, generator=np.random.default_rng(0))
    if "opencl" in DEVICES:
        with pytest.raises(RuntimeError, match="device type for generator"):
            torch.rand(2, generator=torch.Generator(device="opencl"))
        with pytest.raises(RuntimeError, match="device type for generator"):
            torch.empty(2, device="opencl").normal_(generator=torch.Generator())
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        torch.manual_seed(2 ** 64)


# ---------------------------------------------------------------------------------------------
# distributions (statistics)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_continuous_distributions(device):
    g = _gen(device, 1)
    x = _h(torch.empty(N, device=device).uniform_(-1, 3, generator=g))
    assert x.min() >= -1 and x.max() < 3
    _mean_var(x, 1.0, 16 / 12, 4 ** 4 / 80, "uniform")
    x = _h(torch.rand(N, generator=g, device=device))
    _mean_var(x, 0.5, 1 / 12, 1 / 80, "rand")
    x = _h(torch.randn(N, generator=g, device=device))
    _mean_var(x, 0.0, 1.0, 3.0, "randn")
    x = _h(torch.empty(N, device=device).normal_(2, 0.5, generator=g))
    _mean_var(x, 2.0, 0.25, 3 * 0.25 ** 2, "normal_")
    x = _h(torch.empty(N, device=device).exponential_(2.0, generator=g))
    assert x.min() > 0
    _mean_var(x, 0.5, 0.25, 9 / 16, "exponential_")
    x = np.log(_h(torch.empty(N, device=device).log_normal_(0.2, 0.5, generator=g)))
    _mean_var(x, 0.2, 0.25, 3 * 0.25 ** 2, "log of log_normal_")
    x = _h(torch.empty(N, device=device).cauchy_(1.0, 2.0, generator=g))
    for q, at in ((0.25, -1.0), (0.5, 1.0), (0.75, 3.0)):  # the quartiles are median -+ sigma
        _near((x < at).mean(), q, math.sqrt(q * (1 - q) / N), f"cauchy_ below {at}")


@pytest.mark.parametrize("device", DEVICES)
def test_discrete_distributions(device):
    g = _gen(device, 2)
    p = 0.3
    x = _h(torch.empty(N, device=device).geometric_(p, generator=g))
    assert x.min() >= 1 and np.all(x == np.round(x))
    q = 1 - p
    _mean_var(x, 1 / p, q / p ** 2, q * (p * p + 9 * q) / p ** 4, "geometric_")
    x = _h(torch.empty(N, device=device, dtype=torch.int64).geometric_(0.5, generator=g))
    _near(x.mean(), 2.0, math.sqrt(2 / N), "geometric_ int64")
    for rate in (0.7, 4.0, 30.0, 500.0):  # both of the opencl kernel's algorithms (below and above 10)
        x = _h(torch.poisson(torch.full((N,), rate, device=device), generator=g))
        assert x.min() >= 0 and np.all(x == np.round(x))
        _mean_var(x, rate, rate, rate * (1 + 3 * rate), f"poisson({rate})")
    for prob in (0.1, 0.5):
        x = _h(torch.empty(N, device=device).bernoulli_(prob, generator=g))
        assert set(np.unique(x)) <= {0.0, 1.0}
        _near(x.mean(), prob, math.sqrt(prob * (1 - prob) / N), f"bernoulli_({prob})")
    probs = torch.tensor([0.0, 0.2, 0.9, 1.0], device=device).repeat(N // 4)
    x = _h(torch.bernoulli(probs, generator=g)).reshape(-1, 4)
    assert x[:, 0].max() == 0 and x[:, 3].min() == 1
    _near(x[:, 1].mean(), 0.2, math.sqrt(0.16 / x.shape[0]), "bernoulli(tensor) 0.2")
    x = _h(torch.randint(3, 10, (N,), generator=g, device=device)).astype(np.int64)
    _chi2_ok(np.bincount(x, minlength=10), np.array([0, 0, 0] + [1] * 7, float), "randint")


@pytest.mark.parametrize("device", DEVICES)
def test_random_ranges_per_dtype(device):
    g = _gen(device, 3)
    for dt, hi in ((torch.int8, 127), (torch.uint8, 255), (torch.int16, 32767), (torch.float16, 2048),
                   (torch.float32, 2 ** 24)):
        x = _h(torch.empty(N // 4, device=device, dtype=dt).random_(generator=g))
        assert x.min() >= 0 and x.max() <= hi and x.max() > hi * 0.99, dt
    x = torch.empty(N // 4, device=device, dtype=torch.bool).random_(generator=g)
    _near(_h(x).mean(), 0.5, math.sqrt(0.25 / (N // 4)), "bool random_")
    x = torch.empty(1000, device=device, dtype=torch.int64).random_(generator=g).cpu().numpy()
    assert x.min() >= 0 and x.max() > 2 ** 62  # [0, 2**63 - 1]
    x = _h(torch.empty(N // 4, device=device).random_(5, generator=g))
    _chi2_ok(np.bincount(x.astype(np.int64)), np.ones(5), "random_(to)")
    x = _h(torch.empty(N // 4, device=device, dtype=torch.int32).random_(-3, 2, generator=g)).astype(np.int64)
    _chi2_ok(np.bincount(x + 3), np.ones(5), "random_(from, to)")
    x = _h(torch.empty(100, device=device, dtype=torch.int64).random_(2 ** 40, None, generator=g))
    assert x.min() >= 2 ** 40
    x = torch.empty(1000, device=device, dtype=torch.int64).random_(-2 ** 63, None, generator=g).cpu().numpy()
    assert x.min() < -2 ** 62 and x.max() > 2 ** 62  # the whole int64 range
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        torch.empty(3, device=device).random_(5, 5)
    x = _h(torch.rand(N, dtype=torch.float16, generator=g, device=device))
    assert x.max() < 1 and x.min() >= 0  # rounding to float16 never reaches 1


@pytest.mark.parametrize("device", DEVICES)
def test_multinomial_frequencies(device):
    g = _gen(device, 4)
    p = np.array([0.1, 0.0, 0.4, 0.2, 0.3])
    w = torch.tensor(np.stack([p, p[::-1] * 7]), dtype=torch.float32, device=device)  # unnormalised weights
    s = torch.multinomial(w, 30000, True, generator=g)
    assert s.shape == (2, 30000) and s.dtype is torch.int64 and s.device.type == device
    s = s.cpu().numpy()
    _chi2_ok(np.bincount(s[0], minlength=5), p, "with replacement, row 0")
    _chi2_ok(np.bincount(s[1], minlength=5), p[::-1], "with replacement, row 1")
    rows = torch.tensor(p, dtype=torch.float32, device=device).repeat(20000, 1)
    s = torch.multinomial(rows, 3, generator=g).cpu().numpy()
    assert all(len(set(r)) == 3 for r in s[:2000])  # without replacement: each category at most once
    assert (s != 1).all()  # four categories have weight: the zero one is never needed
    _chi2_ok(np.bincount(s[:, 0], minlength=5), p, "first draw without replacement")
    # the second draw: P(j second) = sum_i p_i p_j / (1 - p_i)
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(5) if i != j) for j in range(5)])
    _chi2_ok(np.bincount(s[:, 1], minlength=5), second, "second draw without replacement")
    many = np.arange(1.0, 41.0)  # a few draws of many categories (the cpu kernel's partition path)
    s = torch.multinomial(torch.tensor(many, device=device).repeat(4000, 1), 3, generator=g).cpu().numpy()
    assert all(len(set(r)) == 3 for r in s)
    _chi2_ok(np.bincount(s[:, 0], minlength=40), many, "first of 3 draws from 40 categories")
    s = torch.multinomial(torch.tensor([0.0, 1.0, 0.0, 2.0], device=device), 4, generator=g).cpu().numpy()
    assert sorted(s.tolist()) == [0, 1, 2, 3] and set(s[:2]) == {1, 3}  # zero weights only once the rest are out
    s = torch.multinomial(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16, device=device), 2, generator=g)
    assert s.shape == (2,) and s.dtype is torch.int64


@pytest.mark.parametrize("device", DEVICES)
def test_multinomial_errors(device):
    def t(v):
        return torch.tensor(v, device=device)
    cases = ((t([0.5, -0.1]), 1, False, "either `inf`, `nan` or element < 0"),
             (t([0.5, math.inf]), 1, False, "either `inf`, `nan` or element < 0"),
             (t([0.5, math.nan]), 2, False, "either `inf`, `nan` or element < 0"),
             (t([0.5, -0.1]), 3, True, "encountering probability entry < 0"),
             (t([0.5, math.nan]), 3, True, "encountering probability entry = infinity or NaN"),
             (t([[0.5, 0.5], [0.0, 0.0]]), 1, False, "sum of probabilities <= 0"),
             (t([[0.5, 0.5], [0.0, 0.0]]), 3, True, "sum of probabilities <= 0"),
             (t([0.5, 0.5]), 3, False, "cannot sample n_sample > prob_dist.size"),
             (t([0.5, 0.5]), 0, True, "cannot sample n_sample <= 0 samples"),
             (t([[[0.5]]]), 1, True, "prob_dist must be 1 or 2 dim"),
             (t([1, 2]), 1, True, "multinomial only supports floating-point dtypes for input, got: Long"))
    for probs, n, repl, msg in cases:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            torch.multinomial(probs, n, repl)
    assert torch.multinomial(torch.ones(0, 3, device=device), 2).shape == (0, 2)


@pytest.mark.parametrize("device", DEVICES)
def test_randperm(device):
    g = _gen(device, 5)
    p = torch.randperm(1000, generator=g, device=device)
    assert p.dtype is torch.int64 and p.device.type == device
    h = p.cpu().numpy()
    assert sorted(h.tolist()) == list(range(1000)) and not np.array_equal(h, np.arange(1000))
    firsts = np.array([torch.randperm(4, generator=g, device=device)[0].item() for _ in range(800)])
    _chi2_ok(np.bincount(firsts, minlength=4), np.ones(4), "randperm first element")
    assert torch.randperm(0, device=device).shape == (0,)
    assert torch.randperm(5, dtype=torch.float32, device=device).dtype is torch.float32
    with pytest.raises(RuntimeError):
        torch.randperm(-1)


# ---------------------------------------------------------------------------------------------
# normal's overloads and autograd (zero gradients, as derivatives.yaml has them)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_normal_overloads(device):
    g = _gen(device, 6)
    mean = torch.tensor([[-5.0], [0.0], [5.0]], device=device)
    std = torch.tensor([0.5, 1.0, 2.0, 4.0], device=device)
    assert torch.normal(mean, std, generator=g).shape == (3, 4)
    x = _h(torch.normal(torch.full((N,), 3.0, device=device), torch.full((N,), 2.0, device=device), generator=g))
    _mean_var(x, 3.0, 4.0, 48.0, "normal(Tensor, Tensor)")
    x = _h(torch.normal(torch.full((N,), -1.0, device=device), 0.5, generator=g))
    _mean_var(x, -1.0, 0.25, 3 * 0.25 ** 2, "normal(Tensor, float)")
    x = _h(torch.normal(4.0, torch.full((N,), 3.0, device=device), generator=g))
    _mean_var(x, 4.0, 9.0, 243.0, "normal(float, Tensor)")
    x = torch.normal(1.0, 2.0, (N,), generator=g, device=device)
    assert x.dtype is torch.float32 and x.device.type == device
    _mean_var(_h(x), 1.0, 4.0, 48.0, "normal(float, float, size)")
    assert torch.normal(0.0, 1.0, size=(2, 3), device=device, dtype=torch.float16).dtype is torch.float16
    assert torch.normal(torch.zeros(2, dtype=torch.float16, device=device), 1.0).dtype is torch.float16
    with pytest.raises(TypeError):
        torch.normal(0.0, 1.0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        torch.normal(torch.zeros(3, device=device), torch.tensor([1.0, -1.0, 1.0], device=device))
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        torch.normal(0.0, -1.0, (2,))


@pytest.mark.parametrize("device", DEVICES)
def test_sampler_gradients_are_zero(device):
    mean = torch.zeros(3, device=device, requires_grad=True)
    std = torch.ones(3, device=device, requires_grad=True)
    for out, name in ((torch.normal(mean, 1.0), "NormalBackward1"), (torch.normal(0.0, std), "NormalBackward2"),
                      (torch.normal(mean, std), "NormalBackward3"),
                      (torch.bernoulli(std * 0.5), "BernoulliBackward0"), (torch.poisson(std), "PoissonBackward0")):
        assert out.requires_grad and type(out.grad_fn).__name__ == name
    mean.grad = std.grad = None
    (torch.normal(mean, std) * 3).sum().backward()
    assert _h(mean.grad).tolist() == [0.0] * 3 and _h(std.grad).tolist() == [0.0] * 3
    x = torch.ones(4, device=device, requires_grad=True)
    y = x * 2
    y.exponential_()
    assert type(y.grad_fn).__name__ == "ExponentialBackward0"
    y.sum().backward()
    assert _h(x.grad).tolist() == [0.0] * 4
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.uniform_()
    with torch.no_grad():
        x.uniform_(2, 3)
    assert _h(x).min() >= 2


@pytest.mark.parametrize("device", DEVICES)
def test_reparametrised_normal_gradcheck(device):
    """torch.normal's gradients are zero (PyTorch's); the reparametrised sample mean + std * eps, eps drawn from a
    fixed generator state, is what differentiates: grad mean = g, grad std = g * (out - mean) / std."""
    g = _gen(device, 12)
    state = g.get_state()

    def sample(m, s):
        g.set_state(state)
        return m + s * torch.randn(tuple(m.shape), generator=g, dtype=torch.float64, device=device)
    m = torch.randn(3, 4, dtype=torch.float64, device=device).requires_grad_()
    s = (torch.rand(3, 4, dtype=torch.float64, device=device) + 0.5).requires_grad_()
    assert torch.autograd.gradcheck(sample, (m, s), eps=1e-6, atol=1e-6)
    out = sample(m, s)
    out.backward(torch.ones_like(out))
    np.testing.assert_allclose(_h(s.grad), _h((out - m) / s), rtol=1e-12)
    assert _h(m.grad).tolist() == [[1.0] * 4] * 3
    g.set_state(state)  # torch.normal draws the same eps from the same state
    np.testing.assert_array_equal(_h(torch.normal(m, s, generator=g)), _h(out))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")  # resizes on purpose
def test_out_and_noncontiguous(device):
    out = torch.empty(2, 3, device=device)
    assert torch.rand(2, 3, out=out, device=device) is out
    out = torch.empty(5, dtype=torch.int64, device=device)
    r = torch.randint(0, 3, (7,), out=out)
    assert r is out and out.shape == (7,) and _h(out).max() < 3
    assert torch.randperm(4, out=out) is out and sorted(_h(out).tolist()) == [0, 1, 2, 3]
    assert torch.multinomial(torch.ones(3, device=device), 2, out=out) is out and out.shape == (2,)
    base = torch.zeros(6, 4, device=device)
    view = base.t()[1:3]  # a strided view: only its elements change
    view.normal_(5.0, 0.1)
    h = _h(base)
    assert (h[:, 1:3] > 4).all() and (h[:, [0, 3]] == 0).all()
    base[::2].bernoulli_(1.0)
    assert (_h(base)[::2] == 1).all() and (_h(base)[1::2, 0] == 0).all()


# ---------------------------------------------------------------------------------------------
# users of generators: the data utilities and nn.init
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_data_utilities_take_a_generator(device):
    ds = TensorDataset(torch.arange(20))
    g = _gen(device, 8)
    state = g.get_state()
    order = [b[0].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True, generator=g)]
    g.set_state(state)
    assert [b[0].tolist() for b in DataLoader(ds, batch_size=5, shuffle=True, generator=g)] == order
    assert sorted(sum(order, [])) == list(range(20))
    parts = random_split(ds, [15, 5], generator=_gen(device, 9))
    again = random_split(ds, [15, 5], generator=_gen(device, 9))
    assert [p.indices for p in parts] == [p.indices for p in again]
    assert list(RandomSampler(ds, generator=_gen(device, 1))) == list(RandomSampler(ds, generator=_gen(device, 1)))


def test_weighted_random_sampler():
    w = [0.0, 1.0, 3.0, 0.0]
    s = list(WeightedRandomSampler(w, 4000, generator=_gen("cpu", 2)))
    assert len(s) == 4000 and len(WeightedRandomSampler(w, 7)) == 7
    _chi2_ok(np.bincount(s, minlength=4), np.array(w), "WeightedRandomSampler")
    assert s == list(WeightedRandomSampler(w, 4000, generator=_gen("cpu", 2)))
    assert sorted(WeightedRandomSampler([1.0, 2.0, 3.0], 3, replacement=False)) == [0, 1, 2]
    with pytest.raises(ValueError):
        WeightedRandomSampler(w, 0)
    with pytest.raises(ValueError):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    loader = DataLoader(TensorDataset(torch.arange(4)), batch_size=8, sampler=WeightedRandomSampler(w, 8))
    assert set(next(iter(loader))[0].tolist()) <= {1, 2}


@pytest.mark.parametrize("device", DEVICES)
def test_nn_init_takes_a_generator(device):
    from coretorch.nn import init
    fns = (lambda w, g: init.uniform_(w, generator=g), lambda w, g: init.normal_(w, generator=g),
           lambda w, g: init.xavier_uniform_(w, generator=g), lambda w, g: init.kaiming_normal_(w, generator=g),
           lambda w, g: init.trunc_normal_(w, generator=g), lambda w, g: init.orthogonal_(w, generator=g),
           lambda w, g: init.sparse_(w, 0.5, generator=g))
    for f in fns:
        torch.manual_seed(0)
        a = _h(f(torch.empty(4, 6, device=device), _gen(device, 3)))
        after = _h(torch.rand(3, device=device))
        torch.manual_seed(0)
        b = _h(f(torch.empty(4, 6, device=device), _gen(device, 3)))
        np.testing.assert_array_equal(a, b)
        if f is not fns[-1]:  # sparse_ zeroes rows with randperm on the host
            np.testing.assert_array_equal(_h(torch.rand(3, device=device)), after)


# ---------------------------------------------------------------------------------------------
# the factories' legacy forms
# ---------------------------------------------------------------------------------------------
def test_randint_forms():
    for t, lo, hi, shape in ((torch.randint(10, (3,)), 0, 10, (3,)), (torch.randint(10, size=(2, 2)), 0, 10, (2, 2)),
                             (torch.randint(3, 10, (4,)), 3, 10, (4,)),
                             (torch.randint(low=-2, high=2, size=[5]), -2, 2, (5,)),
                             (torch.randint(5, (2,), dtype=torch.float32), 0, 5, (2,))):
        h = _h(t)
        assert t.shape == shape and h.min() >= lo and h.max() < hi
    assert torch.randint(5, (2,), dtype=torch.float32).dtype is torch.float32
    assert torch.randint(5, (2,)).dtype is torch.int64
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        torch.randint(5, 5, (2,))
    with pytest.raises(TypeError):
        torch.randint(5)
    assert _h(torch.randint(0, 256, (500,), dtype=torch.uint8)).max() > 200
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        torch.randint(0, 257, (2,), dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="from is out of bounds for signed char"):
        torch.zeros(2, dtype=torch.int8).random_(-129, 0)


def test_size_keyword_on_factories():
    for f in (torch.zeros, torch.ones, torch.empty, torch.rand, torch.randn):
        assert f(size=(2, 3)).shape == (2, 3), f
        assert f(size=[4]).shape == (4,), f
        with pytest.raises(TypeError):
            f(2, size=(3,))
    assert torch.full(size=(2,), fill_value=3).tolist() == [3, 3]
    for f, args in ((torch.zeros, (2, 3)), (torch.ones, ((2, 3),)), (torch.empty, (2, 3)), (torch.eye, (2, 3)),
                    (torch.full, ((2, 3), 7.0)), (torch.arange, (0, 6)), (torch.linspace, (0, 1, 6)),
                    (torch.logspace, (0, 1, 6)), (torch.rand, (2, 3)), (torch.randn, (2, 3))):
        out = torch.empty(1, dtype=torch.float64)
        with pytest.warns(UserWarning, match="was resized"):  # PyTorch's deprecation warning for a non-empty out
            r = f(*args, out=out)
        assert r is out and out.numel() == 6 and out.dtype is torch.float64, f  # resized, out's dtype kept
    out = torch.zeros(6, dtype=torch.float64)
    torch.arange(6, out=out)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert torch.zeros(size=(2,), dtype=torch.int64).dtype is torch.int64


@pytest.mark.parametrize("device", DEVICES)
def test_set_default_device(device):
    assert torch.get_default_device() == torch.device("cpu")
    torch.set_default_device(device)
    try:
        assert torch.get_default_device().type == device
        made = (torch.tensor([1, 2]), torch.zeros(2), torch.ones(size=(2,)), torch.empty(2), torch.full((2,), 1.0),
                torch.arange(3), torch.eye(2), torch.linspace(0, 1, 3), torch.logspace(0, 1, 3), torch.rand(2),
                torch.randn(2), torch.randint(3, (2,)), torch.randperm(3), torch.normal(0.0, 1.0, (2,)),
                torch.as_tensor(np.zeros(2)), torch.tensor(torch.zeros(1, device="cpu")))
        assert [t.device.type for t in made] == [device] * len(made)
        assert torch.from_numpy(np.zeros(2)).device.type == "cpu"  # shares numpy's memory: always cpu
        assert torch.zeros_like(torch.zeros(2, device="cpu")).device.type == "cpu"  # *_like follow the input
        assert torch.zeros(2, device="cpu").device.type == "cpu"
    finally:
        torch.set_default_device(None)
    assert torch.zeros(1).device.type == "cpu" and torch.get_default_device() == torch.device("cpu")
    with pytest.raises(RuntimeError):
        torch.set_default_device("nosuchdevice")


def test_old_import_paths_and_namespace():
    from coretorch.ops.creation import Generator, manual_seed, rand, randn, randperm
    u = inspect.unwrap  # public functions may be wrapped (out=, __torch_function__ dispatch)
    assert Generator is torch.Generator and u(rand) is u(torch.rand) and u(randn) is u(torch.randn)
    assert u(randperm) is u(torch.randperm) and u(manual_seed) is u(torch.manual_seed)
    import coretorch.random as tr
    assert tr is torch.random and tr.fork_rng and u(tr.seed) is u(torch.seed)


def test_a_backend_without_the_rng_kernels():
    """An external backend with only the original rand/randn/randint/uniform_/normal_ kernels keeps working;
    Generators of its device keep a host-side state and upload their samples."""
    from coretorch import plugins
    from coretorch.plugins import hookimpl
    from coretorch_cpu import CPUBackend

    class Plain(CPUBackend):
        name, distribution = "plaindev", None

        def __init__(self):
            super().__init__()
            self._table = {k: v for k, v in self._table.items() if not k.startswith("rng_")}

    class Plugin:
        CORETORCH_PLUGIN_API = 1

        @hookimpl
        def coretorch_register_backends(self, register):
            register(Plain())

    plugins.register(Plugin(), name="plaindev-plugin")
    try:
        d = "plaindev"
        assert torch.rand(4, device=d).device.type == d and torch.randn(2, 2, device=d).shape == (2, 2)
        assert torch.empty(3, device=d).uniform_(2, 3).min().item() >= 2
        g = torch.Generator(device=d)
        assert g.device.type == d
        a = _h(torch.rand(5, generator=g.manual_seed(4), device=d))
        np.testing.assert_array_equal(_h(torch.rand(5, generator=g.manual_seed(4), device=d)), a)
        state = g.get_state()
        b = torch.multinomial(torch.ones(6, device=d), 3, generator=g)
        g.set_state(state)
        assert b.device.type == d and _h(b).tolist() == _h(torch.multinomial(torch.ones(6, device=d), 3,
                                                                               generator=g)).tolist()
        assert torch.poisson(torch.ones(3, device=d)).device.type == d
        assert sorted(_h(torch.randperm(5, device=d)).tolist()) == [0, 1, 2, 3, 4]
        assert torch.empty(3, device=d).exponential_().device.type == d
    finally:
        plugins.unregister("plaindev-plugin")
