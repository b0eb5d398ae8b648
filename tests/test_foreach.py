"""``torch._foreach_*``: each element is the ordinary tensor op (same bits), in every argument form PyTorch takes
(scalar, scalar list, tensor list, one tensor; ``alpha``; a scalar base for pow; addcmul/addcdiv values as a tensor),
out-of-place ops return tuples and in-place ones the list, autograd flows through the out-of-place ops, and the
errors are PyTorch's (messages checked against PyTorch 2.13)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.ops.foreach import _UNARY


def _lists(device, seed=0, lo=0.2, hi=0.9):
    g = np.random.default_rng(seed)
    return [torch.tensor(g.uniform(lo, hi, s).astype(np.float32), device=device) for s in [(3,), (2, 4), ()]]


def _eq(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())


@pytest.mark.parametrize("name", _UNARY)
def test_unary_ops_are_the_tensor_ops(device, name):
    xs = _lists(device)
    want = [getattr(x, name)() for x in xs]
    got = getattr(torch, f"_foreach_{name}")(xs)
    assert isinstance(got, tuple)
    _eq(got, want)
    ys = [x.clone() for x in xs]
    assert getattr(torch, f"_foreach_{name}_")(ys) is ys
    _eq(ys, want)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "clamp_max", "clamp_min"])
def test_binary_ops_in_every_form(device, name):
    xs, ys = _lists(device), _lists(device, 1)
    ref = {"maximum": lambda a, b: torch.maximum(a, b) if isinstance(b, torch.Tensor) else a.clamp(min=b),
           "minimum": lambda a, b: torch.minimum(a, b) if isinstance(b, torch.Tensor) else a.clamp(max=b),
           "clamp_max": lambda a, b: a.clamp(max=b), "clamp_min": lambda a, b: a.clamp(min=b)}.get(
        name, lambda a, b: getattr(a, name)(b))
    fn, ifn = getattr(torch, f"_foreach_{name}"), getattr(torch, f"_foreach_{name}_")
    for other, per in [(0.5, [0.5] * 3), ([0.25, 0.5, 0.75], [0.25, 0.5, 0.75]), (ys, ys)]:
        want = [ref(x, o) for x, o in zip(xs, per)]
        _eq(fn(xs, other), want)
        zs = [x.clone() for x in xs]
        assert ifn(zs, other) is zs
        _eq(zs, want)
    if name in ("add", "sub"):
        _eq(fn(xs, ys, alpha=2.5), [getattr(x, name)(y, alpha=2.5) for x, y in zip(xs, ys)])
        with pytest.raises(TypeError, match=f"_foreach_{name}\\(\\): argument 'other' \\(position 2\\) must be tuple "
                                            "of Tensors, not float"):
            fn(xs, 1.0, alpha=2)
    if name in ("add", "mul", "div", "sub"):
        s = torch.tensor(3.0, device=device)
        _eq(fn(xs, s), [getattr(x, name)(s) for x in xs])


def test_pow_lerp_addcmul_addcdiv(device):
    xs, ys, zs = _lists(device), _lists(device, 1), _lists(device, 2)
    _eq(torch._foreach_pow(xs, 2.0), [x ** 2.0 for x in xs])
    _eq(torch._foreach_pow(xs, ys), [x ** y for x, y in zip(xs, ys)])
    _eq(torch._foreach_pow(2.0, xs), [torch.pow(2.0, x) for x in xs])
    _eq(torch._foreach_lerp(xs, ys, 0.25), [x.lerp(y, 0.25) for x, y in zip(xs, ys)])
    _eq(torch._foreach_lerp(xs, ys, zs), [x.lerp(y, z) for x, y, z in zip(xs, ys, zs)])
    vals = [0.5, 1.5, -2.0]
    _eq(torch._foreach_addcmul(xs, ys, zs, vals), [x.addcmul(y, z, value=v) for x, y, z, v in zip(xs, ys, zs, vals)])
    _eq(torch._foreach_addcdiv(xs, ys, zs, torch.tensor(vals)),
        [x.addcdiv(y, z, value=v) for x, y, z, v in zip(xs, ys, zs, vals)])
    ws = [x.clone() for x in xs]
    torch._foreach_lerp_(ws, ys, 0.1)
    torch._foreach_addcdiv_(ws, ys, zs, value=0.3)
    torch._foreach_pow_(ws, 1.5)
    _eq(ws, [x.lerp(y, 0.1).addcdiv(y, z, value=0.3) ** 1.5 for x, y, z in zip(xs, ys, zs)])


def test_norm_max_zero_copy_clone(device):
    xs, ys = _lists(device), _lists(device, 1)
    for ord in (2, 1, float("inf")):
        _eq(torch._foreach_norm(xs, ord), [torch.linalg.vector_norm(x, ord) for x in xs])
    _eq(torch._foreach_max(xs), [x.max() for x in xs])
    cs = torch._foreach_clone(xs)
    assert all(c is not x for c, x in zip(cs, xs))
    assert torch._foreach_copy_(cs, ys) is cs
    _eq(cs, ys)
    torch._foreach_zero_(cs)
    _eq(cs, [torch.zeros_like(y) for y in ys])


def test_autograd_through_out_of_place_ops(device):
    xs = [x.requires_grad_() for x in _lists(device)]
    out = torch._foreach_mul(torch._foreach_exp(xs), 3.0)
    sum(o.sum() for o in out).backward()
    for x in xs:
        np.testing.assert_allclose(x.grad.cpu().numpy(), 3 * np.exp(x.detach().cpu().numpy()), rtol=1e-6)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        torch._foreach_add_(xs, 1.0)


def test_errors_are_pytorchs(device):
    xs = _lists(device)
    with pytest.raises(RuntimeError, match="^Tensor list must have at least one tensor.$"):
        torch._foreach_exp([])
    with pytest.raises(RuntimeError, match="^Tensor list must have at least one tensor.$"):
        torch._foreach_add_([], 1)
    with pytest.raises(RuntimeError, match="^Tensor lists must have the same number of tensors, got 3 and 1$"):
        torch._foreach_add(xs, [xs[0]])
    with pytest.raises(RuntimeError, match="^Tensor list must have same number of elements as scalar list.$"):
        torch._foreach_mul(xs, [1.0])
    with pytest.raises(RuntimeError, match="_foreach_max cannot compute the maximum of an empty tensor"):
        torch._foreach_max([torch.ones(0, device=device)])
