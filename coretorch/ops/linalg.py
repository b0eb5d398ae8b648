"""Matrix products: matmul (with NumPy/PyTorch 1-D and batch-broadcast rules), mm, bmm, addmm, dot."""
from __future__ import annotations

from .. import dtypes as _dt
from ..amp.autocast_mode import cast_inputs as _ac_cast, state as _ac, suspended as _ac_suspended
from ..autograd._node_names import named_node
from ..autograd._zero import keep_graph as _keep_graph
from ..autograd.grad_mode import state as _gs
from ..autograd.graph import Node
from ..tensor import Tensor, _make
from ._out import write_out
from ._util import align_devices, broadcast_shape, edge, sum_to


class MmBackward0(Node):
    __slots__ = ("sa", "sb", "need")

    def backward(self, g):
        a, b = self.saved()
        na, nb = self.need
        ga = sum_to(_matmul_nd(g, _mT(b)), self.sa) if na else None
        if nb and len(self.sb) == 2 and len(self.sa) > 2:
            # a matrix applied to a batch (nn.Linear on (B, T, k)): one (k, B*T) @ (B*T, m) product, not a
            # batched product summed over the batch
            k, m = self.sa[-1], g.shape[-1]
            gb = _matmul_nd(_mT(a.reshape(-1, k)), g.reshape(-1, m))
        else:
            gb = sum_to(_matmul_nd(_mT(a), g), self.sb) if nb else None
        return ga, gb


def _mT(x: Tensor) -> Tensor:
    """Swap the last two dims (a view; the hot path of matmul's backward)."""
    nd = x._data.ndim
    dims = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    node = None
    if x._rg and _gs.enabled:
        node = _shape.PermuteBackward0()
        node.inv = dims
    return _shape._wrap_view(x, x._be.permute(x._data, dims), node)


def bmm_dtype_check(a: Tensor, b: Tensor) -> None:
    """PyTorch's bmm errors: its kernel is chosen by the first operand's dtype (none for bool:
    NotImplementedError), which the second must match (RuntimeError)."""
    if a.dtype is _dt.bool_:
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype._tname[:-6]} but found {b.dtype._tname[:-6]}")


def _matmul_nd(a: Tensor, b: Tensor) -> Tensor:
    """a (..., n, k) @ b (..., k, m), both at least 2-D; batch dims broadcast."""
    if a._be is not b._be:
        a, b = align_devices("matmul", a, b)
    table = a._be
    xa, xb = a._data, b._data
    sa, sb = xa.shape, xb.shape
    if a.dtype is not b.dtype:
        if len(sb) > 2:  # PyTorch's matmul takes bmm for a batched right operand
            bmm_dtype_check(a, b)
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_dt.cpp_name(a.dtype)} != "
                           f"{_dt.cpp_name(b.dtype)}")
    if sa[-1] != sb[-2]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, sa))} and "
                           f"{'x'.join(map(str, sb))})")
    if a.dtype is _dt.bool_:
        # PyTorch has no bool product kernel, but an empty product (no output or k = 0) needs none: all False
        shape = broadcast_shape(sa[:-2], sb[:-2], "matmul") + (sa[-2], sb[-1])
        if sa[-1] and 0 not in shape:
            if len(sb) > 2:
                bmm_dtype_check(a, b)
            raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
        return _make(table.full(shape, False, _dt.bool_.np), _dt.bool_, table)
    if len(sb) == 2 and len(sa) > 2:
        # (..., n, k) @ (k, m): the batch folded into the rows makes one large product (BLAS libraries run a
        # stack of small products, or a zero-stride broadcast weight, several times slower)
        rows = 1
        for d in sa[:-1]:
            rows *= d
        flat = table.view(xa, (rows, sa[-1]))
        if flat is None:
            flat = table.view(table.contiguous(xa), (rows, sa[-1]))
        out = table.view(table.matmul(flat, xb), sa[:-1] + (sb[-1],))
    else:
        if sa[:-2] != sb[:-2]:
            batch = broadcast_shape(sa[:-2], sb[:-2], "matmul")
            if sa[:-2] != batch:
                xa = table.expand(xa, batch + sa[-2:])
            if sb[:-2] != batch:
                xb = table.expand(xb, batch + sb[-2:])
        out = table.matmul(xa, xb)
    if _gs.enabled and (a._rg or b._rg):
        node = MmBackward0()
        node.sa, node.sb, node.need = sa, sb, (a._rg, b._rg)
        node.save(a if b._rg else None, b if a._rg else None)  # only what a gradient reads (PyTorch)
        node.next_functions = (edge(a), edge(b))
        return _make(out, a.dtype, table, node)
    return _make(out, a.dtype, table)


