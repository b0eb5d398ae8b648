"""Linear, Bilinear, Identity, Flatten, Unflatten, Dropout, Embedding, nn.utils and the reference program
of issue #3: forward against numpy, backward with float64 gradcheck, on every available device."""
import itertools
import math

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn
from coretorch.autograd import gradcheck, gradgradcheck
from coretorch.testing import available_devices

DEVICES = available_devices()


def arr(t):
    return t.detach().cpu().numpy().astype(np.float64)


def rnd(*shape, device="cpu", dtype=torch.float64, requires_grad=True, seed=0):
    a = np.random.default_rng(seed + sum(shape)).standard_normal(shape)
    return torch.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# ---------------------------------------------------------------------------------------------
# Linear
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_linear_forward_numpy(device):
    lin = nn.Linear(4, 3).to(device)
    W, b = arr(lin.weight), arr(lin.bias)
    for shape in ((5, 4), (2, 3, 4), (4,)):
        x = rnd(*shape, device=device, dtype=torch.float32, requires_grad=False)
        y = lin(x)
        assert y.device == lin.weight.device and tuple(y.shape) == shape[:-1] + (3,)
        np.testing.assert_allclose(arr(y), arr(x) @ W.T + b, rtol=1e-5, atol=1e-6)
    nb = nn.Linear(4, 3, bias=False, device=device, dtype=torch.float64)
    assert nb.bias is None and nb.weight.dtype is torch.float64 and str(nb.weight.device).startswith(device)
    x = rnd(5, 4, device=device)
    np.testing.assert_allclose(arr(nb(x)), arr(x) @ arr(nb.weight).T, rtol=1e-12)
    assert lin(rnd(5, 4, device=device, dtype=torch.float32)).grad_fn.name() == "AddmmBackward0"
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(5x3 and 4x3\)"):
        lin(rnd(5, 3, device=device, dtype=torch.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_linear_backward_gradcheck(device):
    x, w, b = rnd(3, 4, device=device), rnd(2, 4, device=device, seed=1), rnd(2, device=device, seed=2)
    assert gradcheck(F.linear, (x, w, b))
    assert gradcheck(F.linear, (rnd(2, 3, 4, device=device), w, b))
    assert gradcheck(lambda x, w: F.linear(x, w), (x, w))
    assert gradgradcheck(F.linear, (x, w, b))
    # the module's parameter gradients against numpy
    lin = nn.Linear(4, 2).double().to(device)
    xn = arr(x)
    g = rnd(3, 2, device=device, requires_grad=False, seed=3)
    lin(x).backward(g)
    np.testing.assert_allclose(arr(lin.weight.grad), arr(g).T @ xn, rtol=1e-12)
    np.testing.assert_allclose(arr(lin.bias.grad), arr(g).sum(0), rtol=1e-12)
    np.testing.assert_allclose(arr(x.grad), arr(g) @ arr(lin.weight), rtol=1e-12)


def test_linear_repr_and_attributes():
    lin = nn.Linear(4, 2)
    assert repr(lin) == "Linear(in_features=4, out_features=2, bias=True)"
    assert repr(nn.Linear(3, 1, bias=False)) == "Linear(in_features=3, out_features=1, bias=False)"
    assert (lin.in_features, lin.out_features) == (4, 2)
    assert lin.weight.shape == (2, 4) and lin.bias.shape == (2,)
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]


# ---------------------------------------------------------------------------------------------
# Bilinear
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_bilinear_forward_and_gradcheck(device):
    bl = nn.Bilinear(3, 4, 2).double().to(device)
    x1, x2 = rnd(5, 3, device=device), rnd(5, 4, device=device, seed=1)
    ref = np.einsum("ni,oij,nj->no", arr(x1), arr(bl.weight), arr(x2)) + arr(bl.bias)
    np.testing.assert_allclose(arr(bl(x1, x2)), ref, rtol=1e-12)
    y1, y2 = rnd(2, 3, 3, device=device), rnd(2, 3, 4, device=device, seed=1)
    ref = np.einsum("abi,oij,abj->abo", arr(y1), arr(bl.weight), arr(y2)) + arr(bl.bias)
    np.testing.assert_allclose(arr(bl(y1, y2)), ref, rtol=1e-12)
    w, b = rnd(2, 3, 4, device=device, seed=2), rnd(2, device=device, seed=3)
    assert gradcheck(F.bilinear, (x1, x2, w, b))
    assert gradcheck(lambda a, c, w: F.bilinear(a, c, w), (x1, x2, w))
    assert repr(bl) == "Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)"


def test_bilinear_errors():
    w = torch.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input dimensions do not match: got 2 and 3"):
        F.bilinear(torch.randn(5, 3), torch.randn(1, 5, 4), w)
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0: got 5 and 6"):
        F.bilinear(torch.randn(5, 3), torch.randn(6, 4), w)
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 2 but expected 3"):
        F.bilinear(torch.randn(5, 2), torch.randn(5, 4), w)
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 3 but expected 4"):
        F.bilinear(torch.randn(5, 3), torch.randn(5, 3), w)
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 3 but expected 2"):
        F.bilinear(torch.randn(5, 3), torch.randn(5, 4), w, torch.randn(3))


# ---------------------------------------------------------------------------------------------
# Identity, Flatten, Unflatten
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_identity_flatten_unflatten(device):
    x = rnd(2, 3, 4, 5, device=device)
    idm = nn.Identity(54, unused="x")
    assert idm(x) is x and repr(idm) == "Identity()"
    f = nn.Flatten()
    assert repr(f) == "Flatten(start_dim=1, end_dim=-1)"
    np.testing.assert_array_equal(arr(f(x)), arr(x).reshape(2, 60))
    np.testing.assert_array_equal(arr(nn.Flatten(0, 2)(x)), arr(x).reshape(24, 5))
    u = nn.Unflatten(1, (3, 4))
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(3, 4))"
    y = rnd(2, 12, 5, device=device)
    np.testing.assert_array_equal(arr(u(y)), arr(y).reshape(2, 3, 4, 5))
    np.testing.assert_array_equal(arr(nn.Unflatten(-1, [5, 1])(y)), arr(y).reshape(2, 12, 5, 1))
    assert gradcheck(lambda t: nn.Flatten()(t) * 2, (rnd(2, 3, 2, device=device),))
    assert gradcheck(lambda t: nn.Unflatten(1, (2, 3))(t) * 2, (rnd(2, 6, device=device),))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 3)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type float "
                                        "at pos 1"):
        nn.Unflatten(1, (3, 4.0))
    seq = nn.Sequential(nn.Flatten(), nn.Linear(60, 2).double().to(device), nn.Unflatten(1, (1, 2)))
    assert tuple(seq(x).shape) == (2, 1, 2)


