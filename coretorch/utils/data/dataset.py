"""torch.utils.data.dataset: the dataset classes and random_split (the classes live in the package)."""
from . import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split"]
