"""coretorch.utils.data against numpy expectations: datasets, samplers, batching, shuffling, collation."""
from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import coretorch as torch
from coretorch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
                                  SequentialSampler, Subset, TensorDataset, default_collate, random_split)

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int64) * 7


def _ds():
    return TensorDataset(torch.from_numpy(X), torch.from_numpy(Y))


class PlainDataset(Dataset):
    """The same samples as _ds(), served one at a time (the general default_collate path)."""

    def __len__(self):
        return len(Y)

    def __getitem__(self, i):
        return torch.from_numpy(X[i]), int(Y[i])


def test_tensor_dataset_items_and_checks():
    ds = _ds()
    assert len(ds) == 10
    x, y = ds[3]
    assert x.tolist() == X[3].tolist() and y.item() == Y[3]
    with pytest.raises(AssertionError, match="Size mismatch"):  # (PyTorch: an assert)
        TensorDataset(torch.ones(3, 2), torch.ones(4))


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (5, False), (10, True), (32, False)])
def test_sequential_batches_match_numpy_slices(batch_size, drop_last):
    loader = DataLoader(_ds(), batch_size=batch_size, drop_last=drop_last)
    batches = list(loader)
    n_full, rest = divmod(len(Y), batch_size)
    expected_n = n_full + (1 if rest and not drop_last else 0)
    assert len(batches) == len(loader) == expected_n
    for i, (xb, yb) in enumerate(batches):
        sl = slice(i * batch_size, (i + 1) * batch_size)
        assert xb.shape == X[sl].shape and xb.dtype == torch.float32 and yb.dtype == torch.int64
        np.testing.assert_array_equal(xb.numpy(), X[sl])
        np.testing.assert_array_equal(yb.numpy(), Y[sl])


def test_fast_tensor_dataset_path_equals_stacking_samples():
    for (xa, ya), (xb, yb) in zip(DataLoader(_ds(), batch_size=4), DataLoader(PlainDataset(), batch_size=4)):
        np.testing.assert_array_equal(xa.numpy(), xb.numpy())
        np.testing.assert_array_equal(ya.numpy(), yb.numpy())
        assert ya.dtype == yb.dtype == torch.int64


def test_shuffle_is_a_permutation_reproducible_with_a_generator():
    def order(loader):
        return np.concatenate([yb.numpy() for _, yb in loader]) // 7

    a = DataLoader(_ds(), batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(5))
    b = DataLoader(_ds(), batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(5))
    e1, e2 = order(a), order(a)
    assert sorted(e1) == list(range(10)) and sorted(e2) == list(range(10))
    assert not np.array_equal(e1, e2)            # the generator advances from epoch to epoch
    np.testing.assert_array_equal(order(b), e1)  # the same seed gives the same epochs
    np.testing.assert_array_equal(order(b), e2)
    # a numpy Generator is used as is: the order is numpy's permutation, after the iterator's draw of the workers'
    # base seed (PyTorch's iterators make it with and without workers)
    c = DataLoader(_ds(), batch_size=4, shuffle=True, generator=np.random.default_rng(9))
    ref = np.random.default_rng(9)
    ref.integers(0, 2 ** 63 - 1)
    np.testing.assert_array_equal(order(c), ref.permutation(10))
    # the features follow the labels
    for xb, yb in DataLoader(_ds(), batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(1)):
        np.testing.assert_array_equal(xb.numpy(), X[yb.numpy() // 7])


def test_shuffle_without_generator_follows_manual_seed():
    torch.manual_seed(3)
    a = [yb.tolist() for _, yb in DataLoader(_ds(), batch_size=4, shuffle=True)]
    torch.manual_seed(3)
    b = [yb.tolist() for _, yb in DataLoader(_ds(), batch_size=4, shuffle=True)]
    assert a == b and sorted(sum(a, [])) == sorted(Y.tolist())


def test_collate_fn_and_default_collate():
    seen = []

    def collate(samples):
        seen.append(len(samples))
        return [int(y) for _, y in samples]

    out = list(DataLoader(PlainDataset(), batch_size=4, collate_fn=collate))
    assert seen == [4, 4, 2] and out[0] == Y[:4].tolist()
    Point = namedtuple("Point", "a b")
    batch = default_collate([{"x": np.ones(2, np.float32), "n": 1, "f": 0.5, "s": "u", "p": Point(1, 2.0)},
                             {"x": np.zeros(2, np.float32), "n": 2, "f": 1.5, "s": "v", "p": Point(3, 4.0)}])
    assert batch["x"].shape == (2, 2) and batch["x"].dtype == torch.float32
    assert batch["n"].dtype == torch.int64 and batch["n"].tolist() == [1, 2]
    assert batch["f"].dtype == torch.float64 and batch["f"].tolist() == [0.5, 1.5]
    assert batch["s"] == ["u", "v"]
    assert isinstance(batch["p"], Point) and batch["p"].a.tolist() == [1, 3] and batch["p"].b.tolist() == [2.0, 4.0]
    t = default_collate([torch.ones(2, 3), torch.zeros(2, 3)])
    assert t.shape == (2, 2, 3)


def test_samplers_and_argument_errors():
    ds = _ds()
    assert list(SequentialSampler(ds)) == list(range(10))
    assert list(BatchSampler(SequentialSampler(ds), 4, False)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(BatchSampler(range(10), 4, True)) == 2
    r = list(RandomSampler(ds, generator=torch.Generator().manual_seed(0)))
    assert sorted(r) == list(range(10))
    g = torch.Generator().manual_seed(0)
    assert len(list(RandomSampler(ds, replacement=True, num_samples=25, generator=g))) == 25
    custom = DataLoader(ds, batch_sampler=[[9, 0], [5]])
    assert [yb.tolist() for _, yb in custom] == [[63, 0], [35]]
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_size=4, batch_sampler=[[0]])
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(ds, batch_size=0)


def test_unbatched_iterable_subset_concat_and_random_split():
    assert [x.tolist() for x, _ in DataLoader(_ds(), batch_size=None)][2] == X[2].tolist()

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError):
        DataLoader(Stream(), shuffle=True)
    sub = Subset(_ds(), [8, 2])
    assert len(sub) == 2 and sub[0][1].item() == Y[8]
    cat = ConcatDataset([sub, _ds()])
    assert len(cat) == 12 and cat[1][1].item() == Y[2] and cat[2][1].item() == Y[0] and cat[-1][1].item() == Y[9]
    parts = random_split(_ds(), [7, 3], generator=torch.Generator().manual_seed(0))
    idx = [p.indices for p in parts]
    assert [len(i) for i in idx] == [7, 3] and sorted(idx[0] + idx[1]) == list(range(10))
    assert [len(p) for p in random_split(_ds(), [0.8, 0.2], generator=torch.Generator().manual_seed(0))] == [8, 2]


def test_training_loop_over_a_loader_learns():
    """A PyTorch-style loop over DataLoader batches fits a linear map (least-squares, numpy's answer)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    w_true = np.array([[1.5], [-2.0], [0.5]], np.float32)
    y = x @ w_true
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1, bias=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=16, shuffle=True)
    for _ in range(60):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy().T, np.linalg.lstsq(x, y, rcond=None)[0], atol=1e-3)