# ---------------------------------------------------------------------------------------------
# Dropout
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_dropout_train_statistics_and_scaling(device):
    p = 0.3
    x = torch.rand(200, 500, device=device) + 0.5  # strictly positive: a zero output means dropped
    d = nn.Dropout(p)
    y = arr(d(x))
    xn = arr(x)
    dropped = y == 0
    n = y.size
    assert abs(dropped.mean() - p) < 6 * math.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(y[~dropped], xn[~dropped] / (1 - p), rtol=1e-6)
    # gradient: the same mask, scaled
    xg = x.clone().requires_grad_()
    torch.manual_seed(5)
    out = F.dropout(xg, p)
    out.sum().backward()
    kept = arr(out) != 0
    np.testing.assert_allclose(arr(xg.grad), kept / (1 - p), rtol=1e-6)


def test_dropout_eval_edge_cases_and_errors():
    x = torch.randn(4, 5)
    d = nn.Dropout(0.5)
    d.eval()
    assert d(x) is x
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert not F.dropout(x, 1.0).any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        F.dropout(x, -0.1)
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"
    assert repr(nn.Dropout(0.1, inplace=True)) == "Dropout(p=0.1, inplace=True)"
    # inplace: the input itself is masked
    y = torch.ones(100)
    r = nn.Dropout(0.5, inplace=True)(y)
    assert r is y and set(np.unique(arr(y))) <= {0.0, 2.0} and (arr(y) == 0).any()
    # gradcheck through a fixed mask (re-seeded so every evaluation draws the same mask)
    z = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)

    def f(t):
        torch.manual_seed(11)
        return F.dropout(t, 0.4)

    assert gradcheck(f, (z,))


