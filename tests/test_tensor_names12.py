"""Tensor methods, nn.functional and nn names PyTorch programs use (coretorch/_tensor_names12.py, coretorch/storage.py,
nn.grad, nn.attention, DataParallel, AdaptiveLogSoftmaxWithLoss, ...): behaviour pinned from PyTorch 2.13 by hand,
values against numpy or closed forms, on every device.  The computing ops are in the op table
(coretorch/testing_ops/names12.py)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.nn.attention import SDPBackend, sdpa_kernel


def arr(t):
    return t.detach().cpu().numpy()


# ---- conjugate transposes, dim_order, is_set_to, output_nr, new_empty_strided --------------------------------
def test_conjugate_transposes_are_views(device):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    for y in (x.H, x.mH, x.adjoint()):
        assert y.shape == (3, 2) and y.stride() == (1, 3)
        np.testing.assert_array_equal(arr(y), arr(x).T)
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        torch.ones(3, device=device).mH
    with pytest.warns(UserWarning, match="deprecated on 0-D"):
        assert torch.tensor(2.0, device=device).H.item() == 2.0


@pytest.mark.parametrize("shape, perm, order", [
    ((2, 3, 4), None, (0, 1, 2)), ((2, 3, 4), (2, 0, 1), (1, 2, 0)), ((2, 3, 5, 7), (0, 2, 1, 3), (0, 2, 1, 3)),
    ((3, 4), (1, 0), (1, 0)), ((2, 1, 3), (1, 0, 2), (0, 1, 2)),  # PyTorch's values (ties keep their order)
])
def test_dim_order(device, shape, perm, order):
    x = torch.empty(shape, device=device)
    assert (x if perm is None else x.permute(perm)).dim_order() == order


def test_dim_order_ambiguity_and_expanded(device):
    assert torch.empty(2, 3, device=device).expand(4, 2, 3).dim_order() == (0, 1, 2)  # stride 0: ambiguous
    x = torch.empty(1, 2, 3, 4, device=device)
    assert x.dim_order() == (0, 1, 2, 3)
    with pytest.raises(RuntimeError, match="unique dim order"):
        x.dim_order(ambiguity_check=True)
    assert x.dim_order(ambiguity_check=[torch.contiguous_format]) == (0, 1, 2, 3)
    with pytest.raises(TypeError, match="bool or a list of memory formats"):
        x.dim_order(ambiguity_check="ILLEGAL")


def test_is_set_to_output_nr_const_data_ptr(device):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    assert x.is_set_to(x) and x.is_set_to(x[:]) and not x.is_set_to(x.view(6)) and not x.is_set_to(x.clone())
    assert not x.is_set_to(x.t())
    assert x.const_data_ptr() == x.data_ptr()
    assert x.output_nr == 0
    parts = torch.ones(3, device=device, requires_grad=True).unbind()
    assert [p.output_nr for p in parts] == [0, 1, 2]


def test_new_empty_strided(device):
    x = torch.ones(2, dtype=torch.float64, device=device)
    y = x.new_empty_strided((2, 3), (1, 2))
    assert y.shape == (2, 3) and y.stride() == (1, 2) and y.dtype == torch.float64 and y.device == x.device
    assert y._base is None and not y.requires_grad
    z = x.new_empty_strided((2, 2), (2, 1), dtype=torch.int32, requires_grad=False)
    assert z.dtype == torch.int32 and z.is_contiguous()
    assert x.new_empty_strided((3,), (1,), requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="mismatch in length"):
        x.new_empty_strided((2, 3), (1,))


# ---- storages ----------------------------------------------------------------------------------------------
def test_untyped_storage_shared_by_views(device):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    views = (x, x[1:], x.t(), x.view(6)[2:], x.detach(), x[1:].detach())
    ptrs = {v.untyped_storage().data_ptr() for v in views}
    assert ptrs == {x.data_ptr()}
    assert x.clone().untyped_storage().data_ptr() != x.data_ptr()
    s = x[1:].untyped_storage()
    assert s.nbytes() == s.size() == len(s) == 24 and s.element_size() == 1 and s.device == x.device
    assert torch.is_storage(s) and not torch.is_storage(x)
    assert s == x.untyped_storage() and isinstance(s, torch.UntypedStorage)
    assert s.tolist() == list(np.arange(6, dtype=np.float32).view(np.uint8))


def test_typed_storage(device):
    x = torch.arange(6, dtype=torch.int64, device=device)[2:4]
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = x.storage()
    assert isinstance(s, torch.TypedStorage) and s.dtype == torch.int64 and s.element_size() == 8
    assert s.size() == len(s) == 6 and s.nbytes() == 48 and s.tolist() == [0, 1, 2, 3, 4, 5] and s[3] == 3
    assert s.data_ptr() == x.untyped_storage().data_ptr() and s.untyped().nbytes() == 48


# ---- resize / removed methods / triangular_solve -------------------------------------------------------------
def test_resize_deprecated_out_of_place(device):
    a = torch.arange(6.0, device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        r = a.resize(2, 3)
    assert r.shape == (2, 3) and a.shape == (6,) and type(r.grad_fn).__name__ == "ResizeBackward"
    (r * torch.arange(6.0, device=device).reshape(2, 3)).sum().backward()
    np.testing.assert_array_equal(arr(a.grad), np.arange(6.0))
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert a.resize_as(torch.ones(3, 2)).shape == (3, 2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="requested resize to 2x4"):
        a.resize(2, 4)


@pytest.mark.parametrize("name, args", [("solve", (1,)), ("symeig", ()), ("eig", ()), ("lstsq", (1,))])
def test_removed_linalg_methods_raise(name, args):
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        getattr(torch.eye(2), name)(*args)


def test_triangular_solve(device):
    A = torch.tensor([[2.0, 1.0], [0.0, 3.0]], dtype=torch.float64, device=device)
    B = torch.tensor([[1.0], [2.0]], dtype=torch.float64, device=device)
    from coretorch import _warn_once  # PyTorch warns once a process (TORCH_WARN_ONCE): see it again here
    _warn_once.GIVEN.discard("triangular_solve")
    with pytest.warns(UserWarning, match="deprecated in favor of torch.linalg.solve_triangular"):
        sol, coef = B.triangular_solve(A)
        solt = B.triangular_solve(A, transpose=True).solution
        sol_l = B.triangular_solve(A.t(), upper=False).solution
    np.testing.assert_allclose(arr(sol), np.linalg.solve(arr(A), arr(B)))
    np.testing.assert_allclose(arr(solt), np.linalg.solve(arr(A).T, arr(B)))
    np.testing.assert_allclose(arr(sol_l), np.linalg.solve(arr(A).T, arr(B)))
    np.testing.assert_array_equal(arr(coef), arr(A))
    assert coef.data_ptr() != A.data_ptr()


def test_geqrf_compact_qr(device):
    g = torch.Generator().manual_seed(0)
    A = torch.randn(2, 5, 3, dtype=torch.float64, generator=g).to(device)
    a, tau = torch.geqrf(A)
    assert a.shape == (2, 5, 3) and tau.shape == (2, 3) and type(A.geqrf()) is torch.return_types.geqrf
    Q = torch.linalg.householder_product(a, tau)
    R = arr(a)[..., :3, :] * np.triu(np.ones((3, 3)))
    np.testing.assert_allclose(arr(Q) @ R, arr(A), atol=1e-12)  # A = Q R with orthonormal Q
    np.testing.assert_allclose(np.swapaxes(arr(Q), -1, -2) @ arr(Q), np.broadcast_to(np.eye(3), (2, 3, 3)),
                               atol=1e-12)
    x = A.detach().requires_grad_(True)
    with pytest.raises(NotImplementedError, match="derivative for 'geqrf' is not implemented"):
        torch.geqrf(x).a.sum().backward()
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.geqrf(torch.ones(3, device=device))


# ---- register_post_accumulate_grad_hook ----------------------------------------------------------------------
def test_post_accumulate_grad_hook_sgd_in_backward(device):
    v = torch.zeros(3, device=device, requires_grad=True)
    seen = []
    def hook(p):  # (returns None: PyTorch raises for a post-accumulate hook that returns something)
        seen.append(arr(p.grad))
        p.data.add_(p.grad, alpha=-0.1)
    h = v.register_post_accumulate_grad_hook(hook)
    (v * torch.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    np.testing.assert_allclose(arr(v), [-0.1, -0.2, -0.3], rtol=1e-6)
    assert len(seen) == 1 and seen[0].tolist() == [1.0, 2.0, 3.0]
    # two edges into the leaf: the hook runs once, after both gradients were accumulated
    w = torch.ones(2, device=device, requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(lambda p: calls.append(arr(p.grad).tolist()))
    (w * 2 + w * 3).sum().backward()
    assert calls == [[5.0, 5.0]]
    h.remove()
    v.grad = None
    v.sum().backward()
    assert len(seen) == 1  # removed
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.ones(2).register_post_accumulate_grad_hook(lambda p: None)


def test_post_accumulate_grad_hook_not_run_by_autograd_grad():
    w = torch.ones(2, requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(lambda p: calls.append(1))
    torch.autograd.grad((w * 2).sum(), w)
    assert calls == [] and w.grad is None


# ---- nn.functional: deprecated upsampling aliases, in-place activations keep autograd --------------------------
def test_upsample_deprecated_aliases(device):
    x = torch.arange(4.0, device=device).reshape(1, 1, 2, 2)
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        y = F.upsample_bilinear(x, scale_factor=2)
    np.testing.assert_allclose(arr(y), arr(F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)))
    np.testing.assert_allclose(arr(y)[0, 0, 0], [0.0, 1 / 3, 2 / 3, 1.0], rtol=1e-6)
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        z = F.upsample_nearest(x, size=3)
    np.testing.assert_array_equal(arr(z)[0, 0], [[0, 0, 1], [0, 0, 1], [2, 2, 3]])


def test_inplace_activation_on_nonleaf_backward(device):
    a = torch.tensor([-1.0, 2.0], device=device, requires_grad=True)
    y = a * 1.0
    assert F.leaky_relu_(y, 0.5) is y
    y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [0.5, 1.0])


def test_pdist_zero_distance_gradient_is_zero(device):
    x = torch.ones(2, 3, dtype=torch.float64, device=device, requires_grad=True)
    y = F.pdist(x)
    assert type(y.grad_fn).__name__ == "PdistBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), np.zeros((2, 3)))


# ---- nn.grad: the adjoints of the convolutions -----------------------------------------------------------------
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_nn_grad_conv_adjoint_identity(device, nd):
    g = torch.Generator().manual_seed(nd)
    conv = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    x = torch.randn(2, 4, *(5,) * nd, dtype=torch.float64, generator=g).to(device)
    w = torch.randn(6, 2, *(3,) * nd, dtype=torch.float64, generator=g).to(device)
    kw = dict(stride=2, padding=1, dilation=1, groups=2)
    out = conv(x, w, None, **kw)
    go = torch.randn(out.shape, dtype=torch.float64, generator=g).to(device)
    gi = getattr(nn.grad, f"conv{nd}d_input")(x.shape, w, go, **kw)
    gw = getattr(nn.grad, f"conv{nd}d_weight")(x, w.shape, go, **kw)
    assert gi.shape == x.shape and gw.shape == w.shape
    # <conv(x, w), go> is linear in x and in w: its gradients are the adjoints applied to go
    inner = float((out * go).sum())
    assert np.isclose(float((x * gi).sum()), inner) and np.isclose(float((w * gw).sum()), inner)


# ---- nn.attention ---------------------------------------------------------------------------------------------
def test_sdpa_kernel_context_manager_and_decorator():
    cuda = torch.backends.cuda
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with sdpa_kernel(SDPBackend.MATH) as ctx:
        assert ctx == {} and cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled()
        q = torch.randn(1, 2, 3, 4)
        assert F.scaled_dot_product_attention(q, q, q).shape == (1, 2, 3, 4)
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()

    @sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION], set_priority=True)
    def inside():
        return cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled(), cuda.math_sdp_enabled()
    assert inside() == (True, True, False) and cuda.math_sdp_enabled()
    assert str(SDPBackend.MATH) == "SDPBackend.MATH" and int(SDPBackend.CUDNN_ATTENTION) == 3
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass


# ---- nn: DataParallel, deprecated names, AdaptiveLogSoftmaxWithLoss ---------------------------------------------
def test_data_parallel_forwards_and_prefixes_state_dict(device):
    lin = nn.Linear(2, 3).to(device)
    dp = nn.DataParallel(lin)
    assert dp.module is lin and dp.device_ids == [] and nn.parallel.DataParallel is nn.DataParallel
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    x = torch.randn(4, 2).to(device)
    np.testing.assert_array_equal(arr(dp(x)), arr(lin(x)))
    assert len(list(dp.parameters())) == 2


def test_deprecated_module_names():
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d(reduction="sum")
    assert isinstance(loss, nn.NLLLoss)
    x = torch.log_softmax(torch.randn(2, 3, 2, 2), 1)
    t = torch.tensor([[[0, 1], [2, 0]], [[1, 1], [0, 2]]])
    assert float(loss(x, t)) == float(F.nll_loss(x, t, reduction="sum"))
    with pytest.warns(FutureWarning, match="nn.Container` is deprecated"):
        c = nn.Container(a=nn.Linear(1, 1))
    assert list(dict(c.named_children())) == ["a"]
    assert isinstance(nn.UninitializedParameter(), nn.Parameter)
    assert nn.common_types._size_2_t is not None


def _asm_reference(m, x: np.ndarray, t: np.ndarray):
    """Each target's log-probability from the module's weights, by the adaptive softmax's definition."""
    def log_softmax(z):
        z = z - z.max(1, keepdims=True)
        return z - np.log(np.exp(z).sum(1, keepdims=True))
    head = log_softmax(x @ arr(m.head.weight).T + arr(m.head.bias))
    full = [head[:, :m.shortlist_size]]
    for i, (i2h, h2o) in enumerate(m.tail):
        full.append(log_softmax(x @ arr(i2h.weight).T @ arr(h2o.weight).T) + head[:, m.shortlist_size + i, None])
    full = np.concatenate(full, 1)
    return full[np.arange(len(t)), t], full


