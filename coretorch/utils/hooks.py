"""Removable hook handles and the module backward-hook machinery (PyTorch's ``torch.utils.hooks``)."""
from __future__ import annotations

import warnings
from collections import OrderedDict

from ..autograd.function import Function
from ..autograd.graph import RemovableHandle

__all__ = ["RemovableHandle", "BackwardHook", "BackwardHookFunction"]


def _hooks_dict() -> OrderedDict:
    return OrderedDict()


class BackwardHookFunction(Function):
    """Identity on its tensor arguments: its graph node is where module backward hooks attach."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *args):
        return args


class BackwardHook:
    """What ``Module.__call__`` uses for full backward (pre-)hooks, as PyTorch does: the module's tensor
    inputs and outputs pass through ``BackwardHookFunction``; a hook on the output node captures
    ``grad_output`` (and runs the backward pre-hooks, which may replace it), a hook on the input node
    calls the user hooks with ``(module, grad_input, grad_output)`` (they may replace ``grad_input``)."""

    def __init__(self, module, user_hooks, user_pre_hooks) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size) -> tuple:
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices, values) -> tuple:
        return tuple(values[idx] for idx in indices)

    def _set_user_hook(self, grad_fn) -> None:
        def hook(grad_input, _):
            if self.grad_outputs is None:
                # the gradient reached the inputs without passing through the outputs (double backward)
                return None
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args):
        from ..autograd.grad_mode import state
        from ..tensor import Tensor
        # as PyTorch: every tensor passes through the identity node once one requires grad (the others are
        # non-differentiable outputs: the hooks see zeros for them, as PyTorch's materialized gradients)
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not any(args[i].requires_grad for i in idx) or not state.enabled:
            return args, None
        new = BackwardHookFunction.apply(*[args[i] for i in idx])
        fn(next(t.grad_fn for t in new if t.grad_fn is not None))
        out = list(args)
        for i, v in zip(idx, new):
            out[i] = v
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def setup_input_hook(self, args):
        """Route the module's inputs through an identity autograd node whose backward calls the full
        backward hooks with ``grad_input``; returns the inputs to call ``forward`` with (``Module.__call__`` uses it).
        """
        res, idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, args):
        """Route the module's outputs through an identity autograd node that records ``grad_output``
        (and runs the backward pre-hooks); returns the outputs to hand back to the caller.
        """
        def fn(grad_fn):
            def hook(_, grad_output):
                self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
                if self.user_pre_hooks:
                    expected = len(self.grad_outputs)
                    for pre in self.user_pre_hooks:
                        r = pre(self.module, self.grad_outputs)
                        if r is None:
                            continue
                        if len(r) != expected:
                            raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                               f"got {len(r)}, but expected {expected}")
                        self.grad_outputs = tuple(r)
                local = self.grad_outputs
                if self.input_tensors_index is None:
                    # no input requires grad: the input node never runs, so call the user hooks here
                    warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                                  "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                                  "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook "
                                  "for more details.", stacklevel=5)
                    grad_inputs = self._pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        r = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if r is not None and not (isinstance(r, tuple) and all(el is None for el in r)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                               "should always return None or None for all gradients.")
                    self.grad_outputs = None
                return tuple(local[i] for i in self.output_tensors_index)

            grad_fn.register_hook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]
