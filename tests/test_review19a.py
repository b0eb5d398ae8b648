"""Review 19a: precision, range and dtype of eager results (silent wrong values from an intermediate dtype, a
sequential accumulation or a range limit), on every installed device.  Each test states what PyTorch 2.13 gives
(numpy/scipy/math values or documented facts) and what coretorch gave before the fix."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch


def _np(t):
    return t.detach().cpu().numpy()


def _exact_sum(a, axis=None):
    """math.fsum over ``axis`` (an int, a tuple or None), correctly rounded to float64."""
    a = np.asarray(a, dtype=np.float64)
    axes = tuple(range(a.ndim)) if axis is None else (axis,) if isinstance(axis, int) else axis
    rest = [d for d in range(a.ndim) if d not in axes]
    b = a.transpose(rest + list(axes)).reshape([a.shape[d] for d in rest] + [-1])
    return np.apply_along_axis(math.fsum, -1, b) if rest else np.float64(math.fsum(b))


def _rel(got, ref):
    return float(np.max(np.abs(np.asarray(got, np.float64) - ref) / np.abs(ref)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_long_float_sums_are_cascaded(device, dtype):
    """PyTorch sums floats in a cascade (a few ulp whatever the length): 20000 float32 0.1's sum to 2000.0004 over
    rows, columns or a transposed layout.  Before: the cpu backend added row after row over a leading axis (numpy's
    reduction: ``full((20000, 3), 0.1).sum(0)`` = 1999.66, 1.7e-4 off; a float32 bias gradient of a long batch the
    same), and the opencl kernels added a work-item's whole row or ~1000-long chunk in order (``sum(1)`` of
    (300, 20000): 1999.66; ``sum()`` of 100000: 9999.90; ``trace`` of a 20000-diagonal: 1999.98)."""
    tol = 3e-6 if dtype is torch.float32 else 1e-13
    cases = [(torch.full((20000, 3), 0.1, dtype=dtype, device=device), lambda x: x.sum(0), 0),
             (torch.full((3, 20000), 0.1, dtype=dtype, device=device), lambda x: x.sum(1), 1),
             (torch.full((300, 20000), 0.1, dtype=dtype, device=device), lambda x: x.sum(1), 1),
             (torch.full((300, 20000), 0.1, dtype=dtype, device=device).t(), lambda x: x.sum(0), 0),
             (torch.full((3, 300), 0.1, dtype=dtype, device=device).t(), lambda x: x.sum(0), 0),
             (torch.full((100000,), 0.1, dtype=dtype, device=device), lambda x: x.sum(), None),
             (torch.full((100000,), 0.1, dtype=dtype, device=device), lambda x: x.nansum(), None),
             (torch.full((40, 50, 6), 0.1, dtype=dtype, device=device), lambda x: x.sum((0, 1)), (0, 1)),
             (torch.full((40, 6, 50), 0.1, dtype=dtype, device=device), lambda x: x.sum((0, 2), keepdim=True),
              (0, 2))]
    for x, fn, axis in cases:
        r = fn(x)
        ref = _exact_sum(_np(x), axis)
        assert r.dtype == dtype
        assert _rel(_np(r).reshape(np.shape(ref)), ref) < tol, (tuple(x.shape), _np(r).ravel()[:3])
    m = torch.full((300, 20000), 0.1, dtype=dtype, device=device).mean(1)
    assert _rel(_np(m), np.float64(np.array(0.1, _np(m).dtype))) < tol
    d = torch.eye(20000, dtype=dtype, device=device) * 0.1
    assert _rel(_np(torch.trace(d)), _exact_sum(np.full(20000, np.array(0.1, _np(d).dtype)))) < tol


def test_long_float_sums_keep_inf_and_nan(device):
    """The compensated / blocked sums still propagate inf and NaN as a plain sum (PyTorch): a column with one inf
    sums to inf, with inf and -inf to NaN, with a NaN to NaN; a finite column beside them is exact."""
    a = np.full((5000, 4), 0.5, np.float32)
    a[100, 0] = np.inf
    a[10, 1], a[4000, 1] = np.inf, -np.inf
    a[2500, 2] = np.nan
    for x, dim in ((torch.tensor(a, device=device), 0), (torch.tensor(a.T.copy(), device=device), 1)):
        r = _np(x.sum(dim))
        assert r[0] == np.inf and np.isnan(r[1]) and np.isnan(r[2]) and r[3] == 2500.0, r


def test_float32_bias_gradient_of_a_long_batch(device):
    """PyTorch's bias gradient of ``linear`` is a cascaded column sum: a (20000, 3) gradient of 0.1 gives 2000.0.
    Before: 1999.66 on cpu (numpy's einsum / axis-0 reduction adding row after row)."""
    x = torch.zeros(20000, 4, device=device)
    w = torch.zeros(3, 4, device=device)
    b = torch.zeros(3, device=device, requires_grad=True)
    y = torch.nn.functional.linear(x, w, b)
    g = torch.full_like(y, 0.1)
    y.backward(g)
    assert _rel(_np(b.grad), _exact_sum(_np(g), 0)) < 3e-6, _np(b.grad)


def test_lgamma_of_subnormal_inputs(device):
    """C's lgamma (PyTorch) of a subnormal x is -log|x|: lgamma(1e-310) = 713.80, lgamma(5e-324) = 744.44 (and
    -1e-310 the same).  Before: inf on cpu (scipy's gammaln overflows below ~5e-309); poles and infinities stay inf."""
    v = [1e-310, -1e-310, 5e-324, 2e-308, 0.0, -0.0, -1.0, -2.0, math.inf, -math.inf, 0.5]
    r = _np(torch.lgamma(torch.tensor(v, dtype=torch.float64, device=device)))
    want = [math.lgamma(a) if a not in (0.0, -1.0, -2.0) and math.isfinite(a) else math.inf for a in v]
    np.testing.assert_allclose(r, want, rtol=1e-14)
    assert _np(torch.special.gammaln(torch.tensor([1e-310], dtype=torch.float64, device=device)))[0] == \
        pytest.approx(713.8013788281542, rel=1e-14)


def test_float16_sinc_rounds_once(device):
    """PyTorch computes a float16 sinc in float32 and rounds once: sinc(1) = sin(pi) / pi rounds to 0 (|r| < 6e-8),
    sinc(0.5) = 2 / pi.  Before: the cpu backend ran numpy's sinc in float16 (pi * x rounded to half): sinc(1),
    sinc(2), sinc(-1) were 3.1e-4."""
    v = np.array([1.0, 2.0, -1.0, 0.5, 0.25, 3.5, 0.0, 1e-3], np.float16)
    r = _np(torch.sinc(torch.tensor(v, device=device)))
    assert r.dtype == np.float16
    want = np.sinc(v.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(r.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=6e-8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_weight_and_bias_gradients_of_many_rows(device, dtype):
    """PyTorch's layer-norm weight/bias gradients are cascaded column sums over the rows: a gradient of 0.1 over
    20000 rows gives a bias gradient of 2000.0 (float32: within a few ulp).  Before: opencl's fused backward added
    the rows in order, 1999.66 in float32."""
    tol = 3e-6 if dtype is torch.float32 else 1e-13
    for d in (3, 40):
        ln = torch.nn.LayerNorm(d).to(device).to(dtype)
        x = torch.tensor(np.random.default_rng(d).normal(size=(20000, d)), dtype=dtype, device=device)
        z = ln(x)
        g = torch.full_like(z, 0.1)
        z.backward(g)
        assert _rel(_np(ln.bias.grad), _exact_sum(_np(g), 0)) < tol, _np(ln.bias.grad)[:2]
        xh = _np(z).astype(np.float64)  # (weight 1, bias 0: z is x-hat)
        want = _exact_sum(_np(g).astype(np.float64) * xh, 0)
        assert np.abs(_np(ln.weight.grad) - want).max() < tol * 2000 + (2e-3 if dtype is torch.float32 else 1e-9)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_float_broadcast_gradients_accumulate_in_float32(device, dtype):
    """PyTorch sums a half/bfloat16 gradient back to a broadcast operand's shape in float32 and rounds once: a
    (20000, 3) gradient of 0.1 gives a bias gradient of 2000 (the float32 sum of the half values, rounded).  Before:
    1993 in float16 on cpu (the kernel added half to half: sum_to calls it directly, unlike ``Tensor.sum``)."""
    g = torch.full((20000, 3), 0.1, dtype=dtype, device=device)
    want = np.float32(_exact_sum(_np(g.float()), 0)[0])
    for make in (lambda b: torch.zeros(20000, 3, dtype=dtype, device=device) + b,
                 lambda b: torch.nn.functional.linear(torch.zeros(20000, 4, dtype=dtype, device=device),
                                                      torch.zeros(3, 4, dtype=dtype, device=device), b)):
        b = torch.zeros(3, dtype=dtype, device=device, requires_grad=True)
        make(b).backward(g)
        assert b.grad.dtype == dtype
        np.testing.assert_array_equal(_np(b.grad.float()), np.full(3, float(torch.tensor(want).to(dtype).float())))


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-13), (torch.float32, 1e-6)])
def test_igammac_for_small_a_and_x_keeps_its_digits(device, dtype, tol):
    """PyTorch's igammac (Cephes') takes Q(a, x) for x <= 1.1 and small a from its own series, never 1 - P where P
    is close to 1: Q(1e-10, 0.5) = 5.5977e-11, Q(1e-300, 1e-300) = 6.902e-298 (scipy's values).  Before: opencl
    computed 1 - P: 5.5977e-11 * (1 + 3.5e-6) in float64, -2.4e-14 (negative) for (1e-300, 1e-300), and in float32
    7.2e-7 for Q(1e-10, 0.5) and 3.8e-3 off for Q(1e-5, 0.1)."""
    sp = pytest.importorskip("scipy.special")
    a = np.array([1e-10, 1e-5, 0.01, 0.3, 1.0, 1e-3, 0.5, 1e-20, 0.9, 1e-3, 1.05, 50.0, 0.2, 0.15, 0.19, 1.2, 0.8])
    x = np.array([0.5, 0.1, 1e-3, 0.9, 1.05, 1e-8, 1e-10, 1.0, 0.6, 0.7, 1.0, 49.0, 1.1, 0.3, 1.0, 1.1, 0.75])
    npdt = np.float64 if dtype is torch.float64 else np.float32
    a, x = a.astype(npdt), x.astype(npdt)
    ta, tx = torch.tensor(a, device=device), torch.tensor(x, device=device)
    q = _np(torch.special.gammaincc(ta, tx)).astype(np.float64)
    p = _np(torch.special.gammainc(ta, tx)).astype(np.float64)
    np.testing.assert_allclose(q, sp.gammaincc(a.astype(np.float64), x.astype(np.float64)), rtol=tol)
    np.testing.assert_allclose(p, sp.gammainc(a.astype(np.float64), x.astype(np.float64)), rtol=tol)
    if dtype is torch.float64:
        tiny = torch.tensor([1e-300], dtype=dtype, device=device)
        assert _np(torch.special.gammaincc(tiny, tiny))[0] == pytest.approx(6.901983122333121e-298, rel=1e-13)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_bessel_i_of_huge_arguments(device, dtype):
    """i0e(x) and i1e(x) tend to 1 / sqrt(2 pi x): i0e(3.4e38) = 2.1636e-20 (float32), i1e(1e308) = 3.989e-155;
    i0(3.4e38) overflows to inf.  Before: opencl took rsqrt(2 pi x) with 2 pi x overflowing: 0 for i0e/i1e and NaN
    (0 * inf) for i0 in float32, 0 for i0e(1e308) in float64."""
    big = [3.4e38, 1e38] + ([1e300, 1e308] if dtype is torch.float64 else [])
    t = torch.tensor(big, dtype=dtype, device=device)
    want = 1 / np.sqrt(2 * np.pi) / np.sqrt(_np(t).astype(np.float64))
    for fn in (torch.special.i0e, torch.special.i1e):
        np.testing.assert_allclose(_np(fn(t)).astype(np.float64), want, rtol=1e-6)
    assert np.all(_np(torch.special.i0(t)) == np.inf) and np.all(_np(torch.special.i1(t)) == np.inf)