def test_adaptive_log_softmax_with_loss(device):
    torch.manual_seed(0)
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True).to(device)
    assert [tuple(p.shape) for p in m.parameters()] == [(5, 8), (5,), (4, 8), (3, 4), (2, 8), (4, 2)]
    x = torch.randn(6, 8).to(device)
    t = torch.tensor([0, 4, 9, 2, 7, 5]).to(device)
    out, loss = m(x, t)
    want, full = _asm_reference(m, arr(x), arr(t))
    np.testing.assert_allclose(arr(out), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.item(), -want.mean(), rtol=1e-5)
    np.testing.assert_allclose(arr(m.log_prob(x)), full, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(arr(m.predict(x)), full.argmax(1))
    loss.backward()
    assert all(p.grad is not None for p in m.parameters())
    single = m(x[1], t[1])  # unbatched
    assert single.output.shape == () and np.isclose(single.output.item(), want[1], rtol=1e-5)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        m(x[:2], torch.tensor([1, 10]).to(device))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])


def test_hardshrink_prelu_methods_match_functional():
    x = torch.linspace(-2, 2, 9)
    np.testing.assert_array_equal(arr(x.hardshrink()), arr(F.hardshrink(x)))
    w = torch.tensor([0.25])
    np.testing.assert_array_equal(arr(x.prelu(w)), arr(F.prelu(x, w)))


