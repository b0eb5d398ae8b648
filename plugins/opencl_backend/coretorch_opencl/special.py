"""OpenCL kernels of the elementwise math and special functions primitives (see coretorch.plugins.KERNELS).

The cheap ones (tan, asin, ..., erfc, lgamma, atan2, hypot, ...) are OpenCL C builtins in the shared elementwise
program (codegen.unary_expr / binary_expr).  The costly special functions live here, in a program of their own per
dtype (so that the elementwise program every op builds stays small), one kernel each, reading their operand in place
at any strides (up to 4 collapsed dims; more are copied first).  Algorithms (our own implementations of standard
methods, in the compute type: float for float16/float32, double for float64):

* digamma: reflection psi(x) = psi(1 - x) - pi cot(pi x) for x < 0, the recurrence psi(x) = psi(x + 1) - 1/x up to
  x >= 10, then the asymptotic series ln x - 1/(2x) - sum B_2k / (2k x^2k) (Bernoulli numbers);
* polygamma(n >= 1, x) = (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta by direct summation of the first terms and
  the Euler-Maclaurin tail (coefficients (2j)! / B_2j computed exactly below);
* erfinv: erfinv(y) / y fitted in w = -log(1 - y^2) (two polynomials, ``_erfinv_fit``): final in float, one Halley
  step on erf (|y| <= 1/2) or erfc (1 - |y| is exact) in float64;
* ndtri: the same fit from z = 2 min(p, 1 - p) for z >= 3e-8; beyond (and erfinv within 3e-8 of +-1 in float64) a
  closed-form first guess (Winitzki's approximation) refined by Halley steps on erfc until converged;
* i0, i0e, i1, i1e: the power series (positive terms) up to |x| = 20 (float: 9), the asymptotic expansion
  e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) / x^k beyond;
* erfcx: exp(x^2) erfc(x) (x^2 split exactly with fma) below 5, the Laplace continued fraction above;
* log_ndtr: log1p(-erfc(x / sqrt 2) / 2) for x > 0, log(erfc(-x / sqrt 2) / 2) on [-1, 0], and
  log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1 (no underflow);
* igamma / igammac (regularised incomplete gamma P, Q): the power series of P for x <= max(a, 1), the Legendre
  continued fraction of Q beyond (Cephes' igam/igamc layout); Q for x <= 1.1 and small a by Cephes' igamc series
  (1 - P lost Q's digits where P is close to 1: Q(1e-10, 0.5) in float32 was 7e-7 for 5.6e-11); the prefactor
  x^a e^-x / Gamma(a) as a (log1p(t) - t) + log(a) / 2 - log(2 pi) / 2 - (Stirling's correction) with t = x / a - 1
  for a >= 10 and |x - a| <= 0.4 a, so that it keeps float accuracy for large a (the direct a log x - x - lgamma(a)
  cancels), and below a = 10 the series' as exp(a log x - x - lgamma(1 + a)), lgamma(1 + a) by its Taylor series
  near 0; iterations stop at convergence or 100000 terms; above a = 1e6 (float: 1e4) Temme's uniform asymptotic
  expansion (two terms, DLMF 8.12: the series and fraction need ~sqrt(a) terms near x = a, and gave 0.34 for
  P(1e10, 1e10));
* erf and GELU in float (float32, float16): ``fastmath``'s ct_erf_f / ct_ndtr_f (PoCL's builtins are slow calls
  there: benchmarks/results.md); float64 keeps the builtins.
"""
from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from math import factorial

import numpy as np

from . import codegen as cg
from . import fastmath
from .layout import _collapse, _desc, _is_c, _pad

_I32 = np.dtype(np.int32)
_FLOAT_CT = (np.dtype(np.float32), np.dtype(np.float16))   # dtypes computed in float
_I64 = np.dtype(np.int64)


def _bernoulli(n: int) -> list:
    """B_0..B_n exactly (Akiyama-Tanigawa)."""
    a, out = [Fraction(0)] * (n + 1), []
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    return out  # B_1 = +1/2 with this recurrence; only even indices are used


_B = _bernoulli(26)
_ZETA_A = [float(Fraction(factorial(2 * j)) / _B[2 * j]) for j in range(1, 13)]   # (2j)! / B_2j
_PSI_C = [float(_B[2 * k] / (2 * k)) for k in range(1, 8)]                         # B_2k / (2k)

