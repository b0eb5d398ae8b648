"""Review 20e: recurrent, attention and transformer modules against PyTorch 2.13, eager: RNN/LSTM/GRU and their
cells, PackedSequence, MultiheadAttention and F.multi_head_attention_forward, F.scaled_dot_product_attention, the
Transformer layers, Embedding and EmbeddingBag: values (with PyTorch's weights copied in), dtypes, shapes,
gradients and error types.  Each test states what PyTorch gives and what coretorch gave before the fix."""
from __future__ import annotations

import numpy as np
import pytest

import coretorch as torch
import coretorch.nn.functional as F


def _t(a, device, **kw):
    return torch.tensor(np.asarray(a), device=device, **kw)


def _np_attention(q, k, v, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


def test_sdpa_checks_the_feature_and_sequence_sizes(device):
    """PyTorch raises RuntimeError when key's feature size differs from query's or value's length from key's (its
    matmuls check).  coretorch before: on opencl the one-node attention multiplied the raw arrays unchecked and
    returned a (2, 3, 4, 7) result from out-of-shape reads; on cpu numpy's ValueError."""
    rng = np.random.default_rng(0)
    q = _t(rng.standard_normal((2, 3, 4, 6)), device)
    with pytest.raises(RuntimeError, match="query's last dim"):
        F.scaled_dot_product_attention(q, _t(rng.standard_normal((2, 3, 5, 7)), device),
                                       _t(rng.standard_normal((2, 3, 5, 7)), device))
    with pytest.raises(RuntimeError, match="same sequence length"):
        F.scaled_dot_product_attention(q, _t(rng.standard_normal((2, 3, 5, 6)), device),
                                       _t(rng.standard_normal((2, 3, 6, 7)), device))
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        F.scaled_dot_product_attention(q[0, 0, 0], q[0, 0], q[0, 0])
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=_t(np.ones((4, 4), np.int64), device))


def test_sdpa_grouped_query_attention_with_different_key_and_value_heads(device):
    """PyTorch's enable_gqa repeats key and value each to the query's heads (6 query heads, 2 key heads, 3 value
    heads works).  coretorch before: repeated both by the key's factor, and the matmul raised."""
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal(s) for s in ((2, 6, 4, 5), (2, 2, 3, 5), (2, 3, 3, 5)))
    out = F.scaled_dot_product_attention(_t(q, device), _t(k, device), _t(v, device), enable_gqa=True)
    ref = _np_attention(q, np.repeat(k, 3, axis=1), np.repeat(v, 2, axis=1))
    np.testing.assert_allclose(out.cpu().numpy(), ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="must divide"):
        F.scaled_dot_product_attention(_t(q, device), _t(k[:, :1].repeat(4, 1), device),
                                       _t(v[:, :1].repeat(4, 1), device), enable_gqa=True)


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_rnn_cells_check_their_input_and_state_shapes(device, cls):
    """PyTorch's cells accept a 1-D or 2-D input and state of matching batch and hidden sizes (ValueError for other
    ranks, RuntimeError "Input batch size 2 doesn't match hidden0 batch size 4" / "hidden0 has inconsistent
    hidden_size: got 2, expected 4" / "input has inconsistent input_size").  coretorch before: a 2-D input with a
    1-D state (4,) broadcast it to a (2, 4) result, an unbatched input with a (2, 4) state gave (2, 4), a 3-D input
    or state gave a 3-D result, other mismatches raised matmul's or unpacking's errors."""
    m = getattr(torch.nn, cls)(3, 4).to(device)

    def state(*shape):
        t = torch.zeros(*shape, device=device)
        return (t, t) if cls == "LSTMCell" else t

    x2, x1 = torch.zeros(2, 3, device=device), torch.zeros(3, device=device)
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 4"):
        m(x2, state(4))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 2, expected 4"):
        m(x1, state(2, 4))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 5"):
        m(x2, state(2, 5))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 4 expected 3"):
        m(torch.zeros(2, 4, device=device))
    with pytest.raises(ValueError, match=f"{cls}: Expected input to be 1D or 2D, got 3D"):
        m(torch.zeros(1, 2, 3, device=device))
    with pytest.raises(ValueError, match="to be 1D or 2D, got 3D"):
        m(x2, state(1, 2, 4))
    if cls == "LSTMCell":
        with pytest.raises(RuntimeError, match="doesn't match hidden1 batch size 3"):
            m(x2, (torch.zeros(2, 4, device=device), torch.zeros(3, 4, device=device)))
    out = m(x1, state(4))  # unbatched input and state still work
    assert tuple((out[0] if cls == "LSTMCell" else out).shape) == (4,)


