"""Review 17b of coretorch.compile: dtypes, Python scalars and type promotion in compiled code: numbers whose type
changes between calls (2, 2.0, True, numpy scalars, 0-d tensors), integer/bool/half/double tensors through
compiled steps, the default dtype, casts and dtype checks, NaN/inf/-0.0 semantics.  Each test runs the same calls
eagerly and compiled and compares dtypes and values (bitwise on cpu)."""
from __future__ import annotations

import fractions
import functools
import operator

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F


def _same(e, c):
    assert c.dtype == e.dtype and c.shape == e.shape
    assert c.tolist() == e.tolist()


SCALE = 2


def _by_global(x):
    return x * SCALE


class _Cfg:
    pass


def test_a_number_the_step_reads_changing_its_type_but_not_its_value(device):
    """A number the step reads (a global, a config object's attribute, a dict or list entry, a closure cell, a
    module attribute, a partial's argument) changed from 2 to 2.0 or from 1 to True: eager promotes each differently
    (int64 * 2 -> int64, int64 * 2.0 -> float32, bool * True -> bool, bool * 1 -> int64).  The guards keyed the
    numbers by value, and 2 == 2.0 == True-ish keys matched: the replay gave the int64 result for 2.0."""
    global SCALE
    x = torch.arange(4, device=device)
    b = torch.tensor([True, False, True], device=device)
    cf = torch.compile(_by_global)
    for s in (2, 2.0, 2):
        SCALE = s
        _same(_by_global(x), cf(x))
    cfg = _Cfg()
    d: dict = {}
    lst = [0]
    s = 1

    def by_attr(t):
        return t * cfg.s

    def by_dict(t):
        return t * d["s"]

    def by_list(t):
        return t * lst[0]

    def by_cell(t):
        return t * s

    def by_arg(t, k):
        return t * k

    mod = nn.Module()

    def by_module(t):
        return t * mod.k
    fns = [by_attr, by_dict, by_list, by_cell, by_module]
    compiled = [torch.compile(f) for f in fns]
    for s in (1, 1.0, True, 1):
        cfg.s = d["s"] = lst[0] = mod.k = s
        for f, c in zip(fns, compiled):
            for t in (x, b):
                _same(f(t), c(t))
        part = torch.compile(functools.partial(by_arg, k=s))
        for t in (x, b):
            _same(by_arg(t, s), part(t))
    cp = torch.compile(lambda t, f: f(t))
    for s in (1, 1.0, True):
        f = functools.partial(by_arg, k=s)
        _same(by_arg(b, s), cp(b, f))


class _K:
    S = 1


def _by_class(t):
    return t * _K.S


def _by_default(t, k=1):
    return t * k


def _by_arg_attr(t, o):
    return t * o.k


def test_a_default_class_attribute_or_argument_attribute_changing_its_type(device):
    """As above for the step's own default argument (``__defaults__`` changed), a class attribute it reads
    (``_K.S``) and an attribute of an object passed as an argument: 1 -> 1.0 -> True gives int64, float32 and bool
    (for a bool tensor) eagerly; the replay kept the first capture's int64."""
    x = torch.arange(4, device=device)
    b = torch.tensor([True, False, True], device=device)
    cc, cd, co = torch.compile(_by_class), torch.compile(_by_default), torch.compile(_by_arg_attr)
    o = _Cfg()
    try:
        for s in (1, 1.0, True, 1):
            _K.S = o.k = s
            _by_default.__defaults__ = (s,)
            for t in (x, b):
                _same(_by_class(t), cc(t))
                _same(_by_default(t), cd(t))
                _same(_by_arg_attr(t, o), co(t, o))
    finally:
        _K.S = 1
        _by_default.__defaults__ = (1,)


def _int_reductions(x, dt):
    return (x.sum(dtype=dt), x.sum(1, dtype=dt), x.cumsum(1, dtype=dt), x.prod(1, dtype=dt),
            x.cumprod(1, dtype=dt))


