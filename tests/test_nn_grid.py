"""F.affine_grid and F.grid_sample (bilinear, nearest, bicubic; zeros, border, reflection; align_corners; 4-D
and 5-D) against a scalar numpy reference of PyTorch's kernels, gradients by gradcheck w.r.t. input and grid,
and PyTorch's errors and warnings; plus F.interpolate(antialias=True) against a numpy reference of PIL's /
PyTorch's antialiasing filters. Every device."""
import math
import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch.autograd import gradcheck
from coretorch.testing import available_devices


@pytest.fixture(params=available_devices())
def device(request):
    return request.param


def N(t):
    return t.detach().cpu().numpy()


# ---- numpy reference: PyTorch's grid sampler, one output point at a time ------------------------------------
def _unnorm(c, size, ac):
    return (c + 1) / 2 * (size - 1) if ac else ((c + 1) * size - 1) / 2


def _reflect(x, lo2, hi2):
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    x = abs(x - lo)
    extra, flips = math.fmod(x, span), math.floor(x / span)
    return extra + lo if flips % 2 == 0 else span - extra + lo


def _pad(x, size, pm, ac):
    if pm == "border":
        return min(max(x, 0), size - 1)
    if pm == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if ac else _reflect(x, -1, 2 * size - 1)
        return min(max(x, 0), size - 1)
    return x


def _cubic(t, a=-0.75):
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def np_grid_sample(x, grid, mode, pm, ac):
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    nsp = len(sizes)
    out = np.zeros((n, c) + grid.shape[1:-1])

    def at(b, pos):
        if all(0 <= p <= s - 1 for p, s in zip(pos, sizes)):
            return x[(b, slice(None)) + tuple(int(p) for p in pos)]
        return np.zeros(c)
    for b in range(n):
        for o in np.ndindex(*grid.shape[1:-1]):
            g = grid[(b,) + o]
            src = [_unnorm(g[nsp - 1 - k], sizes[k], ac) for k in range(nsp)]   # (z,) y, x
            if mode == "bicubic":
                y0, x0 = math.floor(src[0]), math.floor(src[1])
                wy, wx = _cubic(src[0] - y0), _cubic(src[1] - x0)
                v = np.zeros(c)
                for j in range(4):
                    for i in range(4):
                        py = _pad(y0 - 1 + j, sizes[0], pm, ac)
                        px = _pad(x0 - 1 + i, sizes[1], pm, ac)
                        v += wy[j] * wx[i] * at(b, (py, px))
                out[(b, slice(None)) + o] = v
                continue
            src = [_pad(s, size, pm, ac) for s, size in zip(src, sizes)]
            if mode == "nearest":
                out[(b, slice(None)) + o] = at(b, [np.rint(s) for s in src])
                continue
            lo = [math.floor(s) for s in src]
            v = np.zeros(c)
            for corner in np.ndindex(*(2,) * nsp):
                w = 1.0
                for k in range(nsp):
                    f = src[k] - lo[k]
                    w *= f if corner[k] else 1 - f
                v += w * at(b, [lo[k] + corner[k] for k in range(nsp)])
            out[(b, slice(None)) + o] = v
    return out


MODES4 = [(m, p) for m in ("bilinear", "nearest", "bicubic") for p in ("zeros", "border", "reflection")]


@pytest.mark.parametrize("mode,pm", MODES4)
@pytest.mark.parametrize("ac", [False, True])
def test_grid_sample_4d_matches_numpy(device, mode, pm, ac):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5))
    grid = rng.uniform(-1.6, 1.6, (2, 3, 4, 2))
    y = F.grid_sample(torch.tensor(x, device=device), torch.tensor(grid, device=device), mode=mode,
                      padding_mode=pm, align_corners=ac)
    assert y.shape == (2, 3, 3, 4) and y.device.type == device
    np.testing.assert_allclose(N(y), np_grid_sample(x, grid, mode, pm, ac), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode,pm", [(m, p) for m in ("bilinear", "nearest") for p in ("zeros", "border",
                                                                                      "reflection")])