def test_ndtri_of_subnormal_probabilities(device):
    """ndtri(5e-324) = -38.4674 and float32 ndtri(1.4e-45) = -14.1214 (scipy's values).  Before: opencl refined
    erfc(x) = 2p by Halley steps on a subnormal (a few bits): -38.4629 and -14.1136."""
    sp = pytest.importorskip("scipy.special")
    for npdt, vals, tol in ((np.float64, [5e-324, 1e-323, 1e-310, 3e-308, 1e-300, 1e-50], 1e-14),
                            (np.float32, [1.4e-45, 1e-40, 1e-38, 2e-38, 1e-35, 1e-30], 2e-7)):
        v = np.array(vals, npdt)
        r = _np(torch.special.ndtri(torch.tensor(v, device=device))).astype(np.float64)
        np.testing.assert_allclose(r, sp.ndtri(v.astype(np.float64)), rtol=tol)


def test_float32_scans_accumulate_in_double(device):
    """PyTorch's CPU scans accumulate float32 in double (acc_type) and round each output once: the running product
    of 300000 values of float32(1.000001) ends at 1.3312285 and logcumsumexp of 300000 values of 0.1 at
    log(300000) + 0.1 = 12.7115374.  Before: cumprod on cpu and logcumsumexp on both backends ran in float32:
    1.3296751 (0.12% off) and 12.7151365 (3.6e-3 off)."""
    n = 300000
    one = np.float32(1.000001)
    want = float(np.float32(math.exp(n * math.log(float(one)))))
    for shape, dim in (((n,), 0), ((n, 2), 0), ((2, n), 1)):
        x = torch.full(shape, float(one), device=device)
        r = _np(x.cumprod(dim)).take(-1, axis=dim)
        np.testing.assert_allclose(r, want, rtol=3e-7)
        y = torch.full(shape, 0.1, device=device)
        r = _np(y.logcumsumexp(dim)).take(-1, axis=dim)
        np.testing.assert_allclose(r, math.log(n) + float(np.float32(0.1)), rtol=2e-7)
    z = _np(torch.tensor([-math.inf, 1.0, -math.inf, math.inf, 2.0], device=device).logcumsumexp(0))
    np.testing.assert_array_equal(z, [-math.inf, 1.0, 1.0, math.inf, math.inf])


