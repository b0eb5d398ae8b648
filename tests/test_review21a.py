"""Review 21a (eager, second pass): indexing, scatter/gather, masked and in-place writes, on every backend and
dtype, compared side by side with PyTorch 2.13.  Each test states what PyTorch gives (a documented fact, numpy's
value or the derivative's definition) and what coretorch gave before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


def _np(t):
    return t.detach().cpu().numpy()


def test_index_fill_value_gradient_counts_a_repeated_index_once(device):
    """index_fill writes its value once per filled position, however often the index names it (PyTorch's
    derivative sums the gradient over the unique indices; -1 and 4 are one column of 5): d out / d value is the
    number of filled positions.  coretorch summed the gradient once per index entry (12 for [4, 0, 4] on a 4x5
    input instead of 8) and gradcheck failed."""
    x = torch.randn(4, 5, dtype=torch.float64, device=device, requires_grad=True)
    v = torch.tensor(2.0, dtype=torch.float64, device=device, requires_grad=True)
    idx = torch.tensor([4, 0, 4, -1], device=device)
    y = x.index_fill(1, idx, v)
    (gv,) = torch.autograd.grad(y, v, torch.ones_like(y))
    assert gv.item() == 8.0
    assert torch.autograd.gradcheck(lambda a, b: a.index_fill(1, idx, b), (x, v))
    z = torch.randn((), dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: a.index_fill(0, torch.tensor([0, 0, -1], device=device), b), (z, v))


def test_a_subscript_list_holding_numpy_arrays_is_a_tuple_of_indices(device):
    """PyTorch's treatSequenceAsTuple counts any sequence in a subscript list (PySequence_Check holds for numpy
    arrays): ``x[[a, b]]`` with numpy arrays a, b is ``x[a, b]`` (2 elements; deprecated, warned).  coretorch took
    the list as one index tensor (a [2, 2, 5] result, a write to whole rows)."""
    x = torch.arange(20.0, device=device).reshape(4, 5)
    rows, cols = np.array([0, 1]), np.array([1, 2])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        y = x[[rows, cols]]
    assert y.tolist() == [1.0, 7.0]
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        x[[rows, cols]] = -1.0
    assert x.sum().item() == 190.0 - 1.0 - 7.0 - 2.0


def test_a_list_or_array_of_floats_indexes_by_its_truncated_values(device):
    """PyTorch makes a subscript list or numpy array a long tensor unless it holds bools or uint8
    (indexing_tensor_from_data): ``x[[1.5, 2.7]]`` is ``x[[1, 2]]``, ``x[:, [1.9, -1.2]]`` is ``x[:, [1, -1]]``,
    a 0-d float array an int.  coretorch raised IndexError (a float32 index tensor)."""
    x = torch.arange(20.0, device=device).reshape(4, 5)
    assert x[[1.5, 2.7]].tolist() == x[[1, 2]].tolist()
    assert x[:, [1.9, -1.2]].tolist() == x[:, [1, -1]].tolist()
    assert x[np.array([1.5, 0.0])].tolist() == x[[1, 0]].tolist()
    assert x[np.array(2.5)].tolist() == x[2].tolist()
    assert x[[1, 2.0]].tolist() == x[[1, 2]].tolist()
    y = torch.zeros(4, device=device)
    y[[1.5, 2.5]] = 1.0
    assert y.tolist() == [0.0, 1.0, 1.0, 0.0]


def test_scalar_subscripts_that_are_no_integers_raise_index_error(device):
    """A float, a numpy float or bool scalar or an object without ``__index__`` is no index in PyTorch
    (IndexError "only integers, slices ... (got float)"), while a numpy integer scalar of any width is an int.
    coretorch indexed by ``np.bool_`` and ``np.uint8`` scalars as masks (a new dim of size 1) and, once lists
    of floats index, would have taken 1.5 for 1."""
    x = torch.arange(20.0, device=device).reshape(4, 5)
    for k, name in ((1.5, "float"), (np.float64(1.5), "numpy.float64"), (np.bool_(True), "numpy.bool"),
                    ((1, 1.5), "float"), (object(), "object")):
        with pytest.raises(IndexError, match=rf"valid indices \(got {name}\)"):
            x[k]
    assert x[np.uint8(1)].tolist() == x[1].tolist()
    assert x[0, np.int8(-1)].item() == 4.0


def test_index_copy_checks_as_pytorch(device):
    """PyTorch's index_copy_: a count of indices that is not source.size(dim) is an IndexError, as a 2-D index
    and source/destination ranks that differ; slices of other shapes a RuntimeError; nothing is copied (no index
    read) when self or source is empty.  coretorch raised RuntimeError for all and checked the indices of an empty
    copy (IndexError)."""
    x = torch.zeros(4, 5, device=device)
    with pytest.raises(IndexError, match=r"Number of indices \(2\) should be equal to source.size\(dim\) \(1\)"):
        x.index_copy(0, torch.tensor([1, 2], device=device), torch.ones(1, 5, device=device))
    with pytest.raises(IndexError, match=r"Index should have dimension 1 or 0 \(got 2\)"):
        x.index_copy(0, torch.tensor([[1]], device=device), torch.ones(1, 5, device=device))
    with pytest.raises(IndexError, match="dimensionality must match"):
        x.index_copy(0, torch.tensor([1], device=device), torch.ones(5, device=device))
    with pytest.raises(IndexError, match="When source is scalar, index should have one element"):
        x.index_copy(0, torch.tensor([1, 2], device=device), torch.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="Destination slice shape: 5 at dimension 0 and source slice shape: 4"):
        x.index_copy(0, torch.tensor([1], device=device), torch.ones(1, 4, device=device))
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 4"):
        x.index_copy(0, torch.tensor([7], device=device), torch.ones(1, 5, device=device)).cpu()
    empty = torch.zeros(4, 0, device=device).index_copy(0, torch.tensor([7], device=device),
                                                          torch.ones(1, 0, device=device))
    assert tuple(empty.shape) == (4, 0)
    y = torch.zeros(4, device=device).index_copy(0, torch.tensor([1], device=device), torch.tensor(2.0, device=device))
    assert y.tolist() == [0.0, 2.0, 0.0, 0.0]


def test_index_reduce_takes_an_int32_index(device):
    """PyTorch's index_reduce takes int64 or int32 indices (as index_add); coretorch refused int32 (RuntimeError
    "Expected a long tensor"), and named scatter_reduce in its dtype error."""
    x = torch.arange(20.0, device=device).reshape(4, 5)
    idx = torch.tensor([1, 1], dtype=torch.int32, device=device)
    r = x.index_reduce(0, idx, torch.full((2, 5), 2.0, device=device), "prod")
    assert r[1].tolist() == [20.0, 24.0, 28.0, 32.0, 36.0] and r[0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(RuntimeError, match=r"index_reduce_\(\): self \(Float\) and source \(Double\) must have"):
        x.index_reduce(0, idx, torch.ones(2, 5, dtype=torch.float64, device=device), "amax")


def test_index_fill_and_put_error_types(device):
    """PyTorch: index_fill with a 2-D index raises RuntimeError("Index has to be a vector/scalar"); put_ with
    as many source elements as indices not raises IndexError.  coretorch raised IndexError and RuntimeError."""
    x = torch.zeros(4, 5, device=device)
    with pytest.raises(RuntimeError, match="Index has to be a vector/scalar"):
        x.index_fill(0, torch.tensor([[1]], device=device), 1.0)
    with pytest.raises(IndexError, match="same number of elements"):
        x.put(torch.tensor([1, 2], device=device), torch.ones(3, device=device))


def test_narrow_takes_integers_only(device):
    """PyTorch's narrow takes int (or integer one-element tensor) start and length: a float or bool is a
    TypeError, a float, bool or 1-D start tensor a RuntimeError ("start must be an 0-dim integral Tensor.").
    coretorch truncated 1.5 to 1 and took True as 1."""
    x = torch.arange(20.0, device=device).reshape(4, 5)
    for bad in (1.5, True):
        with pytest.raises(TypeError):
            x.narrow(0, bad, 2)
        with pytest.raises(TypeError):
            x.narrow(0, 1, bad)
        with pytest.raises(TypeError):
            x.narrow_copy(0, bad, 2)
    for bad in (torch.tensor(1.0), torch.tensor(True), torch.tensor([1])):
        with pytest.raises(RuntimeError, match="start must be an 0-dim integral Tensor"):
            x.narrow(0, bad, 2)
    assert x.narrow(0, torch.tensor(1, dtype=torch.int32), 2).tolist() == x[1:3].tolist()
    assert x.narrow(1, np.int64(-2), torch.tensor([2])).tolist() == x[:, 3:].tolist()


@pytest.mark.parametrize("reduce,include_self", [("mean", True), ("mean", False), ("prod", False), ("amax", False)])
def test_bool_index_reduce_without_a_bool_kernel_raises_not_implemented(device, reduce, include_self):
    """PyTorch has no bool kernel for index_reduce's mean nor for the initialisation of an excluded self, nor for
    scatter_reduce's mean: NotImplementedError ("... not implemented for 'Bool'").  coretorch returned values on
    cpu and raised a RuntimeError about floor_divide on opencl; the other bool reductions still work."""
    x = torch.tensor([[True, False], [False, True]], device=device)
    idx = torch.tensor([0, 0], device=device)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        x.index_reduce(0, idx, x, reduce, include_self=include_self)
    if reduce == "mean":
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            x.scatter_reduce(0, idx.reshape(2, 1).expand(2, 2), x, "mean", include_self=include_self)
    assert x.index_reduce(0, idx, x, "amax").tolist() == [[True, True], [False, True]]


def _round_to(a: np.ndarray, dtype) -> np.ndarray:
    return torch.tensor(np.asarray(a, np.float32)).to(dtype).float().numpy()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_scatter_sums_and_products_accumulate_in_float32(device, dtype):
    """PyTorch's CPU scatter_add, scatter_reduce (sum, prod; mean divides the rounded sum), scatter(reduce=) and
    index_add of a matrix (int64 index, alpha 1) accumulate float16/bfloat16 in float32 and round once, while
    index_put_(accumulate=True) and index_reduce round at each step.  coretorch rounded at each step everywhere
    (sums of 60 values several half ulps off PyTorch's)."""
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 3, 60)
    x = torch.tensor(rng.uniform(-3, 7, (3, 4))).to(dtype).to(device)
    s = torch.tensor(rng.uniform(-3, 7, (60, 4))).to(dtype).to(device)
    p = torch.tensor(rng.uniform(0.8, 1.25, (60, 4))).to(dtype).to(device)
    xa, sa, pa = x.float().cpu().numpy(), s.float().cpu().numpy(), p.float().cpu().numpy()
    exact_sum, exact_prod, seq = xa.copy(), xa.copy(), xa.copy()
    for i, j in enumerate(idx):
        exact_sum[j] += sa[i]
        exact_prod[j] *= pa[i]
        seq[j] = _round_to(seq[j] + sa[i], dtype)
    want_sum, want_prod = _round_to(exact_sum, dtype), _round_to(exact_prod, dtype)
    i1 = torch.tensor(idx, device=device)
    i2 = torch.tensor(np.tile(idx[:, None], (1, 4)), device=device)
    got = {
        "scatter_add": (x.scatter_add(0, i2, s), want_sum),
        "scatter_reduce_sum": (x.scatter_reduce(0, i2, s, "sum"), want_sum),
        "scatter_add_reduce": (x.scatter(0, i2, s, reduce="add"), want_sum),
        "index_add": (x.index_add(0, i1, s), want_sum),
        "scatter_reduce_prod": (x.scatter_reduce(0, i2, p, "prod"), want_prod),
        "scatter_multiply": (x.scatter(0, i2, p, reduce="multiply"), want_prod),
        "index_put_accumulate": (x.index_put((i1,), s, accumulate=True), seq),
    }
    for name, (r, want) in got.items():
        np.testing.assert_array_equal(r.float().cpu().numpy(), want, err_msg=name)
    cnt = np.bincount(idx, minlength=3)[:, None] + 1.0
    mean = x.scatter_reduce(0, i2, s, "mean").float().cpu().numpy()
    np.testing.assert_array_equal(mean, _round_to(want_sum / cnt, dtype))


