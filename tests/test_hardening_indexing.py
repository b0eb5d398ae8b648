"""Issue 15 (hardening), indexing and views: PyTorch's rules where numpy's differ, checked on every device.

Expected values are numpy computations that apply PyTorch's rule by hand (an int index is a select applied first;
the remaining index tensors follow the adjacency rule), checked against PyTorch 2.13 when written."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import available_devices

DEVICES = available_devices()
A = np.arange(24.0).reshape(2, 3, 4)


def arr(t):
    return t.detach().cpu().numpy()


# ---- 1. ints select first: index tensors separated by a slice follow PyTorch, not numpy ----
# (key, the same selection written as int selects first, then numpy on a key without ints)
KEYS = [
    ((0, slice(None), [0, 1, 2]), lambda a: a[0][:, [0, 1, 2]]),
    ((0, slice(None), [0, 1]), lambda a: a[0][:, [0, 1]]),              # non-square: (3, 2)
    ((slice(None), 1, [0, 2]), lambda a: a[:, 1][:, [0, 2]]),
    (([0, 1], slice(None), 2), lambda a: a[:, :, 2][[0, 1], :]),
    ((1, slice(None), [[0], [3]]), lambda a: a[1][:, [[0], [3]]]),
    ((0, None, slice(None), [1, 2]), lambda a: a[0][None][:, :, [1, 2]]),
    (([0, 1], 1, [0, 2]), lambda a: a[:, 1][[0, 1], [0, 2]]),
    (([1, 0], slice(None), [0, 2]), lambda a: a[[1, 0], :, [0, 2]]),   # no int: numpy's rule is PyTorch's
    ((slice(None), [0, 2], 1), lambda a: a[:, :, 1][:, [0, 2]]),
    ((True, 0, slice(None), [1, 2]), lambda a: a[None][:, 0][[0], :, [1, 2]]),  # True: a new dim indexed by [0]
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("k", range(len(KEYS)))
def test_int_then_index_tensors_getitem_setitem_backward(device, k):
    key, ref = KEYS[k]
    want = ref(A)
    x = torch.tensor(A, dtype=torch.float64, device=device, requires_grad=True)
    r = x[key]
    assert tuple(r.shape) == want.shape
    np.testing.assert_array_equal(arr(r), want)
    w = np.random.default_rng(k).standard_normal(want.shape)
    (r * torch.tensor(w, device=device)).sum().backward()
    g = np.zeros(24)
    np.add.at(g, _flat_positions(ref), w.reshape(-1))
    np.testing.assert_array_equal(arr(x.grad).reshape(-1), g)
    # setitem writes where getitem reads, and its backward reads the value's gradient there
    v = torch.tensor(w, device=device, requires_grad=True)
    y = torch.zeros(2, 3, 4, dtype=torch.float64, device=device)
    y[key] = v * 1
    expect = np.zeros(24)
    expect[_flat_positions(ref)] = w.reshape(-1)
    np.testing.assert_array_equal(arr(y).reshape(-1), expect)
    (y * torch.tensor(A + 1, device=device)).sum().backward()
    np.testing.assert_array_equal(arr(v.grad), ref(A + 1))


def _flat_positions(ref):
    """The flat positions in A that ``ref`` selects, in the result's order."""
    return ref(np.arange(24).reshape(2, 3, 4)).reshape(-1)


# ---- 2. a 0-d integer tensor index is an int ----
@pytest.mark.parametrize("device", DEVICES)
def test_0d_int_tensor_index_is_a_view(device):
    x = torch.tensor(np.arange(6.0).reshape(2, 3), device=device)
    row = x[torch.tensor(1)]
    assert tuple(row.shape) == (3,) and row._base is x
    row.fill_(-1)
    assert arr(x).tolist() == [[0, 1, 2], [-1, -1, -1]]
    e = x[torch.tensor(0), torch.tensor(-1, device=device)]
    assert e.shape == () and e._base is x
    e.add_(10)
    assert arr(x)[0, 2] == 12
    b = torch.zeros(3, dtype=torch.bool, device=device)
    b[torch.tensor(0)] = torch.tensor(True)
    b[torch.tensor(2, device=device)] = torch.tensor(True, device=device)
    assert arr(b).tolist() == [True, False, True]
    f = torch.zeros(3, device=device)
    f[torch.tensor(1)] = torch.tensor(True)  # a select then copy_: any dtype
    assert arr(f).tolist() == [0, 1, 0]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        f[torch.tensor(5)]


