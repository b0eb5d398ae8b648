"""Random sampling: Generator objects, the generator= keyword, multinomial, bernoulli, poisson, normal's
overloads, randperm, the *_like samplers, the in-place distributions (exponential_, geometric_, ...), RNG state.

A ``Generator`` holds one device's generator state, an object its backend's ``rng_*`` kernels advance (cpu: a numpy
PCG64 stream; opencl: a Philox (seed, offset) pair).  Each device has a default generator (the state its backend's
``rand``/``randn``/... kernels use too), which ``manual_seed`` reseeds and ``get_rng_state`` reads.  A backend
without the ``rng_*`` kernels samples on the cpu backend with a host-side state and uploads the result.
"""
from __future__ import annotations

import math
import os

import numpy as np

from . import _memfmt
from .. import dtypes as _dt
from .._backend import KernelTable, backends, get_table
from ..autograd.grad_mode import no_grad
from ..device import device as Device
from ..tensor import Tensor, _make
from . import pointwise as _P, reduction as _R
from ._random_args import check_randperm, check_uniform_bounds, continuous_only, cpp_name, int_arg, warn_float_range
from ._util import broadcast_shapes, edge, shape_arg
from .creation import _finish, _table, _to_out, get_default_device, set_default_device
from .inplace import check_inplace, rebase
from ._random_nodes import (BernoulliBackward0, NormalBackward1, NormalBackward2, NormalBackward3,  # noqa: F401
                            PoissonBackward0, _ZeroGrad, _attach, _inplace_node, _zeros)

__all__: list[str] = [
    "Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "rand", "randn",
    "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like", "multinomial", "bernoulli",
    "poisson", "set_default_device", "get_default_device", "default_generator",
]

DEFAULT_SEED = 67280421310721  # PyTorch's default seed
_U64 = (1 << 64) - 1
_CPU = Device("cpu")


def _seed_value(seed) -> int:
    """PyTorch's seed conversion: any int in [-2**63, 2**64) (negative ones wrap to uint64)."""
    if isinstance(seed, Tensor):
        seed = seed.item()
    seed = int(seed)
    if not -(1 << 63) <= seed <= _U64:
        raise ValueError("Overflow when unpacking long long")  # (PyTorch 2.13: a ValueError)
    return seed & _U64


