"""coretorch-distributed-mpi as users run it: worker scripts under `mpiexec -n 2` (and one without mpiexec).

Each worker writes its named checks per rank as JSON (scripts/_checks.py); these tests assert that every check
passed on every rank and that the expected checks ran.  References are numpy on inputs gathered with raw
mpi4py, and single-process training in the worker itself.  The only skip: mpiexec cannot start 2 processes.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import coretorch
from coretorch.testing import available_devices

SCRIPTS = Path(__file__).resolve().parent / "scripts"
PY = sys.executable
DEVICES = available_devices()


# The mpiexec runs are session fixtures and the tests reading one run share an xdist group: each job runs once, on
# one worker (a module fixture would run again on each worker that gets one of its tests, and again whenever a
# worker comes back to the module after another module's test).
@pytest.fixture(scope="session")
def mpiexec():
    from coretorch_distributed_mpi.launch import find_mpiexec
    try:
        exe = find_mpiexec()
        probe = subprocess.run([exe, "-n", "2", PY, "-c", "pass"], capture_output=True, text=True, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"mpiexec cannot start here: {e}")
    if probe.returncode != 0:
        pytest.skip(f"`{exe} -n 2 python -c pass` failed on this machine (rc {probe.returncode}): "
                    f"{probe.stderr[-500:]}")
    return exe


def run_mpi(mpiexec, script: str, out: Path, *args, n: int = 2, timeout: float = 120):
    env = dict(os.environ, CT_OUT=str(out))
    proc = subprocess.run([mpiexec, "-n", str(n), PY, str(SCRIPTS / script), *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=SCRIPTS)
    assert proc.returncode == 0, \
        f"{script} failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = []
    for r in range(n):
        with open(out / f"rank{r}.json") as f:
            results.append(json.load(f))
    return results


def assert_checks(results, *, contains: str = "", at_least: int = 1):
    """Every check whose name contains ``contains`` passed on every rank, and at least ``at_least`` ran."""
    for rank, res in enumerate(results):
        sel = [c for c in res if contains in c[0]]
        failed = [f"{name}: {detail}" for name, ok, detail in sel if not ok]
        assert not failed, f"rank {rank}: {len(failed)} of {len(sel)} checks failed:\n" + "\n".join(failed[:20])
        assert len(sel) >= at_least, f"rank {rank}: only {len(sel)} checks matching {contains!r} ran"


# ---- collectives -----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def collective_results(mpiexec, tmp_path_factory):
    return run_mpi(mpiexec, "collectives_worker.py", tmp_path_factory.mktemp("coll"))


@pytest.mark.xdist_group("mpi-collectives")
@pytest.mark.parametrize("device", DEVICES)
def test_collectives_match_numpy(collective_results, device):
    # per dtype: 5 ops x 2 (sync/async) all_reduce, broadcast from both ranks, all_gather, reduce_scatter,
    # reduce/gather/scatter, send/recv -- float32, int64 (and float64, float16, bool where supported)
    assert_checks(collective_results, contains=f"{device}/float32", at_least=50)
    assert_checks(collective_results, contains=f"{device}/int64", at_least=40)
    for name in ("all_reduce AVG async=True", "all_reduce PRODUCT async=False", "broadcast src=1",
                 "all_gather[1]", "reduce_scatter SUM", "recv from", "strided view"):
        assert_checks(collective_results, contains=f"{name}", at_least=1)


@pytest.mark.xdist_group("mpi-collectives")
def test_groups_barrier_objects_and_lifecycle(collective_results):
    assert_checks(collective_results)   # every check of the run, the device-independent ones included
    for name in ("new_group", "barrier async", "all_gather_object", "broadcast_object_list", "second init",
                 "init again after destroy", "DistributedSampler takes rank", "ValueError as torch"):
        assert_checks(collective_results, contains=name)


# ---- DistributedDataParallel ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def ddp_results(mpiexec, tmp_path_factory):
    return run_mpi(mpiexec, "ddp_worker.py", tmp_path_factory.mktemp("ddp"))


@pytest.mark.xdist_group("mpi-ddp")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_equals_single_process_training(ddp_results, device):
    assert_checks(ddp_results, contains=f"[{device}] construction broadcasts")
    assert_checks(ddp_results, contains=f"[{device}] step", at_least=15)          # 5 steps x 3 checks
    assert_checks(ddp_results, contains=f"[{device}] step 4: parameters identical on every rank")
    assert_checks(ddp_results, contains=f"[{device}] buckets were all-reduced while backward was still running")


@pytest.mark.xdist_group("mpi-ddp")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_under_compile_equals_eager_ddp(ddp_results, device):
    # both forms (a compiled step around DDP, a compiled DDP module): eager DDP's parameters, bitwise, on every rank
    assert_checks(ddp_results, contains=f"[{device}] compile (", at_least=4)


@pytest.mark.xdist_group("mpi-ddp")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_no_sync_accumulation(ddp_results, device):
    assert_checks(ddp_results, contains=f"[{device}] no_sync", at_least=4)


@pytest.mark.xdist_group("mpi-ddp")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_unused_parameters_and_buffers(ddp_results, device):
    assert_checks(ddp_results, contains=f"[{device}] find_unused_parameters")
    assert_checks(ddp_results, contains=f"[{device}] unused parameter without find_unused_parameters raises")
    assert_checks(ddp_results, contains=f"[{device}] buffers broadcast from rank 0")
    assert_checks(ddp_results)


# ---- DistributedDataParallel.join(): uneven inputs --------------------------------------------------------
@pytest.fixture(scope="session")
def join_results(mpiexec, tmp_path_factory):
    return run_mpi(mpiexec, "join_worker.py", tmp_path_factory.mktemp("join"))


@pytest.mark.xdist_group("mpi-join")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("variant", ["divide_by_initial_world_size=True find_unused_parameters=False",
                                     "divide_by_initial_world_size=False find_unused_parameters=False",
                                     "divide_by_initial_world_size=True find_unused_parameters=True"])
def test_ddp_join_uneven_inputs_equals_single_process_training(join_results, device, variant):
    # rank 0: 2 batches, rank 1: 4; per-iteration gradients (2 resp. 4 checks), final parameters == reference,
    # identical on both ranks, and DDP trains normally after the block
    assert_checks(join_results, contains=f"[{device}] join {variant}", at_least=5)
    assert_checks(join_results, contains=f"[{device}] join {variant}: final parameters == single-process reference")
    assert_checks(join_results, contains=f"[{device}] join {variant}: iteration 1 gradients")


@pytest.mark.xdist_group("mpi-join")
@pytest.mark.parametrize("device", DEVICES)
def test_ddp_join_throw_on_early_termination(join_results, device):
    assert_checks(join_results, contains=f"[{device}] join throw_on_early_termination", at_least=2)
    assert_checks(join_results, contains="Join importable as in torch")
    assert_checks(join_results)


# ---- jobs that must not hang: timeouts, ranks that leave ---------------------------------------------------
def run_hang(mpiexec, mode: str):
    proc = subprocess.run([mpiexec, "-n", "2", PY, str(SCRIPTS / "hang_worker.py"), mode], capture_output=True,
                          text=True, timeout=60, cwd=SCRIPTS)
    return proc, time.time(), proc.stdout + proc.stderr


@pytest.mark.parametrize("mode,what", [("timeout", "all_reduce (collective #1 of the default group)"),
                                       ("ddp_timeout", "DistributedDataParallel gradient all_reduce (bucket 0)")])
def test_collective_past_the_timeout_aborts_the_job(mpiexec, mode, what):
    proc, ended, out = run_hang(mpiexec, mode)
    assert proc.returncode != 0, out
    waited = re.search(r"waiting at ([0-9.]+)", out)
    assert waited, out
    elapsed = ended - float(waited.group(1))          # timed from the wait, not from start-up
    assert 1.4 < elapsed < 10, f"the job ended {elapsed:.1f} s after rank 0 started waiting (timeout 1.5 s)"
    assert f"[rank 0] coretorch.distributed: collective operation timeout: {what}" in out, out
    assert "longer than the timeout of 1.5 s set by init_process_group(timeout=...)" in out, out
    assert "aborting all 2 ranks" in out, out


def test_rank_that_exits_early_ends_the_job_with_a_message(mpiexec):
    proc, ended, out = run_hang(mpiexec, "exit")
    assert proc.returncode != 0, out
    left = re.search(r"waiting at ([0-9.]+)", out)    # printed by rank 1 just before sys.exit()
    assert left, out
    assert ended - float(left.group(1)) < 10, f"the job took {ended - float(left.group(1)):.1f} s to end"
    assert ("[rank 0] coretorch.distributed: rank 1 has left the job (its script ended or called sys.exit()) "
            "without taking part in all_reduce (collective #1 of the default group)") in out, out
    assert "aborting all 2 ranks" in out, out


def test_ranks_ending_at_different_times_without_destroy_exit_cleanly(mpiexec):
    # rank 1 joins the last all_reduce without waiting for it and ends; rank 0 joins it later: no abort
    proc, _, out = run_hang(mpiexec, "clean")
    assert proc.returncode == 0, out
    assert "rank 0 result [4.0, 4.0, 4.0, 4.0]" in out and "coretorch.distributed" not in out, out


# ---- failure, single process, launcher -----------------------------------------------------------------
@pytest.mark.parametrize("failing", [0, 1])
def test_rank_failure_ends_every_rank(mpiexec, failing):
    proc = subprocess.run([mpiexec, "-n", "2", PY, str(SCRIPTS / "failure_worker.py"), str(failing)],
                          capture_output=True, text=True, timeout=30, cwd=SCRIPTS)
    ended = time.time()
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    raised = re.search(r"raising at ([0-9.]+)", out)
    assert raised, out
    # timed from the failure, not from start-up (two interpreters importing coretorch: seconds on a loaded machine)
    elapsed = ended - float(raised.group(1))
    assert elapsed < 10, f"the job took {elapsed:.1f} s to end after rank {failing} failed"
    assert f"rank {failing} of 2 raised an uncaught ValueError; aborting all 2 ranks" in out, out
    assert f"[rank {failing}] ValueError: boom on purpose (rank {failing})" in out, out


def test_world_size_one_without_mpiexec(tmp_path):
    env = dict(os.environ, CT_OUT=str(tmp_path))
    proc = subprocess.run([PY, str(SCRIPTS / "world1_worker.py")], capture_output=True, text=True, timeout=60,
                          env=env, cwd=SCRIPTS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = [json.loads((tmp_path / "rank0.json").read_text())]
    assert_checks(results, at_least=5 + 7 * len(DEVICES))


def test_coretorch_run_launcher(mpiexec, tmp_path):
    env = dict(os.environ, CT_OUT=str(tmp_path))
    proc = subprocess.run([PY, "-m", "coretorch", "run", "-n", "2", str(SCRIPTS / "launcher_worker.py"), "A", "-x"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=SCRIPTS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = [json.loads((tmp_path / f"launch{r}.json").read_text()) for r in range(2)]
    assert got == [{"rank": r, "world": 2, "argv": ["A", "-x"], "sum": 1.0} for r in range(2)]


# ---- packaging: the core finds the plugin, never imports it, and says what to install without it ------
def _py(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **env))


def test_plugin_registered_through_its_entry_point():
    proc = _py("""
        import sys
        import coretorch
        rep = {p["name"]: p for p in coretorch.plugins.report()}["distributed_mpi"]
        assert rep["status"] == "loaded" and rep["distribution"] == "coretorch-distributed-mpi", rep
        assert "distributed:distributed" in rep["provides"], rep
        assert "mpi4py" not in sys.modules, "import coretorch must not initialise MPI"
        import coretorch.distributed as dist
        from coretorch.nn.parallel import DistributedDataParallel
        from coretorch.utils.data import DistributedSampler
        assert dist.is_available() and dist.ReduceOp.AVG and not dist.is_initialized()
        assert DistributedDataParallel.__module__ == "coretorch_distributed_mpi.ddp"
        from coretorch.plugins import hookimpl, PluginError
        class Other:
            @hookimpl
            def coretorch_register_distributed(self, register):
                register(object())
        try:
            coretorch.plugins.register(Other(), name="other_dist")
            raise SystemExit("a second distributed implementation was accepted")
        except PluginError as e:
            assert "coretorch-distributed-mpi" in str(e) and "twice" in str(e), e
        assert dist.all_reduce.__module__ == "coretorch_distributed_mpi.api"
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_without_the_plugin_the_core_says_what_to_install():
    proc = _py("""
        import sys
        import coretorch
        import coretorch.distributed as dist
        assert "coretorch_distributed_mpi" not in sys.modules
        assert not dist.is_available()
        for what in ("dist.init_process_group", "dist.all_reduce"):
            try:
                eval(what)
                raise SystemExit(what + " did not raise")
            except ImportError as e:
                assert "pip install coretorch-distributed-mpi" in str(e), e
        try:
            from coretorch.nn.parallel import DistributedDataParallel
            raise SystemExit("DistributedDataParallel imported")
        except ImportError as e:
            assert "coretorch-distributed-mpi" in str(e), e
        from coretorch.cli import main
        assert main(["run", "-n", "2", "x.py"]) == 2
        print("ok")
    """, CORETORCH_PLUGINS="cpu")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    assert "pip install coretorch-distributed-mpi" in proc.stderr    # what `coretorch run` printed


