"""PyTorch's public helper methods of RNNBase/LSTM (``check_input``, ``get_expected_hidden_size``,
``check_hidden_size``, ``check_forward_args``, ``permute_hidden``, ``_all_weights``), which custom RNN subclasses
call; coretorch's own forward checks its arguments in ``rnn.py``."""
from __future__ import annotations

from ...amp.autocast_mode import state as _ac


class RNNHelpers:
    """Mixed into RNNBase (which defines the attributes these read)."""
    mode: str
    input_size: int
    hidden_size: int
    num_layers: int
    batch_first: bool
    bidirectional: bool
    proj_size: int
    _flat_weights_names: list

    @property
    def _all_weights(self) -> list:
        """The parameter names per layer and direction: ``[["weight_ih_l0", "weight_hh_l0", ...], ...]``."""
        suffixes = ("", "_reverse") if self.bidirectional else ("",)
        return [[n for n in self._flat_weights_names if n.endswith(f"_l{k}{s}")]
                for k in range(self.num_layers) for s in suffixes]

    def check_input(self, input, batch_sizes) -> None:
        """PyTorch's check: the input's dtype is the weights' (outside autocast), its rank 3 (2 for a
        PackedSequence's data), its last size ``input_size``."""
        w = getattr(self, self._flat_weights_names[0])
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
