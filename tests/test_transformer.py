"""nn.Transformer, TransformerEncoder/Decoder(+Layer) and MultiheadAttention's add_bias_kv/add_zero_attn on every
device: forward against a numpy reference, gradcheck in float64, mask rules and PyTorch's errors."""
import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.autograd import gradcheck


def N(t):
    return t.detach().cpu().numpy()


def _np_layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _np_softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_mha(sd, prefix, q, k, v, nhead, mask=None):
    """(L, N, E) inputs; mask: float (L, S) or (N, S) key-padding bool, both added as -inf."""
    W, B = sd[prefix + "in_proj_weight"], sd[prefix + "in_proj_bias"]
    E = q.shape[-1]
    qp, kp, vp = q @ W[:E].T + B[:E], k @ W[E:2 * E].T + B[E:2 * E], v @ W[2 * E:].T + B[2 * E:]
    L, n, _ = qp.shape
    S = kp.shape[0]
    hd = E // nhead
    qh = qp.reshape(L, n, nhead, hd).transpose(1, 2, 0, 3)
    kh = kp.reshape(S, n, nhead, hd).transpose(1, 2, 0, 3)
    vh = vp.reshape(S, n, nhead, hd).transpose(1, 2, 0, 3)
    s = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(hd)
    if mask is not None:
        s = s + mask
    o = (_np_softmax(s) @ vh).transpose(2, 0, 1, 3).reshape(L, n, E)
    return o @ sd[prefix + "out_proj.weight"].T + sd[prefix + "out_proj.bias"]


def test_encoder_layer_matches_numpy_reference(device):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).double().to(device)
    sd = {k: N(v) for k, v in layer.state_dict().items()}
    x = np.random.default_rng(0).normal(size=(5, 3, 8))
    kpm = np.zeros((3, 5), bool)
    kpm[1, 3:] = True
    causal = np.triu(np.full((5, 5), -np.inf), 1)
    mask = causal[None, None] + np.where(kpm, -np.inf, 0.0)[:, None, None, :]
    h = _np_layer_norm(x + _np_mha(sd, "self_attn.", x, x, x, 2, mask), sd["norm1.weight"], sd["norm1.bias"])
    ff = np.maximum(h @ sd["linear1.weight"].T + sd["linear1.bias"], 0) @ sd["linear2.weight"].T + sd["linear2.bias"]
    ref = _np_layer_norm(h + ff, sd["norm2.weight"], sd["norm2.bias"])
    tx = torch.tensor(x, device=device)
    got = layer(tx, src_mask=nn.Transformer.generate_square_subsequent_mask(5, device=device, dtype=torch.float64),
                src_key_padding_mask=torch.tensor(kpm, device=device))
    np.testing.assert_allclose(N(got), ref, rtol=1e-10, atol=1e-12)
    # a bool attn_mask (True = masked) is the same as the float one
    got_bool = layer(tx, src_mask=torch.tensor(np.isinf(causal), device=device),
                     src_key_padding_mask=torch.tensor(kpm, device=device))
    np.testing.assert_allclose(N(got_bool), ref, rtol=1e-10, atol=1e-12)


def test_norm_first_and_callable_activation(device):
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, activation=torch.tanh, norm_first=True,
                                       batch_first=True).double().to(device)
    sd = {k: N(v) for k, v in layer.state_dict().items()}
    x = np.random.default_rng(1).normal(size=(2, 4, 8))
    xt = x.transpose(1, 0, 2)  # the reference works on (L, N, E)
    h = xt + _np_mha(sd, "self_attn.", *(3 * [_np_layer_norm(xt, sd["norm1.weight"], sd["norm1.bias"])]), 2)
    n2 = _np_layer_norm(h, sd["norm2.weight"], sd["norm2.bias"])
    ref = h + np.tanh(n2 @ sd["linear1.weight"].T + sd["linear1.bias"]) @ sd["linear2.weight"].T + sd["linear2.bias"]
    np.testing.assert_allclose(N(layer(torch.tensor(x, device=device))), ref.transpose(1, 0, 2), rtol=1e-10,
                               atol=1e-12)


def test_gradcheck_encoder_and_decoder(device):
    torch.manual_seed(2)
    enc = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0).double().to(device)
    dec = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, activation="gelu").double().to(device)
    x = torch.randn(3, 2, 4, dtype=torch.float64).to(device).requires_grad_()
    mem = torch.randn(4, 2, 4, dtype=torch.float64).to(device).requires_grad_()
    assert gradcheck(lambda t: enc(t), (x,))
    tmask = nn.Transformer.generate_square_subsequent_mask(3, device=device, dtype=torch.float64)
    assert gradcheck(lambda t, m: dec(t, m, tgt_mask=tmask), (x, mem))


