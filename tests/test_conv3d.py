"""F.conv3d and nn.Conv3d on every device: a direct numpy reference (stride, padding incl. 'same', dilation,
groups, bias), gradcheck in float64, padding_mode, PyTorch's repr and errors."""
import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.autograd import gradcheck

F = nn.functional


def _ref_conv3d(x, w, b, stride, padding, dilation, groups):
    """The definition: out[n, o, z, y, x] = sum over c in o's group and the kernel taps of w * x (zero padded)."""
    x = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    n, c, *size = x.shape
    o, cg, *ks = w.shape
    outs = [(s - d * (k - 1) - 1) // st + 1 for s, k, d, st in zip(size, ks, dilation, stride)]
    y = np.zeros((n, o) + tuple(outs))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for kz in range(ks[0]):
            for ky in range(ks[1]):
                for kx in range(ks[2]):
                    sl = x[:, g * cg:(g + 1) * cg,
                           kz * dilation[0]:kz * dilation[0] + stride[0] * (outs[0] - 1) + 1:stride[0],
                           ky * dilation[1]:ky * dilation[1] + stride[1] * (outs[1] - 1) + 1:stride[1],
                           kx * dilation[2]:kx * dilation[2] + stride[2] * (outs[2] - 1) + 1:stride[2]]
                    y[:, oc] += np.einsum("nczyx,c->nzyx", sl, w[oc, :, kz, ky, kx])
    return y + b.reshape(1, -1, 1, 1, 1)


@pytest.mark.parametrize("cfg", [dict(), dict(stride=(2, 1, 2), padding=1),
                                 dict(stride=(1, 2, 1), padding=(2, 0, 1), dilation=(2, 1, 2), groups=2)])
def test_conv3d_against_numpy_and_gradcheck(device, cfg):
    rng = np.random.default_rng(0)
    g = cfg.get("groups", 1)
    x, w, b = rng.normal(size=(2, 4, 6, 5, 5)), rng.normal(size=(6, 4 // g, 3, 2, 3)), rng.normal(size=6)
    want = _ref_conv3d(x, w, b, _t(cfg.get("stride", 1)), _t(cfg.get("padding", 0)), _t(cfg.get("dilation", 1)), g)
    X, W, B = (torch.tensor(a, device=device) for a in (x, w, b))
    got = F.conv3d(X, W, B, **cfg)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-10, atol=1e-10)
    small = [torch.tensor(rng.normal(size=s), device=device).requires_grad_()
             for s in ((1, 2 * g, 4, 3, 4), (2, 2, 2, 2, 2), (2,))]
    assert gradcheck(lambda a, k, c: F.conv3d(a, k, c, **cfg), small)


def _t(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * 3


def test_conv3d_module_same_padding_modes_and_errors(device):
    torch.manual_seed(0)
    m = nn.Conv3d(2, 3, 3, padding="same").double().to(device)
    x = torch.randn(1, 2, 4, 5, 6, dtype=torch.float64).to(device)
    assert m(x).shape == (1, 3, 4, 5, 6) and m(x[0]).shape == (3, 4, 5, 6)
    r = nn.Conv3d(2, 3, (3, 3, 2), padding=(1, 1, 1), padding_mode="reflect").double().to(device)
    manual = F.conv3d(F.pad(x, (1, 1, 1, 1, 1, 1), mode="reflect"), r.weight, r.bias)
    np.testing.assert_allclose(r(x).detach().cpu().numpy(), manual.detach().cpu().numpy(), rtol=1e-12)
    assert repr(r) == "Conv3d(2, 3, kernel_size=(3, 3, 2), stride=(1, 1, 1), padding=(1, 1, 1), padding_mode=reflect)"
    assert repr(nn.Conv3d(4, 8, 3, stride=2, groups=2, bias=False)) == \
        "Conv3d(4, 8, kernel_size=(3, 3, 3), stride=(2, 2, 2), groups=2, bias=False)"
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv3d(torch.randn(1, 2, 2, 5, 5).to(device), torch.randn(3, 2, 3, 3, 3).to(device))
    with pytest.raises(RuntimeError, match="expects an input of shape"):
        nn.Conv3d(2, 3, 3).to(device)(torch.randn(1, 4, 5, 5, 5).to(device))