class Generator:
    """A random number generator of one device: ``Generator(device='cpu')``, seeded with PyTorch's default
    seed until ``manual_seed`` or ``seed``; pass it as ``generator=`` to any sampling function."""

    def __init__(self, device="cpu"):
        table = _table(device if device is not None else "cpu")
        self._bind(table, None)

    def _bind(self, table, state) -> None:
        self.device = table.device
        self._native = table.has("rng_new")
        if self._native:
            self._kt = table
        else:  # a backend without the rng kernels: a host-side state, samples uploaded
            self._kt = get_table(_CPU)
        self._state = state if state is not None else self._kt.rng_new(DEFAULT_SEED)

    def manual_seed(self, seed) -> "Generator":
        """Seed this generator and return it.

        Args:
            seed (int): the new seed; the same seed gives the same random numbers.
        """
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):  # torch.manual_seed takes int(seed)
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        self._kt.rng_seed(self._state, _seed_value(seed))
        return self

    def seed(self) -> int:
        """Seed with a non-deterministic random number and return it."""
        s = _host_seed()
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was created or last seeded with."""
        return int(self._kt.rng_initial_seed(self._state))

    def get_state(self) -> Tensor:
        """The state as a cpu uint8 tensor (layout: the backend's; see its sampling module)."""
        a = self._kt.rng_get_state(self._state)  # a new array (the kernel's: a compiled step's replay reads the
        # state of its call through it, where a copy made here was a constant of the capture)
        if not (isinstance(a, np.ndarray) and a.dtype == np.uint8 and a.flags.owndata):
            a = np.array(a, np.uint8)
        cpu = get_table(_CPU)
        return _make(cpu.from_numpy(a), _dt.uint8, cpu)

    def set_state(self, new_state: Tensor) -> "Generator":
        """Restore the state returned by ``get_state()`` and return the generator.

        Args:
            new_state (Tensor): a uint8 tensor from ``Generator.get_state()``.
        """
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not _dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        s = new_state  # (a cpu state as it is, no host read: a compiled step's replay passes its call's state)
        self._kt.rng_set_state(self._state, s._data if s._be is get_table(_CPU) and s.is_contiguous() else s._host())
        return self

    def clone_state(self) -> "Generator":
        """A new generator of the same device in the same state."""
        return Generator(self.device).set_state(self.get_state())

    def __reduce__(self):  # as PyTorch's (a load under weights_only needs only safe_globals([torch.Generator]))
        return Generator, (str(self.device),), (self.initial_seed(), None, self.get_state())

    def __setstate__(self, state) -> None:  # (initial_seed, offset, state tensor)
        self.set_state(state[2] if isinstance(state, tuple) and len(state) == 3 else state)

    def __repr__(self) -> str:
        return f"<coretorch.Generator device='{self.device}' at {hex(id(self))}>"


def _rebuild_generator(device: str, state: bytes) -> Generator:  # (earlier pickles and files name it)
    g = Generator(device)
    g._kt.rng_set_state(g._state, np.frombuffer(state, np.uint8).copy())
    return g


_defaults: dict = {}  # canonical device -> its default Generator


class _CPUDefault(Generator):
    """``torch.default_generator``: made at import, bound to the cpu backend's default state on first use (the
    backends register after the ops are imported)."""

    def __getattr__(self, name: str):  # reached only while unbound: _kt, _state and device are then missing
        if name in ("_kt", "_state", "device"):
            default_for(None)
            return object.__getattribute__(self, name)
        raise AttributeError(f"'Generator' object has no attribute '{name}'")


default_generator = Generator.__new__(_CPUDefault)


def default_for(device=None) -> Generator:
    """The default generator of ``device`` (cpu when None): what ``manual_seed`` seeds."""
    table = device if isinstance(device, KernelTable) else get_table(
        _CPU if device is None else device if isinstance(device, Device) else Device(device))
    g = _defaults.get(table.device)
    if g is None:
        g = default_generator if table.device == _CPU else Generator.__new__(Generator)
        g._bind(table, table.rng_default() if table.has("rng_default") else None)
        _defaults[table.device] = g
    elif g._native and g._kt is not table:  # the kernel table was rebuilt (a plugin was registered): rebind
        g._bind(table, table.rng_default() if table.has("rng_default") else g._state)
    return g


def defaults_in_use() -> list:
    """The default generators a block's random draws can come from: cpu's and those of every other device in use
    (checkpoint recomputation and vmap's randomness modes set them back)."""
    from .._backend import _tables
    gens = [default_for()] + [default_for(t) for t in list(_tables.values()) if t.device.type != "cpu"]
    gens += [g for d, g in list(_defaults.items()) if d.type != "cpu"]
    out: list = []
    for g in gens:
        if all(g is not h for h in out):
            out.append(g)
    return out


def manual_seed(seed) -> Generator:
    """Seed every device's default generator; returns the cpu one (as PyTorch).  The same seed gives the same
    numbers on a device (coretorch's generators are not PyTorch's: the numbers differ from PyTorch's).

    Args:
        seed (int): the seed.

    Returns:
        Generator: the cpu default generator.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> a = torch.rand(3)
        >>> _ = torch.manual_seed(0)
        >>> torch.equal(a, torch.rand(3))
        True
    """
    s = _seed_value(seed)
    for be in backends().values():
        be.manual_seed(s)
    for g in list(_defaults.values()):  # (a snapshot: another thread's first use of a device adds one meanwhile)
        g.manual_seed(s)
    return default_for()


seed_draws = [0]  # non-deterministic seeds drawn (a compiled step that draws one is a graph break: see _compile)


def _host_seed() -> int:
    seed_draws[0] += 1
    return int.from_bytes(os.urandom(8), "little") >> 1


def seed() -> int:
    """Seed every default generator with a non-deterministic number and return it."""
    s = _host_seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed of the default random generator."""
    return default_for().initial_seed()


def get_rng_state() -> Tensor:
    """The cpu default generator's state (a uint8 tensor)."""
    return default_for().get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from a uint8 tensor returned by ``get_rng_state()``."""
    default_for().set_state(new_state)


# ---------------------------------------------------------------------------------------------
# drawing through a generator
# ---------------------------------------------------------------------------------------------
def _gen(generator, table, op: str) -> Generator:
    if generator is None:
        return default_for(table)
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): argument 'generator' must be torch.Generator, not {type(generator).__name__}")
    if generator.device.type != table.device.type:
        raise RuntimeError(f"Expected a '{table.device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    if generator._native and generator._kt is not table:  # the device's kernel table was rebuilt: same state
        generator._kt = table
    return generator


def _upload(table, g: Generator, arr):
    """An array drawn by ``g``'s kernels as an array of ``table`` (a copy only for a host-side generator)."""
    return arr if g._kt is table else table.from_numpy(g._kt.to_numpy(arr))


def _fill_data(x: Tensor, generator, dist: str, a: float, b: float, op: str) -> None:
    """Overwrite x's elements (in place, any layout) with samples of ``dist`` (see PRIMITIVES rng_fill_)."""
    table = x._be
    g = _gen(generator, table, op)
    if g._kt is table:
        table.rng_fill_(g._state, x._data, dist, a, b)
        return
    if generator is None and dist in ("uniform", "normal") and table.has("uniform_"):
        getattr(table, dist + "_")(x._data, a, b)  # a backend with only the original kernels
        return
    host = g._kt.empty(tuple(x.shape), x.dtype.np)
    g._kt.rng_fill_(g._state, host, dist, a, b)
    table.assign_(x._data, _upload(table, g, host))


def _shape(args, size, op: str) -> tuple:
    if size is not None:
        if args:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        args = (size,)
    shape = shape_arg(args, op)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(shape)}")
    return shape


