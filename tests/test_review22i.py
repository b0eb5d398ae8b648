"""Review 22i (eager): higher-order autograd — gradients taken with create_graph through every op family, and
torch.autograd.functional, compared with PyTorch 2.13's behaviour."""
import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F

_T = torch.tensor


def _i(v, device):
    return _T(v, device=device)


# op(x) for x of the shape given; each is one of PyTorch's ops whose backward op takes the forward's input
_LINKED = {
    "max_pool1d": ((2, 3, 8), lambda x: F.max_pool1d(x, 3, 2)),
    "max_pool2d": ((2, 3, 6, 6), lambda x: F.max_pool2d(x, 3, 2, 1)),
    "max_pool3d": ((1, 2, 4, 4, 4), lambda x: F.max_pool3d(x, 2)),
    "adaptive_max_pool1d": ((2, 3, 7), lambda x: F.adaptive_max_pool1d(x, 3)),
    "adaptive_max_pool2d": ((2, 3, 7, 7), lambda x: F.adaptive_max_pool2d(x, 3)),
    "fractional_max_pool2d": ((1, 2, 5, 5), lambda x: F.fractional_max_pool2d(
        x, 2, output_size=3, _random_samples=torch.full((1, 2, 2), 0.5, dtype=x.dtype, device=x.device))),
    "fractional_max_pool3d": ((1, 2, 5, 5, 5), lambda x: F.fractional_max_pool3d(
        x, 2, output_size=3, _random_samples=torch.full((1, 2, 3), 0.5, dtype=x.dtype, device=x.device))),
    "avg_pool1d": ((2, 3, 8), lambda x: F.avg_pool1d(x, 3)),
    "avg_pool2d": ((2, 3, 6, 6), lambda x: F.avg_pool2d(x, 3, 2, 1)),
    "avg_pool3d": ((1, 2, 4, 4, 4), lambda x: F.avg_pool3d(x, 2)),
    "adaptive_avg_pool1d": ((2, 3, 7), lambda x: F.adaptive_avg_pool1d(x, 3)),
    "adaptive_avg_pool2d": ((2, 3, 7, 7), lambda x: F.adaptive_avg_pool2d(x, 3)),
    "adaptive_avg_pool3d": ((1, 2, 5, 5, 5), lambda x: F.adaptive_avg_pool3d(x, 2)),
    "interpolate_area": ((2, 3, 6, 6), lambda x: F.interpolate(x, size=(3, 2), mode="area")),
    "pad_reflect": ((2, 3, 6), lambda x: F.pad(x, (2, 1), mode="reflect")),
    "pad_replicate": ((2, 3, 6, 5), lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate")),
    "rrelu_training": ((3, 4), lambda x: F.rrelu(x, training=True)),
    "nll_loss": ((4, 5), lambda x: F.nll_loss(x, _i([1, 0, 4, 2], x.device))),
    "nll_loss_weighted": ((4, 5), lambda x: F.nll_loss(x, _i([1, 0, 4, 2], x.device),
                                                       weight=torch.linspace(0.5, 1.5, 5, dtype=x.dtype,
                                                                             device=x.device))),
    "nll_loss2d": ((2, 3, 2, 2), lambda x: F.nll_loss(x, _i([[[0, 2], [1, 1]], [[2, 0], [0, 1]]], x.device))),
}


@pytest.mark.parametrize("name", sorted(_LINKED))
def test_gradient_through_pooling_padding_and_nll_depends_on_the_input(device, name):
    """PyTorch's max_pool2d_with_indices_backward, avg_pool2d_backward, adaptive_avg_pool2d_backward,
    reflection_pad1d_backward, nll_loss_backward, ... take the forward's input, so a gradient taken with
    create_graph requires grad (``AvgPool2DBackwardBackward0``, ...) and a second gradient reaches the input and
    every parameter before the op with zeros: a bias before a pooling gets ``.grad`` zeros (an optimizer steps it:
    Adam's moments decay, weight decay applies — StyleGAN2's lazy R1 step).  coretorch's gradient was built from the
    saved indices alone: it did not require grad (a second ``autograd.grad`` raised) and the bias's ``.grad`` stayed
    None."""
    shape, op = _LINKED[name]
    gen = np.random.default_rng(3)
    x = _T(gen.standard_normal(shape), dtype=torch.float64, device=device, requires_grad=True)
    b = _T(0.25, dtype=torch.float64, device=device, requires_grad=True)
    torch.manual_seed(0)  # (rrelu's slopes: the same in both calls)
    y = op(x + b)
    gy = _T(gen.standard_normal(tuple(y.shape)), dtype=torch.float64, device=device)
    (g,) = torch.autograd.grad(y, x, gy, create_graph=True)
    assert g.requires_grad
    v = _T(gen.standard_normal(shape), dtype=torch.float64, device=device)
    gx, gb = torch.autograd.grad((g * v).sum(), (x, b), retain_graph=True)
    np.testing.assert_array_equal(gx.cpu().numpy(), np.zeros(shape))
    assert gb.item() == 0.0
    (g * v).sum().backward()
    assert b.grad is not None and b.grad.item() == 0.0
    # the first-order gradient is unchanged, and a plain backward records nothing
    torch.manual_seed(0)
    (g0,) = torch.autograd.grad(op(x + b), x, gy)
    np.testing.assert_array_equal(g0.cpu().numpy(), g.detach().cpu().numpy())
    assert not g0.requires_grad


def test_second_gradient_through_a_pooling_node_is_named_as_pytorchs(device):
    """PyTorch: ``grad(max_pool2d(x, 2).sum(), x, create_graph=True)`` has grad_fn
    MaxPool2DWithIndicesBackwardBackward0 (coretorch: none)."""
    x = torch.randn(1, 1, 4, 4, dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(F.max_pool2d(x, 2).sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == "MaxPool2DWithIndicesBackwardBackward0"


def test_mean_like_pools_stay_unlinked(device):
    """PyTorch runs an adaptive average pool to size 1 as a mean (MeanBackward1), whose backward does not take the
    input: the create_graph gradient does not require grad."""
    x = torch.randn(2, 3, 4, 4, dtype=torch.float64, device=device, requires_grad=True)
    for y in (F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool1d(x[0], 1)):
        (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        assert not g.requires_grad


def test_r1_penalty_of_a_cnn_with_pooling_steps_every_parameter(device):
    """A discriminator conv -> max_pool -> linear with an R1 penalty (the squared input gradient, taken with
    create_graph): PyTorch gives the first conv's bias a zero gradient (it reaches the penalty only through the
    pooling's backward op), so Adam steps it; coretorch left it None and Adam skipped it."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(2, 3, 3, padding=1).double().to(device)
    lin = torch.nn.Linear(3 * 2 * 2, 1).double().to(device)
    x = torch.randn(2, 2, 4, 4, dtype=torch.float64, device=device, requires_grad=True)
    out = lin(F.max_pool2d(conv(x), 2).flatten(1))
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    g.pow(2).sum().backward()
    assert conv.bias.grad is not None
    np.testing.assert_array_equal(conv.bias.grad.cpu().numpy(), np.zeros(3))
    assert conv.weight.grad is not None and lin.weight.grad is not None
    assert lin.bias.grad is None  # (the input gradient never depends on it, in PyTorch too)


# ---- torch.autograd.functional ------------------------------------------------------------------------
AF = torch.autograd.functional


def _vec(device, *shape):
    return torch.linspace(-1.0, 1.5, int(np.prod(shape)), dtype=torch.float64, device=device).reshape(shape)


@pytest.mark.parametrize("call, message", [
    # a linear function: its Jacobian does not depend on the input
    (lambda a, c: AF.hessian(lambda x: (x * 2).sum(), a, strict=True),
     "While computing the hessian, found that the jacobian of the user-provided function with respect to input 0 "
     "is independent of the input"),
    (lambda a, c: AF.vhp(lambda x: (x * 2).sum(), a, c, strict=True), "While computing the hessian, found that"),
    (lambda a, c: AF.hvp(lambda x: (x * 2).sum(), a, c, strict=True), "While computing the hessian, found that"),
    # an input the output does not depend on
    (lambda a, c: AF.vjp(lambda x, y: x * 2, (a, c), c, strict=True),
     "The output of the user-provided function is independent of input 1. This is not allowed in strict mode."),
    (lambda a, c: AF.hvp(lambda x, y: (x ** 3).sum(), (a, c), (c, a), strict=True),
     "The output of the user-provided function is independent of input 1."),
    (lambda a, c: AF.hessian(lambda x, y: (x ** 3).sum(), (a, c), strict=True),
     "the jacobian of the user-provided function with respect to input 1 is independent of the input"),
    # strict with create_graph: a result that does not require grad
    (lambda a, c: AF.vjp(lambda x: x * 3.0, a, c, create_graph=True, strict=True),
     "The jacobian of the user-provided function is independent of input 0. This is not allowed in strict mode when "
     "create_graph=True."),
    (lambda a, c: AF.jacobian(lambda x: x * 3.0, a, create_graph=True, strict=True),
     "The jacobian of the user-provided function is independent of input 0. This is not allowed in strict mode when "
     "create_graph=True."),
    (lambda a, c: AF.hvp(lambda x: (x * x).sum(), a, c, create_graph=True, strict=True),
     "The hessian of the user-provided function is independent of input 0. This is not allowed in strict mode when "
     "create_graph=True."),
    # hvp's own name in its messages; v's checks
    (lambda a, c: AF.hvp(lambda x: x.sin(), a, c), "The Tensor returned by the function given to hvp should contain "
                                                   "a single element"),
    (lambda a, c: AF.hvp(lambda x: (x.sin().sum(),), a, c), "The function given to hvp should return a single Tensor"),
    (lambda a, c: AF.vhp(lambda x: x.sin(), a, c), "The Tensor returned by the function given to vhp should contain "
                                                   "a single element"),
    (lambda a, c: AF.vjp(lambda x: x.sin(), a, c.reshape(1, 3)), r"^v has invalid size: should be .*Size\(\[3\]\) "
                                                                 r"but got .*Size\(\[1, 3\]\)\.$"),
    (lambda a, c: AF.vjp(lambda x, y: (x, y), (a, c), (c,)), "v is a tuple of invalid length: should be 2 but got 1."),
    (lambda a, c: AF.jvp(lambda x: x, a, (c, c)), "The given v should contain a single Tensor."),
])
def test_functional_strict_and_argument_errors_are_pytorchs(device, call, message):
    """PyTorch's autograd.functional raises these RuntimeErrors (its _check_requires_grad, _fill_in_zeros and
    _validate_v).  coretorch's strict checks differed ("The vhp for input 0 is independent of the input in strict
    mode", or the inner jacobian's "Output 0 ... is independent of input 1" inside hessian), hvp's messages named
    vhp, v's size errors always said "Entry 0 in", and strict with create_graph did not check that the results
    require grad (it returned a constant where PyTorch raises)."""
    a, c = _vec(device, 3), _vec(device, 3) * 0.5
    with pytest.raises(RuntimeError, match=message):
        call(a, c)


def test_functional_strict_passes_where_pytorch_does(device):
    """A cubic function with create_graph and strict: every Jacobian/Hessian depends on the input, no error; values
    as numpy gives them."""
    a, c = _vec(device, 3), _vec(device, 3) * 0.5
    f = lambda x: (x ** 3).sum()  # noqa: E731
    an, cn = a.cpu().numpy(), c.cpu().numpy()
    _, hv = AF.hvp(f, a, c, create_graph=True, strict=True)
    np.testing.assert_allclose(hv.detach().cpu().numpy(), 6 * an * cn, rtol=1e-12)
    h = AF.hessian(f, a, create_graph=True, strict=True)
    np.testing.assert_allclose(h.detach().cpu().numpy(), np.diag(6 * an), rtol=1e-12)
    _, jv = AF.jvp(lambda x: x ** 2, a, c, create_graph=True, strict=True)
    np.testing.assert_allclose(jv.detach().cpu().numpy(), 2 * an * cn, rtol=1e-12)


# ---- prod ----------------------------------------------------------------------------------------------
def _prod_hessian(a: np.ndarray) -> np.ndarray:
    n = a.size
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod(np.delete(a, [i, j]))
    return h


@pytest.mark.parametrize("values", [[1.5, 0.0, -2.0, 0.7], [0.0, 0.0, 2.0, -1.25], [0.0, 1.5, 2.0, 0.0]])
def test_second_derivative_of_a_product_with_zeros(device, values):
    """d2/dxi dxj prod(x) is the product of the elements other than xi and xj: with a zero in x PyTorch's create_graph
    gradient is built from differentiable exclusive cumprods (prod_safe_zeros_backward), so the Hessian is right.
    coretorch computed the product of the others at kernel level: the gradient did not require grad (a Hessian of
    x.prod() was zeros, silently; ``hvp`` too), and on a device the division branch made it NaN."""
    a = np.array(values)
    x = _T(a, dtype=torch.float64, device=device, requires_grad=True)
    whole = _prod_hessian(a)
    rows = np.zeros((4, 4))
    rows[:2, :2], rows[2:, 2:] = _prod_hessian(a[:2]), _prod_hessian(a[2:])
    for f, want in ((lambda t: t.prod(), whole), (lambda t: t.prod(0), whole),
                    (lambda t: t.reshape(2, 2).prod(1).sum(), rows),
                    (lambda t: t.reshape(2, 2).prod(0, keepdim=True).prod(), whole)):
        (g,) = torch.autograd.grad(f(x), x, create_graph=True)
        assert g.requires_grad
        np.testing.assert_allclose(AF.hessian(f, x).cpu().numpy(), want, rtol=1e-12, atol=1e-12)
        v = np.array([0.5, -1.0, 2.0, 0.25])
        _, hv = AF.hvp(f, x, _T(v, dtype=torch.float64, device=device))
        np.testing.assert_allclose(hv.cpu().numpy(), want @ v, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradgradcheck(lambda t: t.reshape(2, 2).prod(1), (x,))


# ---- gradcheck / gradgradcheck -------------------------------------------------------------------------
def test_gradgradcheck_skips_outputs_that_need_no_gradient(device):
    """PyTorch's gradgradcheck differentiates the outputs that require grad only (``_differentiable_outputs``):
    slogdet's sign, svd(compute_uv=False)'s zero U and V, an empty split part.  coretorch's raised "element 0 of
    tensors does not require grad" or "Jacobian shape mismatch"; a gradcheck of a function returning no tensor
    (a vjp that is None everywhere, as norm(p=0)'s) passes in PyTorch and failed in coretorch."""
    gen = np.random.default_rng(0)
    x = _T(gen.standard_normal((3, 3)), dtype=torch.float64, device=device, requires_grad=True)
    z = _T([1.5, 0.0, -2.0, 0.7], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradgradcheck(torch.linalg.slogdet, (x,))
    assert torch.autograd.gradgradcheck(lambda a: torch.svd(a, compute_uv=False), (x,))
    assert torch.autograd.gradgradcheck(lambda a: a.split([0, 4]), (z,))
    assert torch.autograd.gradgradcheck(lambda a: a[2:2] * 2, (z,))
    assert torch.autograd.gradgradcheck(lambda a: a.norm(p=0), (z,))
    assert torch.autograd.gradcheck(lambda a: (), (z,))


def test_second_derivative_of_cumprod_past_a_second_zero(device):
    """The gradient of cumprod at x_k is sum_{i >= k} g_i prod_{j <= i, j != k} x_j: at a slice's second zero it is 0
    in value but depends on the first zero (d/dx1 of the gradient at x3 of sum(w * cumprod(x)) for x = [1.5, 0, -2,
    0, 0.7] is w3 x0 x2 + w4 x0 x2 x4 = -3.81; PyTorch's Hessian has it, and is symmetric).  coretorch's create_graph
    gradient there was the constant 0: its Hessian had 0 at [3, 1] and -3.81 at [1, 3]."""
    x = _T([1.5, 0.0, -2.0, 0.0, 0.7], dtype=torch.float64, device=device, requires_grad=True)
    w = _T([0.3, -1.0, 2.0, 0.5, 1.1], dtype=torch.float64, device=device)
    h = AF.hessian(lambda a: (a.cumprod(0) * w).sum(), x).cpu().numpy()
    a, wn = x.detach().cpu().numpy(), w.cpu().numpy()
    want = np.zeros((5, 5))
    for p in range(5):
        for q in range(5):
            if p != q:
                want[p, q] = sum(wn[i] * np.prod([a[j] for j in range(i + 1) if j not in (p, q)])
                                 for i in range(max(p, q), 5))
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-12)
    z = _T([[1.5, 0.0, -2.0], [0.0, 0.0, 0.7]], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: t.cumprod(-1), (z,))
    assert torch.autograd.gradgradcheck(lambda t: t.cumprod(0), (z,))


def test_functional_forward_mode_strategy_checks_in_pytorchs_order(device):
    """PyTorch's jacobian with strategy="forward-mode" raises NotImplementedError for create_graph=True (then
    RuntimeError for strict=True, naming the strategy), before its vectorize check; hessian's own strategy check has
    the short message.  coretorch returned a result for create_graph=True and named `vectorized=True` for strict."""
    a = _vec(device, 3)
    with pytest.raises(NotImplementedError, match='`create_graph=True` and `strategy="forward-mode"` are not '
                                                  'supported together'):
        AF.jacobian(torch.sin, a, create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match='`create_graph=True` and `strategy="forward-mode"`'):
        AF.hessian(lambda x: x.sin().sum(), a, create_graph=True, vectorize=True,
                   outer_jacobian_strategy="forward-mode")
    with pytest.raises(RuntimeError, match='`strict=True` and `strategy="forward-mode"` are not supported together'):
        AF.jacobian(torch.sin, a, strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(AssertionError, match='^Expected strategy to be either "forward-mode" or "reverse-mode".$'):
        AF.hessian(lambda x: x.sin().sum(), a, outer_jacobian_strategy="foo")
    j = AF.jacobian(torch.sin, a, vectorize=True, strategy="forward-mode")
    np.testing.assert_allclose(j.cpu().numpy(), np.diag(np.cos(a.cpu().numpy())), rtol=1e-14)
