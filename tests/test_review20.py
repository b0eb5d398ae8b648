"""Session 20's own fixes (the lead's; the reviews' are in test_review20a.py ... test_review20f.py)."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def test_size_takes_ints_only():
    """``torch.Size([2.5])`` raises PyTorch's TypeError naming the item (coretorch kept the float, so a later
    ``torch.empty(size)`` failed deep inside); bools count as 0/1, numpy integers are kept, one-element integer
    tensors give their value."""
    for bad, name in (((2.0,), "float"), ([None], "NoneType"), ("ab", "str"), ([np.float64(2)], "numpy.float64"),
                      ([torch.tensor(2.0)], "Tensor"), ([3, torch.tensor([1, 2])], "Tensor")):
        with pytest.raises(TypeError, match=rf"torch.Size\(\) takes an iterable of 'int' \(item \d is '{name}'\)"):
            torch.Size(bad)
    with pytest.raises(TypeError):
        torch.Size(5)
    s = torch.Size([True, np.int32(4), torch.tensor([3]), torch.tensor(2, dtype=torch.int8), -1])
    assert s == (1, 4, 3, 2, -1) and type(s[0]) is int and type(s[2]) is int and type(s[1]) is np.int32
    t = torch.Size([2, 3])
    assert isinstance(t[1:], torch.Size) and isinstance(t * 2, torch.Size) and isinstance(t + (4,), torch.Size)
    assert pickle.loads(pickle.dumps(t)) == t and copy.deepcopy(t) == t and torch.Size(t) == t
    assert torch.Size() == () and torch.ones(2, 3).shape == t and torch.empty(t).shape == t


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_gradient_in_rows_of_weight_zero(device, reduction):
    """PyTorch writes -w[t] * (g / total) in every row whose target is not ignore_index: a class of weight 0 gives
    -(0 * g), a signed zero, and all-zero weights with reduction 'mean' give NaN there (0 * (g / 0)); ignored rows
    stay 0.  coretorch zeroed every row of weight 0 (the weighted backward took weight 0 for "ignored")."""
    t = torch.tensor([0, 1, 2, -100, 1], device=device)
    for w, g in ((torch.tensor([1.0, 0.0, 2.0], device=device), 0.7), (torch.zeros(3, device=device), 0.7)):
        x = torch.tensor(np.arange(15.0).reshape(5, 3) / 7, device=device, dtype=torch.float32, requires_grad=True)
        (F.nll_loss(x, t, weight=w, reduction=reduction) * g).sum().backward()
        got = x.grad.cpu().numpy()
        wn, tn = w.cpu().numpy(), t.cpu().numpy()
        want = np.zeros((5, 3), np.float32)
        with np.errstate(all="ignore"):
            gs = np.float32(g) / np.float32(wn.sum()) if reduction == "mean" else np.float32(g)
            for i, ti in enumerate(tn):
                if ti != -100:
                    want[i, ti] = -(wn[ti] * gs)
        np.testing.assert_array_equal(got, want)          # (NaN where expected)
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))
        assert not np.signbit(got[3]).any()              # the ignored row


def test_default_collate_strings_inside_nested_samples():
    """PyTorch's default_collate returns a field of strings as the container it was handed: the batch list at the
    top level, the ``zip`` tuple inside a nested sample (``[(1, (2.0, "s")), ...]`` -> ``[..., [..., ("s", "t")]]``);
    coretorch made every one a list."""
    from coretorch.utils.data import default_collate
    out = default_collate([(1, (2.0, "s")), (3, (4.0, "t"))])
    assert out[1][1] == ("s", "t")
    assert default_collate(["x", "y"]) == ["x", "y"]
    assert default_collate([{"a": "x"}, {"a": "y"}]) == {"a": ["x", "y"]}
    assert out[0].tolist() == [1, 3] and out[1][0].dtype == torch.float64


def test_manual_seed_out_of_range_is_a_value_error():
    """PyTorch 2.13: ``manual_seed(2**64)`` (and below -2**63), module-level or a Generator's, raises
    ValueError('Overflow when unpacking long long'); coretorch raised RuntimeError."""
    for seed in (2 ** 64, -2 ** 63 - 1):
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            torch.manual_seed(seed)
        with pytest.raises(ValueError, match="Overflow when unpacking long long"):
            torch.Generator().manual_seed(seed)
    assert torch.manual_seed(-2 ** 63).initial_seed() == 2 ** 63


def test_range_is_pytorchs_deprecated_inclusive_range(device):
    """``torch.range`` existed in PyTorch 2.13 (deprecated, with a UserWarning) and was missing: ``end`` included,
    ``floor((end - start) / step) + 1`` values, the default float dtype unless ``dtype`` is given."""
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = torch.range(1, 4, device=device)
    assert r.dtype == torch.float32 and r.tolist() == [1.0, 2.0, 3.0, 4.0] and r.device.type == device
    with pytest.warns(UserWarning):
        np.testing.assert_allclose(torch.range(0, 1, 0.3).numpy(), np.arange(4) * 0.3, rtol=1e-7)
        assert torch.range(1, 4, dtype=torch.int64).tolist() == [1, 2, 3, 4]
        assert torch.range(3, 0, -1).tolist() == [3.0, 2.0, 1.0, 0.0] and torch.range(0, 0).tolist() == [0.0]
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            torch.range(0, 3, 0)
        with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
            torch.range(0, 3, -1)
    assert list(range(3)) == [0, 1, 2]      # (the builtin, in this module and in coretorch's own code)
    assert torch.cuda.device_count() >= 0


def test_linspace_logspace_take_0d_tensor_bounds(device):
    """PyTorch takes 0-d tensors as linspace/logspace bounds (and refuses others with its message); coretorch
    raised AttributeError ('Tensor' object has no attribute 'astype') from numpy."""
    a, b = torch.tensor(1, device=device), torch.tensor(3.0, device=device)
    assert torch.linspace(a, b, 3).tolist() == [1.0, 2.0, 3.0]
    assert torch.logspace(torch.tensor(0.0), 2, 3).tolist() == [1.0, 10.0, 100.0]
    with pytest.raises(RuntimeError, match="linspace only supports 0-dimensional start and end tensors, but got "
                                           r"start with 1 dimension\(s\)"):
        torch.linspace(torch.tensor([0.0]), 1, 3)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        torch.arange(0, 5, -1)


def test_scaled_dot_product_attention_under_autocast(device):
    """sdpa is on autocast's lower-precision list; its half inputs compute in float32 and round once.  Under
    ``torch.autocast`` that float32 computation was cast back to the half dtype, recursing until RecursionError;
    PyTorch returns the autocast dtype."""
    q = torch.randn(1, 2, 4, 8, device=device)
    dt = torch.bfloat16 if device == "cpu" else torch.float16
    with torch.autocast(device, dtype=dt):
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.dtype == dt
    ref = F.scaled_dot_product_attention(q.to(dt).float(), q.to(dt).float(), q.to(dt).float(), is_causal=True)
    np.testing.assert_array_equal(out.float().cpu().numpy(), ref.to(dt).float().cpu().numpy())


def test_autocast_dtypes_of_prelu_margin_losses_and_vecdot():
    """PyTorch 2.13's CPU autocast lists: prelu and linalg_vecdot run in the lower precision, the margin losses
    (multi_margin, multilabel_margin, triplet_margin) in float32.  coretorch left prelu and vecdot in float32 and
    the margin losses in bfloat16 (the policy's lists named prelu, but the op never asked)."""
    x = torch.randn(3, 4)
    b = torch.randn(3, 4).to(torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert F.prelu(x, torch.tensor([0.25])).dtype == torch.bfloat16
        assert torch.nn.PReLU()(x).dtype == torch.bfloat16
        assert torch.linalg.vecdot(x, x).dtype == torch.bfloat16
        assert F.multi_margin_loss(b, torch.tensor([0, 1, 2])).dtype == torch.float32
        assert F.multilabel_margin_loss(b, torch.tensor([[0, 1, -1, 0]] * 3)).dtype == torch.float32
        assert F.triplet_margin_loss(b, b, b).dtype == torch.float32


def test_pytorch_keyword_names_of_tensor_methods_and_binary_ops(device):
    """PyTorch's keyword names: ``x.eq(other=y)``, ``torch.mul(input=x, other=y)``, ``x.pow(exponent=2)``,
    ``x.pow_(exponent=2)``, ``torch.atan2(input=x, other=y)``, ``x.permute(dims=...)``, ``x.expand(size=...)``,
    ``x.flip(dims=...)``, ``x.tile(dims=...)``, ``x.split(split_size=...)``, ``x.swapaxes(axis0=, axis1=)``,
    ``torch.swapdims(x, dim0=, dim1=)``; each raised TypeError (unexpected keyword / multiple values)."""
    x = torch.arange(12.0, device=device).reshape(3, 4)
    assert x.eq(other=x).all() and torch.eq(input=x, other=x).all() and not x.lt(other=x).any()
    assert torch.mul(input=x, other=x).equal(x * x) and x.remainder(other=5).equal(torch.remainder(x, 5))
    assert torch.pow(x, exponent=2).equal(x * x) and x.pow(exponent=2).equal(x * x)
    assert x.clone().pow_(exponent=2).equal(x * x)
    assert torch.atan2(input=x, other=x).equal(torch.atan2(x, x))
    assert x.permute(dims=(1, 0)).equal(x.T) and torch.permute(x, dims=(1, 0)).equal(x.T)
    assert x[:1].expand(size=(3, 4)).shape == (3, 4)
    assert x.flip(dims=[0]).equal(x.flip(0)) and x.tile(dims=(2,)).shape == (3, 8)
    assert x.split(split_size=2, dim=1)[1].equal(x[:, 2:]) and x.split(split_size=[1, 3], dim=1)[1].equal(x[:, 1:])
    assert x.swapaxes(axis0=0, axis1=1).equal(x.T) and torch.swapdims(x, dim0=0, dim1=1).equal(x.T)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        x.permute(dims=(1, 0), foo=1)
    with pytest.raises(TypeError, match="multiple values for argument 'dims'"):
        x.permute(1, 0, dims=(1, 0))
