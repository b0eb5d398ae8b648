"""The hot paths taken for speed give the same results as the general ones they bypass.

Each fast path (kernel-level plain backward, the host-decided nll_loss, transposed short-axis reductions,
axpy_ updates, the foreach optimizer step, loss.backward() straight to the engine) is checked against the
general path or numpy on the same data, including the inputs that must *not* take it.
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import _backend
from coretorch.device import device as Device

cpu = _backend.get_table(Device("cpu"))


@pytest.mark.parametrize("shape,axis", [((128, 10), 1), ((600, 3), 1), ((8, 70, 5), 2), ((64, 16), 1),
                                        ((64, 33), 1), ((10, 4), 1), ((100, 8), 0)])
@pytest.mark.parametrize("name,ref", [("sum", np.sum), ("amax", np.max), ("amin", np.min), ("prod", np.prod)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_short_last_axis_reductions_match_numpy(shape, axis, name, ref, keepdim):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = getattr(cpu, name)(x, (axis,), keepdim)
    want = ref(x, axis=axis, keepdims=keepdim)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # a non-contiguous input takes numpy's own path
    xt = np.ascontiguousarray(np.swapaxes(x, 0, -1)).swapaxes(0, -1)
    np.testing.assert_allclose(getattr(cpu, name)(xt, (axis,), keepdim), want, rtol=1e-5, atol=1e-6)


def test_short_axis_any_all_and_integer_sums():
    rng = np.random.default_rng(1)
    b = rng.random((300, 4)) > 0.7
    assert np.array_equal(cpu.any(b, (1,), False), b.any(1)) and np.array_equal(cpu.all(b, (1,), True),
                                                                               b.all(1, keepdims=True))
    i = rng.integers(-5, 5, (300, 7))
    assert np.array_equal(torch.from_numpy(i).sum(1).numpy(), i.sum(1))


@pytest.mark.parametrize("fn,ref", [(F.log_softmax, lambda z: z - np.log(np.exp(z).sum(1, keepdims=True))),
                                    (F.softmax, lambda z: np.exp(z) / np.exp(z).sum(1, keepdims=True))])
def test_softmax_kernels_with_non_finite_rows_raise_no_warnings(fn, ref):
    x = np.random.default_rng(2).standard_normal((128, 10)).astype(np.float32)
    x[3] = -np.inf
    x[5, 2] = np.inf
    x[6, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fn(torch.from_numpy(x), 1).numpy()
    ok = [i for i in range(128) if i not in (3, 5, 6)]
    z = x[ok].astype(np.float64)
    np.testing.assert_allclose(got[ok], ref(z - z.max(1, keepdims=True)), rtol=1e-5, atol=1e-6)
    # PyTorch 2.13: nan rows for all -inf, for nan and for +inf (inf - inf is the shifted maximum)
    assert np.isnan(got[3]).all() and np.isnan(got[6]).all() and np.isnan(got[5]).all()


def _nll_general(x, t, **kw):
    """nll_loss through the general (masked) path: an ignore_index inside [0, C) disables the fast path,
    and no target equals it."""
    return F.nll_loss(x, t, ignore_index=x.shape[1] - 1, **kw)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_fast_path_equals_general_path_forward_and_backward(reduction):
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((32, 6))
    t = torch.from_numpy(rng.integers(0, 5, 32))  # class 5 never appears
    a = torch.tensor(xs, requires_grad=True)
    b = torch.tensor(xs, requires_grad=True)
    la, lb = F.nll_loss(a, t, reduction=reduction), _nll_general(b, t, reduction=reduction)
    assert la.grad_fn.name() == lb.grad_fn.name() == "NllLossBackward0"
    np.testing.assert_allclose(la.item(), lb.item(), rtol=1e-15)
    la.backward()
    lb.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-15)
    # double backward through the fast path's node (create_graph builds the graph-recording formula)
    c = torch.tensor(xs, requires_grad=True)
    (g,) = torch.autograd.grad(F.nll_loss(c, t, reduction=reduction) * 3.0, c, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * a.grad.numpy(), rtol=1e-15)
    assert torch.autograd.gradcheck(lambda z: F.nll_loss(z, t, reduction=reduction), (c,))


def test_nll_targets_that_leave_the_fast_path():
    x = torch.randn(4, 3, requires_grad=True)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        F.nll_loss(x, torch.tensor([0, 1, 3, 2]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.nll_loss(x, torch.tensor([0, -1, 1, 2]))
    # ignored targets (the default -100) are left out of the mean, on the general path
    t = torch.tensor([0, -100, 1, 2])
    xs = x.detach().numpy()
    want = -(xs[0, 0] + xs[2, 1] + xs[3, 2]) / 3
    np.testing.assert_allclose(F.nll_loss(x, t).item(), want, rtol=1e-6)
    assert F.cross_entropy(x, torch.tensor([-100] * 4)).isnan().item()  # PyTorch: 0/0


def test_loss_backward_fast_entry_matches_autograd_backward():
    w = torch.tensor([0.5, -1.25, 2.0, 3.0, -0.75], requires_grad=True)  # exact in float32: sums are exact
    (w * w).sum().backward()
    g1 = w.grad.clone()
    w.grad = None
    torch.autograd.backward((w * w).sum())
    assert np.array_equal(g1.numpy(), w.grad.numpy())
    y = (w * 2).sum()
    y.backward(retain_graph=True)
    y.backward()  # retain_graph kept the buffers for the second call
    np.testing.assert_allclose(w.grad.numpy(), g1.numpy() + 4)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y2 = (w * w).sum()
        y2.backward()
        y2.backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.ones(1).backward()
    z = w.sum().reshape(1)  # shape (1,): still an implicit gradient of 1
    w.grad = None
    z.backward()
    assert w.grad.tolist() == [1.0] * 5


@pytest.mark.parametrize("alpha", [1, -0.25, 3])
def test_axpy_add_and_sub_with_alpha(alpha):
    rng = np.random.default_rng(4)
    p0, g0 = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    p, g = torch.from_numpy(p0.copy()), torch.from_numpy(g0)
    v = p._version
    p.add_(g, alpha=alpha)
    np.testing.assert_allclose(p.numpy(), p0 + np.float32(alpha) * g0, rtol=1e-6)
    p.sub_(g, alpha=alpha)
    np.testing.assert_allclose(p.numpy(), p0, rtol=1e-5, atol=1e-6)
    assert p._version == v + 2
    # a non-contiguous target and a broadcast operand take their own paths with the same result
    q = torch.from_numpy(p0.T.copy()).t()
    q.add_(g, alpha=alpha)
    np.testing.assert_allclose(q.numpy(), p0 + np.float32(alpha) * g0, rtol=1e-6)
    r = torch.from_numpy(p0.copy())
    r.add_(torch.from_numpy(g0[0]), alpha=alpha)
    np.testing.assert_allclose(r.numpy(), p0 + np.float32(alpha) * g0[0], rtol=1e-6)


def test_foreach_ops_match_per_tensor_ops():
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(s) for s in [(3,), (2, 2), ()]]
    ys = [rng.standard_normal(s) for s in [(3,), (2, 2), ()]]
    a = [torch.tensor(v) for v in xs]
    torch._foreach_add_(a, [torch.tensor(v) for v in ys], alpha=0.5)
    for t, v, w in zip(a, xs, ys):
        np.testing.assert_allclose(t.numpy(), v + 0.5 * w)
    torch._foreach_mul_(a, 2.0)
    torch._foreach_add_(a, 1.0)
    for t, v, w in zip(a, xs, ys):
        np.testing.assert_allclose(t.numpy(), 2 * (v + 0.5 * w) + 1)
    with pytest.raises(RuntimeError, match="same number of tensors"):
        torch._foreach_add_(a, a[:2])
    # a pair that cannot take the kernel path still gets the ordinary add_ (promotion, broadcasting, errors)
    b = [torch.zeros(2, 3)]
    torch._foreach_add_(b, [torch.ones(3, dtype=torch.float64)], alpha=2)
    assert b[0].dtype is torch.float32 and b[0].tolist() == [[2.0] * 3] * 2
    leaf = torch.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch._foreach_add_([leaf], [torch.ones(2)])


def test_erf_in_torch_namespace_and_as_method():
    import math
    x = torch.tensor([-2.0, -0.5, 0.0, 0.3, 3.0], dtype=torch.float64, requires_grad=True)
    assert inspect.unwrap(torch.erf) is inspect.unwrap(F.erf)  # (torch.erf is wrapped for out=)
    np.testing.assert_allclose(x.erf().detach().numpy(), [math.erf(v) for v in x.tolist()], rtol=1e-14)
    assert torch.autograd.gradcheck(torch.erf, (x,))


def _prod_grad_ref(a, axis):
    """d prod / d a_i = product of the other elements of a_i's slice (numpy, by deleting the element)."""
    g = np.empty_like(a)
    for idx in np.ndindex(a.shape):
        if axis is None:
            g[idx] = np.prod(np.delete(a.ravel(), np.ravel_multi_index(idx, a.shape)))
        else:
            sl = list(idx)
            sl[axis] = slice(None)
            g[idx] = np.prod(np.delete(a[tuple(sl)], idx[axis]))
    return g


