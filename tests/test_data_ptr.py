"""``Tensor.data_ptr()`` as PyTorch's: the address of the first element, so views of one storage differ by their byte
offsets and tied weights compare equal (code that finds shared tensors before saving relies on it)."""
from __future__ import annotations

import coretorch as torch


def test_views_differ_by_their_byte_offsets(device):
    x = torch.arange(12.0, device=device).reshape(3, 4)
    p = x.data_ptr()
    assert x[1:].data_ptr() - p == 16 and x[:, 1].data_ptr() - p == 4 and x[2, 3].data_ptr() - p == 44
    assert x.view(12).data_ptr() == p and x.t().data_ptr() == p and x.detach().data_ptr() == p
    assert x.clone().data_ptr() != p
    h = torch.arange(6, dtype=torch.int16, device=device)
    assert h[2:].data_ptr() - h.data_ptr() == 4


def test_tied_weights_share_a_data_ptr(device):
    lin = torch.nn.Linear(3, 3).to(device)
    emb = torch.nn.Embedding(3, 3).to(device)
    emb.weight = lin.weight
    assert emb.weight.data_ptr() == lin.weight.data_ptr() == lin.weight.data.data_ptr()
    assert torch.nn.Linear(3, 3).to(device).weight.data_ptr() != lin.weight.data_ptr()