def test_integer_sums_and_products_in_a_small_integer_dtype_wrap(device):
    """``sum``/``prod``/``cumsum``/``cumprod`` with ``dtype=torch.int8`` (uint8, int16, int32) wrap in that dtype
    in PyTorch (100 + 100 + 27 -> -29 in int8).  On cpu numpy's add/multiply reduce and scan an int8..int32 array
    in int64: the result, eager and compiled, was an int8 tensor holding 228 (and int32 products past 2**31)."""
    x = torch.tensor([[100, 100, 27], [-100, 50, 90]], dtype=torch.int8, device=device)
    want = {  # PyTorch 2.13's values
        torch.int8: (33, [-87, 120], [[44, 88, -87], [-44, 106, 120]], [-112, 16], [[44, -112, -112], [-44, 56, 16]]),
        torch.uint8: (33, [169, 120], [[44, 88, 169], [212, 106, 120]], [144, 16], [[44, 144, 144], [212, 56, 16]]),
        torch.int16: (801, [681, 120], [[300, 600, 681], [-300, -150, 120]], [15504, -25840],
                      [[300, 24464, 15504], [-300, 20536, -25840]]),
        torch.int32: (801, [681, 120], [[300, 600, 681], [-300, -150, 120]], [7290000, -12150000],
                      [[300, 90000, 7290000], [-300, -45000, -12150000]])}
    f = torch.compile(_int_reductions)
    for dt, w in want.items():
        xd = x.to(dt) * 3
        for _ in range(2):
            for e, c, v in zip(_int_reductions(xd, dt), f(xd, dt), w):
                assert e.dtype == c.dtype == dt
                assert e.tolist() == c.tolist() == v
    big = torch.ones(2, 600, dtype=torch.int8, device=device)  # (a long row, and the transposed short-row path)
    rows = torch.full((600, 2), 100, dtype=torch.int8, device=device)
    assert big.sum(dtype=torch.int8).tolist() == -80 and rows.sum(1, dtype=torch.int8).tolist() == [-56] * 600


def _bf16_scalar_where(x):
    return torch.where(x > 2, 0.0, x) + 0.001, torch.logsumexp(x[:2], 0), torch.nan_to_num(x) + 0.001


def test_bfloat16_where_of_a_python_number_stays_bfloat16(device):
    """``torch.where(c, 0.0, x)`` of a bfloat16 ``x`` is bfloat16 in PyTorch, and so are ``logsumexp`` and
    ``nan_to_num`` (built on it): 1.0 + 0.001 rounds back to 1.0.  On cpu numpy's ``where`` with a Python number
    before an ml_dtypes bfloat16 array returns float32: a "bfloat16" tensor held float32 values (1.001, and
    logsumexp([1, 3]) = 3.1269 where PyTorch gives 3.125), eager and compiled."""
    x = torch.tensor([1.0, 3.0, float("nan")], dtype=torch.bfloat16, device=device)
    want = ([1.0, 0.00099945068359375, float("nan")], 3.125, [1.0, 3.0, 0.00099945068359375])  # PyTorch 2.13
    f = torch.compile(_bf16_scalar_where)
    for _ in range(2):
        for e, c, w in zip(_bf16_scalar_where(x), f(x), want):
            assert e.dtype == c.dtype == torch.bfloat16
            assert str(e.float().tolist()) == str(c.float().tolist()) == str(w)


def test_nll_loss_of_an_integer_input_raises_as_pytorch(device):
    """``F.nll_loss`` of an int64 (int32, bool) input raises PyTorch's ``NotImplementedError: "nll_loss_out_frame"
    not implemented for 'Long'`` (``nll_loss2d_forward_out_frame`` from 3 dims on); eager and compiled returned an
    integer "loss" (2 here)."""
    x = torch.tensor([[3, -2, 0], [1, 5, -7]], device=device)
    t = torch.tensor([0, 2], device=device)
    f = torch.compile(lambda a, b: F.nll_loss(a, b))
    for fn in (F.nll_loss, f, f):
        with pytest.raises(NotImplementedError, match="\"nll_loss_out_frame\" not implemented for 'Long'"):
            fn(x, t)
    with pytest.raises(NotImplementedError, match="\"nll_loss2d_forward_out_frame\" not implemented for 'Bool'"):
        F.nll_loss(torch.zeros(1, 3, 2, dtype=torch.bool, device=device), torch.zeros(1, 2, dtype=torch.long,
                                                                                        device=device))
    assert F.nll_loss(x.half(), t).tolist() == 2.0


