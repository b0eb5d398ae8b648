"""The seed programs of issue 13: PyTorch-source classes run as user code (old Optimizer base, Parameter as a user
Tensor subclass), the legacy Tensor API they use, and PyTorch's grad_fn names."""
from __future__ import annotations

import copy
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch.autograd import Variable
from coretorch.testing import available_devices

DEVICES = available_devices()


# ---- Variable and typename ------------------------------------------------------------------------------------
def test_variable_isinstance_true_for_every_tensor():
    assert isinstance(torch.ones(2), Variable)
    assert isinstance(torch.zeros(2, dtype=torch.int64), Variable)
    assert isinstance(torch.nn.Parameter(torch.ones(2)), Variable)
    assert not isinstance([1.0], Variable)
    assert not isinstance(np.ones(2), Variable)
    assert isinstance(Variable, type)


def test_variable_call_returns_a_leaf_tensor_sharing_storage():
    x = torch.tensor([1.0, 2.0])
    v = Variable(x, requires_grad=True)
    assert type(v) is torch.Tensor and v.requires_grad and v.is_leaf
    with torch.no_grad():
        v.mul_(3)
    np.testing.assert_allclose(x.numpy(), [3.0, 6.0])  # same storage
    assert not Variable(x).requires_grad
    with pytest.raises(TypeError):
        Variable([1.0, 2.0])


def test_variable_volatile_warns_as_pytorch():
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        v = Variable(torch.ones(2), volatile=True)
    assert isinstance(v, torch.Tensor)


def test_typename():
    assert torch.typename(torch.ones(2)) == "torch.FloatTensor"
    assert torch.typename(torch.ones(2, dtype=torch.float64)) == "torch.DoubleTensor"
    assert torch.typename(torch.ones(2, dtype=torch.int64)) == "torch.LongTensor"
    assert torch.typename(3) == "int"          # builtins lose the module
    assert torch.typename(int) == "int"
    assert torch.typename(torch.nn.Linear) == f"{torch.nn.Linear.__module__}.Linear"
    assert torch.typename(torch.nn.Linear(2, 2)) == f"{torch.nn.Linear.__module__}.Linear"

    class Local:
        pass
    assert torch.typename(Local()).endswith("test_typename.<locals>.Local")


def test_is_storage_and_is_tensor():
    assert torch.is_storage(torch.ones(2)) is False
    assert torch.is_tensor(torch.ones(2)) and not torch.is_tensor([1])


# ---- the old Optimizer base, run as user code -------------------------------------------------------------
class OldOptimizer:
    """The shape of PyTorch 0.3's Optimizer base class: params must be Variables, not a bare one."""

    def __init__(self, params, defaults):
        if isinstance(params, Variable) or torch.is_tensor(params):
            raise TypeError("params argument given to the optimizer should be an iterable of Variables or dicts, "
                            "but got " + torch.typename(params))
        self.state = {}
        self.defaults = defaults
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def add_param_group(self, group):
        params = group["params"]
        group["params"] = [params] if isinstance(params, Variable) else list(params)
        for p in group["params"]:
            if not isinstance(p, Variable):
                raise TypeError("optimizer can only optimize Variables, but one of the params is "
                                + torch.typename(p))
            if not p.requires_grad:
                raise ValueError("optimizing a parameter that doesn't require gradients")
            if p.volatile:
                raise ValueError("can't optimize a volatile Variable")
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        self.param_groups.append(group)

    def zero_grad(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.data.zero_()


class OldSGD(OldOptimizer):
    def __init__(self, params, lr=0.1, momentum=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad.data
                if group["momentum"] != 0:
                    state = self.state.setdefault(id(p), {})
                    if "momentum_buffer" not in state:
                        buf = state["momentum_buffer"] = p.data.new().resize_as_(p.data).zero_()
                        buf.mul_(group["momentum"]).add_(d_p)
                    else:
                        buf = state["momentum_buffer"]
                        buf.mul_(group["momentum"]).add_(1, d_p)  # the deprecated (Number, Tensor) overload
                    d_p = buf
                p.data.add_(-group["lr"], d_p)


@pytest.mark.parametrize("device", DEVICES)
def test_old_optimizer_base_trains(device):
    torch.manual_seed(0)
    w = torch.randn(3, 1, device=device, requires_grad=True)
    x = torch.randn(16, 3, device=device)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]], device=device)
    with pytest.raises(TypeError, match="torch.FloatTensor"):
        OldSGD(w)  # a bare tensor, rejected through isinstance(params, Variable)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        opt = OldSGD([w], lr=0.1, momentum=0.5)
        losses = []
        for _ in range(30):
            opt.zero_grad()
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.05
    msgs = [str(r.message) for r in rec]
    assert any("This overload of add_ is deprecated" in m for m in msgs)
    assert any("volatile was removed" in m for m in msgs)


