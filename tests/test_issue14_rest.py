"""Issue 14's remaining surface: the incomplete gamma functions (torch.igamma/igammac, torch.special.gammainc/
gammaincc) and the Gamma family's cdf, PyTorch's grad_fn names of nn.functional's composites, lp_pool3d,
fractional max pooling, ctc_loss in float16, antialiased uint8 interpolation and pin_memory.  Every test runs
on each installed device; references are scipy.special / numpy (values and errors checked against PyTorch 2.13)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import coretorch as torch
import coretorch.distributions as D
from coretorch.autograd import gradcheck


# ---------------------------------------------------------------------------------------------------------------
# incomplete gamma
# ---------------------------------------------------------------------------------------------------------------
def _ax(dt):
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(0.01, 3, 40), rng.uniform(3, 60, 40), [0.5, 20.0, 2500.0, 1e4]])
    x = np.concatenate([rng.uniform(0, 4, 40), rng.uniform(0, 90, 40), [30.0, 21.0, 2450.0, 1.02e4]])
    return a.astype(dt), x.astype(dt)


@pytest.mark.parametrize("dt,tol", [(np.float64, 1e-11), (np.float32, 3e-6)])
def test_igamma_matches_scipy(device, dt, tol):
    a, x = _ax(dt)
    ta, tx = torch.tensor(a, device=device), torch.tensor(x, device=device)
    for fn, ref in ((torch.igamma, sp.gammainc), (torch.igammac, sp.gammaincc),
                    (torch.special.gammainc, sp.gammainc), (torch.special.gammaincc, sp.gammaincc)):
        r = fn(ta, tx)
        assert r.dtype == ta.dtype and r.device.type == device
        np.testing.assert_allclose(r.cpu().numpy(), ref(a.astype(np.float64), x.astype(np.float64)), rtol=tol,
                                   atol=tol)


def test_igamma_edges_broadcast_and_layouts(device):
    a = np.array([0.0, -1, 1, 1, np.inf, 1, 0, 0, 0, np.inf, np.nan, 2, 2, 1e-3])
    x = np.array([1.0, 1, 0, -1, 1, np.inf, 0, np.inf, 0.5, np.inf, 1, np.nan, 0, 0])
    for fn, ref in ((torch.igamma, sp.gammainc), (torch.igammac, sp.gammaincc)):
        r = fn(torch.tensor(a, device=device), torch.tensor(x, device=device)).cpu().numpy()
        np.testing.assert_array_equal(r, ref(a, x))
    A = np.linspace(0.5, 6, 12).reshape(3, 4)
    X = np.array([0.3, 1.0, 4.0, 9.0])
    ta = torch.tensor(A, device=device).t()                     # non-contiguous (4, 3)
    tx = torch.tensor(X, device=device).reshape(4, 1)             # broadcast along the last dim
    np.testing.assert_allclose(torch.igamma(ta, tx).cpu().numpy(), sp.gammainc(A.T, X.reshape(4, 1)), rtol=1e-12)
    np.testing.assert_allclose(ta.igammac(tx).cpu().numpy(), sp.gammaincc(A.T, X.reshape(4, 1)), rtol=1e-12)
    e = torch.igamma(torch.zeros(0, 3, device=device), torch.ones(3, device=device))
    assert e.shape == (0, 3)
    # dtypes: float16 computed in float32, mixed float/int promoted; 0-d
    h = torch.igamma(torch.tensor([1.0], dtype=torch.float16, device=device),
                     torch.tensor([1.0], dtype=torch.float16, device=device))
    assert h.dtype == torch.float16 and abs(float(h) - sp.gammainc(1.0, 1.0)) < 1e-3
    m = torch.igamma(torch.tensor([1.0, 2.0], device=device), torch.tensor([1, 2], device=device))
    np.testing.assert_allclose(m.cpu().numpy(), sp.gammainc([1.0, 2.0], [1.0, 2.0]), rtol=1e-6)
    z = torch.igamma(torch.tensor(2.0, dtype=torch.float64, device=device), torch.tensor(3.0, device=device))
    assert z.shape == () and z.dtype == torch.float64


def test_igamma_methods_inplace_out_and_errors(device):
    a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, device=device)
    x = torch.tensor([0.5, 2.0, 4.0], dtype=torch.float64, device=device)
    want_p, want_q = sp.gammainc([1.0, 2, 3], [0.5, 2, 4]), sp.gammaincc([1.0, 2, 3], [0.5, 2, 4])
    np.testing.assert_allclose(a.igamma(x).cpu().numpy(), want_p)
    b = a.clone()
    assert b.igammac_(x) is b
    np.testing.assert_allclose(b.cpu().numpy(), want_q)
    b = a.clone()
    b.igamma_(x)
    np.testing.assert_allclose(b.cpu().numpy(), want_p)
    o = torch.empty(3, dtype=torch.float64, device=device)
    assert torch.special.gammaincc(a, x, out=o) is o
    np.testing.assert_allclose(o.cpu().numpy(), want_q)
    with pytest.raises(TypeError, match=r"igamma\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        torch.igamma(a, 2.0)
    with pytest.raises(TypeError, match="special_gammainc"):
        torch.special.gammainc(2.0, x)
    with pytest.raises(NotImplementedError, match="\"igammac_cpu\" not implemented for 'Long'"):
        torch.igammac(torch.tensor([1, 2], device=device), torch.tensor([1, 2], device=device))
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.tensor([1, 2], device=device).igamma_(torch.tensor([1.0, 2.0], device=device))
    with pytest.raises(RuntimeError):
        torch.tensor([1.0, 2.0], device=device).igamma_(torch.ones(2, 2, device=device))


def test_igamma_gradient(device):
    a = torch.tensor([0.7, 2.0, 5.0], dtype=torch.float64, device=device)
    x = torch.tensor([0.4, 2.5, 3.0], dtype=torch.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: torch.igamma(a, t), (x,))
    assert gradcheck(lambda t: torch.special.gammaincc(a, t), (x,))
    y = torch.igammac(a, x)
    assert type(y.grad_fn).__name__ == "IgammacBackward0"
    (g,) = torch.autograd.grad(y.sum(), x)
    an, xn = a.cpu().numpy(), x.detach().cpu().numpy()
    np.testing.assert_allclose(g.cpu().numpy(), -np.exp((an - 1) * np.log(xn) - xn - sp.gammaln(an)), rtol=1e-12)
    # broadcast operand: its gradient is summed back to its shape
    xs = torch.tensor(1.5, dtype=torch.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: torch.igamma(a, t), (xs,))
    ar = a.clone().requires_grad_()
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented."):
        torch.igamma(ar, x).sum().backward()


def test_gamma_family_cdf(device):
    conc = torch.tensor([2.0, 3.0, 0.5], dtype=torch.float64, device=device)
    rate = torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64, device=device)
    v = torch.tensor([1.0, 2.0, 0.3], dtype=torch.float64, device=device)
    c, r, vn = conc.cpu().numpy(), rate.cpu().numpy(), v.cpu().numpy()
    np.testing.assert_allclose(D.Gamma(conc, rate).cdf(v).cpu().numpy(), sp.gammainc(c, r * vn), rtol=1e-12)
    np.testing.assert_allclose(D.Chi2(conc).cdf(v).cpu().numpy(), sp.gammainc(c / 2, vn / 2), rtol=1e-12)
    np.testing.assert_allclose(D.InverseGamma(conc, rate).cdf(v).cpu().numpy(), sp.gammaincc(c, r / vn),
                               rtol=1e-12)
    for d in (D.Gamma(conc, rate), D.Chi2(conc), D.InverseGamma(conc, rate)):
        with pytest.raises(NotImplementedError):
            d.icdf(torch.tensor([0.5], dtype=torch.float64, device=device))
    with pytest.raises(ValueError, match="support"):
        D.Gamma(conc, rate).cdf(-v)
    rg = rate.clone().requires_grad_()
    assert gradcheck(lambda t: D.Gamma(conc, t).cdf(v), (rg,))


# ---------------------------------------------------------------------------------------------------------------
# grad_fn names of nn.functional's composites (PyTorch 2.13's, checked by hand); the backward is the composite's
# ---------------------------------------------------------------------------------------------------------------
_NAMED = [
    ("AvgPool2DBackward0", lambda F, T: F.avg_pool2d(T(2, 3, 6, 6), 2)),
    ("AvgPool3DBackward0", lambda F, T: F.avg_pool3d(T(1, 2, 4, 4, 4), 2)),
    ("SqueezeBackward1", lambda F, T: F.avg_pool1d(T(2, 3, 8), 2)),
    ("AdaptiveAvgPool2DBackward0", lambda F, T: F.adaptive_avg_pool2d(T(2, 3, 6, 6), 3)),
    ("MeanBackward1", lambda F, T: F.adaptive_avg_pool2d(T(2, 3, 6, 6), 1)),
    ("AdaptiveAvgPool3DBackward0", lambda F, T: F.adaptive_avg_pool3d(T(1, 2, 4, 4, 4), 2)),
    ("UpsampleNearest2DBackward0", lambda F, T: F.interpolate(T(1, 2, 4, 4), scale_factor=2)),
    ("UpsampleBilinear2DBackward0", lambda F, T: F.interpolate(T(1, 2, 4, 4), scale_factor=2, mode="bilinear")),
    ("UpsampleBilinear2DAaBackward0", lambda F, T: F.interpolate(T(1, 2, 8, 8), size=(4, 4), mode="bilinear",
                                                                  antialias=True)),
    ("UpsampleLinear1DBackward0", lambda F, T: F.interpolate(T(1, 2, 4), size=7, mode="linear")),
    ("UpsampleTrilinear3DBackward0", lambda F, T: F.interpolate(T(1, 1, 2, 2, 2), scale_factor=2, mode="trilinear")),
    ("ConstantPadNdBackward0", lambda F, T: F.pad(T(2, 3, 4), (1, 2))),
    ("ReflectionPad2DBackward0", lambda F, T: F.pad(T(1, 2, 4, 4), (1, 1, 1, 1), mode="reflect")),
    ("ReplicationPad1DBackward0", lambda F, T: F.pad(T(1, 2, 4), (1, 2), mode="replicate")),
    ("GridSampler2DBackward0", lambda F, T: F.grid_sample(T(1, 2, 4, 4), T(1, 3, 3, 2), align_corners=False)),
    ("GridSampler3DBackward0", lambda F, T: F.grid_sample(T(1, 1, 3, 3, 3), T(1, 2, 2, 2, 3), align_corners=False)),
    ("AffineGridGeneratorBackward0", lambda F, T: F.affine_grid(T(1, 2, 3), (1, 1, 4, 4), align_corners=False)),
    ("PixelShuffleBackward0", lambda F, T: F.pixel_shuffle(T(1, 4, 2, 2), 2)),
    ("GluBackward0", lambda F, T: F.glu(T(2, 4))), ("CeluBackward0", lambda F, T: F.celu(T(4))),
    ("EluBackward0", lambda F, T: F.selu(T(4))), ("PreluKernelBackward0", lambda F, T: F.prelu(T(2, 3), T(3))),
    ("SoftshrinkBackward0", lambda F, T: F.softshrink(T(4))),
    ("ThresholdBackward0", lambda F, T: F.threshold(T(4), 0.1, 0.0)),
    ("SoftMarginLossBackward0", lambda F, T: F.soft_margin_loss(T(4), T(4).detach().sign())),
    ("Im2ColBackward0", lambda F, T: F.unfold(T(1, 2, 4, 4), 2)),
    ("Col2ImBackward0", lambda F, T: F.fold(T(1, 8, 9), (4, 4), 2)),
    ("EmbeddingBagBackward0", lambda F, T: F.embedding_bag(T(1, 2).detach().ge(9).long(), T(4, 3))),
    ("NllLoss2DBackward0", lambda F, T: F.cross_entropy(T(2, 5, 3, 3), T(2, 3, 3).detach().ge(9).long())),
    ("CtcLossBackward0", lambda F, T: F.ctc_loss(T(6, 2, 4).log_softmax(2), T(2, 2).detach().ge(9).long() + 1,
                                                 torch.tensor([6, 6]), torch.tensor([2, 2]), reduction="none")),
]


def test_composite_grad_fn_names(device):
    F = torch.nn.functional
    torch.manual_seed(0)

    def T(*shape):
        return (torch.rand(*shape, dtype=torch.float64) - 0.5).to(device).requires_grad_()
    for name, f in _NAMED:
        y = f(F, T)
        assert type(y.grad_fn).__name__ == name
    # the composite's backward is kept: first and second derivatives
    x = T(1, 1, 3, 3)
    g = (torch.rand(1, 2, 2, 2, dtype=torch.float64) * 1.6 - 0.8).to(device).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: F.grid_sample(a, b, align_corners=True), (x, g))
    assert torch.autograd.gradgradcheck(lambda a: F.avg_pool2d(a, 2, 1), (x,))
    assert torch.autograd.gradcheck(lambda a: F.pad(a, (1, 1, 1, 1), mode="reflect"), (x,))
    # in place keeps the node of the in-place op (PyTorch: ThresholdBackward1)
    h = T(4) * 1
    assert F.threshold(h, 0.1, 0.0, inplace=True) is h


# ---------------------------------------------------------------------------------------------------------------
# fractional max pooling, lp_pool3d
# ---------------------------------------------------------------------------------------------------------------
def _frac_ref(x, k, outs, rs):
    """numpy reference of ATen's fractional max pooling (windows from the samples, last NaN or first max)."""
    nd = len(k)
    sp_ = x.shape[-nd:]
    order = (1, 0) if nd == 2 else (0, 1, 2)
    out = np.zeros(x.shape[:2] + tuple(outs), x.dtype)
    idx = np.zeros(out.shape, np.int64)
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            starts = []
            for d in range(nd):
                u = rs[b, c, order[d]]
                alpha = x.dtype.type(sp_[d] - k[d]) / x.dtype.type(outs[d] - 1) if outs[d] > 1 else 0
                s = [int((x.dtype.type(i) + u) * alpha) - int(u * alpha) for i in range(outs[d] - 1)]
                starts.append(s + [sp_[d] - k[d]])
            for o in np.ndindex(*outs):
                best, bi = -np.inf, None
                for t in np.ndindex(*k):
                    pos = tuple(starts[d][o[d]] + t[d] for d in range(nd))
                    v = x[(b, c) + pos]
                    if bi is None or v > best or np.isnan(v):
                        best, bi = v, int(np.ravel_multi_index(pos, sp_))
                out[(b, c) + o], idx[(b, c) + o] = best, bi
    return out, idx


