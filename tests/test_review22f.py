"""Review 22f: spatial and lookup functions (interpolate/Upsample, grid_sample/affine_grid, pad, fold/unfold, pixel
and channel shuffles, embedding, embedding_bag, one_hot), eager behaviour.  PyTorch's behaviour is the spec; each
test says what PyTorch does and what coretorch did before the fix.  Expected values come from numpy or from facts
PyTorch documents (its kernels' arithmetic)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F

f32 = np.float32


def _pick(n: int, idx) -> np.ndarray:
    return np.arange(float(n))[list(idx)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nearest_2d_copies_an_equal_size_and_halves_a_doubled_one_whatever_the_scale_factor(device, dtype):
    """PyTorch's 2-D nearest kernel (nearest_idx) copies when the output size equals the input size and takes
    index i >> 1 when it is twice the input size, whatever scale_factor gave that size: 3 * 1.2 -> 3 reads [0, 1, 2]
    and 3 * 2.05 -> 6 reads [0, 0, 1, 1, 2, 2].  coretorch used floor(i / scale_factor): [0, 0, 1] and
    [0, 0, 0, 1, 1, 2]."""
    x = torch.arange(3.0, dtype=dtype, device=device).reshape(1, 1, 1, 3)
    y = F.interpolate(x, scale_factor=(1.0, 1.2), mode="nearest")
    np.testing.assert_array_equal(y.cpu().numpy().ravel(), [0, 1, 2])
    y = F.interpolate(x, scale_factor=(1.0, 2.05), mode="nearest")
    np.testing.assert_array_equal(y.cpu().numpy().ravel(), [0, 0, 1, 1, 2, 2])
    up = torch.nn.Upsample(scale_factor=(1.2, 2.05))(x.reshape(1, 1, 3, 1).expand(1, 1, 3, 3).contiguous())
    np.testing.assert_array_equal(up.cpu().numpy()[0, 0, :, 0], [0, 1, 2])


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_source_index_is_computed_in_float32(device, nd, mode):
    """PyTorch's nearest kernels take the source index floor(i * s) (nearest-exact: floor((i + 0.5) * s)) with
    s = 1 / scale_factor rounded to float32 and a float32 result, so a position that is an integer in real
    arithmetic lands where float32 puts it: 11 * 2.45 (nearest-exact) reads 10 at output 24 and 56 * 2.6 (nearest)
    reads 15 at output 39 (for float32 inputs, every dimensionality).  coretorch computed in double: 9 and 14."""
    for n, sf in ((11, 2.45), (56, 2.6), (16, 2.6), (49, 0.7)):
        x = torch.arange(float(n), device=device).reshape((1, 1) + (1,) * (nd - 1) + (n,))
        y = F.interpolate(x, scale_factor=(1.0,) * (nd - 1) + (sf,), mode=mode)
        n_out = int(np.floor(n * sf))
        s = f32(1.0 / sf)
        if mode == "nearest":
            idx = [min(int(np.floor(f32(i) * s)), n - 1) for i in range(n_out)]
        else:
            idx = [min(int(np.floor(f32((i + 0.5) * float(s)))), n - 1) for i in range(n_out)]
        if nd == 2 and mode == "nearest" and n_out == 2 * n:
            idx = [i >> 1 for i in range(n_out)]
        np.testing.assert_array_equal(y.cpu().numpy().ravel(), _pick(n, idx))


def _linear_f32(x: np.ndarray, n_out: int, sf: float) -> np.ndarray:
    """PyTorch's float32 linear interpolation along the last axis (align_corners=False, a scale factor)."""
    n = x.shape[-1]
    s = f32(1.0 / sf)
    src = np.maximum((float(s) * (np.arange(n_out) + 0.5) - 0.5).astype(f32), f32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    lam = np.clip(src - i0.astype(f32), 0, 1).astype(f32)
    i1 = np.minimum(i0 + 1, n - 1)
    return x[..., i0] * (f32(1) - lam) + x[..., i1] * lam


def test_linear_interpolation_weights_are_computed_in_float32(device):
    """PyTorch computes a float32 input's source positions as float32: a float32 scale times (i + 0.5) in double,
    rounded to float32: on a 100-sample signal the positions near 100 carry float32's 8e-6 steps into the
    weights (on 300 samples resized to 1001 the results move by 2e-5).  coretorch computed them in double: results
    3e-6 away from PyTorch's (about 50 float32 ulps)."""
    rs = np.random.RandomState(0)
    x = rs.randn(2, 3, 100).astype(f32)
    for sf in (0.29, 2.9, 0.7, 3.337):
        y = F.interpolate(torch.tensor(x, device=device), scale_factor=sf, mode="linear")
        exp = _linear_f32(x, int(np.floor(100 * sf)), sf)
        np.testing.assert_allclose(y.cpu().numpy(), exp, rtol=0, atol=5e-7)


def test_half_linear_interpolation_rounds_once_with_half_weights(device):
    """PyTorch stores a float16 input's interpolation weights as float16 (lambda0 = 1 - lambda1 in float16),
    accumulates in float32 and rounds the result once.  coretorch computed each product and sum in float16 (a
    result up to 3 float16 ulps away)."""
    rs = np.random.RandomState(1)
    x = rs.randn(1, 2, 7).astype(np.float16)
    y = F.interpolate(torch.tensor(x, device=device), scale_factor=1.7, mode="linear")
    n_out = 11
    s = f32(1.0 / 1.7)
    src = np.maximum((float(s) * (np.arange(n_out) + 0.5) - 0.5).astype(f32), f32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), 6)
    lam1 = np.clip(src - i0.astype(f32), 0, 1).astype(np.float16)
    lam0 = (np.float16(1) - lam1).astype(np.float16)
    xf = x.astype(f32)
    exp = (xf[..., i0] * lam0.astype(f32) + xf[..., np.minimum(i0 + 1, 6)] * lam1.astype(f32)).astype(np.float16)
    assert y.dtype == torch.float16
    np.testing.assert_array_equal(y.cpu().numpy(), exp)


