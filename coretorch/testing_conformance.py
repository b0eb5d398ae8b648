"""The conformance suite of a device backend: run it on your device type before you publish a backend plugin.

One call (from a test of your package, or a script)::

    from coretorch.testing import run_conformance
    report = run_conformance("mydev")          # raises AssertionError listing every failure

or pytest, with the device type in an environment variable (several: comma-separated; default: every available
device type)::

    CORETORCH_CONFORMANCE_DEVICE=mydev pytest --pyargs coretorch.testing_conformance

What it checks:

* **the contract** (:func:`check_contract`): the backend is registered, has :class:`coretorch.plugins.Backend`'s
  methods, is available with at least one device, its kernel table has every name of
  :data:`coretorch.plugins.REQUIRED_KERNELS` and no name that is not a kernel of the contract (a typo);
* **kernel results** (:func:`check_kernel_results`): each elementwise kernel it has returns a native array of the
  input's shape (a 0-d array for a 0-d input, never a scalar) and does not write into its input;
* **the ops** (:func:`conformance_cases`): every case of ``coretorch.testing.CASES`` for the ops of
  ``coretorch.testing.REQUIRED_OPS`` (arithmetic with type promotion and Python scalars, broadcasting, 0-d, empty
  and non-contiguous inputs, reductions, indexing, shape ops, matmul) against NumPy, with ``gradcheck`` in float64.

``variants=False`` (or ``CORETORCH_CONFORMANCE_QUICK=1``) keeps one case per op: a quick smoke test for a
package's own test run; publish after a full run.
"""
from __future__ import annotations

import copy
import difflib
import os
import traceback
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

import coretorch

from . import _backend
from .autograd import gradcheck, gradgradcheck
from .optim import Optimizer
from .tensor import Tensor
from .plugins import (BINARY_KERNELS, FAMILY_KERNELS, KERNELS, REQUIRED_KERNELS, UNARY_KERNELS, get_backend,
                      validate_backend)
from .testing import CASES, REQUIRED_OPS, OpCase, available_devices, check_backward, check_forward

__all__ = ["run_conformance", "check_contract", "check_kernel_results", "conformance_cases", "ConformanceReport",
           "check_optimizer", "check_function"]

ENV_DEVICE = "CORETORCH_CONFORMANCE_DEVICE"
ENV_QUICK = "CORETORCH_CONFORMANCE_QUICK"


@dataclass
class ConformanceReport:
    """What :func:`run_conformance` ran and found."""

    device: str
    cases: int = 0                                    # op cases run (forward; backward where the op has one)
    failures: list = field(default_factory=list)      # "what: error" lines
    missing_family_kernels: list = field(default_factory=list)  # family kernels the backend leaves out (allowed)

    @property
    def ok(self) -> bool:
        return not self.failures


def conformance_cases(ops: Iterable[str] = REQUIRED_OPS, variants: bool = True) -> list[OpCase]:
    """The cases of ``coretorch.testing.CASES`` for ``ops``; without ``variants`` only each op's first case."""
    ops = set(ops)
    out, seen = [], set()
    for c in CASES:
        if c.op in ops and (variants or c.op not in seen):
            out.append(c)
            seen.add(c.op)
    return out


def _backend_of(device: str):
    be = get_backend(device)
    if be is None:
        installed = ", ".join(sorted(_backend.backends())) or "none"
        raise AssertionError(f"no backend for device type '{device}' is registered (registered: {installed}); "
                             "install your plugin (pip install -e .) or register it with coretorch.plugins.register")
    return be


def check_contract(device: str) -> None:
    """The backend of ``device`` is a :class:`~coretorch.plugins.Backend` with every required kernel and no kernel
    whose name the contract does not know (AssertionError naming each problem)."""
    be = _backend_of(device)
    try:
        validate_backend(be)
    except TypeError as e:
        raise AssertionError(str(e)) from None
    assert be.is_available(), f"backend '{device}': is_available() is False on this machine"
    n = be.device_count()
    assert isinstance(n, int) and n >= 1, f"backend '{device}': device_count() is {n!r}, expected an int >= 1"
    names = [be.device_name(i) for i in range(n)]
    assert all(isinstance(s, str) and s for s in names), f"backend '{device}': device_name() gave {names!r}"
    kernels = be.kernels(0)
    problems = []
    missing = sorted(REQUIRED_KERNELS - set(kernels))
    if missing:
        problems.append(f"missing required kernel(s): {', '.join(missing)}")
    known = set(KERNELS) | set(_backend._extra_kernels)
    for name in sorted(set(kernels) - known):
        close = difflib.get_close_matches(name, known, n=1)
        problems.append(f"kernel '{name}' is not a kernel of the contract" + (f" (did you mean '{close[0]}'?)"
                                                                               if close else ""))
    for name, k in kernels.items():
        if not callable(k):
            problems.append(f"kernel '{name}' is a {type(k).__name__}, not a callable")
    assert not problems, f"backend '{device}': " + "; ".join(problems)


