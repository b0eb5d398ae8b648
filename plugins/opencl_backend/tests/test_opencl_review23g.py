"""Review 23g: the opencl backend against the cpu backend, op by op, at the edges (dtypes, 0-d/empty/odd sizes,
non-contiguous operands, views, out=, reductions, scans, sorting, indexing, matmul, integer corner cases).  Each test
runs the op on both devices and asserts the same values, dtypes and shapes (float within rounding), or the same
error type; where PyTorch 2.13's value is the spec it is written down and said so."""
from __future__ import annotations

import re

import numpy as np
import pytest

import coretorch

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


def _both(fn, *args):
    """``fn`` on the cpu operands and on their opencl copies: (cpu result, opencl result moved to the cpu)."""
    a = fn(*args)
    b = fn(*[x.to("opencl") if isinstance(x, coretorch.Tensor) else x for x in args])
    return a, (b.cpu() if isinstance(b, coretorch.Tensor) else b)


def _same(a, b, exact=True):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), (a.dtype, b.dtype, a.shape, b.shape)
    x, y = a.double().numpy() if a.dtype == coretorch.bfloat16 else a.numpy(), \
        b.double().numpy() if b.dtype == coretorch.bfloat16 else b.numpy()
    if exact:
        np.testing.assert_array_equal(x, y)
    else:
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_vector_width_is_capped_where_pocl_compiles_for_a_cpu_without_avx512():
    """PoCL on a Zen 4/5 host reported a preferred float width of 16 (from the host's AVX-512 features) while
    compiling for ``znver3`` (AVX2; PoCL's device string ends ``HSTR: pthread-x86_64-unknown-linux-gnu-znver3``).
    Before: the 16-wide "_v" kernels were built anyway: a float32 ``sqrt`` aborted the whole process in LLVM
    ("Cannot select fsqrt"), ``neg``/``add`` raised INVALID_KERNEL_NAME.  The width (``Device.float_lanes``) is now
    8 where the compiler targets no AVX-512; other devices keep their preferred width."""
    dev = _BE.device(0)
    pref = int(dev.cldev.preferred_vector_width_float)
    m = re.search(r"HSTR: \S*x86_64\S*?-gnu-(\S+)", dev.cldev.version or "")
    if m is not None and m.group(1).startswith(("znver1", "znver2", "znver3", "haswell", "broadwell", "x86-64-v3")):
        assert dev.float_lanes == min(pref, 8)
    assert dev.float_lanes <= max(pref, 4)


def test_float32_vector_kernels_run_and_match_cpu():
    """The contiguous float32 vector kernels (neg, sqrt, rsqrt, relu, add/sub/mul/div, their scalar forms, fill,
    casts) on sizes around the vector width. Before (on the Zen host above): the process aborted in sqrt."""
    for n in (1, 3, 8, 17, 257, 4099):
        x = coretorch.arange(n, dtype=coretorch.float32) / 7 + 0.5
        for fn in (coretorch.neg, coretorch.sqrt, coretorch.rsqrt, coretorch.relu, lambda t: t + t, lambda t: t * 2.5,
                   lambda t: t / 3, lambda t: t - 1, lambda t: t.to(coretorch.float32), lambda t: t.clone().fill_(2)):
            _same(*_both(fn, x), exact=True)


@pytest.mark.parametrize("dt", [coretorch.float16, coretorch.bfloat16])
def test_half_sum_of_long_rows_rounds_once(dt):
    """PyTorch sums float16/bfloat16 in float and rounds the result once. Before: a reduction of more than 4096
    elements over few rows ran in chunks whose partial sums were stored in the result's dtype: a (4099, 3) bfloat16
    column sum of 125.85 came out 125.5 (cpu: 126), whole-tensor sums of the transposed layout were 1 ulp off."""
    rng = np.random.default_rng(7)
    base = coretorch.tensor(np.round(rng.standard_normal((3, 4099)) * 3, 2), dtype=dt)
    for x in (base.t(), base, base[:, ::1].t().contiguous()):
        exact = x.double()
        for dims in ((0,), (1,), (0, 1)):
            want = exact.sum(dims).to(dt)            # float64 sum, rounded once
            a, b = _both(lambda t, dims=dims: t.sum(dims), x)
            _same(a, want)
            _same(b, want)
        a, b = _both(lambda t: t.mean(0), x)
        _same(a, b)


@pytest.mark.parametrize("dt", [coretorch.float16, coretorch.bfloat16])
def test_half_cumprod_accumulates_in_float32(dt):
    """PyTorch's CPU cumprod of float16/bfloat16 accumulates in float (acc_type): a running product past float32's
    range stays inf, and inf * 0 is nan. Values from PyTorch 2.13: [inf] * 6 + [nan]. Before: the cpu backend
    accumulated in float64 (bfloat16: 9.9e34, 9.98e30, ... then 0.0; float16: inf ... then 0.0), the opencl one
    (float32, right) disagreed with it."""
    x = coretorch.tensor([60000.0] * 9 + [1e-4] * 5 + [0.0], dtype=dt)
    for dev in ("cpu", "opencl"):
        r = x.to(dev).cumprod(0)[8:].cpu().float()
        assert r[:6].tolist() == [float("inf")] * 6 and r[6].isnan().item(), (dev, r)
    rng = np.random.default_rng(3)
    y = coretorch.tensor(np.round(rng.standard_normal((257, 3)) * 3, 2), dtype=dt)
    for d in (0, 1):
        a, b = _both(lambda t, d=d: t.cumprod(d), y)
        assert a.dtype == b.dtype == dt
        np.testing.assert_allclose(a.float().numpy(), b.float().numpy(), rtol=1e-2, atol=0)   # (nan == nan here)