# {T}: the compute type; {EPS}: its epsilon; the loop bounds differ for float (fewer terms suffice)
_SRC = """
#define F(v) (({T})(v))
{T} sp_digamma({T} x) {{
  if (x != x || x == INFINITY) return x;
  {T} r = 0;
  if (x <= 0) {{
    if (x == floor(x)) return x == 0 ? copysign(F(INFINITY), -x) : F(NAN);
    r = -F(M_PI) * cospi(x) / sinpi(x);   /* psi(x) = psi(1 - x) - pi cot(pi x) */
    x = 1 - x;
  }}
  while (x < F(10)) {{ r -= 1 / x; x += 1; }}
  {T} z = 1 / (x * x);
  {T} s = {PSI_POLY};
  return r + log(x) - F(0.5) / x - s;
}}

{T} sp_zeta({T} s, {T} q) {{   /* Hurwitz zeta(s, q), s > 1 an integer here (polygamma) */
  if (q <= 0 && q == floor(q)) return F(INFINITY);
  if (q == INFINITY) return 0;
  {T} sum = pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= F(9)) {{
    i += 1; a += 1; b = pow(a, -s); sum += b;
    if (fabs(b / sum) < F({EPS})) return sum;
  }}
  {T} w = a, k = 0, t;
  sum += b * w / (s - 1);
  sum -= F(0.5) * b;
  a = 1;
  {ZETA_TAIL}
  return sum;
}}

{T} sp_polygamma(int n, {T} x) {{
  if (n == 0) return sp_digamma(x);
  {T} f = 1;
  for (int j = 2; j <= n; ++j) f *= j;
  {T} z = sp_zeta(F(n + 1), x);
  return (n & 1) ? f * z : -f * z;
}}

{T} sp_erfcx({T} x);

{T} sp_erfcinv_pos({T} z) {{   /* x >= 0 with erfc(x) = z, 0 < z <= 1 */
  if (z >= F(3e-8)) {{   /* within the fit (see sp_erfinv), from z itself: no 1 - y rounding in the tail */
    {T} w = -log(z * (F(2) - z));
    {T} x = (1 - z) * (w < F(5) ? {FIT1} : {FIT2});
    {HALLEY_ERFC}
    return x;
  }}
  {T} t = log(z * (F(2) - z));
  {T} b = F(4.3307467508162) + F(0.5) * t;   /* 2 / (pi a) + t / 2, a = 0.147 */
  {T} x = sqrt(sqrt(b * b - t / F(0.147)) - b);
  if (z < F({TINY})) {{   /* erfc(x) near the subnormals (a few bits): Newton on log erfc(x) = log erfcx(x) - x^2 */
    {T} lz = log(z);
    for (int i = 0; i < 8; ++i) {{
      {T} ex = sp_erfcx(x), d = (log(ex) - x * x - lz) * ex * F(-0.88622692545275801365);   /* / (-2 / sqrt pi / ex) */
      x -= d;
      if (fabs(d) <= F({EPS}) * x) break;
    }}
    return x;
  }}
  for (int i = 0; i < 4; ++i) {{   /* Halley: cubic; a step below TOL leaves an error below TOL^3 */
    {T} f = erfc(x) - z, d = f / (-F(M_2_SQRTPI) * exp(-x * x) + x * f);
    x -= d;
    if (fabs(d) <= F({TOL}) * x) break;
  }}
  return x;
}}

{T} sp_erfinv({T} y) {{
  if (y != y) return y;
  {T} ay = fabs(y);
  if (ay > 1) return F(NAN);
  if (ay == 1) return copysign(F(INFINITY), y);
  if (ay >= F(0.99999997)) return copysign(sp_erfcinv_pos(1 - ay), y);   /* double only: beyond the fit */
  {T} w = -log((1 - ay) * (1 + ay));   /* the fit: erfinv(y) / y in w = -log(1 - y^2) (float: final) */
  {T} x = ay * (w < F(5) ? {FIT1} : {FIT2});
  {HALLEY}
  return copysign(x, y);
}}

{T} sp_ndtri({T} p) {{   /* ndtri(p) = sqrt(2) erfinv(2p - 1) = -sqrt(2) erfcinv(2p) */
  if (p != p) return p;
  if (p < 0 || p > 1) return F(NAN);
  if (p == 0) return -F(INFINITY);
  if (p == 1) return F(INFINITY);
  if (p >= F(0.25) && p <= F(0.75)) return F(M_SQRT2) * sp_erfinv(2 * p - 1);
  if (p < F(0.5)) return -F(M_SQRT2) * sp_erfcinv_pos(2 * p);
  return F(M_SQRT2) * sp_erfcinv_pos(2 * (1 - p));
}}

{T} sp_erfcx({T} x) {{
  if (x != x) return x;
  if (x < F(5)) {{
    {T} h = x * x, l = fma(x, x, -h);   /* x^2 = h + l exactly */
    if (h > F(1e4)) return F(INFINITY);   /* (exp(h) is inf; l may reach -ulp(h) / 2 there: 1 + l was < 0 for -1e10) */
    return exp(h) * (1 + l) * erfc(x);
  }}
  {T} t = x;
  for (int k = {CF_TERMS}; k > 0; --k) t = x + F(0.5) * k / t;
  return F(M_2_SQRTPI) * F(0.5) / t;
}}

{T} sp_log_ndtr({T} x) {{
  if (x > 0) return log1p(F(-0.5) * erfc(x * F(M_SQRT1_2)));
  if (x >= -1) return log(F(0.5) * erfc(-x * F(M_SQRT1_2)));
  return log(F(0.5) * sp_erfcx(-x * F(M_SQRT1_2))) - F(0.5) * x * x;
}}

{T} sp_log1pmx({T} t) {{   /* log1p(t) - t; log1p(t) = 2 atanh(u), u = t / (2 + t), and t - 2u = u t */
  if (fabs(t) >= F(0.5)) return log1p(t) - t;
  {T} u = t / (2 + t), u2 = u * u, p = u * u2, s = 0;
  for (int k = 3; k < 80; k += 2) {{
    {T} term = p / F(k);
    s += term;
    if (fabs(term) <= fabs(s) * F({EPS})) break;
    p *= u2;
  }}
  return 2 * s - u * t;
}}

{T} sp_lgam1p({T} a) {{   /* lgamma(1 + a); for |a| < 0.2 its Taylor series (1 + a loses a's digits) */
  if (fabs(a) >= F(0.2)) return lgamma(1 + a);
  return a * ({LGAM1P_POLY});
}}

{T} sp_igam_logfac({T} a, {T} x) {{   /* log(x^a e^-x / Gamma(a)) */
  if (a < F(10) || fabs(x - a) > F(0.4) * a) return a * log(x) - x - lgamma(a);   /* (Cephes' igam_fac's split:
     log1p((x - a) / a) lost x / a's digits for x << a: P(19.6, 1.4e-11) was 2e-3 off) */
  {T} z = 1 / (a * a);
  {T} corr = (F(1.0 / 12) + z * (F(-1.0 / 360) + z * (F(1.0 / 1260) + z * F(-1.0 / 1680)))) / a;
  return a * sp_log1pmx((x - a) / a) + F(0.5) * log(a) - F(0.91893853320467274178) - corr;
}}

{T} sp_igam_series({T} a, {T} x) {{   /* P(a, x) by its power series (x <= max(a, 1)) */
  /* the prefactor x^a e^-x / Gamma(a + 1); below a = 10 as exp(a log x - x - lgamma(1 + a)): with lgamma(a) and a
     division by a, exp's argument carried log(a)'s rounding (float P(1e-10, 0.5) was 1 + 7e-7) */
  {T} lf = a < F(10) ? a * log(x) - x - sp_lgam1p(a) : sp_igam_logfac(a, x) - log(a);
  if (lf < F({MINLOG})) return 0;
  {T} r = a, c = 1, s = 1;
  for (int i = 0; i < 100000; ++i) {{
    r += 1; c *= x / r; s += c;
    if (c <= s * F({EPS})) break;
  }}
  return s * exp(lf);
}}

{T} sp_igamc_cf({T} a, {T} x) {{   /* Q(a, x) by its continued fraction (x > max(a, 1)) */
  {T} lf = sp_igam_logfac(a, x);
  if (lf < F({MINLOG})) return 0;
  {T} y = 1 - a, z = x + y + 1, c = 0;
  {T} pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x, ans = pkm1 / qkm1, t;
  for (int i = 0; i < 100000; ++i) {{
    c += 1; y += 1; z += 2;
    {T} yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    if (qk != 0) {{ {T} r = pk / qk; t = fabs((ans - r) / r); ans = r; }} else t = 1;
    pkm2 = pkm1; pkm1 = pk; qkm2 = qkm1; qkm1 = qk;
    if (fabs(pk) > F({BIG})) {{ pkm2 *= F({BIGINV}); pkm1 *= F({BIGINV}); qkm2 *= F({BIGINV}); qkm1 *= F({BIGINV}); }}
    if (t <= F({EPS})) break;
  }}
  return ans * exp(lf);
}}

{T} sp_igamc_series({T} a, {T} x) {{   /* Q(a, x) for x <= 1.1 and small a (Cephes' igamc_series): no 1 - P */
  {T} fac = 1, sum = 0;
  for (int n = 1; n < 2000; ++n) {{
    fac *= -x / F(n);
    {T} term = fac / (a + F(n));
    sum += term;
    if (fabs(term) <= F({EPS}) * fabs(sum)) break;
  }}
  {T} lx = log(x);
  {T} e = a * lx - sp_lgam1p(a);   /* x^a / Gamma(1 + a); x^a / Gamma(a) = a times it */
  return -expm1(e) - a * exp(e) * sum;
}}

{T} sp_igam_asy({T} a, {T} x, int upper) {{   /* Q (upper) or P for large a: Temme's uniform expansion */
  /* Q = erfc(eta sqrt(a / 2)) / 2 + R, P = erfc(-eta sqrt(a / 2)) / 2 - R, R = exp(-a eta^2 / 2) / sqrt(2 pi a)
     (c0(eta) + c1(eta) / a) with t = x / a - 1, eta = sign(t) sqrt(-2 log1pmx(t)) (DLMF 8.12); c2 / a^2 is below
     1e-15 of the result from a = 1e6 on (float: 1e4, below 1e-10); c0 and c1 by their Taylor series in eta near 0
     (cancellation) */
  {T} t = (x - a) / a;
  {T} eta = sqrt(-2 * sp_log1pmx(t));
  if (t < 0) eta = -eta;
  {T} c0 = fabs(eta) < F(0.01)
      ? F(-1.0 / 3) + eta * (F(1.0 / 12) + eta * (F(-2.0 / 135) + eta * (F(1.0 / 864) + eta * (F(1.0 / 2835)
        + eta * F(-1.7875514403292181e-4)))))
      : 1 / t - 1 / eta;
  {T} c1 = fabs(eta) < F(0.5)
      ? F(-1.0 / 540) + eta * (F(-1.0 / 288) + eta * (F(1.0 / 378) + eta * (F(-9.9022633744855967e-4)
        + eta * F(2.0576131687242798e-4))))
      : 1 / (eta * eta * eta) - 1 / (t * t * t) - 1 / (t * t) - 1 / (12 * t);
  {T} r = exp(F(-0.5) * a * eta * eta) / sqrt(F(6.283185307179586) * a) * (c0 + c1 / a);
  {T} e = F(0.5) * erfc((upper ? eta : -eta) * sqrt(F(0.5) * a));
  return upper ? e + r : e - r;
}}

{T} sp_igamma({T} a, {T} x) {{
  if (a != a || x != x) return a + x;
  if (a < 0 || x < 0) return F(NAN);
  if (a == 0) return x > 0 ? F(1) : F(NAN);
  if (x == 0) return 0;
  if (isinf(a)) return isinf(x) ? F(NAN) : F(0);
  if (isinf(x)) return 1;
  if (a > F({IGAM_ASY})) return fmin(fmax(sp_igam_asy(a, x, 0), F(0)), F(1));   /* (the series: ~sqrt(a) terms) */
  if (x > 1 && x > a) return 1 - sp_igamc_cf(a, x);
  return fmin(sp_igam_series(a, x), F(1));   /* (the prefactor's rounding could reach 1 + ulp) */
}}

{T} sp_igammac({T} a, {T} x) {{
  if (a != a || x != x) return a + x;
  if (a < 0 || x < 0) return F(NAN);
  if (a == 0) return x > 0 ? F(0) : F(NAN);
  if (x == 0) return 1;
  if (isinf(a)) return isinf(x) ? F(NAN) : F(1);
  if (isinf(x)) return 0;
  if (a > F({IGAM_ASY})) return fmin(fmax(sp_igam_asy(a, x, 1), F(0)), F(1));
  if (x > F(1.1)) return x < a ? 1 - sp_igam_series(a, x) : sp_igamc_cf(a, x);
  /* (Cephes' choice, as PyTorch's: 1 - P only where P is not close to 1) */
  if (x <= F(0.5) ? F(-0.4) / log(x) < a : x * F(1.1) < a) return 1 - sp_igam_series(a, x);
  return sp_igamc_series(a, x);
}}

/* scaled modified Bessel functions of order nu = 0, 1 (exp(-|x|) I_nu(|x|), x >= 0) */
{T} sp_ie_pos(int nu, {T} x) {{
  if (x > F({ASYM})) {{
    {T} r = 1 / (F(8) * x), term = 1, s = 1, m = F(4 * nu * nu);
    for (int k = 1; k < 80; ++k) {{
      {T} d = F(2 * k - 1);
      term *= (m - d * d) * r / F(k) * F(-1);
      s += term;
      if (fabs(term) < s * F({EPS})) break;
    }}
    return s * rsqrt(x) * F(0.39894228040143267794);   /* (1 / sqrt(2 pi x): 2 pi x overflows past max / 6.3) */
  }}
  {T} q = F(0.25) * x * x, term = 1, s = 1;
  for (int k = 1; k < 200; ++k) {{
    term *= q / (F(k) * F(k + nu));
    s += term;
    if (term < s * F({EPS})) break;
  }}
  return (nu ? F(0.5) * x * s : s) * exp(-x);
}}

{T} sp_i0e({T} x) {{ return x != x ? x : sp_ie_pos(0, fabs(x)); }}
{T} sp_i1e({T} x) {{ return x != x ? x : copysign(sp_ie_pos(1, fabs(x)), x); }}
{T} sp_iexp({T} v, {T} ax) {{   /* v * exp(ax) without overflowing early: exp(ax / 2) twice */
  {T} h = exp(F(0.5) * ax);
  return v * h * h;
}}
{T} sp_i0({T} x) {{ return x != x ? x : sp_iexp(sp_ie_pos(0, fabs(x)), fabs(x)); }}
{T} sp_i1({T} x) {{ return x != x ? x : copysign(sp_iexp(sp_ie_pos(1, fabs(x)), fabs(x)), x); }}
"""

