"""Review 21d (eager): torch.utils.data, mixed precision and nn.utils against PyTorch 2.13's documented behaviour.

Each test's docstring says what PyTorch does and what coretorch did before the fix."""
from __future__ import annotations

import warnings
from collections import OrderedDict, defaultdict

import numpy as np
import pytest

import coretorch as torch
from coretorch.utils import data as D


class _Range(D.Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return i


class _Iter(D.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


# ---- utils.data -------------------------------------------------------------------------------------
def test_default_collate_ints_follow_tensor_inference():
    """PyTorch's collate_int_fn is ``torch.tensor(batch)``: [1, 2.5] makes float32 [1.0, 2.5] and [True, 2] int64.
    Before: ``dtype=int64`` was forced, so 2.5 was silently truncated to 2."""
    r = D.default_collate([1, 2.5])
    assert r.dtype is torch.float32 and r.tolist() == [1.0, 2.5]
    assert D.default_collate([True, 2]).dtype is torch.int64
    assert D.default_collate([True, False]).dtype is torch.bool
    assert D.default_collate([1, 2]).dtype is torch.int64


def test_default_collate_numpy_strings_stay_strings():
    """numpy str_ scalars are strings to PyTorch's collate (returned as the batch). Before: a TypeError from
    converting a '<U1' array."""
    assert D.default_collate([np.str_("a"), np.str_("b")]) == ["a", "b"]
    with pytest.raises(TypeError, match="found <U1"):
        D.default_collate([np.array(["a"]), np.array(["b"])])


def test_default_collate_keeps_mapping_and_sequence_types():
    """PyTorch rebuilds a mapping (a mutable one as an updated copy) and a non-tuple sequence in the sample's own
    type. Before: an OrderedDict or a defaultdict came back as a plain dict."""
    r = D.default_collate([OrderedDict(b=1, a=2), OrderedDict(b=3, a=4)])
    assert type(r) is OrderedDict and list(r) == ["b", "a"] and r["a"].tolist() == [2, 4]
    d1, d2 = defaultdict(list), defaultdict(list)
    d1["x"], d2["x"] = 1.0, 2.0
    r2 = D.default_collate([d1, d2])
    assert type(r2) is defaultdict and r2.default_factory is list and r2["x"].dtype is torch.float64

    class L(list):
        pass
    r3 = D.default_collate([L([1, 2]), L([3, 4])])
    assert type(r3) is L and [t.tolist() for t in r3] == [[1, 3], [2, 4]]
    assert type(D.default_convert(L([np.ones(1)]))) is L


def test_random_split_fraction_out_of_range():
    """PyTorch raises ValueError("Fraction at index 0 is not between 0 and 1") for fractions like [1.2, -0.2]
    (they sum to 1). Before: Subsets of lengths 12 and -2 of a 10-sample dataset."""
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        D.random_split(_Range(10), [1.2, -0.2])


def test_random_split_empty_split_warns():
    """PyTorch warns "Length of split at index 1 is 0" when a fraction gives an empty split. Before: silent."""
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        parts = D.random_split(_Range(2), [0.1, 0.1, 0.8])
    assert [len(p) for p in parts] == [1, 0, 1]


def test_subset_subclass_overriding_getitem_only():
    """PyTorch 2.13 raises NotImplementedError when a Subset subclass overrides __getitem__ but not __getitems__ (the
    DataLoader fetches through __getitems__). Before: the loader silently bypassed the override."""
    class Plus(D.Subset):
        def __getitem__(self, i):
            return 100 + super().__getitem__(i)
    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        Plus(_Range(4), [0, 1])

    class Both(Plus):
        def __getitems__(self, indices):
            return [self[i] for i in indices]
    assert next(iter(D.DataLoader(Both(_Range(4), [0, 1]), batch_size=2))).tolist() == [100, 101]


def test_stack_dataset_getitems():
    """StackDataset has a batched __getitems__ (tuples, or dicts for keyword datasets). Before: AttributeError."""
    s = D.StackDataset(_Range(3), D.Subset(_Range(5), [4, 3, 2]))
    assert s.__getitems__([0, 2]) == [(0, 4), (2, 2)]
    k = D.StackDataset(a=_Range(3), b=_Range(3))
    assert k.__getitems__([1]) == [{"a": 1, "b": 1}]
    assert [t.tolist() for t in next(iter(D.DataLoader(s, batch_size=3)))] == [[0, 1, 2], [4, 3, 2]]


def test_dataset_construction_error_types():
    """PyTorch asserts in ConcatDataset (AssertionError for an empty list or an IterableDataset), len() of a
    TensorDataset() raises IndexError (PyTorch 2.13 builds it: review 23h) and RandomSampler(replacement=1) raises
    TypeError. Before: ValueError, ValueError, accepted."""
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        D.ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        D.ConcatDataset([_Iter(2)])
    with pytest.raises(IndexError):
        len(D.TensorDataset())
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        D.RandomSampler(_Range(3), replacement=1)


def test_dataloader_attributes_frozen_after_init():
    """PyTorch raises ValueError("batch_size attribute should not be set after DataLoader is initialized") (also
    batch_sampler, sampler, drop_last, dataset, persistent_workers). Before: accepted and silently ignored (the
    batch sampler built in __init__ kept the old batch size)."""
    dl = D.DataLoader(_Range(4), batch_size=2)
    for name in ("batch_size", "drop_last", "sampler", "batch_sampler", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{name} attribute should not be set after DataLoader is initialized"):
            setattr(dl, name, None)
    dl.num_workers = 0
    dl.collate_fn = list
    assert list(dl) == [[0, 1], [2, 3]]


def test_dataloader_multiprocessing_context_checked_at_construction():
    """PyTorch checks multiprocessing_context in DataLoader(...): a context without workers, or an unknown start
    method, raise ValueError there. Before: accepted (a bad name failed only when iterating with workers)."""
    with pytest.raises(ValueError, match="can only be used with multi-process loading"):
        D.DataLoader(_Range(4), multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="should specify a valid start method"):
        D.DataLoader(_Range(4), num_workers=1, multiprocessing_context="nope")
    with pytest.raises(TypeError, match="should be a valid context object"):
        D.DataLoader(_Range(4), num_workers=1, multiprocessing_context=3)


def test_dataloader_timeout_without_workers():
    """PyTorch's single-process iterator raises AssertionError("_SingleProcessDataLoaderIter requires timeout ==
    0") for timeout > 0 without workers. Before: the timeout was silently ignored."""
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(D.DataLoader(_Range(2), timeout=1))


def test_iterable_dataset_length_warning():
    """After len(loader), PyTorch warns once an IterableDataset loader yields more batches than the dataset's
    reported length ("Length of IterableDataset ... was reported to be 3(when accessing len(dataloader)), but 4
    samples have been fetched."). Before: no warning."""
    class Dup(_Iter):
        def __iter__(self):
            return iter(list(range(self.n)) * 2)
    dl = D.DataLoader(Dup(3), batch_size=None)
    assert len(dl) == 3
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert len(list(dl)) == 6
    assert [str(x.message).split("but ")[1][:1] for x in w] == ["4", "5", "6"]
    assert "was reported to be 3(when accessing len(dataloader))" in str(w[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(D.DataLoader(Dup(3), batch_size=None))) == 6  # len() not read: no warning


# ---- nn.utils ---------------------------------------------------------------------------------------
def test_clip_grad_norm_empty_generator_warns():
    """PyTorch warns "`parameters` is an empty generator, no gradient clipping will occur." (the usual mistake: a
    model.parameters() generator consumed earlier) and returns tensor(0.). Before: silent."""
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur"):
        r = torch.nn.utils.clip_grad_norm_((p for p in []), 1.0)
    assert r.item() == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.nn.utils.clip_grad_norm_([], 1.0)  # an empty list: no warning


def test_unpad_sequence_returns_copies_and_transposes_input(device):
    """PyTorch's unpad_sequence selects each sequence with a mask (copies) and, without batch_first, transposes
    padded_sequences in place (``transpose_(0, 1)``: a (T, B, *) batch becomes (B, T, *)). Before: the sequences
    were views (writing into one wrote into the batch) and the batch kept its shape."""
    from coretorch.nn.utils.rnn import unpad_sequence
    p = torch.arange(24.0, device=device).reshape(4, 3, 2)
    seqs = unpad_sequence(p, torch.tensor([4, 2, 1]))
    assert p.shape == (3, 4, 2) and not p.is_contiguous()
    assert [tuple(s.shape) for s in seqs] == [(4, 2), (2, 2), (1, 2)]
    assert seqs[1].tolist() == [[2.0, 3.0], [8.0, 9.0]]
    seqs[0][0, 0] = -5.0
    assert p[0, 0, 0].item() == 0.0
    q = torch.arange(24.0, device=device).reshape(3, 4, 2)
    unpad_sequence(q, torch.tensor([4, 2, 1]), batch_first=True)
    assert q.shape == (3, 4, 2)


def test_packed_sequence_dtype_methods():
    """PyTorch's PackedSequence has long/int/short/char/byte (data cast, indices kept), cuda and pin_memory.
    Before: AttributeError for each."""
    from coretorch.nn.utils.rnn import pack_sequence
    p = pack_sequence([torch.ones(1), torch.ones(3) * 2], enforce_sorted=False)
    for name, dt in [("long", torch.int64), ("int", torch.int32), ("short", torch.int16), ("char", torch.int8),
                     ("byte", torch.uint8)]:
        q = getattr(p, name)()
        assert q.data.dtype is dt and q.data.tolist() == [2, 1, 2, 2]
        assert q.sorted_indices.tolist() == [1, 0] and q.unsorted_indices.tolist() == [1, 0]
    assert p.pin_memory().data.tolist() == p.data.tolist()
    with pytest.raises((RuntimeError, AssertionError)):
        p.cuda()


def test_pad_sequence_messages():
    """PyTorch: "Expected padding_side to be one of left or right, but got up." and a RuntimeError for 0-d
    sequences. Before: another message, and an IndexError."""
    from coretorch.nn.utils.rnn import pad_sequence
    with pytest.raises(RuntimeError, match=r"^Expected padding_side to be one of left or right, but got up\.$"):
        pad_sequence([torch.ones(2)], padding_side="up")
    with pytest.raises(RuntimeError):
        pad_sequence([torch.tensor(1.0), torch.tensor(2.0)])


def test_fuse_linear_bn_keeps_linear_dtypes():
    """PyTorch's fuse_linear_bn_weights casts the scale to the Linear weight's dtype and the fused bias to the
    Linear bias's dtype: a float32 Linear with a float64 BatchNorm stays float32. Before: float64 weight and bias
    (a float32 model then failed with a dtype mismatch, or ran in float64)."""
    from coretorch.nn.utils import fuse_linear_bn_eval
    lin = torch.nn.Linear(3, 4).eval()
    bn = torch.nn.BatchNorm1d(4).double().eval()
    with torch.no_grad():
        bn.running_mean.copy_(torch.tensor([0.5, -1.0, 2.0, 0.0], dtype=torch.float64))
        bn.running_var.copy_(torch.tensor([1.5, 0.25, 2.0, 1.0], dtype=torch.float64))
        bn.weight.copy_(torch.tensor([1.0, 2.0, -0.5, 3.0], dtype=torch.float64))
    fused = fuse_linear_bn_eval(lin, bn)
    assert fused.weight.dtype is torch.float32 and fused.bias.dtype is torch.float32
    x = torch.randn(5, 3)
    torch.testing.assert_close(fused(x), bn(lin(x).double()).float(), rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="bn.running_mean and bn.running_var must not be None"):
        fuse_linear_bn_eval(lin, torch.nn.BatchNorm1d(4, track_running_stats=False).eval())


class _TiedNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(2, 2, bias=False)
        self.b = torch.nn.Linear(2, 2, bias=False)
        self.b.weight = self.a.weight
        self.register_buffer("buf", torch.ones(2))

    def forward(self, x):
        return self.b(self.a(x)) + self.buf


def test_functional_call_tied_weights():
    """PyTorch's functional_call unties before its strict check (a value for one of tied names satisfies them all)
    and raises ValueError("functional_call got multiple values for keys ['a.weight', 'b.weight'], which are tied.
    ...") for two different tensors. Before: strict reported the tied name missing, and two values were silently
    used one for each name."""
    from coretorch.nn.utils.stateless import functional_call
    m, x = _TiedNet(), torch.tensor([[1.0, -1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        r = functional_call(m, {"b.weight": torch.eye(2), "buf": torch.zeros(2)}, (x,), strict=True)
        assert r.tolist() == [[1.0, -1.0]]
        with pytest.raises(ValueError, match=r"multiple values for keys \['a.weight', 'b.weight'\], which are tied"):
            functional_call(m, {"a.weight": torch.eye(2), "b.weight": 2 * torch.eye(2)}, (x,))
        e = torch.eye(2)
        assert functional_call(m, {"a.weight": e, "b.weight": e}, (x,)).tolist() == [[2.0, 0.0]]
        r2 = functional_call(m, {"a.weight": torch.eye(2), "b.weight": 2 * torch.eye(2)}, (x,), tie_weights=False)
        assert r2.tolist() == [[3.0, -1.0]]
        with pytest.raises(RuntimeError, match=r"Missing key\(s\): 'b.weight', 'buf'"):
            functional_call(m, {"a.weight": torch.eye(2)}, (x,), strict=True, tie_weights=False)


class _Double(torch.nn.Module):
    def forward(self, x):
        return x * 2

    def right_inverse(self, y):
        return y / 2


class _Split(torch.nn.Module):
    def forward(self, a, b):
        return a + b

    def right_inverse(self, x):
        return x * 0.25, x * 0.75


def test_parametrize_assignment_keeps_original_dtype():
    """PyTorch raises ValueError("The tensor returned by `right_inverse` has dtype torch.float64 while `original`
    has dtype torch.float32") (and "Tensor 0 returned by ..." for several originals). Before: the assignment silently
    turned the float32 original parameter into float64."""
    from coretorch.nn.utils import parametrize as P
    lin = torch.nn.Linear(3, 3)
    P.register_parametrization(lin, "weight", _Double())
    with pytest.raises(ValueError, match="has dtype .*float64 while `original` has dtype .*float32"):
        lin.weight = torch.ones(3, 3, dtype=torch.float64)
    assert lin.parametrizations.weight.original.dtype is torch.float32
    lin.weight = torch.ones(3, 3)
    assert lin.parametrizations.weight.original.tolist() == [[0.5] * 3] * 3
    lin2 = torch.nn.Linear(3, 3)
    P.register_parametrization(lin2, "weight", _Split())
    with pytest.raises(ValueError, match="Tensor 0 returned by `right_inverse` has dtype .*float64 while `original0`"):
        lin2.weight = torch.ones(3, 3, dtype=torch.float64)


def test_parametrize_appended_right_inverse_checked():
    """Appending a parametrization to a chain, PyTorch checks its right_inverse's dtype and shape (unless unsafe):
    "The tensor returned by parametrization.right_inverse must have the same dtype as module.weight ...". Before:
    accepted (a later assignment then stored a float64 original)."""
    from coretorch.nn.utils import parametrize as P

    class BadInverse(torch.nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return x.double()
    lin = torch.nn.Linear(3, 3)
    P.register_parametrization(lin, "weight", _Double())
    with pytest.raises(ValueError, match="right_inverse must have the same dtype as module.weight"):
        P.register_parametrization(lin, "weight", BadInverse())
    P.register_parametrization(lin, "weight", BadInverse(), unsafe=True)

    class NotSeq(torch.nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return 3
    with pytest.raises(ValueError, match=r"must return a Tensor or a Sequence of tensors \(list, tuple...\). Got int"):
        P.register_parametrization(torch.nn.Linear(2, 2), "weight", NotSeq())


# ---- mixed precision --------------------------------------------------------------------------------
def _scaler_step(scaler, device, inf: bool) -> None:
    m = torch.nn.Linear(2, 1).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    scaler.scale(m(torch.ones(1, 2, device=device)).sum()).backward()
    if inf:
        m.weight.grad.fill_(float("inf"))
    scaler.step(opt)
    scaler.update()


def test_grad_scaler_update_rounds_as_pytorch(device):
    """PyTorch's _amp_update_scale_ multiplies the float32 scale by the factor in double and rounds once to float32:
    scale 3 backed off by 0.3 is float32(0.9) = 0.8999999761581421. Before: a float32 multiply by float32(0.3),
    0.9000000357627869."""
    s = torch.amp.GradScaler(device, init_scale=3.0, backoff_factor=0.3)
    _scaler_step(s, device, inf=True)
    assert s.get_scale() == float(np.float32(3.0 * 0.3))
    g = torch.amp.GradScaler(device, init_scale=3.0, growth_factor=1.1, growth_interval=1)
    _scaler_step(g, device, inf=False)
    assert g.get_scale() == float(np.float32(3.0 * 1.1))


def test_grad_scaler_growth_past_float32_keeps_scale(device):
    """PyTorch keeps the scale when growing it would overflow float32 (std::isfinite of the float32 product): from
    2**127 the scale stays 2**127. Before: RuntimeError "value cannot be converted to type float without overflow"
    (the product was checked in double, then written into the float32 scale)."""
    s = torch.amp.GradScaler(device, init_scale=2.0 ** 127, growth_interval=1)
    _scaler_step(s, device, inf=False)
    assert s.get_scale() == 2.0 ** 127 and s._get_growth_tracker() == 0


def test_autocast_device_type_queries_and_messages():
    """PyTorch parses autocast's device_type as a device string: is_autocast_enabled/get_autocast_dtype/
    is_autocast_available('foo') and autocast('foo') raise RuntimeError("Expected one of cpu, cuda, ... device type at
    start of device string: foo"); its unsupported-dtype warning says "CPU Autocast only supports dtypes of
    torch.bfloat16, torch.float16 currently." and autocast('cuda') without CUDA warns "CUDA is not available or
    torch_xla is imported. Disabling autocast.". Before: False, float16, False, another error and other messages."""
    for fn in (torch.is_autocast_enabled, torch.get_autocast_dtype, torch.amp.is_autocast_available, torch.autocast):
        with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
            fn("foo")
    assert torch.get_autocast_dtype("cpu") is torch.bfloat16 and torch.get_autocast_dtype("cuda") is torch.float16
    assert torch.get_autocast_dtype("xla") is torch.bfloat16 and not torch.is_autocast_enabled("xpu")
    with pytest.warns(UserWarning, match=r"CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 "
                                         r"currently\."):
        torch.autocast("cpu", dtype=torch.float32)
    with pytest.warns(UserWarning, match=r"^CUDA is not available or torch_xla is imported. Disabling autocast\.$"):
        torch.autocast("cuda")


def test_autocast_out_variants_run_in_input_dtype():
    """PyTorch's autocast lists name the functional ops, not their out= variants: under autocast('cpu')
    torch.mm(x, x, out=float32) (also addmm, bmm, mv, linalg.vecdot, linalg.multi_dot) computes in float32. Before:
    the inputs were cast to bfloat16 and the out check raised "Expected out tensor to have dtype bfloat16"."""
    x = torch.full((3, 3), 1.001)
    with torch.autocast("cpu"):
        for r in (torch.mm(x, x, out=torch.empty(3, 3)), torch.addmm(x, x, x, out=torch.empty(3, 3)),
                  torch.bmm(x[None], x[None], out=torch.empty(1, 3, 3)), torch.mv(x, x[0], out=torch.empty(3)),
                  torch.linalg.vecdot(x, x, out=torch.empty(3)), torch.linalg.multi_dot([x, x], out=torch.empty(3, 3))):
            assert r.dtype is torch.float32
        assert torch.mm(x, x).dtype is torch.bfloat16
    np.testing.assert_allclose(torch.mm(x, x, out=torch.empty(3, 3)).numpy(),
                               np.full((3, 3), 3 * 1.001 ** 2, np.float32), rtol=1e-6)


def test_autocast_matrix_exp_keeps_dtype():
    """matrix_exp is one kernel in PyTorch, on no autocast list: float32 in, float32 out under autocast('cpu').
    Before: its Taylor matmuls were autocast, so the result was bfloat16 (and bfloat16-accurate)."""
    a = torch.tensor([[0.1, 0.2], [0.3, 0.4]])
    with torch.autocast("cpu"):
        e = torch.linalg.matrix_exp(a)
    assert e.dtype is torch.float32
    torch.testing.assert_close(e, torch.linalg.matrix_exp(a))


def test_dataloader_prefetch_factor_zero_refused_when_iterating():
    """DataLoader(num_workers=1, prefetch_factor=0) is accepted, but PyTorch's worker iterator raises
    AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter"). Before: the loader
    asked the workers for nothing and silently yielded no batch."""
    dl = D.DataLoader(_Range(4), batch_size=2, num_workers=1, prefetch_factor=0)
    assert dl.prefetch_factor == 0
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(dl)


def test_worker_info_is_a_frozen_dataclass():
    """PyTorch 2.13's WorkerInfo is a frozen slots dataclass (id, num_workers, seed, dataset, rng=None,
    worker_method='multiprocessing'): assigning a field raises dataclasses.FrozenInstanceError. Before: a RuntimeError
    "Cannot assign attributes to WorkerInfo objects" and no rng/worker_method."""
    import dataclasses
    info = D.WorkerInfo(id=1, num_workers=2, seed=5, dataset=None)
    assert (info.rng, info.worker_method) == (None, "multiprocessing")
    assert [f.name for f in dataclasses.fields(info)] == ["id", "num_workers", "seed", "dataset", "rng",
                                                          "worker_method"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.seed = 3

    class Probe(_Range):
        def __getitem__(self, i):
            w = D.get_worker_info()
            return (w.id, w.num_workers, w.worker_method, w.dataset is not None)
    assert list(D.DataLoader(Probe(2), batch_size=None, num_workers=1)) == [[0, 1, "multiprocessing", True]] * 2


def test_autocast_recurrent_layers_cpu():
    """Under autocast('cpu') PyTorch runs an unpacked LSTM without projections through oneDNN's LSTM (on the
    bfloat16 list: output, h_n and c_n bfloat16) and an Elman RNN's (and RNNCell's) state through its cells'
    bfloat16 linears (bfloat16), while GRU, LSTMCell, GRUCell and a packed LSTM mix the cells' bfloat16 gates with
    a float32 state (float32). Before: LSTM, RNN and RNNCell gave float32."""
    from coretorch.nn.utils.rnn import pack_padded_sequence
    torch.manual_seed(0)
    seq, x = torch.randn(3, 2, 4), torch.randn(2, 4)
    lstm, gru, rnn = torch.nn.LSTM(4, 3), torch.nn.GRU(4, 3), torch.nn.RNN(4, 3, nonlinearity="relu")
    ref, _ = lstm(seq)
    with torch.autocast("cpu"):
        out, (h, c) = lstm(seq)
        assert (out.dtype, h.dtype, c.dtype) == (torch.bfloat16,) * 3
        assert lstm(pack_padded_sequence(seq, [3, 2]))[0].data.dtype is torch.float32
        assert gru(seq)[0].dtype is torch.float32
        ro, rh = rnn(seq)
        assert ro.dtype is torch.bfloat16 and rh.dtype is torch.bfloat16
        assert rnn(pack_padded_sequence(seq, [3, 2]))[0].data.dtype is torch.bfloat16
        assert torch.nn.RNNCell(4, 3)(x).dtype is torch.bfloat16
        assert torch.nn.LSTMCell(4, 3)(x)[0].dtype is torch.float32 and torch.nn.GRUCell(4, 3)(x).dtype is torch.float32
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=0)
    out.float().sum().backward()
    assert lstm.weight_ih_l0.grad.dtype is torch.float32


def test_iterable_dataset_add_chains_and_concat_cumsum():
    """PyTorch's IterableDataset + IterableDataset is a ChainDataset, and ConcatDataset.cumsum is a static method.
    Before: AssertionError (ConcatDataset of iterables) and AttributeError."""
    c = _Iter(2) + _Iter(3)
    assert type(c) is D.ChainDataset and list(c) == [0, 1, 0, 1, 2]
    assert D.ConcatDataset.cumsum([_Range(2), _Range(3)]) == [2, 5]


def test_stack_non_tensor_element_type_error():
    """torch.stack([tensor, 2]) raises TypeError("expected Tensor as element 1 in argument 0, but got int") (so does
    default_collate of such a batch). Before: AttributeError ('int' object has no attribute 'shape')."""
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got int"):
        torch.stack([torch.tensor(1), 2])
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        D.default_collate([torch.tensor(1), 2])


def test_dataloader_warns_about_more_workers_than_cpus(monkeypatch):
    """PyTorch warns "This DataLoader will create 64 worker processes in total. Our suggested max number of worker in
    current system is N, ..." when num_workers exceeds the CPUs the process may use. Before: no warning."""
    import os
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    with pytest.warns(UserWarning, match="This DataLoader will create 64 worker processes in total. Our suggested max "
                                         "number of worker in current system is 2, which is smaller"):
        D.DataLoader(_Range(4), num_workers=64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D.DataLoader(_Range(4), num_workers=2)


def test_single_process_loader_iterator_has_len():
    """PyTorch's _SingleProcessDataLoaderIter has len() (the loader's), as the worker iterator does. Before: the
    single-process iterator was a generator (TypeError: object of type 'generator' has no len())."""
    it = iter(D.DataLoader(_Range(5), batch_size=2))
    assert len(it) == 3 and iter(it) is it
    assert [b.tolist() for b in it] == [[0, 1], [2, 3], [4]]
    assert len(iter(D.DataLoader(_Range(5), batch_size=None))) == 5
    it_iter = iter(D.DataLoader(_Iter(3), batch_size=2))
    with pytest.raises(TypeError):  # (PyTorch's: its sampler has no len; the dataset's len() is not read)
        len(it_iter)


def test_autocast_legacy_device_functions_and_nesting():
    """PyTorch has torch.get/set_autocast_gpu_dtype, the xla/ipu dtype and enabled functions (deprecated aliases
    with a DeprecationWarning) and autocast_increment/decrement_nesting (returning the new depth). Before:
    AttributeError."""
    with pytest.warns(DeprecationWarning, match=r"torch.get_autocast_gpu_dtype\(\) is deprecated"):
        assert torch.get_autocast_gpu_dtype() is torch.float16
    with pytest.warns(DeprecationWarning):
        assert torch.get_autocast_xla_dtype() is torch.bfloat16 and not torch.is_autocast_ipu_enabled()
    with pytest.warns(DeprecationWarning):
        torch.set_autocast_gpu_dtype(torch.bfloat16)
    assert torch.get_autocast_dtype("cuda") is torch.bfloat16
    with pytest.warns(DeprecationWarning):
        torch.set_autocast_gpu_dtype(torch.float16)
    assert torch.autocast_increment_nesting() == 1 and torch.autocast_decrement_nesting() == 0
    with torch.autocast("cpu"):
        assert torch.autocast_increment_nesting() == 2 and torch.autocast_decrement_nesting() == 1


def test_distributed_sampler_without_process_group():
    """Without num_replicas/rank and without an initialised process group, PyTorch's DistributedSampler raises
    ValueError("Default process group has not been initialized, please make sure to call init_process_group.").
    Before: a RuntimeError with another message. With both given it shards without a group."""
    if not hasattr(D, "DistributedSampler"):
        pytest.skip("no distributed plugin installed")
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        D.DistributedSampler(_Range(10), num_replicas=2)
    shards = [list(D.DistributedSampler(_Range(10), num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]


def test_collate_fn_map_extends_default_collate():
    """PyTorch documents extending default_collate through torch.utils.data._utils.collate: collate(batch,
    collate_fn_map=...) and default_collate_fn_map (a type added in place is used by default_collate). Before: no
    such module (ModuleNotFoundError)."""
    from coretorch.utils.data._utils.collate import collate, collate_tensor_fn, default_collate_fn_map

    class Point:
        def __init__(self, x: float) -> None:
            self.x = x

    def collate_point(batch, *, collate_fn_map=None):
        return torch.tensor([p.x for p in batch])
    assert collate([{"p": Point(1.0)}, {"p": Point(2.0)}], collate_fn_map={Point: collate_point})["p"].tolist() \
        == [1.0, 2.0]
    assert list(default_collate_fn_map)[0] is torch.Tensor and default_collate_fn_map[torch.Tensor] is collate_tensor_fn
    with pytest.raises(TypeError, match="found <class"):
        D.default_collate([Point(1.0)])
    default_collate_fn_map[Point] = collate_point
    try:
        assert D.default_collate([(Point(1.0), 3), (Point(4.0), 5)])[0].tolist() == [1.0, 4.0]
    finally:
        del default_collate_fn_map[Point]


def test_data_submodules_name_every_class():
    """PyTorch's torch.utils.data.sampler has WeightedRandomSampler and torch.utils.data.dataset ChainDataset and
    StackDataset (scripts import them from there). Before: ImportError."""
    from coretorch.utils.data.dataset import ChainDataset, StackDataset
    from coretorch.utils.data.sampler import WeightedRandomSampler
    assert (ChainDataset, StackDataset, WeightedRandomSampler) == (D.ChainDataset, D.StackDataset,
                                                                   D.WeightedRandomSampler)


def test_data_distributed_submodule():
    """PyTorch scripts import the sampler as ``from torch.utils.data.distributed import DistributedSampler``. Before:
    ModuleNotFoundError ('coretorch.utils.data' is not a package), with the distributed plugin installed too."""
    if not hasattr(D, "DistributedSampler"):
        pytest.skip("no distributed plugin installed")
    from coretorch.utils.data.distributed import DistributedSampler
    assert DistributedSampler is D.DistributedSampler
