"""Review 19c: nn.functional and nn modules beyond the common path (convolution and pooling options, normalisation,
losses, interpolation, padding, embedding, ...), eager behaviour.  PyTorch's behaviour is the spec; each test says
what PyTorch does and what coretorch did before the fix.  Expected values come from numpy or from facts PyTorch
documents."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


@pytest.mark.parametrize("op", ["max_pool1d", "max_pool2d"])
def test_max_pool_index_of_an_all_minus_inf_padded_window_is_its_first_input_tap(device, op):
    """A window whose input elements are all -inf: PyTorch's kernel starts from the window's first tap inside the
    input and only a greater (or NaN) value replaces it, so the index is that tap (max_unpool can use it).  On both
    backends a padded window returned the index of a padding tap (negative, or one row up: -5 for the top-left
    window of a 4x4 input with padding 1), an index outside the input."""
    x = torch.full((1, 1, 4, 4), float("-inf"), dtype=torch.float64, device=device)
    if op == "max_pool1d":
        out, idx = F.max_pool1d(x[0, 0], 3, 1, 1, return_indices=True)
        expected = np.tile([0, 0, 1, 2], (4, 1))
    else:
        out, idx = F.max_pool2d(x, 3, 1, 1, return_indices=True)
        rows = np.array([0, 0, 1, 2])
        expected = (rows[:, None] * 4 + rows[None, :])[None, None]
    np.testing.assert_array_equal(idx.cpu().numpy(), expected)
    assert np.isneginf(out.cpu().numpy()).all()
    # with dilation the first tap inside can be the second or third one
    y = torch.full((1, 1, 7), float("-inf"), dtype=torch.float64, device=device)
    y[0, 0, 5] = 1.0
    _, i2 = F.max_pool1d(y, 3, 1, 3, dilation=3, return_indices=True)
    # windows start at -3, -2, ..., 3; taps start + {0, 3, 6}; first tap >= 0 unless one holds the 1.0 at 5
    starts = np.arange(-3, 4)
    exp = []
    for st in starts:
        taps = [t for t in (st, st + 3, st + 6) if 0 <= t < 7]
        exp.append(5 if 5 in taps else taps[0])
    np.testing.assert_array_equal(i2.cpu().numpy()[0, 0], exp)


def test_max_pool2d_of_integer_inputs(device):
    """PyTorch max-pools integer tensors (int8 ... int64, uint8) with max_pool1d/max_pool2d and nn.MaxPool2d, in
    the input's dtype; max_pool3d already did here.  coretorch raised NotImplementedError ("max_pool2d" not
    implemented for 'Long').  Bool still raises, as in PyTorch."""
    a = (np.arange(2 * 3 * 5 * 7).reshape(2, 3, 5, 7) * 37 % 23 - 11)
    for dt, npdt in [(torch.int64, np.int64), (torch.int32, np.int32), (torch.uint8, np.uint8)]:
        av = a.astype(npdt)
        x = torch.tensor(av, device=device)
        out, idx = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
        assert out.dtype == dt and idx.dtype == torch.int64
        # reference: window max with -inf padding
        low = np.iinfo(npdt).min
        xp = np.pad(av, ((0, 0), (0, 0), (1, 2), (1, 2)), constant_values=low)
        ref = np.stack([np.stack([xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max((2, 3)) for j in range(4)], -1)
                        for i in range(3)], -2)
        np.testing.assert_array_equal(out.cpu().numpy(), ref)
        np.testing.assert_array_equal(np.take_along_axis(av.reshape(2, 3, -1), idx.cpu().numpy().reshape(2, 3, -1),
                                                         2).reshape(out.shape), ref)
        o1 = F.max_pool1d(x[0], 2)
        np.testing.assert_array_equal(o1.cpu().numpy(), av[0, :, :, :6].reshape(3, 5, 3, 2).max(-1))
        assert torch.nn.MaxPool2d(2)(x).dtype == dt
    with pytest.raises(NotImplementedError, match="max_pool2d"):
        F.max_pool2d(torch.ones(1, 4, 4, dtype=torch.bool, device=device), 2)


def test_avg_pool_of_int64_truncates_in_int64_and_other_integers_raise(device):
    """PyTorch's avg_pool1d/avg_pool2d (and nn.AvgPool2d, lp_pool through them) pool int64 as int64: the integer
    window sum divided with C's truncation (toward zero), count_include_pad/divisor_override applied as for floats;
    other integer and bool dtypes raise NotImplementedError '"avg_pool2d" not implemented for 'Int''.  coretorch
    returned float32 averages for every integer dtype on cpu (uint8 sums wrapped: 28.0 for a window of small
    negatives cast to uint8) and raised a RuntimeError about im2col on opencl."""
    a = (np.arange(2 * 3 * 5 * 7).reshape(2, 3, 5, 7) * 37 % 23 - 11).astype(np.int64)
    x = torch.tensor(a, device=device)
    out = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)
    assert out.dtype == torch.int64
    xp = np.pad(a, ((0, 0), (0, 0), (1, 2), (1, 2)))
    sums = np.stack([np.stack([xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum((2, 3)) for j in range(4)], -1)
                     for i in range(3)], -2)
    # count_include_pad: every window (clipped to the padded input) holds 3x3 taps
    np.testing.assert_array_equal(out.cpu().numpy(), np.trunc(sums / 9).astype(np.int64))
    # without the padding taps the divisor is the count of input taps
    cnt = np.pad(np.ones((5, 7)), ((1, 2), (1, 2)))
    n_in = np.array([[cnt[2 * i:2 * i + 3, 2 * j:2 * j + 3].sum() for j in range(4)] for i in range(3)])
    o3 = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)
    np.testing.assert_array_equal(o3.cpu().numpy(), np.trunc(sums / n_in).astype(np.int64))
    o2 = F.avg_pool2d(x, 2, divisor_override=3)
    s2 = a[:, :, :4, :6].reshape(2, 3, 2, 2, 3, 2).sum((3, 5))
    np.testing.assert_array_equal(o2.cpu().numpy(), np.trunc(s2 / 3).astype(np.int64))
    o1 = F.avg_pool1d(x[0], 2)
    assert o1.dtype == torch.int64
    np.testing.assert_array_equal(o1.cpu().numpy(), np.trunc(a[0, :, :, :6].reshape(3, 5, 3, 2).sum(-1) / 2))
    assert torch.nn.AvgPool2d(2)(x).dtype == torch.int64
    for dt in (torch.int32, torch.uint8, torch.bool):
        with pytest.raises(NotImplementedError, match="avg_pool2d"):
            F.avg_pool2d(x.to(dt), 2)


def test_rms_norm_checks_its_shapes_and_computes_half_precision_in_float32(device):
    """PyTorch's rms_norm raises RuntimeError when the input's trailing dims are not ``normalized_shape`` ("Given
    normalized_shape=[3], expected input with shape [*3], ...") or the weight's shape differs; float16/bfloat16 are
    computed in float32 with eps = float32's machine epsilon and returned in the input's dtype (also with a float32
    weight).  coretorch normalised over the wrong trailing dims without a word, used eps=2.2e-16 and float16
    arithmetic for float16 (x**2 of 1e-4 underflowed: 1.41 for PyTorch's 0.2838) and returned float32 for a
    float16 input with a float32 weight."""
    x = torch.randn(2, 3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[3\]"):
        F.rms_norm(x, (3,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.rms_norm(x, (4,), torch.ones(3, device=device))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        torch.nn.RMSNorm(3).to(device)(x)
    h = torch.tensor([[1e-4, -1e-4, 0.0, 0.0]], dtype=torch.float16, device=device)
    a = np.array([1e-4, -1e-4, 0.0, 0.0], dtype=np.float16).astype(np.float32)
    ref = (a / np.sqrt(np.mean(a * a) + np.finfo(np.float32).eps)).astype(np.float16)
    out = F.rms_norm(h, (4,))
    assert out.dtype == torch.float16
    np.testing.assert_allclose(out.cpu().numpy()[0].astype(np.float32), ref.astype(np.float32), rtol=1e-3)
    w = torch.full((4,), 2.0, device=device)
    out_w = F.rms_norm(h, (4,), w)
    assert out_w.dtype == torch.float16
    np.testing.assert_allclose(out_w.cpu().numpy()[0].astype(np.float32), 2 * ref.astype(np.float32), rtol=1e-3)


@pytest.mark.parametrize("op", ["layer_norm", "group_norm", "batch_norm", "instance_norm", "BatchNorm1d"])
def test_half_input_with_float32_parameters_keeps_the_inputs_dtype(device, op):
    """A float16 input through a float32 normalisation (layer/group/batch/instance norm with float32 weight, bias
    or running statistics, e.g. a float32 module fed half precision): PyTorch computes in float32 and returns
    float16.  coretorch promoted the result to float32."""
    a = np.linspace(-2, 3, 24).reshape(3, 4, 2).astype(np.float16)
    x = torch.tensor(a, device=device)
    w = torch.linspace(0.5, 2, 4, device=device)
    b = torch.linspace(-1, 1, 4, device=device)
    af = a.astype(np.float64)
    if op == "layer_norm":
        out = F.layer_norm(x, (2,), w[:2], b[:2])
        m, v = af.mean(-1, keepdims=True), af.var(-1, keepdims=True)
        ref = (af - m) / np.sqrt(v + 1e-5) * np.linspace(0.5, 2, 4)[:2] + np.linspace(-1, 1, 4)[:2]
    else:
        if op == "group_norm":
            out = F.group_norm(x, 2, w, b)
            g = af.reshape(3, 2, 4)
            ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(3, 4, 2)
        elif op == "instance_norm":
            out = F.instance_norm(x, weight=w, bias=b)
            ref = (af - af.mean(-1, keepdims=True)) / np.sqrt(af.var(-1, keepdims=True) + 1e-5)
        else:
            if op == "BatchNorm1d":
                out = torch.nn.BatchNorm1d(4).to(device)(x)
                w, b = torch.ones(4, device=device), torch.zeros(4, device=device)
            else:
                rm, rv = torch.zeros(4, device=device), torch.ones(4, device=device)
                out = F.batch_norm(x, rm, rv, w, b, training=True)
            ref = (af - af.mean((0, 2), keepdims=True)) / np.sqrt(af.var((0, 2), keepdims=True) + 1e-5)
        ref = ref * w.cpu().numpy().astype(np.float64)[:, None] + b.cpu().numpy().astype(np.float64)[:, None]
    assert out.dtype == torch.float16
    np.testing.assert_allclose(out.detach().cpu().numpy().astype(np.float64), ref, rtol=2e-3, atol=2e-3)


def test_instance_norm_of_one_spatial_element_and_local_response_norm_of_2d_input_raise(device):
    """PyTorch: instance_norm with input statistics over a single spatial element raises ValueError ("Expected
    more than 1 spatial element when training"), local_response_norm of a 2-D input raises ValueError ("Expected
    3D or higher dimensionality input").  coretorch returned zeros for the first and a result for the second."""
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(torch.randn(2, 3, 1, device=device))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        torch.nn.InstanceNorm2d(3)(torch.randn(2, 3, 1, 1, device=device))
    rm, rv = torch.zeros(3, device=device), torch.ones(3, device=device)
    F.instance_norm(torch.randn(2, 3, 1, device=device), rm, rv, use_input_stats=False)  # running stats: fine
    with pytest.raises(ValueError, match="3D or higher"):
        F.local_response_norm(torch.randn(2, 6, device=device), 3)


def test_binary_cross_entropy_checks_the_targets_range(device):
    """PyTorch's binary_cross_entropy raises RuntimeError "all elements of target should be between 0 and 1" (as it
    does for the input); coretorch checked only the input and returned a loss for a target of 1.5 or NaN."""
    x = torch.full((2, 3), 0.5, device=device)
    for bad in (1.5, -0.1, float("nan")):
        t = torch.full((2, 3), 0.5, device=device)
        t[1, 2] = bad
        with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
            F.binary_cross_entropy(x, t)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(torch.full((2, 3), 1.5, device=device), torch.full((2, 3), 2.0, device=device))
    F.binary_cross_entropy(x, torch.ones(2, 3, device=device))  # the bounds themselves are fine


def test_multi_margin_loss_of_one_sample_takes_a_one_element_target(device):
    """PyTorch's multi_margin_loss takes a 1-D input (one sample) with a 0-d or a one-element 1-D target; the
    unreduced loss has the target's shape (() or (1,)).  coretorch raised "inconsistent target size, expected 1 but
    got [1]" for the (1,) target."""
    a = np.array([0.1, -0.4, 0.3, 0.9, -0.2])
    x = torch.tensor(a, device=device)
    ref = np.maximum(0, 1 - a[2] + np.delete(a, 2)).sum() / 5
    for t, shape in ((torch.tensor(2, device=device), ()), (torch.tensor([2], device=device), (1,))):
        out = F.multi_margin_loss(x, t, reduction="none")
        assert tuple(out.shape) == shape
        np.testing.assert_allclose(out.cpu().numpy(), np.full(shape, ref), rtol=1e-12)
        assert tuple(F.multi_margin_loss(x, t).shape) == ()
    with pytest.raises(RuntimeError, match=r"target tensor should be 1-D .*Expected target size \[1\], but got \[2\]"):
        F.multi_margin_loss(x, torch.tensor([2, 1], device=device))


def test_ctc_loss_gradient_of_an_infinite_loss_is_nan_without_zero_infinity(device):
    """PyTorch: without zero_infinity an impossible alignment's loss is inf and its gradient NaN at the sample's
    steps t < input_length (the other samples' gradients stay finite); with zero_infinity both are 0.  coretorch
    gave the inf loss a zero gradient, so training went on where PyTorch's reports NaN."""
    logits = torch.randn(3, 2, 4, dtype=torch.float64, device=device, requires_grad=True)
    lp = torch.log_softmax(logits, 2)
    targets = torch.tensor([[1, 1, 1], [3, 1, 0]], device=device)  # 1,1,1 needs 5 steps: impossible in 3
    il, tl = torch.tensor([3, 2]), torch.tensor([3, 2])
    loss = F.ctc_loss(lp, targets, il, tl, reduction="none")
    assert np.isinf(loss[0].item()) and np.isfinite(loss[1].item())
    (g,) = torch.autograd.grad(F.ctc_loss(torch.log_softmax(logits, 2), targets, il, tl, reduction="sum"), logits)
    g = g.cpu().numpy()
    assert np.isnan(g[:, 0]).all()
    assert np.isfinite(g[:2, 1]).all() and (g[2, 1] == 0).all()   # the second sample: 2 steps
    (g0,) = torch.autograd.grad(F.ctc_loss(torch.log_softmax(logits, 2), targets, il, tl, reduction="sum",
                                           zero_infinity=True), logits)
    assert (g0.cpu().numpy()[:, 0] == 0).all()
    np.testing.assert_allclose(g0.cpu().numpy()[:, 1], g[:, 1], rtol=1e-12)


def test_interpolate_error_types_for_wrong_dimensionalities(device):
    """PyTorch's interpolate raises ValueError "Input and output must have the same number of spatial
    dimensions ..." for a size of the wrong length, and NotImplementedError "Input Error: Only 3D, 4D and 5D input
    Tensors supported" for a 2-D input.  coretorch raised RuntimeError (from the size's tuple conversion) for the
    first and ValueError for the second."""
    x = torch.randn(1, 2, 3, 3, device=device)
    with pytest.raises(ValueError, match="same number of spatial dimensions"):
        F.interpolate(x, size=(4, 4, 4))
    with pytest.raises(NotImplementedError, match="Only 3D, 4D and 5D"):
        F.interpolate(torch.randn(2, 3, device=device), scale_factor=2)


def test_cosine_similarity_gradient_through_a_clamped_norm_and_integer_inputs(device):
    """PyTorch's cosine_similarity clamps the norms to eps in place under no_grad, so where ||x1|| < eps the value
    uses eps but the gradient still differentiates the norm: d/dx1 = u/eps - (x1.u) x1 / (eps^2 ||x1||), u =
    x2/||x2||.  coretorch's clamp cut that second term (a gradient off by 8.6 in a probe); integer inputs convert to
    the common floating dtype (two integer inputs raise "expected common dtype to be floating point"), where
    coretorch raised vector_norm's error."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1e-5, 1e-5, (3, 4))
    b = rng.uniform(-1, 1, (3, 4))
    eps = 1e-3
    x1 = torch.tensor(a, device=device, requires_grad=True)
    out = F.cosine_similarity(x1, torch.tensor(b, device=device), eps=eps)
    u = b / np.linalg.norm(b, axis=1, keepdims=True)
    np.testing.assert_allclose(out.detach().cpu().numpy(), (a * u).sum(1) / eps, rtol=1e-12)
    (g,) = torch.autograd.grad(out.sum(), x1)
    na = np.linalg.norm(a, axis=1, keepdims=True)
    ref = u / eps - (a * u).sum(1, keepdims=True) * a / (eps ** 2 * na)
    np.testing.assert_allclose(g.cpu().numpy(), ref, rtol=1e-10)
    # above eps the ordinary gradient
    x2 = torch.tensor(b, device=device, requires_grad=True)
    (g2,) = torch.autograd.grad(F.cosine_similarity(x2, torch.tensor(b[::-1].copy(), device=device)).sum(), x2)
    v = b[::-1] / np.linalg.norm(b[::-1], axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    np.testing.assert_allclose(g2.cpu().numpy(), v / nb - (b * v).sum(1, keepdims=True) * b / nb ** 3, rtol=1e-10,
                               atol=1e-14)
    r = F.cosine_similarity(torch.tensor([[0, 1, 2]], device=device), torch.ones(1, 3, device=device))
    assert r.dtype == torch.float32
    np.testing.assert_allclose(r.cpu().numpy(), [3 / np.sqrt(5) / np.sqrt(3)], rtol=1e-6)
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point"):
        F.cosine_similarity(torch.tensor([[0, 1, 2]], device=device), torch.ones(1, 3, dtype=torch.int64,
                                                                                   device=device))


@pytest.mark.parametrize("nd", [2, 3])
def test_grid_sample_nearest_gives_the_grid_a_zero_gradient(device, nd):
    """PyTorch's nearest grid_sample backward returns a zero gradient for the grid (grid.grad is zeros after a
    backward); coretorch's grid was not in the graph: grid.grad stayed None and autograd.grad raised for it."""
    x = torch.randn((1, 2) + (3,) * nd, dtype=torch.float64, device=device, requires_grad=True)
    grid = (torch.rand((1,) + (2,) * nd + (nd,), dtype=torch.float64, device=device) * 2 - 1).requires_grad_()
    out = F.grid_sample(x, grid, mode="nearest", align_corners=False)
    out.sum().backward()
    assert grid.grad is not None and (grid.grad.cpu().numpy() == 0).all()
    assert x.grad is not None and x.grad.sum().item() == pytest.approx(out.numel())


def test_window_and_size_arguments_raise_pytorchs_errors(device):
    """PyTorch raises RuntimeError for unfold/fold with a kernel, stride or dilation below 1 or a negative padding
    ("kernel size should be greater than zero, ..."), and for a negative adaptive pooling output size.  coretorch
    returned an empty tensor from unfold(kernel_size=0), raised ZeroDivisionError from fold, and numpy's ValueError
    ("negative dimensions are not allowed", "zero-size array to reduction") from the adaptive pools."""
    x = torch.ones(1, 1, 4, 4, device=device)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        F.unfold(x, 0)
    with pytest.raises(RuntimeError, match="stride should be greater than zero"):
        F.unfold(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.unfold(x, 2, dilation=(1, 0))
    with pytest.raises(RuntimeError, match="padding should be non-negative"):
        F.unfold(x, 2, padding=-1)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        F.fold(torch.ones(1, 4, 9, device=device), (4, 4), (2, 0))
    for fn, size in ((F.adaptive_avg_pool1d, -1), (F.adaptive_max_pool1d, -1), (F.adaptive_avg_pool2d, (2, -1)),
                     (F.adaptive_max_pool2d, (2, -1)), (F.adaptive_avg_pool3d, (2, -1, 2)),
                     (F.adaptive_max_pool3d, (2, -1, 2))):
        nd = 1 if isinstance(size, int) else len(size)
        with pytest.raises(RuntimeError, match="output_size must be greater than or equal to 0"):
            fn(torch.ones((1, 1) + (4,) * nd, device=device), size)


def test_module_constructor_checks_and_negative_label_smoothing():
    """PyTorch: nn.Hardtanh(min_val >= max_val) fails its assert (AssertionError "max_val (-1.0) must be greater
    than min_val (1.0)"), nn.Bilinear(in1_features=0) raises ValueError "in1_features must be > 0", and
    cross_entropy checks only a positive label_smoothing's bound (a negative one means no smoothing).  coretorch
    raised ValueError, ZeroDivisionError, and RuntimeError "label_smoothing must be between 0.0 and 1.0"."""
    with pytest.raises(AssertionError, match=r"max_val \(-1.0\) must be greater than min_val \(1.0\)"):
        torch.nn.Hardtanh(1.0, -1.0)
    with pytest.raises(ValueError, match="in1_features must be > 0"):
        torch.nn.Bilinear(0, 3, 4)
    x = torch.tensor([[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]], dtype=torch.float64)
    t = torch.tensor([2, 0])
    assert F.cross_entropy(x, t, label_smoothing=-0.1).item() == F.cross_entropy(x, t).item()
    p = torch.softmax(x, 1)
    assert F.cross_entropy(x, p, label_smoothing=-0.1).item() == F.cross_entropy(x, p).item()
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, t, label_smoothing=1.5)


def test_normalisation_mixed_dtypes_follow_pytorchs_rule(device):
    """PyTorch's normalisations take parameters (and batch_norm's running statistics) of the input's dtype, or
    float32 ones with a float16/bfloat16 input; any other mix raises RuntimeError "mixed dtype (CPU): expect
    parameter to have scalar type of Float" (a float64 parameter) or "... all inputs must share same datatype." (a
    float64 input with float32 parameters).  instance_norm lets its running statistics differ and returns the
    input's dtype.  coretorch promoted every mix to float64."""
    x = torch.randn(4, 3, 5, device=device)
    w64 = torch.ones(3, dtype=torch.float64, device=device)
    with pytest.raises(RuntimeError, match="expect parameter to have scalar type of Float"):
        F.batch_norm(x, None, None, w64, training=True)
    with pytest.raises(RuntimeError, match="expect parameter to have scalar type of Float"):
        F.layer_norm(x, (5,), torch.ones(5, dtype=torch.float64, device=device))
    with pytest.raises(RuntimeError, match="expect parameter to have scalar type of Float"):
        F.group_norm(x, 3, w64)
    with pytest.raises(RuntimeError, match="all inputs must share same datatype"):
        F.batch_norm(x.double(), torch.zeros(3, device=device), torch.ones(3, device=device))
    with pytest.raises(RuntimeError, match="expect parameter to have scalar type of Float"):
        torch.nn.BatchNorm1d(3).double().to(device)(x)
    rm, rv = torch.zeros(3, dtype=torch.float64, device=device), torch.ones(3, dtype=torch.float64, device=device)
    out = F.instance_norm(x, rm, rv, use_input_stats=False)
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.cpu().numpy(), x.cpu().numpy(), rtol=1e-5, atol=1e-5)
    assert F.instance_norm(x, rm, rv).dtype == torch.float32 and rm.dtype == torch.float64


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_gradient_with_output_padding_at_least_the_stride(device, nd):
    """PyTorch allows output_padding >= stride when it is below the dilation (stride 1, dilation 3, output_padding
    2) and back-propagates into the input's shape.  coretorch's forward was right but the backward raised
    "ConvolutionBackward0 returned an invalid gradient ... got [1, 2, 6, 6] but expected ... [1, 2, 4, 4]": the
    convolution of the output gradient reaches past the input's size and was not cut back.  The gradients obey the
    adjoint identities of the (bilinear) op: <y, g> = <x, dL/dx> = <w, dL/dw>."""
    fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]
    x = torch.randn((1, 2) + (4,) * nd, dtype=torch.float64, device=device, requires_grad=True)
    w = torch.randn((2, 3) + (2,) * nd, dtype=torch.float64, device=device, requires_grad=True)
    y = fn(x, w, stride=1, dilation=3, output_padding=2)
    assert tuple(y.shape) == (1, 3) + (9,) * nd          # (4 - 1) + 3 * (2 - 1) + 2 + 1
    g = torch.randn(y.shape, dtype=torch.float64, device=device)
    gx, gw = torch.autograd.grad((y * g).sum(), (x, w))
    assert gx.shape == x.shape and gw.shape == w.shape
    inner = (y * g).sum().item()
    assert (x * gx).sum().item() == pytest.approx(inner, rel=1e-10)
    assert (w * gw).sum().item() == pytest.approx(inner, rel=1e-10)


