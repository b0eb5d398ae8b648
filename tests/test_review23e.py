"""Review 23e: recurrent modules and packed sequences against PyTorch 2.13, second pass (eager, every backend):
RNN/LSTM/GRU state checks and their messages, the ``_flat_weights`` list forward runs with (and its upkeep:
``__setattr__``, ``_init_flat_weights``, ``_update_flat_weights``, conversions, pickling), LSTMCell's state
count, and pack_padded_sequence's lengths on another device.  Each test states what PyTorch does and what
coretorch did before the fix."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def _load(m, seed=1):
    """Deterministic weights U(-0.5, 0.5) from numpy (what the side-by-side runs with PyTorch loaded too)."""
    r = np.random.default_rng(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.tensor(r.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
    return m


def _x(*shape, device="cpu", seed=2):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), device=device)


@pytest.mark.parametrize("mode", ["RNN", "GRU"])
def test_rnn_and_gru_check_the_state_rank_first(device, mode):
    """PyTorch's RNN/GRU forward: a 2-D hx for a batched input raises RuntimeError "For batched 3-D input, hx should
    also be 3-D but got 2-D tensor" (a 3-D one for an unbatched input: "For unbatched 2-D input, hx should also be
    2-D but got 3-D tensor"); PyTorch's RNN (not GRU) says "got 4D tensor instead" for a 4-D input, and a subclass's
    message names the base class.  coretorch before: the batched case raised "Expected hidden size (1, 2, 4), got
    [2, 4]", RNN's message lacked "tensor", a subclass's named the subclass."""
    m = getattr(nn, mode)(3, 4).to(device)
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D but got 2-D tensor"):
        m(_x(5, 2, 3, device=device), torch.zeros(2, 4, device=device))
    with pytest.raises(RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"):
        m(_x(5, 3, device=device), torch.zeros(1, 1, 4, device=device))
    got = "4D tensor instead" if mode == "RNN" else "4D instead"
    with pytest.raises(ValueError, match=f"{mode}: Expected input to be 2D or 3D, got {got}"):
        m(_x(5, 2, 3, 1, device=device))
    sub = type("MyRecurrent", (getattr(nn, mode),), {})(3, 4).to(device)  # PyTorch's message names the base class
    with pytest.raises(ValueError, match=f"^{mode}: Expected input to be 2D or 3D, got {got}"):
        sub(_x(5, 2, 3, 1, device=device))
    out, h = m(_x(5, 3, device=device), torch.zeros(1, 4, device=device))  # the right ranks still run
    assert tuple(out.shape) == (5, 4) and tuple(h.shape) == (1, 4)


def test_lstm_checks_both_states_ranks_and_their_count(device):
    """PyTorch's LSTM forward checks hx and cx together: "For batched 3-D input, hx and cx should also be 3-D but got
    (3-D, 2-D) tensors" ("For unbatched 2-D input, hx and cx should also be 2-D but got (2-D, 3-D) tensors"); a
    tuple of other than two states raises RuntimeError "lstm expects two hidden states" (also for a
    PackedSequence); a tensor of stacked states (2, L*D, N, H) is indexed as (hx[0], hx[1]).  coretorch before:
    "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor" (cx not named), "LSTM expects hx to be a
    tuple (h_0, c_0)" and that error for the stacked tensor too."""
    m = _load(nn.LSTM(3, 4, num_layers=2)).to(device)
    x = _x(5, 2, 3, device=device)
    z3, z2 = torch.zeros(2, 2, 4, device=device), torch.zeros(2, 4, device=device)
    with pytest.raises(RuntimeError, match=r"batched 3-D input, hx and cx should also be 3-D but got \(3-D, 2-D\)"):
        m(x, (z3, z2))
    with pytest.raises(RuntimeError, match=r"unbatched 2-D input, hx and cx should also be 2-D but got \(2-D, 3-D\)"):
        m(x[:, 0], (z2, z3))
    with pytest.raises(RuntimeError, match="lstm expects two hidden states"):
        m(x, (z3, z3, z3))
    packed = pack_padded_sequence(x, [5, 3])
    with pytest.raises(RuntimeError, match="lstm expects two hidden states"):
        m(packed, (z3,))
    h0, c0 = _x(2, 2, 4, device=device, seed=3), _x(2, 2, 4, device=device, seed=4)
    out_t, (h_t, c_t) = m(x, (h0, c0))
    out_s, (h_s, c_s) = m(x, torch.stack([h0, c0]))  # PyTorch: hx[0], hx[1] of the stacked tensor
    np.testing.assert_allclose(out_s.detach().cpu().numpy(), out_t.detach().cpu().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c_s.detach().cpu().numpy(), c_t.detach().cpu().numpy(), rtol=1e-6, atol=1e-6)


def test_lstm_cell_wants_exactly_two_states(device):
    """PyTorch's LSTMCell with a 1- or 3-tuple state raises RuntimeError "lstm_cell expects two hidden states".
    coretorch before: ValueError "not enough values to unpack" / "too many values to unpack"."""
    cell = nn.LSTMCell(3, 4).to(device)
    x, h = torch.zeros(2, 3, device=device), torch.zeros(2, 4, device=device)
    for hx in ((h,), (h, h, h)):
        with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states"):
            cell(x, hx)
    h1, c1 = cell(x, (h, h))
    assert tuple(h1.shape) == (2, 4) and tuple(c1.shape) == (2, 4)


def test_assigning_a_plain_tensor_weight_is_what_forward_runs_with(device):
    """PyTorch's RNNBase keeps ``_flat_weights`` (the list forward runs with) up to date in ``__setattr__``, so a
    weight-dropping wrapper (AWD-LSTM, fastai's WeightDropout) that deletes the parameter and assigns a plain tensor
    runs with that tensor, and the gradient reaches the raw weight it came from; ``_flat_weights`` holds the same
    objects as the attributes.  coretorch before: this worked (``_flat_weights`` was a property), and must keep
    working with the list (checked against a GRU whose weight was zeroed in place)."""
    x = _x(5, 2, 3, device=device)
    m = _load(nn.GRU(3, 4)).to(device)
    raw = nn.Parameter(m.weight_hh_l0.detach().clone())
    del m._parameters["weight_hh_l0"]
    m.weight_hh_l0 = raw * 0.0
    assert m._flat_weights[1] is m.weight_hh_l0
    out, h = m(x)
    ref = _load(nn.GRU(3, 4)).to(device)
    with torch.no_grad():
        ref.weight_hh_l0.zero_()
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref(x)[0].detach().cpu().numpy(), rtol=1e-6, atol=1e-6)
    h.sum().backward()
    assert raw.grad is not None and tuple(raw.grad.shape) == (12, 4)
    assert [n for n, _ in m.named_parameters()] == ["weight_ih_l0", "bias_ih_l0", "bias_hh_l0"]


