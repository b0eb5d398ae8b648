"""Optional fused kernels of the 'cpu' device for the ops transformers and recurrent nets live on (issue 14): layer
norm forward and backward, softmax backward, and one LSTM / GRU time step forward and backward.

Each works on rows of the normalised (or gate) axis in a few vectorised numpy passes, writing in place into the
arrays it allocated; the core calls them only for float32/float64 operands and falls back to composites of the
primitive kernels on a backend without them (see coretorch/nn/functional/_fused.py and _rnn_fused.py).
"""
from __future__ import annotations

import weakref

import numpy as np

from .erf32 import _CHUNK, _GK, _GK2, _HALF, _INF, _SIGN, _c, _fix_pos_inf, _gelu_core
from .rows import colsum as _colsum
from .rows import rowop as _rowop
from .special import _lazy

_ndtr = _lazy("ndtr")  # scipy.special is imported on first use (its import would slow coretorch's start-up)

_add_reduce = np.add.reduce
_f32 = np.float32
_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def _addr(a) -> int:
    """The address of an array's first element."""
    return a.__array_interface__["data"][0]


def _rows(x, k):
    """x (..., *normalised k dims) -> (M, D) view or contiguous copy."""
    d = 1
    for s in x.shape[x.ndim - k:]:
        d *= s
    return np.reshape(x, (-1, d)), d


# id(rstd array) -> the flat buffer whose tail it is and whose head holds the normalised rows (x - mean) * rstd of
# the forward: the backward reads them instead of recomputing them (two passes with a per-row operand); an rstd from
# elsewhere (a host-fused kernel's) takes the recomputation.  Entries go with their buffers.
_XHAT: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def layer_norm(x, w, b, eps, k):
    """(y, mean, rstd): y = (x - mean) * rstd * w + b over the last k dims; mean and rstd of shape
    x.shape[:-k] + (1,) * k (PyTorch's native_layer_norm keeps the same pair for the backward).  With a weight or
    a bias the normalised rows are kept for the backward, behind rstd (without, they are y itself: a caller's
    in-place change of y must not reach the backward)."""
    x2, d = _rows(x, k)
    m = x2.shape[0]
    keep = w is not None or b is not None
    mean = _add_reduce(x2, axis=1, keepdims=True)
    mean /= d
    buf = np.empty(m * d + m, x2.dtype) if keep else None
    xh = np.subtract(x2, mean, out=None if buf is None else buf[:m * d].reshape(m, d))
    sq = np.multiply(xh, xh)
    var = _add_reduce(sq, axis=1, keepdims=True)
    var /= d
    var += eps
    rstd = np.sqrt(var, out=var if buf is None else buf[m * d:].reshape(m, 1))
    np.reciprocal(rstd, out=rstd)
    xh *= rstd
    y = xh
    if w is not None:
        y = np.empty(xh.shape, xh.dtype)
        _rowop(np.multiply, xh, w.reshape(-1), y)
    if b is not None:
        if y is xh:
            y = np.empty(xh.shape, xh.dtype)
        _rowop(np.add, xh if w is None else y, b.reshape(-1), y)
    stat = x.shape[:x.ndim - k] + (1,) * k
    rstd = rstd.reshape(stat)
    if buf is not None:
        _XHAT[id(rstd)] = buf
    return y.reshape(x.shape), mean.reshape(stat), rstd


def layer_norm_backward(g, x, mean, rstd, w, k, need_x, need_w, need_b):
    """(gx, gw, gb) of layer_norm over the last k dims, each None where not needed; w None without a weight."""
    d = 1
    for s in x.shape[x.ndim - k:]:
        d *= s
    x2, g2 = np.reshape(x, (-1, d)), np.reshape(g, (-1, d))
    m = x2.shape[0]
    m2, r2 = mean.reshape(-1, 1), rstd.reshape(-1, 1)
    buf = _XHAT.get(id(rstd))
    kept = buf is not None and rstd.base is buf and buf.size == m * d + m and buf.dtype == x2.dtype \
        and _addr(rstd) == _addr(buf) + m * d * buf.itemsize   # (the buffer's tail, not another view of it)
    if kept:   # the forward's rows, read only (a second backward reads them again)
        xhat = buf[:m * d].reshape(m, d)
    else:
        xhat = np.subtract(x2, m2)
        xhat *= r2
    gw = gb = gx = None
    if need_w:
        gw = _colsum(g2, xhat).reshape(w.shape)
    if need_b:
        gb = _colsum(g2).reshape(w.shape if w is not None else x.shape[x.ndim - k:])
    if need_x:
        if w is not None:
            gxh = np.empty(g2.shape, g2.dtype)
            _rowop(np.multiply, g2, w.reshape(-1), gxh)
        else:
            gxh = np.array(g2, copy=True)
        a = _add_reduce(gxh, axis=1, keepdims=True)
        a /= d
        c = _add_reduce(np.multiply(gxh, xhat), axis=1, keepdims=True)
        c /= d
        gxh -= a
        gxh -= np.multiply(xhat, c, out=None if kept else xhat)
        gxh *= r2
        gx = gxh.reshape(x.shape)
    return gx, gw, gb