def test_grid_sample_5d_matches_numpy(device, mode, pm):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 3, 4, 3))
    grid = rng.uniform(-1.5, 1.5, (1, 2, 2, 3, 3))
    for ac in (False, True):
        y = F.grid_sample(torch.tensor(x, device=device), torch.tensor(grid, device=device), mode=mode,
                          padding_mode=pm, align_corners=ac)
        assert y.shape == (1, 2, 2, 2, 3)
        np.testing.assert_allclose(N(y), np_grid_sample(x, grid, mode, pm, ac), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode,pm", [("bilinear", "zeros"), ("bilinear", "reflection"), ("bicubic", "border"),
                                     ("bicubic", "zeros"), ("nearest", "border")])
def test_grid_sample_gradcheck(device, mode, pm):
    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal((1, 1, 3, 3)), device=device, requires_grad=True)
    grid = torch.tensor(rng.uniform(-1.3, 1.3, (1, 1, 3, 2)), device=device, requires_grad=mode != "nearest")
    assert gradcheck(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=pm, align_corners=False), (x, grid))


def test_grid_sample_5d_gradcheck(device):
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((1, 1, 2, 2, 3)), device=device, requires_grad=True)
    grid = torch.tensor(rng.uniform(-1.2, 1.2, (1, 1, 1, 2, 3)), device=device, requires_grad=True)
    assert gradcheck(lambda a, g: F.grid_sample(a, g, padding_mode="border", align_corners=True), (x, grid))


def np_affine_grid(theta, size, ac):
    spatial = size[2:]

    def base(n):
        if n <= 1:
            return np.zeros(n)
        v = np.linspace(-1, 1, n)
        return v if ac else v * (n - 1) / n
    axes = np.meshgrid(*[base(s) for s in spatial], indexing="ij")             # (z,) y, x
    pts = np.stack(list(axes[::-1]) + [np.ones(spatial)], -1)                        # x, y, (z,), 1
    return np.einsum("...k,nck->n...c", pts, theta)