def test_interpolate_argument_checks_follow_pytorchs_order_and_types(device):
    """PyTorch's interpolate: a float size is a TypeError (no truncation to 3); recompute_scale_factor=True with a
    size is a ValueError; bicubic on a 3-D/5-D input and any 6-D input reach the last-resort NotImplementedError
    'Input Error: Only 3D, 4D and 5D ...'; a 1-D input with a scalar scale_factor too; an input with no channels is
    'Non-empty 4D data tensor expected' (an empty batch is fine), 'area' of a 5-D one is adaptive_avg_pool3d's
    error.  coretorch truncated the size, ignored recompute_scale_factor, interpolated the 6-D input (over 4
    spatial dims), returned empty results and raised 'bicubic mode needs 4D input' / a ValueError about
    scale_factor's length."""
    x1, x2 = torch.zeros(1, 1, 4, device=device), torch.zeros(1, 1, 4, 4, device=device)
    with pytest.raises(TypeError, match="must be tuple of ints"):
        F.interpolate(x1, size=3.5)
    with pytest.raises(TypeError, match=r"expected size to be one of int or Tuple\[int\]"):
        F.interpolate(x1, size=(3.0,))
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an explicit size"):
        F.interpolate(x1, size=(3,), recompute_scale_factor=True)
    for x, mode in ((x1, "bicubic"), (torch.zeros(1, 1, 2, 2, 2, device=device), "bicubic"),
                    (torch.zeros(1, 1, 1, 1, 1, 1, device=device), "nearest"), (torch.zeros(4, device=device),
                                                                                 "nearest")):
        with pytest.raises(NotImplementedError, match=rf"Only 3D, 4D and 5D input Tensors supported \(got "
                                                      rf"{x.ndim}D\).*\(got {mode}\)"):
            F.interpolate(x, scale_factor=2, mode=mode)
    with pytest.raises(ValueError, match=r"scale_factor of shape \(2,\)\. Please provide input tensor"):
        F.interpolate(x2, scale_factor=(2,))
    for mode in ("nearest", "bilinear", "bicubic", "nearest-exact"):
        with pytest.raises(RuntimeError, match=r"Non-empty 4D data tensor expected but got a tensor with sizes "
                                               r"\[1, 0, 4, 4\]"):
            F.interpolate(torch.zeros(1, 0, 4, 4, device=device), scale_factor=2, mode=mode)
        assert F.interpolate(torch.zeros(0, 2, 4, 4, device=device), scale_factor=2, mode=mode).shape == (0, 2, 8, 8)
    assert F.interpolate(torch.zeros(1, 0, 4, 4, device=device), scale_factor=2, mode="area").shape == (1, 0, 8, 8)
    with pytest.raises(RuntimeError, match="adaptive_avg_pool3d"):
        F.interpolate(torch.zeros(1, 0, 2, 2, 2, device=device), scale_factor=2, mode="area")
    with pytest.raises(RuntimeError, match=r"but got input \(W: 4\) and output \(W: 0\)"):
        F.interpolate(x1, scale_factor=0.1)


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
@pytest.mark.parametrize("nd", [2, 3])
def test_grid_sample_grid_gradient_is_zero_on_the_clipped_border(device, padding_mode, nd):
    """PyTorch's clip_coordinates_set_grad passes the grid gradient only strictly inside [0, size - 1]: an identity
    grid with align_corners=True samples the border pixels at exactly -1 and 1, where the gradient is 0 (border and
    reflection).  coretorch's clamp passed the gradient at its bounds: the x gradient of the first column was 1.5
    (the slope times (W - 1) / 2) instead of 0 with border padding."""
    sizes = (3, 4) if nd == 2 else (2, 3, 4)
    n = int(np.prod(sizes))
    x = torch.arange(float(n), dtype=torch.float64, device=device).reshape((1, 1) + sizes)
    eye = np.eye(nd, nd + 1)[None]
    theta = torch.tensor(eye, dtype=torch.float64, device=device)
    g = F.affine_grid(theta, (1, 1) + sizes, align_corners=True).requires_grad_()
    y = F.grid_sample(x, g, padding_mode=padding_mode, align_corners=True)
    np.testing.assert_allclose(y.detach().cpu().numpy().ravel(), np.arange(n), atol=1e-12)
    (gg,) = torch.autograd.grad(y.sum(), g)
    gg = gg.cpu().numpy()[0]
    strides = np.cumprod((1,) + sizes[::-1])[:-1]       # value steps along x, y, z
    for c in range(nd):
        axis = nd - 1 - c                               # grid component c moves along spatial axis nd-1-c
        size = sizes[axis]
        exp = np.full(size, strides[c] * (size - 1) / 2)
        exp[0] = exp[-1] = 0.0
        shape = [1] * nd
        shape[axis] = size
        np.testing.assert_allclose(gg[..., c], np.broadcast_to(exp.reshape(shape), sizes), atol=1e-12)