@pytest.mark.parametrize("nd,shape,k,outs", [(2, (2, 3, 9, 7), (2, 3), (4, 5)),
                                             (3, (1, 2, 5, 6, 7), (2, 2, 3), (3, 4, 2))])
def test_fractional_max_pool(device, nd, shape, k, outs):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    x[..., 0, 1] = x[..., 0, 0]          # a tie
    x[0, 0, ..., 2, 2] = np.nan           # a NaN wins its windows
    rs = rng.random((shape[0], shape[1], nd)).astype(np.float32)
    fn = torch.nn.functional.fractional_max_pool2d if nd == 2 else torch.nn.functional.fractional_max_pool3d
    o, i = fn(torch.tensor(x, device=device), k, output_size=outs, return_indices=True,
              _random_samples=torch.tensor(rs, device=device))
    ro, ri = _frac_ref(x, k, outs, rs)
    np.testing.assert_array_equal(o.cpu().numpy(), ro)
    np.testing.assert_array_equal(i.cpu().numpy(), ri)
    assert i.dtype == torch.int64
    # unbatched input, output_ratio, drawn samples, module forms
    xt = torch.tensor(x[0], device=device)
    y = fn(xt, k, output_ratio=(0.5,) * nd)
    assert y.shape == (shape[1],) + tuple(int(s * 0.5) for s in shape[-nd:])
    mod = (torch.nn.FractionalMaxPool2d if nd == 2 else torch.nn.FractionalMaxPool3d)(k, output_size=outs,
                                                                                       return_indices=True)
    mo, mi = mod(torch.tensor(x, device=device))
    assert mo.shape == o.shape and mi.shape == o.shape and repr(mod) == type(mod).__name__ + "()"
    # gradient: to the winners; double precision gradcheck with fixed samples
    xg = torch.tensor(x, device=device).nan_to_num().requires_grad_()
    y, yi = fn(xg, k, output_size=outs, return_indices=True, _random_samples=torch.tensor(rs, device=device))
    assert type(y.grad_fn).__name__ == f"FractionalMaxPool{nd}DBackward0"
    y.backward(torch.ones_like(y))
    flat = yi.cpu().numpy().reshape(shape[0], shape[1], -1)
    want = np.stack([np.stack([np.bincount(f, minlength=np.prod(shape[-nd:])) for f in b]) for b in flat])
    np.testing.assert_array_equal(xg.grad.cpu().numpy().reshape(want.shape), want)
    if nd == 2 and device == "cpu":  # float64 gradcheck and gradgradcheck (device-independent tensor ops)
        xd = torch.tensor(rng.permutation(9).reshape(1, 1, 3, 3) / 7.0, device=device, requires_grad=True)
        rsd = torch.tensor(rs[:1, :1].astype(np.float64), device=device)
        assert gradcheck(lambda t: fn(t, 2, output_size=2, _random_samples=rsd), (xd,))
        assert torch.autograd.gradgradcheck(lambda t: fn(t, 2, output_size=2, _random_samples=rsd), (xd,))


