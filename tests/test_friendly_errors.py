"""The mistakes new users make get messages that say what to do: PyTorch's message first (same type, same
text), then a note naming the layer and the input it expects, the devices or dtypes involved, or the
available optimizers."""
from __future__ import annotations

import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.testing import cpu_kernels_as


@pytest.fixture
def otherdev():
    with cpu_kernels_as("otherdev") as dev:
        yield dev


def test_linear_wrong_in_features_names_the_layer():
    layer = nn.Linear(64, 10)
    with pytest.raises(RuntimeError) as e:
        layer(torch.ones(4, 32))
    msg = str(e.value)
    assert msg.startswith("mat1 and mat2 shapes cannot be multiplied (4x32 and 64x10)")
    assert "Linear(in_features=64, out_features=10, bias=True) expects an input of shape (*, 64)" in msg
    assert "got an input of shape (4, 32)" in msg
    # inside a model, e.g. images that were not flattened
    model = nn.Sequential(nn.Linear(64, 10))
    with pytest.raises(RuntimeError, match=r"expects an input of shape \(\*, 64\), but got an input of shape "
                                           r"\(4, 8, 8\)"):
        model(torch.ones(4, 8, 8))
    assert layer(torch.ones(4, 64)).shape == (4, 10)  # the right shape still works


def test_conv_wrong_channels_or_rank_names_the_layer():
    conv = nn.Conv2d(1, 16, 3, padding=1)
    with pytest.raises(RuntimeError) as e:
        conv(torch.ones(2, 3, 8, 8))
    msg = str(e.value)
    assert "expected input[2, 3, 8, 8] to have 1 channels, but got 3 channels instead" in msg
    assert "Conv2d(1, 16, kernel_size=(3, 3)" in msg and "expects an input of shape (N, 1, H, W) or (1, H, W)" in msg
    with pytest.raises(RuntimeError, match=r"but got an input of shape \(8, 8\)"):
        conv(torch.ones(8, 8))  # a single image without its channel dimension
    with pytest.raises(RuntimeError, match=r"Conv1d\(2, 4.*expects an input of shape \(N, 2, L\) or \(2, L\)"):
        nn.Conv1d(2, 4, 3)(torch.ones(1, 5, 9))
    assert conv(torch.ones(2, 1, 8, 8)).shape == (2, 16, 8, 8)


def test_model_and_data_on_different_devices(otherdev):
    model = nn.Sequential(nn.Linear(4, 2))
    x = torch.ones(3, 4, device=otherdev)
    with pytest.raises(RuntimeError) as e:
        model(x)
    msg = str(e.value)
    assert "Expected all tensors to be on the same device" in msg
    assert "Linear(in_features=4, out_features=2, bias=True) has its parameters on cpu but got an input on " \
           "otherdev:0" in msg
    assert "model.to('otherdev:0')" in msg and "input.to('cpu')" in msg
    conv = nn.Conv2d(1, 2, 3)
    with pytest.raises(RuntimeError, match="Conv2d.*has its parameters on cpu but got an input on otherdev:0"):
        conv(torch.ones(1, 1, 5, 5, device=otherdev))
    assert model.to(otherdev)(x).device.type == otherdev  # the advice works


def test_dtype_mismatch_says_how_to_convert():
    with pytest.raises(RuntimeError, match=r"float32 parameters but got a float64 input: convert the input with "
                                           r"input.to\(torch.float32\)"):
        nn.Linear(3, 2)(torch.ones(2, 3, dtype=torch.float64))


def test_cross_entropy_target_dtype():
    logits = torch.randn(4, 10)
    labels = torch.tensor([1.0, 2.0, 3.0, 4.0])  # float class labels: the usual mistake
    with pytest.raises(RuntimeError) as e:
        F.cross_entropy(logits, labels)
    msg = str(e.value)
    assert msg.startswith("Expected target size [4, 10], got [4]")
    assert "class indices must be an int64 tensor: use target.long()" in msg
    with pytest.raises(RuntimeError, match=r"expected target dtype to be Long or Byte, but got Float \(class-index "
                                           r"targets must be int64: use target.long\(\)\)"):
        F.nll_loss(F.log_softmax(logits, 1), labels)
    with pytest.raises(RuntimeError) as e:  # a genuinely wrong probability shape gets no dtype hint
        F.cross_entropy(logits, torch.rand(3, 10))
    assert "long()" not in str(e.value)
    assert F.cross_entropy(logits, labels.long()).ndim == 0  # the advice works


def test_unknown_optimizer_name_lists_the_available_ones():
    with pytest.raises(AttributeError) as e:
        torch.optim.SDG
    msg = str(e.value)
    assert "module 'coretorch.optim' has no attribute 'SDG'" in msg and "did you mean 'SGD'?" in msg
    for name in ["SGD"] + torch.optim.registered():
        assert name in msg
    assert getattr(torch.optim, "NoSuchThing", None) is None and hasattr(torch.optim, "SGD")
    with pytest.raises(AttributeError, match="has no attribute 'lowercase_thing'$"):
        torch.optim.lowercase_thing
