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
