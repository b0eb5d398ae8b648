"""OpenCL kernels of the random sampling primitives (see coretorch.plugins.KERNELS).

Every sample comes from Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), a
counter-based generator: the 128-bit counter (element index, draw index, call offset) under the 64-bit key (the
seed) gives four independent 32-bit words.  A generator state is therefore just (seed, offset): every sampling
call uses the current offset and advances it by one, so ``get_state``/``set_state`` are 16 bytes (seed and offset,
little-endian) and a call's samples depend only on (seed, offset, element index) — the same on any device.

Kernels: ``rng_<distribution>`` (uniform, normal by Box-Muller, exponential, geometric, log-normal, Cauchy and
Bernoulli: one kernel each, a work-item making four float samples (a word each) or two double ones (two words each)
from one Philox call; written in place, or through a contiguous temporary for a strided view), ``rng_int``
(integers in [low, high), two from 64 random bits each per call), ``rng_poisson`` (Knuth's product method below
rate 10, Hormann's PTRS transformed rejection above; a stream of Philox calls per element), multinomial without
replacement (``mn_keys``: p / E with E ~ Exp(1), then the argmax kernel for one draw, else ``mn_take``: the k
largest keys per row, one work-item per row) and with replacement (a cumsum by the scan kernel, then ``mn_repl``:
a binary search per sample).
``randperm`` on the device: a random 64-bit key per position (``rng_int`` over the full range, one call of the
generator, as every sampler), then the device sort's stable argsort of the keys (a uniform permutation; equal keys,
of probability ~n^2 / 2^65, keep their order).
"""
from __future__ import annotations

import numpy as np

from . import codegen as cg
from .layout import _desc, _is_c
from .sorting import sort as _sort

DEFAULT_SEED = 67280421310721  # PyTorch's default seed
_MASK32 = 0xFFFFFFFF


class PhiloxState:
    """One generator's state: the key (seed) and the offset of its next call."""

    __slots__ = ("seed", "offset")

    def __init__(self, seed: int = DEFAULT_SEED):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self.seed, self.offset = int(seed), 0

    def take(self) -> list:
        """The (key, counter) kernel arguments of one call, advancing the offset."""
        s, o = self.seed, self.offset
        self.offset = (o + 1) & 0xFFFFFFFFFFFFFFFF
        return [np.uint32(s & _MASK32), np.uint32(s >> 32), np.uint32(o & _MASK32), np.uint32(o >> 32)]


def _get_state(g: PhiloxState) -> np.ndarray:
    return np.frombuffer(g.seed.to_bytes(8, "little") + g.offset.to_bytes(8, "little"), np.uint8).copy()


def _set_state(g: PhiloxState, a: np.ndarray) -> None:
    b = np.ascontiguousarray(a, np.uint8).tobytes()
    if len(b) != 16:
        raise RuntimeError(f"Expected an opencl generator state of 16 bytes, got {len(b)}")
    g.seed, g.offset = int.from_bytes(b[:8], "little"), int.from_bytes(b[8:], "little")


# the ten rounds unrolled, the 32x32 -> 64-bit products as ulong multiplies: PoCL's mul_hi is a slow library call
# (4x slower measured on the CPU device); a GPU compiles either to its wide multiply
_ROUND = ("{ ulong p0 = (ulong)0xD2511F53u * c0, p1 = (ulong)0xCD9E8D57u * c2;"
          " uint n0 = (uint)(p1 >> 32) ^ c1 ^ k0, n2 = (uint)(p0 >> 32) ^ c3 ^ k1;"
          " c0 = n0; c1 = (uint)p1; c2 = n2; c3 = (uint)p0; k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }")
