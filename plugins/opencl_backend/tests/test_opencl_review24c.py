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


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
def test_uint8_interpolate_result_is_row_major(device, mode, antialias):
    """PyTorch's uint8 bilinear/bicubic interpolation returns a row-major tensor, as its float one does.  Before:
    coretorch's uint8 path (two fixed-point passes) left height and width transposed in memory (strides
    (126, 42, 1, 6) for a (1, 3, 6, 7) result), so ``.view(-1, 7)`` and the like raised where PyTorch's work."""
    x = coretorch.arange(60, dtype=coretorch.uint8, device=device).reshape(1, 3, 4, 5)
    for sf in (1.5, 0.5):
        y = F.interpolate(x, scale_factor=sf, mode=mode, antialias=antialias)
        assert y.is_contiguous() and y.dtype == coretorch.uint8
        assert y.view(-1, y.shape[-1]).shape[0] == 3 * y.shape[2]


@pytest.mark.parametrize("training", [False, True])
def test_batch_and_instance_norm_refuse_momentum_none(device, training):
    """PyTorch's F.batch_norm / F.instance_norm take a float momentum (the modules turn momentum=None into a float
    factor): None raises TypeError "batch_norm(): argument 'momentum' (position 7) must be float, not NoneType".
    Before: batch_norm in eval mode ignored it, in training mode raised a bare "unsupported operand" TypeError;
    instance_norm without running statistics ran."""
    x = coretorch.randn(4, 3, 5, device=device)
    rm, rv = coretorch.zeros(3, device=device), coretorch.ones(3, device=device)
    with pytest.raises(TypeError, match=r"batch_norm\(\): argument 'momentum' \(position 7\) must be float"):
        F.batch_norm(x, rm, rv, training=training, momentum=None)
    for stats in ((rm, rv), (None, None)):
        with pytest.raises(TypeError, match=r"instance_norm\(\): argument 'momentum' \(position 7\) must be float"):
            F.instance_norm(x, *stats, use_input_stats=training or stats[0] is None, momentum=None)
    # the modules' momentum=None (a cumulative average) still works
    m = coretorch.nn.BatchNorm1d(3, momentum=None).to(device)
    m(x)
    m(x * 3)
    want = (x.mean((0, 2)) + (x * 3).mean((0, 2))) / 2          # the average of the two batches' means
    np.testing.assert_allclose(m.running_mean.cpu().numpy(), want.cpu().numpy(), rtol=1e-5, atol=1e-6)


def _cl(shape):
    return tuple(coretorch.empty(shape).contiguous(memory_format=coretorch.channels_last).stride())


