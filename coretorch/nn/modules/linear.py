"""Identity, Linear and Bilinear, initialised exactly as PyTorch initialises them."""
from __future__ import annotations

import math
from typing import cast

from ...autograd.grad_mode import no_grad
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from ._errors import layer_error
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x A^T + b``.  ``weight`` (out_features, in_features) ~ kaiming_uniform_(a=sqrt(5)), i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)); ``bias`` ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise weight (Kaiming-uniform) and bias uniformly in
        ``(-1/sqrt(in_features), 1/sqrt(in_features))``, as PyTorch."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    _plain_params = True  # no class attribute (a property) named weight or bias: see forward

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._plain_params = not (hasattr(cls, "weight") or hasattr(cls, "bias"))

    def forward(self, input):
        p = self.__dict__["_parameters"]
        # the registered parameters, without two Module.__getattr__ misses (3 % of a small training step); a
        # weight moved out of _parameters (a parametrization, a plain attribute) or a property is read as such
        w = p.get("weight") if self._plain_params else None
        if w is None:
            w = self.weight
        b = p["bias"] if self._plain_params and "bias" in p else self.bias
        try:
            return F.linear(input, w, b)
        except RuntimeError as e:  # name the layer and the shape it expects (a new user's first error)
            raise layer_error(self, input, e, f"(*, {self.in_features})") from None

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b``; weight (out, in1, in2) and bias ~ U(-1/sqrt(in1), 1/sqrt(in1))."""

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        if in1_features <= 0:  # (the init bound divides by its square root)
            raise ValueError(f"in1_features must be > 0, but got (in1_features={in1_features})")
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise weight and bias uniformly in ``(-1/sqrt(in1_features), 1/sqrt(in1_features))``."""
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is inferred from the first input's last dim (it then becomes a Linear)."""
    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)  # no bias yet: placeholders replace the empty tensors below
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        """Re-initialise the parameters once they exist (as :meth:`Linear.reset_parameters`)."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        """Create the weight from the first input's last dimension (``in_features``), then behave as Linear."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                cast(UninitializedParameter, self.weight).materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    cast(UninitializedParameter, self.bias).materialize((self.out_features,))
                self.reset_parameters()


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for MultiheadAttention.out_proj (it shows in the repr; torch.nn.modules.linear has it)."""