def softmax_backward(g, y, dim):
    """y * (g - sum(g * y over dim)): the input gradient of softmax from its output y."""
    r = np.multiply(g, y)
    s = _add_reduce(r, axis=dim, keepdims=True)
    np.subtract(g, s, out=r)
    r *= y
    return r


def lstm_cell(gates, c, gi=None, out=None):
    """One LSTM step from the gate pre-activations (N, 4H) (order i, f, g, o; with ``gi`` given, gi is added and
    ``gates`` is scratch, overwritten) and the cell state (N, H): (h, c_new, act); h is written into ``out`` when
    given (a slot of the sequence's buffer).  act = (the sigmoid of all four pre-activations (N, 4H), the g slot
    unused; tanh(g); tanh(c_new)): contiguous arrays (numpy's exp on a strided (N, 4H) slice of a wider array cost
    1.5x), kept for the backward."""
    h = gates.shape[1] // 4
    if gi is not None:   # the sequence's call: gates is the step's fresh product, summed and activated in place
        gates += gi
    tg = np.tanh(gates[:, 2 * h:3 * h])
    s = np.negative(gates, out=gates if gi is not None else None)
    np.exp(s, out=s)
    s += 1
    np.reciprocal(s, out=s)
    c_new = np.multiply(s[:, h:2 * h], c)
    c_new += np.multiply(s[:, :h], tg)
    tc = np.tanh(c_new)
    return np.multiply(s[:, 3 * h:], tc, out=out), c_new, (s, tg, tc)


def lstm_cell_backward(dh, dc, c_prev, act, dy=None, out=None):
    """(d gates (N, 4H), dc_prev (N, H)) of one lstm_cell step given dh (plus ``dy`` when given) and dc (the cell
    gradient from later steps, or None); d gates is written into ``out`` when given."""
    s, tg, tc = act
    n, h4 = s.shape
    h = h4 // 4
    if dy is not None:
        dh = np.add(dh, dy)
    i, f, o = s[:, :h], s[:, h:2 * h], s[:, 3 * h:]
    dg = np.empty((n, h4), s.dtype) if out is None else out
    dct = np.multiply(tc, tc)                 # dc_total = dc + dh * o * (1 - tanh(c)^2)
    np.subtract(1, dct, out=dct)
    dct *= o
    dct *= dh
    if dc is not None:
        dct += dc
    np.multiply(dh, tc, out=dg[:, 3 * h:])
    np.multiply(dct, tg, out=dg[:, :h])
    np.multiply(dct, c_prev, out=dg[:, h:2 * h])
    np.multiply(dct, i, out=dg[:, 2 * h:3 * h])
    deriv = np.subtract(1, s)                 # sigmoid'(x) = s (1 - s) on i, f, o; tanh'(x) = 1 - t^2 on g
    deriv *= s
    dgd = deriv[:, 2 * h:3 * h]
    np.multiply(tg, tg, out=dgd)
    np.subtract(1, dgd, out=dgd)
    dg *= deriv
    dct *= f
    return dg, dct


def gru_cell(gi, gh, h, b=None, out=None):
    """One GRU step (PyTorch's formulas): gi (N, 3H) the input projection r|z|n, gh (N, 3H) the hidden one (scratch:
    ``b`` (3H,), b_hh, is added into it in place, so the reset gate multiplies hn + b_hn), h (N, H) -> (h', act);
    h' = n + z (h - n) is written into ``out`` when given.  act = (sigmoid r|z (N, 2H), n, hn + b_hn)."""
    hs = h.shape[1]
    if b is not None:
        gh += b
    rz = np.add(gi[:, :2 * hs], gh[:, :2 * hs])
    np.negative(rz, out=rz)
    np.exp(rz, out=rz)
    rz += 1
    np.reciprocal(rz, out=rz)
    hn = gh[:, 2 * hs:]
    n = np.multiply(rz[:, :hs], hn)
    n += gi[:, 2 * hs:]
    np.tanh(n, out=n)
    hnew = np.subtract(h, n, out=out)
    hnew *= rz[:, hs:]
    hnew += n
    return hnew, (rz, n, hn)