def _np_left(x, s):
    return s * x, s - x, s / x, x == s, s ** x


def test_a_numpy_number_before_a_tensor_gives_a_tensor(device):
    """``np.float32(0.5) * t``, ``np.int64(2) - t``, ``np.float64(3) / t``, ``np.float32(1) == t``: PyTorch's
    operators run (numpy defers to ``Tensor.__array_priority__``) and give tensors of PyTorch's promotion (the
    numpy number as a Python number: float32 here; ``3 / t`` as ``reciprocal(t) * 3``).  numpy's own operators
    ran instead: an ndarray (float64 for np.int64(2) - t), eager and compiled (a host read)."""
    x = torch.tensor([7.0, 2.0, -3.0], device=device)
    f = torch.compile(_np_left)
    for s in (np.float32(0.5), np.int64(2), np.float64(3.0), np.float32(0.5)):
        want = _np_left(x, float(s) if isinstance(s, np.floating) else int(s))
        for got in (_np_left(x, s), f(x, s)):
            for g, w in zip(got, want):
                assert isinstance(g, torch.Tensor)
                _same(w, g)
    assert (np.float64(3.0) / torch.tensor([7.0], device=device)).tolist() == [0.4285714626312256]  # (PyTorch's)
    a = np.arange(3.0)
    assert (torch.arange(3.0, device=device) + a).dtype == torch.float64


_FILL = {"v": 0.0}


def _nan_fill(x, v):
    return torch.nan_to_num(x, nan=v) + 1, x.masked_fill(x > 2, _FILL["v"]), torch.signbit(torch.full_like(x, v))


def test_a_nan_argument_made_at_each_call_replays(device):
    """``f(x, float("nan"))`` and a config entry set to ``float("nan")`` at each call: a fresh NaN equals no other
    NaN, so every call missed the guards and captured again until the recompile limit ran it eagerly with a warning;
    NaN is one key now (and -NaN another: ``signbit`` of a ``full_like`` differs)."""
    x = torch.tensor([1.0, float("nan"), 3.0], device=device)
    f = torch.compile(_nan_fill)
    for i in range(6):
        v = float("nan") if i < 4 else -float("nan")
        _FILL["v"] = float("nan")
        for e, c in zip(_nan_fill(x, v), f(x, v)):
            assert e.dtype == c.dtype and str(e.tolist()) == str(c.tolist())
    assert f.replays == 4


@pytest.mark.parametrize("call, err, msg", [
    (lambda i: torch.softmax(i.float(), 1, dtype=torch.int32), NotImplementedError,
     "\"softmax_lastdim_kernel_impl\" not implemented for 'Int'"),
    (lambda i: torch.softmax(i, 0), NotImplementedError, "\"softmax_kernel_impl\" not implemented for 'Long'"),
    (lambda i: F.log_softmax(i.float(), 1, dtype=torch.int64), NotImplementedError,
     "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    (lambda i: F.layer_norm(i, (2,)), NotImplementedError, "\"LayerNormKernelImpl\" not implemented for 'Long'"),
    (lambda i: torch.round(i, decimals=1), NotImplementedError, "\"round_cpu\" not implemented for 'Long'"),
    (lambda i: torch.linalg.vector_norm(i, dtype=torch.float32), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda i: torch.linalg.vector_norm(i.float(), dtype=torch.int32), RuntimeError,
     "linalg.vector_norm: dtype should be floating point or complex, but got Int"),
    (lambda i: torch.linalg.vector_norm(i, -1, dtype=torch.float32), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda i: torch.nanmean(i.float(), dtype=torch.int32), RuntimeError,
     "nanmean\\(\\): could not infer output dtype. Optional dtype must be either a floating point or complex "
     "dtype. Got: Int"),
    (lambda i: torch.frac(i), NotImplementedError, "\"frac_cpu\" not implemented for 'Long'"),
    (lambda i: torch.logcumsumexp(i, 0), NotImplementedError, "\"logcumsumexp_out_cpu\" not implemented for 'Long'"),
    (lambda i: F.max_pool2d(i[None, None] > 0, 1), NotImplementedError, "\"max_pool2d\" not implemented for 'Bool'"),
    (lambda i: torch.tril_indices(3, 3, dtype=torch.float16), NotImplementedError,
     "\"tril_indices\" not implemented for 'Half'"),
    (lambda i: torch._standard_gamma(i), NotImplementedError, "\"gamma_cpu\" not implemented for 'Long'"),
])
def test_integer_inputs_of_float_only_ops_raise_as_pytorch(device, call, err, msg):
    """PyTorch's errors for an integer input or ``dtype=`` of a float-only op (its ``NotImplementedError`` for a
    kernel "not implemented for 'Long'").  Before: ``softmax(dtype=torch.int32)`` leaked numpy's UFuncTypeError,
    ``vector_norm(int, dtype=float)``, ``nanmean(dtype=int)`` and ``round(int, decimals=1)`` returned float
    tensors, ``layer_norm`` of an int raised mean()'s error, and the others raised RuntimeError; a compiled call
    raises the same."""
    i = torch.tensor([[1, 2], [3, 4]], device=device)
    with pytest.raises(err, match=msg):
        call(i)
    with pytest.raises(err, match=msg):
        torch.compile(call)(i)


