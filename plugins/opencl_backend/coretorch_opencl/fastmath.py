"""erf, erfc, the normal cdf and tanh in float (float32, float16) written out in OpenCL C, for the elementwise,
special and fused programs.

Why: PoCL's float ``erf``/``erfc`` builtins are scalar library calls that its work-group vectoriser cannot inline
(measured on 524k float32 with a one-line kernel: x*x 0.7 ms, exp 5-8 ms, tanh ~30 ms, erf ~80 ms, erfc ~140 ms;
the GELU backward, erfc + exp, ~200 ms; build options -cl-denorms-are-zero / -cl-fast-relaxed-math and the local
size change none of it).  exp, +, * and a division vectorise (fma, fabs, clamp, copysign are
calls there too: ~2-8 ns each, and a polynomial in fma() ran 40x slower than in * and +), so these use only them:

* |z| <= 1/2: erf(z) = z A(z^2), A a degree-5 polynomial (least-squares fit to erf(z)/z, relative error ~1e-11);
* |z| > 1/2: erfc(|z|) = exp(-z^2) erfcx(|z|), erfcx a degree-9 polynomial in |z| on [1/2, 2] and 1/|z| times one
  in 1/|z| on [2, 10.7] (fit error ~1e-9; erfc underflows to 0 beyond 10.06); z^2 = h + l split exactly (Dekker's
  product) and exp(-z^2) = exp(-h) (1 - l), so that the tail keeps float's relative accuracy (exp(-z*z) alone loses
  z^2 ulps);
  erf = 1 - erfc there (no cancellation: erfc <= 0.48), erfc(-|z|) = 2 - erfc(|z|);
* Phi(x) = erfc(-x / sqrt 2) / 2 with x^2 / 2 split exactly the same way (not the rounded x / sqrt 2 squared), so
  Phi and GELU keep relative accuracy far into the negative tail, where 1 + erf(x / sqrt 2) cancels.
* tanh: x + x^3 T(x^2) (T degree 5) for |x| < 0.625, 1 - 2 / (exp(2|x|) + 1) beyond (the builtin costs 2x exp).

Both sides are computed and one selected (no divergent branch: the vectoriser keeps the loop); a NaN input selects
the small side, which propagates it.  The fits are made here from math.erf / math.erfc (float64).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

_BIG_LO, _SPLIT, _BIG_HI = 0.5, 2.0, 10.7   # the range of |z| of the erfc fits (two pieces, split at 2)
_TANH_LO = 0.625   # tanh: the polynomial below, 1 - 2 / (exp(2|x|) + 1) above (no cancellation: the result >= 0.55)
_Z_MID, _U_MID = (_BIG_LO + _SPLIT) / 2, (1 / _BIG_HI + 1 / _SPLIT) / 2


def _horner(c, v: str) -> str:
    e = f"{float(c[-1])!r}f"
    for a in c[-2::-1]:
        e = f"({e} * {v} + {float(a)!r}f)"
    return e


@lru_cache(maxsize=None)
def _fits() -> tuple:
    """(A, Q1, Q2): erf(z)/z in z^2 on |z| <= 1/2; erfcx(z) in z - 5/4 on [1/2, 2] and z erfcx(z) in 1/z - u_mid
    on [2, 10.7]; weighted least squares at Chebyshev nodes (degree 9: float32 evaluation ~1.5 ulp)."""
    P = np.polynomial.polynomial
    cheb = (np.cos(np.linspace(0.0, np.pi, 600)) + 1) / 2
    s = cheb * _BIG_LO ** 2
    z = np.sqrt(s)
    ya = np.array([math.erf(v) / v if v > 0 else 2 / math.sqrt(math.pi) for v in z])
    a = P.polyfit(s, ya, 5)
    z = _BIG_LO + cheb * (_SPLIT - _BIG_LO)
    y1 = np.array([math.erfc(v) * math.exp(v * v) for v in z])
    q1 = P.polyfit(z - _Z_MID, y1, 9, w=1 / y1)
    u = 1 / _BIG_HI + cheb * (1 / _SPLIT - 1 / _BIG_HI)
    y2 = np.array([math.erfc(1 / v) * math.exp(1 / (v * v)) / v for v in u])
    q2 = P.polyfit(u - _U_MID, y2, 9, w=1 / y2)
    return tuple(a), tuple(q1), tuple(q2)


@lru_cache(maxsize=None)
def _tanh_fit() -> tuple:
    """(tanh(x) - x) / x^3 in s = x^2 on |x| <= 0.625, degree 5 (float32 evaluation ~0.8 ulp)."""
    s = (np.cos(np.linspace(0.0, np.pi, 600)) + 1) / 2 * _TANH_LO ** 2
    y = np.array([(math.tanh(math.sqrt(v)) - math.sqrt(v)) / v ** 1.5 if v > 1e-8 else -1 / 3 + 2 * v / 15 for v in s])
    return tuple(np.polynomial.polynomial.polyfit(s, y, 5))


@lru_cache(maxsize=None)
def float_src() -> str:
    """The OpenCL C helpers (float): ct_erf_f, ct_erfc_f, ct_ndtr_f, ct_gelu_f, ct_tanh_f, and ct_phi_parts_f for
    fused kernels."""
    a, q1, q2 = _fits()
    return f"""
