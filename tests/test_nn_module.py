"""nn.Module, Parameter and the containers: registration, the member walker, hooks, state_dict, repr.

The behaviour to match is PyTorch's module.py / container.py (error messages, hook semantics, key order,
repr layout); gradients are checked against numpy.
"""
import copy
import itertools
from collections import OrderedDict

import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.nn.modules import module as module_mod


def arr(t):
    return t.detach().numpy()


class Scale(nn.Module):
    """A parameter-free stand-in for an activation module."""

    def __init__(self, s=2.0):
        super().__init__()
        self.s = s

    def forward(self, x):
        return x * self.s


class ReLULike(nn.Module):
    def forward(self, x):
        return x.relu()


ReLULike.__name__ = "ReLU"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.register_buffer("running", torch.zeros(3))
        self.register_buffer("tmp", torch.ones(1), persistent=False)
        self.block = nn.Sequential(nn.Linear(3, 3), Scale())
        self.fc2 = nn.Linear(3, 2, bias=False)

    def forward(self, x):
        return self.fc2(self.block(self.fc1(x)))


# ---------------------------------------------------------------------------------------------
# Parameter
# ---------------------------------------------------------------------------------------------
def test_parameter_basics():
    t = torch.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    assert isinstance(p, torch.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert repr(p).startswith("Parameter containing:\ntensor([1., 2.], requires_grad=True)")
    assert str(p) == repr(p)
    # shares storage with the tensor it was made from
    t.add_(1.0)
    assert p.tolist() == [2.0, 3.0]
    assert not nn.Parameter(torch.ones(2), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    # ops on a parameter give plain tensors
    q = p * 2
    assert type(q) is torch.Tensor and not isinstance(q, nn.Parameter)
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(torch.tensor([1, 2]))


def test_parameter_deepcopy_and_backward():
    p = nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))
    (p * p).sum().backward()
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q is not p and q.requires_grad
    assert q.tolist() == p.tolist() and q.grad is None   # PyTorch does not copy .grad of a Parameter
    q.detach().mul_(0)
    assert p.tolist() == [1.0, 2.0, 3.0]
    (q + 1).sum().backward()
    assert q.grad.tolist() == [1.0, 1.0, 1.0] and p.grad.tolist() == [2.0, 4.0, 6.0]


def test_buffer_marker():
    m = nn.Module()
    m.b = nn.Buffer(torch.ones(2), persistent=False)
    m.c = nn.Buffer(torch.zeros(1))
    assert set(dict(m.named_buffers())) == {"b", "c"}
    assert list(m.state_dict()) == ["c"]
    assert not isinstance(torch.ones(1), nn.Buffer)


# ---------------------------------------------------------------------------------------------
# registration and errors
# ---------------------------------------------------------------------------------------------
def test_registration_dicts_and_getattr():
    net = Net()
    assert list(net._parameters) == []
    assert list(net._modules) == ["fc1", "block", "fc2"]
    assert list(net._buffers) == ["running", "tmp"]
    assert net.fc1.weight is net.fc1._parameters["weight"]
    assert net.fc2.bias is None and "bias" in net.fc2._parameters
    assert "fc1" not in net.__dict__
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope
    # replacing: a module attribute becomes a plain attribute once deleted
    del net.fc2
    assert "fc2" not in net._modules
    net.fc2 = 3
    assert net.fc2 == 3 and "fc2" in net.__dict__
    # assigning a Parameter moves a name out of the other dicts
    net.running = nn.Parameter(torch.zeros(3))
    assert "running" in net._parameters and "running" not in net._buffers
    del net.running
    assert "running" not in net._parameters


def test_assignment_errors():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(torch.ones(1))
            super().__init__()

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()

    class EarlyMod(nn.Module):
        def __init__(self):
            self.l = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\) call"):
        EarlyMod()

    lin = nn.Linear(4, 2)
    with pytest.raises(TypeError) as e:
        lin.weight = torch.ones(2, 4)
    assert str(e.value) == ("cannot assign 'torch.FloatTensor' as parameter 'weight' "
                            "(torch.nn.Parameter or None expected)")
    with pytest.raises(TypeError, match=r"cannot assign 'int' as parameter 'bias'"):
        lin.bias = 3
    lin.bias = None  # allowed
    assert lin.bias is None and "bias" in lin._parameters
    seq = nn.Sequential(nn.Linear(1, 1))
    with pytest.raises(TypeError, match=r"cannot assign 'str' as child module '0' \(torch.nn.Module or None"):
        setattr(seq, "0", "x")
    m = nn.Module()
    m.register_buffer("b", torch.ones(1))
    with pytest.raises(TypeError, match=r"cannot assign 'list' as buffer 'b'"):
        m.b = [1]
    m.b = None
    assert m.b is None


