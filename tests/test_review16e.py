"""Review 16e: the compile features added in session 16 — argument containers keyed by structure (argtree.py),
per-instance compiled methods, ``torch.compile(model.forward)`` / ``torch.compile(opt.step)``, and PyTorch's
compiler switches (``set_stance``, backends, ``torch._dynamo``/``torch._inductor`` configs, ``set_logs``,
``torch.compiler.disable``, ``torch._dynamo.graph_break``)."""
import coretorch as torch
import coretorch._dynamo


def test_graph_break_takes_a_message(device):
    """PyTorch's ``torch._dynamo.graph_break(msg="")`` takes a message; coretorch's took no argument, so a step
    calling ``graph_break("data-dependent")`` raised TypeError (eagerly and compiled)."""
    calls = []

    def f(x):
        y = x * 2
        torch._dynamo.graph_break("data-dependent")
        calls.append(1)
        return y + 1

    c = torch.compile(f)
    x = torch.ones(3, device=device)
    for _ in range(3):
        assert torch.equal(c(x), f(x))
    assert c.replays == 0 and len(calls) == 6
    ex = torch.compiler.explain(f, x)
    assert ex.graph_break_count == 1 and "data-dependent" in ex.break_reasons[0]
    torch._dynamo.graph_break(msg="outside")  # outside a capture: nothing


def test_dict_argument_keys_by_class_and_sign(device):
    """``{1: x}`` and ``{True: x}`` (or ``{0.0: x}`` and ``{-0.0: x}``) are equal dicts, but a step reading its keys
    sees them differ.  Eager: ``{True: x}`` takes the bool branch, ``x / -0.0`` is -inf; compiled before: the
    argument structure compared the keys with ``==``, so the replay of the ``{1: x}`` capture ran (3 instead of 2,
    inf instead of -inf)."""
    x = torch.ones(2, device=device)

    def f(d):
        (k, v), = d.items()
        return v * (2 if isinstance(k, bool) else 3)

    c = torch.compile(f)
    for d in ({1: x}, {1: x}, {True: x}):
        assert torch.equal(c(d), f(d))

    def g(d):
        return x / next(iter(d))

    c = torch.compile(g)
    for d in ({0.0: 1}, {0.0: 1}, {-0.0: 1}):
        assert torch.equal(c(d), g(d))


def test_dict_subclass_with_own_getitem_not_opened(device):
    """A dict subclass whose ``__getitem__`` scales by an attribute (or whose ``__missing__`` returns one) gives the
    step more than its entries.  Eager: ``d["a"]`` is ``x * d.scale``; compiled before: the argument was opened into
    its entries and keyed by them, so a fresh one with another ``scale`` replayed the capture's ``scale``."""
    x = torch.ones(2, device=device)

    class Scaled(dict):
        def __getitem__(self, k):
            return dict.__getitem__(self, k) * self.scale

    class Lazy(dict):
        def __missing__(self, k):
            return self.default

    def f(d):
        return d["a"] + 1

    c = torch.compile(f)
    for sc in (1.0, 1.0, 2.0, 3.0):
        d = Scaled(a=x)
        d.scale = sc
        assert torch.equal(c(d), f(d))
    c = torch.compile(f)
    for i in range(3):
        d = Lazy()
        d.default = x * i
        assert torch.equal(c(d), f(d))


def test_attributes_read_by_protocol_methods_are_guarded(device):
    """The same argument object whose ``__getitem__`` reads ``self.scale``, changed between calls (a plain object
    and a dict subclass).  Eager: the new scale; compiled before: the step's code names no attribute, so nothing
    keyed ``scale`` and the replay reused the capture's."""
    x = torch.ones(2, device=device)

    class P:
        def __init__(self):
            self.t = x

        def __getitem__(self, k):
            return self.t * self.scale

    class Scaled(dict):
        def __getitem__(self, k):
            return dict.__getitem__(self, k) * self.scale

    def f(d):
        return d["a"] + 1

    for obj in (P(), Scaled(a=x)):
        c = torch.compile(f)
        for sc in (1.0, 1.0, 2.0, 3.0):
            obj.scale = sc
            assert torch.equal(c(obj), f(obj))
        assert c.replays >= 1


