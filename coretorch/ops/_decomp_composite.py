"""The parts of coretorch.linalg composed of device tensor ops (no new kernels; autograd for free): norms,
matrix_power, matrix_exp, multi_dot, cross, vecdot, diagonal."""
from __future__ import annotations

from typing import Any

import math

from .. import dtypes as _dt
from ..amp.autocast_mode import below as _ac_below, cast_inputs as _ac_cast, state as _ac
from ..autograd._node_names import named_node, saves_also
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from . import creation as _C, indexing as _I, reduction as _R, shape as _S
from ._decomp_ops import check_float, check_matrix, inv, svdvals
from ._reduction_norm import check_narrowing
from ._util import broadcast_shape, norm_dim, norm_dims
from .linalg import matmul
from . import triangular as _tri

_INF = float("inf")


# ---- norms -----------------------------------------------------------------------------------------------------
def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The vector ``ord``-norm of ``x``: over all elements, or over ``dim``.

    Args:
        x (Tensor): the input (float).
        ord (float): 2 (default), ``inf``, ``-inf``, 0 (the count of nonzeros) or any real ``p``.
        dim (int or tuple of ints, optional): the dimensions to reduce; all when None.
        keepdim (bool): keep the reduced dimensions.
        dtype (dtype, optional): compute in this dtype.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg.vector_norm(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    dtype = _dt.from_python_type(dtype)
    if _ac.on and dtype is None:  # autocast: the op's dtype policy (one attribute check when off)
        (x,) = _ac_cast("vector_norm", x)
    if isinstance(ord, str) or isinstance(ord, bool):
        raise TypeError(f"linalg.vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}")
    check_narrowing("linalg.vector_norm", x, dtype)
    if (ord < 0 or ord == _INF) and x.numel() == 0:
        _R.check_norm_identity(x, ord, dim)
    if isinstance(dim, int):
        dim = (dim,)
    if x.ndim == 0 and dim is not None:
        norm_dims(dim, 0, "linalg.vector_norm")  # (dims 0 and -1 only, each once, as PyTorch checks)
        dim = None  # a 0-d tensor has dims 0 and -1, and nothing to reduce over
    if ord == 2:
        ord = "fro"  # the reduction's fused 2-norm (zero gradient where the norm is 0, as PyTorch)
    if ord == -_INF or (isinstance(ord, (int, float)) and ord < 0 and ord != -_INF):
        if not x.dtype.is_floating_point or dtype is not None and not dtype.is_floating_point:
            return _R.norm(x, ord, dim, keepdim, dtype)  # (its dtype checks)
        if dtype is not None:
            x = x.to(dtype)
        return _R.norm(x, ord, dim, keepdim)  # (its node: a zero gradient at x = 0 and where the norm is 0)
    return _R.norm(x, ord, dim, keepdim, dtype)


def _mdims(A: Tensor, dim) -> tuple:
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    d0, d1 = norm_dim(dim[0], A.ndim, "linalg.matrix_norm"), norm_dim(dim[1], A.ndim, "linalg.matrix_norm")
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """A matrix norm over the two dimensions ``dim``.

    Args:
        A (Tensor): shape ``(*, m, n)``.
        ord: ``"fro"`` (default), ``"nuc"``, ``inf``, ``-inf``, 1, -1, 2 or -2.
        dim (tuple of 2 ints): the matrix dimensions (default ``(-2, -1)``).
        keepdim (bool): keep the reduced dimensions.
        dtype (dtype, optional): compute in this dtype.
    """
    if _ac.on and dtype is None and isinstance(A, Tensor):  # autocast (one attribute check when off)
        (A,) = _ac_cast("matrix_norm", A)
    if dtype is not None:
        dtype = _dt.from_python_type(dtype)
        check_narrowing("linalg.matrix_norm", A, dtype)
        A = A.to(dtype)
    if not (A.dtype.is_floating_point and (ord == "fro" or ord in (1, -1, _INF, -_INF))):
        check_float("linalg.matrix_norm", A)  # (PyTorch takes half/bfloat16 for the orders without an SVD)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    d0, d1 = _mdims(A, dim)
    if ord == "fro":
        return _R.norm(A, "fro", (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        B = _S.movedim(A, (d0, d1), (-2, -1))
        s = svdvals(B)
        # (an empty matrix's 2-norm is 0, as its largest column or row sum below: PyTorch takes their maximum as
        # an inf-norm, 0 over nothing; the minimum over nothing raises)
        r = s.sum(-1) if ord == "nuc" or (ord == 2 and not s.shape[-1]) else s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            r = _S.unsqueeze(_S.unsqueeze(r, min(d0, d1)), max(d0, d1))
        return r
    if ord in (1, -1, _INF, -_INF):
        # 1: the largest column sum (sum over rows d0, then max over d1); inf: the largest row sum
        sdim, mdim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = _R.sum(A.abs(), sdim, True)
        reduce = (_R.amax if s.shape[mdim] else _R.sum) if ord > 0 else _R.amin
        r = reduce(s, mdim, True)
        if keepdim:
            return r
        r = _S.squeeze(_S.squeeze(r, max(d0, d1)), min(d0, d1))
        return named_node(r, "AmaxBackward0" if ord > 0 else "AminBackward0")  # (PyTorch reduces without keepdim)
    if ord is None or not isinstance(ord, (int, float, str)):  # (PyTorch's argument parser: a number or a string)
        raise TypeError(f"linalg_matrix_norm(): argument 'ord' must be Number or str, not {type(ord).__name__}")
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """linalg.norm: a vector norm for an int dim (or ord None and dim None: the 2-norm of the flattened input), a
    matrix norm for a 2-tuple dim or a 2-D input with an ord."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if dim is not None and len(dim) == 2 and ord is not None:
        return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                               f"{A.ndim}D.")
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if isinstance(ord, str):
        if dim is not None and len(dim) == 2:
            return matrix_norm(A, ord, dim, keepdim, dtype=dtype)
        raise RuntimeError(f"linalg.vector_norm: ord {ord!r} is a matrix norm: pass a 2-tuple dim")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# ---- matrix functions ------------------------------------------------------------------------------------------
def matrix_power(A: Tensor, n: int) -> Tensor:
    """The ``n``-th power of a square matrix (or batch); ``n < 0`` inverts first, ``n = 0`` gives the identity."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_power(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {A.shape[-2]} "
                           f"by {A.shape[-1]} matrices")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        return _S.expand(eye, tuple(A.shape)).clone() + A * 0  # joins the graph with a zero gradient, as PyTorch
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:  # binary powering: about 2 log2(n) matmuls
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    assert result is not None  # n > 0 here
    return result if result is not A else A.clone()


def _taylor_exp(X: Tensor, degree: int) -> Tensor:
    """sum_{k <= degree} X^k / k! by Paterson-Stockmeyer: the powers X^2..X^s (s ~ sqrt(degree)), then Horner's rule
    in X^s over polynomials of X of degree < s (about 2 sqrt(degree) matmuls instead of degree)."""
    s = math.isqrt(degree + 1)
    s += s * s < degree + 1
    eye = _C.eye(X.shape[-1], dtype=X.dtype, device=X.device)
    powers = [eye, X]
    for _ in range(2, s + 1):
        powers.append(matmul(powers[-1], X))
    Xs = powers[s]
    coef = [1 / math.factorial(k) for k in range(degree + 1)]

    def block(j: int) -> Tensor:  # sum_{i < s} c_{sj+i} X^i
        acc = None
        for i in range(s):
            k = s * j + i
            if k <= degree:
                term = powers[i] * coef[k]
                acc = term if acc is None else acc + term
        assert acc is not None  # i = 0 is always in range (s * j <= degree)
        return acc
    r = degree // s
    P = block(r)
    for j in range(r - 1, -1, -1):
        P = matmul(P, Xs) + block(j)
    return P


def _squarings(nrm: Tensor) -> int:
    """The least ``s >= 0`` with ``nrm <= 2^s`` (0 for a NaN or infinite ``nrm``), read on the host as integers and
    test outcomes, not as the norm: a compiled step checks these again, where the norm itself differed at every
    call (a parametrization's ``matrix_exp`` then never replayed).  A device ``log2`` estimate, checked exactly
    against powers of two; where it is off by rounding, the norm itself (as before)."""
    from . import comparison as _cmp, pointwise as _P, special as _sp  # (modules above this one)
    big = _P.logical_and(_cmp.isfinite(nrm), _P.gt(nrm, 1.0))
    est = int(_P.where(big, _P.ceil(_sp.log2(nrm)), 0.0).item())
    if est == 0:
        ok = _P.logical_not(big)
    else:
        ok = _P.logical_and(_P.gt(nrm, 2.0 ** (est - 1)), _P.le(nrm, 2.0 ** est))
    if ok.item():
        return est
    x = float(nrm)
    if not (x > 1 and math.isfinite(x)):
        return 0
    m, e = math.frexp(x)  # x = m * 2^e, 0.5 <= m < 1
    return e - 1 if m == 0.5 else e


@_ac_below  # (PyTorch's one kernel is on no autocast list: its matmuls keep A's dtype)
def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) by scaling and squaring of a degree-18 Taylor polynomial (||A / 2^s||_1 <= 1: the truncation error is
    below 1 / 19! relative), all matmuls on A's device, differentiable."""
    check_matrix("linalg.matrix_exp", A)
    if A.numel() == 0:
        return A.clone()
    with no_grad():  # the 1-norm of the largest matrix sets the number of squarings
        s = _squarings(_R.amax(_R.sum(A.detach().abs(), -2), None))
    E = _taylor_exp(A / (2.0 ** s) if s else A, 18 if A.dtype.itemsize == 8 else 12)
    for _ in range(s):
        E = matmul(E, E)
    return E


_CXX_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "int16": "short int",
              "int8": "signed char", "uint8": "unsigned char", "bool": "bool", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16"}


def _cxx_name(dt) -> str:
    """A dtype as PyTorch's C++ messages print a scalar type's TypeMeta (float, double, long int, ...)."""
    name = str(dt).rpartition(".")[2]
    return _CXX_NAMES.get(name, name)


def multi_dot(tensors) -> Tensor:
    """A chain of matmuls in the cheapest order (the matrix-chain dynamic programme); the first and last may be 1-D."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    if _ac.on:  # autocast: the op's dtype policy (one attribute check when off)
        tensors = list(_ac_cast("multi_dot", *tensors))
    first1, last1 = tensors[0].ndim == 1, tensors[-1].ndim == 1
    for i, t in enumerate(tensors):
        if i == 0 and t.ndim not in (1, 2):
            raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {t.ndim}D")
        if i == len(tensors) - 1 and t.ndim not in (1, 2):
            raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {t.ndim}D")
        if 0 < i < len(tensors) - 1 and t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
        if t.dtype is not tensors[0].dtype:  # (PyTorch checks it before the shapes, naming dtypes as C++ does)
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_cxx_name(tensors[0].dtype)} and tensor {i} {_cxx_name(t.dtype)}")
    mats = list(tensors)
    if first1:
        mats[0] = _S.unsqueeze(mats[0], 0)
    if last1:
        mats[-1] = _S.unsqueeze(mats[-1], -1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    k = len(mats)
    cost: list[list[Any]] = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def chain(i: int, j: int) -> Tensor:
        if i == j:
            return mats[i]
        s = split[i][j]
        return matmul(chain(i, s), chain(s + 1, j))
    out = chain(0, k - 1)
    if first1:
        out = _S.squeeze(out, 0)
    if last1:
        out = _S.squeeze(out, -1)
    return out


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """sum(conj(x) * y, dim) with broadcasting (real tensors: the plain dot product along dim); float16/bfloat16
    products and sum in float32, rounded once, as PyTorch's (in half, 300 * 300 - 300 * 300 was inf - inf)."""
    if _ac.on:  # autocast: a lower-precision op (PyTorch's linalg_vecdot)
        x, y = _ac_cast("vecdot", x, y)
    rt = _dt.promote_types(x.dtype, y.dtype) if isinstance(x, Tensor) and isinstance(y, Tensor) else None
    if rt is not None:  # (PyTorch's checks: floating inputs of one dtype)
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                               f"{x.dtype._tname[:-6]}")
        if x.dtype is not y.dtype:
            raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                               f"{x.dtype._tname[:-6]} and y of type {y.dtype._tname[:-6]} instead")
    if rt is _dt.float16 or rt is _dt.bfloat16:
        return _R.sum(x.float() * y.float(), dim).to(rt)
    return _R.sum(x * y, dim)