def test_fractional_max_pool_errors(device):
    F = torch.nn.functional
    x = torch.rand(1, 2, 5, 5, device=device)
    with pytest.raises(ValueError, match="requires specifying either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match=r"fractional_max_pool2d\(\): pool height 2 too large relative to input "
                                           "height 5"):
        F.fractional_max_pool2d(x, 2, output_size=5)
    with pytest.raises(RuntimeError, match="Expect _random_samples.size\\(2\\) equals to 2; got 3."):
        F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=torch.rand(1, 2, 3, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=torch.rand(1, 2, 2, device=device).double())
    with pytest.raises(RuntimeError, match=r"fractional_max_pool3d_out\(\): pool width 5 too large"):
        F.fractional_max_pool3d(torch.rand(1, 2, 5, 5, 5, device=device), (2, 2, 5), output_size=2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        torch.nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="FractionalMaxPool3d requires specifying either an output size"):
        torch.nn.FractionalMaxPool3d(2)


def test_lp_pool3d(device):
    rng = np.random.default_rng(4)
    x = rng.uniform(0.1, 2.0, (1, 2, 4, 4, 6))
    t = torch.tensor(x, device=device, requires_grad=True)
    y = torch.nn.functional.lp_pool3d(t, 3.0, (2, 2, 3))
    ref = (x.reshape(1, 2, 2, 2, 2, 2, 2, 3) ** 3).sum((3, 5, 7)) ** (1 / 3)
    np.testing.assert_allclose(y.detach().cpu().numpy(), ref, rtol=1e-12)
    y.backward(torch.ones_like(y))   # d/dx (sum x^3)^(1/3) = x^2 / y^2
    np.testing.assert_allclose(t.grad.cpu().numpy(), x ** 2 / np.repeat(np.repeat(np.repeat(ref, 2, 2), 2, 3), 3, 4)
                               ** 2, rtol=1e-10)
    if device == "cpu":
        assert gradcheck(lambda a: torch.nn.functional.lp_pool3d(a, 2.0, 2, stride=1), (t[:, :1, :3, :3, :3],))
    m = torch.nn.LPPool3d(2, 2)
    assert repr(m) == "LPPool3d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)"
    np.testing.assert_allclose(torch.nn.LPPool3d(float("inf"), 2)(t[..., :4, :4]).detach().cpu().numpy(),
                               np.abs(x[..., :4, :4]).reshape(1, 2, 2, 2, 2, 2, 2, 2).max((3, 5, 7)))