# ---- a user Parameter class built like PyTorch's own --------------------------------------------------------
class MyParameter(torch.Tensor):
    """PyTorch's Parameter pattern, as a user subclass of Tensor."""
    _is_param = True  # PyTorch's flag: nn.Module registers it as a parameter

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = torch.Tensor()
        return torch.Tensor._make_subclass(cls, data, requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(memory_format=torch.preserve_format), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "MyParameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (MyParameter, (self.data, self.requires_grad))


@pytest.mark.parametrize("device", DEVICES)
def test_user_parameter_subclass(device):
    data = torch.tensor([1.0, 2.0, 3.0], device=device)
    p = MyParameter(data)
    assert type(p) is MyParameter and isinstance(p, torch.Tensor) and isinstance(p, Variable)
    assert p.requires_grad and p.is_leaf and p.device == data.device
    # shares storage (and the version counter) with data, as _make_subclass does in PyTorch
    with torch.no_grad():
        data.add_(1)
    np.testing.assert_allclose(p.detach().cpu().numpy(), [2.0, 3.0, 4.0])
    assert p._version == data._version
    # arithmetic gives tensors, autograd reaches the subclass leaf
    y = (p * p).sum()
    assert isinstance(y, torch.Tensor)
    y.backward()
    np.testing.assert_allclose(p.grad.cpu().numpy(), [4.0, 6.0, 8.0])
    # repr through super().__repr__()
    r = repr(p)
    assert r.startswith("MyParameter containing:\nMyParameter([2., 3., 4.]") and "requires_grad=True" in r
    # deepcopy: a new MyParameter with its own storage
    q = copy.deepcopy(p)
    assert type(q) is MyParameter and q is not p and q.requires_grad
    with torch.no_grad():
        q.zero_()
    np.testing.assert_allclose(p.detach().cpu().numpy(), [2.0, 3.0, 4.0])
    assert MyParameter(data, requires_grad=False).requires_grad is False
    assert MyParameter().shape == (0,)


def test_make_subclass_checks_its_arguments():
    with pytest.raises(TypeError):
        torch.Tensor._make_subclass(dict, torch.ones(2))
    with pytest.raises(TypeError):
        torch.Tensor._make_subclass(MyParameter, [1.0])
    with pytest.raises(RuntimeError, match="floating point"):
        torch.Tensor._make_subclass(MyParameter, torch.ones(2, dtype=torch.int64), True)


def test_user_parameter_registers_in_a_module():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = MyParameter(torch.ones(2, 3))
            self.plain = torch.ones(1)  # a plain tensor attribute is not a parameter

    net = Net()
    assert isinstance(net.w, torch.nn.Parameter)  # PyTorch's _is_param rule
    assert [n for n, _ in net.named_parameters()] == ["w"]
    assert list(net.state_dict()) == ["w"]
    assert net.parameters().__next__() is net.w
    net2 = copy.deepcopy(net)
    assert type(net2.w) is MyParameter and net2.w is not net.w
    opt = torch.optim.SGD(net.parameters(), lr=1.0)
    net.w.sum().backward()
    opt.step()
    np.testing.assert_allclose(net.w.detach().numpy(), np.zeros((2, 3)))


def test_tensor_subclass_without_the_flag_is_not_a_parameter():
    class Tagged(torch.Tensor):
        pass

    t = torch.ones(2).as_subclass(Tagged)
    assert not isinstance(t, torch.nn.Parameter)
    m = torch.nn.Module()
    m.t = t
    assert list(m.parameters()) == [] and m.t is t


def test_nn_parameter_subclass_defined_by_the_user():
    class Scaled(torch.nn.Parameter):
        pass

    m = torch.nn.Module()
    m.s = Scaled(torch.ones(2))
    assert [n for n, _ in m.named_parameters()] == ["s"] and type(m.s) is Scaled


@pytest.mark.parametrize("device", DEVICES)
def test_as_subclass_keeps_storage_and_graph(device):
    class Tagged(torch.Tensor):
        pass

    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    t = (x * 2).as_subclass(Tagged)
    assert type(t) is Tagged and t.requires_grad and t.grad_fn is not None
    (t * t).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [8.0, 16.0])
    leaf = x.as_subclass(Tagged)  # a leaf's alias: the gradient reaches the leaf
    assert type(leaf.grad_fn).__name__ == "AliasBackward0"
    x.grad = None
    leaf.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [1.0, 1.0])
    plain = torch.ones(2, device=device)
    s = plain.as_subclass(Tagged)
    s.add_(1)  # same storage
    np.testing.assert_allclose(plain.cpu().numpy(), [2.0, 2.0])
    with pytest.raises(TypeError):
        plain.as_subclass(int)