def matmul(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Matrix product with broadcasting, by the operands' dimensions.

    1-D x 1-D is a dot product, 2-D x 2-D a matrix product, 1-D operands are treated as a row (left) or
    column (right) vector, and N-D operands are batches of matrices whose batch dimensions broadcast.

    Args:
        input (Tensor): shape ``(*, n, m)`` (or ``(m,)``).
        other (Tensor): shape ``(*, m, p)`` (or ``(m,)``).
        out (Tensor, optional): the output tensor.

    Example:
        >>> torch.matmul(torch.ones(10, 2, 3), torch.ones(3, 4)).shape
        coretorch.Size([10, 2, 4])
    """
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, other = _ac_cast("matmul", input, other)
    if out is not None:
        return write_out("matmul", out, _matmul(input, other), exact_dtype=True)
    return _matmul(input, other)


def _matmul(input: Tensor, other: Tensor) -> Tensor:
    """matmul without autocast's check (dot and mv: ops of their own there, as in PyTorch)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("matmul(): arguments must be Tensors")
    da, db = input.ndim, other.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1 and input.dtype is _dt.bool_ and other.dtype is _dt.bool_:
        raise NotImplementedError("\"dot\" not implemented for 'Bool'")  # (even empty: PyTorch's dot kernel)
    from .shape import squeeze, unsqueeze
    a = unsqueeze(input, 0) if da == 1 else input
    b = unsqueeze(other, -1) if db == 1 else other
    if da == 1 and db == 1 and input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got {input.shape[0]} "
                           f"and {other.shape[0]} elements respectively")
    if input.shape[-1] != other.shape[-2 if db > 1 else 0] and input.dtype is other.dtype and (da > 1 or db > 1):
        _size_error(input.shape, other.shape)
    out = _matmul_nd(a, b)
    if da == 1:
        out = squeeze(out, -2)
    if db == 1:
        out = squeeze(out, -1)
    if da == 1 or db == 1:
        # the squeezed product is a fresh tensor to the caller, as PyTorch's dot/mv (its base is internal): in-place
        # ops on it are not in-place ops on a view
        out._vbase = None
    if out.grad_fn is not None and (da != 2 or db != 2):
        named_node(out, _matmul_node_name(da, db, input._rg))
    return out


def _size_error(sa: tuple, sb: tuple) -> None:
    """PyTorch's error for operands whose inner sizes differ, in the terms of the product its matmul runs: mv of the
    rows folded (``(2, 2, 3) @ (4,)``), mm of them (``(2, 2, 3) @ (4, 2)``), bmm over the broadcast batch."""
    k, da, db = sa[-1], len(sa), len(sb)
    rows = 1
    for d in sa[:-1]:
        rows *= d
    if db == 1:
        raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({sb[0]})")
    if db == 2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows if da > 1 else 1}x{k} and "
                           f"{sb[0]}x{sb[1]})")
    batch = 1
    for d in broadcast_shape(sa[:-2], sb[:-2], "matmul"):
        batch *= d
    raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k}] but got: "
                       f"[{batch}, {sb[-2]}].")


def _matmul_node_name(da: int, db: int, a_grad: bool) -> str:
    """PyTorch's grad_fn name for matmul of a ``da``-D and a ``db``-D operand (its dot, mv, squeezed mm, folded
    or batched product ending with an _unsafe_view; a 2-D left operand of a batch is transposed and cloned when it
    needs a gradient)."""
    if da == 1 and db == 1:
        return "DotBackward0"
    if da == 2 and db == 1:
        return "MvBackward0"
    if da == 1 and db == 2:
        return "SqueezeBackward4"
    return "CloneBackward0" if da == 2 and a_grad else "UnsafeViewBackward0"


