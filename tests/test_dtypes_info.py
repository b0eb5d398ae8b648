"""torch.finfo / torch.iinfo, promote_types, result_type, can_cast, is_storage (PyTorch's rules)."""
import itertools

import ml_dtypes
import numpy as np
import pytest

import coretorch as torch

FLOATS = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64,
          torch.bfloat16: ml_dtypes.bfloat16}
INTS = {torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32,
        torch.int64: np.int64}
DIGITS10 = {torch.float16: 3, torch.bfloat16: 2, torch.float32: 6, torch.float64: 15}  # numeric_limits::digits10
ALL = [torch.bool, *INTS, *FLOATS]


class TestFinfo:
    @pytest.mark.parametrize("d", list(FLOATS), ids=lambda d: d.name)
    def test_attributes(self, d):
        ref = ml_dtypes.finfo(FLOATS[d])
        fi = torch.finfo(d)
        assert fi.bits == ref.bits == 8 * d.itemsize
        assert fi.eps == float(ref.eps) and type(fi.eps) is float
        assert fi.max == float(ref.max) and fi.min == -fi.max
        assert fi.tiny == fi.smallest_normal == float(ref.smallest_normal)
        assert fi.resolution == 10.0 ** -DIGITS10[d]
        assert fi.dtype == d.name
        # eps: the gap above 1 (1 + eps is the next value; 1 + eps / 2 rounds back to 1)
        one = np.array(1, FLOATS[d])
        assert float(np.nextafter(one, np.array(2, FLOATS[d]))) == 1 + fi.eps

    def test_values_as_pytorch(self):
        b = torch.finfo(torch.bfloat16)
        assert (b.eps, b.max, b.tiny, b.resolution) == (0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38,
                                                        0.01)
        h = torch.finfo(torch.float16)
        assert (h.eps, h.max, h.tiny) == (0.0009765625, 65504.0, 6.103515625e-05)

    def test_default_dtype(self):
        assert torch.finfo().dtype == "float32"
        torch.set_default_dtype(torch.float64)
        try:
            assert torch.finfo() == torch.finfo(torch.float64)
        finally:
            torch.set_default_dtype(torch.float32)

    def test_repr(self):
        assert repr(torch.finfo(torch.float32)) == (
            "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, smallest_normal=1.17549e-38, "
            "tiny=1.17549e-38, dtype=float32)")
        assert repr(torch.finfo(torch.bfloat16)) == (
            "finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, eps=0.0078125, smallest_normal=1.17549e-38, "
            "tiny=1.17549e-38, dtype=bfloat16)")
        assert str(torch.finfo(torch.float16)) == (
            "finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, smallest_normal=6.10352e-05, "
            "tiny=6.10352e-05, dtype=float16)")

    def test_equality(self):
        assert torch.finfo(torch.float32) == torch.finfo(torch.float)
        assert torch.finfo(torch.float32) != torch.finfo(torch.float64)

    @pytest.mark.parametrize("d", [torch.int32, torch.bool, torch.uint8])
    def test_non_float_raises(self, d):
        with pytest.raises(TypeError, match="requires a floating point input type"):
            torch.finfo(d)

    def test_not_a_dtype(self):
        with pytest.raises(TypeError):
            torch.finfo("float32")