UNARY = ("erfinv", "digamma", "i0", "i0e", "i1", "i1e", "ndtri", "erfcx", "log_ndtr")
BINARY = ("igamma", "igammac")   # (a, x) of one dtype and shape (the core expands broadcast operands)


@lru_cache(maxsize=None)
def _erfinv_fit() -> tuple:
    """erfinv(y) / y as polynomials (degree 9) in w - 2.5 (w = -log(1 - y^2) < 5) and sqrt(w) - 3 (5 <= w <= 17.5,
    i.e. |y| < 1 - 3e-8): least-squares fits to x / erf(x) (math.erf, math.erfc), as Giles' single-precision
    erfinv is built.  ~3 ulp in float; float64 refines the fit by one Halley step."""
    x = np.concatenate([np.geomspace(1e-6, 0.1, 300), np.linspace(0.1, 6.0, 6000)])
    y, z = np.vectorize(math.erf)(x), np.vectorize(math.erfc)(x)
    w = -np.log(z * (1 + y))
    f = x / y
    m1, m2 = w <= 5.2, (w >= 4.8) & (w <= 17.5)
    c1 = np.polynomial.polynomial.polyfit(w[m1] - 2.5, f[m1], 9, w=1 / f[m1])
    c2 = np.polynomial.polynomial.polyfit(np.sqrt(w[m2]) - 3, f[m2], 9, w=1 / f[m2])
    return tuple(float(c) for c in c1), tuple(float(c) for c in c2)