@pytest.mark.parametrize("device", DEVICES)
def test_bool_keys(device):
    x = torch.tensor([1.0, 2.0, 3.0], device=device)
    t = x[True]  # PyTorch: a new dim indexed by [0], a copy
    assert tuple(t.shape) == (1, 3) and t._base is None
    assert tuple(x[False].shape) == (0, 3) and tuple(x[None, False, 1:].shape) == (1, 0, 2)
    x[True] = torch.tensor(5)  # the plain-True fast path copies any dtype
    assert arr(x).tolist() == [5.0, 5.0, 5.0]
    x[False] = torch.tensor(7)
    assert arr(x).tolist() == [5.0, 5.0, 5.0]
    for key in ((True, 0), torch.tensor(True)):  # index_put_: the dtypes must match
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
            x[key] = torch.tensor(5)
    x[True, 1] = torch.tensor(4.0, device=device)
    x[torch.tensor(True, device=device)] = torch.tensor(6.0, device=device)
    assert arr(x).tolist() == [6.0, 6.0, 6.0]


# ---- 3. 0-d elements are views ----
@pytest.mark.parametrize("device", DEVICES)
def test_0d_elements_are_views(device):
    x = torch.arange(4.0, device=device)
    views = [x[0], x.select(0, 1), x.unbind()[2], list(x)[3]]
    x.add_(10)
    assert [v.item() for v in views] == [10.0, 11.0, 12.0, 13.0]
    x = torch.arange(6.0, device=device)
    x[0].add_(1)
    x[1].fill_(7)
    x[2].zero_()
    x[3].copy_(torch.tensor(-5.0))
    x[4].clamp_(0, 1)
    x[5].mul_(3)
    assert arr(x).tolist() == [1.0, 7.0, 0.0, -5.0, 1.0, 15.0]
    y = torch.arange(6, device=device).reshape(2, 3)
    y[1, 2].sub_(5)
    y.select(1, 0)[1].neg_()
    assert arr(y).tolist() == [[0, 1, 2], [-3, 4, 0]]


# ---- 4. setitem ----
@pytest.mark.parametrize("device", DEVICES)
def test_setitem_int_tensor_from_float_requiring_grad(device):
    x = torch.zeros(3, dtype=torch.int64, device=device)
    x[...] = torch.tensor([1.5, 2.5, -3.5], device=device, requires_grad=True)
    assert not x.requires_grad and x.grad_fn is None
    assert arr(x).tolist() == [1, 2, -3]


@pytest.mark.parametrize("device", DEVICES)
def test_setitem_value_with_leading_unit_dims(device):
    x = torch.zeros(2, 3, device=device)
    x[0, 0] = torch.tensor([7.0], device=device)
    x[1, 1:] = torch.ones(1, 1, 2, device=device)
    assert arr(x).tolist() == [[7, 0, 0], [0, 1, 1]]
    v = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = torch.zeros(2, 3, device=device)
    y[0] = v.unsqueeze(0)
    y[[1]] = (v * 2).reshape(1, 1, 3)
    assert arr(y).tolist() == [[1, 2, 3], [2, 4, 6]]
    (y * torch.tensor([[1.0, 1, 1], [10, 10, 10]], device=device)).sum().backward()
    assert arr(v.grad).tolist() == [21.0, 21.0, 21.0]


