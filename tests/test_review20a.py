"""Review 20a: the guards of a compiled function (whole-step capture) against every change a caller makes between
calls (closure variables, globals, arguments, module state, parameters changed outside the step, results): the
compiled call must give eager's results and state, bitwise on cpu."""
from __future__ import annotations

import collections

import numpy as np

import coretorch as torch


def _calls(step, change, n: int = 5) -> list:
    """``n`` calls of ``step`` (eager), with ``change(i)`` between them; the results as numpy arrays."""
    out = []
    for i in range(n):
        args = change(i)
        out.append(step(*args).numpy().tolist())
    return out


def test_a_long_list_of_numbers_or_tensors_changed_in_place(device):
    """A closure list longer than the guards key entry by entry (a class-weight list of 300 numbers, a bank of 300
    tensors; a config dict's nested list of 20 numbers, past the 16 a nested container is keyed by) changed in
    place between calls: eager reads the new entry.  The compiled step before: such a list was keyed by its length
    alone, so the replay used the capture's number or tensor (``cw[3] = 5.0``, ``bank[5] = t`` ignored)."""
    def run(compiled: bool) -> list:
        cw = [1.0] * 300
        bank = [torch.full((3,), float(k), device=device) for k in range(300)]
        cfg = {"ce": 1.0, "lrs": [0.1 * k for k in range(20)]}

        def step(x):
            return (x * torch.tensor(cw[:3], device=device) * bank[5] * cfg["lrs"][1]).cpu()

        def change(i: int) -> tuple:
            if i == 2:
                cw[1] = 5.0
            if i == 3:
                bank[5] = torch.full((3,), 77.0, device=device)
            if i == 4:
                cfg["lrs"][1] = 9.0
            return (torch.ones(3, device=device),)
        f = torch.compile(step) if compiled else step
        out = _calls(f, change, 6)
        if compiled:
            assert f.replays >= 2
        return out
    assert run(True) == run(False)


def test_a_long_log_the_step_appends_to_keeps_its_replay(device):
    """A step appending to a log list that already holds more than 256 entries (a loss history): eager appends;
    the compiled step replays (the append, a Python side effect, happens at the capture only, as documented).
    Before: a list past 256 entries was keyed by its length, checked before the entries a counter appends were
    left out, so every call captured again until the recompile limit (then eager, with a warning)."""
    log = [0.0] * 300

    def step(x):
        log.append(1.0)
        return x * 2
    f = torch.compile(step)
    for _ in range(6):
        out = f(torch.ones(3, device=device))
    assert f.replays == 5 and out.tolist() == [2.0] * 3


def test_a_long_global_tuple_rebuilt_at_each_call(device):
    """A global tuple of 100 numbers rebuilt at each call (``W = tuple(...)``): eager reads this call's.  The
    compiled step before: a tuple over 64 entries was keyed by its id, and a new one made at the address of a freed
    one replayed the freed one's numbers (the third call returned the first call's values)."""
    def run(compiled: bool) -> list:
        g = {"torch": torch}
        exec("def step(x):\n    return x * W[3]\n", g)

        def change(i: int) -> tuple:
            g["W"] = tuple([float(i)] * 100)
            return (torch.ones(3, device=device),)
        f = torch.compile(g["step"]) if compiled else g["step"]
        return _calls(lambda x: f(x).cpu(), change, 8)
    assert run(True) == run(False)


class _SlotCfg:
    """A config object with ``__slots__`` (as ``dataclass(slots=True)`` makes): no ``__dict__``."""

    __slots__ = ("k", "d")

    def __init__(self) -> None:
        self.k = 1.0
        self.d = {"w": 1.0}


def test_the_numbers_of_a_slotted_config_object(device):
    """A config object whose class declares ``__slots__`` (``@dataclass(slots=True)``), in the closure or passed as
    an argument, with a number changed between calls (``cfg.k = 7.0``, ``cfg.d["w"] = 4.0``): eager reads the new
    number.  The compiled step before: only objects with a ``__dict__`` had their attributes keyed, so the replay
    multiplied by the capture's 1.0."""
    def run(compiled: bool) -> list:
        c, a = _SlotCfg(), _SlotCfg()

        def step(x, arg):
            return (x * c.k * c.d["w"] + arg.k).cpu()

        def change(i: int) -> tuple:
            if i == 2:
                c.k = 7.0
            if i == 3:
                c.d["w"] = 4.0
            if i == 4:
                a.k = 3.0
            return torch.ones(3, device=device), a
        f = torch.compile(step) if compiled else step
        out = _calls(f, change, 6)
        if compiled:
            assert f.replays >= 2
        return out
    assert run(True) == run(False)