def test_embedding_bag_max_gives_a_tied_maximum_gradient_to_the_first_element_of_the_bag(device):
    """PyTorch's embedding_bag(mode='max') keeps the index of the first element of the bag reaching each
    dimension's maximum and back-propagates only to it.  With two different rows holding equal values (rows 2 and 4
    here, e.g. two zero-initialised rows) coretorch split the gradient evenly between them (scatter_reduce amax's
    rule): row 4 got 1/3 and row 2 2/3 for the bag [4, 2, 2] where PyTorch gives row 4 all of it."""
    w0 = np.arange(18, dtype=np.float64).reshape(6, 3) / 10
    w0[2] = w0[4]
    w = torch.tensor(w0, device=device, requires_grad=True)
    bags = torch.tensor([[2, 4, 1], [4, 2, 2], [0, 1, 3]], device=device)
    out = F.embedding_bag(bags, w, mode="max")
    np.testing.assert_allclose(out.detach().cpu().numpy(), w0[bags.cpu().numpy()].max(1))
    (g,) = torch.autograd.grad(out.sum(), w)
    expected = np.zeros((6, 3))
    expected[2] += 1       # bag [2, 4, 1]: 2 comes first among the tied maxima
    expected[4] += 1       # bag [4, 2, 2]: 4 comes first
    expected[3] += 1       # bag [0, 1, 3]
    np.testing.assert_array_equal(g.cpu().numpy(), expected)
    # offsets form, with an empty bag (zeros, no gradient)
    out2 = F.embedding_bag(torch.tensor([4, 2, 2, 5], device=device), w, torch.tensor([0, 3, 3], device=device),
                           mode="max")
    (g2,) = torch.autograd.grad(out2.sum(), w)
    np.testing.assert_allclose(out2.detach().cpu().numpy(), [w0[4], np.zeros(3), w0[5]])
    exp2 = np.zeros((6, 3))
    exp2[4] = exp2[5] = 1
    np.testing.assert_array_equal(g2.cpu().numpy(), exp2)


