"""numpy kernels of the random sampling primitives (see coretorch.plugins.KERNELS).

A generator state is a ``CPUGen``: a numpy PCG64 ``Generator`` plus the seed it started from.  Its byte state
(``rng_get_state``) is 45 bytes, little-endian: seed (8), PCG64 state (16), increment (16), has_uint32 (1),
uinteger (4).  Floats are drawn in float32 or float64 (float16 from float32, rounded).
"""
from __future__ import annotations

import numpy as np

from .shaping import _writable

DEFAULT_SEED = 67280421310721  # PyTorch's default seed
_STATE_BYTES = 45


class CPUGen:
    """One generator's state: a numpy Generator and its initial seed."""

    __slots__ = ("rng", "seed")

    def __init__(self, seed: int = DEFAULT_SEED):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self.seed))


def _get_state(g: CPUGen) -> np.ndarray:
    st = g.rng.bit_generator.state
    b = (g.seed.to_bytes(8, "little") + st["state"]["state"].to_bytes(16, "little")
         + st["state"]["inc"].to_bytes(16, "little") + bytes([st["has_uint32"]])
         + int(st["uinteger"]).to_bytes(4, "little"))
    return np.frombuffer(b, np.uint8).copy()


def _set_state(g: CPUGen, a: np.ndarray) -> None:
    b = np.ascontiguousarray(a, np.uint8).tobytes()
    if len(b) != _STATE_BYTES:
        raise RuntimeError(f"Expected a cpu generator state of {_STATE_BYTES} bytes, got {len(b)}")
    seed = int.from_bytes(b[:8], "little")
    rng = np.random.Generator(np.random.PCG64(seed))
    rng.bit_generator.state = {"bit_generator": "PCG64",
                               "state": {"state": int.from_bytes(b[8:24], "little"),
                                         "inc": int.from_bytes(b[24:40], "little")},
                               "has_uint32": b[40], "uinteger": int.from_bytes(b[41:45], "little")}
    g.seed, g.rng = seed, rng


def _is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt.name == "bfloat16"  # ml_dtypes' bfloat16 has kind "V"


def _draw_dtype(dt: np.dtype) -> np.dtype:
    return dt if dt in (np.float32, np.float64) else np.dtype(np.float32)


def _samples(g: CPUGen, shape, dt: np.dtype, dist: str, a: float, b: float) -> np.ndarray:
    """Samples of ``dist`` (see rng_fill_) as an array of ``shape``, in dt's draw dtype or int64/bool."""
    rng = g.rng
    fd = _draw_dtype(dt) if _is_float(dt) else np.dtype(np.float64)
    if dist == "uniform":
        r = rng.random(shape, dtype=fd) * fd.type(b - a) + fd.type(a)
        if _is_float(dt) and b > a:  # rounding (to float16 too) must not reach the open bound b
            r = np.minimum(r.astype(dt, copy=False), np.nextafter(dt.type(b), dt.type(a)))
        return r
    if dist == "normal":
        return rng.standard_normal(shape, dtype=fd) * fd.type(b) + fd.type(a)
    if dist == "exponential":
        return rng.standard_exponential(shape, dtype=fd) / fd.type(a)
    if dist == "geometric":
        if _is_float(dt):  # by inversion in float64: numpy's int64 draws saturate for a tiny p
            return np.maximum(np.ceil(np.log1p(-rng.random(shape)) / np.log1p(-a)), 1.0)
        return rng.geometric(a, shape)
    if dist == "log_normal":
        return np.exp(rng.standard_normal(shape, dtype=fd) * fd.type(b) + fd.type(a))
    if dist == "cauchy":
        return rng.standard_cauchy(shape).astype(fd) * fd.type(b) + fd.type(a)
    if dist == "bernoulli":
        return rng.random(shape) < a
    raise ValueError(f"unknown distribution '{dist}'")


_DIRECT = {"uniform": "random", "normal": "standard_normal", "exponential": "standard_exponential"}