def test_sets_and_bytearrays_changed_in_place_are_keyed(device):
    """A set or a bytearray (an argument, a global, a dict entry) changed in place between calls.  Eager: the new
    ``len(s)`` / ``b[0]``; compiled before: keyed by identity only, the replay reused the capture's value."""
    x = torch.ones(2, device=device)

    def fs(s):
        return x * len(s)

    def fb(b):
        return x * b[0]

    def fd(d):
        return x * len(d["s"])

    s, b, s2 = {1}, bytearray(b"\x01"), {1}
    cs, cb, cd = torch.compile(fs), torch.compile(fb), torch.compile(fd)
    for _ in range(2):
        cs(s), cb(b), cd({"s": s2})
    s.add(3)
    b[0] = 7
    s2.add(4)
    assert torch.equal(cs(s), fs(s)) and torch.equal(cb(b), fb(b)) and torch.equal(cd({"s": s2}), fd({"s": s2}))
    assert cs.replays >= 1 and cb.replays >= 1


def test_module_capture_keys_argument_objects(device):
    """``torch.compile(model)`` called with a config object (read in a submodule's forward), a set, and a dict
    subclass whose ``__getitem__`` scales by an attribute, each changed between calls.  Eager: the new values;
    compiled before: a module capture keyed such arguments by identity only (its key has no roots), so the replay
    reused the capture's ``cfg.k``, ``len(s)`` and ``d.scale``."""
    nn = torch.nn

    class Cfg:
        def __init__(self):
            self.k = 1.0

    class Scaled(dict):
        def __getitem__(self, k):
            return dict.__getitem__(self, k) * self.scale

    class B(nn.Module):
        def forward(self, x, cfg):
            return x * cfg.k

    class N(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = B()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, cfg, s, d):
            return self.lin(self.b(x, cfg)) * len(s) + d["a"]

    torch.manual_seed(0)
    n = N().to(device)
    on = torch.compile(n)
    x = torch.ones(1, 2, device=device)
    cfg, s = Cfg(), {1}
    for i in range(5):
        if i >= 2:
            cfg.k = float(i)
            s.add(i)
        d = Scaled(a=x)
        d.scale = float(i // 3)
        assert torch.equal(on(x, cfg, s, d), n(x, cfg, s, d))


def test_common_compiler_knobs_exist():
    """Scripts set ``torch._inductor.config.compile_threads = 1``, ``cpp.simdlen``, ``triton.cudagraph_trees`` and
    ``torch._dynamo.config.dynamic_shapes``; PyTorch has them, coretorch raised AttributeError at the script's first
    lines.  They are kept and read back (no effect)."""
    import coretorch._inductor.config as ic
    import coretorch._dynamo.config as dc
    for cfg, name, value in ((ic, "compile_threads", 1), (ic, "triton.cudagraph_trees", False),
                             (ic, "cpp.simdlen", 8), (ic, "force_disable_caches", True), (dc, "dynamic_shapes", False),
                             (dc, "skip_nnmodule_hook_guards", False)):
        with cfg.patch(name, value):
            assert cfg._get(name) == value
    ic.compile_threads = 1
    torch.compile(lambda x: x, options={"compile_threads": 2})


def test_disable_of_a_module_breaks_the_capture(device):
    """``torch.compiler.disable(module)`` called inside a compiled step: PyTorch wraps the module (an
    OptimizedModule) and its forward runs as Python at every call (a print in it prints 4 times in 4 calls);
    coretorch returned the module unchanged, so its forward was recorded into the replay and ran once."""
    nn = torch.nn
    calls = []

    class Logger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            calls.append(x.shape)  # (a side effect no guard sees: appended, never read)
            return self.lin(x)

    torch.manual_seed(0)
    raw = Logger().to(device)
    lg = torch.compiler.disable(raw)
    assert isinstance(lg, nn.Module) and list(lg.state_dict()) == ["_orig_mod.lin.weight", "_orig_mod.lin.bias"]

    def step(x):
        with torch.no_grad():
            return lg(x) + 1

    c = torch.compile(step)
    x = torch.ones(1, 2, device=device)
    for _ in range(4):
        assert torch.equal(c(x), raw(x) + 1)
    assert len(calls) == 8 and c.replays == 0
    lg(x).sum().backward()
    assert raw.lin.weight.grad is not None


def test_compile_of_a_class_body_compiled_forward_is_the_module_capture(device):
    """``torch.compile(block.forward)`` where the class compiled ``forward`` in its body: PyTorch compiles the
    forward with its backward.  coretorch made a function capture of the instance's compiled function (its results
    carry no autograd graph), so every training call was a graph break (0 replays); now it is the module capture,
    as for any other ``forward``: replays, bitwise gradients."""
    nn = torch.nn

    class Blk(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x).relu()

    class CBlk(Blk):
        @torch.compile
        def forward(self, x):
            return self.lin(x).relu()

    torch.manual_seed(0)
    a = Blk().to(device)
    torch.manual_seed(0)
    b = CBlk().to(device)
    c = torch.compile(b.forward)
    assert isinstance(c, torch._compile.ModuleCapture)
    for _ in range(4):
        x = torch.randn(2, 3, device=device)
        la, lb = a(x).sum(), c(x).sum()
        la.backward()
        lb.backward()
        assert torch.equal(la, lb) and torch.equal(a.lin.weight.grad, b.lin.weight.grad)
    assert c.replays == 3


def test_fresh_dict_keys_of_value_types_replay(device):
    """A fresh batch dict keyed by tuples, bytes, None and floats each call: equal keys, so it replays (keying the
    keys by identity would capture again at every call)."""
    x = torch.ones(2, device=device)

    def f(d):
        return sum(d.values(), torch.zeros(2, device=device))

    c = torch.compile(f)
    for i in range(4):
        d = {("layer", 0): x * i, b"k": x, None: x, 3.5: x}
        assert torch.equal(c(d), f(d))
    assert c.replays == 3


def test_a_fresh_size_argument_replays(device):
    """``f(x, y.shape)`` with a new ``torch.Size`` each call: coretorch's own tuple subclasses are opened as plain
    tuples (its ``__getitem__`` returns its entries), so the calls replay."""
    def f(x, shp):
        return x.reshape(shp) * 2

    c = torch.compile(f)
    for _ in range(4):
        assert torch.equal(c(torch.ones(6, device=device), torch.ones(2, 3).shape),
                           torch.full((2, 3), 2.0, device=device))
    assert c.replays == 3


def test_module_capture_fresh_value_objects_replay(device):
    """A compiled module called with a new ``torch.device`` object each call (and a dtype): they are values, keyed
    by the leaves; the argument objects' state part (see test_module_capture_keys_argument_objects) keys only what
    it fingerprints, not identities, so the calls replay."""
    nn = torch.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, dev, dt):
            return self.lin(x).to(dev, dt)

    om = torch.compile(M().to(device))
    with torch.no_grad():
        for _ in range(4):
            om(torch.ones(1, 2, device=device), torch.device(device), torch.float32)
    assert om.__dict__["_capture"].replays == 3