# ---- the legacy Tensor API ------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_deprecated_add_overloads(device):
    x = torch.tensor([1.0, 2.0], device=device)
    o = torch.tensor([10.0, 20.0], device=device)
    with pytest.warns(UserWarning, match=r"This overload of add_ is deprecated:\n\tadd_\(Number alpha, Tensor "
                                         r"other\)\nConsider using one of the following signatures instead:\n"
                                         r"\tadd_\(Tensor other, \*, Number alpha = 1\)"):
        r = x.add_(0.5, o)
    assert r is x
    np.testing.assert_allclose(x.cpu().numpy(), [6.0, 12.0])
    with pytest.warns(UserWarning, match="This overload of add is deprecated"):
        np.testing.assert_allclose(x.add(2, o).cpu().numpy(), [26.0, 52.0])
    with pytest.warns(UserWarning, match="This overload of sub_ is deprecated"):
        x.sub_(0.5, o)
    np.testing.assert_allclose(x.cpu().numpy(), [1.0, 2.0])
    with pytest.warns(UserWarning, match="This overload of sub is deprecated"):
        np.testing.assert_allclose(x.sub(1, o).cpu().numpy(), [-9.0, -18.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current forms do not warn
        np.testing.assert_allclose(x.add(o, alpha=2).cpu().numpy(), [21.0, 42.0])
        x.add_(o)
    with pytest.raises(TypeError):
        x.add_(o, o)


def test_deprecated_add_keeps_autograd():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning):
        y = torch.ones(2).add(3.0, w)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])


def test_volatile_is_false_with_pytorchs_warning():
    x = torch.ones(2)
    msg = r"volatile was removed and now has no effect\. Use `with torch\.no_grad\(\):` instead\."
    with pytest.warns(UserWarning, match=msg):
        assert x.volatile is False
    with pytest.warns(UserWarning, match="volatile was removed"):
        x.volatile = True
    with pytest.warns(UserWarning):
        assert x.volatile is False


@pytest.mark.parametrize("device", DEVICES)
def test_new(device):
    x = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32, device=device)
    e = x.new()
    assert e.shape == (0,) and e.dtype == torch.int32 and e.device == x.device
    s = x.new(2, 3)
    assert s.shape == (2, 3) and s.dtype == torch.int32 and s.device == x.device
    assert x.new(torch.Size([4])).shape == (4,)
    d = x.new([5, 6])
    assert d.dtype == torch.int32 and d.tolist() == [5, 6] and d.device == x.device
    other = torch.tensor([7], dtype=torch.int32, device=device)
    a = x.new(other)
    a.add_(1)
    assert other.tolist() == [8]  # new(tensor) aliases it
    with pytest.raises(TypeError):
        x.new(torch.ones(1, device=device))  # another dtype
    assert x.new(2, dtype=torch.float64).dtype == torch.float64


