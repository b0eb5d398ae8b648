"""Tensor creation, attributes, conversions and printing, checked against PyTorch's documented behaviour."""
import numpy as np
import pytest

import coretorch as torch


@pytest.fixture
def default_float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def assert_values(t, expected, dtype=None):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape
    if dtype is not None:
        assert t.dtype is dtype
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# torch.tensor: dtype inference
# ---------------------------------------------------------------------------------------------
class TestTensorInference:
    def test_python_floats_give_default_dtype(self):
        t = torch.tensor([1.0, 2.5, -3.0])
        assert t.dtype is torch.float32
        assert_values(t, np.array([1.0, 2.5, -3.0], dtype=np.float32))

    def test_python_ints_give_int64(self):
        t = torch.tensor([[1, 2], [3, 4]])
        assert t.dtype is torch.int64
        assert t.shape == (2, 2)
        np.testing.assert_array_equal(t.numpy(), np.array([[1, 2], [3, 4]]))

    def test_python_bools_give_bool(self):
        t = torch.tensor([True, False, True])
        assert t.dtype is torch.bool
        assert t.tolist() == [True, False, True]

    def test_mixed_int_float_is_float(self):
        t = torch.tensor([1, 2.5])
        assert t.dtype is torch.float32
        assert t.tolist() == [1.0, 2.5]

    def test_mixed_bool_int_is_int(self):
        t = torch.tensor([True, 2])
        assert t.dtype is torch.int64
        assert t.tolist() == [1, 2]

    def test_scalars_are_0d(self):
        for v, d in ((3.5, torch.float32), (7, torch.int64), (False, torch.bool)):
            t = torch.tensor(v)
            assert t.dim() == 0 and t.shape == () and t.dtype is d
            assert t.item() == v

    @pytest.mark.parametrize("npdt, dt", [(np.float64, torch.float64), (np.float32, torch.float32),
                                          (np.float16, torch.float16), (np.int32, torch.int32),
                                          (np.int64, torch.int64), (np.uint8, torch.uint8), (np.int8, torch.int8),
                                          (np.bool_, torch.bool)])
    def test_numpy_arrays_keep_their_dtype(self, npdt, dt):
        a = (np.arange(6).reshape(2, 3) % 2).astype(npdt)
        t = torch.tensor(a)
        assert t.dtype is dt
        np.testing.assert_array_equal(t.numpy(), a)

    def test_numpy_scalar_keeps_its_dtype(self):
        t = torch.tensor(np.float64(2.5))
        assert t.dtype is torch.float64 and t.dim() == 0 and t.item() == 2.5

    def test_tensor_copies_numpy_data(self):
        a = np.arange(3.0)
        t = torch.tensor(a)
        a[0] = 100.0
        assert t[0].item() == 0.0

    def test_explicit_dtype(self):
        t = torch.tensor([1, 2, 3], dtype=torch.float64)
        assert t.dtype is torch.float64
        assert t.tolist() == [1.0, 2.0, 3.0]
        t = torch.tensor([1.7, -1.7], dtype=torch.int32)
        assert t.dtype is torch.int32
        np.testing.assert_array_equal(t.numpy(), np.array([1.7, -1.7]).astype(np.int32))

    def test_from_list_of_0d_tensors(self):
        t = torch.tensor([torch.tensor(1.5), torch.tensor(2.5)])
        assert t.dtype is torch.float32 and t.tolist() == [1.5, 2.5]

    def test_from_tensor_copies(self):
        a = torch.tensor([1, 2])
        b = torch.tensor(a)
        b[0] = 10
        assert a.tolist() == [1, 2] and b.dtype is torch.int64

    def test_empty_list(self):
        t = torch.tensor([])
        assert t.shape == (0,) and t.dtype is torch.float32 and t.numel() == 0

    def test_requires_grad_keyword(self):
        t = torch.tensor([1.0, 2.0], requires_grad=True)
        assert t.requires_grad and t.is_leaf and t.grad_fn is None

    def test_ragged_raises_value_error(self):
        with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
            torch.tensor([[1, 2], [3]])

    def test_default_dtype_is_used(self, default_float64):
        assert torch.get_default_dtype() is torch.float64
        assert torch.tensor([1.0]).dtype is torch.float64
        assert torch.tensor([1]).dtype is torch.int64
        assert torch.zeros(2).dtype is torch.float64
        assert torch.rand(2).dtype is torch.float64
        assert torch.arange(0.0, 1.0, 0.5).dtype is torch.float64