def test_setting_flat_weights_changes_what_forward_runs_with(device):
    """PyTorch: ``rnn._flat_weights = [...]`` (weight-drop code does this) is the list forward runs with, until a
    weight attribute is replaced (``_update_flat_weights`` at forward's start, or ``_init_flat_weights()``).
    coretorch before: AttributeError "property '_flat_weights' of 'GRU' object has no setter", and no
    ``_init_flat_weights`` / ``_update_flat_weights`` / ``_weights_have_changed`` / ``_flat_weight_refs``."""
    x = _x(5, 2, 3, device=device)
    m = _load(nn.GRU(3, 4)).to(device)
    before = m(x)[0].detach().cpu().numpy()
    m._flat_weights = [w.detach() * 0 for w in m._flat_weights]
    out, h = m(x)
    assert not out.detach().cpu().numpy().any() and not h.detach().cpu().numpy().any()  # zero weights: zero states
    assert not m._weights_have_changed()
    m._init_flat_weights()  # back to the parameters
    np.testing.assert_allclose(m(x)[0].detach().cpu().numpy(), before, rtol=1e-6, atol=1e-6)
    m._parameters["weight_ih_l0"] = nn.Parameter(torch.zeros(12, 3, device=device))  # behind __setattr__'s back
    assert m._weights_have_changed()
    m(x)
    assert m._flat_weights[0] is m.weight_ih_l0 and not m._weights_have_changed()


