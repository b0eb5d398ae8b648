"""Review 22k (eager, second pass): attention and transformer layers against PyTorch 2.13:
F.scaled_dot_product_attention (masks, causal, scale, GQA, empty sequences), nn.MultiheadAttention,
F.multi_head_attention_forward and the nn.Transformer* layers.  Each test states what PyTorch gives and what
coretorch gave before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def _t(a, device, **kw):
    return torch.tensor(np.asarray(a), device=device, **kw)


@pytest.mark.parametrize("dtype", [torch.bool, torch.float64])
def test_sdpa_with_no_keys_and_a_mask_returns_zeros(device, dtype):
    """With S == 0 and an (L, 0) mask PyTorch returns zeros of shape (..., L, Ev) whose gradient is zero;
    coretorch's masked softmax took the amax of the empty key dim and raised IndexError."""
    rng = np.random.default_rng(0)
    q = _t(rng.standard_normal((3, 4, 5)), device, requires_grad=True)
    k = _t(np.zeros((3, 0, 5)), device)
    v = _t(np.zeros((3, 0, 7)), device)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(4, 0, dtype=dtype, device=device))
    assert out.shape == (3, 4, 7) and out.dtype == torch.float64
    assert not out.detach().cpu().numpy().any()
    out.sum().backward()
    assert q.grad is not None and not q.grad.cpu().numpy().any()


def test_sdpa_mask_that_would_grow_the_scores_raises(device):
    """PyTorch adds the mask to the scores in place: a (2, 3, 4, 6) mask on 3-D inputs (scores (3, 4, 6)) raises
    RuntimeError "output with shape [3, 4, 6] doesn't match the broadcast shape [2, 3, 4, 6]"; a mask that
    broadcasts to the scores' own shape is fine.  coretorch returned a (2, 3, 4, 7) result."""
    rng = np.random.default_rng(1)
    q, k, v = (_t(rng.standard_normal(s), device) for s in [(3, 4, 5), (3, 6, 5), (3, 6, 7)])
    with pytest.raises(RuntimeError, match="broadcast shape"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(2, 3, 4, 6, dtype=torch.bool, device=device))
    with pytest.raises(RuntimeError, match="broadcast shape"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(2, 1, 4, 6, dtype=torch.float64, device=device))
    # batch of the scores is the broadcast of query's and key's: a mask of that batch is accepted
    q1 = _t(rng.standard_normal((1, 3, 4, 5)), device)
    k2, v2 = _t(rng.standard_normal((2, 3, 6, 5)), device), _t(rng.standard_normal((2, 3, 6, 7)), device)
    out = F.scaled_dot_product_attention(q1, k2, v2, attn_mask=torch.ones(2, 3, 4, 6, dtype=torch.bool,
                                                                          device=device))
    assert out.shape == (2, 3, 4, 7)


@pytest.mark.parametrize("kpm_bool", [True, False])
def test_mha_mismatched_key_padding_and_attn_mask_types_warn_once(device, kpm_bool):
    """PyTorch's MultiheadAttention (and F.multi_head_attention_forward) warns "Support for mismatched
    key_padding_mask and attn_mask is deprecated" once when one mask is bool and the other float; the same types
    do not warn.  coretorch merged them silently."""
    import warnings

    m = torch.nn.MultiheadAttention(8, 2).to(device)
    rng = np.random.default_rng(2)
    q = _t(rng.standard_normal((4, 3, 8)), device, dtype=torch.float32)
    kpm = _t(rng.random((3, 4)) > 0.5, device)
    am = _t(np.zeros((4, 4)), device, dtype=torch.float32)
    if not kpm_bool:
        kpm, am = am.new_zeros(3, 4), am == 1
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m(q, q, q, key_padding_mask=kpm, attn_mask=am)
    assert [str(x.message) for x in w if "mismatched" in str(x.message)] == [
        "Support for mismatched key_padding_mask and attn_mask is deprecated. Use same type for both instead."]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m(q, q, q, key_padding_mask=kpm, attn_mask=am.to(kpm.dtype))
        F.multi_head_attention_forward(q, q, q, 8, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
                                       m.out_proj.weight, m.out_proj.bias, key_padding_mask=kpm)
    assert not [x for x in w if "mismatched" in str(x.message)]


