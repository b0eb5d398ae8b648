"""The examples in the docstrings (``>>>`` blocks) run and print what they show (issue 16, "Types and docs").

Every public name tools/doc_coverage.py counts (the namespaces of the API reference) has its docstring's
examples run by the standard doctest machinery, with coretorch's exact reprs (no whitespace or float
normalisation: a wrong printed value is a wrong docstring).  The globals are what the examples assume:
``torch`` (coretorch), ``nn``, ``F`` and ``np``; the global seed is 0 before each docstring, so an example
that draws random numbers is reproducible.  Runs on the default device (cpu); ~1 s in all.
"""
from __future__ import annotations

import doctest
import os
import sys

import numpy as np
import pytest

import coretorch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import doc_coverage  # noqa: E402

_PARSER = doctest.DocTestParser()


def _examples(label: str) -> list[tuple[str, str]]:
    """``(name, docstring)`` of the namespace's docstrings with examples, each text once (a method and its
    function often share one)."""
    seen: set[str] = set()
    out = []
    for name, doc in doc_coverage.docstrings(label).items():
        if doc and ">>>" in doc and doc not in seen:
            seen.add(doc)
            out.append((name, doc))
    return out


def _run(name: str, doc: str) -> str:
    """The doctest report of one docstring ('' when its examples pass)."""
    globs = {"torch": coretorch, "nn": coretorch.nn, "F": coretorch.nn.functional, "np": np}
    test = _PARSER.get_doctest(doc, globs, name, None, 0)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    coretorch.manual_seed(0)
    runner.run(test, out=report.append, clear_globs=True)
    return "".join(report)


@pytest.mark.parametrize("label", list(doc_coverage.NAMESPACES))
def test_docstring_examples_run_and_print_what_they_show(label):
    failures = [r for r in (_run(n, d) for n, d in _examples(label)) if r]
    assert not failures, "\n".join(failures)


def test_the_examples_are_found():
    # the runner sees examples of source docstrings, templated (generated ops) and runtime-attached ones
    names = {n for label in ("torch", "Tensor", "nn", "cuda") for n, _ in _examples(label)}
    for n in ("torch.arange", "torch.exp", "Tensor.expand", "nn.LayerNorm", "cuda.is_available"):
        assert n in names, n
    assert sum(len(_examples(label)) for label in doc_coverage.NAMESPACES) > 50