@pytest.mark.parametrize("device", DEVICES)
def test_setitem_bool_mask_values(device):
    m2 = torch.tensor([[True, False, True], [False, True, False]], device=device)
    for value in (torch.ones(2, 3, device=device), torch.ones(3, 1, device=device)):
        with pytest.raises(RuntimeError, match="shape mismatch"):
            torch.zeros(2, 3, device=device)[m2] = value
    m1 = torch.tensor([True, False, True, True], device=device)
    x = torch.zeros(4, device=device)
    x[m1] = torch.tensor([[1.0, 2.0, 3.0]], device=device)  # leading 1s dropped: fits
    assert arr(x).tolist() == [1, 0, 2, 3]
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[m1] = torch.ones(3, 1, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_index_tensors_that_do_not_broadcast(device):
    x = torch.zeros(3, 3, device=device)
    i, j = torch.tensor([0, 1], device=device), torch.tensor([0, 1, 2], device=device)
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be broadcast together with "
                                         r"shapes \[2\], \[3\]"):
        x[i, j]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[i, j] = 1.0
    assert arr(x).sum() == 0


@pytest.mark.parametrize("device", DEVICES)
def test_empty_results_check_no_index(device):
    """PyTorch reads no index when the result is empty: no error (it raises where the result has elements)."""
    assert tuple(torch.zeros(0, 3, device=device)[:, [5]].shape) == (0, 1)
    assert tuple(torch.zeros(2, 0, device=device)[[5]].shape) == (1, 0)
    assert tuple(torch.zeros(0, 3, device=device)[0:0, [5, 6]].shape) == (0, 2)
    x = torch.zeros(0, 3, device=device)
    x[:, torch.tensor([5], device=device)] = 1.0
    with pytest.raises(IndexError, match="out of bounds"):
        torch.zeros(2, 0)[:, [5]]
    for shape, key in (((0, 3), [5]), ((0, 0, 0), [0, 0]), ((2, 0), (slice(None), [0]))):  # a dim of size 0
        with pytest.raises(IndexError, match="out of bounds for dimension . with size 0"):
            torch.zeros(shape, device=device)[key]
        with pytest.raises(IndexError, match="out of bounds for dimension . with size 0"):
            torch.zeros(shape, device=device)[key] = 1.0
    y = torch.zeros(2, 0, device=device)
    assert tuple(y.index_add(0, torch.tensor([5], device=device), torch.ones(1, 0, device=device)).shape) == (2, 0)


# ---- 5. gather / scatter_add / index_select / index_add / narrow / chunk / split: PyTorch's errors ----
@pytest.mark.parametrize("device", DEVICES)
def test_0d_gather_index_select_scatter_add_check_the_index(device):
    s = torch.tensor(3.0, device=device)
    i0, i1 = torch.tensor(0, device=device), torch.tensor(1, device=device)
    for call in (lambda: s.gather(0, i1), lambda: s.gather(0, torch.tensor(-1, device=device)),
                 lambda: s.scatter_add(0, i1, torch.tensor(1.0, device=device)),
                 lambda: s.scatter(0, i1, torch.tensor(1.0, device=device))):
        with pytest.raises(RuntimeError, match="index -?1 is out of bounds for dimension 0 with size 1"):
            call().item()  # a device reports at the next host read
    for call in (lambda: s.index_select(0, i1), lambda: s.index_add(0, i1, torch.tensor(1.0, device=device))):
        with pytest.raises(IndexError, match="out of range in self"):
            call().item()
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
        s.index_select(0, torch.tensor([0, 0], device=device))
    assert s.gather(0, i0).item() == 3.0 and s.index_select(0, i0).item() == 3.0
    assert arr(s.gather(0, torch.tensor([0, 0], device=device))).tolist() == [3.0, 3.0]  # 0-d reads as 1-d
    assert s.scatter_add(0, torch.tensor([0, 0], device=device), torch.tensor([1.0, 2.0], device=device)).item() == 6
    b = torch.tensor(False, device=device)
    assert b.scatter_add(0, i0, torch.tensor(True, device=device)).item() is True
    assert b.index_add(0, i0, torch.tensor(True, device=device)).item() is True


