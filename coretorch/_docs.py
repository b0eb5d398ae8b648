"""Docstrings of the API that is made at import time rather than written with ``def`` (PyTorch keeps such docs in
``torch/_torch_docs.py`` and ``torch/_tensor_docs.py`` the same way).

- The element-wise ops built by factories (``exp = _make_unary("exp", ...)``, ``mul = _make_binary(...)``) get
  their docstrings from the templates below.
- Tensor methods bound from an op (``Tensor.exp`` is ``coretorch.exp`` with ``self`` as ``input``) get the op's
  docstring under a line naming it, and an in-place ``Tensor.foo_`` without its own docstring says it is the
  in-place ``Tensor.foo``.
- The legacy typed-tensor classes (``FloatTensor``, ...) say what they are.

``apply()`` runs once at the end of ``import coretorch`` and only fills docstrings that are missing: a docstring
written in the source always wins.  tools/doc_coverage.py measures the result.
"""
from __future__ import annotations

import inspect
from typing import Any

from .ops import pointwise

_INPUT = """

Args:
    input (Tensor): the input tensor.

Returns:
    Tensor: a new tensor of ``input``'s shape."""

_FLOAT = "\n\nInteger and bool inputs are computed in (and return) the default float dtype."

# name -> (what each element becomes, extra note)
UNARY: dict[str, tuple[str, str]] = {
    "abs": ("its absolute value ``|x|``", ""),
    "neg": ("its negation ``-x``", ""),
    "negative": ("its negation ``-x`` (alias of :func:`neg`)", ""),
    "exp": ("its exponential ``e**x``", _FLOAT),
    "expm1": ("``exp(x) - 1``, accurate for small ``x``", _FLOAT),
    "log": ("its natural logarithm (NaN below 0, ``-inf`` at 0)", _FLOAT),
    "log1p": ("``log(1 + x)``, accurate for small ``x``", _FLOAT),
    "sqrt": ("its square root (NaN below 0)", _FLOAT),
    "rsqrt": ("the reciprocal of its square root ``1 / sqrt(x)``", _FLOAT),
    "reciprocal": ("its reciprocal ``1 / x``", _FLOAT),
    "sin": ("its sine (radians)", _FLOAT),
    "cos": ("its cosine (radians)", _FLOAT),
    "tanh": ("its hyperbolic tangent", _FLOAT),
    "sigmoid": ("the logistic sigmoid ``1 / (1 + exp(-x))``", _FLOAT),
    "relu": ("``max(x, 0)`` (the rectified linear unit)", ""),
    "floor": ("the largest integer not greater than it", "\n\nInteger inputs are returned unchanged (a copy)."),
    "ceil": ("the smallest integer not less than it", "\n\nInteger inputs are returned unchanged (a copy)."),
    "trunc": ("its integer part, rounded toward zero", "\n\nInteger inputs are returned unchanged (a copy)."),
    "fix": ("its integer part, rounded toward zero (alias of :func:`trunc`)", ""),
    "isnan": ("True where it is NaN (a bool tensor)", ""),
    "logical_not": ("True where it is zero (a bool tensor)", ""),
}

# name -> (what is computed, result rule)
_CMP = "a bool tensor; the operands broadcast, and are compared after type promotion"
_LOGICAL = "a bool tensor; nonzero elements count as True and the operands broadcast"
_BITWISE = "integer or bool operands (the promoted dtype); the operands broadcast"
_ARITH = "the promoted dtype of the operands (a Python number does not widen a tensor's dtype category); the " \
         "operands broadcast"
