"""Kernels for contiguous float32 on CPU devices written with explicit vector types (VW elements per work-item, VW
the device's preferred float width): GELU forward and backward, softmax / log_softmax over short rows, layer norm
forward and backward, the plain elementwise arithmetic of the generic table (``VECTOR_EW``), and index_add of rows
(the embedding's gradient, without atomics): the kernels issue 14's GPT step spent most of its non-matmul time in.

Why: PoCL's work-group vectoriser leaves these kernels scalar (measured on the 2-core PoCL 3.0 znver3 device, 524k
float32, one compute unit, CPU ms: ``exp`` scalar kernel 3.7, the same over ``float8`` 0.43; an add 0.77 against
0.17-0.20; GELU forward 12.5 -> 1.7, backward ~13 -> 1.9; softmax_rows over 16x4x64x64, two builtin exps per
element, 4.5 -> 0.5).  The GELU helpers are fastmath's float ones with ``float`` read as the vector type (the
ternaries become lane selects, ``exp`` the vector builtin), so the values are fastmath's, lane for lane.  The last
``n % VW`` elements are done by the same launch's last work-items with the scalar code.
"""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from . import codegen as cg
from . import fastmath, fused, special
from .device import STATS
from .layout import _desc
from .nn_kernels import NNKernels

_F32 = np.dtype(np.float32)


@lru_cache(maxsize=None)
def vector_src(vw: int) -> str:
    """fastmath's float helpers over ``ct_fv`` (float x vw): ct_*_f -> ct_*_v."""
    s = fastmath.float_src()
    s = re.sub(r"\bct_(\w+)_f\b", r"ct_\1_v", s)
    s = re.sub(r"\bfloat\b", "ct_fv", s)
    return f"typedef float __attribute__((ext_vector_type({vw}), aligned(4))) ct_fv;\n" + s