def test_deprecation_and_beta_warnings_of_scatter_index_reduce_and_masked_scatter(device):
    """PyTorch warns once per process that scatter's ``reduce=`` with a Tensor src is deprecated and that
    index_reduce is in beta, and warns that a uint8 mask of masked_scatter_ is deprecated before refusing it.
    coretorch gave none of the three warnings."""
    import warnings
    from coretorch.ops import scatter as _sc

    x = torch.zeros(4, 5, device=device)
    i = torch.tensor([1, 1, 2], device=device)
    _sc._WARNED.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        x.scatter(0, i[:, None].expand(3, 5), torch.ones(3, 5, device=device), reduce="add")
        x.scatter(0, i[:, None].expand(3, 5), torch.ones(3, 5, device=device), reduce="multiply")
        x.scatter(0, i[:, None].expand(3, 5), 2.0, reduce="add")  # (a number src: no warning)
        x.index_reduce(0, i, torch.ones(3, 5, device=device), "amax")
        x.index_reduce(0, i, torch.ones(3, 5, device=device), "amin")
        with pytest.raises(RuntimeError, match="only supports boolean masks"):
            x.masked_scatter(torch.ones(4, 5, dtype=torch.uint8, device=device), torch.ones(20, device=device))
    msgs = [str(m.message) for m in w]
    assert sum("reduce argument of torch.scatter with Tensor src is deprecated" in m for m in msgs) == 1
    assert sum("index_reduce() is in beta" in m for m in msgs) == 1
    assert sum("masked_scatter_ received a mask with dtype torch.uint8" in m for m in msgs) == 1


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_scatter_and_index_reduce_amax_amin_propagate_nan(device, dtype):
    """PyTorch's amax/amin reductions (scatter_reduce, index_reduce) propagate a NaN of self or src.  On opencl the
    bfloat16 kernel took the integer combine (bfloat16 has numpy kind "V") and dropped NaN: amin of [nan, nan, -1,
    inf] gave -1."""
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([nan, 1.0, 2.0, -inf], dtype=dtype, device=device)
    s = torch.tensor([5.0, nan, -1.0, inf], dtype=dtype, device=device)
    i = torch.tensor([3, 3, 3, 1], device=device)
    for op, rest in (("amax", [2.0, inf]), ("amin", [1.0, 2.0])):
        for inc in (True, False):
            r = x.scatter_reduce(0, i, s, op, include_self=inc).float().cpu().numpy()
            assert np.isnan(r[0]) and np.isnan(r[3]), (op, inc, r)
            r = x.index_reduce(0, i, s, op, include_self=inc).float().cpu().numpy()
            assert np.isnan(r[0]) and np.isnan(r[3]), (op, inc, r)
    assert x.scatter_reduce(0, i, s, "amax").float()[1:3].tolist() == [inf, 2.0]


