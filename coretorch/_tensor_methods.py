# mypy: disable-error-code="method-assign,assignment,misc,arg-type"
# (this module attaches functions to Tensor by design; its assignments are what _tensor_api.pyi declares)
"""Bind the op layer onto Tensor as methods and operators (done once, at import)."""
from __future__ import annotations

import warnings

import numpy as np

from . import dtypes as _dt
from ._warn_once import warn_once
from .ops import creation as C, indexing as I, inplace as IP, linalg as L, pointwise as P, reduction as R
from .ops import shape as S
from .tensor import Tensor, _make

T = Tensor


def _method(fn):
    def m(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    m.__name__ = fn.__name__
    m.__doc__ = fn.__doc__
    return m


# plain methods with the same signature as the functional form
for _name, _fn in {
    "add": P.add, "sub": P.sub, "subtract": P.sub, "mul": P.mul, "multiply": P.mul, "div": P.div,
    "divide": P.div, "true_divide": P.div, "floor_divide": P.floor_divide, "remainder": P.remainder,
    "fmod": None, "pow": P.pow, "maximum": P.maximum, "minimum": P.minimum,
    "eq": P.eq, "ne": P.ne, "lt": P.lt, "le": P.le, "gt": P.gt, "ge": P.ge, "greater": P.gt,
    "greater_equal": P.ge, "less": P.lt, "less_equal": P.le, "not_equal": P.ne,
    "logical_and": P.logical_and, "logical_or": P.logical_or, "logical_xor": P.logical_xor,
    "logical_not": P.logical_not, "bitwise_and": P.bitwise_and, "bitwise_or": P.bitwise_or,
    "bitwise_xor": P.bitwise_xor, "bitwise_not": P.bitwise_not,
    "exp": P.exp, "log": P.log, "sqrt": P.sqrt, "rsqrt": P.rsqrt, "abs": P.abs, "absolute": P.abs,
    "sign": P.sign, "neg": P.neg, "negative": P.neg, "reciprocal": P.reciprocal, "sin": P.sin, "cos": P.cos,
    "tanh": P.tanh, "sigmoid": P.sigmoid, "relu": P.relu, "floor": P.floor, "ceil": P.ceil, "round": P.round,
    "trunc": P.trunc, "fix": P.trunc, "expm1": P.expm1, "log1p": P.log1p, "isnan": P.isnan, "square": P.square,
    "clamp": P.clamp, "clip": P.clamp, "clamp_min": P.clamp_min, "clamp_max": P.clamp_max,
    "lerp": P.lerp, "masked_fill": P.masked_fill, "where": lambda self, cond, other: P.where(cond, self, other),
    "sum": R.sum, "nansum": R.nansum, "mean": R.mean, "prod": R.prod, "max": R.max, "min": R.min,
    "amax": R.amax, "amin": R.amin, "argmax": R.argmax, "argmin": R.argmin, "var": R.var, "std": R.std,
    "logsumexp": R.logsumexp, "norm": R.norm, "all": R.all, "any": R.any, "cumsum": R.cumsum,
    "matmul": L.matmul, "mm": L.mm, "bmm": L.bmm, "addmm": L.addmm, "dot": L.dot, "mv": L.mv,
    "outer": L.outer, "t": S.t,
    "reshape": S.reshape, "view": S.view, "flatten": S.flatten, "unflatten": S.unflatten,
    "squeeze": S.squeeze, "unsqueeze": S.unsqueeze, "permute": S.permute, "transpose": S.transpose,
    "swapaxes": S.swapaxes, "swapdims": S.swapdims, "movedim": S.movedim, "expand": S.expand,
    "expand_as": S.expand_as, "broadcast_to": S.broadcast_to, "repeat": S.repeat, "flip": S.flip,
    "contiguous": S.contiguous, "clone": S.clone, "split": S.split, "chunk": S.chunk, "unbind": S.unbind,
    "unsafe_split": S.unsafe_split, "unsafe_split_with_sizes": S.unsafe_split_with_sizes,
    "unsafe_chunk": S.unsafe_chunk,
    "gather": I.gather, "scatter_add": I.scatter_add, "index_select": I.index_select,
    "index_add": I.index_add, "narrow": I.narrow, "select": I.select, "nonzero": I.nonzero,
    "masked_select": I.masked_select,
    "fill_": IP.fill_, "zero_": IP.zero_, "copy_": IP.copy_, "uniform_": IP.uniform_, "normal_": IP.normal_,
}.items():
    if _fn is not None:
        setattr(Tensor, _name, _method(_fn))


def _view_as(self, other):
    return S.view(self, other.shape)


def _reshape_as(self, other):
    """``self.reshape(other.shape)``."""
    return S.reshape(self, other.shape)


def _flip(self, *dims, **kw):
    """x.flip(0, 2) as x.flip((0, 2)) (PyTorch's method takes the dims as varargs too, or ``dims=``)."""
    if kw:
        dims = S._keyword_arg("flip", "dims", dims, kw)
    return S.flip(self, dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims)


def _split(self, split_size, dim: int = 0):
    """``torch.split(self, split_size, dim)`` (the method names its argument ``split_size``, as PyTorch's)."""
    return S.split(self, split_size, dim)


def _softmax(self, dim, dtype=None):
    from .nn import functional as F
    return F.softmax(self, dim, dtype=dtype)


def _log_softmax(self, dim, dtype=None):
    from .nn import functional as F
    return F.log_softmax(self, dim, dtype=dtype)


Tensor.flip = _flip
Tensor.split = _split
Tensor.softmax = _softmax
Tensor.log_softmax = _log_softmax
Tensor.itemsize = property(lambda self: self.dtype.itemsize)
Tensor.nbytes = property(lambda self: self.dtype.itemsize * self.numel())
Tensor.view_as = _view_as
Tensor.reshape_as = _reshape_as
Tensor.fmod = P.fmod
Tensor.type_as = lambda self, other: self.to(other.dtype)
Tensor.new_zeros = lambda self, *size, dtype=None, device=None, requires_grad=False: C.zeros(
    *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
Tensor.new_ones = lambda self, *size, dtype=None, device=None, requires_grad=False: C.ones(
    *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
Tensor.new_full = lambda self, size, fill_value, dtype=None, device=None, requires_grad=False: C.full(
    size, fill_value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
Tensor.new_empty = lambda self, *size, dtype=None, device=None, requires_grad=False: C.empty(
    *size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)
Tensor.new_tensor = lambda self, data, dtype=None, device=None, requires_grad=False: C.tensor(
    data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


# ---- conversions ----
def _to(self, *args, **kwargs):
    """A tensor with the given device and/or dtype (``self`` when nothing changes).

    Accepts ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)`` and the keywords
    ``dtype``, ``device``, ``non_blocking``, ``copy`` (always copy). Differentiable.

    Example:
        >>> torch.ones(2).to(torch.float64).dtype
        coretorch.float64
    """
    device, dtype, copy = C.parse_to_args(args, dict(kwargs))
    fmt = kwargs.get("memory_format")
    if fmt is not None:  # (a channels-last request: that layout, a copy where self is not laid out so)
        return _layout(C.convert(self, dtype, device, copy), fmt, self)
    return C.convert(self, dtype, device, copy)


def _layout(t, fmt, src):
    """``t`` (``src`` converted) laid out as ``to(memory_format=fmt)`` asks, as PyTorch: channels-last (``t`` where
    it is so already); row-major for ``contiguous_format``, where a copy was made or ``src``'s strides suggest
    channels-last (``src`` itself otherwise, even when it is not row-major)."""
    from . import _compat
    from .ops import _memfmt
    from .ops.shape import clone, contiguous
    r = _memfmt.rank(fmt)
    if r:
        _memfmt.check(fmt, t.ndim)
        shape = tuple(t.shape)
        if t is src and _memfmt.strides_like_channels_last(shape, t.stride()):
            return t  # (PyTorch's to_will_alias: self where its strides suggest that layout already)
        if t is not src and tuple(t.stride()) == _memfmt.canonical_strides(shape, r):
            return t  # (the conversion's copy is laid out so already)
        return clone(t, memory_format=fmt)  # (its layout: c10's channels-last strides, size-1 dims included)
    if fmt is _compat.contiguous_format:
        if t is not src:
            return contiguous(t)
        if _memfmt.strides_like_channels_last(tuple(src.shape), src.stride()):
            return clone(src, memory_format=fmt)
    return t


Tensor.to = _to
Tensor.cpu = lambda self: C.convert(self, None, "cpu")
for _name, _d in {"float": _dt.float32, "double": _dt.float64, "half": _dt.float16, "long": _dt.int64,
                  "int": _dt.int32, "short": _dt.int16, "char": _dt.int8, "byte": _dt.uint8,
                  "bool": _dt.bool_, "bfloat16": _dt.bfloat16}.items():
    setattr(Tensor, _name, (lambda d: lambda self, memory_format=None: C.convert(self, d) if memory_format is None
                            else _layout(C.convert(self, d), memory_format, self))(_d))


@property
def _T(self):
    """The tensor with its dimensions reversed (``permute(n-1, ..., 0)``); for a matrix, its transpose."""
    nd = self.ndim
    if nd != 2 and nd != 1:  # (PyTorch's TORCH_WARN_ONCE, one for 0-d tensors and one for more dims)
        warn_once("T.0d" if nd == 0 else "T.nd", "Tensor.T is deprecated on 0-D tensors. This function is the "
                  "identity in these cases." if nd == 0 else
                  "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
                  "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
                  "matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of "
                  "a tensor.", 2)
    return S.permute(self, tuple(range(nd - 1, -1, -1)))


@property
def _mT(self):
    """The transpose of the last two dimensions (a batch of matrices transposed), a view."""
    if self.ndim < 2:
        if self.ndim == 1:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.",
                      UserWarning, stacklevel=2)
        return S.transpose(self, 0, 0)
    return S.transpose(self, -2, -1)


Tensor.T = _T
Tensor.mT = _mT


# ---- operators ----
def _rsub(self, other):
    return P.rsub(self, other)  # (PyTorch's __rsub__ is rsub: ``1 - x`` records RsubBackward1)


def _rdiv(self, other):
    if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, bool):
        # PyTorch's Tensor.__rtruediv__: reciprocal(self) * other (its rounding: 3.0 / tensor([7.]) is
        # 0.42857146, not 3 / 7 rounded once; and 1e5 / half([4.]) is 24992, the scalar in float32)
        return P.mul(P.reciprocal(self), other)
    return P.div(other, self)


def _rpow(self, other):
    return P.pow(other, self)


def _rfloordiv(self, other):
    return P.floor_divide(other, self)


def _rmod(self, other):
    return P.remainder(other, self)


def _rmatmul(self, other):
    return L.matmul(other, self)


def _neg(self):
    if self.dtype is _dt.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    return P.neg(self)


def _invert(self):
    if self.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return P.bitwise_not(self)


Tensor.__add__ = Tensor.__radd__ = P._add  # the op functions themselves: no extra frame per operator
Tensor.__sub__ = P._sub
Tensor.__rsub__ = _rsub
Tensor.__mul__ = Tensor.__rmul__ = P.mul
Tensor.__truediv__ = P._div
Tensor.__rtruediv__ = _rdiv
Tensor.__floordiv__ = lambda self, other: P.floor_divide(self, other)
Tensor.__rfloordiv__ = _rfloordiv
Tensor.__mod__ = lambda self, other: P.remainder(self, other)
Tensor.__rmod__ = _rmod
Tensor.__pow__ = lambda self, other: P.pow(self, other)
Tensor.__rpow__ = _rpow
Tensor.__matmul__ = lambda self, other: L.matmul(self, other)
Tensor.__rmatmul__ = _rmatmul
Tensor.__neg__ = _neg
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: P.abs(self)
Tensor.__invert__ = _invert
Tensor.__and__ = Tensor.__rand__ = lambda self, other: P.bitwise_and(self, other)
Tensor.__or__ = Tensor.__ror__ = lambda self, other: P.bitwise_or(self, other)
Tensor.__xor__ = Tensor.__rxor__ = lambda self, other: P.bitwise_xor(self, other)
Tensor.__eq__ = lambda self, other: P.eq(self, other) if _cmp_ok(other) else NotImplemented
Tensor.__ne__ = lambda self, other: P.ne(self, other) if _cmp_ok(other) else NotImplemented
Tensor.__lt__ = lambda self, other: P.lt(self, other)
Tensor.__le__ = lambda self, other: P.le(self, other)
Tensor.__gt__ = lambda self, other: P.gt(self, other)
Tensor.__ge__ = lambda self, other: P.ge(self, other)
Tensor.__getitem__ = I.getitem
Tensor.__setitem__ = I.setitem


def _cmp_ok(other) -> bool:  # (numpy's numbers and arrays: numpy defers to us, see Tensor.__array_priority__)
    return isinstance(other, (Tensor, int, float, bool, np.number, np.bool_, np.ndarray))


# ---- in-place arithmetic ----
def _inplace_binary(name, fn):
    def m(self, other, *args, **kwargs):
        return IP.apply_inplace(self, name, lambda s: fn(s, other, *args, **kwargs), other)
    m.__name__ = name
    if name == "pow_":  # x.pow_(exponent=2): PyTorch's name (see pointwise's pow)
        def pow_(self, exponent):
            return IP.apply_inplace(self, name, lambda s: fn(s, exponent), exponent)
        return pow_
    return m


def _inplace_unary(name, fn):
    def m(self, *args, **kwargs):
        return IP.apply_inplace(self, name, lambda s: fn(s, *args, **kwargs))
    m.__name__ = name
    return m


def _fast_inplace(name, fn):
    if name in ("add_", "sub_"):
        def m(self, other, *, alpha=1):
            return IP.binary_inplace(self, name, fn, other, alpha)
    else:
        def m(self, other, *, rounding_mode=None):
            if rounding_mode is not None:
                return IP.apply_inplace(self, name, lambda s: fn(s, other, rounding_mode=rounding_mode), other)
            return IP.binary_inplace(self, name, fn, other)
    m.__name__ = name
    return m


for _name, _fn in {"add_": P.add, "sub_": P.sub, "mul_": P.mul, "div_": P.div}.items():
    setattr(Tensor, _name, _fast_inplace(_name, _fn))

Tensor.scatter_add_ = lambda self, dim, index, src: IP.apply_inplace(
    self, "scatter_add_", lambda s: I.scatter_add(s, dim, index, src), src)
Tensor.index_add_ = lambda self, dim, index, source, *, alpha=1: IP.apply_inplace(
    self, "index_add_", lambda s: I.index_add(s, dim, index, source, alpha=alpha), source)

for _name, _fn in {"pow_": P.pow,
                   "floor_divide_": P.floor_divide, "remainder_": P.remainder, "fmod_": P.fmod, "maximum_": P.maximum,
                   "minimum_": P.minimum, "copysign_": None}.items():
    if _fn is not None:
        setattr(Tensor, _name, _inplace_binary(_name, _fn))


# (PyTorch's keyword names: masked_fill_(mask, value), lerp_(end, weight))
def _masked_fill_(self, mask, value):
    return IP.apply_inplace(self, "masked_fill_", lambda s: P.masked_fill(s, mask, value), mask)


def _lerp_(self, end, weight):
    return IP.apply_inplace(self, "lerp_", lambda s: P.lerp(s, end, weight), end)


Tensor.masked_fill_, Tensor.lerp_ = _masked_fill_, _lerp_
for _name, _fn in {"clamp_": P.clamp, "clip_": P.clamp, "exp_": P.exp, "log_": P.log, "sqrt_": P.sqrt,
                   "abs_": P.abs, "neg_": P.neg, "sigmoid_": P.sigmoid, "tanh_": P.tanh, "relu_": P.relu,
                   "reciprocal_": P.reciprocal, "floor_": P.floor, "ceil_": P.ceil, "round_": P.round,
                   "trunc_": P.trunc, "sign_": P.sign, "sin_": P.sin, "cos_": P.cos, "rsqrt_": P.rsqrt,
                   "clamp_min_": P.clamp_min, "clamp_max_": P.clamp_max, "square_": P.square}.items():
    setattr(Tensor, _name, _inplace_unary(_name, _fn))

# the in-place forms of comparisons, logical/bitwise ops, expm1/log1p, cumsum/cumprod (the result cast to the
# tensor's own dtype, as PyTorch: x.eq_(y) stores 1.0 / 0.0 in a float x; a float result into an integer x raises)
for _name, _fn in {"eq_": P.eq, "ne_": P.ne, "lt_": P.lt, "le_": P.le, "gt_": P.gt, "ge_": P.ge,
                   "logical_and_": P.logical_and, "logical_or_": P.logical_or,
                   "logical_xor_": P.logical_xor}.items():
    setattr(Tensor, _name, _inplace_binary(_name, _fn))
for _name, _fn in {"logical_not_": P.logical_not, "bitwise_not_": P.bitwise_not, "expm1_": P.expm1,
                   "log1p_": P.log1p}.items():
    setattr(Tensor, _name, _inplace_unary(_name, _fn))


def _inplace_bitwise(name, fn):
    def m(self, other):
        rt = _dt.result_type((self, other), _dt.default)
        if self.dtype is not _dt.bool_ and not self.dtype.is_floating_point and not IP._castable(rt, self.dtype) \
                or self.dtype is _dt.bool_ and rt is not _dt.bool_:  # PyTorch checks the cast before the kernel
            raise RuntimeError(f"result type {rt._tname[:-6]} can't be cast to the desired output type "
                               f"{self.dtype._tname[:-6]}")
        return IP.apply_inplace(self, name, lambda s: fn(s, other), other)
    m.__name__ = name
    return m


for _name, _fn in {"bitwise_and_": P.bitwise_and, "bitwise_or_": P.bitwise_or, "bitwise_xor_": P.bitwise_xor}.items():
    setattr(Tensor, _name, _inplace_bitwise(_name, _fn))


def _inplace_scan(name):
    def m(self, dim, *, dtype=None):
        if self.dtype is _dt.bool_:
            raise NotImplementedError(f"\"{name[:-1]}_out_cpu\" not implemented for 'Bool'")
        if dtype is not None and dtype is not self.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {self.dtype} and output tensor dtype {dtype} "
                               "should match")
        return IP.apply_inplace(self, name, lambda s: getattr(s, name[:-1])(dim, dtype=self.dtype))
    m.__name__ = name
    return m


Tensor.cumsum_, Tensor.cumprod_ = _inplace_scan("cumsum_"), _inplace_scan("cumprod_")


def _iop(fn_name):
    def m(self, other):
        return getattr(self, fn_name)(other)
    return m


Tensor.__iadd__ = _iop("add_")
Tensor.__isub__ = _iop("sub_")
Tensor.__imul__ = _iop("mul_")
Tensor.__itruediv__ = _iop("div_")
Tensor.__ipow__ = _iop("pow_")
Tensor.__ifloordiv__ = _iop("floor_divide_")
Tensor.__imod__ = _iop("remainder_")
Tensor.__iand__ = lambda self, other: IP.apply_inplace(self, "bitwise_and_", lambda s: P.bitwise_and(s, other))
Tensor.__ior__ = lambda self, other: IP.apply_inplace(self, "bitwise_or_", lambda s: P.bitwise_or(s, other))
Tensor.__ixor__ = lambda self, other: IP.apply_inplace(self, "bitwise_xor_", lambda s: P.bitwise_xor(s, other))
_ = _make


# the op families' methods (coretorch.ops.<family>.METHODS), bound last: a family may redefine a method above
def _bind_families():
    from .ops import FAMILIES
    for mod in FAMILIES:
        for name, fn in mod.METHODS.items():
            setattr(Tensor, name, fn)


_bind_families()
Tensor.sgn, Tensor.sgn_ = Tensor.sign, Tensor.sign_  # real tensors: sgn is sign
for _alias, _name in {"divide_": "div_", "multiply_": "mul_", "subtract_": "sub_", "absolute_": "abs_",
                      "negative_": "neg_", "fix_": "trunc_", "greater_": "gt_", "greater_equal_": "ge_",
                      "less_": "lt_", "less_equal_": "le_", "not_equal_": "ne_"}.items():
    setattr(Tensor, _alias, getattr(Tensor, _name))  # PyTorch's alias names of the in-place forms
