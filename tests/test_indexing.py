"""__getitem__/__setitem__, views sharing storage, gather/scatter_add/index_select and in-place ops."""
import numpy as np
import pytest

import coretorch as torch


def np_arange(*shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


def check(t, expected):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape
    np.testing.assert_array_equal(t.numpy(), expected)


# ---------------------------------------------------------------------------------------------
# __getitem__
# ---------------------------------------------------------------------------------------------
N = np_arange(4, 5, 6)


@pytest.mark.parametrize("key", [
    0, 3, -1, -4,
    (1, 2), (-1, -2, -3), (0, 0, 0),
    slice(None), slice(1, 3), slice(None, None, 2), slice(1, None, 3), slice(-3, None), slice(2, 100),
    slice(3, 1),
    (slice(None), slice(1, 4, 2)), (slice(None, None, 2), slice(None), slice(5, None, 2)),
    None, (None, 0), (slice(None), None, 1), (0, None, None, slice(1, 3)),
    Ellipsis, (Ellipsis, 0), (0, Ellipsis), (Ellipsis, None), (1, Ellipsis, slice(0, 6, 4)),
    (Ellipsis, 1, 2),
])
def test_basic_getitem_matches_numpy(key):
    x = torch.tensor(N)
    check(x[key], N[key])


@pytest.mark.parametrize("key", [
    [0, 2, 3], ([[0, 1], [2, 3]],), [-1, 0], [1, 1, 1],   # (a bare nested list is a tuple in PyTorch: 15e's tests)
    ([0, 1], [2, 3]), ([0, 3], slice(None), [5, 0]), (slice(None), [0, 4]), (1, [0, 2], slice(1, 3)),
    (slice(None), [1, 2], [3, 4]), ([0, 1], slice(None), [1, 3]), (Ellipsis, [0, 5]), (None, [0, 1]),
    ([[0], [3]], [[1, 2]]),
])
def test_advanced_getitem_lists_matches_numpy(key):
    x = torch.tensor(N)
    check(x[key], N[key])


def test_advanced_getitem_tensors_matches_numpy():
    x = torch.tensor(N)
    i = np.array([3, 0, 0])
    check(x[torch.tensor(i)], N[i])
    check(x[:, torch.tensor(i)], N[:, i])
    check(x[torch.tensor(i), 1:4], N[i, 1:4])
    check(x[torch.tensor(i, dtype=torch.int32)], N[i])
    j = np.array([[1, 2], [0, 4]])
    check(x[0, torch.tensor(j)], N[0, j])
    check(x[torch.tensor([1, 2]), torch.tensor([0, 4]), torch.tensor([5, 5])], N[[1, 2], [0, 4], [5, 5]])
    check(x[torch.tensor(2)], N[2])  # a 0-d integer tensor selects
    check(x[np.array([0, 1])], N[np.array([0, 1])])
    check(x[np.int64(1)], N[1])


def test_boolean_masks_match_numpy():
    x = torch.tensor(N)
    m = N > 50
    check(x[torch.tensor(m)], N[m])
    check(x[x > 50], N[m])
    rows = np.array([True, False, True, True])
    check(x[torch.tensor(rows)], N[rows])
    check(x[torch.tensor(rows), 1], N[rows, 1])
    m2 = N[0] % 3 == 0
    check(x[1:, torch.tensor(m2)], N[1:, m2])
    check(x[..., torch.tensor(N[0, 0] > 2)], N[..., N[0, 0] > 2])
    check(x[torch.tensor(np.zeros((4, 5, 6), bool))], N[np.zeros((4, 5, 6), bool)])
    check(x[[True, False, False, True]], N[[True, False, False, True]])
    u8 = torch.tensor(rows.astype(np.uint8))  # byte masks act as bool masks
    check(x[u8], N[rows])


def test_getitem_keeps_dtype_and_sizes():
    x = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    assert x[0].dtype is torch.int32 and x[[0]].dtype is torch.int32 and x[x > 1].dtype is torch.int32
    assert x[0, 0].shape == () and x[0, 0].item() == 1
    assert x[None].shape == (1, 2, 2) and x[:, None].shape == (2, 1, 2)
    assert x[True].shape == (1, 2, 2)
    assert x[[]].shape == (0, 2)


def test_getitem_0d():
    x = torch.tensor(5.0)
    assert x[None].shape == (1,) and x[...].shape == () and x[...].item() == 5.0


def test_step_slice_values():
    x = torch.arange(10)
    check(x[::3], np.arange(10)[::3])
    check(x[1:8:2], np.arange(10)[1:8:2])
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]


