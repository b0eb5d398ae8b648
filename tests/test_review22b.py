"""Review 22b (eager): views and shape ops, a second pass, on every installed backend: which ops return views and
which return tensors of their own (writes through, ``_base``, strides and layouts of the results), ``resize_``,
``repeat``/``tile``/``repeat_interleave`` arguments.  PyTorch 2.13's behaviour is the spec; each test's docstring
says what PyTorch does and what coretorch did before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("mode,pad", [("constant", (-1, 0)), ("constant", (-1, -1, 0, -1)),
                                      ("replicate", (-1, 0)), ("reflect", (0, 0)), ("circular", (0, 0)),
                                      ("reflect", (-1, 0, 0, 0))])
def test_pad_that_only_crops_gives_a_new_tensor(device, mode, pad):
    """PyTorch's ``F.pad`` always returns a new tensor (``constant_pad_nd`` clones the narrowed input; the
    reflection/replication/circular kernels allocate): writing into the result leaves the input as it was.
    coretorch before: pads of 0 and negative pads (crops) gave the input itself or a view of it, so
    ``F.pad(x, (-1, 0)).fill_(0)`` zeroed ``x``."""
    x = torch.arange(1.0, 9.0, device=device).view(1, 2, 4)
    y = F.pad(x, pad, mode=mode)
    assert y is not x and y._base is None
    y.fill_(0)
    np.testing.assert_array_equal(_np(x), np.arange(1.0, 9.0).reshape(1, 2, 4))


@pytest.mark.parametrize("op", ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle1", "channel_shuffle2"])
def test_pixel_and_channel_shuffles_give_new_tensors(device, op):
    """PyTorch's ``pixel_shuffle``/``pixel_unshuffle``/``channel_shuffle`` kernels allocate their results (in the
    input's suggested memory format).  coretorch before: a factor of 1 (or a shuffle that moves nothing, 2 channels
    in 2 groups) returned a view of the input, so a write into the result changed the input."""
    x = torch.arange(1.0, 9.0, device=device).view(1, 2, 4, 1)
    fn = {"pixel_shuffle": lambda a: F.pixel_shuffle(a, 1), "pixel_unshuffle": lambda a: F.pixel_unshuffle(a, 1),
          "channel_shuffle1": lambda a: F.channel_shuffle(a, 1),
          "channel_shuffle2": lambda a: F.channel_shuffle(a, 2)}[op]
    y = fn(x)
    assert y._base is None
    y.fill_(0)
    np.testing.assert_array_equal(_np(x), np.arange(1.0, 9.0).reshape(1, 2, 4, 1))


def test_pixel_shuffle_of_a_leaf_can_be_changed_in_place(device):
    """PyTorch: ``F.pixel_shuffle(w, 1)`` of a leaf that requires grad is a new non-leaf, ``relu_()`` on it is
    recorded.  coretorch before: the result was a view of the leaf and the in-place op raised."""
    w = torch.randn(1, 4, 2, 2, device=device, dtype=torch.float64, requires_grad=True)
    y = F.pixel_shuffle(w, 1)
    y.relu_()
    y.sum().backward()
    np.testing.assert_array_equal(_np(w.grad), (_np(w) > 0).astype(np.float64))


def test_shuffles_and_pads_take_the_inputs_suggested_memory_format(device):
    """PyTorch's kernels allocate their outputs in the input's suggested memory format: ``pixel_shuffle`` of a
    channels-last input is channels-last (strides ``(48, 1, 8, 1)`` for a ``(2, 1, 6, 8)`` result), a constant,
    reflection or replication pad of one too, a circular pad row-major; of a permuted 3-d input row-major.
    coretorch before: the pixel/channel shuffles of a channels-last input were row-major, pads too (or the input
    itself)."""
    x = torch.arange(96.0, device=device).view(2, 4, 3, 4).contiguous(memory_format=torch.channels_last)
    assert F.pixel_shuffle(x, 2).stride() == (48, 1, 8, 1)
    assert F.channel_shuffle(x, 2).stride() == (48, 1, 16, 4)
    assert F.pad(x, (1, 1)).stride() == (72, 1, 24, 4)
    assert F.pad(x, (0, 0, 0, 0), mode="reflect").stride() == (48, 1, 16, 4)
    assert F.pad(x, (-1, -1, 1, 0), mode="replicate").stride() == (32, 1, 8, 4)
    assert F.pad(x, (0, 0, 0, 0), mode="circular").stride() == (48, 12, 4, 1)
    xt = torch.arange(24.0, device=device).view(2, 3, 4).permute(0, 2, 1)
    assert F.pad(xt, (0, 0), mode="reflect").stride() == (12, 3, 1)
    assert F.pad(xt, (-1, 0)).stride() == (8, 1, 4)  # (constant crops: a clone preserving the stride order)


def test_roll_and_rot90_return_tensors_of_their_own(device):
    """PyTorch: ``roll`` (without dims) and ``rot90`` return new tensors (``_base`` None; rot90 transposes its flip
    in place), so ``detach_()`` works and a result made under ``no_grad`` can be changed in place in grad mode;
    ``roll``'s grad_fn is ``RollBackward0``.  coretorch before: both were views of an internal temporary, so
    ``detach_()`` raised "Can't detach views in-place" and ``y.mul_(w)`` raised the no_grad-view error."""
    x = torch.arange(6.0, device=device).view(2, 3)
    w = torch.tensor(2.0, device=device, requires_grad=True)
    for f in (lambda a: a.roll(1), lambda a: a.rot90(), lambda a: a.rot90(3), lambda a: torch.kron(a, a),
              lambda a: a.max(1)[0], lambda a: torch.combinations(a[0])):
        assert f(x)._base is None
        with torch.no_grad():
            y = f(x)
        ref = _np(y) * 2
        y.mul_(w)
        np.testing.assert_array_equal(_np(y), ref)
        xg = x.clone().requires_grad_()
        z = f(xg)
        z.detach_()
        assert z.grad_fn is None and not z.requires_grad
    assert type(x.clone().requires_grad_().roll(1).grad_fn).__name__ == "RollBackward0"


def test_flip_keeps_the_inputs_layout_and_rot90_follows(device):
    """PyTorch's ``flip`` lays its result out as the input (TensorIterator): a channels-last input gives a
    channels-last flip, a transposed one a transposed flip; ``rot90`` is that flip transposed (so ``x.t().rot90()``
    is row-major and ``.view(-1)`` works) and ``rot90(x, 0)`` a row-major clone.  coretorch before: flips were
    row-major, so ``x.t().rot90().view(-1)`` raised."""
    x = torch.arange(96.0, device=device).view(2, 4, 3, 4).contiguous(memory_format=torch.channels_last)
    assert x.flip(0).stride() == (48, 1, 16, 4)
    assert x.rot90(1, (1, 2)).stride() == (48, 16, 1, 4)
    assert x.rot90(0).stride() == (48, 12, 4, 1)
    a = torch.arange(6.0, device=device).view(2, 3)
    r = a.t().rot90()
    assert r.is_contiguous()
    np.testing.assert_array_equal(_np(r.view(-1)), np.rot90(np.arange(6.0).reshape(2, 3).T).reshape(-1))
    xt = torch.arange(24.0, device=device).view(2, 3, 4).permute(2, 0, 1)
    y = xt.flip(0, 2)
    assert y.stride() == (1, 12, 4)
    np.testing.assert_array_equal(_np(y), np.flip(np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1), (0, 2)))


def test_flip_gradient_of_a_permuted_input(device):
    """The flip of a permuted input (now computed in its stride order) still has the flip's gradient."""
    from coretorch.autograd import gradcheck
    x = torch.randn(3, 4, 2, device=device, dtype=torch.float64).permute(2, 0, 1).requires_grad_()
    assert gradcheck(lambda a: a.flip(0, 2) * torch.arange(24.0, device=device, dtype=torch.float64).view(2, 3, 4),
                     (x,))


