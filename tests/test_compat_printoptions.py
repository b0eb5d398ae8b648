"""torch.set_printoptions honoured by the tensor repr (expected strings follow PyTorch's _tensor_str rules)."""
from __future__ import annotations

import pytest

import coretorch as torch
from coretorch._tensor_str import get_printoptions, printoptions
from coretorch.testing import available_devices

DEVICES = available_devices()


@pytest.fixture(autouse=True)
def _restore():
    yield
    torch.set_printoptions(profile="default")


def test_defaults():
    assert get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                                  "sci_mode": None}
    assert repr(torch.tensor([1.23456, 2.5])) == "tensor([1.2346, 2.5000])"


def test_precision():
    torch.set_printoptions(precision=2)
    assert repr(torch.tensor([1.23456, 2.5])) == "tensor([1.23, 2.50])"
    assert repr(torch.tensor(3.14159)) == "tensor(3.14)"
    assert repr(torch.tensor([[1.0, 2.5], [3.125, 4.0]])) == "tensor([[1.00, 2.50],\n        [3.12, 4.00]])"
    assert repr(torch.tensor([1.0, 2.0])) == "tensor([1., 2.])"  # integral values ignore precision


def test_sci_mode_forced_off_sizes_the_width_in_fixed_notation():
    # automatically scientific (min < 1e-4); forced off, values print fixed with the fixed-notation width (PyTorch
    # 2.13's formatter decides the mode before sizing the width)
    assert repr(torch.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    torch.set_printoptions(sci_mode=False)
    assert repr(torch.tensor([1e-5, 1.0])) == "tensor([0.0000, 1.0000])"
    assert repr(torch.tensor([0.5, 0.25])) == "tensor([0.5000, 0.2500])"


def test_sci_mode_forced_on():
    torch.set_printoptions(sci_mode=True)
    assert repr(torch.tensor([1.5, 2.25])) == "tensor([1.5000e+00, 2.2500e+00])"
    assert repr(torch.tensor([0.0, 0.0])) == "tensor([0., 0.])"  # no nonzero value: never forced
    torch.set_printoptions(precision=2, sci_mode=True)
    assert repr(torch.tensor([1.5, 2.25])) == "tensor([1.50e+00, 2.25e+00])"
    torch.set_printoptions(precision=2)  # sci_mode is always set: None again
    assert repr(torch.tensor([1.5, 2.25])) == "tensor([1.50, 2.25])"


def test_threshold_summarises_with_edgeitems():
    torch.set_printoptions(threshold=5)
    assert repr(torch.arange(10.0)) == "tensor([0., 1., 2.,  ..., 7., 8., 9.])"
    assert repr(torch.arange(5.0)) == "tensor([0., 1., 2., 3., 4.])"
    torch.set_printoptions(threshold=5, edgeitems=1)
    assert repr(torch.arange(10.0)) == "tensor([0.,  ..., 9.])"
    assert repr(torch.arange(16.0).reshape(4, 4)) == \
        "tensor([[ 0.,  ...,  3.],\n        ...,\n        [12.,  ..., 15.]])"


def test_profiles():
    torch.set_printoptions(profile="short")
    assert get_printoptions() == {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80,
                                  "sci_mode": None}
    assert repr(torch.arange(1001.0) / 4) == "tensor([  0.00,   0.25,  ..., 249.75, 250.00])"
    torch.set_printoptions(profile="full")
    r = repr(torch.arange(1500))
    assert "..." not in r and r.count(",") == 1499
    torch.set_printoptions(profile="default")
    assert "..." in repr(torch.arange(1500))
    with pytest.raises(ValueError, match="Invalid profile"):
        torch.set_printoptions(profile="long")


def test_linewidth():
    torch.set_printoptions(linewidth=20)
    assert repr(torch.arange(10.0)) == "tensor([0., 1., 2.,\n        3., 4., 5.,\n        6., 7., 8.,\n        9.])"


def test_printoptions_context_restores():
    with printoptions(precision=1, sci_mode=False):
        assert repr(torch.tensor([1.25, 2.0])) == "tensor([1.2, 2.0])"
    assert get_printoptions()["precision"] == 4 and get_printoptions()["sci_mode"] is None


@pytest.mark.parametrize("device", DEVICES)
def test_options_apply_on_every_device(device):
    torch.set_printoptions(precision=3, threshold=4, edgeitems=1)
    x = torch.tensor([0.5, 1.0, 1.5, 2.0, 2.125], device=device)
    suffix = "" if device == "cpu" else f", device='{x.device}'"
    assert repr(x) == f"tensor([0.500,  ..., 2.125]{suffix})"
    y = torch.tensor([1.0, 2.0], device=device, requires_grad=True) * 1.5
    assert repr(y) == f"tensor([1.500, 3.000]{suffix}, grad_fn=<MulBackward0>)"
