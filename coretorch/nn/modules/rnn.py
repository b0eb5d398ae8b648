"""RNN, LSTM, GRU (multi-layer, batch_first, bidirectional) and their cells, with PyTorch's parameter names
(``weight_ih_l0``, ``bias_hh_l1_reverse``, ...) and initialisation U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).

The input projection of a whole sequence is one matmul per layer and direction; only the recurrence loops
over time steps (as every framework's unfused path does)."""
from __future__ import annotations

import functools
import math
import numbers
import warnings

from ...amp.autocast_mode import lower_dtype as _ac_lower, state as _ac
from ...autograd._node_names import named_node
from ...ops import linalg as _L, pointwise as _P, shape as _S
from ...ops.creation import empty, zeros
from .. import functional as F
from ..functional import _rnn_fused
from .. import init
from ..parameter import Parameter
from ._rnn_api import RNNHelpers
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_AC_OPS = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn", "RNN_RELU": "rnn"}  # their autocast names


def _lin(x, w, b):
    out = _L.matmul(x, _S.t(w))
    return out if b is None else _P.add(out, b)


def _rnn_step(mode, gi, h, c, w_hh, b_hh, w_hr=None):
    """One time step; ``gi`` is the precomputed input projection (with b_ih); ``w_hr`` is LSTM's projection
    (proj_size): the new h is (o * tanh(c)) @ w_hr.T."""
    gh = _lin(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = _S.chunk(_P.add(gi, gh), 4, 1)
        c = _P.add(_P.mul(_P.sigmoid(f), c), _P.mul(_P.sigmoid(i), _P.tanh(g)))
        h = _P.mul(_P.sigmoid(o), _P.tanh(c))
        return (h if w_hr is None else _lin(h, w_hr, None)), c
    if mode == "GRU":
        ir, iz, in_ = _S.chunk(gi, 3, 1)
        hr, hz, hn = _S.chunk(gh, 3, 1)
        r = _P.sigmoid(_P.add(ir, hr))
        z = _P.sigmoid(_P.add(iz, hz))
        n = _P.tanh(_P.add(in_, _P.mul(r, hn)))
        return _P.add(n, _P.mul(z, _P.sub(h, n))), None
    pre = _P.add(gi, gh)
    return (_P.tanh(pre) if mode == "RNN_TANH" else _P.relu(pre)), None


def _sequence_loop(mode, gi_all, h, c, w_hh, b_hh, reverse: bool, w_hr=None):
    """The recurrence of one layer and direction step by step from differentiable ops: (ys, h_n, c_n); ``w_hr``:
    LSTM's projection (proj_size)."""
    seq_len = gi_all.shape[0]
    ys = [None] * seq_len
    for t in (range(seq_len - 1, -1, -1) if reverse else range(seq_len)):
        h, c = _rnn_step(mode, gi_all[t], h, c, w_hh, b_hh, w_hr)
        ys[t] = h
    return (_S.stack(ys, 0) if seq_len else _S.unsqueeze(h, 0)[:0]), h, c


def _lstm_state(hx) -> tuple:
    """LSTM's ``hx`` as ``(h_0, c_0)``: PyTorch indexes ``hx[0]``, ``hx[1]`` (a tensor of stacked states works too)
    and its kernel wants exactly two states."""
    if isinstance(hx, (tuple, list)):
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        return tuple(hx)
    return hx[0], hx[1]


class RNNBase(RNNHelpers, Module):
    """The base of :class:`RNN`, :class:`LSTM` and :class:`GRU` (``mode`` is ``"RNN_TANH"``, ``"RNN_RELU"``,
    ``"LSTM"`` or ``"GRU"``)."""
    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}")
        for flag, name in ((bias, "bias"), (batch_first, "batch_first")):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(flag).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if not isinstance(proj_size, int) or isinstance(proj_size, bool) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        gate_size = _GATES[mode] * hidden_size
        num_directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size  # the size of h (the output's features)
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes: list[tuple[int, ...]] = [(gate_size, layer_input_size), (gate_size, real_hidden)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate_size,), (gate_size,)]
                if proj_size > 0:
                    names.append(f"weight_hr_l{layer}{suffix}")
                    shapes.append((proj_size, hidden_size))
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                self._flat_weights_names.extend(names)
        self._init_flat_weights()
        self.reset_parameters()

    @property
    def all_weights(self):
        """The parameters per layer and direction: ``[[w_ih, w_hh, b_ih, b_hh], ...]``."""
        return [[getattr(self, n) for n in self._flat_weights_names if n.endswith(f"l{k}{s}")]
                for k in range(self.num_layers) for s in (("", "_reverse") if self.bidirectional else ("",))]

    def reset_parameters(self) -> None:
        """Re-initialise every weight and bias uniformly in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _run(self, input, hx, cast=None):
        """input (L, N, H_in); hx: (h0, c0 or None) of shape (D*num_layers, N, H) -> output, h_n, c_n."""
        mode = self.mode
        nd = 2 if self.bidirectional else 1
        h0, c0 = hx
        layer_input = input
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(nd):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer * nd + direction, cast)
                if mode == "LSTM" and b_hh is not None:  # b_hh joins b_ih: one bias for the sequence's projection
                    b_ih, b_hh = _P.add(b_ih, b_hh), None
                gi_all = F.linear(layer_input, w_ih, b_ih)          # (L, N, G*H): one matmul for the sequence
                k = layer * nd + direction
                h = h0[k]
                c = c0[k] if c0 is not None else None
                reverse = direction == 1
                # the time loop as one node where it can (not with LSTM proj_size)
                if w_hr is None and _rnn_fused.usable(mode, gi_all, h, c, w_hh, b_hh):
                    y, h, c = _rnn_fused.sequence(mode, gi_all, h, c, w_hh, b_hh, reverse,
                                                  functools.partial(_sequence_loop, mode, reverse=reverse))
                else:
                    y, h, c = _sequence_loop(mode, gi_all, h, c, w_hh, b_hh, reverse, w_hr)
                outs.append(y)
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            layer_input = outs[0] if nd == 1 else _S.cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, _S.stack(h_n, 0), (_S.stack(c_n, 0) if c_n else None)

    def _run_packed(self, data, batch_sizes: list, hx, cast=None):
        """The recurrence over a PackedSequence's ``data`` (sum(batch_sizes), H_in): at step t only the first
        ``batch_sizes[t]`` sequences (sorted by decreasing length) advance; the others keep their state, so h_n is
        each sequence's state after its own last step (reverse direction: from its own last step back)."""
        mode = self.mode
        nd = 2 if self.bidirectional else 1
        h0, c0 = hx
        offsets = [0]
        for bs in batch_sizes:
            offsets.append(offsets[-1] + bs)
        layer_input = data
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(nd):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer * nd + direction, cast)
                gi_all = _lin(layer_input, w_ih, b_ih)  # one matmul
                k = layer * nd + direction
                h = h0[k]
                c = c0[k] if c0 is not None else None
                ys = [None] * len(batch_sizes)
                steps = range(len(batch_sizes) - 1, -1, -1) if direction == 1 else range(len(batch_sizes))
                for t in steps:
                    bs = batch_sizes[t]
                    full_batch = bs == h.shape[0]
                    ha = h if full_batch else h[:bs]
                    ca = None if c is None else (c if full_batch else c[:bs])
                    ha, ca = _rnn_step(mode, gi_all[offsets[t]:offsets[t + 1]], ha, ca, w_hh, b_hh, w_hr)
                    ys[t] = ha
                    h = ha if full_batch else _S.cat([ha, h[bs:]], 0)
                    if c is not None:
                        c = ca if full_batch else _S.cat([ca, c[bs:]], 0)
                outs.append(_S.cat(ys, 0))
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            layer_input = outs[0] if nd == 1 else _S.cat(outs, 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, _S.stack(h_n, 0), (_S.stack(c_n, 0) if c_n else None)

    def _forward_packed(self, packed, hx, lstm: bool):
        """RNN/LSTM/GRU on a PackedSequence: (PackedSequence output, h_n[, c_n]) with h_n in the batch's order."""
        from ..utils.rnn import PackedSequence
        self._update_flat_weights()
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        sizes = [int(b) for b in batch_sizes.tolist()]
        n = sizes[0] if sizes else 0
        self._check_dtype(data)
        if data.ndim != 2 or data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{data.shape[-1]}")
        if hx is None:
            hx = self._zero_state(n, data, lstm)
        else:
            hs = _lstm_state(hx) if lstm else (hx, None)
            for i, t in enumerate(hs):
                if t is not None:
                    self._check_state(i, t, n, lstm)
            if sorted_indices is not None:  # the caller's batch order -> the packed (sorted) order
                hs = tuple(None if t is None else t.index_select(1, sorted_indices) for t in hs)
            hx = hs
        self._check_devices(data, hx)
        cast = None
        if _ac.on:
            # sequences of one length: PyTorch 2.13's cpu LSTM runs them as unpacked (oneDNN's, lower precision)
            data, hx, cast = self._autocast(data, hx, len(set(sizes)) > 1)
        out, h_n, c_n = self._run_packed(data, sizes, hx, cast)
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = c_n.index_select(1, unsorted_indices) if c_n is not None else None
        return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), h_n, c_n

    def _state_shape(self, i: int, n: int) -> tuple:
        """The shape of h_0 (i=0) or c_0 (i=1): h has proj_size features when LSTM projects, c hidden_size."""
        size = self.proj_size if i == 0 and self.proj_size > 0 else self.hidden_size
        return (self.num_layers * (2 if self.bidirectional else 1), n, size)

    def _zero_state(self, n: int, like, lstm: bool) -> tuple:
        h = zeros(*self._state_shape(0, n), dtype=like.dtype, device=like.device)
        if not lstm:
            return h, None
        c = h if self.proj_size == 0 else zeros(*self._state_shape(1, n), dtype=like.dtype, device=like.device)
        return h, c

    def _weights(self, k: int, cast) -> tuple:
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of layer-and-direction ``k`` from ``_flat_weights`` (None for the biases
        without ``bias``, for w_hr without ``proj_size``), cast to ``cast`` (autocast's dtype) when given."""
        per = 2 + 2 * self.bias + (self.proj_size > 0)
        ws = self._flat_weights[k * per:(k + 1) * per]
        if cast is not None:
            ws = [w.to(cast) for w in ws]
        w_ih, w_hh = ws[0], ws[1]
        b_ih, b_hh = (ws[2], ws[3]) if self.bias else (None, None)
        return w_ih, w_hh, b_ih, b_hh, (ws[-1] if self.proj_size > 0 else None)

    def _autocast(self, x, hx, packed: bool) -> tuple:
        """Under autocast, PyTorch runs the recurrence as one kernel on a lower-precision list (cuDNN's RNNs on CUDA,
        oneDNN's LSTM on cpu), or the cells' linears make the state lower precision (an Elman RNN on cpu): then
        (x, hx, dtype) cast to that dtype; else (x, hx, None)."""
        op = _AC_OPS[self.mode] + ("_proj" if self.proj_size else "") + ("_packed" if packed else "")
        cast = _ac_lower(op, x)
        if cast is None:
            return x, hx, None
        return x.to(cast), tuple(None if t is None else t.to(cast) for t in hx), cast

    def _check_state(self, i: int, t, n: int, lstm: bool) -> None:
        expected = self._state_shape(i, n)
        if tuple(t.shape) != expected:
            what = f"hidden[{i}]" if lstm else "hidden"
            raise RuntimeError(f"Expected {what} size {expected}, got {list(t.shape)}")

    def _check_dtype(self, input) -> None:
        """PyTorch's check_input: the input's dtype must be the weights' (outside autocast)."""
        w = self._flat_weights[0]
        if input.dtype is not w.dtype and not _ac.on:
            self.check_input(input, None)  # its ValueError

    def _prepare(self, input, hx, lstm: bool):
        self._update_flat_weights()  # (as PyTorch's forward: a parameter replaced behind __setattr__'s back)
        if input.ndim not in (2, 3):
            # (PyTorch's forwards name their class, a subclass too; its RNN, unlike LSTM and GRU, says "4D tensor")
            rnn = self.mode in ("RNN_TANH", "RNN_RELU")
            name, got = ("RNN", f"{input.ndim}D tensor") if rnn else (self.mode, f"{input.ndim}D")
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {got} instead")
        self._check_dtype(input)
        batched = input.ndim == 3
        if batched and self.batch_first:
            input = _S.transpose(input, 0, 1)
        if not batched:
            input = _S.unsqueeze(input, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")
        if input.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        n = input.shape[1]
        if hx is None:
            hx = self._zero_state(n, input, lstm)
        else:
            hs = _lstm_state(hx) if lstm else (hx, None)
            # PyTorch's forward checks the states' rank first (LSTM: both at once), then their shapes
            want = 3 if batched else 2
            kind = "batched 3-D" if batched else "unbatched 2-D"
            if lstm and any(t.ndim != want for t in hs):  # (None: AttributeError, as PyTorch)
                dims = ", ".join(f"{t.ndim}-D" for t in hs)
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got ({dims}) tensors")
            if not lstm and hx is not None and hx.ndim != want:
                raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.ndim}-D tensor")
            fixed: list = []
            for i, t in enumerate(hs):
                if t is None:
                    fixed.append(None)
                    continue
                if not batched:
                    t = _S.unsqueeze(t, 1)
                self._check_state(i, t, n, lstm)
                fixed.append(t)
            hx = tuple(fixed)
        self._check_devices(input, hx)
        return input, hx, batched

    def _check_devices(self, input, hx) -> None:
        """ATen's check_attributes: the states, then the weights, on the input's device (else RuntimeError naming
        both devices, not a matmul's)."""
        dev = input.device
        for name, ts in (("hidden", hx), ("parameter", self._flat_weights)):
            for t in ts:
                if t is not None and t.device != dev:
                    raise RuntimeError(f"Input and {name} tensors are not at the same device, found input tensor at "
                                       f"{dev} and {name} tensor at {t.device}")

    def _finish(self, out, batched):
        if not batched:
            return _S.squeeze(out, 1)
        if not self.batch_first:
            return out
        out = _S.transpose(out, 0, 1)
        # PyTorch's GRU and RNN transpose their result in place (TransposeBackward1), its LSTM out of place
        return out if self.mode == "LSTM" else named_node(out, "TransposeBackward1")


class RNN(RNNBase):
    """A multi-layer Elman RNN: ``h_t = tanh(x_t @ W_ih.T + b_ih + h_{t-1} @ W_hh.T + b_hh)`` (or ReLU).

    Args:
        input_size (int): the number of input features.
        hidden_size (int): the number of hidden features.
        num_layers (int): stacked layers (default 1).
        bias (bool): use the biases ``b_ih`` and ``b_hh`` (default True).
        batch_first (bool): inputs and outputs are ``(N, L, *)`` instead of ``(L, N, *)``.
        dropout (float): dropout on the outputs of each layer but the last (default 0).
        bidirectional (bool): also run backwards and concatenate (default False).
        nonlinearity (str): ``"tanh"`` (default) or ``"relu"``.

    Inputs: ``input`` ``(L, N, H_in)`` (``(N, L, H_in)`` with ``batch_first``, or ``(L, H_in)``) or a PackedSequence,
    and an optional ``h_0`` ``(D * num_layers, N, H_out)``.

    Outputs: ``output`` ``(L, N, D * H_out)`` and ``h_n`` ``(D * num_layers, N, H_out)`` (``D`` = 2 if bidirectional).
    """
    def __init__(self, *args, **kwargs) -> None:
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if isinstance(input, tuple):  # a PackedSequence
            out, h_n, _ = self._forward_packed(input, hx, False)
            return out, h_n
        x, hx, batched = self._prepare(input, hx, False)
        out, h_n, _ = self._run(*(self._autocast(x, hx, False) if _ac.on else (x, hx)))
        return self._finish(out, batched), (h_n if batched else _S.squeeze(h_n, 1))


class LSTM(RNNBase):
    """A multi-layer long short-term memory RNN (gates ``i, f, g, o`` as PyTorch).

    Args:
        input_size (int): the number of input features.
        hidden_size (int): the number of hidden features.
        num_layers (int): stacked layers (default 1).
        bias (bool): use the biases ``b_ih`` and ``b_hh`` (default True).
        batch_first (bool): inputs and outputs are ``(N, L, *)`` instead of ``(L, N, *)``.
        dropout (float): dropout on the outputs of each layer but the last (default 0).
        bidirectional (bool): also run backwards and concatenate (default False).
        proj_size (int): project the hidden state to this size (default 0: none).

    Inputs: ``input`` ``(L, N, H_in)`` (``(N, L, H_in)`` with ``batch_first``, or ``(L, H_in)``) or a PackedSequence,
    and an optional ``(h_0, c_0)``, each ``(D * num_layers, N, H)``.

    Outputs: ``output`` ``(L, N, D * H_out)`` and ``(h_n, c_n)``.

    Example:
        >>> lstm = nn.LSTM(10, 20, num_layers=2, batch_first=True)
        >>> out, (h, c) = lstm(torch.randn(3, 5, 10))
        >>> out.shape
        coretorch.Size([3, 5, 20])
    """
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        if isinstance(input, tuple):  # a PackedSequence
            out, h_n, c_n = self._forward_packed(input, hx, True)
            return out, (h_n, c_n)
        x, hx, batched = self._prepare(input, hx, True)
        out, h_n, c_n = self._run(*(self._autocast(x, hx, False) if _ac.on else (x, hx)))
        if not batched:
            h_n, c_n = _S.squeeze(h_n, 1), _S.squeeze(c_n, 1)
        return self._finish(out, batched), (h_n, c_n)


class GRU(RNNBase):
    """A multi-layer gated recurrent unit RNN (gates ``r, z, n`` as PyTorch).

    Args:
        input_size (int): the number of input features.
        hidden_size (int): the number of hidden features.
        num_layers (int): stacked layers (default 1).
        bias (bool): use the biases ``b_ih`` and ``b_hh`` (default True).
        batch_first (bool): inputs and outputs are ``(N, L, *)`` instead of ``(L, N, *)``.
        dropout (float): dropout on the outputs of each layer but the last (default 0).
        bidirectional (bool): also run backwards and concatenate (default False).

    Inputs: ``input`` ``(L, N, H_in)`` (``(N, L, H_in)`` with ``batch_first``, or ``(L, H_in)``) or a PackedSequence,
    and an optional ``h_0`` ``(D * num_layers, N, H_out)``.

    Outputs: ``output`` ``(L, N, D * H_out)`` and ``h_n`` ``(D * num_layers, N, H_out)``.
    """
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        if isinstance(input, tuple):  # a PackedSequence
            out, h_n, _ = self._forward_packed(input, hx, False)
            return out, h_n
        x, hx, batched = self._prepare(input, hx, False)
        out, h_n, _ = self._run(*(self._autocast(x, hx, False) if _ac.on else (x, hx)))
        return self._finish(out, batched), (h_n if batched else _S.squeeze(h_n, 1))


class RNNCellBase(Module):
    """The base of :class:`RNNCell`, :class:`LSTMCell` and :class:`GRUCell`."""
    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Re-initialise every weight and bias uniformly in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _cell(self, mode, input, h, c):
        name = type(self).__name__ if type(self) in (RNNCell, LSTMCell, GRUCell) else \
            {"LSTM": "LSTMCell", "GRU": "GRUCell"}.get(mode, "RNNCell")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for i, t in enumerate((h, c)):
            if t is not None and t.ndim not in (1, 2):
                what = f"hx[{i}]" if mode == "LSTM" else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {t.ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = _S.unsqueeze(input, 0)
        n = input.shape[0]
        if h is None:
            h = zeros(n, self.hidden_size, dtype=input.dtype, device=input.device)
        elif not batched:
            h = _S.unsqueeze(h, 0)
        if mode == "LSTM":
            if c is None:
                c = zeros(n, self.hidden_size, dtype=input.dtype, device=input.device)
            elif not batched:
                c = _S.unsqueeze(c, 0)
        # ATen's check_rnn_cell_forward_input / _hidden (a mismatched state broadcast or gave a 3-D result)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                               f"{self.input_size}")
        for i, t in enumerate((h, c)):
            if t is None:
                continue
            if t.shape[0] != n:
                raise RuntimeError(f"Input batch size {n} doesn't match hidden{i} batch size {t.shape[0]}")
            if t.ndim != 2 or t.shape[1] != self.hidden_size:
                got = t.shape[1] if t.ndim > 1 else None
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {got}, expected "
                                   f"{self.hidden_size}")
        w_ih, b_ih, w_hh, b_hh = self.weight_ih, self.bias_ih, self.weight_hh, self.bias_hh
        if _ac.on and (cast := _ac_lower(_AC_OPS[mode] + "_cell", input)) is not None:  # (as RNNBase._autocast)
            input, h, c = (None if t is None else t.to(cast) for t in (input, h, c))
            w_ih, b_ih, w_hh, b_hh = (None if t is None else t.to(cast) for t in (w_ih, b_ih, w_hh, b_hh))
        gi = _lin(input, w_ih, b_ih)
        h, c = _rnn_step(mode, gi, h, c, w_hh, b_hh)
        if not batched:
            h = _S.squeeze(h, 0)
            c = _S.squeeze(c, 0) if c is not None else None
        return h, c


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)`` (or ReLU).

    Args:
        input_size (int): the number of features of the input ``x``.
        hidden_size (int): the number of features of the hidden state ``h``.
        bias (bool): whether to add the biases ``b_ih`` and ``b_hh`` (default True; as :class:`RNN`).
        nonlinearity (str): ``"tanh"`` or ``"relu"``.

    Shape:
        Input ``(N, H_in)`` or ``(H_in,)``, hidden ``(N, H_out)`` (zeros if omitted). Output: ``(N, H_out)``.
    """
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._cell(mode, input, hx, None)[0]


class LSTMCell(RNNCellBase):
    """One step of an LSTM: returns ``(h', c')``.

    Args:
        input_size (int): the number of features of the input ``x``.
        hidden_size (int): the number of features of the hidden state ``h``.
        bias (bool): whether to add the biases ``b_ih`` and ``b_hh`` (default True; as :class:`LSTM`).

    Shape:
        Input ``(N, H_in)`` or ``(H_in,)``; ``(h, c)`` each ``(N, H_out)`` (zeros if omitted).
    """
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if hx is not None and isinstance(hx, (tuple, list)) and len(hx) != 2:
            raise RuntimeError("lstm_cell expects two hidden states")  # (ATen's check)
        h, c = (None, None) if hx is None else hx
        return self._cell("LSTM", input, h, c)


class GRUCell(RNNCellBase):
    """One step of a GRU: returns ``h'``.

    Args:
        input_size (int): the number of features of the input ``x``.
        hidden_size (int): the number of features of the hidden state ``h``.
        bias (bool): whether to add the biases ``b_ih`` and ``b_hh`` (default True; as :class:`GRU`).

    Shape:
        Input ``(N, H_in)`` or ``(H_in,)``, hidden ``(N, H_out)`` (zeros if omitted). Output: ``(N, H_out)``.
    """
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._cell("GRU", input, hx, None)[0]
