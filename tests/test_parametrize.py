"""nn.utils.parametrize, parametrizations.weight_norm/spectral_norm/orthogonal, the old hook-based weight_norm,
and fuse_conv_bn_eval/fuse_linear_bn_eval, on every device: numpy references, state_dict layout, PyTorch's
errors."""
import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.autograd import gradcheck
from coretorch.nn.utils import parametrizations as P
from coretorch.nn.utils import parametrize


def N(t):
    return t.detach().cpu().numpy()


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


def test_register_assign_remove(device):
    torch.manual_seed(0)
    m = nn.Linear(3, 3).double().to(device)
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    w = N(m.weight)
    np.testing.assert_allclose(w, w.T)
    x = torch.randn(4, 3, dtype=torch.float64).to(device)
    np.testing.assert_allclose(N(m(x)), N(x) @ w.T + N(m.bias), rtol=1e-12)
    # gradients reach the unconstrained original
    m(x).sum().backward()
    g = N(m.parametrizations.weight.original.grad)
    assert np.allclose(np.tril(g, -1), 0)  # the strict lower triangle never matters
    # assignment goes through right_inverse
    target = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 5.0, 6.0]])
    m.weight = torch.tensor(target, device=device)
    np.testing.assert_allclose(N(m.weight), target)
    np.testing.assert_allclose(N(m.parametrizations.weight.original), np.triu(target))
    with parametrize.cached():
        assert m.weight is m.weight  # computed once inside the block
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and sorted(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(N(m.weight), target)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(m, "weight")
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        parametrize.register_parametrization(m, "nope", Symmetric())

    class Shrink(nn.Module):
        def forward(self, X):
            return X[:2]

    with pytest.raises(ValueError, match="may not change the shape of the tensor, unless `unsafe`"):
        parametrize.register_parametrization(nn.Linear(3, 3), "weight", Shrink())


def test_weight_norm_both_forms(device):
    torch.manual_seed(1)
    m = P.weight_norm(nn.Linear(4, 5).double().to(device))
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    g, v = N(m.parametrizations.weight.original0).copy(), N(m.parametrizations.weight.original1).copy()
    assert g.shape == (5, 1)
    np.testing.assert_allclose(N(m.weight), g * v / np.linalg.norm(v, axis=1, keepdims=True), rtol=1e-12)
    with torch.no_grad():
        m.parametrizations.weight.original0.mul_(2.0)
    np.testing.assert_allclose(np.linalg.norm(N(m.weight), axis=1), 2 * g[:, 0], rtol=1e-12)
    gg = torch.tensor(g, device=device).requires_grad_()
    vv = torch.tensor(v, device=device).requires_grad_()
    assert gradcheck(lambda a, b: P._weight_norm(b, a, 0), (gg, vv))
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        old = nn.utils.weight_norm(nn.Linear(4, 5).double().to(device), dim=1)
    assert [n for n, _ in old.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert old.weight_g.shape == (1, 4)
    x = torch.randn(2, 4, dtype=torch.float64).to(device)
    with torch.no_grad():
        old.weight_g.fill_(3.0)
    old(x)
    np.testing.assert_allclose(np.linalg.norm(N(old.weight), axis=0), 3.0, rtol=1e-12)
    nn.utils.remove_weight_norm(old)
    assert [n for n, _ in old.named_parameters()] == ["bias", "weight"]
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(old)


def test_spectral_norm_normalises_by_the_largest_singular_value(device):
    torch.manual_seed(2)
    m = P.spectral_norm(nn.Linear(6, 4).double().to(device))
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.0._u", "parametrizations.weight.0._v",
                                      "parametrizations.weight.original"]
    for _ in range(30):  # power iteration advances once per training forward
        w = m.weight
    sigma = np.linalg.svd(N(m.parametrizations.weight.original), compute_uv=False)[0]
    np.testing.assert_allclose(N(w), N(m.parametrizations.weight.original) / sigma, rtol=1e-8)
    m.eval()
    u_before = N(m.parametrizations.weight[0]._u).copy()
    m.weight
    np.testing.assert_array_equal(N(m.parametrizations.weight[0]._u), u_before)  # eval: no power step
    conv = P.spectral_norm(nn.Conv2d(2, 3, 3).double().to(device))
    for _ in range(30):
        cw = conv.weight
    s = np.linalg.svd(N(cw).reshape(3, -1), compute_uv=False)[0]
    assert s == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal(device, orth_map):
    torch.manual_seed(3)
    shape = (5, 3) if orth_map == "householder" else (4, 4)
    m = P.orthogonal(nn.Linear(shape[1], shape[0]).double().to(device), orthogonal_map=orth_map)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x = torch.randn(8, shape[1], dtype=torch.float64).to(device)
    for _ in range(3):
        loss = (m(x) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        w = N(m.weight)
        np.testing.assert_allclose(w.T @ w, np.eye(shape[1]), atol=1e-10)
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=shape))
    m.weight = torch.tensor(q, device=device)
    np.testing.assert_allclose(N(m.weight), q, atol=1e-10)
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"):
        P.orthogonal(nn.Linear(3, 3), "bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder"'):
        P.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")


def test_fuse_batch_norm(device):
    torch.manual_seed(4)
    conv, bn = nn.Conv2d(3, 4, 3).double().to(device), nn.BatchNorm2d(4).double().to(device)
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64).to(device)
    bn(conv(x))  # collect running statistics
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    conv.eval()
    bn.eval()
    fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    np.testing.assert_allclose(N(fused(x)), N(bn(conv(x))), rtol=1e-10, atol=1e-12)
    lin, bn1 = nn.Linear(5, 3).double().to(device), nn.BatchNorm1d(3).double().to(device)
    xl = torch.randn(7, 5, dtype=torch.float64).to(device)
    bn1(lin(xl))
    lin.eval()
    bn1.eval()
    np.testing.assert_allclose(N(nn.utils.fuse_linear_bn_eval(lin, bn1)(xl)), N(bn1(lin(xl))), rtol=1e-10,
                               atol=1e-12)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)