def _kernel_input(name: str, shape: tuple) -> tuple:
    """(host array, Python scalar) of the dtype the core hands kernel ``name``: ints for bitwise_*, bools for
    logical_*, float32 otherwise (values in (0, 1): inside every float kernel's domain)."""
    n = int(np.prod(shape))
    if name.startswith("bitwise"):
        return np.arange(n, dtype=np.int32).reshape(shape), 2
    if name.startswith("logical"):
        return (np.arange(n) % 2 == 0).reshape(shape), True
    return np.linspace(0.25, 0.75, n).astype(np.float32).reshape(shape), 2.0


def check_kernel_results(device: str) -> None:
    """Each elementwise kernel of ``device`` returns a native array of its input's shape (0-d in, 0-d array out),
    with a Python scalar as second operand too, and leaves its input alone."""
    be = _backend_of(device)
    table = _backend.get_table(coretorch.device(device))
    native = getattr(be, "array_type", None)
    problems = []
    for shape in ((2, 3), ()):
        for name in (*UNARY_KERNELS, *BINARY_KERNELS):
            if not table.has(name):
                continue
            host, scalar = _kernel_input(name, shape)
            x = table.from_numpy(host.copy())
            kernel = getattr(table, name)
            try:
                outs = [kernel(x)] if name in UNARY_KERNELS else [kernel(x, x), kernel(x, scalar)]
            except Exception as e:  # noqa: BLE001 - reported with the kernel's name
                problems.append(f"{name}{shape}: {type(e).__name__}: {e}")
                continue
            for out in outs:
                if native is not None and not isinstance(out, native):
                    problems.append(f"{name}{shape}: returned a {type(out).__name__}, not a {native.__name__}")
                elif tuple(getattr(out, "shape", (None,))) != shape:
                    problems.append(f"{name}{shape}: result of shape {getattr(out, 'shape', None)}")
            if not np.array_equal(table.to_numpy(x), host):
                problems.append(f"{name}{shape}: wrote into its input")
    assert not problems, f"backend '{device}': " + "; ".join(problems)


def _one(report: ConformanceReport, what: str, fn, *args) -> None:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - every failure is collected and reported together
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        report.failures.append(f"{what}: {type(e).__name__}: {first}"[:400])
        if os.environ.get("CORETORCH_CONFORMANCE_TRACEBACK"):
            traceback.print_exc()


def run_conformance(device: str, *, ops: Iterable[str] = REQUIRED_OPS, variants: bool | None = None,
                    backward: bool = True, raise_on_failure: bool = True) -> ConformanceReport:
    """Run the whole suite on device type ``device``; raise AssertionError listing every failure (or, with
    ``raise_on_failure=False``, return them in the report).  ``variants=None`` reads CORETORCH_CONFORMANCE_QUICK."""
    if variants is None:
        variants = os.environ.get(ENV_QUICK, "") in ("", "0")
    report = ConformanceReport(device)
    _one(report, "contract", check_contract, device)
    if report.failures and get_backend(device) is None:
        if raise_on_failure:
            raise AssertionError(report.failures[0])
        return report
    backend = get_backend(device)
    assert backend is not None  # else check_contract failed above
    report.missing_family_kernels = sorted(FAMILY_KERNELS - set(backend.kernels(0)))
    _one(report, "kernel results", check_kernel_results, device)
    for case in conformance_cases(ops, variants):
        report.cases += 1
        for dt in case.dtypes:
            _one(report, f"{case.name} [{dt}] forward", check_forward, case, device, dt)
        if backward and case.grad and case.raises is None:
            _one(report, f"{case.name} backward", check_backward, case, device)
    if raise_on_failure and report.failures:
        shown = report.failures[:40]
        more = f"\n  ... and {len(report.failures) - 40} more" if len(report.failures) > 40 else ""
        raise AssertionError(f"device '{device}' fails {len(report.failures)} conformance check(s) of "
                             f"{report.cases} op cases:\n  " + "\n  ".join(shown) + more)
    return report


