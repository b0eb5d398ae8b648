"""Review 20g (eager): serialization, ``torch.testing`` and script-level APIs against PyTorch 2.13's behaviour.

Each test's docstring says what PyTorch does and what coretorch did before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import available_devices

tc = torch.testing.assert_close


@pytest.mark.parametrize("device", available_devices())
def test_assert_close_bfloat16_tensors(device):
    """PyTorch compares bfloat16 tensors with rtol 1.6e-2; coretorch raised TypeError('Got unsupported
    ScalarType BFloat16') from ``Tensor.numpy()``."""
    a = torch.tensor([1.0, 2.0], dtype=torch.bfloat16, device=device)
    tc(a, torch.tensor([1.0, 2.0], dtype=torch.bfloat16, device=device) * 1.0078125)
    tc(a, a.float(), check_dtype=False)
    with pytest.raises(AssertionError, match="up to 0.016 allowed"):
        tc(a, torch.tensor([1.1, 2.0], dtype=torch.bfloat16, device=device))


def test_assert_close_mixed_dtypes_take_the_larger_default_tolerance():
    """With check_dtype=False PyTorch uses the larger default tolerance of the two dtypes (``get_tolerances``):
    float32 vs float16 within float16's rtol passes, int vs float32 within float32's rtol passes; coretorch took
    the tolerance of ``actual``'s dtype alone and raised AssertionError."""
    tc(torch.tensor([1.0]), torch.tensor([1.0005], dtype=torch.float16), check_dtype=False)
    tc(torch.tensor([1]), torch.tensor([1.0000001]), check_dtype=False)
    tc(1, 1.0 + 1e-8, check_dtype=False)


def test_assert_close_none_and_numpy_inputs():
    """PyTorch accepts ``None`` (equal to ``None`` only: 'None mismatch: None is not 1') and pairs of numpy
    arrays/scalars; coretorch raised TypeError('No comparison pair ...') for all of them."""
    tc(None, None)
    tc([None, torch.ones(1)], [None, torch.ones(1)])
    with pytest.raises(AssertionError, match="None mismatch: None is not 1"):
        tc(None, 1)
    tc(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    tc(np.float64(1.0), 1.0)
    with pytest.raises(AssertionError, match="'dtype' do not match"):
        tc(np.array([1.0]), np.array([1.0], dtype=np.float32))
    with pytest.raises(TypeError, match="No comparison pair"):
        tc(np.array([1.0], dtype=np.float32), torch.tensor([1.0]))


def test_assert_close_names_the_failing_item_and_formats_scalars_like_pytorch():
    """PyTorch appends '\\n\\nThe failure occurred for item ['a'][1]' inside containers (also passed to a msg
    callable, not added to a msg string), reports a 0-d tensor mismatch as 'Scalars are not close!' with
    'Expected .. but got ..', bools as 'Booleans mismatch', and scalar type mismatches as 'The (d)types do not
    match'; coretorch dropped the item path and used the tensor or generic wording."""
    a = {"a": [torch.tensor([1.0]), torch.tensor([2.0])]}
    e = {"a": [torch.tensor([1.0]), torch.tensor([3.0])]}
    with pytest.raises(AssertionError) as ei:
        tc(a, e)
    assert str(ei.value).endswith("\n\nThe failure occurred for item ['a'][1]")
    with pytest.raises(AssertionError) as ei:
        tc(a, e, msg=lambda m: "X" + m)
    assert str(ei.value).startswith("XTensor-likes are not close!") and str(ei.value).endswith("['a'][1]")
    with pytest.raises(AssertionError) as ei:
        tc(a, e, msg="custom")
    assert str(ei.value) == "custom"
    with pytest.raises(AssertionError) as ei:
        tc(torch.tensor(1), torch.tensor(2))
    assert str(ei.value) == ("Scalars are not equal!\n\nExpected 2 but got 1.\nAbsolute difference: 1\n"
                             "Relative difference: 0.5")
    with pytest.raises(AssertionError) as ei:
        tc(1, 2)
    assert str(ei.value) == ("Scalars are not equal!\n\nExpected 2 but got 1.\nAbsolute difference: 1\n"
                             "Relative difference: 0.5")
    with pytest.raises(AssertionError, match="^Booleans mismatch: True is not False$"):
        tc(True, False)
    with pytest.raises(AssertionError, match=r"^The \(d\)types do not match: <class 'float'> != <class 'int'>.$"):
        tc(1.0, 2)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        tc([torch.ones(1)], [torch.ones(1)], rtol=1e-3)


@pytest.mark.parametrize("device", available_devices())
def test_isclose_of_integer_tensors_does_not_wrap_around(device):
    """PyTorch compares integer tensors in the default float dtype: ``isclose(uint8 0, uint8 255, atol=1)`` is
    False and ``isclose(uint8 5, uint8 7, atol=2.5)`` True (|5 - 7| = 2); coretorch computed ``a - b`` in the
    integer dtype, which wraps (0 - 255 = 1 in uint8, 5 - 7 = 254), and answered the opposite."""
    def ic(a, b, dt, atol, rtol=0.0):
        return torch.isclose(torch.tensor(a, dtype=dt, device=device), torch.tensor(b, dtype=dt, device=device),
                             atol=atol, rtol=rtol).tolist()
    assert ic([0], [255], torch.uint8, 1) == [False]
    assert ic([5], [7], torch.uint8, 2.5) == [True]
    assert ic([10], [11], torch.uint8, 0, 0.095) == [True]   # allowed 1.045, not truncated
    assert ic([-100, 100], [100, -100], torch.int8, 56) == [False, False]
    assert ic([-128], [127], torch.int8, 1) == [False]
    assert not torch.allclose(torch.tensor([0], dtype=torch.uint8, device=device),
                              torch.tensor([255], dtype=torch.uint8, device=device), atol=1, rtol=0)
    assert ic([1, 2], [2, 1], torch.uint8, 1) == [True, True]


@pytest.mark.parametrize("device", available_devices())
def test_make_tensor(device):
    """``torch.testing.make_tensor`` (PyTorch's test-tensor factory: floats in [-9, 9), ints in [-9, 10) clamped to
    the dtype, ``low``/``high``, ``noncontiguous``, ``exclude_zero``, ``requires_grad``) was missing: coretorch
    raised AttributeError."""
    mk = torch.testing.make_tensor
    x = mk((4, 5), dtype=torch.float32, device=device)
    assert x.shape == (4, 5) and x.dtype is torch.float32 and x.device.type == torch.device(device).type
    assert float(x.min()) >= -9 and float(x.max()) < 9
    u = mk(300, dtype=torch.uint8, device=device)
    assert u.shape == (300,) and int(u.min()) >= 0 and int(u.max()) <= 9
    i = mk([300], dtype=torch.int64, device=device, low=-2, high=3)
    assert int(i.min()) >= -2 and int(i.max()) <= 2
    b = mk(2, 3, dtype=torch.bool, device=device)
    assert b.shape == (2, 3) and b.dtype is torch.bool
    n = mk((3, 4), dtype=torch.float64, device=device, noncontiguous=True)
    assert not n.is_contiguous() and n.shape == (3, 4)
    assert mk((1,), dtype=torch.float32, device=device, noncontiguous=True).is_contiguous()
    assert bool((mk((500,), dtype=torch.int8, device=device, low=-1, high=2, exclude_zero=True) != 0).all())
    g = mk((2,), dtype=torch.bfloat16, device=device, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    with pytest.raises(ValueError, match="`requires_grad=True` is not supported"):
        mk((2,), dtype=torch.int64, device=device, requires_grad=True)
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 3 >= 1"):
        mk((2,), dtype=torch.float32, device=device, low=3, high=1)
    with pytest.raises(ValueError, match="cannot be NaN"):
        mk((2,), dtype=torch.float32, device=device, low=float("nan"))
    with pytest.raises(ValueError, match="only supports"):
        mk((2,), dtype=torch.uint8, device=device, low=-10, high=-1)


def test_save_and_load_error_types_match_pytorch(tmp_path):
    """PyTorch: ``save`` into a missing directory raises RuntimeError('Parent directory ... does not exist.'),
    ``load`` of a directory IsADirectoryError, and a ``map_location`` that is neither a str, device, dict nor
    callable TypeError (it is called); coretorch raised FileNotFoundError, RuntimeError and RuntimeError. The new
    exceptions are both types, so code catching either still works."""
    with pytest.raises(RuntimeError, match="does not exist") as ei:
        torch.save(torch.ones(1), tmp_path / "nope" / "x.pt")
    assert isinstance(ei.value, FileNotFoundError)
    with pytest.raises(IsADirectoryError) as ei2:
        torch.load(tmp_path)
    assert isinstance(ei2.value, RuntimeError)
    torch.save(torch.ones(2), tmp_path / "x.pt")
    with pytest.raises(TypeError):
        torch.load(tmp_path / "x.pt", map_location=5)


def test_torch_size_round_trips_as_torch_size():
    """PyTorch's ``load`` gives back a saved ``torch.Size`` as a ``torch.Size`` (``ck['shape'].numel()`` works);
    coretorch stored it as its base type and loaded a plain tuple (no ``numel``)."""
    import io
    b = io.BytesIO()
    torch.save({"shape": torch.zeros(2, 3).shape, "t": (2, 3), "e": torch.Size([])}, b)
    b.seek(0)
    ck = torch.load(b)
    assert type(ck["shape"]) is torch.Size and ck["shape"] == (2, 3) and ck["shape"].numel() == 6
    assert type(ck["t"]) is tuple and type(ck["e"]) is torch.Size


def test_assert_close_checks_the_layout():
    """PyTorch's ``assert_close(sparse, dense)`` raises "The values for attribute 'layout' do not match:
    torch.sparse_coo != torch.strided." and passes with ``check_layout=False``; coretorch ignored ``check_layout``
    and passed both."""
    a = torch.ones(2)
    with pytest.raises(AssertionError, match="attribute 'layout' do not match"):
        tc(a.to_sparse(), a)
    tc(a.to_sparse(), a, check_layout=False)
    tc(a.to_sparse(), a.to_sparse())


def test_assert_allclose_deprecated_alias():
    """PyTorch 2.13 still has the deprecated ``torch.testing.assert_allclose`` (FutureWarning; float32 defaults
    rtol 1e-4 / atol 1e-5, NaNs equal, dtype unchecked, lists accepted); coretorch raised AttributeError."""
    with pytest.warns(FutureWarning, match="assert_allclose"):
        torch.testing.assert_allclose(torch.tensor([1.0, float("nan")]), [1.00005, float("nan")])
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="Tensor-likes are not close"):
        torch.testing.assert_allclose(torch.tensor([1.0]), torch.tensor([1.001]))
    with pytest.warns(FutureWarning):
        torch.testing.assert_allclose(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))


def test_assert_close_int64_differences_do_not_overflow():
    """PyTorch fails ``assert_close(tensor([2**62]), tensor([-2**62]))`` ('Tensor-likes are not equal!'); coretorch
    computed ``|a - e|`` in int64, which wrapped to -2**63 <= 0, and passed: a silent wrong result."""
    with pytest.raises(AssertionError, match="not equal"):
        tc(torch.tensor([2**62]), torch.tensor([-2**62]))
    with pytest.raises(AssertionError, match="not close"):
        tc(torch.tensor([2**62, 0]), torch.tensor([-2**62, 0]), rtol=0, atol=1)
    tc(torch.tensor([2**62]), torch.tensor([2**62 + 1]), rtol=0, atol=1)


def test_assert_close_numpy_arrays_keep_shape_and_strides():
    """PyTorch compares numpy arrays as tensors of the same shape and strides: a 0-d mismatch reads 'Scalars are
    not close!' and ``check_stride=True`` sees a transposed array's strides; coretorch made them contiguous
    (and at least 1-d)."""
    with pytest.raises(AssertionError, match="^Scalars are not close!"):
        tc(np.array(1.0), np.array(2.0))
    t = np.arange(6.0).reshape(2, 3).T
    tc(t, t.copy())
    with pytest.raises(AssertionError, match=r"'stride\(\)' do not match"):
        tc(t, t.copy(), check_stride=True)
    tc(np.arange(6.0)[::-1], np.arange(6.0)[::-1].copy())


def test_assert_close_structure_errors_ignore_msg():
    """PyTorch raises structure mismatches (no comparison pair, sequence lengths, mapping keys) while pairing the
    inputs, without the user's ``msg``: ``assert_close(1, 'a', msg='x')`` raises TypeError('No comparison pair
    ...'); coretorch raised TypeError('x'), hiding what was wrong."""
    with pytest.raises(TypeError, match="^No comparison pair"):
        tc(1, "a", msg="x")
    with pytest.raises(TypeError, match=r"(?s)^No comparison pair.*item \[0\]$"):
        tc([1], ["a"], msg=lambda m: "Y" + m)
    with pytest.raises(AssertionError, match="^The length of the sequences mismatch: 1 != 2$"):
        tc([torch.ones(1)], [torch.ones(1), torch.ones(1)], msg="x")
    with pytest.raises(AssertionError, match="^x$"):
        tc(torch.ones(1), torch.ones(2), msg="x")