@pytest.mark.parametrize("dev", ["cpu", "opencl"])
def test_a_number_first_past_the_float_range_rounds_as_c10_converts_it(dev):
    """PyTorch wraps a Python number given first (``70000 - half``, ``torch.pow(2**40, x)``) and converts it to the
    op's dtype without ``full``'s overflow check: past the range it is inf (or the largest finite value where it
    rounds to it). Values from PyTorch 2.13. Before: RuntimeError "value cannot be converted to type c10::Half
    without overflow" on both devices."""
    inf = float("inf")
    h = coretorch.tensor([2.0, -1.5, 0.0], dtype=coretorch.float16, device=dev)
    assert (70000.0 - h).tolist() == [inf, inf, inf]
    assert (2 ** 40 - h).tolist() == [inf, inf, inf]
    assert (65510 - h).tolist() == [65504.0, 65504.0, 65504.0]          # rounds down to the largest half
    assert coretorch.pow(2 ** 40, h).tolist() == [inf, 0.0, 1.0]
    r = coretorch.xlogy(70000.0, h).tolist()
    assert r[0] == inf and r[1] != r[1] and r[2] == -inf
    f = coretorch.tensor([1.0, 2.0], device=dev)
    assert (1e39 - f).tolist() == [inf, inf] and (-1e39 * f).tolist() == [-inf, -inf]
    b = coretorch.tensor([1.0], dtype=coretorch.bfloat16, device=dev)
    assert (3.3950e38 - b).item() == 2.0 ** 128 - 2.0 ** 120 and (1e39 - b).item() == inf
    assert (1e300 - coretorch.tensor([1.0], dtype=coretorch.float64, device=dev)).item() == 1e300
    assert (2 ** 40 - coretorch.tensor([1], dtype=coretorch.int8, device=dev)).tolist() == [-1]   # ints wrap


@pytest.mark.parametrize("dev", ["cpu", "opencl"])
def test_an_int_number_with_a_half_tensor_is_rounded_to_half_as_a_float_one(dev):
    """PyTorch converts the Python number of ``xlogy(half, 2**40)`` (an op without float op math) to half: inf, so
    the result is [inf, -inf, inf]; values from PyTorch 2.13. Before: the cpu backend kept an int number exact
    (scipy's xlogy has no half loop: it took 2**40 in float32) and gave [55.44, -41.59, 2.77]; opencl gave inf."""
    inf = float("inf")
    h = coretorch.tensor([2.0, -1.5, 0.1], dtype=coretorch.float16, device=dev)
    assert coretorch.xlogy(h, 2 ** 40).tolist() == [inf, -inf, inf]
    assert coretorch.xlogy(h, 70000).tolist() == [inf, -inf, inf]
    assert coretorch.xlogy(h, 3).tolist() == coretorch.xlogy(h, 3.0).tolist()
    b = coretorch.tensor([1.0], dtype=coretorch.bfloat16, device=dev)
    assert (b + 257).item() == 256.0 and (b == 257).item() is False   # 257 is 256 in bfloat16; 1 + 256 -> 256


@pytest.mark.parametrize("rate", [-1.0, float("nan")])
def test_poisson_of_a_negative_or_nan_rate_raises_on_opencl_too(rate):
    """PyTorch: poisson of a negative or NaN rate raises RuntimeError("invalid Poisson rate, expected rate to be
    non-negative"); the cpu backend did. Before: opencl had no check and gave NaN silently; now the device queues
    the check (as bernoulli's probabilities), reported at the next host read."""
    x = coretorch.tensor([rate, 2.0], device="opencl")
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        coretorch.poisson(x).tolist()
    assert coretorch.poisson(coretorch.tensor([0.0, 0.0], device="opencl")).tolist() == [0.0, 0.0]   # usable after


@pytest.mark.parametrize("dev", ["cpu", "opencl"])
@pytest.mark.parametrize("q", [1.5, -0.1, float("nan")])
def test_quantile_of_a_q_tensor_outside_0_1_raises(dev, q):
    """PyTorch: quantile/nanquantile with a q tensor value outside [0, 1] (NaN too) raise RuntimeError("quantile() q
    values must be in the range [0, 1]"). Before: opencl skipped the check and returned a value (q = 1.5 gave 4.0);
    the cpu backend let NaN through to a gather IndexError-like RuntimeError."""
    x = coretorch.tensor([1.0, 2.0, 3.0, 4.0], device=dev)
    for fn in (coretorch.quantile, coretorch.nanquantile):
        with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
            fn(x, coretorch.tensor([0.5, q], device=dev)).tolist()
    assert coretorch.quantile(x, coretorch.tensor([0.5], device=dev)).tolist() == [2.5]   # the device usable after


@pytest.mark.parametrize("dev", ["cpu", "opencl"])
def test_repeat_interleave_negative_repeats_with_output_size_raises(dev):
    """PyTorch: a negative repeat raises RuntimeError("repeats can not be negative"), output_size given or not.
    Before: on opencl, with an output_size matching the repeats' sum ([2, -1, 1, 0] -> 2), rows came back
    silently ([1.0, 2.0])."""
    x = coretorch.tensor([1.0, 2.0, 3.0, 4.0], device=dev)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        coretorch.repeat_interleave(x, coretorch.tensor([2, -1, 1, 0], device=dev), output_size=2).tolist()
    r = coretorch.repeat_interleave(x, coretorch.tensor([2, 0, 1, 0], device=dev), output_size=3)
    assert r.tolist() == [1.0, 1.0, 3.0]