@pytest.mark.parametrize("device", ["cpu", "opencl"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_backward_with_zeros_on_every_device(device, axis):
    from coretorch.testing import available_devices
    if device not in available_devices():
        pytest.skip(f"device {device} is not available here")
    a = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 3.0, 0.0, 0.5], [2.0, -2.0, 0.25, 4.0]])
    dt = torch.float64 if device == "cpu" or torch._backend.get_table(torch.device(device)).backend.device(0).fp64 \
        else torch.float32
    x = torch.tensor(a, dtype=dt, device=device, requires_grad=True)
    (x.prod() if axis is None else x.prod(axis)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), _prod_grad_ref(a, axis), rtol=1e-6)
    if device != "cpu":  # the zero-safe backward runs on the device: no read back
        from coretorch_opencl import STATS
        y = torch.tensor(a, dtype=dt, device=device, requires_grad=True)
        loss = y.prod(1).sum()
        reads = STATS["to_host"]
        loss.backward()
        assert STATS["to_host"] == reads


def test_index_add_checks_shapes_before_any_kernel():
    x = torch.zeros(3, 2)
    out = torch.index_add(x, 0, torch.tensor([0, 2]), torch.ones(2, 2))
    assert out.tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    with pytest.raises(RuntimeError, match=r"Number of indices \(2\) should be equal to source.size\(dim\) \(3\)"):
        torch.index_add(x, 0, torch.tensor([0, 1]), torch.ones(3, 2))
    with pytest.raises(RuntimeError, match="should match self"):
        torch.index_add(x, 0, torch.tensor([0, 1]), torch.ones(2, 5))
    with pytest.raises(RuntimeError, match="same scalar type"):
        torch.index_add(x, 0, torch.tensor([0, 1]), torch.ones(2, 2, dtype=torch.float64))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        torch.index_add(x, 0, torch.tensor([[0, 1]]), torch.ones(2, 2))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum"])