@lru_cache(maxsize=None)
def _lgam1p_taylor() -> tuple:
    """lgamma(1 + a) / a = -gamma + sum_k>=2 (-1)^k zeta(k) / k a^(k-1): the coefficients up to a^23 (|a| < 0.2:
    the tail is below 1e-18 of the sum); zeta(k) = sum_n<=N n^-k + Euler-Maclaurin's tail."""
    n = 1000
    zeta = [math.fsum([m ** -float(k) for m in range(1, n + 1)] + [n ** (1.0 - k) / (k - 1), -0.5 * n ** -float(k),
                                                                   k * n ** (-1.0 - k) / 12]) for k in range(2, 25)]
    return (-0.57721566490153286061,) + tuple((-1) ** k * z / k for k, z in zip(range(2, 25), zeta))


def _horner(c, v: str) -> str:
    e = f"F({c[-1]!r})"
    for a in c[-2::-1]:
        e = f"fma({e}, {v}, F({a!r}))"
    return e


_HALLEY = """if (ay <= F(0.5)) {{ {T} f = erf(x) - ay; x -= f / (F(M_2_SQRTPI) * exp(-x * x) + x * f); }}
  else {{ {T} f = erfc(x) - (1 - ay); x -= f / (-F(M_2_SQRTPI) * exp(-x * x) + x * f); }}"""


