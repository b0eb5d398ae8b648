"""Review 22j (eager): saving and resuming, a second pass — torch.save/torch.load of what training checkpoints
hold (numpy RNG states, numpy scalars, defaultdicts), state_dict round trips and resuming bitwise."""
from __future__ import annotations

import io
import random

import numpy as np
import pytest

import coretorch as torch


def _round_trip(obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **kw)


def test_numpy_rng_states_round_trip():
    """A checkpoint commonly holds ``np.random.get_state()`` (a tuple with a uint32 key array) and a numpy
    Generator's state (a dict with 128-bit ints); PyTorch saves both.  coretorch's save raised TypeError
    ("a numpy array of dtype uint32") before, so no checkpoint with numpy's RNG state could be written."""
    np.random.seed(5)
    np.random.rand(3)
    legacy = np.random.get_state()
    gen = np.random.default_rng(7)
    gen.random(2)
    ck = _round_trip({"np": legacy, "gen": gen.bit_generator.state, "u16": np.arange(3, dtype=np.uint16),
                      "u64": np.array([2 ** 64 - 1], np.uint64)})
    assert ck["np"][0] == "MT19937" and ck["np"][1].dtype == np.uint32
    np.testing.assert_array_equal(ck["np"][1], legacy[1])
    expect = np.random.rand(4)
    np.random.seed(0)
    np.random.set_state(ck["np"])
    np.testing.assert_array_equal(np.random.rand(4), expect)
    gen2 = np.random.default_rng()
    gen2.bit_generator.state = ck["gen"]
    np.testing.assert_array_equal(gen2.random(3), gen.random(3))
    assert ck["u16"].dtype == np.uint16 and ck["u16"].tolist() == [0, 1, 2]
    assert ck["u64"].dtype == np.uint64 and int(ck["u64"][0]) == 2 ** 64 - 1


def test_a_full_training_checkpoint_resumes_bitwise(device):
    """Model (BatchNorm, Dropout), AdamW with two param groups, OneCycleLR, GradScaler and the RNG states of
    torch (the device's generator too), ``random`` and numpy saved mid-run, loaded into fresh objects after
    other steps: the next steps are bitwise what continuing gives (the save of numpy's state raised before)."""
    gen = torch.random._default_for(device)

    def make():
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                                torch.nn.Dropout(0.3), torch.nn.Linear(8, 2)).to(device)
        opt = torch.optim.AdamW([{"params": m[0].parameters(), "lr": 1e-2},
                                 {"params": [*m[1].parameters(), *m[4].parameters()], "weight_decay": 0.0}],
                                lr=3e-3, amsgrad=True)
        sch = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[0.05, 0.01], total_steps=50)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
        return m, opt, sch, scaler

    def step(m, opt, sch, scaler):
        x = torch.randn(16, 4, device=device) * (1 + random.random() + float(np.random.rand()))
        y = torch.randint(0, 2, (16,), device=device)
        opt.zero_grad()
        scaler.scale(torch.nn.functional.cross_entropy(m(x), y)).backward()
        scaler.step(opt)
        scaler.update()
        sch.step()
        return m[4].weight.detach().cpu().numpy().copy()

    random.seed(1)
    np.random.seed(1)
    objs = make()
    for _ in range(3):
        step(*objs)
    m, opt, sch, scaler = objs
    buf = io.BytesIO()
    torch.save({"model": m.state_dict(), "opt": opt.state_dict(), "sch": sch.state_dict(),
                "scaler": scaler.state_dict(), "rng": torch.get_rng_state(), "dev_rng": gen.get_state(),
                "py": random.getstate(), "np": np.random.get_state(), "epoch": 3}, buf)
    expect = [step(*objs) for _ in range(3)]

    random.seed(9)
    np.random.seed(9)
    fresh = make()
    step(*fresh)
    buf.seek(0)
    ck = torch.load(buf)
    m2, opt2, sch2, scaler2 = fresh
    m2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    sch2.load_state_dict(ck["sch"])
    scaler2.load_state_dict(ck["scaler"])
    torch.set_rng_state(ck["rng"])
    gen.set_state(ck["dev_rng"])
    random.setstate(ck["py"])
    np.random.set_state(ck["np"])
    assert ck["epoch"] == 3
    for e in expect:
        np.testing.assert_array_equal(step(*fresh), e)
    for (k, a), b in zip(m.state_dict().items(), m2.state_dict().values()):
        assert torch.equal(a, b), k