# ---- DistributedSampler (pure Python: explicit ranks, no MPI) -------------------------------------------
@pytest.mark.parametrize("n,world", [(12, 2), (12, 3), (10, 4), (5, 8)])
@pytest.mark.parametrize("shuffle", [True, False])
def test_distributed_sampler_shards(n, world, shuffle):
    from coretorch.utils.data import DistributedSampler
    data = list(range(n))
    shards = [list(DistributedSampler(data, num_replicas=world, rank=r, shuffle=shuffle, seed=5))
              for r in range(world)]
    per = -(-n // world)
    assert all(len(s) == per for s in shards)                     # every rank: the same number of steps
    flat = [i for s in shards for i in s]
    assert sorted(set(flat)) == data                              # the whole dataset, every epoch
    if n % world == 0:
        assert sorted(flat) == data                               # exactly once: disjoint shards
    else:                                                         # padded with the permutation's first indices
        assert len(flat) == per * world and len(flat) - len(set(flat)) == per * world - n
    if not shuffle:
        assert shards[0][:2] == ([0, world] if n > world else [0])
    dropped = [list(DistributedSampler(data, num_replicas=world, rank=r, shuffle=shuffle, drop_last=True))
               for r in range(world)]
    flat = [i for s in dropped for i in s]
    assert len(flat) == len(set(flat)) == (n // world) * world    # drop_last: disjoint, the tail dropped


def test_distributed_sampler_set_epoch_reshuffles_identically_on_every_rank():
    from coretorch.utils.data import DataLoader, DistributedSampler, TensorDataset
    data = list(range(40))
    samplers = [DistributedSampler(data, num_replicas=2, rank=r, seed=1) for r in range(2)]
    epochs = []
    for epoch in range(3):
        for s in samplers:
            s.set_epoch(epoch)
        shards = [list(s) for s in samplers]
        assert sorted(shards[0] + shards[1]) == data
        assert shards == [list(s) for s in samplers]             # deterministic for a given epoch
        epochs.append(shards[0])
    assert epochs[0] != epochs[1] != epochs[2]
    ds = TensorDataset(coretorch.arange(40.0))
    loader = DataLoader(ds, batch_size=8, sampler=samplers[1])
    samplers[1].set_epoch(0)
    seen = [v for (b,) in loader for v in b.tolist()]
    assert [int(v) for v in seen] == list(samplers[1]) and len(loader) == 3        # rank 1's shard of epoch 0
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(data, num_replicas=2, rank=2)


def test_distributed_sampler_is_generic():
    """torch's ``DistributedSampler(Sampler[_T_co])`` is generic: ``DistributedSampler[int]`` in a type annotation
    or a subclass (``class MySampler(DistributedSampler[int])``) works; coretorch's raised TypeError."""
    from coretorch.utils.data import DistributedSampler

    class Mine(DistributedSampler[int]):
        pass
    s = Mine(list(range(5)), num_replicas=2, rank=1, shuffle=False)
    assert list(s) == [1, 3, 0] and DistributedSampler[int] is not None