def test_register_errors():
    m = nn.Module()
    m.x = 1
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.register_parameter("x", None)
    with pytest.raises(KeyError) as e:
        m.register_parameter("a.b", None)
    assert e.value.args[0] == 'parameter name can\'t contain "."'
    with pytest.raises(KeyError) as e:
        m.register_parameter("", None)
    assert e.value.args[0] == 'parameter name can\'t be empty string ""'
    with pytest.raises(TypeError, match="parameter name should be a string. Got int"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' object to parameter 'w' "
                                        r"\(torch.nn.Parameter or None required\)"):
        m.register_parameter("w", torch.ones(1))
    nonleaf = nn.Parameter(torch.ones(1)) * 2
    with pytest.raises(TypeError):
        m.register_parameter("w", nonleaf)
    with pytest.raises(KeyError) as e:
        m.register_buffer("a.b", torch.ones(1))
    assert e.value.args[0] == 'buffer name can\'t contain "."'
    with pytest.raises(TypeError, match=r"cannot assign 'int' object to buffer 'b' \(torch Tensor or None"):
        m.register_buffer("b", 3)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("c", 3)
    with pytest.raises(KeyError) as e:
        m.add_module("a.b", nn.Module())
    assert e.value.args[0] == 'module name can\'t contain ".", got: a.b'
    m.register_module("sub", nn.Identity())
    assert m.sub is m._modules["sub"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        nn.Module(foo=1)


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("") is net
    assert net.get_submodule("block.0") is net.block[0]
    assert net.get_parameter("block.0.weight") is net.block[0].weight
    assert net.get_buffer("running") is net.running
    with pytest.raises(AttributeError, match="Sequential has no attribute `7`"):
        net.get_submodule("block.7")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.get_submodule("fc1.weight")
    with pytest.raises(AttributeError, match="`running` is not an nn.Parameter"):
        net.get_parameter("running")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("fc1.weight")
    net.set_submodule("block.1", nn.Identity())
    assert isinstance(net.block[1], nn.Identity)


def test_dir_lists_members():
    net = Net()
    d = dir(net)
    for name in ("fc1", "block", "running", "forward", "training", "state_dict"):
        assert name in d
    assert d == sorted(d)
    assert "0" not in dir(nn.Sequential(nn.Identity()))


# ---------------------------------------------------------------------------------------------
# the member walker
# ---------------------------------------------------------------------------------------------
def test_parameter_order_and_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias", "fc2.weight"]
    assert [p.shape for p in net.parameters()] == [(3, 4), (3,), (3, 3), (3,), (2, 3)]
    assert [n for n, _ in net.named_parameters(prefix="net")][0] == "net.fc1.weight"
    assert list(net.named_parameters(recurse=False)) == []
    assert [n for n, _ in net.fc1.named_parameters(recurse=False)] == ["weight", "bias"]
    assert [n for n, _ in net.named_buffers()] == ["running", "tmp"]
    assert [n for n, _ in net.named_children()] == ["fc1", "block", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "block", "block.0", "block.1", "fc2"]
    assert [n for n, _ in net.named_modules(prefix="m")][:2] == ["m", "m.fc1"]
    assert list(net.children())[1] is net.block
    assert len(list(net.modules())) == 6


def test_shared_parameters_and_modules_deduplicated():
    shared = nn.Linear(2, 2)
    m = nn.Module()
    m.a = shared
    m.b = shared
    m.c = nn.Linear(2, 2)
    m.c.weight = shared.weight  # tied weight
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias", "c.bias"]
    assert len(list(m.parameters())) == 3
    all_names = [n for n, _ in m.named_parameters(remove_duplicate=False)]
    assert all_names == ["a.weight", "a.bias", "b.weight", "b.bias", "c.weight", "c.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "a", "c"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "a", "b", "c"]
    assert [n for n, _ in m.named_children()] == ["a", "c"]
    # state_dict keeps every name (as PyTorch)
    assert list(m.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias", "c.weight", "c.bias"]


# ---------------------------------------------------------------------------------------------
# modes and conversions
# ---------------------------------------------------------------------------------------------
def test_train_eval_apply_requires_grad_zero_grad():
    net = Net()
    assert net.training and net.block[1].training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Linear", "Scale", "Sequential", "Linear", "Net"]
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    net(torch.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_keeps_parameter_identity():
    net = Net()
    net(torch.randn(2, 4)).sum().backward()
    params = list(net.parameters())
    grads_before = [arr(p.grad).astype(np.float64) for p in params]
    values = [arr(p).astype(np.float64) for p in params]
    assert net.double() is net
    after = list(net.parameters())
    assert all(a is b for a, b in zip(params, after))
    assert all(type(p) is nn.Parameter and p.dtype is torch.float64 and p.requires_grad for p in after)
    assert all(p.grad.dtype is torch.float64 for p in after)
    for p, v, g in zip(after, values, grads_before):
        np.testing.assert_allclose(arr(p), v)
        np.testing.assert_allclose(arr(p.grad), g)
    assert net.running.dtype is torch.float64
    net.to(torch.float32)
    assert net.fc1.weight.dtype is torch.float32 and net.fc1.weight is params[0]
    net.to("cpu", dtype=torch.float64)
    assert net.fc1.weight.dtype is torch.float64
    net.half()
    assert net.fc1.weight.dtype is torch.float16
    net.float().cpu()
    assert net.fc1.weight.dtype is torch.float32
    # the module still trains after the conversions
    net(torch.randn(2, 4)).sum().backward()
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        net.to(torch.int64)
    m = nn.Module()
    m.register_buffer("idx", torch.tensor([1, 2]))
    m.double()
    assert m.idx.dtype is torch.int64  # integer buffers keep their dtype


def test_module_deepcopy():
    net = Net()
    net2 = copy.deepcopy(net)
    for (n1, p1), (n2, p2) in zip(net.named_parameters(), net2.named_parameters()):
        assert n1 == n2 and p1 is not p2 and type(p2) is nn.Parameter
        np.testing.assert_array_equal(arr(p1), arr(p2))
    x = torch.randn(3, 4)
    np.testing.assert_allclose(arr(net(x)), arr(net2(x)), rtol=1e-6)
    net2(x).sum().backward()
    assert all(p.grad is None for p in net.parameters())
    assert all(p.grad is not None for p in net2.parameters())


# ---------------------------------------------------------------------------------------------
# forward hooks
# ---------------------------------------------------------------------------------------------
def test_forward_pre_hook_and_forward_hook_replace_values():
    m = Scale(3.0)
    calls = []

    def pre(mod, args):
        calls.append(("pre", args[0].tolist()))
        return args[0] + 1          # a non-tuple return becomes the single argument

    def fwd(mod, args, out):
        calls.append(("fwd", args[0].tolist(), out.tolist()))
        return out * 10

    h1 = m.register_forward_pre_hook(pre)
    h2 = m.register_forward_hook(fwd)
    assert m(torch.tensor([1.0])).tolist() == [60.0]
    assert calls == [("pre", [1.0]), ("fwd", [2.0], [6.0])]
    h1.remove()
    h2.remove()
    h2.remove()  # removing twice is harmless
    assert m(torch.tensor([1.0])).tolist() == [3.0]
    with m.register_forward_hook(lambda mod, a, o: o + 1):
        assert m(torch.tensor([1.0])).tolist() == [4.0]
    assert m(torch.tensor([1.0])).tolist() == [3.0]


def test_hook_order_prepend_and_with_kwargs():
    class KW(nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale

    m = KW()
    order = []
    m.register_forward_pre_hook(lambda mod, a: order.append("pre1"))
    m.register_forward_pre_hook(lambda mod, a: order.append("pre0"), prepend=True)

    def pre_kw(mod, args, kwargs):
        order.append("prekw")
        return args, {"scale": kwargs.get("scale", 1.0) * 2}

    m.register_forward_pre_hook(pre_kw, with_kwargs=True)
    m.register_forward_hook(lambda mod, a, o: order.append("fwd1"))
    m.register_forward_hook(lambda mod, a, o: order.append("fwd0"), prepend=True)
    seen = {}

    def fwd_kw(mod, args, kwargs, out):
        seen.update(kwargs)
        return out + 1

    m.register_forward_hook(fwd_kw, with_kwargs=True)
    out = m(torch.tensor([1.0]), scale=3.0)
    assert out.tolist() == [7.0]
    assert order == ["pre0", "pre1", "prekw", "fwd0", "fwd1"]
    assert seen == {"scale": 6.0}

    m2 = KW()
    m2.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, new_kwargs"):
        m2(torch.ones(1))


def test_always_call_forward_hook_runs_on_error():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    ran = []
    m.register_forward_hook(lambda mod, a, o: ran.append("always"), always_call=True)
    m.register_forward_hook(lambda mod, a, o: ran.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(torch.ones(1))
    assert ran == ["always"]


def test_global_module_hooks():
    seen = []
    h1 = module_mod.register_module_forward_pre_hook(lambda m, a: seen.append(("pre", type(m).__name__)))
    h2 = module_mod.register_module_forward_hook(lambda m, a, o: o * 2)
    try:
        m = Scale(1.0)
        local = []
        m.register_forward_pre_hook(lambda mod, a: local.append(len(seen)))
        assert m(torch.tensor([1.0])).tolist() == [2.0]
        assert seen == [("pre", "Scale")] and local == [1]  # global pre-hooks run first
    finally:
        h1.remove()
        h2.remove()
    assert Scale(1.0)(torch.tensor([1.0])).tolist() == [1.0]

    reg = []
    h = module_mod.register_module_parameter_registration_hook(lambda m, n, p: reg.append(n))
    try:
        nn.Linear(2, 2)
    finally:
        h.remove()
    assert reg == ["weight", "bias"]


def test_plugin_observation_hook_only_when_observing():
    from coretorch.plugins import hookimpl
    from coretorch.plugins import manager as pm
    events = []

    class Observer:
        @hookimpl
        def coretorch_module_forward(self, module, inputs, output):
            events.append((type(module).__name__, len(inputs), tuple(output.shape)))

    net = nn.Sequential(nn.Linear(4, 3), Scale())
    assert not pm.observing["module_forward"]
    net(torch.randn(2, 4))
    assert events == []
    torch.plugins.register(Observer(), name="nn-observer-test")
    try:
        assert pm.observing["module_forward"]
        net(torch.randn(2, 4))
    finally:
        torch.plugins.unregister("nn-observer-test")
    assert events == [("Linear", 1, (2, 3)), ("Scale", 1, (2, 3)), ("Sequential", 1, (2, 3))]
    net(torch.randn(2, 4))
    assert len(events) == 3


# ---------------------------------------------------------------------------------------------
# backward hooks
# ---------------------------------------------------------------------------------------------
def _linear64():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2).double()
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    return lin, x


def test_full_backward_hook_grad_input_and_output():
    lin, x = _linear64()
    rec = {}

    def hook(mod, grad_input, grad_output):
        rec["mod"] = mod
        rec["gi"] = grad_input
        rec["go"] = grad_output

    lin.register_full_backward_hook(hook)
    y = lin(x)
    assert y.grad_fn.name() == "BackwardHookFunctionBackward"
    (y * y).sum().backward()
    W = arr(lin.weight)
    go = 2 * arr(y)
    assert rec["mod"] is lin and len(rec["go"]) == 1 and len(rec["gi"]) == 1
    np.testing.assert_allclose(arr(rec["go"][0]), go, rtol=1e-12)
    np.testing.assert_allclose(arr(rec["gi"][0]), go @ W, rtol=1e-12)
    np.testing.assert_allclose(arr(x.grad), go @ W, rtol=1e-12)
    np.testing.assert_allclose(arr(lin.weight.grad), go.T @ arr(x), rtol=1e-12)


def test_full_backward_hook_replaces_grad_input_and_pre_hook_grad_output():
    lin, x = _linear64()
    lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
    got = {}

    def hook(m, gi, go):
        got["go"] = go
        return (gi[0] * 0 + 1,)

    lin.register_full_backward_hook(hook)
    lin(x).sum().backward()
    np.testing.assert_allclose(arr(got["go"][0]), np.full((4, 2), 3.0))
    np.testing.assert_allclose(arr(x.grad), np.ones((4, 3)))       # replaced grad_input
    # parameters see the grad_output the pre-hook produced
    np.testing.assert_allclose(arr(lin.weight.grad), 3 * np.ones((2, 4)) @ arr(x), rtol=1e-12)


def test_full_backward_hook_multiple_io_and_no_input_grad():
    class Two(nn.Module):
        def forward(self, a, b, k):
            return a * b * k, a + b

    m = Two()
    a = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([3.0, 4.0], dtype=torch.float64)  # no grad
    rec = {}
    m.register_full_backward_hook(lambda mod, gi, go: rec.update(gi=gi, go=go))
    p, s = m(a, b, 2.0)
    (p.sum() + 10 * s.sum()).backward()
    # (as PyTorch: a tensor input that needs no grad gets zeros, a non-tensor None)
    assert len(rec["gi"]) == 3 and rec["gi"][2] is None
    np.testing.assert_array_equal(arr(rec["gi"][1]), [0.0, 0.0])
    np.testing.assert_allclose(arr(rec["gi"][0]), [2 * 3 + 10, 2 * 4 + 10])
    np.testing.assert_allclose(arr(rec["go"][0]), [1, 1])
    np.testing.assert_allclose(arr(rec["go"][1]), [10, 10])

    # no input requires grad (only parameters do): the hook still runs, with grad_input all None
    lin, _ = _linear64()
    calls = []
    lin.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, tuple(arr(g) for g in go))))
    lin(torch.ones(1, 3, dtype=torch.float64)).sum().backward()
    assert len(calls) == 1 and calls[0][0] == (None,)
    np.testing.assert_allclose(calls[0][1][0], np.ones((1, 2)))


def test_backward_hook_handles_and_mixing_error():
    lin, x = _linear64()
    calls = []
    h = lin.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    h0 = lin.register_full_backward_hook(lambda m, gi, go: calls.append(0), prepend=True)
    lin(x).sum().backward()
    assert calls == [0, 1]
    h.remove()
    h0.remove()
    y = lin(x)
    assert y.grad_fn.name() == "AddmmBackward0"  # no hooks left: plain forward
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        lin.register_backward_hook(lambda m, gi, go: None)
    lin2 = nn.Linear(2, 2)
    lin2.register_backward_hook(lambda m, gi, go: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        lin2.register_full_backward_hook(lambda m, gi, go: None)


def test_global_full_backward_hook():
    lin, x = _linear64()
    seen = []
    h = module_mod.register_module_full_backward_hook(lambda m, gi, go: seen.append(type(m).__name__))
    hp = module_mod.register_module_full_backward_pre_hook(lambda m, go: seen.append("pre"))
    try:
        lin(x).sum().backward()
    finally:
        h.remove()
        hp.remove()
    assert seen == ["pre", "Linear"]


# ---------------------------------------------------------------------------------------------
# state_dict
# ---------------------------------------------------------------------------------------------
def test_state_dict_keys_order_and_detach():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    # a module's own parameters, then its own persistent buffers, then each child in registration order
    assert list(sd) == ["running", "fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias", "fc2.weight"]
    assert all(not v.requires_grad and type(v) is torch.Tensor for v in sd.values())
    # detached values share storage with the parameters
    sd["fc1.bias"].zero_()
    assert not net.fc1.bias.any()
    kv = net.state_dict(keep_vars=True)
    assert kv["fc1.weight"] is net.fc1.weight
    assert list(net.state_dict(prefix="model."))[1] == "model.fc1.weight"
    assert sd._metadata[""] == {"version": 1} and "block.0" in sd._metadata


def test_load_state_dict_roundtrip_and_errors():
    a, b = Net(), Net()
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    for pa, pb in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(arr(pa), arr(pb))
    sd = a.state_dict()
    del sd["fc1.bias"]
    sd["extra.weight"] = torch.ones(1)
    sd["fc9"] = torch.ones(1)
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(sd)
    assert str(e.value) == ('Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc1.bias". '
                            '\n\tUnexpected key(s) in state_dict: "extra.weight", "fc9". ')
    res = b.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["extra.weight", "fc9"]
    bad = a.state_dict()
    bad["fc1.weight"] = torch.ones(2, 4)
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(bad, strict=False)
    assert ("size mismatch for fc1.weight: copying a param with shape coretorch.Size([2, 4]) from checkpoint, "
            "the shape in current model is coretorch.Size([3, 4]).") in str(e.value)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        b.load_state_dict([1, 2])
    # load copies into the existing parameters (identity kept); assign=True replaces them
    w = b.fc1.weight
    b.load_state_dict(a.state_dict())
    assert b.fc1.weight is w
    b.load_state_dict(a.state_dict(), assign=True)
    assert b.fc1.weight is not w and isinstance(b.fc1.weight, nn.Parameter) and b.fc1.weight.requires_grad


def test_state_dict_hooks():
    m = nn.Linear(2, 2)
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd.__setitem__(prefix + "extra", torch.ones(1)))
    assert list(m.state_dict()) == ["weight", "bias", "extra"]
    m2 = nn.Linear(2, 2)
    m2.register_load_state_dict_post_hook(lambda mod, keys: keys.unexpected_keys.clear())
    m2.load_state_dict(m.state_dict())  # the post hook forgives the unexpected key


# ---------------------------------------------------------------------------------------------
# repr
# ---------------------------------------------------------------------------------------------
def test_repr_like_pytorch():
    relu = getattr(nn, "ReLU", ReLULike)  # the real activation module once nn exports it
    seq = nn.Sequential(nn.Linear(4, 2), relu())
    assert repr(seq) == "Sequential(\n  (0): Linear(in_features=4, out_features=2, bias=True)\n  (1): ReLU()\n)"
    net = Net()
    assert repr(net) == (
        "Net(\n"
        "  (fc1): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (block): Sequential(\n"
        "    (0): Linear(in_features=3, out_features=3, bias=True)\n"
        "    (1): Scale()\n"
        "  )\n"
        "  (fc2): Linear(in_features=3, out_features=2, bias=False)\n"
        ")")
    assert repr(nn.Module()) == "Module()"

    class Multi(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Identity()

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Multi()) == "Multi(\n  a=1\n  b=2\n  (inner): Identity()\n)"
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.Identity()])
    assert repr(ml) == ("ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
                        "  (3): Identity()\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_model_parameters_printed_like_pytorch():
    lin = nn.Linear(2, 1)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[0.5, -0.25]]))
        lin.bias.fill_(0.125)
    assert "<bound method Module.parameters of Linear(in_features=2, out_features=1, bias=True)>" == \
        repr(lin.parameters)
    assert [repr(p) for p in lin.parameters()] == [
        "Parameter containing:\ntensor([[ 0.5000, -0.2500]], requires_grad=True)",
        "Parameter containing:\ntensor([0.1250], requires_grad=True)"]


