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