def _float_dtype(dtype, op: str, kernel: str):
    dtype = _dt.from_python_type(dtype)
    if dtype is not None and not isinstance(dtype, _dt.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be coretorch.dtype, not {type(dtype).__name__}")
    dt = dtype or _dt.default
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._tname[:-6]}'")
    return dt


def _sample(shape, dt, device, generator, dist, a, b, op) -> Tensor:
    table = _table(device)
    t = _make(table.empty(shape, dt.np), dt, table)
    _fill_data(t, generator, dist, a, b, op)
    return t


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad: bool = False,
         pin_memory: bool = False, **kw) -> Tensor:
    """U[0, 1) samples of the given size."""
    return _standard("rand", "uniform", "check_uniform_bounds", size, kw, generator, out, dtype, device,
                     requires_grad)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False, **kw) -> Tensor:
    """N(0, 1) samples of the given size."""
    return _standard("randn", "normal", "normal_kernel_cpu", size, kw, generator, out, dtype, device, requires_grad)


def _standard(op, dist, kernel, size, kw, generator, out, dtype, device, requires_grad) -> Tensor:
    """rand / randn: the standard ``dist`` (uniform on [0, 1) or normal) in a float dtype (``kernel`` names the
    op in PyTorch's error for an integer dtype)."""
    shape = _shape(size, kw.pop("size", None), op)
    _no_more(kw, op)
    dt = _float_dtype(dtype or (out.dtype if out is not None else None), op, kernel)
    r = _sample(shape, dt, device if out is None or device else out.device, generator, dist, 0.0, 1.0, op)
    return _finish(_to_out(r, out, op), requires_grad)


def _no_more(kw: dict, op: str) -> None:
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kw))}'")


def _check_range(low: int, high: int, dt) -> None:
    """PyTorch's check of an integer dtype's range [from, to - 1] (floats hold any range, less exactly)."""
    if dt.is_floating_point:
        warn_float_range(dt, low, high - 1)
        return
    lo, hi = (0, 1) if dt is _dt.bool_ else (int(np.iinfo(dt.np).min), int(np.iinfo(dt.np).max))
    for v, name in ((low, "from"), (high - 1, "to - 1")):
        if not lo <= v <= hi:
            raise RuntimeError(f"{name} is out of bounds for {cpp_name(dt)}")


