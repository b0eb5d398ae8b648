"""The shaping family beyond the op tables: views share memory and version counters, in-place shape methods,
resize_, apply_/map_, new_*, meshgrid's warning, scatter_reduce's tie and zero gradients, grad_fn names, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import available_devices, cpu_kernels_as

DEVICES = available_devices()


def _np(t):
    return t.detach().cpu().numpy()


# ---- views ----------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_diagonal_is_a_view_that_writes_through(device):
    x = torch.zeros(3, 4, device=device)
    d = x.diagonal(1)
    assert d._base is x and tuple(d.shape) == (3,)
    v0 = x._version
    d.fill_(5.0)
    assert x._version == v0 + 1 and d._version == x._version
    want = np.zeros((3, 4), np.float32)
    want[[0, 1, 2], [1, 2, 3]] = 5
    np.testing.assert_array_equal(_np(x), want)


@pytest.mark.parametrize("device", DEVICES)
def test_as_strided_uses_the_storage_offset_of_the_base(device):
    base = torch.arange(10.0, device=device)
    v = base[3:]
    assert v.storage_offset() == 3 and base.storage_offset() == 0
    s = torch.as_strided(v, (2, 2), (1, 2), 0)  # storage offset 0: reads the base from its start
    np.testing.assert_array_equal(_np(s), [[0, 2], [1, 3]])
    assert torch.as_strided(v, (2,), (1,)).tolist() == [3.0, 4.0]  # default: v's own offset
    s.zero_()
    assert base[:4].tolist() == [0.0, 0.0, 0.0, 0.0] and base._version == 1
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        torch.as_strided(v, (5,), (2,), 3)


@pytest.mark.parametrize("device", DEVICES)
def test_strided_views_of_views_gradcheck(device):
    from coretorch.autograd import gradcheck
    x = torch.randn(1, 2, 5, 6, dtype=torch.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: torch.as_strided(t[:, 1:], (2, 3), (6, 1), 37), (x,))  # offset in the base storage
    assert gradcheck(lambda t: t.unfold(2, 3, 2).unfold(3, 2, 2), (x,))  # 2-D patches
    assert gradcheck(lambda t: t.diagonal(0, 2, 3).diagonal(0, 0, 1), (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_as_strided_of_an_expanded_input_gradient(device):
    x = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    e = x.expand(3, 2)  # strides (0, 1): every row aliases x
    y = e.as_strided((2,), (1,))  # reads x[0], x[1] once each
    (y * torch.tensor([3.0, 5.0], device=device)).sum().backward()
    assert x.grad.tolist() == [3.0, 5.0]


@pytest.mark.parametrize("device", DEVICES)
def test_unfold_windows_share_memory_and_gradient_sums_overlaps(device):
    x = torch.arange(6.0, device=device, requires_grad=True)
    u = x.unfold(0, 3, 1)
    assert tuple(u.shape) == (4, 3) and u.grad_fn.name() == "UnfoldBackward0"
    u.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 3.0, 2.0, 1.0]
    y = torch.zeros(5, device=device)
    y.unfold(0, 2, 2)[:, 0].fill_(1.0)
    assert y.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("device", DEVICES)
def test_grad_fn_names(device):
    x = torch.randn(3, 3, device=device, requires_grad=True)
    i = torch.tensor([[0, 1, 2]], device=device)
    names = {
        "TrilBackward0": x.tril(), "TriuBackward0": torch.triu(x), "DiagonalBackward0": x.diagonal(),
        "DiagEmbedBackward0": torch.diag_embed(x), "AsStridedBackward0": x.as_strided((2,), (2,)),
        "RollBackward0": x.roll(1, 0), "ScatterBackward0": x.scatter(0, i, x),
        "ScatterBackward1": x.scatter(0, i, 1.0), "ScatterReduceBackward0": x.scatter_reduce(0, i, x, "amax"),
        "IndexCopyBackward0": x.index_copy(0, i[0], x), "IndexFillBackward0": x.index_fill(0, i[0], 2.0),
        "IndexPutBackward0": x.index_put((i[0],), x, accumulate=True), "TakeBackward0": x.take(i),
        "MaskedScatterBackward0": x.masked_scatter(x > 0, x),
        "IndexReduceBackward0": x.index_reduce(0, i[0], x, "amin"),
        "GatherBackward0": x.take_along_dim(i, 0),
    }
    for name, t in names.items():
        assert t.grad_fn.name() == name


def test_tril_triu_composite_without_the_optional_kernel():
    a = np.arange(24.0).reshape(2, 3, 4)
    with cpu_kernels_as("notri", drop=("tri",)) as dev:
        x = torch.tensor(a, device=dev, requires_grad=True)
        np.testing.assert_array_equal(_np(torch.tril(x, 1)), np.tril(a, 1))
        np.testing.assert_array_equal(_np(x.triu(-1)), np.triu(a, -1))
        torch.triu(x).sum().backward()
        np.testing.assert_array_equal(_np(x.grad), np.triu(np.ones_like(a)))
        b = torch.tensor([[True, True], [True, True]], device=dev)
        assert torch.tril(b).tolist() == [[True, False], [True, True]]


# ---- in-place shape methods -----------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_inplace_shape_methods_keep_the_storage(device):
    x = torch.arange(6.0, device=device).reshape(2, 3)
    y = x.clone()
    alias = y.view(6)
    v0 = y._version
    assert y.t_() is y and tuple(y.shape) == (3, 2) and not y.is_contiguous() and y._version == v0 + 1
    np.testing.assert_array_equal(_np(y), np.arange(6.0).reshape(2, 3).T)
    y.unsqueeze_(0)
    assert tuple(y.shape) == (1, 3, 2)
    y.squeeze_(0)
    y.transpose_(0, 1)
    assert tuple(y.shape) == (2, 3)
    y[0, 0] = 42.0
    assert alias[0].item() == 42.0  # still the same storage


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_shape_methods_under_autograd(device):
    x = torch.randn(2, 3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.t_()
    y = x * 2
    y.t_()
    assert y.grad_fn.name() == "TBackward1" and tuple(y.shape) == (3, 2)
    (y * torch.arange(6.0, device=device).reshape(3, 2)).sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * np.arange(6.0).reshape(3, 2).T)


@pytest.mark.parametrize("device", DEVICES)
def test_resize_(device):
    x = torch.arange(6.0, device=device)
    x.resize_(2, 2)
    assert x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    x.resize_(3, 3)
    assert tuple(x.shape) == (3, 3) and x.reshape(-1)[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        torch.zeros(2, device=device, requires_grad=True).resize_(3)


def test_apply_and_map_on_cpu():
    x = torch.tensor([1.0, 2.0, 3.0])
    assert x.apply_(lambda v: v * 10).tolist() == [10.0, 20.0, 30.0] and x._version == 1
    y = torch.tensor([[1, 2], [3, 4]])
    y.map_(torch.tensor([10, 20]), lambda a, b: a + b)
    assert y.tolist() == [[11, 22], [13, 24]]
    with pytest.raises(RuntimeError, match="requires grad"):
        torch.ones(2, requires_grad=True).apply_(abs)


@pytest.mark.skipif("opencl" not in DEVICES, reason="no opencl device")
def test_apply_and_map_refuse_other_devices():
    x = torch.ones(2, device="opencl")
    with pytest.raises(TypeError, match="only implemented on CPU"):
        x.apply_(abs)
    with pytest.raises(TypeError, match="only implemented on CPU"):
        x.map_(x, max)


@pytest.mark.parametrize("device", DEVICES)
def test_new_constructors(device):
    x = torch.ones(2, dtype=torch.float64, device=device)
    z = x.new_zeros((2, 3))
    assert z.dtype is torch.float64 and z.device == x.device and z.tolist() == [[0.0] * 3] * 2
    o = x.new_ones(3, dtype=torch.int32, requires_grad=False)
    assert o.dtype is torch.int32 and o.tolist() == [1, 1, 1]
    f = x.new_full((2,), 7, requires_grad=True)
    assert f.requires_grad and f.dtype is torch.float64 and f.tolist() == [7.0, 7.0]
    assert tuple(x.new_empty(4, 1).shape) == (4, 1) and tuple(x.new_ones(size=(1, 2)).shape) == (1, 2)
    t = x.new_tensor([1, 2])
    assert t.dtype is torch.float64 and t.device == x.device
    with pytest.warns(UserWarning, match="clone"):
        c = x.new_tensor(x)
    c.add_(1)
    assert x.tolist() == [1.0, 1.0]  # a copy


# ---- meshgrid, where, nonzero ---------------------------------------------------------------
def test_meshgrid_warns_without_indexing():
    a, b = torch.arange(2), torch.arange(3)
    with pytest.warns(UserWarning, match="indexing argument"):
        g = torch.meshgrid(a, b)
    assert tuple(g[0].shape) == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.meshgrid(a, b, indexing="ij")


@pytest.mark.parametrize("device", DEVICES)
def test_meshgrid_gradient(device):
    a = torch.randn(2, device=device, requires_grad=True)
    b = torch.randn(3, device=device, requires_grad=True)
    x, y = torch.meshgrid(a, b, indexing="xy")
    (x * 2 + y).sum().backward()
    assert a.grad.tolist() == [6.0, 6.0] and b.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_where_and_nonzero_as_tuple_on_0d(device):
    t = torch.tensor(3.0, device=device)
    (i,) = torch.where(t != 0)
    assert i.tolist() == [0]
    assert [v.tolist() for v in torch.nonzero(torch.tensor(0, device=device), as_tuple=True)] == [[]]
    assert torch.argwhere(torch.tensor(1, device=device)).shape == (1, 0)


# ---- scatter family: gradients at ties and zeros, in-place autograd, errors -------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_shares_gradient_among_ties(device, reduce):
    x = torch.tensor([1.0, 1.0, 0.0], device=device, requires_grad=True)
    src = torch.tensor([1.0, 1.0, 0.0], device=device, requires_grad=True)
    idx = torch.tensor([0, 0, 2], device=device)
    out = x.scatter_reduce(0, idx, src, reduce)
    out.backward(torch.tensor([6.0, 5.0, 4.0], device=device))
    # position 0: self and two sources tie (3 ways); position 2: self and one source tie (2 ways)
    assert x.grad.tolist() == [2.0, 5.0, 2.0]
    assert src.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_scatter_reduce_prod_gradient_with_zeros(device):
    x = torch.tensor([2.0, 3.0], device=device, requires_grad=True)
    src = torch.tensor([0.0, 5.0, 0.0, 0.0], device=device, requires_grad=True)
    idx = torch.tensor([0, 0, 1, 1], device=device)
    out = x.scatter_reduce(0, idx, src, "prod")
    assert out.tolist() == [0.0, 0.0]
    out.backward(torch.ones(2, device=device))
    assert x.grad.tolist() == [0.0, 0.0]
    assert src.grad.tolist() == [10.0, 0.0, 0.0, 0.0]  # the single zero gets the product of the others


@pytest.mark.parametrize("device", DEVICES)
def test_scatter_with_reduce_has_no_derivative(device):
    x = torch.zeros(3, device=device, requires_grad=True)
    out = x.scatter(0, torch.tensor([0, 0], device=device), torch.ones(2, device=device), reduce="add")
    assert out.tolist() == [2.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="not implemented"):
        out.sum().backward()


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_scatter_family_under_autograd(device):
    w = torch.randn(4, 3, device=device, requires_grad=True)
    v = torch.randn(2, 3, device=device, requires_grad=True)
    y = w * 1
    y.index_put_((torch.tensor([1, 1], device=device),), v, accumulate=True)
    y.tril_()
    y.fill_diagonal_(0.0)
    y.sum().backward()
    mask = np.tril(np.ones((4, 3)))
    np.fill_diagonal(mask, 0)
    np.testing.assert_allclose(_np(w.grad), mask)
    np.testing.assert_allclose(_np(v.grad), np.broadcast_to(mask[1], (2, 3)))


@pytest.mark.parametrize("device", DEVICES)
def test_masked_scatter_gradient_of_source(device):
    x = torch.zeros(2, 2, device=device, requires_grad=True)
    s = torch.arange(1.0, 6.0, device=device, requires_grad=True)
    m = torch.tensor([[True, False], [True, True]], device=device)
    out = x.masked_scatter(m, s)
    assert out.tolist() == [[1.0, 0.0], [2.0, 3.0]]
    (out * torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)).sum().backward()
    assert s.grad.tolist() == [1.0, 3.0, 4.0, 0.0, 0.0]
    assert x.grad.tolist() == [[0.0, 2.0], [0.0, 0.0]]


@pytest.mark.parametrize("device", DEVICES)
def test_scatter_errors_name_the_op(device):
    x = torch.zeros(3, 4, device=device)
    idx = torch.tensor([[0, 5]], device=device)
    with pytest.raises(RuntimeError, match="scatter"):  # PyTorch: RuntimeError
        x.scatter(1, idx, 1.0).cpu()
    with pytest.raises(RuntimeError, match="scatter_reduce"):
        x.scatter_reduce(0, torch.tensor([[0]], device=device), torch.ones(1, 1, dtype=torch.float64,
                                                                             device=device), "sum")
    with pytest.raises(RuntimeError, match="index_copy"):
        x.index_copy(0, torch.tensor([0], device=device), torch.ones(1, 3, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_out_arguments(device):
    x = torch.randn(3, 3, device=device)
    out = torch.empty(3, 3, device=device)
    r = torch.tril(x, out=out)
    assert r is out and out._version == 1
    np.testing.assert_array_equal(_np(out), np.tril(_np(x)))
    o2 = torch.empty(0, device=device)
    torch.dstack([x, x], out=o2)
    assert tuple(o2.shape) == (3, 3, 2)
    with pytest.raises(RuntimeError, match="dtype"):
        torch.triu(x, out=torch.empty(3, 3, dtype=torch.float64, device=device))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        torch.tril(x.requires_grad_(), out=out)


@pytest.mark.parametrize("device", DEVICES)
def test_as_strided_never_leaves_the_memory_of_a_resized_base(device):
    x = torch.arange(10.0, device=device)
    y = x[2:]
    x.resize_(1000)  # y keeps the old (smaller) buffer
    assert torch.as_strided(y, (3,), (1,)).tolist() == [2.0, 3.0, 4.0]
    with pytest.raises(RuntimeError, match="outside the tensor's storage|out of bounds"):
        torch.as_strided(y, (10,), (1,), 500)


def test_detach_and_data_of_a_view_keep_its_storage_offset():
    """``x[1].detach()`` and ``x[1].data`` view the same memory as ``x[1]``: PyTorch's storage_offset is 3; coretorch
    gave 0 (their base was the view, where a view of a view points at the root that storage_offset counts from)."""
    x = torch.ones(2, 3)
    for t in (x[1].detach(), x[1].data, x[:, 1:].detach()):
        assert t.storage_offset() == t.clone().storage_offset() + (3 if t.shape == (3,) else 1)
    d = x[1].detach()
    d.add_(1)
    assert x.tolist() == [[1.0] * 3, [2.0] * 3] and torch.as_strided(d, (2,), (1,), 4).tolist() == [2.0, 2.0]


def test_is_view_as_pytorch():
    """``Tensor._is_view()`` (PyTorch's; a compiled step's guards look for the name): views are, a tensor, its
    ``detach()``, its ``.data`` and a computed one are not."""
    x = torch.ones(2, 3, requires_grad=True)
    got = [t._is_view() for t in (x, x[1:], x.detach(), x[1:].detach(), x.data, x.view(6), x * 2, x.t())]
    assert got == [False, True, False, False, False, True, False, True]