def test_channels_last_input_gives_channels_last_conv_pool_and_upsample(device):
    """PyTorch's CPU kernels of conv2d/conv_transpose2d (input or weight channels-last), max/avg/adaptive pooling
    and interpolate write their 4-D result in the input's suggested memory format: a channels-last input (a
    ``.contiguous(memory_format=torch.channels_last)`` tensor, or an NHWC tensor permuted to NCHW) gives a
    channels-last result.  Before: every one of them returned a row-major result on both backends (strides
    (36, 12, 4, 1) where PyTorch's are (36, 1, 12, 3)).  Values and gradients are unchanged; a row-major input keeps
    a row-major result, and max_pool1d/conv1d of a transposed 3-D input stay row-major (as PyTorch's)."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((2, 4, 5, 6))
    for x in (_t(base, coretorch.float32, device).contiguous(memory_format=coretorch.channels_last),
              _t(base.transpose(0, 2, 3, 1), coretorch.float32, device).permute(0, 3, 1, 2)):
        xr = _t(base, coretorch.float32, device)
        w = _t(rng.standard_normal((3, 4, 3, 3)), coretorch.float32, device)
        wt = _t(rng.standard_normal((4, 2, 3, 3)), coretorch.float32, device)
        cases = [lambda t: F.conv2d(t, w), lambda t: F.conv_transpose2d(t, wt), lambda t: F.max_pool2d(t, 2),
                 lambda t: F.max_pool2d(t, 2, return_indices=True)[1], lambda t: F.avg_pool2d(t, 2),
                 lambda t: F.adaptive_avg_pool2d(t, 3), lambda t: F.adaptive_max_pool2d(t, 2),
                 lambda t: F.interpolate(t, scale_factor=2), lambda t: F.interpolate(t, scale_factor=2,
                                                                                     mode="bilinear")]
        for fn in cases:
            got, want = fn(x), fn(xr)
            assert want.is_contiguous()
            assert got.stride() == _cl(tuple(got.shape)), (got.stride(), got.shape)
            np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), rtol=1e-5, atol=1e-5)
    # a channels-last weight alone makes the convolution's result channels-last too
    xr = _t(base, coretorch.float32, device)
    assert F.conv2d(xr, w.contiguous(memory_format=coretorch.channels_last)).stride() == (36, 1, 12, 3)
    # gradients flow through the layout change; the 1-d forms of a transposed input stay row-major
    xg = _t(base, coretorch.float32, device).contiguous(memory_format=coretorch.channels_last).requires_grad_()
    y = F.conv2d(xg, w)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    y.sum().backward()
    np.testing.assert_allclose(xg.grad.cpu().numpy(),
                               coretorch.autograd.grad(F.conv2d(xr.requires_grad_(), w).sum(), xr)[0].cpu().numpy(),
                               rtol=1e-5, atol=1e-5)
    x1 = _t(rng.standard_normal((2, 6, 4)), coretorch.float32, device).transpose(1, 2)
    assert F.max_pool1d(x1, 2).is_contiguous() and F.conv1d(x1, w[:, :, 0, :2]).is_contiguous()


def test_convolution_bias_of_another_dtype(device):
    """PyTorch's conv1d/2d/3d refuse a bias whose dtype is not the input's: RuntimeError "Input type (float) and
    bias type (double) should be the same" (C++ type names: c10::BFloat16, c10::Half); its transposed convolutions
    cast the bias to the input's dtype (a float32 result).  Before: coretorch added the float64 bias by type
    promotion, silently returning a float64 result from a float32 convolution (and a float32 one from bfloat16)."""
    f32, f64, bf16 = coretorch.float32, coretorch.float64, coretorch.bfloat16
    x1, w1 = coretorch.ones(1, 1, 5, device=device), coretorch.ones(1, 1, 2, device=device)
    cases = [(F.conv1d, (x1, w1)), (F.conv2d, (x1[..., None], w1[..., None])),
             (F.conv3d, (x1[..., None, None], w1[..., None, None]))]
    for fn, (x, w) in cases:
        for xdt, bdt, names in ((f32, f64, ("float", "double")), (bf16, f32, ("c10::BFloat16", "float")),
                                (f32, bf16, ("float", "c10::BFloat16"))):
            with pytest.raises(RuntimeError, match=rf"Input type \({names[0]}\) and bias type \({names[1]}\) "
                                                   "should be the same"):
                fn(x.to(xdt), w.to(xdt), coretorch.ones(1, dtype=bdt, device=device))
        assert fn(x, w, coretorch.ones(1, device=device)).dtype == f32
    for fn, (x, w) in zip((F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d), (c[1] for c in cases)):
        y = fn(x, w, coretorch.full((1,), 0.5, dtype=f64, device=device))
        assert y.dtype == f32
        np.testing.assert_array_equal(y.cpu().numpy(), fn(x, w).cpu().numpy() + 0.5)


@pytest.mark.parametrize("dt", ["int32", "uint8", "float32"])
def test_margin_losses_take_int64_targets_only(device, dt):
    """PyTorch's multi_margin_loss and multilabel_margin_loss take int64 class indices: another dtype raises
    RuntimeError "expected scalar type Long but found Int".  Before: an int32 target was accepted, a uint8/float one
    raised an error naming gather()/scatter_add()."""
    x = coretorch.randn(3, 4, device=device)
    name = {"int32": "Int", "uint8": "Byte", "float32": "Float"}[dt]
    with pytest.raises(RuntimeError, match=f"expected scalar type Long but found {name}"):
        F.multi_margin_loss(x, coretorch.tensor([3, 0, 1], device=device).to(getattr(coretorch, dt)))
    with pytest.raises(RuntimeError, match=f"expected scalar type Long but found {name}"):
        F.multilabel_margin_loss(x, coretorch.tensor([[3, 0, -1, 1]] * 3, device=device).to(getattr(coretorch, dt)))
    assert F.multi_margin_loss(x, coretorch.tensor([3, 0, 1], device=device)).dtype == coretorch.float32


def test_dtype_cast_of_an_expanded_tensor_is_laid_out_as_pytorch(device):
    """PyTorch's ``.to(dtype)`` of an expanded tensor gives a fresh tensor whose zero-stride dims take no part in the
    layout: ``arange(6).expand(3, 6).double()`` has strides (6, 1), an expanded transposed (3, 5, 4) one (20, 1, 5).
    Before: the cpu backend (numpy's order 'K') made the expanded dim the fastest, (1, 3) and (1, 3, 15); the
    opencl backend already agreed with PyTorch."""
    x = coretorch.arange(6.0, device=device).expand(3, 6)
    for dt in (coretorch.float64, coretorch.int32):
        y = x.to(dt)
        assert y.stride() == (6, 1) and y.tolist() == x.tolist()
    a = coretorch.arange(20.0, device=device).reshape(4, 5).t().expand(3, 5, 4)
    assert a.to(coretorch.float64).stride() == (20, 1, 5) and a.double().tolist() == a.tolist()
    c = coretorch.arange(5.0, device=device)[:, None, None].expand(5, 3, 4).permute(1, 0, 2)
    assert c.to(coretorch.float64).stride() == (20, 4, 1) and c.double().tolist() == c.tolist()
    s = coretorch.arange(20.0, device=device).reshape(4, 5)[:, ::2]   # no zero stride: unchanged
    assert s.double().stride() == (3, 1) and s.t().double().stride() == (1, 3)


def test_convolution_of_an_empty_batch_is_row_major(device):
    """PyTorch's conv2d of an empty batch returns a row-major (0, O, OH, OW) tensor: strides (144, 9, 3, 1) for
    (0, 16, 3, 3).  Before: the cpu backend returned the strides of a transposed view, (9, 9, 3, 1) (numpy calls any
    empty array contiguous, so the copy meant to make it row-major was skipped); opencl already agreed."""
    y = F.conv2d(coretorch.zeros(0, 8, 5, 5, device=device), coretorch.zeros(16, 8, 3, 3, device=device))
    assert tuple(y.shape) == (0, 16, 3, 3) and y.stride() == (144, 9, 3, 1)
    assert F.conv1d(coretorch.zeros(0, 8, 5, device=device), coretorch.zeros(16, 8, 3, device=device)).stride() == \
        (48, 3, 1)