def test_momentum_buffers_reset_to_none_between_calls(device):
    """SGD's momentum reset by the caller between calls (``state["momentum_buffer"] = None``, as after a warm
    restart): eager's next step makes the buffer from the gradient and the steps after it update that buffer.  The
    compiled step before: the optimizer replay, failing to load the None, recorded the step again; that recording
    made a new buffer (the state's keys were unchanged, so it was kept) and every later replay made a fresh buffer
    from the gradient instead of updating the state's (momentum lost from then on)."""
    def run(compiled: bool) -> list:
        torch.manual_seed(0)
        m = torch.nn.Linear(4, 8).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            loss = m(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss.detach()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(6):
            if i == 3:
                for s in opt.state.values():
                    s["momentum_buffer"] = None
            f(torch.full((5, 4), 0.1 * (i + 1), device=device))
            out.append([m.weight.tolist(), opt.state[m.weight]["momentum_buffer"].tolist()])
        if compiled:
            assert f.replays >= 3
        return out
    assert run(True) == run(False)


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x)


class _Block2(_Block):
    pass


class _Trainer:
    def __init__(self, device: str) -> None:
        self.m = torch.nn.Linear(3, 3).to(device)
        self.k = 1.0

    def loss(self, x):
        return (self.m(x) * self.k).sum()


def test_a_method_of_a_user_class_patched_between_calls(device):
    """A user module class's ``forward`` (on the class itself or on a subclass, which then overrides it) and a
    plain trainer class's method replaced between calls (monkeypatching): eager calls the new method.  The compiled
    step before: no guard looked at the classes' methods, so the replay ran the recorded kernels of the old one."""
    def run(compiled: bool) -> list:
        torch.manual_seed(0)
        b, b2, t = _Block().to(device), _Block2().to(device), _Trainer(device)
        opt = torch.optim.SGD(t.m.parameters(), lr=0.1)
        saved = _Block.forward, _Trainer.loss

        def step(x):
            opt.zero_grad()
            loss = t.loss(x)
            loss.backward()
            opt.step()
            with torch.no_grad():
                return (loss.detach() + b(x).sum() + b2(x).sum()).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        try:
            for i in range(7):
                if i == 2:
                    _Block.forward = lambda self, x: self.lin(x) * 3
                if i == 3:
                    _Block2.forward = lambda self, x: self.lin(x) * 5
                if i == 5:
                    _Trainer.loss = lambda self, x: (self.m(x) * self.k * 2).sum()
                out.append(f(torch.ones(2, 3, device=device)).tolist())
        finally:
            _Block.forward, _Trainer.loss = saved
            if "forward" in vars(_Block2):
                del _Block2.forward
        if compiled:
            assert f.replays == 2
        return out
    assert run(True) == run(False)


def test_a_keyword_only_default_of_a_helper_changed(device):
    """A helper the step calls with a keyword-only default (``def helper(x, *, k=2.0)``) whose
    ``__kwdefaults__["k"]`` changes between calls: eager multiplies by the new ``k``.  The compiled step before: a
    function among the roots was keyed by its closure and positional defaults only, so the replay used 2.0."""
    def run(compiled: bool) -> list:
        def helper(x, *, k=2.0):
            return x * k

        def step(x):
            return helper(x).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(5):
            if i == 2:
                helper.__kwdefaults__["k"] = 3.0
            out.append(f(torch.ones(3, device=device)).tolist())
        return out
    assert run(True) == run(False)


class _Helpers:
    k = 3.0

    @classmethod
    def scale(cls, x):
        return x * cls.k


class _StaticBlock(torch.nn.Module):
    @staticmethod
    def act(x):
        return x * 2

    def forward(self, x):
        return self.act(x)


