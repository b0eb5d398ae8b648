"""Layers: shapes, repr/extra_repr and state_dict keys exactly as PyTorch's, train/eval behaviour, initialisation
bounds, numpy references for the recurrent layers and attention, and float64 gradcheck through the modules."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.autograd import gradcheck


def _np(t):
    return t.detach().numpy()


def _with_params(module, names, call):
    """A function of the named parameters (gradcheck passes perturbed copies): they replace the module's own
    for the duration of ``call(module)``."""
    targets = []
    for name in names:
        owner, _, leaf = name.rpartition(".")
        targets.append((module.get_submodule(owner) if owner else module, leaf))

    def f(*ps):
        saved = [m._parameters[n] for m, n in targets]
        for (m, n), p in zip(targets, ps):
            m._parameters[n] = p
        try:
            return call(module)
        finally:
            for (m, n), p in zip(targets, saved):
                m._parameters[n] = p
    return f, tuple(module.get_parameter(n).detach().clone().requires_grad_() for n in names)


def _close(a, b):
    return np.allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)


def _sig(a):
    return 1 / (1 + np.exp(-a))


@pytest.mark.parametrize("module,text", [
    (nn.ReLU(), "ReLU()"), (nn.ReLU(inplace=True), "ReLU(inplace=True)"),
    (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (nn.ELU(), "ELU(alpha=1.0)"), (nn.GELU(), "GELU(approximate='none')"),
    (nn.GELU("tanh"), "GELU(approximate='tanh')"), (nn.SiLU(), "SiLU()"), (nn.Sigmoid(), "Sigmoid()"),
    (nn.Tanh(), "Tanh()"), (nn.Softmax(dim=1), "Softmax(dim=1)"),
    (nn.LogSoftmax(-1), "LogSoftmax(dim=-1)"), (nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (nn.Conv2d(1, 6, 5), "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))"),
    (nn.Conv2d(4, 8, 3, stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode="reflect"),
     "Conv2d(4, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(2, 2), groups=2, bias=False, "
     "padding_mode=reflect)"),
    (nn.Conv2d(3, 4, 3, padding="same"), "Conv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), padding=same)"),
    (nn.Conv1d(3, 4, 3), "Conv1d(3, 4, kernel_size=(3,), stride=(1,))"),
    (nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
     "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"),
    (nn.MaxPool2d(2), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (nn.AvgPool2d(3, 2, 1), "AvgPool2d(kernel_size=3, stride=2, padding=1)"),
    (nn.AdaptiveAvgPool2d((1, 1)), "AdaptiveAvgPool2d(output_size=(1, 1))"),
    (nn.BatchNorm1d(10), "BatchNorm1d(10, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (nn.BatchNorm2d(4, momentum=None, affine=False),
     "BatchNorm2d(4, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)"),
    (nn.LayerNorm(10), "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)"),
    (nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"),
    (nn.CrossEntropyLoss(), "CrossEntropyLoss()"), (nn.MSELoss(), "MSELoss()"),
    (nn.RNN(3, 5), "RNN(3, 5)"), (nn.LSTM(10, 20, 2, batch_first=True),
                                  "LSTM(10, 20, num_layers=2, batch_first=True)"),
    (nn.GRU(3, 4, bias=False, bidirectional=True, dropout=0.5, num_layers=2),
     "GRU(3, 4, num_layers=2, bias=False, dropout=0.5, bidirectional=True)"),
    (nn.MultiheadAttention(8, 2),
     "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n)"),
], ids=lambda v: v if isinstance(v, str) else type(v).__name__)
def test_repr(module, text):
    assert repr(module) == text


def test_lenet_repr_nested():
    net = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.BatchNorm2d(6))
    assert repr(net) == ("Sequential(\n  (0): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))\n  (1): ReLU()\n"
                         "  (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
                         "  (3): BatchNorm2d(6, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                         "track_running_stats=True)\n)")


def test_state_dict_keys():
    assert list(nn.Conv2d(2, 3, 3).state_dict()) == ["weight", "bias"]
    assert list(nn.Conv2d(2, 3, 3, bias=False).state_dict()) == ["weight"]
    assert list(nn.BatchNorm2d(3).state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                                    "num_batches_tracked"]
    assert list(nn.BatchNorm1d(3, affine=False, track_running_stats=False).state_dict()) == []
    assert list(nn.LayerNorm((2, 3)).state_dict()) == ["weight", "bias"]
    assert list(nn.LSTM(3, 4, num_layers=2).state_dict()) == [
        "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
        "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"]
    assert list(nn.GRU(3, 4, bidirectional=True, bias=False).state_dict()) == [
        "weight_ih_l0", "weight_hh_l0", "weight_ih_l0_reverse", "weight_hh_l0_reverse"]
    assert list(nn.MultiheadAttention(8, 2).state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                              "out_proj.bias"]
    assert list(nn.MultiheadAttention(8, 2, kdim=3, vdim=5).state_dict()) == [
        "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    w = torch.tensor([1.0, 2.0])
    assert list(nn.CrossEntropyLoss(weight=w).state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []


def test_parameter_shapes_and_init_bounds():
    torch.manual_seed(0)
    c = nn.Conv2d(4, 6, (3, 2), groups=2)
    assert tuple(c.weight.shape) == (6, 2, 3, 2) and tuple(c.bias.shape) == (6,)
    bound = 1 / math.sqrt(2 * 3 * 2)   # kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert np.abs(_np(c.weight)).max() <= bound and np.abs(_np(c.bias)).max() <= bound
    assert np.abs(_np(c.weight)).max() > 0.5 * bound
    t = nn.ConvTranspose2d(4, 6, 3, groups=2)
    assert tuple(t.weight.shape) == (4, 3, 3, 3)
    assert np.abs(_np(t.bias)).max() <= 1 / math.sqrt(3 * 9)
    lstm = nn.LSTM(5, 7)
    assert tuple(lstm.weight_ih_l0.shape) == (28, 5) and tuple(lstm.weight_hh_l0.shape) == (28, 7)
    for p in lstm.parameters():
        assert np.abs(_np(p)).max() <= 1 / math.sqrt(7)
    assert tuple(nn.GRU(5, 7, num_layers=2, bidirectional=True).weight_ih_l1.shape) == (21, 14)
    bn = nn.BatchNorm2d(3)
    assert _np(bn.weight).tolist() == [1, 1, 1] and _np(bn.bias).tolist() == [0, 0, 0]
    assert bn.num_batches_tracked.dtype is torch.int64 and bn.num_batches_tracked.item() == 0
    mha = nn.MultiheadAttention(8, 2)
    assert tuple(mha.in_proj_weight.shape) == (24, 8) and _np(mha.in_proj_bias).tolist() == [0.0] * 24
    assert np.abs(_np(mha.in_proj_weight)).max() <= math.sqrt(6 / (24 + 8))


def test_conv_and_pool_shapes():
    x = torch.randn(2, 3, 28, 28)
    assert tuple(nn.Conv2d(3, 6, 5)(x).shape) == (2, 6, 24, 24)
    assert tuple(nn.Conv2d(3, 6, 3, stride=2, padding=1)(x).shape) == (2, 6, 14, 14)
    assert tuple(nn.Conv2d(3, 6, 4, padding="same")(x).shape) == (2, 6, 28, 28)
    assert tuple(nn.Conv2d(3, 6, 3, padding=1, padding_mode="circular")(x).shape) == (2, 6, 28, 28)
    assert tuple(nn.Conv2d(3, 6, 5)(x[0]).shape) == (6, 24, 24)
    assert tuple(nn.Conv1d(3, 4, 3, padding=1)(torch.randn(2, 3, 10)).shape) == (2, 4, 10)
    ct = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    assert tuple(ct(torch.randn(1, 3, 5, 5)).shape) == (1, 2, 9, 9)
    assert tuple(ct(torch.randn(1, 3, 5, 5), output_size=(10, 10)).shape) == (1, 2, 10, 10)
    assert tuple(nn.MaxPool2d(2)(x).shape) == (2, 3, 14, 14)
    assert tuple(nn.MaxPool2d(3, 2, ceil_mode=True)(torch.randn(1, 1, 8, 8)).shape) == (1, 1, 4, 4)
    out, idx = nn.MaxPool2d(2, return_indices=True)(x)
    assert idx.dtype is torch.int64 and tuple(idx.shape) == (2, 3, 14, 14)
    assert tuple(nn.AvgPool2d(3, 2, 1)(x).shape) == (2, 3, 14, 14)
    assert tuple(nn.AdaptiveAvgPool2d((5, 7))(x).shape) == (2, 3, 5, 7)
    assert tuple(nn.AdaptiveAvgPool2d(1)(x).shape) == (2, 3, 1, 1)


def test_activation_modules_match_functional():
    x = torch.randn(3, 4)
    for m, f in ((nn.ReLU(), F.relu), (nn.GELU(), F.gelu), (nn.SiLU(), F.silu), (nn.Tanh(), F.tanh),
                 (nn.Softmax(1), lambda t: F.softmax(t, 1)), (nn.Softplus(2.0), lambda t: F.softplus(t, 2.0)),
                 (nn.LeakyReLU(0.3), lambda t: F.leaky_relu(t, 0.3)), (nn.ELU(0.5), lambda t: F.elu(t, 0.5)),
                 (nn.Hardtanh(-2, 2), lambda t: F.hardtanh(t, -2, 2)), (nn.Sigmoid(), torch.sigmoid)):
        np.testing.assert_array_equal(_np(m(x)), _np(f(x)))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        nn.Softmax()(x)


def test_relu_inplace():
    x = torch.randn(3, 4)
    y = nn.ReLU(inplace=True)(x)
    assert (x.numpy() >= 0).all() and np.array_equal(x.numpy(), y.numpy())


def test_batchnorm_train_eval_and_running_stats():
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(3, momentum=0.2).double()
    xs = [torch.randn(4, 3, 2, 5, dtype=torch.float64) * 2 + 1 for _ in range(3)]
    rm, rv = np.zeros(3), np.ones(3)
    for x in xs:
        y = bn(x)
        a = x.numpy()
        mean, var = a.mean((0, 2, 3)), a.var((0, 2, 3))
        np.testing.assert_allclose(_np(y), (a - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5),
                                   rtol=1e-10, atol=1e-12)
        rm = 0.8 * rm + 0.2 * mean
        rv = 0.8 * rv + 0.2 * a.var((0, 2, 3), ddof=1)   # the running variance is the unbiased one
    np.testing.assert_allclose(_np(bn.running_mean), rm, rtol=1e-12)
    np.testing.assert_allclose(_np(bn.running_var), rv, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    x = xs[0]
    np.testing.assert_allclose(_np(bn(x)), (x.numpy() - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1)
                                                                                          + 1e-5), rtol=1e-10)
    assert bn.num_batches_tracked.item() == 3
    with pytest.raises(ValueError, match="expected 4D input"):
        bn(torch.randn(3, 3))


def test_batchnorm_momentum_none_is_cumulative_average():
    bn = nn.BatchNorm1d(2, momentum=None).double()
    xs = [torch.randn(5, 2, dtype=torch.float64) + i for i in range(4)]
    for x in xs:
        bn(x)
    means = np.stack([x.numpy().mean(0) for x in xs])
    np.testing.assert_allclose(_np(bn.running_mean), means.mean(0), rtol=1e-12)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        bn(torch.randn(1, 2, dtype=torch.float64))


def test_batchnorm_no_running_stats_uses_batch_stats_in_eval():
    bn = nn.BatchNorm1d(2, track_running_stats=False, affine=False).eval()
    x = torch.randn(6, 2)
    np.testing.assert_allclose(_np(bn(x)).mean(0), 0, atol=1e-6)


def test_layernorm_groupnorm_modules():
    ln = nn.LayerNorm([3, 4])
    x = torch.randn(2, 3, 4, dtype=torch.float32)
    y = _np(ln(x))
    np.testing.assert_allclose(y.reshape(2, -1).mean(1), 0, atol=1e-6)
    gn = nn.GroupNorm(2, 4)
    assert tuple(gn(torch.randn(3, 4, 5)).shape) == (3, 4, 5)
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups \(3\)"):
        nn.GroupNorm(3, 4)


def test_loss_modules_match_functional():
    x, t = torch.randn(5, 4), torch.tensor([0, 3, 1, 1, 2])
    w = torch.rand(4) + 0.5
    assert _close(nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(x, t),
                          F.cross_entropy(x, t, weight=w, label_smoothing=0.1))
    assert _close(nn.NLLLoss(reduction="sum")(F.log_softmax(x, 1), t),
                          F.nll_loss(F.log_softmax(x, 1), t, reduction="sum"))
    y = torch.randn(5, 4)
    for m, f in ((nn.MSELoss(), F.mse_loss),
                 (nn.L1Loss(reduction="sum"), lambda a, b: F.l1_loss(a, b, reduction="sum")),
                 (nn.SmoothL1Loss(beta=0.5), lambda a, b: F.smooth_l1_loss(a, b, beta=0.5)),
                 (nn.HuberLoss(delta=0.3), lambda a, b: F.huber_loss(a, b, delta=0.3)),
                 (nn.BCEWithLogitsLoss(pos_weight=w), lambda a, b: F.binary_cross_entropy_with_logits(
                     a, b.sigmoid(), pos_weight=w)),
                 (nn.KLDivLoss(reduction="batchmean", log_target=True),
                  lambda a, b: F.kl_div(a, b, reduction="batchmean", log_target=True))):
        target = y.sigmoid() if isinstance(m, nn.BCEWithLogitsLoss) else y
        assert _close(m(x, target), f(x, y))
    assert _close(nn.BCELoss()(x.sigmoid(), y.sigmoid()), F.binary_cross_entropy(x.sigmoid(), y.sigmoid()))
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.MSELoss(size_average=False).reduction == "sum"


# ---- recurrent layers against a NumPy reference --------------------------------------------------
def _np_cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=1)
        c = _sig(f) * c + _sig(i) * np.tanh(g)
        return _sig(o) * np.tanh(c), c
    if mode == "GRU":
        ir, iz, in_ = np.split(gi, 3, axis=1)
        hr, hz, hn = np.split(gh, 3, axis=1)
        r, z = _sig(ir + hr), _sig(iz + hz)
        n = np.tanh(in_ + r * hn)
        return (1 - z) * n + z * h, None
    return np.tanh(gi + gh), None


def _np_rnn(mode, m, x, h0, c0):
    """x (L, N, I) -> output, h_n, c_n with the module's parameters, layer by layer, direction by direction."""
    p = {k: _np(v) for k, v in m.named_parameters()}
    nd = 2 if m.bidirectional else 1
    inp, hs, cs = x, [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(nd):
            s = "_reverse" if d else ""
            k = layer * nd + d
            h, c = h0[k], (c0[k] if c0 is not None else None)
            ys = [None] * len(inp)
            for t in (reversed(range(len(inp))) if d else range(len(inp))):
                h, c = _np_cell(mode, inp[t], h, c, p[f"weight_ih_l{layer}{s}"], p[f"weight_hh_l{layer}{s}"],
                                p[f"bias_ih_l{layer}{s}"], p[f"bias_hh_l{layer}{s}"])
                ys[t] = h
            outs.append(np.stack(ys))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, 2)
    return inp, np.stack(hs), (np.stack(cs) if c0 is not None else None)