@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid_matches_numpy_and_gradcheck(device, ac):
    rng = np.random.default_rng(4)
    th2, th3 = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 3, 4))
    for th, size in ((th2, (2, 3, 4, 5)), (th2, (2, 1, 1, 3)), (th3, (2, 1, 2, 3, 4))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = F.affine_grid(torch.tensor(th, device=device), size, align_corners=ac)
        assert g.shape == (size[0],) + size[2:] + (len(size) - 2,)
        np.testing.assert_allclose(N(g), np_affine_grid(th, size, ac), rtol=1e-12, atol=1e-12)
    t = torch.tensor(th2, device=device, requires_grad=True)
    assert gradcheck(lambda a: F.affine_grid(a, (2, 1, 3, 2), align_corners=ac), (t,))


def test_identity_transform_round_trip(device):
    x = torch.randn(2, 3, 5, 6, device=device)
    theta = torch.tensor([[[1.0, 0, 0], [0, 1, 0]]] * 2, device=device)
    for ac in (False, True):
        grid = F.affine_grid(theta, x.shape, align_corners=ac)
        for mode in ("bilinear", "nearest", "bicubic"):
            y = F.grid_sample(x, grid, mode=mode, align_corners=ac)
            np.testing.assert_allclose(N(y), N(x), rtol=1e-5, atol=1e-5)


def test_grid_errors_and_warnings():
    x, g = torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 1, 2)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, g)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(torch.zeros(1, 2, 3), (1, 1, 2, 2))
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        F.grid_sample(x, g, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection'"):
        F.grid_sample(x, g, padding_mode="circular", align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(torch.zeros(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(x, torch.zeros(1, 1, 1, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(x, torch.zeros(2, 1, 1, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.grid_sample(x, g.double(), align_corners=False)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(torch.zeros(1, 2, 3, dtype=torch.int64), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(torch.zeros(1, 3, 4), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(ValueError, match="Expected a batch of 3D affine matrices of shape Nx3x4"):
        F.affine_grid(torch.zeros(1, 2, 3), (1, 1, 2, 2, 2), align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(torch.zeros(1, 2, 3), (1, 1, 2), align_corners=False)
    with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
        F.affine_grid(torch.zeros(1, 2, 3), (1, 0, 2, 2), align_corners=False)


# ---- interpolate(antialias=True) ----------------------------------------------------------------------------
def np_aa_weights(n_in, n_out, mode, ac, scale_factor=None):
    """PIL's antialiasing resampling weights as PyTorch computes them (filter stretched by the downscale)."""
    if ac:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1 / scale_factor if scale_factor else n_in / n_out
    a = -0.5

    def filt(x):
        x = abs(x)
        if mode == "bilinear":
            return max(1 - x, 0.0)
        if mode == "lanczos":
            return float(np.sinc(x) * np.sinc(x / 3)) if x < 3 else 0.0
        if x < 1:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        return (((x - 5) * x + 8) * x - 4) * a if x < 2 else 0.0
    half = {"bilinear": 1, "bicubic": 2, "lanczos": 3}[mode]
    support = half * scale if scale >= 1 else half
    inv = 1 / scale if scale >= 1 else 1.0
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n_in)
        taps = [filt((j - center + 0.5) * inv) for j in range(lo, hi)]
        w[i, lo:hi] = np.array(taps) / sum(taps)
    return w


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("ac", [False, True])
@pytest.mark.parametrize("size", [(4, 3), (9, 20), (1, 1)])
def test_interpolate_antialias_matches_numpy(device, mode, ac, size):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 11, 13))
    y = F.interpolate(torch.tensor(x, device=device), size=size, mode=mode, align_corners=ac, antialias=True)
    ref = np.einsum("oh,nchw,pw->ncop", np_aa_weights(11, size[0], mode, ac), x, np_aa_weights(13, size[1], mode, ac))
    np.testing.assert_allclose(N(y), ref, rtol=1e-10, atol=1e-12)


def test_interpolate_antialias_scale_factor_lanczos_and_gradcheck(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 10, 9))
    y = F.interpolate(torch.tensor(x, device=device), scale_factor=0.35, mode="bilinear", antialias=True)
    assert y.shape == (1, 2, 3, 3)
    ref = np.einsum("oh,nchw,pw->ncop", np_aa_weights(10, 3, "bilinear", False, 0.35), x,
                    np_aa_weights(9, 3, "bilinear", False, 0.35))
    np.testing.assert_allclose(N(y), ref, rtol=1e-10, atol=1e-12)
    y = F.interpolate(torch.tensor(x, device=device), size=(4, 5), mode="lanczos", antialias=True)
    ref = np.einsum("oh,nchw,pw->ncop", np_aa_weights(10, 4, "lanczos", False), x,
                    np_aa_weights(9, 5, "lanczos", False))
    np.testing.assert_allclose(N(y), ref, rtol=1e-10, atol=1e-12)
    t = torch.tensor(x[:, :1, :6, :5], device=device, requires_grad=True)
    assert gradcheck(lambda a: F.interpolate(a, size=(2, 3), mode="bicubic", antialias=True), (t,))
    # a constant image stays constant (weights sum to 1)
    c = F.interpolate(torch.full((1, 1, 9, 7), 2.5, device=device), size=(2, 3), mode="bicubic", antialias=True)
    np.testing.assert_allclose(N(c), 2.5, rtol=1e-6)


def test_interpolate_antialias_errors():
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear, bicubic, and lanczos"):
        F.interpolate(torch.zeros(1, 1, 4, 4), size=2, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(torch.zeros(1, 1, 2, 4, 4), size=2, mode="trilinear", antialias=True)
    with pytest.raises(ValueError, match="Lanczos mode requires antialias=True"):
        F.interpolate(torch.zeros(1, 1, 4, 4), size=2, mode="lanczos")
    with pytest.raises(ValueError, match="Lanczos mode does not support align_corners=True"):
        F.interpolate(torch.zeros(1, 1, 4, 4), size=2, mode="lanczos", antialias=True, align_corners=True)
