"""Issue 13 audit: the gaps a walk over the issue's names found against PyTorch 2.13 (top-level `torch.index_put_`,
PyTorch's AssertionError for CUDA use, `coretorch info` marking optional kernels the core composes)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
from coretorch import cli
from coretorch.testing import available_devices


@pytest.mark.parametrize("device", available_devices())
def test_top_level_index_put_is_in_place(device):
    x = torch.zeros(2, 3, device=device)
    idx = (torch.tensor([0, 0, 1], device=device), torch.tensor([2, 2, 0], device=device))
    vals = torch.tensor([1.0, 2.0, 5.0], device=device)
    r = torch.index_put_(x, idx, vals, accumulate=True)
    assert r is x
    ref = np.zeros((2, 3), np.float32)
    np.add.at(ref, (np.array([0, 0, 1]), np.array([2, 2, 0])), np.array([1.0, 2.0, 5.0], np.float32))
    np.testing.assert_array_equal(x.cpu().numpy(), ref)
    torch.index_put_(x, idx[:1], torch.tensor(7.0, device=device))  # without accumulate: assignment
    np.testing.assert_array_equal(x.cpu().numpy(), np.array([[7, 7, 7], [7, 7, 7]], np.float32))
    leaf = torch.zeros(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        torch.index_put_(leaf, (torch.tensor([0], device=device),), torch.ones(1, device=device))


@pytest.mark.parametrize("use", [lambda: torch.ones(1).cuda(), lambda: torch.ones(1).to("cuda"),
                                 lambda: torch.zeros(2, device="cuda")], ids=["cuda()", "to", "factory"])
def test_cuda_use_raises_pytorchs_assertion_error_and_names_the_devices(use):
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled") as e:
        use()
    assert isinstance(e.value, RuntimeError) and "opencl" in str(e.value) and "cpu" in str(e.value)
    with pytest.raises(RuntimeError, match="no 'mps' backend") as e:  # other framework devices: RuntimeError only
        torch.ones(1, device="mps")
    assert not isinstance(e.value, AssertionError)


def test_info_marks_optional_kernels_the_core_composes():
    d = cli.info_dict()
    assert "kthvalue" in d["optional_kernels"] and "sort" not in d["optional_kernels"]
    text = cli.info()
    rows = {ln.split()[0]: ln.split()[1:] for ln in text.split("Kernels by backend")[1].split("Ops by family")[0]
            .splitlines()[3:] if ln.strip()}
    backends = list(d["coverage"])
    for b_i, b in enumerate(backends):
        for op in ("sort", "kthvalue", "linear", "linalg_qr"):
            want = (("host" if op in d["host_kernels"][b] else "yes") if op in d["coverage"][b]
                    else ("composite" if op in d["optional_kernels"] else "-"))
            assert rows[op][b_i] == want, (op, b)
    assert "'composite'" in text


class _Sub(torch.Tensor):
    pass


@pytest.mark.parametrize("device", available_devices())
def test_user_subclass_repr_names_the_class_as_pytorch(device):
    x = torch.tensor([1.0, 2.0], device=device).as_subclass(_Sub)
    suffix = "" if device == "cpu" else f", device='{x.device}'"
    assert repr(x) == f"_Sub([1., 2.]{suffix})"
    y = x * 2  # the subclass propagates through ops, and its name with it
    assert type(y) is _Sub and repr(y).startswith("_Sub([2., 4.]")
    assert repr(torch.nn.Parameter(torch.ones(1, device=device))).startswith("Parameter containing:\ntensor([1.]")
    assert repr(torch.ones(1, device=device)).startswith("tensor([1.]")