def test_no_warning_from_plain_names():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = torch.ones(2, 3)
        x.H, x.mH, x.adjoint(), x.dim_order(), x.untyped_storage(), x.sum_to_size(1, 3)


# ---- autograd.functional (closed forms) -------------------------------------------------------------------------
def test_autograd_functional_closed_forms(device):
    from coretorch.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp
    c = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, device=device)
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, device=device)
    np.testing.assert_allclose(arr(jacobian(lambda x: x ** 2 * c, x)), np.diag(2 * arr(c) * arr(x)))
    np.testing.assert_allclose(arr(hessian(lambda x: (x ** 3).sum(), x)), np.diag(6 * arr(x)))
    v = torch.tensor([1.0, 0.5, -1.0], dtype=torch.float64, device=device)
    out, g = vjp(lambda x: x ** 2 * c, x, v)
    np.testing.assert_allclose(arr(out), arr(x) ** 2 * arr(c))
    np.testing.assert_allclose(arr(g), 2 * arr(c) * arr(x) * arr(v))
    np.testing.assert_allclose(arr(jvp(lambda x: x.sin(), x, v)[1]), np.cos(arr(x)) * arr(v))
    for f in (hvp, vhp):
        val, hv = f(lambda x: (x ** 3).sum(), x, v)
        assert np.isclose(val.item(), (arr(x) ** 3).sum()) and not hv.requires_grad
        np.testing.assert_allclose(arr(hv), 6 * arr(x) * arr(v))
    # tuples of inputs and outputs: a tuple (per output) of tuples (per input)
    (ja, jb), (sa, sb) = jacobian(lambda a, b: (a * b, a.sum()), (x, c))
    np.testing.assert_allclose(arr(ja), np.diag(arr(c)))
    np.testing.assert_allclose(arr(jb), np.diag(arr(x)))
    np.testing.assert_allclose(arr(sa), np.ones(3))
    np.testing.assert_array_equal(arr(sb), np.zeros(3))  # independent of b: zeros
    assert jacobian(lambda m: m.reshape(4), torch.ones(2, 2, device=device)).shape == (4, 2, 2)
    with pytest.raises(RuntimeError, match="v can only be None"):
        vjp(lambda x: x * 2, x)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        jacobian(lambda a, b: a * 2, (x, c), strict=True)