def _encoder(device, **kw):
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0)
    enc = torch.nn.TransformerEncoder(layer, 2, norm=torch.nn.LayerNorm(8), **kw).to(device).double().eval()
    with torch.no_grad():
        rng = np.random.default_rng(3)
        for p in enc.parameters():
            p.copy_(_t(rng.uniform(-0.5, 0.5, tuple(p.shape)), device))
    return enc


def test_encoder_nested_fast_path_zeroes_padded_positions_in_inference(device):
    """PyTorch's TransformerEncoder (enable_nested_tensor=True, an eligible batch_first layer) in inference with a
    left-aligned src_key_padding_mask and no mask runs on nested tensors: padded positions are zeros before the
    final norm (so they hold norm(0) = its bias), unpadded ones equal the padded run's.  coretorch returned the
    values computed at padded positions."""
    enc = _encoder(device)
    assert enc.use_nested_tensor
    rng = np.random.default_rng(4)
    x = _t(rng.standard_normal((3, 5, 8)), device)
    kpm_np = np.array([[False] * 4 + [True], [False] * 5, [False] * 2 + [True] * 3])
    kpm = _t(kpm_np, device)
    with torch.no_grad():
        fast = enc(x, src_key_padding_mask=kpm).cpu().numpy()
        enc.use_nested_tensor = False
        slow = enc(x, src_key_padding_mask=kpm).cpu().numpy()
        enc.use_nested_tensor = True
        right = enc(x, src_key_padding_mask=_t(kpm_np[:, ::-1].copy(), device)).cpu().numpy()  # not left aligned
    bias = enc.norm.bias.detach().cpu().numpy()
    np.testing.assert_allclose(fast[kpm_np], np.broadcast_to(bias, (kpm_np.sum(), 8)), rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast[~kpm_np], slow[~kpm_np], rtol=1e-12, atol=1e-12)
    assert not np.allclose(slow[kpm_np], bias)
    enc.use_nested_tensor = False  # a right-aligned mask does not take the fast path: the padded run's values
    with torch.no_grad():
        np.testing.assert_allclose(right, enc(x, src_key_padding_mask=_t(kpm_np[:, ::-1].copy(), device)).cpu()
                                   .numpy(), rtol=0, atol=0)
    # with grad enabled and parameters that require it, PyTorch takes the padded path
    enc.use_nested_tensor = True
    np.testing.assert_allclose(enc(x, src_key_padding_mask=kpm).detach().cpu().numpy(), slow, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw, why", [
    (dict(norm_first=True), "encoder_layer.norm_first was True"),
    (dict(batch_first=False), "encoder_layer.self_attn.batch_first was not True(use batch_first for better "
                              "inference performance)"),
    (dict(activation=torch.tanh), "encoder_layer.activation_relu_or_gelu was not True"),
    (dict(bias=False), "encoder_layer.self_attn was passed bias=False"),
    (dict(nhead=1), "encoder_layer.self_attn.num_heads is odd"),
])
def test_encoder_warns_why_it_cannot_use_nested_tensors(kw, why):
    """PyTorch's TransformerEncoder(enable_nested_tensor=True) warns "enable_nested_tensor is True, but
    self.use_nested_tensor is False because <why>" and sets use_nested_tensor False; an eligible layer (or
    enable_nested_tensor=False) does not warn.  coretorch never warned and always set use_nested_tensor False."""
    kw = {"batch_first": True, "nhead": 2, **kw}
    with pytest.warns(UserWarning, match="use_nested_tensor is False because " + why.replace("(", r"\(")
                      .replace(")", r"\)")):
        enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, dim_feedforward=16, **kw), 1)
    assert enc.use_nested_tensor is False and enc.enable_nested_tensor is True
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
                                           1).use_nested_tensor is True
        torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16), 1, enable_nested_tensor=False)