# ---------------------------------------------------------------------------------------------------------------
# ctc_loss dtypes, uint8 interpolation (values from PyTorch 2.13's uint8 kernels, checked by hand)
# ---------------------------------------------------------------------------------------------------------------
def test_ctc_loss_half_raises_as_pytorch(device):
    lp = torch.randn(6, 2, 4, device=device).log_softmax(2)
    args = (torch.tensor([[1, 2], [1, 1]], device=device), torch.tensor([6, 6]), torch.tensor([2, 2]))
    for dt, name in ((torch.float16, "Half"), (torch.int64, "Long")):
        with pytest.raises(NotImplementedError, match=f"\"ctc_loss_cpu\" not implemented for '{name}'"):
            torch.nn.functional.ctc_loss(lp.to(dt), *args)


_U8 = [[[[0, 37, 74, 111, 148, 185], [222, 3, 40, 77, 114, 151], [188, 225, 6, 43, 80, 117],
         [154, 191, 228, 9, 46, 83]], [[120, 157, 194, 231, 12, 49], [86, 123, 160, 197, 234, 15],
                                       [52, 89, 126, 163, 200, 237], [18, 55, 92, 129, 166, 203]]]]
_U8_AA_BILINEAR = [[[[52, 56, 109, 161], [171, 58, 68, 120], [178, 159, 47, 79]],
                    [[124, 176, 169, 54], [83, 135, 188, 160], [42, 94, 147, 199]]]]