def _helpers(dt) -> str:
    ct = cg.ctype(dt)
    double = ct == "double"
    psi = "0"
    for c in reversed(_PSI_C):   # sum_k B_2k / (2k) z^k, Horner in z = 1/x^2
        psi = f"z * (F({c!r}) + {psi})"
    tail = []
    for i, a in enumerate(_ZETA_A if double else _ZETA_A[:6]):
        tail.append(f"a *= s + k; b /= w; t = a * b / F({a!r}); sum += t; if (fabs(t / sum) < F({{EPS}})) "
                    f"return sum; k += 1; a *= s + k; b /= w; k += 1;")
    c1, c2 = _erfinv_fit()
    src = _SRC.replace("{ZETA_TAIL}", "\n  ".join(tail)).replace("{PSI_POLY}", psi)
    src = src.replace("{FIT1}", _horner(c1, "(w - F(2.5))")).replace("{FIT2}", _horner(c2, "(sqrt(w) - F(3))"))
    src = src.replace("{HALLEY}", _HALLEY if double else "").replace("{LGAM1P_POLY}", _horner(_lgam1p_taylor(), "a"))
    src = src.replace("{HALLEY_ERFC}", "{T} f = erfc(x) - z; x -= f / (-F(M_2_SQRTPI) * exp(-x * x) + x * f);"
                      if double else "")
    return src.format(T=ct, EPS="2.220446049250313e-16" if double else "5.96e-08", TOL="1e-7" if double else "1e-3",
                      TINY="1e-290" if double else "1e-30", IGAM_ASY="1e6" if double else "1e4",
                      CF_TERMS=40 if double else 16, ASYM=20 if double else 9, MINLOG=-745.0 if double else -103.0,
                      BIG="4.503599627370496e15" if double else "16777216.0",
                      BIGINV="2.220446049250313e-16" if double else "5.9604645e-08")


