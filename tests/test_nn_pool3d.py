"""3-D pooling, adaptive max pooling (any output size), adaptive average pooling 1d/3d, max unpooling and
ConvTranspose3d on every device: numpy references written from the definitions, gradcheck in float64, PyTorch's
reprs and errors, empty and unbatched inputs."""
import itertools

import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.autograd import gradcheck, gradgradcheck

F = nn.functional


def _t3(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * 3


def _pool_len(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil else num // s) + 1
    if ceil and (out - 1) * s >= n + p:  # the last window must start inside the input or left padding
        out -= 1
    return out


def _ref_max_windows(x, windows):
    """x (N, C, *sp); windows: per dim, a list over outputs of the input positions the window reads.
    PyTorch's scan: the first maximum in (d, h, w) order; a NaN wins, and a later NaN replaces an earlier one."""
    n, c, *sp = x.shape
    outs = [len(w) for w in windows]
    vals = np.zeros((n, c, *outs))
    idx = np.zeros((n, c, *outs), dtype=np.int64)
    for b, ch in itertools.product(range(n), range(c)):
        for o in itertools.product(*[range(v) for v in outs]):
            best, bi = -np.inf, None
            for pos in itertools.product(*[windows[i][o[i]] for i in range(len(sp))]):
                v = x[(b, ch) + pos]
                flat = int(np.ravel_multi_index(pos, sp))
                if bi is None:
                    bi = flat
                if v > best or np.isnan(v):
                    best, bi = v, flat
            vals[(b, ch) + o], idx[(b, ch) + o] = best, bi
    return vals, idx


def _ref_max_pool3d(x, k, s, p, d, ceil):
    sp = x.shape[2:]
    wins = []
    for i in range(3):
        o = _pool_len(sp[i], k[i], s[i], p[i], d[i], ceil)
        wins.append([[q for q in (j * s[i] - p[i] + t * d[i] for t in range(k[i])) if 0 <= q < sp[i]]
                     for j in range(o)])
    return _ref_max_windows(x, wins)


def _adaptive_windows(n_in, n_out):
    return [list(range((j * n_in) // n_out, -(-((j + 1) * n_in) // n_out))) for j in range(n_out)]


def _ref_avg_pool3d(x, k, s, p, ceil, count_include_pad, divisor_override):
    n, c, *sp = x.shape
    outs = [_pool_len(sp[i], k[i], s[i], p[i], 1, ceil) for i in range(3)]
    y = np.zeros((n, c, *outs))
    for o in itertools.product(*[range(v) for v in outs]):
        lo = [o[i] * s[i] - p[i] for i in range(3)]
        hi = [min(lo[i] + k[i], sp[i] + p[i]) for i in range(3)]
        size = np.prod([hi[i] - lo[i] for i in range(3)])
        lo_c = [max(v, 0) for v in lo]
        hi_c = [min(hi[i], sp[i]) for i in range(3)]
        win = x[:, :, lo_c[0]:hi_c[0], lo_c[1]:hi_c[1], lo_c[2]:hi_c[2]]
        div = divisor_override or (size if count_include_pad else np.prod([hi_c[i] - lo_c[i] for i in range(3)]))
        y[(slice(None), slice(None)) + o] = win.sum(axis=(2, 3, 4)) / div
    return y


def _dev(a, device, **kw):
    return torch.tensor(a, device=device, **kw)


MAX_CFGS = [dict(kernel_size=2), dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0)),
            dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), dict(kernel_size=2, stride=1, dilation=(2, 1, 2))]


@pytest.mark.parametrize("cfg", MAX_CFGS)
def test_max_pool3d_against_numpy_and_gradcheck(device, cfg):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 2, 5, 4, 6))
    k = _t3(cfg["kernel_size"])
    s = _t3(cfg.get("stride", k))
    want_v, want_i = _ref_max_pool3d(x, k, s, _t3(cfg.get("padding", 0)), _t3(cfg.get("dilation", 1)),
                                     cfg.get("ceil_mode", False))
    v, i = F.max_pool3d(_dev(x, device), return_indices=True, **cfg)
    np.testing.assert_allclose(v.cpu().numpy(), want_v, rtol=0, atol=0)
    assert i.dtype == torch.int64 and np.array_equal(i.cpu().numpy(), want_i)
    v1, i1 = F.max_pool3d_with_indices(_dev(x[0], device), **cfg)  # unbatched
    assert np.array_equal(v1.cpu().numpy(), want_v[0]) and np.array_equal(i1.cpu().numpy(), want_i[0])
    m = nn.MaxPool3d(**cfg)
    assert np.array_equal(m(_dev(x, device)).cpu().numpy(), want_v)
    xs = _dev(rng.normal(size=(1, 1, 4, 3, 4)), device, requires_grad=True)
    assert gradcheck(lambda a: F.max_pool3d(a, **cfg), [xs])
    assert F.max_pool3d(xs, **cfg).grad_fn.name() == "MaxPool3DWithIndicesBackward0"