_U8_AA_BICUBIC = [[[[40, 49, 116, 168], [184, 44, 65, 123], [182, 178, 32, 77]],
                   [[125, 185, 174, 35], [80, 132, 199, 163], [35, 87, 146, 208]]]]
_U8_BICUBIC_AC = [[[[0, 20, 48, 68, 93, 117, 137, 165, 185], [175, 48, 0, 40, 73, 94, 114, 142, 162],
                    [229, 168, 81, 6, 16, 67, 87, 114, 134], [177, 239, 204, 75, 22, 34, 56, 86, 106],
                    [154, 174, 211, 240, 119, 0, 26, 63, 83]],
                   [[120, 140, 168, 188, 237, 210, 59, 1, 49], [97, 117, 145, 165, 196, 211, 213, 117, 0],
                    [69, 89, 117, 137, 160, 190, 241, 206, 126], [41, 61, 89, 109, 134, 157, 175, 215, 253],
                    [18, 38, 66, 86, 111, 135, 155, 183, 203]]]]


def test_interpolate_uint8(device):
    F = torch.nn.functional
    x = torch.tensor(_U8, dtype=torch.uint8, device=device)
    for kw, want in (({"size": (3, 4), "mode": "bilinear", "antialias": True}, _U8_AA_BILINEAR),
                     ({"size": (3, 4), "mode": "bicubic", "antialias": True}, _U8_AA_BICUBIC),
                     ({"size": (5, 9), "mode": "bicubic", "align_corners": True}, _U8_BICUBIC_AC)):
        y = F.interpolate(x, **kw)
        assert y.dtype == torch.uint8
        np.testing.assert_array_equal(y.cpu().numpy(), np.array(want, np.uint8))
    # within one level of the float path (rounding), for a resize of one dim only as well
    for kw in ({"size": (4, 3), "mode": "bilinear", "antialias": True}, {"size": (7, 6), "mode": "bilinear"}):
        y = F.interpolate(x, **kw).cpu().numpy().astype(int)
        f = F.interpolate(x.float(), **kw).cpu().numpy()
        assert np.abs(y - np.clip(f, 0, 255)).max() <= 1
    np.testing.assert_array_equal(F.interpolate(x, size=(4, 6), mode="bilinear").cpu().numpy(), np.array(_U8))
    with pytest.raises(NotImplementedError, match="\"adaptive_avg_pool2d\" not implemented for 'Byte'"):
        F.interpolate(x, size=(2, 3), mode="area")
    with pytest.raises(NotImplementedError, match="\"compute_index_ranges_weights\" not implemented for 'Short'"):
        F.interpolate(x.to(torch.int16), size=(2, 3), mode="bilinear", antialias=True)
    with pytest.raises(NotImplementedError, match="\"compute_indices_weights_linear\" not implemented for 'Byte'"):
        F.interpolate(x[0], size=3, mode="linear")