def test_linear_interpolation_along_an_unchanged_size_copies(device):
    """PyTorch's linear/bilinear/trilinear kernels take a dim whose output size equals its input size as a copy
    (compute_source_index_and_lambda: "scale_factor = 1, simply copy"), whatever the scale_factor that gave that
    size: ``interpolate(arange(5.), scale_factor=1.1, mode="linear")`` is [0, 1, 2, 3, 4].  Before: the scale was
    applied, [0, 0.864, 1.773, 2.682, 3.591] (and 0.9999986 for 1 with a scale of 1 + 2**-20)."""
    F = torch.nn.functional
    x = torch.arange(5.0, device=device).reshape(1, 1, 5)
    for sf in (1.1, 1 + 2 ** -20, 1.19):
        np.testing.assert_array_equal(_np(F.interpolate(x, scale_factor=sf, mode="linear")), _np(x))
    x2 = torch.arange(25.0, device=device).reshape(1, 1, 5, 5)
    r = _np(F.interpolate(x2, scale_factor=(1.1, 2.0), mode="bilinear"))
    assert r.shape == (1, 1, 5, 10)
    np.testing.assert_array_equal(r[0, 0, :, 0], _np(x2)[0, 0, :, 0])   # rows copied, columns interpolated
    np.testing.assert_array_equal(r[0, 0, :, 3], _np(x2)[0, 0, :, 1] + 0.25)
    x3 = torch.arange(27.0, device=device).reshape(1, 1, 3, 3, 3)
    np.testing.assert_array_equal(_np(F.interpolate(x3, scale_factor=1.2, mode="trilinear")), _np(x3))
    xg = x.clone().requires_grad_()
    F.interpolate(xg, scale_factor=1.1, mode="linear").backward(torch.full((1, 1, 5), 2.0, device=device))
    np.testing.assert_array_equal(_np(xg.grad), np.full((1, 1, 5), 2.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_composites_compute_in_float32(device, dtype):
    """PyTorch computes lerp, addcmul and addcdiv of float16/bfloat16 operands in float32 and rounds once (opmath):
    lerp(60000, -60000, 0.5) = 0, addcmul(0, 300, 300, value=0.001) = 90, addcdiv(0, 60000, 0.001, value=0.001) =
    59968 (float16's nearest to 60000).  Before: each step rounded to half, the intermediate overflowed: inf, inf,
    inf (bfloat16 rounded three times where PyTorch rounds once)."""
    def t(v):
        return torch.tensor(v, dtype=dtype, device=device)

    def one(x):   # the float32 value rounded once to dtype
        return float(torch.tensor(x, dtype=torch.float32).to(dtype).float())
    np.testing.assert_array_equal(_np(torch.lerp(t([60000.0, 1.0]), t([-60000.0, 2.0]), 0.5).float()), [0.0, 1.5])
    np.testing.assert_array_equal(_np(torch.lerp(t([60000.0]), t([-60000.0]), t([0.5])).float()), [0.0])
    a, b, c = t([0.0]), t([300.0]), t([300.0])
    np.testing.assert_array_equal(_np(torch.addcmul(a, b, c, value=0.001).float()), [one(90.0)])
    assert float(a.clone().addcmul_(b, c, value=0.001).float()) == one(90.0)
    q = torch.addcdiv(t([0.0]), t([60000.0]), t([0.001]), value=0.001)
    want = float(np.float32(np.float32(0.001) * (np.float32(one(60000.0)) / np.float32(one(0.001)))))
    assert q.dtype == dtype and float(q.float()) == one(want)
    x, y = t([1.0]).requires_grad_(), t([3.0]).requires_grad_()
    torch.addcmul(x, y, t([5.0]), value=0.5).sum().backward()
    assert x.grad.dtype == dtype and float(x.grad.float()) == 1.0 and float(y.grad.float()) == 2.5


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_normalisations_compute_in_float32(device, dtype):
    """PyTorch's layer/group/batch/instance/RMS norms of a half input compute the statistics and the normalisation
    in float32 and round once: a row [60000, -60000] (its variance overflows half) normalises to [1, -1]; rms_norm's
    default eps is float32's for half inputs (1.19e-7: rms_norm([1e-3, 1e-3]) = 0.9453).  Before: [0, 0] in float16
    for every one of them, and rms_norm used eps 2.2e-16 (1.0)."""
    F = torch.nn.functional
    big = torch.tensor([[60000.0, -60000.0]], dtype=torch.float16, device=device).to(dtype)
    v = float(big[0, 0].float())
    for r in (F.layer_norm(big, (2,)), F.group_norm(big.reshape(1, 1, 2), 1).reshape(1, 2),
              F.instance_norm(big.reshape(1, 1, 2)).reshape(1, 2),
              F.batch_norm(big.reshape(2, 1), None, None, training=True).reshape(1, 2)):
        assert r.dtype == dtype
        np.testing.assert_allclose(_np(r.float()), [[1.0, -1.0]], rtol=1e-3)
    r = F.rms_norm(torch.tensor([[v, v]], dtype=dtype, device=device), (2,))
    np.testing.assert_allclose(_np(r.float()), [[1.0, 1.0]], rtol=1e-2)
    small = torch.tensor([[1e-3, 1e-3]], dtype=dtype, device=device)
    ms = float(small[0, 0].double()) ** 2
    want = float(small[0, 0].double()) / math.sqrt(ms + 1.1920928955078125e-07)
    np.testing.assert_allclose(_np(F.rms_norm(small, (2,)).float()), [[want, want]], rtol=1e-2)
    s64 = small.double()
    w64 = float(s64[0, 0]) / math.sqrt(float(s64[0, 0]) ** 2 + 2.220446049250313e-16)   # (float64's own eps)
    np.testing.assert_allclose(_np(F.rms_norm(s64, (2,))), [[w64, w64]], rtol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_average_pooling_and_attention_compute_in_float32(device, dtype):
    """PyTorch's average pooling of half inputs sums windows in float32 (avg_pool1d of [60000, 60000] is 60000),
    and its CPU attention keeps half q/k/v in float32 (scores of 200 * 200 * 2 overflow half; the weighted sum of
    [1, 2], [3, 4] with equal weights is [2, 3]).  Before: inf and NaN in float16."""
    F = torch.nn.functional
    x = torch.tensor([[[60000.0, 60000.0, 1.0, 3.0]]], dtype=torch.float16, device=device).to(dtype)
    r = F.avg_pool1d(x, 2)
    assert r.dtype == dtype
    np.testing.assert_allclose(_np(r.float()), [[[float(x[0, 0, 0].float()), 2.0]]])
    r2 = F.avg_pool2d(torch.full((1, 1, 2, 2), 60000.0, dtype=dtype, device=device), 2)
    assert np.isfinite(_np(r2.float())).all()
    q = torch.full((1, 1, 2, 2), 200.0, dtype=dtype, device=device)
    v = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]], dtype=dtype, device=device)
    a = F.scaled_dot_product_attention(q, q, v)
    assert a.dtype == dtype
    np.testing.assert_array_equal(_np(a.float()), [[[[2.0, 3.0], [2.0, 3.0]]]])