# ---------------------------------------------------------------------------------------------
# views share storage with their base
# ---------------------------------------------------------------------------------------------
class TestViews:
    def test_int_index_view(self):
        x = torch.zeros(3, 4)
        v = x[1]
        v[2] = 5.0
        expected = np.zeros((3, 4), np.float32)
        expected[1, 2] = 5.0
        check(x, expected)
        x[1, 0] = 7.0
        assert v[0].item() == 7.0

    def test_slice_view(self):
        x = torch.zeros(3, 4)
        v = x[:, 1:3]
        v.fill_(2.0)
        expected = np.zeros((3, 4), np.float32)
        expected[:, 1:3] = 2.0
        check(x, expected)

    def test_strided_view_in_place(self):
        n = np_arange(6, 6)
        x = torch.tensor(n)
        x[::2, 1::2].mul_(-1)
        n[::2, 1::2] *= -1
        check(x, n)

    def test_view_of_view(self):
        n = np_arange(4, 6)
        x = torch.tensor(n)
        v = x[1:][:, ::2][0]
        v.add_(100)
        n[1:][:, ::2][0] += 100
        check(x, n)

    def test_none_and_ellipsis_views(self):
        x = torch.zeros(2, 3)
        x[None][0, 1, 2] = 1.0
        x[..., 0].fill_(4.0)
        check(x, np.array([[4, 0, 0], [4, 0, 1]], np.float32))

    def test_shape_views(self):
        x = torch.zeros(2, 3)
        x.view(6)[4] = 1.0
        x.t()[0].add_(2.0)
        x.reshape(3, 2)[2].fill_(9.0)
        x.unsqueeze(0)[0, 0, 0] = -1.0
        expected = np.zeros((2, 3), np.float32)
        expected.reshape(6)[4] = 1.0
        expected.T[0] += 2.0
        expected.reshape(3, 2)[2] = 9.0
        expected[0, 0] = -1.0
        check(x, expected)

    def test_advanced_index_is_a_copy(self):
        x = torch.zeros(3)
        c = x[[0, 1]]
        c[0] = 5.0
        m = x[x == 0]
        m[1] = 3.0
        check(x, np.zeros(3, np.float32))

    def test_version_counter_shared(self):
        x = torch.zeros(3)
        v = x[1:]
        before = x._version
        v.add_(1)
        assert x._version > before
        assert v._vc is x._vc and v._version == x._version