_PHILOX = """
inline uint4 philox(uint4 c, uint2 k) {
 uint c0 = c.x, c1 = c.y, c2 = c.z, c3 = c.w, k0 = k.x, k1 = k.y;
""" + "\n".join(" " + _ROUND for _ in range(10)) + """
 return (uint4)(c0, c1, c2, c3);
}
typedef struct { uint4 c; uint2 k; uint4 r; int p; } stream_t;
inline uint next32(stream_t* s) {
 if (s->p == 4) { s->r = philox(s->c, s->k); s->c.y += 1; s->p = 0; }
 uint v = s->p == 0 ? s->r.x : s->p == 1 ? s->r.y : s->p == 2 ? s->r.z : s->r.w;
 s->p += 1;
 return v;
}
"""
# u_co: [0, 1); u_oo: (0, 1) (logarithms never see 0 or 1) from one word (float) or two (double): a Philox call gives
# four float samples or two double ones
_U_FLOAT = """
inline RT u_co(uint a, uint b) { return (RT)(a >> 8) * 5.9604644775390625e-8f; }
inline RT u_oo(uint a, uint b) { return ((RT)(a >> 8) + 0.5f) * 5.9604644775390625e-8f; }
"""
_U_DOUBLE = """
inline RT u_co(uint a, uint b) { return ((RT)(a >> 5) * 67108864.0 + (RT)(b >> 6)) * 1.1102230246251565e-16; }
inline RT u_oo(uint a, uint b) { return ((RT)(a >> 5) * 67108864.0 + (RT)(b >> 6) + 0.5) * 1.1102230246251565e-16; }
"""
# each distribution is its own kernel (a branch on the distribution would be predicated into computing all of
# them when a CPU device vectorises work-items), unrolled over the call's samples: {u} is sample j's uniform in
# [0, 1), {o} in (0, 1); normal and log_normal take samples in pairs (Box-Muller: {o} the radius', {u2} the angle's)
_ONE = {
    "uniform": "fmin(a + (b - a) * {u}, hi)", "exponential": "-log({o}) / a",
    "geometric": "fmax(ceil(log({o}) / log1p(-a)), (RT)1)", "cauchy": "a + b * tanpi({o} - (RT)0.5)",
    "bernoulli": "{u} < a ? (RT)1 : (RT)0",
}
_PAIR = {"normal": ("a + {r} * cospi({t})", "a + {r} * sinpi({t})"),
         "log_normal": ("exp(a + {r} * cospi({t}))", "exp(a + {r} * sinpi({t}))")}


def _fill_kernel(name: str, dt, rt: str, head: str) -> str:
    per = 2 if rt == "double" else 4

    def uni(f, j):
        return f"{f}(r.s{j}, 0u)" if per == 4 else f"{f}(r.s{2 * j}, r.s{2 * j + 1})"
    lines = []
    if name in _PAIR:
        for j in range(0, per, 2):
            lines.append(f" RT rad{j} = b * sqrt(-2 * log({uni('u_oo', j)})), th{j} = 2 * {uni('u_co', j + 1)};")
            first, second = (e.format(r=f"rad{j}", t=f"th{j}") for e in _PAIR[name])
            lines.append(f" RT v{j} = {first}, v{j + 1} = {second};")
    else:
        for j in range(per):
            lines.append(f" RT v{j} = {_ONE[name].format(u=uni('u_co', j), o=uni('u_oo', j))};")
    full = " ".join(cg.store(dt, "o", f"oo + i0 + {j}", f"v{j}") for j in range(per))
    tail = " ".join(f"if (i0 + {j} < n) {{ {cg.store(dt, 'o', f'oo + i0 + {j}', f'v{j}')} }}" for j in range(per))
    return (f"__kernel void rng_{name}({head}) {{\n long g = get_global_id(0), i0 = g * {per}; if (i0 >= n) return;\n"
            " uint4 r = philox((uint4)((uint)g, (uint)(g >> 32), c2, c3), (uint2)(k0, k1));\n"
            + "\n".join(lines) + f"\n if (i0 + {per} <= n) {{ {full} }} else {{ {tail} }}\n}}\n")


def _rt(dev, dt) -> str:
    """The compute type of samples stored as ``dt``: double for float64 (and for integers where fp64 exists)."""
    d = np.dtype(dt)
    return "double" if d == np.float64 or (d.kind in "iub" and dev.fp64) else "float"


