"""dtypes, aliases and PyTorch's type-promotion rules."""
import numpy as np
import pytest

import coretorch as torch

ALL = [torch.float32, torch.float64, torch.float16, torch.int32, torch.int64, torch.uint8, torch.int8, torch.bool]
NP = {torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16, torch.int32: np.int32,
      torch.int64: np.int64, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
      torch.bool: np.bool_}


def t(values, dtype):
    return torch.tensor(np.asarray(values, dtype=NP[dtype]))


class TestDtypeObjects:
    @pytest.mark.parametrize("d", ALL)
    def test_properties(self, d):
        npd = np.dtype(NP[d])
        assert isinstance(d, torch.dtype)
        assert d.is_floating_point == (npd.kind == "f")
        assert d.itemsize == npd.itemsize
        assert d.is_signed == (npd.kind in "fi")
        assert not d.is_complex
        assert repr(d) == f"coretorch.{npd.name if d is not torch.bool else 'bool'}"

    def test_aliases(self):
        assert torch.float is torch.float32
        assert torch.double is torch.float64
        assert torch.half is torch.float16
        assert torch.long is torch.int64
        assert torch.int is torch.int32
        assert torch.short is torch.int16
        assert torch.bool is not bool and isinstance(torch.bool, torch.dtype)

    def test_dtype_identity_and_equality(self):
        assert torch.tensor([1.0]).dtype is torch.float32
        assert torch.tensor([1.0]).dtype == torch.float
        assert torch.float32 != torch.float64
        assert len({torch.float32, torch.float, torch.float64}) == 2

    @pytest.mark.parametrize("d", ALL)
    def test_round_trip_through_tensor(self, d):
        src = np.array([0, 1, 1, 0, 1])
        x = torch.tensor(src, dtype=d)
        assert x.dtype is d
        assert x.numpy().dtype == np.dtype(NP[d])
        np.testing.assert_array_equal(x.numpy(), src.astype(NP[d]))
        assert torch.zeros(2, dtype=d).dtype is d
        assert torch.ones(2, dtype=d).numpy().dtype == np.dtype(NP[d])
        assert x.is_floating_point() == d.is_floating_point == torch.is_floating_point(x)

    def test_conversions_between_all_dtypes(self):
        src = np.array([0.0, 1.0, 2.0, 100.0])
        for a in ALL:
            x = torch.tensor(src.astype(NP[a]))
            for b in ALL:
                y = x.to(b)
                assert y.dtype is b
                np.testing.assert_array_equal(y.numpy(), src.astype(NP[a]).astype(NP[b]))


class TestPromoteTypes:
    @pytest.mark.parametrize("a, b, expected", [
        (torch.uint8, torch.int8, torch.int16),
        (torch.int8, torch.uint8, torch.int16),
        (torch.uint8, torch.int64, torch.int64),
        (torch.int32, torch.int64, torch.int64),
        (torch.int32, torch.uint8, torch.int32),
        (torch.bool, torch.uint8, torch.uint8),
        (torch.bool, torch.int32, torch.int32),
        (torch.bool, torch.float16, torch.float16),
        (torch.int64, torch.float16, torch.float16),
        (torch.int64, torch.float32, torch.float32),
        (torch.float16, torch.float32, torch.float32),
        (torch.float32, torch.float64, torch.float64),
        (torch.bool, torch.bool, torch.bool),
        (torch.int8, torch.int8, torch.int8),
    ])
    def test_table(self, a, b, expected):
        assert torch.promote_types(a, b) is expected
        assert torch.promote_types(b, a) is expected

    def test_integer_pairs_match_numpy(self):
        ints = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
        for a in ints:
            for b in ints:
                expected = np.promote_types(NP[a], NP[b])
                assert torch.promote_types(a, b).itemsize == expected.itemsize
                assert NP[torch.promote_types(a, b)] == expected.type

    def test_can_cast(self):
        assert torch.can_cast(torch.int32, torch.float32)
        assert torch.can_cast(torch.bool, torch.int8)
        assert not torch.can_cast(torch.float32, torch.int32)
        assert not torch.can_cast(torch.int64, torch.bool)