def test_a_list_subclass_subscript_and_an_empty_bool_array(device):
    """PyTorch's treatSequenceAsTuple takes any list (a subclass too): ``x[L([[0, 2], [1, 1]])]`` is
    ``x[[0, 2], [1, 1]]`` (2 rows); an empty numpy bool array is a mask (shape [0]: IndexError on a dim of 3).
    coretorch took the list subclass as one index tensor ([2, 2, 4, 5]) and the empty bool array as an empty
    integer index (an empty result)."""
    class L(list):
        pass

    x = torch.arange(60.0, device=device).reshape(3, 4, 5)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        assert x[L([[0, 2], [1, 1]])].tolist() == x[[0, 2], [1, 1]].tolist()
    assert tuple(x[L([0, 2])].shape) == (2, 4, 5)
    with pytest.raises(IndexError, match=r"The shape of the mask \[0\] at index 0 does not match"):
        x[np.array([], dtype=bool)]
    assert tuple(x[np.array([])].shape) == (0, 4, 5) and tuple(x[[]].shape) == (0, 4, 5)


def test_where_takes_a_uint8_condition_with_pytorchs_warning(device):
    """PyTorch reads a uint8 condition of where as bool, with a deprecation warning (other integer dtypes still
    raise).  coretorch raised RuntimeError for uint8 too."""
    import warnings
    from coretorch.ops import _pointwise_where as _pw

    c = torch.tensor([1, 0, 2], dtype=torch.uint8, device=device)
    x = torch.ones(3, device=device, requires_grad=True)
    _pw._U8_WARNED.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = torch.where(c, x, 0.0)
    assert y.tolist() == [1.0, 0.0, 1.0]
    assert any("where received a uint8 condition tensor" in str(m.message) for m in w)
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        torch.where(c.to(torch.int8), x, 0.0)


