"""Op checks of ``coretorch.nn.functional`` (the same :class:`~coretorch.testing.OpCase` machinery as the core).

``NN_CASES`` compare every functional op with an independent NumPy reference (loops over kernel taps and
output positions, float64 arithmetic cast to the result dtype) and run float64 ``gradcheck`` (and
``gradgradcheck`` where marked).  A backend plugin runs them exactly as the core cases::

    from coretorch.testing import check_backward, check_forward
    from coretorch.testing_nn import NN_CASES
"""
from __future__ import annotations

from typing import Any

import math

import numpy as np

import coretorch
import coretorch.nn.functional as F
from coretorch.testing import Arg, FLOAT_DTYPES, OpCase

__all__ = ["NN_CASES", "NN_REQUIRED_OPS"]
A = Arg


# ---------------------------------------------------------------------------------------------
# NumPy references (float64 inside, cast to the input dtype)
# ---------------------------------------------------------------------------------------------
def _c(r, like):
    return np.asarray(r).astype(like.dtype)


_erf_np = np.vectorize(math.erf, otypes=[np.float64])


def _sig(a):
    return 1.0 / (1.0 + np.exp(-a))


def _softmax(a, d):
    e = np.exp(a - a.max(d, keepdims=True))
    return e / e.sum(d, keepdims=True)


