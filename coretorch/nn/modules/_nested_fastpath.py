"""TransformerEncoder's nested-tensor fast path, without nested tensors: PyTorch (``enable_nested_tensor=True``,
in inference) packs the unpadded tokens of each sequence, runs the layers on them and pads the result with zeros
before the final norm.  The layers' outputs at unpadded positions equal those of the padded run with the key
padding mask (attention never looks at padded keys; everything else is per position), so coretorch runs the
padded batch and writes the zeros PyTorch's ``to_padded_tensor(0.0)`` leaves at padded positions."""
from __future__ import annotations

from ...amp.autocast_mode import is_autocast_enabled
from ...backends import mha as _mha
from ...autograd.grad_mode import is_grad_enabled
from ...ops import pointwise as _P
from ...ops import shape as _S


def why_not_nested(encoder_layer) -> str:
    """PyTorch's reasons (TransformerEncoder.__init__) an encoder cannot use nested tensors; '' when it can."""
    from .transformer import TransformerEncoderLayer

    name = "encoder_layer"
    if not isinstance(encoder_layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attn = encoder_layer.self_attn
    if encoder_layer.norm_first:
        return f"{name}.norm_first was True"
    if not attn.batch_first:
        return f"{name}.self_attn.batch_first was not True(use batch_first for better inference performance)"
    if not attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not encoder_layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if encoder_layer.norm1.eps != encoder_layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


def padded_positions(encoder, src, mask, key_padding_mask):
    """The (N, S) bool tensor of padded positions when PyTorch would take its nested fast path for this call
    (``key_padding_mask`` already canonical: float, nonzero where padded), else None."""
    if not _mha.get_fastpath_enabled() or not getattr(encoder, "use_nested_tensor", False) \
            or key_padding_mask is None or mask is not None or src.ndim != 3 or not len(encoder.layers) \
            or is_autocast_enabled():
        return None
    first = encoder.layers[0]
    if first.training:
        return None
    if is_grad_enabled() and (src.requires_grad or any(p.requires_grad for p in first.parameters())):
        return None
    padded = _P.ne(key_padding_mask, 0)  # PyTorch: logical_not of the canonical mask keeps the zeros
    if getattr(encoder, "mask_check", True) and padded.shape[-1] > 1:
        # PyTorch takes the fast path only when every sequence is left aligned (no kept position after a padded
        # one); decided on the device (a host read would make a compiled call a graph break)
        late = _P.logical_and(padded[:, :-1], _P.logical_not(padded[:, 1:])).any()
        padded = _P.logical_and(padded, _P.logical_not(late))
    return padded


def zero_padded(output, padded):
    """``output`` (N, S, E) with zeros at the padded positions."""
    return _P.masked_fill(output, _S.unsqueeze(padded, -1), 0.0)