def test_encoder_nested_fast_path_compiled_matches_eager_without_a_graph_break(device):
    """The fast path's left-alignment check is decided on the device: a compiled inference encoder gives eager's
    result for left-aligned and other masks, and its capture has no graph break (a host read of the check would
    break every call)."""
    enc = _encoder(device)
    fn = torch.compile(lambda x, k: enc(x, src_key_padding_mask=k))
    rng = np.random.default_rng(5)
    x = _t(rng.standard_normal((3, 5, 8)), device)
    masks = [[[False] * 4 + [True]] * 3, [[True] + [False] * 4] * 3, [[False] * 2 + [True] * 3] * 3]
    with torch.no_grad():
        for m in masks * 2:
            k = _t(np.array(m), device)
            np.testing.assert_array_equal(fn(x, k).cpu().numpy(), enc(x, src_key_padding_mask=k).cpu().numpy())
        info = torch.compiler.explain(lambda x, k: enc(x, src_key_padding_mask=k))(x, _t(np.array(masks[0]), device))
    assert info.graph_break_count == 0


def test_sdpa_dropout_above_one_and_gqa_on_2d_inputs_raise(device):
    """PyTorch raises RuntimeError "dropout probability has to be between 0 and 1, but got 1.5" for dropout_p > 1
    (a negative p is no dropout) and IndexError for enable_gqa=True on 2-D inputs (it reads size(-3)); coretorch
    returned zeros for p = 1.5 and attended without heads."""
    q = _t(np.random.default_rng(6).standard_normal((2, 4, 5)), device)
    with pytest.raises(RuntimeError, match="between 0 and 1, but got 1.5"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=-0.1)
    np.testing.assert_allclose(out.cpu().numpy(), F.scaled_dot_product_attention(q, q, q).cpu().numpy())
    with pytest.raises(IndexError):
        F.scaled_dot_product_attention(q[0], q[0], q[0], enable_gqa=True)
    with pytest.raises(IndexError):
        F.scaled_dot_product_attention(q, q[0], q[0], enable_gqa=True)
    assert F.scaled_dot_product_attention(q, q[:1], q[:1], enable_gqa=True).shape == (2, 4, 5)


