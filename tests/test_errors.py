"""Error types and messages: PyTorch's, never a raw numpy error."""
import re

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import cpu_kernels_as


def raises(exc, *fragments):
    """pytest.raises whose message must contain every fragment (literally) and no numpy internals."""
    class _Ctx:
        def __enter__(self):
            self.cm = pytest.raises(exc)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *a):
            suppressed = self.cm.__exit__(*a)
            msg = str(self.info.value)
            for f in fragments:
                assert f in msg, f"{f!r} not in {msg!r}"
            assert not re.search(r"ndarray|numpy\.\w|could not broadcast|operands could not|setting an array element|"
                                 r"axis \d+ is out of bounds", msg), msg
            return suppressed
    return _Ctx()


# ---------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------
class TestShapeErrors:
    @pytest.mark.parametrize("op, name", [
        (lambda a, b: a + b, "add"), (lambda a, b: a - b, "sub"), (lambda a, b: a * b, "mul"),
        (lambda a, b: a / b, "div"), (lambda a, b: torch.add(a, b), "add"), (lambda a, b: a == b, "eq"),
        (lambda a, b: torch.maximum(a, b), "maximum"), (lambda a, b: a < b, "lt"),
    ])
    def test_broadcast_mismatch(self, op, name):
        with raises(RuntimeError, name, "size of tensor a (3) must match the size of tensor b (4) at non-singleton "
                    "dimension 1", "[2, 3]", "[4]"):
            op(torch.zeros(2, 3), torch.zeros(4))

    def test_broadcast_mismatch_leading_dims(self):
        with raises(RuntimeError, "size of tensor a (2) must match the size of tensor b (3) at non-singleton "
                    "dimension 0", "[2, 1, 4]", "[3, 5, 1]"):
            torch.zeros(2, 1, 4) * torch.zeros(3, 5, 1)

    def test_broadcast_mismatch_where(self):
        with raises(RuntimeError, "where", "[2, 3]", "[2]"):
            torch.where(torch.zeros(2, 3) > 0, torch.zeros(2), 1.0)

    def test_in_place_broadcast_mismatch(self):
        with raises(RuntimeError, "output with shape [3] doesn't match the broadcast shape [2, 3]"):
            torch.zeros(3).mul_(torch.ones(2, 3))

    def test_matmul_mismatch(self):
        with raises(RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"):
            torch.zeros(2, 3) @ torch.zeros(4, 5)
        with raises(RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"):
            torch.mm(torch.zeros(2, 3), torch.zeros(4, 5))
        with raises(RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"):
            torch.matmul(torch.zeros(2, 3), torch.zeros(4, 5))

    def test_matmul_vectors(self):
        with raises(RuntimeError, "inconsistent tensor size", "[3]", "[4]"):
            torch.zeros(3) @ torch.zeros(4)
        with raises(RuntimeError, "both arguments to matmul need to be at least 1D"):
            torch.matmul(torch.tensor(1.0), torch.zeros(2))

    def test_matmul_dtype_mismatch(self):
        with raises(RuntimeError, "expected m1 and m2 to have the same dtype, but got: float != double"):  # (C++ names)
            torch.zeros(2, 3) @ torch.zeros(3, 2, dtype=torch.float64)

    @pytest.mark.parametrize("shape, shown", [((4,), "[4]"), ((-1, 4), "[-1, 4]"), ((7,), "[7]"), ((3, 3), "[3, 3]")])
    def test_bad_view(self, shape, shown):
        x = torch.zeros(2, 3)
        with raises(RuntimeError, f"shape '{shown}' is invalid for input of size 6"):
            x.view(*shape)
        with raises(RuntimeError, f"shape '{shown}' is invalid for input of size 6"):
            x.reshape(shape)

    def test_view_two_inferred_dims(self):
        with raises(RuntimeError, "only one dimension can be inferred"):
            torch.zeros(2, 3).view(-1, -1)

    def test_view_of_non_contiguous_needs_reshape(self):
        x = torch.zeros(2, 3).t()
        assert not x.is_contiguous()
        with raises(RuntimeError, "view size is not compatible with input tensor's size and stride", ".reshape"):
            x.view(6)
        n = np.arange(6.0).reshape(2, 3)
        y = torch.tensor(n).t().reshape(6)  # reshape copies instead
        np.testing.assert_array_equal(y.numpy(), n.T.reshape(6))
        assert torch.tensor(n).t().contiguous().view(6).shape == (6,)

    def test_expand_mismatch(self):
        with raises(RuntimeError, "The expanded size of the tensor (3) must match the existing size (2) at "
                    "non-singleton dimension 0"):
            torch.zeros(2, 3).expand(3, 3)

    def test_cat_stack_mismatch(self):
        with raises(RuntimeError, "Sizes of tensors must match except in dimension 0", "Expected size 3 but got "
                    "size 4"):
            torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)])
        with raises(RuntimeError, "stack expects each tensor to be equal size"):
            torch.stack([torch.zeros(2), torch.zeros(3)])

    def test_setitem_shape_mismatch(self):
        x = torch.zeros(2, 3)
        with raises(RuntimeError, "The expanded size of the tensor (3) must match the existing size (2)"):
            x[0] = torch.zeros(2)
        with raises(RuntimeError, "shape mismatch: value tensor of shape [4] cannot be broadcast to indexing result "
                    "of shape [2, 3]"):
            x[[0, 1]] = torch.zeros(4)
        with raises(RuntimeError, "shape mismatch"):
            x[x == 0] = torch.zeros(5)

    def test_copy_mismatch(self):
        with raises(RuntimeError, "[2, 3]", "[2]"):
            torch.zeros(2, 3).copy_(torch.zeros(2))

    def test_negative_dimension(self):
        with raises(RuntimeError, "negative dimension -1"):
            torch.zeros(2, -1)

    def test_item_of_many(self):
        with raises(RuntimeError, "a Tensor with 6 elements cannot be converted to Scalar"):
            torch.zeros(2, 3).item()


