"""bfloat16 in the OpenCL kernels: stored as ushort, loaded to float and stored rounded to nearest even in every kernel
family (elementwise layouts, transposed copies, reductions, scans, indexing, arg reductions, matmul, nn kernels)."""
import ml_dtypes
import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F

BF = np.dtype(ml_dtypes.bfloat16)
D = "opencl"


def dev(a):
    return torch.tensor(np.asarray(a, np.float32), device=D).to(torch.bfloat16)


def back(t):
    return t.float().cpu().numpy()


def ref_bf(a):
    return np.asarray(a, np.float32).astype(BF).astype(np.float32)


@pytest.fixture
def data():
    return np.random.default_rng(0).standard_normal((48, 40)).astype(BF).astype(np.float32)


def test_codegen_tables():
    from coretorch_opencl import codegen as cg
    torch.zeros(1, dtype=torch.bfloat16, device=D)  # bfloat16 joins the tables on its first use (alone, this test)
    assert cg.stype(BF) == "ushort" and cg.ctype(BF) == "float" and cg.tag(BF) == "bf16" and cg.is_float(BF)
    assert cg.load(BF, "p", "i") == "ct_bf2f(p[i])"
    assert "ct_f2bf" in cg.store(BF, "p", "i", "v")


def test_strided_layouts(data):
    x = dev(data)
    assert np.array_equal(back(x.t() * 2), ref_bf(data.T * 2))               # transposed operand, strided kernel
    assert np.array_equal(back(x.t().contiguous()), data.T)                   # the blocked transpose (ushort bits)
    assert np.array_equal(back(x[::3, 1::2] + 1), ref_bf(data[::3, 1::2] + 1))  # a sliced view
    assert np.array_equal(back(x + dev(data[0])), ref_bf(data + data[0]))     # a row broadcast (the "_r" kernel)
    assert np.array_equal(back(x + dev(data[:, :1])), ref_bf(data + data[:, :1]))  # a column broadcast ("_2")
    assert np.array_equal(back(x.flip(0)), data[::-1])


def test_reductions_and_scans(data):
    x = dev(data)
    assert np.allclose(back(x.sum(0)), data.sum(0), rtol=2 ** -8, atol=1e-2)
    assert np.allclose(back(x.sum(1)), data.sum(1), rtol=2 ** -8, atol=1e-2)
    assert np.array_equal(back(x.amax(1)), data.max(1)) and np.array_equal(back(x.amin(0)), data.min(0))
    assert np.array_equal(x.argmax(1).cpu().numpy(), data.argmax(1))
    c = back(x.cumsum(1))
    assert np.allclose(c, np.cumsum(data, 1), rtol=2 ** -7, atol=2e-2)
    big = dev(np.ones(20000))                     # a float accumulator: a bfloat16 one would stop at 256
    assert big.sum().item() == 19968.0 == float(ref_bf(20000.0))


def test_indexing(data):
    x = dev(data)
    idx = torch.tensor([3, 0, 3, 7], device=D)
    assert np.array_equal(back(x[idx]), data[[3, 0, 3, 7]])
    acc = torch.zeros(8, 40, dtype=torch.bfloat16, device=D).index_add(0, idx, x[:4])  # the accumulating put
    ref = np.zeros((8, 40), np.float32)
    np.add.at(ref, [3, 0, 3, 7], data[:4])
    assert np.allclose(back(acc), ref, rtol=2 ** -7, atol=1e-2)
    y = x.clone()
    y[y > 0] = 0.5
    assert np.array_equal(back(y), np.where(data > 0, 0.5, data))


def test_matmul_and_nn(data):
    x = dev(data)
    w = dev(data[:16])
    got = back(F.linear(x, w))
    ref = data @ data[:16].T
    assert np.allclose(got, ref, rtol=2 ** -7, atol=0.05)
    s = back(F.softmax(x, -1))
    e = np.exp(data - data.max(-1, keepdims=True))
    assert np.allclose(s, e / e.sum(-1, keepdims=True), rtol=2 ** -7, atol=1e-3)


def test_nan_inf_and_rounding():
    v = np.array([np.nan, np.inf, -np.inf, 3.3895314e38, 1.00390625, 1.01171875, -0.0, 1e-40], np.float32)
    t = torch.tensor(v, device=D).to(torch.bfloat16)
    with np.errstate(invalid="ignore", over="ignore"):
        r = v.astype(BF)
    got = back(t)
    assert np.isnan(got[0]) and np.array_equal(got[1:], r[1:].astype(np.float32))
    assert np.signbit(got[6])
    assert back(t[3:4] * 2)[0] == np.inf  # overflow past bfloat16's max rounds to inf