def test_hinge_embedding_loss_of_targets_other_than_plus_minus_one(device):
    """PyTorch's hinge_embedding_loss is where(target != 1, max(0, margin - x), 0) + where(target != -1, x, 0), so
    a target of 0 (labels given as {0, 1}) or 2 takes both terms.  coretorch computed 0 for such targets."""
    x = torch.tensor([0.3, -0.2, 1.5, 0.4], dtype=torch.float64, device=device)
    t = torch.tensor([1.0, -1.0, 0.0, 2.0], dtype=torch.float64, device=device)
    out = F.hinge_embedding_loss(x, t, margin=1.0, reduction="none")
    np.testing.assert_allclose(out.cpu().numpy(), [0.3, 1.2, 0.0 + 1.5, 0.6 + 0.4], rtol=1e-12)


def test_huber_and_soft_margin_losses_keep_the_inputs_dtype(device):
    """PyTorch's huber_loss and soft_margin_loss write their element losses into a tensor like the input: a float32
    input with a float64 target gives float32, a float16 input with a float32 target float16.  coretorch promoted
    them (float64, float32)."""
    for a, b in ((torch.float32, torch.float64), (torch.float16, torch.float32)):
        x = torch.tensor([0.5, -2.0, 1.0], device=device).to(a)
        t = torch.tensor([1.0, 1.0, -1.0], device=device).to(b)
        h = F.huber_loss(x, t, reduction="none")
        s = F.soft_margin_loss(x, t, reduction="none")
        assert h.dtype == a and s.dtype == a
        np.testing.assert_allclose(h.cpu().numpy().astype(np.float64), [0.125, 2.5, 1.5], rtol=1e-3)
        np.testing.assert_allclose(s.cpu().numpy().astype(np.float64), np.log1p(np.exp([-0.5, 2.0, 1.0])),
                                   rtol=1e-3)
        assert F.huber_loss(x, t).dtype == a and F.soft_margin_loss(x, t).dtype == a