@pytest.mark.parametrize("device", DEVICES)
def test_resize_as_(device):
    x = torch.arange(6, device=device).float()
    v0 = x._version
    assert x.resize_as_(torch.zeros(2, 3)) is x
    assert x.shape == (2, 3) and x._version > v0
    np.testing.assert_allclose(x.cpu().numpy(), np.arange(6.0).reshape(2, 3))
    x.resize_as_(torch.zeros(2))  # fewer: keeps the first elements in storage order
    np.testing.assert_allclose(x.cpu().numpy(), [0.0, 1.0])
    x.resize_as_(torch.zeros(2, 2))  # more: the old elements first
    assert x.shape == (2, 2) and x.flatten()[:2].tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="require grad"):
        torch.ones(2, requires_grad=True).resize_as_(torch.zeros(3))


@pytest.mark.parametrize("device", DEVICES)
def test_device_flags(device):
    x = torch.ones(2, device=device)
    assert x.is_cuda is False and x.is_xpu is False and x.is_mps is False and x.is_meta is False
    assert x.is_sparse is False and x.is_quantized is False
    assert x.is_cpu is (device == "cpu")
    assert x.is_pinned() is False


def test_pin_memory():
    x = torch.ones(2)
    if torch.accelerator.is_available():
        assert x.pin_memory() is not x and x.pin_memory().is_pinned()  # a pinned copy, as PyTorch
    else:
        with pytest.raises(RuntimeError, match="accelerator"):
            x.pin_memory()


@pytest.mark.parametrize("device", DEVICES)
def test_cuda_and_to_cuda_raise_naming_the_devices(device):
    x = torch.ones(2, device=device)
    for f in (lambda: x.cuda(), lambda: x.cuda(0), lambda: x.to("cuda"), lambda: x.to("cuda:0", non_blocking=True),
              lambda: torch.zeros(2, device="cuda"), lambda: torch.tensor([1.0], device=torch.device("cuda"))):
        with pytest.raises(RuntimeError, match=r"no 'cuda' backend.*installed here are cpu"):
            f()
    d = torch.device("cuda")  # a description is valid, as in PyTorch
    assert d.type == "cuda" and str(torch.device("cuda", 1)) == "cuda:1"
    assert x.to(device, non_blocking=True) is x
    assert x.cpu(memory_format=torch.preserve_format).device.type == "cpu"


# ---- PyTorch's grad_fn names ---------------------------------------------------------------------------------
def _grad_fn_cases():
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(5, 4, requires_grad=True)
    b = torch.randn(5, requires_grad=True)
    return {
        "MseLossBackward0": F.mse_loss(F.linear(x, w, b), torch.randn(3, 5)),
        "AddmmBackward0": F.linear(x, w, b),
        "SliceBackward0": x[:, 1:3],
        "SelectBackward0": x[1],
        "ViewBackward0": x.view(12),
        "TBackward0": x.t(),
        "MmBackward0": x.mm(w.t()),
        "NllLossBackward0": F.nll_loss(F.log_softmax(x, 1), torch.tensor([0, 1, 2])),
        "LogSoftmaxBackward0": F.log_softmax(x, 1),
        "MeanBackward0": x.mean(),
        "SumBackward0": x.sum(),
        "MulBackward0": x * 2,
        "AddBackward0": x + 1,
        "PowBackward0": x ** 2,
        "ReluBackward0": x.relu(),
        "DivBackward0": x / 2,
        "SubBackward0": x - 1,
        "ExpandBackward0": b.expand(3, 5),
        "UnsqueezeBackward0": x.unsqueeze(0),
        "PermuteBackward0": x.permute(1, 0),
        "CloneBackward0": x.clone(),
        "IndexBackward0": x[torch.tensor([0, 2])],
        "CatBackward0": torch.cat([x, x]),
        "StackBackward0": torch.stack([x, x]),
    }, x


