"""coretorch-opencl's own tests: device discovery and selection, kernels beyond the shared op checks
(the register-blocked matmul, chunked reductions, many-dim strided operands, atomics), the caching
allocator and its out-of-memory path, CPU fallback, random numbers, and no host round trip in a step."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch
from coretorch_opencl import STATS, OpenCLBackend
from coretorch_opencl import device as cldevice

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _t(a, **kw):
    return coretorch.tensor(a, device="opencl", **kw)


# ---------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------
def test_device_info_and_cli():
    assert _BE.device_count() >= 1
    name = _BE.device_name(0)
    assert "MiB" in name and ":" in name
    devs = {d["type"]: d for d in coretorch.devices()}
    assert devs["opencl"]["available"] and devs["opencl"]["distribution"] == "coretorch-opencl"
    from coretorch.cli import info
    text = info()
    assert "opencl" in text and "MiB" in text
    x = coretorch.ones(2, device="opencl:0")
    assert str(x.device) == "opencl:0" and (x * 2).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="does not exist"):
        coretorch.ones(2, device=f"opencl:{_BE.device_count()}")


@pytest.fixture
def rediscover(monkeypatch):
    cldevice.reset_discovery()
    yield monkeypatch
    monkeypatch.delenv("CORETORCH_OPENCL_DEVICE", raising=False)
    cldevice.reset_discovery()


def test_device_selection_by_name_and_index(rediscover):
    pi, di, d = cldevice.discover()[0][0]
    rediscover.setenv("CORETORCH_OPENCL_DEVICE", f"{pi}:{di}")
    cldevice.reset_discovery()
    be = OpenCLBackend()
    assert be.is_available() and be.device_count() == 1 and d.name.strip() in be.device_name(0)
    rediscover.setenv("CORETORCH_OPENCL_DEVICE", d.name.strip()[3:12].upper())  # a case-insensitive substring
    cldevice.reset_discovery()
    assert be.is_available() and d.name.strip() in be.device_name(0)
    rediscover.setenv("CORETORCH_OPENCL_DEVICE", "no-such-device-xyz")
    cldevice.reset_discovery()
    assert not be.is_available() and be.device_count() == 0
    assert "matches no OpenCL device" in be.unavailable_reason()


def test_gpu_preferred_in_ordering():
    found = cldevice.discover()[0]
    ranks = [cldevice._type_rank(d) for _, _, d in found]
    assert ranks == sorted(ranks)


# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape_a,shape_b,transpose", [((64, 48), (48, 40), False), ((2, 32, 20), (2, 20, 16), False),
                                                      ((64, 48), (48, 40), True), ((1, 40, 24), (3, 24, 32), False),
                                                      ((33, 70), (70, 45), False), ((4, 37, 50), (4, 50, 70), True)])
def test_matmul_fast_path(shape_a, shape_b, transpose):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape_a).astype(np.float32)
    b = rng.standard_normal(shape_b).astype(np.float32)
    ta = _t(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2) if transpose else _t(a)
    tb = _t(b)
    got = (ta @ tb).cpu().numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    got64 = (ta.double() @ tb.double()).cpu().numpy()
    np.testing.assert_allclose(got64, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-10, atol=1e-10)


def test_matmul_int_and_half():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    assert (_t(a) @ _t(a.T.copy())).tolist() == (a @ a.T).tolist()
    h = np.linspace(-1, 1, 12, dtype=np.float16).reshape(3, 4)
    np.testing.assert_allclose((_t(h) @ _t(h.T.copy())).cpu().numpy(), h @ h.T, rtol=1e-2, atol=1e-2)


def test_chunked_reductions():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 9000)).astype(np.float32)
    t = _t(x)
    np.testing.assert_allclose(t.sum(1).cpu().numpy(), x.sum(1), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(t.sum().item(), x.sum(dtype=np.float64), rtol=1e-4, atol=1e-2)
    assert t.amax().item() == x.max() and t.amin(1).tolist() == x.min(1).tolist()
    assert t.argmax(1).tolist() == x.argmax(1).tolist()
    assert bool((t > 4).any()) == bool((x > 4).any())


def test_many_dim_strided_operands():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 2, 3, 2, 3)).astype(np.float32)
    t = _t(x).permute(5, 3, 1, 0, 2, 4)
    ref = x.transpose(5, 3, 1, 0, 2, 4)
    # 2x + exp(x) cancels near x = -0.35: an absolute bound in the terms' size (exp: OpenCL allows 3 ulp, numpy ~1;
    # the two sums round once each)
    got, want = (t * 2 + t.exp()).cpu().numpy(), ref * 2 + np.exp(ref)
    assert np.all(np.abs(got - want) <= 6 * np.finfo(np.float32).eps * (2 * np.abs(ref) + np.exp(ref)))
    np.testing.assert_allclose(t.sum((0, 2, 4)).cpu().numpy(), ref.sum((0, 2, 4)), rtol=1e-5, atol=1e-6)
    assert t.contiguous().is_contiguous() and not t.is_contiguous()


def test_flip_tile_cat_views_stay_on_device():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = _t(x)
    assert t.flip((0, 2)).tolist() == np.flip(x, (0, 2)).tolist()
    assert t.repeat(2, 1, 2).tolist() == np.tile(x, (2, 1, 2)).tolist()
    assert coretorch.cat([t, t[:, :1]], 1).tolist() == np.concatenate([x, x[:, :1]], 1).tolist()
    v = t[1, ::2, 1:]
    assert v.tolist() == x[1, ::2, 1:].tolist()
    v.mul_(10)  # in place through a strided view writes into the base
    x[1, ::2, 1:] *= 10
    assert t.tolist() == x.tolist()


def test_indexing_put_and_accumulate():
    x = np.zeros((4, 5), np.float64)
    t = _t(x)
    idx = [0, 2, 0]
    x[idx, [1, 1, 1]] = [1.0, 2.0, 3.0]
    # a repeated index's element takes one of its values (any one, as in PyTorch: the work-items race), the last in
    # index order under use_deterministic_algorithms (numpy's)
    t[idx, [1, 1, 1]] = _t([1.0, 2.0, 3.0], dtype=coretorch.float64)
    assert t[0, 1].item() in (1.0, 3.0)
    t[0, 1] = 3.0
    assert t.tolist() == x.tolist()
    before = coretorch.are_deterministic_algorithms_enabled()
    coretorch.use_deterministic_algorithms(True)
    try:
        t = _t(np.zeros((4, 5), np.float64))
        t[idx, [1, 1, 1]] = _t([1.0, 2.0, 3.0], dtype=coretorch.float64)
        assert t.tolist() == x.tolist()
    finally:
        coretorch.use_deterministic_algorithms(before)
    src = np.arange(6, dtype=np.float64).reshape(2, 3)
    i = np.array([[0, 1, 0], [3, 3, 3]])
    got = coretorch.zeros(4, 3, dtype=coretorch.float64, device="opencl").scatter_add(0, _t(i), _t(src))
    want = np.zeros((4, 3))
    np.add.at(want, (i, np.arange(3)[None, :].repeat(2, 0)), src)
    assert got.tolist() == want.tolist()
    m = _t(np.array([[True, False, True, False, False]] * 4))
    assert t[m].tolist() == x[np.array([[True, False, True, False, False]] * 4)].tolist()
    assert coretorch.nonzero(_t([0, 3, 0, 4])).tolist() == [[1], [3]]


def test_float16_and_casts():
    h = np.array([0.5, 1.5, -2.25], np.float16)
    t = _t(h)
    assert (t + t).tolist() == (h + h).tolist() and t.dtype is coretorch.float16
    assert t.to(coretorch.int64).tolist() == [0, 1, -2]
    assert _t([0.0, 2.0, np.nan]).to(coretorch.bool).tolist() == [False, True, True]


def test_float64_needs_fp64(monkeypatch):
    dev = _BE.device(0)
    monkeypatch.setattr(dev, "fp64", False)
    with pytest.raises(RuntimeError, match="cl_khr_fp64"):
        coretorch.zeros(3, dtype=coretorch.float64, device="opencl")


# ---------------------------------------------------------------------------------------------
# allocator
# ---------------------------------------------------------------------------------------------
def test_pool_reuses_freed_buffers():
    dev = _BE.device(0)
    a = coretorch.empty(1 << 16, device="opencl")
    del a
    held = dev.pool.held_blocks
    managed = dev.pool.managed_bytes
    assert held >= 1
    b = coretorch.empty(1 << 16, device="opencl")
    assert dev.pool.managed_bytes == managed and dev.pool.held_blocks == held - 1
    del b


def test_out_of_memory_empties_pool_and_retries(monkeypatch):
    dev = _BE.device(0)
    real = dev._pool_alloc
    calls = []

    def flaky(n):
        calls.append(n)
        if len(calls) == 1:
            raise cldevice.cl.MemoryError("clCreateBuffer", cldevice.cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                                          "simulated")
        return real(n)
    monkeypatch.setattr(dev, "_pool_alloc", flaky)
    before = dev.oom_retries
    x = coretorch.ones(1000, device="opencl")
    assert x.sum().item() == 1000 and dev.oom_retries == before + 1 and len(calls) >= 2

    def always(n):
        raise cldevice.cl.MemoryError("clCreateBuffer", cldevice.cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                                      "simulated")
    monkeypatch.setattr(dev, "_pool_alloc", always)
    with pytest.raises(RuntimeError, match="OpenCL out of memory"):
        coretorch.ones(1000, device="opencl")


def test_allocation_beyond_device_limit_is_a_clear_error():
    dev = _BE.device(0)
    n = dev.max_alloc // 4 + 1024
    with pytest.raises(RuntimeError, match="out of memory"):
        coretorch.empty(n, device="opencl")


# ---------------------------------------------------------------------------------------------
# fallback, random numbers
# ---------------------------------------------------------------------------------------------
class _Partial(OpenCLBackend):
    name = "oclpartial"
    distribution = "coretorch-opencl-test"

    def kernels(self, index=0):
        t = dict(super().kernels(index))
        del t["cumprod"]
        return t


class _PartialPlugin:
    CORETORCH_PLUGIN_API = 1

    @coretorch.plugins.hookimpl
    def coretorch_register_backends(self, register):
        register(_Partial())


def test_missing_kernel_and_cpu_fallback(monkeypatch):
    coretorch.plugins.register(_PartialPlugin(), name="oclpartial")
    try:
        x = coretorch.tensor([1.0, 2.0, 3.0], device="oclpartial")
        monkeypatch.delenv("CORETORCH_FALLBACK", raising=False)
        with pytest.raises(NotImplementedError, match="cumprod.*oclpartial"):
            coretorch._backend.get_table(x.device).cumprod(x._data, 0)
        monkeypatch.setenv("CORETORCH_FALLBACK", "cpu")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            table = coretorch._backend.get_table(x.device)
            out = table.cumprod(x._data, 0)
        assert isinstance(out, OpenCLBackend.array_type) and table.to_numpy(out).tolist() == [1.0, 2.0, 6.0]
        assert (x.cumsum(0) * 2).tolist() == [2.0, 6.0, 12.0]
        assert any("CORETORCH_FALLBACK" in str(m.message) for m in w) or "cumprod" in \
            coretorch._backend._warned_fallback
    finally:
        coretorch.plugins.unregister("oclpartial")


def test_random_reproducible_on_device():
    coretorch.manual_seed(123)
    a = coretorch.rand(1000, device="opencl").cpu().numpy()
    n = coretorch.randn(4000, device="opencl").cpu().numpy()
    coretorch.manual_seed(123)
    b = coretorch.rand(1000, device="opencl").cpu().numpy()
    coretorch.manual_seed(124)
    c = coretorch.rand(1000, device="opencl").cpu().numpy()
    assert (a == b).all() and not (a == c).all()
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    r = coretorch.randint(2, 5, (500,), device="opencl").cpu().numpy()
    assert r.min() == 2 and r.max() == 4
    t = coretorch.empty(100, device="opencl").uniform_(-2, -1).cpu().numpy()
    assert t.min() >= -2 and t.max() <= -1


# ---------------------------------------------------------------------------------------------
# no host round trip inside a training step
# ---------------------------------------------------------------------------------------------
def test_training_step_has_no_host_transfers():
    rng = np.random.default_rng(0)
    x = _t(rng.standard_normal((16, 12)).astype(np.float32))
    y = _t(rng.integers(0, 3, 16))
    onehot = coretorch.zeros(16, 3, device="opencl").scatter_add(1, y.unsqueeze(1), coretorch.ones(16, 1,
                                                                                                  device="opencl"))
    w1 = (coretorch.randn(12, 8, device="opencl") * 0.3).requires_grad_()
    b1 = coretorch.zeros(8, device="opencl", requires_grad=True)
    w2 = (coretorch.randn(8, 3, device="opencl") * 0.3).requires_grad_()
    params = [w1, b1, w2]

    def step():
        h = (x @ w1 + b1).relu()
        logits = h @ w2
        lse = logits.logsumexp(1, keepdim=True)
        loss = -((logits - lse) * onehot).sum() / 16
        loss.backward()
        with coretorch.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=0.5)
                p.grad = None
        return loss

    first = step().item()
    before = (STATS["to_host"], STATS["to_device"])
    for _ in range(5):
        loss = step()
    assert (STATS["to_host"], STATS["to_device"]) == before, "a host transfer happened inside a training step"
    assert loss.item() < first  # it trains (and .item() is the one transfer)
    assert STATS["to_host"] == before[0] + 1


# ---------------------------------------------------------------------------------------------
# axpy_: y += alpha * x in one launch (add_/sub_ with alpha, _foreach_add_, SGD's update)
# ---------------------------------------------------------------------------------------------
def _table():
    return coretorch.ones(1, device="opencl")._be


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, np.int64, np.int32])
def test_axpy_kernel_matches_numpy(dt):
    if dt == np.float64 and not _BE.device(0).fp64:
        pytest.skip("the OpenCL device has no fp64")
    rng = np.random.default_rng(7)
    table = _table()
    assert table.has("axpy_") and table.has_axpy
    y = (rng.standard_normal((6, 8)) * 10).astype(dt)
    x = (rng.standard_normal((6, 8)) * 10).astype(dt)
    alpha = 3 if np.dtype(dt).kind == "i" else -0.37
    tol = dict(rtol=2e-3, atol=2e-2) if dt == np.float16 else dict(rtol=1e-6, atol=1e-6)
    ty = table.from_numpy(y)
    before = STATS["launches"]
    table.axpy_(ty, alpha, table.from_numpy(x))
    assert STATS["launches"] == before + 1
    np.testing.assert_allclose(table.to_numpy(ty), (y + np.asarray(alpha, dt) * x).astype(dt), **tol)
    # a strided y (every other column of the base: the rest untouched) and a transposed x
    ty = table.from_numpy(y)
    view = table.basic_index(ty, (slice(None), slice(None, None, 2)))
    xt = table.permute(table.from_numpy(np.ascontiguousarray(x[:, ::2].T)), (1, 0))
    assert not table.is_contiguous(view) and not table.is_contiguous(xt)
    table.axpy_(view, alpha, xt)
    want = y.copy()
    want[:, ::2] = (y[:, ::2] + np.asarray(alpha, dt) * x[:, ::2]).astype(dt)
    np.testing.assert_allclose(table.to_numpy(ty), want, **tol)
    # x overlapping y shifted by a row reads the old values (as y + alpha * x computed out of place)
    ty = table.from_numpy(y)
    table.axpy_(table.basic_index(ty, (slice(1, None),)), alpha, table.basic_index(ty, (slice(None, -1),)))
    want = y.copy()
    want[1:] = (y[1:] + np.asarray(alpha, dt) * y[:-1]).astype(dt)
    np.testing.assert_allclose(table.to_numpy(ty), want, **tol)
    # a zero-stride y is refused, as for iadd
    with pytest.raises(RuntimeError, match="clone"):
        table.axpy_(table.expand(table.from_numpy(y[:1]), (6, 8)), alpha, table.from_numpy(x))


def test_add_sub_with_alpha_use_axpy():
    rng = np.random.default_rng(8)
    y, x = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((5, 7)).astype(np.float32)
    ty, tx = _t(y), _t(x)
    with coretorch.no_grad():
        before = STATS["launches"]
        ty.add_(tx, alpha=0.25)
        ty.sub_(tx.t().contiguous().t(), alpha=2.0)   # a strided x
        assert STATS["launches"] == before + 3            # the two axpy_ launches and the contiguous copy
        ty[1:3].add_(tx[1:3], alpha=-1.5)                 # a view of y
    want = y + np.float32(0.25) * x - np.float32(2.0) * x
    want[1:3] += np.float32(-1.5) * x[1:3]
    np.testing.assert_allclose(ty.cpu().numpy(), want, rtol=1e-6, atol=1e-6)


def test_foreach_add_on_opencl():
    rng = np.random.default_rng(9)
    shapes = [(3, 4), (10,), (2, 3, 5), ()]
    ys = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ty, tx = [_t(a) for a in ys], [_t(a) for a in xs]
    before = STATS["launches"]
    coretorch._foreach_add_(ty, tx, alpha=-0.1)
    assert STATS["launches"] == before + len(shapes)      # one axpy_ per pair
    for t, y, x in zip(ty, ys, xs):
        np.testing.assert_allclose(t.cpu().numpy(), y + np.float32(-0.1) * x, rtol=1e-6, atol=1e-7)
    coretorch._foreach_add_(ty, 1.5)                        # a scalar: add_ with no alpha
    for t, y, x in zip(ty, ys, xs):
        np.testing.assert_allclose(t.cpu().numpy(), y + np.float32(-0.1) * x + 1.5, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.8, nesterov=True),
                                dict(lr=0.03, momentum=0.9, weight_decay=0.01, dampening=0.5),
                                dict(lr=0.02, weight_decay=0.1, maximize=True)])
def test_sgd_on_opencl_matches_cpu(kw):
    from coretorch.optim import SGD
    rng = np.random.default_rng(10)
    init = [rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((2, 2, 2))]
    dts = [coretorch.float32] + ([coretorch.float64] if _BE.device(0).fp64 else [])
    for dt in dts:
        out = {}
        for dev in ("cpu", "opencl"):
            ps = [coretorch.tensor(a, dtype=dt, device=dev, requires_grad=True) for a in init]
            opt = SGD(ps, **kw)
            for step in range(4):
                opt.zero_grad()
                sum(((p * (step + 1)) ** 2).sum() for p in ps).backward()
                opt.step()
            out[dev] = [p.detach().cpu().numpy() for p in ps]
            assert all(p.device.type == dev for p in ps)
        tol = 1e-5 if dt is coretorch.float32 else 1e-12
        for a, b in zip(out["opencl"], out["cpu"]):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_plain_sgd_step_is_one_launch():
    from coretorch.optim import SGD
    ps = [coretorch.randn(5, 4, device="opencl", requires_grad=True), coretorch.randn(4, device="opencl",
                                                                                      requires_grad=True)]
    for p in ps:
        p.grad = coretorch.ones_like(p)
    opt = SGD(ps, lr=0.5)
    want = [p.detach().cpu().numpy() - 0.5 for p in ps]
    before = STATS["launches"]
    opt.step()
    assert STATS["launches"] == before + 1  # the whole group: fused_sgd_ (foreach=False: one per parameter)
    for p, w in zip(ps, want):
        np.testing.assert_allclose(p.detach().cpu().numpy(), w, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# cumsum / cumprod: the row loop and the chunked scan, any axis, strided inputs
# ---------------------------------------------------------------------------------------------
_SCAN_CASES = [((4, 5), 1), ((4, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), 0), ((3, 9000), 1), ((9000, 3), 0),
               ((20000,), 0), ((2, 5000, 3), 1), ((1, 7), 0), ((3, 0), 1), ((0, 3), 1)]


def _scan_ref(op, a, axis):
    """numpy's scan in float64 for floats, in the input's own (wrapping) integer dtype for integers."""
    acc = np.float64 if a.dtype.kind == "f" else a.dtype
    return getattr(np, op)(a.astype(acc), axis=axis, dtype=acc)


@pytest.fixture(params=["loop", "chunked"])
def scan_path(request, monkeypatch):
    """Run a test with the row loop only, or with the chunked scan wherever a row is long enough to split."""
    from coretorch_opencl import scan
    if request.param == "loop":
        monkeypatch.setattr(scan, "chunks", lambda dev, rows, length, dt: 1)
    else:
        monkeypatch.setattr(scan, "chunks", lambda dev, rows, length, dt: 1 if length < 64 or np.dtype(dt) == np.bool_
                            else min(scan._MAX_CHUNKS, length // 16, 37))
    return request.param


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.int32, np.float16])
def test_cumsum_cumprod_match_numpy(dt, scan_path):
    if dt == np.float64 and not _BE.device(0).fp64:
        pytest.skip("the OpenCL device has no fp64")
    rng = np.random.default_rng(11)
    table = _table()
    for shape, axis in _SCAN_CASES:
        if dt == np.float16 and np.prod(shape) > 100:
            continue  # float16 sums of thousands of terms round too coarsely to compare
        if np.dtype(dt).kind == "i":
            a = rng.integers(-3, 4, shape).astype(dt)
            p = rng.choice(np.array([-1, 1, 1, 1, 2], dt), shape)   # products that stay exact
        else:
            a = rng.standard_normal(shape).astype(dt)
            p = (1 + rng.standard_normal(shape) * 1e-3).astype(dt)
        for op, arr in (("cumsum", a), ("cumprod", p)):
            src = table.from_numpy(arr)
            before = STATS["launches"]
            got = getattr(table, op)(src, axis)
            if arr.shape[axis] >= 64:   # the path in use: one launch for the row loop, two for the chunked scan
                assert STATS["launches"] - before == (2 if scan_path == "chunked" else 1)
            assert got.dtype == arr.dtype and got.shape == arr.shape and (table.is_contiguous(got) or not arr.size)
            g, want = table.to_numpy(got), _scan_ref(op, arr, axis)
            if np.dtype(dt).kind == "i":
                np.testing.assert_array_equal(g, want, err_msg=f"{op} {shape} {axis}")
            else:
                tol = {np.float16: 3e-3, np.float32: 1e-5, np.float64: 1e-12}[dt]
                scale = np.maximum(np.abs(want), np.sqrt(np.arange(1, arr.shape[axis] + 1) if arr.size else 1).reshape(
                    [-1 if d == axis else 1 for d in range(arr.ndim)]))
                assert np.all(np.abs(g - want) <= tol * scale), f"{op} {shape} {axis}"


def test_scan_of_strided_views(scan_path):
    rng = np.random.default_rng(12)
    table = _table()
    base = rng.standard_normal((6, 4000)).astype(np.float32)
    t = table.from_numpy(base)
    views = [(table.permute(t, (1, 0)), base.T),                                              # transposed
             (table.basic_index(t, (slice(None, None, 2), slice(10, None, 3))), base[::2, 10::3]),  # sliced, stepped
             (table.basic_index(t, (slice(None, None, -1), slice(None, None, -2))), base[::-1, ::-2])]  # negative
    for v, ref in views:
        assert not table.is_contiguous(v)
        for axis in range(2):
            got = table.to_numpy(table.cumsum(v, axis))
            want = np.cumsum(ref.astype(np.float64), axis)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(ref.shape[axis]))
    # 0-d and axis None: a copy
    s = table.from_numpy(np.array(2.5, np.float32))
    assert table.to_numpy(table.cumsum(s, None)) == 2.5 and table.to_numpy(table.cumprod(s, 0)) == 2.5


def test_cumsum_through_the_core(scan_path):
    a = np.arange(-20, 20, dtype=np.int32).reshape(8, 5)
    t = _t(a)
    got = t.cumsum(0)
    assert got.dtype is coretorch.int64 and got.tolist() == np.cumsum(a, 0).tolist()
    assert _t(a > 0).cumsum(1).tolist() == np.cumsum(a > 0, 1).tolist()
    x = np.random.default_rng(13).standard_normal(5000)
    tx = _t(x, requires_grad=True) if _BE.device(0).fp64 else _t(x.astype(np.float32), requires_grad=True)
    y = tx.cumsum(0)
    np.testing.assert_allclose(y.detach().cpu().numpy(), np.cumsum(x), rtol=1e-4, atol=1e-3)
    (y * y).sum().backward()      # the backward is a flipped cumsum: the same kernels
    yy = np.cumsum(x)
    np.testing.assert_allclose(tx.grad.cpu().numpy(), np.flip(np.cumsum(np.flip(2 * yy))), rtol=1e-4, atol=1e-2)


def test_scan_chunking_rule():
    from types import SimpleNamespace

    from coretorch_opencl import scan
    dev = _BE.device(0)
    if dev.is_cpu:  # measured on PoCL: the row loop is as fast or faster in every shape (scan.py's table)
        assert all(scan.chunks(dev, r, n, np.float32) == 1 for r, n in ((1, 10 ** 6), (10, 10 ** 5), (1000, 1000)))
    gpu = SimpleNamespace(is_cpu=False, compute_units=100, ls=256)
    assert scan.chunks(gpu, 1, 10 ** 6, np.float32) == scan._MAX_CHUNKS      # one long row: split as far as allowed
    p = scan.chunks(gpu, 10, 10 ** 5, np.float32)
    assert 1 < p and 10 ** 5 // p >= scan._MIN_CHUNK
    assert scan.chunks(gpu, 10 ** 6, 10 ** 6, np.float32) == 1               # rows that fill the device
    assert scan.chunks(gpu, 1, 1000, np.float32) == 1                        # too short to split
    assert scan.chunks(gpu, 1, 10 ** 6, np.bool_) == 1


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.float16, np.bool_, np.uint8])
@pytest.mark.parametrize("shape,perm", [((256, 784), (1, 0)), ((3, 70, 33), (0, 2, 1)), ((5, 64, 100), (2, 1, 0)),
                                        ((100, 100), (1, 0)), ((130, 40), (1, 0))])
@pytest.mark.parametrize("blocks", ["registers (CPU)", "local-memory tiles (GPU)"])
def test_contiguous_of_transposed_views(dt, shape, perm, blocks, monkeypatch):
    """A (batched) transpose goes through a block kernel (matmul copies W.T with it): 8x8 register blocks on
    CPUs, 16x16 local-memory tiles on GPUs (forced here on whatever device runs the test); any other view goes
    through the elementwise copy.  All give numpy's result, bit for bit, for partial blocks and flipped/offset
    views."""
    if dt == np.float64 and not _BE.device(0).fp64:
        pytest.skip("the OpenCL device has no cl_khr_fp64")
    monkeypatch.setattr(_BE.device(0), "is_cpu", blocks.startswith("registers"))
    table = coretorch._backend.get_table(coretorch.device("opencl"))
    a = (np.random.default_rng(0).standard_normal(shape) * 10).astype(dt)
    v = table.permute(coretorch.from_numpy(a).to("opencl")._data, perm)
    launches = STATS["launches"]
    got = table.contiguous(v)
    assert STATS["launches"] == launches + 1
    assert np.array_equal(table.to_numpy(got), a.transpose(perm))
    w = table.basic_index(v, (slice(None, None, -1), slice(3, None)))
    assert np.array_equal(table.to_numpy(table.contiguous(w)), a.transpose(perm)[::-1, 3:])


_ROW_OPS = [(op, dt) for op in ["add", "sub", "mul", "div", "maximum", "minimum", "lt", "eq", "pow"]
            for dt in (np.float32, np.int64) if not (op == "div" and dt == np.int64)]  # int / int promotes in core


@pytest.mark.parametrize("op,dt", _ROW_OPS)
@pytest.mark.parametrize("shape", [(130, 70), (3, 5, 40), (1, 7)])
def test_row_broadcast_kernel_matches_numpy(op, dt, shape):
    """x op bias (the bias a vector over the last dim) runs as the "_r" kernel: one launch, numpy's result;
    a column broadcast (not a row) and a broadcast first operand take the general kernel with the same result."""
    rng = np.random.default_rng(1)
    x = rng.uniform(1, 9, shape).astype(dt)   # positive: pow stays defined for ints
    b = rng.uniform(1, 4, shape[-1:]).astype(dt)
    table = coretorch._backend.get_table(coretorch.device("opencl"))
    xd, bd = coretorch.from_numpy(x).to("opencl")._data, coretorch.from_numpy(b).to("opencl")._data
    launches = STATS["launches"]
    got = table.to_numpy(getattr(table, op)(xd, table.expand(bd, shape)))
    assert STATS["launches"] == launches + 1
    want = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "lt": "less",
                        "eq": "equal"}.get(op, op))(x, b)
    np.testing.assert_allclose(got, want.astype(got.dtype), rtol=1e-6)
    # in place, as linear's bias add does it
    y = coretorch.from_numpy(x.copy()).to("opencl")._data
    if op in ("add", "sub", "mul"):
        getattr(table, "i" + op)(y, table.expand(bd, shape))
        np.testing.assert_allclose(table.to_numpy(y), want, rtol=1e-6)
    col = rng.uniform(1, 4, shape[:-1] + (1,)).astype(dt)
    cd = coretorch.from_numpy(col).to("opencl")._data
    np.testing.assert_allclose(table.to_numpy(getattr(table, op)(xd, table.expand(cd, shape))),
                               getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
                                            "lt": "less", "eq": "equal"}.get(op, op))(x, col).astype(got.dtype),
                               rtol=1e-6)