class TestDefaultDtype:
    def test_default_is_float32(self):
        assert torch.get_default_dtype() is torch.float32

    def test_set_and_restore(self):
        old = torch.get_default_dtype()
        try:
            torch.set_default_dtype(torch.float64)
            assert torch.get_default_dtype() is torch.float64
            assert torch.ones(1).dtype is torch.float64
            assert (torch.tensor([1, 2]) / 2).dtype is torch.float64
            assert (torch.tensor([1, 2]) + 0.5).dtype is torch.float64
        finally:
            torch.set_default_dtype(old)
        assert torch.get_default_dtype() is torch.float32
        assert torch.ones(1).dtype is torch.float32

    def test_only_floating_types(self):
        with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
            torch.set_default_dtype(torch.int64)
        assert torch.get_default_dtype() is torch.float32


# ---------------------------------------------------------------------------------------------
# factories
# ---------------------------------------------------------------------------------------------
class TestFactories:
    @pytest.mark.parametrize("fn, value", [(torch.zeros, 0), (torch.ones, 1)])
    def test_zeros_ones(self, fn, value):
        for args in ((2, 3), ((2, 3),), ([2, 3],), (torch.Size([2, 3]),)):
            t = fn(*args)
            assert t.shape == (2, 3) and t.dtype is torch.float32 and not t.requires_grad
            np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value, np.float32))
        t = fn(4, dtype=torch.int32)
        assert t.dtype is torch.int32
        np.testing.assert_array_equal(t.numpy(), np.full(4, value, np.int32))
        assert fn(()).shape == () and fn(0).numel() == 0

    def test_factory_keywords(self):
        for fn in (torch.zeros, torch.ones, torch.empty, torch.rand, torch.randn):
            t = fn(2, 3, dtype=torch.float64, device="cpu", requires_grad=True)
            assert t.shape == (2, 3) and t.dtype is torch.float64
            assert t.device == torch.device("cpu") and t.device.type == "cpu"
            assert t.requires_grad and t.is_leaf
        t = torch.full((2,), 1.5, dtype=torch.float64, device=torch.device("cpu"), requires_grad=True)
        assert t.requires_grad and t.dtype is torch.float64
        t = torch.arange(3.0, device="cpu", requires_grad=True)
        assert t.requires_grad and t.dtype is torch.float32
        t = torch.eye(2, dtype=torch.float64, requires_grad=True)
        assert t.requires_grad and t.dtype is torch.float64
        t = torch.linspace(0, 1, 3, dtype=torch.float64, requires_grad=True)
        assert t.requires_grad and t.dtype is torch.float64

    def test_int_factory_cannot_require_grad(self):
        with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
            torch.zeros(2, dtype=torch.int64, requires_grad=True)

    def test_full_infers_dtype_from_fill_value(self):
        t = torch.full((2, 2), 3)
        assert t.dtype is torch.int64 and t.tolist() == [[3, 3], [3, 3]]
        t = torch.full((2,), 2.5)
        assert t.dtype is torch.float32 and t.tolist() == [2.5, 2.5]
        t = torch.full((2,), True)
        assert t.dtype is torch.bool and t.tolist() == [True, True]
        t = torch.full((3,), 7, dtype=torch.float16)
        assert t.dtype is torch.float16
        np.testing.assert_array_equal(t.numpy(), np.full(3, 7, np.float16))

    def test_empty(self):
        t = torch.empty(3, 4)
        assert t.shape == (3, 4) and t.dtype is torch.float32
        assert torch.empty((2,), dtype=torch.int64).dtype is torch.int64

    def test_arange(self):
        t = torch.arange(5)
        assert t.dtype is torch.int64
        np.testing.assert_array_equal(t.numpy(), np.arange(5))
        t = torch.arange(2, 11, 3)
        assert t.dtype is torch.int64
        np.testing.assert_array_equal(t.numpy(), np.arange(2, 11, 3))
        t = torch.arange(0, 1, 0.25)
        assert t.dtype is torch.float32
        np.testing.assert_allclose(t.numpy(), np.arange(0, 1, 0.25, dtype=np.float32))
        t = torch.arange(5, dtype=torch.float64)
        assert t.dtype is torch.float64
        np.testing.assert_array_equal(t.numpy(), np.arange(5.0))
        t = torch.arange(5, 0, -2)
        np.testing.assert_array_equal(t.numpy(), np.arange(5, 0, -2))
        assert torch.arange(3, 3).numel() == 0
        t = torch.arange(0.0, 4.0, 1.0, dtype=torch.int64)
        assert t.dtype is torch.int64 and t.tolist() == [0, 1, 2, 3]
        with pytest.raises(ValueError, match="step must be nonzero"):
            torch.arange(0, 3, 0.5, dtype=torch.int64)  # the step is converted to the integer dtype first
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            torch.arange(0, 3, 0)

    def test_linspace(self):
        t = torch.linspace(-1, 1, 5)
        assert t.dtype is torch.float32 and t.shape == (5,)
        np.testing.assert_allclose(t.numpy(), np.linspace(-1, 1, 5, dtype=np.float32))
        t = torch.linspace(0, 1, 7, dtype=torch.float64)
        np.testing.assert_allclose(t.numpy(), np.linspace(0, 1, 7))
        assert torch.linspace(0, 1, 1).tolist() == [0.0]

    def test_eye(self):
        t = torch.eye(3)
        assert t.dtype is torch.float32
        np.testing.assert_array_equal(t.numpy(), np.eye(3, dtype=np.float32))
        t = torch.eye(2, 4, dtype=torch.int64)
        assert t.dtype is torch.int64
        np.testing.assert_array_equal(t.numpy(), np.eye(2, 4, dtype=np.int64))

    def test_rand_randn_ranges_and_dtypes(self):
        torch.manual_seed(0)
        r = torch.rand(2000)
        assert r.dtype is torch.float32 and r.shape == (2000,)
        a = r.numpy()
        assert a.min() >= 0.0 and a.max() < 1.0 and abs(a.mean() - 0.5) < 0.05
        n = torch.randn(2, 1000, dtype=torch.float64)
        assert n.dtype is torch.float64 and n.shape == (2, 1000)
        b = n.numpy()
        assert abs(b.mean()) < 0.1 and abs(b.std() - 1.0) < 0.1
        assert torch.rand((3, 2)).shape == (3, 2) and torch.randn([4]).shape == (4,)
        assert torch.rand(2, dtype=torch.float16).dtype is torch.float16

    def test_randint(self):
        torch.manual_seed(1)
        t = torch.randint(3, 8, (500,))
        assert t.dtype is torch.int64 and t.shape == (500,)
        a = t.numpy()
        assert a.min() >= 3 and a.max() < 8 and set(np.unique(a)) == {3, 4, 5, 6, 7}
        t = torch.randint(4, (2, 3))  # randint(high, size)
        assert t.shape == (2, 3) and 0 <= t.numpy().min() and t.numpy().max() < 4
        t = torch.randint(0, 10, (5,), dtype=torch.int32)
        assert t.dtype is torch.int32
        t = torch.randint(0, 10, (5,), dtype=torch.float32)
        assert t.dtype is torch.float32 and np.all(t.numpy() == np.floor(t.numpy()))

    def test_rand_of_integer_dtype_raises(self):
        with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
            torch.rand(2, dtype=torch.int64)

    def test_manual_seed_reproducible(self):
        torch.manual_seed(1234)
        a = (torch.rand(5).numpy(), torch.randn(2, 3).numpy(), torch.randint(0, 100, (6,)).numpy())
        torch.manual_seed(1234)
        b = (torch.rand(5).numpy(), torch.randn(2, 3).numpy(), torch.randint(0, 100, (6,)).numpy())
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
        torch.manual_seed(4321)
        c = torch.rand(5).numpy()
        assert not np.array_equal(a[0], c)
        assert torch.initial_seed() == 4321
        # consecutive draws differ
        assert not np.array_equal(torch.rand(5).numpy(), torch.rand(5).numpy())

    def test_manual_seed_reproducible_in_place_random(self):
        torch.manual_seed(7)
        a = torch.empty(10).uniform_(-2, 2).numpy().copy()
        b = torch.empty(10).normal_(3, 0.5).numpy().copy()
        torch.manual_seed(7)
        np.testing.assert_array_equal(torch.empty(10).uniform_(-2, 2).numpy(), a)
        np.testing.assert_array_equal(torch.empty(10).normal_(3, 0.5).numpy(), b)

    def test_like_factories_follow_input(self):
        x = torch.tensor([[1, 2, 3]], dtype=torch.int32)
        for fn, val in ((torch.zeros_like, 0), (torch.ones_like, 1)):
            t = fn(x)
            assert t.shape == (1, 3) and t.dtype is torch.int32 and t.device == x.device
            np.testing.assert_array_equal(t.numpy(), np.full((1, 3), val, np.int32))
        assert torch.empty_like(x).shape == (1, 3) and torch.empty_like(x).dtype is torch.int32
        t = torch.full_like(x, 7)
        assert t.dtype is torch.int32 and t.tolist() == [[7, 7, 7]]
        t = torch.full_like(x, 2.5, dtype=torch.float64)
        assert t.dtype is torch.float64 and t.tolist() == [[2.5, 2.5, 2.5]]
        f = torch.zeros(4, 2, dtype=torch.float64)
        t = torch.rand_like(f)
        assert t.shape == (4, 2) and t.dtype is torch.float64
        assert 0 <= t.numpy().min() and t.numpy().max() < 1
        assert torch.randn_like(f).dtype is torch.float64
        t = torch.randint_like(x, 5)
        assert t.dtype is torch.int32 and t.shape == (1, 3) and t.numpy().max() < 5
        t = torch.randint_like(x, 10, 20)
        assert t.numpy().min() >= 10 and t.numpy().max() < 20

    def test_like_factory_keywords(self):
        x = torch.zeros(2, 2)
        t = torch.ones_like(x, dtype=torch.float64, requires_grad=True)
        assert t.dtype is torch.float64 and t.requires_grad and t.shape == (2, 2)
        t = torch.zeros_like(x, device="cpu")
        assert t.device.type == "cpu" and not t.requires_grad
        assert not torch.zeros_like(torch.zeros(2, requires_grad=True)).requires_grad

    def test_from_numpy_shares_memory(self):
        a = np.arange(6, dtype=np.float64).reshape(2, 3)
        t = torch.from_numpy(a)
        assert t.dtype is torch.float64 and t.shape == (2, 3)
        a[0, 0] = 42.0
        assert t[0, 0].item() == 42.0
        t[1, 2] = -1.0
        assert a[1, 2] == -1.0
        t.add_(1)
        np.testing.assert_array_equal(a, t.numpy())
        assert torch.from_numpy(np.array([1, 2], dtype=np.int32)).dtype is torch.int32

    def test_from_numpy_rejects_non_arrays(self):
        with pytest.raises(TypeError, match="expected np.ndarray"):
            torch.from_numpy([1, 2, 3])

    def test_numpy_shares_memory(self):
        t = torch.zeros(3)
        a = t.numpy()
        a[1] = 5.0
        assert t.tolist() == [0.0, 5.0, 0.0]

    def test_as_tensor(self):
        a = np.arange(3.0)
        t = torch.as_tensor(a)
        assert t.dtype is torch.float64
        a[0] = 9.0
        assert t[0].item() == 9.0  # shares when no conversion is needed
        x = torch.zeros(2)
        assert torch.as_tensor(x) is x


