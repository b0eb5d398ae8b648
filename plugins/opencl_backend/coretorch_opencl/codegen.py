"""OpenCL C source templates, generated per dtype and layout.

Every kernel addresses its operands as (buffer, element offset[, element strides]) so that views (slices,
transposes, zero-stride broadcasts, negative-stride flips) are read and written in place on the device.
Layout per operand: "c" (contiguous with the iteration space: index = offset + gid) or "s" (strided:
the gid is decoded into a multi-index over the collapsed iteration shape).
"""
from __future__ import annotations

import numpy as np
from coretorch.dtypes import BFLOAT16_NOT_LOADED, on_bfloat16

from . import fastmath

# ml_dtypes' bfloat16, set when the core loads it on bfloat16's first use (importing ml_dtypes costs about a
# second); until then the core's stand-in, which equals no array's dtype
BF16 = BFLOAT16_NOT_LOADED
# numpy dtype -> (storage type, compute type); bfloat16 is stored as its 16 bits and computed in float
CTYPES = {
    np.dtype(np.float32): ("float", "float"), np.dtype(np.float64): ("double", "double"),
    np.dtype(np.float16): ("half", "float"), np.dtype(np.int64): ("long", "long"),
    np.dtype(np.int32): ("int", "int"), np.dtype(np.int16): ("short", "short"),
    np.dtype(np.int8): ("char", "char"), np.dtype(np.uint8): ("uchar", "uchar"),
    np.dtype(np.bool_): ("uchar", "uchar"),
}


def _set_bf16(npd: np.dtype) -> None:
    global BF16
    BF16 = npd
    CTYPES[npd] = ("ushort", "float")


on_bfloat16(_set_bf16)
_TAG = {"float32": "f32", "float64": "f64", "float16": "f16", "int64": "i64", "int32": "i32", "int16": "i16",
        "int8": "i8", "uint8": "u8", "bool": "b",
        "bfloat16": "bf16"}

HEADER = """
#ifdef CT_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#ifdef CT_I64ATOM
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif
inline float ct_bf2f(ushort v) { return as_float(((uint)v) << 16); }
inline ushort ct_f2bf(float f) {  // round to nearest even (a NaN stays a quiet NaN), as c10::BFloat16
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
// float -> integer as PyTorch's casts on x86 (c10's static_cast): through int (NaN, out of range: INT_MIN) for
// int32/int16/int8, through long (LONG_MIN) for int64 and uint8.  A plain C cast of such a value is undefined: PoCL
// gave another value in each kernel it was inlined into (a compiled step's fused kernel against the cast kernel).
inline int ct_f2i_f(float x) { return (x >= -2147483648.0f && x < 2147483648.0f) ? (int)x : (int)0x80000000u; }
inline long ct_f2l_f(float x) {
  return (x >= -9223372036854775808.0f && x < 9223372036854775808.0f) ? (long)x : (long)0x8000000000000000ul;
}
#ifdef CT_FP64
inline int ct_f2i_d(double x) { return (x > -2147483649.0 && x < 2147483648.0) ? (int)x : (int)0x80000000u; }
inline long ct_f2l_d(double x) {
  return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (long)x : (long)0x8000000000000000ul;
}
#endif
"""


def tag(dt) -> str:
    return _TAG[np.dtype(dt).name]


def stype(dt) -> str:
    return CTYPES[np.dtype(dt)][0]


def ctype(dt) -> str:
    return CTYPES[np.dtype(dt)][1]


def load(dt, ptr: str, idx: str) -> str:
    d = np.dtype(dt)
    if d == np.float16:
        return f"vload_half({idx}, {ptr})"
    if d == BF16:
        return f"ct_bf2f({ptr}[{idx}])"
    return f"{ptr}[{idx}]"


def store(dt, ptr: str, idx: str, val: str) -> str:
    d = np.dtype(dt)
    if d == np.float16:
        return f"vstore_half_rte((float)({val}), {idx}, {ptr});"
    if d == np.bool_:
        return f"{ptr}[{idx}] = (uchar)(({val}) != 0);"
    if d == BF16:
        return f"{ptr}[{idx}] = ct_f2bf((float)({val}));"
    return f"{ptr}[{idx}] = ({stype(d)})({val});"


def is_float(dt) -> bool:
    d = np.dtype(dt)
    return d.kind == "f" or d == BF16


