"""Session 19's own fixes (the lead's): compile's argument records and what they read."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import coretorch as torch
from coretorch import nn

# ---- a batch class whose methods read attributes named like module globals (compile/userrecords.py) ----------------
y = 1.5   # a module global named as the batch's attribute ``self.y`` (a notebook's ``x, y = next(it)``)
x = 2.5


class _Pair:
    """A collate function's batch: two attributes, a ``to`` method, ``__len__``."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def to(self, device):
        return _Pair(self.x.to(device), self.y.to(device))

    def __len__(self):
        return len(self.x)


def test_a_batch_reading_attributes_named_like_globals_replays(device):
    """``step(Pair(x, y))`` with a new batch each call, in a module that also has globals ``x`` and ``y`` (numbers):
    the batch's methods read ``self.x``/``self.y``, never the globals, so the batch is opened as a record and the step
    replays, as for any other batch.  Before, the check of what the methods read took every name their code holds
    (attribute names too) as a global: the globals ``x``/``y`` made the class refused, each new batch captured again
    until the recompile limit, and the step then ran eagerly with a warning."""
    torch.manual_seed(0)
    m = nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def step(b):
        b = b.to(device)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(b.x), b.y) * len(b)
        loss.backward()
        opt.step()
        return loss
    c = torch.compile(step)
    g = np.random.default_rng(0)
    batches = [_Pair(torch.tensor(g.normal(size=(5, 4)).astype(np.float32)), torch.tensor(g.integers(0, 3, 5)))
               for _ in range(12)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (the recompile limit's warning)
        got = [c(b).item() for b in batches]
    assert c.replays >= 10
    torch.manual_seed(0)
    m2 = nn.Linear(4, 3).to(device)
    opt2 = torch.optim.SGD(m2.parameters(), lr=0.1)
    want = []
    for b in batches:
        b = b.to(device)
        opt2.zero_grad()
        loss = torch.nn.functional.cross_entropy(m2(b.x), b.y) * len(b)
        loss.backward()
        opt2.step()
        want.append(loss.item())
    tol = {"rtol": 0.0, "atol": 0.0} if device == "cpu" else {"rtol": 1e-5, "atol": 1e-6}   # (cpu: bitwise)
    np.testing.assert_allclose(got, want, **tol)
    assert (x, y) == (2.5, 1.5)


# ---- Python types as dtype= arguments (dtypes.from_python_type at each op that takes a dtype) -----------------------
def test_python_types_as_dtype_arguments(device):
    """PyTorch's argument parser reads the Python types float, int and bool as float64, int64 and bool wherever a
    dtype is taken.  cumprod, linalg.vector_norm/matrix_norm, tril_indices/triu_indices and frombuffer raised
    AttributeError on them, and ``x.view(float)`` a TypeError (view(dtype) itself: review 19f)."""
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert x.cumprod(0, dtype=float).dtype is torch.float64
    assert torch.cumprod(x, 1, dtype=int).tolist() == [[1, 2], [3, 12]]
    assert torch.linalg.vector_norm(x, dtype=float).dtype is torch.float64
    assert torch.linalg.matrix_norm(x, dtype=float).dtype is torch.float64
    assert torch.tril_indices(3, 3, dtype=int, device=device).dtype is torch.int64
    assert torch.triu_indices(3, 3, dtype=int, device=device).dtype is torch.int64
    assert torch.frombuffer(bytearray(16), dtype=float).tolist() == [0.0, 0.0]
    d = x.double()
    assert d.view(float).dtype is torch.float64 and d.view(float).tolist() == d.tolist()
    v = x.view(int)   # (float32 rows of 2 read as one int64 each, the same memory)
    assert v.dtype is torch.int64 and v.shape == (2, 1)
    assert v.cpu().numpy().tolist() == x.cpu().numpy().view(np.int64).tolist()


def test_a_changing_float_argument_hints_at_a_tensor(device, recwarn):
    """A Python float argument that changes every call captured again until the recompile limit (PyTorch makes it
    a graph input once it changes). Since session 21 it is an input of the replay once it changes (dynfloat.py);
    where the step takes it out of Python arithmetic (``math.exp``) it stays keyed by value, and the limit's warning
    says how to make it an input (a 0-d tensor); a 0-d tensor argument replays with each call's value."""
    x = torch.arange(3.0).to(device)

    def f(x, beta):
        return (x * beta + (1 - beta) * x.exp()).sum()

    def g(x, beta):
        return (x * math.exp(beta)).sum()
    c = torch.compile(f)
    for i in range(10):
        assert c(x, 0.1 * (i + 1)).item() == f(x, 0.1 * (i + 1)).item()
    assert c.replays == 8
    c = torch.compile(g)
    for i in range(10):
        c(x, 0.1 * (i + 1))
    msgs = [str(w.message) for w in recwarn if "recompile_limit" in str(w.message)]
    assert len(msgs) == 1 and "value mismatch" in msgs[0] and "0-d tensor" in msgs[0], msgs
    c2 = torch.compile(f)
    for i in range(10):
        b = torch.tensor(0.1 * (i + 1)).to(device)
        got, want = c2(x, b).item(), f(x, b).item()
        assert abs(got - want) <= 1e-6 * abs(want), (got, want)
    assert c2.replays >= 8


# ---- utils.data: default_collate/default_convert as PyTorch's -------------------------------------------------------
def test_collate_returns_lists_for_tuples_as_pytorch():
    """PyTorch's default_collate returns the fields of tuple samples as a list ("backwards compatibility"), so
    ``batch[0] = batch[0].to(device)`` works on a TensorDataset's batches; coretorch returned a tuple (and its fast
    TensorDataset path too).  default_convert makes numpy numbers 0-d tensors and tuples lists; Subset has
    ``__getitems__``; TensorDataset's size check is PyTorch's assert."""
    from coretorch.utils.data import (DataLoader, Subset, TensorDataset, default_collate, default_convert)
    b = default_collate([(1, 2.0), (3, 4.0)])
    assert type(b) is list and b[0].tolist() == [1, 3] and b[1].dtype is torch.float64
    for batch in DataLoader(TensorDataset(torch.arange(5.0), torch.arange(5)), batch_size=2):
        assert type(batch) is list
        batch[0] = batch[0] * 2   # (a tuple refused the assignment)
    for batch in DataLoader([(np.float32(i), i) for i in range(4)], batch_size=2):
        assert type(batch) is list and batch[0].dtype is torch.float32
    c = default_convert([np.array([1, 2]), (np.float64(1.5),)])
    assert type(c[1]) is list and isinstance(c[1][0], torch.Tensor) and c[1][0].dtype is torch.float64
    assert Subset(list(range(10)), [5, 1, 2]).__getitems__([0, 2]) == [5, 2]
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(torch.ones(3, 2), torch.ones(4))
    with pytest.raises(TypeError, match="NoneType"):
        default_collate([None, None])


# ---- with torch.device(...) ------------------------------------------------------------------------------------------
def test_a_device_is_a_context_manager_for_the_default_device(device):
    """``with torch.device(d):`` makes ``d`` the default device of factories in the block (this thread), as PyTorch's
    device context, and restores the previous one at the end, also after an exception; blocks nest (review 19d:
    coretorch's device objects had no ``__enter__``)."""
    import threading

    d = torch.device(device)
    assert torch.get_default_device() == torch.device("cpu")
    want = torch.zeros(1, device=device).device   # (opencl: opencl:0, as PyTorch's cuda -> cuda:0)
    with d as entered:
        assert entered is d
        assert torch.zeros(2).device == want and torch.tensor([1.0]).device == want
        assert torch.arange(3).device == want
        with torch.device("cpu"):
            assert torch.ones(1).device == torch.device("cpu")
        assert torch.empty(1).device == want
        seen = []
        t = threading.Thread(target=lambda: seen.append(torch.zeros(1).device))   # (another thread: its own default)
        t.start()
        t.join()
        assert seen == [torch.device("cpu")]
    assert torch.get_default_device() == torch.device("cpu")
    with pytest.raises(ZeroDivisionError):
        with d:
            1 / 0
    assert torch.zeros(1).device == torch.device("cpu")