def _src(vw: int) -> str:
    inv_sqrt_2pi = "0.3989422804014327f"
    ld = "*(const __global ct_fv*)"
    body = {   # name: (the scalar tail's statement, the vector statement), element i
        "gelu_v": ("o[i] = ct_gelu_f(x[i]);", f"*(__global ct_fv*)(o + i) = ct_gelu_v({ld}(x + i));"),
        "gelu_bwd_v": (
            f"float v = x[i], e; float q = ct_phi_parts_f(v, &e); float dx = v < -0.70710677f ? "
            f"(q + v * {inv_sqrt_2pi}) * e : ct_ndtr_from_f(v, q, e) + v * (e * {inv_sqrt_2pi}); o[i] = g[i] * dx;",
            f"ct_fv v = {ld}(x + i), e; ct_fv q = ct_phi_parts_v(v, &e); ct_fv dx = v < -0.70710677f ? "
            f"(q + v * {inv_sqrt_2pi}) * e : ct_ndtr_from_v(v, q, e) + v * (e * {inv_sqrt_2pi}); "
            f"*(__global ct_fv*)(o + i) = {ld}(g + i) * dx;"),
    }
    dx_s = (f"(v < -0.70710677f ? (q + v * {inv_sqrt_2pi}) * e : ct_ndtr_from_f(v, q, e) + v * (e * "
            f"{inv_sqrt_2pi}))")
    body["gelu_slope_v"] = (   # GELU and GELU'(x) in one pass (the forward of a GELU whose gradient is wanted)
        "float v = x[i], e; float q = ct_phi_parts_f(v, &e); o[i] = ct_gelu_f(v); s[i] = " + dx_s + ";",
        "ct_fv v = " + ld + "(x + i), e; ct_fv q = ct_phi_parts_v(v, &e); *(__global ct_fv*)(o + i) = ct_gelu_v(v); "
        "*(__global ct_fv*)(s + i) = " + dx_s.replace("_f(", "_v(") + ";")
    body["gelu_bwd_s_v"] = ("o[i] = g[i] * x[i];", f"*(__global ct_fv*)(o + i) = {ld}(g + i) * {ld}(x + i);")
    out = [fastmath.float_src(), vector_src(vw)]
    for name, (scalar, vector) in body.items():
        gargs = ", __global const float* restrict g, long go" if name in ("gelu_bwd_v", "gelu_bwd_s_v") else \
            ", __global float* restrict s" if name == "gelu_slope_v" else ""
        out.append(f"""
__kernel void {name}(__global float* restrict o, __global const float* restrict x, long xo{gargs}, long n) {{
  long id = get_global_id(0); long nv = n / {vw};
  x += xo;{" g += go;" if "long go" in gargs else ""}
  if (id < nv) {{ long i = id * {vw}; {vector} return; }}
  long i = nv * {vw} + (id - nv); if (i >= n) return;
  {scalar}
}}
""")
    lanes = "0123456789abcdef"[:vw]

    def lane_fold(fn, v):   # the lanes of a vector folded left to right
        e = f"{v}.s0"
        for q in lanes[1:]:
            e = fn(e, f"{v}.s{q}")
        return e
    mx = lane_fold(lambda a, b: f"ct_mx_f({a}, {b})", "mv")
    out.append(f"""
inline float ct_mx_f(float m, float v) {{ return (v > m || (v != v)) ? v : m; }}   /* NaN wins, as softmax_rows */
inline ct_fv ct_mx_v(ct_fv m, ct_fv v) {{ return (v > m || (v != v)) ? v : m; }}
__kernel void softmax_v(__global float* restrict o, __global const float* restrict x, long xo, int rows, int L,
                        int logsm) {{
  int r = get_global_id(0); if (r >= rows) return;
  const __global float* xr = x + xo + (long)r * L; __global float* orow = o + (long)r * L;
  const int nv = L / {vw} * {vw};
  ct_fv mv = (ct_fv)(-INFINITY);
  for (int j = 0; j < nv; j += {vw}) mv = ct_mx_v(mv, {ld}(xr + j));
  float m = {mx};
  for (int j = nv; j < L; ++j) m = ct_mx_f(m, xr[j]);
  if (isinf(m) && m < 0) m = 0;   /* an all -inf row: nan (0/0); a +inf or nan max gives a nan row */
  ct_fv sv = (ct_fv)(0.0f);
  for (int j = 0; j < nv; j += {vw}) {{
    ct_fv e = exp({ld}(xr + j) - m); sv += e; if (!logsm) *(__global ct_fv*)(orow + j) = e;
  }}
  float s = {lane_fold(lambda a, b: f"({a} + {b})", "sv")};
  for (int j = nv; j < L; ++j) {{ float e = exp(xr[j] - m); s += e; if (!logsm) orow[j] = e; }}
  if (logsm) {{
    const float ls = log(s);
    for (int j = 0; j < nv; j += {vw}) *(__global ct_fv*)(orow + j) = ({ld}(xr + j) - m) - ls;
    for (int j = nv; j < L; ++j) orow[j] = (xr[j] - m) - ls;
  }} else {{
    for (int j = 0; j < nv; j += {vw}) *(__global ct_fv*)(orow + j) = {ld}(orow + j) / s;
    for (int j = nv; j < L; ++j) orow[j] = orow[j] / s;
  }}
}}
""")
    out.append(_layer_norm_src(vw, ld, lambda v: lane_fold(lambda a, b: f"({a} + {b})", v)))
    return "".join(out)


