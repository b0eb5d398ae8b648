"""The opencl kernels tuned for issue 14's GPT training step, against numpy/scipy in float64, at sizes that hit
every path (the vector body, the scalar tail, odd sizes, offsets into a buffer): vectorised GELU forward and
backward and row softmax / log_softmax (coretorch_opencl/vecmath.py), the row-loop strided elementwise kernel
("_4": attention's head split and merge), and the matmul paths of the attention products (batched, transposed and
strided views read in place)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

import coretorch
import coretorch.nn.functional as F

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _t(a, **kw):
    return coretorch.tensor(a, device="opencl", **kw)


@pytest.mark.parametrize("n", [1, 7, 8, 1001, 4099])
def test_gelu_forward_backward_vector_and_tail(n):
    rng = np.random.default_rng(n)
    base = (rng.standard_normal(n + 3) * 3).astype(np.float32)
    base[3:6][: max(0, min(3, n))] = np.array([0.0, -30.0, 1e-40], np.float32)[: max(0, min(3, n))]
    x = _t(base)[3:].detach().requires_grad_(True)     # an offset into its buffer: no aligned start
    g = (rng.standard_normal(n)).astype(np.float32)
    y = F.gelu(x)
    y.backward(_t(g))
    xd = base[3:].astype(np.float64)
    want = xd * ndtr(xd)
    dwant = g * (ndtr(xd) + xd * np.exp(-xd * xd / 2) / np.sqrt(2 * np.pi))
    np.testing.assert_allclose(y.detach().cpu().numpy(), want, rtol=2e-6, atol=1e-37)
    np.testing.assert_allclose(x.grad.cpu().numpy(), dwant, rtol=3e-6, atol=1e-7)


def test_gelu_nan_inf_and_float64_unchanged():
    x = _t(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0] * 3, np.float32))
    # as PyTorch (and the cpu backend): gelu(-inf) is nan (-inf * 0)
    np.testing.assert_array_equal(F.gelu(x).cpu().numpy(), np.array([np.nan, np.inf, np.nan, 0.0, 0.0] * 3, np.float32))
    if _BE.device(0).fp64:
        xd = np.linspace(-6, 6, 37)
        np.testing.assert_allclose(F.gelu(_t(xd)).cpu().numpy(), xd * ndtr(xd), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("shape", [(4, 3, 64), (37, 65), (5, 8), (2, 3, 13), (3, 255)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_vector_and_tail(shape, log):
    rng = np.random.default_rng(sum(shape))
    a = (rng.standard_normal(shape) * 4).astype(np.float32)
    rows = a.reshape(-1, shape[-1])
    rows[0, :] = -np.inf            # an all -inf row: NaN
    rows[1, shape[-1] - 1] = np.nan  # NaN in the scalar tail (or the last vector)
    if rows.shape[0] > 2:
        rows[2, 0] = np.inf
    ad = a.astype(np.float64)
    with np.errstate(all="ignore"):
        m = ad.max(-1, keepdims=True)
        e = np.exp(ad - m)
        want = ad - m - np.log(e.sum(-1, keepdims=True)) if log else e / e.sum(-1, keepdims=True)
    got = (F.log_softmax if log else F.softmax)(_t(a), dim=-1).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, equal_nan=True)


def test_softmax_other_dims_and_offsets_keep_their_paths():
    a = np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32)
    x = _t(a)
    for got, want in ((F.softmax(x, dim=0), np.exp(a) / np.exp(a).sum(0)),
                      (F.softmax(x[1:], dim=1), np.exp(a[1:]) / np.exp(a[1:]).sum(1, keepdims=True)),
                      (F.softmax(x.t(), dim=1), (np.exp(a) / np.exp(a).sum(0)).T)):
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("shape,perm", [((3, 4, 9, 16), (0, 2, 1, 3)), ((2, 5, 3, 11), (1, 0, 2, 3)),
                                        ((4, 6, 40), (1, 0, 2))])
def test_strided_row_kernel_copy_and_binary(shape, perm):
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    x, y = _t(a).permute(perm), _t(b).permute(perm)
    np.testing.assert_array_equal(x.contiguous().cpu().numpy(), a.transpose(perm))
    np.testing.assert_array_equal((x * y).cpu().numpy(), a.transpose(perm) * b.transpose(perm))
    out = _t(np.zeros(a.transpose(perm).shape, np.float32)).permute(np.argsort(perm).tolist())
    out.copy_(_t(b))    # a strided destination
    np.testing.assert_array_equal(out.permute(perm).contiguous().cpu().numpy().transpose(np.argsort(perm)), b)


def _mm_check(a, b, got, dt):
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(a.shape[-1]) * max(1.0, np.abs(want).max()))


def _dtypes():
    return [np.float32] + ([np.float64] if _BE.device(0).fp64 else [])


@pytest.mark.parametrize("dt", _dtypes())
@pytest.mark.parametrize("t,h,d", [(64, 4, 32), (13, 3, 20), (9, 2, 37), (40, 5, 12), (15, 2, 150)])
def test_attention_products_on_head_views(dt, t, h, d):
    """q @ k.T, p @ v and the backward's products on (B, H, T, D) views of one (B, T, 3 H D) array: two batch
    dims that do not collapse, rows at the qkv pitch (read in place), k.T through the two-batch transposed copy;
    sizes with a scalar row/column tail (T not a multiple of 6, D not of 16); T = 15, D = 150: q @ k.T through the
    A @ B.T kernel (narrow m, long k) with the two batch dims."""
    rng = np.random.default_rng(t * h + d)
    bsz = 3
    qkv = rng.standard_normal((bsz, t, 3 * h * d)).astype(dt)
    x = _t(qkv)
    q, k, v = (x[:, :, i * h * d:(i + 1) * h * d].view(bsz, t, h, d).transpose(1, 2) for i in range(3))
    qn, kn, vn = (qkv[:, :, i * h * d:(i + 1) * h * d].reshape(bsz, t, h, d).transpose(0, 2, 1, 3) for i in range(3))
    s = q @ k.transpose(-1, -2)
    _mm_check(qn, kn.transpose(0, 1, 3, 2), s.cpu().numpy(), dt)
    p = rng.standard_normal((bsz, h, t, t)).astype(dt)
    _mm_check(p, vn, (_t(p) @ v).cpu().numpy(), dt)                          # B rows at the qkv pitch
    _mm_check(p.transpose(0, 1, 3, 2), vn, (_t(p).transpose(-1, -2) @ v).cpu().numpy(), dt)   # A transposed
    _mm_check(qn.transpose(0, 1, 3, 2), p[..., :d] if t >= d else qn,
              (q.transpose(-1, -2) @ (_t(p)[..., :d] if t >= d else q)).cpu().numpy(), dt)
    np.testing.assert_array_equal(k.transpose(-1, -2).contiguous().cpu().numpy(), kn.transpose(0, 1, 3, 2))


@pytest.mark.parametrize("dt", _dtypes())
@pytest.mark.parametrize("n,k,m", [(1024, 128, 65), (37, 300, 20), (13, 64, 33), (50, 40, 12), (7, 1024, 48)])
def test_blocked_matmul_row_and_column_tails(dt, n, k, m):
    """The 6 x 16 blocked kernel (float32 on AVX2-class CPUs) and its scalar column tail, NN, A transposed in
    place (x.T @ g) and A's rows at a pitch (a column slice), against float64 numpy."""
    rng = np.random.default_rng(n + k + m)
    a = rng.standard_normal((n, k + 5)).astype(dt)
    b = rng.standard_normal((k, m)).astype(dt)
    _mm_check(a[:, :k], b, (_t(a)[:, :k] @ _t(b)).cpu().numpy(), dt)
    at = np.ascontiguousarray(a[:, :k].T)
    _mm_check(a[:, :k], b, (_t(at).t() @ _t(b)).cpu().numpy(), dt)
    _mm_check(a[:, 5:], b, (_t(a)[:, 5:] @ _t(b)).cpu().numpy(), dt)