def test_reduction_out_dtypes(device):
    """PyTorch's sum/prod with ``out`` and no dtype compute in the out tensor's dtype: sum([1.5, 1.7]) into an int64
    out is 1 + 1 = 2, into a bool out True; mean of float32 into a float64 out is a float64 mean (1 + 2**-30 over 2 =
    0.5000000004656613).  amax/amin/norm and the (values, indices) of max/min(dim) check their out dtypes exactly.
    Before: sum/prod raised "result type Float can't be cast to the desired output type Long", mean gave the float32
    mean (0.5), and amax/amin/norm/max(dim) wrote into any castable out."""
    def t(v, dt=torch.float32):
        return torch.tensor(v, dtype=dt, device=device)

    def e(dt, shape=()):
        return torch.empty(shape, dtype=dt, device=device)
    assert int(torch.sum(t([1.5, 1.7]), 0, out=e(torch.int64))) == 2
    assert int(torch.sum(t([1.5, 1.7]), (0,), out=e(torch.int64))) == 2
    assert int(torch.prod(t([1.5, 1.7]), 0, out=e(torch.int64))) == 1
    assert bool(torch.sum(t([True, True], torch.bool), 0, out=e(torch.bool)))
    assert int(torch.sum(t([100, 100], torch.int64), 0, out=e(torch.int8))) == -56
    assert float(torch.mean(t([1.0, 2 ** -30]), 0, out=e(torch.float64))) == 0.5000000004656613
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.mean(t([1.0, 2.0]), 0, out=e(torch.int64))
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        torch.mean(t([1, 2], torch.int64), 0, out=e(torch.float64))
    for call in (lambda: torch.amax(t([1.5, 1.7]), 0, out=e(torch.float64)),
                 lambda: torch.amin(t([1.5, 1.7]), 0, out=e(torch.float16)),
                 lambda: torch.norm(t([1.5, 1.7]), out=e(torch.float64)),
                 lambda: torch.max(t([[1.0, 2.0]]), 1, out=(e(torch.float64, (1,)), e(torch.int64, (1,)))),
                 lambda: torch.min(t([[1.0, 2.0]]), 1, out=(e(torch.float32, (1,)), e(torch.int32, (1,))))):
        with pytest.raises(RuntimeError, match="dtype"):
            call()
    assert float(torch.min(t([1.5, 1.7]), out=e(torch.float64))) == 1.5   # (the full reduction casts)


