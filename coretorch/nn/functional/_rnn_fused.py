"""The LSTM and GRU recurrences over a whole sequence as one graph node (issue 14's LSTM speed).

The input projection of the sequence is one matmul outside (an ordinary op); this node runs the time loop on
kernel calls only: per step one (N, H) @ (H, G*H) product and the fused gate pointwise (the backend's
``lstm_cell``/``lstm_cell_backward`` and ``gru_cell``/``gru_cell_backward`` where it has them, else a few
primitive kernels).  Its backward runs the loop back through the saved activations and makes the recurrent
weight's gradient one (G*H, L*N) @ (L*N, H) product.  A backend with ``lstm_sequence``/``lstm_sequence_backward``
(the cpu backend) runs an LSTM layer's whole loop, forward and backward, in one kernel call each.  A create_graph
backward re-runs the per-step composite (``_rnn_step`` of nn.modules.rnn) on the saved inputs and differentiates
it, so double backward gives what the composite gives.
"""
from __future__ import annotations

from ... import dtypes as _dt
from ...autograd.grad_mode import state as _gs
from ...autograd.graph import Node
from ...ops._util import edge as _edge
from ...tensor import _make
from ._fused import _composite_grads, _t, fused_ok


def _lstm_cell(table, gates, c, gi=None, out=None):
    """(h, c_new, act) of one step: gates (N, 4H) scratch pre-activations plus ``gi``; h written into ``out``."""
    if table.has("lstm_cell"):
        return table.lstm_cell(gates, c, gi, out)
    if gi is not None:
        gates = table.add(gates, gi)
    h = gates.shape[1] // 4
    sl = [table.basic_index(gates, (slice(None), slice(j * h, (j + 1) * h))) for j in range(4)]
    i, f, o = table.sigmoid(sl[0]), table.sigmoid(sl[1]), table.sigmoid(sl[3])
    g = table.tanh(sl[2])
    c_new = table.add(table.mul(f, c), table.mul(i, g))
    tc = table.tanh(c_new)
    hn = table.mul(o, tc)
    if out is not None:
        table.assign_(out, hn)
        hn = out
    return hn, c_new, (i, f, g, o, tc)


def _lstm_cell_backward(table, dh, dc, c_prev, act, dy=None, out=None):
    """(d gates, dc_prev) of one step for dh (+ ``dy``); d gates written into ``out``."""
    if table.has("lstm_cell_backward"):
        return table.lstm_cell_backward(dh, dc, c_prev, act, dy, out)
    if dy is not None:
        dh = table.add(dh, dy)
    i, f, g, o, tc = act
    dct = table.mul(table.mul(dh, o), table.neg(table.sub(table.mul(tc, tc), 1.0)))   # 1 - x as -(x - 1)
    if dc is not None:
        dct = table.add(dct, dc)
    di = table.mul(table.mul(dct, g), table.mul(i, table.neg(table.sub(i, 1.0))))
    df = table.mul(table.mul(dct, c_prev), table.mul(f, table.neg(table.sub(f, 1.0))))
    dg = table.mul(table.mul(dct, i), table.neg(table.sub(table.mul(g, g), 1.0)))
    do = table.mul(table.mul(dh, tc), table.mul(o, table.neg(table.sub(o, 1.0))))
    grad = table.cat([di, df, dg, do], 1)
    if out is not None:
        table.assign_(out, grad)
        grad = out
    return grad, table.mul(dct, f)


def _gru_cell(table, gi, gh, h, b=None, out=None):
    """(h', act) of one step: r, z, n gates; h' = n + z (h - n), written into ``out``.  gh is the step's fresh
    (N, 3H) hidden product (scratch) to which ``b`` (b_hh) is added."""
    if table.has("gru_cell"):
        return table.gru_cell(gi, gh, h, b, out)
    if b is not None:
        gh = table.add(gh, b if table.native_broadcast else table.expand(b, tuple(gh.shape)))
    hs = h.shape[1]
    col = [(slice(None), slice(j * hs, (j + 1) * hs)) for j in range(3)]
    ir, iz, in_ = (table.basic_index(gi, c) for c in col)
    hr, hz, hn = (table.basic_index(gh, c) for c in col)
    r = table.sigmoid(table.add(ir, hr))
    z = table.sigmoid(table.add(iz, hz))
    n = table.tanh(table.add(in_, table.mul(r, hn)))
    hnew = table.add(n, table.mul(z, table.sub(h, n)))
    if out is not None:
        table.assign_(out, hnew)
        hnew = out
    return hnew, (r, z, n, hn)