def _program(dt) -> str:
    """Every kernel of this module for dtype ``dt``: a contiguous ("_c") and a strided ("_s", 4 dims) variant of the
    unary functions, the binary ones, ldexp and polygamma, and frexp."""
    ct, st = cg.ctype(dt), cg.stype(dt)
    parts = [_helpers(dt)]
    names: tuple[str, ...] = UNARY + ("gelu",)
    exprs = {"gelu": "a0 * F(0.5) * erfc(-a0 * F(M_SQRT1_2))"}   # x Phi(x)
    if ct == "float":   # erf and Phi written out (fastmath): PoCL's float erf/erfc builtins are slow library calls
        parts.insert(0, fastmath.float_src())
        names += ("erf",)
        exprs = {"erf": "ct_erf_f(a0)", "gelu": "ct_gelu_f(a0)"}
    for name in names:
        for lay, nd, sfx in (("c", 0, "_c"), ("s", 4, "_s")):
            expr = exprs.get(name, f"sp_{name}(a0)")
            parts.append(cg.elementwise_kernel(name + sfx, expr, dt, [(dt, False)], ("c", lay), nd))
    for name in BINARY:
        for lay, nd, sfx in (("c", 0, "_c"), ("s", 4, "_s")):
            parts.append(cg.elementwise_kernel(name + sfx, f"sp_{name}(a0, a1)", dt, [(dt, False), (dt, False)],
                                               ("c", lay, lay), nd))
    for lay, nd, sfx in (("c", 0, "_c"), ("s", 4, "_s")):
        parts.append(cg.elementwise_kernel("ldexp" + sfx, "ldexp(a0, a1)", dt, [(dt, False), (_I32, False)],
                                           ("c", lay, lay), nd))
    for lay, nd, sfx in (("c", 0, "_c"), ("s", 4, "_s")):
        parts.append(cg.elementwise_kernel("polygamma" + sfx, "sp_polygamma((int)a1, a0)", dt,
                                           [(dt, False), (_I64, True)], ("c", lay), nd))
    parts.append(f"""
__kernel void frexp_k(__global {st}* m, __global int* e, __global const {st}* x, long xo, long n) {{
  long g = get_global_id(0); if (g >= n) return;
  {ct} v = {cg.load(dt, 'x', 'xo + g')};
  int ex = 0;
  {ct} r = frexp(v, &ex);
  if (isinf(v) || v != v) {{ r = v; ex = 0; }}
  {cg.store(dt, 'm', 'g', 'r')}
  e[g] = ex;
}}
""")
    return "\n".join(parts)