def gru_cell_backward(dh, h_prev, act, dy=None, out=None, gh_out=None):
    """(d gi (N, 3H), d gh (N, 3H), the direct part dh * z of dh_prev) of one gru_cell step for dh (plus ``dy``);
    d gi / d gh are written into ``out`` / ``gh_out`` when given."""
    rz, n, hn = act
    nb, hs = n.shape
    if dy is not None:
        dh = np.add(dh, dy)
    r, z = rz[:, :hs], rz[:, hs:]
    dgi = np.empty((nb, 3 * hs), n.dtype) if out is None else out
    dgh = np.empty((nb, 3 * hs), n.dtype) if gh_out is None else gh_out
    dan = dgi[:, 2 * hs:]                     # dh (1 - z) (1 - n^2)
    np.multiply(n, n, out=dan)
    np.subtract(1, dan, out=dan)
    dan *= dh
    dan -= np.multiply(dan, z)
    drz = dgi[:, :2 * hs]
    np.multiply(dan, hn, out=drz[:, :hs])
    np.subtract(h_prev, n, out=drz[:, hs:])
    drz[:, hs:] *= dh
    deriv = np.subtract(1, rz)                # sigmoid'(x) = s (1 - s) on r and z
    deriv *= rz
    drz *= deriv
    dgh[:, :2 * hs] = drz
    np.multiply(dan, r, out=dgh[:, 2 * hs:])
    return dgi, dgh, np.multiply(dh, z)


_X_PHI = _c(_INV_SQRT_2PI)
_X_TAIL = _f32(13.0)   # exp(x^2 / 2) overflows float32 beyond |x| = 13.32 (x phi(x) is then ~1e-38, subnormal)
_V_TAIL = _f32(6.5)    # the same bound on v = |x| / 2


def _cdf(x, p, cdf, s) -> None:
    """cdf = Phi(x) = 1/2 + sign(x) (1/2 - p) from p = Phi(-|x|) (cdf may be p), the sign by bit operations (numpy's
    copysign costs ~6 multiplies); s is scratch (may be p)."""
    np.subtract(_HALF, p, out=cdf)
    si = s.view(np.int32)
    np.bitwise_and(x.view(np.int32), _SIGN, out=si)
    ci = cdf.view(np.int32)
    np.bitwise_or(ci, si, out=ci)                 # 1/2 - p >= 0: or-ing the sign bit negates it for x < 0
    np.add(cdf, _HALF, out=cdf)


def _gelu_grad32(x, g, out, v, t, e):
    """g (Phi(x) + x phi(x)) on float32 pieces: Phi(-|x|) and exp(x^2 / 2) from erf32's GELU kernel (one exp for
    both)."""
    _gelu_core(x, out, v, t, e)
    np.divide(_GK[0], t, out=t)                   # Phi(-|x|)
    _cdf(x, t, t, v)                              # Phi(x)
    np.divide(_X_PHI, e, out=e)
    np.multiply(e, x, out=e)                      # x phi(x)
    np.add(e, t, out=e)
    np.multiply(e, g, out=out)


def _gelu_cdf32(x, y, cdf, d, v, t):
    """GELU x Phi(x) as erf32's kernel computes it (the same bits), Phi(x) into ``cdf`` and the whole derivative
    Phi(x) + x phi(x) into ``d`` for the backward (phi from the exp the GELU needs anyway: the backward then costs one
    multiply instead of seven passes with an exp); the piece of ``cdf`` is the core's exp buffer."""
    _gelu_core(x, y, v, t, cdf)
    vmax = np.maximum.reduce(v)                   # (one max: the infinities' and the far tails' checks)
    np.divide(_X_PHI, cdf, out=d)                 # phi(x) = 1 / (sqrt(2 pi) exp(x^2 / 2))
    np.multiply(d, x, out=d)                      # x phi(x) (nan at +-inf, as the formula's inf * 0)
    if not vmax <= _V_TAIL:                       # |x| > 13: the exp overflows (or nearly): the formula there
        i = np.flatnonzero(np.abs(x) > _X_TAIL)
        xt = x[i]
        r = np.multiply(xt, xt)
        r *= _f32(-0.5)
        np.exp(r, out=r)
        r *= xt
        r *= _f32(_INV_SQRT_2PI)
        d[i] = r
    np.divide(_GK2, t, out=t)                     # 2 Phi(-|x|)
    np.multiply(t, _HALF, out=cdf)                # Phi(-|x|)
    np.multiply(t, v, out=t)                      # |x| Phi(-|x|)
    np.add(y, v, out=v)                           # relu(x)
    np.subtract(v, t, out=y)
    _cdf(x, cdf, cdf, t)                          # Phi(x)
    np.add(d, cdf, out=d)
    if not vmax < _INF:
        _fix_pos_inf(x, y)