inline float ct_abs_f(float v) {{ return v < 0 ? -v : v; }}   /* fabs, clamp, fma, copysign are calls on PoCL */
inline float ct_sq_lo_f(float a, float h) {{   /* a * a - h exactly for h = a * a rounded (Dekker, no fma) */
  float c = 4097.0f * a, ah = c - (c - a), al = a - ah;
  return ((ah * ah - h) + 2.0f * ah * al) + al * al;
}}
inline float ct_tanh_f(float x) {{   /* NaN and +-inf take the exp side (exp(inf) = inf: +-1) */
  float a = ct_abs_f(x), s = x * x;
  float big = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  float small = x == 0 ? x : x + (x * s) * {_horner(_tanh_fit(), "s")};   /* keeps -0 */
  return a < {_TANH_LO!r}f ? small : (x < 0 ? -big : big);
}}
inline float ct_erf_small_f(float z) {{ float s = z * z; return z * {_horner(a, "s")}; }}   /* |z| <= 1/2 */
inline float ct_erfcx_q_f(float a) {{   /* erfc(a) exp(a^2), 1/2 <= a <= 10.7 */
  float u = 1.0f / a;
  float q1 = {_horner(q1, f"(a - {_Z_MID!r}f)")};
  float q2 = u * {_horner(q2, f"(u - {_U_MID!r}f)")};
  return a > {_SPLIT!r}f ? q2 : q1;
}}
inline float ct_erfc_pos_f(float z) {{   /* erfc(|z|) for |z| >= 1/2 (|z| capped at 10.5: erfc underflows from 10.06) */
  float a = ct_abs_f(z);
  a = a > 10.5f ? 10.5f : (a < 0.5f ? 0.5f : a);
  float h = a * a;
  return exp(-h) * (1.0f - ct_sq_lo_f(a, h)) * ct_erfcx_q_f(a);
}}
inline float ct_erf_f(float z) {{
  float e = ct_erfc_pos_f(z);
  return ct_abs_f(z) > 0.5f ? (z < 0 ? e - 1.0f : 1.0f - e) : ct_erf_small_f(z);
}}
inline float ct_erfc_f(float z) {{
  float e = ct_erfc_pos_f(z);
  return ct_abs_f(z) > 0.5f ? (z < 0 ? 2.0f - e : e) : 1.0f - ct_erf_small_f(z);
}}
/* erfc(|x| / sqrt 2) / 2 = e q with e = exp(-x^2 / 2) (x^2 / 2 split exactly; |x| capped at 15: both underflow
   beyond): returns q, sets e (kept apart so that x Phi(x) is (x q) e, not x times an underflowed Phi) */
inline float ct_phi_parts_f(float x, float* ex) {{
  float a = ct_abs_f(x);
  a = a > 15.0f ? 15.0f : a;
  float hh = a * a;
  *ex = exp(-0.5f * hh) * (1.0f - 0.5f * ct_sq_lo_f(a, hh));
  float z = a * M_SQRT1_2_F;
  return 0.5f * ct_erfcx_q_f(z < 0.5f ? 0.5f : z);
}}
inline float ct_phi_small_f(float x) {{ return 0.5f + 0.5f * ct_erf_small_f(x * M_SQRT1_2_F); }}   /* |x| <= 1/sqrt 2 */
inline float ct_ndtr_from_f(float x, float q, float e) {{   /* Phi(x) from ct_phi_parts_f */
  return ct_abs_f(x) > 0.70710677f ? (x < 0 ? q * e : 1.0f - q * e) : ct_phi_small_f(x);
}}
inline float ct_ndtr_f(float x) {{ float e, q = ct_phi_parts_f(x, &e); return ct_ndtr_from_f(x, q, e); }}
inline float ct_gelu_f(float x) {{   /* x Phi(x) */
  float e, q = ct_phi_parts_f(x, &e);
  return ct_abs_f(x) > 0.70710677f ? (x < 0 ? (x * q) * e : x * (1.0f - q * e)) : x * ct_phi_small_f(x);
}}
"""