def _layer_norm_src(vw: int, ld: str, lanesum) -> str:
    """layer_norm_v / layer_norm_bwd_x_v: fused.py's layer_norm / layer_norm_bwd_x (same arguments, one work-item
    per row) with VW lanes along the row (the row sums are taken in VW partial sums, then their lanes);
    layer_norm_bwd_wb_v: the weight and bias gradients, VW adjacent columns per work-item (D // VW + D % VW
    work-items, see ``row_items``)."""
    st = "*(__global ct_fv*)"
    bk = cg.SUM_BLOCK   # (the weight and bias gradients: blocks of rows, their sums compensated as fused.py's)
    return f"""
__kernel void layer_norm_v(__global float* y, __global float* mean, __global float* rstd, __global const float* x,
                           long xo, __global const float* w, long wo, __global const float* b, long bo, int hasw,
                           int hasb, long rows, long D, float eps) {{
  long r = get_global_id(0); if (r >= rows) return;
  const __global float* xr = x + xo + r * D; __global float* yr = y + r * D;
  const long nv = D / {vw} * {vw};
  const float x0 = xr[0];   /* the mean as x0 + mean(x - x0): exact for a row of equal values, whatever the order */
  ct_fv sv = (ct_fv)(0.0f);
  for (long j = 0; j < nv; j += {vw}) sv += {ld}(xr + j) - x0;
  float s = {lanesum("sv")};
  for (long j = nv; j < D; ++j) s += xr[j] - x0;
  const float m = x0 + s / (float)D;
  ct_fv qv = (ct_fv)(0.0f);
  for (long j = 0; j < nv; j += {vw}) {{ ct_fv d = {ld}(xr + j) - m; qv += d * d; }}
  float q = {lanesum("qv")};
  for (long j = nv; j < D; ++j) {{ float d = xr[j] - m; q += d * d; }}
  const float rs = 1.0f / sqrt(q / (float)D + eps);
  for (long j = 0; j < nv; j += {vw}) {{
    ct_fv v = ({ld}(xr + j) - m) * rs;
    if (hasw) v *= {ld}(w + wo + j);
    if (hasb) v += {ld}(b + bo + j);
    {st}(yr + j) = v;
  }}
  for (long j = nv; j < D; ++j) {{
    float v = (xr[j] - m) * rs;
    if (hasw) v *= w[wo + j];
    if (hasb) v += b[bo + j];
    yr[j] = v;
  }}
  mean[r] = m;
  rstd[r] = rs;
}}

__kernel void layer_norm_bwd_x_v(__global float* gx, __global const float* g, long go, __global const float* x,
                                 long xo, __global const float* mean, long mo, __global const float* rstd, long ro,
                                 __global const float* w, long wo, int hasw, long rows, long D) {{
  long r = get_global_id(0); if (r >= rows) return;
  const float m = mean[mo + r], rs = rstd[ro + r];
  const __global float* gr = g + go + r * D; const __global float* xr = x + xo + r * D;
  __global float* o = gx + r * D;
  const long nv = D / {vw} * {vw};
  ct_fv av = (ct_fv)(0.0f), cv = (ct_fv)(0.0f);
  for (long j = 0; j < nv; j += {vw}) {{
    ct_fv gh = {ld}(gr + j);
    if (hasw) gh *= {ld}(w + wo + j);
    av += gh; cv += gh * ({ld}(xr + j) - m) * rs;
  }}
  float a = {lanesum("av")}, c = {lanesum("cv")};
  for (long j = nv; j < D; ++j) {{
    float gh = gr[j];
    if (hasw) gh *= w[wo + j];
    a += gh; c += gh * (xr[j] - m) * rs;
  }}
  a /= (float)D; c /= (float)D;
  for (long j = 0; j < nv; j += {vw}) {{
    ct_fv gh = {ld}(gr + j);
    if (hasw) gh *= {ld}(w + wo + j);
    {st}(o + j) = (gh - a - ({ld}(xr + j) - m) * rs * c) * rs;
  }}
  for (long j = nv; j < D; ++j) {{
    float gh = gr[j];
    if (hasw) gh *= w[wo + j];
    o[j] = (gh - a - (xr[j] - m) * rs * c) * rs;
  }}
}}

__kernel void layer_norm_bwd_wb_v(__global float* gw, __global float* gb, __global const float* g, long go,
                                  __global const float* x, long xo, __global const float* mean, long mo,
                                  __global const float* rstd, long ro, int needw, int needb, long rows, long D) {{
  long id = get_global_id(0); long nj = D / {vw};
  if (id < nj) {{   /* VW adjacent columns, each summed over the rows in order as the scalar kernel */
    const long j = id * {vw};
    ct_fv sw = (ct_fv)(0.0f), sb = (ct_fv)(0.0f), cw = (ct_fv)(0.0f), cb = (ct_fv)(0.0f);
    for (long r0 = 0; r0 < rows; r0 += {bk}) {{
      const long r1 = min(rows, r0 + {bk});
      ct_fv bw = (ct_fv)(0.0f), bb = (ct_fv)(0.0f);
      for (long r = r0; r < r1; ++r) {{
        ct_fv gv = {ld}(g + go + r * D + j);
        bb += gv;
        if (needw) bw += gv * ({ld}(x + xo + r * D + j) - mean[mo + r]) * rstd[ro + r];
      }}
      {cg.kahan_step("ct_fv", "sb", "cb", "bb")}
      if (needw) {cg.kahan_step("ct_fv", "sw", "cw", "bw")}
    }}
    if (needw) {st}(gw + j) = sw;
    if (needb) {st}(gb + j) = sb;
    return;
  }}
  const long j = nj * {vw} + (id - nj); if (j >= D) return;
  float sw = 0, sb = 0, cw = 0, cb = 0;
  for (long r0 = 0; r0 < rows; r0 += {bk}) {{
    const long r1 = min(rows, r0 + {bk});
    float bw = 0, bb = 0;
    for (long r = r0; r < r1; ++r) {{
      float gv = g[go + r * D + j];
      bb += gv;
      if (needw) bw += gv * (x[xo + r * D + j] - mean[mo + r]) * rstd[ro + r];
    }}
    {cg.kahan_step("float", "sb", "cb", "bb")}
    if (needw) {cg.kahan_step("float", "sw", "cw", "bw")}
  }}
  if (needw) gw[j] = sw;
  if (needb) gb[j] = sb;
}}
"""