def convert(expr: str, src, dst) -> str:
    """``expr`` (a value of dtype ``src`` in its compute type) as dtype ``dst``'s compute type, as a cast stores it:
    a float to an integer through the header's ``ct_f2i``/``ct_f2l`` (defined for NaN and out-of-range values)."""
    s, d = np.dtype(src), np.dtype(dst)
    if s == d:
        return expr
    if d == np.bool_:
        return f"((uchar)(({expr}) != 0))"
    if is_float(s) and d.kind in "iu":
        fn = "ct_f2l" if d.itemsize == 8 or d.kind == "u" else "ct_f2i"
        expr = f"{fn}_{'d' if ctype(s) == 'double' else 'f'}({expr})"
    return f"(({ctype(d)})({expr}))"


# ---------------------------------------------------------------------------------------------
# elementwise expressions: a0, a1, a2 are the operands in their compute types
# ---------------------------------------------------------------------------------------------
def unary_expr(op: str, dt) -> str | None:
    f = is_float(dt)
    b = np.dtype(dt) == np.bool_
    ct = ctype(dt)
    if op == "neg":
        return None if b else wrapping(ct, "(-a0)", f"(0 - ({utype(ct)})a0)")
    if op == "tanh" and ct == "float":  # written out (fastmath): PoCL's builtin costs twice its exp
        return "ct_tanh_f(a0)"
    if op in ("exp", "log", "sqrt", "sin", "cos", "tanh", "expm1", "log1p"):
        return f"{op}(a0)" if f else None
    if op == "rsqrt":
        return f"(({ct})1 / sqrt(a0))" if f else None
    if op == "reciprocal":
        return f"(({ct})1 / a0)" if f else None
    if op == "sigmoid":
        return f"(({ct})1 / (({ct})1 + exp(-a0)))" if f else None
    if op == "abs":
        if f:
            return "fabs(a0)"
        return "a0" if b or np.dtype(dt).kind == "u" else wrapping(
            ct, f"(({ct})abs(a0))", f"(a0 < 0 ? 0 - ({utype(ct)})a0 : ({utype(ct)})a0)")
    if op == "sign":
        # sign(NaN) = 0 and sign(-0.0) = +0.0, as PyTorch
        return "a0" if b else f"(a0 > 0 ? ({ct})1 : (a0 < 0 ? ({ct})-1 : ({ct})0))"
    if op == "relu":
        # NaN and -0.0 pass through (not < 0), as PyTorch's clamp_min(x, 0): relu(-0.0) is -0.0
        return f"(a0 < 0 ? ({ct})0 : a0)" if f else f"(a0 > 0 ? a0 : ({ct})0)"
    if op in ("floor", "ceil", "trunc"):
        return f"{op}(a0)" if f else "a0"
    if op == "round":
        return "rint(a0)" if f else "a0"
    if op == "logical_not":
        return "(a0 == 0)"
    if op == "bitwise_not":
        return None if f else ("(a0 == 0)" if b else "(~a0)")
    if op == "isnan":
        return "(a0 != a0)" if f else "0"
    return _special_unary(op, f, ct)


def _special_unary(op: str, f: bool, ct: str) -> str | None:
    """The special family's cheap unary ops (OpenCL C builtins; float only: the core casts integers to float).
    The costly special functions (digamma, erfinv, Bessel i0/i1, ...) are in their own program (special.py)."""
    if op == "erfc" and ct == "float":  # written out (fastmath): PoCL's float erfc builtin is a slow call
        return "ct_erfc_f(a0)"
    if op in ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2",
              "erfc", "lgamma"):
        return f"{op}(a0)" if f else None
    if op == "signbit":
        return "signbit(a0)" if f else None
    if op == "sinc":  # sin(pi x) / (pi x), 1 at 0 (sinpi: exact zeros at the integers)
        return f"(a0 == 0 ? ({ct})1 : sinpi(a0) / (({ct})M_PI * a0))" if f else None
    if op == "ndtr":
        if ct == "float":
            return "ct_ndtr_f(a0)"
        return f"(({ct})0.5 * erfc(-a0 * ({ct})M_SQRT1_2))" if f else None
    if op == "entr":  # -x log x; 0 at 0, -inf below
        return f"(a0 > 0 ? -a0 * log(a0) : (a0 == 0 ? ({ct})0 : (a0 != a0 ? a0 : -({ct})INFINITY)))" if f else None
    raise KeyError(op)


UNARY_BOOL_OUT = ("logical_not", "isnan", "signbit")
BINARY_BOOL_OUT = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor")