def _gru_cell_backward(table, dh, h_prev, act, dy=None, out=None, gh_out=None):
    """(d gi (N, 3H), d gh (N, 3H), dh_prev direct part) for dh (+ ``dy``); written into ``out`` / ``gh_out``."""
    if table.has("gru_cell_backward"):
        return table.gru_cell_backward(dh, h_prev, act, dy, out, gh_out)
    if dy is not None:
        dh = table.add(dh, dy)
    r, z, n, hn = act
    dn = table.mul(dh, table.neg(table.sub(z, 1.0)))            # dh (1 - z)
    dz = table.mul(dh, table.sub(h_prev, n))
    dan = table.mul(dn, table.neg(table.sub(table.mul(n, n), 1.0)))
    dr = table.mul(dan, hn)
    dar = table.mul(dr, table.mul(r, table.neg(table.sub(r, 1.0))))
    daz = table.mul(dz, table.mul(z, table.neg(table.sub(z, 1.0))))
    dgi, dgh = table.cat([dar, daz, dan], 1), table.cat([dar, daz, table.mul(dan, r)], 1)
    if out is not None:
        table.assign_(out, dgi)
        dgi = out
    if gh_out is not None:
        table.assign_(gh_out, dgh)
        dgh = gh_out
    return dgi, dgh, table.mul(dh, z)


def _lstm_states(table, hbuf, h0, seq: int, reverse: bool):
    """(L, N, H): the state each step started from, from the forward's private buffer of step outputs."""
    h0v = table.view(h0 if table.is_contiguous(h0) else table.contiguous(h0), (1,) + tuple(h0.shape))
    if seq == 1:
        return h0v
    if reverse:   # step t started from the state after step t + 1 (h0 for the last)
        return table.cat([table.basic_index(hbuf, (slice(1, None),)), h0v], 0)
    return table.cat([h0v, table.basic_index(hbuf, (slice(0, seq - 1),))], 0)


class _RnnSequenceBackward(Node):
    __slots__ = ("mode", "reverse", "need", "acts", "composite", "has_b")

    def backward(self, gy, gh_n, gc_n=None):
        gi_all, h0, c0, w_hh, b_hh = self.saved()
        if _gs.enabled:
            outs = (gy, gh_n) if c0 is None else (gy, gh_n, gc_n)
            return _composite_grads(self.composite, (gi_all, h0, c0, w_hh, b_hh), self.need, outs)
        table, dt = gi_all._be, gi_all.dtype
        lstm = self.mode == "LSTM"
        ngi, nh0, nc0, nw, nb = self.need
        if lstm and len(self.acts) == 1:  # the backend's whole-sequence kernel
            g_all, dh, dc, gw = table.lstm_sequence_backward(
                self.acts[0], h0._data, c0._data, w_hh._data, self.reverse, None if gy is None else gy._data,
                None if gh_n is None else gh_n._data, None if gc_n is None else gc_n._data, nh0, nc0, nw)
            seq, n, g = g_all.shape
            gb = table.sum(table.view(g_all, (seq * n, g)), (0,), False) if nb else None
            return (_make(g_all, dt, table) if ngi else None, _make(dh, dt, table) if nh0 else None,
                    _make(dc, dt, table) if nc0 else None, _make(gw, dt, table) if nw else None,
                    _make(gb, dt, table) if nb else None)
        cs, hs, acts = self.acts[:3]
        seq = gi_all.shape[0]
        steps = range(seq) if self.reverse else range(seq - 1, -1, -1)
        w = w_hh._data
        dh = gh_n._data if gh_n is not None else None
        dc = gc_n._data if lstm and gc_n is not None else None
        gyd = gy._data if gy is not None else None
        if lstm:  # d gates written into g_all's slots; the step's dy added inside the cell's backward
            g_all = table.empty((seq,) + tuple(gi_all.shape[1:]), dt.np)
            for t in steps:
                gyt = table.basic_index(gyd, (t,)) if gyd is not None else None
                if dh is None:
                    dh, gyt = (gyt, None) if gyt is not None else (table.full(tuple(hs[t].shape), 0, dt.np), None)
                dg, dc = _lstm_cell_backward(table, dh, dc, cs[t], acts[t], gyt, table.basic_index(g_all, (t,)))
                dh = table.matmul(dg, w)
            gh_all = g_all
        else:  # d gi / d gh written into their sequence buffers; the step's dy added inside the cell's backward
            g_all = table.empty((seq,) + tuple(gi_all.shape[1:]), dt.np)
            gh_all = table.empty((seq,) + tuple(gi_all.shape[1:]), dt.np)
            for t in steps:
                gyt = table.basic_index(gyd, (t,)) if gyd is not None else None
                if dh is None:
                    dh, gyt = (gyt, None) if gyt is not None else (table.full(tuple(hs[t].shape), 0, dt.np), None)
                _, dgh, dh_direct = _gru_cell_backward(table, dh, hs[t], acts[t], gyt, table.basic_index(g_all, (t,)),
                                                       table.basic_index(gh_all, (t,)))
                dh = table.add(dh_direct, table.matmul(dgh, w))
        hs_all = _lstm_states(table, self.acts[3], h0._data, seq, self.reverse)
        n, hsz = hs[0].shape
        gflat = table.view(gh_all, (seq * n, gh_all.shape[2]))
        gw = table.matmul(_t(table, gflat), table.view(hs_all, (seq * n, hsz))) if nw else None
        gb = table.sum(gflat, (0,), False) if nb else None
        return (_make(g_all, dt, table) if ngi else None, _make(dh, dt, table) if nh0 else None,
                _make(dc, dt, table) if nc0 and dc is not None else None,
                _make(gw, dt, table) if nw else None, _make(gb, dt, table) if nb else None)