def test_masked_fill_and_index_fill_nodes_take_pytorchs_names(device):
    """PyTorch names masked_fill's node MaskedFillBackward0 (a number value) or MaskedFillBackward1 (a tensor
    value), index_fill's with a tensor value IndexFillBackward1 and masked_select's MaskedSelectBackward0 (on the
    input's own node); coretorch showed WhereBackward0 (masked_fill is built on where), IndexFillBackward0 and
    IndexBackward0 after a view.  The gradients are unchanged."""
    x = torch.randn(4, 5, device=device, requires_grad=True)
    v = torch.tensor(2.0, device=device, requires_grad=True)
    m = x.detach() > 0
    assert type(x.masked_fill(m, 1.0).grad_fn).__name__ == "MaskedFillBackward0"
    y = x.masked_fill(m, v)
    assert type(y.grad_fn).__name__ == "MaskedFillBackward1"
    assert type((x * 1).masked_fill_(m, v).grad_fn).__name__ == "MaskedFillBackward1"
    i = torch.tensor([0, 2], device=device)
    assert type(x.index_fill(0, i, v).grad_fn).__name__ == "IndexFillBackward1"
    assert type(x.index_fill(0, i, 1.0).grad_fn).__name__ == "IndexFillBackward0"
    sel = x.masked_select(m)
    assert type(sel.grad_fn).__name__ == "MaskedSelectBackward0"
    assert type(sel.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    y.sum().backward()
    assert v.grad.item() == float(m.sum().item())
    assert torch.equal(x.grad, (~m).to(x.dtype))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_gradients_of_gather_and_embedding_accumulate_as_pytorch(device, dtype):
    """PyTorch's CPU backward of gather (and take_along_dim, index_select) is a scatter_add/index_add that
    accumulates float16/bfloat16 in float32 and rounds once; embedding's backward sums the rows in the dtype
    (rounding at each step).  coretorch's gather backward rounded at each step, and once index_add accumulated in
    float32 its embedding backward would have too."""
    rng = np.random.default_rng(11)
    idx = rng.integers(0, 3, 200)
    g = torch.tensor(rng.uniform(-3, 7, (200, 4))).to(dtype)
    ga = g.float().numpy()
    exact, seq = np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float32)
    for i, j in enumerate(idx):
        exact[j] += ga[i]
        seq[j] = _round_to(seq[j] + ga[i], dtype)
    w = torch.zeros(3, 4, dtype=dtype, device=device, requires_grad=True)
    w.gather(0, torch.tensor(np.tile(idx[:, None], (1, 4)), device=device)).backward(g.to(device))
    np.testing.assert_array_equal(w.grad.float().cpu().numpy(), _round_to(exact, dtype))
    w.grad = None
    w.index_select(0, torch.tensor(idx, device=device)).backward(g.to(device))
    np.testing.assert_array_equal(w.grad.float().cpu().numpy(), _round_to(exact, dtype))
    w.grad = None
    torch.nn.functional.embedding(torch.tensor(idx, device=device), w).backward(g.to(device))
    np.testing.assert_array_equal(w.grad.float().cpu().numpy(), seq)