def test_unsigned_arrays_are_refused_as_tensors_and_in_foreign_files(tmp_path):
    """coretorch tensors have no uint16/32/64: the numpy arrays load as numpy arrays; a plain safetensors file
    of U32 is still refused with the unsupported-dtype error (tests/test_checkpoint_interop.py)."""
    from safetensors.numpy import save_file
    p = tmp_path / "u32.safetensors"
    save_file({"x": np.ones(2, np.uint32)}, str(p))
    with pytest.raises(RuntimeError, match="dtype U32, which coretorch does not"):
        torch.load(p)


def test_tied_weights_in_a_state_dict_are_saved_once_and_load_shared(device):
    """``state_dict()`` detaches each entry, so tied weights are two tensor objects viewing one memory; PyTorch
    saves the storage once and the loaded entries share it (``data_ptr`` equal, a write to one seen by the
    other).  coretorch before: stored twice (the file twice as big) and loaded as independent copies."""
    def tied():
        m = torch.nn.Sequential(torch.nn.Linear(32, 32, bias=False), torch.nn.Linear(32, 32, bias=False)).to(device)
        m[1].weight = m[0].weight
        return m

    buf = io.BytesIO()
    torch.save(tied().state_dict(), buf)
    untied = io.BytesIO()
    torch.save({"0.weight": torch.ones(32, 32), "1.weight": torch.ones(32, 32)}, untied)
    assert len(buf.getvalue()) < len(untied.getvalue()) - 3000
    buf.seek(0)
    sd = torch.load(buf)
    assert sd["0.weight"].data_ptr() == sd["1.weight"].data_ptr()
    sd["0.weight"].fill_(2.0)
    assert sd["1.weight"].sum().item() == 2048.0


def test_a_parameter_and_its_detached_alias_keep_their_own_flags(device):
    """``{"p": param, "d": param.detach()}``: PyTorch loads a Parameter and a plain tensor sharing its memory;
    the shared entry keeps each reference's own ``requires_grad`` and Parameter-ness."""
    p = torch.nn.Parameter(torch.ones(3, device=device))
    back = _round_trip({"p": p, "d": p.detach(), "again": p})
    assert type(back["p"]) is torch.nn.Parameter and back["p"].requires_grad and back["again"] is back["p"]
    assert type(back["d"]) is torch.Tensor and not back["d"].requires_grad
    back["d"].add_(1)
    assert back["p"].detach().cpu().tolist() == [2.0, 2.0, 2.0]


def test_defaultdicts_keep_their_default_factory():
    """A checkpoint's metric history is often ``defaultdict(list)``; PyTorch's pickle keeps it a defaultdict.
    coretorch before: loaded as a plain dict, so the resumed run's ``history[new_key].append(...)`` raised
    KeyError.  A factory that cannot be named (a lambda) is refused at save, as pickle refuses it."""
    from collections import Counter, defaultdict
    hist: defaultdict = defaultdict(list, loss=[0.5, torch.tensor(0.25)])
    back = _round_trip({"hist": hist, "counts": defaultdict(Counter), "plain": defaultdict(None, a=1)})
    assert type(back["hist"]) is defaultdict and back["hist"].default_factory is list
    back["hist"]["acc"].append(1.0)
    assert back["hist"]["loss"][0] == 0.5 and back["hist"]["loss"][1].item() == 0.25
    assert back["counts"]["x"] == Counter() and back["plain"].default_factory is None
    with pytest.raises(TypeError, match="default_factory"):
        _round_trip(defaultdict(lambda: 0))