def test_dataloader_pin_memory_warnings(monkeypatch):
    from coretorch import accelerator
    from coretorch.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(torch.arange(4.0))
    monkeypatch.setattr(accelerator, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="no accelerator is found, then device pinned memory won't be used"):
        batches = [b[0].tolist() for b in DataLoader(ds, batch_size=2, pin_memory=True)]
    assert batches == [[0.0, 1.0], [2.0, 3.0]]
    with pytest.warns(UserWarning, match="pin_memory_device is deprecated"):
        list(DataLoader(ds, batch_size=2, pin_memory=True, pin_memory_device="cpu"))
    assert not torch.ones(2).is_pinned()
    with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
        torch.ones(2).pin_memory()


def test_alpha_dropout(device):
    F = torch.nn.functional
    torch.manual_seed(0)
    x = torch.randn(40000, device=device, dtype=torch.float64)
    p = 0.2
    y = F.alpha_dropout(x, p, training=True)
    a = 1 / np.sqrt((1.7580993408473766 ** 2 * p + 1) * (1 - p))
    yn, xn = y.cpu().numpy(), x.cpu().numpy()
    dropped = np.isclose(yn, -1.7580993408473766 * a * (1 - p))
    np.testing.assert_allclose(yn[~dropped], xn[~dropped] * a + 1.7580993408473766 * a * p, rtol=1e-12)
    assert abs(dropped.mean() - p) < 0.01 and abs(yn.mean()) < 0.03 and abs(yn.std() - 1) < 0.03  # SELU moments
    assert F.alpha_dropout(x, p) is x                         # training=False by default, as PyTorch
    assert float(F.alpha_dropout(x[:4], 1.0, training=True).abs().sum()) == 0
    z = F.feature_alpha_dropout(torch.ones(4, 6, 5, device=device), 0.5, training=True).cpu().numpy()
    assert (z == z[:, :, :1]).all()                           # whole (N, C) channels share their mask
    g = torch.ones(3, 4, device=device, requires_grad=True)
    assert type(F.alpha_dropout(g, 0.5, True).grad_fn).__name__ == "AddBackward0"
    assert repr(torch.nn.AlphaDropout(0.3)) == "AlphaDropout(p=0.3, inplace=False)"
    assert repr(torch.nn.FeatureAlphaDropout()) == "FeatureAlphaDropout(p=0.5, inplace=False)"
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.alpha_dropout(x, 1.5, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        F.feature_alpha_dropout(torch.ones(3, device=device), 0.5, True)