# ---------------------------------------------------------------------------------------------
# legacy constructors
# ---------------------------------------------------------------------------------------------
class TestLegacyConstructors:
    def test_tensor_from_sizes(self):
        t = torch.Tensor(2, 3)
        assert t.shape == (2, 3) and t.dtype is torch.float32

    def test_tensor_from_data(self):
        t = torch.Tensor([1, 2, 3])
        assert t.dtype is torch.float32 and t.tolist() == [1.0, 2.0, 3.0]
        t = torch.Tensor([[1.5], [2.5]])
        assert t.shape == (2, 1) and t.tolist() == [[1.5], [2.5]]

    def test_tensor_no_args_is_empty_1d(self):
        t = torch.Tensor()
        assert t.shape == (0,) and t.dtype is torch.float32

    def test_tensor_from_size_object(self):
        assert torch.Tensor(torch.Size([2, 4])).shape == (2, 4)

    def test_typed_constructors(self):
        f = torch.FloatTensor([1, 2])
        assert f.dtype is torch.float32 and f.tolist() == [1.0, 2.0]
        f = torch.FloatTensor(2, 2)
        assert f.dtype is torch.float32 and f.shape == (2, 2)
        n = torch.LongTensor([1.7, 2.2])
        assert n.dtype is torch.int64 and n.tolist() == [1, 2]
        n = torch.LongTensor(3)
        assert n.dtype is torch.int64 and n.shape == (3,)
        assert torch.DoubleTensor([1]).dtype is torch.float64
        assert torch.IntTensor([1]).dtype is torch.int32
        assert torch.ByteTensor([1]).dtype is torch.uint8
        assert torch.BoolTensor([1, 0]).tolist() == [True, False]

    def test_legacy_constructors_ignore_default_dtype(self, default_float64):
        assert torch.Tensor(2).dtype is torch.float64
        assert torch.FloatTensor(2).dtype is torch.float32

    def test_isinstance(self):
        f = torch.tensor([1.0])
        assert isinstance(f, torch.Tensor)
        assert isinstance(f, torch.FloatTensor)
        assert not isinstance(f, torch.LongTensor)
        assert not isinstance(f, torch.DoubleTensor)
        i = torch.tensor([1])
        assert isinstance(i, torch.LongTensor) and not isinstance(i, torch.FloatTensor)
        assert isinstance(torch.zeros(1, dtype=torch.float64), torch.DoubleTensor)
        assert isinstance(torch.FloatTensor([1.0]), torch.FloatTensor)
        assert not isinstance(np.zeros(1, np.float32), torch.FloatTensor)
        assert torch.is_tensor(f) and not torch.is_tensor([1.0])

    def test_type_names(self):
        assert torch.zeros(1).type() == "torch.FloatTensor"
        assert torch.zeros(1, dtype=torch.int64).type() == "torch.LongTensor"
        assert torch.zeros(1).type(torch.float64).dtype is torch.float64


