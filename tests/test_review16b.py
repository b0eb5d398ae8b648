"""Review 16b of coretorch.compile: the arguments and the global state of compiled functions (``torch.compile(fn)``:
aliasing, in-place changes, layouts, autograd on arguments, the random generators, global flags), every installed
device.  Each test runs the same calls eagerly and compiled and compares what the caller sees."""
from __future__ import annotations

import pytest

import coretorch as torch


def _runs(make, calls: int, compiled: bool) -> list:
    """``make()`` -> (fn, before(i)): the results (as lists) of ``calls`` calls, ``before(i)`` run before each."""
    fn, before = make()
    f = torch.compile(fn) if compiled else fn
    out = []
    for i in range(calls):
        args = before(i)
        r = f(*args)
        out.append([v.tolist() if isinstance(v, torch.Tensor) else v for v in (r if isinstance(r, tuple) else (r,))])
    return out


def _assert_same(make, calls: int = 5) -> None:
    eager, compiled = _runs(make, calls, False), _runs(make, calls, True)
    for i, (a, b) in enumerate(zip(eager, compiled)):
        assert a == b, f"call {i}: eager {a} compiled {b}"


def test_the_generator_state_read_in_the_step(device):
    """``torch.get_rng_state()`` / ``Generator.get_state()`` in a step that draws: eager returns the state of each
    call; a replay returned the state of the capture (``get_state`` copied the kernel's array on the host, which the
    capture kept as a constant), and ``set_state`` of it rewound the generator to the capture's draws."""
    def make():
        g = torch.Generator(device=device).manual_seed(3)

        def step(x):
            s = torch.get_rng_state() if device == "cpu" else g.get_state()
            a = torch.rand(3, device=device, generator=None if device == "cpu" else g)
            return x + a, s
        torch.manual_seed(3)
        return step, lambda i: (torch.ones(3, device=device),)
    _assert_same(make)

    def make_rewind():
        g = torch.Generator(device=device).manual_seed(5)

        def step(x):
            s = g.get_state()
            a = torch.rand(3, device=device, generator=g)
            g.set_state(s)
            return x + a + torch.rand(3, device=device, generator=g), torch.rand(1, device=device, generator=g)
        return step, lambda i: (torch.ones(3, device=device),)
    _assert_same(make_rewind)