# ---- optim.swa_utils and nn.init's deprecated names ---------------------------------------------------------------
def test_swa_utils_averages_and_schedule():
    from coretorch.optim import swa_utils
    lin = nn.Linear(2, 1)
    swa = swa_utils.AveragedModel(lin)
    ema = swa_utils.AveragedModel(lin, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))
    seen = []
    for k in range(3):
        with torch.no_grad():
            lin.weight.fill_(float(k + 1))
        seen.append(float(k + 1))
        swa.update_parameters(lin)
        ema.update_parameters(lin)
    np.testing.assert_allclose(arr(swa.module.weight), np.full((1, 2), np.mean(seen)), rtol=1e-6)
    np.testing.assert_allclose(arr(ema.module.weight), np.full((1, 2), (1 * 0.9 + 2 * 0.1) * 0.9 + 3 * 0.1),
                               rtol=1e-6)
    assert int(swa.n_averaged) == 3 and list(swa.state_dict())[0] == "n_averaged"
    opt = torch.optim.SGD(lin.parameters(), lr=0.5)
    sched = swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3)
    lrs = []
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    alpha = [(1 - np.cos(np.pi * min(1, k / 3))) / 2 for k in range(1, 6)]
    np.testing.assert_allclose(lrs, [0.05 + 0.45 * (1 - a) for a in alpha])
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(opt, 0.1, anneal_strategy="step")


def test_update_bn_cumulative_average():
    from coretorch.optim import swa_utils
    model = nn.Sequential(nn.BatchNorm1d(2))
    batches = [torch.tensor([[1.0, 2.0], [3.0, 6.0]]), (torch.tensor([[5.0, 0.0], [7.0, 4.0]]),)]
    model.eval()
    swa_utils.update_bn(batches, model)
    np.testing.assert_allclose(arr(model[0].running_mean), [(2 + 6) / 2, (4 + 2) / 2])
    assert not model.training and model[0].momentum == 0.1


def test_init_deprecated_eye_dirac():
    w = torch.empty(3, 3)
    with pytest.warns(FutureWarning, match="nn.init.eye` is now deprecated"):
        nn.init.eye(w)
    np.testing.assert_array_equal(arr(w), np.eye(3))
    k = torch.empty(2, 2, 3)
    with pytest.warns(FutureWarning, match="nn.init.dirac` is now deprecated"):
        nn.init.dirac(k)
    assert float(k.sum()) == 2.0 and float(k[0, 0, 1]) == 1.0


# ---- nn.utils: spectral_norm (hook form), stateless.functional_call, skip_init ---------------------------------
def test_spectral_norm_hook_form(device):
    torch.manual_seed(0)
    lin = nn.utils.spectral_norm(nn.Linear(4, 3).to(device))
    assert list(lin.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight_orig"]
    x = torch.randn(2, 4).to(device)
    for _ in range(40):  # power iteration converges to the top singular vectors
        lin(x)
    s = np.linalg.svd(arr(lin.weight_orig), compute_uv=False)
    np.testing.assert_allclose(arr(lin.weight), arr(lin.weight_orig) / s[0], rtol=1e-4)
    np.testing.assert_allclose(np.linalg.svd(arr(lin.weight), compute_uv=False)[0], 1.0, rtol=1e-4)
    lin(x).sum().backward()
    assert lin.weight_orig.grad is not None
    lin.eval()
    u = arr(lin.weight_u).copy()
    lin(x)
    np.testing.assert_array_equal(arr(lin.weight_u), u)  # no power iteration in eval mode
    nn.utils.remove_spectral_norm(lin)
    assert list(lin.state_dict()) == ["bias", "weight"] and isinstance(lin.weight, nn.Parameter)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(lin)
    conv_t = nn.utils.spectral_norm(nn.ConvTranspose2d(2, 5, 3))
    assert conv_t.weight_u.shape == (5,)  # dim 1 for transposed convolutions


def test_stateless_functional_call(device):
    lin = nn.Linear(2, 1).to(device)
    w = torch.ones(1, 2, device=device, requires_grad=True)
    b = torch.zeros(1, device=device)
    x = torch.tensor([[1.0, 2.0]], device=device)
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        y = nn.utils.stateless.functional_call(lin, {"weight": w, "bias": b}, (x,))
    assert y.item() == 3.0 and isinstance(lin.weight, nn.Parameter) and lin.weight is not w
    y.backward()
    np.testing.assert_array_equal(arr(w.grad), [[1.0, 2.0]])
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="Missing key"):
        nn.utils.stateless.functional_call(lin, {"weight": w}, x, strict=True)


def test_skip_init_and_memory_format_conversions():
    lin = nn.utils.skip_init(nn.Linear, 3, 2)
    assert isinstance(lin, nn.Linear) and lin.weight.shape == (2, 3)
    conv = nn.Conv2d(1, 1, 1)
    assert nn.utils.convert_conv2d_weight_memory_format(conv, torch.channels_last) is conv