# ---- optimizer and op plugins ----------------------------------------------------------------------------------
def check_optimizer(cls: type, *, devices: Iterable[str] | None = None, steps: int = 30, **hyper) -> None:
    """What every optimizer plugin must do, on every available device (or ``devices``): be a subclass of
    ``coretorch.optim.Optimizer``; lower a quadratic's loss in ``steps`` steps built with ``hyper``
    (``check_optimizer(MyOpt, lr=0.1)``); return the closure's loss from ``step(closure)``; leave a parameter
    without a gradient alone; and continue identically from a ``state_dict`` loaded into a fresh instance."""
    assert isinstance(cls, type) and issubclass(cls, Optimizer), f"{cls!r} is not a subclass of Optimizer"
    for dev in devices or available_devices():
        target = coretorch.tensor([1.0, -2.0, 3.0], device=dev)

        def make(start=None):
            w = coretorch.zeros(3, device=dev) if start is None else start.detach().clone()
            w.requires_grad_(True)
            frozen = coretorch.ones(2, device=dev, requires_grad=True)
            return w, frozen, cls([w, frozen], **hyper)

        def loss_of(w):
            return ((w - target) ** 2).sum()

        def closure_for(o, p):
            def closure():
                o.zero_grad()
                loss = loss_of(p)
                loss.backward()
                return loss
            return closure

        w, frozen, opt = make()
        first = loss_of(w).item()
        for _ in range(steps):
            returned = opt.step(closure_for(opt, w))
            assert isinstance(returned, Tensor), f"{cls.__name__}.step(closure) returned {returned!r}, not the loss"
        final = loss_of(w).item()
        assert final < first, f"{cls.__name__} on {dev}: the loss went from {first} to {final} in {steps} steps"
        assert w.device.type == dev and frozen.tolist() == [1.0, 1.0], \
            f"{cls.__name__} on {dev}: a parameter without a gradient was changed"
        w2, _, opt2 = make(w)
        opt2.load_state_dict(copy.deepcopy(opt.state_dict()))  # (as saved and loaded: no tensor shared)
        for o, p in ((opt, w), (opt2, w2)):
            for _ in range(2):
                o.step(closure_for(o, p))
        np.testing.assert_allclose(w2.detach().cpu().numpy(), w.detach().cpu().numpy(), rtol=1e-6, atol=1e-7,
                                   err_msg=f"{cls.__name__} on {dev}: state_dict/load_state_dict lose state")


def _flat_out(out) -> list:
    return [y for o in out for y in _flat_out(o)] if isinstance(out, (tuple, list)) else [out]


def check_function(fn, *args, devices: Iterable[str] | None = None, rtol: float = 1e-5, atol: float = 1e-6,
                   grad: bool = True) -> None:
    """What an op plugin must do: ``fn(*args)`` (tensors given on any device, moved to each) gives the same values
    on every available device (or ``devices``), with results on that device; and, with ``grad``, passes
    ``gradcheck`` and ``gradgradcheck`` in float64 for its floating-point tensor arguments."""
    ref = None
    for dev in devices or available_devices():
        dargs = [a.detach().to(dev) if isinstance(a, Tensor) else a for a in args]
        outs = _flat_out(fn(*dargs))
        assert all(o.device.type == dev for o in outs), f"{fn!r} on {dev}: a result is on another device"
        host = [o.detach().cpu().numpy() for o in outs]
        if ref is None:
            ref = host
        else:
            for got, want in zip(host, ref):
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{fn!r} on {dev}")
        if not grad:
            continue
        slots = [i for i, a in enumerate(dargs) if isinstance(a, Tensor) and a.dtype.is_floating_point]
        inputs = tuple(dargs[i].double().requires_grad_() for i in slots)

        def call(*ts):
            full = list(dargs)
            for i, t in zip(slots, ts):
                full[i] = t
            return fn(*full)
        assert gradcheck(call, inputs), f"{fn!r} on {dev}: gradcheck failed"
        assert gradgradcheck(call, inputs), f"{fn!r} on {dev}: gradgradcheck failed"


# ---- pytest --pyargs coretorch.testing_conformance -----------------------------------------------------------
def _devices() -> list[str]:
    env = os.environ.get(ENV_DEVICE, "")
    return [d.strip() for d in env.split(",") if d.strip()] or available_devices()


def pytest_generate_tests(metafunc) -> None:
    """Parametrise the tests below by device (and op case) without importing pytest at module level."""
    quick = os.environ.get(ENV_QUICK, "") not in ("", "0")
    if "conformance_device" in metafunc.fixturenames:
        metafunc.parametrize("conformance_device", _devices())
    if "conformance_case" in metafunc.fixturenames:
        cases = conformance_cases(variants=not quick)
        if metafunc.function.__name__ == "test_backward":
            cases = [c for c in cases if c.grad and c.raises is None]
        metafunc.parametrize("conformance_case", cases, ids=[c.name for c in cases])


def test_contract(conformance_device) -> None:
    check_contract(conformance_device)


def test_kernel_results(conformance_device) -> None:
    check_kernel_results(conformance_device)


def test_forward(conformance_device, conformance_case) -> None:
    for dt in conformance_case.dtypes:
        check_forward(conformance_case, conformance_device, dt)


def test_backward(conformance_device, conformance_case) -> None:
    check_backward(conformance_case, conformance_device)