def test_rnn_checks_the_input_dtype_and_an_empty_sequence(device):
    """PyTorch's RNNBase.check_input raises ValueError "RNN input dtype (...) does not match weight dtype" (also for
    a PackedSequence), and ATen RuntimeError "Expected sequence length to be larger than 0 in RNN"; RNNCell with an
    unknown ``nonlinearity`` set after construction raises RuntimeError "Unknown nonlinearity".  coretorch before:
    matmul's RuntimeError, an empty output, and ReLU for any nonlinearity that was not "tanh"."""
    lstm = torch.nn.LSTM(3, 4, dtype=torch.float64).to(device)
    with pytest.raises(ValueError, match="does not match weight dtype"):
        lstm(torch.zeros(5, 2, 3, device=device))
    packed = torch.nn.utils.rnn.pack_sequence([torch.zeros(2, 3, device=device)])
    with pytest.raises(ValueError, match="does not match weight dtype"):
        lstm(packed)
    with pytest.raises(RuntimeError, match="sequence length to be larger than 0"):
        lstm(torch.zeros(0, 2, 3, dtype=torch.float64, device=device))
    cell = torch.nn.RNNCell(3, 4).to(device)
    cell.nonlinearity = "gelu"
    with pytest.raises(RuntimeError, match="Unknown nonlinearity: gelu"):
        cell(torch.zeros(2, 3, device=device))


@pytest.mark.parametrize("extra", [{}, {"add_bias_kv": True, "add_zero_attn": True}])
def test_mha_is_causal_without_weights_or_padding_mask_applies_the_causal_mask(device, extra):
    """PyTorch's F.multi_head_attention_forward documents ``is_causal``: "applies a causal mask as attention mask,
    and ignores attn_mask" when there is no key padding mask and ``need_weights=False`` (it calls SDPA with
    is_causal=True: a top-left causal mask over the final keys, bias_k and the zero key included).  coretorch
    before: attended with the given attn_mask (another result for a mask that was not the causal one, and the
    appended keys visible to every query)."""
    torch.manual_seed(0)
    m = torch.nn.MultiheadAttention(6, 2, dtype=torch.float64, **extra).to(device).eval()
    rng = np.random.default_rng(2)
    x = _t(rng.standard_normal((4, 2, 6)), device)
    other = _t(rng.standard_normal((4, 4)), device)
    out = m(x, x, x, attn_mask=other, is_causal=True, need_weights=False)[0]
    src = 6 if extra else 4
    causal = _t(np.where(np.tril(np.ones((4, src), bool)), 0.0, -np.inf), device)
    if extra:  # the reference: the causal mask over every key position, given as the 3-D mask after the padding
        ref = _mha_reference(m, x, causal)
    else:
        ref = m(x, x, x, attn_mask=causal, need_weights=False)[0].detach().cpu().numpy()
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D"):
        m(x, x[:, 0], x[:, 0])
    with pytest.raises(AssertionError, match="unbatched 2D or batched 3D"):
        m(x[None], x[None], x[None])
    with pytest.raises(AssertionError, match="`attn_mask` to be `None`, 2-D or 3-D"):
        m(x, x, x, attn_mask=other[None, None])
    with pytest.raises(AssertionError, match="does not match value shape"):
        m(x, x, x[:3])