def test_resize_reads_the_storage_in_order(device):
    """PyTorch's ``resize_`` makes the tensor C-contiguous over its storage from its offset ("ignoring the current
    strides"): a transposed copy resized to 6 elements reads them in storage order, a view stays a view of its
    base (writes reach it) and may grow inside the base's storage, ``memory_format=`` restrides even at the same
    size.  coretorch before: the elements were copied in logical order into a buffer of the tensor's own."""
    x = torch.arange(6.0, device=device).view(2, 3).t().contiguous().t()   # storage [0, 3, 1, 4, 2, 5]
    x.resize_(6)
    np.testing.assert_array_equal(_np(x), [0, 3, 1, 4, 2, 5])
    b = torch.arange(6.0, device=device).view(2, 3)
    v = b.t()
    v.resize_(6)
    np.testing.assert_array_equal(_np(v), np.arange(6.0))
    v[0] = -1.0
    assert float(b[0, 0]) == -1.0
    c = torch.arange(6.0, device=device)
    w = c[:3]
    w.resize_(5)
    np.testing.assert_array_equal(_np(w), [0, 1, 2, 3, 4])
    m = torch.arange(24.0, device=device).view(1, 2, 3, 4)
    m.resize_(1, 2, 3, 4, memory_format=torch.channels_last)
    assert m.stride() == (24, 1, 8, 2)
    np.testing.assert_array_equal(_np(m).transpose(0, 2, 3, 1).reshape(-1), np.arange(24.0))
    r = torch.arange(6.0, device=device).view(2, 3).t().contiguous().t()
    r.resize_as_(torch.zeros(3, 2))
    np.testing.assert_array_equal(_np(r).reshape(-1), [0, 3, 1, 4, 2, 5])