def test_a_classmethod_or_staticmethod_patched_between_calls(device):
    """A plain class's classmethod and a module class's staticmethod replaced between calls (``C.scale =
    classmethod(...)``, ``Block.act = staticmethod(...)``): eager calls the new one.  The compiled step before: the
    replay ran the kernels of the old one."""
    saved = vars(_Helpers)["scale"], vars(_StaticBlock)["act"]

    def run(compiled: bool) -> list:
        h, b = _Helpers(), _StaticBlock()

        def step(x):
            return (h.scale(x) + b(x)).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        try:
            for i in range(5):
                if i == 2:
                    _Helpers.scale = classmethod(lambda cls, x: x * 7)
                if i == 3:
                    _StaticBlock.act = staticmethod(lambda x: x * 11)
                out.append(f(torch.ones(2, device=device)).tolist())
        finally:
            _Helpers.scale, _StaticBlock.act = saved
        return out
    assert run(True) == run(False)


class _Weighted(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cw = np.ones(3, dtype=np.float32)

    def forward(self, x):
        return x * torch.tensor(self.cw * 2, device=x.device) * float(self.cw[0])


def test_a_numpy_array_of_a_module_or_a_dict_changed_in_place(device):
    """A small numpy array held by a module attribute (``self.cw``) or a closure dict's entry (``cfg["cw"]``),
    read on the host (``self.cw * 2``, ``float(cfg["cw"][0])``) and changed in place between calls: eager reads the
    new values.  The compiled step before: such an array was keyed by its identity (only one that is itself a root,
    a global or closure array, by its values), so the replay used the numbers computed at the capture."""
    def run(compiled: bool) -> list:
        m = _Weighted()
        cfg = {"cw": np.ones(2)}

        def step(x):
            with torch.no_grad():
                return (m(x) * float(cfg["cw"][1])).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(5):
            if i == 2:
                m.cw[0] = 5.0
            if i == 3:
                cfg["cw"][1] = 3.0
            out.append(f(torch.ones(3, device=device)).tolist())
        if compiled:
            assert f.replays == 2
        return out
    assert run(True) == run(False)


def test_a_container_in_a_helpers_closure_changed_in_place(device):
    """A helper held by the step whose closure holds a list or a dict (``loss_fn = lambda a: a * w[0] * cfg["s"]``,
    a closure two functions down, ``partial(f, d=cfg)``) changed in place between calls: eager reads the new
    entries.  The compiled step before: a helper function was keyed by the numbers its closure holds, its lists and
    dicts by identity, so the replay used the capture's ``w[0]``.  A list such a helper only appends to (a logger's
    buffer) is still no guard: the step keeps its replay."""
    import functools

    def run(compiled: bool) -> tuple[list, int]:
        w, cfg, d = [1.0], {"s": 1.0}, {"k": 1.0}
        loss_fn = lambda a: a * w[0] * cfg["s"]  # noqa: E731

        def make():
            def inner(a):
                return a * d["k"]
            return lambda a: inner(a) + 1
        two = make()
        part = functools.partial(lambda a, e: a * e["k"], e=d)
        buf: list = []
        log = lambda v: buf.append(v)  # noqa: E731

        def step(x):
            log(1.0)
            return (loss_fn(x) + two(x) + part(x)).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(6):
            if i == 2:
                w[0] = 3.0
            if i == 3:
                cfg["s"] = 2.0
            if i == 4:
                d["k"] = 5.0
            out.append(f(torch.ones(3, device=device)).tolist())
        return out, f.replays if compiled else 0
    got, replays = run(True)
    assert got == run(False)[0] and replays == 2


class _TupleHolder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.t = ([1.0], {"k": 1.0})

    def forward(self, x):
        return x * self.t[0][0] * self.t[1]["k"]


_Named = collections.namedtuple("_Named", "lrs k")


def test_a_list_or_dict_inside_a_tuple_changed_in_place(device):
    """A tuple holding a list and a dict (a closure's ``cfg = ([1.0], {"k": 1.0})``, a module attribute, a dict's
    entry, a named tuple ``Cfg(lrs=[1.0], k=2.0)``) whose list or dict is changed in place between calls: eager
    reads the new numbers.  The compiled step before: a tuple was keyed by its entries' values, the list and dict by
    identity, so the replay used the capture's numbers."""
    def run(compiled: bool) -> list:
        cfg = ([1.0], {"k": 1.0})
        d = {"pair": ([1.0], 2.0)}
        m = _TupleHolder()
        nt = _Named([1.0], 2.0)

        def step(x):
            with torch.no_grad():
                return (x * cfg[0][0] * cfg[1]["k"] * d["pair"][0][0] * nt.lrs[0] + m(x)).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(8):
            if i == 2:
                cfg[0][0] = 3.0
            if i == 3:
                cfg[1]["k"] = 5.0
            if i == 4:
                d["pair"][0][0] = 7.0
            if i == 5:
                m.t[1]["k"] = 11.0
            if i == 6:
                nt.lrs[0] = 13.0
            out.append(f(torch.ones(3, device=device)).tolist())
        if compiled:
            assert f.replays == 2
        return out
    assert run(True) == run(False)


class _Opts:
    scales = [1.0]

    def __init__(self) -> None:
        self.a = 1


def test_a_class_attribute_list_of_a_config_object_changed_in_place(device):
    """A list held by a plain config class and read through an instance (``o.scales[0]``, ``O.scales[0] = 11.0``
    between calls): eager reads the new number.  The compiled step before: a class attribute read through the
    object was keyed only where it was a Python number, so the replay used the capture's."""
    saved = list(_Opts.scales)

    def run(compiled: bool) -> list:
        _Opts.scales[:] = saved
        o = _Opts()

        def step(x):
            return (x * o.scales[0]).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(5):
            if i == 2:
                _Opts.scales[0] = 11.0
            out.append(f(torch.ones(3, device=device)).tolist())
        return out
    try:
        assert run(True) == run(False)
    finally:
        _Opts.scales[:] = saved


class _Config:
    class Train:
        k = 1.0


def test_a_nested_config_class_attribute_changed(device):
    """A namespace class nested in a config class (``Config.Train.k``, read by the step through the global class)
    whose number changes between calls: eager reads the new number.  The compiled step before: the outer class's
    attributes the code reads were keyed (the inner class by identity), not the inner class's, so the replay used
    the capture's ``k``."""
    def run(compiled: bool) -> list:
        _Config.Train.k = 1.0

        def step(x):
            return (x * _Config.Train.k).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(5):
            if i == 2:
                _Config.Train.k = 7.0
            out.append(f(torch.ones(3, device=device)).tolist())
        return out
    try:
        assert run(True) == run(False)
    finally:
        _Config.Train.k = 1.0


class _AttrDict(dict):
    """The common config pattern whose missing attributes raise KeyError, not AttributeError."""

    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__  # type: ignore[assignment]


def test_an_attrdict_config_whose_getattr_raises_key_error(device):
    """A config ``class AttrDict(dict): __getattr__ = dict.__getitem__`` in the closure (``cfg.lr``,
    ``cfg.train.k``), changed between calls: eager runs and reads the new numbers.  The compiled step before: the
    capture's probe for iterators, ``getattr(v, "__name__", None)``, got the KeyError the config raises for a name
    it lacks, so the compiled call raised KeyError where eager ran."""
    def run(compiled: bool) -> list:
        cfg = _AttrDict(lr=1.0, train=_AttrDict(k=1.0))

        def step(x):
            return (x * cfg.lr * cfg.train.k).cpu()
        f = torch.compile(step) if compiled else step
        out = []
        for i in range(5):
            if i == 2:
                cfg.lr = 2.0
            if i == 3:
                cfg.train.k = 3.0
            out.append(f(torch.ones(3, device=device)).tolist())
        if compiled:
            assert f.replays == 2
        return out
    assert run(True) == run(False)


class _SlotNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cfg = _SlotCfg()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) * self.cfg.k * self.cfg.d["w"]


def test_a_slotted_config_a_compiled_module_holds(device):
    """A module holding a ``__slots__`` config (``self.cfg.k``) changed between calls of ``compile(model)``: eager's
    forward and backward use the new number.  The compiled module before: its replay used the capture's."""
    def run(compiled: bool) -> list:
        torch.manual_seed(0)
        m = _SlotNet().to(device)
        cm = torch.compile(m) if compiled else m
        out = []
        for i in range(5):
            if i == 2:
                m.cfg.k = 2.0
            if i == 3:
                m.cfg.d["w"] = 3.0
            y = cm(torch.ones(2, 3, device=device))
            y.sum().backward()
            out.append([y.tolist(), m.lin.weight.grad.tolist()])
        return out
    assert run(True) == run(False)