@pytest.mark.parametrize("device", DEVICES)
def test_index_op_exception_classes(device):
    x = torch.zeros(3, 4, device=device)

    def t(v, dtype=torch.int64):
        return torch.tensor(v, dtype=dtype, device=device)
    cases = [
        (RuntimeError, "out of bounds for dimension 1 with size 4", lambda: x.gather(1, t([[0, 4]]))),
        (RuntimeError, "out of bounds for dimension 0 with size 3", lambda: x.gather(0, t([[-1]]))),
        (RuntimeError, "out of bounds", lambda: x.scatter_add(0, t([[3]]), torch.ones(1, 1, device=device))),
        (RuntimeError, "out of bounds", lambda: x.scatter(1, t([[4]]), 1.0)),
        (RuntimeError, "out of bounds", lambda: x.scatter_reduce(0, t([[3]]), torch.ones(1, 1, device=device),
                                                                 "sum")),
        (IndexError, "out of range in self", lambda: x.index_select(0, t([3]))),
        (RuntimeError, "INDICES element is out of DATA bounds", lambda: x.index_select(1, t([4]))),
        (RuntimeError, "out of bounds for dimension 0", lambda: x.index_add(0, t([3]), torch.ones(1, 4,
                                                                                                   device=device))),
        (IndexError, "out of range in self", lambda: torch.zeros(3, device=device).index_add(
            0, t([-1]), torch.ones(1, device=device))),
        (RuntimeError, "int32/int64", lambda: x.gather(0, t([[0]], torch.int16))),
        (RuntimeError, "int32/int64", lambda: x.index_select(0, torch.tensor([0.0], device=device))),
    ]
    for exc, msg, call in cases:
        with pytest.raises(exc, match=msg):
            call().cpu()
    # int32 indices are taken (PyTorch 2.13)
    assert arr(x.gather(1, t([[1], [2], [3]], torch.int32))).shape == (3, 1)
    assert arr(x.scatter_add(0, t([[2]], torch.int32), torch.ones(1, 1, device=device)))[2, 0] == 1.0


@pytest.mark.parametrize("device", DEVICES)
def test_narrow_chunk_split_errors(device):
    x = torch.arange(4.0, device=device)
    s = torch.tensor(1.0, device=device)
    for exc, msg, call in [
        (IndexError, r"start out of range \(expected to be in range of \[-4, 4\], but got 5\)",
         lambda: x.narrow(0, 5, 0)),
        (IndexError, "start out of range", lambda: x.narrow(0, -5, 1)),
        (RuntimeError, "length must be non-negative", lambda: x.narrow(0, 1, -1)),
        (RuntimeError, r"start \(2\) \+ length \(3\) exceeds dimension size \(4\)", lambda: x.narrow(0, 2, 3)),
        (RuntimeError, "cannot be applied to a 0-dim tensor", lambda: s.narrow(0, 0, 1)),
        (RuntimeError, "chunk expects at least a 1-dimensional tensor", lambda: s.chunk(2)),
        (RuntimeError, "split expects at least a 1-dimensional tensor", lambda: s.split(1)),
        (RuntimeError, "split_size be non-negative", lambda: x.split(-1)),
        (RuntimeError, "non-negative entries", lambda: x.split([5, -1])),
        (IndexError, "Dimension out of range", lambda: x.chunk(2, 1)),
    ]:
        with pytest.raises(exc, match=msg):
            call()
    assert tuple(x.narrow(0, 4, 0).shape) == (0,) and arr(x.narrow(0, -2, 2)).tolist() == [2.0, 3.0]


