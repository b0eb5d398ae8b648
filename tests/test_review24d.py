"""Review 24d (eager): nn layers and functions the earlier reviews passed over — EmbeddingBag, Bilinear, the pixel
and channel shuffles, Fold/Unfold, the distances, the margin / embedding / NLL losses, KLDivLoss, CTCLoss,
AdaptiveLogSoftmaxWithLoss, MultiheadAttention, the Transformer decoder and the weight parametrizations — each over
its argument matrix, side by side with PyTorch 2.13 (whose behaviour is the spec)."""
import math
import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.nn import functional as F


# ---- KLDivLoss -------------------------------------------------------------------------------------------------
def test_kl_div_target_gradient_is_xlogy_s_at_a_zero_target(device):
    """PyTorch: kl_div is ``xlogy(t, t) - t * x``, so the target's gradient is ``log t + 1 - x`` where t > 0 and
    xlogy's ``t / t`` = NaN where t == 0 (and NaN where t < 0). Before: a zero (or negative) target's gradient was
    the finite ``-x`` (the xlogy term was a constant there)."""
    x = torch.tensor([-1.0, -0.5, -2.0, 0.0], device=device, requires_grad=True)
    t = torch.tensor([0.0, 0.5, -1.0, 2.0], device=device, requires_grad=True)
    loss = F.kl_div(x, t, reduction="none")
    loss.sum().backward()
    g = t.grad.cpu().numpy()
    assert np.isnan(g[0]) and np.isnan(g[2])
    np.testing.assert_allclose(g[[1, 3]], [math.log(0.5) + 1 + 0.5, math.log(2.0) + 1], rtol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), [-0.0, -0.5, 1.0, -2.0])
    lv = loss.detach().cpu().numpy()
    assert lv[0] == 0 and np.isnan(lv[2])


def test_kl_div_refuses_integral_inputs(device):
    """PyTorch: ``kl_div`` of an integer (or bool) input or target raises RuntimeError "kl_div: Integral inputs not
    supported.". Before: it returned a float32 loss."""
    a = torch.ones(3, dtype=torch.int64, device=device)
    with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported"):
        F.kl_div(a, a, reduction="sum")
    with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported"):
        F.kl_div(torch.zeros(3, device=device), a, reduction="sum")


# ---- elementwise losses' weight ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [F.mse_loss, F.l1_loss, F.huber_loss])
def test_pointwise_loss_weight_must_have_the_input_s_size(device, fn):
    """PyTorch: mse_loss / l1_loss / huber_loss take a ``weight`` of the input's own size and raise ValueError
    "Weights and input must have the same size." otherwise. Before: any broadcastable weight was accepted."""
    x, t = torch.randn(3, 4, device=device), torch.randn(3, 4, device=device)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        fn(x, t, weight=torch.ones(4, device=device))
    w = torch.arange(12.0, device=device).reshape(3, 4)
    np.testing.assert_allclose(fn(x, t, weight=w, reduction="none").cpu().numpy(),
                               (fn(x, t, reduction="none") * w).cpu().numpy(), rtol=1e-6)


# ---- weight_norm ---------------------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("wn", [nn.utils.parametrizations.weight_norm, nn.utils.weight_norm])
def test_weight_norm_refuses_a_dim_past_the_weight_s_dims(device, wn):
    """PyTorch: weight_norm's norm_except_dim transposes dim 0 with ``dim``, so a 2-D weight with dim=2 (or -3)
    raises IndexError "Dimension out of range (expected to be in range of [-2, 1], but got 2)". Before: the dim
    wrapped around (2 % 2 = 0) and the norms were silently taken over rows."""
    for bad in (2, -3):
        with pytest.raises(IndexError, match=rf"expected to be in range of \[-2, 1\], but got {bad}"):
            wn(nn.Linear(3, 4).to(device), dim=bad)
    m = wn(nn.Linear(3, 4).to(device), dim=-2)  # (in range: the same norms as dim=0)
    w = m.weight.detach().cpu().numpy()
    g = m.parametrizations.weight.original0 if hasattr(m, "parametrizations") else m.weight_g
    np.testing.assert_allclose(g.detach().cpu().numpy(), np.linalg.norm(w, axis=1, keepdims=True), rtol=1e-5)