def test_index_add_alpha_is_a_checked_scalar(device):
    """PyTorch's index_add takes ``alpha`` as a Scalar: a number or a 0-d tensor (a 1-D tensor is a TypeError),
    converted to self's dtype with its overflow check (float16 and alpha=1e5: RuntimeError "value cannot be
    converted to type c10::Half without overflow").  coretorch multiplied by a 1-D alpha (on opencl: a device
    error) and gave inf for the float16 overflow."""
    x = torch.zeros(4, 5, device=device)
    i = torch.tensor([1, 1], device=device)
    s = torch.ones(2, 5, device=device)
    with pytest.raises(TypeError, match="argument 'alpha' must be Number, not Tensor"):
        x.index_add(0, i, s, alpha=torch.tensor([2.0]))
    assert x.index_add(0, i, s, alpha=torch.tensor(2.0))[1].tolist() == [4.0] * 5
    with pytest.raises(RuntimeError, match="cannot be converted to type c10::Half without overflow"):
        x.half().index_add(0, i, s.half(), alpha=1e5)
    u = torch.full((4, 5), 3, dtype=torch.uint8, device=device)
    assert u.index_add(0, i, torch.ones(2, 5, dtype=torch.uint8, device=device), alpha=-1)[1].tolist() == [1] * 5
