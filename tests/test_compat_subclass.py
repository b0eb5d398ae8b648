"""User Tensor subclasses: methods and operators of a subclass instance go through its __torch_function__ (PyTorch's
default gives the subclass back; nn.Parameter and classes that disable it give plain Tensors)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import available_devices

DEVICES = available_devices()


class MyTensor(torch.Tensor):
    pass


class Logged(torch.Tensor):
    calls: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls.append(func.__name__)
        return super().__torch_function__(func, types, args, kwargs)


class Plain(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl


@pytest.mark.parametrize("device", DEVICES)
def test_default_torch_function_keeps_the_subclass(device):
    t = torch.tensor([1.0, 2.0, 3.0], device=device).as_subclass(MyTensor)
    for r in (t + 1, 1 + t, t * t, -t, t[0], t[1:], t.sum(), t.exp(), t.reshape(3, 1), t.T, t.to(torch.float64),
              t.clone(), t.detach(), t > 1, t @ t):
        assert type(r) is MyTensor, r
    values, indices = t.reshape(1, 3).max(1)
    assert type(values) is MyTensor and type(indices) is MyTensor
    assert type(t.reshape(1, 3).max(1)).__name__ == type(torch.ones(1, 3).max(1)).__name__  # the named tuple stays
    assert all(type(c) is MyTensor for c in t.chunk(3))
    assert t.add_(1) is t and type(t) is MyTensor
    assert t.tolist() == [2.0, 3.0, 4.0] and t.shape == (3,) and t.dim() == 1 and t.size(0) == 3
    np.testing.assert_allclose((t * 2).cpu().numpy(), [4.0, 6.0, 8.0])
    assert type(torch.add(t, 1)) is MyTensor  # namespace functions dispatch too, as PyTorch's
    assert (t == None) is False and (t != "a") is True and t not in [None, "a"]  # noqa: E711
    assert type(t.data) is MyTensor and type(t.reshape(3, 1).mT) is MyTensor
    t.data = torch.zeros(3, device=device)  # the setter still works
    assert t.tolist() == [0.0, 0.0, 0.0] and type(t) is MyTensor


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_through_subclass_results(device):
    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True).as_subclass(MyTensor)
    y = (x * x).sum()
    assert type(y) is MyTensor and type(y.grad_fn).__name__ == "AliasBackward0"  # as PyTorch's _convert
    y.backward()
    leaf = y.grad_fn.next_functions[0][0]
    assert leaf is not None
    xg = torch.tensor([1.0, 2.0], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: (a.as_subclass(MyTensor) ** 3).sum(1 - 1), (xg,))


def test_user_torch_function_override_sees_each_method():
    Logged.calls.clear()
    t = torch.ones(2).as_subclass(Logged)
    r = (t * 2).exp().sum()
    assert type(r) is Logged
    assert Logged.calls == ["mul", "exp", "sum"]  # the default implementation does not dispatch again inside


def test_override_returning_not_implemented_raises():
    class Refuses(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    t = torch.ones(2).as_subclass(Refuses)
    with pytest.raises(TypeError, match="no implementation found for 'Tensor.exp'"):
        t.exp()
    with pytest.raises(TypeError):  # an operator: Python's own "unsupported operand" error
        t + 1
    assert (t == t) is True  # == falls back to identity, as for any object
    Logged.calls.clear()
    lg = torch.ones(1).as_subclass(Logged)
    assert (lg == None) is False and len(Logged.calls) == 1  # noqa: E711


def test_disabled_torch_function_gives_plain_tensors():
    p = torch.ones(2).as_subclass(Plain)
    assert type(p + 1) is torch.Tensor and type(p.exp()) is torch.Tensor
    w = torch.nn.Parameter(torch.ones(2))
    assert type(w * 2) is torch.Tensor and type(w.detach()) is torch.Tensor and type(w[0]) is torch.Tensor

    class MyParam(torch.nn.Parameter):  # inherits Parameter's disabled __torch_function__
        pass
    assert type(MyParam(torch.ones(2)) * 2) is torch.Tensor


def test_user_methods_are_not_replaced():
    class WithOwn(torch.Tensor):
        def exp(self):
            return "own"

    class Child(WithOwn):
        pass

    t = torch.ones(1).as_subclass(Child)
    assert t.exp() == "own" and type(t + 1) is Child
    assert torch.Tensor.exp is not WithOwn.exp
    assert type(torch.ones(1) + 1) is torch.Tensor  # plain tensors untouched