def _src(dt, rt: str) -> str:
    st = cg.stype(dt)
    key = "uint k0, uint k1, uint c2, uint c3"
    philox = "philox((uint4)((uint)g, (uint)(g >> 32), c2, c3), (uint2)(k0, k1))"
    lam = cg.load(dt, "x", "xo + g")

    def cdf(j):
        return cg.load(dt, "cdf", f"cb + {j}")
    head = f"__global {st}* o, long oo, long n, {key}, {rt} a, {rt} b, {rt} hi"
    fills = "".join(_fill_kernel(name, dt, rt, head) for name in (*_ONE, *_PAIR))
    return (f"#define RT {rt}\n" + _PHILOX + (_U_DOUBLE if rt == "double" else _U_FLOAT) + f"""
{fills}
__kernel void rng_int(__global {st}* o, long oo, long n, {key}, long lo, ulong range) {{
 long g = get_global_id(0), i0 = 2 * g; if (i0 >= n) return;
 uint4 r = {philox};
 ulong x0 = ((ulong)r.x << 32) | r.y, x1 = ((ulong)r.z << 32) | r.w;
 long v0 = lo + (long)(range ? x0 % range : x0), v1 = lo + (long)(range ? x1 % range : x1);
 {cg.store(dt, "o", "oo + i0", "v0")}
 if (i0 + 1 < n) {{ {cg.store(dt, "o", "oo + i0 + 1", "v1")} }}
}}
__kernel void rng_poisson(__global {st}* o, __global const {st}* x, long xo, long n, {key}) {{
 long g = get_global_id(0); if (g >= n) return;
 stream_t s; s.c = (uint4)((uint)g, 0, c2, c3); s.k = (uint2)(k0, k1); s.p = 4;
 RT lam = {lam}, res;
 if (!(lam >= 0)) res = (RT)NAN;
 else if (isinf(lam)) res = lam;  /* PTRS's arithmetic would make NaN of it */
 else if (lam < 10) {{
  RT lim = exp(-lam), p = 1; long k = -1;
  do {{ ++k; uint w = next32(&s); p *= u_oo(w, next32(&s)); }} while (p > lim);
  res = (RT)k;
 }} else {{  /* PTRS: W. Hormann, "The transformed rejection method for generating Poisson random variables" */
  RT slam = sqrt(lam), loglam = log(lam), b = (RT)0.931 + (RT)2.53 * slam, a = (RT)-0.059 + (RT)0.02483 * b;
  RT invalpha = (RT)1.1239 + (RT)1.1328 / (b - (RT)3.4), vr = (RT)0.9277 - (RT)3.6224 / (b - 2);
  while (1) {{
   uint w = next32(&s); RT U = u_oo(w, next32(&s)) - (RT)0.5;
   w = next32(&s); RT V = u_oo(w, next32(&s));
   RT us = (RT)0.5 - fabs(U), k = floor((2 * a / us + b) * U + lam + (RT)0.43);
   if (us >= (RT)0.07 && V <= vr) {{ res = k; break; }}
   if (k < 0 || (us < (RT)0.013 && V > us)) continue;
   if (log(V) + log(invalpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1)) {{ res = k; break; }}
  }}
 }}
 {cg.store(dt, "o", "g", "res")}
}}
__kernel void mn_keys(__global RT* keys, __global const {st}* x, long xo, long n, {key}) {{
 long g = get_global_id(0); if (g >= n) return;
 uint4 r = {philox};
 keys[g] = {lam} / -log(u_oo(r.x, r.y));
}}
__kernel void mn_take(__global long* out, __global RT* keys, long rows, long C, long k) {{
 long g = get_global_id(0); if (g >= rows) return;
 __global RT* kr = keys + g * C;
 for (long s = 0; s < k; ++s) {{
  RT best = -1; long bi = 0;
  for (long j = 0; j < C; ++j) {{ RT v = kr[j]; if (v > best) {{ best = v; bi = j; }} }}
  out[g * k + s] = bi; kr[bi] = -2;
 }}
}}
__kernel void mn_repl(__global long* out, __global const {st}* cdf, long rows, long C, long k, {key}) {{
 long g = get_global_id(0); if (g >= rows * k) return;
 uint4 r = {philox};
 long cb = (g / k) * C;
 RT x = u_co(r.x, r.y) * {cdf('C - 1')};
 long lo = 0, hi = C - 1;
 while (lo < hi) {{ long m = (lo + hi) / 2; if ({cdf('m')} > x) hi = m; else lo = m + 1; }}
 /* x rounded up to the total: never a zero-probability category */
 while (lo > 0 && {cdf('lo')} == {cdf('lo - 1')}) --lo;
 out[g] = lo;
}}
""")


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    dev = k.dev

    def kern(dt, name):
        rt = _rt(dev, dt)
        return dev.kernel(("rng", np.dtype(dt).str, rt), name, lambda: _src(dt, rt))

    def rt_np(dt):
        return np.float64 if _rt(dev, dt) == "double" else np.float32

    def contiguous(x):
        buf, off, shape, st = _desc(x)
        if _is_c(shape, st):
            return x, buf, off
        x = k.contiguous(x)
        return x, x.base_data, 0

    def into(x, launch):
        """Run ``launch(buffer, offset)`` writing x's elements in C order: in place when x is contiguous."""
        k._check_writable(x)
        if not x.size:
            return
        buf, off, shape, st = _desc(x)
        if _is_c(shape, st):
            launch(buf, off)
            return
        tmp = k._out(x.shape, x.dtype)
        launch(tmp.base_data, 0)
        k.assign_(x, tmp)

    def fill_(g, x, dist, a, b):
        dt = k._check_dtype(x.dtype)
        r = rt_np(dt)
        is_float = dt.kind == "f" or dt.name == "bfloat16"  # ml_dtypes' bfloat16 has numpy kind 'V'
        hi = float(np.nextafter(dt.type(b), dt.type(a))) if dist == "uniform" and b > a and is_float else b
        per = 2 if r is np.float64 else 4  # samples per Philox call (E in the kernel)
        into(x, lambda buf, off: dev.launch(kern(dt, "rng_" + dist), -(-x.size // per),
                                            [buf, np.int64(off), np.int64(x.size)] + g.take() + [r(a), r(b), r(hi)]))

    def randint(g, low, high, shape, dt):
        out = k._out(tuple(shape), k._check_dtype(dt))
        rng = (int(high) - int(low)) & 0xFFFFFFFFFFFFFFFF  # 2**64 wraps to 0: the full range
        if out.size:
            dev.launch(kern(out.dtype, "rng_int"), -(-out.size // 2), [out.base_data, np.int64(0), np.int64(out.size)]
                       + g.take() + [np.int64(low), np.uint64(rng)])
        return out

    def poisson(g, rates):
        out = k._out(rates.shape, rates.dtype)
        if out.size:
            rates, buf, off = contiguous(rates)
            dev.launch(kern(rates.dtype, "rng_poisson"), out.size,
                       [out.base_data, buf, np.int64(off), np.int64(out.size)] + g.take())
        return out

    def multinomial(g, probs, n, replacement):
        rows, cats = probs.shape
        out = k._out((rows, n), np.int64)
        if not out.size:
            return out
        dt = probs.dtype
        if replacement:
            cdf = k._scan("cumsum")(probs, 1)
            dev.launch(kern(dt, "mn_repl"), rows * n, [out.base_data, cdf.base_data, np.int64(rows),
                                                       np.int64(cats), np.int64(n)] + g.take())
            return out
        probs, buf, off = contiguous(probs)
        keys = k._out((rows, cats), rt_np(dt))
        dev.launch(kern(dt, "mn_keys"), rows * cats, [keys.base_data, buf, np.int64(off),
                                                      np.int64(rows * cats)] + g.take())
        if n == 1:  # one draw (a language model's next token): the device's parallel argmax of the keys
            return k._arg("argmax")(keys, 1, True)
        dev.launch(kern(dt, "mn_take"), rows, [out.base_data, keys.base_data, np.int64(rows), np.int64(cats),
                                               np.int64(n)])
        return out

    def randperm(g, n, dt):
        keys = randint(g, 0, 0, (n,), np.int64)  # high - low == 0 (mod 2^64): the full 64-bit range
        idx = _sort(k, keys, 0, False, True)[1]
        return idx if np.dtype(dt) == np.int64 else k.cast(idx, dt)

    return {
        "rng_new": PhiloxState, "rng_default": k._gen, "rng_seed": lambda g, s: g.reseed(s),
        "rng_initial_seed": lambda g: g.seed, "rng_get_state": _get_state, "rng_set_state": _set_state,
        "rng_fill_": fill_, "rng_randint": randint, "rng_poisson": poisson, "rng_multinomial": multinomial,
        "rng_randperm": randperm,
    }