# ---- distributions: PyTorch's per-law module paths, OneHotCategoricalStraightThrough -------------------------
def test_distribution_module_paths_and_straight_through(device):
    from coretorch.distributions.normal import Normal
    from coretorch.distributions.one_hot_categorical import OneHotCategoricalStraightThrough
    from coretorch.distributions.relaxed_categorical import RelaxedOneHotCategorical
    assert Normal is torch.distributions.Normal
    assert RelaxedOneHotCategorical is torch.distributions.RelaxedOneHotCategorical
    assert torch.distributions.beta.Beta is torch.distributions.Beta
    p = torch.tensor([0.2, 0.3, 0.5], device=device, requires_grad=True)
    d = OneHotCategoricalStraightThrough(probs=p)
    s = d.rsample((4,))
    assert s.shape == (4, 3) and np.allclose(arr(s).sum(1), 1) and set(np.unique(arr(s))) <= {0.0, 1.0}
    (s * torch.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    c = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(arr(p.grad), 4 * (c - c @ np.array([0.2, 0.3, 0.5])), rtol=1e-5)


# ---- small Tensor-only methods ------------------------------------------------------------------------------
def test_small_tensor_methods(device):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    np.testing.assert_array_equal(arr(x[0].ger(x[1])), np.outer([0, 1, 2], [3, 4, 5]))
    for got, want in ((x.unsafe_chunk(2, 1), x.chunk(2, 1)), (x.unsafe_split(1), x.split(1)),
                      (x.unsafe_split_with_sizes([1, 2], 1), x.split([1, 2], 1))):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(arr(g), arr(w))
    assert not x.is_distributed() and not x.is_xla and not x.is_mtia and x.grad_dtype == torch.float32
    y = torch.zeros(2, 3, device=device)
    assert y.module_load(x) is not y and np.array_equal(arr(y), arr(x))
    z = torch.ones(1, device=device)
    assert z.module_load(x, assign=True).data_ptr() == x.data_ptr()
    with pytest.raises(RuntimeError, match=r"reinforce\(\) was removed"):
        x.reinforce(1.0)
    for name in ("xpu", "mtia", "ipu"):  # no such backend installed: the error names the installed ones
        with pytest.raises(RuntimeError, match="cpu"):
            getattr(x, name)()


def test_map2_cpu_only():
    x = torch.ones(2, 3)
    assert x.map2_(torch.tensor([1.0, 2.0, 3.0]), torch.full((2, 1), 5.0), lambda a, b, c: a + b * c) is x
    np.testing.assert_array_equal(arr(x), [[6, 11, 16], [6, 11, 16]])
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.ones(2, requires_grad=True).map2_(torch.ones(2), torch.ones(2), lambda a, b, c: a)


def test_autograd_profiler_record_function(tmp_path):
    import json

    from coretorch.autograd.profiler import profile, record_function

    @record_function("step")
    def step(x):
        return x * 2

    with record_function("outside"):  # no profile active: nothing recorded, no error
        pass
    with profile(record_shapes=True) as prof:
        with record_function("fwd"):
            step(torch.ones(2))
        step(torch.ones(2))
    avgs = {e.key: e for e in prof.key_averages()}
    assert set(avgs) == {"fwd", "step"} and avgs["step"].count == 2 and avgs["fwd"].count == 1
    assert avgs["fwd"].cpu_time_total >= 0 and "step" in prof.key_averages().table(sort_by="cpu_time_total")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    assert [e["name"] for e in json.loads(path.read_text())["traceEvents"]] == ["fwd", "step", "step"]
    with pytest.raises(RuntimeError, match="didn't finish"):
        profile().key_averages()


# ---- LU: linalg.lu_factor(_ex) / lu / lu_solve, lu_unpack, the deprecated torch.lu / lu_solve ------------------
def test_lu_family(device):
    A = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]], dtype=torch.float64, device=device)
    LU, piv = torch.linalg.lu_factor(A)
    assert piv.dtype == torch.int32 and piv.tolist() == [3, 3, 3]  # LAPACK's 1-based row swaps (PyTorch's values)
    P, L, U = torch.linalg.lu(A)
    np.testing.assert_allclose(arr(P @ L @ U), arr(A), atol=1e-12)
    for got, want in zip(torch.lu_unpack(LU, piv), (P, L, U)):
        np.testing.assert_allclose(arr(got), arr(want), atol=1e-12)
    B = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64, device=device)
    np.testing.assert_allclose(arr(torch.linalg.lu_solve(LU, piv, B)), np.linalg.solve(arr(A), arr(B)))
    S = torch.tensor([[1.0, 2.0], [2.0, 4.0]], device=device)
    with pytest.raises(torch.linalg.LinAlgError, match=r"U\[2,2\] is zero"):
        torch.linalg.lu_factor(S)
    ex = torch.linalg.lu_factor_ex(S)
    assert ex.info.item() == 2 and ex.pivots.tolist() == [2, 2]
    assert torch.linalg.lu_factor_ex(torch.zeros(2, 2, device=device)).info.item() == 1
    from coretorch import _warn_once  # PyTorch warns once a process (TORCH_WARN_ONCE): see them again here
    _warn_once.GIVEN.difference_update({"lu", "lu_solve"})
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        lu2, piv2, info = A.lu(get_infos=True)
    assert info.item() == 0 and piv2.tolist() == [3, 3, 3]
    with pytest.warns(UserWarning, match="torch.lu_solve is deprecated"):
        x = B.lu_solve(LU, piv)
    np.testing.assert_allclose(arr(x), np.linalg.solve(arr(A), arr(B)))