def _reflect_or_clamp(i: int, n: int, mode: str) -> int:
    if mode == "replicate":
        return min(max(i, 0), n - 1)
    return -i if i < 0 else (2 * (n - 1) - i if i >= n else i)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_reflect_and_replicate_pad_with_a_crop_read_the_uncropped_input(device, mode):
    """PyTorch's reflection/replication kernels map output j of a dim to input j - left, reflected (or clamped) in
    the input's own coordinates, so a negative pad on one side does not shrink what the other side's pad reads:
    5 elements padded (-5, 1) give [x3] (reflect) / [x4] (replicate), a height of 4 padded (2, -2) keeps 4 rows
    [x2, x1, x0, x1].  coretorch cropped first and padded the cropped tensor: an empty result, 3 rows, or an
    expand error (replicate)."""
    x = torch.arange(5.0, dtype=torch.float64, device=device).reshape(1, 1, 5).requires_grad_()
    for lo, hi in ((-5, 1), (-6, 2), (3, -4), (-7, 3), (2, -1), (-1, 4)):
        y = F.pad(x, (lo, hi), mode=mode)
        exp = [_reflect_or_clamp(j - lo, 5, mode) for j in range(5 + lo + hi)]
        np.testing.assert_array_equal(y.detach().cpu().numpy().ravel(), exp)
        (g,) = torch.autograd.grad(y.sum(), x)
        np.testing.assert_array_equal(g.cpu().numpy().ravel(), np.bincount(exp, minlength=5))
    x2 = torch.arange(20.0, dtype=torch.float64, device=device).reshape(1, 1, 4, 5)
    y2 = F.pad(x2, (1, -2, 2, -2), mode=mode)
    rows = [_reflect_or_clamp(j - 2, 4, mode) for j in range(4)]
    cols = [_reflect_or_clamp(j - 1, 5, mode) for j in range(4)]
    np.testing.assert_array_equal(y2.cpu().numpy()[0, 0], np.arange(20.0).reshape(4, 5)[np.ix_(rows, cols)])