@pytest.mark.parametrize("dtype,big", [(torch.float16, 1e10), (torch.float16, -65505.0), (torch.float32, 1e39)])
def test_clamp_bounds_out_of_the_float_range_raise(device, dtype, big):
    """PyTorch converts a Python clamp bound to the tensor's dtype with its overflow check: clamp(max=1e10) of a
    float16 tensor (clamp_min, clamp_max, clip, hardtanh alike) raises "value cannot be converted to type c10::Half
    without overflow"; inf and NaN bounds and in-range ones pass.  Before: the bound was used silently."""
    x = torch.ones(2, dtype=dtype, device=device)
    for call in (lambda: x.clamp(max=big), lambda: x.clamp(min=big), lambda: x.clamp_min(big),
                 lambda: x.clamp_max(big), lambda: x.clip(big), lambda: x.clone().clamp_(max=big),
                 lambda: torch.nn.functional.hardtanh(x, -abs(big), abs(big))):
        with pytest.raises(RuntimeError, match="without overflow"):
            call()
    assert _np(x.clamp(max=math.inf).float()).tolist() == [1.0, 1.0]
    assert np.isnan(_np(x.clamp(max=math.nan).float())).all()
    assert _np(x.clamp(min=-65504.0, max=65504.0).float()).tolist() == [1.0, 1.0]