# ---------------------------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------------------------
class TestAttributes:
    def test_shape_and_size(self):
        t = torch.zeros(2, 3, 4)
        assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
        assert t.size() == (2, 3, 4) and t.size() == t.shape
        assert isinstance(t.shape, torch.Size)
        assert repr(t.shape) == "coretorch.Size([2, 3, 4])"
        assert t.size(0) == 2 and t.size(1) == 3 and t.size(-1) == 4 and t.size(-3) == 2
        assert t.shape.numel() == 24

    def test_dim_ndim_numel(self):
        for shape in ((), (5,), (2, 3), (2, 0, 4), (1, 2, 3, 4)):
            t = torch.zeros(shape)
            assert t.dim() == len(shape) == t.ndim == t.ndimension()
            assert t.numel() == int(np.prod(shape)) == t.nelement() == torch.numel(t)

    def test_dtype_and_device(self):
        t = torch.ones(2, dtype=torch.int8)
        assert t.dtype is torch.int8
        assert isinstance(t.device, torch.device)
        assert t.device == torch.device("cpu") and t.device == "cpu" and str(t.device) == "cpu"
        assert repr(t.device) == "device(type='cpu')"
        assert t.is_cpu
        assert t.element_size() == 1 and torch.zeros(1, dtype=torch.float64).element_size() == 8

    def test_strides_and_contiguity(self):
        n = np.zeros((2, 3, 4), np.float32)
        x = torch.zeros(2, 3, 4)
        assert x.stride() == tuple(s // n.itemsize for s in n.strides) == (12, 4, 1)
        assert x.stride(0) == 12 and x.stride(-1) == 1
        assert x.is_contiguous()
        t = x.transpose(0, 2)
        assert t.stride() == (1, 4, 12) and not t.is_contiguous()
        assert t.contiguous().is_contiguous() and t.contiguous().stride() == (6, 2, 1)
        assert x[:, :, ::2].stride() == (12, 4, 2)
        assert torch.zeros(3).expand(2, 3).stride() == (0, 1)
        with pytest.raises(IndexError, match="Dimension out of range"):
            x.stride(3)

    def test_item(self):
        assert torch.tensor([[2.5]]).item() == 2.5
        v = torch.tensor(3).item()
        assert v == 3 and type(v) is int
        v = torch.tensor(1.5).item()
        assert type(v) is float
        v = torch.tensor(True).item()
        assert v is True
        with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
            torch.tensor([1, 2]).item()

    def test_tolist(self):
        a = np.arange(6).reshape(2, 3)
        assert torch.tensor(a).tolist() == a.tolist()
        assert torch.tensor(2.5).tolist() == 2.5
        f = torch.tensor([[0.5, 1.5]]).tolist()
        assert f == [[0.5, 1.5]] and type(f[0][0]) is float
        assert torch.tensor([True, False]).tolist() == [True, False]

    def test_numpy(self):
        t = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
        a = t.numpy()
        assert isinstance(a, np.ndarray) and a.dtype == np.int32
        np.testing.assert_array_equal(a, [[1, 2], [3, 4]])
        assert np.asarray(t).dtype == np.int32

    def test_numpy_requires_grad_raises(self):
        t = torch.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
            t.numpy()
        np.testing.assert_array_equal(t.detach().numpy(), np.ones(2, np.float32))

    def test_python_number_conversions(self):
        assert float(torch.tensor(2.5)) == 2.5
        assert int(torch.tensor(2.7)) == 2
        assert int(torch.tensor([[-3]])) == -3
        assert [10, 20, 30][torch.tensor(1)] == 20  # __index__


# ---------------------------------------------------------------------------------------------
# conversions
# ---------------------------------------------------------------------------------------------
class TestConversions:
    def test_to_dtype_forms(self):
        t = torch.tensor([1.5, -2.5])
        for u in (t.to(torch.float64), t.to(dtype=torch.float64), t.to("cpu", torch.float64),
                  t.to(torch.device("cpu"), torch.float64), t.to(device="cpu", dtype=torch.float64),
                  t.to(torch.zeros(1, dtype=torch.float64)), t.double()):
            assert u.dtype is torch.float64 and u.device.type == "cpu"
            np.testing.assert_array_equal(u.numpy(), np.array([1.5, -2.5]))
        u = t.to(torch.int64)
        np.testing.assert_array_equal(u.numpy(), np.array([1.5, -2.5], np.float32).astype(np.int64))

    def test_to_device_forms(self):
        t = torch.tensor([1.0, 2.0])
        for u in (t.to("cpu"), t.to(torch.device("cpu")), t.to(device="cpu"), t.to(device=torch.device("cpu")),
                  t.cpu(), t.to(t)):
            assert u is t  # nothing to do: the same tensor, as in torch

    def test_to_same_dtype_returns_self_unless_copy(self):
        t = torch.tensor([1.0, 2.0])
        assert t.to(torch.float32) is t
        assert t.float() is t
        assert t.to(torch.float32, non_blocking=True) is t
        assert t.to(torch.float32, True) is t  # positional bool is non_blocking
        c = t.to(torch.float32, copy=True)
        assert c is not t and c.tolist() == t.tolist()
        c[0] = 5.0
        assert t[0].item() == 1.0
        assert t.to(torch.float32, False, True) is not t  # (dtype, non_blocking, copy)

    def test_to_keeps_autograd(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x.to(torch.float64)
        assert y.requires_grad and y.grad_fn is not None and y.dtype is torch.float64

    @pytest.mark.parametrize("method, npdt, dt", [("float", np.float32, torch.float32),
                                                  ("double", np.float64, torch.float64),
                                                  ("half", np.float16, torch.float16),
                                                  ("long", np.int64, torch.int64), ("int", np.int32, torch.int32),
                                                  ("short", np.int16, torch.int16), ("char", np.int8, torch.int8),
                                                  ("byte", np.uint8, torch.uint8), ("bool", np.bool_, torch.bool)])
    def test_dtype_methods(self, method, npdt, dt):
        src = np.array([0.0, 1.7, 2.2, 3.9, 0.5])
        t = getattr(torch.tensor(src, dtype=torch.float64), method)()
        assert t.dtype is dt
        np.testing.assert_array_equal(t.numpy(), src.astype(npdt))

    def test_truncation_towards_zero(self):
        src = np.array([1.7, -1.7, 2.5, -2.5])
        np.testing.assert_array_equal(torch.tensor(src).long().numpy(), np.trunc(src).astype(np.int64))
        np.testing.assert_array_equal(torch.tensor(src).int().numpy(), np.trunc(src).astype(np.int32))

    def test_type_as(self):
        t = torch.tensor([1, 2]).type_as(torch.zeros(1, dtype=torch.float64))
        assert t.dtype is torch.float64

    def test_clone(self):
        t = torch.tensor([1.0, 2.0, 3.0])
        c = t.clone()
        assert c is not t and c.dtype is t.dtype and c.tolist() == t.tolist()
        c[0] = 100.0
        assert t[0].item() == 1.0
        x = torch.tensor([1.0], requires_grad=True)
        y = x.clone()
        assert y.requires_grad and y.grad_fn is not None and not y.is_leaf
        # clone of a non-contiguous view is a contiguous copy with the same values
        n = np.arange(6.0).reshape(2, 3)
        v = torch.tensor(n).t().clone()
        np.testing.assert_array_equal(v.numpy(), n.T)

    def test_detach_shares_storage(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        d = x.detach()
        assert not d.requires_grad and d.grad_fn is None and d.is_leaf
        d[0] = 10.0
        assert x[0].item() == 10.0
        y = (x * 2).detach()
        assert not y.requires_grad and y.tolist() == [20.0, 4.0]

    def test_data(self):
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        d = x.data
        assert not d.requires_grad and d.tolist() == [1.0, 2.0]
        d.mul_(3)
        assert x.detach().tolist() == [3.0, 6.0]
        x.data = torch.tensor([7.0, 8.0])
        assert x.detach().tolist() == [7.0, 8.0] and x.requires_grad

    def test_requires_grad_(self):
        t = torch.zeros(2)
        assert not t.requires_grad
        r = t.requires_grad_()
        assert r is t and t.requires_grad
        t.requires_grad_(False)
        assert not t.requires_grad
        t.requires_grad = True
        assert t.requires_grad

    @pytest.mark.parametrize("dt", [torch.int64, torch.int32, torch.uint8, torch.bool])
    def test_requires_grad_on_integer_raises(self, dt):
        t = torch.zeros(2, dtype=dt)
        with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point dtype can require "
                                               "gradients"):  # (PyTorch 2.13's message of requires_grad_)
            t.requires_grad_()
        with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
            t.requires_grad = True
        t.requires_grad_(False)  # turning it off is always fine
        assert not t.requires_grad


# ---------------------------------------------------------------------------------------------
# Python protocols
# ---------------------------------------------------------------------------------------------
class TestProtocols:
    def test_len(self):
        assert len(torch.zeros(4, 2)) == 4
        assert len(torch.zeros(0)) == 0
        with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
            len(torch.tensor(1.0))

    def test_iter(self):
        n = np.arange(6).reshape(3, 2)
        rows = list(torch.tensor(n))
        assert len(rows) == 3
        for r, e in zip(rows, n):
            assert r.shape == (2,) and r.tolist() == e.tolist()
        assert [v.item() for v in torch.tensor([5, 6, 7])] == [5, 6, 7]
        with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
            iter(torch.tensor(2))

    def test_bool(self):
        assert bool(torch.tensor(1.5)) is True
        assert bool(torch.tensor([0])) is False
        assert bool(torch.tensor([[True]])) is True
        if torch.tensor(0):
            pytest.fail("a zero tensor is falsy")

    def test_bool_ambiguous(self):
        with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
            bool(torch.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
            if torch.ones(2, 2) > 0:
                pass
        with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
            bool(torch.tensor([]))

    def test_format(self):
        t = torch.tensor(3.14159)
        assert f"{t:.2f}" == "3.14"
        assert f"{t:8.3f}" == f"{np.float32(3.14159).item():8.3f}"
        assert f"{torch.tensor(7):d}" == "7"
        assert f"{torch.tensor(7):03d}" == "007"
        assert f"{torch.tensor(2.5)}" == "2.5"  # torch formats a 0-d tensor's item, even with an empty spec
        assert f"{torch.tensor([1.0])}" == "tensor([1.])"
        with pytest.raises(TypeError):
            f"{torch.tensor([1.0, 2.0]):.2f}"

    def test_hash_is_identity(self):
        a, b = torch.zeros(1), torch.zeros(1)
        assert len({a, b}) == 2 and a in {a}


# ---------------------------------------------------------------------------------------------
# printing (PyTorch's format; coretorch prints its own module name in dtypes)
# ---------------------------------------------------------------------------------------------
class TestRepr:
    @pytest.mark.parametrize("make, expected", [
        (lambda: torch.tensor([1.0, 2.0, 3.0]), "tensor([1., 2., 3.])"),
        (lambda: torch.tensor([[1, 2], [3, 4]]), "tensor([[1, 2],\n        [3, 4]])"),
        (lambda: torch.tensor(3.5), "tensor(3.5000)"),
        (lambda: torch.tensor(3), "tensor(3)"),
        (lambda: torch.tensor(2.0), "tensor(2.)"),
        (lambda: torch.tensor([0.1, 2.5]), "tensor([0.1000, 2.5000])"),
        (lambda: torch.tensor([-1.5, 2.0]), "tensor([-1.5000,  2.0000])"),
        (lambda: torch.tensor([[1.0, -2.0], [3.0, 4.0]]), "tensor([[ 1., -2.],\n        [ 3.,  4.]])"),
        (lambda: torch.tensor([True, False]), "tensor([ True, False])"),
        (lambda: torch.tensor([1, 2], dtype=torch.int32), "tensor([1, 2], dtype=coretorch.int32)"),
        (lambda: torch.tensor([1.0, 2.0], dtype=torch.float64), "tensor([1., 2.], dtype=coretorch.float64)"),
        (lambda: torch.tensor(3.5, dtype=torch.float64), "tensor(3.5000, dtype=coretorch.float64)"),
        (lambda: torch.tensor([1.5, 2.0], dtype=torch.float16), "tensor([1.5000, 2.0000], dtype=coretorch.float16)"),
        (lambda: torch.tensor([7], dtype=torch.uint8), "tensor([7], dtype=coretorch.uint8)"),
        (lambda: torch.tensor([]), "tensor([])"),
        (lambda: torch.zeros(0, dtype=torch.int64), "tensor([], dtype=coretorch.int64)"),
        (lambda: torch.zeros(0, 3), "tensor([], size=(0, 3))"),
        (lambda: torch.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
        (lambda: torch.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
        (lambda: torch.tensor([1.0, float("inf")]), "tensor([1., inf])"),
        (lambda: torch.tensor([1.5, float("nan")]), "tensor([1.5000,    nan])"),
        (lambda: torch.tensor([0.0, 0.0]), "tensor([0., 0.])"),
        (lambda: torch.arange(8).reshape(2, 2, 2), "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n"
                                                   "         [6, 7]]])"),
        (lambda: torch.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    ])
    def test_repr(self, make, expected):
        t = make()
        assert repr(t) == expected
        assert str(t) == expected

    def test_long_rows_wrap(self):
        t = torch.arange(20.0)
        assert repr(t) == ("tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
                           "        14., 15., 16., 17., 18., 19.])")

    def test_requires_grad_and_grad_fn(self):
        x = torch.tensor([0.1, 2.5], requires_grad=True)
        assert repr(x) == "tensor([0.1000, 2.5000], requires_grad=True)"
        y = x * 2
        assert repr(y) == "tensor([0.2000, 5.0000], grad_fn=<MulBackward0>)"
        assert repr(x + 1) == "tensor([1.1000, 3.5000], grad_fn=<AddBackward0>)"
        z = x.double() * 2
        assert repr(z) == "tensor([0.2000, 5.0000], dtype=coretorch.float64, grad_fn=<MulBackward0>)"
        with torch.no_grad():
            assert repr(x * 2) == "tensor([0.2000, 5.0000])"

    def test_default_dtype_is_not_printed(self, default_float64):
        assert repr(torch.tensor([1.0, 2.0])) == "tensor([1., 2.])"
        assert repr(torch.tensor([1.0, 2.0], dtype=torch.float32)) == "tensor([1., 2.], dtype=coretorch.float32)"

    def test_dtype_reprs(self):
        assert repr(torch.float32) == "coretorch.float32"
        assert str(torch.int64) == "coretorch.int64"
        assert repr(torch.bool) == "coretorch.bool"