def test_save_to_a_directory_raises_runtime_error_naming_it(tmp_path):
    """PyTorch: ``torch.save(obj, "some_dir")`` raises RuntimeError ("open file failed ... Is a directory").
    coretorch before: a bare IsADirectoryError naming its temporary file (``.tmpXXX.<pid>.<rand>.tmp``)."""
    with pytest.raises(RuntimeError, match="is a directory") as info:
        torch.save({"w": torch.ones(2)}, tmp_path)
    assert isinstance(info.value, IsADirectoryError) and ".tmp" not in str(info.value)
    assert list(tmp_path.parent.glob(f".{tmp_path.name}.*.tmp")) == []


def test_load_refuses_the_keywords_pytorchs_unpickler_refuses():
    """PyTorch passes ``torch.load``'s extra keywords to its unpickler: with the default ``weights_only=True``
    only ``encoding`` is accepted (TypeError "Unpickler.__init__() got an unexpected keyword argument ..."),
    with ``weights_only=False`` pickle's own; ``pickle_module`` with ``weights_only=True`` is a RuntimeError.
    coretorch before: any keyword was ignored, so ``map_locaton="cpu"`` (misspelt) silently loaded onto the
    saved device."""
    import pickle
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)

    def load(**kw):
        buf.seek(0)
        return torch.load(buf, **kw)

    with pytest.raises(TypeError, match="unexpected keyword argument 'map_locaton'"):
        load(map_locaton="cpu")
    with pytest.raises(TypeError, match="'bogus' is an invalid keyword argument for Unpickler"):
        load(weights_only=False, bogus=1)
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module"):
        load(pickle_module=pickle, weights_only=True)
    assert load(pickle_module=pickle)["w"].tolist() == [1.0, 1.0]
    assert load(weights_only=False, fix_imports=True, encoding="latin1")["w"].tolist() == [1.0, 1.0]
    with pytest.warns(UserWarning, match="pickle_load_args only works if `weights_only=False`"):
        assert load(encoding="latin1")["w"].tolist() == [1.0, 1.0]