# ---------------------------------------------------------------------------------------------
# containers
# ---------------------------------------------------------------------------------------------
def test_sequential_indexing_and_mutation():
    a, b, c = nn.Linear(2, 2), Scale(), nn.Identity()
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and seq[-3] is a
    assert list(seq) == [a, b, c]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        seq[-4]
    sl = seq[1:]
    assert type(sl) is nn.Sequential and list(sl) == [b, c] and list(sl._modules) == ["1", "2"]
    x = torch.randn(3, 2)
    np.testing.assert_allclose(arr(seq(x)), arr(a(x)) * 2.0, rtol=1e-6)
    d = nn.Identity()
    seq.append(d)
    assert list(seq._modules) == ["0", "1", "2", "3"] and seq[3] is d
    e = nn.Identity()
    seq.insert(1, e)
    assert list(seq) == [a, e, b, c, d]
    seq.insert(-1, nn.Identity())
    assert len(seq) == 6 and seq[-1] is d
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2", "3", "4"] and seq[1] is b
    assert seq.pop(0) is a and seq[0] is b
    seq.extend([nn.Identity()])
    assert len(seq) == 5
    seq[0] = a
    assert seq[0] is a
    del seq[1:3]
    assert len(seq) == 3 and list(seq._modules) == ["0", "1", "2"]
    with pytest.raises(AssertionError):
        seq.insert(0, 3)
    od = nn.Sequential(OrderedDict([("conv", nn.Identity()), ("act", Scale())]))
    assert list(od._modules) == ["conv", "act"] and od.act is od[1]
    assert len(nn.Sequential(a) + nn.Sequential(b, c)) == 3
    assert len(nn.Sequential(a, b) * 2) == 4


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    assert layers[-1] is layers[2]
    assert isinstance(layers[:2], nn.ModuleList) and len(layers[:2]) == 2
    layers.append(nn.Identity())
    layers.insert(0, Scale())
    assert isinstance(layers[0], Scale) and len(layers) == 5
    del layers[0]
    assert list(layers._modules) == ["0", "1", "2", "3"]
    layers += [nn.Identity()]
    assert len(layers) == 5
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        layers.extend(3)
    with pytest.raises(NotImplementedError, match=r'Module \[ModuleList\] is missing the required "forward"'):
        layers(torch.ones(1))

    md = nn.ModuleDict({"b": nn.Linear(2, 2), "a": Scale()})
    assert list(md.keys()) == ["b", "a"] and "a" in md and len(md) == 2
    md["c"] = nn.Identity()
    assert list(md) == ["b", "a", "c"]
    assert md.pop("a").s == 2.0 and "a" not in md
    md.update([("d", nn.Identity())])
    assert list(md.keys()) == ["b", "c", "d"]
    assert [n for n, _ in md.named_parameters()] == ["b.weight", "b.bias"]
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        md.update([("x",)])
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(torch.ones(2)), torch.zeros(3)])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(torch.ones(2, 3, dtype=torch.float64))
    assert pl[-1].shape == (2, 3) and isinstance(pl[1:], nn.ParameterList) and len(pl[1:]) == 2
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [coretorch.float32 of size 2]\n"
                        "    (1): Parameter containing: [coretorch.float32 of size 3]\n"
                        "    (2): Parameter containing: [coretorch.float64 of size 2x3]\n)")
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl()

    pd = nn.ParameterDict({"b": torch.ones(1), "a": nn.Parameter(torch.zeros(2))})
    assert list(pd.keys()) == ["a", "b"]  # a plain dict is inserted in sorted order, as PyTorch
    pd["c"] = torch.ones(3)
    assert isinstance(pd["c"], nn.Parameter) and "c" in pd and len(pd) == 3
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c"]
    assert pd.pop("b").shape == (1,) and list(pd) == ["a", "c"]
    assert pd.get("zz") is None and pd.setdefault("d", torch.ones(1)).shape == (1,)
    assert repr(nn.ParameterDict(OrderedDict(w=torch.ones(2, 2)))) == \
        "ParameterDict(  (w): Parameter containing: [torch.FloatTensor of size 2x2])"
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key"):
        pd[1] = torch.ones(1)