# ---- NegativeBinomial, linear_cross_entropy -----------------------------------------------------------------
def test_negative_binomial(device):
    from math import lgamma, log

    from coretorch.distributions.negative_binomial import NegativeBinomial
    r = torch.tensor([3.0, 0.5, 0.0], dtype=torch.float64, device=device)
    p = torch.tensor([0.3, 0.6, 0.2], dtype=torch.float64, device=device)
    d = NegativeBinomial(r, probs=p)
    k = torch.tensor([2.0, 0.0, 0.0], dtype=torch.float64, device=device)
    want = [lgamma(kk + rr) - lgamma(rr) - lgamma(kk + 1) + rr * log(1 - pp) + kk * log(pp)
            for kk, rr, pp in ((2.0, 3.0, 0.3), (0.0, 0.5, 0.6))] + [0.0]  # 0 before 0 failures: probability 1
    np.testing.assert_allclose(arr(d.log_prob(k)), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(arr(d.mean), arr(r) * arr(p) / (1 - arr(p)))
    np.testing.assert_allclose(arr(d.variance), arr(r) * arr(p) / (1 - arr(p)) ** 2)
    assert torch.distributions.NegativeBinomial is NegativeBinomial and d.expand((2, 3)).batch_shape == (2, 3)
    torch.manual_seed(0)
    s = NegativeBinomial(torch.tensor(5.0, device=device), probs=torch.tensor(0.4, device=device)).sample((4000,))
    assert abs(float(s.mean()) - 5 * 0.4 / 0.6) < 0.15 and float((s - s.round()).abs().max()) == 0


def test_linear_cross_entropy(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, dtype=torch.float64, generator=g).to(device)
    w = torch.randn(5, 3, dtype=torch.float64, generator=g).to(device)
    b = torch.randn(5, dtype=torch.float64, generator=g).to(device)
    t = torch.tensor([0, 4, 2, -100], device=device)
    got = F.linear_cross_entropy(x, w, t, linear_bias=b, label_smoothing=0.1)
    want = F.cross_entropy(x @ w.t() + b, t, label_smoothing=0.1)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    w3 = torch.randn(5, 2, 3, dtype=torch.float64, generator=g).to(device)
    t3 = torch.tensor([[0, 1], [4, 4], [2, 3], [1, 0]], device=device)
    got3 = F.linear_cross_entropy(x, w3, t3, reduction="none")
    want3 = F.cross_entropy((x @ w3.reshape(10, 3).t()).reshape(4, 5, 2), t3, reduction="none")
    np.testing.assert_allclose(arr(got3), arr(want3), rtol=1e-12)
    m = nn.LinearCrossEntropyLoss(3, 5, bias=True, options=nn.LinearCrossEntropyOptions()).to(device)
    assert list(m.state_dict()) == ["linear.weight", "linear.bias"]
    np.testing.assert_allclose(m(x.float(), t).item(), F.cross_entropy(m.linear(x.float()), t).item(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="in_features"):
        F.linear_cross_entropy(x, w[:, :2], t)


def test_nn_factory_kwargs():
    assert nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": torch.float64}}) == {
        "device": "cpu", "dtype": torch.float64}
    assert nn.factory_kwargs(None) == {}
    with pytest.raises(TypeError, match="unexpected kwargs"):
        nn.factory_kwargs({"bias": True})
    with pytest.raises(TypeError, match="specified twice"):
        nn.factory_kwargs({"dtype": torch.float32, "factory_kwargs": {"dtype": torch.float64}})


def test_special_bessel_names(device):
    x = torch.tensor([0.0, 0.5, 2.0, -3.0], dtype=torch.float64, device=device)
    np.testing.assert_allclose(arr(torch.special.spherical_bessel_j0(x)), [1.0, *(np.sin(arr(x)[1:]) / arr(x)[1:])],
                               rtol=1e-12)
    np.testing.assert_array_equal(arr(torch.special.modified_bessel_i0(x)), arr(torch.special.i0(x)))
    np.testing.assert_array_equal(arr(torch.special.modified_bessel_i1(x)), arr(torch.special.i1(x)))
    assert torch.special.spherical_bessel_j0(torch.tensor([0, 1], device=device)).dtype == torch.float32


def test_set_shares_memory(device):
    y = torch.arange(6.0, device=device).reshape(2, 3)
    x = torch.zeros(3, device=device)
    assert x.set_(y) is x and x.shape == (2, 3) and x.data_ptr() == y.data_ptr() and x._version == 1
    q = torch.zeros(1, device=device).set_(y, 2, (2,), (3,))
    z = torch.zeros(2, device=device).set_(y.untyped_storage(), 1, (2, 2), (1, 2))
    y[0, 2] = 100.0
    np.testing.assert_array_equal(arr(q), [100.0, 5.0])
    np.testing.assert_array_equal(arr(z), [[1.0, 3.0], [100.0, 4.0]])
    np.testing.assert_array_equal(arr(x)[0], [0.0, 1.0, 100.0])
    assert torch.ones(3, device=device).set_().shape == (0,)
    with pytest.raises(RuntimeError, match="Could not set tensor of type float to a tensor of type long int"):
        torch.zeros(2, dtype=torch.int64, device=device).set_(y)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch.zeros(2, device=device, requires_grad=True).set_(y)


def test_continuous_bernoulli_density_and_moments(device):
    p = torch.tensor([0.1, 0.4999, 0.7], dtype=torch.float64, device=device)
    d = torch.distributions.ContinuousBernoulli(probs=p)
    xs = np.linspace(0.0, 1.0, 20001)
    dens = np.exp(arr(d.log_prob(torch.tensor(xs[:, None], dtype=torch.float64, device=device))))
    np.testing.assert_allclose(np.trapezoid(dens, xs, axis=0), 1.0, rtol=1e-6)  # a density on [0, 1]
    np.testing.assert_allclose(arr(d.mean), np.trapezoid(dens * xs[:, None], xs, axis=0), rtol=1e-6)
    mean2 = np.trapezoid(dens * xs[:, None] ** 2, xs, axis=0)
    np.testing.assert_allclose(arr(d.variance), mean2 - arr(d.mean) ** 2, rtol=1e-5)
    q = 0.1  # C(p) = 2 artanh(1 - 2p) / (1 - 2p)
    np.testing.assert_allclose(np.exp(arr(d._cont_bern_log_norm()))[0], 2 * np.arctanh(1 - 2 * q) / (1 - 2 * q))
    u = torch.tensor([0.25, 0.5, 0.9], dtype=torch.float64, device=device)
    np.testing.assert_allclose(arr(d.cdf(d.icdf(u))), arr(u), rtol=1e-9)
    logits = torch.zeros(3, device=device, requires_grad=True)
    torch.distributions.ContinuousBernoulli(logits=logits + torch.tensor([-2.0, 0.5, 3.0], device=device)) \
        .rsample((8,)).sum().backward()
    assert logits.grad is not None and bool(torch.isfinite(logits.grad).all())


def test_lowrank_multivariate_normal_matches_full_covariance(device):
    g = torch.Generator().manual_seed(0)
    loc = torch.randn(2, 4, dtype=torch.float64, generator=g).to(device)
    W = torch.randn(4, 2, dtype=torch.float64, generator=g).to(device)
    D = (torch.rand(4, dtype=torch.float64, generator=g) + 0.5).to(device)
    d = torch.distributions.LowRankMultivariateNormal(loc, W, D)
    cov = arr(W) @ arr(W).T + np.diag(arr(D))
    np.testing.assert_allclose(arr(d.covariance_matrix[0]), cov, rtol=1e-12)
    np.testing.assert_allclose(arr(d.precision_matrix[1]), np.linalg.inv(cov), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(arr(d.scale_tril[0]) @ arr(d.scale_tril[0]).T, cov, rtol=1e-10)
    x = torch.randn(3, 2, 4, dtype=torch.float64, generator=g).to(device)
    diff = arr(x) - arr(loc)
    want = -0.5 * (4 * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1]
                   + np.einsum("...i,ij,...j->...", diff, np.linalg.inv(cov), diff))
    np.testing.assert_allclose(arr(d.log_prob(x)), want, rtol=1e-10)
    np.testing.assert_allclose(arr(d.entropy()), 0.5 * (4 * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1]),
                               rtol=1e-12)
    Wg = W.detach().requires_grad_(True)
    torch.distributions.LowRankMultivariateNormal(loc, Wg, D).rsample((5,)).sum().backward()
    assert Wg.grad is not None and d.expand((3, 2)).batch_shape == (3, 2)
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices"):
        torch.distributions.LowRankMultivariateNormal(loc, W[:3], D)