def test_scheduler_step_before_optimizer_step_warns_at_the_callers_line():
    """PyTorch's "Detected call of `lr_scheduler.step()` before `optimizer.step()`" warning (stacklevel=2) points
    at the script's ``scheduler.step()`` line, so ``-W``/filterwarnings by module work; coretorch's pointed into
    coretorch/optim."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`") as rec:
        sched.step()
    assert rec[0].filename == __file__


def test_a_key_named_like_the_safetensors_header_key_round_trips(tmp_path):
    """``{"__metadata__": tensor}`` (or a state dict with such a key): PyTorch saves and loads it.  coretorch
    before: the tensor was named ``__metadata__`` in the safetensors header, clashing with the header's own
    metadata entry, so save succeeded and every later load raised "corrupted ... (no coretorch format marker)":
    a checkpoint lost without a word at save time."""
    obj = {"__metadata__": torch.ones(2) * 7, "x": {"__metadata__": torch.zeros(1)}, "": torch.ones(1) * 3}
    path = tmp_path / "m.pt"
    torch.save(obj, path)
    back = torch.load(path)
    assert list(back) == ["__metadata__", "x", ""]
    assert back["__metadata__"].tolist() == [7.0, 7.0] and back["x"]["__metadata__"].tolist() == [0.0]
    assert back[""].tolist() == [3.0]


def test_big_endian_numpy_arrays_are_saved_by_value():
    """PyTorch pickles a numpy array of any byte order (``np.array([1, 2], ">i4")``, what some file readers
    give).  coretorch before: TypeError "a numpy array of dtype >i4".  Now stored (little-endian, as
    safetensors is) and loaded with the same values; one array reached twice is still stored once."""
    a = np.array([1, -2, 2 ** 30], dtype=">i4")
    back = _round_trip({"a": a, "again": a, "f": np.array([1.5], ">f8")})
    assert back["a"].tolist() == [1, -2, 2 ** 30] and back["a"].dtype == np.int32 and back["again"] is back["a"]
    assert back["f"].tolist() == [1.5]


def test_numpy_scalars_and_complex_numbers_keep_their_types():
    """PyTorch pickles ``np.float32(0.1)``, ``np.int64(3)`` (loaded back as those types) and Python ``complex``
    (loaded even with weights_only=True).  coretorch before: numpy scalars came back as Python numbers
    (``np.float32(0.1)`` as 0.10000000149011612) and ``complex`` raised TypeError at save."""
    obj = {"f32": np.float32(0.1), "f64": np.float64(np.nan), "i64": np.int64(-3), "u64": np.uint64(2 ** 64 - 1),
           "b": np.bool_(True), "f16": np.float16(65504), "c": 1.5 - 2j, "cinf": complex(float("inf"), -0.0),
           np.int32(4): "numpy key"}
    back = _round_trip(obj)
    for k, v in obj.items():
        got = back[k]
        assert type(got) is type(v), k
        if isinstance(v, (complex, np.floating, float)) and v != v:
            assert got != got
        else:
            assert got == v, k
    assert str(back["f32"]) == "0.1" and type(list(back)[-1]) is np.int32
    assert repr(back["cinf"].imag) == "-0.0"


def test_equal_data_ptrs_of_distinct_buffers_are_not_merged(device, monkeypatch):
    """Storing a shared view once must not trust ``data_ptr`` alone: opencl's is a buffer handle plus a byte
    offset, so two distinct buffers can give equal numbers.  With every data_ptr equal, distinct tensors are
    still saved by their own values."""
    a = torch.arange(4.0, device=device)
    b = torch.arange(4.0, device=device) + 10
    monkeypatch.setattr(torch.Tensor, "data_ptr", lambda self: 1234)
    back = _round_trip({"a": a, "b": b, "a_view": a.detach()})
    assert back["a"].tolist() == [0.0, 1.0, 2.0, 3.0] and back["b"].tolist() == [10.0, 11.0, 12.0, 13.0]
    assert back["a_view"] is back["a"]


def test_save_checks_pickle_protocol_as_pickle_does():
    """``torch.save(obj, f, pickle_protocol=99)``: PyTorch's pickler raises ValueError "pickle protocol must be
    <= 5" and a non-integer TypeError; coretorch (which writes no pickle) accepted anything."""
    import pickle
    with pytest.raises(ValueError, match=f"pickle protocol must be <= {pickle.HIGHEST_PROTOCOL}"):
        torch.save(torch.ones(1), io.BytesIO(), pickle_protocol=99)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        torch.save(torch.ones(1), io.BytesIO(), pickle_protocol="2")
    torch.save(torch.ones(1), io.BytesIO(), pickle_protocol=pickle.HIGHEST_PROTOCOL)


def test_layouts_round_trip():
    """PyTorch saves ``torch.strided`` (its weights_only load accepts layouts); coretorch raised TypeError."""
    back = _round_trip({"meta": {"layout": torch.ones(1).layout, "dtype": torch.float32}, "s": torch.sparse_coo})
    assert back["meta"]["layout"] is torch.strided and back["s"] is torch.sparse_coo


def test_a_float32_checkpoint_loads_into_a_half_model_on_another_device_without_numpy_warnings():
    """Loading a cpu float32 state dict into a float16 model on another device (or ``.to(dev, float16)``) casts
    on the way; PyTorch's cast gives inf for out-of-range values without a word.  coretorch's cross-device cast
    raised numpy's "RuntimeWarning: overflow encountered in cast" (an error under ``-W error``)."""
    import warnings
    devices = torch.testing.available_devices()
    other = next((d for d in devices if d != "cpu"), None)
    if other is None:
        pytest.skip("needs a second device")
    model = torch.nn.Linear(3, 1, bias=False).half().to(other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.load_state_dict({"weight": torch.tensor([[1e5, -1e5, 0.5]])})
        as_int = torch.tensor([float("nan"), 2.0]).to(other, torch.int32)
    assert model.weight.float().cpu().tolist() == [[float("inf"), float("-inf"), 0.5]]
    assert as_int.cpu().tolist()[1] == 2
