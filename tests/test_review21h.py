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