def mm(input: Tensor, mat2: Tensor, *, out=None) -> Tensor:
    """Matrix product of 2-D tensors: ``(n, m) @ (m, p) -> (n, p)`` (no broadcasting)."""
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, mat2 = _ac_cast("mm", input, mat2)
    if input.ndim != 2:
        raise RuntimeError(f"self must be a matrix (mm got a {input.ndim}-D tensor)")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix (mm got a {mat2.ndim}-D tensor)")
    if out is not None:
        return write_out("mm", out, _matmul_nd(input, mat2), exact_dtype=True)
    return _matmul_nd(input, mat2)


def bmm(input: Tensor, mat2: Tensor, *, out=None) -> Tensor:
    """Batched matrix product: ``out[b] = input[b] @ mat2[b]``.

    Args:
        input (Tensor): shape ``(B, n, m)``.
        mat2 (Tensor): shape ``(B, m, p)``.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: shape ``(B, n, p)``. No broadcasting (see :func:`matmul` for that).
    """
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, mat2 = _ac_cast("bmm", input, mat2)
    if input.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (bmm got {input.ndim}-D)")
    if mat2.ndim != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor (bmm got {mat2.ndim}-D)")
    if input.shape[0] != mat2.shape[0] or input.shape[2] != mat2.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    r = _matmul_nd(input, mat2)
    if r.grad_fn is not None:
        named_node(r, "BmmBackward0")
    if out is not None:
        return write_out("bmm", out, r, exact_dtype=True)
    return r


class AddmmBackward0(Node):
    """One node for input + mat1 @ mat2 (what nn.Linear is made of): three gradients, no temporaries."""
    __slots__ = ("si", "need")

    def backward(self, g):
        m1, m2 = self.saved()   # m1 saved where mat2 needs its gradient, m2 where mat1 does
        ni, n1, n2 = self.need
        ref = m1 if m1 is not None else m2
        if not _gs.enabled and ref is not None and g.dtype is ref.dtype and g._be is ref._be and \
                (m1 is None or m1._data.ndim == 2) and (m2 is None or m2._data.ndim == 2):
            # plain backward (grad mode off: no graph to build, whatever needs grad): kernel calls only
            table, gd, dt = g._be, g._data, g.dtype
            return (sum_to(g, self.si) if ni else None,
                    _make(table.matmul(gd, table.permute(m2._data, _T2)), dt, table) if n1 else None,
                    _make(table.matmul(table.permute(m1._data, _T2), gd), dt, table) if n2 else None)
        return (sum_to(g, self.si) if ni else None,
                _matmul_nd(g, _mT(m2)) if n1 else None,
                _matmul_nd(_mT(m1), g) if n2 else None)


def int_scalar(v, dt):
    """A beta/alpha of an integer product as PyTorch converts it: checked, truncated (beta=0.5 is 0)."""
    return int(_dt.fit_scalar(v, dt)) if isinstance(v, float) else int(v)


def check_expand(input: Tensor, target: tuple) -> None:
    """PyTorch's check that the ``input`` of a fused product (addmm, baddbmm, addr...) expands to the product's
    shape, whatever beta is (beta=0 too), with expand's message."""
    si = tuple(input.shape)
    if si == target:
        return
    if len(si) > len(target):
        raise RuntimeError(f"expand(torch.{input.dtype._tname}{{{list(si)}}}, size={list(target)}): the number of "
                           f"sizes provided ({len(target)}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({len(si)})")
    for i in range(1, len(si) + 1):
        if si[-i] != 1 and si[-i] != target[-i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                               f"({si[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(si)}")