def test_interpolate_to_an_empty_or_negative_size_raises(device):
    """PyTorch's interpolate raises RuntimeError "Input and output sizes should be greater than 0, but got input
    (H: 3, W: 3) output (H: 0, W: 0)" for an output size below 1 (scale_factor 0.1 or negative, size 0); 'area'
    (adaptive average pooling) allows 0, as adaptive_avg_pool2d does.  coretorch returned a tensor for the scale
    factors and raised ZeroDivisionError for size 0 (also adaptive_avg_pool2d's own)."""
    x = torch.randn(1, 1, 3, 3, device=device)
    for kw in ({"scale_factor": 0.1}, {"scale_factor": -2.0}, {"size": (0, 2)}):
        for mode in ("nearest", "bilinear"):
            with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
                F.interpolate(x, mode=mode, **kw)
    assert tuple(F.interpolate(x, size=(0, 2), mode="area").shape) == (1, 1, 0, 2)
    assert tuple(F.adaptive_avg_pool2d(x, (2, 0)).shape) == (1, 1, 2, 0)


def test_pooling_padding_and_loss_argument_errors(device):
    """PyTorch's errors, where coretorch leaked another error or computed: a negative pooling padding
    (RuntimeError "pad must be non-negative"; numpy's ValueError before), a float avg_pool2d divisor_override
    (TypeError; it divided by 2.5), a 3-long adaptive_avg_pool2d size (RuntimeError; it pooled), an empty channel
    dim in max/avg_pool2d (RuntimeError; a result or ZeroDivisionError) while adaptive_avg_pool2d returns the
    empty result, a float in F.pad's pad (TypeError; it truncated 1.5 to 1), multi_margin_loss's weight of the wrong
    size (RuntimeError "inconsistent weight size"; an IndexError), embedding_bag's per_sample_weights of another
    shape (ValueError; a broadcast RuntimeError), instance_norm of a 1-D input (ValueError; IndexError) and fold
    of a 4-D input (RuntimeError; NotImplementedError)."""
    x = torch.randn(1, 1, 4, 4, device=device)
    with pytest.raises(RuntimeError, match="pad must be non-negative"):
        F.max_pool2d(x, 2, padding=(0, -1))
    with pytest.raises(RuntimeError, match="pad must be non-negative"):
        F.avg_pool2d(x, 2, padding=-1)
    with pytest.raises(TypeError, match="divisor_override"):
        F.avg_pool2d(x, 2, divisor_override=2.5)
    with pytest.raises(RuntimeError, match="output_size must be 2"):
        F.adaptive_avg_pool2d(x, (2, 2, 2))
    empty_c = torch.ones(1, 0, 4, 4, device=device)
    for fn in (F.max_pool2d, F.avg_pool2d):
        with pytest.raises(RuntimeError, match="optional 0 dim batch size"):
            fn(empty_c, 2)
    assert tuple(F.adaptive_avg_pool2d(empty_c, 2).shape) == (1, 0, 2, 2)
    assert tuple(F.max_pool2d(torch.ones(0, 2, 4, 4, device=device), 2).shape) == (0, 2, 2, 2)
    with pytest.raises(TypeError, match="must be tuple of ints"):
        F.pad(torch.ones(2, 3, device=device), (1.5, 1))
    with pytest.raises(RuntimeError, match="inconsistent weight size, expected 4 but got \\[3\\]"):
        F.multi_margin_loss(torch.randn(3, 4, device=device), torch.tensor([0, 1, 3], device=device),
                            weight=torch.ones(3, device=device))
    with pytest.raises(ValueError, match="per_sample_weights"):
        F.embedding_bag(torch.tensor([[0, 1], [1, 2]], device=device), torch.randn(3, 4, device=device), mode="sum",
                        per_sample_weights=torch.ones(3, device=device))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        F.instance_norm(torch.randn(6, device=device))
    with pytest.raises(RuntimeError, match="Expected 2D or 3D"):
        F.fold(torch.randn(1, 2, 4, 4, device=device), (3, 3), 2)


