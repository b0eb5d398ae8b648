"""Review 20h (eager): reductions and scans (dims, keepdim, dtype=, out=, empty inputs, NaN, 0-d inputs and their
gradients), on every installed device.  Each test states what PyTorch 2.13 does (documented facts or numpy values)
and what coretorch did before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


@pytest.mark.parametrize("dim", [1, -2, (1,), (0, 0), (0, -1)])
@pytest.mark.parametrize("fn", [torch.linalg.vector_norm, torch.linalg.norm])
def test_vector_norm_of_a_0d_tensor_checks_its_dims(device, fn, dim):
    """A 0-d tensor has the dims 0 and -1 only, each once: PyTorch's ``linalg.vector_norm(x0d, 2, 1)`` raises
    IndexError (out of range) and ``dim=(0, 0)`` or ``(0, -1)`` RuntimeError (a dim repeated), as ``sum`` does.
    coretorch dropped any ``dim`` of a 0-d input and returned ``|x|``."""
    x = torch.tensor(2.0, device=device)
    err = IndexError if dim in (1, -2, (1,)) else RuntimeError
    with pytest.raises(err):
        fn(x, 2, dim)
    with pytest.raises(err):
        torch.sum(x, dim)
    assert fn(x, 2, 0).item() == fn(x, 2, (-1,)).item() == 2.0


def test_reductions_into_a_wider_out_compute_in_its_dtype(device):
    """PyTorch's std/var/nansum/nanmean ``out=`` kernels cast a float input to the out tensor's dtype first, and
    logsumexp sums its shifted exp in the out's dtype: into a float64 out, var([1, 1 + 2**-20]) of float32 is the
    float64 value 2**-41 exactly and logsumexp([0, -30]) keeps exp(-30) (1 + 9.4e-14 is below float32's resolution);
    mean into a float16 out is the float32 mean rounded once (PyTorch's mean_out).  coretorch computed each in the
    input's float32 and cast the result (var 2**-41 only up to float32 rounding of the squares, nanmean/nansum of
    1 + 2**-30 gave 1.0, logsumexp gave 0.0) and the half mean from half-rounded inputs."""
    def t(v, dt=torch.float32):
        return torch.tensor(v, dtype=dt, device=device)

    def e(dt):
        return torch.empty(0, dtype=dt, device=device)
    a = t([1.0, 1.0 + 2.0 ** -20])
    assert torch.var(a, 0, correction=0, out=e(torch.float64)).item() == 2.0 ** -42
    assert torch.std(a, 0, correction=0, out=e(torch.float64)).item() == 2.0 ** -21
    b = t([1.0, 2.0 ** -30])
    assert torch.nansum(b, 0, out=e(torch.float64)).item() == 1.0 + 2.0 ** -30
    assert torch.nanmean(b, 0, out=e(torch.float64)).item() == (1.0 + 2.0 ** -30) / 2
    r = torch.logsumexp(t([0.0, -30.0]), 0, out=e(torch.float64)).item()
    assert r == pytest.approx(float(np.log(1.0 + np.float64(np.exp(np.float32(-30.0))))), rel=1e-12)
    # a float32 mean of 1, 1, 1 + 3 * 2**-11 (= 1 + 2**-11, a half tie) rounds to 1.0 in float16 ...
    c = t([1.0, 1.0, 1.0 + 3 * 2.0 ** -11])
    assert torch.mean(c, 0, out=e(torch.float16)).item() == 1.0
    # (... where rounding the inputs to half first gives 1 + 2**-10 over 3 with another rounding)
    assert torch.mean(c.half(), 0).item() == 1.0 + 2.0 ** -10


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any_out_takes_bool_or_uint8(device, op):
    """PyTorch's all/any out= kernels write into a bool or a uint8 out whatever the input's dtype (a uint8 input
    into a bool out gives truth values) and raise "all only supports bool tensor for result, got: Float" for any
    other out.  coretorch raised "result type Byte can't be cast to the desired output type Bool" for a uint8 input
    into a bool out and wrote 0/1 into float or int64 outs."""
    fn = getattr(torch, op)
    x = torch.tensor([[1, 0], [2, 3]], dtype=torch.uint8, device=device)
    want = [False, True] if op == "all" else [True, True]
    o = torch.empty(0, dtype=torch.bool, device=device)
    fn(x, 1, out=o)
    assert o.dtype is torch.bool and o.tolist() == want
    o = torch.empty(0, dtype=torch.bool, device=device)
    fn(x, out=o)
    assert o.item() is (op == "any")
    o = torch.empty(0, dtype=torch.uint8, device=device)
    fn(x.float(), 1, out=o)
    assert o.dtype is torch.uint8 and o.tolist() == [int(w) for w in want]
    for src in (x, x.float(), x.bool()):
        for dt in (torch.float32, torch.int64):
            with pytest.raises(RuntimeError, match=f"{op} only supports bool tensor for result"):
                fn(src, 1, out=torch.empty(0, dtype=dt, device=device))


@pytest.mark.parametrize("p", [2, 3, 0.5, -1])
def test_bfloat16_vector_norms_round_once(device, p):
    """PyTorch computes a bfloat16 vector norm in float32 and rounds the result once (as for float16):
    ``vector_norm(bf16([60000] * 3))`` is bf16(sqrt(3) * 59904 = 103757.4) = 103936.  coretorch squared, summed and
    took the root in bfloat16 steps (103424, one bfloat16 ulp off; p=3 and 0.5 off in most draws)."""
    rng = np.random.RandomState(0)
    for a in [np.full(3, 60000.0), *(rng.randn(7) * s for s in (1.0, 100.0, 1e4) for _ in range(5))]:
        x = torch.tensor(a, device=device).to(torch.bfloat16)
        got = torch.linalg.vector_norm(x, p)
        xf = x.float().cpu().numpy().astype(np.float64)
        ref = torch.tensor(float((np.abs(xf) ** p).sum() ** (1.0 / p)), dtype=torch.float32).to(torch.bfloat16)
        assert got.dtype is torch.bfloat16 and got.float().item() == ref.float().item(), a
        assert torch.norm(x, p).float().item() == ref.float().item()


def test_bfloat16_mean_rounds_once(device):
    """PyTorch's mean of a bfloat16 tensor sums in float32, divides and rounds once (as for float16; std_mean's mean
    too): the float32 mean of the bfloat16 values, rounded to bfloat16.  coretorch rounded the
    bfloat16 sum before dividing (two roundings: 7 of 40 random rows one ulp off)."""
    rng = np.random.RandomState(0)
    a = rng.randn(40, 9) * np.array([1, 100, 1e3, 1, 1, 1, 1, 1, 1])
    x = torch.tensor(a, device=device).to(torch.bfloat16)
    ref = torch.tensor(x.float().cpu().numpy().astype(np.float64).mean(1).astype(np.float32)).to(torch.bfloat16)
    for got in (x.mean(1), torch.std_mean(x, 1)[1], torch.mean(x, (1,))):
        assert got.dtype is torch.bfloat16
        np.testing.assert_array_equal(got.float().cpu().numpy(), ref.float().numpy())