def row_items(dev, D: int) -> int:
    """Work-items of layer_norm_bwd_wb_v over D columns."""
    vw = vector_width(dev)
    return D // vw + D % vw


def row_kernel(dev, name: str, dt, D: int):
    """The vector form of fused.py's row kernel ``name`` (layer_norm, layer_norm_bwd_x, layer_norm_bwd_wb) for
    float32 rows of D >= VW on CPU devices, else None (the scalar kernel)."""
    if dt != _F32 or not dev.is_cpu:
        return None
    vw = vector_width(dev)
    if D < vw:
        return None
    return dev.kernel(("vecmath", vw), name + "_v", lambda: _src(vw), options="-cl-mad-enable")


def vector_width(dev) -> int:
    """Elements per work-item: the device's preferred float vector width, 4 to 16 (8 on AVX2, 16 on AVX-512)."""
    return max(4, min(16, dev.vector_width_float))


def kernels(k) -> dict:
    """gelu / gelu_backward for contiguous float32 on CPU devices; other operands take the scalar kernels of
    special.py / fused.py."""
    dev = k.dev
    if not dev.is_cpu:
        return {}
    plain_gelu, plain_bwd = special.kernels(k)["gelu"], fused.kernels(k)["gelu_backward"]
    nn = NNKernels(k)
    vw = vector_width(dev)

    def kernel(name):
        return dev.kernel(("vecmath", vw), name, lambda: _src(vw), options="-cl-mad-enable")

    def launch(name, out, *arrays):
        n = out.size
        nv = n // vw
        args = [out.base_data]
        for a in arrays:
            args += [a.base_data, _desc(a)[1]]
        dev.launch(kernel(name), nv + (n - nv * vw), args + [n])

    def gelu(x):
        if x.dtype != _F32 or x.size == 0 or not k.is_contiguous(x):
            return plain_gelu(x)
        out = k._out(tuple(x.shape), x.dtype)
        launch("gelu_v", out, x)
        return out

    def gelu_cdf(x):
        """(GELU(x), GELU'(x)): the forward keeps the slope, so the backward is one product (measured, 1024 x 512
        float32, one compute unit: forward 1.8 -> ~2.0 ms, backward 2.1 -> ~0.3 ms); the table's contract leaves
        the kept array to the backend (the cpu keeps Phi(x))."""
        if x.dtype != _F32 or x.size == 0 or not k.is_contiguous(x):
            return plain_gelu(x), None
        out, slope = k._out(tuple(x.shape), x.dtype), k._out(tuple(x.shape), x.dtype)
        n = out.size
        nv = n // vw
        dev.launch(kernel("gelu_slope_v"), nv + (n - nv * vw), [out.base_data, x.base_data, _desc(x)[1],
                                                                 slope.base_data, n])
        return out, slope

    def gelu_backward(g, x, cdf=None):
        if x.dtype != _F32 or g.dtype != _F32 or x.size == 0 or not (k.is_contiguous(x) and k.is_contiguous(g)):
            return plain_bwd(g, x, None)
        out = k._out(tuple(x.shape), x.dtype)
        if cdf is not None:   # GELU'(x) kept by gelu_cdf (contiguous, x's shape): g * GELU'(x)
            launch("gelu_bwd_s_v", out, cdf, g)
        else:
            launch("gelu_bwd_v", out, x, g)
        return out
    def softmax_last(x, dim, log):
        """softmax / log_softmax over the last dim of a contiguous float32 array with rows shorter than the
        work-group kernel's (one work-item per row, VW lanes along it; the scalar softmax_rows: builtin exp per
        element, twice)."""
        nd = len(x.shape)
        if x.dtype != _F32 or nd == 0 or dim % nd != nd - 1 or x.size == 0 or not k.is_contiguous(x):
            return None
        L = x.shape[-1]
        if L < vw or L >= 4 * nn.wg or x.size >= 2 ** 31:
            return None
        out = k._out(tuple(x.shape), x.dtype)
        rows = x.size // L
        dev.launch(kernel("softmax_v"), rows, [out.base_data, x.base_data, _desc(x)[1], rows, L, int(log)])
        return out

    def softmax(x, dim):
        r = softmax_last(x, dim, False)
        return nn.softmax(x, dim) if r is None else r

    def log_softmax(x, dim):
        r = softmax_last(x, dim, True)
        return nn.log_softmax(x, dim) if r is None else r
    return {"gelu": gelu, "gelu_cdf": gelu_cdf, "gelu_backward": gelu_backward, "softmax": softmax,
            "log_softmax": log_softmax}