class TestIinfo:
    @pytest.mark.parametrize("d", list(INTS), ids=lambda d: d.name)
    def test_attributes(self, d):
        ref = np.iinfo(INTS[d])
        ii = torch.iinfo(d)
        assert ii.bits == ref.bits == 8 * d.itemsize
        assert ii.max == int(ref.max) and type(ii.max) is int
        assert ii.min == int(ref.min) and type(ii.min) is int
        assert ii.dtype == d.name

    def test_repr(self):
        assert repr(torch.iinfo(torch.int32)) == "iinfo(min=-2.14748e+09, max=2.14748e+09, dtype=int32)"
        assert repr(torch.iinfo(torch.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"
        assert str(torch.iinfo(torch.int64)) == "iinfo(min=-9.22337e+18, max=9.22337e+18, dtype=int64)"

    def test_bool_raises(self):
        with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
            torch.iinfo(torch.bool)

    @pytest.mark.parametrize("d", list(FLOATS), ids=lambda d: d.name)
    def test_float_raises(self, d):
        with pytest.raises(TypeError, match="requires an integer input type"):
            torch.iinfo(d)


def _category(d):
    return 0 if d is torch.bool else 1 if d in INTS else 2


def _ref_promote(a, b):
    """PyTorch's promotion table, written out: bool < integers < floats; integers as numpy; float16 with bfloat16
    gives float32; otherwise the wider float."""
    if a is b:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 1:
        return {v: k for k, v in INTS.items()}[np.promote_types(INTS[a], INTS[b]).type]
    if {a, b} == {torch.float16, torch.bfloat16}:
        return torch.float32
    return a if a.itemsize > b.itemsize else b


class TestPromotion:
    @pytest.mark.parametrize("a,b", list(itertools.product(ALL, ALL)), ids=lambda d: d.name)
    def test_promote_types_table(self, a, b):
        assert torch.promote_types(a, b) is _ref_promote(a, b)

    def test_promote_types_examples(self):
        assert torch.promote_types(torch.bfloat16, torch.float16) is torch.float32
        assert torch.promote_types(torch.bfloat16, torch.float32) is torch.float32
        assert torch.promote_types(torch.bfloat16, torch.int64) is torch.bfloat16
        assert torch.promote_types(torch.uint8, torch.int8) is torch.int16
        assert torch.promote_types(torch.bool, torch.uint8) is torch.uint8

    def test_promote_types_bad_argument(self):
        with pytest.raises(TypeError):
            torch.promote_types(torch.float32, "float64")

    def test_result_type_categories(self):
        i32 = torch.tensor([1, 2], dtype=torch.int32)
        f16 = torch.tensor([1.0], dtype=torch.float16)
        bf = torch.tensor([1.0], dtype=torch.bfloat16)
        assert torch.result_type(i32, 2.5) is torch.float32  # an int tensor with a float scalar: default float
        assert torch.result_type(i32, 2) is torch.int32
        assert torch.result_type(i32, True) is torch.int32
        assert torch.result_type(bf, 2.5) is torch.bfloat16  # a Python float keeps a float tensor's dtype
        assert torch.result_type(bf, f16) is torch.float32
        assert torch.result_type(bf, torch.tensor(1.0)) is torch.bfloat16  # 0-d does not promote a dimensioned
        assert torch.result_type(i32, torch.tensor(1.5, dtype=torch.float64)) is torch.float64  # higher category
        assert torch.result_type(torch.tensor(True), 3) is torch.int64
        assert torch.result_type(2, 3.5) is torch.float32
        assert torch.result_type(bf, torch.tensor([1], dtype=torch.int64)) is torch.bfloat16

    def test_result_type_default_dtype(self):
        torch.set_default_dtype(torch.float64)
        try:
            assert torch.result_type(torch.tensor([1]), 1.5) is torch.float64
        finally:
            torch.set_default_dtype(torch.float32)

    @pytest.mark.parametrize("a,b", list(itertools.product(ALL, ALL)), ids=lambda d: d.name)
    def test_can_cast_table(self, a, b):
        # c10::canCast: no float -> integer, nothing but bool -> bool; everything else (down a size too) is fine
        expected = not (a in FLOATS and b in INTS) and not (a is not torch.bool and b is torch.bool)
        assert torch.can_cast(a, b) is expected

    def test_can_cast_bad_argument(self):
        with pytest.raises(TypeError):
            torch.can_cast(1, torch.float32)


def test_is_storage_and_friends():
    x = torch.ones(3)
    assert torch.is_storage(x) is False
    assert torch.is_storage([1]) is False
    assert torch.is_tensor(x) and not torch.is_tensor([1])
    assert torch.numel(torch.ones(2, 3)) == 6