# ---------------------------------------------------------------------------------------------
# dims and indices
# ---------------------------------------------------------------------------------------------
class TestDimAndIndexErrors:
    @pytest.mark.parametrize("call", [
        lambda x: x.sum(2), lambda x: x.sum(-3), lambda x: x.mean(dim=5), lambda x: x.size(2),
        lambda x: x.transpose(0, 2), lambda x: x.squeeze(-3), lambda x: x.argmax(2),
        lambda x: torch.cat([x, x], dim=2), lambda x: x.cumsum(2),
        lambda x: x.flatten(0, 2), lambda x: x.index_select(2, torch.tensor([0])),
        lambda x: x.gather(2, torch.zeros(1, 1, dtype=torch.int64)),
    ])
    def test_dim_out_of_range(self, call):
        with raises(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got"):
            call(torch.zeros(2, 3))

    def test_dim_out_of_range_unsqueeze_bounds(self):
        with raises(IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 3)"):
            torch.zeros(2, 3).unsqueeze(3)

    def test_float_tensor_as_index(self):
        x = torch.zeros(3)
        with raises(IndexError, "tensors used as indices must be long, int, byte or bool tensors"):
            x[torch.tensor([0.0, 1.0])]
        with raises(IndexError, "tensors used as indices must be long, int, byte or bool tensors"):
            x[torch.tensor([1.0])] = 2.0
        with pytest.raises(IndexError):
            x[1.0]

    @pytest.mark.parametrize("key, fragment", [
        (3, "index 3 is out of bounds for dimension 0 with size 3"),
        (-4, "index -4 is out of bounds for dimension 0 with size 3"),
        ((0, 4), "index 4 is out of bounds for dimension 1 with size 4"),
        ([0, 5], "index 5 is out of bounds for dimension 0 with size 3"),
        ((slice(None), [1, -5]), "index -5 is out of bounds for dimension 1 with size 4"),
    ])
    def test_index_out_of_range(self, key, fragment):
        x = torch.zeros(3, 4)
        with raises(IndexError, fragment):
            x[key]
        with raises(IndexError, fragment):
            x[key] = 1.0
        if isinstance(key, list):
            with raises(IndexError, fragment):
                x[torch.tensor(key)]

    def test_too_many_indices(self):
        with raises(IndexError, "too many indices for tensor of dimension 2"):
            torch.zeros(2, 3)[0, 0, 0]

    def test_mask_shape_mismatch(self):
        with raises(IndexError, "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor "
                    "[2, 3] at index 0"):
            torch.zeros(2, 3)[torch.tensor([True, False, True])]

    def test_two_ellipses(self):
        with raises(IndexError, "an index can only have a single ellipsis"):
            torch.zeros(2, 3)[..., ...]

    def test_gather_scatter_index_checks(self):
        x = torch.zeros(2, 3)
        with raises(RuntimeError, "Index tensor must have the same number of dimensions as input tensor"):
            x.gather(0, torch.tensor([0]))
        with raises(RuntimeError, "out of bounds"):  # PyTorch: RuntimeError for gather/scatter
            x.gather(0, torch.tensor([[2]]))
        with raises(RuntimeError, "int32/int64"):
            x.gather(0, torch.tensor([[0]], dtype=torch.int16))
        with raises(RuntimeError, "out of bounds"):
            x.scatter_add(1, torch.tensor([[3]]), torch.ones(1, 1))
        with raises(IndexError, "Index is supposed to be a vector"):
            x.index_select(0, torch.zeros(1, 1, dtype=torch.int64))


# ---------------------------------------------------------------------------------------------
# dtypes and values
# ---------------------------------------------------------------------------------------------
class TestDtypeErrors:
    def test_in_place_cast(self):
        with raises(RuntimeError, "result type Float can't be cast to the desired output type Long"):
            torch.tensor([1, 2]).add_(1.5)
        with raises(RuntimeError, "result type Float can't be cast to the desired output type Int"):
            torch.tensor([1, 2], dtype=torch.int32).div_(2)

    def test_requires_grad_on_int(self):
        with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point dtype can require "
                                               "gradients"):  # (PyTorch 2.13's message of requires_grad_)
            torch.tensor([1, 2]).requires_grad_()

    def test_numpy_of_tensor_requiring_grad(self):
        with raises(RuntimeError, "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                    "instead."):
            torch.zeros(2, requires_grad=True).numpy()

    def test_bool_ambiguity(self):
        with raises(RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"):
            bool(torch.zeros(2))
        with raises(RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"):
            torch.zeros(2) and 1

    def test_bool_negation_and_subtraction(self):
        with raises(RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported"):
            -torch.tensor([True])
        with raises(RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not supported"):
            torch.tensor([True]) - torch.tensor([False])

    def test_integer_negative_power(self):
        """Only a negative Python-int exponent raises (as PyTorch); a tensor exponent never does (powi values)."""
        for call in (lambda: torch.tensor([2, 3]) ** -1, lambda: torch.pow(torch.tensor([2, 3]), -2),
                     lambda: torch.tensor([2, 3], dtype=torch.uint8).pow_(-1),
                     lambda: torch.tensor(True) ** -1, lambda: torch.tensor([4], dtype=torch.int8) ** -3):
            with raises(RuntimeError, "Integers to negative integer powers are not allowed."):
                call()
        assert (torch.tensor([2, -1]) ** torch.tensor([-1, -3])).tolist() == [0, -1]
        assert (torch.tensor([2.0, 4.0]) ** -1).tolist() == [0.5, 0.25]

    def test_pow_on_bool(self):
        """PyTorch's pow kernels take no bool: bool ** bool tensor raises; a bool scalar exponent short-circuits
        (x ** True is a copy of x, x ** False is all True); an int exponent promotes to int64."""
        b = torch.tensor([True, False])
        for call in (lambda: b ** b, lambda: torch.pow(b, b), lambda: True ** b, lambda: b.clone().pow_(b)):
            with raises(RuntimeError, "\"pow\" not implemented for 'Bool'"):
                call()
        for r, want in ((b ** True, [True, False]), (b ** False, [True, True]),
                        (torch.pow(b, True), [True, False])):
            assert r.dtype == torch.bool and r.tolist() == want
        assert (b ** 2).dtype == torch.int64 and (b ** 2).tolist() == [1, 0]
        assert (2 ** b).dtype == torch.int64 and (2 ** b).tolist() == [2, 1]

    def test_integer_divisor_checked_at_once_on_cpu(self):
        """Host memory: the operand checks of integer //, % (and trunc division, fmod) raise at the call."""
        a = torch.tensor([7, -7, 5], dtype=torch.int32)
        for op in (lambda x, y: x // y, lambda x, y: x % y, torch.floor_divide, torch.remainder,
                   lambda x, y: x.div(y, rounding_mode="trunc"), lambda x, y: x.fmod(y)):
            with raises(RuntimeError, "ZeroDivisionError"):
                op(a, torch.tensor([2, 0, 1]))
            with raises(RuntimeError, "ZeroDivisionError"):
                op(a.long(), torch.tensor(0))
        for name in ("floor_divide_", "remainder_"):
            x = a.clone()
            with raises(RuntimeError, "ZeroDivisionError"):
                getattr(x, name)(torch.tensor([1, 0, -1], dtype=torch.int32))
            assert x.tolist() == [7, -7, 5], "the failed in-place op changed its input"
        with raises(RuntimeError, "ZeroDivisionError"):
            5 // torch.tensor([1, 0])
        with raises(RuntimeError, "ZeroDivisionError"):
            a.div(0, rounding_mode="trunc")
        # valid operands: numpy's results, INT_MIN // -1 wrapping as numpy's and PyTorch's CPU kernels
        imin = np.iinfo(np.int64).min
        assert (torch.tensor([imin, 7]) // torch.tensor([-1, -2])).tolist() == [imin, -4]
        assert (torch.tensor([imin, 7]) % torch.tensor([-1, -2])).tolist() == [0, -1]
        assert torch.tensor([7, -7]).fmod(torch.tensor([-2, 2])).tolist() == [1, -1]

    def test_bitwise_on_float(self):
        with raises(RuntimeError, "\"bitwise_and\" not implemented for 'Float'"):
            torch.zeros(2) & torch.zeros(2)

    def test_mean_of_int(self):
        with raises(RuntimeError, "mean(): could not infer output dtype"):
            torch.tensor([1, 2]).mean()

    def test_masks_must_be_bool(self):
        with raises(RuntimeError, "where expected condition to be a boolean tensor"):
            torch.where(torch.zeros(2), 1.0, 0.0)

    def test_bad_operand_type(self):
        with pytest.raises(TypeError):
            torch.zeros(2) + "a"
        with pytest.raises(TypeError):
            torch.zeros(2) * None

    def test_bad_dtype_argument(self):
        with raises(TypeError, "argument 'dtype' must be coretorch.dtype"):
            torch.zeros(2, dtype="float32")
        with raises(TypeError, "only floating-point types are supported as the default type"):
            torch.set_default_dtype(torch.int32)
        assert torch.get_default_dtype() is torch.float32

    def test_unsupported_numpy_dtype(self):
        with raises(TypeError, "can't convert", "uint16"):
            torch.from_numpy(np.zeros(2, np.uint16))
        with raises(TypeError, "Could not infer dtype of str"):
            torch.tensor("abc")

    @pytest.mark.parametrize("dt, value, cname", [(torch.int8, 1000, "int8_t"), (torch.int8, -129, "int8_t"),
                                                  (torch.uint8, 256, "uint8_t"), (torch.int32, 2 ** 31, "int"),
                                                  (torch.int64, 2 ** 63, "int64_t"), (torch.float16, 1e5, "c10::Half"),
                                                  (torch.float32, 1e300, "float")])
    def test_scalar_overflow(self, dt, value, cname):
        msg = f"value cannot be converted to type {cname} without overflow"
        with raises(RuntimeError, msg):
            torch.full((2,), value, dtype=dt)
        x = torch.zeros(2, dtype=dt)
        with raises(RuntimeError, msg):
            x.fill_(value)
        if dt is torch.float16:  # PyTorch stores a Python number into a half tensor unchecked: inf
            x[0] = value
            x[[0, 1]] = value
            assert x.tolist() == [float("inf")] * 2
            return
        with raises(RuntimeError, msg):
            x[0] = value
        with raises(RuntimeError, msg):
            x[[0, 1]] = value
        assert x.tolist() == [0, 0]

    def test_scalar_in_range_is_stored(self):
        x = torch.zeros(3, dtype=torch.int8)
        x.fill_(127)
        x[0] = -128
        assert x.tolist() == [-128, 127, 127]
        u = torch.zeros(2, dtype=torch.uint8)
        u[0] = -1  # c10 lets a negative integer wrap into an unsigned type
        u[1] = 255
        assert u.tolist() == [255, 255]
        h = torch.full((1,), float("inf"), dtype=torch.float16)
        assert h.tolist() == [float("inf")]

    def test_python_int_beyond_int64(self):
        with raises(ValueError, "Overflow when unpacking long long"):  # (PyTorch 2.13's exception)
            torch.tensor([2 ** 63])
        with raises(ValueError, "Overflow when unpacking long long"):
            torch.tensor([[1], [2 ** 70]])
        assert torch.tensor([2 ** 63 - 1, -2 ** 63]).tolist() == [2 ** 63 - 1, -2 ** 63]

    def test_random_negative_size(self):
        for fn in (torch.rand, torch.randn):
            with raises(RuntimeError, "Trying to create tensor with negative dimension -1"):
                fn(2, -1)

    def test_like_needs_a_tensor(self):
        with raises(TypeError, "must be Tensor, not list"):
            torch.zeros_like([1, 2])

    def test_index_0d(self):
        with raises(IndexError, "invalid index of a 0-dim tensor. Use `tensor.item()`"):
            torch.tensor(5.0)[0]

    def test_len_and_iter_of_0d(self):
        with raises(TypeError, "len() of a 0-d tensor"):
            len(torch.tensor(1.0))
        with raises(TypeError, "iteration over a 0-d tensor"):
            list(torch.tensor(1.0))


# ---------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def fakedev():
    with cpu_kernels_as("fakedev") as dev:
        yield dev


class TestDeviceErrors:
    def test_invalid_device_strings(self):
        for s in ("cpu:x", "not a device", "cuda:-1", "cpu:"):
            with raises(RuntimeError, "Invalid device string"):
                torch.device(s)
        with raises(RuntimeError, "Device string must not be empty"):
            torch.device("")
        with raises(RuntimeError, "Device index must not be negative"):
            torch.device("cpu", -1)
        with raises(RuntimeError, "Invalid device string"):
            torch.zeros(1, device="cpu:zero")

    def test_device_type_without_backend(self):
        d = torch.device("nosuchdev")  # any well-formed type parses; using it needs a backend
        assert d.type == "nosuchdev" and d.index is None
        with raises(RuntimeError, "nosuchdev", "no installed backend provides it"):
            torch.zeros(2, device="nosuchdev")
        with raises(RuntimeError, "nosuchdev"):
            torch.tensor([1.0], device=d)
        with raises(RuntimeError, "nosuchdev"):
            torch.ones(2).to("nosuchdev")

    def test_known_device_type_not_installed_names_the_plugin(self, monkeypatch):
        # a device type whose distribution the core knows (as it knows coretorch-opencl) but that is not
        # installed here; monkeypatched so the test holds whether or not the OpenCL plugin is installed
        from coretorch import _backend
        monkeypatch.setitem(_backend.HINTS, "npu", "coretorch-npu (pip install coretorch-npu)")
        with raises(RuntimeError, "no backend for device type 'npu' is installed", "coretorch-npu"):
            torch.zeros(1, device="npu")
        if "opencl" not in _backend.backends():
            with raises(RuntimeError, "no backend for device type 'opencl' is installed", "coretorch-opencl"):
                torch.zeros(1, device="opencl")

    def test_device_index_out_of_range(self):
        with raises(RuntimeError, "device 'cpu:1' does not exist"):
            torch.zeros(1, device="cpu:1")

    def test_device_objects(self):
        assert torch.device("cpu") == torch.device("cpu") == "cpu"
        d = torch.device("fakedev", 1)
        assert str(d) == "fakedev:1" and repr(d) == "device(type='fakedev', index=1)"
        assert torch.device("fakedev:1") == d and d.index == 1
        with raises(RuntimeError, "must not include an index"):
            torch.device("fakedev:1", 1)

    def test_fake_backend_works(self, fakedev):
        x = torch.ones(2, 3, device=fakedev)
        assert x.device.type == "fakedev"
        assert repr(x) == "tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='fakedev:0')"
        y = (x * 2 + 1).sum(0)
        assert y.device.type == "fakedev" and y.cpu().tolist() == [6.0, 6.0, 6.0]
        z = x.to("cpu")
        assert z.device.type == "cpu" and z.tolist() == [[1.0] * 3] * 2
        back = z.to(fakedev)
        assert back.device == x.device
        # a 0-d CPU tensor is a scalar operand on any device (as in torch)
        assert (x + torch.tensor(1.0)).device == x.device
        with raises(TypeError, "can't convert fakedev:0 device type tensor to numpy. Use Tensor.cpu()"):
            x.numpy()
        x.copy_(torch.zeros(2, 3))  # copy_ moves data across devices
        assert x.cpu().tolist() == [[0.0] * 3] * 2
        x[0] = torch.tensor(5.0)
        assert x.cpu()[0].tolist() == [5.0] * 3
        assert x[torch.tensor([1])].device == x.device  # CPU indices are allowed

    @pytest.mark.parametrize("call", [
        lambda a, b: a + b, lambda a, b: b + a, lambda a, b: a * b, lambda a, b: torch.sub(a, b),
        lambda a, b: a / b, lambda a, b: a == b, lambda a, b: torch.maximum(a, b), lambda a, b: a @ b.t(),
        lambda a, b: torch.where(a > 0, a, b), lambda a, b: torch.cat([a, b]), lambda a, b: torch.stack([a, b]),
        lambda a, b: a.add_(b), lambda a, b: a.masked_fill(b > 0, 1.0),
        lambda a, b: a.gather(1, torch.zeros(2, 1, dtype=torch.int64)),
        lambda a, b: a.index_select(0, torch.tensor([0])),
        lambda a, b: a.scatter_add(0, torch.zeros(1, 3, dtype=torch.int64), b),
        lambda a, b: a.index_add(0, torch.tensor([0, 1]), b),
        lambda a, b: torch.nn.functional.cross_entropy(a, torch.tensor([0, 2])),
        lambda a, b: torch.nn.functional.nll_loss(a, torch.tensor([0, 2])),
    ])
    def test_ops_across_devices(self, fakedev, call):
        a = torch.ones(2, 3, device=fakedev)
        b = torch.ones(2, 3)
        with raises(RuntimeError, "Expected all tensors to be on the same device", "fakedev:0", "cpu"):
            call(a, b)

    def test_setitem_across_devices(self, fakedev):
        a = torch.ones(2, 3, device=fakedev)
        a[0] = torch.zeros(3)  # basic indexing is copy_ (any device); index_put_ refuses a non-0-d value
        assert a.sum().item() == 3
        with raises(RuntimeError, "Expected all tensors to be on the same device", "fakedev:0", "cpu"):
            a[[0]] = torch.zeros(1, 3)
        with raises(RuntimeError, "indices should be either on cpu or on the same device as the indexed tensor "
                    "(cpu)"):
            torch.zeros(3)[torch.tensor([0], device=fakedev)]

    def test_unregister_removes_device(self, fakedev):
        with pytest.raises(Exception, match="fakedev"):  # the device type is taken
            with cpu_kernels_as("fakedev", plugin_name="tests-fakedev-2"):
                pass
        assert torch.zeros(1, device=fakedev).device.type == "fakedev"


def test_fake_backend_is_gone_after_the_fixture():
    assert "fakedev" not in torch._backend.backends()
    with raises(RuntimeError, "fakedev"):
        torch.zeros(1, device="fakedev")