def test_pad_size_errors_are_pytorchs(device):
    """PyTorch: reflect/replicate outputs with no non-empty padded dim raise 'input (W: 5) is too small. Calculated
    output W: -1' (a negative dim among non-empty ones: 'Trying to create tensor with negative dimension'); a
    constant pad that crops more than the dim raises narrow()'s 'length must be non-negative'; circular's
    'Negative padding value is resulting in an empty dimension'; the reflect pad check names the argument of the
    dim (#4 for W, #6 for H); an unsupported non-constant padding size lists the supported combinations.
    coretorch returned empty results for the crops, named argument #4 for every dim and said 'Only 2D, 3D, 4D, 5D
    padding with non-constant padding are supported for now'."""
    x1 = torch.ones(1, 2, 5, device=device)
    for mode in ("reflect", "replicate"):
        with pytest.raises(RuntimeError, match=r"^input \(W: 5\) is too small\. Calculated output W: -1$"):
            F.pad(x1, (-3, -3), mode=mode)
        sep = " " if mode == "replicate" else ""
        with pytest.raises(RuntimeError, match=rf"^input \(H: 4, W: 5{sep}\) is too small\. Calculated output H: 0 "
                                               r"W: 0$"):
            F.pad(torch.ones(1, 2, 4, 5, device=device), (-5, 0, -4, 0), mode=mode)
        with pytest.raises(RuntimeError, match=r"^input \(D: 3 H: 4, W: 5\) is too small\. Calculated output D: 0 "
                                               r"H: 0 W: 0$"):
            F.pad(torch.ones(1, 2, 3, 4, 5, device=device), (-5, 0, -4, 0, -3, 0), mode=mode)
        with pytest.raises(RuntimeError, match=r"negative dimension -1: \[1, 2, 3, 4, -1\]"):
            F.pad(torch.ones(1, 2, 3, 4, 5, device=device), (-6, 0, 0, 0, 0, 0), mode=mode)
        with pytest.raises(NotImplementedError, match="^Padding size 2 is not supported for 4D input tensor.\n"
                                                      "Supported combinations for non-constant padding:"):
            F.pad(torch.ones(1, 2, 4, 5, device=device), (1, 2), mode=mode)
    with pytest.raises(RuntimeError, match=r"^Argument #6: Padding size should be less than"):
        F.pad(torch.ones(1, 2, 4, 5, device=device), (0, 0, 0, 4), mode="reflect")
    with pytest.raises(RuntimeError, match=r"^Argument #4: Padding size should be less than"):
        F.pad(torch.ones(1, 2, 4, 5, device=device), (5, 0, 0, 0), mode="reflect")
    for p in ((-3, -3), (-7, 3), (2, -6)):
        with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative"):
            F.pad(x1, p)
    with pytest.raises(RuntimeError, match="Negative padding value is resulting in an empty dimension"):
        F.pad(x1, (-3, -3), mode="circular")


def test_unfold_fold_and_channel_shuffle_argument_errors(device):
    """PyTorch's im2col/col2im: a window argument of another length than 2 is a RuntimeError 'It is expected
    kernel_size equals to 2, but got size 3' (a 1-tuple is not broadcast); unfold of a 5-D input or of one with an
    empty channel/spatial dim is 'Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other
    non-zero dimensions'; integer inputs are NotImplementedError ('"im2col_out_cpu" not implemented for 'Long''),
    bool works; fold's divisibility message ends with a period; channel_shuffle of a 2-D input says 'expects input
    with > 2 dims'.  coretorch raised ValueError/NotImplementedError, unfolded an empty channel dim and integer
    inputs."""
    x = torch.ones(1, 1, 3, 3, device=device)
    with pytest.raises(RuntimeError, match="^It is expected kernel_size equals to 2, but got size 3$"):
        F.unfold(x, (2, 2, 2))
    with pytest.raises(RuntimeError, match="^It is expected padding equals to 2, but got size 1$"):
        F.unfold(x, 2, padding=(1,))
    with pytest.raises(RuntimeError, match="^It is expected output_size equals to 2, but got size 3$"):
        F.fold(torch.ones(1, 4, 4, device=device), (3, 3, 3), 2)
    for shape in ((1, 1, 3, 3, 3), (1, 0, 3, 3), (1, 1, 0, 3)):
        with pytest.raises(RuntimeError, match=r"^Expected 3D or 4D \(batch mode\) tensor with possibly 0 batch size "
                                               rf"and other non-zero dimensions for input, but got: \[{shape[0]}, "):
            F.unfold(torch.ones(shape, device=device), 1)
    assert F.unfold(torch.ones(0, 1, 3, 3, device=device), 2).shape == (0, 4, 4)
    with pytest.raises(RuntimeError, match=r"^Expected 2D or 3D \(batch mode\) tensor .* but got: \[2, 0, 20\]$"):
        F.fold(torch.ones(2, 0, 20, device=device), (5, 6), 2)
    with pytest.raises(NotImplementedError, match="\"im2col_out_cpu\" not implemented for 'Long'"):
        F.unfold(x.long(), 2)
    with pytest.raises(NotImplementedError, match="\"col2im_out_cpu\" not implemented for 'Int'"):
        F.fold(torch.ones(1, 4, 4, device=device, dtype=torch.int32), 3, 2)
    assert F.unfold(x.bool(), 2).dtype == torch.bool
    with pytest.raises(RuntimeError, match=r"input.size\(1\)=13 and kernel_size=\(2, 2\)\.$"):
        F.fold(torch.ones(2, 13, 20, device=device), (5, 6), 2)
    with pytest.raises(RuntimeError, match=r"^channel_shuffle expects input with > 2 dims, but got input with sizes "
                                           r"\[2, 6\]$"):
        F.channel_shuffle(torch.ones(2, 6, device=device), 2)