# ---------------------------------------------------------------------------------------------
# __setitem__
# ---------------------------------------------------------------------------------------------
class TestSetitem:
    def test_scalars(self):
        n = np.zeros((3, 4), np.float32)
        x = torch.zeros(3, 4)
        for key, val in ((0, 1.0), ((1, 2), 7), ((slice(None), -1), 2.5), ((Ellipsis, 0), -3), (-1, True)):
            x[key] = val
            n[key] = val
            check(x, n)

    def test_scalar_into_int_tensor_truncates(self):
        x = torch.zeros(3, dtype=torch.int64)
        x[0] = 2.7
        x[1] = -2.7
        check(x, np.array([2.7, -2.7, 0]).astype(np.int64))
        assert x.dtype is torch.int64

    def test_tensor_values_and_broadcasting(self):
        n = np.zeros((3, 4), np.float32)
        x = torch.zeros(3, 4)
        row = np.arange(4, dtype=np.float32)
        x[1] = torch.tensor(row)
        n[1] = row
        x[:] = torch.tensor(row) + 10  # broadcast a row over every row
        n[:] = row + 10
        check(x, n)
        col = np.array([[1.0], [2.0], [3.0]], np.float32)
        x[:, 1:3] = torch.tensor(col)
        n[:, 1:3] = col
        check(x, n)
        x[0, :] = torch.tensor(9.0)
        n[0, :] = 9.0
        x[2] = torch.ones(1, 1, 4)  # leading 1s of the value are dropped
        n[2] = 1.0
        check(x, n)

    def test_basic_setitem_casts_tensor_values(self):
        x = torch.zeros(3, dtype=torch.int32)
        x[0] = torch.tensor(2.7)
        x[1:] = torch.tensor([3.9, -1.2], dtype=torch.float64)
        check(x, np.array([2.7, 3.9, -1.2]).astype(np.int32))
        f = torch.zeros(2)
        f[:] = torch.tensor([1, 2])
        check(f, np.array([1.0, 2.0], np.float32))

    def test_masks(self):
        n = np_arange(3, 4)
        x = torch.tensor(n)
        x[x > 6] = 0.0
        n[n > 6] = 0.0
        check(x, n)
        x[torch.tensor([True, False, True])] = -1.0
        n[[True, False, True]] = -1.0
        check(x, n)
        m = n == 0
        vals = np.arange(m.sum(), dtype=np.float32) + 100
        x[torch.tensor(m)] = torch.tensor(vals)
        n[m] = vals
        check(x, n)
        x[x < 0] = torch.tensor(0.5, dtype=torch.float64)  # one CPU element + one mask: masked_fill, casts
        n[n < 0] = 0.5
        check(x, n)

    def test_integer_indices(self):
        n = np.zeros((4, 3), np.float32)
        x = torch.zeros(4, 3)
        x[[0, 2]] = 1.0
        n[[0, 2]] = 1.0
        x[torch.tensor([1, 3]), torch.tensor([0, 2])] = torch.tensor([5.0, 6.0])
        n[[1, 3], [0, 2]] = [5.0, 6.0]
        x[[-1], 1:] = torch.tensor([[7.0, 8.0]])
        n[[-1], 1:] = [[7.0, 8.0]]
        x[:, [1]] = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
        n[:, [1]] = [[1.0], [2.0], [3.0], [4.0]]
        check(x, n)

    def test_setitem_on_view_writes_base(self):
        x = torch.zeros(2, 3)
        v = x[1]
        v[[0, 2]] = 4.0
        v[v == 0] = 1.0
        check(x, np.array([[0, 0, 0], [4, 1, 4]], np.float32))

    def test_setitem_bumps_version(self):
        x = torch.zeros(3)
        before = x._version
        x[0] = 1.0
        assert x._version == before + 1

    def test_advanced_setitem_needs_equal_dtypes(self):
        x = torch.zeros(3, dtype=torch.int64)
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got "
                                               "Long for the destination and Float for the source"):
            x[[0, 1]] = torch.tensor([1.5, 2.5])
        f = torch.zeros(3)
        with pytest.raises(RuntimeError, match="got Float for the destination and Double for the source"):
            f[f == 0] = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
        check(f, np.zeros(3, np.float32))

    def test_value_shape_mismatch(self):
        x = torch.zeros(2, 3)
        with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match the existing size "
                                               r"\(2\) at non-singleton dimension 1"):
            x[:] = torch.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot be broadcast to "
                                               r"indexing result of shape \[1, 3\]"):
            x[torch.tensor([True, False])] = torch.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError, match="shape mismatch"):
            x[[0, 1], [0, 1]] = torch.tensor([1.0, 2.0, 3.0])
        check(x, np.zeros((2, 3), np.float32))