# ---- nn.attention.flex_attention (reference path) ---------------------------------------------------------------
def test_flex_attention_score_and_mask_mods(device):
    from coretorch.nn.attention import flex_attention as fa
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 4, 3, 4, dtype=torch.float64, generator=g).to(device)
    k = torch.randn(1, 2, 5, 4, dtype=torch.float64, generator=g).to(device)
    v = torch.randn(1, 2, 5, 2, dtype=torch.float64, generator=g).to(device)

    def causal(b, h, qi, ki):
        return qi >= ki

    def bias(s, b, h, qi, ki):
        return s + (qi - ki) * 0.1 * (h + 1)
    bm = fa.create_block_mask(fa.and_masks(causal, fa.noop_mask), None, None, 3, 5)
    out, lse = fa.flex_attention(q, k, v, score_mod=bias, block_mask=bm, enable_gqa=True, return_lse=True)
    kk, vv = np.repeat(arr(k), 2, axis=1), np.repeat(arr(v), 2, axis=1)  # GQA: each kv head serves two q heads
    qi, ki, h = np.arange(3)[:, None], np.arange(5)[None, :], np.arange(4)[:, None, None]
    s = arr(q) @ np.swapaxes(kk, -1, -2) / 2.0 + (qi - ki) * 0.1 * (h + 1)
    s = np.where(qi >= ki, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    # (the bias is float32, as PyTorch's: an int64 index times a Python float)
    np.testing.assert_allclose(arr(out), (w / w.sum(-1, keepdims=True)) @ vv, rtol=1e-6)
    np.testing.assert_allclose(arr(lse), np.log(np.exp(s).sum(-1)), rtol=1e-6)
    np.testing.assert_array_equal(arr(fa.create_mask(fa.or_masks(causal, lambda b, h, qi, ki: ki == 4), 1, 1, 3, 5)),
                                  ((qi >= ki) | (ki == 4))[None, None])
    none = fa.create_block_mask(lambda b, h, qi, ki: ki > 9, 1, 4, 3, 5)  # every row masked: zeros, -inf
    o2, aux = fa.flex_attention(q, k, v, block_mask=none, enable_gqa=True, return_aux=fa.AuxRequest(lse=True))
    assert float(o2.abs().sum()) == 0 and bool((aux.lse == float("-inf")).all()) and aux.max_scores is None
    qg = q[:, :2].detach().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: fa.flex_attention(x, k, v, score_mod=bias, block_mask=bm), (qg,))
    with pytest.raises(ValueError, match="enable_gqa=True"):
        fa.flex_attention(q, k, v)


