"""Session 20's own fixes (the lead's; the reviews' are in test_review20a.py ... test_review20f.py)."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import coretorch as torch


def test_size_takes_ints_only():
    """``torch.Size([2.5])`` raises PyTorch's TypeError naming the item (coretorch kept the float, so a later
    ``torch.empty(size)`` failed deep inside); bools count as 0/1, numpy integers are kept, one-element integer
    tensors give their value."""
    for bad, name in (((2.0,), "float"), ([None], "NoneType"), ("ab", "str"), ([np.float64(2)], "numpy.float64"),
                      ([torch.tensor(2.0)], "Tensor"), ([3, torch.tensor([1, 2])], "Tensor")):
        with pytest.raises(TypeError, match=rf"torch.Size\(\) takes an iterable of 'int' \(item \d is '{name}'\)"):
            torch.Size(bad)
    with pytest.raises(TypeError):
        torch.Size(5)
    s = torch.Size([True, np.int32(4), torch.tensor([3]), torch.tensor(2, dtype=torch.int8), -1])
    assert s == (1, 4, 3, 2, -1) and type(s[0]) is int and type(s[2]) is int and type(s[1]) is np.int32
    t = torch.Size([2, 3])
    assert isinstance(t[1:], torch.Size) and isinstance(t * 2, torch.Size) and isinstance(t + (4,), torch.Size)
    assert pickle.loads(pickle.dumps(t)) == t and copy.deepcopy(t) == t and torch.Size(t) == t
    assert torch.Size() == () and torch.ones(2, 3).shape == t and torch.empty(t).shape == t
