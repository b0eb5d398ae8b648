"""Dense-backed sparse COO tensors (coretorch.sparse): construction, COO accessors, coalesce, to_sparse/to_dense,
torch.sparse.mm/spmm/sum with autograd, Embedding(sparse=True) gradients and SparseAdam, on every device."""
from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

import coretorch as torch
from coretorch.testing import available_devices

DEVICES = available_devices()

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) appears twice: summed
VAL = [3.0, 4.0, 5.0, 1.5]


def _dense_ref(idx, val, shape):
    out = np.zeros(shape)
    np.add.at(out, tuple(np.asarray(idx)), np.asarray(val))
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_sparse_coo_tensor_value_and_accessors(device):
    s = torch.sparse_coo_tensor(IDX, VAL, (2, 3), device=device)
    assert s.is_sparse and s.layout == torch.sparse_coo and s.device.type == device
    assert not torch.zeros(2).is_sparse and torch.zeros(2).layout == torch.strided
    assert s.shape == (2, 3) and s.dtype == torch.float32 and s._nnz() == 4
    assert s.sparse_dim() == 2 and s.dense_dim() == 0 and not s.is_coalesced()
    np.testing.assert_allclose(s.to_dense().cpu().numpy(), _dense_ref(IDX, VAL, (2, 3)))
    assert not s.to_dense().is_sparse
    assert s._indices().tolist() == IDX and s._values().tolist() == VAL  # as given
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        s.indices()
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    assert c.indices().tolist() == [[0, 1, 1], [2, 0, 2]] and c.values().tolist() == [4.5, 4.0, 5.0]
    np.testing.assert_allclose(c.to_dense().cpu().numpy(), s.to_dense().cpu().numpy())
    r = repr(c)
    assert r.startswith("tensor(indices=tensor([[0, 1, 1],") and "size=(2, 3), nnz=3" in r
    assert "layout=torch.sparse_coo" in r
    for moved in (s.double(), s.to(torch.float64), s.cpu(), s.detach()):
        assert moved.is_sparse and moved._nnz() == 4
    assert s.double().dtype == torch.float64 and s.cpu().device.type == "cpu"
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout but got Strided"):
        torch.zeros(2).indices()
    # other ops see the dense value and give plain tensors (documented difference: PyTorch keeps some sparse)
    doubled = s * torch.full((2, 3), 2.0, device=device)
    assert isinstance(s, torch.Tensor) and not doubled.is_sparse and doubled.layout == torch.strided
    np.testing.assert_allclose(doubled.cpu().numpy(), 2 * _dense_ref(IDX, VAL, (2, 3)))
    for copied in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert copied.is_sparse and copied.device == s.device and not copied.is_coalesced()
        assert copied._indices().tolist() == IDX and copied._values().tolist() == VAL


@pytest.mark.parametrize("device", DEVICES)
def test_sparse_coo_tensor_size_inference_hybrid_and_errors(device):
    s = torch.sparse_coo_tensor(torch.tensor([[0, 3]], device=device), torch.ones(2, 2, device=device))
    assert s.shape == (4, 2) and s.sparse_dim() == 1 and s.dense_dim() == 1
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), [[1, 1], [0, 0], [0, 0], [1, 1]])
    with pytest.raises(RuntimeError, match="indices and values must have same nnz"):
        torch.sparse_coo_tensor([[0, 1]], [1.0], (2,), device=device)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, size is 2 but found index 2"):
        torch.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (2,), device=device)
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        torch.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (2,), device=device)
    with pytest.raises(RuntimeError, match=r"number of dimensions must be sparse_dim \(1\) \+ dense_dim \(0\)"):
        torch.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (2, 2), device=device)
    e = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (2, 2), device=device)
    assert e._nnz() == 0 and e.to_dense().tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("device", DEVICES)
def test_to_sparse_keeps_the_nonzeros(device):
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    x = torch.tensor(a, device=device)
    s = x.to_sparse()
    assert s.is_coalesced() and s.to_sparse() is s
    assert s.indices().tolist() == [list(v) for v in np.nonzero(a)] and s.values().tolist() == a[np.nonzero(a)].tolist()
    h = x.to_sparse(1)  # hybrid: rows with any nonzero, dense rows as values
    assert h.indices().tolist() == [[0, 1]] and h.values().tolist() == a.tolist()
    np.testing.assert_array_equal(h.to_dense().cpu().numpy(), a)