_ROT1, _ROT2 = (1, 2, 0), (2, 0, 1)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (inputs broadcast), from index_select and arithmetic."""
    if _ac.on:  # autocast: torch.cross's promotion on GPU-like devices, for linalg.cross too (before the check)
        input, other = _ac_cast("cross", input, other)
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype is not other.dtype:  # (PyTorch's kernel: one dtype, no promotion)
        raise RuntimeError(f"expected scalar type {input.dtype._tname[:-6]} but found {other.dtype._tname[:-6]}")
    shape = broadcast_shape(tuple(input.shape), tuple(other.shape), "linalg.cross")
    if not shape:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    d = norm_dim(dim, len(shape), "linalg.cross")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    a, b = _S.broadcast_to(input, shape), _S.broadcast_to(other, shape)
    i1 = _C.tensor(list(_ROT1), device=a.device)
    i2 = _C.tensor(list(_ROT2), device=a.device)
    sel = _I.index_select
    # (PyTorch's node saves both inputs: an in-place change of one raises at the backward; ours saved index_selects)
    return saves_also(sel(a, d, i1) * sel(b, d, i2) - sel(a, d, i2) * sel(b, d, i1), input, other)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """linalg.diagonal: torch.diagonal with the matrix dims last by default (a view, as in PyTorch)."""
    return _tri.diagonal(A, offset, dim1, dim2)