def kernels(k) -> dict:
    """The primitives of this family for one device; ``k`` is the device's kernel set (backend._Kernels)."""
    dev = k.dev

    def kernel(dt, name):
        return dev.kernel(("special", dt.str), name, lambda: _program(dt))

    def check(name, dt):
        if not cg.is_float(dt):
            raise RuntimeError(f"\"{name}\" is not implemented for {dt} on device 'opencl'")

    def run(name, x, scalars=()):
        """out = name(x, *scalars), contiguous, reading x in place (any strides up to 4 collapsed dims)."""
        dt = x.dtype
        check(name, dt)
        out = k._out(x.shape, dt)
        n = out.size
        if n == 0:
            return out
        buf, off, shape, xst = _desc(x)
        if _is_c(shape, xst):
            dev.launch(kernel(dt, name + "_c"), n, [out.base_data, 0, buf, off, *scalars, n])
            return out
        dims, (sts,) = _collapse(shape, [xst])
        if len(dims) > 4:
            return run(name, k.contiguous(x), scalars)
        dims, sts, _ = _pad(dims, sts)
        dev.launch(kernel(dt, name + "_s"), n, [out.base_data, 0, buf, off, *sts, *scalars, n, *dims])
        return out

    def unary(name):
        return lambda x: run(name, x)

    def binary(name):
        def k2(a, x):
            """out = name(a, x), a and x of one shape (either may be a broadcast view), read in place (ldexp: x
            int32)."""
            check(name, a.dtype)
            out = k._out(a.shape, a.dtype)
            n = out.size
            if n == 0:
                return out
            ba, oa, shape, sa = _desc(a)
            bx, ox, _, sx = _desc(x)
            if _is_c(shape, sa) and _is_c(shape, sx):
                dev.launch(kernel(a.dtype, name + "_c"), n, [out.base_data, 0, ba, oa, bx, ox, n])
                return out
            dims, (ca, cx) = _collapse(shape, [sa, sx])
            if len(dims) > 4:
                return k2(k.contiguous(a), k.contiguous(x))
            cx = _pad(dims, cx)[1]
            dims, ca, _ = _pad(dims, ca)
            dev.launch(kernel(a.dtype, name + "_s"), n, [out.base_data, 0, ba, oa, *ca, bx, ox, *cx, n, *dims])
            return out
        return k2

    def frexp(x):
        dt = x.dtype
        if not cg.is_float(dt):
            raise RuntimeError(f"\"frexp\" is not implemented for {dt} on device 'opencl'")
        m, e = k._out(x.shape, dt), k._out(x.shape, _I32)
        if x.size:
            if not _is_c(*_desc(x)[2:]):
                x = k.contiguous(x)
            dev.launch(kernel(dt, "frexp_k"), x.size, [m.base_data, e.base_data, x.base_data,
                                                       x.offset // x.dtype.itemsize, x.size])
        return m, e

    builtin_erf = k.erf   # float64 keeps OpenCL C's erf (as fast as tanh there; the fit is float-accurate only)

    def erf(x):
        return run("erf", x) if x.dtype in _FLOAT_CT else builtin_erf(x)

    t = {name: unary(name) for name in UNARY + ("gelu",)}
    t["erf"] = erf
    t["polygamma"] = lambda x, n: run("polygamma", x, (int(n),))
    t.update({name: binary(name) for name in (*BINARY, "ldexp")})
    t["frexp"] = frexp
    return t