def test_stacks_shapes_masks_and_causal_detection(device):
    torch.manual_seed(3)
    model = nn.Transformer(16, 4, 2, 2, 32, dropout=0.0, batch_first=True).to(device)
    assert len(model.encoder.layers) == 2 and isinstance(model.encoder.norm, nn.LayerNorm)
    src, tgt = torch.randn(2, 7, 16).to(device), torch.randn(2, 5, 16).to(device)
    out = model(src, tgt, tgt_mask=model.generate_square_subsequent_mask(5, device=device))
    assert out.shape == (2, 5, 16)
    # causal: a change at the last target position does not reach the earlier outputs
    tgt2 = tgt.clone()
    tgt2[:, -1] += 1.0
    out2 = model(src, tgt2, tgt_mask=model.generate_square_subsequent_mask(5, device=device))
    np.testing.assert_allclose(N(out2[:, :-1]), N(out[:, :-1]), rtol=1e-5, atol=1e-6)
    assert not np.allclose(N(out2[:, -1]), N(out[:, -1]))
    # a key-padding mask hides the padded source positions from the decoder
    kpm = torch.tensor([[False] * 5 + [True] * 2, [False] * 7]).to(device)
    src2 = src.clone()
    src2[0, 5:] = 100.0
    a = model(src, tgt, src_key_padding_mask=kpm, memory_key_padding_mask=kpm)
    b = model(src2, tgt, src_key_padding_mask=kpm, memory_key_padding_mask=kpm)
    np.testing.assert_allclose(N(a), N(b), rtol=1e-5, atol=1e-5)
    m = nn.Transformer.generate_square_subsequent_mask(3)
    assert N(m).tolist() == [[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]
    from coretorch.nn.modules.transformer import _detect_is_causal_mask
    assert _detect_is_causal_mask(m) is True and _detect_is_causal_mask(m.T) is False
    assert _detect_is_causal_mask(None, True) is True
    # unbatched input (S, E)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0), 1).to(device)
    assert enc(torch.randn(6, 16).to(device)).shape == (6, 16)


def test_errors_as_pytorch(device):
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    model = nn.Transformer(8, 2, 1, 1, 16).to(device)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(torch.randn(4, 2, 8).to(device), torch.randn(3, 3, 8).to(device))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(torch.randn(4, 2, 6).to(device), torch.randn(3, 2, 6).to(device))
    layer = nn.TransformerEncoderLayer(8, 2, 16).to(device)
    with pytest.raises(AssertionError, match="only bool and floating types of src_key_padding_mask"):
        layer(torch.randn(3, 2, 8).to(device), src_key_padding_mask=torch.zeros(2, 3, dtype=torch.int64).to(device))
    with pytest.warns(UserWarning, match="mismatched src_key_padding_mask and src_mask"):
        layer(torch.randn(3, 2, 8).to(device), src_mask=torch.zeros(3, 3).to(device),
              src_key_padding_mask=torch.zeros(2, 3, dtype=torch.bool).to(device))
    mha = nn.MultiheadAttention(8, 2).to(device)
    x = torch.randn(3, 2, 8).to(device)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)


def test_mha_add_bias_kv_and_add_zero_attn(device):
    torch.manual_seed(4)
    m = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True).double().to(device)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "bias_k", "bias_v",
                                                    "out_proj.weight", "out_proj.bias"]
    sd = {k: N(v) for k, v in m.state_dict().items()}
    x = np.random.default_rng(4).normal(size=(4, 2, 8))
    out, w = m(*(3 * [torch.tensor(x, device=device)]), average_attn_weights=False)
    assert w.shape == (2, 2, 4, 6)  # 4 keys + bias_k + a zero key
    # reference: append bias_k/bias_v after the projection and a zero key/value per head
    W, B, E, hd = sd["in_proj_weight"], sd["in_proj_bias"], 8, 4
    q = x @ W[:E].T + B[:E]
    k = np.concatenate([x @ W[E:2 * E].T + B[E:2 * E], np.broadcast_to(sd["bias_k"], (1, 2, 8))])
    v = np.concatenate([x @ W[2 * E:].T + B[2 * E:], np.broadcast_to(sd["bias_v"], (1, 2, 8))])
    qh, kh, vh = (t.reshape(t.shape[0], 2, 2, hd).transpose(1, 2, 0, 3) for t in (q, k, v))
    kh = np.concatenate([kh, np.zeros((2, 2, 1, hd))], 2)
    vh = np.concatenate([vh, np.zeros((2, 2, 1, hd))], 2)
    p = _np_softmax(qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(hd))
    o = (p @ vh).transpose(2, 0, 1, 3).reshape(4, 2, 8) @ sd["out_proj.weight"].T + sd["out_proj.bias"]
    np.testing.assert_allclose(N(out), o, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(N(w), p, rtol=1e-10, atol=1e-12)
    xt = torch.tensor(x, device=device).requires_grad_()
    assert gradcheck(lambda t: m(t, t, t, key_padding_mask=torch.tensor([[False, False, False, True]] * 2,
                                                                          device=device))[0], (xt,))


def test_transformer_sequence_classifier_trains(device):
    # a Transformer classifier over padded batches: the class is whether token 1 appears before the padding
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    B, L, V = 32, 8, 6
    lengths = rng.integers(3, L + 1, size=B)
    tokens = rng.integers(2, V, size=(B, L))
    labels = rng.integers(0, 2, size=B)
    for i in range(B):
        if labels[i]:
            tokens[i, rng.integers(0, lengths[i])] = 1
        tokens[i, lengths[i]:] = 0
    pad = torch.tensor(np.arange(L)[None, :] >= lengths[:, None]).to(device)
    x, y = torch.tensor(tokens).to(device), torch.tensor(labels).to(device)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, 16, padding_idx=0)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True,
                                                                        norm_first=True), 2)
            self.head = nn.Linear(16, 2)

        def forward(self, tok, mask):
            h = self.enc(self.emb(tok), src_key_padding_mask=mask)
            keep = (~mask).unsqueeze(-1).to(h.dtype)
            return self.head((h * keep).sum(1) / keep.sum(1))

    model = Classifier().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(40):
        loss = nn.functional.cross_entropy(model(x, pad), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses
