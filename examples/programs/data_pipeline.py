"""A tabular data pipeline on tensors: label encoding with torch.unique, stratified splitting with argsort and
bincount, quantile binning with torch.quantile + torch.bucketize/searchsorted, per-group statistics with
scatter_reduce, deduplication with unique_consecutive, a top-k selection — each result checked against numpy.

A PyTorch program: `python data_pipeline.py [device]` with `import coretorch as torch`.
"""
import sys

import numpy as np

import coretorch as torch


def main(device):
    rng = np.random.default_rng(0)
    raw_labels = rng.choice([17, 3, 42, 8], size=200, p=[0.4, 0.3, 0.2, 0.1])
    values = rng.normal(size=200).round(3)
    labels = torch.tensor(raw_labels, device=device)
    x = torch.tensor(values, dtype=torch.float32, device=device)

    # label encoding: classes sorted, inverse indices are the encoded labels, counts per class
    classes, encoded, counts = torch.unique(labels, sorted=True, return_inverse=True, return_counts=True)
    np_classes, np_inv, np_counts = np.unique(raw_labels, return_inverse=True, return_counts=True)
    assert classes.tolist() == np_classes.tolist() and encoded.tolist() == np_inv.tolist()
    assert counts.tolist() == np_counts.tolist()
    assert torch.bincount(encoded).tolist() == counts.tolist()

    # a stratified 80/20 split: within each class, the first 20 % of a random order go to validation
    g = torch.Generator(device=device).manual_seed(0)
    order = torch.argsort(torch.rand(len(labels), generator=g, device=device))
    by_class = order[torch.argsort(encoded[order], stable=True)]     # grouped by class, random within a class
    starts = torch.cumsum(counts, 0) - counts
    rank_in_class = torch.arange(len(labels), device=device) - starts[encoded[by_class]]
    val_mask = rank_in_class < (counts[encoded[by_class]] * 0.2).long()
    val_idx, train_idx = by_class[val_mask], by_class[~val_mask]
    assert sorted(val_idx.tolist() + train_idx.tolist()) == list(range(len(labels)))
    assert torch.bincount(encoded[val_idx], minlength=len(classes)).tolist() == \
        [int(c * 0.2) for c in np_counts.tolist()]

    # quantile binning of the values into quartiles
    edges = torch.quantile(x, torch.tensor([0.25, 0.5, 0.75], device=device))
    assert np.allclose(edges.cpu().numpy(), np.quantile(values.astype(np.float32), [0.25, 0.5, 0.75]), atol=1e-6)
    bins = torch.bucketize(x, edges)
    assert bins.tolist() == np.searchsorted(edges.cpu().numpy(), values.astype(np.float32), side="left").tolist()
    assert torch.equal(bins, torch.searchsorted(edges, x))
    sorted_x, perm = torch.sort(x, descending=True, stable=True)
    assert sorted_x.tolist() == sorted(values.astype(np.float32).tolist(), reverse=True)
    assert torch.equal(x[perm], sorted_x)

    # per-class mean and maximum with scatter_reduce
    sums = torch.zeros(len(classes), device=device).scatter_reduce(0, encoded, x, reduce="sum")
    means = sums / counts
    maxes = torch.full((len(classes),), float("-inf"), device=device).scatter_reduce(0, encoded, x, reduce="amax")
    for i, c in enumerate(np_classes):
        assert abs(means[i].item() - values[raw_labels == c].mean()) < 1e-5
        assert abs(maxes[i].item() - values[raw_labels == c].max()) < 1e-6

    # the three largest values per class with topk, and run-length deduplication of the sorted labels
    for i in range(len(classes)):
        top = torch.topk(x[encoded == i], 3).values
        assert np.allclose(top.cpu().numpy(), np.sort(values[np_inv == i])[::-1][:3].astype(np.float32))
    runs, run_counts = torch.unique_consecutive(torch.sort(labels).values, return_counts=True)
    assert runs.tolist() == np_classes.tolist() and run_counts.tolist() == np_counts.tolist()
    print(f"{len(classes)} classes, {len(train_idx)} train / {len(val_idx)} validation, quartile edges "
          f"{[round(e, 3) for e in edges.tolist()]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu"))