@pytest.mark.parametrize("cls,mode", [(nn.RNN, "RNN"), (nn.LSTM, "LSTM"), (nn.GRU, "GRU")])
@pytest.mark.parametrize("layers,bidir,batch_first", [(1, False, False), (2, True, True)])
def test_recurrent_against_numpy(cls, mode, layers, bidir, batch_first):
    torch.manual_seed(1)
    m = cls(3, 4, num_layers=layers, bidirectional=bidir, batch_first=batch_first).double()
    nd = 2 if bidir else 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 2, 3))
    h0 = rng.standard_normal((layers * nd, 2, 4))
    c0 = rng.standard_normal((layers * nd, 2, 4)) if mode == "LSTM" else None
    xin = torch.tensor(x.transpose(1, 0, 2) if batch_first else x)
    hx = (torch.tensor(h0), torch.tensor(c0)) if mode == "LSTM" else torch.tensor(h0)
    out, hn = m(xin, hx)
    want_out, want_h, want_c = _np_rnn(mode, m, x, h0, c0)
    got_out = _np(out).transpose(1, 0, 2) if batch_first else _np(out)
    assert got_out.shape == (5, 2, 4 * nd)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-10, atol=1e-12)
    if mode == "LSTM":
        np.testing.assert_allclose(_np(hn[0]), want_h, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(hn[1]), want_c, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(_np(hn), want_h, rtol=1e-10, atol=1e-12)


def test_recurrent_defaults_unbatched_and_gradcheck():
    torch.manual_seed(2)
    lstm = nn.LSTM(3, 2).double()
    out, (h, c) = lstm(torch.randn(4, 3, dtype=torch.float64))       # unbatched, zero initial state
    assert tuple(out.shape) == (4, 2) and tuple(h.shape) == (1, 2) and tuple(c.shape) == (1, 2)
    gru = nn.GRU(2, 3, num_layers=2).double()
    x = torch.randn(3, 2, 2, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: gru(t)[0], (x,))
    xd = x.detach()
    assert gradcheck(*_with_params(gru, ["weight_hh_l1", "bias_ih_l0"], lambda m: m(xd)[1]))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        gru(torch.randn(3, 2, 5, dtype=torch.float64))
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(2, 2, dropout=0.5)


def test_rnn_cells():
    torch.manual_seed(3)
    cell = nn.LSTMCell(3, 4).double()
    x, h, c = (torch.randn(2, k, dtype=torch.float64) for k in (3, 4, 4))
    h1, c1 = cell(x, (h, c))
    p = {k: _np(v) for k, v in cell.named_parameters()}
    wh, wc = _np_cell("LSTM", x.numpy(), h.numpy(), c.numpy(), p["weight_ih"], p["weight_hh"], p["bias_ih"],
                      p["bias_hh"])
    np.testing.assert_allclose(_np(h1), wh, rtol=1e-12)
    np.testing.assert_allclose(_np(c1), wc, rtol=1e-12)
    assert tuple(nn.GRUCell(3, 4)(torch.randn(2, 3)).shape) == (2, 4)
    assert tuple(nn.RNNCell(3, 4)(torch.randn(3)).shape) == (4,)


# ---- attention --------------------------------------------------------------------------------------
def _np_mha(m, q, k, v, key_padding_mask=None, attn_mask=None):
    """(L, N, E) inputs; PyTorch's math written out in NumPy."""
    w, b = _np(m.in_proj_weight), _np(m.in_proj_bias)
    e, h = m.embed_dim, m.num_heads
    hd = e // h
    qp, kp, vp = q @ w[:e].T + b[:e], k @ w[e:2 * e].T + b[e:2 * e], v @ w[2 * e:].T + b[2 * e:]
    lq, n, s = q.shape[0], q.shape[1], k.shape[0]

    def heads(t, length):
        return t.reshape(length, n, h, hd).transpose(1, 2, 0, 3)     # (N, H, L, hd)
    sc = heads(qp, lq) @ heads(kp, s).transpose(0, 1, 3, 2) / math.sqrt(hd)
    if attn_mask is not None:
        sc = np.where(attn_mask, -np.inf, sc)
    if key_padding_mask is not None:
        sc = np.where(key_padding_mask[:, None, None, :], -np.inf, sc)
    a = np.exp(sc - sc.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ heads(vp, s)).transpose(2, 0, 1, 3).reshape(lq, n, e)
    return o @ _np(m.out_proj.weight).T + _np(m.out_proj.bias), a


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_against_numpy(batch_first):
    torch.manual_seed(4)
    m = nn.MultiheadAttention(6, 2, batch_first=batch_first).double()
    with torch.no_grad():
        m.in_proj_bias.uniform_(-0.5, 0.5)
        m.out_proj.bias.uniform_(-0.5, 0.5)
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((4, 3, 6)), rng.standard_normal((5, 3, 6)), rng.standard_normal((5, 3, 6))
    kpm = np.zeros((3, 5), bool)
    kpm[1, 3:] = True
    am = np.triu(np.ones((4, 5), bool), 2)
    tr = (lambda a: a.transpose(1, 0, 2)) if batch_first else (lambda a: a)
    out, w = m(torch.tensor(tr(q)), torch.tensor(tr(k)), torch.tensor(tr(v)), key_padding_mask=torch.tensor(kpm),
               attn_mask=torch.tensor(am))
    want, a = _np_mha(m, q, k, v, kpm, am)
    np.testing.assert_allclose(tr(_np(out)), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(w), a.mean(1), rtol=1e-10, atol=1e-12)
    _, w_all = m(torch.tensor(tr(q)), torch.tensor(tr(k)), torch.tensor(tr(v)), average_attn_weights=False)
    assert tuple(w_all.shape) == (3, 2, 4, 5)
    out2, none = m(torch.tensor(tr(q)), torch.tensor(tr(k)), torch.tensor(tr(v)), need_weights=False)
    assert none is None and tuple(out2.shape) == tr(q).shape


def test_multihead_attention_gradcheck_and_unbatched():
    torch.manual_seed(5)
    m = nn.MultiheadAttention(4, 2).double()
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    out, w = m(x, x, x)
    assert tuple(out.shape) == (3, 4) and tuple(w.shape) == (3, 3)
    causal = nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    assert gradcheck(lambda t: m(t, t, t, attn_mask=causal, is_causal=True)[0], (x,))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    xd = x.detach()
    assert gradcheck(*_with_params(m, ["in_proj_weight", "out_proj.bias"], lambda mod: mod(xd, xd, xd)[0]))


def test_gradcheck_through_layers():
    torch.manual_seed(6)
    net = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.GELU(), nn.MaxPool2d(2),
                        nn.Conv2d(3, 2, 2), nn.Flatten(), nn.LayerNorm(4), nn.Softplus()).double()
    x = torch.randn(3, 2, 4, 6, dtype=torch.float64, requires_grad=True)
    assert gradcheck(net, (x,))
    xd = x.detach()
    assert gradcheck(*_with_params(net, ["0.weight", "4.weight", "1.bias"], lambda m: m(xd)))


def test_module_train_eval_changes_nothing_for_stateless_layers():
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())
    x = torch.randn(1, 1, 5, 5)
    a = m(x)
    m.eval()
    assert np.array_equal(_np(a), _np(m(x)))


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "elu", "hardtanh", "silu", "selu", "relu6", "celu", "mish"])
def test_inplace_activations_inside_a_graph(name):
    f = getattr(F, name)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: f(t * 1.0, inplace=True), (x,))   # the write must not break the saved tensors
    y = torch.randn(3, 4)
    want = _np(f(y.clone()))
    assert f(y, inplace=True) is y and np.allclose(y.numpy(), want)