def _mha_reference(m, x, mask):
    """numpy multi-head self-attention of ``m`` (packed weights, bias_k/bias_v and the zero key appended) with an
    additive (L, S') mask over the final keys."""
    w = m.in_proj_weight.detach().cpu().numpy()
    b = m.in_proj_bias.detach().cpu().numpy()
    xn = x.cpu().numpy()
    L, N, E = xn.shape
    h, hd = m.num_heads, E // m.num_heads
    q, k, v = (xn @ w[i * E:(i + 1) * E].T + b[i * E:(i + 1) * E] for i in range(3))
    k = np.concatenate([k, np.broadcast_to(m.bias_k.detach().cpu().numpy(), (1, N, E))])
    v = np.concatenate([v, np.broadcast_to(m.bias_v.detach().cpu().numpy(), (1, N, E))])

    def heads(t):
        return t.reshape(t.shape[0], N * h, hd).transpose(1, 0, 2)
    q, k, v = heads(q), heads(k), heads(v)
    k = np.concatenate([k, np.zeros((N * h, 1, hd))], 1)
    v = np.concatenate([v, np.zeros((N * h, 1, hd))], 1)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask.cpu().numpy()
    p = np.exp(s - s.max(-1, keepdims=True))
    o = (p / p.sum(-1, keepdims=True)) @ v
    o = o.transpose(1, 0, 2).reshape(L, N, E)
    return o @ m.out_proj.weight.detach().cpu().numpy().T + m.out_proj.bias.detach().cpu().numpy()


