"""Review 21h: losses, convolution and pooling, a second pass over their argument matrices (eager).  PyTorch's
behaviour is the spec; each test says what PyTorch does and what coretorch did before the fix.  Expected values come
from numpy or from facts PyTorch documents."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


@pytest.mark.parametrize("padding,dilation,sizes", [((1, 0, 2), 2, "(7 x 2 x 9). Kernel size: (5 x 5 x 5)"),
                                                    (0, 1, "(5 x 2 x 5). Kernel size: (3 x 3 x 3)"),
                                                    (0, (2, 1, 1), "(5 x 2 x 5). Kernel size: (5 x 3 x 3)")])
def test_conv3d_kernel_larger_than_input_names_all_three_padded_sizes(device, padding, dilation, sizes):
    """PyTorch's conv3d reports the padded input and the dilated kernel over all three dims.  coretorch reported
    the undilated kernel with unpadded H, W when the depth was too small, and conv2d's two-dim message (H x W) when
    the height or width was."""
    x = torch.zeros(1, 2, 5, 2, 5, device=device)
    w = torch.zeros(3, 2, 3, 3, 3, device=device)
    with pytest.raises(RuntimeError, match=r"^Calculated padded input size per channel: " + sizes.replace(
            "(", r"\(").replace(")", r"\)") + r"\. Kernel size can't be greater than actual input size$"):
        F.conv3d(x, w, padding=padding, dilation=dilation)


@pytest.mark.parametrize("op", ["conv3d", "conv3d_bias", "conv_transpose3d", "conv_transpose3d_bias",
                                "adaptive_avg_pool1d", "adaptive_avg_pool3d"])
def test_conv3d_and_adaptive_avg_pool_results_are_row_major(device, op):
    """PyTorch's conv3d, conv_transpose3d and adaptive_avg_pool1d/3d return contiguous (row-major) results, so the
    usual ``x.view(x.size(0), -1)`` after them works.  coretorch returned a permuted view (conv3d: (N, D, C, H, W)
    memory order; the adaptive pools: the last axis moved back after a matmul), and ``.view`` raised."""
    x = torch.randn(2, 4, 5, 6, 4, device=device)
    b = torch.randn(6, device=device) if op.endswith("_bias") else None
    y = {"conv3d": lambda: F.conv3d(x, torch.randn(6, 4, 2, 3, 2, device=device), b, padding=1),
         "conv_transpose3d": lambda: F.conv_transpose3d(x, torch.randn(4, 6, 2, 3, 2, device=device), b, stride=2),
         "adaptive_avg_pool1d": lambda: F.adaptive_avg_pool1d(x[:, :, 0, 0], 3),
         "adaptive_avg_pool3d": lambda: F.adaptive_avg_pool3d(x, (3, 4, 3))}[op.removesuffix("_bias")]()
    assert y.is_contiguous()
    flat = y.view(y.size(0), -1)
    np.testing.assert_array_equal(flat.cpu().numpy(), y.cpu().numpy().reshape(2, -1))


def test_fractional_max_pool3d_takes_a_bare_ratio_and_checks_its_sizes_strictly(device):
    """PyTorch's fractional_max_pool3d takes a bare float ``output_ratio`` as (r, r, r) (only the 2-d op takes
    ``len()`` of it and raises TypeError) and ATen's 3-d size check is strict: output + pool - 1 must be less than
    the input (the 2-d check allows equality).  coretorch raised TypeError for the bare ratio and accepted an output
    of 4 from an input of 6 with a pool of 3."""
    x = torch.randn(1, 2, 6, 7, 8, device=device)
    assert F.fractional_max_pool3d(x, 2, output_ratio=0.5).shape == (1, 2, 3, 3, 4)
    assert torch.nn.FractionalMaxPool3d(2, output_ratio=0.5)(x).shape == (1, 2, 3, 3, 4)
    with pytest.raises(TypeError):
        F.fractional_max_pool2d(x[0], 2, output_ratio=0.5)
    cube = torch.randn(1, 2, 6, 6, 6, device=device)
    for i, name in enumerate(["time", "height", "width"]):
        size = [3, 3, 3]
        size[i] = 4
        with pytest.raises(RuntimeError, match=f"^fractional_max_pool3d_out\\(\\): pool {name} 3 too large relative "
                                               f"to input {name} 6$"):
            F.fractional_max_pool3d(cube, 3, output_size=size)
    assert F.fractional_max_pool3d(cube, 3, output_size=3).shape == (1, 2, 3, 3, 3)
    assert F.fractional_max_pool2d(cube[0, :, 0], 3, output_size=4).shape == (2, 4, 4)  # 2-d: equality allowed


_CONV_ERRORS = [
    # (call, error type, PyTorch's message)
    (lambda z: F.conv1d(z(1, 4, 2), z(2, 4, 3)), RuntimeError,
     "Calculated padded input size per channel: (2). Kernel size: (3). Kernel size can't be greater than actual "
     "input size"),
    (lambda z: F.conv1d(z(1, 3, 5), z(2, 4, 3)), RuntimeError,
     "Given groups=1, weight of size [2, 4, 3], expected input[1, 3, 5] to have 4 channels, but got 3 channels "
     "instead"),
    (lambda z: F.conv2d(z(3, 5, 5), z(2, 4, 3, 3)), RuntimeError,
     "Given groups=1, weight of size [2, 4, 3, 3], expected input[1, 3, 5, 5] to have 4 channels, but got 3 "
     "channels instead"),
    (lambda z: F.conv3d(z(3, 5, 5, 5), z(2, 4, 3, 3, 3)), RuntimeError,
     "Given groups=1, weight of size [2, 4, 3, 3, 3], expected input[1, 3, 5, 5, 5] to have 4 channels, but got 3 "
     "channels instead"),
    (lambda z: F.conv3d(z(1, 4, 5, 5, 5), z(3, 2, 3, 3, 3), groups=2), RuntimeError,
     "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size "
     "[[3, 2, 3, 3, 3]] instead"),
    (lambda z: F.conv2d(z(1, 4, 5, 5), z(3, 2, 3, 3), groups=2), RuntimeError,
     "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[3, 2, 3, 3]] "
     "instead"),
    (lambda z: F.conv1d(z(1, 4, 5), z(2, 4, 3), dilation=0), RuntimeError,
     "dilation should be greater than zero, but got [1, 0]"),
    (lambda z: F.conv3d(z(1, 4, 5, 5, 5), z(2, 4, 3, 3, 3), dilation=0), RuntimeError,
     "dilation should be greater than zero, but got [0, 0, 0]"),
    (lambda z: F.conv_transpose2d(z(4, 5, 5), z(3, 2, 3, 3)), RuntimeError,
     "Given transposed=1, weight of size [3, 2, 3, 3], expected input[1, 4, 5, 5] to have 3 channels, but got 4 "
     "channels instead"),
    (lambda z: F.conv_transpose1d(z(4, 5), z(3, 2, 3)), RuntimeError,
     "Given transposed=1, weight of size [3, 2, 3], expected input[1, 4, 5] to have 3 channels, but got 4 "
     "channels instead"),
    (lambda z: F.conv_transpose1d(z(1, 4, 5), z(4, 2, 3), padding="same"), TypeError,
     "conv_transpose1d(): argument 'padding' must be tuple of ints, not str"),
    (lambda z: F.conv_transpose3d(z(1, 4, 3, 3, 3), z(4, 2, 3, 3, 3), padding="valid"), TypeError,
     "conv_transpose3d(): argument 'padding' must be tuple of ints, not str"),
    (lambda z: F.conv_transpose2d(z(1, 4, 5, 5), z(4, 2, 3, 3), dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilation_height: 0, dilation_width: 0"),
    (lambda z: F.conv_transpose1d(z(1, 4, 5), z(4, 2, 3), dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilation_height: 1, dilation_width: 0"),
    (lambda z: F.conv_transpose2d(z(1, 4, 5, 5), z(4, 2, 3, 3), stride=0), RuntimeError,
     "non-positive stride is not supported"),
    (lambda z: F.conv_transpose2d(z(1, 4, 5, 5), z(4, 2, 3, 3), padding=-1), RuntimeError,
     "negative padding is not supported"),
    (lambda z: F.conv_transpose1d(z(1, 4, 5), z(4, 2, 3), output_padding=-1), RuntimeError,
     "negative output_padding is not supported"),
]


@pytest.mark.parametrize("case", range(len(_CONV_ERRORS)))
def test_conv_argument_errors_are_pytorchs(device, case):
    """PyTorch's conv checks word their messages for the op's own dims: conv1d names 1-d sizes and 3-d weights,
    conv3d its 5-d weight, an unbatched input is named with its batch dim of 1, the groups message double-brackets
    the weight size; the transposed convolutions reject a string padding (TypeError), a zero dilation or stride and a
    negative padding or output_padding.  coretorch named conv2d's 4-d shapes (conv1d via conv2d, conv3d via its
    per-tap conv2d), the unbatched shape, gave ValueError for padding='same' and stride=0 of a transposed
    convolution, and ran conv_transpose1d/2d with dilation 0 (zeros) or a negative padding/output_padding."""
    call, kind, msg = _CONV_ERRORS[case]

    def z(*shape):
        return torch.zeros(*shape, device=device)

    with pytest.raises(kind) as info:
        call(z)
    assert str(info.value) == msg


@pytest.mark.parametrize("shape,dim", [((1, 2, 0, 5), 2), ((2, 0, 5), 1), ((0, 2, 0, 5), 2), ((1, 2, 4, 0), 3)])
def test_adaptive_avg_pool2d_of_an_empty_spatial_dim_raises(device, shape, dim):
    """PyTorch's adaptive_avg_pool2d raises for an empty height or width (an empty batch or channel dim is fine);
    coretorch returned zeros of the output size (averages over nothing)."""
    sizes = ", ".join(map(str, shape))
    with pytest.raises(RuntimeError, match=rf"^adaptive_avg_pool2d\(\): Expected input to have non-zero size for "
                                           rf"non-batch dimensions, but input has sizes \[{sizes}\] "
                                           rf"with dimension {dim} being empty$"):
        F.adaptive_avg_pool2d(torch.zeros(*shape, device=device), 3)
    assert F.adaptive_avg_pool2d(torch.zeros(0, 2, 4, 5, device=device), 3).shape == (0, 2, 3, 3)
    assert F.adaptive_avg_pool2d(torch.zeros(1, 0, 4, 5, device=device), 3).shape == (1, 0, 3, 3)


def test_one_hot_of_a_transposed_index_and_antialiased_interpolate_are_row_major(device):
    """(Found on the way.)  PyTorch's one_hot and antialiased interpolate return contiguous results; coretorch's
    one_hot of a transposed index tensor and interpolate(antialias=True) returned permuted views, so a following
    ``.view`` raised."""
    idx = torch.tensor([[0, 1, 2, 3], [4, 0, 1, 2], [3, 4, 0, 1]], device=device).t()
    oh = F.one_hot(idx, 5)
    assert oh.is_contiguous()
    np.testing.assert_array_equal(oh.view(4, 15).cpu().numpy(), np.eye(5, dtype=np.int64)[idx.cpu().numpy()]
                                  .reshape(4, 15))
    y = F.interpolate(torch.randn(2, 3, 7, 6, device=device), size=(3, 4), mode="bilinear", antialias=True)
    assert y.is_contiguous() and y.view(2, -1).shape == (2, 36)


@pytest.mark.parametrize("fn", [F.triplet_margin_loss, F.triplet_margin_with_distance_loss])
def test_triplet_losses_check_the_margin_as_pytorch_2_13(device, fn):
    """PyTorch 2.13's F.triplet_margin_loss and F.triplet_margin_with_distance_loss raise ValueError("margin must be
    greater than 0, got ...") for a margin <= 0, after checking the reduction.  coretorch's triplet_margin_loss
    computed a loss with a negative or zero margin, and triplet_margin_with_distance_loss worded the error as the
    module constructor does."""
    a, p, n = (torch.randn(2, 3, device=device) for _ in range(3))
    for margin in (0, -1.0):
        with pytest.raises(ValueError, match=rf"^margin must be greater than 0, got {margin}$"):
            fn(a, p, n, margin=margin)
    with pytest.raises(ValueError, match="^foo is not a valid value for reduction$"):
        fn(a, p, n, margin=-1, reduction="foo")
    assert fn(a, p, n, margin=0.5).shape == ()


def test_cross_entropy_with_probabilities_rejects_a_non_negative_ignore_index(device):
    """PyTorch's cross_entropy with class-probability targets raises RuntimeError("ignore_index is not supported
    for floating point target") for an ignore_index >= 0 (a negative one, the default -100 included, is accepted);
    coretorch ignored the argument and returned a loss."""
    x, p = torch.randn(3, 4, device=device), torch.rand(3, 4, device=device).softmax(1)
    for ii in (0, 3, 100):
        with pytest.raises(RuntimeError, match="^ignore_index is not supported for floating point target$"):
            F.cross_entropy(x, p, ignore_index=ii)
        with pytest.raises(RuntimeError, match="^ignore_index is not supported for floating point target$"):
            torch.nn.CrossEntropyLoss(ignore_index=ii)(x, p)
    for ii in (-100, -1):
        assert F.cross_entropy(x, p, ignore_index=ii).shape == ()


def test_nll_loss_of_an_unbatched_input_takes_a_one_element_target(device):
    """PyTorch's nll_loss/cross_entropy of a 1-d (unbatched) input take a 1-d target of one element as the 0-d
    target (a 0-d loss, also for reduction='none'), raise ValueError for a longer 1-d target and RuntimeError for a
    2-d one.  coretorch raised ValueError("Expected input batch_size (1) to match target batch_size (1).")."""
    x = torch.arange(4.0, device=device)
    for red in ("mean", "sum", "none"):
        out = F.nll_loss(x, torch.tensor([1], device=device), reduction=red)
        assert out.shape == () and out.item() == -1.0
        ce = F.cross_entropy(x, torch.tensor([1], device=device), reduction=red)
        assert ce.shape == () and abs(ce.item() - (np.log(np.exp(np.arange(4.0)).sum()) - 1.0)) < 1e-5
    with pytest.raises(ValueError, match="^For 1D input, 1D target must have size 1, but got target size: 2$"):
        F.nll_loss(x, torch.tensor([1, 2], device=device))
    with pytest.raises(RuntimeError, match="^0D or 1D target tensor expected, multi-target not supported$"):
        F.nll_loss(x, torch.tensor([[1]], device=device))


_POOL_ERRORS = [
    (lambda x2, x1: F.max_pool2d(x2, 0), "stride should not be zero"),
    (lambda x2, x1: F.max_pool2d(x2, 2, stride=(1, 0)), "stride should not be zero"),
    (lambda x2, x1: F.avg_pool2d(x2, 0), "stride should not be zero"),
    (lambda x2, x1: F.max_pool2d(x2, 0, stride=1), "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    (lambda x2, x1: F.max_pool2d(x2, 2, stride=-1), "stride should be greater than zero, but got dH: -1 dW: -1"),
    (lambda x2, x1: F.max_pool2d(x2, 2, dilation=(1, 0)),
     "dilation should be greater than zero, but got dilationH: 1 dilationW: 0"),
    (lambda x2, x1: F.max_pool2d(x2, 0, stride=1, padding=-1), "pad must be non-negative, but got pad: -1"),
    (lambda x2, x1: F.avg_pool1d(x1, -1), "kernel size should be greater than zero, but got kH: 1 kW: -1"),
    (lambda x2, x1: F.max_pool1d(x1, 3, padding=2),
     "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=3"),
    (lambda x2, x1: F.max_pool1d(x1, 2, stride=0), "max_pool1d() stride must be greater than zero, but got 0"),
    (lambda x2, x1: F.max_pool1d(x1, 0), "max_pool1d() kernel_size must be greater than zero, but got 0"),
    (lambda x2, x1: F.max_pool1d(x1, 2, dilation=0), "max_pool1d() dilation must be greater than zero, but got 0"),
    (lambda x2, x1: F.max_pool1d(x1[..., :2], 3, padding=1, dilation=2),
     "max_pool1d() Invalid computed output size: 0"),
    (lambda x2, x1: F.max_pool1d(x1, 2, stride=0, return_indices=True), "stride should not be zero"),
]


@pytest.mark.parametrize("case", range(len(_POOL_ERRORS)))
def test_pooling_argument_errors_are_pytorchs(device, case):
    """PyTorch's max/avg_pool2d (and the 1-d pools run through them) check each dim's stride != 0 and padding
    first, then the kernel, stride and dilation signs, each with its own message; max_pool1d without indices of an
    input that needs no gradient has ATen's own 1-d messages.  coretorch raised one combined message ("max_pool2d:
    kernel_size, stride and dilation must be greater than zero, but got ...") and max_pool1d named 2-d sizes."""
    call, msg = _POOL_ERRORS[case]
    with pytest.raises(RuntimeError) as info:
        call(torch.randn(1, 2, 5, 5, device=device), torch.randn(1, 2, 5, device=device))
    assert str(info.value) == msg


