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
    """PyTorch 2.13's checks: a float target of another shape than the input's is class indices, checked for
    its shape first, then its dtype (Long or Byte; Long only for spatial inputs); ours adds what to do."""
    logits = torch.randn(4, 10)
    labels = torch.tensor([1.0, 2.0, 3.0, 4.0])  # float class labels: the usual mistake
    hint = r"expected target dtype to be Long or Byte, but got Float \(class-index targets must be int64: use " \
        r"target.long\(\)\)"
    with pytest.raises(RuntimeError, match=hint):
        F.cross_entropy(logits, labels)
    with pytest.raises(RuntimeError, match=hint):
        F.nll_loss(F.log_softmax(logits, 1), labels)
    with pytest.raises(RuntimeError, match=r"^expected target dtype to be Long or Byte, but got Int$"):
        F.cross_entropy(logits, labels.int())
    with pytest.raises(RuntimeError, match=r"^expected target dtype to be Long or Byte, but got Bool$"):
        F.nll_loss(logits, labels.bool())
    assert F.cross_entropy(logits, labels.to(torch.uint8)).item() == F.cross_entropy(logits, labels.long()).item()
    with pytest.raises(RuntimeError, match=r"^expected scalar type Long but found Byte$"):
        F.cross_entropy(torch.randn(4, 10, 3), torch.zeros(4, 3, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target batch_size \(3\)"):
        F.cross_entropy(logits, torch.rand(3, 10))  # a wrong probability shape: read as class indices
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        F.cross_entropy(logits, torch.rand(4, 9))
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


def test_ctc_loss_lengths_must_be_integral():
    """PyTorch raises for float or bool length tensors ("input_lengths must be integral") and for a list holding a
    float; ours truncated 4.9 to 4. numpy and 0-d tensor integers in a list pass, as PyTorch's."""
    import numpy as np
    lp = torch.randn(5, 2, 4).log_softmax(2)
    tg = torch.tensor([[1, 2], [1, 1]])
    want = F.ctc_loss(lp, tg, [5, 5], [2, 2])
    for il in ([np.int64(5), 5], [torch.tensor(5), 5], (5, 5), torch.tensor([5, 5], dtype=torch.int32)):
        assert F.ctc_loss(lp, tg, il, [2, 2]).item() == want.item()
    with pytest.raises(RuntimeError, match="^input_lengths must be integral$"):
        F.ctc_loss(lp, tg, torch.tensor([4.9, 5.0]), torch.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="^target_lengths must be integral$"):
        F.ctc_loss(lp, tg, torch.tensor([5, 5]), torch.tensor([True, True]))
    for bad in ([5.0, 5], [True, 5]):
        with pytest.raises(TypeError, match="ctc_loss\\(\\): argument 'input_lengths' must be tuple of ints"):
            F.ctc_loss(lp, tg, bad, [2, 2])


def test_iterable_dataset_is_abstract():
    """PyTorch's IterableDataset is an ``Iterable`` without ``__iter__``: instantiating it raises TypeError (ours
    made an object whose iteration raised later, in a DataLoader's worker)."""
    with pytest.raises(TypeError, match="Can't instantiate abstract class IterableDataset"):
        torch.utils.data.IterableDataset()

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    assert [b.tolist() for b in torch.utils.data.DataLoader(Stream(), batch_size=2)] == [[0, 1], [2]]


def test_uint8_mask_write_of_one_value_is_masked_fill(device):
    """PyTorch writes ``x[mask] = v`` (and ``index_put_((mask,), v)``) of a one-element value through
    ``masked_fill_``, which refuses a uint8 mask; ours wrote it. A longer value takes the deprecated uint8 indexing,
    in both. masked_fill_'s message names the mask's C++ type, as PyTorch's."""
    import warnings
    m = torch.tensor([1, 0, 1], dtype=torch.uint8, device=device)
    msg = r"^masked_fill_ only supports boolean masks, but got mask with dtype unsigned char$"
    for v in (5.0, torch.tensor(5.0, device=device), torch.tensor([5.0], device=device)):
        with pytest.raises(RuntimeError, match=msg):
            torch.zeros(3, device=device)[m] = v
    with pytest.raises(RuntimeError, match=msg):
        torch.zeros(3, 2, device=device)[m, ...] = 1.0
    with pytest.raises(RuntimeError, match=msg):
        torch.zeros(3, device=device).index_put_((m,), torch.tensor(3.0, device=device))
    with pytest.raises(RuntimeError, match=r"with dtype int$"):
        torch.zeros(3, device=device).masked_fill_(m.int(), 1.0)
    y = torch.zeros(3, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y[m] = torch.tensor([5.0, 6.0], device=device)
        y.index_put_((m,), torch.tensor(1.0, device=device), accumulate=True)
    assert y.tolist() == [6.0, 0.0, 7.0]
    y[m.bool()] = 2.0
    assert y.tolist() == [2.0, 0.0, 2.0]