def test_group_norm_and_grid_sample_of_an_empty_batch(device):
    """PyTorch's group_norm and grid_sample take an empty batch (N = 0) and return an empty result; coretorch
    raised "shape '[0, 2, -1]' is invalid for input of size 0" (a reshape with -1 over zero elements)."""
    x = torch.randn(0, 4, 3, device=device, requires_grad=True)
    out = F.group_norm(x, 2, torch.ones(4, device=device), torch.zeros(4, device=device))
    assert tuple(out.shape) == (0, 4, 3)
    out.sum().backward()
    assert tuple(x.grad.shape) == (0, 4, 3)
    g = F.grid_sample(torch.randn(0, 2, 3, 3, device=device), torch.zeros(0, 2, 2, 2, device=device),
                      align_corners=False)
    assert tuple(g.shape) == (0, 2, 2, 2)
    # ctc_loss of an empty batch: PyTorch's "log_probs tensor must not be empty" (a where() dtype error before)
    with pytest.raises(RuntimeError, match="log_probs tensor must not be empty"):
        F.ctc_loss(torch.zeros(4, 0, 3, device=device), torch.zeros(0, 2, dtype=torch.int64, device=device),
                   torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64))


def test_functional_upsample_warns_that_it_is_deprecated():
    """PyTorch's F.upsample emits UserWarning "`nn.functional.upsample` is deprecated. Use
    `nn.functional.interpolate` instead." (as F.upsample_nearest/upsample_bilinear do here already); coretorch's
    was silent."""
    with pytest.warns(UserWarning, match="nn.functional.upsample` is deprecated"):
        out = F.upsample(torch.ones(1, 1, 2, 2), scale_factor=2)
    assert tuple(out.shape) == (1, 1, 4, 4)


