"""nn.init: bounds are checked exactly, distributions statistically on large tensors (numpy statistics,
tolerances of several standard errors), and the layers' default initialisation against PyTorch's formulas."""
import math

import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.nn import init


def arr(t):
    return t.detach().numpy().astype(np.float64)


def check_uniform(a, lo, hi):
    """Values inside [lo, hi], reaching close to both ends, with U(lo, hi)'s mean and std."""
    n = a.size
    assert a.min() >= lo and a.max() <= hi
    width = hi - lo
    assert a.min() < lo + 0.01 * width and a.max() > hi - 0.01 * width
    sd = width / math.sqrt(12)
    assert abs(a.mean() - (lo + hi) / 2) < 6 * sd / math.sqrt(n)
    assert abs(a.std() - sd) < 0.02 * sd
    # flat histogram: each of 10 bins holds about a tenth of the values
    counts, _ = np.histogram(a, bins=10, range=(lo, hi))
    assert np.all(np.abs(counts / n - 0.1) < 0.01)


def check_normal(a, mean, std):
    n = a.size
    assert abs(a.mean() - mean) < 6 * std / math.sqrt(n)
    assert abs(a.std() - std) < 0.02 * std
    # about 68.3% within one std, 95.4% within two
    assert abs(np.mean(np.abs(a - mean) < std) - 0.6827) < 0.01
    assert abs(np.mean(np.abs(a - mean) < 2 * std) - 0.9545) < 0.01


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert init.calculate_gain("leaky_relu", 0) == math.sqrt(2.0)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_fan_in_fan_out():
    assert init._calculate_fan_in_and_fan_out(torch.empty(3, 5)) == (5, 3)
    assert init._calculate_fan_in_and_fan_out(torch.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2"):
        init._calculate_fan_in_and_fan_out(torch.empty(3))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(torch.empty(3, 3), mode="fan_avg")


def test_uniform_normal_constant():
    t = torch.empty(200, 500)
    assert init.uniform_(t, -0.5, 1.5) is t
    check_uniform(arr(t), -0.5, 1.5)
    assert init.normal_(t, 2.0, 0.5) is t
    check_normal(arr(t), 2.0, 0.5)
    assert init.constant_(t, 0.25) is t and np.all(arr(t) == 0.25)
    assert np.all(arr(init.zeros_(t)) == 0) and np.all(arr(init.ones_(t)) == 1)


def test_init_on_parameters_is_not_recorded():
    p = nn.Parameter(torch.empty(10, 10))
    for fn in (init.uniform_, init.normal_, init.zeros_, init.ones_, init.xavier_uniform_, init.kaiming_normal_,
               init.orthogonal_, init.trunc_normal_, init.eye_):
        assert fn(p) is p
        assert p.grad_fn is None and p.is_leaf and p.requires_grad and type(p) is nn.Parameter


def test_xavier():
    t = torch.empty(300, 500)
    bound = math.sqrt(6.0 / 800)
    init.xavier_uniform_(t)
    check_uniform(arr(t), -bound, bound)
    init.xavier_uniform_(t, gain=init.calculate_gain("tanh"))
    check_uniform(arr(t), -5 / 3 * bound, 5 / 3 * bound)
    init.xavier_normal_(t, gain=2.0)
    check_normal(arr(t), 0.0, 2.0 * math.sqrt(2.0 / 800))
    c = torch.empty(64, 32, 5, 5)  # conv weight: receptive field 25
    init.xavier_uniform_(c)
    b = math.sqrt(6.0 / (32 * 25 + 64 * 25))
    check_uniform(arr(c), -b, b)


def test_kaiming():
    t = torch.empty(400, 250)
    init.kaiming_uniform_(t)                           # leaky_relu, a=0: gain sqrt(2)
    check_uniform(arr(t), -math.sqrt(6 / 250), math.sqrt(6 / 250))
    init.kaiming_uniform_(t, a=math.sqrt(5))           # what Linear uses: bound 1/sqrt(fan_in)
    check_uniform(arr(t), -1 / math.sqrt(250), 1 / math.sqrt(250))
    init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu")
    check_uniform(arr(t), -math.sqrt(6 / 400), math.sqrt(6 / 400))
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    check_normal(arr(t), 0.0, math.sqrt(2 / 400))
    init.kaiming_normal_(t, a=0.1)
    check_normal(arr(t), 0.0, math.sqrt(2 / (1 + 0.01)) / math.sqrt(250))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(torch.empty(0, 3))


def test_orthogonal():
    for shape in ((50, 20), (20, 50), (30, 30)):
        t = torch.empty(*shape, dtype=torch.float64)
        init.orthogonal_(t, gain=2.0)
        q = arr(t)
        if shape[0] >= shape[1]:
            np.testing.assert_allclose(q.T @ q, 4 * np.eye(shape[1]), atol=1e-10)
        else:
            np.testing.assert_allclose(q @ q.T, 4 * np.eye(shape[0]), atol=1e-10)
    c = torch.empty(6, 3, 2, 2)
    init.orthogonal_(c)
    m = arr(c).reshape(6, 12)
    np.testing.assert_allclose(m @ m.T, np.eye(6), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(torch.empty(3))


def test_trunc_normal():
    t = torch.empty(200, 500)
    init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=2.0)
    a = arr(t)
    assert a.min() >= -1.0 and a.max() <= 2.0
    # moments of the truncated normal, computed independently
    def phi(x):
        return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    def Phi(x):
        return 0.5 * (1 + math.erf(x / math.sqrt(2)))

    al, be = (-1.0 - 0.5) / 1.0, (2.0 - 0.5) / 1.0
    z = Phi(be) - Phi(al)
    mean = 0.5 + (phi(al) - phi(be)) / z
    var = 1 + (al * phi(al) - be * phi(be)) / z - ((phi(al) - phi(be)) / z) ** 2
    assert abs(a.mean() - mean) < 6 * math.sqrt(var / a.size)
    assert abs(a.std() - math.sqrt(var)) < 0.02 * math.sqrt(var)
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(torch.empty(10), mean=10.0, std=1.0, a=-2.0, b=2.0)


def test_eye_and_dirac():
    t = torch.empty(3, 5)
    init.eye_(t)
    np.testing.assert_array_equal(arr(t), np.eye(3, 5))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(torch.empty(2, 2, 2))
    w = torch.empty(4, 2, 3, 3)
    init.dirac_(w)
    a = arr(w)
    assert a.sum() == 2 and a[0, 0, 1, 1] == 1 and a[1, 1, 1, 1] == 1
    x = torch.randn(1, 2, 5, 5)
    # a dirac kernel is the identity on the first min(out, in) channels (checked with a numpy correlation)
    xp = np.pad(arr(x), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((4, 5, 5))
    for o in range(4):
        for i in range(5):
            for j in range(5):
                out[o, i, j] = np.sum(xp[0, :, i:i + 3, j:j + 3] * a[o])
    np.testing.assert_allclose(out[:2], arr(x)[0], rtol=1e-6)
    assert not out[2:].any()


def test_sparse():
    t = torch.empty(10, 6)
    init.sparse_(t, 0.3, std=1.0)
    a = arr(t)
    assert all((a[:, j] == 0).sum() >= 3 for j in range(6))


# ---------------------------------------------------------------------------------------------
# the layers' default initialisation
# ---------------------------------------------------------------------------------------------
def test_linear_default_init_matches_pytorch():
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    check_uniform(arr(lin.weight), -bound, bound)
    b = arr(lin.bias)
    assert b.min() >= -bound and b.max() <= bound and b.std() > 0.4 * bound
    with pytest.warns(UserWarning, match="zero-element"):
        lin0 = nn.Linear(0, 3)  # fan_in 0: bias bound 0
    assert not arr(lin0.bias).any()
    torch.manual_seed(7)
    w1 = arr(nn.Linear(5, 4).weight)
    torch.manual_seed(7)
    w2 = arr(nn.Linear(5, 4).weight)
    np.testing.assert_array_equal(w1, w2)


def test_bilinear_and_embedding_default_init():
    bl = nn.Bilinear(100, 30, 40)
    bound = 1 / math.sqrt(100)
    check_uniform(arr(bl.weight), -bound, bound)
    assert np.abs(arr(bl.bias)).max() <= bound
    emb = nn.Embedding(1000, 100, padding_idx=3)
    w = arr(emb.weight)
    assert not w[3].any()
    check_normal(np.delete(w, 3, axis=0), 0.0, 1.0)
