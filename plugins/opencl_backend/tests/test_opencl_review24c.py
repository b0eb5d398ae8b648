"""Review 24c: the opencl backend against the cpu backend (and PyTorch 2.13), second pass: the nn functional family
(convolutions, pooling, interpolation, padding, embedding, attention, normalisation, losses) and views (in-place ops
through views, ``out=`` into non-contiguous tensors, copies between devices).  The sweep found the two backends in
agreement almost everywhere; the divergences from PyTorch fixed here are in the shared code and are asserted on every
backend (the ``device`` fixture) and, where the backends must agree, on both at once."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch
import coretorch.nn.functional as F

_BE = coretorch._backend.backends().get("opencl")
_REASON = "coretorch-opencl is not registered" if _BE is None else _BE.unavailable_reason()
pytestmark = pytest.mark.skipif(_BE is None or not _BE.is_available(), reason=f"no OpenCL device: {_REASON}")


@pytest.fixture(params=["cpu", "opencl"])
def device(request):
    """Both devices: the behaviour asserted is PyTorch's on each (the core's ``device`` fixture is not visible here)."""
    return request.param


def _t(a, dt, device, grad=False):
    t = coretorch.tensor(np.asarray(a), dtype=dt, device=device)
    return t.requires_grad_() if grad else t


_CONVS = [(F.conv1d, 1, {}), (F.conv2d, 2, dict(padding=1, groups=2)), (F.conv3d, 3, dict(stride=(1, 2, 1))),
          (F.conv_transpose1d, 1, dict(stride=2)), (F.conv_transpose2d, 2, dict(stride=2, padding=1)),
          (F.conv_transpose3d, 3, {})]


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("fn,nsp,kw", _CONVS, ids=[f.__name__ for f, _, _ in _CONVS])
def test_half_convolution_rounds_once_bias_included(device, fn, nsp, kw, dt):
    """PyTorch's float16/bfloat16 convolutions accumulate in float and round once, the bias added before the
    rounding; their input/weight/bias gradients are rounded once too.  Before: coretorch rounded the kernel's result
    and then added the bias in the half dtype (1 ulp off), and conv3d/conv_transpose3d summed their depth taps in the
    half dtype (a bfloat16 conv3d several ulps off, its input gradient too), on both backends."""
    dt = getattr(coretorch, dt)
    rng = np.random.default_rng(3)
    transposed = fn.__name__.startswith("conv_transpose")
    xs = rng.standard_normal((2, 4) + (5,) * nsp) * 3
    ws = rng.standard_normal((4, 2 if (transposed or "groups" in kw) else 4) + (2,) * nsp)
    bs = rng.standard_normal(4 if not transposed else 2) * 10
    # the reference: the same half inputs, every step in float64, each result rounded to the half dtype once
    ref = [_t(a, dt, "cpu").double().requires_grad_() for a in (xs, ws, bs)]
    y64 = fn(*ref, **kw)
    gs = coretorch.tensor(rng.standard_normal(tuple(y64.shape)), dtype=dt)
    y64.backward(gs.double())
    args = [_t(a, dt, device, grad=True) for a in (xs, ws, bs)]
    y = fn(*args, **kw)
    y.backward(gs.to(device))
    assert y.dtype == dt and y.is_contiguous()
    for got, want in [(y, y64)] + [(a.grad, r.grad) for a, r in zip(args, ref)]:
        assert got.dtype == dt
        np.testing.assert_array_equal(got.detach().cpu().double().numpy(), want.detach().to(dt).double().numpy())


_OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


def test_inplace_write_into_a_self_overlapping_as_strided_view_raises(device):
    """PyTorch refuses an in-place op whose written-to tensor has a stride 0 over more than one element
    (``x.as_strided((3, 6), (0, 1)).mul_(2)``: RuntimeError "unsupported operation: more than one element of the
    written-to tensor refers to a single memory location"), as it does for an expanded tensor; fill_/zero_ and a write
    into one row of it are allowed.  Before: the opencl backend raised, the cpu backend wrote each location three
    times (mul_ doubled the row once, exp_/uniform_/copy_/clamp_ wrote it silently)."""
    for op in (lambda v: v.mul_(2), lambda v: v.exp_(), lambda v: v.clamp_(max=3), lambda v: v.uniform_(),
               lambda v: v.copy_(coretorch.ones(3, 6)), lambda v: v.__setitem__(Ellipsis, 5.0),
               lambda v: v.add_(v[0])):
        x = coretorch.arange(18.0, device=device).reshape(3, 6)
        with pytest.raises(RuntimeError, match=_OVERLAP):
            op(x.as_strided((3, 6), (0, 1)))
        np.testing.assert_array_equal(x.cpu().numpy(), np.arange(18.0).reshape(3, 6))   # nothing written
    x = coretorch.arange(18.0, device=device).reshape(3, 6)
    x.as_strided((3, 6), (0, 1)).fill_(1)
    x.as_strided((3, 6), (0, 1))[1].add_(1)          # one row of it: no overlap
    x.as_strided((2, 2), (6, 1), 6).zero_()          # no stride 0: an ordinary view
    want = np.arange(18.0).reshape(3, 6)
    want[0] = 2
    want[1:, :2] = 0
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    assert x.as_strided((3, 6), (0, 1)).sum().item() == 36.0   # reading it is fine
