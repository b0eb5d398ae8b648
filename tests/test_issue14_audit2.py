"""Second issue-14 audit against PyTorch 2.13: grad_fn names of ``nn.CrossMapLRN2d``, ``pad_sequence``,
``pad_packed_sequence`` and attention with no keys or an empty result (and ``E == 0``, which divided by zero);
the full backward (pre-)hook warning when no input requires grad; ``Uniform``'s argument validation message.
Every test runs on each installed device; references are numpy (checked against PyTorch by hand)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F
from coretorch import nn
from coretorch.autograd import gradcheck
from coretorch.nn.utils.rnn import pack_sequence, pad_packed_sequence, pad_sequence


def _r(device, *shape):
    return torch.randn(shape, dtype=torch.float64).to(device).requires_grad_()


def _name(t) -> str:
    return type(t.grad_fn).__name__


def test_cross_map_lrn_and_padding_names_and_values(device):
    torch.manual_seed(0)
    x = _r(device, 1, 3, 1, 2)
    lrn = nn.CrossMapLRN2d(3)
    assert _name(lrn(x)) == "CrossMapLRN2dBackward"
    np.testing.assert_allclose(lrn(x).detach().cpu().numpy(), F.local_response_norm(x, 3).detach().cpu().numpy())
    assert gradcheck(lambda t: lrn(t), (x,))

    a, b = _r(device, 3, 2), _r(device, 2, 2)
    for kw in ({}, {"batch_first": True}, {"padding_side": "left"}):
        assert _name(pad_sequence([a, b], **kw)) == "CopySlices"
    assert _name(pad_sequence([a])) == "CopySlices"

    srt, uns = pack_sequence([a, b]), pack_sequence([b, a], enforce_sorted=False)
    got = {(s, bf): pad_packed_sequence(p, batch_first=bf)[0] for s, p in (("sorted", srt), ("unsorted", uns))
           for bf in (False, True)}
    assert {k: _name(v) for k, v in got.items()} == {
        ("sorted", False): "CopySlices", ("sorted", True): "TransposeBackward0",
        ("unsorted", False): "IndexSelectBackward0", ("unsorted", True): "IndexSelectBackward0"}
    # values: the unsorted batch keeps the caller's order [b, a], padded with zeros
    want = np.zeros((2, 3, 2))
    want[0, :2], want[1] = b.detach().cpu().numpy(), a.detach().cpu().numpy()
    np.testing.assert_allclose(got[("unsorted", True)].detach().cpu().numpy(), want)
    np.testing.assert_allclose(got[("unsorted", False)].detach().cpu().numpy(), want.transpose(1, 0, 2))
    assert gradcheck(lambda p, q: pad_packed_sequence(pack_sequence([p, q], enforce_sorted=False),
                                                      batch_first=True)[0], (b, a))


def test_attention_with_no_keys_or_empty_result_or_zero_width(device):
    torch.manual_seed(1)
    sdpa = F.scaled_dot_product_attention
    cases = [((2, 3, 0, 8), (2, 3, 4, 8), (2, 3, 4, 8)), ((2, 4, 8), (2, 0, 8), (2, 0, 8)),
             ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 0)), ((4, 8), (0, 8), (0, 8)), ((0, 8), (0, 8), (0, 8))]
    for shapes in cases:
        q, k, v = (_r(device, *s) for s in shapes)
        out = sdpa(q, k, v)
        assert _name(out) == "AddBackward0", shapes
        assert out.shape == q.shape[:-1] + v.shape[-1:] and not out.detach().cpu().numpy().any()
    out = sdpa(*(_r(device, *s) for s in ((2, 4, 8), (2, 0, 8), (2, 0, 8))), is_causal=True)
    assert _name(out) == "AddBackward0"
    # E == 0: the scores are zeros (1/sqrt(0) is inf in PyTorch, never multiplied by 0), so each row is V's mean
    q, k, v = _r(device, 2, 4, 0), _r(device, 2, 5, 0), _r(device, 2, 5, 3)
    out = sdpa(q, k, v)
    assert _name(out) == "UnsafeViewBackward0"
    want = np.broadcast_to(v.detach().cpu().numpy().mean(1, keepdims=True), (2, 4, 3))
    np.testing.assert_allclose(out.detach().cpu().numpy(), want, rtol=1e-12)
    assert _name(sdpa(_r(device, 4, 0), _r(device, 4, 0), _r(device, 4, 3))) == "MmBackward0"
    assert gradcheck(lambda t: sdpa(q, k, t), (v,))


_HOOK_MSG = "Full backward hook is firing when gradients are computed with respect to module outputs since no " \
            "inputs require gradients"


def test_full_backward_pre_hook_warns_when_no_input_requires_grad(device):
    m = nn.Linear(2, 2).to(device)
    seen = []
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(len(go)))
    x = torch.randn(3, 2, device=device)
    with pytest.warns(UserWarning, match=_HOOK_MSG) as rec:
        m(x).sum().backward()
    assert rec[0].filename == __file__  # points at the caller, as PyTorch's
    assert seen == [1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m(x.requires_grad_()).sum().backward()
    assert seen == [1, 1]


def test_uniform_validation_message(device):
    with pytest.raises(ValueError) as e:
        torch.distributions.Uniform(torch.tensor(1.0, device=device), torch.tensor(0.0, device=device),
                                    validate_args=True)
    assert str(e.value) == ("Expected parameter low (Tensor of shape ()) of distribution Uniform(low: 1.0, high: 0.0)"
                            " to satisfy the constraint LessThan(upper_bound=0.0), but found invalid values:\n1.0")
    with pytest.raises(ValueError, match="Expected parameter low .* LessThan"):
        torch.distributions.Uniform(0.0, 0.0, validate_args=True)
    u = torch.distributions.Uniform(torch.zeros(2, device=device), torch.ones(2, device=device), validate_args=True)
    assert set(u.arg_constraints) == {"low", "high"} and u.sample((3,)).shape == (3, 2)