def test_matrix_and_stack_transforms():
    from coretorch.distributions import constraints, transform_to
    from coretorch.distributions import transforms as T
    x = torch.tensor([[0.5, 9.0], [-1.0, -0.3]], dtype=torch.float64)
    L = T.LowerCholeskyTransform()(x)
    np.testing.assert_allclose(arr(L), [[np.exp(0.5), 0.0], [-1.0, np.exp(-0.3)]])
    P = transform_to(constraints.positive_definite)(x)
    np.testing.assert_allclose(arr(P), arr(L) @ arr(L).T)
    np.testing.assert_allclose(arr(T.PositiveDefiniteTransform().inv(P)), [[0.5, 0.0], [-1.0, -0.3]], atol=1e-12)
    assert isinstance(transform_to(constraints.lower_cholesky), T.LowerCholeskyTransform)
    st = T.StackTransform([T.ExpTransform(), T.identity_transform], dim=1)
    y = torch.tensor([[0.0, 2.0], [1.0, -1.0]], dtype=torch.float64)
    np.testing.assert_allclose(arr(st(y)), [[1.0, 2.0], [np.e, -1.0]])
    np.testing.assert_allclose(arr(st.log_abs_det_jacobian(y, st(y))), [[0.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(arr(st.inv(st(y))), arr(y))
    c = T.CumulativeDistributionTransform(torch.distributions.Normal(0.0, 1.0))
    np.testing.assert_allclose(arr(c(torch.tensor([0.0]))), [0.5])
    np.testing.assert_allclose(arr(c.log_abs_det_jacobian(torch.tensor([0.0]), None)), [-0.5 * np.log(2 * np.pi)],
                               rtol=1e-6)


def test_fisher_snedecor_and_exponential_family():
    from math import lgamma, log, log1p

    from coretorch.distributions.exp_family import ExponentialFamily
    d = torch.distributions.FisherSnedecor(torch.tensor([3.0, 6.0], dtype=torch.float64),
                                           torch.tensor([5.0, 3.0], dtype=torch.float64))
    x = torch.tensor([0.5, 2.0], dtype=torch.float64)

    def ref(d1, d2, v):  # the F density
        a, b = d1 / 2, d2 / 2
        return lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(d1 / d2) + (a - 1) * log(v) - (a + b) * log1p(
            d1 / d2 * v)
    np.testing.assert_allclose(arr(d.log_prob(x)), [ref(3, 5, 0.5), ref(6, 3, 2.0)], rtol=1e-12)
    np.testing.assert_allclose(arr(d.mean)[0], 5 / 3)
    assert np.isnan(arr(d.variance)[1])  # df2 <= 4

    class Exp(ExponentialFamily):  # Exponential(rate) written as an exponential family
        arg_constraints: dict = {}

        def __init__(self, rate):
            self.rate = rate
            super().__init__(rate.shape, validate_args=False)

        @property
        def _natural_params(self):
            return (-self.rate,)

        def _log_normalizer(self, t):
            return -torch.log(-t)

        @property
        def _mean_carrier_measure(self):
            return 0

    rate = torch.tensor([0.5, 2.0], dtype=torch.float64)
    np.testing.assert_allclose(arr(Exp(rate).entropy()), 1 - np.log(arr(rate)), rtol=1e-12)


def test_von_mises(device):
    loc = torch.tensor([0.3, -1.0], dtype=torch.float64, device=device)
    k = torch.tensor([0.5, 4.0], dtype=torch.float64, device=device)
    d = torch.distributions.VonMises(loc, k)
    xs = np.linspace(-np.pi, np.pi, 20001)
    dens = np.exp(arr(d.log_prob(torch.tensor(xs[:, None], dtype=torch.float64, device=device))))
    np.testing.assert_allclose(np.trapezoid(dens, xs, axis=0), 1.0, rtol=1e-9)  # a density on the circle
    resultant = np.abs(np.trapezoid(dens * np.exp(1j * xs[:, None]), xs, axis=0))
    np.testing.assert_allclose(arr(d.variance), 1 - resultant, rtol=1e-8)  # circular variance
    torch.manual_seed(0)
    s = arr(torch.distributions.VonMises(torch.tensor(1.0, device=device), torch.tensor(2.0, device=device))
            .sample((4000,)))
    assert s.min() >= -np.pi and s.max() <= np.pi and abs(np.arctan2(np.sin(s).mean(), np.cos(s).mean()) - 1) < 0.1


def test_special_orthogonal_polynomials(device):
    import scipy.special as sp
    x = np.array([-0.9, -0.3, 0.0, 0.45, 1.0, 1.7])
    n = np.array([0, 1, 2, 3, 5, 8])
    refs = {"chebyshev_polynomial_t": sp.eval_chebyt, "chebyshev_polynomial_u": sp.eval_chebyu,
            "hermite_polynomial_h": sp.eval_hermite, "hermite_polynomial_he": sp.eval_hermitenorm,
            "laguerre_polynomial_l": sp.eval_laguerre, "legendre_polynomial_p": sp.eval_legendre,
            "shifted_chebyshev_polynomial_t": lambda k, v: sp.eval_chebyt(k, 2 * v - 1),
            # V_n and W_n: the third and fourth kinds, from U (V_n(x) = U_n(x) - U_{n-1}(x), W_n = U_n + U_{n-1})
            "chebyshev_polynomial_v": lambda k, v: sp.eval_chebyu(k, v) - sp.eval_chebyu(k - 1, v),
            "chebyshev_polynomial_w": lambda k, v: sp.eval_chebyu(k, v) + sp.eval_chebyu(k - 1, v)}
    xt = torch.tensor(x, dtype=torch.float64, device=device)
    for name, ref in refs.items():
        fn = getattr(torch.special, name)
        want = np.array([ref(k, v) if k > 0 or not name.endswith(("_v", "_w")) else 1.0 for k, v in zip(n, x)])
        np.testing.assert_allclose(arr(fn(xt, torch.tensor(n, device=device))), want, rtol=1e-10, atol=1e-12,
                                   err_msg=name)
        np.testing.assert_allclose(arr(fn(xt, 3)), ref(3, x), rtol=1e-10, atol=1e-12, err_msg=name)
    assert float(torch.special.legendre_polynomial_p(xt, -1).abs().sum()) == 0  # n < 0: 0
    assert torch.special.chebyshev_polynomial_t(torch.tensor([1, 2], device=device), 2).dtype == torch.float32


def test_autograd_engine_switches():
    ag = torch.autograd
    assert ag.is_multithreading_enabled() and not ag.is_view_replay_enabled()
    with ag.set_multithreading_enabled(False):
        assert not ag.is_multithreading_enabled()
    assert ag.is_multithreading_enabled()

    @ag.set_multithreading_enabled(False)
    def inner():
        return ag.is_multithreading_enabled()
    assert inner() is False and ag.is_multithreading_enabled()


def test_generalized_pareto(device):
    loc = torch.tensor([0.0, 1.0, -0.5], dtype=torch.float64, device=device)
    scale = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64, device=device)
    c = torch.tensor([0.0, 0.3, -0.4], dtype=torch.float64, device=device)
    d = torch.distributions.GeneralizedPareto(loc, scale, c)
    v = torch.tensor([0.5, 2.0, 0.1], dtype=torch.float64, device=device)
    z = (arr(v) - arr(loc)) / arr(scale)
    surv = np.where(arr(c) == 0, np.exp(-z), (1 + arr(c) * z) ** (-1 / np.where(arr(c) == 0, 1, arr(c))))
    np.testing.assert_allclose(arr(d.cdf(v)), 1 - surv, rtol=1e-12)
    dens = np.where(arr(c) == 0, np.exp(-z), (1 + arr(c) * z) ** (-1 / np.where(arr(c) == 0, 1, arr(c)) - 1))
    np.testing.assert_allclose(arr(d.log_prob(v)), np.log(dens / arr(scale)), rtol=1e-12)
    u = torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64, device=device)
    np.testing.assert_allclose(arr(d.cdf(d.icdf(u))), arr(u), rtol=1e-12)
    np.testing.assert_allclose(arr(d.support.upper_bound)[2], -0.5 + 0.5 / 0.4)
