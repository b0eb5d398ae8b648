"""Layers of the nn surface beyond the basics, on every device: PReLU, GLU, Softmax2d, Hard/Softshrink, RReLU,
Pixel(Un)Shuffle, ChannelShuffle, the padding layers, Upsample*, InstanceNorm1d/2d/3d, LocalResponseNorm,
CrossMapLRN2d, CosineSimilarity, PairwiseDistance: numpy references, gradcheck, PyTorch's reprs and errors."""
import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.autograd import gradcheck
from coretorch.testing import gradcheck_like_cpu

F = nn.functional


def N(t):
    return t.detach().cpu().numpy()


def _x(device, shape=(2, 8, 4, 4), seed=0):
    return torch.tensor(np.random.default_rng(seed).normal(size=shape), device=device)


def test_activations_against_numpy(device):
    x = _x(device)
    a = N(x)
    m = nn.PReLU(8).double().to(device)
    with torch.no_grad():
        m.weight.copy_(torch.linspace(0.1, 0.8, 8, dtype=torch.float64))
    w = np.linspace(0.1, 0.8, 8).reshape(1, 8, 1, 1)
    np.testing.assert_allclose(N(m(x)), np.where(a > 0, a, w * a))
    np.testing.assert_allclose(N(F.prelu(x, torch.tensor([0.3], dtype=torch.float64, device=device))),
                               np.where(a > 0, a, 0.3 * a))
    np.testing.assert_allclose(N(nn.GLU(1)(x)), a[:, :4] / (1 + np.exp(-a[:, 4:])), rtol=1e-12)
    np.testing.assert_allclose(N(nn.Hardshrink(0.7)(x)), np.where(np.abs(a) > 0.7, a, 0))
    np.testing.assert_allclose(N(nn.Softshrink(0.7)(x)), np.sign(a) * np.maximum(np.abs(a) - 0.7, 0))
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(N(nn.Softmax2d()(x)), e / e.sum(1, keepdims=True), rtol=1e-12)
    r = nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_allclose(N(r(x)), np.where(a >= 0, a, 0.2 * a))
    torch.manual_seed(0)
    y = N(r.train()(x))
    slope = y[a < 0] / a[a < 0]
    assert ((slope >= 0.1) & (slope <= 0.3)).all() and slope.std() > 0.01  # one random slope per element
    np.testing.assert_array_equal(y[a >= 0], a[a >= 0])


def test_gradcheck(device):
    # gradcheck on the CPU; on another device the same outputs and vjp as on the CPU (gradcheck_like_cpu)
    x = _x(device, (2, 4, 3, 3)).requires_grad_()
    w = torch.tensor([0.2, -0.1, 0.5, 0.3], dtype=torch.float64, device=device).requires_grad_()
    assert gradcheck_like_cpu(lambda t, p: F.prelu(t, p), (x, w))
    assert gradcheck_like_cpu(lambda t: F.glu(t, 1), (x,))
    assert gradcheck_like_cpu(lambda t: F.softshrink(t, 0.3), (x,))
    assert gradcheck_like_cpu(lambda t: F.pixel_shuffle(t, 2), (x,))
    assert gradcheck_like_cpu(lambda t: F.pixel_unshuffle(F.pad(t, (0, 1, 0, 1), "reflect"), 2), (x,))
    assert gradcheck_like_cpu(lambda t: F.channel_shuffle(t, 2), (x,))
    for mode in ("constant", "reflect", "replicate", "circular"):
        assert gradcheck_like_cpu(lambda t: F.pad(t, (1, 2, 2, 1), mode), (x,))
    inorm = {d: nn.InstanceNorm2d(4, affine=True).double().to(d) for d in {"cpu", device}}
    assert gradcheck_like_cpu(lambda t: inorm[t.device.type](t), (x,))
    assert gradcheck_like_cpu(lambda t: nn.Upsample(scale_factor=2, mode="bilinear")(t), (x,))
    assert gradcheck_like_cpu(lambda t: nn.CosineSimilarity()(t, t.flip(1)), (x,))