def test_max_pool3d_double_backward_nan_and_lowest(device):
    rng = np.random.default_rng(1)
    xs = _dev(rng.normal(size=(1, 1, 2, 3, 3)), device, requires_grad=True)
    assert gradgradcheck(lambda a: F.max_pool3d(a, 2, stride=1, padding=1), [xs])
    x = np.full((1, 1, 3, 3, 3), -np.inf)  # every tap -inf: the first tap inside the input, as PyTorch
    x[0, 0, 1, 1, 1] = np.nan
    x[0, 0, 2, 2, 2] = np.nan
    want_v, want_i = _ref_max_pool3d(x, (2,) * 3, (2,) * 3, (1,) * 3, (1,) * 3, False)
    v, i = F.max_pool3d(_dev(x, device), 2, padding=1, return_indices=True)
    np.testing.assert_array_equal(v.cpu().numpy(), want_v)
    np.testing.assert_array_equal(i.cpu().numpy(), want_i)
    xi = rng.integers(-50, 50, size=(1, 2, 4, 4, 4))
    vi = F.max_pool3d(_dev(xi, device), 2, padding=1)
    assert vi.dtype == torch.int64
    np.testing.assert_array_equal(vi.cpu().numpy(), _ref_max_pool3d(xi.astype(float), (2,) * 3, (2,) * 3,
                                                                     (1,) * 3, (1,) * 3, False)[0])


AVG_CFGS = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
            dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), count_include_pad=False),
            dict(kernel_size=2, stride=1, padding=1, divisor_override=3)]


