"""The exceptions ``coretorch.save``/``load`` raise where PyTorch's type and Python's natural one differ: each is
both, so code written for either catches it."""
from __future__ import annotations


class MissingDirectoryError(FileNotFoundError, RuntimeError):
    """``save`` into a directory that does not exist (PyTorch: ``RuntimeError('Parent directory ... does not
    exist.')``)."""


class DirectoryError(IsADirectoryError, RuntimeError):
    """``load`` of a directory (PyTorch: ``IsADirectoryError``), ``save`` to one (PyTorch: ``RuntimeError``)."""