def test_mha_with_kdim_checks_the_key_and_value_feature_sizes(device):
    """PyTorch's separate in-projection asserts each weight's shape against its input: a key of 4 features for
    kdim=3 raises AssertionError "expecting key weights shape of (8, 4), but got torch.Size([8, 3])"; coretorch
    raised the projection's RuntimeError (mat1 and mat2 shapes cannot be multiplied)."""
    m = torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5).to(device)
    rng = np.random.default_rng(7)
    q = _t(rng.standard_normal((4, 3, 8)), device, dtype=torch.float32)
    k = _t(rng.standard_normal((5, 3, 4)), device, dtype=torch.float32)
    v = _t(rng.standard_normal((5, 3, 5)), device, dtype=torch.float32)
    with pytest.raises(AssertionError, match=r"expecting key weights shape of \(8, 4\)"):
        m(q, k, v)
    with pytest.raises(AssertionError, match=r"expecting value weights shape of \(8, 3\)"):
        m(q, k[..., :3], v[..., :3])
    assert m(q, k[..., :3], v)[0].shape == (4, 3, 8)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_self_attention_gradient_with_create_graph(device, causal):
    """With q, k and v the same tensor, PyTorch's gradient under create_graph=True equals the plain backward's
    (and its second derivative passes gradgradcheck); coretorch's create_graph backward of its one-node attention
    differentiated the composite once per slot against the same tensor, so each slot got the whole gradient: three
    times the gradient (12.2 off on this input)."""
    rng = np.random.default_rng(8)
    q = _t(rng.standard_normal((2, 4, 5)), device, requires_grad=True)
    mask = None if causal else _t(rng.random((4, 4)) > 0.3, device)
    o = F.scaled_dot_product_attention(q, q, q, attn_mask=mask, is_causal=causal)
    g1, = torch.autograd.grad((o * o).sum(), q)
    o = F.scaled_dot_product_attention(q, q, q, attn_mask=mask, is_causal=causal)
    g2, = torch.autograd.grad((o * o).sum(), q, create_graph=True)
    np.testing.assert_allclose(g2.detach().cpu().numpy(), g1.cpu().numpy(), rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradgradcheck(lambda x: F.scaled_dot_product_attention(x, x, x, attn_mask=mask,
                                                                                 is_causal=causal), (q,))


def test_backends_mha_fastpath_switch_turns_the_encoder_fast_path_off(device):
    """torch.backends.mha.get_fastpath_enabled()/set_fastpath_enabled() exist in PyTorch (True by default); with
    the fast path off a TransformerEncoder in inference computes padded positions like the training path.
    coretorch had no torch.backends.mha (AttributeError)."""
    assert torch.backends.mha.get_fastpath_enabled() is True
    enc = _encoder(device)
    x = _t(np.random.default_rng(9).standard_normal((2, 5, 8)), device)
    kpm_np = np.array([[False] * 3 + [True] * 2, [False] * 5])
    kpm = _t(kpm_np, device)
    bias = enc.norm.bias.detach().cpu().numpy()
    try:
        torch.backends.mha.set_fastpath_enabled(False)
        assert torch.backends.mha.get_fastpath_enabled() is False
        with torch.no_grad():
            off = enc(x, src_key_padding_mask=kpm).cpu().numpy()
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
    with torch.no_grad():
        on = enc(x, src_key_padding_mask=kpm).cpu().numpy()
    np.testing.assert_allclose(on[kpm_np], np.broadcast_to(bias, (2, 8)), rtol=0, atol=1e-12)
    assert not np.allclose(off[kpm_np], bias)
    np.testing.assert_allclose(on[~kpm_np], off[~kpm_np], rtol=1e-12, atol=1e-12)


def _np_masked_attention(q, k, v, keep):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.where(keep, s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


def test_attention_bias_causal_lower_right_and_upper_left(device):
    """torch.nn.attention.bias (causal_lower_right, causal_upper_left, CausalBias, CausalVariant) exists in
    PyTorch: passed as attn_mask, a lower-right bias lets query i see keys <= i + S - L, an upper-left one is
    is_causal=True's mask; with is_causal=True it raises ValueError, L > S lower-right warns.  coretorch had no
    torch.nn.attention.bias (ModuleNotFoundError)."""
    from coretorch.nn.attention.bias import CausalBias, CausalVariant, causal_lower_right, causal_upper_left

    rng = np.random.default_rng(10)
    q, k, v = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 7, 8)), rng.standard_normal((2, 7, 4))
    tq, tk, tv = (_t(a, device, requires_grad=True) for a in (q, k, v))
    lr = causal_lower_right(3, 7)
    assert isinstance(lr, CausalBias) and lr.variant == CausalVariant.LOWER_RIGHT
    assert (lr.seq_len_q, lr.seq_len_kv) == (3, 7)
    keep_lr = np.tril(np.ones((3, 7), bool), 4)
    np.testing.assert_array_equal(lr._materialize().numpy(), keep_lr)
    out = F.scaled_dot_product_attention(tq, tk, tv, lr)
    np.testing.assert_allclose(out.detach().cpu().numpy(), _np_masked_attention(q, k, v, keep_lr), rtol=1e-12)
    out.sum().backward()
    assert tq.grad is not None and tk.grad.shape == (2, 7, 8)
    ul = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=causal_upper_left(3, 7))
    keep_ul = np.tril(np.ones((3, 7), bool))
    np.testing.assert_allclose(ul.detach().cpu().numpy(), _np_masked_attention(q, k, v, keep_ul), rtol=1e-12)
    with pytest.raises(ValueError, match="should not be used with causal=True"):
        F.scaled_dot_product_attention(tq, tk, tv, attn_mask=lr, is_causal=True)
    with pytest.warns(UserWarning, match="produce NaNs"):
        causal_lower_right(5, 3)
    with pytest.raises(AssertionError):
        causal_upper_left(3)


def test_sdpa_scale_and_enable_gqa_are_keyword_only(device):
    """PyTorch's schema makes scale and enable_gqa keyword-only: a seventh positional argument raises TypeError
    ("takes from 3 to 6 positional arguments but 7 were given"); coretorch took it as the scale."""
    q = _t(np.random.default_rng(11).standard_normal((2, 3, 4)), device)
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(q, q, q, None, 0.0, False, 0.5)
    assert F.scaled_dot_product_attention(q, q, q, None, 0.0, False, scale=0.5, enable_gqa=False).shape == (2, 3, 4)