_ONE = (1.0,)
_ENTRIES: dict = {"t": (1.0,)}


def _by_global_tuple(x):
    return x * _ONE[0]


def _by_entry_tuple(x):
    return x * _ENTRIES["t"][0]


def test_a_tuple_of_numbers_rebuilt_at_each_call(device):
    """A global tuple (and a dict entry's tuple) of numbers rebuilt at each call, ``_ONE = (float(i),)``: the guards
    keyed a tuple by its id alone (immutable: "its identity says it"), and the new tuple, made where a freed old one
    was, matched: the replay reused the number of that capture (0.0 for 2.0, 1.0 for 3.0...)."""
    global _ONE
    x = torch.ones(2, device=device)
    bad = []
    for fn in (_by_global_tuple, _by_entry_tuple):
        f = torch.compile(fn, recompile_limit=100)
        try:
            for i in range(20):
                _ONE = tuple([float(i)])
                _ENTRIES["t"] = tuple([float(i)])
                e = fn(x)
                c = f(x)
                if e.tolist() != c.tolist():
                    bad.append((fn.__name__, i, c.tolist()))
        finally:
            _ONE = (1.0,)
    assert not bad


_VALUE = np.float64(0.0)


def _by_value_object(x):
    return x * float(_VALUE) if not isinstance(_VALUE, (range, frozenset)) else x * len(_VALUE) + sum(_VALUE)


@pytest.mark.parametrize("make", [np.float64, np.int64, lambda i: fractions.Fraction(i, 3), lambda i: range(i),
                                  lambda i: frozenset(range(i))])
def test_a_numpy_scalar_or_other_value_object_rebuilt_at_each_call(device, make):
    """A global (or a config object's attribute) holding a numpy scalar, a Fraction, a range or a frozenset made
    anew at each call, ``_VALUE = np.float64(i)``: the guards keyed such objects by id alone, and the new one, made
    where a freed one was, matched an old capture: the replay silently reused that capture's number."""
    global _VALUE
    x = torch.ones(2, device=device)
    cfg = _Cfg()

    def by_attr(t):
        v = cfg.v
        return t * float(v) if not isinstance(v, (range, frozenset)) else t * len(v) + sum(v)
    bad = []
    for fn in (_by_value_object, by_attr):
        f = torch.compile(fn, recompile_limit=100)
        try:
            for i in range(24):
                _VALUE = make(i % 7)
                cfg.v = make(i % 7)
                e = fn(x)
                c = f(x)
                if e.tolist() != c.tolist():
                    bad.append((fn.__name__, i, e.tolist(), c.tolist()))
        finally:
            _VALUE = np.float64(0.0)
    assert not bad


_ACT = functools.partial(operator.mul, 0.0)


def _by_global_callable(x):
    return _ACT(x)


def _lambda_of(k):
    return lambda t: t * k