def test_half_dist_computes_in_float32(device):
    """PyTorch's dist / pairwise_distance of half tensors take the norm in float32 and round once: dist of [300, 300]
    and 0 is 424.25 (float16).  Before: the squares overflowed half: inf."""
    a = torch.tensor([300.0, 300.0], dtype=torch.float16, device=device)
    z = torch.zeros(2, dtype=torch.float16, device=device)
    want = float(np.float16(math.hypot(300.0, 300.0)))
    r = torch.dist(a, z)
    assert r.dtype == torch.float16 and float(r.float()) == want
    assert float(torch.dist(a, z, 3).float()) == float(np.float16((2 * 300.0 ** 3) ** (1 / 3)))
    pd = torch.nn.functional.pairwise_distance(a[None], z[None])
    assert abs(float(pd.float()) - want) <= 0.25


def test_relu_and_clamp_keep_a_tied_signed_zero(device):
    """PyTorch's relu (clamp_min(x, 0)) and clamp return x itself where x equals the bound: relu(-0.0) and
    clamp(-0.0, min=0.0) are -0.0, clamp(0.0, max=-0.0) is 0.0; NaN passes.  Before: relu gave +0.0 on both
    backends, and the cpu clamp (np.clip) gave the bound: 0.0 and -0.0."""
    x = torch.tensor([-0.0, 0.0, math.nan, -1.0, 2.0], device=device)
    r = _np(torch.relu(x))
    assert np.signbit(r[0]) and not np.signbit(r[1]) and np.isnan(r[2]) and r[3] == 0 and r[4] == 2
    r = _np(torch.nn.functional.relu(x.clone(), inplace=True))
    assert np.signbit(r[0]) and not np.signbit(r[1])
    c = _np(x.clamp(min=0.0))
    assert np.signbit(c[0]) and not np.signbit(c[1]) and np.isnan(c[2]) and c[3] == 0
    c = _np(x.clamp(max=-0.0))
    assert np.signbit(c[0]) and not np.signbit(c[1]) and c[3] == -1 and np.signbit(c[4])
    c = _np(x.clone().clamp_(-0.0, 1.0))
    assert np.signbit(c[0]) and not np.signbit(c[1]) and np.isnan(c[2]) and c[4] == 1.0