def test_flat_weights_follow_conversions_and_pickling(device):
    """PyTorch's RNNBase re-reads ``_flat_weights`` after ``_apply`` (``.double()``, ``.to``) and drops the weak
    references when pickled; a deep copy or an unpickled module runs with its own weights.  coretorch before: no
    such list (these must hold with it)."""
    x = _x(5, 2, 3, device=device)
    m = _load(nn.LSTM(3, 4, proj_size=2, bidirectional=True)).to(device)
    want = m(x)[0].detach().cpu().numpy()
    for other in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert all(a is b for a, b in zip(other._flat_weights, other.parameters()))
        np.testing.assert_allclose(other(x)[0].detach().cpu().numpy(), want, rtol=1e-5, atol=1e-6)
        with torch.no_grad():
            other.weight_hh_l0.zero_()
        np.testing.assert_allclose(m(x)[0].detach().cpu().numpy(), want, rtol=1e-6, atol=1e-6)  # not shared
    d = m.double()
    assert all(w.dtype == torch.float64 for w in d._flat_weights)
    assert d(x.double())[0].dtype == torch.float64


def test_pack_padded_sequence_wants_lengths_on_the_cpu(device):
    """PyTorch's _pack_padded_sequence reads a lengths tensor on the host only: one on an accelerator raises
    RuntimeError "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor" (either
    enforce_sorted); a cpu tensor (any integer or float dtype) or a list is fine with input on any device.
    coretorch before: copied accelerator lengths to the host silently; a 2-D float lengths said "Float tensor"."""
    x = _x(4, 3, 2, device=device)
    if device != "cpu":
        lens = torch.tensor([4, 2, 3], device=device)
        for es in (True, False):
            with pytest.raises(RuntimeError, match="should be a 1D CPU int64 tensor, but got 1D opencl"):
                pack_padded_sequence(x, lens, enforce_sorted=es)
    with pytest.raises(RuntimeError, match="but got 2D cpu Long tensor"):
        pack_padded_sequence(x, torch.tensor([[4.0, 3.0, 2.0]]))
    p = pack_padded_sequence(x, torch.tensor([4, 2, 3], dtype=torch.int32), enforce_sorted=False)
    assert p.batch_sizes.tolist() == [3, 3, 2, 1] and p.data.device.type == device
    padded, lengths = pad_packed_sequence(p)
    assert lengths.tolist() == [4, 2, 3]
    np.testing.assert_allclose(padded[:2, 1].cpu().numpy(), x[:2, 1].cpu().numpy())


def test_packing_and_unpadding_name_their_nodes_as_pytorch(device):
    """PyTorch: pack_padded_sequence's data has grad_fn PackPaddedSequenceBackward0 (either enforce_sorted), each
    tensor unpad_sequence / unpack_sequence returns IndexBackward0 (a boolean-mask index); gradients flow back to
    the padded input.  coretorch before: CatBackward0 and CloneBackward0 (same gradients)."""
    u = nn.utils.rnn
    x = _x(4, 3, 2, device=device).requires_grad_()
    for p in (pack_padded_sequence(x, [4, 3, 1]), pack_padded_sequence(x, [1, 4, 3], enforce_sorted=False)):
        assert type(p.data.grad_fn).__name__ == "PackPaddedSequenceBackward0"
        parts = u.unpack_sequence(p)
        assert [type(t.grad_fn).__name__ for t in parts] == ["IndexBackward0"] * 3
    sum((t * (i + 1)).sum() for i, t in enumerate(parts)).backward()
    g = x.grad.cpu().numpy()
    want = np.zeros((4, 3, 2), np.float32)
    want[:1, 0], want[:, 1], want[:3, 2] = 1, 2, 3
    np.testing.assert_array_equal(g, want)


def test_packed_sequence_to_with_copy_raises_as_pytorch(device):
    """PyTorch's PackedSequence.to(..., copy=True) raises RuntimeError ".to() does not accept copy argument" (its
    _parse_to, after data.to made a copy); without copy a no-op ``to`` returns the same PackedSequence.  coretorch
    before: returned a copy."""
    p = pack_padded_sequence(_x(3, 2, 2, device=device), [3, 1])
    with pytest.raises(RuntimeError, match="does not accept copy argument"):
        p.to(torch.float32, copy=True)
    with pytest.raises(RuntimeError, match="does not accept copy argument"):
        p.to(dtype=torch.float64, copy=False)
    assert p.to(torch.float32) is p and p.to(device) is p
    assert p.double().data.dtype == torch.float64


