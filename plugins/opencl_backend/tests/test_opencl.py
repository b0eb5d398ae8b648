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
    np.testing.assert_allclose((t * 2 + t.exp()).cpu().numpy(), ref * 2 + np.exp(ref), rtol=1e-6)
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
    t[idx, [1, 1, 1]] = _t([1.0, 2.0, 3.0], dtype=coretorch.float64)
    x[idx, [1, 1, 1]] = [1.0, 2.0, 3.0]
    assert t.tolist() == x.tolist()
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
