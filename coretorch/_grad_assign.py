"""A leaf's ``.grad`` and ``.grad_dtype``: PyTorch 2.13's checks when they are assigned, and the dtype a leaf's
gradient takes (``grad_dtype``: the tensor's own dtype unless set; None accepts any dtype).

Kept out of tensor.py (which binds these as the ``grad`` setter and the ``grad_dtype`` property) and free of
imports of it: tensors are only read here.
"""
from __future__ import annotations

from typing import Any

# C++'s type names of the dtypes (c10's TypeMeta), which PyTorch's messages about an assigned gradient print
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "uint16": "short unsigned int", "uint32": "unsigned int",
              "uint64": "long unsigned int", "bool": "bool"}

# a tensor's ``_gdt`` while grad_dtype was never set: the gradient takes the tensor's own dtype
UNSET = False


def _cpp_name(dt: Any) -> str:
    return _CPP_NAMES.get(dt.name, dt.name)


def _scalar_type(dt: Any) -> str:
    return dt._tname[:-6]  # FloatTensor: Float (c10's ScalarType name)


def leaf_grad_dtype(t: Any) -> Any:
    """The dtype the leaf ``t``'s gradient is given (its ``grad_dtype``): None where any dtype is kept."""
    g = t._gdt
    return t.dtype if g is UNSET else g


def check_assigned_grad(t: Any, value: Any, tensor_cls: Any) -> None:
    """PyTorch's checks of ``t.grad = value`` (value not None), in its order."""
    if not isinstance(value, tensor_cls):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
    if value is t:
        raise RuntimeError("can't assign Variable as its own grad")
    want = leaf_grad_dtype(t)
    if want is not None and value.dtype is not want:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{_cpp_name(value.dtype)}' to a tensor with grad_dtype "
            f"'{_scalar_type(want)}'. The gradient must match the tensor's grad_dtype (defaults to the tensor's "
            "dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any "
            "dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break "
            "downstream systems that assume they match.")
    if value._be is not t._be:
        if value.device.type != t.device.type:
            raise RuntimeError(f"attempting to assign a gradient with device type '{value.device.type}' to a tensor "
                               f"with device type '{t.device.type}'. Please ensure that the gradient and the tensor "
                               "are on the same device")
        raise RuntimeError(f"attempting to assign a gradient located on device with index '{value.device.index}' to "
                           f"a tensor located on device with index '{t.device.index}'. Please ensure that the "
                           "gradient and the tensor are on the same device")
    if value._data.shape != t._data.shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                           f"'{list(t.shape)}'. Please ensure that the gradient and the tensor are the same size")


def get_grad_dtype(t: Any) -> Any:
    """``Tensor.grad_dtype``: the dtype a leaf's gradient must have (None: any)."""
    if t.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return leaf_grad_dtype(t)


def set_grad_dtype(t: Any, value: Any, dtype_cls: type) -> None:
    """``t.grad_dtype = value``: a dtype, or None to accept any; the gradient of each backward is cast to it."""
    if t.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, dtype_cls):
        raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
    g = t._grad
    if g is not None and value is not None and g.dtype is not value:
        raise RuntimeError(f"Cannot set grad_dtype to '{_scalar_type(value)}' because there is already a gradient "
                           f"with dtype '{_cpp_name(g.dtype)}'. Please clear the gradient (.grad = None) before "
                           "changing grad_dtype, or ensure the new grad_dtype matches the existing gradient's dtype.")
    t._gdt = value
    # the engine's fast path stores a gradient of the tensor's dtype as is: a leaf whose gradient takes another
    # dtype goes the validated way (its AccumulateGrad counts as hooked; set once, nothing added per backward)
    t._get_accum()._hooked = True
