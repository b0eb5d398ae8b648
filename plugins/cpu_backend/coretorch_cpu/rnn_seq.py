"""The LSTM recurrence of one layer and direction over a whole sequence as two cpu kernels (issue 14's LSTM speed).

The forward writes every step's activations into sequence-long arrays allocated once, and the backward its gate
gradients into one (L, N, 4H) array, with the step's cell math as in fused.lstm_cell / lstm_cell_backward (the
same operations in the same order: bitwise their results); the loop runs here, without the core's per-step kernel
dispatch, slicing and allocations.  The recurrent weight's gradient is two GEMMs over all steps (no concatenated
copy of the states).  Computing step-independent factors for all steps at once before the backward loop, or
sigmoid on the i|f and o slices only, measured no faster: numpy's per-call cost and strided gate slices dominate.
"""
from __future__ import annotations

import numpy as np

_matmul, _mul, _sub, _tanh = np.matmul, np.multiply, np.subtract, np.tanh


def _sigmoid_(x):
    """x <- 1 / (1 + exp(-x)) in place (PyTorch's formula: exp(-x) overflows to inf, giving 0, for x << 0)."""
    np.negative(x, out=x)
    np.exp(x, out=x)
    x += 1
    np.reciprocal(x, out=x)


def lstm_sequence(gi, h0, c0, w_hh, reverse):
    """One LSTM layer and direction: gi (L, N, 4H) the input projection with both biases (gates i|f|g|o), h0 and
    c0 (N, H), w_hh (4H, H) -> (ys (L, N, H), h_n, c_n, *saved): ys, h_n and c_n fresh arrays (the caller's), then
    the private arrays lstm_sequence_backward takes back as ``saved`` (a flat result, so that coretorch.compile's
    recorder tracks every array)."""
    seq, n, g4 = gi.shape
    hs = g4 // 4
    dt = gi.dtype
    wt = np.ascontiguousarray(w_hh.T)          # (H, 4H): BLAS reads it ~10% faster than the transposed view
    s_all = np.empty((seq, n, g4), dt)         # sigmoid of i, f, o (the g slot unused)
    tg_all = np.empty((seq, n, hs), dt)        # tanh(g)
    c_all = np.empty((seq, n, hs), dt)         # c after each step
    tc_all = np.empty((seq, n, hs), dt)        # tanh(c)
    y_all = np.empty((seq, n, hs), dt)         # h after each step
    tmp = np.empty((n, hs), dt)
    h, c = h0, c0
    with np.errstate(over="ignore"):
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            s = s_all[t]
            _matmul(h, wt, out=s)
            s += gi[t]
            tg = _tanh(s[:, 2 * hs:3 * hs], out=tg_all[t])
            _sigmoid_(s)                       # the whole row: one contiguous pass beats three strided ones
            c_new = _mul(s[:, hs:2 * hs], c, out=c_all[t])
            _mul(s[:, :hs], tg, out=tmp)
            c_new += tmp
            tc = _tanh(c_new, out=tc_all[t])
            h = _mul(s[:, 3 * hs:], tc, out=y_all[t])
            c = c_new
    return y_all.copy(), h.copy(), c.copy(), s_all, tg_all, c_all, tc_all, y_all


def lstm_sequence_backward(saved, h0, c0, w_hh, reverse, gy, gh_n, gc_n, need_h0, need_c0, need_w):
    """(d gi (L, N, 4H), dh0 or None, dc0 or None, d w_hh or None) of lstm_sequence (``saved``: the arrays it
    returned after c_n) for the gradients of ys (L, N, H), h_n and c_n (each may be None)."""
    s_all, tg_all, c_all, tc_all, y_all = saved
    seq, n, g4 = s_all.shape
    hs = g4 // 4
    dt = s_all.dtype
    dg_all = np.empty((seq, n, g4), dt)
    dh = np.zeros((n, hs), dt) if gh_n is None else np.array(gh_n, dtype=dt, copy=True)
    dc = np.zeros((n, hs), dt) if gc_n is None else np.array(gc_n, dtype=dt, copy=True)
    dct = np.empty((n, hs), dt)
    der = np.empty((n, g4), dt)
    steps = range(seq) if reverse else range(seq - 1, -1, -1)
    last = steps[-1]
    for t in steps:
        if gy is not None:
            dh += gy[t]
        s, tg, tc, dg = s_all[t], tg_all[t], tc_all[t], dg_all[t]
        _mul(tc, tc, out=dct)                  # dc_total = dc + dh * o * (1 - tanh(c)^2)
        _sub(1, dct, out=dct)
        dct *= s[:, 3 * hs:]
        dct *= dh
        dct += dc
        c_prev = c0 if t == last else c_all[t + 1 if reverse else t - 1]
        _mul(dh, tc, out=dg[:, 3 * hs:])
        _mul(dct, tg, out=dg[:, :hs])
        _mul(dct, c_prev, out=dg[:, hs:2 * hs])
        _mul(dct, s[:, :hs], out=dg[:, 2 * hs:3 * hs])
        _sub(1, s, out=der)                   # sigmoid'(x) = s (1 - s) on i, f, o; tanh'(x) = 1 - t^2 on g
        der *= s
        dgd = der[:, 2 * hs:3 * hs]
        _mul(tg, tg, out=dgd)
        _sub(1, dgd, out=dgd)
        dg *= der
        _mul(dct, s[:, hs:2 * hs], out=dc)
        if t != last or need_h0:
            _matmul(dg, w_hh, out=dh)
    gw = None
    if need_w:
        flat = dg_all.reshape(seq * n, g4)
        if reverse:  # step t started from the state after step t + 1 (h0 for the last)
            gw = _matmul(flat[:(seq - 1) * n].T, y_all[1:].reshape(-1, hs))
            gw += _matmul(dg_all[seq - 1].T, h0)
        else:
            gw = _matmul(flat[n:].T, y_all[:seq - 1].reshape(-1, hs))
            gw += _matmul(dg_all[0].T, h0)
    return dg_all, (dh if need_h0 else None), (dc if need_c0 else None), gw


KERNELS = {"lstm_sequence": lstm_sequence, "lstm_sequence_backward": lstm_sequence_backward}
