"""bfloat16 as a real dtype on every device: storage, casts (round to nearest even, as ml_dtypes and c10), arithmetic
computed in float32 and rounded once, reductions accumulated in float32, autograd, save/load, PyTorch's errors."""
import io

import ml_dtypes
import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch.testing import available_devices

BF = np.dtype(ml_dtypes.bfloat16)
F32 = np.float32


def rng(seed=0):
    return np.random.default_rng(seed)


def bits_sample(n=4096, seed=0):
    """float32 values from random bit patterns (every exponent: subnormals, inf, NaN) plus exact ties."""
    r = rng(seed)
    u = r.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    ties = (r.integers(0, 2 ** 16, 512, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000  # halfway cases
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F7FFFFF, 0x00000001, 0x3F808000,
                        0x3F818000, 0x7F7F8000], np.uint32)
    return np.concatenate([u, ties, special]).view(F32)


def to_bf(v):
    with np.errstate(invalid="ignore", over="ignore"):  # numpy warns for NaN casts; PyTorch converts silently
        return np.asarray(v).astype(BF)


def host(t):
    """The values of t as a bfloat16 numpy array (Tensor.numpy() raises for bfloat16, as in PyTorch)."""
    return to_bf(t.float().cpu().numpy())


def same(a, b):
    """Bitwise equality of two bfloat16 arrays, any NaN matching any NaN."""
    a, b = np.asarray(a, BF), np.asarray(b, BF)
    na, nb = np.isnan(a.astype(F32)), np.isnan(b.astype(F32))
    return a.shape == b.shape and np.array_equal(na, nb) and np.array_equal(a.view(np.uint16)[~na],
                                                                            b.view(np.uint16)[~nb])


class TestDtype:
    def test_properties(self):
        d = torch.bfloat16
        assert isinstance(d, torch.dtype) and d.is_floating_point and d.is_signed and not d.is_complex
        assert d.itemsize == 2 and repr(d) == "coretorch.bfloat16"
        x = torch.ones(3, dtype=d)
        assert x.is_floating_point() and torch.is_floating_point(x) and x.element_size() == 2

    def test_promotion_in_ops(self, device):
        b = torch.ones(2, dtype=torch.bfloat16, device=device)
        h = torch.ones(2, dtype=torch.float16, device=device)
        f = torch.ones(2, device=device)
        assert (b + h).dtype is torch.float32
        assert (b + f).dtype is torch.float32
        assert (b * 2.5).dtype is torch.bfloat16 and (b + 1).dtype is torch.bfloat16
        assert (b + torch.ones(2, dtype=torch.int64, device=device)).dtype is torch.bfloat16
        assert (b + torch.tensor(1.0, device=device)).dtype is torch.bfloat16  # a 0-d float32 does not promote
        assert (torch.ones(2, dtype=torch.int32, device=device) + torch.tensor(1.0, dtype=torch.bfloat16,
                                                                                  device=device)).dtype \
            is torch.bfloat16

    def test_creation_and_conversions(self, device):
        x = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16, device=device)
        assert x.dtype is torch.bfloat16 and x.tolist() == [1.5, -2.25, 3.0]
        assert x[1].item() == -2.25 and type(x[1].item()) is float
        for meth, d in (("half", torch.float16), ("float", torch.float32), ("double", torch.float64),
                        ("bfloat16", torch.bfloat16)):
            if d is torch.float64 and device != "cpu":
                continue
            y = getattr(x, meth)()
            assert y.dtype is d and y.tolist() == [1.5, -2.25, 3.0]
        assert torch.ones(2, device=device).bfloat16().dtype is torch.bfloat16
        assert x.to(torch.int64).tolist() == [1, -2, 3]
        assert torch.zeros(2, 2, dtype=torch.bfloat16, device=device).tolist() == [[0.0, 0.0], [0.0, 0.0]]
        assert torch.full((2,), 1.00390625, dtype=torch.bfloat16, device=device).tolist() == [1.0, 1.0]  # a tie: even
        assert torch.arange(0, 4, dtype=torch.bfloat16, device=device).tolist() == [0.0, 1.0, 2.0, 3.0]

    def test_numpy_raises_as_pytorch(self):
        x = torch.ones(2, dtype=torch.bfloat16)
        with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
            x.numpy()

    def test_repr(self, device):
        x = torch.tensor([1.5, 2.3, -3.7], dtype=torch.bfloat16, device=device)
        r = repr(x)
        assert r.startswith("tensor([ 1.5000,  2.2969, -3.7031]") and r.endswith("dtype=coretorch.bfloat16)")

    def test_rand_in_unit_interval(self, device):
        u = host(torch.rand(20000, dtype=torch.bfloat16, device=device)).astype(F32)
        assert u.min() >= 0 and u.max() < 1