def test_mha_float_mask_of_another_dtype_than_the_query(device):
    """PyTorch keeps a float mask's dtype: a float32 key_padding_mask on a float64 MultiheadAttention raises
    RuntimeError when the weights are returned (baddbmm: "Input dtypes must be the same") and works without them
    (scaled_dot_product_attention accepts a float32 mask); a float64 mask on float32 raises either way.
    coretorch cast the masks to the query's dtype and never raised."""
    m = torch.nn.MultiheadAttention(8, 2).to(device).double()
    q = _t(np.random.default_rng(12).standard_normal((4, 3, 8)), device)
    kpm32 = torch.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="dtypes must be the same"):
        m(q, q, q, key_padding_mask=kpm32)
    out = m(q, q, q, key_padding_mask=kpm32, need_weights=False)[0]
    np.testing.assert_allclose(out.detach().cpu().numpy(), m(q, q, q, need_weights=False)[0].detach().cpu().numpy(),
                               rtol=1e-12)
    m32 = torch.nn.MultiheadAttention(8, 2).to(device)
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        m32(q.float(), q.float(), q.float(), attn_mask=torch.zeros(4, 4, dtype=torch.float64, device=device),
            need_weights=False)


def test_mha_float32_mask_returning_weights_under_autocast(device):
    """Under autocast PyTorch's baddbmm casts the float32 mask with the bfloat16 scores: MultiheadAttention returns
    bfloat16 output (no dtype error).  The need_weights dtype check above raised under autocast before the fix."""
    m = torch.nn.MultiheadAttention(8, 2).to(device)
    q = torch.randn(4, 3, 8, device=device)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):
        out, w = m(q, q, q, attn_mask=mask, key_padding_mask=torch.zeros(3, 4, device=device))
        w_plain = m(q, q, q)[1]  # the weights' dtype follows the device's autocast policy for softmax
    assert out.dtype == torch.bfloat16 and w.dtype == w_plain.dtype


def test_compiled_encoder_follows_the_mha_fastpath_switch(device):
    """The fast-path switch is part of a replay's modes: after torch.backends.mha.set_fastpath_enabled(False) a
    compiled inference encoder gives eager's values at padded positions (the replay of the capture made with the
    switch on kept writing zeros there before)."""
    enc = _encoder(device)
    fn = torch.compile(lambda x, k: enc(x, src_key_padding_mask=k))
    x = _t(np.random.default_rng(13).standard_normal((2, 5, 8)), device)
    k = _t(np.array([[False] * 3 + [True] * 2, [False] * 5]), device)
    try:
        with torch.no_grad():
            for flag in (True, True, False, False, True):
                torch.backends.mha.set_fastpath_enabled(flag)
                np.testing.assert_array_equal(fn(x, k).cpu().numpy(),
                                              enc(x, src_key_padding_mask=k).cpu().numpy())
    finally:
        torch.backends.mha.set_fastpath_enabled(True)


def test_encoder_layer_knows_relu_and_gelu_after_a_subclass_enables_dispatch():
    """Once a Tensor subclass with __torch_function__ is defined, F's functions are dispatching wrappers; the
    layer's default activation (the function its class body saw) and F.relu/F.gelu passed then must still count as
    relu/gelu for the fast path (the suite's order made these tests fail: activation_relu_or_gelu was 0)."""
    class Traced(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    assert Traced is not None
    assert torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).activation_relu_or_gelu == 1
    assert torch.nn.TransformerEncoderLayer(8, 2, 16, activation=F.relu).activation_relu_or_gelu == 1
    assert torch.nn.TransformerEncoderLayer(8, 2, 16, activation="gelu").activation_relu_or_gelu == 2
    assert torch.nn.TransformerEncoderLayer(8, 2, 16, activation=F.gelu).activation_relu_or_gelu == 2
    assert torch.nn.TransformerEncoderLayer(8, 2, 16, activation=F.silu).activation_relu_or_gelu == 0