@pytest.mark.parametrize("cfg", AVG_CFGS)
def test_avg_pool3d_against_numpy_and_gradcheck(device, cfg):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 5, 4, 6))
    k = _t3(cfg["kernel_size"])
    want = _ref_avg_pool3d(x, k, _t3(cfg.get("stride", k)), _t3(cfg.get("padding", 0)), cfg.get("ceil_mode", False),
                           cfg.get("count_include_pad", True), cfg.get("divisor_override"))
    np.testing.assert_allclose(F.avg_pool3d(_dev(x, device), **cfg).cpu().numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(nn.AvgPool3d(**cfg)(_dev(x[0], device)).cpu().numpy(), want[0], rtol=1e-12)
    xs = _dev(rng.normal(size=(1, 1, 4, 3, 4)), device, requires_grad=True)
    assert gradcheck(lambda a: F.avg_pool3d(a, **cfg), [xs])


def test_avg_pool3d_integer_truncates(device):
    x = np.arange(16).reshape(2, 2, 2, 2) * -3 - 1  # unbatched (C, D, H, W); sums not divisible by 8
    got = F.avg_pool3d(_dev(x, device), 2)
    assert got.dtype == torch.int64
    want = np.trunc(x.reshape(2, -1).sum(1) / 8).astype(np.int64).reshape(2, 1, 1, 1)
    np.testing.assert_array_equal(got.cpu().numpy(), want)


def test_pool3d_empty_batch_and_errors(device):
    z = torch.zeros(0, 2, 4, 4, 4, device=device)
    assert F.max_pool3d(z, 2).shape == (0, 2, 2, 2, 2) and F.avg_pool3d(z, 2).shape == (0, 2, 2, 2, 2)
    x = torch.randn(1, 2, 4, 5, 6, device=device)
    cases = [
        (lambda: F.max_pool3d(torch.randn(2, 3, 4, device=device), 2),
         "non-empty 4D or 5D \\(batch mode\\) tensor expected for input"),
        (lambda: F.max_pool3d(x, 2, padding=2), "pad should be at most half of effective kernel size, but got pad=2, "
                                                "kernel_size=2 and dilation=1"),
        (lambda: F.max_pool3d(x, 7), "Given input size: \\(2x4x5x6\\). Calculated output size: \\(2x0x0x0\\). "
                                     "Output size is too small"),
        (lambda: F.avg_pool3d(x, 7),
         "input image \\(T: 4 H: 5 W: 6\\) smaller than kernel size \\(kT: 7 kH: 7 kW: 7\\)"),
        (lambda: F.max_pool3d(x, 2, stride=0), "stride should not be zero"),
        (lambda: F.max_pool3d(x, 0, stride=1), "kernel size should be greater than zero, but got kT: 0 kH: 0 kW: 0"),
        (lambda: F.max_pool3d(x, 2, dilation=0), "dilation should be greater than zero"),
        (lambda: F.avg_pool3d(x, 2, padding=-1), "pad must be non-negative, but got pad: -1"),
        (lambda: F.avg_pool3d(x, 2, divisor_override=0), "divisor must be not zero"),
        (lambda: F.max_pool3d(x, (2, 2)), "max_pool3d: kernel_size must either be a single int, or a tuple of three"),
        (lambda: F.avg_pool3d(x, 2, stride=(1, 2)), "avg_pool3d: stride must be omitted, a single int, or a tuple"),
        (lambda: F.max_pool3d(torch.zeros(1, 2, 0, 4, 4, device=device), 2),
         "Expected input's non-batch dimensions to have positive length"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn()
    with pytest.raises(NotImplementedError, match="\"max_pool3d\" not implemented for 'Bool'"):
        F.max_pool3d(torch.zeros(1, 2, 2, 2, 2, dtype=torch.bool, device=device), 2)
    with pytest.raises(TypeError, match="divisor_override"):
        F.avg_pool3d(x, 2, divisor_override=1.5)


# ---- adaptive pooling ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nsp,in_sp,out", [(1, (7,), 3), (2, (5, 7), (3, 4)), (2, (6, 6), (4, None)),
                                           (3, (5, 4, 7), (2, 3, 4)), (3, (3, 3, 3), 2)])
def test_adaptive_max_pool_any_size(device, nsp, in_sp, out):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3) + in_sp)
    outs = out if isinstance(out, tuple) else (out,) * nsp
    outs = tuple(in_sp[i] if outs[i] is None else outs[i] for i in range(nsp))
    want_v, want_i = _ref_max_windows(x, [_adaptive_windows(in_sp[i], outs[i]) for i in range(nsp)])
    fn = getattr(F, f"adaptive_max_pool{nsp}d")
    v, i = fn(_dev(x, device), out, return_indices=True)
    np.testing.assert_array_equal(v.cpu().numpy(), want_v)
    np.testing.assert_array_equal(i.cpu().numpy(), want_i)
    v1, i1 = getattr(F, f"adaptive_max_pool{nsp}d_with_indices")(_dev(x[0], device), out)  # unbatched
    np.testing.assert_array_equal(v1.cpu().numpy(), want_v[0])
    np.testing.assert_array_equal(i1.cpu().numpy(), want_i[0])
    m = getattr(nn, f"AdaptiveMaxPool{nsp}d")(out, return_indices=True)
    np.testing.assert_array_equal(m(_dev(x, device))[1].cpu().numpy(), want_i)
    small = (5, 3, 4)[:nsp]  # gradcheck on a smaller non-divisible case
    xs = _dev(rng.normal(size=(1, 1) + small), device, requires_grad=True)
    assert gradcheck(lambda a: fn(a, (3, 2, 3)[:nsp]), [xs])


@pytest.mark.parametrize("nsp,in_sp,out", [(1, (7,), 3), (1, (6,), 4), (3, (5, 4, 7), (2, None, 3)),
                                           (3, (4, 4, 4), 2)])