def test_margin_losses_follow_pytorchs_kernels_at_the_margin_and_for_repeated_labels(device):
    """PyTorch's multi_margin_loss and multilabel_margin_loss kernels add a term (and its gradient) only where
    margin - x[y] + x[j] > 0, so a term exactly at 0 has no gradient (coretorch's clamp passed one: -0.667 for
    PyTorch's -0.333); multilabel_margin_loss loops over the listed targets, so a class listed twice counts twice
    (coretorch: once, 0.85 for PyTorch's 1.1)."""
    x = torch.tensor([[1.0, 0.0, 0.5]], dtype=torch.float64, device=device, requires_grad=True)
    out = F.multi_margin_loss(x, torch.tensor([0], device=device), reduction="sum")
    assert out.item() == pytest.approx(0.5 / 3)
    (g,) = torch.autograd.grad(out, x)
    np.testing.assert_allclose(g.cpu().numpy(), [[-1 / 3, 0.0, 1 / 3]], rtol=1e-12)
    a = np.array([0.1, 0.2, 0.4, 0.8])
    x2 = torch.tensor([a], dtype=torch.float64, device=device, requires_grad=True)
    out2 = F.multilabel_margin_loss(x2, torch.tensor([[3, 3, 0, -1]], device=device))
    # listed targets 3, 3, 0; non-targets 1, 2
    ref = sum(max(0.0, 1 - (a[j] - a[k])) for j in (3, 3, 0) for k in (1, 2)) / 4
    assert out2.item() == pytest.approx(ref, rel=1e-12)
    (g2,) = torch.autograd.grad(out2, x2)
    np.testing.assert_allclose(g2.cpu().numpy(), [[-0.5, 0.75, 0.75, -1.0]], rtol=1e-12)