BINARY: dict[str, tuple[str, str]] = {
    "mul": ("the product ``input * other``", _ARITH),
    "multiply": ("the product ``input * other`` (alias of :func:`mul`)", _ARITH),
    "pow": ("``input`` raised to the power ``other``", _ARITH + "; an integer base with a negative integer "
            "exponent raises RuntimeError"),
    "maximum": ("the larger of the two elements (NaN if either is NaN)", _ARITH),
    "minimum": ("the smaller of the two elements (NaN if either is NaN)", _ARITH),
    "remainder": ("the remainder of ``input / other`` with the sign of the divisor (Python's ``%``)", _ARITH),
    "eq": ("True where ``input == other``", _CMP),
    "ne": ("True where ``input != other``", _CMP),
    "not_equal": ("True where ``input != other`` (alias of :func:`ne`)", _CMP),
    "lt": ("True where ``input < other``", _CMP),
    "less": ("True where ``input < other`` (alias of :func:`lt`)", _CMP),
    "le": ("True where ``input <= other``", _CMP),
    "less_equal": ("True where ``input <= other`` (alias of :func:`le`)", _CMP),
    "gt": ("True where ``input > other``", _CMP),
    "greater": ("True where ``input > other`` (alias of :func:`gt`)", _CMP),
    "ge": ("True where ``input >= other``", _CMP),
    "greater_equal": ("True where ``input >= other`` (alias of :func:`ge`)", _CMP),
    "logical_and": ("the logical AND of the elements", _LOGICAL),
    "logical_or": ("the logical OR of the elements", _LOGICAL),
    "logical_xor": ("the logical XOR of the elements", _LOGICAL),
    "bitwise_and": ("the bitwise AND of the elements (logical for bool)", _BITWISE),
    "bitwise_or": ("the bitwise OR of the elements (logical for bool)", _BITWISE),
    "bitwise_xor": ("the bitwise XOR of the elements (logical for bool)", _BITWISE),
}

# Tensor methods and properties bound at import time from lambdas or shared helpers (the name, not the
# helper, says what they do)
TENSOR: dict[str, str] = {
    "absolute": "Alias of :meth:`abs`.",
    "bfloat16": "``self.to(bfloat16)``: a copy cast to bfloat16 (``self`` if it already is).",
    "bool": "``self.to(bool)``: a copy cast to bool (``self`` if it already is).",
    "byte": "``self.to(uint8)``: a copy cast to uint8 (``self`` if it already is).",
    "char": "``self.to(int8)``: a copy cast to int8 (``self`` if it already is).",
    "double": "``self.to(float64)``: a copy cast to float64 (``self`` if it already is).",
    "float": "``self.to(float32)``: a copy cast to float32 (``self`` if it already is).",
    "half": "``self.to(float16)``: a copy cast to float16 (``self`` if it already is).",
    "int": "``self.to(int32)``: a copy cast to int32 (``self`` if it already is).",
    "long": "``self.to(int64)``: a copy cast to int64 (``self`` if it already is).",
    "short": "``self.to(int16)``: a copy cast to int16 (``self`` if it already is).",
    "fill_": "Fill ``self`` with the value (a number or a 0-d tensor); returns ``self``.",
    "zero_": "Fill ``self`` with zeros; returns ``self``.",
    "copy_": "Copy the elements of ``src`` into ``self`` (broadcast, cast to ``self``'s dtype, across devices); "
             "returns ``self``. Differentiable with respect to ``src``.",
    "contiguous": "``self`` if it is contiguous (row-major), else a contiguous copy.",
    "itemsize": "The size of one element in bytes.",
    "nbytes": "The number of bytes of the elements (``numel() * element_size()``).",
    "expand": "A view of ``self`` with size-1 dimensions repeated (without copying) to the given sizes; -1 keeps a "
              "size and new leading dimensions may be added.\n\nExample:\n"
              "    >>> torch.zeros(3, 1).expand(3, 4).shape\n"
              "    coretorch.Size([3, 4])",
    "expand_as": "``self.expand(other.size())``.",
    "indices": "The indices of a sparse COO tensor, ``(sparse_dim, nnz)`` int64.",
    "values": "The values of a sparse COO tensor, ``(nnz, *dense_shape)``.",
    "is_cuda": "Whether the tensor is on a CUDA device (always False in coretorch; kept for PyTorch compatibility).",
    "is_meta": "Whether the tensor is a meta tensor (always False in coretorch; kept for PyTorch compatibility).",
    "is_mkldnn": "Whether the tensor is an MKL-DNN tensor (always False in coretorch; kept for PyTorch compatibility).",
    "is_mps": "Whether the tensor is on an MPS device (always False in coretorch; kept for PyTorch compatibility).",
    "is_nested": "Whether the tensor is a nested tensor (always False in coretorch; kept for PyTorch compatibility).",
    "is_pinned": "Whether the tensor is in pinned memory (always False in coretorch; kept for PyTorch compatibility).",
    "is_quantized": "Whether the tensor is quantized (always False in coretorch; kept for PyTorch compatibility).",
    "is_xpu": "Whether the tensor is on an XPU device (always False in coretorch; kept for PyTorch compatibility).",
    "is_sparse": "Whether the tensor is a sparse COO tensor.",
    "repeat": "The tensor tiled ``sizes[i]`` times along each dimension (a copy; extra leading sizes add "
              "dimensions).\n\nExample:\n    >>> torch.tensor([1, 2]).repeat(2, 2)\n    tensor([[1, 2, 1, 2],\n"
              "            [1, 2, 1, 2]])",
    "view": "A view of ``self`` with another shape (the same elements, no copy; one size may be -1), or with "
            "another dtype of the same element size (``view(dtype)``). Raises when the layout does not allow a "
            "view (use ``reshape``).",
}