def in_float32(op, input: Tensor, *tensors: Tensor, **kwargs) -> Tensor:
    """``op`` of float32 copies of its float16/bfloat16 tensor arguments, rounded once to ``input``'s dtype: PyTorch's
    op math for the fused product-and-add ops.  Autocast is suspended meanwhile (an enabled region would cast the
    float32 copies back down: endless recursion)."""
    dt = input.dtype
    args = (input.float(),) + tuple(t.float() for t in tensors)
    off = _ac_suspended(input) if _ac.on else None
    if off is None:
        return op(*args, **kwargs).to(dt)
    with off:
        return op(*args, **kwargs).to(dt)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), input broadcast to the product's shape."""
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        input, mat1, mat2 = _ac_cast("addmm", input, mat1, mat2)
    if isinstance(input, Tensor) and input.dtype is not mat2.dtype and mat1.dtype is mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {input.dtype._tname[:-6]} and "
                           f"{mat2.dtype._tname[:-6]}")
    if (mat1.dtype is _dt.float16 or mat1.dtype is _dt.bfloat16) and isinstance(input, Tensor) and \
            input.dtype is mat1.dtype is mat2.dtype:
        # float32 op math: product, scalars and input summed before the one rounding, as PyTorch's reduced-float
        # addmm (the product rounded to half first: an ulp off in a quarter of the elements)
        return named_node(in_float32(addmm, input, mat1, mat2, beta=beta, alpha=alpha), "AddmmBackward0")
    if alpha != 1 or beta != 1 or not isinstance(input, Tensor) or input.dtype is not mat1.dtype \
            or input._be is not mat1._be:
        from .pointwise import add, mul
        if not mat1.dtype.is_floating_point and mat1.dtype is not _dt.bool_:
            beta, alpha = int_scalar(beta, mat1.dtype), int_scalar(alpha, mat1.dtype)
        p = mm(mat1, mat2)
        if alpha != 1:
            p = mul(p, alpha)
        if isinstance(input, Tensor):
            check_expand(input, p._data.shape)
        if beta == 0:  # input ignored (its nan/inf too), yet in the graph with a zero gradient, as PyTorch
            return _keep_graph(p, (input,), "AddmmBackward0", always=True)
        return add(mul(input, beta) if beta != 1 else input, p)
    prev = _gs.enabled
    _gs.enabled = False  # the product is recorded below as part of one AddmmBackward0 node
    try:
        p = mm(mat1, mat2)
    finally:
        _gs.enabled = prev
    shape = p._data.shape
    if input._data.shape != shape:
        check_expand(input, shape)
    table = p._be
    out = p._data  # a fresh buffer from mm: add the input in place (one pass, no temporary)
    if table.has("iadd"):
        table.iadd(out, input._data if table.native_broadcast or input._data.shape == shape
                   else table.expand(input._data, shape))
    else:
        xi = input._data if input._data.shape == shape else table.expand(input._data, shape)
        out = table.add(out, xi)
    if _gs.enabled and (input._rg or mat1._rg or mat2._rg):
        node = AddmmBackward0()
        node.si = input._data.shape
        node.need = (input._rg, mat1._rg, mat2._rg)
        node.save(mat1 if mat2._rg else None, mat2 if mat1._rg else None)  # only what a gradient reads
        node.next_functions = (edge(input), edge(mat1), edge(mat2))
        return _make(out, p.dtype, table, node)
    return _make(out, p.dtype, table)


class LinearBackward(Node):
    """x @ W.T (+ b) as one node (F.linear on 2-D input): no transposed-weight node in between.  With a bias its
    edges are in PyTorch's addmm order, (bias, input, weight): ``next_functions[0][0]`` is the bias's leaf."""
    __slots__ = ("sb", "need")

    def backward(self, g):
        gx, gw, gb = self._grads(g)
        return (gx, gw) if self.sb is None else (gb, gx, gw)

    def _grads(self, g):
        x, w = self.saved()   # x saved where the weight needs its gradient, w where the input does
        nx, nw, nb = self.need
        ref = x if x is not None else w
        if not _gs.enabled and (ref is None or (g.dtype is ref.dtype and g._be is ref._be)):
            # plain backward (no graph to build): the backend's fused kernel or three kernel calls, none of the
            # op-level checks
            table, gd, dt = g._be, g._data, g.dtype
            if table.has_linear and x is not None and w is not None and (not nb or self.sb == gd.shape[1:]):
                gx, gw, gb = table.linear_backward(gd, x._data, w._data, nx, nw, nb)
                return (_make(gx, dt, table) if nx else None, _make(gw, dt, table) if nw else None,
                        _make(gb, dt, table) if nb else None)
            return (_make(table.matmul(gd, w._data), dt, table) if nx else None,
                    _make(table.matmul(table.permute(gd, _T2), x._data), dt, table) if nw else None,
                    sum_to(g, self.sb) if nb else None)
        return (_matmul_nd(g, w) if nx else None,
                _matmul_nd(_mT(g), x) if nw else None,
                sum_to(g, self.sb) if nb else None)


