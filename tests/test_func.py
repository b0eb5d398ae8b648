"""torch.func (``coretorch.func``): grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call,
stack_module_state, against autograd and numpy; PyTorch 2.13's results and errors (values checked side by side with
PyTorch when written: per-sample gradients, the nested-grad value 4.0, ``requires_grad`` of the results, the error
texts)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize,
                            stack_module_state, vjp, vmap)

nn = torch.nn
F = torch.nn.functional


def _np(t):
    return t.detach().cpu().numpy()


def test_grad_and_value_of_a_scalar_function(device):
    x = torch.randn(3, 4, dtype=torch.float64).to(device)
    g = grad(lambda a: (a ** 3).sum())(x)
    np.testing.assert_allclose(_np(g), 3 * _np(x) ** 2, rtol=1e-12)
    assert not g.requires_grad  # (PyTorch: no graph outside the call's own variable)
    g, v = grad_and_value(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, 2 * x)
    np.testing.assert_allclose(_np(g[0]), 2 * _np(x), rtol=1e-12)
    np.testing.assert_allclose(_np(g[1]), _np(x), rtol=1e-12)
    np.testing.assert_allclose(_np(v), 2 * (_np(x) ** 2).sum(), rtol=1e-12)
    (g, aux) = grad(lambda a: ((a * a).sum(), a.mean()), has_aux=True)(x)
    np.testing.assert_allclose(_np(aux), _np(x).mean(), rtol=1e-12)
    d = grad(lambda p: (p["w"] * p["b"]).sum())({"w": x, "b": x + 1})  # (a dict of tensors: gradients as a dict)
    assert set(d) == {"w", "b"}
    np.testing.assert_allclose(_np(d["w"]), _np(x) + 1, rtol=1e-12)
    assert torch.equal(grad(lambda a, b: a.sum())(x, x), torch.ones_like(x))  # (b unused: not differentiated)
    z = grad(lambda a, b: a.sum(), argnums=1)(x, x)
    assert torch.equal(z, torch.zeros_like(x))  # (an unused argument's gradient is zeros)


def test_nested_grad_keeps_levels_apart_and_composes_with_autograd():
    """PyTorch's levels: d/dx [x * (d/dy x*y)] = d/dx x^2 = 2x (4.0 at 2.0), not the confused 2x + x; a gradient
    depending on a closure tensor that requires grad keeps a graph to it (WGAN-GP through torch.func)."""
    x = torch.tensor(2.0, dtype=torch.float64)
    assert grad(lambda a: a * grad(lambda b: a * b)(a))(x).item() == 4.0
    assert grad(grad(lambda a: a ** 3))(x).item() == 12.0
    w = torch.randn(3, requires_grad=True)
    g = grad(lambda a: (a * w).pow(2).sum())(torch.randn(3))
    assert g.requires_grad
    g.sum().backward()
    assert w.grad is not None
    assert not grad(lambda a: (a * 2).sum())(torch.randn(3)).requires_grad


def test_grad_errors_are_pytorchs():
    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 2 dims"):
        grad(lambda a: a)(x)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a Tensor, got <class 'float'>"):
        grad(lambda a: 3.0)(x)
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got <class 'float'>"):
        grad(lambda a: a.sum())(3.0)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 2 positional inputs"):
        grad(lambda a, b: a.sum(), argnums=2)(x, x)
    with pytest.raises(RuntimeError, match="Expected tensors, got unsupported type <class 'int'>"):
        grad(lambda a: (a.sum(), 3), has_aux=True)(x)


def test_vjp_jvp_linearize(device):
    x = torch.randn(4, dtype=torch.float64).to(device)
    out, fn = vjp(torch.sin, x)
    (g,) = fn(torch.ones(4, dtype=torch.float64).to(device))
    np.testing.assert_allclose(_np(g), np.cos(_np(x)), rtol=1e-12)
    (g2,) = fn(2 * torch.ones(4, dtype=torch.float64).to(device))  # (vjp_fn may be called again)
    np.testing.assert_allclose(_np(g2), 2 * np.cos(_np(x)), rtol=1e-12)
    t = torch.randn(4, dtype=torch.float64).to(device)
    o, jv = jvp(lambda a: a.exp() * a, (x,), (t,))
    np.testing.assert_allclose(_np(jv), (np.exp(_np(x)) * (1 + _np(x))) * _np(t), rtol=1e-12)
    np.testing.assert_allclose(_np(o), np.exp(_np(x)) * _np(x), rtol=1e-12)
    o2, jfn = linearize(torch.sin, x)
    np.testing.assert_allclose(_np(jfn(t)), np.cos(_np(x)) * _np(t), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(torch.sin, x, t)


def test_jacrev_jacfwd_hessian_match_autograd_functional(device):
    x = torch.randn(3, dtype=torch.float64).to(device)

    def f(a):
        return torch.stack([a.prod(), (a ** 2).sum(), a[0] * a[2]])

    want = torch.autograd.functional.jacobian(f, x)
    for jac in (jacrev(f)(x), jacfwd(f)(x)):
        np.testing.assert_allclose(_np(jac), _np(want), rtol=1e-12)
    h = hessian(lambda a: (a ** 3).sum() + a[0] * a[1])(x)
    np.testing.assert_allclose(_np(h), _np(torch.autograd.functional.hessian(
        lambda a: (a ** 3).sum() + a[0] * a[1], x)), rtol=1e-12)
    j0, j1 = jacrev(lambda a, b: a * b, argnums=(0, 1))(x, 2 * x)
    np.testing.assert_allclose(_np(j0), np.diag(2 * _np(x)), rtol=1e-12)
    np.testing.assert_allclose(_np(j1), np.diag(_np(x)), rtol=1e-12)


def test_vmap_maps_over_dims_and_stacks_along_out_dims(device):
    x = torch.randn(5, 3).to(device)
    y = torch.randn(3, 5).to(device)
    r = vmap(torch.dot, in_dims=(0, 1))(x, y)
    np.testing.assert_allclose(_np(r), (_np(x) * _np(y).T).sum(1), rtol=1e-5)
    r = vmap(lambda a, b: a * b, in_dims=(0, None))(x, torch.arange(3.0).to(device))
    np.testing.assert_allclose(_np(r), _np(x) * np.arange(3.0), rtol=1e-6)
    r = vmap(lambda a: a.sum(0), out_dims=0)(torch.randn(4, 2, 3).to(device))
    assert tuple(r.shape) == (4, 3)
    r = vmap(lambda a: a * 2, out_dims=1)(x)
    np.testing.assert_allclose(_np(r), 2 * _np(x).T, rtol=1e-6)
    # (None: an output that is not mapped; PyTorch raises for one that depends on the mapped input, as a.sum() does)
    a, b = vmap(lambda a: (a, y.sum()), out_dims=(0, None))(x)
    assert tuple(a.shape) == (5, 3) and b.dim() == 0
    d = vmap(lambda p: {"s": p["u"] + p["v"]})({"u": x, "v": x})  # (containers in and out)
    np.testing.assert_allclose(_np(d["s"]), 2 * _np(x), rtol=1e-6)
    e = vmap(torch.sin)(torch.randn(0, 3).to(device))  # (an empty batch: PyTorch's shape)
    assert tuple(e.shape) == (0, 3)
    assert torch.vmap is vmap
    nested = vmap(vmap(lambda a: a * a))(torch.randn(2, 3, 4).to(device))
    assert tuple(nested.shape) == (2, 3, 4)


def test_vmap_errors_are_pytorchs():
    x, y = torch.randn(3, 4), torch.randn(5, 4)
    with pytest.raises(ValueError, match=r"Expected all tensors to have the same size in the mapped dimension, got "
                                         r"sizes \[3, 5\]"):
        vmap(torch.add)(x, y)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a \\(potentially nested\\) tuple"):
        vmap(torch.sin, in_dims=None)(x)
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'int'>. Did you mean to set "
                                         "out_dims= to None for output"):
        vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="Got in_dim=2 for some input, but that input is a Tensor of dimensionality 2"):
        vmap(torch.sin, in_dims=2)(x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        vmap(torch.sin, in_dims=(0, 0))(x)
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        vmap(torch.sin, chunk_size=0)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', 'different', or 'same'"):
        vmap(torch.sin, randomness="bad")


def test_vmap_randomness_modes():
    """PyTorch: a random op inside vmap raises in the default "error" mode; "different" draws per entry; "same"
    gives every entry the same numbers."""
    x = torch.zeros(4, 3)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
        vmap(lambda a: a + torch.rand(3))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: F.dropout(a + 1, 0.5))(x)
    diff = vmap(lambda a: a + torch.rand(3), randomness="different")(x)
    assert not torch.equal(diff[0], diff[1])
    same = vmap(lambda a: a + torch.rand(3), randomness="same")(x)
    assert all(torch.equal(same[0], same[i]) for i in range(4))


def test_per_sample_gradients_as_the_tutorial_computes_them(device):
    """PyTorch's per-sample-gradients recipe: ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`` with
    ``functional_call`` equals the gradient of each sample's loss taken alone."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double().to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = torch.randn(6, 4, dtype=torch.float64).to(device)
    y = torch.randint(0, 3, (6,)).to(device)

    def loss(p, a, t):
        return F.cross_entropy(functional_call(model, p, (a.unsqueeze(0),)), t.unsqueeze(0))

    per = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(6):
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(_np(per[k][i]), _np(p.grad), rtol=1e-10, atol=1e-14)


def test_model_ensembling_with_stack_module_state(device):
    """PyTorch's ensembling recipe: stacked states of several models, ``vmap(functional_call)`` over them, equal to
    calling each model; the stacked parameters are new leaves that require grad."""
    torch.manual_seed(1)
    models = [nn.Linear(3, 2).to(device) for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].is_leaf and params["weight"].requires_grad
    assert buffers == {}
    base = models[0]
    x = torch.randn(5, 3).to(device)
    out = vmap(lambda p, b, a: functional_call(base, (p, b), (a,)), in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(_np(out[i]), _np(m(x)), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(base, ({"weight": base.weight}, {"weight": base.weight}), (x,))


def test_replace_all_batch_norm_modules_and_functionalize():
    m = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    assert torch.func.replace_all_batch_norm_modules_(m) is m
    assert m[1].running_mean is None and not m[1].track_running_stats
    f = torch.func.functionalize(torch.sin)
    x = torch.randn(3)
    assert torch.equal(f(x), torch.sin(x))
