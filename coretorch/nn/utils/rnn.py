"""nn.utils.rnn: variable-length batches for the recurrent layers (PackedSequence, pack/pad and back).

A PackedSequence stores the time steps of a batch sorted by decreasing length one after another: ``data`` holds
``batch_sizes[t]`` rows for step t (the sequences still running then), so the recurrent layers skip padding."""
from __future__ import annotations

from typing import NamedTuple

from ...autograd._node_names import named_node
from ...ops import shape as _S
from ...ops.creation import full, tensor
from ...ops.sorting import sort
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices) as PyTorch; build it with ``pack_padded_sequence`` or
    ``pack_sequence``, not directly."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence(data, batch_sizes, ...) given as one tuple
            data, batch_sizes = data[0], data[1]
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """This PackedSequence with ``data`` moved/cast by ``Tensor.to``'s arguments (the index tensors follow
        the device; ``batch_sizes`` is kept as it is); ``self`` when nothing changes.
        """
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        if "copy" in kwargs or sum(isinstance(a, bool) for a in args) > 1:  # (PyTorch's _parse_to after the copy)
            raise RuntimeError(".to() does not accept copy argument")
        dev = data.device
        si = self.sorted_indices.to(dev) if self.sorted_indices is not None else None
        ui = self.unsorted_indices.to(dev) if self.unsorted_indices is not None else None
        return type(self)(data, self.batch_sizes, si, ui)

    def cpu(self) -> "PackedSequence":
        """``to("cpu")``."""
        return self.to("cpu")

    def double(self) -> "PackedSequence":
        """``to(dtype=torch.float64)``."""
        return self.to(dtype=_dtype("float64"))

    def float(self) -> "PackedSequence":
        """``to(dtype=torch.float32)``."""
        return self.to(dtype=_dtype("float32"))

    def half(self) -> "PackedSequence":
        """``to(dtype=torch.float16)``."""
        return self.to(dtype=_dtype("float16"))

    def long(self) -> "PackedSequence":
        """``to(dtype=torch.int64)``."""
        return self.to(dtype=_dtype("int64"))

    def int(self) -> "PackedSequence":
        """``to(dtype=torch.int32)``."""
        return self.to(dtype=_dtype("int32"))

    def short(self) -> "PackedSequence":
        """``to(dtype=torch.int16)``."""
        return self.to(dtype=_dtype("int16"))

    def char(self) -> "PackedSequence":
        """``to(dtype=torch.int8)``."""
        return self.to(dtype=_dtype("int8"))

    def byte(self) -> "PackedSequence":
        """``to(dtype=torch.uint8)``."""
        return self.to(dtype=_dtype("uint8"))

    def cuda(self, *args, **kwargs) -> "PackedSequence":
        """``data.cuda(...)``: raises as ``Tensor.cuda`` does (coretorch has no CUDA device)."""
        ex = self.data.new_empty(0).cuda(*args, **kwargs)
        return self.to(device=ex.device)

    def pin_memory(self) -> "PackedSequence":
        """This PackedSequence with ``data`` pinned (``Tensor.pin_memory``; the indices stay as they are)."""
        return type(self)(self.data.pin_memory(), self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device: always False."""
        return False

    def is_pinned(self) -> bool:
        """Whether ``data`` is in pinned memory: False (coretorch has no pinned memory)."""
        return False


def _dtype(name):
    from ... import dtypes
    return getattr(dtypes, name)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation (``out[permutation[i]] = i``), or None for None: what turns
    ``sorted_indices`` into ``unsorted_indices``.

    Args:
        permutation (Tensor, optional): a 1-d permutation of ``0..n-1``.

    Example:
        >>> torch.nn.utils.rnn.invert_permutation(torch.tensor([2, 0, 1]))
        tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    # (the sort's order, PyTorch's scatter into a fresh tensor without the write: a compiled step whose later
    # checked read of the lengths must come before any write replays)
    out = sort(permutation)[1]
    return out if out.dtype is permutation.dtype else out.to(permutation.dtype)


def _lengths_list(lengths, cpu_only: bool = False) -> list[int]:
    """``lengths`` (a list or a 1-d tensor) as ints; ``cpu_only``: pack_padded_sequence's check (PyTorch's kernel
    reads a tensor's lengths on the host only: one on an accelerator is a RuntimeError, not a silent copy)."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1 or (cpu_only and lengths.device.type != "cpu"):
            where = lengths.device.type if lengths.device.type == "cpu" else str(lengths.device)
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D "
                               f"{where} Long tensor")  # (PyTorch converts them to int64 first)
        return [int(v) for v in lengths.cpu().tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the given lengths."""
    lens = _lengths_list(lengths, cpu_only=True)
    batch_dim = 0 if batch_first else 1
    if len(lens) != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} (batch_size="
                           f"{input.shape[batch_dim]})")
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        _, sorted_indices = sort(tensor(lens, device="cpu"), descending=True, stable=True)
        sorted_indices = sorted_indices.to(input.device)
        lens = sorted(lens, reverse=True)
        input = input.index_select(batch_dim, sorted_indices)
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if batch_first:
        input = _S.transpose(input, 0, 1)
    if lens and lens[0] > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to the longest length "
                           f"({lens[0]}), but got {input.shape[0]}")
    if not lens:
        raise RuntimeError("Cannot pack empty tensors.")
    max_len = lens[0]
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(max_len)]
    data = _S.cat([input[t, :bs] for t, bs in enumerate(batch_sizes)], 0)
    named_node(data, "PackPaddedSequenceBackward0")  # (PyTorch's one kernel's node)
    return PackedSequence(data, tensor(batch_sizes, device="cpu"), sorted_indices, None)  # (cpu, as PyTorch)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of pack_padded_sequence: (padded batch, lengths) in the original batch order."""
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
    else:
        total_length = max_len
    B = batch_sizes[0] if batch_sizes else 0
    feat = tuple(data.shape[1:])
    steps, off = [], 0
    for bs in batch_sizes:
        chunk = data[off:off + bs]
        if bs < B:
            chunk = _S.cat([chunk, full((B - bs,) + feat, padding_value, dtype=data.dtype, device=data.device)], 0)
        steps.append(chunk)
        off += bs
    for _ in range(total_length - max_len):
        steps.append(full((B,) + feat, padding_value, dtype=data.dtype, device=data.device))
    padded = _S.stack(steps, 0) if steps else full((0, B) + feat, padding_value, dtype=data.dtype,
                                                    device=data.device)
    named_node(padded, "CopySlices")  # PyTorch's kernel copies each step into a padded tensor
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(B)]
    lengths_t = tensor(lengths, device="cpu")
    if batch_first:
        padded = _S.transpose(padded, 0, 1)
    if sequence.unsorted_indices is not None:  # after the transpose, as PyTorch (the result's node is the select)
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths_t = lengths_t[sequence.unsorted_indices.cpu()]
    return padded, lengths_t


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shape (L_i, *) into (L_max, B, *) (or (B, L_max, *)), padding with ``padding_value``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if any(s.ndim == 0 for s in sequences):
        raise RuntimeError("pad_sequence: expected each sequence to have at least one dimension (a length), but got "
                           "a 0-d tensor")
    max_len = max(s.shape[0] for s in sequences)
    dtype, device = sequences[0].dtype, sequences[0].device  # PyTorch: a tensor of the first one's options
    trailing = tuple(sequences[0].shape[1:])  # (and of its trailing sizes)
    out = []
    for s in sequences:
        if s.dtype != dtype or s.device != device:
            s = s.to(device=device, dtype=dtype)  # (PyTorch copies each into it: no promotion)
        if tuple(s.shape[1:]) != trailing:  # (PyTorch's copy_ into the padded tensor broadcasts)
            s = s.expand(_copy_shape(tuple(s.shape), (s.shape[0],) + trailing))
        n = max_len - s.shape[0]
        if n:
            pad = full((n,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = _S.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        out.append(s)
    return named_node(_S.stack(out, 0 if batch_first else 1), "CopySlices")  # PyTorch copies into a padded tensor


def _copy_shape(src: tuple, dst: tuple) -> tuple:
    """``dst`` when ``copy_`` broadcasts a ``src``-shaped tensor into it, else copy_'s RuntimeError."""
    n = max(len(src), len(dst))
    a, b = (1,) * (n - len(dst)) + dst, (1,) * (n - len(src)) + src
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {i}")
    shape = tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(a, b))
    if shape != dst:
        raise RuntimeError(f"output with shape {list(dst)} doesn't match the broadcast shape {list(shape)}")
    return dst


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """The list of unpadded sequences of a right-padded batch: copies (PyTorch selects each with a mask).  As
    PyTorch's, without ``batch_first`` it transposes ``padded_sequences`` itself in place (``transpose_(0, 1)``)."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    # (named as PyTorch's boolean-mask index's node)
    return [named_node(padded_sequences[i, :n].clone(), "IndexBackward0")
            for i, n in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors of shape (L_i, *) (sorted by decreasing length unless ``enforce_sorted=False``)."""
    lengths = [v.shape[0] for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a PackedSequence holds, in their original order (the inverse of
    ``pack_sequence``).

    Args:
        packed_sequences (PackedSequence): the packed batch.

    Returns:
        list[Tensor]: one tensor ``(L_i, *)`` per sequence.

    Example:
        >>> from coretorch.nn.utils.rnn import pack_sequence, unpack_sequence
        >>> seqs = [torch.tensor([1, 2, 3]), torch.tensor([4, 5])]
        >>> unpack_sequence(pack_sequence(seqs))
        [tensor([1, 2, 3]), tensor([4, 5])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