class TestBinaryOpPromotion:
    def test_int_tensor_plus_python_float_is_default_float(self):
        x = torch.tensor([1, 2, 3])
        y = x + 1.5
        assert y.dtype is torch.float32
        np.testing.assert_allclose(y.numpy(), np.array([1, 2, 3]) + 1.5)
        assert (1.5 * x).dtype is torch.float32

    def test_int_division_is_true_division(self):
        a, b = np.array([1, 7, -9]), np.array([2, 2, 4])
        y = torch.tensor(a) / torch.tensor(b)
        assert y.dtype is torch.float32
        np.testing.assert_allclose(y.numpy(), (a / b).astype(np.float32))
        assert (torch.tensor([3], dtype=torch.int32) / 2).dtype is torch.float32
        assert (torch.tensor([True]) / torch.tensor([True])).dtype is torch.float32

    def test_int_division_follows_default_dtype(self):
        old = torch.get_default_dtype()
        try:
            torch.set_default_dtype(torch.float64)
            assert (torch.tensor([1]) / torch.tensor([2])).dtype is torch.float64
        finally:
            torch.set_default_dtype(old)

    def test_python_int_keeps_tensor_dtype(self):
        x = t([1, 2, 3], torch.int32)
        y = x + 1
        assert y.dtype is torch.int32
        np.testing.assert_array_equal(y.numpy(), np.array([2, 3, 4], np.int32))
        assert (x * 1000).dtype is torch.int32
        assert (t([1], torch.int8) + 1).dtype is torch.int8
        assert (t([1], torch.uint8) * 2).dtype is torch.uint8
        assert (t([1.0], torch.float16) + 1).dtype is torch.float16
        assert (t([1.0], torch.float16) + 1.5).dtype is torch.float16

    def test_bool_tensor_with_python_scalars(self):
        b = torch.tensor([True, False])
        assert (b + 1).dtype is torch.int64
        assert (b + 1.0).dtype is torch.float32
        assert (b + True).dtype is torch.bool

    def test_small_ints_mix(self):
        a, b = np.array([1, 200], np.uint8), np.array([-1, 100], np.int8)
        y = torch.tensor(a) + torch.tensor(b)
        assert y.dtype is torch.int16
        np.testing.assert_array_equal(y.numpy(), a.astype(np.int16) + b.astype(np.int16))

    def test_bool_plus_bool_stays_bool(self):
        a = torch.tensor([True, True, False, False])
        b = torch.tensor([True, False, True, False])
        y = a + b
        assert y.dtype is torch.bool
        assert y.tolist() == [True, True, True, False]
        assert (a * b).dtype is torch.bool and (a * b).tolist() == [True, False, False, False]

    def test_zero_dim_tensor_does_not_promote_within_category(self):
        x = torch.tensor([1.0, 2.0])
        y = x + torch.tensor(1.0, dtype=torch.float64)
        assert y.dtype is torch.float32
        assert (t([1.0], torch.float16) * torch.tensor(2.0, dtype=torch.float64)).dtype is torch.float16
        assert (t([1], torch.int32) + torch.tensor(5)).dtype is torch.int32
        assert (t([1], torch.int8) + torch.tensor(1, dtype=torch.uint8)).dtype is torch.int8

    def test_zero_dim_tensor_of_higher_category_promotes(self):
        x = torch.tensor([1, 2])
        y = x + torch.tensor(0.5)
        assert y.dtype is torch.float32
        np.testing.assert_allclose(y.numpy(), [1.5, 2.5])
        assert (x * torch.tensor(0.5, dtype=torch.float64)).dtype is torch.float64
        assert (torch.tensor([True]) + torch.tensor(2)).dtype is torch.int64
        assert (torch.tensor([True]) + torch.tensor(2, dtype=torch.uint8)).dtype is torch.uint8

    def test_two_zero_dim_tensors_promote_normally(self):
        a = torch.tensor(1, dtype=torch.int32)
        assert (a + torch.tensor(1.0, dtype=torch.float64)).dtype is torch.float64
        assert (a + 1.5).dtype is torch.float32
        assert (torch.tensor(1.0) + torch.tensor(1.0, dtype=torch.float64)).dtype is torch.float64

    def test_dimensioned_tensors_promote(self):
        assert (torch.zeros(2) + torch.zeros(2, dtype=torch.float64)).dtype is torch.float64
        assert (torch.zeros(2, dtype=torch.int32) + torch.zeros(2)).dtype is torch.float32
        assert (torch.zeros(2, dtype=torch.int64) * torch.zeros(2, dtype=torch.float16)).dtype is torch.float16

    @pytest.mark.parametrize("op", ["__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"])
    def test_comparisons_give_bool(self, op):
        a = np.array([1, 2, 3])
        b = np.array([1.5, 2.0, 2.5])
        y = getattr(torch.tensor(a), op)(torch.tensor(b))
        assert y.dtype is torch.bool
        np.testing.assert_array_equal(y.numpy(), getattr(a, op)(b))
        y = getattr(torch.tensor(b), op)(2)
        assert y.dtype is torch.bool
        np.testing.assert_array_equal(y.numpy(), getattr(b, op)(2))

    def test_uint8_wraps_around(self):
        y = t([1], torch.uint8) - t([2], torch.uint8)
        assert y.dtype is torch.uint8
        assert y.tolist() == [(np.array([1], np.uint8) - np.array([2], np.uint8)).item()]

    def test_where_promotes(self):
        c = torch.tensor([True, False])
        y = torch.where(c, t([1, 2], torch.int32), 2.5)
        assert y.dtype is torch.float32 and y.tolist() == [1.0, 2.5]
        y = torch.where(c, t([1, 2], torch.int32), 7)
        assert y.dtype is torch.int32 and y.tolist() == [1, 7]


class TestResultType:
    def test_tensor_and_scalar(self):
        assert torch.result_type(torch.tensor([1]), 1.0) is torch.float32
        assert torch.result_type(torch.tensor([1], dtype=torch.int32), 1) is torch.int32
        assert torch.result_type(torch.tensor([1.0], dtype=torch.float16), 1.0) is torch.float16
        assert torch.result_type(torch.tensor([True]), 1) is torch.int64
        assert torch.result_type(torch.tensor([True]), True) is torch.bool

    def test_two_tensors(self):
        assert torch.result_type(t([1], torch.uint8), t([1], torch.int8)) is torch.int16
        assert torch.result_type(torch.tensor([1.0]), torch.tensor(1.0, dtype=torch.float64)) is torch.float32
        assert torch.result_type(torch.tensor([1]), torch.tensor(1.0)) is torch.float32
        assert torch.result_type(torch.tensor([1], dtype=torch.int32), torch.tensor(1)) is torch.int32
        assert torch.result_type(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64)) is torch.float64

    def test_scalars(self):
        assert torch.result_type(1, 1.0) is torch.float32
        assert torch.result_type(2, 3) is torch.int64

    def test_matches_actual_op_result(self):
        samples = [torch.tensor([1, 2], dtype=d) for d in ALL] + [torch.tensor(1, dtype=d) for d in ALL] + \
            [1, 2.5, True]
        for a in samples:
            for b in samples:
                if not isinstance(a, torch.Tensor):
                    continue
                expected = torch.result_type(a, b)
                if expected is torch.bool:
                    continue
                assert (a * b).dtype is expected, (a.dtype, a.ndim, b)