@pytest.mark.parametrize("name", list(_grad_fn_cases()[0]))
def test_grad_fn_names(name):
    cases, x = _grad_fn_cases()
    y = cases[name]
    assert type(y.grad_fn).__name__ == name
    assert y.grad_fn.name() == name
    assert f"grad_fn=<{name}>" in repr(y)
    y.sum().backward()  # the renamed nodes still compute the gradient
    assert x.grad is not None or name == "ExpandBackward0"  # the expand case is of b, not x


def test_basic_index_node_names_follow_the_last_step():
    x = torch.randn(3, 4, requires_grad=True)
    assert type(x[1, 1:3].grad_fn).__name__ == "SliceBackward0"
    assert type(x[1:3, 2].grad_fn).__name__ == "SelectBackward0"
    assert type(x[1, :].grad_fn).__name__ == "SelectBackward0"  # a full ':' is no step
    assert type(x[None].grad_fn).__name__ == "UnsqueezeBackward0"
    assert type(x[...].grad_fn).__name__ == "AliasBackward0"


def test_renamed_nodes_give_the_same_gradients():
    x = torch.randn(3, 4, requires_grad=True, dtype=torch.float64)
    t = torch.randn(3, 4, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda a: F.mse_loss(a, t), (x,))
    assert torch.autograd.gradcheck(lambda a: torch.stack([a, 2 * a], 1), (x,))
    assert torch.autograd.gradcheck(lambda a: a[1:, 2], (x,))
    g, = torch.autograd.grad(F.mse_loss(x, t, reduction="sum"), x)
    np.testing.assert_allclose(g.numpy(), 2 * (x.detach().numpy() - t.numpy()))


def test_state_dict_of_old_style_module():
    """PyTorch 0.3's Module bookkeeping as user code: OrderedDict of parameters, typename in the error."""
    class Old:
        def __init__(self):
            self._parameters = OrderedDict()

        def __setattr__(self, name, value):
            params = self.__dict__.get("_parameters")
            if isinstance(value, torch.nn.Parameter):
                params[name] = value
            elif params is not None and name in params:
                if value is not None:
                    raise TypeError(f"cannot assign '{torch.typename(value)}' as parameter '{name}' "
                                    "(torch.nn.Parameter or None expected)")
                params[name] = value
            else:
                object.__setattr__(self, name, value)

    m = Old()
    m.w = torch.nn.Parameter(torch.ones(2))
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' as parameter 'w'"):
        m.w = torch.ones(2)


@pytest.mark.parametrize("device", DEVICES)
def test_type_with_legacy_names(device):
    x = torch.ones(2, device=device)
    assert x.type() == "torch.FloatTensor"
    d = x.type("torch.DoubleTensor")
    assert d.dtype == torch.float64 and d.device == x.device
    assert x.type(torch.LongTensor).dtype == torch.int64
    assert x.type(torch.float16).dtype == torch.float16
    assert x.type(torch.Tensor) is x
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.NoSuchTensor")
    with pytest.raises(RuntimeError, match="no 'cuda' backend"):
        x.type("torch.cuda.FloatTensor")
    with pytest.raises(RuntimeError, match="no 'cuda' backend"):
        x.type(torch.cuda.FloatTensor)
    with pytest.raises(ValueError, match="invalid type"):
        x.type(int)


# ---- PyTorch 1.0's SGD source, as user code on coretorch's Optimizer base ----------------------------------------
class LegacySGD(torch.optim.Optimizer):
    """SGD as PyTorch 1.0 wrote it: the deprecated add_(Number, Tensor) overloads and .data everywhere."""

    def __init__(self, params, lr=torch.optim.optimizer.required, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False):
        if lr is not torch.optim.optimizer.required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov))

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad.data
                if group["weight_decay"] != 0:
                    d_p.add_(group["weight_decay"], p.data)
                if group["momentum"] != 0:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        buf = state["momentum_buffer"] = torch.zeros_like(p.data)
                        buf.mul_(group["momentum"]).add_(d_p)
                    else:
                        buf = state["momentum_buffer"]
                        buf.mul_(group["momentum"]).add_(1 - group["dampening"], d_p)
                    d_p = d_p.add(group["momentum"], buf) if group["nesterov"] else buf
                p.data.add_(-group["lr"], d_p)
        return loss