class TestCasts:
    def test_from_float32_round_to_nearest_even(self, device):
        v = bits_sample()
        got = torch.tensor(v, device=device).to(torch.bfloat16)
        assert same(host(got), to_bf(v))

    def test_from_float64_and_float16(self, device):
        v = rng(1).standard_normal(2000) * 10.0 ** rng(2).integers(-30, 30, 2000)
        if device == "cpu":
            got = torch.tensor(v, dtype=torch.float64).to(torch.bfloat16)
            assert same(host(got), v.astype(BF))
        h = rng(3).standard_normal(2000).astype(np.float16)
        assert same(host(torch.tensor(h, device=device).to(torch.bfloat16)), h.astype(F32).astype(BF))

    def test_to_float32_exact(self, device):
        b = to_bf(bits_sample())
        t = torch.tensor(b.astype(F32), device=device).to(torch.bfloat16)
        f = t.float().cpu().numpy()
        assert np.array_equal(np.isnan(f), np.isnan(b.astype(F32)))
        assert np.array_equal(f[~np.isnan(f)], b.astype(F32)[~np.isnan(f)])

    def test_to_integers_truncates(self, device):
        v = np.array([-3.75, -0.5, 0.5, 2.5, 127.0, 100.5], F32)
        t = torch.tensor(v, device=device).to(torch.bfloat16)
        assert t.to(torch.int32).tolist() == [-3, 0, 0, 2, 127, 100]
        assert t.to(torch.bool).tolist() == [True] * 6


class TestArithmetic:
    def operands(self, n=3000):
        r = rng(5)
        a = (r.standard_normal(n) * 4).astype(BF)
        b = (r.standard_normal(n) * 4).astype(BF)
        b[b == 0] = 1
        return a, b

    @pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])
    def test_binary_exact(self, device, op):
        a, b = self.operands()
        ta = torch.tensor(a.astype(F32), device=device).bfloat16()
        tb = torch.tensor(b.astype(F32), device=device).bfloat16()
        ref = getattr(np, {"sub": "subtract", "mul": "multiply"}.get(op, op))(a.astype(F32), b.astype(F32))
        got = getattr(torch, op)(ta, tb)
        assert got.dtype is torch.bfloat16
        assert same(host(got), ref.astype(BF))

    def test_with_python_scalars(self, device):
        a, _ = self.operands()
        ta = torch.tensor(a.astype(F32), device=device).bfloat16()
        assert same(host(ta * 2.5 + 1.25), ((a.astype(F32) * F32(2.5)).astype(BF).astype(F32) + F32(1.25)).astype(BF))

    @pytest.mark.parametrize("op", ["div", "exp", "tanh", "sigmoid", "sqrt", "rsqrt", "log"])
    def test_float_compute_then_round(self, device, op):
        a, b = self.operands()
        a = np.abs(a.astype(F32)).astype(BF) if op in ("sqrt", "rsqrt", "log") else a
        ta = torch.tensor(a.astype(F32), device=device).bfloat16()
        x = a.astype(np.float64)
        ref = {"div": lambda: x / b.astype(np.float64), "exp": lambda: np.exp(x), "tanh": lambda: np.tanh(x),
               "sigmoid": lambda: 1 / (1 + np.exp(-x)), "sqrt": lambda: np.sqrt(x), "rsqrt": lambda: 1 / np.sqrt(x),
               "log": lambda: np.log(x)}[op]()
        got = torch.div(ta, torch.tensor(b.astype(F32), device=device).bfloat16()) if op == "div" else \
            getattr(torch, op)(ta)
        assert got.dtype is torch.bfloat16
        g = host(got).astype(np.float64)
        r32 = ref.astype(F32).astype(BF).astype(np.float64)  # the float32 result rounded once
        fin = np.isfinite(r32)
        # at most one bfloat16 step from the once-rounded result (float32 functions differ by an ulp between
        # libraries; a chain of bfloat16 roundings would be off by several steps)
        assert np.all(np.abs(g[fin] - r32[fin]) <= np.abs(r32[fin]) * 2.0 ** -8 + 1e-38)
        assert np.mean(g[fin] == r32[fin]) > 0.97

    def test_reductions_accumulate_in_float32(self, device):
        v = (1 + rng(7).random(4096)).astype(BF)  # a bfloat16 running sum would stall at 256 (+1 rounds away)
        t = torch.tensor(v.astype(F32), device=device).bfloat16()
        ref = np.sum(v.astype(np.float64))
        s = t.sum()
        assert s.dtype is torch.bfloat16
        assert abs(s.item() - ref) <= ref * 2.0 ** -8
        m = t.mean()
        assert m.dtype is torch.bfloat16 and abs(m.item() - ref / 4096) <= 2 * 2.0 ** -8
        c = host(t.cumsum(0)).astype(np.float64)
        assert abs(c[-1] - ref) <= ref * 2.0 ** -8
        r2 = t.reshape(64, 64).sum(1)
        assert np.allclose(host(r2).astype(F32), v.astype(F32).reshape(64, 64).sum(1), rtol=2 ** -8)
        assert t.amax().item() == float(v.astype(F32).max())

    def test_matmul_in_float32(self, device):
        r = rng(9)
        a = r.standard_normal((33, 70)).astype(BF)
        b = r.standard_normal((70, 17)).astype(BF)
        got = torch.tensor(a.astype(F32), device=device).bfloat16() @ torch.tensor(b.astype(F32),
                                                                                    device=device).bfloat16()
        assert got.dtype is torch.bfloat16
        ref = (a.astype(np.float64) @ b.astype(np.float64))
        g = host(got).astype(np.float64)
        assert np.all(np.abs(g - ref) <= np.abs(ref) * 2.0 ** -8 + 1e-3)

    def test_softmax_and_loss(self, device):
        x = rng(11).standard_normal((8, 5)).astype(BF)
        t = torch.tensor(x.astype(F32), device=device).bfloat16()
        p = F.softmax(t, -1)
        assert p.dtype is torch.bfloat16
        ref = np.exp(x.astype(F32)) / np.exp(x.astype(F32)).sum(-1, keepdims=True)
        assert np.allclose(host(p).astype(F32), ref, rtol=2 ** -7, atol=1e-3)
        loss = F.cross_entropy(t, torch.tensor([0, 1, 2, 3, 4, 0, 1, 2], device=device))
        assert loss.dtype is torch.bfloat16
        assert abs(loss.item() - float(-np.log(ref[np.arange(8), [0, 1, 2, 3, 4, 0, 1, 2]]).mean())) < 0.03