# ---- hinge / multi-margin / multilabel-margin losses -----------------------------------------------------------------
def test_hinge_embedding_loss_keeps_an_integer_input_s_dtype(device):
    """PyTorch: hinge_embedding_loss computes ``margin - input`` in a tensor like the input, so an integer input
    gives an integer loss with the margin truncated (margin=1.7 counts as 1; uint8 wraps), its sum promotes as
    sum does (int64) and its mean raises ("mean(): could not infer output dtype"). Before: a float32 loss with the
    exact margin."""
    x = torch.tensor([0, 1, 2, -3], device=device)
    y = torch.tensor([-1, -1, 1, -1], device=device)
    out = F.hinge_embedding_loss(x, y, margin=1.7, reduction="none")
    assert out.dtype == torch.int64
    assert out.cpu().tolist() == [1, 0, 2, 4]
    x32 = x.to(torch.int32)
    assert F.hinge_embedding_loss(x32, y.float(), margin=2.5, reduction="none").dtype == torch.int32
    s = F.hinge_embedding_loss(x.to(torch.uint8), y, margin=2.5, reduction="sum")
    assert s.dtype == torch.int64 and s.item() == 10
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        F.hinge_embedding_loss(x32, y, margin=2.5)
    xf = torch.tensor([0.0, 1.0, 2.0, -3.0], device=device)  # (floating: unchanged)
    np.testing.assert_allclose(F.hinge_embedding_loss(xf, y, margin=1.7, reduction="none").cpu().numpy(),
                               [1.7, 0.7, 2.0, 4.7], rtol=1e-6)


def test_multilabel_margin_loss_input_and_target_checks(device):
    """PyTorch: multilabel_margin_loss takes a 0-d input (one class), a non-empty vector or a matrix of non-empty
    rows (else RuntimeError "Expected non-empty vector or matrix with optional 0-dim batch size"), a Long target
    ("expected scalar type Long but found Int") whose entries lie in [-1, C) ("argument #2 'target' is out of
    range"), and an unbatched input's target may be 0-d. Before: a 0-d input or 0-d target raised ValueError or
    a size error, a 3-d input ValueError, an out-of-range -2 was silently treated as the list's end, an Int target
    and an integer input were accepted, and an input with no classes gave NaN."""
    x = torch.randn(2, 4, device=device)
    y = torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1]], device=device)
    assert F.multilabel_margin_loss(torch.tensor(0.5, device=device), torch.tensor(0, device=device),
                                    reduction="none").item() == 0
    assert F.multilabel_margin_loss(torch.randn(1, device=device), torch.tensor(0, device=device)).item() == 0
    for bad in (torch.zeros(2, 2, 4), torch.zeros(2, 0), torch.zeros(0)):
        with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix with optional 0-dim batch"):
            F.multilabel_margin_loss(bad.to(device), torch.zeros(bad.shape, dtype=torch.int64, device=device))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        F.multilabel_margin_loss(x, y.int())
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.multilabel_margin_loss(torch.ones(2, 4, dtype=torch.int64, device=device), y)
    if torch.device(device).type == "cpu":  # (PyTorch's CPU kernel checks the range; its CUDA one does not)
        for t in ([[-2, 0, -1, 1], [1, 2, 3, -1]], [[4, 0, -1, 1], [1, 2, 3, -1]]):
            with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
                F.multilabel_margin_loss(x, torch.tensor(t, device=device))
    # the mean over an empty batch is 0, as PyTorch's kernel (not 0 / 0)
    e = F.multilabel_margin_loss(torch.zeros(0, 4, device=device), torch.zeros(0, 4, dtype=torch.int64,
                                                                                 device=device))
    assert e.item() == 0