def test_optimizer_over_chained_parameters():
    """Plain SGD written by hand over itertools.chain of two nets' parameters (optim is elsewhere)."""
    torch.manual_seed(0)
    n1, n2 = nn.Linear(3, 2), nn.Linear(2, 1)
    params = list(itertools.chain(n1.parameters(), n2.parameters()))
    assert len(params) == 4 and params[0] is n1.weight and params[3] is n2.bias
    before = [arr(p).copy() for p in params]
    n2(n1(torch.randn(5, 3))).sum().backward()
    with torch.no_grad():
        for p in params:
            p.sub_(p.grad, alpha=0.1)
    for p, b in zip(params, before):
        # (float32: b - 0.1 g can cancel to near 0, where the kernel's and numpy's roundings differ by an ulp of b)
        np.testing.assert_allclose(arr(p), b - 0.1 * arr(p.grad), rtol=1e-6, atol=2e-7)


_OTHER_DEVICES = [d for d in __import__("coretorch.testing").testing.available_devices() if d != "cpu"]


@pytest.fixture
def second_device(request):
    """An installed non-cpu device, or (where none is installed) the numpy kernels under another device
    type registered in-process: the move between devices is tested either way."""
    if request.param != "fakedev":
        yield request.param
        return
    from coretorch.testing import cpu_kernels_as
    with cpu_kernels_as("fakedev") as dev:
        yield dev


@pytest.mark.parametrize("second_device", _OTHER_DEVICES or ["fakedev"], indirect=True)
def test_to_other_device_keeps_parameters(second_device):
    device = second_device
    net = Net()
    net(torch.randn(2, 4)).sum().backward()
    params = list(net.parameters())
    values = [arr(p) for p in params]
    net.to(device)
    assert all(a is b for a, b in zip(params, net.parameters()))
    assert all(p.device.type == device and p.grad.device.type == device for p in params)
    assert net.running.device.type == device
    out = net(torch.randn(2, 4, device=device))
    assert out.device.type == device
    out.sum().backward()
    net.cpu()
    for p, v in zip(net.parameters(), values):
        assert p.device.type == "cpu"
        np.testing.assert_array_equal(arr(p), v)


def test_missing_super_init():
    class NoInit(nn.Module):
        def __init__(self):
            pass

        def forward(self, x):
            return x

    with pytest.raises(AttributeError, match="'NoInit' object has no attribute '_forward_hooks'"):
        NoInit()(1)