def test_pad_sequence_broadcasts_each_sequence_into_the_first_ones_trailing_shape(device):
    """PyTorch's pad_sequence makes a padded tensor of the first sequence's trailing sizes and ``copy_``s each
    sequence into it, so a (3, 1) or a (3,) sequence broadcasts into trailing size 3, and a mismatch raises copy_'s
    RuntimeError "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1" (a
    first sequence of trailing size 1 with a later one of 3: "output with shape [3, 1] doesn't match the broadcast
    shape [3, 3]").  coretorch before: stack's "stack expects each tensor to be equal size" for all of them."""
    u = nn.utils.rnn
    a, b, c = (_x(2, 3, device=device, seed=5), _x(3, 1, device=device, seed=6),
               _x(3, device=device, seed=7).requires_grad_())
    out = u.pad_sequence([a, b, c], batch_first=True, padding_value=-1.0)
    an, bn, cn = (t.detach().cpu().numpy() for t in (a, b, c))
    want = np.full((3, 3, 3), -1.0, np.float32)
    want[0, :2], want[1], want[2] = an, np.broadcast_to(bn, (3, 3)), np.broadcast_to(cn, (3, 3))
    np.testing.assert_array_equal(out.detach().cpu().numpy(), want)
    out.sum().backward()
    np.testing.assert_array_equal(c.grad.cpu().numpy(), np.full(3, 3.0, np.float32))  # (a row in each of 3 rows)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\) at non"):
        u.pad_sequence([a, _x(3, 4, device=device)])
    with pytest.raises(RuntimeError, match=r"output with shape \[3, 1\] doesn't match the broadcast shape \[3, 3\]"):
        u.pad_sequence([_x(2, 1, device=device), _x(3, 3, device=device)])


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_gradcheck_perturbs_a_modules_parameters_in_place(mode):
    """PyTorch's gradcheck perturbs each input tensor in place, so ``gradcheck(lambda *ps: rnn(x)[0],
    tuple(rnn.parameters()))`` checks the recurrent layers' weight gradients (float64, small sizes: passes in both
    directions; LSTM with proj_size too; the cells).  coretorch before: it passed fresh tensors, the module ran with
    its unperturbed weights and gradcheck raised "Jacobian mismatch" (numerical Jacobian zero)."""
    kw = {"proj_size": 1} if mode == "LSTM" else {}
    m = getattr(nn, mode)(2, 2, bidirectional=True, dtype=torch.float64, **kw)
    x = torch.tensor(np.random.default_rng(0).standard_normal((3, 2, 2)))
    before = [p.detach().clone() for p in m.parameters()]
    assert torch.autograd.gradcheck(lambda *ps: m(x)[0], tuple(m.parameters()))
    assert torch.autograd.gradcheck(lambda *ps: m(x)[1][0] if mode == "LSTM" else m(x)[1], tuple(m.parameters()))
    assert all(bool((p == b).all()) for p, b in zip(m.parameters(), before))  # restored exactly
    cell = getattr(nn, mode + "Cell")(2, 2, dtype=torch.float64)
    xc = x[0]
    assert torch.autograd.gradcheck(lambda *ps: cell(xc)[0] if mode == "LSTM" else cell(xc),
                                    tuple(cell.parameters()))


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_states_and_weights_on_another_device_than_the_input(mode):
    """PyTorch (ATen's check_attributes): RuntimeError "Input and hidden tensors are not at the same device, found
    input tensor at cuda:0 and hidden tensor at cpu" (the states first), "Input and parameter tensors are not at the
    same device, ..." (also for a PackedSequence).  coretorch before: matmul's "Expected all tensors to be on the
    same device" deep in the first step."""
    from coretorch.testing import available_devices
    others = [d for d in available_devices() if d != "cpu"]
    if not others:
        pytest.skip("needs a second device (an accelerator plugin)")
    dev = others[0]
    x = _x(5, 2, 3, device=dev)
    h = torch.zeros(1, 2, 4)
    m = getattr(nn, mode)(3, 4).to(dev)
    with pytest.raises(RuntimeError, match=f"Input and hidden tensors are not at the same device, found input tensor "
                                           f"at {dev}:0 and hidden tensor at cpu"):
        m(x, (h, h) if mode == "LSTM" else h)
    cpu_m = getattr(nn, mode)(3, 4)
    for inp in (x, pack_padded_sequence(x, [5, 3])):
        with pytest.raises(RuntimeError, match="Input and parameter tensors are not at the same device, found input "
                                               f"tensor at {dev}:0 and parameter tensor at cpu"):
            cpu_m(inp)
    out, _ = m(x, (h.to(dev), h.to(dev)) if mode == "LSTM" else h.to(dev))  # all on one device: runs
    assert out.device.type == dev