def test_multi_margin_loss_input_target_and_weight_checks(device):
    """PyTorch: multi_margin_loss refuses an integer input (NotImplementedError), a 3-d or class-less input
    ("Expected non-empty vector or matrix ..."), a non-Long target, a target of the wrong size ("target tensor
    should be 1-D with size equal to the number of input samples"), a weight that is not 1-d (ValueError "weight
    must be one-dimensional"), a weight of another dtype ("expected scalar type Float but found Double") or one
    requiring grad (it is not differentiable in the weight), and an out-of-range target ("target out of range").
    Before: each was accepted (an integer input or float64 weight gave a loss, an Int target worked, a weight
    requiring grad got a gradient) or raised another message or type."""
    x = torch.randn(3, 4, device=device)
    y = torch.tensor([3, 0, 2], device=device)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.multi_margin_loss(torch.ones(3, 4, dtype=torch.int64, device=device), y)
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
        F.multi_margin_loss(torch.randn(2, 3, 4, device=device), torch.zeros(2, 3, dtype=torch.int64,
                                                                               device=device))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        F.multi_margin_loss(x, y.int())
    with pytest.raises(RuntimeError, match=r"Expected target size \[3\], but got \[2\]\. Input has shape \[3, 4\]"):
        F.multi_margin_loss(x, y[:2])
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        F.multi_margin_loss(x, y, weight=torch.ones(1, 4, device=device))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.multi_margin_loss(x, y, weight=torch.ones(4, dtype=torch.float64, device=device))
    w = torch.ones(4, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.multi_margin_loss(x, y, weight=w)
    with torch.no_grad():  # (grad mode off: allowed)
        F.multi_margin_loss(x, y, weight=w)
    if torch.device(device).type == "cpu":
        for t in ([4, 0, 1], [-1, 0, 1]):
            with pytest.raises(RuntimeError, match="target out of range"):
                F.multi_margin_loss(x, torch.tensor(t, device=device))
    # unbatched: one sample, a 0-d or one-element target
    v = F.multi_margin_loss(x[0], torch.tensor(3, device=device), reduction="none")
    assert v.shape == () and abs(v.item() - F.multi_margin_loss(x[:1], y[:1]).item()) < 1e-6


# ---- messages: Bilinear, EmbeddingBag, MultiheadAttention ---------------------------------------------------------
def test_bilinear_dtype_and_batch_messages_are_pytorchs(device):
    """PyTorch: F.bilinear checks the four dtypes first ("All tensors must have the same dtype, got input1: double,
    input2: float, weight: float, bias: float") and names the batch dim that differs ("input batch dimensions do not
    match at dim 0: got 2 and 3"). Before: matmul's "expected m1 and m2 to have the same dtype" and no dim."""
    w, b = torch.randn(5, 3, 4, device=device), torch.randn(5, device=device)
    with pytest.raises(RuntimeError, match="^All tensors must have the same dtype, got input1: double, input2: "
                                           "float, weight: float, bias: float$"):
        F.bilinear(torch.randn(2, 3, dtype=torch.float64, device=device), torch.randn(2, 4, device=device), w, b)
    with pytest.raises(RuntimeError, match="^All tensors must have the same dtype, got input1: float, input2: "
                                           "float, weight: double$"):
        F.bilinear(torch.randn(2, 3, device=device), torch.randn(2, 4, device=device), w.double())
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0: got 2 and 3"):
        F.bilinear(torch.randn(2, 3, device=device), torch.randn(3, 4, device=device), w, b)


def test_embedding_bag_per_sample_weights_dtype_message(device):
    """PyTorch: a per_sample_weights dtype other than the weight's raises "Expected tensor for argument #1 'weight'
    to have the same type as tensor for argument #1 'per_sample_weights'; but type torch.FloatTensor does not equal
    torch.DoubleTensor". Before: index_add's "self (Float) and source (Double) must have the same scalar type"."""
    w = torch.randn(10, 3, device=device)
    with pytest.raises(RuntimeError, match=r"'per_sample_weights'; but type torch\.FloatTensor does not equal "
                                           r"torch\.DoubleTensor \(while checking arguments for embedding_bag\)"):
        F.embedding_bag(torch.tensor([1, 2], device=device), w, torch.tensor([0], device=device), mode="sum",
                        per_sample_weights=torch.ones(2, dtype=torch.float64, device=device))


def test_multihead_attention_mask_shape_messages_are_pytorchs(device):
    """PyTorch: a wrong attn_mask reports "The shape of the 2D attn_mask is torch.Size([3, 5]), but should be
    (3, 4)." (3-D alike; coretorch's Size prints as coretorch.Size), a wrong key_padding_mask "Expected
    key_padded_mask.shape[1] to be 4, but got 5" (AssertionError) and key/value shapes "key shape
    torch.Size([4, 2, 8]) does not match value shape torch.Size([5, 2, 8])". Before: lists for the sizes and
    "expecting key_padding_mask shape of (2, 4)"."""
    m = nn.MultiheadAttention(8, 2).to(device)
    q, k = torch.randn(3, 2, 8, device=device), torch.randn(4, 2, 8, device=device)
    with pytest.raises(RuntimeError, match=r"^The shape of the 2D attn_mask is (core)?torch\.Size\(\[3, 5\]\), "
                                           r"but should be \(3, 4\)\.$"):
        m(q, k, k, attn_mask=torch.zeros(3, 5, device=device))
    with pytest.raises(RuntimeError, match=r"^The shape of the 3D attn_mask is (core)?torch\.Size\(\[2, 3, 4\]\), "
                                           r"but should be \(4, 3, 4\)\.$"):
        m(q, k, k, attn_mask=torch.zeros(2, 3, 4, device=device))
    with pytest.raises(AssertionError, match=r"^Expected key_padded_mask\.shape\[1\] to be 4, but got 5$"):
        m(q, k, k, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool, device=device))
    with pytest.raises(AssertionError, match=r"^Expected key_padded_mask\.shape\[0\] to be 2, but got 3$"):
        m(q, k, k, key_padding_mask=torch.zeros(3, 4, dtype=torch.bool, device=device))
    with pytest.raises(AssertionError, match=r"^key shape (core)?torch\.Size\(\[4, 2, 8\]\) does not match value "
                                             r"shape (core)?torch\.Size\(\[5, 2, 8\]\)$"):
        m(q, k, torch.randn(5, 2, 8, device=device))


