"""One-node forms of layer_norm and scaled_dot_product_attention (issue 14's transformer speed).

Each runs on kernel calls only (no op layer, no intermediate graph nodes): a backend's fused kernels where it has
them (the cpu backend's ``layer_norm``/``layer_norm_backward``/``softmax_backward``), otherwise a few primitive
kernels.  The plain backward (grad mode off, what ``loss.backward()`` runs) uses the same kernels; a backward that
builds a graph (``create_graph=True``) re-runs the differentiable composite on the saved inputs and differentiates
it, so double backward gives what the composite gives.  The callers in ``_normalization.py`` and ``_attention.py``
take these paths for float32/float64 operands of one device, and the composite otherwise.
"""
from __future__ import annotations

from ... import dtypes as _dt
from ...autograd import grad as _autograd_grad
from ...autograd.grad_mode import enable_grad
from ...autograd.grad_mode import state as _gs
from ...autograd.graph import Node
from ...ops._util import edge as _edge
from ...tensor import _make

_FLOATS = (_dt.float32, _dt.float64)


def _composite_grads(fn, inputs: tuple, need: tuple, grads: tuple) -> tuple:
    """Gradients for ``inputs`` (those marked in ``need``) of ``fn(*inputs)`` against ``grads``, as a graph:
    the backward of a fused node when the caller asked for create_graph.  An input passed twice (self-attention's
    ``q is k is v``) is differentiated through an alias per slot: the gradient for one slot is its own part, not
    the whole (the engine sums the slots: the whole counted once per slot before)."""
    with enable_grad():
        if len({id(t) for t in inputs if t is not None}) < sum(t is not None for t in inputs):
            inputs = tuple(t.view_as(t) if t is not None and n else t for t, n in zip(inputs, need))
        outs = fn(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o is not None]
    want = [t for t, n in zip(inputs, need) if n]
    res = iter(_autograd_grad([o for o, _ in pairs], want, [g for _, g in pairs], create_graph=True,
                              allow_unused=True))
    return tuple(next(res) if n else None for n in need)


# ---------------------------------------------------------------------------------------------
# layer_norm
# ---------------------------------------------------------------------------------------------
class NativeLayerNormBackward0(Node):
    __slots__ = ("k", "eps", "need", "mean", "rstd", "composite")

    def backward(self, g):
        x, w, b = self.saved()
        nx, nw, nb = self.need
        if _gs.enabled:  # create_graph: the composite's graph
            return _composite_grads(lambda x_, w_, b_: self.composite(x_, self.k, w_, b_, self.eps), (x, w, b),
                                    self.need, (g,))
        table = x._be
        gd = g._data if g.dtype is x.dtype else table.cast(g._data, x.dtype.np)
        gx, gw, gb = _ln_backward(table, gd, x._data, self.mean, self.rstd, None if w is None else w._data,
                                  self.k, nx, nw, nb)
        dt = x.dtype
        return (_make(gx, dt, table) if nx else None, _make(gw, dt, table) if nw else None,
                _make(gb, dt, table) if nb else None)


def _axes(nd: int, k: int) -> tuple:
    return tuple(range(nd - k, nd))


def _ln_forward(table, x, w, b, eps, k):
    if table.has("layer_norm"):
        return table.layer_norm(x, w, b, eps, k)
    axes = _axes(len(x.shape), k)
    n = 1
    for s in x.shape[len(x.shape) - k:]:
        n *= s
    mean = table.div(table.sum(x, axes, True), n)
    xc = table.sub(x, mean)
    rstd = table.rsqrt(table.add(table.div(table.sum(table.mul(xc, xc), axes, True), n), eps))
    y = table.mul(xc, _bc(table, rstd, x.shape))
    if w is not None:
        y = table.mul(y, _bc(table, w, x.shape))
    if b is not None:
        y = table.add(y, _bc(table, b, x.shape))
    return y, mean, rstd


def _bc(table, a, shape):
    """a broadcast to shape for a backend whose binary kernels do not broadcast by themselves."""
    return a if table.native_broadcast or tuple(a.shape) == tuple(shape) else table.expand(a, tuple(shape))


def _ln_backward(table, g, x, mean, rstd, w, k, nx, nw, nb):
    if table.has("layer_norm_backward"):
        return table.layer_norm_backward(g, x, mean, rstd, w, k, nx, nw, nb)
    shape = tuple(x.shape)
    nd = len(shape)
    axes = _axes(nd, k)
    lead = tuple(range(nd - k))
    n = 1
    for s in shape[nd - k:]:
        n *= s
    xhat = table.mul(table.sub(x, _bc(table, mean, shape)), _bc(table, rstd, shape))
    gw = table.sum(table.mul(g, xhat), lead, False) if nw else None
    gb = table.sum(g, lead, False) if nb else None
    gx = None
    if nx:
        gxh = table.mul(g, _bc(table, w, shape)) if w is not None else g
        a = table.div(table.sum(gxh, axes, True), n)
        c = table.div(table.sum(table.mul(gxh, xhat), axes, True), n)
        gx = table.sub(table.sub(gxh, _bc(table, a, shape)), table.mul(xhat, _bc(table, c, shape)))
        gx = table.mul(gx, _bc(table, rstd, shape))
    return gx, gw, gb