def test_legacy_elementwise_mean_reduction_is_mean_where_pytorch_takes_it(device):
    """PyTorch's losses whose kernel takes _Reduction.get_enum (mse, l1, smooth_l1, huber, bce(_with_logits), kl_div,
    soft/hinge/multi(label)_margin, margin_ranking, cosine_embedding, triplet, nll, cross_entropy, ctc) take the
    legacy reduction='elementwise_mean' as 'mean' with a deprecation warning; poisson/gaussian nll and
    multilabel_soft_margin reject it (the latter with "... is not valid").  coretorch raised ValueError for all."""
    x, y = torch.rand(3, 4, device=device), torch.rand(3, 4, device=device)
    t = torch.tensor([0, 1, 2], device=device)
    calls = [lambda r: F.mse_loss(x, y, reduction=r), lambda r: F.huber_loss(x, y, reduction=r),
             lambda r: F.cross_entropy(x, t, reduction=r), lambda r: F.multi_margin_loss(x, t, reduction=r),
             lambda r: F.kl_div(x, y, reduction=r), lambda r: torch.nn.L1Loss(reduction=r)(x, y),
             lambda r: F.ctc_loss(x.log_softmax(1)[:, None].expand(3, 2, 4), torch.tensor([[1], [2]], device=device),
                                  [3, 3], [1, 1], reduction=r)]
    for call in calls:
        with pytest.warns(UserWarning, match=r"reduction='elementwise_mean' is deprecated\. Please use "
                                             r"reduction='mean' instead\."):
            got = call("elementwise_mean")
        assert torch.equal(got, call("mean"))
    with pytest.raises(ValueError, match="^elementwise_mean is not a valid value for reduction$"):
        F.poisson_nll_loss(x, y, reduction="elementwise_mean")
    with pytest.raises(ValueError, match="^elementwise_mean is not valid$"):
        F.multilabel_soft_margin_loss(x, y, reduction="elementwise_mean")


def test_torch_conv_tbc_is_there(device):
    """(Found on the way.)  PyTorch has ``torch.conv_tbc`` as well as ``F.conv_tbc``; coretorch only had the
    latter (AttributeError on ``torch.conv_tbc``)."""
    x, w, b = torch.randn(5, 2, 3, device=device), torch.randn(2, 3, 4, device=device), torch.randn(4, device=device)
    assert torch.equal(torch.conv_tbc(x, w, b, 1), F.conv_tbc(x, w, b, 1))