def _log_softmax(a, d):
    z = a - a.max(d, keepdims=True)
    return z - np.log(np.exp(z).sum(d, keepdims=True))


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def np_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct definition: out[n,o,i,j] = sum over c, ki, kj of xp[n, c, i*s + ki*d, j*s + kj*d] w[o, c, ki, kj]."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(padding), _pair(dilation)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * sh:i * sh + dh * (kh - 1) + 1:dh,
                           j * sw:j * sw + dw * (kw - 1) + 1:dw]
                out[:, g * og:(g + 1) * og, i, j] = np.einsum("nckl,ockl->no", patch, w[g * og:(g + 1) * og])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def np_conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Scatter definition: every input pixel adds x * w into the output at i*s - p + ki*d."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    hf, wf = (h - 1) * sh + dh * (kh - 1) + 1 + oph, (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    full = np.zeros((n, cog * groups, hf, wf))
    cg = cin // groups
    for g in range(groups):
        for i in range(h):
            for j in range(wd):
                for ki in range(kh):
                    for kj in range(kw):
                        full[:, g * cog:(g + 1) * cog, i * sh + ki * dh, j * sw + kj * dw] += \
                            x[:, g * cg:(g + 1) * cg, i, j] @ w[g * cg:(g + 1) * cg, :, ki, kj]
    out = full[:, :, ph:hf - ph, pw:wf - pw]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def _pool_out(n, k, s, p, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def np_max_pool2d(x, k, s=None, p=0, d=1, ceil=False):
    (kh, kw), (ph, pw), (dh, dw) = _pair(k), _pair(p), _pair(d)
    sh, sw = _pair(s if s is not None else k)
    n, c, h, w = x.shape
    oh, ow = _pool_out(h, kh, sh, ph, dh, ceil), _pool_out(w, kw, sw, pw, dw, ceil)
    vals, idx = np.zeros((n, c, oh, ow), x.dtype), np.zeros((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            best = np.full((n, c), -np.inf)
            arg = np.zeros((n, c), np.int64)
            for ki in range(kh):
                for kj in range(kw):
                    hh, ww = i * sh - ph + ki * dh, j * sw - pw + kj * dw
                    if 0 <= hh < h and 0 <= ww < w:
                        v = x[:, :, hh, ww]
                        upd = v > best
                        best = np.where(upd, v, best)
                        arg = np.where(upd, hh * w + ww, arg)
            vals[:, :, i, j], idx[:, :, i, j] = best, arg
    return vals, idx


def np_avg_pool2d(x, k, s=None, p=0, ceil=False, count_include_pad=True, divisor_override=None):
    (kh, kw), (ph, pw) = _pair(k), _pair(p)
    sh, sw = _pair(s if s is not None else k)
    n, c, h, w = x.shape
    oh, ow = _pool_out(h, kh, sh, ph, 1, ceil), _pool_out(w, kw, sw, pw, 1, ceil)
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - ph, j * sw - pw
            h1, w1 = min(h0 + kh, h + ph), min(w0 + kw, w + pw)
            size = (h1 - h0) * (w1 - w0)
            h0c, w0c, h1c, w1c = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            tot = x[:, :, h0c:h1c, w0c:w1c].astype(np.float64).sum((2, 3))
            div = divisor_override or (size if count_include_pad else (h1c - h0c) * (w1c - w0c))
            out[:, :, i, j] = tot / div
    return _c(out, x)


def np_adaptive_avg_pool2d(x, os_):
    oh, ow = _pair(os_)
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[..., i, j] = x[..., h0:h1, w0:w1].astype(np.float64).mean((-1, -2))
    return _c(out, x)


def np_interpolate(x, size, mode, align_corners=False, scale=None):
    out = x.astype(np.float64)
    for k, n_out in enumerate(size):
        d = 2 + k
        n_in = x.shape[d]
        sc = 1.0 / scale if scale else n_in / n_out
        if mode == "nearest":
            idx = np.minimum(np.floor(np.arange(n_out) * sc).astype(np.int64), n_in - 1)
            out = np.take(out, idx, axis=d)
            continue
        if align_corners:
            src = np.arange(n_out) * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            src = np.maximum((np.arange(n_out) + 0.5) * sc - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        lam = (src - i0).reshape([-1 if a == d else 1 for a in range(out.ndim)])
        out = np.take(out, i0, axis=d) * (1 - lam) + np.take(out, i1, axis=d) * lam
    return _c(out, x)


def np_batch_norm(x, rm, rv, w, b, training, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shp = (1, -1) + (1,) * (x.ndim - 2)
    xd = x.astype(np.float64)
    if training:
        mean, var = xd.mean(axes, keepdims=True), xd.var(axes, keepdims=True)
    else:
        mean, var = rm.reshape(shp), rv.reshape(shp)
    out = (xd - mean) / np.sqrt(var + eps)
    if w is not None:
        out = out * w.reshape(shp) + b.reshape(shp)
    return _c(out, x)


def np_nll(logp, t, w=None, ignore_index=-100, reduction="mean"):
    c = logp.shape[1]
    lp = np.moveaxis(logp, 1, -1).reshape(-1, c).astype(np.float64)
    tt = t.reshape(-1)
    keep = tt != ignore_index
    safe = np.where(keep, tt, 0)
    ww = (np.ones(c) if w is None else w.astype(np.float64))[safe] * keep
    losses = -lp[np.arange(len(tt)), safe] * ww
    if reduction == "none":
        return _c(losses.reshape(t.shape), logp)
    if reduction == "sum":
        return _c(losses.sum(), logp)
    return _c(losses.sum() / ww.sum(), logp)


def np_cross_entropy(x, t, w=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    lp = _log_softmax(x.astype(np.float64), 1)
    c = x.shape[1]
    wv = np.ones(c) if w is None else w.astype(np.float64)
    if t.dtype.kind == "f":
        tt = t.astype(np.float64) * (1 - label_smoothing) + label_smoothing / c
        per = -(lp * tt * wv.reshape([1, -1] + [1] * (x.ndim - 2))).sum(1)
        r = per if reduction == "none" else per.sum() if reduction == "sum" else per.sum() / (x.size / c)
        return _c(r, x)
    # label smoothing written out as the smoothed target distribution over the non-ignored samples
    lpl = np.moveaxis(lp, 1, -1).reshape(-1, c)
    tt = t.reshape(-1)
    keep = tt != ignore_index
    safe = np.where(keep, tt, 0)
    q = np.eye(c)[safe] * (1 - label_smoothing) + label_smoothing / c
    per = -(q * lpl * wv).sum(1) * keep
    if reduction == "none":
        return _c(per.reshape(t.shape), x)
    if reduction == "sum":
        return _c(per.sum(), x)
    return _c(per.sum() / (wv[safe] * keep).sum(), x)


def _red(loss, reduction, like):
    r = loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()
    return _c(r, like)


# ---------------------------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------------------------
def _build() -> list[OpCase]:
    ct = coretorch
    Fl = FLOAT_DTYPES
    cases: list[OpCase] = []
    add = cases.append

    # ---- activations ----
    fn: Any  # (loop variables over tables of different callables and keyword arguments)
    ref: Any
    kw: Any
    acts = [
        ("relu", F.relu, lambda a: np.maximum(a, 0)),
        ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
        ("elu", lambda x: F.elu(x, 1.5), lambda a: np.where(a > 0, a, 1.5 * np.expm1(np.minimum(a, 0)))),
        ("gelu", F.gelu, lambda a: 0.5 * a * (1 + _erf_np(a / math.sqrt(2)))),
        ("gelu.tanh", lambda x: F.gelu(x, approximate="tanh"),
         lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))),
        ("silu", F.silu, lambda a: a * _sig(a)),
        ("sigmoid", F.sigmoid, _sig),
        ("tanh", F.tanh, np.tanh),
        ("softplus", F.softplus, lambda a: np.log1p(np.exp(a))),
        ("softplus.beta", lambda x: F.softplus(x, beta=2.0, threshold=1.5),
         lambda a: np.where(2 * a > 1.5, a, np.log1p(np.exp(2 * a)) / 2)),
        ("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.0), lambda a: np.clip(a, -0.5, 1.0)),
        ("relu6", lambda x: F.relu6(x * 4), lambda a: np.clip(a * 4, 0, 6)),
        ("logsigmoid", F.logsigmoid, lambda a: -np.log1p(np.exp(-a))),
        ("erf", F.erf, _erf_np),
    ]
    for name, fn, ref in acts:
        dom = "distinct" if name.startswith(("relu", "leaky", "elu", "hardtanh")) else "any"
        r = (lambda ref: lambda a: _c(ref(a.astype(np.float64)), a))(ref)
        add(OpCase(name, fn, r, (A((4, 5), dom),), Fl, gradgrad=name in ("gelu", "elu", "erf", "softplus")))
        add(OpCase(name + ".3d", fn, r, (A((2, 3, 4), dom, layout="t"),), Fl))
    add(OpCase("erf.wide", lambda x: F.erf(x * 3), lambda a: _c(_erf_np(a.astype(np.float64) * 3), a),
               (A((6, 7)),), Fl))
    add(OpCase("elu.large", lambda x: F.elu(x * 400), lambda a: _c(np.where(a > 0, a * 400, np.expm1(
        np.minimum(a * 400, 0))), a), (A((4, 5), "distinct"),), ("float64",)))
    add(OpCase("gelu.bad", lambda x: F.gelu(x, approximate="fast"), None, (A(),), raises=RuntimeError))

    # ---- softmax family ----
    for name, fn, ref in (("softmax", F.softmax, _softmax), ("log_softmax", F.log_softmax, _log_softmax)):
        for dim in (0, 1, -1):
            add(OpCase(f"{name}.dim{dim}", lambda x, f=fn, d=dim: f(x, d),
                       lambda a, r=ref, d=dim: _c(r(a.astype(np.float64), d), a), (A((3, 4, 5)),), Fl,
                       gradgrad=dim == 1))
        add(OpCase(f"{name}.t", lambda x, f=fn: f(x, -1), lambda a, r=ref: _c(r(a.astype(np.float64), -1), a),
                   (A((4, 5), layout="t"),), Fl))
        add(OpCase(f"{name}.large", lambda x, f=fn: f(x * 1000, 1),
                   lambda a, r=ref: _c(r(a.astype(np.float64) * 1000, 1), a), (A((3, 4), "distinct"),), Fl))
        add(OpCase(f"{name}.0d", lambda x, f=fn: f(x, 0), lambda a, r=ref: _c(r(a.reshape(1), 0).reshape(()), a),
                   (A(()),), Fl))
        add(OpCase(f"{name}.dtype", lambda x, f=fn: f(x, 1, dtype=ct.float64),
                   lambda a, r=ref: r(a.astype(np.float64), 1), (A((3, 4)),), ("float32",)))
        add(OpCase(f"{name}.empty", lambda x, f=fn: f(x, 1), lambda a: a.copy(), (A((0, 4)),), Fl))
        add(OpCase(f"{name}.int", lambda x, f=fn: f(x, 1), None, (A((3, 4)),), ("int64",), raises=RuntimeError))

    # ---- pad, one_hot, normalize ----
    def np_pad(a, p, mode, value=0.0):
        width = [(0, 0)] * a.ndim
        for k in range(len(p) // 2):
            width[a.ndim - 1 - k] = (p[2 * k], p[2 * k + 1])
        npmode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
        kw = {"constant_values": value} if mode == "constant" else {}
        return np.pad(a, width, npmode, **kw)
    for tag, p, mode, shape in (("constant", (1, 2), "constant", (2, 3, 4)), ("constant2d", (1, 0, 2, 1),
                                 "constant", (2, 3, 4)), ("constant3", (1, 1, 0, 2, 1, 0), "constant", (2, 3, 4)),
                                ("reflect", (2, 1), "reflect", (2, 3, 4)),
                                ("reflect2d", (1, 2, 2, 1), "reflect", (1, 2, 4, 5)),
                                ("replicate", (2, 3), "replicate", (2, 3, 4)),
                                ("replicate2d", (1, 2, 3, 0), "replicate", (2, 3, 4)),
                                ("circular", (1, 2), "circular", (2, 3, 4))):
        add(OpCase(f"pad.{tag}", lambda x, p=p, m=mode: F.pad(x, p, m),
                   lambda a, p=p, m=mode: np_pad(a, p, m), (A(shape),), Fl))
    add(OpCase("pad.value", lambda x: F.pad(x, (1, 1), value=2.0), lambda a: np_pad(a, (1, 1), "constant", 2.0),
               (A((3, 4)),), Fl + ("int64",)))
    add(OpCase("pad.negative", lambda x: F.pad(x, (-1, 2)), lambda a: np_pad(a[:, 1:], (0, 2), "constant"),
               (A((3, 4)),), Fl))
    add(OpCase("pad.odd", lambda x: F.pad(x, (1, 2, 3)), None, (A((3, 4)),), raises=RuntimeError))
    add(OpCase("pad.reflect_too_big", lambda x: F.pad(x, (4, 0), "reflect"), None, (A((2, 3, 4)),),
               raises=RuntimeError))
    add(OpCase("one_hot", lambda t: F.one_hot(t, 5), lambda t: np.eye(5, dtype=np.int64)[t],
               (A((2, 3), "index:5"),), ("int64",), grad=False))
    add(OpCase("one_hot.infer", F.one_hot, lambda t: np.eye(t.max() + 1, dtype=np.int64)[t], (A((6,), "index:4"),),
               ("int64",), grad=False))
    add(OpCase("one_hot.too_small", lambda t: F.one_hot(t, 2), None, (A((6,), "index:5"),), ("int64",),
               raises=RuntimeError))
    add(OpCase("one_hot.float", F.one_hot, None, (A((3,)),), raises=RuntimeError))
    add(OpCase("normalize", F.normalize, lambda a: _c(a / np.maximum(np.linalg.norm(a.astype(np.float64), axis=1,
                                                                                    keepdims=True), 1e-12), a),
               (A((3, 4)),), Fl, gradgrad=True))
    add(OpCase("normalize.p1", lambda x: F.normalize(x, p=1.0, dim=-1),
               lambda a: _c(a / np.abs(a.astype(np.float64)).sum(-1, keepdims=True), a), (A((2, 3, 4)),), Fl))

    # ---- attention ----
    def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
        q, k, v = (t.astype(np.float64) for t in (q, k, v))
        s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
        if causal:
            s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
        if mask is not None:
            s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
        return _softmax(s, -1) @ v
    qkv = (A((2, 1, 4, 3)), A((2, 1, 6, 3)), A((2, 1, 6, 2)))
    add(OpCase("scaled_dot_product_attention", F.scaled_dot_product_attention,
               lambda q, k, v: _c(np_sdpa(q, k, v), q), qkv, Fl, gradgrad=True))
    add(OpCase("scaled_dot_product_attention.causal", lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.3), lambda q, k, v: _c(np_sdpa(q, k, v, causal=True, scale=0.3), q),
        (A((2, 5, 4)), A((2, 5, 4)), A((2, 5, 3))), Fl))
    bool_mask = np.array([[True, False, True, True, False, True]] * 3 + [[False, True, True, True, True, True]])
    add(OpCase("scaled_dot_product_attention.bool_mask", lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=ct.tensor(bool_mask, device=q.device)),
        lambda q, k, v: _c(np_sdpa(q, k, v, mask=bool_mask), q), qkv, Fl))
    add(OpCase("scaled_dot_product_attention.float_mask", lambda q, k, v, m: F.scaled_dot_product_attention(
        q, k, v, attn_mask=m), lambda q, k, v, m: _c(np_sdpa(q, k, v, mask=m), q), qkv[:3] + (A((4, 6)),), Fl))

    # ---- interpolate ----
    for tag, kw, ref in (("nearest", dict(size=(5, 7)), lambda a: np_interpolate(a, (5, 7), "nearest")),
                         ("nearest_scale", dict(scale_factor=2),
                          lambda a: np_interpolate(a, (6, 8), "nearest", scale=2)),
                         ("nearest_down", dict(size=(2, 3)), lambda a: np_interpolate(a, (2, 3), "nearest")),
                         ("bilinear", dict(size=(5, 7), mode="bilinear"),
                          lambda a: np_interpolate(a, (5, 7), "bilinear")),
                         ("bilinear_ac", dict(size=(5, 7), mode="bilinear", align_corners=True),
                          lambda a: np_interpolate(a, (5, 7), "bilinear", True)),
                         ("bilinear_scale", dict(scale_factor=1.5, mode="bilinear"),
                          lambda a: np_interpolate(a, (4, 6), "bilinear", scale=1.5)),
                         ("bilinear_down", dict(size=(2, 3), mode="bilinear"),
                          lambda a: np_interpolate(a, (2, 3), "bilinear"))):
        add(OpCase(f"interpolate.{tag}", lambda x, kw=kw: F.interpolate(x, **kw), ref, (A((2, 3, 3, 4)),), Fl))
    add(OpCase("interpolate.linear", lambda x: F.interpolate(x, size=7, mode="linear"),
               lambda a: np_interpolate(a, (7,), "linear"), (A((2, 3, 4)),), Fl))
    add(OpCase("interpolate.both", lambda x: F.interpolate(x, size=3, scale_factor=2), None, (A((1, 1, 3, 4)),),
               raises=ValueError))
    add(OpCase("interpolate.align_nearest", lambda x: F.interpolate(x, size=3, align_corners=True), None,
               (A((1, 1, 3, 4)),), raises=ValueError))

    # ---- convolution ----
    conv_variants: tuple = (
        ("", (1, 2, 5, 4), (3, 2, 3, 2), {}),
        (".stride_pad", (2, 2, 5, 5), (2, 2, 3, 3), dict(stride=2, padding=1)),
        (".dilation", (1, 2, 8, 7), (3, 2, 3, 2), dict(dilation=(2, 1), padding=(1, 2))),
        (".groups", (1, 4, 4, 5), (4, 2, 2, 3), dict(groups=2, stride=(1, 2))),
        (".depthwise", (2, 3, 5, 6), (3, 1, 3, 3), dict(groups=3, padding=1)),
        (".same", (2, 2, 6, 5), (3, 2, 3, 3), dict(padding="same")),
        (".same_even", (2, 2, 6, 5), (3, 2, 4, 2), dict(padding="same", dilation=(1, 2))),
        (".valid", (2, 2, 6, 5), (3, 2, 3, 3), dict(padding="valid")),
        (".1x1", (2, 5, 3, 4), (2, 5, 1, 1), {}),
    )

    def conv_ref(kw):
        def ref(x: np.ndarray, w: np.ndarray, b) -> np.ndarray:
            k: dict = dict(kw)
            if k.get("padding") == "valid":
                k["padding"] = 0
            if k.get("padding") == "same":
                d = _pair(k.get("dilation", 1))
                tot = [d[i] * (w.shape[2 + i] - 1) for i in range(2)]
                xp = np.pad(x, ((0, 0), (0, 0), (tot[0] // 2, tot[0] - tot[0] // 2),
                                (tot[1] // 2, tot[1] - tot[1] // 2)))
                k["padding"] = 0
                return _c(np_conv2d(xp, w, b, **k), x)
            return _c(np_conv2d(x, w, b, **k), x)
        return ref
    for tag, xs, ws, kw in conv_variants:
        add(OpCase(f"conv2d{tag}", lambda x, w, b, kw=kw: F.conv2d(x, w, b, **kw), conv_ref(kw),
                   (A(xs), A(ws), A((ws[0],))), Fl, gradgrad=tag in ("", ".stride_pad", ".groups"), atol=1e-5))
    add(OpCase("conv2d.nobias_t", lambda x, w: F.conv2d(x, w, stride=2), lambda x, w: _c(np_conv2d(x, w, stride=2),
                                                                                          x),
               (A((2, 3, 5, 6), layout="t"), A((2, 3, 2, 2), layout="s")), Fl, atol=1e-5))
    add(OpCase("conv2d.unbatched", lambda x, w: F.conv2d(x, w, padding=1),
               lambda x, w: _c(np_conv2d(x[None], w, padding=1)[0], x), (A((3, 4, 5)), A((2, 3, 3, 3))), Fl,
               atol=1e-5))
    add(OpCase("conv2d.channels", lambda x, w: F.conv2d(x, w), None, (A((1, 2, 5, 5)), A((2, 3, 3, 3))),
               raises=RuntimeError))
    add(OpCase("conv2d.kernel_too_big", lambda x, w: F.conv2d(x, w), None, (A((1, 2, 2, 2)), A((2, 2, 3, 3))),
               raises=RuntimeError))
    add(OpCase("conv2d.same_strided", lambda x, w: F.conv2d(x, w, stride=2, padding="same"), None,
               (A((1, 2, 5, 5)), A((2, 2, 3, 3))), raises=RuntimeError))
    add(OpCase("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
               lambda x, w, b: _c(np_conv2d(x[:, :, None], w[:, :, None], b, stride=(1, 2),
                                            padding=(0, 1))[:, :, 0], x),
               (A((2, 3, 9)), A((4, 3, 3)), A((4,))), Fl, gradgrad=True, atol=1e-5))
    add(OpCase("conv1d.same_groups", lambda x, w: F.conv1d(x, w, padding="same", groups=2, dilation=2),
               lambda x, w: _c(np_conv2d(np.pad(x, ((0, 0), (0, 0), (2, 2)))[:, :, None], w[:, :, None],
                                         dilation=(1, 2), groups=2)[:, :, 0], x),
               (A((2, 4, 7)), A((4, 2, 3))), Fl, atol=1e-5))
    for tag, xs, ws, kw in ((("", (1, 3, 3, 4), (3, 2, 2, 3), {}),
                             (".stride", (2, 3, 3, 4), (3, 2, 3, 2), dict(stride=2, padding=1, output_padding=1)),
                             (".groups_dil", (1, 4, 3, 3), (4, 1, 2, 3), dict(groups=2, dilation=2, stride=(1, 2))))):
        add(OpCase(f"conv_transpose2d{tag}", lambda x, w, b, kw=kw: F.conv_transpose2d(x, w, b, **kw),
                   lambda x, w, b, kw=kw: _c(np_conv_transpose2d(x, w, b, **kw), x),
                   (A(xs), A(ws), A((ws[1] * kw.get("groups", 1),))), Fl, gradgrad=not tag, atol=1e-5))
    add(OpCase("conv_transpose2d.output_padding", lambda x, w: F.conv_transpose2d(x, w, output_padding=1), None,
               (A((1, 2, 3, 3)), A((2, 2, 3, 3))), raises=RuntimeError))

    # ---- pooling ----
    for tag, shape, kw in (("", (1, 2, 4, 6), dict(kernel_size=2)),
                           (".stride_pad", (2, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
                           (".ceil", (1, 2, 7, 7), dict(kernel_size=2, stride=2, ceil_mode=True)),
                           (".dilation", (1, 2, 7, 8), dict(kernel_size=(2, 3), stride=(1, 2), dilation=2)),
                           (".unbatched", (3, 6, 6), dict(kernel_size=3, stride=3))):
        k = kw["kernel_size"]

        def ref(a, kw=kw, k=k):
            x = a if a.ndim == 4 else a[None]
            v, _ = np_max_pool2d(x, k, kw.get("stride"), kw.get("padding", 0), kw.get("dilation", 1),
                                 kw.get("ceil_mode", False))
            return v if a.ndim == 4 else v[0]

        def ref_idx(a, kw=kw, k=k):
            x = a if a.ndim == 4 else a[None]
            v, i = np_max_pool2d(x, k, kw.get("stride"), kw.get("padding", 0), kw.get("dilation", 1),
                                 kw.get("ceil_mode", False))
            return (v, i) if a.ndim == 4 else (v[0], i[0])
        add(OpCase(f"max_pool2d{tag}", lambda x, kw=kw: F.max_pool2d(x, **kw), ref, (A(shape, "distinct"),), Fl,
                   gradgrad=not tag))
        add(OpCase(f"max_pool2d.indices{tag}", lambda x, kw=kw: F.max_pool2d(x, return_indices=True, **kw), ref_idx,
                   (A(shape, "distinct"),), Fl))
    add(OpCase("max_pool2d.ties", lambda x: F.max_pool2d(x, 2, return_indices=True),
               lambda a: np_max_pool2d(a, 2), (A((1, 2, 4, 6), "ties"),), Fl, grad=False))
    add(OpCase("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, padding=1),
               lambda a: np_max_pool2d(a[:, :, None], (1, 3), (1, 2), (0, 1))[0][:, :, 0], (A((2, 3, 8), "distinct"),),
               Fl))
    add(OpCase("max_pool2d.bad_pad", lambda x: F.max_pool2d(x, 2, padding=2), None, (A((1, 1, 5, 5)),),
               raises=RuntimeError))
    for tag, shape, kw in (("", (1, 2, 4, 6), dict(kernel_size=2)),
                           (".pad", (2, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
                           (".pad_exclude", (2, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1,
                                                               count_include_pad=False)),
                           (".ceil", (1, 2, 7, 7), dict(kernel_size=3, stride=2, ceil_mode=True, padding=1)),
                           (".ceil_exclude", (1, 2, 7, 7), dict(kernel_size=3, stride=2, ceil_mode=True,
                                                                count_include_pad=False)),
                           (".divisor", (1, 2, 6, 6), dict(kernel_size=(2, 3), divisor_override=4))):
        add(OpCase(f"avg_pool2d{tag}", lambda x, kw=kw: F.avg_pool2d(x, **kw),
                   lambda a, kw=kw: np_avg_pool2d(a, kw["kernel_size"], kw.get("stride"), kw.get("padding", 0),
                                                  kw.get("ceil_mode", False), kw.get("count_include_pad", True),
                                                  kw.get("divisor_override")),
                   (A(shape),), Fl, gradgrad=not tag, atol=1e-6))
    for tag, shape, os_ in (("", (2, 3, 6, 8), (3, 4)), (".uneven", (2, 2, 7, 5), (3, 2)), (".one", (1, 3, 5, 4), 1),
                            (".up", (1, 2, 3, 3), (5, 4)), (".unbatched", (3, 5, 7), (2, 3))):
        add(OpCase(f"adaptive_avg_pool2d{tag}", lambda x, o=os_: F.adaptive_avg_pool2d(x, o),
                   lambda a, o=os_: np_adaptive_avg_pool2d(a, o), (A(shape),), Fl, atol=1e-6))

    # ---- normalization ----
    add(OpCase("batch_norm.train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
               lambda x, w, b: np_batch_norm(x, None, None, w, b, True), (A((4, 3, 2, 2)), A((3,)), A((3,))), Fl,
               gradgrad=True, atol=1e-5))
    add(OpCase("batch_norm.train_1d", lambda x: F.batch_norm(x, None, None, training=True, eps=1e-3),
               lambda x: np_batch_norm(x, None, None, None, None, True, 1e-3), (A((5, 3)),), Fl, atol=1e-5))
    add(OpCase("batch_norm.eval", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b),
               lambda x, m, v, w, b: np_batch_norm(x, m, v, w, b, False),
               (A((4, 3, 5)), A((3,), requires_grad=False), A((3,), "positive", requires_grad=False), A((3,)), A((3,))),
               Fl, atol=1e-5))

    def bn_stats(x):
        rm = ct.zeros(x.shape[1], dtype=x.dtype, device=x.device)
        rv = ct.ones(x.shape[1], dtype=x.dtype, device=x.device)
        F.batch_norm(x, rm, rv, training=True, momentum=0.3)
        return rm, rv

    def np_bn_stats(a):
        ax = (0,) + tuple(range(2, a.ndim))
        a64 = a.astype(np.float64)
        return _c(0.3 * a64.mean(ax), a), _c(0.7 + 0.3 * a64.var(ax, ddof=1), a)
    add(OpCase("batch_norm.running_stats", bn_stats, np_bn_stats, (A((4, 3, 5)),), Fl, grad=False, nondiff=None))
    add(OpCase("batch_norm.one_value", lambda x: F.batch_norm(x, None, None, training=True), None, (A((1, 3)),),
               raises=ValueError))

    def np_ln(a, w=None, b=None, k=1, eps=1e-5):
        ax = tuple(range(a.ndim - k, a.ndim))
        a64 = a.astype(np.float64)
        r = (a64 - a64.mean(ax, keepdims=True)) / np.sqrt(a64.var(ax, keepdims=True) + eps)
        if w is not None:
            r = r * w + b
        return _c(r, a)
    add(OpCase("layer_norm", lambda x, w, b: F.layer_norm(x, (5,), w, b), lambda x, w, b: np_ln(x, w, b),
               (A((3, 4, 5)), A((5,)), A((5,))), Fl, gradgrad=True, atol=1e-5))
    add(OpCase("layer_norm.2d", lambda x: F.layer_norm(x, [4, 5], eps=1e-3), lambda x: np_ln(x, k=2, eps=1e-3),
               (A((3, 4, 5), layout="t"),), Fl, atol=1e-5))
    add(OpCase("layer_norm.bad_shape", lambda x: F.layer_norm(x, (4,)), None, (A((3, 5)),), raises=RuntimeError))

    def np_gn(a, g, w=None, b=None, eps=1e-5):
        n, c = a.shape[:2]
        x = a.astype(np.float64).reshape(n, g, -1)
        r = ((x - x.mean(2, keepdims=True)) / np.sqrt(x.var(2, keepdims=True) + eps)).reshape(a.shape)
        if w is not None:
            shp = (1, c) + (1,) * (a.ndim - 2)
            r = r * w.reshape(shp) + b.reshape(shp)
        return _c(r, a)
    add(OpCase("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: np_gn(x, 2, w, b),
               (A((2, 4, 3, 2)), A((4,)), A((4,))), Fl, gradgrad=True, atol=1e-5))
    add(OpCase("group_norm.3d", lambda x: F.group_norm(x, 3), lambda x: np_gn(x, 3), (A((2, 6, 4)),), Fl, atol=1e-5))
    add(OpCase("group_norm.bad", lambda x: F.group_norm(x, 4), None, (A((2, 6, 4)),), raises=RuntimeError))

    # ---- losses ----
    for red in ("mean", "sum", "none"):
        add(OpCase(f"mse_loss.{red}", lambda x, t, r=red: F.mse_loss(x, t, reduction=r),
                   lambda a, b, r=red: _red((a.astype(np.float64) - b) ** 2, r, a), (A((3, 4)), A((3, 4))), Fl,
                   gradgrad=red == "mean"))
        add(OpCase(f"l1_loss.{red}", lambda x, t, r=red: F.l1_loss(x, t, reduction=r),
                   lambda a, b, r=red: _red(np.abs(a.astype(np.float64) - b), r, a), (A((3, 4)), A((3, 4))), Fl))
        add(OpCase(f"smooth_l1_loss.{red}", lambda x, t, r=red: F.smooth_l1_loss(x, t, reduction=r, beta=0.5),
                   lambda a, b, r=red: _red(_smooth_l1(a.astype(np.float64) - b, 0.5), r, a),
                   (A((3, 4)), A((3, 4))), Fl))
        add(OpCase(f"huber_loss.{red}", lambda x, t, r=red: F.huber_loss(x, t, reduction=r, delta=0.7),
                   lambda a, b, r=red: _red(_huber(a.astype(np.float64) - b, 0.7), r, a),
                   (A((3, 4)), A((3, 4))), Fl))
        add(OpCase(f"binary_cross_entropy.{red}", lambda x, t, r=red: F.binary_cross_entropy(
            F.sigmoid(x), t, reduction=r), lambda a, b, r=red: _red(_bce(_sig(a.astype(np.float64)), b), r, a),
            (A((3, 4)), A((3, 4), "unit")), Fl, gradgrad=red == "mean"))
        add(OpCase(f"binary_cross_entropy_with_logits.{red}", lambda x, t, r=red:
                   F.binary_cross_entropy_with_logits(x, t, reduction=r),
                   lambda a, b, r=red: _red(_bce(_sig(a.astype(np.float64)), b), r, a),
                   (A((3, 4)), A((3, 4), "small")), Fl, gradgrad=red == "mean"))
        add(OpCase(f"kl_div.{red}", lambda x, t, r=red: F.kl_div(F.log_softmax(x, 1), F.softmax(t, 1), reduction=r),
                   lambda a, b, r=red: _red(_softmax(b.astype(np.float64), 1) * (
                       _log_softmax(b.astype(np.float64), 1) - _log_softmax(a.astype(np.float64), 1)), r, a),
                   (A((3, 4)), A((3, 4))), Fl))
        add(OpCase(f"nll_loss.{red}", lambda x, t, r=red: F.nll_loss(x, t, reduction=r),
                   lambda a, t, r=red: np_nll(a, t, reduction=r), (A((5, 4)), A((5,), "index:4")), Fl,
                   gradgrad=red == "mean"))
        add(OpCase(f"cross_entropy.{red}", lambda x, t, r=red: F.cross_entropy(x, t, reduction=r),
                   lambda a, t, r=red: np_cross_entropy(a, t, reduction=r), (A((5, 4)), A((5,), "index:4")), Fl,
                   gradgrad=red == "mean"))
        add(OpCase(f"cross_entropy.weight_ignore.{red}", lambda x, t, w, r=red: F.cross_entropy(
            x, t.masked_fill(t == 1, -100), w, reduction=r), lambda a, t, w, r=red: np_cross_entropy(
            a, np.where(t == 1, -100, t), w, reduction=r),
            (A((6, 4)), A((6,), "index:4"), A((4,), "positive", requires_grad=False)), Fl))
        add(OpCase(f"cross_entropy.smoothing.{red}", lambda x, t, w, r=red: F.cross_entropy(
            x, t.masked_fill(t == 2, 7), w, ignore_index=7, reduction=r, label_smoothing=0.2),
            lambda a, t, w, r=red: np_cross_entropy(a, np.where(t == 2, 7, t), w, 7, r, 0.2),
            (A((6, 4)), A((6,), "index:4"), A((4,), "positive", requires_grad=False)), Fl))
        add(OpCase(f"cross_entropy.probs.{red}", lambda x, t, r=red: F.cross_entropy(
            x, t / t.sum(1, keepdim=True), reduction=r, label_smoothing=0.1),
            lambda a, t, r=red: np_cross_entropy(a, t / t.sum(1, keepdims=True), reduction=r, label_smoothing=0.1),
            (A((3, 4, 2)), A((3, 4, 2), "positive")), Fl))
    add(OpCase("cross_entropy.kd", lambda x, t: F.cross_entropy(x, t), lambda a, t: np_cross_entropy(a, t),
               (A((2, 3, 4, 2)), A((2, 4, 2), "index:3")), Fl))
    add(OpCase("cross_entropy.unbatched", lambda x, t: F.cross_entropy(x, t), lambda a, t: np_cross_entropy(
        a[None], t[None]), (A((5,)), A((), "index:5")), Fl))
    add(OpCase("cross_entropy.probs_weight", lambda x, t, w: F.cross_entropy(x, F.softmax(t, 1), w),
               lambda a, t, w: np_cross_entropy(a, _softmax(t.astype(np.float64), 1), w),
               (A((3, 4)), A((3, 4)), A((4,), "positive", requires_grad=False)), Fl))
    add(OpCase("nll_loss.weight_kd", lambda x, t, w: F.nll_loss(x, t, w, ignore_index=0),
               lambda a, t, w: np_nll(a, t, w, ignore_index=0),
               (A((2, 3, 4)), A((2, 4), "index:3"), A((3,), "positive", requires_grad=False)), Fl))
    add(OpCase("nll_loss.out_of_range", lambda x, t: F.nll_loss(x, t + 4), None, (A((5, 4)), A((5,), "index:4")),
               raises=IndexError))
    add(OpCase("nll_loss.batch_mismatch", lambda x, t: F.nll_loss(x, t), None, (A((5, 4)), A((3,), "index:4")),
               raises=ValueError))
    add(OpCase("cross_entropy.float_index", lambda x, t: F.cross_entropy(x, t), None, (A((5, 4)), A((5,))),
               raises=RuntimeError))
    add(OpCase("mse_loss.bad_reduction", lambda x, t: F.mse_loss(x, t, reduction="avg"), None, (A(), A()),
               raises=ValueError))
    add(OpCase("binary_cross_entropy.weight", lambda x, t, w: F.binary_cross_entropy(F.sigmoid(x), t, w),
               lambda a, b, w: _c((_bce(_sig(a.astype(np.float64)), b) * w).mean(), a),
               (A((3, 4)), A((3, 4), "unit"), A((4,), "positive", requires_grad=False)), Fl))
    add(OpCase("binary_cross_entropy.clamp", lambda x, t: F.binary_cross_entropy(x, t, reduction="none"),
               lambda a, b: _c(-(b * np.maximum(np.log(a), -100) + (1 - b) * np.maximum(np.log1p(-a), -100)), a),
               (A((2, 3), "zeros"), A((2, 3), "unit")), Fl, grad=False))
    add(OpCase("binary_cross_entropy.range", lambda x, t: F.binary_cross_entropy(x * 3, t), None,
               (A((2, 3), "positive"), A((2, 3), "small")), raises=RuntimeError))
    add(OpCase("binary_cross_entropy_with_logits.pos_weight", lambda x, t, w, pw: F.binary_cross_entropy_with_logits(
        x, t, w, pos_weight=pw), lambda a, b, w, pw: _c((w * -(pw * b * np.log(_sig(a.astype(np.float64))) +
                                                              (1 - b) * np.log1p(-_sig(a.astype(np.float64))))).mean(),
                                                        a),
        (A((3, 4)), A((3, 4), "small"), A((3, 1), "positive", requires_grad=False), A((4,), "positive")), Fl))
    add(OpCase("binary_cross_entropy_with_logits.large", lambda x, t: F.binary_cross_entropy_with_logits(
        x * 100, t, reduction="none"), lambda a, b: _c(np.maximum(a * 100, 0) - a * 100 * b + np.log1p(
            np.exp(-np.abs(a * 100.0))), a), (A((3, 4), "distinct"), A((3, 4), "small")), Fl))
    add(OpCase("kl_div.log_target", lambda x, t: F.kl_div(x, t, reduction="batchmean", log_target=True),
               lambda a, b: _c((np.exp(b.astype(np.float64)) * (b - a)).sum() / a.shape[0], a),
               (A((3, 4)), A((3, 4))), Fl))
    add(OpCase("kl_div.zero_target", lambda x, t: F.kl_div(x, t, reduction="sum"),
               lambda a, b: _c(np.where(b > 0, b * (np.log(np.where(b > 0, b, 1)) - a), 0).sum(), a),
               (A((3, 4)), A((3, 4), "zeros", requires_grad=False)), Fl))
    return cases


def _smooth_l1(d, beta):
    ad = np.abs(d)
    return np.where(ad < beta, 0.5 * d * d / beta, ad - 0.5 * beta)


def _huber(d, delta):
    ad = np.abs(d)
    return np.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))


def _bce(p, t):
    return -(t * np.log(p) + (1 - t) * np.log1p(-p))


NN_CASES: list[OpCase] = _build()
_names = [c.name for c in NN_CASES]
assert len(set(_names)) == len(_names), sorted({n for n in _names if _names.count(n) > 1})
del _names

#: every functional op the suite must cover (forward, and backward where differentiable)
NN_REQUIRED_OPS = (
    "relu", "leaky_relu", "elu", "gelu", "silu", "sigmoid", "tanh", "softplus", "hardtanh", "erf", "softmax",
    "log_softmax", "pad", "one_hot", "normalize", "scaled_dot_product_attention", "interpolate", "conv1d", "conv2d",
    "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "layer_norm", "group_norm",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div",
)