def test_kl_div_legacy_arguments_beside_batchmean(device):
    """PyTorch: legacy ``size_average``/``reduce`` pick kl_div's reduction and silence the 'mean' warning, yet a
    ``reduction='batchmean'`` passed beside them still divides that result by the batch size (its Python code
    tests ``reduction == 'batchmean'`` after the legacy choice). Before: the batchmean division was dropped (the
    plain mean came back) and the 'mean' warning was raised on top of the legacy one."""
    lp = torch.tensor([[-1.0, -2.0], [-0.5, -1.0]], device=device)
    tp = torch.tensor([[0.3, 0.7], [0.5, 0.5]], device=device)
    total = F.kl_div(lp, tp, reduction="sum").item()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = F.kl_div(lp, tp, size_average=True, reduction="batchmean")
        mean = F.kl_div(lp, tp, size_average=True)
    assert abs(out.item() - total / 4 / 2) < 1e-6 and abs(mean.item() - total / 4) < 1e-6
    assert not any("'batchmean' divides only by the batch size" in str(x.message) for x in w)
    assert any("size_average and reduce args will be deprecated" in str(x.message) for x in w)


def test_unbatched_multihead_attention_3d_mask_message(device):
    """PyTorch: an unbatched query with a 3-D attn_mask of the wrong shape raises AssertionError "Expected
    `attn_mask` shape to be (2, 3, 4) but got torch.Size([1, 3, 4])". Before: the shape printed as a tuple."""
    m = nn.MultiheadAttention(8, 2).to(device)
    q, k = torch.randn(3, 8, device=device), torch.randn(4, 8, device=device)
    with pytest.raises(AssertionError, match=r"^Expected `attn_mask` shape to be \(2, 3, 4\) but got "
                                             r"(core)?torch\.Size\(\[1, 3, 4\]\)$"):
        m(q, k, k, attn_mask=torch.zeros(1, 3, 4, device=device))


# ---- the fused attention paths' NaN rows ---------------------------------------------------------------------------
def _init(m):
    with torch.no_grad():
        for i, (_, p) in enumerate(sorted(m.named_parameters())):
            p.copy_(torch.tensor(np.random.RandomState(i).randn(*p.shape).astype("float32") * 0.3))
    return m.eval()


