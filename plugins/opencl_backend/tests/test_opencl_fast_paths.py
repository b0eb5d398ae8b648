"""The OpenCL kernels that serve a training step's layouts without copies: the A @ B.T matmul kernel (x @ W.T;
long-k NN products through a transposed copy of B), the blocked kernel reading A transposed in place (x.T @ g) and
computing the last m % VW columns in the same launch, the column sum (a bias gradient), and the 2-D strided
elementwise kernel (a column broadcast, a small transposed copy).  Each against numpy, at sizes that are not
multiples of the blocking, for float32 and float64, on views, and with the GPU blocking forced on the test device."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
from coretorch_opencl import STATS
from coretorch_opencl.codegen import SUM_BLOCK

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _t(a):
    return coretorch.tensor(a, device="opencl")


def _dtypes():
    return [np.float32] + ([np.float64] if _BE is not None and _BE.is_available() and _BE.device(0).fp64 else [])


def _table():
    return coretorch._backend.get_table(coretorch.device("opencl"))


def _check_mm(a, b, got, dt):
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-4 if dt == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1, np.sqrt(a.shape[-1])))


# ---------------------------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------------------------
_MM_SHAPES = [(128, 784, 256), (128, 256, 128), (128, 128, 10), (37, 300, 23), (9, 513, 7), (70, 65, 33),
              (4, 1030, 5), (128, 10, 128), (200, 1024, 17), (16, 64, 16), (600, 600, 600)]


@pytest.mark.parametrize("dt", _dtypes())
@pytest.mark.parametrize("n,k,m", _MM_SHAPES)
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("blocking", ["device", "GPU forced"])
def test_matmul_layouts(dt, n, k, m, layout, blocking, monkeypatch):
    """A @ B for every combination of row-major / transposed-view operands (x @ W.T is "NT", x.T @ g "TN")."""
    if blocking == "GPU forced":
        monkeypatch.setattr(_BE.device(0), "is_cpu", False)
    _check_layout(dt, n, k, m, layout)


@pytest.mark.parametrize("n,k,m", _MM_SHAPES)
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_matmul_layouts_at_the_other_cpu_blocking(n, k, m, layout, monkeypatch):
    """float32 products at the CPU blocking this device does not use, with its routes: AVX2's 6 x 2 x 8 (and the
    A @ B.T kernel for x @ W.T from k = 768) on an AVX-512 device, AVX-512's 12 x 2 x 16 (and x @ W.T as a
    transposed copy and the blocked kernel, see ``matmul.nt_min_k_of``) elsewhere."""
    from coretorch_opencl import matmul as mm
    if not _BE.device(0).is_cpu:
        pytest.skip("the CPU blockings serve CPU devices; this OpenCL device is no CPU")
    wide = mm.blocking(_BE.device(0))[1] == 16
    monkeypatch.setattr(mm, "blocking", lambda dev, dt=np.float32: (6, 8, 8) if wide else (12, 16, 8))
    monkeypatch.setattr(mm, "nt_min_k_of", lambda dev, dt=np.float32: mm._NT_MIN_K if wide else mm._NT_MIN_K_WIDE)
    _check_layout(np.float32, n, k, m, layout)


def _check_layout(dt, n, k, m, layout):
    rng = np.random.default_rng(n * 7 + k)
    a = rng.standard_normal((n, k)).astype(dt)
    b = rng.standard_normal((k, m)).astype(dt)
    ta = _t(np.ascontiguousarray(a.T)).T if layout[0] == "T" else _t(a)
    tb = _t(np.ascontiguousarray(b.T)).T if layout[1] == "T" else _t(b)
    _check_mm(a, b, (ta @ tb).cpu().numpy(), dt)


@pytest.mark.parametrize("dt", _dtypes())
@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
def test_matmul_batched_layouts(dt, layout):
    rng = np.random.default_rng(3)
    for n, k, m in [(33, 520, 40), (20, 300, 9), (64, 40, 19), (70, 1024, 40)]:
        a = rng.standard_normal((3, n, k)).astype(dt)
        b = rng.standard_normal((3, k, m)).astype(dt)
        ta = _t(np.ascontiguousarray(np.swapaxes(a, 1, 2))).transpose(1, 2) if layout[0] == "T" else _t(a)
        tb = _t(np.ascontiguousarray(np.swapaxes(b, 1, 2))).transpose(1, 2) if layout[1] == "T" else _t(b)
        _check_mm(a, b, (ta @ tb).cpu().numpy(), dt)
        # a broadcast batch operand (one weight for every batch) and a sliced row-major operand
        w = rng.standard_normal((m, k)).astype(dt)
        _check_mm(a, np.broadcast_to(w.T, (3, k, m)), (ta @ _t(w).T).cpu().numpy(), dt)
        big = rng.standard_normal((n, k + 5)).astype(dt)
        _check_mm(big[:, 2:k + 2], b[0], (_t(big)[:, 2:k + 2] @ tb[0]).cpu().numpy(), dt)


def test_matmul_paths_need_no_copy():
    """On a CPU device, x @ W.T (long k) and x.T @ g are one launch each (no transposed copy); the last m % VW
    columns of a product come from the same launch as the blocks.  Where the device's blocking takes x @ W.T as a
    transposed copy of W and the blocked kernel instead (AVX-512: ``nt_min_k_of``), that is two launches."""
    if not _BE.device(0).is_cpu:
        pytest.skip("the A @ B.T kernel serves CPU devices")
    from coretorch_opencl import matmul as mm
    nt_launches = 1 if 784 >= mm.nt_min_k_of(_BE.device(0), np.float32) else 2
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((128, 784)).astype(np.float32), rng.standard_normal((256, 784)).astype(np.float32)
    g = rng.standard_normal((128, 10)).astype(np.float32)
    h = rng.standard_normal((128, 128)).astype(np.float32)
    tx, tw, tg, th = _t(x), _t(w), _t(g), _t(h)
    for fn, want, launches in [(lambda: tx @ tw.T, x @ w.T, nt_launches), (lambda: th.T @ tg, h.T @ g, 1),
                                (lambda: th @ th[:, :10], h @ h[:, :10], 1)]:
        fn()
        before = STATS["launches"]
        got = fn()
        assert STATS["launches"] == before + launches
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-4, atol=1e-3)


def test_plans_made_for_a_forced_gpu_blocking_do_not_outlive_it(monkeypatch):
    """Products and reductions are planned once per operand layout; a plan made while the GPU blocking was forced
    (is_cpu patched, as test_matmul_layouts does) must not serve the CPU device afterwards (CI saw x @ W.T take a
    transposed copy, two launches, after such a test ran first in the same worker)."""
    if not _BE.device(0).is_cpu:
        pytest.skip("the A @ B.T kernel serves CPU devices")
    from coretorch_opencl import matmul as mm
    monkeypatch.setattr(mm, "_NT_MIN_K_WIDE", mm._NT_MIN_K)   # the A @ B.T kernel at this k on every CPU device
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((128, 784)).astype(np.float32), rng.standard_normal((256, 784)).astype(np.float32)
    tx, tw = _t(x), _t(w)
    with monkeypatch.context() as m:
        m.setattr(_BE.device(0), "is_cpu", False)
        tx @ tw.T
        tx.sum(0)
    before = STATS["launches"]
    got = tx @ tw.T
    assert STATS["launches"] == before + 1
    np.testing.assert_allclose(got.cpu().numpy(), x @ w.T, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(tx.sum(0).cpu().numpy(), x.sum(0), rtol=1e-4, atol=1e-4)


def test_matmul_empty_and_degenerate():
    for shape_a, shape_b in [((0, 600), (600, 300)), ((300, 600), (600, 0)), ((300, 0), (0, 300)),
                             ((1, 600), (600, 1))]:
        a = np.ones(shape_a, np.float32)
        b = np.ones(shape_b, np.float32)
        got = (_t(a) @ _t(b)).cpu().numpy()
        assert got.shape == (shape_a[0], shape_b[1]) and np.array_equal(got, a @ b)
    w = np.arange(600 * 300, dtype=np.float32).reshape(300, 600) / 1e5
    v = np.ones(600, np.float32)
    np.testing.assert_allclose((_t(v) @ _t(w).T).cpu().numpy(), v @ w.T, rtol=1e-5)   # a vector @ W.T


# ---------------------------------------------------------------------------------------------
# column sums
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", _dtypes())
@pytest.mark.parametrize("shape", [(128, 256), (128, 10), (128, 7), (3, 8), (2, 9), (1000, 13), (5000, 16),
                                   (4096, 3), (700, 1), (1, 300), (2, 3, 17), (300, 2, 8), (9000, 8)])
def test_column_sum(dt, shape):
    """x.sum(0) (a bias gradient) equals numpy's; unchunked (up to 256 rows per column vector here) it adds the
    rows in order in blocks of SUM_BLOCK whose sums go into the total with Kahan's compensation (codegen.kahan_step),
    the same bits as that loop written in numpy."""
    rng = np.random.default_rng(shape[0])
    a = rng.standard_normal(shape).astype(dt)
    t = _t(a)
    got = t.sum(0).cpu().numpy()
    assert got.dtype == dt and got.shape == shape[1:]
    tol = 1e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(got, a.astype(np.float64).sum(0), rtol=tol, atol=tol * np.sqrt(shape[0]) * 4)
    assert t.sum(0, keepdim=True).cpu().numpy().shape == (1,) + shape[1:]
    if shape[0] <= 256:
        seq, c = np.zeros(shape[1:], dt), np.zeros(shape[1:], dt)
        for rb in range(0, shape[0], SUM_BLOCK):
            blk = np.zeros(shape[1:], dt)
            for i in range(rb, min(shape[0], rb + SUM_BLOCK)):
                blk = (blk + a[i]).astype(dt)
            y = (blk - c).astype(dt)
            t2 = (seq + y).astype(dt)
            c, seq = ((t2 - seq).astype(dt) - y).astype(dt), t2
        assert np.array_equal(got, seq)


@pytest.mark.parametrize("dt", _dtypes())
def test_column_sum_views_and_empty(dt):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 70)).astype(dt)
    t = _t(a)
    np.testing.assert_allclose(t.T.sum(1).cpu().numpy(), a.sum(0), rtol=1e-5, atol=1e-5)          # transposed
    np.testing.assert_allclose(t[::2, 3:50].sum(0).cpu().numpy(), a[::2, 3:50].sum(0), rtol=1e-5, atol=1e-5)
    table = _table()
    rev = table.basic_index(t._data, (slice(None, None, -1), slice(1, None)))                     # negative stride
    np.testing.assert_allclose(table.to_numpy(table.sum(rev, (0,), False)), a[::-1, 1:].sum(0), rtol=1e-5, atol=1e-5)
    e = np.zeros((0, 20), dt)
    assert np.array_equal(_t(e).sum(0).cpu().numpy(), e.sum(0))
    assert _t(np.zeros((20, 0), dt)).sum(0).cpu().numpy().shape == (0,)
    assert float(_t(np.array(3.5, dt)).sum()) == 3.5
    # the linear layer's bias gradient through autograd
    x = _t(rng.standard_normal((33, 20)).astype(dt))
    lin = coretorch.nn.Linear(20, 17).to("opencl")
    if dt == np.float64:
        lin = lin.double()
    lin(x).sum().backward()
    np.testing.assert_allclose(lin.bias.grad.cpu().numpy(), np.full(17, 33.0), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# 2-D strided elementwise
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8])
def test_strided_2d_elementwise(dt):
    """Operands that collapse to two dims of any strides (a column broadcast, a transposed copy below the block
    transpose's size, a strided 1-D view) give numpy's result, in one launch."""
    if dt == np.float64 and not _BE.device(0).fp64:
        pytest.skip("the OpenCL device has no cl_khr_fp64")
    rng = np.random.default_rng(2)
    x = (rng.uniform(1, 9, (128, 10)) * 3).astype(dt)
    c = (rng.uniform(1, 9, (128, 1)) * 3).astype(dt)
    tx, tc = _t(x), _t(c)
    table = _table()
    for op, fn in [("sub", np.subtract), ("mul", np.multiply), ("add", np.add), ("eq", np.equal),
                   ("maximum", np.maximum)]:
        if op == "sub" and dt == np.uint8:
            continue
        before = STATS["launches"]
        got = table.to_numpy(getattr(table, op)(tx._data, table.expand(tc._data, x.shape)))
        assert STATS["launches"] == before + 1
        np.testing.assert_array_equal(got, fn(x, c))
    big = (rng.uniform(0, 50, (70, 50))).astype(dt)
    assert np.array_equal(_t(big).T.contiguous().cpu().numpy(), big.T)                 # 3500 < the block size
    assert np.array_equal(_t(big)[:, ::2].contiguous().cpu().numpy(), big[:, ::2])
    rev = table.basic_index(_t(big)._data, (slice(None, None, -1), slice(5, None)))       # negative stride
    assert np.array_equal(table.to_numpy(table.contiguous(rev)), big[::-1, 5:])
    narrow = (rng.uniform(0, 50, (3, 600))).astype(dt)
    assert np.array_equal(_t(narrow).T.contiguous().cpu().numpy(), narrow.T)
    assert np.array_equal(table.to_numpy(table.cast(table.permute(_t(narrow)._data, (1, 0)), np.dtype(np.float32))),
                          narrow.T.astype(np.float32))
    v = (rng.uniform(0, 50, 5000)).astype(dt)
    assert np.array_equal(_t(v)[::3].contiguous().cpu().numpy(), v[::3])
    small = (rng.uniform(0, 50, (20, 30))).astype(dt)                                   # below the 2-D size: "_s"
    assert np.array_equal(_t(small).T.contiguous().cpu().numpy(), small.T)


def test_strided_2d_where_scalar_and_inplace():
    rng = np.random.default_rng(4)
    m = rng.standard_normal((40, 64)) > 0
    y = rng.standard_normal((64, 40)).astype(np.float32)
    got = coretorch.where(_t(m).T, _t(y), 0.5).cpu().numpy()
    np.testing.assert_array_equal(got, np.where(m.T, y, np.float32(0.5)))
    np.testing.assert_allclose((_t(y).T * 3.0).cpu().numpy(), y.T * 3, rtol=1e-6)
    z = _t(np.zeros((64, 40), np.float32))
    z.T.add_(_t(np.ones((40, 64), np.float32)))                                        # written through a transpose
    assert (z.cpu().numpy() == 1).all()
    a = rng.standard_normal((60, 50)).astype(np.float32)
    np.testing.assert_allclose((_t(a)[5:, 3:] - _t(a)[5:, 3:4]).cpu().numpy(), a[5:, 3:] - a[5:, 3:4], rtol=1e-6)
    # the cross-entropy pattern: logits - logsumexp over rows
    lg = rng.standard_normal((128, 10)).astype(np.float32)
    tl = _t(lg)
    got = (tl - tl.amax(1, keepdim=True)).cpu().numpy()
    np.testing.assert_allclose(got, lg - lg.max(1, keepdims=True), rtol=1e-6)