def test_half_glu_and_vecdot_compute_in_float32(device):
    """PyTorch computes glu and linalg.vecdot of float16 in float32 and rounds once: glu([60000, -20]) =
    60000 * sigmoid(-20) = 1.236e-4, vecdot([300, 300], [300, -300]) = 0.  Before: sigmoid(-20) underflowed half
    (0) and the products overflowed (inf - inf = NaN)."""
    h = torch.float16
    g = torch.nn.functional.glu(torch.tensor([60000.0, -20.0], dtype=h, device=device))
    want = float(np.float16(60000.0 / (1.0 + math.exp(20.0))))
    assert g.dtype == h and float(g.float()) == want
    v = torch.linalg.vecdot(torch.tensor([300.0, 300.0], dtype=h, device=device),
                            torch.tensor([300.0, -300.0], dtype=h, device=device))
    assert v.dtype == h and float(v.float()) == 0.0


def test_half_silu_and_mish_compute_in_float32(device):
    """PyTorch computes silu and mish of float16 in float32 and rounds once: silu(-20) = -20 sigmoid(-20) =
    -4.1e-8, which rounds to float16's -5.96e-8 (mish(-20) likewise).  Before: sigmoid(-20) underflowed half to 0
    and the results were -0.0 (in place too)."""
    x = torch.tensor([-20.0, -1.0, 0.5], dtype=torch.float16, device=device)
    F = torch.nn.functional
    want_silu = [float(np.float16(v / (1 + math.exp(-v)))) for v in (-20.0, -1.0, 0.5)]
    want_mish = [float(np.float16(v * math.tanh(math.log1p(math.exp(v))))) for v in (-20.0, -1.0, 0.5)]
    for fn, want in ((F.silu, want_silu), (F.mish, want_mish)):
        r = fn(x)
        assert r.dtype == torch.float16
        np.testing.assert_array_equal(_np(r.float()), want)
        y = x.clone()
        fn(y, inplace=True)
        np.testing.assert_array_equal(_np(y.float()), want)


