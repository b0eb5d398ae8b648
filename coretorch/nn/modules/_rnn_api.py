"""PyTorch's public helper methods of RNNBase/LSTM (``check_input``, ``get_expected_hidden_size``,
``check_hidden_size``, ``check_forward_args``, ``permute_hidden``, ``_all_weights``), which custom RNN subclasses
call; coretorch's own forward checks its arguments in ``rnn.py``.

Also PyTorch's ``_flat_weights`` list (the weights forward runs with, in ``_flat_weights_names``' order) and its
upkeep (``_init_flat_weights``, ``_weights_have_changed``, ``_update_flat_weights``, ``__setattr__``, ``_apply``,
pickling): weight-dropping wrappers (AWD-LSTM, fastai's WeightDropout) assign ``module.weight_hh_l0`` a plain
tensor or set ``_flat_weights`` itself, and forward must run with what they assigned."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from ...amp.autocast_mode import state as _ac

if TYPE_CHECKING:  # (mixed into RNNBase before Module: ``super()`` is Module's methods)
    from .module import Module as _Base
else:
    _Base = object


class RNNHelpers(_Base):
    """Mixed into RNNBase (which defines the attributes these read)."""
    mode: str
    input_size: int
    hidden_size: int
    num_layers: int
    batch_first: bool
    bidirectional: bool
    proj_size: int
    _flat_weights_names: list
    _flat_weights: list

    def _init_flat_weights(self) -> None:
        """Read the weights into ``_flat_weights`` again (None for a missing one) and remember which they were."""
        self._flat_weights = [getattr(self, n) if hasattr(self, n) else None for n in self._flat_weights_names]
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None for w in self._flat_weights]
        self.flatten_parameters()

    def flatten_parameters(self) -> None:
        """PyTorch's cuDNN weight compaction: nothing to do here (weights are used where they are)."""

    def _weights_have_changed(self) -> bool:
        """Whether an attribute named in ``_flat_weights_names`` is another object than ``_flat_weights`` was read
        from (a parameter replaced without ``__setattr__``: a parametrization, ``_parameters[name] = ...``)."""
        for ref, name in zip(self._flat_weight_refs, self._flat_weights_names):
            weight = getattr(self, name) if hasattr(self, name) else None
            if weight is not None and ref is not None and ref() is not weight:
                return True
        return False

    def _update_flat_weights(self) -> None:
        """``_init_flat_weights`` when a weight changed (PyTorch's forward starts with this)."""
        if self._weights_have_changed():
            self._init_flat_weights()

    def __setattr__(self, attr: str, value) -> None:
        names = self.__dict__.get("_flat_weights_names")
        if names is not None and attr in names and "_flat_weights" in self.__dict__:
            self._flat_weights[names.index(attr)] = value  # ``rnn.weight_hh_l0 = w``: forward runs with w
        super().__setattr__(attr, value)

    def _apply(self, fn, recurse: bool = True):
        self._flat_weight_refs = []
        ret = super()._apply(fn, recurse)
        self._init_flat_weights()  # (a conversion may have made new parameters)
        return ret

    def __getstate__(self) -> dict:
        self._update_flat_weights()
        state = self.__dict__.copy()
        state.pop("_flat_weight_refs", None)  # (weak references do not pickle)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if "_flat_weights" not in self.__dict__:
            self._init_flat_weights()
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None for w in self._flat_weights]

    @property
    def _all_weights(self) -> list:
        """The parameter names per layer and direction: ``[["weight_ih_l0", "weight_hh_l0", ...], ...]``."""
        suffixes = ("", "_reverse") if self.bidirectional else ("",)
        return [[n for n in self._flat_weights_names if n.endswith(f"_l{k}{s}")]
                for k in range(self.num_layers) for s in suffixes]

    def check_input(self, input, batch_sizes) -> None:
        """PyTorch's check: the input's dtype is the weights' (outside autocast), its rank 3 (2 for a
        PackedSequence's data), its last size ``input_size``."""
        w = self._flat_weights[0]
        if input.dtype is not w.dtype and not _ac.on:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.ndim != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.ndim}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    def _mini_batch(self, input, batch_sizes) -> int:
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.shape[0] if self.batch_first else input.shape[1]

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple[int, int, int]:
        """``(num_layers * num_directions, batch, proj_size or hidden_size)``."""
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * (2 if self.bidirectional else 1), self._mini_batch(input, batch_sizes), size)

    def get_expected_cell_size(self, input, batch_sizes) -> tuple[int, int, int]:
        """LSTM's c: ``(num_layers * num_directions, batch, hidden_size)``."""
        return (self.num_layers * (2 if self.bidirectional else 1), self._mini_batch(input, batch_sizes),
                self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg: str = "Expected hidden size {}, got {}") -> None:
        """RuntimeError unless ``hx`` has ``expected_hidden_size``."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        """check_input and the state's shape (LSTM: both of ``(h, c)``)."""
        self.check_input(input, batch_sizes)
        if self.mode != "LSTM":
            self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))
            return
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        """The state (LSTM: each of ``(h, c)``) reordered along the batch dim by ``permutation`` (None: as is)."""
        if permutation is None:
            return hx
        if self.mode == "LSTM":
            return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)
        return hx.index_select(1, permutation)