class TestAutograd:
    def test_grads_in_bfloat16(self, device):
        r = rng(13)
        w = torch.tensor(r.standard_normal((4, 3)).astype(F32), device=device).bfloat16().requires_grad_()
        x = torch.tensor(r.standard_normal((5, 3)).astype(F32), device=device).bfloat16()
        y = (F.linear(x, w).tanh() * 2).sum()
        y.backward()
        assert w.grad.dtype is torch.bfloat16 and w.grad.shape == w.shape
        wf = w.detach().float().requires_grad_()
        (F.linear(x.float(), wf).tanh() * 2).sum().backward()
        assert np.allclose(w.grad.float().cpu().numpy(), wf.grad.cpu().numpy(), rtol=0.05, atol=0.05)

    def test_mixed_dtype_grads_keep_input_dtypes(self, device):
        a = torch.ones(3, dtype=torch.bfloat16, device=device, requires_grad=True)
        b = torch.ones(3, device=device, requires_grad=True)
        (a * b).sum().backward()
        assert a.grad.dtype is torch.bfloat16 and b.grad.dtype is torch.float32


class TestSerialization:
    def test_save_load_round_trip(self, device):
        v = bits_sample(256)
        x = torch.tensor(v, device=device).to(torch.bfloat16)
        buf = io.BytesIO()
        torch.save({"x": x, "d": torch.bfloat16}, buf)
        assert b'"dtype":"BF16"' in buf.getvalue()  # safetensors' own dtype name: readable by other tools
        buf.seek(0)
        out = torch.load(buf)
        assert out["d"] is torch.bfloat16 and out["x"].dtype is torch.bfloat16
        assert out["x"].device == x.device
        assert same(host(out["x"]), host(x))


@pytest.mark.parametrize("device", available_devices())
def test_sorting_family_orders_bfloat16_as_floats(device):
    """sort/topk/searchsorted/cummax/cummin/logcumsumexp on bfloat16 agree with the same values in float32 (opencl's
    sorting kernels once compared bfloat16's ushort storage as unsigned integers: negatives sorted last)."""
    torch.manual_seed(0)
    x = torch.randn(4, 9).to(torch.bfloat16)
    xf = x.float()
    xd = x.to(device)
    assert torch.sort(xd, 1).values.float().cpu().tolist() == torch.sort(xf, 1).values.tolist()
    assert torch.topk(xd, 3).values.float().cpu().tolist() == torch.topk(xf, 3).values.tolist()
    assert torch.argsort(xd, 1, stable=True).cpu().tolist() == torch.argsort(xf, 1, stable=True).tolist()
    seq = torch.sort(xd[0]).values
    assert torch.searchsorted(seq, xd).cpu().tolist() == torch.searchsorted(seq.float().cpu(), xf).tolist()
    for op in (torch.cummax, torch.cummin):
        assert op(xd, 1).values.float().cpu().tolist() == op(xf, 1).values.tolist()
    np.testing.assert_allclose(torch.logcumsumexp(xd, 1).float().cpu().numpy(),
                               torch.logcumsumexp(xf, 1).to(torch.bfloat16).float().numpy(), rtol=1e-2)