def test_same_shape_binary_fast_path_records_like_the_general_path(op):
    # two float tensors of one shape take the fast path; a broadcast operand takes the general one: same values,
    # same node type, same gradients (the fast path is the one the per-op overhead benchmark measures)
    rng = np.random.default_rng(1)
    a_np, b_np = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)) + 3.0
    fn = getattr(torch, op)
    a, b = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np, requires_grad=True)
    a2, b2 = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np[None], requires_grad=True)  # (1, 3, 4)
    fast, general = fn(a, b), fn(a2, b2)[0]
    assert type(fast.grad_fn) is type(fn(a2, b2).grad_fn)
    assert [f is not None for f, _ in fast.grad_fn.next_functions] == [True, True]
    np.testing.assert_allclose(fast.detach().numpy(), general.detach().numpy())
    fast.sum().backward()
    general.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), a2.grad.numpy())
    np.testing.assert_allclose(b.grad.numpy(), b2.grad.numpy()[0])


def test_same_shape_fast_path_saves_inputs_with_versions():
    a, b = torch.ones(3, requires_grad=True), torch.full((3,), 2.0, requires_grad=True)
    y = a * b                # both require grad: mul saves both inputs, with their versions
    with torch.no_grad():
        b.mul_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    c = a.detach()
    y = (c + 0) * b          # only b requires grad: its gradient reads c + 0, so b itself is not saved (PyTorch)
    with torch.no_grad():
        b.mul_(3)
    y.sum().backward()
    assert b.grad.tolist() == [1.0, 1.0, 1.0]
    z = torch.ones(2, dtype=torch.int64) + torch.ones(2, dtype=torch.int64)  # integers: the general path
    assert z.dtype is torch.int64 and z.tolist() == [2, 2]