def test_dropout2d_zeroes_whole_channels():
    x = torch.rand(8, 16, 5, 5) + 0.5
    y = arr(nn.Dropout2d(0.5)(x))
    per_channel = (y == 0).reshape(8, 16, 25)
    assert np.all(per_channel.all(-1) | ~per_channel.any(-1))  # all or nothing per channel
    assert 0 < per_channel.all(-1).mean() < 1
    y1 = arr(nn.Dropout1d(0.5)(torch.rand(4, 6, 7) + 0.5))
    assert np.all((y1 == 0).all(-1) | (y1 != 0).all(-1))


def test_feature_dropout_rank_rules_as_pytorch():
    # dropout1d: 2-D/3-D only; dropout2d/3d: other ranks warn (deprecated) and still run
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 1D input. Note that"):
        F.dropout1d(torch.ones(4))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d, which is deprecated"):
        y = arr(F.dropout2d(torch.ones(40, 50), 0.5))
    assert 0.3 < (y == 0).mean() < 0.7 and not np.all((y == 0).all(-1) | (y != 0).all(-1))  # elementwise
    # a 3-D input to dropout2d is (N, C, L): whole rows of L dropped, with PyTorch's warning
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d and assuming that channel-wise"):
        y = arr(F.dropout2d(torch.ones(6, 8, 10), 0.5))
    assert np.all((y == 0).all(-1) | (y != 0).all(-1)) and 0 < (y == 0).all(-1).mean() < 1
    # a 4-D input to dropout3d is unbatched (C, D, H, W): whole channels of dim 0
    y = arr(F.dropout3d(torch.ones(16, 2, 3, 4), 0.5))
    per = (y == 0).reshape(16, -1)
    assert np.all(per.all(-1) | ~per.any(-1)) and 0 < per.all(-1).mean() < 1
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d, which is deprecated"):
        F.dropout3d(torch.ones(2, 3, 4), 0.5)


# ---------------------------------------------------------------------------------------------
# Embedding
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_embedding_forward_backward(device):
    emb = nn.Embedding(10, 3).double().to(device)
    idx_np = np.array([[1, 2, 4], [4, 3, 9]])
    idx = torch.tensor(idx_np, device=device)
    out = emb(idx)
    W = arr(emb.weight)
    np.testing.assert_array_equal(arr(out), W[idx_np])
    g = rnd(2, 3, 3, device=device, requires_grad=False)
    out.backward(g)
    expected = np.zeros_like(W)
    np.add.at(expected, idx_np.reshape(-1), arr(g).reshape(-1, 3))
    np.testing.assert_allclose(arr(emb.weight.grad), expected, rtol=1e-12)
    w = rnd(6, 4, device=device)
    ix = torch.tensor([[0, 2], [2, 5]], device=device)
    assert gradcheck(lambda w: F.embedding(ix, w), (w,))
    # padding_idx (like scale_grad_by_freq) is not a true derivative: the plain gradient with the row zeroed
    gp = rnd(2, 2, 4, device=device, requires_grad=False, seed=4)
    F.embedding(ix, w, padding_idx=2).backward(gp)
    expected = np.zeros((6, 4))
    np.add.at(expected, [0, 2, 2, 5], arr(gp).reshape(-1, 4))
    expected[2] = 0
    np.testing.assert_allclose(arr(w.grad), expected, rtol=1e-12)
    assert gradgradcheck(lambda w: F.embedding(ix, w) ** 2, (w,))
    i32 = torch.tensor([1, 2], dtype=torch.int32, device=device)
    np.testing.assert_array_equal(arr(emb(i32)), W[[1, 2]])


def test_embedding_padding_idx():
    emb = nn.Embedding(5, 3, padding_idx=-1)
    assert emb.padding_idx == 4 and repr(emb) == "Embedding(5, 3, padding_idx=4)"
    assert not emb.weight[4].any()
    idx = torch.tensor([[4, 1], [1, 0]])
    out = emb(idx)
    assert not out[0, 0].any()
    (out * torch.randn(2, 2, 3)).sum().backward()
    g = arr(emb.weight.grad)
    assert not g[4].any() and g[1].any() and g[0].any() and not g[2:4].any()
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 3, padding_idx=5)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 3, padding_idx=-6)