@pytest.mark.parametrize("device", DEVICES)
def test_sparse_mm_forward_and_gradients(device):
    rng = np.random.default_rng(0)
    d = rng.standard_normal((3, 2))
    vals = torch.tensor(VAL, dtype=torch.float64, device=device, requires_grad=True)
    dense = torch.tensor(d, device=device, requires_grad=True)
    s = torch.sparse_coo_tensor(IDX, vals, (2, 3))
    ref = _dense_ref(IDX, VAL, (2, 3)) @ d
    for f in (torch.sparse.mm, torch.spmm, torch.mm, lambda a, b: a @ b):
        out = f(s, dense)
        assert not out.is_sparse
        np.testing.assert_allclose(out.detach().cpu().numpy(), ref, rtol=1e-12)
    torch.sparse.mm(s, dense).sum().backward()
    # d/dD sum(S @ D) = S^T @ ones; d/dvalues[k] = sum_j D[col_k, j]
    np.testing.assert_allclose(dense.grad.cpu().numpy(), _dense_ref(IDX, VAL, (2, 3)).T @ np.ones((2, 2)))
    np.testing.assert_allclose(vals.grad.cpu().numpy(), d[IDX[1]].sum(1))
    assert torch.autograd.gradcheck(
        lambda v, m: torch.sparse.mm(torch.sparse_coo_tensor(IDX, v, (2, 3)), m),
        (vals.detach().requires_grad_(), dense.detach().requires_grad_()))
    both = torch.sparse.mm(s.detach(), dense.detach().to_sparse())  # sparse @ sparse is sparse
    assert both.is_sparse
    np.testing.assert_allclose(both.to_dense().cpu().numpy(), ref, rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_sparse_sum(device):
    s = torch.sparse_coo_tensor(IDX, VAL, (2, 3), device=device, dtype=torch.float64)
    ref = _dense_ref(IDX, VAL, (2, 3))
    total = torch.sparse.sum(s)
    assert total.dim() == 0 and math.isclose(total.item(), ref.sum())
    rows = torch.sparse.sum(s, 1)
    assert rows.is_sparse and rows.to_dense().tolist() == ref.sum(1).tolist()
    assert not torch.sparse.sum(s, (0, 1)).is_sparse
    with pytest.raises(RuntimeError, match="expected sparse coordinate tensor layout"):
        torch.sparse.sum(torch.ones(2))


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_sparse_gradients_and_sparse_adam(device):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(5, 2, sparse=True).to(device)
    w0 = emb.weight.detach().cpu().numpy().copy()
    opt = torch.optim.SparseAdam(emb.parameters(), lr=0.1)
    ids = torch.tensor([1, 1, 3], device=device)
    emb(ids).sum().backward()
    g = emb.weight.grad
    assert g.is_sparse and g._indices().tolist() == [[1, 1, 3]] and g._values().tolist() == [[1.0, 1.0]] * 3
    np.testing.assert_array_equal(g.to_dense().cpu().numpy(), [[0, 0], [2, 2], [0, 0], [1, 1], [0, 0]])
    opt.step()
    # PyTorch's SparseAdam, step 1 at rows 1 and 3: m = 0.1 g, v = 0.001 g^2, update = lr * m_hat / (sqrt(v_hat) + eps)
    w1 = emb.weight.detach().cpu().numpy().copy()
    expect = w0.copy()
    expect[[1, 3]] -= 0.1 * 1.0 / (1.0 + 1e-8)
    np.testing.assert_allclose(w1, expect, rtol=1e-6, atol=1e-6)
    emb(torch.tensor([4], device=device)).sum().backward()  # accumulated: still sparse
    assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 4
    c = emb.weight.grad.coalesce()
    assert c.indices().tolist() == [[1, 3, 4]] and c.values().tolist() == [[2.0, 2.0], [1.0, 1.0], [1.0, 1.0]]
    opt.step()
    # step 2: rows touched get Adam's second step, row 0 and 2 never move
    w2 = emb.weight.detach().cpu().numpy()
    np.testing.assert_array_equal(w2[[0, 2]], w0[[0, 2]])
    m1, v1 = 0.1 * 2.0, 0.001 * 4.0  # row 1 was looked up twice: gradient 2 at both steps (grads accumulate)
    m2, v2 = 0.9 * m1 + 0.1 * 2.0, 0.999 * v1 + 0.001 * 4.0
    step = 0.1 * math.sqrt(1 - 0.999 ** 2) / (1 - 0.9 ** 2)
    np.testing.assert_allclose(w2[1], w1[1] - step * m2 / (math.sqrt(v2) + 1e-8), rtol=1e-5, atol=1e-6)
    m4, v4 = 0.1 * 1.0, 0.001 * 1.0  # row 4's first update, at step 2
    np.testing.assert_allclose(w2[4], w1[4] - step * m4 / (math.sqrt(v4) + 1e-8), rtol=1e-5, atol=1e-6)
    lin = torch.nn.Linear(2, 2).to(device)
    lin(torch.ones(2, device=device)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        torch.optim.SparseAdam(lin.parameters()).step()
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        torch.optim.SparseAdam(lin.parameters(), lr=-1)


def test_a_graph_convolution_network_trains():
    # two GCN layers over a ring graph of 8 nodes with self loops: normalised adjacency as a sparse tensor
    n = 8
    src = list(range(n)) + list(range(n)) + [(i + 1) % n for i in range(n)]
    dst = list(range(n)) + [(i + 1) % n for i in range(n)] + list(range(n))
    adj = torch.sparse_coo_tensor([src, dst], torch.full((3 * n,), 1.0 / 3), (n, n))
    torch.manual_seed(0)
    x = torch.randn(n, 4)
    y = torch.tensor([int(i < n // 2) for i in range(n)])  # two arcs of the ring
    l1, l2 = torch.nn.Linear(4, 16), torch.nn.Linear(16, 2)
    opt = torch.optim.SGD([*l1.parameters(), *l2.parameters()], lr=0.5)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        h = torch.relu(torch.sparse.mm(adj, l1(x)))
        loss = torch.nn.functional.cross_entropy(torch.sparse.mm(adj, l2(h)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]


@pytest.mark.parametrize("device", DEVICES)
def test_ops_that_stay_sparse(device):
    s = torch.sparse_coo_tensor(IDX, VAL, (2, 3), device=device)
    ref = _dense_ref(IDX, VAL, (2, 3))
    for out, expect in ((s.t(), ref.T), (s.transpose(1, 0), ref.T), (-s, -ref), (s * 2, 2 * ref), (3 * s, 3 * ref),
                        (s / 2, ref / 2), (s + s, 2 * ref), (s - s.coalesce(), 0 * ref)):
        assert out.is_sparse
        np.testing.assert_allclose(out.to_dense().cpu().numpy(), expect, rtol=1e-6)
    assert s.t()._indices().tolist() == [IDX[1], IDX[0]] and (s + s)._nnz() == 8
    h = torch.sparse_coo_tensor([[0, 2]], torch.ones(2, 2, device=device), (3, 2))
    assert not h.transpose(0, 1).is_sparse  # a dense dimension moves: the dense value's transpose
    with pytest.warns(UserWarning, match=r"torch.sparse.FloatTensor\(indices, values, shape, \*, device=\) is deprec"):
        legacy = torch.sparse.FloatTensor(torch.tensor(IDX), torch.tensor(VAL), torch.Size([2, 3]))
    assert legacy.is_sparse and legacy.dtype == torch.float32 and legacy.shape == (2, 3)
    with pytest.warns(UserWarning):
        empty = torch.sparse.DoubleTensor(2, 3)
    assert empty._nnz() == 0 and empty.dtype == torch.float64 and empty.to_dense().tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_sparse_gradient_leaves_padding_out(device):
    emb = torch.nn.Embedding(4, 2, padding_idx=0, sparse=True).to(device)
    emb(torch.tensor([0, 1, 0, 2], device=device)).sum().backward()
    g = emb.weight.grad
    assert g._indices().tolist() == [[1, 2]] and g._values().tolist() == [[1.0, 1.0], [1.0, 1.0]]
    np.testing.assert_array_equal(g.to_dense().cpu().numpy(), [[0, 0], [1, 1], [1, 1], [0, 0]])
