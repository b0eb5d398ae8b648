"""Review 24d (eager): nn layers and functions the earlier reviews passed over — EmbeddingBag, Bilinear, the pixel
and channel shuffles, Fold/Unfold, the distances, the margin / embedding / NLL losses, KLDivLoss, CTCLoss,
AdaptiveLogSoftmaxWithLoss, MultiheadAttention, the Transformer decoder and the weight parametrizations — each over
its argument matrix, side by side with PyTorch 2.13 (whose behaviour is the spec)."""
import math

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