def _int_data(table, generator, low: int, high: int, shape, dt, op: str):
    _check_range(low, high, dt)
    g = _gen(generator, table, op)
    return _upload(table, g, g._kt.rng_randint(g._state, int(low), int(high), shape, dt.np))


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Integers drawn uniformly from [low, high): randint(high, size) or randint(low, high, size)."""
    if isinstance(high, (tuple, list)) and size is None:  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:
        if size is None:
            raise TypeError("randint() missing required argument 'size'")
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    low, high = int_arg(low, "randint", "low"), int_arg(high, "randint", "high")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dt = _dt.from_python_type(dtype) or (out.dtype if out is not None else _dt.int64)
    table = _table(device if out is None or device else out.device)
    shape = _shape((size,) if not isinstance(size, (tuple, list)) else tuple(size), None, "randint")
    r = _make(_int_data(table, generator, low, high, shape, dt, "randint"), dt, table)
    return _finish(_to_out(r, out, "randint"), requires_grad)


def randperm(n: int, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of 0..n-1."""
    n = int_arg(n, "randperm", "n")
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got{n}")
    dt = _dt.from_python_type(dtype) or (out.dtype if out is not None else _dt.int64)
    check_randperm(n, dt)
    table = _table(device if out is None or device else out.device)
    g = _gen(generator, table, "randperm")
    r = _make(_upload(table, g, g._kt.rng_randperm(g._state, n, dt.np)), dt, table)
    return _finish(_to_out(r, out, "randperm"), requires_grad)


def _like(input, dtype, device, op: str):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return _dt.from_python_type(dtype) or input.dtype, device or input.device


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None, pin_memory: bool = False) -> Tensor:
    """Uniform random numbers in ``[0, 1)`` with the shape (and, unless given, dtype and device) of ``input``."""
    dt, dev = _like(input, dtype, device, "rand_like")
    t = rand(tuple(input.shape), generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)
    return _memfmt.fresh(t, memory_format, input)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None, pin_memory: bool = False) -> Tensor:
    """Standard normal random numbers with the shape (and, unless given, dtype and device) of ``input``."""
    dt, dev = _like(input, dtype, device, "randn_like")
    t = randn(tuple(input.shape), generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)
    return _memfmt.fresh(t, memory_format, input)


def randint_like(input, low=None, high=None, *, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None, pin_memory: bool = False) -> Tensor:
    """randint_like(input, high) or randint_like(input, low, high)."""
    if high is None:
        if low is None:
            raise TypeError("randint_like() missing required argument 'high'")
        low, high = 0, low
    elif low is None:
        low = 0
    low, high = int_arg(low, "randint_like", "low"), int_arg(high, "randint_like", "high")
    dt, dev = _like(input, dtype, device, "randint_like")
    t = randint(low, high, tuple(input.shape), generator=generator, dtype=dt, device=dev,
                requires_grad=requires_grad)
    return _memfmt.fresh(t, memory_format, input)


# ---------------------------------------------------------------------------------------------
# normal, bernoulli, poisson (differentiable in PyTorch with zero gradients: derivatives.yaml)
# ---------------------------------------------------------------------------------------------
def _host_flag(cond: Tensor) -> bool:
    return bool(cond.item())


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """normal(Tensor mean, Tensor std) (broadcast), normal(Tensor mean, float std=1), normal(float mean,
    Tensor std), normal(float mean, float std, size): N(mean, std^2) samples."""
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: normal(float mean, float std) "
                            "needs a size")
        if not std >= 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        dt = _float_dtype(dtype or (out.dtype if out is not None else None), "normal", "normal_kernel_cpu")
        shape = _shape((size,) if not isinstance(size, (tuple, list)) else tuple(size), None, "normal")
        r = _sample(shape, dt, device if out is None or device else out.device, generator, "normal",
                    float(mean), float(std), "normal")
        return _finish(_to_out(r, out, "normal"), requires_grad)
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments: size is only taken with float "
                        "mean and std")
    cls: type[_ZeroGrad]
    if mt and st:  # the result has mean's dtype (PyTorch: empty_like(mean)), or out's
        dt = mean.dtype
        shape, table, cls = broadcast_shapes(tuple(mean.shape), tuple(std.shape), op="normal"), mean._be, \
            NormalBackward3
    else:
        ref = mean if mt else std
        dt, shape, table, cls = ref.dtype, tuple(ref.shape), ref._be, NormalBackward1 if mt else NormalBackward2
    if out is not None:
        dt = out.dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{dt._tname[:-6]}'")
    if st:
        if std.numel() and _host_flag(_R.any(_P.logical_not(_P.ge(std.detach(), 0)))):  # NaN fails too
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    eps = _make(table.empty(shape, dt.np), dt, table)
    _fill_data(eps, generator, "normal", 0.0, 1.0, "normal")
    with no_grad():
        m = mean.detach() if mt else mean
        s = std.detach() if st else std
        r = _P.add(_P.mul(eps, s), m)
        if r.dtype is not dt:
            r = r.to(dt)
    r = _attach(r, cls, (mean, std))
    return _to_out(r, out, "normal") if out is not None else r