# ---------------------------------------------------------------------------------------------
# contiguous float32 elementwise kernels whose expression is plain vector arithmetic
# ---------------------------------------------------------------------------------------------
# (measured on PoCL, one compute unit, 524k float32: an add 0.77 ms as the "_c" kernel, 0.17-0.20 over float8).
# Only operations whose vector form rounds as the scalar one (bit for bit: +, -, *, /, sqrt, selects): a compiled
# step's fused kernels compute them in scalar code and must match eager.  Not exp: PoCL's vector exp differs from
# its scalar exp by 1 ulp on ~1% of inputs.
VECTOR_EW = frozenset({"b_add", "b_sub", "b_mul", "b_div", "b_add_sc", "b_sub_sc", "b_mul_sc", "b_div_sc", "u_neg",
                       "u_sqrt", "u_rsqrt", "u_relu", "k_fill", "k_cast_f32", "k_axpy"})


def ew_src(kname: str, expr: str, operands, vw: int) -> str:
    """The "_v" variant of a contiguous float32 elementwise kernel (the "_c" kernel's arguments): VW elements per
    work-item as ``ct_fv`` vectors (scalar operands broadcast; the program defines ``ct_fv``), the last ``n % VW`` by
    scalar work-items."""
    args = ["__global float* o", "long oo"]   # (no restrict: x += y writes o = p0)
    vec, sca = [], []
    for j, (_, scalar) in enumerate(operands):
        if scalar:
            args.append(f"float a{j}")
            continue
        args += [f"__global const float* p{j}", f"long po{j}"]
        vec.append(f"const ct_fv a{j} = *(const __global ct_fv*)(p{j} + po{j} + g);")
        sca.append(f"const float a{j} = p{j}[po{j} + g];")
    return (f"__kernel void {kname}_v({', '.join(args)}, long n) {{\n"
            f"  long id = get_global_id(0); long nv = n / {vw};\n"
            f"  if (id < nv) {{ long g = id * {vw}; {' '.join(vec)} *(__global ct_fv*)(o + oo + g) = (ct_fv)({expr});"
            " return; }\n"
            f"  long g = nv * {vw} + (id - nv); if (g >= n) return;\n  {' '.join(sca)}\n  o[oo + g] = {expr};\n}}\n")


