"""Review 15d of coretorch.compile: less common Python forms and tensors inside compiled functions (every installed
device).  Each test runs the same calls eagerly and compiled and compares the results."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch


def _same(dev: str, a, b) -> bool:
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bool(np.array_equal(a, b) if dev == "cpu" else np.allclose(a, b, rtol=1e-5, atol=1e-6))


def _seq(make, compiled: bool, calls: int = 5) -> list:
    """``make(compiled)`` -> (fn, args(i)); the results of ``calls`` calls."""
    torch.manual_seed(0)
    fn, args = make(compiled)
    return [fn(*args(i)) for i in range(calls)]


def _assert_same(dev: str, make, calls: int = 5) -> None:
    for i, (a, b) in enumerate(zip(_seq(make, False, calls), _seq(make, True, calls))):
        a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
        for x, y in zip(a, b):
            assert _same(dev, x, y), f"call {i}: eager {x} compiled {y}"


def test_a_method_compiled_in_its_class_body_binds_each_instance(device):
    """``@torch.compile`` on a method in a class body, two instances: calling it raised ``TypeError: missing 1
    required positional argument`` (the compiled function was no descriptor, so ``self`` was never bound).  Each
    instance's attributes (a number, a tensor it updates in place) must be its own."""
    class Model:
        def __init__(self, s):
            self.s = s
            self.w = torch.full((2,), s, device=device)

        def step(self, x):
            self.w.add_(1)
            return x * self.w + self.s

    class Compiled(Model):
        step = torch.compile(Model.step)

    def make(compiled):
        a, b = (Compiled if compiled else Model)(2.0), (Compiled if compiled else Model)(30.0)

        def call(x, i):
            if i == 3:
                a.s = 5.0
            return (a if i % 2 else b).step(x)
        return call, lambda i: (torch.ones(2, device=device) * i, i)
    _assert_same(device, make, 6)
    m, before = Compiled(1.0), Compiled.step.replays
    for _ in range(3):
        m.step(torch.ones(2, device=device))
    assert m.step.replays == before + 2  # (a capture for the new instance, then replays)


def test_a_compiled_classmethod_reads_the_class_attribute_of_this_call(device):
    """``@classmethod @torch.compile def f(cls, x): return x * cls.K`` on a class and its subclass, ``K`` changed
    between calls: the class is an argument (held by identity only), so the replay reused the number it baked in
    (``A.K = 7.0``: compiled gave 2x, eager 7x)."""
    def make(compiled):
        wrap = torch.compile if compiled else (lambda f: f)

        class A:
            K = 2.0

            @classmethod
            @wrap
            def f(cls, x):
                return x * cls.K

        class B(A):
            K = 5.0

        def call(x, i):
            if i == 3:
                A.K = 7.0
            return A.f(x), B.f(x)
        return call, lambda i: (torch.ones(2, device=device) * (i + 1), i)
    _assert_same(device, make, 6)


def test_a_mutable_default_argument_the_step_reads(device):
    """``def f(x, acc=[])`` appending to and reading its default list (``len(acc)``, ``sum(acc)``): the defaults
    were no guard, so every replay returned the capture's count (eager ``x * 3`` at the 3rd call, compiled
    ``x * 1``)."""
    def make(compiled):
        def f(x, acc=[]):
            acc.append(x * 1)
            return x * len(acc) + sum(acc)
        return (torch.compile(f) if compiled else f), lambda i: (torch.ones(2, device=device) * (i + 1),)
    _assert_same(device, make)


def test_a_changed_default_number(device):
    """``f.__defaults__ = (5.0,)`` between calls (a default number changed, as a global's would): the replay kept
    the old default."""
    def make(compiled):
        def f(x, s=2.0, *, t=1.0):
            return x * s + t
        g = torch.compile(f) if compiled else f

        def args(i):
            if i == 2:
                f.__defaults__ = (5.0,)
            if i == 3:
                f.__kwdefaults__ = {"t": -4.0}
            return (torch.ones(2, device=device),)
        return g, args
    _assert_same(device, make)


_CALLS = [0]


class _Counted(torch.Tensor):
    """A subclass whose ``__torch_function__`` scales every product by a counter and a class attribute."""
    SCALE = 1.0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__mul__:
            _CALLS[0] += int(cls.COUNT)
            args = (args[0], args[1] * (_CALLS[0] + cls.SCALE))
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.parametrize("where", ["argument", "closure"])
@pytest.mark.parametrize("count", [True, False])
def test_a_tensor_subclass_torch_function_reading_python_state(device, count, where):
    """A tensor of a user subclass (an argument, or held by the closure) whose ``__torch_function__`` reads Python
    state (a global counter it increments at every product, a class attribute changed between calls): the state
    was no guard (the function only names the tensor), so every replay multiplied by the capture's number (eager
    4, 6, 8..., compiled 2)."""
    def make(compiled):
        _CALLS[0] = 0
        _Counted.SCALE = 1.0
        _Counted.COUNT = count
        w = torch.ones(3, device=device).as_subclass(_Counted)

        def f(x):
            return (x * 2).as_subclass(torch.Tensor) + 0

        def g(x):
            return (w * 2).as_subclass(torch.Tensor) + x

        def args(i):
            if i == 3:
                _Counted.SCALE = 4.0
            if where == "closure":
                return (torch.zeros(3, device=device),)
            return (torch.ones(3, device=device).as_subclass(_Counted),)
        fn = f if where == "argument" else g
        return (torch.compile(fn) if compiled else fn), args
    _assert_same(device, make, 6)
    if not count and where == "argument":  # (a number the class reads, changed once: one capture again, then replays)
        f = torch.compile(lambda x: (x * 2).as_subclass(torch.Tensor) + 0)
        for _ in range(3):
            f(torch.ones(3, device=device).as_subclass(_Counted))
        assert f.replays == 2


def test_a_compiled_callable_object_reads_its_attributes_of_this_call(device):
    """``torch.compile(obj)`` of a user object with ``__call__`` (no module): its attributes (a number, a tensor
    replaced) were no guard, as a bound method's ``self``'s are, so the replay kept ``x * 2 + 1`` after
    ``obj.s = 5.0``."""
    class Scaler:
        def __init__(self):
            self.s, self.w = 2.0, torch.ones(2, device=device)

        def __call__(self, x):
            return x * self.s + self.w

    def make(compiled):
        o = Scaler()

        def args(i):
            if i == 2:
                o.s = 5.0
            if i == 3:
                o.w = torch.zeros(2, device=device)
            return (torch.ones(2, device=device),)
        return (torch.compile(o) if compiled else o), args
    _assert_same(device, make)


def test_a_class_held_by_the_closure_has_its_attributes_guarded(device):
    """A class made in a function and read by the step through the closure (``A.K``, a staticmethod compiled from
    an instance ``torch.compile(a.f)``): a global class's attributes are guards, a closure's was not (eager 4x
    after ``A.K = 4.0``, compiled 2x)."""
    def make(compiled):
        class A:
            K = 2.0

            @staticmethod
            def f(x):
                return x * A.K

        def args(i):
            if i == 3:
                A.K = 4.0
            return (torch.ones(2, device=device),)
        return (torch.compile(A().f) if compiled else A().f), args
    _assert_same(device, make)
