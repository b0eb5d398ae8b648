"""A Transformer sequence classifier over padded batches: token + position embeddings, a TransformerEncoder with
a boolean key-padding mask, masked mean pooling and a linear head, trained with AdamW until the loss falls.

The task: does a variable-length sequence contain token 1 more often than token 2? Padded positions must not
matter: the trained model's prediction for a sequence is the same with extra padding appended.

A PyTorch program: `python transformer_classifier.py [device]` with `import coretorch as torch`.
"""
import sys

import coretorch as torch
import coretorch.nn as nn
import coretorch.nn.functional as F

PAD, VOCAB, MAXLEN = 0, 6, 12


class Classifier(nn.Module):
    def __init__(self, d=32, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d, padding_idx=PAD)
        self.pos = nn.Parameter(torch.randn(MAXLEN, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=64, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 2)

    def forward(self, tokens):
        pad = tokens == PAD                                     # (B, T) True where padded
        h = self.tok(tokens) + self.pos[: tokens.shape[1]]
        h = self.encoder(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1)
        return self.head(pooled)


def batch(gen, n):
    lengths = torch.randint(3, MAXLEN + 1, (n,), generator=gen)
    tokens = torch.full((n, MAXLEN), PAD, dtype=torch.long)
    for i, n_i in enumerate(lengths.tolist()):
        tokens[i, :n_i] = torch.randint(1, VOCAB, (n_i,), generator=gen)
    labels = ((tokens == 1).sum(1) > (tokens == 2).sum(1)).long()
    return tokens, labels


def main(device):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = Classifier().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
    tokens, labels = batch(gen, 32)
    tokens, labels = tokens.to(device), labels.to(device)
    losses = []
    for _ in range(12):
        loss = F.cross_entropy(model(tokens), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert last < 0.7 * first, losses
    model.eval()
    with torch.no_grad():
        short = tokens[:8, :6].clone()
        short[short == PAD] = 3                              # 6 real tokens, then padding
        padded = torch.cat([short, torch.full((8, MAXLEN - 6), PAD, dtype=torch.long, device=device)], 1)
        a, b = model(short), model(padded)
    assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()
    acc = (model(tokens).argmax(1) == labels).float().mean().item()
    print(f"transformer classifier: loss {first:.3f} -> {last:.3f}, train accuracy {acc:.2f}; padding ignored")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu"))
