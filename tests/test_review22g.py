"""Review 22g (compile): each way of a branch on a float argument replays (dynways.py), and a compiled module's float
arguments (module.py's ModuleCapture): compiled calls compared with eager coretorch, bitwise on cpu, on every
installed device."""
from __future__ import annotations

import math
import pickle
import types

import numpy as np
import pytest

import coretorch as torch


class _BreaksOneWay(torch.nn.Module):
    """A forward whose ``t > 0.5`` way reads a data-dependent shape (a graph break in that way only)."""

    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 4)

    def forward(self, x, t):
        y = self.l(x) * t
        if t > 0.5:
            y = y + torch.nonzero(y > 0).shape[0]
        return y


def test_graph_break_in_a_way_of_a_float_argument(device):
    """Eager: ``y = l(x) * t`` in float32, the gradient ``g * t`` in float32. Before, the Sym capture of the ``t >
    0.5`` way broke (``nonzero``) and returned its call's eager result, whose autograd node held the Sym ``t``: the
    user's backward ran ``mul(g, Sym)`` outside the capture, and numpy took the float subclass as a float64 operand
    (one rounding in float64, not float32's), so the input's gradient differed from eager's in the last bits
    (two threads calling the step hit it too: a capture broken by the other thread's kernels)."""
    torch.manual_seed(0)
    m = _BreaksOneWay().to(device)
    cm = torch.compile(m)
    x = torch.randn(3, 4).to(device)
    for t in (0.1, 0.2, 0.3, 0.7, 0.8, 0.2550690257394217, 0.9, 0.6123):
        got = []
        for mod in (cm, m):
            xx = x.clone().requires_grad_()
            out = mod(xx, t)
            out.sum().backward()
            got.append((out.detach().cpu().numpy(), xx.grad.cpu().numpy()))
        (oc, gc), (oe, ge) = got
        np.testing.assert_array_equal(oc, oe)
        np.testing.assert_array_equal(gc, ge)
    assert cm.__dict__["_capture"].dyn