class LstmSequenceBackward0(_RnnSequenceBackward):
    __slots__ = ()


class GruSequenceBackward0(_RnnSequenceBackward):
    __slots__ = ()


# the nodes as PyTorch names its layer's output node: a stack of the steps' outputs, or on the CPU in float32 the
# LSTM layer of oneDNN (MkldnnRnnLayerBackward0)
_NODES = {"LSTM": type("StackBackward0", (LstmSequenceBackward0,), {"__slots__": ()}),
          "LSTM_mkldnn": type("MkldnnRnnLayerBackward0", (LstmSequenceBackward0,), {"__slots__": ()}),
          "GRU": type("StackBackward0", (GruSequenceBackward0,), {"__slots__": ()})}


def usable(mode: str, gi_all, h0, c0, w_hh, b_hh) -> bool:
    return mode in ("LSTM", "GRU") and gi_all.shape[0] > 0 and h0.shape[0] > 0 and h0.shape[1] > 0 \
        and fused_ok(gi_all, h0, c0, w_hh, b_hh) \
        and (mode == "GRU" or (c0 is not None and c0.shape == h0.shape))  # LSTM without proj_size


def sequence(mode: str, gi_all, h0, c0, w_hh, b_hh, reverse: bool, composite):
    """The recurrence of one layer and direction: gi_all (L, N, G*H) the input projection (with b_ih), h0/c0
    (N, H) -> (ys (L, N, H), h_n, c_n or None) as one node.  ``composite(gi_all, h0, c0, w_hh, b_hh)`` returns the
    same from differentiable ops (the create_graph backward)."""
    table, dt = gi_all._be, gi_all.dtype
    lstm = mode == "LSTM"
    seq = gi_all.shape[0]
    w_t = _t(table, w_hh._data)
    b = None if b_hh is None else b_hh._data
    h, c = h0._data, (c0._data if lstm else None)
    gi = gi_all._data
    steps = range(seq - 1, -1, -1) if reverse else range(seq)
    if not table.host_memory:  # a device's matmul reads a transposed operand slower (or copies it every step)
        w_t = table.contiguous(w_t)
    if lstm and b is not None:  # the LSTM's b_hh joins the input projection once, not once per step
        gi = table.add(gi, b if table.native_broadcast else table.expand(b, tuple(gi.shape)))
    if lstm and table.has("lstm_sequence"):  # the backend runs the whole loop (and its backward) itself
        ys_all, h, c, *saved = table.lstm_sequence(gi, h, c, w_hh._data, reverse)
        acts = (tuple(saved),)
    else:
        ys_all, h, c, acts = _loop(table, dt, lstm, gi, h, c, w_t, b, seq, steps)
    need = (gi_all._rg, h0._rg, lstm and c0._rg, w_hh._rg, b_hh is not None and b_hh._rg)
    if not (_gs.enabled and any(need)):
        return (_make(ys_all, dt, table), _make(h, dt, table), _make(c, dt, table) if lstm else None)
    node = _NODES["LSTM_mkldnn" if lstm and table.type == "cpu" and dt is _dt.float32 else mode]()
    node.mode, node.reverse, node.need, node.composite = mode, reverse, need, composite
    node.acts = acts
    node.save(gi_all, h0, c0 if lstm else None, w_hh, b_hh)
    node.next_functions = tuple(_edge(x) if x is not None else (None, 0) for x in (gi_all, h0, c0 if lstm else None,
                                                                                  w_hh, b_hh))
    outs = [(ys_all, dt), (h, dt)] + ([(c, dt)] if lstm else [])
    node._out_meta = tuple((a.shape, d, table) for a, d in outs)
    return tuple(_make(a, d, table, node, out_nr=k) for k, (a, d) in enumerate(outs)) + ((None,) if not lstm else ())


def _loop(table, dt, lstm: bool, gi, h, c, w_t, b, seq: int, steps):
    """The time loop on per-step kernels: (ys (L, N, H), h_n, c_n, saved activations for the backward)."""
    cs, hs, acts = [None] * seq, [None] * seq, [None] * seq
    hbuf = table.empty((seq,) + tuple(h.shape), dt.np)   # each step's h written into its slot
    if lstm:
        for t in steps:
            hs[t], cs[t] = h, c
            h, c, acts[t] = _lstm_cell(table, table.matmul(h, w_t), c, table.basic_index(gi, (t,)),
                                       table.basic_index(hbuf, (t,)))
    else:
        for t in steps:
            hs[t] = h
            h, acts[t] = _gru_cell(table, table.basic_index(gi, (t,)), table.matmul(h, w_t), h, b,
                                   table.basic_index(hbuf, (t,)))
    ys_all = table.contiguous(hbuf)   # the output is the user's: the states saved for the backward stay private
    return ys_all, h, c, (cs, hs, acts, hbuf)