def test_adaptive_avg_pool_1d_3d(device, nsp, in_sp, out):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3) + in_sp)
    outs = out if isinstance(out, tuple) else (out,) * nsp
    outs = tuple(in_sp[i] if outs[i] is None else outs[i] for i in range(nsp))
    wins = [_adaptive_windows(in_sp[i], outs[i]) for i in range(nsp)]
    want = np.zeros((2, 3) + outs)
    for o in itertools.product(*[range(v) for v in outs]):
        sl = tuple(slice(wins[i][o[i]][0], wins[i][o[i]][-1] + 1) for i in range(nsp))
        want[(slice(None), slice(None)) + o] = x[(slice(None), slice(None)) + sl].mean(axis=tuple(range(2, 2 + nsp)))
    fn = getattr(F, f"adaptive_avg_pool{nsp}d")
    np.testing.assert_allclose(fn(_dev(x, device), out).cpu().numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fn(_dev(x[0], device), out).cpu().numpy(), want[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(getattr(nn, f"AdaptiveAvgPool{nsp}d")(out)(_dev(x, device)).cpu().numpy(), want,
                               rtol=1e-12, atol=1e-12)
    small = (5, 3, 4)[:nsp]  # gradcheck on a smaller non-divisible case
    xs = _dev(rng.normal(size=(1, 1) + small), device, requires_grad=True)
    assert gradcheck(lambda a: fn(a, (3, 2, 3)[:nsp]), [xs])


def test_adaptive_pool_empty_and_errors(device):
    assert F.adaptive_max_pool2d(torch.randn(0, 2, 5, 7, device=device), 2).shape == (0, 2, 2, 2)
    assert F.adaptive_max_pool3d(torch.randn(1, 2, 3, 3, 3, device=device), 0).shape == (1, 2, 0, 0, 0)
    assert F.adaptive_avg_pool3d(torch.randn(1, 2, 3, 3, 3, device=device), 0).shape == (1, 2, 0, 0, 0)
    assert F.adaptive_max_pool1d(torch.randn(1, 2, 3, device=device), 0).shape == (1, 2, 0)
    x4 = torch.randn(1, 2, 3, 3, device=device)
    cases = [
        (lambda: F.adaptive_max_pool1d(torch.randn(1, 2, 7, device=device), (3, 4)),
         "adaptive_max_pool1d\\(\\) argument 'output_size' should contain one int \\(got 2\\)"),
        (lambda: F.adaptive_max_pool2d(x4, (3, 4, 5)), "adaptive_max_pool2d\\(\\): internal error: output_size.size"),
        (lambda: F.adaptive_max_pool2d(torch.randn(1, 2, 0, 7, device=device), 2),
         "adaptive_max_pool2d\\(\\): Expected input to have non-zero size for non-batch dimensions, but input has "
         "sizes \\[1, 2, 0, 7\\] with dimension 2 being empty"),
        (lambda: F.adaptive_max_pool3d(torch.randn(2, 5, 7, device=device), 2),
         "adaptive_max_pool3d\\(\\): Expected 4D or 5D tensor, but got: \\[2, 5, 7\\]"),
        (lambda: F.adaptive_avg_pool3d(torch.randn(2, 5, 7, device=device), 2),
         "adaptive_avg_pool3d\\(\\): Expected 4D or 5D tensor, but got \\[2, 5, 7\\]"),
        (lambda: F.adaptive_max_pool1d(x4, 2), "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument "
                                               "#1 'self' \\(while checking arguments for adaptive_max_pool1d\\)"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn()
    with pytest.raises(NotImplementedError, match="\"adaptive_max_pool2d\" not implemented for 'Int'"):
        F.adaptive_max_pool2d(torch.zeros(1, 2, 3, 3, dtype=torch.int32, device=device), 2)


# ---- max unpooling ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_unpool_inverts_max_pool(device, nsp):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3) + (4, 6, 5)[:nsp])
    pool = getattr(F, f"max_pool{nsp}d")
    unpool = getattr(F, f"max_unpool{nsp}d")
    X = _dev(x, device)
    v, i = pool(X, 2, stride=2, return_indices=True)
    out = unpool(v, i, 2, output_size=X.shape)
    assert tuple(out.shape) == x.shape
    want = np.zeros((2, 3, int(np.prod(x.shape[2:]))))
    np.put_along_axis(want, i.cpu().numpy().reshape(2, 3, -1), v.cpu().numpy().reshape(2, 3, -1), axis=2)
    np.testing.assert_array_equal(out.cpu().numpy(), want.reshape(x.shape))
    xe = X[..., :X.shape[-1] // 2 * 2]  # even sizes: the default size (in - 1) * stride + kernel is the input's
    ve, ie = pool(xe, 2, return_indices=True)
    default = unpool(ve, ie, 2)
    assert default.shape == xe.shape
    np.testing.assert_array_equal(default.cpu().numpy(), unpool(ve, ie, 2, output_size=xe.shape[2:]).cpu().numpy())
    m = getattr(nn, f"MaxUnpool{nsp}d")(2)
    np.testing.assert_array_equal(m(v[0], i[0], output_size=x.shape[2:]).cpu().numpy(), want.reshape(x.shape)[0])
    vs = v[:1, :2].detach().requires_grad_()
    assert gradcheck(lambda a: unpool(a, i[:1, :2], 2, output_size=X.shape[2:]), [vs])
    if nsp > 1:  # PyTorch runs the 1-d form as the 2-d op between unsqueeze and squeeze
        assert unpool(vs, i[:1, :2], 2, output_size=X.shape[2:]).grad_fn.name() == f"MaxUnpool{nsp}DBackward0"


def test_max_unpool_errors(device):
    x = torch.randn(1, 2, 4, 4, device=device)
    v, i = F.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(ValueError, match='invalid output_size "\\(7, 7\\)" \\(dim 0 must be between 2 and 6\\)'):
        F.max_unpool2d(v, i, 2, output_size=(7, 7))
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 elements, but it has a "
                                         "length of '1'"):
        F.max_unpool2d(v, i, 2, output_size=(5,))
    bad = i.clone()
    bad[0, 0, 0, 1] = 21
    with pytest.raises(RuntimeError, match="Found an invalid max index: 21 \\(output volumes are of size 4x4"):
        F.max_unpool2d(v, bad, 2)
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same as that of the input tensor"):
        F.max_unpool2d(v, i[:, :, :1], 2)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64 but got: Float"):
        F.max_unpool2d(v, i.float(), 2)
    with pytest.raises(RuntimeError, match="Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor "
                                           "with 2 dimensions."):
        F.max_unpool2d(v[0, 0], i[0, 0], 2)
    with pytest.raises(RuntimeError, match="Input to max_unpooling3d should be a 4d or 5d Tensor"):
        F.max_unpool3d(v[0], i[0], 2)
    e = F.max_unpool2d(torch.zeros(0, 2, 2, 2, device=device), torch.zeros(0, 2, 2, 2, dtype=torch.int64,
                                                                             device=device), 2)
    assert e.shape == (0, 2, 4, 4)


# ---- ConvTranspose3d ----------------------------------------------------------------------------------------------
def _ref_conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation):
    """The definition: each input element adds w * x at output position i * stride - padding + k * dilation."""
    n, cin, *sp = x.shape
    _, cog, *ks = w.shape
    full = [(sp[i] - 1) * stride[i] + dilation[i] * (ks[i] - 1) + 1 + output_padding[i] for i in range(3)]
    y = np.zeros((n, cog * groups, *full))
    cg = cin // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for kz, ky, kx in itertools.product(*[range(k) for k in ks]):
            contrib = np.einsum("nczyx,co->nozyx", xs, w[g * cg:(g + 1) * cg, :, kz, ky, kx])
            o = (kz * dilation[0], ky * dilation[1], kx * dilation[2])
            y[:, g * cog:(g + 1) * cog, o[0]:o[0] + (sp[0] - 1) * stride[0] + 1:stride[0],
              o[1]:o[1] + (sp[1] - 1) * stride[1] + 1:stride[1], o[2]:o[2] + (sp[2] - 1) * stride[2] + 1:stride[2]] \
                += contrib
    outs = [full[i] - output_padding[i] - 2 * padding[i] + output_padding[i] for i in range(3)]
    y = y[:, :, padding[0]:padding[0] + outs[0], padding[1]:padding[1] + outs[1], padding[2]:padding[2] + outs[2]]
    return y + b.reshape(1, -1, 1, 1, 1)


@pytest.mark.parametrize("cfg", [dict(), dict(stride=2, padding=1, output_padding=1),
                                 dict(stride=(2, 1, 2), padding=(1, 0, 0), output_padding=(1, 0, 0), groups=2,
                                      dilation=(1, 2, 1))])
def test_conv_transpose3d_against_numpy_and_gradcheck(device, cfg):
    rng = np.random.default_rng(6)
    g = cfg.get("groups", 1)
    x, w, b = rng.normal(size=(2, 4, 3, 4, 3)), rng.normal(size=(4, 3, 2, 3, 2)), rng.normal(size=3 * g)
    want = _ref_conv_transpose3d(x, w, b, _t3(cfg.get("stride", 1)), _t3(cfg.get("padding", 0)),
                                 _t3(cfg.get("output_padding", 0)), g, _t3(cfg.get("dilation", 1)))
    got = F.conv_transpose3d(_dev(x, device), _dev(w, device), _dev(b, device), **cfg)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10, atol=1e-10)
    got1 = F.conv_transpose3d(_dev(x[0], device), _dev(w, device), _dev(b, device), **cfg)  # unbatched
    np.testing.assert_allclose(got1.cpu().numpy(), want[0], rtol=1e-10, atol=1e-10)
    small = [_dev(rng.normal(size=s), device, requires_grad=True)
             for s in ((1, 2 * g, 2, 2, 2), (2 * g, 3 - g, 2, 1, 2), ((3 - g) * g,))]
    assert gradcheck(lambda a, k, c: F.conv_transpose3d(a, k, c, **cfg), small)


def test_conv_transpose3d_module_and_errors(device):
    torch.manual_seed(0)
    m = nn.ConvTranspose3d(4, 6, 3, stride=2).double().to(device)
    x = torch.randn(1, 4, 3, 4, 5, dtype=torch.float64).to(device)
    assert m(x).shape == (1, 6, 7, 9, 11)
    assert m(x, output_size=(8, 10, 12)).shape == (1, 6, 8, 10, 12)
    assert m(x, output_size=(1, 6, 8, 10, 12)).shape == (1, 6, 8, 10, 12)
    assert m(x[0], output_size=(8, 9, 12)).shape == (6, 8, 9, 12)
    ref = F.conv_transpose3d(x, m.weight, m.bias, 2, 0, (1, 1, 1))
    np.testing.assert_allclose(m(x, output_size=(8, 10, 12)).detach().cpu().numpy(), ref.detach().cpu().numpy())
    with pytest.raises(ValueError, match="ConvTranspose3D: for 5D input, output_size must have 3 or 5 elements "
                                         "\\(got 2\\)"):
        m(x, output_size=(8, 10))
    with pytest.raises(ValueError, match="requested an output size of \\[9, 10, 12\\], but valid sizes range from "
                                         "\\[7, 9, 11\\] to \\[8, 10, 12\\]"):
        m(x, output_size=(9, 10, 12))
    assert repr(nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, bias=False,
                                   dilation=2)) == ("ConvTranspose3d(4, 6, kernel_size=(3, 3, 3), stride=(2, 2, 2), "
                                                    "padding=(1, 1, 1), dilation=(2, 2, 2), output_padding=(1, 1, 1), "
                                                    "groups=2, bias=False)")
    for mode in ("reflect", "circular", "foo"):
        with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose3d'):
            nn.ConvTranspose3d(4, 6, 3, padding_mode=mode)
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(4, 6, 3, padding_mode="replicate")
    w = torch.randn(4, 3, 2, 3, 2, device=device)
    xf = torch.randn(1, 4, 3, 4, 5, device=device)
    cases = [
        (lambda: F.conv_transpose3d(xf, w, stride=1, output_padding=1),
         "output padding must be smaller than either stride or dilation, but got output_padding_depth: 1"),
        (lambda: F.conv_transpose3d(xf, w, bias=torch.randn(4, device=device)),
         "Given transposed=1, weight of size \\[4, 3, 2, 3, 2\\], expected bias to be 1-dimensional with 3 elements"),
        (lambda: F.conv_transpose3d(xf[:, :3], w), "expected input\\[1, 3, 3, 4, 5\\] to have 4 channels, but got 3"),
        (lambda: F.conv_transpose3d(xf[0, 0], w), "Expected 4D \\(unbatched\\) or 5D \\(batched\\) input to "
                                                  "conv_transpose3d"),
        (lambda: F.conv_transpose3d(xf, w, padding=5), "Calculated output size per channel: \\(-6 x -4 x -4\\). "
                                                       "Output size is too small"),
        (lambda: F.conv_transpose3d(xf, w, groups=3), "Given groups=3, expected weight to be divisible by 3 at "
                                                      "dimension 0"),
        (lambda: F.conv_transpose3d(xf, w, stride=0), "non-positive stride is not supported"),
        (lambda: F.conv_transpose3d(xf, w, padding=(1, 2)), "expected padding to be a single integer value or a list "
                                                            "of 3 values"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn()
    assert F.conv_transpose3d(torch.zeros(0, 4, 3, 4, 5, device=device), w).shape == (0, 3, 4, 6, 6)


def test_pool_reprs():
    assert repr(nn.MaxPool3d(2)) == "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.MaxPool3d((2, 1, 2), stride=1, padding=1, dilation=2, ceil_mode=True, return_indices=True)) == \
        "MaxPool3d(kernel_size=(2, 1, 2), stride=1, padding=1, dilation=2, ceil_mode=True)"
    assert repr(nn.AvgPool3d(2)) == "AvgPool3d(kernel_size=2, stride=2, padding=0)"
    assert repr(nn.AdaptiveMaxPool3d((2, None, 3), return_indices=True)) == \
        "AdaptiveMaxPool3d(output_size=(2, None, 3))"
    assert repr(nn.AdaptiveMaxPool1d(3)) == "AdaptiveMaxPool1d(output_size=3)"
    assert repr(nn.AdaptiveAvgPool3d(3)) == "AdaptiveAvgPool3d(output_size=3)"
    assert repr(nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert repr(nn.MaxUnpool1d(2, stride=1, padding=1)) == "MaxUnpool1d(kernel_size=(2,), stride=(1,), padding=(1,))"
    assert repr(nn.MaxUnpool3d((2, 1, 2))) == "MaxUnpool3d(kernel_size=(2, 1, 2), stride=(2, 1, 2), padding=(0, 0, 0))"


def test_empty_batch_backward(device):
    x = torch.zeros(0, 2, 4, 4, 4, device=device, requires_grad=True)
    for fn in (lambda a: F.max_pool3d(a, 2), lambda a: F.adaptive_max_pool3d(a, 3), lambda a: F.avg_pool3d(a, 2)):
        y = fn(x)
        y.sum().backward()
        assert x.grad.shape == x.shape
        x.grad = None
    v = torch.zeros(0, 2, 2, 2, device=device, requires_grad=True)
    F.max_unpool2d(v, torch.zeros(0, 2, 2, 2, dtype=torch.int64, device=device), 2).sum().backward()
    assert v.grad.shape == v.shape


def test_small_3d_cnn_with_lazy_head_trains(device):
    """Conv3d, BatchNorm3d, MaxPool3d, ConvTranspose3d, AdaptiveAvgPool3d and a LazyLinear head: the loss falls."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.BatchNorm3d(4), nn.ReLU(), nn.MaxPool3d(2),
                        nn.ConvTranspose3d(4, 4, 2, stride=2), nn.AdaptiveAvgPool3d((2, 1, 2)), nn.Flatten(),
                        nn.LazyLinear(2)).to(device)
    x = torch.randn(4, 1, 4, 4, 4, device=device)
    y = torch.tensor([0, 1, 0, 1], device=device)
    net(x)  # materialise the lazy head, then build the optimizer on the real parameters
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