def test_repeat_and_tile_with_a_negative_count_raise_runtime_error(device):
    """PyTorch: ``x.repeat(-1, 1)`` of a (2, 3) tensor raises RuntimeError("Trying to create tensor with negative
    dimension -2: [-2, 3]").  coretorch before: numpy's ValueError on cpu, a pyopencl TypeError on opencl."""
    x = torch.arange(6.0, device=device).view(2, 3)
    with pytest.raises(RuntimeError, match=r"negative dimension -2: \[-2, 3\]"):
        x.repeat(-1, 1)
    with pytest.raises(RuntimeError, match=r"negative dimension -3: \[-3\]"):
        torch.arange(3.0, device=device).tile((-1,))


def test_repeat_interleave_checks_output_size_and_a_0d_inputs_dim(device):
    """PyTorch: ``repeat_interleave(2, output_size=7)`` of 4 elements raises RuntimeError ("Invalid output_size,
    expected 8 but got 7"), and a ``dim`` on a 0-d input raises IndexError.  coretorch before: the int count's
    ``output_size`` was ignored and the 0-d input was repeated."""
    x = torch.arange(4.0, device=device)
    with pytest.raises(RuntimeError, match="expected 8 but got 7"):
        x.repeat_interleave(2, output_size=7)
    assert x.repeat_interleave(2, output_size=8).shape == (8,)
    s = torch.tensor(5.0, device=device)
    with pytest.raises(IndexError):
        s.repeat_interleave(3, dim=0)
    with pytest.raises(IndexError):
        s.repeat_interleave(torch.tensor(3, device=device), dim=0)
    np.testing.assert_array_equal(_np(s.repeat_interleave(3)), [5.0, 5.0, 5.0])


def test_diff_of_order_0_is_a_copy(device):
    """PyTorch: ``torch.diff(x, n=0)`` is a clone of ``x`` (its layout kept), so writing into it leaves ``x`` as
    it was.  coretorch before: ``x`` itself was returned."""
    x = torch.arange(24.0, device=device).view(2, 3, 4)
    y = torch.diff(x, n=0)
    assert y is not x and y._base is None
    y.fill_(0)
    np.testing.assert_array_equal(_np(x), np.arange(24.0).reshape(2, 3, 4))
    assert torch.diff(x.transpose(0, 2), n=0).stride() == (1, 4, 12)


def test_composites_ending_on_a_reshape_are_not_views(device):
    """PyTorch's ``F.linear`` without a bias (matmul's ``_unsafe_view``), ``F.group_norm``, ``F.fold``,
    ``F.affine_grid`` and ``Tensor.put`` return new tensors (``_base`` None), so ``detach_()`` on them works;
    ``F.fold`` with padding is row-major.  coretorch before: views of the op's own temporary (``detach_()``
    raised), and ``F.fold(..., padding=1)`` a strided view of the padded plane."""
    x = torch.randn(1, 2, 3, 4, device=device, requires_grad=True)
    eye = torch.eye(4, device=device)
    outs = [F.linear(x, eye), F.group_norm(x, 1), F.fold(F.unfold(x, 1), (3, 4), 1),
            x.put(torch.tensor([0], device=device), torch.tensor([5.0], device=device))]
    outs.append(F.affine_grid(torch.eye(2, 3, device=device).unsqueeze(0).requires_grad_(), (1, 1, 2, 2),
                              align_corners=False))
    for y in outs:
        assert y._base is None
        y.detach_()
        assert not y.requires_grad
    f = F.fold(F.unfold(x, 3, padding=1), (3, 4), 3, padding=1)
    assert f.is_contiguous() and f._base is None