@pytest.mark.parametrize("dt", _dtypes() + [np.float16])
@pytest.mark.parametrize("n,i,o", [(1024, 128, 65), (37, 20, 16), (9, 300, 7), (0, 5, 3), (4, 0, 6)])
def test_linear_fused_bias_forward_backward(dt, n, i, o):
    """nn.Linear through the opencl ``linear`` kernel (the bias added in the blocked kernel's stores, including its
    scalar column tail; a separate add on the other paths) and ``linear_backward``, against float64 numpy."""
    rng = np.random.default_rng(n + i + o)
    xa, wa, ba = (rng.standard_normal(s).astype(dt) for s in ((n, i + 2), (o, i), (o,)))
    x = _t(xa)[:, 1:i + 1].detach().requires_grad_(True)   # a column slice: rows at a pitch
    w, b = _t(wa).requires_grad_(True), _t(ba).requires_grad_(True)
    y = F.linear(x, w, b)
    assert type(y.grad_fn).__name__ == "AddmmBackward0"
    g = rng.standard_normal((n, o)).astype(dt)
    y.backward(_t(g))
    x64, w64, g64 = (v.astype(np.float64) for v in (xa[:, 1:i + 1], wa, g))
    tol = {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-12}[dt]
    for got, want in ((y, x64 @ w64.T + ba), (x.grad, g64 @ w64), (w.grad, g64.T @ x64), (b.grad, g64.sum(0))):
        np.testing.assert_allclose(got.detach().cpu().numpy().astype(np.float64), want, rtol=tol,
                                   atol=tol * max(1.0, np.sqrt(max(n, i, 1))))