def fused_ok(*ts) -> bool:
    """Every operand (None allowed) a float32/float64 tensor of the first one's device and dtype."""
    first = ts[0]
    if first.dtype not in _FLOATS:
        return False
    for t in ts[1:]:
        if t is not None and (t.dtype is not first.dtype or t._be is not first._be):
            return False
    return True


def layer_norm(x, k: int, w, b, eps: float, composite):
    """F.layer_norm over the last k dims as one NativeLayerNormBackward0 node (arguments checked by the
    caller); ``composite(x, k, w, b, eps)`` is the differentiable form a create_graph backward differentiates."""
    table = x._be
    y, mean, rstd = _ln_forward(table, x._data, None if w is None else w._data, None if b is None else b._data,
                                eps, k)
    need = (x._rg, w is not None and w._rg, b is not None and b._rg)
    if _gs.enabled and (need[0] or need[1] or need[2]):
        node = NativeLayerNormBackward0()
        node.k, node.eps, node.need, node.mean, node.rstd, node.composite = k, eps, need, mean, rstd, composite
        node.save(x, w, b)
        node.next_functions = (_edge(x), _edge(w) if w is not None else (None, 0),
                               _edge(b) if b is not None else (None, 0))
        return _make(y, x.dtype, table, node)
    return _make(y, x.dtype, table)


# ---------------------------------------------------------------------------------------------
# scaled_dot_product_attention: scores, mask, softmax and the weighted sum in one node
# ---------------------------------------------------------------------------------------------
def _t(table, a):
    """The last two dims swapped (a view)."""
    n = len(a.shape)
    return table.permute(a, tuple(range(n - 2)) + (n - 1, n - 2))


def _softmax_last(table, s):
    if table.has("softmax"):
        return table.softmax(s, len(s.shape) - 1)
    ax = (len(s.shape) - 1,)
    m = table.amax(s, ax, True)
    m = table.where(table.eq(m, float("-inf")), 0.0, m)
    e = table.exp(table.sub(s, _bc(table, m, s.shape)))
    return table.div(e, _bc(table, table.sum(e, ax, True), s.shape))


def _softmax_back_last(table, gp, p):
    if table.has("softmax_backward"):
        return table.softmax_backward(gp, p, len(p.shape) - 1)
    s = table.sum(table.mul(gp, p), (len(p.shape) - 1,), True)
    return table.mul(p, table.sub(gp, _bc(table, s, p.shape)))


class ScaledDotProductAttentionBackward0(Node):
    """PyTorch names the node by its kernel (ScaledDotProductFlashAttentionForCpuBackward0 on CPU); this is the
    one-node attention of coretorch, saving q, k, v and the probabilities."""
    __slots__ = ("scale", "need", "p", "composite")

    def backward(self, g):
        q, k, v = self.saved()
        nq, nk, nv = self.need
        if _gs.enabled:
            return _composite_grads(self.composite, (q, k, v), self.need, (g,))
        table, dt = q._be, q.dtype
        gd = g._data if g.dtype is dt else table.cast(g._data, dt.np)
        p = self.p
        gv = table.matmul(_t(table, p), gd) if nv else None
        gq = gk = None
        if nq or nk:
            gs = _softmax_back_last(table, table.matmul(gd, _t(table, v._data)), p)
            if self.scale != 1.0:
                gs = table.mul(gs, self.scale)
            gq = table.matmul(gs, k._data) if nq else None
            gk = table.matmul(_t(table, gs), q._data) if nk else None
        return (_make(gq, dt, table) if nq else None, _make(gk, dt, table) if nk else None,
                _make(gv, dt, table) if nv else None)


def attention(q, k, v, mask, scale: float, composite, safe: bool = False):
    """softmax(q k^T * scale + mask) v as one node: q (..., L, E), k (..., S, E), v (..., S, Ev) with equal batch
    dims, ``mask`` None or an additive array broadcastable to (..., L, S) (no gradient);
    ``composite(q, k, v)`` is the differentiable form a create_graph backward differentiates.  ``safe``: a row
    whose every score is -inf (a user's mask) gets probabilities 0, not NaN (PyTorch's _safe_softmax)."""
    table = q._be
    s = table.matmul(q._data, _t(table, k._data))
    if scale != 1.0:
        s = table.mul(s, scale)
    if mask is not None:
        if len(mask.shape) < len(s.shape):
            mask = table.view(mask, (1,) * (len(s.shape) - len(mask.shape)) + tuple(mask.shape))
        s = table.add(s, _bc(table, mask, s.shape))
    p = _softmax_last(table, s)
    if safe:
        dead = table.eq(table.amax(s, (len(s.shape) - 1,), True), float("-inf"))
        p = table.where(_bc(table, dead, s.shape), 0.0, p)
    out = table.matmul(p, v._data)
    need = (q._rg, k._rg, v._rg)
    if _gs.enabled and (need[0] or need[1] or need[2]):
        node = ScaledDotProductAttentionBackward0()
        node.scale, node.need, node.p, node.composite = scale, need, p, composite
        node.save(q, k, v)
        node.next_functions = (_edge(q), _edge(k), _edge(v))
        return _make(out, q.dtype, table, node)
    return _make(out, q.dtype, table)