def bernoulli(input: Tensor, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples with probabilities ``input`` (or the float ``p``), of input's shape and dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if isinstance(p, Tensor):
        raise TypeError("bernoulli(): argument 'p' must be float, not Tensor (the probabilities are the input)")
    table = input._be
    r = _make(table.empty(tuple(input.shape), input.dtype.np), input.dtype, table)
    with no_grad():
        bernoulli_(r, input if p is None else p, generator=generator)
    r = _attach(r, BernoulliBackward0, (input,))
    return _to_out(r, out, "bernoulli") if out is not None else r


def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson samples with rates ``input`` (same shape and dtype)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"poisson(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{input.dtype._tname[:-6]}'")
    table = input._be
    if input.numel():  # (a device queues the check: opencl's poisson(-1) was a silent NaN)
        with no_grad():
            ok = _P.ge(input.detach(), 0)
        _check_all(ok, "invalid Poisson rate, expected rate to be non-negative")
    g = _gen(generator, table, "poisson")
    rates = input._data if g._kt is table else g._kt.from_numpy(table.to_numpy(input._data))
    r = _make(_upload(table, g, g._kt.rng_poisson(g._state, rates)), input.dtype, table)
    return _attach(r, PoissonBackward0, (input,))


# ---------------------------------------------------------------------------------------------
# multinomial
# ---------------------------------------------------------------------------------------------
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None,
                out=None) -> Tensor:
    """Category indices drawn from each row of ``input`` (1-D or 2-D non-negative weights)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype._tname[:-6]}")
    n = int_arg(num_samples, "multinomial", "num_samples")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    cats = input.shape[-1]
    if not replacement and n > cats:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if cats > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    p = input.detach()
    if p.dtype is _dt.float16:
        p = p.to(_dt.float32)
    p2 = p.reshape(1, cats) if p.ndim == 1 else p
    table = p._be
    if p2.numel():
        _check_probs(p2, replacement and n > 1)
    elif p2.shape[0]:  # rows of no category: no distribution
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    g = _gen(generator, table, "multinomial")
    if p2.shape[0] == 0:
        data = table.empty((0, n), np.int64)
    else:
        probs = p2.contiguous()._data
        if g._kt is not table:
            probs = g._kt.from_numpy(table.to_numpy(probs))
        data = _upload(table, g, g._kt.rng_multinomial(g._state, probs, n, bool(replacement)))
    r = _make(data, _dt.int64, table)
    if input.ndim == 1:
        r = r.reshape(n)
    return _to_out(r, out, "multinomial") if out is not None else r


def _check_probs(p: Tensor, per_entry: bool) -> None:
    """PyTorch's checks of a probability table, with one host read: negative, inf/nan entries, zero rows."""
    neg = _R.any(_P.lt(p, 0))
    nonfinite = _R.any(_P.logical_or(_P.ne(p, p), _P.eq(_P.abs(p), math.inf)))
    zero = _R.any(_P.le(_R.sum(p, -1), 0))
    code = int(_P.add(_P.add(neg.to(_dt.int64), _P.mul(nonfinite.to(_dt.int64), 2)),
                      _P.mul(zero.to(_dt.int64), 4)).item())
    if per_entry and code & 1:
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
    if per_entry and code & 2:
        raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    if code & 3:
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if code & 4:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