AddmmBackwardLinear = type("AddmmBackward0", (LinearBackward,), {"__slots__": ()})
MmBackwardLinear = type("MmBackward0", (LinearBackward,), {"__slots__": ()})


def linear2d(input: Tensor, weight: Tensor, bias=None) -> Tensor:
    """input (N, in) @ weight (out, in).T + bias (out,): the hot path of nn.Linear (callers have checked that
    input and weight are 2-D, and that all three share dtype and device)."""
    xd, wd = input._data, weight._data
    if xd.shape[1] != wd.shape[1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({xd.shape[0]}x{xd.shape[1]} and "
                           f"{wd.shape[1]}x{wd.shape[0]})")
    if input.dtype is _dt.bool_:  # no bool product kernel, as PyTorch's (an empty product needs none)
        return _matmul_nd(input, weight.t()) if bias is None else _matmul_nd(input, weight.t()) + bias
    table = input._be
    if table.has_linear and (bias is None or bias._data.shape == wd.shape[:1]):
        bd = None if bias is None else bias._data
        out = table.linear(xd, wd, bd)
        brg = bias is not None and bias._rg
    else:
        out = table.matmul(xd, table.permute(wd, _T2))
        brg = False
        if bias is not None:
            bd = bias._data
            if bd.shape != out.shape[1:] and broadcast_shape(bd.shape, out.shape, "linear") != out.shape:
                raise RuntimeError(f"linear: the bias of shape {list(bias.shape)} cannot be broadcast to the "
                                   f"output shape {list(out.shape)}")
            if table.has_iadd:
                table.iadd(out, bd if table.native_broadcast else table.expand(bd, out.shape))
            else:
                out = table.add(out, table.expand(bd, out.shape))
            brg = bias._rg
    if (input._rg or weight._rg or brg) and _gs.enabled:
        node = AddmmBackwardLinear() if bias is not None else MmBackwardLinear()
        node.sb = bias._data.shape if bias is not None else None
        node.need = (input._rg, weight._rg, brg)
        node.save(input if weight._rg else None, weight if input._rg else None)  # only what a gradient reads
        node.next_functions = (edge(input), edge(weight)) if bias is None else (edge(bias), edge(input), edge(weight))
        return _make(out, input.dtype, table, node)
    return _make(out, input.dtype, table)


_T2 = (1, 0)


def dot(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The dot product of two 1-D tensors of the same length (a 0-d tensor)."""
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, other = _ac_cast("dot", input, other)
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if isinstance(other, Tensor) and input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input.dtype._tname[:-6]} and "
                           f"{other.dtype._tname[:-6]}")
    if out is not None:
        return write_out("dot", out, _matmul(input, other), exact_dtype=True)
    return _matmul(input, other)


def mv(input: Tensor, vec: Tensor, *, out=None) -> Tensor:
    """Matrix-vector product: ``(n, m) @ (m,) -> (n,)``."""
    if _ac.on and out is None:  # autocast: the op's dtype policy (one attribute check when off)
        input, vec = _ac_cast("mv", input, vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}")
    if out is not None:
        return write_out("mv", out, _matmul(input, vec), exact_dtype=True)
    return _matmul(input, vec)


def outer(input: Tensor, vec2: Tensor, *, out=None) -> Tensor:
    """The outer product of two 1-D tensors: ``out[i, j] = input[i] * vec2[j]``, shape ``(n, m)``."""
    from .pointwise import mul
    from .shape import unsqueeze
    # PyTorch checks both are 1-D: broadcasting a 2-D input would give a silent 3-D "outer product"
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return write_out("outer", out, mul(unsqueeze(input, 1), unsqueeze(vec2, 0)), inputs=(input, vec2))

from . import shape as _shape  # noqa: E402  (late: shape imports _util, which imports us back)