@pytest.mark.parametrize("device", DEVICES)
def test_legacy_sgd_source_matches_coretorch_sgd(device):
    torch.manual_seed(1)
    net_a = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(device)
    net_b = copy.deepcopy(net_a)
    x, y = torch.randn(32, 4, device=device), torch.randn(32, 1, device=device)
    kw = dict(lr=0.05, momentum=0.9, weight_decay=1e-3, nesterov=True)
    opt_a, opt_b = LegacySGD(net_a.parameters(), **kw), torch.optim.SGD(net_b.parameters(), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for _ in range(5):
            for net, opt in ((net_a, opt_a), (net_b, opt_b)):
                opt.zero_grad()
                F.mse_loss(net(x), y).backward()
                opt.step()
    for pa, pb in zip(net_a.parameters(), net_b.parameters()):
        np.testing.assert_allclose(pa.detach().cpu().numpy(), pb.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        LegacySGD(net_a.parameters(), lr=-1.0)


def test_deepcopy_of_a_plain_user_subclass():
    class Tagged(torch.Tensor):
        pass

    t = torch.tensor([1.0, 2.0]).as_subclass(Tagged)
    t.note = "kept"
    c = copy.deepcopy(t)
    assert type(c) is Tagged and c.note == "kept" and c.tolist() == [1.0, 2.0]
    c.add_(1)
    assert t.tolist() == [1.0, 2.0]
    u = Tagged([3.0, 4.0])  # Tensor's legacy constructor on the subclass
    assert type(u) is Tagged and u.tolist() == [3.0, 4.0]


def test_nn_modules_utils():
    from coretorch.nn.modules.utils import _pair, _single, _triple
    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2) and _single(1) == (1,) and _triple(2) == (2, 2, 2)


def _functional_cases(x, t):
    w1 = torch.randn(2, 3, 2, dtype=x.dtype, requires_grad=True)
    w2 = torch.randn(2, 3, 2, 2, dtype=x.dtype, requires_grad=True)
    return {
        "GeluBackward0": lambda a: F.gelu(a),
        "GeluBackward0-tanh": lambda a: F.gelu(a, approximate="tanh"),
        "SiluBackward0": lambda a: F.silu(a),
        "MishBackward0": lambda a: F.mish(a),
        "LeakyReluBackward0": lambda a: F.leaky_relu(a, 0.1),
        "EluBackward0": lambda a: F.elu(a),
        "SoftplusBackward0": lambda a: F.softplus(a),
        "LogSigmoidBackward0": lambda a: F.logsigmoid(a),
        "HardtanhBackward0": lambda a: F.hardtanh(a, -0.5, 0.5),
        "HardtanhBackward0-relu6": lambda a: F.relu6(a * 4),
        "NativeLayerNormBackward0": lambda a: F.layer_norm(a, (4,)),
        "NativeBatchNormBackward0": lambda a: F.batch_norm(a, None, None, training=True),
        "NativeGroupNormBackward0": lambda a: F.group_norm(a.reshape(3, 2, 2), 2),
        "SmoothL1LossBackward0": lambda a: F.smooth_l1_loss(a, t),
        "HuberLossBackward0": lambda a: F.huber_loss(a, t, reduction="sum"),
        "BinaryCrossEntropyWithLogitsBackward0": lambda a: F.binary_cross_entropy_with_logits(a, t.sigmoid()),
        "ConvolutionBackward0-1d": lambda a: F.conv1d(a.reshape(1, 3, 4), w1),
        "ConvolutionBackward0-2d": lambda a: F.conv2d(a.reshape(1, 3, 2, 2), w2, padding=1),
        "MeanBackward0-l1": lambda a: F.l1_loss(a, t),  # composite in PyTorch too
    }


@pytest.mark.parametrize("name", list(_functional_cases(torch.zeros(1), torch.zeros(1))))
def test_composite_functional_grad_fn_names(name):
    torch.manual_seed(0)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    t = torch.randn(3, 4, dtype=torch.float64)
    fn = _functional_cases(x, t)[name]
    y = fn(x)
    assert type(y.grad_fn).__name__ == name.split("-")[0]
    assert torch.autograd.gradcheck(fn, (x,))  # renaming left the backward as it was
    with torch.no_grad():
        assert fn(x).grad_fn is None


def test_inplace_and_unbatched_forms_are_not_renamed():
    x = torch.randn(3, 4, requires_grad=True)
    y = x * 1
    F.leaky_relu(y, inplace=True)
    assert type(y.grad_fn).__name__ != "LeakyReluBackward0"
    w = torch.randn(2, 3, 2, requires_grad=True)
    assert type(F.conv1d(torch.randn(3, 4), w).grad_fn).__name__.startswith("Squeeze")  # as PyTorch


# ---- PyTorch 2.x's Parameter source shape, as user code (metaclass from torch._C._TensorMeta, _is_param) -----------
class _UserParamMeta(torch._C._TensorMeta):
    def __instancecheck__(self, instance):
        if self is UserParam and isinstance(instance, torch.Tensor) and getattr(instance, "_is_param", False):
            return True
        return super().__instancecheck__(instance)


class UserParam(torch.Tensor, metaclass=_UserParamMeta):
    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = torch.empty(0)
        if type(data) is torch.Tensor or type(data) is UserParam:
            return torch.Tensor._make_subclass(cls, data, requires_grad)
        t = data.detach().requires_grad_(requires_grad)  # another subclass: flag it instead
        t._is_param = True
        return t

    def __repr__(self):
        return "UserParam containing:\n" + super().__repr__()

    __torch_function__ = torch._C._disabled_torch_function_impl


@pytest.mark.parametrize("device", DEVICES)
def test_pytorch2_parameter_source_as_user_code(device):
    p = UserParam(torch.ones(2, device=device))
    assert type(p) is UserParam and p.requires_grad and isinstance(p, UserParam)
    flagged = torch.ones(2, device=device).as_subclass(MyParameter)
    q = UserParam(flagged, requires_grad=False)
    # detach() of a subclass gives a plain Tensor in coretorch (no __torch_function__ dispatch): the flag still counts
    assert isinstance(q, torch.Tensor) and q._is_param and isinstance(q, UserParam) and not q.requires_grad
    assert not isinstance(torch.ones(1), UserParam)
    (p * 3).sum().backward()
    np.testing.assert_allclose(p.grad.cpu().numpy(), [3.0, 3.0])
    assert repr(UserParam(torch.zeros(1), False)) == "UserParam containing:\nUserParam([0.])"
    assert UserParam().shape == (0,)


def test_set_default_tensor_type_legacy():
    try:
        with pytest.warns(UserWarning, match=r"set_default_tensor_type\(\) is deprecated as of PyTorch 2.1"):
            torch.set_default_tensor_type("torch.DoubleTensor")
        assert torch.ones(1).dtype == torch.float64 and torch.get_default_dtype() == torch.float64
        with pytest.warns(UserWarning):
            torch.set_default_tensor_type(torch.HalfTensor)
        assert torch.zeros(2).dtype == torch.float16
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="only floating-point types"):
            torch.set_default_tensor_type(torch.LongTensor)
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="torch.cuda.FloatTensor not available"):
            torch.set_default_tensor_type(torch.cuda.FloatTensor)
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="not available"):
            torch.set_default_tensor_type("torch.cuda.FloatTensor")
        with pytest.warns(UserWarning), pytest.raises(TypeError, match="invalid type"):
            torch.set_default_tensor_type("torch.NoTensor")
    finally:
        torch.set_default_dtype(torch.float32)