# ---------------------------------------------------------------------------------------------
# in-place distributions (Tensor methods)
# ---------------------------------------------------------------------------------------------
def _sample_inplace(x: Tensor, op: str, draw, overload: int = 0) -> Tensor:
    """Run ``draw(target)`` (which overwrites the target tensor's elements) on x, recording a zero-gradient
    node when x is part of a graph (``overload``: the number in PyTorch's node name, RandomBackward2, ...)."""
    recording = check_inplace(x, None, op)
    if not recording:
        draw(x)
        x._vc[0] += 1
        return x
    fresh = _make(x._be.empty(tuple(x.shape), x.dtype.np), x.dtype, x._be)
    draw(fresh)
    node = _inplace_node(op, overload)()
    node.shape = tuple(x.shape)
    node.next_functions = (edge(x),)
    rebase(x, _make(fresh._data, x.dtype, x._be, node))
    return x


def _floats_only(x: Tensor, kernel: str) -> None:
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{x.dtype._tname[:-6]}'")


def uniform_(x: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None, **kw) -> Tensor:
    """Fill ``self`` with samples uniform in ``[from, to)`` (default ``[0, 1)``); returns ``self``."""
    a, b = kw.pop("from", a), kw.pop("to", b)
    _no_more(kw, "uniform_")
    _floats_only(x, "check_uniform_bounds")
    check_uniform_bounds(x.dtype, float(a), float(b))
    return _sample_inplace(x, "uniform_", lambda t: _fill_data(t, generator, "uniform", float(a), float(b),
                                                               "uniform_"))


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill ``self`` with samples of ``N(mean, std**2)``; returns ``self``."""
    _floats_only(x, "normal_kernel_cpu")
    if not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    return _sample_inplace(x, "normal_", lambda t: _fill_data(t, generator, "normal", float(mean), float(std),
                                                              "normal_"))


def exponential_(x: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill ``self`` with samples of the exponential law of rate ``lambd``; returns ``self``."""
    continuous_only(x, "Exponential", "scalar")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    return _sample_inplace(x, "exponential_", lambda t: _fill_data(t, generator, "exponential", float(lambd),
                                                                   0.0, "exponential_"))