def test_a_sym_outside_its_recording_is_its_plain_number():
    """The op layer takes a number-like object's ``.item()``: a Sym outside the recording that made it (left in an
    autograd node or in user state by its capture) is its plain number, so ``float32 * it`` computes in float32 as
    eager's Python float (before: float64, then rounded)."""
    from coretorch._compile.symbolic import Sym

    v = 0.2550690257394217
    x = torch.tensor([0.1, 0.7, -1.3, 2.9])
    s = Sym(v, "A[1]")
    assert type(s.item()) is float
    for op in (lambda t: x * t, lambda t: t / x, lambda t: x - t, lambda t: x.abs() ** t, lambda t: x // t):
        assert op(s).numpy().tobytes() == op(v).numpy().tobytes()


class _Hparams:
    def __init__(self, t):
        self.t = t


def _factor(cfg):
    return 2.0 if math.log(cfg.t) > 0 else 3.0


@pytest.mark.parametrize("make", [types.SimpleNamespace, _Hparams], ids=["namespace", "object"])
def test_float_argument_read_by_c_code_through_an_object(device, make):
    """``math.log(cfg.t)`` in a helper, ``cfg`` holding the float argument: eager gives ``x * 2.0`` for ``t > 1``.
    The helper's frame held no Sym as a local, so the watch (symwatch.py) did not see ``math.log`` read the number:
    the Sym capture at 0.7 recorded the ``3.0`` way with no check, matched the captures at 0.5 and 0.6, and the
    replay at 2.0 and 3.0 returned ``x * 3.0``. A Sym reachable from the frame's objects is seen now (the function
    stays specialised to its values)."""
    def f(x, t):
        return x * _factor(make(t=t) if make is types.SimpleNamespace else make(t))

    s = torch.compile(f)
    x = torch.ones(2).to(device)
    for v in (0.5, 0.6, 0.7, 2.0, 3.0, 0.8):
        assert s(x, v).tolist() == f(x, v).tolist()


class _HooksItsInput(torch.nn.Module):
    """A forward scaling its input's gradient by its float argument with a hook it registers (gradient reversal)."""

    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(4, 4)

    def forward(self, x, t):
        if x.requires_grad:
            x.register_hook(lambda g: g * -t)
        return torch.tanh(self.l(x))


def test_forward_registering_a_hook_on_its_input(device):
    """Eager: each call registers the hook on that call's ``x``, so ``x.grad`` is ``-t`` times the gradient. The
    replay registered none: from the third call (the first replay) ``x.grad`` lacked the hook's ``* -t``. Such a
    forward is a graph break now (it runs eagerly)."""
    torch.manual_seed(0)
    m = _HooksItsInput().to(device)
    cm = torch.compile(m)
    x0 = torch.randn(3, 4).to(device)
    for t in (0.5, 0.5, 0.5, 0.7, 0.9, 1.5):
        got = []
        for mod in (cm, m):
            x = x0.clone().requires_grad_()
            out = mod(x, t)
            out.sum().backward()
            got.append((out.detach().cpu().numpy(), x.grad.cpu().numpy()))
        np.testing.assert_array_equal(got[0][0], got[1][0])
        np.testing.assert_array_equal(got[0][1], got[1][1])


def test_float_argument_through_a_pickle_round_trip(device):
    """``pickle.loads(pickle.dumps(t))`` is ``t``'s number: eager gives ``x * 2.0`` for ``t > 0.75``. The Sym pickled
    as a plain float (its ``__reduce__``) without telling its capture, so the comparison on the copy was not
    recorded: the Sym capture at 0.7 matched the captures at 0.5 and 0.6 and the replays at 0.8 and 2.0 returned
    ``x * 3.0``. Pickling a Sym in its capture now keeps the function specialised."""
    def f(x, t):
        u = pickle.loads(pickle.dumps(t))
        return x * (2.0 if u > 0.75 else 3.0)

    s = torch.compile(f)
    x = torch.ones(2).to(device)
    for v in (0.5, 0.6, 0.7, 0.8, 2.0, 0.65):
        assert s(x, v).tolist() == f(x, v).tolist()


@pytest.mark.filterwarnings("ignore:.*recompile_limit")
@pytest.mark.parametrize("form", ["pow", "rpow"])
def test_power_with_a_float_argument(device, form):
    """``x ** t``: eager (as PyTorch's scalar-exponent kernel) takes sqrt / rsqrt at ``t = +-0.5`` and multiplies at
    3 and -2. The op tested the exponent's class (``float``), so the Sym capture and its replays took numpy's pow at
    those values (the last bit differs; ``(-inf) ** 0.5`` inf where eager gives nan). ``t ** x``: eager's gradient
    multiplies by ``log(t)`` in double (PyTorch's); the Sym base went the tensor ** tensor way, its log in float32.
    A float subclass is a Python float to the op now, its comparisons checked by the replay."""
    torch.manual_seed(0)
    w = torch.randn(4, 5).to(device)

    def run(compiled):
        wr = w.clone().requires_grad_()

        def step(x, t):
            out = (x @ wr) ** t if form == "pow" else t ** (x @ wr)
            out.nan_to_num().sum().backward()
            return out.detach()

        s = torch.compile(step) if compiled else step
        g = torch.Generator().manual_seed(1)
        res = []
        for t in (0.3, 0.7, 0.5, 3.0, -2.0, -0.5, 0.9, 0.5, 2.0, 3.0, 1.5):
            x = torch.randn(3, 4, generator=g).to(device)
            x[0, 0] = -math.inf
            res.append((s(x, t).cpu().numpy(), wr.grad.cpu().numpy()))
            wr.grad = None
        return res

    for (oe, ge), (oc, gc) in zip(run(False), run(True)):
        np.testing.assert_array_equal(oc, oe)
        np.testing.assert_array_equal(gc, ge)


def test_half_floor_divided_by_a_float_argument(device):
    """``h // t`` of a float16 tensor: eager (as PyTorch's kernel) takes the Python number in float32. The op tested
    the divisor's class, so the Sym capture and its replays divided by ``t`` rounded to half first (at -0.4: one
    quotient off by one)."""
    x = torch.linspace(-2, 3, 8).half().to(device)

    def f(h, t):
        return h // t

    s = torch.compile(f)
    for t in (0.3, 0.7, 1.3, 2.5, -0.4, 0.9, 0.001):
        e, c = f(x, t), s(x, t)
        assert c.dtype == e.dtype and c.cpu().numpy().tobytes() == e.cpu().numpy().tobytes()


def test_reset_forgets_a_compiled_modules_float_captures(device):
    """``torch._dynamo.reset()`` forgets every capture: the next call of a compiled module traces its forward again
    (its Python side effects run, as at any capture). The module's Sym captures of each way (``alts``) were kept, so
    after a reset its calls with new float values still replayed them, and a module kept specialised (``math.exp``)
    stayed so."""
    calls = []

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(2, 2)

        def forward(self, x, t):
            calls.append(1)
            return self.l(x) * t if t < 1 else self.l(x) / t

    m = M().to(device)
    cm = torch.compile(m)
    x = torch.ones(3, 2).to(device)
    for t in (0.1, 0.2, 0.3, 0.4):
        cm(x, t)
    assert len(calls) == 2 and cm.__dict__["_capture"].dyn
    torch._dynamo.reset()
    assert torch.equal(cm(x, 0.5), m(x, 0.5))
    assert len(calls) == 4  # (the compiled call captured again, then the eager one)


def test_fractional_power_of_a_float_argument_turning_complex_at_a_replay(device):
    """``x * (t ** 1.5)``: at ``t < 0`` Python's power is complex and eager's ``x * complex`` raises TypeError. The
    Sym capture (at positive values) recorded ``s = (A[1] ** 1.5)``; the replay at -0.25 computed the complex number
    and handed it to the kernel: a float32 tensor holding complex values. The replay now checks that the power is a
    float, else the call runs eagerly."""
    def g(x, t):
        return x * (t ** 1.5)

    s = torch.compile(g)
    x = torch.ones(2).to(device)
    for v in (0.25, 0.36, 0.49, -0.25, 0.64):
        try:
            expected = g(x, v).tolist()
        except TypeError:
            with pytest.raises(TypeError):
                s(x, v)
        else:
            assert s(x, v).tolist() == expected
    assert s._dyn and s.replays == 2


@pytest.mark.parametrize("form", ["sym_left", "numpy_left", "ufunc", "array"])
def test_numpy_arithmetic_with_a_float_argument(device, form):
    """numpy takes a Python float as a weak scalar (``0.6 * np.float32(0.75)`` is a float32) but a float subclass as
    a float64: during the Sym capture (the second value) ``t * np.float32(0.75)``, ``np.float32(0.75) * t``,
    ``np.multiply(w, t)`` and ``w * t`` of a float32 array computed in float64, so that call's result differed from
    eager's in the last bits. numpy's arithmetic with a Sym is now numpy's with its number (and keeps the function
    specialised: the number left the recorded arithmetic)."""
    w = np.linspace(0.1, 0.9, 4, dtype=np.float32)
    scale = {"sym_left": lambda t: t * np.float32(0.75), "numpy_left": lambda t: np.float32(0.75) * t,
             "ufunc": lambda t: np.multiply(w, t), "array": lambda t: w * t}[form]

    def f(x, t):
        return x * torch.as_tensor(np.asarray(scale(t), dtype=np.float32)).to(x.device)

    s = torch.compile(f)
    x = torch.linspace(-1, 1, 4).to(device)
    for v in (0.5, 0.6, 0.7, 0.8):
        assert s(x, v).cpu().numpy().tobytes() == f(x, v).cpu().numpy().tobytes()


class _Attention(torch.nn.Module):
    def __init__(self, d=8, h=2):
        super().__init__()
        self.qkv, self.o, self.h = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d), h

    def forward(self, x, temperature):
        b, n, c = x.shape
        q, k, v = (z.view(b, n, self.h, c // self.h).transpose(1, 2) for z in self.qkv(x).split(c, 2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1))) / temperature
        return self.o((att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c))


def test_math_function_of_a_size_beside_a_float_argument_replays(device):
    """``1 / math.sqrt(head_dim)`` in a forward taking a temperature: the watch refused the Sym capture for any
    ``math`` call from a frame holding a Sym (it cannot see a C call's arguments), so every temperature was a
    capture of its own until recompile_limit, then eager. ``math``'s functions called through the module are checked
    by their arguments now: the forward replays at any temperature, bitwise eager's; ``math.sqrt(t)`` still
    refuses (test_module_float_taken_out_of_arithmetic_stays_specialised)."""
    torch.manual_seed(0)
    m = _Attention().to(device)
    cm = torch.compile(m)
    x = torch.randn(2, 5, 8).to(device)
    for t in (0.5, 0.7, 0.9, 1.1, 1.3, 0.6, 2.0):
        assert torch.equal(cm(x, t), m(x, t))
    cap = cm.__dict__["_capture"]
    assert cap.dyn and cap.replays == 5
