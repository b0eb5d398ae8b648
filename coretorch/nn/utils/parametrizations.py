"""nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal as parametrizations (PyTorch's
formulas; each registers through nn.utils.parametrize)."""
from __future__ import annotations

from enum import Enum, auto

from ... import dtypes as _dt
from ...autograd.grad_mode import no_grad
from ...ops import creation as _C, linalg as _L, pointwise as _P, reduction as _R, shape as _S
from ...tensor import Tensor
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm", "norm_except_dim"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002  (PyTorch's name)
    """The ``pow``-norm over every dim but ``dim`` (kept with size 1), or of everything when dim == -1."""
    if dim == -1:
        return _R.norm(v, pow)
    if not -v.ndim <= dim < v.ndim:  # (PyTorch's transpose(0, dim) refuses it; a wrap-around picked another dim)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-v.ndim}, {v.ndim - 1}], but got "
                         f"{dim})")
    d = dim % v.ndim
    moved = _S.movedim(v, d, 0).reshape(v.shape[d], -1)
    shape = [1] * v.ndim
    shape[d] = v.shape[d]
    return _R.norm(moved, pow, 1).reshape(shape)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """v * g / ||v|| (the norm taken over every dim but ``dim``)."""
    return _P.mul(v, _P.div(g, norm_except_dim(v, 2, dim)))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """``module.<name>`` = g * v / ||v||, with ``original0`` = g (the norms) and ``original1`` = v.  A state dict
    of the older ``nn.utils.weight_norm`` (``<name>_g``, ``<name>_v``) loads into it, as in PyTorch."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = _C.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            v = _C.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = _S.movedim(weight, self.dim, 0)
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(_L.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_L.mv(_S.t(weight_mat), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = _L.dot(u, _L.mv(weight_mat, v))
        return _P.div(weight, sigma)

    def right_inverse(self, value):
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """``module.<name>`` divided by its largest singular value, estimated by power iteration (one step per
    training forward; the vectors ``_u``/``_v`` are buffers)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i column i of A below the diagonal and 1 on it (the first
    k columns of it: n x k, as torch.linalg.householder_product), composed from differentiable ops."""
    n, k = A.shape[-2], A.shape[-1]
    eye = _C.eye(n, dtype=A.dtype, device=A.device)
    lower = _P.add(A.tril(-1), eye[:, :k])                 # unit lower-trapezoidal: the v_i as columns
    q = _S.expand(eye, tuple(A.shape[:-2]) + (n, n))
    for i in range(k):
        v = lower[..., :, i:i + 1]                          # (..., n, 1)
        qv = _L.matmul(q, v)
        q = _P.sub(q, _P.mul(_L.matmul(qv, _S.transpose(v, -2, -1)), _S.unsqueeze(_S.unsqueeze(tau[..., i], -1), -1)))
    return q[..., :, :k]


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of A = QR with R's diagonal made positive (a continuous choice of Q)."""
    from ...linalg import qr
    Q, R = qr(A)
    return _P.mul(Q, _S.unsqueeze(_P.sign(R.diagonal(dim1=-2, dim2=-1)), -2))


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2], Q.shape[-1]
    eye = _C.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * _dt.finfo(Q.dtype).eps
    from ...ops.comparison import allclose
    return bool(allclose(_L.matmul(_S.transpose(Q, -2, -1), Q), _S.expand(eye, tuple(Q.shape[:-2]) + (k, k)),
                         atol=eps))


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = _S.cat([X, _C.zeros(tuple(X.shape[:-2]) + (n, n - k), dtype=X.dtype, device=X.device)], -1)
            A = _P.sub(X, X.mT)
            if self.orthogonal_map is _OrthMaps.matrix_exp:
                from ...linalg import matrix_exp
                Q = matrix_exp(A)
            else:
                from ...linalg import solve
                eye = _C.eye(n, dtype=A.dtype, device=A.device)
                Q = solve(_P.sub(eye, _P.mul(A, 0.5)), _P.add(eye, _P.mul(A, 0.5)))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = _P.div(2.0, _P.add(_R.sum(_P.mul(A, A), -2), 1.0))
            Q = _householder_product(A, tau)
            Q = _P.mul(Q, _S.unsqueeze(X.diagonal(dim1=-2, dim2=-1).to(_dt.int32), -2))
        if getattr(self, "base", None) is not None:
            Q = _L.matmul(self.base, Q)
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if tuple(Q.shape) != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of "
                                 f"shape {tuple(Q.shape)}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            if n < k:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map is not _OrthMaps.householder:
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                # PyTorch's: the reflectors of Q = QR (geqrf), the diagonal made the signs (+-1, -1 where no
                # reflection was used), so that forward's householder product times diag(sign) gives Q back
                from ...ops._householder import geqrf
                A, tau = geqrf(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                signs = diag.sign()
                diag.copy_(signs.where(tau != 0.0, -signs))
                return A.mT if Q_init.shape[-2] < Q_init.shape[-1] else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = _C.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(_S.cat([Q, N], -1))
            self.base = Q
            neg_id = _C.zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """``module.<name>`` constrained to (semi-)orthogonal matrices through the matrix exponential, the Cayley map or
    Householder reflections of an unconstrained matrix (``matrix_exp`` for square weights by default)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