def test_embedding_bag_max_follows_pytorchs_first_element_then_strictly_greater_rule_with_nan(device):
    """PyTorch's max bag keeps the bag's first (non-padding) element and replaces it only by a strictly greater
    one: a NaN wins only when it comes first (NaN > x is false), otherwise the maximum of the other elements.
    Rows [1, nan], [2, 0], [nan, 5] give [2, nan]; coretorch's amax took NaN as the maximum, found no element equal
    to it and returned the last element of the input (-inf) in both columns."""
    w = torch.tensor([[1.0, np.nan], [2.0, 0.0], [np.nan, 5.0], [-np.inf, -np.inf], [np.nan, 3.0]],
                     dtype=torch.float64, device=device, requires_grad=True)
    out = F.embedding_bag(torch.tensor([0, 1, 2, 3, 3, 4, 3, 1], device=device), w,
                          torch.tensor([0, 3, 5], device=device), mode="max")
    exp = np.array([[2.0, np.nan], [-np.inf, -np.inf], [np.nan, 3.0]])
    np.testing.assert_array_equal(out.detach().cpu().numpy(), exp)
    (g,) = torch.autograd.grad(out, w, torch.ones_like(out))
    gexp = np.zeros((5, 2))
    gexp[1, 0] = gexp[0, 1] = 1            # bag 0: the 2 of row 1, the NaN of row 0 (first)
    gexp[3, 0] = gexp[3, 1] = 1            # bag 1: row 3 (its first element, ties keep it)
    gexp[4, 0] = gexp[4, 1] = 1            # bag 2: row 4's NaN first in column 0, its 3 the maximum of column 1
    np.testing.assert_array_equal(g.cpu().numpy(), gexp)
    # a padding element does not count as the bag's first
    pad = F.embedding_bag(torch.tensor([[1, 0]], device=device), w.detach(), mode="max", padding_idx=1)
    np.testing.assert_array_equal(pad.cpu().numpy(), [[1.0, np.nan]])


def test_embedding_bag_skips_a_padding_row_holding_inf(device):
    """PyTorch's embedding_bag leaves padding_idx entries out of the sum: a padding row holding inf does not reach
    the result.  coretorch multiplied the padding rows by 0 (inf * 0 = NaN in the bag's result)."""
    w = torch.tensor([[1.0, np.inf], [2.0, 0.0], [np.nan, 5.0]], dtype=torch.float64, device=device)
    out = F.embedding_bag(torch.tensor([0, 1, 2, 1], device=device), w, torch.tensor([0, 2], device=device),
                          mode="sum", padding_idx=0)
    np.testing.assert_array_equal(out.cpu().numpy(), [[2.0, 0.0], [np.nan, 5.0]])
    mean = F.embedding_bag(torch.tensor([[0, 1], [2, 1]], device=device), w, mode="mean", padding_idx=2)
    np.testing.assert_array_equal(mean.cpu().numpy(), [[1.5, np.inf], [2.0, 0.0]])


