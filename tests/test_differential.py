"""Differential property test: random op programs (coretorch/testing_fuzz.py) run on every installed device must
agree with each other (values within the dtype's tolerance, dtypes, shapes, requires_grad, final values of
views, gradients of a weighted sum, exception classes) and with numpy where a cheap reference exists.

Bounded for `make test`: a fixed number of examples, derandomized (the same programs on every run and machine).
The PyTorch comparison of the same programs is benchmarks/torch_oracle.py (optional, not part of the tests).
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import coretorch
from coretorch.testing import available_devices
from coretorch.testing_fuzz import run_program
from coretorch.testing_fuzz_compare import check_refs, compare

DEVICES = available_devices()

# Classes another change of issue 15 fixes; the generator steers around them until it lands (then widen here).
KNOWN: tuple = ()


def _avoid(src: str, op: str, kind: str) -> bool:
    return any(k(src, op, kind) for k in KNOWN)


def _run(seed: int, device: str, special: bool):
    return run_program(seed, coretorch, device, special=special, refs=True, avoid=_avoid)


def _explain(r, diff) -> str:
    return f"seed {r.seed}: step {diff[0]} ({diff[1]}, {diff[2]}): {diff[3]}\n" + r.source


_SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None, print_blob=False,
                     suppress_health_check=list(HealthCheck))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's nan/inf warnings from the cpu kernels (reported)
@_SETTINGS
@given(seed=st.integers(0, 2**31 - 1), special=st.booleans())
def test_random_programs_agree_across_devices_and_with_numpy(seed, special):
    runs = {d: _run(seed, d, special) for d in DEVICES}
    base = runs["cpu"]
    for d, r in runs.items():
        bad = check_refs(r)
        assert bad is None, f"{d} vs numpy: seed {seed}, step {bad[0]} ({bad[1]}): {bad[2]}\n{r.source}"
        if d != "cpu":
            diff = compare(base, r)
            assert diff is None, f"cpu vs {d}: " + _explain(base, diff)


def test_program_generator_is_deterministic_and_the_comparison_sees_differences():
    a, b = _run(12345, "cpu", True), _run(12345, "cpu", True)
    assert a.source == b.source and len(a.steps) >= 2
    assert compare(a, b) is None
    # a changed value, dtype or error class is a difference
    i = next(i for i, s in enumerate(b.steps) if s.value is not None and s.value.size)
    c = copy.deepcopy(b)
    c.steps[i].value = np.asarray(c.steps[i].value).astype(np.float64) + 1
    assert compare(a, c)[3] == "value"
    c = copy.deepcopy(b)
    c.steps[i].dtype = "weird"
    assert compare(a, c)[3].startswith("dtype")
    c = copy.deepcopy(b)
    c.steps[i].error = "IndexError"
    assert compare(a, c)[3].startswith("error")