def _flat(a):
    return np.ascontiguousarray(a).reshape(-1)


# id(Phi array) -> the (2, *shape) buffer whose [0] it is and whose [1] holds GELU'(x): the backward finds the
# derivative its forward made only for an array of this table (a Phi from elsewhere, e.g. a host-fused kernel's,
# takes the formula); entries go with their buffers
_SLOPES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def gelu_cdf(x):
    """(GELU(x), Phi(x)) of a float32 array: the forward of a GELU whose backward will follow (which finds
    GELU'(x), computed here alongside, behind the Phi array)."""
    y, both = np.empty(x.shape, _f32), np.empty((2,) + x.shape, _f32)
    cdf = both[0, ...]
    xf, yf, (cf, df) = _flat(x), y.reshape(-1), both.reshape(2, -1)
    n = xf.size
    tmps = [np.empty(min(_CHUNK, n), _f32) for _ in range(2)]
    with np.errstate(all="ignore"):
        for lo in range(0, n, _CHUNK):
            hi = min(lo + _CHUNK, n)
            _gelu_cdf32(xf[lo:hi], yf[lo:hi], cf[lo:hi], df[lo:hi], *(tm[:hi - lo] for tm in tmps))
    _SLOPES[id(cdf)] = both
    return y, cdf


def gelu_backward(g, x, cdf=None):
    """The input gradient of GELU (the erf form), g (Phi(x) + x phi(x)), of x's shape and dtype; with ``cdf``
    (Phi(x) from gelu_cdf) only phi's exp remains to compute, and none for this table's own gelu_cdf."""
    if cdf is not None:
        both = _SLOPES.get(id(cdf))
        if both is not None and cdf.base is both and cdf.shape == both.shape[1:] == x.shape \
                and _addr(cdf) == _addr(both):   # (the [0] of the buffer, not another view of it)
            return np.multiply(g, both[1, ...], out=np.empty(x.shape, x.dtype))
        # a Phi from elsewhere: seven whole-array passes (as fast as pieces here: fewer calls), ~tanh's cost
        with np.errstate(all="ignore"):
            r = np.multiply(x, x, out=np.empty(x.shape, x.dtype))  # an array also for a 0-d x (in place below)
            r *= _f32(-0.5)
            np.exp(r, out=r)
            r *= x
            r *= _f32(_INV_SQRT_2PI)
            r += cdf
            r *= g
        return r
    if x.dtype == _f32 and g.dtype == _f32 and x.shape == g.shape:
        out = np.empty(x.shape, _f32)
        xf, gf, of = _flat(x), _flat(g), out.reshape(-1)
        n = xf.size
        tmps = [np.empty(min(_CHUNK, n), _f32) for _ in range(3)]
        with np.errstate(all="ignore"):
            for lo in range(0, n, _CHUNK):
                hi = min(lo + _CHUNK, n)
                _gelu_grad32(xf[lo:hi], gf[lo:hi], of[lo:hi], *(tm[:hi - lo] for tm in tmps))
        return out
    with np.errstate(all="ignore"):
        xd = x.astype(np.float64, copy=False)
        r = np.asarray(np.exp(-0.5 * xd * xd))  # (an array for a 0-d x too: a compiled replay records arrays only)
        r *= xd * _INV_SQRT_2PI
        r += _ndtr(xd)
        r *= g
    return r.astype(x.dtype, copy=False)


KERNELS = {"gelu_backward": gelu_backward, "gelu_cdf": gelu_cdf, "layer_norm": layer_norm,
           "layer_norm_backward": layer_norm_backward, "softmax_backward": softmax_backward, "lstm_cell": lstm_cell,
           "lstm_cell_backward": lstm_cell_backward, "gru_cell": gru_cell, "gru_cell_backward": gru_cell_backward}
