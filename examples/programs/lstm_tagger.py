"""An LSTM part-of-speech-style tagger over packed variable-length sentences: embeddings, a bidirectional
LSTM with projections (proj_size) on a PackedSequence (pack_padded_sequence with enforce_sorted=False),
pad_packed_sequence back, a linear tag head and cross-entropy with ignore_index on the padding, trained with
Adam until the loss falls.

The tag of a token is whether it equals the token before it, so the tagger needs context; the packed run must
give each sentence the same outputs as running it alone.

A PyTorch program: `python lstm_tagger.py [device]` with `import coretorch as torch`.
"""
import sys

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F
from coretorch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

IGNORE = -100


class Tagger(nn.Module):
    def __init__(self, vocab=5, d=12, hidden=16, proj=8, tags=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, batch_first=True, bidirectional=True, proj_size=proj)
        self.out = nn.Linear(2 * proj, tags)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.emb(tokens), lengths, batch_first=True, enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = pad_packed_sequence(h, batch_first=True, total_length=tokens.shape[1])
        return self.out(h)


def main(device):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(2)
    lengths = torch.randint(3, 8, (12,), generator=gen)
    sents = [torch.randint(1, 4, (n,), generator=gen) for n in lengths.tolist()]
    tags = [torch.cat([torch.zeros(1, dtype=torch.long), (s[1:] == s[:-1]).long()]) for s in sents]
    tokens = pad_sequence(sents, batch_first=True).to(device)
    target = pad_sequence(tags, batch_first=True, padding_value=IGNORE).to(device)
    model = Tagger().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(12):
        logits = model(tokens, lengths)
        loss = F.cross_entropy(logits.reshape(-1, 2), target.reshape(-1), ignore_index=IGNORE)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert last < 0.6 * first, losses
    with torch.no_grad():
        logits = model(tokens, lengths)
        alone = model(tokens[:1, : int(lengths[0])], lengths[:1])
    assert torch.allclose(logits[0, : int(lengths[0])], alone[0], atol=1e-5)
    mask = target != IGNORE
    acc = (logits.argmax(-1)[mask] == target[mask]).float().mean().item()
    print(f"LSTM tagger over packed sequences: loss {first:.3f} -> {last:.3f}, token accuracy {acc:.2f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu"))
