"""Review of the tenth round's changes: regressions found and fixed (expected values checked by hand against
PyTorch 2.13)."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


@pytest.mark.parametrize("dt", ["int32", "uint8", "bool"])
def test_einsum_size1_lone_label_of_several_operands_keeps_dtype(device, dt):
    # PyTorch sums a label only one operand has when its size is > 1; a size-1 one is viewed away (no sum, so no
    # int64 promotion, and the later bmm sees matching dtypes)
    a = np.arange(6).reshape(2, 3, 1) % 3
    x = torch.tensor(a, device=device)
    x = (x > 0) if dt == "bool" else x.to(getattr(torch, dt))
    r = torch.einsum("bij,bkl->bik", x, x)
    ref = np.einsum("bij,bkl->bik", a, a)
    assert r.dtype is x.dtype
    assert np.array_equal(r.to(torch.int64).cpu().numpy(), (ref > 0) if dt == "bool" else ref)
    y = torch.tensor(np.arange(3).reshape(1, 3), device=device).to(x.dtype)
    w = torch.ones(3, 2, dtype=x.dtype, device=device)
    if dt == "bool":   # d dropped, c contracted by bmm: PyTorch's bool error
        with pytest.raises(NotImplementedError, match="bmm"):
            torch.einsum("dc,ce->e", y, w)
    else:
        r = torch.einsum("dc,ce->e", y, w)
        assert r.dtype is x.dtype and r.tolist() == [3, 3]


def test_einsum_lone_label_of_size_above_one_still_sums_to_int64(device):
    x = torch.arange(12, dtype=torch.int32, device=device).reshape(2, 3, 2)
    r = torch.einsum("bij,bkl->bik", x, x)   # j and l of size 2: PyTorch's sum, int64
    assert r.dtype is torch.int64
    a = np.arange(12).reshape(2, 3, 2)
    assert np.array_equal(r.cpu().numpy(), np.einsum("bij,bkl->bik", a, a))
    assert torch.einsum("bij->bi", x[:, :, :1]).dtype is torch.int64   # one operand: always a sum


@pytest.mark.parametrize("op", ["cat", "stack"])
def test_resized_out_whose_storage_grows_still_overlaps_the_inputs(device, op):
    # PyTorch grows the storage x shares with its views: the resized out (12 elements from offset 1 or 3) still
    # overlaps the input x[2:8] and cat/stack refuse it (coretorch takes a fresh buffer, but raises the same error)
    for c, d in ((1, 2), (3, 4)):
        x = torch.arange(12.0, device=device)
        with pytest.raises(RuntimeError, match="single memory location"):
            getattr(torch, op)([x[2:8], x[2:8]], out=x[c:d])
        assert x.tolist() == list(range(12))
    x = torch.arange(12.0, device=device)
    with pytest.warns(UserWarning):   # x[9:10] grown to 12 elements misses x[2:8]: allowed (a buffer of its own)
        r = getattr(torch, op)([x[2:8], x[2:8]], out=x[9:10])
    assert r.reshape(-1).tolist() == [2.0, 3, 4, 5, 6, 7] * 2