def test_embedding_bag_argument_checks_and_an_empty_max_bag_keeps_the_graph(device):
    """PyTorch's F.embedding_bag raises ValueError for max mode with scale_grad_by_freq or sparse and for a weight
    that is not 2-D, RuntimeError for a padding_idx outside [-num_embeddings, num_embeddings) and for float indices
    or offsets, and swaps the deprecated (weight, input) argument order with a warning; with no indices its max
    result (zeros) still requires grad.  coretorch before: ran max mode ignoring both options, took padding_idx
    10 or -11 and float offsets silently, raised RuntimeError for a 1-D weight and ValueError for the old order,
    and the empty max result had no graph (backward raised)."""
    w = torch.arange(30.0, device=device).reshape(10, 3)
    i, o = _t([1, 2, 4, 5], device), _t([0, 2], device)
    with pytest.raises(ValueError, match="max mode does not support scaling"):
        F.embedding_bag(i, w, o, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="max mode does not support sparse"):
        F.embedding_bag(i, w, o, mode="max", sparse=True)
    with pytest.raises(ValueError, match="weight has to be a 2D Tensor"):
        F.embedding_bag(i, w[0], o)
    for pi in (10, -11):
        with pytest.raises(RuntimeError, match="padding_idx must be within the number of embeddings"):
            F.embedding_bag(i, w, o, padding_idx=pi)
    with pytest.raises(RuntimeError, match="scalar types: Long, Int"):
        F.embedding_bag(i, w, o.float())
    with pytest.warns(UserWarning, match="Argument order"):
        swapped = F.embedding_bag(w, i, o)
    np.testing.assert_array_equal(swapped.cpu().numpy(), [[4.5, 5.5, 6.5], [13.5, 14.5, 15.5]])
    wg = w.clone().requires_grad_()
    out = F.embedding_bag(_t(np.zeros(0, np.int64), device), wg, _t([0, 0], device), mode="max")
    assert out.requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(out.detach().cpu().numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(wg.grad.cpu().numpy(), np.zeros((10, 3)))


def test_encoder_layer_flags_relu_and_gelu_modules_and_rnn_hidden_size_type():
    """PyTorch's TransformerEncoderLayer sets ``activation_relu_or_gelu`` to 1 for F.relu or an nn.ReLU() module
    and 2 for F.gelu or an nn.GELU() module; RNNBase raises TypeError for a hidden_size that is not an int.
    coretorch before: 0 for the modules, and ValueError."""
    assert torch.nn.TransformerEncoderLayer(4, 2, activation=torch.nn.ReLU()).activation_relu_or_gelu == 1
    assert torch.nn.TransformerEncoderLayer(4, 2, activation=torch.nn.GELU()).activation_relu_or_gelu == 2
    assert torch.nn.TransformerEncoderLayer(4, 2, activation=F.gelu).activation_relu_or_gelu == 2
    assert torch.nn.TransformerEncoderLayer(4, 2, activation=F.silu).activation_relu_or_gelu == 0
    with pytest.raises(TypeError, match="hidden_size should be of type int, got: float"):
        torch.nn.LSTM(3, 4.0)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        torch.nn.GRU(3, 0)


def test_rnn_base_public_helpers_and_mha_merge_masks(device):
    """PyTorch's RNNBase has public helpers custom RNN subclasses call (``check_input``,
    ``get_expected_hidden_size``, LSTM's ``get_expected_cell_size``, ``check_hidden_size``, ``check_forward_args``,
    ``permute_hidden``, ``_all_weights``) and MultiheadAttention ``merge_masks``.  coretorch before: each raised
    AttributeError."""
    lstm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2).to(device)
    x = torch.zeros(5, 6, 3, device=device)
    assert lstm.get_expected_hidden_size(x, None) == (4, 6, 2)
    assert lstm.get_expected_cell_size(x, None) == (4, 6, 4)
    assert lstm.get_expected_hidden_size(x[0], torch.tensor([3, 2, 1])) == (4, 3, 2)
    lstm.check_forward_args(x, (torch.zeros(4, 6, 2), torch.zeros(4, 6, 4)), None)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(4, 6, 4\), got \[4, 6, 2\]"):
        lstm.check_forward_args(x, (torch.zeros(4, 6, 2), torch.zeros(4, 6, 2)), None)
    with pytest.raises(RuntimeError, match="input must have 3 dimensions, got 2"):
        lstm.check_input(x[0], None)
    with pytest.raises(ValueError, match="does not match weight dtype"):
        lstm.check_input(x.double(), None)
    assert lstm._all_weights[3] == ["weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse",
                                    "bias_hh_l1_reverse", "weight_hr_l1_reverse"]
    gru = torch.nn.GRU(3, 4)
    h = torch.arange(8.0).reshape(1, 2, 4)
    np.testing.assert_array_equal(gru.permute_hidden(h, torch.tensor([1, 0])).numpy(), h.numpy()[:, ::-1])
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"):
        gru.check_forward_args(torch.zeros(5, 2, 3), torch.zeros(1, 3, 4), None)
    mha = torch.nn.MultiheadAttention(4, 2).to(device)
    q = torch.zeros(2, 3, 4, device=device)
    am = _t(np.arange(9.0).reshape(3, 3), device)
    kpm = _t(np.array([[0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]), device)
    merged, kind = mha.merge_masks(am, kpm, q)
    assert kind == 2 and tuple(merged.shape) == (2, 2, 3, 3)
    ref = np.arange(9.0).reshape(3, 3) + kpm.cpu().numpy()[:, None, None]       # (2, 1, 3, 3): every head
    np.testing.assert_array_equal(merged.cpu().numpy(), np.broadcast_to(ref, (2, 2, 3, 3)))
    assert mha.merge_masks(None, kpm, q) == (kpm, 1) and mha.merge_masks(None, None, q) == (None, None)


@pytest.mark.parametrize("masked", [False, True])
def test_sdpa_under_autocast_returns_the_lower_precision(device, masked):
    """PyTorch's scaled_dot_product_attention is on autocast's lower-precision list: float32 inputs in a bfloat16
    region give a bfloat16 result (computed in float32 inside, as for bfloat16 inputs).  coretorch before:
    RecursionError (its half-precision branch called the public function on float32 copies, which autocast cast
    back to bfloat16)."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 3, 4, 8)).astype(np.float32) for _ in range(3))
    mask = _t(rng.standard_normal((4, 4)).astype(np.float32), device, requires_grad=True) if masked else None
    with torch.autocast(device, dtype=torch.bfloat16):
        out = F.scaled_dot_product_attention(_t(q, device), _t(k, device), _t(v, device), attn_mask=mask)
    assert out.dtype is torch.bfloat16
    bf = [torch.tensor(a).bfloat16().float().numpy() for a in (q, k, v)]
    s = bf[0] @ np.swapaxes(bf[1], -1, -2) / np.sqrt(8) + (mask.detach().cpu().numpy() if masked else 0)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ bf[2]
    np.testing.assert_allclose(out.detach().float().cpu().numpy(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("sparse", [False, True])
def test_embedding_of_width_zero_backward(device, sparse):
    """PyTorch: an Embedding (or EmbeddingBag) with embedding_dim 0 gives (…, 0) results and a (num, 0) gradient.
    coretorch before: its backward reshaped the gradient to (-1, 0) and raised "shape '[-1, 0]' is invalid"."""
    e = torch.nn.Embedding(5, 0, sparse=sparse, padding_idx=1).to(device)
    out = e(_t([[1, 2], [4, 4]], device))
    assert tuple(out.shape) == (2, 2, 0)
    out.sum().backward()
    g = e.weight.grad.to_dense() if sparse else e.weight.grad
    assert tuple(g.shape) == (5, 0)
    bag = torch.nn.EmbeddingBag(5, 0, mode="mean").to(device)
    r = bag(_t([1, 2, 3], device), _t([0, 1], device))
    r.sum().backward()
    assert tuple(r.shape) == (2, 0) and tuple(bag.weight.grad.shape) == (5, 0)


def test_pack_padded_sequence_rejects_2d_lengths_and_an_empty_batch():
    """PyTorch raises RuntimeError "'lengths' argument should be a 1D CPU int64 tensor, but got 2D ..." and
    "Cannot pack empty tensors." (a batch of no sequences).  coretorch before: TypeError from int() of a list and
    ValueError from cat of no tensors."""
    u = torch.nn.utils.rnn
    with pytest.raises(RuntimeError, match="should be a 1D CPU int64 tensor, but got 2D"):
        u.pack_padded_sequence(torch.zeros(4, 2, 3), torch.tensor([[4, 2]]))
    with pytest.raises(RuntimeError, match="Cannot pack empty tensors"):
        u.pack_padded_sequence(torch.zeros(3, 0, 2), [])


def test_embedding_with_indices_on_another_device_raises_runtime_error():
    """PyTorch: an index tensor on another device than the weight raises RuntimeError "Expected all tensors to be
    on the same device".  coretorch before: AttributeError ('numpy.ndarray' object has no attribute 'base_data')
    from the opencl lookup reading a cpu array (also through F.embedding_bag)."""
    from coretorch.testing import available_devices
    others = [d for d in available_devices() if d != "cpu"]
    if not others:
        pytest.skip("needs a second device")
    w = torch.randn(5, 3, device=others[0])
    with pytest.raises(RuntimeError, match="same device"):
        F.embedding(torch.tensor([1, 2]), w)
    with pytest.raises(RuntimeError, match="same device"):
        F.embedding(torch.tensor([1, 2], device=others[0]), w.cpu())
    with pytest.raises(RuntimeError, match="same device"):
        F.embedding_bag(torch.tensor([1, 2]), w, torch.tensor([0]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_with_no_bags(device, mode):
    """PyTorch: include_last_offset with the single offset [0] describes no bags: a (0, D) result on the weight's
    graph.  coretorch before: mean and max raised IndexError/RuntimeError (index -1 of an empty result)."""
    w = torch.randn(10, 3, device=device, requires_grad=True)
    out = F.embedding_bag(_t([1, 2], device), w, _t([0], device), include_last_offset=True, mode=mode)
    assert tuple(out.shape) == (0, 3) and out.requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.zeros((10, 3)))


def test_embedding_bag_offsets_checked_on_cpu_and_a_compiled_step_still_replays():
    """PyTorch's CPU embedding_bag raises RuntimeError "offsets[0] has to be 0 ..." and "offsets[-1] can not be
    greater than input's length ...".  coretorch before: a first offset of 1 raised index_add_'s error about index
    -1, and an offset past the end gave an empty bag silently.  The checks read one boolean each, so a compiled
    step with new offsets every call still replays."""
    w = torch.randn(10, 3)
    i = torch.tensor([1, 2, 3, 4])
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(i, w, torch.tensor([1, 2]))
    for offsets, last in (([0, 5], False), ([0, 2, 5], True)):
        with pytest.raises(RuntimeError, match="can not be greater than input's length 4 but got offsets\\[-1\\] of 5"):
            F.embedding_bag(i, w, torch.tensor(offsets), include_last_offset=last)

    def step(idx, off, weight):
        y = F.embedding_bag(idx, weight, off, mode="mean")
        (y * y).sum().backward()
        return y.detach()

    compiled = torch.compile(step)
    for call in range(4):
        g = torch.Generator().manual_seed(call)
        idx = torch.randint(0, 10, (8,), generator=g)
        off = torch.tensor([0, call % 3 + 1, 5])
        we, wc = (torch.randn(10, 3, generator=torch.Generator().manual_seed(9)).requires_grad_() for _ in range(2))
        np.testing.assert_array_equal(step(idx, off, we).numpy(), compiled(idx, off, wc).numpy())
        np.testing.assert_array_equal(we.grad.numpy(), wc.grad.numpy())
    assert compiled.replays == 3
    with pytest.raises(RuntimeError, match="can not be greater"):
        compiled(idx, torch.tensor([0, 2, 9]), wc)