@pytest.mark.parametrize("n", [5, 8, 1027])
def test_vector_elementwise_kernels_specials_and_tails(n):
    """The contiguous float32 elementwise kernels run VW elements per work-item (vecmath.VECTOR_EW): values,
    NaN/inf/-0 in the vector body and the scalar tail, in place (x += y), offsets into a buffer."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n + 1).astype(np.float32)
    b = rng.standard_normal(n + 1).astype(np.float32)
    a[1:5] = [np.nan, np.inf, -np.inf, -0.0]
    a[-1] = np.nan
    x, y = _t(a)[1:], _t(b)[1:]
    an, bn = a[1:], b[1:]
    with np.errstate(all="ignore"):
        for got, want in ((x + y, an + bn), (x - y, an - bn), (x * y, an * bn), (x / y, an / bn), (x * 2.5, an * 2.5),
                          (x / 3.0, an / np.float32(3)), (-x, -an),
                          (x.relu(), np.where((an > 0) | np.isnan(an), an, 0)),
                          (x.abs().sqrt(), np.sqrt(np.abs(an))),
                          (x.abs().rsqrt(), 1 / np.sqrt(np.abs(an))), (x.clone(), an),
                          (coretorch.full_like(x, 1.5), np.full(n, 1.5, np.float32))):
            np.testing.assert_allclose(got.cpu().numpy(), want, rtol=3e-7, atol=0, equal_nan=True)
        ok = ~np.isnan(an)   # -0 and +0 keep their signs through neg and the copy
        for got, want in ((-x, -an), (x.clone(), an)):
            np.testing.assert_array_equal(np.signbit(got.cpu().numpy()[ok]), np.signbit(want[ok]))
        z = x.clone()
        z += y
        z.add_(y, alpha=2.0)
        np.testing.assert_allclose(z.cpu().numpy(), an + bn + 2 * bn, rtol=3e-7, equal_nan=True)


@pytest.mark.parametrize("opt,kw", [("AdamW", {"weight_decay": 0.1}), ("Adam", {"amsgrad": True, "weight_decay": 0.01}),
                                    ("Adam", {"maximize": True, "betas": (0.3, 0.9)})])
def test_adam_vector_kernel_matches_cpu(opt, kw):
    """Adam/AdamW through the opencl ``adam_step_`` kernel's vector form (VW elements per work-item, a scalar tail:
    1027 elements) against the cpu backend, three steps."""
    rng = np.random.default_rng(7)
    p0 = rng.standard_normal(1027).astype(np.float32)
    grads = [rng.standard_normal(1027).astype(np.float32) for _ in range(3)]
    got = []
    for dev in ("cpu", "opencl"):
        p = coretorch.tensor(p0, device=dev, requires_grad=True)
        o = getattr(coretorch.optim, opt)([p], lr=0.01, **kw)
        for g in grads:
            p.grad = coretorch.tensor(g, device=dev)
            o.step()
        got.append(p.detach().cpu().numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=2e-6, atol=1e-7)
    assert not np.array_equal(got[1], p0)


@pytest.mark.parametrize("d,affine", [(128, True), (13, True), (8, False), (5, True)])
def test_layer_norm_vector_rows_forward_backward(d, affine):
    """F.layer_norm forward and input/weight/bias gradients through the row kernels' vector form (D >= VW: the
    vector body and a scalar tail; D < VW: the scalar kernel), against float64 numpy."""
    rng = np.random.default_rng(d)
    xa = (rng.standard_normal((2, 7, d)) * 3 + 1).astype(np.float32)
    wa, ba = rng.standard_normal(d).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    ga = rng.standard_normal((2, 7, d)).astype(np.float32)
    x = _t(xa).requires_grad_(True)
    w, b = (_t(wa).requires_grad_(True), _t(ba).requires_grad_(True)) if affine else (None, None)
    y = F.layer_norm(x, (d,), w, b, eps=1e-5)
    y.backward(_t(ga))
    x64, g64 = xa.astype(np.float64), ga.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    rs = 1 / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    xh = (x64 - mu) * rs
    w64 = wa.astype(np.float64) if affine else np.ones(d)
    gh = g64 * w64
    gx = rs * (gh - gh.mean(-1, keepdims=True) - xh * (gh * xh).mean(-1, keepdims=True))
    np.testing.assert_allclose(y.detach().cpu().numpy(), xh * w64 + (ba if affine else 0), rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(x.grad.cpu().numpy(), gx, rtol=1e-4, atol=5e-5)
    if affine:
        np.testing.assert_allclose(w.grad.cpu().numpy(), (g64 * xh).sum((0, 1)), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(b.grad.cpu().numpy(), g64.sum((0, 1)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("v,n,d,idt", [(65, 1024, 128, np.int64), (7, 50, 13, np.int32), (5, 9, 3, np.int64),
                                       (4, 0, 16, np.int64)])
def test_index_add_rows_in_index_order(v, n, d, idt):
    """index_add over dim 0 of a float32 matrix (the embedding's gradient) through the row kernel: VW columns per
    work-item and a scalar tail, repeated indices, int32 and int64 indices, no rows; the rows are added in index
    order, so the result is numpy's add.at in float32 bit for bit."""
    rng = np.random.default_rng(v + n + d)
    idx = rng.integers(0, v, n).astype(idt)
    src = rng.standard_normal((n, d)).astype(np.float32)
    base = rng.standard_normal((v, d)).astype(np.float32)
    want = base.copy()
    np.add.at(want, idx, src)
    got = _t(base).index_add(0, _t(idx), _t(src))
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    emb = coretorch.nn.Embedding(v, d).to("opencl")
    if n:
        emb(_t(idx.astype(np.int64))).backward(_t(src))
        want = np.zeros((v, d), np.float32)
        np.add.at(want, idx, src)
        np.testing.assert_array_equal(emb.weight.grad.cpu().numpy(), want)