def test_nn_init_deprecated_names():
    torch.manual_seed(0)
    for old, new, args in (("xavier_uniform", "xavier_uniform_", ()), ("kaiming_normal", "kaiming_normal_", ()),
                           ("constant", "constant_", (0.5,)), ("uniform", "uniform_", ()),
                           ("normal", "normal_", ()), ("orthogonal", "orthogonal_", ()),
                           ("xavier_normal", "xavier_normal_", ()), ("kaiming_uniform", "kaiming_uniform_", ())):
        w = torch.empty(4, 5)
        with pytest.warns(FutureWarning, match=f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`"):
            assert getattr(torch.nn.init, old)(w, *args) is w
        torch.manual_seed(1)
        a = getattr(torch.nn.init, new)(torch.empty(4, 5), *args)
        torch.manual_seed(1)
        with pytest.warns(FutureWarning):
            b = getattr(torch.nn.init, old)(torch.empty(4, 5), *args)
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_deprecated_value_first_overload_of_addcmul():
    """addcmul_(Number, Tensor, Tensor): the wrapper put on the elementwise family's methods, checked here on a
    stand-in with PyTorch's signature (self + value * t1 * t2)."""
    from coretorch._tensor_legacy import _value_first

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self.add_(tensor1 * tensor2 * value)

    m = _value_first("addcmul_", addcmul_)
    x = torch.ones(2)
    with pytest.warns(UserWarning, match=r"This overload of addcmul_ is deprecated:\n\taddcmul_\(Number value, "
                                         r"Tensor tensor1, Tensor tensor2\)"):
        assert m(x, 0.5, torch.tensor([2.0, 4.0]), torch.tensor([1.0, 2.0])) is x
    assert x.tolist() == [2.0, 5.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m(x, torch.ones(2), torch.ones(2), value=2)
    assert x.tolist() == [4.0, 7.0]
    if hasattr(torch.Tensor, "addcmul_"):  # once the elementwise family is merged: its method has the overload
        y = torch.zeros(2)
        with pytest.warns(UserWarning, match="This overload of addcmul_ is deprecated"):
            y.addcmul_(2, torch.ones(2), torch.full((2,), 3.0))
        assert y.tolist() == [6.0, 6.0]


# ---- PyTorch's Module.__setattr__ logic, as user code (it needs torch.typename and the module registries) ------
class SetattrModule(torch.nn.Module):
    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, torch.nn.Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{torch.typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, torch.nn.Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{torch.typename(value)}' as child module '{name}' "
                                    "(torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, torch.Tensor):
                        raise TypeError(f"cannot assign '{torch.typename(value)}' as buffer '{name}' "
                                        "(torch.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)


def test_pytorch_module_setattr_source_as_user_code():
    m = SetattrModule()
    m.w = torch.nn.Parameter(torch.ones(2))
    m.p = MyParameter(torch.ones(3))  # a user parameter class (PyTorch's _is_param rule)
    m.lin = torch.nn.Linear(2, 1)
    m.register_buffer("stat", torch.zeros(1))
    m.stat = torch.ones(1)
    m.note = "plain"
    assert [n for n, _ in m.named_parameters()] == ["w", "p", "lin.weight", "lin.bias"]
    assert m.stat.tolist() == [1.0] and "stat" in m.state_dict() and m.note == "plain"
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' as parameter 'w'"):
        m.w = torch.ones(2)
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'lin'"):
        m.lin = 3
    with pytest.raises(TypeError, match=r"cannot assign 'str' as buffer 'stat'"):
        m.stat = "x"
    m.w = None
    assert m.w is None and [n for n, _ in m.named_parameters()][:1] == ["p"]


def test_alpha_first_wraps_a_rebound_add():
    """If an op family rebinds Tensor.add_, the deprecated (alpha, other) order is put on top of its method."""
    from coretorch._tensor_legacy import _alpha_first
    calls = []

    def add_(self, other, *, alpha=1):
        calls.append(alpha)
        return self

    m = _alpha_first("add_", add_)
    x = torch.ones(1)
    with pytest.warns(UserWarning, match="This overload of add_ is deprecated"):
        assert m(x, 2, torch.ones(1)) is x
    m(x, torch.ones(1), alpha=3)
    assert calls == [2, 3]
    with pytest.raises(TypeError):
        m(x, torch.ones(1), torch.ones(1))