# ---------------------------------------------------------------------------------------------
# gather / scatter_add / index_select
# ---------------------------------------------------------------------------------------------
class TestGatherScatter:
    def test_gather(self):
        rng = np.random.default_rng(0)
        a = rng.standard_normal((3, 4)).astype(np.float32)
        for dim in (0, 1, -1):
            idx = rng.integers(0, a.shape[dim], size=(3, 4) if dim == 0 else (3, 2))
            out = torch.tensor(a).gather(dim, torch.tensor(idx))
            check(out, np.take_along_axis(a, idx, axis=dim))
        out = torch.gather(torch.tensor([[1, 2], [3, 4]]), 1, torch.tensor([[0, 0], [1, 0]]))
        check(out, np.array([[1, 1], [4, 3]]))
        # an index smaller than the input in the other dims reads the leading block
        idx = np.array([[2], [0]])
        check(torch.tensor(a).gather(1, torch.tensor(idx)), np.take_along_axis(a[:2], idx, axis=1))

    def test_scatter_add(self):
        src = np.arange(1, 11, dtype=np.float32).reshape(2, 5)
        idx = np.array([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
        expected = np.zeros((3, 5), np.float32)
        for i in range(2):
            for j in range(5):
                expected[idx[i, j], j] += src[i, j]
        out = torch.zeros(3, 5).scatter_add(0, torch.tensor(idx), torch.tensor(src))
        check(out, expected)
        base = torch.ones(3, 5)
        out = torch.scatter_add(base, 0, torch.tensor(idx), torch.tensor(src))
        check(out, expected + 1)
        check(base, np.ones((3, 5), np.float32))  # out of place
        idx1 = np.array([[0, 0, 1], [3, 3, 3]])
        out = torch.zeros(2, 4, dtype=torch.int64).scatter_add(1, torch.tensor(idx1), torch.ones(2, 3,
                                                                                               dtype=torch.int64))
        expected = np.zeros((2, 4), np.int64)
        np.add.at(expected, (np.array([[0, 0, 0], [1, 1, 1]]), idx1), 1)
        check(out, expected)

    def test_index_select(self):
        a = np_arange(3, 4, dtype=np.int64)
        for dim, idx in ((0, [2, 0]), (1, [0, 2, 2]), (-1, [3])):
            out = torch.tensor(a).index_select(dim, torch.tensor(idx))
            check(out, np.take(a, idx, axis=dim))
        check(torch.index_select(torch.tensor(a), 0, torch.tensor([1], dtype=torch.int32)), a[[1]])
        out = torch.tensor(a).index_select(0, torch.tensor([0, 1]))
        out[0, 0] = 99  # a copy
        assert torch.tensor(a)[0, 0].item() == 0

    def test_index_add(self):
        a = np.zeros((3, 2), np.float32)
        src = np.arange(6, dtype=np.float32).reshape(3, 2)
        idx = np.array([0, 2, 0])
        expected = a.copy()
        np.add.at(expected, idx, src)
        check(torch.tensor(a).index_add(0, torch.tensor(idx), torch.tensor(src)), expected)

    def test_index_errors(self):
        x = torch.zeros(2, 3)
        with pytest.raises(RuntimeError, match="out of bounds"):  # PyTorch: RuntimeError for gather/scatter
            x.gather(1, torch.tensor([[0, 3]]))
        with pytest.raises(IndexError, match="out of range"):
            x.index_select(0, torch.tensor([2]))
        with pytest.raises(RuntimeError, match="int32/int64"):
            x.gather(1, torch.tensor([[0.0]]))
        with pytest.raises(RuntimeError):
            x.scatter_add(0, torch.tensor([[0]]), torch.ones(1, 1, dtype=torch.float64))


# ---------------------------------------------------------------------------------------------
# in-place ops
# ---------------------------------------------------------------------------------------------
class TestInPlace:
    @pytest.mark.parametrize("name, other, npop", [
        ("add_", 2.5, np.add), ("sub_", 1.5, np.subtract), ("mul_", -3.0, np.multiply), ("div_", 4.0, np.divide),
        ("add_", "tensor", np.add), ("sub_", "tensor", np.subtract), ("mul_", "tensor", np.multiply),
        ("div_", "tensor", np.divide), ("add_", "row", np.add), ("mul_", "row", np.multiply),
    ])
    def test_arithmetic_values_and_self(self, name, other, npop):
        n = np_arange(2, 3) + 1
        o = {"tensor": np_arange(2, 3) * 0.5 + 1, "row": np.array([1.0, -2.0, 0.5], np.float32)}.get(other, other)
        x = torch.tensor(n)
        r = getattr(x, name)(torch.tensor(o) if isinstance(o, np.ndarray) else o)
        assert r is x
        assert x.dtype is torch.float32 and x.shape == (2, 3)
        np.testing.assert_allclose(x.numpy(), npop(n, o).astype(np.float32), rtol=1e-6)

    def test_alpha(self):
        n, o = np_arange(3), np.ones(3, np.float32)
        x = torch.tensor(n)
        x.add_(torch.tensor(o), alpha=3)
        np.testing.assert_allclose(x.numpy(), n + 3 * o)
        x.sub_(torch.tensor(o), alpha=0.5)
        np.testing.assert_allclose(x.numpy(), n + 2.5 * o)

    def test_operators(self):
        n = np_arange(4)
        x = torch.tensor(n)
        ident = id(x)
        x += 1
        x *= 2
        x -= 0.5
        x /= 4
        assert id(x) == ident
        np.testing.assert_allclose(x.numpy(), ((n + 1) * 2 - 0.5) / 4)

    def test_int_in_place(self):
        x = torch.tensor([1, 2, 3])
        assert x.add_(2) is x and x.tolist() == [3, 4, 5]
        x.mul_(torch.tensor([1, 0, -1], dtype=torch.int32))
        assert x.dtype is torch.int64 and x.tolist() == [3, 0, -5]
        y = torch.tensor([1, 2], dtype=torch.int32)
        y.add_(torch.tensor([10, 20]))  # int64 result casts back to int32
        assert y.dtype is torch.int32 and y.tolist() == [11, 22]
        f = torch.tensor([1.0, 2.0])
        f.add_(torch.tensor([1.0, 1.0], dtype=torch.float64))
        assert f.dtype is torch.float32 and f.tolist() == [2.0, 3.0]
        f.mul_(torch.tensor([2, 3]))
        assert f.tolist() == [4.0, 9.0]

    @pytest.mark.parametrize("call", [
        lambda x: x.add_(1.5), lambda x: x.sub_(0.5), lambda x: x.mul_(1.5), lambda x: x.div_(2),
        lambda x: x.add_(torch.tensor([0.5, 0.5])), lambda x: x.div_(torch.tensor([1, 2])),
        lambda x: x.clamp_(0.5, 2.5),
    ])
    def test_int_tensor_rejects_float_result(self, call):
        x = torch.tensor([1, 2])
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            call(x)
        assert x.tolist() == [1, 2]

    def test_bool_tensor_rejects_int_result(self):
        with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
            torch.tensor([True]).add_(1)

    def test_broadcast_must_fit_self(self):
        with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
            torch.zeros(3).add_(torch.zeros(2, 3))

    def test_zero_fill_copy(self):
        x = torch.tensor(np_arange(2, 3))
        assert x.zero_() is x
        check(x, np.zeros((2, 3), np.float32))
        assert x.fill_(3.5) is x
        check(x, np.full((2, 3), 3.5, np.float32))
        x.fill_(torch.tensor(2))
        check(x, np.full((2, 3), 2.0, np.float32))
        i = torch.zeros(3, dtype=torch.int64)
        i.fill_(2.9)
        assert i.tolist() == [2, 2, 2]
        src = np.array([1.5, -2.5, 3.5])
        assert x.copy_(torch.tensor(src)) is x  # broadcasts a row; float64 -> float32
        check(x, np.broadcast_to(src.astype(np.float32), (2, 3)))
        i.copy_(torch.tensor(src))
        check(i, src.astype(np.int64))
        with pytest.raises(RuntimeError):
            x.copy_(torch.zeros(4))
        with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
            x.fill_(torch.zeros(2))

    def test_clamp_(self):
        n = np.linspace(-3, 3, 13).astype(np.float32)
        x = torch.tensor(n)
        assert x.clamp_(-1, 2) is x
        np.testing.assert_array_equal(x.numpy(), np.clip(n, -1, 2))
        x = torch.tensor(n)
        x.clamp_(min=0.5)
        np.testing.assert_array_equal(x.numpy(), np.maximum(n, 0.5))
        x = torch.tensor(n)
        x.clamp_(max=-0.5)
        np.testing.assert_array_equal(x.numpy(), np.minimum(n, -0.5))
        i = torch.tensor([-5, 0, 5])
        i.clamp_(-1, 1)
        assert i.dtype is torch.int64 and i.tolist() == [-1, 0, 1]

    def test_uniform_normal(self):
        torch.manual_seed(0)
        x = torch.empty(4000)
        assert x.uniform_(2, 3) is x
        a = x.numpy()
        assert a.min() >= 2 and a.max() < 3 and abs(a.mean() - 2.5) < 0.05
        assert x.normal_(5.0, 0.5) is x
        a = x.numpy()
        assert abs(a.mean() - 5.0) < 0.05 and abs(a.std() - 0.5) < 0.05
        d = torch.empty(10, dtype=torch.float64).uniform_()
        assert d.dtype is torch.float64 and 0 <= d.numpy().min() and d.numpy().max() < 1

    @pytest.mark.parametrize("name", ["uniform_", "normal_"])
    def test_random_in_place_needs_float(self, name):
        with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
            getattr(torch.zeros(3, dtype=torch.int64), name)()

    @pytest.mark.parametrize("call, npcall", [
        (lambda v: v.add_(1), lambda v: v.__iadd__(1)),
        (lambda v: v.sub_(torch.tensor(2.0)), lambda v: v.__isub__(2)),
        (lambda v: v.mul_(3), lambda v: v.__imul__(3)),
        (lambda v: v.div_(2), lambda v: v.__itruediv__(2)),
        (lambda v: v.zero_(), lambda v: v.fill(0)),
        (lambda v: v.fill_(7), lambda v: v.fill(7)),
        (lambda v: v.copy_(torch.tensor([9.0, 8.0])), lambda v: v.__setitem__(Ellipsis, [9.0, 8.0])),
        (lambda v: v.clamp_(2, 5), lambda v: np.clip(v, 2, 5, out=v)),
        (lambda v: v.uniform_(10, 11), None),
        (lambda v: v.normal_(100, 1), None),
    ])
    def test_in_place_on_view_changes_base(self, call, npcall):
        n = np_arange(3, 4)
        x = torch.tensor(n)
        v = x[1:, 1:3].t()  # a non-contiguous view: shape (2, 2)
        r = call(v)
        assert r is v
        if npcall is not None:
            npcall(n[1:, 1:3].T)
            check(x, n)
        else:
            changed = x.numpy()[1:, 1:3]
            assert changed.min() > 9
            mask = np.ones((3, 4), bool)
            mask[1:, 1:3] = False
            np.testing.assert_array_equal(x.numpy()[mask], n[mask])

    def test_in_place_visible_through_other_views(self):
        x = torch.zeros(2, 3)
        a, b = x[0], x.view(6)
        a.add_(torch.tensor([1.0, 2.0, 3.0]))
        check(b, np.array([1, 2, 3, 0, 0, 0], np.float32))
        b.mul_(2)
        check(a, np.array([2, 4, 6], np.float32))
        d = x.detach()
        d.zero_()
        check(x, np.zeros((2, 3), np.float32))

    def test_in_place_on_expanded_view_raises(self):
        x = torch.zeros(3)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single "
                                               "memory location"):
            x.expand(2, 3).add_(1)

    def test_leaf_requiring_grad_rejects_in_place(self):
        x = torch.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                               "operation"):
            x.add_(1)
        with torch.no_grad():
            x.add_(1)
        assert x.detach().tolist() == [1.0, 1.0]
