"""Review 15a of coretorch.compile: compiled functions and modules for inference and general tensor code (outputs
and their aliasing, arguments, shapes, modes), on every installed device.  Each test runs the same calls eagerly
and compiled and compares what the caller sees."""
from __future__ import annotations

import collections

import numpy as np

import coretorch as torch


def test_the_same_tensor_returned_twice_is_one_tensor(device):
    """``y = x * 2; return (y, y), {"a": y}``: eager returns one tensor three times, so ``out[0].add_(1)`` is seen
    through ``out[1]``; the replay made a tensor for each place (same array, but ``is`` false and the version
    counters apart).  A detached twin (another tensor over the same array) stays its own tensor."""
    def f(x):
        y = x * 2
        z = y.detach()
        return (y, y), {"a": y, "b": [z, z]}, y + 1

    for fn in (f, torch.compile(f)):
        for i in range(3):
            (a, b), d, _ = fn(torch.ones(3, device=device) * i)
            assert a is b and d["a"] is a and d["b"][0] is d["b"][1] and d["b"][0] is not a
            a.add_(1)
            assert a._version == b._version and d["a"]._version == a._version
            np.testing.assert_array_equal(b.cpu().numpy(), np.full(3, 2.0 * i + 1))


def test_a_torch_size_in_the_result(device):
    """``return x.size(), x * 2``: the result's tuple subclasses were all rebuilt as named tuples
    (``Size(8, 3)``), so every replay raised ``TypeError: tuple expected at most 1 argument``."""
    nt = collections.namedtuple("nt", "shape n")

    def f(x):
        return x.size(), x * 2, nt(x.shape[1:], x.shape[0])

    c = torch.compile(f)
    for i in range(4):
        x = torch.ones(2 + i // 2, 3, device=device)
        size, y, named = c(x)
        assert type(size) is torch.Size and size == (2 + i // 2, 3) and named == nt(torch.Size([3]), 2 + i // 2)
        np.testing.assert_array_equal(y.cpu().numpy(), np.full((2 + i // 2, 3), 2.0))
    assert c.replays == 2