def test_shuffles_and_padding_against_numpy(device):
    x = _x(device)
    a = N(x)
    ps = N(nn.PixelShuffle(2)(x))  # out[n, c, 2h+i, 2w+j] = in[n, 4c + 2i + j, h, w]
    ref = a.reshape(2, 2, 2, 2, 4, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 8, 8)
    np.testing.assert_array_equal(ps, ref)
    np.testing.assert_array_equal(N(nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(x))), a)
    cs = N(nn.ChannelShuffle(2)(x))
    np.testing.assert_array_equal(cs, a.reshape(2, 2, 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(2, 8, 4, 4))
    pads = (1, 2, 2, 1)
    np_pad = ((0, 0), (0, 0), (2, 1), (1, 2))
    for layer, mode, kw in ((nn.ZeroPad2d(pads), "constant", {}), (nn.ConstantPad2d(pads, 3.5), "constant",
                                                                   {"constant_values": 3.5}),
                            (nn.ReflectionPad2d(pads), "reflect", {}), (nn.ReplicationPad2d(pads), "edge", {}),
                            (nn.CircularPad2d(pads), "wrap", {})):
        np.testing.assert_array_equal(N(layer(x)), np.pad(a, np_pad, mode, **kw), err_msg=repr(layer))
    x1 = _x(device, (2, 3, 5))
    np.testing.assert_array_equal(N(nn.ReflectionPad1d(2)(x1)), np.pad(N(x1), ((0, 0), (0, 0), (2, 2)), "reflect"))
    x3 = _x(device, (1, 2, 3, 3, 3))
    np.testing.assert_array_equal(N(nn.ReplicationPad3d(1)(x3)), np.pad(N(x3), ((0, 0), (0, 0)) + ((1, 1),) * 3,
                                                                         "edge"))


def test_instance_norm_running_stats(device):
    x = _x(device, (3, 4, 5))
    a = N(x)
    m = nn.InstanceNorm1d(4, affine=True, track_running_stats=True, momentum=0.2).double().to(device)
    out = N(m(x))
    mu, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (a - mu) / np.sqrt(var + 1e-5), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(N(m.running_mean), 0.2 * a.mean(-1).mean(0), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(N(m.running_var), 0.8 + 0.2 * a.var(-1, ddof=1).mean(0), rtol=1e-10)
    m.eval()
    rm, rv = N(m.running_mean)[None, :, None], N(m.running_var)[None, :, None]
    np.testing.assert_allclose(N(m(x)), (a - rm) / np.sqrt(rv + 1e-5), rtol=1e-10)
    # unbatched input and the default (no running stats: eval still uses the input's statistics)
    n2 = nn.InstanceNorm2d(2).double().to(device).eval()
    u = _x(device, (2, 3, 3))
    ua = N(u)
    ref = (ua - ua.mean((1, 2), keepdims=True)) / np.sqrt(ua.var((1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(N(n2(u)), ref, rtol=1e-10, atol=1e-12)
    assert nn.InstanceNorm3d(2)(_x(device, (1, 2, 2, 2, 2))).shape == (1, 2, 2, 2, 2)


def test_lrn_distances_upsample(device):
    x = _x(device, (2, 5, 3, 3))
    a = N(x)
    sq = np.pad(a ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    div = np.stack([sq[:, c:c + 3].sum(1) for c in range(5)], 1) / 3
    np.testing.assert_allclose(N(nn.LocalResponseNorm(3, alpha=0.1)(x)), a / (1 + 0.1 * div) ** 0.75, rtol=1e-12)
    np.testing.assert_allclose(N(nn.CrossMapLRN2d(3, alpha=0.1)(x)), a / (1 + 0.1 * div) ** 0.75, rtol=1e-12)
    b = a[:, ::-1].copy()
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-8)
    np.testing.assert_allclose(N(nn.CosineSimilarity()(x, torch.tensor(b, device=device))), cos, rtol=1e-12)
    pd = np.linalg.norm(a - b + 1e-6, axis=-1)
    np.testing.assert_allclose(N(nn.PairwiseDistance()(x, torch.tensor(b, device=device))), pd, rtol=1e-12)
    up = N(nn.UpsamplingNearest2d(scale_factor=2)(x))
    np.testing.assert_array_equal(up, a.repeat(2, 2).repeat(2, 3))
    # align_corners=True bilinear keeps the corners and is linear between them
    lin = torch.arange(3.0, dtype=torch.float64, device=device).reshape(1, 1, 1, 3).expand(1, 1, 2, 3)
    out = N(nn.UpsamplingBilinear2d(size=(2, 5))(lin))
    np.testing.assert_allclose(out[0, 0, 0], [0, 0.5, 1, 1.5, 2])


def test_reprs_and_errors_as_pytorch(device):
    reprs = {nn.PReLU(): "PReLU(num_parameters=1)", nn.GLU(): "GLU(dim=-1)", nn.Hardshrink(): "Hardshrink(0.5)",
             nn.Softshrink(): "Softshrink(0.5)", nn.RReLU(): "RReLU(lower=0.125, upper=0.3333333333333333)",
             nn.CosineSimilarity(): "CosineSimilarity()", nn.PixelShuffle(2): "PixelShuffle(upscale_factor=2)",
             nn.ChannelShuffle(2): "ChannelShuffle(groups=2)", nn.ZeroPad2d(1): "ZeroPad2d((1, 1, 1, 1))",
             nn.ConstantPad1d(2, 3.5): "ConstantPad1d(padding=(2, 2), value=3.5)",
             nn.ReplicationPad3d(1): "ReplicationPad3d((1, 1, 1, 1, 1, 1))",
             nn.Upsample(scale_factor=2): "Upsample(scale_factor=2.0, mode='nearest')",
             nn.UpsamplingBilinear2d(scale_factor=2): "UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear')",
             nn.InstanceNorm2d(3): "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                                   "track_running_stats=False)",
             nn.LocalResponseNorm(2): "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)",
             nn.CrossMapLRN2d(3): "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)", nn.Softmax2d(): "Softmax2d()"}
    for m, r in reprs.items():
        assert repr(m) == r
    x = _x(device, (2, 3))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(x, torch.ones(2, dtype=torch.float64, device=device))
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
        F.glu(x)
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 1.79769e\+308\] for input dtype Double"):
        F.softshrink(x, -1.0)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(x)
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(3\), but got: 4"):
        nn.InstanceNorm1d(3, affine=True)(_x(device, (2, 4, 5)))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(_x(device, (2, 4, 5)))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(x)
    with pytest.raises(RuntimeError, match="pixel_unshuffle expects height to be divisible by downscale_factor"):
        F.pixel_unshuffle(_x(device, (1, 1, 5, 4)), 2)
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 5 channels"):
        F.channel_shuffle(_x(device, (1, 5, 2, 2)), 2)
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        nn.CrossMapLRN2d(3)(_x(device, (2, 3, 4)))


def test_super_resolution_net_trains(device):
    # an ESPCN-style net: conv features, PixelShuffle x2 on top of a bilinear upsampling, on smooth images
    torch.manual_seed(0)
    hi = F.interpolate(torch.rand(8, 1, 5, 5), size=(16, 16), mode="bilinear", align_corners=True).to(device)
    lo = F.interpolate(hi, scale_factor=0.5, mode="bilinear", align_corners=False)
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.PReLU(16), nn.ReflectionPad2d(1), nn.Conv2d(16, 4, 3),
                        nn.PixelShuffle(2)).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    losses = []
    for _ in range(40):
        loss = F.mse_loss(net(lo) + nn.Upsample(scale_factor=2, mode="bilinear")(lo), hi)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert net(lo).shape == (8, 1, 16, 16)
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5]), losses