def geometric_(x: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill ``self`` with samples of the geometric law (trials to the first success with probability ``p``); returns
    ``self``."""
    if x.dtype is _dt.bool_:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    return _sample_inplace(x, "geometric_", lambda t: _fill_data(t, generator, "geometric", float(p), 0.0,
                                                                 "geometric_"))


def log_normal_(x: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill ``self`` with samples ``exp(N(mean, std))``; returns ``self``."""
    _floats_only(x, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    return _sample_inplace(x, "log_normal_", lambda t: _fill_data(t, generator, "log_normal", float(mean),
                                                                  float(std), "log_normal_"))


def cauchy_(x: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill ``self`` with samples of the Cauchy law ``median + sigma * tan(pi * (U - 1/2))``; returns ``self``."""
    continuous_only(x, "Cauchy", "cpp")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    return _sample_inplace(x, "cauchy_", lambda t: _fill_data(t, generator, "cauchy", float(median),
                                                              float(sigma), "cauchy_"))


def _num(v) -> str:
    """A float argument as PyTorch's messages print it (C++'s ostream: 1, not 1.0)."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _random_bounds(dt) -> tuple:
    """random_()'s default range [0, to) of a dtype: every value of an integer type >= 0, the integers a float
    type holds exactly (0 .. 2**mantissa digits)."""
    if dt is _dt.bool_:
        return 0, 2
    if dt.is_floating_point:
        return 0, (1 << int(np.finfo(dt.np).nmant + 1)) + 1
    return 0, int(np.iinfo(dt.np).max) + 1


def random_(x: Tensor, *args, generator=None, **kw) -> Tensor:
    """random_() (every non-negative value the dtype holds exactly), random_(to), random_(from, to|None)."""
    if "from" in kw:  # random_(from, to): to has no default
        if args:
            raise TypeError("random_() got multiple values for argument 'from'")
        if "to" not in kw:
            raise TypeError("random_() missing required argument 'to'")
        args = (kw.pop("from"), kw.pop("to"))
    elif "to" in kw:  # random_(to=...) or random_(from, to=...)
        if len(args) > 1:
            raise TypeError("random_() got multiple values for argument 'to'")
        args = (*args, kw.pop("to"))
    _no_more(kw, "random_")
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 arguments ({len(args)} given)")
    lo, hi = _random_bounds(x.dtype)
    if len(args) == 1:
        hi = int_arg(args[0], "random_", "to")
    elif len(args) == 2:
        lo = int_arg(args[0], "random_", "from")
        if args[1] is not None:
            hi = int_arg(args[1], "random_", "to")
        elif x.dtype.is_floating_point and lo > hi - 1:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted "
                               f"to dtype, but got from={lo} > to_inc={hi - 1}")
        else:  # an integer dtype: PyTorch's "from is out of bounds" before the order check
            _check_range(lo, hi, x.dtype)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")

    def draw(t):
        table = t._be
        t._be.assign_(t._data, _int_data(table, generator, lo, hi, tuple(t.shape), t.dtype, "random_"))
    # PyTorch's nodes: random_(from, to) RandomBackward0, random_(to) RandomBackward1, random_() RandomBackward2
    return _sample_inplace(x, "random_", draw, 2 if not args else 1 if len(args) == 1 else 0)


def _check_probabilities(pd: Tensor) -> None:
    """PyTorch's check that every probability lies in [0, 1] (NaN fails)."""
    with no_grad():
        ok = _P.logical_and(_P.ge(pd, 0), _P.le(pd, 1))
    _check_all(ok, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def _check_all(ok: Tensor, msg: str) -> None:
    """RuntimeError(msg) unless every element of the bool tensor ``ok`` is true: at once in host memory, by the
    device's queued value check elsewhere (no host read; reported at the next one)."""
    be = ok._be
    if be.host_memory:
        if not _host_flag(_R.all(ok)):
            raise RuntimeError(msg)
    elif be.has("check_values"):
        be.check_values(ok._data, "nonzero", msg)


def bernoulli_(x: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Overwrite with 0/1 samples: probability ``p`` (a float, or a tensor broadcast to x's shape)."""
    if isinstance(p, Tensor):
        if not p.dtype.is_floating_point:
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for '{p.dtype._tname[:-6]}'")
        pd = p.detach()
        if pd._be is not x._be:
            pd = pd.to(x.device)
        if tuple(pd.shape) != tuple(x.shape):  # PyTorch expands p to self's shape (self is never broadcast)
            pd = pd.expand(tuple(x.shape))
        if pd.numel():
            _check_probabilities(pd)

        def draw(t):
            u = _make(t._be.empty(tuple(t.shape), pd.dtype.np), pd.dtype, t._be)
            _fill_data(u, generator, "uniform", 0.0, 1.0, "bernoulli_")
            with no_grad():
                hit = _P.lt(u, pd)
            t._be.assign_(t._data, t._be.cast(hit._data, t.dtype.np))
        return _sample_inplace(x, "bernoulli_", draw, 1)
    p = float(p)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _sample_inplace(x, "bernoulli_", lambda t: _fill_data(t, generator, "bernoulli", p, 0.0, "bernoulli_"),
                           2)


def _bernoulli_method(self: Tensor, p=None, *, generator=None) -> Tensor:
    return bernoulli(self, p, generator=generator)


def _multinomial_method(self: Tensor, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:
    return multinomial(self, num_samples, replacement, generator=generator)


METHODS: dict = {  # Tensor.<name> -> function(self, ...), bound by coretorch._tensor_methods
    "uniform_": uniform_, "normal_": normal_, "exponential_": exponential_, "geometric_": geometric_,
    "log_normal_": log_normal_, "cauchy_": cauchy_, "random_": random_, "bernoulli_": bernoulli_,
    "bernoulli": _bernoulli_method, "multinomial": _multinomial_method,
}