def test_embedding_scale_grad_by_freq_and_max_norm():
    w = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([0, 0, 0, 2])
    F.embedding(idx, w, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(arr(w.grad), [[1, 1], [0, 0], [1, 1], [0, 0]])  # 3 hits / 3

    emb = nn.Embedding(4, 3, max_norm=1.0).double()
    with torch.no_grad():
        emb.weight.copy_(torch.tensor([[3.0, 4.0, 0.0], [0.1, 0.1, 0.1], [0.0, 0.0, 2.0], [5.0, 5.0, 5.0]],
                                      dtype=torch.float64))
    out = emb(torch.tensor([0, 1, 2, 0]))
    W = arr(emb.weight)
    np.testing.assert_allclose(W[0], np.array([3.0, 4.0, 0.0]) * (1.0 / (5.0 + 1e-7)), rtol=1e-12)
    np.testing.assert_allclose(W[1], [0.1, 0.1, 0.1])       # already inside the ball: unchanged
    np.testing.assert_allclose(W[2], [0.0, 0.0, 1.0 / (2.0 + 1e-7) * 2.0], rtol=1e-12)
    np.testing.assert_allclose(W[3], [5.0, 5.0, 5.0])       # not looked up: unchanged
    np.testing.assert_allclose(arr(out), W[[0, 1, 2, 0]])
    assert repr(emb) == "Embedding(4, 3, max_norm=1.0)"
    assert emb.weight.is_leaf and emb.weight.requires_grad


def test_embedding_errors_and_from_pretrained():
    emb = nn.Embedding(5, 2)
    with pytest.raises(IndexError, match="index out of range in self"):
        emb(torch.tensor([5]))
    with pytest.raises(IndexError, match="index out of range in self"):
        emb(torch.tensor([-1]))
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got torch.FloatTensor instead"):
        emb(torch.tensor([1.0]))
    pre = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    e = nn.Embedding.from_pretrained(pre)
    assert not e.weight.requires_grad and e(torch.tensor([1])).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(pre, freeze=False).weight.requires_grad
    e2 = nn.Embedding(3, 2, sparse=False, norm_type=1.0, scale_grad_by_freq=True)
    assert repr(e2) == "Embedding(3, 2, norm_type=1.0, scale_grad_by_freq=True)"


# ---------------------------------------------------------------------------------------------
# nn.utils
# ---------------------------------------------------------------------------------------------
def _params_with_grads(grads):
    ps = []
    for g in grads:
        p = nn.Parameter(torch.zeros(*np.shape(g), dtype=torch.float64))
        p.grad = torch.tensor(g, dtype=torch.float64)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf])
def test_clip_grad_norm(norm_type):
    grads = [np.array([[3.0, -4.0], [1.0, 2.0]]), np.array([0.5, -6.0, 2.0])]
    flat = np.concatenate([g.ravel() for g in grads])
    total = np.abs(flat).max() if norm_type == math.inf else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    ps = _params_with_grads(grads)
    ret = nn.utils.clip_grad_norm_(ps, max_norm=1.0, norm_type=norm_type)
    assert isinstance(ret, torch.Tensor) and ret.ndim == 0
    np.testing.assert_allclose(ret.item(), total, rtol=1e-12)
    coef = 1.0 / (total + 1e-6)
    for p, g in zip(ps, grads):
        np.testing.assert_allclose(arr(p.grad), g * coef, rtol=1e-12)
    # a large max_norm leaves the gradients unchanged (the coefficient is clamped to 1)
    ps = _params_with_grads(grads)
    nn.utils.clip_grad_norm_(ps, max_norm=1e6, norm_type=norm_type)
    for p, g in zip(ps, grads):
        np.testing.assert_array_equal(arr(p.grad), g)


def test_clip_grad_norm_edge_cases_and_value():
    p = nn.Parameter(torch.ones(2))
    assert nn.utils.clip_grad_norm_([p], 1.0).item() == 0.0  # no gradients
    p.grad = torch.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_(p, 10.0).item() == pytest.approx(5.0)  # a single tensor is accepted
    q = nn.Parameter(torch.ones(2))
    q.grad = torch.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)
    ps = _params_with_grads([np.array([-3.0, 0.5, 2.0]), np.array([[7.0, -0.1]])])
    assert nn.utils.clip_grad_value_(ps, 1.0) is None
    np.testing.assert_array_equal(arr(ps[0].grad), [-1.0, 0.5, 1.0])
    np.testing.assert_array_equal(arr(ps[1].grad), [[1.0, -0.1]])