@pytest.mark.parametrize("bias", ["none", "full", "broadcast"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_fused_linear_kernels_match_the_composite_path(bias, layout):
    """F.linear on cpu takes the backend's fused linear/linear_backward kernels (a (out,) bias or none); a bias
    that broadcasts, like (1,), takes the matmul + add composite.  Both agree with numpy, forward and backward,
    and with float64 gradcheck."""
    rng = np.random.default_rng(5)
    xv = rng.standard_normal((6, 4)) if layout == "contiguous" else rng.standard_normal((4, 6)).T
    wv = rng.standard_normal((3, 4))
    bv = {"none": None, "full": rng.standard_normal(3), "broadcast": rng.standard_normal(1)}[bias]
    gv = rng.standard_normal((6, 3))
    leaf = torch.tensor(xv if layout == "contiguous" else xv.T, requires_grad=True)
    x = leaf if layout == "contiguous" else leaf.t()  # the transposed layout: a non-contiguous view
    w = torch.tensor(wv, requires_grad=True)
    b = None if bv is None else torch.tensor(bv, requires_grad=True)
    out = F.linear(x, w, b)
    np.testing.assert_allclose(out.detach().numpy(), xv @ wv.T + (0 if bv is None else bv), rtol=1e-12)
    out.backward(torch.tensor(gv))
    np.testing.assert_allclose(leaf.grad.numpy(), gv @ wv if layout == "contiguous" else (gv @ wv).T, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), gv.T @ xv, rtol=1e-12)
    if bv is not None:
        np.testing.assert_allclose(b.grad.numpy(), gv.sum(0).reshape(bv.shape) if bias == "full" else [gv.sum()],
                                   rtol=1e-12)
    args = (torch.tensor(xv, requires_grad=True), torch.tensor(wv, requires_grad=True)) + \
        (() if bv is None else (torch.tensor(bv, requires_grad=True),))
    assert torch.autograd.gradcheck(lambda *a: F.linear(*a), args)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_fused_log_softmax_backward_matches_the_formula(dim):
    """The cpu backend's log_softmax_backward kernel is g - exp(y) * g.sum(dim): contiguous, transposed and
    broadcast (zero-stride) incoming gradients alike, and the plain backward that uses it agrees with gradcheck."""
    rng = np.random.default_rng(6)
    y = np.log(rng.dirichlet(np.ones(5), size=40)).astype(np.float32)
    for g in (rng.standard_normal((40, 5)).astype(np.float32),
              np.asfortranarray(rng.standard_normal((40, 5)).astype(np.float32)),
              np.broadcast_to(np.float32(0.5), (40, 5))):
        want = g - np.exp(y) * g.sum(dim, keepdims=True)
        np.testing.assert_allclose(cpu.log_softmax_backward(g, y, dim % 2), want, rtol=1e-5, atol=1e-6)
    x = torch.tensor(rng.standard_normal((6, 4)), requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: F.log_softmax(t, dim), (x,))


@pytest.mark.parametrize("write", [lambda x: x.add_(1), lambda x: x.add_(torch.ones(2, 3)), lambda x: x.mul_(2),
                                   lambda x: x.sub_(torch.ones(2, 3), alpha=0.5),
                                   lambda x: torch._foreach_add_([x], [torch.ones(2, 3)], alpha=2)])
def test_in_place_write_into_an_expanded_view_raises_pytorchs_error(write):
    """The cpu in-place kernels and axpy_ try the write first; on a read-only broadcast view the failure becomes
    PyTorch's overlap error, and the data is left as it was."""
    base = torch.ones(3)
    x = base.expand(2, 3)
    with torch.no_grad(), pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers "
                                                            "to a single memory location"):
        write(x)
    assert base.tolist() == [1.0, 1.0, 1.0]