def binary_expr(op: str, dt) -> str | None:
    f = is_float(dt)
    b = np.dtype(dt) == np.bool_
    ct = ctype(dt)
    if op == "add":
        return "(a0 | a1)" if b else wrapping(ct, "(a0 + a1)", f"(({utype(ct)})a0 + ({utype(ct)})a1)")
    if op == "sub":
        return None if b else wrapping(ct, "(a0 - a1)", f"(({utype(ct)})a0 - ({utype(ct)})a1)")
    if op == "mul":
        return "(a0 & a1)" if b else wrapping(ct, "(a0 * a1)", f"(({utype(ct)})a0 * ({utype(ct)})a1)")
    if op == "div":
        return "(a0 / a1)" if f else None
    if op == "floor_divide":
        if f:
            return f"ct_fdiv_{ct}(a0, a1)"
        return None if b else f"ct_ifdiv_{ct}(a0, a1)"
    if op == "remainder":
        if f:
            return f"ct_fmod_{ct}(a0, a1)"
        return None if b else f"ct_imod_{ct}(a0, a1)"
    if op == "pow":
        return "pow(a0, a1)" if f else (None if b else f"ct_ipow_{ct}(a0, a1)")
    if op == "maximum":
        return "((a0 > a1 || (a0 != a0)) ? a0 : a1)" if f else "(a0 > a1 ? a0 : a1)"
    if op == "minimum":
        return "((a0 < a1 || (a0 != a0)) ? a0 : a1)" if f else "(a0 < a1 ? a0 : a1)"
    cmp = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    if op in cmp:
        return f"(a0 {cmp[op]} a1)"
    if op == "logical_and":
        return "((a0 != 0) && (a1 != 0))"
    if op == "logical_or":
        return "((a0 != 0) || (a1 != 0))"
    if op == "logical_xor":
        return "((a0 != 0) != (a1 != 0))"
    bw = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
    if op in bw:
        return None if f else f"(a0 {bw[op]} a1)"
    if op in _INTEGER_BINARY:
        return None if f or b else _INTEGER_BINARY[op](ct, np.dtype(dt).itemsize * 8)
    return _special_binary(op, f, ct)


# PyTorch's shift counts outside [0, bits): a left shift gives 0, a right shift the sign fill (OpenCL C would take
# the count modulo the width); the shift itself is done unsigned (a signed overflow is undefined in C)
_INTEGER_BINARY = {
    "gcd": lambda ct, w: f"ct_gcd_{ct}(a0, a1)",
    "lcm": lambda ct, w: f"ct_lcm_{ct}(a0, a1)",
    "bitwise_left_shift": lambda ct, w: f"(({ct})((a1 < 0 || a1 >= {w}) ? 0 : (({utype(ct)})a0 << a1)))",
    "bitwise_right_shift": lambda ct, w: (f"(({ct})(a0 >> ((a1 < 0 || a1 >= {w}) ? {w - 1} : a1)))"
                                          if not ct.startswith("u") else f"(a1 >= {w} ? 0 : (a0 >> a1))"),
}


def utype(ct: str) -> str:
    return ct if ct.startswith("u") else "u" + ct


def wrapping(ct: str, plain: str, unsigned: str) -> str:
    """An integer add/sub/mul/neg/abs of int or long computed unsigned, so that it wraps as PyTorch's: a signed
    overflow is undefined in C, and the compiler folded ``(x + 1) > x`` to true inside a fused kernel where the add's
    own kernel stored INT_MAX + 1 = INT_MIN (and took ``abs(x)`` for non-negative where abs(INT_MIN) is INT_MIN).
    (char and short are computed in int: no overflow; floats as they are.)"""
    return f"(({ct}){unsigned})" if ct in ("int", "long") else plain


def _special_binary(op: str, f: bool, ct: str) -> str | None:
    """The special family's binary ops (float only, except fmax/fmin; the core promotes integers to float)."""
    if op in ("fmax", "fmin"):  # NaN-ignoring: the other operand when one is NaN
        return f"{op}(a0, a1)" if f else ("(a0 > a1 ? a0 : a1)" if op == "fmax" else "(a0 < a1 ? a0 : a1)")
    if not f:
        return None
    if op in ("atan2", "hypot", "copysign"):
        return f"{op}(a0, a1)"
    if op == "logaddexp":  # equal infinities give themselves (not inf - inf = nan)
        return "((a0 == a1 && isinf(a0)) ? a0 : fmax(a0, a1) + log1p(exp(-fabs(a0 - a1))))"
    if op == "logaddexp2":
        return f"((a0 == a1 && isinf(a0)) ? a0 : fmax(a0, a1) + log1p(exp2(-fabs(a0 - a1))) * ({ct})M_LOG2E)"
    if op == "xlogy":  # 0 where x == 0 unless y is NaN
        return f"(a1 != a1 ? a1 : (a0 == 0 ? ({ct})0 : a0 * log(a1)))"
    if op == "xlog1py":
        return f"(a1 != a1 ? a1 : (a0 == 0 ? ({ct})0 : a0 * log1p(a1)))"
    raise KeyError(op)


