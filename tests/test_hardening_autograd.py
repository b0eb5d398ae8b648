"""Issue 15, wrong autograd behaviour: in-place ops on a tensor that needs no gradient by one that does, and ops
whose derivative is zero kept in the graph as PyTorch keeps them (grad_fn names and zero gradients checked against
PyTorch 2.13 by hand), on every installed device."""
import numpy as np
import pytest

import coretorch as torch


def arr(t):
    return t.detach().cpu().numpy()


B = [1.5, 2.5, -4.0]


def _inplace_cases():
    return {
        "imul": lambda x, b: x.__imul__(b),
        "mul_": lambda x, b: x.mul_(b),
        "itruediv": lambda x, b: x.__itruediv__(b),
        "div_": lambda x, b: x.div_(b),
        "iadd": lambda x, b: x.__iadd__(b),
        "sub_": lambda x, b: x.sub_(b),
    }


@pytest.mark.parametrize("op", list(_inplace_cases()))
def test_inplace_on_a_constant_by_a_tensor_requiring_grad(device, op):
    a = torch.tensor([2.0, -3.0, 5.0], device=device)
    b = torch.tensor(B, device=device, requires_grad=True)
    x = a.clone()
    r = _inplace_cases()[op](x, b)
    assert r is x and x.requires_grad and not a.requires_grad
    (x * torch.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    an, bn, w = np.array([2.0, -3.0, 5.0]), np.array(B), np.array([1.0, 2.0, 3.0])
    expected = {"imul": an, "mul_": an, "itruediv": -an / bn ** 2, "div_": -an / bn ** 2,
                "iadd": np.ones(3), "sub_": -np.ones(3)}[op] * w
    np.testing.assert_allclose(arr(b.grad), expected, rtol=1e-6)
    np.testing.assert_allclose(arr(a), [2.0, -3.0, 5.0])  # the clone was written, not a


def test_inplace_mul_keeps_the_value_it_saved_for_double_use(device):
    # x is used after the in-place op by another op that saved it before: that one must still raise
    b = torch.tensor(B, device=device, requires_grad=True)
    x = torch.ones(3, device=device)
    y = x * b  # saves x for b's gradient
    x.mul_(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def _leaf(device):
    return torch.tensor([1.5, 2.5, -3.5], device=device, requires_grad=True)


ZERO_GRAD_OPS = {
    "DivBackward2 floor": lambda x, d: torch.div(x, 2, rounding_mode="floor"),
    "DivBackward2 trunc": lambda x, d: torch.div(x, 2, rounding_mode="trunc"),
    "DivBackward2 tensor": lambda x, d: x.div(torch.full((3,), 2.0, device=d), rounding_mode="floor"),
    "ZeroBackward0": lambda x, d: (x * 1).zero_(),
    "FillBackward2": lambda x, d: (x * 1).fill_(3),
    "FillBackward3": lambda x, d: (x * 1).fill_(torch.tensor(3.0, device=d)),
    "CopyBackwards": lambda x, d: (x * 1).copy_(torch.ones(3, device=d)),
    "AddmmBackward0": lambda x, d: torch.addmm(x.reshape(3, 1).expand(3, 3), torch.ones(3, 2, device=d),
                                               torch.ones(2, 3, device=d), beta=0),
    "CatBackward0": lambda x, d: torch.cat([torch.ones(2, device=d), x[:0]]),
}


@pytest.mark.parametrize("name", list(ZERO_GRAD_OPS))
def test_zero_derivative_ops_stay_in_the_graph(device, name):
    x = _leaf(device)
    y = ZERO_GRAD_OPS[name](x, device)
    assert y.requires_grad
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == name.split()[0]
    y.sum().backward()
    assert x.grad is not None
    np.testing.assert_array_equal(arr(x.grad), np.zeros(3, np.float32))


def test_zero_derivative_ops_need_no_grad_outside_grad_mode(device):
    x = _leaf(device)
    with torch.no_grad():
        for f in ZERO_GRAD_OPS.values():
            assert not f(x, device).requires_grad


def test_floor_divide_is_recorded_but_has_no_derivative(device):
    # PyTorch 2.13: x // 2 requires grad (grad_fn "NotImplemented"); backward raises
    x = _leaf(device)
    for y in (x // 2, 7.0 // x, torch.floor_divide(x, torch.full((3,), 2.0, device=device))):
        assert y.requires_grad and type(y.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
            y.sum().backward()
    # integer results never require grad
    assert not (torch.tensor([7, 8], device=device) // 2).requires_grad


def test_floor_divide_values_unchanged(device):
    x = _leaf(device)
    np.testing.assert_array_equal(arr(x // 2), np.floor_divide(arr(x), 2))
    np.testing.assert_array_equal(arr(torch.div(x, 2, rounding_mode="trunc")), np.trunc(arr(x) / 2))


def test_remainder_gradient_of_the_divisor(device):
    # d(a % b)/db = -floor(a / b): goes through div(rounding_mode="floor"), so it is differentiable twice
    a = torch.tensor([7.0, -7.0, 5.5], device=device, requires_grad=True)
    b = torch.tensor([2.0, 3.0, -2.0], device=device, requires_grad=True)
    (ga, gb) = torch.autograd.grad((a % b).sum(), (a, b), create_graph=True)
    np.testing.assert_allclose(arr(gb), -np.floor(arr(a) / arr(b)))
    np.testing.assert_allclose(arr(ga), np.ones(3))
    (gga,) = torch.autograd.grad(gb.sum(), (a,))
    np.testing.assert_array_equal(arr(gga), np.zeros(3))


def test_zero_and_fill_write_the_value_and_keep_later_gradients(device):
    x = _leaf(device)
    y = x * 2
    y.fill_(4.0)
    (y * x).sum().backward()  # y is constant 4: d/dx = 4 through the second factor, 0 through the first
    np.testing.assert_allclose(arr(x.grad), [4.0, 4.0, 4.0])
    np.testing.assert_allclose(arr(y), [4.0, 4.0, 4.0])


def test_copy_into_a_constant_from_a_leaf(device):
    b = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    x = torch.zeros(3, device=device)
    x.copy_(b)
    assert not x.is_leaf and type(x.grad_fn).__name__ == "CopyBackwards"
    (x * 2).sum().backward()
    np.testing.assert_allclose(arr(b.grad), [2.0, 2.0, 2.0])
    a = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    b = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    x = a * 1
    x.copy_(b)
    (x * 3).sum().backward()
    np.testing.assert_array_equal(arr(a.grad), np.zeros(3))
    np.testing.assert_allclose(arr(b.grad), [3.0, 3.0, 3.0])


def test_addmm_beta_zero_ignores_nan_input_but_keeps_its_edge(device):
    inp = torch.tensor([[float("nan"), 1.0], [2.0, float("inf")]], device=device, requires_grad=True)
    m1 = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    m2 = torch.eye(2, device=device)
    y = torch.addmm(inp, m1, m2, beta=0, alpha=2)
    np.testing.assert_allclose(arr(y), 2 * arr(m1))
    y.sum().backward()
    np.testing.assert_array_equal(arr(inp.grad), np.zeros((2, 2)))
    np.testing.assert_allclose(arr(m1.grad), np.full((2, 2), 2.0))


def test_cat_of_only_empty_tensors_requiring_grad(device):
    e1 = torch.zeros(0, device=device, requires_grad=True)
    e2 = torch.zeros(0, device=device, requires_grad=True)
    y = torch.cat([e1, e2])
    assert y.requires_grad and tuple(y.shape) == (0,)
    (y.sum() + 0).backward()
    assert tuple(e1.grad.shape) == (0,) and tuple(e2.grad.shape) == (0,)