def test_self_attention_fast_path_leaves_nan_where_a_query_sees_no_key(device):
    """PyTorch: an eval-mode, no-grad, batch-first self-attention call (query is key is value) with
    need_weights=False runs its fused ``_native_multi_head_attention``, whose masked softmax of a boolean mask
    leaves NaN rows where a query sees no key (fully padded sequence, fully masked row, or one head's row of a 3-D
    mask); its unfused path (grad on, training, non-self attention, float masks) gives the output bias there.
    Before: coretorch always gave the unfused path's bias rows."""
    m = _init(nn.MultiheadAttention(8, 2, batch_first=True)).to(device)
    x = torch.randn(2, 3, 8, device=device)
    am = torch.tensor([[True, True, True], [False, True, False], [False, False, False]], device=device)
    kpm = torch.tensor([[True, True, True], [False, False, False]], device=device)
    bias = m.out_proj.bias.detach().cpu().numpy()
    with torch.no_grad():
        out = m(x, x, x, key_padding_mask=kpm, need_weights=False)[0].cpu().numpy()
        assert np.isnan(out[0]).all() and not np.isnan(out[1]).any()
        out = m(x, x, x, attn_mask=am, need_weights=False)[0].cpu().numpy()
        assert np.isnan(out[:, 0]).all() and not np.isnan(out[:, 1:]).any()
        a3 = torch.zeros(4, 3, 3, dtype=torch.bool, device=device)
        a3[1, 0] = True  # batch 0, head 1, query 0
        out = m(x, x, x, attn_mask=a3, need_weights=False)[0].cpu().numpy()
        assert np.isnan(out[0, 0]).all() and not np.isnan(out[0, 1:]).any() and not np.isnan(out[1]).any()
        # the unfused path: float masks, or query / key / value not one tensor
        fm = torch.zeros(3, 3, device=device).masked_fill(am, float("-inf"))
        np.testing.assert_allclose(m(x, x, x, attn_mask=fm, need_weights=False)[0].cpu().numpy()[:, 0],
                                   np.broadcast_to(bias, (2, 8)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m(x, x.clone(), x, attn_mask=am, need_weights=False)[0].cpu().numpy()[:, 0],
                                   np.broadcast_to(bias, (2, 8)), rtol=1e-5, atol=1e-6)
    out = m(x, x, x, attn_mask=am, need_weights=False)[0]  # (grad mode: parameters require grad)
    np.testing.assert_allclose(out.detach().cpu().numpy()[:, 0], np.broadcast_to(bias, (2, 8)), rtol=1e-5,
                               atol=1e-6)
    m.train()
    with torch.no_grad():
        assert not np.isnan(m(x, x, x, attn_mask=am, need_weights=False)[0].cpu().numpy()).any()


def test_encoder_layer_fast_path_leaves_nan_where_a_query_sees_no_key(device):
    """PyTorch: an eval-mode, no-grad, batch-first TransformerEncoderLayer runs its fused
    ``_transformer_encoder_layer_fwd``, which leaves NaN rows for a fully padded sequence or a fully masked query
    (bool or -inf float masks alike); with a forward hook, norm_first=False/True alike but grad on, or training, it
    runs the unfused layer (finite rows). Before: coretorch always gave finite rows."""
    layer = _init(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)).to(device)
    x = torch.randn(2, 3, 8, device=device)
    kpm = torch.tensor([[True, True, True], [False, False, True]], device=device)
    with torch.no_grad():
        out = layer(x, src_key_padding_mask=kpm).cpu().numpy()
        assert np.isnan(out[0]).all() and not np.isnan(out[1]).any()
        fk = torch.zeros(2, 3, device=device).masked_fill(kpm, float("-inf"))
        assert np.isnan(layer(x, src_key_padding_mask=fk).cpu().numpy()[0]).all()
        handle = layer.register_forward_hook(lambda *a: None)
        assert not np.isnan(layer(x, src_key_padding_mask=kpm).cpu().numpy()).any()
        handle.remove()
        # a TransformerEncoder's nested-tensor path writes zeros at padded positions instead
        enc = _init(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2))
        enc = enc.to(device)
        e = enc(x, src_key_padding_mask=kpm).cpu().numpy()
        assert (e[0] == 0).all() and not np.isnan(e).any()
    assert not np.isnan(layer(x, src_key_padding_mask=kpm).detach().cpu().numpy()).any()


def test_multilabel_soft_margin_loss_of_a_0d_input_raises(device):
    """PyTorch: multilabel_soft_margin_loss divides by ``input.size(-1)``, an IndexError ("Dimension specified as
    -1 but tensor has no dimensions") for a 0-d input. Before: a loss came back."""
    with pytest.raises(IndexError, match="Dimension specified as -1 but tensor has no dimensions"):
        F.multilabel_soft_margin_loss(torch.tensor(0.5, device=device), torch.tensor(1.0, device=device))
    out = F.multilabel_soft_margin_loss(torch.zeros(1, device=device), torch.ones(1, device=device))
    assert abs(out.item() - math.log(2.0)) < 1e-6