def run_ew(k, kname: str, args: list, n: int) -> None:
    """Launch the "_v" kernel of ``kname`` (in VECTOR_EW) with the "_c" kernel's arguments ``args`` (all of them one
    program: one build)."""
    dev = k.dev
    vw = vector_width(dev)

    def src():
        return f"typedef float __attribute__((ext_vector_type({vw}), aligned(4))) ct_fv;\n" + "".join(
            ew_src(name, expr, operands, vw) for name, expr, _, operands, _ in k._ew_specs(_F32) if name in VECTOR_EW)
    nv = n // vw
    dev.launch(dev.kernel(("vew", vw), kname + "_v", src), nv + (n - nv * vw), args)


# ---------------------------------------------------------------------------------------------
# index_add of rows (the embedding's backward) without atomics
# ---------------------------------------------------------------------------------------------
def _index_add_src(vw: int, it: str) -> str:
    ld = "*(const __global ct_fv*)"
    return f"""typedef float __attribute__((ext_vector_type({vw}), aligned(4))) ct_fv;
__kernel void index_add_rows(__global float* o, long oo, __global const float* s, long so, __global const {it}* idx,
                             long io, long N, long D, long V) {{
  long id = get_global_id(0); long nj = D / {vw};
  if (id < nj) {{   /* VW adjacent columns, the rows added in index order */
    const long j = id * {vw};
    for (long i = 0; i < N; ++i) {{
      long r = (long)idx[io + i]; if (r < 0) r += V; if (r < 0 || r >= V) continue;
      __global ct_fv* op = (__global ct_fv*)(o + oo + r * D + j);
      *op = *op + {ld}(s + so + i * D + j);
    }}
    return;
  }}
  const long j = nj * {vw} + (id - nj); if (j >= D) return;
  for (long i = 0; i < N; ++i) {{
    long r = (long)idx[io + i]; if (r < 0) r += V; if (r < 0 || r >= V) continue;
    o[oo + r * D + j] += s[so + i * D + j];
  }}
}}
"""


def index_add_rows(k, out, index, src) -> bool:
    """out[index[i], :] += src[i, :] for a contiguous float32 (V, D) ``out`` (written in place), a contiguous
    (N, D) ``src`` and a 1-D integer ``index``, on CPU devices: VW adjacent columns per work-item (a narrower tail
    one column each), the rows in index order (deterministic; out-of-range indices are skipped, as the put
    kernel's).  The put kernel
    (a float atomic per element) took ~1 ms for the GPT's 1024 x 128 token gradient on PoCL, its 65 rows contended.
    False (nothing done) for other operands."""
    dev = k.dev
    if not dev.is_cpu or out.dtype != _F32 or src.dtype != _F32 or out.ndim != 2 or src.ndim != 2 \
            or index.ndim != 1 or index.dtype.kind not in "iu" or index.dtype.itemsize not in (4, 8):
        return False
    vw = vector_width(dev)
    V, D = out.shape
    N = index.shape[0]
    # (rows narrower than VW: every column by the scalar tail, still in index order; they went to the atomic put
    # kernel, whose additions' order, and so their last bits, varied from run to run on AVX-512's VW 16)
    if tuple(src.shape) != (N, D) or not (k.is_contiguous(out) and k.is_contiguous(src) and k.is_contiguous(index)):
        return False
    if N == 0 or V == 0:
        return True
    it = "long" if index.dtype.itemsize == 8 else "int"
    kn = dev.kernel(("index_add_rows", vw, it), "index_add_rows", lambda: _index_add_src(vw, it))
    items = D // vw + D % vw
    STATS["launches"] += 1
    kn(dev.queue, (items,), (1,), out.base_data, _desc(out)[1], src.base_data, _desc(src)[1], index.base_data,
       _desc(index)[1], N, D, V)   # (one work-item per group: PoCL spreads them over its compute units)
    return True