def test_embedding_argument_errors_are_pytorchs(device):
    """PyTorch: embedding_bag's out-of-range index is a RuntimeError 'embedding_bag: Expected idx >= 0 && idx <
    num_embeddings but found idx to be 9' (checked in host memory; coretorch raised embedding's IndexError); its
    mode error says 'mode has to be one of sum, mean or max'; a sparse embedding gradient with scale_grad_by_freq
    raises 'embedding_backward: scale_grad_by_freq not supported with sparse gradients' in backward (coretorch
    computed it); one_hot of an empty tensor with num_classes <= 0 cannot infer the classes, a float num_classes is
    a TypeError (coretorch returned empty results)."""
    w = torch.randn(7, 3, dtype=torch.float64, device=device, requires_grad=True)
    if device == "cpu":
        for bad in (9, -1):
            with pytest.raises(RuntimeError, match=rf"^embedding_bag: Expected idx >= 0 && idx < num_embeddings but "
                                                   rf"found idx to be {bad}$"):
                F.embedding_bag(torch.tensor([0, bad, 3]), w, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="^mode has to be one of sum, mean or max$"):
        F.embedding_bag(torch.tensor([0, 1], device=device), w, torch.tensor([0], device=device), mode="min")
    for y in (F.embedding(torch.tensor([0, 2, 2], device=device), w, sparse=True, scale_grad_by_freq=True),
              F.embedding_bag(torch.tensor([0, 2, 2], device=device), w, torch.tensor([0], device=device),
                              sparse=True, scale_grad_by_freq=True)):
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
            y.sum().backward()
    empty = torch.zeros(0, dtype=torch.int64, device=device)
    for nc in (0, -1):
        with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor"):
            F.one_hot(empty, nc)
    with pytest.raises(TypeError, match=r"one_hot\(\): argument 'num_classes' \(position 2\) must be int, not "
                                        r"float"):
        F.one_hot(torch.tensor([0, 1], device=device), 3.0)


def test_area_interpolation_of_integers_names_the_pool_of_its_dimensionality(device):
    """PyTorch's 'area' mode is adaptive average pooling: a 5-D integer input raises adaptive_avg_pool3d's
    '"adaptive_avg_pool3d_cpu" not implemented for 'Long'' (3-D and 4-D ones the 2-D pool's); coretorch named
    adaptive_avg_pool2d for every dimensionality."""
    with pytest.raises(NotImplementedError, match="\"adaptive_avg_pool3d_cpu\" not implemented for 'Long'"):
        F.interpolate(torch.ones(1, 1, 2, 2, 2, dtype=torch.int64, device=device), scale_factor=2, mode="area")
    with pytest.raises(NotImplementedError, match="\"adaptive_avg_pool2d\" not implemented for 'Byte'"):
        F.interpolate(torch.ones(1, 1, 2, dtype=torch.uint8, device=device), scale_factor=2, mode="area")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_bilinear_is_the_float32_result_rounded_once(device, dtype):
    """PyTorch's 2-D bilinear kernel computes float16/bfloat16 inputs in float32 (float32 weights) and rounds the
    result once: it equals interpolating the input converted to float32 and rounding.  coretorch computed every
    product and sum in the reduced dtype (results 1-2 ulps away in most elements)."""
    x = torch.tensor(np.random.RandomState(1).randn(2, 3, 5, 7), device=device).to(dtype)
    for ac in (False, True):
        y = F.interpolate(x, scale_factor=1.7, mode="bilinear", align_corners=ac)
        ref = F.interpolate(x.float(), scale_factor=1.7, mode="bilinear", align_corners=ac).to(dtype)
        assert y.dtype == dtype
        np.testing.assert_array_equal(y.float().cpu().numpy(), ref.float().cpu().numpy())


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_that_only_crops_returns_a_new_tensor(device, mode):
    """PyTorch's pad always returns a new tensor (constant_pad_nd clones a crop): writing to F.pad(x, (-1, -1))
    leaves x unchanged.  coretorch's constant and circular modes returned a view of the input for pads that only
    crop (and circular for zero pads), so the write changed x."""
    x = torch.zeros(1, 2, 5, device=device)
    y = F.pad(x, (-1, -1), mode=mode)
    y[..., 0] = 5.0
    z = F.pad(x, (0, 0, 0, 0) if mode == "constant" else (0, 0), mode=mode)
    z[..., 1] = 7.0
    np.testing.assert_array_equal(x.cpu().numpy(), np.zeros((1, 2, 5)))
    assert y.is_contiguous() and y.shape == (1, 2, 3)