def test_margin_losses_against_numpy(device):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 4))
    y = np.array([1, 0, 3])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    X, Y, W = (torch.tensor(v, device=device) for v in (x, y, w))
    for p, margin, weight in ((1, 1.0, None), (2, 0.5, W)):
        ref = []
        for i in range(3):
            h = np.maximum(margin - x[i, y[i]] + x[i], 0) ** p
            h[y[i]] = 0
            ref.append(h.sum() / 4 * (w[y[i]] if weight is not None else 1))
        got = nn.MultiMarginLoss(p=p, margin=margin, weight=weight, reduction="none")(X, Y)
        np.testing.assert_allclose(N(got), ref, rtol=1e-12)
    t = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 1, 2]])
    ref = []
    for i in range(3):
        tgt = list(t[i][:list(t[i]).index(-1)] if -1 in t[i] else t[i])
        others = [k for k in range(4) if k not in tgt]
        ref.append(sum(max(0, 1 - (x[i, j] - x[i, k])) for j in tgt for k in others) / 4)
    np.testing.assert_allclose(N(nn.MultiLabelMarginLoss(reduction="none")(X, torch.tensor(t, device=device))), ref,
                               rtol=1e-12)
    yl = rng.integers(0, 2, size=(3, 4)).astype(float)
    ls = lambda v: -np.log1p(np.exp(-v))  # noqa: E731
    ref = -(yl * ls(x) + (1 - yl) * ls(-x)) * w
    got = nn.MultiLabelSoftMarginLoss(weight=W, reduction="none")(X, torch.tensor(yl, device=device))
    np.testing.assert_allclose(N(got), ref.mean(1), rtol=1e-12)
    a, pos, neg = (rng.normal(size=(3, 5)) for _ in range(3))
    A, P_, Ng = (torch.tensor(v, device=device) for v in (a, pos, neg))
    d = lambda u, v, p=2: (np.abs(u - v + 1e-6) ** p).sum(-1) ** (1 / p)  # noqa: E731
    np.testing.assert_allclose(N(nn.TripletMarginLoss(reduction="none")(A, P_, Ng)),
                               np.maximum(d(a, pos) - d(a, neg) + 1, 0), rtol=1e-12)
    swap = np.maximum(d(a, pos, 1) - np.minimum(d(a, neg, 1), d(pos, neg, 1)) + 1, 0)
    np.testing.assert_allclose(N(nn.TripletMarginLoss(p=1, swap=True, reduction="none")(A, P_, Ng)), swap, rtol=1e-12)
    cosd = lambda u, v: 1 - (u * v).sum(-1) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1))  # noqa: E731
    loss = nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: 1 - F.cosine_similarity(u, v),
                                            margin=0.5)(A, P_, Ng)
    np.testing.assert_allclose(N(loss), np.maximum(cosd(a, pos) - cosd(a, neg) + 0.5, 0).mean(), rtol=1e-12)
    assert gradcheck(lambda u: F.multi_margin_loss(u, Y, p=2), (X.clone().requires_grad_(),))
    assert gradcheck(lambda u: F.multilabel_margin_loss(u, torch.tensor(t, device=device)),
                     (X.clone().requires_grad_(),))
    assert gradcheck(lambda u: F.triplet_margin_loss(u, P_, Ng), (A.clone().requires_grad_(),))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(X, Y, p=3)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D"):
        F.triplet_margin_loss(A, P_[0], Ng)
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0 instead"):
        nn.TripletMarginWithDistanceLoss(margin=0)
    assert repr(nn.TripletMarginWithDistanceLoss()) == ("TripletMarginWithDistanceLoss(\n  (distance_function): "
                                                        "PairwiseDistance()\n)")