def unary_doc(name: str) -> str:
    what, note = UNARY[name]
    return f"Returns a new tensor whose every element of ``input`` is replaced by {what}.{note}{_INPUT}\n\n" \
           f"Example:\n    >>> torch.{name}(torch.tensor([0.5, 2.0])).shape\n    coretorch.Size([2])"


def binary_doc(name: str) -> str:
    what, rule = BINARY[name]
    return (f"Element-wise {what}.\n\nThe result has {rule}.\n\nArgs:\n    input (Tensor or Number): the first "
            f"operand.\n    other (Tensor or Number): the second operand.\n    out (Tensor, optional): the output "
            f"tensor.\n\nExample:\n    >>> torch.{name}(torch.tensor([1, 2, 3]), torch.tensor([3, 2, 1])).shape\n"
            f"    coretorch.Size([3])")


def _missing(obj: Any) -> bool:
    doc = getattr(obj, "__doc__", None)
    return not (isinstance(doc, str) and doc.strip())


def _set(obj: Any, doc: str) -> None:
    """Give ``obj`` (and the functions it wraps, ``functools.wraps``' ``__wrapped__``) ``doc`` where missing."""
    seen = 0
    while obj is not None and seen < 8:
        if _missing(obj):
            try:
                obj.__doc__ = doc
            except (AttributeError, TypeError):
                return
        obj = getattr(obj, "__wrapped__", None)
        seen += 1


def _first_line(doc: str) -> str:
    return inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ")


def _tensor_methods(torch: Any) -> None:
    T = torch.Tensor
    names = [n for n in dir(T) if not n.startswith("_")]
    for name, doc in TENSOR.items():
        attr = inspect.getattr_static(T, name, None)
        if attr is not None and _missing(attr):
            try:
                attr.__doc__ = doc
            except (AttributeError, TypeError):  # a C-level descriptor
                pass
    # pass 1: the method form of a documented top-level function
    for name in names:
        attr = inspect.getattr_static(T, name)
        if not inspect.isfunction(attr) or not _missing(attr):
            continue
        fn = getattr(torch, name, None)
        if callable(fn) and not isinstance(fn, type) and not _missing(fn) and fn is not attr:
            head, _, rest = inspect.cleandoc(fn.__doc__).partition("\n\n")
            attr.__doc__ = f"{head}\n\n``Tensor.{name}(...)`` is ``coretorch.{name}(self, ...)``.\n\n{rest}".rstrip()
    # pass 2: in-place forms
    for name in names:
        if not name.endswith("_") or name.endswith("__"):
            continue
        attr = inspect.getattr_static(T, name)
        base = inspect.getattr_static(T, name[:-1], None)
        if inspect.isfunction(attr) and _missing(attr) and base is not None and not _missing(base):
            doc = base.__doc__ if not isinstance(base, property) else (base.fget.__doc__ or "")
            attr.__doc__ = (f"In-place version of ``Tensor.{name[:-1]}``: writes the result into ``self`` and "
                            f"returns ``self``.\n\n{_first_line(doc)}")


def _legacy_classes(torch: Any) -> None:
    for name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
                 "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"):
        cls = getattr(torch, name, None)
        if cls is None or cls.__dict__.get("__doc__"):
            continue
        d = cls._legacy_dtype
        cls.__doc__ = (f"The legacy typed-tensor constructor and type of {d} tensors: "
                       f"``coretorch.{name}(data)`` or ``coretorch.{name}(*sizes)`` makes a {d} tensor, and "
                       f"``isinstance(t, coretorch.{name})`` is true for any {d} tensor.  Prefer "
                       f"``coretorch.tensor(data, dtype={d})``.")


def apply(torch: Any) -> None:
    """Fill the missing docstrings described in this module's docstring (idempotent); ``torch`` is the
    coretorch module."""
    for name in UNARY:
        _set(getattr(pointwise, name, None), unary_doc(name))
        _set(getattr(torch, name, None), unary_doc(name))
    for name in BINARY:
        _set(getattr(pointwise, name, None), binary_doc(name))
        _set(getattr(torch, name, None), binary_doc(name))
    _legacy_classes(torch)
    _tensor_methods(torch)