def rng_fill_(g: CPUGen, x: np.ndarray, dist: str, a: float, b: float) -> None:
    if not x.flags.writeable:  # a view of an expanded tensor: its writable alias, or PyTorch's error
        x = _writable(x)
    if dist in _DIRECT and x.dtype in (np.float32, np.float64) and x.flags.c_contiguous:
        # drawn straight into x (rand, randn, dropout's masks: no temporary), then scaled in place
        getattr(g.rng, _DIRECT[dist])(dtype=x.dtype, out=x)
        if dist == "exponential":
            x /= x.dtype.type(a)
        elif (a, b) != (0.0, 1.0):
            if dist == "uniform":
                x *= x.dtype.type(b - a)
                x += x.dtype.type(a)
                np.minimum(x, np.nextafter(x.dtype.type(b), x.dtype.type(a)), out=x)  # rounding must not reach b
            else:
                x *= x.dtype.type(b)
                x += x.dtype.type(a)
        return
    x[...] = _samples(g, x.shape, x.dtype, dist, a, b)


def rng_randint(g: CPUGen, low: int, high: int, shape, dt) -> np.ndarray:
    if high - 1 > np.iinfo(np.int64).max:  # a range beyond int64: offsets in uint64, added with wrap-around
        u = g.rng.integers(0, high - low, size=shape, dtype=np.uint64) + np.uint64(low & 0xFFFFFFFFFFFFFFFF)
        return u.view(np.int64).astype(dt, copy=False)
    return g.rng.integers(low, high, size=shape, dtype=np.int64).astype(dt, copy=False)


_LAM_MAX = 9.2e18  # numpy's poisson takes rates below about 2**63 (it raises beyond)


def rng_poisson(g: CPUGen, rates: np.ndarray) -> np.ndarray:
    lam = np.asarray(rates, np.float64)
    big = lam > _LAM_MAX
    if not big.any():
        return np.asarray(g.rng.poisson(lam)).astype(rates.dtype)
    # rates beyond numpy's range (inf too): the normal limit lam + sqrt(lam) * N(0, 1), rounded
    out = np.asarray(g.rng.poisson(np.where(big, 0.0, lam)), np.float64)
    with np.errstate(invalid="ignore"):
        approx = np.where(lam == np.inf, lam, np.rint(lam + np.sqrt(lam) * g.rng.standard_normal(lam.shape)))
    return np.where(big, approx, out).astype(rates.dtype)


def rng_multinomial(g: CPUGen, probs: np.ndarray, n: int, replacement: bool) -> np.ndarray:
    """probs (R, C), validated by the core (finite, >= 0, every row sum > 0) -> int64 (R, n)."""
    p = probs.astype(np.float64)
    rows, cats = p.shape
    if not replacement:
        # Efraimidis-Spirakis: the n largest p / E, E ~ Exp(1), are a weighted draw without replacement
        keys = p / g.rng.standard_exponential(p.shape)
        if n == 1:
            return np.argmax(keys, axis=1)[:, None].astype(np.int64)
        if 4 * n < cats:  # a few of many categories: partition, then order only those
            part = np.argpartition(-keys, n - 1, axis=1)[:, :n]
            order = np.argsort(-np.take_along_axis(keys, part, 1), axis=1, kind="stable")
            return np.take_along_axis(part, order, 1).astype(np.int64)
        return np.argsort(-keys, axis=1, kind="stable")[:, :n].astype(np.int64)
    cdf = np.cumsum(p, axis=1)
    cdf /= cdf[:, -1:]
    base = np.arange(rows, dtype=np.float64)[:, None]
    u = g.rng.random((rows, n)) + base
    idx = np.searchsorted((cdf + base).ravel(), u.ravel(), side="right").reshape(rows, n)
    idx -= np.arange(rows, dtype=np.int64)[:, None] * cats
    last = cats - 1 - np.argmax(p[:, ::-1] > 0, axis=1)  # rounding must never pick a zero-probability category
    return np.minimum(idx, last[:, None]).astype(np.int64)


def rng_randperm(g: CPUGen, n: int, dt) -> np.ndarray:
    return g.rng.permutation(n).astype(dt)


KERNELS: dict = {  # primitive name -> kernel on numpy arrays (the backend adds rng_default: its own state)
    "rng_new": CPUGen, "rng_seed": lambda g, s: g.reseed(s),
    "rng_initial_seed": lambda g: g.seed, "rng_get_state": _get_state, "rng_set_state": _set_state,
    "rng_fill_": rng_fill_, "rng_randint": rng_randint, "rng_poisson": rng_poisson,
    "rng_multinomial": rng_multinomial, "rng_randperm": rng_randperm,
}