def test_as_strided_scatter_passes_the_gradient_to_src_of_an_input_without_grad(device):
    """PyTorch: ``as_strided_scatter(a, src, ...)`` with ``a`` not requiring grad and ``src`` requiring it gives
    a result that requires grad, src's gradient the upstream gradient at the scattered positions.  coretorch
    before: the result was taken as a view of the storage copy before src was written into it, so it never
    required grad (src's gradient was lost, silently in a larger graph)."""
    a = torch.zeros(3, 4, dtype=torch.float64, device=device)
    src = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, device=device, requires_grad=True)
    y = torch.as_strided_scatter(a, src, (2, 2), (1, 2), 1)
    assert y.requires_grad and y._base is None
    np.testing.assert_array_equal(_np(y).reshape(-1)[[1, 3, 2, 4]], [1.0, 2.0, 3.0, 4.0])
    g = torch.arange(12.0, dtype=torch.float64, device=device).view(3, 4)
    (gs,) = torch.autograd.grad(y, src, g)
    np.testing.assert_array_equal(_np(gs), [[1.0, 3.0], [2.0, 4.0]])


@pytest.mark.xfail(strict=True, reason="a view taken before its base (which did not require grad) was changed in "
                   "place by a value that requires grad keeps requires_grad=False: ops read the view's _rg flag "
                   "directly and no registry of a base's views exists to update them (a per-view registry would "
                   "cost every view creation); PyTorch regenerates the view's grad_fn")
def test_a_view_taken_before_its_base_got_a_graph_requires_grad(device):
    """PyTorch: ``buf = zeros(3, 3); t = buf.t(); buf[1] = w`` (``w`` requires grad) makes ``t`` require grad
    (its grad_fn regenerated, ``AsStridedBackward0``), so ``(t * c).sum().backward()`` gives ``w.grad`` = column 1
    of ``c``.  coretorch: ``t.requires_grad`` stays False (the backward raises, or in a larger graph w's
    gradient through t is silently missing)."""
    buf = torch.zeros(3, 3, dtype=torch.float64, device=device)
    t = buf.t()
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, device=device, requires_grad=True)
    buf[1] = w
    c = torch.arange(9.0, dtype=torch.float64, device=device).view(3, 3)
    assert t.requires_grad
    (t * c).sum().backward()
    np.testing.assert_array_equal(_np(w.grad), [1.0, 4.0, 7.0])


def test_view_dtype_of_an_empty_tensor_checks_the_last_size(device):
    """PyTorch: ``zeros(0, 3).view(torch.float64)`` of a float32 tensor raises RuntimeError ("self.size(-1) must be
    divisible by 2 to view Float as Double ..."), though it has no element; ``zeros(3, 0)`` views fine.  coretorch
    before: numpy's ValueError on cpu, a (0, 1) tensor on opencl."""
    with pytest.raises(RuntimeError, match=r"self.size\(-1\) must be divisible by 2"):
        torch.zeros(0, 3, device=device).view(torch.float64)
    assert torch.zeros(3, 0, device=device).view(torch.float64).shape == (3, 0)
    assert torch.zeros(0, 4, device=device).view(torch.float64).shape == (0, 2)


def test_sum_to_size_requires_a_size():
    """PyTorch: ``x.sum_to_size()`` raises TypeError (missing "size"), for a 0-d tensor too.  coretorch before: the
    0-d tensor was returned."""
    with pytest.raises(TypeError, match="size"):
        torch.tensor(1.0).sum_to_size()


