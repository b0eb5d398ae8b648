"""The module paths real code imports from (torch.nn.modules.activation.MultiheadAttention, ...)."""
from __future__ import annotations

import importlib

import coretorch as torch


def test_pytorch_module_paths_import():
    act = importlib.import_module("coretorch.nn.modules.activation")
    lin = importlib.import_module("coretorch.nn.modules.linear")
    tr = importlib.import_module("coretorch.nn.modules.transformer")
    assert act.MultiheadAttention is torch.nn.MultiheadAttention
    assert tr.TransformerEncoderLayer is torch.nn.TransformerEncoderLayer and tr.Transformer is torch.nn.Transformer
    mha = torch.nn.MultiheadAttention(4, 2)
    assert type(mha.out_proj) is lin.NonDynamicallyQuantizableLinear
    assert isinstance(mha.out_proj, torch.nn.Linear)
    lstm = torch.nn.LSTM(3, 4)
    before = [p.detach().clone() for p in lstm.parameters()]
    assert lstm.flatten_parameters() is None  # a no-op: the parameters stay as they are
    assert all(torch.equal(a, b) for a, b in zip(before, lstm.parameters()))