def test_pixel_and_channel_shuffles_return_new_tensors(device):
    """PyTorch's pixel_shuffle, pixel_unshuffle and channel_shuffle copy into a new tensor: with a factor (groups)
    of 1 or a 1x1 image, writing to the result leaves the input unchanged.  coretorch's reshape/permute gave a
    view of the input there, so the write changed it."""
    for fn, arg, shape in ((F.pixel_shuffle, 1, (2, 4, 3, 3)), (F.pixel_unshuffle, 1, (2, 4, 3, 3)),
                           (F.channel_shuffle, 1, (2, 4, 3, 3)), (F.pixel_shuffle, 2, (2, 4, 1, 1))):
        x = torch.zeros(shape, device=device)
        y = fn(x, arg)
        y.view(-1)[0] = 3.0
        assert float(x.abs().sum()) == 0.0 and y.is_contiguous()


def test_grid_sample_dtype_errors_are_pytorchs(device):
    """PyTorch's grid_sample of integer or bool tensors raises its kernels' NotImplementedError
    ('"grid_sampler_2d_cpu_kernel_impl" not implemented for 'Long'', 3-D: '"grid_sampler3d_cpu"'), and an input and
    grid of different dtypes 'expected scalar type Float but found Double'.  coretorch sampled integer tensors and
    worded the dtype mismatch otherwise."""
    with pytest.raises(NotImplementedError, match="\"grid_sampler_2d_cpu_kernel_impl\" not implemented for 'Long'"):
        F.grid_sample(torch.ones(1, 1, 2, 2, dtype=torch.int64, device=device),
                      torch.zeros(1, 1, 1, 2, dtype=torch.int64, device=device), align_corners=False)
    with pytest.raises(NotImplementedError, match="\"grid_sampler3d_cpu\" not implemented for 'Bool'"):
        F.grid_sample(torch.ones(1, 1, 2, 2, 2, dtype=torch.bool, device=device),
                      torch.zeros(1, 1, 1, 1, 3, dtype=torch.bool, device=device), align_corners=False)
    with pytest.raises(RuntimeError, match="^expected scalar type Float but found Double$"):
        F.grid_sample(torch.ones(1, 1, 2, 2, device=device),
                      torch.zeros(1, 1, 1, 2, dtype=torch.float64, device=device), align_corners=False)


def test_output_size_of_a_numpy_float32_scale_factor(device):
    """PyTorch takes floor(size * scale_factor) in double in its kernels (25 * float32(0.12) = 2.99999... -> 2),
    but with recompute_scale_factor=True (and mode 'area', which forces it) its Python int(size * scale_factor) in
    the factor's own type (a numpy float32 product: 3.0 -> 3).  coretorch multiplied in the factor's type for both
    (3) and floored for both."""
    x = torch.zeros(1, 1, 25, device=device)
    sf = np.float32(0.12)
    assert F.interpolate(x, scale_factor=sf).shape[-1] == 2
    assert F.interpolate(x, scale_factor=sf, recompute_scale_factor=True).shape[-1] == 3
    assert F.interpolate(x, scale_factor=sf, mode="area").shape[-1] == 3


def test_affine_grid_batch_mismatch_is_pytorchs_bmm_error(device):
    """PyTorch's affine_grid multiplies the base grid by the matrices with bmm: a size whose batch differs from
    theta's raises 'Expected size for first two dimensions of batch2 tensor to be: [3, 3] but got: [2, 3].'.
    coretorch's broadcast matmul then failed in a reshape ('shape ... is invalid for input of size ...')."""
    with pytest.raises(RuntimeError, match=r"^Expected size for first two dimensions of batch2 tensor to be: "
                                           r"\[3, 3\] but got: \[2, 3\]\.$"):
        F.affine_grid(torch.zeros(2, 2, 3, device=device), (3, 1, 4, 5), align_corners=False)
    with pytest.raises(RuntimeError, match=r"to be: \[1, 4\] but got: \[2, 4\]\.$"):
        F.affine_grid(torch.zeros(2, 3, 4, device=device), (1, 1, 2, 2, 2), align_corners=False)