# ---- 6. a failed op's device-side checks do not fire later ----
@pytest.mark.parametrize("device", DEVICES)
def test_index_checks_of_a_failed_op_do_not_fire_later(device):
    x = torch.zeros(4, device=device)
    bad = torch.tensor([7], device=device)
    # PyTorch checks the value before the indices: the dtype error, on every device, and nothing pending after it
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        x[bad] = torch.tensor([1.0], dtype=torch.float64, device=device)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        x.index_put_((bad,), torch.tensor([1.0], dtype=torch.float64, device=device))
    leaf = torch.zeros(4, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf[bad] = 1.0
    with pytest.raises(IndexError):  # a mask of 2 and 3 indices (out of range too) do not broadcast
        torch.zeros(4, 3, device=device)[torch.tensor([True, False, True, False], device=device),
                                         torch.tensor([0, 9, 9], device=device)]
    # the index check runs, then out= is refused: the check must not fire at a later read
    for call in (lambda o: torch.scatter(x, 0, bad, torch.ones(1, device=device), out=o),
                 lambda o: torch.scatter_reduce(x, 0, bad, torch.ones(1, device=device), "sum", out=o)):
        with pytest.raises(RuntimeError):
            call(torch.empty(4, dtype=torch.float64, device=device))
    assert torch.ones(3, device=device).sum().item() == 3.0
    assert arr(x).tolist() == [0.0] * 4


@pytest.mark.parametrize("device", DEVICES)
def test_advanced_writes_into_a_view_land_in_the_view(device):
    """x[1] is a view at an offset: writes through advanced indices land in row 1 (opencl wrote row 2)."""
    x = torch.zeros(3, 4, device=device)
    v = x[1]
    v[[0, 2]] = 5.0
    v[torch.tensor([False, True, False, False], device=device)] = 6.0
    v.index_put_((torch.tensor([3, 3], device=device),), torch.tensor([1.0, 2.0], device=device), accumulate=True)
    want = np.zeros((3, 4), np.float32)
    want[1] = [5, 6, 5, 3]
    np.testing.assert_array_equal(arr(x), want)
    y = torch.ones(2, 3, device=device)
    y[0, :, None][[0, 2]] = -1.0  # a strided view
    assert arr(y).tolist() == [[-1, 1, -1], [1, 1, 1]]


@pytest.mark.parametrize("device", DEVICES)
def test_gather_scatter_empty_and_0d_operands(device):
    """PyTorch checks no shape of an empty index (but the dtypes), and reads a 0-d operand as 1-d."""
    x = torch.arange(6.0, device=device).reshape(2, 3)
    e = torch.zeros(0, 5, 2, dtype=torch.int64, device=device)
    assert tuple(x.gather(1, e).shape) == (0, 5, 2)
    np.testing.assert_array_equal(arr(x.scatter_add(0, e, torch.ones(1, device=device))), arr(x))
    np.testing.assert_array_equal(arr(x.scatter(0, e, torch.ones(1, device=device))), arr(x))
    with pytest.raises(RuntimeError, match="dtype"):
        x.scatter_add(0, e, torch.ones(1, dtype=torch.float64, device=device))
    v = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    g = v.gather(0, torch.tensor(2, device=device))
    assert g.shape == () and g.item() == 3.0
    g.backward()
    assert arr(v.grad).tolist() == [0.0, 0.0, 1.0]
    r = torch.zeros(3, device=device).scatter_add(0, torch.tensor(1, device=device), torch.tensor(5.0, device=device))
    assert arr(r).tolist() == [0.0, 5.0, 0.0]
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.zeros(3, device=device).scatter_add(0, torch.tensor(3, device=device),
                                                  torch.tensor(5.0, device=device)).cpu()
    z = torch.zeros(2, 0, 1, dtype=torch.int64, device=device)  # no element: no index read
    assert tuple(z.index_add(1, torch.tensor([4], device=device), torch.ones(2, 1, 1, dtype=torch.int64,
                                                                             device=device)).shape) == (2, 0, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_mask_counts_and_empty_value_checks(device):
    """A mask selecting nothing makes the result empty: no index is read (PyTorch); a value that does not fit an
    empty result still raises; a 0-d integer index beside one mask keeps the masked_fill path (any value dtype)."""
    x = torch.zeros(1, 3, device=device)
    none = torch.tensor([False], device=device)
    assert tuple(x[None, none, torch.tensor([-4], device=device)].shape) == (1, 0)
    x[torch.tensor([1], device=device), torch.tensor([False, False, False], device=device)] = 1.0
    for key, shape in (([], (2, 3)), ((0, []), (3,))):
        with pytest.raises(RuntimeError, match="shape mismatch"):
            torch.zeros(2, 3, device=device)[key] = torch.ones(shape, device=device)
    b = torch.zeros(2, 1, 1, dtype=torch.bool)
    b[None, torch.tensor([True, False]), ..., torch.tensor(-1)] = torch.tensor(1)
    assert b.flatten().tolist() == [True, False]
    i = torch.zeros(3, 1, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="dtypes match"):  # a Python True is an index tensor too
        i[torch.tensor([False, False, True]), True] = torch.tensor(True)