def test_cosine_embedding_loss_uses_pytorchs_epsilon_formula(device):
    """PyTorch's cosine_embedding_loss is x1.x2 / sqrt((|x1|^2 + EPS)(|x2|^2 + EPS)) with EPS = 1e-12 (as a C
    float), and a target other than 1 / -1 contributes 0.  For a zero x1 the gradient is x2 / sqrt(EPS |x2|^2)
    (4.5e5 here); coretorch clamped the norms at 1e-12 instead (4.5e11) and treated a target of 0 as -1."""
    eps = float(np.float32(1e-12))
    a = torch.zeros(1, 2, dtype=torch.float64, device=device, requires_grad=True)
    b = torch.tensor([[1.0, 2.0]], dtype=torch.float64, device=device)
    out = F.cosine_embedding_loss(a, b, torch.tensor([1], device=device), reduction="sum")
    assert out.item() == 1.0
    (g,) = torch.autograd.grad(out, a)
    np.testing.assert_allclose(g.cpu().numpy(), -np.array([[1.0, 2.0]]) / np.sqrt(eps * (5 + eps)), rtol=1e-12)
    x = torch.tensor([[1.0, 0.0], [1.0, 1.0]], dtype=torch.float64, device=device)
    y = torch.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=torch.float64, device=device)
    out0 = F.cosine_embedding_loss(x, y, torch.tensor([0, 0], device=device), reduction="none")
    np.testing.assert_array_equal(out0.cpu().numpy(), [0.0, 0.0])