def test_shape_errors_carry_pytorchs_messages(device):
    """PyTorch's messages for shape errors (coretorch's before in brackets): a repeated dim names the wrapped dim
    ("dim 2 appears multiple times in the list of dims" [``mean(): dim [-1, 2] ...``]), ``permute`` and ``movedim``
    have their own ("permute(): duplicate dims are not allowed.", "movedim: repeated dim in `source` ([0, 0])",
    the length check ["permute: number of dimensions ..."]), ``unflatten`` names the dim ("unflatten: Provided
    sizes [5, -1] don't multiply up to the size of dim 1 (6) ..." [reshape's]), ``reshape`` of 0 elements with -1
    says it is ambiguous, a negative size names its index, ``expand``'s new leading -1 names its dim,
    ``tensor_split`` names the dtype as "Float"."""
    x = torch.zeros(2, 3, 4, device=device)
    cases = [(lambda: x.mean((-1, 2)), "^dim 2 appears multiple times in the list of dims$"),
             (lambda: x.flip(0, 0), "^dim 0 appears multiple times"),
             (lambda: x.permute(0, 0, 1), r"^permute\(\): duplicate dims are not allowed\.$"),
             (lambda: x.movedim((0, 0), (1, 2)), r"^movedim: repeated dim in `source` \(\[0, 0\]\)$"),
             (lambda: x.movedim((0, 1), (2, 2)), r"^movedim: repeated dim in `destination` \(\[2, 2\]\)$"),
             (lambda: x.movedim((0, 1), (2,)), r"^movedim: Invalid source or destination dims: source \(\[0, 1\] "
                                               r"dims\) should contain the same number of dims as destination"),
             (lambda: x.view(2, 12).unflatten(1, (5, -1)), r"^unflatten: Provided sizes \[5, -1\] don't multiply up "
                                                           r"to the size of dim 1 \(12\) in the input tensor$"),
             (lambda: x.view(2, 12).unflatten(1, ()), "^unflatten: sizes must be non-empty$"),
             (lambda: torch.zeros(0, device=device).reshape(-1, 0), r"^cannot reshape tensor of 0 elements into "
                                                                     r"shape \[-1, 0\] because the unspecified"),
             (lambda: x.view(-2, 12), r"^invalid shape dimension -2 at index 0 of shape \[-2, 12\]$"),
             (lambda: torch.zeros(3, 1, device=device).expand(-1, 3, 4),
              r"^The expanded size of the tensor \(-1\) isn't allowed in a leading, non-existing dimension 0$"),
             (lambda: x.rot90(1, (0, -3)), "dim0 = 0 and dim1 = -3$"),
             (lambda: x.tensor_split(torch.tensor([1.0]), 1), "but got Float$")]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn()
    with pytest.raises(IndexError, match=r"^start out of range"):
        x.narrow(1, 7, 0)
    with pytest.raises(RuntimeError, match="For batches of matrices, consider using tensor.mH$"):
        x.H


def test_unsafe_split_pieces_keep_their_storage_offsets(device):
    """PyTorch: ``unsafe_split(arange(10), 3)`` gives pieces that share the input's storage (no ``_base``, a version
    counter each) at storage offsets 0, 3, 6, 9.  coretorch before: the pieces' storage_offset() was 0 (they were
    counted as storages of their own)."""
    x = torch.arange(10.0, device=device)
    pieces = torch.unsafe_split(x, 3)
    assert [p.storage_offset() for p in pieces] == [0, 3, 6, 9]
    assert all(p._base is None for p in pieces)
    pieces[1][0] = 100.0
    assert float(x[3]) == 100.0
    xg = torch.arange(10.0, device=device, dtype=torch.float64, requires_grad=True) * 1
    a, b = torch.unsafe_split(xg, 5)
    a.mul_(2)  # (allowed: not a view to autograd)
    assert type(a.grad_fn).__name__ == "MulBackward0"


def test_split_takes_a_0d_size_and_tensor_split_its_overloads_keywords(device):
    """PyTorch: ``torch.split(x, torch.tensor(4))`` splits into pieces of 4; ``tensor_split`` takes ``sections=``,
    ``indices=`` and ``tensor_indices_or_sections=`` (its overloads' names).  coretorch before: TypeError
    ("iteration over a 0-d tensor", "unexpected keyword argument 'sections'")."""
    x = torch.arange(10.0, device=device)
    assert [p.shape[0] for p in torch.split(x, torch.tensor(4))] == [4, 4, 2]
    assert [p.shape[0] for p in x.tensor_split(sections=4)] == [3, 3, 2, 2]
    assert [p.shape[0] for p in torch.tensor_split(x, indices=[1, 5])] == [1, 4, 5]
    assert [p.shape[0] for p in x.tensor_split(tensor_indices_or_sections=torch.tensor([2]))] == [2, 8]