@pytest.mark.parametrize("make", [lambda i: functools.partial(operator.mul, float(i)), _lambda_of])
def test_a_global_partial_or_lambda_rebuilt_at_each_call(device, make):
    """A global ``functools.partial(operator.mul, k)`` (or ``lambda t: t * k``) rebuilt at each call with another
    ``k``: the guards keyed the function by id alone, and the new one, made where a freed one was, matched an old
    capture: the replay silently multiplied by that capture's ``k``."""
    global _ACT
    x = torch.ones(2, device=device)
    f = torch.compile(_by_global_callable, recompile_limit=100)
    bad = []
    try:
        for i in range(30):
            _ACT = make(i % 5)
            e = _by_global_callable(x)
            c = f(x)
            if e.tolist() != c.tolist():
                bad.append((i, e.tolist(), c.tolist()))
    finally:
        _ACT = functools.partial(operator.mul, 0.0)
    assert not bad


def _np_bounds(x, end, dim):
    return torch.arange(end, device=x.device), x.sum(dim), x.softmax(dim)


def test_numpy_numbers_as_arange_bounds_and_dims(device):
    """``torch.arange(np.float32(1.5))`` is ``[0., 1.]`` (float32) in PyTorch, and ``x.sum(np.int64(0))`` reduces
    over dim 0.  The arange inferred int64 (``[0]``): an np.float32 is no Python float; the sum raised "'numpy.int64'
    object is not iterable"; eager and compiled."""
    x = torch.arange(12.0, device=device).reshape(3, 4)
    f = torch.compile(_np_bounds)
    for end, dim in ((np.float32(1.5), np.int64(0)), (np.int64(3), np.int32(1)), (np.float32(1.5), np.int64(0))):
        want = (torch.arange(float(end), device=device) if isinstance(end, np.floating) else
                torch.arange(int(end), device=device), x.sum(int(dim)), x.softmax(int(dim)))
        for got in (_np_bounds(x, end, dim), f(x, end, dim)):
            for g, w in zip(got, want):
                _same(w, g)


def _np_ints(x, k):
    return torch.full((2,), k, device=x.device), x.chunk(k), x.roll(k, 0), x.repeat_interleave(k, dim=0)


def test_numpy_integers_as_fill_values_chunks_shifts_and_repeats(device):
    """``torch.full((2,), np.int64(3))`` is int64 in PyTorch (a numpy integer is an int; it was float32), and
    ``chunk``, ``roll`` and ``repeat_interleave`` take a numpy integer as their count (they raised TypeError),
    eager and compiled."""
    x = torch.arange(6.0, device=device).reshape(3, 2)
    f = torch.compile(_np_ints)
    for k in (np.int64(2), np.int32(1), np.int64(2)):
        want = _np_ints(x, int(k))
        assert want[0].dtype == torch.int64
        for got in (_np_ints(x, k), f(x, k)):
            _same(want[0], got[0])
            assert [t.tolist() for t in got[1]] == [t.tolist() for t in want[1]]
            _same(want[2], got[2])
            _same(want[3], got[3])
    assert torch.full((2,), np.bool_(True)).dtype == torch.float32  # (PyTorch's: a numpy bool is no bool there)


def test_adam_with_a_numpy_beta_in_a_compiled_step(device):
    """``Adam(betas=(np.float32(0.9), 0.999))`` (numpy numbers from a config file): eager's update computes the
    bias correction ``1 - beta1 ** step`` in numpy float32.  The optimizer replay's recording ran that step with a
    symbolic step count, where numpy's ``beta1 ** step`` is float64: the bias of a Linear ended 1 ulp away from
    eager's (the recording then declined, too late for that step).  Now a numpy hyper-parameter keeps the eager
    step from the start."""
    import copy
    torch.manual_seed(0)
    m = nn.Linear(4, 3).to(device)
    m2 = copy.deepcopy(m)
    kw = dict(lr=0.01, betas=(np.float32(0.9), 0.999))
    o1, o2 = torch.optim.Adam(m.parameters(), **kw), torch.optim.Adam(m2.parameters(), **kw)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    cs = torch.compile(step)
    for _ in range(4):
        x, y = torch.randn(5, 4, device=device), torch.randint(0, 3, (5,), device=device)
        step(m, o1, x, y)
        cs(m2, o2, x, y)
    assert all(bool(torch.equal(p, q)) for p, q in zip(m.parameters(), m2.parameters()))