def test_kl_div_of_a_negative_target_is_nan(device):
    """PyTorch's kl_div is xlogy(t, t) - t * x: NaN where the target is negative (log of a negative), 0 * log 0 = 0
    where it is 0, and the input's gradient -t everywhere.  coretorch gave a negative target the finite -t * x."""
    x = torch.tensor([-1.0, -2.0, -0.5], dtype=torch.float64, device=device, requires_grad=True)
    t = torch.tensor([0.5, 0.0, -0.25], dtype=torch.float64, device=device)
    out = F.kl_div(x, t, reduction="none")
    o = out.detach().cpu().numpy()
    assert o[0] == pytest.approx(0.5 * (np.log(0.5) + 1.0)) and o[1] == 0.0 and np.isnan(o[2])
    (g,) = torch.autograd.grad(out[:2].sum() + out[2] * 0, x)
    np.testing.assert_allclose(g.cpu().numpy()[:2], [-0.5, 0.0])
    assert np.isnan(F.kl_div(x, t, reduction="sum").item())
    # float16 stays float16 (the NaN branch in the target's dtype), the target's gradient log t + 1 - x
    h = F.kl_div(x.detach().to(torch.float16), t.to(torch.float16), reduction="none")
    assert h.dtype == torch.float16 and np.isnan(h.cpu().numpy()[2])
    tp = torch.tensor([0.5, 0.25], dtype=torch.float64, device=device, requires_grad=True)
    (gt,) = torch.autograd.grad(F.kl_div(x[:2].detach(), tp, reduction="sum"), tp)
    np.testing.assert_allclose(gt.cpu().numpy(), np.log([0.5, 0.25]) + 1 - np.array([-1.0, -2.0]))


def test_channels_last_input_keeps_channels_last_through_conv_pool_interpolate_pad(device):
    """PyTorch returns channels_last results from conv2d, conv_transpose2d, max/avg/adaptive pooling, interpolate
    and pad of a channels_last input (batch_norm, group_norm and pointwise ops already keep it here); coretorch
    returned row-major results (equal values, other strides) until review 24c laid them out channels-last."""
    x = torch.randn(2, 3, 6, 6, device=device).contiguous(memory_format=torch.channels_last)
    outs = [F.conv2d(x, torch.randn(4, 3, 3, 3, device=device), padding=1), F.max_pool2d(x, 2), F.avg_pool2d(x, 2),
            F.adaptive_avg_pool2d(x, 3), F.interpolate(x, scale_factor=2, mode="bilinear"), F.pad(x, (1, 1, 1, 1))]
    for y in outs:
        assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()


def test_grid_sample_of_a_nan_grid_does_not_crash(device):
    """PyTorch's grid_sample of a grid holding NaN returns NaN where the zeros padding mixes the NaN weights in and
    clips a NaN coordinate to 0 under border/reflection padding (bilinear, nearest); coretorch raised "gather():
    index -9223372036854775808 is out of bounds" (the NaN cast to an index)."""
    x = torch.arange(12.0, device=device).reshape(1, 1, 3, 4)
    g = torch.tensor([[[[float("nan"), 0.0], [0.0, float("nan")], [0.2, 0.3]]]], device=device)
    expected = {("bilinear", "zeros"): [np.nan, np.nan, 7.7], ("bilinear", "border"): [4.0, 1.5, 7.7],
                ("bilinear", "reflection"): [4.0, 1.5, 7.7], ("nearest", "zeros"): [0.0, 0.0, 6.0],
                ("nearest", "border"): [4.0, 2.0, 6.0]}
    for (mode, pm), ref in expected.items():
        out = F.grid_sample(x, g, mode=mode, padding_mode=pm, align_corners=False)
        np.testing.assert_allclose(out.cpu().numpy().ravel(), ref, rtol=1e-6)
    out = F.grid_sample(x, g, mode="bicubic", padding_mode="border", align_corners=False).cpu().numpy().ravel()
    assert np.isnan(out[:2]).all() and np.isfinite(out[2])


def test_nll_and_cross_entropy_reject_a_weight_of_another_dtype(device):
    """PyTorch's nll_loss (and cross_entropy with class-index targets) raise RuntimeError "expected scalar type
    Float but found Double" for a weight of another dtype than the input; coretorch computed (a float64 result
    with label smoothing).  Probability targets keep PyTorch's composite promotion."""
    x = torch.randn(4, 3, device=device)
    t = torch.tensor([0, 1, 2, 1], device=device)
    w = torch.ones(3, dtype=torch.float64, device=device)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.nll_loss(x, t, weight=w)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.cross_entropy(x, t, weight=w, label_smoothing=0.1)
    assert F.cross_entropy(x, torch.softmax(x, 1), weight=w).dtype == torch.float64


def test_adaptive_avg_pool2d_of_integers_raises():
    """PyTorch's adaptive_avg_pool2d has no integer kernel (NotImplementedError '"adaptive_avg_pool2d" not
    implemented for 'Long''), as coretorch's 1-D and 3-D forms already said; coretorch's 2-D form returned zeros for
    a non-divisible size (its averaging matrices cast to the integer dtype) and a pooled result otherwise."""
    x = torch.arange(25).reshape(1, 1, 5, 5)
    for dt in (torch.int64, torch.uint8, torch.bool):
        for size in (2, 5):
            with pytest.raises(NotImplementedError, match="adaptive_avg_pool2d"):
                F.adaptive_avg_pool2d(x.to(dt), size)
