"""Gaps found by the issue-14 audit against PyTorch 2.13: ``F.multi_head_attention_forward`` (PyTorch's functional
signature; ``nn.MultiheadAttention`` now calls it), BatchNorm's ``load_state_dict`` filling ``num_batches_tracked``
for a state dict without version metadata, ``F.gaussian_nll_loss``'s checks and its clamp's pass-through gradient,
and two grad_fn names.  Every test runs on each installed device; references are numpy (checked against PyTorch)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn
from coretorch.autograd import gradcheck


def _t(a, device, rg=False, dtype=torch.float64):
    return torch.tensor(np.asarray(a), dtype=dtype, device=device, requires_grad=rg)


def _np_mha(q, k, v, w, b, ow, ob, h, mask=None):
    """(L, N, E) attention in numpy: packed in-projection, float additive mask (L, S) or None."""
    e = q.shape[-1]
    hd = e // h
    qp, kp, vp = (x @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e] for i, x in enumerate((q, k, v)))
    L, N, _ = qp.shape
    S = kp.shape[0]
    qh = qp.reshape(L, N * h, hd).transpose(1, 0, 2)
    kh = kp.reshape(S, N * h, hd).transpose(1, 0, 2)
    vh = vp.reshape(S, N * h, hd).transpose(1, 0, 2)
    s = qh @ kh.transpose(0, 2, 1) / math.sqrt(hd)
    if mask is not None:
        s = s + mask
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ vh).transpose(1, 0, 2).reshape(L * N, e) @ ow.T + ob
    return o.reshape(L, N, e), a.reshape(N, h, L, S)


def test_multi_head_attention_forward_matches_numpy_and_module(device):
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((3, 2, 8)), rng.standard_normal((4, 2, 8))
    w, b = rng.standard_normal((24, 8)) * 0.3, rng.standard_normal(24) * 0.1
    ow, ob = rng.standard_normal((8, 8)) * 0.3, rng.standard_normal(8) * 0.1
    mask = np.triu(np.ones((3, 4), bool), 2)
    out, wts = F.multi_head_attention_forward(
        _t(q, device), _t(k, device), _t(k, device), 8, 2, _t(w, device), _t(b, device), None, None, False, 0.0,
        _t(ow, device), _t(ob, device), training=False, attn_mask=torch.tensor(mask, device=device),
        average_attn_weights=False)
    ro, ra = _np_mha(q, k, k, w, b, ow, ob, 2, np.where(mask, -np.inf, 0.0))
    np.testing.assert_allclose(out.cpu().numpy(), ro, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(wts.cpu().numpy(), ra, rtol=1e-10, atol=1e-10)
    # the module is a thin caller: same parameters, same result (batch_first transposes around it)
    m = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64).to(device)
    with torch.no_grad():
        m.in_proj_weight.copy_(_t(w, device))
        m.in_proj_bias.copy_(_t(b, device))
        m.out_proj.weight.copy_(_t(ow, device))
        m.out_proj.bias.copy_(_t(ob, device))
    qb, kb = _t(q.transpose(1, 0, 2), device), _t(k.transpose(1, 0, 2), device)
    mo, mw = m(qb, kb, kb, attn_mask=torch.tensor(mask, device=device))
    np.testing.assert_allclose(mo.detach().cpu().numpy(), ro.transpose(1, 0, 2), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(mw.detach().cpu().numpy(), ra.mean(1), rtol=1e-10, atol=1e-10)


def test_multi_head_attention_forward_separate_weights_unbatched_gradcheck_and_errors(device):
    rng = np.random.default_rng(1)
    q, k = _t(rng.standard_normal((3, 4)), device, True), _t(rng.standard_normal((2, 3)), device, True)
    wq, wk, wv = (_t(rng.standard_normal(s) * 0.4, device, True) for s in ((4, 4), (4, 3), (4, 3)))
    ow = _t(rng.standard_normal((4, 4)) * 0.4, device, True)

    def f(q, k, wq, wk, wv, ow):
        return F.multi_head_attention_forward(q, k, k, 4, 2, None, None, None, None, True, 0.0, ow, None,
                                              training=False, use_separate_proj_weight=True, q_proj_weight=wq,
                                              k_proj_weight=wk, v_proj_weight=wv)[0]
    out = f(q, k, wq, wk, wv, ow)
    assert tuple(out.shape) == (3, 4)
    assert gradcheck(lambda k, wv: f(q, k, wq, wk, wv, ow), (k, wv))  # few elements: fast on opencl
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 5"):
        F.multi_head_attention_forward(q, q, q, 5, 1, None, None, None, None, False, 0.0, ow, None)
    with pytest.raises(AssertionError, match="in_proj_weight is None"):
        F.multi_head_attention_forward(q, q, q, 4, 2, None, None, None, None, False, 0.0, ow, None)
    w3 = _t(rng.standard_normal((12, 4)), device)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        F.multi_head_attention_forward(q, q, q, 4, 2, w3, None, None, None, False, 0.0, ow, None, is_causal=True)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        F.multi_head_attention_forward(q, q, q, 4, 2, w3, None, None, None, False, 0.0, ow, None,
                                       attn_mask=torch.zeros(2, 2, dtype=torch.float64, device=device))


def test_batchnorm_load_state_dict_fills_num_batches_tracked_without_metadata(device):
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).to(device)
    r = m.load_state_dict({"0.weight": torch.zeros(3, 2, device=device)}, strict=False)
    assert r.missing_keys == ["0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var"]
    sd = m.state_dict()  # with version metadata (BatchNorm's is 2): a missing counter is reported
    assert sd._metadata["1"]["version"] == 2
    del sd["1.num_batches_tracked"]
    assert m.load_state_dict(sd, strict=False).missing_keys == ["1.num_batches_tracked"]
    bn = nn.BatchNorm2d(2).to(device)
    bn.num_batches_tracked.fill_(5)
    bn.load_state_dict({k: torch.ones(2, device=device) for k in ("weight", "bias", "running_mean", "running_var")})
    assert int(bn.num_batches_tracked) == 5 and float(bn.running_var.sum()) == 2.0


def test_gaussian_nll_loss_checks_and_pass_through_clamp_gradient(device):
    x = _t([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]], device, True)
    y = _t([[0.4, -0.5, 1.0], [0.0, 0.5, 0.1]], device)
    var = np.array([[1e-8, 0.5, 2.0], [1.0, 0.3, 1e-9]])
    v = _t(var, device, True)
    loss = F.gaussian_nll_loss(x, y, v, full=True, reduction="sum")
    loss.backward()
    d2 = (x.detach().cpu().numpy() - y.cpu().numpy()) ** 2
    vc = np.maximum(var, 1e-6)
    np.testing.assert_allclose(float(loss), (0.5 * (np.log(vc) + d2 / vc)).sum() + 3 * math.log(2 * math.pi),
                               rtol=1e-12)
    # PyTorch clamps a clone under no_grad: the gradient of the clamped entries is taken at eps, not zeroed
    np.testing.assert_allclose(v.grad.cpu().numpy(), 0.5 * (1 / vc - d2 / vc ** 2), rtol=1e-10)
    # one variance per row (homoscedastic), float var, errors as PyTorch's
    r = F.gaussian_nll_loss(x, y, _t([0.5, 2.0], device), reduction="none")
    np.testing.assert_allclose(r.detach().cpu().numpy(), 0.5 * (np.log([[0.5], [2.0]]) + d2 / [[0.5], [2.0]]))
    np.testing.assert_allclose(float(F.gaussian_nll_loss(x, y, 0.5)), (0.5 * (math.log(0.5) + d2 / 0.5)).mean())
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, y, _t([[0.5, -1.0, 1.0]] * 2, device))
    with pytest.raises(ValueError, match="var has negative entry"):
        nn.GaussianNLLLoss()(x, y, -1.0)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, y, _t([[0.5, 2.0]], device))
    with pytest.raises(ValueError, match="bogus is not valid"):
        F.gaussian_nll_loss(x, y, v, reduction="bogus")


def test_grad_fn_names_pairwise_distance_and_unreduced_multilabel_soft_margin(device):
    a = _t(np.ones((2, 3)), device, True, torch.float32)
    b = _t(np.zeros((2, 3)), device, False, torch.float32)
    assert type(F.pairwise_distance(a, b).grad_fn).__name__ == "NormBackward1"
    assert type(nn.PairwiseDistance(keepdim=True)(a, b).grad_fn).__name__ == "NormBackward1"
    lo = F.multilabel_soft_margin_loss(a, b, reduction="none")
    assert type(lo.grad_fn).__name__ == "DivBackward0"
    np.testing.assert_allclose(lo.detach().cpu().numpy(), [np.log1p(np.exp(1.0))] * 2, rtol=1e-6)


def test_biject_to_and_transform_to(device):
    D = torch.distributions
    C = D.constraints
    xn = np.array([[-1.5, 0.3, 2.0], [0.1, -0.2, 0.7]])
    x = _t(xn, device)
    sig = 1 / (1 + np.exp(-xn))
    cases = [(C.real, xn, 0 * xn), (C.positive, np.exp(xn), xn), (C.greater_than(2.0), np.exp(xn) + 2, xn),
             (C.less_than(3.0), 3 - np.exp(xn), xn), (C.unit_interval, sig, np.log(sig * (1 - sig))),
             (C.interval(-2.0, 5.0), 7 * sig - 2, np.log(7 * sig * (1 - sig)))]
    for c, ref, ladj in cases:
        for reg in (D.biject_to, D.transform_to):
            t = reg(c)
            y = t(x)
            np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).cpu().numpy(), ladj, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(t.inv(y).cpu().numpy(), xn, rtol=1e-9, atol=1e-12)
            assert bool(c.check(y).all())
    # simplex: a bijection from R^(K-1) (stick breaking) vs softmax onto it
    sb, sm = D.biject_to(C.simplex), D.transform_to(C.simplex)
    assert type(sb).__name__ == "StickBreakingTransform" and type(sm).__name__ == "SoftmaxTransform"
    assert tuple(sb(x).shape) == (2, 4) and bool(C.simplex.check(sb(x)).all())
    np.testing.assert_allclose(sm(x).cpu().numpy(), np.exp(xn) / np.exp(xn).sum(-1, keepdims=True), rtol=1e-12)
    ti = D.biject_to(C.independent(C.positive, 1))
    assert type(ti).__name__ == "IndependentTransform"
    np.testing.assert_allclose(ti.log_abs_det_jacobian(x, ti(x)).cpu().numpy(), xn.sum(-1), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(C.boolean)
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        D.transform_to.register(int, lambda c: None)
    reg = D.constraint_registry.ConstraintRegistry()

    @reg.register(C.positive)
    def _exp(c):
        return D.transforms.ExpTransform()
    assert type(reg(C.greater_than(1.0))).__name__ == "ExpTransform"   # dispatch is on the constraint's type