def test_parameters_to_vector_and_back():
    net = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = nn.utils.parameters_to_vector(net.parameters())
    expected = np.concatenate([arr(p).ravel() for p in net.parameters()])
    np.testing.assert_array_equal(arr(vec), expected)
    assert vec.requires_grad  # differentiable
    vec.sum().backward()
    assert all(np.all(arr(p.grad) == 1) for p in net.parameters())
    new = torch.arange(11, dtype=torch.float32)
    nn.utils.vector_to_parameters(new, net.parameters())
    assert net[0].weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert net[0].bias.tolist() == [6.0, 7.0] and net[1].bias.tolist() == [10.0]
    assert isinstance(net[0].weight, nn.Parameter)
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], net.parameters())


# ---------------------------------------------------------------------------------------------
# the reference program of issue #3
# ---------------------------------------------------------------------------------------------
def _np_softmax(z, axis):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_reference_program():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 2)

        def forward(self, input):
            return F.softmax(self.linear(input))

    net = Net()
    sgd = torch.optim.SGD(net.parameters(), lr=0.001)
    features = torch.autograd.Variable(torch.randn(3, 4), requires_grad=True)
    target = torch.autograd.Variable(torch.LongTensor([1, 0, 1]))
    W0, b0 = arr(net.linear.weight), arr(net.linear.bias)
    x, t = arr(features), np.array([1, 0, 1])

    def loss_np(W, b):
        probs = _np_softmax(x @ W.T + b, axis=1)          # implicit dim for 2-D input is 1
        logp = np.log(_np_softmax(probs, axis=1))         # cross_entropy applies log_softmax to its input
        return -logp[np.arange(3), t].mean()

    sgd.zero_grad()
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        out = net(features)
    loss = F.cross_entropy(out, target)
    np.testing.assert_allclose(loss.item(), loss_np(W0, b0), rtol=1e-5)
    loss.backward()
    # gradients against central differences of the numpy loss
    eps = 1e-6
    gW = np.zeros_like(W0)
    for i in np.ndindex(W0.shape):
        d = np.zeros_like(W0)
        d[i] = eps
        gW[i] = (loss_np(W0 + d, b0) - loss_np(W0 - d, b0)) / (2 * eps)
    gb = np.array([(loss_np(W0, b0 + e) - loss_np(W0, b0 - e)) / (2 * eps) for e in np.eye(2) * eps])
    np.testing.assert_allclose(arr(net.linear.weight.grad), gW, rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(arr(net.linear.bias.grad), gb, rtol=1e-3, atol=1e-6)
    assert features.grad is not None and tuple(features.grad.shape) == (3, 4)
    sgd.step()
    np.testing.assert_allclose(arr(net.linear.weight), W0 - 0.001 * arr(net.linear.weight.grad), rtol=1e-6)
    np.testing.assert_allclose(arr(net.linear.bias), b0 - 0.001 * arr(net.linear.bias.grad), rtol=1e-6)


def test_reference_program_chained_momentum():
    net1, net2 = nn.Linear(4, 3), nn.Linear(3, 2)
    opt = torch.optim.SGD(itertools.chain(net1.parameters(), net2.parameters()), lr=0.01, momentum=0.9)
    params = list(net1.parameters()) + list(net2.parameters())
    assert len(opt.param_groups[0]["params"]) == 4
    x, y = torch.randn(5, 4), torch.LongTensor([0, 1, 1, 0, 1])
    vel = [None] * 4
    vals = [arr(p) for p in params]
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(net2(net1(x).relu()), y).backward()
        grads = [arr(p.grad) for p in params]
        opt.step()
        for i, g in enumerate(grads):
            vel[i] = g if vel[i] is None else 0.9 * vel[i] + g
            vals[i] = vals[i] - 0.01 * vel[i]
            np.testing.assert_allclose(arr(params[i]), vals[i], rtol=1e-5, atol=1e-7)


def test_linear_forward_reads_weight_and_bias_wherever_they_live():
    # forward reads the registered parameters directly; a weight moved out of _parameters and a bias set to None
    # are read as attributes, as PyTorch's self.weight does
    x = torch.randn(4, 3)
    lin = nn.Linear(3, 2)
    w2 = lin.weight.detach() * 2
    del lin.weight
    lin.weight = w2  # a plain tensor attribute now
    np.testing.assert_allclose(lin(x).detach().numpy(), x.numpy() @ w2.numpy().T + lin.bias.detach().numpy(),
                               rtol=1e-6)
    lin.bias = None
    np.testing.assert_allclose(lin(x).detach().numpy(), x.numpy() @ w2.numpy().T, rtol=1e-6)