def test_fold_unfold_against_numpy(device):
    x = _x(device, (2, 3, 5, 6))
    a = np.pad(N(x), ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = N(nn.Unfold((2, 3), padding=1, stride=(1, 2))(x))
    blocks = [a[:, :, i:i + 2, j:j + 3].reshape(2, -1) for i in range(0, 6) for j in range(0, 6, 2)]
    np.testing.assert_array_equal(cols, np.stack(blocks, -1))
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)>
    y = _x(device, tuple(cols.shape), seed=1)
    folded = nn.Fold((5, 6), (2, 3), padding=1, stride=(1, 2))(y)
    np.testing.assert_allclose((cols * N(y)).sum(), (N(x) * N(folded)).sum(), rtol=1e-12)
    # non-overlapping blocks: fold(unfold(x)) == x
    np.testing.assert_array_equal(N(F.fold(F.unfold(x[:, :, :4], 2, stride=2), (4, 6), 2, stride=2)),
                                  N(x[:, :, :4]))
    xg = x.clone().requires_grad_()
    assert gradcheck(lambda t: F.unfold(t, 3, dilation=(1, 2), padding=1), (xg,))
    assert gradcheck(lambda t: F.fold(t, (5, 6), (2, 3), padding=1, stride=(1, 2)), (y.clone().requires_grad_(),))
    with pytest.raises(RuntimeError, match="expected size of input's dimension 2 to match"):
        F.fold(y, (5, 7), (2, 3), padding=1, stride=(1, 2))


def test_lp_pool_gumbel_softmax(device):
    x = _x(device, (2, 3, 4, 6)).abs()
    a = N(x)
    ref = (a.reshape(2, 3, 2, 2, 3, 2) ** 2).sum((3, 5)) ** 0.5  # 2x2 windows, stride 2
    np.testing.assert_allclose(N(nn.LPPool2d(2, 2)(x)), ref, rtol=1e-12)
    ref1 = (a[0].reshape(3, 4, 2, 3) ** 1.5).sum(-1) ** (1 / 1.5)
    np.testing.assert_allclose(N(nn.LPPool1d(1.5, 3)(x[0])), ref1, rtol=1e-12)
    torch.manual_seed(0)
    logits = torch.tensor([[2.0, 0.0, -1.0]] * 4000, device=device)
    soft = N(F.gumbel_softmax(logits, tau=0.5))
    np.testing.assert_allclose(soft.sum(-1), 1.0, rtol=1e-6)
    p = np.exp([2.0, 0.0, -1.0]) / np.exp([2.0, 0.0, -1.0]).sum()
    hard = F.gumbel_softmax(logits.clone().requires_grad_(), hard=True)
    h = N(hard)
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
    np.testing.assert_allclose(h.mean(0), p, atol=0.03)  # the Gumbel-max trick samples softmax(logits)
    lg = logits[:3].clone().requires_grad_()
    F.gumbel_softmax(lg, hard=True)[:, 0].sum().backward()
    assert lg.grad is not None and np.abs(N(lg.grad)).sum() > 0  # straight-through gradient


