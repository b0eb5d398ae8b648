"""Issue 15 leftovers, pinned against PyTorch 2.13 on every device: the pow exponent gradient logs the base in the
result dtype, and copies whose source shares memory with the destination raise as PyTorch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import coretorch as torch

_OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single memory location"


# ---- pow: d/dy x ** y = x ** y * log(x), the base promoted to the result dtype before the log ----
@pytest.mark.parametrize("bdt, edt, rdt", [(torch.int64, torch.float32, torch.float32),
                                           (torch.float16, torch.float32, torch.float32),
                                           (torch.float32, torch.float64, torch.float64),
                                           (torch.int64, torch.float16, torch.float16)])
def test_pow_exponent_grad_logs_base_in_result_dtype(device, bdt, edt, rdt):
    base = 3000 if bdt is torch.float16 else 3  # 3000 in float16 is exact; its log in float16 is not
    y = torch.tensor([0.5], dtype=edt, device=device, requires_grad=True)
    r = torch.tensor([base], dtype=bdt, device=device) ** y
    assert r.dtype is rdt
    r.backward()
    # r log(base), every step in the result dtype, as PyTorch; r is the forward's own result: numpy's float32
    # power on arrays is 1 ulp off the correctly rounded sqrt(3) on AVX-512 machines (its SIMD loop), which is
    # the forward's business, not this gradient's
    want = np.asarray(np.asarray(r.tolist()[0], rdt.np) * np.log(np.asarray(base, rdt.np)), rdt.np)
    assert y.grad.dtype is edt
    assert y.grad.tolist()[0] == float(want)


def test_pow_0d_exponent_grad_in_result_dtype(device):
    y = torch.tensor(0.5, dtype=torch.float64, device=device, requires_grad=True)
    r = torch.tensor([3.0, 5.0], device=device) ** y  # a 0-d exponent: the result stays float32
    assert r.dtype is torch.float32
    r.sum().backward()
    f = np.float32
    want = sum(float(f(v) ** f(0.5) * np.log(f(v))) for v in (3.0, 5.0))
    assert math.isclose(y.grad.item(), want, rel_tol=1e-6)


# ---- copies between overlapping memory (PyTorch's MemoryOverlap rules) ----
def _x(device):
    return torch.arange(6.0, device=device)


@pytest.mark.parametrize("write", [
    lambda x: x.__setitem__(slice(1, None), x[:-1]),
    lambda x: x.__setitem__(slice(None, -1), x[1:]),
    lambda x: x[1:].copy_(x[:-1]),
    lambda x: x.view(2, 3).copy_(x.view(3, 2).t()),  # same memory, other strides
    lambda x: x.__setitem__([1, 2], x[:2]),  # index_put_: any overlap
    lambda x: x.__setitem__([0, 1, 2, 3, 4, 5], x),
    lambda x: x.__setitem__(x > 2, x[:3]),
    lambda x: x.index_put_((torch.tensor([1, 2], device=x.device),), x[:2]),
    lambda x: x[:2].copy_(x[:1]),  # copy_ checks its source before broadcasting it
    lambda x: x[0:1].copy_(x[0]),
    lambda x: x[1:].__iadd__(x[:-1]),  # in-place binary ops as copy_
    lambda x: x[1:].sub_(x[:-1], alpha=2),
    lambda x: x[:2].mul_(x[0]),
], ids=["slice_fwd", "slice_bwd", "copy_", "transposed", "index_list", "index_full", "mask", "index_put_",
        "copy_bcast", "copy_0d", "iadd", "sub_", "mul_0d"])
def test_partly_overlapping_copy_raises(device, write):
    x = _x(device)
    with pytest.raises(RuntimeError, match=_OVERLAP):
        write(x)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # refused before writing


@pytest.mark.parametrize("write, want", [
    (lambda x: x.copy_(x), [0, 1, 2, 3, 4, 5]),  # identical: allowed
    (lambda x: x.__setitem__(Ellipsis, x), [0, 1, 2, 3, 4, 5]),
    (lambda x: x.__setitem__(slice(None, 3), x[3:]), [3, 4, 5, 3, 4, 5]),  # disjoint
    (lambda x: x.__setitem__(slice(None, 3), x[3:][None]), [3, 4, 5, 3, 4, 5]),
    (lambda x: x[1:].copy_(x[0]), [0, 0, 0, 0, 0, 0]),  # a broadcast source: too hard to check, allowed
    (lambda x: x.__setitem__(slice(1, None), x[:-1].double()), [0, 0, 1, 2, 3, 4]),  # a copy
    (lambda x: x.__setitem__(slice(None, None, 2), x[1::2]), [1, 1, 3, 3, 5, 5]),  # strided: too hard
    (lambda x: x.__setitem__(x > 2, x[:1]), [0, 1, 2, 0, 0, 0]),  # masked_fill_ with a one-element value
    (lambda x: x.view(2, 3).__setitem__((slice(1, None), [0, 1]), x[:2]), [0, 1, 2, 0, 1, 5]),  # disjoint view
    (lambda x: x.__setitem__(slice(0, 2), x[:1]), [0, 0, 2, 3, 4, 5]),  # setitem broadcasts first: too hard
    (lambda x: x.__setitem__(slice(0, 1), x[0]), [0, 1, 2, 3, 4, 5]),  # a 0-d value is a fill
    (lambda x: x[1:].div_(x[1:]), [0, 1, 1, 1, 1, 1]),  # identical views
    (lambda x: x[:3].add_(x[3:]), [3, 5, 7, 3, 4, 5]),
], ids=["self", "ellipsis", "disjoint", "disjoint_1dim", "broadcast", "cast_copy", "strided", "masked_fill",
        "adv_view", "setitem_bcast", "setitem_0d", "div_same", "add_disjoint"])
def test_allowed_aliasing_copies(device, write, want):
    x = _x(device)
    write(x)
    assert x.tolist() == [float(v) for v in want]


# ---- binary losses with a cpu 0-d tensor: PyTorch's cpu-scalar rule holds only while it stays 0-d ----
@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_broadcasting_losses_with_cpu_0d(device, loss):
    fn = getattr(torch.nn.functional, loss)
    a0 = torch.tensor(0.25, device=device, requires_grad=True)
    r = fn(a0, torch.tensor(0.5))  # both 0-d: the cpu one is a scalar, as in PyTorch
    assert r.device == a0.device
    r.backward()
    assert a0.grad.device == a0.device and a0.grad.item() != 0.0
    a = torch.tensor([0.25, 1.0], device=device)
    with pytest.warns(UserWarning, match="target size"):
        if device == "cpu":
            assert fn(a, torch.tensor(0.5)).item() > 0.0
            return
        # PyTorch broadcasts the target first (broadcast_tensors): a 1-d cpu tensor is no scalar any more
        with pytest.raises(RuntimeError, match="same device"):
            fn(a, torch.tensor(0.5))


@pytest.mark.parametrize("loss", ["kl_div", "poisson_nll_loss"])
def test_elementwise_losses_take_cpu_0d(device, loss):
    fn = getattr(torch.nn.functional, loss)
    a = torch.tensor([0.25, 1.0], device=device)
    r = fn(a, torch.tensor(0.5), reduction="sum")
    want = fn(torch.tensor([0.25, 1.0]), torch.tensor([0.5, 0.5]), reduction="sum")
    assert r.device == a.device and math.isclose(r.item(), want.item(), rel_tol=1e-6)


# ---- nansum / nanmean backward: sum's gradient times the not-NaN mask (PyTorch's NansumBackward0) ----
def test_nanmean_all_nan_slice_gradient_is_nan(device):
    nan = math.nan
    x = torch.tensor([[nan, nan], [1.0, nan]], device=device, requires_grad=True)
    y = torch.nanmean(x, dim=1)
    y.sum().backward()
    g = x.grad.tolist()
    assert math.isnan(g[0][0]) and math.isnan(g[0][1])  # 1 / 0 count = inf, times the 0 mask
    assert g[1] == [1.0, 0.0]
    x = torch.tensor([nan, nan], device=device, requires_grad=True)
    torch.nanmean(x).backward()
    assert all(math.isnan(v) for v in x.grad.tolist())


def test_nansum_gradient(device):
    x = torch.tensor([math.nan, 1.0], device=device, requires_grad=True)
    y = torch.nansum(x)
    assert type(y.grad_fn).__name__ == "NansumBackward0"
    (y * math.inf).backward()
    g = x.grad.tolist()
    assert math.isnan(g[0]) and g[1] == math.inf
    h = torch.tensor([math.nan, 1.0], dtype=torch.float16, device=device, requires_grad=True)
    y = torch.nansum(h, dtype=torch.float32)
    assert y.dtype is torch.float32
    y.backward()
    assert h.grad.dtype is torch.float16 and h.grad.tolist() == [0.0, 1.0]
    x = torch.tensor([[0.5, 1.0], [2.0, 3.0]], dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.nansum(t * t, 1), (x,))
    assert torch.autograd.gradgradcheck(lambda t: torch.nansum(t * t, 1, keepdim=True), (x,))


# ---- margin_ranking_loss / cosine_embedding_loss check their dims as PyTorch (no silent broadcast) ----
def test_margin_ranking_loss_dims(device):
    F = torch.nn.functional
    a = torch.tensor([0.5, -1.0, 2.0], device=device)
    b = torch.tensor([1.0, 0.0, 1.0], device=device)
    t = torch.tensor([1.0, -1.0, 1.0], device=device)
    want = np.maximum(0.0, -np.array([1.0, -1.0, 1.0]) * (np.array([0.5, -1.0, 2.0]) - [1.0, 0.0, 1.0]) + 0.5)
    assert math.isclose(F.margin_ranking_loss(a, b, t, margin=0.5).item(), float(want.mean()), rel_tol=1e-6)
    with pytest.raises(RuntimeError, match="should have same dimension"):
        F.margin_ranking_loss(a, b, torch.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="should have same dimension"):
        F.margin_ranking_loss(a, b[None], t)


def test_cosine_embedding_loss_dims(device):
    F = torch.nn.functional
    x = torch.tensor([[1.0, 0.0], [1.0, 1.0]], device=device)
    y = torch.tensor([[1.0, 0.0], [1.0, -1.0]], device=device)
    r = F.cosine_embedding_loss(x, y, torch.tensor([1.0, -1.0], device=device), reduction="none")
    assert r.tolist() == [0.0, 0.0]  # cos 1 with target 1; cos 0 with target -1 and margin 0
    assert F.cosine_embedding_loss(x[0], y[0], torch.tensor(1.0, device=device)).item() == 0.0
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        F.cosine_embedding_loss(x, y, torch.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        F.cosine_embedding_loss(x[0], y[0], torch.tensor([1.0], device=device))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        F.cosine_embedding_loss(x, y, torch.ones(2, 1, device=device))
