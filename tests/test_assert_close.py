"""torch.testing.assert_close: PyTorch's tolerances, checks and messages."""
import math

import pytest

import coretorch as torch
from coretorch.testing import available_devices


def test_reachable_as_torch_testing_without_an_import():
    import subprocess
    import sys
    code = "import coretorch as torch; torch.testing.assert_close(torch.ones(2), torch.ones(2)); print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("device", available_devices())
def test_default_tolerances_follow_the_dtype(device):
    a = torch.tensor([1.0, 2.0, 3.0], device=device)
    torch.testing.assert_close(a, a + 5e-6)  # float32: atol 1e-5
    with pytest.raises(AssertionError, match=r"(?s)Tensor-likes are not close!.*Mismatched elements: 1 / 3 "
                                             r"\(33.3%\).*Greatest absolute difference: .* at index \(1,\)"):
        torch.testing.assert_close(a, torch.tensor([1.0, 2.1, 3.0], device=device))
    d = a.double()
    with pytest.raises(AssertionError):
        torch.testing.assert_close(d, d + 5e-6)  # float64: atol 1e-7
    torch.testing.assert_close(d, d + 5e-6, rtol=0, atol=1e-5)


def test_integers_compare_exactly_and_dtypes_must_match():
    with pytest.raises(AssertionError, match=r"(?s)Tensor-likes are not equal!.*Greatest absolute difference: 1 at "
                                             r"index \(1,\)\nGreatest relative difference: 0.333"):
        torch.testing.assert_close(torch.tensor([1, 2]), torch.tensor([1, 3]))
    with pytest.raises(AssertionError, match="The values for attribute 'dtype' do not match: coretorch.int64 != "
                                             "coretorch.float32"):
        torch.testing.assert_close(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]))
    torch.testing.assert_close(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]), check_dtype=False)
    with pytest.raises(AssertionError, match="attribute 'shape'"):
        torch.testing.assert_close(torch.ones(2), torch.ones(3))


def test_nan_scalars_containers_and_messages():
    n = torch.tensor([1.0, math.nan])
    with pytest.raises(AssertionError, match="nan at index"):
        torch.testing.assert_close(n, n.clone())
    torch.testing.assert_close(n, n.clone(), equal_nan=True)
    torch.testing.assert_close({"a": [torch.ones(1), 2]}, {"a": [torch.ones(1), 2]})
    with pytest.raises(AssertionError, match="The length of the sequences mismatch: 1 != 2"):
        torch.testing.assert_close([torch.ones(1)], [torch.ones(1), 1])
    with pytest.raises(AssertionError, match=r"Missing keys in the actual mapping: \['b'\]"):
        torch.testing.assert_close({"a": 1}, {"b": 1})
    with pytest.raises(AssertionError, match=r"Scalars are not close!\n\nExpected 1.1 but got 1.0"):
        torch.testing.assert_close(1.0, 1.1)
    with pytest.raises(TypeError, match="No comparison pair"):
        torch.testing.assert_close(torch.ones(1), 1.0)
    with pytest.raises(AssertionError, match="^custom$"):
        torch.testing.assert_close(torch.ones(2), torch.ones(2) * 1.1, msg="custom")
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        torch.testing.assert_close(torch.ones(2), torch.ones(2), rtol=1e-3)