def test_half_softmax_rounds_once(device):
    """PyTorch's softmax / log_softmax of float16 compute in float32 and round once: within one half ulp-step of
    the float64 value.  Before: the cpu kernel ran numpy's half exp, subtraction and row sum (each rounded to half):
    up to 3 half ulps off."""
    rng = np.random.default_rng(1)
    x16 = rng.normal(0, 3, (8, 8)).astype(np.float16)
    x64 = x16.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    want_sm = e / e.sum(1, keepdims=True)
    want_lsm = np.log(want_sm)
    t = torch.tensor(x16, device=device)
    for got, want in ((_np(torch.softmax(t, 1)), want_sm), (_np(torch.log_softmax(t, 1)), want_lsm)):
        assert got.dtype == np.float16
        ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
        assert np.all(np.abs(got.astype(np.float64) - want) <= ulp), np.max(np.abs(got - want) / ulp)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_softmax_backward(device, dtype):
    """PyTorch's softmax backward of half tensors is y * (g - sum(g * y)) in float32, rounded once.  Before: opencl
    raised RuntimeError '"softmax_bwd" is not implemented for float16 on device 'opencl'' (its fused kernel has
    float32/float64 variants only), so no half softmax could be trained there."""
    x = torch.tensor([[1.0, 2.0, 3.0, -1.5, 0.25]], dtype=dtype, device=device, requires_grad=True)
    y = torch.softmax(x, 1)
    y[0, 0].backward()
    yf = _np(y.float()).astype(np.float64)[0]
    g = np.zeros(5)
    g[0] = 1.0
    want = (yf * (g - (g * yf).sum())).astype(np.float32)
    got = _np(x.grad.float())[0]
    assert x.grad.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-4)


def test_same_dtype_unary_ops_refuse_another_out_dtype(device):
    """PyTorch builds neg, sign, round, floor, ceil, trunc, fix, abs, bitwise_not and the scalar clamps with one
    dtype for input and out: an out of another dtype raises "Found dtype Double but expected Float" (even a wider
    float), where the float ops (exp, sqrt, sigmoid, ...) cast into it.  Before: the result was cast into any
    castable out."""
    x = torch.tensor([1.5, -2.5], device=device)
    i = torch.tensor([1, -2], device=device)
    for name in ("neg", "negative", "sign", "round", "floor", "ceil", "trunc", "fix", "abs", "absolute"):
        fn = getattr(torch, name)
        with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
            fn(x, out=torch.empty(2, dtype=torch.float64, device=device))
        with pytest.raises(RuntimeError, match="Found dtype Int but expected Long"):
            fn(i, out=torch.empty(2, dtype=torch.int32, device=device))
        o = torch.empty(2, device=device)
        assert fn(x, out=o) is o
    with pytest.raises(RuntimeError, match="Found dtype Int but expected Long"):
        torch.bitwise_not(i, out=torch.empty(2, dtype=torch.int32, device=device))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch.clamp(x, 0, out=torch.empty(2, dtype=torch.float64, device=device))
    r = torch.exp(x, out=torch.empty(2, dtype=torch.float64, device=device))   # (float ops cast)
    assert r.dtype == torch.float64


def test_selection_ops_out_dtype_is_exact(device):
    """PyTorch's where, index_select, gather, masked_select and take check their out dtype exactly (RuntimeError);
    isnan and isinf take no out (TypeError: unexpected keyword argument 'out').  Before: a float64 out took the
    float32 result cast, and isnan/isinf accepted out."""
    x = torch.tensor([1.5, -2.5], device=device)
    i = torch.tensor([0], device=device)
    m = torch.tensor([True, False], device=device)

    def o(n):
        return torch.empty(n, dtype=torch.float64, device=device)
    for call in (lambda: torch.where(m, x, x, out=o(2)), lambda: torch.index_select(x, 0, i, out=o(1)),
                 lambda: torch.gather(x, 0, i, out=o(1)), lambda: torch.masked_select(x, m, out=o(1)),
                 lambda: torch.take(x, i, out=o(1))):
        with pytest.raises(RuntimeError, match="dtype"):
            call()
    for fn in (torch.isnan, torch.isinf):
        with pytest.raises(TypeError, match="out"):
            fn(x, out=torch.empty(2, dtype=torch.bool, device=device))
    r = torch.empty(2, device=device)
    assert torch.where(m, x, x, out=r) is r
