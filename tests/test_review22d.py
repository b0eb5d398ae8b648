"""Review 22d (eager): normalisation layers (batch, group, instance, layer, RMS, local response norm, F.normalize) and
activations, a second pass against PyTorch 2.13's documented behaviour, on every installed device.

Each test's docstring says what PyTorch does and what coretorch did before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def _x(device, *shape, dtype=torch.float64, seed=0):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype, device=device)


# ---- batch / group / instance norm ------------------------------------------------------------------
def test_batch_norm_of_an_empty_batch_keeps_the_running_statistics(device):
    """PyTorch's batch_norm of an empty batch in training returns an empty result and leaves the running mean and
    variance as they were (num_batches_tracked still counts the call); coretorch averaged them with the NaN mean of
    no values: both became NaN, and every later eval output with them."""
    m = torch.nn.BatchNorm2d(3).double().to(device)
    x = torch.zeros(0, 3, 2, 2, dtype=torch.float64, device=device, requires_grad=True)
    m(x).sum().backward()
    assert x.grad.shape == (0, 3, 2, 2)
    np.testing.assert_array_equal(m.running_mean.cpu().numpy(), np.zeros(3))
    np.testing.assert_array_equal(m.running_var.cpu().numpy(), np.ones(3))
    assert int(m.num_batches_tracked) == 1


def test_batch_and_instance_norm_need_both_running_statistics_or_neither(device):
    """With batch statistics PyTorch raises ValueError('running_mean and running_var must either both be None or
    neither be None') for one running statistic without the other; coretorch updated the one given and silently
    dropped the other. In evaluation it names the missing one ('running_var must be defined in evaluation mode')."""
    x = _x(device, 4, 3, 2)
    rm = torch.zeros(3, dtype=torch.float64, device=device)
    for a, b in ((rm, None), (None, rm)):
        with pytest.raises(ValueError, match="both be None or neither"):
            F.batch_norm(x, a, b, training=True)
        with pytest.raises(ValueError, match="both be None or neither"):
            F.instance_norm(x, a, b)
    np.testing.assert_array_equal(rm.cpu().numpy(), np.zeros(3))
    with pytest.raises(RuntimeError, match="^running_var must be defined in evaluation mode"):
        F.batch_norm(x, rm, None, training=False)
    with pytest.raises(RuntimeError, match="^running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None, training=False)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool])
def test_normalisations_of_integer_inputs_raise_not_implemented(device, dtype):
    """PyTorch raises NotImplementedError naming the kernel and the dtype ('"batch_norm" not implemented for
    'Long'') for an integer or bool input of batch_norm (also a float32 module's), instance_norm, group_norm and
    rms_norm; coretorch raised RuntimeError (mean()'s dtype error, or 'mixed dtype' for a float32 module)."""
    x = torch.ones(4, 4, 2, dtype=dtype, device=device)
    name = "Long" if dtype is torch.int64 else "Bool"
    with pytest.raises(NotImplementedError, match=f'"batch_norm" not implemented for \'{name}\''):
        F.batch_norm(x, None, None, training=True)
    with pytest.raises(NotImplementedError, match=f'"batch_norm" not implemented for \'{name}\''):
        torch.nn.BatchNorm1d(4).to(device)(x)
    with pytest.raises(NotImplementedError, match=f'"batch_norm" not implemented for \'{name}\''):
        F.instance_norm(x)
    with pytest.raises(NotImplementedError, match=f'"GroupNormKernelImpl" not implemented for \'{name}\''):
        F.group_norm(x, 2)
    with pytest.raises(NotImplementedError, match=f'"rms_norm" not implemented for \'{name}\''):
        F.rms_norm(x, (2,))


def test_group_norm_checks_as_pytorch(device):
    """PyTorch's group_norm raises ValueError('Expected more than 1 value per channel when training, got input size
    [1, 2]') when each group holds one value (coretorch normalised it to 0), RuntimeError('Expected num groups to be
    greater than 0, got -2') (coretorch: 'invalid shape dimension -2'), RuntimeError('Expected weight to be a vector
    of size equal to the number of channels in input, ...') (coretorch: a reshape error), and GroupNorm(2, 3) says
    'num_channels (3) must be divisible by num_groups (2)'."""
    with pytest.raises(ValueError, match=r"more than 1 value per channel when training, got input size \[1, 2\]"):
        F.group_norm(_x(device, 1, 2), 2)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.group_norm(_x(device, 1, 4, 1, 1), 4)
    assert F.group_norm(_x(device, 1, 4, 1), 2).shape == (1, 4, 1)
    with pytest.raises(RuntimeError, match="Expected num groups to be greater than 0, got -2"):
        F.group_norm(_x(device, 2, 4, 3), -2)
    with pytest.raises(RuntimeError, match=r"weight to be a vector of size equal to the number of channels in input, "
                                           r"but got weight of shape \[3\] and input of shape \[2, 4, 3\]"):
        F.group_norm(_x(device, 2, 4, 3), 2, torch.ones(3, dtype=torch.float64, device=device))
    with pytest.raises(RuntimeError, match=r"Expected bias to be a vector"):
        F.group_norm(_x(device, 2, 4, 3), 2, None, torch.ones(2, 2, dtype=torch.float64, device=device))
    with pytest.raises(ValueError, match=r"num_channels \(3\) must be divisible by num_groups \(2\)"):
        torch.nn.GroupNorm(2, 3)


def test_local_response_norm_of_an_empty_input_returns_it(device):
    """PyTorch's local_response_norm returns an empty input itself (an empty batch or no channels); coretorch's
    pooling reshape raised RuntimeError."""
    for shape in ((0, 4, 3), (2, 0, 3), (0, 4, 3, 2, 2)):
        x = torch.zeros(shape, device=device)
        assert F.local_response_norm(x, 2) is x


def test_normalize_writes_its_out_argument(device):
    """PyTorch's F.normalize(input, out=o) divides into ``o`` (``torch.div(input, denom, out=out)``) and returns it;
    coretorch ignored ``out``: it returned a new tensor and ``o`` kept its old values."""
    x = _x(device, 3, 4)
    o = torch.zeros(3, 4, dtype=torch.float64, device=device)
    r = F.normalize(x, out=o)
    assert r is o
    a = x.cpu().numpy()
    np.testing.assert_allclose(o.cpu().numpy(), a / np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-12)


# ---- activations ------------------------------------------------------------------------------------
_PIECEWISE_LINEAR = {
    "relu": torch.nn.functional.relu, "relu_method": lambda x: x.relu(), "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "hardtanh": F.hardtanh, "relu6": F.relu6, "threshold": lambda x: F.threshold(x, 0.1, -2.0),
    "hardshrink": F.hardshrink, "softshrink": F.softshrink, "rrelu_eval": lambda x: F.rrelu(x, training=False),
    "leaky_relu_inplace": lambda x: F.leaky_relu(x * 1.0, 0.2, inplace=True),
    "prelu": lambda x: F.prelu(x, torch.tensor([0.25], dtype=x.dtype, device=x.device)),
    "prelu_trained": lambda x: F.prelu(x, torch.tensor(-0.3, dtype=x.dtype, device=x.device, requires_grad=True)),
}


@pytest.mark.parametrize("name", sorted(_PIECEWISE_LINEAR))
def test_second_gradient_through_piecewise_linear_activations_is_zeros(device, name):
    """PyTorch's threshold_backward, leaky_relu_backward, hardtanh_backward, ... are differentiable with respect to
    the input (a zero derivative): the input gradient of a ReLU MLP taken with create_graph requires grad through the
    input, and its own gradient with respect to the input (a Hessian-vector product) is zeros. coretorch's masked
    gradient did not depend on the input: the second ``autograd.grad`` raised "The differentiated Tensor at index 0
    appears to not have been used in the graph", and a pure ``grad(relu(x).sum(), x, create_graph=True)`` did not
    require grad."""
    act = _PIECEWISE_LINEAR[name]
    gen = np.random.default_rng(1)
    w1 = torch.tensor(gen.standard_normal((3, 6)), device=device, requires_grad=True)
    w2 = torch.tensor(gen.standard_normal((6, 1)), device=device, requires_grad=True)
    x = torch.tensor(gen.standard_normal((5, 3)) * 2, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(act(x @ w1) @ w2, x, torch.ones(5, 1, dtype=torch.float64, device=device),
                               create_graph=True)
    (hv,) = torch.autograd.grad(g.sum(), x, retain_graph=True)
    np.testing.assert_array_equal(hv.cpu().numpy(), np.zeros((5, 3)))
    gw = torch.autograd.grad(g.pow(2).sum(), w1)[0]  # (the weights' part of the second gradient still flows)
    assert float(gw.abs().sum()) > 0
    (g1,) = torch.autograd.grad(act(x).sum(), x, create_graph=True)
    assert g1.requires_grad
    (h1,) = torch.autograd.grad(g1.sum(), x)
    np.testing.assert_array_equal(h1.cpu().numpy(), np.zeros((5, 3)))


def test_relu_second_gradient_node_is_pytorchs():
    """PyTorch: ``grad(relu(x).sum(), x, create_graph=True)`` has grad_fn ThresholdBackwardBackward0 (coretorch: none,
    the gradient did not require grad)."""
    x = torch.tensor([-1.0, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad(F.relu(x).sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == "ThresholdBackwardBackward0"


def test_threshold_of_integers_keeps_the_dtype(device):
    """PyTorch's threshold of an integer tensor computes in its dtype with the threshold and value truncated:
    threshold(arange(-3, 4), 0.5, 2) is int64 [2, 2, 2, 2, 1, 2, 3]; coretorch gave float32 (and compared with 0.5)."""
    x = torch.arange(-3, 4, device=device)
    r = F.threshold(x, 0.5, 2)
    assert r.dtype is torch.int64
    assert r.cpu().tolist() == [2, 2, 2, 2, 1, 2, 3]
    assert F.threshold(x, 1.0, -7.5).cpu().tolist() == [-7, -7, -7, -7, -7, 2, 3]
    y = x.clone()
    assert F.threshold_(y, 0.5, 2) is y and y.dtype is torch.int64 and y.cpu().tolist() == r.cpu().tolist()
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        F.threshold(torch.tensor([True, False], device=device), 0.5, 1)


@pytest.mark.parametrize("fn", [F.hardshrink, F.softshrink, lambda x: F.rrelu(x), lambda x: F.prelu(
    x, torch.ones(1, dtype=x.dtype, device=x.device))])
def test_shrinks_rrelu_and_prelu_of_integers_raise_not_implemented(device, fn):
    """PyTorch has no integer kernel of hardshrink, softshrink, rrelu (leaky_relu) or prelu: NotImplementedError
    ('"hardshrink_cpu" not implemented for 'Long''); coretorch returned float32 results (prelu an int64 one)."""
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        fn(torch.tensor([-3, -1, 0, 2, 7], device=device))


def test_prelu_checks_as_pytorch(device):
    """PyTorch's prelu: a weight of another dtype raises RuntimeError('prelu: Type promoting not supported. Got Double
    and Float') (coretorch promoted: a float32 PReLU of a float64 input gave float64), a 1-D input has one channel
    (PReLU(3) of a (3,) input raises 'Mismatch of parameter numbers and input channel size. Found parameter numbers =
    3 and channel size = 1.'; coretorch used dim 0 as the channels) and a 2-D weight raises 'prelu: Expected `weight`
    to be a scalar or 1D tensor, but got: ndim = 2' (coretorch broadcast it); glu of integers raises
    NotImplementedError (coretorch: a float32 result)."""
    x = _x(device, 2, 3)
    with pytest.raises(RuntimeError, match="prelu: Type promoting not supported. Got Double and Float"):
        F.prelu(x, torch.ones(1, device=device))
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 1."):
        torch.nn.PReLU(3).double().to(device)(_x(device, 3))
    with pytest.raises(RuntimeError, match="Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"):
        F.prelu(x, torch.ones(3, 1, dtype=torch.float64, device=device))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.glu(torch.arange(4, device=device))
    w = torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64, device=device)
    np.testing.assert_allclose(F.prelu(x, w).cpu().numpy(), np.where(x.cpu().numpy() > 0, x.cpu().numpy(),
                                                                    x.cpu().numpy() * np.array([0.1, -0.2, 0.3])))
    one = F.prelu(_x(device, 3), torch.tensor([0.5], dtype=torch.float64, device=device))
    assert one.shape == (3,)


def test_prelu_gradients_and_second_gradients(device):
    """A per-channel PReLU: the weight's gradient is the sum of ``x * g`` where ``x <= 0`` per channel, and the
    second gradients (gradgradcheck) hold with respect to input and weight (prelu is one PreluKernelBackward0 node
    since this review, its input gradient linked to the input)."""
    x = _x(device, 2, 3, 4).requires_grad_()
    w = torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(F.prelu, (x, w))
    assert torch.autograd.gradgradcheck(F.prelu, (x, w))
    w0 = torch.tensor(0.3, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradgradcheck(F.prelu, (x, w0))
    g = _x(device, 2, 3, 4, seed=3)
    F.prelu(x, w).backward(g)
    a, b = x.detach().cpu().numpy(), g.cpu().numpy()
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.where(a > 0, 0, a * b).sum((0, 2)), rtol=1e-12)
    assert type(torch.nn.PReLU(3).double().to(device)(x).grad_fn).__name__ == "PreluKernelBackward0"


def test_functional_batch_norm_checks_eps(device):
    """PyTorch's F.batch_norm (so every BatchNorm module) raises ValueError('batch_norm eps must be positive during
    training, but got 0.0') for eps <= 0 in training and 'must be non-negative' for eps < 0 in evaluation (after
    its one-value-per-channel check); ``torch.batch_norm`` does not check. coretorch divided by sqrt(0): a constant
    channel normalised to NaN."""
    x = torch.ones(2, 3, device=device)
    with pytest.raises(ValueError, match=r"batch_norm eps must be positive during training, but got 0.0"):
        F.batch_norm(x, None, None, training=True, eps=0.0)
    with pytest.raises(ValueError, match="batch_norm eps must be positive during training"):
        torch.nn.BatchNorm1d(3, eps=0).to(device)(x)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(x[:1], None, None, training=True, eps=0.0)
    rm, rv = torch.zeros(3, device=device), torch.ones(3, device=device)
    with pytest.raises(ValueError, match=r"batch_norm eps must be non-negative, but got -1.0"):
        F.batch_norm(x, rm, rv, training=False, eps=-1.0)
    assert F.batch_norm(x, rm, rv, training=False, eps=0.0).cpu().tolist() == [[1.0] * 3] * 2
    assert torch.batch_norm(x, None, None, None, None, True, 0.1, 0.0, False).shape == (2, 3)


def test_in_place_activation_node_names(device):
    """PyTorch names the nodes of the in-place forms ``LeakyReluBackward1``, ``ThresholdBackward1`` and
    ``RreluWithNoiseBackward1``, of silu_/mish_ ``SiluBackward0``/``MishBackward0`` and of ``torch.rrelu``
    ``RreluWithNoiseBackward0``; coretorch gave the out-of-place names (rrelu_: ``CopyBackwards``, silu_: the
    composite's ``MulBackward0``)."""
    x = _x(device, 5).requires_grad_()
    assert type(F.leaky_relu(x * 1, inplace=True).grad_fn).__name__ == "LeakyReluBackward1"
    assert type(F.threshold(x * 1, 0.1, 2.0, inplace=True).grad_fn).__name__ == "ThresholdBackward1"
    y = x * 1
    assert F.rrelu(y, inplace=True) is y and type(y.grad_fn).__name__ == "RreluWithNoiseBackward1"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.where(x.detach().cpu().numpy() > 0, 1.0, (1 / 8 + 1 / 3) / 2))
    assert type(F.leaky_relu(x).grad_fn).__name__ == "LeakyReluBackward0"
    assert type(torch.rrelu(x).grad_fn).__name__ == "RreluWithNoiseBackward0"  # (coretorch: LeakyReluBackward0)
    assert type(F.silu(x * 1, inplace=True).grad_fn).__name__ == "SiluBackward0"  # (coretorch: MulBackward0)
    assert type(F.mish(x * 1, inplace=True).grad_fn).__name__ == "MishBackward0"


@pytest.mark.parametrize("name", ["elu", "selu", "celu"])
def test_elu_family_gradients_far_left_and_second_derivative_at_zero(device, name):
    """PyTorch's elu_backward is ``g * alpha * scale * input_scale * exp(x * input_scale)`` for x <= 0, exact far
    to the left; coretorch differentiated ``alpha * expm1(x)`` through expm1's backward (``expm1(x) + 1``): at
    x = -30 the float64 gradient was off by 1.7e-4 relative (and at -20 by 2e-8). PyTorch's elu_double_backward
    masks ``x < 0``: the second derivative at x = +-0 is 0 (coretorch: alpha * scale * input_scale**2)."""
    fn, c, s = {"elu": (lambda t: F.elu(t, 0.7), 0.7, 1.0),
                "selu": (F.selu, 1.6732632423543772848170429916717 * 1.0507009873554804934193349852946, 1.0),
                "celu": (lambda t: F.celu(t, 2.0), 1.0, 0.5)}[name]
    x = torch.tensor([-30.0, -20.0, -0.0, 0.0, -1.0], dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    xs = np.array([-30.0, -20.0, -0.0, 0.0, -1.0])
    np.testing.assert_allclose(g.detach().cpu().numpy(), c * np.exp(xs * s), rtol=1e-14)
    np.testing.assert_allclose(gg.cpu().numpy(), np.where(xs < 0, c * s * np.exp(xs * s), 0.0), rtol=1e-14)
    assert torch.autograd.gradgradcheck(fn, (_x(device, 6).requires_grad_(),))


def test_celu_of_alpha_zero_raises_pytorchs_error(device):
    """PyTorch's celu with alpha=0 raises RuntimeError('ZeroDivisionError: alpha cannot be 0 for CELU'); coretorch
    raised Python's ZeroDivisionError('float division by zero')."""
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(_x(device, 3), 0.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        torch.nn.CELU(0.0)(_x(device, 3))


def _layouts(device):
    x4 = _x(device, 2, 3, 4, 5)
    return {"channels_last": (x4.contiguous(memory_format=torch.channels_last), "cl"),
            "permuted": (x4.permute(0, 1, 3, 2), "row"), "sliced": (_x(device, 2, 3, 4, 10)[..., ::2], "row"),
            "transposed_3d": (_x(device, 2, 5, 3).transpose(1, 2), "row"),
            "channels_last_3d": (_x(device, 2, 3, 2, 2, 2).contiguous(memory_format=torch.channels_last_3d), "cl")}


@pytest.mark.parametrize("layout", ["channels_last", "permuted", "sliced", "transposed_3d", "channels_last_3d"])
def test_normalisation_results_are_laid_out_as_pytorchs(device, layout):
    """PyTorch's batch, group and RMS norm write their result in ``input.suggest_memory_format()`` (channels-last
    for a channels-last input, row-major otherwise) and instance norm always row-major. coretorch's batch and instance
    norm kept a permuted input's layout (``y.view(n, -1)`` raised where PyTorch's works) and its group and RMS norm
    gave a channels-last input a row-major result."""
    x, want = _layouts(device)[layout]
    c = x.shape[1]
    fmt = torch.channels_last if x.ndim == 4 else torch.channels_last_3d
    rm, rv = torch.zeros(c, dtype=torch.float64, device=device), torch.ones(c, dtype=torch.float64, device=device)
    outs = {"batch_norm": F.batch_norm(x, None, None, training=True), "batch_norm_eval": F.batch_norm(x, rm, rv),
            "group_norm": F.group_norm(x, 1), "rms_norm": F.rms_norm(x, (x.shape[-1],))}
    for name, y in outs.items():
        assert y.is_contiguous(memory_format=fmt) if want == "cl" else y.is_contiguous(), name
        np.testing.assert_allclose(y.detach().cpu().numpy(), {
            "batch_norm": lambda: F.batch_norm(x.contiguous(), None, None, training=True),
            "batch_norm_eval": lambda: F.batch_norm(x.contiguous(), rm, rv),
            "group_norm": lambda: F.group_norm(x.contiguous(), 1),
            "rms_norm": lambda: F.rms_norm(x.contiguous(), (x.shape[-1],))}[name]().cpu().numpy(), rtol=1e-12)
    y = F.instance_norm(x)
    assert y.is_contiguous()
    assert y.view(x.shape[0], -1).shape == (x.shape[0], x[0].numel())


@pytest.mark.parametrize("layout", ["channels_last", "permuted"])
def test_logsigmoid_and_rrelu_results_are_row_major(device, layout):
    """PyTorch's log_sigmoid_forward and rrelu_with_noise write a row-major result whatever the input's layout;
    coretorch's followed a channels-last or permuted input (``y.view(-1)`` raised where PyTorch's works)."""
    x = _layouts(device)[layout][0].requires_grad_()
    for y in (F.logsigmoid(x), F.rrelu(x), F.rrelu(x, training=True)):
        assert y.is_contiguous() and y.view(-1).shape == (x.numel(),)
    np.testing.assert_allclose(F.logsigmoid(x).detach().cpu().numpy(),
                               -np.logaddexp(0, -x.detach().cpu().numpy()), rtol=1e-12)


def test_softplus_second_derivative_at_the_threshold_is_zero(device):
    """PyTorch's softplus_backward is sigmoid(beta * x) up to ``beta * x == threshold`` and its double backward masks
    ``beta * x < threshold``: at the threshold the gradient is sigmoid's and its derivative 0. coretorch
    differentiated log1p(exp(z)) twice: sigmoid' at the threshold (2.06e-9 for the default threshold 20 at x = 20;
    0.0066 for beta=2, threshold=5 at x = 2.5)."""
    for beta, thr, xv in ((1.0, 20.0, 20.0), (2.0, 5.0, 2.5)):
        x = torch.tensor([xv, xv - 1.0], dtype=torch.float64, device=device, requires_grad=True)
        (g,) = torch.autograd.grad(F.softplus(x, beta, thr).sum(), x, create_graph=True)
        (gg,) = torch.autograd.grad(g.sum(), x)
        sig = 1 / (1 + np.exp(-beta * np.array([xv, xv - 1.0])))
        np.testing.assert_allclose(g.detach().cpu().numpy(), sig, rtol=1e-14)
        assert float(gg[0]) == 0.0
        np.testing.assert_allclose(float(gg[1]), beta * sig[1] * (1 - sig[1]), rtol=1e-9)
    assert torch.autograd.gradgradcheck(lambda t: F.softplus(t, 2.0, 3.0), (_x(device, 8).requires_grad_(),))
