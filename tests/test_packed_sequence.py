"""nn.utils.rnn (PackedSequence, pack/pad and back) and RNN/LSTM/GRU on packed input, on every device: the packed
run must equal running each sequence alone; gradients by gradcheck; PyTorch's errors."""
import numpy as np
import pytest

import coretorch as torch
from coretorch import nn
from coretorch.autograd import gradcheck
from coretorch.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence, pack_sequence,
                                    pad_packed_sequence, pad_sequence, unpack_sequence, unpad_sequence)


def N(t):
    return t.detach().cpu().numpy()


def test_pack_and_pad_layout(device):
    seqs = [torch.tensor([1.0, 2, 3], device=device), torch.tensor([4.0, 5], device=device),
            torch.tensor([6.0], device=device)]
    p = pack_sequence(seqs)
    assert isinstance(p, PackedSequence) and isinstance(p, tuple)
    assert N(p.data).tolist() == [1, 4, 6, 2, 5, 3]  # time step by time step, longest first
    assert p.batch_sizes.tolist() == [3, 2, 1] and p.batch_sizes.device.type == "cpu"
    assert p.sorted_indices is None and p.unsorted_indices is None
    shuffled = [seqs[1], seqs[0], seqs[2]]
    q = pack_sequence(shuffled, enforce_sorted=False)
    assert N(q.data).tolist() == [1, 4, 6, 2, 5, 3]
    assert q.sorted_indices.tolist() == [1, 0, 2] and q.unsorted_indices.tolist() == [1, 0, 2]
    padded, lengths = pad_packed_sequence(q, batch_first=True, padding_value=-1.0)
    assert N(padded).tolist() == [[4, 5, -1], [1, 2, 3], [6, -1, -1]] and lengths.tolist() == [2, 3, 1]
    padded, _ = pad_packed_sequence(q, total_length=5)
    assert padded.shape == (5, 3)
    assert [N(t).tolist() for t in unpack_sequence(q)] == [[4, 5], [1, 2, 3], [6]]
    left = pad_sequence(shuffled, batch_first=True, padding_side="left")
    assert N(left).tolist() == [[0, 4, 5], [1, 2, 3], [0, 0, 6]]
    right = pad_sequence(shuffled)
    assert right.shape == (3, 3) and N(right[:, 0]).tolist() == [4, 5, 0]
    assert [N(t).tolist() for t in unpad_sequence(right, [2, 3, 1])] == [[4, 5], [1, 2, 3], [6]]
    perm = torch.tensor([2, 0, 3, 1], device=device)
    assert invert_permutation(perm).tolist() == [1, 3, 0, 2]


def test_errors_as_pytorch(device):
    x = torch.zeros(3, 2, device=device)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"):
        pack_padded_sequence(x, [2, 3])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        pack_padded_sequence(x, torch.tensor([3, 0]))
    p = pack_sequence([torch.ones(3, device=device), torch.ones(2, device=device)])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of the longest"):
        pad_packed_sequence(p, total_length=2)
    with pytest.raises(RuntimeError, match="padding_side"):  # PyTorch's TORCH_CHECK: RuntimeError
        pad_sequence([torch.ones(2)], padding_side="middle")


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_packed_run_equals_each_sequence_alone(device, cls):
    torch.manual_seed(0)
    m = getattr(nn, cls)(3, 5, num_layers=2, bidirectional=True, batch_first=True).double().to(device)
    lengths = [4, 6, 2, 5]
    seqs = [torch.randn(n, 3, dtype=torch.float64).to(device) for n in lengths]
    packed = pack_sequence(seqs, enforce_sorted=False)
    out, h = m(packed)
    assert isinstance(out, PackedSequence)
    h_n = h[0] if cls == "LSTM" else h
    padded, lens = pad_packed_sequence(out, batch_first=True)
    assert lens.tolist() == lengths and padded.shape == (4, 6, 10)
    for i, s in enumerate(seqs):
        o_i, h_i = m(s)  # unbatched: the same module on one sequence
        np.testing.assert_allclose(N(padded[i, :lengths[i]]), N(o_i), rtol=1e-10, atol=1e-12)
        assert (N(padded[i, lengths[i]:]) == 0).all()
        hi = h_i[0] if cls == "LSTM" else h_i
        np.testing.assert_allclose(N(h_n[:, i]), N(hi), rtol=1e-10, atol=1e-12)
        if cls == "LSTM":
            np.testing.assert_allclose(N(h[1][:, i]), N(h_i[1]), rtol=1e-10, atol=1e-12)


def test_packed_hx_in_batch_order_and_gradcheck(device):
    torch.manual_seed(1)
    m = nn.LSTM(2, 3).double().to(device)
    x = torch.randn(4, 3, 2, dtype=torch.float64).to(device).requires_grad_()
    h0 = torch.randn(1, 3, 3, dtype=torch.float64).to(device)
    c0 = torch.randn(1, 3, 3, dtype=torch.float64).to(device)
    lengths = [2, 4, 3]
    out, (h, _) = m(pack_padded_sequence(x, lengths, enforce_sorted=False), (h0, c0))
    # sequence 0 alone with its own initial state gives row 0 of h_n
    _, (h_alone, _) = m(x[:2, 0], (h0[:, 0], c0[:, 0]))
    np.testing.assert_allclose(N(h[:, 0]), N(h_alone), rtol=1e-10)

    def f(inp):
        o, (hn, cn) = m(pack_padded_sequence(inp, lengths, enforce_sorted=False), (h0, c0))
        return pad_packed_sequence(o)[0], hn, cn

    assert gradcheck(f, (x,))


def test_lstm_tagger_over_packed_sequences_trains(device):
    # tag each token of variable-length sentences with whether it equals the previous token
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    lengths = sorted(rng.integers(3, 9, size=24).tolist(), reverse=True)
    sents = [rng.integers(1, 4, size=n) for n in lengths]
    tags = [np.concatenate([[0], (s[1:] == s[:-1]).astype(int)]) for s in sents]
    tokens = pad_sequence([torch.tensor(s) for s in sents], batch_first=True).to(device)
    target = pad_sequence([torch.tensor(t) for t in tags], batch_first=True, padding_value=-100).to(device)

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(4, 8)
            self.lstm = nn.LSTM(8, 16, batch_first=True, bidirectional=True)
            self.out = nn.Linear(32, 2)

        def forward(self, tok, lens):
            packed = pack_padded_sequence(self.emb(tok), lens, batch_first=True)
            h, _ = self.lstm(packed)
            h, _ = pad_packed_sequence(h, batch_first=True)
            return self.out(h)

    model = Tagger().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(40):
        logits = model(tokens, lengths)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 2), target.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < 0.3 * np.mean(losses[:5]), losses