def helpers(dt) -> str:
    """Python-style floor division / modulo and integer powers (as numpy computes them; PyTorch's powi for a
    negative exponent)."""
    ct = ctype(dt)
    if is_float(dt):
        return (fastmath.float_src() if ct == "float" else "") + f"""
inline {ct} ct_fmod_{ct}({ct} a, {ct} b) {{
  {ct} m = fmod(a, b);
  if (m != 0 && (b < 0) != (m < 0)) m += b;  // an exact multiple keeps fmod's zero (the dividend's sign)
  return m;
}}
inline {ct} ct_fdiv_{ct}({ct} a, {ct} b) {{
  if (b == 0) return a / b;
  {ct} m = fmod(a, b);
  {ct} d = (a - m) / b;
  if (m != 0) {{ if ((b < 0) != (m < 0)) d -= 1; }}
  {ct} fd;
  if (d != 0) {{ fd = floor(d); if (d - fd > ({ct})0.5) fd += 1; }} else fd = copysign(({ct})0, a / b);
  return fd;
}}
"""
    if np.dtype(dt) == np.bool_:
        return ""
    # Never a trap (PoCL's x / 0 and INT_MIN / -1 raise SIGFPE on x86) nor an endless loop: the core's device-side
    # check ('check_values') reports a zero divisor at the next host read, so these run on such operands and give
    # some value meanwhile: 0 for a zero divisor.  A negative exponent is valid (PyTorch's powi, no check): the
    # truncated integral result, 1 ** -n == 1, (-1) ** -n == -1 for odd n else 1, any other base 0.
    # x // -1 is the wrapping negation (numpy's INT_MIN // -1 == INT_MIN); powers are computed unsigned (wrapping).
    signed = np.dtype(dt).kind == "i"
    ut = "ulong" if ct == "long" else "uint"
    neg1_div = f"\n  if (b == -1) return ({ct})(0 - ({ut})a);" if signed else ""
    neg1_mod = " || b == -1" if signed else ""
    neg_pow = "\n  if (e < 0) return a == 1 ? 1 : (a == -1 ? ((e & 1) ? -1 : 1) : 0);" if signed else ""
    return f"""
inline {ct} ct_ifdiv_{ct}({ct} a, {ct} b) {{
  if (b == 0) return 0;{neg1_div}
  {ct} q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}}
inline {ct} ct_imod_{ct}({ct} a, {ct} b) {{
  if (b == 0{neg1_mod}) return 0;
  {ct} r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}}
inline {ct} ct_ipow_{ct}({ct} a, {ct} e) {{{neg_pow}
  {ut} r = 1, x = ({ut})a;
  while (e > 0) {{ if (e & 1) r *= x; x *= x; e >>= 1; }}
  return ({ct})r;
}}
""" + _gcd_src(ct, signed)


def _gcd_src(ct: str, signed: bool) -> str:
    """PyTorch's calc_gcd: |a| and |b| stored back in the type (|INT_MIN| wraps to INT_MIN), then Euclid with C's
    truncating remainder (a INT_MIN operand can give a negative gcd, as PyTorch's: gcd(char -128, 96) = -32; the
    remainders never meet INT_MIN % -1), and lcm = |a / gcd * b| as PyTorch's: computed in int for 8/16-bit types
    (exact, then wrapped), with a wrapping product for wider ones (INT_MIN / -1 wraps here where PyTorch traps)."""
    u = utype(ct)
    mag = (lambda v: f"({v} < 0 ? ({u})0 - ({u}){v} : ({u}){v})") if signed else (lambda v: v)
    if ct in ("char", "uchar", "short", "ushort"):
        lcm = "  int p = ((int)a / (int)g) * (int)b;\n  return (" + ct + ")(p < 0 ? -p : p);"
    else:
        q = f"(g == -1 ? ({ct})(({u})0 - ({u})a) : a / g)" if signed else "a / g"
        lcm = f"  {ct} p = ({ct})(({u}){q} * ({u})b);\n  return ({ct}){mag('p')};"
    return f"""inline {ct} ct_gcd_{ct}({ct} a, {ct} b) {{
  a = ({ct}){mag("a")}; b = ({ct}){mag("b")};
  while (a != 0) {{ {ct} c = a; a = b % a; b = c; }}
  return b;
}}
inline {ct} ct_lcm_{ct}({ct} a, {ct} b) {{
  {ct} g = ct_gcd_{ct}(a, b);
  if (g == 0) return 0;
{lcm}
}}
"""


# ---------------------------------------------------------------------------------------------
# index decoding
# ---------------------------------------------------------------------------------------------
def decode(nd: int, var: str = "g", dims: str = "d", prefix: str = "i") -> str:
    """long i0..i{nd-1} from a linear C-order index (dims d0..d{nd-1} are kernel arguments)."""
    if nd == 0:
        return ""
    lines = [f"long r_ = {var};"]
    for k in range(nd - 1, 0, -1):
        lines.append(f"long {prefix}{k} = r_ % {dims}{k}; r_ /= {dims}{k};")
    lines.append(f"long {prefix}0 = r_;")
    return " ".join(lines)


def offset(nd: int, strides: str, prefix: str = "i") -> str:
    return " + ".join(f"{prefix}{k} * {strides}{k}" for k in range(nd)) or "0"


def elementwise_kernel(kname: str, expr: str, out_dt, operands, layouts, nd: int) -> str:
    """operands: list of (dtype, is_scalar); layouts: one "c"/"s"/"r" per array operand (output first).  "r"
    is a row broadcast (a vector of the last dim repeated over rows, a bias): such a kernel runs on a 2-D range
    (last dim, rows), so both operands are read contiguously with no index arithmetic per element."""
    args = [f"__global {stype(out_dt)}* o", "long oo"]
    if layouts[0] == "s":
        args += [f"long os{k}" for k in range(nd)]
    body = []
    li = 1
    for j, (dt, scalar) in enumerate(operands):
        if scalar:
            args.append(f"{ctype(dt)} a{j}")
            continue
        args += [f"__global const {stype(dt)}* p{j}", f"long po{j}"]
        if layouts[li] == "s":
            args += [f"long ps{j}_{k}" for k in range(nd)]
            idx = f"po{j} + " + offset(nd, f"ps{j}_")
        elif layouts[li] == "r":
            idx = f"po{j} + i_"
        else:
            idx = f"po{j} + g"
        body.append(f"{ctype(dt)} a{j} = {load(dt, f'p{j}', idx)};")
        li += 1
    args.append("long n")
    if "r" in layouts:
        args.append("long rc")
        return (f"__kernel void {kname}({', '.join(args)}) {{\n  long i_ = get_global_id(0); if (i_ >= rc) return;\n"
                "  long g = (long)get_global_id(1) * rc + i_;\n  " + "\n  ".join(body) +
                f"\n  {store(out_dt, 'o', 'oo + g', expr)}\n}}\n")
    strided = "s" in layouts
    if strided:
        args += [f"long d{k}" for k in range(nd)]
    oidx = "oo + " + (offset(nd, "os") if layouts[0] == "s" else "g")
    return (f"__kernel void {kname}({', '.join(args)}) {{\n  long g = get_global_id(0); if (g >= n) return;\n"
            f"  {decode(nd) if strided else ''}\n  " + "\n  ".join(body) +
            f"\n  {store(out_dt, 'o', oidx, expr)}\n}}\n")


SUM_BLOCK = 16  # values a work-item adds plainly before adding their sum to its total with kahan_step


def kahan_step(t: str, acc: str, c: str, v: str) -> str:
    """C statements adding ``v`` to the float sum ``acc`` with Kahan's compensation ``c`` (both of type ``t``, scalar
    or vector).  A work-item adds thousands of values in a row (a whole row of a (300, 20000) sum, a chunk of ~1000
    of a long vector); plainly added, float32 drifts by up to K/2 ulp (0.1 added 20000 times: 1999.66), where
    PyTorch's cascade sums are a few ulp off.  The kernels add SUM_BLOCK values plainly and the block's sum with this
    step: within a few ulp whatever K, at a plain loop's speed (every value compensated: 10x slower on PoCL).  The
    compensation is dropped (0) once the sum is not finite, so inf and NaN propagate as in a plain sum (inf - inf
    would make it NaN)."""
    return (f"{{ {t} y_ = {v} - {c}; {t} t_ = {acc} + y_; {c} = isfinite(t_) ? (t_ - {acc}) - y_ : ({t})(0); "
            f"{acc} = t_; }}")