def test_recompile_limit_warning_of_a_compiled_method_points_at_the_caller(device):
    """A module whose ``forward`` is compiled in its class body, past recompile_limit: the warning named
    coretorch's ``module.py`` (stacklevel 2 is Module.__call__'s frame); it names the line that called the
    module, as a compiled function's and a compiled module's warnings do."""
    import warnings

    class B(torch.nn.Module):
        @torch.compile
        def forward(self, x, n):
            return x * n

    b = B()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(10):
            b(torch.ones(1, device=device), n)
    assert [x.filename for x in w if "recompile_limit" in str(x.message)] == [__file__]


def test_recompile_log_names_optimizer_state_numbers(device, caplog):
    """A step that reads optimizer ``state`` (a Python count) but not ``param_groups``: a changed count captures
    again, and the recompile log named "the optimizers' param_groups numbers" (the parts are named by position, and
    the state numbers sat at the param_groups' place)."""
    import logging
    w = torch.ones(2, device=device, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    opt.state[w]["n"] = 1

    def f(x):
        return x * opt.state[w]["n"]

    c = torch.compile(f)
    x = torch.ones(2, device=device)
    torch._logging.set_logs(recompiles=True)
    try:
        from coretorch._compile.logs import recompiles_log
        recompiles_log.addHandler(caplog.handler)
        with caplog.at_level(logging.INFO, logger="coretorch._dynamo.recompiles"):
            c(x)
            opt.state[w]["n"] = 2
            assert torch.equal(c(x), f(x))
        msgs = [r.getMessage() for r in caplog.records if "Recompiling" in r.getMessage()]
        assert msgs and "the numbers in the optimizers' state" in msgs[-1] and "param_groups" not in msgs[-1]
    finally:
        recompiles_log.removeHandler(caplog.handler)
        torch._logging.set_logs()