def test_the_initial_seed_read_in_the_step(device):
    """``g.initial_seed()`` in the step, the generator reseeded by the caller between calls: eager returns the seed
    of each call; a replay returned the capture's (the kernel's int result was recorded and dropped).  Also where the
    step draws before it reads the seed (a check there could only raise)."""
    def make(draw_first: bool):
        g = torch.Generator(device=device)

        def step(x):
            a = torch.rand(2, device=device, generator=g) if draw_first else 0
            return x * g.initial_seed() + a
        return step, lambda i: (g.manual_seed(i // 2), torch.ones(2, device=device))[1:]
    _assert_same(lambda: make(False), 6)
    _assert_same(lambda: make(True), 6)

    def make_default():
        def step(x):
            return x + torch.initial_seed()
        return step, lambda i: (torch.manual_seed(i // 2), torch.ones(2, device=device))[1:]
    _assert_same(make_default, 6)

    def make_seeded_inside():  # a seed the step sets itself, read after: the replay keeps running
        g = torch.Generator(device=device)

        def step(x, s):
            g.manual_seed(s)
            return x * g.initial_seed() + torch.rand(2, device=device, generator=g)
        return step, lambda i: (torch.ones(2, device=device), i // 3)
    _assert_same(make_seeded_inside, 6)
    f = torch.compile(lambda x: x * torch.Generator(device=device).manual_seed(4).initial_seed())
    for _ in range(3):
        assert f(torch.ones(1, device=device)).tolist() == [4.0]
    assert f.replays == 2


def test_torch_seed_in_the_step_is_a_graph_break(device):
    """``torch.seed()`` / ``Generator.seed()`` in the step: eager reseeds with a new non-deterministic number every
    call; a replay reseeded with the capture's number, so every call drew the same "random" numbers."""
    for seed in (torch.seed, lambda: torch.Generator(device=device).seed()):
        f = torch.compile(lambda x: x + seed())
        vals = {f(torch.zeros(1, device=device, dtype=torch.float64)).item() for _ in range(4)}
        assert len(vals) == 4 and f.replays == 0
    f = torch.compile(lambda x: (torch.seed(), x + torch.rand(1, device=device))[1])
    assert len({f(torch.zeros(1, device=device)).item() for _ in range(4)}) == 4
    assert "torch.seed()" in torch.compiler.explain(f, torch.zeros(1, device=device)).break_reasons[0]


def _assert_follows(fn, settings, device: str) -> None:
    """``fn`` compiled, called after each of ``settings`` (callables changing global state) gives eager's result."""
    f = torch.compile(fn)
    for i, s in enumerate(settings):
        s()
        x = torch.ones(2, device=device)
        assert f(x).tolist() == fn(x).tolist(), f"call {i}"


def test_flags_of_nested_modules_and_classes_the_step_reads(device, tmp_path, monkeypatch):
    """``torch.backends.cudnn.enabled``, ``pkg.sub.VALUE``, ``pkg.Cfg.K`` (a module's module or class, named through
    the module): eager reads the value of each call; a replay reused the capture's number (only the attributes of a
    module named directly were guarded: ``cfg.scale``)."""
    pkg = tmp_path / "r16b_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import sub\n\n\nclass Cfg:\n    K = 1.0\n")
    (pkg / "sub.py").write_text("VALUE = 1.0\n\n\nclass Inner:\n    K = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import r16b_pkg
    cudnn = torch.backends.cudnn
    monkeypatch.setattr(cudnn, "enabled", True)

    def flag(v):
        return lambda: setattr(cudnn, "enabled", v)
    _assert_follows(lambda x: x * (2 if torch.backends.cudnn.enabled else 3), [flag(True), flag(False), flag(True),
                                                                               flag(False)], device)
    for obj, name, read in ((r16b_pkg.sub, "VALUE", lambda x: x * r16b_pkg.sub.VALUE),
                            (r16b_pkg.Cfg, "K", lambda x: x * r16b_pkg.Cfg.K),
                            (r16b_pkg.sub.Inner, "K", lambda x: x * r16b_pkg.sub.Inner.K)):
        _assert_follows(read, [lambda v=v: setattr(obj, name, v) for v in (1.0, 2.0, 1.0, 3.0)], device)


def test_settings_read_through_getters(device, monkeypatch):
    """``torch.get_float32_matmul_precision()``, ``torch.get_num_threads()`` in the step, changed between calls: eager
    reads the setting of each call; a replay reused the capture's (no guard held them)."""
    from coretorch import _compat
    monkeypatch.setattr(_compat, "_precision", ["highest"])
    prec = [lambda v=v: torch.set_float32_matmul_precision(v) for v in ("highest", "high", "highest", "medium")]
    _assert_follows(lambda x: x * (2 if torch.get_float32_matmul_precision() == "highest" else 3), prec, device)
    monkeypatch.setattr(_compat, "_threads", dict(_compat._threads))
    monkeypatch.setattr(torch._compile.modes, "_threads", _compat._threads)
    n0 = torch.get_num_threads()
    try:
        threads = [lambda v=v: _compat._threads.__setitem__("intra", v) for v in (1, 2, 1, 3)]
        _assert_follows(lambda x: x * torch.get_num_threads(), threads, device)
    finally:
        _compat._threads["intra"] = None
    assert torch.get_num_threads() == n0


def test_environment_variables_the_step_reads(device, monkeypatch):
    """``os.environ["K"]`` / ``os.getenv("K")`` in the step, the variable changed between calls: eager reads each
    call's value; a replay reused the capture's (``os.environ`` was keyed by identity)."""
    import os
    monkeypatch.setenv("R16B_SCALE", "1")

    def env(v):
        return lambda: os.environ.__setitem__("R16B_SCALE", v)
    settings = [env(v) for v in ("1", "2", "2", "1", "3")]
    _assert_follows(lambda x: x * float(os.environ["R16B_SCALE"]), settings, device)
    _assert_follows(lambda x: x * float(os.getenv("R16B_SCALE", "0")), settings, device)
    f = torch.compile(lambda x: x * float(os.environ["R16B_SCALE"]))
    for _ in range(3):
        f(torch.ones(1, device=device))
    assert f.replays == 2


def test_autograd_state_an_argument_gets_in_place(device):
    """An in-place op the step records in an argument's graph (``x.mul_(3)`` on a non-leaf, ``x.add_(w)`` with ``w``
    requiring grad), ``x.requires_grad_()``, ``x.requires_grad_(False)``, ``x.detach_()``: eager changes the
    argument's ``grad_fn``/``requires_grad``, so the caller's backward through it includes the op; a replay changed
    the values only (the caller's backward silently missed the ``* 3``: w.grad 2 instead of 6, or raised, or the
    caller's tensor kept the requires_grad of before).  Now a graph break where the graph changed; a leaf's
    ``requires_grad_()`` is repeated by the replay."""
    w0 = torch.ones(3, device=device, requires_grad=True)

    def state(x):
        return x.requires_grad, type(x.grad_fn).__name__

    def check(step, make, after):
        seen = []
        for compiled in (False, True):
            f = torch.compile(step) if compiled else step
            got = []
            for i in range(3):
                w0.grad = None
                args = make(i)
                r = f(args[0])
                got.append((r.tolist(), state(args[0]), after(args)))
            seen.append(got)
        assert seen[0] == seen[1]

    def grad_of_leaf(args):
        args[0].sum().backward()
        return args[1].grad.tolist()

    def nonleaf(i):
        w = torch.full((3,), float(i + 1), device=device, requires_grad=True)
        return w * 2, w
    check(lambda x: x.mul_(3).detach().sum(), nonleaf, grad_of_leaf)
    check(lambda x: x.add_(w0).detach() * 1, lambda i: (torch.full((3,), float(i), device=device), w0),
          lambda args: (args[0].sum().backward(), w0.grad.tolist())[1])
    check(lambda x: (x.requires_grad_(), (x * 2).sum().backward(), x.grad)[2],
          lambda i: (torch.full((3,), float(i), device=device),), lambda args: args[0].grad.tolist())
    check(lambda x: x.requires_grad_(False) * 2,
          lambda i: (torch.full((3,), float(i), device=device, requires_grad=True),), lambda args: None)
    check(lambda x: x.detach_() * 2, nonleaf, lambda args: None)


def test_in_place_updates_without_autograd_state_still_replay(device):
    """The steps that change no argument's autograd state keep their replay: ``x.add_(1)`` on an argument, a manual
    SGD update under ``no_grad`` of a leaf in the closure."""
    f = torch.compile(lambda x: x.add_(1) * 2)
    for i in range(3):
        f(torch.full((3,), float(i), device=device))
    assert f.replays == 2
    w = torch.ones(3, device=device, requires_grad=True)

    def sgd(x):
        loss = (w * x).sum()
        loss.backward()
        with torch.no_grad():
            w.sub_(0.1 * w.grad)
            w.grad.zero_()
        return loss.detach()
    g = torch.compile(sgd)
    for _ in range(4):
        g(torch.ones(3, device=device))
    assert g.replays >= 2


def test_a_global_mode_the_step_sets(device):
    """A step that sets a global mode and leaves it set (``torch.set_grad_enabled(False)``, ``set_default_dtype``,
    ``use_deterministic_algorithms``, ``set_float32_matmul_precision``), the caller resetting it between calls: eager
    sets it at every call; a replay did not (the caller found the mode it had set).  Now a graph break."""
    def reset():
        torch.set_default_dtype(torch.float32)
        torch.set_grad_enabled(True)
        torch.use_deterministic_algorithms(False)
        torch.set_float32_matmul_precision("highest")

    def seen():
        return (torch.get_default_dtype(), torch.is_grad_enabled(), torch.are_deterministic_algorithms_enabled(),
                torch.get_float32_matmul_precision())
    try:
        for setter in (lambda: torch.set_default_dtype(torch.float64), lambda: torch.set_grad_enabled(False),
                       lambda: torch.use_deterministic_algorithms(True),
                       lambda: torch.set_float32_matmul_precision("high")):
            def step(x):
                setter()
                return x * 2
            f = torch.compile(step)
            for _ in range(3):
                reset()
                step(torch.ones(2, device=device))
                want = seen()
                reset()
                f(torch.ones(2, device=device))
                assert seen() == want
    finally:
        reset()


def test_a_compiled_module_forward_that_draws_or_sets_a_mode(device):
    """A compiled module whose forward draws through a name bound before the capture (``from random import random``)
    or calls ``torch.seed()``, or sets the default dtype: eager draws a new number (sets the mode) at every call; the
    module capture did not check (a replay repeated the capture's number, left the mode as it was)."""
    from random import random as draw

    class M(torch.nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.kind = kind

        def forward(self, x):
            if self.kind == 0:
                return self.lin(x) * draw()
            if self.kind == 1:
                torch.seed()
                return self.lin(x) + torch.rand(2, device=x.device)
            torch.set_default_dtype(torch.float64)
            return self.lin(x)
    try:
        for kind in (0, 1):
            c = torch.compile(M(kind).to(device))
            assert len({tuple(c(torch.ones(1, 2, device=device)).flatten().tolist()) for _ in range(4)}) == 4
        c = torch.compile(M(2).to(device))
        for _ in range(3):
            torch.set_default_dtype(torch.float32)
            c(torch.ones(1, 2, device=device))
            assert torch.get_default_dtype() == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)


def test_indexing_with_another_index_tensor_in_range(device):
    """``x[idx]`` with an index tensor argument, after the step wrote state (``w.add_(1)`` first): eager indexes with
    any index in range (negative ones too); on cpu a replay checked the values of the index's min and max read at the
    capture, so ``x[[0, 4]]`` or ``x[[-1, 2]]`` after a capture with ``[1, 2]`` raised "a value the captured step
    read on the host differs" (before any write it ran eagerly at every call).  Now the check is whether every index
    is in range."""
    res = []
    for compiled in (False, True):
        w = torch.zeros(3, device=device)

        def step(x, i):
            w.add_(1)
            return x[i] * 2
        f = torch.compile(step) if compiled else step
        out = [f(torch.arange(5., device=device), torch.tensor(v, device=device)).tolist()
               for v in ([1, 2], [1, 2], [0, 4], [-1, 2], [-5, 4], [3, 3])]
        res.append((out, w.tolist(), getattr(f, "replays", None)))
    assert res[0][:2] == res[1][:2]
    assert res[1][2] == 5
    f = torch.compile(lambda x, i: x[i])
    f(torch.arange(5., device=device), torch.tensor([1], device=device))
    with pytest.raises(IndexError, match="out of bounds"):
        f(torch.arange(5., device=device), torch.tensor([5], device=device)).tolist()
    with pytest.raises(IndexError, match="out of bounds"):
        f(torch.arange(5., device=device), torch.tensor([-6], device=device)).tolist()


def test_the_storage_offset_of_a_view_argument(device):
    """A view argument at another place of the same storage (``T[i:i + 5]``, same shape and strides: one guard key)
    where the step depends on its storage offset (``x.storage_offset()``, ``x.as_strided(size, stride, 1)``, whose
    offset is the storage's): eager follows each call's offset; a replay used the capture's (as_strided read the
    capture's place, as_strided_scatter raised inside the replay).  Now the replay checks the offset first and
    captures again; a step that does not read it keeps its replay."""
    t = torch.arange(20., device=device)
    for fn in (lambda x: x * x.storage_offset(), lambda x: x.as_strided((2,), (1,), 1) * 1,
               lambda x: torch.as_strided_scatter(x, torch.zeros(2, device=device), (2,), (1,), 1) * 1):
        f = torch.compile(fn)
        for i in (0, 0, 1, 2, 2, 1):
            assert f(t[i:i + 5]).tolist() == fn(t[i:i + 5]).tolist()
    f = torch.compile(lambda x: x.add_(1) * 2)
    for i in range(4):
        f(t[i:i + 5])
    assert f.replays == 3


def test_whether_an_argument_is_a_leaf_or_a_view(device):
    """``x.is_leaf`` / ``x.grad_fn is None`` / ``x._base is None`` read in the step (same shape, strides, dtype and
    requires_grad: one guard key before): eager branches on each call's argument; a replay took the capture's
    branch."""
    w = torch.ones(3, device=device, requires_grad=True)
    t = torch.arange(6., device=device)

    def leaf(x):
        with torch.no_grad():
            return x * (2 if x.is_leaf else 3)
    f = torch.compile(leaf)
    for a in (w, w * 1, w, w * 1):
        assert f(a).tolist() == leaf(a).tolist()
    g = torch.compile(lambda x: (x * 2).detach() if x.grad_fn is None else (x * 3).detach())
    assert [g(a).tolist()[0] for a in (w, w * 1, w)] == [2.0, 3.0, 2.0]
    h = torch.compile(lambda x: x * (2 if x._base is None else 3))
    assert [h(a).tolist()[1] for a in (t[:3], t[:3].clone(), t[:3], t[3:].clone())] == [3.0, 2.0, 3.0, 8.0]


def test_a_result_that_is_a_generator_an_iterator_or_a_closure(device):
    """A compiled generator function, a step returning ``iter([...])``, ``map(...)``, a lambda over a tensor it made,
    a bound method or a partial of such a tensor: eager returns a new object of this call; a replay returned the
    capture's (a used-up generator: ``[]``, or a closure over the capture's tensors).  Now a graph break."""
    import functools

    def gen(x):
        yield x * 2
        yield x * 3

    def make_closure(x):
        y = x * 2
        return lambda: y + 1
    cases = [(gen, lambda r: [t.tolist() for t in r]),
             (lambda x: iter([x * 2, x * 3]), lambda r: [t.tolist() for t in r]),
             (lambda x: map(lambda t: t * 2, [x, x + 1]), lambda r: [t.tolist() for t in r]),
             (make_closure, lambda r: r().tolist()),
             (lambda x: (x * 2).add, lambda r: r(1).tolist()),
             (lambda x: functools.partial(torch.add, x * 2), lambda r: r(1).tolist())]
    for fn, read in cases:
        f = torch.compile(fn)
        for i in range(3):
            x = torch.full((2,), float(i), device=device)
            assert read(f(x)) == read(fn(x))


def test_a_new_namespace_or_dataclass_of_numbers_in_the_result(device):
    """A result holding a namespace or a dataclass the call made with numbers only (``SimpleNamespace(n=...)``,
    ``Stats(n, tags=[])``) or a ``bytearray``: eager returns a new object each call; a replay returned the capture's
    own object every call (a caller appending to ``stats.tags`` changed every later result)."""
    import dataclasses
    import types

    @dataclasses.dataclass
    class Stats:
        n: int
        tags: list

    for make in (lambda x: types.SimpleNamespace(n=x.shape[0], tags=[]), lambda x: Stats(x.shape[0], []),
                 lambda x: bytearray(b"ab")):
        f = torch.compile(lambda x, make=make: (x * 2, make(x)))
        outs = [f(torch.ones(2, device=device))[1] for _ in range(3)]
        assert len({id(o) for o in outs}) == 3
        if not isinstance(outs[0], bytearray):
            outs[1].tags.append("seen")
            assert f(torch.ones(2, device=device))[1].tags == [] and outs[2].tags == []


def test_a_new_batch_tuple_each_call_replays(device):
    """``for batch in loader: step(batch)``: each call passes a new tuple of tensors of the same shapes; PyTorch's
    guards key it by structure and replay.  Every call captured again (correct results), and past the recompile
    limit the step ran eagerly with a warning; argument containers are keyed by structure now (argtree.py)."""
    import warnings

    def step(batch):
        x, y = batch
        return (x - y).pow(2).mean()
    f = torch.compile(step)
    batches = [(torch.full((2,), float(i), device=device), torch.zeros(2, device=device)) for i in range(10)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in batches:  # (batches made ahead, as a loader's prefetch: each tuple at its own address)
            assert f(b).item() == step(b).item()
    assert f.replays >= 8


class _Scaled:
    def __init__(self):
        self._s = 1.0

    @property
    def scale(self):
        return self._s

    def get(self):
        return self._s


def test_a_property_of_an_object_the_step_reads(device):
    """``c.scale`` (a property returning ``self._s``) of a plain object in the globals, the closure or the arguments,
    ``c._s`` changed between calls: eager reads the new number; a replay reused the capture's (only the attribute
    names the step's code reads were keyed: ``scale``, not ``_s``).  (A method's, ``c.get()``, stays unkeyed: a
    method may update its object, a Python side effect of the capture only, as ``meter.update(n)``.)"""
    c = _Scaled()
    for fn in (lambda x: x * c.scale,):
        f = torch.compile(fn)
        for v in (1.0, 2.0, 2.0, 3.0):
            c._s = v
            assert f(torch.ones(1, device=device)).tolist() == [v]
    g = torch.compile(lambda o, x: x * o.scale)
    for v in (1.0, 2.0, 3.0):
        c._s = v
        assert g(c, torch.ones(1, device=device)).tolist() == [v]


def test_the_clock_read_in_the_step(device):
    """``time.perf_counter()`` / ``time.time()`` in the step (an elapsed time returned): eager reads the clock at
    every call; a replay returned the capture's number.  Now a graph break, as a host random draw; a clock read
    by the standard library (``logging``'s record time) keeps the replay."""
    import logging
    import time

    def step(x):
        t0 = time.perf_counter()
        y = (x * 2).sum()
        return y, time.perf_counter() - t0, time.time()
    f = torch.compile(step)
    outs = [f(torch.ones(3, device=device)) for _ in range(3)]
    assert len({o[2] for o in outs}) == 3 and f.replays == 0
    log = logging.getLogger("test_review16b")
    log.setLevel(logging.INFO)
    log.addHandler(logging.NullHandler())
    g = torch.compile(lambda x: (log.info("step"), x * 2)[1])
    for _ in range(3):
        g(torch.ones(2, device=device))
    assert g.replays == 2


def test_negative_zero_is_another_number(device):
    """A Python float (an argument, a global, a container entry) of ``-0.0`` after a capture with ``0.0``: equal
    numbers, one guard key, but eager's ``x / s`` gives ``-inf`` and ``x * s`` ``-0.0``; a replay used the
    captured ``0.0`` (``inf``)."""
    import numpy as np
    f = torch.compile(lambda x, s: x / s)
    for s in (0.0, -0.0, 0.0, -0.0, np.float32(-0.0), np.float32(0.0)):
        assert f(torch.ones(2, device=device), s).tolist() == (torch.ones(2, device=device) / s).tolist()
    cfg = {"s": 0.0}
    g = torch.compile(lambda x: x / cfg["s"])
    for s in (0.0, -0.0, 0.0):
        cfg["s"] = s
        assert g(torch.ones(1, device=device)).tolist() == (torch.ones(1, device=device) / s).tolist()


def test_a_backward_into_the_graph_of_an_argument(device):
    """``f(h)`` with ``h = w * w`` made by the caller, the step calling ``backward`` through ``h``: eager carries the
    gradient into the caller's graph (``w.grad == 6 w``); a replay left ``w.grad`` None (or, for a closure leaf,
    ran the caller's nodes with the capture's saved values).  Now a graph break; ``autograd.grad`` with respect to
    ``h`` itself stays in the step and keeps its replay."""
    def step(h):
        (h * 3).sum().backward()
        return h.detach() * 1
    f = torch.compile(step)
    w0 = torch.ones(2, device=device, requires_grad=True)
    for i in range(4):
        w = torch.full((2,), float(i + 1), device=device, requires_grad=True)
        f(w * w)
        assert w.grad is not None and w.grad.tolist() == [6.0 * (i + 1)] * 2
        w0.grad = None
        f(w0 * float(i + 1))
        assert w0.grad.tolist() == [3.0 * (i + 1)] * 2
    g = torch.compile(lambda h: torch.autograd.grad((h * h).sum(), h)[0])
    for i in range(3):
        assert g(w0 * float(i + 1)).tolist() == [2.0 * (i + 1)] * 2
    assert g.replays == 2


def test_gradient_hooks_on_arguments_and_closure_tensors(device):
    """A gradient hook on a tensor argument or a closure leaf that is no parameter, registered by the caller after
    the capture, or by the step itself at every call: eager runs the hooks of each call; a replay ran those of the
    capture (``x.register_hook(lambda g: g * 3)`` ignored)."""
    def step(w):
        (w * 2).sum().backward()
        return w.grad * 1
    f = torch.compile(step)
    for i in range(4):
        w = torch.ones(2, device=device, requires_grad=True)
        if i >= 2:
            w.register_hook(lambda g: g * 3)
        assert f(w).tolist() == [6.0 if i >= 2 else 2.0] * 2
    c = torch.ones(2, device=device, requires_grad=True)

    def step2(x):
        c.grad = None
        (c * x).sum().backward()
        return c.grad * 1
    g = torch.compile(step2)
    assert [g(torch.ones(2, device=device)).tolist()[0] for _ in range(2)] == [1.0, 1.0]
    c.register_hook(lambda gr: gr * 3)
    assert [g(torch.ones(2, device=device)).tolist()[0] for _ in range(2)] == [3.0, 3.0]

    def step3(x):
        c.grad = None
        c.register_hook(lambda gr: gr * 2)
        (c * x).sum().backward()
        return c.grad * 1
    h = torch.compile(step3)
    assert [h(torch.ones(2, device=device)).tolist()[0] for _ in range(3)] == [6.0, 12.0, 24.0]


def test_einsum_contraction_order_setting_changed(device):
    """``torch.backends.opt_einsum.enabled`` switched between calls of a step with a three-operand einsum: eager
    contracts in the order of each call's setting (another order rounds otherwise); a replay kept the capture's
    order (on cpu not bitwise eager's)."""
    oe = torch.backends.opt_einsum
    if not oe.is_available():
        pytest.skip("opt_einsum not installed")
    torch.manual_seed(0)
    a, b, c = (torch.randn(50, 3, device=device), torch.randn(3, 64, device=device),
               torch.randn(64, 8, device=device))

    def step(a, b, c):
        return torch.einsum("ij,jk,kl->il", a, b, c)
    f = torch.compile(step)
    try:
        for enabled in (True, False, True, False):
            oe.enabled = enabled
            assert torch.equal(f(a, b, c), step(a, b, c))
    finally:
        oe.enabled = True


def test_an_fgsm_step_sets_requires_grad_on_its_input(device):
    """An adversarial (FGSM) step: ``x.requires_grad_()`` on the input, a backward, ``x + eps * x.grad.sign()``:
    the replay sets ``requires_grad`` on each call's input as eager does (and keeps replaying), and the parameters,
    losses and the input's ``.grad`` follow eager."""
    import coretorch.nn.functional as F
    res = []
    for compiled in (False, True):
        torch.manual_seed(0)
        m = torch.nn.Linear(4, 3).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            x.requires_grad_()
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            x_adv = (x + 0.1 * x.grad.sign()).detach()
            opt.zero_grad()
            F.cross_entropy(m(x_adv), y).backward()
            opt.step()
            return loss.detach()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(5):
            gen = torch.Generator().manual_seed(i)
            x, y = torch.randn(8, 4, generator=gen).to(device), torch.randint(0, 3, (8,), generator=gen).to(device)
            loss = f(x, y)
            out.append((loss.tolist(), x.requires_grad, x.grad.tolist()))
        res.append((out, m.weight.tolist(), getattr(f, "replays", 3)))
    if device == "cpu":
        assert res[0][:2] == res[1][:2]
    else:
        assert [o[1:] for o in res[0][0]] == [o[1:] for o in res[1][0]]
        assert torch.allclose(torch.tensor(res[0][1]), torch.tensor(res[1][1]), atol=1e-5)
    assert res[1][2] == 3