def test_embedding_bag_against_numpy(device):
    torch.manual_seed(0)
    w = np.random.default_rng(5).normal(size=(10, 4))
    W = torch.tensor(w, device=device)
    inp = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0])
    off = np.array([0, 4, 4, 7])
    bags = [inp[0:4], inp[4:4], inp[4:7], inp[7:]]
    idx, offs = torch.tensor(inp, device=device), torch.tensor(off, device=device)
    for mode, red in (("sum", np.sum), ("mean", np.mean), ("max", np.max)):
        ref = np.stack([red(w[b], 0) if len(b) else np.zeros(4) for b in bags])
        np.testing.assert_allclose(N(F.embedding_bag(idx, W, offs, mode=mode)), ref, rtol=1e-12)
        kept = [b[b != 4] for b in bags]
        ref = np.stack([red(w[b], 0) if len(b) else np.zeros(4) for b in kept])
        np.testing.assert_allclose(N(F.embedding_bag(idx, W, offs, mode=mode, padding_idx=4)), ref, rtol=1e-12)
    psw = np.linspace(0.1, 0.9, 9)
    ref = np.stack([(w[inp[s:e]] * psw[s:e, None]).sum(0) for s, e in ((0, 4), (4, 4), (4, 7), (7, 9))])
    got = F.embedding_bag(idx, W, offs, mode="sum", per_sample_weights=torch.tensor(psw, device=device))
    np.testing.assert_allclose(N(got), ref, rtol=1e-12)
    bag = nn.EmbeddingBag.from_pretrained(W, mode="sum", include_last_offset=True)
    assert not bag.weight.requires_grad
    out = bag(idx, torch.tensor([0, 4, 4, 7, 9], device=device))
    np.testing.assert_allclose(N(out), np.stack([w[b].sum(0) if len(b) else np.zeros(4) for b in bags]))
    two_d = nn.EmbeddingBag(10, 4, mode="mean").double().to(device)
    assert two_d(torch.tensor([[1, 2], [3, 4]], device=device)).shape == (2, 4)
    wg = W.clone().requires_grad_()
    assert gradcheck(lambda t: F.embedding_bag(idx, t, offs, mode="mean"), (wg,))
    assert gradcheck(lambda t: F.embedding_bag(idx, t, offs, mode="max"), (wg,))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(idx, W, offs, mode="mean", per_sample_weights=torch.tensor(psw, device=device))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(idx, W)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(idx.reshape(3, 3), W, offs)
    assert repr(nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0, max_norm=1.0)) == \
        "EmbeddingBag(10, 3, max_norm=1.0, mode='sum', padding_idx=0)"


def _keys(x, a=-0.75):
    """Keys' cubic convolution kernel (PyTorch's A = -0.75), evaluated at distance x."""
    x = abs(x)
    if x <= 1:
        return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
    if x < 2:
        return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
    return 0.0


def _bicubic_1d(v, n_out, align_corners):
    """Interpolate the last axis of v by the kernel definition: taps at floor(src) - 1 .. + 2, clamped."""
    n_in = v.shape[-1]
    out = np.zeros(v.shape[:-1] + (n_out,))
    for i in range(n_out):
        src = i * (n_in - 1) / (n_out - 1) if align_corners and n_out > 1 else (i + 0.5) * n_in / n_out - 0.5
        base = int(np.floor(src))
        for j in range(base - 1, base + 3):
            out[..., i] += v[..., min(max(j, 0), n_in - 1)] * _keys(src - j)
    return out


@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_interpolation(device, align_corners):
    x = _x(device, (2, 3, 5, 7))
    got = F.interpolate(x, size=(8, 4), mode="bicubic", align_corners=align_corners)
    want = _bicubic_1d(_bicubic_1d(N(x), 4, align_corners).swapaxes(-1, -2), 8, align_corners).swapaxes(-1, -2)
    np.testing.assert_allclose(N(got), want, rtol=1e-12, atol=1e-12)
    up = nn.Upsample(scale_factor=2, mode="bicubic", align_corners=align_corners)
    assert up(x).shape == (2, 3, 10, 14)
    assert gradcheck(lambda t: F.interpolate(t, scale_factor=1.5, mode="bicubic", align_corners=align_corners),
                     (x[:1, :1].clone().requires_grad_(),))
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input Tensors supported \(got 3D\)"):
        F.interpolate(x[0], scale_factor=2, mode="bicubic")
